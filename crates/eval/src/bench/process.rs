//! Running the `ledger` binary: timed, with the peak memory of its processes.

use crate::error::{Context, EvalError, Result};
use ledger_pipeline::Config;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The `ledger` binary a benchmark runs, with a job queue of its own.
pub struct Ledger {
    /// The executable.
    pub exe: PathBuf,
    /// The benchmark's job queue (deleted at the end, with its dead-letter queue).
    pub queue: String,
}

impl Ledger {
    /// The binary at `exe`, with a queue named after this process.
    pub fn new(exe: PathBuf) -> Ledger {
        Ledger {
            exe,
            queue: format!("ledger.bench.{}", std::process::id()),
        }
    }

    /// `ledger ARGS` with the benchmark's queue, no progress bars and no output.
    pub(crate) fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(&self.exe);
        c.args(args)
            .env("LEDGER_QUEUE_JOBS", &self.queue)
            .env("LEDGER_INDEX_PROGRESS", "false")
            .stdout(Stdio::null());
        c
    }

    /// Deletes the benchmark's queues from the broker of `config`.
    pub(crate) fn delete_queue(&self, config: &Config) -> Result<()> {
        let roots = config.tls.extra_roots()?;
        ledger_pipeline::distributed::delete_queues(
            &self.queue,
            &config.queue.amqp,
            roots.as_deref(),
        )?;
        Ok(())
    }
}

/// Runs `c` to its end: its wall time in seconds; an error when it fails.
pub(crate) fn timed(mut c: Command) -> Result<f64> {
    let start = Instant::now();
    let status = c.status().context("running ledger")?;
    if !status.success() {
        return Err(EvalError::Invalid(format!("{c:?} failed: {status}")));
    }
    Ok(start.elapsed().as_secs_f64())
}

/// One measured run.
pub(crate) struct Measured {
    pub(crate) seconds: f64,
    /// Peak resident memory of the largest process of the run, in bytes.
    pub(crate) peak: u64,
    /// CPU seconds (user and system, every thread) of the run's processes, as last seen before
    /// they ended (polled: the last poll's interval is missed).
    pub(crate) cpu_seconds: f64,
}

/// Clock ticks per second of `/proc/<pid>/stat` times: the kernel's `USER_HZ`, 100 on Linux.
const USER_HZ: f64 = 100.0;

/// The CPU time (user and system, every thread) a running process has spent, in seconds.
fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may hold spaces, inside parentheses): state is
    // field 3, utime and stime fields 14 and 15.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |k: usize| fields.get(k - 3)?.parse::<f64>().ok();
    Some((ticks(14)? + ticks(15)?) / USER_HZ)
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
pub(crate) fn watch(mut main: Child, mut others: Vec<Child>) -> Result<Measured> {
    let start = Instant::now();
    let mut peak = 0;
    let mut cpu: std::collections::HashMap<u32, f64> = std::collections::HashMap::new();
    let status = loop {
        for pid in std::iter::once(main.id()).chain(others.iter().map(Child::id)) {
            peak = peak.max(high_water(pid).unwrap_or(0));
            if let Some(seconds) = cpu_seconds(pid) {
                cpu.insert(pid, seconds);
            }
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
    let status = status.context("waiting for ledger")?;
    let Some(status) = status else {
        return Err(EvalError::Invalid("ledger did not exit".into()));
    };
    if !status.success() {
        return Err(EvalError::Invalid(format!("ledger failed: {status}")));
    }
    Ok(Measured {
        seconds,
        peak,
        cpu_seconds: cpu.values().sum(),
    })
}
