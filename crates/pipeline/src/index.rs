//! Indexing in embedded mode, the commit both modes end with, `--estimate`, and `verify`:
//! discover, parse in parallel, run every document through the document stage (reusing
//! unchanged parts), then the corpus stage, then commit a graph version.

use crate::config::{
    EmbedderKind, IndexConfig, JudgeKind, RelatedConfig, SummarizerKind, VerifyConfig,
};
use crate::stage::{DocReport, Part, Stage, assemble, part_key};
use crate::{Error, Progress, Result};
use ledger_core::{Diagnostic, Document, EdgeKind, Resolution, Semantic, Severity, UnitKind};
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Everything parsed from some inputs.
pub struct Corpus {
    /// Parsed documents, in discovery order (sorted by id once assembled).
    pub docs: Vec<Document>,
    /// Problems with the inputs themselves (missing paths, unknown file types).
    pub diagnostics: Vec<Diagnostic>,
    /// Wall-clock time of discovery and parsing.
    pub seconds: f64,
}

impl Corpus {
    /// The documents' own errors: see [`document_errors`].
    pub fn document_errors(&self) -> Vec<String> {
        document_errors(&self.docs)
    }
}

/// The documents' own errors (an unreadable file, a bad encoding): each document is still
/// stored or edited, and these are what a user must be told.
pub fn document_errors(docs: &[Document]) -> Vec<String> {
    docs.iter()
        .flat_map(|d| &d.diagnostics)
        .filter(|d| d.severity == Severity::Error)
        .map(ToString::to_string)
        .collect()
}

fn thread_pool(jobs: usize) -> Result<rayon::ThreadPool> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(jobs)
        .build()
        .map_err(|e| Error::Invalid(format!("starting worker threads: {e}")))
}

/// Discovers and parses (rayon, `config.jobs` threads) the documents under `paths`; references
/// across documents are left pending (see `ledger_parse::resolve_corpus`).
pub fn load(paths: &[PathBuf], config: &IndexConfig, progress: &dyn Progress) -> Result<Corpus> {
    let start = Instant::now();
    let (sources, diagnostics) = ledger_parse::discover(paths);
    let pool = thread_pool(config.jobs)?;
    let tokenizer = config.count_tokens.then(ledger_parse::Tokenizer::cl100k);
    progress.start("parsing", sources.len() as u64);
    let docs: Vec<Document> = pool.install(|| {
        sources
            .par_iter()
            .map(|s| {
                let doc = ledger_parse::parse(s, tokenizer.as_ref());
                progress.advance(&s.id);
                doc
            })
            .collect()
    });
    progress.finish();
    Ok(Corpus {
        docs,
        diagnostics,
        seconds: start.elapsed().as_secs_f64(),
    })
}

/// Parses the inputs, refusing to go on when an input itself is bad (a missing path must not
/// replace a good graph with an empty one); unreadable documents are kept (see
/// [`Corpus::document_errors`]).
pub fn load_inputs(
    paths: &[PathBuf],
    config: &IndexConfig,
    progress: &dyn Progress,
) -> Result<Corpus> {
    let corpus = load(paths, config, progress)?;
    let bad_inputs: Vec<String> = corpus
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .map(ToString::to_string)
        .collect();
    if !bad_inputs.is_empty() {
        return Err(Error::BadInput(bad_inputs.join("\n")));
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
    /// The command line recorded in the `runs` table.
    pub command: &'a str,
}

/// A graph version written.
#[derive(Debug, Clone)]
pub struct CommitReport {
    /// What the graph holds.
    pub summary: CorpusSummary,
    /// `GRAPH/current`.
    pub current: PathBuf,
    /// The version committed.
    pub version: u64,
    /// Seconds spent writing it.
    pub write_seconds: f64,
}

impl fmt::Display for CommitReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.summary)?;
        writeln!(
            f,
            "graph: {} (version {}), written in {:.2} s",
            self.current.display(),
            self.version,
            self.write_seconds
        )
    }
}

/// What `ledger index` did.
pub struct IndexReport {
    /// The graph version written.
    pub commit: CommitReport,
    /// The documents' own errors (they were stored all the same).
    pub document_errors: Vec<String>,
    /// The document stages, summed over documents.
    pub stage: DocReport,
    /// The DEPENDS judge's name and window, when DEPENDS edges are on.
    pub judge: Option<(String, usize)>,
    /// RELATED settings, when summaries and embeddings are on.
    pub related: Option<RelatedConfig>,
    /// RELATED edges found.
    pub related_edges: usize,
    /// Embeddings in the graph, their model and summarizer.
    pub embeddings: (usize, String, String),
    /// Seconds of the document stages.
    pub stage_seconds: f64,
    /// Seconds of the corpus stage.
    pub corpus_seconds: f64,
    /// The documents as committed (sorted by id, resolved, with judgments and DEPENDS edges).
    pub docs: Vec<Document>,
}

