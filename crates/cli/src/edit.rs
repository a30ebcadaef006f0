//! `ledger relabel` and `ledger undo`: deterministic edits, verified on a shadow copy of the
//! inputs before anything is written, then committed atomically with an undo record.

use crate::config::IndexConfig;
use anyhow::{Context, Result, bail};
use ledger_core::{Document, Resolution};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Where the undo records of edits under `paths` live: `.ledger-undo/` in the first input's
/// folder.
pub fn undo_root(paths: &[PathBuf]) -> Result<PathBuf> {
    let first = paths.first().context("no input")?;
    let dir = if first.is_dir() {
        first.clone()
    } else {
        first.parent().map(Path::to_path_buf).unwrap_or_default()
    };
    Ok(dir.join(".ledger-undo"))
}

/// A mention's unit position and the (document, unit position) it resolves to, if it does.
type Resolved = (usize, Option<(String, usize)>);

/// Per document, per mention: where it is and what it resolves to (`None`: broken or
/// ambiguous). Unit ids may change with an edit; positions do not.
fn resolutions(docs: &[Document]) -> BTreeMap<String, Vec<Resolved>> {
    let indexes: BTreeMap<&str, std::collections::HashMap<&str, usize>> = docs
        .iter()
        .map(|d| (d.id.as_str(), d.unit_indices()))
        .collect();
    docs.iter()
        .map(|d| {
            let rows = d
                .mentions
                .iter()
                .map(|m| {
                    let target = match &m.resolution {
                        Resolution::Resolved { doc, unit } => indexes
                            .get(doc.as_str())
                            .and_then(|ix| ix.get(unit.as_str()))
                            .map(|&u| (doc.clone(), u)),
                        _ => None,
                    };
                    (m.unit, target)
                })
                .collect();
            (d.id.clone(), rows)
        })
        .collect()
}

/// Parses `paths` with `edited` texts in place of the files they name, on a copy of the inputs
/// in a temporary folder (the originals are not touched), and checks that every reference
/// resolves where it did before. Returns the findings (empty: verified).
fn verify_on_shadow(
    paths: &[PathBuf],
    config: &IndexConfig,
    before: &[Document],
    edited: &BTreeMap<PathBuf, String>,
) -> Result<Vec<String>> {
    let shadow = tempfile::tempdir().context("temporary folder")?;
    let mut shadow_inputs = Vec::new();
    let mut roots = Vec::new();
    for (k, p) in paths.iter().enumerate() {
        let real = std::fs::canonicalize(p).with_context(|| format!("input {}", p.display()))?;
        let (root, input) = if real.is_dir() {
            (real.clone(), real.clone())
        } else {
            (
                real.parent().map(Path::to_path_buf).unwrap_or_default(),
                real.clone(),
            )
        };
        let name = root
            .file_name()
            .map(|n| n.to_os_string())
            .unwrap_or_default();
        let copy = shadow.path().join(k.to_string()).join(&name);
        copy_dir(&root, &copy)?;
        shadow_inputs.push(copy.join(input.strip_prefix(&root).unwrap_or(Path::new(""))));
        roots.push((root, copy));
    }
    for (path, text) in edited {
        let real = std::fs::canonicalize(path)?;
        let Some((root, copy)) = roots.iter().find(|(r, _)| real.starts_with(r)) else {
            bail!("{} is outside the inputs", path.display());
        };
        let target = copy.join(real.strip_prefix(root).unwrap_or(&real));
        std::fs::write(&target, text).with_context(|| format!("writing {}", target.display()))?;
    }
    let mut config = config.clone();
    config.count_tokens = false;
    config.progress = false;
    let mut after = crate::index::load(&shadow_inputs, &config)?.docs;
    ledger_parse::resolve_corpus(&mut after);
    let (old, new) = (resolutions(before), resolutions(&after));
    let mut findings = Vec::new();
    for d in before {
        let (Some(o), Some(n)) = (old.get(&d.id), new.get(&d.id)) else {
            findings.push(format!("{}: the document is gone after the edit", d.id));
            continue;
        };
        if o.len() != n.len() {
            findings.push(format!(
                "{}: {} references before the edit, {} after",
                d.id,
                o.len(),
                n.len()
            ));
            continue;
        }
        for (k, (a, b)) in o.iter().zip(n).enumerate() {
            if a != b {
                let m = &d.mentions[k];
                let path = d.files.get(m.file).map_or("", String::as_str);
                findings.push(format!(
                    "{path}:{}:{}: `{}` no longer resolves to the same unit",
                    m.line, m.col, m.text
                ));
            }
        }
    }
    Ok(findings)
}

fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from)?.flatten() {
        let p = e.path();
        let name = e.file_name();
        if name == ".ledger-undo" || name == ".git" {
            continue;
        }
        if p.is_dir() {
            copy_dir(&p, &to.join(&name))?;
        } else {
            std::fs::copy(&p, to.join(&name))?;
        }
    }
    Ok(())
}

/// `ledger relabel OLD NEW PATH...`: prints the unified diff; unless `dry_run`, verifies the
/// result on a shadow copy and commits it atomically. Returns whether the edit was refused.
pub fn relabel(
    paths: &[PathBuf],
    config: &IndexConfig,
    old: &str,
    new: &str,
    dry_run: bool,
) -> Result<bool> {
    let mut config = config.clone();
    config.count_tokens = false;
    config.progress = false;
    let mut docs = crate::index::load_inputs(paths, &config)?.docs;
    ledger_parse::resolve_corpus(&mut docs);
    let texts: BTreeMap<PathBuf, String> = docs
        .iter()
        .flat_map(|d| &d.files)
        .filter_map(|f| Some((PathBuf::from(f), std::fs::read_to_string(f).ok()?)))
        .collect();
    let edits = ledger_edit::relabel(&docs, &texts, old, new)?;
    let edited = ledger_edit::apply(&texts, &edits)?;
    for (path, text) in &edited {
        print!("{}", ledger_edit::diff(path, &texts[path], text));
    }
    eprintln!(
        "relabel {old} -> {new}: {} replacements in {} files",
        edits.len(),
        edited.len()
    );
    if dry_run {
        return Ok(false);
    }
    let findings = verify_on_shadow(paths, &config, &docs, &edited)?;
    if !findings.is_empty() {
        for f in &findings {
            eprintln!("{f}");
        }
        eprintln!("verification failed: nothing was written");
        return Ok(true);
    }
    let changes = edited
        .into_iter()
        .map(|(p, new)| {
            let old = texts[&p].clone();
            (p, (old, new))
        })
        .collect();
    let record = ledger_edit::commit(&changes, &undo_root(paths)?)?;
    eprintln!(
        "written; `ledger undo {}` reverts it (record {})",
        paths[0].display(),
        record.display()
    );
    Ok(false)
}

/// `ledger undo PATH`: reverts the last edit made under PATH.
pub fn undo(path: &Path) -> Result<()> {
    let root = undo_root(&[path.to_path_buf()])?;
    let Some(record) = ledger_edit::last_record(&root) else {
        bail!("no edit to undo under {}", root.display());
    };
    let restored = ledger_edit::undo(&record)?;
    for p in &restored {
        println!("restored {}", p.display());
    }
    Ok(())
}
