//! The distributed mode over RabbitMQ: the worker loop and the coordinator. Workers run the
//! same document stage as `ledger index` ([`crate::index::process_document`]); the coordinator
//! runs the same corpus stage and commit.

use crate::config::Config;
use crate::index::{Previous, StageOutcome, discover_inputs, thread_pool};
use crate::report::{IndexJob, IndexReport, counted};
use crate::stage::{DocReport, Settings, Stage, part_key};
use crate::{Error, Progress, Refusal, Result, block_on, io};
use ledger_queue::{
    Broker, DeadLetter, DocumentJob, Event, PROTOCOL_VERSION, StageCounts, dead_queue,
};
use rayon::prelude::*;
use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::path::Path;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a worker or coordinator keeps trying to reach the broker before giving up.
const PATIENCE: Duration = Duration::from_secs(120);

/// Deletes the job queue `queue` and its dead-letter queue from the broker at `amqp` (a
/// benchmark's own queue, once it is done).
pub fn delete_queues(queue: &str, amqp: &str, broker_roots: Option<&str>) -> Result<()> {
    block_on(async {
        let b = Broker::connect(amqp, broker_roots, Duration::from_secs(10)).await?;
        b.delete_queue(queue).await?;
        b.delete_queue(&dead_queue(queue)).await?;
        b.close().await;
        Ok(())
    })?
}

/// Settings of `ledger worker`.
#[derive(Clone)]
pub struct WorkerOptions {
    /// Broker URL.
    pub amqp: String,
    /// PEM certificates trusted for an `amqps://` broker besides the system's (`tls.ca_file`).
    pub broker_roots: Option<String>,
    /// The job queue.
    pub jobs: String,
    /// Unacknowledged jobs the broker may hand this worker at once.
    pub prefetch: u16,
    /// Exit once the job queue has stayed empty this long.
    pub exit_when_idle: Option<Duration>,
    /// RabbitMQ's acknowledgement timeout on the job queue.
    pub consumer_timeout: Duration,
    /// The document stage, from this worker's own configuration: a job whose fingerprint is not
    /// this stage's is refused.
    pub stage: Arc<Stage>,
    /// Folders (and `s3://bucket/prefix` URLs) this worker may read sources from and write parts
    /// to; a job naming anything else is refused.
    pub roots: Vec<String>,
}

impl WorkerOptions {
    /// The worker `config` describes (its queue, roots and document stage); it exits once idle
    /// for `exit_when_idle`, when given.
    pub fn of(config: &Config, exit_when_idle: Option<Duration>) -> Result<WorkerOptions> {
        Ok(WorkerOptions {
            amqp: config.queue.amqp.clone(),
            broker_roots: config.tls.extra_roots()?,
            jobs: config.queue.jobs.clone(),
            prefetch: config.queue.prefetch,
            exit_when_idle,
            consumer_timeout: Duration::from_secs(config.queue.consumer_timeout_secs),
            stage: Arc::new(Stage::new(Settings::of(config))?),
            roots: config.queue.worker_roots.clone(),
        })
    }
}

/// `ledger worker`, from sync code: [`run_worker`] until SIGTERM or Ctrl-C (or idle).
pub fn work(options: &WorkerOptions) -> Result<u64> {
    ledger_runtime::block_on_here(run_worker(options, shutdown_signal()))
        .map_err(io(|| "starting the async runtime"))?
}

/// Resolves on SIGTERM or Ctrl-C: a worker's `shutdown`.
async fn shutdown_signal() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = term => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}

