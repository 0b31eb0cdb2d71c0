//! Issue 18, point 1: a blocking gate disappeared when the diff base could not be resolved — a
//! change adding a private key was approved with `origin/<base>` not fetched (the
//! `actions/checkout` default), with git refusing the checkout ("dubious ownership") and outside
//! a repository. Now the base is fetched (the shallow clone deepened), git is told the checkout is
//! safe in its own config only, and a base that still cannot be found fails the pattern checks
//! with the reason.

use super::*;

const KEY: &str = "-----BEGIN RSA PRIVATE KEY-----\nMIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf9Cnzj4p4WGeKLs1Pt8Qu\n-----END RSA PRIVATE KEY-----\n";

/// The project with a private key committed on the PR branch (pushed), reviewed as approved.
fn project_with_key(dir: &Path) {
    project(dir, json!([verdict("approved", 95)]));
    std::fs::write(dir.join("deploy.pem"), KEY).unwrap();
    git(dir, &["add", "deploy.pem"]);
    git(dir, &["commit", "-q", "-m", "add the deploy key"]);
    git(dir, &["push", "-q", "origin", "changes"]);
}

/// `actions/checkout`'s default: one commit of the PR branch, no base branch. qa-loop fetches
/// the base and deepens the clone until they share history, then finds the key.
#[test]
fn a_shallow_checkout_gets_its_base_fetched_and_the_key_found() {
    let dir = tempfile::tempdir().unwrap();
    project_with_key(dir.path());
    let remote = dir.path().join(".git/remote.git");
    let work = tempfile::tempdir().unwrap();
    let clone = work.path().join("w");
    git(
        work.path(),
        &[
            "clone",
            "-q",
            "--depth",
            "1",
            "-b",
            "changes",
            &format!("file://{}", remote.display()),
            "w",
        ],
    );
    std::fs::copy(dir.path().join("session.json"), clone.join("session.json")).unwrap();
    assert!(!git_ok(&clone, &["rev-parse", "--verify", "origin/master"]));
    let gh: Shared = Arc::default();
    let api = start(gh.clone());
    let o = run_with_payload(&clone, &api, &[], |_| {});
    assert_ne!(o.status.code(), Some(0), "{}", stderr(&o));
    let g = gate_of(&qa_result(&clone), "patterns");
    assert_eq!(g["status"], "failed", "{g}");
    assert!(
        qa_result(&clone)["issues"]
            .to_string()
            .contains("deploy.pem"),
        "{g} {}",
        stderr(&o)
    );
    // The clone now holds the base and enough history for the merge base.
    assert!(git_ok(&clone, &["merge-base", "origin/master", "HEAD"]));
}

/// A base branch that cannot be fetched (gone from the remote): the pattern checks fail with the
/// reason, the reviewer is told the diff is unavailable, and nothing is approved.
#[test]
fn an_unresolvable_base_fails_the_pattern_checks_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    project_with_key(dir.path());
    let gh: Shared = Arc::default();
    let api = start(gh.clone());
    let o = run_with_payload(dir.path(), &api, &[], |p| {
        p["pull_request"]["base"]["ref"] = json!("release-9");
    });
    assert_ne!(o.status.code(), Some(0), "{}", stderr(&o));
    let g = gate_of(&qa_result(dir.path()), "patterns");
    assert_eq!(g["status"], "failed", "{g}");
    assert!(g["required"].as_bool().unwrap());
    let summary = g["summary"].as_str().unwrap();
    assert!(
        summary.contains("could not be determined") && summary.contains("release-9"),
        "{summary}"
    );
    assert_ne!(qa_result(dir.path())["verdict"], "approved");
}

/// A checkout owned by another user ("dubious ownership", common in CI containers): qa-loop's
/// own git commands mark it safe, so the base resolves and the key is found.
#[test]
fn a_checkout_owned_by_another_user_is_still_reviewed() {
    if unsafe { nix::libc::geteuid() } != 0 {
        eprintln!("skipped: needs root to give the checkout to another user");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    project_with_key(dir.path());
    // Read before the checkout changes hands (this process's git would refuse it after).
    let head = git_out(dir.path(), &["rev-parse", "HEAD"]);
    let chown = std::process::Command::new("chown")
        .args(["-R", "65534:65534"])
        .arg(dir.path())
        .status()
        .unwrap();
    assert!(chown.success());
    let gh: Shared = Arc::default();
    let api = start(gh.clone());
    let o = run_with_payload(dir.path(), &api, &[], |p| {
        p["pull_request"]["head"]["sha"] = json!(head);
    });
    assert_ne!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        gate_of(&qa_result(dir.path()), "patterns")["status"],
        "failed"
    );
    assert!(
        qa_result(dir.path())["issues"]
            .to_string()
            .contains("deploy.pem")
    );
}

fn git_ok(dir: &Path, args: &[&str]) -> bool {
    std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
        .status
        .success()
}