impl fmt::Display for IndexReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.commit)?;
        let r = &self.stage.depends;
        if let Some((judge, window)) = &self.judge {
            writeln!(
                f,
                "depends: {} DEPENDS edges from {} judgments ({judge}, window {window}): {} reused, {} failed{}; {} requests, {} prompt + {} completion tokens",
                r.edges,
                r.units,
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
            )?;
        }
        if let Some(related) = &self.related {
            let stats = &self.stage.semantic;
            let (embeddings, model, summarizer) = &self.embeddings;
            writeln!(
                f,
                "related: {} RELATED edges at cosine > {} ({} scope) from {embeddings} embeddings ({model}, summaries {summarizer}), in {:.2} s",
                self.related_edges, related.theta, related.scope, self.corpus_seconds,
            )?;
            writeln!(
                f,
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
            )?;
        }
        writeln!(f, "document stage: {:.2} s", self.stage_seconds)
    }
}

/// `ledger index PATH... --out GRAPH`: the embedded mode. Every document goes through the same
/// document stage as a worker's job (rayon over documents), then the corpus stage commits.
pub fn index(job: &IndexJob, stage: &Stage, progress: &dyn Progress) -> Result<IndexReport> {
    let started_at = ledger_store::now_rfc3339();
    let out = job.out;
    let corpus = load_inputs(job.paths, job.index, progress)?;
    let document_errors = corpus.document_errors();
    let previous = previous_parts(out);
    let stage_start = Instant::now();
    let pool = thread_pool(job.index.jobs)?;
    let results: Vec<Result<(Part, String, DocReport)>> = pool.install(|| {
        corpus
            .docs
            .into_par_iter()
            .map(|doc| {
                let previous_key = previous.get(&doc.id).map(String::as_str);
                let id = doc.id.clone();
                process_document(stage, job.parts, doc, previous_key).map_err(|e| {
                    Error::Invalid(format!("document {id}: {}", crate::error_chain(&e)))
                })
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
    let (docs, semantic) = assemble(parts, job.related, stage.semantic_names())?;
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
    let commit = commit(job, usage, &corpus, &semantic, keys, started_at)?;
    let settings = stage.settings();
    Ok(IndexReport {
        commit,
        document_errors,
        stage: report,
        judge: stage
            .judge()
            .map(|j| (j.name().to_string(), settings.depends.window)),
        related: settings.embed_enabled.then(|| job.related.clone()),
        related_edges: semantic.related.len(),
        embeddings: (
            semantic.embeddings.len(),
            semantic.model.clone(),
            semantic.summarizer.clone(),
        ),
        stage_seconds,
        corpus_seconds,
        docs: corpus.docs,
    })
}

/// Writes the graph version (and drops the parts it no longer needs).
pub fn commit(
    job: &IndexJob,
    usage: ledger_llm::UsageSnapshot,
    corpus: &Corpus,
    semantic: &Semantic,
    parts: BTreeMap<String, String>,
    started_at: String,
) -> Result<CommitReport> {
    let keep: std::collections::HashSet<String> = parts.values().cloned().collect();
    let run = ledger_store::RunInfo {
        started_at,
        command: job.command.to_string(),
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
            .map_err(crate::store(|| {
                format!("writing graph {}", job.out.display())
            }))?;
    job.parts.prune(&keep);
    Ok(CommitReport {
        summary: CorpusSummary::of(corpus),
        current: job.out.join("current"),
        version: manifest.version,
        write_seconds: write_start.elapsed().as_secs_f64(),
    })
}

/// What `ledger index --estimate` found.
pub struct EstimateReport {
    /// The corpus as parsed.
    pub summary: CorpusSummary,
    /// The judge's name and window, and the estimate; `None` when DEPENDS edges are off.
    pub depends: Option<(
        String,
        usize,
        ledger_llm::depends::Report,
        ledger_llm::depends::Estimate,
    )>,
    /// The graph whose parts were looked at.
    pub graph: PathBuf,
}

impl fmt::Display for EstimateReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.summary)?;
        let Some((judge, window, report, e)) = &self.depends else {
            return writeln!(f, "depends: disabled; no requests");
        };
        writeln!(
            f,
            "estimate: {} units to judge with {judge} (window {window}), {} reused from {}: {} requests, about {} prompt tokens and at most {} completion tokens",
            report.units,
            report.reused,
            self.graph.display(),
            e.requests,
            e.prompt_tokens,
            e.completion_tokens
        )
    }
}

/// `ledger index --estimate`: what the DEPENDS judge would send, given the parts the graph
/// already holds; nothing is sent or written.
pub fn estimate(job: &IndexJob, stage: &Stage, progress: &dyn Progress) -> Result<EstimateReport> {
    let corpus = load_inputs(job.paths, job.index, progress)?;
    let summary = CorpusSummary::of(&corpus);
    let graph = job.out.to_path_buf();
    let Some(judge) = stage.judge() else {
        return Ok(EstimateReport {
            summary,
            depends: None,
            graph,
        });
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
    let window = stage.settings().depends.window;
    let (report, e) = ledger_llm::depends::estimate(&corpus.docs, judge, window, &cache);
    Ok(EstimateReport {
        summary,
        depends: Some((judge.name().to_string(), window, report, e)),
        graph,
    })
}

/// What a corpus holds: documents, units per kind, edges per kind, references, diagnostics,
/// parse speed.
#[derive(Debug, Clone, Default)]
pub struct CorpusSummary {
    /// Documents.
    pub documents: usize,
    /// Their bytes.
    pub bytes: u64,
    /// Units per kind.
    pub units: BTreeMap<UnitKind, usize>,
    /// CONTAINS edges.
    pub contains: usize,
    /// REFERENCES edges.
    pub references: usize,
    /// DEPENDS edges from a proof to its statement.
    pub proofs: usize,
    /// Mentions resolved, broken, ambiguous.
    pub mentions: (usize, usize, usize),
    /// Diagnostics per severity (documents' and inputs').
    pub diagnostics: BTreeMap<Severity, usize>,
    /// Seconds of discovery and parsing.
    pub seconds: f64,
}

impl CorpusSummary {
    /// The summary of `corpus`.
    pub fn of(corpus: &Corpus) -> CorpusSummary {
        let docs = &corpus.docs;
        let mut s = CorpusSummary {
            documents: docs.len(),
            bytes: docs.iter().map(|d| d.bytes).sum(),
            contains: docs.iter().map(|d| d.units.len().saturating_sub(1)).sum(),
            references: docs.iter().map(|d| d.reference_edges().len()).sum(),
            proofs: docs.iter().map(|d| d.proof_edges().len()).sum(),
            seconds: corpus.seconds,
            ..CorpusSummary::default()
        };
        for u in docs.iter().flat_map(|d| &d.units) {
            *s.units.entry(u.kind).or_default() += 1;
        }
        for m in docs.iter().flat_map(|d| &d.mentions) {
            match m.resolution {
                Resolution::Resolved { .. } => s.mentions.0 += 1,
                Resolution::Ambiguous { .. } => s.mentions.2 += 1,
                _ => s.mentions.1 += 1,
            }
        }
        for d in docs
            .iter()
            .flat_map(|d| &d.diagnostics)
            .chain(&corpus.diagnostics)
        {
            *s.diagnostics.entry(d.severity).or_default() += 1;
        }
        s
    }
}

impl fmt::Display for CorpusSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mb = self.bytes as f64 / 1e6;
        writeln!(f, "documents: {} ({mb:.1} MB)", self.documents)?;
        writeln!(
            f,
            "units: {} ({})",
            self.units.values().sum::<usize>(),
            self.units
                .iter()
                .map(|(k, n)| format!("{k} {n}"))
                .collect::<Vec<_>>()
                .join(", ")
        )?;
        writeln!(
            f,
            "edges: {} {}, {} {}, {} {} (proof of a statement)",
            EdgeKind::Contains.as_str(),
            self.contains,
            EdgeKind::References.as_str(),
            self.references,
            EdgeKind::Depends.as_str(),
            self.proofs,
        )?;
        let (resolved, broken, ambiguous) = self.mentions;
        writeln!(
            f,
            "mentions: {} ({resolved} resolved, {broken} broken, {ambiguous} ambiguous)",
            resolved + broken + ambiguous
        )?;
        writeln!(
            f,
            "diagnostics: {}",
            if self.diagnostics.is_empty() {
                "none".into()
            } else {
                self.diagnostics
                    .iter()
                    .map(|(k, n)| format!("{n} {}", k.as_str()))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        )?;
        writeln!(
            f,
            "parsed in {:.2} s ({:.1} MB/s)",
            self.seconds,
            mb / self.seconds.max(1e-9)
        )
    }
}

/// One finding of `ledger verify`, located like a compiler's.
#[derive(Debug, Clone)]
pub struct VerifyLine {
    /// The file.
    pub path: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub col: usize,
    /// `error: broken reference …`, `warning: …`.
    pub message: String,
}

impl fmt::Display for VerifyLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}",
            self.path, self.line, self.col, self.message
        )
    }
}

