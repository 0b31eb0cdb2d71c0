//! Conversation scenarios (SPEC §8) end to end: the real binary drives a scripted local chat agent
//! (an HTTP server in the test, or a real process started by `start`) while a local fake model
//! speaking the OpenAI Chat Completions wire format plays the judge (answers taken from a script)
//! and the reviewer (always approves, so the gates decide).

mod support;
use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::path::Path;
use std::process::Output;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::*;

use assert_cmd::Command;
use axum::Json;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

const CONTEXT: &str = "CTX-7f3a: the user owns exactly the repositories foo and bar";

// ---------------------------------------------------------------- the judge (and reviewer)

#[derive(Default)]
struct ModelState {
    judge: VecDeque<Value>,
    judge_requests: Vec<Value>,
    reviewer_calls: u32,
}

/// A fake OpenAI Chat Completions server: requests with tools are the reviewer's (approved at
/// once), requests without are the judge's (answered from the script, in order).
struct Model {
    addr: SocketAddr,
    state: Arc<Mutex<ModelState>>,
}

impl Model {
    fn start(judge: Vec<Value>) -> Model {
        let state = Arc::new(Mutex::new(ModelState {
            judge: judge.into(),
            ..ModelState::default()
        }));
        let addr = serve(
            axum::Router::new()
                .route("/v1/chat/completions", axum::routing::post(model))
                .with_state(state.clone()),
        );
        Model { addr, state }
    }

    /// The user messages the judge was sent.
    fn judge_tasks(&self) -> Vec<String> {
        self.state
            .lock()
            .unwrap()
            .judge_requests
            .iter()
            .map(|r| {
                r["messages"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|m| m["role"] == "user")
                    .map(|m| m["content"].as_str().unwrap_or_default().to_string())
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .collect()
    }

    fn judge_left(&self) -> usize {
        self.state.lock().unwrap().judge.len()
    }
}

fn judged(verdict: &str, reasoning: &str, follow_up: &str) -> Value {
    json!({"verdict": verdict, "confidence": 0.9, "reasoning": reasoning, "follow_up": follow_up})
}

/// A judge answer that never comes (the request hangs for a minute).
const HANG: &str = "HANG";

async fn model(State(state): State<Arc<Mutex<ModelState>>>, Json(body): Json<Value>) -> Response {
    let reviewer = body["tools"].as_array().is_some_and(|t| !t.is_empty());
    let hang = {
        let mut s = state.lock().unwrap();
        let hang = !reviewer && s.judge.front() == Some(&json!(HANG));
        if hang {
            s.judge.pop_front();
            s.judge_requests.push(body.clone());
        }
        hang
    };
    if hang {
        tokio::time::sleep(Duration::from_secs(60)).await;
    }
    let mut s = state.lock().unwrap();
    let message = if reviewer {
        s.reviewer_calls += 1;
        json!({"role": "assistant", "content": null, "tool_calls": [{
            "id": format!("call_{}", s.reviewer_calls), "type": "function",
            "function": {"name": "submit_verdict", "arguments": json!({
                "status": "approved", "score": 90, "confidence": 0.9,
                "summary": "the code looks right", "criteria": [], "issues": []}).to_string()}}]})
    } else {
        s.judge_requests.push(body.clone());
        match s.judge.pop_front() {
            // A string is sent as written (an unreadable answer); an object as its JSON.
            Some(Value::String(raw)) => json!({"role": "assistant", "content": raw}),
            Some(answer) => json!({"role": "assistant", "content": answer.to_string()}),
            None => {
                return (
                    axum::http::StatusCode::BAD_REQUEST,
                    Json(
                        json!({"error": {"message": "the judge script has no answer left",
                                "type": "invalid_request_error", "param": null, "code": null}}),
                    ),
                )
                    .into_response();
            }
        }
    };
    Json(json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1_763_700_000,
        "model": "gpt-4.1-2025-04-14",
        "choices": [{"index": 0, "message": message, "logprobs": null,
                     "finish_reason": if reviewer { "tool_calls" } else { "stop" }}],
        "usage": {"prompt_tokens": 500, "completion_tokens": 50, "total_tokens": 550}
    }))
    .into_response()
}

