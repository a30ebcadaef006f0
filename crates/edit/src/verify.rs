//! Verification of an edit before it is written: the documents re-parsed from the edited texts
//! are compared with the documents as they were.
//!
//! Units and mentions are matched across the edit by mapping byte offsets through the
//! replacements, so the check holds for edits that insert, delete or move text as well as for
//! renames. Every reference must still resolve to the same unit (or, for a reference rewritten
//! by the edit, to the unit the edit meant); a reference to a deleted unit is a finding; new
//! references must resolve; and the word a prose reference uses must fit its target's kind.

use crate::Replacement;
use ledger_core::{Document, MentionKind, Resolution, TargetKey, UnitKind};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};

/// What kind of problem a [`Finding`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum FindingKind {
    /// A reference no longer resolves, resolves elsewhere, or is no longer read as one.
    Reference,
    /// A reference to a unit the edit deletes.
    DeletedTarget,
    /// The word a reference uses does not fit its target's kind.
    Wording,
    /// A printed number in prose differs from its target's number.
    Number,
    /// An occurrence the edit should have changed is still there.
    Consistency,
    /// An edited unit's meaning moved away from its neighbours'.
    Drift,
    /// A proposed edit cannot be applied (its text is not where it says).
    Unapplicable,
    /// The edit makes a document include a file outside its folder (`\input`, `\include`,
    /// a SUMMARY.md link, `{{#include}}`).
    OutsideRoot,
    /// A term rename put a word beside the same word ("package index index").
    Repeat,
}

/// One problem found by verification.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Finding {
    /// What kind of problem.
    pub kind: FindingKind,
    /// `file:line:col` of the reference (in the edited text when it is new).
    pub location: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.location, self.message)
    }
}

/// Maps byte offsets of one file through its replacements.
pub(crate) struct OffsetMap<'a> {
    /// Sorted by start (they do not overlap).
    edits: Vec<&'a Replacement>,
    /// Entry `k`: how much the edits before edit `k` grew the text.
    growth: Vec<isize>,
}

/// Where an old offset went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mapped {
    /// Outside every replaced range (or moved along with its text): the new offset.
    At(usize),
    /// Inside (or at the start of) a replaced range: the range's new extent.
    Within(usize, usize),
}

impl<'a> OffsetMap<'a> {
    pub(crate) fn new(mut edits: Vec<&'a Replacement>) -> Self {
        edits.sort_by_key(|e| (e.start, e.end));
        let mut growth = Vec::with_capacity(edits.len() + 1);
        let mut total: isize = 0;
        growth.push(total);
        for e in &edits {
            total += e.text.len() as isize - (e.end - e.start) as isize;
            growth.push(total);
        }
        OffsetMap { edits, growth }
    }

    /// New start of edit `k`.
    fn new_start(&self, k: usize) -> usize {
        (self.edits[k].start as isize + self.growth[k]) as usize
    }

    /// New start of the edit that replaced `start..end`, if one did.
    pub(crate) fn new_start_of(&self, start: usize, end: usize) -> Option<usize> {
        let k = self
            .edits
            .partition_point(|e| (e.start, e.end) < (start, end));
        let e = self.edits.get(k)?;
        ((e.start, e.end) == (start, end)).then(|| self.new_start(k))
    }

    pub(crate) fn map(&self, offset: usize) -> Mapped {
        // The first edit that ends after `offset` (their ends rise with their starts).
        let k = self.edits.partition_point(|e| e.end <= offset);
        if let Some(e) = self.edits.get(k)
            && e.start < e.end
            && offset >= e.start
        {
            // Cut here and pasted elsewhere: follow the text.
            if let Some(to) = self
                .edits
                .iter()
                .position(|m| m.moved_from == Some(e.start))
            {
                return Mapped::At(self.new_start(to) + (offset - e.start));
            }
            let new_start = self.new_start(k);
            return Mapped::Within(new_start, new_start + e.text.len());
        }
        Mapped::At((offset as isize + self.growth[k]) as usize)
    }
}

/// Maps offsets of the files of a document through a sequence of edit stages, each relative to
/// the text the one before produced. Edits name files by path.
pub(crate) struct StageMap<'a> {
    stages: Vec<BTreeMap<&'a Path, OffsetMap<'a>>>,
}

impl<'a> StageMap<'a> {
    pub(crate) fn new(stages: &'a [Vec<Replacement>]) -> Self {
        let stages = stages
            .iter()
            .map(|edits| {
                let mut by_path: BTreeMap<&Path, Vec<&Replacement>> = BTreeMap::new();
                // Edits come file by file: one look-up per run of one file's edits.
                for run in edits.chunk_by(|a, b| a.path == b.path) {
                    by_path
                        .entry(run[0].path.as_path())
                        .or_default()
                        .extend(run);
                }
                by_path
                    .into_iter()
                    .map(|(path, edits)| (path, OffsetMap::new(edits)))
                    .collect()
            })
            .collect();
        StageMap { stages }
    }

