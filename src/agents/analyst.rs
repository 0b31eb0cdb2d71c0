//! The failure analysis (issue 19, point 7): when a run ends without approval and needs a
//! human — escalated for recurring issues or a low score, or out of iterations — one model call
//! reads the whole record and writes the hand-off (root causes, patterns across iterations, what
//! was tried, impact, next steps, a revised plan). It heads `QA_HUMAN_ESCALATION.md` and the
//! escalation issue, above the factual tables, which stay. The task is a pure text builder; a
//! failed or skipped call leaves the factual report alone.

use std::cell::RefCell;

use super::Meter;
use crate::config::Criterion;
use crate::engine::IterationRecord;
use crate::engine::recurring::RecurringIssue;
use crate::engine::state::{Escalation, Outcome};
use crate::llm::{AgentRole, Message, Provider, Request};

/// Bytes of the record sent to the model (the newest iterations are kept whole first).
pub const TASK_BUDGET: usize = 32 * 1024;
/// Characters of analysis kept.
pub const ANSWER_LIMIT: usize = 12_000;

/// Whether the outcome hands the change to a human after failing to converge.
pub fn wanted(outcome: &Outcome) -> bool {
    matches!(
        outcome,
        Outcome::MaxIterations { .. }
            | Outcome::Escalated {
                escalation: Escalation::Recurring { .. } | Escalation::BelowMinScore { .. },
                ..
            }
    )
}

/// What the analyst reads.
pub struct Record<'a> {
    pub headline: String,
    pub criteria: &'a [Criterion],
    pub history: &'a [IterationRecord],
    pub fixes: &'a [(u32, String)],
    pub recurring: &'a [RecurringIssue],
}

/// The analyst's task: the run's record, cut to [`TASK_BUDGET`] (older iterations are shortened
/// to their issue titles first, then left out and counted).
pub fn task(r: &Record<'_>) -> String {
    let mut head = format!("# The run's record\n\nWhy it stopped: {}\n\n", r.headline);
    head.push_str("## Acceptance criteria\n\n");
    if r.criteria.is_empty() {
        head.push_str("None were given.\n");
    }
    for (i, c) in r.criteria.iter().enumerate() {
        head.push_str(&format!("{}. {}\n", i + 1, c.text));
    }
    if !r.recurring.is_empty() {
        head.push_str("\n## Issues that kept recurring\n\n");
        for ri in r.recurring {
            head.push_str(&format!(
                "- {} — {} times, iterations {:?}\n",
                ri.title, ri.occurrences, ri.iterations
            ));
        }
    }
    head.push_str("\n## Iterations (oldest first)\n\n");
    let full: Vec<String> = r
        .history
        .iter()
        .map(|h| iteration(h, r.fixes, true))
        .collect();
    let short: Vec<String> = r
        .history
        .iter()
        .map(|h| iteration(h, r.fixes, false))
        .collect();
    // Newest iterations whole, older ones short, the oldest left out if still too long.
    let mut chosen: Vec<&str> = Vec::new();
    let mut used = head.len();
    let mut left_out = 0;
    for k in (0..r.history.len()).rev() {
        let text = if used + full[k].len() <= TASK_BUDGET {
            &full[k]
        } else if used + short[k].len() <= TASK_BUDGET {
            &short[k]
        } else {
            left_out += 1;
            continue;
        };
        used += text.len();
        chosen.push(text);
    }
    chosen.reverse();
    let mut out = head;
    if left_out > 0 {
        out.push_str(&format!(
            "({left_out} older iteration(s) left out for length.)\n\n"
        ));
    }
    for c in chosen {
        out.push_str(c);
    }
    out.push_str("\nWrite the hand-off now, in the sections your instructions give.\n");
    out
}

fn iteration(h: &IterationRecord, fixes: &[(u32, String)], whole: bool) -> String {
    let mut out = format!(
        "### Iteration {} — {}, score {}\n\n",
        h.iteration,
        h.status.as_str(),
        h.score
    );
    if let Some(g) = &h.guidance {
        out.push_str(&format!(
            "Human guidance: {}\n\n",
            crate::text::clip(g, 600)
        ));
    }
    if whole && !h.summary.is_empty() {
        out.push_str(&format!(
            "Reviewer: {}\n\n",
            crate::text::clip(h.summary.trim(), 800)
        ));
    }
    for g in h
        .verification
        .gates
        .iter()
        .filter(|g| g.required && g.status == crate::model::GateStatus::Failed)
    {
        out.push_str(&format!(
            "- failed gate `{}`: {}\n",
            g.name,
            crate::text::clip(&g.summary, 300)
        ));
    }
    for i in h.issues.iter().take(if whole { 20 } else { 8 }) {
        let at = i.location().map(|l| format!(" at {l}")).unwrap_or_default();
        out.push_str(&format!(
            "- [{}/{}] {}{at}",
            i.kind,
            i.severity.as_str(),
            i.title
        ));
        if whole && !i.fix.is_empty() {
            out.push_str(&format!(" — fix asked: {}", crate::text::clip(&i.fix, 300)));
        }
        out.push('\n');
    }
    if h.issues.len() > 20 {
        out.push_str(&format!("- … {} more issue(s)\n", h.issues.len() - 20));
    }
    if let Some((_, s)) = fixes.iter().find(|(it, _)| *it == h.iteration) {
        out.push_str(&format!(
            "\nThe fixer then reported: {}\n",
            crate::text::clip(s.trim(), if whole { 800 } else { 200 })
        ));
    }
    out.push('\n');
    out
}

