//! Edit metrics of `ledger eval`: the deterministic edits of the generated cases made with
//! LEDGER (`rename-term`, `insert` with its prose renumbering, `relabel` of the target) and, for
//! comparison, as a text tool makes them (a plain replace; an insert without renumbering). Each
//! edit is checked against the generator's ground truth: its references resolved by the
//! independent numbering of `crate::check`, the units it changed compared with the units
//! that must and must not change, and the case's consistency rule; and LEDGER's own verifier
//! says whether it would have refused the edit.

use crate::check::{references, still_valid};
use crate::error::{Context, Result};
use crate::{Category, DeterministicEdit, Generated};
use ledger_core::UnitKind;
use ledger_edit::Checked;
use ledger_edit::Replacement;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// How an edit was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Method {
    /// With LEDGER's edit commands.
    Ledger,
    /// As a text tool makes it.
    Naive,
}

impl Method {
    /// The name in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Ledger => "LEDGER",
            Method::Naive => "text tool",
        }
    }
}

/// One edit made and checked.
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    /// `rename-term`, `insert-section` or `relabel`.
    pub edit: &'static str,
    /// How it was made.
    pub method: Method,
    /// The case's category.
    pub category: Category,
    /// The document's format.
    pub format: ledger_core::Format,
    /// References in the document, and those naming the same unit after the edit.
    pub references: usize,
    /// References that still name their unit.
    pub valid: usize,
    /// Units whose text must change (sections excluded: their printed number is not text), and
    /// those that did.
    pub must_change: usize,
    /// Must-change units changed.
    pub changed: usize,
    /// Units that must stay as they were, and those that did.
    pub must_not_change: usize,
    /// Must-not-change units untouched.
    pub untouched: usize,
    /// The case's consistency rule held (no stale term, plurals right, no dangling label).
    pub consistent: bool,
    /// LEDGER's verifier had blocking findings (the edit would not have been written).
    pub refused: bool,
}

impl Outcome {
    /// Whether the edit broke something the ground truth sees.
    pub fn broken(&self) -> bool {
        self.valid < self.references || !self.consistent
    }
}

/// Up to `n` items spread evenly over `items`.
pub(super) fn spread<T>(items: Vec<T>, n: usize) -> Vec<T> {
    let len = items.len();
    if len <= n {
        return items;
    }
    items
        .into_iter()
        .enumerate()
        .filter(|(k, _)| k * n / len != (k + 1) * n / len)
        .map(|(_, x)| x)
        .collect()
}

/// Makes and checks the deterministic edits of up to `per_category` cases per category of
/// document `g`, written in `dir` (its `main.tex` or `main.md`).
pub fn evaluate(dir: &Path, g: &Generated, per_category: usize) -> Result<Vec<Outcome>> {
    let paths = [dir.to_path_buf()];
    let sources = ledger_edit::Sources::read(&paths)?;
    let main = sources
        .texts
        .keys()
        .next()
        .cloned()
        .context("the generated document was not read")?;
    let original = sources.texts[&main].clone();
    let before = references(&original, g.format);
    let spans = g.spans();
    let mut out = Vec::new();
    let score = |edit: &'static str,
                 method: Method,
                 case: &crate::Case,
                 checked: &Checked,
                 renamed: Option<(&str, &str)>,
                 consistent: &dyn Fn(&str) -> bool| {
        let edited = checked.edited.get(&main).unwrap_or(&original);
        let after = references(edited, g.format);
        let moved = map_spans(&spans, &checked.stages, &main);
        let same = |u: usize| unchanged(&original, edited, spans[u], moved[u]);
        let must: Vec<usize> = case
            .must_change
            .iter()
            .copied()
            .filter(|&u| g.units[u].kind != UnitKind::Section)
            .collect();
        Outcome {
            edit,
            method,
            category: case.category,
            format: g.format,
            references: before.len(),
            valid: still_valid(&before, &after, renamed),
            must_change: must.len(),
            changed: must.iter().filter(|&&u| !same(u)).count(),
            must_not_change: case.must_not_change.len(),
            untouched: case.must_not_change.iter().filter(|&&u| same(u)).count(),
            consistent: consistent(edited),
            refused: !checked.findings.is_empty(),
        }
    };
    for category in Category::ALL {
        let cases: Vec<&crate::Case> = g.cases.iter().filter(|c| c.category == category).collect();
        for case in spread(cases.clone(), per_category) {
            // The edit made with LEDGER, the same edit as a text tool makes it, and the case's
            // consistency rule; both are scored alike.
            type Consistent<'a> = Box<dyn Fn(&str) -> bool + 'a>;
            let (edit, ledger, naive, consistent): (_, _, Vec<Replacement>, Consistent) =
                match &case.edit {
                    Some(DeterministicEdit::RenameTerm {
                        old,
                        new,
                        old_plural,
                        new_plural,
                    }) => {
                        // As an author's commit renames: links follow the headings' new
                        // anchors (`--no-keep-anchors`), which the consistency rule expects.
                        let plan = ledger_edit::plan_rename_term(&sources, old, new, &[], false)?;
                        let naive = original
                            .match_indices(old.as_str())
                            .map(|(k, _)| replacement(&main, k, k + old.len(), new))
                            .collect();
                        let original = &original;
                        let consistent = move |edited: &str| {
                            // No occurrence of the old term left; the plurals follow.
                            stale(edited, old, &[new, new_plural]) == 0
                                && word_count(edited, new_plural)
                                    == word_count(original, old_plural)
                        };
                        ("rename-term", plan.checked, naive, Box::new(consistent))
                    }
                    Some(DeterministicEdit::InsertSection { before: sec, text }) => {
                        let at = ledger_edit::find_unit(&sources.docs, None, &g.units[*sec].id)?;
                        let op = ledger_edit::Op::Insert {
                            before: at,
                            text: text.clone(),
                        };
                        let plan = ledger_edit::plan_structural(&sources, &op)?;
                        let start = g.units[*sec].start;
                        let naive = vec![replacement(&main, start, start, &format!("{text}\n"))];
                        (
                            "insert-section",
                            plan.checked,
                            naive,
                            Box::new(|_: &str| true),
                        )
                    }
                    None => continue,
                };
            out.push(score(
                edit,
                Method::Ledger,
                case,
                &ledger,
                None,
                &*consistent,
            ));
            let checked = ledger_edit::check(&sources, vec![naive], |_, _, _| Vec::new())?;
            out.push(score(
                edit,
                Method::Naive,
                case,
                &checked,
                None,
                &*consistent,
            ));
        }
        // Every category: relabel a target that has a label, with all its `\ref`s.
        let labelled: Vec<&crate::Case> = cases
            .into_iter()
            .filter(|c| {
                c.targets
                    .first()
                    .is_some_and(|&t| g.units[t].kind != UnitKind::Paragraph)
            })
            .collect();
        for case in spread(labelled, per_category.div_ceil(4)) {
            let old = g.units[case.targets[0]].id.clone();
            let new = format!("{old}-renamed");
            let (checked, _) = ledger_edit::plan_relabel(&sources, &old, &new)?;
            let consistent = |edited: &str| {
                // Nothing names the old label (LaTeX `{old}`, Markdown `#old`, `"old"`) any more.
                let stale = [
                    format!("{{{old}}}"),
                    format!("#{old})"),
                    format!("{{#{old}}}"),
                    format!("\"{old}\""),
                ];
                let defined = [
                    format!("\\label{{{new}}}"),
                    format!("{{#{new}}}"),
                    format!("id=\"{new}\""),
                ];
                stale.iter().all(|x| !edited.contains(x.as_str()))
                    && defined.iter().any(|x| edited.contains(x.as_str()))
            };
            let mut o = score(
                "relabel",
                Method::Ledger,
                case,
                &checked,
                Some((&old, &new)),
                &consistent,
            );
            // A relabel changes the target and its `\ref`s, not what the case must change.
            o.must_change = 0;
            o.changed = 0;
            out.push(o);
        }
    }
    Ok(out)
}

