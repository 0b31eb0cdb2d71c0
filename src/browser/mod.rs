//! Browser verification (SPEC §12): the app started (or already running), then every page of
//! `browser_verification.pages` loaded in a headless browser through an MCP server (npm
//! `@playwright/mcp`, docs/browser-verification.md): whether it renders, its console errors and
//! failed requests, a screenshot and the page snapshot. `renders` and `no-console-errors` are
//! decided here; free-text checks go to the reviewer as criteria with the snapshot (the gate's
//! excerpt) and the screenshot. Each page is a gate `browser:<url>` (a JUnit testcase), required
//! when `required` is set.
//!
//! - [`parse`]: the pure reading of the server's answers.

pub mod parse;

pub use parse::SNAPSHOT_BUDGET;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::json;

use crate::config::file::{
    BrowserVerificationConfig, NO_CONSOLE_ERRORS, RENDERS, builtin_check as builtin,
};
use crate::conversations::app::{self, App};
use crate::mcp::{CallResult, Hub};
use crate::model::{Finding, Gate, GateStatus, IssueType, PageCheck, PageResult, Severity};
use crate::verify::process::Launcher;

/// Console errors and failed requests listed per page.
const LISTED: usize = 20;

/// The browser-verification suite of a verification pass.
pub struct BrowserVerification {
    pub config: BrowserVerificationConfig,
    pub hub: Arc<Hub>,
    pub launcher: Launcher,
    pub root: PathBuf,
    /// `<out-dir>/browser`: screenshots, per pass.
    pub out_dir: PathBuf,
    /// The app started for the last pass, left running for the reviewer (who may drive it with
    /// the browser tools) until [`BrowserVerification::release`].
    pub app: Option<App<'static>>,
}

/// What the suite produced.
#[derive(Debug, Default)]
pub struct Outcome {
    pub gates: Vec<Gate>,
    pub pages: Vec<PageResult>,
}

/// Where the app's output goes in pass `pass`.
pub fn log_path(log_dir: &Path, pass: u32) -> PathBuf {
    log_dir.join(format!("pass-{pass}")).join("browser-app.log")
}

impl BrowserVerification {
    fn required(&self) -> bool {
        self.config.required == Some(true)
    }

    /// One `browser` gate saying why no page was verified.
    fn not_run(&self, why: &str) -> Outcome {
        tracing::error!("browser verification: {why}");
        Outcome {
            gates: vec![Gate::new(
                "browser",
                IssueType::E2eTest,
                self.required(),
                GateStatus::Failed,
                crate::text::clip(why.lines().next().unwrap_or_default(), 300),
                why,
            )],
            pages: Vec::new(),
        }
    }

    /// Stops the app of the last pass, if it still runs (before a fix, at the end).
    pub async fn release(&mut self) {
        if let Some(app) = self.app.take() {
            app.stop().await;
        }
    }

    /// Starts the app, verifies every page, and leaves the app running for the review.
    pub async fn run(&mut self, pass: u32, log: Option<PathBuf>) -> Outcome {
        self.release().await;
        let server = self.config.server();
        if let Some(why) = self.hub.unavailable(server) {
            return self.not_run(&format!("no page was verified: {why}"));
        }
        let cancel = self.launcher.cancel().clone();
        let mut app = match &self.config.start {
            Some(cmd) => App::spawn(&self.launcher, cmd.clone(), self.root.clone(), log),
            None => App::none(),
        };
        let cfg = &self.config;
        let timeout = cfg
            .ready_timeout
            .map_or(crate::conversations::DEFAULT_READY_TIMEOUT, |d| d.0);
        let probe = async {
            match &cfg.ready_url {
                Some(url) => tokio::select! {
                    reason = cancel.cancelled() => Err(format!("qa-loop was stopped by {reason}")),
                    r = app::probe_url(url, timeout) => r,
                },
                None => Ok(()),
            }
        };
        let not_ready = match app.during(probe).await {
            Ok(Ok(())) => None,
            Ok(Err(why)) => Some(format!("the app is not ready: {why}")),
            Err(app::Exited(why)) => Some(format!("the app exited before it was ready: {why}")),
        };
        if let Some(why) = not_ready {
            app.stop().await;
            return self.not_run(&format!("no page was verified: {why}"));
        }
        let mut out = Outcome::default();
        for (i, page) in cfg.pages.iter().enumerate() {
            if let Some(reason) = cancel.reason() {
                out.gates.push(self.page_gate_unrun(
                    &page.url,
                    &format!("not run: qa-loop was stopped by {reason}"),
                ));
                continue;
            }
            let url = match cfg.page_url(&page.url) {
                Ok(u) => u,
                Err(e) => {
                    out.gates.push(self.page_gate_unrun(&page.url, &e));
                    continue;
                }
            };
            tracing::info!(%url, "browser verification");
            let checked = app.during(self.page(pass, i + 1, &url, &page.checks)).await;
            match checked {
                Ok((gate, result)) => {
                    out.gates.push(gate);
                    out.pages.push(result);
                }
                Err(app::Exited(why)) => {
                    out.gates
                        .push(self.page_gate_unrun(&url, &format!("the app exited: {why}")));
                }
            }
        }
        if app.exit().is_none() {
            self.app = Some(app);
        }
        out
    }

