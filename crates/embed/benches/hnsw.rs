//! HNSW against brute force: time to find every unit's RELATED neighbours (its k = 10 strongest
//! with cosine > 0.7) and the recall, on seeded synthetic topic clusters of 384-dimensional
//! vectors (MiniLM's size).
//!
//! `cargo bench -p ledger-embed --bench hnsw` runs 10,000 and 100,000 vectors;
//! `LEDGER_BENCH_SIZES=10000,100000,1000000` adds a million. Above `LEDGER_BENCH_EXACT_MAX`
//! (default 200,000) the all-pairs search would take hours: its time is extrapolated from exact
//! searches of a sample of rows against all vectors, and recall is measured on that sample.
//! `LEDGER_BENCH_M` and `LEDGER_BENCH_EF_CONSTRUCTION` (lists) measure other HNSW parameters
//! than the defaults, each combination on the same vectors.

use ledger_embed::{
    HnswParams, NeighbourIndex, Neighbours, bounded_pairs, clustered, exact_neighbours,
    exact_neighbours_of, recall, skip_none,
};
use std::time::Instant;

fn env_list(name: &str, default: &str) -> Vec<usize> {
    std::env::var(name)
        .unwrap_or_else(|_| default.into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect()
}

fn main() {
    let sizes = env_list("LEDGER_BENCH_SIZES", "10000,100000");
    let exact_max = env_list("LEDGER_BENCH_EXACT_MAX", "200000")[0];
    println!(
        "| vectors | M | ef_construction | RELATED pairs | brute force (s) | HNSW build (s) | HNSW query (s) | speed-up | recall |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let defaults = HnswParams::default();
    let ms = env_list("LEDGER_BENCH_M", &defaults.max_connections.to_string());
    let efs = env_list(
        "LEDGER_BENCH_EF_CONSTRUCTION",
        &defaults.ef_construction.to_string(),
    );
    for n in sizes {
        let vectors = clustered(n, 384, 30, 7);
        let mut exact = None;
        for (m, ef) in ms.iter().flat_map(|&m| efs.iter().map(move |&ef| (m, ef))) {
            let params = HnswParams {
                max_connections: m,
                ef_construction: ef,
                ..defaults
            };
            run(&vectors, params, exact_max, &mut exact);
        }
    }
}

/// The exact neighbours of a size: seconds (extrapolated when sampled), the rows searched
/// (all, or a sample) and their neighbours.
struct Exact {
    seconds: f64,
    rows: Vec<usize>,
    neighbours: Neighbours,
    sampled: bool,
}

/// The exact search of `vectors` (every row up to `exact_max` vectors, else a sample of rows).
fn exact_search(vectors: &[Vec<f32>], exact_max: usize, theta: f32, k: usize) -> Exact {
    let n = vectors.len();
    let t = Instant::now();
    if n <= exact_max {
        let neighbours = exact_neighbours(vectors, theta, k, &skip_none);
        return Exact {
            seconds: t.elapsed().as_secs_f64(),
            rows: (0..n).collect(),
            neighbours,
            sampled: false,
        };
    }
    // Every (n / 5000)-th row against all vectors; the full search does the upper triangle,
    // half of all rows × all vectors.
    let rows: Vec<usize> = (0..n).step_by((n / 5000).max(1)).collect();
    let neighbours = exact_neighbours_of(vectors, &rows, theta, k);
    let seconds = t.elapsed().as_secs_f64() * (n as f64 / rows.len() as f64) / 2.0;
    Exact {
        seconds,
        rows,
        neighbours,
        sampled: true,
    }
}

/// One size with one set of parameters (the exact search is done once per size).
fn run(vectors: &[Vec<f32>], params: HnswParams, exact_max: usize, cache: &mut Option<Exact>) {
    let (theta, k) = (0.7, 10);
    let n = vectors.len();
    let t = Instant::now();
    let index = NeighbourIndex::build(vectors, params);
    let build = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let approx = index.neighbours(vectors, theta, k, &skip_none);
    let query = t.elapsed().as_secs_f64();
    drop(index);
    let pairs = bounded_pairs(&approx, k).len();
    let exact = cache.get_or_insert_with(|| exact_search(vectors, exact_max, theta, k));
    let sample: Vec<_> = exact.rows.iter().map(|&i| approx[i].clone()).collect();
    let r = recall(&sample, &exact.neighbours);
    let note = if exact.sampled { " (extrapolated)" } else { "" };
    println!(
        "| {n} | {} | {} | {pairs} | {:.1}{note} | {build:.1} | {query:.1} | {:.2}× | {r:.4} |",
        params.max_connections,
        params.ef_construction,
        exact.seconds,
        exact.seconds / (build + query)
    );
}
