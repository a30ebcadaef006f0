//! Verify before write: an edit is planned in memory ([`plan_relabel`], [`plan_rename_term`],
//! [`plan_structural`], or any staged replacements through [`check`]), its result parsed from a
//! shadow copy of the inputs ([`Shadow`]) and verified against the sources it was made from;
//! only then may [`write_checked`] commit it. This module is the one place that decides whether
//! an edit is written.

use crate::{EditError, Finding, FindingKind, Op, Replacement, Result, io};
use ledger_core::progress::Progress;
use ledger_core::{Document, Severity};
use ledger_parse::encoding::Encoding;
use ledger_parse::regions::RegionKind;
use rayon::prelude::*;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// Parses the documents under `paths` (no token counts), references across documents
/// resolved. A bad input itself (a missing path, an unknown file type) is an error: an edit must
/// not run on less than it was asked to.
pub fn parse_inputs(paths: &[PathBuf]) -> Result<Vec<Document>> {
    let (sources, diagnostics) = ledger_parse::discover(paths);
    let bad: Vec<String> = diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .map(ToString::to_string)
        .collect();
    if !bad.is_empty() {
        return Err(EditError::Invalid(format!(
            "bad input, nothing written:\n{}",
            bad.join("\n")
        )));
    }
    let mut docs: Vec<Document> = sources
        .par_iter()
        .map(|s| ledger_parse::parse(s, None))
        .collect();
    ledger_parse::resolve_corpus(&mut docs);
    // Edits slice the decoded text of every file.
    docs.iter_mut()
        .for_each(ledger_parse::encoding::offsets_into_text);
    Ok(docs)
}

/// Where the undo records of edits under `paths` live: `.ledger-undo/` in the first input's
/// folder.
pub fn undo_root(paths: &[PathBuf]) -> Result<PathBuf> {
    let first = paths
        .first()
        .ok_or_else(|| EditError::Invalid("no input".into()))?;
    let dir = if first.is_dir() {
        first.clone()
    } else {
        first.parent().map(Path::to_path_buf).unwrap_or_default()
    };
    Ok(dir.join(".ledger-undo"))
}

/// The documents under the inputs as parsed now, with the text of every file.
pub struct Sources {
    /// The inputs, as named.
    pub paths: Vec<PathBuf>,
    /// The documents, cross-document references resolved.
    pub docs: Vec<Document>,
    /// Every file of every document, as read (decoded: see `encodings`).
    pub texts: BTreeMap<PathBuf, String>,
    /// The files not in UTF-8 and the encoding each is read and written in.
    pub encodings: BTreeMap<PathBuf, Encoding>,
}

impl Sources {
    /// Parses `paths` and reads their files.
    pub fn read(paths: &[PathBuf]) -> Result<Sources> {
        let docs = parse_inputs(paths)?;
        let mut texts = BTreeMap::new();
        let mut encodings = BTreeMap::new();
        for d in &docs {
            for (k, f) in d.files.iter().enumerate() {
                let path = PathBuf::from(f);
                let encoding = ledger_parse::encoding::of_file(d, k);
                let decoded = ledger_parse::encoding::read(&path, encoding).map_err(io(&path))?;
                if encoding != Encoding::UTF8 {
                    encodings.insert(path.clone(), encoding);
                }
                texts.insert(path, decoded.text);
            }
        }
        Ok(Sources {
            paths: paths.to_vec(),
            docs,
            texts,
            encodings,
        })
    }

    /// The encoding `path` is written in (UTF-8 unless it declared another).
    pub fn encoding(&self, path: &Path) -> Encoding {
        self.encodings.get(path).copied().unwrap_or(Encoding::UTF8)
    }
}

/// The documents parsed from the inputs with edited texts in place of the files they name, from
/// a copy in a temporary folder (the originals are not touched); the copy lives as long as this.
pub struct Shadow {
    _dir: tempfile::TempDir,
    /// The documents of the copy (same ids, same file order; paths in the copy).
    pub docs: Vec<Document>,
}

