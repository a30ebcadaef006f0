//! Arrow schemas of the graph tables: the one place the persisted layout is defined.
//! Column names are part of the user-facing SQL; bump [`SCHEMA_VERSION`] on any change.

use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use std::sync::{Arc, LazyLock};

/// Version of the table layout, stored in every graph's `manifest.json`.
pub const SCHEMA_VERSION: u32 = 7;

/// The tables of a graph, in the order they are written.
pub const TABLES: [&str; 10] = [
    "documents",
    "units",
    "edges",
    "mentions",
    "labels",
    "diagnostics",
    "embeddings",
    "judgments",
    "inputs",
    "runs",
];

/// The type of the `runs` times: UTC, microseconds.
pub(crate) fn timestamp() -> DataType {
    DataType::Timestamp(arrow::datatypes::TimeUnit::Microsecond, Some("UTC".into()))
}

fn s(name: &str) -> Field {
    Field::new(name, DataType::Utf8, false)
}
fn so(name: &str) -> Field {
    Field::new(name, DataType::Utf8, true)
}
fn i(name: &str) -> Field {
    Field::new(name, DataType::Int64, false)
}

/// `documents(doc_id, path, format, content_hash, bytes, tokens, files, units)`.
pub static DOCUMENTS: LazyLock<SchemaRef> = LazyLock::new(|| {
    Arc::new(Schema::new(vec![
        s("doc_id"),
        s("path"),
        s("format"),
        s("content_hash"),
        i("bytes"),
        i("tokens"),
        i("files"),
        i("units"),
    ]))
});

/// `units(doc_id, unit_id, kind, env, level, label, number, title, parent_id, ordinal, source_path, start_byte, end_byte, line, tokens, content_hash, text)`.
pub static UNITS: LazyLock<SchemaRef> = LazyLock::new(|| {
    Arc::new(Schema::new(vec![
        s("doc_id"),
        s("unit_id"),
        s("kind"),
        s("env"),
        Field::new("level", DataType::Int32, false),
        so("label"),
        so("number"),
        so("title"),
        so("parent_id"),
        i("ordinal"),
        s("source_path"),
        i("start_byte"),
        i("end_byte"),
        i("line"),
        i("tokens"),
        s("content_hash"),
        s("text"),
    ]))
});

/// `edges(src_doc, src_unit, dst_doc, dst_unit, kind, score, evidence)`.
pub static EDGES: LazyLock<SchemaRef> = LazyLock::new(|| {
    Arc::new(Schema::new(vec![
        s("src_doc"),
        s("src_unit"),
        s("dst_doc"),
        s("dst_unit"),
        s("kind"),
        Field::new("score", DataType::Float64, false),
        s("evidence"),
    ]))
});

/// `mentions(doc_id, unit_id, source_path, line, col, start_byte, end_byte, text, mention_kind, target_key, target_doc, target_unit, status, reason)`.
pub static MENTIONS: LazyLock<SchemaRef> = LazyLock::new(|| {
    Arc::new(Schema::new(vec![
        s("doc_id"),
        s("unit_id"),
        s("source_path"),
        i("line"),
        i("col"),
        i("start_byte"),
        i("end_byte"),
        s("text"),
        s("mention_kind"),
        s("target_key"),
        so("target_doc"),
        so("target_unit"),
        s("status"),
        so("reason"),
    ]))
});

/// `labels(doc_id, label, unit_id, number)`: every label or anchor and the unit it names.
pub static LABELS: LazyLock<SchemaRef> = LazyLock::new(|| {
    Arc::new(Schema::new(vec![
        s("doc_id"),
        s("label"),
        s("unit_id"),
        so("number"),
    ]))
});

/// `inputs(doc_id, path, kind, hash)`: every path a document's parse looked at. `kind` is `read`
/// (a file read; `hash` is the blake3 of its bytes), `exists` or `absent` (a path checked or looked
/// for), or `listing` (a folder whose Markdown files were listed; `hash` of the list). A rerun whose
/// observations all hold again reuses the document without parsing it.
pub static INPUTS: LazyLock<SchemaRef> = LazyLock::new(|| {
    Arc::new(Schema::new(vec![
        s("doc_id"),
        s("path"),
        s("kind"),
        s("hash"),
    ]))
});

