//! `cargo bench -p ledger-parse`: parse throughput on the real corpora in `datasets/` (or `LEDGER_CORPORA`),
//! then the two exact cl100k encoders compared on the same units (`bpe-openai`, which LEDGER
//! uses, against `tiktoken-rs`); `LEDGER_BENCH_TOKENS=0` leaves out everything with tokens.

use std::time::Instant;

fn main() {
    let dir = std::env::var_os("LEDGER_CORPORA")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../datasets"));
    let repeat = 5;
    let with_tokens = std::env::var("LEDGER_BENCH_TOKENS").map_or(true, |v| v != "0");
    let (bytes, docs, rows) =
        ledger_parse::throughput::parse_throughput(std::slice::from_ref(&dir), repeat, with_tokens);
    print!(
        "{}",
        ledger_parse::throughput::markdown(bytes, docs, repeat, &rows)
    );
    if with_tokens {
        compare_encoders(&dir, repeat);
    }
}

/// Counts the tokens of every unit's text with both encoders, one thread, best of `repeat`, and
/// says whether every count agreed.
fn compare_encoders(dir: &std::path::Path, repeat: usize) {
    let (sources, _) = ledger_parse::discover(&[dir.to_path_buf()]);
    let texts: Vec<String> = sources
        .iter()
        .flat_map(|s| ledger_parse::parse(s, None).units)
        .map(|u| u.text)
        .collect();
    let bytes: usize = texts.iter().map(String::len).sum();
    let ours = ledger_parse::Tokenizer::cl100k();
    let tiktoken = tiktoken_rs::cl100k_base_singleton();
    let time = |count: &dyn Fn(&str) -> usize| {
        let mut best = f64::INFINITY;
        let mut counts = Vec::new();
        for _ in 0..repeat {
            let start = Instant::now();
            counts = texts.iter().map(|t| count(t)).collect::<Vec<_>>();
            best = best.min(start.elapsed().as_secs_f64());
        }
        (best, counts)
    };
    let (bpe_s, bpe_counts) = time(&|t| ours.count(t));
    let (tik_s, tik_counts) = time(&|t| {
        if t.is_empty() {
            0
        } else {
            tiktoken.count_ordinary(t)
        }
    });
    let differ = bpe_counts
        .iter()
        .zip(&tik_counts)
        .filter(|(a, b)| a != b)
        .count();
    println!(
        "\ncl100k encoders on {} unit texts, {:.2} MB, one thread, best of {repeat}:\n",
        texts.len(),
        bytes as f64 / 1e6
    );
    println!("| encoder | seconds | MB/s | vs tiktoken-rs |\n|---|---:|---:|---:|");
    for (name, s) in [("tiktoken-rs", tik_s), ("bpe-openai (used)", bpe_s)] {
        println!(
            "| {name} | {s:.3} | {:.1} | {:.2}x |",
            bytes as f64 / 1e6 / s,
            tik_s / s
        );
    }
    println!(
        "\ntokens: {} (bpe-openai) and {} (tiktoken-rs); units whose counts differ: {differ}",
        bpe_counts.iter().sum::<usize>(),
        tik_counts.iter().sum::<usize>()
    );
}
