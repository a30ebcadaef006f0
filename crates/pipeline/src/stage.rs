//! The two stages of indexing, shared by the embedded mode (`ledger index`) and the distributed
//! one (`ledger worker`, `ledger coordinator`): one code path.
//!
//! - **Document stage** ([`Stage::process`]): parse one document, judge its DEPENDS edges, write
//!   its summaries and embeddings, find its RELATED edges (document scope); the result is a
//!   *part*, stored under a key that fixes its content ([`part_key`]: document id, content hash,
//!   pipeline fingerprint).
//! - **Corpus stage** ([`crate::corpus::write`]): the parts of every document, cross-document
//!   references resolved, RELATED edges across documents found (corpus scope), the graph written
//!   one document at a time and committed. [`assemble`] is the same in memory, for what does not
//!   write a graph.
//!
//! A part whose key already exists is reused as it is (an unchanged document costs nothing); a
//! changed document's previous part is its cache (LLM judgments, summaries, vectors).

use crate::config::{
    DependsConfig, EmbedConfig, IndexConfig, JudgeKind, LlmConfig, RelatedConfig, RelatedScope,
    TlsConfig,
};
use crate::semantic::{Models, Stats};
use crate::{Error, Progress, Result};
use ledger_core::{Document, JudgmentOutcome, Semantic};
use ledger_llm::depends::{Cache, Judge, LearnedJudge, LlmJudge, Model, Report, RulesJudge};
use ledger_store::PartStore;
use serde::{Deserialize, Serialize};

/// Version of the per-document pipeline; part of every part key, so that a change in what the
/// stage computes invalidates old parts. 3: vectors on the stored int8 grid before RELATED is
/// found (a part of version 2 holds RELATED edges found over f32 vectors).
pub const PIPELINE_VERSION: u32 = 3;

/// The settings that decide what the document stage computes. A coordinator sends them with
/// every job, so that all workers compute the same thing (secrets stay in the workers'
/// environment: only the *name* of the API-key variable travels).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Settings {
    /// Parsing (token counting).
    pub index: IndexConfig,
    /// DEPENDS judging.
    pub depends: DependsConfig,
    /// RELATED edges: summaries and embeddings are computed when they are enabled, and in
    /// document scope each document's edges are found here, with its part.
    pub related: RelatedConfig,
    /// Summaries and embeddings.
    pub embed: EmbedConfig,
    /// The chat endpoint.
    pub llm: LlmConfig,
    /// Certificates for `https://` endpoints.
    pub tls: TlsConfig,
}

impl Settings {
    /// The RELATED settings when the document stage finds the edges (enabled, document scope).
    pub fn document_related(&self) -> Option<&RelatedConfig> {
        Some(&self.related).filter(|r| r.enabled && r.scope == RelatedScope::Document)
    }
}

/// A part: one document after the document stage, with its embeddings.
#[derive(Debug, Clone)]
pub struct Part {
    /// The document, with its judgments and DEPENDS edges.
    pub doc: Document,
    /// Its summaries and vectors, and in document scope its RELATED edges (across documents they
    /// are a corpus matter).
    pub semantic: Semantic,
}

impl Part {
    /// What its part's footer says of it ([`ledger_core::PartSummary`]): whether it can be
    /// reused as it is (nothing in it failed), its counts and the document's errors.
    pub fn summary(&self) -> ledger_core::PartSummary {
        ledger_core::PartSummary::of(&self.doc, &self.semantic)
    }

    /// Its successful judgments by `judge`, by cache key: what a later run may reuse.
    pub fn judgment_cache(&self, judge: &str) -> Cache {
        self.doc
            .judgments
            .iter()
            .filter(|j| j.judge == judge && matches!(j.outcome, JudgmentOutcome::Verdicts(_)))
            .map(|j| (j.cache_key.clone(), j.clone()))
            .collect()
    }

    /// Reads part `key` from `store`.
    pub fn read(store: &PartStore, key: &str) -> Result<Part> {
        let (doc, semantic) = store.read(key).map_err(crate::store(|| {
            format!("reading part {key} from {}", store.url())
        }))?;
        Ok(Part { doc, semantic })
    }

    /// Reads the document of part `key` from `store`, without its embeddings.
    pub fn read_document(store: &PartStore, key: &str) -> Result<Document> {
        store.read_document(key).map_err(crate::store(|| {
            format!("reading part {key} from {}", store.url())
        }))
    }

    /// Writes it durably as part `key` to `store`.
    pub fn write(&self, store: &PartStore, key: &str) -> Result<()> {
        store
            .write(key, &self.doc, &self.semantic)
            .map_err(crate::store(|| {
                format!("writing part {key} to {}", store.url())
            }))
    }
}

/// What the document stage did for one document.
#[derive(Debug, Clone, Copy, Default)]
pub struct DocReport {
    /// DEPENDS judging.
    pub depends: Report,
    /// Summaries and vectors.
    pub semantic: Stats,
}

