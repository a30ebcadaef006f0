//! What indexing reports: the corpus parsed, the job, the graph version committed, the
//! summary `ledger index` and `ledger coordinator` print. Below the index and the corpus stage,
//! which both fill them in.

use crate::config::RelatedConfig;
use crate::stage::DocReport;
use ledger_core::{Diagnostic, Document, EdgeKind, Resolution, Severity, UnitKind};
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

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
    docs.iter().flat_map(Document::errors).collect()
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
    /// CPU seconds of discovery and the document stages, over every thread (`None` when the
    /// document stage ran in other processes: a coordinator's workers).
    pub stage_cpu_seconds: Option<f64>,
    /// Seconds of the corpus stage.
    pub corpus_seconds: f64,
    /// CPU seconds of the corpus stage, over every thread.
    pub corpus_cpu_seconds: Option<f64>,
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
        )?;
        let busy = |cpu: f64, wall: f64| {
            format!(
                "{cpu:.2} s over {wall:.2} s ({:.2} cores busy)",
                cpu / wall.max(1e-9)
            )
        };
        let corpus = self
            .corpus_cpu_seconds
            .map(|cpu| format!("corpus stage {}", busy(cpu, self.corpus_seconds)));
        match (self.stage_cpu_seconds, corpus) {
            (Some(cpu), Some(corpus)) => writeln!(
                f,
                "cpu: document stage {}, {corpus}",
                busy(cpu, self.stage_seconds)
            ),
            (None, Some(corpus)) => {
                writeln!(f, "cpu: {corpus} (the document stage ran in the workers)")
            }
            _ => Ok(()),
        }
    }
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
