//! Paths as documents name them: lexically normalised, `/`-separated, relative to a root.

use std::path::{Component, Path, PathBuf};

/// `p` made absolute (against the working folder) with `.` and `..` resolved by name, not by
/// following symlinks.
pub(crate) fn lexical_absolute(p: &Path) -> PathBuf {
    let p = std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Lexically normalises a relative path to `a/b/c.md` (keeping leading `..`).
pub(crate) fn normalise(p: &Path) -> String {
    let mut parts: Vec<String> = Vec::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                if parts.last().is_some_and(|l| l != "..") {
                    parts.pop();
                } else {
                    parts.push("..".into());
                }
            }
            Component::Normal(s) => parts.push(s.to_string_lossy().into_owned()),
            Component::RootDir => parts.push(String::new()),
            _ => {}
        }
    }
    parts.join("/")
}

/// How every diagnostic of a file refused for lying outside the document's folder says so (see
/// [`crate::Source::root`]).
pub const OUTSIDE_ROOT: &str = "outside the input root";
