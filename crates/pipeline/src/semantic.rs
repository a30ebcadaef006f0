//! The semantic layer of the document and corpus stages: summaries → embeddings → RELATED
//! edges; and `ledger similar`.

use crate::config::{
    EmbedConfig, EmbedderKind, LlmConfig, RelatedConfig, RelatedScope, SummarizerKind, TlsConfig,
};
use crate::{Error, Result};
use ledger_core::{Document, Edge, EdgeKind, Semantic, UnitEmbedding, UnitKind, content_hash};
use ledger_embed::summary::{SummaryInput, input_hash, summarize};
use ledger_embed::{
    Embedder, Extractive, HashingEmbedder, HnswParams, MiniLm, Summarizer, bounded_pairs,
};
use ledger_llm::{Client, Endpoint, LlmSummarizer, OpenAiEmbedder};
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::time::Duration;

/// Up to this many vectors in a scope the exact all-pairs search is used: it is deterministic (the
/// HNSW build is not: hnsw_rs inserts in parallel with random levels) and, being blocked matrix
/// products, faster than building and querying the index at this size (2 cores, 384 dims: 100,000
/// vectors in 52 s exact against 97 s HNSW; `cargo bench -p ledger-embed --bench hnsw`).
const EXACT_BELOW: usize = 100_000;

/// The summarizer and embedder of a run.
pub struct Models {
    /// Writes the summaries.
    pub summarizer: Box<dyn Summarizer>,
    /// Embeds them.
    pub embedder: Box<dyn Embedder>,
}

/// The MiniLM weights folder: `embed.model_dir`, else [`ledger_embed::minilm::default_dir`].
pub fn minilm_dir(config: &EmbedConfig) -> PathBuf {
    if config.model_dir.is_empty() {
        ledger_embed::minilm::default_dir()
    } else {
        PathBuf::from(&config.model_dir)
    }
}

/// What the configuration says of an OpenAI-compatible endpoint (`[llm]` or `[embed]`).
struct EndpointSettings<'a> {
    /// The section, for messages.
    section: &'a str,
    url: &'a str,
    model: &'a str,
    /// The environment variable holding the API key (none when empty).
    api_key_env: &'a str,
    concurrency: usize,
    timeout_secs: u64,
    max_retries: u32,
}

fn endpoint(settings: EndpointSettings, tls: &TlsConfig) -> Result<Endpoint> {
    let EndpointSettings {
        section,
        url,
        model,
        api_key_env,
        concurrency,
        timeout_secs,
        max_retries,
    } = settings;
    if url.is_empty() || model.is_empty() {
        return Err(Error::Invalid(format!(
            "{section}.url and {section}.model must be set (an OpenAI-compatible endpoint)"
        )));
    }
    let mut e = Endpoint::new(url, model);
    e.api_key = (!api_key_env.is_empty())
        .then(|| std::env::var(api_key_env).ok())
        .flatten();
    (e.concurrency, e.timeout, e.max_retries) =
        (concurrency, Duration::from_secs(timeout_secs), max_retries);
    e.extra_roots = tls.extra_roots()?;
    Ok(e)
}

/// The client of the `[llm]` chat endpoint, shared by the DEPENDS judge and the summarizer so
/// that its usage counters add up to what the run sent; `None` when no URL is configured.
pub fn chat_client(llm: &LlmConfig, tls: &TlsConfig) -> Result<Option<Client>> {
    if llm.url.is_empty() {
        return Ok(None);
    }
    let settings = EndpointSettings {
        section: "llm",
        url: &llm.url,
        model: &llm.model,
        api_key_env: &llm.api_key_env,
        concurrency: llm.concurrency,
        timeout_secs: llm.timeout_secs,
        max_retries: llm.max_retries,
    };
    let e = endpoint(settings, tls)?;
    Ok(Some(Client::new(e)?))
}

/// The embedder that made vectors stored under `model` (a graph's `embeddings.model`).
pub fn embedder_kind_of(model: &str) -> EmbedderKind {
    if model == ledger_embed::minilm::MODEL_NAME {
        EmbedderKind::Minilm
    } else if model.starts_with("openai:") {
        EmbedderKind::Openai
    } else {
        EmbedderKind::Hash
    }
}

/// The summarizer that wrote summaries stored under `name` (a graph's `embeddings.summarizer`).
pub fn summarizer_kind_of(name: &str) -> SummarizerKind {
    if name.starts_with("llm") {
        SummarizerKind::Llm
    } else {
        SummarizerKind::Extractive
    }
}