impl Shadow {
    /// Copies what the documents of `sources` looked at, writes `edited` over the copies and
    /// parses them.
    pub fn parse(sources: &Sources, edited: &BTreeMap<PathBuf, String>) -> Result<Shadow> {
        let paths = &sources.paths;
        let temp = std::env::temp_dir();
        remove_stale_shadows(&temp);
        let dir = tempfile::Builder::new()
            .prefix(&format!("{SHADOW}{}-", std::process::id()))
            .tempdir_in(&temp)
            .map_err(io(&temp))?;
        let mut shadow_inputs = Vec::new();
        let mut roots = Vec::new();
        for (k, p) in paths.iter().enumerate() {
            let real = std::fs::canonicalize(p).map_err(io(p))?;
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
            std::fs::create_dir_all(&copy).map_err(io(&copy))?;
            shadow_inputs.push(copy.join(real.strip_prefix(&root).unwrap_or(Path::new(""))));
            roots.push((root, copy));
        }
        // Where a path of the inputs lies in the copy: below the first root holding it.
        let in_copy = |path: &Path| {
            let real = inside_path(path)?;
            roots
                .iter()
                .find_map(|(root, copy)| real.strip_prefix(root).ok().map(|rel| copy.join(rel)))
        };
        for input in sources.docs.iter().flat_map(|d| &d.inputs) {
            let empty = match input.seen {
                ledger_core::Seen::Read(_) => false,
                ledger_core::Seen::Exists => true,
                ledger_core::Seen::Absent | ledger_core::Seen::Listing(_) => continue,
            };
            let path = Path::new(&input.path);
            // Only regular files whose links stay inside the inputs; no FIFO, device or folder.
            let regular = std::fs::canonicalize(path)
                .ok()
                .filter(|real| roots.iter().any(|(root, _)| real.starts_with(root)))
                .and_then(|real| std::fs::metadata(real).ok())
                .is_some_and(|m| m.is_file());
            let Some(target) = in_copy(path).filter(|_| regular) else {
                continue;
            };
            if let Some(parent) = target.parent() {
                std::fs::create_dir_all(parent).map_err(io(parent))?;
            }
            if empty {
                // Only its existence was looked at (it may have been read too: keep that copy).
                if !target.exists() {
                    std::fs::File::create(&target).map_err(io(&target))?;
                }
            } else {
                std::fs::copy(path, &target).map_err(io(path))?;
            }
        }
        for (path, text) in edited {
            let Some(target) = in_copy(path) else {
                return Err(EditError::Invalid(format!(
                    "{} is outside the inputs",
                    path.display()
                )));
            };
            if let Some(parent) = target.parent() {
                std::fs::create_dir_all(parent).map_err(io(parent))?;
            }
            let bytes = crate::encode(path, sources.encoding(path), text)?;
            std::fs::write(&target, bytes).map_err(io(&target))?;
        }
        let docs = parse_inputs(&shadow_inputs)?;
        Ok(Shadow { _dir: dir, docs })
    }

    /// Verifies the edit that produced this copy against the sources it was made from.
    pub fn verify(&self, sources: &Sources, stages: &[Vec<Replacement>]) -> Vec<Finding> {
        let read = |d: &Document, file: usize| {
            let path = Path::new(d.files.get(file)?);
            ledger_parse::encoding::read(path, ledger_parse::encoding::of_file(d, file))
                .ok()
                .map(|decoded| decoded.text)
        };
        crate::verify(&sources.docs, &sources.texts, &self.docs, &read, stages)
    }
}

/// `path` with its folder resolved (symlinks, `..`) and its own name kept: where it lies, even
/// when it is itself a symlink.
fn inside_path(path: &Path) -> Option<PathBuf> {
    let name = path.file_name()?;
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    Some(std::fs::canonicalize(parent).ok()?.join(name))
}

