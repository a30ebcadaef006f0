//! DEPENDS edges (r_imp): u_i → u_j when u_j, earlier, holds a definition, notation, assumption or
//! result that u_i needs. Candidates per unit (a window of preceding units plus earlier units that
//! introduce a term u_i uses or that u_i names), one judgment per unit over all its candidates
//! (one request for an LLM judge), edges with the dependency elements as evidence.
//!
//! Every judgment is recorded ([`ledger_core::Judgment`], the `judgments` table), failed ones
//! too; an LLM judge's judgments are reused by later runs under a content-addressed key
//! ([`cache_key`]), so a rerun over unchanged documents sends nothing and a failed unit is
//! judged again.

mod context;
pub mod learned;
pub mod llm;
pub mod rules;
mod signals;
mod terms;
mod text;

pub use context::{DocContext, candidates};
pub use learned::{LearnedJudge, Model};
pub use llm::LlmJudge;
use rayon::prelude::*;
pub use rules::RulesJudge;
pub use signals::{Signals, statements};
pub use terms::Introductions;
pub use text::{is_ancestor, judge_text, judgeable};

use ledger_core::{CandidateVerdict, Document, Edge, EdgeKind, Judgment, JudgmentOutcome};
use std::collections::{HashMap, HashSet};

/// The verdict on one candidate.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// Unit index of the candidate (the prerequisite).
    pub candidate: usize,
    /// Whether the unit depends on it.
    pub depends: bool,
    /// What it needs from it: terms, symbols, the antecedent of an anaphor.
    pub elements: Vec<String>,
    /// The judge's probability that it depends (`None`: a yes/no judge, certain of its verdict).
    pub score: Option<f32>,
}

/// One unit to judge: its document, the unit, its candidates and the cache key of the pair.
pub struct Task<'a> {
    /// The unit's document, prepared.
    pub ctx: &'a DocContext<'a>,
    /// Index of the judged unit.
    pub unit: usize,
    /// Indices of its candidates, in document order.
    pub candidates: Vec<usize>,
    /// [`cache_key`] of the judge, the unit and the candidates.
    pub key: String,
}

/// A judge's answer for one task.
#[derive(Debug, Clone, PartialEq)]
pub struct Judged {
    /// One verdict per candidate, or why there is none.
    pub outcome: std::result::Result<Vec<Verdict>, String>,
    /// HTTP requests spent (retries included).
    pub requests: u32,
    /// Prompt tokens the endpoint reported.
    pub prompt_tokens: u64,
    /// Completion tokens the endpoint reported.
    pub completion_tokens: u64,
}

/// What a run would send to an endpoint, before sending anything.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Estimate {
    /// Requests (one per unit to judge, retries not counted).
    pub requests: u64,
    /// Prompt tokens (cl100k count of the prompts; the model's tokenizer differs a little).
    pub prompt_tokens: u64,
    /// Completion tokens, upper bound (the `max_tokens` the requests would ask for).
    pub completion_tokens: u64,
}

