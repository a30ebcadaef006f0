//! The semantic layer of `ledger index`: summaries → embeddings → RELATED edges.

use crate::config::RelatedConfig;
use anyhow::{Result, bail};
use ledger_core::{Document, Edge, EdgeKind, Semantic, UnitEmbedding, UnitKind, content_hash};
use ledger_embed::summary::{SummaryInput, summarize};
use ledger_embed::{Embedder, HashingEmbedder, HnswParams, NeighbourIndex, exact_pairs_above};
use std::collections::HashSet;

/// Up to this many vectors in a scope the exact all-pairs search is used: it is deterministic (the
/// HNSW build is not: hnsw_rs inserts in parallel with random levels) and, at opt-level 3, about as
/// fast as building the index (20,000 vectors: 8 s exact against 18 s HNSW on 2 cores).
const EXACT_BELOW: usize = 20_000;

/// The embedder a configuration names.
pub fn embedder(name: &str) -> Result<Box<dyn Embedder>> {
    match name {
        "hash" => Ok(Box::new(HashingEmbedder)),
        other => bail!("related.embedder = {other:?}: expected \"hash\""),
    }
}

/// The text around a unit that its summary needs: a section's first paragraphs, the paragraph
/// before an equation.
fn context(doc: &Document, i: usize) -> String {
    let u = &doc.units[i];
    match u.kind {
        UnitKind::Section => doc
            .units
            .iter()
            .filter(|c| c.parent == Some(i) && c.kind == UnitKind::Paragraph)
            .take(3)
            .map(|c| c.text.as_str())
            .collect::<Vec<_>>()
            .join("\n\n"),
        UnitKind::Equation => {
            // Inside a theorem or proof: its text before the display; else the paragraph before.
            match u.parent.map(|p| &doc.units[p]) {
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
                _ => doc.units[..i]
                    .iter()
                    .rev()
                    .find(|p| p.parent == u.parent && p.kind == UnitKind::Paragraph)
                    .map(|p| p.text.clone())
                    .unwrap_or_default(),
            }
        }
        _ => String::new(),
    }
}

/// Summaries, embeddings and RELATED edges for the documents (bibliography entries are not embedded).
pub fn compute(docs: &[Document], config: &RelatedConfig) -> Result<Semantic> {
    let embedder = embedder(&config.embedder)?;
    let corpus_scope = match config.scope.as_str() {
        "document" => false,
        "corpus" => true,
        other => bail!("related.scope = {other:?}: expected \"document\" or \"corpus\""),
    };
    let mut items: Vec<(usize, usize, String)> = Vec::new();
    for (d, doc) in docs.iter().enumerate() {
        for (i, u) in doc.units.iter().enumerate() {
            if matches!(u.kind, UnitKind::Document | UnitKind::Bibitem) {
                continue;
            }
            let ctx = context(doc, i);
            let summary = summarize(&SummaryInput {
                kind: u.kind,
                env: &u.env,
                title: u.title.as_deref(),
                text: &u.text,
                context: &ctx,
            });
            if !summary.trim().is_empty() {
                items.push((d, i, summary));
            }
        }
    }
    let texts: Vec<&str> = items.iter().map(|(_, _, s)| s.as_str()).collect();
    let vectors = embedder.embed(&texts)?;
    // Pairs already linked by any edge keep that edge (REFERENCES > DEPENDS > CONTAINS > RELATED).
    let mut linked: HashSet<(usize, usize, usize, usize)> = HashSet::new();
    for (d, doc) in docs.iter().enumerate() {
        let index_of: std::collections::HashMap<&str, usize> = doc
            .units
            .iter()
            .enumerate()
            .map(|(i, u)| (u.id.as_str(), i))
            .collect();
        for e in doc
            .contains_edges()
            .into_iter()
            .chain(doc.reference_edges())
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
    let params = HnswParams {
        k: config.k.max(1),
        ..HnswParams::default()
    };
    let mut related = Vec::new();
    for group in groups.iter().filter(|g| g.len() > 1) {
        let vs: Vec<Vec<f32>> = group.iter().map(|&k| vectors[k].clone()).collect();
        let pairs = if vs.len() < EXACT_BELOW {
            exact_pairs_above(&vs, theta)
        } else {
            NeighbourIndex::build(&vs, params).pairs_above(&vs, theta)
        };
        for (a, b, score) in pairs {
            let (x, y) = (&items[group[a]], &items[group[b]]);
            // Stored once, from the earlier unit (document order) to the later.
            let ((d1, u1), (d2, u2)) = if (x.0, x.1) <= (y.0, y.1) {
                ((x.0, x.1), (y.0, y.1))
            } else {
                ((y.0, y.1), (x.0, x.1))
            };
            if d1 == d2 && linked.contains(&(d1, u1.min(u2), d2, u1.max(u2))) {
                continue;
            }
            related.push(Edge {
                src_doc: docs[d1].id.clone(),
                src_unit: docs[d1].units[u1].id.clone(),
                dst_doc: docs[d2].id.clone(),
                dst_unit: docs[d2].units[u2].id.clone(),
                kind: EdgeKind::Related,
                score: f64::from(score),
                evidence: embedder.model().to_string(),
            });
        }
    }
    let embeddings = items
        .iter()
        .zip(vectors)
        .map(|((d, i, summary), vector)| UnitEmbedding {
            doc_id: docs[*d].id.clone(),
            unit_id: docs[*d].units[*i].id.clone(),
            summary_hash: content_hash(summary.as_bytes()),
            summary: summary.clone(),
            vector,
        })
        .collect();
    Ok(Semantic {
        model: embedder.model().to_string(),
        dim: embedder.dim(),
        embeddings,
        related,
    })
}

/// `ledger similar`: the `k` units nearest to `unit` (exact cosine over the graph's embeddings).
pub fn similar(
    semantic: &Semantic,
    doc: Option<&str>,
    unit: &str,
    k: usize,
) -> Result<Vec<(String, String, f32, String)>> {
    let matches: Vec<&UnitEmbedding> = semantic
        .embeddings
        .iter()
        .filter(|e| e.unit_id == unit && doc.is_none_or(|d| e.doc_id == d))
        .collect();
    let target = match matches.as_slice() {
        [one] => *one,
        [] => bail!(
            "no embedded unit `{unit}`{} (bibliography entries and empty units are not embedded)",
            doc.map(|d| format!(" in {d}")).unwrap_or_default()
        ),
        many => bail!(
            "`{unit}` is in several documents ({}); choose one with --doc",
            many.iter()
                .map(|e| e.doc_id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
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
