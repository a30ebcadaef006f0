//! `ledger eval depends`: DEPENDS against the authors' `\uses{}` annotations of Lean blueprints.
//!
//! For each blueprint, the sources are copied with every `\uses{…}` removed, parsed and resolved
//! as `ledger index` does, and judged through [`judge_corpus`], the pipeline's own judging step.
//! Every unit is attributed to its labelled owner (its label, the statement a proof proves, else
//! its labelled ancestor); the gold pairs are the `\uses` of the untouched sources, attributed the
//! same way. Scored per blueprint, over the owners that carry at least one `\uses` (an owner
//! without any says nothing about what it needs): DEPENDS alone, REFERENCES alone, their union,
//! and the baseline "previous statement"; plus the *implicit* scores, on the pairs beyond
//! REFERENCES: implicit precision, the share of DEPENDS pairs without a REFERENCES edge that are
//! gold; implicit recall, the share of gold pairs no REFERENCES edge carries that DEPENDS finds.
//!
//! The learned judge is scored leave-one-blueprint-out: for each blueprint, a model trained on the
//! others (and its threshold chosen on them) judges it. `--train` fits the shipped model on all.

use crate::error::{Context, EvalError, Result};
use crate::metrics::Detection;
use ledger_core::{Document, JudgmentOutcome, MentionKind, Resolution, UnitKind};
use ledger_llm::depends::Signals;
use ledger_llm::depends::learned::{self, Model};
use ledger_llm::depends::{
    Cache, DocContext, Judge, LearnedJudge, is_ancestor, judge_corpus, judgeable,
};
use rayon::prelude::*;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A blueprint to score: its name and main file.
#[derive(Debug, Clone)]
pub struct Blueprint {
    /// Its name (the folder's).
    pub name: String,
    /// Its main file (`print.tex`).
    pub main: PathBuf,
}

/// The bundled blueprints: each `print.tex` under `datasets/blueprints/*/src/`, and the Carleson
/// blueprint's, in name order.
pub fn bundled(datasets: &Path) -> Vec<Blueprint> {
    let mut out: Vec<Blueprint> = std::fs::read_dir(datasets.join("blueprints"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("src/print.tex").is_file())
        .map(|p| Blueprint {
            name: p
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned(),
            main: p.join("src/print.tex"),
        })
        .collect();
    let carleson = datasets.join("carleson-blueprint/print.tex");
    if carleson.is_file() {
        out.push(Blueprint {
            name: "carleson".into(),
            main: carleson,
        });
    }
    out.sort_by_key(|a| a.name.to_lowercase());
    out
}

/// A blueprint prepared for scoring: the document without its `\uses`, each unit's owner, and
/// the gold pairs.
pub struct Prepared {
    /// The blueprint's name.
    pub name: String,
    /// The document parsed from the copy without `\uses`.
    pub doc: Document,
    /// Per unit: its labelled owner (a unit index), if it has one.
    pub owner: Vec<Option<usize>>,
    /// Gold pairs (dependent owner, prerequisite owner), by unit index of `doc`.
    pub gold: BTreeSet<(usize, usize)>,
    /// Pairs that a REFERENCES edge carries, attributed to owners.
    pub references: BTreeSet<(usize, usize)>,
}

impl Prepared {
    /// Owners with at least one gold pair: the dependents scored.
    fn annotated(&self) -> BTreeSet<usize> {
        self.gold.iter().map(|g| g.0).collect()
    }
}

/// Parses `main` and the files it inputs (no token counts), resolved.
fn parse(main: &Path) -> Result<Document> {
    let (sources, diags) = ledger_parse::discover(&[main.to_path_buf()]);
    if sources.is_empty() {
        return Err(EvalError::Invalid(format!(
            "{}: no document ({diags:?})",
            main.display()
        )));
    }
    let mut docs: Vec<Document> = sources
        .iter()
        .map(|s| ledger_parse::parse(s, None))
        .collect();
    ledger_parse::resolve_corpus(&mut docs);
    Ok(docs.remove(0))
}

/// Each unit's labelled owner: for a proof (or a part of one), the statement it proves; else the
/// nearest labelled unit among the unit and its ancestors (the document root excluded).
pub fn owners(doc: &Document) -> Vec<Option<usize>> {
    let group = ledger_llm::depends::statements(doc);
    (0..doc.units.len())
        .map(|i| {
            let mut p = Some(group[i]);
            while let Some(x) = p {
                let u = &doc.units[x];
                if u.kind == UnitKind::Document {
                    return None;
                }
                if u.label.is_some() && u.kind != UnitKind::Bibitem {
                    return Some(x);
                }
                p = u.parent;
            }
            None
        })
        .collect()
}

/// Copies the folder of `main` to `to` with every `\uses{…}` removed from its `.tex` files (the
/// line breaks inside one kept), and returns the copy's main file.
fn strip_uses(main: &Path, to: &Path) -> Result<PathBuf> {
    static USES: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"\\uses\s*\{[^}]*\}").expect("valid"));
    let root = main.parent().context("a main file has a folder")?;
    if to.exists() {
        std::fs::remove_dir_all(to).with_context(|| format!("removing {}", to.display()))?;
    }
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in
            std::fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))?
        {
            let path = entry?.path();
            let rel = path.strip_prefix(root).unwrap_or(&path);
            let dest = to.join(rel);
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if let Some(parent) = dest.parent() {
                std::fs::create_dir_all(parent)?;
            }
            if path.extension().is_some_and(|e| e == "tex") {
                let text = std::fs::read(&path)?;
                let text = String::from_utf8_lossy(&text);
                let stripped = USES.replace_all(&text, |c: &regex::Captures| {
                    "\n".repeat(c[0].matches('\n').count())
                });
                std::fs::write(&dest, stripped.as_bytes())?;
            } else {
                std::fs::copy(&path, &dest)?;
            }
        }
    }
    Ok(to.join(main.strip_prefix(root).unwrap_or(main)))
}

