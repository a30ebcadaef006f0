//! `cargo bench -p ledger-edit --bench terms`: `rename-terms` on the cargo book in `datasets/`
//! (or `LEDGER_CORPORA`) with one term and with 5,000, planned, verified and shown as a diff as
//! the command does (best of 3 each), and the ratio of the two; then whether the 5,000 renamed
//! at once give the replacements of renaming them one by one (they are chosen not to overlap).

use ledger_edit::{Replacement, Sources, plan_rename_terms, plural, rename_term, rename_terms};
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
            let plan = plan_rename_terms(&sources, terms, &[], true, &ledger_core::progress::Quiet)
                .expect("plan");
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
    // Renames that overlap one by one (a term beside a word whose article the other rename
    // fixes: "an" in "an X" with X renamed to a word that takes "a") are resolved longest
    // first all at once; every other replacement must be the same.
    let overlapping = |k: usize| {
        let r = &one_by_one[k];
        let meets = |o: &Replacement| o.path == r.path && o.start < r.end && r.start < o.end;
        (k > 0 && meets(&one_by_one[k - 1])) || one_by_one.get(k + 1).is_some_and(meets)
    };
    let alone: Vec<&Replacement> = (0..one_by_one.len())
        .filter(|&k| !overlapping(k))
        .map(|k| &one_by_one[k])
        .collect();
    let missing: Vec<&&Replacement> = alone
        .iter()
        .filter(|r| all.replacements.binary_search(r).is_err())
        .collect();
    let extra = all
        .replacements
        .iter()
        .filter(|r| alone.binary_search(r).is_err())
        .filter(|r| one_by_one.binary_search(r).is_err())
        .count();
    println!(
        "\nall at once equals one by one where they do not overlap: {} ({} replacements, {} of \
         them overlapping one by one)",
        if missing.is_empty() && extra == 0 {
            "yes"
        } else {
            "NO"
        },
        one_by_one.len(),
        one_by_one.len() - alone.len()
    );
    for r in missing.iter().take(5) {
        let text = &sources.texts[&r.path];
        println!(
            "- one by one only: {}:{}: `{}` -> `{}`",
            r.path.display(),
            text[..r.start].matches('\n').count() + 1,
            &text[r.start..r.end],
            r.text
        );
    }
}

/// Up to `n` distinct words of the book (runs of letters, digits and `_` with a letter, two or
/// more long, lower-cased), in order of first use, each renamed to itself with `zq` appended;
/// none whose singular or plural is another's (their renames would overlap).
fn terms(sources: &Sources, n: usize) -> Vec<(String, String)> {
    let mut seen = BTreeSet::new();
    let mut words = Vec::new();
    for text in sources.texts.values() {
        for w in text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
            let w = w.to_lowercase();
            if w.len() >= 2 && w.chars().any(|c| c.is_ascii_alphabetic()) && seen.insert(w.clone())
            {
                words.push(w);
            }
        }
    }
    let plurals: BTreeSet<String> = words.iter().map(|w| plural(w)).collect();
    let mut claimed = BTreeSet::new();
    words.retain(|w| !plurals.contains(w) && claimed.insert(plural(w)));
    words.truncate(n);
    words
        .into_iter()
        .map(|w| (w.clone(), format!("{w}zq")))
        .collect()
}
