//! qa-loop's own cost on a very large change (results in BENCHMARKS.md).
//!
//! A repository whose branch changes 5 000 files with 50 MB of diff (4 500 new files, 500
//! modified, one in ten with a debugging statement the pattern checks find) is reviewed once by
//! the real `qa-loop` binary: `run --mode review`, the model replayed (one verdict), no test
//! suites — so what is measured is qa-loop itself: the base, the diff (read once), the
//! pattern checks over every added line, the reviewer's task, the report files. Reported: wall
//! time (git included) and qa-loop's peak resident memory (`VmHWM` of its process, sampled
//! every 2 ms until it exits; git's own memory is not counted).
//!
//! Also: one `git diff` of the same change, for scale (the review's target is 1.5× it).
//! `QA_LOOP_BIN=/path/to/qa-loop` measures another build side by side.
//!
//! `cargo bench --bench large_change` (5 000 files, 50 MB); `-- 1000 10` for other sizes,
//! `-- 5000 50 DIR` to keep the repository in DIR.

use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let files: usize = args.first().map_or(5000, |n| n.parse().expect("files"));
    let mib: usize = args.get(1).map_or(50, |n| n.parse().expect("MB"));
    // A third argument keeps the repository there (to look into a run).
    let dir = tempfile::tempdir().unwrap();
    let root = match args.get(2) {
        Some(keep) => {
            std::fs::create_dir_all(keep).unwrap();
            Path::new(keep)
        }
        None => dir.path(),
    };
    let diff_bytes = generate(root, files, mib * 1_000_000);
    println!(
        "change: {files} files, {:.1} MB of diff (`git diff --stat` counts {} files)",
        diff_bytes as f64 / 1e6,
        git(root, &["diff", "--name-only", "master"])
            .lines()
            .count()
    );
    let mut runs = Vec::new();
    for _ in 0..3 {
        runs.push(review(root));
    }
    runs.sort_by_key(|r| r.0);
    let (wall, peak) = runs[runs.len() / 2];
    let worst_peak = runs.iter().map(|r| r.1).max().unwrap();
    println!(
        "qa-loop run --mode review ({}): median {:.2} s wall (of 3), peak RSS {:.1} MiB (worst of 3: {:.1} MiB)",
        binary(),
        wall.as_secs_f64(),
        peak as f64 / 1024.0,
        worst_peak as f64 / 1024.0
    );
    let one = git_diff(root);
    println!(
        "one `git diff master > /dev/null`: median {:.2} s (of 3); the review takes {:.2}x it (target <= 1.5x)",
        one.as_secs_f64(),
        wall.as_secs_f64() / one.as_secs_f64()
    );
}

/// The binary measured: `QA_LOOP_BIN` (an older build, to compare), else this tree's.
fn binary() -> String {
    std::env::var("QA_LOOP_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_qa-loop").to_string())
}

/// The median wall time of one `git diff master` of the change, its output discarded.
fn git_diff(root: &Path) -> Duration {
    let mut times: Vec<Duration> = (0..3)
        .map(|_| {
            let started = Instant::now();
            let status = Command::new("git")
                .args(["diff", "--no-color", "--no-ext-diff", "master", "--"])
                .current_dir(root)
                .stdout(std::process::Stdio::null())
                .status()
                .unwrap();
            assert!(status.success());
            started.elapsed()
        })
        .collect();
    times.sort();
    times[1]
}

fn git(root: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=b", "-c", "user.email=b@b.invalid"])
        .args(args)
        .current_dir(root)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A line of source (about 64 bytes).
fn line(file: usize, n: usize) -> String {
    format!(
        "    total_{n:04} = compute_share({file}, {n}, rate=0.{:03})  # step\n",
        (file * 7 + n) % 997
    )
}

/// The repository: `master` with the 500 files the branch modifies, the branch `changes` with
/// every file (`total` bytes of added lines in all). Returns the diff's size.
fn generate(root: &Path, files: usize, total: usize) -> usize {
    git(root, &["init", "-q", "-b", "master"]);
    std::fs::write(root.join(".gitignore"), ".qa-loop/\nsession.json\n").unwrap();
    std::fs::write(root.join("qa-loop.yml"), "risk_level: low\n").unwrap();
    let modified = files / 10;
    let per_file = total / files;
    let lines = per_file / line(0, 0).len();
    let path = |i: usize| format!("pkg{:02}/module_{i:05}.py", i % 50);
    for i in 0..modified {
        let p = root.join(path(i));
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, format!("def f_{i}():\n    return {i}\n")).unwrap();
    }
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "base"]);
    git(root, &["checkout", "-q", "-b", "changes"]);
    for i in 0..files {
        let p = root.join(path(i));
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        let mut f = std::io::BufWriter::new(std::fs::File::create(&p).unwrap());
        writeln!(f, "def f_{i}():").unwrap();
        for n in 0..lines {
            f.write_all(line(i, n).as_bytes()).unwrap();
        }
        if i % 10 == 3 {
            writeln!(f, "    print(\"debug\", total_0001)").unwrap();
        }
        writeln!(f, "    return {i}").unwrap();
    }
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "the large change"]);
    std::fs::write(
        root.join("session.json"),
        r#"{"calls": [{"role": "reviewer", "tool_calls": [{"id": "v", "name": "submit_verdict",
            "arguments": {"status": "approved", "score": 90, "confidence": 0.9,
                          "summary": "large change read", "criteria": [], "issues": []}}]}]}"#,
    )
    .unwrap();
    git(root, &["diff", "master"]).len()
}

/// One review: wall time and peak RSS (KiB) of the qa-loop process.
fn review(root: &Path) -> (Duration, u64) {
    let _ = std::fs::remove_dir_all(root.join(".qa-loop"));
    // A file, not a pipe: a full pipe nobody reads would stall the run.
    let log = tempfile::NamedTempFile::new().unwrap();
    let started = Instant::now();
    let mut child = Command::new(binary())
        .current_dir(root)
        .env_remove("GITHUB_ACTIONS")
        .env_remove("GITHUB_BASE_REF")
        .args([
            "run",
            "--provider",
            "replay",
            "--replay-session",
            "session.json",
            "--mode",
            "review",
            "--base",
            "master",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(log.reopen().unwrap())
        .spawn()
        .unwrap();
    let status_path = format!("/proc/{}/status", child.id());
    let mut peak = 0u64;
    let status = loop {
        if let Some(kb) = std::fs::read_to_string(&status_path).ok().and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        }) {
            peak = peak.max(kb);
        }
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let wall = started.elapsed();
    let err = std::fs::read_to_string(log.path()).unwrap_or_default();
    // Approved by the reviewer, but the debugging statements are advisory findings at most:
    // exit 0 or 1 are both a completed run; anything else is a failure of the benchmark.
    assert!(
        matches!(status.code(), Some(0 | 1)),
        "qa-loop failed ({status}):\n{err}"
    );
    let result: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root.join(".qa-loop/qa-result.json")).unwrap(),
    )
    .unwrap();
    println!(
        "  run: {:.2} s, peak {:.1} MiB, verdict {}, {} issue(s), {} file(s) not shown to the reviewer",
        wall.as_secs_f64(),
        peak as f64 / 1024.0,
        result["verdict"],
        result["issues"].as_array().map_or(0, Vec::len),
        result["not_shown_to_reviewer"]
            .as_array()
            .map_or(0, Vec::len)
    );
    (wall, peak)
}
