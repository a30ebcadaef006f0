//! The evaluation harness of the method, without IO: a seeded generator of LaTeX documents with
//! ground truth (units, explicit references, dependencies, related pairs) and edit cases in seven
//! categories ([`generate`]); retrieval strategies over a graph, from full document to LEDGER and
//! its ablations ([`strategy`]); the metrics of a case under a strategy ([`metrics`]); an independent resolution of a
//! generated document's references, to check edits against ([`check`]); and DEPENDS verdicts
//! against a blueprint's `\uses` ([`uses`]).
//!
//! The binary (`ledger bench`) writes the documents, indexes them with the ordinary pipeline,
//! runs every strategy on every case and writes the report.

pub mod check;
pub mod generate;
pub mod history;
pub mod metrics;
pub mod strategy;
pub mod uses;

pub use generate::{Case, Category, DeterministicEdit, Generated, GoldUnit, Spec, generate};
