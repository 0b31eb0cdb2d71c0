//! The real binary in temp directories: bad input exits 2 with file:line:col and writes nothing;
//! `status --json` finds recurring issues; `run` updates a plan without disturbing its other
//! keys; the replay provider drives the loop to each exit code.

mod support;
use std::path::Path;
use std::process::Output;
use support::*;

use assert_cmd::Command;
use serde_json::{Value, json};

/// Polls `done` every 20 ms; fails with `what` after `secs` seconds.
fn wait_for(secs: u64, what: &str, mut done: impl FnMut() -> bool) {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while !done() {
        assert!(std::time::Instant::now() < until, "{what}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Waits for `child` to exit; returns its status and stderr.
fn wait_exit(
    child: &mut std::process::Child,
    secs: u64,
    what: &str,
) -> (std::process::ExitStatus, String) {
    let mut status = None;
    wait_for(secs, what, || {
        status = child.try_wait().unwrap();
        status.is_some()
    });
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    (status.unwrap(), err)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn validate_names_file_line_and_column_of_a_typo_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("qa-loop.yml"),
        "risk_level: high\nunit_tests:\n  required: true\n  comands: [\"pytest\"]\n",
    )
    .unwrap();
    let o = qa(dir.path(), &["validate"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("qa-loop.yml:4:3"), "{}", stderr(&o));
    assert!(stderr(&o).contains("comands"), "{}", stderr(&o));
    // `run` refuses the same input before writing anything.
    let o = qa(dir.path(), &["run", "--provider", "replay"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(!dir.path().join(".qa-loop").exists());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn validate_reports_bad_yaml_and_bad_values_with_positions() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("unit_tests:\n  commands: [\"a\"\n  required: true\n", ":"),
        ("risk_level: extreme\n", "qa-loop.yml:1:"),
        ("max_iterations: 0\n", "qa-loop.yml:1:"),
        ("risk_level: low\nrisk_level: high\n", "qa-loop.yml:2:"),
        ("timeout: soon\n", "qa-loop.yml:1:"),
    ];
    for (text, want) in cases {
        std::fs::write(dir.path().join("qa-loop.yml"), text).unwrap();
        let o = qa(dir.path(), &["validate"]);
        assert_eq!(o.status.code(), Some(2), "{text:?}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(
            err.contains(want) && err.contains("qa-loop.yml:"),
            "{text:?}: {err}"
        );
    }
    let o = qa(dir.path(), &["validate", "--config", "missing.yml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("missing.yml: config file not found"),
        "{}",
        stderr(&o)
    );
    let o = qa(dir.path(), &["validate", "--max-iterations", "zero"]);
    assert_eq!(o.status.code(), Some(2), "usage errors exit 2");
}

#[test]
fn validate_prints_the_resolved_strategy_with_precedence() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("qa-loop.yml"),
        "risk_level: medium\nmax_iterations: 7\nmin_score: 55\nacceptance_criteria: [\"Config criterion\"]\nunit_tests:\n  commands: [\"true\"]\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("spec.md"),
        "# S\n## Acceptance Criteria\n- [ ] Spec criterion\n- [ ] config criterion\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("plan.json"),
        r#"{"verification_strategy": {"risk_level": "critical", "acceptance_criteria": ["Plan criterion"], "integration_tests": {"commands": ["make it"]}}}"#,
    )
    .unwrap();
    let o = Command::cargo_bin("qa-loop")
        .unwrap()
        .current_dir(dir.path())
        .env("QA_LOOP_MAX_ITERATIONS", "9")
        .env("QA_LOOP_MIN_SCORE", "60")
        .env("QA_LOOP_NO_GITHUB", "1")
        .args([
            "validate",
            "--json",
            "--spec",
            "spec.md",
            "--plan",
            "plan.json",
            "--min-score",
            "70",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["max_iterations"], 9, "env beats file");
    assert_eq!(v["min_score"], 70, "CLI beats env");
    assert_eq!(
        v["strategy"]["risk_level"], "medium",
        "the config file wins over the plan"
    );
    let criteria: Vec<&str> = v["strategy"]["criteria"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["text"].as_str().unwrap())
        .collect();
    assert_eq!(
        criteria,
        ["Spec criterion", "config criterion", "Plan criterion"]
    );
    let suites: Vec<&str> = v["strategy"]["suites"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        suites,
        ["unit", "integration"],
        "the plan fills what the config does not set"
    );
}

/// Issue 17: `validate` shows each model as the run will call it, from the registry (API, limits,
/// thinking style, prices with their source) with the config's `models:` entries over it; an
/// incomplete entry is refused with its position; the deprecated `prices:` still prices.
#[test]
fn validate_shows_the_models_from_the_registry_and_the_config() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("qa-loop.yml"),
        "provider: openai\nreviewer_model: gpt-6.2-sol\nfixer_model: my-llm:8b\nfixer_thinking: 2048\nmodels:\n  my-llm:\n    api: responses\n    thinking: none\n    input: 0.5\n    output: 1.5\nprices:\n  other: {input: 1, output: 2}\n",
    )
    .unwrap();
    let o = qa(
        dir.path(),
        &["validate", "--json", "--reviewer-thinking", "high"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("`prices:` is deprecated"),
        "{}",
        stderr(&o)
    );
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let reviewer = &v["models"]["reviewer"];
    assert_eq!(reviewer["api"], "responses");
    assert_eq!(reviewer["thinking_style"], "effort");
    assert_eq!(reviewer["thinking"], "high");
    assert_eq!(reviewer["price"]["input"], 2.0);
    assert_eq!(reviewer["price"]["long_context"]["above"], 272_000);
    assert!(reviewer["source"].as_str().unwrap().contains("2026-11-23"));
    let fixer = &v["models"]["fixer"];
    assert_eq!(fixer["api"], "responses");
    assert_eq!(fixer["thinking"], 2048);
    assert_eq!(fixer["price"]["output"], 1.5);
    assert_eq!(fixer["source"], "config");
    let o = qa(dir.path(), &["validate"]);
    assert!(
        stdout(&o).contains("fixer: my-llm:8b — responses API, context 128000 tokens, does not think (thinking 2048 tokens ignored); $0.5 in / $1.5 out"),
        "{}",
        stdout(&o)
    );

    std::fs::write(
        dir.path().join("qa-loop.yml"),
        "provider: openai\nmodels:\n  my-llm:\n    input: 0.5\n",
    )
    .unwrap();
    let o = qa(dir.path(), &["validate"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("qa-loop.yml:3:3: `my-llm`: a price needs both `input` and `output`"),
        "{}",
        stderr(&o)
    );
}

/// Issue 18, points 1 and 7: outside a git work tree `run` exits 2 saying so (it went on and
/// approved); a committed feature branch reviewed locally with `--base main` is gated on the
/// branch's change (its private key is found — against `HEAD` it reviewed nothing); a base that
/// names nothing exits 2.
#[test]
fn a_local_branch_is_reviewed_against_its_base_and_outside_git_run_exits_2() {
    let approve = json!({"calls": [verdict("approved", 95, "")]});
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("session.json"), approve.to_string()).unwrap();
    std::fs::write(dir.path().join("qa-loop.yml"), "risk_level: trivial\n").unwrap();
    let o = replay_run(dir.path(), &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("not inside a git work tree"),
        "{}",
        stderr(&o)
    );

    let d = dir.path();
    git(d, &["init", "-q", "-b", "main"]);
    std::fs::write(d.join(".gitignore"), ".qa-loop/\nsession.json\n").unwrap();
    git(d, &["add", "-A"]);
    git(d, &["commit", "-q", "-m", "base"]);
    git(d, &["checkout", "-q", "-b", "feature"]);
    std::fs::write(
        d.join("deploy.pem"),
        "-----BEGIN RSA PRIVATE KEY-----\nMIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf9Cnzj4p4WGeKLs1Pt8Qu\n-----END RSA PRIVATE KEY-----\n",
    )
    .unwrap();
    git(d, &["add", "-A"]);
    git(d, &["commit", "-q", "-m", "add the deploy key"]);
    let patterns = |d: &Path| -> Value {
        let r = qa_result(d);
        r["history"][0]["verification"]["gates"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["name"] == "patterns")
            .cloned()
            .unwrap()
    };
    let o = replay_run(d, &["--mode", "review", "--base", "main"]);
    assert_ne!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(patterns(d)["status"], "failed");
    assert!(qa_result(d)["issues"].to_string().contains("deploy.pem"));
    // Without a base the change is the uncommitted work: none.
    let o = replay_run(d, &["--mode", "review"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(patterns(d)["status"], "passed");
    let o = qa(d, &["validate", "--base", "main"]);
    assert!(stdout(&o).contains("base: main"), "{}", stdout(&o));
    let o = replay_run(d, &["--base", "no-such-branch"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--base no-such-branch"),
        "{}",
        stderr(&o)
    );
}

/// Issue 18, point 3: a reviewer returning `criteria: []` approved a change with two criteria,
/// and an `approved` verdict with a criterion `met: false` ended approved. Now the criteria the
/// verdict leaves out are asked for once; still out, they are not judged (not met), and an unmet
/// criterion rejects. The criteria suite of the JUnit file has one case per criterion.
#[test]
fn every_criterion_is_judged_and_words_cannot_approve_an_unmet_one() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    git(d, &["init", "-q"]);
    std::fs::write(d.join(".gitignore"), ".qa-loop/\nsession.json\n").unwrap();
    std::fs::write(d.join("qa-loop.yml"), "risk_level: trivial\nacceptance_criteria:\n  - Users can log in\n  - Sessions expire after 30 minutes\n").unwrap();
    git(d, &["add", "-A"]);
    git(d, &["commit", "-q", "-m", "init"]);
    let with_criteria = |criteria: Value| {
        let mut v = verdict("approved", 95, "");
        v["tool_calls"][0]["arguments"]["criteria"] = criteria;
        v
    };
    let session = json!({"calls": [
        with_criteria(json!([])),
        with_criteria(json!([{"criterion": "Users can log in", "met": true, "evidence": "auth.py:10"}])),
    ]});
    std::fs::write(d.join("session.json"), session.to_string()).unwrap();
    let o = replay_run(d, &["--mode", "review"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let r = qa_result(d);
    assert_eq!(
        r["model_calls"], 2,
        "one follow-up for the criteria left out"
    );
    let criteria: Vec<(String, bool)> = r["criteria"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["criterion"].as_str().unwrap().to_string(),
                c["met"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        criteria,
        [
            ("Users can log in".to_string(), true),
            ("Sessions expire after 30 minutes".to_string(), false)
        ]
    );
    let junit = std::fs::read_to_string(d.join(".qa-loop/qa-loop-junit.xml")).unwrap();
    assert!(
        junit.contains(r#"<testsuite name="qa-loop acceptance criteria" tests="2""#),
        "{junit}"
    );

    // Every criterion judged, one unmet: rejected although the verdict says approved.
    let session = json!({"calls": [with_criteria(json!([
        {"criterion": "Users can log in", "met": true, "evidence": "auth.py:10"},
        {"criterion": "Sessions expire after 30 minutes", "met": false, "evidence": "no expiry"}
    ]))]});
    std::fs::write(d.join("session.json"), session.to_string()).unwrap();
    let o = replay_run(d, &["--mode", "review"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let r = qa_result(d);
    assert_eq!(r["model_calls"], 1);
    assert!(
        r["issues"]
            .to_string()
            .contains("Acceptance criterion not met: Sessions expire"),
        "{}",
        r["issues"]
    );
}

/// Issue 18, points 5 and 8: a suite with only report globs (results of other jobs) is read,
/// not run — `validate` no longer calls the project test-less or the gate failing — and an
/// advisory gate's failure is no `<failure>` in the JUnit file of an approved run.
#[test]
fn a_suite_of_reports_from_other_jobs_is_read_and_advisory_gates_stay_green_in_junit() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    git(d, &["init", "-q"]);
    std::fs::write(d.join(".gitignore"), ".qa-loop/\nsession.json\n").unwrap();
    std::fs::write(
        d.join("qa-loop.yml"),
        "risk_level: low\nunit_tests:\n  required: true\n  junit: [\"artifacts/*.xml\"]\n",
    )
    .unwrap();
    git(d, &["add", "-A"]);
    git(d, &["commit", "-q", "-m", "init"]);
    std::fs::create_dir_all(d.join("artifacts")).unwrap();
    std::fs::write(
        d.join("artifacts/shard-1.xml"),
        r#"<testsuite name="s" tests="2"><testcase classname="t" name="a"/><testcase classname="t" name="b"/></testsuite>"#,
    )
    .unwrap();
    let o = qa(d, &["validate"]);
    let out = stdout(&o);
    assert!(!out.contains("no tests configured"), "{out}");
    assert!(
        out.contains("results are read from reports produced elsewhere"),
        "{out}"
    );
    assert!(out.contains("junit: artifacts/*.xml"), "{out}");
    // A TODO on an added line: the advisory pattern gate fails, the run is approved.
    std::fs::write(d.join("app.py"), "x = 1  # TODO: tidy\n").unwrap();
    let session = json!({"calls": [verdict("approved", 95, "")]});
    std::fs::write(d.join("session.json"), session.to_string()).unwrap();
    let o = replay_run(d, &["--mode", "review"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let r = qa_result(d);
    let gates = r["history"][0]["verification"]["gates"]
        .as_array()
        .unwrap()
        .clone();
    let unit = gates.iter().find(|g| g["name"] == "unit_tests").unwrap();
    assert_eq!(unit["status"], "passed");
    assert!(
        unit["summary"].as_str().unwrap().contains("2 passed"),
        "{unit}"
    );
    let advisory = gates
        .iter()
        .find(|g| g["name"] == "patterns:advisory")
        .unwrap();
    assert_eq!(advisory["status"], "failed", "{advisory}");
    let junit = std::fs::read_to_string(d.join(".qa-loop/qa-loop-junit.xml")).unwrap();
    assert!(!junit.contains("<failure"), "{junit}");
    assert!(junit.contains("advisory, not met"), "{junit}");
}

fn plan_with_history(titles: [&str; 3]) -> Value {
    let history: Vec<Value> = titles
        .iter()
        .enumerate()
        .map(|(i, t)| {
            json!({"iteration": i + 1, "status": "rejected", "timestamp": format!("2026-11-2{}T10:00:00Z", i + 1),
                   "issues": [{"title": t, "type": "error_handling", "file": "src/cart/service.py", "line": 88 + 3 * i}]})
        })
        .collect();
    json!({"feature": "cart", "qa_signoff": {"status": "rejected", "qa_session": 3, "timestamp": "2026-11-23T10:00:00Z"},
           "qa_iteration_history": history})
}

#[test]
fn status_json_reports_a_reworded_recurring_issue_and_not_three_different_defects() {
    let dir = tempfile::tempdir().unwrap();
    let reworded = plan_with_history([
        "Missing validation for negative quantity in add_to_cart",
        "Negative quantity is not validated in add_to_cart",
        "Error: add_to_cart accepts a negative quantity without validation",
    ]);
    std::fs::write(
        dir.path().join("plan.json"),
        serde_json::to_string_pretty(&reworded).unwrap(),
    )
    .unwrap();
    let o = qa(dir.path(), &["status", "--plan", "plan.json", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["status"], "rejected");
    assert_eq!(v["iterations"], 3);
    assert_eq!(v["last_check"], "2026-11-23T10:00:00Z");
    let rec = v["recurring_issues"].as_array().unwrap();
    assert_eq!(rec.len(), 1, "{v:#}");
    assert_eq!(rec[0]["occurrences"], 3);
    assert_eq!(rec[0]["iterations"], json!([1, 2, 3]));
    // Why: each later occurrence, the earlier one it repeats, and the matcher's reason.
    let link = &rec[0]["links"][0];
    assert_eq!(
        (&link["issue"], &link["repeats"], &link["by"]),
        (&json!("I2.Q1"), &json!("I1.Q1"), &json!("matcher")),
        "{v:#}"
    );
    assert!(
        link["reason"].as_str().is_some_and(|r| !r.is_empty()),
        "{v:#}"
    );
    let text = stdout(&qa(dir.path(), &["status", "--plan", "plan.json"]));
    assert!(text.contains("I2.Q1 repeats I1.Q1 (matcher: "), "{text}");

    let different = plan_with_history([
        "Missing test for empty input in add_to_cart",
        "Missing test for unicode input in add_to_cart",
        "SQL injection in add_to_cart query",
    ]);
    std::fs::write(
        dir.path().join("plan.json"),
        serde_json::to_string_pretty(&different).unwrap(),
    )
    .unwrap();
    let o = qa(dir.path(), &["status", "--plan", "plan.json", "--json"]);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["recurring_issues"], json!([]), "{v:#}");

    // The human view says the same.
    let o = qa(dir.path(), &["status", "--plan", "plan.json"]);
    assert!(
        stdout(&o).contains("Recurring issues: none"),
        "{}",
        stdout(&o)
    );
    let o = qa(dir.path(), &["status", "--plan", "nope.json"]);
    assert_eq!(o.status.code(), Some(2));
}

/// Issues are compared with what the reviewer wrote beside the title: two titles with no word
/// in common are one problem when their descriptions and fixes say so, and `status` says why.
#[test]
fn status_joins_issues_by_their_descriptions_and_fixes() {
    let dir = tempfile::tempdir().unwrap();
    let issue = |title: &str, line: u32, description: &str, fix: &str| {
        json!({"id": "Q1", "title": title, "type": "error_handling", "file": "internal/export/writer.go",
               "line": line, "description": description, "fix": fix})
    };
    let plan = json!({"qa_iteration_history": [
        {"iteration": 1, "status": "rejected", "issues": [issue(
            "Write errors ignored in flushRows", 88,
            "bufio.Writer.Flush returns an error that flushRows drops, so a full disk leaves a truncated export without any error",
            "Return the error from Flush and fail the export job")]},
        {"iteration": 2, "status": "rejected", "issues": [issue(
            "Truncated CSV files reach customers silently", 93,
            "When the disk fills, the export job still reports success: the error of Flush is dropped and the truncated file is uploaded",
            "Check the Flush error and mark the export failed")]},
        {"iteration": 3, "status": "rejected", "issues": [issue(
            "Export job marked done although the file is incomplete", 95,
            "flushRows still ignores the Flush error on a full disk: the truncated export is uploaded and the job reports success",
            "Propagate the Flush error so the export job fails")]}
    ]});
    std::fs::write(dir.path().join("plan.json"), plan.to_string()).unwrap();
    let o = qa(dir.path(), &["status", "--plan", "plan.json", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let recurring = v["recurring_issues"].as_array().unwrap();
    assert_eq!(recurring.len(), 1, "{v:#}");
    assert_eq!(recurring[0]["occurrences"], 3, "{v:#}");
    assert!(
        recurring[0]["links"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l["by"] == "matcher"
                && l["reason"]
                    .as_str()
                    .is_some_and(|r| r.contains("with description and fix"))),
        "{v:#}"
    );
}

/// `status` reads each issue's `file_lines` and scales line distances by it: an issue that
/// moved down as the fixes grew the file is still one problem. Without
/// the lengths its lines are as far apart as written (250 lines: two occurrences of one kind of
/// defect).
#[test]
fn status_scales_line_distances_by_the_file_s_length() {
    let dir = tempfile::tempdir().unwrap();
    let issue = |line: u32, file_lines: Option<u32>| {
        let mut i = json!({"id": "Q1", "title": "Error from closing the result set is ignored",
                           "type": "error_handling", "file": "internal/ledger/ledger.go", "line": line});
        if let Some(n) = file_lines {
            i["file_lines"] = json!(n);
        }
        i
    };
    let plan = |lengths: bool| {
        let n = |l: u32| lengths.then_some(l);
        json!({"qa_iteration_history": [
            {"iteration": 1, "status": "rejected", "issues": [issue(300, n(1000))]},
            {"iteration": 2, "status": "rejected", "issues": [issue(550, n(1250))]},
            {"iteration": 3, "status": "rejected", "issues": [issue(800, n(1500))]}
        ]})
    };
    let status = |plan: Value| {
        std::fs::write(dir.path().join("plan.json"), plan.to_string()).unwrap();
        let o = qa(dir.path(), &["status", "--plan", "plan.json", "--json"]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        serde_json::from_str::<Value>(&stdout(&o)).unwrap()
    };
    let v = status(plan(true));
    assert_eq!(v["history"][1]["issues"][0]["file_lines"], 1250, "{v:#}");
    let recurring = v["recurring_issues"].as_array().unwrap();
    assert_eq!(recurring.len(), 1, "{v:#}");
    assert_eq!(recurring[0]["occurrences"], 3, "{v:#}");
    let v = status(plan(false));
    assert_eq!(v["recurring_issues"], json!([]), "{v:#}");
}

/// `validate` prints the plan's suite commands: none of their lines may act as a workflow
/// command in a job's log.
#[test]
fn validate_prints_commands_inert() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("plan.json"),
        json!({"verification_strategy": {"risk_level": "medium", "unit_tests": {"commands": [
            "pytest -q\n::add-mask::\n::error title=qa-loop::All gates passed"
        ]}}})
        .to_string(),
    )
    .unwrap();
    let o = qa(dir.path(), &["validate", "--plan", "plan.json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("All gates passed"), "{out}");
    assert!(
        !out.lines().any(|l| l.trim_start().starts_with("::")),
        "a command line would run as a workflow command:\n{out}"
    );
}

/// A plan is a pull request's text: what `status` cannot read is named by its JSON path on
/// stderr (not silently dropped), and no title line can act as a workflow command when
/// `status` runs in a job.
#[test]
fn status_names_what_it_cannot_read_and_prints_titles_inert() {
    let dir = tempfile::tempdir().unwrap();
    let plan = json!({"qa_signoff": {"status": "rejected"}, "qa_iteration_history": [
        {"iteration": "one", "status": "rejected", "issues": [{"title": "Null check"}, {"type": "security"}]},
        {"iteration": 2, "status": "rejected", "issues": "none"},
        "garbage",
        {"iteration": 4, "status": "rejected", "issues": [
            {"title": "Null check missing\n::error title=qa-loop::Approved by maintainers", "file": "a.py", "line": 3}
        ]}
    ]});
    std::fs::write(dir.path().join("plan.json"), plan.to_string()).unwrap();
    let o = qa(dir.path(), &["status", "--plan", "plan.json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let (out, err) = (stdout(&o), stderr(&o));
    for want in [
        "`qa_iteration_history[0].iteration` is \"one\", not a whole number: read as iteration 1",
        "`qa_iteration_history[0].issues[1]` has no `title` (or `description`): skipped",
        "`qa_iteration_history[1].issues` is not an array: skipped",
        "`qa_iteration_history[2]` is not an object",
    ] {
        assert!(err.contains(want), "want {want:?} in:\n{err}");
    }
    assert!(err.contains("plan.json"), "{err}");
    assert!(out.contains("Approved by maintainers"), "{out}");
    assert!(
        !out.lines().any(|l| l.trim_start().starts_with("::")),
        "a title line would run as a workflow command:\n{out}"
    );
    // `--json` stays exactly the status object (warnings go to stderr only).
    let o = qa(dir.path(), &["status", "--plan", "plan.json", "--json"]);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert!(v.get("warnings").is_none(), "{v:#}");
    // The entry that is not an object is no iteration; the numbering goes on from the others.
    assert_eq!(v["iterations"], 3);
    let numbers: Vec<u64> = v["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["iteration"].as_u64().unwrap())
        .collect();
    assert_eq!(numbers, [1, 2, 4], "{v:#}");
}

#[test]
fn demo_runs_the_real_loop_and_ends_approved() {
    let dir = tempfile::tempdir().unwrap();
    let o = qa(dir.path(), &["demo", "--dir", "d"]);
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
    assert!(
        stderr(&o).contains("REPLAYED"),
        "the demo says the model is replayed"
    );
    let project = dir.path().join("d/quickstart");
    let code = std::fs::read_to_string(project.join("textutil.py")).unwrap();
    assert!(
        code.contains(r#"re.sub(r"[^a-z0-9]+", "-", text).strip("-")"#),
        "the fixer's edit is on disk:\n{code}"
    );
    let result: Value = qa_result(&project);
    assert_eq!(result["verdict"], "approved");
    assert_eq!(result["iterations"], 2);
    assert_eq!(result["history"][0]["status"], "rejected");
    assert_eq!(
        result["history"][0]["verification"]["gates"][0]["status"],
        "failed"
    );
    assert_eq!(
        result["history"][1]["verification"]["gates"][0]["status"],
        "passed"
    );
    assert!(result["tokens"]["total"].as_u64().unwrap() > 0);
    let report = std::fs::read_to_string(project.join(".qa-loop/qa_report.md")).unwrap();
    assert!(report.contains("Replayed model"));
    assert!(
        !project.join(".qa-loop/QA_FIX_REQUEST.md").exists(),
        "no fixes pending after approval"
    );
    let junit = std::fs::read_to_string(project.join(".qa-loop/qa-loop-junit.xml")).unwrap();
    assert!(junit.contains("qa-loop acceptance criteria"));
}

/// A one-file project with a failing test, in a git repo, plus a session file.
fn project(dir: &Path, session: Value) {
    std::fs::write(dir.join("calc.py"), "def add(a, b):\n    return a - b\n").unwrap();
    std::fs::write(
        dir.join("test_calc.py"),
        "from calc import add\nassert add(2, 2) == 4, 'add is wrong'\n",
    )
    .unwrap();
    std::fs::write(dir.join(".gitignore"), ".qa-loop/\n__pycache__/\n").unwrap();
    std::fs::write(
        dir.join("qa-loop.yml"),
        "risk_level: low\nunit_tests:\n  commands: [\"python3 test_calc.py\"]\n",
    )
    .unwrap();
    git(dir, &["init", "-q"]);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "init"]);
    std::fs::write(
        dir.join("session.json"),
        serde_json::to_string(&session).unwrap(),
    )
    .unwrap();
}

fn verdict(status: &str, score: u8, title: &str) -> Value {
    let issues = if status == "approved" {
        json!([])
    } else {
        json!([{"id": "Q1", "title": title, "type": "unit_test", "severity": "high", "file": "calc.py", "line": 2, "fix": "return a + b"}])
    };
    json!({"role": "reviewer", "tool_calls": [{"id": format!("v{score}"), "name": "submit_verdict",
           "arguments": {"status": status, "score": score, "confidence": 0.9, "summary": "s", "criteria": [], "issues": issues}}]})
}

fn fixer_finish(n: u32) -> Value {
    json!({"role": "fixer", "tool_calls": [{"id": format!("f{n}"), "name": "finish", "arguments": {"summary": "tried"}}]})
}

#[test]
fn run_updates_the_plan_and_keeps_its_other_keys() {
    let dir = tempfile::tempdir().unwrap();
    let session = json!({"calls": [
        verdict("rejected", 30, "add subtracts instead of adding"),
        {"role": "fixer", "tool_calls": [{"id": "e1", "name": "edit_file",
            "arguments": {"path": "calc.py", "old": "return a - b", "new": "return a + b"}}]},
        fixer_finish(1),
        verdict("approved", 95, ""),
    ]});
    project(dir.path(), session);
    let plan = "{\n    \"feature\": \"calc\",\n    \"phases\": [\n        {\"name\": \"p1\", \"weight\": 1.5}\n    ],\n    \"verification_strategy\": {\"risk_level\": \"low\"},\n    \"zeta\": null\n}\n";
    std::fs::write(dir.path().join("implementation_plan.json"), plan).unwrap();
    let o = replay_run(dir.path(), &["--plan", "implementation_plan.json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = std::fs::read_to_string(dir.path().join("implementation_plan.json")).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "feature",
            "phases",
            "verification_strategy",
            "zeta",
            "qa_signoff",
            "qa_iteration_history",
            "qa_stats"
        ]
    );
    assert_eq!(v["phases"][0]["weight"], 1.5);
    assert!(
        text.contains("\n    \"feature\""),
        "4-space indentation kept:\n{text}"
    );
    assert_eq!(v["qa_signoff"]["status"], "approved");
    // Issue 19: the review iteration, as Auto-Claude numbers QA sessions (reject → fix →
    // approve is session 2; it was 1, the run count).
    assert_eq!(v["qa_signoff"]["qa_session"], 2);
    assert_eq!(v["qa_signoff"]["tests_passed"]["unit"], true);
    assert_eq!(v["qa_iteration_history"].as_array().unwrap().len(), 2);
    // Iteration 1: the reviewer's Q1 and the failed gate's G1.
    assert_eq!(v["qa_stats"]["issues_by_type"]["unit_test"], 2);
    assert_eq!(v["qa_stats"]["last_status"], "approved");
    // The fixer's protected files: it cannot write the plan or the out dir (checked in tools);
    // the code change is real.
    assert!(
        std::fs::read_to_string(dir.path().join("calc.py"))
            .unwrap()
            .contains("a + b")
    );
}

/// The recurring-issue matcher scales line distances by the file's length: qa-loop counts the
/// lines of the file each issue points at when the review is taken, never believes a count the
/// reviewer sends, and counts nothing outside the repository. The count reaches the plan's
/// history, which `status` and later runs read.
#[test]
fn the_length_of_each_issue_s_file_is_measured_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let mut v = verdict("rejected", 30, "add subtracts instead of adding");
    let issues = v["tool_calls"][0]["arguments"]["issues"]
        .as_array_mut()
        .unwrap();
    issues[0]["file_lines"] = json!(999);
    issues.push(
        json!({"id": "Q2", "title": "reads a secret", "type": "security", "severity": "high",
                       "file": "../../../../etc/passwd", "line": 1, "fix": "no"}),
    );
    let session = json!({"calls": [v]});
    project(dir.path(), session);
    std::fs::write(
        dir.path().join("implementation_plan.json"),
        "{\"feature\": \"calc\"}\n",
    )
    .unwrap();
    let o = replay_run(
        dir.path(),
        &[
            "--plan",
            "implementation_plan.json",
            "--max-iterations",
            "1",
        ],
    );
    // Not approved, best score below `min-score`: escalated.
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let result: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join(".qa-loop/qa-result.json")).unwrap(),
    )
    .unwrap();
    let issues = result["history"][0]["issues"].as_array().unwrap();
    let by_id = |id: &str| issues.iter().find(|i| i["id"] == id).unwrap();
    // calc.py has two lines.
    assert_eq!(by_id("Q1")["file_lines"], 2, "{result:#}");
    assert!(by_id("Q2").get("file_lines").is_none(), "{result:#}");
    let plan: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("implementation_plan.json")).unwrap(),
    )
    .unwrap();
    let q1 = &plan["qa_iteration_history"][0]["issues"][0];
    assert_eq!(q1["file"], "calc.py", "{plan:#}");
    assert_eq!(q1["file_lines"], 2, "{plan:#}");
}

/// Issue 19, point 5: a plan whose history already holds an issue twice did not escalate when
/// the reviewer reported it a third time. The plan's history is the loop's memory now: the
/// numbering continues (iteration 3) and the recurrence escalates (exit 3).
#[test]
fn a_plan_s_history_is_the_memory_of_local_runs() {
    let dir = tempfile::tempdir().unwrap();
    let title = "add subtracts instead of adding";
    let session = json!({"calls": [verdict("rejected", 30, title)]});
    project(dir.path(), session);
    let earlier = |n: u32| {
        json!({"iteration": n, "status": "rejected", "timestamp": "2026-11-01T10:00:00Z",
               "issues": [{"title": title, "type": "unit_test", "file": "calc.py", "line": 2}]})
    };
    let mut first = earlier(1);
    // Auto-Claude's issues may come without a type: counted as `unknown`.
    first["issues"]
        .as_array_mut()
        .unwrap()
        .push(json!({"title": "README typo"}));
    let plan = json!({"feature": "calc", "qa_iteration_history": [first, earlier(2)],
                      "qa_signoff": {"status": "rejected", "qa_session": 2}});
    std::fs::write(
        dir.path().join("implementation_plan.json"),
        serde_json::to_string_pretty(&plan).unwrap(),
    )
    .unwrap();
    let o = replay_run(dir.path(), &["--plan", "implementation_plan.json"]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let v: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("implementation_plan.json")).unwrap(),
    )
    .unwrap();
    let iterations: Vec<u64> = v["qa_iteration_history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["iteration"].as_u64().unwrap())
        .collect();
    assert_eq!(iterations, [1, 2, 3]);
    assert_eq!(v["qa_signoff"]["qa_session"], 3);
    assert_eq!(v["qa_signoff"]["status"], "human_escalation");
    // As Auto-Claude's `record_iteration`: the last iteration's status; untyped issues `unknown`.
    assert_eq!(v["qa_stats"]["last_status"], "rejected");
    assert_eq!(v["qa_stats"]["issues_by_type"]["unknown"], 1);
    assert_eq!(v["qa_stats"]["total_iterations"], 3);
}

/// Issue 19, point 7: the hand-off was a template (titles and iterations). When a run needs a
/// human, one model call writes a failure analysis from the whole record; it heads
/// `QA_HUMAN_ESCALATION.md`, above the facts, which stay. Without it (turned off, or the call
/// fails) the facts alone, and the exit code never changes.
#[test]
fn a_failure_analysis_heads_the_hand_off_and_the_facts_stay() {
    let title = "add subtracts instead of adding";
    let analysis = "## Root causes\n\nThe fixer edits `calc.py` but the test imports a cached module.\n\n## Next steps\n\n1. Clear `__pycache__`.\n<!-- hidden --> @someone";
    let escalating = |with_analyst: bool| {
        // Score 50: above the minimum score, so the run ends at max iterations (exit 1).
        let mut calls = vec![verdict("rejected", 50, title), fixer_finish(1)];
        calls.push(verdict("rejected", 50, title));
        if with_analyst {
            calls.push(json!({"role": "analyst", "text": analysis}));
        }
        json!({"calls": calls})
    };
    let escalation =
        |d: &Path| std::fs::read_to_string(d.join(".qa-loop/QA_HUMAN_ESCALATION.md")).unwrap();

    // Max iterations, with the analyst's answer replayed.
    let dir = tempfile::tempdir().unwrap();
    project(dir.path(), escalating(true));
    let o = replay_run(dir.path(), &["--max-iterations", "2"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let text = escalation(dir.path());
    let at = |needle: &str| {
        text.find(needle)
            .unwrap_or_else(|| panic!("{needle}:\n{text}"))
    };
    assert!(at("# QA Loop: human review needed") < at("## Failure analysis"));
    assert!(
        at("> ## Root causes") < at("> 1. Clear `__pycache__`."),
        "{text}"
    );
    assert!(at("## Failure analysis") < at("## The facts"));
    assert!(at("## The facts") < at("## Why it stopped"));
    assert!(at("## Why it stopped") < at("### Iteration 2 — rejected"));
    // Model text is data: no HTML, no mentions.
    assert!(
        !text.contains("<!--") && !text.contains("@someone"),
        "{text}"
    );
    assert_eq!(qa_result(dir.path())["model_calls"], 4);

    // Turned off: no call, the facts only, the same exit code.
    let dir = tempfile::tempdir().unwrap();
    project(dir.path(), escalating(false));
    let o = replay_run(
        dir.path(),
        &["--max-iterations", "2", "--failure-analysis", "false"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let text = escalation(dir.path());
    assert!(
        !text.contains("Failure analysis") && text.contains("## Why it stopped"),
        "{text}"
    );
    assert_eq!(qa_result(dir.path())["model_calls"], 3);

    // The call fails (the session has no answer for it): a warning, the facts, the exit code.
    let dir = tempfile::tempdir().unwrap();
    project(dir.path(), escalating(false));
    let o = replay_run(dir.path(), &["--max-iterations", "2"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("no failure analysis"), "{}", stderr(&o));
    assert!(!escalation(dir.path()).contains("Failure analysis"));

    // An approved run writes none and calls no analyst.
    let dir = tempfile::tempdir().unwrap();
    project(
        dir.path(),
        json!({"calls": [verdict("rejected", 30, title),
        {"role": "fixer", "tool_calls": [{"id": "e1", "name": "edit_file",
            "arguments": {"path": "calc.py", "old": "return a - b", "new": "return a + b"}}]},
        fixer_finish(1), verdict("approved", 95, "")]}),
    );
    let o = replay_run(dir.path(), &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!dir.path().join(".qa-loop/QA_HUMAN_ESCALATION.md").exists());
}

/// Issue 19, point 6: a human-written `QA_FIX_REQUEST.md` (Auto-Claude's `## Feedback` form)
/// was ignored. The fixer works on it first, then the loop verifies and reviews; the request is
/// moved into the out dir so the next run does not repeat it.
#[test]
fn a_human_fix_request_runs_the_fixer_first() {
    let dir = tempfile::tempdir().unwrap();
    let session = json!({"calls": [
        {"role": "fixer", "tool_calls": [{"id": "e1", "name": "edit_file",
            "arguments": {"path": "calc.py", "old": "return a - b", "new": "return a + b"}}]},
        fixer_finish(1),
        verdict("approved", 95, ""),
    ]});
    project(dir.path(), session);
    std::fs::write(
        dir.path().join("QA_FIX_REQUEST.md"),
        "# QA Fix Request\n\n## Feedback\n\n`add` subtracts: make it add.\n",
    )
    .unwrap();
    let o = replay_run(dir.path(), &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        std::fs::read_to_string(dir.path().join("calc.py"))
            .unwrap()
            .contains("a + b")
    );
    assert!(!dir.path().join("QA_FIX_REQUEST.md").exists());
    let kept =
        std::fs::read_to_string(dir.path().join(".qa-loop/QA_FIX_REQUEST.human.md")).unwrap();
    assert!(kept.contains("make it add"));
    let r = qa_result(dir.path());
    assert_eq!(r["iterations"], 1, "the fix came before the first review");
    assert_eq!(r["verdict"], "approved");
}

#[test]
fn exit_codes_from_replayed_sessions() {
    struct Case {
        comment: &'static str,
        calls: Vec<Value>,
        args: &'static [&'static str],
        want: i32,
        want_verdict: &'static str,
    }
    let reworded = [
        "add() returns the wrong sum",
        "The add function returns a wrong sum",
        "Error: add returns the wrong sum",
    ];
    let cases = vec![
        Case {
            comment: "gates beat words: an approval over a failing test is not approved",
            calls: vec![
                verdict("approved", 95, ""),
                fixer_finish(1),
                verdict("approved", 95, ""),
            ],
            args: &["--max-iterations", "2"],
            want: 1,
            want_verdict: "rejected",
        },
        Case {
            comment: "a reworded issue three times escalates",
            calls: vec![
                verdict("rejected", 50, reworded[0]),
                fixer_finish(1),
                verdict("rejected", 50, reworded[1]),
                fixer_finish(2),
                verdict("rejected", 50, reworded[2]),
            ],
            args: &[],
            want: 3,
            want_verdict: "escalated",
        },
        Case {
            comment: "unparseable verdicts (after one repair each) stop with errors",
            calls: vec![json!({"role": "reviewer", "text": "looks fine to me"}); 6],
            args: &[],
            want: 4,
            want_verdict: "error",
        },
        Case {
            comment: "review mode never fixes",
            calls: vec![verdict("rejected", 60, "add subtracts")],
            args: &["--mode", "review"],
            want: 1,
            want_verdict: "rejected",
        },
        Case {
            comment: "a token budget stops cleanly with exit 4",
            calls: vec![verdict("rejected", 60, "add subtracts"), fixer_finish(1)],
            args: &["--max-tokens", "1"],
            want: 4,
            want_verdict: "error",
        },
    ];
    for c in cases {
        let dir = tempfile::tempdir().unwrap();
        let mut calls = c.calls;
        for call in &mut calls {
            call["usage"] = json!({"input_tokens": 100, "output_tokens": 10});
        }
        project(dir.path(), json!({ "calls": calls }));
        let o = replay_run(dir.path(), c.args);
        assert_eq!(
            o.status.code(),
            Some(c.want),
            "{}: {}",
            c.comment,
            stderr(&o)
        );
        let result: Value = qa_result(dir.path());
        assert_eq!(result["verdict"], c.want_verdict, "{}", c.comment);
        if c.want == 3 {
            assert!(
                dir.path().join(".qa-loop/QA_HUMAN_ESCALATION.md").exists(),
                "{}",
                c.comment
            );
        }
    }
}

#[test]
fn run_without_a_provider_is_bad_input_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    project(dir.path(), json!({"calls": []}));
    let o = qa(dir.path(), &["run"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--provider"), "{}", stderr(&o));
    assert!(!dir.path().join(".qa-loop").exists());
}

#[test]
fn help_and_version_work() {
    let dir = tempfile::tempdir().unwrap();
    let o = qa(dir.path(), &["--help"]);
    assert_eq!(o.status.code(), Some(0));
    for word in ["run", "status", "validate", "demo", "Exit codes"] {
        assert!(stdout(&o).contains(word), "{word}");
    }
    assert!(stdout(&qa(dir.path(), &["--version"])).starts_with("qa-loop "));
}

#[test]
fn a_coverage_minimum_overrules_an_approval() {
    let dir = tempfile::tempdir().unwrap();
    project(dir.path(), json!({"calls": [verdict("approved", 95, "")]}));
    std::fs::write(
        dir.path().join("calc.py"),
        "def add(a, b):\n    return a + b\n",
    )
    .unwrap();
    // The test command writes an lcov report: 1 of 4 lines covered.
    std::fs::write(
        dir.path().join("qa-loop.yml"),
        "risk_level: high\nunit_tests:\n  commands: [\"python3 test_calc.py && printf 'SF:calc.py\\\\nDA:1,1\\\\nDA:2,0\\\\nDA:3,0\\\\nDA:4,0\\\\nend_of_record\\\\n' > cov.lcov\"]\n  coverage: [\"cov.lcov\"]\n  minimum_coverage: 80\n",
    )
    .unwrap();
    let o = replay_run(dir.path(), &["--max-iterations", "1"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let result: Value = qa_result(dir.path());
    let gates = &result["history"][0]["verification"]["gates"];
    assert_eq!(gates[0]["status"], "passed", "the tests pass");
    assert_eq!(gates[1]["name"], "coverage:unit_tests");
    assert_eq!(gates[1]["status"], "failed", "{gates:#}");
    assert!(
        gates[1]["summary"]
            .as_str()
            .unwrap()
            .contains("25.0% (1/4)"),
        "{gates:#}"
    );
    assert_eq!(result["history"][0]["reviewer_approved"], true);
    assert_eq!(result["issues"][0]["type"], "coverage");
}

#[test]
fn sigterm_stops_running_commands_and_still_writes_the_reports() {
    let dir = tempfile::tempdir().unwrap();
    project(dir.path(), json!({"calls": [verdict("approved", 95, "")]}));
    // A background child with an argument no other process has: found by its command line
    // (its pid inside the sandbox's PID namespace means nothing out here).
    let marker = format!("60.{}", std::process::id());
    std::fs::write(
        dir.path().join("qa-loop.yml"),
        format!("unit_tests:\n  commands: [\"sleep {marker} & echo started > bg.pid; wait\"]\n"),
    )
    .unwrap();
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("qa-loop"))
        .current_dir(dir.path())
        .env_remove("QA_LOOP_PROVIDER")
        .args(REPLAY_RUN)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pidfile = dir.path().join("bg.pid");
    wait_for(30, "the test command never started", || {
        std::fs::read_to_string(&pidfile).is_ok_and(|p| p.ends_with('\n'))
    });
    let sleeping = || {
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| std::fs::read(e.ok()?.path().join("cmdline")).ok())
            .any(|c| c == format!("sleep\0{marker}\0").as_bytes())
    };
    assert!(sleeping(), "the background child is not running");
    let me = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(me, nix::sys::signal::Signal::SIGTERM).unwrap();
    let (status, err) = wait_exit(&mut child, 40, "qa-loop did not stop on SIGTERM");
    assert_eq!(status.code(), Some(4), "{err}");
    assert!(err.contains("SIGTERM"), "{err}");
    let result = qa_result(dir.path());
    assert_eq!(result["verdict"], "error");
    let report = std::fs::read_to_string(dir.path().join(".qa-loop/qa_report.md")).unwrap();
    assert!(report.contains("Stopped by SIGTERM"), "{report}");
    // SIGKILL is delivered asynchronously: give the process 2 s to be gone (a zombie's
    // command line reads empty).
    wait_for(2, "the test command's background child survived", || {
        !sleeping()
    });
}

#[test]
fn junit_results_become_located_issues_and_are_carried_into_the_junit_output() {
    let dir = tempfile::tempdir().unwrap();
    project(dir.path(), json!({"calls": [verdict("approved", 95, "")]}));
    std::fs::create_dir_all(dir.path().join("tests")).unwrap();
    std::fs::write(dir.path().join("tests/test_calc.py"), "# tests\n").unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/junit/pytest-9.2.0-xunit1.xml"),
        dir.path().join("fixture.xml"),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("qa-loop.yml"),
        "risk_level: low\nunit_tests:\n  commands: [\"cp fixture.xml reports.xml; exit 1\"]\n  junit: [\"reports.xml\"]\n",
    )
    .unwrap();
    let o = replay_run(dir.path(), &["--max-iterations", "1"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let result = qa_result(dir.path());
    let issues = result["issues"].as_array().unwrap();
    assert_eq!(issues.len(), 4, "{issues:#?}");
    assert_eq!(issues[0]["type"], "unit_test");
    assert_eq!(issues[0]["file"], "tests/test_calc.py");
    assert_eq!(issues[0]["line"], 25);
    assert!(
        issues[0]["title"].as_str().unwrap().starts_with(
            "Test `tests.test_calc::test_string_special_chars` failed: assert 'a < b & c'"
        ),
        "{}",
        issues[0]["title"]
    );
    // Every ingested case is carried through; the special characters survive the round trip.
    let junit = std::fs::read_to_string(dir.path().join(".qa-loop/qa-loop-junit.xml")).unwrap();
    for name in [
        "test_add",
        "test_sub",
        "test_mul",
        "test_skipped",
        "test_fixture_error",
    ] {
        assert!(
            junit.contains(&format!("name=\"{name}\"")),
            "{name} missing"
        );
    }
    assert!(junit.contains("a &lt; b &amp; c"));
    let report = std::fs::read_to_string(dir.path().join(".qa-loop/qa_report.md")).unwrap();
    assert!(
        report.contains("8 tests: 3 passed, 3 failed, 1 errored, 1 skipped"),
        "{report}"
    );
}

#[test]
fn a_key_added_by_the_change_blocks_approval_and_is_never_repeated() {
    let dir = tempfile::tempdir().unwrap();
    project(dir.path(), json!({"calls": [verdict("approved", 95, "")]}));
    let key = "AKIAIOSFODNN7EXAMPLE";
    std::fs::write(
        dir.path().join("calc.py"),
        format!("AWS = '{key}'\n\ndef add(a, b):\n    print(a)\n    return a + b\n"),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("test_calc.py"),
        "from calc import add\nassert add(2, 2) == 4\n",
    )
    .unwrap();
    let o = replay_run(dir.path(), &["--max-iterations", "1"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let result = qa_result(dir.path());
    let issues = result["issues"].as_array().unwrap();
    assert_eq!(
        issues.len(),
        1,
        "only the blocking finding is an issue: {issues:#?}"
    );
    assert_eq!(issues[0]["type"], "security");
    assert_eq!(issues[0]["file"], "calc.py");
    assert_eq!(issues[0]["line"], 1);
    let gates = &result["history"][0]["verification"]["gates"];
    let advisory = gates
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == "patterns:advisory")
        .unwrap();
    assert_eq!(
        advisory["findings"][0]["line"], 4,
        "the print() is advisory"
    );
    for file in ["qa-result.json", "qa_report.md", "qa-loop-junit.xml"] {
        let text = std::fs::read_to_string(dir.path().join(".qa-loop").join(file)).unwrap();
        assert!(!text.contains(key), "{file} repeats the key");
        assert!(text.contains("AKIA…"), "{file} names the finding");
    }
    assert!(!stderr(&o).contains(key));
}

#[test]
fn a_no_test_project_gets_the_reviewer_s_manual_test_plan_and_discovered_tests_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let plan = "# Manual test plan\n\n- [ ] Run `python3 app.py 2 3` — prints 5\n- [ ] Run it with no arguments — prints the usage";
    let mut v = verdict("approved", 90, "");
    v["tool_calls"][0]["arguments"]["manual_test_plan"] = json!(plan);
    project(dir.path(), json!({"calls": [v]}));
    // No test files and no commands: a no-test project.
    std::fs::remove_file(dir.path().join("test_calc.py")).unwrap();
    std::fs::write(dir.path().join("qa-loop.yml"), "risk_level: low\n").unwrap();
    git(dir.path(), &["add", "-A"]);
    git(dir.path(), &["commit", "-q", "-m", "no tests"]);
    let o = qa(dir.path(), &["validate"]);
    assert!(stdout(&o).contains("no tests configured"), "{}", stdout(&o));
    let o = replay_run(dir.path(), &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let written = std::fs::read_to_string(dir.path().join(".qa-loop/MANUAL_TEST_PLAN.md")).unwrap();
    assert!(
        written.contains("The reviewer wrote this plan (iteration 1)"),
        "{written}"
    );
    assert!(
        written.contains("- [ ] Run `python3 app.py 2 3` — prints 5"),
        "{written}"
    );
    assert_eq!(
        written.matches("# Manual test plan").count(),
        1,
        "{written}"
    );

    // A test file that no suite runs: not a no-test project, and `validate` says how to run it.
    std::fs::write(dir.path().join("test_calc.py"), "assert True\n").unwrap();
    let o = qa(dir.path(), &["validate"]);
    let out = stdout(&o);
    assert!(!out.contains("no tests configured"), "{out}");
    assert!(out.contains("$ python -m pytest   # test_calc.py"), "{out}");
}

/// As PID 1 (a container's entry point), signals without a handler are ignored by the kernel:
/// qa-loop must still stop on SIGTERM. Runs it as PID 1 of a new PID namespace (`unshare`).
#[test]
fn as_pid_1_sigterm_still_stops_the_run_and_writes_the_reports() {
    let dir = tempfile::tempdir().unwrap();
    project(dir.path(), json!({"calls": [verdict("approved", 95, "")]}));
    std::fs::write(
        dir.path().join("qa-loop.yml"),
        "unit_tests:\n  commands: [\"touch started; sleep 60 & wait\"]\n",
    )
    .unwrap();
    let bin = assert_cmd::cargo::cargo_bin("qa-loop");
    let mut unshare = std::process::Command::new("unshare")
        .args(["--fork", "--pid", "--mount-proc"])
        .arg(&bin)
        .args(REPLAY_RUN)
        .current_dir(dir.path())
        .env_remove("QA_LOOP_PROVIDER")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("unshare (util-linux) runs qa-loop as PID 1; this test needs root");
    wait_for(30, "the test command never started", || {
        dir.path().join("started").exists()
    });
    // qa-loop is unshare's only child; in its namespace it is PID 1.
    let children =
        std::fs::read_to_string(format!("/proc/{0}/task/{0}/children", unshare.id())).unwrap();
    let qa_pid: i32 = children.split_whitespace().next().unwrap().parse().unwrap();
    let status = std::fs::read_to_string(format!("/proc/{qa_pid}/status")).unwrap();
    let ns_pid = status.lines().find(|l| l.starts_with("NSpid:")).unwrap();
    assert!(
        ns_pid.trim_end().ends_with("\t1"),
        "not PID 1 in its namespace: {ns_pid}"
    );
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(qa_pid),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let (status, err) = wait_exit(&mut unshare, 40, "qa-loop as PID 1 ignored SIGTERM");
    assert_eq!(status.code(), Some(4), "{err}");
    assert_eq!(qa_result(dir.path())["verdict"], "error");
}

#[test]
fn a_fixer_command_works_on_the_fix_request_without_secrets_and_its_failure_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let env_dump = dir.path().join("fixer-env.txt");
    project(
        dir.path(),
        json!({"calls": [verdict("rejected", 30, "add subtracts"), verdict("approved", 90, "")]}),
    );
    let config = std::fs::read_to_string(dir.path().join("qa-loop.yml")).unwrap();
    std::fs::write(
        dir.path().join("qa-loop.yml"),
        format!(
            "{config}fixer_command: 'grep -q \"return a + b\" \"$QA_FIX_REQUEST\" && sed -i \"s/a - b/a + b/\" calc.py && env > \"$ENV_DUMP\" && echo fixed Q1'\n"
        ),
    )
    .unwrap();
    let o = Command::cargo_bin("qa-loop")
        .unwrap()
        .current_dir(dir.path())
        .env_remove("GITHUB_BASE_REF")
        .env("GITHUB_TOKEN", "ghs_canary_fixer")
        .env("ENV_DUMP", &env_dump)
        .args(REPLAY_RUN)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        std::fs::read_to_string(dir.path().join("calc.py"))
            .unwrap()
            .contains("a + b")
    );
    let env = std::fs::read_to_string(&env_dump).unwrap();
    assert!(env.contains("QA_LOOP_ITERATION=1"), "{env}");
    assert!(env.contains("QA_FIX_REQUEST=/"), "{env}");
    assert!(
        !env.contains("ghs_canary_fixer"),
        "no secrets for the fixer command"
    );
    assert!(dir.path().join(".qa-loop/logs/fixer-1.log").exists());
    let report = std::fs::read_to_string(dir.path().join(".qa-loop/qa_report.md")).unwrap();
    assert!(report.contains("fixed Q1"), "{report}");

    // A failing fixer command is a loop error, named in the result.
    let dir = tempfile::tempdir().unwrap();
    project(
        dir.path(),
        json!({"calls": [verdict("rejected", 30, "add subtracts")]}),
    );
    let config = std::fs::read_to_string(dir.path().join("qa-loop.yml")).unwrap();
    std::fs::write(
        dir.path().join("qa-loop.yml"),
        format!("{config}fixer_command: 'echo cannot; exit 3'\nmax_consecutive_errors: 1\n"),
    )
    .unwrap();
    let o = replay_run(dir.path(), &[]);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    let errors = qa_result(dir.path())["errors"].to_string();
    assert!(
        errors.contains("exit code 3") && errors.contains("cannot"),
        "{errors}"
    );
}

/// An Actions-like environment around a replayed run: the real `pull_request.opened` payload
/// (npm `@octokit/webhooks-examples` 7.6.1), `$GITHUB_OUTPUT` and `$GITHUB_STEP_SUMMARY` files.
fn actions_run(dir: &Path, payload: &Value, extra: &[&str]) -> (Output, String, String) {
    let event = dir.join("event.json");
    // The workflow checked out the PR head (qa-loop refuses to report on another commit).
    let mut payload = payload.clone();
    if payload.pointer("/pull_request/head/sha").is_some() {
        payload["pull_request"]["head"]["sha"] = json!(git_out(dir, &["rev-parse", "HEAD"]));
    }
    std::fs::write(&event, payload.to_string()).unwrap();
    let (out, summary) = (dir.join("gh-output"), dir.join("gh-summary"));
    let o = Command::cargo_bin("qa-loop")
        .unwrap()
        .current_dir(dir)
        .env_remove("GITHUB_BASE_REF")
        .env_remove("GITHUB_TOKEN")
        .env_remove("QA_LOOP_GITHUB_TOKEN")
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_EVENT_NAME", "pull_request")
        .env("GITHUB_EVENT_PATH", &event)
        .env("GITHUB_REPOSITORY", "Codertocat/Hello-World")
        .env("GITHUB_RUN_ID", "4242")
        .env("GITHUB_OUTPUT", &out)
        .env("GITHUB_STEP_SUMMARY", &summary)
        .env("QA_LOOP_API_KEY", "sk-mask-me")
        .args(REPLAY_RUN)
        .args(extra)
        .output()
        .unwrap();
    let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
    (o, read(&out), read(&summary))
}

fn pr_payload() -> Value {
    serde_json::from_str(
        &std::fs::read_to_string("tests/fixtures/github/events/pull_request.opened.json").unwrap(),
    )
    .unwrap()
}

#[test]
fn in_actions_outputs_summary_groups_and_masks_are_written() {
    let dir = tempfile::tempdir().unwrap();
    project(
        dir.path(),
        json!({"calls": [verdict("rejected", 30, "add subtracts"),
            {"role": "fixer", "tool_calls": [{"id": "e1", "name": "edit_file",
              "arguments": {"path": "calc.py", "old": "return a - b", "new": "return a + b"}}]},
            fixer_finish(1), verdict("approved", 91, "")]}),
    );
    let (o, outputs, summary) = actions_run(dir.path(), &pr_payload(), &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    for want in [
        "verdict<<ghadelimiter_",
        "\napproved\n",
        "score<<",
        "\n91\n",
        "iterations<<",
        "junit-path<<",
        "commits-pushed<<",
        "cost-usd<<",
    ] {
        assert!(outputs.contains(want), "{want} in {outputs}");
    }
    assert!(
        summary.contains("QA Loop: approved") && summary.contains("iteration 2"),
        "{summary}"
    );
    let err = stderr(&o);
    assert!(
        err.contains("::group::qa-loop: verify (pass 1)") && err.contains("::endgroup::"),
        "{err}"
    );
    assert!(err.contains("::group::qa-loop: fix (iteration 1)"), "{err}");
    assert!(stdout(&o).contains("::add-mask::sk-mask-me"));
}

#[test]
fn in_actions_bot_events_are_skipped_and_bad_payloads_name_the_field() {
    let dir = tempfile::tempdir().unwrap();
    project(dir.path(), json!({"calls": [verdict("approved", 90, "")]}));
    let mut payload = pr_payload();
    payload["sender"] = json!({"login": "renovate[bot]", "type": "Bot"});
    let (o, outputs, _) = actions_run(dir.path(), &payload, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("::notice title=qa-loop skipped::"),
        "{}",
        stdout(&o)
    );
    assert!(stderr(&o).contains("allowed-bots"));
    assert!(outputs.is_empty() && !dir.path().join(".qa-loop").exists());
    // Allowed, it runs.
    let (o, _, _) = actions_run(dir.path(), &payload, &["--allowed-bots", "renovate"]);
    assert_ne!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(dir.path().join(".qa-loop/qa-result.json").exists());

    let dir = tempfile::tempdir().unwrap();
    project(dir.path(), json!({"calls": []}));
    let mut bad = pr_payload();
    bad["pull_request"]["head"]
        .as_object_mut()
        .unwrap()
        .remove("sha");
    let (o, _, _) = actions_run(dir.path(), &bad, &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("`pull_request.head.sha`"),
        "{}",
        stderr(&o)
    );
    assert!(!dir.path().join(".qa-loop").exists());
}

#[test]
fn the_demo_says_when_python3_is_missing() {
    let bin_dir = tempfile::tempdir().unwrap();
    let git = std::process::Command::new("sh")
        .args(["-c", "command -v git"])
        .output()
        .unwrap();
    let git = String::from_utf8_lossy(&git.stdout).trim().to_string();
    std::os::unix::fs::symlink(&git, bin_dir.path().join("git")).unwrap();
    let out = tempfile::tempdir().unwrap();
    let o = Command::cargo_bin("qa-loop")
        .unwrap()
        .env("PATH", bin_dir.path())
        .args(["demo", "--dir"])
        .arg(out.path().join("d"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("python3"), "{}", stderr(&o));
}

/// The malformed-input corpus (`tests/fixtures/malformed/`, listed in RELIABILITY.md): every
/// config, plan and spec there gives exit 2 from `validate` and from `run`, naming the file with
/// the expected `line:col`, and nothing is written.
#[test]
fn every_malformed_input_of_the_corpus_exits_2_with_its_position_and_writes_nothing() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/malformed");
    let expected: serde_json::Map<String, Value> =
        serde_json::from_str(&std::fs::read_to_string(corpus.join("expected.json")).unwrap())
            .unwrap();
    let files: Vec<String> = std::fs::read_dir(&corpus)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "expected.json")
        .collect();
    assert!(files.len() >= 30, "{} inputs", files.len());
    assert_eq!(
        files.len(),
        expected.len(),
        "every input has an expectation"
    );
    for name in files {
        let want = expected[&name].as_str().unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::fs::copy(corpus.join(&name), dir.path().join(&name)).unwrap();
        let flag = match name.split('-').next().unwrap() {
            "config" => "--config",
            "plan" => "--plan",
            "spec" => "--spec",
            other => panic!("{other}"),
        };
        for command in [
            vec!["validate", flag, &name],
            vec![
                "run",
                "--provider",
                "replay",
                "--replay-session",
                "session.json",
                flag,
                &name,
            ],
        ] {
            let o = qa(dir.path(), &command);
            let err = stderr(&o);
            assert_eq!(o.status.code(), Some(2), "{name} {command:?}: {err}");
            assert!(
                err.contains(&format!("{name}:{want}")),
                "{name} {command:?}: want {name}:{want} in\n{err}"
            );
            assert_eq!(
                std::fs::read_dir(dir.path()).unwrap().count(),
                1,
                "{name} {command:?}: a file was written"
            );
        }
    }
}

/// `--events-jsonl FILE`: one JSON line per event, in order, as the run goes (the trivial sink
/// that shows adding an output is one file and one line of wiring).
#[test]
fn events_jsonl_writes_one_line_per_run_event() {
    let dir = tempfile::tempdir().unwrap();
    let session = json!({"calls": [
        verdict("rejected", 30, "add subtracts instead of adding"),
        {"role": "fixer", "tool_calls": [{"id": "e1", "name": "edit_file",
            "arguments": {"path": "calc.py", "old": "return a - b", "new": "return a + b"}}]},
        fixer_finish(1),
        verdict("approved", 95, ""),
    ]});
    project(dir.path(), session);
    let events = dir.path().join("events.jsonl");
    let o = replay_run(dir.path(), &["--events-jsonl", events.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let lines: Vec<Value> = std::fs::read_to_string(&events)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kinds: Vec<&str> = lines.iter().map(|l| l["event"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "started",
            "reviewed",
            "fixes_applied",
            "reviewed",
            "finished"
        ]
    );
    assert_eq!(lines[1]["status"], "rejected");
    assert_eq!(lines[1]["score"], 30);
    assert_eq!(lines[1]["issues"], 2, "Q1 and the failed gate");
    assert_eq!(lines[2]["iteration"], 1);
    assert_eq!(lines[3]["status"], "approved");
    assert_eq!(lines[4]["verdict"], "approved");
    assert_eq!(lines[4]["iterations"], 2);
    assert!(
        lines
            .iter()
            .all(|l| l["at"].as_str().is_some_and(|t| t.ends_with('Z')))
    );
}

/// Issue 35, point 5: a committed link as the out dir makes the run refuse before anything is
/// written (nothing lands outside the checkout); a link as `QA_FIX_REQUEST.md` is neither read
/// nor moved into the out dir; a test report that is a link to an outside file is not read.
#[test]
fn links_in_the_checkout_are_never_followed() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("credentials");
    std::fs::write(&secret, "OUTSIDE-SECRET-CONTENT\n").unwrap();
    project(dir.path(), json!({"calls": [verdict("approved", 95, "")]}));
    std::os::unix::fs::symlink(outside.path(), dir.path().join(".qa-loop")).unwrap();
    let o = replay_run(dir.path(), &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("reached through a link"),
        "{}",
        stderr(&o)
    );
    let left: Vec<_> = std::fs::read_dir(outside.path()).unwrap().collect();
    assert_eq!(left.len(), 1, "something was written outside the checkout");

    std::fs::remove_file(dir.path().join(".qa-loop")).unwrap();
    std::os::unix::fs::symlink(&secret, dir.path().join("QA_FIX_REQUEST.md")).unwrap();
    std::os::unix::fs::symlink(&secret, dir.path().join("report.xml")).unwrap();
    std::fs::write(
        dir.path().join("qa-loop.yml"),
        "risk_level: low\nunit_tests:\n  commands: [\"python3 test_calc.py || true\"]\n  junit: [\"report.xml\"]\n",
    )
    .unwrap();
    let o = replay_run(dir.path(), &[]);
    assert!(stderr(&o).contains("a link, not read"), "{}", stderr(&o));
    assert!(
        dir.path().join("QA_FIX_REQUEST.md").is_symlink(),
        "the link was moved"
    );
    let mut everything = stderr(&o);
    for entry in walk(&dir.path().join(".qa-loop")) {
        assert!(!entry.is_symlink(), "{} is a link", entry.display());
        everything.push_str(&std::fs::read_to_string(&entry).unwrap_or_default());
    }
    assert!(
        !everything.contains("OUTSIDE-SECRET-CONTENT"),
        "{everything}"
    );
    assert!(
        everything.contains("is a link"),
        "the report names the refused link"
    );

    // The config itself a link out of the checkout: not read, not quoted in the error.
    std::fs::remove_file(dir.path().join("qa-loop.yml")).unwrap();
    std::os::unix::fs::symlink(&secret, dir.path().join("qa-loop.yml")).unwrap();
    let o = replay_run(dir.path(), &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("outside the checkout"),
        "{}",
        stderr(&o)
    );
    assert!(
        !stderr(&o).contains("OUTSIDE-SECRET-CONTENT"),
        "{}",
        stderr(&o)
    );
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() && !p.is_symlink() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// Issue 35, point 7: a value qa-loop substitutes into an MCP server's `env` (`${NAME}`) is a
/// secret: when the server prints it, the model, the reports and the log get `***`, and test
/// commands never get the variable.
#[test]
fn a_secret_given_to_an_mcp_server_is_redacted_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let secret = "mcp-secret-value-7f3a9c";
    let server = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/test_server.py");
    project(
        dir.path(),
        json!({"calls": [
            {"role": "reviewer", "tool_calls": [{"id": "m1", "name": "mcp__test__env", "arguments": {"name": "TOKEN"}}]},
            {"role": "reviewer", "expect_tool_results": ["***"], "expect_not_in_request": [secret],
             "tool_calls": [{"id": "v1", "name": "submit_verdict", "arguments": {"status": "approved",
               "score": 95, "confidence": 0.9, "summary": "s", "criteria": [], "issues": []}}]}
        ]}),
    );
    std::fs::write(
        dir.path().join("calc.py"),
        "def add(a, b):\n    return a + b\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("qa-loop.yml"),
        format!(
            "risk_level: low\nunit_tests:\n  commands: [\"env > child-env.txt\", \"python3 test_calc.py\"]\nmcp_servers:\n  test:\n    command: python3\n    args: [{:?}, ok]\n    env: {{TOKEN: \"Bearer ${{MCP_TEST_SECRET}}\"}}\n    agents: [reviewer]\n",
            server.display().to_string()
        ),
    )
    .unwrap();
    let o = replay_cmd(dir.path(), &[])
        .env("MCP_TEST_SECRET", secret)
        .output()
        .unwrap();
    let r = qa_result(dir.path());
    assert_eq!(r["verdict"], "approved", "{} {}", r["errors"], stderr(&o));
    let child_env = std::fs::read_to_string(dir.path().join("child-env.txt")).unwrap();
    assert!(!child_env.contains("MCP_TEST_SECRET"), "{child_env}");
    let mut everything = format!("{}{}", stderr(&o), String::from_utf8_lossy(&o.stdout));
    for entry in walk(&dir.path().join(".qa-loop")) {
        everything.push_str(&std::fs::read_to_string(&entry).unwrap_or_default());
    }
    assert!(!everything.contains(secret), "the secret was published");
}

/// Issue 49, point 1: a path the operator gives may lie outside the checkout (`--config
/// ../qa.yml`, `--plan ../plan.json`): there is no link, so it is read. Only a link inside the
/// checkout that leads out is refused, and the message says it is one.
#[test]
fn operator_paths_with_dot_dot_are_read_and_only_links_out_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    std::fs::write(
        tmp.path().join("qa.yml"),
        "risk_level: low\nunit_tests:\n  commands: [\"true\"]\n",
    )
    .unwrap();
    let o = qa(&repo, &["validate", "--config", "../qa.yml"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!stderr(&o).contains("link"), "{}", stderr(&o));
    std::fs::write(
        tmp.path().join("plan.json"),
        r#"{"feature": "f", "phases": []}"#,
    )
    .unwrap();
    let o = qa(
        &repo,
        &[
            "validate",
            "--config",
            "../qa.yml",
            "--plan",
            "../plan.json",
        ],
    );
    assert!(!stderr(&o).contains("a link"), "{}", stderr(&o));
    // A committed link to the same file outside is refused, naming the link.
    std::os::unix::fs::symlink("../qa.yml", repo.join("linked.yml")).unwrap();
    let o = qa(&repo, &["validate", "--config", "linked.yml"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("linked.yml: a link to") && stderr(&o).contains("outside the checkout"),
        "{}",
        stderr(&o)
    );
}

/// Issue 51: the cloud credentials the providers read never reach a suite; `pass_env` (the config
/// key `env_passthrough`) lets a project's own tests have exactly the ones it names.
#[test]
fn cloud_credentials_reach_a_suite_only_when_passed_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for (pass, want_key) in [("", false), ("pass_env: [AWS_ACCESS_KEY_ID]\n", true)] {
        std::fs::write(
            d.join("qa-loop.yml"),
            format!("risk_level: low\nunit_tests:\n  commands: [\"env > seen.txt\"]\n{pass}"),
        )
        .unwrap();
        std::fs::write(d.join(".gitignore"), ".qa-loop/\nseen.txt\nsession.json\n").unwrap();
        let approve = serde_json::json!({"calls": [{"role": "reviewer", "tool_calls": [{"id": "v",
            "name": "submit_verdict", "arguments": {"status": "approved", "score": 95,
            "confidence": 0.9, "summary": "ok", "criteria": [], "issues": []}}]}]});
        std::fs::write(d.join("session.json"), approve.to_string()).unwrap();
        if !d.join(".git").exists() {
            git(d, &["init", "-q"]);
        }
        git(d, &["add", "-A"]);
        git(d, &["commit", "-q", "--allow-empty", "-m", "c"]);
        let o = replay_cmd(d, &["--mode", "review"])
            .env("AWS_REGION", "eu-west-1")
            .env("AWS_ACCESS_KEY_ID", "AKIAPASSENVTEST00001")
            .env(
                "AWS_SECRET_ACCESS_KEY",
                "passenvSECRET000000000000000000000000001",
            )
            .env("GOOGLE_APPLICATION_CREDENTIALS", "/nonexistent/adc.json")
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let seen = std::fs::read_to_string(d.join("seen.txt")).unwrap();
        assert!(seen.contains("AWS_REGION=eu-west-1"), "{seen}");
        assert_eq!(
            seen.contains("AWS_ACCESS_KEY_ID=AKIAPASSENVTEST00001"),
            want_key,
            "{pass}: {seen}"
        );
        assert!(!seen.contains("passenvSECRET"), "{seen}");
        assert!(!seen.contains("GOOGLE_APPLICATION_CREDENTIALS"), "{seen}");
    }
}
