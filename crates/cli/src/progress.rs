//! Progress bars on a terminal (indicatif), behind the pipeline's `Progress` callback.

use indicatif::{ProgressBar, ProgressStyle};
use std::sync::Mutex;

/// A progress bar per step; hidden when disabled (or when stderr is not a terminal).
pub struct Bar {
    enabled: bool,
    bar: Mutex<ProgressBar>,
}

impl Bar {
    /// A bar that shows when `enabled`.
    pub fn new(enabled: bool) -> Bar {
        Bar {
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

impl ledger_pipeline::Progress for Bar {
    fn start(&self, what: &str, total: u64) {
        let bar = if self.enabled {
            ProgressBar::new(total)
        } else {
            ProgressBar::hidden()
        };
        bar.set_style(
            ProgressStyle::with_template(&format!(
                "{{spinner}} {what} [{{bar:30}}] {{pos}}/{{len}} {{msg}} ({{eta}})"
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
        self.current().inc_length(more);
    }

    fn advance(&self, message: &str) {
        let bar = self.current();
        bar.inc(1);
        bar.set_message(message.to_string());
    }

    fn note(&self, message: &str) {
        self.current().set_message(message.to_string());
    }

    fn finish(&self) {
        self.current().finish_and_clear();
    }
}
