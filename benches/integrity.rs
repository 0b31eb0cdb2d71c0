//! What the test-integrity guard's old-code run costs (issue 37; results in BENCHMARKS.md).
//!
//! A real pytest project: 30 slow tests (0.2 s each, about 6 s a full run) and a fast `test_add`
//! that fails. The real binary runs two iterations twice, the model replayed: once with a fixer
//! that repairs the code (no test file changes: no old-code run), once with a fixer that loosens
//! `test_add` (the old-code run checks it on the code before the fix). The difference in wall
//! time is the old-code run — set beside the time of the selected test alone and of a full run.
//!
//! `cargo bench --bench integrity [-- N]` (N rounds, default 3; the medians are reported).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;

fn main() {
    let rounds: usize = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with("--"))
        .map_or(3, |n| n.parse().expect("rounds"));
    let ok = Command::new("python3")
        .args(["-m", "pytest", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(ok, "pytest is needed (pip install pytest)");
    let (mut honest, mut loosened, mut selected, mut full) = (vec![], vec![], vec![], vec![]);
    for _ in 0..rounds {
        honest.push(run(false));
        loosened.push(run(true));
        let dir = project();
        selected.push(timed(
            dir.path(),
            "python3 -m pytest -q -p no:cacheprovider tests -k 'test_add'",
        ));
        full.push(timed(
            dir.path(),
            "python3 -m pytest -q -p no:cacheprovider tests",
        ));
    }
    let median = |v: &mut Vec<Duration>| {
        v.sort();
        v[v.len() / 2].as_secs_f64()
    };
    let (h, l, s, f) = (
        median(&mut honest),
        median(&mut loosened),
        median(&mut selected),
        median(&mut full),
    );
    println!(
        "two iterations, repairing fixer (no old-code run): {h:.2} s wall (median of {rounds})"
    );
    println!("two iterations, loosening fixer (old-code run):    {l:.2} s wall");
    println!(
        "the old-code run adds:                             {:.2} s",
        l - h
    );
    println!("the selected test alone (pytest -k test_add):      {s:.2} s");
    println!("a full run of the suite:                           {f:.2} s");
}

/// The project: `add` subtracts; 30 slow passing tests beside the failing `test_add`.
fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir_all(d.join("tests")).unwrap();
    std::fs::write(d.join("calc.py"), "def add(a, b):\n    return a - b\n").unwrap();
    std::fs::write(
        d.join("conftest.py"),
        "import sys, os\nsys.path.insert(0, os.path.dirname(__file__))\n",
    )
    .unwrap();
    std::fs::write(d.join("tests/test_calc.py"), TESTS).unwrap();
    let slow: String = (0..30)
        .map(|i| format!("def test_slow_{i}():\n    time.sleep(0.2)\n\n\n"))
        .collect();
    std::fs::write(
        d.join("tests/test_slow.py"),
        format!("import time\n\n\n{slow}"),
    )
    .unwrap();
    std::fs::write(
        d.join("qa-loop.json"),
        json!({"risk_level": "low", "max_iterations": 2, "recurring_threshold": 5, "flaky_reruns": 0,
            "unit_tests": {"required": true,
                "commands": ["python3 -m pytest -q -p no:cacheprovider --rootdir . --junitxml=reports/junit.xml tests"],
                "junit": ["reports/junit.xml"]}})
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        d.join(".gitignore"),
        ".qa-loop/\nsession.json\nreports/\n__pycache__/\n",
    )
    .unwrap();
    for args in [
        &["init", "-q"][..],
        &["add", "-A"],
        &["commit", "-q", "-m", "init"],
    ] {
        let ok = Command::new("git")
            .current_dir(d)
            .args(args)
            .env("GIT_AUTHOR_NAME", "b")
            .env("GIT_AUTHOR_EMAIL", "b@example.com")
            .env("GIT_COMMITTER_NAME", "b")
            .env("GIT_COMMITTER_EMAIL", "b@example.com")
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    }
    dir
}

const TESTS: &str = "from calc import add\n\n\ndef test_add():\n    assert add(2, 2) == 4\n";

/// Two iterations of the real binary; `loosen`: the fixer weakens `test_add` instead of
/// repairing `add`.
fn run(loosen: bool) -> Duration {
    let dir = project();
    let d = dir.path();
    let (path, content) = if loosen {
        ("tests/test_calc.py", TESTS.replace("== 4", "is not None"))
    } else {
        ("calc.py", "def add(a, b):\n    return a + b\n".to_string())
    };
    let verdict = |status: &str| {
        json!({"role": "reviewer", "tool_calls": [{"id": "v", "name": "submit_verdict", "arguments": {
            "status": status, "score": if status == "approved" { 95 } else { 30 }, "confidence": 0.9,
            "summary": "s", "criteria": [], "issues": []}}]})
    };
    let calls = json!([
        verdict("rejected"),
        {"role": "fixer", "tool_calls": [{"id": "w", "name": "write_file", "arguments": {"path": path, "content": content}}]},
        {"role": "fixer", "tool_calls": [{"id": "f", "name": "finish", "arguments": {"summary": "done"}}]},
        verdict("approved"),
        {"role": "analyst", "text": "{}"}
    ]);
    std::fs::write(d.join("session.json"), json!({"calls": calls}).to_string()).unwrap();
    let log = tempfile::NamedTempFile::new().unwrap();
    let started = Instant::now();
    let status = Command::new(env!("CARGO_BIN_EXE_qa-loop"))
        .current_dir(d)
        .env_remove("GITHUB_ACTIONS")
        .args([
            "run",
            "--provider",
            "replay",
            "--replay-session",
            "session.json",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(log.reopen().unwrap())
        .status()
        .unwrap();
    let wall = started.elapsed();
    let err = std::fs::read_to_string(log.path()).unwrap_or_default();
    let want = if loosen {
        "passes on the code before the fix"
    } else {
        "approved"
    };
    let result = std::fs::read_to_string(d.join(".qa-loop/qa-result.json")).unwrap_or_default();
    assert!(
        status.code().is_some() && result.contains(want),
        "{want}: {status}\n{err}"
    );
    wall
}

fn timed(dir: &Path, command: &str) -> Duration {
    let started = Instant::now();
    Command::new("sh")
        .args(["-c", command])
        .current_dir(dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    started.elapsed()
}
