//! The callback long steps report through (indexing, editing); the binary draws it.

/// Where long steps report how far they are (a progress bar in the binary; nothing in tests).
pub trait Progress: Sync {
    /// A step of `total` items begins (`what`: "parsing", "documents").
    fn start(&self, what: &str, total: u64);
    /// The step turns out to have `more` items.
    fn grow(&self, more: u64);
    /// One more item is done; `message` names it or sums up.
    fn advance(&self, message: &str);
    /// A note on the current item, without advancing.
    fn note(&self, message: &str);
    /// Inside item `item` (a document), `step` ("judging", "summarising", "embedding") has done
    /// `done` of `total` units: the long parts of one big document show movement too.
    fn inner(&self, _item: &str, _step: &str, _done: u64, _total: u64) {}
    /// The step is over.
    fn finish(&self);
}

/// No progress shown.
pub struct Quiet;

impl Progress for Quiet {
    fn start(&self, _: &str, _: u64) {}
    fn grow(&self, _: u64) {}
    fn advance(&self, _: &str) {}
    fn note(&self, _: &str) {}
    fn finish(&self) {}
}
