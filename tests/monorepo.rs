//! Suites chosen by path (issue 23): in a monorepo-shaped project, a change under `web/` skips
//! the `api` suite (reported as skipped, with the reason) and runs the `web` one; a change only
//! to files in `paths_ignore` skips both; `always: true` runs whatever changed; `validate` says
//! which would run.

mod support;
use std::path::Path;
use support::*;

use serde_json::json;

fn project(dir: &Path, always_api: bool) {
    project_at(dir, always_api, "trivial", true);
}

/// The project at `risk`; `required`: the suites say `required: true` themselves (else the risk
/// level decides which are required).
fn project_at(dir: &Path, always_api: bool, risk: &str, required: bool) {
    for (p, text) in [
        ("api/app.py", "def ping():\n    return 'pong'\n"),
        (
            "api/test_api.py",
            "from app import ping\nassert ping() == 'pong'\n",
        ),
        ("web/app.py", "def title():\n    return 'Home'\n"),
        (
            "web/test_web.py",
            "from app import title\nassert title() == 'Home'\n",
        ),
        ("web/README.md", "# web\n"),
    ] {
        std::fs::create_dir_all(dir.join(p).parent().unwrap()).unwrap();
        std::fs::write(dir.join(p), text).unwrap();
    }
    let mut config = json!({
        "risk_level": risk,
        "unit_tests": {"required": true, "paths": ["api/"], "always": always_api,
                       "commands": ["cd api && python3 test_api.py && touch ../ran-api"]},
        "integration_tests": {"required": true, "paths": ["web/**"], "paths_ignore": ["**/*.md"],
                              "commands": ["cd web && python3 test_web.py && touch ../ran-web"]}
    });
    if !required {
        for suite in ["unit_tests", "integration_tests"] {
            config[suite].as_object_mut().unwrap().remove("required");
        }
    }
    std::fs::write(dir.join("qa-loop.json"), config.to_string()).unwrap();
    std::fs::write(
        dir.join(".gitignore"),
        ".qa-loop/\nsession.json\nran-*\n__pycache__/\n",
    )
    .unwrap();
    let session = json!({"calls": [{"role": "reviewer", "tool_calls": [{"id": "v", "name": "submit_verdict",
        "arguments": {"status": "approved", "score": 95, "confidence": 0.9, "summary": "ok",
                      "criteria": [], "issues": []}}]}]});
    std::fs::write(dir.join("session.json"), session.to_string()).unwrap();
    git(dir, &["init", "-q", "-b", "main"]);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "base"]);
    git(dir, &["checkout", "-q", "-b", "feature"]);
}

