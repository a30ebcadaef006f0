//! Reading tables back for what needs them in memory: `ledger similar`, and the caches of
//! the next run (summaries and vectors, DEPENDS judgments).

use crate::{Result, StoreError, io_err};
use arrow::array::{
    Array, BooleanArray, FixedSizeListArray, Float32Array, Int8Array, Int64Array, ListArray,
    RecordBatch, StringArray,
};
use arrow::error::ArrowError;
use ledger_core::{Judgment, JudgmentOutcome, Semantic, UnitEmbedding};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use std::path::{Path, PathBuf};

fn column<'a, T: 'static>(batch: &'a arrow::array::RecordBatch, name: &str) -> Result<&'a T> {
    batch
        .column_by_name(name)
        .and_then(|c| c.as_any().downcast_ref::<T>())
        .ok_or_else(|| StoreError::NotAGraph {
            path: name.into(),
            message: format!("graph table has no usable `{name}` column"),
        })
}

/// The embeddings of the current version of a graph (RELATED edges are not loaded).
pub fn read_embeddings(graph: &Path) -> Result<Semantic> {
    embeddings_from(table(graph, "embeddings")?)
}

/// The rows of an embeddings table.
pub(crate) fn embeddings_from(
    reader: impl IntoIterator<Item = Result<RecordBatch, ArrowError>>,
) -> Result<Semantic> {
    let mut semantic = Semantic::default();
    for batch in reader {
        let batch = batch?;
        let (docs, units, models) = (
            column::<StringArray>(&batch, "doc_id")?,
            column::<StringArray>(&batch, "unit_id")?,
            column::<StringArray>(&batch, "model")?,
        );
        let (summarizers, inputs, summaries, hashes) = (
            column::<StringArray>(&batch, "summarizer")?,
            column::<StringArray>(&batch, "input_hash")?,
            column::<StringArray>(&batch, "summary")?,
            column::<StringArray>(&batch, "summary_hash")?,
        );
        let vectors = column::<FixedSizeListArray>(&batch, "vector")?;
        semantic.dim = vectors.value_length() as usize;
        // A part written before vectors were quantized holds f32 vectors and no scale: they are
        // put on the stored grid as they are read.
        let scales = batch
            .column_by_name("scale")
            .and_then(|c| c.as_any().downcast_ref::<Float32Array>());
        for i in 0..batch.num_rows() {
            semantic.model = models.value(i).to_string();
            semantic.summarizer = summarizers.value(i).to_string();
            let v = vectors.value(i);
            let values = match (v.as_any().downcast_ref::<Int8Array>(), scales) {
                (Some(q), Some(scales)) => {
                    ledger_core::quantize::dequantize(q.values(), scales.value(i))
                }
                _ => v
                    .as_any()
                    .downcast_ref::<Float32Array>()
                    .map(|a| ledger_core::quantize::as_stored(a.values()))
                    .ok_or_else(|| StoreError::NotAGraph {
                        path: "vector".into(),
                        message: format!(
                            "graph table has a `vector` column of {} without a `scale`",
                            v.data_type()
                        ),
                    })?,
            };
            semantic.embeddings.push(UnitEmbedding {
                doc_id: docs.value(i).to_string(),
                unit_id: units.value(i).to_string(),
                input_hash: inputs.value(i).to_string(),
                summary: summaries.value(i).to_string(),
                summary_hash: hashes.value(i).to_string(),
                vector: values,
            });
        }
    }
    Ok(semantic)
}

/// The judgments of the current version of a graph, with their document ids.
pub fn read_judgments(graph: &Path) -> Result<Vec<(String, Judgment)>> {
    let mut out = Vec::new();
    for batch in table(graph, "judgments")? {
        let batch = batch?;
        let (docs, units, judges, keys, status) = (
            column::<StringArray>(&batch, "doc_id")?,
            column::<StringArray>(&batch, "unit_id")?,
            column::<StringArray>(&batch, "judge")?,
            column::<StringArray>(&batch, "cache_key")?,
            column::<StringArray>(&batch, "status")?,
        );
        let (candidates, verdicts, errors) = (
            column::<ListArray>(&batch, "candidates")?,
            column::<StringArray>(&batch, "verdicts")?,
            column::<StringArray>(&batch, "error")?,
        );
        let (requests, prompt, completion) = (
            column::<Int64Array>(&batch, "requests")?,
            column::<Int64Array>(&batch, "prompt_tokens")?,
            column::<Int64Array>(&batch, "completion_tokens")?,
        );
        let reused = column::<BooleanArray>(&batch, "reused")?;
        for i in 0..batch.num_rows() {
            let list = candidates.value(i);
            let ids = list
                .as_any()
                .downcast_ref::<StringArray>()
                .map(|a| a.iter().flatten().map(str::to_string).collect())
                .unwrap_or_default();
            let outcome = if status.value(i) == "ok" {
                JudgmentOutcome::Verdicts(serde_json::from_str(verdicts.value(i))?)
            } else {
                JudgmentOutcome::Failed(errors.value(i).to_string())
            };
            out.push((
                docs.value(i).to_string(),
                Judgment {
                    unit_id: units.value(i).to_string(),
                    judge: judges.value(i).to_string(),
                    cache_key: keys.value(i).to_string(),
                    candidates: ids,
                    outcome,
                    requests: u32::try_from(requests.value(i)).unwrap_or(u32::MAX),
                    prompt_tokens: u64::try_from(prompt.value(i)).unwrap_or(0),
                    completion_tokens: u64::try_from(completion.value(i)).unwrap_or(0),
                    reused: reused.value(i),
                },
            ));
        }
    }
    Ok(out)
}

/// The Parquet files of table `name` in a version folder, in order (their names sort in
/// document-id order).
fn table_files(version: &Path, name: &str) -> Result<Vec<PathBuf>> {
    let dir = version.join(name);
    let mut files = Vec::new();
    for e in std::fs::read_dir(&dir).map_err(io_err(&dir))? {
        let path = e.map_err(io_err(&dir))?.path();
        if path.extension().is_some_and(|x| x == "parquet") {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

/// The batches of table `name` of the current version of `graph`, file after file.
fn table(
    graph: &Path,
    name: &str,
) -> Result<impl Iterator<Item = Result<RecordBatch, ArrowError>>> {
    let dir = crate::current_version(graph)?;
    let mut readers = Vec::new();
    for path in table_files(&dir, name)? {
        let file = std::fs::File::open(&path).map_err(io_err(&path))?;
        readers.push(ParquetRecordBatchReaderBuilder::try_new(file)?.build()?);
    }
    Ok(readers.into_iter().flatten())
}

fn opt(a: &StringArray, i: usize) -> Option<String> {
    a.is_valid(i).then(|| a.value(i).to_string())
}

/// The units of the current version of a graph, in table order (document, then document order).
pub fn read_units(graph: &Path) -> Result<Vec<ledger_core::UnitRecord>> {
    let mut out = Vec::new();
    for batch in table(graph, "units")? {
        let batch = batch?;
        let s = |n: &str| column::<StringArray>(&batch, n);
        let n = |n: &str| column::<Int64Array>(&batch, n);
        let (docs, ids, kinds, envs, labels) = (
            s("doc_id")?,
            s("unit_id")?,
            s("kind")?,
            s("env")?,
            s("label")?,
        );
        let (numbers, titles, parents, paths, texts) = (
            s("number")?,
            s("title")?,
            s("parent_id")?,
            s("source_path")?,
            s("text")?,
        );
        let (ordinals, lines, tokens) = (n("ordinal")?, n("line")?, n("tokens")?);
        for i in 0..batch.num_rows() {
            let kind = ledger_core::UnitKind::parse(kinds.value(i)).ok_or_else(|| {
                StoreError::NotAGraph {
                    path: graph.to_path_buf(),
                    message: format!("unknown unit kind {:?}", kinds.value(i)),
                }
            })?;
            out.push(ledger_core::UnitRecord {
                doc_id: docs.value(i).to_string(),
                unit_id: ids.value(i).to_string(),
                kind,
                env: envs.value(i).to_string(),
                label: opt(labels, i),
                number: opt(numbers, i),
                title: opt(titles, i),
                parent_id: opt(parents, i),
                ordinal: usize::try_from(ordinals.value(i)).unwrap_or(0),
                source_path: paths.value(i).to_string(),
                line: usize::try_from(lines.value(i)).unwrap_or(0),
                tokens: usize::try_from(tokens.value(i)).unwrap_or(0),
                text: texts.value(i).to_string(),
            });
        }
    }
    Ok(out)
}

/// The edges of the current version of a graph.
pub fn read_edges(graph: &Path) -> Result<Vec<ledger_core::Edge>> {
    let mut out = Vec::new();
    for batch in table(graph, "edges")? {
        let batch = batch?;
        let s = |n: &str| column::<StringArray>(&batch, n);
        let (src_doc, src_unit, dst_doc, dst_unit, kinds, evidence) = (
            s("src_doc")?,
            s("src_unit")?,
            s("dst_doc")?,
            s("dst_unit")?,
            s("kind")?,
            s("evidence")?,
        );
        let scores = column::<arrow::array::Float64Array>(&batch, "score")?;
        for i in 0..batch.num_rows() {
            let kind = ledger_core::EdgeKind::parse(kinds.value(i)).ok_or_else(|| {
                StoreError::NotAGraph {
                    path: graph.to_path_buf(),
                    message: format!("unknown edge kind {:?}", kinds.value(i)),
                }
            })?;
            out.push(ledger_core::Edge {
                src_doc: src_doc.value(i).to_string(),
                src_unit: src_unit.value(i).to_string(),
                dst_doc: dst_doc.value(i).to_string(),
                dst_unit: dst_unit.value(i).to_string(),
                kind,
                score: scores.value(i),
                evidence: evidence.value(i).to_string(),
            });
        }
    }
    Ok(out)
}

/// What a document of a graph was parsed from: its path, content hash and inputs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Parsed {
    /// The main file or book folder, as given.
    pub path: String,
    /// blake3 of all bytes read.
    pub content_hash: String,
    /// Every path its parse looked at (empty when not recorded).
    pub inputs: Vec<ledger_core::Input>,
}

/// What each document of the current version was parsed from (document id → [`Parsed`]): the
/// `documents` table's path and hash with the `inputs` table's rows.
pub fn read_parsed(graph: &Path) -> Result<std::collections::BTreeMap<String, Parsed>> {
    let mut out = std::collections::BTreeMap::<String, Parsed>::new();
    for batch in table(graph, "documents")? {
        let batch = batch?;
        let s = |n: &str| column::<StringArray>(&batch, n);
        let (ids, paths, hashes) = (s("doc_id")?, s("path")?, s("content_hash")?);
        for i in 0..batch.num_rows() {
            out.insert(
                ids.value(i).to_string(),
                Parsed {
                    path: paths.value(i).to_string(),
                    content_hash: hashes.value(i).to_string(),
                    inputs: Vec::new(),
                },
            );
        }
    }
    for batch in table(graph, "inputs")? {
        let batch = batch?;
        let s = |n: &str| column::<StringArray>(&batch, n);
        let (ids, paths, kinds, hashes) = (s("doc_id")?, s("path")?, s("kind")?, s("hash")?);
        for i in 0..batch.num_rows() {
            let seen = ledger_core::Seen::from_parts(kinds.value(i), hashes.value(i)).ok_or_else(
                || StoreError::NotAGraph {
                    path: graph.to_path_buf(),
                    message: format!("unknown input kind {:?}", kinds.value(i)),
                },
            )?;
            if let Some(parsed) = out.get_mut(ids.value(i)) {
                parsed.inputs.push(ledger_core::Input {
                    path: paths.value(i).to_string(),
                    seen,
                });
            }
        }
    }
    Ok(out)
}
