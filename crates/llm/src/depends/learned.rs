//! The learned offline judge (the default): a logistic regression over features of a
//! (unit, candidate) pair, trained on the authors' `\uses{}` annotations of real Lean blueprints
//! (`ledger eval depends --train`), whose output is the probability that the unit depends on the
//! candidate. The rules of [`super::offline`] are among its features; the others are cheap
//! signals of the text and the structure: the candidate's label and title words in the unit,
//! TF-IDF cosine, distance, section, the kinds of both units, how much the candidate is used.
//!
//! Candidates are wider than the rules judge's window: every earlier statement (theorem-like unit)
//! that shares a signal with the unit, so that a definition far back is still found.

use super::context::DocContext;
use super::signals::{Signals, is_definition, is_result};
use super::text::is_ancestor;
use super::{Judge, Judged, Task, Verdict};
use ledger_core::UnitKind;
use serde::{Deserialize, Serialize};
// Fast hashing: the judge looks words up once per candidate pair (SipHash showed in profiles).
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

/// Names of the features, in the order of [`features`]'s vectors.
pub const FEATURES: &[&str] = &[
    "cited",
    "terms",
    "symbols",
    "anaphor",
    "label_words",
    "label_all",
    "title_words",
    "tfidf",
    "notation",
    "label_in_label",
    "tfidf_ratio",
    "tfidf_rank",
    "distance",
    "statements_between",
    "same_section",
    "same_chapter",
    "candidate_definition",
    "candidate_result",
    "candidate_equation",
    "candidate_other",
    "unit_proof",
    "unit_statement",
    "unit_definition",
    "popularity",
    "in_window",
    "previous_statement",
    "forward",
    "label_words_x_definition",
    "title_words_x_definition",
    "tfidf_x_result",
    "tfidf_x_definition",
    "title_named",
    "label_named",
    "cited_x_equation",
    "cited_inside",
    "title_twin",
    "citing_x_uncited",
];

/// The features of head `i` against each of its `candidates` (all before it), in [`FEATURES`]
/// order: what any unit of its group shows of the candidate.
pub fn features(ctx: &DocContext, s: &Signals, i: usize, candidates: &[usize]) -> Vec<Vec<f64>> {
    let doc = ctx.doc;
    let members = if s.judged(i) {
        &s.members[i][..]
    } else {
        std::slice::from_ref(&i)
    };
    let u = &doc.units[i];
    let flag = |b: bool| f64::from(u8::from(b));
    let tfidf: Vec<f64> = candidates.iter().map(|&j| s.cosine(i, j)).collect();
    let best = tfidf.iter().copied().fold(0.0, f64::max);
    let mut order: Vec<usize> = (0..candidates.len()).collect();
    order.sort_by(|&a, &b| tfidf[b].total_cmp(&tfidf[a]));
    let mut rank = vec![0; candidates.len()];
    for (r, &k) in order.iter().enumerate() {
        rank[k] = r;
    }
    // What the group names and uses of each earlier unit, gathered once.
    let mut named: HashSet<usize> = HashSet::default();
    let mut used: HashMap<usize, (usize, usize)> = HashMap::default();
    for &m in members {
        named.extend(ctx.cited[m].iter().map(|(x, _)| *x));
        for (j, e) in ctx.intro.uses_of(m) {
            let c = used.entry(*j).or_default();
            c.0 += usize::from(e.starts_with("term"));
            c.1 += usize::from(e.starts_with("symbol"));
        }
    }
    let inside = containers(doc, &named);
    candidates
        .iter()
        .enumerate()
        .map(|(k, &j)| {
            let c = &doc.units[j];
            let cited = named.contains(&j);
            let (terms, symbols) = used.get(&j).copied().unwrap_or_default();
            let anaphor = members.iter().any(|&m| s.antecedent[m] == Some(j));
            let label = s.share(&s.label_words[j], i);
            let label_all = !s.label_words[j].is_empty() && label >= 1.0;
            let title = s.share(&s.title_words[j], i);
            let label_in_label = if s.label_words[j].is_empty() {
                0.0
            } else {
                let own = &s.label_words[i];
                let found = s.label_words[j].iter().filter(|w| own.contains(w)).count();
                found as f64 / s.label_words[j].len() as f64
            };
            let distance = s.rank[i].saturating_sub(s.rank[j]);
            let between = s.statements_before[i].saturating_sub(s.statements_before[j] + 1);
            let definition = c.kind == UnitKind::Theorem && is_definition(&c.env);
            let result = c.kind == UnitKind::Theorem && !definition && is_result(&c.env);
            let equation = c.kind == UnitKind::Equation;
            vec![
                flag(cited),
                (terms as f64).ln_1p(),
                (symbols as f64).ln_1p(),
                flag(anaphor),
                label,
                flag(label_all),
                title,
                tfidf[k],
                s.notation(i, j),
                label_in_label,
                if best > 0.0 { tfidf[k] / best } else { 0.0 },
                1.0 / (1.0 + rank[k] as f64),
                (distance as f64).ln_1p(),
                (between as f64).ln_1p(),
                flag(s.section[i].0.is_some() && s.section[i].0 == s.section[j].0),
                flag(s.section[i].1.is_some() && s.section[i].1 == s.section[j].1),
                flag(definition),
                flag(result),
                flag(equation),
                flag(!definition && !result && !equation),
                flag(u.kind == UnitKind::Proof),
                flag(u.kind == UnitKind::Theorem),
                flag(u.kind == UnitKind::Theorem && is_definition(&u.env)),
                (s.popularity[j] as f64).ln_1p(),
                flag(distance <= WINDOW_FEATURE),
                flag(s.previous[i] == Some(j)),
                flag(j > i),
                label * flag(definition),
                title * flag(definition),
                tfidf[k] * flag(result),
                tfidf[k] * flag(definition),
                s.named(&s.title_names[j], i),
                s.named(&s.label_names[j], i),
                flag(cited && equation),
                flag(inside.contains(&j)),
                flag(title_twin(u.title.as_deref(), c.title.as_deref())),
                s.citing * flag(!cited),
            ]
        })
        .collect()
}

