//! The commands that read a graph: `sql`, `context`, `impact`, `similar`.

use crate::output::{out, outln};
use anyhow::{Context, Result};
use ledger_pipeline::SqlFormat;
use ledger_pipeline::config::Config;
use ledger_pipeline::retrieval::Ask;
use std::path::Path;
use std::process::ExitCode;

/// Where `ledger sql` takes its statements from.
pub enum Script {
    /// Given on the command line.
    Text(String),
    /// A file.
    File(std::path::PathBuf),
    /// Standard input: read whole when it is not a terminal, else an interactive shell.
    Stdin,
}

/// `ledger sql`: every statement of the script, its result printed in `format`; an
/// interactive shell when the statements would come from a terminal.
pub fn sql(
    graph: &Path,
    script: Script,
    format: SqlFormat,
    limits: ledger_pipeline::SqlLimits,
) -> Result<ExitCode> {
    use std::io::IsTerminal;
    let format = match format {
        SqlFormat::Table => ledger_pipeline::OutputFormat::Table,
        SqlFormat::Csv => ledger_pipeline::OutputFormat::Csv,
        SqlFormat::Json => ledger_pipeline::OutputFormat::Json,
    };
    let text = match script {
        Script::Text(t) => t,
        Script::File(f) => {
            std::fs::read_to_string(&f).with_context(|| format!("reading {}", f.display()))?
        }
        Script::Stdin if std::io::stdin().is_terminal() => return shell(graph, format, limits),
        Script::Stdin => {
            std::io::read_to_string(std::io::stdin()).context("reading standard input")?
        }
    };
    ledger_pipeline::block_on(async {
        let session = ledger_pipeline::SqlSession::open(graph, limits).await?;
        session.run_script(&text, format, &mut write_out).await
    })??;
    Ok(ExitCode::SUCCESS)
}

/// Writes a piece of a result to standard output.
fn write_out(bytes: &[u8]) -> ledger_pipeline::StoreResult<()> {
    crate::output::write_bytes(bytes);
    Ok(())
}

