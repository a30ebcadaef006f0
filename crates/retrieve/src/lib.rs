//! Dependency-aware retrieval and impact sets over a graph's units and edges (petgraph).
//!
//! - [`Graph::context`]: the context an edit of some target units needs: the targets (a container
//!   with its subtree), then the units ranked by a random walk over the typed edges fused with
//!   lexical and embedding relevance to the instruction and nearness in document order, packed
//!   best first under a token budget ([`context`]).
//! - [`Graph::impact`]: the units that may break when a unit changes: whatever references it or
//!   depends on it, transitively, each with the path that links it.
//!
//! Nothing here does IO: the caller loads units and edges (`ledger-store`).

pub mod context;
pub mod lexical;

pub use context::{Context, Ranked, Ranking, Request, Signals, Taken};

use ledger_core::{Edge, EdgeKind, UnitKind, UnitRecord};
use petgraph::Direction;
use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::visit::EdgeRef;
use std::collections::{HashMap, VecDeque};
use std::sync::OnceLock;

/// Errors of target lookup.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum RetrieveError {
    /// Nothing in the graph answers to the target.
    #[error(
        "no unit `{0}` (tried unit ids, labels, and prose such as \"Theorem 2\" or \"Section 3.2\")"
    )]
    NotFound(String),
    /// No document of the graph answers to the name given with `--doc`.
    #[error("no document `{named}` in the graph (its documents include {}); name it by its id or by a path to it", known.join(", "))]
    NoDocument {
        /// The document as named.
        named: String,
        /// A few of the graph's document ids.
        known: Vec<String>,
    },
    /// Several documents answer to the name given with `--doc`.
    #[error("`{named}` names several documents: {}; name one", candidates.join(", "))]
    AmbiguousDocument {
        /// The document as named.
        named: String,
        /// Their ids.
        candidates: Vec<String>,
    },
    /// Several units answer to it.
    #[error("`{target}` is ambiguous: {}; name the document with --doc", candidates.join(", "))]
    Ambiguous {
        /// The target as given.
        target: String,
        /// `doc:unit` of each candidate.
        candidates: Vec<String>,
    },
}

/// Edge-kind weights of retrieval: one per kind of [`EdgeKind::ALL`], written as a table keyed by
/// the kind's name (`{ REFERENCES = 100.0, DEPENDS = 50.0, … }`), so that a new kind of edge is
/// one more entry, not one more field.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Weights([f64; EdgeKind::ALL.len()]);

impl Weights {
    /// The weights given, 0 for every kind not named.
    pub fn new(weights: &[(EdgeKind, f64)]) -> Weights {
        let mut w = Weights([0.0; EdgeKind::ALL.len()]);
        for &(kind, weight) in weights {
            w.0[kind.priority() as usize] = weight;
        }
        w
    }

    /// The weight of `kind`.
    pub fn of(&self, kind: EdgeKind) -> f64 {
        self.0[kind.priority() as usize]
    }

    /// These weights with `kind`'s set to `weight`.
    pub fn with(mut self, kind: EdgeKind, weight: f64) -> Weights {
        self.0[kind.priority() as usize] = weight;
        self
    }

    /// These weights for `kinds` alone, 0 for the others.
    pub fn only(&self, kinds: &[EdgeKind]) -> Weights {
        Weights::new(&kinds.iter().map(|&k| (k, self.of(k))).collect::<Vec<_>>())
    }
}

impl serde::Serialize for Weights {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(EdgeKind::ALL.len()))?;
        for kind in EdgeKind::ALL {
            map.serialize_entry(kind.as_str(), &self.of(kind))?;
        }
        map.end()
    }
}

impl<'de> serde::Deserialize<'de> for Weights {
    /// A table with a weight for every kind, keyed by its name; an unknown or missing kind is an
    /// error.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Weights, D::Error> {
        use serde::de::Error;
        let table = std::collections::BTreeMap::<String, f64>::deserialize(d)?;
        let mut weights = Vec::new();
        for (name, weight) in &table {
            let kind = EdgeKind::parse(name).ok_or_else(|| {
                D::Error::custom(format!(
                    "unknown edge kind `{name}` (expected one of {})",
                    EdgeKind::ALL.map(EdgeKind::as_str).join(", ")
                ))
            })?;
            weights.push((kind, *weight));
        }
        if let Some(missing) = EdgeKind::ALL
            .into_iter()
            .find(|k| !table.contains_key(k.as_str()))
        {
            return Err(D::Error::custom(format!(
                "no weight for edge kind `{}`",
                missing.as_str()
            )));
        }
        Ok(Weights::new(&weights))
    }
}

