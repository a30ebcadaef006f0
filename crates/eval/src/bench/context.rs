//! The time of a context query on a graph: LEDGER's ranking against BM25 and reading around the
//! target, in the same run; the graph's load and the instruction's embedding timed apart.

use crate::error::{EvalError, Result};
use crate::strategy::{self, Method, Query};
use ledger_core::UnitKind;
use ledger_pipeline::Config;
use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The instruction of every timed context query.
const INSTRUCTION: &str = "Strengthen the hypothesis and update every result that uses it";

/// What `ledger bench context` measured.
pub struct ContextReport {
    /// The graph.
    pub graph: PathBuf,
    /// Its units.
    pub units: usize,
    /// Queries timed per strategy.
    pub queries: usize,
    /// Token budget of each context.
    pub budget: usize,
    /// Seconds to load the graph, to build its BM25 index, to embed the instruction.
    pub load: f64,
    /// Seconds to build the BM25 index.
    pub lexical_index: f64,
    /// Seconds to embed the instruction and take its cosines.
    pub embedding: f64,
    /// Why the instruction has no embedding relevance, when it has none.
    pub no_relevance: Option<String>,
    /// Each strategy: median and 95th percentile milliseconds per query.
    pub rows: Vec<(&'static str, f64, f64)>,
}

/// Times `queries` context queries (targets spread over the theorem-like units, of `doc` when
/// given) with a budget of `budget` tokens.
pub fn context(
    path: &Path,
    doc: Option<&str>,
    queries: usize,
    budget: usize,
    config: &Config,
) -> Result<ContextReport> {
    let started = Instant::now();
    let graph = ledger_pipeline::retrieval::load(path)?;
    let load = started.elapsed().as_secs_f64();
    let started = Instant::now();
    graph.lexical();
    let lexical_index = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let relevance =
        ledger_pipeline::retrieval::instruction_relevance(path, &graph, INSTRUCTION, config);
    let embedding = started.elapsed().as_secs_f64();
    let (relevance, no_relevance) = match relevance {
        Ok(r) => (Some(r), None),
        Err(e) => (None, Some(e.to_string())),
    };
    let units = graph.units();
    let candidates: Vec<usize> = (0..units.len())
        .filter(|&i| units[i].kind == UnitKind::Theorem)
        .filter(|&i| doc.is_none_or(|d| units[i].doc_id == d))
        .collect();
    if candidates.is_empty() {
        return Err(EvalError::Invalid(format!(
            "no theorem-like unit to query in {}",
            path.display()
        )));
    }
    let step = candidates.len().div_ceil(queries.max(1));
    let targets: Vec<usize> = candidates.iter().copied().step_by(step).collect();
    let mut doc_units: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, u) in units.iter().enumerate() {
        if u.kind != UnitKind::Document {
            doc_units.entry(u.doc_id.as_str()).or_default().push(i);
        }
    }
    for v in doc_units.values_mut() {
        v.sort_by_key(|&i| units[i].ordinal);
    }
    let methods = [
        ("reading around the target", Method::Window(None)),
        ("BM25", Method::Lexical),
        ("LEDGER", Method::Ledger(config.retrieve.ranking())),
    ];
    let query = Query {
        targets: &[],
        instruction: Some(INSTRUCTION),
        dense: relevance.as_ref(),
    };
    let mut rows = Vec::new();
    for (name, method) in &methods {
        let mut times: Vec<f64> = targets
            .iter()
            .map(|&t| {
                let started = Instant::now();
                let doc = &doc_units[units[t].doc_id.as_str()];
                let query = Query {
                    targets: &[t],
                    ..query
                };
                let r = strategy::retrieve(method, &graph, doc, budget, query);
                std::hint::black_box(r);
                started.elapsed().as_secs_f64() * 1000.0
            })
            .collect();
        times.sort_by(f64::total_cmp);
        let median = times[times.len() / 2];
        let p95 = times[(times.len() * 95 / 100).min(times.len() - 1)];
        rows.push((*name, median, p95));
    }
    Ok(ContextReport {
        graph: path.to_path_buf(),
        units: units.len(),
        queries: targets.len(),
        budget,
        load,
        lexical_index,
        embedding,
        no_relevance,
        rows,
    })
}

impl fmt::Display for ContextReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "graph: {} ({} units); {} queries, budget {}\nload {:.0} ms; BM25 index {:.0} ms (once per graph); instruction embedding and cosines {:.0} ms ({})\n",
            self.graph.display(),
            self.units,
            self.queries,
            self.budget,
            self.load * 1000.0,
            self.lexical_index * 1000.0,
            self.embedding * 1000.0,
            if self.no_relevance.is_none() {
                "used"
            } else {
                "none: no embeddings"
            }
        )?;
        writeln!(
            f,
            "| strategy | median ms / query | p95 ms | median / reading around |\n|---|---:|---:|---:|"
        )?;
        let base = self.rows[0].1.max(1e-9);
        for (name, median, p95) in &self.rows {
            writeln!(
                f,
                "| {name} | {median:.2} | {p95:.2} | {:.1}× |",
                median / base
            )?;
        }
        Ok(())
    }
}
