//! Indexing in embedded mode, the commit both modes end with, `--estimate`, and `verify`:
//! discover, parse in parallel, run every document through the document stage (reusing
//! unchanged parts), then the corpus stage, then commit a graph version.

use crate::config::{EmbedderKind, IndexConfig, JudgeKind, RelatedConfig, SummarizerKind};
use crate::stage::{DocReport, Part, Stage, part_key};
use crate::{Error, Progress, Result};
use ledger_core::{Diagnostic, Document, EdgeKind, Resolution, Severity, UnitKind};
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Everything parsed from some inputs.
pub struct Corpus {
    /// Parsed documents, in discovery order.
    pub docs: Vec<Document>,
    /// Problems with the inputs themselves (missing paths, unknown file types).
    pub diagnostics: Vec<Diagnostic>,
    /// Wall-clock time of discovery and parsing (0: not measured apart).
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

/// A rayon pool of `jobs` threads (0: one per core).
pub(crate) fn thread_pool(jobs: usize) -> Result<rayon::ThreadPool> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(jobs)
        .build()
        .map_err(|e| Error::Invalid(format!("starting worker threads: {e}")))
}

/// The documents under `paths` (see `ledger_parse::discover_excluding`; `config.exclude` left
/// out), their reads confined to the folders they were found in unless
/// `config.allow_outside_root`.
fn discover(
    paths: &[PathBuf],
    config: &IndexConfig,
) -> (Vec<ledger_parse::Source>, Vec<Diagnostic>) {
    let (mut sources, diagnostics) = ledger_parse::discover_excluding(paths, &config.exclude);
    if config.allow_outside_root {
        for s in &mut sources {
            s.root = None;
        }
    }
    (sources, diagnostics)
}

