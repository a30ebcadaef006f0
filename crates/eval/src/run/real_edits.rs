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
use crate::strategy::{self, Query, Strategy};
use ledger_core::{Document, UnitKind};
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
    /// Mean of the dev recalls from 2K to 32K: what the grid is ranked by.
    pub mean: f64,
    /// Micro recall per budget on the test split (reported for the best on dev only).
    pub test_recall: Vec<f64>,
}

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
    let mut grid_counts = vec![vec![[(0usize, 0usize); BUDGETS.len()]; grid.len()]; 2];
    for r in results {
        let h = r?;
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
                for (b, (f, g)) in per_budget.into_iter().enumerate() {
                    grid_counts[split][k][b].0 += f;
                    grid_counts[split][k][b].1 += g;
                }
            }
        }
    }
    track.rows = rows(strategies, &track.cases, &outcomes);
    track.tuning = grid
        .into_iter()
        .enumerate()
        .map(|(k, ranking)| {
            let recall_of = |counts: &[(usize, usize); BUDGETS.len()]| -> Vec<f64> {
                counts.iter().map(|&(f, g)| ratio(f, g)).collect()
            };
            let recall = recall_of(&grid_counts[0][k]);
            let mean = recall[1..].iter().sum::<f64>() / (recall.len() - 1) as f64;
            Tuned {
                ranking,
                recall,
                mean,
                test_recall: recall_of(&grid_counts[1][k]),
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
    /// Per split, grid ranking and budget: gold units found, gold units.
    grid_counts: Vec<Vec<[(usize, usize); BUDGETS.len()]>>,
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
        grid_counts: vec![vec![[(0usize, 0usize); BUDGETS.len()]; grid.len()]; 2],
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
                    h.outcomes.push(Outcome {
                        case: case_index,
                        strategy: s,
                        budget: *budget,
                        found,
                        gold: gold_g.len(),
                        tokens: r.tokens,
                    });
                }
            }
            if !grid.is_empty() {
                // The signals do not depend on the mix: computed once, ranked per mix.
                let signals = case.graph.signals(
                    &ledger_retrieve::Request {
                        targets: &[target_g],
                        instruction: query.instruction,
                        dense: query.dense,
                        budget: 0,
                    },
                    &grid[0],
                );
                let counts = &mut h.grid_counts[usize::from(split == Split::Test)];
                for (k, ranking) in grid.iter().enumerate() {
                    let ranked = signals.rank(ranking);
                    for (b, &budget) in BUDGETS.iter().enumerate() {
                        let taken = ranked.pack_units(&case.graph, budget);
                        let found = gold_g.iter().filter(|g| taken.contains(g)).count();
                        counts[k][b].0 += found;
                        counts[k][b].1 += gold_g.len();
                    }
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
            let n = os.len() as f64;
            Row {
                strategy: strategies[s].name.clone(),
                group: strategies[s].group.to_string(),
                split,
                source,
                budget,
                cases: os.len(),
                recall_micro: ratio(found, gold),
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

    /// The row of `strategy` at `budget` over a split, all histories.
    pub fn row(&self, strategy: &str, split: Split, budget: usize) -> Option<&Row> {
        self.rows.iter().find(|r| {
            r.strategy == strategy && r.split == split && r.budget == budget && r.source == "all"
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
            "| history | commits | {} | dev cases | test cases | gold units |\n|---|---:|{}---:|---:|---:|",
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
                "| {} | {} | {} | {} | {} | {} |",
                sel.source,
                sel.commits,
                skipped.join(" | "),
                sel.dev,
                sel.test,
                sel.gold_units
            );
        }
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
                    .map(|&b| match self.row(&st.name, split, b) {
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
        if let Some(best) = self.tuning.first() {
            let _ = writeln!(
                s,
                "\n### Tuning: the best 10 of {} mixes on the dev split (micro recall)\n\n| lexical | dense | locality | span | section | linked | {} | mean 2K–32K |\n|---:|---:|---:|---:|---:|---:|{}---:|",
                self.tuning.len(),
                BUDGETS.map(|b| format!("{}K", b / 1024)).join(" | "),
                "---:|".repeat(BUDGETS.len())
            );
            let cells = |v: &[f64]| {
                v.iter()
                    .map(|x| format!("{x:.3}"))
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
                    cells(&t.recall),
                    t.mean
                );
            }
            let _ = writeln!(
                s,
                "\nThe best on dev, on the test split: {}.",
                cells(&best.test_recall)
            );
        }
        let _ = writeln!(
            s,
            "\n### Test split per history at 4K and 16K (micro recall)\n\n| history | strategy | 4K | 16K |\n|---|---|---:|---:|"
        );
        for sel in &self.selection {
            for st in strategies.iter().filter(|s| s.group != "ablation") {
                let cell = |b: usize| {
                    self.rows
                        .iter()
                        .find(|r| {
                            r.strategy == st.name
                                && r.split == Split::Test
                                && r.budget == b
                                && r.source == sel.source
                        })
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

    /// Recall against budget on the test split, one line per baseline and LEDGER.
    pub fn lines(&self, strategies: &[Strategy]) -> Vec<(String, Vec<(f64, f64)>)> {
        strategies
            .iter()
            .filter(|s| s.group != "ablation")
            .map(|st| {
                let points = BUDGETS
                    .iter()
                    .filter_map(|&b| {
                        let r = self.row(&st.name, Split::Test, b)?;
                        Some(((b / 1024) as f64, r.recall_micro))
                    })
                    .collect();
                (st.name.clone(), points)
            })
            .collect()
    }
}
