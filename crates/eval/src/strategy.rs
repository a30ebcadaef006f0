//! Retrieval strategies for an edit, all over the same graph: baselines (the document from its
//! start, reading around the target, BM25, dense retrieval, hierarchical RAG along CONTAINS only),
//! LEDGER, its ablations and weight configurations.

use ledger_core::EdgeKind::{Contains, Depends, References, Related};
use ledger_retrieve::{Graph, Ranking, Request, Weights};
use serde::Serialize;
use std::collections::HashMap;

/// How a strategy picks units.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub enum Method {
    /// The document in order from its start (the whole document when the limit allows).
    Full,
    /// Reading around the target: the targets and their subtrees, then the units nearest to
    /// them in document order, up to this many tokens (`None`: the budget).
    Window(Option<usize>),
    /// The targets, then units by BM25 against the instruction and the targets' text.
    Lexical,
    /// The targets, then units by the cosine of their summary embedding with the query's.
    Dense,
    /// LEDGER's ranking with these settings.
    Ledger(Ranking),
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

fn strategy(name: &str, group: &'static str, method: Method) -> Strategy {
    Strategy {
        name: name.to_string(),
        group,
        method,
    }
}

/// The strategies of the generated track, from `base` (the configured ranking): the baselines,
/// LEDGER, the edge-type ablations and the weight configurations (the walk alone, so that the
/// edge types are what is compared).
pub fn all(base: Ranking) -> Vec<Strategy> {
    let w = base.weights;
    let with = |references, depends, contains, related| {
        Weights::new(&[
            (References, references),
            (Depends, depends),
            (Contains, contains),
            (Related, related),
        ])
    };
    let walk = |weights| Method::Ledger(Ranking::walk_only(weights));
    let s = strategy;
    vec![
        s("full document", "baseline", Method::Full),
        s("sliding window 4K", "baseline", Method::Window(Some(4096))),
        s("flat RAG (cosine)", "baseline", Method::Dense),
        s(
            "hierarchical RAG (CONTAINS)",
            "baseline",
            walk(w.only(&[Contains])),
        ),
        s("LEDGER", "ledger", Method::Ledger(base)),
        s(
            "CONTAINS + RELATED",
            "ablation",
            walk(w.only(&[Contains, Related])),
        ),
        s(
            "+ DEPENDS",
            "ablation",
            walk(w.only(&[Depends, Contains, Related])),
        ),
        s("+ REFERENCES (walk only)", "ablation", walk(w)),
        s(
            "100/50/30/10",
            "weights",
            walk(with(100.0, 50.0, 30.0, 10.0)),
        ),
        s(
            "200/100/60/20 (scaled)",
            "weights",
            walk(with(200.0, 100.0, 60.0, 20.0)),
        ),
        s(
            "100/150/30/10 (DEPENDS boosted)",
            "weights",
            walk(with(100.0, 150.0, 30.0, 10.0)),
        ),
        s(
            "100/50/30/120 (RELATED boosted)",
            "weights",
            walk(with(100.0, 50.0, 30.0, 120.0)),
        ),
        s(
            "25/25/25/25 (uniform)",
            "weights",
            walk(with(25.0, 25.0, 25.0, 25.0)),
        ),
    ]
}

/// The ablation that takes the typed edges (REFERENCES, DEPENDS and the proof links) out of the
/// walk and the direct links, everything else equal.
pub const WITHOUT_TYPED: &str = "without typed edges";

