//! Dependency-aware retrieval and impact sets over a graph's units and edges (petgraph).
//!
//! - [`Graph::context`]: the context an edit of some target units needs: the targets first, then
//!   the units linked to them, upstream (what they reference or depend on) and downstream (what
//!   references or depends on them), scored by edge kind (REFERENCES 100, DEPENDS 50, CONTAINS
//!   30, RELATED 10 by default) with a decay per hop, packed greedily under a token budget.
//! - [`Graph::impact`]: the units that may break when a unit changes: whatever references it or
//!   depends on it, transitively, each with the path that links it.
//!
//! Nothing here does IO: the caller loads units and edges (`ledger-store`).

use ledger_core::{Edge, EdgeKind, UnitKind, UnitRecord};
use petgraph::Direction;
use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::visit::EdgeRef;
use std::collections::{BinaryHeap, HashMap, VecDeque};

/// Errors of target lookup.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum RetrieveError {
    /// Nothing in the graph answers to the target.
    #[error(
        "no unit `{0}` (tried unit ids, labels, and prose such as \"Theorem 2\" or \"Section 3.2\")"
    )]
    NotFound(String),
    /// Several units answer to it.
    #[error("`{target}` is ambiguous: {}; name the document with --doc", candidates.join(", "))]
    Ambiguous {
        /// The target as given.
        target: String,
        /// `doc:unit` of each candidate.
        candidates: Vec<String>,
    },
}

/// Edge-kind weights and the decay per hop of retrieval scores.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Weights {
    /// REFERENCES.
    pub references: f64,
    /// DEPENDS.
    pub depends: f64,
    /// CONTAINS.
    pub contains: f64,
    /// RELATED.
    pub related: f64,
    /// Factor applied per hop beyond the first.
    pub decay: f64,
}

impl Default for Weights {
    fn default() -> Self {
        Weights {
            references: 100.0,
            depends: 50.0,
            contains: 30.0,
            related: 10.0,
            decay: 0.4,
        }
    }
}

impl Weights {
    /// The weight of `kind`.
    pub fn of(&self, kind: EdgeKind) -> f64 {
        match kind {
            EdgeKind::References => self.references,
            EdgeKind::Depends => self.depends,
            EdgeKind::Contains => self.contains,
            EdgeKind::Related => self.related,
        }
    }
}

/// One unit taken into a context.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Taken {
    /// Index into [`Graph::units`].
    #[serde(skip)]
    pub unit: usize,
    /// Its document.
    pub doc_id: String,
    /// Its id.
    pub unit_id: String,
    /// Its score (`null` for a target).
    pub score: Option<f64>,
    /// Why it was taken.
    pub why: String,
    /// Its cl100k tokens.
    pub tokens: usize,
}

/// A packed context.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Context {
    /// Units taken: targets first, then by score.
    pub units: Vec<Taken>,
    /// Tokens taken (never more than the budget).
    pub tokens: usize,
    /// The budget.
    pub budget: usize,
    /// Tokens of the targets' documents.
    pub document_tokens: usize,
    /// Linked units that did not fit.
    pub left_out: usize,
}

/// A unit that may break when the changed unit changes.
#[derive(Debug, Clone, PartialEq)]
pub struct Impacted {
    /// Index into [`Graph::units`].
    pub unit: usize,
    /// How it is linked: each step is (a unit, the edge kind by which it references or depends on
    /// the next); the last step's next unit is the changed one.
    pub path: Vec<(usize, EdgeKind)>,
}

/// Units and edges of a graph, indexed for traversal.
pub struct Graph {
    units: Vec<UnitRecord>,
    graph: DiGraph<usize, EdgeKind>,
    index: HashMap<(String, String), usize>,
}