/// Judges whether units depend on their candidates: every task in one call, so that a judge
/// backed by an endpoint can keep several requests in flight.
pub trait Judge: Send + Sync {
    /// Recorded in each judgment and in each edge's evidence; part of the cache key, so it must
    /// change when the judge's answers would (`llm:<model>:p<prompt version>`).
    fn name(&self) -> &str;
    /// Whether a judgment may be reused by a later run under the same cache key. Only judges
    /// that see nothing but the unit and its candidates qualify (the offline judge reads the
    /// whole document, and costs less than a cache lookup).
    fn reusable(&self) -> bool;
    /// The units judged as prerequisites of `unit`, in document order ([`candidates`] unless the
    /// judge looks wider).
    fn candidates(&self, ctx: &DocContext, unit: usize, window: usize) -> Vec<usize> {
        candidates(ctx, unit, window)
    }
    /// One answer per task, in order.
    fn judge_all(&self, tasks: &[Task<'_>]) -> Vec<Judged>;
    /// What judging `task` would cost; zero for a judge that sends nothing.
    fn estimate(&self, _task: &Task<'_>) -> Estimate {
        Estimate::default()
    }
}

/// The cache key of a judgment: blake3 over the judge's name, the unit's content hash and the
/// candidates' content hashes, in order.
pub fn cache_key(judge: &str, doc: &Document, unit: usize, candidates: &[usize]) -> String {
    let mut h = blake3::Hasher::new();
    h.update(judge.as_bytes());
    h.update(b"\0");
    h.update(doc.units[unit].content_hash.as_bytes());
    for &j in candidates {
        h.update(b"\0");
        h.update(doc.units[j].content_hash.as_bytes());
    }
    h.finalize().to_hex().to_string()
}

/// The judgments of a previous graph version that a run may reuse, by cache key.
pub type Cache = HashMap<String, Judgment>;

/// What [`judge_corpus`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Report {
    /// Units with candidates (one judgment each).
    pub units: usize,
    /// Judgments reused from the cache.
    pub reused: usize,
    /// Judgments that failed (recorded; judged again next run).
    pub failed: usize,
    /// HTTP requests sent.
    pub requests: u64,
    /// Prompt tokens the endpoint reported.
    pub prompt_tokens: u64,
    /// Completion tokens the endpoint reported.
    pub completion_tokens: u64,
    /// DEPENDS edges (pairs a REFERENCES edge already links are left to it).
    pub edges: usize,
}

/// The tasks of a document: every judgeable unit that has candidates, in document order. Their
/// candidates are found in parallel (rayon): the learned judge compares each unit with every
/// earlier statement, and a large document would otherwise keep one core busy alone.
pub fn tasks<'a>(ctx: &'a DocContext<'a>, judge: &dyn Judge, window: usize) -> Vec<Task<'a>> {
    (0..ctx.doc.units.len())
        .into_par_iter()
        .filter(|&i| judgeable(&ctx.doc.units[i]))
        .filter_map(|i| {
            let candidates = judge.candidates(ctx, i, window);
            (!candidates.is_empty()).then(|| Task {
                ctx,
                unit: i,
                key: cache_key(judge.name(), ctx.doc, i, &candidates),
                candidates,
            })
        })
        .collect()
}

/// What judging `docs` would send, given the reusable judgments in `cache`.
pub fn estimate(
    docs: &[Document],
    judge: &dyn Judge,
    window: usize,
    cache: &Cache,
) -> (Report, Estimate) {
    let contexts: Vec<DocContext> = docs.iter().map(DocContext::new).collect();
    let mut report = Report::default();
    let mut total = Estimate::default();
    for ctx in &contexts {
        for task in tasks(ctx, judge, window) {
            report.units += 1;
            if judge.reusable() && cache.contains_key(&task.key) {
                report.reused += 1;
                continue;
            }
            let e = judge.estimate(&task);
            total.requests += e.requests;
            total.prompt_tokens += e.prompt_tokens;
            total.completion_tokens += e.completion_tokens;
        }
    }
    (report, total)
}

/// Judges every unit of `docs` and sets each document's `judgments` and `depends` edges. A
/// reusable judge's judgments are taken from `cache` when their key matches; the rest go to
/// the judge in one call. Failed judgments are recorded (no edge is invented for them).
pub fn judge_corpus(
    docs: &mut [Document],
    judge: &dyn Judge,
    window: usize,
    cache: &Cache,
) -> Report {
    judge_corpus_reporting(docs, judge, window, cache, &|_, _| {})
}

/// Units handed to a judge at once by [`judge_corpus_reporting`]: about a twentieth of them, for
/// progress, but never fewer than this, so that an endpoint's concurrency stays busy.
const JUDGE_CHUNK: usize = 256;

/// [`judge_corpus`], calling `progress(judged, to_judge)` as the units not taken from the cache
/// are judged.
pub fn judge_corpus_reporting(
    docs: &mut [Document],
    judge: &dyn Judge,
    window: usize,
    cache: &Cache,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Report {
    let name = judge.name().to_string();
    let results: Vec<(Vec<Judgment>, Vec<Edge>)> = {
        let contexts: Vec<DocContext> = docs.par_iter().map(DocContext::new).collect();
        let per_doc: Vec<Vec<Task>> = contexts
            .par_iter()
            .map(|c| tasks(c, judge, window))
            .collect();
        let mut slots: Vec<Vec<Option<Judgment>>> = per_doc
            .iter()
            .map(|ts| {
                ts.iter()
                    .map(|t| {
                        let hit = judge.reusable().then(|| cache.get(&t.key)).flatten();
                        hit.map(|j| Judgment {
                            unit_id: t.ctx.doc.units[t.unit].id.clone(),
                            candidates: ids(t.ctx.doc, &t.candidates),
                            reused: true,
                            ..j.clone()
                        })
                    })
                    .collect()
            })
            .collect();
        let pending: Vec<(usize, usize)> = slots
            .iter()
            .enumerate()
            .flat_map(|(d, s)| {
                s.iter()
                    .enumerate()
                    .filter(|(_, j)| j.is_none())
                    .map(move |(k, _)| (d, k))
            })
            .collect();
        let owned: Vec<Task> = pending
            .iter()
            .map(|&(d, k)| {
                let t = &per_doc[d][k];
                Task {
                    ctx: t.ctx,
                    unit: t.unit,
                    candidates: t.candidates.clone(),
                    key: t.key.clone(),
                }
            })
            .collect();
        let mut answers = Vec::with_capacity(owned.len());
        for chunk in owned.chunks(JUDGE_CHUNK.max(owned.len().div_ceil(20))) {
            answers.extend(judge.judge_all(chunk));
            progress(answers.len(), owned.len());
        }
        for ((d, k), (task, answer)) in pending.into_iter().zip(owned.iter().zip(answers)) {
            slots[d][k] = Some(judgment(&name, task, answer));
        }
        per_doc
            .iter()
            .zip(slots)
            .map(|(ts, s)| {
                let judgments: Vec<Judgment> = s.into_iter().flatten().collect();
                let edges = ts
                    .iter()
                    .zip(&judgments)
                    .flat_map(|(t, j)| edges_of(t, j))
                    .collect();
                (judgments, edges)
            })
            .collect()
    };
    let mut report = Report::default();
    for (doc, (judgments, mut edges)) in docs.iter_mut().zip(results) {
        // One edge per pair, REFERENCES > DEPENDS: a prerequisite the unit names explicitly
        // keeps its REFERENCES edge, and a proof's statement its proof link (the verdict stays
        // in the judgment).
        let referenced: HashSet<(String, String)> = doc
            .reference_edges()
            .into_iter()
            .chain(doc.proof_edges())
            .filter(|e| e.dst_doc == doc.id)
            .map(|e| (e.src_unit, e.dst_unit))
            .collect();
        edges.retain(|e| !referenced.contains(&(e.src_unit.clone(), e.dst_unit.clone())));
        for j in &judgments {
            report.units += 1;
            report.reused += usize::from(j.reused);
            report.failed += usize::from(matches!(j.outcome, JudgmentOutcome::Failed(_)));
            if !j.reused {
                report.requests += u64::from(j.requests);
                report.prompt_tokens += j.prompt_tokens;
                report.completion_tokens += j.completion_tokens;
            }
        }
        report.edges += edges.len();
        doc.judgments = judgments;
        doc.depends = edges;
    }
    report
}

fn ids(doc: &Document, units: &[usize]) -> Vec<String> {
    units.iter().map(|&j| doc.units[j].id.clone()).collect()
}

/// The judgment record of a judge's answer; verdicts are aligned with the task's candidates.
fn judgment(judge: &str, task: &Task, answer: Judged) -> Judgment {
    let outcome = match answer.outcome {
        Ok(verdicts) => {
            let mut aligned = vec![
                CandidateVerdict {
                    depends: false,
                    elements: Vec::new(),
                    score: None,
                };
                task.candidates.len()
            ];
            for v in verdicts {
                if let Some(k) = task.candidates.iter().position(|&c| c == v.candidate) {
                    aligned[k] = CandidateVerdict {
                        depends: v.depends,
                        elements: if v.depends { v.elements } else { Vec::new() },
                        score: v.score,
                    };
                }
            }
            JudgmentOutcome::Verdicts(aligned)
        }
        Err(reason) => JudgmentOutcome::Failed(reason),
    };
    Judgment {
        unit_id: task.ctx.doc.units[task.unit].id.clone(),
        judge: judge.to_string(),
        cache_key: task.key.clone(),
        candidates: ids(task.ctx.doc, &task.candidates),
        outcome,
        requests: answer.requests,
        prompt_tokens: answer.prompt_tokens,
        completion_tokens: answer.completion_tokens,
        reused: false,
    }
}

/// DEPENDS edges of one judgment: dependent → each candidate judged a prerequisite (earlier
/// units, but for the learned judge's forward candidates: a result a statement's later proof uses).
fn edges_of(task: &Task, j: &Judgment) -> Vec<Edge> {
    let JudgmentOutcome::Verdicts(verdicts) = &j.outcome else {
        return Vec::new();
    };
    let doc = task.ctx.doc;
    task.candidates
        .iter()
        .zip(verdicts)
        .filter(|(c, v)| v.depends && **c != task.unit)
        .map(|(&c, v)| Edge {
            src_doc: doc.id.clone(),
            src_unit: doc.units[task.unit].id.clone(),
            dst_doc: doc.id.clone(),
            dst_unit: doc.units[c].id.clone(),
            kind: EdgeKind::Depends,
            score: v.score.map_or(1.0, f64::from),
            evidence: format!("{}: {}", j.judge, v.elements.join("; ")),
        })
        .collect()
}
