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

    let history = merged_history(obj.get("qa_iteration_history"), r);
    let signoff = signoff(&history, r, now);
    let stats = stats(&history);
    obj.insert("qa_signoff".into(), signoff);
    obj.insert("qa_iteration_history".into(), Value::Array(history));
    obj.insert("qa_stats".into(), stats);
    Ok(pretty(&plan, detect_indent(text)))
}

/// The plan's `qa_iteration_history` followed by the run's iterations it does not hold yet.
fn merged_history(plan_history: Option<&Value>, r: &RunReport<'_>) -> Vec<Value> {
    let mut history: Vec<Value> = match plan_history {
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
    history
}

/// `qa_signoff`: the run's status, review session, test results and the latest issues.
fn signoff(history: &[Value], r: &RunReport<'_>, now: &str) -> Value {
    let latest = r.latest();
    // The review iteration (Auto-Claude numbers QA sessions by review, across runs).
    let session = history
        .iter()
        .filter_map(|e| e.get("iteration").and_then(Value::as_u64))
        .max()
        .unwrap_or(0);
    let issues_found: Vec<Value> = latest
        .map(|l| l.issues.iter().map(issue_value).collect())
        .unwrap_or_default();
    json!({
        "status": r.outcome.status().as_str(),
        "qa_session": session,
        "timestamp": now,
        "tests_passed": tests_passed(r),
        "issues_found": issues_found,
        "report_file": "qa_report.md",
        "verified_by": "qa-loop",
    })
}

/// `tests_passed` of the latest verification, per suite kind.
fn tests_passed(r: &RunReport<'_>) -> Map<String, Value> {
    let latest = r.latest();
    // Auto-Claude writes "passed/total" per suite; with no test counts, whether the gate passed.
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
        .collect()
}

/// `qa_stats`: the iteration total, the last iteration and status, and issues counted by type.
fn stats(history: &[Value]) -> Value {
    let mut by_type: std::collections::BTreeMap<String, u64> = Default::default();
    for entry in history {
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
    json!({
        "total_iterations": history.len(),
        "last_iteration": last.and_then(|e| e.get("iteration")).cloned().unwrap_or(Value::Null),
        // The last iteration's status, as Auto-Claude's `record_iteration` sets it.
        "last_status": last.and_then(|e| e.get("status")).cloned().unwrap_or(Value::Null),
        "issues_by_type": by_type,
    })
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
    let Ok(plan) = serde_json::from_str::<Value>(text) else {
        return Vec::new();
    };
    let mut warnings = Vec::new();
    let entries = super::history::read(
        plan.get("qa_iteration_history"),
        "qa_iteration_history",
        &mut warnings,
    )
    .unwrap_or_else(|why| {
        warnings.push(format!("{why}: the run starts without it"));
        Vec::new()
    });
    for w in warnings {
        tracing::warn!("the plan's {w}");
    }
    entries
        .into_iter()
        .map(|e| {
            let status = match e.status.as_str() {
                "approved" => Status::Approved,
                "fixes_applied" => Status::FixesApplied,
                "human_escalation" => Status::HumanEscalation,
                "max_iterations" => Status::MaxIterations,
                "error" => Status::Error,
                _ => Status::Rejected,
            };
            IterationRecord {
                iteration: e.iteration,
                status,
                reviewer_approved: status == Status::Approved,
                score: e.score.unwrap_or(0).min(100) as u8,
                summary: e.summary,
                criteria: Vec::new(),
                issues: e.issues.iter().map(|i| i.to_issue()).collect(),
                suggestions: Vec::new(),
                pre_existing: Vec::new(),
                verification: Default::default(),
                timestamp: e.timestamp.unwrap_or_default(),
                manual_test_plan: None,
                guidance: None,
                reviewed_head: e.reviewed_head,
            }
        })
        .collect()
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Status;

    /// A run continuing a plan reads its history as `status` does: the reviewer's `recurs`
    /// marks kept (both then count the same recurrences), statuses mapped, scores capped.
    #[test]
    fn a_run_reads_the_plan_history_as_status_does() {
        let plan = json!({"qa_iteration_history": [
            {"iteration": 1, "status": "rejected", "score": 140, "issues": [
                {"id": "Q1", "title": "Token logged", "type": "security", "file": "a.py", "line": 3}
            ]},
            {"status": "approved", "issues": [
                {"id": "Q1", "title": "Token still logged at debug level", "type": "security",
                 "file": "a.py", "line": 5, "recurs": "I1.Q1"}
            ]}
        ]});
        let records = history_of(&plan.to_string());
        assert_eq!(records.len(), 2);
        assert_eq!(
            (records[0].score, records[1].iteration, records[1].status),
            (100, 2, Status::Approved)
        );
        assert_eq!(records[1].issues[0].recurs.as_deref(), Some("I1.Q1"));
        assert!(history_of("not json").is_empty());
    }
}
