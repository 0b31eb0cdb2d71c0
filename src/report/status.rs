//! `qa-loop status`: the QA state of a plan (or a `qa-result.json`), for humans and machines.

use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use super::history::{self, HistoryEntry, HistoryIssue};
use crate::engine::matcher::Matcher;
use crate::engine::recurring::{Occurrence, RecurringIssue, find_recurring};
use crate::error::InputError;

/// What `status` prints (`--json`: exactly this object).
#[derive(Debug, Clone, Serialize)]
pub struct StatusView {
    pub status: String,
    pub iterations: usize,
    pub last_check: Option<String>,
    pub sessions: Option<u64>,
    pub issues: Vec<HistoryIssue>,
    pub history: Vec<HistoryEntry>,
    pub recurring_issues: Vec<RecurringIssue>,
    /// What could not be read, by JSON path (printed to stderr, never part of `--json`).
    #[serde(skip)]
    pub warnings: Vec<String>,
}

/// Reads the QA state of a plan (`qa_signoff`, `qa_iteration_history`) or of a `qa-result.json`
/// (`verdict`, `history`).
pub fn from_text(
    path: &Path,
    text: &str,
    matcher: &Matcher,
    threshold: u32,
) -> Result<StatusView, InputError> {
    let v: Value = serde_json::from_str(text).map_err(|e| InputError::from_json(path, &e))?;
    let obj = v
        .as_object()
        .ok_or_else(|| InputError::at(path, 1, 1, "expected a JSON object"))?;
    let mut warnings = Vec::new();
    let (field, raw_history) = match obj.get("qa_iteration_history") {
        Some(h) => ("qa_iteration_history", Some(h)),
        None => ("history", obj.get("history")),
    };
    let history = history::read(raw_history, field, &mut warnings)
        .map_err(|why| InputError::file(path, why))?;
    let signoff = obj.get("qa_signoff");
    let status = signoff
        .and_then(|s| s.get("status"))
        .or_else(|| obj.get("status"))
        .and_then(Value::as_str)
        .map(str::to_string)
        .or_else(|| history.last().map(|h| h.status.clone()))
        .unwrap_or_else(|| "pending".to_string());
    let last_check = signoff
        .and_then(|s| s.get("timestamp"))
        .and_then(Value::as_str)
        .map(str::to_string)
        .or_else(|| history.last().and_then(|h| h.timestamp.clone()));
    let issues = match signoff.and_then(|s| s.get("issues_found")) {
        Some(found) => history::read_issues(found, "qa_signoff.issues_found", &mut warnings),
        None => history.last().map(|h| h.issues.clone()).unwrap_or_default(),
    };
    let occurrences: Vec<Occurrence<'_>> = history
        .iter()
        .flat_map(|h| {
            h.issues.iter().map(move |i| Occurrence {
                iteration: h.iteration,
                id: &i.id,
                key: i.key(),
                recurs: i.recurs.as_deref(),
            })
        })
        .collect();
    let recurring_issues = find_recurring(&occurrences, matcher, threshold);
    Ok(StatusView {
        status,
        iterations: history.len(),
        last_check,
        sessions: signoff
            .and_then(|s| s.get("qa_session"))
            .and_then(Value::as_u64),
        issues,
        history,
        recurring_issues,
        warnings,
    })
}

/// The human view.
pub fn render_human(v: &StatusView) -> String {
    let mut out = format!("QA status: {}\n", v.status);
    if let Some(s) = v.sessions {
        out.push_str(&format!("Sessions:  {s}\n"));
    }
    out.push_str(&format!("Iterations: {}\n", v.iterations));
    out.push_str(&format!(
        "Last check: {}\n",
        v.last_check.as_deref().unwrap_or("never")
    ));
    if !v.issues.is_empty() {
        out.push_str(&format!("\nOpen issues ({}):\n", v.issues.len()));
        for i in &v.issues {
            let loc = match (&i.file, i.line) {
                (Some(f), Some(l)) => format!(" ({f}:{l})"),
                (Some(f), None) => format!(" ({f})"),
                _ => String::new(),
            };
            out.push_str(&format!("  - {}{loc}\n", i.title));
        }
    }
    if !v.history.is_empty() {
        out.push_str("\nIteration history:\n");
        for h in &v.history {
            out.push_str(&format!(
                "  {:>3}  {:<15} {:>5}  {} issue(s)  {}\n",
                h.iteration,
                h.status,
                h.score.map_or("-".to_string(), |s| s.to_string()),
                h.issues.len(),
                h.timestamp.as_deref().unwrap_or("")
            ));
        }
    }
    if v.recurring_issues.is_empty() {
        out.push_str("\nRecurring issues: none\n");
    } else {
        out.push_str("\nRecurring issues:\n");
        for r in &v.recurring_issues {
            out.push_str(&format!(
                "  - {} — {} times (iterations {:?})\n",
                r.title, r.occurrences, r.iterations
            ));
            for link in &r.links {
                out.push_str(&format!("      {link}\n"));
            }
        }
    }
    out
}
