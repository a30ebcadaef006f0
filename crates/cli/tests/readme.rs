//! The README's `console` blocks, run and compared with what they show (trycmd): every `$ ledger
//! …` line runs against a copy of the bundled `datasets/`, in order, and its output (stdout and
//! stderr) must match the lines under it, where `[..]` stands for any text in a line (times) and
//! a line `...` for any lines. Blocks marked `sh` are not run. A README example that no longer
//! works as written fails here.
//!
//! A failure prints the expected and the actual lines. trycmd turns `\` into `/` in the output it
//! compares (a filter for Windows paths), so LaTeX source in an output is elided with `[..]`; and
//! each command's output ends with a blank line, as trycmd's Markdown format has it.

use std::path::{Path, PathBuf};

#[path = "it/copy_dir.rs"]
mod copy_dir;
use copy_dir::copy_dir;

#[test]
fn every_console_block_of_the_readme_runs_as_shown() {
    let root: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repository root");
    // The examples edit documents and write graphs: they run in a scratch folder holding a copy
    // of the datasets, as a user's checkout would after its first command. This is the only test
    // of this binary, so changing the working directory affects no other.
    let sandbox = tempfile::tempdir().expect("tempdir");
    copy_dir(&root.join("datasets"), &sandbox.path().join("datasets"));
    std::env::set_current_dir(sandbox.path()).expect("cd");
    trycmd::TestCases::new()
        .register_bin("ledger", Path::new(env!("CARGO_BIN_EXE_ledger")))
        // The README's figures are those of the offline defaults with the hashing embedder, off
        // a terminal (no progress lines).
        .env("LEDGER_EMBED_EMBEDDER", "hash")
        .env("LEDGER_INDEX_PROGRESS", "false")
        .env("NO_COLOR", "1")
        .case(root.join("README.md"));
}
