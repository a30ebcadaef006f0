//! The pipeline of LEDGER, shared by every command and both modes: typed settings
//! ([`config`]), the document stage and the corpus stage ([`stage`]), indexing with incremental
//! reuse and commit ([`index`]), the semantic layer ([`semantic`]), the distributed mode's
//! worker and coordinator ([`distributed`]), retrieval over a stored graph ([`retrieval`]) and
//! the LLM edit loop ([`llm_edit`]).
//!
//! Functions return reports and take a [`Progress`] callback; nothing here prints.

pub mod config;
pub mod corpus;
pub mod distributed;
pub mod index;
pub mod llm_edit;
pub mod progress;
pub mod report;
pub mod resolve;
pub mod retrieval;
pub mod semantic;
pub mod stage;
pub mod verify;

pub use config::{
    Config, EmbedderKind, JudgeKind, RelatedScope, SqlFormat, SummarizerKind, VerifyFormat,
};
pub use llm_edit::LlmEdit;
pub use progress::{Progress, Quiet};
pub use report::{Corpus, CorpusSummary, IndexJob, IndexReport, counted};
pub use resolve::{Overrides, resolve};
pub use stage::{DocReport, Part, Settings, Stage, assemble, part_key};

// What the commands name of the crates below, so that the binary depends on this crate and
// `ledger-eval` only (as `datafusion` re-exports what its users need of arrow and parquet).
pub use ledger_core::{Format, redact_credentials};
pub use ledger_edit as edit;
pub use ledger_embed::minilm;
pub use ledger_parse::regions::RegionKind;
pub use ledger_store::{
    OutputFormat, Result as StoreResult, SqlLimits, SqlSession, machine_memory, read_embeddings,
};

/// Errors of the pipeline.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Settings or a request that cannot work as given.
    #[error("{0}")]
    Invalid(String),
    /// A job this worker's configuration does not allow: dead-lettered at once, not retried.
    /// The refusal is its message, not its source, so that an error chain says it once.
    #[error("refused: {0}")]
    Refused(Refusal),
    /// A source changed between the coordinator's scan and the worker's parse (retried; a new
    /// coordinator run picks the change up).
    #[error(
        "{0} changed since the coordinator scanned it (content hash differs); rerun the coordinator"
    )]
    SourceChanged(String),
    /// Inputs that are themselves bad (missing paths, unknown file types); nothing was written.
    #[error("bad input, nothing written:\n{0}")]
    BadInput(String),
    /// A file or folder could not be read or written.
    #[error("{context}")]
    Io {
        /// What was being done.
        context: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The store failed.
    #[error("{context}")]
    Store {
        /// What was being done.
        context: String,
        /// The store's error.
        #[source]
        source: ledger_store::StoreError,
    },
    /// An embedder failed.
    #[error(transparent)]
    Embed(#[from] ledger_embed::EmbedError),
    /// A model endpoint failed.
    #[error(transparent)]
    Llm(#[from] ledger_llm::LlmError),
    /// The broker failed.
    #[error(transparent)]
    Queue(#[from] ledger_queue::QueueError),
    /// An edit could not be planned or written.
    #[error(transparent)]
    Edit(#[from] ledger_edit::EditError),
    /// A unit could not be found in the graph.
    #[error(transparent)]
    Retrieve(#[from] ledger_retrieve::RetrieveError),
    /// JSON could not be written or read.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

/// Why a worker refuses a job.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The job speaks another protocol version.
    #[error("protocol version {job} (this worker speaks {worker})")]
    Protocol {
        /// The job's.
        job: u32,
        /// This worker's.
        worker: u32,
    },
    /// The job's document stage (its settings, models, version) is not this worker's.
    #[error(
        "this worker's pipeline differs from the coordinator's (fingerprint {worker} vs {job}): check that both run the same ledger version with the same settings and models"
    )]
    Fingerprint {
        /// This worker's fingerprint.
        worker: String,
        /// The job's.
        job: String,
    },
    /// The job names a path outside this worker's roots.
    #[error("{role} {path} is not under this worker's roots (--root, queue.worker_roots)")]
    OutsideRoots {
        /// What the path is to the job: `source`, `parts`, `input root`.
        role: &'static str,
        /// The path or URL.
        path: String,
    },
    /// The job has no input root, and this worker reads only under one.
    #[error(
        "the job reads without an input root, which this worker does not allow (index.allow_outside_root)"
    )]
    NoInputRoot,
    /// A part key of the job is not one this pipeline makes (64 hex digits): it could name a
    /// file outside the part store.
    #[error("{role} {key:?} is not a part key (64 hexadecimal digits)")]
    Key {
        /// `key` or `previous key`.
        role: &'static str,
        /// The key as the job gave it.
        key: String,
    },
}

/// Result alias of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Runs `future` on the process's one async runtime (`ledger-runtime`), from sync code: the
/// commands' SQL, the worker, the coordinator.
pub fn block_on<F>(future: F) -> Result<F::Output>
where
    F: std::future::Future + Send,
    F::Output: Send,
{
    ledger_runtime::block_on(future).map_err(io(|| "starting the async runtime"))
}

/// An error with its sources, as one line.
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut source = e.source();
    while let Some(inner) = source {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        source = inner.source();
    }
    s
}

/// `map_err` for store calls: the error with what was being done.
pub(crate) fn store<C: std::fmt::Display>(
    context: impl FnOnce() -> C,
) -> impl FnOnce(ledger_store::StoreError) -> Error {
    move |source| Error::Store {
        context: context().to_string(),
        source,
    }
}

/// `map_err` for IO calls: the error with what was being done.
pub(crate) fn io<C: std::fmt::Display>(
    context: impl FnOnce() -> C,
) -> impl FnOnce(std::io::Error) -> Error {
    move |source| Error::Io {
        context: context().to_string(),
        source,
    }
}
