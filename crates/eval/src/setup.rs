//! What the harness runs the ordinary pipeline with.

use ledger_pipeline::Stage;
use ledger_pipeline::config::{Config, RetrieveConfig, StoreConfig};

/// The pipeline as configured: what the harness indexes, retrieves and edits with.
pub struct Pipeline<'a> {
    /// The document stage (its settings: parsing, judging, embeddings, RELATED).
    pub stage: &'a Stage,
    /// Retrieval settings (weights, depth).
    pub retrieve: &'a RetrieveConfig,
    /// Where parts go for a graph folder.
    pub store: &'a StoreConfig,
    /// The whole configuration (the LLM edits use `[llm]` and `[embed]`).
    pub config: &'a Config,
}
