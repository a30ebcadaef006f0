//! One OpenAI-compatible endpoint: the async-openai client, bounded concurrency, per-attempt
//! timeouts, retries with exponential backoff and full jitter (or the server's `Retry-After`),
//! and usage accounting.

use crate::{LlmError, Result};
use async_openai::config::OpenAIConfig;
use async_openai::error::OpenAIError;
use async_openai::middleware::HttpRequestFactory;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::sync::Semaphore;

/// Where and how to call an endpoint.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// Base URL including `/v1`, e.g. `http://127.0.0.1:8080/v1`.
    pub url: String,
    /// Model name sent with every request.
    pub model: String,
    /// Bearer token, if the endpoint needs one.
    pub api_key: Option<String>,
    /// Limit on one attempt, from connecting to the last byte of the answer.
    pub timeout: Duration,
    /// Attempts after the first one.
    pub max_retries: u32,
    /// Requests in flight at once.
    pub concurrency: usize,
    /// First backoff delay; doubled per attempt, capped at 30 s, fully jittered.
    pub backoff: Duration,
    /// PEM certificates trusted for `https://` besides the system's roots (a private CA or a
    /// self-signed server).
    pub extra_roots: Option<String>,
}

impl Endpoint {
    /// An endpoint with the default limits (60 s timeout, 4 retries, 4 in flight, 500 ms backoff).
    pub fn new(url: impl Into<String>, model: impl Into<String>) -> Self {
        Endpoint {
            url: url.into(),
            model: model.into(),
            api_key: None,
            timeout: Duration::from_secs(60),
            max_retries: 4,
            concurrency: 4,
            backoff: Duration::from_millis(500),
            extra_roots: None,
        }
    }
}

/// What a run spent on one endpoint.
#[derive(Debug, Default)]
pub struct Usage {
    /// HTTP requests sent (every attempt counts).
    pub requests: AtomicU64,
    /// Attempts that were retried.
    pub retries: AtomicU64,
    /// Calls that failed after their last attempt.
    pub failures: AtomicU64,
    /// Prompt (input) tokens the server reported.
    pub prompt_tokens: AtomicU64,
    /// Completion (output) tokens the server reported.
    pub completion_tokens: AtomicU64,
}

/// A plain copy of [`Usage`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UsageSnapshot {
    /// HTTP requests sent.
    pub requests: u64,
    /// Attempts retried.
    pub retries: u64,
    /// Calls failed for good.
    pub failures: u64,
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
}

impl Usage {
    /// Adds the tokens a chat completion reports; returns them (prompt, completion).
    pub fn add_chat(
        &self,
        usage: Option<&async_openai::types::chat::CompletionUsage>,
    ) -> (u64, u64) {
        let Some(usage) = usage else {
            return (0, 0);
        };
        let (p, c) = (
            u64::from(usage.prompt_tokens),
            u64::from(usage.completion_tokens),
        );
        self.prompt_tokens.fetch_add(p, Ordering::Relaxed);
        self.completion_tokens.fetch_add(c, Ordering::Relaxed);
        (p, c)
    }

    /// The counters now.
    pub fn snapshot(&self) -> UsageSnapshot {
        UsageSnapshot {
            requests: self.requests.load(Ordering::Relaxed),
            retries: self.retries.load(Ordering::Relaxed),
            failures: self.failures.load(Ordering::Relaxed),
            prompt_tokens: self.prompt_tokens.load(Ordering::Relaxed),
            completion_tokens: self.completion_tokens.load(Ordering::Relaxed),
        }
    }
}

/// How one attempt ended, when it did not succeed.
#[derive(Debug)]
pub enum AttemptError {
    /// Worth another attempt (timeouts, connection errors, 429, 5xx, malformed answers).
    Transient(String),
    /// Another attempt would fail the same way (4xx other than 408/429, bad arguments).
    Permanent(String),
}

impl From<OpenAIError> for AttemptError {
    fn from(e: OpenAIError) -> Self {
        match &e {
            OpenAIError::ApiError(api) => {
                let status = api.status_code.as_u16();
                if status == 408 || status == 429 || status >= 500 {
                    AttemptError::Transient(e.to_string())
                } else {
                    AttemptError::Permanent(e.to_string())
                }
            }
            OpenAIError::InvalidArgument(_) => AttemptError::Permanent(e.to_string()),
            _ => AttemptError::Transient(with_causes(&e)),
        }
    }
}

/// An error and its causes, `a: b: c` (a refused certificate is a cause of "error sending
/// request", several levels down).
fn with_causes(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let c_text = c.to_string();
        if !text.contains(&c_text) {
            text = format!("{text}: {c_text}");
        }
        cause = c.source();
    }
    text
}

/// The HTTP transport under async-openai: plain reqwest, but it counts requests and remembers the
/// last `Retry-After` a server sent (async-openai's errors do not carry headers).
#[derive(Clone)]
struct Transport {
    http: reqwest::Client,
    usage: Arc<Usage>,
    retry_after: Arc<Mutex<Option<Duration>>>,
}

type HttpFuture = Pin<Box<dyn Future<Output = Result<reqwest::Response, OpenAIError>> + Send>>;

impl tower::Service<HttpRequestFactory> for Transport {
    type Response = reqwest::Response;
    type Error = OpenAIError;
    type Future = HttpFuture;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), OpenAIError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, factory: HttpRequestFactory) -> HttpFuture {
        let this = self.clone();
        Box::pin(async move {
            let request = factory.build().await?;
            this.usage.requests.fetch_add(1, Ordering::Relaxed);
            let response = this.http.execute(request).await?;
            let status = response.status().as_u16();
            if status == 429 || status == 503 {
                let hint = response
                    .headers()
                    .get(reqwest::header::RETRY_AFTER)
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.trim().parse::<f64>().ok())
                    .filter(|s| s.is_finite() && *s >= 0.0)
                    .map(Duration::from_secs_f64);
                if let Ok(mut slot) = this.retry_after.lock() {
                    *slot = hint;
                }
            }
            Ok(response)
        })
    }
}

