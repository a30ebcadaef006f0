//! Retrieval strategies for an edit, all over the same graph: baselines (full document, a
//! sliding window, flat RAG by cosine, hierarchical RAG along CONTAINS only), LEDGER, the
//! edge-type ablations and the weight configurations.

use ledger_retrieve::{Graph, Weights};
use serde::Serialize;
use std::collections::HashMap;

/// How a strategy picks units.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub enum Method {
    /// The whole document.
    Full,
    /// Units in document order around the targets, up to this many tokens.
    Window(usize),
    /// The units whose embeddings are nearest the targets', greedily under the budget.
    FlatRag,
    /// Best-first expansion over the graph's edges with these weights, under the budget.
    Graph(Weights),
}

/// A named strategy and the table it is reported in.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Strategy {
    /// Name in reports.
    pub name: String,
    /// `baseline`, `ledger`, `ablation` or `weights`.
    pub group: &'static str,
    /// How it picks units.
    pub method: Method,
}

/// Every strategy of the evaluation, from `base` (the configured LEDGER weights).
pub fn all(base: Weights) -> Vec<Strategy> {
    let with = |references, depends, contains, related| Weights {
        references,
        depends,
        contains,
        related,
        decay: base.decay,
    };
    let s = |name: &str, group: &'static str, method: Method| Strategy {
        name: name.to_string(),
        group,
        method,
    };
    vec![
        s("full document", "baseline", Method::Full),
        s("sliding window 4K", "baseline", Method::Window(4096)),
        s("flat RAG (cosine)", "baseline", Method::FlatRag),
        s(
            "hierarchical RAG (CONTAINS)",
            "baseline",
            Method::Graph(with(0.0, 0.0, base.contains, 0.0)),
        ),
        s("LEDGER", "ledger", Method::Graph(base)),
        s(
            "CONTAINS + RELATED",
            "ablation",
            Method::Graph(with(0.0, 0.0, base.contains, base.related)),
        ),
        s(
            "+ DEPENDS",
            "ablation",
            Method::Graph(with(0.0, base.depends, base.contains, base.related)),
        ),
        s("+ REFERENCES (LEDGER)", "ablation", Method::Graph(base)),
        s(
            "100/50/30/10",
            "weights",
            Method::Graph(with(100.0, 50.0, 30.0, 10.0)),
        ),
        s(
            "200/100/60/20 (scaled)",
            "weights",
            Method::Graph(with(200.0, 100.0, 60.0, 20.0)),
        ),
        s(
            "100/150/30/10 (DEPENDS boosted)",
            "weights",
            Method::Graph(with(100.0, 150.0, 30.0, 10.0)),
        ),
        s(
            "100/50/30/120 (RELATED boosted)",
            "weights",
            Method::Graph(with(100.0, 50.0, 30.0, 120.0)),
        ),
        s(
            "25/25/25/25 (uniform)",
            "weights",
            Method::Graph(with(25.0, 25.0, 25.0, 25.0)),
        ),
    ]
}

/// What a strategy retrieved.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Retrieved {
    /// Graph unit indices.
    pub units: Vec<usize>,
    /// Their tokens.
    pub tokens: usize,
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let (mut d, mut na, mut nb) = (0.0f32, 0.0f32, 0.0f32);
    for (x, y) in a.iter().zip(b) {
        d += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        d / (na.sqrt() * nb.sqrt())
    }
}

/// Runs `method` for `targets` of one document (`doc_units`: its graph indices in document
/// order) under `budget` tokens; `vectors` holds the units' embeddings.
pub fn retrieve(
    method: &Method,
    graph: &Graph,
    doc_units: &[usize],
    targets: &[usize],
    budget: usize,
    depth: usize,
    vectors: &HashMap<usize, Vec<f32>>,
) -> Retrieved {
    let units = graph.units();
    let mut out = Retrieved::default();
    let mut taken = std::collections::HashSet::new();
    let mut take = |out: &mut Retrieved, u: usize, limit: usize| {
        if out.tokens + units[u].tokens <= limit && taken.insert(u) {
            out.tokens += units[u].tokens;
            out.units.push(u);
        }
    };
    match method {
        Method::Full => {
            for &u in doc_units {
                take(&mut out, u, usize::MAX);
            }
        }
        Method::Window(size) => {
            for &t in targets {
                take(&mut out, t, *size);
            }
            let Some(centre) = targets
                .first()
                .and_then(|t| doc_units.iter().position(|u| u == t))
            else {
                return out;
            };
            let (mut left, mut right) = (centre, centre + 1);
            while left > 0 || right < doc_units.len() {
                if left > 0 {
                    left -= 1;
                    take(&mut out, doc_units[left], *size);
                }
                if right < doc_units.len() {
                    take(&mut out, doc_units[right], *size);
                    right += 1;
                }
            }
        }
        Method::FlatRag => {
            for &t in targets {
                take(&mut out, t, budget);
            }
            // The query: the mean of the targets' vectors.
            let mut query: Vec<f32> = Vec::new();
            for v in targets.iter().filter_map(|t| vectors.get(t)) {
                if query.is_empty() {
                    query = vec![0.0; v.len()];
                }
                for (q, x) in query.iter_mut().zip(v) {
                    *q += x;
                }
            }
            let mut scored: Vec<(f32, usize)> = doc_units
                .iter()
                .filter_map(|&u| Some((cosine(&query, vectors.get(&u)?), u)))
                .collect();
            scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            for (_, u) in scored {
                take(&mut out, u, budget);
            }
        }
        Method::Graph(weights) => {
            let c = graph.context(targets, budget, weights, depth);
            out.tokens = c.tokens;
            out.units = c.units.iter().map(|t| t.unit).collect();
        }
    }
    out
}
