//! The edit commands: `relabel`, `rename-term`, `insert` / `delete` / `move` (deterministic),
//! `edit` (LLM, one repair round) and `undo`. Every edit is applied in memory, verified on a
//! shadow copy of the inputs before anything is written, then committed atomically with an undo
//! record.

use crate::config::IndexConfig;
use anyhow::{Context, Result, bail};
use ledger_core::Document;
use ledger_edit::{Finding, FindingKind, Replacement};
use ledger_parse::regions::RegionKind;
use std::collections::{BTreeMap, BTreeSet};
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

/// The documents under the inputs as parsed now, with the text of every file.
pub struct Sources {
    /// The documents, cross-document references resolved.
    pub docs: Vec<Document>,
    /// Every file of every document, as read.
    pub texts: BTreeMap<PathBuf, String>,
}

/// Parses `paths` and reads their files.
pub fn read_sources(paths: &[PathBuf], config: &IndexConfig) -> Result<Sources> {
    let mut config = config.clone();
    config.count_tokens = false;
    config.progress = false;
    let mut docs = crate::index::load_inputs(paths, &config)?.docs;
    ledger_parse::resolve_corpus(&mut docs);
    let mut texts = BTreeMap::new();
    for f in docs.iter().flat_map(|d| &d.files) {
        let text = std::fs::read_to_string(f).with_context(|| format!("reading {f}"))?;
        texts.insert(PathBuf::from(f), text);
    }
    Ok(Sources { docs, texts })
}

/// The documents parsed from the inputs with edited texts in place of the files they name, from
/// a copy in a temporary folder (the originals are not touched); the copy lives as long as this.
pub struct Shadow {
    _dir: tempfile::TempDir,
    /// The documents of the copy (same ids, same file order; paths in the copy).
    pub docs: Vec<Document>,
}

impl Shadow {
    /// Copies the inputs, writes `edited` over the copies and parses them.
    pub fn parse(
        paths: &[PathBuf],
        config: &IndexConfig,
        edited: &BTreeMap<PathBuf, String>,
    ) -> Result<Shadow> {
        let dir = tempfile::tempdir().context("temporary folder")?;
        let mut shadow_inputs = Vec::new();
        let mut roots = Vec::new();
        for (k, p) in paths.iter().enumerate() {
            let real =
                std::fs::canonicalize(p).with_context(|| format!("input {}", p.display()))?;
            let root = if real.is_dir() {
                real.clone()
            } else {
                real.parent().map(Path::to_path_buf).unwrap_or_default()
            };
            let name = root
                .file_name()
                .map(|n| n.to_os_string())
                .unwrap_or_default();
            let copy = dir.path().join(k.to_string()).join(&name);
            copy_dir(&root, &copy)?;
            shadow_inputs.push(copy.join(real.strip_prefix(&root).unwrap_or(Path::new(""))));
            roots.push((root, copy));
        }
        for (path, text) in edited {
            let real = std::fs::canonicalize(path)?;
            let Some((root, copy)) = roots.iter().find(|(r, _)| real.starts_with(r)) else {
                bail!("{} is outside the inputs", path.display());
            };
            let target = copy.join(real.strip_prefix(root).unwrap_or(&real));
            std::fs::write(&target, text)
                .with_context(|| format!("writing {}", target.display()))?;
        }
        let mut config = config.clone();
        config.count_tokens = false;
        config.progress = false;
        let mut docs = crate::index::load(&shadow_inputs, &config)?.docs;
        ledger_parse::resolve_corpus(&mut docs);
        Ok(Shadow { _dir: dir, docs })
    }

