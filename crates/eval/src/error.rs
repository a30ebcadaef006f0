//! Errors of the evaluation, with the context of what was being done (as `anyhow` would give
//! it, typed).

use crate::history::HistoryError;

/// Errors of the evaluation.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// A case or a run that cannot go on as asked.
    #[error("{0}")]
    Invalid(String),
    /// An error with what was being done.
    #[error("{context}")]
    Context {
        /// What was being done.
        context: String,
        /// The error.
        #[source]
        source: Box<EvalError>,
    },
    /// A file could not be read or written.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// JSON could not be written.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// The pipeline failed.
    #[error(transparent)]
    Pipeline(#[from] ledger_pipeline::Error),
    /// An edit could not be planned.
    #[error(transparent)]
    Edit(#[from] ledger_edit::EditError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] ledger_store::StoreError),
    /// A history could not be read.
    #[error(transparent)]
    History(#[from] HistoryError),
    /// A unit could not be found.
    #[error(transparent)]
    Retrieve(#[from] ledger_retrieve::RetrieveError),
}

/// Result alias of the evaluation.
pub type Result<T, E = EvalError> = std::result::Result<T, E>;

/// `context` and `with_context` on results and options, as `anyhow` spells them.
pub trait Context<T> {
    /// The error (or absence) with `context`.
    fn context(self, context: impl std::fmt::Display) -> Result<T>;
    /// The error (or absence) with the context `f` gives.
    fn with_context<C: std::fmt::Display>(self, f: impl FnOnce() -> C) -> Result<T>;
}

impl<T, E: Into<EvalError>> Context<T> for std::result::Result<T, E> {
    fn context(self, context: impl std::fmt::Display) -> Result<T> {
        self.with_context(|| context)
    }
    fn with_context<C: std::fmt::Display>(self, f: impl FnOnce() -> C) -> Result<T> {
        self.map_err(|e| EvalError::Context {
            context: f().to_string(),
            source: Box::new(e.into()),
        })
    }
}

impl<T> Context<T> for Option<T> {
    fn context(self, context: impl std::fmt::Display) -> Result<T> {
        self.ok_or_else(|| EvalError::Invalid(context.to_string()))
    }
    fn with_context<C: std::fmt::Display>(self, f: impl FnOnce() -> C) -> Result<T> {
        self.ok_or_else(|| EvalError::Invalid(f().to_string()))
    }
}