/// Discovers and parses (rayon, `config.jobs` threads) the documents under `paths`; references
/// across documents are left pending (see `ledger_parse::resolve_corpus`).
pub fn load(paths: &[PathBuf], config: &IndexConfig, progress: &dyn Progress) -> Result<Corpus> {
    let start = Instant::now();
    let (sources, diagnostics) = discover(paths, config);
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

/// Discovers the documents under `paths`, refusing to go on when an input itself is bad (a
/// missing path must not replace a good graph with an empty one).
pub fn discover_inputs(
    paths: &[PathBuf],
    config: &IndexConfig,
) -> Result<(Vec<ledger_parse::Source>, Vec<Diagnostic>)> {
    let (sources, diagnostics) = discover(paths, config);
    refuse_bad_inputs(&diagnostics)?;
    Ok((sources, diagnostics))
}

/// An error naming every input that is not there or not a document (the discovery's errors).
pub(crate) fn refuse_bad_inputs(diagnostics: &[Diagnostic]) -> Result<()> {
    let bad_inputs: Vec<String> = diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .map(ToString::to_string)
        .collect();
    if bad_inputs.is_empty() {
        Ok(())
    } else {
        Err(Error::BadInput(bad_inputs.join("\n")))
    }
}

/// Parses the inputs, refusing to go on when an input itself is bad (see [`discover_inputs`]);
/// unreadable documents are kept (see [`Corpus::document_errors`]).
pub fn load_inputs(
    paths: &[PathBuf],
    config: &IndexConfig,
    progress: &dyn Progress,
) -> Result<Corpus> {
    discover_inputs(paths, config)?;
    load(paths, config, progress)
}

/// The graph's current version as a new run sees it: the part each document came from and what
/// each was parsed from. Empty when there is no graph yet (or one of another schema version).
#[derive(Debug, Default)]
pub struct Previous {
    /// Its version number (0: none).
    pub version: u64,
    /// Document id → the part it came from.
    pub parts: BTreeMap<String, String>,
    /// What decided its content ([`corpus_key`]).
    pub corpus_key: String,
    /// Document id → what it was parsed from.
    parsed: BTreeMap<String, ledger_store::Parsed>,
}

impl Previous {
    /// Reads what the current version of `graph` recorded.
    pub fn of(graph: &Path) -> Previous {
        let Some(manifest) = ledger_store::current_version(graph)
            .and_then(|dir| ledger_store::Manifest::read(&dir))
            .ok()
        else {
            return Previous::default();
        };
        let parsed = ledger_store::read_parsed(graph)
            .inspect_err(
                |e| tracing::warn!(error = %e, "inputs of the previous version unreadable"),
            )
            .unwrap_or_default();
        Previous {
            version: manifest.version,
            parts: manifest.parts,
            corpus_key: manifest.corpus_key,
            parsed,
        }
    }

    /// Its version, when a run that reused every part as it was (`all_reused`) and came to
    /// `corpus_key` has nothing to write: the current version holds exactly that corpus.
    pub fn current_if(&self, all_reused: bool, corpus_key: &str) -> Option<u64> {
        (all_reused && self.version > 0 && corpus_key == self.corpus_key).then_some(self.version)
    }

    /// The part document `doc_id` came from.
    pub fn part_of(&self, doc_id: &str) -> Option<&str> {
        self.parts.get(doc_id).map(String::as_str)
    }

    /// The key of `source`'s part when parsing it again would give the same document: the same
    /// main path, every recorded observation of its parse holding again (same bytes in every file
    /// read, same answers to every path looked for), and the same stage `fingerprint`.
    pub fn unchanged(&self, source: &ledger_parse::Source, fingerprint: &str) -> Option<String> {
        let parsed = self.parsed.get(&source.id)?;
        let key = self.parts.get(&source.id)?;
        let same = parsed.path == source.path.display().to_string()
            && *key == part_key(&source.id, &parsed.content_hash, fingerprint)
            && ledger_parse::inputs::unchanged(&parsed.inputs);
        same.then(|| key.clone())
    }
}

/// What decides a graph version's content besides its parts' own: hashes the part of every
/// document, the corpus stage's settings (RELATED), the embedding model and summarizer, and the
/// inputs' own diagnostics. A run that reuses every part as it was and comes to the current
/// version's key has nothing to write.
pub fn corpus_key(
    parts: &BTreeMap<String, String>,
    related: &RelatedConfig,
    names: Option<&(String, usize, String)>,
    diagnostics: &[Diagnostic],
) -> String {
    let what = serde_json::json!({
        "parts": parts,
        "related": related,
        "names": names,
        "diagnostics": diagnostics,
    });
    ledger_core::content_hash(what.to_string().as_bytes())
}

/// The document stage for one document, reusing its part when one with the same key is complete,
/// else taking the document's previous part (or an incomplete one) as cache. The part is written
/// durably before this returns.
pub fn process_document(
    stage: &Stage,
    parts: &ledger_store::PartStore,
    doc: Document,
    previous_key: Option<&str>,
    progress: &dyn Progress,
) -> Result<Staged> {
    let key = part_key(&doc.id, &doc.content_hash, stage.fingerprint());
    let mut cache = None;
    if parts.has(&key)
        && let Some(part) = readable_part(parts, &key)
    {
        if part.complete() {
            return Ok(Staged::reused(part, key, true));
        }
        cache = Some(part);
    }
    if cache.is_none()
        && let Some(k) = previous_key.filter(|k| parts.has(k))
    {
        cache = readable_part(parts, k);
    }
    let (part, report) = stage.process(doc, cache.as_ref(), progress)?;
    part.write(parts, &key)?;
    Ok(Staged {
        part,
        key,
        report,
        parsed: true,
        reused: false,
    })
}

/// Part `key`, or `None` with a warning when it does not read: cached work that cannot be read
/// is done again, never a reason to stop.
fn readable_part(parts: &ledger_store::PartStore, key: &str) -> Option<Part> {
    Part::read(parts, key)
        .inspect_err(
            |e| tracing::warn!(error = %e, key, "part unreadable; the document is processed again"),
        )
        .ok()
}

/// One document after the document stage.
pub struct Staged {
    /// Its part.
    pub part: Part,
    /// The part's key.
    pub key: String,
    /// What the stage did.
    pub report: DocReport,
    /// Whether it was parsed (false: its recorded inputs held, its part was reused unread).
    pub parsed: bool,
    /// Whether its complete part was reused as it was (nothing judged or embedded again).
    pub reused: bool,
}

/// What the embedded mode keeps of a staged document (its part is in the part store).
struct Outcome {
    doc_id: String,
    key: String,
    report: DocReport,
    parsed: bool,
    reused: bool,
    errors: Vec<String>,
}

impl Staged {
    /// What the embedded mode keeps of it.
    fn outcome(self) -> Outcome {
        Outcome {
            errors: document_errors(std::slice::from_ref(&self.part.doc)),
            doc_id: self.part.doc.id,
            key: self.key,
            report: self.report,
            parsed: self.parsed,
            reused: self.reused,
        }
    }

    /// A complete part reused as it is: nothing of it is judged again in this run (its
    /// judgments keep their rows as they are; the `runs` row counts them as reused).
    fn reused(part: Part, key: String, parsed: bool) -> Staged {
        let report = DocReport::reused(&part);
        Staged {
            part,
            key,
            report,
            parsed,
            reused: true,
        }
    }
}

/// The document stage for `source`: its part reused without parsing when [`Previous::unchanged`]
/// says a parse would give the same document and that part is complete; else parsed and run
/// through [`process_document`].
pub fn stage_document(
    stage: &Stage,
    parts: &ledger_store::PartStore,
    source: &ledger_parse::Source,
    previous: &Previous,
    progress: &dyn Progress,
) -> Result<Staged> {
    if let Some(key) = previous.unchanged(source, stage.fingerprint())
        && parts.has(&key)
        && let Some(part) = readable_part(parts, &key)
        && part.complete()
    {
        return Ok(Staged::reused(part, key, false));
    }
    let doc = stage.parse(source);
    process_document(stage, parts, doc, previous.part_of(&source.id), progress)
}

/// What `ledger index` is asked to do.
pub struct IndexJob<'a> {
    /// Files and folders to index.
    pub paths: &'a [PathBuf],
    /// The graph folder.
    pub out: &'a Path,
    /// Where document parts are kept.
    pub parts: &'a ledger_store::PartStore,
    /// The command line recorded in the `runs` table.
    pub command: &'a str,
}

