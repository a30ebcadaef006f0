//! The real-edit track of `ledger eval`: retrieval judged against what the documents' own authors
//! changed in their commits (`crate::history`).
//!
//! For every commit of every history in the edit-history folder: the rules of
//! [`crate::history`] decide whether it is a case; a case's document is the one at the parent
//! commit, parsed and taken through the ordinary document and corpus stages in memory (the
//! previous commit's part is the cache of summaries and vectors, as in a nightly reindex); then
//! every strategy is packed under every budget and scored by the gold units it holds.

use crate::error::{Context, Result};
use crate::history::{self, Repository, Skip, Split};
use crate::metrics::ratio;
use crate::setup::Pipeline;
use crate::strategy::{self, Query, Strategy, WITHOUT_TYPED};
use ledger_core::{Document, EdgeKind, UnitKind};
use ledger_pipeline::{Part, Progress};
use ledger_retrieve::{Graph, Ranking};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// Token budgets every strategy is packed under.
pub const BUDGETS: [usize; 6] = [1024, 2048, 4096, 8192, 16384, 32768];

/// One case, as the report lists it.
#[derive(Debug, Clone, Serialize)]
pub struct CaseInfo {
    /// History it comes from.
    pub source: String,
    /// The commit in the public repository.
    pub commit: String,
    /// dev or test.
    pub split: Split,
    /// The commit message's first line.
    pub subject: String,
    /// The target's unit id.
    pub target: String,
    /// Whether the commit message names the target.
    pub named: bool,
    /// The other changed units' ids.
    pub gold: Vec<String>,
}

/// One strategy under one budget over one case.
#[derive(Debug, Clone, Copy)]
struct Outcome {
    case: usize,
    strategy: usize,
    budget: usize,
    found: usize,
    gold: usize,
    /// Far gold units ([`is_far`]) in the context, and in all.
    far_found: usize,
    far_gold: usize,
    tokens: usize,
}

/// A row of the report: one strategy under one budget over a split's cases.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// Strategy name.
    pub strategy: String,
    /// baseline, ledger or ablation.
    pub group: String,
    /// dev or test.
    pub split: Split,
    /// History, or "all".
    pub source: String,
    /// Token budget.
    pub budget: usize,
    /// Cases.
    pub cases: usize,
    /// Gold units in the contexts / gold units, over all cases.
    pub recall_micro: f64,
    /// Far gold units ([`is_far`]: outside the target's enclosing section), over all cases.
    pub far_gold: usize,
    /// Far gold units in the contexts / far gold units.
    pub recall_far_micro: f64,
    /// The other gold units (in the target's enclosing section) in the contexts / those units.
    pub recall_near_micro: f64,
    /// Mean over cases of the share of their gold units found.
    pub recall_per_case: f64,
    /// Share of cases whose gold units are all in the context.
    pub covered: f64,
    /// Mean tokens taken.
    pub tokens: f64,
}

/// What the selection did with one history.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Selection {
    /// History.
    pub source: String,
    /// Commits with a parent.
    pub commits: usize,
    /// Commits left out, by reason.
    pub skipped: BTreeMap<String, usize>,
    /// Cases in dev.
    pub dev: usize,
    /// Cases in test.
    pub test: usize,
    /// Gold units over all cases.
    pub gold_units: usize,
    /// Of them, far from their target ([`is_far`]).
    pub far_gold_units: usize,
}

/// How much of one history's far gold the graph's edges reach from the targets: the ceiling of
/// any walk over them.
#[derive(Debug, Clone, Serialize)]
pub struct Reach {
    /// History, or "all".
    pub source: String,
    /// dev or test.
    pub split: Split,
    /// Far gold units of the split's cases.
    pub far_gold: usize,
    /// Per edge set (each kind but CONTAINS, then their union): far gold units within 1 and 2
    /// hops of the target (or a unit of its subtree), edges followed either way.
    pub within: Vec<Within>,
}

impl Reach {
    fn new(source: &str, split: Split, far_gold: usize, within: &[(usize, usize)]) -> Reach {
        Reach {
            source: source.to_string(),
            split,
            far_gold,
            within: reach_edge_sets()
                .iter()
                .zip(within)
                .map(|(kinds, &counts)| Within {
                    edges: kinds
                        .iter()
                        .map(|k| k.as_str())
                        .collect::<Vec<_>>()
                        .join(" ∪ "),
                    one: ratio(counts.0, far_gold),
                    two: ratio(counts.1, far_gold),
                })
                .collect(),
        }
    }
}