#[test]
fn a_change_under_web_skips_the_api_suite_and_runs_the_web_one() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    project(d, false);
    std::fs::write(
        d.join("web/app.py"),
        "def title():\n    return 'Home'\n\n\ndef footer():\n    return ''\n",
    )
    .unwrap();
    git(d, &["commit", "-qam", "web change"]);

    let v = qa(d, &["validate", "--base", "main"]);
    let out = String::from_utf8_lossy(&v.stdout);
    assert!(
        out.contains(
            "for the current change: skipped: the change touches none of api/ (1 file(s) changed elsewhere)"
        ),
        "{out}"
    );
    assert!(
        out.contains("for the current change (1 file(s)): it would run"),
        "{out}"
    );

    let o = replay_run(d, &["--base", "main"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let api = gate_of(&qa_result(d), "unit_tests");
    assert_eq!(api["status"], "skipped", "{api:#}");
    assert!(
        api["summary"]
            .as_str()
            .unwrap()
            .contains("the change touches none of api/"),
        "{api:#}"
    );
    assert_eq!(
        gate_of(&qa_result(d), "integration_tests")["status"],
        "passed"
    );
    assert!(d.join("ran-web").exists() && !d.join("ran-api").exists());
    let report = std::fs::read_to_string(d.join(".qa-loop/qa_report.md")).unwrap();
    assert!(report.contains("⏭ skipped"), "{report}");
    let junit = std::fs::read_to_string(d.join(".qa-loop/qa-loop-junit.xml")).unwrap();
    assert!(
        junit.contains("<skipped message=\"skipped: the change touches none of"),
        "{junit}"
    );
}

#[test]
fn ignored_files_skip_a_suite_and_always_runs_one() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    project(d, true);
    std::fs::write(d.join("web/README.md"), "# web\n\nNotes.\n").unwrap();
    git(d, &["commit", "-qam", "docs"]);
    let o = replay_run(d, &["--base", "main"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let web = gate_of(&qa_result(d), "integration_tests");
    assert_eq!(web["status"], "skipped", "{web:#}");
    assert_eq!(
        gate_of(&qa_result(d), "unit_tests")["status"],
        "passed",
        "`always: true` runs"
    );
    assert!(d.join("ran-api").exists() && !d.join("ran-web").exists());
}

/// The diff that matters first: a lockfile, a generated file (`.gitattributes`) and a vendored
/// directory are summarised as one line each, and the source is shown in full.
#[test]
fn lockfiles_generated_and_vendored_files_are_summarised_and_the_source_shown() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    project(d, false);
    std::fs::write(
        d.join(".gitattributes"),
        "api/*_pb2.py linguist-generated=true\n",
    )
    .unwrap();
    git(d, &["add", ".gitattributes"]);
    git(d, &["commit", "-qm", "attributes"]);
    git(d, &["checkout", "-q", "-b", "big"]);
    let lock: String = (0..20_000)
        .map(|i| format!("  \"dep-{i}\": \"1.0.{i}\",\n"))
        .collect();
    std::fs::write(d.join("package-lock.json"), format!("{{\n{lock}}}\n")).unwrap();
    let generated: String = (0..5_000).map(|i| format!("FIELD_{i} = {i}\n")).collect();
    std::fs::write(d.join("api/schema_pb2.py"), generated).unwrap();
    std::fs::create_dir_all(d.join("web/vendor/chartlib")).unwrap();
    let vendored: String = (0..5_000)
        .map(|i| format!("function f{i}() {{ return {i}; }}\n"))
        .collect();
    std::fs::write(d.join("web/vendor/chartlib/chart.js"), vendored).unwrap();
    std::fs::write(
        d.join("web/app.py"),
        "def title():\n    return 'Home'\n\n\ndef greeting(name):\n    return f'Hello, {name}'\n",
    )
    .unwrap();
    git(d, &["add", "-A"]);
    git(d, &["commit", "-qm", "big change"]);
    let session = json!({"calls": [{"role": "reviewer",
        "expect_in_request": [
            "def greeting(name):",
            "`package-lock.json` (lockfile, +20002",
            "`api/schema_pb2.py` (generated (.gitattributes), +5000",
            "`web/vendor/chartlib/chart.js` (vendored, +5000"
        ],
        "expect_not_in_request": ["dep-19999", "FIELD_4999", "function f4999", "left out (use `git_diff`"],
        "tool_calls": [{"id": "v", "name": "submit_verdict",
        "arguments": {"status": "approved", "score": 95, "confidence": 0.9, "summary": "ok",
                      "criteria": [], "issues": []}}]}]});
    std::fs::write(d.join("session.json"), session.to_string()).unwrap();
    let o = qa(
        d,
        &[
            "run",
            "--provider",
            "replay",
            "--replay-session",
            "session.json",
            "--base",
            "main",
            "--mode",
            "review",
        ],
    );
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Issue 49, point 2: at the default risk levels a suite's `paths:` decide, also for a suite the
/// risk level requires (`low` requires unit tests): a change under `web/` skips the `api` suite,
/// saying why. At `high` every required suite runs whatever its paths.
#[test]
fn paths_decide_below_high_and_every_required_suite_runs_at_high() {
    for (risk, api_runs) in [("low", false), ("medium", false), ("high", true)] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        project_at(d, false, risk, false);
        std::fs::write(
            d.join("web/app.py"),
            "def title():\n    return 'Home'\n\n\ndef footer():\n    return ''\n",
        )
        .unwrap();
        git(d, &["commit", "-qam", "web change"]);
        let o = replay_run(d, &["--base", "main"]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{risk}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let api = gate_of(&qa_result(d), "unit_tests");
        if api_runs {
            assert_eq!(api["status"], "passed", "{risk}: {api:#}");
            assert!(d.join("ran-api").exists(), "{risk}");
        } else {
            assert_eq!(api["status"], "skipped", "{risk}: {api:#}");
            assert_eq!(
                api["summary"],
                "skipped: the change touches none of api/ (1 file(s) changed elsewhere)",
                "{risk}"
            );
            assert!(!d.join("ran-api").exists(), "{risk}");
        }
        assert!(d.join("ran-web").exists(), "{risk}");
    }
}
