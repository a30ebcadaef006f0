//! `ledger bench parse`: parse + reference-extraction throughput, one core against all cores,
//! measured in the same run (the single-core figure is the baseline of the ratios).

use anyhow::{Context, Result};
use clap::Subcommand;
use rayon::prelude::*;
use std::path::PathBuf;
use std::time::Instant;

/// Which benchmark to run.
#[derive(Subcommand)]
pub enum Which {
    /// Parse + reference extraction throughput in MB/s (single core, all cores, with and without token counting).
    Parse {
        /// Corpora to parse (files or folders).
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Passes over the corpus per configuration (the best pass counts).
        #[arg(long, default_value_t = 3)]
        repeat: usize,
    },
}

/// Runs a benchmark and prints its table.
pub fn run(which: Which) -> Result<()> {
    match which {
        Which::Parse { paths, repeat } => parse(&paths, repeat.max(1)),
    }
}

fn parse(paths: &[PathBuf], repeat: usize) -> Result<()> {
    let (sources, _) = ledger_parse::discover(paths);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let tokenizer = ledger_parse::Tokenizer::cl100k();
    tokenizer.count("warm up the BPE tables");
    let mut rows: Vec<(String, f64, f64)> = Vec::new();
    let mut bytes = 0u64;
    for (label, threads, tokens) in [
        ("parse + refs, 1 thread", 1, false),
        ("parse + refs, all cores", cores, false),
        ("parse + refs + tokens, 1 thread", 1, true),
        ("parse + refs + tokens, all cores", cores, true),
    ] {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().context("thread pool")?;
        let mut best = f64::INFINITY;
        for _ in 0..repeat {
            let start = Instant::now();
            let docs: Vec<ledger_core::Document> = pool.install(|| {
                let mut docs: Vec<_> = sources.par_iter().map(|s| ledger_parse::parse(s, tokens.then_some(&tokenizer))).collect();
                ledger_parse::resolve_corpus(&mut docs);
                docs
            });
            best = best.min(start.elapsed().as_secs_f64());
            bytes = docs.iter().map(|d| d.bytes).sum();
        }
        rows.push((format!("{label} ({threads})"), best, bytes as f64 / 1e6 / best));
    }
    println!("corpus: {} documents, {:.2} MB; best of {repeat} passes; {cores} cores", sources.len(), bytes as f64 / 1e6);
    println!("| configuration | seconds | MB/s | vs 1 thread |");
    println!("|---|---:|---:|---:|");
    for (i, (label, secs, mbs)) in rows.iter().enumerate() {
        let base = if i < 2 { rows[0].2 } else { rows[2].2 };
        println!("| {label} | {secs:.3} | {mbs:.1} | {:.2}x |", mbs / base);
    }
    Ok(())
}
