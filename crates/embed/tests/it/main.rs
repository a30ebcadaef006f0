//! HNSW against exact brute force on the same vectors, with a fixed seed.

use ledger_embed::{HnswParams, NeighbourIndex, exact_pairs_above, recall};
use std::time::Instant;

/// SplitMix64: a tiny seeded generator, so the data set is the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn uniform(&mut self) -> f32 {
        ((self.next() >> 40) as f32 + 0.5) / (1u64 << 24) as f32
    }

    /// Box–Muller.
    fn gaussian(&mut self) -> f32 {
        let (u, v) = (self.uniform(), self.uniform());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f32::consts::PI * v).cos()
    }
}

fn normalise(mut v: Vec<f32>) -> Vec<f32> {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter_mut().for_each(|x| *x /= n);
    v
}

/// Topic clusters: unit vectors scattered around random centres so that many pairs in a cluster
/// lie on both sides of θ = 0.7 (the hard case), like embeddings of units about the same topic.
fn clustered(n: usize, dim: usize, per_cluster: usize, seed: u64) -> Vec<Vec<f32>> {
    let mut rng = Rng(seed);
    let mut out = Vec::with_capacity(n);
    let mut centre = Vec::new();
    for i in 0..n {
        if i % per_cluster == 0 {
            centre = normalise((0..dim).map(|_| rng.gaussian()).collect());
        }
        let spread = 0.025 + 0.015 * rng.uniform();
        out.push(normalise(
            centre.iter().map(|c| c + spread * rng.gaussian()).collect(),
        ));
    }
    out
}

#[test]
fn hnsw_related_pairs_recall_against_brute_force() {
    let n: usize = std::env::var("LEDGER_RECALL_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    // 30 per cluster: at most 29 neighbours above θ, within the k = 32 asked for.
    let vectors = clustered(n, 384, 30, 7);
    let theta = 0.7;
    let t = Instant::now();
    let exact = exact_pairs_above(&vectors, theta);
    let exact_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let index = NeighbourIndex::build(&vectors, HnswParams::default());
    let approx = index.pairs_above(&vectors, theta);
    let hnsw_s = t.elapsed().as_secs_f64();
    let r = recall(&approx, &exact);
    eprintln!(
        "n={n}: {} exact pairs above {theta}; HNSW found {} (recall {r:.4}); exact {exact_s:.1} s, HNSW build+query {hnsw_s:.1} s",
        exact.len(),
        approx.len()
    );
    assert!(
        exact.len() > n,
        "the data set must have many pairs near θ ({} pairs)",
        exact.len()
    );
    assert!(approx.iter().all(|p| p.2 > theta && p.0 < p.1));
    assert!(r >= 0.99, "recall {r} below the 0.99 floor");
}

#[test]
fn search_finds_the_query_itself_first() {
    let vectors = clustered(2_000, 64, 20, 11);
    let index = NeighbourIndex::build(&vectors, HnswParams::default());
    for i in [0, 17, 1999] {
        let hits = index.search(&vectors[i], 5);
        assert_eq!(hits[0].0, i);
        assert!((hits[0].1 - 1.0).abs() < 1e-4);
    }
}

#[test]
fn clusters_larger_than_k_are_found_whole() {
    // 100 near-duplicates per cluster: each vector has 99 neighbours above θ, three times k = 32.
    let vectors = clustered(3_000, 128, 100, 3);
    let theta = 0.5;
    let exact = exact_pairs_above(&vectors, theta);
    let approx =
        NeighbourIndex::build(&vectors, HnswParams::default()).pairs_above(&vectors, theta);
    let r = recall(&approx, &exact);
    assert!(
        exact.len() >= 30 * 4950 * 9 / 10,
        "{} exact pairs",
        exact.len()
    );
    assert!(r >= 0.99, "recall {r} in clusters larger than k");
}