/// Far gold reached over one set of edge kinds.
#[derive(Debug, Clone, Serialize)]
pub struct Within {
    /// The kinds, joined by " ∪ ".
    pub edges: String,
    /// Share of the far gold within one hop.
    pub one: f64,
    /// Share within two hops.
    pub two: f64,
}

/// The edge sets reachability is measured over: each kind but CONTAINS alone, then all of them
/// together.
pub fn reach_edge_sets() -> Vec<Vec<EdgeKind>> {
    let kinds: Vec<EdgeKind> = EdgeKind::ALL
        .into_iter()
        .filter(|&k| k != EdgeKind::Contains)
        .collect();
    kinds
        .iter()
        .map(|&k| vec![k])
        .chain(std::iter::once(kinds.clone()))
        .collect()
}

/// Whether `unit` is far from `target`: outside the deepest section (chapter, heading) that holds
/// the target, or, in a book of several files (`by_file`), in another file than the target's.
pub fn is_far(graph: &Graph, target: usize, unit: usize, by_file: bool) -> bool {
    let units = graph.units();
    if by_file && units[unit].source_path != units[target].source_path {
        return true;
    }
    // A target outside every section: the whole file is around it.
    let Some(section) = graph.enclosing_section(target) else {
        return false;
    };
    !std::iter::successors(Some(unit), |&u| graph.parent(u)).any(|u| u == section)
}

/// The track's results.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Track {
    /// Per history.
    pub selection: Vec<Selection>,
    /// Every case.
    pub cases: Vec<CaseInfo>,
    /// Rows per strategy, budget, split and source.
    pub rows: Vec<Row>,
    /// Far gold within reach of the targets over each kind of edge, per history and split.
    pub reachability: Vec<Reach>,
    /// With `--tune`: the grid on the dev split, best first.
    pub tuning: Vec<Tuned>,
    /// Contexts that took more tokens than their budget (an invariant: none).
    pub over_budget: usize,
    /// Seconds the track took.
    pub seconds: f64,
}

/// How much of the track to run.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// At most this many commits per history (the newest ones), for a quick run.
    pub commits: Option<usize>,
    /// Also score a grid of rankings on the dev cases ([`tuning_grid`]).
    pub tune: bool,
}

/// One ranking of the tuning grid, scored on both splits (chosen on dev alone).
#[derive(Debug, Clone, Serialize)]
pub struct Tuned {
    /// The settings.
    pub ranking: Ranking,
    /// Micro recall per budget of [`BUDGETS`] on the dev split.
    pub recall: Vec<f64>,
    /// Micro recall of the far gold per budget on the dev split.
    pub far_recall: Vec<f64>,
    /// Mean of the dev recalls from 2K to 32K: what the grid is ranked by.
    pub mean: f64,
    /// Micro recall per budget on the test split (reported for the best on dev only).
    pub test_recall: Vec<f64>,
    /// Far recall per budget on the test split.
    pub test_far_recall: Vec<f64>,
}

/// Gold units found and in all, far gold units found and in all: one ranking under one budget
/// over a split's cases.
#[derive(Debug, Clone, Copy, Default)]
struct Counts {
    found: usize,
    gold: usize,
    far_found: usize,
    far_gold: usize,
}

impl Counts {
    fn add(&mut self, other: Counts) {
        self.found += other.found;
        self.gold += other.gold;
        self.far_found += other.far_found;
        self.far_gold += other.far_gold;
    }
}

/// Per split, grid ranking and budget.
type GridCounts = Vec<Vec<[Counts; BUDGETS.len()]>>;

/// The rankings `--tune` scores: the configured edge weights, restart probability and span, and
/// every mix below (the walk's share fixed at 1: scaling every share alike ranks alike).
pub fn tuning_grid(base: Ranking) -> Vec<Ranking> {
    let mut grid = Vec::new();
    for lexical in [0.25, 0.5] {
        for dense in [0.0, 0.25] {
            for locality in [0.5, 1.0] {
                for section in [0.5, 1.0, 2.0] {
                    for linked in [0.0, 0.5, 1.0, 2.0] {
                        grid.push(Ranking {
                            graph: 1.0,
                            lexical,
                            dense,
                            locality,
                            span: 8.0,
                            section,
                            linked,
                            ..base
                        });
                    }
                }
            }
        }
    }
    grid
}