/// The interactive shell: line editing and history (in `$XDG_STATE_HOME/ledger/sql_history`, else
/// `~/.local/state/ledger/sql_history`); a statement runs when a line ends with `;`; `.tables`,
/// `.quit` and Ctrl-D as DuckDB's shell has them. An error is printed and the shell goes on.
fn shell(
    graph: &Path,
    format: ledger_pipeline::OutputFormat,
    limits: ledger_pipeline::SqlLimits,
) -> Result<ExitCode> {
    let session = ledger_pipeline::block_on(ledger_pipeline::SqlSession::open(graph, limits))??;
    let mut editor = rustyline::DefaultEditor::new().context("starting the line editor")?;
    let history = std::env::var_os("XDG_STATE_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".local/state")))
        .map(|d| d.join("ledger/sql_history"));
    if let Some(h) = &history {
        let _ = editor.load_history(h);
    }
    eprintln!(
        "ledger sql on {}: statements end with `;`; .tables lists the tables, .help the commands, .quit or Ctrl-D leaves",
        graph.display()
    );
    let mut pending = String::new();
    loop {
        let prompt = if pending.is_empty() {
            "ledger> "
        } else {
            "   ...> "
        };
        let line = match editor.readline(prompt) {
            Ok(line) => line,
            Err(rustyline::error::ReadlineError::Interrupted) => {
                pending.clear();
                continue;
            }
            Err(_) => break,
        };
        let trimmed = line.trim();
        let statement = if pending.is_empty() && trimmed.starts_with('.') {
            match dot_command(trimmed) {
                Dot::Quit => break,
                Dot::Say(text) => {
                    eprintln!("{text}");
                    continue;
                }
                Dot::Run(statement) => statement.to_string(),
            }
        } else {
            pending.push_str(&line);
            pending.push('\n');
            if !trimmed.ends_with(';') {
                continue;
            }
            std::mem::take(&mut pending)
        };
        let _ = editor.add_history_entry(statement.trim());
        match ledger_pipeline::block_on(session.run_script(&statement, format, &mut write_out)) {
            Ok(Ok(())) => {}
            Ok(Err(e)) => eprintln!(
                "error: {}",
                crate::output::said_once(&anyhow::Error::from(e))
            ),
            Err(e) => eprintln!("error: {e}"),
        }
    }
    if let Some(h) = &history {
        if let Some(dir) = h.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let _ = editor.save_history(h);
    }
    Ok(ExitCode::SUCCESS)
}

/// What a line starting with `.` asks of the shell.
enum Dot {
    /// Leave.
    Quit,
    /// Print this, run nothing.
    Say(String),
    /// Run this statement.
    Run(&'static str),
}

/// The shell's dot commands, as DuckDB's and SQLite's shells have them; an unknown one is
/// answered with the list, never run as SQL.
fn dot_command(line: &str) -> Dot {
    const HELP: &str = ".tables  the tables and views, sorted (information_schema last)\n\
                        .help    this list\n\
                        .quit    leave (also .exit, Ctrl-D)";
    match line.split_whitespace().next().unwrap_or(line) {
        ".quit" | ".exit" => Dot::Quit,
        ".help" => Dot::Say(HELP.to_string()),
        ".tables" => Dot::Run(
            "SELECT table_schema, table_name, table_type FROM information_schema.tables \
             ORDER BY table_schema = 'information_schema', table_name;",
        ),
        other => Dot::Say(format!("unknown command {other}; the shell knows:\n{HELP}")),
    }
}

/// `ledger context`: the packed context as JSON or Markdown, and tokens retrieved / document
/// tokens on stderr.
pub fn context(graph_path: &Path, ask: &Ask, markdown: bool, config: &Config) -> Result<ExitCode> {
    let graph = ledger_pipeline::retrieval::load(graph_path)?;
    let retrieved = ledger_pipeline::retrieval::retrieve(graph_path, &graph, ask, config)?;
    for n in &retrieved.notes {
        eprintln!("{n}");
    }
    let c = &retrieved.context;
    eprintln!(
        "context: {} units, {} tokens of a {} budget = {:.1}% of the document's {} tokens ({} of its units left out)",
        c.units.len(),
        c.tokens,
        c.budget,
        100.0 * c.tokens as f64 / c.document_tokens.max(1) as f64,
        c.document_tokens,
        c.left_out
    );
    let out = if markdown {
        let mut s = String::new();
        if let Some(text) = ask.instruction {
            s.push_str(&format!("# Instruction\n\n{text}\n\n"));
        }
        s.push_str(&ledger_pipeline::retrieval::markdown(&graph, c));
        s
    } else {
        serde_json::to_string_pretty(c)?
    };
    outln!("{}", out.trim_end());
    Ok(ExitCode::SUCCESS)
}

/// `ledger impact`.
pub fn impact(graph: &Path, unit: &str, doc: Option<&str>, depth: usize) -> Result<ExitCode> {
    let g = ledger_pipeline::retrieval::load(graph)?;
    let report = ledger_pipeline::retrieval::impact(&g, unit, doc, depth)?;
    out!("{report}");
    eprintln!(
        "{} units may be affected by a change to `{}` (depth {depth})",
        report.impacted.len(),
        report.target
    );
    Ok(ExitCode::SUCCESS)
}

/// `ledger similar`.
pub fn similar(graph: &Path, unit: &str, doc: Option<&str>, k: usize) -> Result<ExitCode> {
    let semantic = ledger_pipeline::read_embeddings(graph)?;
    outln!("model: {}", semantic.model);
    for (d, u, score, summary) in ledger_pipeline::semantic::similar(&semantic, doc, unit, k)? {
        let short: String = summary.chars().take(80).collect();
        outln!("{score:.3}  {d}  {u}  {short}");
    }
    Ok(ExitCode::SUCCESS)
}
