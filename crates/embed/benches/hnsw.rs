//! HNSW against brute force: time to find every unit's RELATED neighbours (its k = 10 strongest
//! with cosine > 0.7) and the recall, on seeded synthetic topic clusters of 384-dimensional
//! vectors (MiniLM's size).
//!
//! `cargo bench -p ledger-embed --bench hnsw` runs 10,000 and 100,000 vectors;
//! `LEDGER_BENCH_SIZES=10000,100000,1000000` adds a million. Above `LEDGER_BENCH_EXACT_MAX`
//! (default 200,000) the all-pairs search would take hours: its time is extrapolated from exact
//! searches of a sample of rows against all vectors, and recall is measured on that sample.

use ledger_embed::{
    HnswParams, NeighbourIndex, bounded_pairs, clustered, exact_neighbours, exact_neighbours_of,
    recall, skip_none,
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
    let (theta, k) = (0.7, 10);
    println!(
        "| vectors | RELATED pairs | brute force (s) | HNSW build (s) | HNSW query (s) | speed-up | recall |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|");
    for n in sizes {
        let vectors = clustered(n, 384, 30, 7);
        let t = Instant::now();
        let index = NeighbourIndex::build(&vectors, HnswParams::default());
        let build = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let approx = index.neighbours(&vectors, theta, k, &skip_none);
        let query = t.elapsed().as_secs_f64();
        drop(index);
        let pairs = bounded_pairs(&approx, k).len();
        let (exact_s, r, note) = if n <= exact_max {
            let t = Instant::now();
            let exact = exact_neighbours(&vectors, theta, k, &skip_none);
            (t.elapsed().as_secs_f64(), recall(&approx, &exact), "")
        } else {
            // Every (n / 5000)-th row against all vectors; the full search does the upper
            // triangle, half of all rows × all vectors.
            let step = (n / 5000).max(1);
            let rows: Vec<usize> = (0..n).step_by(step).collect();
            let t = Instant::now();
            let exact = exact_neighbours_of(&vectors, &rows, theta, k);
            let sample_s = t.elapsed().as_secs_f64();
            let approx_sample: Vec<_> = rows.iter().map(|&i| approx[i].clone()).collect();
            let full = sample_s * (n as f64 / rows.len() as f64) / 2.0;
            (full, recall(&approx_sample, &exact), " (extrapolated)")
        };
        println!(
            "| {n} | {pairs} | {exact_s:.1}{note} | {build:.1} | {query:.1} | {:.2}× | {r:.4} |",
            exact_s / (build + query)
        );
    }
}
