//! The loop's own cost (results in BENCHMARKS.md): what qa-loop adds around the work it
//! orchestrates, and how much verification a whole QA loop runs.
//!
//! `approve [N]` (N = 30): a two-commit git repository whose second commit changes one small
//! Python file, reviewed by `qa-loop run --base HEAD~1` with a trivial suite (`true`) and a
//! replayed reviewer that approves at once, N times: median and p90 wall time of the process,
//! median peak RSS (`VmHWM` of its process, sampled every 2 ms until it exits). Then one run under
//! `strace -f -e trace=execve` lists the git processes qa-loop started (successful execs of a
//! `…/git` binary), and `git diff HEAD~1` alone is timed for scale.
//!
//! `loop`: a real pytest project (100 tests of 0.2 s each, about 20 s; `test_add` fails because
//! `calc.add` subtracts) through five iterations: the reviewer rejects four times, the fixer
//! writes a new but still wrong `calc.py` three times and the right one the fourth, the fifth
//! review approves. Reported per iteration: what ran and its time (from `qa-result.json`); then
//! one full run of the suite alone, the verification time of the whole run (the commands'
//! `duration_ms`, passes reusing an earlier one's results not counted), their ratio (target
//! ≤ 2.3), the run's wall time and outcome.
//!
//! `cargo bench --bench loop_cost` (both parts), `-- approve 30`, `-- loop`. The binary measured
//! is `QA_LOOP_BIN` when set (an older build, side by side), else this crate's `qa-loop`.

use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The suite of the `loop` part.
const PYTEST: &str = "python3 -m pytest -q -p no:cacheprovider --junitxml=reports/junit.xml";

/// The ratio of the loop's verification time to one full run of its suite that is the target.
const TARGET_RATIO: f64 = 2.3;

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let bin =
        std::env::var("QA_LOOP_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_qa-loop").to_string());
    println!("binary measured: `{bin}`\n");
    match args.first().map(String::as_str) {
        None => {
            approve(&bin, 30);
            run_loop(&bin);
        }
        Some("approve") => {
            let n = args
                .get(1)
                .map_or(30, |n| n.parse().expect("N: a number of runs"));
            approve(&bin, n.max(1));
        }
        Some("loop") => run_loop(&bin),
        Some(other) => {
            eprintln!("unknown part `{other}`: `approve [N]`, `loop`, or none for both");
            std::process::exit(2);
        }
    }
}

fn git(root: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=b", "-c", "user.email=b@b.invalid"])
        .args(["-c", "commit.gpgsign=false"])
        .args(args)
        .current_dir(root)
        .output()
        .expect("git starts");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn write(root: &Path, path: &str, text: &str) {
    let p = root.join(path);
    if let Some(parent) = p.parent() {
        std::fs::create_dir_all(parent).expect("directory");
    }
    std::fs::write(&p, text).expect("write");
}

/// A finished process: wall time, peak RSS (KiB), exit status and what it wrote to stderr.
struct Measured {
    wall: Duration,
    peak_kib: u64,
    status: ExitStatus,
    stderr: String,
}

/// Runs `cmd` (stdout discarded, stderr to a file), its `VmHWM` sampled every 2 ms. A thread
/// waits for the process, so the wall time is exact, not rounded up to the next sample.
fn measure(cmd: &mut Command) -> Measured {
    // A file, not a pipe: a full pipe nobody reads would stall the run.
    let log = tempfile::NamedTempFile::new().expect("temp file");
    let started = Instant::now();
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(log.reopen().expect("log file"))
        .spawn()
        .expect("the command starts");
    let status_path = format!("/proc/{}/status", child.id());
    let waiter = std::thread::spawn(move || {
        let status = child.wait();
        (status, Instant::now())
    });
    let mut peak = 0u64;
    while !waiter.is_finished() {
        if let Some(kb) = std::fs::read_to_string(&status_path).ok().and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        }) {
            peak = peak.max(kb);
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let (status, ended) = waiter.join().expect("waiter thread");
    Measured {
        wall: ended - started,
        peak_kib: peak,
        status: status.expect("wait for the command"),
        stderr: std::fs::read_to_string(log.path()).unwrap_or_default(),
    }
}

/// `qa-loop run` replaying `session.json` in `root` against `--base base`, as a user runs it
/// outside CI; `wrapper` (e.g. strace and its options) runs qa-loop when not empty.
fn qa_loop(root: &Path, wrapper: &[&str], bin: &str, base: &str) -> Command {
    let mut c = match wrapper.split_first() {
        Some((program, options)) => {
            let mut c = Command::new(program);
            c.args(options).arg(bin);
            c
        }
        None => Command::new(bin),
    };
    c.current_dir(root)
        .env_remove("QA_LOOP_PROVIDER")
        .env_remove("GITHUB_ACTIONS")
        .env_remove("GITHUB_BASE_REF")
        .env("NO_COLOR", "1")
        .args([
            "run",
            "--provider",
            "replay",
            "--replay-session",
            "session.json",
        ])
        .args(["--base", base]);
    c
}

/// The `p`-th percentile (nearest rank) of sorted values.
fn percentile<T: Copy>(sorted: &[T], p: usize) -> T {
    let rank = (sorted.len() * p).div_ceil(100).max(1);
    sorted[rank - 1]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

/// The last lines of a failed run's stderr.
fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// The `approve` repository: `base` with `app.py`, a second commit changing it.
fn approve_repo(root: &Path) {
    git(root, &["init", "-q", "-b", "main"]);
    write(root, ".gitignore", ".qa-loop/\nsession.json\n");
    let config = json!({"risk_level": "low", "max_iterations": 3, "failure_analysis": false,
        "unit_tests": {"required": true, "allow_no_tests": true, "commands": ["true"]}});
    write(root, "qa-loop.json", &config.to_string());
    write(
        root,
        "app.py",
        "def greet(name):\n    return \"Hello \" + name\n",
    );
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "base"]);
    write(
        root,
        "app.py",
        "def greet(name):\n    \"\"\"A greeting for `name`.\"\"\"\n    return f\"Hello, {name}!\"\n",
    );
    git(root, &["commit", "-q", "-a", "-m", "a friendlier greeting"]);
    let verdict = json!({"role": "reviewer", "tool_calls": [{"id": "v", "name": "submit_verdict",
        "arguments": {"status": "approved", "score": 90, "confidence": 0.9,
                      "summary": "the greeting reads well", "criteria": [], "issues": []}}]});
    write(
        root,
        "session.json",
        &json!({ "calls": [verdict] }).to_string(),
    );
}

