//! The QA state of `implementation_plan.json`, in the established QA-loop format: `qa_signoff`,
//! `qa_iteration_history`, `qa_stats`. Read at the start of a local run (its history is the
//! loop's memory across runs, as the sticky comment's state is on a pull request) and written
//! at the end. Every other key keeps its value and its place; the file's indentation is kept.

use serde_json::{Map, Value, json};

use super::RunReport;
use crate::config::SuiteKind;

/// Returns the updated plan text.
pub fn update(text: &str, r: &RunReport<'_>, now: &str) -> Result<String, String> {
    let mut plan: Value =
        serde_json::from_str(text).map_err(|e| format!("the plan is not valid JSON: {e}"))?;
    let obj = plan
        .as_object_mut()
        .ok_or("the plan is not a JSON object")?;

    let mut history: Vec<Value> = match obj.get("qa_iteration_history") {
        Some(Value::Array(a)) => a.clone(),
        _ => Vec::new(),
    };
    let offset = history
        .iter()
        .filter_map(|e| e.get("iteration").and_then(Value::as_u64))
        .max()
        .unwrap_or(0) as u32;
    // The run continued the plan's numbering (its history seeded the loop): only the
    // iterations past the plan's are new. A run that started elsewhere (a pull request's
    // state) appends what it holds beyond the plan's last iteration.
    for h in r.history.iter().filter(|h| h.iteration > offset) {
        let mut entry = json!({
            "iteration": h.iteration,
            "status": h.status.as_str(),
            "timestamp": h.timestamp,
            "score": h.score,
            "issues": h.issues.iter().map(issue_value).collect::<Vec<_>>(),
        });
        if let Some(head) = &h.reviewed_head {
            entry["reviewed_head"] = json!(head);
        }
        history.push(entry);
    }
    let latest = r.latest();
    // Auto-Claude writes "passed/total" per suite; with no test counts, whether the gate passed.
    let tests_passed: Map<String, Value> =
        [SuiteKind::Unit, SuiteKind::Integration, SuiteKind::E2e]
            .into_iter()
            .map(|k| {
                let v = latest.map_or(Value::Null, |l| {
                    let counts = l
                        .verification
                        .tests
                        .iter()
                        .find(|t| t.suite == k.key() && t.counts.tests > 0)
                        .map(|t| t.counts);
                    match (counts, l.verification.gate_passed(k.key())) {
                        (Some(c), _) => Value::String(format!("{}/{}", c.passed, c.tests)),
                        (None, Some(passed)) => Value::Bool(passed),
                        (None, None) => Value::Null,
                    }
                });
                (k.short().to_string(), v)
            })
            .collect();
    // The review iteration (Auto-Claude numbers QA sessions by review, across runs).
    let session = history
        .iter()
        .filter_map(|e| e.get("iteration").and_then(Value::as_u64))
        .max()
        .unwrap_or(0);
    let issues_found: Vec<Value> = latest
        .map(|l| l.issues.iter().map(issue_value).collect())
        .unwrap_or_default();
    let signoff = json!({
        "status": r.outcome.status().as_str(),
        "qa_session": session,
        "timestamp": now,
        "tests_passed": tests_passed,
        "issues_found": issues_found,
        "report_file": "qa_report.md",
        "verified_by": "qa-loop",
    });
    let mut by_type: std::collections::BTreeMap<String, u64> = Default::default();
    for entry in &history {
        for issue in entry
            .get("issues")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            // Auto-Claude counts an issue without a type as `unknown`.
            let t = issue
                .get("type")
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty())
                .unwrap_or("unknown");
            *by_type.entry(t.to_string()).or_default() += 1;
        }
    }
    let last = history.last();
    let stats = json!({
        "total_iterations": history.len(),
        "last_iteration": last.and_then(|e| e.get("iteration")).cloned().unwrap_or(Value::Null),
        // The last iteration's status, as Auto-Claude's `record_iteration` sets it.
        "last_status": last.and_then(|e| e.get("status")).cloned().unwrap_or(Value::Null),
        "issues_by_type": by_type,
    });
    obj.insert("qa_signoff".into(), signoff);
    obj.insert("qa_iteration_history".into(), Value::Array(history));
    obj.insert("qa_stats".into(), stats);
    Ok(pretty(&plan, detect_indent(text)))
}

/// An issue as qa-loop writes it plus Auto-Claude's keys (`location` "file:line",
/// `fix_required`; `apps/backend/prompts/qa_reviewer.md`, PHASE 9), so both read it.
fn issue_value(issue: &crate::model::Issue) -> Value {
    let mut v = serde_json::to_value(issue).expect("an issue serializes");
    if let Some(obj) = v.as_object_mut() {
        if let Some(file) = &issue.file {
            let location = match issue.line {
                Some(l) => format!("{file}:{l}"),
                None => file.clone(),
            };
            obj.insert("location".into(), location.into());
        }
        if !issue.fix.is_empty() {
            obj.insert("fix_required".into(), issue.fix.clone().into());
        }
    }
    v
}

