//! The cl100k counts LEDGER stores (`bpe-openai`) against `tiktoken-rs`, the reference encoder.

use ledger_parse::Tokenizer;

fn reference(text: &str) -> usize {
    if text.is_empty() {
        0
    } else {
        tiktoken_rs::cl100k_base_singleton().count_ordinary(text)
    }
}

/// Every unit of the bundled datasets (the real corpora among them) gets the count tiktoken gives.
#[test]
fn counts_equal_tiktoken_on_every_unit_of_the_corpora() {
    let ours = Tokenizer::cl100k();
    let mut units = 0;
    let mut dirs = vec![crate::datasets(), crate::corpora()];
    dirs.dedup_by(|a, b| a.canonicalize().ok() == b.canonicalize().ok());
    for dir in dirs {
        let (sources, _) = ledger_parse::discover(&[dir]);
        for source in &sources {
            for unit in ledger_parse::parse(source, None).units {
                assert_eq!(
                    ours.count(&unit.text),
                    reference(&unit.text),
                    "{} in {}",
                    unit.id,
                    source.path.display()
                );
                units += 1;
            }
        }
    }
    assert!(units > 10_000, "only {units} units compared");
}

/// Text an encoder is likely to get wrong: special-token strings (counted as ordinary text),
/// long runs of spaces and newlines, digits, scripts outside Latin, emoji and combining marks.
#[test]
fn counts_equal_tiktoken_on_awkward_text() {
    let ours = Tokenizer::cl100k();
    let cases = [
        "<|endoftext|> and <|fim_prefix|>",
        &" ".repeat(1000),
        &"\n \n\t".repeat(300),
        "12345678901234567890 3.14159e-10",
        "Ελληνικά 日本語のテキスト 한국어 العربية",
        "emoji 👩‍👩‍👧‍👦 and e\u{301} combining",
        "\\begin{equation}\\int_0^\\infty e^{-x^2}\\,dx=\\frac{\\sqrt\\pi}{2}\\end{equation}",
        &"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa".repeat(200),
    ];
    for text in cases {
        assert_eq!(ours.count(text), reference(text), "{text:?}");
    }
}

proptest::proptest! {
    /// Arbitrary strings (any Unicode) count the same with both encoders.
    #[test]
    fn counts_equal_tiktoken_on_arbitrary_text(text in ".{0,200}") {
        proptest::prop_assert_eq!(Tokenizer::cl100k().count(&text), reference(&text));
    }
}
