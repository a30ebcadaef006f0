//! The context of an edit: the targets (a container stands for its whole subtree), then the units
//! most likely to need the same change, packed best first under a token budget.
//!
//! A unit's score fuses six signals, each scaled to 0..1 over the candidates:
//! - **graph**: a random walk with restart from the targets (personalized PageRank, computed by
//!   forward push) over the typed edges, each step taken in proportion to the edge-kind weight
//!   (REFERENCES 100, DEPENDS 50, CONTAINS 30, RELATED 10; a proof and its statement 150). A
//!   unit's outgoing mass is shared among its links, so a hub (an index of symbols, a
//!   bibliography) passes little to each of its hundreds of neighbours. No hop limit: mass fades
//!   with every step.
//! - **lexical**: BM25 of the unit's text against the instruction and the targets' own text.
//! - **dense**: cosine of the unit's summary embedding with the instruction's, when the caller
//!   has them.
//! - **locality**: nearness to the targets in document order (`1 / (1 + distance / span)`).
//! - **section**: sharing a section with a target: 1 for the target's own section, 1/2 for the
//!   section around it, 1/4 for the next, and so on.
//! - **linked**: a REFERENCES or DEPENDS edge between the unit and a target (or a unit of a
//!   target's subtree), either way: what an edit of the target must check, however many links the
//!   target has.
//!
//! Every unit taken says why: the path of the walk that reached it, or the signal that counted most.

use crate::{Graph, Link, Weights};
use ledger_core::{EdgeKind, UnitKind};
use petgraph::Direction;
use petgraph::graph::NodeIndex;
use petgraph::visit::EdgeRef;
use std::collections::{HashMap, HashSet, VecDeque};

/// How a context is ranked: the walk's edge weights and the mix of the six signals. The
/// defaults are the best mix on the dev split of the real-edit track of the evaluation (`ledger eval --tune`).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Ranking {
    /// Edge-kind weights of the walk.
    pub weights: Weights,
    /// Weight of the link between a proof and the statement it proves.
    pub proof: f64,
    /// Probability of returning to the targets at each step of the walk.
    pub restart: f64,
    /// Share of the walk in a unit's score.
    pub graph: f64,
    /// Share of BM25 against the instruction and the targets' text.
    pub lexical: f64,
    /// Share of the embedding cosine with the instruction.
    pub dense: f64,
    /// Share of nearness in document order.
    pub locality: f64,
    /// Units in document order at which nearness has halved.
    pub span: f64,
    /// Share of sharing a section with a target.
    pub section: f64,
    /// Share of a direct REFERENCES or DEPENDS edge with a target.
    pub linked: f64,
}

impl Default for Ranking {
    fn default() -> Self {
        Ranking {
            weights: Weights::new(&[
                (EdgeKind::References, 100.0),
                (EdgeKind::Depends, 50.0),
                (EdgeKind::Contains, 30.0),
                (EdgeKind::Related, 10.0),
            ]),
            proof: 150.0,
            restart: 0.25,
            graph: 1.0,
            lexical: 0.5,
            dense: 0.0,
            locality: 0.5,
            span: 8.0,
            section: 1.0,
            linked: 0.5,
        }
    }
}

impl Ranking {
    /// The walk alone, over these edge weights (no text signals, no locality): the edge-type
    /// ablations and the weight configurations. A proof's link is a DEPENDS edge: it counts only
    /// where DEPENDS does.
    pub fn walk_only(weights: Weights) -> Ranking {
        let proof = if weights.of(EdgeKind::Depends) > 0.0 {
            Ranking::default().proof
        } else {
            0.0
        };
        Ranking {
            weights,
            proof,
            lexical: 0.0,
            dense: 0.0,
            locality: 0.0,
            section: 0.0,
            linked: 0.0,
            ..Ranking::default()
        }
    }

    /// Whether `other` walks as this one does (the same edge weights and restart), so that the
    /// signals of one serve the other ([`Graph::signals`]).
    pub fn same_walk(&self, other: &Ranking) -> bool {
        (self.weights, self.proof, self.restart, self.graph > 0.0)
            == (other.weights, other.proof, other.restart, other.graph > 0.0)
    }