    /// Where `offset` of file `path` went after every stage.
    pub(crate) fn map(&self, path: &str, offset: usize) -> Mapped {
        let mut at = Mapped::At(offset);
        for stage in &self.stages {
            let Some(m) = stage.get(Path::new(path)) else {
                continue;
            };
            at = match at {
                Mapped::At(o) => m.map(o),
                Mapped::Within(s, e) => {
                    let start = match m.map(s) {
                        Mapped::At(x) | Mapped::Within(x, _) => x,
                    };
                    let end = match m.map(e) {
                        Mapped::At(x) => x,
                        Mapped::Within(_, x) => x,
                    };
                    Mapped::Within(start, end.max(start))
                }
            };
        }
        at
    }

    /// The new position of each unit of `before` in `after` (`None`: deleted), by mapped start.
    pub(crate) fn units<'d>(
        &self,
        before: &'d [Document],
        after: &[Document],
    ) -> HashMap<(&'d str, usize), Option<usize>> {
        let after_by_id: HashMap<&str, &Document> =
            after.iter().map(|d| (d.id.as_str(), d)).collect();
        let mut out = HashMap::new();
        for d in before {
            let Some(a) = after_by_id.get(d.id.as_str()) else {
                continue;
            };
            let starts: HashMap<(usize, usize, UnitKind), usize> = a
                .units
                .iter()
                .enumerate()
                .map(|(i, u)| ((u.file, u.start_byte, u.kind), i))
                .collect();
            for (i, u) in d.units.iter().enumerate() {
                let path = d.files.get(u.file).map_or("", String::as_str);
                let new = match self.map(path, u.start_byte) {
                    Mapped::At(s) => starts.get(&(u.file, s, u.kind)).copied(),
                    Mapped::Within(..) => None,
                };
                out.insert(
                    (d.id.as_str(), i),
                    if u.parent.is_none() { Some(0) } else { new },
                );
            }
        }
        out
    }
}

/// The word used before a `\ref`-like mention ("Theorem~\ref{x}"), if it names a kind.
fn word_before(text: &str, start: usize) -> Option<&'static str> {
    // The span starts at the command or at its key: drop `\\ref{` either way.
    let mut head = text.get(..start)?.trim_end_matches('{');
    if let Some(k) = head.rfind('\\')
        && head[k + 1..]
            .chars()
            .all(|c| c.is_ascii_alphabetic() || c == '*')
    {
        head = &head[..k];
    }
    let head = head.trim_end_matches(['~', ' ', '\t']);
    let word_start = head
        .char_indices()
        .rev()
        .take_while(|(_, c)| c.is_alphabetic() || *c == '.')
        .last()
        .map(|(i, _)| i)?;
    ledger_parse::prose::family(&head[word_start..])
}

/// Whether the family a reference's wording names fits unit `u`.
pub(crate) fn fits(family: &str, u: &ledger_core::Unit) -> bool {
    match family {
        "section" | "chapter" | "part" | "appendix" => u.kind == UnitKind::Section,
        "figure" => u.kind == UnitKind::Figure,
        "table" => u.kind == UnitKind::Table,
        "equation" => u.kind == UnitKind::Equation,
        "algorithm" => u.kind == UnitKind::Algorithm,
        "listing" => u.kind == UnitKind::Listing,
        name => {
            u.kind == UnitKind::Theorem
                && ledger_parse::prose::family(&u.env).is_none_or(|env| env == name)
        }
    }
}

/// Per document: the wording mismatches of its resolved references, by mention index
/// ("Theorem 3" or "Theorem~\ref{…}" pointing to a lemma).
fn wording_mismatches(
    docs: &[Document],
    texts: &dyn Fn(&Document, usize) -> Option<String>,
) -> BTreeMap<(String, usize), String> {
    let by_id: HashMap<&str, &Document> = docs.iter().map(|d| (d.id.as_str(), d)).collect();
    let mut out = BTreeMap::new();
    for d in docs {
        let mut file_texts: HashMap<usize, Option<String>> = HashMap::new();
        for (k, m) in d.mentions.iter().enumerate() {
            let Resolution::Resolved { doc, unit } = &m.resolution else {
                continue;
            };
            let family = match (&m.kind, &m.key) {
                (MentionKind::Prose, TargetKey::Number { family, .. }) => Some(family.as_str()),
                (MentionKind::Ref, _) => file_texts
                    .entry(m.file)
                    .or_insert_with(|| texts(d, m.file))
                    .as_deref()
                    .and_then(|t| word_before(t, m.start_byte)),
                _ => None,
            };
            let Some(family) = family else { continue };
            let Some(target) = by_id
                .get(doc.as_str())
                .and_then(|t| t.units.iter().find(|u| &u.id == unit))
            else {
                continue;
            };
            if !fits(family, target) {
                out.insert(
                    (d.id.clone(), k),
                    format!(
                        "`{}` calls {} `{}` a {family}",
                        m.text,
                        if target.kind == UnitKind::Theorem {
                            target.env.as_str()
                        } else {
                            target.kind.as_str()
                        },
                        target.id
                    ),
                );
            }
        }
    }
    out
}

