//! Deterministic edits of document sources: byte-range [`Replacement`]s computed from parsed
//! documents ([`relabel`], [`rename_term`]), applied in memory ([`apply`]), shown as unified diffs ([`diff`]), and
//! written atomically with an undo record ([`commit`], [`undo`]).
//!
//! Nothing is written before the caller has verified the edited text; [`commit`] then changes
//! every file or none: new contents are written and fsynced aside first, the old ones saved in
//! the undo record, and only then renamed into place, so a crash leaves each file old or new and
//! the record restores the old.

mod plan;
mod relabel;
mod structure;
mod term;
mod verify;

use ledger_parse::encoding::Encoding;
pub use plan::{
    Change, Checked, RenamePlan, Shadow, Sources, StructuralPlan, Written, check, parse_inputs,
    plan_relabel, plan_rename_term, plan_rename_terms, plan_structural, undo_last, undo_root,
    unfinished_edit, write_checked,
};
pub use relabel::{anchor_links, relabel};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
pub use structure::{Op, UnitAt, find_unit, renumber, structural};
pub use term::{Left, TermRename, plural, read_terms, rename_term, rename_terms};
pub use verify::{Finding, FindingKind, verify};

/// Errors of edits.
#[derive(Debug, thiserror::Error)]
pub enum EditError {
    /// The edit cannot be made as asked.
    #[error("{0}")]
    Invalid(String),
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// No unit goes by this name (id, label or prose) in the documents.
    #[error("no unit `{0}` in these documents")]
    UnitNotFound(String),
    /// Several units go by this name: `doc:unit` of each.
    #[error("`{name}` could be any of: {} (name the document with --doc or use a unit id)", .candidates.join(", "))]
    AmbiguousUnit {
        /// The name asked for.
        name: String,
        /// `document:unit` of each unit it could be.
        candidates: Vec<String>,
    },
    /// The label or anchor to rename is defined nowhere in the documents (its message says
    /// which kind was looked for).
    #[error("{0}")]
    LabelNotFound(String),
    /// The new label or anchor is already defined (its message says where).
    #[error("{0}")]
    LabelTaken(String),
    /// An edit names a file that was not read with the documents.
    #[error("{} was not read", .0.display())]
    NotRead(PathBuf),
    /// A file changed on disk since it was read.
    #[error("{0} changed on disk since it was read; nothing was written")]
    Changed(PathBuf),
    /// An earlier edit of the same root died between writing two of its files (its undo record
    /// is named): they are part old, part new until undone.
    #[error(
        "an earlier edit did not finish writing its files (undo record {}): `ledger undo {}` \
         restores them; nothing was written",
        .0.display(),
        .0.parent().and_then(Path::parent).unwrap_or(.0).display()
    )]
    Unfinished(PathBuf),
    /// A terminology file is not a table of `"old term" = "new term"`.
    #[error("terms {path}: {message}")]
    Terms {
        /// The file.
        path: PathBuf,
        /// What is wrong (TOML's message names the line).
        message: String,
    },
    /// The undo record cannot be read.
    #[error("undo record {path}: {message}")]
    Record {
        /// The record folder.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

/// Result alias of this crate.
pub type Result<T, E = EditError> = std::result::Result<T, E>;

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> EditError + '_ {
    move |source| EditError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// One byte range of one file replaced by new text.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Replacement {
    /// The file, as the documents name it.
    pub path: PathBuf,
    /// Start byte.
    pub start: usize,
    /// End byte (exclusive).
    pub end: usize,
    /// The new text.
    pub text: String,
    /// For text moved within the file: the start byte of the range it was cut from (that range
    /// is another replacement, with empty text). Verification follows moved units through it.
    pub moved_from: Option<usize>,
}

