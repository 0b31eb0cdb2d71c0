//! Browser verification and MCP tools (SPEC §12) end to end, with the real tools: Debian's
//! `chromium` driven by npm `@playwright/mcp` (pinned in `.ci/run`), a small web app served by
//! `python3 -m http.server` as the `start` command, and the reviewer (replayed) calling the
//! Playwright server's tools through qa-loop's MCP client.
//!
//! `.ci/run` installs both and sets `QA_LOOP_PLAYWRIGHT_MCP` (the server's binary) and
//! `QA_LOOP_REAL_TOOLS=1`, which makes a missing tool a failure; elsewhere a missing tool skips
//! its test with a note on stderr.

mod support;
use std::path::{Path, PathBuf};
use std::process::Output;
use support::*;

use assert_cmd::Command;
use serde_json::{Value, json};

const CHROMIUM: &str = "/usr/bin/chromium";

/// The Playwright MCP server's binary and Chromium, or `None` (skip) outside `.ci/run`.
fn tools() -> Option<PathBuf> {
    let bin = std::env::var_os("QA_LOOP_PLAYWRIGHT_MCP")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var("HOME").unwrap_or_default())
                .join(".cache/qa-loop-ci/playwright-mcp/node_modules/.bin/playwright-mcp")
        });
    let ok = bin.is_file() && Path::new(CHROMIUM).is_file();
    if !ok {
        assert!(
            std::env::var_os("QA_LOOP_REAL_TOOLS").is_none(),
            "@playwright/mcp ({}) or chromium is not installed (.ci/run installs them)",
            bin.display()
        );
        eprintln!("skipped: @playwright/mcp or chromium is not installed");
        return None;
    }
    Some(bin)
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The server entry the docs give: headless, isolated, the system Chromium; no `--output-dir` in
/// the out dir, which the sandbox keeps read-only (qa-loop saves the screenshots there itself).
fn playwright(bin: &Path, extra: &[&str]) -> Value {
    let mut args = vec![
        "--headless",
        "--isolated",
        "--no-sandbox",
        "--executable-path",
        CHROMIUM,
    ];
    args.extend_from_slice(extra);
    json!({ "command": bin, "args": args, "call_timeout": "60s" })
}

/// A project whose web app is `site/` served on `port`.
fn project(dir: &Path, config: &Value, session: &Value) {
    std::fs::create_dir_all(dir.join("site")).unwrap();
    std::fs::write(
        dir.join("site/index.html"),
        "<html><head><title>Home</title><link rel=\"icon\" href=\"data:,\"></head><body><h1>Welcome</h1>\
         <button onclick=\"document.getElementById('out').textContent = 'Saved at last'\">Save</button>\
         <p id=\"out\"></p></body></html>",
    )
    .unwrap();
    std::fs::write(
        dir.join("site/broken.html"),
        "<html><head><title>Broken</title><link rel=\"icon\" href=\"data:,\"></head><body><p>Dashboard</p>\
         <script>console.error('TypeError: widgets is undefined')</script></body></html>",
    )
    .unwrap();
    std::fs::write(dir.join("qa-loop.json"), config.to_string()).unwrap();
    std::fs::write(dir.join("session.json"), session.to_string()).unwrap();
    std::fs::write(dir.join(".gitignore"), ".qa-loop/\nsession.json\n").unwrap();
    git(dir, &["init", "-q"]);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "init"]);
}

fn run(dir: &Path) -> Output {
    replay_run(dir, &["--mode", "review"])
}

fn gates(r: &Value) -> Vec<Value> {
    r["history"][0]["verification"]["gates"]
        .as_array()
        .unwrap()
        .clone()
}

fn verdict(criteria: Value) -> Value {
    json!({"id": "v", "name": "submit_verdict", "arguments": {"status": "approved", "score": 95,
        "confidence": 0.9, "summary": "s", "criteria": criteria, "issues": []}})
}