/// Prepares `bp`, writing its copy without `\uses` under `work`.
pub fn prepare(bp: &Blueprint, work: &Path) -> Result<Prepared> {
    let original = parse(&bp.main).with_context(|| format!("parsing {}", bp.main.display()))?;
    let copy = strip_uses(&bp.main, &work.join(&bp.name))?;
    let doc = parse(&copy).with_context(|| format!("parsing {}", copy.display()))?;
    // Gold, by owner id in the original, mapped to the copy's units by id.
    let orig_owner = owners(&original);
    let orig_index = original.unit_indices();
    let index = doc.unit_indices();
    let mut gold = BTreeSet::new();
    for m in original
        .mentions
        .iter()
        .filter(|m| m.kind == MentionKind::Uses)
    {
        let Resolution::Resolved { doc: d, unit } = &m.resolution else {
            continue;
        };
        let (Some(a), Some(&t)) = (orig_owner[m.unit], orig_index.get(unit.as_str())) else {
            continue;
        };
        let (Some(b), true) = (orig_owner[t], d == &original.id) else {
            continue;
        };
        if let (Some(&a), Some(&b)) = (
            index.get(original.units[a].id.as_str()),
            index.get(original.units[b].id.as_str()),
        ) && a != b
        {
            gold.insert((a, b));
        }
    }
    let owner = owners(&doc);
    let references = doc
        .reference_edges()
        .into_iter()
        .filter(|e| e.dst_doc == doc.id)
        .filter_map(|e| {
            let a = owner[*index.get(e.src_unit.as_str())?]?;
            let b = owner[*index.get(e.dst_unit.as_str())?]?;
            (a != b).then_some((a, b))
        })
        .collect();
    Ok(Prepared {
        name: bp.name.clone(),
        doc,
        owner,
        gold,
        references,
    })
}

/// A judged pair at owner level: the highest probability any of its unit pairs got.
type Scored = BTreeMap<(usize, usize), f64>;

