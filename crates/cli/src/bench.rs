//! `ledger bench`: speed, as ratios against a baseline measured in the same run; the
//! measurement is `ledger_eval::bench`'s, this prints its reports.

use crate::output::out;
use anyhow::{Context, Result};
use clap::Subcommand;
use ledger_eval::bench::{self, Ledger, ScaleRequest};
use ledger_pipeline::config::Config;
use std::path::PathBuf;

/// Which benchmark to run.
#[derive(Subcommand)]
pub enum Which {
    /// Parse + reference extraction throughput in MB/s (one thread and all cores, with and without token counting).
    Parse {
        /// Corpora to parse (files or folders).
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Passes over the corpus per configuration (the best pass counts).
        #[arg(long, default_value_t = 3)]
        repeat: usize,
        /// Leave out the rows with cl100k token counting.
        #[arg(long)]
        no_tokens: bool,
    },
    /// Documents/s of `ledger index` (embedded) and of `ledger coordinator` with N workers on the
    /// same corpus, each on a fresh graph, through the RabbitMQ of `queue.amqp`; ratios against
    /// the embedded run, and the queue's overhead per document (1 worker against embedded with
    /// one thread).
    Distributed {
        /// Corpora (files or folders).
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Worker counts to measure.
        #[arg(long, value_delimiter = ',', default_value = "1,2,4")]
        workers: Vec<usize>,
    },
    /// Time per context query on a graph: LEDGER's ranking (every theorem-like unit, or a sample,
    /// as a target) against BM25 and reading around the target in the same run; the graph's load
    /// and the instruction's embedding are timed apart.
    Context {
        /// The graph folder.
        #[arg(long)]
        graph: PathBuf,
        /// Only targets in this document.
        #[arg(long)]
        doc: Option<String>,
        /// Targets queried (spread evenly over the theorem-like units).
        #[arg(long, default_value_t = 200)]
        queries: usize,
        /// Token budget of each context.
        #[arg(long, default_value_t = 4000)]
        budget: usize,
    },

    /// Corpora of growing size (copies of PATHS, each file marked with its copy number so no two
    /// are byte-identical), each indexed in every mode of --workers on this machine: wall time,
    /// CPU time and cores busy, MB/s, peak RSS (the largest process of the mode), then an
    /// unchanged rerun and a rerun after one document changed; a table and plots in OUT.
    Scale {
        /// Corpora to copy (files or folders).
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Where corpora, graphs, the table and the plots go (corpora are kept for the next run).
        #[arg(long)]
        out: PathBuf,
        /// Corpus sizes in MB.
        #[arg(long, value_delimiter = ',', default_value = "100,300,1000")]
        sizes: Vec<f64>,
        /// The modes to run: 0 is embedded, N is a coordinator with N workers.
        #[arg(long, value_delimiter = ',', default_value = "0,1,2")]
        workers: Vec<usize>,
    },

    /// Inputs that once took quadratic time or memory (nested `enumerate`, unclosed `\ref{`, many
    /// sections, many similar Markdown headings), each indexed in process at a tenth of its size and at its size: the ratio of
    /// the two times is about 10 when the time is linear (100 if quadratic).
    Pathological {
        /// Scale of every case's size (1 = the sizes of the issue that fixed them).
        #[arg(long, default_value_t = 1.0)]
        scale: f64,
    },
}

/// Runs a benchmark and prints its table.
pub fn run(which: Which, config: &Config) -> Result<()> {
    let ledger = || -> Result<Ledger> {
        Ok(Ledger::new(
            std::env::current_exe().context("locating ledger")?,
        ))
    };
    let table = match which {
        Which::Context {
            graph,
            doc,
            queries,
            budget,
        } => {
            let report = bench::context(&graph, doc.as_deref(), queries, budget, config)?;
            if let Some(why) = &report.no_relevance {
                eprintln!("note: no embedding relevance for the instruction: {why}");
            }
            report.to_string()
        }
        Which::Parse {
            paths,
            repeat,
            no_tokens,
        } => bench::parse(&paths, repeat, !no_tokens),
        Which::Distributed { paths, workers } => {
            bench::distributed(&ledger()?, &paths, &workers, config)?.to_string()
        }
        Which::Pathological { scale } => bench::pathological(scale, config)?.to_string(),
        Which::Scale {
            paths,
            out,
            sizes,
            workers,
        } => {
            let request = ScaleRequest {
                paths: &paths,
                out: &out,
                sizes: &sizes,
                workers: &workers,
            };
            bench::scale(&ledger()?, &request, config)?
        }
    };
    out!("{table}");
    Ok(())
}
