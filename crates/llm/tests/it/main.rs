//! The endpoint clients against a real local HTTP server that answers, fails and misbehaves.

mod depends;
mod judge;
mod server;
mod tls;

use ledger_core::UnitKind;
use ledger_embed::{Embedder, Summarizer, SummaryInput};
use ledger_llm::{Client, Endpoint, LlmSummarizer, OpenAiEmbedder};
use server::{Behaviour, FakeServer, vector_of};
use std::time::{Duration, Instant};

fn endpoint(server: &FakeServer) -> Endpoint {
    let mut e = Endpoint::new(server.url.clone(), "fake-embed");
    e.timeout = Duration::from_millis(800);
    e.max_retries = 3;
    e.backoff = Duration::from_millis(20);
    e.concurrency = 2;
    e
}

fn normalised(v: Vec<f32>) -> Vec<f32> {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.into_iter().map(|x| x / n).collect()
}

#[test]
fn embeddings_are_batched_ordered_and_normalised() {
    let server = FakeServer::start();
    let embedder =
        OpenAiEmbedder::new(Client::new(endpoint(&server)).expect("client"), 3).expect("probe");
    assert_eq!(embedder.dim(), 8);
    assert_eq!(embedder.model(), "openai:fake-embed");
    let texts = ["abc", "", "hhh", "a bag of beads", "cafe", "deed", "ace"];
    let before = server.hits();
    let vectors = embedder.embed(&texts).expect("embeddings");
    // Six non-empty texts in batches of three: two requests.
    assert_eq!(server.hits() - before, 2);
    for (t, v) in texts.iter().zip(&vectors) {
        if t.is_empty() {
            assert!(v.iter().all(|x| *x == 0.0));
        } else {
            let want = normalised(vector_of(t));
            assert!(
                v.iter().zip(&want).all(|(a, b)| (a - b).abs() < 1e-6),
                "{t}"
            );
        }
    }
    let usage = embedder.client().usage().snapshot();
    assert_eq!(usage.requests, 3, "probe plus two batches");
    assert_eq!(usage.retries, 0);
}

#[test]
fn transient_failures_are_retried_until_an_answer_comes() {
    let server = FakeServer::start();
    let embedder =
        OpenAiEmbedder::new(Client::new(endpoint(&server)).expect("client"), 16).expect("probe");
    server.script(&[
        Behaviour::Status(500),
        Behaviour::Malformed,
        Behaviour::Truncated,
    ]);
    let v = embedder.embed(&["abc"]).expect("fourth attempt answers");
    assert_eq!(v[0], normalised(vector_of("abc")));
    let usage = embedder.client().usage().snapshot();
    assert_eq!(usage.retries, 3);
    assert_eq!(usage.requests, 1 + 4);
}

#[test]
fn a_hung_response_times_out_and_is_retried() {
    let server = FakeServer::start();
    let embedder =
        OpenAiEmbedder::new(Client::new(endpoint(&server)).expect("client"), 16).expect("probe");
    server.script(&[Behaviour::Hang]);
    let start = Instant::now();
    let v = embedder.embed(&["deed"]).expect("the retry answers");
    assert_eq!(v[0], normalised(vector_of("deed")));
    assert!(
        start.elapsed() >= Duration::from_millis(800),
        "waited for the timeout"
    );
    assert_eq!(embedder.client().usage().snapshot().retries, 1);
}

