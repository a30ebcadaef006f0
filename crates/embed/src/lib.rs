//! The semantic layer: type-specific unit summaries, embedders behind one trait, and the HNSW
//! index that finds RELATED neighbours (cosine above θ, at most k per unit).
//!
//! Embedders here run in-process: the offline hashing embedder (no download) and
//! all-MiniLM-L6-v2 through candle. Embedders that call a service implement [`Embedder`] in
//! `ledger-llm`. This crate does no network IO and knows nothing of storage.

pub mod hashing;
pub mod index;
pub mod minilm;
pub mod summary;

pub use hashing::HashingEmbedder;
pub use index::{
    HnswParams, NeighbourIndex, Neighbours, Pair, bounded_pairs, clustered, exact_neighbours,
    exact_neighbours_of, neighbours, recall, skip_none,
};
pub use minilm::MiniLm;
pub use summary::{Extractive, Summarizer, SummaryInput};

/// Errors of embedders, by category.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// The model could not be loaded (missing or malformed files).
    #[error("model {model}: {message}")]
    Model {
        /// Model name.
        model: String,
        /// What went wrong.
        message: String,
    },
    /// An embedding service failed or answered something unusable.
    #[error("embedding service: {0}")]
    Service(String),
}

/// Turns texts into L2-normalised vectors of one model.
pub trait Embedder: Send + Sync {
    /// The model name recorded with every embedding (a graph never mixes models).
    fn model(&self) -> &str;
    /// Vector length.
    fn dim(&self) -> usize;
    /// One vector per text, in order.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError>;
}

/// The widest SIMD level of this CPU, detected once.
static ARCH: std::sync::LazyLock<pulp::Arch> = std::sync::LazyLock::new(pulp::Arch::new);

/// Cosine of two L2-normalised vectors (their dot product), compiled for the widest SIMD level the
/// CPU has (AVX2 + FMA on most x86-64) through `pulp`'s safe runtime dispatch.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    ARCH.dispatch(|| dot(a, b))
}

/// Dot product with eight partial sums, so that the compiler can vectorise the loop (a single
/// running sum must keep its order and stays scalar).
#[inline(always)]
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0.0f32; 8];
    let mut ca = a.chunks_exact(8);
    let mut cb = b.chunks_exact(8);
    for (x, y) in (&mut ca).zip(&mut cb) {
        for l in 0..8 {
            acc[l] += x[l] * y[l];
        }
    }
    let tail: f32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x * y)
        .sum();
    acc.iter().sum::<f32>() + tail
}
