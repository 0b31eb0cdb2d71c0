//! Issue 18 against reports the real tools write (not look-alikes): pytest + coverage.py run as
//! two shards of one package, a collection error leaving an earlier coverage report behind, and
//! gotestsum + `go test -coverprofile` naming a failing test's file without its directory.
//!
//! `.ci/run` installs the tools (jest and jest-junit from npm into the directory
//! `QA_LOOP_JEST_DIR` names) and sets `QA_LOOP_REAL_TOOLS=1`, which makes a missing tool a
//! failure; elsewhere a missing tool skips its test with a note on stderr.

mod support;
use std::path::Path;
use std::process::Output;
use support::*;

use serde_json::{Value, json};

/// Whether `program args…` runs; when it does not, fails under `.ci/run`, else skips.
fn have(program: &str, args: &[&str]) -> bool {
    have_tool(&format!("`{program}`"), program, args)
}

fn approve() -> Value {
    json!({"calls": [{"role": "reviewer", "tool_calls": [{"id": "v", "name": "submit_verdict",
        "arguments": {"status": "approved", "score": 95, "confidence": 0.9, "summary": "s",
                      "criteria": [], "issues": []}}]}]})
}

fn run(dir: &Path) -> Output {
    std::fs::write(dir.join("session.json"), approve().to_string()).unwrap();
    replay_run(dir, &["--mode", "review"])
}

fn commit_all(dir: &Path) {
    git(dir, &["init", "-q"]);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "init"]);
}

/// Two pytest shards each cover about half of `pkg/calc.py`: summed, the figure was ~55% and
/// failed the 90% minimum (`coverage combine` says 100%). A collection error then leaves shard
/// A's report from the earlier run: it is stale and ignored, never counted.
#[test]
fn sharded_coverage_py_reports_merge_and_a_stale_one_is_ignored() {
    if !have("python3", &["-m", "pytest", "--version"])
        || !have("python3", &["-m", "coverage", "--version"])
    {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join("pkg")).unwrap();
    std::fs::write(d.join("pkg/__init__.py"), "").unwrap();
    let funcs: String = (0..10)
        .map(|i| format!("def f{i}(x):\n    y = x + {i}\n    return y\n\n"))
        .collect();
    std::fs::write(d.join("pkg/calc.py"), funcs).unwrap();
    let tests = |range: std::ops::Range<u32>| -> String {
        range
            .map(|i| {
                format!(
                    "def test_f{i}():\n    from pkg import calc\n    assert calc.f{i}(1) == {}\n\n",
                    i + 1
                )
            })
            .collect()
    };
    std::fs::write(d.join("test_a.py"), tests(0..5)).unwrap();
    std::fs::write(d.join("test_b.py"), tests(5..10)).unwrap();
    let shard = |s: &str| {
        format!(
            "COVERAGE_FILE=.cov-{s} python3 -m coverage run --source=pkg -m pytest -q -p no:cacheprovider test_{s}.py --junitxml=reports/junit-{s}.xml && COVERAGE_FILE=.cov-{s} python3 -m coverage xml -q -o reports/cov-{s}.xml"
        )
    };
    let config = json!({
        "risk_level": "low",
        "unit_tests": {
            "required": true,
            "commands": [shard("a"), shard("b")],
            "junit": ["reports/junit-*.xml"],
            "coverage": ["reports/cov-*.xml"],
            "minimum_coverage": 90
        }
    });
    std::fs::write(d.join("qa-loop.json"), config.to_string()).unwrap();
    std::fs::write(
        d.join(".gitignore"),
        ".qa-loop/\nsession.json\nreports/\n.cov-*\n__pycache__/\n",
    )
    .unwrap();
    commit_all(d);

    let o = run(d);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let g = gate_of(&qa_result(d), "coverage:unit_tests");
    let summary = g["summary"].as_str().unwrap().to_string();
    assert_eq!(g["status"], "passed", "{summary}");
    assert!(summary.starts_with("line coverage 100.0%"), "{summary}");
    assert!(summary.contains("merged"), "{summary}");

    // A collection error in shard A: its coverage report is the earlier run's.
    std::thread::sleep(std::time::Duration::from_secs(3));
    std::fs::write(d.join("test_a.py"), "def test_broken(:\n").unwrap();
    let o = run(d);
    assert_ne!(o.status.code(), Some(0));
    let g = gate_of(&qa_result(d), "coverage:unit_tests");
    let summary = g["summary"].as_str().unwrap();
    assert_eq!(g["status"], "failed", "{summary}");
    assert!(
        summary.contains("stale") && summary.contains("cov-a.xml"),
        "{summary}"
    );
}

