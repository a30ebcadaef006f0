//! LLM edit quality in `ledger eval`, when `[llm]` names an endpoint: for a sample of the
//! generated cases, the path of `ledger edit` in memory (LEDGER's context for the case's targets,
//! the model's edits, verification, one repair round). An accepted edit is held against the
//! ground truth: the units that must change did, the units that must not change did not, and
//! every reference still names its unit (independent resolution, `crate::check`).

use super::edits::{map_spans, spread, unchanged};
use crate::check::{references, still_valid};
use crate::error::Result;
use crate::{Category, Generated};
use ledger_core::UnitKind;
use ledger_pipeline::Config;
use ledger_pipeline::llm_edit::{LLM_ALLOWED, LlmEdit};
use serde::Serialize;
use std::path::Path;

/// One case edited by the model and checked.
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    /// The case's category.
    pub category: Category,
    /// Verified and accepted (after at most one repair).
    pub accepted: bool,
    /// The first answer went back for repair.
    pub repaired: bool,
    /// Why the case produced no edit (the endpoint failed), if it did not.
    pub error: Option<String>,
    /// Must-change units (sections excluded), and those the accepted edit changed.
    pub must_change: usize,
    /// Must-change units changed.
    pub changed: usize,
    /// Must-not-change units, and those left as they were.
    pub must_not_change: usize,
    /// Must-not-change units untouched.
    pub untouched: usize,
    /// References, and those still naming their unit after the accepted edit.
    pub references: usize,
    /// References still valid.
    pub valid: usize,
    /// Requests sent for the case.
    pub requests: u64,
    /// Prompt and completion tokens.
    pub tokens: u64,
}

/// What the LLM cases of one document need.
pub struct Doc<'a> {
    /// The document's folder (its only input).
    pub dir: &'a Path,
    /// Its graph.
    pub graph: &'a Path,
    /// Its id in the graph.
    pub doc_id: &'a str,
    /// The generated document.
    pub g: &'a Generated,
    /// Per gold unit, the parsed unit's id.
    pub unit_ids: &'a [Option<String>],
    /// Token budget of the context.
    pub budget: usize,
}

/// Edits up to `n` cases of the document (spread over the categories) with the model of
/// `config.llm`, and checks them.
pub fn evaluate(doc: &Doc, config: &Config, n: usize) -> Result<Vec<Outcome>> {
    let paths = [doc.dir.to_path_buf()];
    let sources = ledger_edit::Sources::read(&paths)?;
    let Some(main) = sources.texts.keys().next().cloned() else {
        return Ok(Vec::new());
    };
    let original = sources.texts[&main].clone();
    let before = references(&original, doc.g.format);
    let spans = doc.g.spans();
    let mut out = Vec::new();
    let mut cases: Vec<&crate::Case> = doc.g.cases.iter().collect();
    cases.sort_by_key(|c| c.category);
    for case in spread(cases, n) {
        let targets: Vec<String> = case
            .targets
            .iter()
            .filter_map(|&t| doc.unit_ids[t].clone())
            .collect();
        let must: Vec<usize> = case
            .must_change
            .iter()
            .copied()
            .filter(|&u| doc.g.units[u].kind != UnitKind::Section)
            .collect();
        let mut o = Outcome {
            category: case.category,
            accepted: false,
            repaired: false,
            error: None,
            must_change: must.len(),
            changed: 0,
            must_not_change: case.must_not_change.len(),
            untouched: case.must_not_change.len(),
            references: before.len(),
            valid: before.len(),
            requests: 0,
            tokens: 0,
        };
        let args = LlmEdit {
            graph: doc.graph,
            instruction: &case.instruction,
            targets: &targets,
            doc: Some(doc.doc_id),
            budget: doc.budget,
        };
        match ledger_pipeline::llm_edit::plan_llm_edit(config, &sources, &args) {
            Err(e) => o.error = Some(format!("{e:#}")),
            Ok(plan) => {
                o.repaired = !plan.repaired.is_empty();
                o.requests = plan.requests;
                o.tokens = plan.prompt_tokens + plan.completion_tokens;
                o.accepted = plan
                    .checked
                    .findings
                    .iter()
                    .all(|f| LLM_ALLOWED.contains(&f.kind));
                if o.accepted {
                    let edited = plan.checked.edited.get(&main).unwrap_or(&original);
                    let moved = map_spans(&spans, &plan.checked.stages, &main);
                    let same = |u: usize| unchanged(&original, edited, spans[u], moved[u]);
                    o.changed = must.iter().filter(|&&u| !same(u)).count();
                    o.untouched = case.must_not_change.iter().filter(|&&u| same(u)).count();
                    // The model may add or drop a reference: then every reference that no
                    // longer names a unit counts against the edit.
                    let after = references(edited, doc.g.format);
                    o.valid = if after.len() == before.len() {
                        still_valid(&before, &after, None)
                    } else {
                        let broken = after.iter().filter(|r| r.target.is_none()).count();
                        before.len().saturating_sub(broken)
                    };
                }
            }
        }
        out.push(o);
    }
    Ok(out)
}
