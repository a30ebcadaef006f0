//! Writing a graph: Arrow batches from documents, Parquet files, atomic commit.

use crate::schema::{
    DIAGNOSTICS, DOCUMENTS, EDGES, INPUTS, JUDGMENTS, LABELS, MENTIONS, RUNS, SCHEMA_VERSION,
    TABLES, UNITS, embeddings,
};
use crate::{Result, StoreError, io_err};
use arrow::array::{
    ArrayRef, FixedSizeListArray, Float32Array, Float64Array, Int8Array, Int32Array, Int64Array,
    RecordBatch, StringArray,
};
use arrow::datatypes::SchemaRef;
use ledger_core::{Diagnostic, Document, Edge, Resolution, Semantic, UnitEmbedding};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What one run did, for the `runs` table.
#[derive(Debug, Clone, Default)]
pub struct RunInfo {
    /// RFC 3339 start time.
    pub started_at: String,
    /// The command line, as run.
    pub command: String,
    /// The inputs, joined with spaces.
    pub inputs: String,
    /// Wall-clock seconds.
    pub seconds: f64,
    /// Chat-endpoint requests this run sent (DEPENDS judge and summarizer; retries included).
    pub llm_requests: u64,
    /// Prompt tokens those requests cost.
    pub llm_prompt_tokens: u64,
    /// Completion tokens those requests cost.
    pub llm_completion_tokens: u64,
    /// The part each document came from (document id → part key), recorded in the manifest so
    /// that the next run finds a changed document's previous part (its caches).
    pub parts: BTreeMap<String, String>,
    /// What decided the version's content besides its parts (a run that comes to the same key
    /// has nothing to write).
    pub corpus_key: String,
}

/// `manifest.json` of one graph version.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Manifest {
    /// Table layout version.
    pub schema_version: u32,
    /// Version number of this graph (1, 2, …).
    pub version: u64,
    /// The LEDGER version that wrote it.
    pub ledger_version: String,
    /// When it was committed (RFC 3339).
    pub committed_at: String,
    /// Row count per table.
    pub rows: BTreeMap<String, usize>,
    /// Document id → the part it came from.
    #[serde(default)]
    pub parts: BTreeMap<String, String>,
    /// What decided the content besides the parts (settings of the corpus stage, inputs'
    /// diagnostics), as the pipeline hashes it.
    #[serde(default)]
    pub corpus_key: String,
    /// The segment files of every table but `runs`, in document-id order (`NNNNNN-<key>`:
    /// `<table>/<name>.parquet`).
    #[serde(default)]
    pub segments: Vec<String>,
    /// How many of them are the previous version's files, shared.
    #[serde(default)]
    pub shared_segments: usize,
}

impl Manifest {
    /// Reads `manifest.json` from a version folder.
    pub fn read(dir: &Path) -> Result<Manifest> {
        let path = dir.join("manifest.json");
        let bytes = std::fs::read(&path).map_err(io_err(&path))?;
        Ok(serde_json::from_slice(&bytes)?)
    }
}

/// RFC 3339 times as `runs` timestamps.
fn timestamps(v: &[&str]) -> Result<ArrayRef> {
    let text = strings(v.iter().copied());
    Ok(arrow::compute::cast(&text, &crate::schema::timestamp())?)
}

/// `b` in the `runs` layout, its columns cast where an older version wrote another type (times
/// as text); `None` when its columns are not those of `runs`.
fn as_runs(b: &RecordBatch) -> Option<RecordBatch> {
    if b.schema() == *RUNS {
        return Some(b.clone());
    }
    let columns: Option<Vec<ArrayRef>> = RUNS
        .fields()
        .iter()
        .map(|f| {
            let column = b.column_by_name(f.name())?;
            arrow::compute::cast(column, f.data_type()).ok()
        })
        .collect();
    RecordBatch::try_new(RUNS.clone(), columns?).ok()
}

fn strings<'a>(v: impl IntoIterator<Item = &'a str>) -> ArrayRef {
    Arc::new(StringArray::from_iter_values(v))
}
fn opt_strings<'a>(v: impl IntoIterator<Item = Option<&'a str>>) -> ArrayRef {
    Arc::new(v.into_iter().collect::<StringArray>())
}
fn ints(v: impl IntoIterator<Item = usize>) -> ArrayRef {
    Arc::new(v.into_iter().map(|x| x as i64).collect::<Int64Array>())
}

fn batch(schema: &SchemaRef, columns: Vec<ArrayRef>) -> Result<RecordBatch> {
    Ok(RecordBatch::try_new(schema.clone(), columns)?)
}

fn documents_batch(docs: &[&Document]) -> Result<RecordBatch> {
    batch(
        &DOCUMENTS,
        vec![
            strings(docs.iter().map(|d| d.id.as_str())),
            strings(docs.iter().map(|d| d.path.as_str())),
            strings(
                docs.iter()
                    .map(|d| d.format.map_or("unknown", |f| f.as_str())),
            ),
            strings(docs.iter().map(|d| d.content_hash.as_str())),
            ints(docs.iter().map(|d| d.bytes as usize)),
            ints(docs.iter().map(|d| d.tokens())),
            ints(docs.iter().map(|d| d.files.len())),
            ints(docs.iter().map(|d| d.units.len())),
        ],
    )
}

fn units_batch(docs: &[&Document]) -> Result<RecordBatch> {
    let rows: Vec<(&Document, &ledger_core::Unit)> = docs
        .iter()
        .flat_map(|d| d.units.iter().map(move |u| (*d, u)))
        .collect();
    let file = |d: &Document, f: usize| d.files.get(f).map_or("", String::as_str).to_string();
    let paths: Vec<String> = rows
        .iter()
        .map(|(d, u)| {
            if u.kind == ledger_core::UnitKind::Document {
                d.path.clone()
            } else {
                file(d, u.file)
            }
        })
        .collect();
    batch(
        &UNITS,
        vec![
            strings(rows.iter().map(|(d, _)| d.id.as_str())),
            strings(rows.iter().map(|(_, u)| u.id.as_str())),
            strings(rows.iter().map(|(_, u)| u.kind.as_str())),
            strings(rows.iter().map(|(_, u)| u.env.as_str())),
            Arc::new(rows.iter().map(|(_, u)| u.level).collect::<Int32Array>()),
            opt_strings(rows.iter().map(|(_, u)| u.label.as_deref())),
            opt_strings(rows.iter().map(|(_, u)| u.number.as_deref())),
            opt_strings(rows.iter().map(|(_, u)| u.title.as_deref())),
            opt_strings(
                rows.iter()
                    .map(|(d, u)| u.parent.map(|p| d.units[p].id.as_str())),
            ),
            ints(rows.iter().map(|(_, u)| u.ordinal)),
            strings(paths.iter().map(String::as_str)),
            ints(rows.iter().map(|(_, u)| u.start_byte)),
            ints(rows.iter().map(|(_, u)| u.end_byte)),
            ints(rows.iter().map(|(_, u)| u.line)),
            ints(rows.iter().map(|(_, u)| u.tokens)),
            strings(rows.iter().map(|(_, u)| u.content_hash.as_str())),
            strings(rows.iter().map(|(_, u)| u.text.as_str())),
        ],
    )
}