/// `ledger worker`: consumes document jobs until `shutdown` resolves (or until idle with
/// `exit_when_idle`); returns the number of jobs it finished. Reconnects (with backoff) when the
/// broker goes away; a job in progress is finished, and acked if the connection survived (else
/// the broker redelivers it and the part, already written, is reused).
pub async fn run_worker(
    options: &WorkerOptions,
    shutdown: impl Future<Output = ()>,
) -> Result<u64> {
    if options.roots.is_empty() {
        return Err(Error::Invalid(
            "a worker needs the folders it may read and write: --root DIR (or queue.worker_roots)"
                .into(),
        ));
    }
    let tag = format!("ledger-worker-{}", std::process::id());
    let mut finished = 0u64;
    let mut idle_since = Instant::now();
    tokio::pin!(shutdown);
    loop {
        let broker = tokio::select! {
            biased;
            _ = &mut shutdown => return Ok(finished),
            b = Broker::connect(&options.amqp, options.broker_roots.as_deref(), PATIENCE) => b?,
        };
        broker
            .declare_jobs(&options.jobs, options.consumer_timeout)
            .await?;
        let mut consumer = broker
            .consume(&options.jobs, &tag, options.prefetch)
            .await?;
        tracing::info!(prefetch = options.prefetch, "worker consuming");
        loop {
            let delivery = tokio::select! {
                biased;
                _ = &mut shutdown => {
                    // Stop deliveries; prefetched jobs go back to the queue with the channel.
                    let _ = consumer.cancel().await;
                    broker.close().await;
                    return Ok(finished);
                }
                d = consumer.next() => d,
                _ = tokio::time::sleep(Duration::from_millis(500)), if options.exit_when_idle.is_some() => {
                    if options.exit_when_idle.is_some_and(|idle| idle_since.elapsed() >= idle)
                        && broker.depth(&options.jobs).await.unwrap_or(1) == 0
                    {
                        let _ = consumer.cancel().await;
                        broker.close().await;
                        return Ok(finished);
                    }
                    continue;
                }
            };
            match delivery {
                Some(Ok(delivery)) => {
                    if let Err(e) = handle(&broker, options, delivery).await {
                        tracing::warn!(error = %e, "lost the broker while reporting a job");
                        break;
                    }
                    finished += 1;
                    idle_since = Instant::now();
                }
                Some(Err(e)) => {
                    tracing::warn!(error = %e, "consumer failed; reconnecting");
                    break;
                }
                None => {
                    tracing::warn!("consumer ended; reconnecting");
                    break;
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Runs one job and reports it; acks only after the part is durable and the outcome is published
/// (a retry or a dead letter is published before the original is acked).
async fn handle(
    broker: &Broker,
    options: &WorkerOptions,
    delivery: ledger_queue::Delivery,
) -> Result<()> {
    let jobs = options.jobs.as_str();
    let job: DocumentJob = match serde_json::from_slice(delivery.data()) {
        Ok(job) => job,
        Err(e) => {
            tracing::error!(error = %e, "undecodable message rejected");
            delivery.reject().await?;
            return Ok(());
        }
    };
    let _span = tracing::info_span!("job", doc_id = %job.doc_id, attempt = job.attempt).entered();
    let started = Instant::now();
    let outcome = if job.protocol == PROTOCOL_VERSION {
        let (job2, stage, roots) = (job.clone(), options.stage.clone(), options.roots.clone());
        match tokio::task::spawn_blocking(move || run_job(&job2, &stage, &roots)).await {
            Ok(r) => r,
            Err(panic) => Err(Error::Invalid(format!(
                "the document stage panicked: {panic}"
            ))),
        }
    } else {
        Err(Error::Refused(Refusal::Protocol {
            job: job.protocol,
            worker: PROTOCOL_VERSION,
        }))
    };
    match outcome {
        Ok((usage, stage)) => {
            let event = Event::Done {
                run: job.run.clone(),
                doc_id: job.doc_id.clone(),
                key: job.key.clone(),
                seconds: started.elapsed().as_secs_f64(),
                llm_requests: usage.requests,
                llm_prompt_tokens: usage.prompt_tokens,
                llm_completion_tokens: usage.completion_tokens,
                stage,
            };
            broker.publish(&job.events, &event).await?;
            tracing::info!(
                seconds = format!("{:.2}", started.elapsed().as_secs_f64()),
                llm_requests = usage.requests,
                "job done"
            );
        }
        Err(e) => {
            let error = crate::error_chain(&e);
            let attempts = job.attempt + 1;
            let dead = attempts >= job.max_attempts.max(1) || matches!(e, Error::Refused(_));
            tracing::warn!(%error, attempts, dead, "job failed");
            if dead {
                let letter = DeadLetter {
                    job: job.clone(),
                    error: error.clone(),
                };
                broker.publish(&dead_queue(jobs), &letter).await?;
            } else {
                let retry = DocumentJob {
                    attempt: attempts,
                    ..job.clone()
                };
                broker.publish(jobs, &retry).await?;
            }
            let event = Event::Failed {
                run: job.run.clone(),
                doc_id: job.doc_id.clone(),
                error,
                attempts,
                dead,
            };
            broker.publish(&job.events, &event).await?;
        }
    }
    delivery.ack().await?;
    Ok(())
}

/// `path` resolved as far as it exists (symlinks, `..`), the rest appended as named; `None` when
/// a part that does not exist yet climbs with `..`.
fn resolve(path: &Path) -> Option<PathBuf> {
    let mut existing = path;
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = std::fs::canonicalize(existing) {
            let mut out = real;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return Some(out);
        }
        match existing.components().next_back() {
            Some(std::path::Component::Normal(name)) => rest.push(name.to_os_string()),
            _ => return None,
        }
        existing = existing.parent()?;
    }
}

/// Refuses `what` (a job's path or parts URL) unless it lies under one of `roots`: a local path
/// (or `file://` URL) resolved inside a root folder, or a URL under a root URL.
fn check_root(roots: &[String], what: &str, role: &'static str) -> Result<()> {
    let local = |s: &str| -> Option<PathBuf> {
        let path = s.strip_prefix("file://").unwrap_or(s);
        (!path.contains("://")).then(|| PathBuf::from(path))
    };
    let inside = if let Some(path) = local(what) {
        resolve(&path).is_some_and(|real| {
            roots
                .iter()
                .filter_map(|r| local(r).and_then(|r| std::fs::canonicalize(r).ok()))
                .any(|root| real.starts_with(root))
        })
    } else {
        roots.iter().filter(|r| r.contains("://")).any(|r| {
            let r = r.trim_end_matches('/');
            what == r
                || what
                    .strip_prefix(r)
                    .is_some_and(|rest| rest.starts_with('/'))
        })
    };
    if inside {
        Ok(())
    } else {
        Err(Error::Refused(Refusal::OutsideRoots {
            role,
            path: what.to_string(),
        }))
    }
}

/// The document stage for a job (blocking), once the job passed this worker's checks: the
/// document parsed from the shared file system, its part written under the key the coordinator
/// expects. Returns what the job sent to the chat endpoint.
fn run_job(
    job: &DocumentJob,
    stage: &Stage,
    roots: &[String],
) -> Result<(ledger_llm::UsageSnapshot, StageCounts)> {
    if stage.fingerprint() != job.fingerprint {
        return Err(Error::Refused(Refusal::Fingerprint {
            worker: stage.fingerprint().to_string(),
            job: job.fingerprint.clone(),
        }));
    }
    for (role, key) in [
        ("key", Some(&job.key)),
        ("previous key", job.previous_key.as_ref()),
    ] {
        if let Some(key) = key.filter(|k| !crate::stage::is_part_key(k)) {
            return Err(Error::Refused(Refusal::Key {
                role,
                key: key.clone(),
            }));
        }
    }
    check_root(roots, &job.source, "source")?;
    check_root(roots, &job.parts, "parts")?;
    match &job.root {
        Some(root) => check_root(roots, root, "input root")?,
        None if stage.settings().index.allow_outside_root => {}
        None => {
            return Err(Error::Refused(Refusal::NoInputRoot));
        }
    }
    let before = stage
        .chat()
        .map(|c| c.usage().snapshot())
        .unwrap_or_default();
    let source = ledger_parse::Source {
        id: job.doc_id.clone(),
        path: PathBuf::from(&job.source),
        format: job.format,
        root: job.root.as_ref().map(PathBuf::from),
    };
    let doc = stage.parse(&source);
    let key = part_key(&doc.id, &doc.content_hash, stage.fingerprint());
    if key != job.key {
        return Err(Error::SourceChanged(job.source.clone()));
    }
    let parts = ledger_store::PartStore::open(&job.parts)
        .map_err(crate::store(|| format!("opening part store {}", job.parts)))?;
    let staged = crate::index::process_document(
        stage,
        &parts,
        doc,
        job.previous_key.as_deref(),
        &crate::Quiet,
    )?;
    let after = stage
        .chat()
        .map(|c| c.usage().snapshot())
        .unwrap_or_default();
    let usage = ledger_llm::UsageSnapshot {
        requests: after.requests - before.requests,
        retries: after.retries - before.retries,
        failures: after.failures - before.failures,
        prompt_tokens: after.prompt_tokens - before.prompt_tokens,
        completion_tokens: after.completion_tokens - before.completion_tokens,
    };
    Ok((usage, staged.report.into()))
}

/// Settings of `ledger coordinator`.
pub struct CoordinatorOptions {
    /// Broker URL.
    pub amqp: String,
    /// PEM certificates trusted for an `amqps://` broker besides the system's (`tls.ca_file`).
    pub broker_roots: Option<String>,
    /// The job queue.
    pub jobs: String,
    /// The graph folder.
    pub out: PathBuf,
    /// Where document parts are kept (seen by every worker); `None`: the graph's `parts/`.
    pub parts: Option<String>,
    /// Inputs.
    pub paths: Vec<PathBuf>,
    /// The document stage's settings; jobs carry only their fingerprint (workers run their own
    /// configuration's, which must resolve to the same).
    pub settings: Settings,
    /// Attempts per job before the dead-letter queue.
    pub max_attempts: u32,
    /// RabbitMQ's acknowledgement timeout on the job queue.
    pub consumer_timeout: Duration,
    /// The command line recorded in the `runs` table.
    pub command: String,
}

impl CoordinatorOptions {
    /// The coordinator `config` describes, indexing `paths` into the graph `out`; `command` is
    /// recorded in the `runs` table.
    pub fn of(
        config: &Config,
        paths: Vec<PathBuf>,
        out: PathBuf,
        command: String,
    ) -> Result<CoordinatorOptions> {
        Ok(CoordinatorOptions {
            amqp: config.queue.amqp.clone(),
            broker_roots: config.tls.extra_roots()?,
            jobs: config.queue.jobs.clone(),
            parts: (!config.store.parts.is_empty()).then(|| config.store.parts.clone()),
            out,
            paths,
            settings: Settings::of(config),
            max_attempts: config.queue.max_attempts,
            consumer_timeout: Duration::from_secs(config.queue.consumer_timeout_secs),
            command,
        })
    }
}

/// What a coordinator run came to.
#[derive(Debug, Default)]
pub struct CoordinatorReport {
    /// Jobs published.
    pub published: usize,
    /// Documents whose complete part was already there.
    pub reused: usize,
    /// Documents that ended in the dead-letter queue, with their errors.
    pub dead: Vec<(String, String)>,
    /// The graph committed, reported as `ledger index` reports it (the document stage's
    /// figures summed from the workers' events).
    pub index: Option<IndexReport>,
}

impl CoordinatorReport {
    /// What failed in the graph committed, if anything did (see [`IndexReport::partial`]).
    pub fn partial(&self) -> Option<String> {
        self.index.as_ref().and_then(IndexReport::partial)
    }
}

impl std::fmt::Display for CoordinatorReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(index) = &self.index {
            write!(f, "{index}")?;
        }
        writeln!(
            f,
            "coordinator: {} published, {} unchanged, {} dead",
            counted(self.published, "job"),
            counted(self.reused, "document"),
            self.dead.len()
        )?;
        for (doc, error) in &self.dead {
            writeln!(f, "dead: {doc}: {error}")?;
        }
        Ok(())
    }
}

/// `ledger coordinator`: scans, publishes jobs for new or changed documents, follows the
/// workers, then runs the corpus stage and commits. Holds an exclusive lock on the graph.
pub fn coordinator(
    options: &CoordinatorOptions,
    progress: &dyn Progress,
) -> Result<CoordinatorReport> {
    let started_at = ledger_store::now_rfc3339();
    let start = Instant::now();
    std::fs::create_dir_all(&options.out)
        .map_err(io(|| format!("creating {}", options.out.display())))?;
    let lock = ledger_store::GraphLock::acquire(&options.out, options.settings.index.wait_for_lock)
        .map_err(crate::store(|| "locking the graph"))?;
    // Workers may run elsewhere: absolute paths.
    let out = std::fs::canonicalize(&options.out)
        .map_err(io(|| format!("graph {}", options.out.display())))?;
    let paths: Vec<PathBuf> = options
        .paths
        .iter()
        .map(|p| std::fs::canonicalize(p).map_err(io(|| format!("input {}", p.display()))))
        .collect::<Result<_>>()?;
    let parts = match &options.parts {
        Some(url) => ledger_store::PartStore::open(url).map_err(crate::store(|| "store.parts"))?,
        None => ledger_store::PartStore::of_graph(&out),
    };
    let (sources, diagnostics) = discover_inputs(&paths, &options.settings.index)?;
    let stage = Stage::new(options.settings.clone())?;
    let previous = Previous::of(&out);
    let run = format!(
        "{}-{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or(0),
        std::process::id()
    );
    let events = format!("ledger.events.{run}");
    // Each document's part key: from its record when its inputs are unchanged, else from a parse
    // (without token counts, which the key does not depend on; the workers parse it again).
    let pool = thread_pool(options.settings.index.jobs)?;
    progress.start("scanning", sources.len() as u64);
    // The report of a complete part: what a reused document contributes to the summary.
    let scanned: Vec<(String, Option<DocReport>)> = pool.install(|| {
        sources
            .par_iter()
            .map(|source| {
                let key = previous
                    .unchanged(source, stage.fingerprint())
                    .unwrap_or_else(|| {
                        let doc = ledger_parse::parse(source, None);
                        part_key(&doc.id, &doc.content_hash, stage.fingerprint())
                    });
                let complete = parts
                    .has(&key)
                    .then(|| crate::index::complete_part(&parts, &key))
                    .flatten()
                    .map(|summary| DocReport::reused(&summary));
                progress.advance(&source.id);
                (key, complete)
            })
            .collect()
    });
    progress.finish();
    let mut keys: BTreeMap<String, String> = BTreeMap::new();
    let mut reused = std::collections::HashSet::new();
    let mut jobs = Vec::new();
    let mut report = CoordinatorReport::default();
    let mut stage_report = DocReport::default();
    for (source, (key, complete)) in sources.iter().zip(scanned) {
        keys.insert(source.id.clone(), key.clone());
        if let Some(done) = complete {
            stage_report.add(&done);
            report.reused += 1;
            reused.insert(source.id.clone());
            continue;
        }
        jobs.push(DocumentJob {
            protocol: PROTOCOL_VERSION,
            run: run.clone(),
            events: events.clone(),
            parts: parts.url(),
            doc_id: source.id.clone(),
            source: source.path.display().to_string(),
            format: source.format,
            root: source.root.as_ref().map(|r| r.display().to_string()),
            key,
            previous_key: previous.part_of(&source.id).map(str::to_string),
            fingerprint: stage.fingerprint().to_string(),
            attempt: 0,
            max_attempts: options.max_attempts,
        });
    }
    report.published = jobs.len();
    let (usage, worked) = block_on(follow(options, &events, &run, jobs, &mut report, progress))??;
    stage_report.add(&worked);
    let dead: std::collections::HashSet<&str> =
        report.dead.iter().map(|(d, _)| d.as_str()).collect();
    keys.retain(|doc, _| !dead.contains(doc.as_str()));
    let job = IndexJob {
        paths: &paths,
        out: &out,
        parts: &parts,
        command: &options.command,
    };
    let staged = StageOutcome {
        keys,
        reused,
        nothing_new: report.published == 0,
        report: stage_report,
        parsed: report.published - report.dead.len(),
        document_errors: Vec::new(),
        usage,
        started_at,
        start,
        cpu_start: None,
    };
    report.index = Some(crate::index::commit(
        &job,
        &stage,
        &previous,
        &diagnostics,
        staged,
    )?);
    drop(lock);
    Ok(report)
}

/// Publishes the jobs and follows the run's events until every job is done or dead; returns
/// the chat usage the workers reported and the sum of their documents' stage reports.
/// Reconnects when the broker restarts (the events queue is durable, so nothing reported is
/// lost).
// The coordinator's one loop: its options, the run's queue and id, its jobs, the report it
// fills and the progress it shows; split, each part would take most of them again.
#[allow(clippy::too_many_arguments)]
async fn follow(
    options: &CoordinatorOptions,
    events: &str,
    run: &str,
    jobs: Vec<DocumentJob>,
    report: &mut CoordinatorReport,
    progress: &dyn Progress,
) -> Result<(ledger_llm::UsageSnapshot, DocReport)> {
    let mut pending: HashMap<String, ()> = jobs.iter().map(|j| (j.doc_id.clone(), ())).collect();
    let mut usage = ledger_llm::UsageSnapshot::default();
    let mut stage = DocReport::default();
    if !jobs.is_empty() {
        progress.start("documents", jobs.len() as u64);
    }
    // Jobs not yet confirmed by the broker, oldest first (a reconnect resumes here).
    let mut unpublished: std::collections::VecDeque<DocumentJob> = jobs.into();
    let (mut failed, mut retries) = (0usize, 0usize);
    while !pending.is_empty() {
        let broker =
            Broker::connect(&options.amqp, options.broker_roots.as_deref(), PATIENCE).await?;
        let setup = async {
            broker
                .declare_jobs(&options.jobs, options.consumer_timeout)
                .await?;
            broker.declare_events(events).await?;
            while let Some(job) = unpublished.front() {
                broker.publish(&options.jobs, job).await?;
                unpublished.pop_front();
            }
            broker
                .consume(events, &format!("ledger-coordinator-{run}"), 64)
                .await
        };
        let mut consumer = match setup.await {
            Ok(c) => c,
            Err(e) => {
                // The broker went away while publishing: reconnect and resume.
                tracing::warn!(error = %e, "broker lost during set-up; reconnecting");
                tokio::time::sleep(Duration::from_millis(500)).await;
                continue;
            }
        };
        while !pending.is_empty() {
            let Some(delivery) = consumer.next().await else {
                break;
            };
            let Ok(delivery) = delivery else { break };
            let event: Option<Event> = serde_json::from_slice(delivery.data()).ok();
            match event {
                Some(Event::Done {
                    doc_id,
                    llm_requests,
                    llm_prompt_tokens,
                    llm_completion_tokens,
                    stage: counts,
                    run: r,
                    ..
                }) if r == run => {
                    // A redelivered job's second report is not counted twice.
                    if pending.remove(&doc_id).is_some() {
                        progress.advance(&doc_id);
                        stage.add(&counts.into());
                    }
                    usage.requests += llm_requests;
                    usage.prompt_tokens += llm_prompt_tokens;
                    usage.completion_tokens += llm_completion_tokens;
                }
                Some(Event::Failed {
                    doc_id,
                    error,
                    dead,
                    run: r,
                    ..
                }) if r == run => {
                    if dead {
                        if pending.remove(&doc_id).is_some() {
                            progress.advance(&doc_id);
                            failed += 1;
                            report.dead.push((doc_id, error));
                        }
                    } else {
                        retries += 1;
                    }
                }
                _ => {}
            }
            progress.note(&format!(
                "{failed} failed, {retries} retried, {} pending",
                pending.len()
            ));
            if delivery.ack().await.is_err() {
                break;
            }
        }
        if pending.is_empty() {
            let _ = broker.delete_queue(events).await;
            broker.close().await;
        } else {
            tracing::warn!("lost the broker; reconnecting");
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
    progress.finish();
    report.dead.sort();
    Ok((usage, stage))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_paths_must_lie_under_a_root() {
        let dir = tempfile::tempdir().expect("tempdir");
        let corpus = dir.path().join("corpus");
        std::fs::create_dir_all(corpus.join("book")).expect("mkdir");
        std::os::unix::fs::symlink("/etc", corpus.join("etc")).expect("symlink");
        let roots = vec![
            corpus.display().to_string(),
            "s3://bucket/parts".to_string(),
        ];
        let ok = |what: &str| check_root(&roots, what, "path").is_ok();
        let under = |rel: &str| corpus.join(rel).display().to_string();
        assert!(ok(&under("book")));
        assert!(ok(&under("graph/parts")), "not created yet, but inside");
        assert!(ok(&format!("file://{}", under("book"))));
        assert!(ok("s3://bucket/parts") && ok("s3://bucket/parts/run1"));
        assert!(!ok(&under("etc/hostname")), "a symlink out of the root");
        assert!(!ok(&under("book/../../outside")));
        assert!(
            !ok(&under("new/../../outside")),
            "`..` through a folder that does not exist"
        );
        assert!(!ok("/etc/hostname"));
        assert!(!ok("s3://bucket/partsx") && !ok("s3://other/parts"));
        assert!(check_root(&[], &under("book"), "path").is_err());
    }

    #[test]
    fn a_job_whose_part_keys_are_not_part_keys_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().display().to_string();
        let source = dir.path().join("a.md");
        std::fs::write(&source, "# A\n\nText.\n").expect("write");
        let mut settings = crate::Settings::of(&crate::config::Config::defaults());
        settings.depends.enabled = false;
        settings.related.enabled = false;
        settings.index.count_tokens = false;
        let stage = Stage::new(settings).expect("stage");
        let job = |key: &str, previous: Option<&str>| DocumentJob {
            protocol: ledger_queue::PROTOCOL_VERSION,
            run: "r".into(),
            events: "e".into(),
            parts: dir.path().join("parts").display().to_string(),
            doc_id: "a.md".into(),
            source: source.display().to_string(),
            format: ledger_core::Format::Markdown,
            root: Some(root.clone()),
            key: key.into(),
            previous_key: previous.map(str::to_string),
            fingerprint: stage.fingerprint().to_string(),
            attempt: 0,
            max_attempts: 3,
        };
        let good = "0".repeat(64);
        for (key, previous) in [
            (good.as_str(), Some("../../../../outside_dir/b")),
            (good.as_str(), Some("/tmp/b")),
            ("../b", None),
        ] {
            let refused = run_job(&job(key, previous), &stage, std::slice::from_ref(&root));
            assert!(
                matches!(refused, Err(Error::Refused(Refusal::Key { .. }))),
                "{key} {previous:?}: {refused:?}"
            );
        }
        // A well-formed key passes this check (and fails later: the source's key differs).
        let later = run_job(
            &job(&good, Some(&good)),
            &stage,
            std::slice::from_ref(&root),
        );
        assert!(matches!(later, Err(Error::SourceChanged(_))), "{later:?}");
    }
}