// ---------------------------------------------------------------- the agent under test

#[derive(Default)]
struct AgentState {
    /// Every request body the agent received.
    bodies: Vec<String>,
    /// Every `X-Session-Id` header.
    sessions: Vec<String>,
    /// Template mode: user messages per session.
    by_session: HashMap<String, Vec<String>>,
}

/// A scripted chat agent: its reply depends on the conversation's first user message and on how
/// many user messages it has seen.
struct Agent {
    addr: SocketAddr,
    state: Arc<Mutex<AgentState>>,
}

impl Agent {
    fn start() -> Agent {
        let state = Arc::new(Mutex::new(AgentState::default()));
        let addr = serve(
            axum::Router::new()
                .route("/health", axum::routing::get(|| async { "ok" }))
                .route("/v1/chat/completions", axum::routing::post(chat))
                .route("/chat", axum::routing::post(templated))
                .with_state(state.clone()),
        );
        Agent { addr, state }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn bodies(&self) -> Vec<String> {
        self.state.lock().unwrap().bodies.clone()
    }
}

/// The script: (first message, user messages so far) → reply.
fn script(first: &str, seen: &[String]) -> String {
    let last = seen.last().map(String::as_str).unwrap_or_default();
    match (first, seen.len()) {
        ("List my repositories", _) => "You own two repositories: foo and bar.".into(),
        ("Which of my repositories are public?", 1) => "Which account do you mean?".into(),
        ("Which of my repositories are public?", _) => {
            format!("For the account you named ({last}): foo and bar are public.")
        }
        ("How many repositories do I have?", _) => {
            "You have three repositories: foo, bar and baz.".into()
        }
        ("Delete the repository foo", 1) => {
            "APPROVAL REQUIRED: delete foo for good? (yes/no)".into()
        }
        ("Delete the repository foo", _) if last.starts_with("Approved") => "Deleted foo.".into(),
        ("Delete the repository foo", _) => "OK, foo was not deleted.".into(),
        ("Summarise my week", n) => format!("Still thinking ({n})…"),
        (other, _) => format!("I do not understand: {other}"),
    }
}

async fn chat(
    State(state): State<Arc<Mutex<AgentState>>>,
    headers: HeaderMap,
    body: String,
) -> Response {
    let v: Value = serde_json::from_str(&body).unwrap();
    let users: Vec<String> = v["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap().to_string())
        .collect();
    {
        let mut s = state.lock().unwrap();
        s.bodies.push(body.clone());
        if let Some(id) = headers.get("x-session-id") {
            s.sessions.push(id.to_str().unwrap().to_string());
        }
    }
    if users[0] == "Think very hard" {
        // A stuck agent: answers long after any scenario's limit.
        tokio::time::sleep(Duration::from_secs(60)).await;
    }
    let reply = script(&users[0], &users);
    Json(json!({
        "id": "chatcmpl-agent", "object": "chat.completion", "created": 1_763_700_000, "model": "my-agent",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": reply}, "finish_reason": "stop"}]
    }))
    .into_response()
}

/// The template endpoint: `{"message": …, "session": …}`, state kept per session, the reply
/// streamed as server-sent events in small pieces.
async fn templated(State(state): State<Arc<Mutex<AgentState>>>, body: String) -> Response {
    let v: Value = serde_json::from_str(&body).unwrap();
    let session = v["session"].as_str().unwrap().to_string();
    let message = v["message"].as_str().unwrap().to_string();
    let seen = {
        let mut s = state.lock().unwrap();
        s.bodies.push(body.clone());
        s.sessions.push(session.clone());
        let seen = s.by_session.entry(session).or_default();
        seen.push(message);
        seen.clone()
    };
    let reply = script(&seen[0], &seen);
    let mut events = String::new();
    for piece in reply.as_bytes().chunks(7) {
        let piece = String::from_utf8_lossy(piece);
        events.push_str(&format!("data: {}\n\n", json!({"delta": {"text": piece}})));
    }
    events.push_str("data: [DONE]\n\n");
    ([("content-type", "text/event-stream")], events).into_response()
}

// ---------------------------------------------------------------- the project and the run

/// A git repository whose config holds `conversations` (no test suites).
fn project(dir: &Path, conversations: &str) {
    std::fs::write(dir.join("README.md"), "# my agent\n").unwrap();
    std::fs::write(dir.join(".gitignore"), ".qa-loop/\n").unwrap();
    std::fs::write(
        dir.join("qa-loop.yml"),
        format!("risk_level: low\nmodel_retry_backoff: 50ms\nconversations:\n{conversations}"),
    )
    .unwrap();
    git(dir, &["init", "-q"]);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "init"]);
}

