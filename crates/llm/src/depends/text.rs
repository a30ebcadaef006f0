//! What a judge sees of units: their text without blueprint annotations, which units are
//! judged, and the hierarchy.

use ledger_core::{Document, Unit, UnitKind};
use regex::Regex;
use std::sync::LazyLock;

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
pub fn is_ancestor(doc: &Document, a: usize, b: usize) -> bool {
    let mut p = doc.units[b].parent;
    while let Some(x) = p {
        if x == a {
            return true;
        }
        p = doc.units[x].parent;
    }
    false
}
