//! What a parse looked at on disk: every file read (with the hash of its bytes), every path
//! checked or looked for, every folder listed. The builder records them as the parser reads;
//! [`unchanged`] observes them again, so that a later run knows without parsing whether a new
//! parse would read the same bytes and therefore give the same document.

use ledger_core::{Input, Seen};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The observations of one parse, and the folder its reads are confined to.
#[derive(Debug, Default)]
pub(crate) struct Recorder {
    seen: BTreeSet<Input>,
    root: Option<Root>,
}

/// The folder a document's reads are confined to: as named, and resolved.
#[derive(Debug)]
struct Root {
    named: PathBuf,
    resolved: PathBuf,
}

impl Recorder {
    /// A recorder whose reads stay inside `root` (when given).
    pub(crate) fn confined_to(root: Option<&Path>) -> Recorder {
        let root = root.map(|r| {
            let named = crate::paths::lexical_absolute(r);
            Root {
                resolved: std::fs::canonicalize(r).unwrap_or_else(|_| named.clone()),
                named,
            }
        });
        Recorder {
            seen: BTreeSet::new(),
            root,
        }
    }

    /// Why `path` may not be read: it lies outside the root, symlinks resolved (a path that
    /// does not exist is judged by its name).
    pub(crate) fn refused(&self, path: &Path) -> Option<String> {
        let root = self.root.as_ref()?;
        let inside = match std::fs::canonicalize(path) {
            Ok(real) => real.starts_with(&root.resolved),
            Err(_) => {
                let named = crate::paths::lexical_absolute(path);
                named.starts_with(&root.named) || named.starts_with(&root.resolved)
            }
        };
        (!inside).then(|| {
            format!(
                "{} {}: not read (index.allow_outside_root or --allow-outside-root permit it)",
                crate::paths::OUTSIDE_ROOT,
                root.named.display()
            )
        })
    }

    fn note(&mut self, path: &Path, seen: Seen) {
        self.seen.insert(Input {
            path: path.display().to_string(),
            seen,
        });
    }

    /// Reads `path` as text in the encoding `reading` decides (see
    /// [`crate::source_file::read_source`]) and records its bytes' hash; a file that could not be
    /// read is recorded by its raw bytes, or as absent.
    pub(crate) fn read(
        &mut self,
        path: &Path,
        reading: crate::source_file::Reading,
    ) -> Result<crate::source_file::SourceFile, String> {
        if let Some(why) = self.refused(path) {
            return Err(why);
        }
        let bytes = crate::source_file::read_bytes(path);
        let seen = match &bytes {
            Ok(b) => Seen::Read(ledger_core::content_hash(b)),
            Err(_) => observe_file(path),
        };
        self.note(path, seen);
        Ok(crate::source_file::read_source(&bytes?, reading))
    }

    /// Whether `path` is a file, recorded. A path outside the root counts as one, unobserved, so
    /// that reading it is what is refused (and nothing is learned of files outside).
    pub(crate) fn is_file(&mut self, path: &Path) -> bool {
        if self.refused(path).is_some() {
            return true;
        }
        let found = path.is_file();
        self.note(path, if found { Seen::Exists } else { Seen::Absent });
        found
    }

    /// The Markdown files under `dir` (sorted by name at every level), recorded.
    pub(crate) fn markdown_files(&mut self, dir: &Path) -> Vec<PathBuf> {
        let (files, hash) = markdown_listing(dir);
        self.note(dir, Seen::Listing(hash));
        files
    }

    /// The observations, sorted.
    pub(crate) fn into_inputs(self) -> Vec<Input> {
        self.seen.into_iter().collect()
    }
}

/// A file as read now: its bytes' hash, or absent when it cannot be read.
fn observe_file(path: &Path) -> Seen {
    if !path.is_file() {
        return Seen::Absent;
    }
    match std::fs::read(path) {
        Ok(bytes) => Seen::Read(ledger_core::content_hash(&bytes)),
        Err(_) => Seen::Absent,
    }
}

/// The `.md` files under `dir` and the hash of their paths.
fn markdown_listing(dir: &Path) -> (Vec<PathBuf>, String) {
    let files: Vec<PathBuf> = walkdir::WalkDir::new(dir)
        .sort_by_file_name()
        .into_iter()
        .filter_map(Result::ok)
        .map(|e| e.into_path())
        .filter(|p| p.extension().is_some_and(|e| e == "md") && p.is_file())
        .collect();
    let mut h = blake3::Hasher::new();
    for f in &files {
        h.update(f.display().to_string().as_bytes());
        h.update(&[0]);
    }
    (files, h.finalize().to_hex().to_string())
}

/// True when every observation of `inputs` holds again now: each file has the same bytes, each
/// checked path is (or is not) a file as before, each folder lists the same Markdown files. An
/// empty record (a document parsed before records existed) is never unchanged.
pub fn unchanged(inputs: &[Input]) -> bool {
    !inputs.is_empty()
        && inputs.iter().all(|input| {
            let path = Path::new(&input.path);
            match &input.seen {
                Seen::Read(_) => observe_file(path) == input.seen,
                Seen::Exists => path.is_file(),
                Seen::Absent => !path.is_file(),
                Seen::Listing(hash) => markdown_listing(path).1 == *hash,
            }
        })
}
