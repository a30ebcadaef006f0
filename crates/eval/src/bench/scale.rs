//! Corpora of growing size (copies of the inputs, each file marked with its copy number so no
//! two are byte-identical), each indexed in every mode on this machine: wall time, MB/s, peak
//! RSS, then an unchanged rerun and a rerun after one document changed; a Markdown table and SVG
//! plots of time and RSS against size.

use super::process::{Ledger, Measured, watch};
use crate::error::{Context, EvalError, Result};
use ledger_pipeline::Config;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};

/// What `ledger bench scale` measures.
pub struct ScaleRequest<'a> {
    /// Corpora to copy (files or folders).
    pub paths: &'a [PathBuf],
    /// Where corpora, graphs, the table and the plots go (corpora are kept for the next run).
    pub out: &'a Path,
    /// Corpus sizes in MB.
    pub sizes: &'a [f64],
    /// The modes: 0 is embedded, N is a coordinator with N workers.
    pub workers: &'a [usize],
}

/// A series of points of a plot, named.
type Line = (String, Vec<(f64, f64)>);

/// Runs every mode at every size; writes `OUT/scale.md` and the plots after each row (a long
/// run stopped midway keeps what it measured) and returns the table with its heading.
pub fn scale(ledger: &Ledger, request: &ScaleRequest<'_>, config: &Config) -> Result<String> {
    std::fs::create_dir_all(request.out)?;
    let out = std::fs::canonicalize(request.out)?;
    let mut modes = request.workers.to_vec();
    modes.dedup();
    let name = |n: usize| match n {
        0 => "embedded".to_string(),
        1 => "1 worker".to_string(),
        n => format!("{n} workers"),
    };
    let mut table = String::from(
        "| corpus MB | mode | seconds | CPU s | cores busy | MB/s | peak RSS MB | unchanged rerun s | its RSS MB | one document changed s | its RSS MB |\n|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    let mut time_lines: Vec<Line> = modes.iter().map(|&n| (name(n), Vec::new())).collect();
    let mut rss_lines = time_lines.clone();
    for (i, &mb) in request.sizes.iter().enumerate() {
        let corpus = out.join(format!("corpus-{mb}mb"));
        let bytes = generate(request.paths, &corpus, (mb * 1e6) as u64)?;
        let size = bytes as f64 / 1e6;
        for (k, &n) in modes.iter().enumerate() {
            let graph = out.join(format!("graph-{mb}mb-{n}"));
            if graph.exists() {
                std::fs::remove_dir_all(&graph)?;
            }
            let cold = run_mode(ledger, &corpus, &graph, n)?;
            let rerun = run_mode(ledger, &corpus, &graph, n)?;
            change_one(&corpus, i * modes.len() + k)?;
            let changed = run_mode(ledger, &corpus, &graph, n)?;
            let mb = |m: &Measured| m.peak as f64 / 1e6;
            table.push_str(&format!(
                "| {size:.0} | {} | {:.1} | {:.1} | {:.2} | {:.2} | {:.0} | {:.1} | {:.0} | {:.1} | {:.0} |\n",
                name(n),
                cold.seconds,
                cold.cpu_seconds,
                cold.cpu_seconds / cold.seconds.max(1e-9),
                size / cold.seconds,
                mb(&cold),
                rerun.seconds,
                mb(&rerun),
                changed.seconds,
                mb(&changed),
            ));
            time_lines[k].1.push((size, cold.seconds));
            rss_lines[k].1.push((size, mb(&cold)));
            write_report(&out, &table, &time_lines, &rss_lines)?;
        }
    }
    if request.workers.iter().any(|&n| n > 0) {
        ledger.delete_queue(config)?;
    }
    Ok(heading(&table))
}

/// Copies of `paths` under `corpus` until they hold `target` bytes of documents; each `.tex` and
/// `.md` file gets a comment with its copy number, so no two documents are byte-identical.
/// Returns the bytes of `.tex` and `.md` files. A corpus already there is reused.
fn generate(paths: &[PathBuf], corpus: &Path, target: u64) -> Result<u64> {
    let done = corpus.join(".ledger-bench-bytes");
    if let Ok(bytes) = std::fs::read_to_string(&done)
        && let Ok(bytes) = bytes.trim().parse()
    {
        return Ok(bytes);
    }
    if corpus.exists() {
        std::fs::remove_dir_all(corpus)?;
    }
    let files: Vec<(PathBuf, PathBuf)> = paths
        .iter()
        .flat_map(|root| {
            let name = root.file_name().map(PathBuf::from).unwrap_or_default();
            walkdir::WalkDir::new(root)
                .into_iter()
                .filter_map(Result::ok)
                .filter(|e| e.file_type().is_file())
                .map(move |e| {
                    let rel = e
                        .path()
                        .strip_prefix(root)
                        .unwrap_or(e.path())
                        .to_path_buf();
                    (e.into_path(), name.join(rel))
                })
        })
        .collect();
    let mut bytes = 0u64;
    let mut copy = 0;
    while bytes < target {
        copy += 1;
        let before = bytes;
        for (from, rel) in &files {
            let to = corpus.join(format!("copy-{copy}")).join(rel);
            if let Some(dir) = to.parent() {
                std::fs::create_dir_all(dir)?;
            }
            let mark = match from.extension().and_then(|e| e.to_str()) {
                Some("tex") => Some(format!("\n% copy {copy}\n")),
                Some("md") => Some(format!("\n<!-- copy {copy} -->\n")),
                _ => None,
            };
            match mark {
                Some(mark) => {
                    let mut text = std::fs::read(from)?;
                    text.extend_from_slice(mark.as_bytes());
                    bytes += text.len() as u64;
                    std::fs::write(&to, text)?;
                }
                None => {
                    std::fs::copy(from, &to)?;
                }
            }
        }
        if bytes == before {
            return Err(EvalError::Invalid(
                "no .tex or .md file under the given paths".into(),
            ));
        }
    }
    std::fs::write(&done, bytes.to_string())?;
    Ok(bytes)
}

/// Adds a paragraph to the first `.tex` or `.md` file of the corpus (one document changes).
fn change_one(corpus: &Path, round: usize) -> Result<()> {
    let file = walkdir::WalkDir::new(corpus)
        .sort_by_file_name()
        .into_iter()
        .filter_map(Result::ok)
        .map(|e| e.into_path())
        .find(|p| p.extension().is_some_and(|e| e == "md" || e == "tex"))
        .context("no .tex or .md file in the corpus to change")?;
    let text = std::fs::read_to_string(&file)?;
    let paragraph = format!("\n\nA paragraph added by the benchmark, round {round}.\n\n");
    let at = text.rfind("\\end{document}").unwrap_or(text.len());
    std::fs::write(&file, format!("{}{paragraph}{}", &text[..at], &text[at..]))?;
    Ok(())
}

/// `ledger index` (workers = 0) or a coordinator with `workers` workers, on `corpus` into `graph`.
fn run_mode(ledger: &Ledger, corpus: &Path, graph: &Path, workers: usize) -> Result<Measured> {
    let (c, g) = (corpus.display().to_string(), graph.display().to_string());
    let spawn = |args: &[&str]| {
        ledger
            .command(args)
            .stderr(Stdio::null())
            .spawn()
            .context("starting ledger")
    };
    if workers == 0 {
        return watch(spawn(&["index", &c, "--out", &g])?, Vec::new());
    }
    let main = spawn(&["coordinator", &c, "--out", &g])?;
    // Workers wait for the coordinator's scan, however long; `watch` stops them.
    let pool: Vec<Child> = (0..workers)
        .map(|_| spawn(&["worker", "--root", &c, "--root", &g]))
        .collect::<Result<_>>()?;
    watch(main, pool)
}

/// The table with its heading.
fn heading(table: &str) -> String {
    format!(
        "`ledger bench scale` (this build, the configuration in effect); each mode on a fresh graph, then rerun unchanged, then rerun with one document changed\n\n{table}"
    )
}

/// Writes `OUT/scale.md` and the two plots of what was measured so far.
fn write_report(out: &Path, table: &str, time_lines: &[Line], rss_lines: &[Line]) -> Result<()> {
    std::fs::write(out.join("scale.md"), heading(table))?;
    let range = |lines: &[Line]| {
        let max = lines
            .iter()
            .flat_map(|l| l.1.iter().map(|p| p.1))
            .fold(0.0, f64::max);
        0.0..max * 1.1 + 1e-9
    };
    let (lo, hi) = time_lines
        .iter()
        .flat_map(|l| l.1.iter().map(|p| p.0))
        .fold((f64::INFINITY, 0.0f64), |(lo, hi), s| {
            (lo.min(s), hi.max(s))
        });
    let x = ("corpus MB", lo * 0.8..hi * 1.25);
    crate::run::plot_lines(
        &out.join("scale-seconds.svg"),
        "ledger index: wall time against corpus size",
        x.clone(),
        ("seconds", range(time_lines)),
        time_lines,
    )?;
    crate::run::plot_lines(
        &out.join("scale-rss.svg"),
        "ledger index: peak RSS against corpus size",
        x,
        ("peak RSS (MB)", range(rss_lines)),
        rss_lines,
    )?;
    Ok(())
}