/// `texts` with `edits` applied, every file included.
fn overlay(
    texts: &BTreeMap<PathBuf, String>,
    edits: &[Replacement],
) -> Result<BTreeMap<PathBuf, String>> {
    let mut out = texts.clone();
    out.extend(crate::apply(texts, edits)?);
    Ok(out)
}

/// One replacement of a checked edit, for review tools (`--format json`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Change {
    /// The stage it belongs to (0: the edit; 1: the prose numbers a structural edit rewrote).
    pub stage: usize,
    /// The file.
    pub file: String,
    /// 1-based line and column (in characters) of its start.
    pub line: usize,
    /// See `line`.
    pub column: usize,
    /// The text replaced.
    pub old: String,
    /// The text put in.
    pub new: String,
    /// The line(s) it touches, before.
    pub before: String,
    /// The same line(s) after.
    pub after: String,
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

impl Checked {
    /// The findings that stop the edit: those of a kind not in `allowed`.
    pub fn blocking<'a>(&'a self, allowed: &'a [FindingKind]) -> impl Iterator<Item = &'a Finding> {
        self.findings
            .iter()
            .filter(move |f| !allowed.contains(&f.kind))
    }

    /// Every replacement with where it is and the line it changes, stage after stage (a later
    /// stage's lines are those of the text the earlier ones made): for review tools.
    pub fn changes(&self, sources: &Sources) -> Result<Vec<Change>> {
        let mut texts = sources.texts.clone();
        let mut out = Vec::new();
        for (stage, edits) in self.stages.iter().enumerate() {
            for r in edits {
                let Some(text) = texts.get(&r.path) else {
                    continue;
                };
                let line_start = text[..r.start].rfind('\n').map_or(0, |k| k + 1);
                let line_end = text[r.end..].find('\n').map_or(text.len(), |k| r.end + k);
                out.push(Change {
                    stage,
                    file: r.path.display().to_string(),
                    line: text[..r.start].matches('\n').count() + 1,
                    column: text[line_start..r.start].chars().count() + 1,
                    old: text[r.start..r.end].to_string(),
                    new: r.text.clone(),
                    before: text[line_start..line_end].to_string(),
                    after: format!(
                        "{}{}{}",
                        &text[line_start..r.start],
                        r.text,
                        &text[r.end..line_end]
                    ),
                });
            }
            texts = overlay(&texts, edits)?;
        }
        Ok(out)
    }

    /// The unified diff of every file it changes, against `sources`.
    pub fn diff(&self, sources: &Sources) -> String {
        self.edited
            .iter()
            .map(|(path, text)| crate::diff(path, &sources.texts[path], text))
            .collect()
    }
}

/// The name prefix of shadow copies in the temporary folder, before the process id.
const SHADOW: &str = "ledger-shadow-";

/// Removes the shadow copies that processes killed mid-edit left in `temp`: those whose process
/// is gone (where `/proc` tells), else those over a day old.
fn remove_stale_shadows(temp: &Path) {
    let Ok(entries) = std::fs::read_dir(temp) else {
        return;
    };
    let proc = Path::new("/proc/self").exists();
    let day_ago = std::time::SystemTime::now()
        .checked_sub(std::time::Duration::from_secs(86_400))
        .unwrap_or(std::time::UNIX_EPOCH);
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(SHADOW))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        let stale = if proc {
            !Path::new("/proc").join(pid.to_string()).exists()
        } else {
            e.metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|t| t < day_ago)
        };
        if stale {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// Applies the edit `stages` (each relative to the texts the previous one produced) in memory
/// and verifies the result on a shadow copy, adding the `extra` findings.
pub fn check(
    sources: &Sources,
    stages: Vec<Vec<Replacement>>,
    extra: impl FnOnce(&BTreeMap<PathBuf, String>, &Shadow, &[Vec<Replacement>]) -> Vec<Finding>,
) -> Result<Checked> {
    let mut now = sources.texts.clone();
    for stage in &stages {
        now = overlay(&now, stage)?;
    }
    let edited: BTreeMap<PathBuf, String> = now
        .into_iter()
        .filter(|(p, t)| sources.texts.get(p) != Some(t))
        .collect();
    let shadow = Shadow::parse(sources, &edited)?;
    let mut findings = shadow.verify(sources, &stages);
    findings.extend(extra(&edited, &shadow, &stages));
    Ok(Checked {
        edited,
        findings,
        stages,
    })
}

/// What became of a checked edit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Written {
    /// Refused: this many findings of a kind not allowed; nothing was written.
    Refused(usize),
    /// Verified; a dry run wrote nothing.
    DryRun,
    /// Verified, and there was nothing to change.
    Unchanged,
    /// Verified and written; the undo record's folder.
    Committed(PathBuf),
}