    /// Verifies the edit that produced this copy against the sources it was made from.
    pub fn verify(&self, sources: &Sources, stages: &[Vec<Replacement>]) -> Vec<Finding> {
        let read = |d: &Document, file: usize| {
            d.files
                .get(file)
                .and_then(|f| std::fs::read_to_string(f).ok())
        };
        ledger_edit::verify(&sources.docs, &sources.texts, &self.docs, &read, stages)
    }
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

/// `texts` with `edits` applied, every file included.
fn overlay(
    texts: &BTreeMap<PathBuf, String>,
    edits: &[Replacement],
) -> Result<BTreeMap<PathBuf, String>> {
    let mut out = texts.clone();
    out.extend(ledger_edit::apply(texts, edits)?);
    Ok(out)
}

/// An edit applied in memory and verified on a shadow copy.
pub struct Checked {
    /// The files it changes, with their new texts.
    pub edited: BTreeMap<PathBuf, String>,
    /// What verification found.
    pub findings: Vec<Finding>,
    /// The replacements, in stages (each relative to the texts the previous one produced).
    pub stages: Vec<Vec<Replacement>>,
}

/// Applies the edit `stages` (each relative to the texts the previous one produced) in memory
/// and verifies the result on a shadow copy, adding the `extra` findings.
pub fn check(
    paths: &[PathBuf],
    config: &IndexConfig,
    sources: &Sources,
    stages: &[Vec<Replacement>],
    extra: impl FnOnce(&BTreeMap<PathBuf, String>, &Shadow) -> Vec<Finding>,
) -> Result<Checked> {
    let mut now = sources.texts.clone();
    for stage in stages {
        now = overlay(&now, stage)?;
    }
    let edited: BTreeMap<PathBuf, String> = now
        .into_iter()
        .filter(|(p, t)| sources.texts.get(p) != Some(t))
        .collect();
    let shadow = Shadow::parse(paths, config, &edited)?;
    let mut findings = shadow.verify(sources, stages);
    findings.extend(extra(&edited, &shadow));
    Ok(Checked {
        edited,
        findings,
        stages: stages.to_vec(),
    })
}

/// Prints the diff and the findings of a checked edit; unless `dry_run` or a finding of a kind
/// not in `allowed`, commits it atomically with an undo record. Returns whether it was refused.
pub fn write_checked(
    paths: &[PathBuf],
    sources: &Sources,
    checked: Checked,
    dry_run: bool,
    allowed: &[FindingKind],
) -> Result<bool> {
    for (path, text) in &checked.edited {
        print!("{}", ledger_edit::diff(path, &sources.texts[path], text));
    }
    for f in &checked.findings {
        eprintln!("{f}");
    }
    let blocking = checked
        .findings
        .iter()
        .filter(|f| !allowed.contains(&f.kind))
        .count();
    if blocking > 0 {
        eprintln!("verification failed ({blocking} findings): nothing was written");
        return Ok(true);
    }
    if dry_run {
        eprintln!("verified; dry run: nothing was written");
        return Ok(false);
    }
    if checked.edited.is_empty() {
        eprintln!("nothing to change");
        return Ok(false);
    }
    let changes = checked
        .edited
        .into_iter()
        .map(|(p, new)| {
            let old = sources.texts[&p].clone();
            (p, (old, new))
        })
        .collect();
    let record = ledger_edit::commit(&changes, &undo_root(paths)?)?;
    eprintln!(
        "verified and written; `ledger undo {}` reverts it (record {})",
        paths[0].display(),
        record.display()
    );
    Ok(false)
}

/// `ledger relabel OLD NEW PATH...`: renames a LaTeX label or Markdown anchor with every
/// referrer. Returns whether the edit was refused.
pub fn relabel(
    paths: &[PathBuf],
    config: &IndexConfig,
    old: &str,
    new: &str,
    dry_run: bool,
) -> Result<bool> {
    let sources = read_sources(paths, config)?;
    let (checked, replacements) = plan_relabel(paths, config, &sources, old, new)?;
    let files: BTreeSet<&Path> = checked.edited.keys().map(PathBuf::as_path).collect();
    eprintln!(
        "relabel {old} -> {new}: {replacements} replacements in {} files",
        files.len()
    );
    write_checked(paths, &sources, checked, dry_run, &[])
}

/// The relabel edit applied in memory and verified, with its number of replacements.
pub fn plan_relabel(
    paths: &[PathBuf],
    config: &IndexConfig,
    sources: &Sources,
    old: &str,
    new: &str,
) -> Result<(Checked, usize)> {
    let edits = ledger_edit::relabel(&sources.docs, &sources.texts, old, new)?;
    let n = edits.len();
    Ok((
        check(paths, config, sources, &[edits], |_, _| Vec::new())?,
        n,
    ))
}

/// The links to Markdown headings whose generated anchors an edit changes, pointed at the new
/// anchors: units are compared position by position (the edit must not add or remove units).
fn moved_anchors(sources: &Sources, after: &[Document]) -> Result<Vec<Replacement>> {
    let mut out = Vec::new();
    for d in &sources.docs {
        let Some(a) = after.iter().find(|a| a.id == d.id) else {
            continue;
        };
        if d.format == Some(ledger_core::Format::Latex) || a.units.len() != d.units.len() {
            continue;
        }
        for (i, (u, v)) in d.units.iter().zip(&a.units).enumerate() {
            for ((old, _), (new, _)) in u.labels.iter().zip(&v.labels) {
                let (Some((of, oa)), Some((nf, na))) = (old.rsplit_once('#'), new.rsplit_once('#'))
                else {
                    continue;
                };
                if of == nf && oa != na {
                    out.extend(ledger_edit::anchor_links(
                        &sources.docs,
                        &sources.texts,
                        &d.id,
                        i,
                        oa,
                        na,
                    )?);
                }
            }
        }
    }
    Ok(out)
}

/// `ledger rename-term OLD NEW PATH...`: renames a term in prose (and in the `include`d
/// regions), with links to renamed headings updated. Returns whether the edit was refused.
pub fn rename_term(
    paths: &[PathBuf],
    config: &IndexConfig,
    old: &str,
    new: &str,
    include: &[RegionKind],
    dry_run: bool,
) -> Result<bool> {
    let sources = read_sources(paths, config)?;
    let plan = plan_rename_term(paths, config, &sources, old, new, include)?;
    let files: BTreeSet<&Path> = plan.checked.edited.keys().map(PathBuf::as_path).collect();
    eprintln!(
        "rename-term `{old}` -> `{new}`: {} occurrences and {} links to renamed headings, in {} files",
        plan.occurrences,
        plan.links,
        files.len()
    );
    let mut reasons: BTreeMap<&str, usize> = BTreeMap::new();
    for l in &plan.left {
        *reasons.entry(l.reason.as_str()).or_default() += 1;
        if l.reason == "casing" || l.reason == "part of a name" {
            eprintln!(
                "{}:{}: left `{}` ({})",
                l.path.display(),
                l.line,
                l.text,
                l.reason
            );
        }
    }
    if !reasons.is_empty() {
        let list: Vec<String> = reasons.iter().map(|(r, n)| format!("{n} in {r}")).collect();
        eprintln!("left alone: {}", list.join(", "));
    }
    write_checked(paths, &sources, plan.checked, dry_run, &[])
}

/// A term rename applied in memory and verified.
pub struct RenamePlan {
    /// The edit and its findings.
    pub checked: Checked,
    /// Occurrences renamed.
    pub occurrences: usize,
    /// Links to renamed headings rewritten.
    pub links: usize,
    /// Occurrences left alone, with why.
    pub left: Vec<ledger_edit::Left>,
}

/// The rename with the links to renamed headings, applied in memory and verified; consistency:
/// no occurrence the rename should have reached may remain.
pub fn plan_rename_term(
    paths: &[PathBuf],
    config: &IndexConfig,
    sources: &Sources,
    old: &str,
    new: &str,
    include: &[RegionKind],
) -> Result<RenamePlan> {
    let found = ledger_edit::rename_term(&sources.docs, &sources.texts, old, new, include)?;
    let mut edits = found.replacements.clone();
    // Headings that change get new slugs: their links follow.
    let first = ledger_edit::apply(&sources.texts, &edits)?;
    let links = moved_anchors(sources, &Shadow::parse(paths, config, &first)?.docs)?;
    edits.extend(links.iter().cloned());
    edits.sort();
    edits.dedup();
    let words = |t: &str| {
        format!(
            " {} ",
            t.split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .to_lowercase()
        )
    };
    let new_contains_old = words(new).contains(&words(old));
    let docs = &sources.docs;
    let checked = check(paths, config, sources, &[edits], |edited, _| {
        if new_contains_old {
            return Vec::new();
        }
        let mut texts = sources.texts.clone();
        texts.extend(edited.iter().map(|(p, t)| (p.clone(), t.clone())));
        match ledger_edit::rename_term(docs, &texts, old, new, include) {
            Ok(again) => again
                .replacements
                .iter()
                .map(|r| Finding {
                    kind: FindingKind::Consistency,
                    location: r.path.display().to_string(),
                    message: format!("`{old}` is still there at byte {}", r.start),
                })
                .collect(),
            Err(e) => vec![Finding {
                kind: FindingKind::Consistency,
                location: String::new(),
                message: e.to_string(),
            }],
        }
    })?;
    Ok(RenamePlan {
        checked,
        occurrences: found.replacements.len(),
        links: links.len(),
        left: found.left,
    })
}

/// A structural edit named on the command line.
pub enum Structural<'a> {
    /// Insert `text` before unit `before`.
    Insert {
        /// The unit the text goes before.
        before: &'a str,
        /// The source text.
        text: String,
    },
    /// Delete `unit`.
    Delete {
        /// The unit.
        unit: &'a str,
    },
    /// Move `unit` before `before`.
    Move {
        /// The unit moved.
        unit: &'a str,
        /// The unit it goes before.
        before: &'a str,
    },
}