/// Every edge: the parsed edges (CONTAINS, REFERENCES, proofs' DEPENDS) and the judged DEPENDS
/// of the documents, RELATED of the semantic layer, sorted for byte-identical output.
pub(crate) fn all_edges(docs: &[&Document], related: &[Edge]) -> Vec<Edge> {
    let mut edges: Vec<Edge> = docs
        .iter()
        .flat_map(|d| {
            d.parsed_edges()
                .into_iter()
                .chain(d.depends.iter().cloned())
        })
        .chain(related.iter().cloned())
        .collect();
    edges.sort_by(|a, b| {
        (&a.src_doc, &a.src_unit, a.kind, &a.dst_doc, &a.dst_unit).cmp(&(
            &b.src_doc,
            &b.src_unit,
            b.kind,
            &b.dst_doc,
            &b.dst_unit,
        ))
    });
    edges
}

fn edges_batch(edges: &[Edge]) -> Result<RecordBatch> {
    batch(
        &EDGES,
        vec![
            strings(edges.iter().map(|e| e.src_doc.as_str())),
            strings(edges.iter().map(|e| e.src_unit.as_str())),
            strings(edges.iter().map(|e| e.dst_doc.as_str())),
            strings(edges.iter().map(|e| e.dst_unit.as_str())),
            strings(edges.iter().map(|e| e.kind.as_str())),
            Arc::new(edges.iter().map(|e| e.score).collect::<Float64Array>()),
            strings(edges.iter().map(|e| e.evidence.as_str())),
        ],
    )
}

fn mentions_batch(docs: &[&Document]) -> Result<RecordBatch> {
    let rows: Vec<(&Document, &ledger_core::Mention)> = docs
        .iter()
        .flat_map(|d| d.mentions.iter().map(move |m| (*d, m)))
        .collect();
    let keys: Vec<String> = rows.iter().map(|(_, m)| m.key.to_string()).collect();
    let target = |m: &ledger_core::Mention| match &m.resolution {
        Resolution::Resolved { doc, unit } => (Some(doc.clone()), Some(unit.clone()), None),
        Resolution::Broken { reason }
        | Resolution::Ambiguous { reason }
        | Resolution::External { reason } => (None, None, Some(reason.clone())),
        Resolution::Pending => (None, None, Some("not resolved".to_string())),
    };
    let targets: Vec<(Option<String>, Option<String>, Option<String>)> =
        rows.iter().map(|(_, m)| target(m)).collect();
    batch(
        &MENTIONS,
        vec![
            strings(rows.iter().map(|(d, _)| d.id.as_str())),
            strings(rows.iter().map(|(d, m)| d.units[m.unit].id.as_str())),
            strings(
                rows.iter()
                    .map(|(d, m)| d.files.get(m.file).map_or("", String::as_str)),
            ),
            ints(rows.iter().map(|(_, m)| m.line)),
            ints(rows.iter().map(|(_, m)| m.col)),
            ints(rows.iter().map(|(_, m)| m.start_byte)),
            ints(rows.iter().map(|(_, m)| m.end_byte)),
            strings(rows.iter().map(|(_, m)| m.text.as_str())),
            strings(rows.iter().map(|(_, m)| m.kind.as_str())),
            strings(keys.iter().map(String::as_str)),
            opt_strings(targets.iter().map(|t| t.0.as_deref())),
            opt_strings(targets.iter().map(|t| t.1.as_deref())),
            strings(rows.iter().map(|(_, m)| m.resolution.status())),
            opt_strings(targets.iter().map(|t| t.2.as_deref())),
        ],
    )
}

fn labels_batch(docs: &[&Document]) -> Result<RecordBatch> {
    let mut rows: Vec<(&str, &str, &str, Option<&str>)> = Vec::new();
    for d in docs {
        for u in &d.units {
            for (l, n) in &u.labels {
                rows.push((d.id.as_str(), l.as_str(), u.id.as_str(), n.as_deref()));
            }
        }
    }
    batch(
        &LABELS,
        vec![
            strings(rows.iter().map(|r| r.0)),
            strings(rows.iter().map(|r| r.1)),
            strings(rows.iter().map(|r| r.2)),
            opt_strings(rows.iter().map(|r| r.3)),
        ],
    )
}

fn inputs_batch(docs: &[&Document]) -> Result<RecordBatch> {
    let rows: Vec<(&str, &ledger_core::Input)> = docs
        .iter()
        .flat_map(|d| d.inputs.iter().map(move |i| (d.id.as_str(), i)))
        .collect();
    batch(
        &INPUTS,
        vec![
            strings(rows.iter().map(|r| r.0)),
            strings(rows.iter().map(|r| r.1.path.as_str())),
            strings(rows.iter().map(|r| r.1.seen.kind())),
            strings(rows.iter().map(|r| r.1.seen.hash())),
        ],
    )
}

/// The `embeddings` rows of `semantic` (a part's embeddings).
pub(crate) fn embeddings_batch(semantic: &Semantic) -> Result<RecordBatch> {
    let rows: Vec<&UnitEmbedding> = semantic.embeddings.iter().collect();
    let model = EmbeddingModel {
        model: semantic.model.clone(),
        summarizer: semantic.summarizer.clone(),
        dim: rows.first().map_or(semantic.dim, |e| e.vector.len()),
    };
    embeddings_rows(&rows, &model)
}

