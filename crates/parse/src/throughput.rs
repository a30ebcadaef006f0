//! Parse + reference-extraction throughput: one thread against all cores, with and without
//! token counting, measured in the same run (one thread is the baseline of the ratios).

use rayon::prelude::*;
use std::path::PathBuf;
use std::time::Instant;

/// One measured configuration.
#[derive(Debug, Clone)]
pub struct Row {
    /// What was measured.
    pub label: String,
    /// Threads used.
    pub threads: usize,
    /// Best wall-clock seconds over the passes.
    pub seconds: f64,
    /// Megabytes per second (10^6 bytes).
    pub mb_per_s: f64,
    /// Speed relative to the one-thread row of the same kind.
    pub ratio: f64,
}

/// Parses the corpora under `paths` `repeat` times per configuration and returns the table.
/// Set `with_tokens` to false to measure parsing alone.
pub fn parse_throughput(
    paths: &[PathBuf],
    repeat: usize,
    with_tokens: bool,
) -> (u64, usize, Vec<Row>) {
    let (sources, _) = crate::discover(paths);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let tokenizer = crate::Tokenizer::cl100k();
    tokenizer.count("warm up the BPE tables");
    let mut rows: Vec<Row> = Vec::new();
    let mut bytes = 0u64;
    for (label, threads, tokens) in [
        ("parse + refs", 1, false),
        ("parse + refs", cores, false),
        ("parse + refs + cl100k tokens", 1, true),
        ("parse + refs + cl100k tokens", cores, true),
    ] {
        if tokens && !with_tokens {
            continue;
        }
        let Ok(pool) = rayon::ThreadPoolBuilder::new().num_threads(threads).build() else {
            continue;
        };
        let mut best = f64::INFINITY;
        for _ in 0..repeat.max(1) {
            let start = Instant::now();
            let docs: Vec<ledger_core::Document> = pool.install(|| {
                let mut docs: Vec<_> = sources
                    .par_iter()
                    .map(|s| crate::parse(s, tokens.then_some(&tokenizer)))
                    .collect();
                crate::resolve_corpus(&mut docs);
                docs
            });
            best = best.min(start.elapsed().as_secs_f64());
            bytes = docs.iter().map(|d| d.bytes).sum();
        }
        let mb_per_s = bytes as f64 / 1e6 / best;
        let base = rows
            .iter()
            .find(|r| r.label == label && r.threads == 1)
            .map_or(mb_per_s, |r| r.mb_per_s);
        rows.push(Row {
            label: label.into(),
            threads,
            seconds: best,
            mb_per_s,
            ratio: mb_per_s / base,
        });
    }
    (bytes, sources.len(), rows)
}

/// The table as Markdown.
pub fn markdown(bytes: u64, documents: usize, repeat: usize, rows: &[Row]) -> String {
    let mut s = format!(
        "corpus: {documents} documents, {:.2} MB; best of {repeat} passes\n\n",
        bytes as f64 / 1e6
    );
    s.push_str(
        "| configuration | threads | seconds | MB/s | vs 1 thread |\n|---|---:|---:|---:|---:|\n",
    );
    for r in rows {
        s.push_str(&format!(
            "| {} | {} | {:.3} | {:.1} | {:.2}x |\n",
            r.label, r.threads, r.seconds, r.mb_per_s, r.ratio
        ));
    }
    s
}

/// Inputs that once took quadratic time, generated at any size: tests hold them to a time
/// guard, `ledger bench pathological` measures how their time grows with their size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pathological {
    /// `n` nested `enumerate` environments, each with a labelled item.
    NestedEnumerates,
    /// `n` unclosed `\ref{` in one paragraph.
    UnclosedRefs,
    /// `n` sections of one short paragraph each (a section's summary reads its paragraphs).
    ManySections,
    /// One Markdown file of `n` headings alike but for a number, each with a paragraph alike
    /// too: every unit is RELATED-near every other one of its kind.
    SimilarHeadings,
}

impl Pathological {
    /// Every case.
    pub const ALL: [Pathological; 4] = [
        Pathological::NestedEnumerates,
        Pathological::UnclosedRefs,
        Pathological::ManySections,
        Pathological::SimilarHeadings,
    ];

    /// Its name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Pathological::NestedEnumerates => "nested enumerate with \\label",
            Pathological::UnclosedRefs => "unclosed \\ref{",
            Pathological::ManySections => "sections (summary context)",
            Pathological::SimilarHeadings => "similar Markdown headings (RELATED)",
        }
    }

    /// The size the issue that fixed it measured.
    pub fn size(self) -> usize {
        match self {
            Pathological::NestedEnumerates => 100_000,
            Pathological::UnclosedRefs => 300_000,
            Pathological::ManySections => 20_000,
            Pathological::SimilarHeadings => 10_000,
        }
    }

    /// The document of size `n`: its file name and text.
    pub fn document(self, n: usize) -> (&'static str, String) {
        if self == Pathological::SimilarHeadings {
            let mut text = String::from("# Configuration reference\n\n");
            for k in 0..n {
                text.push_str(&format!(
                    "## Configuration option {k}\n\nSets option {k} of the server configuration.\n\n"
                ));
            }
            return ("reference.md", text);
        }
        ("main.tex", self.latex(n))
    }

    /// The LaTeX text of size `n` (the cases but [`Pathological::SimilarHeadings`]).
    fn latex(self, n: usize) -> String {
        let mut text = String::from("\\documentclass{article}\\begin{document}\n");
        match self {
            Pathological::NestedEnumerates => {
                for k in 0..n {
                    text.push_str(&format!("\\begin{{enumerate}}\\item\\label{{i{k}}}\n"));
                }
                text.push_str(&"\\end{enumerate}\n".repeat(n));
                text.push_str("See \\ref{i0}.\n");
            }
            Pathological::UnclosedRefs => {
                text.push_str(&"\\ref{".repeat(n));
                text.push_str("\n\nA closed one: \\ref{x}.\n");
            }
            Pathological::ManySections | Pathological::SimilarHeadings => {
                for k in 0..n {
                    text.push_str(&format!(
                        "\\section{{Part {k}}}\nThe bound of part {k} holds for every $x_{k}$.\n\n"
                    ));
                }
            }
        }
        text.push_str("\\end{document}\n");
        text
    }
}