impl Written {
    /// Whether the edit was refused by verification.
    pub fn refused(&self) -> bool {
        matches!(self, Written::Refused(_))
    }
}

/// Unless `dry_run` or a finding of a kind not in `allowed`, commits a checked edit atomically
/// with an undo record (see [`crate::commit`]).
pub fn write_checked(
    sources: &Sources,
    checked: Checked,
    dry_run: bool,
    allowed: &[FindingKind],
) -> Result<Written> {
    let blocking = checked.blocking(allowed).count();
    if blocking > 0 {
        return Ok(Written::Refused(blocking));
    }
    if dry_run {
        return Ok(Written::DryRun);
    }
    if checked.edited.is_empty() {
        return Ok(Written::Unchanged);
    }
    let changes = checked
        .edited
        .into_iter()
        .map(|(p, new)| {
            let old = sources.texts[&p].clone();
            (p, (old, new))
        })
        .collect();
    let record = crate::commit(&changes, &sources.encodings, &undo_root(&sources.paths)?)?;
    Ok(Written::Committed(record))
}

/// The relabel edit applied in memory and verified, with its number of replacements.
pub fn plan_relabel(sources: &Sources, old: &str, new: &str) -> Result<(Checked, usize)> {
    let edits = crate::relabel(&sources.docs, &sources.texts, old, new)?;
    let n = edits.len();
    Ok((check(sources, vec![edits], |_, _, _| Vec::new())?, n))
}

/// The insertion of ` {#old}` at the end of a moved heading's line (before an ATX closing
/// sequence), or `None` when the heading is not one line of Markdown heading syntax or already
/// has attributes.
fn kept_anchor(sources: &Sources, moved: &MovedAnchor) -> Option<Replacement> {
    let d = &sources.docs[moved.doc];
    let u = &d.units[moved.unit];
    let path = PathBuf::from(d.files.get(u.file)?);
    let text = sources.texts.get(&path)?;
    let start = u.start_byte;
    let rest = text.get(start..)?;
    let line = &rest[..rest.find('\n').unwrap_or(rest.len())];
    let next = rest[line.len()..].trim_start_matches('\n');
    let next = next.lines().next().unwrap_or("").trim();
    let atx = line.trim_start_matches(' ').starts_with('#');
    let setext =
        !next.is_empty() && (next.chars().all(|c| c == '=') || next.chars().all(|c| c == '-'));
    if !atx && !setext {
        return None;
    }
    let mut content = line.trim_end();
    if atx {
        let closed = content.trim_end_matches('#');
        if closed.len() < content.len() && (closed.ends_with([' ', '\t'])) {
            content = closed.trim_end();
        }
    }
    if content.ends_with('}') {
        return None;
    }
    let at = start + content.len();
    Some(Replacement {
        path,
        start: at,
        end: at,
        text: format!(" {{#{}}}", moved.old),
        moved_from: None,
    })
}

/// A Markdown heading whose generated anchor an edit changes.
struct MovedAnchor {
    /// The heading's document and unit.
    doc: usize,
    unit: usize,
    /// Its anchor before the edit.
    old: String,
    /// The links to it, pointed at the new anchor.
    links: Vec<Replacement>,
}

