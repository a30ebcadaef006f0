//! The LLM DEPENDS judge against the local test server: one request per unit, nothing on a
//! rerun, failures recorded and judged again, no verdict invented.

use crate::depends::{blueprint, parsed};
use crate::server::{Behaviour, FakeServer};
use ledger_core::{Document, JudgmentOutcome};
use ledger_llm::depends::{Cache, DocContext, LlmJudge, estimate, judge_corpus, tasks};
use ledger_llm::{Client, Endpoint};
use std::path::PathBuf;
use std::time::Duration;

fn judge(url: &str, concurrency: usize) -> LlmJudge {
    let mut e = Endpoint::new(url, "fake-judge");
    e.timeout = Duration::from_millis(700);
    e.max_retries = 2;
    e.backoff = Duration::from_millis(10);
    e.concurrency = concurrency;
    LlmJudge::new(Client::new(e).expect("client"))
}

fn cache_of(docs: &[Document]) -> Cache {
    docs.iter()
        .flat_map(|d| &d.judgments)
        .filter(|j| matches!(j.outcome, JudgmentOutcome::Verdicts(_)))
        .map(|j| (j.cache_key.clone(), j.clone()))
        .collect()
}

const SMALL: &str = r"\documentclass{article}
\begin{document}
\section{Setting}
\begin{definition}\label{def:loss}
Let $X$ be a set. The square loss is $L(x) = |x|^2$.
\end{definition}
We minimise the square loss $L$ over $X$.
\begin{lemma}\label{lem:pos}
For every $x \in X$, $L(x) \ge 0$.
\end{lemma}
\begin{proof}
By Definition~\ref{def:loss}.
\end{proof}
\begin{theorem}\label{thm:main}
The minimum of $L$ is $0$.
\end{theorem}
\begin{proof}
Apply Lemma~\ref{lem:pos}.
\end{proof}
\end{document}
";