/// Candidates of head `i` for the learned judge (a unit of another's group has none: its head is
/// judged for it): the rules judge's candidates ([`super::candidates`]: the window, the
/// introducers of what it uses, what it names) of every unit of the group, the statements that
/// hold what it names ([`containers`]), and every earlier
/// statement whose label or title words the group uses or whose text is close to the group's;
/// none of its own group. All come before the group's last unit: a statement whose proof comes
/// later may depend on a result stated between them (a forward candidate).
pub fn candidates(ctx: &DocContext, s: &Signals, i: usize, window: usize) -> Vec<usize> {
    if !s.judged(i) {
        return Vec::new();
    }
    let doc = ctx.doc;
    let mut out: HashSet<usize> = HashSet::default();
    for &m in &s.members[i] {
        out.extend(super::candidates(ctx, m, window));
    }
    let named: HashSet<usize> = s.members[i]
        .iter()
        .flat_map(|&m| ctx.cited[m].iter().map(|(x, _)| *x))
        .collect();
    out.extend(containers(doc, &named));
    // A proof, or a part of a statement, stands for the statement: it holds the definition or
    // result.
    let mut out: HashSet<usize> = out
        .into_iter()
        .map(|j| {
            let g = s.group[j];
            statements_holding(doc, g).next().unwrap_or(g)
        })
        .collect();
    let end = s.members[i].iter().copied().max().unwrap_or(i);
    out.extend(s.similar_statements(i, end, WIDE_COSINE));
    for j in s.statements_sharing_a_name(i, end) {
        if out.contains(&j) {
            continue;
        }
        let signal = s.share(&s.label_words[j], i) > 0.0
            || s.share(&s.title_words[j], i) > 0.0
            || s.named(&s.title_names[j], i) >= WIDE_NAMED
            || s.named(&s.label_names[j], i) >= WIDE_NAMED;
        if signal {
            out.insert(j);
        }
    }
    let mut out: Vec<usize> = out
        .into_iter()
        .filter(|&j| j < end && s.group[j] != s.group[i])
        .filter(|&j| !is_ancestor(doc, j, i) && !is_ancestor(doc, i, j))
        .collect();
    out.sort_unstable();
    out
}

