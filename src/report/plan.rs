//! Updating `implementation_plan.json` in the established QA-loop format: `qa_signoff`,
//! `qa_iteration_history`, `qa_stats`. Every other key keeps its value and its place; the file's
//! indentation is kept.

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
    for h in r.history {
        history.push(json!({
            "iteration": offset + h.iteration,
            "status": h.status.as_str(),
            "timestamp": h.timestamp,
            "score": h.score,
            "issues": h.issues,
        }));
    }
    let latest = r.latest();
    let tests_passed: Map<String, Value> =
        [SuiteKind::Unit, SuiteKind::Integration, SuiteKind::E2e]
            .into_iter()
            .map(|k| {
                let v = latest
                    .and_then(|l| l.verification.gate_passed(k.key()))
                    .map_or(Value::Null, Value::Bool);
                (k.short().to_string(), v)
            })
            .collect();
    let session = obj
        .get("qa_signoff")
        .and_then(|s| s.get("qa_session"))
        .and_then(Value::as_u64)
        .unwrap_or(0)
        + 1;
    let signoff = json!({
        "status": r.outcome.status().as_str(),
        "qa_session": session,
        "timestamp": now,
        "tests_passed": tests_passed,
        "issues_found": latest.map(|l| l.issues.clone()).unwrap_or_default(),
    });
    let mut by_type: std::collections::BTreeMap<String, u64> = Default::default();
    for entry in &history {
        for issue in entry
            .get("issues")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(t) = issue.get("type").and_then(Value::as_str) {
                *by_type.entry(t.to_string()).or_default() += 1;
            }
        }
    }
    let last = history.last();
    let stats = json!({
        "total_iterations": history.len(),
        "last_iteration": last.and_then(|e| e.get("iteration")).cloned().unwrap_or(Value::Null),
        "last_status": r.outcome.status().as_str(),
        "issues_by_type": by_type,
    });
    obj.insert("qa_signoff".into(), signoff);
    obj.insert("qa_iteration_history".into(), Value::Array(history));
    obj.insert("qa_stats".into(), stats);
    Ok(pretty(&plan, detect_indent(text)))
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
