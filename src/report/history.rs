//! One reader of an iteration history — a plan's `qa_iteration_history` (qa-loop's own entries
//! or Auto-Claude's, with fewer fields) or a `qa-result.json`'s `history` — for `qa-loop status`
//! and for a run that continues a plan, so both number, locate and join issues alike. What
//! cannot be read is skipped and named by its JSON path in the warnings.

use serde::Serialize;
use serde_json::Value;

use crate::engine::matcher::IssueKey;
use crate::model::{Issue, IssueType, Severity};

/// One issue as read from a history entry.
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
    /// How many lines the file had when the issue was raised (qa-loop's own entries).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file_lines: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recurs: Option<String>,
    /// The finding's fingerprint (qa-loop's own entries since issue 40): the same problem keeps
    /// it in a later local run too.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
    /// `severity`, else a severity word written as the `type` (Auto-Claude: `"critical"`).
    #[serde(skip)]
    pub severity: Option<Severity>,
    #[serde(skip)]
    pub description: String,
    /// `fix`, else Auto-Claude's `fix_required`.
    #[serde(skip)]
    pub fix: String,
}

impl HistoryIssue {
    /// What the recurring-issue matcher compares.
    pub fn key(&self) -> IssueKey<'_> {
        IssueKey {
            title: &self.title,
            kind: self.kind,
            file: self.file.as_deref(),
            line: self.line,
            file_lines: self.file_lines,
            description: &self.description,
            fix: &self.fix,
        }
    }

    /// As the loop's own issue: an unknown type is `code_quality`, an unknown severity medium.
    pub fn to_issue(&self) -> Issue {
        Issue {
            id: self.id.clone(),
            title: self.title.clone(),
            kind: self.kind.unwrap_or(IssueType::CodeQuality),
            severity: self.severity.unwrap_or(Severity::Medium),
            file: self.file.clone(),
            line: self.line,
            file_lines: self.file_lines,
            description: self.description.clone(),
            fix: self.fix.clone(),
            recurs: self.recurs.clone(),
            introduced: true,
            fingerprint: self.fingerprint.clone(),
        }
    }
}

/// One iteration as read from a history.
#[derive(Debug, Clone, Serialize)]
pub struct HistoryEntry {
    pub iteration: u32,
    /// As written (`rejected`, `approved`, …; `unknown` when absent).
    pub status: String,
    pub timestamp: Option<String>,
    pub score: Option<u64>,
    pub issues: Vec<HistoryIssue>,
    #[serde(skip)]
    pub summary: String,
    /// The commit the review saw (40 hex digits, else none).
    #[serde(skip)]
    pub reviewed_head: Option<String>,
}

/// Reads `history` (the value of the key `field`). Entries that are not objects are skipped;
/// an entry without a readable `iteration` continues the numbering of the one before it.
/// Err when `history` is there but not an array (nothing in it can be read).
pub fn read(
    history: Option<&Value>,
    field: &str,
    warnings: &mut Vec<String>,
) -> Result<Vec<HistoryEntry>, String> {
    let items = match history {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(_) => return Err(format!("`{field}` must be an array")),
    };
    let mut out: Vec<HistoryEntry> = Vec::new();
    for (i, e) in items.iter().enumerate() {
        let path = format!("{field}[{i}]");
        if !e.is_object() {
            warnings.push(format!("`{path}` is not an object: skipped"));
            continue;
        }
        let next = out.last().map_or(1, |l| l.iteration.saturating_add(1));
        let iteration = match e.get("iteration") {
            None => next,
            Some(v) => match v.as_u64().and_then(|n| u32::try_from(n).ok()) {
                Some(n) => n,
                None => {
                    warnings.push(format!(
                        "`{path}.iteration` is {v}, not a whole number: read as iteration {next}"
                    ));
                    next
                }
            },
        };
        let text = |k: &str| e.get(k).and_then(Value::as_str).map(str::to_string);
        out.push(HistoryEntry {
            iteration,
            status: text("status").unwrap_or_else(|| "unknown".to_string()),
            timestamp: text("timestamp"),
            score: e.get("score").and_then(Value::as_u64),
            issues: e
                .get("issues")
                .map(|v| read_issues(v, &format!("{path}.issues"), warnings))
                .unwrap_or_default(),
            summary: text("summary").unwrap_or_default(),
            reviewed_head: text("reviewed_head")
                .filter(|h| h.len() == 40 && h.bytes().all(|b| b.is_ascii_hexdigit())),
        });
    }
    Ok(out)
}

