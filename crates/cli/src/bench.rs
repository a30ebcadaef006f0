//! `ledger bench`: speed, as ratios against a baseline measured in the same run.
//! `parse`: parse + reference-extraction throughput (see `ledger_parse::throughput`);
//! `distributed`: documents/s of the embedded mode and of 1, 2, 4 workers;
//! `context`: the time of a context query on a graph, against the baselines';
//! `pathological`: how the time of inputs that once took quadratic time grows with their size;
//! `scale`: time and peak memory against corpus size, embedded and distributed, cold, unchanged
//! and after one document changed.

use crate::output::{out, outln};
use anyhow::{Context, Result, bail};
use clap::Subcommand;
use ledger_pipeline::config::Config;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Which benchmark to run.
#[derive(Subcommand)]
pub enum Which {
    /// Parse + reference extraction throughput in MB/s (one thread and all cores, with and without token counting).
    Parse {
        /// Corpora to parse (files or folders).
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Passes over the corpus per configuration (the best pass counts).
        #[arg(long, default_value_t = 3)]
        repeat: usize,
        /// Leave out the rows with cl100k token counting.
        #[arg(long)]
        no_tokens: bool,
    },
    /// Documents/s of `ledger index` (embedded) and of `ledger coordinator` with N workers on the
    /// same corpus, each on a fresh graph, through the RabbitMQ of `queue.amqp`; ratios against
    /// the embedded run, and the queue's overhead per document (1 worker against embedded with
    /// one thread).
    Distributed {
        /// Corpora (files or folders).
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Worker counts to measure.
        #[arg(long, value_delimiter = ',', default_value = "1,2,4")]
        workers: Vec<usize>,
    },
    /// Time per context query on a graph: LEDGER's ranking (every theorem-like unit, or a sample,
    /// as a target) against BM25 and reading around the target in the same run; the graph's load
    /// and the instruction's embedding are timed apart.
    Context {
        /// The graph folder.
        #[arg(long)]
        graph: PathBuf,
        /// Only targets in this document.
        #[arg(long)]
        doc: Option<String>,
        /// Targets queried (spread evenly over the theorem-like units).
        #[arg(long, default_value_t = 200)]
        queries: usize,
        /// Token budget of each context.
        #[arg(long, default_value_t = 4000)]
        budget: usize,
    },

    /// Corpora of growing size (copies of PATHS, each file marked with its copy number so no two
    /// are byte-identical), each indexed in every mode of --workers on this machine: wall time,
    /// MB/s, peak RSS (the largest process of the mode), then an unchanged rerun and a rerun after
    /// one document changed; a Markdown table and SVG plots of time and RSS against size in OUT.
    Scale {
        /// Corpora to copy (files or folders).
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Where corpora, graphs, the table and the plots go (corpora are kept for the next run).
        #[arg(long)]
        out: PathBuf,
        /// Corpus sizes in MB.
        #[arg(long, value_delimiter = ',', default_value = "100,300,1000")]
        sizes: Vec<f64>,
        /// The modes to run: 0 is embedded, N is a coordinator with N workers.
        #[arg(long, value_delimiter = ',', default_value = "0,1,2")]
        workers: Vec<usize>,
    },

    /// Inputs that once took quadratic time or memory (nested `enumerate`, unclosed `\ref{`, many
    /// sections, many similar Markdown headings), each indexed in process at a tenth of its size and at its size: the ratio of
    /// the two times is about 10 when the time is linear (100 if quadratic).
    Pathological {
        /// Scale of every case's size (1 = the sizes of the issue that fixed them).
        #[arg(long, default_value_t = 1.0)]
        scale: f64,
    },
}

