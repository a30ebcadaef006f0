//! A document prepared for judging, and the candidates of a unit.

use super::signals::Signals;
use super::terms::Introductions;
use super::text::{is_ancestor, judgeable};
use ledger_core::Document;

/// A document prepared for judging: what each unit introduces and uses, computed once.
pub struct DocContext<'a> {
    /// The document.
    pub doc: &'a Document,
    /// Its introductions.
    pub intro: Introductions,
    /// Per unit: earlier units of the same document it names explicitly (`\ref`, prose, links;
    /// never `\uses`), with the mention text.
    pub cited: Vec<Vec<(usize, String)>>,
    /// What the learned judge reads of the document, computed on first use.
    signals: std::sync::OnceLock<Signals>,
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
            signals: std::sync::OnceLock::new(),
        }
    }

    /// The learned judge's signals of the document (computed once).
    pub fn signals(&self) -> &Signals {
        self.signals
            .get_or_init(|| Signals::of(self.doc, &self.intro, &self.cited))
    }
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
