//! Notifications (SPEC §11) end to end: the real binary runs reject → fix → approve and notifies
//! local fakes speaking each target's protocol — Linear's GraphQL endpoint, a Slack incoming
//! webhook and the Web API, Telegram's Bot API, a generic webhook. The Linear requests are
//! recorded (`target/tmp/linear-requests.json`) for `scripts/validate-linear.py`, which `.ci/run`
//! uses to validate them against Linear's published schema with graphql-core.

mod support;
use std::path::Path;
use std::process::Output;
use std::sync::{Arc, Mutex};
use support::*;

use assert_cmd::Command;
use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

const LINEAR_KEY: &str = "lin_api_canary_0123456789";
const SLACK_HOOK_SECRET: &str = "T000/B000/canaryhooksecret";
const TELEGRAM_TOKEN: &str = "123456:canary-telegram-token";
const WEBHOOK_SECRET: &str = "canary-webhook-secret";

/// One request a fake got.
#[derive(Clone, Debug)]
struct Got {
    path: String,
    headers: HeaderMap,
    body: String,
}

#[derive(Default)]
struct Fakes {
    got: Vec<Got>,
    /// Answers to give before the normal one, per path prefix: (status, body).
    faults: Vec<(String, u16, String)>,
}

type Shared = Arc<Mutex<Fakes>>;

async fn handle(
    State(state): State<Shared>,
    UrlPath(path): UrlPath<String>,
    headers: HeaderMap,
    body: String,
) -> Response {
    let path = format!("/{path}");
    let mut s = state.lock().unwrap();
    if let Some(i) = s
        .faults
        .iter()
        .position(|(p, _, _)| path.starts_with(p.as_str()))
    {
        let (_, status, text) = s.faults.remove(i);
        let mut r = (StatusCode::from_u16(status).unwrap(), text).into_response();
        if status == 429 {
            r.headers_mut().insert("retry-after", "1".parse().unwrap());
        }
        return r;
    }
    s.got.push(Got {
        path: path.clone(),
        headers,
        body: body.clone(),
    });
    let json = |v: Value| axum::Json(v).into_response();
    if path == "/linear/graphql" {
        let req: Value = serde_json::from_str(&body).unwrap();
        return match req["operationName"].as_str() {
            Some("QaLoopIssue") => json(json!({"data": {"issue": {
                "id": "9cfb4a3e-issue", "identifier": "ENG-123",
                "url": "https://linear.app/acme/issue/ENG-123",
                "team": {"states": {"nodes": [
                    {"id": "state-todo", "name": "Todo"},
                    {"id": "state-done", "name": "Done"},
                    {"id": "state-blocked", "name": "Blocked"}]}}}}})),
            Some("QaLoopComment") => json(json!({"data": {"commentCreate": {"success": true}}})),
            Some("QaLoopMoveIssue") => json(json!({"data": {"issueUpdate": {"success": true}}})),
            _ => json(json!({"errors": [{"message": "unknown operation"}]})),
        };
    }
    if path.starts_with("/slack/api/chat.postMessage") {
        return json(json!({"ok": true, "channel": "C1", "ts": "1700000000.000100"}));
    }
    if path.starts_with("/telegram/") {
        return json(json!({"ok": true, "result": {"message_id": 1}}));
    }
    "ok".into_response()
}

fn fakes() -> (String, Shared) {
    let state: Shared = Arc::default();
    let app = axum::Router::new()
        .route("/{*path}", axum::routing::post(handle))
        .with_state(state.clone());
    (format!("http://{}", serve(app)), state)
}

fn got(state: &Shared, prefix: &str) -> Vec<Got> {
    state
        .lock()
        .unwrap()
        .got
        .iter()
        .filter(|g| g.path.starts_with(prefix))
        .cloned()
        .collect()
}

