//! `ledger edit`: retrieval for the targets, the model's replacements for the targets and the
//! dependents that must change (structured output from the `[llm]` endpoint), applied in memory
//! and verified through `ledger-edit`; on blocking findings one repair round; the drift of the
//! edited units' meaning is reported.

use crate::config::Config;
use crate::{Error, Result};
use ledger_core::Document;
use ledger_edit::{Checked, Finding, FindingKind, Replacement, Shadow, Sources, check};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Where a unit's source is shown to the model and edited: a leaf unit's whole range, a
/// container's first line (its heading).
fn unit_source(sources: &Sources, doc: &str, unit: &str) -> Option<(PathBuf, usize, usize)> {
    let d = sources.docs.iter().find(|d| d.id == doc)?;
    let (i, u) = d.units.iter().enumerate().find(|(_, u)| u.id == unit)?;
    let path = PathBuf::from(d.files.get(u.file)?);
    let text = sources.texts.get(&path)?;
    let end = u.end_byte.min(text.len());
    let start = u.start_byte.min(end);
    let has_children = d.units.iter().any(|c| c.parent == Some(i));
    let end = if has_children {
        text[start..end].find('\n').map_or(end, |k| start + k)
    } else {
        end
    };
    Some((path, start, end))
}

/// The model's edits as replacements, each located exactly once inside the unit it names; edits
/// that cannot be located are findings.
fn located(
    proposal: &ledger_llm::editor::Proposal,
    spans: &BTreeMap<String, (PathBuf, usize, usize)>,
    sources: &Sources,
) -> (Vec<Replacement>, Vec<Finding>) {
    let mut edits = Vec::new();
    let mut findings = Vec::new();
    let mut finding = |unit: &str, message: String| {
        findings.push(Finding {
            kind: FindingKind::Unapplicable,
            location: unit.to_string(),
            message,
        })
    };
    for e in &proposal.edits {
        let Some((path, start, end)) = spans.get(&e.unit) else {
            finding(&e.unit, "this unit was not given to the model".into());
            continue;
        };
        let text = &sources.texts[path][*start..*end];
        let hits: Vec<usize> = text.match_indices(&e.old).map(|(k, _)| k).collect();
        match hits.as_slice() {
            [k] if !e.old.is_empty() => edits.push(Replacement {
                path: path.clone(),
                start: start + k,
                end: start + k + e.old.len(),
                text: e.new.clone(),
                moved_from: None,
            }),
            [] => finding(&e.unit, format!("`{}` does not occur in the unit", e.old)),
            _ => finding(
                &e.unit,
                format!(
                    "`{}` occurs {} times in the unit; quote more",
                    e.old,
                    hits.len()
                ),
            ),
        }
    }
    edits.sort();
    // Overlapping edits cannot both apply.
    let mut kept: Vec<Replacement> = Vec::new();
    for e in edits {
        match kept.last() {
            Some(last) if last.path == e.path && e.start < last.end => finding(
                "",
                format!(
                    "two edits overlap at byte {} of {}",
                    e.start,
                    e.path.display()
                ),
            ),
            _ => kept.push(e),
        }
    }
    (kept, findings)
}

/// The embedder that made a graph's embeddings, and those embeddings.
type GraphModel = (Box<dyn ledger_embed::Embedder>, ledger_core::Semantic);