fn small() -> Vec<Document> {
    let dir: PathBuf = std::env::temp_dir().join(format!(
        "ledger-judge-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("small.tex");
    std::fs::write(&path, SMALL).expect("write");
    let docs = parsed(&path);
    let _ = std::fs::remove_dir_all(&dir);
    docs
}

#[test]
fn one_request_per_judged_unit_and_none_on_a_rerun() {
    let server = FakeServer::start();
    let judge = judge(&server.url, 4);
    let mut docs = vec![blueprint()];
    let (planned, e) = estimate(&docs, &judge, 8, &Cache::new());
    let report = judge_corpus(&mut docs, &judge, 8, &Cache::new());
    eprintln!("blueprint, LLM judge: {report:?}; estimate {e:?}");
    assert!(report.units > 300, "{} judged units", report.units);
    // The estimate announced exactly the requests the run sent.
    assert_eq!(planned.units, report.units);
    assert_eq!(e.requests, report.units as u64);
    assert!(e.prompt_tokens > 100 * e.requests, "{e:?}");
    // At most one request per judged unit: exactly one, with a well-behaved endpoint.
    assert_eq!(server.hits(), report.units);
    assert_eq!(report.requests, report.units as u64);
    assert_eq!((report.failed, report.reused), (0, 0));
    assert_eq!(report.prompt_tokens, 100 * report.units as u64);
    let usage = judge.client().usage().snapshot();
    assert_eq!(usage.requests, report.requests);
    assert_eq!(usage.completion_tokens, report.completion_tokens);
    // The server calls the nearest candidate a prerequisite: one edge per judgment, to it,
    // unless a REFERENCES edge already links the pair.
    let doc = &docs[0];
    assert_eq!(doc.judgments.len(), report.units);
    assert_eq!(doc.depends.len(), report.edges);
    assert!(report.edges * 10 >= report.units * 9, "{report:?}");
    let nearest: std::collections::HashMap<&str, &str> = doc
        .judgments
        .iter()
        .map(|j| {
            (
                j.unit_id.as_str(),
                j.candidates.last().map_or("", String::as_str),
            )
        })
        .collect();
    for e in &doc.depends {
        assert_eq!(nearest[e.src_unit.as_str()], e.dst_unit);
        assert_eq!(e.evidence, "llm:fake-judge:p2: the preceding unit");
    }

    // A rerun over the unchanged document sends nothing and gives the same graph.
    let cache = cache_of(&docs);
    let mut again = vec![blueprint()];
    let (_, e2) = estimate(&again, &judge, 8, &cache);
    assert_eq!(e2.requests, 0);
    let rerun = judge_corpus(&mut again, &judge, 8, &cache);
    assert_eq!(server.hits(), report.units, "no request on a rerun");
    assert_eq!((rerun.reused, rerun.requests), (report.units, 0));
    assert_eq!(again[0].depends, docs[0].depends);

    // An edit to one unit re-judges exactly the units that see it (itself, and the units it is
    // a candidate of).
    let mut edited = vec![blueprint()];
    let middle = &docs[0].judgments[docs[0].judgments.len() / 2].unit_id;
    let k = edited[0].unit_indices()[middle.as_str()];
    let changed = edited[0].units[k].id.clone();
    edited[0].units[k].content_hash = "edited".into();
    let ctx = DocContext::new(&edited[0]);
    let affected = tasks(&ctx, &judge, 8)
        .iter()
        .filter(|t| t.unit == k || t.candidates.contains(&k))
        .count();
    assert!(affected >= 1, "unit {changed} is judged or a candidate");
    let third = judge_corpus(&mut edited, &judge, 8, &cache);
    assert_eq!(server.hits() - report.units, affected);
    assert_eq!(third.reused, report.units - affected);
}

#[test]
fn a_misbehaving_endpoint_loses_and_invents_nothing() {
    let server = FakeServer::start();
    let judge = judge(&server.url, 1);
    let mut docs = small();
    // One request at a time, in order: the first unit's request fails twice (500, then 429
    // with Retry-After) and succeeds; the second's is cut short and then hangs, then succeeds;
    // the third gets a body that is not JSON, then twice an answer missing a verdict: failed.
    server.script(&[
        Behaviour::Status(500),
        Behaviour::RateLimited(1),
        Behaviour::Ok,
        Behaviour::Truncated,
        Behaviour::Hang,
        Behaviour::Ok,
        Behaviour::Malformed,
        Behaviour::Invalid,
        Behaviour::Invalid,
    ]);
    let started = std::time::Instant::now();
    let report = judge_corpus(&mut docs, &judge, 8, &Cache::new());
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "Retry-After was honoured"
    );
    let doc = &docs[0];
    let j = &doc.judgments;
    assert!(j.len() >= 4, "{j:?}");
    assert_eq!(report.units, j.len());
    assert!(
        matches!(j[0].outcome, JudgmentOutcome::Verdicts(_)),
        "{j:#?}"
    );
    assert_eq!(j[0].requests, 3);
    assert!(matches!(j[1].outcome, JudgmentOutcome::Verdicts(_)));
    assert_eq!(j[1].requests, 3);
    match &j[2].outcome {
        JudgmentOutcome::Failed(why) => assert!(why.contains("malformed answer"), "{why}"),
        other => panic!("expected a failed judgment, got {other:?}"),
    }
    assert_eq!(j[2].requests, 3);
    assert!(j[3..].iter().all(|j| j.requests == 1));
    assert_eq!(report.failed, 1);
    assert_eq!(server.hits(), 9 + j.len() - 3);
    // No edge comes from the failed unit; every other unit has its one edge, except a proof
    // whose nearest candidate is its statement: that pair keeps the proof's link alone.
    assert!(doc.depends.iter().all(|e| e.src_unit != j[2].unit_id));
    let proofs: Vec<String> = doc.proof_edges().into_iter().map(|e| e.src_unit).collect();
    let proofs_judged = j
        .iter()
        .filter(|x| proofs.contains(&x.unit_id) && x.unit_id != j[2].unit_id)
        .count();
    assert_eq!(doc.depends.len() + proofs_judged, j.len() - 1);

    // The next run judges the failed unit again, and only it.
    let cache = cache_of(&docs);
    let mut again = small();
    let before = server.hits();
    let rerun = judge_corpus(&mut again, &judge, 8, &cache);
    assert_eq!(server.hits() - before, 1);
    assert_eq!((rerun.reused, rerun.failed), (j.len() - 1, 0));
    let proofs_all = j.iter().filter(|x| proofs.contains(&x.unit_id)).count();
    assert_eq!(again[0].depends.len() + proofs_all, j.len());
}

#[test]
fn an_unreachable_endpoint_records_every_unit_as_failed() {
    // A port nothing listens on: bind, note the port, close.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let judge = judge(&format!("http://127.0.0.1:{port}/v1"), 2);
    let mut docs = small();
    let report = judge_corpus(&mut docs, &judge, 8, &Cache::new());
    assert!(report.units >= 4);
    assert_eq!(report.failed, report.units);
    assert!(docs[0].depends.is_empty(), "no edge is invented");
    assert!(
        docs[0]
            .judgments
            .iter()
            .all(|j| matches!(j.outcome, JudgmentOutcome::Failed(_)) && j.requests == 3)
    );
}
