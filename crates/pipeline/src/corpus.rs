//! The corpus stage, streaming: from the parts of every document to a committed graph version.
//! It holds one batch of documents at a time, plus what crosses documents: their labels, anchors
//! and files (references across documents), and for RELATED edges across the corpus the vectors
//! with the units' ids (the vector index). Parts are read twice: once for what crosses documents,
//! once to resolve, link and write each document.

use crate::config::{RelatedConfig, RelatedScope};
use crate::index::{CommitReport, CorpusSummary, IndexJob};
use crate::stage::Part;
use crate::{Result, store};
use ledger_core::{Diagnostic, Document, Edge, Semantic, UnitEmbedding};
use ledger_store::{EmbeddingModel, GraphWriter, PartStore, RunInfo};
use rayon::prelude::*;
use std::collections::{BTreeMap, HashSet};
use std::time::Instant;

/// Parts read at once (in parallel), then handled in document-id order.
const BATCH: usize = 8;

/// What the corpus stage is given besides the job.
pub struct CorpusInput<'a> {
    /// RELATED settings (the document stage's: [`crate::Settings::related`]).
    pub related: &'a RelatedConfig,
    /// Document id → the key of its part, for every document of the corpus.
    pub keys: &'a BTreeMap<String, String>,
    /// The embedding model, its dimension and the summarizer, when embeddings are on.
    pub names: Option<&'a (String, usize, String)>,
    /// Problems with the inputs themselves (they lead the `diagnostics` table).
    pub diagnostics: &'a [Diagnostic],
    /// What decided the content ([`crate::index::corpus_key`]), kept in the manifest.
    pub corpus_key: &'a str,
    /// Documents whose part this run reused whole: their judgments are recorded as reused.
    pub reused: &'a HashSet<String>,
}

/// What the corpus stage wrote.
pub struct CorpusOutput {
    /// The version committed.
    pub commit: CommitReport,
    /// RELATED edges found.
    pub related_edges: usize,
    /// Embeddings written.
    pub embeddings: usize,
}

/// Calls `f` on what `read` reads of every key, in document-id order; [`BATCH`] keys are read at
/// a time, in parallel.
fn each<T: Send>(
    keys: &BTreeMap<String, String>,
    read: impl Fn(&str) -> Result<T> + Sync,
    mut f: impl FnMut(T) -> Result<()>,
) -> Result<()> {
    let keys: Vec<&String> = keys.values().collect();
    for batch in keys.chunks(BATCH) {
        let read: Vec<Result<T>> = batch.par_iter().map(|k| read(k)).collect();
        for item in read {
            f(item?)?;
        }
    }
    Ok(())
}

/// Calls `f` on the part of every key, in document-id order ([`each`]).
fn each_part(
    parts: &PartStore,
    keys: &BTreeMap<String, String>,
    f: impl FnMut(Part) -> Result<()>,
) -> Result<()> {
    each(keys, |k| Part::read(parts, k), f)
}

/// A part's semantic layer under the run's model names (what RELATED edges carry as evidence).
fn named(semantic: Semantic, names: &(String, usize, String)) -> Semantic {
    Semantic {
        model: names.0.clone(),
        dim: names.1,
        summarizer: names.2.clone(),
        ..semantic
    }
}

/// What RELATED across documents needs of a document: its units' ids and order and the edges
/// that link its units (no text).
fn skeleton(mut doc: Document) -> Document {
    for u in &mut doc.units {
        u.text = String::new();
    }
    doc.diagnostics = Vec::new();
    doc.judgments = Vec::new();
    doc.inputs = Vec::new();
    doc
}

/// RELATED edges across the corpus (`related.scope = corpus`), by the document they start from:
/// every document's units and vectors (without text or summaries), searched together.
fn related_across(
    job: &IndexJob,
    input: &CorpusInput,
    names: &(String, usize, String),
    index: &ledger_parse::CorpusIndex,
) -> Result<BTreeMap<String, Vec<Edge>>> {
    let keys = input.keys;
    let mut docs = Vec::with_capacity(keys.len());
    let mut vectors = Semantic::default();
    each_part(job.parts, keys, |part| {
        let mut doc = skeleton(part.doc);
        index.resolve(&mut doc);
        docs.push(doc);
        vectors
            .embeddings
            .extend(part.semantic.embeddings.into_iter().map(|e| UnitEmbedding {
                summary: String::new(),
                ..e
            }));
        Ok(())
    })?;
    let vectors = named(vectors, names);
    let mut by_source: BTreeMap<String, Vec<Edge>> = BTreeMap::new();
    for e in crate::semantic::related(&docs, &vectors, input.related)? {
        by_source.entry(e.src_doc.clone()).or_default().push(e);
    }
    Ok(by_source)
}