/// The summarizer and embedder the configuration names; `chat` is the `[llm]` endpoint.
pub fn models(config: &EmbedConfig, tls: &TlsConfig, chat: Option<&Client>) -> Result<Models> {
    let summarizer: Box<dyn Summarizer> = match (config.summarizer, chat) {
        (SummarizerKind::Extractive, _) => Box::new(Extractive),
        (SummarizerKind::Llm, Some(client)) => Box::new(LlmSummarizer::new(client.clone())),
        (SummarizerKind::Llm, None) => {
            return Err(Error::Invalid(
                "embed.summarizer = \"llm\" needs a chat endpoint: set llm.url and llm.model (or LEDGER_LLM_URL and LEDGER_LLM_MODEL)".into(),
            ));
        }
    };
    let dir = minilm_dir(config);
    let installed = ledger_embed::minilm::is_installed(&dir);
    let embedder: Box<dyn Embedder> = match config.embedder {
        EmbedderKind::Hash => Box::new(HashingEmbedder),
        EmbedderKind::Auto if !installed => Box::new(HashingEmbedder),
        EmbedderKind::Auto | EmbedderKind::Minilm => {
            if !installed {
                return Err(Error::Invalid(format!(
                    "embed.embedder = \"minilm\" but {} lacks its weights; run `ledger models install minilm`",
                    dir.display()
                )));
            }
            Box::new(MiniLm::load(&dir)?)
        }
        EmbedderKind::Openai => {
            let settings = EndpointSettings {
                section: "embed",
                url: &config.url,
                model: &config.model,
                api_key_env: &config.api_key_env,
                concurrency: config.concurrency,
                timeout_secs: config.timeout_secs,
                max_retries: config.max_retries,
            };
            let e = endpoint(settings, tls)?;
            Box::new(OpenAiEmbedder::new(Client::new(e)?, config.batch)?)
        }
    };
    Ok(Models {
        summarizer,
        embedder,
    })
}

/// What the semantic layer reused from the previous graph and what it computed.
#[derive(Debug, Clone, Copy, Default)]
pub struct Stats {
    /// Summaries taken from the previous graph (same summarizer, same input).
    pub summaries_reused: usize,
    /// Non-empty summaries written in this run.
    pub summaries_written: usize,
    /// Units whose summarizer failed (the extractive summary stands in; retried next run).
    pub summary_failures: usize,
    /// Vectors taken from the previous graph (same model, same summary).
    pub vectors_reused: usize,
    /// Vectors computed in this run.
    pub vectors_computed: usize,
}

/// Where the text around each unit of a document is, computed once per document so that every
/// unit's context costs its own length, not the document's.
struct Around {
    /// Per unit: its first three paragraph children.
    first_paragraphs: Vec<Vec<usize>>,
    /// Per unit: the last paragraph before it with the same parent.
    paragraph_before: Vec<Option<usize>>,
}

impl Around {
    fn new(doc: &Document) -> Around {
        let n = doc.units.len();
        let mut first_paragraphs = vec![Vec::new(); n];
        let mut paragraph_before = vec![None; n];
        // The last paragraph seen under each parent, in document order.
        let mut last_paragraph: Vec<Option<usize>> = vec![None; n];
        for (i, u) in doc.units.iter().enumerate() {
            let Some(parent) = u.parent.filter(|&p| p < n) else {
                continue;
            };
            paragraph_before[i] = last_paragraph[parent];
            if u.kind == UnitKind::Paragraph {
                last_paragraph[parent] = Some(i);
                if first_paragraphs[parent].len() < 3 {
                    first_paragraphs[parent].push(i);
                }
            }
        }
        Around {
            first_paragraphs,
            paragraph_before,
        }
    }

    /// The text around unit `i` that its summary needs: a section's first paragraphs, the
    /// paragraph before an equation (inside a theorem or proof: its text before the display).
    fn context(&self, doc: &Document, i: usize) -> String {
        let u = &doc.units[i];
        match u.kind {
            UnitKind::Section => self.first_paragraphs[i]
                .iter()
                .map(|&c| doc.units[c].text.as_str())
                .collect::<Vec<_>>()
                .join("\n\n"),
            UnitKind::Equation => match u.parent.map(|p| &doc.units[p]) {
                Some(p)
                    if !matches!(p.kind, UnitKind::Section | UnitKind::Document)
                        && p.file == u.file
                        && u.start_byte >= p.start_byte =>
                {
                    p.text
                        .get(..u.start_byte - p.start_byte)
                        .unwrap_or_default()
                        .to_string()
                }
                _ => self.paragraph_before[i]
                    .map(|p| doc.units[p].text.clone())
                    .unwrap_or_default(),
            },
            _ => String::new(),
        }
    }
}