/// The theorem-like units that hold one of `named` (an equation of a lemma's statement: who
/// cites it uses the lemma).
fn containers(doc: &ledger_core::Document, named: &HashSet<usize>) -> HashSet<usize> {
    named
        .iter()
        .flat_map(|&x| statements_holding(doc, x))
        .collect()
}

/// The theorem-like units that unit `j` is part of, the nearest first.
fn statements_holding(doc: &ledger_core::Document, j: usize) -> impl Iterator<Item = usize> + '_ {
    std::iter::successors(doc.units[j].parent, |&a| doc.units[a].parent)
        .filter(|&a| doc.units[a].kind == UnitKind::Theorem)
}

/// Whether two titles are the same but for their numbers ("Equation 7", "Equation 12"): parallel
/// statements, seldom one built on the other.
fn title_twin(a: Option<&str>, b: Option<&str>) -> bool {
    // Compared as they are made, without allocating: this runs once per candidate pair.
    fn stem(t: &str) -> impl Iterator<Item = char> + '_ {
        t.chars()
            .filter(|c| !c.is_ascii_digit() && !c.is_whitespace())
            .flat_map(char::to_lowercase)
    }
    match (a, b) {
        (Some(a), Some(b)) => stem(a).next().is_some() && stem(a).eq(stem(b)),
        _ => false,
    }
}

/// Share of a statement's title or label weight ([`Signals::named`]) from which it is a
/// candidate without any other signal.
const WIDE_NAMED: f64 = 0.5;

/// TF-IDF cosine above which an earlier statement is a candidate without any other signal.
const WIDE_COSINE: f64 = 0.15;

/// Names of the second stage's features: what the first stage gave a head's candidates.
pub const HEAD_FEATURES: &[&str] = &["logit", "head_max", "head_rank", "head_rivals"];

/// The second stage's features of each of one head's candidates, from their first-stage
/// probabilities `p`: the candidate's own log-odds, the head's best probability, the candidate's
/// rank among the head's, and how many rivals come within half of the best. A head that has one
/// clear prerequisite and one with twenty alike are told apart.
fn head_features(p: &[f64]) -> Vec<Vec<f64>> {
    let best = p.iter().copied().fold(0.0, f64::max);
    let likely = p.iter().filter(|&&x| x >= best / 2.0).count();
    let mut descending = p.to_vec();
    descending.sort_by(|a, b| b.total_cmp(a));
    p.iter()
        .map(|&x| {
            let rank = 1 + descending.partition_point(|&y| y > x);
            let x = x.clamp(1e-6, 1.0 - 1e-6);
            vec![
                (x / (1.0 - x)).ln(),
                (best + 1e-6).ln(),
                1.0 / rank as f64,
                (likely as f64).ln_1p(),
            ]
        })
        .collect()
}

/// A logistic regression over standardised features.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stage {
    /// Per feature: the mean subtracted before weighting.
    pub mean: Vec<f64>,
    /// Per feature: the scale divided by before weighting.
    pub scale: Vec<f64>,
    /// Per feature: its weight.
    pub weights: Vec<f64>,
    /// The intercept.
    pub bias: f64,
}

impl Stage {
    /// The probability given the features `x`.
    pub fn probability(&self, x: &[f64]) -> f64 {
        let z: f64 = x
            .iter()
            .zip(&self.mean)
            .zip(&self.scale)
            .zip(&self.weights)
            .map(|(((x, m), s), w)| (x - m) / s * w)
            .sum::<f64>()
            + self.bias;
        1.0 / (1.0 + (-z).exp())
    }

