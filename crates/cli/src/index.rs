//! `ledger index`, `ledger coordinator`, `ledger worker`, `ledger verify`, and the graph update
//! that follows a written edit.

use crate::args::PipelineArgs;
use crate::output::{out, outln};
use crate::progress::Bar;
use anyhow::{Context, Result};
use ledger_pipeline::config::Config;
use ledger_pipeline::distributed::{self, CoordinatorOptions, WorkerOptions};
use ledger_pipeline::{IndexJob, Stage};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// The command line, as recorded in the `runs` table: credentials in URLs removed.
fn command_line() -> String {
    let line = std::env::args().collect::<Vec<_>>().join(" ");
    ledger_core::redact_credentials(&line)
}

/// `ledger index PATH... --out GRAPH` (or `--estimate`); the summary goes to stdout, or to
/// stderr when `summary_to_stderr`. Exit 3 when the graph is partial (see `partial_exit`).
pub fn index(
    paths: &[PathBuf],
    out: &Path,
    args: PipelineArgs,
    estimate: bool,
    summary_to_stderr: bool,
    config: &Config,
) -> Result<ExitCode> {
    let stage = Stage::new(args.apply(config))?;
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
}

/// `ledger coordinator`: exit 1 when a document ended in the dead-letter queue, 3 when the
/// graph is partial.
pub fn coordinator(args: CoordinatorArgs, config: &Config) -> Result<ExitCode> {
    let CoordinatorArgs {
        paths,
        out,
        amqp,
        max_attempts,
        pipeline,
    } = args;
    let settings = pipeline.apply(config);
    let bar = Bar::new(settings.index.progress);
    let allow_partial = settings.index.allow_partial;
    let options = CoordinatorOptions {
        amqp: amqp.unwrap_or(config.queue.amqp.clone()),
        broker_roots: config.tls.extra_roots()?,
        jobs: config.queue.jobs.clone(),
        parts: (!config.store.parts.is_empty()).then(|| config.store.parts.clone()),
        out,
        paths,
        settings,
        max_attempts: max_attempts.unwrap_or(config.queue.max_attempts),
        consumer_timeout: Duration::from_secs(config.queue.consumer_timeout_secs),
        command: command_line(),
    };
    let report = distributed::coordinator(&options, &bar)?;
    out!("{report}");
    let partial = partial_exit(report.partial(), allow_partial);
    Ok(if report.dead.is_empty() {
        partial
    } else {
        ExitCode::from(1)
    })
}

/// Resolves on SIGTERM or Ctrl-C.
async fn shutdown_signal() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = term => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}

/// `ledger worker`: runs document jobs until SIGTERM (or idle, with `--exit-when-idle`).
pub fn worker(
    amqp: Option<String>,
    roots: Vec<String>,
    args: PipelineArgs,
    prefetch: Option<u16>,
    exit_when_idle: Option<u64>,
    config: &Config,
) -> Result<ExitCode> {
    let mut all_roots = config.queue.worker_roots.clone();
    all_roots.extend(roots);
    let options = WorkerOptions {
        amqp: amqp.unwrap_or(config.queue.amqp.clone()),
        broker_roots: config.tls.extra_roots()?,
        jobs: config.queue.jobs.clone(),
        prefetch: prefetch.unwrap_or(config.queue.prefetch),
        exit_when_idle: exit_when_idle.map(Duration::from_secs),
        consumer_timeout: Duration::from_secs(config.queue.consumer_timeout_secs),
        stage: std::sync::Arc::new(Stage::new(args.apply(config))?),
        roots: all_roots,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let jobs = runtime.block_on(distributed::run_worker(&options, shutdown_signal()))?;
    eprintln!(
        "worker: {} done; exiting",
        ledger_pipeline::counted(usize::try_from(jobs).unwrap_or(usize::MAX), "job")
    );
    Ok(ExitCode::SUCCESS)
}

/// How `ledger verify` prints its findings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum VerifyFormat {
    /// `file:line:col: level: message`, like a compiler.
    Text,
    /// One JSON object per finding and line.
    Json,
    /// One SARIF 2.1.0 log.
    Sarif,
    /// GitHub Actions workflow annotations.
    Github,
}

/// `ledger verify`'s flags.
pub struct VerifyOptions {
    /// Ambiguous references fail the check too.
    pub fail_on_ambiguous: bool,
    /// Only references and unreadable documents, not other diagnostics.
    pub no_diagnostics: bool,
    /// How to print.
    pub format: VerifyFormat,
    /// Findings already known.
    pub baseline: Option<PathBuf>,
    /// Globs to leave out, added to `index.exclude`.
    pub exclude: Vec<String>,
}

/// `ledger verify PATH...`: findings on stdout in the format asked, the summary on stderr; exit
/// 1 when the check failed.
pub fn verify(paths: &[PathBuf], options: &VerifyOptions, config: &Config) -> Result<ExitCode> {
    let mut c = config.verify.clone();
    c.fail_on_ambiguous |= options.fail_on_ambiguous;
    c.show_diagnostics &= !options.no_diagnostics;
    let baseline = match &options.baseline {
        Some(path) => ledger_pipeline::verify::read_baseline(path)?,
        None => Default::default(),
    };
    let mut index = config.index.clone();
    index.exclude.extend(options.exclude.iter().cloned());
    let report = ledger_pipeline::verify::verify(paths, &index, &c, &baseline)?;
    match options.format {
        VerifyFormat::Text => {
            for f in &report.findings {
                outln!("{f}");
            }
        }
        VerifyFormat::Json => {
            for f in &report.findings {
                outln!("{}", f.to_json());
            }
        }
        VerifyFormat::Sarif => outln!("{:#}", report.sarif()),
        VerifyFormat::Github => {
            for f in &report.findings {
                outln!("{}", f.github_annotation());
            }
        }
    }
    let suppressed = if report.suppressed > 0 {
        format!(" ({} suppressed)", report.suppressed)
    } else {
        String::new()
    };
    eprintln!(
        "{} documents, {} references: {} broken, {} ambiguous{suppressed}",
        report.documents, report.mentions, report.broken, report.ambiguous
    );
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
    let args = PipelineArgs {
        no_progress: true,
        no_depends: built.judge.is_none(),
        no_related: built.embedder.is_none(),
        judge: built.judge,
        embedder: built.embedder,
        summarizer: built.summarizer,
        ..PipelineArgs::default()
    };
    eprintln!("updating the graph {}", graph.display());
    index(paths, graph, args, false, true, config)
}
