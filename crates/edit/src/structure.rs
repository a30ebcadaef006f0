//! Structural edits: insert text before a unit, delete a unit, move a unit before another. The
//! edit is made in two stages: the cut and paste ([`structural`]), then the prose numbers that
//! shifted ([`renumber`], computed from the documents re-parsed after the first stage).

use crate::verify::{Mapped, StageMap, fits};
use crate::{EditError, Replacement, Result};
use ledger_core::{Document, MentionKind, Resolution, TargetKey};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// A unit: (document index, unit index) in the documents it was found in.
pub type UnitAt = (usize, usize);

/// A structural edit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op<U = UnitAt> {
    /// Insert `text` (LaTeX or Markdown source) before unit `before`.
    Insert {
        /// The unit the text goes before.
        before: U,
        /// The source text to insert.
        text: String,
    },
    /// Delete a unit with everything it contains.
    Delete {
        /// The unit.
        unit: U,
    },
    /// Move a unit (with everything it contains) before another unit of the same file.
    Move {
        /// The unit moved.
        unit: U,
        /// The unit it goes before.
        before: U,
    },
}

impl Op<&str> {
    /// The edit with its units, named as a person names them (id, label, "Section 2"), found
    /// with [`find_unit`] in document `doc` when given.
    pub fn find(self, docs: &[Document], doc: Option<&str>) -> Result<Op> {
        let find = |name: &str| find_unit(docs, doc, name);
        Ok(match self {
            Op::Insert { before, text } => Op::Insert {
                before: find(before)?,
                text,
            },
            Op::Delete { unit } => Op::Delete { unit: find(unit)? },
            Op::Move { unit, before } => Op::Move {
                unit: find(unit)?,
                before: find(before)?,
            },
        })
    }
}

/// Finds a unit by id, label or anchor, or prose such as "Figure 3" or "Section 2.1", in
/// document `doc` when given.
pub fn find_unit(docs: &[Document], doc: Option<&str>, name: &str) -> Result<UnitAt> {
    let mut hits = Vec::new();
    let prose = ledger_parse::prose::find(name, &[]);
    for (d, document) in docs.iter().enumerate() {
        if doc.is_some_and(|want| want != document.id) {
            continue;
        }
        for (u, unit) in document.units.iter().enumerate() {
            let named = unit.id == name
                || unit
                    .labels
                    .iter()
                    .any(|(l, _)| l == name || l.rsplit_once('#').is_some_and(|(_, a)| a == name));
            let numbered = prose.first().is_some_and(|m| {
                m.start == 0
                    && m.end == name.trim_end().len()
                    && (unit.number.as_deref() == Some(m.number.as_str())
                        || unit.numbers.contains(&m.number))
                    && fits(&m.family, unit)
            });
            if named || numbered {
                hits.push((d, u));
            }
        }
    }
    match hits.as_slice() {
        [one] => Ok(*one),
        [] => Err(EditError::UnitNotFound(name.to_string())),
        many => Err(EditError::AmbiguousUnit {
            name: name.to_string(),
            candidates: many
                .iter()
                .map(|&(d, u)| format!("{}:{}", docs[d].id, docs[d].units[u].id))
                .collect(),
        }),
    }
}

/// The start of the line holding `at` when only blanks precede it there, else `at`.
fn line_start(text: &str, at: usize) -> usize {
    let s = text[..at].rfind('\n').map_or(0, |k| k + 1);
    if text[s..at].trim().is_empty() { s } else { at }
}

/// `end` extended over the rest of its line when only blanks follow, and over one blank line.
fn line_end(text: &str, end: usize) -> usize {
    let mut e = end;
    for _ in 0..2 {
        let rest = &text[e..];
        let eol = rest.find('\n').map_or(rest.len(), |k| k + 1);
        if rest[..eol].trim().is_empty() && eol > 0 {
            e += eol;
        } else {
            break;
        }
    }
    e
}

/// The bytes a unit occupies, whole lines where it has them to itself. Refused for a unit whose
/// descendants sit in other files (a section that `\input`s).
fn unit_range(
    docs: &[Document],
    texts: &BTreeMap<PathBuf, String>,
    at: UnitAt,
) -> Result<(PathBuf, usize, usize)> {
    let doc = &docs[at.0];
    let unit = &doc.units[at.1];
    if unit.parent.is_none() {
        return Err(EditError::Invalid(
            "the whole document cannot be moved or deleted".into(),
        ));
    }
    let mut inside = vec![false; doc.units.len()];
    inside[at.1] = true;
    for (i, u) in doc.units.iter().enumerate().skip(at.1 + 1) {
        match u.parent {
            Some(p) if inside[p] => {
                inside[i] = true;
                if u.file != unit.file {
                    return Err(EditError::Invalid(format!(
                        "{} spans {} too; edit that file's units separately",
                        unit.id, doc.files[u.file]
                    )));
                }
            }
            _ => {}
        }
    }
    let path = PathBuf::from(&doc.files[unit.file]);
    let text = texts
        .get(&path)
        .ok_or_else(|| EditError::NotRead(path.to_path_buf()))?;
    let end = unit.end_byte.min(text.len());
    Ok((
        path,
        line_start(text, unit.start_byte.min(end)),
        line_end(text, end),
    ))
}