/// Runs a benchmark and prints its table.
pub fn run(which: Which, config: &Config) -> Result<()> {
    match which {
        Which::Context {
            graph,
            doc,
            queries,
            budget,
        } => context(&graph, doc.as_deref(), queries, budget, config),
        Which::Parse {
            paths,
            repeat,
            no_tokens,
        } => {
            let (bytes, docs, rows) =
                ledger_parse::throughput::parse_throughput(&paths, repeat, !no_tokens);
            out!(
                "{}",
                ledger_parse::throughput::markdown(bytes, docs, repeat, &rows)
            );
            Ok(())
        }
        Which::Distributed { paths, workers } => distributed(&paths, &workers, config),
        Which::Pathological { scale } => pathological(scale, config),
        Which::Scale {
            paths,
            out,
            sizes,
            workers,
        } => scale(&paths, &out, &sizes, &workers, config),
    }
}

/// Runs the binary itself with `args`, its own job queue, no progress bars.
pub(crate) fn ledger(queue: &str, args: &[&str]) -> Result<Command> {
    let mut c = Command::new(std::env::current_exe().context("locating ledger")?);
    c.args(args)
        .env("LEDGER_QUEUE_JOBS", queue)
        .env("LEDGER_INDEX_PROGRESS", "false")
        .stdout(Stdio::null());
    Ok(c)
}

fn timed(mut c: Command) -> Result<f64> {
    let start = Instant::now();
    let status = c.status().context("running ledger")?;
    if !status.success() {
        bail!("{c:?} failed: {status}");
    }
    Ok(start.elapsed().as_secs_f64())
}

fn distributed(paths: &[PathBuf], workers: &[usize], config: &Config) -> Result<()> {
    let dir = tempfile::tempdir()?;
    let queue = format!("ledger.bench.{}", std::process::id());
    let inputs: Vec<String> = paths
        .iter()
        .map(|p| std::fs::canonicalize(p).map(|p| p.display().to_string()))
        .collect::<Result<_, _>>()?;
    let run = |mode: &str, out: &Path, extra: &[&str]| -> Result<Command> {
        let mut args: Vec<&str> = vec![mode];
        args.extend(inputs.iter().map(String::as_str));
        args.extend(["--out", out.to_str().unwrap_or_default()]);
        args.extend_from_slice(extra);
        ledger(&queue, &args)
    };
    let docs = ledger_parse::discover(paths).0.len();
    let embedded = timed(run("index", &dir.path().join("embedded"), &[])?)?;
    let embedded_1 = timed(run(
        "index",
        &dir.path().join("embedded-1"),
        &["--jobs", "1"],
    )?)?;
    let mut rows = vec![
        ("embedded (all cores)".to_string(), embedded),
        ("embedded (1 thread)".to_string(), embedded_1),
    ];
    // Workers read the inputs and write parts under the run's folder, nothing else.
    let mut roots: Vec<&str> = vec!["--root", dir.path().to_str().unwrap_or_default()];
    for input in &inputs {
        roots.extend(["--root", input.as_str()]);
    }
    for &n in workers {
        let out = dir.path().join(format!("workers-{n}"));
        let coordinator = run("coordinator", &out, &[])?;
        let mut pool: Vec<Child> = (0..n)
            .map(|_| {
                let mut args = vec!["worker", "--exit-when-idle", "2"];
                args.extend_from_slice(&roots);
                ledger(&queue, &args)?
                    .stderr(Stdio::null())
                    .spawn()
                    .context("starting a worker")
            })
            .collect::<Result<_>>()?;
        let seconds = timed(coordinator);
        for w in &mut pool {
            let _ = w.wait();
        }
        rows.push((
            format!("{n} worker{}", if n == 1 { "" } else { "s" }),
            seconds?,
        ));
    }
    outln!("{docs} documents; each run on a fresh graph, RabbitMQ job queue `{queue}`\n");
    outln!("| mode | seconds | documents/s | ratio to embedded |");
    outln!("|---|---:|---:|---:|");
    for (mode, seconds) in &rows {
        outln!(
            "| {mode} | {seconds:.2} | {:.2} | {:.2} |",
            docs as f64 / seconds,
            embedded / seconds
        );
    }
    delete_queue(&queue, config)?;
    if let Some((_, one)) = rows.iter().find(|r| r.0 == "1 worker") {
        outln!(
            "\nqueue overhead: {:.1} ms per document (1 worker against embedded with 1 thread, process start-up included)",
            (one - embedded_1) / docs.max(1) as f64 * 1000.0
        );
    }
    Ok(())
}

