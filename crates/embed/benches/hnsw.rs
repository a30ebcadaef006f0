//! HNSW against brute force: time to find every RELATED pair (cosine > 0.7) and the recall, on
//! seeded synthetic topic clusters of 384-dimensional vectors (MiniLM's size).
//!
//! `cargo bench -p ledger-embed --bench hnsw` runs 10,000 and 100,000 vectors;
//! `LEDGER_BENCH_SIZES=10000,100000,1000000` adds a million. Above `LEDGER_BENCH_EXACT_MAX`
//! (default 200,000) the all-pairs search would take hours: its time is extrapolated from exact
//! searches of a sample of rows against all vectors, and recall is measured on that sample.

use ledger_embed::{
    HnswParams, NeighbourIndex, clustered, exact_pairs_above, exact_rows_above, recall,
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
    let theta = 0.7;
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
        let approx = index.pairs_above(&vectors, theta);
        let query = t.elapsed().as_secs_f64();
        drop(index);
        let (exact_s, r, pairs, note) = if n <= exact_max {
            let t = Instant::now();
            let exact = exact_pairs_above(&vectors, theta);
            let s = t.elapsed().as_secs_f64();
            (s, recall(&approx, &exact), exact.len().to_string(), "")
        } else {
            // Every (n / 5000)-th row against all vectors; the full search does the upper
            // triangle, half of all rows × all vectors.
            let step = (n / 5000).max(1);
            let rows: Vec<usize> = (0..n).step_by(step).collect();
            let t = Instant::now();
            let exact = exact_rows_above(&vectors, &rows, theta);
            let sample_s = t.elapsed().as_secs_f64();
            let in_sample: std::collections::HashSet<usize> = rows.iter().copied().collect();
            let approx_sample: Vec<_> = approx
                .iter()
                .filter(|p| in_sample.contains(&p.0) || in_sample.contains(&p.1))
                .copied()
                .collect();
            let full = sample_s * (n as f64 / rows.len() as f64) / 2.0;
            (
                full,
                recall(&approx_sample, &exact),
                format!("≈{}", approx.len()),
                " (extrapolated)",
            )
        };
        println!(
            "| {n} | {pairs} | {exact_s:.1}{note} | {build:.1} | {query:.1} | {:.2}× | {r:.4} |",
            exact_s / (build + query)
        );
    }
}
