//! What the sandbox adds per command (issue 35: at most 20 ms; results in BENCHMARKS.md).
//!
//! `cargo bench --bench sandbox [-- N]` runs `true` N times (default 200) through qa-loop's
//! launcher unsandboxed, then in each way of making the sandbox that works on this machine
//! (as root; through sudo and with user namespaces when run as a user that has them), and prints
//! the median and 95th percentile wall time per command of each.
//!
//! The bench binary is its own sandbox helper (`__sandbox-exec` re-executes this binary).

use std::path::Path;
use std::time::{Duration, Instant};

use qa_loop::cancel::Cancel;
use qa_loop::env_vars::EnvPolicy;
use qa_loop::sandbox::{Plan, Sandbox};
use qa_loop::verify::process::{Job, Launcher};

fn main() {
    qa_loop::sandbox::helper::run_if_helper();
    let n: usize = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with("--"))
        .map_or(200, |a| a.parse().expect("a count"));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".git")).unwrap();
    let plan = Plan {
        network: true,
        masks: qa_loop::sandbox::DAEMON_SOCKETS
            .iter()
            .map(Into::into)
            .collect(),
        read_only: vec![dir.path().join(".git")],
    };
    let base = Launcher::new(&EnvPolicy::default(), Cancel::new());
    let sandbox = Sandbox::detect(plan);
    println!("machine: {}", sandbox.describe());
    let plain = measure(&rt, &base, dir.path(), n);
    report("unsandboxed", &plain);
    if sandbox.kind().is_some() {
        let confined = measure(&rt, &base.with_sandbox(sandbox), dir.path(), n);
        report("sandboxed", &confined);
        println!(
            "added per command: median {:.2} ms, p95 {:.2} ms",
            ms(confined[n / 2]) - ms(plain[n / 2]),
            ms(confined[n * 95 / 100]) - ms(plain[n * 95 / 100])
        );
    }
}

fn measure(
    rt: &tokio::runtime::Runtime,
    launcher: &Launcher,
    cwd: &Path,
    n: usize,
) -> Vec<Duration> {
    let mut times: Vec<Duration> = (0..n)
        .map(|_| {
            let t = Instant::now();
            let done = rt.block_on(launcher.run(Job {
                command: "true",
                cwd,
                timeout: Duration::from_secs(30),
                head: 1024,
                tail: 1024,
                log: None,
            }));
            assert!(done.outcome.passed(), "{:?}: {}", done.outcome, done.output);
            t.elapsed()
        })
        .collect();
    times.sort();
    times
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn report(name: &str, times: &[Duration]) {
    let n = times.len();
    println!(
        "{name:12} n={n} median {:.2} ms, p95 {:.2} ms",
        ms(times[n / 2]),
        ms(times[n * 95 / 100])
    );
}