    fn page_gate_unrun(&self, url: &str, why: &str) -> Gate {
        Gate::new(
            format!("browser:{url}"),
            IssueType::E2eTest,
            self.required(),
            GateStatus::Failed,
            crate::text::clip(why.lines().next().unwrap_or_default(), 300),
            why,
        )
    }

    /// Loads one page and applies its checks.
    async fn page(&self, pass: u32, n: usize, url: &str, checks: &[String]) -> (Gate, PageResult) {
        let seen = self.observe(pass, n, url).await;
        let wanted: Vec<String> = if checks.is_empty() {
            vec![RENDERS.into(), NO_CONSOLE_ERRORS.into()]
        } else {
            checks.to_vec()
        };
        let (results, findings) = apply_checks(url, &wanted, &seen);
        let passed = results.iter().all(|r| r.passed != Some(false));
        let summary = page_summary(passed, &results, &findings);
        let excerpt = page_excerpt(&seen, &results, passed);
        let gate = Gate {
            name: format!("browser:{url}"),
            issue_type: IssueType::E2eTest,
            required: self.required(),
            status: if passed {
                GateStatus::Passed
            } else {
                GateStatus::Failed
            },
            summary: crate::text::clip(&summary, 300),
            excerpt,
            findings,
        };
        let result = PageResult {
            url: url.to_string(),
            passed,
            checks: results,
            screenshot: seen.screenshot,
            console_errors: seen.console_errors,
            failed_requests: seen.failed_requests,
        };
        (gate, result)
    }

    /// Calls one of the browser server's tools.
    async fn call(&self, tool: &'static str, args: serde_json::Value) -> CallResult {
        self.hub.call_tool(self.config.server(), tool, &args).await
    }

    /// Navigates to the page and reads it: whether it rendered, its console errors and failed
    /// requests, a screenshot (kept as page `n` of pass `pass`) and its snapshot.
    async fn observe(&self, pass: u32, n: usize, url: &str) -> Observed {
        let not_rendered = self.navigate(url).await;
        let console = self
            .call("browser_console_messages", json!({ "level": "error" }))
            .await;
        let console_errors = if console.is_error {
            Vec::new()
        } else {
            parse::console_errors(&console.text)
        };
        let network = self
            .call("browser_network_requests", json!({ "static": false }))
            .await;
        let failed_requests = if network.is_error {
            Vec::new()
        } else {
            parse::failed_requests(&network.text)
        };
        let shot = self
            .call(
                "browser_take_screenshot",
                json!({ "type": "png", "scale": "css" }),
            )
            .await;
        let screenshot = shot
            .images
            .first()
            .and_then(|p| self.keep_screenshot(p, pass, n));
        let snapshot = self.call("browser_snapshot", json!({})).await;
        let snapshot_text = if snapshot.is_error {
            format!("(no snapshot: {})", parse::error_line(&snapshot.text))
        } else {
            parse::snapshot(&snapshot.text)
        };
        Observed {
            not_rendered,
            console_errors,
            failed_requests,
            screenshot,
            snapshot_text,
        }
    }

    /// Opens the page; why it did not render (a navigation error, an HTTP error status, a
    /// blank page), if it did not.
    async fn navigate(&self, url: &str) -> Option<String> {
        let nav = self.call("browser_navigate", json!({ "url": url })).await;
        let not_rendered = if nav.is_error {
            Some(parse::error_line(&nav.text))
        } else {
            parse::http_status(&nav.text)
                .filter(|(code, _)| *code >= 400)
                .map(|(code, text)| format!("HTTP {code} {text}").trim_end().to_string())
        };
        if not_rendered.is_some() {
            return not_rendered;
        }
        let shown = self
            .call(
                "browser_evaluate",
                json!({ "function": "() => ({ text: document.body ? document.body.innerText.trim().length : 0, elements: document.body ? document.body.querySelectorAll('*').length : 0 })" }),
            )
            .await;
        match parse::result_json(&shown.text) {
            Some(v) if v["text"].as_u64() == Some(0) && v["elements"].as_u64() == Some(0) => {
                Some("the page is blank (no text, no elements)".into())
            }
            _ => None,
        }
    }