/// Runs the track over `sources` (the histories of a manifest, [`history::manifest`], or one a
/// user names), working in `work`.
// The track's inputs (histories, work folder, strategies, pipeline, limits) and progress: the
// harness's one call, each argument distinct.
#[allow(clippy::too_many_arguments)]
pub fn run(
    sources: &[history::Source],
    work: &Path,
    strategies: &[Strategy],
    pipeline: &Pipeline,
    limits: Limits,
    progress: &dyn Progress,
) -> Result<Track> {
    use rayon::prelude::*;
    let started = std::time::Instant::now();
    let grid = if limits.tune {
        tuning_grid(pipeline.retrieve.ranking())
    } else {
        Vec::new()
    };
    progress.start("real edits", 0);
    let shared = Shared {
        work,
        strategies,
        pipeline,
        limits,
        grid: &grid,
        progress,
    };
    // The histories are independent: one at a time per core, merged in a fixed order.
    let results: Vec<Result<History>> = sources
        .par_iter()
        .map(|source| {
            one_history(source, &shared).with_context(|| format!("real edits of {}", source.name))
        })
        .collect();
    let mut track = Track::default();
    let mut outcomes = Vec::new();
    let mut grid_counts: GridCounts = vec![vec![[Counts::default(); BUDGETS.len()]; grid.len()]; 2];
    let mut reach_all: BTreeMap<Split, (usize, Vec<(usize, usize)>)> = BTreeMap::new();
    for r in results {
        let h = r?;
        for (split, (far, within)) in &h.reach {
            let sets = reach_edge_sets().len();
            let all = reach_all
                .entry(*split)
                .or_insert_with(|| (0, vec![(0, 0); sets]));
            all.0 += far;
            for (a, w) in all.1.iter_mut().zip(within) {
                a.0 += w.0;
                a.1 += w.1;
            }
            track
                .reachability
                .push(Reach::new(&h.selection.source, *split, *far, within));
        }
        let offset = track.cases.len();
        track.cases.extend(h.cases);
        outcomes.extend(h.outcomes.into_iter().map(|o| Outcome {
            case: o.case + offset,
            ..o
        }));
        track.selection.push(h.selection);
        track.over_budget += h.over_budget;
        for (split, counts) in h.grid_counts.into_iter().enumerate() {
            for (k, per_budget) in counts.into_iter().enumerate() {
                for (b, c) in per_budget.into_iter().enumerate() {
                    grid_counts[split][k][b].add(c);
                }
            }
        }
    }
    for (split, (far, within)) in &reach_all {
        track
            .reachability
            .push(Reach::new("all", *split, *far, within));
    }
    track.rows = rows(strategies, &track.cases, &outcomes);
    track.tuning = grid
        .into_iter()
        .enumerate()
        .map(|(k, ranking)| {
            let recall_of = |split: usize, far: bool| -> Vec<f64> {
                grid_counts[split][k]
                    .iter()
                    .map(|c| {
                        if far {
                            ratio(c.far_found, c.far_gold)
                        } else {
                            ratio(c.found, c.gold)
                        }
                    })
                    .collect()
            };
            let (recall, far_recall) = (recall_of(0, false), recall_of(0, true));
            let mean = recall[1..].iter().sum::<f64>() / (recall.len() - 1) as f64;
            Tuned {
                ranking,
                recall,
                far_recall,
                mean,
                test_recall: recall_of(1, false),
                test_far_recall: recall_of(1, true),
            }
        })
        .collect();
    track.tuning.sort_by(|a, b| b.mean.total_cmp(&a.mean));
    track.seconds = started.elapsed().as_secs_f64();
    Ok(track)
}