impl DocReport {
    /// Adds `other` to this report.
    pub fn add(&mut self, other: &DocReport) {
        let (d, o) = (&mut self.depends, &other.depends);
        d.units += o.units;
        d.reused += o.reused;
        d.failed += o.failed;
        d.requests += o.requests;
        d.prompt_tokens += o.prompt_tokens;
        d.completion_tokens += o.completion_tokens;
        d.edges += o.edges;
        let (s, o) = (&mut self.semantic, &other.semantic);
        s.summaries_reused += o.summaries_reused;
        s.summaries_written += o.summaries_written;
        s.summary_failures += o.summary_failures;
        s.vectors_reused += o.vectors_reused;
        s.vectors_computed += o.vectors_computed;
    }

    /// The report of a part reused whole: everything in it counts as reused.
    pub fn reused(part: &ledger_core::PartSummary) -> DocReport {
        let n = part.embeddings;
        DocReport {
            depends: Report {
                units: part.judgments,
                reused: part.judgments,
                edges: part.depends,
                ..Report::default()
            },
            semantic: Stats {
                summaries_reused: n,
                vectors_reused: n,
                ..Stats::default()
            },
        }
    }
}

impl From<DocReport> for ledger_queue::StageCounts {
    fn from(r: DocReport) -> Self {
        let (d, s) = (r.depends, r.semantic);
        ledger_queue::StageCounts {
            judgments: d.units,
            judgments_reused: d.reused,
            judgments_failed: d.failed,
            judge_requests: d.requests,
            judge_prompt_tokens: d.prompt_tokens,
            judge_completion_tokens: d.completion_tokens,
            depends_edges: d.edges,
            summaries_reused: s.summaries_reused,
            summaries_written: s.summaries_written,
            summary_failures: s.summary_failures,
            vectors_reused: s.vectors_reused,
            vectors_computed: s.vectors_computed,
        }
    }
}

impl From<ledger_queue::StageCounts> for DocReport {
    fn from(c: ledger_queue::StageCounts) -> Self {
        DocReport {
            depends: Report {
                units: c.judgments,
                reused: c.judgments_reused,
                failed: c.judgments_failed,
                requests: c.judge_requests,
                prompt_tokens: c.judge_prompt_tokens,
                completion_tokens: c.judge_completion_tokens,
                edges: c.depends_edges,
            },
            semantic: Stats {
                summaries_reused: c.summaries_reused,
                summaries_written: c.summaries_written,
                summary_failures: c.summary_failures,
                vectors_reused: c.vectors_reused,
                vectors_computed: c.vectors_computed,
            },
        }
    }
}

/// The document stage, built once per process from the settings.
pub struct Stage {
    settings: Settings,
    judge: Option<Box<dyn Judge>>,
    models: Option<Models>,
    tokenizer: Option<ledger_parse::Tokenizer>,
    chat: Option<ledger_llm::Client>,
    fingerprint: String,
}

impl Stage {
    /// Builds the judge and models the settings name (MiniLM weights are loaded here).
    pub fn new(settings: Settings) -> Result<Stage> {
        let chat = crate::semantic::chat_client(&settings.llm, &settings.tls)?;
        let judge: Option<Box<dyn Judge>> = if settings.depends.enabled {
            Some(match (settings.depends.judge, chat.as_ref()) {
                (JudgeKind::Learned, _) | (JudgeKind::Auto, None) => {
                    let t = settings.depends.threshold;
                    if !(0.0..=1.0).contains(&t) {
                        return Err(Error::Invalid(format!(
                            "depends.threshold = {t}: expected a probability (0 = the model's own)"
                        )));
                    }
                    Box::new(LearnedJudge::new(Model::shipped(), (t > 0.0).then_some(t)))
                }
                (JudgeKind::Rules, _) => Box::new(RulesJudge),
                (JudgeKind::Llm | JudgeKind::Auto, Some(client)) => {
                    Box::new(LlmJudge::new(client.clone()))
                }
                (JudgeKind::Llm, None) => {
                    return Err(Error::Invalid(
                        "depends.judge = \"llm\" needs a chat endpoint: set llm.url and llm.model (or LEDGER_LLM_URL and LEDGER_LLM_MODEL)".into(),
                    ));
                }
            })
        } else {
            None
        };
        let models = if settings.related.enabled {
            Some(crate::semantic::models(
                &settings.embed,
                &settings.tls,
                chat.as_ref(),
            )?)
        } else {
            None
        };
        let tokenizer = settings
            .index
            .count_tokens
            .then(ledger_parse::Tokenizer::cl100k);
        // What decides a part's content: the resolved judge and models, not the words `auto`.
        let resolved = serde_json::json!({
            "pipeline": PIPELINE_VERSION,
            "ledger": env!("CARGO_PKG_VERSION"),
            "tokens": settings.index.count_tokens,
            "outside_root": settings.index.allow_outside_root,
            "judge": judge.as_ref().map(|j| j.name().to_string()),
            "window": settings.depends.window,
            "summarizer": models.as_ref().map(|m| m.summarizer.name().to_string()),
            "embedder": models.as_ref().map(|m| (m.embedder.model().to_string(), m.embedder.dim())),
            "related": settings.document_related().map(|r| (r.theta, r.k)),
        });
        let fingerprint = ledger_core::content_hash(resolved.to_string().as_bytes());
        Ok(Stage {
            settings,
            judge,
            models,
            tokenizer,
            chat,
            fingerprint,
        })
    }

