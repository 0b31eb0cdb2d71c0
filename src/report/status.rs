//! `qa-loop status`: the QA state of a plan (or a `qa-result.json`), for humans and machines.

use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use crate::engine::matcher::{IssueKey, Matcher};
use crate::engine::recurring::{Occurrence, RecurringIssue, find_recurring};
use crate::error::InputError;
use crate::model::IssueType;

/// One issue as read from a history entry (older tools wrote `location: "file:line"`).
#[derive(Debug, Clone, Serialize)]
pub struct HistoryIssue {
    pub id: String,
    pub title: String,
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<IssueType>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recurs: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct HistoryEntry {
    pub iteration: u32,
    pub status: String,
    pub timestamp: Option<String>,
    pub score: Option<u64>,
    pub issues: Vec<HistoryIssue>,
}

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

fn read_issue(v: &Value, n: usize) -> Option<HistoryIssue> {
    let o = v.as_object()?;
    let s = |k: &str| o.get(k).and_then(Value::as_str).map(str::to_string);
    let title = s("title").or_else(|| s("description"))?;
    let (mut file, mut line) = (
        s("file"),
        o.get("line").and_then(Value::as_u64).map(|l| l as u32),
    );
    if file.is_none()
        && let Some(loc) = s("location")
    {
        match loc.rsplit_once(':') {
            Some((f, l)) if l.parse::<u32>().is_ok() => {
                file = Some(f.to_string());
                line = l.parse().ok();
            }
            _ => file = Some(loc),
        }
    }
    Some(HistoryIssue {
        id: s("id").unwrap_or_else(|| format!("Q{}", n + 1)),
        title,
        kind: s("type").and_then(|t| IssueType::parse_lenient(&t)),
        file,
        line,
        recurs: s("recurs"),
    })
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
    let history: Vec<HistoryEntry> = match raw_history {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, e)| read_entry(e, &format!("{field}[{i}]"), i, &mut warnings))
            .collect(),
        Some(_) => {
            return Err(InputError::file(
                path,
                format!("`{field}` must be an array"),
            ));
        }
    };
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
        Some(found) => read_issues(found, "qa_signoff.issues_found", &mut warnings),
        None => history.last().map(|h| h.issues.clone()).unwrap_or_default(),
    };
    let occurrences: Vec<Occurrence<'_>> = history
        .iter()
        .flat_map(|h| {
            h.issues.iter().map(move |i| Occurrence {
                iteration: h.iteration,
                id: &i.id,
                key: IssueKey {
                    title: &i.title,
                    kind: i.kind,
                    file: i.file.as_deref(),
                    line: i.line,
                },
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

/// One history entry; what cannot be read is named in `warnings` (`field` is its JSON path).
fn read_entry(e: &Value, field: &str, i: usize, warnings: &mut Vec<String>) -> HistoryEntry {
    if !e.is_object() {
        warnings.push(format!("`{field}` is not an object: skipped its contents"));
    }
    let iteration = match e.get("iteration") {
        None => i as u32 + 1,
        Some(v) => match v.as_u64().and_then(|n| u32::try_from(n).ok()) {
            Some(n) => n,
            None => {
                warnings.push(format!(
                    "`{field}.iteration` is {v}, not a whole number: read as iteration {}",
                    i + 1
                ));
                i as u32 + 1
            }
        },
    };
    HistoryEntry {
        iteration,
        status: e
            .get("status")
            .and_then(Value::as_str)
            .unwrap_or("unknown")
            .to_string(),
        timestamp: e
            .get("timestamp")
            .and_then(Value::as_str)
            .map(str::to_string),
        score: e.get("score").and_then(Value::as_u64),
        issues: e
            .get("issues")
            .map(|v| read_issues(v, &format!("{field}.issues"), warnings))
            .unwrap_or_default(),
    }
}

/// A list of issues; entries without a title (or `description`) are skipped with a warning.
fn read_issues(v: &Value, field: &str, warnings: &mut Vec<String>) -> Vec<HistoryIssue> {
    match v {
        Value::Null => Vec::new(),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .filter_map(|(n, v)| {
                let issue = read_issue(v, n);
                if issue.is_none() {
                    warnings.push(format!(
                        "`{field}[{n}]` has no `title` (or `description`): skipped"
                    ));
                }
                issue
            })
            .collect(),
        _ => {
            warnings.push(format!("`{field}` is not an array: skipped"));
            Vec::new()
        }
    }
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
