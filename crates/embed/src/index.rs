//! Nearest neighbours by cosine: an HNSW index (`hnsw_rs`) for corpora of any size, and the exact
//! brute-force search it is tested against. RELATED edges are each unit's strongest neighbours
//! above θ, at most `k` per unit ([`bounded_pairs`]).

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
}

impl Default for HnswParams {
    fn default() -> Self {
        HnswParams {
            max_connections: 16,
            ef_construction: 100,
            ef_search: 64,
        }
    }
}

/// A pair of vector indices `(i < j)` with their cosine.
pub type Pair = (usize, usize, f32);

/// For each vector, its nearest others as `(index, cosine)`, strongest first.
pub type Neighbours = Vec<Vec<(usize, f32)>>;

/// Which pairs a neighbour search leaves out (pairs already linked by a stronger kind of edge).
pub type Skip<'s> = &'s (dyn Fn(usize, usize) -> bool + Sync);

/// Leaves out no pair.
pub fn skip_none(_: usize, _: usize) -> bool {
    false
}

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

    /// Each vector's `k` strongest neighbours above `theta` that `skip` does not leave out (the
    /// approximate [`exact_neighbours`]). A search asks for `k + 1` at first and twice as many
    /// while it has not found `k` kept ones and its farthest hit is still above `theta` (left-out
    /// pairs and the vector itself take places in the answer, and HNSW may answer with fewer).
    pub fn neighbours(&self, vectors: &[Vec<f32>], theta: f32, k: usize, skip: Skip) -> Neighbours {
        let n = vectors.len();
        vectors
            .par_iter()
            .enumerate()
            .map(|(i, v)| {
                let mut asked = (k + 1).min(n);
                loop {
                    let hits = self.search(v, asked);
                    // Widen while the farthest hit is still above θ (an approximate search may
                    // also return fewer hits than asked: asking for more then looks further).
                    let widen = asked < n && hits.last().is_some_and(|h| h.1 > theta);
                    let mut top = TopK::new(k);
                    for (j, s) in hits {
                        if j != i && s > theta && !skip(i, j) {
                            top.offer(j, s);
                        }
                    }
                    if top.is_full() || !widen {
                        return top.into_sorted();
                    }
                    asked = (asked * 2).min(n);
                }
            })
            .collect()
    }
}

/// The `k` strongest `(index, cosine)` offered, ties broken by the lower index, so that the
/// result does not depend on the order of the offers.
#[derive(Debug, Clone)]
struct TopK {
    k: usize,
    kept: Vec<(usize, f32)>,
}

impl TopK {
    fn new(k: usize) -> Self {
        TopK {
            k,
            kept: Vec::with_capacity(k.min(64)),
        }
    }

    /// True when `a` ranks before `b`.
    fn before(a: (usize, f32), b: (usize, f32)) -> bool {
        a.1 > b.1 || (a.1 == b.1 && a.0 < b.0)
    }

    fn is_full(&self) -> bool {
        self.kept.len() >= self.k
    }

    /// Would `(j, s)` be kept? (Cheap test before the caller's own checks.)
    fn wants(&self, j: usize, s: f32) -> bool {
        !self.is_full() || self.kept.last().is_some_and(|&w| Self::before((j, s), w))
    }

    fn offer(&mut self, j: usize, s: f32) {
        if self.k == 0 || !self.wants(j, s) {
            return;
        }
        let at = self.kept.partition_point(|&x| Self::before(x, (j, s)));
        self.kept.insert(at, (j, s));
        self.kept.truncate(self.k);
    }

    fn into_sorted(self) -> Vec<(usize, f32)> {
        self.kept
    }
}

/// RELATED pairs under a bound of `k` per vector: the candidates (every vector's neighbours) are
/// taken strongest first, and a pair is kept while both of its vectors have fewer than `k` kept
/// pairs. Each vector ends with at most `k` pairs, the strongest its neighbours allow; a pair left
/// out has a vector whose `k` pairs are all at least as strong. Sorted by `(i, j)`.
pub fn bounded_pairs(neighbours: &[Vec<(usize, f32)>], k: usize) -> Vec<Pair> {
    let mut candidates: Vec<Pair> = neighbours
        .iter()
        .enumerate()
        .flat_map(|(i, row)| row.iter().map(move |&(j, s)| (i.min(j), i.max(j), s)))
        .filter(|p| p.0 != p.1)
        .collect();
    candidates.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)).then(b.2.total_cmp(&a.2)));
    candidates.dedup_by(|a, b| a.0 == b.0 && a.1 == b.1);
    candidates.sort_by(|a, b| b.2.total_cmp(&a.2).then((a.0, a.1).cmp(&(b.0, b.1))));
    let mut degree = vec![0usize; neighbours.len()];
    let mut kept: Vec<Pair> = candidates
        .into_iter()
        .filter(|&(i, j, _)| {
            let free = degree[i] < k && degree[j] < k;
            if free {
                degree[i] += 1;
                degree[j] += 1;
            }
            free
        })
        .collect();
    kept.sort_by_key(|p| (p.0, p.1));
    kept
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