/// Units summarised or embedded at once by [`embed`], between two reports of its progress: about
/// a twentieth of them, but never fewer than this, so that batches and an endpoint's concurrency
/// stay full.
const EMBED_CHUNK: usize = 1024;

/// The chunk size for `n` units.
fn chunk_size(n: usize) -> usize {
    EMBED_CHUNK.max(n.div_ceil(20))
}

/// Summaries and embeddings of the documents' units (bibliography entries are not embedded).
/// Summaries and vectors of `previous` (an earlier result for these documents) are reused where
/// the summarizer and its input, or the model and the summary, are unchanged. `progress(step,
/// done, total)` hears of the summaries and vectors computed ("summarising", "embedding").
pub fn embed(
    docs: &[Document],
    models: &Models,
    previous: Option<&Semantic>,
    progress: &dyn Fn(&str, usize, usize),
) -> Result<(Semantic, Stats)> {
    let (summarizer, embedder) = (models.summarizer.as_ref(), models.embedder.as_ref());
    let mut stats = Stats::default();
    // Summaries: cached by (summarizer, input hash).
    let mut targets: Vec<(usize, usize, String)> = Vec::new();
    for (d, doc) in docs.iter().enumerate() {
        let around = Around::new(doc);
        for (i, u) in doc.units.iter().enumerate() {
            if !matches!(u.kind, UnitKind::Document | UnitKind::Bibitem) {
                targets.push((d, i, around.context(doc, i)));
            }
        }
    }
    let inputs: Vec<SummaryInput> = targets
        .iter()
        .map(|(d, i, ctx)| {
            let u = &docs[*d].units[*i];
            SummaryInput {
                kind: u.kind,
                env: &u.env,
                title: u.title.as_deref(),
                text: &u.text,
                context: ctx,
            }
        })
        .collect();
    let hashes: Vec<String> = inputs.iter().map(input_hash).collect();
    let summary_cache: HashMap<&str, &str> = previous
        .filter(|p| p.summarizer == summarizer.name())
        .map(|p| {
            p.embeddings
                .iter()
                .filter(|e| !e.input_hash.is_empty())
                .map(|e| (e.input_hash.as_str(), e.summary.as_str()))
                .collect()
        })
        .unwrap_or_default();
    let mut summaries: Vec<Option<String>> = hashes
        .iter()
        .map(|h| summary_cache.get(h.as_str()).map(|s| (*s).to_string()))
        .collect();
    stats.summaries_reused = summaries.iter().filter(|s| s.is_some()).count();
    let missing: Vec<usize> = (0..inputs.len())
        .filter(|&k| summaries[k].is_none())
        .collect();
    let to_summarise: Vec<SummaryInput> = missing.iter().map(|&k| inputs[k]).collect();
    let mut fresh = Vec::with_capacity(to_summarise.len());
    for chunk in to_summarise.chunks(chunk_size(to_summarise.len())) {
        fresh.extend(summarizer.summarize(chunk));
        progress("summarising", fresh.len(), to_summarise.len());
    }
    let mut uncached: HashSet<usize> = HashSet::new();
    for (&k, result) in missing.iter().zip(fresh) {
        summaries[k] = Some(match result {
            Ok(s) => {
                // Units with nothing to summarise are not stored, hence never cached; they cost
                // nothing (no LLM request either), so they are not counted.
                stats.summaries_written += usize::from(!s.trim().is_empty());
                s
            }
            Err(e) => {
                tracing::warn!(unit = %docs[targets[k].0].units[targets[k].1].id, error = %e, "summary failed");
                stats.summary_failures += 1;
                uncached.insert(k);
                summarize(&inputs[k])
            }
        });
    }
    // Units with nothing worth embedding are left out.
    let items: Vec<(usize, usize, String, String)> = targets
        .iter()
        .zip(summaries)
        .zip(&hashes)
        .enumerate()
        .filter_map(|(k, (((d, i, _), summary), hash))| {
            let summary = summary.unwrap_or_default();
            let hash = if uncached.contains(&k) {
                String::new()
            } else {
                hash.clone()
            };
            (!summary.trim().is_empty()).then_some((*d, *i, summary, hash))
        })
        .collect();
    // Vectors: cached by (model, summary hash).
    let summary_hashes: Vec<String> = items
        .iter()
        .map(|(_, _, s, _)| content_hash(s.as_bytes()))
        .collect();
    let vector_cache: HashMap<&str, &Vec<f32>> = previous
        .filter(|p| p.model == embedder.model() && p.dim == embedder.dim())
        .map(|p| {
            p.embeddings
                .iter()
                .map(|e| (e.summary_hash.as_str(), &e.vector))
                .collect()
        })
        .unwrap_or_default();
    let mut vectors: Vec<Option<Vec<f32>>> = summary_hashes
        .iter()
        .map(|h| vector_cache.get(h.as_str()).map(|v| (*v).clone()))
        .collect();
    stats.vectors_reused = vectors.iter().filter(|v| v.is_some()).count();
    let missing: Vec<usize> = (0..items.len()).filter(|&k| vectors[k].is_none()).collect();
    let texts: Vec<&str> = missing.iter().map(|&k| items[k].2.as_str()).collect();
    let mut computed = Vec::with_capacity(texts.len());
    for chunk in texts.chunks(chunk_size(texts.len())) {
        computed.extend(embedder.embed(chunk)?);
        progress("embedding", computed.len(), texts.len());
    }
    if computed.len() != texts.len() {
        return Err(Error::Invalid(format!(
            "embedder {} returned {} vectors for {} texts",
            embedder.model(),
            computed.len(),
            texts.len()
        )));
    }
    // On the grid the graph stores (int8 with a scale per vector) before anything uses them:
    // RELATED sees the vectors a rerun will read back, and a rerun writes what a cold run writes.
    for (&k, v) in missing.iter().zip(computed) {
        vectors[k] = Some(ledger_core::quantize::as_stored(&v));
    }
    stats.vectors_computed = missing.len();
    let vectors: Vec<Vec<f32>> = vectors.into_iter().map(Option::unwrap_or_default).collect();
    let embeddings = items
        .into_iter()
        .zip(summary_hashes)
        .zip(vectors)
        .map(
            |(((d, i, summary, input_hash), summary_hash), vector)| UnitEmbedding {
                doc_id: docs[d].id.clone(),
                unit_id: docs[d].units[i].id.clone(),
                input_hash,
                summary_hash,
                summary,
                vector,
            },
        )
        .collect();
    Ok((
        Semantic {
            model: embedder.model().to_string(),
            dim: embedder.dim(),
            summarizer: summarizer.name().to_string(),
            embeddings,
            related: Vec::new(),
        },
        stats,
    ))
}

