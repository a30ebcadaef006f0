//! A small OpenAI-compatible HTTP server for tests: real sockets, real HTTP/1.1, answers
//! `/v1/embeddings` and `/v1/chat/completions`, and misbehaves on request from a script.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the server does with one request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Behaviour {
    /// A correct answer.
    Ok,
    /// An error status with an OpenAI-style error body.
    Status(u16),
    /// 429 with `Retry-After: secs`.
    RateLimited(u64),
    /// Reads the request, then never answers.
    Hang,
    /// 200 with a body that is not JSON.
    Malformed,
    /// Announces a longer body than it sends, then closes the connection.
    Truncated,
    /// A well-formed chat completion whose content misses a verdict (a judge's malformed
    /// answer).
    Invalid,
}

/// A running server; it stops with the test process.
pub struct FakeServer {
    /// Base URL, `http://127.0.0.1:PORT/v1`.
    pub url: String,
    /// Its address.
    pub addr: std::net::SocketAddr,
    state: Arc<State>,
}

/// What the server counts and is told to do, shared with its connections.
#[derive(Default)]
struct State {
    hits: AtomicUsize,
    script: Mutex<VecDeque<Behaviour>>,
    #[allow(dead_code)] // set by the CLI's distributed tests
    delay_ms: AtomicUsize,
    edits: Mutex<VecDeque<String>>,
    requests: Mutex<Vec<String>>,
}

impl FakeServer {
    /// Starts a server on a free port, in its own thread and runtime.
    pub fn start() -> FakeServer {
        let state = Arc::new(State::default());
        let shared = state.clone();
        let addr = listen(move |socket| {
            let state = shared.clone();
            async move {
                let _ = serve(socket, state).await;
            }
        });
        FakeServer {
            url: format!("http://{addr}/v1"),
            addr,
            state,
        }
    }

    /// Queues the contents of the next answers to edit requests (schema `edits`).
    #[allow(dead_code)] // used by the CLI's edit tests
    pub fn answer_edits(&self, contents: &[String]) {
        self.state
            .edits
            .lock()
            .expect("edits")
            .extend(contents.iter().cloned());
    }

    /// The bodies of every edit request received, in order.
    #[allow(dead_code)] // used by the CLI's edit tests
    pub fn edit_requests(&self) -> Vec<String> {
        self.state.requests.lock().expect("requests").clone()
    }

    /// Makes every answer wait `ms` milliseconds (a slow model).
    #[allow(dead_code)] // used by the CLI's distributed tests
    pub fn set_delay(&self, ms: usize) {
        self.state.delay_ms.store(ms, Ordering::SeqCst);
    }

    /// Queues behaviours for the next requests (after them, requests are answered normally).
    pub fn script(&self, behaviours: &[Behaviour]) {
        self.state.script.lock().expect("script").extend(behaviours);
    }

    /// Requests received so far.
    pub fn hits(&self) -> usize {
        self.state.hits.load(Ordering::SeqCst)
    }
}

/// Accepts connections on a free port of 127.0.0.1, in a thread and runtime of its own that
/// stop with the test process, and hands each to `handle` on a task of its own.
pub fn listen<F, Fut>(handle: F) -> std::net::SocketAddr
where
    F: Fn(TcpStream) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("test runtime");
        rt.block_on(async move {
            let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
            tx.send(listener.local_addr().expect("addr"))
                .expect("send addr");
            loop {
                if let Ok((socket, _)) = listener.accept().await {
                    tokio::spawn(handle(socket));
                }
            }
        });
    });
    rx.recv().expect("listening address")
}

/// The judge's answer the server gives: the last candidate (the nearest preceding unit) is a
/// prerequisite, the others are not; `invalid` leaves the first verdict out.
pub fn judgments(labels: &[String], invalid: bool) -> String {
    let mut answer = serde_json::Map::new();
    for (k, l) in labels.iter().enumerate() {
        if invalid && k == 0 {
            continue;
        }
        let last = k + 1 == labels.len();
        answer.insert(
            l.clone(),
            serde_json::json!({"depends": last, "elements": if last { vec!["the preceding unit"] } else { vec![] }}),
        );
    }
    serde_json::Value::Object(answer).to_string()
}

/// The deterministic vector the server gives a text: letter counts of a..h, plus one.
pub fn vector_of(text: &str) -> Vec<f32> {
    let mut v = vec![1.0f32; 8];
    for c in text.chars() {
        if ('a'..='h').contains(&c) {
            v[c as usize - 'a' as usize] += 1.0;
        }
    }
    v
}

