//! cl100k token counting (the OpenAI tokenizer used for budgets everywhere in LEDGER).

/// Counts cl100k tokens. The BPE tables are built once per process and shared.
pub struct Tokenizer {
    bpe: &'static tiktoken_rs::CoreBPE,
}

impl Tokenizer {
    /// The process-wide cl100k tokenizer (built on first use, about 0.3 s).
    pub fn cl100k() -> Self {
        Tokenizer {
            bpe: tiktoken_rs::cl100k_base_singleton(),
        }
    }

    /// Number of tokens in `text`, special tokens treated as ordinary text.
    pub fn count(&self, text: &str) -> usize {
        if text.is_empty() {
            0
        } else {
            self.bpe.count_ordinary(text)
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