/// Words that name unit kinds in prose, with the kind and, for theorem-likes, the environments.
fn kind_word(word: &str) -> Option<(UnitKind, Option<&'static [&'static str]>)> {
    let w = word.trim_end_matches('.').to_lowercase();
    let w = w.trim_end_matches('s');
    Some(match w {
        "section" | "sec" | "chapter" | "ch" | "appendix" | "part" | "§" => {
            (UnitKind::Section, None)
        }
        "figure" | "fig" => (UnitKind::Figure, None),
        "table" | "tab" => (UnitKind::Table, None),
        "equation" | "eq" | "eqn" => (UnitKind::Equation, None),
        "algorithm" | "alg" => (UnitKind::Algorithm, None),
        "listing" | "lst" => (UnitKind::Listing, None),
        "theorem" | "thm" => (UnitKind::Theorem, Some(&["theorem", "thm"])),
        "lemma" | "lem" => (UnitKind::Theorem, Some(&["lemma", "lem"])),
        "definition" | "def" | "defn" => (UnitKind::Theorem, Some(&["definition", "defn", "def"])),
        "corollary" | "cor" => (UnitKind::Theorem, Some(&["corollary", "cor"])),
        "proposition" | "prop" => (UnitKind::Theorem, Some(&["proposition", "prop"])),
        "remark" | "rem" => (UnitKind::Theorem, Some(&["remark", "rem"])),
        "example" | "ex" => (UnitKind::Theorem, Some(&["example", "ex"])),
        _ => return None,
    })
}

impl Graph {
    /// Indexes `units` and `edges` (edges naming units that are not there are ignored).
    pub fn new(units: Vec<UnitRecord>, edges: &[Edge]) -> Graph {
        let mut graph = DiGraph::with_capacity(units.len(), edges.len());
        let mut index = HashMap::with_capacity(units.len());
        for (i, u) in units.iter().enumerate() {
            graph.add_node(i);
            index.insert((u.doc_id.clone(), u.unit_id.clone()), i);
        }
        for e in edges {
            let (Some(&a), Some(&b)) = (
                index.get(&(e.src_doc.clone(), e.src_unit.clone())),
                index.get(&(e.dst_doc.clone(), e.dst_unit.clone())),
            ) else {
                continue;
            };
            graph.add_edge(NodeIndex::new(a), NodeIndex::new(b), e.kind);
        }
        Graph {
            units,
            graph,
            index,
        }
    }

    /// The units, as given.
    pub fn units(&self) -> &[UnitRecord] {
        &self.units
    }

    /// Finds the unit `target` names, in `doc` when given: a unit id, a label or anchor, or
    /// prose such as "Theorem 2", "Section 3.2", "Eq. (3)".
    pub fn find(&self, target: &str, doc: Option<&str>) -> Result<usize, RetrieveError> {
        let in_doc = |u: &UnitRecord| doc.is_none_or(|d| u.doc_id == d);
        let target = target.trim();
        let by = |pred: &dyn Fn(&UnitRecord) -> bool| -> Vec<usize> {
            (0..self.units.len())
                .filter(|&i| in_doc(&self.units[i]) && pred(&self.units[i]))
                .collect()
        };
        let mut found = by(&|u| u.unit_id == target);
        if found.is_empty() {
            found = by(&|u| u.label.as_deref() == Some(target));
        }
        if found.is_empty()
            && let Some((word, number)) = target.split_once(|c: char| c.is_whitespace() || c == '~')
            && let Some((kind, envs)) = kind_word(word)
        {
            let number = number.trim().trim_start_matches('(').trim_end_matches(')');
            found = by(&|u| {
                u.kind == kind
                    && u.number.as_deref() == Some(number)
                    && envs.is_none_or(|e| e.contains(&u.env.as_str()))
            });
        }
        match found.as_slice() {
            [one] => Ok(*one),
            [] => Err(RetrieveError::NotFound(target.to_string())),
            many => Err(RetrieveError::Ambiguous {
                target: target.to_string(),
                candidates: many
                    .iter()
                    .map(|&i| format!("{}:{}", self.units[i].doc_id, self.units[i].unit_id))
                    .collect(),
            }),
        }
    }