/// The corpus stage: references across documents resolved, RELATED edges across documents found
/// (corpus scope; in document scope they come with the parts), every table
/// written one document at a time ([`GraphWriter`]), the version committed with its `runs` row
/// (`usage`: what this run sent to chat endpoints; `start`: when it began), and the parts no
/// longer needed pruned.
pub fn write(
    job: &IndexJob,
    input: &CorpusInput,
    usage: ledger_llm::UsageSnapshot,
    started_at: String,
    start: Instant,
) -> Result<CorpusOutput> {
    let corpus_start = Instant::now();
    let related = input.related;
    let names = input.names.filter(|_| related.enabled);
    // First pass: what references across documents need.
    let mut index = ledger_parse::CorpusIndex::default();
    each(
        input.keys,
        |k| Part::read_document(job.parts, k),
        |doc| {
            index.add(&doc);
            Ok(())
        },
    )?;
    let mut across = match names {
        Some(names) if related.scope == RelatedScope::Corpus => {
            related_across(job, input, names, &index)?
        }
        _ => BTreeMap::new(),
    };
    // Second pass: each document resolved, linked and written.
    let model = input
        .names
        .map_or_else(EmbeddingModel::default, |n| EmbeddingModel {
            model: n.0.clone(),
            summarizer: n.2.clone(),
            dim: n.1,
        });
    let mut writer = GraphWriter::create(job.out, model, input.diagnostics)
        .map_err(store(|| format!("writing graph {}", job.out.display())))?;
    let mut summary = CorpusSummary::default();
    summary.add_diagnostics(input.diagnostics);
    let (mut related_edges, mut embeddings) = (0, 0);
    each_part(job.parts, input.keys, |mut part| {
        if input.reused.contains(&part.doc.id) {
            for j in &mut part.doc.judgments {
                j.reused = true;
            }
        }
        index.resolve(&mut part.doc);
        // In document scope the document stage found them; they are in the part.
        let edges = match names {
            Some(_) if related.scope == RelatedScope::Corpus => {
                across.remove(&part.doc.id).unwrap_or_default()
            }
            Some(_) => std::mem::take(&mut part.semantic.related),
            None => Vec::new(),
        };
        related_edges += edges.len();
        embeddings += part.semantic.embeddings.len();
        let rows: Vec<&UnitEmbedding> = part.semantic.embeddings.iter().collect();
        writer
            .add(&part.doc, &rows, &edges)
            .map_err(store(|| format!("writing graph {}", job.out.display())))?;
        summary.add(&part.doc);
        Ok(())
    })?;
    let run = RunInfo {
        started_at,
        command: job.command.to_string(),
        inputs: job
            .paths
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(" "),
        seconds: start.elapsed().as_secs_f64(),
        llm_requests: usage.requests,
        llm_prompt_tokens: usage.prompt_tokens,
        llm_completion_tokens: usage.completion_tokens,
        parts: input.keys.clone(),
        corpus_key: input.corpus_key.to_string(),
    };
    let manifest = writer
        .finish(&run)
        .map_err(store(|| format!("writing graph {}", job.out.display())))?;
    let keep: HashSet<String> = input.keys.values().cloned().collect();
    job.parts.prune(&keep);
    Ok(CorpusOutput {
        commit: CommitReport {
            summary: Some(summary),
            current: job.out.join("current"),
            version: manifest.version,
            written: true,
            write_seconds: corpus_start.elapsed().as_secs_f64(),
        },
        related_edges,
        embeddings,
    })
}

/// The documents of `keys` as a graph holds them (read from their parts, references across
/// them resolved), all in memory: for callers that want them whole (the evaluation, tests).
pub fn read_documents(parts: &PartStore, keys: &BTreeMap<String, String>) -> Result<Vec<Document>> {
    let mut docs = Vec::with_capacity(keys.len());
    each(
        keys,
        |k| Part::read_document(parts, k),
        |doc| {
            docs.push(doc);
            Ok(())
        },
    )?;
    ledger_parse::resolve_corpus(&mut docs);
    Ok(docs)
}