/// What one history contributes to the track.
#[derive(Default)]
struct History {
    selection: Selection,
    /// Its cases; outcomes index into them.
    cases: Vec<CaseInfo>,
    outcomes: Vec<Outcome>,
    over_budget: usize,
    /// Per split: far gold, and per edge set of [`reach_edge_sets`] far gold within 1 and 2 hops.
    reach: BTreeMap<Split, (usize, Vec<(usize, usize)>)>,
    /// Per split, grid ranking and budget: gold units found, gold units.
    grid_counts: GridCounts,
}

/// What every history of one run shares.
struct Shared<'a> {
    work: &'a Path,
    strategies: &'a [Strategy],
    pipeline: &'a Pipeline<'a>,
    limits: Limits,
    grid: &'a [Ranking],
    progress: &'a dyn Progress,
}

/// The cases of one history, every strategy and grid mix scored on each.
fn one_history(source: &history::Source, run: &Shared) -> Result<History> {
    let Shared {
        work,
        strategies,
        pipeline,
        limits,
        grid,
        progress,
    } = *run;
    let mut h = History {
        grid_counts: vec![vec![[Counts::default(); BUDGETS.len()]; grid.len()]; 2],
        ..History::default()
    };
    {
        let clone = work.join(&source.name);
        if clone.exists() {
            std::fs::remove_dir_all(&clone)
                .with_context(|| format!("removing {}", clone.display()))?;
        }
        let repo = Repository::clone_bundle(&source.bundle, &clone, source.branch.as_deref())?;
        let mut commits = repo.commits()?;
        if let Some(n) = limits.commits {
            commits = commits.split_off(commits.len().saturating_sub(n));
        }
        progress.grow(commits.len() as u64);
        let mut selection = Selection {
            source: source.name.to_string(),
            commits: commits.len(),
            ..Selection::default()
        };
        let mut previous: Option<Part> = None;
        for commit in &commits {
            progress.advance(&source.name);
            if let Some(skip) = history::pre_select(commit) {
                *selection.skipped.entry(skip.as_str().into()).or_default() += 1;
                continue;
            }
            let hunks = repo.hunks(commit)?;
            repo.checkout(&commit.parent)?;
            let path = repo.dir().join(&source.document);
            let Some(parse_source) = document_source(repo.dir(), &path, &source.name) else {
                *selection
                    .skipped
                    .entry(Skip::NoDocument.as_str().into())
                    .or_default() += 1;
                continue;
            };
            // A first, cheap look (no token counts, no stages) decides most commits.
            let quick = ledger_parse::parse(&parse_source, None);
            let changed = history::changed_units(&quick, repo.dir(), &hunks);
            if let Err(skip) = history::select(&quick, &changed, &[]) {
                *selection.skipped.entry(skip.as_str().into()).or_default() += 1;
                continue;
            }
            let case = index_case(pipeline, &parse_source, previous.as_ref())
                .with_context(|| format!("{} at {}", source.name, commit.parent))?;
            let changed = history::changed_units(&case.doc, repo.dir(), &hunks);
            let named_ids = case.graph.targets_in(&commit.message, Some(&case.doc.id));
            let index = case.doc.unit_indices();
            let named: Vec<usize> = named_ids
                .iter()
                .filter_map(|&g| index.get(case.graph.units()[g].unit_id.as_str()).copied())
                .collect();
            let (target, gold) = match history::select(&case.doc, &changed, &named) {
                Ok(x) => x,
                Err(skip) => {
                    *selection.skipped.entry(skip.as_str().into()).or_default() += 1;
                    previous = Some(case.part);
                    continue;
                }
            };
            let to_graph = |i: usize| case.graph.index_of(&case.doc.id, &case.doc.units[i].id);
            let (Some(target_g), gold_g) = (
                to_graph(target),
                gold.iter().filter_map(|&i| to_graph(i)).collect::<Vec<_>>(),
            ) else {
                previous = Some(case.part);
                continue;
            };
            let split = Split::of(&commit.original);
            match split {
                Split::Dev => selection.dev += 1,
                Split::Test => selection.test += 1,
            }
            selection.gold_units += gold_g.len();
            let by_file = case.doc.format == Some(ledger_core::Format::MarkdownBook);
            let far: Vec<usize> = gold_g
                .iter()
                .copied()
                .filter(|&g| is_far(&case.graph, target_g, g, by_file))
                .collect();
            selection.far_gold_units += far.len();
            {
                let sets = reach_edge_sets();
                let (far_total, within) = h
                    .reach
                    .entry(split)
                    .or_insert_with(|| (0, vec![(0, 0); sets.len()]));
                *far_total += far.len();
                let mut region = vec![target_g];
                region.extend(case.graph.subtree(target_g));
                for (kinds, counts) in sets.iter().zip(within.iter_mut()) {
                    let hops = case.graph.within_hops(&region, kinds, 2);
                    for g in &far {
                        match hops.get(g) {
                            Some(1) => {
                                counts.0 += 1;
                                counts.1 += 1;
                            }
                            Some(2) => counts.1 += 1,
                            _ => {}
                        }
                    }
                }
            }
            let case_index = h.cases.len();
            h.cases.push(CaseInfo {
                source: source.name.to_string(),
                commit: commit.original.chars().take(12).collect(),
                split,
                subject: commit
                    .message
                    .lines()
                    .next()
                    .unwrap_or_default()
                    .to_string(),
                target: case.doc.units[target].id.clone(),
                named: named.contains(&target),
                gold: gold.iter().map(|&i| case.doc.units[i].id.clone()).collect(),
            });
            let dense = match pipeline.stage.embed_query(&format!(
                "{}\n{}",
                commit.message,
                case.graph.units()[target_g].text
            ))? {
                Some(q) => strategy::dense_scores(&q, &case.vectors),
                None => HashMap::new(),
            };
            let query = Query {
                targets: &[target_g],
                instruction: Some(&commit.message),
                dense: Some(&dense),
            };
            for (s, st) in strategies.iter().enumerate() {
                let got = strategy::retrieve_at(
                    &st.method,
                    &case.graph,
                    &case.doc_units,
                    &BUDGETS,
                    query,
                );
                for (budget, r) in BUDGETS.iter().zip(got) {
                    h.over_budget += usize::from(r.tokens > *budget);
                    let found = gold_g.iter().filter(|g| r.units.contains(g)).count();
                    let far_found = far.iter().filter(|g| r.units.contains(g)).count();
                    h.outcomes.push(Outcome {
                        case: case_index,
                        strategy: s,
                        budget: *budget,
                        found,
                        gold: gold_g.len(),
                        far_found,
                        far_gold: far.len(),
                        tokens: r.tokens,
                    });
                }
            }
            // The signals depend on the walk's settings only: computed once per walk, ranked per
            // mix.
            let request = ledger_retrieve::Request {
                targets: &[target_g],
                instruction: query.instruction,
                dense: query.dense,
                budget: 0,
            };
            let mut signals: Option<(Ranking, ledger_retrieve::Signals)> = None;
            let counts = &mut h.grid_counts[usize::from(split == Split::Test)];
            for (k, ranking) in grid.iter().enumerate() {
                if signals.as_ref().is_none_or(|(r, _)| !r.same_walk(ranking)) {
                    signals = Some((*ranking, case.graph.signals(&request, ranking)));
                }
                let ranked = signals.as_ref().expect("set above").1.rank(ranking);
                for (b, &budget) in BUDGETS.iter().enumerate() {
                    let taken = ranked.pack_units(&case.graph, budget);
                    counts[k][b].add(Counts {
                        found: gold_g.iter().filter(|g| taken.contains(g)).count(),
                        gold: gold_g.len(),
                        far_found: far.iter().filter(|g| taken.contains(g)).count(),
                        far_gold: far.len(),
                    });
                }
            }
            previous = Some(case.part);
        }
        for skip in Skip::ALL {
            selection.skipped.entry(skip.as_str().into()).or_default();
        }
        h.selection = selection;
    }
    Ok(h)
}

