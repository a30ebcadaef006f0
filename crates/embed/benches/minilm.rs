//! MiniLM throughput on 2 cores: short sentences (the llama.cpp server's reference workload in
//! `shared/notes/models.md`) and paragraph-length summaries, in texts per second. The hashing
//! embedder on the same texts is the baseline of the same run.
//!
//! `cargo bench -p ledger-embed --bench minilm` (needs `ledger models install minilm`).

use ledger_embed::{Embedder, HashingEmbedder, MiniLm};
use std::time::Instant;

const SUBJECTS: [&str; 8] = [
    "The operator",
    "A cat",
    "The group G",
    "Every compact set",
    "The compiler",
    "A man",
    "The stock market",
    "This lemma",
];
const VERBS: [&str; 8] = [
    "bounds",
    "sits on",
    "acts on",
    "contains",
    "rejects",
    "is eating",
    "fell on",
    "implies",
];
const OBJECTS: [&str; 8] = [
    "the maximal function.",
    "the mat.",
    "a subgroup H.",
    "its closure.",
    "the borrowed value.",
    "a piece of bread.",
    "Tuesday.",
    "the main theorem.",
];

fn rate(model: &dyn Embedder, texts: &[&str]) -> f64 {
    let t = Instant::now();
    let v = model.embed(texts).expect("embeds");
    assert_eq!(v.len(), texts.len());
    texts.len() as f64 / t.elapsed().as_secs_f64()
}

fn main() {
    let dir = ledger_embed::minilm::default_dir();
    let Ok(minilm) = MiniLm::load(&dir) else {
        eprintln!(
            "no MiniLM weights in {} (ledger models install minilm)",
            dir.display()
        );
        return;
    };
    let sentences: Vec<String> = (0..512)
        .map(|i| {
            format!(
                "{} {} {}",
                SUBJECTS[i % 8],
                VERBS[(i / 8) % 8],
                OBJECTS[(i / 64) % 8]
            )
        })
        .collect();
    let paragraphs: Vec<String> = (0..128)
        .map(|i| {
            (0..6)
                .map(|k| sentences[(i * 7 + k * 13) % 512].as_str())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    let short: Vec<&str> = sentences.iter().map(String::as_str).collect();
    let long: Vec<&str> = paragraphs.iter().map(String::as_str).collect();
    // Warm-up (first-touch of the weights).
    minilm.embed(&short[..32]).expect("warm-up");
    println!("| texts | hashing (texts/s) | MiniLM (texts/s) | ratio |");
    println!("|---|---:|---:|---:|");
    for (name, texts) in [
        ("512 short sentences (≈8 tokens)", &short),
        ("128 paragraphs (≈60 tokens)", &long),
    ] {
        let (h, m) = (rate(&HashingEmbedder, texts), rate(&minilm, texts));
        println!("| {name} | {h:.0} | {m:.1} | {:.0}× |", h / m);
    }
}