/// The verdicts of `judge` on `p`'s document (through [`judge_corpus`]), attributed to owners
/// and kept for annotated dependents: each pair with its probability (1 for a yes/no judge's
/// yes, 0 for its no).
pub fn judged(p: &Prepared, judge: &dyn Judge, window: usize) -> Scored {
    let mut docs = vec![p.doc.clone()];
    judge_corpus(&mut docs, judge, window, &Cache::new());
    let doc = &docs[0];
    let index = doc.unit_indices();
    let annotated = p.annotated();
    let mut out = Scored::new();
    for j in &doc.judgments {
        let JudgmentOutcome::Verdicts(verdicts) = &j.outcome else {
            continue;
        };
        let Some(a) = index.get(j.unit_id.as_str()).and_then(|&i| p.owner[i]) else {
            continue;
        };
        if !annotated.contains(&a) {
            continue;
        }
        for (c, v) in j.candidates.iter().zip(verdicts) {
            let Some(b) = index.get(c.as_str()).and_then(|&k| p.owner[k]) else {
                continue;
            };
            if a == b {
                continue;
            }
            let score = v.score.map_or(if v.depends { 1.0 } else { 0.0 }, f64::from);
            let e = out.entry((a, b)).or_insert(0.0);
            *e = e.max(score);
        }
    }
    out
}

/// The pairs of `scored` at or above `threshold`.
fn at(scored: &Scored, threshold: f64) -> BTreeSet<(usize, usize)> {
    scored
        .iter()
        .filter(|(_, p)| **p >= threshold)
        .map(|(k, _)| *k)
        .collect()
}

/// The baseline "previous statement": each annotated owner depends on the nearest earlier
/// labelled theorem-like unit that is not its own.
fn previous_statement(p: &Prepared) -> BTreeSet<(usize, usize)> {
    let doc = &p.doc;
    p.annotated()
        .into_iter()
        .filter_map(|a| {
            (0..a)
                .rev()
                .find(|&k| {
                    doc.units[k].kind == UnitKind::Theorem
                        && p.owner[k] == Some(k)
                        && !is_ancestor(doc, k, a)
                })
                .map(|k| (a, k))
        })
        .collect()
}

/// Pairs of `predicted` against `p`'s gold, dependents restricted to annotated owners.
fn detect(p: &Prepared, predicted: &BTreeSet<(usize, usize)>) -> Detection {
    let annotated = p.annotated();
    let kept: BTreeSet<(usize, usize)> = predicted
        .iter()
        .filter(|x| annotated.contains(&x.0))
        .copied()
        .collect();
    Detection::of(&kept, &p.gold)
}

/// `depends` on the pairs beyond REFERENCES: its pairs without a REFERENCES edge (dependents
/// restricted to annotated owners) against the gold pairs without one.
fn implicit(p: &Prepared, depends: &BTreeSet<(usize, usize)>) -> Detection {
    let annotated = p.annotated();
    let beyond = |pairs: &BTreeSet<(usize, usize)>| -> BTreeSet<(usize, usize)> {
        pairs
            .iter()
            .filter(|x| annotated.contains(&x.0) && !p.references.contains(x))
            .copied()
            .collect()
    };
    Detection::of(&beyond(depends), &beyond(&p.gold))
}

/// Precision, recall and F1 of one prediction on one blueprint.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Prf {
    /// Correct / predicted.
    pub precision: f64,
    /// Correct / gold.
    pub recall: f64,
    /// Their harmonic mean.
    pub f1: f64,
}

impl Prf {
    fn of(d: &Detection) -> Prf {
        let precision = d.correct as f64 / d.predicted.max(1) as f64;
        let recall = d.correct as f64 / d.gold.max(1) as f64;
        let f1 = if precision + recall > 0.0 {
            2.0 * precision * recall / (precision + recall)
        } else {
            0.0
        };
        Prf {
            precision,
            recall,
            f1,
        }
    }

    /// The macro average of the scores `score` picks from each row.
    fn mean(rows: &[Row], score: fn(&Row) -> Prf) -> Prf {
        let n = rows.len().max(1) as f64;
        let sum = |part: fn(&Prf) -> f64| rows.iter().map(|r| part(&score(r))).sum::<f64>() / n;
        Prf {
            precision: sum(|p| p.precision),
            recall: sum(|p| p.recall),
            f1: sum(|p| p.f1),
        }
    }
}