/// A graph version written, or found current already.
#[derive(Debug, Clone)]
pub struct CommitReport {
    /// What the graph holds (`None` when unchanged: the documents were not read).
    pub summary: Option<CorpusSummary>,
    /// `GRAPH/current`.
    pub current: PathBuf,
    /// The version committed (or found current).
    pub version: u64,
    /// False when the current version already held exactly this corpus: nothing was written.
    pub written: bool,
    /// Seconds of the corpus stage that wrote it.
    pub write_seconds: f64,
    /// Segments of the tables in the version, and how many of them the previous version's
    /// files are (shared, not written).
    pub segments: (usize, usize),
}

impl CommitReport {
    /// What failed in the graph committed, if anything did: its DEPENDS judgments that failed.
    pub fn partial(&self) -> Option<String> {
        partial(self.failed_judgments(), 0)
    }

    /// The DEPENDS judgments that failed in the graph committed (0 when it was unchanged).
    fn failed_judgments(&self) -> usize {
        self.summary.as_ref().map_or(0, |s| s.failed_judgments)
    }

    /// Version `version` of `graph` found current: nothing read, nothing written.
    pub fn unchanged(graph: &Path, version: u64) -> CommitReport {
        CommitReport {
            summary: None,
            current: graph.join("current"),
            version,
            written: false,
            write_seconds: 0.0,
            segments: (0, 0),
        }
    }
}

