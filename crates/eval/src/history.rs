//! Real edits from the documents' own histories: git bundles of their authors' commits
//! (`datasets/edit-history/`), turned into retrieval cases.
//!
//! For each commit: the document at the parent commit, the units the commit changed (the smallest
//! unit enclosing each changed line; an insertion belongs to the unit it lands in), a target (the
//! changed unit the commit message names, else the first changed unit that is not a section), the
//! commit message as the instruction, and the other changed units as gold. Which commits are
//! kept is decided by [`select`], with the reason for every commit left out.
//!
//! Git runs as a subprocess (`git clone`, `git checkout`, `git diff`); the bundles hold text files
//! only.

use ledger_core::{Document, UnitKind};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Errors of reading a history.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// A git command could not run or failed.
    #[error("git {args}: {message}")]
    Git {
        /// The arguments.
        args: String,
        /// What went wrong (git's stderr).
        message: String,
    },
    /// Git printed something this module does not understand.
    #[error("unexpected git output: {0}")]
    Output(String),
    /// The manifest of histories could not be read.
    #[error("manifest of histories: {0}")]
    Manifest(String),
    /// A repository's path could not be made absolute.
    #[error("{}: {source}", path.display())]
    Path {
        /// The path as named.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// One edit history: a repository (a git bundle, or any git folder) and the document inside it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Source {
    /// Short name in reports.
    pub name: String,
    /// The bundle or repository (in a manifest: relative to the manifest's folder).
    pub bundle: PathBuf,
    /// The document inside the repository: a LaTeX main file, a Markdown file or an mdBook
    /// folder.
    pub document: String,
    /// The branch whose first-parent history is walked (`None`: the repository's own HEAD).
    #[serde(default)]
    pub branch: Option<String>,
}

impl Source {
    /// The history of a repository (or bundle) a user names, walked from its HEAD, and the
    /// document in it; named after the repository.
    pub fn of_repository(repository: &Path, document: &str) -> Result<Source, HistoryError> {
        let bundle = std::path::absolute(repository).map_err(|source| HistoryError::Path {
            path: repository.to_path_buf(),
            source,
        })?;
        Ok(Source {
            name: bundle
                .file_stem()
                .map_or_else(|| "history".into(), |n| n.to_string_lossy().into_owned()),
            bundle,
            document: document.to_string(),
            branch: None,
        })
    }
}

/// The histories a manifest lists (`manifest.toml` in `dir`: one `[[history]]` table each with
/// `name`, `bundle`, `document` and optionally `branch`), those whose bundle is missing left out
/// with a warning. `datasets/edit-history/manifest.toml` lists the four bundled histories.
pub fn manifest(dir: &Path) -> Result<Vec<Source>, HistoryError> {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Manifest {
        history: Vec<Source>,
    }
    let path = dir.join("manifest.toml");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| HistoryError::Manifest(format!("{}: {e}", path.display())))?;
    let m: Manifest = toml::from_str(&text)
        .map_err(|e| HistoryError::Manifest(format!("{}: {e}", path.display())))?;
    Ok(m.history
        .into_iter()
        .map(|s| Source {
            bundle: dir.join(&s.bundle),
            ..s
        })
        .filter(|s| {
            let found = s.bundle.exists();
            if !found {
                tracing::warn!("real edits: {} not found, skipped", s.bundle.display());
            }
            found
        })
        .collect())
}

/// A changed range of an old file: `old_lines` lines from `old_start` (1-based) were replaced by
/// `added` (the new lines); `old_lines == 0` is an insertion after line `old_start`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    /// Path in the repository.
    pub path: String,
    /// First old line (1-based); for an insertion, the line it follows (0: at the top).
    pub old_start: usize,
    /// Old lines replaced.
    pub old_lines: usize,
    /// The new lines.
    pub added: Vec<String>,
}

/// One commit of a first-parent history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Commit {
    /// Its id in the bundle.
    pub sha: String,
    /// Its parent's id (the document before the edit).
    pub parent: String,
    /// The commit in the public repository (`Original-commit:` trailer), else `sha`.
    pub original: String,
    /// Subject and body, without trailers.
    pub message: String,
    /// Paths the commit added (files that did not exist at the parent).
    pub added_files: Vec<String>,
    /// Lines added in all files.
    pub added_lines: usize,
    /// Lines added to new files.
    pub lines_in_new_files: usize,
    /// Whether the diff is empty when whitespace and blank lines are ignored.
    pub formatting_only: bool,
}