/// The first stage of `op`: the text inserted, cut, or cut and pasted.
pub fn structural(
    docs: &[Document],
    texts: &BTreeMap<PathBuf, String>,
    op: &Op,
) -> Result<Vec<Replacement>> {
    let insert_at = |before: UnitAt| -> Result<(PathBuf, usize)> {
        let doc = &docs[before.0];
        let unit = &doc.units[before.1];
        let path = PathBuf::from(&doc.files[unit.file]);
        let text = texts
            .get(&path)
            .ok_or_else(|| EditError::NotRead(path.to_path_buf()))?;
        Ok((
            path.clone(),
            line_start(text, unit.start_byte.min(text.len())),
        ))
    };
    Ok(match op {
        Op::Insert { before, text } => {
            let (path, at) = insert_at(*before)?;
            let mut text = text.trim_end().to_string();
            text.push_str("\n\n");
            vec![Replacement {
                path,
                start: at,
                end: at,
                text,
                moved_from: None,
            }]
        }
        Op::Delete { unit } => {
            let (path, start, end) = unit_range(docs, texts, *unit)?;
            vec![Replacement {
                path,
                start,
                end,
                text: String::new(),
                moved_from: None,
            }]
        }
        Op::Move { unit, before } => {
            let (path, start, end) = unit_range(docs, texts, *unit)?;
            let (to_path, at) = insert_at(*before)?;
            if to_path != path {
                return Err(EditError::Invalid(format!(
                    "a unit moves within its file only ({} → {})",
                    path.display(),
                    to_path.display()
                )));
            }
            if at >= start && at < end {
                return Err(EditError::Invalid("a unit cannot move into itself".into()));
            }
            let moved = texts[&path][start..end].to_string();
            vec![
                Replacement {
                    path: path.clone(),
                    start,
                    end,
                    text: String::new(),
                    moved_from: None,
                },
                Replacement {
                    path,
                    start: at,
                    end: at,
                    text: moved,
                    moved_from: Some(start),
                },
            ]
        }
    })
}

/// The second stage: every prose number ("Section 3.2", "Figure 4") whose target's printed
/// number changed with `stage1` is rewritten to the new number. `after` is the parse of the
/// texts after stage 1, `after_texts` those texts (by the files' original paths); the
/// replacements are relative to them. References to deleted units are left for verification
/// to report.
pub fn renumber(
    before: &[Document],
    stage1: &[Replacement],
    after: &[Document],
    after_texts: &BTreeMap<PathBuf, String>,
) -> Result<Vec<Replacement>> {
    let stages = [stage1.to_vec()];
    let map = StageMap::new(&stages);
    let units = map.units(before, after);
    let mut out = Vec::new();
    for d in before {
        for m in &d.mentions {
            let (MentionKind::Prose, TargetKey::Number { number, .. }) = (&m.kind, &m.key) else {
                continue;
            };
            let Resolution::Resolved { doc, unit } = &m.resolution else {
                continue;
            };
            let Some((td, old_unit)) = before
                .iter()
                .find(|x| &x.id == doc)
                .and_then(|x| Some((x, x.units.iter().position(|u| &u.id == unit)?)))
            else {
                continue;
            };
            let Some(Some(new_pos)) = units.get(&(td.id.as_str(), old_unit)) else {
                continue;
            };
            let Some(new_unit) = after
                .iter()
                .find(|x| x.id == td.id)
                .and_then(|x| x.units.get(*new_pos))
            else {
                continue;
            };
            // The same line of a multi-line display keeps its place among the numbers.
            let old = &td.units[old_unit];
            let line = old.numbers.iter().position(|n| n == number);
            let new_number = match line {
                Some(k) if new_unit.numbers.len() == old.numbers.len() => {
                    new_unit.numbers[k].clone()
                }
                _ => match &new_unit.number {
                    Some(n) => n.clone(),
                    None => continue,
                },
            };
            if &new_number == number {
                continue;
            }
            let path = d.files.get(m.file).cloned().unwrap_or_default();
            let Mapped::At(start) = map.map(&path, m.start_byte) else {
                continue;
            };
            let path = PathBuf::from(path);
            let text = after_texts
                .get(&path)
                .ok_or_else(|| EditError::NotRead(path.to_path_buf()))?;
            let len = m.end_byte - m.start_byte;
            let span = text.get(start..start + len).unwrap_or("");
            let at = span.rmatch_indices(number.as_str()).find(|(k, _)| {
                let before_ok = !span[..*k]
                    .chars()
                    .next_back()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-');
                let after_ok = !span[k + number.len()..].chars().next().is_some_and(|c| {
                    c.is_ascii_digit()
                        || c == '.'
                            && span[k + number.len() + 1..]
                                .starts_with(|c: char| c.is_ascii_digit())
                });
                before_ok && after_ok
            });
            let Some((k, _)) = at else {
                return Err(EditError::Invalid(format!(
                    "{}:{}: cannot find the number {number} in `{}`",
                    path.display(),
                    m.line,
                    m.text
                )));
            };
            out.push(Replacement {
                path,
                start: start + k,
                end: start + k + number.len(),
                text: new_number,
                moved_from: None,
            });
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}