fn replacement(path: &Path, start: usize, end: usize, text: &str) -> Replacement {
    Replacement {
        path: path.to_path_buf(),
        start,
        end,
        text: text.to_string(),
        moved_from: None,
    }
}

/// Where `phrase` occurs as whole words.
fn words_at(text: &str, phrase: &str) -> Vec<usize> {
    let is_word = |c: Option<char>| c.is_some_and(char::is_alphanumeric);
    text.match_indices(phrase)
        .filter(|(k, m)| {
            !is_word(text[..*k].chars().next_back()) && !is_word(text[k + m.len()..].chars().next())
        })
        .map(|(k, _)| k)
        .collect()
}

/// Occurrences of `phrase` as whole words.
fn word_count(text: &str, phrase: &str) -> usize {
    words_at(text, phrase).len()
}

/// Occurrences of `old` as whole words that are not the start of one of `new` (the new names
/// begin with the old one).
fn stale(text: &str, old: &str, new: &[&String]) -> usize {
    let renamed: Vec<usize> = new.iter().flat_map(|n| words_at(text, n)).collect();
    words_at(text, old)
        .iter()
        .filter(|k| !renamed.contains(k))
        .count()
}

/// Whether the text of `before` in `original` is the text of `after` in `edited` (a range that
/// does not fall on character boundaries counts as changed).
pub(super) fn unchanged(
    original: &str,
    edited: &str,
    before: (usize, usize),
    after: (usize, usize),
) -> bool {
    original.get(before.0..before.1).is_some()
        && original.get(before.0..before.1) == edited.get(after.0..after.1)
}

/// The byte ranges `spans` of the original text of `path` after the edit `stages`: text
/// inserted at a range's start goes before it, text replaced inside or at its end belongs to it.
pub(super) fn map_spans(
    spans: &[(usize, usize)],
    stages: &[Vec<Replacement>],
    path: &PathBuf,
) -> Vec<(usize, usize)> {
    let mut now = spans.to_vec();
    for stage in stages {
        let edits: Vec<&Replacement> = stage.iter().filter(|r| &r.path == path).collect();
        let shift = |p: usize, is_start: bool| -> usize {
            let mut q = p as isize;
            for r in &edits {
                let moves = if is_start {
                    r.end <= p
                } else {
                    r.end < p || (r.end == p && r.start < p)
                };
                if moves {
                    q += r.text.len() as isize - (r.end - r.start) as isize;
                }
            }
            q.max(0) as usize
        };
        now = now
            .iter()
            .map(|&(s, e)| {
                let s2 = shift(s, true);
                (s2, shift(e, false).max(s2))
            })
            .collect();
    }
    now
}
