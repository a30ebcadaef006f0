//! OpenAI-compatible endpoints for the semantic layer: embeddings (`/v1/embeddings`) and
//! LLM summaries (`/v1/chat/completions`), through async-openai, with bounded concurrency,
//! timeouts, retries and usage accounting.
//!
//! This is the one crate that talks to model services. It implements the `Embedder` and
//! `Summarizer` traits of `ledger-embed`; callers stay synchronous (each call runs on a private
//! tokio runtime) so that stage code need not be async.

pub mod client;
pub mod depends;
pub mod editor;
pub mod embeddings;
pub mod summaries;

pub use client::{Client, Endpoint, Usage, UsageSnapshot};
pub use editor::LlmEditor;
pub use embeddings::OpenAiEmbedder;
pub use summaries::LlmSummarizer;

/// Errors of endpoint calls, by category.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    /// The endpoint settings are unusable.
    #[error("endpoint configuration: {0}")]
    Config(String),
    /// The endpoint refused the request in a way retrying cannot fix (4xx).
    #[error("{what}: the endpoint refused the request: {message}")]
    Rejected {
        /// The kind of call.
        what: String,
        /// The server's message.
        message: String,
    },
    /// Every attempt failed (timeouts, 5xx, 429, malformed answers).
    #[error("{what}: failed after {attempts} attempts; last error: {last}")]
    Exhausted {
        /// The kind of call.
        what: String,
        /// Attempts made.
        attempts: u32,
        /// The last attempt's error.
        last: String,
    },
    /// The answer did not have the expected shape.
    #[error("malformed answer: {0}")]
    Malformed(String),
}

/// Result alias of this crate.
pub type Result<T, E = LlmError> = std::result::Result<T, E>;

/// Runs a future to completion on the process's runtime (`ledger-runtime`), from plain threads,
/// rayon workers and async tasks alike.
pub(crate) fn block_on<F: std::future::Future + Send>(future: F) -> Result<F::Output>
where
    F::Output: Send,
{
    ledger_runtime::block_on(future)
        .map_err(|e| LlmError::Config(format!("cannot start a tokio runtime: {e}")))
}
