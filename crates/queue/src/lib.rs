//! The distributed mode's wire protocol and its RabbitMQ plumbing (AMQP 0.9.1 through lapin).
//!
//! A coordinator publishes one persistent [`DocumentJob`] per new or changed document to the
//! durable queue [`JOBS`], with publisher confirms. Workers consume with a bounded prefetch, run
//! the document stage, write the part durably, report an [`Event`] to the run's events queue, and
//! only then ack. A job that fails [`DocumentJob::max_attempts`] times goes to [`dead_queue`] as a
//! [`DeadLetter`] with its error. Messages are JSON; every one carries [`PROTOCOL_VERSION`].
//!
//! This is the only crate that touches lapin.

use futures::StreamExt;
use lapin::options::{
    BasicAckOptions, BasicCancelOptions, BasicConsumeOptions, BasicPublishOptions, BasicQosOptions,
    BasicRejectOptions, ConfirmSelectOptions, QueueDeclareOptions, QueueDeleteOptions,
};
use lapin::tcp::OwnedTLSConfig;
use lapin::types::{AMQPValue, FieldTable};
use lapin::{BasicProperties, Channel, Connection, ConnectionProperties};
use ledger_core::redact_credentials as redact;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Version of the messages below; a worker rejects jobs of another version to the dead-letter
/// queue rather than guessing.
pub const PROTOCOL_VERSION: u32 = 3;

/// The default durable queue of document jobs (`queue.jobs`; deployments sharing a broker pick
/// their own).
pub const JOBS: &str = "ledger.jobs";

/// The durable queue where the jobs of `jobs` that failed for good go.
pub fn dead_queue(jobs: &str) -> String {
    format!("{jobs}.dead")
}

/// One document to run through the document stage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DocumentJob {
    /// [`PROTOCOL_VERSION`] of the sender.
    pub protocol: u32,
    /// The coordinator's run id.
    pub run: String,
    /// The queue the worker reports to.
    pub events: String,
    /// Where parts are written: a folder or an `s3://bucket/prefix` URL.
    pub parts: String,
    /// The document id.
    pub doc_id: String,
    /// Its main file or book folder (absolute).
    pub source: String,
    /// How to parse it.
    pub format: ledger_core::Format,
    /// The folder its reads are confined to (absolute; `None`: not confined).
    pub root: Option<String>,
    /// The part key the coordinator expects (document id, content hash, pipeline fingerprint).
    pub key: String,
    /// The document's part in the previous graph version (its caches), if any.
    pub previous_key: Option<String>,
    /// The pipeline fingerprint the coordinator computed: what fixes the part's content. A
    /// worker's settings, endpoints and credentials are its own configuration's; a worker whose
    /// configuration resolves to another fingerprint (say, MiniLM missing on its machine)
    /// refuses the job.
    pub fingerprint: String,
    /// Attempts already made (0 for a fresh job).
    pub attempt: u32,
    /// Attempts allowed before the job goes to the dead-letter queue.
    pub max_attempts: u32,
}

/// What a worker reports about a job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// The part is written.
    Done {
        /// The run.
        run: String,
        /// The document.
        doc_id: String,
        /// The part key written.
        key: String,
        /// Seconds the job took.
        seconds: f64,
        /// Chat requests the job sent (retries included).
        llm_requests: u64,
        /// Their prompt tokens.
        llm_prompt_tokens: u64,
        /// Their completion tokens.
        llm_completion_tokens: u64,
        /// What the document stage did (absent from an older worker's event: zeros).
        #[serde(default)]
        stage: StageCounts,
    },
    /// The attempt failed; `dead` when it was the last one.
    Failed {
        /// The run.
        run: String,
        /// The document.
        doc_id: String,
        /// What went wrong.
        error: String,
        /// Attempts made so far.
        attempts: u32,
        /// Whether the job went to the dead-letter queue.
        dead: bool,
    },
}

/// What a job's document stage did, summed by the coordinator into the lines `ledger index`
/// prints (`depends:`, `cache:`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct StageCounts {
    /// Units judged for DEPENDS (one judgment each).
    pub judgments: usize,
    /// Judgments reused from the previous part.
    pub judgments_reused: usize,
    /// Judgments that failed.
    pub judgments_failed: usize,
    /// The judge's requests.
    pub judge_requests: u64,
    /// Their prompt tokens.
    pub judge_prompt_tokens: u64,
    /// Their completion tokens.
    pub judge_completion_tokens: u64,
    /// DEPENDS edges the judge found.
    pub depends_edges: usize,
    /// Summaries reused.
    pub summaries_reused: usize,
    /// Summaries written.
    pub summaries_written: usize,
    /// Summaries that failed.
    pub summary_failures: usize,
    /// Vectors reused.
    pub vectors_reused: usize,
    /// Vectors computed.
    pub vectors_computed: usize,
}

