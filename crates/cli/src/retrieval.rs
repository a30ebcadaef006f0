//! `ledger context` and `ledger impact`: retrieval for an edit and impact sets, over a graph.

use crate::config::{EmbedConfig, RetrieveConfig};
use anyhow::{Context as _, Result, bail};
use ledger_retrieve::{Graph, Request};
use std::collections::HashMap;
use std::path::Path;

/// Loads the current version of a graph for traversal.
pub fn load(graph: &Path) -> Result<Graph> {
    let units = ledger_store::read_units(graph)
        .with_context(|| format!("reading units of {}", graph.display()))?;
    let edges = ledger_store::read_edges(graph)
        .with_context(|| format!("reading edges of {}", graph.display()))?;
    Ok(Graph::new(units, &edges))
}

/// The embedder that made the graph's embeddings (loaded with this configuration), and those
/// embeddings.
pub fn graph_embedder(
    path: &Path,
    embed: &EmbedConfig,
) -> Result<(Box<dyn ledger_embed::Embedder>, ledger_core::Semantic)> {
    let semantic = ledger_store::read_embeddings(path)?;
    if semantic.embeddings.is_empty() {
        bail!("the graph has no embeddings to compare with (indexed with --no-related?)");
    }
    let mut config = embed.clone();
    config.summarizer = "extractive".into();
    config.embedder = if semantic.model == ledger_embed::minilm::MODEL_NAME {
        "minilm".into()
    } else if semantic.model.starts_with("openai:") {
        "openai".into()
    } else {
        "hash".into()
    };
    let models = crate::semantic::models(&config, None)?;
    if models.embedder.model() != semantic.model {
        bail!(
            "the graph's embeddings come from {}, which this configuration cannot load",
            semantic.model
        );
    }
    Ok((models.embedder, semantic))
}

/// Cosine of every unit's summary embedding with the instruction's, embedded with the model that
/// made the graph's embeddings. `None`, with a note on stderr, when the graph has no embeddings or
/// this configuration cannot load their model: the context is then ranked without it.
pub fn instruction_relevance(
    path: &Path,
    graph: &Graph,
    instruction: &str,
    embed: &EmbedConfig,
) -> Option<HashMap<usize, f32>> {
    let relevance = || -> Result<HashMap<usize, f32>> {
        let (embedder, semantic) = graph_embedder(path, embed)?;
        let query = embedder
            .embed(&[instruction])?
            .pop()
            .context("no vector for the instruction")?;
        Ok(semantic
            .embeddings
            .iter()
            .filter_map(|e| {
                let i = graph.index_of(&e.doc_id, &e.unit_id)?;
                Some((i, ledger_embed::cosine(&query, &e.vector)))
            })
            .collect())
    };
    match relevance() {
        Ok(r) => Some(r),
        Err(e) => {
            eprintln!("note: no embedding relevance for the instruction: {e:#}");
            None
        }
    }
}

/// The targets of an edit: the units named, else those the instruction mentions, else the
/// `config.similar_targets` units most similar to the instruction (`relevance`).
pub fn pick_targets(
    graph: &Graph,
    targets: &[String],
    instruction: Option<&str>,
    doc: Option<&str>,
    relevance: Option<&HashMap<usize, f32>>,
    config: &RetrieveConfig,
) -> Result<Vec<usize>> {
    let mut found = Vec::new();
    for t in targets {
        found.push(graph.find(t, doc)?);
    }
    if found.is_empty()
        && let Some(text) = instruction
    {
        found = graph.targets_in(text, doc);
        if found.is_empty()
            && let Some(relevance) = relevance
        {
            let mut scored: Vec<(f32, usize)> = relevance
                .iter()
                .filter(|(i, _)| doc.is_none_or(|d| graph.units()[**i].doc_id == d))
                .map(|(&i, &c)| (c, i))
                .collect();
            scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            scored.truncate(config.similar_targets);
            for (score, i) in &scored {
                let u = &graph.units()[*i];
                eprintln!(
                    "target by similarity: {}:{} (cosine {score:.3})",
                    u.doc_id, u.unit_id
                );
            }
            found = scored.into_iter().map(|(_, i)| i).collect();
        }
    }
    if found.is_empty() {
        bail!(
            "no target: name one with --target (a unit id, a label, or \"Theorem 2\"), or mention one in --instruction"
        );
    }
    Ok(found)
}

