//! `qa-loop-junit.xml` as strict consumers read it (issue 38, point 5): the file an approved, a
//! rejected (out of iterations) and an escalated (recurring issue) run writes is valid against
//! the JUnit schema Jenkins' xUnit plugin validates every input against (`junit-10.xsd`,
//! vendored in `tests/fixtures/junit/` with its source and licence), checked by `xmllint`; and
//! junitparser and junit2html read the same suites, cases and outcomes from it. The runs are the
//! real binary with real pytest and a replayed model; the approved one has a flaky test (qa-loop's
//! own re-run), new tests with evidence (proves the fix / proves nothing) and a failing advisory
//! suite, so what a testcase's `<properties>` used to carry is exercised where it moved
//! (`key: value` lines in the case's `system-out`).
//!
//! `.ci/run` installs pytest, xmllint (`libxml2-utils`), junitparser and junit2html and sets
//! `QA_LOOP_REAL_TOOLS=1`, which makes a missing one a failure; elsewhere a missing tool skips
//! (pytest, xmllint) or its part of the check (junitparser, junit2html) with a note on stderr.

mod support;
use std::path::{Path, PathBuf};
use support::*;

use serde_json::{Value, json};

fn have_xmllint() -> bool {
    have_tool("xmllint (apt libxml2-utils)", "xmllint", &["--version"])
}

fn schema() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/junit/junit-10.xsd")
}

/// `xmllint --noout --schema junit-10.xsd file`: whether it validates, and what xmllint said.
fn validate(file: &Path) -> (bool, String) {
    let o = std::process::Command::new("xmllint")
        .arg("--noout")
        .arg("--schema")
        .arg(schema())
        .arg(file)
        .output()
        .unwrap();
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

const TESTS: &str = "import os\nfrom calc import add, sub\n\nMARK = os.path.join(os.path.dirname(__file__), '..', '.flaky-seen')\n\n\ndef test_add():\n    assert add(2, 2) == 4\n\n\ndef test_sub():\n    assert sub(5, 3) == 2\n\n\ndef test_flaky():\n    # Fails once: the first time it runs on the fixed code.\n    if add(1, 1) == 2 and not os.path.exists(MARK):\n        open(MARK, 'w').close()\n        assert False, 'fails the first time it runs on the fixed code'\n";

/// A pytest project whose `add` subtracts (`test_add` fails), a required unit suite and an
/// advisory integration suite whose command always fails; `calls` are the model's answers.
fn project(dir: &Path, extra: Value, calls: Vec<Value>) {
    std::fs::write(
        dir.join("calc.py"),
        "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n",
    )
    .unwrap();
    std::fs::create_dir_all(dir.join("tests")).unwrap();
    std::fs::write(dir.join("tests/test_calc.py"), TESTS).unwrap();
    std::fs::write(
        dir.join("conftest.py"),
        "import sys, os\nsys.path.insert(0, os.path.dirname(__file__))\n",
    )
    .unwrap();
    let mut config = json!({
        "risk_level": "low",
        "unit_tests": {
            "required": true,
            "commands": ["python3 -m pytest -q -p no:cacheprovider --rootdir . --junitxml=reports/junit.xml tests"],
            "junit": ["reports/junit.xml"]
        },
        "integration_tests": {
            "required": false,
            "commands": ["python3 -c \"raise SystemExit('staging is not reachable')\""]
        }
    });
    for (k, v) in extra.as_object().unwrap() {
        config[k] = v.clone();
    }
    std::fs::write(dir.join("qa-loop.json"), config.to_string()).unwrap();
    std::fs::write(
        dir.join(".gitignore"),
        ".qa-loop/\nsession.json\nreports/\n__pycache__/\n.flaky-seen\n",
    )
    .unwrap();
    git(dir, &["init", "-q"]);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "init"]);
    std::fs::write(
        dir.join("session.json"),
        json!({ "calls": calls }).to_string(),
    )
    .unwrap();
}

fn verdict(status: &str, score: u8) -> Value {
    let issues = if status == "approved" {
        json!([])
    } else {
        json!([{"id": "Q1", "title": "add() subtracts instead of adding", "type": "unit_test",
                "severity": "high", "file": "calc.py", "line": 2, "fix": "return a + b"}])
    };
    json!({"role": "reviewer", "tool_calls": [{"id": "v", "name": "submit_verdict", "arguments": {
        "status": status, "score": score, "confidence": 0.9, "summary": "s", "criteria": [],
        "issues": issues}}]})
}

fn finish() -> Value {
    json!({"role": "fixer", "tool_calls": [{"id": "f", "name": "finish", "arguments": {"summary": "done"}}]})
}

fn write(path: &str, content: &str) -> Value {
    json!({"role": "fixer", "tool_calls": [{"id": "w", "name": "write_file",
        "arguments": {"path": path, "content": content}}]})
}

