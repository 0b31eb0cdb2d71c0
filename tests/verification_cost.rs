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
    commit_all(d);
    let verdict = verdict(false);
    let finish = finish();
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
    project(d, vec![write("flag.txt", "still broken\n")]);
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

/// A real pytest project: `calc.py` (add wrong), three tests that log each run of theirs to
/// `runs.log` (ignored), one session marker per pytest run.
fn pytest_project(d: &Path, calls: Vec<Value>) {
    std::fs::write(d.join("calc.py"), "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n").unwrap();
    std::fs::create_dir_all(d.join("tests")).unwrap();
    std::fs::write(
        d.join("tests/conftest.py"),
        "import pathlib\n\nLOG = pathlib.Path(__file__).parent.parent / 'runs.log'\n\n\ndef pytest_sessionstart(session):\n    with LOG.open('a') as f:\n        f.write('session\\n')\n\n\ndef pytest_runtest_call(item):\n    with LOG.open('a') as f:\n        f.write(item.name + '\\n')\n",
    )
    .unwrap();
    std::fs::write(
        d.join("tests/test_calc.py"),
        "import calc\n\n\ndef test_add():\n    assert calc.add(2, 3) == 5\n\n\ndef test_sub():\n    assert calc.sub(5, 3) == 2\n\n\ndef test_mul():\n    assert calc.mul(2, 3) == 6\n",
    )
    .unwrap();
    let config = json!({"risk_level": "low", "max_iterations": 4, "recurring_threshold": 10, "min_score": 0,
        "failure_analysis": false, "flaky_reruns": 0,
        "unit_tests": {"required": true, "junit": ["reports/junit.xml"],
            "commands": ["python3 -m pytest -q -p no:cacheprovider --rootdir=. --junitxml=reports/junit.xml"]}});
    std::fs::write(d.join("qa-loop.json"), config.to_string()).unwrap();
    std::fs::write(
        d.join(".gitignore"),
        ".qa-loop/\nsession.json\nruns.log\nreports/\n__pycache__/\n",
    )
    .unwrap();
    commit_all(d);
    std::fs::write(
        d.join("session.json"),
        json!({ "calls": calls }).to_string(),
    )
    .unwrap();
}

/// The fixer writing `content` to `path`.
fn write(path: &str, content: &str) -> Value {
    json!({"role": "fixer", "tool_calls": [{"id": "w", "name": "write_file",
        "arguments": {"path": path, "content": content}}]})
}

/// The fixer ending its turn.
fn finish() -> Value {
    json!({"role": "fixer", "tool_calls": [{"id": "f", "name": "finish", "arguments": {"summary": "fixed"}}]})
}

/// The reviewer's verdict, with no issue of its own.
fn verdict(approved: bool) -> Value {
    json!({"role": "reviewer", "tool_calls": [{"id": "v", "name": "submit_verdict", "arguments": {
        "status": if approved { "approved" } else { "rejected" }, "score": if approved { 95 } else { 30 },
        "confidence": 0.9, "summary": "s", "criteria": [], "issues": []}}]})
}

/// The fixer writes `calc.py` with `add` and `sub` as given, then finishes.
fn fix(add: &str, sub: &str) -> [Value; 2] {
    let content = format!(
        "def add(a, b):\n    return {add}\n\n\ndef sub(a, b):\n    return {sub}\n\n\ndef mul(a, b):\n    return a * b\n"
    );
    [write("calc.py", &content), finish()]
}

/// The tests each pytest run ran, in order.
fn pytest_runs(d: &Path) -> Vec<Vec<String>> {
    let log = std::fs::read_to_string(d.join("runs.log")).unwrap_or_default();
    let mut runs: Vec<Vec<String>> = Vec::new();
    for line in log.lines() {
        match line {
            "session" => runs.push(Vec::new()),
            name => runs.last_mut().unwrap().push(name.to_string()),
        }
    }
    runs
}