/// `texts` with `edits` applied; overlapping edits are an error.
pub fn apply(
    texts: &BTreeMap<PathBuf, String>,
    edits: &[Replacement],
) -> Result<BTreeMap<PathBuf, String>> {
    let mut by_file: BTreeMap<&Path, Vec<&Replacement>> = BTreeMap::new();
    // Edits come file by file: one look-up per run of one file's edits.
    for run in edits.chunk_by(|a, b| a.path == b.path) {
        by_file
            .entry(run[0].path.as_path())
            .or_default()
            .extend(run);
    }
    let mut out = BTreeMap::new();
    for (path, mut list) in by_file {
        let old = texts
            .get(path)
            .ok_or_else(|| EditError::NotRead(path.to_path_buf()))?;
        list.sort_by_key(|e| (e.start, e.end));
        let mut new = String::with_capacity(old.len());
        let mut at = 0;
        for e in list {
            if e.start < at
                || e.end > old.len()
                || !old.is_char_boundary(e.start)
                || !old.is_char_boundary(e.end)
            {
                return Err(EditError::Invalid(format!(
                    "{}: overlapping or out-of-range edit at byte {}",
                    path.display(),
                    e.start
                )));
            }
            new.push_str(&old[at..e.start]);
            new.push_str(&e.text);
            at = e.end;
        }
        new.push_str(&old[at..]);
        if &new != old {
            out.insert(path.to_path_buf(), new);
        }
    }
    Ok(out)
}

/// Lines of context around each change of a diff.
const CONTEXT: usize = 3;

/// A unified diff of one file (3 lines of context). An edit that keeps the file's lines (a
/// rename, a relabel: each changed line is one changed line) is diffed line by line, in time
/// linear in the file; any other by Myers' algorithm, whose time grows with the file's size
/// times the lines changed (seconds for a terminology file that changes most lines of a book).
pub fn diff(path: &Path, old: &str, new: &str) -> String {
    let name = path.display().to_string();
    if let Some(fast) = diff_line_by_line(&name, old, new) {
        return fast;
    }
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(CONTEXT)
        .header(&format!("a/{name}"), &format!("b/{name}"))
        .to_string()
}

/// The unified diff of two texts of as many lines, each ending with a newline, as `similar`
/// writes it, with each changed line taken as replaced (its old line removed, its new one
/// added); `None` for other texts.
fn diff_line_by_line(name: &str, old: &str, new: &str) -> Option<String> {
    let a: Vec<&str> = old.split_inclusive('\n').collect();
    let b: Vec<&str> = new.split_inclusive('\n').collect();
    let terminated = |t: &str| t.is_empty() || t.ends_with('\n');
    if a.len() != b.len() || !terminated(old) || !terminated(new) {
        return None;
    }
    let changed: Vec<usize> = (0..a.len()).filter(|&i| a[i] != b[i]).collect();
    let Some(&first) = changed.first() else {
        return Some(String::new());
    };
    // Hunks: changes whose unchanged lines between them are at most twice the context apart.
    let mut hunks: Vec<Vec<usize>> = vec![vec![first]];
    for &i in &changed[1..] {
        let last = hunks.last_mut().expect("one hunk");
        if i - last[last.len() - 1] - 1 > 2 * CONTEXT {
            hunks.push(vec![i]);
        } else {
            last.push(i);
        }
    }
    let mut out = format!("--- a/{name}\n+++ b/{name}\n");
    for hunk in hunks {
        let start = hunk[0].saturating_sub(CONTEXT);
        let end = (hunk[hunk.len() - 1] + 1 + CONTEXT).min(a.len());
        let range = if end - start == 1 {
            format!("{}", start + 1)
        } else {
            format!("{},{}", start + 1, end - start)
        };
        out.push_str(&format!("@@ -{range} +{range} @@\n"));
        let mut i = start;
        while i < end {
            if a[i] == b[i] {
                out.push(' ');
                out.push_str(a[i]);
                i += 1;
                continue;
            }
            let run = (i..end).take_while(|&k| a[k] != b[k]).count();
            for line in &a[i..i + run] {
                out.push('-');
                out.push_str(line);
            }
            for line in &b[i..i + run] {
                out.push('+');
                out.push_str(line);
            }
            i += run;
        }
    }
    Some(out)
}

/// One file of an undo record; `path` is relative to the edit root (the folder holding the
/// undo records' folder).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct Saved {
    path: PathBuf,
    old: String,
    new: String,
    /// The encoding the file is written in, when not UTF-8 (`windows-1252`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    encoding: Option<String>,
}

impl Saved {
    fn encoding(&self) -> Result<Encoding> {
        match &self.encoding {
            None => Ok(Encoding::UTF8),
            Some(name) => Encoding::from_name(name).ok_or_else(|| {
                EditError::Invalid(format!(
                    "{}: unknown encoding `{name}` in the undo record",
                    self.path.display()
                ))
            }),
        }
    }
}