/// Offers the cosine `s` of `(i, j)` to `i`'s list when it is above `theta` and not left out.
// The innermost step of exact search, called once per pair: plain scalars, no struct to build.
#[allow(clippy::too_many_arguments)]
fn offer(top: &mut TopK, i: usize, j: usize, s: f32, theta: f32, skip: Skip) {
    if s > theta && i != j && top.wants(j, s) && !skip(i, j) {
        top.offer(j, s);
    }
}

/// Each vector's `k` strongest neighbours above `theta` that `skip` does not leave out: by
/// [`exact_neighbours`] below `exact_below` vectors (deterministic), else approximately. Above
/// it, identical vectors (repeated paragraphs, equations, copied documents) are searched once:
/// the distinct vectors go through [`exact_neighbours`] (when fewer than `exact_below`) or an HNSW
/// [`NeighbourIndex`], asking for `2k` of them, and each vector's neighbours are its identical
/// vectors (their cosine with it) and the members of its distinct vector's neighbours. With many
/// pairs left out by `skip` a vector may then keep fewer than `k`.
// The search's knobs, each with its own meaning and default at the call sites; a struct would
// only rename them.
#[allow(clippy::too_many_arguments)]
pub fn neighbours(
    vectors: &[Vec<f32>],
    theta: f32,
    k: usize,
    skip: Skip,
    exact_below: usize,
    params: HnswParams,
) -> Neighbours {
    let n = vectors.len();
    if n < exact_below {
        return exact_neighbours(vectors, theta, k, skip);
    }
    // Groups of identical vectors (equal bits), members in index order; found by a hash of the
    // bits, then compared.
    let hash = |v: &[f32]| {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        v.iter().for_each(|x| x.to_bits().hash(&mut h));
        h.finish()
    };
    let same = |a: &[f32], b: &[f32]| a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits());
    let mut by_hash: std::collections::HashMap<u64, Vec<usize>> = Default::default();
    let mut members: Vec<Vec<usize>> = Vec::new();
    let mut group_of = Vec::with_capacity(n);
    for (i, v) in vectors.iter().enumerate() {
        let groups = by_hash.entry(hash(v)).or_default();
        let g = match groups.iter().find(|&&g| same(&vectors[members[g][0]], v)) {
            Some(&g) => g,
            None => {
                members.push(Vec::new());
                groups.push(members.len() - 1);
                members.len() - 1
            }
        };
        members[g].push(i);
        group_of.push(g);
    }
    drop(by_hash);
    if members.len() == n {
        return NeighbourIndex::build(vectors, params).neighbours(vectors, theta, k, skip);
    }
    let distinct: Vec<Vec<f32>> = members.iter().map(|m| vectors[m[0]].clone()).collect();
    let asked = 2 * k;
    let near = if distinct.len() < exact_below {
        exact_neighbours(&distinct, theta, asked, &skip_none)
    } else {
        NeighbourIndex::build(&distinct, params).neighbours(&distinct, theta, asked, &skip_none)
    };
    let own: Vec<f32> = distinct.iter().map(|v| crate::cosine(v, v)).collect();
    (0..n)
        .into_par_iter()
        .map(|i| {
            let g = group_of[i];
            let mut top = TopK::new(k);
            let candidates = std::iter::once((g, own[g])).chain(near[g].iter().copied());
            for (h, score) in candidates {
                if score <= theta {
                    continue;
                }
                for &j in &members[h] {
                    // Members come in index order at one score: once one is refused, so are
                    // the rest.
                    if !top.wants(j, score) {
                        break;
                    }
                    if j != i && !skip(i, j) {
                        top.offer(j, score);
                    }
                }
            }
            top.into_sorted()
        })
        .collect()
}

