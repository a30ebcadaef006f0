//! Metrics of the evaluation: precision and recall of detected edges against gold pairs, and the
//! per-case measures of a retrieved context.

use serde::Serialize;
use std::collections::BTreeSet;

/// Precision and recall of a set of predicted pairs against gold pairs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Detection {
    /// Predicted pairs.
    pub predicted: usize,
    /// Gold pairs.
    pub gold: usize,
    /// Predicted pairs that are gold.
    pub correct: usize,
}

impl Detection {
    /// Compares `predicted` with `gold`.
    pub fn of(predicted: &BTreeSet<(usize, usize)>, gold: &BTreeSet<(usize, usize)>) -> Detection {
        Detection {
            predicted: predicted.len(),
            gold: gold.len(),
            correct: predicted.intersection(gold).count(),
        }
    }

    /// Adds another document's counts.
    pub fn add(&mut self, other: Detection) {
        self.predicted += other.predicted;
        self.gold += other.gold;
        self.correct += other.correct;
    }

    /// Correct / predicted (1 when nothing was predicted).
    pub fn precision(&self) -> f64 {
        ratio(self.correct, self.predicted)
    }

    /// Correct / gold (1 when there is no gold pair).
    pub fn recall(&self) -> f64 {
        ratio(self.correct, self.gold)
    }
}

/// The measures of one case under one strategy.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct CaseScore {
    /// Must-change units in the context / must-change units.
    pub must_change_recall: f64,
    /// Must-not-change units in the context / must-not-change units (lower is tighter).
    pub must_not_included: f64,
    /// Tokens retrieved / document tokens.
    pub token_ratio: f64,
    /// Tokens retrieved.
    pub tokens: usize,
    /// Whether the context kept to its budget.
    pub within_budget: bool,
}

/// A case's gold units (graph indices).
#[derive(Debug, Clone, Copy)]
pub struct Gold<'a> {
    /// Units the edit must change.
    pub must_change: &'a [usize],
    /// Units it must leave alone.
    pub must_not_change: &'a [usize],
}

/// Scores a context (`retrieved`, graph indices, of `tokens`) against a case's gold units.
pub fn score(
    retrieved: &[usize],
    tokens: usize,
    budget: usize,
    document_tokens: usize,
    gold: Gold,
) -> CaseScore {
    let Gold {
        must_change,
        must_not_change,
    } = gold;
    let retrieved: std::collections::HashSet<usize> = retrieved.iter().copied().collect();
    let share = |units: &[usize]| {
        if units.is_empty() {
            return None;
        }
        Some(units.iter().filter(|u| retrieved.contains(u)).count() as f64 / units.len() as f64)
    };
    CaseScore {
        must_change_recall: share(must_change).unwrap_or(1.0),
        must_not_included: share(must_not_change).unwrap_or(0.0),
        token_ratio: tokens as f64 / document_tokens.max(1) as f64,
        tokens,
        within_budget: tokens <= budget,
    }
}

/// Mean of a list (0 for none).
pub fn mean(values: impl IntoIterator<Item = f64>) -> f64 {
    let (sum, n) = values
        .into_iter()
        .fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    if n == 0 { 0.0 } else { sum / n as f64 }
}

/// `num / den`, 1 when there is nothing to count (`den == 0`).
pub fn ratio(num: usize, den: usize) -> f64 {
    if den == 0 {
        1.0
    } else {
        num as f64 / den as f64
    }
}