/// A project on branch `alice/eng-123-slugify` whose first review rejects (with text that needs
/// escaping), the fixer fixes, and the second review approves.
fn project(dir: &Path, notify: Value) {
    std::fs::write(
        dir.join("slug.py"),
        "def slug(s):\n    return s.replace(' ', '_')\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("test_slug.py"),
        "from slug import slug\n\ndef test_slug():\n    assert slug('a b') == 'a-b'\n",
    )
    .unwrap();
    let config = json!({"risk_level": "trivial", "notify": notify});
    std::fs::write(dir.join("qa-loop.json"), config.to_string()).unwrap();
    std::fs::write(dir.join(".gitignore"), ".qa-loop/\nsession.json\n").unwrap();
    git(dir, &["init", "-q", "-b", "alice/eng-123-slugify"]);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "init"]);
    let session = json!({"calls": [
        {"role": "reviewer", "tool_calls": [{"id": "v1", "name": "submit_verdict", "arguments": {
            "status": "rejected", "score": 40, "confidence": 0.9,
            "summary": "slug() joins with <underscores> & @team must see it",
            "criteria": [], "issues": [{"id": "Q1", "title": "slug uses _ not - for <spaces>",
            "type": "unit_test", "severity": "high", "file": "slug.py", "line": 2, "fix": "use -"}]}}]},
        {"role": "fixer", "tool_calls": [{"id": "e1", "name": "edit_file",
            "arguments": {"path": "slug.py", "old": "'_'", "new": "'-'"}}]},
        {"role": "fixer", "tool_calls": [{"id": "f1", "name": "finish", "arguments": {"summary": "Q1: hyphens"}}]},
        {"role": "reviewer", "tool_calls": [{"id": "v2", "name": "submit_verdict", "arguments": {
            "status": "approved", "score": 93, "confidence": 0.9, "summary": "slugs use hyphens",
            "criteria": [], "issues": []}}]}
    ]});
    std::fs::write(dir.join("session.json"), session.to_string()).unwrap();
}

fn run(dir: &Path) -> Output {
    replay_cmd(dir, &[])
        .env("LINEAR_API_KEY", LINEAR_KEY)
        .env("SLACK_WEBHOOK_URL", "")
        .env("TELEGRAM_BOT_TOKEN", TELEGRAM_TOKEN)
        .env("QA_LOOP_WEBHOOK_SECRET", WEBHOOK_SECRET)
        .output()
        .unwrap()
}

fn all_targets(base: &str) -> Value {
    json!({
        "linear": {"api_key_env": "LINEAR_API_KEY", "url": format!("{base}/linear/graphql"),
                   "states": {"approved": "Done", "escalated": "Blocked"}},
        "slack": {"webhook_url_env": "QA_TEST_SLACK_HOOK"},
        "telegram": {"bot_token_env": "TELEGRAM_BOT_TOKEN", "chat_id": "-100123",
                     "api_url": format!("{base}/telegram")},
        "webhook": {"url": format!("{base}/hook"), "secret_env": "QA_LOOP_WEBHOOK_SECRET"}
    })
}