/// RELATED edges among the embedded units of `docs`: cosine above θ within each document (or
/// across the corpus), never where another edge already links the pair (REFERENCES > DEPENDS >
/// CONTAINS > RELATED), at most `k` per unit, the strongest first ([`bounded_pairs`]); stored
/// once per pair, from the earlier unit to the later.
pub fn related(
    docs: &[Document],
    semantic: &Semantic,
    config: &RelatedConfig,
) -> Result<Vec<Edge>> {
    let corpus_scope = config.scope == RelatedScope::Corpus;
    let doc_index: HashMap<&str, usize> = docs
        .iter()
        .enumerate()
        .map(|(d, doc)| (doc.id.as_str(), d))
        .collect();
    let unit_indices: Vec<HashMap<&str, usize>> = docs.iter().map(Document::unit_indices).collect();
    // (document, unit, embedding row), in document order.
    let mut items: Vec<(usize, usize, usize)> = semantic
        .embeddings
        .iter()
        .enumerate()
        .filter_map(|(k, e)| {
            let d = *doc_index.get(e.doc_id.as_str())?;
            Some((d, *unit_indices[d].get(e.unit_id.as_str())?, k))
        })
        .collect();
    items.sort_unstable();
    let vectors: Vec<&Vec<f32>> = items
        .iter()
        .map(|&(_, _, k)| &semantic.embeddings[k].vector)
        .collect();
    // Pairs already linked by any edge keep that edge (REFERENCES > DEPENDS > CONTAINS > RELATED).
    let mut linked: HashSet<(usize, usize, usize, usize)> = HashSet::new();
    for (d, doc) in docs.iter().enumerate() {
        let index_of = &unit_indices[d];
        for e in doc
            .parsed_edges()
            .into_iter()
            .chain(doc.depends.iter().cloned())
        {
            if e.dst_doc != doc.id {
                continue;
            }
            if let (Some(&a), Some(&b)) = (
                index_of.get(e.src_unit.as_str()),
                index_of.get(e.dst_unit.as_str()),
            ) {
                linked.insert((d, a.min(b), d, a.max(b)));
            }
        }
    }
    let groups: Vec<Vec<usize>> = if corpus_scope {
        vec![(0..items.len()).collect()]
    } else {
        let mut g: Vec<Vec<usize>> = vec![Vec::new(); docs.len()];
        for (k, (d, _, _)) in items.iter().enumerate() {
            g[*d].push(k);
        }
        g
    };
    let theta = config.theta as f32;
    let k = config.k.max(1);
    let mut related = Vec::new();
    for group in groups.iter().filter(|g| g.len() > 1) {
        let vs: Vec<Vec<f32>> = group.iter().map(|&k| vectors[k].clone()).collect();
        let skip = |a: usize, b: usize| {
            let ((d1, u1, _), (d2, u2, _)) = (items[group[a]], items[group[b]]);
            d1 == d2 && linked.contains(&(d1, u1.min(u2), d2, u1.max(u2)))
        };
        let neighbours =
            ledger_embed::neighbours(&vs, theta, k, &skip, EXACT_BELOW, HnswParams::default());
        for (a, b, score) in bounded_pairs(&neighbours, k) {
            let (x, y) = (&items[group[a]], &items[group[b]]);
            // Stored once, from the earlier unit (document order) to the later.
            let ((d1, u1), (d2, u2)) = if (x.0, x.1) <= (y.0, y.1) {
                ((x.0, x.1), (y.0, y.1))
            } else {
                ((y.0, y.1), (x.0, x.1))
            };
            related.push(Edge {
                src_doc: docs[d1].id.clone(),
                src_unit: docs[d1].units[u1].id.clone(),
                dst_doc: docs[d2].id.clone(),
                dst_unit: docs[d2].units[u2].id.clone(),
                kind: EdgeKind::Related,
                score: f64::from(score),
                evidence: semantic.model.clone(),
            });
        }
    }
    Ok(related)
}