/// `rows` as `embeddings` rows of `model` (every vector must have its dimension).
fn embeddings_rows(rows: &[&UnitEmbedding], model: &EmbeddingModel) -> Result<RecordBatch> {
    let dim = model.dim.max(1);
    if let Some(bad) = rows.iter().find(|e| e.vector.len() != dim) {
        return Err(arrow::error::ArrowError::InvalidArgumentError(format!(
            "embedding of {}/{} has {} dimensions, expected {dim}",
            bad.doc_id,
            bad.unit_id,
            bad.vector.len()
        ))
        .into());
    }
    // Exact for a vector already on the stored grid (every embedder's output is put there).
    let quantized: Vec<(Vec<i8>, f32)> = rows
        .iter()
        .map(|e| ledger_core::quantize::quantize(&e.vector))
        .collect();
    let values = Int8Array::from_iter_values(quantized.iter().flat_map(|(q, _)| q.iter().copied()));
    let item = std::sync::Arc::new(arrow::datatypes::Field::new(
        "item",
        arrow::datatypes::DataType::Int8,
        false,
    ));
    let vectors = FixedSizeListArray::try_new(item, dim as i32, Arc::new(values), None)?;
    let scales = Float32Array::from_iter_values(quantized.iter().map(|(_, scale)| *scale));
    batch(
        &embeddings(dim),
        vec![
            strings(rows.iter().map(|e| e.doc_id.as_str())),
            strings(rows.iter().map(|e| e.unit_id.as_str())),
            strings(rows.iter().map(|_| model.model.as_str())),
            strings(rows.iter().map(|_| model.summarizer.as_str())),
            strings(rows.iter().map(|e| e.input_hash.as_str())),
            strings(rows.iter().map(|e| e.summary.as_str())),
            strings(rows.iter().map(|e| e.summary_hash.as_str())),
            Arc::new(vectors),
            Arc::new(scales),
        ],
    )
}

fn judgments_batch(docs: &[&Document]) -> Result<RecordBatch> {
    use ledger_core::JudgmentOutcome;
    let rows: Vec<(&str, &ledger_core::Judgment)> = docs
        .iter()
        .flat_map(|d| d.judgments.iter().map(move |j| (d.id.as_str(), j)))
        .collect();
    let mut candidates =
        arrow::array::ListBuilder::new(arrow::array::StringBuilder::new()).with_field(Arc::new(
            arrow::datatypes::Field::new("item", arrow::datatypes::DataType::Utf8, false),
        ));
    for (_, j) in &rows {
        for c in &j.candidates {
            candidates.values().append_value(c);
        }
        candidates.append(true);
    }
    let verdicts: Vec<String> = rows
        .iter()
        .map(|(_, j)| match &j.outcome {
            JudgmentOutcome::Verdicts(v) => serde_json::to_string(v),
            JudgmentOutcome::Failed(_) => Ok("[]".to_string()),
        })
        .collect::<std::result::Result<_, _>>()?;
    let errors = rows.iter().map(|(_, j)| match &j.outcome {
        JudgmentOutcome::Failed(e) => Some(e.as_str()),
        JudgmentOutcome::Verdicts(_) => None,
    });
    let status = rows.iter().map(|(_, j)| match j.outcome {
        JudgmentOutcome::Failed(_) => "failed",
        JudgmentOutcome::Verdicts(_) => "ok",
    });
    batch(
        &JUDGMENTS,
        vec![
            strings(rows.iter().map(|r| r.0)),
            strings(rows.iter().map(|r| r.1.unit_id.as_str())),
            strings(rows.iter().map(|r| r.1.judge.as_str())),
            strings(rows.iter().map(|r| r.1.cache_key.as_str())),
            strings(status),
            Arc::new(candidates.finish()),
            strings(verdicts.iter().map(String::as_str)),
            opt_strings(errors),
            ints(rows.iter().map(|r| r.1.requests as usize)),
            ints(rows.iter().map(|r| r.1.prompt_tokens as usize)),
            ints(rows.iter().map(|r| r.1.completion_tokens as usize)),
            Arc::new(arrow::array::BooleanArray::from(
                rows.iter().map(|r| r.1.reused).collect::<Vec<_>>(),
            )),
        ],
    )
}

fn diagnostics_batch(docs: &[&Document], corpus: &[Diagnostic]) -> Result<RecordBatch> {
    let rows: Vec<(Option<&str>, &Diagnostic)> = corpus
        .iter()
        .map(|d| (None, d))
        .chain(docs.iter().flat_map(|doc| {
            doc.diagnostics
                .iter()
                .map(move |d| (Some(doc.id.as_str()), d))
        }))
        .collect();
    batch(
        &DIAGNOSTICS,
        vec![
            opt_strings(rows.iter().map(|r| r.0)),
            strings(rows.iter().map(|r| r.1.path.as_str())),
            ints(rows.iter().map(|r| r.1.line)),
            strings(rows.iter().map(|r| r.1.severity.as_str())),
            strings(rows.iter().map(|r| r.1.message.as_str())),
        ],
    )
}

fn runs_batch(previous: Option<&Path>, run: &RunInfo, counts: [usize; 9]) -> Result<RecordBatch> {
    let mut batches = Vec::new();
    let mut next_id = 1;
    if let Some(prev) = previous {
        let path = segment_file(prev, "runs", "runs");
        if let Ok(f) = File::open(&path) {
            // The history is kept as far as it reads; an unreadable file is no reason to stop.
            let read = || -> Result<()> {
                let reader =
                    parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(f)?
                        .build()?;
                for b in reader {
                    // Rows of an older layout (times as text) are cast to this one.
                    let Some(b) = as_runs(&b?) else {
                        tracing::warn!(path = %path.display(), "previous runs of another layout left out");
                        continue;
                    };
                    if let Some(ids) = b.column(0).as_any().downcast_ref::<Int64Array>() {
                        next_id = next_id.max(ids.iter().flatten().max().unwrap_or(0) + 1);
                    }
                    batches.push(b);
                }
                Ok(())
            };
            if let Err(e) = read() {
                tracing::warn!(error = %e, path = %path.display(), "previous runs unreadable; keeping the rows that read");
            }
        }
    }
    let now = now_rfc3339();
    let this = batch(
        &RUNS,
        vec![
            Arc::new(Int64Array::from(vec![next_id])),
            timestamps(&[run.started_at.as_str()])?,
            timestamps(&[now.as_str()])?,
            strings([run.command.as_str()]),
            strings([run.inputs.as_str()]),
            ints([counts[0]]),
            ints([counts[1]]),
            ints([counts[2]]),
            ints([counts[3]]),
            ints([counts[4]]),
            ints([counts[5]]),
            Arc::new(Float64Array::from(vec![run.seconds])),
            ints([counts[6]]),
            ints([counts[7]]),
            ints([counts[8]]),
            ints([run.llm_requests as usize]),
            ints([run.llm_prompt_tokens as usize]),
            ints([run.llm_completion_tokens as usize]),
            strings([env!("CARGO_PKG_VERSION")]),
            Arc::new(Int64Array::from(vec![i64::from(SCHEMA_VERSION)])),
        ],
    )?;
    batches.push(this);
    Ok(arrow::compute::concat_batches(&RUNS, &batches)?)
}