/// The parse source of a history's document (a LaTeX main file or an mdBook folder) in the
/// repository checked out at `root`.
fn document_source(root: &Path, path: &Path, name: &str) -> Option<ledger_parse::Source> {
    let format = if path.is_dir() {
        path.join("SUMMARY.md")
            .is_file()
            .then_some(ledger_core::Format::MarkdownBook)?
    } else if path.is_file() {
        if path.extension().is_some_and(|e| e == "md") {
            ledger_core::Format::Markdown
        } else {
            ledger_core::Format::Latex
        }
    } else {
        return None;
    };
    Some(ledger_parse::Source {
        id: name.to_string(),
        path: path.to_path_buf(),
        format,
        root: Some(root.to_path_buf()),
    })
}

/// One commit's document after the document and corpus stages, in memory.
struct Indexed {
    doc: Document,
    graph: Graph,
    doc_units: Vec<usize>,
    vectors: HashMap<usize, Vec<f32>>,
    /// The document stage's output: the next commit's cache.
    part: Part,
}

fn index_case(
    pipeline: &Pipeline,
    source: &ledger_parse::Source,
    previous: Option<&Part>,
) -> Result<Indexed> {
    let stage = pipeline.stage;
    let doc = stage.parse(source);
    let (part, _) = stage.process(doc, previous, &ledger_pipeline::Quiet)?;
    let (mut docs, semantic) = ledger_pipeline::assemble(
        vec![part.clone()],
        &stage.settings().related,
        stage.semantic_names(),
    )?;
    let doc = docs.pop().context("one document in, one out")?;
    let edges: Vec<ledger_core::Edge> = doc
        .parsed_edges()
        .into_iter()
        .chain(doc.depends.iter().cloned())
        .chain(semantic.related.iter().cloned())
        .collect();
    let graph = Graph::new(doc.unit_records(), &edges);
    let mut doc_units: Vec<usize> = (0..graph.units().len())
        .filter(|&i| graph.units()[i].kind != UnitKind::Document)
        .collect();
    doc_units.sort_by_key(|&i| graph.units()[i].ordinal);
    let vectors = semantic
        .embeddings
        .iter()
        .filter_map(|e| Some((graph.index_of(&e.doc_id, &e.unit_id)?, e.vector.clone())))
        .collect();
    Ok(Indexed {
        doc,
        graph,
        doc_units,
        vectors,
        part,
    })
}

