//! `ledger-eval`'s tests: its measures against gold that people made.

mod depends;
mod far;
mod uses;
