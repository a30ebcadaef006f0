//! `ledger eval`: the evaluation (`ledger-eval`) with the ordinary pipeline; `ledger eval
//! generate`: one generated document with its ground truth; `ledger eval latex`: references and
//! printed numbers against the `.aux` files LaTeX wrote.

use crate::output::{out, outln};
use crate::progress::Bar;
use anyhow::{Context, Result, bail};
use ledger_eval::depends;
use ledger_eval::latex::Table;
use ledger_eval::run::{Options, Tracks};
use ledger_eval::setup::Pipeline;
use ledger_pipeline::config::Config;
use ledger_pipeline::{Format, Settings, Stage};
use std::path::PathBuf;
use std::process::ExitCode;

/// Options of the evaluation.
#[derive(clap::Args, Debug)]
pub struct EvalArgs {
    /// Folder for the generated documents, their graphs and the report.
    #[arg(long, default_value = "eval-report")]
    pub out: PathBuf,
    /// A small run for CI: two 5K-token documents, with the invariants asserted.
    #[arg(long)]
    pub quick: bool,
    /// Seed of the generator.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// The real corpora, for the real-data cases (full run only).
    #[arg(long, env = "LEDGER_CORPORA", default_value = "datasets")]
    pub corpora: PathBuf,
    /// Token budget of the budgeted strategies, as a share of the document's tokens.
    #[arg(long, default_value_t = 0.10)]
    pub budget_share: f64,
    /// Deterministic edits made and checked per category and generated document.
    #[arg(long, default_value_t = 8)]
    pub edit_cases: usize,
    /// Cases per generated document edited by the model of `[llm]` (none without an endpoint).
    #[arg(long, default_value_t = 12)]
    pub llm_edits: usize,
    /// Which tracks to run: all, real (the authors' commits) or generated.
    #[arg(long, default_value = "all")]
    pub track: Tracks,
    /// The folder of the real-edit track's histories: its `manifest.toml` lists each bundle and
    /// the document in it.
    #[arg(long, default_value = "datasets/edit-history")]
    pub edit_history: PathBuf,
    /// Instead of the manifest's histories, this one: a git repository (a folder) or bundle
    /// whose first-parent history is walked from its HEAD; with --document.
    #[arg(long, requires = "document")]
    pub history: Option<PathBuf>,
    /// The document inside --history: a LaTeX main file, a Markdown file or an mdBook folder,
    /// relative to the repository's root.
    #[arg(long, requires = "history")]
    pub document: Option<String>,
    /// Only the newest N commits of each history (default: all; 12 with --quick).
    #[arg(long)]
    pub commits: Option<usize>,
    /// Also score a grid of context rankings on the real-edit track's dev split (the defaults of
    /// `[retrieve]` were chosen this way).
    #[arg(long)]
    pub tune: bool,
}

/// `ledger eval generate`, `ledger eval latex`.
#[derive(clap::Subcommand)]
pub enum Subcommand {
    /// Writes one generated document with its ground truth: `OUT/NAME/main.tex` (or `main.md`)
    /// and `OUT/NAME/gold.json` (units, gold REFERENCES/DEPENDS/RELATED pairs as unit indices,
    /// edit cases).
    Generate {
        /// Folder the document's folder goes in.
        #[arg(long)]
        out: PathBuf,
        /// Name of the document (and of its folder).
        #[arg(long)]
        name: String,
        /// Approximate size in cl100k tokens.
        #[arg(long, default_value_t = 5_000)]
        tokens: usize,
        /// Seed of the generator.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// `latex` or `markdown`.
        #[arg(long, default_value = "latex", value_parser = ["latex", "markdown"])]
        format: String,
    },
    /// References and printed numbers against the `.aux` pdflatex wrote, on the bundled LaTeX
    /// documents (`datasets/latex-features`, and the real corpora of `datasets/` with the `.aux`
    /// files of `datasets/ground-truth`): per document and in total, the share of references
    /// LEDGER resolves to the labelled unit and the share of labels whose number equals LaTeX's.
    Latex {
        /// The bundled datasets folder.
        #[arg(long, default_value = "datasets")]
        datasets: PathBuf,
        /// The real corpora the `.aux` files of `datasets/ground-truth` belong to.
        #[arg(long, env = "LEDGER_CORPORA", default_value = "datasets")]
        corpora: PathBuf,
        /// Print every miss (default: the first few per document).
        #[arg(long)]
        misses: bool,
    },
    /// DEPENDS against the authors' `\uses{}` of the bundled Lean blueprints (each indexed
    /// without its `\uses`): the learned judge leave-one-blueprint-out, the rules judge,
    /// "explicit references only" and "previous statement", per blueprint and macro-averaged;
    /// writes `OUT/depends.md`, `OUT/depends.json` and the precision–recall curve
    /// `OUT/depends-pr.svg`.
    Depends {
        /// The bundled datasets folder (`blueprints/*/src/print.tex`, `carleson-blueprint`).
        #[arg(long, default_value = "datasets")]
        datasets: PathBuf,
        /// Folder of the report and of the copies without `\uses`.
        #[arg(long, default_value = "eval-report/depends")]
        out: PathBuf,
        /// Fit the model on every blueprint and write it to --model (the shipped weights).
        #[arg(long)]
        train: bool,
        /// Where --train writes the model.
        #[arg(long, default_value = "crates/llm/src/depends/learned.json")]
        model: PathBuf,
        /// The judge scored: `learned` (leave one blueprint out, beside the rules judge),
        /// `rules`, or `llm` (the `[llm]` endpoint, one request per statement).
        #[arg(long, default_value = "learned", value_parser = ["learned", "rules", "llm"])]
        judge: String,
        /// With `--judge llm`: print the requests and tokens a run would send, and send nothing.
        #[arg(long)]
        estimate: bool,
    },
}