/// Runs the project in `dir`; its exit code, verdict and JUnit file.
fn run(dir: &Path) -> (Option<i32>, Value, PathBuf) {
    let o = replay_run(dir, &[]);
    let junit = dir.join(".qa-loop/qa-loop-junit.xml");
    assert!(
        junit.exists(),
        "no JUnit file: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    (o.status.code(), qa_result(dir)["verdict"].clone(), junit)
}

/// Every suite and case of `file` as junitparser reads them, as JSON.
const JUNITPARSER: &str = r#"
import json, sys
from junitparser import JUnitXml, Failure, Error, Skipped
xml = JUnitXml.fromfile(sys.argv[1])
def result(c):
    for r in c.result:
        for kind, name in ((Failure, "failed"), (Error, "failed"), (Skipped, "skipped")):
            if isinstance(r, kind):
                return name, r.message or ""
    return "passed", ""
suites = []
for s in xml:
    cases = []
    for c in s:
        outcome, message = result(c)
        cases.append({"name": c.name, "classname": c.classname, "outcome": outcome,
                      "message": message, "out": c.system_out or ""})
    suites.append({"name": s.name, "tests": s.tests, "failures": s.failures, "errors": s.errors,
                   "skipped": s.skipped, "cases": cases})
print(json.dumps({"tests": xml.tests, "failures": xml.failures, "suites": suites}))
"#;

/// The number of tests xunit-viewer (npm, its own parser) shows per suite of `file`; `None`
/// when `QA_LOOP_XUNIT_VIEWER` (the directory holding its `node_modules`, set by `.ci/run`) is
/// not set. It merges cases with the same (classname, name): a duplicate shows as a lower count.
fn xunit_viewer(file: &Path) -> Option<Value> {
    let dir = std::env::var_os("QA_LOOP_XUNIT_VIEWER")?;
    let script = "import fs from 'fs'\nconst { default: parse } = await import(process.env.XV_DIR + '/node_modules/xunit-viewer/src/cli/parse.js')\nconst res = await parse(fs.readFileSync(process.argv[1], 'utf8'))\nconst out = {}\nfor (const s of Object.values(res.suites || {})) out[s.name] = Object.keys(s.tests || {}).length\nconsole.log(JSON.stringify(out))\n";
    let o = std::process::Command::new("node")
        .args(["--input-type=module", "-e", script])
        .arg(file)
        .env("XV_DIR", dir)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "xunit-viewer: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    Some(serde_json::from_slice(&o.stdout).unwrap())
}

/// Every suite and case of `file` as junit2html reads them (it also renders the HTML report).
const JUNIT2HTML: &str = r#"
import json, sys
from junit2htmlreport import parser
j = parser.Junit(sys.argv[1])
open(sys.argv[2], "w").write(j.html())
print(json.dumps({"suites": [{"name": s.name, "cases": [
    {"name": c.name, "classname": c.testclass.name, "outcome": str(c.outcome()), "out": c.stdout or ""}
    for c in s.all()]} for s in j.suites]}))
"#;

/// `script` (Python) on `file`, its JSON; `None` when the `module` it needs is not installed.
fn python(script: &str, module: &str, file: &Path, more: &[&Path]) -> Option<Value> {
    if !have_tool(
        &format!("{module} (pip)"),
        "python3",
        &["-c", &format!("import {module}")],
    ) {
        return None;
    }
    let o = std::process::Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(file)
        .args(more)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{module} could not read {}: {}",
        file.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    Some(serde_json::from_slice(&o.stdout).unwrap())
}

/// The file validates against junit-10.xsd; junitparser reads counts that add up, and
/// junit2html the same suites, cases and outcomes. junitparser's reading, when it is installed.
fn check(file: &Path) -> Option<Value> {
    let (valid, said) = validate(file);
    let text = std::fs::read_to_string(file).unwrap();
    assert!(valid, "not valid against junit-10.xsd:\n{said}\n{text}");
    let parsed = python(JUNITPARSER, "junitparser", file, &[])?;
    let suites = parsed["suites"].as_array().unwrap();
    let count = |s: &Value, what: &str| {
        s["cases"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["outcome"] == what)
            .count() as u64
    };
    for s in suites {
        // Issue 49: each case of a suite has its own (classname, name) — viewers that merge
        // equal ones (xunit-viewer) would count fewer tests than the file declares.
        let mut seen = std::collections::BTreeSet::new();
        for c in s["cases"].as_array().unwrap() {
            let key = (c["classname"].to_string(), c["name"].to_string());
            assert!(seen.insert(key.clone()), "{key:?} twice in {}", s["name"]);
        }
        let n = s["cases"].as_array().unwrap().len() as u64;
        assert_eq!(s["tests"], n, "{s:#}");
        assert_eq!(
            s["failures"].as_u64().unwrap() + s["errors"].as_u64().unwrap(),
            count(s, "failed"),
            "{s:#}"
        );
        assert_eq!(s["skipped"], count(s, "skipped"), "{s:#}");
    }
    let cases: u64 = suites
        .iter()
        .map(|s| s["cases"].as_array().unwrap().len() as u64)
        .sum();
    assert_eq!(parsed["tests"], cases, "the root's count");
    if let Some(counts) = xunit_viewer(file) {
        for s in suites {
            let name = s["name"].as_str().unwrap();
            assert_eq!(
                counts[name], s["tests"],
                "xunit-viewer counts another number of tests in `{name}`: {counts}"
            );
        }
    }
    let html = file.with_extension("html");
    if let Some(j2h) = python(JUNIT2HTML, "junit2htmlreport", file, &[&html]) {
        let strip = |s: &Value, outcome_of: &dyn Fn(&Value) -> String| -> Vec<Value> {
            s["cases"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| json!([c["name"], c["classname"], outcome_of(c), c["out"]]))
                .collect()
        };
        let j2h_suites = j2h["suites"].as_array().unwrap();
        assert_eq!(j2h_suites.len(), suites.len(), "{j2h:#}");
        for (a, b) in suites.iter().zip(j2h_suites) {
            assert_eq!(a["name"], b["name"]);
            let ours = strip(a, &|c| c["outcome"].as_str().unwrap().to_string());
            // junit2html: `CaseResult.PASSED` / `FAILED` (failures and errors) / `SKIPPED`.
            let theirs = strip(b, &|c| {
                let o = c["outcome"].as_str().unwrap();
                o.rsplit('.').next().unwrap().to_lowercase()
            });
            assert_eq!(ours, theirs, "junitparser and junit2html disagree");
        }
        let page = std::fs::read_to_string(&html).unwrap();
        assert!(page.contains("qa-loop acceptance criteria"), "{page}");
    }
    Some(parsed)
}

/// The case named `name` in the suite whose name starts with `suite`.
fn case<'a>(parsed: &'a Value, suite: &str, name: &str) -> &'a Value {
    parsed["suites"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["name"].as_str().unwrap().starts_with(suite))
        .flat_map(|s| s["cases"].as_array().unwrap())
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no case {name} in a suite {suite}: {parsed:#}"))
}

