//! Nearest neighbours by cosine: an HNSW index (`hnsw_rs`) for corpora of any size, and the exact
//! brute-force search it is tested against. RELATED candidates are the pairs above θ.

use candle_core::Tensor;
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

/// Rows per block of the exact search (a 2,048 × 2,048 block of cosines is 16 MiB).
const BLOCK: usize = 2048;

/// The vectors as matrices of at most [`BLOCK`] rows each, with the index of their first row.
fn blocks(vectors: &[Vec<f32>], dim: usize) -> candle_core::Result<Vec<(usize, Tensor)>> {
    (0..vectors.len())
        .step_by(BLOCK)
        .map(|start| {
            let end = (start + BLOCK).min(vectors.len());
            Ok((start, matrix(vectors, start..end, dim)?))
        })
        .collect()
}

/// The rows `ids` of `vectors` as one matrix.
fn matrix(
    vectors: &[Vec<f32>],
    ids: impl ExactSizeIterator<Item = usize>,
    dim: usize,
) -> candle_core::Result<Tensor> {
    let rows = ids.len();
    let flat: Vec<f32> = ids.flat_map(|i| vectors[i].iter().copied()).collect();
    Tensor::from_vec(flat, (rows, dim), &candle_core::Device::Cpu)
}

/// All cosines between the rows of `a` and of `b`, row-major (`a.rows × b.rows`).
fn cosines(a: &Tensor, b: &Tensor) -> candle_core::Result<Vec<f32>> {
    a.matmul(&b.t()?)?.flatten_all()?.to_vec1::<f32>()
}

/// True when every vector has the same, non-zero length (what the matrix path needs).
fn uniform_dim(vectors: &[Vec<f32>]) -> Option<usize> {
    let dim = vectors.first().map_or(0, Vec::len);
    (dim > 0 && vectors.iter().all(|v| v.len() == dim)).then_some(dim)
}

/// Exact search: every pair above `theta`, comparing all pairs (quadratic). The cosines come from
/// blocked matrix products (candle's CPU matmul, SIMD and multi-threaded), about ten times faster
/// than pairwise dot products; for tests, benchmarks and scopes small enough to afford it.
pub fn exact_pairs_above(vectors: &[Vec<f32>], theta: f32) -> Vec<Pair> {
    let Some(dim) = uniform_dim(vectors).filter(|_| vectors.len() >= 2) else {
        return exact_pairs_scalar(vectors, theta);
    };
    let run = || -> candle_core::Result<Vec<Pair>> {
        let mut pairs = Vec::new();
        let blocks = blocks(vectors, dim)?;
        for (bi, (i0, a)) in blocks.iter().enumerate() {
            for (bj, (j0, b)) in blocks.iter().enumerate().skip(bi) {
                let (rows, cols) = (a.dim(0)?, b.dim(0)?);
                let scores = cosines(a, b)?;
                for r in 0..rows {
                    let first = if bi == bj { r + 1 } else { 0 };
                    for c in first..cols {
                        let s = scores[r * cols + c];
                        if s > theta {
                            pairs.push((i0 + r, j0 + c, s));
                        }
                    }
                }
            }
        }
        Ok(pairs)
    };
    match run() {
        Ok(mut pairs) => {
            sort_dedup(&mut pairs);
            pairs
        }
        Err(e) => {
            tracing::warn!(error = %e, "blocked exact search failed; comparing pairwise");
            exact_pairs_scalar(vectors, theta)
        }
    }
}

