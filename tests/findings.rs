//! Findings teams can live with (issue 40), end to end with the real binary and a replayed
//! reviewer: a nit below the `fix_severity` bar is reported and never fixed; a defect that was
//! there before the change is listed apart and does not block, while a false "pre-existing"
//! claim on a line the change adds counts as introduced; every finding carries a fingerprint.

mod support;
use std::path::Path;
use support::*;

use serde_json::{Value, json};

const BASE: &str = "def div(a, b):\n    return a / b\n\n\ndef add(a, b):\n    return a + b\n";
/// The change adds `mul` (lines 9–10) to what was there.
const CHANGED: &str = "def div(a, b):\n    return a / b\n\n\ndef add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n";

/// A committed base and an uncommitted change (the local diff base is `HEAD`); a suite that
/// passes; the reviewer's `calls`.
fn project(d: &Path, config: Value, calls: Vec<Value>) {
    std::fs::write(d.join("calc.py"), BASE).unwrap();
    std::fs::write(d.join("qa-loop.json"), config.to_string()).unwrap();
    std::fs::write(d.join(".gitignore"), ".qa-loop/\nsession.json\n").unwrap();
    git(d, &["init", "-q"]);
    git(d, &["add", "-A"]);
    git(d, &["commit", "-q", "-m", "base"]);
    std::fs::write(d.join("calc.py"), CHANGED).unwrap();
    std::fs::write(
        d.join("session.json"),
        json!({ "calls": calls }).to_string(),
    )
    .unwrap();
}

fn config(extra: Value) -> Value {
    let mut c = json!({"risk_level": "low", "max_iterations": 2,
        "unit_tests": {"required": true, "commands": ["true"], "allow_no_tests": true}});
    c.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    c
}

fn verdict(status: &str, issues: Value) -> Value {
    json!({"role": "reviewer", "tool_calls": [{"id": "v", "name": "submit_verdict", "arguments": {
        "status": status, "score": if status == "approved" { 95 } else { 60 }, "confidence": 0.9,
        "summary": "s", "criteria": [], "issues": issues}}]})
}

fn nit() -> Value {
    json!({"id": "Q1", "title": "Name `mul` more descriptively", "type": "code_quality",
           "severity": "low", "file": "calc.py", "line": 9, "fix": "rename it to multiply"})
}

/// `fix_severity: medium`: the reviewer rejects for one low nit only. The run is approved in
/// its first iteration (the session holds no fixer call: a fix would fail the run); the nit is
/// a suggestion in `qa-result.json`, the report and the JUnit file, with a fingerprint.
#[test]
fn a_nit_below_the_bar_is_reported_and_never_fixed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    project(
        d,
        config(json!({"fix_severity": "medium"})),
        vec![verdict("rejected", json!([nit()]))],
    );
    let o = replay_run(d, &[]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "approved: {stderr}");
    let r = qa_result(d);
    let first = &r["history"][0];
    assert_eq!(first["issues"], json!([]), "{first:#}");
    let s = &first["suggestions"][0];
    assert_eq!(s["title"], "Name `mul` more descriptively");
    assert_eq!(s["fingerprint"].as_str().map(str::len), Some(16), "{s:#}");
    let report = std::fs::read_to_string(d.join(".qa-loop/qa_report.md")).unwrap();
    assert!(
        report.contains("## Suggestions (below the `fix_severity` bar"),
        "{report}"
    );
    let junit = std::fs::read_to_string(d.join(".qa-loop/qa-loop-junit.xml")).unwrap();
    assert!(
        junit.contains("suggestion (low is below the fix_severity bar)"),
        "{junit}"
    );
    // The default bar (`low`) keeps today's behaviour: the same nit blocks and goes to the fixer.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let finish = json!({"role": "fixer", "tool_calls": [{"id": "f", "name": "finish", "arguments": {"summary": "renamed"}}]});
    project(
        d,
        config(json!({})),
        vec![
            verdict("rejected", json!([nit()])),
            finish,
            verdict("approved", json!([])),
        ],
    );
    let o = replay_run(d, &[]);
    assert_eq!(o.status.code(), Some(0));
    let r = qa_result(d);
    assert_eq!(
        r["history"].as_array().unwrap().len(),
        2,
        "a fix iteration ran"
    );
    assert_eq!(r["history"][0]["issues"][0]["title"], nit()["title"]);
}

/// The division by zero at `calc.py:2` was on the base: the reviewer says `introduced: false`,
/// the line is not one the change adds, so it is listed apart and the run is approved. The same
/// claim about `calc.py:10` — a line the change adds — counts as introduced and blocks.
#[test]
fn a_pre_existing_defect_is_apart_and_a_false_claim_counts_as_introduced() {
    let old = json!({"id": "Q1", "title": "div() divides by zero when b is 0", "type": "error_handling",
        "severity": "high", "file": "calc.py", "line": 2, "fix": "raise ValueError", "introduced": false});
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    project(
        d,
        config(json!({})),
        vec![verdict("rejected", json!([old.clone()]))],
    );
    let o = replay_run(d, &[]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "approved: {stderr}");
    let r = qa_result(d);
    let first = &r["history"][0];
    assert_eq!(first["issues"], json!([]), "{first:#}");
    assert_eq!(first["pre_existing"][0]["line"], 2, "{first:#}");
    assert_eq!(first["pre_existing"][0]["introduced"], false);
    let report = std::fs::read_to_string(d.join(".qa-loop/qa_report.md")).unwrap();
    assert!(report.contains("## Pre-existing issues"), "{report}");

    let mut false_claim = old;
    false_claim["title"] = json!("mul() overflows on large ints");
    false_claim["line"] = json!(10);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    project(
        d,
        config(json!({})),
        vec![verdict("rejected", json!([false_claim]))],
    );
    let o = replay_run(d, &["--mode", "review"]);
    assert_eq!(o.status.code(), Some(1), "rejected");
    let r = qa_result(d);
    let first = &r["history"][0];
    assert_eq!(first["issues"][0]["line"], 10, "{first:#}");
    assert!(
        first["issues"][0].get("introduced").is_none(),
        "introduced (the default)"
    );
    assert!(first.get("pre_existing").is_none(), "{first:#}");
}
