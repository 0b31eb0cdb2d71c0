//! SPEC §3.2: on a pull request, the description's `## Acceptance Criteria` checklist is
//! merged after every other source's, and with no criteria anywhere the reviewer judges the
//! change against the PR's title and description — which it is shown.

use super::*;

/// Reviews (review mode, replayed `call`) a PR whose `add` is correct — its tests pass, the
/// verdict decides — with `body` as its description (`None`: the payload's own).
fn review_pr(body: Option<&str>, call: Value) -> (tempfile::TempDir, Output) {
    let dir = tempfile::tempdir().unwrap();
    project(dir.path(), json!([call]));
    std::fs::write(
        dir.path().join("calc.py"),
        "def add(a, b):\n    return a + b\n",
    )
    .unwrap();
    git(dir.path(), &["commit", "-qam", "add adds"]);
    git(dir.path(), &["push", "-q", "origin", "changes"]);
    let api = start(Arc::default());
    let o = run_with_payload(dir.path(), &api, &["--mode", "review"], |p| {
        if let Some(body) = body {
            p["pull_request"]["body"] = json!(body);
        }
    });
    assert_published(&o);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    (dir, o)
}

#[test]
fn the_descriptions_checklist_is_reviewed_against() {
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
    let (dir, o) = review_pr(
        Some(
            "Closes the gap.\r\n\r\n## Acceptance Criteria\r\n\r\n- [ ] Adding two numbers returns their sum\r\n- [x] add(2, 2) is 4\r\n\r\n## Verification\r\n\r\n- [x] ran it on my laptop\r\n",
        ),
        call,
    );
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
    let mut call = verdict("approved", 92);
    call["expect_in_request"] = json!([
        "judge the change against the pull request's title and description below",
        "Update the README with new information.\n\nThis is a pretty simple change that we need to pull into master.",
    ]);
    review_pr(None, call);
}

#[test]
fn a_malformed_checklist_is_named_and_left_out() {
    let mut call = verdict("approved", 92);
    call["expect_in_request"] = json!(["No acceptance criteria were given"]);
    let (_dir, o) = review_pr(Some("## Acceptance Criteria\n\n- [ ] Sums\n- [ ]\n"), call);
    let err = stderr(&o);
    assert!(
        err.contains("pull request #2 description:4") && err.contains("left out"),
        "{err}"
    );
}
