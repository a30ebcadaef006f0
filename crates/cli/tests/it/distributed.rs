//! The distributed mode against the real RabbitMQ at 127.0.0.1:5672: coordinator and worker
//! processes of the real binary, the LLM judge on the local test server. Each test uses its own
//! job queue; they run one at a time (one of them restarts the broker).

use super::{root, server, stdout, tls};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

static BROKER: Mutex<()> = Mutex::new(());

/// The broker, held for the test's duration; `None` (the test is skipped) when it is not
/// running, unless `LEDGER_REQUIRE_BROKER=1`.
fn broker() -> Option<MutexGuard<'static, ()>> {
    let up = std::net::TcpStream::connect_timeout(
        &"127.0.0.1:5672".parse().expect("address"),
        Duration::from_secs(2),
    )
    .is_ok();
    if !up {
        assert!(
            std::env::var("LEDGER_REQUIRE_BROKER").as_deref() != Ok("1"),
            "LEDGER_REQUIRE_BROKER=1 but no RabbitMQ at 127.0.0.1:5672 (start it: rabbitmq-server -detached)"
        );
        eprintln!("skipped: no RabbitMQ at 127.0.0.1:5672");
        return None;
    }
    Some(BROKER.lock().unwrap_or_else(|e| e.into_inner()))
}

/// A test's environment: its own job queue, the hashing embedder, the LLM judge on `llm`, and
/// `vars`, more environment for every command (storage, certificates).
struct Env {
    queue: String,
    llm: String,
    vars: Vec<(&'static str, String)>,
}

impl Env {
    fn new(name: &str, llm: &server::FakeServer) -> Env {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        Env {
            queue: format!("ledger.test.{name}.{}.{nanos}", std::process::id()),
            llm: llm.url.clone(),
            vars: Vec::new(),
        }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_ledger"));
        c.args(args)
            .env_remove("LEDGER_CONFIG")
            .env("LEDGER_EMBED_EMBEDDER", "hash")
            .env("LEDGER_QUEUE_JOBS", &self.queue)
            .env("LEDGER_LLM_URL", &self.llm)
            .env("LEDGER_LLM_MODEL", "fake-judge")
            .env("LEDGER_LLM_CONCURRENCY", "4")
            .env("LEDGER_INDEX_PROGRESS", "false")
            .envs(self.vars.iter().map(|(k, v)| (k, v)))
            // Workers read and write only where the tests put corpora, graphs and parts.
            .env(
                "LEDGER_QUEUE_WORKER_ROOTS",
                format!(
                    "{},{},s3://ledger",
                    std::env::temp_dir().display(),
                    root().display()
                ),
            );
        c
    }

    fn index(&self, input: &Path, out: &Path) -> Output {
        let o = self
            .command(&["index", s(input), "--out", s(out)])
            .output()
            .expect("ledger index runs");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        o
    }