/// The plan's `qa_iteration_history` as the loop's earlier iterations (ours, or Auto-Claude's
/// entries with fewer fields): numbering, recurrences and the iteration total continue from it.
/// Entries that cannot be read are skipped with a warning naming them.
pub fn history_of(text: &str) -> Vec<crate::engine::IterationRecord> {
    use crate::engine::{IterationRecord, Status};
    use crate::model::{Issue, IssueType, Severity};
    let Ok(plan) = serde_json::from_str::<Value>(text) else {
        return Vec::new();
    };
    let entries = plan
        .get("qa_iteration_history")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut out: Vec<IterationRecord> = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        let Some(e) = e.as_object() else {
            tracing::warn!("qa_iteration_history[{i}] is not an object: skipped");
            continue;
        };
        let iteration = e
            .get("iteration")
            .and_then(Value::as_u64)
            .map_or(out.last().map_or(1, |l| l.iteration + 1), |n| n as u32);
        let status = match e.get("status").and_then(Value::as_str).unwrap_or_default() {
            "approved" => Status::Approved,
            "fixes_applied" => Status::FixesApplied,
            "human_escalation" => Status::HumanEscalation,
            "max_iterations" => Status::MaxIterations,
            "error" => Status::Error,
            _ => Status::Rejected,
        };
        let text_of = |v: &Value, k: &str| {
            v.get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let issues: Vec<Issue> = e
            .get("issues")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
            .filter_map(|(k, v)| {
                let title = Some(text_of(v, "title"))
                    .filter(|t| !t.is_empty())
                    .or_else(|| Some(text_of(v, "description")).filter(|t| !t.is_empty()))?;
                // Auto-Claude's reviewer writes `location` ("file:line"), `fix_required`, and
                // a severity word as the `type` ("critical").
                let (loc_file, loc_line) = match text_of(v, "location").rsplit_once(':') {
                    Some((f, l)) if l.parse::<u32>().is_ok() => (f.to_string(), l.parse().ok()),
                    _ => (text_of(v, "location"), None),
                };
                let kind = text_of(v, "type");
                Some(Issue {
                    id: Some(text_of(v, "id"))
                        .filter(|t| !t.is_empty())
                        .unwrap_or(format!("Q{}", k + 1)),
                    title,
                    kind: IssueType::parse_lenient(&kind).unwrap_or(IssueType::CodeQuality),
                    severity: Severity::parse_lenient(&text_of(v, "severity"))
                        .or_else(|| Severity::parse_lenient(&kind))
                        .unwrap_or(Severity::Medium),
                    file: Some(text_of(v, "file"))
                        .filter(|t| !t.is_empty())
                        .or_else(|| Some(loc_file).filter(|t| !t.is_empty())),
                    line: v
                        .get("line")
                        .and_then(Value::as_u64)
                        .map(|l| l as u32)
                        .or(loc_line),
                    description: text_of(v, "description"),
                    fix: Some(text_of(v, "fix"))
                        .filter(|t| !t.is_empty())
                        .unwrap_or_else(|| text_of(v, "fix_required")),
                    recurs: None,
                })
            })
            .collect();
        out.push(IterationRecord {
            iteration,
            status,
            reviewer_approved: status == Status::Approved,
            score: e.get("score").and_then(Value::as_u64).unwrap_or(0).min(100) as u8,
            summary: text_of(&Value::Object(e.clone()), "summary"),
            criteria: Vec::new(),
            issues,
            verification: Default::default(),
            timestamp: text_of(&Value::Object(e.clone()), "timestamp"),
            manual_test_plan: None,
            guidance: None,
            reviewed_head: e
                .get("reviewed_head")
                .and_then(Value::as_str)
                .filter(|h| h.len() == 40 && h.bytes().all(|b| b.is_ascii_hexdigit()))
                .map(str::to_string),
        });
    }
    out
}

/// The indentation of the first indented line (two spaces when none).
fn detect_indent(text: &str) -> String {
    text.lines()
        .find_map(|l| {
            let ws: String = l.chars().take_while(|c| *c == ' ' || *c == '\t').collect();
            (!ws.is_empty()).then_some(ws)
        })
        .unwrap_or_else(|| "  ".to_string())
}

fn pretty(value: &Value, indent: String) -> String {
    use serde::Serialize;
    let mut buf = Vec::new();
    let fmt = serde_json::ser::PrettyFormatter::with_indent(indent.as_bytes());
    let mut ser = serde_json::Serializer::with_formatter(&mut buf, fmt);
    value.serialize(&mut ser).expect("a JSON value serializes");
    String::from_utf8(buf).expect("JSON is UTF-8") + "\n"
}
