//! `ledger context` and `ledger impact`: retrieval for an edit and impact sets, over a graph.

use crate::config::{EmbedConfig, RetrieveConfig};
use anyhow::{Context as _, Result, bail};
use ledger_retrieve::{Graph, Weights};
use std::path::Path;

/// Loads the current version of a graph for traversal.
pub fn load(graph: &Path) -> Result<Graph> {
    let units = ledger_store::read_units(graph)
        .with_context(|| format!("reading units of {}", graph.display()))?;
    let edges = ledger_store::read_edges(graph)
        .with_context(|| format!("reading edges of {}", graph.display()))?;
    Ok(Graph::new(units, &edges))
}

/// The weights the configuration sets.
pub fn weights(config: &RetrieveConfig) -> Weights {
    Weights {
        references: config.weight_references,
        depends: config.weight_depends,
        contains: config.weight_contains,
        related: config.weight_related,
        decay: config.decay,
    }
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

/// Targets for an instruction that names no unit: the `k` units whose summary embeddings are
/// nearest to the instruction's, embedded with the model that made the graph's embeddings.
pub fn targets_by_similarity(
    path: &Path,
    graph: &Graph,
    instruction: &str,
    doc: Option<&str>,
    embed: &EmbedConfig,
    k: usize,
) -> Result<Vec<usize>> {
    let (embedder, semantic) = graph_embedder(path, embed)?;
    let query = embedder
        .embed(&[instruction])?
        .pop()
        .context("no vector for the instruction")?;
    let mut scored: Vec<(f32, usize)> = semantic
        .embeddings
        .iter()
        .filter(|e| doc.is_none_or(|d| e.doc_id == d))
        .filter_map(|e| {
            let i = graph.index_of(&e.doc_id, &e.unit_id)?;
            Some((ledger_embed::cosine(&query, &e.vector), i))
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    for (score, i) in scored.iter().take(k) {
        let u = &graph.units()[*i];
        eprintln!(
            "target by similarity: {}:{} (cosine {score:.3})",
            u.doc_id, u.unit_id
        );
    }
    Ok(scored.into_iter().take(k).map(|(_, i)| i).collect())
}

/// The targets of an edit: the units named, else those the instruction mentions, else the units
/// most similar to the instruction.
pub fn pick_targets(
    path: &Path,
    graph: &Graph,
    targets: &[String],
    instruction: Option<&str>,
    doc: Option<&str>,
    config: &RetrieveConfig,
    embed: &EmbedConfig,
) -> Result<Vec<usize>> {
    let mut found = Vec::new();
    for t in targets {
        found.push(graph.find(t, doc)?);
    }
    if found.is_empty()
        && let Some(text) = instruction
    {
        found = graph.targets_in(text, doc);
        if found.is_empty() {
            found = targets_by_similarity(path, graph, text, doc, embed, config.similar_targets)?;
        }
    }
    if found.is_empty() {
        bail!(
            "no target: name one with --target (a unit id, a label, or \"Theorem 2\"), or mention one in --instruction"
        );
    }
    Ok(found)
}

/// `ledger context`: the targets (named, mentioned in the instruction, or else the units most
/// similar to it), the packed context as JSON or Markdown, and tokens retrieved / document
/// tokens on stderr.
#[allow(clippy::too_many_arguments)]
pub fn context(
    path: &Path,
    graph: &Graph,
    targets: &[String],
    instruction: Option<&str>,
    doc: Option<&str>,
    budget: usize,
    config: &RetrieveConfig,
    embed: &EmbedConfig,
    markdown: bool,
) -> Result<String> {
    let found = pick_targets(path, graph, targets, instruction, doc, config, embed)?;
    let c = graph.context(&found, budget, &weights(config), config.depth);
    eprintln!(
        "context: {} units, {} tokens of a {} budget = {:.1}% of the document's {} tokens ({} linked units left out)",
        c.units.len(),
        c.tokens,
        c.budget,
        100.0 * c.tokens as f64 / c.document_tokens.max(1) as f64,
        c.document_tokens,
        c.left_out
    );
    Ok(if markdown {
        let mut s = String::new();
        if let Some(text) = instruction {
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
