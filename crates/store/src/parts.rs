//! Parts: what the per-document stage produced for one document, one Parquet file each under
//! `GRAPH/parts/`, named by a key that fixes its content (document id, content hash, pipeline
//! settings). The rows are the document's `embeddings` table; the document itself (units,
//! mentions, diagnostics, judgments, DEPENDS edges) is JSON in the file's footer metadata.
//!
//! A part is written to a temporary file, fsynced and renamed into place: it exists whole or not
//! at all, and writing the same key twice (a redelivered job) leaves one identical file.

use crate::read::embeddings_from;
use crate::write::{embeddings_batch, sync_dir, write_parquet_with};
use crate::{Result, StoreError, io_err};
use ledger_core::{Document, Semantic};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::file::metadata::KeyValue;
use std::path::{Path, PathBuf};

const DOCUMENT: &str = "ledger.document";
const MODEL: &str = "ledger.model";
const SUMMARIZER: &str = "ledger.summarizer";
const DIM: &str = "ledger.dim";

/// The folder of a graph's parts.
pub fn parts_dir(graph: &Path) -> PathBuf {
    graph.join("parts")
}

/// The file of part `key`.
pub fn part_path(graph: &Path, key: &str) -> PathBuf {
    parts_dir(graph).join(format!("{key}.parquet"))
}

/// Whether part `key` has been written (whole: parts appear by rename).
pub fn has_part(graph: &Path, key: &str) -> bool {
    part_path(graph, key).is_file()
}

/// Writes part `key`: `doc` and its embeddings (`semantic.embeddings` of this document only),
/// durably (file and folder fsynced) before returning.
pub fn write_part(graph: &Path, key: &str, doc: &Document, semantic: &Semantic) -> Result<()> {
    if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
        return Err(StoreError::NotAGraph {
            path: graph.to_path_buf(),
            message: format!("invalid part key {key:?}"),
        });
    }
    let dir = parts_dir(graph);
    std::fs::create_dir_all(&dir).map_err(io_err(&dir))?;
    let batch = embeddings_batch(semantic)?;
    let metadata = vec![
        KeyValue::new(DOCUMENT.into(), serde_json::to_string(doc)?),
        KeyValue::new(MODEL.into(), semantic.model.clone()),
        KeyValue::new(SUMMARIZER.into(), semantic.summarizer.clone()),
        KeyValue::new(DIM.into(), semantic.dim.to_string()),
    ];
    let tmp = dir.join(format!(
        ".tmp-{key}-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let result = write_parquet_with(&tmp, &batch, metadata);
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    let path = part_path(graph, key);
    std::fs::rename(&tmp, &path).map_err(io_err(&path))?;
    sync_dir(&dir)
}

/// Reads part `key` back: the document and its embeddings.
pub fn read_part(graph: &Path, key: &str) -> Result<(Document, Semantic)> {
    let path = part_path(graph, key);
    let file = std::fs::File::open(&path).map_err(io_err(&path))?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(file)?;
    let meta = builder
        .metadata()
        .file_metadata()
        .key_value_metadata()
        .cloned()
        .unwrap_or_default();
    let get = |k: &str| {
        meta.iter()
            .find(|kv| kv.key == k)
            .and_then(|kv| kv.value.clone())
            .ok_or_else(|| StoreError::NotAGraph {
                path: path.clone(),
                message: format!("part has no `{k}` metadata"),
            })
    };
    let doc: Document = serde_json::from_str(&get(DOCUMENT)?)?;
    let mut semantic = embeddings_from(builder.build()?)?;
    semantic.model = get(MODEL)?;
    semantic.summarizer = get(SUMMARIZER)?;
    semantic.dim = get(DIM)?.parse().unwrap_or(semantic.dim);
    Ok((doc, semantic))
}

/// Removes the parts whose keys are not in `keep` (after a commit that no longer needs them) and
/// temporary files left by crashed writers.
pub fn prune_parts(graph: &Path, keep: &std::collections::HashSet<String>) {
    let Ok(entries) = std::fs::read_dir(parts_dir(graph)) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        // A temporary file may belong to a writer still at work; only old ones are debris.
        let old = || {
            e.metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age.as_secs() > 3600)
        };
        let stale = match name.strip_suffix(".parquet") {
            Some(key) if !name.starts_with(".tmp-") => !keep.contains(key),
            _ => name.starts_with(".tmp-") && old(),
        };
        if stale {
            let _ = std::fs::remove_file(e.path());
        }
    }
}
