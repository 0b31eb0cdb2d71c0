//! The loop's own cost (issue 41): nothing is verified twice. A fix that changed nothing leaves
//! the tree as it was verified: its results are reused, the suite does not run again; a fix that
//! changed the tree runs it again. The suite counts its runs in an ignored file (outside the tree
//! qa-loop compares).

mod support;
use std::path::Path;
use support::*;

use serde_json::{Value, json};

fn project(d: &Path, fixer: Vec<Value>) {
    std::fs::write(d.join("flag.txt"), "broken\n").unwrap();
    let config = json!({"risk_level": "low", "max_iterations": 2, "recurring_threshold": 5, "min_score": 0, "failure_analysis": false,
        "unit_tests": {"required": true, "allow_no_tests": true,
            "commands": ["echo run >> runs.log; grep -q fixed flag.txt"]}});
    std::fs::write(d.join("qa-loop.json"), config.to_string()).unwrap();
    std::fs::write(d.join(".gitignore"), ".qa-loop/\nsession.json\nruns.log\n").unwrap();
    git(d, &["init", "-q"]);
    git(d, &["add", "-A"]);
    git(d, &["commit", "-q", "-m", "init"]);
    let verdict = json!({"role": "reviewer", "tool_calls": [{"id": "v", "name": "submit_verdict", "arguments": {
        "status": "rejected", "score": 30, "confidence": 0.9, "summary": "s", "criteria": [], "issues": []}}]});
    let finish = json!({"role": "fixer", "tool_calls": [{"id": "f", "name": "finish", "arguments": {"summary": "done"}}]});
    let mut calls = vec![verdict.clone()];
    calls.extend(fixer);
    calls.push(finish);
    calls.push(verdict);
    std::fs::write(
        d.join("session.json"),
        json!({ "calls": calls }).to_string(),
    )
    .unwrap();
}

fn runs(d: &Path) -> usize {
    std::fs::read_to_string(d.join("runs.log"))
        .unwrap_or_default()
        .lines()
        .count()
}

#[test]
fn a_fix_that_changed_nothing_reuses_the_results_of_the_same_tree() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    project(d, vec![]);
    let o = replay_run(d, &[]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(runs(d), 1, "the unchanged tree was verified twice");
    let r = qa_result(d);
    assert_eq!(r["history"][1]["verification"]["reused_from"], 1, "{r:#}");
    let report = std::fs::read_to_string(d.join(".qa-loop/qa_report.md")).unwrap();
    assert!(
        report.contains("the same as the one verified in pass 1"),
        "{report}"
    );

    // A fix that changes the tree (not yet right) runs the suite again.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let write = json!({"role": "fixer", "tool_calls": [{"id": "w", "name": "write_file",
        "arguments": {"path": "flag.txt", "content": "still broken\n"}}]});
    project(d, vec![write]);
    let o = replay_run(d, &[]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(runs(d), 2);
    let r = qa_result(d);
    assert!(r["history"][1]["verification"].get("reused_from").is_none());
}
