//! The test-integrity guard end to end (issue 22): the real binary, real pytest with its JUnit
//! report, and a replayed fixer that cheats — it deletes the failing test, adds a skip marker,
//! weakens the assertion, or makes the suite collect nothing. Each fix turns the suite green and
//! the reviewer (replayed) approves, yet the iteration is rejected with an issue naming what was
//! weakened, and the next fix request says so. A fix that corrects a test an issue called wrong
//! is accepted.
//!
//! `.ci/run` installs pytest (and sets `QA_LOOP_REAL_TOOLS=1`, which makes a missing pytest a
//! failure); elsewhere a missing pytest skips these tests with a note on stderr.

mod support;
use std::path::Path;
use support::*;

use serde_json::{Value, json};

const TESTS: &str = "from calc import add, sub\n\n\ndef test_add():\n    assert add(2, 2) == 4\n\n\ndef test_sub():\n    assert sub(5, 3) == 2\n";

/// `calc.add` subtracts; `test_add` fails, `test_sub` passes.
fn project(dir: &Path, fixer: Vec<Value>, tests: &str) {
    std::fs::write(
        dir.join("calc.py"),
        "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n",
    )
    .unwrap();
    std::fs::create_dir_all(dir.join("tests")).unwrap();
    std::fs::write(dir.join("tests/test_calc.py"), tests).unwrap();
    let config = json!({
        "risk_level": "low",
        "unit_tests": {
            "required": true,
            "commands": ["python3 -m pytest -q -p no:cacheprovider --rootdir . --junitxml=reports/junit.xml tests"],
            "junit": ["reports/junit.xml"]
        },
        "max_iterations": 3
    });
    std::fs::write(dir.join("qa-loop.json"), config.to_string()).unwrap();
    std::fs::write(
        dir.join("conftest.py"),
        "import sys, os\nsys.path.insert(0, os.path.dirname(__file__))\n",
    )
    .unwrap();
    std::fs::write(
        dir.join(".gitignore"),
        ".qa-loop/\nsession.json\nreports/\n__pycache__/\n",
    )
    .unwrap();
    git(dir, &["init", "-q"]);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "init"]);
    let reject = json!({"role": "reviewer", "tool_calls": [{"id": "r1", "name": "submit_verdict", "arguments": {
        "status": "rejected", "score": 30, "confidence": 0.9, "summary": "add subtracts",
        "criteria": [], "issues": [{"id": "Q1", "title": "add() subtracts instead of adding",
        "type": "unit_test", "severity": "high", "file": "calc.py", "line": 2, "fix": "return a + b"}]}}]});
    let approve = json!({"role": "reviewer", "tool_calls": [{"id": "a", "name": "submit_verdict", "arguments": {
        "status": "approved", "score": 95, "confidence": 0.9, "summary": "the tests pass",
        "criteria": [], "issues": []}}]});
    let finish = json!({"role": "fixer", "tool_calls": [{"id": "f", "name": "finish", "arguments": {"summary": "done"}}]});
    let mut calls = vec![reject];
    calls.extend(fixer);
    calls.push(finish.clone());
    // The reviewer is fooled; then a fixer that does nothing more, and the reviewer again.
    calls.push(approve.clone());
    calls.push(finish);
    calls.push(approve);
    std::fs::write(
        dir.join("session.json"),
        json!({ "calls": calls }).to_string(),
    )
    .unwrap();
}

fn write(path: &str, content: &str) -> Value {
    json!({"role": "fixer", "tool_calls": [{"id": "w", "name": "write_file",
        "arguments": {"path": path, "content": content}}]})
}

/// Runs a cheating fix; the iterations after it are rejected by the `test_integrity` gate with
/// an issue whose title contains `named`, and the next fix request carries it. The unit suite's
/// own gate is `unit` then: "passed" (only the guard stands in the way) or "ran no tests".
fn cheated(fixer: Vec<Value>, named: &str) {
    cheated_with(fixer, named, "passed")
}

