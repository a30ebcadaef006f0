//! DEPENDS edges (r_imp): u_i → u_j when u_j, earlier, holds a definition, notation, assumption or
//! result that u_i needs. Candidates per unit (a window of preceding units plus earlier units that
//! introduce a term u_i uses), one judgment per unit over all its candidates, edges with the
//! dependency elements as evidence.

pub mod offline;

pub use offline::{Introductions, OfflineJudge};

use ledger_core::{Document, Edge, EdgeKind, Unit, UnitKind};
use regex::Regex;
use std::sync::LazyLock;

/// The verdict on one candidate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// Unit index of the candidate (the prerequisite).
    pub candidate: usize,
    /// Whether the unit depends on it.
    pub depends: bool,
    /// What it needs from it: terms, symbols, the antecedent of an anaphor.
    pub elements: Vec<String>,
}

/// A document prepared for judging: what each unit introduces and uses, computed once.
pub struct DocContext<'a> {
    /// The document.
    pub doc: &'a Document,
    /// Its introductions.
    pub intro: Introductions,
    /// Per unit: earlier units of the same document it names explicitly (`\ref`, prose, links;
    /// never `\uses`), with the mention text.
    pub cited: Vec<Vec<(usize, String)>>,
}

impl<'a> DocContext<'a> {
    /// Prepares `doc`.
    pub fn new(doc: &'a Document) -> Self {
        let index = doc.unit_indices();
        let mut cited: Vec<Vec<(usize, String)>> = vec![Vec::new(); doc.units.len()];
        for m in &doc.mentions {
            if m.kind == ledger_core::MentionKind::Uses {
                continue;
            }
            if let ledger_core::Resolution::Resolved { doc: d, unit } = &m.resolution
                && d == &doc.id
                && let Some(&j) = index.get(unit.as_str())
                && j < m.unit
                && !cited[m.unit].iter().any(|(k, _)| *k == j)
            {
                cited[m.unit].push((j, m.text.clone()));
            }
        }
        DocContext {
            doc,
            intro: Introductions::of(doc),
            cited,
        }
    }
}

/// Judges whether a unit depends on each of its candidates, all at once.
pub trait Judge: Send + Sync {
    /// Recorded in each edge's evidence (`offline`, or the LLM's model name).
    fn name(&self) -> &str;
    /// One verdict per candidate, in order.
    fn judge(
        &self,
        ctx: &DocContext,
        unit: usize,
        candidates: &[usize],
    ) -> crate::Result<Vec<Verdict>>;
}

/// Blueprint annotations that would leak author-written dependencies into a judgment.
static ANNOTATIONS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\\(?:uses|lean|leanok|mathlibok|notready|discussion)\b(?:\{[^}]*\})?")
        .expect("valid")
});

/// The text a judge sees of a unit: `\uses{…}`, `\lean{…}`, `\leanok` … removed.
pub fn judge_text(text: &str) -> String {
    ANNOTATIONS.replace_all(text, "").into_owned()
}

/// Units that are judged and that can be prerequisites: units with prose or math of their own.
pub fn judgeable(u: &Unit) -> bool {
    !matches!(
        u.kind,
        UnitKind::Document | UnitKind::Section | UnitKind::Bibitem
    )
}

/// True when `a` is an ancestor of `b` (a container is not a prerequisite of its own parts).
fn is_ancestor(doc: &Document, a: usize, b: usize) -> bool {
    let mut p = doc.units[b].parent;
    while let Some(x) = p {
        if x == a {
            return true;
        }
        p = doc.units[x].parent;
    }
    false
}

/// Candidates of unit `i`: the `window` nearest preceding judgeable units, then earlier units
/// that introduce a term or symbol `i` uses or that `i` names explicitly (outside the window
/// too). Ancestors and descendants of `i` are left out; order is document order.
pub fn candidates(ctx: &DocContext, i: usize, window: usize) -> Vec<usize> {
    let (doc, intro) = (ctx.doc, &ctx.intro);
    let related = |j: usize| is_ancestor(doc, j, i) || is_ancestor(doc, i, j);
    let mut out: Vec<usize> = (0..i)
        .rev()
        .filter(|&j| judgeable(&doc.units[j]) && !related(j))
        .take(window)
        .collect();
    let named = ctx.cited[i].iter().map(|(j, _)| *j);
    for j in intro.introducers_used_by(i).into_iter().chain(named) {
        if j < i && !related(j) && !out.contains(&j) {
            out.push(j);
        }
    }
    out.sort_unstable();
    out
}

/// DEPENDS edges of one document: every judgeable unit judged once over its candidates.
pub fn depends_edges(doc: &Document, judge: &dyn Judge, window: usize) -> crate::Result<Vec<Edge>> {
    let ctx = DocContext::new(doc);
    let mut edges = Vec::new();
    for i in (0..doc.units.len()).filter(|&i| judgeable(&doc.units[i])) {
        let cands = candidates(&ctx, i, window);
        if cands.is_empty() {
            continue;
        }
        for v in judge.judge(&ctx, i, &cands)? {
            if v.depends && v.candidate < i {
                edges.push(Edge {
                    src_doc: doc.id.clone(),
                    src_unit: doc.units[i].id.clone(),
                    dst_doc: doc.id.clone(),
                    dst_unit: doc.units[v.candidate].id.clone(),
                    kind: EdgeKind::Depends,
                    score: 1.0,
                    evidence: format!("{}: {}", judge.name(), v.elements.join("; ")),
                });
            }
        }
    }
    Ok(edges)
}
