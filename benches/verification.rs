//! Benchmarks of the verification layer (results in BENCHMARKS.md):
//!
//! - `capture`: a command printing 1 GiB of log lines, captured by qa-loop's runner (log file +
//!   head/tail + failure lines) beside `cat > /dev/null` on the same data in the same run;
//!   peak RSS of the capturing process.
//! - `junit`: ingestion of a generated 100 000-case JUnit file beside junitparser (Python) on the
//!   same file; time and peak RSS of each.
//!
//! `cargo bench --bench verification` runs both, each in a fresh process so peak RSS is its own.
//! `cargo bench --bench verification -- capture 256` runs one with a size in MiB (capture) or a
//! case count (junit).

use std::process::Command;
use std::time::{Duration, Instant};

use qa_loop::cancel::Cancel;
use qa_loop::env_vars::EnvPolicy;
use qa_loop::verify::junit;
use qa_loop::verify::process::{Job, Launcher};

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    match args.first().map(String::as_str) {
        Some("capture") => capture(args.get(1).map_or(1024, |n| n.parse().expect("MiB"))),
        Some("capture-child") => capture_child(args[1].parse().expect("MiB"), &args[2]),
        Some("junit") => junit_bench(args.get(1).map_or(100_000, |n| n.parse().expect("cases"))),
        Some("junit-child") => junit_child(&args[1]),
        Some("junit-floor") => {
            let text = std::fs::read_to_string(&args[1]).unwrap();
            let t = Instant::now();
            let mut r = quick_xml::Reader::from_str(&text);
            if std::env::var_os("TRIM").is_some() {
                r.config_mut().trim_text(true);
            }
            if std::env::var_os("NOCHECK").is_some() {
                r.config_mut().check_end_names = false;
            }
            let mut n = 0u64;
            loop {
                match r.read_event().unwrap() {
                    quick_xml::events::Event::Eof => break,
                    quick_xml::events::Event::Empty(e) | quick_xml::events::Event::Start(e) => {
                        n += if std::env::var_os("NOATTR").is_some() {
                            e.len() as u64
                        } else {
                            e.attributes().count() as u64
                        }
                    }
                    _ => {}
                }
            }
            println!(
                "events only: {:.4} s ({n} attributes)",
                t.elapsed().as_secs_f64()
            );
            let mut best = f64::MAX;
            let mut n = 0;
            for _ in 0..10 {
                let t = Instant::now();
                let cases = junit::parse(&text).unwrap();
                best = best.min(t.elapsed().as_secs_f64());
                n = cases.len();
            }
            println!("parse: {best:.4} s ({n} cases, best of 10)");
        }
        Some("scan") => scan(args.get(1).map_or(256, |n| n.parse().expect("MiB"))),
        _ => {
            capture(1024);
            junit_bench(100_000);
        }
    }
}

/// Peak resident set size of this process, in MiB (`VmHWM`).
fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

fn producer(mib: u64) -> String {
    // Realistic test-runner output: mostly passing lines, a failure line every ~10 000 lines.
    format!(
        "awk 'BEGIN {{ for (i = 0; ; i++) {{ if (i % 10000 == 9999) print \"FAILED tests/test_cart.py::test_total_\" i \" - AssertionError: assert 3 == 4\"; else print \"tests/test_cart.py::test_line_\" i \" PASSED                                   [ 42%]\" }} }}' | head -c {}",
        mib * 1024 * 1024
    )
}

fn run_child(args: &[&str]) -> String {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(args)
        .output()
        .expect("run the benchmark child");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn timed_shell(cmd: &str) -> Duration {
    let started = Instant::now();
    let ok = Command::new("sh").arg("-c").arg(cmd).status().unwrap();
    assert!(ok.success(), "{cmd}");
    started.elapsed()
}

fn capture(mib: u64) {
    let dir = tempfile::tempdir().unwrap();
    let data = data_path(mib);
    // The same bytes for every contender: generated once, then read from the page cache.
    timed_shell(&format!("{} > {}", producer(mib), data.display()));
    let bytes = std::fs::metadata(&data).unwrap().len() as f64;
    let mb = bytes / 1e6;
    let source = format!("cat {}", data.display());
    let cat = timed_shell(&format!("{source} | cat > /dev/null"));
    let cat_file = dir.path().join("cat.out");
    let cat_to_file = timed_shell(&format!("{source} | cat > {}", cat_file.display()));
    let _ = std::fs::remove_file(&cat_file);
    let log = dir.path().join("capture.log");
    let with_log = run_child(&[
        "capture-child",
        &mib.to_string(),
        &log.display().to_string(),
    ]);
    let no_log = run_child(&["capture-child", &mib.to_string(), "-"]);
    println!("## capture: {:.0} MB of test output ({mib} MiB)", mb);
    println!();
    println!("| contender | time | throughput | peak RSS |");
    println!("|---|---|---|---|");
    println!(
        "| `cat data \\| cat > /dev/null` | {:.2} s | {:.0} MB/s | – |",
        cat.as_secs_f64(),
        mb / cat.as_secs_f64()
    );
    println!(
        "| `cat data \\| cat > file` (same disk as the log) | {:.2} s | {:.0} MB/s | – |",
        cat_to_file.as_secs_f64(),
        mb / cat_to_file.as_secs_f64()
    );
    for (name, line) in [
        ("qa-loop runner, log file on disk", with_log),
        ("qa-loop runner, no log file", no_log),
    ] {
        let parts: Vec<f64> = line
            .split_whitespace()
            .map(|p| p.parse().unwrap())
            .collect();
        let (secs, rss, failures) = (parts[0], parts[1], parts[2]);
        println!(
            "| {name} | {secs:.2} s | {:.0} MB/s ({:.0}% of cat) | {rss:.1} MiB | ",
            mb / secs,
            100.0 * cat.as_secs_f64() / secs
        );
        eprintln!("{name}: {failures} failure lines kept");
    }
    println!();
    let _ = std::fs::remove_file(&data);
}

fn data_path(mib: u64) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("qa-loop-bench-{mib}.txt"))
}

