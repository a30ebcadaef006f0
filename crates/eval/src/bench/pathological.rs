//! Inputs that once took quadratic time or memory, each indexed in process at a tenth of its
//! size and at its size: the ratio of the two times is about 10 when the time is linear.

use crate::error::Result;
use ledger_parse::throughput::Pathological;
use ledger_pipeline::{Config, IndexJob, Quiet, Settings, Stage};
use std::fmt;
use std::time::Instant;

/// What `ledger bench pathological` measured: per case, its size, bytes, seconds at its size
/// and at a tenth of it.
pub struct PathologicalReport {
    /// Each case: name, size, bytes, seconds, seconds at a tenth.
    pub rows: Vec<(&'static str, usize, usize, f64, f64)>,
}

/// Indexes every case at `scale` times its size and at a tenth of that, with `config`
/// (whose progress bar the caller turns off).
pub fn pathological(scale: f64, config: &Config) -> Result<PathologicalReport> {
    let stage = Stage::new(Settings::of(config))?;
    let dir = tempfile::tempdir()?;
    let time = |case: Pathological, n: usize| -> Result<(usize, f64)> {
        let input = dir.path().join(format!("{case:?}-{n}"));
        std::fs::create_dir_all(&input)?;
        let (name, text) = case.document(n);
        std::fs::write(input.join(name), &text)?;
        let out = dir.path().join(format!("graph-{case:?}-{n}"));
        let parts = config.store.parts(&out)?;
        let job = IndexJob {
            paths: &[input],
            out: &out,
            parts: &parts,
            command: "ledger bench pathological",
        };
        let started = Instant::now();
        ledger_pipeline::index::index(&job, &stage, &Quiet)?;
        Ok((text.len(), started.elapsed().as_secs_f64()))
    };
    let mut rows = Vec::new();
    for case in Pathological::ALL {
        let n = ((case.size() as f64 * scale) as usize).max(10);
        let (_, small) = time(case, n / 10)?;
        let (bytes, full) = time(case, n)?;
        rows.push((case.name(), n, bytes, full, small));
    }
    Ok(PathologicalReport { rows })
}

impl fmt::Display for PathologicalReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "`ledger index` in process (this configuration: judge, embedder, tokens); a tenth of each size is the baseline\n"
        )?;
        writeln!(
            f,
            "| input | size | MB | seconds | seconds at a tenth | ratio (10 = linear) |"
        )?;
        writeln!(f, "|---|---:|---:|---:|---:|---:|")?;
        for (name, n, bytes, full, small) in &self.rows {
            writeln!(
                f,
                "| {name} | {n} | {:.1} | {full:.2} | {small:.2} | {:.1} |",
                *bytes as f64 / 1e6,
                full / small.max(1e-9)
            )?;
        }
        Ok(())
    }
}