/// A client for one endpoint, shared by every call of a run.
#[derive(Clone)]
pub struct Client {
    inner: async_openai::Client<OpenAIConfig>,
    endpoint: Endpoint,
    usage: Arc<Usage>,
    retry_after: Arc<Mutex<Option<Duration>>>,
    permits: Arc<Semaphore>,
}

impl Client {
    /// A client for `endpoint` (no request is sent until a call).
    pub fn new(endpoint: Endpoint) -> Result<Self> {
        if !(endpoint.url.starts_with("http://") || endpoint.url.starts_with("https://")) {
            return Err(LlmError::Config(format!(
                "endpoint URL {:?} must start with http:// or https://",
                endpoint.url
            )));
        }
        install_crypto_provider();
        let mut http = reqwest::Client::builder().timeout(endpoint.timeout);
        if let Some(pem) = &endpoint.extra_roots {
            let roots = reqwest::Certificate::from_pem_bundle(pem.as_bytes())
                .map_err(|e| LlmError::Config(format!("extra root certificates: {e}")))?;
            http = http.tls_certs_merge(roots);
        }
        let http = http
            .build()
            .map_err(|e| LlmError::Config(format!("HTTP client: {e}")))?;
        let usage = Arc::new(Usage::default());
        let retry_after = Arc::new(Mutex::new(None));
        let transport = Transport {
            http,
            usage: usage.clone(),
            retry_after: retry_after.clone(),
        };
        let mut config = OpenAIConfig::new().with_api_base(endpoint.url.trim_end_matches('/'));
        config = config.with_api_key(endpoint.api_key.clone().unwrap_or_default());
        let inner = async_openai::Client::with_config(config).with_http_service(transport);
        Ok(Client {
            inner,
            permits: Arc::new(Semaphore::new(endpoint.concurrency.max(1))),
            endpoint,
            usage,
            retry_after,
        })
    }

    /// The async-openai client.
    pub fn openai(&self) -> &async_openai::Client<OpenAIConfig> {
        &self.inner
    }

    /// The endpoint's settings.
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// Counters of this client.
    pub fn usage(&self) -> &Usage {
        &self.usage
    }

    /// Runs `attempt` until it succeeds, fails permanently, or runs out of retries; at most
    /// `concurrency` calls run at once. Every attempt is bounded by the endpoint's timeout.
    pub async fn call<T, F, Fut>(&self, what: &str, attempt: F) -> Result<T>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = std::result::Result<T, AttemptError>>,
    {
        let _permit = self
            .permits
            .acquire()
            .await
            .map_err(|_| LlmError::Config("client closed".into()))?;
        let mut last = String::new();
        for n in 0..=self.endpoint.max_retries {
            if n > 0 {
                self.usage.retries.fetch_add(1, Ordering::Relaxed);
                let hint = self.retry_after.lock().ok().and_then(|mut s| s.take());
                let delay = hint.unwrap_or_else(|| backoff(self.endpoint.backoff, n));
                tracing::warn!(what, attempt = n, ?delay, error = %last, "retrying");
                tokio::time::sleep(delay).await;
            }
            // The HTTP client's own timeout covers the request; this one also covers a server
            // that trickles bytes forever.
            let limit = self.endpoint.timeout + Duration::from_secs(1);
            match tokio::time::timeout(limit, attempt()).await {
                Ok(Ok(value)) => return Ok(value),
                Ok(Err(AttemptError::Permanent(e))) => {
                    self.usage.failures.fetch_add(1, Ordering::Relaxed);
                    return Err(LlmError::Rejected {
                        what: what.to_string(),
                        message: e,
                    });
                }
                Ok(Err(AttemptError::Transient(e))) => last = e,
                Err(_) => last = format!("no answer within {limit:?}"),
            }
        }
        self.usage.failures.fetch_add(1, Ordering::Relaxed);
        Err(LlmError::Exhausted {
            what: what.to_string(),
            attempts: self.endpoint.max_retries + 1,
            last,
        })
    }
}

/// Makes rustls's `ring` provider the process default (the build has no other); later calls and
/// a provider installed before are left alone.
fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// Exponential backoff with full jitter: uniform in `[0, base · 2^(n−1)]`, capped at 30 s.
fn backoff(base: Duration, n: u32) -> Duration {
    use std::hash::{BuildHasher, Hasher};
    let ceiling = base
        .saturating_mul(1u32 << (n - 1).min(16))
        .min(Duration::from_secs(30));
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(n);
    let unit = (h.finish() >> 11) as f64 / (1u64 << 53) as f64;
    ceiling.mul_f64(unit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_stays_under_its_ceiling() {
        for n in 1..40 {
            let d = backoff(Duration::from_millis(100), n);
            let ceiling = Duration::from_millis(100)
                .saturating_mul(1u32 << (n - 1).min(16))
                .min(Duration::from_secs(30));
            assert!(d <= ceiling, "{d:?} > {ceiling:?}");
        }
    }

    #[test]
    fn https_endpoints_build_and_bad_extra_roots_are_refused() {
        assert!(Client::new(Endpoint::new("https://api.example/v1", "m")).is_ok());
        let mut e = Endpoint::new("https://api.example/v1", "m");
        e.extra_roots =
            Some("-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n".into());
        let err = Client::new(e).err();
        assert!(
            matches!(&err, Some(LlmError::Config(m)) if m.contains("extra root")),
            "{err:?}"
        );
    }
}