    fn coordinator(&self, input: &Path, out: &Path, extra: &[&str]) -> Child {
        let mut args = vec!["coordinator", s(input), "--out", s(out)];
        args.extend_from_slice(extra);
        self.command(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("coordinator starts")
    }

    /// A coordinator run to its end with `workers` workers, which are then stopped.
    fn run(&self, input: &Path, out: &Path, extra: &[&str], workers: usize) -> Output {
        let coordinator = self.coordinator(input, out, extra);
        let pool: Vec<Child> = (0..workers).map(|_| self.worker()).collect();
        let o = wait(coordinator, Duration::from_secs(300));
        for w in pool {
            terminate(w);
        }
        o
    }

    fn worker(&self) -> Child {
        self.command(&["worker"])
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("worker starts")
    }

    /// Jobs ready in this test's queue.
    fn depth(&self) -> u32 {
        runtime().block_on(async {
            let b = ledger_queue::Broker::connect(AMQP, None, Duration::from_secs(30))
                .await
                .expect("broker");
            b.declare_jobs(&self.queue, Duration::from_secs(3600))
                .await
                .expect("declare");
            let n = b.depth(&self.queue).await.expect("depth");
            b.close().await;
            n
        })
    }

    /// Waits (up to a minute) until `n` jobs are ready in this test's queue.
    fn wait_for_jobs(&self, n: u32) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.depth() < n {
            assert!(Instant::now() < deadline, "jobs not published");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The dead letters of this test's queue.
    fn dead_letters(&self) -> Vec<ledger_queue::DeadLetter> {
        runtime().block_on(async {
            let b = ledger_queue::Broker::connect(AMQP, None, Duration::from_secs(30))
                .await
                .expect("broker");
            let mut out = Vec::new();
            while let Some(m) = b
                .get(&ledger_queue::dead_queue(&self.queue))
                .await
                .expect("get")
            {
                out.push(serde_json::from_slice(&m).expect("a dead letter"));
            }
            let _ = b.delete_queue(&ledger_queue::dead_queue(&self.queue)).await;
            let _ = b.delete_queue(&self.queue).await;
            b.close().await;
            out
        })
    }
}

const AMQP: &str = "amqp://guest:guest@127.0.0.1:5672/%2f";

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf8")
}

/// Waits for a child, killing it (and failing) after `limit`.
fn wait(mut child: Child, limit: Duration) -> Output {
    let deadline = Instant::now() + limit;
    loop {
        if child.try_wait().expect("try_wait").is_some() {
            return child.wait_with_output().expect("output");
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let o = child.wait_with_output().expect("output");
            panic!(
                "still running after {limit:?}: {}\n{}",
                stdout(&o),
                String::from_utf8_lossy(&o.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Sends SIGTERM and expects a clean exit.
fn terminate(child: Child) -> Output {
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    let o = wait(child, Duration::from_secs(60));
    assert!(
        o.status.success(),
        "worker after SIGTERM: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

/// A copy of the bundled datasets (documents are edited in some tests), without the parser's
/// class, encoding, paper, sub-float, display and whole-document fixtures (32 small documents
/// that would only lengthen these tests): seven documents.
fn corpus(dir: &Path) -> PathBuf {
    super::copy_datasets(
        &dir.join("corpus"),
        &[
            "latex-features/classes",
            "latex-features/encodings",
            "latex-features/papers",
            "latex-features/subfloats",
            "latex-features/displays",
            "latex-features/verbatim-whole-document",
        ],
    )
}

/// Every row of every graph table as sorted JSON lines; history columns (requests, tokens,
/// reuse) left out, since they say how a row was obtained, not what it is.
fn tables(graph: &Path) -> Vec<(String, Vec<String>)> {
    let queries = [
        ("documents", "SELECT * FROM documents"),
        ("units", "SELECT * FROM units"),
        ("edges", "SELECT * FROM edges"),
        ("mentions", "SELECT * FROM mentions"),
        ("labels", "SELECT * FROM labels"),
        ("diagnostics", "SELECT * FROM diagnostics"),
        (
            "embeddings",
            "SELECT doc_id, unit_id, model, summarizer, input_hash, summary, summary_hash, array_to_string(vector, ',') AS v FROM embeddings",
        ),
        (
            "judgments",
            "SELECT doc_id, unit_id, judge, cache_key, status, array_to_string(candidates, ',') AS c, verdicts, error FROM judgments",
        ),
    ];
    queries
        .iter()
        .map(|(name, q)| {
            let o = Command::new(env!("CARGO_BIN_EXE_ledger"))
                .args(["sql", "--graph", s(graph), "--format", "json", q])
                .env_remove("LEDGER_CONFIG")
                .output()
                .expect("ledger sql");
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            let rows: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
            let mut lines: Vec<String> = rows
                .as_array()
                .map(|a| a.iter().map(|r| r.to_string()).collect())
                .unwrap_or_default();
            lines.sort();
            (name.to_string(), lines)
        })
        .collect()
}

fn assert_same_graph(a: &Path, b: &Path) {
    for ((name, x), (_, y)) in tables(a).into_iter().zip(tables(b)) {
        assert_eq!(x.len(), y.len(), "{name}: row counts differ");
        if let Some((p, q)) = x.iter().zip(&y).find(|(p, q)| p != q) {
            panic!("{name} differs:\n{p}\n{q}");
        }
    }
}

/// `c` without the test's LLM endpoint: the offline judge, no endpoint of its own.
fn offline(mut c: Command) -> Command {
    c.env_remove("LEDGER_LLM_URL")
        .env_remove("LEDGER_LLM_MODEL");
    c
}

fn documents(graph: &Path) -> usize {
    tables(graph)[0].1.len()
}

#[test]
fn one_and_three_workers_build_the_embedded_graph_and_a_rerun_costs_nothing() {
    let Some(_broker) = broker() else { return };
    let llm = server::FakeServer::start();
    let env = Env::new("equal", &llm);
    let dir = tempfile::tempdir().expect("tempdir");
    let input = corpus(dir.path());
    let embedded = dir.path().join("embedded");
    let indexed = stdout(&env.index(&input, &embedded));
    let judged = llm.hits();
    assert!(judged > 100, "{judged} LLM requests");
    for workers in [1, 3] {
        let out = dir.path().join(format!("distributed-{workers}"));
        let before = llm.hits();
        let o = env.run(&input, &out, &[], workers);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert!(
            stdout(&o).contains("7 jobs published, 0 documents unchanged, 0 dead"),
            "{}",
            stdout(&o)
        );
        assert_eq!(llm.hits() - before, judged, "one request per judged unit");
        assert_same_graph(&embedded, &out);
        // The coordinator reports what `ledger index` reports, with the same figures.
        for label in [
            "documents:",
            "units:",
            "edges:",
            "mentions:",
            "depends:",
            "related:",
        ] {
            let line = |text: &str| {
                let found = text.lines().find(|l| l.starts_with(label));
                found.map(str::to_string)
            };
            assert!(line(&indexed).is_some(), "{label} missing from\n{indexed}");
            assert_eq!(line(&stdout(&o)), line(&indexed), "{label}");
        }
        assert!(stdout(&o).contains("\ncache: "), "{}", stdout(&o));
        // CPU time: both stages in `ledger index`; the corpus stage alone in the coordinator,
        // whose document stage ran in the workers.
        assert!(indexed.contains("\ncpu: document stage "), "{indexed}");
        assert!(
            stdout(&o).contains("(the document stage ran in the workers)"),
            "{}",
            stdout(&o)
        );
    }

    // A rerun over the unchanged corpus publishes nothing and sends nothing (no worker needed).
    let out = dir.path().join("distributed-3");
    let before = llm.hits();
    let o = wait(env.coordinator(&input, &out, &[]), Duration::from_secs(120));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        stdout(&o).contains("0 jobs published, 7 documents unchanged"),
        "{}",
        stdout(&o)
    );
    assert_eq!(llm.hits(), before);
    assert_same_graph(&embedded, &out);

    // One document changed: only it is reprocessed, and only its changed units are judged.
    let paper = input.join("paper-carleson-lean/main.tex");
    let text = std::fs::read_to_string(&paper).expect("read");
    std::fs::write(
        &paper,
        text.replacen("\\section{", "A new opening sentence.\n\n\\section{", 1),
    )
    .expect("write");
    let o = env.run(&input, &out, &[], 1);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        stdout(&o).contains("1 job published, 6 documents unchanged"),
        "{}",
        stdout(&o)
    );
    let sent = llm.hits() - before;
    assert!(
        sent >= 1 && sent * 10 < judged,
        "{sent} requests after a one-paragraph edit"
    );
    assert_eq!(documents(&out), 7);
    let _ = env.dead_letters();
}

#[test]
fn a_poison_document_ends_in_the_dead_letter_queue() {
    let Some(_broker) = broker() else { return };
    let llm = server::FakeServer::start();
    let env = Env::new("poison", &llm);
    let dir = tempfile::tempdir().expect("tempdir");
    let input = corpus(dir.path());
    let out = dir.path().join("graph");
    let coordinator = env.coordinator(&input, &out, &["--max-attempts", "2"]);
    // Once the jobs are published, one document changes under the workers' feet: its job can
    // never produce the part the coordinator expects.
    env.wait_for_jobs(7);
    let poison = input.join("paper-equational-theories/main.tex");
    let text = std::fs::read_to_string(&poison).expect("read");
    std::fs::write(&poison, format!("{text}\n% edited\n")).expect("write");
    let w = env.worker();
    let o = wait(coordinator, Duration::from_secs(300));
    terminate(w);
    assert_eq!(o.status.code(), Some(1), "a dead document fails the run");
    let report = stdout(&o);
    assert!(
        report.contains("6 jobs published") || report.contains("7 jobs published"),
        "{report}"
    );
    assert!(
        report.contains("dead: corpus/paper-equational-theories/main.tex")
            && report.contains("changed since the coordinator scanned it"),
        "{report}"
    );
    // Every other document is in the graph; the poison one is in the dead-letter queue.
    assert_eq!(documents(&out), 6);
    let letters = env.dead_letters();
    assert_eq!(letters.len(), 1, "{letters:?}");
    assert_eq!(
        letters[0].job.doc_id,
        "corpus/paper-equational-theories/main.tex"
    );
    assert_eq!(letters[0].job.attempt, 1, "the second attempt was the last");
    assert!(
        letters[0].error.contains("changed since"),
        "{}",
        letters[0].error
    );
}

/// Starts a slow run (the judge answers in 40 ms, four at a time), waits until work is under
/// way, does `disrupt`, and checks that the run completes with the embedded graph.
fn disrupted_run(name: &str, disrupt: impl FnOnce(&Env, &mut Vec<Child>)) {
    let llm = server::FakeServer::start();
    let env = Env::new(name, &llm);
    let dir = tempfile::tempdir().expect("tempdir");
    let input = corpus(dir.path());
    let embedded = dir.path().join("embedded");
    env.index(&input, &embedded);
    llm.set_delay(40);
    let out = dir.path().join("graph");
    let coordinator = env.coordinator(&input, &out, &[]);
    let mut workers = vec![env.worker()];
    let start = llm.hits();
    let deadline = Instant::now() + Duration::from_secs(60);
    while llm.hits() < start + 20 {
        assert!(Instant::now() < deadline, "no progress");
        std::thread::sleep(Duration::from_millis(20));
    }
    disrupt(&env, &mut workers);
    let o = wait(coordinator, Duration::from_secs(600));
    for w in workers {
        terminate(w);
    }
    assert!(
        o.status.success(),
        "{}\n{}",
        stdout(&o),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(stdout(&o).contains("0 dead"), "{}", stdout(&o));
    // Every document exactly once, nothing duplicated: the same rows as the embedded graph.
    assert_same_graph(&embedded, &out);
    let _ = env.dead_letters();
}

#[test]
fn a_worker_killed_mid_run_loses_nothing() {
    let Some(_broker) = broker() else { return };
    disrupted_run("sigkill", |env, workers| {
        let mut victim = workers.remove(0);
        victim.kill().expect("SIGKILL");
        let _ = victim.wait();
        workers.push(env.worker());
    });
}

#[test]
fn the_run_survives_a_broker_restart() {
    let Some(_broker) = broker() else { return };
    disrupted_run("restart", |_, _| {
        for step in ["stop_app", "start_app"] {
            let o = Command::new("rabbitmqctl")
                .arg(step)
                .output()
                .expect("rabbitmqctl runs");
            assert!(
                o.status.success(),
                "rabbitmqctl {step}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
    });
}

/// `ledger bench ARGS` with the hash embedder and no configuration file: its standard output,
/// after checking that it succeeded.
fn bench(args: &[&str]) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_ledger"))
        .arg("bench")
        .args(args)
        .env_remove("LEDGER_CONFIG")
        .env("LEDGER_EMBED_EMBEDDER", "hash")
        .output()
        .expect("ledger bench runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    stdout(&o)
}

#[test]
fn the_distributed_benchmark_reports_every_mode() {
    let Some(_broker) = broker() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let input = super::small_datasets(dir.path());
    let table = bench(&["distributed", s(&input), "--workers", "1,2"]);
    for row in [
        "| embedded (all cores) |",
        "| 1 worker |",
        "| 2 workers |",
        "queue overhead:",
    ] {
        assert!(table.contains(row), "{table}");
    }
}

#[test]
fn a_second_coordinator_on_the_same_graph_stops() {
    let Some(_broker) = broker() else { return };
    let llm = server::FakeServer::start();
    let env = Env::new("lock", &llm);
    let dir = tempfile::tempdir().expect("tempdir");
    let input = corpus(dir.path());
    let out = dir.path().join("graph");
    // The first coordinator publishes and waits: no worker yet.
    let first = env.coordinator(&input, &out, &[]);
    env.wait_for_jobs(7);
    let second = wait(
        env.coordinator(&input, &out, &["--no-wait"]),
        Duration::from_secs(60),
    );
    assert_eq!(second.status.code(), Some(2));
    let err = String::from_utf8_lossy(&second.stderr);
    assert!(
        err.contains("is being written by another ledger process"),
        "{err}"
    );
    assert_eq!(env.depth(), 7, "the second coordinator published nothing");
    // The worker's log, at the default level, has one line per job.
    let w = env
        .command(&["worker"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("worker starts");
    let o = wait(first, Duration::from_secs(300));
    let log = terminate(w);
    let log = String::from_utf8_lossy(&log.stderr);
    assert_eq!(log.matches("job done").count(), 7, "{log}");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(documents(&out), 7);
    let _ = env.dead_letters();
}

/// `moto_server` (an S3-compatible server from PyPI, installed by `tests/run`) on a free port,
/// with bucket `ledger`; killed when dropped.
struct S3(Child, u16);

impl Drop for S3 {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn s3() -> Option<S3> {
    let found = Command::new("moto_server").arg("--help").output().is_ok();
    if !found {
        assert!(
            std::env::var("LEDGER_REQUIRE_S3").as_deref() != Ok("1"),
            "LEDGER_REQUIRE_S3=1 but moto_server is not installed (pip install 'moto[server]')"
        );
        eprintln!("skipped: no moto_server");
        return None;
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let child = Command::new("moto_server")
        .args(["-H", "127.0.0.1", "-p", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("moto_server starts");
    let server = S3(child, port);
    // Create the bucket (moto accepts unsigned requests).
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        use std::io::{Read, Write};
        if let Ok(mut c) = std::net::TcpStream::connect(("127.0.0.1", port)) {
            let _ = c.write_all(
                b"PUT /ledger HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            );
            let mut answer = String::new();
            let _ = c.read_to_string(&mut answer);
            if answer.starts_with("HTTP/1.1 200") || answer.starts_with("HTTP/1.0 200") {
                return Some(server);
            }
        }
        assert!(Instant::now() < deadline, "moto_server not ready");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn workers_write_parts_to_s3_compatible_storage() {
    let Some(_broker) = broker() else { return };
    let Some(s3) = s3() else { return };
    let llm = server::FakeServer::start();
    let mut env = Env::new("s3", &llm);
    let dir = tempfile::tempdir().expect("tempdir");
    let input = corpus(dir.path());
    let embedded = dir.path().join("embedded");
    env.index(&input, &embedded);
    let out = dir.path().join("graph");
    env.vars = vec![
        ("LEDGER_STORE_PARTS", "s3://ledger/parts".into()),
        ("AWS_ENDPOINT", format!("http://127.0.0.1:{}", s3.1)),
        ("AWS_ALLOW_HTTP", "true".into()),
        ("AWS_ACCESS_KEY_ID", "test".into()),
        ("AWS_SECRET_ACCESS_KEY", "test".into()),
        ("AWS_DEFAULT_REGION", "us-east-1".into()),
    ];
    let o = env.run(&input, &out, &["--no-progress"], 1);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_same_graph(&embedded, &out);
    assert!(
        !out.join("parts").exists(),
        "parts went to the bucket, not the graph folder"
    );
    // The bucket holds the seven parts, one per document.
    use std::io::{Read, Write};
    let mut c = std::net::TcpStream::connect(("127.0.0.1", s3.1)).expect("connect");
    c.write_all(b"GET /ledger?list-type=2&prefix=parts/ HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .expect("list");
    let mut listing = String::new();
    let _ = c.read_to_string(&mut listing);
    assert_eq!(listing.matches(".parquet</Key>").count(), 7, "{listing}");
    let _ = env.dead_letters();
}

#[test]
fn the_scale_benchmark_reports_every_mode() {
    let Some(_broker) = broker() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("scale");
    let table = bench(&[
        "scale",
        s(&root().join("datasets/paper-equational-theories")),
        "--out",
        s(&out),
        "--sizes",
        "0.5,1",
        "--workers",
        "0,1",
    ]);
    let rows: Vec<&str> = table.lines().filter(|l| l.starts_with("| ")).collect();
    // A header and two modes at each of two sizes, each with a peak RSS measured.
    assert_eq!(rows.len(), 5, "{table}");
    // The column by its header, not by its place (columns were added before it).
    let peak_column = rows[0]
        .split('|')
        .map(str::trim)
        .position(|c| c == "peak RSS MB")
        .expect("a peak RSS column");
    for row in &rows[1..] {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let peak: f64 = cells[peak_column].parse().expect("peak RSS");
        assert!(peak > 1.0, "{row}");
    }
    assert!(
        table.contains("| embedded |") && table.contains("| 1 worker |"),
        "{table}"
    );
    assert_eq!(
        std::fs::read_to_string(out.join("scale.md")).expect("scale.md"),
        table
    );
    for plot in ["scale-seconds.svg", "scale-rss.svg"] {
        let svg = std::fs::read_to_string(out.join(plot)).expect("plot");
        assert!(svg.contains("<svg") && svg.contains("embedded"), "{plot}");
    }
    // The corpus is copies, each marked: the second copy differs from the first.
    let a = out.join("corpus-1mb/copy-1/paper-equational-theories/main.tex");
    let b = out.join("corpus-1mb/copy-2/paper-equational-theories/main.tex");
    assert_ne!(
        std::fs::read(a).expect("first copy"),
        std::fs::read(b).expect("second copy")
    );
}

#[test]
fn the_broker_password_is_neither_stored_in_the_graph_nor_printed() {
    let Some(_broker) = broker() else { return };
    let llm = server::FakeServer::start();
    let env = Env::new("redact", &llm);
    let dir = tempfile::tempdir().expect("tempdir");
    let input = corpus(dir.path());
    let out = dir.path().join("graph");
    let o = env.run(&input, &out, &["--amqp", AMQP], 1);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let runs = super::sql(&out, "SELECT command FROM runs").to_string();
    assert!(runs.contains("--amqp amqp://127.0.0.1:5672/%2f"), "{runs}");
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    for text in [&runs, &printed] {
        assert!(!text.contains("guest:guest"), "{text}");
    }
    let _ = env.dead_letters();
}

#[test]
fn a_worker_refuses_jobs_its_configuration_does_not_allow() {
    let Some(_broker) = broker() else { return };
    let llm = server::FakeServer::start();
    let attacker = server::FakeServer::start();
    let env = Env::new("refuse", &llm);
    let dir = tempfile::tempdir().expect("tempdir");
    let input = corpus(dir.path());
    let out = dir.path().join("graph");
    let coordinator = offline(env.command(&["coordinator", s(&input), "--out", s(&out)]))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("coordinator starts");
    env.wait_for_jobs(7);
    // Take the seven jobs and send them back tampered with, as anyone with the broker's
    // credentials could.
    runtime().block_on(async {
        let b = ledger_queue::Broker::connect(AMQP, None, Duration::from_secs(30))
            .await
            .expect("broker");
        let mut jobs = Vec::new();
        while let Some(m) = b.get(&env.queue).await.expect("get") {
            jobs.push(serde_json::from_slice::<serde_json::Value>(&m).expect("a job"));
        }
        assert_eq!(jobs.len(), 7);
        jobs.sort_by_key(|j| j["doc_id"].as_str().unwrap_or_default().to_string());
        jobs[0]["source"] = "/etc/hostname".into();
        jobs[1]["fingerprint"] = "0000".into();
        jobs[2]["parts"] = "/var/tmp/ledger-elsewhere".into();
        jobs[3]["root"] = "/".into();
        // The old attack: settings naming another endpoint and the worker's secret as its key.
        jobs[4]["settings"] = serde_json::json!({
            "llm": {"url": attacker.url, "model": "m", "api_key_env": "LEDGER_TEST_SECRET"},
            "depends": {"enabled": true, "judge": "llm", "window": 8},
        });
        for job in &jobs {
            b.publish(&env.queue, job).await.expect("publish");
        }
        b.close().await;
    });
    let worker = offline(env.command(&["worker"]))
        .env("LEDGER_TEST_SECRET", "topsecret")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("worker starts");
    let o = wait(coordinator, Duration::from_secs(300));
    terminate(worker);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let letters = env.dead_letters();
    let reasons: Vec<&str> = letters.iter().map(|l| l.error.as_str()).collect();
    assert_eq!(letters.len(), 4, "{reasons:?}");
    for (field, reason) in [
        ("source /etc/hostname", "not under this worker's roots"),
        ("fingerprint", "differs from the coordinator's"),
        (
            "parts /var/tmp/ledger-elsewhere",
            "not under this worker's roots",
        ),
        ("input root /", "not under this worker's roots"),
    ] {
        assert!(
            reasons
                .iter()
                .any(|r| r.contains(field) && r.contains(reason)),
            "{field}: {reasons:?}"
        );
    }
    // Each was refused at once, not retried.
    assert!(letters.iter().all(|l| l.job.attempt == 0), "{reasons:?}");
    // The fifth (and the two untouched) ran on the worker's own settings: nothing went to the endpoint the job named.
    assert_eq!(attacker.hits(), 0);
}

#[test]
fn a_worker_judging_at_another_threshold_is_refused_not_merged() {
    // Issue 46: a coordinator at `depends.threshold = 0.5` and a worker at the model's own
    // threshold would have built one graph of edges judged at two operating points. The
    // threshold is in the judge's name and so in the fingerprint: every job is refused, with
    // the reason, and none of the worker's parts is merged.
    let Some(_broker) = broker() else { return };
    let llm = server::FakeServer::start();
    let env = Env::new("threshold", &llm);
    let dir = tempfile::tempdir().expect("tempdir");
    let input = corpus(dir.path());
    let out = dir.path().join("graph");
    // Both with the learned judge (auto, without an endpoint).
    let mut coordinator = offline(env.command(&["coordinator", s(&input), "--out", s(&out)]));
    coordinator.env("LEDGER_DEPENDS_THRESHOLD", "0.5");
    let coordinator = coordinator
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("coordinator starts");
    let worker = offline(env.command(&["worker"]))
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("worker starts");
    let o = wait(coordinator, Duration::from_secs(300));
    terminate(worker);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let letters = env.dead_letters();
    let reasons: Vec<&str> = letters.iter().map(|l| l.error.as_str()).collect();
    assert_eq!(letters.len(), 7, "{reasons:?}");
    assert!(
        reasons.iter().all(|r| r.contains("fingerprint")
            && r.matches("differs from the coordinator's").count() == 1),
        "{reasons:?}"
    );
    // The run reports them dead; the graph it commits holds none of their parts.
    let printed = String::from_utf8_lossy(&o.stdout);
    assert!(printed.contains("7 dead"), "{printed}");
    assert!(printed.contains("documents: 0 "), "{printed}");
    assert_eq!(documents(&out), 0);
}

#[test]
fn an_https_endpoint_and_an_amqps_broker_are_trusted_through_tls_ca_file() {
    let Some(_broker) = broker() else { return };
    let llm = server::FakeServer::start();
    let llm_front = tls::TlsFront::start(llm.addr);
    let broker_front = tls::TlsFront::start("127.0.0.1:5672".parse().expect("address"));
    let dir = tempfile::tempdir().expect("tempdir");
    let ca = dir.path().join("ca.pem");
    std::fs::write(
        &ca,
        format!(
            "{}{}",
            llm_front.certificate_pem, broker_front.certificate_pem
        ),
    )
    .expect("write ca.pem");
    let mut env = Env::new("tls", &llm);
    env.llm = format!("https://localhost:{}/v1", llm_front.port);
    let amqps = format!("amqps://guest:guest@localhost:{}/%2f", broker_front.port);
    env.vars = vec![
        ("LEDGER_TLS_CA_FILE", s(&ca).to_string()),
        ("LEDGER_QUEUE_AMQP", amqps.clone()),
    ];
    let input = corpus(dir.path());

    // Embedded: the DEPENDS judge's requests go through TLS.
    let embedded = dir.path().join("embedded");
    env.index(&input, &embedded);
    assert!(llm.hits() > 100, "{} LLM requests", llm.hits());
    assert!(llm_front.handshakes() >= 1);

    // Distributed over amqps://: coordinator and worker verify the broker's certificate.
    let out = dir.path().join("distributed");
    let o = env.run(&input, &out, &[], 1);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(stdout(&o).contains("7 jobs published"), "{}", stdout(&o));
    assert!(broker_front.handshakes() >= 2, "coordinator and worker");
    assert_same_graph(&embedded, &out);

    // Without the extra root the broker's self-signed certificate is refused.
    let err = runtime()
        .block_on(ledger_queue::Broker::connect(&amqps, None, Duration::ZERO))
        .err()
        .expect("an untrusted certificate is refused");
    assert!(
        err.to_string().to_lowercase().contains("certificate"),
        "{err}"
    );
    let _ = env.dead_letters();
}
