//! BM25 over unit texts: the lexical relevance of units to an instruction.
//!
//! Words come from the `bm25` crate's English tokenizer (Unicode normalisation, stop words,
//! Snowball stemming); the index here keeps postings per term so that a query costs the postings
//! of its terms, not a pass over every unit.

use bm25::{DefaultTokenizer, Language, Tokenizer};
use std::collections::HashMap;

/// BM25's term-frequency saturation.
const K1: f32 = 1.2;
/// BM25's length normalisation.
const B: f32 = 0.75;

/// An inverted index of texts (by position) for BM25 scoring.
pub struct Lexical {
    tokenizer: DefaultTokenizer,
    /// Term → (text, occurrences) in text order.
    postings: HashMap<String, Vec<(u32, u32)>>,
    /// Terms per text.
    lengths: Vec<u32>,
    average: f32,
}

impl Lexical {
    /// Indexes `texts`; scores refer to their positions.
    pub fn new<'a>(texts: impl IntoIterator<Item = &'a str>) -> Lexical {
        let tokenizer = DefaultTokenizer::new(Language::English);
        let mut postings: HashMap<String, Vec<(u32, u32)>> = HashMap::new();
        let mut lengths = Vec::new();
        for (i, text) in texts.into_iter().enumerate() {
            let terms = tokenizer.tokenize(text);
            lengths.push(terms.len() as u32);
            let mut counts: HashMap<String, u32> = HashMap::new();
            for t in terms {
                *counts.entry(t).or_default() += 1;
            }
            for (t, n) in counts {
                postings.entry(t).or_default().push((i as u32, n));
            }
        }
        let average = if lengths.is_empty() {
            1.0
        } else {
            (lengths.iter().map(|&l| l as f64).sum::<f64>() / lengths.len() as f64).max(1.0) as f32
        };
        Lexical {
            tokenizer,
            postings,
            lengths,
            average,
        }
    }

    /// BM25 score of every text that shares a term with `query` (each query term counted once),
    /// as (position, score) in position order.
    pub fn scores(&self, query: &str) -> Vec<(usize, f32)> {
        let mut terms = self.tokenizer.tokenize(query);
        terms.sort_unstable();
        terms.dedup();
        let n = self.lengths.len() as f32;
        let mut scores: HashMap<u32, f32> = HashMap::new();
        for t in &terms {
            let Some(list) = self.postings.get(t) else {
                continue;
            };
            let df = list.len() as f32;
            let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            for &(i, tf) in list {
                let tf = tf as f32;
                let len = self.lengths[i as usize] as f32;
                let norm = tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * len / self.average));
                *scores.entry(i).or_default() += idf * norm;
            }
        }
        let mut out: Vec<(usize, f32)> = scores.into_iter().map(|(i, s)| (i as usize, s)).collect();
        out.sort_unstable_by_key(|&(i, _)| i);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rare_shared_terms_score_highest() {
        let ix = Lexical::new([
            "The measure of the set is finite.",
            "A Carleson operator bounds the maximal function.",
            "The set is open and the set is closed.",
        ]);
        let s = ix.scores("bound the Carleson operators");
        assert_eq!(s.len(), 1, "{s:?}");
        assert_eq!(s[0].0, 1);
        let s = ix.scores("sets");
        assert_eq!(s.iter().map(|x| x.0).collect::<Vec<_>>(), vec![0, 2]);
        assert!(s.iter().all(|x| x.1 > 0.0));
        assert!(ix.scores("").is_empty());
    }
}
