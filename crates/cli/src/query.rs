//! The commands that read a graph: `sql`, `context`, `impact`, `similar`.

use crate::output::{out, outln};
use anyhow::{Context, Result};
use ledger_pipeline::SqlFormat;
use ledger_pipeline::config::Config;
use ledger_pipeline::retrieval::Ask;
use std::path::Path;
use std::process::ExitCode;

/// `ledger sql`.
pub fn sql(graph: &Path, query: &str, format: SqlFormat) -> Result<ExitCode> {
    let format = match format {
        SqlFormat::Table => ledger_store::OutputFormat::Table,
        SqlFormat::Csv => ledger_store::OutputFormat::Csv,
        SqlFormat::Json => ledger_store::OutputFormat::Json,
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let out = rt.block_on(async {
        let session = ledger_store::SqlSession::open(graph).await?;
        session.query_formatted(query, format).await
    })?;
    outln!("{}", out.trim_end());
    Ok(ExitCode::SUCCESS)
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
        "context: {} units, {} tokens of a {} budget = {:.1}% of the document's {} tokens ({} candidates left out)",
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
        s.push_str(&ledger_retrieve::markdown(&graph, c));
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
    let semantic = ledger_store::read_embeddings(graph)?;
    outln!("model: {}", semantic.model);
    for (d, u, score, summary) in ledger_pipeline::semantic::similar(&semantic, doc, unit, k)? {
        let short: String = summary.chars().take(80).collect();
        outln!("{score:.3}  {d}  {u}  {short}");
    }
    Ok(ExitCode::SUCCESS)
}
