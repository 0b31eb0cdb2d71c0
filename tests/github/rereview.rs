//! Issue 23, point 1: a second push after a rejected run is re-reviewed from what changed since
//! the commit the last review saw — the previous verdict, its open issues, the new commits and
//! their diff — not the whole change again; a force-pushed branch is reviewed in full, and says
//! so. The replayed model reports each request's estimated size (`"usage": "estimated"`), so
//! the input tokens are those a real model would be sent.

use super::*;

/// A line of the large module only a full review shows.
const DEEP_LINE: &str = "STOCK_LEVEL_0250";

/// The PR adds a 600-line module besides `calc.py` (committed and pushed).
fn large_change(dir: &Path) {
    let module: String = (0..600)
        .map(|i| {
            format!(
                "STOCK_LEVEL_{i:04} = {{'sku': 'item-{i}', 'reorder_at': {}}}\n",
                i % 17
            )
        })
        .collect();
    std::fs::write(dir.join("inventory.py"), module).unwrap();
    git(dir, &["add", "inventory.py"]);
    git(dir, &["commit", "-q", "-m", "add the inventory table"]);
    git(dir, &["push", "-q", "origin", "changes"]);
}

fn session(dir: &Path, call: Value) {
    std::fs::write(
        dir.join("session.json"),
        json!({"usage": "estimated", "calls": [call]}).to_string(),
    )
    .unwrap();
}

fn input_tokens(dir: &Path) -> u64 {
    qa_result(dir)["tokens"]["input"].as_u64().unwrap()
}

#[test]
fn a_second_push_is_reviewed_from_the_delta_and_a_force_push_in_full() {
    let dir = tempfile::tempdir().unwrap();
    project(dir.path(), json!([]));
    large_change(dir.path());
    let gh: Shared = Arc::default();
    let api = start(gh.clone());

    // Run 1: a full review, rejected (add subtracts).
    let mut first = verdict("rejected", 50);
    first["expect_in_request"] = json!(["## The change (git diff)", DEEP_LINE]);
    session(dir.path(), first);
    let o = run(dir.path(), &api, &["--mode", "review"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let head1 = git_out(dir.path(), &["rev-parse", "HEAD"]);
    assert_eq!(
        qa_result(dir.path())["history"][0]["reviewed_head"],
        json!(head1),
        "the review recorded the commit it saw"
    );
    let full_first = input_tokens(dir.path());

    // The author pushes a fix of their own.
    std::fs::write(
        dir.path().join("calc.py"),
        "def add(a, b):\n    return a + b\n",
    )
    .unwrap();
    git(dir.path(), &["commit", "-qam", "make add add"]);
    git(dir.path(), &["push", "-q", "origin", "changes"]);

    // Run 2: the reviewer's first request holds the delta, the open issue and the previous
    // verdict — and none of the unchanged module.
    let mut second = verdict("approved", 92);
    second["expect_in_request"] = json!([
        format!(
            "## What changed since the last review (`{}`..HEAD)",
            &head1[..7]
        ),
        "by t: make add add",
        "+    return a + b",
        "## Open issues of the last review (iteration 1)",
        "`I1.Q1` [unit_test] add subtracts (calc.py:2)",
        "The last review (iteration 1) rejected it with score 50",
        "`inventory.py` (",
    ]);
    second["expect_not_in_request"] = json!([DEEP_LINE, "## The change (git diff)"]);
    session(dir.path(), second);
    let o = run(dir.path(), &api, &["--mode", "review"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let delta = input_tokens(dir.path());

    // The same change reviewed without earlier state (a new comment thread): in full.
    let fresh: Shared = Arc::default();
    let fresh_api = start(fresh.clone());
    let mut full = verdict("approved", 92);
    full["expect_in_request"] = json!(["## The change (git diff)", DEEP_LINE]);
    session(dir.path(), full);
    let o = run(dir.path(), &fresh_api, &["--mode", "review"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let full_second = input_tokens(dir.path());
    eprintln!(
        "reviewer input tokens — first review: {full_first}, re-review after the second push: {delta}, full review of the same change: {full_second}"
    );
    assert!(
        delta * 3 < full_second,
        "the re-review ({delta}) costs under a third of a full review ({full_second})"
    );

    // The branch is rewritten (force-pushed): the reviewed commits are gone from its history.
    git(dir.path(), &["reset", "-q", "--soft", "master"]);
    git(dir.path(), &["commit", "-q", "-m", "one squashed commit"]);
    git(dir.path(), &["push", "-q", "-f", "origin", "changes"]);
    let mut third = verdict("approved", 92);
    third["expect_in_request"] = json!([
        "is no longer in the branch's history",
        "## The change (git diff)",
        DEEP_LINE
    ]);
    third["expect_not_in_request"] = json!(["## What changed since the last review"]);
    session(dir.path(), third);
    let o = run(dir.path(), &api, &["--mode", "review"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(qa_result(dir.path())["iterations"], 3);
}
