//! Failure locations as the real tools write them (issue 38): node:test names its files by
//! absolute path; pytest run inside a monorepo package (`cd py && pytest`, or the suite's
//! `working_directory:`) reports paths relative to that package; Playwright's report names the
//! `test(` declaration in its title line and the failing `expect` in its stack; a 300 KB failure
//! message. Each failure must reach the issue at the file (repository-relative) and line the tool
//! itself names, with a short title and a bounded report.
//!
//! `.ci/run` installs the tools (pytest; `@playwright/test` under `QA_LOOP_PLAYWRIGHT_TEST_DIR`)
//! and sets `QA_LOOP_REAL_TOOLS=1`, which makes a missing tool a failure; elsewhere a missing tool
//! skips its test with a note on stderr.

mod support;
use std::path::{Path, PathBuf};
use support::*;

use serde_json::{Value, json};

fn missing(tool: &str) -> bool {
    assert!(
        std::env::var_os("QA_LOOP_REAL_TOOLS").is_none(),
        "{tool} is not installed (.ci/run installs it)"
    );
    eprintln!("skipped: {tool} is not installed");
    true
}

fn have(program: &str, args: &[&str]) -> bool {
    std::process::Command::new(program)
        .args(args)
        .output()
        .is_ok_and(|o| o.status.success())
        || !missing(program)
}

/// Writes `files`, the config and a reviewer that rejects with no words of its own; commits.
fn project(d: &Path, files: &[(&str, &str)], unit: Value) {
    for (path, text) in files {
        let p = d.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    let config = json!({"risk_level": "low", "unit_tests": unit});
    std::fs::write(d.join("qa-loop.json"), config.to_string()).unwrap();
    std::fs::write(
        d.join(".gitignore"),
        ".qa-loop/\nsession.json\nreports/\n**/reports/\n__pycache__/\nnode_modules\ntest-results/\n",
    )
    .unwrap();
    std::fs::write(
        d.join("session.json"),
        json!({"calls": [{"role": "reviewer", "tool_calls": [{"id": "v", "name": "submit_verdict",
            "arguments": {"status": "rejected", "score": 30, "confidence": 0.9, "summary": "s",
                          "criteria": [], "issues": []}}]}]})
        .to_string(),
    )
    .unwrap();
    git(d, &["init", "-q"]);
    git(d, &["add", "-A"]);
    git(d, &["commit", "-q", "-m", "init"]);
}

/// The issues of a review-only run, as (title, file, line).
fn issues(d: &Path) -> Vec<(String, Option<String>, Option<u64>)> {
    let o = replay_run(d, &["--mode", "review"]);
    let r = qa_result(d);
    r["history"][0]["issues"]
        .as_array()
        .unwrap_or_else(|| panic!("{r:#}\n{}", String::from_utf8_lossy(&o.stderr)))
        .iter()
        .map(|i| {
            (
                i["title"].as_str().unwrap().to_string(),
                i["file"].as_str().map(str::to_string),
                i["line"].as_u64(),
            )
        })
        .collect()
}

fn located(d: &Path, test: &str) -> (Option<String>, Option<u64>) {
    let all = issues(d);
    all.iter()
        .find(|(t, ..)| t.contains(test))
        .map(|(_, f, l)| (f.clone(), *l))
        .unwrap_or_else(|| panic!("no issue for {test}: {all:#?}"))
}

const NODE_TEST: &str = "const test = require('node:test');\nconst assert = require('node:assert');\n\ntest('adds', () => {\n  assert.strictEqual(1 + 1, 3);\n});\n\ntest('passes', () => {});\n";

/// node:test's JUnit reporter gives no file attribute; its stack names the test file by its
/// absolute path inside the checkout.
#[test]
fn node_test_failures_are_located_from_their_absolute_paths() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    project(
        d,
        &[("web/test/calc.test.js", NODE_TEST)],
        json!({"required": true, "junit": ["reports/junit.xml"], "commands": [
            "mkdir -p reports && node --test --test-reporter=junit --test-reporter-destination=reports/junit.xml web/test/"]}),
    );
    assert_eq!(
        located(d, "adds"),
        (Some("web/test/calc.test.js".into()), Some(5))
    );
}

fn have_pytest() -> bool {
    have("python3", &["-m", "pytest", "--version"])
}

const PY_TESTS: &str =
    "from calc import add\n\n\ndef test_add():\n    total = add(2, 2)\n    assert total == 4\n";
const PY_CALC: &str = "def add(a, b):\n    return a - b\n";
const PY_CONFTEST: &str = "import sys, os\nsys.path.insert(0, os.path.dirname(__file__))\n";

/// pytest run inside a package of a monorepo (`cd py && pytest`): its report's paths start in
/// `py/`, and a `tests/test_calc.py` also exists at the root — the package's one is meant.
#[test]
fn a_package_relative_pytest_path_resolves_from_the_commands_directory() {
    if !have_pytest() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    project(
        d,
        &[
            ("py/calc.py", PY_CALC),
            ("py/conftest.py", PY_CONFTEST),
            ("py/tests/test_calc.py", PY_TESTS),
            (
                "tests/test_calc.py",
                "# the root's own tests, another file\n",
            ),
        ],
        json!({"required": true, "junit": ["reports/junit.xml"], "commands": [
            "cd py && python3 -m pytest -q -p no:cacheprovider --junitxml=../reports/junit.xml tests"]}),
    );
    assert_eq!(
        located(d, "test_add"),
        (Some("py/tests/test_calc.py".into()), Some(6))
    );
}

