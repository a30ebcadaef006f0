//! The corpus stage, streaming: from the parts of every document to a committed graph version.
//! It holds a few documents at a time, plus what crosses documents: their labels, anchors and
//! files (references across documents), and for RELATED edges across the corpus the vectors
//! with the units' ids (the vector index). A first pass reads every part's document for what
//! crosses documents; the second goes segment by segment (the tables' files): it reads the
//! documents of a segment, resolves them, and keys the segment by their parts and what
//! resolving added; a segment the previous version holds under that key is shared, the others
//! are written with their parts' vectors. A run where one document changed writes one segment.

use crate::config::{RelatedConfig, RelatedScope};
use crate::report::{CommitReport, CorpusSummary, IndexJob};
use crate::stage::Part;
use crate::{Result, store};
use ledger_core::{Diagnostic, Document, Edge, Semantic, UnitEmbedding};
use ledger_store::{EmbeddingModel, GraphWriter, PartHead, PartStore, RunInfo};
use rayon::prelude::*;
use std::collections::{BTreeMap, HashSet};
use std::time::Instant;

/// Parts read at once (in parallel), then handled in document-id order.
const BATCH: usize = 8;

/// Source bytes of a segment's documents kept in memory from computing its key to writing it;
/// the documents of a larger segment are read again.
const SEGMENT_HELD_BYTES: u64 = 64 << 20;

/// A document as the tables hold it: references across documents resolved, with the RELATED
/// edges that start from it and how many embeddings its part has.
struct Resolved {
    doc: Document,
    edges: Vec<Edge>,
    embeddings: usize,
}

/// The footer of part `key` ([`PartStore::read_head`]).
fn read_head(parts: &PartStore, key: &str) -> Result<PartHead> {
    parts
        .read_head(key)
        .map_err(store(|| format!("reading part {key} from {}", parts.url())))
}

/// The embeddings of part `key` ([`PartStore::read_semantic`]).
fn read_semantic(parts: &PartStore, key: &str) -> Result<Semantic> {
    parts
        .read_semantic(key)
        .map_err(store(|| format!("reading part {key} from {}", parts.url())))
}

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
    let across = match names {
        Some(names) if related.scope == RelatedScope::Corpus => {
            related_across(job, input, names, &index)?
        }
        _ => BTreeMap::new(),
    };
    // Second pass: segment after segment of documents (`ledger_store::ends_segment`), each
    // keyed by what its rows are made from; a segment the previous version holds is shared.
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
    let corpus_scope = names.is_some() && related.scope == RelatedScope::Corpus;
    let resolve = |head: PartHead| {
        let mut doc = head.doc;
        index.resolve(&mut doc);
        let edges = match names {
            Some(_) if corpus_scope => across.get(&doc.id).cloned().unwrap_or_default(),
            Some(_) => head.related,
            None => Vec::new(),
        };
        Resolved {
            doc,
            edges,
            embeddings: head.embeddings,
        }
    };
    let entries: Vec<(&String, &String)> = input.keys.iter().collect();
    for segment in entries.split_inclusive(|(id, _)| ledger_store::ends_segment(id)) {
        let heads = |chunk: &[(&String, &String)]| -> Result<Vec<Resolved>> {
            let read: Vec<Result<PartHead>> = chunk
                .par_iter()
                .map(|(_, k)| read_head(job.parts, k))
                .collect();
            read.into_iter().map(|h| h.map(&resolve)).collect()
        };
        // The key: each document's part and what crossing documents added to its rows.
        let (mut key, mut held, mut held_bytes) = (String::new(), Vec::new(), 0);
        for chunk in segment.chunks(BATCH) {
            for ((_, part_key), r) in chunk.iter().zip(heads(chunk)?) {
                let crossed = serde_json::to_vec(&(&r.doc.mentions, &r.edges))?;
                key.push_str(part_key);
                key.push_str(&ledger_core::content_hash(&crossed));
                key.push('\n');
                held_bytes += r.doc.bytes;
                held.push(r);
                if held_bytes > SEGMENT_HELD_BYTES {
                    held.clear();
                }
            }
        }
        let whole = held.len() == segment.len();
        let shared = writer
            .begin_segment(&key)
            .map_err(store(|| format!("writing graph {}", job.out.display())))?;
        let mut held = held.into_iter();
        for chunk in segment.chunks(BATCH) {
            let docs = if whole {
                held.by_ref().take(chunk.len()).collect()
            } else {
                heads(chunk)?
            };
            let vectors: Vec<Result<Semantic>> = if shared {
                Vec::new()
            } else {
                chunk
                    .par_iter()
                    .map(|(_, k)| read_semantic(job.parts, k))
                    .collect()
            };
            let mut vectors = vectors.into_iter();
            for r in docs {
                let semantic = vectors.next().transpose()?.unwrap_or_default();
                let rows: Vec<&UnitEmbedding> = semantic.embeddings.iter().collect();
                related_edges += r.edges.len();
                embeddings += r.embeddings;
                writer
                    .add(&r.doc, &rows, &r.edges, input.reused.contains(&r.doc.id))
                    .map_err(store(|| format!("writing graph {}", job.out.display())))?;
                summary.add(&r.doc);
            }
        }
    }
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
            summary: Some(CorpusSummary {
                related: Some(related_edges),
                ..summary
            }),
            current: job.out.join("current"),
            version: manifest.version,
            written: true,
            write_seconds: corpus_start.elapsed().as_secs_f64(),
            segments: (manifest.segments.len(), manifest.shared_segments),
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