    /// The targets named in an instruction: every "Kind N" phrase and every unit id or label in
    /// backquotes that resolves (in `doc` when given), in order of appearance.
    pub fn targets_in(&self, instruction: &str, doc: Option<&str>) -> Vec<usize> {
        static PROSE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
            regex::Regex::new(
                r"\b([A-Za-z]+\.?)[ ~]\(?([0-9]+(?:\.[0-9]+)*|[A-Z](?:\.[0-9]+)*)\b\)?|`([^`]+)`",
            )
            .expect("valid")
        });
        let mut out = Vec::new();
        for c in PROSE.captures_iter(instruction) {
            let found = match (c.get(1), c.get(2), c.get(3)) {
                (Some(w), Some(n), _) if kind_word(w.as_str()).is_some() => {
                    self.find(&format!("{} {}", w.as_str(), n.as_str()), doc)
                }
                (_, _, Some(id)) => self.find(id.as_str(), doc),
                _ => continue,
            };
            if let Ok(i) = found
                && !out.contains(&i)
            {
                out.push(i);
            }
        }
        out
    }

    /// The context of an edit of `targets` under `budget` tokens: the targets first (each one
    /// that fits), then linked units up to `depth` hops away, best score first (ties in document
    /// order), each taken if it still fits. Never more than `budget` tokens.
    pub fn context(
        &self,
        targets: &[usize],
        budget: usize,
        weights: &Weights,
        depth: usize,
    ) -> Context {
        // Best-first expansion: the score of a unit is the best over paths of the weight of the
        // last edge times, per earlier hop, the decay and the previous unit's score / 100.
        let mut best: HashMap<usize, (f64, String, usize)> = HashMap::new();
        #[derive(PartialEq)]
        struct Item(f64, usize, usize);
        impl Eq for Item {}
        impl PartialOrd for Item {
            fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
                Some(self.cmp(other))
            }
        }
        impl Ord for Item {
            fn cmp(&self, other: &Self) -> std::cmp::Ordering {
                self.0
                    .total_cmp(&other.0)
                    .then_with(|| other.1.cmp(&self.1))
            }
        }
        let mut heap = BinaryHeap::new();
        for &t in targets {
            heap.push(Item(f64::INFINITY, t, 0));
        }
        let target_set: std::collections::HashSet<usize> = targets.iter().copied().collect();
        let is_target = |u: usize| target_set.contains(&u);
        let mut done: std::collections::HashSet<usize> = Default::default();
        while let Some(Item(score, u, hops)) = heap.pop() {
            if !done.insert(u) || hops >= depth {
                continue;
            }
            let base = if is_target(u) {
                1.0
            } else {
                weights.decay * score / 100.0
            };
            let node = NodeIndex::new(u);
            for dir in [Direction::Outgoing, Direction::Incoming] {
                for e in self.graph.edges_directed(node, dir) {
                    let v = if dir == Direction::Outgoing {
                        e.target().index()
                    } else {
                        e.source().index()
                    };
                    if is_target(v) || done.contains(&v) {
                        continue;
                    }
                    let s = base * weights.of(*e.weight());
                    if s <= 0.0 {
                        continue;
                    }
                    if best.get(&v).is_none_or(|b| s > b.0) {
                        best.insert(v, (s, self.why(u, *e.weight(), dir), hops + 1));
                        heap.push(Item(s, v, hops + 1));
                    }
                }
            }
        }
        let mut linked: Vec<(usize, f64, String)> = best
            .into_iter()
            .map(|(v, (s, why, _))| (v, s, why))
            .collect();
        linked.sort_by(|a, b| {
            b.1.total_cmp(&a.1).then_with(|| {
                (&self.units[a.0].doc_id, self.units[a.0].ordinal)
                    .cmp(&(&self.units[b.0].doc_id, self.units[b.0].ordinal))
            })
        });
        let mut context = Context {
            units: Vec::new(),
            tokens: 0,
            budget,
            document_tokens: 0,
            left_out: 0,
        };
        let docs: std::collections::HashSet<&str> = targets
            .iter()
            .map(|&t| self.units[t].doc_id.as_str())
            .collect();
        context.document_tokens = self
            .units
            .iter()
            .filter(|u| docs.contains(u.doc_id.as_str()))
            .map(|u| u.tokens)
            .sum();
        let mut take = |unit: usize, score: Option<f64>, why: String| {
            let tokens = self.units[unit].tokens;
            if context.tokens + tokens > budget {
                context.left_out += 1;
                return;
            }
            context.tokens += tokens;
            context.units.push(Taken {
                unit,
                doc_id: self.units[unit].doc_id.clone(),
                unit_id: self.units[unit].unit_id.clone(),
                score,
                why,
                tokens,
            });
        };
        let mut seen = std::collections::HashSet::new();
        for &t in targets {
            if seen.insert(t) {
                take(t, None, "target".into());
            }
        }
        for (v, s, why) in linked {
            take(v, Some(s), why);
        }
        context
    }

    /// Why a unit was reached from `u` along an edge of `kind` (`dir` seen from `u`).
    fn why(&self, u: usize, kind: EdgeKind, dir: Direction) -> String {
        let other = &self.units[u].unit_id;
        // `dir` is seen from u: Outgoing means u → v.
        match (kind, dir) {
            (EdgeKind::References, Direction::Outgoing) => format!("referenced by `{other}`"),
            (EdgeKind::References, Direction::Incoming) => format!("references `{other}`"),
            (EdgeKind::Depends, Direction::Outgoing) => format!("prerequisite of `{other}`"),
            (EdgeKind::Depends, Direction::Incoming) => format!("depends on `{other}`"),
            (EdgeKind::Contains, Direction::Outgoing) => format!("part of `{other}`"),
            (EdgeKind::Contains, Direction::Incoming) => format!("contains `{other}`"),
            (EdgeKind::Related, _) => format!("related to `{other}`"),
        }
    }

    /// The units that may break when `unit` changes: those that reference or depend on it, and
    /// transitively those that reference or depend on them, up to `depth` hops; each with the
    /// shortest path linking it, nearest first.
    pub fn impact(&self, unit: usize, depth: usize) -> Vec<Impacted> {
        let mut parent: HashMap<usize, (usize, EdgeKind)> = HashMap::new();
        let mut queue = VecDeque::from([(unit, 0usize)]);
        let mut order = Vec::new();
        while let Some((u, hops)) = queue.pop_front() {
            if hops >= depth {
                continue;
            }
            let mut incoming: Vec<(usize, EdgeKind)> = self
                .graph
                .edges_directed(NodeIndex::new(u), Direction::Incoming)
                .filter(|e| matches!(e.weight(), EdgeKind::References | EdgeKind::Depends))
                .map(|e| (e.source().index(), *e.weight()))
                .collect();
            incoming.sort_by_key(|(w, k)| (self.units[*w].ordinal, *k));
            for (w, kind) in incoming {
                if w == unit || parent.contains_key(&w) {
                    continue;
                }
                parent.insert(w, (u, kind));
                order.push(w);
                queue.push_back((w, hops + 1));
            }
        }
        order
            .into_iter()
            .map(|w| {
                let mut path = Vec::new();
                let mut at = w;
                while at != unit {
                    let (next, kind) = parent[&at];
                    path.push((at, kind));
                    at = next;
                }
                Impacted { unit: w, path }
            })
            .collect()
    }

    /// The index of `doc`:`unit`.
    pub fn index_of(&self, doc: &str, unit: &str) -> Option<usize> {
        self.index
            .get(&(doc.to_string(), unit.to_string()))
            .copied()
    }
}

/// A context as Markdown for a prompt: each unit's heading line (kind, number, title, why) and
/// its text.
pub fn markdown(graph: &Graph, context: &Context) -> String {
    let mut s = format!(
        "<!-- {} units, {} of {} budget tokens ({:.1}% of the document's {} tokens) -->\n",
        context.units.len(),
        context.tokens,
        context.budget,
        100.0 * context.tokens as f64 / context.document_tokens.max(1) as f64,
        context.document_tokens
    );
    for t in &context.units {
        let u = &graph.units()[t.unit];
        let name = match (&u.number, &u.title) {
            (Some(n), Some(title)) => format!("{} {n}: {title}", u.env),
            (Some(n), None) => format!("{} {n}", u.env),
            (None, Some(title)) => format!("{}: {title}", u.env),
            (None, None) => u.env.clone(),
        };
        s.push_str(&format!(
            "\n## `{}` ({name}; {})\n\n{}\n",
            u.unit_id,
            t.why,
            u.text.trim()
        ));
    }
    s
}