    fn link_weight(&self, link: Link) -> f64 {
        if link.proof {
            self.proof
        } else {
            // A DEPENDS edge counts as much as its judge is sure of it.
            self.weights.of(link.kind) * link.score
        }
    }
}

/// What a context is asked for.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// The units to edit (graph indices).
    pub targets: &'a [usize],
    /// The instruction, for lexical relevance.
    pub instruction: Option<&'a str>,
    /// Cosine of units' summary embeddings with the instruction's (graph index → cosine), when
    /// the caller has an embedder.
    pub dense: Option<&'a HashMap<usize, f32>>,
    /// Token budget.
    pub budget: usize,
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
    /// Its score (`null` for a target and the units of a target's subtree).
    pub score: Option<f64>,
    /// Why it was taken.
    pub why: String,
    /// Its cl100k tokens.
    pub tokens: usize,
}

/// A packed context.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Context {
    /// Units taken: targets and their subtrees first, then by score.
    pub units: Vec<Taken>,
    /// Tokens taken (never more than the budget).
    pub tokens: usize,
    /// The budget.
    pub budget: usize,
    /// Tokens of the targets' documents.
    pub document_tokens: usize,
    /// Units of the targets' documents that did not fit (units of other documents the ranking
    /// reached are not counted).
    pub left_out: usize,
}

impl Signals {
    /// Ranks the candidates by `ranking`'s mix of the signals.
    pub fn rank(&self, ranking: &Ranking) -> Ranked<'_> {
        let mut scored: Vec<(f64, usize, [f64; 6])> = self
            .candidates
            .iter()
            .enumerate()
            .map(|(k, c)| {
                let near = c
                    .distance
                    .map_or(0.0, |d| 1.0 / (1.0 + d as f64 / ranking.span.max(1e-9)));
                let section = c.section.map_or(0.0, |l| 0.5f64.powi(l as i32));
                let s = [
                    ranking.graph * c.walk,
                    ranking.lexical * c.lexical,
                    ranking.dense * c.dense,
                    ranking.locality * near,
                    ranking.section * section,
                    if c.linked { ranking.linked } else { 0.0 },
                ];
                (s.iter().sum(), k, s)
            })
            .filter(|(score, _, _)| *score > 0.0)
            .collect();
        let candidates = &self.candidates;
        scored.sort_unstable_by(|a, b| {
            b.0.total_cmp(&a.0)
                .then_with(|| candidates[a.1].order.cmp(&candidates[b.1].order))
        });
        // Inside the targets' subtrees every unit is at distance 0 and the walk's mass is the
        // seed's: what ranks them is the instruction.
        let mut region_text: Vec<(f64, usize, usize)> = self
            .region_text
            .iter()
            .map(|&(u, t, l, d)| (ranking.lexical * l + ranking.dense * d, u, t))
            .collect();
        region_text.sort_by(|a, b| b.0.total_cmp(&a.0));
        Ranked {
            signals: self,
            region_by_score: region_text.into_iter().map(|(_, u, t)| (u, t)).collect(),
            scored,
        }
    }
}