/// A unit that may break when the changed unit changes.
#[derive(Debug, Clone, PartialEq)]
pub struct Impacted {
    /// Index into [`Graph::units`].
    pub unit: usize,
    /// How it is linked: each step is (a unit, the edge kind by which it references or depends on
    /// the next, the edge's score); the last step's next unit is the changed one.
    pub path: Vec<(usize, EdgeKind, f64)>,
    /// How likely the change reaches it: the product of the path's scores (a DEPENDS edge's
    /// probability, 1 for a reference).
    pub confidence: f64,
}

/// An edge of the traversal graph: its kind, and whether it is the DEPENDS link of a proof to the
/// statement it proves ([`ledger_core::PROOF_OF`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Link {
    kind: EdgeKind,
    proof: bool,
    /// The edge's score: a DEPENDS judge's probability (1 for a certain edge).
    score: f64,
}

/// Units and edges of a graph, indexed for traversal.
pub struct Graph {
    units: Vec<UnitRecord>,
    graph: DiGraph<usize, Link>,
    index: HashMap<(String, String), usize>,
    /// Each unit's parent along CONTAINS.
    parents: Vec<Option<usize>>,
    /// BM25 over unit texts, built on first use.
    lexical: OnceLock<lexical::Lexical>,
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
        let mut parents = vec![None; units.len()];
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
            let link = Link {
                kind: e.kind,
                proof: e.kind == EdgeKind::Depends && e.evidence == ledger_core::PROOF_OF,
                score: if e.kind == EdgeKind::Depends {
                    e.score.clamp(0.0, 1.0)
                } else {
                    1.0
                },
            };
            if e.kind == EdgeKind::Contains {
                parents[b] = Some(a);
            }
            graph.add_edge(NodeIndex::new(a), NodeIndex::new(b), link);
        }
        Graph {
            units,
            graph,
            index,
            parents,
            lexical: OnceLock::new(),
        }
    }

    /// BM25 over the units' titles and texts (built on first use).
    pub fn lexical(&self) -> &lexical::Lexical {
        self.lexical.get_or_init(|| {
            let texts: Vec<String> = self
                .units
                .iter()
                .map(|u| match &u.title {
                    Some(t) => format!("{t}\n{}", u.text),
                    None => u.text.clone(),
                })
                .collect();
            lexical::Lexical::new(texts.iter().map(String::as_str))
        })
    }

    /// The units below `unit` (along CONTAINS, at any depth), in document order.
    pub fn subtree(&self, unit: usize) -> Vec<usize> {
        let mut stack = vec![unit];
        let mut below = Vec::new();
        let mut seen = std::collections::HashSet::from([unit]);
        while let Some(u) = stack.pop() {
            for e in self
                .graph
                .edges_directed(NodeIndex::new(u), Direction::Outgoing)
            {
                if e.weight().kind == EdgeKind::Contains {
                    let v = e.target().index();
                    if seen.insert(v) {
                        below.push(v);
                        stack.push(v);
                    }
                }
            }
        }
        below.sort_by_key(|&v| (&self.units[v].doc_id, self.units[v].ordinal));
        below
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

    /// The id of the document `named` among the graph's: see [`document_named`].
    pub fn document(&self, named: &str) -> Result<String, RetrieveError> {
        document_named(self.units.iter().map(|u| u.doc_id.as_str()), named)
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

    /// The units that may break when `unit` changes: those that reference or depend on it, and
    /// transitively those that reference or depend on them, up to `depth` hops; each with the
    /// shortest path linking it, nearest first.
    pub fn impact(&self, unit: usize, depth: usize) -> Vec<Impacted> {
        let mut parent: HashMap<usize, (usize, EdgeKind, f64)> = HashMap::new();
        let mut queue = VecDeque::from([(unit, 0usize)]);
        let mut order = Vec::new();
        while let Some((u, hops)) = queue.pop_front() {
            if hops >= depth {
                continue;
            }
            let mut incoming: Vec<(usize, EdgeKind, f64)> = self
                .graph
                .edges_directed(NodeIndex::new(u), Direction::Incoming)
                .filter(|e| matches!(e.weight().kind, EdgeKind::References | EdgeKind::Depends))
                .map(|e| (e.source().index(), e.weight().kind, e.weight().score))
                .collect();
            incoming.sort_by_key(|(w, k, _)| (self.units[*w].ordinal, *k));
            for (w, kind, score) in incoming {
                if w == unit || parent.contains_key(&w) {
                    continue;
                }
                parent.insert(w, (u, kind, score));
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
                    let (next, kind, score) = parent[&at];
                    path.push((at, kind, score));
                    at = next;
                }
                let confidence = path.iter().map(|s| s.2).product();
                Impacted {
                    unit: w,
                    path,
                    confidence,
                }
            })
            .collect()
    }

    /// The unit that holds `unit` along CONTAINS.
    pub fn parent(&self, unit: usize) -> Option<usize> {
        self.parents[unit]
    }

    /// The deepest section (chapter, heading) that holds `unit`, or `unit` itself when it is one.
    pub fn enclosing_section(&self, unit: usize) -> Option<usize> {
        std::iter::successors(Some(unit), |&u| self.parents[u])
            .find(|&u| self.units[u].kind == UnitKind::Section)
    }

    /// The units within `hops` steps of `from` over edges of `kinds`, followed either way, with
    /// the steps each took (`from` at 0).
    pub fn within_hops(
        &self,
        from: &[usize],
        kinds: &[EdgeKind],
        hops: usize,
    ) -> HashMap<usize, usize> {
        let mut seen: HashMap<usize, usize> = from.iter().map(|&u| (u, 0)).collect();
        let mut frontier: Vec<usize> = from.to_vec();
        for step in 1..=hops {
            let mut next = Vec::new();
            for &u in &frontier {
                for dir in [Direction::Outgoing, Direction::Incoming] {
                    for e in self.graph.edges_directed(NodeIndex::new(u), dir) {
                        if !kinds.contains(&e.weight().kind) {
                            continue;
                        }
                        let v = if dir == Direction::Outgoing {
                            e.target().index()
                        } else {
                            e.source().index()
                        };
                        if let std::collections::hash_map::Entry::Vacant(slot) = seen.entry(v) {
                            slot.insert(step);
                            next.push(v);
                        }
                    }
                }
            }
            frontier = next;
        }
        seen
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

/// The id of the document `named` among `ids`: its id, or a path to it (or to the folder holding
/// it) as the user writes it, relative to the working folder or absolute, from any folder: a
/// document's id is its path as it was named when the graph was built, so a path that resolves
/// to a file ending with an id's path names that document.
pub fn document_named<'a>(
    ids: impl IntoIterator<Item = &'a str>,
    named: &str,
) -> Result<String, RetrieveError> {
    let ids: std::collections::BTreeSet<&str> = ids.into_iter().collect();
    if ids.contains(named) {
        return Ok(named.to_string());
    }
    let components = |p: &std::path::Path| -> Vec<String> {
        p.components()
            .filter(|c| matches!(c, std::path::Component::Normal(_)))
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect()
    };
    let given = std::path::Path::new(named);
    let absolute = std::fs::canonicalize(given).ok();
    let given_parts = components(absolute.as_deref().unwrap_or(given));
    let found: Vec<&str> = ids
        .iter()
        .copied()
        .filter(|id| {
            let id_parts = components(std::path::Path::new(id));
            if id_parts.is_empty() {
                return false;
            }
            // The path given is the document (its file ends with the id's path), or the
            // folder that holds it (the id's path, less its last part or more, ends it).
            given_parts.ends_with(&id_parts)
                || (1..id_parts.len()).any(|k| given_parts.ends_with(&id_parts[..k]))
                    && absolute.as_deref().is_none_or(std::path::Path::is_dir)
        })
        .collect();
    match found.as_slice() {
        [one] => Ok(one.to_string()),
        [] => Err(RetrieveError::NoDocument {
            named: named.to_string(),
            known: ids.iter().take(5).map(|s| s.to_string()).collect(),
        }),
        many => {
            // The most specific: the ids the whole path ends with, when one is left.
            let whole: Vec<&&str> = many
                .iter()
                .filter(|id| given_parts.ends_with(&components(std::path::Path::new(id))))
                .collect();
            match whole.as_slice() {
                [one] => Ok(one.to_string()),
                _ => Err(RetrieveError::AmbiguousDocument {
                    named: named.to_string(),
                    candidates: many.iter().map(|s| s.to_string()).collect(),
                }),
            }
        }
    }
}
