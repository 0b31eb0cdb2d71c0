//! SPEC §3.2: on a pull request, the description's `## Acceptance Criteria` checklist is
//! merged after every other source's, and with no criteria anywhere the reviewer judges the
//! change against the PR's title and description — which it is shown.

use super::*;

/// The PR with `add` correct (its tests pass: the verdict decides).
fn green_project(dir: &Path) {
    project(dir, json!([]));
    std::fs::write(dir.join("calc.py"), "def add(a, b):\n    return a + b\n").unwrap();
    git(dir, &["commit", "-qam", "add adds"]);
    git(dir, &["push", "-q", "origin", "changes"]);
}

fn session_with(dir: &Path, call: Value) {
    std::fs::write(
        dir.join("session.json"),
        json!({"calls": [call]}).to_string(),
    )
    .unwrap();
}

#[test]
fn the_descriptions_checklist_is_reviewed_against() {
    let dir = tempfile::tempdir().unwrap();
    green_project(dir.path());
    let api = start(Arc::default());
    let mut call = verdict("approved", 92);
    call["tool_calls"][0]["arguments"]["criteria"] = json!([
        {"criterion": "Adding two numbers returns their sum", "met": true, "evidence": "calc.py:2"},
        {"criterion": "add(2, 2) is 4", "met": true, "evidence": "test_calc.py:2"}
    ]);
    call["expect_in_request"] = json!([
        "## Acceptance criteria\n\n1. Adding two numbers returns their sum\n2. add(2, 2) is 4\n",
    ]);
    // A template's `## Verification` is what the author did, not a criterion; the description
    // itself is not shown when there are criteria.
    call["expect_not_in_request"] = json!(["ran it on my laptop", "Closes the gap"]);
    session_with(dir.path(), call);
    let o = run_with_payload(dir.path(), &api, &["--mode", "review"], |p| {
        p["pull_request"]["body"] = json!(
            "Closes the gap.\r\n\r\n## Acceptance Criteria\r\n\r\n- [ ] Adding two numbers returns their sum\r\n- [x] add(2, 2) is 4\r\n\r\n## Verification\r\n\r\n- [x] ran it on my laptop\r\n"
        );
    });
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("pull request #2: 2 acceptance criteria from its description"),
        "{}",
        stderr(&o)
    );
    let report = std::fs::read_to_string(dir.path().join(".qa-loop/qa_report.md")).unwrap();
    assert!(
        report.contains("Adding two numbers returns their sum"),
        "{report}"
    );
}

#[test]
fn without_criteria_the_reviewer_is_shown_the_title_and_description() {
    let dir = tempfile::tempdir().unwrap();
    green_project(dir.path());
    let api = start(Arc::default());
    let mut call = verdict("approved", 92);
    call["expect_in_request"] = json!([
        "judge the change against the pull request's title and description below",
        "Update the README with new information.\n\nThis is a pretty simple change that we need to pull into master.",
    ]);
    session_with(dir.path(), call);
    let o = run(dir.path(), &api, &["--mode", "review"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn a_malformed_checklist_is_named_and_left_out() {
    let dir = tempfile::tempdir().unwrap();
    green_project(dir.path());
    let api = start(Arc::default());
    let mut call = verdict("approved", 92);
    call["expect_in_request"] = json!(["No acceptance criteria were given"]);
    session_with(dir.path(), call);
    let o = run_with_payload(dir.path(), &api, &["--mode", "review"], |p| {
        p["pull_request"]["body"] = json!("## Acceptance Criteria\n\n- [ ] Sums\n- [ ]\n");
    });
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("pull request #2 description:4") && err.contains("left out"),
        "{err}"
    );
}
