//! Paths as documents name them: lexically normalised, `/`-separated, relative to a root.

use std::path::{Component, Path};

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