/// The strategies of the real-edit track, from `base`: the baselines under the same budget, LEDGER,
/// and LEDGER without each of its parts.
pub fn real(base: Ranking) -> Vec<Strategy> {
    let s = strategy;
    let w = base.weights;
    let without = |f: &dyn Fn(&mut Ranking)| {
        let mut r = base;
        f(&mut r);
        Method::Ledger(r)
    };
    vec![
        s("document from the start", "baseline", Method::Full),
        s(
            "reading around the target",
            "baseline",
            Method::Window(None),
        ),
        s("BM25", "baseline", Method::Lexical),
        s("dense (summary embeddings)", "baseline", Method::Dense),
        s(
            "hierarchical (CONTAINS)",
            "baseline",
            Method::Ledger(Ranking::walk_only(w.only(&[Contains]))),
        ),
        s("LEDGER", "ledger", Method::Ledger(base)),
        s("without the walk", "ablation", without(&|r| r.graph = 0.0)),
        s("without BM25", "ablation", without(&|r| r.lexical = 0.0)),
        s(
            "without embeddings",
            "ablation",
            without(&|r| r.dense = 0.0),
        ),
        s(
            "without locality",
            "ablation",
            without(&|r| r.locality = 0.0),
        ),
        s(
            "without sections",
            "ablation",
            without(&|r| r.section = 0.0),
        ),
        s(
            "without direct links",
            "ablation",
            without(&|r| r.linked = 0.0),
        ),
        s(
            "without proof links",
            "ablation",
            without(&|r| r.proof = r.weights.of(Depends)),
        ),
        s(
            "walk over CONTAINS + RELATED",
            "ablation",
            without(&|r| {
                r.weights = r.weights.only(&[Contains, Related]);
                r.proof = 0.0;
            }),
        ),
        s(
            "walk without REFERENCES",
            "ablation",
            without(&|r| r.weights = r.weights.with(References, 0.0)),
        ),
        s(
            WITHOUT_TYPED,
            "ablation",
            without(&|r| {
                r.weights = r.weights.only(&[Contains, Related]);
                r.proof = 0.0;
                r.linked = 0.0;
            }),
        ),
        s(
            "walk alone",
            "ablation",
            Method::Ledger(Ranking::walk_only(w)),
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

/// What a case gives the strategies: its targets (graph indices), the instruction, the dense
/// relevance.
#[derive(Debug, Clone, Copy, Default)]
pub struct Query<'a> {
    /// The units to edit.
    pub targets: &'a [usize],
    /// The instruction (BM25 and LEDGER's lexical signal).
    pub instruction: Option<&'a str>,
    /// Cosine of units' summary embeddings with the query's (dense retrieval and LEDGER's
    /// dense signal).
    pub dense: Option<&'a HashMap<usize, f32>>,
}

/// Cosine of two vectors (0 when either is zero).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
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

/// Cosine of each unit's vector with `query`.
pub fn dense_scores(query: &[f32], vectors: &HashMap<usize, Vec<f32>>) -> HashMap<usize, f32> {
    vectors
        .iter()
        .map(|(&u, v)| (u, cosine(query, v)))
        .collect()
}

/// Runs `method` for the query's targets in one document (`doc_units`: its graph indices in
/// document order) under `budget` tokens.
pub fn retrieve(
    method: &Method,
    graph: &Graph,
    doc_units: &[usize],
    budget: usize,
    query: Query,
) -> Retrieved {
    retrieve_at(method, graph, doc_units, &[budget], query)
        .pop()
        .unwrap_or_default()
}

/// [`retrieve`] under each of `budgets`: the units are ranked once and packed per budget (each
/// unit taken, in rank order, while it fits).
pub fn retrieve_at(
    method: &Method,
    graph: &Graph,
    doc_units: &[usize],
    budgets: &[usize],
    query: Query,
) -> Vec<Retrieved> {
    let targets = query.targets;
    let units = graph.units();
    let pack = |order: &[usize], budget: usize| {
        let mut out = Retrieved::default();
        let mut taken = std::collections::HashSet::new();
        for &u in order {
            if out.tokens + units[u].tokens <= budget && taken.insert(u) {
                out.tokens += units[u].tokens;
                out.units.push(u);
            }
        }
        out
    };
    let by_score = |scores: &HashMap<usize, f32>| -> Vec<usize> {
        let mut scored: Vec<(f32, usize)> = doc_units
            .iter()
            .filter_map(|&u| Some((*scores.get(&u)?, u)))
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        targets
            .iter()
            .copied()
            .chain(scored.into_iter().map(|(_, u)| u))
            .collect()
    };
    let order: Vec<usize> = match method {
        Method::Full => doc_units.to_vec(),
        Method::Window(size) => {
            let mut order: Vec<usize> = Vec::new();
            for &t in targets {
                order.push(t);
                order.extend(graph.subtree(t));
            }
            if let Some(centre) = targets
                .first()
                .and_then(|t| doc_units.iter().position(|u| u == t))
            {
                let (mut left, mut right) = (centre, centre + 1);
                while left > 0 || right < doc_units.len() {
                    if left > 0 {
                        left -= 1;
                        order.push(doc_units[left]);
                    }
                    if right < doc_units.len() {
                        order.push(doc_units[right]);
                        right += 1;
                    }
                }
            }
            if let Some(n) = size {
                return budgets.iter().map(|_| pack(&order, *n)).collect();
            }
            order
        }
        Method::Lexical => {
            let mut text = query.instruction.unwrap_or_default().to_string();
            for &t in targets {
                text.push('\n');
                text.push_str(&units[t].text);
            }
            by_score(&graph.lexical().scores(&text).into_iter().collect())
        }
        Method::Dense => by_score(query.dense.unwrap_or(&HashMap::new())),
        Method::Ledger(ranking) => {
            let signals = graph.signals(
                &Request {
                    targets,
                    instruction: query.instruction,
                    dense: query.dense,
                    budget: 0,
                },
                ranking,
            );
            let ranked = signals.rank(ranking);
            return budgets
                .iter()
                .map(|&b| {
                    let units = ranked.pack_units(graph, b);
                    Retrieved {
                        tokens: units.iter().map(|&u| graph.units()[u].tokens).sum(),
                        units,
                    }
                })
                .collect();
        }
    };
    budgets.iter().map(|&b| pack(&order, b)).collect()
}
