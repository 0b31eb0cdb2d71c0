//! Issue 48: GitHub's merge queue. On `merge_group` (`checks_requested`) qa-loop verifies the
//! queue's commit — the gates only — and completes the `QA Loop` check run on
//! `merge_group.head_sha`, so a queue that requires the check never stalls: `success` when the
//! group's merge is green, `failure` naming the test when the merge breaks one that each side
//! passes alone (a semantic conflict). `destroyed` does nothing. In all three: no model
//! request, no push, no comment, no issue. The payload is `@octokit/webhooks-examples`' own
//! `merge_group` example, rewritten to the test repository's queue commit.

use super::*;

/// A repository where `main` and pull request #104 are each green alone, and the queue's
/// commit (the PR merged onto the latest `main`) is `broken` or not: `main` renamed `add` to
/// `plus` (updating its own callers) while the PR added a caller of `add`. Returns
/// (`head_sha`, `base_sha`) of the group.
fn queue_repo(dir: &Path, broken: bool) -> (String, String) {
    std::fs::write(dir.join("calc.py"), "def add(a, b):\n    return a + b\n").unwrap();
    std::fs::write(
        dir.join("test_calc.py"),
        "from calc import add\n\ndef test_add():\n    assert add(2, 2) == 4\n",
    )
    .unwrap();
    std::fs::write(
        dir.join(".gitignore"),
        ".qa-loop/\n__pycache__/\n.pytest_cache/\nreports/\nevent.json\nsession.json\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("qa-loop.yml"),
        "risk_level: low\nunit_tests:\n  commands: [\"python3 -m pytest -q -p no:cacheprovider --junitxml=reports/unit.xml\"]\n  junit: [reports/unit.xml]\n",
    )
    .unwrap();
    // No model is asked: an empty session fails the run at the first call.
    std::fs::write(dir.join("session.json"), json!({"calls": []}).to_string()).unwrap();
    git(dir, &["init", "-q", "-b", "main"]);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "base"]);
    // Pull request #104: a caller of `add`, with its test.
    git(dir, &["checkout", "-q", "-b", "feature"]);
    std::fs::write(
        dir.join("total.py"),
        "from calc import add\n\ndef total(xs):\n    t = 0\n    for x in xs:\n        t = add(t, x)\n    return t\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("test_total.py"),
        "from total import total\n\ndef test_total():\n    assert total([1, 2, 3]) == 6\n",
    )
    .unwrap();
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "total"]);
    // Meanwhile on main: another change (a rename, or a harmless one).
    git(dir, &["checkout", "-q", "main"]);
    if broken {
        std::fs::write(dir.join("calc.py"), "def plus(a, b):\n    return a + b\n").unwrap();
        std::fs::write(
            dir.join("test_calc.py"),
            "from calc import plus\n\ndef test_plus():\n    assert plus(2, 2) == 4\n",
        )
        .unwrap();
    } else {
        std::fs::write(dir.join("README.md"), "# calc\n").unwrap();
    }
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "main moves on"]);
    let base = git_out(dir, &["rev-parse", "HEAD"]);
    // The queue's commit, as GitHub makes it: the PR merged onto the latest base, checked out.
    git(dir, &["checkout", "-q", "--detach"]);
    git(
        dir,
        &[
            "merge",
            "-q",
            "--no-ff",
            "-m",
            "Merge pull request #104",
            "feature",
        ],
    );
    let head = git_out(dir, &["rev-parse", "HEAD"]);
    // Each side alone is green.
    for side in ["feature", base.as_str()] {
        let wt = dir.join(format!(".git/side-{}", &side[..6.min(side.len())]));
        git(
            dir,
            &[
                "worktree",
                "add",
                "-q",
                "--detach",
                wt.to_str().unwrap(),
                side,
            ],
        );
        let ok = std::process::Command::new("python3")
            .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
            .current_dir(&wt)
            .output()
            .unwrap();
        assert!(
            ok.status.success(),
            "{side} alone is green: {}",
            String::from_utf8_lossy(&ok.stdout)
        );
        git(
            dir,
            &["worktree", "remove", "--force", wt.to_str().unwrap()],
        );
    }
    (head, base)
}

/// The example payload, rewritten to this repository's queue commit.
fn group_payload(action: &str, head: &str, base: &str) -> Value {
    let mut p = payload("merge_group.checks_requested");
    p["action"] = json!(action);
    p["merge_group"]["head_sha"] = json!(head);
    p["merge_group"]["head_commit"]["id"] = json!(head);
    p["merge_group"]["base_sha"] = json!(base);
    p["merge_group"]["head_ref"] =
        json!(format!("refs/heads/gh-readonly-queue/main/pr-104-{base}"));
    if action == "destroyed" {
        p["reason"] = json!("dequeued");
    }
    p
}