impl Ranked<'_> {
    /// The context under `budget` tokens: the targets, then their subtrees (in document order
    /// when they fit, else best first), then the other candidates best first, each taken while
    /// it fits.
    pub fn pack(&self, graph: &Graph, budget: usize) -> Context {
        let units = graph.units();
        let signals = self.signals;
        let mut context = Context {
            units: Vec::new(),
            tokens: 0,
            budget,
            document_tokens: signals.document_tokens,
            left_out: 0,
        };
        let region: HashSet<usize> = signals.region.iter().map(|&(u, _)| u).collect();
        for (u, from) in self.order(graph, budget) {
            match from {
                Source::Region(t) => {
                    let why = if u == t {
                        "target".to_string()
                    } else {
                        format!("in target `{}`", units[t].unit_id)
                    };
                    context.take(units, u, None, (budget, &signals.documents), || why);
                }
                Source::Scored(i) => {
                    let (score, k, weighted) = &self.scored[i];
                    let c = &signals.candidates[*k];
                    context.take(units, u, Some(*score), (budget, &signals.documents), || {
                        graph.why_taken(c, weighted, &signals.walk, &region)
                    });
                }
            }
        }
        context
    }

    /// The units [`Ranked::pack`] would take under `budget`, without the reasons: for measuring
    /// many budgets and mixes.
    pub fn pack_units(&self, graph: &Graph, budget: usize) -> Vec<usize> {
        let units = graph.units();
        let mut tokens = 0;
        let mut out = Vec::new();
        for (u, _) in self.order(graph, budget) {
            if tokens + units[u].tokens <= budget {
                tokens += units[u].tokens;
                out.push(u);
            }
        }
        out
    }

    /// The order in which units are offered to a budget: the targets, their subtrees (in
    /// document order when the whole region fits, else best first), then the candidates.
    fn order<'b>(
        &'b self,
        graph: &Graph,
        budget: usize,
    ) -> impl Iterator<Item = (usize, Source)> + 'b {
        let signals = self.signals;
        let region_tokens: usize = signals
            .region
            .iter()
            .map(|&(u, _)| graph.units()[u].tokens)
            .sum();
        let subtrees = if region_tokens > budget {
            &self.region_by_score
        } else {
            &signals.region
        };
        let targets = signals.region.iter().filter(|&&(u, t)| u == t);
        let below = subtrees.iter().filter(|&&(u, t)| u != t);
        targets
            .chain(below)
            .map(|&(u, t)| (u, Source::Region(t)))
            .chain(
                self.scored
                    .iter()
                    .enumerate()
                    .map(|(i, &(_, k, _))| (signals.candidates[k].unit, Source::Scored(i))),
            )
    }
}

/// Where a unit offered to a budget comes from.
#[derive(Debug, Clone, Copy)]
enum Source {
    /// The region of this target.
    Region(usize),
    /// This entry of the scored candidates.
    Scored(usize),
}

impl Context {
    /// Takes `unit` when it fits the budget, else counts it as left out.
    // A private step of packing, called from three loops with their own unit, score and reason.
    #[allow(clippy::too_many_arguments)]
    fn take(
        &mut self,
        units: &[ledger_core::UnitRecord],
        unit: usize,
        score: Option<f64>,
        (budget, documents): (usize, &HashSet<String>),
        why: impl FnOnce() -> String,
    ) {
        let tokens = units[unit].tokens;
        if self.tokens + tokens > budget {
            self.left_out += usize::from(documents.contains(&units[unit].doc_id));
            return;
        }
        self.tokens += tokens;
        self.units.push(Taken {
            unit,
            doc_id: units[unit].doc_id.clone(),
            unit_id: units[unit].unit_id.clone(),
            score,
            why: why(),
            tokens,
        });
    }
}

/// Residual mass below which the walk stops pushing from a unit.
const PUSH_EPSILON: f64 = 1e-6;
/// Pushes at most per walk: a bound on the cost of a query whatever the graph.
const MAX_PUSHES: usize = 200_000;

/// The walk's result: the mass of each unit reached, and the step that brought it most.
struct Walk {
    mass: Vec<f64>,
    /// Unit → (the unit it was reached from, the link, direction of the link seen from there).
    via: HashMap<usize, (usize, Link, Direction)>,
}

/// One candidate's signals, each scaled to 0..1 over the candidates (locality and section as
/// raw positions: the mix decides how they count).
#[derive(Debug, Clone, Copy)]
struct Candidate {
    unit: usize,
    /// Its place among the candidates in document order (ties are broken by it).
    order: usize,
    walk: f64,
    lexical: f64,
    dense: f64,
    /// Units between it and the nearest target region unit in document order.
    distance: Option<usize>,
    /// Sections up from the nearest target's own section to the one it shares with it.
    section: Option<u32>,
    /// Whether a REFERENCES or DEPENDS edge links it with the region.
    linked: bool,
}

/// The signals of every candidate of one request, before they are mixed: any mix of a
/// [`Ranking`] with the same edge weights and restart ranks from them ([`Signals::rank`]).
pub struct Signals {
    /// The targets, then their subtrees in document order: (unit, its target).
    region: Vec<(usize, usize)>,
    /// The region's units below the targets with their lexical and dense signals.
    region_text: Vec<(usize, usize, f64, f64)>,
    candidates: Vec<Candidate>,
    walk: Walk,
    document_tokens: usize,
    /// The targets' documents.
    documents: HashSet<String>,
}