/// The Markdown headings whose generated anchors an edit changes, with their links pointed at
/// the new anchors: units are compared position by position (the edit must not add or remove
/// units).
fn moved_anchors(sources: &Sources, after: &[Document]) -> Result<Vec<MovedAnchor>> {
    let mut out = Vec::new();
    for (k, d) in sources.docs.iter().enumerate() {
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
                    out.push(MovedAnchor {
                        doc: k,
                        unit: i,
                        old: oa.to_string(),
                        links: crate::anchor_links(
                            &sources.docs,
                            &sources.texts,
                            &d.id,
                            i,
                            oa,
                            na,
                        )?,
                    });
                }
            }
        }
    }
    Ok(out)
}

/// A term rename applied in memory and verified.
pub struct RenamePlan {
    /// The edit and its findings.
    pub checked: Checked,
    /// Occurrences renamed.
    pub occurrences: usize,
    /// Links to renamed headings rewritten (`keep_anchors` off).
    pub links: usize,
    /// Renamed headings that keep their old anchor as an explicit `{#id}` (`keep_anchors`).
    pub anchors_kept: usize,
    /// Occurrences left alone, with why.
    pub left: Vec<crate::Left>,
}

impl RenamePlan {
    /// What was left alone, for the user: a `file:line: left `text` (reason)` line per occurrence
    /// a person should look at (casing, part of a name, an article not certain), then one line
    /// counting them all by reason.
    pub fn left_report(&self) -> Vec<String> {
        let mut lines = Vec::new();
        let mut reasons: BTreeMap<&str, usize> = BTreeMap::new();
        for l in &self.left {
            *reasons.entry(l.reason.as_str()).or_default() += 1;
            if matches!(
                l.reason.as_str(),
                "casing" | "part of a name" | "article not certain"
            ) {
                lines.push(format!(
                    "{}:{}: left `{}` ({})",
                    l.path.display(),
                    l.line,
                    l.text,
                    l.reason
                ));
            }
        }
        if !reasons.is_empty() {
            let list: Vec<String> = reasons.iter().map(|(r, n)| format!("{n} in {r}")).collect();
            lines.push(format!("left alone: {}", list.join(", ")));
        }
        lines
    }
}

/// The rename applied in memory and verified ([`plan_rename_terms`] with one term).
pub fn plan_rename_term(
    sources: &Sources,
    old: &str,
    new: &str,
    include: &[RegionKind],
    keep_anchors: bool,
) -> Result<RenamePlan> {
    plan_rename_terms(
        sources,
        &[(old.to_string(), new.to_string())],
        include,
        keep_anchors,
        &ledger_core::progress::Quiet,
    )
}

