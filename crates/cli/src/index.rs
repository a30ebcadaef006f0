//! `ledger index` and `ledger verify`: discover, parse in parallel, resolve, then write or report.

use crate::config::{DependsConfig, IndexConfig, RelatedConfig, VerifyConfig};
use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use ledger_core::{Diagnostic, Document, EdgeKind, Resolution, Severity, UnitKind};
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Everything parsed from some inputs, resolved across documents.
pub struct Corpus {
    /// Parsed documents, in discovery order.
    pub docs: Vec<Document>,
    /// Problems with the inputs themselves (missing paths, unknown file types).
    pub diagnostics: Vec<Diagnostic>,
    /// Wall-clock time of discovery, parsing and resolution.
    pub seconds: f64,
}

/// Discovers, parses (rayon, `config.jobs` threads) and resolves the documents under `paths`.
pub fn load(paths: &[PathBuf], config: &IndexConfig) -> Result<Corpus> {
    let start = Instant::now();
    let (sources, diagnostics) = ledger_parse::discover(paths);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(config.jobs)
        .build()
        .context("starting parser threads")?;
    let tokenizer = config.count_tokens.then(ledger_parse::Tokenizer::cl100k);
    let bar = if config.progress {
        ProgressBar::new(sources.len() as u64)
    } else {
        ProgressBar::hidden()
    };
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} parsing [{bar:30}] {pos}/{len} documents {msg} ({eta})",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> "),
    );
    let mut docs: Vec<Document> = pool.install(|| {
        sources
            .par_iter()
            .map(|s| {
                let doc = ledger_parse::parse(s, tokenizer.as_ref());
                bar.inc(1);
                bar.set_message(s.id.clone());
                doc
            })
            .collect()
    });
    bar.finish_and_clear();
    ledger_parse::resolve_corpus(&mut docs);
    Ok(Corpus {
        docs,
        diagnostics,
        seconds: start.elapsed().as_secs_f64(),
    })
}

/// What `ledger index` is asked to do.
pub struct IndexJob<'a> {
    /// Files and folders to index.
    pub paths: &'a [PathBuf],
    /// The graph folder.
    pub out: &'a Path,
    /// Parsing settings.
    pub index: &'a IndexConfig,
    /// DEPENDS settings.
    pub depends: &'a DependsConfig,
    /// RELATED settings.
    pub related: &'a RelatedConfig,
    /// The `[llm]` chat endpoint, when one is configured.
    pub chat: Option<&'a ledger_llm::Client>,
}

/// Parses the inputs, refusing to go on when an input itself is bad (a missing path must not
/// replace a good graph with an empty one); unreadable documents are kept and named on stderr.
fn load_inputs(job: &IndexJob) -> Result<Corpus> {
    let corpus = load(job.paths, job.index)?;
    let bad_inputs: Vec<String> = corpus
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .map(ToString::to_string)
        .collect();
    if !bad_inputs.is_empty() {
        anyhow::bail!("bad input, nothing written:\n{}", bad_inputs.join("\n"));
    }
    for d in corpus
        .docs
        .iter()
        .flat_map(|d| &d.diagnostics)
        .filter(|d| d.severity == Severity::Error)
    {
        eprintln!("{d}");
    }
    Ok(corpus)
}

