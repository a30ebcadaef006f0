//! `ledger index`, `ledger coordinator`, `ledger worker`, `ledger verify`, and the graph update
//! that follows a written edit.

use crate::args::PipelineArgs;
use crate::output::out;
use crate::progress::Bar;
use anyhow::Result;
use ledger_pipeline::config::Config;
use ledger_pipeline::distributed::{self, CoordinatorOptions, WorkerOptions};
use ledger_pipeline::{IndexJob, Overrides, Settings, Stage, VerifyFormat};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// The command line, as recorded in the `runs` table: credentials in URLs removed.
fn command_line() -> String {
    let line = std::env::args().collect::<Vec<_>>().join(" ");
    ledger_pipeline::redact_credentials(&line)
}

/// `ledger index PATH... --out GRAPH` (or `--estimate`); the summary goes to stdout, or to
/// stderr when `summary_to_stderr`. Exit 3 when the graph is partial (see `partial_exit`).
pub fn index(
    paths: &[PathBuf],
    out: &Path,
    estimate: bool,
    summary_to_stderr: bool,
    config: &Config,
) -> Result<ExitCode> {
    let stage = Stage::new(Settings::of(config))?;
    let parts = config.store.parts(out)?;
    let command = command_line();
    let job = IndexJob {
        paths,
        out,
        parts: &parts,
        command: &command,
    };
    let bar = Bar::new(stage.settings().index.progress);
    let (summary, partial) = if estimate {
        let report = ledger_pipeline::index::estimate(&job, &stage, &bar)?;
        (report.to_string(), None)
    } else {
        let report = ledger_pipeline::index::index(&job, &stage, &bar)?;
        for e in &report.document_errors {
            eprintln!("{e}");
        }
        (report.to_string(), report.partial())
    };
    // After an edit, stdout carries the edit's diff only: the graph's summary goes to stderr.
    if summary_to_stderr {
        eprint!("{summary}");
    } else {
        out!("{summary}");
    }
    Ok(partial_exit(partial, stage.settings().index.allow_partial))
}

/// Exit code 3 when a committed graph is partial (unless allowed), with a warning either way.
fn partial_exit(partial: Option<String>, allowed: bool) -> ExitCode {
    let Some(what) = partial else {
        return ExitCode::SUCCESS;
    };
    if allowed {
        eprintln!("warning: the graph was committed, but {what}");
        ExitCode::SUCCESS
    } else {
        eprintln!(
            "error: the graph was committed, but {what}; exit code 3 (--allow-partial to exit 0)"
        );
        ExitCode::from(3)
    }
}

/// `ledger coordinator`'s arguments.
#[derive(clap::Args)]
pub struct CoordinatorArgs {
    /// Files or folders, as for `index` (workers must see them at the same absolute paths).
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    /// The graph folder, shared with the workers.
    #[arg(long)]
    out: PathBuf,
    /// Broker URL (default: `queue.amqp`).
    #[arg(long)]
    amqp: Option<String>,
    /// Attempts per document before its job goes to the dead-letter queue.
    #[arg(long)]
    max_attempts: Option<u32>,
    #[command(flatten)]
    pipeline: PipelineArgs,
}

impl CoordinatorArgs {
    /// The inputs.
    pub fn paths(&self) -> &[PathBuf] {
        &self.paths
    }

    /// What its flags override in the configuration.
    pub fn overrides(&self) -> Overrides {
        Overrides {
            amqp: self.amqp.clone(),
            max_attempts: self.max_attempts,
            ..self.pipeline.overrides()
        }
    }
}

/// `ledger coordinator`: exit 1 when a document ended in the dead-letter queue, 3 when the
/// graph is partial.
pub fn coordinator(args: CoordinatorArgs, config: &Config) -> Result<ExitCode> {
    let CoordinatorArgs { paths, out, .. } = args;
    let options = CoordinatorOptions::of(config, paths, out, command_line())?;
    let bar = Bar::new(options.settings.index.progress);
    let allow_partial = options.settings.index.allow_partial;
    let report = distributed::coordinator(&options, &bar)?;
    out!("{report}");
    let partial = partial_exit(report.partial(), allow_partial);
    Ok(if report.dead.is_empty() {
        partial
    } else {
        ExitCode::from(1)
    })
}

/// `ledger worker`: runs document jobs until SIGTERM (or idle, with `--exit-when-idle`).
pub fn worker(exit_when_idle: Option<u64>, config: &Config) -> Result<ExitCode> {
    let options = WorkerOptions::of(config, exit_when_idle.map(Duration::from_secs))?;
    let jobs = distributed::work(&options)?;
    eprintln!(
        "worker: {} done; exiting",
        ledger_pipeline::counted(usize::try_from(jobs).unwrap_or(usize::MAX), "job")
    );
    Ok(ExitCode::SUCCESS)
}

/// `ledger verify PATH...`: findings on stdout in `format`, the summary on stderr; exit 1 when
/// the check failed. Findings in `baseline` are known and left out.
pub fn verify(
    paths: &[PathBuf],
    format: VerifyFormat,
    baseline: Option<&Path>,
    config: &Config,
) -> Result<ExitCode> {
    let baseline = match baseline {
        Some(path) => ledger_pipeline::verify::read_baseline(path)?,
        None => Default::default(),
    };
    let report = ledger_pipeline::verify::verify(paths, &config.index, &config.verify, &baseline)?;
    out!("{}", report.render(format));
    eprintln!("{}", report.summary());
    Ok(if report.failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// After a written edit: updates `graph` from `paths` as `ledger index` would, with the judge,
/// summarizer and embedder the graph was built with (unchanged documents are reused whole, and
/// in a changed one only the units whose DEPENDS candidates or summaries changed are judged or
/// embedded again).
pub fn update_graph(paths: &[PathBuf], graph: &Path, config: &Config) -> Result<ExitCode> {
    let built = ledger_pipeline::index::built_with(graph)?;
    let config = Overrides::as_built(&built).apply(config.clone());
    eprintln!("updating the graph {}", graph.display());
    index(paths, graph, false, true, &config)
}