/// Deletes the benchmark's job queue and its dead-letter queue from the broker of `config`.
pub(crate) fn delete_queue(queue: &str, config: &Config) -> Result<()> {
    let roots = config.tls.extra_roots()?;
    let amqp = &config.queue.amqp;
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(async {
            let b = ledger_queue::Broker::connect(
                amqp,
                roots.as_deref(),
                std::time::Duration::from_secs(10),
            )
            .await?;
            b.delete_queue(queue).await?;
            b.delete_queue(&ledger_queue::dead_queue(queue)).await?;
            b.close().await;
            anyhow::Ok(())
        })
}

/// The instruction of every timed context query.
const INSTRUCTION: &str = "Strengthen the hypothesis and update every result that uses it";

/// `ledger bench context`.
fn context(
    path: &Path,
    doc: Option<&str>,
    queries: usize,
    budget: usize,
    config: &Config,
) -> Result<()> {
    use ledger_eval::strategy::{self, Method, Query};
    let started = Instant::now();
    let graph = ledger_pipeline::retrieval::load(path)?;
    let load = started.elapsed().as_secs_f64();
    let started = Instant::now();
    graph.lexical();
    let lexical_index = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let relevance =
        ledger_pipeline::retrieval::instruction_relevance(path, &graph, INSTRUCTION, config)
            .inspect_err(|e| eprintln!("note: no embedding relevance for the instruction: {e}"))
            .ok();
    let embedding = started.elapsed().as_secs_f64();
    let units = graph.units();
    let candidates: Vec<usize> = (0..units.len())
        .filter(|&i| units[i].kind == ledger_core::UnitKind::Theorem)
        .filter(|&i| doc.is_none_or(|d| units[i].doc_id == d))
        .collect();
    if candidates.is_empty() {
        bail!("no theorem-like unit to query in {}", path.display());
    }
    let step = candidates.len().div_ceil(queries.max(1));
    let targets: Vec<usize> = candidates.iter().copied().step_by(step).collect();
    let mut doc_units: std::collections::HashMap<&str, Vec<usize>> = Default::default();
    for (i, u) in units.iter().enumerate() {
        if u.kind != ledger_core::UnitKind::Document {
            doc_units.entry(u.doc_id.as_str()).or_default().push(i);
        }
    }
    for v in doc_units.values_mut() {
        v.sort_by_key(|&i| units[i].ordinal);
    }
    let ranking = config.retrieve.ranking();
    let methods = [
        ("reading around the target", Method::Window(None)),
        ("BM25", Method::Lexical),
        ("LEDGER", Method::Ledger(ranking)),
    ];
    let query = Query {
        instruction: Some(INSTRUCTION),
        dense: relevance.as_ref(),
    };
    let mut rows = Vec::new();
    for (name, method) in &methods {
        let mut times: Vec<f64> = targets
            .iter()
            .map(|&t| {
                let started = Instant::now();
                let r = strategy::retrieve(
                    method,
                    &graph,
                    &doc_units[units[t].doc_id.as_str()],
                    &[t],
                    budget,
                    query,
                );
                std::hint::black_box(r);
                started.elapsed().as_secs_f64() * 1000.0
            })
            .collect();
        times.sort_by(f64::total_cmp);
        let median = times[times.len() / 2];
        let p95 = times[(times.len() * 95 / 100).min(times.len() - 1)];
        rows.push((name, median, p95));
    }
    let base = rows[0].1.max(1e-9);
    outln!(
        "graph: {} ({} units); {} queries, budget {budget}\nload {:.0} ms; BM25 index {:.0} ms (once per graph); instruction embedding and cosines {:.0} ms ({})\n",
        path.display(),
        units.len(),
        targets.len(),
        load * 1000.0,
        lexical_index * 1000.0,
        embedding * 1000.0,
        if relevance.is_some() {
            "used"
        } else {
            "none: no embeddings"
        }
    );
    outln!(
        "| strategy | median ms / query | p95 ms | median / reading around |\n|---|---:|---:|---:|"
    );
    for (name, median, p95) in rows {
        outln!(
            "| {name} | {median:.2} | {p95:.2} | {:.1}× |",
            median / base
        );
    }
    Ok(())
}

