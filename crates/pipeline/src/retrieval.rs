//! Retrieval for an edit and impact sets over a stored graph: loading, the instruction's
//! embedding relevance, target picking, the packed context.

use crate::config::{Config, RetrieveConfig, SummarizerKind};
use crate::{Error, Result};
use ledger_retrieve::{Graph, Request};

pub use ledger_retrieve::markdown;
use std::collections::HashMap;
use std::fmt;
use std::path::Path;

/// Loads the current version of a graph for traversal.
pub fn load(graph: &Path) -> Result<Graph> {
    let units = ledger_store::read_units(graph).map_err(crate::store(|| {
        format!("reading units of {}", graph.display())
    }))?;
    let edges = ledger_store::read_edges(graph).map_err(crate::store(|| {
        format!("reading edges of {}", graph.display())
    }))?;
    Ok(Graph::new(units, &edges))
}

/// The embedder that made the graph's embeddings (loaded with this configuration), and those
/// embeddings.
pub fn graph_embedder(
    path: &Path,
    config: &Config,
) -> Result<(Box<dyn ledger_embed::Embedder>, ledger_core::Semantic)> {
    let semantic = ledger_store::read_embeddings(path).map_err(crate::store(|| {
        format!("reading embeddings of {}", path.display())
    }))?;
    if semantic.embeddings.is_empty() {
        return Err(Error::Invalid(
            "the graph has no embeddings to compare with (indexed with --no-related?)".into(),
        ));
    }
    let mut embed = config.embed.clone();
    embed.summarizer = SummarizerKind::Extractive;
    embed.embedder = crate::semantic::embedder_kind_of(&semantic.model);
    let models = crate::semantic::models(&embed, &config.tls, None)?;
    if models.embedder.model() != semantic.model {
        return Err(Error::Invalid(format!(
            "the graph's embeddings come from {}, which this configuration cannot load",
            semantic.model
        )));
    }
    Ok((models.embedder, semantic))
}

/// Cosine of every unit's summary embedding with the instruction's, embedded with the model that
/// made the graph's embeddings. An error when the graph has no embeddings or this configuration
/// cannot load their model (callers rank without it then).
pub fn instruction_relevance(
    path: &Path,
    graph: &Graph,
    instruction: &str,
    config: &Config,
) -> Result<HashMap<usize, f32>> {
    let (embedder, semantic) = graph_embedder(path, config)?;
    let query = embedder
        .embed(&[instruction])?
        .pop()
        .ok_or_else(|| Error::Invalid("no vector for the instruction".into()))?;
    Ok(semantic
        .embeddings
        .iter()
        .filter_map(|e| {
            let i = graph.index_of(&e.doc_id, &e.unit_id)?;
            Some((i, ledger_embed::cosine(&query, &e.vector)))
        })
        .collect())
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

/// The targets of an edit, and notes on how they were found.
pub struct Targets {
    /// Graph indices.
    pub units: Vec<usize>,
    /// "target by similarity: …" for targets taken by embedding similarity.
    pub notes: Vec<String>,
}

/// The targets of an edit: the units named, else those the instruction mentions (`mentioned`,
/// as [`Graph::targets_in`] finds them), else the `config.similar_targets` units most similar to
/// the instruction (`relevance`).
pub fn pick_targets(
    graph: &Graph,
    ask: &Ask,
    mentioned: Vec<usize>,
    relevance: Option<&HashMap<usize, f32>>,
    config: &RetrieveConfig,
) -> Result<Targets> {
    let doc = ask.doc;
    let mut found = Vec::new();
    let mut notes = Vec::new();
    for t in ask.targets {
        found.push(graph.find(t, doc)?);
    }
    if found.is_empty() && ask.instruction.is_some() {
        found = mentioned;
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
                notes.push(format!(
                    "target by similarity: {}:{} (cosine {score:.3})",
                    u.doc_id, u.unit_id
                ));
            }
            found = scored.into_iter().map(|(_, i)| i).collect();
        }
    }
    if found.is_empty() {
        return Err(Error::Invalid(
            "no target: name one with --target (a unit id, a label, or \"Theorem 2\"), or mention one in --instruction".into(),
        ));
    }
    Ok(Targets {
        units: found,
        notes,
    })
}

/// A packed context and notes on how it was made.
pub struct Retrieved {
    /// The context.
    pub context: ledger_retrieve::Context,
    /// Notes for the user (targets by similarity, no embedding relevance).
    pub notes: Vec<String>,
}

