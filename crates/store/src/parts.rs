//! Parts: what the per-document stage produced for one document, one Parquet file each, named by
//! a key that fixes its content (document id, content hash, pipeline settings). The rows are the
//! document's `embeddings` table; the document itself (units, mentions, diagnostics, judgments,
//! DEPENDS edges) and its RELATED edges (document scope) are JSON in the file's footer metadata,
//! zstd-compressed and base64-encoded (a footer value is a string): the document's JSON is some
//! four times its source, and six times smaller compressed. Beside them, a few bytes of plain
//! JSON summarise the part ([`PartSummary`]): a rerun reuses an unchanged document's part on them
//! alone.
//!
//! Parts live in a [`PartStore`]: the graph's `parts/` folder by default, or any folder or
//! S3-compatible bucket given by URL, so that workers on several machines write to one place. A
//! part appears whole or not at all (a local file is written aside, fsynced and renamed; an
//! object PUT is atomic), and writing the same key twice (a redelivered job) leaves one
//! identical part.

use crate::read::embeddings_from;
use crate::write::{embeddings_batch, sync_dir};
use crate::{Result, StoreError, io_err};
use bytes::Bytes;
use ledger_core::{Document, Edge, PartSummary, Semantic};
use object_store::{ObjectStore, ObjectStoreExt};
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::metadata::{KeyValue, ParquetMetaData, ParquetMetaDataReader};
use parquet::file::properties::WriterProperties;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

const DOCUMENT: &str = "ledger.document.zst";
const MODEL: &str = "ledger.model";
const SUMMARIZER: &str = "ledger.summarizer";
const DIM: &str = "ledger.dim";
const RELATED: &str = "ledger.related.zst";
/// The part's [`PartSummary`], plain JSON: what a rerun reads of an unchanged document.
const SUMMARY: &str = "ledger.summary";
/// The footer keys of the document and its RELATED edges as plain JSON, as parts written before
/// they were compressed hold them: still read, so that such parts stay a cache.
const PLAIN: [(&str, &str); 2] = [(DOCUMENT, "ledger.document"), (RELATED, "ledger.related")];
/// zstd's level for the footer's JSON (as for the tables' pages).
const JSON_LEVEL: i32 = 3;

/// What the footer of a part holds ([`PartStore::read_head`]).
#[derive(Debug, Clone)]
pub struct PartHead {
    /// The document.
    pub doc: Document,
    /// The RELATED edges found for it in the document stage.
    pub related: Vec<Edge>,
    /// How many embeddings the part holds.
    pub embeddings: usize,
}

/// Where parts are kept.
#[derive(Debug, Clone)]
pub enum PartStore {
    /// A local (or mounted) folder.
    Local(PathBuf),
    /// Object storage: the store, the key prefix, and the URL it was opened from.
    Object {
        /// The object store.
        store: Arc<dyn ObjectStore>,
        /// Prefix of every part's key.
        prefix: object_store::path::Path,
        /// The URL, for messages and jobs.
        url: String,
    },
}

fn object_error(url: &str, e: object_store::Error) -> StoreError {
    StoreError::Io {
        path: PathBuf::from(url),
        source: std::io::Error::other(e.to_string()),
    }
}

impl PartStore {
    /// The `parts/` folder of a local graph.
    pub fn of_graph(graph: &Path) -> PartStore {
        PartStore::Local(graph.join("parts"))
    }

    /// Opens `location`: `s3://bucket/prefix` (credentials, region and endpoint from the usual
    /// `AWS_*` variables; `AWS_ALLOW_HTTP=true` for a plain-HTTP server), `file:///folder`, or a
    /// folder path.
    pub fn open(location: &str) -> Result<PartStore> {
        if let Some(rest) = location.strip_prefix("s3://") {
            let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
            let store = object_store::aws::AmazonS3Builder::from_env()
                .with_bucket_name(bucket)
                .build()
                .map_err(|e| object_error(location, e))?;
            return Ok(PartStore::Object {
                store: Arc::new(store),
                prefix: object_store::path::Path::from(prefix.trim_matches('/')),
                url: location.to_string(),
            });
        }
        if location.contains("://") && !location.starts_with("file://") {
            return Err(StoreError::NotAGraph {
                path: PathBuf::from(location),
                message: "part store URL: expected s3://bucket/prefix, file:///folder or a folder"
                    .into(),
            });
        }
        let folder = location.strip_prefix("file://").unwrap_or(location);
        Ok(PartStore::Local(PathBuf::from(folder)))
    }