/// Pending rows go to a table's Parquet writer when they reach this many or [`CHUNK_BYTES`], in
/// whole 1,024-row mini batches (the rest waits), so that pages break where they would if every
/// row came in one call: a table that fits in one row group and whose rows weigh less than
/// [`CHUNK_BYTES`] per 1,024 is the same bytes as when all rows were in memory.
const CHUNK: usize = 64 * 1024;

/// Bytes of pending rows (in Arrow's memory) that send them to the writer before [`CHUNK`] rows.
const CHUNK_BYTES: usize = 16 << 20;

/// The writer's mini batch: what it checks page sizes after.
const MINI_BATCH: usize = 1024;

/// Rows per row group, at most.
const ROW_GROUP: usize = 128 * 1024;

/// Encoded bytes per row group, at most (the writer's estimate): what a table's writer holds
/// before it flushes, whatever its rows weigh (a row of the `embeddings` table, 384 int8s and a
/// summary, is about half a kilobyte).
const ROW_GROUP_BYTES: usize = 32 << 20;

/// One table of a version being written. Memory: its pending rows (up to [`CHUNK_BYTES`] plus
/// one document's) and its writer's open row group (up to [`ROW_GROUP_BYTES`]).
struct TableWriter {
    path: PathBuf,
    schema: SchemaRef,
    writer: ArrowWriter<File>,
    pending: Vec<RecordBatch>,
    pending_rows: usize,
    pending_bytes: usize,
    rows: usize,
}

impl TableWriter {
    fn create(path: PathBuf, schema: SchemaRef) -> Result<TableWriter> {
        let file = File::create(&path).map_err(io_err(&path))?;
        let props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::try_new(3)?))
            .set_created_by(format!("ledger {}", env!("CARGO_PKG_VERSION")))
            .set_write_batch_size(MINI_BATCH)
            .set_max_row_group_row_count(Some(ROW_GROUP))
            .set_max_row_group_bytes(Some(ROW_GROUP_BYTES))
            .build();
        let writer = ArrowWriter::try_new(file, schema.clone(), Some(props))?;
        Ok(TableWriter {
            path,
            schema,
            writer,
            pending: Vec::new(),
            pending_rows: 0,
            pending_bytes: 0,
            rows: 0,
        })
    }

    /// Adds rows; once enough are pending, their whole mini batches go to the file.
    fn push(&mut self, batch: RecordBatch) -> Result<()> {
        self.rows += batch.num_rows();
        self.pending_rows += batch.num_rows();
        self.pending_bytes += batch.get_array_memory_size();
        self.pending.push(batch);
        if self.pending_rows >= CHUNK || self.pending_bytes >= CHUNK_BYTES {
            let all = arrow::compute::concat_batches(&self.schema, &self.pending)?;
            self.pending = Vec::new();
            let n = all.num_rows();
            // Whole mini batches; everything when fewer than one weighs this much.
            let whole = match n / MINI_BATCH * MINI_BATCH {
                0 => n,
                whole => whole,
            };
            self.writer.write(&all.slice(0, whole))?;
            // A slice shares its buffers: weigh the rest by its share of the rows.
            self.pending_bytes = self.pending_bytes * (n - whole) / n.max(1);
            self.pending_rows = n - whole;
            self.pending = vec![all.slice(whole, n - whole)];
        }
        Ok(())
    }

    /// Writes what is left, closes the file and syncs it.
    fn finish(mut self) -> Result<usize> {
        let rest = arrow::compute::concat_batches(&self.schema, &self.pending)?;
        if rest.num_rows() > 0 {
            self.writer.write(&rest)?;
        }
        let file = self.writer.into_inner()?;
        file.sync_all().map_err(io_err(&self.path))?;
        Ok(self.rows)
    }
}

/// The tables with rows per document: a folder of segment files each. [`TABLES`] but `runs`,
/// its last (one file, written whole at the end).
const DOCUMENT_TABLES: &[&str] = match TABLES.split_last() {
    Some((_, rest)) => rest,
    None => &[],
};

/// Documents per segment, on average ([`ends_segment`]).
const SEGMENT_DOCUMENTS: u32 = 16;

/// Whether the segment holding document `doc_id` ends with it. Decided by the id alone (a hash),
/// so that adding, removing or changing a document moves no boundary between other documents:
/// the segments of documents that did not change keep their keys, and their files are shared
/// with the previous version ([`GraphWriter::begin_segment`]). About one id in
/// [`SEGMENT_DOCUMENTS`] ends a segment.
pub fn ends_segment(doc_id: &str) -> bool {
    let hash = ledger_core::content_hash(doc_id.as_bytes());
    u32::from_str_radix(&hash[..8], 16).is_ok_and(|h| h % SEGMENT_DOCUMENTS == 0)
}

/// The file of one segment of one table in a version folder.
fn segment_file(version: &Path, table: &str, name: &str) -> PathBuf {
    version.join(table).join(format!("{name}.parquet"))
}

/// One segment's file of every table with rows per document.
struct Tables {
    documents: TableWriter,
    units: TableWriter,
    edges: TableWriter,
    mentions: TableWriter,
    labels: TableWriter,
    diagnostics: TableWriter,
    embeddings: TableWriter,
    judgments: TableWriter,
    inputs: TableWriter,
}

