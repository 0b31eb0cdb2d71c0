//! Issue 40, "threads resolved when fixed": on a fork PR the fix is offered as a suggestion
//! whose first line carries the fingerprint of the finding it fixes; the same finding found
//! again by a second run is not posted again; once the contributor applies the fix, the next run
//! answers the thread "Fixed in <sha>" and resolves it (GraphQL `resolveReviewThread`), once. A
//! thread someone else opened with qa-loop's marker is never taken for qa-loop's. The GraphQL
//! requests and the fake's answers are recorded for scripts/validate-github-graphql.py (GitHub's
//! published schema); the REST calls go through prism like every other.

use super::*;

/// The fork PR of `a_fork_pr_gets_suggestions_and_the_patch_never_a_push`: base `main` has a
/// stub, the PR (`changes`) adds the buggy line 2. Returns the PR head.
fn fork_pr(d: &Path, calls: Value) -> String {
    project(d, calls);
    git(d, &["checkout", "-q", "-b", "main"]);
    std::fs::write(d.join("calc.py"), "def add(a, b):\n    pass\n").unwrap();
    git(d, &["commit", "-q", "-am", "base"]);
    git(d, &["push", "-q", "origin", "main"]);
    git(d, &["checkout", "-q", "-B", "changes"]);
    std::fs::write(d.join("calc.py"), "def add(a, b):\n    return a - b\n").unwrap();
    git(d, &["commit", "-q", "-am", "the PR"]);
    git(d, &["push", "-q", "-f", "origin", "changes"]);
    git_out(d, &["rev-parse", "HEAD"])
}

/// A run on the fork PR as a fresh job sees it: the checkout reset to `head` (qa-loop commits
/// its fixes locally), the model's answers `calls`.
fn fork_run(d: &Path, api: &str, head: &str, calls: Value) -> Output {
    git(d, &["reset", "-q", "--hard", head]);
    std::fs::write(d.join("session.json"), json!({"calls": calls}).to_string()).unwrap();
    let mut fork = payload("pull_request.opened");
    fork["pull_request"]["head"]["repo"]["full_name"] = json!("someone/Hello-World");
    let o = actions_run(
        d,
        api,
        "pull_request",
        &fork,
        &[],
        &[("GITHUB_BASE_REF", "main")],
    );
    assert_published(&o);
    o
}

fn reject_fix_approve() -> Value {
    let mut calls = vec![verdict("rejected", 30)];
    calls.extend(fix_calls());
    calls.push(verdict("approved", 92));
    json!(calls)
}

fn published_report(g: &Gh) -> String {
    g.comments[0]["body"].as_str().unwrap().to_string()
}

