//! Speed, as ratios against a baseline measured in the same run (`ledger bench`): each function
//! measures and returns a report whose `Display` is a Markdown table; none prints.
//! - [`distributed`]: documents/s of the embedded mode and of N workers;
//! - [`context`]: the time of a context query on a graph, against the baselines';
//! - [`pathological`]: how the time of inputs that once took quadratic time grows with size;
//! - [`scale`]: time and peak memory against corpus size, embedded and distributed, cold,
//!   unchanged and after one document changed.
//!
//! - [`parse`]: parse throughput, `ledger_parse::throughput`'s.
//!
//! Runs that need processes (a coordinator
//! and its workers) run the `ledger` binary given as [`Ledger`].

mod context;
mod distributed;
mod pathological;
mod process;
mod scale;

pub use context::{ContextReport, context};
pub use distributed::{DistributedReport, distributed};
pub use pathological::{PathologicalReport, pathological};
pub use process::Ledger;
pub use scale::{ScaleRequest, scale};

/// Parse throughput of `paths`, best of `repeat` passes, as a Markdown table (with the token
/// count when `with_tokens`).
pub fn parse(paths: &[std::path::PathBuf], repeat: usize, with_tokens: bool) -> String {
    use ledger_parse::throughput::{markdown, parse_throughput};
    let (bytes, docs, rows) = parse_throughput(paths, repeat, with_tokens);
    markdown(bytes, docs, repeat, &rows)
}
