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
    /// Items in progress, by name: their current inner step.
    inner: std::collections::BTreeMap<String, Inner>,
}

/// A step inside one item (judging a document's units): its counts and when it began.
struct Inner {
    step: String,
    done: u64,
    total: u64,
    started: Instant,
}

impl Inner {
    /// `step done/total, rate/s, about N s left`.
    fn describe(&self, now: Instant) -> String {
        let seconds = now.duration_since(self.started).as_secs_f64().max(1e-3);
        let rate = self.done as f64 / seconds;
        format!(
            "{} {}/{} units, {rate:.1}/s{}",
            self.step,
            self.done,
            self.total,
            time_left(rate, self.done, self.total)
        )
    }
}

/// `, about N s left` when the rate tells.
fn time_left(rate: f64, done: u64, total: u64) -> String {
    if rate > 0.0 && total > done {
        format!(", about {:.0} s left", (total - done) as f64 / rate)
    } else {
        String::new()
    }
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
        let inner: String = l
            .inner
            .iter()
            .map(|(item, i)| format!("; {item}: {}", i.describe(now)))
            .collect();
        eprintln!(
            "{}: {}/{} ({:.0} %), {rate:.1}/s{}{inner}",
            l.what,
            l.done,
            l.total,
            100.0 * l.done as f64 / l.total.max(1) as f64,
            time_left(rate, l.done, l.total)
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
                    inner: Default::default(),
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
        if let Ok(mut lines) = self.lines.lock()
            && let Some(l) = lines.as_mut()
        {
            l.inner.remove(message);
        }
        self.line(1, 0, false);
        let bar = self.current();
        bar.inc(1);
        bar.set_message(message.to_string());
    }

    fn note(&self, message: &str) {
        self.current().set_message(message.to_string());
    }

    fn inner(&self, item: &str, step: &str, done: u64, total: u64) {
        if !self.enabled {
            return;
        }
        if self.terminal {
            self.current()
                .set_message(format!("{item}: {step} {done}/{total} units"));
            return;
        }
        if let Ok(mut lines) = self.lines.lock()
            && let Some(l) = lines.as_mut()
        {
            // A new step of the item starts its own clock (for its rate).
            if l.inner.get(item).is_none_or(|i| i.step != step) {
                let started = Instant::now();
                let step = step.to_string();
                let fresh = Inner {
                    step,
                    done,
                    total,
                    started,
                };
                l.inner.insert(item.to_string(), fresh);
            } else if let Some(i) = l.inner.get_mut(item) {
                (i.done, i.total) = (done, total);
            }
        }
        self.line(0, 0, false);
    }

    fn finish(&self) {
        self.line(0, 0, true);
        if let Ok(mut lines) = self.lines.lock() {
            *lines = None;
        }
        self.current().finish_and_clear();
    }
}
