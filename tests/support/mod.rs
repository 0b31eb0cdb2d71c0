//! Helpers shared by the integration tests: git in a test repository, and serving a local fake
//! HTTP service (model APIs, GitHub) on 127.0.0.1.
#![allow(dead_code)] // each test crate uses a part

use std::net::SocketAddr;
use std::path::Path;

/// `git` in `dir` with a fixed identity; fails the test on error.
pub fn git(dir: &Path, args: &[&str]) {
    git_out(dir, args);
}

/// `git` output in `dir` (trimmed); fails the test on error.
pub fn git_out(dir: &Path, args: &[&str]) -> String {
    let o = std::process::Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t.invalid",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// Serves `app` on a free 127.0.0.1 port from a thread with its own runtime.
pub fn serve(app: axum::Router) -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                axum::serve(listener, app).await.unwrap();
            });
    });
    addr
}

/// `qa-loop` in `dir` as a user runs it outside CI: the variables a runner or the caller's
/// shell may set (`GITHUB_ACTIONS`, `GITHUB_BASE_REF`, `QA_LOOP_PROVIDER`) removed, no colours.
pub fn qa_loop(dir: &Path) -> assert_cmd::Command {
    let mut c = assert_cmd::Command::cargo_bin("qa-loop").unwrap();
    c.current_dir(dir)
        .env_remove("QA_LOOP_PROVIDER")
        .env_remove("GITHUB_ACTIONS")
        .env_remove("GITHUB_BASE_REF")
        .env("NO_COLOR", "1");
    c
}

/// `qa-loop <args>` in `dir` (see [`qa_loop`]), its output.
pub fn qa(dir: &Path, args: &[&str]) -> std::process::Output {
    qa_loop(dir).args(args).output().unwrap()
}

/// The arguments of `qa-loop run` replaying the model answers in the project's `session.json`.
pub const REPLAY_RUN: [&str; 5] = [
    "run",
    "--provider",
    "replay",
    "--replay-session",
    "session.json",
];

/// `qa-loop run` replaying the model answers in `dir/session.json`, then `extra` arguments.
pub fn replay_cmd(dir: &Path, extra: &[&str]) -> assert_cmd::Command {
    let mut c = qa_loop(dir);
    c.args(REPLAY_RUN)
        .args(extra)
        .timeout(std::time::Duration::from_secs(300));
    c
}

/// [`replay_cmd`]'s output.
pub fn replay_run(dir: &Path, extra: &[&str]) -> std::process::Output {
    replay_cmd(dir, extra).output().unwrap()
}

/// The run's `.qa-loop/qa-result.json` in `dir`.
pub fn qa_result(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join(".qa-loop/qa-result.json")).unwrap())
        .unwrap()
}

/// The gate `name` of the last iteration's verification in a run's result.
pub fn gate_of(result: &serde_json::Value, name: &str) -> serde_json::Value {
    let gates = &result["history"].as_array().unwrap().last().unwrap()["verification"]["gates"];
    gates
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == name)
        .cloned()
        .unwrap_or_else(|| panic!("no gate {name} in {gates:#}"))
}

/// `prism proxy --errors` in front of the fake at `fake`, with GitHub's OpenAPI description, when
/// `QA_LOOP_PRISM` and `QA_LOOP_GITHUB_OPENAPI` are set (as `.ci/run` sets them): a request
/// against the description is answered 422, an answer against it 500. The running prism and its
/// port; `None` when the variables are unset.
pub fn start_prism(fake: &str) -> Option<(std::process::Child, u16)> {
    let (Ok(prism), Ok(spec)) = (
        std::env::var("QA_LOOP_PRISM"),
        std::env::var("QA_LOOP_GITHUB_OPENAPI"),
    ) else {
        return None;
    };
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = std::process::Command::new(prism)
        .args([
            "proxy",
            "-h",
            "127.0.0.1",
            "-p",
            &port.to_string(),
            &spec,
            fake,
            "--errors",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("prism starts");
    let until = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(std::time::Instant::now() < until, "prism did not start");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    Some((child, port))
}

/// Whether `program args` runs; when it does not and `QA_LOOP_REAL_TOOLS` is set (CI, where
/// `.ci/run` installs every tool), the test fails instead of being skipped.
pub fn have_tool(what: &str, program: &str, args: &[&str]) -> bool {
    let ok = std::process::Command::new(program)
        .args(args)
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var_os("QA_LOOP_REAL_TOOLS").is_none(),
            "{what} is not installed (.ci/run installs it)"
        );
        eprintln!("skipped: {what} is not installed");
    }
    ok
}

/// [`have_tool`] for pytest (`python3 -m pytest`).
pub fn have_pytest() -> bool {
    have_tool("pytest", "python3", &["-m", "pytest", "--version"])
}

/// `git init` in `dir` and one commit of everything there.
pub fn commit_all(dir: &Path) {
    git(dir, &["init", "-q"]);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "init"]);
}