/// `ledger index PATH... --out GRAPH`.
pub fn index(job: &IndexJob, models: Option<&crate::semantic::Models>) -> Result<()> {
    let started_at = ledger_store::now_rfc3339();
    let out = job.out;
    let mut corpus = load_inputs(job)?;
    let depends_start = Instant::now();
    let depends_report = if job.depends.enabled {
        let judge = judge(job.depends, job.chat)?;
        let cache = judgment_cache(out, judge.name());
        Some((
            ledger_llm::depends::judge_corpus(
                &mut corpus.docs,
                judge.as_ref(),
                job.depends.window,
                &cache,
            ),
            judge.name().to_string(),
        ))
    } else {
        None
    };
    let depends_seconds = depends_start.elapsed().as_secs_f64();
    let semantic_start = Instant::now();
    let (semantic, stats) = match models {
        Some(models) => {
            // The previous version's summaries and vectors are the cache; a graph that cannot
            // be read (none yet, or an older layout) just means computing everything.
            let previous = if out.join("current").exists() {
                ledger_store::read_embeddings(out)
                    .inspect_err(|e| tracing::warn!(error = %e, "no reusable embeddings"))
                    .ok()
            } else {
                None
            };
            crate::semantic::compute(&corpus.docs, job.related, models, previous.as_ref())?
        }
        None => Default::default(),
    };
    let semantic_seconds = semantic_start.elapsed().as_secs_f64();
    let usage = job.chat.map(|c| c.usage().snapshot()).unwrap_or_default();
    let run = ledger_store::RunInfo {
        started_at,
        command: std::env::args().collect::<Vec<_>>().join(" "),
        inputs: job
            .paths
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(" "),
        seconds: corpus.seconds,
        llm_requests: usage.requests,
        llm_prompt_tokens: usage.prompt_tokens,
        llm_completion_tokens: usage.completion_tokens,
    };
    let write_start = Instant::now();
    let manifest =
        ledger_store::write_graph(out, &corpus.docs, &corpus.diagnostics, &semantic, &run)
            .with_context(|| format!("writing graph {}", out.display()))?;
    print!("{}", summary(&corpus));
    if let Some((r, name)) = &depends_report {
        println!(
            "depends: {} DEPENDS edges from {} judgments ({name}, window {}): {} reused, {} failed{}; {} requests, {} prompt + {} completion tokens; in {depends_seconds:.2} s",
            r.edges,
            r.units,
            job.depends.window,
            r.reused,
            r.failed,
            if r.failed > 0 {
                " (recorded in `judgments`; judged again next run)"
            } else {
                ""
            },
            r.requests,
            r.prompt_tokens,
            r.completion_tokens,
        );
    }
    if models.is_some() {
        println!(
            "related: {} RELATED edges at cosine > {} ({} scope) from {} embeddings ({}, summaries {}), in {semantic_seconds:.2} s",
            semantic.related.len(),
            job.related.theta,
            job.related.scope,
            semantic.embeddings.len(),
            semantic.model,
            semantic.summarizer,
        );
        println!(
            "cache: {} summaries and {} vectors reused, {} summaries written, {} vectors computed{}",
            stats.summaries_reused,
            stats.vectors_reused,
            stats.summaries_written,
            stats.vectors_computed,
            if stats.summary_failures > 0 {
                format!(
                    ", {} summaries failed (extractive used; retried next run)",
                    stats.summary_failures
                )
            } else {
                String::new()
            }
        );
    }
    println!(
        "graph: {} (version {}), written in {:.2} s",
        out.join("current").display(),
        manifest.version,
        write_start.elapsed().as_secs_f64()
    );
    Ok(())
}

/// `ledger index --estimate`: what the DEPENDS judge would send, given the graph's cache;
/// nothing is sent or written.
pub fn estimate(job: &IndexJob) -> Result<()> {
    let corpus = load_inputs(job)?;
    print!("{}", summary(&corpus));
    if !job.depends.enabled {
        println!("depends: disabled; no requests");
        return Ok(());
    }
    let judge = judge(job.depends, job.chat)?;
    let cache = judgment_cache(job.out, judge.name());
    let (report, e) =
        ledger_llm::depends::estimate(&corpus.docs, judge.as_ref(), job.depends.window, &cache);
    println!(
        "estimate: {} units to judge with {} (window {}), {} reused from {}: {} requests, about {} prompt tokens and at most {} completion tokens",
        report.units,
        judge.name(),
        job.depends.window,
        report.reused,
        job.out.display(),
        e.requests,
        e.prompt_tokens,
        e.completion_tokens
    );
    Ok(())
}

/// The DEPENDS judge the configuration names.
fn judge(
    config: &DependsConfig,
    chat: Option<&ledger_llm::Client>,
) -> Result<Box<dyn ledger_llm::depends::Judge>> {
    use ledger_llm::depends::{LlmJudge, OfflineJudge};
    Ok(match (config.judge.as_str(), chat) {
        ("offline", _) | ("auto", None) => Box::new(OfflineJudge),
        ("llm" | "auto", Some(client)) => Box::new(LlmJudge::new(client.clone())),
        ("llm", None) => anyhow::bail!(
            "depends.judge = \"llm\" needs a chat endpoint: set llm.url and llm.model (or LEDGER_LLM_URL and LEDGER_LLM_MODEL)"
        ),
        (other, _) => {
            anyhow::bail!("depends.judge = {other:?}: expected \"auto\", \"offline\" or \"llm\"")
        }
    })
}

/// The successful judgments of `judge` in the graph's current version, by cache key; empty when
/// there is no graph yet or it cannot be read (then everything is judged).
fn judgment_cache(graph: &Path, judge: &str) -> ledger_llm::depends::Cache {
    if !graph.join("current").exists() {
        return Default::default();
    }
    match ledger_store::read_judgments(graph) {
        Ok(rows) => rows
            .into_iter()
            .map(|(_, j)| j)
            .filter(|j| {
                j.judge == judge && matches!(j.outcome, ledger_core::JudgmentOutcome::Verdicts(_))
            })
            .map(|j| (j.cache_key.clone(), j))
            .collect(),
        Err(e) => {
            tracing::warn!(error = %e, "no reusable judgments");
            Default::default()
        }
    }
}