/// Compares `after` (the documents re-parsed from the edited texts) with `before`, given the
/// edit `stages` that turned one into the other (each relative to the text the previous one
/// produced) and the texts `before` was read from. Returns the findings; none means verified.
pub fn verify(
    before: &[Document],
    texts: &BTreeMap<PathBuf, String>,
    after: &[Document],
    after_texts: &dyn Fn(&Document, usize) -> Option<String>,
    stages: &[Vec<Replacement>],
) -> Vec<Finding> {
    let stage_map = StageMap::new(stages);
    let map_of = |d: &Document, file: usize, offset: usize| {
        stage_map.map(d.files.get(file).map_or("", String::as_str), offset)
    };
    let after_by_id: HashMap<&str, &Document> = after.iter().map(|d| (d.id.as_str(), d)).collect();
    let unit_map = stage_map.units(before, after);
    let position = |docs: &[Document], doc: &str, unit: &str| -> Option<usize> {
        docs.iter()
            .find(|d| d.id == doc)?
            .units
            .iter()
            .position(|u| u.id == unit)
    };
    let location = |d: &Document, m: &ledger_core::Mention| {
        format!(
            "{}:{}:{}",
            d.files.get(m.file).map_or("", String::as_str),
            m.line,
            m.col
        )
    };
    let texts_before = |d: &Document, file: usize| {
        d.files
            .get(file)
            .and_then(|f| texts.get(std::path::Path::new(f)).cloned())
    };
    let old_wording = wording_mismatches(before, &texts_before);
    let new_wording = wording_mismatches(after, after_texts);
    let mut findings = Vec::new();
    for d in before {
        let Some(a) = after_by_id.get(d.id.as_str()) else {
            findings.push(Finding {
                kind: FindingKind::Reference,
                location: d.id.clone(),
                message: "the document is gone after the edit".into(),
            });
            continue;
        };
        // New mentions by (file, start byte) (several share a start: "Sections 2–5" names
        // 2, 3, 4 and 5), and which of them were matched.
        let mut new_at: BTreeMap<(usize, usize), Vec<usize>> = BTreeMap::new();
        for (k, m) in a.mentions.iter().enumerate() {
            new_at.entry((m.file, m.start_byte)).or_default().push(k);
        }
        let mut matched = vec![false; a.mentions.len()];
        for (k, m) in d.mentions.iter().enumerate() {
            let target = match &m.resolution {
                Resolution::Resolved { doc, unit } => position(before, doc, unit).map(|p| {
                    let new = unit_map.get(&(doc.as_str(), p)).copied().flatten();
                    (doc.clone(), new)
                }),
                _ => None,
            };
            let (s, e) = match map_of(d, m.file, m.start_byte) {
                Mapped::At(s) => (s, s),
                Mapped::Within(s, e) => (s, e),
            };
            let found: Option<usize> = new_at
                .range((m.file, s)..=(m.file, e))
                .flat_map(|(_, ks)| ks)
                .copied()
                .find(|&k| !matched[k]);
            let Some(n) = found else {
                // Gone with the text around it (a deleted unit's own references), or rewritten
                // away on purpose: fine unless it pointed somewhere that still exists and its
                // text was not part of the edit.
                if matches!(map_of(d, m.file, m.start_byte), Mapped::At(_)) {
                    findings.push(Finding {
                        kind: FindingKind::Reference,
                        location: location(d, m),
                        message: format!("`{}` is no longer read as a reference", m.text),
                    });
                }
                continue;
            };
            matched[n] = true;
            let nm = &a.mentions[n];
            let now = match &nm.resolution {
                Resolution::Resolved { doc, unit } => {
                    position(after, doc, unit).map(|p| (doc.clone(), Some(p)))
                }
                _ => None,
            };
            match (&target, &now) {
                (Some((_, None)), _) => findings.push(Finding {
                    kind: FindingKind::DeletedTarget,
                    location: location(d, nm),
                    message: format!("`{}` refers to a unit the edit deletes", nm.text),
                }),
                (Some(t), Some(n)) if t == n => {}
                (Some(_), Some(_)) => findings.push(Finding {
                    kind: FindingKind::Reference,
                    location: location(d, nm),
                    message: format!("`{}` now resolves to a different unit", nm.text),
                }),
                (Some(_), None) => findings.push(Finding {
                    kind: FindingKind::Reference,
                    location: location(d, nm),
                    message: format!(
                        "`{}` no longer resolves ({})",
                        nm.text,
                        nm.resolution.status()
                    ),
                }),
                (None, Some(_)) | (None, None) => {}
            }
            if let Some(w) = new_wording.get(&(a.id.clone(), n))
                && !old_wording.contains_key(&(d.id.clone(), k))
            {
                findings.push(Finding {
                    kind: FindingKind::Wording,
                    location: location(d, nm),
                    message: w.clone(),
                });
            }
        }
        // Includes the edit added must stay inside the document's folder: what the parse of the
        // edited text refused, named as the document names it, that the parse before did not.
        let refused = |doc: &Document| -> BTreeSet<String> {
            doc.diagnostics
                .iter()
                .filter(|g| g.message.contains(ledger_parse::OUTSIDE_ROOT))
                .map(|g| g.message.split(": ").next().unwrap_or_default().to_string())
                .collect()
        };
        let was = refused(d);
        for named in refused(a).difference(&was) {
            findings.push(Finding {
                kind: FindingKind::OutsideRoot,
                location: a.id.clone(),
                message: format!("{named}: the edit includes a file outside the document's folder"),
            });
        }
        // References the edit added must resolve and fit.
        for (n, nm) in a.mentions.iter().enumerate() {
            if matched[n] {
                continue;
            }
            if !matches!(
                nm.resolution,
                Resolution::Resolved { .. } | Resolution::External { .. }
            ) {
                findings.push(Finding {
                    kind: FindingKind::Reference,
                    location: location(d, nm),
                    message: format!(
                        "new reference `{}` does not resolve ({})",
                        nm.text,
                        nm.resolution.status()
                    ),
                });
            } else if let Some(w) = new_wording.get(&(a.id.clone(), n)) {
                findings.push(Finding {
                    kind: FindingKind::Wording,
                    location: location(d, nm),
                    message: w.clone(),
                });
            }
        }
    }
    findings.sort();
    findings.dedup();
    findings
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against the edited text itself: an offset outside every replaced range lands on the
    /// same byte, one inside lands on the replacement's extent (random edits, seeded).
    #[test]
    fn mapped_offsets_point_at_the_same_text_after_the_edits() {
        let mut seed: u64 = 7;
        let mut next = |n: usize| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) as usize % n
        };
        let old: String = (0..200u8).map(|k| char::from(b'0' + k % 75)).collect();
        let path = PathBuf::from("f");
        for _ in 0..300 {
            let mut edits = Vec::new();
            let mut at = next(5);
            while at < old.len() {
                let end = (at + next(4)).min(old.len());
                let text: String = "xyz"[..next(4)].to_string();
                edits.push(Replacement {
                    path: path.clone(),
                    start: at,
                    end,
                    text,
                    moved_from: None,
                });
                at = end + 1 + next(12);
            }
            let texts = BTreeMap::from([(path.clone(), old.clone())]);
            let new = &crate::apply(&texts, &edits).expect("disjoint edits apply")[&path];
            let m = OffsetMap::new(edits.iter().collect());
            for offset in 0..old.len() {
                match m.map(offset) {
                    Mapped::At(n) => assert_eq!(new.as_bytes()[n], old.as_bytes()[offset]),
                    Mapped::Within(s, e) => {
                        let e0 = edits
                            .iter()
                            .find(|e| e.start <= offset && offset < e.end)
                            .expect("inside a replaced range");
                        assert_eq!(&new[s..e], e0.text);
                    }
                }
            }
        }
    }

    #[test]
    fn offsets_map_through_insertions_deletions_and_replacements() {
        let r = |start, end, text: &str| Replacement {
            path: PathBuf::from("f"),
            start,
            end,
            text: text.into(),
            moved_from: None,
        };
        let edits = [r(5, 5, "abc"), r(10, 20, ""), r(30, 32, "wxyz")];
        let m = OffsetMap::new(edits.iter().collect());
        let at = |o| match m.map(o) {
            Mapped::At(n) => Some(n),
            Mapped::Within(..) => None,
        };
        assert_eq!(at(0), Some(0));
        assert_eq!(at(5), Some(8));
        assert_eq!(at(12), None);
        assert_eq!(at(20), Some(13));
        assert!(matches!(m.map(30), Mapped::Within(23, 27)));
        assert_eq!(at(40), Some(35));
        assert_eq!(word_before("see Theorem~\\ref{x}", 12), Some("theorem"));
        assert_eq!(word_before("see (\\ref{x}", 5), None);
    }
}