/// Exact search: each vector's `k` strongest neighbours above `theta` that `skip` does not leave
/// out, comparing all pairs (quadratic, each pair once). The cosines come from blocked matrix
/// products (candle's CPU matmul, SIMD and multi-threaded), about ten times faster than pairwise
/// dot products; memory is the lists plus one block of cosines, whatever the number of vectors.
pub fn exact_neighbours(vectors: &[Vec<f32>], theta: f32, k: usize, skip: Skip) -> Neighbours {
    let n = vectors.len();
    let mut tops = vec![TopK::new(k); n];
    let blocked = uniform_dim(vectors).filter(|_| n >= 2).map(|dim| {
        let blocks = blocks(vectors, dim)?;
        for (bi, (i0, a)) in blocks.iter().enumerate() {
            for (j0, b) in blocks.iter().skip(bi) {
                let (rows, cols) = (a.dim(0)?, b.dim(0)?);
                let scores = cosines(a, b)?;
                // The block's rows, then (off the diagonal) its columns: disjoint lists each.
                tops[*i0..i0 + rows]
                    .par_iter_mut()
                    .enumerate()
                    .for_each(|(r, top)| {
                        for c in 0..cols {
                            offer(top, i0 + r, j0 + c, scores[r * cols + c], theta, skip);
                        }
                    });
                if i0 != j0 {
                    tops[*j0..j0 + cols]
                        .par_iter_mut()
                        .enumerate()
                        .for_each(|(c, top)| {
                            for r in 0..rows {
                                offer(top, j0 + c, i0 + r, scores[r * cols + c], theta, skip);
                            }
                        });
                }
            }
        }
        candle_core::Result::Ok(())
    });
    blocked_or_pairwise(blocked, tops, || {
        let all: Vec<usize> = (0..n).collect();
        exact_neighbours_scalar(vectors, &all, theta, k, skip)
    })
}

/// [`exact_neighbours`] for `rows` only (each against every vector, nothing left out): recall
/// on a sample when all of them would take too long.
pub fn exact_neighbours_of(
    vectors: &[Vec<f32>],
    rows: &[usize],
    theta: f32,
    k: usize,
) -> Neighbours {
    let mut tops = vec![TopK::new(k); rows.len()];
    let blocked = uniform_dim(vectors).map(|dim| {
        let blocks = blocks(vectors, dim)?;
        for (chunk, chunk_tops) in rows.chunks(BLOCK).zip(tops.chunks_mut(BLOCK)) {
            let q = matrix(vectors, chunk.iter().copied(), dim)?;
            for (j0, b) in &blocks {
                let cols = b.dim(0)?;
                let scores = cosines(&q, b)?;
                chunk_tops.par_iter_mut().enumerate().for_each(|(r, top)| {
                    for c in 0..cols {
                        offer(
                            top,
                            chunk[r],
                            j0 + c,
                            scores[r * cols + c],
                            theta,
                            &skip_none,
                        );
                    }
                });
            }
        }
        candle_core::Result::Ok(())
    });
    blocked_or_pairwise(blocked, tops, || {
        exact_neighbours_scalar(vectors, rows, theta, k, &skip_none)
    })
}

/// The lists the blocked search filled, or, when it did not apply (vectors of several lengths)
/// or failed, what `pairwise` computes.
fn blocked_or_pairwise(
    blocked: Option<candle_core::Result<()>>,
    tops: Vec<TopK>,
    pairwise: impl FnOnce() -> Neighbours,
) -> Neighbours {
    match blocked {
        Some(Ok(())) => tops.into_iter().map(TopK::into_sorted).collect(),
        failed => {
            if let Some(Err(e)) = failed {
                tracing::warn!(error = %e, "blocked exact search failed; comparing pairwise");
            }
            pairwise()
        }
    }
}