/// `ledger eval`: runs the evaluation, prints the report; fails when an invariant broke.
pub fn run(args: EvalArgs, config: &Config) -> Result<ExitCode> {
    let stage = Stage::new(Settings::of(config))?;
    let pipeline = Pipeline {
        stage: &stage,
        retrieve: &config.retrieve,
        store: &config.store,
        config,
    };
    let options = Options {
        out: args.out,
        quick: args.quick,
        seed: args.seed,
        corpora: args.corpora,
        budget_share: args.budget_share,
        edit_cases: args.edit_cases,
        llm_edits: args.llm_edits,
        track: args.track,
        histories: match (args.history, args.document) {
            (Some(repository), Some(document)) => {
                vec![ledger_eval::history::Source::of_repository(
                    &repository,
                    &document,
                )?]
            }
            _ if args.track == Tracks::Generated => Vec::new(),
            _ => ledger_eval::history::manifest(&args.edit_history)?,
        },
        commits: args.commits,
        tune: args.tune,
    };
    std::fs::create_dir_all(&options.out)
        .with_context(|| format!("creating {}", options.out.display()))?;
    let evaluation = ledger_eval::run::run(&options, &pipeline, &Bar::new(true))?;
    out!("{}", evaluation.markdown);
    eprintln!("report written to {}", evaluation.report.display());
    if !evaluation.broken.is_empty() {
        for b in &evaluation.broken {
            eprintln!("invariant broken: {b}");
        }
        bail!("{} invariants broken", evaluation.broken.len());
    }
    Ok(ExitCode::SUCCESS)
}

/// `ledger eval generate`, `ledger eval latex` or `ledger eval depends`.
pub fn subcommand(which: Subcommand, config: &Config) -> Result<ExitCode> {
    match which {
        Subcommand::Generate {
            out,
            name,
            tokens,
            seed,
            format,
        } => {
            let format = if format == "markdown" {
                Format::Markdown
            } else {
                Format::Latex
            };
            let spec = ledger_eval::Spec {
                seed,
                tokens,
                format,
            };
            outln!("{}", ledger_eval::run::write_generated(&out, &name, spec)?);
        }
        Subcommand::Latex {
            datasets,
            corpora,
            misses,
        } => {
            let corpora = corpora.is_dir().then_some(corpora.as_path());
            out!("{}", Table::of_bundled(&datasets, corpora, misses)?);
        }
        Subcommand::Depends {
            datasets,
            out,
            train,
            model,
            judge,
            estimate,
        } => {
            let request = depends::Request {
                datasets: &datasets,
                out: &out,
                train: train.then_some(model.as_path()),
                judge: &judge,
                estimate,
            };
            let outcome = depends::command(&request, config)?;
            out!("{}", outcome.markdown);
            for note in &outcome.notes {
                eprintln!("{note}");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
