//! Integration tests of ledger-parse on real corpora, bad input and arbitrary input (one binary).

mod bad_input;
mod corpora;
mod features;
mod pathological;
mod props;
mod real_world;
mod tokens;

use std::path::PathBuf;

/// The real corpora: `LEDGER_CORPORA`, else the repository's `datasets/`, which holds them.
/// Missing corpora fail the test: a skipped test must not pass for a green one.
pub fn corpora() -> PathBuf {
    let dir = std::env::var_os("LEDGER_CORPORA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../datasets"));
    assert!(
        dir.join("README.md").is_file(),
        "real corpora not found at {} (set LEDGER_CORPORA)",
        dir.display()
    );
    dir
}

/// The bundled datasets of the repository.
pub fn datasets() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../datasets")
}

/// Parses and resolves every document under `dir`.
pub fn parse_dir(dir: &std::path::Path) -> Vec<ledger_core::Document> {
    let (sources, diags) = ledger_parse::discover(&[dir.to_path_buf()]);
    assert!(diags.is_empty(), "discovery problems: {diags:?}");
    let mut docs: Vec<_> = sources
        .iter()
        .map(|s| ledger_parse::parse(s, None))
        .collect();
    ledger_parse::resolve_corpus(&mut docs);
    docs
}