/// What an edit asks of retrieval.
pub struct Ask<'a> {
    /// Units named as targets (ids, labels, "Theorem 2").
    pub targets: &'a [String],
    /// The instruction.
    pub instruction: Option<&'a str>,
    /// The document the targets are in.
    pub doc: Option<&'a str>,
    /// Token budget.
    pub budget: usize,
}

/// The packed context of an edit: targets as [`pick_targets`] finds them, ranked with the
/// configured [`ledger_retrieve::Ranking`] and the instruction's embedding relevance.
pub fn retrieve(
    path: &Path,
    graph: &Graph,
    ask: &Ask,
    config: &crate::config::Config,
) -> Result<ledger_retrieve::Context> {
    // The instruction's embedding is needed when it ranks (`mix_dense`) or when it picks the
    // targets (none named, none mentioned).
    let ranking = config.retrieve.ranking();
    let needs_targets = ask.targets.is_empty()
        && ask
            .instruction
            .is_some_and(|text| graph.targets_in(text, ask.doc).is_empty());
    let relevance = ask
        .instruction
        .filter(|_| ranking.dense > 0.0 || needs_targets)
        .and_then(|text| instruction_relevance(path, graph, text, &config.embed));
    let found = pick_targets(
        graph,
        ask.targets,
        ask.instruction,
        ask.doc,
        relevance.as_ref(),
        &config.retrieve,
    )?;
    Ok(graph.context(
        &Request {
            targets: &found,
            instruction: ask.instruction,
            dense: relevance.as_ref(),
            budget: ask.budget,
        },
        &ranking,
    ))
}

/// `ledger context`: the packed context as JSON or Markdown, and tokens retrieved / document
/// tokens on stderr.
pub fn context(
    path: &Path,
    graph: &Graph,
    ask: &Ask,
    config: &crate::config::Config,
    markdown: bool,
) -> Result<String> {
    let c = retrieve(path, graph, ask, config)?;
    eprintln!(
        "context: {} units, {} tokens of a {} budget = {:.1}% of the document's {} tokens ({} candidates left out)",
        c.units.len(),
        c.tokens,
        c.budget,
        100.0 * c.tokens as f64 / c.document_tokens.max(1) as f64,
        c.document_tokens,
        c.left_out
    );
    Ok(if markdown {
        let mut s = String::new();
        if let Some(text) = ask.instruction {
            s.push_str(&format!("# Instruction\n\n{text}\n\n"));
        }
        s.push_str(&ledger_retrieve::markdown(graph, &c));
        s
    } else {
        serde_json::to_string_pretty(&c)?
    })
}

/// `ledger impact`: the units that may break if `unit` changes, with the path linking each.
pub fn impact(graph: &Graph, unit: &str, doc: Option<&str>, depth: usize) -> Result<String> {
    let target = graph.find(unit, doc)?;
    let units = graph.units();
    let mut out = String::new();
    let impacted = graph.impact(target, depth);
    for i in &impacted {
        let u = &units[i.unit];
        let path: Vec<String> = i
            .path
            .iter()
            .map(|(s, kind)| format!("{} -{}->", units[*s].unit_id, kind.as_str()))
            .chain([units[target].unit_id.clone()])
            .collect();
        out.push_str(&format!(
            "{}:{}: {} `{}` ({}): {}\n",
            u.source_path,
            u.line,
            u.kind,
            u.unit_id,
            u.doc_id,
            path.join(" ")
        ));
    }
    eprintln!(
        "{} units may be affected by a change to `{}` (depth {depth})",
        impacted.len(),
        units[target].unit_id
    );
    Ok(out)
}
