//! `ledger eval`: the evaluation (`ledger-eval`) with the ordinary pipeline; `ledger eval
//! generate`: one generated document with its ground truth; `ledger eval latex`: references and
//! printed numbers against the `.aux` files LaTeX wrote.

use crate::args::PipelineArgs;
use crate::output::{out, outln};
use crate::progress::Bar;
use anyhow::{Context, Result, bail};
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

/// `ledger eval generate` or `ledger eval latex`.
pub fn subcommand(which: Subcommand, config: &Config) -> Result<ExitCode> {
    match which {
        Subcommand::Generate {
            out,
            name,
            tokens,
            seed,
            format,
        } => generate(out, &name, tokens, seed, &format),
        Subcommand::Latex {
            datasets,
            corpora,
            misses,
        } => latex(&datasets, &corpora, misses),
        Subcommand::Depends {
            datasets,
            out,
            train,
            model,
            judge,
            estimate,
        } => depends(
            &datasets,
            &out,
            train.then_some(model.as_path()),
            (&judge, estimate),
            config,
        ),
    }
}

/// `ledger eval depends`: prints the Markdown report; with `train`, writes the fitted model.
fn depends(
    datasets: &std::path::Path,
    out: &std::path::Path,
    train: Option<&std::path::Path>,
    (judge, estimate): (&str, bool),
    config: &Config,
) -> Result<ExitCode> {
    use ledger_eval::depends;
    let window = config.depends.window;
    let blueprints = depends::bundled(datasets);
    if blueprints.is_empty() {
        bail!(
            "no blueprint under {} (run from the repository's root or pass --datasets)",
            datasets.display()
        );
    }
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let prepared = depends::prepare_all(&blueprints, &out.join("sources"))?;
    if let Some(path) = train {
        let model = depends::train(&prepared, window);
        std::fs::write(path, serde_json::to_string_pretty(&model)? + "\n")
            .with_context(|| format!("writing {}", path.display()))?;
        eprintln!(
            "model written to {} (threshold {:.3})",
            path.display(),
            model.threshold
        );
    }
    let llm = if judge == "llm" {
        Some(depends::llm_judge(&config.llm, &config.tls)?)
    } else {
        None
    };
    if estimate {
        let Some(llm) = &llm else {
            bail!("--estimate is for --judge llm (the offline judges send nothing)");
        };
        outln!("| blueprint | requests | prompt tokens | completion tokens (at most) |");
        outln!("|---|---:|---:|---:|");
        for (name, e) in depends::estimate(&prepared, llm, window) {
            outln!(
                "| {name} | {} | {} | {} |",
                e.requests,
                e.prompt_tokens,
                e.completion_tokens
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    let mode = match (judge, &llm) {
        (_, Some(llm)) => depends::Mode::Judge(llm),
        ("rules", _) => depends::Mode::Judge(&ledger_llm::depends::OfflineJudge),
        _ => depends::Mode::LeaveOneOut,
    };
    let report = depends::evaluate(&prepared, mode, window)?;
    let markdown = report.markdown();
    std::fs::write(out.join("depends.md"), &markdown)?;
    std::fs::write(
        out.join("depends.json"),
        serde_json::to_string_pretty(&report)? + "\n",
    )?;
    report.plot(&out.join("depends-pr.svg"))?;
    out!("{markdown}");
    eprintln!("report written to {}", out.join("depends.md").display());
    Ok(ExitCode::SUCCESS)
}

/// `ledger eval generate`.
fn generate(out: PathBuf, name: &str, tokens: usize, seed: u64, format: &str) -> Result<ExitCode> {
    let format = if format == "markdown" {
        ledger_core::Format::Markdown
    } else {
        ledger_core::Format::Latex
    };
    let g = ledger_eval::generate(
        name,
        ledger_eval::Spec {
            seed,
            tokens,
            format,
        },
    );
    let dir = out.join(name);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let file = g.file_name();
    std::fs::write(dir.join(file), &g.source)?;
    std::fs::write(
        dir.join("gold.json"),
        serde_json::to_string_pretty(&g)? + "\n",
    )?;
    outln!(
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

/// `ledger eval latex`: a table of both ratios per document and in total.
fn latex(
    datasets: &std::path::Path,
    corpora: &std::path::Path,
    all_misses: bool,
) -> Result<ExitCode> {
    let corpora = corpora.is_dir().then_some(corpora);
    let cases = ledger_eval::latex::bundled_cases(datasets, corpora);
    if cases.is_empty() {
        bail!(
            "no LaTeX document with an .aux under {} (run from the repository's root or pass --datasets)",
            datasets.display()
        );
    }
    let rows = ledger_eval::latex::run(&cases)?;
    let ratio = |a: usize, b: usize| {
        if b == 0 {
            "–".to_string()
        } else {
            format!("{:.3}", a as f64 / b as f64)
        }
    };
    outln!("| document | references resolved | ratio | numbers equal to LaTeX's | ratio |");
    outln!("|---|---:|---:|---:|---:|");
    let (mut refs, mut resolved, mut labels, mut equal) = (0, 0, 0, 0);
    for r in &rows {
        outln!(
            "| {} | {}/{} | {} | {}/{} | {} |",
            r.name,
            r.resolved,
            r.references,
            ratio(r.resolved, r.references),
            r.numbers_equal,
            r.labels,
            ratio(r.numbers_equal, r.labels)
        );
        refs += r.references;
        resolved += r.resolved;
        labels += r.labels;
        equal += r.numbers_equal;
    }
    outln!(
        "| **all {} documents** | {resolved}/{refs} | {} | {equal}/{labels} | {} |",
        rows.len(),
        ratio(resolved, refs),
        ratio(equal, labels)
    );
    for r in rows.iter().filter(|r| !r.misses.is_empty()) {
        let shown = if all_misses { r.misses.len() } else { 5 };
        outln!("\n{}:", r.name);
        for m in r.misses.iter().take(shown) {
            outln!("  {m}");
        }
        if r.misses.len() > shown {
            outln!("  … {} more (--misses)", r.misses.len() - shown);
        }
    }
    Ok(ExitCode::SUCCESS)
}