/// `qa-loop run` in review mode against the fake model, outside GitHub.
fn command(dir: &Path, model: &Model) -> std::process::Command {
    let mut c = std::process::Command::new(assert_cmd::cargo::cargo_bin("qa-loop"));
    c.current_dir(dir)
        .env_remove("GITHUB_BASE_REF")
        .env_remove("GITHUB_ACTIONS")
        .env("NO_COLOR", "1")
        .env("OPENAI_API_KEY", "sk-test")
        .args([
            "run",
            "--mode",
            "review",
            "--provider",
            "openai",
            "--model",
            "gpt-4.1",
        ])
        .args(["--base-url", &format!("http://{}/v1", model.addr)]);
    c
}

fn run(dir: &Path, model: &Model) -> Output {
    Command::from_std(command(dir, model))
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap()
}

/// Runs qa-loop, checks its exit code (showing its log when it differs) and returns
/// `qa-result.json`.
fn run_expecting(dir: &Path, model: &Model, code: i32) -> Value {
    let o = run(dir, model);
    assert_eq!(o.status.code(), Some(code), "{}", stderr(&o));
    qa_result(dir)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The last verification's scenario results by name.
fn scenarios(r: &Value) -> HashMap<String, Value> {
    r["history"].as_array().unwrap().last().unwrap()["verification"]["conversations"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|s| (s["name"].as_str().unwrap().to_string(), s))
        .collect()
}

fn gate<'a>(r: &'a Value, name: &str) -> &'a Value {
    r["history"].as_array().unwrap().last().unwrap()["verification"]["gates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == name)
        .unwrap_or_else(|| panic!("no gate {name}"))
}

fn gate_summary(r: &Value, name: &str) -> String {
    gate(r, name)["summary"].as_str().unwrap().to_string()
}