    /// The location as a string another process can [`PartStore::open`].
    pub fn url(&self) -> String {
        match self {
            PartStore::Local(dir) => dir.display().to_string(),
            PartStore::Object { url, .. } => url.clone(),
        }
    }

    /// `key`, when it may name a part: letters, digits and `-` only, so that no key (a queue
    /// message's, say) reaches outside the store (`../x`, `/etc/x`).
    fn checked<'k>(&self, key: &'k str) -> Result<&'k str> {
        if is_key(key) {
            Ok(key)
        } else {
            Err(StoreError::NotAGraph {
                path: PathBuf::from(self.url()),
                message: format!("invalid part key {key:?}"),
            })
        }
    }

    fn object_path(prefix: &object_store::path::Path, key: &str) -> object_store::path::Path {
        prefix.clone().join(format!("{key}.parquet"))
    }

    /// The local file of part `key` (for a local store).
    pub fn local_path(&self, key: &str) -> Option<PathBuf> {
        match self {
            PartStore::Local(dir) if is_key(key) => Some(dir.join(format!("{key}.parquet"))),
            PartStore::Local(_) => None,
            PartStore::Object { .. } => None,
        }
    }

    /// Whether part `key` exists (whole: parts appear atomically).
    pub fn has(&self, key: &str) -> bool {
        if !is_key(key) {
            return false;
        }
        match self {
            PartStore::Local(dir) => dir.join(format!("{key}.parquet")).is_file(),
            PartStore::Object { store, prefix, .. } => {
                let path = Self::object_path(prefix, key);
                ledger_runtime::block_on(async { store.head(&path).await.is_ok() }).unwrap_or(false)
            }
        }
    }

    /// Writes part `key`: `doc` and its embeddings (`semantic.embeddings` of this document only),
    /// durably before returning.
    pub fn write(&self, key: &str, doc: &Document, semantic: &Semantic) -> Result<()> {
        let key = self.checked(key)?;
        let bytes = encode(doc, semantic)?;
        match self {
            PartStore::Local(dir) => {
                std::fs::create_dir_all(dir).map_err(io_err(dir))?;
                let tmp = dir.join(format!(
                    ".tmp-{key}-{}-{:?}",
                    std::process::id(),
                    std::thread::current().id()
                ));
                let written = (|| {
                    use std::io::Write;
                    let mut f = std::fs::File::create(&tmp)?;
                    f.write_all(&bytes)?;
                    f.sync_all()
                })();
                if let Err(e) = written {
                    let _ = std::fs::remove_file(&tmp);
                    return Err(io_err(&tmp)(e));
                }
                let path = dir.join(format!("{key}.parquet"));
                std::fs::rename(&tmp, &path).map_err(io_err(&path))?;
                sync_dir(dir)
            }
            PartStore::Object { store, prefix, url } => {
                let path = Self::object_path(prefix, key);
                ledger_runtime::block_on(async { store.put(&path, bytes.into()).await })
                    .map_err(io_err(Path::new(url)))?
                    .map(|_| ())
                    .map_err(|e| object_error(url, e))
            }
        }
    }

    /// Reads part `key` back: the document and its embeddings.
    pub fn read(&self, key: &str) -> Result<(Document, Semantic)> {
        let (bytes, name) = self.bytes(key)?;
        decode(bytes, &name)
    }

    /// Reads the document of part `key` only, from the file's footer (its embeddings are not
    /// decoded; of a local part, only the footer is read).
    pub fn read_document(&self, key: &str) -> Result<Document> {
        let (metadata, name) = self.footer(key)?;
        let meta = metadata.file_metadata().key_value_metadata();
        json(meta, DOCUMENT, &name)
    }

    /// Reads the summary of part `key` from its footer (of a local part, only the footer is
    /// read, and nothing is decompressed); `None` for a part written before parts had one.
    pub fn read_summary(&self, key: &str) -> Result<Option<PartSummary>> {
        let (metadata, name) = self.footer(key)?;
        let meta = metadata.file_metadata().key_value_metadata();
        match value(meta, SUMMARY, &name) {
            Ok(text) => Ok(Some(serde_json::from_str(text)?)),
            Err(_) => Ok(None),
        }
    }

    /// Reads what the footer of part `key` holds: the document, its RELATED edges and how many
    /// embeddings the part has (the vectors are not decoded).
    pub fn read_head(&self, key: &str) -> Result<PartHead> {
        let (metadata, name) = self.footer(key)?;
        let meta = metadata.file_metadata().key_value_metadata();
        Ok(PartHead {
            doc: json(meta, DOCUMENT, &name)?,
            related: json(meta, RELATED, &name)?,
            embeddings: usize::try_from(metadata.file_metadata().num_rows()).unwrap_or(0),
        })
    }

    /// Reads the embeddings of part `key` (with its model names and RELATED edges), leaving its
    /// document undecoded.
    pub fn read_semantic(&self, key: &str) -> Result<Semantic> {
        let (bytes, name) = self.bytes(key)?;
        let builder = ParquetRecordBatchReaderBuilder::try_new(bytes)?;
        let metadata = builder.metadata().clone();
        semantic_from(builder.build()?, &metadata, &name)
    }

    /// The footer of part `key`, with its name for messages.
    fn footer(&self, key: &str) -> Result<(ParquetMetaData, PathBuf)> {
        let key = self.checked(key)?;
        Ok(match self {
            PartStore::Local(dir) => {
                let path = dir.join(format!("{key}.parquet"));
                let file = std::fs::File::open(&path).map_err(io_err(&path))?;
                (ParquetMetaDataReader::new().parse_and_finish(&file)?, path)
            }
            PartStore::Object { .. } => {
                let (bytes, name) = self.bytes(key)?;
                (ParquetMetaDataReader::new().parse_and_finish(&bytes)?, name)
            }
        })
    }

    /// The bytes of part `key`, with its name for messages.
    fn bytes(&self, key: &str) -> Result<(Bytes, PathBuf)> {
        let key = self.checked(key)?;
        Ok(match self {
            PartStore::Local(dir) => {
                let path = dir.join(format!("{key}.parquet"));
                (
                    Bytes::from(std::fs::read(&path).map_err(io_err(&path))?),
                    path,
                )
            }
            PartStore::Object { store, prefix, url } => {
                let path = Self::object_path(prefix, key);
                let bytes = ledger_runtime::block_on(async {
                    match store.get(&path).await {
                        Ok(r) => r.bytes().await,
                        Err(e) => Err(e),
                    }
                })
                .map_err(io_err(Path::new(url)))?
                .map_err(|e| object_error(url, e))?;
                (bytes, PathBuf::from(format!("{url}/{key}.parquet")))
            }
        })
    }

    /// Removes the parts whose keys are not in `keep`, and temporary files of crashed writers
    /// older than an hour.
    pub fn prune(&self, keep: &HashSet<String>) {
        match self {
            PartStore::Local(dir) => prune_folder(dir, keep),
            PartStore::Object { store, prefix, .. } => {
                // Pruning is best effort: a runtime that cannot start leaves the parts.
                let _ = ledger_runtime::block_on(async {
                    use futures::StreamExt;
                    let mut listing = store.list(Some(prefix));
                    let mut stale = Vec::new();
                    while let Some(Ok(meta)) = listing.next().await {
                        let name = meta.location.filename().unwrap_or_default();
                        if let Some(key) = name.strip_suffix(".parquet")
                            && !keep.contains(key)
                        {
                            stale.push(meta.location.clone());
                        }
                    }
                    for path in stale {
                        let _ = store.delete(&path).await;
                    }
                });
            }
        }
    }
}