/// A list of issues (`issues`, `issues_found`); entries without a title (or `description`) are
/// skipped with a warning.
pub fn read_issues(v: &Value, field: &str, warnings: &mut Vec<String>) -> Vec<HistoryIssue> {
    match v {
        Value::Null => Vec::new(),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .filter_map(|(n, v)| {
                let issue = read_issue(v, n, &format!("{field}[{n}]"), warnings);
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

/// One issue: qa-loop's keys, or Auto-Claude's (`location` "file:line", `fix_required`, a
/// severity word as the `type`; `apps/backend/prompts/qa_reviewer.md`, PHASE 9).
fn read_issue(v: &Value, n: usize, path: &str, warnings: &mut Vec<String>) -> Option<HistoryIssue> {
    let o = v.as_object()?;
    let s = |k: &str| {
        o.get(k)
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
            .map(str::to_string)
    };
    let title = s("title").or_else(|| s("description"))?;
    let mut line = None;
    if let Some(v) = o.get("line").filter(|v| !v.is_null()) {
        line = v.as_u64().and_then(|l| u32::try_from(l).ok());
        if line.is_none() {
            warnings.push(format!(
                "`{path}.line` is {v}, not a line number: read without a line"
            ));
        }
    }
    let mut file_lines = None;
    if let Some(v) = o.get("file_lines").filter(|v| !v.is_null()) {
        file_lines = v
            .as_u64()
            .filter(|&n| n > 0)
            .and_then(|n| u32::try_from(n).ok());
        if file_lines.is_none() {
            warnings.push(format!(
                "`{path}.file_lines` is {v}, not a line count: read without the file's length"
            ));
        }
    }
    let mut file = s("file");
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
    let kind = s("type").unwrap_or_default();
    Some(HistoryIssue {
        id: s("id").unwrap_or_else(|| format!("Q{}", n + 1)),
        title,
        kind: IssueType::parse_lenient(&kind),
        file,
        line,
        file_lines,
        recurs: s("recurs"),
        fingerprint: s("fingerprint")
            .filter(|f| f.len() <= 64 && f.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')),
        severity: s("severity")
            .and_then(|t| Severity::parse_lenient(&t))
            .or_else(|| Severity::parse_lenient(&kind)),
        description: s("description").unwrap_or_default(),
        fix: s("fix").or_else(|| s("fix_required")).unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_ours_and_auto_claudes_entries_alike() {
        let history = json!([
            {"iteration": 3, "status": "rejected", "issues": [
                {"title": "SQL built by string formatting", "type": "critical",
                 "location": "app/db.py:41", "fix_required": "Use parameters"}
            ]},
            "not an entry",
            {"status": "rejected", "summary": "still failing", "issues": [
                {"id": "Q7", "title": "Query still formatted", "type": "security", "severity": "high",
                 "file": "app/db.py", "line": 44, "description": "f-string", "fix": "bind", "recurs": "I3.Q1"},
                {"type": "security"},
                {"title": "Line as text", "line": "12"}
            ], "reviewed_head": "not-a-sha"}
        ]);
        let mut warnings = Vec::new();
        let entries = read(Some(&history), "qa_iteration_history", &mut warnings).unwrap();
        assert_eq!(
            entries.iter().map(|e| e.iteration).collect::<Vec<_>>(),
            [3, 4],
            "an entry without a number continues from the one before"
        );
        assert_eq!(
            warnings,
            [
                "`qa_iteration_history[1]` is not an object: skipped",
                "`qa_iteration_history[2].issues[1]` has no `title` (or `description`): skipped",
                "`qa_iteration_history[2].issues[2].line` is \"12\", not a line number: read without a line"
            ]
        );
        let ac = &entries[0].issues[0];
        assert_eq!(
            (
                ac.file.as_deref(),
                ac.line,
                ac.kind,
                ac.severity,
                ac.fix.as_str()
            ),
            (
                Some("app/db.py"),
                Some(41),
                None,
                Some(Severity::Critical),
                "Use parameters"
            )
        );
        let issue = ac.to_issue();
        assert_eq!(
            (issue.id.as_str(), issue.kind),
            ("Q1", IssueType::CodeQuality)
        );
        let ours = &entries[1].issues[0];
        assert_eq!(
            (ours.id.as_str(), ours.recurs.as_deref(), ours.severity),
            ("Q7", Some("I3.Q1"), Some(Severity::High))
        );
        assert_eq!(entries[1].summary, "still failing");
        assert_eq!(entries[1].reviewed_head, None);
        assert!(read(Some(&json!({})), "history", &mut warnings).is_err());
        // The numbering cannot overflow.
        let last = json!([{"iteration": u32::MAX}, {"status": "rejected"}]);
        let entries = read(Some(&last), "history", &mut warnings).unwrap();
        assert_eq!(entries[1].iteration, u32::MAX);
    }

    /// qa-loop's own entries carry each file's length; a count that is not a positive whole
    /// number is named and dropped, the issue kept.
    #[test]
    fn file_lengths_are_read_and_bad_ones_named() {
        let history = json!([{"iteration": 1, "issues": [
            {"title": "a", "file": "x.go", "line": 3, "file_lines": 120},
            {"title": "b", "file": "x.go", "line": 3, "file_lines": 0},
            {"title": "c", "file": "x.go", "line": 3, "file_lines": "many"},
            {"title": "d", "file": "x.go", "line": 3, "file_lines": null}
        ]}]);
        let mut warnings = Vec::new();
        let entries = read(Some(&history), "history", &mut warnings).unwrap();
        let lengths: Vec<Option<u32>> = entries[0].issues.iter().map(|i| i.file_lines).collect();
        assert_eq!(lengths, [Some(120), None, None, None]);
        assert_eq!(entries[0].issues[0].key().file_lines, Some(120));
        assert_eq!(entries[0].issues[0].to_issue().file_lines, Some(120));
        assert_eq!(
            warnings,
            [
                "`history[0].issues[1].file_lines` is 0, not a line count: read without the file's length",
                "`history[0].issues[2].file_lines` is \"many\", not a line count: read without the file's length"
            ]
        );
    }
}