impl Tables {
    fn create(version: &Path, name: &str, dim: usize) -> Result<Tables> {
        let table = |t: &str, schema: &SchemaRef| {
            TableWriter::create(segment_file(version, t, name), schema.clone())
        };
        Ok(Tables {
            documents: table("documents", &DOCUMENTS)?,
            units: table("units", &UNITS)?,
            edges: table("edges", &EDGES)?,
            mentions: table("mentions", &MENTIONS)?,
            labels: table("labels", &LABELS)?,
            diagnostics: table("diagnostics", &DIAGNOSTICS)?,
            embeddings: table("embeddings", &embeddings(dim.max(1)))?,
            judgments: table("judgments", &JUDGMENTS)?,
            inputs: table("inputs", &INPUTS)?,
        })
    }

    /// One document's rows of every table, in [`DOCUMENT_TABLES`] order.
    fn rows(
        doc: &Document,
        edges: &[Edge],
        embedded: &[&UnitEmbedding],
        model: &EmbeddingModel,
    ) -> Result<DocumentRows> {
        let docs = [doc];
        Ok([
            documents_batch(&docs)?,
            units_batch(&docs)?,
            edges_batch(edges)?,
            mentions_batch(&docs)?,
            labels_batch(&docs)?,
            diagnostics_batch(&docs, &[])?,
            embeddings_rows(embedded, model)?,
            judgments_batch(&docs)?,
            inputs_batch(&docs)?,
        ])
    }

    /// Adds one document's rows ([`Tables::rows`]).
    fn push(&mut self, rows: DocumentRows) -> Result<()> {
        let [
            documents,
            units,
            edges,
            mentions,
            labels,
            diagnostics,
            embeddings,
            judgments,
            inputs,
        ] = rows;
        self.documents.push(documents)?;
        self.units.push(units)?;
        self.edges.push(edges)?;
        self.mentions.push(mentions)?;
        self.labels.push(labels)?;
        self.diagnostics.push(diagnostics)?;
        self.embeddings.push(embeddings)?;
        self.judgments.push(judgments)?;
        self.inputs.push(inputs)?;
        Ok(())
    }

    /// Closes every file; the rows of each, in [`DOCUMENT_TABLES`] order.
    fn finish(self) -> Result<[usize; 9]> {
        Ok([
            self.documents.finish()?,
            self.units.finish()?,
            self.edges.finish()?,
            self.mentions.finish()?,
            self.labels.finish()?,
            self.diagnostics.finish()?,
            self.embeddings.finish()?,
            self.judgments.finish()?,
            self.inputs.finish()?,
        ])
    }
}

/// One document's rows of every table with rows per document, in [`DOCUMENT_TABLES`] order.
type DocumentRows = [RecordBatch; 9];

/// Documents whose rows may wait for the segment's writing thread.
const QUEUED_DOCUMENTS: usize = 2;

/// A segment's tables, written on a thread of their own: the caller makes each document's rows
/// while the thread encodes, compresses and writes the previous ones (the two cores of a
/// corpus stage busy, not one). Files are created by the caller, so that a path that cannot be
/// written fails at once; the thread's error, if any, is the next call's.
struct SegmentWriter {
    rows: Option<std::sync::mpsc::SyncSender<DocumentRows>>,
    thread: Option<std::thread::JoinHandle<Result<[usize; 9]>>>,
}

impl SegmentWriter {
    fn start(tables: Tables) -> Result<SegmentWriter> {
        let (rows, queue) = std::sync::mpsc::sync_channel::<DocumentRows>(QUEUED_DOCUMENTS);
        let thread = std::thread::Builder::new()
            .name("ledger-segment".into())
            .spawn(move || {
                let mut tables = tables;
                for document in queue {
                    tables.push(document)?;
                }
                tables.finish()
            })
            .map_err(|e| StoreError::Io {
                path: PathBuf::from("(a thread writing a segment)"),
                source: e,
            })?;
        Ok(SegmentWriter {
            rows: Some(rows),
            thread: Some(thread),
        })
    }

    /// Hands one document's rows to the thread; the thread's error if it has stopped.
    fn add(&mut self, rows: DocumentRows) -> Result<()> {
        match &self.rows {
            Some(sender) if sender.send(rows).is_ok() => Ok(()),
            // The thread stopped on an error: that error.
            _ => self.join().map(|_| ()),
        }
    }

    /// Waits for the thread to write every row and close the files: each table's rows.
    fn finish(mut self) -> Result<[usize; 9]> {
        self.join()
    }

    /// Closes the queue and waits for the thread: its result.
    fn join(&mut self) -> Result<[usize; 9]> {
        self.rows = None;
        let stopped = |why: &str| StoreError::Io {
            path: PathBuf::from("(a thread writing a segment)"),
            source: std::io::Error::other(format!("it stopped without a result: {why}")),
        };
        match self.thread.take() {
            Some(thread) => thread.join().map_err(|panic| {
                let why = panic
                    .downcast_ref::<String>()
                    .map(String::as_str)
                    .or_else(|| panic.downcast_ref::<&str>().copied())
                    .unwrap_or("it panicked");
                stopped(why)
            })?,
            None => Err(stopped("it was already waited for")),
        }
    }
}

impl Drop for SegmentWriter {
    /// An unfinished segment (an error elsewhere): its thread is waited for, so that nothing
    /// writes into a version being removed.
    fn drop(&mut self) {
        if self.thread.is_some() {
            let _ = self.join();
        }
    }
}

/// The segment being added to.
enum Segment {
    /// Its files are being written.
    Written(SegmentWriter),
    /// Its files are the previous version's (documents added to it are only counted).
    Shared,
}

/// The counts of the `runs` row.
#[derive(Default)]
struct Counts {
    documents: usize,
    units: usize,
    edges: usize,
    mentions: usize,
    broken: usize,
    diagnostics: usize,
    judgments: usize,
    reused: usize,
    failed: usize,
}

/// What the `embeddings` table's rows share: model, summarizer, vector length.
#[derive(Debug, Clone, Default)]
pub struct EmbeddingModel {
    /// The embedding model's name.
    pub model: String,
    /// The summarizer's name.
    pub summarizer: String,
    /// Vector length (0: no embeddings; the column is then 1 wide).
    pub dim: usize,
}

