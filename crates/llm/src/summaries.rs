//! LLM summaries through `/v1/chat/completions`, one short request per unit, following the
//! summary protocol of each kind. Units the extractive summarizer finds nothing to say about
//! (uncaptioned code, content-free paragraphs) are not sent.

use crate::block_on;
use crate::client::{AttemptError, Client};
use async_openai::types::chat::{
    ChatCompletionRequestMessage, ChatCompletionRequestSystemMessage,
    ChatCompletionRequestUserMessage, CreateChatCompletionRequestArgs,
};
use futures::stream::{self, StreamExt};
use ledger_core::UnitKind;
use ledger_embed::EmbedError;
use ledger_embed::summary::{Summarizer, SummaryInput, plain_text, summarize};

/// Version of the prompts below; part of the summarizer's name, hence of the cache key.
pub const PROMPT_VERSION: u32 = 1;

/// Characters of unit text sent at most (long sections are cut; their first paragraphs carry
/// the claim).
const MAX_CHARS: usize = 6_000;

/// A [`Summarizer`] backed by a chat endpoint.
pub struct LlmSummarizer {
    client: Client,
    name: String,
}

impl LlmSummarizer {
    /// A summarizer using `client`'s endpoint and model.
    pub fn new(client: Client) -> Self {
        let name = format!("llm:{}:p{PROMPT_VERSION}", client.endpoint().model);
        LlmSummarizer { client, name }
    }

    /// The client (for its usage counters).
    pub fn client(&self) -> &Client {
        &self.client
    }

    async fn one(&self, system: String, user: String) -> crate::Result<String> {
        let model = self.client.endpoint().model.clone();
        self.client
            .call("summary", || {
                let (system, user, model) = (system.clone(), user.clone(), model.clone());
                async move {
                    let messages: Vec<ChatCompletionRequestMessage> = vec![
                        ChatCompletionRequestSystemMessage::from(system).into(),
                        ChatCompletionRequestUserMessage::from(user.as_str()).into(),
                    ];
                    #[allow(deprecated)]
                    let request = CreateChatCompletionRequestArgs::default()
                        .model(model)
                        .messages(messages)
                        .temperature(0.0)
                        .max_tokens(160u32)
                        .build()
                        .map_err(|e| AttemptError::Permanent(e.to_string()))?;
                    let response = self.client.openai().chat().create(request).await?;
                    self.client.usage().add_chat(response.usage.as_ref());
                    let text = response
                        .choices
                        .into_iter()
                        .next()
                        .and_then(|c| c.message.content)
                        .map(|c| c.split_whitespace().collect::<Vec<_>>().join(" "))
                        .unwrap_or_default();
                    if text.is_empty() {
                        return Err(AttemptError::Transient("empty answer".into()));
                    }
                    Ok(text)
                }
            })
            .await
    }
}

/// The instruction for one unit kind (the summary protocol).
fn instruction(kind: UnitKind) -> &'static str {
    match kind {
        UnitKind::Section | UnitKind::Document => {
            "Summarise the section: its main claim and 2-3 key concepts, in 50-100 tokens. No structural phrases (\"this section\"), no citations."
        }
        UnitKind::Figure => {
            "Summarise the figure from its caption in at most 60 tokens, starting with \"graph showing\" or \"figure showing\". Keep its key terms."
        }
        UnitKind::Table => {
            "Summarise the table from its caption (and its headers when the caption says little) in at most 60 tokens, starting with \"table comparing\" or \"table listing\"."
        }
        UnitKind::Equation => {
            "Say what the equation expresses, using the explanation around it, in 20-40 tokens; else name the kind of equation."
        }
        _ => {
            "State the central idea with its key technical terms in 30-50 tokens. No structural phrases, no citations."
        }
    }
}

impl Summarizer for LlmSummarizer {
    fn name(&self) -> &str {
        &self.name
    }

    fn summarize(&self, inputs: &[SummaryInput<'_>]) -> Vec<Result<String, EmbedError>> {
        let jobs: Vec<(usize, Option<(String, String)>)> = inputs
            .iter()
            .enumerate()
            .map(|(i, u)| {
                if summarize(u).is_empty() {
                    return (i, None);
                }
                let mut text = plain_text(u.text);
                let context = plain_text(u.context);
                text.truncate(text.floor_char_boundary(MAX_CHARS));
                let user = format!(
                    "Kind: {} ({})\nTitle or caption: {}\nText: {}\nContext: {}",
                    u.kind.as_str(),
                    u.env,
                    u.title.map(plain_text).unwrap_or_default(),
                    text,
                    &context[..context.floor_char_boundary(MAX_CHARS / 2)],
                );
                let system = format!(
                    "You write one-line summaries of units of technical documents, for semantic search. {} Answer with the summary only.",
                    instruction(u.kind)
                );
                (i, Some((system, user)))
            })
            .collect();
        let concurrency = self.client.endpoint().concurrency.max(1);
        let answers: Vec<(usize, crate::Result<String>)> = block_on(
            stream::iter(jobs)
                .map(|(i, job)| async move {
                    match job {
                        None => (i, Ok(String::new())),
                        Some((system, user)) => (i, self.one(system, user).await),
                    }
                })
                .buffer_unordered(concurrency)
                .collect::<Vec<_>>(),
        )
        .unwrap_or_else(|e| {
            let message = e.to_string();
            (0..inputs.len())
                .map(|i| (i, Err(crate::LlmError::Config(message.clone()))))
                .collect()
        });
        let mut out: Vec<Result<String, EmbedError>> = (0..inputs.len())
            .map(|_| Err(EmbedError::Service("not summarised".into())))
            .collect();
        for (i, answer) in answers {
            out[i] = answer.map_err(|e| EmbedError::Service(e.to_string()));
        }
        out
    }
}