/// The suite's `working_directory:` — where its commands run, where its `junit` globs and the
/// paths in its reports start. A directory that is not there fails the suite, saying so.
#[test]
fn a_suites_working_directory_runs_it_and_resolves_its_paths() {
    if !have_pytest() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    project(
        d,
        &[
            ("py/calc.py", PY_CALC),
            ("py/conftest.py", PY_CONFTEST),
            ("py/tests/test_calc.py", PY_TESTS),
        ],
        json!({"required": true, "working_directory": "py", "junit": ["reports/junit.xml"],
               "commands": ["python3 -m pytest -q -p no:cacheprovider --junitxml=reports/junit.xml tests"]}),
    );
    assert_eq!(
        located(d, "test_add"),
        (Some("py/tests/test_calc.py".into()), Some(6))
    );
    assert!(d.join("py/reports/junit.xml").is_file());

    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    project(
        d,
        &[("py/calc.py", PY_CALC)],
        json!({"required": true, "working_directory": "pyy", "commands": ["true"]}),
    );
    let all = issues(d);
    assert!(
        all.iter().any(|(t, ..)| t
            .contains("`unit_tests.working_directory: pyy` is not a directory of the checkout")),
        "{all:#?}"
    );
    // A directory outside the repository is a config error naming the key.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    project(
        d,
        &[("py/calc.py", PY_CALC)],
        json!({"required": true, "working_directory": "../elsewhere", "commands": ["true"]}),
    );
    let o = qa(d, &["validate"]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        stderr.contains("qa-loop.json") && stderr.contains("working_directory `../elsewhere`"),
        "{stderr}"
    );
}

/// The npm `@playwright/test` that `.ci/run` installs, or `None` (skipped).
fn playwright_test() -> Option<PathBuf> {
    let dir = std::env::var_os("QA_LOOP_PLAYWRIGHT_TEST_DIR").map(PathBuf::from);
    if dir.is_none() {
        missing("@playwright/test (QA_LOOP_PLAYWRIGHT_TEST_DIR)");
    }
    dir
}

/// Playwright Test's JUnit names the declaration (`calc.spec.js:3:1 › adds`) in its title line
/// and the failing `expect` in the stack: the issue is at the `expect`, in the package's path.
#[test]
fn a_playwright_failure_is_located_at_its_failing_expect() {
    let Some(modules) = playwright_test() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let spec = "const { test, expect } = require('@playwright/test');\n\ntest('adds', async () => {\n  const sum = 1 + 1;\n  expect(sum).toBe(3);\n});\n";
    let config = "module.exports = { testDir: 'tests', reporter: [['junit', { outputFile: 'reports/junit.xml' }]] };\n";
    std::fs::create_dir_all(d.join("web")).unwrap();
    std::os::unix::fs::symlink(&modules, d.join("web/node_modules")).unwrap();
    project(
        d,
        &[
            ("web/tests/calc.spec.js", spec),
            ("web/playwright.config.js", config),
        ],
        json!({"required": true, "junit": ["web/reports/junit.xml"],
               "commands": ["cd web && node_modules/.bin/playwright test"]}),
    );
    assert_eq!(
        located(d, "adds"),
        (Some("web/tests/calc.spec.js".into()), Some(5))
    );
}

/// A 300 KB failure message (node:test writes it in the `message` attribute and twice in the
/// failure text, the stack after it): the issue's title is one short line, the report stays
/// small, and the location — read before anything is cut — is the failing line.
#[test]
fn a_300_kb_failure_message_gives_a_short_title_a_bounded_report_and_the_right_location() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let big = "const test = require('node:test');\nconst assert = require('node:assert');\n\ntest('huge', () => {\n  assert.fail('x'.repeat(300 * 1024));\n});\n";
    project(
        d,
        &[("web/test/big.test.js", big)],
        json!({"required": true, "junit": ["reports/junit.xml"], "commands": [
            "mkdir -p reports && node --test --test-reporter=junit --test-reporter-destination=reports/junit.xml web/test/"]}),
    );
    let all = issues(d);
    let (title, file, line) = all
        .iter()
        .find(|(t, ..)| t.contains("huge"))
        .unwrap_or_else(|| panic!("{all:#?}"));
    assert!(
        title.chars().count() <= 201 && !title.contains('\n'),
        "{title}"
    );
    assert_eq!(
        (file.as_deref(), *line),
        (Some("web/test/big.test.js"), Some(5))
    );
    let report = std::fs::metadata(d.join(".qa-loop/qa_report.md"))
        .unwrap()
        .len();
    assert!(report < 64 * 1024, "qa_report.md is {report} bytes");
    let result = std::fs::metadata(d.join(".qa-loop/qa-result.json"))
        .unwrap()
        .len();
    assert!(result < 64 * 1024, "qa-result.json is {result} bytes");
}

/// mocha run inside its package (`cd web && mocha`) with mocha-junit-reporter: the suite's
/// `file` is absolute, the stack's path relative to the package. The issue is at the failing
/// `assert`, in the repository's path.
#[test]
fn a_mocha_failure_in_a_package_is_located_at_its_failing_assert() {
    let Some(modules) = playwright_test() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let test = "const assert = require('assert');\n\ndescribe('calc', () => {\n  it('adds', () => {\n    const sum = 1 + 1;\n    assert.strictEqual(sum, 3);\n  });\n});\n";
    std::fs::create_dir_all(d.join("web")).unwrap();
    std::os::unix::fs::symlink(&modules, d.join("web/node_modules")).unwrap();
    project(
        d,
        &[("web/test/calc.test.js", test)],
        json!({"required": true, "junit": ["web/reports/junit.xml"],
               "commands": ["cd web && MOCHA_FILE=reports/junit.xml node_modules/.bin/mocha --reporter mocha-junit-reporter test/"]}),
    );
    assert_eq!(
        located(d, "adds"),
        (Some("web/test/calc.test.js".into()), Some(6))
    );
}