/// A new version of a graph, written one document at a time in document-id order. Every table
/// but `runs` is a folder of Parquet files, one per segment of consecutive documents
/// ([`ends_segment`]); a segment whose key the previous version already holds shares its files
/// (hard links), so that a run where one document changed writes one segment. Memory holds one
/// document and a chunk per table, whatever the corpus. [`GraphWriter::finish`] adds the `runs`
/// row and the manifest and makes the version current atomically; a writer dropped unfinished
/// (an error, a panic) removes what it wrote, and the previous version stays current.
pub struct GraphWriter {
    graph: PathBuf,
    versions: PathBuf,
    tmp: PathBuf,
    version: u64,
    previous: Option<PathBuf>,
    /// Segment key → its file name in the previous version.
    previous_segments: HashMap<String, String>,
    model: EmbeddingModel,
    segment: Option<Segment>,
    /// The file names of the segments begun, in order.
    segments: Vec<String>,
    /// Segments whose files were shared with the previous version.
    shared: usize,
    rows: BTreeMap<String, usize>,
    counts: Counts,
    last: Option<String>,
}

impl GraphWriter {
    /// Starts version N+1 of `graph` in a temporary folder; `corpus_diagnostics` (problems with
    /// the inputs themselves) lead the `diagnostics` table.
    pub fn create(
        graph: &Path,
        model: EmbeddingModel,
        corpus_diagnostics: &[Diagnostic],
    ) -> Result<GraphWriter> {
        let versions = graph.join("versions");
        std::fs::create_dir_all(&versions).map_err(io_err(&versions))?;
        let previous = crate::current_version(graph).ok();
        let version = next_version(&versions)?;
        let tmp = versions.join(format!(".tmp-{version:06}-{}", std::process::id()));
        if tmp.exists() {
            std::fs::remove_dir_all(&tmp).map_err(io_err(&tmp))?;
        }
        for table in TABLES {
            let dir = tmp.join(table);
            std::fs::create_dir_all(&dir).map_err(io_err(&dir))?;
        }
        let previous_segments = previous.as_deref().map(segments_in).unwrap_or_default();
        let mut writer = GraphWriter {
            graph: graph.to_path_buf(),
            versions,
            tmp,
            version,
            previous,
            previous_segments,
            model,
            segment: None,
            segments: Vec::new(),
            shared: 0,
            rows: TABLES.iter().map(|t| (t.to_string(), 0)).collect(),
            counts: Counts::default(),
            last: None,
        };
        let inputs = segment_file(&writer.tmp, "diagnostics", "000000-inputs");
        write_parquet(&inputs, &diagnostics_batch(&[], corpus_diagnostics)?)?;
        writer.counts.diagnostics = corpus_diagnostics.len();
        *writer.rows.entry("diagnostics".into()).or_default() += corpus_diagnostics.len();
        Ok(writer)
    }

    /// The file key of a segment whose content `key` decides (the caller's digest of what its
    /// rows are made from), with what else decides the bytes: layout, LEDGER version, model.
    fn file_key(&self, key: &str) -> String {
        let m = &self.model;
        let what = format!(
            "{SCHEMA_VERSION}\n{}\n{}\n{}\n{}\n{key}",
            env!("CARGO_PKG_VERSION"),
            m.model,
            m.summarizer,
            m.dim
        );
        ledger_core::content_hash(what.as_bytes())[..32].to_string()
    }

    /// Ends the segment being added to (if any) and begins the next one, whose rows `key`
    /// decides: a digest of everything its documents' rows are made from. When the previous
    /// version holds a segment of that key, its files are shared (hard links, else copies) and
    /// this returns true: the documents then added are counted, not written, and need no
    /// embeddings. A previous file that cannot be read is not shared; the segment is written.
    pub fn begin_segment(&mut self, key: &str) -> Result<bool> {
        self.end_segment()?;
        let key = self.file_key(key);
        let name = format!("{:06}-{key}", self.segments.len() + 1);
        self.segments.push(name.clone());
        if let Some(previous) = self.previous_segments.get(&key) {
            match self.share(previous, &name) {
                Ok(rows) => {
                    for (table, n) in DOCUMENT_TABLES.iter().zip(rows) {
                        *self.rows.entry(table.to_string()).or_default() += n;
                    }
                    self.shared += 1;
                    self.segment = Some(Segment::Shared);
                    return Ok(true);
                }
                Err(e) => {
                    tracing::warn!(error = %e, segment = %previous, "previous segment unreadable; writing it again");
                    for table in DOCUMENT_TABLES {
                        let _ = std::fs::remove_file(segment_file(&self.tmp, table, &name));
                    }
                }
            }
        }
        let tables = Tables::create(&self.tmp, &name, self.model.dim)?;
        self.segment = Some(Segment::Written(SegmentWriter::start(tables)?));
        Ok(false)
    }

    /// Links (or copies) the previous version's files of segment `previous` as segment `name`;
    /// their row counts, each file's footer read to check it.
    fn share(&self, previous: &str, name: &str) -> Result<Vec<usize>> {
        let Some(from_version) = self.previous.as_deref() else {
            return Err(StoreError::NotAGraph {
                path: self.graph.clone(),
                message: "no previous version".into(),
            });
        };
        let mut rows = Vec::with_capacity(DOCUMENT_TABLES.len());
        for table in DOCUMENT_TABLES {
            let from = segment_file(from_version, table, previous);
            let to = segment_file(&self.tmp, table, name);
            if std::fs::hard_link(&from, &to).is_err() {
                std::fs::copy(&from, &to).map_err(io_err(&from))?;
            }
            rows.push(parquet_rows(&to)?);
        }
        Ok(rows)
    }

    /// Closes the files of the segment being added to.
    fn end_segment(&mut self) -> Result<()> {
        if let Some(Segment::Written(writer)) = self.segment.take() {
            for (table, n) in DOCUMENT_TABLES.iter().zip(writer.finish()?) {
                *self.rows.entry(table.to_string()).or_default() += n;
            }
        }
        Ok(())
    }

