//! The graph store: Parquet tables written atomically, and DataFusion SQL over them.
//!
//! A graph is a folder:
//!
//! ```text
//! GRAPH/current -> versions/000007        (symlink, swapped atomically on commit)
//! GRAPH/versions/000007/<table>/NNNNNN-<key>.parquet   (one file per segment of documents)
//! GRAPH/versions/000007/runs/runs.parquet
//! GRAPH/versions/000007/manifest.json     (schema version, row counts, segments)
//! ```
//!
//! Every table is a folder of Parquet files (a dataset): readers (DataFusion, pyarrow, DuckDB)
//! open `GRAPH/current/<table>/` as plain Parquet, and the file names sort in document-id order.
//! Segments of documents that did not change are the previous version's files, hard-linked.
//! A crash before the symlink swap leaves the previous version current. This is the only crate
//! that touches Arrow, Parquet or DataFusion.

mod lock;
mod parts;
mod read;
mod schema;
mod sql;
mod sql_limits;
mod write;

pub use lock::GraphLock;
pub use parts::{PartHead, PartStore};
pub use read::{Parsed, read_edges, read_embeddings, read_judgments, read_parsed, read_units};
pub use schema::{SCHEMA_VERSION, TABLES};
pub use sql::{OutputFormat, SqlSession};
pub use sql_limits::{Limit, SqlLimits, human_bytes, machine_memory};
pub use write::{
    EmbeddingModel, GraphWriter, Manifest, RunInfo, ends_segment, now_rfc3339, rfc3339, write_graph,
};

use std::path::{Path, PathBuf};

/// Errors of the store, by category.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A file or folder could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The path involved.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The folder is not a LEDGER graph, or was written with another schema version.
    #[error("{path}: {message}")]
    NotAGraph {
        /// The graph folder.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// Arrow or Parquet failed to encode or decode a table.
    #[error("parquet: {0}")]
    Parquet(#[from] parquet::errors::ParquetError),
    /// Arrow failed to build a batch.
    #[error("arrow: {0}")]
    Arrow(#[from] arrow::error::ArrowError),
    /// DataFusion rejected or failed a query.
    #[error("{0}")]
    Sql(#[from] datafusion::error::DataFusionError),
    /// Another process is writing the graph, and the caller chose not to wait.
    #[error(
        "{graph} is being written by another ledger process ({holder}); try again when it has finished, or wait for it (without --no-wait)"
    )]
    Locked {
        /// The graph folder.
        graph: PathBuf,
        /// What the lock file says about its holder.
        holder: String,
    },
    /// A SQL statement reached one of its limits and was stopped.
    #[error("the statement was stopped: it reached {0}")]
    LimitExceeded(Limit),
    /// The manifest could not be encoded or decoded.
    #[error("manifest: {0}")]
    Manifest(#[from] serde_json::Error),
}

/// Result of store operations.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

pub(crate) fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The folder holding the current version of a graph, checked against the schema version.
pub fn current_version(graph: &Path) -> Result<PathBuf> {
    let current = graph.join("current");
    let dir = std::fs::canonicalize(&current).map_err(|_| StoreError::NotAGraph {
        path: graph.to_path_buf(),
        message: "not a LEDGER graph (no `current` version); create one with `ledger index PATH --out GRAPH`".into(),
    })?;
    let manifest = Manifest::read(&dir)?;
    if manifest.schema_version != SCHEMA_VERSION {
        return Err(StoreError::NotAGraph {
            path: graph.to_path_buf(),
            message: format!(
                "graph has schema version {}, this ledger reads {SCHEMA_VERSION}; re-index it",
                manifest.schema_version
            ),
        });
    }
    Ok(dir)
}