/// `ledger bench pathological`.
fn pathological(scale: f64, config: &Config) -> Result<()> {
    use ledger_parse::throughput::Pathological;
    let args = crate::args::PipelineArgs {
        no_progress: true,
        ..crate::args::PipelineArgs::default()
    };
    let settings = args.apply(config);
    let stage = ledger_pipeline::Stage::new(settings)?;
    let dir = tempfile::tempdir()?;
    let time = |case: Pathological, n: usize| -> Result<(usize, f64)> {
        let input = dir.path().join(format!("{case:?}-{n}"));
        std::fs::create_dir_all(&input)?;
        let (name, text) = case.document(n);
        std::fs::write(input.join(name), &text)?;
        let out = dir.path().join(format!("graph-{case:?}-{n}"));
        let parts = config.store.parts(&out)?;
        let job = ledger_pipeline::IndexJob {
            paths: &[input],
            out: &out,
            parts: &parts,
            command: "ledger bench pathological",
        };
        let started = Instant::now();
        ledger_pipeline::index::index(&job, &stage, &ledger_pipeline::Quiet)?;
        Ok((text.len(), started.elapsed().as_secs_f64()))
    };
    outln!(
        "`ledger index` in process (this configuration: judge, embedder, tokens); a tenth of each size is the baseline\n"
    );
    outln!("| input | size | MB | seconds | seconds at a tenth | ratio (10 = linear) |");
    outln!("|---|---:|---:|---:|---:|---:|");
    for case in Pathological::ALL {
        let n = ((case.size() as f64 * scale) as usize).max(10);
        let (_, small) = time(case, n / 10)?;
        let (bytes, full) = time(case, n)?;
        outln!(
            "| {} | {n} | {:.1} | {full:.2} | {small:.2} | {:.1} |",
            case.name(),
            bytes as f64 / 1e6,
            full / small.max(1e-9)
        );
    }
    Ok(())
}

/// One measured run.
struct Measured {
    seconds: f64,
    /// Peak resident memory of the largest process of the run, in bytes.
    peak: u64,
}