/// Rows per strategy, budget and split, over all histories and per history.
fn rows(strategies: &[Strategy], cases: &[CaseInfo], outcomes: &[Outcome]) -> Vec<Row> {
    let mut groups: BTreeMap<(usize, usize, Split, String), Vec<&Outcome>> = BTreeMap::new();
    for o in outcomes {
        let c = &cases[o.case];
        for source in ["all".to_string(), c.source.clone()] {
            groups
                .entry((o.strategy, o.budget, c.split, source))
                .or_default()
                .push(o);
        }
    }
    groups
        .into_iter()
        .map(|((s, budget, split, source), os)| {
            let found: usize = os.iter().map(|o| o.found).sum();
            let gold: usize = os.iter().map(|o| o.gold).sum();
            let far_found: usize = os.iter().map(|o| o.far_found).sum();
            let far_gold: usize = os.iter().map(|o| o.far_gold).sum();
            let n = os.len() as f64;
            Row {
                strategy: strategies[s].name.clone(),
                group: strategies[s].group.to_string(),
                split,
                source,
                budget,
                cases: os.len(),
                recall_micro: ratio(found, gold),
                far_gold,
                recall_far_micro: ratio(far_found, far_gold),
                recall_near_micro: ratio(found - far_found, gold - far_gold),
                recall_per_case: os.iter().map(|o| ratio(o.found, o.gold)).sum::<f64>() / n,
                covered: os.iter().filter(|o| o.found == o.gold).count() as f64 / n,
                tokens: os.iter().map(|o| o.tokens as f64).sum::<f64>() / n,
            }
        })
        .collect()
}

impl Track {
    /// What must hold of any run: cases found, each with gold units, every context within its
    /// budget.
    pub fn invariants(&self) -> Vec<String> {
        let mut broken = Vec::new();
        if !self.selection.is_empty() && self.cases.is_empty() {
            broken.push("the real-edit track found no case".to_string());
        }
        if let Some(c) = self.cases.iter().find(|c| c.gold.is_empty()) {
            broken.push(format!("real-edit case {} has no gold unit", c.commit));
        }
        if self.over_budget > 0 {
            broken.push(format!(
                "{} real-edit contexts exceeded their budget",
                self.over_budget
            ));
        }
        broken
    }

    /// The row of `strategy` at `budget` over a split, of one history (`source`) or "all".
    pub fn row(&self, strategy: &str, split: Split, budget: usize, source: &str) -> Option<&Row> {
        self.rows.iter().find(|r| {
            r.strategy == strategy && r.split == split && r.budget == budget && r.source == source
        })
    }

