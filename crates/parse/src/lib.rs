//! LaTeX and Markdown documents → units, CONTAINS edges and explicit references.
//!
//! [`discover`] finds the documents under some paths (LaTeX main files with what they
//! include, Markdown files, mdBook folders); [`parse`] turns one into a
//! [`ledger_core::Document`]; [`resolve_corpus`] resolves the references that cross documents.
//!
//! Parsing never fails: unreadable, malformed or unsupported input becomes diagnostics
//! on the document. This crate does no network IO and knows nothing of storage.

mod builder;
mod counters;
pub mod encoding;
pub mod inputs;
mod latex;
mod markdown;
mod paths;
pub mod prose;
pub mod regions;
mod resolve;
mod source_file;
pub mod throughput;
pub mod tokens;

use ledger_core::{Diagnostic, Document, Format, Severity};
use regex::Regex;
use std::collections::{BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

pub use markdown::{heading_slug, reference_definition};

pub use paths::OUTSIDE_ROOT;
pub use resolve::{CorpusIndex, Offer, resolve_corpus};
pub use tokens::Tokenizer;

/// One document found by [`discover`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    /// Stable document id: the input folder's name and the path below it (`hott-book/main.tex`).
    pub id: String,
    /// The LaTeX main file, the Markdown file, or the book folder.
    pub path: PathBuf,
    /// How to parse it.
    pub format: Format,
    /// The folder it was found in (the input named, or a named file's folder): files outside it,
    /// symlinks resolved, are not read, and a diagnostic names each one. `None`: no such bound.
    pub root: Option<PathBuf>,
}

/// Parses one document. Never fails: problems are in `Document::diagnostics`.
/// Token counts are filled when a tokenizer is given.
pub fn parse(source: &Source, tokenizer: Option<&Tokenizer>) -> Document {
    let _span = tracing::debug_span!("parse", doc_id = %source.id).entered();
    let root = source.root.as_deref();
    let mut doc = match source.format {
        Format::Latex => latex::parse(&source.path, &source.id, root, tokenizer),
        Format::Markdown => markdown::parse_file(&source.path, &source.id, root, tokenizer),
        Format::MarkdownBook => markdown::parse_book(&source.path, &source.id, root, tokenizer),
    };
    if doc.bytes == 0 && !doc.files.is_empty() {
        doc.diagnostics.push(Diagnostic {
            path: source.path.display().to_string(),
            line: 1,
            col: 0,
            severity: Severity::Info,
            message: "empty document".into(),
        });
    }
    if doc.files.is_empty() {
        // Nothing could be read as text: hash the raw bytes so a fixed file counts as changed.
        if let Ok(bytes) = std::fs::read(&source.path) {
            doc.bytes = bytes.len() as u64;
            doc.content_hash = ledger_core::content_hash(&bytes);
        }
    }
    doc
}

/// Finds the documents under `inputs` (files or folders), in a stable order.
///
/// A folder's documents are: every mdBook (a folder with `SUMMARY.md`, all Markdown below it),
/// every other Markdown file, every LaTeX file with `\documentclass`, and every LaTeX file that
/// no other LaTeX file includes. Files of other kinds are skipped; inputs that do not exist or
/// are not LaTeX or Markdown are reported as diagnostics.
pub fn discover(inputs: &[PathBuf]) -> (Vec<Source>, Vec<Diagnostic>) {
    discover_excluding(inputs, &[])
}