    /// Fits rows `x` (of `d` features) with labels `y`, each row weighing as `weights` says, by
    /// Newton's method, L2-penalised by `l2`.
    pub fn fit(x: &[Vec<f64>], y: &[bool], weights: &[f64], d: usize, l2: f64) -> Stage {
        let n = x.len().max(1) as f64;
        let mean: Vec<f64> = (0..d)
            .map(|k| x.iter().map(|r| r[k]).sum::<f64>() / n)
            .collect();
        let scale: Vec<f64> = (0..d)
            .map(|k| {
                let v = x.iter().map(|r| (r[k] - mean[k]).powi(2)).sum::<f64>() / n;
                if v > 1e-12 { v.sqrt() } else { 1.0 }
            })
            .collect();
        let z: Vec<Vec<f64>> = x
            .iter()
            .map(|r| {
                let mut v: Vec<f64> = (0..d).map(|k| (r[k] - mean[k]) / scale[k]).collect();
                v.push(1.0);
                v
            })
            .collect();
        let mut w = vec![0.0; d + 1];
        for _ in 0..50 {
            let mut g = vec![0.0; d + 1];
            let mut h = vec![vec![0.0; d + 1]; d + 1];
            for ((row, &label), &weight) in z.iter().zip(y).zip(weights) {
                let p = 1.0 / (1.0 + (-dot(row, &w)).exp());
                let e = weight * (p - f64::from(u8::from(label)));
                let q = weight * (p * (1.0 - p)).max(1e-9);
                for ((ga, ha), ra) in g.iter_mut().zip(&mut h).zip(row) {
                    *ga += e * ra;
                    for (hab, rb) in ha.iter_mut().zip(row) {
                        *hab += q * ra * rb;
                    }
                }
            }
            // The intercept (last) is not penalised.
            for (a, (ga, wa)) in g.iter_mut().zip(&w).take(d).enumerate() {
                *ga += l2 * wa;
                h[a][a] += l2;
            }
            let step = solve(h, g);
            let size: f64 = step.iter().map(|s| s.abs()).sum();
            w.iter_mut().zip(&step).for_each(|(w, s)| *w -= s);
            if size < 1e-8 {
                break;
            }
        }
        Stage {
            mean,
            scale,
            bias: w[d],
            weights: w[..d].to_vec(),
        }
    }
}

/// The learned model, in two stages: a logistic regression over each (head, candidate) pair's
/// [`features`], then one over what that first stage gave all of the head's candidates
/// ([`HEAD_FEATURES`]), whose output is the probability.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Model {
    /// Feature names of the first stage (must equal [`FEATURES`]).
    pub features: Vec<String>,
    /// The first stage, over [`FEATURES`].
    pub pairs: Stage,
    /// The second stage, over [`HEAD_FEATURES`].
    pub heads: Stage,
    /// The probability from which a candidate is a prerequisite (the operating point chosen on
    /// the training documents).
    pub threshold: f64,
    /// What it was trained on, for the record.
    pub trained_on: Vec<String>,
}

/// The model shipped with LEDGER (`ledger eval depends --train` writes it).
static SHIPPED: &str = include_str!("learned.json");

impl Model {
    /// The shipped model.
    pub fn shipped() -> Model {
        let model: Model = serde_json::from_str(SHIPPED).expect("the shipped model is valid JSON");
        assert_eq!(
            model.features, FEATURES,
            "the shipped model has other features"
        );
        model
    }

    /// A short hash of the weights: part of the judge's name, so that a retrained model
    /// invalidates what an earlier one decided.
    pub fn version(&self) -> String {
        let json = serde_json::to_string(self).unwrap_or_default();
        blake3::hash(json.as_bytes()).to_hex()[..8].to_string()
    }

    /// The probabilities of one head's candidates, given their [`features`] `rows`.
    pub fn probabilities(&self, rows: &[Vec<f64>]) -> Vec<f64> {
        let first: Vec<f64> = rows.iter().map(|x| self.pairs.probability(x)).collect();
        head_features(&first)
            .iter()
            .map(|x| self.heads.probability(x))
            .collect()
    }