/// `ledger insert`, `ledger delete`, `ledger move`: the structural edit, then every prose number
/// that shifted rewritten, verified (references to a deleted unit are reported and stop the
/// edit unless `force`). Returns whether the edit was refused.
pub fn structural(
    paths: &[PathBuf],
    config: &IndexConfig,
    doc: Option<&str>,
    edit: Structural,
    dry_run: bool,
    force: bool,
) -> Result<bool> {
    let sources = read_sources(paths, config)?;
    let find = |name: &str| ledger_edit::find_unit(&sources.docs, doc, name);
    let op = match edit {
        Structural::Insert { before, text } => ledger_edit::Op::Insert {
            before: find(before)?,
            text,
        },
        Structural::Delete { unit } => ledger_edit::Op::Delete { unit: find(unit)? },
        Structural::Move { unit, before } => ledger_edit::Op::Move {
            unit: find(unit)?,
            before: find(before)?,
        },
    };
    let plan = plan_structural(paths, config, &sources, &op)?;
    eprintln!("{} prose numbers rewritten", plan.renumbered);
    let allowed: &[FindingKind] = if force {
        &[FindingKind::DeletedTarget]
    } else {
        &[]
    };
    write_checked(paths, &sources, plan.checked, dry_run, allowed)
}

/// A structural edit applied in memory and verified.
pub struct StructuralPlan {
    /// The edit (stages: the cut and paste, then the prose numbers rewritten) and its findings.
    pub checked: Checked,
    /// Prose numbers rewritten.
    pub renumbered: usize,
}