    /// Adds a document of the segment begun last, with its embeddings and the RELATED edges
    /// that start from it (neither is needed in a shared segment). Documents must come in
    /// increasing id order (the tables' order). `reused_whole`: this run reused the document's
    /// part as it was (its judgments count as reused in the `runs` row).
    pub fn add(
        &mut self,
        doc: &Document,
        embedded: &[&UnitEmbedding],
        related: &[Edge],
        reused_whole: bool,
    ) -> Result<()> {
        if self
            .last
            .as_deref()
            .is_some_and(|last| last >= doc.id.as_str())
        {
            return Err(StoreError::NotAGraph {
                path: self.graph.clone(),
                message: format!("document {} added out of id order", doc.id),
            });
        }
        self.last = Some(doc.id.clone());
        let Some(segment) = self.segment.as_mut() else {
            return Err(StoreError::NotAGraph {
                path: self.graph.clone(),
                message: format!("document {} added before a segment was begun", doc.id),
            });
        };
        let edges = all_edges(&[doc], related);
        let c = &mut self.counts;
        c.documents += 1;
        c.units += doc.units.len();
        c.edges += edges.len();
        c.mentions += doc.mentions.len();
        c.broken += doc
            .mentions
            .iter()
            .filter(|m| matches!(m.resolution, Resolution::Broken { .. }))
            .count();
        c.diagnostics += doc.diagnostics.len();
        c.judgments += doc.judgments.len();
        c.reused += if reused_whole {
            doc.judgments.len()
        } else {
            doc.judgments.iter().filter(|j| j.reused).count()
        };
        c.failed += doc
            .judgments
            .iter()
            .filter(|j| matches!(j.outcome, ledger_core::JudgmentOutcome::Failed(_)))
            .count();
        if let Segment::Written(writer) = segment {
            writer.add(Tables::rows(doc, &edges, embedded, &self.model)?)?;
        }
        Ok(())
    }

    /// Writes the `runs` row (after the previous version's rows) and the manifest, then makes
    /// the version current: rename into `versions/`, swap the `current` symlink, prune.
    pub fn finish(mut self, run: &RunInfo) -> Result<Manifest> {
        self.end_segment()?;
        if self.segments.is_empty() {
            // No documents: one empty file per table, so that every folder reads as a table.
            self.begin_segment("no documents")?;
            self.end_segment()?;
        }
        let c = &self.counts;
        let runs = runs_batch(
            self.previous.as_deref(),
            run,
            [
                c.documents,
                c.units,
                c.edges,
                c.mentions,
                c.broken,
                c.diagnostics,
                c.judgments,
                c.reused,
                c.failed,
            ],
        )?;
        write_parquet(&segment_file(&self.tmp, "runs", "runs"), &runs)?;
        self.rows.insert("runs".to_string(), runs.num_rows());
        debug_assert_eq!(self.rows.len(), TABLES.len());
        let manifest = Manifest {
            schema_version: SCHEMA_VERSION,
            version: self.version,
            ledger_version: env!("CARGO_PKG_VERSION").into(),
            committed_at: now_rfc3339(),
            rows: std::mem::take(&mut self.rows),
            parts: run.parts.clone(),
            corpus_key: run.corpus_key.clone(),
            segments: std::mem::take(&mut self.segments),
            shared_segments: self.shared,
        };
        write_synced(
            &self.tmp.join("manifest.json"),
            &serde_json::to_vec_pretty(&manifest)?,
        )?;
        for table in TABLES {
            sync_dir(&self.tmp.join(table))?;
        }
        sync_dir(&self.tmp)?;
        let name = format!("{:06}", self.version);
        let final_dir = self.versions.join(&name);
        std::fs::rename(&self.tmp, &final_dir).map_err(io_err(&final_dir))?;
        sync_dir(&self.versions)?;
        // Swap the `current` symlink atomically.
        let graph = &self.graph;
        let link_tmp = graph.join(format!(".current-{}", std::process::id()));
        let _ = std::fs::remove_file(&link_tmp);
        std::os::unix::fs::symlink(Path::new("versions").join(&name), &link_tmp)
            .map_err(io_err(&link_tmp))?;
        let current = graph.join("current");
        std::fs::rename(&link_tmp, &current).map_err(io_err(&current))?;
        sync_dir(graph)?;
        prune(&self.versions, self.previous.as_deref(), &final_dir);
        tracing::info!(graph = %graph.display(), version = self.version, shared = manifest.shared_segments, segments = manifest.segments.len(), "committed graph version");
        Ok(manifest)
    }
}

/// The segments of a version folder: file key → file name (from its `units` folder).
fn segments_in(version: &Path) -> HashMap<String, String> {
    let Ok(entries) = std::fs::read_dir(version.join("units")) else {
        return HashMap::new();
    };
    entries
        .flatten()
        .filter_map(|e| {
            let name = e
                .file_name()
                .to_str()?
                .strip_suffix(".parquet")?
                .to_string();
            let key = name.split_once('-')?.1.to_string();
            Some((key, name))
        })
        .collect()
}

/// The row count in a Parquet file's footer (reading the footer checks the file).
fn parquet_rows(path: &Path) -> Result<usize> {
    let file = File::open(path).map_err(io_err(path))?;
    let metadata = parquet::file::metadata::ParquetMetaDataReader::new().parse_and_finish(&file)?;
    Ok(usize::try_from(metadata.file_metadata().num_rows()).unwrap_or(0))
}

impl Drop for GraphWriter {
    fn drop(&mut self) {
        // A segment's thread first, so that nothing writes into the folder being removed.
        self.segment = None;
        // Unfinished (finish renames the folder away first): nothing of this version stays.
        if self.tmp.exists() {
            let _ = std::fs::remove_dir_all(&self.tmp);
        }
    }
}

/// Writes a new version of the graph at `graph` from documents in memory and makes it current,
/// atomically (a [`GraphWriter`] fed every document in id order; each segment keyed by the JSON
/// of what its rows are made from).
pub fn write_graph(
    graph: &Path,
    docs: &[Document],
    corpus_diagnostics: &[Diagnostic],
    semantic: &Semantic,
    run: &RunInfo,
) -> Result<Manifest> {
    let mut sorted: Vec<&Document> = docs.iter().collect();
    sorted.sort_by(|a, b| a.id.cmp(&b.id));
    let dim = semantic
        .embeddings
        .first()
        .map_or(semantic.dim, |e| e.vector.len());
    let model = EmbeddingModel {
        model: semantic.model.clone(),
        summarizer: semantic.summarizer.clone(),
        dim,
    };
    let mut embedded: HashMap<&str, Vec<&UnitEmbedding>> = HashMap::new();
    for e in &semantic.embeddings {
        embedded.entry(e.doc_id.as_str()).or_default().push(e);
    }
    let mut related: HashMap<&str, Vec<Edge>> = HashMap::new();
    for e in &semantic.related {
        related
            .entry(e.src_doc.as_str())
            .or_default()
            .push(e.clone());
    }
    let mut writer = GraphWriter::create(graph, model, corpus_diagnostics)?;
    for segment in sorted.split_inclusive(|d| ends_segment(&d.id)) {
        let mut key = Vec::new();
        for doc in segment {
            let id = doc.id.as_str();
            serde_json::to_writer(&mut key, doc)?;
            serde_json::to_writer(&mut key, &embedded.get(id))?;
            serde_json::to_writer(&mut key, &related.get(id))?;
        }
        writer.begin_segment(&ledger_core::content_hash(&key))?;
        for doc in segment {
            let id = doc.id.as_str();
            writer.add(
                doc,
                embedded.get(id).map_or(&[], Vec::as_slice),
                related.get(id).map_or(&[], Vec::as_slice),
                false,
            )?;
        }
    }
    writer.finish(run)
}

