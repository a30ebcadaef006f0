//! Embeddings from any OpenAI-compatible `/v1/embeddings` endpoint, batched, in parallel up to the
//! endpoint's concurrency, with the client's retries.

use crate::client::{AttemptError, Client};
use crate::{LlmError, Result, block_on};
use async_openai::types::embeddings::{CreateEmbeddingRequestArgs, EmbeddingInput};
use futures::stream::{self, StreamExt};
use ledger_embed::{EmbedError, Embedder};
use std::sync::atomic::Ordering;

/// An [`Embedder`] backed by an endpoint. The model name recorded in the graph is
/// `openai:<model>` so that a graph never mixes it with an in-process model of the same name.
pub struct OpenAiEmbedder {
    client: Client,
    name: String,
    dim: usize,
    batch: usize,
}

impl OpenAiEmbedder {
    /// Connects lazily; asks the endpoint once (one short text) for the vector length.
    pub fn new(client: Client, batch: usize) -> Result<Self> {
        let name = format!("openai:{}", client.endpoint().model);
        let mut embedder = OpenAiEmbedder {
            client,
            name,
            dim: 0,
            batch: batch.max(1),
        };
        let probe = block_on(embedder.embed_batch(vec!["dimension probe".to_string()]))??;
        embedder.dim = probe.first().map_or(0, Vec::len);
        if embedder.dim == 0 {
            return Err(LlmError::Malformed(
                "the endpoint returned an empty vector".into(),
            ));
        }
        Ok(embedder)
    }

    /// The client (for its usage counters).
    pub fn client(&self) -> &Client {
        &self.client
    }

    async fn embed_batch(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>> {
        let n = texts.len();
        let model = self.client.endpoint().model.clone();
        self.client
            .call("embeddings", || {
                let (texts, model) = (texts.clone(), model.clone());
                async move {
                    let request = CreateEmbeddingRequestArgs::default()
                        .model(model)
                        .input(EmbeddingInput::StringArray(texts))
                        .build()
                        .map_err(|e| AttemptError::Permanent(e.to_string()))?;
                    let response = self.client.openai().embeddings().create(request).await?;
                    self.client
                        .usage()
                        .prompt_tokens
                        .fetch_add(u64::from(response.usage.prompt_tokens), Ordering::Relaxed);
                    let mut out: Vec<Option<Vec<f32>>> = vec![None; n];
                    for item in response.data {
                        let slot = out.get_mut(item.index as usize).ok_or_else(|| {
                            AttemptError::Transient(format!(
                                "answer holds index {} for a batch of {n}",
                                item.index
                            ))
                        })?;
                        *slot = Some(normalise(item.embedding));
                    }
                    let out: Option<Vec<Vec<f32>>> = out.into_iter().collect();
                    let out = out.ok_or_else(|| {
                        AttemptError::Transient(format!("answer lacks vectors for a batch of {n}"))
                    })?;
                    if out.iter().any(|v| v.len() != out[0].len()) {
                        return Err(AttemptError::Transient(
                            "vectors of different lengths".into(),
                        ));
                    }
                    Ok(out)
                }
            })
            .await
    }
}

/// The positions of one batch and its vectors.
type BatchResult = (Vec<usize>, Result<Vec<Vec<f32>>>);

/// L2 normalisation (endpoints do not all normalise).
fn normalise(mut v: Vec<f32>) -> Vec<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
    v
}

impl Embedder for OpenAiEmbedder {
    fn model(&self) -> &str {
        &self.name
    }

    fn dim(&self) -> usize {
        self.dim
    }

    /// Batches of `batch` texts, `concurrency` batches in flight; empty texts get the zero vector
    /// (endpoints reject empty input).
    fn embed(&self, texts: &[&str]) -> std::result::Result<Vec<Vec<f32>>, EmbedError> {
        let wanted: Vec<usize> = (0..texts.len())
            .filter(|&i| !texts[i].trim().is_empty())
            .collect();
        let batches: Vec<Vec<usize>> = wanted.chunks(self.batch).map(<[usize]>::to_vec).collect();
        let concurrency = self.client.endpoint().concurrency.max(1);
        let results: Vec<BatchResult> = block_on(
            stream::iter(batches)
                .map(|idx| async move {
                    let batch = idx.iter().map(|&i| texts[i].to_string()).collect();
                    let got = self.embed_batch(batch).await;
                    (idx, got)
                })
                .buffer_unordered(concurrency)
                .collect(),
        )
        .map_err(|e| EmbedError::Service(e.to_string()))?;
        let mut out = vec![vec![0.0f32; self.dim]; texts.len()];
        for (idx, got) in results {
            let vectors = got.map_err(|e| EmbedError::Service(e.to_string()))?;
            for (i, v) in idx.into_iter().zip(vectors) {
                if v.len() != self.dim {
                    return Err(EmbedError::Service(format!(
                        "the endpoint returned {} dimensions, earlier {}",
                        v.len(),
                        self.dim
                    )));
                }
                out[i] = v;
            }
        }
        Ok(out)
    }
}
