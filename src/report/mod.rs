//! Reports: consumers of the loop's state that write `qa_report.md`, `qa-loop-junit.xml`,
//! `qa-loop.sarif`, `qa-result.json`, `QA_FIX_REQUEST.md`, `QA_HUMAN_ESCALATION.md`,
//! `MANUAL_TEST_PLAN.md` and the plan's QA keys. Each format is a pure function of a [`RunReport`]; [`files`] writes them.

pub mod files;
pub mod history;
pub mod junit;
pub mod markdown;
pub mod plan;
pub mod result;
pub mod sarif;
pub mod status;
pub mod untrusted;

use crate::config::Strategy;
use crate::engine::recurring::RecurringIssue;
use crate::engine::state::{Escalation, IterationRecord, Outcome};
use crate::llm::Usage;

/// Everything a report shows about a run.
#[derive(Debug, Clone)]
pub struct RunReport<'a> {
    pub outcome: &'a Outcome,
    pub history: &'a [IterationRecord],
    pub strategy: &'a Strategy,
    pub recurring: Vec<RecurringIssue>,
    pub usage: Usage,
    pub cost_usd: f64,
    pub model_calls: u64,
    pub errors: &'a [String],
    /// The fixer's summary after each iteration it worked on.
    pub fixes: &'a [(u32, String)],
    /// Files of the diff the reviewer was not shown.
    pub omitted_files: &'a [String],
    /// The model's answers came from a replay session.
    pub replayed: bool,
    /// The run is over (not an in-progress snapshot).
    pub finished: bool,
    /// The failure analysis for a human, when one was written.
    pub analysis: Option<&'a str>,
    /// The MCP servers the agents had (state, tools, calls).
    pub mcp: Vec<crate::mcp::ServerStatus>,
    /// How the change's code was confined (none when none of it ran).
    pub sandbox: Option<SandboxNote>,
}

impl<'a> RunReport<'a> {
    /// The report of `history` under `strategy`, ended with `outcome`: finished, nothing else
    /// known (no usage, errors, fixes, analysis, MCP servers or sandbox note). Callers set what
    /// they know with struct update syntax.
    pub fn new(
        outcome: &'a Outcome,
        history: &'a [IterationRecord],
        strategy: &'a Strategy,
    ) -> Self {
        RunReport {
            outcome,
            history,
            strategy,
            recurring: Vec::new(),
            usage: Usage::default(),
            cost_usd: 0.0,
            model_calls: 0,
            errors: &[],
            fixes: &[],
            omitted_files: &[],
            replayed: false,
            finished: true,
            analysis: None,
            mcp: Vec::new(),
            sandbox: None,
        }
    }
}

/// What the report says about the sandbox (SPEC §10).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SandboxNote {
    /// Whether the change's code ran in a sandbox.
    pub confined: bool,
    /// How, or why not.
    pub how: String,
}

impl SandboxNote {
    /// The note for `sandbox`.
    pub fn of(sandbox: &crate::sandbox::Sandbox) -> Self {
        SandboxNote {
            confined: sandbox.kind().is_some(),
            how: sandbox.describe(),
        }
    }
}

impl RunReport<'_> {
    /// The record the verdict rests on: the approved one, else the best.
    pub fn deciding(&self) -> Option<&IterationRecord> {
        let best = self.outcome.best_iteration();
        best.and_then(|b| self.history.iter().find(|r| r.iteration == b))
            .or(self.history.last())
    }

    pub fn latest(&self) -> Option<&IterationRecord> {
        self.history.last()
    }

    /// One line on why the run ended.
    pub fn headline(&self) -> String {
        headline(self.outcome, self.history.len())
    }
}

/// One line on why a run of `iterations` iterations ended with `outcome`.
pub fn headline(outcome: &Outcome, iterations: usize) -> String {
    {
        match outcome {
            Outcome::Approved { iteration } => format!("Approved at iteration {iteration}."),
            Outcome::Rejected { .. } => "Rejected (review mode: no fixes attempted).".to_string(),
            Outcome::MaxIterations { best_iteration } => {
                format!(
                    "Not approved after {iterations} iterations; the best was iteration {best_iteration}."
                )
            }
            Outcome::Escalated { escalation, .. } => match escalation {
                Escalation::Recurring { issues } => {
                    format!(
                        "Escalated to a human: {} issue(s) kept recurring.",
                        issues.len()
                    )
                }
                Escalation::BelowMinScore {
                    best_score,
                    min_score,
                } => {
                    format!(
                        "Escalated to a human: the best score {best_score} is below the minimum {min_score}."
                    )
                }
                Escalation::AwaitingSignoff { .. } => {
                    "Approved by review and gates; waiting for a human sign-off (`/qa approve`)."
                        .to_string()
                }
                Escalation::AwaitingResume { issue } => format!(
                    "Waiting for a human (escalation #{issue}): nothing was run; comment `/qa resume` on the pull request to run again."
                ),
            },
            Outcome::Errors { stop, .. } => match stop {
                crate::engine::state::ErrorStop::ConsecutiveErrors { count, last } => {
                    format!("Stopped after {count} consecutive errors; last: {last}")
                }
                crate::engine::state::ErrorStop::Budget { what } => {
                    format!("Stopped: budget spent ({what}).")
                }
                crate::engine::state::ErrorStop::Refused { why } => {
                    format!("Stopped: the model provider refused the credentials: {why}")
                }
                crate::engine::state::ErrorStop::Cancelled { reason } => {
                    format!("Stopped by {reason}: running commands were terminated.")
                }
            },
        }
    }
}
