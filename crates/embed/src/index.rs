//! Nearest neighbours by cosine: an HNSW index (`hnsw_rs`) for corpora of any size, and the exact
//! brute-force search it is tested against. RELATED candidates are the pairs above θ.

use hnsw_rs::anndists::dist::Distance;
use hnsw_rs::hnsw::Hnsw;
use rayon::prelude::*;

/// Cosine distance for L2-normalised vectors: `1 − a·b`, clamped at 0 against rounding.
#[derive(Debug, Clone, Copy, Default)]
pub struct UnitCosine;

impl Distance<f32> for UnitCosine {
    fn eval(&self, a: &[f32], b: &[f32]) -> f32 {
        (1.0 - crate::cosine(a, b)).max(0.0)
    }
}

/// HNSW parameters.
#[derive(Debug, Clone, Copy)]
pub struct HnswParams {
    /// Links per node and layer (hnsw_rs exits the process above 256; checked here).
    pub max_connections: usize,
    /// Candidates explored while inserting.
    pub ef_construction: usize,
    /// Candidates explored while searching.
    pub ef_search: usize,
    /// Neighbours asked for per unit.
    pub k: usize,
}

impl Default for HnswParams {
    fn default() -> Self {
        HnswParams {
            max_connections: 16,
            ef_construction: 100,
            ef_search: 64,
            k: 32,
        }
    }
}

/// A pair of vector indices `(i < j)` with their cosine.
pub type Pair = (usize, usize, f32);

/// An HNSW index over a set of normalised vectors.
pub struct NeighbourIndex<'a> {
    hnsw: Hnsw<'a, f32, UnitCosine>,
    params: HnswParams,
}

impl<'a> NeighbourIndex<'a> {
    /// Builds the index (in parallel over the vectors).
    pub fn build(vectors: &'a [Vec<f32>], params: HnswParams) -> Self {
        let max_connections = params.max_connections.clamp(2, 256);
        let layers = 16;
        let hnsw = Hnsw::new(
            max_connections,
            vectors.len().max(1),
            layers,
            params.ef_construction,
            UnitCosine,
        );
        let data: Vec<(&Vec<f32>, usize)> = vectors.iter().zip(0..).collect();
        hnsw.parallel_insert(&data);
        NeighbourIndex { hnsw, params }
    }

    /// The `k` nearest vectors to `query` as `(index, cosine)`, best first.
    pub fn search(&self, query: &[f32], k: usize) -> Vec<(usize, f32)> {
        self.hnsw
            .search(query, k, self.params.ef_search.max(2 * k))
            .into_iter()
            .map(|n| (n.d_id, 1.0 - n.distance))
            .collect()
    }

    /// Every pair whose cosine exceeds `theta`, found through each vector's neighbours: `k` at
    /// first, doubled while the farthest one is still above `theta` (dense clusters of near
    /// duplicates, such as generated reference pages, have more than `k` such neighbours).
    pub fn pairs_above(&self, vectors: &[Vec<f32>], theta: f32) -> Vec<Pair> {
        let n = vectors.len();
        let mut pairs: Vec<Pair> = vectors
            .par_iter()
            .enumerate()
            .flat_map_iter(|(i, v)| {
                let mut k = self.params.k.max(1) + 1;
                let mut hits = self.search(v, k);
                while hits.len() >= k && k < n && hits.last().is_some_and(|h| h.1 > theta) {
                    k = (k * 2).min(n);
                    hits = self.search(v, k);
                }
                hits.into_iter()
                    .filter(move |&(j, s)| j != i && s > theta)
                    .map(move |(j, s)| (i.min(j), i.max(j), s))
            })
            .collect();
        sort_dedup(&mut pairs);
        pairs
    }
}

fn sort_dedup(pairs: &mut Vec<Pair>) {
    pairs.sort_by_key(|p| (p.0, p.1));
    pairs.dedup_by(|a, b| a.0 == b.0 && a.1 == b.1);
}

/// Exact search: every pair above `theta`, comparing all pairs (quadratic; for tests and small sets).
pub fn exact_pairs_above(vectors: &[Vec<f32>], theta: f32) -> Vec<Pair> {
    let mut pairs: Vec<Pair> = (0..vectors.len())
        .into_par_iter()
        .flat_map_iter(|i| {
            ((i + 1)..vectors.len()).filter_map(move |j| {
                let s = crate::cosine(&vectors[i], &vectors[j]);
                (s > theta).then_some((i, j, s))
            })
        })
        .collect();
    sort_dedup(&mut pairs);
    pairs
}

/// Fraction of `exact` pairs that `approx` also found.
pub fn recall(approx: &[Pair], exact: &[Pair]) -> f64 {
    if exact.is_empty() {
        return 1.0;
    }
    let found: std::collections::HashSet<(usize, usize)> =
        approx.iter().map(|p| (p.0, p.1)).collect();
    exact.iter().filter(|p| found.contains(&(p.0, p.1))).count() as f64 / exact.len() as f64
}