/// What `ledger verify` found.
#[derive(Debug, Clone)]
pub struct VerifyReport {
    /// Findings, document by document.
    pub lines: Vec<VerifyLine>,
    /// Documents checked.
    pub documents: usize,
    /// References checked.
    pub mentions: usize,
    /// Broken references.
    pub broken: usize,
    /// Ambiguous references.
    pub ambiguous: usize,
    /// Whether the check failed (broken references, ambiguous ones when they count, bad inputs).
    pub failed: bool,
}

/// `ledger verify PATH...`: every broken and ambiguous reference (and diagnostic).
pub fn verify(
    paths: &[PathBuf],
    index: &IndexConfig,
    config: &VerifyConfig,
) -> Result<VerifyReport> {
    let mut index = index.clone();
    index.count_tokens = false;
    let mut corpus = load(paths, &index, &crate::Quiet)?;
    ledger_parse::resolve_corpus(&mut corpus.docs);
    let mut lines = Vec::new();
    let (mut broken, mut ambiguous) = (0, 0);
    let diagnostic = |d: &Diagnostic| VerifyLine {
        path: d.path.clone(),
        line: d.line,
        col: 1,
        message: format!("{}: {}", d.severity.as_str(), d.message),
    };
    for doc in &corpus.docs {
        for m in &doc.mentions {
            let path = doc.files.get(m.file).map_or("", String::as_str).to_string();
            let message = match &m.resolution {
                Resolution::Resolved { .. } => continue,
                Resolution::Broken { reason } => {
                    broken += 1;
                    format!("error: broken reference `{}`: {reason}", m.text)
                }
                Resolution::Pending => {
                    broken += 1;
                    format!("error: broken reference `{}`: not resolved", m.text)
                }
                Resolution::Ambiguous { reason } => {
                    ambiguous += 1;
                    let level = if config.fail_on_ambiguous {
                        "error"
                    } else {
                        "warning"
                    };
                    format!("{level}: ambiguous reference `{}`: {reason}", m.text)
                }
            };
            lines.push(VerifyLine {
                path,
                line: m.line,
                col: m.col,
                message,
            });
        }
        if config.show_diagnostics {
            lines.extend(doc.diagnostics.iter().map(diagnostic));
        }
    }
    lines.extend(corpus.diagnostics.iter().map(diagnostic));
    let input_errors = corpus
        .diagnostics
        .iter()
        .any(|d| d.severity == Severity::Error);
    Ok(VerifyReport {
        documents: corpus.docs.len(),
        mentions: corpus.docs.iter().map(|d| d.mentions.len()).sum(),
        failed: broken > 0 || (config.fail_on_ambiguous && ambiguous > 0) || input_errors,
        lines,
        broken,
        ambiguous,
    })
}