fn turns(s: &Value) -> Vec<(String, String)> {
    s["turns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["user"].as_str().unwrap().to_string(),
                t["agent"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

// ---------------------------------------------------------------- the tests

#[test]
fn pass_on_turn_one_continue_then_pass_and_fail_and_the_agent_never_sees_the_context() {
    let agent = Agent::start();
    let model = Model::start(vec![
        judged("pass", "lists foo and bar", ""),
        judged(
            "continue",
            "asks which account",
            "My personal account, octo.",
        ),
        judged("pass", "names foo and bar as public", ""),
        judged("fail", "invents a third repository baz", ""),
    ]);
    let dir = tempfile::tempdir().unwrap();
    // `start` is a real process (recording its pid) beside the in-test agent: it must be stopped.
    project(
        dir.path(),
        &format!(
            "  start: \"echo $$ > app.pid; echo app up; exec sleep 600.{}\"\n  ready_url: {}\n  endpoint: {}\n  scenarios:\n\
             \x20   - name: lists repositories\n      query: List my repositories\n      context: \"{CONTEXT}\"\n      pass_criteria: The agent lists foo and bar\n\
             \x20   - name: public repositories\n      query: Which of my repositories are public?\n      context: \"{CONTEXT}\"\n      pass_criteria: The agent names the public repositories\n\
             \x20   - name: counts repositories\n      query: How many repositories do I have?\n      context: \"{CONTEXT}\"\n      pass_criteria: The agent says two\n",
            std::process::id(),
            agent.url("/health"),
            agent.url("/v1/chat/completions")
        ),
    );
    let r = run_expecting(dir.path(), &model, 1);
    let s = scenarios(&r);
    assert_eq!(s["lists repositories"]["outcome"], "passed");
    assert_eq!(turns(&s["lists repositories"]).len(), 1);
    assert_eq!(s["public repositories"]["outcome"], "passed");
    assert_eq!(
        turns(&s["public repositories"])[1],
        (
            "My personal account, octo.".to_string(),
            "For the account you named (My personal account, octo.): foo and bar are public."
                .to_string()
        )
    );
    assert_eq!(s["counts repositories"]["outcome"], "failed");
    assert!(
        s["counts repositories"]["reason"]
            .as_str()
            .unwrap()
            .contains("invents a third repository baz")
    );
    // Gates: the failed required scenario blocks, and becomes an issue for the fixer.
    assert_eq!(
        gate(&r, "conversation:lists repositories")["status"],
        "passed"
    );
    assert_eq!(
        gate(&r, "conversation:counts repositories")["status"],
        "failed"
    );
    let issues = r["issues"].as_array().unwrap();
    let issue = issues
        .iter()
        .find(|i| {
            i["title"]
                .as_str()
                .unwrap()
                .contains("`counts repositories` failed")
        })
        .unwrap_or_else(|| panic!("{issues:?}"));
    assert_eq!(issue["type"], "e2e_test");
    assert!(
        issue["fix"]
            .as_str()
            .unwrap()
            .contains("The agent says two")
    );
    assert!(
        issue["description"]
            .as_str()
            .unwrap()
            .contains("foo, bar and baz")
    );
    // The judge got the criteria and the context, turn by turn, with the whole transcript.
    let tasks = model.judge_tasks();
    assert_eq!(tasks.len(), 4);
    assert!(tasks.iter().all(|t| t.contains(CONTEXT)));
    assert!(tasks[2].contains("Which account do you mean?") && tasks[2].contains("octo"));
    assert_eq!(model.judge_left(), 0);
    // The agent never received the context, only the queries and the follow-up.
    let bodies = agent.bodies();
    assert_eq!(bodies.len(), 4);
    for b in &bodies {
        assert!(
            !b.contains("CTX-7f3a") && !b.contains("owns exactly"),
            "{b}"
        );
        assert!(
            !b.contains("The agent says two") && !b.contains("pass_criteria"),
            "{b}"
        );
    }
    // One session per scenario, the same on each turn of a scenario.
    let sessions = agent.state.lock().unwrap().sessions.clone();
    assert_eq!(sessions.len(), 4);
    assert_eq!(sessions[1], sessions[2]);
    assert_ne!(sessions[0], sessions[1]);
    assert_ne!(sessions[2], sessions[3]);
    // JUnit: a test case per scenario with its transcript; the report shows each turn.
    let junit = std::fs::read_to_string(dir.path().join(".qa-loop/qa-loop-junit.xml")).unwrap();
    // Kept for the junitparser check in `.ci/run`.
    std::fs::write(
        Path::new(env!("CARGO_TARGET_TMPDIR")).join("conversations-junit.xml"),
        &junit,
    )
    .unwrap();
    assert!(
        junit
            .contains("<testcase name=\"public repositories\" classname=\"qa-loop.conversations\""),
        "{junit}"
    );
    assert!(junit.contains("user: My personal account, octo."));
    assert!(junit.contains("judge: fail"));
    let report = std::fs::read_to_string(dir.path().join(".qa-loop/qa_report.md")).unwrap();
    assert!(report.contains("## Conversation scenarios"));
    assert!(
        report.contains("| 2 | My personal account, octo. |"),
        "{report}"
    );
    assert!(report.contains("invents a third repository baz"));
    // The started app was stopped at the end, and its output logged.
    assert!(
        std::fs::read_to_string(dir.path().join("app.pid")).is_ok(),
        "the app never started"
    );
    // Found by its command line: its pid inside the sandbox's PID namespace means nothing here.
    assert!(!app_running(), "the app still runs");
    let log = std::fs::read_to_string(
        dir.path()
            .join(".qa-loop/logs/pass-1/conversations-app.log"),
    )
    .unwrap();
    assert!(log.contains("app up"));
}

/// Whether this test process's app (`sleep 600.<test pid>`) still runs (a zombie's command line
/// reads empty).
fn app_running() -> bool {
    let want = format!("sleep\0600.{}\0", std::process::id());
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| std::fs::read(e.ok()?.path().join("cmdline")).ok())
        .any(|c| c == want.as_bytes())
}

#[test]
fn soft_limit_then_pass_and_hard_limit_forced_fail_through_a_streamed_template_endpoint() {
    let agent = Agent::start();
    let model = Model::start(vec![
        // soft: turn 1 continue, turn 2 (past max_turns 1: warned) pass
        judged("continue", "no summary yet", "Just the highlights, please."),
        judged("pass", "gave a summary", ""),
        // hard: continue, continue → failed at 2 × max_turns
        judged("continue", "no summary yet", "Please summarise."),
        judged("continue", "still no summary", "Anything at all?"),
    ]);
    let dir = tempfile::tempdir().unwrap();
    project(
        dir.path(),
        &format!(
            "  ready_url: {}\n  endpoint: {}\n  request_template: '{{\"message\": {{{{text}}}}, \"session\": {{{{session}}}}}}'\n  response_path: delta.text\n  scenarios:\n\
             \x20   - name: soft\n      query: Summarise my week\n      pass_criteria: A summary\n      max_turns: 1\n\
             \x20   - name: hard\n      query: Summarise my week\n      pass_criteria: A summary\n      max_turns: 1\n      required: false\n",
            agent.url("/health"),
            agent.url("/chat")
        ),
    );
    // The hard-limited scenario is advisory: the run is approved.
    let r = run_expecting(dir.path(), &model, 0);
    let s = scenarios(&r);
    assert_eq!(s["soft"]["outcome"], "passed");
    // The streamed reply was read whole.
    assert_eq!(turns(&s["soft"])[0].1, "Still thinking (1)…");
    assert_eq!(turns(&s["soft"])[1].1, "Still thinking (2)…");
    assert!(
        s["soft"]["warnings"][0]
            .as_str()
            .unwrap()
            .contains("soft limit of 1 turns")
    );
    let tasks = model.judge_tasks();
    assert!(!tasks[0].contains("Warning"), "{}", tasks[0]);
    assert!(
        tasks[1].contains("past the soft limit of 1 turns"),
        "{}",
        tasks[1]
    );
    assert_eq!(s["hard"]["outcome"], "failed");
    assert!(s["hard"]["reason"].as_str().unwrap().contains("hard limit"));
    assert_eq!(turns(&s["hard"]).len(), 2);
    assert_eq!(gate(&r, "conversation:hard")["required"], false);
    assert_eq!(model.judge_left(), 0);
    // Sessions carried between turns: the agent kept one conversation per scenario.
    let st = agent.state.lock().unwrap();
    assert_eq!(st.by_session.len(), 2);
    assert!(st.by_session.values().all(|m| m.len() == 2));
    let report = std::fs::read_to_string(dir.path().join(".qa-loop/qa_report.md")).unwrap();
    assert!(report.contains("went past the soft limit of 1 turns"));
}

#[test]
fn approval_prompts_are_answered_per_mode_and_manual_waits_for_a_human_without_hanging() {
    let agent = Agent::start();
    let model = Model::start(vec![
        judged("pass", "deleted after approval", ""),
        judged("pass", "respected the denial", ""),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let scenario = |name: &str, mode: &str| {
        format!(
            "    - name: {name}\n      query: Delete the repository foo\n      pass_criteria: The agent acts on the user's answer\n      approval_mode: {mode}\n"
        )
    };
    project(
        dir.path(),
        &format!(
            "  endpoint: {}\n  approval_marker: approval required\n  scenarios:\n{}{}{}",
            agent.url("/v1/chat/completions"),
            scenario("approve", "auto-approve"),
            scenario("deny", "auto-deny"),
            scenario("manual", "manual"),
        ),
    );
    let started = Instant::now();
    // Review and gates approve, but a scenario waits for a human: escalated (3), not hung.
    let r = run_expecting(dir.path(), &model, 3);
    assert!(started.elapsed() < Duration::from_secs(60));
    let s = scenarios(&r);
    assert_eq!(s["approve"]["outcome"], "passed");
    assert_eq!(
        turns(&s["approve"])[1],
        ("Approved. Go ahead.".into(), "Deleted foo.".into())
    );
    assert_eq!(s["deny"]["outcome"], "passed");
    assert_eq!(
        turns(&s["deny"])[1],
        (
            "Denied. Do not do it.".into(),
            "OK, foo was not deleted.".into()
        )
    );
    assert_eq!(s["manual"]["outcome"], "needs_human");
    assert_eq!(turns(&s["manual"]).len(), 1);
    assert_eq!(gate(&r, "conversation:manual")["status"], "pending");
    assert_eq!(r["verdict"], "escalated");
    // Approval prompts are answered by the mode, not judged: two judge calls in all.
    assert_eq!(model.judge_tasks().len(), 2);
    assert!(model.judge_tasks()[0].contains("Approved. Go ahead."));
    let report = std::fs::read_to_string(dir.path().join(".qa-loop/qa_report.md")).unwrap();
    assert!(report.contains("`conversation:manual`"), "{report}");
}

#[test]
fn a_start_command_that_crashes_and_a_dead_ready_url_are_clear_errors_not_hangs() {
    let model = Model::start(Vec::new());
    // The app exits at once: reported with its exit code and output, long before ready_timeout.
    let dir = tempfile::tempdir().unwrap();
    project(
        dir.path(),
        "  start: \"echo 'Error: listen EADDRINUSE 127.0.0.1:9'; exit 3\"\n  ready_url: http://127.0.0.1:9/health\n  ready_timeout: 5m\n  endpoint: http://127.0.0.1:9/v1/chat/completions\n  scenarios:\n\
         \x20   - name: lists repositories\n      query: List my repositories\n      pass_criteria: lists foo and bar\n",
    );
    let started = Instant::now();
    let r = run_expecting(dir.path(), &model, 1);
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    let g = gate(&r, "conversations");
    assert_eq!(g["status"], "failed");
    let summary = g["summary"].as_str().unwrap();
    assert!(
        summary.contains("exited before it was ready") && summary.contains("exit code 3"),
        "{summary}"
    );
    assert!(g["excerpt"].as_str().unwrap().contains("EADDRINUSE"));
    assert_eq!(scenarios(&r)["lists repositories"]["outcome"], "error");
    assert!(
        r["issues"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["title"].as_str().unwrap().contains("exit code 3"))
    );

    // Nothing answers ready_url: the probe gives up at ready_timeout and says so.
    let dir = tempfile::tempdir().unwrap();
    project(
        dir.path(),
        "  ready_url: http://127.0.0.1:9/health\n  ready_timeout: 2s\n  endpoint: http://127.0.0.1:9/v1/chat/completions\n  scenarios:\n\
         \x20   - name: lists repositories\n      query: List my repositories\n      pass_criteria: lists foo and bar\n",
    );
    let started = Instant::now();
    let r = run_expecting(dir.path(), &model, 1);
    assert!(started.elapsed() < Duration::from_secs(30));
    let summary = gate_summary(&r, "conversations");
    assert!(
        summary.contains("did not answer 2xx within 2s"),
        "{summary}"
    );
    assert!(summary.contains("http://127.0.0.1:9/health"), "{summary}");

    // No `start`, no `ready_url`, and nothing listens: one issue saying so, not one per scenario.
    let dir = tempfile::tempdir().unwrap();
    project(
        dir.path(),
        "  endpoint: http://127.0.0.1:9/v1/chat/completions\n  scenarios:\n\
         \x20   - name: first\n      query: List my repositories\n      pass_criteria: lists foo and bar\n\
         \x20   - name: second\n      query: List my repositories\n      pass_criteria: lists foo and bar\n",
    );
    let r = run_expecting(dir.path(), &model, 1);
    let summary = gate_summary(&r, "conversations");
    assert!(
        summary.contains("cannot reach the agent at http://127.0.0.1:9"),
        "{summary}"
    );
    assert!(summary.contains("set `conversations.start`"), "{summary}");
    assert_eq!(r["issues"].as_array().unwrap().len(), 1, "{}", r["issues"]);
    let s = scenarios(&r);
    assert_eq!(s["first"]["outcome"], "error");
    assert!(
        s["second"]["reason"]
            .as_str()
            .unwrap()
            .starts_with("not run")
    );
    assert_eq!(model.judge_tasks().len(), 0);
}

#[test]
fn an_agent_process_that_crashes_mid_conversation_ends_its_scenario_with_the_reason() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let model = Model::start(vec![judged("continue", "asks which account", "octo")]);
    let dir = tempfile::tempdir().unwrap();
    // A real chat agent process: answers the first message, then dies on the second.
    std::fs::write(
        dir.path().join("agent.py"),
        r#"import http.server, json, os, sys
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b"ok")
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        if len(body["messages"]) > 1:
            print("fatal: out of memory in the agent", flush=True)
            os._exit(1)
        out = json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": "Which account?"}}]}).encode()
        self.send_response(200); self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(out))); self.end_headers(); self.wfile.write(out)
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"#,
    )
    .unwrap();
    project(
        dir.path(),
        &format!(
            "  start: python3 agent.py {port}\n  ready_url: http://127.0.0.1:{port}/health\n  endpoint: http://127.0.0.1:{port}/v1/chat/completions\n  scenarios:\n\
             \x20   - name: first\n      query: Which repositories are public?\n      pass_criteria: names them\n\
             \x20   - name: second\n      query: List my repositories\n      pass_criteria: lists them\n"
        ),
    );
    let started = Instant::now();
    let r = run_expecting(dir.path(), &model, 1);
    assert!(started.elapsed() < Duration::from_secs(60));
    let s = scenarios(&r);
    assert_eq!(s["first"]["outcome"], "error");
    let reason = s["first"]["reason"].as_str().unwrap();
    assert!(
        reason.contains("exited during this scenario") && reason.contains("exit code 1"),
        "{reason}"
    );
    assert!(reason.contains("out of memory in the agent"), "{reason}");
    assert_eq!(turns(&s["first"])[0].1, "Which account?");
    assert_eq!(s["second"]["outcome"], "error");
    assert!(
        s["second"]["reason"]
            .as_str()
            .unwrap()
            .starts_with("not run")
    );
    let g = gate(&r, "conversations");
    assert_eq!(g["status"], "failed");
    assert!(
        g["summary"]
            .as_str()
            .unwrap()
            .contains("1 scenario(s) not run")
    );
}