/// [`discover`], leaving out what a folder's `.gitignore`, `.ignore` or `.git/info/exclude`
/// files ignore (in a git repository or not) and what the `exclude` globs match (relative to each
/// input folder, as in `.gitignore`: `drafts/`, `*.draft.md`, `chapter/old-*.tex`). A file named
/// as an input is never left out. A glob that does not parse is an error diagnostic.
pub fn discover_excluding(
    inputs: &[PathBuf],
    exclude: &[String],
) -> (Vec<Source>, Vec<Diagnostic>) {
    let mut sources = Vec::new();
    let mut diags = Vec::new();
    for input in inputs {
        if input.is_file() {
            let folder = match input.parent() {
                Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
                _ => PathBuf::from("."),
            };
            // As for a folder's documents: the folder's name and the file's (`paper/main.tex`),
            // however the path was written, so that a copy of the folder gives the same ids.
            let folder_name = folder
                .canonicalize()
                .ok()
                .and_then(|c| c.file_name().map(|f| f.to_string_lossy().into_owned()));
            let file_name = input
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_default();
            let id = match &folder_name {
                Some(dir) => format!("{dir}/{file_name}"),
                None => file_name,
            };
            match format_of(input) {
                Some(Format::Markdown) if input.file_name().is_some_and(|f| f == "SUMMARY.md") => {
                    let dir = input.parent().map(Path::to_path_buf).unwrap_or_default();
                    sources.push(Source {
                        id: folder_name
                            .clone()
                            .unwrap_or_else(|| dir.display().to_string()),
                        path: dir,
                        format: Format::MarkdownBook,
                        root: Some(folder),
                    });
                }
                Some(format) => sources.push(Source {
                    id,
                    path: input.clone(),
                    format,
                    root: Some(folder),
                }),
                None => diags.push(Diagnostic {
                    path: input.display().to_string(),
                    line: 0,
                    col: 0,
                    severity: Severity::Error,
                    message: "not a LaTeX (.tex) or Markdown (.md) file; not indexed".into(),
                }),
            }
        } else if input.is_dir() {
            discover_dir(input, exclude, &mut sources, &mut diags);
        } else {
            diags.push(Diagnostic {
                path: input.display().to_string(),
                line: 0,
                col: 0,
                severity: Severity::Error,
                message: "no such file or folder".into(),
            });
        }
    }
    // Ids are unique: a second input with the same name gets a suffix.
    let mut seen = HashSet::new();
    for s in &mut sources {
        let mut id = s.id.clone();
        let mut k = 2;
        while !seen.insert(id.clone()) {
            id = format!("{}~{k}", s.id);
            k += 1;
        }
        s.id = id;
    }
    (sources, diags)
}

fn format_of(p: &Path) -> Option<Format> {
    match p.extension()?.to_str()? {
        "tex" | "ltx" | "latex" => Some(Format::Latex),
        "md" | "markdown" => Some(Format::Markdown),
        _ => None,
    }
}

