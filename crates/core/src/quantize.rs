//! Embedding vectors as a graph stores them: int8 with a scale per vector (scalar quantization,
//! as qdrant's), a quarter of f32's bytes. The scale is `max |element| / 127` rounded up to a
//! 17-bit mantissa, so that `q × scale` and `127 × scale` are exact in f32 and quantizing the
//! vector read back gives the same `(q, scale)`: a vector read from a graph and written again is
//! unchanged, so a rerun writes what a cold run writes. Embedders' vectors are put on this grid
//! ([`as_stored`]) as soon as they are computed, so that RELATED and every other use see the
//! vectors the graph holds.

/// Low mantissa bits a scale leaves at 0: `q × scale` needs 7 more bits than the scale's.
const FREE_BITS: u32 = 7;

/// `vector` quantized: each element ≈ `q[i] × scale`; the largest in magnitude is ±127 × scale
/// (a zero vector has scale 1). Non-finite elements count as 0; elements near `f32::MAX` do not
/// come back (an embedder's vectors are normalised).
pub fn quantize(vector: &[f32]) -> (Vec<i8>, f32) {
    let finite = |x: f32| if x.is_finite() { x } else { 0.0 };
    let max = vector.iter().fold(0f32, |m, &x| m.max(finite(x).abs()));
    if max == 0.0 {
        return (vec![0; vector.len()], 1.0);
    }
    // Rounded up, so that no element exceeds 127 × scale.
    let mask = (1u32 << FREE_BITS) - 1;
    let scale = f32::from_bits(((max / 127.0).to_bits() + mask) & !mask);
    let q = vector
        .iter()
        .map(|&x| (finite(x) / scale).round().clamp(-127.0, 127.0) as i8)
        .collect();
    (q, scale)
}

/// The vector `q × scale` ([`quantize`]).
pub fn dequantize(q: &[i8], scale: f32) -> Vec<f32> {
    q.iter().map(|&x| f32::from(x) * scale).collect()
}

/// `vector` as a graph stores it: quantized and back ([`quantize`]).
pub fn as_stored(vector: &[f32]) -> Vec<f32> {
    let (q, scale) = quantize(vector);
    dequantize(&q, scale)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_vectors_are_a_fixed_point_and_close_to_the_original() {
        let mut vectors: Vec<Vec<f32>> = vec![
            vec![0.5, -1.0, 2.0],
            vec![0.0; 4],
            vec![f32::NAN, f32::INFINITY, 0.25, -0.125],
            vec![1e-40, -3e-39],
            vec![1e38, -3e37],
        ];
        // Unit vectors of every kind of spread, from a fixed generator.
        let mut seed = 0x9e37_79b9_u32;
        for n in 1..300 {
            let v: Vec<f32> = (0..(n % 40) * 10 + 1)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 17;
                    seed ^= seed << 5;
                    (seed as f32 / u32::MAX as f32 - 0.5) * (n as f32).powi(3)
                })
                .collect();
            let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            vectors.push(v.iter().map(|x| x / norm).collect());
        }
        for v in &vectors {
            let (q, scale) = quantize(v);
            assert_eq!(q.len(), v.len());
            assert!(scale.is_finite() && scale > 0.0, "{v:?}: {scale}");
            let back = dequantize(&q, scale);
            assert_eq!(quantize(&back), (q.clone(), scale), "{v:?}");
            assert_eq!(as_stored(&back), back);
            if v.iter().any(|x| x.is_finite() && *x != 0.0) {
                assert_eq!(q.iter().map(|x| x.unsigned_abs()).max(), Some(127), "{v:?}");
            }
            for (x, y) in v.iter().zip(&back) {
                if x.is_finite() {
                    assert!(
                        (x - y).abs() <= scale * 0.5001,
                        "{x} → {y} at scale {scale}"
                    );
                }
            }
        }
        assert_eq!(quantize(&[0.5, -1.0, 2.0]).0, vec![32, -63, 127]);
    }
}