/// Part 1: qa-loop's own overhead on a run that approves at once.
fn approve(bin: &str, n: usize) {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path();
    approve_repo(root);
    let mut walls = Vec::new();
    let mut peaks = Vec::new();
    for i in 0..n {
        let _ = std::fs::remove_dir_all(root.join(".qa-loop"));
        let m = measure(&mut qa_loop(root, &[], bin, "HEAD~1"));
        assert_eq!(
            m.status.code(),
            Some(0),
            "run {}: not approved ({}):\n{}",
            i + 1,
            m.status,
            tail(&m.stderr, 30)
        );
        walls.push(m.wall);
        peaks.push(m.peak_kib);
    }
    walls.sort();
    peaks.sort();
    let mut diffs: Vec<Duration> = (0..n)
        .map(|_| {
            let started = Instant::now();
            git(root, &["diff", "HEAD~1"]);
            started.elapsed()
        })
        .collect();
    diffs.sort();
    let traced = strace_git(bin, root);
    println!("### loop_cost approve: one approving review ({n} runs)\n");
    println!("| measure | value |\n|---|---|");
    println!("| qa-loop run, wall median | {} |", ms(walls[n / 2]));
    println!("| qa-loop run, wall p90 | {} |", ms(percentile(&walls, 90)));
    println!(
        "| qa-loop peak RSS (VmHWM), median | {:.1} MiB |",
        peaks[n / 2] as f64 / 1024.0
    );
    match &traced {
        Some(commands) => println!("| git processes started (strace) | {} |", commands.len()),
        None => println!("| git processes started (strace) | not counted: strace missing |"),
    }
    println!(
        "| `git diff HEAD~1` alone (one git process), wall median | {} |",
        ms(diffs[n / 2])
    );
    if let Some(commands) = traced {
        println!("\ngit commands of one run (strace -f -e trace=execve):\n");
        for (i, c) in commands.iter().enumerate() {
            println!("{}. `{c}`", i + 1);
        }
    }
    println!();
}

/// The git processes one approve run started, each as its command line; `None` when strace is
/// not installed.
fn strace_git(bin: &str, root: &Path) -> Option<Vec<String>> {
    if Command::new("strace").arg("-V").output().is_err() {
        return None;
    }
    let trace = tempfile::NamedTempFile::new().expect("temp file");
    let out = trace.path().to_str().expect("a UTF-8 temp path");
    let _ = std::fs::remove_dir_all(root.join(".qa-loop"));
    // `-s 4096`: whole arguments, not strace's 32-character cut.
    let wrapper = [
        "strace",
        "-f",
        "-qq",
        "-s",
        "4096",
        "-e",
        "trace=execve",
        "-o",
        out,
    ];
    let m = measure(&mut qa_loop(root, &wrapper, bin, "HEAD~1"));
    assert_eq!(
        m.status.code(),
        Some(0),
        "traced run not approved ({}):\n{}",
        m.status,
        tail(&m.stderr, 30)
    );
    let text = std::fs::read_to_string(trace.path()).expect("the strace output");
    Some(git_execs(&text))
}