/// Runs `cat data` through the runner and prints `seconds peak_rss_mib failure_lines`.
fn capture_child(mib: u64, log: &str) {
    let dir = tempfile::tempdir().unwrap();
    let data = data_path(mib);
    if std::fs::metadata(&data).map(|m| m.len()).ok() != Some(mib * 1024 * 1024) {
        timed_shell(&format!("{} > {}", producer(mib), data.display()));
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let launcher = Launcher::new(&EnvPolicy::default(), Cancel::new());
    let command = format!("cat {}", data.display());
    let started = Instant::now();
    let done = rt.block_on(launcher.run(Job {
        command: &command,
        cwd: dir.path(),
        timeout: Duration::from_secs(600),
        head: 6 * 1024,
        tail: 10 * 1024,
        log: (log != "-").then(|| log.into()),
    }));
    let secs = started.elapsed().as_secs_f64();
    assert!(done.outcome.passed(), "{:?}", done.outcome);
    assert_eq!(done.bytes, mib * 1024 * 1024);
    println!("{secs} {} {}", peak_rss_mib(), done.failure_lines.len());
}

fn junit_bench(cases: usize) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.xml");
    let mut xml = String::from("<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<testsuites>\n");
    let per_suite = 1000;
    for s in 0..cases.div_ceil(per_suite) {
        xml.push_str(&format!(
            "<testsuite name=\"suite{s}\" tests=\"{per_suite}\" failures=\"10\">\n"
        ));
        for c in 0..per_suite.min(cases - s * per_suite) {
            if c % 100 == 99 {
                xml.push_str(&format!(
                    "<testcase classname=\"tests.test_mod{s}\" name=\"test_case_{c}\" file=\"tests/test_mod{s}.py\" line=\"{c}\" time=\"0.001\"><failure message=\"assert 1 == 2\">def test_case_{c}():\n&gt;       assert 1 == 2\nE       assert 1 == 2\n\ntests/test_mod{s}.py:{c}: AssertionError</failure></testcase>\n"
                ));
            } else {
                xml.push_str(&format!(
                    "<testcase classname=\"tests.test_mod{s}\" name=\"test_case_{c}\" file=\"tests/test_mod{s}.py\" line=\"{c}\" time=\"0.001\"/>\n"
                ));
            }
        }
        xml.push_str("</testsuite>\n");
    }
    xml.push_str("</testsuites>\n");
    std::fs::write(&path, &xml).unwrap();
    if std::env::var_os("KEEP_JUNIT").is_some() {
        std::fs::copy(&path, std::env::temp_dir().join("qa-loop-bench-junit.xml")).unwrap();
    }
    let size_mb = xml.len() as f64 / 1e6;
    drop(xml);
    // Each side runs in 5 fresh processes (medians shown; this VM's timings vary by ±50% from
    // run to run). In each process: the first parse (cold: the process's memory is touched for
    // the first time), then the best of 5 more (steady state), then the peak RSS.
    let runs: Vec<Vec<f64>> = (0..5)
        .map(|_| {
            run_child(&["junit-child", &path.display().to_string()])
                .split_whitespace()
                .map(|p| p.parse().unwrap())
                .collect()
        })
        .collect();
    let ours = medians(&runs);
    assert_eq!(ours[3] as usize, cases);
    // The same work on both sides: every case becomes a record with its suite, class, name,
    // file, line, time and status (plus message and text for failures).
    let py = r#"
import resource, sys, time
from junitparser import JUnitXml, Failure, Error, Skipped
def ingest(path):
    xml = JUnitXml.fromfile(path)
    records = []
    for suite in xml:
        for case in suite:
            rec = {"suite": suite.name, "classname": case.classname, "name": case.name,
                   "file": case._elem.get("file"), "line": case._elem.get("line"),
                   "time": case.time, "status": "passed"}
            for r in case.result:
                if isinstance(r, (Failure, Error)):
                    rec["status"] = "failed" if isinstance(r, Failure) else "errored"
                    rec["message"] = r.message
                    rec["detail"] = r.text
                elif isinstance(r, Skipped):
                    rec["status"] = "skipped"
            records.append(rec)
    return records
times = []
for _ in range(6):
    t = time.perf_counter()
    records = ingest(sys.argv[1])
    times.append(time.perf_counter() - t)
    if len(times) == 1:
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        failed = sum(1 for r in records if r["status"] == "failed")
        count = len(records)
    del records
print(times[0], min(times[1:]), rss, count, failed)
"#;
    let mut py_runs = Vec::new();
    let mut out = None;
    for _ in 0..5 {
        let o = Command::new("python3")
            .args(["-c", py, &path.display().to_string()])
            .output()
            .expect("python3");
        if o.status.success() {
            py_runs.push(
                String::from_utf8_lossy(&o.stdout)
                    .split_whitespace()
                    .map(|p| p.parse::<f64>().unwrap())
                    .collect::<Vec<f64>>(),
            );
        }
        out = Some(o);
    }
    let out = out.unwrap();
    println!(
        "## JUnit ingestion: {cases} test cases, {size_mb:.1} MB (medians of 5 processes each)"
    );
    println!();
    println!(
        "| parser | first parse in a fresh process | steady state (best of 5 more) | peak RSS | cases | failed |"
    );
    println!("|---|---|---|---|---|---|");
    let row = |name: &str, p: &[f64]| {
        println!(
            "| {name} | {:.3} s | {:.3} s | {:.1} MiB | {} | {} |",
            p[0], p[1], p[2], p[3], p[4]
        )
    };
    row(
        "qa-loop (`verify::junit::parse`, file read included)",
        &ours,
    );
    if out.status.success() {
        let p = medians(&py_runs);
        let version = |code: &str| {
            Command::new("python3")
                .args(["-c", code])
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
                .unwrap_or_default()
        };
        row(
            &format!(
                "junitparser {} (Python {})",
                version("import junitparser; print(junitparser.version)"),
                version("import platform; print(platform.python_version())")
            ),
            &p,
        );
        println!();
        println!(
            "qa-loop is {:.1}× faster than junitparser in steady state, {:.1}× on the first parse of a fresh process; peak RSS {:.0}% of junitparser's.",
            p[1] / ours[1],
            p[0] / ours[0],
            100.0 * ours[2] / p[2]
        );
    } else {
        println!(
            "| junitparser | not installed (`pip install junitparser`) | | | | |\n\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    println!();
}

/// The median of each figure across runs.
fn medians(runs: &[Vec<f64>]) -> Vec<f64> {
    (0..runs[0].len())
        .map(|i| {
            let mut v: Vec<f64> = runs.iter().map(|r| r[i]).collect();
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        })
        .collect()
}

/// Parses the file once cold, then 5 more times, and prints
/// `first_seconds best_seconds peak_rss_mib cases failed` (RSS after the first parse).
fn junit_child(path: &str) {
    let ingest = || {
        let started = Instant::now();
        let text = std::fs::read_to_string(path).unwrap();
        let cases = junit::parse(&text).unwrap();
        (started.elapsed().as_secs_f64(), cases)
    };
    let (first, cases) = ingest();
    let rss = peak_rss_mib();
    let failed = cases
        .iter()
        .filter(|c| c.status == junit::CaseStatus::Failed)
        .count();
    let count = cases.len();
    drop(cases);
    let best = (0..5).map(|_| ingest().0).fold(f64::MAX, f64::min);
    println!("{first} {best} {rss} {count} {failed}");
}

/// In-memory cost of each capture component on the same data (no process, no pipe).
fn scan(mib: u64) {
    let data = data_path(mib);
    timed_shell(&format!("{} > {}", producer(mib), data.display()));
    let bytes = std::fs::read(&data).unwrap();
    let mb = bytes.len() as f64 / 1e6;
    let t = Instant::now();
    let mut f = qa_loop::verify::capture::FailureLines::default();
    for c in bytes.chunks(64 * 1024) {
        f.push(c);
    }
    println!("failure lines: {:.0} MB/s", mb / t.elapsed().as_secs_f64());
    let t = Instant::now();
    let mut h = qa_loop::verify::capture::HeadTail::new(6 * 1024, 10 * 1024);
    for c in bytes.chunks(64 * 1024) {
        h.push(c);
    }
    println!("head/tail: {:.0} MB/s", mb / t.elapsed().as_secs_f64());
    let _ = std::fs::remove_file(&data);
}