/// Semantic drift of the edited units: the cosine between each unit's text before and after
/// the edit, and between it and its context neighbours, with the graph's embedder. A unit whose
/// meaning moved far (cosine to its old text below 0.5, or to its neighbours down by more than
/// 0.15 on average) is flagged; drift is reported, not blocking.
fn drift(
    model: &GraphModel,
    neighbours: &[(String, String)],
    sources: &Sources,
    shadow: &Shadow,
    edited: &[(String, String)],
) -> Vec<Finding> {
    let (embedder, semantic) = model;
    let vectors: BTreeMap<(&str, &str), &Vec<f32>> = semantic
        .embeddings
        .iter()
        .map(|e| ((e.doc_id.as_str(), e.unit_id.as_str()), &e.vector))
        .collect();
    let text_of = |docs: &[Document], doc: &str, unit: &str| {
        docs.iter()
            .find(|d| d.id == doc)
            .and_then(|d| d.units.iter().find(|u| u.id == unit))
            .map(|u| u.text.clone())
    };
    let mut out = Vec::new();
    for (doc, unit) in edited {
        let (Some(before), Some(after)) = (
            text_of(&sources.docs, doc, unit),
            text_of(&shadow.docs, doc, unit),
        ) else {
            continue;
        };
        let Ok(v) = embedder.embed(&[before.as_str(), after.as_str()]) else {
            continue;
        };
        let own = ledger_embed::cosine(&v[0], &v[1]);
        let near: Vec<&Vec<f32>> = neighbours
            .iter()
            .filter(|(d, u)| !(d == doc && u == unit))
            .filter_map(|(d, u)| vectors.get(&(d.as_str(), u.as_str())).copied())
            .collect();
        let mean = |x: &[f32]| {
            near.iter().map(|n| ledger_embed::cosine(x, n)).sum::<f32>() / near.len().max(1) as f32
        };
        let (was, is) = (mean(&v[0]), mean(&v[1]));
        if own < 0.5 || was - is > 0.15 {
            out.push(Finding {
                kind: FindingKind::Drift,
                location: format!("{doc}:{unit}"),
                message: format!(
                    "meaning moved: cosine {own:.2} to its old text; {was:.2} -> {is:.2} to its {} neighbours",
                    near.len()
                ),
            });
        }
    }
    out
}

/// What `ledger edit` is asked.
pub struct LlmEdit<'a> {
    /// The graph of the inputs (for retrieval and drift).
    pub graph: &'a Path,
    /// The instruction.
    pub instruction: &'a str,
    /// Targets named on the command line.
    pub targets: &'a [String],
    /// The document, when names repeat.
    pub doc: Option<&'a str>,
    /// Token budget of the context.
    pub budget: usize,
}

/// Findings that do not stop an LLM edit: drift is reported only.
pub const LLM_ALLOWED: [FindingKind; 1] = [FindingKind::Drift];

/// An LLM edit proposed, located, verified and (once) repaired, in memory.
pub struct LlmPlan {
    /// The last proposal's edit and its findings.
    pub checked: Checked,
    /// The findings of the first proposal, when it went back for repair (empty otherwise).
    pub repaired: Vec<String>,
    /// The model's note.
    pub note: String,
    /// Units and tokens of the context the model saw, and the document's tokens.
    pub context_units: usize,
    /// Tokens of the context.
    pub context_tokens: usize,
    /// Tokens of the documents the context came from.
    pub document_tokens: usize,
    /// Notes for the user (how targets were found, why there was no drift check).
    pub notes: Vec<String>,
    /// Requests sent and tokens used.
    pub requests: u64,
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
}

impl LlmPlan {
    /// What the user is told of the plan: the notes, the context's size, the repair round, the
    /// model's note, the requests and tokens.
    pub fn report(&self) -> Vec<String> {
        let mut lines = self.notes.clone();
        lines.push(format!(
            "context: {} units, {} tokens ({:.1}% of the document)",
            self.context_units,
            self.context_tokens,
            100.0 * self.context_tokens as f64 / self.document_tokens.max(1) as f64
        ));
        if !self.repaired.is_empty() {
            lines.extend(self.repaired.iter().cloned());
            lines.push("verification failed; the model was asked for one repair".into());
        }
        if !self.note.is_empty() {
            lines.push(format!("model: {}", self.note));
        }
        lines.push(format!(
            "{} requests, {} prompt + {} completion tokens",
            self.requests, self.prompt_tokens, self.completion_tokens
        ));
        lines
    }
}

