//! Indexing in embedded mode, the commit both modes end with, `--estimate`, and `verify`:
//! discover, parse in parallel, run every document through the document stage (reusing
//! unchanged parts), then the corpus stage, then commit a graph version.

use crate::config::{EmbedderKind, IndexConfig, JudgeKind, RelatedConfig, SummarizerKind};
use crate::report::{CommitReport, Corpus, CorpusSummary, EstimateReport, IndexJob, IndexReport};
use crate::stage::{DocReport, Part, Stage, part_key};
use crate::{Error, Progress, Result};
use ledger_core::{Diagnostic, Document, PartSummary, Severity};
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

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
    let discovered = discover(paths, config);
    parse_all(discovered, config, progress, start)
}

/// The documents discovered, parsed whole: the corpus `load` and `load_inputs` return.
fn parse_all(
    (sources, diagnostics): (Vec<ledger_parse::Source>, Vec<Diagnostic>),
    config: &IndexConfig,
    progress: &dyn Progress,
    start: Instant,
) -> Result<Corpus> {
    let docs = parse_map(&sources, config, progress, |doc| doc)?;
    Ok(Corpus {
        docs,
        diagnostics,
        seconds: start.elapsed().as_secs_f64(),
    })
}

/// Parses each of `sources` (in parallel, on `config.jobs` threads) and keeps what `f` makes of
/// its document, in discovery order: each document is dropped as soon as `f` is done with it, so
/// that a corpus of any size holds at most one whole document per thread.
pub(crate) fn parse_map<T: Send>(
    sources: &[ledger_parse::Source],
    config: &IndexConfig,
    progress: &dyn Progress,
    f: impl Fn(Document) -> T + Sync,
) -> Result<Vec<T>> {
    let pool = thread_pool(config.jobs)?;
    let tokenizer = config.count_tokens.then(ledger_parse::Tokenizer::cl100k);
    progress.start("parsing", sources.len() as u64);
    let kept = pool.install(|| {
        sources
            .par_iter()
            .map(|s| {
                let kept = f(ledger_parse::parse(s, tokenizer.as_ref()));
                progress.advance(&s.id);
                kept
            })
            .collect()
    });
    progress.finish();
    Ok(kept)
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
fn refuse_bad_inputs(diagnostics: &[Diagnostic]) -> Result<()> {
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
    let start = Instant::now();
    let discovered = discover_inputs(paths, config)?;
    parse_all(discovered, config, progress, start)
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
    if parts.has(&key) {
        if let Some(summary) = complete_part(parts, &key) {
            return Ok(Staged::reused(summary, key, true));
        }
        cache = readable_part(parts, &key);
    }
    if cache.is_none()
        && let Some(k) = previous_key.filter(|k| parts.has(k))
    {
        cache = readable_part(parts, k);
    }
    let (part, report) = stage.process(doc, cache.as_ref(), progress)?;
    part.write(parts, &key)?;
    Ok(Staged {
        errors: part.doc.errors().collect(),
        doc_id: part.doc.id,
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

/// The summary of part `key` when the part is complete and can be reused whole: read from its
/// footer alone, or, for a part written before parts had a summary, from the whole part.
pub(crate) fn complete_part(parts: &ledger_store::PartStore, key: &str) -> Option<PartSummary> {
    let summary = match parts.read_summary(key) {
        Ok(Some(summary)) => summary,
        Ok(None) => readable_part(parts, key)?.summary(),
        Err(e) => {
            tracing::warn!(error = %e, key, "part unreadable; the document is processed again");
            return None;
        }
    };
    summary.complete.then_some(summary)
}

/// One document after the document stage (its part is in the part store).
pub struct Staged {
    /// The document's id.
    pub doc_id: String,
    /// The part's key.
    pub key: String,
    /// What the stage did.
    pub report: DocReport,
    /// The document's own errors.
    pub errors: Vec<String>,
    /// Whether it was parsed (false: its recorded inputs held, its part was reused unread).
    pub parsed: bool,
    /// Whether its complete part was reused as it was (nothing judged or embedded again).
    pub reused: bool,
}

impl Staged {
    /// A complete part reused as it is: nothing of it is judged again in this run (its
    /// judgments keep their rows as they are; the `runs` row counts them as reused).
    fn reused(summary: PartSummary, key: String, parsed: bool) -> Staged {
        Staged {
            report: DocReport::reused(&summary),
            doc_id: summary.doc_id,
            errors: summary.errors,
            key,
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
        && let Some(summary) = complete_part(parts, &key)
    {
        return Ok(Staged::reused(summary, key, false));
    }
    let doc = stage.parse(source);
    process_document(stage, parts, doc, previous.part_of(&source.id), progress)
}

/// `ledger index PATH... --out GRAPH`: the embedded mode. Every document goes through the same
/// document stage as a worker's job (rayon over documents: parsed, judged, embedded and written
/// as a part, one at a time per thread), then the corpus stage commits.
pub fn index(job: &IndexJob, stage: &Stage, progress: &dyn Progress) -> Result<IndexReport> {
    let started_at = ledger_store::now_rfc3339();
    let start = Instant::now();
    let cpu_start = cpu_time::ProcessTime::try_now().ok();
    let (sources, diagnostics) = discover_inputs(job.paths, &stage.settings().index)?;
    // One writer at a time: another would prune this run's temporary files, or it this one's.
    let _lock = ledger_store::GraphLock::acquire(job.out, stage.settings().index.wait_for_lock)
        .map_err(crate::store(|| "locking the graph"))?;
    let previous = Previous::of(job.out);
    let pool = thread_pool(stage.settings().index.jobs)?;
    progress.start("documents", sources.len() as u64);
    // Each document parsed, judged, embedded and written as a part on its thread; only its
    // `Staged` (id, part key, counts, errors) stays in memory.
    let results: Vec<Result<Staged>> = pool.install(|| {
        sources
            .par_iter()
            .map(|source| {
                let staged =
                    stage_document(stage, job.parts, source, &previous, progress).map_err(|e| {
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
    let chat = stage
        .chat()
        .map(|c| c.usage().snapshot())
        .unwrap_or_default();
    let staged = StageOutcome {
        keys,
        reused,
        nothing_new: all_reused,
        report,
        parsed,
        document_errors: errors,
        usage: chat,
        started_at,
        start,
        cpu_start,
    };
    commit(job, stage, &previous, &diagnostics, staged)
}

/// What the document stage of a run left for its commit, in either mode.
pub(crate) struct StageOutcome {
    /// Document id → the key of its part.
    pub keys: BTreeMap<String, String>,
    /// Documents whose part was reused whole.
    pub reused: std::collections::HashSet<String>,
    /// Whether no part was written in this run (the current version may still hold).
    pub nothing_new: bool,
    /// The document stage, summed over documents.
    pub report: DocReport,
    /// Documents parsed in this run.
    pub parsed: usize,
    /// The documents' own errors.
    pub document_errors: Vec<String>,
    /// The chat usage of the run (recorded in `runs`).
    pub usage: ledger_llm::UsageSnapshot,
    /// When the run started (RFC 3339), for `runs`.
    pub started_at: String,
    /// When the run started.
    pub start: Instant,
    /// This process's CPU time when the run started, when the document stage runs in it
    /// (embedded; the coordinator's workers are other processes).
    pub cpu_start: Option<cpu_time::ProcessTime>,
}

/// The corpus stage and commit both modes end with: the current version when it already holds
/// what `staged` comes to, else a new one written; reported as `ledger index` prints it.
pub(crate) fn commit(
    job: &IndexJob,
    stage: &Stage,
    previous: &Previous,
    diagnostics: &[Diagnostic],
    staged: StageOutcome,
) -> Result<IndexReport> {
    let stage_seconds = staged.start.elapsed().as_secs_f64();
    let stage_cpu_seconds = staged.cpu_start.and_then(cpu_seconds_since);
    let corpus_start = Instant::now();
    let corpus_cpu_start = cpu_time::ProcessTime::try_now().ok();
    let names = stage.semantic_names();
    let settings = stage.settings();
    let related = &settings.related;
    let key = corpus_key(&staged.keys, related, names.as_ref(), diagnostics);
    let (commit, related_edges, embeddings) = if let Some(version) =
        previous.current_if(staged.nothing_new, &key)
    {
        let embeddings = staged.report.semantic.vectors_reused;
        (CommitReport::unchanged(job.out, version), None, embeddings)
    } else {
        let input = crate::corpus::CorpusInput {
            related,
            keys: &staged.keys,
            names: names.as_ref(),
            diagnostics,
            corpus_key: &key,
            reused: &staged.reused,
        };
        let out = crate::corpus::write(job, &input, staged.usage, staged.started_at, staged.start)?;
        let edges = (related.enabled && names.is_some()).then_some(out.related_edges);
        (out.commit, edges, out.embeddings)
    };
    let (model, summarizer) = names.map(|n| (n.0, n.2)).unwrap_or_default();
    Ok(IndexReport {
        commit,
        documents: staged.keys.len(),
        document_errors: staged.document_errors,
        stage: staged.report,
        parsed: staged.parsed,
        judge: stage
            .judge()
            .map(|j| (j.name().to_string(), settings.depends.window)),
        related: related.enabled.then(|| related.clone()),
        related_edges,
        embeddings: (embeddings, model, summarizer),
        stage_seconds,
        stage_cpu_seconds,
        corpus_seconds: corpus_start.elapsed().as_secs_f64(),
        corpus_cpu_seconds: corpus_cpu_start.and_then(cpu_seconds_since),
        parts: staged.keys,
    })
}

/// CPU seconds this process has spent, on every thread, since `start`.
fn cpu_seconds_since(start: cpu_time::ProcessTime) -> Option<f64> {
    start.try_elapsed().ok().map(|d| d.as_secs_f64())
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

/// The judge, embedder and summarizer a graph was built with (`None`: that layer was off), so
/// that an update after an edit computes what the graph already holds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BuiltWith {
    /// The DEPENDS judge.
    pub judge: Option<JudgeKind>,
    /// The learned judge's threshold (0: the model's own).
    pub threshold: Option<f64>,
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
    let names = judgments.first().map(|(_, j)| j.judge.as_str());
    let (judge, threshold) = match names {
        None => (None, None),
        Some(name) if name.starts_with("llm:") => (Some(JudgeKind::Llm), None),
        Some(name) => match ledger_llm::depends::LearnedJudge::threshold_in(name) {
            Some(t) => (Some(JudgeKind::Learned), Some(t)),
            // The rules judge (named "offline" before it was named "rules").
            None => (Some(JudgeKind::Rules), None),
        },
    };
    let semantic = ledger_store::read_embeddings(graph).map_err(crate::store(|| {
        format!("reading embeddings of {}", graph.display())
    }))?;
    Ok(BuiltWith {
        judge,
        threshold,
        embedder: (!semantic.model.is_empty())
            .then(|| crate::semantic::embedder_kind_of(&semantic.model)),
        summarizer: (!semantic.summarizer.is_empty())
            .then(|| crate::semantic::summarizer_kind_of(&semantic.summarizer)),
    })
}