/// The analyst: one call to the reviewer's model, within the run's budget.
pub struct Analyst<'a> {
    pub provider: &'a dyn Provider,
    pub model: Option<String>,
    pub system: String,
    pub meter: &'a RefCell<Meter>,
}

impl Analyst<'_> {
    /// The analysis, or why there is none (budget spent, model failed, empty answer).
    pub async fn write(&self, task: String) -> Result<String, String> {
        if let Some(why) = self.meter.borrow().exhausted() {
            return Err(format!("budget spent: {why}"));
        }
        let request = Request {
            role: AgentRole::Analyst,
            model: self.model.clone(),
            system: self.system.clone(),
            messages: vec![Message::user(task)],
            tools: Vec::new(),
        };
        let response = self
            .provider
            .complete(&request)
            .await
            .map_err(|e| format!("the model failed: {e}"))?;
        self.meter
            .borrow_mut()
            .record(&response.model, response.usage);
        let text = response.text.trim();
        if text.is_empty() {
            return Err("the model answered without text".into());
        }
        Ok(crate::text::clip(text, ANSWER_LIMIT))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::state::Status;
    use crate::model::{Issue, IssueType, Severity};

    fn record(n: u32, title: &str, summary_len: usize) -> IterationRecord {
        IterationRecord {
            iteration: n,
            status: Status::Rejected,
            reviewer_approved: false,
            score: 40,
            summary: "s".repeat(summary_len),
            criteria: vec![],
            issues: vec![Issue {
                id: "Q1".into(),
                title: title.into(),
                kind: IssueType::UnitTest,
                severity: Severity::High,
                file: Some("calc.py".into()),
                line: Some(2),
                file_lines: None,
                description: String::new(),
                fix: "return a + b".into(),
                recurs: None,
                introduced: true,
                fingerprint: None,
            }],
            suggestions: Vec::new(),
            pre_existing: Vec::new(),
            verification: Default::default(),
            timestamp: String::new(),
            manual_test_plan: None,
            guidance: None,
            reviewed_head: None,
        }
    }

    #[test]
    fn the_task_holds_the_record_within_its_budget() {
        let history: Vec<_> = (1..=3).map(|n| record(n, "add subtracts", 50)).collect();
        let fixes = vec![(1, "changed the sign".to_string())];
        let t = task(&Record {
            headline: "Escalated".into(),
            criteria: &[],
            history: &history,
            fixes: &fixes,
            recurring: &[],
        });
        assert!(t.contains("### Iteration 3 — rejected, score 40"), "{t}");
        assert!(
            t.contains("- [unit_test/high] add subtracts at calc.py:2 — fix asked: return a + b"),
            "{t}"
        );
        assert!(
            t.contains("The fixer then reported: changed the sign"),
            "{t}"
        );
        // Hundreds of long iterations: the newest stay whole, the task stays within budget.
        let long: Vec<_> = (1..=400).map(|n| record(n, "add subtracts", 700)).collect();
        let t = task(&Record {
            headline: "Max".into(),
            criteria: &[],
            history: &long,
            fixes: &[],
            recurring: &[],
        });
        assert!(t.len() <= TASK_BUDGET + 200, "{}", t.len());
        assert!(t.contains("### Iteration 400"), "the newest is kept");
        assert!(t.contains("older iteration(s) left out"), "{}", &t[..300]);
    }

    #[test]
    fn only_outcomes_that_hand_over_a_failure_want_an_analysis() {
        assert!(wanted(&Outcome::MaxIterations { best_iteration: 1 }));
        assert!(!wanted(&Outcome::Approved { iteration: 1 }));
        assert!(!wanted(&Outcome::Escalated {
            escalation: Escalation::AwaitingResume { issue: 3 },
            best_iteration: None
        }));
    }
}