/// The structural edit `op`, then every prose number that shifted rewritten, applied in memory
/// and verified.
pub fn plan_structural(
    paths: &[PathBuf],
    config: &IndexConfig,
    sources: &Sources,
    op: &ledger_edit::Op,
) -> Result<StructuralPlan> {
    let stage1 = ledger_edit::structural(&sources.docs, &sources.texts, op)?;
    let texts1 = overlay(&sources.texts, &stage1)?;
    let changed1: BTreeMap<PathBuf, String> = texts1
        .iter()
        .filter(|(p, t)| sources.texts.get(*p) != Some(*t))
        .map(|(p, t)| (p.clone(), t.clone()))
        .collect();
    let after1 = Shadow::parse(paths, config, &changed1)?;
    let stage2 = ledger_edit::renumber(&sources.docs, &stage1, &after1.docs, &texts1)?;
    let renumbered = stage2.len();
    let checked = check(paths, config, sources, &[stage1, stage2], |_, _| Vec::new())?;
    Ok(StructuralPlan {
        checked,
        renumbered,
    })
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

/// Semantic drift of the edited units: the cosine between each unit's text before and after
/// the edit, and between it and its context neighbours, with the graph's embedder. A unit whose
/// meaning moved far (cosine to its old text below 0.5, or to its neighbours down by more than
/// 0.15 on average) is flagged; drift is reported, not blocking.
fn drift(
    graph_path: &Path,
    embed: &crate::config::EmbedConfig,
    neighbours: &[(String, String)],
    sources: &Sources,
    shadow: &Shadow,
    edited: &[(String, String)],
) -> Vec<Finding> {
    let (embedder, semantic) = match crate::retrieval::graph_embedder(graph_path, embed) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("no drift check: {e}");
            return Vec::new();
        }
    };
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
    /// Verify only.
    pub dry_run: bool,
}