    /// Fits a model on heads (each the [`features`] rows of its candidates, their labels, and
    /// the weight of each of its rows), both stages L2-penalised by `l2`; the second stage learns
    /// from the first's in-sample probabilities. The threshold is left at 0.5.
    pub fn fit(heads: &[Head<'_>], l2: f64, trained_on: Vec<String>) -> Model {
        let x: Vec<Vec<f64>> = heads.iter().flat_map(|h| h.rows.iter().cloned()).collect();
        let y: Vec<bool> = heads
            .iter()
            .flat_map(|h| h.labels.iter().copied())
            .collect();
        let w: Vec<f64> = heads
            .iter()
            .flat_map(|h| std::iter::repeat_n(h.weight, h.rows.len()))
            .collect();
        let pairs = Stage::fit(&x, &y, &w, FEATURES.len(), l2);
        let second: Vec<Vec<f64>> = heads
            .iter()
            .flat_map(|h| {
                let p: Vec<f64> = h.rows.iter().map(|r| pairs.probability(r)).collect();
                head_features(&p)
            })
            .collect();
        let heads = Stage::fit(&second, &y, &w, HEAD_FEATURES.len(), l2);
        Model {
            features: FEATURES.iter().map(|f| f.to_string()).collect(),
            pairs,
            heads,
            threshold: 0.5,
            trained_on,
        }
    }
}

/// One head's training data: the [`features`] rows of its candidates, whether each is a
/// prerequisite, and the weight of each row (each training document weighing the same).
pub struct Head<'a> {
    /// The candidates' features.
    pub rows: &'a [Vec<f64>],
    /// Whether each candidate is a prerequisite.
    pub labels: &'a [bool],
    /// The weight of each row.
    pub weight: f64,
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(a, b)| a * b).sum()
}

/// Solves `a x = b` by Gaussian elimination with partial pivoting (a small, positive definite
/// system); a singular pivot leaves its unknown at zero.
fn solve(mut a: Vec<Vec<f64>>, mut b: Vec<f64>) -> Vec<f64> {
    let n = b.len();
    for col in 0..n {
        let pivot = (col..n)
            .max_by(|&x, &y| a[x][col].abs().total_cmp(&a[y][col].abs()))
            .unwrap_or(col);
        a.swap(col, pivot);
        b.swap(col, pivot);
        if a[col][col].abs() < 1e-12 {
            continue;
        }
        let pivot_row = a[col].clone();
        for row in col + 1..n {
            let f = a[row][col] / pivot_row[col];
            for (x, p) in a[row][col..].iter_mut().zip(&pivot_row[col..]) {
                *x -= f * p;
            }
            b[row] -= f * b[col];
        }
    }
    let mut x = vec![0.0; n];
    for row in (0..n).rev() {
        if a[row][row].abs() < 1e-12 {
            continue;
        }
        let rest: f64 = (row + 1..n).map(|k| a[row][k] * x[k]).sum();
        x[row] = (b[row] - rest) / a[row][row];
    }
    x
}

/// How every learned judge's name starts.
pub const LEARNED_PREFIX: &str = "learned:";

/// The learned offline judge.
#[derive(Debug, Clone)]
pub struct LearnedJudge {
    model: Model,
    threshold: f64,
    name: String,
}

impl LearnedJudge {
    /// A judge with `model`, deciding at `threshold` (the model's own when `None`). Its name
    /// says both: `learned:<model version>`, and `@<threshold>` after it when the threshold is not
    /// the model's own, so that edges judged at another operating point are never taken for
    /// these (the name is in every judgment and in the reuse fingerprint of a part).
    pub fn new(model: Model, threshold: Option<f64>) -> LearnedJudge {
        let threshold = threshold.unwrap_or(model.threshold);
        let mut name = format!("{LEARNED_PREFIX}{}", model.version());
        if threshold != model.threshold {
            name.push_str(&format!("@{threshold}"));
        }
        LearnedJudge {
            model,
            threshold,
            name,
        }
    }

    /// The threshold a learned judge named `name` decides at: `Some(0.0)` (the model's own) or
    /// `Some(t)` for `learned:…@t`; `None` when `name` is not a learned judge's.
    pub fn threshold_in(name: &str) -> Option<f64> {
        let rest = name.strip_prefix(LEARNED_PREFIX)?;
        match rest.split_once('@') {
            Some((_, t)) => t.parse().ok(),
            None => Some(0.0),
        }
    }