/// gotestsum names a failing test's file without its directory (`path_test.go:8`) and titles
/// the failure "Failed": the issue now points at `path/path_test.go` with the failure's text.
#[test]
fn a_go_failure_from_gotestsum_is_located_in_the_repository() {
    if !have("go", &["version"]) || !have("gotestsum", &["--version"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join("path")).unwrap();
    std::fs::write(d.join("go.mod"), "module example.com/m\n\ngo 1.19\n").unwrap();
    std::fs::write(
        d.join("path/path.go"),
        "package path\n\nfunc Clean(p string) string {\n\treturn p\n}\n",
    )
    .unwrap();
    std::fs::write(
        d.join("path/path_test.go"),
        "package path\n\nimport \"testing\"\n\nfunc TestClean(t *testing.T) {\n\tif got := Clean(\"a/\"); got != \"a\" {\n\t\tt.Errorf(\"Clean(%q) = %q, want %q\", \"a/\", got, \"a\")\n\t}\n}\n",
    )
    .unwrap();
    let cache = d.join(".gocache");
    let config = json!({
        "risk_level": "low",
        "unit_tests": {
            "required": true,
            "commands": [format!("mkdir -p reports && GOCACHE={} GOFLAGS=-mod=mod gotestsum --junitfile reports/go.xml -- -coverprofile=reports/cover.out ./...", cache.display())],
            "junit": ["reports/go.xml"],
            "coverage": ["reports/cover.out"]
        }
    });
    std::fs::write(d.join("qa-loop.json"), config.to_string()).unwrap();
    std::fs::write(
        d.join(".gitignore"),
        ".qa-loop/\nsession.json\nreports/\n.gocache/\n",
    )
    .unwrap();
    commit_all(d);
    let o = run(d);
    assert_ne!(o.status.code(), Some(0));
    let g = gate_of(&qa_result(d), "unit_tests");
    assert_eq!(g["status"], "failed", "{g}");
    let r: Value =
        serde_json::from_str(&std::fs::read_to_string(d.join(".qa-loop/qa-result.json")).unwrap())
            .unwrap();
    let finding = r["history"][0]["issues"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["title"].as_str().unwrap().contains("TestClean"))
        .cloned()
        .unwrap_or_else(|| panic!("no issue for TestClean: {}", r["history"][0]["issues"]));
    assert_eq!(finding["file"], "path/path_test.go", "{finding}");
    assert_eq!(finding["line"], 7, "{finding}");
    let title = finding["title"].as_str().unwrap();
    assert!(
        title.contains("path_test.go:7: Clean(\"a/\") = \"a/\", want \"a\""),
        "{title}"
    );
    let cover = gate_of(&qa_result(d), "coverage:unit_tests");
    assert!(
        cover["summary"]
            .as_str()
            .unwrap()
            .starts_with("statement coverage"),
        "{cover}"
    );
}

/// jest run twice on the same module (two test files, as unit and integration runs of the same
/// code): its two lcov reports merge to the real figure, and the suite reads jest-junit results.
#[test]
fn two_jest_lcov_reports_of_the_same_module_merge() {
    let Some(modules) = std::env::var_os("QA_LOOP_JEST_DIR").map(std::path::PathBuf::from) else {
        assert!(
            std::env::var_os("QA_LOOP_REAL_TOOLS").is_none(),
            "QA_LOOP_JEST_DIR is not set (.ci/run installs jest there)"
        );
        eprintln!("skipped: QA_LOOP_JEST_DIR is not set");
        return;
    };
    let jest = modules.join(".bin/jest");
    let reporter = modules.join("jest-junit");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join("src")).unwrap();
    std::fs::create_dir_all(d.join("test")).unwrap();
    let funcs: String = (0..10)
        .map(|i| format!("function f{i}(x) {{\n  const y = x + {i};\n  return y;\n}}\n"))
        .collect();
    let exports: Vec<String> = (0..10).map(|i| format!("f{i}")).collect();
    std::fs::write(
        d.join("src/calc.js"),
        format!("{funcs}module.exports = {{ {} }};\n", exports.join(", ")),
    )
    .unwrap();
    let tests = |range: std::ops::Range<u32>| -> String {
        let cases: String = range
            .map(|i| {
                format!(
                    "test('f{i}', () => {{ expect(calc.f{i}(1)).toBe({}); }});\n",
                    i + 1
                )
            })
            .collect();
        format!("const calc = require('../src/calc');\n{cases}")
    };
    std::fs::write(d.join("test/a.test.js"), tests(0..5)).unwrap();
    std::fs::write(d.join("test/b.test.js"), tests(5..10)).unwrap();
    std::fs::write(
        d.join("package.json"),
        r#"{"name": "calc", "version": "1.0.0"}"#,
    )
    .unwrap();
    let run_one = |s: &str| {
        format!(
            "JEST_JUNIT_OUTPUT_FILE=reports/junit-{s}.xml {} --ci --rootDir . test/{s}.test.js --coverage --collectCoverageFrom='src/**/*.js' --coverageReporters=lcov --coverageDirectory=reports/cov-{s} --reporters=default --reporters={}",
            jest.display(),
            reporter.display()
        )
    };
    let config = json!({
        "risk_level": "low",
        "unit_tests": {
            "required": true,
            "commands": [run_one("a"), run_one("b")],
            "junit": ["reports/junit-*.xml"],
            "coverage": ["reports/cov-*/lcov.info"],
            "minimum_coverage": 90
        }
    });
    std::fs::write(d.join("qa-loop.json"), config.to_string()).unwrap();
    std::fs::write(d.join(".gitignore"), ".qa-loop/\nsession.json\nreports/\n").unwrap();
    commit_all(d);
    let o = run(d);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let unit = gate_of(&qa_result(d), "unit_tests");
    assert!(
        unit["summary"].as_str().unwrap().contains("10 passed"),
        "{unit}"
    );
    let g = gate_of(&qa_result(d), "coverage:unit_tests");
    let summary = g["summary"].as_str().unwrap();
    assert_eq!(g["status"], "passed", "{summary}");
    assert!(
        summary.starts_with("line coverage 100.0%") && summary.contains("merged"),
        "{summary}"
    );
}

