//! The offline default embedder: signed feature hashing of words, word pairs and character
//! 4-grams into 384 dimensions, sublinear term frequency, stop words removed, L2-normalised.
//!
//! It needs no download and embeds tens of thousands of summaries per second on one core. Its
//! scale differs from MiniLM's: unrelated texts score near 0 (MiniLM: 0.0–0.3), paraphrases
//! sharing few words score 0.2–0.5 (MiniLM: 0.7–0.9), and only texts sharing most of their
//! content words pass 0.7. At θ = 0.7 it therefore links near-duplicates and close variants.
//! The embedding is a pure function of the text, so it can be cached by summary hash.

use crate::{EmbedError, Embedder};

/// Dimensions of the hashing embedder (the same as MiniLM's, so tables have one shape).
pub const DIM: usize = 384;

/// The offline default embedder.
#[derive(Debug, Clone, Copy, Default)]
pub struct HashingEmbedder;

const STOP: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "for", "from", "has", "have", "if",
    "in", "is", "it", "its", "of", "on", "or", "that", "the", "then", "there", "this", "to", "we",
    "which", "with", "was", "were", "will", "be", "not", "but", "so", "such", "these", "those",
    "also", "any", "all", "one", "our", "us", "let", "where", "when", "into", "than", "each",
];

/// FNV-1a, 64 bit: stable across platforms and releases (unlike `std`'s hasher).
fn fnv(parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            h ^= 0x1f;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        for b in p.bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

fn add(v: &mut [f32], h: u64, w: f32) {
    let idx = (h % DIM as u64) as usize;
    let sign = if (h >> 63) & 1 == 1 { -1.0 } else { 1.0 };
    v[idx] += sign * w;
}

/// The embedding of one text (all zeros for a text without content words).
pub fn embed_one(text: &str) -> Vec<f32> {
    let lower = text.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty() && !STOP.contains(w))
        .collect();
    let mut counts: std::collections::BTreeMap<(u8, String), f32> = Default::default();
    for w in &words {
        *counts.entry((0, (*w).to_string())).or_default() += 1.0;
        let chars: Vec<char> = format!("<{w}>").chars().collect();
        for g in chars.windows(4) {
            *counts.entry((2, g.iter().collect())).or_default() += 1.0;
        }
    }
    for pair in words.windows(2) {
        *counts
            .entry((1, format!("{} {}", pair[0], pair[1])))
            .or_default() += 1.0;
    }
    let mut v = vec![0.0f32; DIM];
    for ((kind, feature), tf) in &counts {
        let weight = match kind {
            0 => 1.0,
            1 => 0.7,
            _ => 0.25,
        };
        add(
            &mut v,
            fnv(&[&kind.to_string(), feature]),
            weight * (1.0 + tf.ln()),
        );
    }
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
    v
}

impl Embedder for HashingEmbedder {
    fn model(&self) -> &str {
        "ledger-hash-ngram-384-v1"
    }

    fn dim(&self) -> usize {
        DIM
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        use rayon::prelude::*;
        Ok(texts.par_iter().map(|t| embed_one(t)).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cosine;

    #[test]
    fn normalised_deterministic_and_ordered_by_overlap() {
        let a = embed_one("The loss function L is minimised by gradient descent.");
        assert_eq!(
            a,
            embed_one("The loss function L is minimised by gradient descent.")
        );
        assert!((a.iter().map(|x| x * x).sum::<f32>() - 1.0).abs() < 1e-5);
        let near = embed_one("Gradient descent minimises the loss function L.");
        let far = embed_one("A table comparing the throughput of three parsers.");
        let (s_near, s_far) = (cosine(&a, &near), cosine(&a, &far));
        assert!(s_near > 0.5, "{s_near}");
        assert!(s_far < 0.2, "{s_far}");
        assert!(embed_one("the of and").iter().all(|&x| x == 0.0));
    }
}
