//! cl100k token counting (the OpenAI tokenizer used for budgets everywhere in LEDGER).
//!
//! The counts come from `bpe-openai`, an exact cl100k encoder about twice as fast as
//! `tiktoken-rs`; `tests/it/tokens.rs` checks that both give the same count on every unit of the
//! bundled datasets, and `cargo bench -p ledger-parse` compares their speed.

/// Counts cl100k tokens. The BPE tables are built once per process and shared.
pub struct Tokenizer {
    bpe: &'static bpe_openai::Tokenizer,
}

impl Tokenizer {
    /// The process-wide cl100k tokenizer (built on first use).
    pub fn cl100k() -> Self {
        Tokenizer {
            bpe: bpe_openai::cl100k_base(),
        }
    }

    /// Number of tokens in `text`, special tokens treated as ordinary text.
    pub fn count(&self, text: &str) -> usize {
        if text.is_empty() {
            0
        } else {
            self.bpe.count(text)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_known_sentence() {
        // "hello world" is two cl100k tokens.
        assert_eq!(Tokenizer::cl100k().count("hello world"), 2);
        assert_eq!(Tokenizer::cl100k().count(""), 0);
    }
}