fn cheated_with(fixer: Vec<Value>, named: &str, unit_gate: &str) {
    if !have_pytest() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    project(d, fixer, TESTS);
    let o = replay_run(d, &[]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    // Not approved: out of iterations (1), or escalated (3) when the matcher sees the weakened
    // test of iterations 2 and 3 as the failure of iteration 1 recurring — a fixer that keeps
    // cheating goes to a human.
    assert!(
        matches!(o.status.code(), Some(1 | 3)),
        "not approved: {stderr}"
    );
    let r = qa_result(d);
    let history = r["history"].as_array().unwrap();
    assert_eq!(history.len(), 3, "{stderr}");
    for it in &history[1..] {
        let gate = it["verification"]["gates"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["name"] == "test_integrity")
            .unwrap_or_else(|| panic!("no test_integrity gate: {it:#}"));
        assert_eq!(gate["status"], "failed", "{gate:#}");
        assert_eq!(
            it["status"], "rejected",
            "the reviewer approved, the gate decides"
        );
        // The unit suite itself went green (only the guard stands in the way), or it ran no test.
        let unit = it["verification"]["gates"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["name"] == "unit_tests")
            .unwrap();
        match unit_gate {
            "passed" => assert_eq!(unit["status"], "passed", "{unit:#}"),
            _ => {
                assert_eq!(unit["status"], "failed", "{unit:#}");
                let summary = unit["summary"].as_str().unwrap();
                assert!(summary.starts_with(unit_gate), "{unit:#}");
            }
        }
        let titles: Vec<&str> = it["issues"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["title"].as_str().unwrap())
            .collect();
        assert!(titles.iter().any(|t| t.contains(named)), "{titles:?}");
        let issue = it["issues"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["title"].as_str().unwrap().contains(named))
            .unwrap();
        assert_eq!(
            (issue["type"].as_str(), issue["severity"].as_str()),
            (Some("unit_test"), Some("high"))
        );
    }
    let request = std::fs::read_to_string(d.join(".qa-loop/QA_FIX_REQUEST.md")).unwrap();
    assert!(
        request.contains(named),
        "the fix request says what was weakened:\n{request}"
    );
}

#[test]
fn a_fix_that_deletes_the_failing_test_is_rejected() {
    cheated(
        vec![write(
            "tests/test_calc.py",
            "from calc import sub\n\n\ndef test_sub():\n    assert sub(5, 3) == 2\n",
        )],
        "the fix removed the test `test_add`",
    );
}

#[test]
fn a_fix_that_adds_a_skip_marker_is_rejected() {
    cheated(
        vec![write(
            "tests/test_calc.py",
            &TESTS.replace(
                "def test_add",
                "import pytest\n\n\n@pytest.mark.skip(reason=\"later\")\ndef test_add",
            ),
        )],
        "the fix made the test `test_add` skipped",
    );
}

#[test]
fn a_fix_that_weakens_the_assertion_is_rejected() {
    cheated(
        vec![write(
            "tests/test_calc.py",
            &TESTS.replace(
                "    assert add(2, 2) == 4\n",
                "    add(2, 2)\n    assert True\n",
            ),
        )],
        "with ones that always hold",
    );
}

#[test]
fn a_fix_that_makes_the_suite_collect_nothing_is_rejected() {
    // A conftest that deselects every test and forces exit 0: the command passes, the JUnit
    // report is empty — the suite ran no tests, and the guard names the weakening.
    cheated_with(
        vec![write(
            "tests/conftest.py",
            "def pytest_collection_modifyitems(items):\n    items.clear()\n\n\ndef pytest_sessionfinish(session, exitstatus):\n    session.exitstatus = 0\n",
        )],
        "collects no tests after the fix",
        "ran no tests: the JUnit reports (reports/junit.xml) hold no test",
    );
}

/// The reviewer says the test is wrong; the fixer corrects the test (and the code): accepted,
/// and the change is noted on the gate.
#[test]
fn a_fix_that_corrects_a_test_an_issue_called_wrong_is_accepted() {
    if !have_pytest() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let wrong_tests = TESTS.replace(
        "    assert sub(5, 3) == 2\n",
        "    assert sub(5, 3) == 2\n    assert sub(5, 3) == 3\n",
    );
    project(d, vec![], &wrong_tests);
    let reject = json!({"role": "reviewer", "tool_calls": [{"id": "r1", "name": "submit_verdict", "arguments": {
        "status": "rejected", "score": 30, "confidence": 0.9, "summary": "add subtracts; test_sub is wrong",
        "criteria": [], "issues": [
            {"id": "Q1", "title": "add() subtracts instead of adding", "type": "unit_test",
             "severity": "high", "file": "calc.py", "line": 2, "fix": "return a + b"},
            {"id": "Q2", "title": "test_sub is wrong: it expects 5 - 3 to be 3", "type": "unit_test",
             "severity": "medium", "file": "tests/test_calc.py", "line": 9, "fix": "expect 2"}]}}]});
    let approve = json!({"role": "reviewer", "tool_calls": [{"id": "a", "name": "submit_verdict", "arguments": {
        "status": "approved", "score": 95, "confidence": 0.9, "summary": "fixed",
        "criteria": [], "issues": []}}]});
    let calls = json!([
        reject,
        {"role": "fixer", "tool_calls": [
            {"id": "e1", "name": "edit_file", "arguments": {"path": "calc.py", "old": "def add(a, b):\n    return a - b", "new": "def add(a, b):\n    return a + b"}},
            {"id": "e2", "name": "edit_file", "arguments": {"path": "tests/test_calc.py", "old": "    assert sub(5, 3) == 3\n", "new": ""}}]},
        {"role": "fixer", "tool_calls": [{"id": "f", "name": "finish", "arguments": {"summary": "Q1, Q2"}}]},
        approve
    ]);
    std::fs::write(
        d.join("session.json"),
        json!({ "calls": calls }).to_string(),
    )
    .unwrap();
    let o = replay_run(d, &[]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let r = qa_result(d);
    let gate = r["history"][1]["verification"]["gates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == "test_integrity")
        .cloned()
        .unwrap();
    assert_eq!(gate["status"], "passed", "{gate:#}");
    let excerpt = gate["excerpt"].as_str().unwrap();
    assert!(
        excerpt.contains(
            "allowed: the fix removed 1 assertion(s) from `tests/test_calc.py` (as Q2 asked)"
        ),
        "{gate:#}"
    );
}

fn have_rerunfailures() -> bool {
    let ok = std::process::Command::new("python3")
        .args(["-c", "import pytest_rerunfailures"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var_os("QA_LOOP_REAL_TOOLS").is_none(),
            "pytest-rerunfailures is not installed (.ci/run installs it)"
        );
        eprintln!("skipped: pytest-rerunfailures is not installed");
    }
    ok
}

/// Issue 37, reruns: pytest-rerunfailures writes every attempt as its own testcase. In the first
/// pass `test_flaky` fails once and passes on its re-run, `test_add` fails all three attempts;
/// the fixer repairs `add`, and in the second pass nothing needs a re-run. Each test is one
/// test whatever its attempts: the guard sees 3 tests before and after and the correct fix is
/// approved; `test_flaky` is reported flaky and never handed to the fixer. With `flaky: fail`
/// the flaky test blocks, as a finding of its own.
#[test]
fn reruns_are_one_test_and_a_correct_fix_after_a_rerun_is_approved() {
    if !have_pytest() || !have_rerunfailures() {
        return;
    }
    for policy in ["report", "fail"] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("calc.py"), "def add(a, b):\n    return a - b\n").unwrap();
        std::fs::create_dir_all(d.join("tests")).unwrap();
        std::fs::write(
            d.join("tests/test_calc.py"),
            "import os\nfrom calc import add\n\nCOUNT = os.path.join(os.path.dirname(__file__), '..', '.flaky-count')\n\n\ndef test_flaky():\n    n = int(open(COUNT).read()) if os.path.exists(COUNT) else 0\n    open(COUNT, 'w').write(str(n + 1))\n    assert n >= 1, 'fails on its very first run only'\n\n\ndef test_add():\n    assert add(2, 2) == 4\n\n\ndef test_one():\n    assert add(0, 1) in (1, -1)\n",
        )
        .unwrap();
        std::fs::write(
            d.join("conftest.py"),
            "import sys, os\nsys.path.insert(0, os.path.dirname(__file__))\n",
        )
        .unwrap();
        let config = json!({
            "risk_level": "low",
            "flaky": policy,
            "unit_tests": {
                "required": true,
                "commands": ["python3 -m pytest -q -p no:cacheprovider --reruns 2 --rootdir . --junitxml=reports/junit.xml tests"],
                "junit": ["reports/junit.xml"]
            },
            "max_iterations": 2
        });
        std::fs::write(d.join("qa-loop.json"), config.to_string()).unwrap();
        std::fs::write(
            d.join(".gitignore"),
            ".qa-loop/\nreview-out/\nsession.json\nreports/\n__pycache__/\n.flaky-count\n",
        )
        .unwrap();
        git(d, &["init", "-q"]);
        git(d, &["add", "-A"]);
        git(d, &["commit", "-q", "-m", "init"]);
        let verdict = |status: &str| {
            json!({"role": "reviewer", "tool_calls": [{"id": "v", "name": "submit_verdict", "arguments": {
            "status": status, "score": if status == "approved" { 95 } else { 40 }, "confidence": 0.9,
            "summary": "s", "criteria": [], "issues": []}}]})
        };
        let fix = json!({"role": "fixer", "tool_calls": [{"id": "w", "name": "write_file",
            "arguments": {"path": "calc.py", "content": "def add(a, b):\n    return a + b\n"}}]});
        let finish = json!({"role": "fixer", "tool_calls": [{"id": "f", "name": "finish", "arguments": {"summary": "add adds"}}]});
        std::fs::write(
            d.join("session.json"),
            json!({"calls": [verdict("rejected")]}).to_string(),
        )
        .unwrap();
        // A review of the change as it is: the report and qa-loop's JUnit file show the flaky test.
        let o = replay_run(d, &["--mode", "review", "--out-dir", "review-out"]);
        assert_eq!(
            o.status.code(),
            Some(1),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let report = std::fs::read_to_string(d.join("review-out/qa_report.md")).unwrap();
        assert!(
            report
                .contains("`tests.test_calc::test_flaky`: flaky — failed, then passed on a re-run"),
            "{report}"
        );
        let junit = std::fs::read_to_string(d.join("review-out/qa-loop-junit.xml")).unwrap();
        let flaky_case = junit
            .split("<testcase ")
            .find(|c| c.contains("name=\"test_flaky\""))
            .map(|c| c.split("</testcase>").next().unwrap_or(c).to_string())
            .unwrap_or_else(|| panic!("{junit}"));
        assert!(
            flaky_case.contains("flaky: true (failed, then passed on a re-run)\n"),
            "{flaky_case}"
        );
        std::fs::remove_file(d.join(".flaky-count")).unwrap();
        std::fs::remove_dir_all(d.join("review-out")).unwrap();
        std::fs::write(
            d.join("session.json"),
            json!({"calls": [verdict("rejected"), fix.clone(), finish.clone(), verdict("approved")]}).to_string(),
        )
        .unwrap();

        let o = replay_run(d, &[]);
        let stderr = String::from_utf8_lossy(&o.stderr);
        let r = qa_result(d);
        let history = r["history"].as_array().unwrap();
        let first = &history[0];
        let unit = first["verification"]["gates"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["name"] == "unit_tests")
            .unwrap()
            .clone();
        let summary = unit["summary"].as_str().unwrap();
        assert!(
            summary.contains("3 tests: 2 passed, 1 failed, 1 flaky (passed on a re-run)"),
            "{policy}: {summary}"
        );
        let titles: Vec<String> = first["issues"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["title"].as_str().unwrap().to_string())
            .collect();
        assert!(titles.iter().any(|t| t.contains("test_add")), "{titles:?}");
        let flaky_issue = titles.iter().any(|t| t.contains("test_flaky"));

        if policy == "report" {
            assert!(
                !flaky_issue,
                "a flaky test is not a defect for the fixer: {titles:?}"
            );
            // The fix made every test pass with no re-run: 3 tests before and after.
            assert_eq!(o.status.code(), Some(0), "approved: {stderr}");
            let last = history.last().unwrap();
            let integrity = last["verification"]["gates"]
                .as_array()
                .unwrap()
                .iter()
                .find(|g| g["name"] == "test_integrity")
                .unwrap_or_else(|| panic!("no test_integrity gate: {last:#}"));
            assert_eq!(integrity["status"], "passed", "{integrity:#}");
        } else {
            assert!(flaky_issue, "`flaky: fail` blocks on it: {titles:?}");
            assert_eq!(unit["status"], "failed", "{summary}");
        }
    }
}

/// Issue 37, weakening judged by running the tests: a fix that loosens `assert add(2, 2) == 4`
/// into a check that is not vacuous — a type check, a none check, a widened tolerance, a
/// swallowed failure — passes every static detector. The test, as the fix left it, is run on
/// the code before the fix (a scratch checkout): it passes there, so it no longer catches the
/// defect; the iteration is rejected with an issue naming the test, and the fix request says so.
#[test]
fn a_fix_that_loosens_an_assertion_is_caught_by_running_the_test_on_the_old_code() {
    for loosened in [
        "    assert isinstance(add(2, 2), int)\n",
        "    assert add(2, 2) is not None\n",
        "    assert abs(add(2, 2) - 4) <= 10\n",
        "    try:\n        assert add(2, 2) == 4\n    except AssertionError:\n        pass\n",
    ] {
        cheated(
            vec![write(
                "tests/test_calc.py",
                &TESTS.replace("    assert add(2, 2) == 4\n", loosened),
            )],
            "`tests.test_calc::test_add` passes on the code before the fix",
        );
    }
}

/// A fix that repairs the code and strengthens the failing test (it still fails on the old
/// code) is not a weakening: approved.
#[test]
fn a_fix_that_repairs_the_code_and_sharpens_the_test_is_approved() {
    if !have_pytest() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let sharper = TESTS.replace(
        "    assert add(2, 2) == 4\n",
        "    assert add(2, 2) == 4\n    assert add(-1, 1) == 0\n",
    );
    project(
        d,
        vec![
            write("tests/test_calc.py", &sharper),
            write(
                "calc.py",
                "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n",
            ),
        ],
        TESTS,
    );
    let o = replay_run(d, &[]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "approved: {stderr}");
    let r = qa_result(d);
    let last = r["history"].as_array().unwrap().last().unwrap().clone();
    let gate = last["verification"]["gates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == "test_integrity")
        .unwrap()
        .clone();
    assert_eq!(gate["status"], "passed", "{gate:#}");
}

/// Evidence for new tests: the fix repairs `add` and adds two tests; run on the code before the
/// fix, `test_add_negative` fails there (it proves the fix) and `test_sub_again` passes there
/// too (it proves nothing). The report and qa-loop's JUnit file say so per test.
#[test]
fn new_tests_are_run_on_the_old_code_and_say_whether_they_prove_the_fix() {
    if !have_pytest() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let with_new = format!(
        "{TESTS}\n\ndef test_add_negative():\n    assert add(-1, 1) == 0\n\n\ndef test_sub_again():\n    assert sub(5, 3) == 2\n"
    );
    project(
        d,
        vec![
            write(
                "calc.py",
                "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n",
            ),
            write("tests/test_calc.py", &with_new),
        ],
        TESTS,
    );
    let o = replay_run(d, &[]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "approved: {stderr}");
    let report = std::fs::read_to_string(d.join(".qa-loop/qa_report.md")).unwrap();
    assert!(
        report.contains("🧪 `tests.test_calc::test_add_negative`: new test, fails on the code before the fix — proves the fix"),
        "{report}"
    );
    assert!(
        report.contains("⚠️ `tests.test_calc::test_sub_again`: new test, passes on the code before the fix too — proves nothing"),
        "{report}"
    );
    let junit = std::fs::read_to_string(d.join(".qa-loop/qa-loop-junit.xml")).unwrap();
    let case = |name: &str| {
        junit
            .split("<testcase ")
            .find(|c| c.contains(&format!("name=\"{name}\"")))
            .map(|c| c.split("</testcase>").next().unwrap_or(c).to_string())
            .unwrap_or_else(|| panic!("{junit}"))
    };
    // In the case's `system-out` (junit-10.xsd allows no `<properties>` in a testcase).
    assert!(
        case("test_add_negative")
            .contains("evidence: fails on the code before the fix: proves the fix\n"),
        "{junit}"
    );
    assert!(
        case("test_sub_again")
            .contains("evidence: passes on the code before the fix too: proves nothing\n"),
        "{junit}"
    );
    // The tests the first pass already had carry no such verdict.
    assert!(!case("test_sub").contains("evidence"), "{junit}");
}

fn have_gotestsum() -> bool {
    let ok = ["go", "gotestsum"].iter().all(|p| {
        std::process::Command::new(p)
            .arg(if *p == "go" { "version" } else { "--version" })
            .output()
            .is_ok_and(|o| o.status.success())
    });
    if !ok {
        assert!(
            std::env::var_os("QA_LOOP_REAL_TOOLS").is_none(),
            "go and gotestsum are not installed (.ci/run installs them)"
        );
        eprintln!("skipped: go or gotestsum is not installed");
    }
    ok
}

/// The old-code run with Go: gotestsum's JUnit, `go test -run` selection. A fix that widens
/// `TestAdd`'s check until the bug passes it (and leaves `Add` wrong) is caught: the test, as
/// the fix left it, passes on the code before the fix.
#[test]
fn a_loosened_go_test_is_caught_on_the_old_code() {
    if !have_gotestsum() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("go.mod"), "module example.com/calc\n\ngo 1.19\n").unwrap();
    std::fs::write(
        d.join("calc.go"),
        "package calc\n\nfunc Add(a, b int) int { return a - b }\n\nfunc Sub(a, b int) int { return a - b }\n",
    )
    .unwrap();
    let tests = |add_check: &str| {
        format!(
            "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {{\n\tif got := Add(2, 2); {add_check} {{\n\t\tt.Fatalf(\"Add(2, 2) = %d\", got)\n\t}}\n}}\n\nfunc TestSub(t *testing.T) {{\n\tif Sub(5, 3) != 2 {{\n\t\tt.Fatal(\"sub\")\n\t}}\n}}\n"
        )
    };
    std::fs::write(d.join("calc_test.go"), tests("got != 4")).unwrap();
    let config = json!({"risk_level": "low", "max_iterations": 2, "recurring_threshold": 5,
        "unit_tests": {"required": true,
            "commands": ["gotestsum --junitfile reports/junit.xml -- ./..."],
            "junit": ["reports/junit.xml"]}});
    std::fs::write(d.join("qa-loop.json"), config.to_string()).unwrap();
    std::fs::write(d.join(".gitignore"), ".qa-loop/\nsession.json\nreports/\n").unwrap();
    git(d, &["init", "-q"]);
    git(d, &["add", "-A"]);
    git(d, &["commit", "-q", "-m", "init"]);
    let verdict = |status: &str, score: u8| {
        json!({"role": "reviewer", "tool_calls": [{"id": "v", "name": "submit_verdict", "arguments": {
        "status": status, "score": score, "confidence": 0.9, "summary": "s", "criteria": [], "issues": []}}]})
    };
    let finish = json!({"role": "fixer", "tool_calls": [{"id": "f", "name": "finish", "arguments": {"summary": "done"}}]});
    std::fs::write(
        d.join("session.json"),
        json!({"calls": [verdict("rejected", 30), write("calc_test.go", &tests("got < -100")), finish, verdict("approved", 95)]}).to_string(),
    )
    .unwrap();
    let o = replay_run(d, &[]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_ne!(o.status.code(), Some(0), "not approved: {stderr}");
    let r = qa_result(d);
    let second = &r["history"][1];
    let titles: Vec<&str> = second["issues"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["title"].as_str().unwrap())
        .collect();
    assert!(
        titles
            .iter()
            .any(|t| t.contains("`example.com/calc::TestAdd` passes on the code before the fix")),
        "{titles:?}\n{stderr}"
    );
}

/// jest's location of jest and jest-junit (`.ci/run` installs them there), or `None` (skipped).
fn jest_modules() -> Option<std::path::PathBuf> {
    let modules = std::env::var_os("QA_LOOP_JEST_DIR").map(std::path::PathBuf::from);
    if modules.is_none() {
        assert!(
            std::env::var_os("QA_LOOP_REAL_TOOLS").is_none(),
            "QA_LOOP_JEST_DIR is not set (.ci/run installs jest there)"
        );
        eprintln!("skipped: QA_LOOP_JEST_DIR is not set");
    }
    modules
}

/// The old-code run with jest: jest-junit's report, jest's `-t` selection. A fix that loosens
/// `expect(add(2, 2)).toBe(4)` (a type check, a truthiness check, a widened range — none of them
/// vacuous to a reader) and leaves `add` wrong is caught each time: the test, as the fix left it,
/// passes on the code before the fix. A fix that repairs `add` instead is approved.
#[test]
fn a_loosened_jest_assertion_is_caught_on_the_old_code() {
    let Some(modules) = jest_modules() else {
        return;
    };
    let original = "expect(add(2, 2)).toBe(4);";
    for (loosened, approved) in [
        ("expect(typeof add(2, 2)).toBe('number');", false),
        ("expect(add(2, 2)).toBeDefined();", false),
        ("expect(add(2, 2)).toBeLessThan(10);", false),
        (original, true),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        jest_project(d, &modules, original);
        let fix = if approved {
            write(
                "src/calc.js",
                "function add(a, b) { return a + b; }\nfunction sub(a, b) { return a - b; }\nmodule.exports = { add, sub };\n",
            )
        } else {
            write("test/calc.test.js", &jest_tests(loosened))
        };
        let verdict = |status: &str, score: u8| {
            json!({"role": "reviewer", "tool_calls": [{"id": "v", "name": "submit_verdict", "arguments": {
            "status": status, "score": score, "confidence": 0.9, "summary": "s", "criteria": [], "issues": []}}]})
        };
        let finish = json!({"role": "fixer", "tool_calls": [{"id": "f", "name": "finish", "arguments": {"summary": "done"}}]});
        std::fs::write(
            d.join("session.json"),
            json!({"calls": [verdict("rejected", 30), fix, finish, verdict("approved", 95)]})
                .to_string(),
        )
        .unwrap();
        let o = replay_run(d, &[]);
        let stderr = String::from_utf8_lossy(&o.stderr);
        let r = qa_result(d);
        let second = &r["history"][1];
        let titles: Vec<&str> = second["issues"]
            .as_array()
            .unwrap_or_else(|| panic!("{r:#}\n{stderr}"))
            .iter()
            .map(|i| i["title"].as_str().unwrap())
            .collect();
        let caught = titles
            .iter()
            .any(|t| t.contains("adds` passes on the code before the fix"));
        if approved {
            assert_eq!(o.status.code(), Some(0), "{titles:?}\n{stderr}");
            assert!(!caught, "{titles:?}");
        } else {
            assert_ne!(o.status.code(), Some(0), "{loosened}: {stderr}");
            assert!(caught, "{loosened}: {titles:?}\n{stderr}");
        }
    }
}

fn jest_tests(add_check: &str) -> String {
    format!(
        "const {{ add, sub }} = require('../src/calc');\n\ntest('adds', () => {{\n  {add_check}\n}});\n\ntest('subtracts', () => {{\n  expect(sub(5, 3)).toBe(2);\n}});\n"
    )
}

/// `add` subtracts; jest with jest-junit, the suite's command calling jest by its path.
fn jest_project(d: &Path, modules: &Path, add_check: &str) {
    std::fs::create_dir_all(d.join("src")).unwrap();
    std::fs::create_dir_all(d.join("test")).unwrap();
    std::fs::write(
        d.join("src/calc.js"),
        "function add(a, b) { return a - b; }\nfunction sub(a, b) { return a - b; }\nmodule.exports = { add, sub };\n",
    )
    .unwrap();
    std::fs::write(d.join("test/calc.test.js"), jest_tests(add_check)).unwrap();
    std::fs::write(
        d.join("package.json"),
        r#"{"name": "calc", "version": "1.0.0"}"#,
    )
    .unwrap();
    let command = format!(
        "JEST_JUNIT_OUTPUT_FILE=reports/junit.xml {} --ci --rootDir . --reporters=default --reporters={}",
        modules.join(".bin/jest").display(),
        modules.join("jest-junit").display()
    );
    let config = json!({"risk_level": "low", "max_iterations": 2, "recurring_threshold": 5,
        "unit_tests": {"required": true, "commands": [command], "junit": ["reports/junit.xml"]}});
    std::fs::write(d.join("qa-loop.json"), config.to_string()).unwrap();
    std::fs::write(d.join(".gitignore"), ".qa-loop/\nsession.json\nreports/\n").unwrap();
    git(d, &["init", "-q"]);
    git(d, &["add", "-A"]);
    git(d, &["commit", "-q", "-m", "init"]);
}
