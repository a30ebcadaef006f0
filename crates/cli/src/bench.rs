//! `ledger bench parse`: parse + reference-extraction throughput (see `ledger_parse::bench`).

use anyhow::Result;
use clap::Subcommand;
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
}

/// Runs a benchmark and prints its table.
pub fn run(which: Which) -> Result<()> {
    match which {
        Which::Parse {
            paths,
            repeat,
            no_tokens,
        } => {
            let (bytes, docs, rows) =
                ledger_parse::bench::parse_throughput(&paths, repeat, !no_tokens);
            print!(
                "{}",
                ledger_parse::bench::markdown(bytes, docs, repeat, &rows)
            );
            Ok(())
        }
    }
}