    /// The shipped model at its own threshold.
    pub fn shipped() -> LearnedJudge {
        LearnedJudge::new(Model::shipped(), None)
    }

    /// The verdicts on `unit`'s candidates: each with its probability, and the features that
    /// speak for it as elements.
    fn verdicts(
        &self,
        ctx: &DocContext,
        s: &Signals,
        unit: usize,
        candidates: &[usize],
    ) -> Vec<Verdict> {
        let members = &s.members[unit];
        let rows = features(ctx, s, unit, candidates);
        let probabilities = self.model.probabilities(&rows);
        candidates
            .iter()
            .zip(rows)
            .zip(probabilities)
            .map(|((&j, x), p)| {
                let depends = p >= self.threshold;
                let elements = if depends {
                    explain(ctx, members, j, &x, p)
                } else {
                    Vec::new()
                };
                Verdict {
                    candidate: j,
                    depends,
                    elements,
                    score: Some(p as f32),
                }
            })
            .collect()
    }
}

/// What speaks for a prerequisite `j` of the group `members`: the terms and symbols they use of
/// it, the mention naming it, the words of its label or title, and the probability.
fn explain(ctx: &DocContext, members: &[usize], j: usize, x: &[f64], p: f64) -> Vec<String> {
    let mut elements: Vec<String> = Vec::new();
    for &m in members {
        for (k, e) in ctx.intro.uses_of(m) {
            if *k == j && !elements.contains(e) {
                elements.push(e.clone());
            }
        }
        if let Some((_, text)) = ctx.cited[m].iter().find(|(k, _)| *k == j) {
            elements.push(format!("names `{text}`"));
        }
    }
    for (k, name) in [(4, "label words"), (6, "title words")] {
        if x[k] > 0.0 {
            elements.push(name.to_string());
        }
    }
    elements.push(format!("p = {p:.2}"));
    elements
}

/// The window the `in_window` feature measures (the rules judge's default): a property of the
/// model, not of the configured candidate window.
pub const WINDOW_FEATURE: usize = 8;

impl Judge for LearnedJudge {
    fn name(&self) -> &str {
        &self.name
    }

    fn reusable(&self) -> bool {
        false
    }

    fn candidates(&self, ctx: &DocContext, unit: usize, window: usize) -> Vec<usize> {
        candidates(ctx, ctx.signals(), unit, window)
    }