    /// The report section, as Markdown.
    pub fn markdown(&self, strategies: &[Strategy]) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "## Real edits: what the authors changed together\n\n\
             Cases from the documents' own commit histories (`datasets/edit-history/`): the \
             document at the parent commit, the commit message as the instruction, one changed \
             unit as the target (the one the message names, else the first changed unit that is \
             not a section), and the other units the commit changed as gold. Recall: gold units \
             in the context. Test split (commits whose original hash starts with 8–f); the \
             ranking was tuned on the dev split only. {} cases, {:.0} s.\n",
            self.cases.len(),
            self.seconds
        );
        let _ = writeln!(
            s,
            "| history | commits | {} | dev cases | test cases | gold units | far |\n|---|---:|{}---:|---:|---:|---:|",
            Skip::ALL.map(|k| k.as_str()).join(" | "),
            "---:|".repeat(Skip::ALL.len())
        );
        for sel in &self.selection {
            let skipped: Vec<String> = Skip::ALL
                .iter()
                .map(|k| {
                    sel.skipped
                        .get(k.as_str())
                        .copied()
                        .unwrap_or(0)
                        .to_string()
                })
                .collect();
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} | {:.0} % |",
                sel.source,
                sel.commits,
                skipped.join(" | "),
                sel.dev,
                sel.test,
                sel.gold_units,
                100.0 * ratio(sel.far_gold_units, sel.gold_units)
            );
        }
        let _ = writeln!(
            s,
            "\nA gold unit is *far* when it lies outside the target's enclosing section (the \
             deepest section, chapter or heading holding the target; in an mdBook, also any unit \
             of another chapter file): what reading around the target does not reach."
        );
        for split in [Split::Test, Split::Dev] {
            let _ = writeln!(
                s,
                "\n### {} split: gold units found (micro recall) / cases fully covered\n",
                split.as_str()
            );
            let _ = writeln!(
                s,
                "| strategy | {} |\n|---|{}",
                BUDGETS.map(|b| format!("{}K", b / 1024)).join(" | "),
                "---:|".repeat(BUDGETS.len())
            );
            for st in strategies {
                let cells: Vec<String> = BUDGETS
                    .iter()
                    .map(|&b| match self.row(&st.name, split, b, "all") {
                        Some(r) => format!("{:.3} / {:.2}", r.recall_micro, r.covered),
                        None => "–".into(),
                    })
                    .collect();
                let name = if st.group == "ledger" {
                    format!("**{}**", st.name)
                } else {
                    st.name.clone()
                };
                let _ = writeln!(s, "| {name} | {} |", cells.join(" | "));
            }
        }
        s.push_str(&self.far_markdown(strategies));
        if let Some(best) = self.tuning.first() {
            let _ = writeln!(
                s,
                "\n### Tuning: the best 10 of {} mixes on the dev split (micro recall / far recall)\n\n| lexical | dense | locality | span | section | linked | {} | mean 2K–32K |\n|---:|---:|---:|---:|---:|---:|{}---:|",
                self.tuning.len(),
                BUDGETS.map(|b| format!("{}K", b / 1024)).join(" | "),
                "---:|".repeat(BUDGETS.len())
            );
            let cells = |v: &[f64], far: &[f64]| {
                v.iter()
                    .zip(far)
                    .map(|(x, f)| format!("{x:.3} / {f:.3}"))
                    .collect::<Vec<_>>()
                    .join(" | ")
            };
            for t in self.tuning.iter().take(10) {
                let r = &t.ranking;
                let _ = writeln!(
                    s,
                    "| {} | {} | {} | {} | {} | {} | {} | {:.3} |",
                    r.lexical,
                    r.dense,
                    r.locality,
                    r.span,
                    r.section,
                    r.linked,
                    cells(&t.recall, &t.far_recall),
                    t.mean
                );
            }
            let _ = writeln!(
                s,
                "\nThe best on dev, on the test split: {}.",
                cells(&best.test_recall, &best.test_far_recall)
            );
        }
        let _ = writeln!(
            s,
            "\n### Test split per history at 4K and 16K (micro recall)\n\n| history | strategy | 4K | 16K |\n|---|---|---:|---:|"
        );
        for sel in &self.selection {
            for st in strategies.iter().filter(|s| s.group != "ablation") {
                let cell = |b: usize| {
                    self.row(&st.name, Split::Test, b, &sel.source)
                        .map_or("–".to_string(), |r| format!("{:.3}", r.recall_micro))
                };
                let _ = writeln!(
                    s,
                    "| {} | {} | {} | {} |",
                    sel.source,
                    st.name,
                    cell(4096),
                    cell(16384)
                );
            }
        }
        s
    }

    /// The far-gold sections of the report: far recall per budget (test split), far and near
    /// recall per history at 4K and 16K, and the reachability of far gold over each edge kind.
    fn far_markdown(&self, strategies: &[Strategy]) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let row = |st: &str, source: &str, b: usize| self.row(st, Split::Test, b, source);
        let far = self
            .rows
            .iter()
            .find(|r| r.split == Split::Test && r.source == "all")
            .map_or(0, |r| r.far_gold);
        let _ = writeln!(
            s,
            "\n### test split: far gold found (micro recall over the {far} far gold units)\n\n\
             | strategy | {} |\n|---|{}",
            BUDGETS.map(|b| format!("{}K", b / 1024)).join(" | "),
            "---:|".repeat(BUDGETS.len())
        );
        for st in strategies {
            let cells: Vec<String> = BUDGETS
                .iter()
                .map(|&b| {
                    row(&st.name, "all", b)
                        .map_or("–".into(), |r| format!("{:.3}", r.recall_far_micro))
                })
                .collect();
            let _ = writeln!(s, "| {} | {} |", st.name, cells.join(" | "));
        }
        let _ = writeln!(
            s,
            "\n### Test split per history: far and near recall at 4K and 16K\n\n\
             | history | far gold | strategy | far 4K | near 4K | far 16K | near 16K |\n\
             |---|---:|---|---:|---:|---:|---:|"
        );
        for sel in &self.selection {
            for st in strategies
                .iter()
                .filter(|s| s.group != "ablation" || s.name == WITHOUT_TYPED)
            {
                let cell = |b: usize, far: bool| {
                    row(&st.name, &sel.source, b).map_or("–".into(), |r| {
                        format!(
                            "{:.3}",
                            if far {
                                r.recall_far_micro
                            } else {
                                r.recall_near_micro
                            }
                        )
                    })
                };
                let far = row(&st.name, &sel.source, 4096).map_or(0, |r| r.far_gold);
                let _ = writeln!(
                    s,
                    "| {} | {far} | {} | {} | {} | {} | {} |",
                    sel.source,
                    st.name,
                    cell(4096, true),
                    cell(4096, false),
                    cell(16384, true),
                    cell(16384, false)
                );
            }
        }
        let sets = reach_edge_sets();
        let _ = writeln!(
            s,
            "\n### Reachability: far gold within 1 / 2 hops of the target over each kind of edge \
             (either direction)\n\nThe ceiling of any walk over those edges.\n\n\
             | history | split | far gold | {} |\n|---|---|---:|{}",
            sets.iter()
                .map(|k| k.iter().map(|k| k.as_str()).collect::<Vec<_>>().join(" ∪ "))
                .collect::<Vec<_>>()
                .join(" | "),
            "---:|".repeat(sets.len())
        );
        for r in &self.reachability {
            let cells: Vec<String> = r
                .within
                .iter()
                .map(|w| format!("{:.2} / {:.2}", w.one, w.two))
                .collect();
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} |",
                r.source,
                r.split.as_str(),
                r.far_gold,
                cells.join(" | ")
            );
        }
        s
    }

    /// Recall against budget on the test split, one line per baseline and LEDGER.
    pub fn lines(&self, strategies: &[Strategy]) -> Vec<(String, Vec<(f64, f64)>)> {
        strategies
            .iter()
            .filter(|s| s.group != "ablation")
            .map(|st| {
                let points = BUDGETS
                    .iter()
                    .filter_map(|&b| {
                        let r = self.row(&st.name, Split::Test, b, "all")?;
                        Some(((b / 1024) as f64, r.recall_micro))
                    })
                    .collect();
                (st.name.clone(), points)
            })
            .collect()
    }
}
