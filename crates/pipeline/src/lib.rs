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
pub mod report;
pub mod retrieval;
pub mod semantic;
pub mod stage;
pub mod verify;

pub use config::{Config, EmbedderKind, JudgeKind, RelatedScope, SqlFormat, SummarizerKind};
pub use llm_edit::LlmEdit;
pub use report::{Corpus, CorpusSummary, IndexJob, IndexReport, counted};
pub use stage::{DocReport, Part, Settings, Stage, assemble, part_key};

/// Errors of the pipeline.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Settings or a request that cannot work as given.
    #[error("{0}")]
    Invalid(String),
    /// A job this worker's configuration does not allow (another fingerprint, a path outside
    /// its roots, another protocol): dead-lettered at once, not retried.
    #[error("refused: {0}")]
    Refused(String),
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

/// Result alias of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

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

/// Where long steps report how far they are (a progress bar in the binary; nothing in tests).
pub trait Progress: Sync {
    /// A step of `total` items begins (`what`: "parsing", "documents").
    fn start(&self, what: &str, total: u64);
    /// The step turns out to have `more` items.
    fn grow(&self, more: u64);
    /// One more item is done; `message` names it or sums up.
    fn advance(&self, message: &str);
    /// A note on the current item, without advancing.
    fn note(&self, message: &str);
    /// Inside item `item` (a document), `step` ("judging", "summarising", "embedding") has done
    /// `done` of `total` units: the long parts of one big document show movement too.
    fn inner(&self, _item: &str, _step: &str, _done: u64, _total: u64) {}
    /// The step is over.
    fn finish(&self);
}

/// No progress shown.
pub struct Quiet;

impl Progress for Quiet {
    fn start(&self, _: &str, _: u64) {}
    fn grow(&self, _: u64) {}
    fn advance(&self, _: &str) {}
    fn note(&self, _: &str) {}
    fn finish(&self) {}
}