    fn judge_all(&self, tasks: &[Task<'_>]) -> Vec<Judged> {
        use rayon::prelude::*;
        tasks
            .par_iter()
            .map(|t| Judged {
                outcome: Ok(self.verdicts(t.ctx, t.ctx.signals(), t.unit, &t.candidates)),
                requests: 0,
                prompt_tokens: 0,
                completion_tokens: 0,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::depends::signals::{
        STOP, Vocabulary, label_words, math_atoms, tfidf_vectors, tokens,
    };

    #[test]
    fn tfidf_vectors_are_the_same_bits_every_time() {
        // Each hash map has its own random order: ids or sums in that order would differ
        // between two calls, and so would the graph's scores between two runs.
        let texts: Vec<Vec<String>> = (0..40)
            .map(|i| {
                (0..60)
                    .map(|k| format!("w{}", (i * 7 + k * 13) % 97))
                    .collect()
            })
            .collect();
        let groups: Vec<Vec<usize>> = (0..40).map(|i| vec![i]).collect();
        let vectors = || {
            let mut vocabulary = Vocabulary::default();
            let ids: Vec<Vec<u32>> = texts.iter().map(|t| vocabulary.ids(t)).collect();
            tfidf_vectors(&ids, &groups)
        };
        let first = vectors();
        for _ in 0..5 {
            assert_eq!(vectors(), first);
        }
    }

    #[test]
    fn similar_statements_are_those_every_pairwise_cosine_finds() {
        // The inverted index finds the statements the pairwise cosines of text and notation put
        // at or above the floor, no more and no fewer, on a real blueprint.
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../datasets/carleson-blueprint/print.tex");
        let (sources, _) = ledger_parse::discover(&[path]);
        let mut docs: Vec<ledger_core::Document> = sources
            .iter()
            .map(|s| ledger_parse::parse(s, None))
            .collect();
        ledger_parse::resolve_corpus(&mut docs);
        let doc = &docs[0];
        let ctx = DocContext::new(doc);
        let s = ctx.signals();
        let mut compared = 0;
        for i in (0..doc.units.len()).filter(|&i| s.judged(i)) {
            let end = s.members[i].iter().copied().max().unwrap_or(i);
            let pairwise: Vec<usize> = (0..end)
                .filter(|&j| doc.units[j].kind == UnitKind::Theorem)
                .filter(|&j| s.cosine(i, j) >= WIDE_COSINE || s.notation(i, j) >= WIDE_COSINE)
                .collect();
            compared += pairwise.len();
            assert_eq!(
                s.similar_statements(i, end, WIDE_COSINE),
                pairwise,
                "{}",
                doc.units[i].id
            );
        }
        assert!(compared > 1000, "{compared}");
    }

    #[test]
    fn tokens_are_what_the_regex_finds() {
        // The hand scanner against the regex it replaced, on seeded random texts of letters,
        // digits, backslashes, stop words, punctuation and non-ASCII letters.
        let regex = regex::Regex::new(r"\\[A-Za-z]+|[A-Za-z][A-Za-z0-9]{2,}").expect("valid");
        let pieces = [
            "a",
            "Ab",
            "x1",
            "7",
            "42",
            "\\",
            "\\alpha",
            "\\Lp",
            " ",
            "{",
            "}",
            "_",
            "é",
            "Ünïcode",
            "the",
            "The",
            "and",
            "Let",
            "lemma",
            "E2",
            "$",
            "-",
            "\\label",
            "\\\\",
            "ab3cd",
        ];
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..3000 {
            let len = (next() % 24) as usize;
            let text: String = (0..len)
                .map(|_| pieces[(next() % pieces.len() as u64) as usize])
                .collect();
            let expected: Vec<String> = regex
                .find_iter(&text)
                .map(|m| {
                    let t = m.as_str();
                    if t.starts_with('\\') {
                        t.to_string()
                    } else {
                        t.to_lowercase()
                    }
                })
                .filter(|t| !STOP.contains(&t.as_str()))
                .collect();
            assert_eq!(tokens(&text), expected, "{text:?}");
        }
    }

    #[test]
    fn label_words_drop_the_kind_and_split_camel_case() {
        assert_eq!(label_words("def:good-set"), ["good", "set"]);
        assert_eq!(
            label_words("lem:bayesRisk_le_minimaxRisk"),
            ["bayes", "risk", "minimax", "risk"]
        );
        assert_eq!(label_words("eq387"), ["eq387"]);
    }

    #[test]
    fn math_atoms_are_decorated_letters_and_scripts() {
        let atoms = math_atoms(r"The risk is $\mathcal R^P_\pi = \inf_{y} r_\theta(y)$ and \(x\).");
        for a in [r"\mathcal R", r"P_\pi", r"r_\theta"] {
            assert!(atoms.contains(&a.to_string()), "{a} not in {atoms:?}");
        }
        assert!(
            !atoms.iter().any(|a| a == r"\inf" || a == r"\in"),
            "{atoms:?}"
        );
    }

    #[test]
    fn the_fit_separates_what_a_feature_decides_and_is_calibrated() {
        // Label = feature 0 on, flipped for a fifth of each class; every other feature constant.
        let d = FEATURES.len();
        let (mut x, mut y) = (Vec::new(), Vec::new());
        for k in 0..1000 {
            let mut row = vec![0.0; d];
            row[0] = f64::from(u8::from(k % 2 == 0));
            x.push(row);
            y.push((k % 2 == 0) != (k % 10 == 1 || k % 10 == 4));
        }
        let stage = Stage::fit(&x, &y, &vec![1.0; x.len()], d, 1.0);
        let mut on = vec![0.0; d];
        on[0] = 1.0;
        let (p_on, p_off) = (stage.probability(&on), stage.probability(&vec![0.0; d]));
        // The true rates are 0.8 and 0.2.
        assert!((p_on - 0.8).abs() < 0.02, "{p_on}");
        assert!((p_off - 0.2).abs() < 0.02, "{p_off}");
    }

    #[test]
    fn a_row_weighing_two_counts_as_the_row_twice() {
        // What per-document weights rest on: a blueprint's rows at weight w fit as w copies.
        let d = FEATURES.len();
        let row = |k: usize| {
            let mut r = vec![0.0; d];
            r[0] = (k % 7) as f64;
            r[1] = f64::from(u8::from(k.is_multiple_of(3)));
            r
        };
        let x: Vec<Vec<f64>> = (0..60).map(row).collect();
        let y: Vec<bool> = (0..60).map(|k| k % 7 >= 3 || k % 5 == 0).collect();
        let heavy: Vec<f64> = (0..60).map(|k| if k < 20 { 2.0 } else { 1.0 }).collect();
        let (mut x2, mut y2) = (x.clone(), y.clone());
        x2.extend(x[..20].iter().cloned());
        y2.extend_from_slice(&y[..20]);
        let weighted = Stage::fit(&x, &y, &heavy, d, 1.0);
        let doubled = Stage::fit(&x2, &y2, &vec![1.0; 80], d, 1.0);
        // The standardisation is unweighted, so compare probabilities, not weights.
        for r in &x {
            let (a, b) = (weighted.probability(r), doubled.probability(r));
            assert!((a - b).abs() < 0.02, "{a} against {b}");
        }
        let plain = Stage::fit(&x, &y, &vec![1.0; 60], d, 1.0);
        assert!(
            x.iter()
                .any(|r| (plain.probability(r) - weighted.probability(r)).abs() > 0.01)
        );
    }

    #[test]
    fn the_second_stage_tells_a_lone_candidate_from_one_of_a_crowd() {
        // Feature 0 marks a likely prerequisite. Heads of one kind have one such candidate,
        // always right; heads of the other have eight, of which one is right. Alone, the first
        // stage gives all of them one probability; the second sees the crowd.
        let d = FEATURES.len();
        let row = |on: bool| {
            let mut r = vec![0.0; d];
            r[0] = f64::from(u8::from(on));
            r
        };
        let lone: Vec<Vec<f64>> = vec![row(true), row(false), row(false)];
        let lone_y = vec![true, false, false];
        let crowd: Vec<Vec<f64>> = (0..8).map(|_| row(true)).collect();
        let crowd_y: Vec<bool> = (0..8).map(|k| k == 0).collect();
        let mut heads: Vec<Head> = Vec::new();
        for _ in 0..50 {
            for (rows, labels) in [(&lone, &lone_y), (&crowd, &crowd_y)] {
                heads.push(Head {
                    rows,
                    labels,
                    weight: 1.0,
                });
            }
        }
        let model = Model::fit(&heads, 1.0, vec!["toy".into()]);
        let (p_lone, p_crowd) = (
            model.probabilities(&lone)[0],
            model.probabilities(&crowd)[0],
        );
        assert!(p_lone > 0.8, "{p_lone}");
        assert!(p_crowd < 0.3, "{p_crowd}");
    }

    #[test]
    fn the_shipped_model_has_the_features_and_a_threshold() {
        let model = Model::shipped();
        assert_eq!(model.pairs.weights.len(), FEATURES.len());
        assert_eq!(model.heads.weights.len(), HEAD_FEATURES.len());
        assert!(model.threshold > 0.0 && model.threshold < 1.0);
        assert!(model.trained_on.len() >= 10, "{:?}", model.trained_on);
        assert!(model.pairs.scale.iter().all(|s| *s > 0.0));
        assert!(model.heads.scale.iter().all(|s| *s > 0.0));
    }
}