    /// The settings it was built from.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Hash of what decides a part's content (pipeline version, judge, models, window, tokens,
    /// and RELATED's θ and k in document scope).
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// The DEPENDS judge, if DEPENDS edges are on.
    pub fn judge(&self) -> Option<&dyn Judge> {
        self.judge.as_deref()
    }

    /// The chat client, when an endpoint is configured (its usage is what the process sent).
    pub fn chat(&self) -> Option<&ledger_llm::Client> {
        self.chat.as_ref()
    }

    /// The embedding model's name and dimension, and the summarizer's name.
    pub fn semantic_names(&self) -> Option<(String, usize, String)> {
        self.models.as_ref().map(|m| {
            (
                m.embedder.model().to_string(),
                m.embedder.dim(),
                m.summarizer.name().to_string(),
            )
        })
    }

    /// Embeds a query text with the stage's embedder (`None` when embeddings are off).
    pub fn embed_query(&self, text: &str) -> Result<Option<Vec<f32>>> {
        let Some(models) = &self.models else {
            return Ok(None);
        };
        Ok(models.embedder.embed(&[text])?.pop())
    }

    /// Parses the document of `source`, counting tokens when the settings say so (the first step
    /// of the document stage, in both modes).
    pub fn parse(&self, source: &ledger_parse::Source) -> Document {
        ledger_parse::parse(source, self.tokenizer.as_ref())
    }

    /// The document stage: DEPENDS judgments, summaries and embeddings of `doc`, reusing what
    /// `previous` (an earlier part of the same document) already holds, and its RELATED edges in
    /// document scope.
    /// How far the judging, summarising and embedding of its units are goes to `progress`.
    pub fn process(
        &self,
        doc: Document,
        previous: Option<&Part>,
        progress: &dyn Progress,
    ) -> Result<(Part, DocReport)> {
        let _span = tracing::info_span!("document", doc_id = %doc.id).entered();
        let id = doc.id.clone();
        let inner = |step: &str, done: usize, total: usize| {
            progress.inner(&id, step, done as u64, total as u64);
        };
        let mut docs = vec![doc];
        let mut report = DocReport::default();
        if let Some(judge) = self.judge.as_deref() {
            let cache: Cache = previous
                .filter(|_| judge.reusable())
                .map(|p| p.judgment_cache(judge.name()))
                .unwrap_or_default();
            report.depends = ledger_llm::depends::judge_corpus_reporting(
                &mut docs,
                judge,
                self.settings.depends.window,
                &cache,
                &|done, total| inner("judging", done, total),
            );
        }
        let mut semantic = match &self.models {
            Some(models) => {
                let (semantic, stats) =
                    crate::semantic::embed(&docs, models, previous.map(|p| &p.semantic), &inner)?;
                report.semantic = stats;
                semantic
            }
            None => Semantic::default(),
        };
        if let Some(related) = self.settings.document_related() {
            semantic.related = crate::semantic::related(&docs, &semantic, related)?;
        }
        let doc = docs
            .pop()
            .ok_or_else(|| Error::Invalid("the stage lost its document".into()))?;
        Ok((Part { doc, semantic }, report))
    }
}

/// The key of a document's part: blake3 of the document id, its content hash and the stage's
/// fingerprint. Same inputs, same settings: same key, same content.
pub fn part_key(doc_id: &str, content_hash: &str, fingerprint: &str) -> String {
    ledger_core::content_hash(format!("{doc_id}\0{content_hash}\0{fingerprint}").as_bytes())
}

/// Whether `key` is one [`part_key`] makes: 64 lower-case hexadecimal digits.
pub fn is_part_key(key: &str) -> bool {
    key.len() == 64 && key.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The corpus stage in memory, for what does not write a graph (the evaluation's edited
/// document): documents sorted by id, references across documents resolved, embeddings and the
/// parts' RELATED edges gathered (or, in corpus scope, found). `ledger index` and the coordinator stream
/// instead ([`crate::corpus::write`]).
pub fn assemble(
    parts: Vec<Part>,
    related: &RelatedConfig,
    names: Option<(String, usize, String)>,
) -> Result<(Vec<Document>, Semantic)> {
    let mut parts = parts;
    parts.sort_by(|a, b| a.doc.id.cmp(&b.doc.id));
    let mut semantic = Semantic::default();
    if let Some((model, dim, summarizer)) = names {
        (semantic.model, semantic.dim, semantic.summarizer) = (model, dim, summarizer);
    }
    let mut docs = Vec::with_capacity(parts.len());
    for p in parts {
        semantic.embeddings.extend(p.semantic.embeddings);
        semantic.related.extend(p.semantic.related);
        docs.push(p.doc);
    }
    ledger_parse::resolve_corpus(&mut docs);
    if related.enabled && related.scope == RelatedScope::Corpus && !semantic.model.is_empty() {
        semantic.related = crate::semantic::related(&docs, &semantic, related)?;
    }
    Ok((docs, semantic))
}