/// The pairwise exact search for `rows` (vectors of any lengths).
fn exact_neighbours_scalar(
    vectors: &[Vec<f32>],
    rows: &[usize],
    theta: f32,
    k: usize,
    skip: Skip,
) -> Neighbours {
    rows.par_iter()
        .map(|&i| {
            let mut top = TopK::new(k);
            for (j, v) in vectors.iter().enumerate() {
                offer(&mut top, i, j, crate::cosine(&vectors[i], v), theta, skip);
            }
            top.into_sorted()
        })
        .collect()
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

/// Fraction of the `exact` neighbours (row by row) that `approx` also found for the same row.
pub fn recall(approx: &[Vec<(usize, f32)>], exact: &[Vec<(usize, f32)>]) -> f64 {
    let total: usize = exact.iter().map(Vec::len).sum();
    if total == 0 {
        return 1.0;
    }
    let found: usize = exact
        .iter()
        .zip(approx)
        .map(|(e, a)| e.iter().filter(|x| a.iter().any(|y| y.0 == x.0)).count())
        .sum();
    found as f64 / total as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Seeded vectors in 50 clusters, with many pairs on both sides of θ = 0.9.
    fn vectors(n: usize) -> Vec<Vec<f32>> {
        let mut x: u64 = 42;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        };
        let centres: Vec<Vec<f32>> = (0..50).map(|_| (0..16).map(|_| next()).collect()).collect();
        (0..n)
            .map(|i| {
                let v: Vec<f32> = centres[i % 50].iter().map(|c| c + 0.15 * next()).collect();
                let n = v.iter().map(|a| a * a).sum::<f32>().sqrt();
                v.into_iter().map(|a| a / n).collect()
            })
            .collect()
    }

    /// The neighbours' indices, row by row.
    fn ids(n: &Neighbours) -> Vec<Vec<usize>> {
        n.iter().map(|r| r.iter().map(|x| x.0).collect()).collect()
    }

    #[test]
    fn blocked_exact_search_equals_the_pairwise_one() {
        // Across several blocks (5,000 vectors, blocks of 2,048), with pairs left out.
        let vectors = vectors(5000);
        let skip = |i: usize, j: usize| (i + j).is_multiple_of(7);
        let blocked = exact_neighbours(&vectors, 0.9, 10, &skip);
        let all: Vec<usize> = (0..vectors.len()).collect();
        let scalar = exact_neighbours_scalar(&vectors, &all, 0.9, 10, &skip);
        let full = blocked.iter().filter(|r| r.len() == 10).count();
        assert!(full > 4000, "{full} vectors with 10 neighbours");
        // Scores agree to rounding; a neighbour within rounding of another may swap places.
        let differ = ids(&blocked)
            .iter()
            .zip(ids(&scalar))
            .filter(|(a, b)| *a != b)
            .count();
        assert!(differ <= 5, "{differ} lists differ");
        for (i, row) in blocked.iter().enumerate() {
            assert!(row.windows(2).all(|w| w[0].1 >= w[1].1), "row {i} unsorted");
            assert!(row.iter().all(|&(j, s)| j != i && s > 0.9 && !skip(i, j)));
        }
        let rows = [0, 17, 2048, 4999];
        let sample = exact_neighbours_of(&vectors, &rows, 0.9, 10);
        let expect = exact_neighbours_scalar(&vectors, &rows, 0.9, 10, &skip_none);
        assert_eq!(ids(&sample), ids(&expect));
    }

    #[test]
    fn identical_vectors_are_searched_once_and_get_the_exact_neighbours() {
        // 400 distinct vectors, 1,000 in all: vectors 400.. repeat earlier ones, some often.
        let distinct = vectors(400);
        let all: Vec<Vec<f32>> = (0..1000)
            .map(|i| distinct[if i < 400 { i } else { (i * 7) % 40 }].clone())
            .collect();
        let skip = |i: usize, j: usize| (i + j).is_multiple_of(11);
        let exact = exact_neighbours(&all, 0.9, 10, &skip);
        // Above `exact_below` (500) the 400 distinct vectors are searched, exactly.
        let deduplicated = neighbours(&all, 0.9, 10, &skip, 500, HnswParams::default());
        let differ = ids(&exact)
            .iter()
            .zip(ids(&deduplicated))
            .filter(|(a, b)| *a != b)
            .count();
        // Rounding may swap two neighbours within it of each other, nothing more.
        assert!(differ <= 5, "{differ} of 1000 lists differ");
        for (e, d) in exact.iter().zip(&deduplicated) {
            for (x, y) in e.iter().zip(d) {
                assert!((x.1 - y.1).abs() < 1e-5);
            }
        }
        // A repeated vector's neighbours begin with its copies (cosine 1).
        assert!(deduplicated[405].iter().take(3).all(|n| n.1 > 0.9999));
        // Below `exact_below` it is the exact search itself.
        let below = neighbours(&all, 0.9, 10, &skip, 2000, HnswParams::default());
        assert_eq!(ids(&below), ids(&exact));
    }

    #[test]
    fn bounded_pairs_keep_at_most_k_per_vector_and_the_strongest_first() {
        let vectors = vectors(600);
        let k = 4;
        let neighbours = exact_neighbours(&vectors, 0.8, k, &skip_none);
        let pairs = bounded_pairs(&neighbours, k);
        let mut degree = vec![0; vectors.len()];
        for &(i, j, s) in &pairs {
            assert!(i < j && s > 0.8);
            degree[i] += 1;
            degree[j] += 1;
        }
        assert!(degree.iter().all(|&d| d <= k));
        assert!(pairs.len() > vectors.len(), "{} pairs", pairs.len());
        // A candidate left out has a vector whose k kept pairs are all at least as strong.
        let kept: std::collections::HashSet<(usize, usize)> =
            pairs.iter().map(|p| (p.0, p.1)).collect();
        let weakest = |v: usize| {
            pairs
                .iter()
                .filter(|p| p.0 == v || p.1 == v)
                .map(|p| p.2)
                .fold(f32::INFINITY, f32::min)
        };
        for (i, row) in neighbours.iter().enumerate() {
            for &(j, s) in row {
                if !kept.contains(&(i.min(j), i.max(j))) {
                    assert!(
                        (degree[i] == k && weakest(i) >= s) || (degree[j] == k && weakest(j) >= s),
                        "({i}, {j}, {s}) left out while both had room"
                    );
                }
            }
        }
    }
}