/// Several terms renamed in one edit (a terminology file), applied in memory and verified. Where
/// two terms match overlapping text the longer match wins ("registry index" before "registry").
/// Verification: no occurrence a rename should have reached may remain (consistency), and no
/// rename may put a word beside the same word ([`FindingKind::Repeat`]: "package index index").
/// A Markdown heading whose generated anchor the rename changes keeps its old one as an explicit
/// `{#old}` when `keep_anchors` (links from outside the corpus still land), else the links to it
/// in the corpus follow the new anchor. `progress` hears of each file matched, then of the two
/// parses of verification.
pub fn plan_rename_terms(
    sources: &Sources,
    terms: &[(String, String)],
    include: &[RegionKind],
    keep_anchors: bool,
    progress: &dyn Progress,
) -> Result<RenamePlan> {
    let crate::TermRename {
        replacements: taken,
        left,
    } = crate::term::rename_terms_reporting(
        &sources.docs,
        &sources.texts,
        terms,
        include,
        progress,
    )?;
    progress.start("verifying", 2);
    let mut edits = taken.clone();
    let first = crate::apply(&sources.texts, &edits)?;
    let moved = moved_anchors(sources, &Shadow::parse(sources, &first)?.docs)?;
    progress.advance("renamed headings and their links");
    let (mut links, mut anchors_kept) = (Vec::new(), 0);
    for m in moved {
        match keep_anchors.then(|| kept_anchor(sources, &m)).flatten() {
            Some(attribute) => {
                anchors_kept += 1;
                edits.push(attribute);
            }
            None => links.extend(m.links),
        }
    }
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
    let docs = &sources.docs;
    let checked = check(sources, vec![edits], |edited, _, stages| {
        let mut texts = sources.texts.clone();
        texts.extend(edited.iter().map(|(p, t)| (p.clone(), t.clone())));
        let mut findings = repeat_findings(sources, &texts, &taken, &stages[0]);
        // A new term that contains the old one ("index" → "package index") is found again.
        let again: Vec<(String, String)> = terms
            .iter()
            .filter(|(old, new)| !words(new).contains(&words(old)))
            .cloned()
            .collect();
        if again.is_empty() {
            return findings;
        }
        match crate::rename_terms(docs, &texts, &again, include) {
            Ok(found) => findings.extend(found.replacements.iter().map(|r| Finding {
                kind: FindingKind::Consistency,
                location: r.path.display().to_string(),
                message: format!(
                    "`{}` is still there at byte {}",
                    texts
                        .get(&r.path)
                        .and_then(|t| t.get(r.start..r.end))
                        .unwrap_or_default(),
                    r.start
                ),
            })),
            Err(e) => findings.push(Finding {
                kind: FindingKind::Consistency,
                location: String::new(),
                message: e.to_string(),
            }),
        }
        findings
    })?;
    progress.advance("references, repeats and consistency");
    progress.finish();
    Ok(RenamePlan {
        checked,
        occurrences: taken.len(),
        links: links.len(),
        anchors_kept,
        left,
    })
}

/// 1-based line of byte `at` in `text`.
fn line_of(text: &str, at: usize) -> usize {
    text[..at.min(text.len())].matches('\n').count() + 1
}