/// A part as Parquet bytes.
fn encode(doc: &Document, semantic: &Semantic) -> Result<Vec<u8>> {
    let batch = embeddings_batch(semantic)?;
    let metadata = vec![
        KeyValue::new(DOCUMENT.into(), compressed_json(doc)?),
        KeyValue::new(MODEL.into(), semantic.model.clone()),
        KeyValue::new(SUMMARIZER.into(), semantic.summarizer.clone()),
        KeyValue::new(DIM.into(), semantic.dim.to_string()),
        KeyValue::new(RELATED.into(), compressed_json(&semantic.related)?),
        KeyValue::new(
            SUMMARY.into(),
            serde_json::to_string(&PartSummary::of(doc, semantic))?,
        ),
    ];
    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(3)?))
        .set_created_by(format!("ledger {}", env!("CARGO_PKG_VERSION")))
        .set_key_value_metadata(Some(metadata))
        .build();
    let mut out = Vec::new();
    let mut writer = ArrowWriter::try_new(&mut out, batch.schema(), Some(props))?;
    writer.write(&batch)?;
    writer.close()?;
    Ok(out)
}

/// `value` as JSON, zstd-compressed and base64-encoded.
fn compressed_json<T: serde::Serialize>(value: &T) -> Result<String> {
    use base64::Engine;
    let json = serde_json::to_vec(value)?;
    let packed = zstd::bulk::compress(&json, JSON_LEVEL).map_err(io_err(Path::new("zstd")))?;
    Ok(base64::engine::general_purpose::STANDARD.encode(packed))
}