/// The peak resident memory (`VmHWM`) of a running process, in bytes.
fn high_water(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Waits for `main`, polling its and `others`' peak memory (the run's peak is the largest
/// process's), then stops `others` (workers, idle once the coordinator is done). Fails when `main`
/// fails.
fn watch(mut main: Child, mut others: Vec<Child>) -> Result<Measured> {
    let start = Instant::now();
    let mut peak = 0;
    let status = loop {
        for pid in std::iter::once(main.id()).chain(others.iter().map(Child::id)) {
            peak = peak.max(high_water(pid).unwrap_or(0));
        }
        match main.try_wait() {
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            done => break done,
        }
    };
    let seconds = start.elapsed().as_secs_f64();
    // The run is over (or failed): the workers are idle; stop them.
    for w in &mut others {
        let _ = w.kill();
        let _ = w.wait();
    }
    let status = status?.context("ledger exited")?;
    if !status.success() {
        bail!("ledger failed: {status}");
    }
    Ok(Measured { seconds, peak })
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
            bail!("no .tex or .md file under the given paths");
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
fn run_mode(queue: &str, corpus: &Path, graph: &Path, workers: usize) -> Result<Measured> {
    let (c, g) = (corpus.display().to_string(), graph.display().to_string());
    if workers == 0 {
        let main = ledger(queue, &["index", &c, "--out", &g])?
            .stderr(Stdio::null())
            .spawn()?;
        return watch(main, Vec::new());
    }
    let main = ledger(queue, &["coordinator", &c, "--out", &g])?
        .stderr(Stdio::null())
        .spawn()?;
    let pool: Vec<Child> = (0..workers)
        .map(|_| {
            // Workers wait for the coordinator's scan, however long; `watch` stops them.
            ledger(queue, &["worker", "--root", &c, "--root", &g])?
                .stderr(Stdio::null())
                .spawn()
                .context("starting a worker")
        })
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
fn write_report(
    out: &Path,
    table: &str,
    time_lines: &[(String, Vec<(f64, f64)>)],
    rss_lines: &[(String, Vec<(f64, f64)>)],
) -> Result<()> {
    std::fs::write(out.join("scale.md"), heading(table))?;
    let range = |lines: &[(String, Vec<(f64, f64)>)]| {
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
    ledger_eval::run::plot_lines(
        &out.join("scale-seconds.svg"),
        "ledger index: wall time against corpus size",
        x.clone(),
        ("seconds", range(time_lines)),
        time_lines,
    )?;
    ledger_eval::run::plot_lines(
        &out.join("scale-rss.svg"),
        "ledger index: peak RSS against corpus size",
        x,
        ("peak RSS (MB)", range(rss_lines)),
        rss_lines,
    )?;
    Ok(())
}

/// `ledger bench scale`.
pub fn scale(
    paths: &[PathBuf],
    out: &Path,
    sizes: &[f64],
    workers: &[usize],
    config: &Config,
) -> Result<()> {
    std::fs::create_dir_all(out)?;
    let out = std::fs::canonicalize(out)?;
    let queue = format!("ledger.bench.{}", std::process::id());
    let mut modes = workers.to_vec();
    modes.dedup();
    let name = |n: usize| match n {
        0 => "embedded".to_string(),
        1 => "1 worker".to_string(),
        n => format!("{n} workers"),
    };
    let mut table = String::from(
        "| corpus MB | mode | seconds | MB/s | peak RSS MB | unchanged rerun s | its RSS MB | one document changed s | its RSS MB |\n|---:|---|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    let mut time_lines: Vec<(String, Vec<(f64, f64)>)> =
        modes.iter().map(|&n| (name(n), Vec::new())).collect();
    let mut rss_lines = time_lines.clone();
    for (i, &mb) in sizes.iter().enumerate() {
        let corpus = out.join(format!("corpus-{mb}mb"));
        let bytes = generate(paths, &corpus, (mb * 1e6) as u64)?;
        let size = bytes as f64 / 1e6;
        for (k, &n) in modes.iter().enumerate() {
            let graph = out.join(format!("graph-{mb}mb-{n}"));
            if graph.exists() {
                std::fs::remove_dir_all(&graph)?;
            }
            let cold = run_mode(&queue, &corpus, &graph, n)?;
            let rerun = run_mode(&queue, &corpus, &graph, n)?;
            change_one(&corpus, i * modes.len() + k)?;
            let changed = run_mode(&queue, &corpus, &graph, n)?;
            let mib = |m: &Measured| m.peak as f64 / 1e6;
            table.push_str(&format!(
                "| {size:.0} | {} | {:.1} | {:.2} | {:.0} | {:.1} | {:.0} | {:.1} | {:.0} |\n",
                name(n),
                cold.seconds,
                size / cold.seconds,
                mib(&cold),
                rerun.seconds,
                mib(&rerun),
                changed.seconds,
                mib(&changed),
            ));
            time_lines[k].1.push((size, cold.seconds));
            rss_lines[k].1.push((size, mib(&cold)));
            // After every row, so that a long run stopped midway keeps what it measured.
            write_report(&out, &table, &time_lines, &rss_lines)?;
        }
    }
    out!("{}", heading(&table));
    if workers.iter().any(|&n| n > 0) {
        delete_queue(&queue, config)?;
    }
    Ok(())
}
