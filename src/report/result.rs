//! `qa-result.json`: the machine-readable result.

use serde::Serialize;

use super::RunReport;
use crate::engine::recurring::RecurringIssue;
use crate::engine::state::{Escalation, IterationRecord};
use crate::model::{CriterionResult, Issue};

#[derive(Serialize)]
pub struct Tokens {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    pub total: u64,
}

#[derive(Serialize)]
pub struct QaResult<'a> {
    pub verdict: &'static str,
    pub status: &'static str,
    pub exit_code: u8,
    pub summary: String,
    pub score: Option<u8>,
    pub best_iteration: Option<u32>,
    pub iterations: usize,
    pub issues: &'a [Issue],
    pub criteria: &'a [CriterionResult],
    pub recurring_issues: &'a [RecurringIssue],
    pub history: &'a [IterationRecord],
    pub tokens: Tokens,
    pub model_calls: u64,
    pub cost_usd: f64,
    pub escalation: Option<&'a Escalation>,
    pub errors: &'a [String],
    pub not_shown_to_reviewer: &'a [String],
    pub replayed: bool,
    /// How the change's code was confined (absent when none of it ran).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<&'a crate::report::SandboxNote>,
    /// The MCP servers the agents had.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub mcp_servers: &'a [crate::mcp::ServerStatus],
}

pub fn render(r: &RunReport<'_>) -> String {
    let deciding = r.deciding();
    let latest = r.latest();
    let result = QaResult {
        verdict: r.outcome.verdict(),
        status: r.outcome.status().as_str(),
        exit_code: r.outcome.exit() as u8,
        summary: r.headline(),
        score: deciding.map(|d| d.score),
        best_iteration: r.outcome.best_iteration(),
        iterations: r.history.len(),
        issues: latest.map_or(&[], |l| &l.issues),
        criteria: deciding.map_or(&[], |d| &d.criteria),
        recurring_issues: &r.recurring,
        history: r.history,
        tokens: Tokens {
            input: r.usage.input_tokens,
            output: r.usage.output_tokens,
            cache_read: r.usage.cache_read_tokens,
            cache_write: r.usage.cache_write_tokens,
            total: r.usage.total(),
        },
        model_calls: r.model_calls,
        cost_usd: (r.cost_usd * 1e6).round() / 1e6,
        escalation: match r.outcome {
            crate::engine::Outcome::Escalated { escalation, .. } => Some(escalation),
            _ => None,
        },
        errors: r.errors,
        not_shown_to_reviewer: r.omitted_files,
        replayed: r.replayed,
        sandbox: r.sandbox.as_ref(),
        mcp_servers: &r.mcp,
    };
    serde_json::to_string_pretty(&result).expect("the result serializes") + "\n"
}