/// A job that failed for good, as stored in the [`dead_queue`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeadLetter {
    /// The job (its `source` names the document's path).
    pub job: DocumentJob,
    /// The last error.
    pub error: String,
}

/// Errors of the broker, by category.
#[derive(Debug, thiserror::Error)]
pub enum QueueError {
    /// The broker refused or dropped the connection, or an operation failed.
    #[error("RabbitMQ: {0}")]
    Broker(#[from] lapin::Error),
    /// A message could not be encoded or decoded.
    #[error("message: {0}")]
    Message(#[from] serde_json::Error),
    /// The broker did not confirm a publish.
    #[error("RabbitMQ did not confirm the message to {0}")]
    NotConfirmed(String),
    /// The broker could not be reached in time.
    #[error("RabbitMQ at {url} unreachable for {seconds} s: {last}")]
    Unreachable {
        /// The URL (without credentials).
        url: String,
        /// How long it was tried.
        seconds: u64,
        /// The last error.
        last: String,
    },
}

/// Result alias of this crate.
pub type Result<T, E = QueueError> = std::result::Result<T, E>;

/// A connection with one channel in confirm mode.
pub struct Broker {
    connection: Connection,
    channel: Channel,
}

impl Broker {
    /// Connects, retrying with exponential backoff (capped at 5 s) for up to `patience`.
    /// `amqps://` URLs are verified against the system's roots and `extra_roots` (PEM).
    pub async fn connect(
        url: &str,
        extra_roots: Option<&str>,
        patience: Duration,
    ) -> Result<Broker> {
        let start = std::time::Instant::now();
        let mut delay = Duration::from_millis(200);
        loop {
            match Self::connect_once(url, extra_roots).await {
                Ok(b) => return Ok(b),
                Err(e) if start.elapsed() >= patience => {
                    return Err(QueueError::Unreachable {
                        url: redact(url),
                        seconds: patience.as_secs(),
                        last: e.to_string(),
                    });
                }
                Err(e) => {
                    tracing::warn!(url = %redact(url), error = %e, ?delay, "broker unreachable; retrying");
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(Duration::from_secs(5));
                }
            }
        }
    }

    async fn connect_once(url: &str, extra_roots: Option<&str>) -> Result<Broker> {
        // lapin's TLS (rustls-connector, `rustls--ring`) installs the ring provider itself.
        let tls = OwnedTLSConfig {
            identity: None,
            cert_chain: extra_roots.map(str::to_string),
        };
        let connection = Connection::connect_with_config(
            url,
            ConnectionProperties::default(),
            tls,
            lapin::runtime::default_runtime()?,
        )
        .await?;
        let channel = connection.create_channel().await?;
        channel
            .confirm_select(ConfirmSelectOptions::default())
            .await?;
        Ok(Broker {
            connection,
            channel,
        })
    }

    /// Whether the connection is still usable.
    pub fn is_connected(&self) -> bool {
        self.connection.status().connected()
    }

    /// Declares the durable job queue `jobs` and its dead-letter queue. `consumer_timeout` raises RabbitMQ's acknowledgement
    /// timeout on the job queue (`x-consumer-timeout`) so that long LLM jobs are not cut off.
    pub async fn declare_jobs(&self, jobs: &str, consumer_timeout: Duration) -> Result<()> {
        let mut args = FieldTable::default();
        args.insert(
            "x-consumer-timeout".into(),
            AMQPValue::LongLongInt(consumer_timeout.as_millis() as i64),
        );
        self.channel
            .queue_declare(jobs.into(), QueueDeclareOptions::durable(), args)
            .await?;
        self.channel
            .queue_declare(
                dead_queue(jobs).as_str().into(),
                QueueDeclareOptions::durable(),
                FieldTable::default(),
            )
            .await?;
        Ok(())
    }

    /// Declares a run's durable events queue; it expires a day after its last use, so that a
    /// crashed coordinator leaves nothing behind for good.
    pub async fn declare_events(&self, name: &str) -> Result<()> {
        let mut args = FieldTable::default();
        args.insert("x-expires".into(), AMQPValue::LongInt(86_400_000));
        self.channel
            .queue_declare(name.into(), QueueDeclareOptions::durable(), args)
            .await?;
        Ok(())
    }

    /// Deletes a queue.
    pub async fn delete_queue(&self, name: &str) -> Result<()> {
        self.channel
            .queue_delete(name.into(), QueueDeleteOptions::default())
            .await?;
        Ok(())
    }

    /// Messages ready in `queue` (not counting those delivered and unacked).
    pub async fn depth(&self, queue: &str) -> Result<u32> {
        let q = self
            .channel
            .queue_declare(
                queue.into(),
                QueueDeclareOptions {
                    passive: true,
                    ..QueueDeclareOptions::default()
                },
                FieldTable::default(),
            )
            .await?;
        Ok(q.message_count())
    }

    /// Takes one message from `queue` without waiting (acknowledged on receipt); `None` when
    /// the queue is empty.
    pub async fn get(&self, queue: &str) -> Result<Option<Vec<u8>>> {
        let message = self
            .channel
            .basic_get(
                queue.into(),
                lapin::options::BasicGetOptions { no_ack: true },
            )
            .await?;
        Ok(message.map(|m| m.delivery.data))
    }

    /// Publishes `message` as a persistent JSON message to `queue` and waits for the broker's
    /// confirm.
    pub async fn publish<T: Serialize>(&self, queue: &str, message: &T) -> Result<()> {
        let payload = serde_json::to_vec(message)?;
        let confirm = self
            .channel
            .basic_publish(
                "".into(),
                queue.into(),
                BasicPublishOptions::default(),
                &payload,
                BasicProperties::default()
                    .with_delivery_mode(2)
                    .with_content_type("application/json".into()),
            )
            .await?
            .await?;
        if confirm.is_ack() {
            Ok(())
        } else {
            Err(QueueError::NotConfirmed(queue.to_string()))
        }
    }

    /// Starts consuming `queue` with at most `prefetch` unacknowledged messages.
    pub async fn consume(&self, queue: &str, tag: &str, prefetch: u16) -> Result<Consumer> {
        self.channel
            .basic_qos(prefetch.max(1), BasicQosOptions::default())
            .await?;
        let inner = self
            .channel
            .basic_consume(
                queue.into(),
                tag.into(),
                BasicConsumeOptions::default(),
                FieldTable::default(),
            )
            .await?;
        Ok(Consumer {
            inner,
            channel: self.channel.clone(),
            tag: tag.to_string(),
        })
    }

    /// Closes the channel and the connection; unacknowledged messages go back to their queue.
    pub async fn close(self) {
        let _ = self.channel.close(200, "bye".into()).await;
        let _ = self.connection.close(200, "bye".into()).await;
    }
}

/// A consumer of one queue.
pub struct Consumer {
    inner: lapin::Consumer,
    channel: Channel,
    tag: String,
}

/// One message received, to be acknowledged or rejected.
pub struct Delivery {
    inner: lapin::message::Delivery,
}

impl Delivery {
    /// The message body.
    pub fn data(&self) -> &[u8] {
        &self.inner.data
    }

    /// Whether the broker delivered it before (to a consumer that did not ack it).
    pub fn redelivered(&self) -> bool {
        self.inner.redelivered
    }

    /// Acknowledges it: the broker forgets it.
    pub async fn ack(self) -> Result<()> {
        self.inner.ack(BasicAckOptions::default()).await?;
        Ok(())
    }

    /// Rejects it without requeueing (a message that can never be processed).
    pub async fn reject(self) -> Result<()> {
        self.inner
            .reject(BasicRejectOptions { requeue: false })
            .await?;
        Ok(())
    }
}

impl Consumer {
    /// The next message; `None` when the consumer or its connection ended.
    pub async fn next(&mut self) -> Option<Result<Delivery>> {
        self.inner
            .next()
            .await
            .map(|d| d.map(|inner| Delivery { inner }).map_err(QueueError::from))
    }

    /// Stops deliveries (messages prefetched but not acked go back to the queue when the
    /// channel closes).
    pub async fn cancel(&self) -> Result<()> {
        self.channel
            .basic_cancel(self.tag.as_str().into(), BasicCancelOptions::default())
            .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_tagged_json() {
        let e = Event::Failed {
            run: "r".into(),
            doc_id: "d".into(),
            error: "boom".into(),
            attempts: 3,
            dead: true,
        };
        let text = serde_json::to_string(&e).expect("json");
        assert!(text.contains("\"event\":\"failed\""), "{text}");
        assert_eq!(serde_json::from_str::<Event>(&text).expect("back"), e);
    }
}