/// The packed context of an edit: targets as [`pick_targets`] finds them, ranked with the
/// configured [`ledger_retrieve::Ranking`] and the instruction's embedding relevance.
pub fn retrieve(path: &Path, graph: &Graph, ask: &Ask, config: &Config) -> Result<Retrieved> {
    // The document as the user named it (a path from any folder) becomes its id.
    let doc = ask.doc.map(|d| graph.document(d)).transpose()?;
    let ask = &Ask {
        doc: doc.as_deref(),
        ..*ask
    };
    // The instruction's embedding is needed when it ranks (`mix_dense`) or when it picks the
    // targets (none named, none mentioned).
    let ranking = config.retrieve.ranking();
    let mentioned = match ask.instruction {
        Some(text) if ask.targets.is_empty() => graph.targets_in(text, ask.doc),
        _ => Vec::new(),
    };
    let needs_targets = ask.targets.is_empty() && ask.instruction.is_some() && mentioned.is_empty();
    let mut notes = Vec::new();
    let relevance = ask
        .instruction
        .filter(|_| ranking.dense > 0.0 || needs_targets)
        .and_then(
            |text| match instruction_relevance(path, graph, text, config) {
                Ok(r) => Some(r),
                Err(e) => {
                    notes.push(format!(
                        "note: no embedding relevance for the instruction: {}",
                        crate::error_chain(&e)
                    ));
                    None
                }
            },
        );
    let targets = pick_targets(graph, ask, mentioned, relevance.as_ref(), &config.retrieve)?;
    notes.extend(targets.notes);
    let context = graph.context(
        &Request {
            targets: &targets.units,
            instruction: ask.instruction,
            dense: relevance.as_ref(),
            budget: ask.budget,
        },
        &ranking,
    );
    // A target larger than the budget cannot be in its own context: say so, not silently.
    let units = graph.units();
    for &t in &targets.units {
        if !context.units.iter().any(|taken| taken.unit == t) {
            notes.push(format!(
                "note: the target `{}` ({} tokens) is larger than what is left of the {}-token budget and is not in the context; raise --budget",
                units[t].unit_id, units[t].tokens, context.budget
            ));
        }
    }
    Ok(Retrieved { context, notes })
}

/// One unit that may break, with the path of edges that links it to the changed unit.
pub struct Impacted {
    /// Its source file and line.
    pub location: (String, usize),
    /// Its kind, id and document.
    pub unit: (ledger_core::UnitKind, String, String),
    /// `a -REFERENCES-> b -DEPENDS(0.62)-> target`: a DEPENDS edge with its probability when the
    /// judge gave one.
    pub path: String,
    /// The product of the path's scores: how likely the change reaches the unit.
    pub confidence: f64,
}

/// `ledger impact`'s answer.
pub struct ImpactReport {
    /// The changed unit's id.
    pub target: String,
    /// Hops followed.
    pub depth: usize,
    /// The units that may break.
    pub impacted: Vec<Impacted>,
}

impl fmt::Display for ImpactReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for i in &self.impacted {
            let (kind, id, doc) = &i.unit;
            writeln!(
                f,
                "{}:{}: {kind} `{id}` ({doc}): {}",
                i.location.0, i.location.1, i.path
            )?;
        }
        Ok(())
    }
}

/// `ledger impact`: the units that may break if `unit` changes, with the path linking each.
pub fn impact(graph: &Graph, unit: &str, doc: Option<&str>, depth: usize) -> Result<ImpactReport> {
    let doc = doc.map(|d| graph.document(d)).transpose()?;
    let target = graph.find(unit, doc.as_deref())?;
    let units = graph.units();
    let impacted = graph
        .impact(target, depth)
        .iter()
        .map(|i| {
            let u = &units[i.unit];
            let path: Vec<String> = i
                .path
                .iter()
                .map(|(s, kind, score)| {
                    if *score < 1.0 {
                        format!("{} -{}({score:.2})->", units[*s].unit_id, kind.as_str())
                    } else {
                        format!("{} -{}->", units[*s].unit_id, kind.as_str())
                    }
                })
                .chain([units[target].unit_id.clone()])
                .collect();
            Impacted {
                location: (u.source_path.clone(), u.line),
                unit: (u.kind, u.unit_id.clone(), u.doc_id.clone()),
                path: path.join(" "),
                confidence: i.confidence,
            }
        })
        .collect();
    Ok(ImpactReport {
        target: units[target].unit_id.clone(),
        depth,
        impacted,
    })
}