/// `text` in the encoding `path` is written in, or an error naming the first character it
/// cannot hold.
pub(crate) fn encode(path: &Path, encoding: Encoding, text: &str) -> Result<Vec<u8>> {
    encoding.encode(text).map_err(|c| {
        EditError::Invalid(format!(
            "{}: the edit writes `{c}`, which {} (the file's encoding) cannot hold; nothing written",
            path.display(),
            encoding.name()
        ))
    })
}

/// The text of `path` now, decoded; an error when it holds bytes its encoding does not define
/// (writing it back would change them).
fn read_exact(path: &Path, encoding: Encoding) -> Result<String> {
    let decoded = ledger_parse::encoding::read(path, encoding).map_err(io(path))?;
    if !decoded.lossless() {
        return Err(EditError::Invalid(format!(
            "{}: holds bytes that are not valid {}; fix them before editing this file, nothing written",
            path.display(),
            encoding.name()
        )));
    }
    Ok(decoded.text)
}

/// The edit root of the undo records under `undo_root`: the folder holding it, canonical.
fn edit_root(undo_root: &Path) -> Result<PathBuf> {
    let root = undo_root.parent().unwrap_or(Path::new("."));
    let root = if root.as_os_str().is_empty() {
        Path::new(".")
    } else {
        root
    };
    std::fs::canonicalize(root).map_err(io(root))
}

/// `path` (relative to `root`, or absolute) resolved with symlinks followed, when it lies inside
/// `root` (canonical).
fn inside(root: &Path, path: &Path) -> Option<PathBuf> {
    let full = std::fs::canonicalize(root.join(path)).ok()?;
    full.starts_with(root).then_some(full)
}

fn sync_dir(dir: &Path) -> Result<()> {
    std::fs::File::open(dir)
        .and_then(|f| f.sync_all())
        .map_err(io(dir))
}

fn write_synced(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    let mut f = std::fs::File::create(path).map_err(io(path))?;
    f.write_all(bytes).map_err(io(path))?;
    f.sync_all().map_err(io(path))
}

/// Writes the text that will replace `original` beside it, synced, with `original`'s mode and
/// (where the process may) owner, so that the rename keeps both.
fn write_replacement(tmp: &Path, original: &Path, bytes: &[u8]) -> Result<()> {
    write_synced(tmp, bytes)?;
    let meta = std::fs::metadata(original).map_err(io(original))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        // Only root may give a file away; anyone else keeps their own ownership.
        let _ = std::os::unix::fs::chown(tmp, Some(meta.uid()), Some(meta.gid()));
    }
    std::fs::set_permissions(tmp, meta.permissions()).map_err(io(tmp))
}