/// Results of another job (a real pytest JUnit file, downloaded before the run): the suite has
/// only a `junit` glob and is read, not run; its failing test fails the gate with its location.
#[test]
fn an_ingest_only_suite_reads_a_real_pytest_report() {
    if !have("python3", &["-m", "pytest", "--version"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("calc.py"), "def add(a, b):\n    return a - b\n").unwrap();
    std::fs::write(
        d.join("test_calc.py"),
        "from calc import add\n\n\ndef test_add():\n    assert add(2, 2) == 4\n",
    )
    .unwrap();
    // The other job: pytest writes its report (it fails, as the change is wrong).
    let pytest = std::process::Command::new("python3")
        .args([
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--junitxml=artifacts/shard-1.xml",
        ])
        .current_dir(d)
        .output()
        .unwrap();
    assert_eq!(pytest.status.code(), Some(1));
    std::fs::write(
        d.join("qa-loop.yml"),
        "risk_level: low\nunit_tests:\n  required: true\n  junit: [\"artifacts/*.xml\"]\n",
    )
    .unwrap();
    std::fs::write(
        d.join(".gitignore"),
        ".qa-loop/\nsession.json\nartifacts/\n__pycache__/\n",
    )
    .unwrap();
    commit_all(d);
    let o = run(d);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let g = gate_of(&qa_result(d), "unit_tests");
    assert_eq!(g["status"], "failed", "{g}");
    let summary = g["summary"].as_str().unwrap();
    assert!(
        summary.contains("produced elsewhere") && summary.contains("1 failed"),
        "{summary}"
    );
    let r: Value =
        serde_json::from_str(&std::fs::read_to_string(d.join(".qa-loop/qa-result.json")).unwrap())
            .unwrap();
    let issue = &r["history"][0]["issues"][0];
    assert_eq!(issue["file"], "test_calc.py", "{issue}");
    assert_eq!(issue["line"], 5, "{issue}");
}

/// Issue 37: a required suite whose real runner executes no test fails ("ran no tests"), whatever
/// its exit code — `node --test` finding no test file, `go test` in a package without test
/// files, unittest finding nothing, cargo with no test anywhere — and passes with
/// `allow_no_tests: true`. A runner that does run a test in the same project is green.
#[test]
fn a_suite_whose_real_runner_runs_no_test_fails_unless_allowed() {
    let mut runners: Vec<(&str, &str)> = Vec::new();
    if have("node", &["--version"]) {
        runners.push(("node --test", "node --test"));
    }
    if have("go", &["version"]) {
        runners.push(("go test", "cd gopkg && go test ./..."));
    }
    if have("python3", &["--version"]) {
        runners.push(("unittest", "python3 -m unittest discover -s pytests"));
    }
    if have("cargo", &["--version"]) {
        runners.push(("cargo test", "cd crate && cargo test --offline -q"));
    }
    // Issue 49: pytest exits 5 when it collected nothing (coloured or not).
    if have("python3", &["-m", "pytest", "--version"]) {
        runners.push(("pytest", "python3 -m pytest -q -p no:cacheprovider pytests"));
        runners.push((
            "pytest --color=yes",
            "python3 -m pytest -q -p no:cacheprovider --color=yes pytests",
        ));
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // A project with code and no test at all, for each runner.
    std::fs::write(d.join("index.js"), "module.exports = (a, b) => a + b;\n").unwrap();
    std::fs::create_dir_all(d.join("gopkg")).unwrap();
    std::fs::write(d.join("gopkg/go.mod"), "module example.com/m\n\ngo 1.19\n").unwrap();
    std::fs::write(
        d.join("gopkg/add.go"),
        "package m\n\nfunc Add(a, b int) int { return a + b }\n",
    )
    .unwrap();
    std::fs::create_dir_all(d.join("pytests")).unwrap();
    std::fs::write(
        d.join("pytests/calc.py"),
        "def add(a, b):\n    return a + b\n",
    )
    .unwrap();
    std::fs::create_dir_all(d.join("crate/src")).unwrap();
    std::fs::write(
        d.join("crate/Cargo.toml"),
        "[package]\nname = \"calc\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    )
    .unwrap();
    std::fs::write(
        d.join("crate/src/lib.rs"),
        "pub fn add(a: u64, b: u64) -> u64 {\n    a + b\n}\n",
    )
    .unwrap();
    std::fs::write(
        d.join(".gitignore"),
        ".qa-loop/\nsession.json\ntarget/\n__pycache__/\n",
    )
    .unwrap();
    commit_all(d);
    let config = |command: &str, allow: bool| {
        json!({"risk_level": "low", "unit_tests": {
            "required": true, "commands": [command], "allow_no_tests": allow}})
        .to_string()
    };
    for (runner, command) in runners {
        std::fs::write(d.join("qa-loop.json"), config(command, false)).unwrap();
        let o = run(d);
        let stderr = String::from_utf8_lossy(&o.stderr);
        let g = gate_of(&qa_result(d), "unit_tests");
        let summary = g["summary"].as_str().unwrap();
        assert_eq!(g["status"], "failed", "{runner}: {summary}\n{stderr}");
        assert!(
            summary.starts_with("ran no tests: `"),
            "{runner}: {summary}"
        );
        // The runner's own words are quoted, never a blank.
        let quoted = summary
            .split_once(" says \"")
            .map(|(_, q)| q.split('"').next().unwrap_or_default());
        assert!(
            quoted.is_none_or(|q| !q.trim().is_empty()),
            "{runner}: {summary}"
        );
        if runner == "unittest" {
            assert!(summary.contains("says \"Ran 0 tests in "), "{summary}");
        }
        if runner.starts_with("pytest") {
            assert!(summary.contains("says \"no tests ran in "), "{summary}");
        }
        assert_eq!(o.status.code(), Some(1), "{runner}: not approved\n{stderr}");

        std::fs::write(d.join("qa-loop.json"), config(command, true)).unwrap();
        let o = run(d);
        let g = gate_of(&qa_result(d), "unit_tests");
        assert_eq!(g["status"], "passed", "{runner} with allow_no_tests: {g:#}");
        assert_eq!(
            o.status.code(),
            Some(0),
            "{runner}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }

    // The same runners with one test each: green.
    std::fs::write(d.join("add.test.js"), "const t = require('node:test');\nconst assert = require('node:assert');\nt.test('adds', () => assert.strictEqual(require('./index.js')(1, 2), 3));\n").unwrap();
    std::fs::write(d.join("gopkg/add_test.go"), "package m\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(1, 2) != 3 {\n\t\tt.Fatal(\"sum\")\n\t}\n}\n").unwrap();
    std::fs::write(d.join("pytests/test_calc.py"), "import unittest\nfrom calc import add\n\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(1, 2), 3)\n").unwrap();
    std::fs::write(d.join("crate/src/lib.rs"), "pub fn add(a: u64, b: u64) -> u64 {\n    a + b\n}\n\n#[test]\nfn adds() {\n    assert_eq!(add(1, 2), 3);\n}\n").unwrap();
    for (runner, command) in [
        ("node --test", "node --test"),
        ("go test", "cd gopkg && go test ./..."),
        ("unittest", "python3 -m unittest discover -s pytests"),
        ("cargo test", "cd crate && cargo test --offline -q"),
    ] {
        if runner == "node --test" && !have("node", &["--version"])
            || runner == "go test" && !have("go", &["version"])
        {
            continue;
        }
        std::fs::write(d.join("qa-loop.json"), config(command, false)).unwrap();
        let o = run(d);
        let g = gate_of(&qa_result(d), "unit_tests");
        assert_eq!(g["status"], "passed", "{runner} with a test: {g:#}");
        assert_eq!(
            o.status.code(),
            Some(0),
            "{runner}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

/// Issue 37, flakes told apart: a test that fails on its first run only is re-run before it
/// counts as a defect — with pytest's own selection (`-k`), not the whole suite — and, passing
/// then, is flaky: the suite passes, the run is approved and the report says "flaky". With
/// `flaky_reruns: 0` the same test is a failing test.
#[test]
fn a_test_that_passes_on_its_rerun_is_flaky_and_not_a_defect() {
    if !have("python3", &["-m", "pytest", "--version"]) {
        return;
    }
    for reruns in [1, 0] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir_all(d.join("tests")).unwrap();
        std::fs::write(d.join("calc.py"), "def add(a, b):\n    return a + b\n").unwrap();
        std::fs::write(
            d.join("tests/test_calc.py"),
            "import os\nfrom calc import add\n\nCOUNT = os.path.join(os.path.dirname(__file__), '..', '.count')\n\n\ndef test_flaky():\n    n = int(open(COUNT).read()) if os.path.exists(COUNT) else 0\n    open(COUNT, 'w').write(str(n + 1))\n    assert n >= 1, 'fails on its very first run only'\n\n\ndef test_add():\n    assert add(2, 2) == 4\n",
        )
        .unwrap();
        std::fs::write(
            d.join("conftest.py"),
            "import sys, os\nsys.path.insert(0, os.path.dirname(__file__))\n",
        )
        .unwrap();
        let config = json!({"risk_level": "low", "flaky_reruns": reruns, "unit_tests": {
            "required": true,
            "commands": ["python3 -m pytest -q -p no:cacheprovider --rootdir . --junitxml=reports/junit.xml tests"],
            "junit": ["reports/junit.xml"]}});
        std::fs::write(d.join("qa-loop.json"), config.to_string()).unwrap();
        std::fs::write(
            d.join(".gitignore"),
            ".qa-loop/\nsession.json\nreports/\n__pycache__/\n.count\n",
        )
        .unwrap();
        commit_all(d);
        let o = run(d);
        let stderr = String::from_utf8_lossy(&o.stderr);
        let result = qa_result(d);
        let g = gate_of(&result, "unit_tests");
        let summary = g["summary"].as_str().unwrap();
        if reruns == 0 {
            assert_eq!(g["status"], "failed", "{summary}");
            assert_ne!(o.status.code(), Some(0), "{stderr}");
            continue;
        }
        assert_eq!(g["status"], "passed", "{summary}\n{stderr}");
        assert!(
            summary.contains("2 tests: 2 passed, 1 flaky (passed on a re-run)"),
            "{summary}"
        );
        assert_eq!(o.status.code(), Some(0), "approved: {stderr}");
        // The re-run was the failing test alone, through pytest's own selection.
        let commands: Vec<&str> = result["history"][0]["verification"]["commands"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["command"].as_str().unwrap())
            .collect();
        assert_eq!(commands.len(), 2, "{commands:?}");
        assert!(
            commands[1].ends_with("tests -k 'test_flaky'"),
            "{commands:?}"
        );
        // Issue 49, point 7: the project's own JUnit report is left as the full run wrote it
        // (both tests), not the re-run's one test.
        let junit = std::fs::read_to_string(d.join("reports/junit.xml")).unwrap();
        assert!(
            junit.contains("name=\"test_add\"") && junit.contains("name=\"test_flaky\""),
            "{junit}"
        );
        assert!(junit.contains("tests=\"2\""), "{junit}");
        let report = std::fs::read_to_string(d.join(".qa-loop/qa_report.md")).unwrap();
        assert!(
            report.contains("`tests.test_calc::test_flaky`: flaky"),
            "{report}"
        );
        assert!(
            result["history"][0]["issues"]
                .as_array()
                .unwrap()
                .is_empty(),
            "{result:#}"
        );
    }
}

/// The same with node:test and its JUnit reporter: the failing test is re-run alone
/// (`--test-name-pattern`), passes, and is flaky; the suite passes.
#[test]
fn a_node_test_that_passes_on_its_rerun_is_flaky() {
    if !have("node", &["--version"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("calc.test.js"),
        "const test = require('node:test');\nconst assert = require('node:assert');\nconst fs = require('node:fs');\ntest('flaky', () => {\n  const n = fs.existsSync('.count') ? Number(fs.readFileSync('.count', 'utf8')) : 0;\n  fs.writeFileSync('.count', String(n + 1));\n  assert.ok(n >= 1, 'fails on its very first run only');\n});\ntest('adds', () => assert.strictEqual(1 + 2, 3));\n",
    )
    .unwrap();
    let config = json!({"risk_level": "low", "unit_tests": {"required": true,
        "commands": ["mkdir -p reports && node --test --test-reporter=junit --test-reporter-destination=reports/junit.xml"],
        "junit": ["reports/junit.xml"]}});
    std::fs::write(d.join("qa-loop.json"), config.to_string()).unwrap();
    std::fs::write(
        d.join(".gitignore"),
        ".qa-loop/\nsession.json\nreports/\n.count\n",
    )
    .unwrap();
    commit_all(d);
    let o = run(d);
    let stderr = String::from_utf8_lossy(&o.stderr);
    let result = qa_result(d);
    let g = gate_of(&result, "unit_tests");
    let summary = g["summary"].as_str().unwrap();
    assert_eq!(g["status"], "passed", "{summary}\n{stderr}");
    assert!(
        summary.contains("2 tests: 2 passed, 1 flaky (passed on a re-run)"),
        "{summary}"
    );
    assert_eq!(o.status.code(), Some(0), "approved: {stderr}");
    let commands: Vec<&str> = result["history"][0]["verification"]["commands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["command"].as_str().unwrap())
        .collect();
    assert!(
        commands.len() == 2 && commands[1].ends_with("--test-name-pattern='^(flaky)$'"),
        "{commands:?}"
    );
}

/// Issue 38: jest's Clover report (`--coverageReporters=clover`, a `<coverage>` root like
/// Cobertura's) is read as Clover, and the gate's line figure is jest's own (`json-summary`'s
/// `total.lines`), `cond` lines included, with repository-relative file names.
#[test]
fn jest_clover_coverage_is_read_as_clover_with_jests_own_line_figure() {
    let Some(modules) = std::env::var_os("QA_LOOP_JEST_DIR").map(std::path::PathBuf::from) else {
        assert!(
            std::env::var_os("QA_LOOP_REAL_TOOLS").is_none(),
            "QA_LOOP_JEST_DIR is not set (.ci/run installs jest there)"
        );
        eprintln!("skipped: QA_LOOP_JEST_DIR is not set");
        return;
    };
    let jest = modules.join(".bin/jest");
    let reporter = modules.join("jest-junit");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join("src/util")).unwrap();
    std::fs::create_dir_all(d.join("test")).unwrap();
    std::fs::write(
        d.join("src/calc.js"),
        "function sign(x) {\n  if (x > 0) {\n    return 'positive';\n  }\n  return x < 0 ? 'negative' : 'zero';\n}\n\nfunction unused(a) {\n  const b = a * 2;\n  return b + 1;\n}\n\nmodule.exports = { sign, unused };\n",
    )
    .unwrap();
    std::fs::write(
        d.join("src/util/pad.js"),
        "function left(s, n) {\n  return s.padStart(n, ' ');\n}\n\nfunction right(s, n) {\n  return s.padEnd(n, ' ');\n}\n\nmodule.exports = { left, right };\n",
    )
    .unwrap();
    std::fs::write(
        d.join("test/calc.test.js"),
        "const calc = require('../src/calc');\nconst pad = require('../src/util/pad');\ntest('sign', () => { expect(calc.sign(5)).toBe('positive'); });\ntest('left', () => { expect(pad.left('a', 3)).toBe('  a'); });\n",
    )
    .unwrap();
    std::fs::write(
        d.join("package.json"),
        r#"{"name": "calc", "version": "1.0.0"}"#,
    )
    .unwrap();
    let command = format!(
        "JEST_JUNIT_OUTPUT_FILE=reports/junit.xml {} --ci --rootDir . --coverage --collectCoverageFrom='src/**/*.js' --coverageReporters=clover --coverageReporters=json-summary --coverageDirectory=reports/cov --reporters=default --reporters={}",
        jest.display(),
        reporter.display()
    );
    let config = json!({"risk_level": "low", "unit_tests": {"required": true,
        "commands": [command], "junit": ["reports/junit.xml"],
        "coverage": ["reports/cov/clover.xml"], "minimum_coverage": 50}});
    std::fs::write(d.join("qa-loop.json"), config.to_string()).unwrap();
    std::fs::write(d.join(".gitignore"), ".qa-loop/\nsession.json\nreports/\n").unwrap();
    commit_all(d);
    let o = run(d);
    let stderr = String::from_utf8_lossy(&o.stderr);
    // jest's own figure, from the same run.
    let jest_summary: Value = serde_json::from_str(
        &std::fs::read_to_string(d.join("reports/cov/coverage-summary.json")).unwrap(),
    )
    .unwrap();
    let lines = &jest_summary["total"]["lines"];
    let (covered, total) = (
        lines["covered"].as_u64().unwrap(),
        lines["total"].as_u64().unwrap(),
    );
    assert!(total > covered && covered > 0, "{jest_summary}");
    let g = gate_of(&qa_result(d), "coverage:unit_tests");
    let summary = g["summary"].as_str().unwrap();
    let expected = format!(
        "line coverage {:.1}% ({covered}/{total}) from reports/cov/clover.xml (Clover)",
        covered as f64 * 100.0 / total as f64
    );
    assert!(
        summary.starts_with(&expected),
        "{summary}\nexpected: {expected}\n{stderr}"
    );
    assert_eq!(g["status"], "passed", "{summary}");
    // The least covered files, named from the repository root (Clover's `path` is absolute).
    let details = g.to_string();
    assert!(
        details.contains("src/util/pad.js") && !details.contains(&d.display().to_string()),
        "{g:#}"
    );
    assert_eq!(o.status.code(), Some(0), "{stderr}");
}

/// Issue 38: PHPUnit with pcov writes Clover (`--coverage-clover`); the gate's line figure is
/// PHPUnit's own "Lines:" (`--coverage-text`, from a second real run), and its JUnit is read.
#[test]
fn phpunit_clover_coverage_equals_phpunits_own_line_figure() {
    if !have("php", &["-r", "exit(extension_loaded('pcov') ? 0 : 1);"])
        || !have("phpunit", &["--version"])
    {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join("src/Util")).unwrap();
    std::fs::create_dir_all(d.join("tests")).unwrap();
    std::fs::write(
        d.join("src/Calc.php"),
        "<?php\ndeclare(strict_types=1);\n\nnamespace App;\n\nfinal class Calc\n{\n    public function add(int $a, int $b): int\n    {\n        return $a + $b;\n    }\n\n    public function sign(int $a): string\n    {\n        if ($a > 0) {\n            return 'positive';\n        }\n        if ($a < 0) {\n            return 'negative';\n        }\n        return 'zero';\n    }\n\n    public function unused(int $a): int\n    {\n        $b = $a * 2;\n        return $b + 1;\n    }\n}\n",
    )
    .unwrap();
    std::fs::write(
        d.join("src/Util/strings.php"),
        "<?php\ndeclare(strict_types=1);\n\nfunction shout(string $s): string\n{\n    $upper = strtoupper($s);\n    return $upper . '!';\n}\n\nfunction whisper(string $s): string\n{\n    return strtolower($s);\n}\n",
    )
    .unwrap();
    std::fs::write(
        d.join("tests/CalcTest.php"),
        "<?php\ndeclare(strict_types=1);\n\nuse App\\Calc;\nuse PHPUnit\\Framework\\TestCase;\n\nrequire_once __DIR__ . '/../src/Calc.php';\nrequire_once __DIR__ . '/../src/Util/strings.php';\n\nfinal class CalcTest extends TestCase\n{\n    public function testAdd(): void\n    {\n        $this->assertSame(3, (new Calc())->add(1, 2));\n    }\n\n    public function testSign(): void\n    {\n        $this->assertSame('positive', (new Calc())->sign(5));\n    }\n\n    public function testShout(): void\n    {\n        $this->assertSame('HI!', shout('hi'));\n    }\n}\n",
    )
    .unwrap();
    std::fs::write(
        d.join("phpunit.xml"),
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<phpunit colors=\"false\" cacheResult=\"false\">\n  <testsuites>\n    <testsuite name=\"unit\"><directory>tests</directory></testsuite>\n  </testsuites>\n  <coverage>\n    <include><directory suffix=\".php\">src</directory></include>\n  </coverage>\n</phpunit>\n",
    )
    .unwrap();
    let phpunit = "php -d pcov.enabled=1 -d pcov.directory=src \"$(command -v phpunit)\"";
    let config = json!({"risk_level": "low", "unit_tests": {"required": true,
        "commands": [format!("{phpunit} --coverage-clover reports/clover.xml --log-junit reports/junit.xml")],
        "junit": ["reports/junit.xml"], "coverage": ["reports/clover.xml"], "minimum_coverage": 40}});
    std::fs::write(d.join("qa-loop.json"), config.to_string()).unwrap();
    std::fs::write(d.join(".gitignore"), ".qa-loop/\nsession.json\nreports/\n").unwrap();
    commit_all(d);
    let o = run(d);
    let stderr = String::from_utf8_lossy(&o.stderr);
    let result = qa_result(d);
    let unit = gate_of(&result, "unit_tests");
    assert!(
        unit["summary"].as_str().unwrap().contains("3 passed"),
        "{unit}\n{stderr}"
    );
    // PHPUnit's own figure: ` Summary:` … `  Lines:   55.56% (5/9)`.
    let text = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{phpunit} --coverage-text"))
        .current_dir(d)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout).into_owned();
    let lines = text
        .split_once("Summary:")
        .and_then(|(_, s)| s.lines().find(|l| l.trim_start().starts_with("Lines:")))
        .unwrap_or_else(|| panic!("no Lines: in PHPUnit's summary:\n{text}"));
    let (percent, counts) = lines
        .trim()
        .trim_start_matches("Lines:")
        .trim()
        .split_once(' ')
        .unwrap();
    let (covered, total) = counts
        .trim_matches(|c| c == '(' || c == ')')
        .split_once('/')
        .unwrap();
    let (covered, total): (u64, u64) = (
        covered.trim().parse().unwrap(),
        total.trim().parse().unwrap(),
    );
    assert!(total > covered && covered > 0, "{lines}");
    let g = gate_of(&result, "coverage:unit_tests");
    let summary = g["summary"].as_str().unwrap();
    let expected = format!(
        "line coverage {:.1}% ({covered}/{total}) from reports/clover.xml (Clover)",
        covered as f64 * 100.0 / total as f64
    );
    assert!(
        summary.starts_with(&expected),
        "{summary}\nexpected: {expected} (PHPUnit: {lines})"
    );
    let ours: f64 = covered as f64 * 100.0 / total as f64;
    let theirs: f64 = percent.trim_end_matches('%').parse().unwrap();
    assert!(
        (ours - theirs).abs() < 0.005,
        "{ours} vs PHPUnit's {percent}"
    );
    assert_eq!(g["status"], "passed", "{summary}");
    let details = g.to_string();
    assert!(
        details.contains("src/Calc.php") && !details.contains(&d.display().to_string()),
        "{g:#}"
    );
    assert_eq!(o.status.code(), Some(0), "{stderr}");
}
