//! `ledger eval`: the evaluation (`ledger-eval`) with the ordinary pipeline; `ledger eval
//! generate`: one generated document with its ground truth.

use crate::PipelineArgs;
use crate::progress::Bar;
use anyhow::{Context, Result, bail};
use clap::Subcommand;
use ledger_eval::run::{Options, Tracks};
use ledger_eval::setup::Pipeline;
use ledger_pipeline::Stage;
use ledger_pipeline::config::Config;
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
    /// The shared corpora, for the real-data cases (full run only).
    #[arg(long, env = "LEDGER_CORPORA", default_value = "../shared/corpora")]
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
    /// The git bundles of the real-edit track.
    #[arg(long, default_value = "datasets/edit-history")]
    pub edit_history: PathBuf,
    /// Only the newest N commits of each history (default: all; 12 with --quick).
    #[arg(long)]
    pub commits: Option<usize>,
    /// Also score a grid of context rankings on the real-edit track's dev split (the defaults of
    /// `[retrieve]` were chosen this way).
    #[arg(long)]
    pub tune: bool,
}

/// `ledger eval generate`.
#[derive(Subcommand)]
pub enum Generate {
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
}

/// `ledger eval`: runs the evaluation, prints the report; fails when an invariant broke.
pub fn run(args: EvalArgs, config: &Config) -> Result<ExitCode> {
    let pipeline_args = PipelineArgs {
        no_progress: true,
        ..PipelineArgs::default()
    };
    let settings = pipeline_args.apply(config);
    let stage = Stage::new(settings)?;
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
        edit_history: args.edit_history,
        commits: args.commits,
        tune: args.tune,
    };
    std::fs::create_dir_all(&options.out)
        .with_context(|| format!("creating {}", options.out.display()))?;
    let evaluation = ledger_eval::run::run(&options, &pipeline, &Bar::new(true))?;
    print!("{}", evaluation.markdown);
    eprintln!("report written to {}", evaluation.report.display());
    if !evaluation.broken.is_empty() {
        for b in &evaluation.broken {
            eprintln!("invariant broken: {b}");
        }
        bail!("{} invariants broken", evaluation.broken.len());
    }
    Ok(ExitCode::SUCCESS)
}

/// `ledger eval generate`.
pub fn generate(which: Generate) -> Result<ExitCode> {
    let Generate::Generate {
        out,
        name,
        tokens,
        seed,
        format,
    } = which;
    let format = if format == "markdown" {
        ledger_core::Format::Markdown
    } else {
        ledger_core::Format::Latex
    };
    let g = ledger_eval::generate(
        &name,
        ledger_eval::Spec {
            seed,
            tokens,
            format,
        },
    );
    let dir = out.join(&name);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let file = g.file_name();
    std::fs::write(dir.join(file), &g.source)?;
    std::fs::write(
        dir.join("gold.json"),
        serde_json::to_string_pretty(&g)? + "\n",
    )?;
    println!(
        "{}: {} units, {} references, {} dependencies, {} related pairs, {} cases",
        dir.join(file).display(),
        g.units.len(),
        g.references.len(),
        g.depends.len(),
        g.related.len(),
        g.cases.len()
    );
    Ok(ExitCode::SUCCESS)
}