/// The candidates of one request ranked by one mix: what any budget takes from ([`Ranked::pack`]).
pub struct Ranked<'a> {
    signals: &'a Signals,
    /// The subtrees' units best first, for a budget they do not fit in.
    region_by_score: Vec<(usize, usize)>,
    /// Every other candidate, best first: (score, index into the candidates, the six weighted
    /// signals).
    scored: Vec<(f64, usize, [f64; 6])>,
}

impl Graph {
    /// The context of an edit (see the module documentation). Never more than the budget.
    pub fn context(&self, request: &Request, ranking: &Ranking) -> Context {
        self.signals(request, ranking)
            .rank(ranking)
            .pack(self, request.budget)
    }

    /// The signals of every candidate of a request (its budget aside): the walk with the
    /// ranking's edge weights and restart, BM25, the dense cosines, the positions.
    pub fn signals(&self, request: &Request, ranking: &Ranking) -> Signals {
        let units = &self.units;
        let region = self.regions(request.targets);
        let in_region: HashSet<usize> = region.iter().map(|&(u, _)| u).collect();
        let walk = self.walk(&region, ranking);

        let lexical: HashMap<usize, f32> = {
            // The targets' own texts (a section's is its heading), not their subtrees: a chapter's
            // words would drown the instruction's.
            let mut query = request.instruction.unwrap_or_default().to_string();
            for &t in request.targets {
                query.push('\n');
                query.push_str(&units[t].text);
            }
            self.lexical().scores(&query).into_iter().collect()
        };
        let docs: HashSet<&str> = request
            .targets
            .iter()
            .map(|&t| units[t].doc_id.as_str())
            .collect();
        // The region's places in document order, per document, for locality.
        let mut region_ordinals: HashMap<&str, Vec<usize>> = HashMap::new();
        for &(u, _) in &region {
            region_ordinals
                .entry(units[u].doc_id.as_str())
                .or_default()
                .push(units[u].ordinal);
        }
        for v in region_ordinals.values_mut() {
            v.sort_unstable();
        }
        let distance_of = |u: usize| -> Option<usize> {
            let ords = region_ordinals.get(units[u].doc_id.as_str())?;
            let o = units[u].ordinal;
            let i = ords.partition_point(|&x| x < o);
            [i.checked_sub(1), Some(i)]
                .into_iter()
                .flatten()
                .filter_map(|k| ords.get(k))
                .map(|&x| x.abs_diff(o))
                .min()
        };
        // The targets' enclosing sections, innermost first (a section target is its own).
        let mut levels: HashMap<usize, u32> = HashMap::new();
        for &t in request.targets {
            let mut level = 0;
            let mut at = Some(t);
            while let Some(a) = at {
                if units[a].kind == UnitKind::Section {
                    let l = levels.entry(a).or_insert(level);
                    *l = (*l).min(level);
                    level += 1;
                }
                at = self.parents[a];
            }
        }
        let section_of = |u: usize| -> Option<u32> {
            let mut at = Some(u);
            while let Some(a) = at {
                if let Some(&l) = levels.get(&a) {
                    return Some(l);
                }
                at = self.parents[a];
            }
            None
        };

        let mut linked: HashSet<usize> = HashSet::new();
        for &(u, _) in &region {
            for dir in [Direction::Outgoing, Direction::Incoming] {
                for e in self.graph.edges_directed(NodeIndex::new(u), dir) {
                    if matches!(e.weight().kind, EdgeKind::References | EdgeKind::Depends) {
                        linked.insert(e.source().index());
                        linked.insert(e.target().index());
                    }
                }
            }
        }
        let positive_max =
            |it: &mut dyn Iterator<Item = f64>| it.fold(0.0f64, f64::max).max(f64::MIN_POSITIVE);
        let all: Vec<usize> = (0..units.len())
            .filter(|&u| units[u].kind != UnitKind::Document)
            .filter(|&u| {
                walk.mass[u] > 0.0
                    || docs.contains(units[u].doc_id.as_str())
                    || lexical.contains_key(&u)
            })
            .collect();
        let outside = || all.iter().copied().filter(|u| !in_region.contains(u));
        let graph_max = positive_max(&mut outside().map(|u| walk.mass[u]));
        let lexical_of = |u: usize| f64::from(lexical.get(&u).copied().unwrap_or(0.0));
        let lexical_max = positive_max(&mut outside().map(lexical_of));
        let (dense_min, dense_max) = match request.dense {
            Some(d) => outside()
                .filter_map(|u| d.get(&u).map(|&c| f64::from(c)))
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), c| {
                    (a.min(c), b.max(c))
                }),
            None => (0.0, 0.0),
        };
        let dense_of = |u: usize| match request.dense.and_then(|d| d.get(&u)) {
            Some(&c) if dense_max > dense_min => {
                (f64::from(c) - dense_min) / (dense_max - dense_min)
            }
            _ => 0.0,
        };
        let region_text = region
            .iter()
            .filter(|&&(u, t)| u != t)
            .map(|&(u, t)| (u, t, lexical_of(u) / lexical_max, dense_of(u)))
            .collect();
        let mut by_order: Vec<usize> = outside().collect();
        by_order.sort_by_key(|&u| self.order_key(u));
        let order: HashMap<usize, usize> = by_order
            .into_iter()
            .enumerate()
            .map(|(i, u)| (u, i))
            .collect();
        let candidates = outside()
            .map(|u| Candidate {
                unit: u,
                order: order[&u],
                walk: walk.mass[u] / graph_max,
                lexical: lexical_of(u) / lexical_max,
                dense: dense_of(u),
                distance: distance_of(u),
                section: section_of(u),
                linked: linked.contains(&u),
            })
            .collect();
        Signals {
            region,
            region_text,
            candidates,
            walk,
            document_tokens: units
                .iter()
                .filter(|u| docs.contains(u.doc_id.as_str()))
                .map(|u| u.tokens)
                .sum(),
            documents: docs.iter().map(|d| d.to_string()).collect(),
        }
    }

    /// The targets and, for each one that contains others, its whole subtree, as (unit, the
    /// target it belongs to), targets first, each unit once.
    fn regions(&self, targets: &[usize]) -> Vec<(usize, usize)> {
        let mut out: Vec<(usize, usize)> = Vec::new();
        let mut seen = HashSet::new();
        for &t in targets {
            if seen.insert(t) {
                out.push((t, t));
            }
        }
        for &t in targets {
            for v in self.subtree(t) {
                if seen.insert(v) {
                    out.push((v, t));
                }
            }
        }
        out
    }

    /// (document, ordinal): document order across the graph.
    fn order_key(&self, u: usize) -> (&str, usize) {
        (self.units[u].doc_id.as_str(), self.units[u].ordinal)
    }

    /// Personalized PageRank from the region by forward push: the restart mass is spread evenly
    /// over the region's units; each push keeps `restart` of a unit's residual and passes the rest
    /// to its neighbours (both directions) in proportion to the link weights.
    fn walk(&self, region: &[(usize, usize)], ranking: &Ranking) -> Walk {
        let n = self.units.len();
        let mut mass = vec![0.0f64; n];
        let mut residual = vec![0.0f64; n];
        let mut best_push: HashMap<usize, f64> = HashMap::new();
        let mut via = HashMap::new();
        let mut queue: VecDeque<usize> = VecDeque::new();
        let mut queued = vec![false; n];
        if region.is_empty() || ranking.graph <= 0.0 {
            return Walk { mass, via };
        }
        let share = 1.0 / region.len() as f64;
        for &(u, _) in region {
            residual[u] += share;
            if !queued[u] {
                queued[u] = true;
                queue.push_back(u);
            }
        }
        let restart = ranking.restart.clamp(0.01, 1.0);
        let mut pushes = 0;
        while let Some(u) = queue.pop_front() {
            queued[u] = false;
            let r = std::mem::take(&mut residual[u]);
            if r <= 0.0 {
                continue;
            }
            mass[u] += restart * r;
            pushes += 1;
            if pushes > MAX_PUSHES {
                break;
            }
            let node = NodeIndex::new(u);
            let links = || {
                [Direction::Outgoing, Direction::Incoming]
                    .into_iter()
                    .flat_map(move |dir| {
                        self.graph.edges_directed(node, dir).map(move |e| {
                            let v = if dir == Direction::Outgoing {
                                e.target().index()
                            } else {
                                e.source().index()
                            };
                            (v, *e.weight(), dir)
                        })
                    })
            };
            let total: f64 = links().map(|(_, l, _)| ranking.link_weight(l)).sum();
            if total <= 0.0 {
                mass[u] += (1.0 - restart) * r;
                continue;
            }
            for (v, link, dir) in links() {
                let w = ranking.link_weight(link);
                if w <= 0.0 || v == u {
                    continue;
                }
                let m = (1.0 - restart) * r * w / total;
                residual[v] += m;
                if best_push.get(&v).is_none_or(|&b| m > b) {
                    best_push.insert(v, m);
                    via.insert(v, (u, link, dir));
                }
                if residual[v] > PUSH_EPSILON && !queued[v] {
                    queued[v] = true;
                    queue.push_back(v);
                }
            }
        }
        Walk { mass, via }
    }

    /// Why a unit was taken: the walk's path when the walk counted most, else the signal that did.
    fn why_taken(
        &self,
        c: &Candidate,
        weighted: &[f64; 6],
        walk: &Walk,
        region: &HashSet<usize>,
    ) -> String {
        let u = c.unit;
        let strongest = (0..6)
            .max_by(|&a, &b| weighted[a].total_cmp(&weighted[b]))
            .unwrap_or(0);
        match strongest {
            0 if walk.via.contains_key(&u) => {
                let mut path = vec![u];
                let mut first = String::new();
                while let Some(&(from, link, dir)) = walk.via.get(path.last().unwrap_or(&u)) {
                    if first.is_empty() {
                        first = self.why(from, link, dir);
                    }
                    if path.contains(&from) || path.len() > 8 {
                        break;
                    }
                    path.push(from);
                    if region.contains(&from) {
                        break;
                    }
                }
                if path.len() <= 2 {
                    first
                } else {
                    let ids: Vec<&str> = path
                        .iter()
                        .map(|&p| self.units[p].unit_id.as_str())
                        .collect();
                    format!("{first} (path: {})", ids.join(" → "))
                }
            }
            1 => "shares rare words with the instruction and the targets (BM25)".into(),
            2 => "similar to the instruction (embeddings)".into(),
            5 => match walk.via.get(&u) {
                Some(&(from, link, dir)) if region.contains(&from) => self.why(from, link, dir),
                _ => "linked to a target".into(),
            },
            4 => match c.section {
                Some(0) => "in the target's section".into(),
                Some(l) => format!("in the section {l} levels around the target's"),
                None => "near the targets".into(),
            },
            _ => match c.distance {
                Some(d) => format!("near the targets ({d} units away in document order)"),
                None => "reached from the targets".into(),
            },
        }
    }

    /// Why a unit was reached from `u` along `link` (`dir` seen from `u`).
    pub(crate) fn why(&self, u: usize, link: Link, dir: Direction) -> String {
        let other = &self.units[u].unit_id;
        if link.proof {
            return match dir {
                Direction::Outgoing => format!("the statement `{other}` proves"),
                Direction::Incoming => format!("the proof of `{other}`"),
            };
        }
        // `dir` is seen from u: Outgoing means u → v.
        match (link.kind, dir) {
            (EdgeKind::References, Direction::Outgoing) => format!("referenced by `{other}`"),
            (EdgeKind::References, Direction::Incoming) => format!("references `{other}`"),
            (EdgeKind::Depends, Direction::Outgoing) => format!("prerequisite of `{other}`"),
            (EdgeKind::Depends, Direction::Incoming) => format!("depends on `{other}`"),
            (EdgeKind::Contains, Direction::Outgoing) => format!("part of `{other}`"),
            (EdgeKind::Contains, Direction::Incoming) => format!("contains `{other}`"),
            (EdgeKind::Related, _) => format!("related to `{other}`"),
        }
    }
}
