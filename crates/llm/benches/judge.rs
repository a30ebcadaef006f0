//! `cargo bench -p ledger-llm --bench judge`: DEPENDS judging of the real LaTeX documents in
//! `datasets/` (or `LEDGER_CORPORA`), the learned judge against the rules judge on the same
//! parsed documents (best of 3 each), and the ratio of the two.

use ledger_llm::depends::{Cache, Judge, LearnedJudge, RulesJudge, judge_corpus};
use std::time::Instant;

fn main() {
    let corpora = std::env::var_os("LEDGER_CORPORA")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../datasets"));
    let (sources, _) = ledger_parse::discover(std::slice::from_ref(&corpora));
    let docs: Vec<ledger_core::Document> = sources
        .iter()
        .filter(|s| s.format == ledger_core::Format::Latex)
        .map(|s| ledger_parse::parse(s, None))
        .collect();
    let units: usize = docs.iter().map(|d| d.units.len()).sum();
    let learned = LearnedJudge::shipped();
    let time = |judge: &dyn Judge| {
        let mut best = f64::INFINITY;
        let mut judgments = 0;
        for _ in 0..3 {
            let mut copy = docs.clone();
            let start = Instant::now();
            judge_corpus(&mut copy, judge, 8, &Cache::new());
            best = best.min(start.elapsed().as_secs_f64());
            judgments = copy.iter().map(|d| d.judgments.len()).sum::<usize>();
        }
        (best, judgments)
    };
    let (rules_s, rules_n) = time(&RulesJudge);
    let (learned_s, learned_n) = time(&learned);
    println!(
        "DEPENDS judging of {} LaTeX documents ({units} units), best of 3\n",
        docs.len()
    );
    println!("| judge | judgments | seconds | ÷ rules |\n|---|---:|---:|---:|");
    println!("| rules | {rules_n} | {rules_s:.2} | 1.00 |");
    println!(
        "| learned | {learned_n} | {learned_s:.2} | {:.2} |",
        learned_s / rules_s
    );
}
