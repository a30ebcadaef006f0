//! Documents/s of `ledger index` (embedded, all cores and one thread) and of a coordinator with
//! N workers, each on a fresh graph, through the broker of `queue.amqp`.

use super::process::{Ledger, timed};
use crate::error::{Context, Result};
use ledger_pipeline::Config;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};

/// What `ledger bench distributed` measured.
pub struct DistributedReport {
    /// Documents in the corpus.
    pub documents: usize,
    /// The job queue used.
    pub queue: String,
    /// Each mode and its seconds; the first two are embedded (all cores, one thread).
    pub rows: Vec<(String, f64)>,
}

/// Runs every mode on `paths`: embedded, then a coordinator with each of `workers` workers.
pub fn distributed(
    ledger: &Ledger,
    paths: &[PathBuf],
    workers: &[usize],
    config: &Config,
) -> Result<DistributedReport> {
    let dir = tempfile::tempdir()?;
    let inputs: Vec<String> = paths
        .iter()
        .map(|p| std::fs::canonicalize(p).map(|p| p.display().to_string()))
        .collect::<Result<_, _>>()
        .context("resolving the inputs")?;
    let run = |mode: &str, out: &Path, extra: &[&str]| {
        let mut args: Vec<&str> = vec![mode];
        args.extend(inputs.iter().map(String::as_str));
        args.extend(["--out", out.to_str().unwrap_or_default()]);
        args.extend_from_slice(extra);
        ledger.command(&args)
    };
    let documents = ledger_parse::discover(paths).0.len();
    let embedded = timed(run("index", &dir.path().join("embedded"), &[]))?;
    let embedded_1 = timed(run(
        "index",
        &dir.path().join("embedded-1"),
        &["--jobs", "1"],
    ))?;
    let mut rows = vec![
        ("embedded (all cores)".to_string(), embedded),
        ("embedded (1 thread)".to_string(), embedded_1),
    ];
    // Workers read the inputs and write parts under the run's folder, nothing else.
    let mut roots: Vec<&str> = vec!["--root", dir.path().to_str().unwrap_or_default()];
    for input in &inputs {
        roots.extend(["--root", input.as_str()]);
    }
    for &n in workers {
        let out = dir.path().join(format!("workers-{n}"));
        let coordinator = run("coordinator", &out, &[]);
        let mut pool: Vec<Child> = (0..n)
            .map(|_| {
                let mut args = vec!["worker", "--exit-when-idle", "2"];
                args.extend_from_slice(&roots);
                ledger
                    .command(&args)
                    .stderr(Stdio::null())
                    .spawn()
                    .context("starting a worker")
            })
            .collect::<Result<_>>()?;
        let seconds = timed(coordinator);
        for w in &mut pool {
            let _ = w.wait();
        }
        rows.push((
            format!("{n} worker{}", if n == 1 { "" } else { "s" }),
            seconds?,
        ));
    }
    ledger.delete_queue(config)?;
    Ok(DistributedReport {
        documents,
        queue: ledger.queue.clone(),
        rows,
    })
}

impl fmt::Display for DistributedReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let docs = self.documents;
        writeln!(
            f,
            "{docs} documents; each run on a fresh graph, RabbitMQ job queue `{}`\n",
            self.queue
        )?;
        writeln!(f, "| mode | seconds | documents/s | ratio to embedded |")?;
        writeln!(f, "|---|---:|---:|---:|")?;
        let embedded = self.rows[0].1;
        for (mode, seconds) in &self.rows {
            writeln!(
                f,
                "| {mode} | {seconds:.2} | {:.2} | {:.2} |",
                docs as f64 / seconds,
                embedded / seconds
            )?;
        }
        if let Some((_, one)) = self.rows.iter().find(|r| r.0 == "1 worker") {
            writeln!(
                f,
                "\nqueue overhead: {:.1} ms per document (1 worker against embedded with 1 thread, process start-up included)",
                (one - self.rows[1].1) / docs.max(1) as f64 * 1000.0
            )?;
        }
        Ok(())
    }
}