/// The scores of one blueprint.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// The blueprint.
    pub name: String,
    /// Gold pairs.
    pub gold: usize,
    /// Annotated owners.
    pub dependents: usize,
    /// The threshold the judge decided at.
    pub threshold: f64,
    /// DEPENDS alone.
    pub depends: Prf,
    /// REFERENCES alone ("explicit references only").
    pub references: Prf,
    /// REFERENCES ∪ DEPENDS.
    pub union: Prf,
    /// "Previous statement".
    pub previous: Prf,
    /// DEPENDS on the pairs beyond REFERENCES: precision (DEPENDS pairs without a REFERENCES
    /// edge that are gold / such pairs), recall (gold pairs without one that DEPENDS finds / such
    /// pairs) and F1.
    pub implicit: Prf,
    /// Gold pairs without a REFERENCES edge.
    pub implicit_gold: usize,
    /// DEPENDS pairs without a REFERENCES edge.
    pub implicit_predicted: usize,
    /// Gold pairs among the judged pairs (whatever the verdict) / gold pairs: the most the judge
    /// could find.
    pub reachable: f64,
}

/// Scores a judge's owner-level probabilities on `p` at `threshold`.
fn row(p: &Prepared, scored: &Scored, threshold: f64) -> Row {
    let depends = at(scored, threshold);
    let union: BTreeSet<(usize, usize)> = depends.union(&p.references).copied().collect();
    let beyond = implicit(p, &depends);
    Row {
        name: p.name.clone(),
        gold: p.gold.len(),
        dependents: p.annotated().len(),
        threshold,
        depends: Prf::of(&detect(p, &depends)),
        references: Prf::of(&detect(p, &p.references)),
        union: Prf::of(&detect(p, &union)),
        previous: Prf::of(&detect(p, &previous_statement(p))),
        implicit: Prf::of(&beyond),
        implicit_gold: beyond.gold,
        implicit_predicted: beyond.predicted,
        reachable: p.gold.iter().filter(|g| scored.contains_key(g)).count() as f64
            / p.gold.len().max(1) as f64,
    }
}

/// Thresholds tried when choosing an operating point and drawn on the curve.
fn thresholds() -> Vec<f64> {
    (1..=39).map(|k| f64::from(k) * 0.025).collect()
}

/// The threshold with the best macro-averaged F1 of REFERENCES ∪ DEPENDS over `docs`.
fn best_threshold(docs: &[(&Prepared, Scored)]) -> f64 {
    let mut best = (f64::MIN, 0.5);
    for t in thresholds() {
        let f1 = docs.iter().map(|(p, s)| row(p, s, t).union.f1).sum::<f64>();
        if f1 > best.0 + 1e-12 {
            best = (f1, t);
        }
    }
    best.1
}

/// One training row: the features of a (unit, candidate) pair and whether its owners are a gold
/// pair, with the owners (for scoring at owner level).
struct Example {
    /// The judged head (the unit whose candidates these are).
    head: usize,
    owners: (usize, usize),
    x: Vec<f64>,
    y: bool,
}