/// Nothing but the check run: no comment, no issue, no label, no review, no push.
fn only_the_check(g: &Gh) {
    assert!(g.comments.is_empty(), "{:?}", g.comments);
    assert!(g.issues.is_empty(), "{:?}", g.issues);
    assert!(g.labels.is_empty() && g.pr_labels.is_empty());
    assert!(g.reviews.is_empty());
    let other: Vec<_> = g
        .requests
        .iter()
        .filter(|r| !r.contains("/check-runs"))
        .collect();
    assert!(
        other.is_empty(),
        "requests other than the check run: {other:?}"
    );
}

fn run_group(dir: &Path, api: &str, action: &str, head: &str, base: &str) -> Output {
    let p = group_payload(action, head, base);
    // The workflow of a merge queue has no key: none is needed.
    actions_run(
        dir,
        api,
        "merge_group",
        &p,
        &[],
        &[("QA_LOOP_API_KEY", ""), ("ANTHROPIC_API_KEY", "")],
    )
}

#[test]
fn a_green_group_completes_the_check_with_success_on_the_queue_commit() {
    let dir = tempfile::tempdir().unwrap();
    let (head, base) = queue_repo(dir.path(), false);
    let gh = Shared::default();
    let api = start(gh.clone());
    let o = run_group(dir.path(), &api, "checks_requested", &head, &base);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_published(&o);
    let g = gh.lock().unwrap();
    assert_eq!(g.check_runs.len(), 1, "{:?}", g.check_runs);
    let run = &g.check_runs[0];
    assert_eq!(run["head_sha"], head.as_str());
    assert_eq!(run["name"], "QA Loop");
    assert_eq!(run["status"], "completed");
    assert_eq!(run["conclusion"], "success", "{run:#}");
    let summary = run["output"]["summary"].as_str().unwrap_or_default();
    // The number is shown, made inert like all text in the report (`#\u{200b}104`).
    assert!(
        summary.contains("pull request #\u{200b}104 merged onto `main`"),
        "{summary}"
    );
    assert!(summary.contains("no model was asked"), "{summary}");
    only_the_check(&g);
    // No push: the remote-less repository still has the queue commit as HEAD, nothing new.
    assert_eq!(git_out(dir.path(), &["rev-parse", "HEAD"]), head);
    let result: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join(".qa-loop/qa-result.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(result["verdict"], "approved", "{result}");
    assert_eq!(result["tokens"]["total"], 0, "no model call: {result}");
}

#[test]
fn a_group_whose_merge_breaks_a_test_fails_the_check_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let (head, base) = queue_repo(dir.path(), true);
    let gh = Shared::default();
    let api = start(gh.clone());
    let o = run_group(dir.path(), &api, "checks_requested", &head, &base);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_published(&o);
    let g = gh.lock().unwrap();
    assert_eq!(g.check_runs.len(), 1, "{:?}", g.check_runs);
    let run = &g.check_runs[0];
    assert_eq!(run["head_sha"], head.as_str());
    assert_eq!(run["conclusion"], "failure", "{run:#}");
    let id = run["id"].as_u64().unwrap();
    let summary = run["output"]["summary"].as_str().unwrap_or_default();
    let annotations = g.annotations.get(&id).cloned().unwrap_or_default();
    let named = summary.contains("test_total")
        || annotations
            .iter()
            .any(|a| a.to_string().contains("test_total"));
    assert!(named, "{summary}\n{annotations:?}");
    only_the_check(&g);
}

#[test]
fn a_destroyed_group_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (head, base) = queue_repo(dir.path(), false);
    let gh = Shared::default();
    let api = start(gh.clone());
    let o = run_group(dir.path(), &api, "destroyed", &head, &base);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("left the queue"), "{}", stderr(&o));
    let g = gh.lock().unwrap();
    assert!(g.check_runs.is_empty());
    assert!(g.requests.is_empty(), "{:?}", g.requests);
    assert!(!dir.path().join(".qa-loop/qa-result.json").exists());
}

/// The queue's commit must be what is checked out: qa-loop refuses to report on another.
#[test]
fn another_checked_out_commit_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (head, base) = queue_repo(dir.path(), false);
    git(dir.path(), &["checkout", "-q", "feature"]);
    let gh = Shared::default();
    let api = start(gh.clone());
    let o = run_group(dir.path(), &api, "checks_requested", &head, &base);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("merge queue's commit"),
        "{}",
        stderr(&o)
    );
    assert!(gh.lock().unwrap().check_runs.is_empty());
}

/// `validate` says which event the workflow runs on and how qa-loop handles it.
#[test]
fn validate_says_how_a_merge_group_is_handled() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("qa-loop.yml"),
        "unit_tests:\n  commands: [\"true\"]\n",
    )
    .unwrap();
    let o = qa_loop(dir.path())
        .arg("validate")
        .env("GITHUB_EVENT_NAME", "merge_group")
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}");
    assert!(
        out.contains("event:  `merge_group`: the gates only on the merge queue's commit"),
        "{out}"
    );
}