/// A human summary: documents, units per kind, edges per kind, references, diagnostics, speed.
pub fn summary(corpus: &Corpus) -> String {
    use std::fmt::Write;
    let docs = &corpus.docs;
    let bytes: u64 = docs.iter().map(|d| d.bytes).sum();
    let mut kinds: BTreeMap<UnitKind, usize> = BTreeMap::new();
    for u in docs.iter().flat_map(|d| &d.units) {
        *kinds.entry(u.kind).or_default() += 1;
    }
    let contains: usize = docs.iter().map(|d| d.units.len().saturating_sub(1)).sum();
    let references: usize = docs.iter().map(|d| d.reference_edges().len()).sum();
    let (mut resolved, mut broken, mut ambiguous) = (0, 0, 0);
    for m in docs.iter().flat_map(|d| &d.mentions) {
        match m.resolution {
            Resolution::Resolved { .. } => resolved += 1,
            Resolution::Ambiguous { .. } => ambiguous += 1,
            _ => broken += 1,
        }
    }
    let mut severities: BTreeMap<Severity, usize> = BTreeMap::new();
    for d in docs
        .iter()
        .flat_map(|d| &d.diagnostics)
        .chain(&corpus.diagnostics)
    {
        *severities.entry(d.severity).or_default() += 1;
    }
    let mut s = String::new();
    let _ = writeln!(
        s,
        "documents: {} ({:.1} MB)",
        docs.len(),
        bytes as f64 / 1e6
    );
    let _ = writeln!(
        s,
        "units: {} ({})",
        kinds.values().sum::<usize>(),
        kinds
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let _ = writeln!(
        s,
        "edges: {} {contains}, {} {references}",
        EdgeKind::Contains.as_str(),
        EdgeKind::References.as_str()
    );
    let _ = writeln!(
        s,
        "mentions: {} ({resolved} resolved, {broken} broken, {ambiguous} ambiguous)",
        resolved + broken + ambiguous
    );
    let _ = writeln!(
        s,
        "diagnostics: {}",
        if severities.is_empty() {
            "none".into()
        } else {
            severities
                .iter()
                .map(|(k, n)| format!("{n} {}", k.as_str()))
                .collect::<Vec<_>>()
                .join(", ")
        }
    );
    let _ = writeln!(
        s,
        "parsed in {:.2} s ({:.1} MB/s)",
        corpus.seconds,
        bytes as f64 / 1e6 / corpus.seconds.max(1e-9)
    );
    s
}

/// `ledger verify PATH...`: prints findings like a compiler; returns whether the check failed.
pub fn verify(paths: &[PathBuf], index: &IndexConfig, config: &VerifyConfig) -> Result<bool> {
    let mut index = index.clone();
    index.count_tokens = false;
    index.progress = false;
    let corpus = load(paths, &index)?;
    let mut lines = Vec::new();
    let (mut broken, mut ambiguous) = (0, 0);
    for doc in &corpus.docs {
        for m in &doc.mentions {
            let path = doc.files.get(m.file).map_or("", String::as_str);
            match &m.resolution {
                Resolution::Resolved { .. } => {}
                Resolution::Broken { .. } | Resolution::Pending => {
                    broken += 1;
                    lines.push((
                        path.to_string(),
                        m.line,
                        m.col,
                        format!("error: broken reference `{}`: {}", m.text, broken_reason(m)),
                    ));
                }
                Resolution::Ambiguous { reason } => {
                    ambiguous += 1;
                    let level = if config.fail_on_ambiguous {
                        "error"
                    } else {
                        "warning"
                    };
                    lines.push((
                        path.to_string(),
                        m.line,
                        m.col,
                        format!("{level}: ambiguous reference `{}`: {reason}", m.text),
                    ));
                }
            }
        }
        if config.show_diagnostics {
            for d in &doc.diagnostics {
                lines.push((
                    d.path.clone(),
                    d.line,
                    1,
                    format!("{}: {}", d.severity.as_str(), d.message),
                ));
            }
        }
    }
    for d in &corpus.diagnostics {
        lines.push((
            d.path.clone(),
            d.line,
            1,
            format!("{}: {}", d.severity.as_str(), d.message),
        ));
    }
    for (path, line, col, msg) in &lines {
        println!("{path}:{line}:{col}: {msg}");
    }
    let mentions: usize = corpus.docs.iter().map(|d| d.mentions.len()).sum();
    eprintln!(
        "{} documents, {mentions} references: {broken} broken, {ambiguous} ambiguous",
        corpus.docs.len()
    );
    let input_errors = corpus
        .diagnostics
        .iter()
        .any(|d| d.severity == Severity::Error);
    Ok(broken > 0 || (config.fail_on_ambiguous && ambiguous > 0) || input_errors)
}

fn broken_reason(m: &ledger_core::Mention) -> &str {
    match &m.resolution {
        Resolution::Broken { reason } => reason,
        _ => "not resolved",
    }
}