const FIXED: &str = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n";

/// Approved: the fixer repairs `add` and adds two tests, one that fails on the old code (proves
/// the fix), one that passes there too (proves nothing); `test_flaky` fails once on the fixed
/// code and passes on qa-loop's re-run; the advisory integration suite fails every time.
#[test]
fn an_approved_run_s_junit_is_valid_and_reads_the_same_everywhere() {
    if !have_pytest() || !have_xmllint() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let with_new = format!(
        "{TESTS}\n\ndef test_add_negative():\n    assert add(-1, 1) == 0\n\n\ndef test_sub_again():\n    assert sub(5, 3) == 2\n"
    );
    let calls = vec![
        verdict("rejected", 30),
        write("calc.py", FIXED),
        write("tests/test_calc.py", &with_new),
        finish(),
        verdict("approved", 95),
    ];
    project(d, json!({"max_iterations": 2}), calls);
    let (code, verdict, junit) = run(d);
    assert_eq!((code, verdict.as_str()), (Some(0), Some("approved")));
    let Some(parsed) = check(&junit) else { return };
    let names: Vec<&str> = parsed["suites"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "qa-loop iteration 1",
            "qa-loop iteration 2",
            "unit_tests (iteration 2)",
            "qa-loop acceptance criteria"
        ]
    );
    // The approving iteration and the tests it read have no failure.
    for s in &parsed["suites"].as_array().unwrap()[1..] {
        assert_eq!(
            (&s["failures"], &s["errors"]),
            (&json!(0), &json!(0)),
            "{s:#}"
        );
    }
    // Flaky and evidence, where the testcase properties were.
    let flaky = case(&parsed, "unit_tests", "test_flaky");
    assert_eq!(flaky["outcome"], "passed");
    assert!(
        flaky["out"]
            .as_str()
            .unwrap()
            .contains("flaky: true (failed, then passed on a re-run)\n"),
        "{flaky:#}"
    );
    let proves = case(&parsed, "unit_tests", "test_add_negative");
    assert!(
        proves["out"]
            .as_str()
            .unwrap()
            .contains("evidence: fails on the code before the fix: proves the fix\n"),
        "{proves:#}"
    );
    let nothing = case(&parsed, "unit_tests", "test_sub_again");
    assert!(
        nothing["out"]
            .as_str()
            .unwrap()
            .contains("evidence: passes on the code before the fix too: proves nothing\n"),
        "{nothing:#}"
    );
    assert!(
        !case(&parsed, "unit_tests", "test_sub")["out"]
            .as_str()
            .unwrap()
            .contains("evidence"),
        "{parsed:#}"
    );
    // The suite's first command failed (test_flaky), its re-run passed: not counted.
    let pytest = "unit_tests: python3 -m pytest -q -p no:cacheprovider --rootdir . --junitxml=reports/junit.xml tests";
    let first = parsed["suites"][1]["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == pytest)
        .unwrap();
    assert_eq!(first["outcome"], "passed", "{first:#}");
    assert!(
        first["out"].as_str().unwrap().contains(
            "outcome: exit code 1\ncounted: no: the `unit_tests` gate passed (its failing tests passed on a re-run)\n"
        ),
        "{first:#}"
    );
    // The advisory suite: its gate and command skipped as advisory, never failures.
    for it in ["qa-loop iteration 1", "qa-loop iteration 2"] {
        for name in [
            "gate: integration_tests",
            "integration_tests: python3 -c \"raise SystemExit('staging is not reachable')\"",
        ] {
            let c = case(&parsed, it, name);
            assert_eq!(c["outcome"], "skipped", "{c:#}");
            assert!(
                c["message"]
                    .as_str()
                    .unwrap()
                    .starts_with("advisory, not met: "),
                "{c:#}"
            );
            assert!(
                c["out"].as_str().unwrap().starts_with("required: false\n"),
                "{c:#}"
            );
        }
    }
}

