//! Renaming a LaTeX label or a Markdown anchor together with every referrer.

use crate::{EditError, Replacement, Result};
use ledger_core::{Document, Format, MentionKind, Resolution, TargetKey, UnitKind};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Whether `label` can be a LaTeX label key.
fn valid_label(label: &str) -> bool {
    !label.is_empty()
        && !label
            .chars()
            .any(|c| c.is_whitespace() || matches!(c, '{' | '}' | ',' | '#' | '%' | '\\'))
}

/// The byte ranges of `key` as a whole key (bounded by braces, commas or spaces) in `text`.
fn key_ranges(text: &str, key: &str, from: usize, to: usize) -> Vec<(usize, usize)> {
    let window = &text[from..to];
    let is_bound =
        |c: Option<char>| c.is_none_or(|c| matches!(c, '{' | '}' | ',' | ' ' | '\t' | '\n' | '\r'));
    window
        .match_indices(key)
        .filter(|(i, _)| {
            is_bound(window[..*i].chars().next_back())
                && is_bound(window[i + key.len()..].chars().next())
        })
        .map(|(i, _)| (from + i, from + i + key.len()))
        .collect()
}

/// The replacements that rename label `old` to `new` together with every referrer. `texts`
/// holds every file of `docs` as read.
///
/// A LaTeX label: its `\label{…}` definition and every mention of every kind that resolves to
/// it (`\ref`, `\eqref`, `\cref` lists, `\uses`, user macros wrapping them,
/// `\externaldocument`-prefixed keys in other documents). A Markdown anchor (`anchor` or
/// `file.md#anchor`): its `{#id}` attribute or `<a id>`, or, for a heading's generated slug, a
/// new `{#new}` attribute on the heading; and every link to it from any file.
pub fn relabel(
    docs: &[Document],
    texts: &BTreeMap<PathBuf, String>,
    old: &str,
    new: &str,
) -> Result<Vec<Replacement>> {
    let latex = docs.iter().any(|d| {
        d.format == Some(Format::Latex)
            && d.units
                .iter()
                .any(|u| u.labels.iter().any(|(l, _)| l == old))
    });
    if !latex {
        return relabel_anchor(docs, texts, old, new);
    }
    if !valid_label(new) {
        return Err(EditError::Invalid(format!(
            "`{new}` cannot be a LaTeX label"
        )));
    }
    let owners: Vec<&Document> = docs
        .iter()
        .filter(|d| {
            d.units
                .iter()
                .any(|u| u.labels.iter().any(|(l, _)| l == old))
        })
        .collect();
    if owners.is_empty() {
        return Err(EditError::LabelNotFound(format!(
            "no \\label{{{old}}} in these documents"
        )));
    }
    if let Some(owner) = owners.iter().find(|d| {
        d.units
            .iter()
            .any(|u| u.labels.iter().any(|(l, _)| l == new))
    }) {
        return Err(EditError::LabelTaken(format!(
            "\\label{{{new}}} already exists in {}",
            owner.id
        )));
    }
    let text_of = |path: &Path| {
        texts
            .get(path)
            .ok_or_else(|| EditError::NotRead(path.to_path_buf()))
    };
    // The definition: `\label{old}` in the owners' files. Documents that include the same
    // file (a blueprint's `print.tex` and `web.tex`) share one definition: one label.
    let definition = regex::Regex::new(&format!(r"\\label\s*\{{\s*({})\s*\}}", regex::escape(old)))
        .map_err(|e| EditError::Invalid(e.to_string()))?;
    let mut sites: Vec<Vec<Replacement>> = Vec::new();
    for owner in &owners {
        let mut found = Vec::new();
        for f in &owner.files {
            let path = PathBuf::from(f);
            let text = text_of(&path)?;
            for c in definition.captures_iter(text) {
                if let Some(m) = c.get(1) {
                    found.push(Replacement {
                        path: path.clone(),
                        start: m.start(),
                        end: m.end(),
                        text: new.to_string(),
                        moved_from: None,
                    });
                }
            }
        }
        found.sort();
        found.dedup();
        if found.is_empty() {
            return Err(EditError::Invalid(format!(
                "\\label{{{old}}} is known but not written literally in {} (made by a macro?)",
                owner.id
            )));
        }
        sites.push(found);
    }
    if sites.windows(2).any(|w| w[0] != w[1]) {
        return Err(EditError::Invalid(format!(
            "\\label{{{old}}} is defined in several documents, in different places: {}",
            owners
                .iter()
                .map(|d| d.id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let owner_ids: Vec<&str> = owners.iter().map(|d| d.id.as_str()).collect();
    let mut out = sites.swap_remove(0);
    // Every mention resolving to the owner's unit through key `old` (or `prefix + old`).
    for doc in docs {
        for m in &doc.mentions {
            let TargetKey::Label(key) = &m.key else {
                continue;
            };
            let Some(prefix) = key.strip_suffix(old) else {
                continue;
            };
            let to_owner = match &m.resolution {
                Resolution::Resolved { doc: d, .. } => owner_ids.contains(&d.as_str()),
                _ => false,
            };
            if !to_owner {
                continue;
            }
            let path = PathBuf::from(doc.files.get(m.file).cloned().unwrap_or_default());
            let text = text_of(&path)?;
            let ranges = key_ranges(text, key, m.start_byte, m.end_byte.min(text.len()));
            let [(start, end)] = ranges.as_slice() else {
                return Err(EditError::Invalid(format!(
                    "{}:{}: cannot locate `{key}` in `{}` exactly once",
                    path.display(),
                    m.line,
                    m.text
                )));
            };
            out.push(Replacement {
                path,
                start: *start,
                end: *end,
                text: format!("{prefix}{new}"),
                moved_from: None,
            });
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// Whether `anchor` can be a Markdown anchor.
fn valid_anchor(anchor: &str) -> bool {
    !anchor.is_empty()
        && anchor
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'))
}

/// Renames Markdown anchor `old` (`anchor` or `file.md#anchor`); see [`relabel`].
fn relabel_anchor(
    docs: &[Document],
    texts: &BTreeMap<PathBuf, String>,
    old: &str,
    new: &str,
) -> Result<Vec<Replacement>> {
    let (file_part, old_anchor) = match old.rsplit_once('#') {
        Some((f, a)) => (Some(f), a),
        None => (None, old),
    };
    let new = new.trim_start_matches('#');
    if !valid_anchor(new) {
        return Err(EditError::Invalid(format!("`{new}` cannot be an anchor")));
    }
    // Every Markdown unit named `<file>#old`.
    let mut owners = Vec::new();
    for (d, doc) in docs.iter().enumerate() {
        if doc.format == Some(Format::Latex) {
            continue;
        }
        for (u, unit) in doc.units.iter().enumerate() {
            for (label, _) in &unit.labels {
                if let Some((f, a)) = label.rsplit_once('#')
                    && a == old_anchor
                    && file_part.is_none_or(|want| f == want || f.ends_with(&format!("/{want}")))
                {
                    owners.push((d, u, f.to_string()));
                }
            }
        }
    }
    let (d, u, rel) = match owners.as_slice() {
        [one] => one.clone(),
        [] => {
            return Err(EditError::LabelNotFound(format!(
                "no LaTeX label or Markdown anchor `{old}` in these documents"
            )));
        }
        many => {
            return Err(EditError::Invalid(format!(
                "anchor `{old}` is defined in several places ({}); name it as file.md#{old_anchor}",
                many.iter()
                    .map(|(d, _, f)| format!("{}:{f}", docs[*d].id))
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
    };
    let doc = &docs[d];
    let unit = &doc.units[u];
    let taken = format!("{rel}#{new}");
    if doc
        .units
        .iter()
        .any(|x| x.labels.iter().any(|(l, _)| *l == taken))
    {
        return Err(EditError::LabelTaken(format!(
            "anchor `{new}` already exists in {rel}"
        )));
    }
    let path = PathBuf::from(doc.files.get(unit.file).cloned().unwrap_or_default());
    let text = texts
        .get(&path)
        .ok_or_else(|| EditError::NotRead(path.to_path_buf()))?;
    let mut out = vec![anchor_definition(&path, text, unit, old_anchor, new)?];
    out.extend(anchor_links(docs, texts, &doc.id, u, old_anchor, new)?);
    out.sort();
    out.dedup();
    Ok(out)
}

/// Where anchor `old` of `unit` is written, replaced by `new`: a `{#old}` attribute or an
/// `<a id="old">` inside the unit, else (a heading's generated slug) a new `{#new}` attribute
/// at the end of the heading line.
fn anchor_definition(
    path: &Path,
    text: &str,
    unit: &ledger_core::Unit,
    old: &str,
    new: &str,
) -> Result<Replacement> {
    let start = unit.start_byte.min(text.len());
    let line_end = text[start..].find('\n').map_or(text.len(), |k| start + k);
    let attribute = regex::Regex::new(&format!(r"\{{\s*#({})(?:\s|\}})", regex::escape(old)))
        .map_err(|e| EditError::Invalid(e.to_string()))?;
    let html = regex::Regex::new(&format!(
        r#"(?:id|name)\s*=\s*["']({})["']"#,
        regex::escape(old)
    ))
    .map_err(|e| EditError::Invalid(e.to_string()))?;
    let heading = unit.kind == UnitKind::Section;
    // An attribute on the heading line, or an HTML anchor just before or inside the unit.
    let search_from = text[..start].rfind("\n\n").map_or(0, |k| k + 2);
    let search_to = if heading {
        line_end
    } else {
        unit.end_byte.min(text.len())
    };
    let found = attribute
        .captures(&text[start..line_end])
        .and_then(|c| c.get(1))
        .map(|m| (start + m.start(), start + m.end()))
        .or_else(|| {
            html.captures(&text[search_from..search_to])
                .and_then(|c| c.get(1))
                .map(|m| (search_from + m.start(), search_from + m.end()))
        });
    if let Some((s, e)) = found {
        return Ok(Replacement {
            path: path.to_path_buf(),
            start: s,
            end: e,
            text: new.to_string(),
            moved_from: None,
        });
    }
    if !heading {
        return Err(EditError::Invalid(format!(
            "{}:{}: anchor `{old}` is not written literally",
            path.display(),
            unit.line
        )));
    }
    // A generated slug: give the heading an explicit id instead.
    let at = start + text[start..line_end].trim_end().len();
    Ok(Replacement {
        path: path.to_path_buf(),
        start: at,
        end: at,
        text: format!(" {{#{new}}}"),
        moved_from: None,
    })
}

/// The replacements that point every Markdown link to anchor `old` of unit `unit` of document
/// `doc_id` at `new` instead (`[x](file.md#old)` → `[x](file.md#new)`).
// The documents and texts, the anchor's owner (document and unit) and both names: each
// distinct, and the pipeline's anchor update calls it with all of them.
#[allow(clippy::too_many_arguments)]
pub fn anchor_links(
    docs: &[Document],
    texts: &BTreeMap<PathBuf, String>,
    doc_id: &str,
    unit: usize,
    old: &str,
    new: &str,
) -> Result<Vec<Replacement>> {
    let Some(owner) = docs.iter().find(|d| d.id == doc_id) else {
        return Ok(Vec::new());
    };
    let Some(unit_id) = owner.units.get(unit).map(|u| u.id.as_str()) else {
        return Ok(Vec::new());
    };
    let suffix = format!("#{old}");
    let mut out = Vec::new();
    for doc in docs {
        for m in &doc.mentions {
            let TargetKey::Anchor { anchor, .. } = &m.key else {
                continue;
            };
            let to_unit = matches!(&m.resolution,
                Resolution::Resolved { doc: d, unit: u } if d == doc_id && u == unit_id);
            if m.kind != MentionKind::Link || anchor != old || !to_unit {
                continue;
            }
            let path = PathBuf::from(doc.files.get(m.file).cloned().unwrap_or_default());
            let text = texts
                .get(&path)
                .ok_or_else(|| EditError::NotRead(path.to_path_buf()))?;
            let span = text.get(m.start_byte..m.end_byte).unwrap_or("");
            // Inline `(file.md#old)`, else a reference link's definition `[label]: file.md#old`.
            let at = match span.rfind(&suffix) {
                Some(k) => Some(m.start_byte + k),
                None => reference_definition(text, m.start_byte, &suffix),
            };
            let Some(at) = at else {
                return Err(EditError::Invalid(format!(
                    "{}:{}: cannot locate `#{old}` in `{}`",
                    path.display(),
                    m.line,
                    m.text
                )));
            };
            out.push(Replacement {
                path,
                start: at + 1,
                end: at + suffix.len(),
                text: new.to_string(),
                moved_from: None,
            });
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// Where `#anchor` (`suffix`) sits in the definition of the reference link that starts at byte
/// `link` of `text`: the byte of its `#`.
fn reference_definition(text: &str, link: usize, suffix: &str) -> Option<usize> {
    let span = ledger_parse::reference_definition(text, link)?;
    Some(span.start + text.get(span)?.rfind(suffix)?)
}