#[test]
fn failing_tests_run_first_and_only_a_full_verification_approves() {
    if !have_pytest() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // 1: add fails. Fix 1 leaves it wrong; fix 2 repairs add but breaks sub (only the full
    // run can see that); fix 3 repairs sub. The reviewer approves from iteration 3 on: words
    // that gates beat.
    let mut calls = vec![verdict(false)];
    calls.extend(fix("a * b", "a - b"));
    calls.push(verdict(false));
    calls.extend(fix("a + b", "a + b"));
    calls.push(verdict(true));
    calls.extend(fix("a + b", "a - b"));
    calls.push(verdict(true));
    pytest_project(d, calls);
    let o = replay_run(d, &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let all = ["test_add", "test_sub", "test_mul"];
    assert_eq!(
        pytest_runs(d),
        [
            &all[..],      // pass 1: full
            &["test_add"], // pass 2: failing first, still failing: nothing else runs
            &["test_add"], // pass 3: failing first passes …
            &all[..],      // … so the full verification runs, and catches sub
            &["test_sub"], // pass 4: failing first passes …
            &all[..],      // … full again before the approval
        ],
        "{err}"
    );
    let r = qa_result(d);
    let history = r["history"].as_array().unwrap();
    assert_eq!(history.len(), 4, "{r:#}");
    assert!(history[0]["verification"].get("failing_first").is_none());
    assert_eq!(
        history[1]["verification"]["failing_first"],
        json!({"ran": 1, "of": 3})
    );
    // The fix that broke another test: caught by the full run, not approved. The pass lists
    // (and times) the failing-first run before the full one.
    assert!(history[2]["verification"].get("failing_first").is_none());
    let commands: Vec<&str> = history[2]["verification"]["commands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["command"].as_str().unwrap())
        .collect();
    assert_eq!(commands.len(), 2, "{commands:?}");
    assert!(commands[0].ends_with("-k 'test_add'"), "{commands:?}");
    assert!(history[2]["reviewer_approved"].as_bool().unwrap());
    assert_eq!(history[2]["status"], "rejected");
    let failing: Vec<&str> = history[2]["verification"]["tests"][0]["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(failing, ["test_sub"]);
    assert_eq!(history[3]["status"], "approved");
    assert!(history[3]["verification"].get("failing_first").is_none());
    let report = std::fs::read_to_string(d.join(".qa-loop/qa_report.md")).unwrap();
    assert!(
        report.contains("| 2 | failing tests first: 1 of 3 |"),
        "{report}"
    );
    assert!(report.contains("| 4 | full: 3 |"), "{report}");
}

#[test]
fn a_suite_failing_first_runs_whole_only_once_in_its_pass() {
    // The suite's command is no runner qa-loop can narrow: failing first runs it whole; it
    // passes, and the full verification of the same pass takes its results, not a second run.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    project(d, vec![write("flag.txt", "fixed\n")]);
    let o = replay_run(d, &[]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(runs(d), 2, "one run per pass");
    let r = qa_result(d);
    let second = &r["history"][1]["verification"];
    assert!(second.get("failing_first").is_none(), "{r:#}");
    assert_eq!(gate_of(&r, "unit_tests")["status"], "passed");
}

/// The git processes `qa-loop <args>` starts in `d`, each as its argument list (`strace`);
/// `None` when strace cannot trace here.
fn git_processes(d: &Path, args: &[&str]) -> Option<Vec<String>> {
    let works = std::process::Command::new("strace")
        .args(["-f", "-qq", "-e", "trace=execve", "-o", "/dev/null", "true"])
        .status()
        .is_ok_and(|s| s.success());
    if !works {
        eprintln!("skipped: strace is missing or cannot trace here (.ci/run installs it)");
        return None;
    }
    let trace = d.join("execve.trace");
    let o = std::process::Command::new("strace")
        .args(["-f", "-qq", "-e", "trace=execve", "-o"])
        .arg(&trace)
        .arg(env!("CARGO_BIN_EXE_qa-loop"))
        .args(args)
        .current_dir(d)
        .env_remove("GITHUB_ACTIONS")
        .env_remove("GITHUB_BASE_REF")
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let text = std::fs::read_to_string(&trace).unwrap();
    Some(
        text.lines()
            .filter(|l| l.contains("execve(\"") && l.ends_with("= 0"))
            .filter_map(|l| {
                let program = l.split("execve(\"").nth(1)?.split('"').next()?;
                program
                    .ends_with("/git")
                    .then(|| l.split(", [").nth(1).unwrap_or_default().to_string())
            })
            .collect(),
    )
}

#[test]
fn an_approve_run_starts_at_most_five_git_processes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("calc.py"), "def add(a, b):\n    return a + b\n").unwrap();
    let config = json!({"risk_level": "low", "max_iterations": 3, "failure_analysis": false,
        "unit_tests": {"required": true, "allow_no_tests": true, "commands": ["true"]}});
    std::fs::write(d.join("qa-loop.json"), config.to_string()).unwrap();
    std::fs::write(
        d.join(".gitignore"),
        ".qa-loop/\nsession.json\nexecve.trace\n",
    )
    .unwrap();
    commit_all(d);
    std::fs::write(
        d.join("calc.py"),
        "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n",
    )
    .unwrap();
    git(d, &["commit", "-q", "-am", "sub"]);
    std::fs::write(
        d.join("session.json"),
        json!({ "calls": [verdict(true)] }).to_string(),
    )
    .unwrap();
    let mut args: Vec<&str> = REPLAY_RUN.to_vec();
    args.extend(["--base", "HEAD~1"]);
    let Some(calls) = git_processes(d, &args) else {
        return;
    };
    assert!(
        calls.len() <= 5,
        "{} git processes: {calls:#?}",
        calls.len()
    );
    // The change was read (the reviewer saw it), and the commit reviewed is HEAD.
    assert!(calls.iter().any(|c| c.contains("\"diff\"")), "{calls:#?}");
    let r = qa_result(d);
    assert_eq!(r["verdict"], "approved");
    let head = git_out(d, &["rev-parse", "HEAD"]);
    assert_eq!(r["history"][0]["reviewed_head"], head.trim(), "{r:#}");
}

#[test]
fn a_suite_carried_from_failing_first_keeps_the_coverage_it_measured() {
    // integration_tests fails until the fix, measuring full coverage; unit_tests writes the same
    // report file with none. After the fix, failing first runs integration_tests whole and it
    // passes; the full pass runs unit_tests (rewriting the report) and carries
    // integration_tests: its coverage is the one it measured, not unit_tests' rewrite.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("flag.txt"), "broken\n").unwrap();
    std::fs::write(d.join("calc.py"), "a = 1\nb = 2\n").unwrap();
    let none = "printf 'SF:calc.py\\nDA:1,0\\nDA:2,0\\nend_of_record\\n' > cov.lcov";
    let full = "printf 'SF:calc.py\\nDA:1,1\\nDA:2,1\\nend_of_record\\n' > cov.lcov";
    let config = json!({"risk_level": "low", "max_iterations": 2, "recurring_threshold": 5, "min_score": 0,
        "failure_analysis": false, "flaky_reruns": 0,
        "unit_tests": {"required": true, "allow_no_tests": true, "commands": [none], "coverage": ["cov.lcov"]},
        "integration_tests": {"required": true, "allow_no_tests": true,
            "commands": [format!("{full}; grep -q fixed flag.txt")],
            "coverage": ["cov.lcov"], "minimum_coverage": 80}});
    std::fs::write(d.join("qa-loop.json"), config.to_string()).unwrap();
    std::fs::write(d.join(".gitignore"), ".qa-loop/\nsession.json\ncov.lcov\n").unwrap();
    commit_all(d);
    let calls = json!({"calls": [
        verdict(false),
        write("flag.txt", "fixed\n"),
        finish(),
        verdict(true),
    ]});
    std::fs::write(d.join("session.json"), calls.to_string()).unwrap();
    let o = replay_run(d, &[]);
    let r = qa_result(d);
    let gate = gate_of(&r, "coverage:integration_tests");
    assert_eq!(gate["status"], "passed", "{gate:#}");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // integration_tests ran once in the second pass (failing first, carried).
    let commands: Vec<&str> = r["history"][1]["verification"]["commands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["suite"].as_str().unwrap())
        .collect();
    assert_eq!(commands, ["unit_tests", "integration_tests"], "{r:#}");
}