/// Every target gets started, rejected and approved, once each, in its own format; the Linear
/// issue is found from the branch and moved to `Done`; the webhook's signature verifies.
#[test]
fn every_target_hears_the_run_in_its_own_protocol() {
    let (base, state) = fakes();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    project(d, all_targets(&base));
    let hook = format!("{base}/slack/hook/{SLACK_HOOK_SECRET}");
    let o = Command::cargo_bin("qa-loop")
        .unwrap()
        .current_dir(d)
        .env_remove("GITHUB_ACTIONS")
        .env_remove("GITHUB_BASE_REF")
        .env("NO_COLOR", "1")
        .env("LINEAR_API_KEY", LINEAR_KEY)
        .env("QA_TEST_SLACK_HOOK", &hook)
        .env("TELEGRAM_BOT_TOKEN", TELEGRAM_TOKEN)
        .env("QA_LOOP_WEBHOOK_SECRET", WEBHOOK_SECRET)
        .args([
            "run",
            "--provider",
            "replay",
            "--replay-session",
            "session.json",
        ])
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    assert!(qa_result(d).get("warnings").is_none(), "{stderr}");

    // Linear: the issue from the branch, a comment per event, then the move to Done.
    let linear = got(&state, "/linear/");
    let ops: Vec<String> = linear
        .iter()
        .map(|g| {
            let v: Value = serde_json::from_str(&g.body).unwrap();
            v["operationName"].as_str().unwrap().to_string()
        })
        .collect();
    assert_eq!(
        ops,
        [
            "QaLoopIssue",
            "QaLoopComment",
            "QaLoopComment",
            "QaLoopComment",
            "QaLoopMoveIssue"
        ]
    );
    for g in &linear {
        assert_eq!(g.headers["authorization"], LINEAR_KEY, "no `Bearer`");
    }
    let bodies: Vec<Value> = linear
        .iter()
        .map(|g| serde_json::from_str(&g.body).unwrap())
        .collect();
    assert_eq!(bodies[0]["variables"], json!({"id": "ENG-123"}));
    let comment = bodies[2]["variables"]["input"]["body"].as_str().unwrap();
    assert_eq!(bodies[2]["variables"]["input"]["issueId"], "9cfb4a3e-issue");
    assert!(
        comment.contains("QA rejected iteration 1: 1 issue"),
        "{comment}"
    );
    assert!(
        comment.contains("slug uses _ not - for &lt;spaces>"),
        "HTML is inert in Linear's markdown: {comment}"
    );
    assert!(
        !comment.contains("@team"),
        "mentions are made inert: {comment}"
    );
    assert_eq!(
        bodies[4]["variables"],
        json!({"id": "9cfb4a3e-issue", "input": {"stateId": "state-done"}})
    );
    // Recorded for scripts/validate-linear.py (Linear's schema, graphql-core).
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    std::fs::write(
        tmp.join("linear-requests.json"),
        Value::Array(bodies.clone()).to_string(),
    )
    .unwrap();

    // Slack: `{text, blocks}`, mrkdwn escaped, within the section limit.
    let slack = got(&state, "/slack/");
    assert_eq!(slack.len(), 3, "{slack:?}");
    let rejected: Value = serde_json::from_str(&slack[1].body).unwrap();
    let section = rejected["blocks"][0]["text"]["text"].as_str().unwrap();
    assert_eq!(rejected["blocks"][0]["text"]["type"], "mrkdwn");
    assert!(section.contains("&lt;underscores&gt; &amp;"), "{section}");
    assert!(section.chars().count() <= 3000);
    assert!(
        rejected["text"]
            .as_str()
            .unwrap()
            .contains("QA rejected iteration 1")
    );

    // Telegram: HTML escaped, within 4 096 characters, the token only in the path.
    let telegram = got(&state, "/telegram/");
    assert_eq!(telegram.len(), 3);
    assert_eq!(
        telegram[0].path,
        format!("/telegram/bot{TELEGRAM_TOKEN}/sendMessage")
    );
    let msg: Value = serde_json::from_str(&telegram[1].body).unwrap();
    assert_eq!(
        (msg["chat_id"].as_str(), msg["parse_mode"].as_str()),
        (Some("-100123"), Some("HTML"))
    );
    let text = msg["text"].as_str().unwrap();
    assert!(
        text.contains("&lt;underscores&gt; &amp;") && text.chars().count() <= 4096,
        "{text}"
    );

    // The webhook: the events in order, each signed with HMAC-SHA256 of its body.
    let hooks = got(&state, "/hook");
    let events: Vec<&str> = hooks
        .iter()
        .map(|g| g.headers["x-qa-loop-event"].to_str().unwrap())
        .collect();
    assert_eq!(events, ["started", "rejected", "approved"]);
    for g in &hooks {
        use hmac::Mac;
        let mut mac =
            hmac::Hmac::<sha2::Sha256>::new_from_slice(WEBHOOK_SECRET.as_bytes()).unwrap();
        mac.update(g.body.as_bytes());
        let want: String = mac
            .finalize()
            .into_bytes()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(
            g.headers["x-qa-loop-signature"],
            format!("sha256={want}").as_str()
        );
        assert!(!g.headers["x-qa-loop-delivery"].is_empty());
    }
    let approved: Value = serde_json::from_str(&hooks[2].body).unwrap();
    assert_eq!(
        (
            approved["event"].as_str(),
            approved["iteration"].as_u64(),
            approved["score"].as_u64()
        ),
        (Some("approved"), Some(2), Some(93))
    );
    assert_eq!(approved["branch"], "alice/eng-123-slugify");

    // No secret of the targets reaches the report files.
    for f in ["qa_report.md", "qa-result.json"] {
        let text = std::fs::read_to_string(d.join(".qa-loop").join(f)).unwrap();
        for s in [
            LINEAR_KEY,
            SLACK_HOOK_SECRET,
            TELEGRAM_TOKEN,
            WEBHOOK_SECRET,
        ] {
            assert!(!text.contains(s), "{f} holds a secret");
        }
    }
}

