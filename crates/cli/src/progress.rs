//! Progress on a terminal (indicatif bars), or, when stderr is not one, a line every few
//! seconds (`LEDGER_PROGRESS_INTERVAL_MS`, default 10,000) with the count, rate and time left;
//! behind the pipeline's `Progress` callback.

use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A progress bar per step, or periodic lines off a terminal; nothing when disabled.
pub struct Bar {
    enabled: bool,
    terminal: bool,
    interval: Duration,
    bar: Mutex<ProgressBar>,
    /// Off a terminal: the step, its total, when it began, when the last line was printed.
    lines: Mutex<Option<Lines>>,
}

struct Lines {
    what: String,
    total: u64,
    done: u64,
    started: Instant,
    last: Instant,
}

impl Bar {
    /// Progress that shows when `enabled`.
    pub fn new(enabled: bool) -> Bar {
        let interval = std::env::var("LEDGER_PROGRESS_INTERVAL_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .map_or(Duration::from_secs(10), Duration::from_millis);
        Bar {
            enabled,
            terminal: std::io::stderr().is_terminal(),
            interval,
            bar: Mutex::new(ProgressBar::hidden()),
            lines: Mutex::new(None),
        }
    }

    fn current(&self) -> ProgressBar {
        self.bar
            .lock()
            .map(|b| b.clone())
            .unwrap_or_else(|_| ProgressBar::hidden())
    }

    /// Off a terminal: one more item; a line when the interval has passed (and at the end).
    fn line(&self, more: u64, total_more: u64, last: bool) {
        let Ok(mut lines) = self.lines.lock() else {
            return;
        };
        let Some(l) = lines.as_mut() else {
            return;
        };
        l.done += more;
        l.total += total_more;
        let now = Instant::now();
        if now.duration_since(l.last) < self.interval && !(last && l.done > 0) {
            return;
        }
        l.last = now;
        let seconds = now.duration_since(l.started).as_secs_f64().max(1e-3);
        let rate = l.done as f64 / seconds;
        let left = if rate > 0.0 && l.total > l.done {
            format!(", about {:.0} s left", (l.total - l.done) as f64 / rate)
        } else {
            String::new()
        };
        eprintln!(
            "{}: {}/{} ({:.0} %), {rate:.1}/s{left}",
            l.what,
            l.done,
            l.total,
            100.0 * l.done as f64 / l.total.max(1) as f64
        );
    }
}

impl ledger_pipeline::Progress for Bar {
    fn start(&self, what: &str, total: u64) {
        if self.enabled && !self.terminal {
            if let Ok(mut lines) = self.lines.lock() {
                let now = Instant::now();
                *lines = Some(Lines {
                    what: what.to_string(),
                    total,
                    done: 0,
                    started: now,
                    last: now,
                });
            }
            return;
        }
        let bar = if self.enabled {
            ProgressBar::new(total)
        } else {
            ProgressBar::hidden()
        };
        bar.set_style(
            ProgressStyle::with_template(&format!(
                "{{spinner}} {what} [{{bar:30}}] {{pos}}/{{len}} {{per_sec}} {{msg}} ({{eta}})"
            ))
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        if let Ok(mut b) = self.bar.lock() {
            b.finish_and_clear();
            *b = bar;
        }
    }

    fn grow(&self, more: u64) {
        self.line(0, more, false);
        self.current().inc_length(more);
    }

    fn advance(&self, message: &str) {
        self.line(1, 0, false);
        let bar = self.current();
        bar.inc(1);
        bar.set_message(message.to_string());
    }

    fn note(&self, message: &str) {
        self.current().set_message(message.to_string());
    }

    fn finish(&self) {
        self.line(0, 0, true);
        if let Ok(mut lines) = self.lines.lock() {
            *lines = None;
        }
        self.current().finish_and_clear();
    }
}