fn discover_dir(
    dir: &Path,
    exclude: &[String],
    sources: &mut Vec<Source>,
    diags: &mut Vec<Diagnostic>,
) {
    let name = dir
        .canonicalize()
        .ok()
        .and_then(|c| c.file_name().map(|f| f.to_string_lossy().into_owned()))
        .unwrap_or_else(|| dir.display().to_string());
    let id_of = |p: &Path| -> String {
        let rel = p.strip_prefix(dir).unwrap_or(p);
        let rel = paths::normalise(rel);
        if rel.is_empty() {
            name.clone()
        } else {
            format!("{name}/{rel}")
        }
    };
    let mut overrides = ignore::overrides::OverrideBuilder::new(dir);
    for glob in exclude {
        if let Err(e) = overrides.add(&format!("!{glob}")) {
            diags.push(Diagnostic {
                path: format!("--exclude {glob}"),
                line: 0,
                col: 0,
                severity: Severity::Error,
                message: format!("not a glob: {e}"),
            });
            return;
        }
    }
    let overrides = match overrides.build() {
        Ok(o) => o,
        Err(e) => {
            diags.push(Diagnostic {
                path: "--exclude".into(),
                line: 0,
                col: 0,
                severity: Severity::Error,
                message: format!("not a glob: {e}"),
            });
            return;
        }
    };
    let mut files = Vec::new();
    // As ripgrep walks, without the user's global git excludes (the same inputs give the same
    // documents on every machine); hidden files and build folders skipped.
    let walker = ignore::WalkBuilder::new(dir)
        .hidden(true)
        .parents(true)
        .ignore(true)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(false)
        .require_git(false)
        .follow_links(false)
        .overrides(overrides)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(|e| {
            let n = e.file_name().to_string_lossy();
            e.depth() == 0 || !(n == "target" || n == "node_modules")
        })
        .build();
    for entry in walker {
        match entry {
            Ok(e) if e.file_type().is_some_and(|t| t.is_file()) => files.push(e.into_path()),
            Ok(e)
                if e.path_is_symlink() && (format_of(e.path()).is_some() || e.path().is_dir()) =>
            {
                diags.push(Diagnostic {
                    path: e.path().display().to_string(),
                    line: 0,
                    col: 0,
                    severity: Severity::Warning,
                    message: "a symbolic link: not followed, not indexed (name its target instead)"
                        .into(),
                })
            }
            Ok(_) => {}
            // A line of an ignore file that does not parse is skipped, with a warning.
            Err(e) if e.is_partial() => diags.push(Diagnostic {
                path: dir.display().to_string(),
                line: 0,
                col: 0,
                severity: Severity::Warning,
                message: format!("ignore file: {e}"),
            }),
            Err(e) => diags.push(Diagnostic {
                path: dir.display().to_string(),
                line: 0,
                col: 0,
                severity: Severity::Error,
                message: format!("cannot walk: {e}"),
            }),
        }
    }
    let books: Vec<PathBuf> = files
        .iter()
        .filter(|f| f.file_name().is_some_and(|n| n == "SUMMARY.md"))
        .filter_map(|f| f.parent().map(Path::to_path_buf))
        .collect();
    for b in &books {
        sources.push(Source {
            id: id_of(b),
            path: b.clone(),
            format: Format::MarkdownBook,
            root: Some(dir.to_path_buf()),
        });
    }
    let in_book = |p: &Path| books.iter().any(|b| p.starts_with(b));
    let mut tex = Vec::new();
    for f in &files {
        match format_of(f) {
            Some(Format::Markdown) if !in_book(f) => sources.push(Source {
                id: id_of(f),
                path: f.clone(),
                format: Format::Markdown,
                root: Some(dir.to_path_buf()),
            }),
            Some(Format::Latex) => tex.push(f.clone()),
            _ => {}
        }
    }
    // LaTeX: main files, plus files nobody includes.
    static DOCCLASS: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"(?m)^[^%\n]*\\documentclass").expect("valid"));
    static INPUT: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?m)^[^%\n]*?\\(?:input|include|subfile|InputIfFileExists)\s*(?:\{([^}]+)\}|([A-Za-z0-9_./-]+))").expect("valid")
    });
    let mut mains = BTreeSet::new();
    let mut included = HashSet::new();
    for f in &tex {
        let Ok(bytes) = std::fs::read(f) else {
            mains.insert(f.clone());
            continue;
        };
        let text = String::from_utf8_lossy(&bytes);
        if DOCCLASS.is_match(&text) {
            mains.insert(f.clone());
        }
        for c in INPUT.captures_iter(&text) {
            let Some(target) = c.get(1).or(c.get(2)) else {
                continue;
            };
            let target = target.as_str().trim();
            // LaTeX resolves inputs against the main file's folder; try every folder up to the input root.
            let mut base = f.parent();
            while let Some(b) = base {
                for candidate in [b.join(target), b.join(format!("{target}.tex"))] {
                    if let Ok(c) = candidate.canonicalize() {
                        included.insert(c);
                    }
                }
                if b == dir {
                    break;
                }
                base = b.parent();
            }
        }
    }
    for f in &tex {
        let canon = f.canonicalize().unwrap_or_else(|_| f.clone());
        if mains.contains(f) || !included.contains(&canon) {
            sources.push(Source {
                id: id_of(f),
                path: f.clone(),
                format: Format::Latex,
                root: Some(dir.to_path_buf()),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_input_is_reported() {
        let (s, d) = discover(&[PathBuf::from("/definitely/not/here")]);
        assert!(s.is_empty());
        assert_eq!(d.len(), 1);
        assert!(d[0].message.contains("no such file"));
    }
}