/// A target that fails is a warning in the report (and the exit code stays); a rate limit is
/// waited out and the message sent once; a target whose secret is not set is left out; the
/// event filter holds.
#[test]
fn failures_are_warnings_rate_limits_are_retried_and_nothing_is_sent_twice() {
    let (base, state) = fakes();
    {
        let mut s = state.lock().unwrap();
        s.faults.push((
            "/linear/".into(),
            500,
            "{\"errors\":[{\"message\":\"boom\"}]}".into(),
        ));
        s.faults.push((
            "/telegram/".into(),
            429,
            "{\"ok\":false,\"error_code\":429}".into(),
        ));
        s.faults.push(("/hook".into(), 503, "busy".into()));
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut targets = all_targets(&base);
    targets["events"] = json!(["approved"]);
    project(d, targets);
    let o = run(d);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    let r = qa_result(d);
    let warnings: Vec<&str> = r["warnings"]
        .as_array()
        .unwrap_or_else(|| panic!("no warnings: {stderr}"))
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    assert!(
        warnings
            .iter()
            .any(|w| w.starts_with("notify.slack: `QA_TEST_SLACK_HOOK` is not set")),
        "{warnings:?}"
    );
    assert!(
        warnings
            .iter()
            .any(|w| w.starts_with("notify.linear: HTTP 500")),
        "{warnings:?}"
    );
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    let report = std::fs::read_to_string(d.join(".qa-loop/qa_report.md")).unwrap();
    assert!(
        report.contains("## Warnings") && report.contains("notify.linear: HTTP 500"),
        "{report}"
    );
    // Only `approved` was asked for; 429 and 503 were retried, each message arrived once.
    assert_eq!(got(&state, "/telegram/").len(), 1);
    let hooks = got(&state, "/hook");
    assert_eq!(hooks.len(), 1);
    assert_eq!(hooks[0].headers["x-qa-loop-event"], "approved");
    // A 500 from Linear may have landed: not sent again.
    assert!(got(&state, "/linear/").is_empty());
}

/// A secret written into the config instead of a variable's name is refused with the key.
#[test]
fn a_literal_secret_in_the_config_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    project(
        d,
        json!({"slack": {"webhook_url_env": "https://hooks.slack.com/services/T000/B000/xyz"}}),
    );
    let o = Command::cargo_bin("qa-loop")
        .unwrap()
        .current_dir(d)
        .arg("validate")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("qa-loop.json")
            && err.contains("`slack.webhook_url_env` must name an environment variable"),
        "{err}"
    );
}

/// With a bot token, one message per run and every later event as a reply in its thread.
#[test]
fn slack_with_a_bot_token_threads_the_run() {
    let (base, state) = fakes();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    project(
        d,
        json!({"slack": {"bot_token_env": "TELEGRAM_BOT_TOKEN", "channel": "C1",
                         "api_url": format!("{base}/slack/api")}}),
    );
    let o = run(d);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let posts = got(&state, "/slack/api/chat.postMessage");
    assert_eq!(posts.len(), 3);
    assert_eq!(
        posts[0].headers["authorization"],
        format!("Bearer {TELEGRAM_TOKEN}").as_str()
    );
    let bodies: Vec<Value> = posts
        .iter()
        .map(|p| serde_json::from_str(&p.body).unwrap())
        .collect();
    assert!(bodies[0].get("thread_ts").is_none());
    assert_eq!(bodies[1]["thread_ts"], "1700000000.000100");
    assert_eq!(bodies[2]["thread_ts"], "1700000000.000100");
    assert_eq!(bodies[0]["channel"], "C1");
}
