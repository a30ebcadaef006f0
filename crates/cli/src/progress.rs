//! Progress on a terminal (indicatif bars), or, when stderr is not one, a line every few
//! seconds (`LEDGER_PROGRESS_INTERVAL_MS`, default 10,000) with the count, rate and time left
//! (`ledger_pipeline::progress::Lines`); behind the pipeline's `Progress` callback.

use indicatif::{ProgressBar, ProgressStyle};
use ledger_pipeline::Progress;
use ledger_pipeline::progress::Lines;
use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::Duration;

/// A progress bar per step, or periodic lines off a terminal; nothing when disabled.
pub struct Bar {
    /// Off a terminal, when enabled: lines on stderr.
    lines: Option<Lines<fn(&str)>>,
    /// Whether anything shows.
    enabled: bool,
    /// Otherwise: the bar of the current step (hidden when disabled).
    bar: Mutex<ProgressBar>,
}

impl Bar {
    /// Progress that shows when `enabled`.
    pub fn new(enabled: bool) -> Bar {
        let interval = std::env::var("LEDGER_PROGRESS_INTERVAL_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .map_or(Duration::from_secs(10), Duration::from_millis);
        let say: fn(&str) = |line| eprintln!("{line}");
        Bar {
            lines: (enabled && !std::io::stderr().is_terminal()).then(|| Lines::new(interval, say)),
            enabled,
            bar: Mutex::new(ProgressBar::hidden()),
        }
    }

    fn current(&self) -> ProgressBar {
        self.bar
            .lock()
            .map(|b| b.clone())
            .unwrap_or_else(|_| ProgressBar::hidden())
    }
}

impl Progress for Bar {
    fn start(&self, what: &str, total: u64) {
        if let Some(lines) = &self.lines {
            return lines.start(what, total);
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
        match &self.lines {
            Some(lines) => lines.grow(more),
            None => self.current().inc_length(more),
        }
    }

    fn advance(&self, message: &str) {
        if let Some(lines) = &self.lines {
            return lines.advance(message);
        }
        let bar = self.current();
        bar.inc(1);
        bar.set_message(message.to_string());
    }

    fn note(&self, message: &str) {
        if self.lines.is_none() {
            self.current().set_message(message.to_string());
        }
    }

    fn inner(&self, item: &str, step: &str, done: u64, total: u64) {
        match &self.lines {
            Some(lines) => lines.inner(item, step, done, total),
            None if self.enabled => self
                .current()
                .set_message(format!("{item}: {step} {done}/{total} units")),
            None => {}
        }
    }

    fn finish(&self) {
        match &self.lines {
            Some(lines) => lines.finish(),
            None => self.current().finish_and_clear(),
        }
    }
}