/// Writes `changes` (path → (old text, new text)) atomically, each file in its encoding
/// (`encodings`; UTF-8 for a file not named), after checking that every file still holds its
/// old text and lies inside the edit root (the folder holding `undo_root`); saves the old texts
/// in a new undo record under `undo_root` and returns the record's folder.
pub fn commit(
    changes: &BTreeMap<PathBuf, (String, String)>,
    encodings: &BTreeMap<PathBuf, Encoding>,
    undo_root: &Path,
) -> Result<PathBuf> {
    let root = edit_root(undo_root)?;
    prepare_undo_root(undo_root)?;
    // Another edit of this root commits whole before this one checks what it read.
    let _lock = lock_edits(undo_root)?;
    if let Some(record) = unfinished_record(undo_root) {
        return Err(EditError::Unfinished(record));
    }
    let mut saved = Vec::with_capacity(changes.len());
    let mut bytes = Vec::with_capacity(changes.len());
    for (path, (old, new)) in changes {
        let encoding = encodings.get(path).copied().unwrap_or(Encoding::UTF8);
        let now = read_exact(path, encoding)?;
        bytes.push(encode(path, encoding, new)?);
        if &now != old {
            return Err(EditError::Changed(path.clone()));
        }
        // A relative path is the caller's, relative to the working folder, not to the root.
        let absolute = std::path::absolute(path).map_err(io(path))?;
        let full = inside(&root, &absolute).ok_or_else(|| {
            EditError::Invalid(format!(
                "{} lies outside the edit root {}; nothing written",
                path.display(),
                root.display()
            ))
        })?;
        saved.push((
            full.clone(),
            Saved {
                path: full.strip_prefix(&root).unwrap_or(&full).to_path_buf(),
                old: old.clone(),
                new: new.clone(),
                encoding: (encoding != Encoding::UTF8).then(|| encoding.name().to_string()),
            },
        ));
    }
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let record = undo_root.join(format!("{stamp}"));
    // The record is written aside and renamed into place: a crash leaves no record without
    // its content.
    // It says it is being written until every file is: a crash between two files leaves a
    // record that the next edit refuses to build on and that `verify` reports.
    let partial = undo_root.join(format!("{PARTIAL}{stamp}"));
    let records: Vec<&Saved> = saved.iter().map(|(_, s)| s).collect();
    let json = serde_json::to_vec(&records).map_err(|e| EditError::Invalid(e.to_string()))?;
    let written = std::fs::create_dir_all(&partial)
        .map_err(io(&partial))
        .and_then(|()| write_synced(&partial.join("record.json"), &json))
        .and_then(|()| write_synced(&partial.join(WRITING), b""))
        .and_then(|()| sync_dir(&partial))
        .and_then(|()| std::fs::rename(&partial, &record).map_err(io(&record)));
    if let Err(e) = written {
        // A full disk, say: nothing of the record is left behind.
        let _ = std::fs::remove_dir_all(&partial);
        return Err(e);
    }
    sync_dir(undo_root)?;
    // Every new text aside, synced; then the renames.
    let tmp = |p: &Path| {
        let mut name = p.file_name().unwrap_or_default().to_os_string();
        name.push(format!(".ledger-tmp-{}", std::process::id()));
        p.with_file_name(name)
    };
    for ((path, _), new) in saved.iter().zip(&bytes) {
        if let Err(e) = write_replacement(&tmp(path), path, new) {
            for (path, _) in &saved {
                let _ = std::fs::remove_file(tmp(path));
            }
            let _ = std::fs::remove_dir_all(&record);
            return Err(e);
        }
    }
    // Crash tests stop the process here, between two files.
    let pause = std::env::var("LEDGER_EDIT_PAUSE_BETWEEN_FILES_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map(std::time::Duration::from_millis);
    for (k, (path, _)) in saved.iter().enumerate() {
        if k > 0
            && let Some(p) = pause
        {
            std::thread::sleep(p);
        }
        std::fs::rename(tmp(path), path).map_err(io(path))?;
        if let Some(dir) = path.parent() {
            sync_dir(dir)?;
        }
    }
    let marker = record.join(WRITING);
    std::fs::remove_file(&marker).map_err(io(&marker))?;
    sync_dir(&record)?;
    Ok(record)
}

/// The file in an undo record that says its edit is still being written.
const WRITING: &str = "writing";

/// An undo record under `undo_root` whose edit never finished writing its files (the process
/// died between two of them): the files are part old, part new until `undo` restores them.
pub fn unfinished_record(undo_root: &Path) -> Option<PathBuf> {
    let record = last_record(undo_root)?;
    record.join(WRITING).exists().then_some(record)
}

/// Takes the edit root's lock (`.ledger-undo/.lock`), waiting while another process holds it;
/// released when the file is dropped or the process dies.
pub(crate) fn lock_edits(undo_root: &Path) -> Result<std::fs::File> {
    let path = undo_root.join(".lock");
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(io(&path))?;
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            tracing::warn!(
                "another edit under {} is being written; waiting for it to finish",
                undo_root.parent().unwrap_or(undo_root).display()
            );
            file.lock().map_err(io(&path))?;
        }
        Err(std::fs::TryLockError::Error(e)) => return Err(io(&path)(e)),
    }
    Ok(file)
}

/// The prefix of an undo record being written.
const PARTIAL: &str = ".partial-";