/// Which split a commit belongs to: fixed by its original hash (first hex digit 0–7: dev), so
/// that tuning on dev never sees a test case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Split {
    /// Tuned on.
    Dev,
    /// Reported on, never tuned on.
    Test,
}

impl Split {
    /// The split of a commit with this (original) hash.
    pub fn of(original: &str) -> Split {
        match original.chars().next().and_then(|c| c.to_digit(16)) {
            Some(d) if d < 8 => Split::Dev,
            _ => Split::Test,
        }
    }

    /// `dev` or `test`.
    pub fn as_str(self) -> &'static str {
        match self {
            Split::Dev => "dev",
            Split::Test => "test",
        }
    }
}

/// A clone of a history bundle, with a work tree that can be moved to any commit.
#[derive(Debug)]
pub struct Repository {
    dir: PathBuf,
}

fn git(dir: Option<&Path>, args: &[&str]) -> Result<Vec<u8>, HistoryError> {
    let mut cmd = Command::new("git");
    if let Some(d) = dir {
        cmd.arg("-C").arg(d);
    }
    // Nothing from the user's git configuration may change what is read.
    cmd.args(["-c", "core.quotepath=off", "-c", "diff.noprefix=false"])
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_TERMINAL_PROMPT", "0");
    let out = cmd.output().map_err(|e| HistoryError::Git {
        args: args.join(" "),
        message: e.to_string(),
    })?;
    if !out.status.success() {
        return Err(HistoryError::Git {
            args: args.join(" "),
            message: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(out.stdout)
}

impl Repository {
    /// Clones `bundle` (a bundle or a repository; its `branch`, else its HEAD) into `dir`,
    /// which must not exist yet.
    pub fn clone_bundle(
        bundle: &Path,
        dir: &Path,
        branch: Option<&str>,
    ) -> Result<Repository, HistoryError> {
        let (b, d) = (bundle.display().to_string(), dir.display().to_string());
        let mut args = vec!["-c", "init.defaultBranch=main", "clone", "-q"];
        if let Some(branch) = branch {
            args.extend(["-b", branch]);
        }
        args.extend([b.as_str(), d.as_str()]);
        git(None, &args)?;
        Ok(Repository {
            dir: dir.to_path_buf(),
        })
    }

    /// The work tree.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The first-parent history, oldest first, without the root commit.
    pub fn commits(&self) -> Result<Vec<Commit>, HistoryError> {
        let log = git(
            Some(&self.dir),
            &[
                "log",
                "--first-parent",
                "--reverse",
                "--format=%H %P%x00%B%x00%x01",
                "HEAD",
            ],
        )?;
        let log = String::from_utf8_lossy(&log);
        let mut out = Vec::new();
        for record in log.split('\u{1}') {
            let record = record.trim_start_matches('\n');
            if record.is_empty() {
                continue;
            }
            let mut fields = record.split('\0');
            let ids = fields.next().unwrap_or_default();
            let body = fields.next().unwrap_or_default();
            let mut ids = ids.split_whitespace();
            let (Some(sha), Some(parent)) = (ids.next(), ids.next()) else {
                continue; // the root commit: no document before it
            };
            let mut original = sha.to_string();
            let mut message = Vec::new();
            for line in body.lines() {
                if let Some(o) = line.strip_prefix("Original-commit: ") {
                    original = o.trim().to_string();
                } else {
                    message.push(line);
                }
            }
            let new_files = String::from_utf8_lossy(&git(
                Some(&self.dir),
                &[
                    "diff",
                    "--no-renames",
                    "--name-only",
                    "--diff-filter=A",
                    parent,
                    sha,
                ],
            )?)
            .into_owned();
            let added_files: Vec<String> = new_files.lines().map(str::to_string).collect();
            let stat = String::from_utf8_lossy(&git(
                Some(&self.dir),
                &["diff", "--no-renames", "--numstat", parent, sha],
            )?)
            .into_owned();
            let (mut added_lines, mut lines_in_new_files) = (0, 0);
            for line in stat.lines() {
                let mut f = line.split('\t');
                let added: usize = f.next().and_then(|n| n.parse().ok()).unwrap_or(0);
                f.next();
                added_lines += added;
                if f.next().is_some_and(|p| added_files.iter().any(|a| a == p)) {
                    lines_in_new_files += added;
                }
            }
            let formatting_only = git(
                Some(&self.dir),
                &[
                    "diff",
                    "--no-renames",
                    "-w",
                    "--ignore-blank-lines",
                    "--stat",
                    parent,
                    sha,
                ],
            )?
            .is_empty();
            out.push(Commit {
                sha: sha.to_string(),
                parent: parent.to_string(),
                original,
                message: message.join("\n").trim().to_string(),
                added_files,
                added_lines,
                lines_in_new_files,
                formatting_only,
            });
        }
        Ok(out)
    }

    /// The changed ranges of `commit` against its parent, in the parent's files.
    pub fn hunks(&self, commit: &Commit) -> Result<Vec<Hunk>, HistoryError> {
        let diff = git(
            Some(&self.dir),
            &[
                "diff",
                "--no-renames",
                "--no-color",
                "--no-ext-diff",
                "-U0",
                &commit.parent,
                &commit.sha,
            ],
        )?;
        parse_diff(&String::from_utf8_lossy(&diff))
    }

    /// Moves the work tree to `rev`, discarding anything else in it.
    pub fn checkout(&self, rev: &str) -> Result<(), HistoryError> {
        git(
            Some(&self.dir),
            &["checkout", "-q", "--force", "--detach", rev],
        )?;
        git(Some(&self.dir), &["clean", "-q", "-f", "-d", "-x"])?;
        Ok(())
    }
}

/// Parses a `git diff -U0` into hunks of old files (files new in the commit have none: nothing
/// of the old document was there).
pub fn parse_diff(diff: &str) -> Result<Vec<Hunk>, HistoryError> {
    let mut out: Vec<Hunk> = Vec::new();
    let mut path: Option<String> = None;
    let mut in_hunk = false;
    for line in diff.lines() {
        if line.starts_with("diff --git ") {
            path = None;
            in_hunk = false;
        } else if !in_hunk && let Some(p) = line.strip_prefix("--- ") {
            path = p.strip_prefix("a/").map(str::to_string); // `/dev/null` for a new file
        } else if !in_hunk && line.starts_with("+++ ") {
        } else if let Some(rest) = line.strip_prefix("@@ -") {
            in_hunk = true;
            let Some(p) = &path else { continue };
            let old = rest
                .split_whitespace()
                .next()
                .ok_or_else(|| HistoryError::Output(line.to_string()))?;
            let (start, count) = match old.split_once(',') {
                Some((s, c)) => (s, c),
                None => (old, "1"),
            };
            let parse = |s: &str| {
                s.parse::<usize>()
                    .map_err(|_| HistoryError::Output(line.to_string()))
            };
            out.push(Hunk {
                path: p.clone(),
                old_start: parse(start)?,
                old_lines: parse(count)?,
                added: Vec::new(),
            });
        } else if in_hunk
            && path.is_some()
            && let Some(added) = line.strip_prefix('+')
            && let Some(h) = out.last_mut()
        {
            h.added.push(added.to_string());
        }
    }
    Ok(out)
}

/// Byte ranges of the lines of a text (without their line ends), 1-based by index + 1.
fn line_ranges(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = 0;
    for line in text.split_inclusive('\n') {
        let end = start + line.trim_end_matches(['\n', '\r']).len();
        out.push((start, end));
        start += line.len();
    }
    out
}

/// The smallest unit (not the document) of file `file` whose byte range holds `at`; with
/// `inside`, `at` must lie strictly after the unit's first byte (a point where something is
/// inserted before a unit begins lands in its parent).
fn deepest(doc: &Document, file: usize, at: usize, inside: bool) -> Option<usize> {
    doc.units
        .iter()
        .enumerate()
        .filter(|(_, u)| {
            u.file == file
                && u.kind != UnitKind::Document
                && (if inside {
                    u.start_byte < at
                } else {
                    u.start_byte <= at
                })
                && at < u.end_byte
        })
        .min_by_key(|(_, u)| (u.end_byte - u.start_byte, std::cmp::Reverse(u.start_byte)))
        .map(|(i, _)| i)
}

/// The units of `doc` (parsed from the parent commit's files under `root`) that `hunks` change:
/// for each changed line, the smallest unit holding its first and its last non-blank byte; for
/// an insertion, the unit it lands in (the unit it continues when it joins a non-blank line,
/// else the unit that holds the point). Units in document order, each once.
pub fn changed_units(doc: &Document, root: &Path, hunks: &[Hunk]) -> Vec<usize> {
    let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let file_of: BTreeMap<PathBuf, usize> = doc
        .files
        .iter()
        .enumerate()
        .map(|(i, f)| (canonical(Path::new(f)), i))
        .collect();
    let mut texts: BTreeMap<usize, (String, Vec<(usize, usize)>)> = BTreeMap::new();
    let mut changed = std::collections::BTreeSet::new();
    for h in hunks {
        let Some(&file) = file_of.get(&canonical(&root.join(&h.path))) else {
            continue;
        };
        let (text, lines) = texts.entry(file).or_insert_with(|| {
            let text = std::fs::read(&doc.files[file])
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .unwrap_or_default();
            let lines = line_ranges(&text);
            (text, lines)
        });
        let blank = |n: usize| -> bool {
            lines
                .get(n.wrapping_sub(1))
                .is_none_or(|&(s, e)| text[s..e].trim().is_empty())
        };
        let first_byte = |n: usize| -> Option<usize> {
            let &(s, e) = lines.get(n.checked_sub(1)?)?;
            let t = &text[s..e];
            Some(s + (t.len() - t.trim_start().len()))
        };
        let last_byte = |n: usize| -> Option<usize> {
            let &(s, e) = lines.get(n.checked_sub(1)?)?;
            let t = text[s..e].trim_end();
            (!t.trim().is_empty()).then(|| s + t.len() - 1)
        };
        if h.old_lines > 0 {
            for n in h.old_start..h.old_start + h.old_lines {
                if blank(n) {
                    continue;
                }
                for at in [first_byte(n), last_byte(n)].into_iter().flatten() {
                    if let Some(u) = deepest(doc, file, at, false) {
                        changed.insert(u);
                    }
                }
            }
        } else {
            let first_added_blank = h.added.first().is_none_or(|l| l.trim().is_empty());
            let last_added_blank = h.added.last().is_none_or(|l| l.trim().is_empty());
            let (before, after) = (h.old_start, h.old_start + 1);
            let unit = if !blank(before) && !first_added_blank {
                last_byte(before).and_then(|at| deepest(doc, file, at, false))
            } else if !blank(after) && !last_added_blank {
                first_byte(after).and_then(|at| deepest(doc, file, at, false))
            } else {
                let at = lines.get(before).map_or(text.len(), |&(s, _)| s);
                deepest(doc, file, at, true)
            };
            changed.extend(unit);
        }
    }
    let mut out: Vec<usize> = changed.into_iter().collect();
    out.sort_by_key(|&u| doc.units[u].ordinal);
    out
}

/// Why a commit was left out of the cases.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Skip {
    /// Only whitespace or blank lines changed.
    FormattingOnly,
    /// Most added lines are in new files: new material, nothing existing had to change.
    NewMaterial,
    /// No unit of the document changed (the bibliography, the preamble, another file).
    OutsideDocument,
    /// One unit changed: nothing else had to change with it.
    SingleUnit,
    /// Only sections changed (headings): no target that is text.
    NoTextTarget,
    /// More units changed than [`MAX_CHANGED_UNITS`].
    Huge,
    /// The document did not parse at the parent commit (missing main file).
    NoDocument,
}

impl Skip {
    /// Every reason, in report order.
    pub const ALL: [Skip; 7] = [
        Skip::FormattingOnly,
        Skip::NewMaterial,
        Skip::OutsideDocument,
        Skip::SingleUnit,
        Skip::NoTextTarget,
        Skip::Huge,
        Skip::NoDocument,
    ];

    /// Its name in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Skip::FormattingOnly => "formatting only",
            Skip::NewMaterial => "new material",
            Skip::OutsideDocument => "outside the document",
            Skip::SingleUnit => "single unit",
            Skip::NoTextTarget => "no text target",
            Skip::Huge => "huge",
            Skip::NoDocument => "no document",
        }
    }
}