/// Rejected: the fixer changes nothing; two iterations, out of iterations (score above
/// `min_score`). Escalated: the same issue in two iterations (`recurring_threshold: 2`).
#[test]
fn rejected_and_escalated_runs_junit_is_valid_and_names_the_failures() {
    if !have_pytest() || !have_xmllint() {
        return;
    }
    for (extra, want) in [
        (json!({"max_iterations": 2}), (Some(1), "rejected")),
        (
            json!({"max_iterations": 3, "recurring_threshold": 2}),
            (Some(3), "escalated"),
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let calls = vec![
            verdict("rejected", 50),
            finish(),
            verdict("rejected", 50),
            finish(),
            verdict("rejected", 50),
        ];
        project(d, extra, calls);
        let (code, verdict, junit) = run(d);
        assert_eq!((code, verdict.as_str()), (want.0, Some(want.1)));
        let Some(parsed) = check(&junit) else {
            continue;
        };
        // The last iteration is red: its failing gate, command, the reviewer's issue with its
        // location, and the failing test with its own.
        let last = "qa-loop iteration 2";
        assert_eq!(case(&parsed, last, "gate: unit_tests")["outcome"], "failed");
        let q1 = case(&parsed, last, "Q1: add() subtracts instead of adding");
        assert_eq!(q1["outcome"], "failed");
        let out = q1["out"].as_str().unwrap_or_default();
        assert!(
            out.starts_with("file: calc.py\nline: 2\nfingerprint: "),
            "{q1:#}"
        );
        let test_add = case(&parsed, "unit_tests (iteration 2)", "test_add");
        assert_eq!(test_add["outcome"], "failed");
        assert!(
            test_add["out"]
                .as_str()
                .unwrap()
                .starts_with("file: tests/test_calc.py\nline: "),
            "{test_add:#}"
        );
        let advisory = case(&parsed, last, "gate: integration_tests");
        assert_eq!(advisory["outcome"], "skipped", "{advisory:#}");
    }
}

/// Issue 49, point 3: a suite qa-loop cannot narrow (`python3 run_tests.py`) is re-run whole when
/// a test fails: the iteration's suite then lists the command twice, and before, both cases had
/// the same (classname, name) — xunit-viewer merged them and counted one test fewer than the file
/// declares. The re-run is named as such; every viewer counts the declared totals.
#[test]
fn a_whole_suite_re_run_is_its_own_case() {
    if !have_pytest() || !have_xmllint() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let unit = json!({"required": true, "commands": ["python3 run_tests.py"],
                      "junit": ["reports/junit.xml"]});
    project(
        d,
        json!({"max_iterations": 1, "unit_tests": unit}),
        vec![verdict("rejected", 30)],
    );
    std::fs::write(
        d.join("run_tests.py"),
        "import subprocess, sys\nsys.exit(subprocess.call([sys.executable, '-m', 'pytest', '-q', '-p', 'no:cacheprovider', '--rootdir', '.', '--junitxml=reports/junit.xml', 'tests']))\n",
    )
    .unwrap();
    git(d, &["add", "-A"]);
    git(d, &["commit", "-q", "-m", "runner"]);
    let (_, _, junit) = run(d);
    let text = std::fs::read_to_string(&junit).unwrap();
    assert!(
        text.contains("unit_tests: python3 run_tests.py (re-run 1)"),
        "{text}"
    );
    check(&junit);
}