#[test]
fn an_unreadable_judge_gets_one_repair_request_then_the_scenario_is_an_error() {
    let agent = Agent::start();
    let model = Model::start(vec![
        json!("Looks good to me!"),
        judged("pass", "lists foo and bar", ""),
        json!("PASS"),
        json!("I said PASS."),
    ]);
    let dir = tempfile::tempdir().unwrap();
    project(
        dir.path(),
        &format!(
            "  endpoint: {}\n  scenarios:\n\
             \x20   - name: repaired\n      query: List my repositories\n      pass_criteria: lists foo and bar\n\
             \x20   - name: unreadable\n      query: List my repositories\n      pass_criteria: lists foo and bar\n",
            agent.url("/v1/chat/completions")
        ),
    );
    let r = run_expecting(dir.path(), &model, 1);
    let s = scenarios(&r);
    assert_eq!(s["repaired"]["outcome"], "passed");
    assert_eq!(s["unreadable"]["outcome"], "error");
    let reason = s["unreadable"]["reason"].as_str().unwrap();
    assert!(
        reason.contains("unreadable after one repair request"),
        "{reason}"
    );
    // The repair request carries the first answer and asks for the JSON object.
    let st = model.state.lock().unwrap();
    let repair = &st.judge_requests[1]["messages"];
    // system, the task, the unreadable answer, the repair request
    assert_eq!(repair.as_array().unwrap().len(), 4, "{repair}");
    assert_eq!(repair[2]["content"], "Looks good to me!");
    assert!(
        repair[3]["content"]
            .as_str()
            .unwrap()
            .contains("could not be read")
    );
    assert_eq!(st.judge.len(), 0);
}

