//! DEPENDS against author-written gold: the `\uses{}` annotations of a Lean blueprint (hidden
//! from the judge), compared at statement level.

use crate::metrics::Detection;
use ledger_core::{Document, JudgmentOutcome, MentionKind, Resolution};
use std::collections::{BTreeMap, BTreeSet};

/// The statement each unit belongs to (a proof, and what is inside it, belongs to the statement
/// it proves), as the learned judge groups units.
pub use ledger_llm::depends::statements;

/// The document's DEPENDS verdicts (its `judgments`) against its `\uses`, at statement level,
/// overall (`"all"`) and per environment of the dependent statement. Only backward gold pairs
/// count (DEPENDS points to earlier units) and only verdicts of annotated statements. Verdicts
/// count, not edges: a `\uses` is also a REFERENCES edge, which takes precedence over the
/// DEPENDS edge of the same pair. Empty when the document has no `\uses`.
pub fn score(doc: &Document) -> BTreeMap<String, Detection> {
    let index = doc.unit_indices();
    let statements = statements(doc);
    let owner = |i: usize| statements[i];
    let mut gold: BTreeSet<(usize, usize)> = BTreeSet::new();
    for m in doc.mentions.iter().filter(|m| m.kind == MentionKind::Uses) {
        if let Resolution::Resolved { doc: d, unit } = &m.resolution
            && d == &doc.id
            && let Some(&j) = index.get(unit.as_str())
            && owner(j) < owner(m.unit)
        {
            gold.insert((owner(m.unit), owner(j)));
        }
    }
    let annotated: BTreeSet<usize> = gold.iter().map(|g| g.0).collect();
    let mut predicted: BTreeSet<(usize, usize)> = BTreeSet::new();
    for j in &doc.judgments {
        let JudgmentOutcome::Verdicts(verdicts) = &j.outcome else {
            continue;
        };
        let Some(&unit) = index.get(j.unit_id.as_str()) else {
            continue;
        };
        for (c, v) in j.candidates.iter().zip(verdicts) {
            let Some(&candidate) = index.get(c.as_str()) else {
                continue;
            };
            let pair = (owner(unit), owner(candidate));
            if v.depends && pair.0 != pair.1 && annotated.contains(&pair.0) {
                predicted.insert(pair);
            }
        }
    }
    let mut per: BTreeMap<String, Detection> = BTreeMap::new();
    for &(i, j) in &predicted {
        for key in [String::from("all"), doc.units[i].env.clone()] {
            let e = per.entry(key).or_default();
            e.predicted += 1;
            e.correct += usize::from(gold.contains(&(i, j)));
        }
    }
    for &(i, _) in &gold {
        for key in [String::from("all"), doc.units[i].env.clone()] {
            per.entry(key).or_default().gold += 1;
        }
    }
    per
}