impl fmt::Display for CommitReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(summary) = &self.summary {
            write!(f, "{summary}")?;
        }
        if self.written {
            let (segments, shared) = self.segments;
            let shared = if shared > 0 {
                format!(
                    "; {} of {segments} table segments written, {shared} shared with the previous version",
                    segments - shared
                )
            } else {
                String::new()
            };
            writeln!(
                f,
                "graph: {} (version {}{shared}), corpus stage (references across documents, tables) in {:.2} s",
                self.current.display(),
                self.version,
                self.write_seconds
            )
        } else {
            writeln!(
                f,
                "graph: {} (version {}) unchanged: it already holds these documents with these settings; nothing written",
                self.current.display(),
                self.version,
            )
        }
    }
}

/// What `ledger index` did.
#[derive(Debug)]
pub struct IndexReport {
    /// The graph version written (or found current).
    pub commit: CommitReport,
    /// Documents in the graph.
    pub documents: usize,
    /// The documents' own errors (they were stored all the same).
    pub document_errors: Vec<String>,
    /// The document stages, summed over documents.
    pub stage: DocReport,
    /// Documents parsed in this run (the others' recorded inputs held: reused unparsed).
    pub parsed: usize,
    /// The DEPENDS judge's name and window, when DEPENDS edges are on.
    pub judge: Option<(String, usize)>,
    /// RELATED settings, when summaries and embeddings are on.
    pub related: Option<RelatedConfig>,
    /// RELATED edges found (`None` when the graph was unchanged and they were not recomputed).
    pub related_edges: Option<usize>,
    /// Embeddings in the graph, their model and summarizer.
    pub embeddings: (usize, String, String),
    /// Seconds of discovery and the document stages.
    pub stage_seconds: f64,
    /// Seconds of the corpus stage.
    pub corpus_seconds: f64,
    /// Document id → the key of its part (see [`crate::corpus::read_documents`]).
    pub parts: BTreeMap<String, String>,
}

impl IndexReport {
    /// What failed in this run although the graph was committed, if anything did: DEPENDS
    /// judgments (their edges are missing) and LLM summaries (the extractive ones stand in).
    pub fn partial(&self) -> Option<String> {
        partial(
            self.stage
                .depends
                .failed
                .max(self.commit.failed_judgments()),
            self.stage.semantic.summary_failures,
        )
    }
}

/// What is missing from a committed graph whose `judgments` DEPENDS judgments and `summaries`
/// LLM summaries failed, if anything is.
fn partial(judgments: usize, summaries: usize) -> Option<String> {
    let mut what = Vec::new();
    if judgments > 0 {
        what.push(format!(
            "{judgments} DEPENDS judgments failed; their edges are missing (runs.failed_judgments)"
        ));
    }
    if summaries > 0 {
        what.push(format!(
            "{summaries} summaries failed; extractive ones stand in"
        ));
    }
    (!what.is_empty()).then(|| format!("{} (retried next run)", what.join("; ")))
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
        if let (Some(related), Some(edges)) = (&self.related, self.related_edges) {
            let (embeddings, model, summarizer) = &self.embeddings;
            writeln!(
                f,
                "related: {edges} RELATED edges at cosine > {} ({} scope, at most {} per unit) from {embeddings} embeddings ({model}, summaries {summarizer})",
                related.theta,
                related.scope,
                related.k.max(1),
            )?;
        }
        if self.related.is_some() {
            let stats = &self.stage.semantic;
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
        writeln!(
            f,
            "document stage: {} of {} documents parsed ({} unchanged since the last run, not parsed again), {:.2} s",
            self.parsed,
            self.documents,
            self.documents - self.parsed,
            self.stage_seconds
        )
    }
}