/// Commits changing more units than this are left out (a reformatting or a rewrite).
pub const MAX_CHANGED_UNITS: usize = 40;

/// The commit-level rules, before the document is parsed: formatting-only commits, and commits
/// whose added lines are mostly in new files.
pub fn pre_select(commit: &Commit) -> Option<Skip> {
    if commit.formatting_only {
        return Some(Skip::FormattingOnly);
    }
    if commit.lines_in_new_files * 2 > commit.added_lines {
        return Some(Skip::NewMaterial);
    }
    None
}

/// The unit-level rules, on the changed units of the parent's document: the case's target and
/// gold, or why there is none. `named` are the changed units the commit message names (in the
/// order it names them).
pub fn select(
    doc: &Document,
    changed: &[usize],
    named: &[usize],
) -> Result<(usize, Vec<usize>), Skip> {
    match changed.len() {
        0 => return Err(Skip::OutsideDocument),
        1 => return Err(Skip::SingleUnit),
        n if n > MAX_CHANGED_UNITS => return Err(Skip::Huge),
        _ => {}
    }
    let is_text = |u: usize| !matches!(doc.units[u].kind, UnitKind::Section | UnitKind::Document);
    let target = named
        .iter()
        .copied()
        .find(|u| changed.contains(u))
        .or_else(|| changed.iter().copied().find(|&u| is_text(u)))
        .ok_or(Skip::NoTextTarget)?;
    let gold = changed.iter().copied().filter(|&u| u != target).collect();
    Ok((target, gold))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diff_hunks_of_old_files() {
        let diff = "diff --git a/x.tex b/x.tex\nindex 1..2 100644\n--- a/x.tex\n+++ b/x.tex\n@@ -3,2 +3 @@ foo\n-a\n-b\n+c\n@@ -10,0 +11,2 @@\n+new\n+lines\ndiff --git a/n.tex b/n.tex\nnew file mode 100644\n--- /dev/null\n+++ b/n.tex\n@@ -0,0 +1 @@\n+x\n";
        let h = parse_diff(diff).expect("parses");
        assert_eq!(h.len(), 2);
        assert_eq!((h[0].old_start, h[0].old_lines), (3, 2));
        assert_eq!(h[0].added, vec!["c"]);
        assert_eq!((h[1].old_start, h[1].old_lines), (10, 0));
        assert_eq!(h[1].added, vec!["new", "lines"]);
    }

    #[test]
    fn changed_lines_map_to_the_smallest_units_and_insertions_to_where_they_land() {
        let dir = tempfile::tempdir().expect("tempdir");
        let text = "\\documentclass{article}\n\\begin{document}\n\\section{One}\\label{sec:one}\nFirst paragraph,\nsecond line.\n\nSecond paragraph.\n\\begin{lemma}\\label{lem:a}\nA statement.\n\\end{lemma}\n\\section{Two}\nLast paragraph.\n\\end{document}\n";
        std::fs::write(dir.path().join("main.tex"), text).expect("write");
        let source = ledger_parse::Source {
            id: "d".into(),
            path: dir.path().join("main.tex"),
            format: ledger_core::Format::Latex,
            root: None,
        };
        let doc = ledger_parse::parse(&source, None);
        let id = |units: Vec<usize>| -> Vec<String> {
            units.into_iter().map(|u| doc.units[u].id.clone()).collect()
        };
        let hunk = |old_start, old_lines, added: &[&str]| Hunk {
            path: "main.tex".into(),
            old_start,
            old_lines,
            added: added.iter().map(|s| s.to_string()).collect(),
        };
        // Line 5 ends the first paragraph; line 10 is inside the lemma.
        let changed = changed_units(
            &doc,
            dir.path(),
            &[hunk(5, 1, &["second line!"]), hunk(10, 1, &["B."])],
        );
        assert_eq!(id(changed), ["sec:one/p1", "lem:a"]);
        // A line joined to the first paragraph belongs to it; a new paragraph between the two
        // paragraphs lands in the section.
        let changed = changed_units(&doc, dir.path(), &[hunk(5, 0, &["third line."])]);
        assert_eq!(id(changed), ["sec:one/p1"]);
        let changed = changed_units(&doc, dir.path(), &[hunk(6, 0, &["New paragraph.", ""])]);
        assert_eq!(id(changed), ["sec:one"]);
        // A file the document does not read changes nothing.
        let mut other = hunk(5, 1, &["x"]);
        other.path = "other.tex".into();
        assert!(changed_units(&doc, dir.path(), &[other]).is_empty());
    }

    #[test]
    fn split_by_hash() {
        assert_eq!(Split::of("7fff"), Split::Dev);
        assert_eq!(Split::of("8000"), Split::Test);
        assert_eq!(Split::of("f0"), Split::Test);
    }
}