/// The learned judge's candidate pairs of `p` whose dependent is annotated, with their features.
fn examples(p: &Prepared, window: usize) -> Vec<Example> {
    let ctx = &DocContext::new(&p.doc);
    let s: &Signals = ctx.signals();
    let annotated = p.annotated();
    (0..p.doc.units.len())
        .into_par_iter()
        .filter(|&i| judgeable(&p.doc.units[i]))
        .filter_map(|i| Some((i, p.owner[i].filter(|a| annotated.contains(a))?)))
        .flat_map_iter(|(i, a)| {
            let js = learned::candidates(ctx, s, i, window);
            learned::features(ctx, s, i, &js)
                .into_iter()
                .zip(js)
                .filter_map(move |(x, j)| {
                    let b = p.owner[j].filter(|&b| b != a)?;
                    Some(Example {
                        head: i,
                        owners: (a, b),
                        x,
                        y: p.gold.contains(&(a, b)),
                    })
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

/// `model`'s owner-level probabilities over `examples`.
fn scored(model: &Model, examples: &[Example]) -> Scored {
    let mut out = Scored::new();
    for head in examples.chunk_by(|a, b| a.head == b.head) {
        let rows: Vec<Vec<f64>> = head.iter().map(|e| e.x.clone()).collect();
        for (e, p) in head.iter().zip(model.probabilities(&rows)) {
            let v = out.entry(e.owners).or_insert(0.0);
            *v = v.max(p);
        }
    }
    out
}

/// L2 penalty of the logistic regression (on standardised features).
const L2: f64 = 1.0;

/// Fits a model on `docs` (their names recorded) with its threshold chosen on them. Each
/// document weighs the same, as in the macro averages it is chosen for: a row of a blueprint
/// with few candidates counts more than one of a large blueprint.
fn fit(docs: &[(&Prepared, &[Example])]) -> Model {
    let total: usize = docs.iter().map(|(_, ex)| ex.len()).sum();
    let heads: Vec<(Vec<Vec<f64>>, Vec<bool>, f64)> = docs
        .iter()
        .flat_map(|(_, ex)| {
            let weight = total as f64 / (docs.len() * ex.len().max(1)) as f64;
            ex.chunk_by(|a, b| a.head == b.head).map(move |head| {
                let (x, y) = head.iter().map(|e| (e.x.clone(), e.y)).unzip();
                (x, y, weight)
            })
        })
        .collect();
    let heads: Vec<learned::Head> = heads
        .iter()
        .map(|(rows, labels, weight)| learned::Head {
            rows,
            labels,
            weight: *weight,
        })
        .collect();
    let names = docs.iter().map(|(p, _)| p.name.clone()).collect();
    let mut model = Model::fit(&heads, L2, names);
    let in_sample: Vec<(&Prepared, Scored)> = docs
        .iter()
        .map(|(p, ex)| (*p, scored(&model, ex)))
        .collect();
    model.threshold = best_threshold(&in_sample);
    model
}

/// Macro scores at one threshold.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct CurvePoint {
    /// The threshold.
    pub threshold: f64,
    /// DEPENDS alone.
    pub depends: Prf,
    /// DEPENDS on the pairs beyond REFERENCES.
    pub implicit: Prf,
    /// REFERENCES ∪ DEPENDS.
    pub union: Prf,
}

impl CurvePoint {
    fn of(threshold: f64, rows: &[Row]) -> CurvePoint {
        CurvePoint {
            threshold,
            depends: Prf::mean(rows, |r| r.depends),
            implicit: Prf::mean(rows, |r| r.implicit),
            union: Prf::mean(rows, |r| r.union),
        }
    }
}

/// What `ledger eval depends` measured.
#[derive(Debug, Serialize)]
pub struct Report {
    /// The judge scored (`learned` leave-one-blueprint-out, `rules`, `llm:…`).
    pub judge: String,
    /// Per blueprint.
    pub rows: Vec<Row>,
    /// The same judge's macro averages.
    pub macro_depends: Prf,
    /// Macro "explicit references only".
    pub macro_references: Prf,
    /// Macro union.
    pub macro_union: Prf,
    /// Macro "previous statement".
    pub macro_previous: Prf,
    /// Macro implicit precision, recall and F1.
    pub macro_implicit: Prf,
    /// The rules judge in the same run (union, DEPENDS alone and implicit, macro), when scored.
    pub rules: Option<(Prf, Prf, Prf)>,
    /// The macro scores over the threshold.
    pub curve: Vec<CurvePoint>,
    /// Seconds the run took.
    pub seconds: f64,
}

/// The LLM judge of the `[llm]` endpoint, for [`Mode::Judge`].
pub fn llm_judge(
    llm: &ledger_pipeline::config::LlmConfig,
    tls: &ledger_pipeline::config::TlsConfig,
) -> Result<ledger_llm::depends::LlmJudge> {
    let client = ledger_pipeline::semantic::chat_client(llm, tls)?.ok_or_else(|| {
        EvalError::Invalid(
            "--judge llm needs a chat endpoint: set llm.url and llm.model (or LEDGER_LLM_URL and LEDGER_LLM_MODEL)".into(),
        )
    })?;
    Ok(ledger_llm::depends::LlmJudge::new(client))
}

/// What judging every prepared blueprint once with `judge` would send: per blueprint, then in
/// total (nothing is sent).
pub fn estimate(
    prepared: &[Prepared],
    judge: &dyn Judge,
    window: usize,
) -> Vec<(String, ledger_llm::depends::Estimate)> {
    let mut total = ledger_llm::depends::Estimate::default();
    let mut out: Vec<(String, ledger_llm::depends::Estimate)> = prepared
        .iter()
        .map(|p| {
            let docs = std::slice::from_ref(&p.doc);
            let (_, e) = ledger_llm::depends::estimate(docs, judge, window, &Cache::new());
            total.requests += e.requests;
            total.prompt_tokens += e.prompt_tokens;
            total.completion_tokens += e.completion_tokens;
            (p.name.clone(), e)
        })
        .collect();
    out.push(("all".into(), total));
    out
}

/// How to score.
pub enum Mode<'a> {
    /// The learned judge, leave-one-blueprint-out (and the rules judge beside it).
    LeaveOneOut,
    /// A given judge (the LLM's), at its own verdicts.
    Judge(&'a dyn Judge),
}

/// Prepares every blueprint (in parallel), writing the copies without `\uses` under `work`.
pub fn prepare_all(blueprints: &[Blueprint], work: &Path) -> Result<Vec<Prepared>> {
    blueprints.par_iter().map(|bp| prepare(bp, work)).collect()
}

/// Scores DEPENDS on `prepared` as `mode` says, with candidate windows of `window` units.
pub fn evaluate(prepared: &[Prepared], mode: Mode, window: usize) -> Result<Report> {
    let started = std::time::Instant::now();
    let (judge, rows, per_doc, rules) = match mode {
        Mode::LeaveOneOut => {
            let examples: Vec<Vec<Example>> =
                prepared.iter().map(|p| examples(p, window)).collect();
            let mut rows = Vec::new();
            let mut per_doc = Vec::new();
            for (k, p) in prepared.iter().enumerate() {
                let train: Vec<(&Prepared, &[Example])> = prepared
                    .iter()
                    .zip(&examples)
                    .enumerate()
                    .filter(|(i, _)| *i != k)
                    .map(|(_, (p, e))| (p, e.as_slice()))
                    .collect();
                let model = fit(&train);
                let threshold = model.threshold;
                let judge = LearnedJudge::new(model, None);
                let s = judged(p, &judge, window);
                rows.push(row(p, &s, threshold));
                per_doc.push(s);
            }
            let rules: Vec<Row> = prepared
                .par_iter()
                .map(|p| row(p, &judged(p, &ledger_llm::depends::RulesJudge, window), 0.5))
                .collect();
            let macro_rules = (
                Prf::mean(&rules, |r| r.union),
                Prf::mean(&rules, |r| r.depends),
                Prf::mean(&rules, |r| r.implicit),
            );
            (
                "learned (leave one blueprint out)".to_string(),
                rows,
                per_doc,
                Some(macro_rules),
            )
        }
        Mode::Judge(judge) => {
            let per_doc: Vec<Scored> = prepared.iter().map(|p| judged(p, judge, window)).collect();
            let rows = prepared
                .iter()
                .zip(&per_doc)
                .map(|(p, s)| row(p, s, 0.5))
                .collect();
            (judge.name().to_string(), rows, per_doc, None)
        }
    };
    let curve = thresholds()
        .into_iter()
        .map(|t| {
            let rs: Vec<Row> = prepared
                .iter()
                .zip(&per_doc)
                .map(|(p, s)| row(p, s, t))
                .collect();
            CurvePoint::of(t, &rs)
        })
        .collect();
    Ok(Report {
        judge,
        macro_depends: Prf::mean(&rows, |r| r.depends),
        macro_references: Prf::mean(&rows, |r| r.references),
        macro_union: Prf::mean(&rows, |r| r.union),
        macro_previous: Prf::mean(&rows, |r| r.previous),
        macro_implicit: Prf::mean(&rows, |r| r.implicit),
        rows,
        rules,
        curve,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// Fits the model on every prepared blueprint, its threshold the best macro union F1 on them.
pub fn train(prepared: &[Prepared], window: usize) -> Model {
    let examples: Vec<Vec<Example>> = prepared.iter().map(|p| examples(p, window)).collect();
    let docs: Vec<(&Prepared, &[Example])> = prepared
        .iter()
        .zip(&examples)
        .map(|(p, e)| (p, e.as_slice()))
        .collect();
    fit(&docs)
}

impl Report {
    /// The report as Markdown.
    pub fn markdown(&self) -> String {
        let f = |p: &Prf| format!("{:.2} | {:.2} | {:.2}", p.precision, p.recall, p.f1);
        let mut s = format!(
            "## DEPENDS against the authors' `\\uses` ({})\n\n| blueprint | gold pairs | dependents | threshold | DEPENDS P | R | F1 | REFERENCES P | R | F1 | union P | R | F1 | union − REFERENCES F1 | previous statement P | R | F1 | implicit P | R | F1 | implicit pairs (predicted / gold) | judged |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
            self.judge
        );
        for r in &self.rows {
            s.push_str(&format!(
                "| {} | {} | {} | {:.3} | {} | {} | {} | {:+.3} | {} | {} | {} / {} | {:.2} |\n",
                r.name,
                r.gold,
                r.dependents,
                r.threshold,
                f(&r.depends),
                f(&r.references),
                f(&r.union),
                r.union.f1 - r.references.f1,
                f(&r.previous),
                f(&r.implicit),
                r.implicit_predicted,
                r.implicit_gold,
                r.reachable
            ));
        }
        s.push_str(&format!(
            "| **macro average** | | | | {} | {} | {} | {:+.3} | {} | {} | | |\n",
            f(&self.macro_depends),
            f(&self.macro_references),
            f(&self.macro_union),
            self.macro_union.f1 - self.macro_references.f1,
            f(&self.macro_previous),
            f(&self.macro_implicit),
        ));
        let losing: Vec<&str> = self
            .rows
            .iter()
            .filter(|r| r.union.f1 < r.references.f1)
            .map(|r| r.name.as_str())
            .collect();
        s.push_str(&format!(
            "\nUnion F1 − explicit references only: {:+.3} (macro); the union loses to references alone on {}.\n",
            self.macro_union.f1 - self.macro_references.f1,
            if losing.is_empty() {
                "no blueprint".to_string()
            } else {
                losing.join(", ")
            }
        ));
        if let Some((union, depends, implicit)) = &self.rules {
            s.push_str(&format!(
                "The rules judge in the same run (macro): DEPENDS P {:.2} R {:.2} F1 {:.2}; implicit P {:.2} R {:.2} F1 {:.2}; union P {:.2} R {:.2} F1 {:.2}.\n",
                depends.precision, depends.recall, depends.f1, implicit.precision, implicit.recall, implicit.f1, union.precision, union.recall, union.f1
            ));
        }
        s.push_str("\nOver the threshold (macro):\n\n| threshold | DEPENDS P | R | F1 | implicit P | R | F1 | union P | R | F1 |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        for c in self.curve.iter().step_by(2) {
            s.push_str(&format!(
                "| {:.3} | {} | {} | {} |\n",
                c.threshold,
                f(&c.depends),
                f(&c.implicit),
                f(&c.union)
            ));
        }
        s.push_str(&format!("\nTook {:.1} s.\n", self.seconds));
        s
    }

    /// Writes the precision–recall curve over the threshold to `path` (SVG).
    pub fn plot(&self, path: &Path) -> Result<()> {
        use plotters::prelude::*;
        let err = |e: &dyn std::fmt::Display| EvalError::Invalid(e.to_string());
        let root = SVGBackend::new(path, (820, 520)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(&e))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                "DEPENDS: precision against implicit recall over the threshold (macro)",
                ("sans-serif", 18),
            )
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(55)
            .build_cartesian_2d(0.0..1.0, 0.0..1.05)
            .map_err(|e| err(&e))?;
        chart
            .configure_mesh()
            .x_desc("implicit recall (gold pairs no REFERENCES edge carries)")
            .y_desc("precision")
            .draw()
            .map_err(|e| err(&e))?;
        let depends_precision: fn(&CurvePoint) -> f64 = |c| c.depends.precision;
        let implicit_precision: fn(&CurvePoint) -> f64 = |c| c.implicit.precision;
        let lines = [
            ("DEPENDS precision", BLUE, depends_precision),
            (
                "implicit precision (pairs beyond REFERENCES)",
                RED,
                implicit_precision,
            ),
        ];
        for (name, color, y) in lines {
            let points: Vec<(f64, f64)> = self
                .curve
                .iter()
                .map(|c| (c.implicit.recall, y(c)))
                .collect();
            chart
                .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))
                .map_err(|e| err(&e))?
                .label(format!("{}: {name}", self.judge))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
            chart
                .draw_series(points.iter().map(|&p| Circle::new(p, 3, color.filled())))
                .map_err(|e| err(&e))?;
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(|e| err(&e))?;
        root.present().map_err(|e| err(&e))?;
        Ok(())
    }
}

/// What `ledger eval depends` is asked.
pub struct Request<'a> {
    /// The bundled datasets folder (`blueprints/*/src/print.tex`, `carleson-blueprint`).
    pub datasets: &'a Path,
    /// Folder of the report and of the copies without `\uses`.
    pub out: &'a Path,
    /// Where to write the model fitted on every blueprint, if asked.
    pub train: Option<&'a Path>,
    /// The judge scored: `learned`, `rules` or `llm`.
    pub judge: &'a str,
    /// With the LLM judge: only what a run would send.
    pub estimate: bool,
}

/// What `ledger eval depends` produced: Markdown to print and notes on what was written.
pub struct Outcome {
    /// The report (or, with `estimate`, the table of requests and tokens).
    pub markdown: String,
    /// What was written where.
    pub notes: Vec<String>,
}

/// `ledger eval depends`: prepares the bundled blueprints, fits the model if asked, and scores
/// the judge asked for; writes `depends.md`, `depends.json` and `depends-pr.svg` under `out`.
pub fn command(req: &Request, config: &ledger_pipeline::config::Config) -> Result<Outcome> {
    let window = config.depends.window;
    let blueprints = bundled(req.datasets);
    if blueprints.is_empty() {
        return Err(EvalError::Invalid(format!(
            "no blueprint under {} (run from the repository's root or pass --datasets)",
            req.datasets.display()
        )));
    }
    let out = req.out;
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let prepared = prepare_all(&blueprints, &out.join("sources"))?;
    let mut notes = Vec::new();
    if let Some(path) = req.train {
        let model = train(&prepared, window);
        std::fs::write(path, serde_json::to_string_pretty(&model)? + "\n")
            .with_context(|| format!("writing {}", path.display()))?;
        notes.push(format!(
            "model written to {} (threshold {:.3})",
            path.display(),
            model.threshold
        ));
    }
    let llm = if req.judge == "llm" {
        Some(llm_judge(&config.llm, &config.tls)?)
    } else {
        None
    };
    if req.estimate {
        let Some(llm) = &llm else {
            return Err(EvalError::Invalid(
                "--estimate is for --judge llm (the offline judges send nothing)".into(),
            ));
        };
        let mut markdown = String::from(
            "| blueprint | requests | prompt tokens | completion tokens (at most) |\n|---|---:|---:|---:|\n",
        );
        for (name, e) in estimate(&prepared, llm, window) {
            markdown.push_str(&format!(
                "| {name} | {} | {} | {} |\n",
                e.requests, e.prompt_tokens, e.completion_tokens
            ));
        }
        return Ok(Outcome { markdown, notes });
    }
    let mode = match (req.judge, &llm) {
        (_, Some(llm)) => Mode::Judge(llm),
        ("rules", _) => Mode::Judge(&ledger_llm::depends::RulesJudge),
        _ => Mode::LeaveOneOut,
    };
    let report = evaluate(&prepared, mode, window)?;
    let markdown = report.markdown();
    let written = out.join("depends.md");
    std::fs::write(&written, &markdown)
        .with_context(|| format!("writing {}", written.display()))?;
    std::fs::write(
        out.join("depends.json"),
        serde_json::to_string_pretty(&report)? + "\n",
    )?;
    report.plot(&out.join("depends-pr.svg"))?;
    notes.push(format!("report written to {}", written.display()));
    Ok(Outcome { markdown, notes })
}