/// The successful execs of a `…/git` binary in strace output (`-f`: lines start with the pid; a
/// call interrupted by another process's line is split into `<unfinished ...>` and
/// `<... execve resumed>`), each as its argv joined.
fn git_execs(trace: &str) -> Vec<String> {
    let mut pending: HashMap<&str, &str> = HashMap::new();
    let mut found = Vec::new();
    for line in trace.lines() {
        let (pid, rest) = match line.split_once(' ') {
            Some((pid, rest)) if pid.bytes().all(|b| b.is_ascii_digit()) => (pid, rest.trim()),
            _ => ("", line),
        };
        let call = if let Some(head) = rest.strip_suffix("<unfinished ...>") {
            pending.insert(pid, head.trim_end());
            continue;
        } else if let Some(tail) = rest.strip_prefix("<... execve resumed>") {
            match pending.remove(pid) {
                Some(head) => format!("{head}{tail}"),
                None => continue,
            }
        } else {
            rest.to_string()
        };
        let Some(args) = call.strip_prefix("execve(\"") else {
            continue;
        };
        let Some((path, after)) = args.split_once('"') else {
            continue;
        };
        let succeeded = call
            .rsplit_once(") = ")
            .is_some_and(|(_, result)| result.starts_with('0'));
        if path.ends_with("/git") && succeeded {
            found.push(argv(after).join(" "));
        }
    }
    found
}

/// The quoted strings of strace's `, ["git", "diff", …]`, shell-quoted where they need it.
fn argv(list: &str) -> Vec<String> {
    let mut args = Vec::new();
    let mut current: Option<String> = None;
    let mut chars = list.chars();
    while let Some(c) = chars.next() {
        match (&mut current, c) {
            (None, ']') => break,
            (None, '"') => current = Some(String::new()),
            (None, _) => {}
            (Some(arg), '\\') => match chars.next() {
                Some(e @ ('"' | '\\')) => arg.push(e),
                Some(e) => {
                    arg.push('\\');
                    arg.push(e);
                }
                None => {}
            },
            (Some(_), '"') => {
                let arg = current.take().unwrap_or_default();
                let plain = !arg.is_empty()
                    && arg
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "-_=.,/:@+%^~".contains(c));
                args.push(if plain { arg } else { format!("'{arg}'") });
            }
            (Some(arg), c) => arg.push(c),
        }
    }
    args
}

/// `calc.py` with `add` returning `add` (`note`: a comment line, when not empty).
fn calc(add: &str, note: &str) -> String {
    let note = if note.is_empty() {
        String::new()
    } else {
        format!("    # {note}\n")
    };
    format!("def add(a, b):\n{note}    return {add}\n\n\ndef mul(a, b):\n    return a * b\n")
}

/// The `loop` project: `base` with the tests and a right `calc.py`, a second commit breaking
/// `add`; the session of five reviews and four fixes.
fn loop_project(root: &Path) {
    git(root, &["init", "-q", "-b", "main"]);
    write(
        root,
        ".gitignore",
        ".qa-loop/\nsession.json\nreports/\n__pycache__/\n",
    );
    let config = json!({"risk_level": "low", "max_iterations": 5, "recurring_threshold": 10,
        "min_score": 0, "failure_analysis": false, "flaky_reruns": 0,
        "unit_tests": {"required": true, "commands": [PYTEST], "junit": ["reports/junit.xml"]}});
    write(root, "qa-loop.json", &config.to_string());
    write(
        root,
        "tests/test_calc.py",
        "\"\"\"100 tests of 0.2 s each: `test_add` fails while `calc.add` is wrong.\"\"\"\n\
         import time\n\nimport pytest\n\nimport calc\n\n\n\
         def test_add():\n    time.sleep(0.2)\n    assert calc.add(2, 3) == 5\n\n\n\
         @pytest.mark.parametrize(\"n\", range(99))\n\
         def test_mul(n):\n    time.sleep(0.2)\n    assert calc.mul(n, 3) == 3 * n\n",
    );
    write(root, "calc.py", &calc("a + b", ""));
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "base"]);
    write(root, "calc.py", &calc("a - b", ""));
    git(root, &["commit", "-q", "-a", "-m", "rewrite add"]);
    let verdict = |status: &str, score: u8| {
        json!({"role": "reviewer", "tool_calls": [{"id": "v", "name": "submit_verdict",
            "arguments": {"status": status, "score": score, "confidence": 0.9,
                          "summary": "s", "criteria": [], "issues": []}}]})
    };
    let fix = |content: String| {
        [
            json!({"role": "fixer", "tool_calls": [{"id": "w", "name": "write_file",
                "arguments": {"path": "calc.py", "content": content}}]}),
            json!({"role": "fixer", "tool_calls": [{"id": "f", "name": "finish",
                "arguments": {"summary": "done"}}]}),
        ]
    };
    let mut calls = Vec::new();
    // New but still wrong bodies after reviews 1-3, the right one after review 4.
    for (k, body) in ["a - b + 1", "a * b", "b - a"].into_iter().enumerate() {
        calls.push(verdict("rejected", 30));
        calls.extend(fix(calc(body, &format!("attempt {}", k + 1))));
    }
    calls.push(verdict("rejected", 30));
    calls.extend(fix(calc("a + b", "")));
    calls.push(verdict("approved", 90));
    write(root, "session.json", &json!({ "calls": calls }).to_string());
}

