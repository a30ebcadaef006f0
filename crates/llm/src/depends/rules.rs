//! The rules judge: no model, no download. A unit depends on an earlier unit that introduces a
//! term or symbol it uses (definition environments, "we define", "let X denote", "X is called",
//! `\emph` inside a definition, Markdown's "A *term* is …", symbols defined with `:=`), and on
//! the antecedent of an anaphor
//! that opens it ("this approach", "these results", "the preceding computation"), and on an earlier
//! theorem-like unit, equation or algorithm it names explicitly (a result it applies).

use super::context::DocContext;
use super::terms::antecedent;
use super::{Judge, Judged, Task, Verdict};
use ledger_core::UnitKind;

/// The name of the rules judge, in the configuration, the flags and every judgment it makes.
pub const RULES_NAME: &str = "rules";

/// The rules judge (`depends.judge = "rules"`).
#[derive(Debug, Default)]
pub struct RulesJudge;

impl RulesJudge {
    /// The verdicts on `unit`'s candidates.
    pub fn verdicts(&self, ctx: &DocContext, unit: usize, candidates: &[usize]) -> Vec<Verdict> {
        let anaphor = antecedent(ctx.doc, unit);
        candidates
            .iter()
            .map(|&j| {
                let mut elements = ctx.intro.used_by(j, unit);
                // A result, definition or equation the unit names is one it applies.
                let target = &ctx.doc.units[j];
                if matches!(
                    target.kind,
                    UnitKind::Theorem | UnitKind::Equation | UnitKind::Algorithm
                ) && let Some((_, text)) = ctx.cited[unit].iter().find(|(k, _)| *k == j)
                {
                    elements.push(format!("applies `{text}`"));
                }
                if let Some((_, why)) = anaphor.as_ref().filter(|(a, _)| *a == j) {
                    elements.push(why.clone());
                }
                Verdict {
                    candidate: j,
                    depends: !elements.is_empty(),
                    elements,
                    score: None,
                }
            })
            .collect()
    }
}

impl Judge for RulesJudge {
    fn name(&self) -> &str {
        RULES_NAME
    }

    fn reusable(&self) -> bool {
        false
    }

    fn judge_all(&self, tasks: &[Task<'_>]) -> Vec<Judged> {
        use rayon::prelude::*;
        tasks
            .par_iter()
            .map(|t| Judged {
                outcome: Ok(self.verdicts(t.ctx, t.unit, &t.candidates)),
                requests: 0,
                prompt_tokens: 0,
                completion_tokens: 0,
            })
            .collect()
    }
}