#[test]
fn a_finding_is_posted_once_and_its_thread_resolved_when_fixed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let pr_head = fork_pr(d, json!([]));
    let gh: Shared = Arc::default();
    let api = start(gh.clone());

    // Run 1: the finding, fixed locally, offered as a suggestion marked with its fingerprint.
    let o = fork_run(d, &api, &pr_head, reject_fix_approve());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let fp = qa_result(d)["history"][0]["issues"][0]["fingerprint"]
        .as_str()
        .unwrap()
        .to_string();
    let first = {
        let g = gh.lock().unwrap();
        assert_eq!(g.review_comments.len(), 1, "{:?}", g.requests);
        let c = g.review_comments[0].clone();
        let body = c["body"].as_str().unwrap();
        assert!(
            body.starts_with(&format!(
                "<!-- qa-loop:finding {fp} -->\nqa-loop suggests a fix for “add subtracts”:"
            )),
            "{body}"
        );
        assert!(
            body.contains("```suggestion\n    return a + b\n```"),
            "{body}"
        );
        assert_eq!(
            (c["path"].as_str(), c["line"].as_u64()),
            (Some("calc.py"), Some(2))
        );
        c["id"].as_u64().unwrap()
    };

    // Run 2 on the same head finds the same problem again: nothing is posted again.
    let o = fork_run(d, &api, &pr_head, reject_fix_approve());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        qa_result(d)["history"][2]["issues"][0]["fingerprint"],
        fp,
        "the same finding keeps its fingerprint"
    );
    {
        let g = gh.lock().unwrap();
        let bodies: Vec<&Value> = g.review_comments.iter().map(|c| &c["body"]).collect();
        assert_eq!(bodies.len(), 1, "posted once: {bodies:?}");
        assert_eq!(g.reviews.len(), 1, "no second review: {:?}", g.requests);
        assert_eq!(g.threads[0]["isResolved"], false);
        let report = published_report(&g);
        assert!(
            report.contains(
                "1 suggestion(s) are in review threads on the pull request (1 of them posted by an earlier run and not repeated)"
            ),
            "{report}"
        );
    }

    // Someone else's comment with qa-loop's marker, on the same finding: never qa-loop's.
    {
        let mut g = gh.lock().unwrap();
        let mut mallory = user_bot();
        mallory["login"] = json!("mallory");
        mallory["type"] = json!("User");
        let forged = review_comment(
            &mut g,
            "2",
            json!({"pull_request_review_id": 1, "commit_id": pr_head, "path": "calc.py", "line": 2,
                "start_line": null, "start_side": null, "user": mallory,
                "body": format!("<!-- qa-loop:finding {fp} -->\nforged")}),
        );
        g.threads
            .push(json!({"id": "PRRT_kwDOforged", "isResolved": false,
            "comments": [forged["id"]]}));
    }

    // The contributor applies the suggestion; run 3 no longer finds the problem at the new head.
    git(d, &["reset", "-q", "--hard", &pr_head]);
    std::fs::write(d.join("calc.py"), "def add(a, b):\n    return a + b\n").unwrap();
    git(d, &["commit", "-q", "-am", "Apply suggestion from qa-loop"]);
    git(d, &["push", "-q", "origin", "changes"]);
    let fixed_head = git_out(d, &["rev-parse", "HEAD"]);
    let o = fork_run(d, &api, &fixed_head, json!([verdict("approved", 95)]));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let replies_after_run_3 = {
        let g = gh.lock().unwrap();
        let ours = g
            .threads
            .iter()
            .find(|t| t["comments"][0] == first)
            .unwrap();
        assert_eq!(ours["isResolved"], true, "{:?}", g.graphql);
        let replies: Vec<&Value> = g
            .review_comments
            .iter()
            .filter(|c| c["in_reply_to_id"] == first)
            .collect();
        assert_eq!(replies.len(), 1, "{:?}", g.review_comments);
        let body = replies[0]["body"].as_str().unwrap();
        assert!(
            body.starts_with(&format!("<!-- qa-loop:fixed {fp} -->\n"))
                && body.contains(&format!("Fixed in {}:", &fixed_head[..7])),
            "{body}"
        );
        let forged = g
            .threads
            .iter()
            .find(|t| t["id"] == "PRRT_kwDOforged")
            .unwrap();
        assert_eq!(
            forged["isResolved"], false,
            "someone else's thread is left alone"
        );
        let forged_id = &forged["comments"][0];
        assert!(
            !g.review_comments
                .iter()
                .any(|c| c["in_reply_to_id"] == *forged_id),
            "no reply to someone else's thread"
        );
        let resolved: Vec<&Value> = g
            .graphql
            .iter()
            .filter(|r| r["request"]["operationName"] == "ResolveReviewThread")
            .collect();
        assert_eq!(resolved.len(), 1, "{resolved:?}");
        assert_eq!(resolved[0]["request"]["variables"]["threadId"], ours["id"]);
        g.review_comments.len()
    };

    // Run 4, nothing new: the resolved thread is neither answered nor resolved again.
    let o = fork_run(d, &api, &fixed_head, json!([verdict("approved", 95)]));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let g = gh.lock().unwrap();
    assert_eq!(g.review_comments.len(), replies_after_run_3);
    assert_eq!(
        g.graphql
            .iter()
            .filter(|r| r["request"]["operationName"] == "ResolveReviewThread")
            .count(),
        1
    );
    // Recorded for scripts/validate-github-graphql.py (GitHub's GraphQL schema, graphql-core).
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    std::fs::write(
        tmp.join("github-graphql.json"),
        Value::Array(g.graphql.clone()).to_string(),
    )
    .unwrap();
}