/// Part 2: the verification a whole loop runs, against one full run of its suite.
fn run_loop(bin: &str) {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path();
    loop_project(root);
    let alone = measure(Command::new("sh").args(["-c", PYTEST]).current_dir(root));
    let _ = std::fs::remove_dir_all(root.join("reports"));
    let run = measure(&mut qa_loop(root, &[], bin, "HEAD~1"));
    println!("### loop_cost loop: five iterations over a 100-test pytest suite\n");
    let result = std::fs::read_to_string(root.join(".qa-loop/qa-result.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok());
    let Some(result) = result else {
        println!(
            "no .qa-loop/qa-result.json (exit {:?}):\n{}",
            run.status.code(),
            tail(&run.stderr, 30)
        );
        return;
    };
    let total = iterations(&result);
    let ratio = total.as_secs_f64() / alone.wall.as_secs_f64();
    println!("\n| measure | value |\n|---|---|");
    println!(
        "| suite alone, one full run (exit {:?}) | {:.2} s |",
        alone.status.code(),
        alone.wall.as_secs_f64()
    );
    println!(
        "| verification in the run (commands' `duration_ms`, reused passes not counted) | {:.2} s |",
        total.as_secs_f64()
    );
    println!(
        "| ratio verification / one full run | {ratio:.2} (target ≤ {TARGET_RATIO}: {}) |",
        if ratio <= TARGET_RATIO {
            "met"
        } else {
            "not met"
        }
    );
    println!(
        "| qa-loop run, wall (peak RSS {:.1} MiB) | {:.2} s |",
        run.peak_kib as f64 / 1024.0,
        run.wall.as_secs_f64()
    );
    // What the run spent outside the commands it recorded: qa-loop itself, git, the replayed
    // model, and any command the result does not list.
    println!(
        "| run wall − recorded verification | {:.2} s |",
        run.wall.saturating_sub(total).as_secs_f64()
    );
    println!(
        "| outcome | exit {:?}, verdict {}, {} iteration(s) |",
        run.status.code(),
        result["verdict"],
        result["history"].as_array().map_or(0, Vec::len)
    );
    if run.status.code() != Some(0) {
        println!("\nstderr (last lines):\n{}", tail(&run.stderr, 20));
    }
    println!();
}

/// Prints what each iteration verified and its time; returns the verification time of the run
/// (passes that reused an earlier pass's results not counted).
fn iterations(result: &Value) -> Duration {
    println!("`suite` = `{PYTEST}`\n");
    println!("| iteration | scope | commands | verification | verdict |\n|---|---|---|---|---|");
    let mut total_ms = 0;
    for record in result["history"].as_array().into_iter().flatten() {
        let v = &record["verification"];
        let tests: u64 = v["tests"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["counts"]["tests"].as_u64())
            .sum();
        let scope = if let Some(pass) = v["reused_from"].as_u64() {
            format!("reused (pass {pass})")
        } else if v["failing_first"].is_object() {
            let f = &v["failing_first"];
            format!("failing first: {} of {} tests", f["ran"], f["of"])
        } else {
            format!("full: {tests} tests")
        };
        let mut ms = 0;
        let mut commands = Vec::new();
        for c in v["commands"].as_array().into_iter().flatten() {
            let d = c["duration_ms"].as_u64().unwrap_or(0);
            ms += d;
            let outcome = match c["code"].as_i64() {
                Some(code) => format!("exit {code}"),
                None => c["outcome"].as_str().unwrap_or("?").to_string(),
            };
            let text = c["command"]
                .as_str()
                .unwrap_or("?")
                .replace(PYTEST, "suite");
            commands.push(format!("`{text}` {outcome} {:.2} s", d as f64 / 1000.0));
        }
        let reused = v["reused_from"].is_u64();
        if !reused {
            total_ms += ms;
        }
        println!(
            "| {} | {scope} | {} | {:.2} s{} | {} ({}) |",
            record["iteration"],
            commands.join("; "),
            ms as f64 / 1000.0,
            if reused { " (not counted)" } else { "" },
            record["status"].as_str().unwrap_or("?"),
            record["score"]
        );
    }
    Duration::from_millis(total_ms)
}