    /// Moves a screenshot the hub saved to `<out>/browser/pass-<p>/page-<n>.png`.
    fn keep_screenshot(&self, saved: &str, pass: u32, n: usize) -> Option<String> {
        let from = self.root.join(saved);
        let ext = Path::new(saved)
            .extension()
            .and_then(|e| e.to_str())
            .unwrap_or("png");
        let dir = self.out_dir.join(format!("pass-{pass}"));
        let to = dir.join(format!("page-{n}.{ext}"));
        let moved = std::fs::create_dir_all(&dir).and_then(|_| std::fs::rename(&from, &to));
        match moved {
            Ok(()) => Some(
                to.strip_prefix(&self.root)
                    .unwrap_or(&to)
                    .display()
                    .to_string(),
            ),
            Err(e) => {
                tracing::warn!("cannot keep the screenshot {saved}: {e}");
                Some(saved.to_string())
            }
        }
    }
}

fn list(out: &mut String, what: &str, items: &[String]) {
    if items.is_empty() {
        return;
    }
    out.push_str(&format!("{what} ({}):\n", items.len()));
    for i in items.iter().take(LISTED) {
        out.push_str(&format!("- {}\n", crate::text::clip(i, 300)));
    }
    if items.len() > LISTED {
        out.push_str(&format!("- … and {} more\n", items.len() - LISTED));
    }
}

/// What was read of one loaded page.
struct Observed {
    /// Why the page did not render, if it did not.
    not_rendered: Option<String>,
    console_errors: Vec<String>,
    failed_requests: Vec<String>,
    /// Where the screenshot was kept.
    screenshot: Option<String>,
    /// The accessibility tree, or why there is none.
    snapshot_text: String,
}

/// Each wanted check's result on the page, and a finding per failed check.
fn apply_checks(url: &str, wanted: &[String], seen: &Observed) -> (Vec<PageCheck>, Vec<Finding>) {
    let mut results = Vec::new();
    let mut findings = Vec::new();
    for c in wanted {
        let (passed, detail) = check_result(c, seen);
        if passed == Some(false) {
            findings.push(check_failure(url, c, &detail));
        }
        results.push(PageCheck {
            check: c.clone(),
            passed,
            detail,
        });
    }
    (results, findings)
}

/// Whether a check holds (`None`: a free-text check, judged by the reviewer) and why not.
fn check_result(check: &str, seen: &Observed) -> (Option<bool>, String) {
    let console_errors = &seen.console_errors;
    match builtin(check) {
        Some(RENDERS) => match &seen.not_rendered {
            Some(why) => (Some(false), why.clone()),
            None => (Some(true), String::new()),
        },
        Some(_) => {
            if console_errors.is_empty() {
                (Some(true), String::new())
            } else {
                (
                    Some(false),
                    format!(
                        "{} console error{}: {}",
                        console_errors.len(),
                        if console_errors.len() == 1 { "" } else { "s" },
                        crate::text::clip(&console_errors[0], 200)
                    ),
                )
            }
        }
        None => (None, "judged by the reviewer".into()),
    }
}

/// The finding of a built-in check that failed on the page.
fn check_failure(url: &str, check: &str, detail: &str) -> Finding {
    Finding {
        kind: IssueType::E2eTest,
        severity: Severity::High,
        title: format!(
            "{url} fails `{}`: {}",
            builtin(check).unwrap_or(check),
            crate::text::clip(detail, 200)
        ),
        file: None,
        line: None,
        detail: detail.to_string(),
        fix: match builtin(check) {
            Some(RENDERS) => {
                "Make the page load with a non-error status and show its content.".into()
            }
            _ => "Fix what logs the console errors (or handle the failure in the page).".into(),
        },
    }
}

/// The page gate's summary: the decided checks that hold, or the failures' titles.
fn page_summary(passed: bool, results: &[PageCheck], findings: &[Finding]) -> String {
    if passed {
        let decided: Vec<&str> = results
            .iter()
            .filter(|r| r.passed == Some(true))
            .map(|r| r.check.as_str())
            .collect();
        format!(
            "{} hold{}",
            decided.join(", "),
            if decided.len() == 1 { "s" } else { "" }
        )
    } else {
        findings
            .iter()
            .map(|f| f.title.clone())
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// The page gate's excerpt: what went wrong, the screenshot, and the page snapshot when the
/// reviewer judges a check or a check failed.
fn page_excerpt(seen: &Observed, results: &[PageCheck], passed: bool) -> String {
    let mut excerpt = String::new();
    if let Some(why) = &seen.not_rendered {
        excerpt.push_str(&format!("Not rendered: {why}\n"));
    }
    list(&mut excerpt, "Console errors", &seen.console_errors);
    list(&mut excerpt, "Failed requests", &seen.failed_requests);
    if let Some(s) = &seen.screenshot {
        excerpt.push_str(&format!("Screenshot: {s}\n"));
    }
    if results.iter().any(|r| r.passed.is_none()) || !passed {
        excerpt.push_str(&format!(
            "Page snapshot (accessibility tree):\n{}\n",
            seen.snapshot_text
        ));
    }
    excerpt
}