#[test]
fn retry_after_is_honoured() {
    let server = FakeServer::start();
    let embedder =
        OpenAiEmbedder::new(Client::new(endpoint(&server)).expect("client"), 16).expect("probe");
    server.script(&[Behaviour::RateLimited(1)]);
    let start = Instant::now();
    embedder.embed(&["cafe"]).expect("answer after the wait");
    // The jittered backoff alone would wait at most 20 ms.
    assert!(
        start.elapsed() >= Duration::from_secs(1),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn persistent_failure_is_an_error_after_the_last_retry() {
    let server = FakeServer::start();
    let embedder =
        OpenAiEmbedder::new(Client::new(endpoint(&server)).expect("client"), 16).expect("probe");
    server.script(&[Behaviour::Status(503); 4]);
    let before = server.hits();
    let err = embedder.embed(&["abc"]).expect_err("every attempt fails");
    assert!(err.to_string().contains("after 4 attempts"), "{err}");
    assert_eq!(server.hits() - before, 4);
    assert_eq!(embedder.client().usage().snapshot().failures, 1);
}

#[test]
fn client_errors_are_not_retried() {
    let server = FakeServer::start();
    let embedder =
        OpenAiEmbedder::new(Client::new(endpoint(&server)).expect("client"), 16).expect("probe");
    server.script(&[Behaviour::Status(400)]);
    let before = server.hits();
    let err = embedder.embed(&["abc"]).expect_err("400 is final");
    assert!(err.to_string().contains("refused"), "{err}");
    assert_eq!(server.hits() - before, 1);
}

#[test]
fn an_unreachable_endpoint_fails_cleanly() {
    // A port nothing listens on (bound, then released).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let mut e = Endpoint::new(format!("http://127.0.0.1:{port}/v1"), "m");
    e.max_retries = 1;
    e.backoff = Duration::from_millis(10);
    let err = OpenAiEmbedder::new(Client::new(e).expect("client"), 4).err();
    assert!(err.is_some_and(|e| e.to_string().contains("after 2 attempts")));
}

#[test]
fn llm_summaries_one_request_per_unit_with_failures_in_their_slot() {
    let server = FakeServer::start();
    let mut e = endpoint(&server);
    e.max_retries = 0;
    e.concurrency = 1;
    let summarizer = LlmSummarizer::new(Client::new(e).expect("client"));
    assert_eq!(summarizer.name(), "llm:fake-embed:p1");
    let input = |kind, text| SummaryInput {
        kind,
        env: "p",
        title: None,
        text,
        context: "",
    };
    let inputs = [
        input(
            UnitKind::Paragraph,
            "Gradient descent minimises the loss L by small steps.",
        ),
        // Uncaptioned code: nothing to summarise, so no request.
        input(UnitKind::Listing, "fn main() {}"),
        input(
            UnitKind::Paragraph,
            "The Carleson operator is bounded on L2 functions.",
        ),
    ];
    server.script(&[Behaviour::Ok, Behaviour::Status(500)]);
    let out = summarizer.summarize(&inputs);
    assert_eq!(server.hits(), 2);
    assert_eq!(
        out[0].as_deref().expect("first answered"),
        "summary: Gradient descent minimises the loss L"
    );
    assert_eq!(out[1].as_deref().expect("skipped"), "");
    assert!(out[2].is_err(), "the failed unit is an error in its slot");
    let usage = summarizer.client().usage().snapshot();
    assert_eq!((usage.prompt_tokens, usage.completion_tokens), (40, 8));
}

#[test]
fn https_endpoints_are_verified_against_the_system_and_extra_roots() {
    let server = FakeServer::start();
    let front = tls::TlsFront::start(server.addr);
    let https = |roots: Option<String>| {
        let mut e = endpoint(&server);
        e.url = format!("https://localhost:{}/v1", front.port);
        e.max_retries = 0;
        e.extra_roots = roots;
        OpenAiEmbedder::new(Client::new(e).expect("client"), 4)
    };
    // Trusted as an extra root: the handshake succeeds and the answers come through TLS.
    let embedder = https(Some(front.certificate_pem.clone())).expect("probe over TLS");
    let v = embedder.embed(&["abc"]).expect("embedding over TLS");
    assert_eq!(v[0].len(), 8);
    assert!(front.handshakes() >= 1);
    let hits = server.hits();
    // The system's roots alone, or another self-signed certificate: refused before any request
    // reaches the server.
    let other = rcgen::generate_simple_self_signed(vec!["localhost".to_string()])
        .expect("another certificate")
        .cert
        .pem();
    for roots in [None, Some(other)] {
        let err = https(roots)
            .err()
            .expect("an untrusted certificate is refused");
        let text = format!("{err:?}").to_lowercase();
        assert!(text.contains("certificate"), "{text}");
    }
    assert_eq!(
        server.hits(),
        hits,
        "no request passed an untrusted handshake"
    );
}