fn next_version(versions: &Path) -> Result<u64> {
    let mut max = 0;
    for e in std::fs::read_dir(versions).map_err(io_err(versions))? {
        let e = e.map_err(io_err(versions))?;
        if let Some(n) = e.file_name().to_str().and_then(|n| n.parse::<u64>().ok()) {
            max = max.max(n);
        }
    }
    Ok(max + 1)
}

/// Removes versions other than the new and the previous one (readers may still hold the previous).
fn prune(versions: &Path, previous: Option<&Path>, current: &Path) {
    let Ok(entries) = std::fs::read_dir(versions) else {
        return;
    };
    let keep: Vec<PathBuf> = [Some(current), previous]
        .into_iter()
        .flatten()
        .filter_map(|p| p.canonicalize().ok())
        .collect();
    for e in entries.flatten() {
        let p = e.path();
        let name = e.file_name();
        let name = name.to_string_lossy();
        let stale_tmp = name.starts_with(".tmp-");
        let old = name.parse::<u64>().is_ok()
            && p.canonicalize()
                .map(|c| !keep.contains(&c))
                .unwrap_or(false);
        if old || (stale_tmp && !name.ends_with(&format!("-{}", std::process::id()))) {
            let _ = std::fs::remove_dir_all(&p);
        }
    }
}

fn write_parquet(path: &Path, batch: &RecordBatch) -> Result<()> {
    let file = File::create(path).map_err(io_err(path))?;
    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(3)?))
        .set_created_by(format!("ledger {}", env!("CARGO_PKG_VERSION")))
        .build();
    let mut writer = ArrowWriter::try_new(file, batch.schema(), Some(props))?;
    writer.write(batch)?;
    let file = writer.into_inner()?;
    file.sync_all().map_err(io_err(path))?;
    Ok(())
}

fn write_synced(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    let mut f = File::create(path).map_err(io_err(path))?;
    f.write_all(bytes).map_err(io_err(path))?;
    f.sync_all().map_err(io_err(path))
}

pub(crate) fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_err(dir))
}

/// The current UTC time as RFC 3339 (`2026-12-02T12:00:00Z`).
pub fn now_rfc3339() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    rfc3339(secs)
}

/// Formats seconds since the Unix epoch as RFC 3339 UTC (civil-from-days, Howard Hinnant).
pub fn rfc3339(secs: i64) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_segment_thread_that_stops_is_an_error_not_a_hang() {
        use arrow::array::Int64Array;
        use arrow::datatypes::{DataType, Field, Schema};
        let dir = tempfile::tempdir().expect("tempdir");
        for table in DOCUMENT_TABLES {
            std::fs::create_dir_all(dir.path().join(table)).expect("mkdir");
        }
        let tables = Tables::create(dir.path(), "000001-test", 4).expect("files");
        let mut writer = SegmentWriter::start(tables).expect("thread");
        // Rows of another schema: the thread stops (arrow panics on them) when it writes them.
        let wrong = RecordBatch::try_new(
            Arc::new(Schema::new(vec![Field::new("x", DataType::Int64, false)])),
            vec![Arc::new(Int64Array::from(vec![1i64]))],
        )
        .expect("batch");
        writer
            .add(std::array::from_fn(|_| wrong.clone()))
            .expect("queued");
        let err = writer.finish().expect_err("rows of another schema");
        assert!(
            err.to_string().contains(
                "a thread writing a segment): it stopped without a result: index out of bounds"
            ),
            "{err}"
        );
    }

    #[test]
    fn rfc3339_known_dates() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_798_761_600), "2027-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
    }

    #[test]
    fn failed_write_leaves_no_version() {
        let dir = tempfile::tempdir().expect("tempdir");
        let v = dir.path().join("versions");
        std::fs::create_dir_all(&v).expect("mkdir");
        assert_eq!(next_version(&v).expect("read"), 1);
        std::fs::create_dir_all(v.join("000004")).expect("mkdir");
        assert_eq!(next_version(&v).expect("read"), 5);
    }

    #[test]
    fn runs_of_the_older_layout_are_cast_to_timestamps() {
        use arrow::datatypes::{DataType, Field, Schema};
        // The layout before times were timestamps: the same columns, times as text.
        let old = Schema::new(
            RUNS.fields()
                .iter()
                .map(|f| match f.data_type() {
                    DataType::Timestamp(..) => Field::new(f.name(), DataType::Utf8, false),
                    _ => f.as_ref().clone(),
                })
                .collect::<Vec<_>>(),
        );
        let columns: Vec<ArrayRef> = old
            .fields()
            .iter()
            .map(|f| -> ArrayRef {
                match f.data_type() {
                    DataType::Utf8 if f.name().ends_with("_at") => {
                        strings(["2026-12-01T02:00:00Z"])
                    }
                    DataType::Utf8 => strings(["x"]),
                    DataType::Float64 => Arc::new(Float64Array::from(vec![1.5])),
                    _ => Arc::new(Int64Array::from(vec![7])),
                }
            })
            .collect();
        let batch = RecordBatch::try_new(Arc::new(old), columns).expect("old batch");
        let now = as_runs(&batch).expect("cast");
        assert_eq!(now.schema(), *RUNS);
        let at = now
            .column(1)
            .as_any()
            .downcast_ref::<arrow::array::TimestampMicrosecondArray>()
            .expect("timestamps");
        assert_eq!(at.value(0), 1_796_090_400_000_000);
        // Columns it does not have: not runs.
        let other = RecordBatch::try_new(
            Arc::new(Schema::new(vec![Field::new("x", DataType::Int64, false)])),
            vec![Arc::new(Int64Array::from(vec![1])) as ArrayRef],
        )
        .expect("batch");
        assert!(as_runs(&other).is_none());
    }
}
