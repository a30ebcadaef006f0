//! `cargo bench -p ledger-edit --bench terms`: `rename-terms` on the cargo book in `datasets/`
//! (or `LEDGER_CORPORA`) with one term and with 5,000, planned, verified and shown as a diff as
//! the command does (best of 3 each), and the ratio of the two; then whether the 5,000 renamed
//! at once give the replacements of renaming them one by one (they are chosen not to overlap).

use ledger_edit::{Sources, plan_rename_terms, plural, rename_term, rename_terms};
use std::collections::BTreeSet;
use std::time::Instant;

fn main() {
    let corpora = std::env::var_os("LEDGER_CORPORA")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../datasets"));
    let book = corpora.join("cargo-book/doc/book/src");
    let sources = Sources::read(std::slice::from_ref(&book)).expect("the cargo book reads");
    let bytes: usize = sources.texts.values().map(String::len).sum();
    let terms = terms(&sources, 5000);
    let time = |terms: &[(String, String)]| {
        let mut best = f64::INFINITY;
        let mut occurrences = 0;
        for _ in 0..3 {
            let start = Instant::now();
            let plan = plan_rename_terms(&sources, terms, &[], true).expect("plan");
            let diff = plan.checked.diff(&sources);
            best = best.min(start.elapsed().as_secs_f64());
            occurrences = plan.occurrences;
            std::hint::black_box(diff);
        }
        (best, occurrences)
    };
    let (one_s, one_n) = time(&terms[..1]);
    let (all_s, all_n) = time(&terms);
    println!(
        "rename-terms on the cargo book ({:.1} MB, {} files), best of 3\n",
        bytes as f64 / 1e6,
        sources.texts.len()
    );
    println!("| terms | occurrences | seconds | ÷ one term |\n|---:|---:|---:|---:|");
    println!("| 1 | {one_n} | {one_s:.2} | 1.00 |");
    println!(
        "| {} | {all_n} | {all_s:.2} | {:.2} |",
        terms.len(),
        all_s / one_s
    );
    let all = rename_terms(&sources.docs, &sources.texts, &terms, &[]).expect("all");
    let mut one_by_one = Vec::new();
    for (old, new) in &terms {
        let one = rename_term(&sources.docs, &sources.texts, old, new, &[]).expect("one");
        one_by_one.extend(one.replacements);
    }
    one_by_one.sort();
    println!(
        "\nall at once equals one by one: {} ({} replacements)",
        if all.replacements == one_by_one {
            "yes"
        } else {
            "NO"
        },
        all.replacements.len()
    );
}

/// Up to `n` distinct lower-case words of four letters or more of the book, in order of first
/// use, none the plural of another, each renamed to itself with `zq` appended.
fn terms(sources: &Sources, n: usize) -> Vec<(String, String)> {
    let mut seen = BTreeSet::new();
    let mut words = Vec::new();
    for text in sources.texts.values() {
        for w in text.split(|c: char| !c.is_ascii_alphabetic()) {
            if w.len() >= 4 && w.chars().all(|c| c.is_ascii_lowercase()) && seen.insert(w) {
                words.push(w.to_string());
            }
        }
    }
    let plurals: BTreeSet<String> = words.iter().map(|w| plural(w)).collect();
    words.retain(|w| !plurals.contains(w));
    words.truncate(n);
    words
        .into_iter()
        .map(|w| (w.clone(), format!("{w}zq")))
        .collect()
}