/// `ledger edit`: retrieval for the targets, the model's edits as structured output, applied in
/// memory and verified; on findings, one repair round with them; written only when verified.
/// Returns whether the edit was refused.
pub fn llm_edit(paths: &[PathBuf], config: &crate::config::Config, args: LlmEdit) -> Result<bool> {
    let sources = read_sources(paths, &config.index)?;
    let plan = plan_llm_edit(paths, config, &sources, &args)?;
    eprintln!(
        "context: {} units, {} tokens ({:.1}% of the document)",
        plan.context_units,
        plan.context_tokens,
        100.0 * plan.context_tokens as f64 / plan.document_tokens.max(1) as f64
    );
    if !plan.repaired.is_empty() {
        for f in &plan.repaired {
            eprintln!("{f}");
        }
        eprintln!("verification failed; the model was asked for one repair");
    }
    if !plan.note.is_empty() {
        eprintln!("model: {}", plan.note);
    }
    eprintln!(
        "{} requests, {} prompt + {} completion tokens",
        plan.requests, plan.prompt_tokens, plan.completion_tokens
    );
    write_checked(paths, &sources, plan.checked, args.dry_run, &LLM_ALLOWED)
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
    /// Requests sent and tokens used.
    pub requests: u64,
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
}

/// Retrieval for the targets, the model's edits as structured output, applied in memory and
/// verified; on blocking findings one repair round with them. Nothing is written.
pub fn plan_llm_edit(
    paths: &[PathBuf],
    config: &crate::config::Config,
    sources: &Sources,
    args: &LlmEdit,
) -> Result<LlmPlan> {
    let graph = crate::retrieval::load(args.graph)?;
    let ask = crate::retrieval::Ask {
        targets: args.targets,
        instruction: Some(args.instruction),
        doc: args.doc,
        budget: args.budget,
    };
    let context = crate::retrieval::retrieve(args.graph, &graph, &ask, config)?;
    let mut units = Vec::new();
    let mut spans = BTreeMap::new();
    let mut neighbours = Vec::new();
    for t in &context.units {
        let Some((path, s, e)) = unit_source(sources, &t.doc_id, &t.unit_id) else {
            bail!(
                "{}:{} is in the graph but not in the inputs: reindex them first",
                t.doc_id,
                t.unit_id
            );
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
    let client = crate::semantic::chat_client(&config.llm)?.context(
        "ledger edit needs an OpenAI-compatible endpoint: set llm.url and llm.model (LEDGER_LLM_URL, LEDGER_LLM_MODEL)",
    )?;
    let editor = ledger_llm::LlmEditor::new(client);
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
        let mut checked = check(paths, &config.index, sources, &[edits], |_, shadow| {
            drift(
                args.graph,
                &config.embed,
                &neighbours,
                sources,
                shadow,
                &edited_units,
            )
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
            context_units: context.units.len(),
            context_tokens: context.tokens,
            document_tokens: context.document_tokens,
            requests: usage.requests,
            prompt_tokens: usage.prompt_tokens,
            completion_tokens: usage.completion_tokens,
        });
    }
}