/// Exact pairs above `theta` between each of `rows` and every other vector (for recall on a
/// sample when all pairs are too many to compute). Pairs are `(min, max)`, deduplicated.
pub fn exact_rows_above(vectors: &[Vec<f32>], rows: &[usize], theta: f32) -> Vec<Pair> {
    let run = |dim: usize| -> candle_core::Result<Vec<Pair>> {
        let mut pairs = Vec::new();
        let blocks = blocks(vectors, dim)?;
        for chunk in rows.chunks(BLOCK) {
            let q = matrix(vectors, chunk.iter().copied(), dim)?;
            for (j0, b) in &blocks {
                let cols = b.dim(0)?;
                let scores = cosines(&q, b)?;
                for (r, &i) in chunk.iter().enumerate() {
                    for k in 0..cols {
                        let (j, s) = (j0 + k, scores[r * cols + k]);
                        if j != i && s > theta {
                            pairs.push((i.min(j), i.max(j), s));
                        }
                    }
                }
            }
        }
        Ok(pairs)
    };
    let blocked = uniform_dim(vectors).map(run);
    let mut pairs = match blocked {
        Some(Ok(pairs)) => pairs,
        failed => {
            if let Some(Err(e)) = failed {
                tracing::warn!(error = %e, "blocked search failed; comparing pairwise");
            }
            rows.iter()
                .flat_map(|&i| {
                    (0..vectors.len()).filter_map(move |j| {
                        let s = crate::cosine(&vectors[i], &vectors[j]);
                        (j != i && s > theta).then_some((i.min(j), i.max(j), s))
                    })
                })
                .collect()
        }
    };
    sort_dedup(&mut pairs);
    pairs
}

/// Seeded synthetic topic clusters for tests and benchmarks: unit vectors scattered around random
/// centres (`per_cluster` each) so that many pairs of a cluster lie on both sides of θ = 0.7, like
/// embeddings of units about the same topic.
pub fn clustered(n: usize, dim: usize, per_cluster: usize, seed: u64) -> Vec<Vec<f32>> {
    let mut rng = SplitMix(seed);
    let normalise = |v: Vec<f32>| {
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.into_iter().map(|x| x / norm).collect::<Vec<f32>>()
    };
    let mut out = Vec::with_capacity(n);
    let mut centre = Vec::new();
    for i in 0..n {
        if i % per_cluster.max(1) == 0 {
            centre = normalise((0..dim).map(|_| rng.gaussian()).collect());
        }
        let spread = 0.025 + 0.015 * rng.uniform();
        out.push(normalise(
            centre.iter().map(|c| c + spread * rng.gaussian()).collect(),
        ));
    }
    out
}

/// SplitMix64 with Box–Muller: the same data on every platform and run.
struct SplitMix(u64);

impl SplitMix {
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

    fn gaussian(&mut self) -> f32 {
        let (u, v) = (self.uniform(), self.uniform());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f32::consts::PI * v).cos()
    }
}

/// The pairwise exact search (vectors of any lengths).
fn exact_pairs_scalar(vectors: &[Vec<f32>], theta: f32) -> Vec<Pair> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocked_exact_search_equals_the_pairwise_one() {
        // Across several blocks, with pairs on both sides of θ.
        let mut x: u64 = 42;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        };
        let centres: Vec<Vec<f32>> = (0..50).map(|_| (0..16).map(|_| next()).collect()).collect();
        let vectors: Vec<Vec<f32>> = (0..5000)
            .map(|i| {
                let v: Vec<f32> = centres[i % 50].iter().map(|c| c + 0.15 * next()).collect();
                let n = v.iter().map(|a| a * a).sum::<f32>().sqrt();
                v.into_iter().map(|a| a / n).collect()
            })
            .collect();
        let blocked = exact_pairs_above(&vectors, 0.9);
        let scalar = exact_pairs_scalar(&vectors, 0.9);
        assert!(scalar.len() > 10_000, "{}", scalar.len());
        // Scores agree to rounding; a pair within rounding of θ may sit on either side.
        let key = |p: &[Pair]| {
            p.iter()
                .map(|p| (p.0, p.1))
                .collect::<std::collections::HashSet<_>>()
        };
        let (a, b) = (key(&blocked), key(&scalar));
        let differ = a.symmetric_difference(&b).count();
        assert!(differ <= 2, "{differ} pairs differ");
    }
}