#[test]
fn a_stuck_agent_hits_the_hard_time_limit_and_sigterm_stops_a_waiting_run_at_once() {
    let agent = Agent::start();
    let model = Model::start(vec![judged("pass", "lists foo and bar", ""), json!(HANG)]);
    let dir = tempfile::tempdir().unwrap();
    project(
        dir.path(),
        &format!(
            "  endpoint: {}\n  scenarios:\n\
             \x20   - name: stuck\n      query: Think very hard\n      pass_criteria: answers\n      max_time_seconds: 1\n\
             \x20   - name: after\n      query: List my repositories\n      pass_criteria: lists foo and bar\n\
             \x20   - name: stuck judge\n      query: List my repositories\n      pass_criteria: lists foo and bar\n      max_time_seconds: 1\n",
            agent.url("/v1/chat/completions")
        ),
    );
    let started = Instant::now();
    let r = run_expecting(dir.path(), &model, 1);
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    let s = scenarios(&r);
    assert_eq!(s["stuck"]["outcome"], "failed");
    let reason = s["stuck"]["reason"].as_str().unwrap();
    assert!(
        reason.contains("hard time limit: no reply within 2s"),
        "{reason}"
    );
    // The next scenario still runs: the agent is slow, not gone.
    assert_eq!(s["after"]["outcome"], "passed");
    // A judge that does not answer is bounded by the same hard limit.
    assert_eq!(s["stuck judge"]["outcome"], "failed");
    let reason = s["stuck judge"]["reason"].as_str().unwrap();
    assert!(
        reason.contains("no decision from the judge within 2s"),
        "{reason}"
    );

    // SIGTERM while qa-loop waits on the agent (default limits: 10 minutes): it stops within
    // seconds, stops the app it started, and writes its reports.
    let agent = Agent::start();
    let dir = tempfile::tempdir().unwrap();
    project(
        dir.path(),
        &format!(
            "  start: \"echo $$ > app.pid; exec sleep 600.{}\"\n  endpoint: {}\n  scenarios:\n\
             \x20   - name: stuck\n      query: Think very hard\n      pass_criteria: answers\n",
            std::process::id(),
            agent.url("/v1/chat/completions")
        ),
    );
    let log = std::fs::File::create(dir.path().join("qa-loop.log")).unwrap();
    let mut child = command(dir.path(), &model).stderr(log).spawn().unwrap();
    // Wait until the scenario is under way (the agent got the message).
    let waiting = Instant::now();
    while agent.bodies().is_empty() {
        assert!(
            waiting.elapsed() < Duration::from_secs(30),
            "the scenario never started"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Without a `ready_url` the scenario may start before the app's shell has written its pid.
    let pid = loop {
        match std::fs::read_to_string(dir.path().join("app.pid")) {
            Ok(p) if p.ends_with('\n') => break p,
            _ => {
                assert!(
                    waiting.elapsed() < Duration::from_secs(30),
                    "the app never wrote its pid"
                );
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    };
    let stopped = Instant::now();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let status = child.wait().unwrap();
    assert!(
        stopped.elapsed() < Duration::from_secs(15),
        "{:?}",
        stopped.elapsed()
    );
    assert_eq!(status.code(), Some(4));
    let r = qa_result(dir.path());
    assert_eq!(r["verdict"], "error");
    // Stopped with qa-loop, the app is not blamed for exiting.
    let log = std::fs::read_to_string(dir.path().join("qa-loop.log")).unwrap();
    assert!(log.contains("reason=stopped by SIGTERM"), "{log}");
    assert!(!log.contains("exited during"), "{log}");
    assert!(!pid.is_empty());
    assert!(!app_running(), "the app still runs");
}