async fn serve(mut socket: TcpStream, state: Arc<State>) -> std::io::Result<()> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        let n = socket.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break p + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let length: usize = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())?
        })
        .unwrap_or(0);
    while buf.len() < head_end + length {
        let n = socket.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    state.hits.fetch_add(1, Ordering::SeqCst);
    let delay = state.delay_ms.load(Ordering::SeqCst);
    if delay > 0 {
        tokio::time::sleep(std::time::Duration::from_millis(delay as u64)).await;
    }
    let path = head.split_whitespace().nth(1).unwrap_or("").to_string();
    let body: serde_json::Value =
        serde_json::from_slice(&buf[head_end..]).unwrap_or(serde_json::Value::Null);
    let behaviour = state
        .script
        .lock()
        .expect("script")
        .pop_front()
        .unwrap_or(Behaviour::Ok);
    let reply = |status: &str, extra: &str, body: &str| {
        format!(
            "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n{extra}\r\n{body}",
            body.len()
        )
    };
    let error_body = |m: &str| {
        format!(r#"{{"error":{{"message":"{m}","type":"server_error","param":null,"code":null}}}}"#)
    };
    let out = match behaviour {
        Behaviour::Hang => {
            tokio::time::sleep(std::time::Duration::from_secs(3600)).await;
            return Ok(());
        }
        Behaviour::Status(code) => reply(
            &format!("{code} Error"),
            "",
            &error_body("scripted failure"),
        ),
        Behaviour::RateLimited(secs) => reply(
            "429 Too Many Requests",
            &format!("retry-after: {secs}\r\n"),
            &error_body("slow down"),
        ),
        Behaviour::Malformed => reply("200 OK", "", "{\"object\": \"list\", \"data\": [ {oops"),
        Behaviour::Truncated => {
            let text = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 5000\r\nconnection: close\r\n\r\n{\"object\":\"list\",\"da";
            socket.write_all(text.as_bytes()).await?;
            socket.shutdown().await?;
            return Ok(());
        }
        Behaviour::Ok if path.ends_with("/embeddings") => {
            let inputs: Vec<String> = match &body["input"] {
                serde_json::Value::String(s) => vec![s.clone()],
                serde_json::Value::Array(a) => a
                    .iter()
                    .map(|v| v.as_str().unwrap_or_default().to_string())
                    .collect(),
                _ => Vec::new(),
            };
            let data: Vec<serde_json::Value> = inputs
                .iter()
                .enumerate()
                .map(|(i, t)| serde_json::json!({"object": "embedding", "index": i, "embedding": vector_of(t)}))
                .collect();
            let tokens: usize = inputs.iter().map(|t| t.split_whitespace().count()).sum();
            let body = serde_json::json!({
                "object": "list", "model": body["model"], "data": data,
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens}
            });
            reply("200 OK", "", &body.to_string())
        }
        Behaviour::Ok
            if path.ends_with("/chat/completions")
                && body["response_format"]["json_schema"]["name"] == "edits" =>
        {
            state
                .requests
                .lock()
                .expect("requests")
                .push(body.to_string());
            let content = state
                .edits
                .lock()
                .expect("edits")
                .pop_front()
                .unwrap_or_else(|| r#"{"edits": [], "note": "nothing"}"#.to_string());
            let body = serde_json::json!({
                "id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                "choices": [{"index": 0, "finish_reason": "stop",
                    "message": {"role": "assistant", "content": content}}],
                "usage": {"prompt_tokens": 300, "completion_tokens": 40, "total_tokens": 340}
            });
            reply("200 OK", "", &body.to_string())
        }
        Behaviour::Ok | Behaviour::Invalid
            if path.ends_with("/chat/completions")
                && body["response_format"]["json_schema"]["name"] == "dependency_judgments" =>
        {
            let labels: Vec<String> = body["response_format"]["json_schema"]["schema"]["required"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|l| l.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default();
            let content = judgments(&labels, behaviour == Behaviour::Invalid);
            let body = serde_json::json!({
                "id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                "choices": [{"index": 0, "finish_reason": "stop",
                    "message": {"role": "assistant", "content": content}}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 10 * labels.len(), "total_tokens": 100 + 10 * labels.len()}
            });
            reply("200 OK", "", &body.to_string())
        }
        Behaviour::Ok | Behaviour::Invalid if path.ends_with("/chat/completions") => {
            let user = body["messages"]
                .as_array()
                .and_then(|m| m.last())
                .and_then(|m| m["content"].as_str())
                .unwrap_or_default();
            let text = user
                .lines()
                .find_map(|l| l.strip_prefix("Text: "))
                .unwrap_or_default();
            let words: Vec<&str> = text.split_whitespace().take(6).collect();
            let body = serde_json::json!({
                "id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                "choices": [{"index": 0, "finish_reason": "stop",
                    "message": {"role": "assistant", "content": format!("summary: {}", words.join(" "))}}],
                "usage": {"prompt_tokens": 40, "completion_tokens": 8, "total_tokens": 48}
            });
            reply("200 OK", "", &body.to_string())
        }
        Behaviour::Ok | Behaviour::Invalid => {
            reply("404 Not Found", "", &error_body("no such route"))
        }
    };
    socket.write_all(out.as_bytes()).await?;
    socket.shutdown().await
}