/// The judge, embedder and summarizer a graph was built with (`None`: that layer was off), so
/// that an update after an edit computes what the graph already holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BuiltWith {
    /// The DEPENDS judge.
    pub judge: Option<JudgeKind>,
    /// The embedder of summaries.
    pub embedder: Option<EmbedderKind>,
    /// The summarizer.
    pub summarizer: Option<SummarizerKind>,
}

/// What the graph at `graph` was built with, from its `judgments` and `embeddings` tables.
pub fn built_with(graph: &Path) -> Result<BuiltWith> {
    let judgments = ledger_store::read_judgments(graph).map_err(crate::store(|| {
        format!("reading judgments of {}", graph.display())
    }))?;
    let judge = judgments.first().map(|(_, j)| {
        if j.judge.starts_with("llm:") {
            JudgeKind::Llm
        } else {
            JudgeKind::Offline
        }
    });
    let semantic = ledger_store::read_embeddings(graph).map_err(crate::store(|| {
        format!("reading embeddings of {}", graph.display())
    }))?;
    Ok(BuiltWith {
        judge,
        embedder: (!semantic.model.is_empty())
            .then(|| crate::semantic::embedder_kind_of(&semantic.model)),
        summarizer: (!semantic.summarizer.is_empty())
            .then(|| crate::semantic::summarizer_kind_of(&semantic.summarizer)),
    })
}