/// Creates the undo records' folder with a `.gitignore` that keeps it out of version control,
/// and removes what commits killed mid-way left there over an hour ago.
fn prepare_undo_root(undo_root: &Path) -> Result<()> {
    std::fs::create_dir_all(undo_root).map_err(io(undo_root))?;
    let ignore = undo_root.join(".gitignore");
    if !ignore.exists() {
        std::fs::write(&ignore, "# LEDGER's undo records\n*\n").map_err(io(&ignore))?;
    }
    let hour_ago = std::time::SystemTime::now()
        .checked_sub(std::time::Duration::from_secs(3600))
        .unwrap_or(std::time::UNIX_EPOCH);
    for e in std::fs::read_dir(undo_root)
        .map_err(io(undo_root))?
        .flatten()
    {
        let stale = e.file_name().to_string_lossy().starts_with(PARTIAL)
            && e.metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|t| t < hour_ago);
        if stale {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
    Ok(())
}

/// The newest complete undo record under `undo_root`; a record folder without its
/// `record.json` (left by a crash of an older version) is passed over with a warning.
pub fn last_record(undo_root: &Path) -> Option<PathBuf> {
    let mut records: Vec<(u128, PathBuf)> = std::fs::read_dir(undo_root)
        .ok()?
        .flatten()
        .filter_map(|e| Some((e.file_name().to_str()?.parse().ok()?, e.path())))
        .collect();
    records.sort();
    while let Some((_, record)) = records.pop() {
        if record.join("record.json").is_file() {
            return Some(record);
        }
        tracing::warn!(record = %record.display(), "incomplete undo record passed over");
    }
    None
}

/// Restores the old texts of an undo record (each file atomically), then removes the record.
/// Files that hold neither the old nor the new text are left alone and named in the error. A
/// record naming a file that resolves outside the edit root (the folder holding the records'
/// folder) is refused whole: records may come with a folder someone else prepared.
pub fn undo(record: &Path) -> Result<Vec<PathBuf>> {
    let _lock = lock_edits(record.parent().unwrap_or(record))?;
    let bytes = std::fs::read(record.join("record.json")).map_err(io(record))?;
    let refuse = |message: String| EditError::Record {
        path: record.to_path_buf(),
        message,
    };
    let saved: Vec<Saved> = serde_json::from_slice(&bytes).map_err(|e| refuse(e.to_string()))?;
    let root = edit_root(record.parent().unwrap_or(record))?;
    let mut files = Vec::with_capacity(saved.len());
    for s in &saved {
        let path = inside(&root, &s.path).ok_or_else(|| {
            refuse(format!(
                "names {}, which is missing or outside the edit root {}; nothing restored",
                s.path.display(),
                root.display()
            ))
        })?;
        let encoding = s.encoding()?;
        let now = read_exact(&path, encoding)?;
        if now != s.old && now != s.new {
            return Err(EditError::Changed(path));
        }
        files.push((path, encode(&s.path, encoding, &s.old)?));
    }
    let mut restored = Vec::new();
    for (path, old) in &files {
        let mut name = path.file_name().unwrap_or_default().to_os_string();
        name.push(".ledger-undo-tmp");
        let t = path.with_file_name(name);
        write_replacement(&t, path, old)?;
        std::fs::rename(&t, path).map_err(io(path))?;
        restored.push(path.clone());
    }
    // New texts a crashed commit left aside.
    for (path, _) in &files {
        if let (Some(dir), Some(name)) = (path.parent(), path.file_name()) {
            let prefix = format!("{}.ledger-tmp-", name.to_string_lossy());
            for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                if e.file_name().to_string_lossy().starts_with(&prefix) {
                    let _ = std::fs::remove_file(e.path());
                }
            }
        }
    }
    std::fs::remove_dir_all(record).map_err(io(record))?;
    Ok(restored)
}

#[cfg(test)]
mod tests {
    /// The line-by-line diff is the one `similar` writes, where each changed line is replaced.
    #[test]
    fn line_by_line_diffs_are_similar_s() {
        let old: String = (0..30).map(|k| format!("line {k}\n")).collect();
        let cases: [&[usize]; 8] = [
            &[0],
            &[29],
            &[10],
            &[10, 11, 12],
            &[5, 12],
            &[5, 13],
            &[0, 1, 7, 20, 28, 29],
            &[],
        ];
        for changed in cases {
            let new: String = (0..30)
                .map(|k| {
                    if changed.contains(&k) {
                        format!("LINE {k}\n")
                    } else {
                        format!("line {k}\n")
                    }
                })
                .collect();
            let slow = similar::TextDiff::from_lines(old.as_str(), new.as_str())
                .unified_diff()
                .context_radius(super::CONTEXT)
                .header("a/f.md", "b/f.md")
                .to_string();
            let fast = super::diff_line_by_line("f.md", &old, &new).expect("same lines");
            assert_eq!(fast, slow, "{changed:?}");
        }
        assert_eq!(
            super::diff_line_by_line("f", "x\n", "y\n"),
            Some("--- a/f\n+++ b/f\n@@ -1 +1 @@\n-x\n+y\n".into())
        );
        // Other line counts, or a last line without its newline, go to `similar`.
        assert!(super::diff_line_by_line("f", "x\n", "x\ny\n").is_none());
        assert!(super::diff_line_by_line("f", "x", "y").is_none());
    }
}
