//! `ledger index` and `ledger verify`: discover, parse in parallel, resolve, then write or report.

use crate::config::{IndexConfig, RelatedConfig, VerifyConfig};
use crate::pipeline::{DocReport, Part, Stage, part_key};
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

/// Discovers and parses (rayon, `config.jobs` threads) the documents under `paths`; references
/// across documents are left pending (see `ledger_parse::resolve_corpus`).
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
    let docs: Vec<Document> = pool.install(|| {
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
    /// Where document parts are kept.
    pub parts: &'a ledger_store::PartStore,
    /// Parsing settings.
    pub index: &'a IndexConfig,
    /// RELATED settings.
    pub related: &'a RelatedConfig,
}

/// Parses the inputs, refusing to go on when an input itself is bad (a missing path must not
/// replace a good graph with an empty one); unreadable documents are kept and named on stderr.
pub fn load_inputs(paths: &[PathBuf], config: &IndexConfig) -> Result<Corpus> {
    let corpus = load(paths, config)?;
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

/// The part each document of the graph's current version came from (document id → key); empty
/// when there is no graph yet.
pub fn previous_parts(graph: &Path) -> BTreeMap<String, String> {
    ledger_store::current_version(graph)
        .and_then(|dir| ledger_store::Manifest::read(&dir))
        .map(|m| m.parts)
        .unwrap_or_default()
}

/// The document stage for one document, reusing its part when one with the same key is complete,
/// else taking the document's previous part (or an incomplete one) as cache. The part is written
/// durably before this returns.
pub fn process_document(
    stage: &Stage,
    parts: &ledger_store::PartStore,
    doc: Document,
    previous_key: Option<&str>,
) -> Result<(Part, String, DocReport)> {
    let key = part_key(&doc.id, &doc.content_hash, stage.fingerprint());
    let mut cache = None;
    if parts.has(&key) {
        let mut part = Part::read(parts, &key)?;
        if part.complete() {
            // Nothing of it is judged again in this run.
            for j in &mut part.doc.judgments {
                j.reused = true;
            }
            let report = DocReport::reused(&part);
            return Ok((part, key, report));
        }
        cache = Some(part);
    }
    if cache.is_none()
        && let Some(k) = previous_key.filter(|k| parts.has(k))
    {
        cache = Part::read(parts, k)
            .inspect_err(|e| tracing::warn!(error = %e, "previous part unreadable"))
            .ok();
    }
    let (part, report) = stage.process(doc, cache.as_ref())?;
    part.write(parts, &key)?;
    Ok((part, key, report))
}

/// `ledger index PATH... --out GRAPH`: the embedded mode. Every document goes through the same
/// document stage as a worker's job (rayon over documents), then the corpus stage commits.
pub fn index(job: &IndexJob, stage: &Stage) -> Result<()> {
    let started_at = ledger_store::now_rfc3339();
    let out = job.out;
    let corpus = load_inputs(job.paths, job.index)?;
    let previous = previous_parts(out);
    let stage_start = Instant::now();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(job.index.jobs)
        .build()
        .context("starting worker threads")?;
    let results: Vec<Result<(Part, String, DocReport)>> = pool.install(|| {
        corpus
            .docs
            .into_par_iter()
            .map(|doc| {
                let previous_key = previous.get(&doc.id).map(String::as_str);
                let id = doc.id.clone();
                process_document(stage, job.parts, doc, previous_key)
                    .with_context(|| format!("document {id}"))
            })
            .collect()
    });
    let mut parts = Vec::with_capacity(results.len());
    let mut keys = BTreeMap::new();
    let mut report = DocReport::default();
    for r in results {
        let (part, key, r) = r?;
        report.add(&r);
        keys.insert(part.doc.id.clone(), key);
        parts.push(part);
    }
    let stage_seconds = stage_start.elapsed().as_secs_f64();
    let corpus_start = Instant::now();
    let (docs, semantic) = crate::pipeline::assemble(parts, job.related, stage.semantic_names())?;
    let corpus = Corpus {
        docs,
        diagnostics: corpus.diagnostics,
        seconds: corpus.seconds,
    };
    let corpus_seconds = corpus_start.elapsed().as_secs_f64();
    let usage = stage
        .chat()
        .map(|c| c.usage().snapshot())
        .unwrap_or_default();
    commit(job, usage, &corpus, &semantic, keys, started_at)?;
    print_report(
        stage,
        &report,
        &semantic,
        job.related,
        stage_seconds,
        corpus_seconds,
    );
    Ok(())
}

/// Writes the graph version (and drops the parts it no longer needs); prints the corpus summary.
pub fn commit(
    job: &IndexJob,
    usage: ledger_llm::UsageSnapshot,
    corpus: &Corpus,
    semantic: &ledger_core::Semantic,
    parts: BTreeMap<String, String>,
    started_at: String,
) -> Result<()> {
    let keep: std::collections::HashSet<String> = parts.values().cloned().collect();
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
        parts,
    };
    let write_start = Instant::now();
    let manifest =
        ledger_store::write_graph(job.out, &corpus.docs, &corpus.diagnostics, semantic, &run)
            .with_context(|| format!("writing graph {}", job.out.display()))?;
    job.parts.prune(&keep);
    print!("{}", summary(corpus));
    println!(
        "graph: {} (version {}), written in {:.2} s",
        job.out.join("current").display(),
        manifest.version,
        write_start.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Prints what the document stages did (summed over documents) and the RELATED edges.
pub fn print_report(
    stage: &Stage,
    report: &DocReport,
    semantic: &ledger_core::Semantic,
    related: &RelatedConfig,
    stage_seconds: f64,
    corpus_seconds: f64,
) {
    let r = &report.depends;
    if let Some(judge) = stage.judge() {
        println!(
            "depends: {} DEPENDS edges from {} judgments ({}, window {}): {} reused, {} failed{}; {} requests, {} prompt + {} completion tokens",
            r.edges,
            r.units,
            judge.name(),
            stage.settings().depends.window,
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
    if stage.settings().embed_enabled {
        let stats = &report.semantic;
        println!(
            "related: {} RELATED edges at cosine > {} ({} scope) from {} embeddings ({}, summaries {}), in {corpus_seconds:.2} s",
            semantic.related.len(),
            related.theta,
            related.scope,
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
    println!("document stage: {stage_seconds:.2} s");
}

/// `ledger index --estimate`: what the DEPENDS judge would send, given the parts the graph
/// already holds; nothing is sent or written.
pub fn estimate(job: &IndexJob, stage: &Stage) -> Result<()> {
    let corpus = load_inputs(job.paths, job.index)?;
    print!("{}", summary(&corpus));
    let Some(judge) = stage.judge() else {
        println!("depends: disabled; no requests");
        return Ok(());
    };
    // The judgments a run could reuse: those of the parts it would read.
    let previous = previous_parts(job.out);
    let mut cache = ledger_llm::depends::Cache::new();
    for doc in &corpus.docs {
        let key = part_key(&doc.id, &doc.content_hash, stage.fingerprint());
        for k in [
            Some(key.as_str()),
            previous.get(&doc.id).map(String::as_str),
        ]
        .into_iter()
        .flatten()
        {
            if let Ok(p) = Part::read(job.parts, k) {
                cache.extend(p.judgment_cache(judge.name()));
                break;
            }
        }
    }
    let (report, e) =
        ledger_llm::depends::estimate(&corpus.docs, judge, stage.settings().depends.window, &cache);
    println!(
        "estimate: {} units to judge with {} (window {}), {} reused from {}: {} requests, about {} prompt tokens and at most {} completion tokens",
        report.units,
        judge.name(),
        stage.settings().depends.window,
        report.reused,
        job.out.display(),
        e.requests,
        e.prompt_tokens,
        e.completion_tokens
    );
    Ok(())
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
    let proofs: usize = docs.iter().map(|d| d.proof_edges().len()).sum();
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
        "edges: {} {contains}, {} {references}, {} {proofs} (proof of a statement)",
        EdgeKind::Contains.as_str(),
        EdgeKind::References.as_str(),
        EdgeKind::Depends.as_str(),
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
    let mut corpus = load(paths, &index)?;
    ledger_parse::resolve_corpus(&mut corpus.docs);
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