/// Retrieval for the targets, the model's edits as structured output, applied in memory and
/// verified; on blocking findings one repair round with them. Nothing is written.
pub fn plan_llm_edit(config: &Config, sources: &Sources, args: &LlmEdit) -> Result<LlmPlan> {
    let graph = crate::retrieval::load(args.graph)?;
    let ask = crate::retrieval::Ask {
        targets: args.targets,
        instruction: Some(args.instruction),
        doc: args.doc,
        budget: args.budget,
    };
    let retrieved = crate::retrieval::retrieve(args.graph, &graph, &ask, config)?;
    let mut notes = retrieved.notes;
    let context = retrieved.context;
    let mut units = Vec::new();
    let mut spans = BTreeMap::new();
    let mut neighbours = Vec::new();
    for t in &context.units {
        let Some((path, s, e)) = unit_source(sources, &t.doc_id, &t.unit_id) else {
            return Err(Error::Invalid(format!(
                "{}:{} is in the graph but not in the inputs: reindex them first",
                t.doc_id, t.unit_id
            )));
        };
        if spans.contains_key(&t.unit_id) {
            continue;
        }
        let rec = &graph.units()[t.unit];
        let name = if rec.env.is_empty() {
            rec.kind.as_str()
        } else {
            rec.env.as_str()
        };
        units.push(ledger_llm::editor::EditUnit {
            id: t.unit_id.clone(),
            title: format!("{name} {}", rec.number.as_deref().unwrap_or(""))
                .trim()
                .to_string(),
            source: sources.texts[&path][s..e].to_string(),
            why: t.why.clone(),
        });
        spans.insert(t.unit_id.clone(), (path, s, e));
        neighbours.push((t.doc_id.clone(), t.unit_id.clone()));
    }
    let request = ledger_llm::editor::EditRequest {
        instruction: args.instruction.to_string(),
        units,
    };
    let client = crate::semantic::chat_client(&config.llm, &config.tls)?.ok_or_else(|| {
        Error::Invalid(
            "ledger edit needs an OpenAI-compatible endpoint: set llm.url and llm.model (LEDGER_LLM_URL, LEDGER_LLM_MODEL)".into(),
        )
    })?;
    let editor = ledger_llm::LlmEditor::new(client);
    let drift_model = crate::retrieval::graph_embedder(args.graph, config)
        .inspect_err(|e| notes.push(format!("no drift check: {e}")))
        .ok();
    let mut proposal = editor.propose(&request, None)?;
    let mut repaired = Vec::new();
    loop {
        let (edits, mut findings) = located(&proposal, &spans, sources);
        let edited_units: Vec<(String, String)> = edits
            .iter()
            .filter_map(|e| {
                let (unit, _) = spans
                    .iter()
                    .find(|(_, (p, s, end))| *p == e.path && *s <= e.start && e.end <= *end)?;
                let doc = context
                    .units
                    .iter()
                    .find(|t| &t.unit_id == unit)?
                    .doc_id
                    .clone();
                Some((doc, unit.clone()))
            })
            .collect();
        let mut checked = check(sources, vec![edits], |_, shadow, _| match &drift_model {
            Some(model) => drift(model, &neighbours, sources, shadow, &edited_units),
            None => Vec::new(),
        })?;
        findings.append(&mut checked.findings);
        checked.findings = findings;
        let blocking: Vec<String> = checked
            .findings
            .iter()
            .filter(|f| !LLM_ALLOWED.contains(&f.kind))
            .map(ToString::to_string)
            .collect();
        if repaired.is_empty() && !blocking.is_empty() {
            proposal = editor.propose(&request, Some((&proposal, &blocking)))?;
            repaired = blocking;
            continue;
        }
        let usage = editor.client().usage().snapshot();
        return Ok(LlmPlan {
            checked,
            repaired,
            note: proposal.note.clone(),
            notes,
            context_units: context.units.len(),
            context_tokens: context.tokens,
            document_tokens: context.document_tokens,
            requests: usage.requests,
            prompt_tokens: usage.prompt_tokens,
            completion_tokens: usage.completion_tokens,
        });
    }
}