/// The repetitions the renames `taken` made in the edited `texts` (all edits of the plan,
/// `edits`, sorted and disjoint, shift the offsets), one finding each: where, and the phrase
/// before and after.
fn repeat_findings(
    sources: &Sources,
    texts: &BTreeMap<PathBuf, String>,
    taken: &[Replacement],
    edits: &[Replacement],
) -> Vec<Finding> {
    // Both come sorted, file by file: each file's texts are looked up once.
    let edits_of: HashMap<&Path, &[Replacement]> = edits
        .chunk_by(|a, b| a.path == b.path)
        .map(|run| (run[0].path.as_path(), run))
        .collect();
    let runs: Vec<&[Replacement]> = taken.chunk_by(|a, b| a.path == b.path).collect();
    runs.par_iter()
        .flat_map_iter(|run| {
            let path = run[0].path.as_path();
            let mut out = Vec::new();
            let (Some(old), Some(new), Some(file_edits)) =
                (sources.texts.get(path), texts.get(path), edits_of.get(path))
            else {
                return out;
            };
            let landed = crate::verify::OffsetMap::new(file_edits.iter().collect());
            for r in *run {
                let Some(start) = landed.new_start_of(r.start, r.end) else {
                    continue;
                };
                let end = start + r.text.len();
                for (at, before, after) in
                    crate::term::repeats(old, new, (r.start, r.end), (start, end))
                {
                    out.push(Finding {
                        kind: FindingKind::Repeat,
                        location: format!("{}:{}", path.display(), line_of(new, at)),
                        message: format!(
                            "`{before}` became `{after}`: a word repeated (--allow-repeats to \
                             write it anyway)"
                        ),
                    });
                }
            }
            out
        })
        .collect()
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
pub fn plan_structural(sources: &Sources, op: &Op) -> Result<StructuralPlan> {
    let stage1 = crate::structural(&sources.docs, &sources.texts, op)?;
    let texts1 = overlay(&sources.texts, &stage1)?;
    let changed1: BTreeMap<PathBuf, String> = texts1
        .iter()
        .filter(|(p, t)| sources.texts.get(*p) != Some(*t))
        .map(|(p, t)| (p.clone(), t.clone()))
        .collect();
    let after1 = Shadow::parse(sources, &changed1)?;
    let stage2 = crate::renumber(&sources.docs, &stage1, &after1.docs, &texts1)?;
    let renumbered = stage2.len();
    let checked = check(sources, vec![stage1, stage2], |_, _, _| Vec::new())?;
    Ok(StructuralPlan {
        checked,
        renumbered,
    })
}

/// Reverts the last edit made under `path` (from its undo record); returns the files restored.
/// The records are looked for where an edit of `path` keeps them, else in the nearest folder
/// above it that has some, else in the one folder below it that has some (an edit of
/// `book/src` is undone by `undo book`, or by `undo book/src/guide`). When the last record is
/// gone, the records' folder is removed too.
pub fn undo_last(path: &Path) -> Result<Vec<PathBuf>> {
    let root = find_undo_root(path)?;
    let Some(record) = crate::last_record(&root) else {
        return Err(EditError::Invalid(format!(
            "no edit to undo under {}",
            root.display()
        )));
    };
    let restored = crate::undo(&record)?;
    remove_if_spent(&root);
    Ok(restored)
}

/// The undo record of an edit under `path` that died between writing two of its files (see
/// [`crate::unfinished_record`]), looked for where [`undo_last`] looks.
pub fn unfinished_edit(path: &Path) -> Option<PathBuf> {
    crate::unfinished_record(&find_undo_root(path).ok()?)
}

/// The undo folder that holds the records for `path` (see [`undo_last`]).
fn find_undo_root(path: &Path) -> Result<PathBuf> {
    let own = undo_root(&[path.to_path_buf()])?;
    if crate::last_record(&own).is_some() {
        return Ok(own);
    }
    let start = std::path::absolute(own.parent().unwrap_or(path)).map_err(io(path))?;
    for dir in start.ancestors().skip(1) {
        let candidate = dir.join(".ledger-undo");
        if crate::last_record(&candidate).is_some() {
            return Ok(candidate);
        }
    }
    let mut below = Vec::new();
    let mut stack = vec![(start, 0)];
    while let Some((dir, depth)) = stack.pop() {
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let p = e.path();
            if !e.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            if e.file_name() == ".ledger-undo" {
                if dir != own.parent().unwrap_or(path) && crate::last_record(&p).is_some() {
                    below.push(p);
                }
            } else if depth < UNDO_SEARCH_DEPTH && !e.file_name().to_string_lossy().starts_with('.')
            {
                stack.push((p, depth + 1));
            }
        }
    }
    match below.len() {
        0 => Ok(own),
        1 => Ok(below.remove(0)),
        _ => {
            below.sort();
            let list: Vec<String> = below
                .iter()
                .map(|b| b.parent().unwrap_or(b).display().to_string())
                .collect();
            Err(EditError::Invalid(format!(
                "edits to undo in several folders under {}: {}; name one",
                path.display(),
                list.join(", ")
            )))
        }
    }
}

/// Folders below an undo's path searched for records.
const UNDO_SEARCH_DEPTH: usize = 8;

/// Removes the undo folder when no record is left in it (only its lock and `.gitignore`),
/// under its lock, so that an edit starting meanwhile finds its records' folder.
fn remove_if_spent(root: &Path) {
    let Ok(_lock) = crate::lock_edits(root) else {
        return;
    };
    let rest: Vec<String> = std::fs::read_dir(root)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != ".lock" && n != ".gitignore")
        .collect();
    if rest.is_empty() {
        let _ = std::fs::remove_dir_all(root);
    }
}