/// The value of footer metadata `key` ([`compressed_json`]), or of its plain JSON key in a part
/// written before the JSON was compressed ([`PLAIN`]); `name` is for messages.
fn json<T: serde::de::DeserializeOwned>(
    meta: Option<&Vec<KeyValue>>,
    key: &str,
    name: &Path,
) -> Result<T> {
    use base64::Engine;
    let plain = PLAIN.iter().find(|(k, _)| *k == key).map(|(_, p)| *p);
    if let Some(old) = plain
        && let Ok(text) = value(meta, old, name)
    {
        return Ok(serde_json::from_str(text)?);
    }
    let broken = |what: String| StoreError::NotAGraph {
        path: name.to_path_buf(),
        message: format!("part metadata `{key}`: {what}"),
    };
    let packed = base64::engine::general_purpose::STANDARD
        .decode(value(meta, key, name)?)
        .map_err(|e| broken(e.to_string()))?;
    let json = zstd::decode_all(packed.as_slice()).map_err(|e| broken(e.to_string()))?;
    Ok(serde_json::from_slice(&json)?)
}

/// The value of footer metadata `key`; `name` is for messages.
fn value<'a>(meta: Option<&'a Vec<KeyValue>>, key: &str, name: &Path) -> Result<&'a str> {
    meta.into_iter()
        .flatten()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_deref())
        .ok_or_else(|| StoreError::NotAGraph {
            path: name.to_path_buf(),
            message: format!("part has no `{key}` metadata"),
        })
}

/// A part from its Parquet bytes; `name` is for messages.
fn decode(bytes: Bytes, name: &Path) -> Result<(Document, Semantic)> {
    let builder = ParquetRecordBatchReaderBuilder::try_new(bytes)?;
    let metadata = builder.metadata().clone();
    let meta = metadata.file_metadata().key_value_metadata();
    let doc: Document = json(meta, DOCUMENT, name)?;
    let semantic = semantic_from(builder.build()?, &metadata, name)?;
    Ok((doc, semantic))
}

/// A part's embeddings from its rows, with the model names and RELATED edges of its footer.
fn semantic_from(
    rows: parquet::arrow::arrow_reader::ParquetRecordBatchReader,
    metadata: &ParquetMetaData,
    name: &Path,
) -> Result<Semantic> {
    let meta = metadata.file_metadata().key_value_metadata();
    let mut semantic = embeddings_from(rows)?;
    semantic.model = value(meta, MODEL, name)?.to_string();
    semantic.summarizer = value(meta, SUMMARIZER, name)?.to_string();
    semantic.dim = value(meta, DIM, name)?.parse().unwrap_or(semantic.dim);
    semantic.related = json(meta, RELATED, name)?;
    Ok(semantic)
}

fn prune_folder(dir: &Path, keep: &HashSet<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
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

/// Whether `key` may name a part: not empty, letters, digits and `-` only.
fn is_key(key: &str) -> bool {
    !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
}