/// `diagnostics(doc_id, source_path, line, severity, message)`.
pub static DIAGNOSTICS: LazyLock<SchemaRef> = LazyLock::new(|| {
    Arc::new(Schema::new(vec![
        so("doc_id"),
        s("source_path"),
        i("line"),
        s("severity"),
        s("message"),
    ]))
});

/// `runs(run_id, started_at, finished_at, command, inputs, documents, units, edges, mentions, broken, diagnostics, seconds, judged_units, reused_judgments, failed_judgments, llm_requests, llm_prompt_tokens, llm_completion_tokens, ledger_version, schema_version)`:
/// the `llm_*` columns count what this run sent to chat endpoints (DEPENDS judge and summarizer);
/// `started_at` and `finished_at` are timestamps (UTC, microseconds), `seconds` the whole run.
pub static RUNS: LazyLock<SchemaRef> = LazyLock::new(|| {
    Arc::new(Schema::new(vec![
        i("run_id"),
        Field::new("started_at", timestamp(), false),
        Field::new("finished_at", timestamp(), false),
        s("command"),
        s("inputs"),
        i("documents"),
        i("units"),
        i("edges"),
        i("mentions"),
        i("broken"),
        i("diagnostics"),
        Field::new("seconds", DataType::Float64, false),
        i("judged_units"),
        i("reused_judgments"),
        i("failed_judgments"),
        i("llm_requests"),
        i("llm_prompt_tokens"),
        i("llm_completion_tokens"),
        s("ledger_version"),
        i("schema_version"),
    ]))
});

/// `embeddings(doc_id, unit_id, model, summarizer, input_hash, summary, summary_hash, vector,
/// scale)`; the unit's L2-normalised vector is `vector[i] × scale`: `vector` is a
/// `FixedSizeList<Int8>` of the model's dimension and `scale` the largest element's magnitude
/// over 127 ([`ledger_core::quantize`]). `(summarizer, input_hash)` keys the summary cache and `(model,
/// summary_hash)` the vector cache of the next run.
pub fn embeddings(dim: usize) -> SchemaRef {
    Arc::new(Schema::new(vec![
        s("doc_id"),
        s("unit_id"),
        s("model"),
        s("summarizer"),
        s("input_hash"),
        s("summary"),
        s("summary_hash"),
        Field::new(
            "vector",
            DataType::FixedSizeList(
                Arc::new(Field::new("item", DataType::Int8, false)),
                dim as i32,
            ),
            false,
        ),
        Field::new("scale", DataType::Float32, false),
    ]))
}

/// `judgments(doc_id, unit_id, judge, cache_key, status, candidates, verdicts, error, requests, prompt_tokens, completion_tokens, reused)`:
/// one row per judged unit. `status` is `ok` or `failed`; `candidates` lists the candidate unit
/// ids in order; `verdicts` is a JSON array aligned with them (`{"depends", "elements"}`),
/// empty for a failed judgment, whose `error` says why. `reused`: the judgment came from an
/// earlier run's cache when the document was last processed (a document whose part a run reuses
/// whole keeps its rows as they were; the `runs` table counts what each run reused).
pub static JUDGMENTS: LazyLock<SchemaRef> = LazyLock::new(|| {
    Arc::new(Schema::new(vec![
        s("doc_id"),
        s("unit_id"),
        s("judge"),
        s("cache_key"),
        s("status"),
        Field::new(
            "candidates",
            DataType::List(Arc::new(Field::new("item", DataType::Utf8, false))),
            false,
        ),
        s("verdicts"),
        so("error"),
        i("requests"),
        i("prompt_tokens"),
        i("completion_tokens"),
        Field::new("reused", DataType::Boolean, false),
    ]))
});