/// `ledger similar`: the `k` units nearest to `unit` (exact cosine over the graph's embeddings).
pub fn similar(
    semantic: &Semantic,
    doc: Option<&str>,
    unit: &str,
    k: usize,
) -> Result<Vec<(String, String, f32, String)>> {
    // `--doc` as the other commands take it: an id, or any path to the document.
    let ids = semantic.embeddings.iter().map(|e| e.doc_id.as_str());
    let doc = doc
        .map(|d| ledger_retrieve::document_named(ids, d))
        .transpose()?;
    let doc = doc.as_deref();
    let matches: Vec<&UnitEmbedding> = semantic
        .embeddings
        .iter()
        .filter(|e| e.unit_id == unit && doc.is_none_or(|d| e.doc_id == d))
        .collect();
    let target = match matches.as_slice() {
        [one] => *one,
        [] => {
            return Err(Error::Invalid(format!(
                "no embedded unit `{unit}`{} (bibliography entries and empty units are not embedded)",
                doc.map(|d| format!(" in {d}")).unwrap_or_default()
            )));
        }
        many => {
            return Err(Error::Invalid(format!(
                "`{unit}` is in several documents ({}); choose one with --doc",
                many.iter()
                    .map(|e| e.doc_id.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
    };
    let mut scored: Vec<(String, String, f32, String)> = semantic
        .embeddings
        .iter()
        .filter(|e| !(e.doc_id == target.doc_id && e.unit_id == target.unit_id))
        .map(|e| {
            (
                e.doc_id.clone(),
                e.unit_id.clone(),
                ledger_embed::cosine(&target.vector, &e.vector),
                e.summary.clone(),
            )
        })
        .collect();
    scored.sort_by(|a, b| {
        b.2.total_cmp(&a.2)
            .then_with(|| (&a.0, &a.1).cmp(&(&b.0, &b.1)))
    });
    scored.truncate(k);
    Ok(scored)
}
