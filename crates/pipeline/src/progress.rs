//! How long steps report how far they are: the [`Progress`] callback (defined in `ledger-core`,
//! which the edit crate calls too), and [`Lines`], progress as a line every few seconds for logs
//! (a terminal gets the binary's bars).

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub use ledger_core::progress::{Progress, Quiet};

/// Progress as lines, for logs where a bar cannot draw: every `interval` (and at a step's end)
/// the step's count, share, rate and time left, and the inner step of each item in progress;
/// each line goes to `say`.
pub struct Lines<F: Fn(&str) + Sync> {
    interval: Duration,
    say: F,
    step: Mutex<Option<Step>>,
}

/// The step under way: its name, counts, when it began, when the last line was said.
struct Step {
    what: String,
    total: u64,
    done: u64,
    started: Instant,
    last: Instant,
    /// Items in progress, by name: their current inner step.
    inner: BTreeMap<String, Inner>,
}

/// A step inside one item (judging a document's units): its counts and when it began.
struct Inner {
    step: String,
    done: u64,
    total: u64,
    started: Instant,
}

impl Inner {
    /// `step done/total units, rate/s, about N s left`.
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

impl<F: Fn(&str) + Sync> Lines<F> {
    /// Lines every `interval`, said through `say`.
    pub fn new(interval: Duration, say: F) -> Self {
        Lines {
            interval,
            say,
            step: Mutex::new(None),
        }
    }

    /// `more` items done and `total_more` more to do; a line when the interval has passed (and
    /// at the end, when `last`).
    fn count(&self, more: u64, total_more: u64, last: bool) {
        let Ok(mut step) = self.step.lock() else {
            return;
        };
        let Some(l) = step.as_mut() else {
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
        (self.say)(&format!(
            "{}: {}/{} ({:.0} %), {rate:.1}/s{}{inner}",
            l.what,
            l.done,
            l.total,
            100.0 * l.done as f64 / l.total.max(1) as f64,
            time_left(rate, l.done, l.total)
        ));
    }
}

impl<F: Fn(&str) + Sync> Progress for Lines<F> {
    fn start(&self, what: &str, total: u64) {
        if let Ok(mut step) = self.step.lock() {
            let now = Instant::now();
            *step = Some(Step {
                what: what.to_string(),
                total,
                done: 0,
                started: now,
                last: now,
                inner: BTreeMap::new(),
            });
        }
    }

    fn grow(&self, more: u64) {
        self.count(0, more, false);
    }

    fn advance(&self, message: &str) {
        if let Ok(mut step) = self.step.lock()
            && let Some(l) = step.as_mut()
        {
            l.inner.remove(message);
        }
        self.count(1, 0, false);
    }

    fn note(&self, _: &str) {}

    fn inner(&self, item: &str, step: &str, done: u64, total: u64) {
        if let Ok(mut state) = self.step.lock()
            && let Some(l) = state.as_mut()
        {
            // A new step of the item starts its own clock (for its rate).
            if l.inner.get(item).is_none_or(|i| i.step != step) {
                let fresh = Inner {
                    step: step.to_string(),
                    done,
                    total,
                    started: Instant::now(),
                };
                l.inner.insert(item.to_string(), fresh);
            } else if let Some(i) = l.inner.get_mut(item) {
                (i.done, i.total) = (done, total);
            }
        }
        self.count(0, 0, false);
    }

    fn finish(&self) {
        self.count(0, 0, true);
        if let Ok(mut step) = self.step.lock() {
            *step = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_say_count_share_and_inner_steps() {
        let said = Mutex::new(Vec::new());
        let lines = Lines::new(Duration::ZERO, |l: &str| {
            said.lock().map(|mut s| s.push(l.to_string())).ok();
        });
        lines.start("documents", 4);
        lines.inner("a.tex", "judging", 3, 10);
        lines.advance("b.tex");
        lines.finish();
        lines.advance("after the end: nothing");
        let said = said.into_inner().unwrap_or_default();
        assert_eq!(said.len(), 3, "{said:?}");
        assert!(said[0].starts_with("documents: 0/4 (0 %)"), "{}", said[0]);
        assert!(
            said[0].contains("; a.tex: judging 3/10 units"),
            "{}",
            said[0]
        );
        assert!(said[1].starts_with("documents: 1/4 (25 %)"), "{}", said[1]);
    }
}
