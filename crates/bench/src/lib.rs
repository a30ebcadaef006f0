//! The evaluation harness of the method, without IO: a seeded generator of LaTeX documents with
//! ground truth (units, explicit references, dependencies, related pairs) and edit cases in seven
//! categories ([`generate`]); retrieval strategies over a graph, from full document to LEDGER and
//! its ablations ([`strategy`]); and the metrics of a case under a strategy ([`metrics`]).
//!
//! The binary (`ledger bench`) writes the documents, indexes them with the ordinary pipeline,
//! runs every strategy on every case and writes the report.

pub mod generate;
pub mod metrics;
pub mod strategy;

pub use generate::{Case, Category, Generated, GoldUnit, Spec, generate};