/// A page that renders passes; one with a console error fails `no-console-errors`; one that
/// does not load fails `renders`; a free-text check becomes a criterion; the reviewer's
/// navigate / click / snapshot calls get the real server's answers.
#[test]
fn pages_are_verified_in_a_real_headless_browser_and_the_reviewer_drives_it() {
    let Some(bin) = tools() else { return };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let config = json!({
        "risk_level": "trivial",
        "browser_verification": {
            "required": true,
            "start": format!("exec python3 -m http.server {port} --bind 127.0.0.1 --directory site"),
            "ready_url": format!("{base}/index.html"),
            "ready_timeout": "30s",
            "pages": [
                {"url": "/index.html", "checks": ["renders", "no-console-errors", "a Save button is shown"]},
                {"url": "/broken.html", "checks": ["renders", "no-console-errors"]},
                {"url": "/missing.html", "checks": ["renders"]}
            ]
        },
        "mcp_servers": { "playwright": playwright(&bin, &[]) }
    });
    let index = format!("{base}/index.html");
    let session = json!({"calls": [
        // The task comes with the screenshot of the page whose free-text check it judges.
        {"role": "reviewer", "expect_images": 1,
         "tool_calls": [{"id": "n", "name": "mcp__playwright__browser_navigate",
            "arguments": {"url": index}}]},
        {"role": "reviewer", "expect_tool_results": ["Page Title: Home"],
         "tool_calls": [{"id": "c", "name": "mcp__playwright__browser_click",
            "arguments": {"element": "Save button", "target": "button"}}]},
        {"role": "reviewer", "tool_calls": [{"id": "s", "name": "mcp__playwright__browser_snapshot",
            "arguments": {}}]},
        {"role": "reviewer", "expect_tool_results": ["Saved at last"], "expect_images": 0,
         "tool_calls": [{"id": "p", "name": "mcp__playwright__browser_take_screenshot",
            "arguments": {"type": "png", "scale": "css"}}]},
        // The screenshot reaches the model as an image, and its file is in the out dir.
        {"role": "reviewer", "expect_tool_results": [".qa-loop/mcp/playwright-"], "expect_images": 1,
         "tool_calls": [verdict(json!([{"criterion": format!("In the browser, {index}: a Save button is shown"), "met": true,
            "evidence": "the snapshot shows it"}]))]}
    ]});
    project(d, &config, &session);
    let o = run(d);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(d.join(".qa-loop/qa-result.json").exists(), "{stderr}");
    let r = qa_result(d);
    assert!(
        r["errors"].as_array().unwrap().is_empty(),
        "{:#}\n{stderr}",
        r["errors"]
    );

    let ok = gate_of(&r, &format!("browser:{base}/index.html"));
    assert_eq!(ok["status"], "passed", "{ok:#}");
    assert_eq!(ok["required"], true);
    // The free-text check reached the reviewer with the page snapshot.
    assert!(
        ok["excerpt"].as_str().unwrap().contains("Welcome"),
        "{ok:#}"
    );

    let broken = gate_of(&r, &format!("browser:{base}/broken.html"));
    assert_eq!(broken["status"], "failed", "{broken:#}");
    let titles: Vec<&str> = broken["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles.len(), 1, "{titles:?}");
    assert!(
        titles[0].contains("no-console-errors") && titles[0].contains("widgets is undefined"),
        "{titles:?}"
    );

    let missing = gate_of(&r, &format!("browser:{base}/missing.html"));
    assert_eq!(missing["status"], "failed", "{missing:#}");
    assert!(
        missing["summary"].as_str().unwrap().contains("HTTP 404"),
        "{missing:#}"
    );

    // The required failing pages reject the change whatever the reviewer said.
    assert_eq!(r["status"], "rejected", "{:#}", r["status"]);
    assert_eq!(o.status.code(), Some(1), "{stderr}");

    // Screenshots are real PNGs in the out dir, linked from the result and the report.
    let pages = r["history"][0]["verification"]["browser"]
        .as_array()
        .unwrap();
    assert_eq!(pages.len(), 3, "{pages:#?}");
    let shot = pages[0]["screenshot"].as_str().unwrap();
    assert_eq!(shot, ".qa-loop/browser/pass-1/page-1.png");
    assert_eq!(&std::fs::read(d.join(shot)).unwrap()[..4], b"\x89PNG");
    let report = std::fs::read_to_string(d.join(".qa-loop/qa_report.md")).unwrap();
    assert!(report.contains("browser/pass-1/page-1.png"), "{report}");

    // The free-text check is an acceptance criterion of the run.
    let criteria = r["criteria"].to_string();
    assert!(criteria.contains("a Save button is shown"), "{criteria}");

    // The server's calls (qa-loop's and the reviewer's) are in the report; it was stopped.
    let servers = r["mcp_servers"].as_array().unwrap();
    assert_eq!(servers[0]["name"], "playwright");
    // Six calls per page (navigate, evaluate, console, network, screenshot, snapshot), one
    // fewer for the page that did not load, and the reviewer's four.
    assert_eq!(servers[0]["calls"], 6 + 6 + 5 + 4, "{servers:#?}");

    // Each page is a JUnit testcase.
    let junit = std::fs::read_to_string(d.join(".qa-loop/qa-loop-junit.xml")).unwrap();
    assert!(
        junit.contains(&format!("browser:{base}/broken.html")),
        "{junit}"
    );
}

/// An Electron-style app (Chromium started with `--remote-debugging-port`) is attached to
/// over CDP instead of launching a browser.
#[test]
fn an_app_with_a_remote_debugging_port_is_attached_over_cdp() {
    let Some(bin) = tools() else { return };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (port, cdp) = (free_port(), free_port());
    let profile = tempfile::tempdir().unwrap();
    struct Kill(std::process::Child);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let _app = Kill(
        std::process::Command::new(CHROMIUM)
            .args([
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                &format!("--remote-debugging-port={cdp}"),
                &format!("--user-data-dir={}", profile.path().display()),
                "about:blank",
            ])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let base = format!("http://127.0.0.1:{port}");
    let server = json!({"command": bin, "args": ["--cdp-endpoint", format!("http://127.0.0.1:{cdp}")],
        "call_timeout": "60s", "startup_timeout": "60s"});
    let config = json!({
        "risk_level": "trivial",
        "browser_verification": {
            "required": true,
            "start": format!("exec python3 -m http.server {port} --bind 127.0.0.1 --directory site"),
            "ready_url": format!("{base}/index.html"),
            "pages": [{"url": "/index.html", "checks": ["renders", "no-console-errors"]}]
        },
        "mcp_servers": { "playwright": server }
    });
    let session = json!({"calls": [{"role": "reviewer", "tool_calls": [verdict(json!([]))]}]});
    project(d, &config, &session);
    // Wait for the debugging port (the server connects at start).
    let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", cdp)).is_err() {
        assert!(
            std::time::Instant::now() < until,
            "chromium did not open its debugging port"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let o = run(d);
    let r = qa_result(d);
    let g = gate_of(&r, &format!("browser:{base}/index.html"));
    assert_eq!(
        g["status"],
        "passed",
        "{g:#}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// A server that crashes at start is reported (state and the browser gate), not waited for;
/// no real tools needed.
#[test]
fn an_mcp_server_that_crashes_at_start_is_reported_not_hung() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let config = json!({
        "risk_level": "trivial",
        "browser_verification": {
            "required": true,
            "pages": [{"url": "http://127.0.0.1:9/", "checks": ["renders"]}]
        },
        "mcp_servers": { "playwright": {
            "command": "python3",
            "args": ["-c", "import sys; sys.stderr.write('Error: no browser found\\n'); sys.exit(3)"]
        }}
    });
    let session = json!({"calls": [{"role": "reviewer", "tool_calls": [verdict(json!([]))]}]});
    project(d, &config, &session);
    let started = std::time::Instant::now();
    let o = run(d);
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
    let r = qa_result(d);
    let state = r["mcp_servers"][0]["state"].as_str().unwrap();
    assert!(
        state.starts_with("failed:") && state.contains("no browser found"),
        "{state}"
    );
    let g = gate_of(&r, "browser");
    assert_eq!(g["status"], "failed");
    assert!(
        g["summary"]
            .as_str()
            .unwrap()
            .contains("the MCP server `playwright` is not running"),
        "{g:#}"
    );
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let report = std::fs::read_to_string(d.join(".qa-loop/qa_report.md")).unwrap();
    assert!(report.contains("## MCP servers"), "{report}");
}

/// Without an MCP server for the browser, the pages are told to the reviewer (and `validate`
/// says why) instead of failing a gate nobody can fix.
#[test]
fn without_a_browser_server_the_pages_go_to_the_reviewer() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let config = json!({
        "risk_level": "trivial",
        "browser_verification": {"required": true, "pages": [{"url": "http://localhost:3000/", "checks": ["renders"]}]}
    });
    let session = json!({"calls": [{"role": "reviewer", "tool_calls": [verdict(json!([]))]}]});
    project(d, &config, &session);
    let o = Command::cargo_bin("qa-loop")
        .unwrap()
        .current_dir(d)
        .args(["validate"])
        .output()
        .unwrap();
    let out = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        out.contains("no MCP server `playwright` is configured"),
        "{out}"
    );
    assert!(
        out.contains("Browser page http://localhost:3000/: renders"),
        "{out}"
    );
    let o = run(d);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let r = qa_result(d);
    assert!(
        gates(&r)
            .iter()
            .all(|g| !g["name"].as_str().unwrap().starts_with("browser"))
    );
}
