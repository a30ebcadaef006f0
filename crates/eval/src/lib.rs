//! The evaluation of the method. Its parts without IO: a seeded generator of LaTeX documents with
//! ground truth (units, explicit references, dependencies, related pairs) and edit cases in seven
//! categories ([`generate`]); retrieval strategies over a graph, from full document to LEDGER and
//! its ablations ([`strategy`]); the metrics of a case under a strategy ([`metrics`]); an independent resolution of a
//! generated document's references, to check edits against ([`check`]); and DEPENDS verdicts
//! against a blueprint's `\uses` ([`uses`]).
//!
//! The real-edit cases come from the documents' own histories ([`history`]). The harness
//! ([`run`], `ledger eval`) writes the documents, indexes them with the ordinary pipeline
//! (`ledger-pipeline`), runs every strategy on every case, makes and checks the edits, and writes
//! the report.

pub mod bench;
pub mod check;
pub mod depends;
pub mod error;
pub mod generate;
pub mod history;
pub mod latex;
pub mod metrics;
pub mod run;
pub mod setup;
pub mod strategy;
pub mod uses;

pub use error::{EvalError, Result};
pub use generate::{Case, Category, DeterministicEdit, Generated, GoldUnit, Spec, generate};