/// `ledger index PATH... --out GRAPH`: the embedded mode. Every document goes through the same
/// document stage as a worker's job (rayon over documents: parsed, judged, embedded and written
/// as a part, one at a time per thread), then the corpus stage commits.
pub fn index(job: &IndexJob, stage: &Stage, progress: &dyn Progress) -> Result<IndexReport> {
    let started_at = ledger_store::now_rfc3339();
    let start = Instant::now();
    let (sources, diagnostics) = discover_inputs(job.paths, &stage.settings().index)?;
    // One writer at a time: another would prune this run's temporary files, or it this one's.
    let _lock = ledger_store::GraphLock::acquire(job.out, stage.settings().index.wait_for_lock)
        .map_err(crate::store(|| "locking the graph"))?;
    let previous = Previous::of(job.out);
    let pool = thread_pool(stage.settings().index.jobs)?;
    progress.start("documents", sources.len() as u64);
    // Each document parsed, judged, embedded and written as a part on its thread; only what
    // `Staged::outcome` keeps of it stays in memory.
    let results: Vec<Result<Outcome>> = pool.install(|| {
        sources
            .par_iter()
            .map(|source| {
                let staged = stage_document(stage, job.parts, source, &previous, progress)
                    .map(Staged::outcome)
                    .map_err(|e| {
                        Error::Invalid(format!(
                            "document {}: {}",
                            source.id,
                            crate::error_chain(&e)
                        ))
                    });
                progress.advance(&source.id);
                staged
            })
            .collect()
    });
    progress.finish();
    let mut keys = BTreeMap::new();
    let mut report = DocReport::default();
    let (mut parsed, mut all_reused) = (0, true);
    let mut errors = Vec::new();
    let mut reused = std::collections::HashSet::new();
    for r in results {
        let o = r?;
        report.add(&o.report);
        parsed += usize::from(o.parsed);
        all_reused &= o.reused;
        if o.reused {
            reused.insert(o.doc_id.clone());
        }
        errors.extend(o.errors);
        keys.insert(o.doc_id, o.key);
    }
    let stage_seconds = start.elapsed().as_secs_f64();
    let corpus_start = Instant::now();
    let names = stage.semantic_names();
    let related = &stage.settings().related;
    let key = corpus_key(&keys, related, names.as_ref(), &diagnostics);
    let (commit, related_edges, embeddings) = if let Some(commit) = previous
        .current_if(all_reused, &key)
        .map(|version| CommitReport::unchanged(job.out, version))
    {
        (commit, None, report.semantic.vectors_reused)
    } else {
        let usage = stage
            .chat()
            .map(|c| c.usage().snapshot())
            .unwrap_or_default();
        let input = crate::corpus::CorpusInput {
            related,
            keys: &keys,
            names: names.as_ref(),
            diagnostics: &diagnostics,
            corpus_key: &key,
            reused: &reused,
        };
        let out = crate::corpus::write(job, &input, usage, started_at, start)?;
        let edges = (related.enabled && names.is_some()).then_some(out.related_edges);
        (out.commit, edges, out.embeddings)
    };
    let corpus_seconds = corpus_start.elapsed().as_secs_f64();
    let settings = stage.settings();
    let (model, summarizer) = names.map(|n| (n.0, n.2)).unwrap_or_default();
    Ok(IndexReport {
        commit,
        documents: keys.len(),
        document_errors: errors,
        stage: report,
        parsed,
        judge: stage
            .judge()
            .map(|j| (j.name().to_string(), settings.depends.window)),
        related: settings.related.enabled.then(|| settings.related.clone()),
        related_edges,
        embeddings: (embeddings, model, summarizer),
        stage_seconds,
        corpus_seconds,
        parts: keys,
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
    let corpus = load_inputs(job.paths, &stage.settings().index, progress)?;
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
    let previous = Previous::of(job.out);
    let mut cache = ledger_llm::depends::Cache::new();
    for doc in &corpus.docs {
        let key = part_key(&doc.id, &doc.content_hash, stage.fingerprint());
        for k in [Some(key.as_str()), previous.part_of(&doc.id)]
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
    /// DEPENDS edges a judge found.
    pub judged: usize,
    /// RELATED edges, when the graph written holds them (`None`: not counted here).
    pub related: Option<usize>,
    /// Mentions resolved, broken, ambiguous, and external (naming units of other works).
    pub mentions: (usize, usize, usize, usize),
    /// DEPENDS judgments that failed (no answer, or none that held): their edges are missing.
    pub failed_judgments: usize,
    /// Diagnostics per severity (documents' and inputs').
    pub diagnostics: BTreeMap<Severity, usize>,
    /// Seconds of discovery and parsing; 0 when not measured apart (`ledger index` parses
    /// inside the document stage and reports that stage's time).
    pub seconds: f64,
}

impl CorpusSummary {
    /// The summary of `corpus`.
    pub fn of(corpus: &Corpus) -> CorpusSummary {
        let mut s = CorpusSummary {
            seconds: corpus.seconds,
            ..CorpusSummary::default()
        };
        for doc in &corpus.docs {
            s.add(doc);
        }
        s.add_diagnostics(&corpus.diagnostics);
        s
    }

    /// Counts `doc` in.
    pub fn add(&mut self, doc: &Document) {
        self.documents += 1;
        self.bytes += doc.bytes;
        self.contains += doc.units.len().saturating_sub(1);
        self.references += doc.reference_edges().len();
        self.proofs += doc.proof_edges().len();
        self.judged += doc.depends.len();
        for u in &doc.units {
            *self.units.entry(u.kind).or_default() += 1;
        }
        self.failed_judgments += doc
            .judgments
            .iter()
            .filter(|j| matches!(j.outcome, ledger_core::JudgmentOutcome::Failed(_)))
            .count();
        for m in &doc.mentions {
            match m.resolution {
                Resolution::Resolved { .. } => self.mentions.0 += 1,
                Resolution::Ambiguous { .. } => self.mentions.2 += 1,
                Resolution::External { .. } => self.mentions.3 += 1,
                Resolution::Broken { .. } | Resolution::Pending => self.mentions.1 += 1,
            }
        }
        self.add_diagnostics(&doc.diagnostics);
    }

    /// Counts diagnostics in (a document's, or the inputs' own).
    pub fn add_diagnostics(&mut self, diagnostics: &[Diagnostic]) {
        for d in diagnostics {
            *self.diagnostics.entry(d.severity).or_default() += 1;
        }
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
        let related = self
            .related
            .map(|n| format!(", {} {n}", EdgeKind::Related.as_str()))
            .unwrap_or_default();
        writeln!(
            f,
            "edges: {} {}, {} {}, {} {} ({} from proofs to their statements, {} judged){related}",
            EdgeKind::Contains.as_str(),
            self.contains,
            EdgeKind::References.as_str(),
            self.references,
            EdgeKind::Depends.as_str(),
            self.proofs + self.judged,
            self.proofs,
            self.judged,
        )?;
        let (resolved, broken, ambiguous, external) = self.mentions;
        let external_part = if external > 0 {
            format!(", {external} naming other works")
        } else {
            String::new()
        };
        writeln!(
            f,
            "mentions: {} ({resolved} resolved, {broken} broken, {ambiguous} ambiguous{external_part})",
            resolved + broken + ambiguous + external
        )?;
        writeln!(
            f,
            "diagnostics: {}",
            if self.diagnostics.is_empty() {
                "none".into()
            } else {
                self.diagnostics
                    .iter()
                    .map(|(k, n)| match k {
                        // "info" is a mass noun: "3 info".
                        Severity::Info => format!("{n} info"),
                        _ => counted(*n, k.as_str()),
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        )?;
        if self.seconds > 0.0 {
            writeln!(
                f,
                "parsed in {:.2} s ({:.1} MB/s)",
                self.seconds,
                mb / self.seconds
            )?;
        }
        Ok(())
    }
}

/// `n` and `noun`, singular or plural as `n` asks ("1 warning", "712 warnings").
pub fn counted(n: usize, noun: &str) -> String {
    pluralizer::pluralize(noun, isize::try_from(n).unwrap_or(isize::MAX), true)
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
