//! `ledger index` with the LLM DEPENDS judge: against the local test server (requests counted,
//! judgments persisted in Parquet and reused by the next run), and against a real llama.cpp
//! server with a small model.

use super::{server, sql, stdout};
use std::path::Path;
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

/// Runs `ledger` with the chat endpoint at `url` and the offline hashing embedder.
fn ledger_llm(url: &str, model: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ledger"))
        .args(args)
        .env_remove("LEDGER_CONFIG")
        .env("LEDGER_EMBED_EMBEDDER", "hash")
        .env("LEDGER_LLM_URL", url)
        .env("LEDGER_LLM_MODEL", model)
        .env("LEDGER_LLM_CONCURRENCY", "1")
        .output()
        .expect("ledger runs")
}

fn int(v: &serde_json::Value) -> u64 {
    v.as_u64()
        .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
        .unwrap_or_else(|| panic!("not a count: {v}"))
}

const RUNS: &str = "SELECT run_id, judged_units, reused_judgments, failed_judgments, llm_requests, \
                    llm_prompt_tokens, llm_completion_tokens FROM runs ORDER BY run_id";

#[test]
fn llm_judgments_are_persisted_and_reused_by_the_next_run() {
    let server = server::FakeServer::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let graph = dir.path().join("graph");
    let datasets = super::small_datasets(dir.path());
    let input = datasets.to_str().expect("utf8");
    let out = graph.to_str().expect("utf8");

    // The estimate sends and writes nothing.
    let o = ledger_llm(
        &server.url,
        "fake-judge",
        &["index", input, "--out", out, "--estimate"],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let estimate = stdout(&o);
    assert!(estimate.contains("with llm:fake-judge:p2"), "{estimate}");
    assert_eq!(server.hits(), 0);
    assert!(!graph.exists());
    let announced: u64 = estimate
        .split(" requests")
        .next()
        .and_then(|s| s.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .expect("request count in the estimate");

    let o = ledger_llm(
        &server.url,
        "fake-judge",
        &["index", input, "--out", out, "--no-related"],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let runs = sql(&graph, RUNS);
    let first = &runs[0];
    let units = int(&first["judged_units"]);
    assert!(units >= 20, "{first}");
    assert_eq!(announced, units);
    assert_eq!(
        int(&first["llm_requests"]),
        units,
        "one request per judged unit"
    );
    assert_eq!(server.hits() as u64, units);
    assert_eq!(int(&first["llm_prompt_tokens"]), 100 * units);
    assert_eq!(int(&first["failed_judgments"]), 0);
    let rows = sql(
        &graph,
        "SELECT COUNT(*) AS n, SUM(requests) AS requests FROM judgments WHERE status = 'ok' AND judge = 'llm:fake-judge:p2'",
    );
    assert_eq!(int(&rows[0]["n"]), units);
    // One DEPENDS edge per judgment (the server names the nearest candidate), unless a stronger
    // REFERENCES edge already links the pair.
    let edges = sql(
        &graph,
        "SELECT COUNT(*) AS n FROM edges WHERE kind = 'DEPENDS' AND evidence = 'llm:fake-judge:p2: the preceding unit'",
    );
    assert!(int(&edges[0]["n"]) > 0 && int(&edges[0]["n"]) <= units);

    // Unchanged inputs: nothing is sent, every judgment is reused.
    let o = ledger_llm(
        &server.url,
        "fake-judge",
        &["index", input, "--out", out, "--estimate"],
    );
    assert!(stdout(&o).contains(": 0 requests"), "{}", stdout(&o));
    let o = ledger_llm(
        &server.url,
        "fake-judge",
        &["index", input, "--out", out, "--no-related"],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(server.hits() as u64, units, "no request on a rerun");
    // Nothing changed: not parsed, nothing written.
    assert!(stdout(&o).contains("unchanged"), "{}", stdout(&o));
    assert_eq!(sql(&graph, RUNS).as_array().map(Vec::len), Some(1));
    // Other corpus-stage settings: a new version, its judgments all reused.
    let o = ledger_llm(
        &server.url,
        "fake-judge",
        &[
            "index",
            input,
            "--out",
            out,
            "--no-related",
            "--theta",
            "0.8",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(server.hits() as u64, units, "no request on a rerun");
    let runs = sql(&graph, RUNS);
    let second = &runs[1];
    assert_eq!(int(&second["llm_requests"]), 0);
    assert_eq!(int(&second["reused_judgments"]), units);
    let edges2 = sql(
        &graph,
        "SELECT COUNT(*) AS n FROM edges WHERE kind = 'DEPENDS' AND evidence <> 'proof-of'",
    );
    assert_eq!(int(&edges2[0]["n"]), int(&edges[0]["n"]));
}

#[test]
fn failed_judgments_commit_the_graph_and_exit_3_unless_partial_is_allowed() {
    // A port nothing listens on: every request fails at once.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let url = format!("http://127.0.0.1:{port}/v1");
    let dir = tempfile::tempdir().expect("tempdir");
    let notes = dir.path().join("notes.md");
    std::fs::write(
        &notes,
        "# Notes\n\nA *lockfile* records the resolved versions.\n\n\
         The lockfile is committed with the sources.\n\n\
         A build reads the lockfile first.\n",
    )
    .expect("write");
    let graph = dir.path().join("graph");
    let args = |extra: &'static str| {
        let mut a = vec![
            "index".to_string(),
            notes.display().to_string(),
            "--out".into(),
            graph.display().to_string(),
            "--no-related".into(),
            "--judge".into(),
            "llm".into(),
        ];
        if !extra.is_empty() {
            a.push(extra.into());
        }
        a
    };
    let run = |extra: &'static str| {
        Command::new(env!("CARGO_BIN_EXE_ledger"))
            .args(args(extra))
            .env_remove("LEDGER_CONFIG")
            .env("LEDGER_LLM_URL", &url)
            .env("LEDGER_LLM_MODEL", "gone")
            .env("LEDGER_LLM_MAX_RETRIES", "0")
            .output()
            .expect("ledger runs")
    };
    let o = run("");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(err.contains("DEPENDS judgments failed"), "{err}");
    // Committed all the same, and the graph says what failed.
    let runs = sql(&graph, RUNS);
    assert!(int(&runs[0]["failed_judgments"]) >= 2, "{runs}");
    let o = run("--allow-partial");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains("warning: the graph was committed, but"),
        "{err}"
    );
    assert_eq!(sql(&graph, RUNS).as_array().map(Vec::len), Some(2));
}

/// The llama.cpp server and model that `tests/run` installs, unless told to skip.
fn llama() -> Option<(String, String)> {
    let server = std::env::var("LEDGER_LLAMA_SERVER").ok();
    let model = std::env::var("LEDGER_LLAMA_MODEL").ok();
    match (server, model) {
        (Some(s), Some(m)) if Path::new(&s).is_file() && Path::new(&m).is_file() => Some((s, m)),
        _ if std::env::var_os("LEDGER_REQUIRE_LLAMA").is_some() => {
            panic!(
                "LEDGER_REQUIRE_LLAMA is set but LEDGER_LLAMA_SERVER / LEDGER_LLAMA_MODEL do not name files"
            )
        }
        _ => None,
    }
}

/// A llama-server process, killed when dropped.
struct Llama(Child);

impl Drop for Llama {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_llama(server: &str, model: &str) -> (Llama, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let child = Command::new(server)
        .args([
            "-m",
            model,
            "--host",
            "127.0.0.1",
            "--port",
            &port.to_string(),
        ])
        .args(["-c", "8192", "-np", "1", "-t", "1", "--no-webui"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("llama-server starts");
    let llama = Llama(child);
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        use std::io::{Read, Write};
        if let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) {
            let _ = s.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
            let mut answer = String::new();
            let _ = s.read_to_string(&mut answer);
            if answer.starts_with("HTTP/1.1 200") {
                break;
            }
        }
        assert!(
            Instant::now() < deadline,
            "llama-server not ready after 120 s"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    (llama, format!("http://127.0.0.1:{port}/v1"))
}

#[test]
fn a_real_llama_server_judges_depends() {
    let Some((server, model)) = llama() else {
        eprintln!("skipped: no llama-server (tests/run installs one)");
        return;
    };
    let (_llama, url) = start_llama(&server, &model);
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("loss.tex");
    std::fs::write(&input, SMALL).expect("write");
    let graph = dir.path().join("graph");
    let (input, out) = (input.to_str().expect("utf8"), graph.to_str().expect("utf8"));
    let index = [
        "index",
        input,
        "--out",
        out,
        "--no-related",
        "--judge",
        "llm",
    ];
    let started = Instant::now();
    let o = ledger_llm(&url, "smollm2", &index);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    eprintln!("{}in {:.1} s", stdout(&o), started.elapsed().as_secs_f64());
    let runs = sql(&graph, RUNS);
    let first = &runs[0];
    let units = int(&first["judged_units"]);
    let failed = int(&first["failed_judgments"]);
    assert!(units >= 4, "{first}");
    // Real usage from a real server: requests, prompt and completion tokens.
    assert!(int(&first["llm_requests"]) >= units, "{first}");
    assert!(int(&first["llm_prompt_tokens"]) > 100 * units, "{first}");
    assert!(int(&first["llm_completion_tokens"]) > 0, "{first}");
    let ok = sql(
        &graph,
        "SELECT unit_id, verdicts, requests FROM judgments WHERE status = 'ok' AND judge = 'llm:smollm2:p2'",
    );
    // The schema-constrained answers parse: most judgments succeed even with a 135M model.
    assert!(ok.as_array().map_or(0, Vec::len) as u64 + failed == units);
    assert!(failed * 2 <= units, "{failed} of {units} failed: {first}");
    // The rerun sends requests for the failed units only (at most three attempts each).
    let o = ledger_llm(&url, "smollm2", &index);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let runs = sql(&graph, RUNS);
    if failed == 0 {
        // Nothing to retry: the rerun finds the graph unchanged and writes nothing.
        assert!(stdout(&o).contains("unchanged"), "{}", stdout(&o));
        assert_eq!(runs.as_array().map(Vec::len), Some(1));
        return;
    }
    let second = &runs[1];
    assert_eq!(int(&second["reused_judgments"]), units - failed);
    assert!(int(&second["llm_requests"]) <= 3 * failed, "{second}");
}

const SMALL: &str = r"\documentclass{article}
\begin{document}
\section{Setting}
\begin{definition}\label{def:loss}
Let $X$ be a finite set of vectors. The square loss of $x \in X$ is $L(x) = |x|^2$.
\end{definition}
We minimise the square loss $L$ over $X$ in what follows.
\begin{lemma}\label{lem:pos}
For every $x \in X$, $L(x) \ge 0$.
\end{lemma}
\begin{proof}
By Definition~\ref{def:loss}, $L(x)$ is a square.
\end{proof}
\begin{theorem}\label{thm:main}
The minimum of $L$ over $X$ is $0$ when $0 \in X$.
\end{theorem}
\begin{proof}
Apply Lemma~\ref{lem:pos} and evaluate $L(0) = 0$.
\end{proof}
\end{document}
";

/// `ledger eval depends --judge llm` on one blueprint: the estimate sends nothing and announces
/// the requests the run then sends, one per judged unit; the report names the model's judge.
#[test]
fn eval_depends_scores_the_llm_judge_on_a_blueprint() {
    let server = server::FakeServer::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let datasets = dir.path().join("datasets");
    super::copy_dir(
        &super::root().join("datasets/blueprints/LeanAPAP"),
        &datasets.join("blueprints/LeanAPAP"),
    );
    let out = dir.path().join("report");
    let args = |extra: &[&'static str]| {
        let mut a = vec![
            "eval",
            "depends",
            "--datasets",
            datasets.to_str().expect("utf8"),
            "--out",
            out.to_str().expect("utf8"),
            "--judge",
            "llm",
        ];
        a.extend_from_slice(extra);
        a.into_iter().map(String::from).collect::<Vec<_>>()
    };
    let run = |a: Vec<String>| {
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        ledger_llm(&server.url, "fake-judge", &a)
    };
    let o = run(args(&["--estimate"]));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let estimate = stdout(&o);
    assert_eq!(server.hits(), 0, "{estimate}");
    let requests: usize = estimate
        .lines()
        .find(|l| l.starts_with("| all |"))
        .and_then(|l| l.split('|').nth(2))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no total in {estimate}"));
    assert!(requests >= 50, "{estimate}");

    let o = run(args(&[]));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(server.hits(), requests);
    let report = stdout(&o);
    assert!(report.contains("(llm:fake-judge:p2)"), "{report}");
    assert!(report.contains("| LeanAPAP | 74 |"), "{report}");
    for f in ["depends.md", "depends.json", "depends-pr.svg"] {
        assert!(out.join(f).is_file(), "{f}");
    }
}
