//! The real binary against local fake model servers that speak the Anthropic Messages and OpenAI
//! Chat Completions wire formats (request and answer JSON as in the providers' API references,
//! their error bodies and `retry-after`). Each fake checks every request the way the real API
//! would reject it (headers, roles, tool-call / tool-result pairing, cache breakpoints) and
//! answers 400 `invalid_request_error` otherwise, so a wrong request fails the test.

mod support;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::path::Path;
use std::process::Output;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::*;

use assert_cmd::Command;
use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

const KEY: &str = "sk-canary-7d1f0c2e9b";

#[derive(Clone, Copy, Debug, PartialEq)]
enum Wire {
    Anthropic,
    OpenAi,
    /// OpenAI's Responses API (`POST /v1/responses`), for the models that need it.
    Responses,
}

/// One scripted answer.
#[derive(Clone, Debug)]
enum Reply {
    /// A successful answer: text and/or tool calls, with usage.
    Ok {
        text: String,
        calls: Vec<(String, Value)>,
        input: u64,
        output: u64,
    },
    /// An HTTP error with the provider's error body; `retry_after` in seconds.
    Error {
        status: u16,
        message: String,
        retry_after: Option<u64>,
    },
    /// No answer for this long (then a 500), as a stuck upstream.
    Hang(Duration),
    /// A 200 whose JSON body is cut in the middle (a dropped connection behind a proxy).
    Truncated,
    /// This status and JSON body, as given (stop reasons, errors inside a 200, error codes).
    Raw { status: u16, body: Value },
}

/// An answer of `text` only that stopped for `reason` (`stop_reason` / `finish_reason`).
fn stopped(wire: Wire, text: &str, reason: &str) -> Reply {
    let mut body = answer(wire, 99, text, &[], 1000, 100);
    match wire {
        Wire::Anthropic => body["stop_reason"] = json!(reason),
        Wire::OpenAi => body["choices"][0]["finish_reason"] = json!(reason),
        Wire::Responses => {
            body["status"] = json!("incomplete");
            body["incomplete_details"] = json!({"reason": match reason {
                "length" => "max_output_tokens",
                other => other,
            }});
        }
    }
    Reply::Raw { status: 200, body }
}

fn tool(name: &str, args: Value) -> Reply {
    Reply::Ok {
        text: String::new(),
        calls: vec![(name.to_string(), args)],
        input: 1000,
        output: 100,
    }
}

fn text(t: &str) -> Reply {
    Reply::Ok {
        text: t.to_string(),
        calls: Vec::new(),
        input: 1000,
        output: 100,
    }
}

fn verdict(status: &str, score: u8) -> Reply {
    let issues = if status == "approved" {
        json!([])
    } else {
        json!([{"id": "Q1", "title": "add subtracts instead of adding", "type": "unit_test",
                "severity": "high", "file": "calc.py", "line": 2, "fix": "return a + b"}])
    };
    tool(
        "submit_verdict",
        json!({"status": status, "score": score, "confidence": 0.9, "summary": "checked",
               "criteria": [], "issues": issues}),
    )
}

#[derive(Default)]
struct FakeState {
    /// Thinking blocks answered with a tool call, by the call's id: the API wants the
    /// assistant turn of that call back starting with them, unchanged.
    thinking: Vec<(String, Value)>,
    replies: VecDeque<Reply>,
    requests: Vec<(HeaderMap, Value)>,
    problems: Vec<String>,
    calls: u64,
}

struct Fake {
    addr: SocketAddr,
    state: Arc<Mutex<FakeState>>,
    wire: Wire,
}

impl Fake {
    /// Serves `replies` in order on 127.0.0.1 (a thread with its own runtime).
    fn start(wire: Wire, replies: Vec<Reply>) -> Fake {
        let state = Arc::new(Mutex::new(FakeState {
            replies: replies.into(),
            ..FakeState::default()
        }));
        let addr = serve(
            axum::Router::new()
                .route("/v1/messages", axum::routing::post(handle))
                .route("/v1/chat/completions", axum::routing::post(handle))
                .route("/v1/responses", axum::routing::post(handle))
                .with_state((state.clone(), wire)),
        );
        Fake { addr, state, wire }
    }

    fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn requests(&self) -> Vec<(HeaderMap, Value)> {
        self.state.lock().unwrap().requests.clone()
    }

    /// Requests the fake refused as the real API would (must be empty).
    fn problems(&self) -> Vec<String> {
        self.state.lock().unwrap().problems.clone()
    }

    fn run(&self, dir: &Path, extra: &[&str]) -> Output {
        self.run_env(dir, extra, &[])
    }

    fn run_env(&self, dir: &Path, extra: &[&str], env: &[(&str, &str)]) -> Output {
        let provider = match self.wire {
            Wire::Anthropic => "anthropic",
            Wire::OpenAi | Wire::Responses => "openai",
        };
        let model = match self.wire {
            Wire::Anthropic => "claude-sonnet-4-5",
            Wire::OpenAi => "gpt-4.1",
            Wire::Responses => "gpt-5.4",
        };
        let key_var = match self.wire {
            Wire::Anthropic => "ANTHROPIC_API_KEY",
            Wire::OpenAi | Wire::Responses => "OPENAI_API_KEY",
        };
        let base = match self.wire {
            Wire::Anthropic => self.base_url(),
            Wire::OpenAi | Wire::Responses => format!("{}/v1", self.base_url()),
        };
        Command::cargo_bin("qa-loop")
            .unwrap()
            .current_dir(dir)
            .env_remove("GITHUB_BASE_REF")
            .env_remove("GITHUB_ACTIONS")
            .env("NO_COLOR", "1")
            .env(key_var, KEY)
            .args([
                "run",
                "--provider",
                provider,
                "--model",
                model,
                "--base-url",
                &base,
            ])
            .args(extra)
            .envs(env.iter().copied())
            .output()
            .unwrap()
    }
}

async fn handle(
    State((state, wire)): State<(Arc<Mutex<FakeState>>, Wire)>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let next = {
        let mut s = state.lock().unwrap();
        s.requests.push((headers.clone(), body.clone()));
        let checked =
            check_request(wire, &headers, &body).and_then(|()| check_thinking(&s.thinking, &body));
        match checked {
            Err(problem) => {
                s.problems.push(problem.clone());
                Err(problem)
            }
            Ok(()) => {
                s.calls += 1;
                Ok((s.calls, s.replies.pop_front()))
            }
        }
    };
    let (n, reply) = match next {
        Err(problem) => return error_response(wire, 400, &problem, None),
        Ok(next) => next,
    };
    let response = reply_to(wire, &state, n, reply).await;
    if wire == Wire::Anthropic && body["stream"] == true && response.status() == StatusCode::OK {
        return stream_of(response).await;
    }
    response
}

/// A successful answer as the event stream a `"stream": true` request gets (as documented:
/// `message_start`, each block's start, deltas and stop, `message_delta`, `message_stop`). An
/// answer that was cut comes as half of its events.
async fn stream_of(response: Response) -> Response {
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    let Ok(answer) = serde_json::from_slice::<Value>(&bytes) else {
        let cut = events(&answer(Wire::Anthropic, 1, "half", &[], 1000, 100));
        let half = cut[..cut.len() / 2].to_string();
        return ([("content-type", "text/event-stream")], half).into_response();
    };
    ([("content-type", "text/event-stream")], events(&answer)).into_response()
}

fn events(answer: &Value) -> String {
    let mut out = String::new();
    let mut event = |kind: &str, data: Value| {
        out.push_str(&format!("event: {kind}\ndata: {data}\n\n"));
    };
    let mut start = answer.clone();
    start["content"] = json!([]);
    start["stop_reason"] = Value::Null;
    let usage = answer["usage"].clone();
    start["usage"]["output_tokens"] = json!(1);
    event(
        "message_start",
        json!({"type": "message_start", "message": start}),
    );
    for (i, block) in answer["content"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let mut empty = block.clone();
        let delta = match block["type"].as_str().unwrap_or_default() {
            "text" => {
                empty["text"] = json!("");
                vec![json!({"type": "text_delta", "text": block["text"]})]
            }
            "thinking" => {
                empty["thinking"] = json!("");
                empty["signature"] = json!("");
                vec![
                    json!({"type": "thinking_delta", "thinking": block["thinking"]}),
                    json!({"type": "signature_delta", "signature": block["signature"]}),
                ]
            }
            "tool_use" => {
                empty["input"] = json!({});
                let input = block["input"].to_string();
                let (a, b) = input.split_at(input.len() / 2);
                vec![
                    json!({"type": "input_json_delta", "partial_json": a}),
                    json!({"type": "input_json_delta", "partial_json": b}),
                ]
            }
            _ => Vec::new(),
        };
        event(
            "content_block_start",
            json!({"type": "content_block_start", "index": i, "content_block": empty}),
        );
        event("ping", json!({"type": "ping"}));
        for d in delta {
            event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": i, "delta": d}),
            );
        }
        event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": i}),
        );
    }
    event(
        "message_delta",
        json!({"type": "message_delta",
        "delta": {"stop_reason": answer["stop_reason"], "stop_sequence": null},
        "usage": {"output_tokens": usage["output_tokens"]}}),
    );
    event("message_stop", json!({"type": "message_stop"}));
    out
}

async fn reply_to(
    wire: Wire,
    state: &Arc<Mutex<FakeState>>,
    n: u64,
    reply: Option<Reply>,
) -> Response {
    match reply {
        Some(Reply::Hang(d)) => {
            tokio::time::sleep(d).await;
            error_response(wire, 500, "answered too late", None)
        }
        Some(Reply::Truncated) => {
            let full = answer(wire, n, "", &[], 1000, 100).to_string();
            (
                [("content-type", "application/json")],
                full[..full.len() / 2].to_string(),
            )
                .into_response()
        }
        None => error_response(wire, 500, "the test script has no answer left", None),
        Some(Reply::Raw { status, body }) => {
            // Remember thinking that came with tool calls (Anthropic).
            let blocks = body["content"].as_array().cloned().unwrap_or_default();
            let thoughts: Vec<&Value> = blocks.iter().filter(|b| b["type"] == "thinking").collect();
            if let Some(first) = thoughts.first() {
                let mut s = state.lock().unwrap();
                for b in blocks.iter().filter(|b| b["type"] == "tool_use") {
                    s.thinking.push((
                        b["id"].as_str().unwrap_or_default().to_string(),
                        (*first).clone(),
                    ));
                }
            }
            (StatusCode::from_u16(status).unwrap(), Json(body)).into_response()
        }
        Some(Reply::Error {
            status,
            message,
            retry_after,
        }) => error_response(wire, status, &message, retry_after),
        Some(Reply::Ok {
            text,
            calls,
            input,
            output,
        }) => Json(answer(wire, n, &text, &calls, input, output)).into_response(),
    }
}

/// The answer JSON of each API, as documented.
fn answer(
    wire: Wire,
    n: u64,
    text: &str,
    calls: &[(String, Value)],
    input: u64,
    output: u64,
) -> Value {
    match wire {
        Wire::Anthropic => {
            let mut content = Vec::new();
            if !text.is_empty() {
                content.push(json!({"type": "text", "text": text}));
            }
            for (i, (name, args)) in calls.iter().enumerate() {
                content.push(json!({"type": "tool_use", "id": format!("toolu_{n}_{i}"), "name": name, "input": args}));
            }
            json!({
                "id": format!("msg_{n}"), "type": "message", "role": "assistant",
                "model": "claude-sonnet-4-5-20250929", "content": content,
                "stop_reason": if calls.is_empty() { "end_turn" } else { "tool_use" },
                "stop_sequence": null,
                "usage": {"input_tokens": input, "output_tokens": output,
                          "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
            })
        }
        Wire::Responses => {
            // A reasoning item, then the message or the function calls, as documented.
            let mut items = vec![json!({"type": "reasoning", "id": format!("rs_{n}"),
                "summary": [], "encrypted_content": format!("enc_{n}")})];
            if !text.is_empty() {
                items.push(
                    json!({"type": "message", "id": format!("msg_{n}"), "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": text, "annotations": []}]}),
                );
            }
            for (i, (name, args)) in calls.iter().enumerate() {
                items.push(json!({"type": "function_call", "id": format!("fc_{n}_{i}"),
                    "call_id": format!("call_{n}_{i}"), "name": name,
                    "arguments": args.to_string(), "status": "completed"}));
            }
            json!({
                "id": format!("resp_{n}"), "object": "response", "created_at": 1_763_700_000,
                "status": "completed", "model": "gpt-5.4-2026-03-05", "output": items,
                "usage": {"input_tokens": input, "input_tokens_details": {"cached_tokens": 0},
                          "output_tokens": output, "output_tokens_details": {"reasoning_tokens": 10},
                          "total_tokens": input + output}
            })
        }
        Wire::OpenAi => {
            let tool_calls: Vec<Value> = calls
                .iter()
                .enumerate()
                .map(|(i, (name, args))| {
                    json!({"id": format!("call_{n}_{i}"), "type": "function",
                    "function": {"name": name, "arguments": args.to_string()}})
                })
                .collect();
            let mut message = json!({"role": "assistant",
                "content": if text.is_empty() { Value::Null } else { json!(text) }, "refusal": null});
            if !tool_calls.is_empty() {
                message["tool_calls"] = json!(tool_calls);
            }
            json!({
                "id": format!("chatcmpl-{n}"), "object": "chat.completion", "created": 1_763_700_000,
                "model": "gpt-4.1-2025-04-14",
                "choices": [{"index": 0, "message": message, "logprobs": null,
                             "finish_reason": if calls.is_empty() { "stop" } else { "tool_calls" }}],
                "usage": {"prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output,
                          "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0}}
            })
        }
    }
}

fn error_response(wire: Wire, status: u16, message: &str, retry_after: Option<u64>) -> Response {
    let body = match wire {
        Wire::Anthropic => {
            let kind = match status {
                400 => "invalid_request_error",
                401 => "authentication_error",
                429 => "rate_limit_error",
                529 => "overloaded_error",
                _ => "api_error",
            };
            json!({"type": "error", "error": {"type": kind, "message": message}})
        }
        Wire::OpenAi | Wire::Responses => {
            json!({"error": {"message": message, "type": if status == 429 { "requests" } else { "server_error" },
                                "param": null, "code": null}})
        }
    };
    let mut response = (StatusCode::from_u16(status).unwrap(), Json(body)).into_response();
    if let Some(s) = retry_after {
        response
            .headers_mut()
            .insert("retry-after", s.to_string().parse().unwrap());
    }
    response
}

/// Anthropic with thinking: an assistant turn holding a tool call that came with thinking must
/// start with that thinking block, signature intact; and `max_tokens` must exceed the budget.
fn check_thinking(thinking: &[(String, Value)], body: &Value) -> Result<(), String> {
    if let Some(budget) = body
        .pointer("/thinking/budget_tokens")
        .and_then(Value::as_u64)
        && body["max_tokens"].as_u64().unwrap_or(0) <= budget
    {
        return Err("`max_tokens` must be greater than `thinking.budget_tokens`".into());
    }
    for (i, m) in body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let blocks = m["content"].as_array().cloned().unwrap_or_default();
        for b in blocks.iter().filter(|b| b["type"] == "tool_use") {
            let id = b["id"].as_str().unwrap_or_default();
            if let Some((_, want)) = thinking.iter().find(|(t, _)| t == id) {
                let first = blocks.first().cloned().unwrap_or_default();
                let same = first["type"] == "thinking"
                    && first["thinking"] == want["thinking"]
                    && first["signature"] == want["signature"];
                if !same {
                    return Err(format!(
                        "messages.{i}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `{}`. When `thinking` is enabled, a final `assistant` message must start with a thinking block",
                        first["type"].as_str().unwrap_or("none")
                    ));
                }
            }
        }
    }
    Ok(())
}

/// What the real APIs refuse with 400.
fn check_request(wire: Wire, headers: &HeaderMap, body: &Value) -> Result<(), String> {
    let header = |n: &str| {
        headers
            .get(n)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
    };
    match wire {
        Wire::Anthropic => {
            if header("x-api-key") != KEY {
                return Err("x-api-key: missing or wrong".into());
            }
            if header("anthropic-version") != "2023-06-01" {
                return Err("anthropic-version header missing".into());
            }
            if body["model"].as_str().is_none() || body["max_tokens"].as_u64().is_none() {
                return Err("model and max_tokens are required".into());
            }
            // The adaptive generation (Claude 5, Opus 4.8) refuses a thinking budget.
            let model = body["model"].as_str().unwrap_or_default();
            if body["thinking"]["type"] == "enabled"
                && (model.contains("-5") || model.starts_with("claude-opus-4-8"))
                && !model.contains("-4-5")
            {
                return Err("\"thinking.type.enabled\" is not supported for this model. Use \"thinking.type.adaptive\" and \"output_config.effort\" to control thinking behavior.".into());
            }
            if let Some(effort) = body.pointer("/output_config/effort")
                && !["low", "medium", "high", "xhigh", "max"]
                    .contains(&effort.as_str().unwrap_or_default())
            {
                return Err(format!("output_config.effort: unknown level {effort}"));
            }
            // The `anthropic` SDK's rule for requests that may run past 10 minutes.
            if body["stream"] != true && body["max_tokens"].as_u64().unwrap_or(0) > 21_333 {
                return Err(
                    "Streaming is required for operations that may take longer than 10 minutes."
                        .into(),
                );
            }
            if body.to_string().matches("\"cache_control\"").count() > 4 {
                return Err("A maximum of 4 blocks with cache_control may be provided".into());
            }
            let messages = body["messages"].as_array().ok_or("messages: required")?;
            let mut pending: Vec<String> = Vec::new();
            for (i, m) in messages.iter().enumerate() {
                let role = m["role"].as_str().unwrap_or_default();
                let want = if i % 2 == 0 { "user" } else { "assistant" };
                if role != want {
                    return Err(format!(
                        "messages.{i}: roles must alternate, starting with user"
                    ));
                }
                let blocks = m["content"]
                    .as_array()
                    .ok_or(format!("messages.{i}.content"))?;
                if blocks.is_empty() {
                    return Err(format!("messages.{i}: content must be non-empty"));
                }
                let results: Vec<String> = blocks
                    .iter()
                    .filter(|b| b["type"] == "tool_result")
                    .map(|b| b["tool_use_id"].as_str().unwrap_or_default().to_string())
                    .collect();
                if pending.iter().any(|id| !results.contains(id)) {
                    return Err(format!(
                        "messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately after"
                    ));
                }
                for b in blocks {
                    if b["type"] == "text" && b["text"].as_str().is_none_or(|t| t.trim().is_empty())
                    {
                        return Err(format!(
                            "messages.{i}: text content blocks must contain non-whitespace text"
                        ));
                    }
                }
                pending = blocks
                    .iter()
                    .filter(|b| b["type"] == "tool_use")
                    .map(|b| b["id"].as_str().unwrap_or_default().to_string())
                    .collect();
            }
            for t in body["tools"].as_array().into_iter().flatten() {
                if t["input_schema"]["type"] != "object" {
                    return Err("tools.input_schema: type must be object".into());
                }
            }
        }
        Wire::Responses => {
            if header("authorization") != format!("Bearer {KEY}") {
                return Err("Incorrect API key provided".into());
            }
            if body.get("messages").is_some() {
                return Err("Unknown parameter: 'messages'".into());
            }
            let input = body["input"].as_array().ok_or("input: required")?;
            let mut calls: Vec<String> = Vec::new();
            let mut answered: Vec<String> = Vec::new();
            for (i, item) in input.iter().enumerate() {
                match item["type"].as_str() {
                    Some("function_call") => {
                        if item["arguments"].as_str().is_none() {
                            return Err(format!("input[{i}].arguments: expected a string"));
                        }
                        // This fake answers `call_<n>_<i>` with reasoning item `rs_<n>`: a
                        // call sent back without its reasoning item is refused, as the API does.
                        let call = item["call_id"].as_str().unwrap_or_default();
                        if let Some(n) =
                            call.strip_prefix("call_").and_then(|r| r.split('_').next())
                        {
                            let rs = format!("rs_{n}");
                            if !input[..i]
                                .iter()
                                .any(|p| p["type"] == "reasoning" && p["id"] == rs.as_str())
                            {
                                return Err(format!(
                                    "input[{i}]: Item '{call}' of type 'function_call' was provided without its required 'reasoning' item: '{rs}'."
                                ));
                            }
                        }
                        calls.push(item["call_id"].as_str().unwrap_or_default().to_string());
                    }
                    Some("function_call_output") => {
                        let id = item["call_id"].as_str().unwrap_or_default().to_string();
                        if !calls.contains(&id) {
                            return Err(format!(
                                "input[{i}]: No tool call found for function call output with call_id {id}."
                            ));
                        }
                        answered.push(id);
                    }
                    Some("reasoning") => {
                        if item["encrypted_content"].as_str().is_none() {
                            return Err(format!(
                                "input[{i}]: a reasoning item needs its encrypted_content when store is false"
                            ));
                        }
                    }
                    None if item["role"].is_string() => {
                        if item["content"].as_str().is_none_or(|c| c.trim().is_empty()) {
                            return Err(format!("input[{i}].content: a message needs content"));
                        }
                    }
                    _ => return Err(format!("input[{i}]: unknown item")),
                }
            }
            if let Some(open) = calls.iter().find(|c| !answered.contains(c)) {
                return Err(format!("No tool output found for function call {open}."));
            }
            for t in body["tools"].as_array().into_iter().flatten() {
                if t["type"] != "function" || t["name"].as_str().is_none() {
                    return Err("tools: each needs type function and a name".into());
                }
            }
        }
        Wire::OpenAi => {
            if header("authorization") != format!("Bearer {KEY}") {
                return Err("Incorrect API key provided".into());
            }
            let model = body["model"].as_str().unwrap_or_default();
            if body.get("reasoning_effort").is_some()
                && (model.starts_with("gpt-4") || model.starts_with("gpt-3"))
            {
                return Err(
                    "Unsupported parameter: 'reasoning_effort' is not supported with this model."
                        .into(),
                );
            }
            let messages = body["messages"].as_array().ok_or("messages: required")?;
            let mut pending: Vec<String> = Vec::new();
            for (i, m) in messages.iter().enumerate() {
                let role = m["role"].as_str().unwrap_or_default();
                if role == "tool" {
                    let id = m["tool_call_id"].as_str().unwrap_or_default().to_string();
                    if !pending.contains(&id) {
                        return Err(format!(
                            "messages.[{i}]: a `tool` message must answer a preceding tool_calls id"
                        ));
                    }
                    pending.retain(|p| *p != id);
                    continue;
                }
                if !pending.is_empty() {
                    return Err(format!(
                        "messages.[{i}]: an assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'"
                    ));
                }
                if role == "assistant"
                    && m["content"].is_null()
                    && m["tool_calls"].as_array().is_none_or(Vec::is_empty)
                {
                    return Err(format!(
                        "messages.[{i}]: an assistant message needs `content` unless it has `tool_calls`"
                    ));
                }
                if role == "assistant" {
                    for c in m["tool_calls"].as_array().into_iter().flatten() {
                        if c["type"] != "function" || c["function"]["arguments"].as_str().is_none()
                        {
                            return Err(format!(
                                "messages.[{i}].tool_calls: arguments must be a string"
                            ));
                        }
                        pending.push(c["id"].as_str().unwrap_or_default().to_string());
                    }
                }
            }
            for t in body["tools"].as_array().into_iter().flatten() {
                if t["type"] != "function" || t["function"]["name"].as_str().is_none() {
                    return Err("tools: each needs type function and a name".into());
                }
            }
        }
    }
    Ok(())
}

/// A tiny project whose test fails until `add` adds.
fn project(dir: &Path, extra_config: &str) {
    std::fs::write(dir.join("calc.py"), "def add(a, b):\n    return a - b\n").unwrap();
    std::fs::write(
        dir.join("test_calc.py"),
        "from calc import add\nassert add(2, 2) == 4, 'add is wrong'\n",
    )
    .unwrap();
    std::fs::write(dir.join(".gitignore"), ".qa-loop/\n__pycache__/\n").unwrap();
    std::fs::write(
        dir.join("qa-loop.yml"),
        format!(
            "risk_level: low\nunit_tests:\n  commands: [\"python3 test_calc.py\"]\nmodel_retry_backoff: 50ms\n{extra_config}"
        ),
    )
    .unwrap();
    git(dir, &["init", "-q"]);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "init"]);
}

/// The project with `add` already fixed (the change under review is correct).
fn fixed_project(dir: &Path) {
    project(dir, "");
    std::fs::write(dir.join("calc.py"), "def add(a, b):\n    return a + b\n").unwrap();
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Nothing the run printed or wrote carries the key.
fn assert_key_nowhere(dir: &Path, o: &Output) {
    assert!(!stderr(o).contains(KEY) && !String::from_utf8_lossy(&o.stdout).contains(KEY));
    for entry in walk(&dir.join(".qa-loop")) {
        let text = std::fs::read_to_string(&entry).unwrap_or_default();
        assert!(!text.contains(KEY), "{} carries the key", entry.display());
    }
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

const WIRES: [Wire; 3] = [Wire::Anthropic, Wire::OpenAi, Wire::Responses];

#[test]
fn approve_on_the_first_pass() {
    for wire in WIRES {
        let dir = tempfile::tempdir().unwrap();
        fixed_project(dir.path());
        let fake = Fake::start(wire, vec![verdict("approved", 92)]);
        let o = fake.run(dir.path(), &[]);
        assert_eq!(o.status.code(), Some(0), "{wire:?}: {}", stderr(&o));
        assert_eq!(fake.problems(), Vec::<String>::new(), "{wire:?}");
        let r = qa_result(dir.path());
        assert_eq!(r["verdict"], "approved");
        assert_eq!(
            (
                r["tokens"]["input"].as_u64(),
                r["tokens"]["output"].as_u64()
            ),
            (Some(1000), Some(100))
        );
        // Priced from the built-in table: Sonnet 4.5 $3/$15, GPT-4.1 $2/$8, GPT-5.4 $2.50/$15
        // per million (its model page; issue 49).
        let want = match wire {
            Wire::Anthropic => 0.0045,
            Wire::OpenAi => 0.0028,
            Wire::Responses => 0.004,
        };
        assert!(
            (r["cost_usd"].as_f64().unwrap() - want).abs() < 1e-9,
            "{wire:?}: {}",
            r["cost_usd"]
        );
        let requests = fake.requests();
        assert_eq!(requests.len(), 1);
        let body = &requests[0].1;
        let task = match wire {
            Wire::Anthropic => body["messages"][0]["content"][0]["text"].as_str().unwrap(),
            Wire::OpenAi => body["messages"][1]["content"].as_str().unwrap(),
            Wire::Responses => body["input"][0]["content"].as_str().unwrap(),
        };
        assert!(
            task.contains("## Verification results") && task.contains("PASSED"),
            "{task}"
        );
        let tools: Vec<&str> = match wire {
            Wire::Anthropic => body["tools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["name"].as_str().unwrap())
                .collect(),
            Wire::OpenAi => body["tools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["function"]["name"].as_str().unwrap())
                .collect(),
            Wire::Responses => body["tools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["name"].as_str().unwrap())
                .collect(),
        };
        assert!(
            tools.contains(&"submit_verdict") && tools.contains(&"run_command"),
            "{tools:?}"
        );
        assert!(
            !tools.contains(&"write_file") && !tools.contains(&"edit_file"),
            "reviewer has no write tools: {tools:?}"
        );
        assert_key_nowhere(dir.path(), &o);
    }
}

#[test]
fn reject_then_a_fix_made_through_tool_calls_then_approve() {
    for wire in WIRES {
        let dir = tempfile::tempdir().unwrap();
        project(dir.path(), "");
        let fake = Fake::start(
            wire,
            vec![
                verdict("rejected", 30),
                tool("read_file", json!({"path": "calc.py"})),
                tool(
                    "edit_file",
                    json!({"path": "calc.py", "old": "return a - b", "new": "return a + b"}),
                ),
                tool("finish", json!({"summary": "Q1: add now adds"})),
                verdict("approved", 90),
            ],
        );
        let o = fake.run(dir.path(), &[]);
        assert_eq!(o.status.code(), Some(0), "{wire:?}: {}", stderr(&o));
        assert_eq!(fake.problems(), Vec::<String>::new(), "{wire:?}");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("calc.py")).unwrap(),
            "def add(a, b):\n    return a + b\n"
        );
        let requests = fake.requests();
        assert_eq!(requests.len(), 5);
        // The fixer's second call carries the file it read as a tool result.
        let second_fixer_call = requests[2].1.to_string();
        assert!(second_fixer_call.contains("return a - b"), "{wire:?}");
        // The second review continues the first conversation (a cached prefix) and is told
        // what the fixer changed since.
        let second_review = requests[4].1.to_string();
        let first_task = match wire {
            Wire::Anthropic => &requests[0].1["messages"][0]["content"][0]["text"],
            Wire::OpenAi => &requests[0].1["messages"][1]["content"],
            Wire::Responses => &requests[0].1["input"][0]["content"],
        };
        assert!(first_task.as_str().unwrap().contains("iteration 1"));
        assert!(second_review.contains(&first_task.to_string()), "{wire:?}");
        assert!(
            second_review.contains("What changed since your last review"),
            "{wire:?}"
        );
        assert!(
            second_review.contains("+    return a + b"),
            "{wire:?}: {second_review}"
        );
        let r = qa_result(dir.path());
        assert_eq!(
            (r["verdict"].as_str(), r["iterations"].as_u64()),
            (Some("approved"), Some(2))
        );
        assert_key_nowhere(dir.path(), &o);
    }
}

#[test]
fn a_429_is_retried_after_retry_after_then_succeeds() {
    for wire in WIRES {
        let dir = tempfile::tempdir().unwrap();
        fixed_project(dir.path());
        let fake = Fake::start(
            wire,
            vec![
                Reply::Error {
                    status: 429,
                    message: "rate limited".into(),
                    retry_after: Some(1),
                },
                verdict("approved", 90),
            ],
        );
        let started = Instant::now();
        let o = fake.run(dir.path(), &[]);
        assert_eq!(o.status.code(), Some(0), "{wire:?}: {}", stderr(&o));
        assert_eq!(fake.requests().len(), 2);
        // retry-after: 1 beat the 50 ms backoff.
        assert!(started.elapsed() >= Duration::from_secs(1));
        assert!(stderr(&o).contains("HTTP 429"), "{}", stderr(&o));
        let r = qa_result(dir.path());
        assert_eq!(r["errors"], json!([]), "a retried 429 is not a loop error");
    }
}

#[test]
fn a_persistent_500_stops_with_exit_4_in_bounded_time_and_the_key_never_shows() {
    for wire in WIRES {
        let dir = tempfile::tempdir().unwrap();
        project(dir.path(), "model_retries: 2\nmax_consecutive_errors: 2\n");
        // The server echoes the key in its error text; qa-loop must not repeat it.
        let err = Reply::Error {
            status: 500,
            message: format!("internal error for key {KEY}"),
            retry_after: None,
        };
        let fake = Fake::start(wire, vec![err; 20]);
        let started = Instant::now();
        let o = fake.run(dir.path(), &[]);
        assert_eq!(o.status.code(), Some(4), "{wire:?}: {}", stderr(&o));
        // 2 loop errors × (1 + 2 retries), backoff 50 ms doubling: well under 10 s.
        assert_eq!(fake.requests().len(), 6, "{wire:?}");
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
        let r = qa_result(dir.path());
        assert_eq!(r["verdict"], "error");
        let errors = r["errors"].to_string();
        assert!(
            errors.contains("HTTP 500") && errors.contains("after 3 attempts"),
            "{errors}"
        );
        assert!(errors.contains("***"), "the echoed key is masked: {errors}");
        assert_key_nowhere(dir.path(), &o);
    }
}

/// A refused key (HTTP 401) stops the run at once on every wire: one request, one error naming
/// the provider and where the key came from, exit 4 — never retried until
/// `max_consecutive_errors`.
#[test]
fn a_refused_key_stops_at_once_with_exit_4() {
    for wire in WIRES {
        let dir = tempfile::tempdir().unwrap();
        project(dir.path(), "model_retries: 2\nmax_consecutive_errors: 3\n");
        let refused = Reply::Error {
            status: 401,
            message: "invalid x-api-key".into(),
            retry_after: None,
        };
        let fake = Fake::start(wire, vec![refused; 5]);
        let o = fake.run(dir.path(), &[]);
        assert_eq!(o.status.code(), Some(4), "{wire:?}: {}", stderr(&o));
        assert_eq!(fake.requests().len(), 1, "{wire:?}");
        let r = qa_result(dir.path());
        let errors = r["errors"].as_array().unwrap();
        assert_eq!(errors.len(), 1, "{wire:?}: {errors:?}");
        let text = errors[0].as_str().unwrap();
        assert!(
            text.contains("HTTP 401")
                && text.contains("refused the key")
                && text.contains("API_KEY"),
            "{wire:?}: {text}"
        );
        assert_key_nowhere(dir.path(), &o);
    }
}

#[test]
fn a_malformed_verdict_gets_one_repair_request_then_is_accepted() {
    for wire in WIRES {
        let dir = tempfile::tempdir().unwrap();
        fixed_project(dir.path());
        let fake = Fake::start(
            wire,
            vec![text("Looks fine to me, ship it."), verdict("approved", 88)],
        );
        let o = fake.run(dir.path(), &[]);
        assert_eq!(o.status.code(), Some(0), "{wire:?}: {}", stderr(&o));
        assert_eq!(fake.problems(), Vec::<String>::new(), "{wire:?}");
        let requests = fake.requests();
        assert_eq!(requests.len(), 2);
        let turns = match wire {
            Wire::Responses => &requests[1].1["input"],
            _ => &requests[1].1["messages"],
        };
        let last = turns.as_array().unwrap().last().unwrap().to_string();
        assert!(last.contains("could not be read"), "{wire:?}: {last}");
        assert_eq!(qa_result(dir.path())["errors"], json!([]));
    }
}

#[test]
fn a_spent_budget_stops_with_exit_4_and_a_partial_report() {
    for (wire, limit) in [
        (Wire::Anthropic, ["--max-tokens", "2000"]),
        (Wire::OpenAi, ["--max-cost-usd", "0.004"]),
    ] {
        let dir = tempfile::tempdir().unwrap();
        project(dir.path(), "");
        // Each call: 1000 in + 100 out (GPT-4.1: $0.0028). The review and one fixer call fit;
        // the fixer's second call would pass the limit and is never made.
        let fake = Fake::start(
            wire,
            vec![
                verdict("rejected", 30),
                tool("read_file", json!({"path": "calc.py"})),
                tool("finish", json!({"summary": "never reached"})),
            ],
        );
        let o = fake.run(dir.path(), &limit);
        assert_eq!(o.status.code(), Some(4), "{wire:?}: {}", stderr(&o));
        assert_eq!(fake.requests().len(), 2, "{wire:?}");
        let r = qa_result(dir.path());
        assert_eq!(r["verdict"], "error");
        // The findings so far are reported.
        assert_eq!(
            r["issues"][0]["title"], "add subtracts instead of adding",
            "{wire:?}"
        );
        let report = std::fs::read_to_string(dir.path().join(".qa-loop/qa_report.md")).unwrap();
        assert!(
            report.contains("add subtracts instead of adding"),
            "{report}"
        );
        assert!(report.to_lowercase().contains("budget"), "{report}");
    }
}

#[test]
fn usage_errors_name_what_is_missing_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    project(dir.path(), "");
    let run = |args: &[&str], env: &[(&str, &str)]| {
        let mut c = Command::cargo_bin("qa-loop").unwrap();
        c.current_dir(dir.path())
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("OPENAI_API_KEY")
            .env_remove("QA_LOOP_API_KEY");
        for (k, v) in env {
            c.env(k, v);
        }
        c.arg("run").args(args).output().unwrap()
    };
    let o = run(&["--provider", "anthropic"], &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("ANTHROPIC_API_KEY"), "{}", stderr(&o));
    let o = run(
        &[
            "--provider",
            "openai-compatible",
            "--base-url",
            "http://127.0.0.1:9/v1",
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--model"), "{}", stderr(&o));
    let o = run(
        &["--provider", "openai-compatible", "--model", "llama3.1"],
        &[],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--base-url"), "{}", stderr(&o));
    let o = run(
        &[
            "--provider",
            "openai-compatible",
            "--model",
            "llama3.1",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--max-cost-usd",
            "1",
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("models:"), "{}", stderr(&o));
    assert!(!dir.path().join(".qa-loop").exists(), "nothing written");
}

#[test]
fn azure_openai_gets_its_url_shape_and_api_key_header() {
    type Seen = Arc<Mutex<Vec<(String, HeaderMap)>>>;
    async fn azure(
        State(seen): State<Seen>,
        uri: axum::http::Uri,
        headers: HeaderMap,
        Json(body): Json<Value>,
    ) -> Response {
        seen.lock().unwrap().push((uri.to_string(), headers));
        if let Err(p) = check_request(Wire::OpenAi, &HeaderMap::new(), &body).or_else(|e| {
            if e.contains("API key") {
                Ok(())
            } else {
                Err(e)
            }
        }) {
            return error_response(Wire::OpenAi, 400, &p, None);
        }
        let verdict = json!({"status": "approved", "score": 90, "confidence": 0.9,
                             "summary": "ok", "criteria": [], "issues": []});
        Json(answer(
            Wire::OpenAi,
            1,
            "",
            &[("submit_verdict".into(), verdict)],
            500,
            50,
        ))
        .into_response()
    }
    let seen: Seen = Arc::default();
    let addr = serve(
        axum::Router::new()
            .route(
                "/openai/deployments/gpt4o/chat/completions",
                axum::routing::post(azure),
            )
            .with_state(seen.clone()),
    );
    let dir = tempfile::tempdir().unwrap();
    fixed_project(dir.path());
    let o = Command::cargo_bin("qa-loop")
        .unwrap()
        .current_dir(dir.path())
        .env_remove("GITHUB_BASE_REF")
        .env("OPENAI_API_KEY", "sk-openai-must-not-travel")
        .env("QA_LOOP_API_KEY", KEY)
        .args([
            "run",
            "--provider",
            "openai-compatible",
            "--model",
            "gpt-4o",
        ])
        .args([
            "--base-url",
            &format!("http://{addr}/openai/deployments/gpt4o"),
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1);
    let (uri, headers) = &seen[0];
    assert_eq!(
        uri,
        "/openai/deployments/gpt4o/chat/completions?api-version=2025-04-01-preview"
    );
    assert_eq!(headers.get("api-key").unwrap(), KEY);
    assert!(headers.get("authorization").is_none());
    assert!(!format!("{headers:?}").contains("sk-openai-must-not-travel"));
}

/// A stuck upstream and a body cut mid-JSON: neither hangs the run nor passes for an answer. The
/// request timeout (`model_timeout: 1s`) ends the wait and the request is retried; the cut body is
/// an error the loop counts, and the next answer is used.
#[test]
fn a_model_timeout_and_a_truncated_body_are_survived_without_hanging() {
    for wire in WIRES {
        let dir = tempfile::tempdir().unwrap();
        project(dir.path(), "model_timeout: 1s\nmodel_retries: 2\n");
        std::fs::write(
            dir.path().join("calc.py"),
            "def add(a, b):\n    return a + b\n",
        )
        .unwrap();
        let fake = Fake::start(
            wire,
            vec![
                Reply::Hang(Duration::from_secs(30)),
                Reply::Truncated,
                verdict("approved", 90),
                verdict("approved", 90),
            ],
        );
        let started = Instant::now();
        let o = fake.run(dir.path(), &[]);
        assert_eq!(o.status.code(), Some(0), "{wire:?}: {}", stderr(&o));
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "{wire:?}: {:?}",
            started.elapsed()
        );
        let r = qa_result(dir.path());
        assert_eq!(r["verdict"], "approved", "{wire:?}");
        let err = stderr(&o);
        // The hang: timed out and retried; the cut body: one loop error; then the answer.
        assert_eq!(fake.requests().len(), 3, "{wire:?}");
        let errors = r["errors"].as_array().unwrap();
        assert_eq!(errors.len(), 1, "{wire:?}: {errors:?}");
        assert!(
            errors[0].as_str().unwrap().contains("not JSON"),
            "{errors:?}"
        );
        assert!(
            err.contains("timed out") || err.contains("timeout"),
            "{wire:?}: {err}"
        );
        assert_key_nowhere(dir.path(), &o);
    }
}

/// Canaries for the GitHub side (the job's token, qa-loop's own GitHub token, the push token)
/// never reach the model: a test command prints its whole environment into a failing gate, whose
/// output the reviewer is shown — the output is there (`PATH=`), the canaries are not, in no
/// request (headers or body) and no report.
#[test]
fn github_canaries_never_reach_the_model_even_through_a_printed_environment() {
    let canaries = [
        ("GITHUB_TOKEN", "ghs_canary_job_token_41"),
        ("QA_LOOP_GITHUB_TOKEN", "ghs_canary_qa_token_42"),
        ("QA_LOOP_PUSH_TOKEN", "ghp_canary_push_token_43"),
        ("INPUT_PUSH-TOKEN", "ghp_canary_push_token_44"),
    ];
    for wire in WIRES {
        let dir = tempfile::tempdir().unwrap();
        project(dir.path(), "");
        std::fs::write(
            dir.path().join("qa-loop.yml"),
            "risk_level: low\nunit_tests:\n  commands: [\"env; exit 1\"]\nmodel_retry_backoff: 50ms\n",
        )
        .unwrap();
        let fake = Fake::start(wire, vec![verdict("approved", 90)]);
        let o = fake.run_env(dir.path(), &["--mode", "review"], &canaries);
        assert_eq!(o.status.code(), Some(1), "{wire:?}: {}", stderr(&o));
        let sent: String = fake
            .requests()
            .iter()
            .map(|(h, b)| format!("{h:?}\n{b}"))
            .collect();
        assert!(
            sent.contains("PATH="),
            "{wire:?}: the printed environment reached the model"
        );
        let mut texts = vec![
            sent,
            stderr(&o),
            String::from_utf8_lossy(&o.stdout).into_owned(),
        ];
        for f in walk(&dir.path().join(".qa-loop")) {
            texts.push(std::fs::read_to_string(f).unwrap_or_default());
        }
        for (name, canary) in canaries {
            for t in &texts {
                assert!(!t.contains(canary), "{wire:?}: {name} leaked");
            }
        }
        assert_key_nowhere(dir.path(), &o);
    }
}

/// Issue 17: an answer cut at the output limit without a tool call was "fixes applied" for
/// nothing. Now the agent is asked once to end its turn, and cut again it is a loop error.
#[test]
fn an_answer_cut_at_max_tokens_is_continued_once_then_an_error_never_fixes_applied() {
    for wire in WIRES {
        let dir = tempfile::tempdir().unwrap();
        project(dir.path(), "max_consecutive_errors: 1\n");
        let cut = match wire {
            Wire::Anthropic => "max_tokens",
            Wire::OpenAi | Wire::Responses => "length",
        };
        let fake = Fake::start(
            wire,
            vec![
                verdict("rejected", 40),
                stopped(wire, "I will change calc.py so that add", cut),
                stopped(wire, "As I was saying, add must", cut),
            ],
        );
        let o = fake.run(dir.path(), &[]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(4), "{wire:?}: {err}");
        assert!(!err.contains("fixes applied"), "{wire:?}: {err}");
        let errors = qa_result(dir.path())["errors"].to_string();
        assert!(
            errors.contains("cut at the output limit"),
            "{wire:?}: {errors}"
        );
        let requests = fake.requests();
        assert_eq!(requests.len(), 3, "{wire:?}");
        assert!(
            requests[2]
                .1
                .to_string()
                .contains("Your answer was cut off at the output limit"),
            "{wire:?}: the second fixer request asks to end the turn"
        );
        assert!(fake.problems().is_empty(), "{:?}", fake.problems());
    }
}

/// Issue 17: a refusal or a content filter was "the answer was empty"; now it is a loop error
/// that names it.
#[test]
fn a_refusal_or_content_filter_is_an_error_that_names_it() {
    for (wire, reason) in [
        (Wire::Anthropic, "refusal"),
        (Wire::OpenAi, "content_filter"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        fixed_project(dir.path());
        let fake = Fake::start(wire, vec![stopped(wire, "", reason)]);
        let o = fake.run(dir.path(), &["--max-consecutive-errors", "1"]);
        assert_eq!(o.status.code(), Some(4), "{wire:?}: {}", stderr(&o));
        let errors = qa_result(dir.path())["errors"].to_string();
        assert!(
            errors.contains("refused") && errors.contains(reason),
            "{wire:?}: {errors}"
        );
    }
}

/// Issue 17: after an empty (or whitespace-only) answer, the next request carried an OpenAI
/// assistant message with `content: null` and no `tool_calls`, or a whitespace-only Anthropic
/// text block — both refused with 400 by the real APIs (the fake refuses them too).
#[test]
fn the_request_after_an_empty_answer_is_valid() {
    for wire in WIRES {
        let dir = tempfile::tempdir().unwrap();
        fixed_project(dir.path());
        let fake = Fake::start(wire, vec![text(" \n "), verdict("approved", 90)]);
        let o = fake.run(dir.path(), &[]);
        assert!(
            fake.problems().is_empty(),
            "{wire:?}: {:?}",
            fake.problems()
        );
        assert_eq!(o.status.code(), Some(0), "{wire:?}: {}", stderr(&o));
        assert_eq!(fake.requests().len(), 2, "{wire:?}: one repair request");
    }
}

/// Issue 17: `insufficient_quota` (a 429 no retry can fix) was retried over a minute; it now
/// fails at once with the provider's message.
#[test]
fn insufficient_quota_is_not_retried() {
    let dir = tempfile::tempdir().unwrap();
    fixed_project(dir.path());
    let quota = Reply::Raw {
        status: 429,
        body: json!({"error": {"message": "You exceeded your current quota, please check your plan and billing details.",
                               "type": "insufficient_quota", "param": null, "code": "insufficient_quota"}}),
    };
    let fake = Fake::start(Wire::OpenAi, vec![quota; 10]);
    let o = fake.run(dir.path(), &["--max-consecutive-errors", "1"]);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    assert_eq!(fake.requests().len(), 1, "not retried");
    let errors = qa_result(dir.path())["errors"].to_string();
    assert!(errors.contains("exceeded your current quota"), "{errors}");
}

/// Issue 17: a router's HTTP 200 carrying `{"error": …}` was a fatal "no choices[0].message"
/// and its message was lost. Now it is read as an error: retried when its code says so, else
/// reported with its message.
#[test]
fn an_error_inside_a_200_is_an_error_with_its_message() {
    let dir = tempfile::tempdir().unwrap();
    fixed_project(dir.path());
    let error = |code: u16, message: &str| Reply::Raw {
        status: 200,
        body: json!({"error": {"message": message, "code": code}}),
    };
    let fake = Fake::start(
        Wire::OpenAi,
        vec![error(502, "Upstream overloaded"), verdict("approved", 90)],
    );
    let o = fake.run(dir.path(), &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("Upstream overloaded"), "{}", stderr(&o));
    assert_eq!(fake.requests().len(), 2, "retried");

    let dir = tempfile::tempdir().unwrap();
    fixed_project(dir.path());
    let fake = Fake::start(
        Wire::OpenAi,
        vec![error(400, "Provider returned error: bad tools")],
    );
    let o = fake.run(dir.path(), &["--max-consecutive-errors", "1"]);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    assert_eq!(fake.requests().len(), 1, "not retried");
    let errors = qa_result(dir.path())["errors"].to_string();
    assert!(
        errors.contains("Provider returned error: bad tools"),
        "{errors}"
    );
}

/// Issue 17: a `retry-after` longer than the policy's cap gave up at once (the error budget gone
/// in under a second); it is now honoured when the run has the time, and otherwise the run
/// stops with a message naming the wait. And the run's time limit bounds a call in flight: a
/// `--timeout 3s` run against a model that hangs ended after the model's own timeout.
#[test]
fn retries_and_calls_respect_the_run_s_time_limit() {
    let dir = tempfile::tempdir().unwrap();
    fixed_project(dir.path());
    let wait = Reply::Error {
        status: 429,
        message: "rate limited".into(),
        retry_after: Some(3600),
    };
    let fake = Fake::start(Wire::Anthropic, vec![wait; 5]);
    let o = fake.run(dir.path(), &["--timeout", "20s"]);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    assert_eq!(
        fake.requests().len(),
        1,
        "the run stops: no call can succeed in time"
    );
    let r = qa_result(dir.path()).to_string();
    assert!(
        r.contains("asked to wait 3600 s, more than the run has left"),
        "{r}"
    );

    let dir = tempfile::tempdir().unwrap();
    fixed_project(dir.path());
    let fake = Fake::start(Wire::OpenAi, vec![Reply::Hang(Duration::from_secs(120))]);
    let started = Instant::now();
    let o = fake.run(dir.path(), &["--timeout", "3s"]);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    // Bounded by the run's limit, not the model's 5-minute request timeout.
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "{:?}",
        started.elapsed()
    );
    let r = qa_result(dir.path());
    assert!(r.to_string().contains("time"), "{r}");
}

/// Issue 17: compatible servers' known failures say what to change on the server — a default
/// vLLM refuses tools; Ollama silently truncates a prompt beyond its context length (seen as a
/// prompt far larger than the tokens the server counted).
#[test]
fn compatible_servers_known_failures_name_the_server_setting() {
    let dir = tempfile::tempdir().unwrap();
    fixed_project(dir.path());
    let vllm = Reply::Raw {
        status: 400,
        body: json!({"object": "error", "type": "BadRequestError", "param": null, "code": 400,
            "message": "\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set"}),
    };
    let fake = Fake::start(Wire::OpenAi, vec![vllm]);
    let o = fake.run(dir.path(), &["--max-consecutive-errors", "1"]);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    let errors = qa_result(dir.path())["errors"].to_string();
    assert!(
        errors.contains("started with `--enable-auto-tool-choice --tool-call-parser"),
        "{errors}"
    );

    // A change of about 35 KB reviewed by a server that says it read 1 000 prompt tokens.
    let dir = tempfile::tempdir().unwrap();
    fixed_project(dir.path());
    let big: String = (0..700)
        .map(|i| format!("line {i} of a long file\n"))
        .collect();
    std::fs::write(dir.path().join("big.txt"), &big).unwrap();
    git(dir.path(), &["add", "big.txt"]);
    git(dir.path(), &["commit", "-q", "-m", "big"]);
    std::fs::write(dir.path().join("big.txt"), big.replace("line", "LINE")).unwrap();
    let fake = Fake::start(Wire::OpenAi, vec![verdict("approved", 90)]);
    let o = fake.run(dir.path(), &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let sent = fake.requests()[0].1.to_string().len();
    assert!(sent > 30_000, "the prompt is large: {sent} bytes");
    assert!(
        stderr(&o).contains("likely truncated the prompt (Ollama: raise OLLAMA_CONTEXT_LENGTH"),
        "{}",
        stderr(&o)
    );
}

/// Every request body of a fix-mode run — an empty answer and its repair request, a rejection,
/// the fixer's tool loop, a cut answer continued, the approval — recorded per wire for
/// `scripts/validate-requests.py`, which `.ci/run` uses to check them against OpenAI's OpenAPI
/// description and the `anthropic` SDK's request types.
#[test]
fn request_bodies_of_a_fix_mode_run_are_recorded_for_the_providers_schemas() {
    for wire in WIRES {
        let dir = tempfile::tempdir().unwrap();
        project(dir.path(), "");
        let cut = match wire {
            Wire::Anthropic => "max_tokens",
            Wire::OpenAi | Wire::Responses => "length",
        };
        let fake = Fake::start(
            wire,
            vec![
                text(""),
                verdict("rejected", 30),
                stopped(wire, "Let me look", cut),
                tool("read_file", json!({"path": "calc.py"})),
                tool(
                    "edit_file",
                    json!({"path": "calc.py", "old": "return a - b", "new": "return a + b"}),
                ),
                tool("finish", json!({"summary": "Q1: add now adds"})),
                verdict("approved", 90),
            ],
        );
        let o = fake.run(dir.path(), &["--reviewer-thinking", "2048"]);
        assert_eq!(o.status.code(), Some(0), "{wire:?}: {}", stderr(&o));
        assert_eq!(fake.problems(), Vec::<String>::new(), "{wire:?}");
        let bodies: Vec<Value> = fake.requests().into_iter().map(|(_, b)| b).collect();
        assert_eq!(bodies.len(), 7, "{wire:?}");
        let name = match wire {
            Wire::Anthropic => "requests-anthropic.json",
            Wire::OpenAi => "requests-openai.json",
            Wire::Responses => "requests-responses.json",
        };
        let mut bodies = bodies;
        if wire == Wire::Anthropic {
            // Also a Claude 5 run: adaptive thinking with an effort, streamed.
            let dir = tempfile::tempdir().unwrap();
            fixed_project(dir.path());
            let fake = Fake::start(wire, vec![verdict("approved", 90)]);
            let o = fake.run(
                dir.path(),
                &[
                    "--reviewer-thinking",
                    "high",
                    "--reviewer-model",
                    "claude-sonnet-5-5",
                ],
            );
            assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
            let streamed = fake.requests()[0].1.clone();
            assert_eq!(streamed["stream"], true);
            bodies.push(streamed);
        }
        let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
        std::fs::write(&out, serde_json::to_string_pretty(&bodies).unwrap()).unwrap();
    }
}

/// Issue 17: thinking blocks were dropped, and Anthropic refuses the next request of a tool loop
/// unless the assistant turn starts with its thinking block, signature intact. A thinking budget
/// per agent goes out as `thinking.budget_tokens` (output limit raised by it) / `reasoning_effort`.
#[test]
fn thinking_goes_back_first_with_its_signature_and_budgets_reach_the_request() {
    let dir = tempfile::tempdir().unwrap();
    fixed_project(dir.path());
    let thought = Reply::Raw {
        status: 200,
        body: json!({
            "id": "msg_t", "type": "message", "role": "assistant", "model": "claude-sonnet-4-6",
            "content": [
                {"type": "thinking", "thinking": "Check calc.py first.", "signature": "EqQBCkgIARABGAIiQ-sig"},
                {"type": "tool_use", "id": "toolu_t1", "name": "read_file", "input": {"path": "calc.py"}}
            ],
            "stop_reason": "tool_use", "stop_sequence": null,
            "usage": {"input_tokens": 1000, "output_tokens": 100,
                      "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        }),
    };
    let fake = Fake::start(Wire::Anthropic, vec![thought, verdict("approved", 90)]);
    let o = fake.run(dir.path(), &["--reviewer-thinking", "2048"]);
    assert_eq!(fake.problems(), Vec::<String>::new());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let requests = fake.requests();
    assert_eq!(
        requests[0].1["thinking"],
        json!({"type": "enabled", "budget_tokens": 2048})
    );
    assert_eq!(requests[0].1["max_tokens"], 8192 + 2048);
    let turn = &requests[1].1["messages"][1];
    assert_eq!(turn["role"], "assistant");
    assert_eq!(
        turn["content"][0],
        json!({"type": "thinking", "thinking": "Check calc.py first.", "signature": "EqQBCkgIARABGAIiQ-sig"})
    );

    // A reasoning model gets the effort; one that does not reason gets none (the API answers
    // 400 to it), with a warning.
    let dir = tempfile::tempdir().unwrap();
    fixed_project(dir.path());
    let fake = Fake::start(Wire::OpenAi, vec![verdict("approved", 90)]);
    let o = fake.run(
        dir.path(),
        &["--reviewer-thinking", "20000", "--reviewer-model", "gpt-5"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(fake.requests()[0].1["reasoning_effort"], "high");
    let dir = tempfile::tempdir().unwrap();
    fixed_project(dir.path());
    let fake = Fake::start(Wire::OpenAi, vec![verdict("approved", 90)]);
    let o = fake.run(dir.path(), &["--reviewer-thinking", "high"]);
    assert_eq!(fake.problems(), Vec::<String>::new());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(fake.requests()[0].1.get("reasoning_effort").is_none());
    assert!(
        stderr(&o).contains("`gpt-4.1` does not think"),
        "{}",
        stderr(&o)
    );
}

/// Issue 17: the Claude 5 family answers 400 to a thinking budget (adaptive thinking with an
/// effort level instead), and an output limit past what the SDK sends without streaming needs a
/// streamed request. The answer arrives as events — thinking, its signature and a tool call in
/// pieces — and the thinking goes back first in the next request; a stream cut in the middle is
/// retried.
#[test]
fn claude_5_thinks_adaptively_and_long_answers_stream() {
    let dir = tempfile::tempdir().unwrap();
    fixed_project(dir.path());
    let thought = Reply::Raw {
        status: 200,
        body: json!({
            "id": "msg_t", "type": "message", "role": "assistant", "model": "claude-sonnet-5-5",
            "content": [
                {"type": "thinking", "thinking": "Check calc.py first.", "signature": "EqQBCkgIARABGAIiQ-sig"},
                {"type": "tool_use", "id": "toolu_t1", "name": "read_file", "input": {"path": "calc.py"}}
            ],
            "stop_reason": "tool_use", "stop_sequence": null,
            "usage": {"input_tokens": 1000, "output_tokens": 100,
                      "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        }),
    };
    let fake = Fake::start(
        Wire::Anthropic,
        vec![thought, Reply::Truncated, verdict("approved", 90)],
    );
    let o = fake.run(
        dir.path(),
        &[
            "--reviewer-thinking",
            "high",
            "--reviewer-model",
            "claude-sonnet-5-5",
        ],
    );
    assert_eq!(fake.problems(), Vec::<String>::new());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let requests = fake.requests();
    assert_eq!(requests.len(), 3);
    let first = &requests[0].1;
    assert_eq!(first["thinking"], json!({"type": "adaptive"}));
    assert_eq!(first["output_config"], json!({"effort": "high"}));
    assert_eq!(first["max_tokens"], 8192 + 32_000);
    assert_eq!(first["stream"], true);
    // The cut stream was retried with the same request, thinking first.
    for r in &requests[1..] {
        let turn = &r.1["messages"][1];
        assert_eq!(
            turn["content"][0],
            json!({"type": "thinking", "thinking": "Check calc.py first.", "signature": "EqQBCkgIARABGAIiQ-sig"})
        );
        assert_eq!(turn["content"][1]["input"], json!({"path": "calc.py"}));
    }
    assert!(stderr(&o).contains("retrying"), "{}", stderr(&o));
}

#[test]
fn a_test_run_that_rewrites_the_checkout_does_not_change_the_reviewed_diff() {
    // The change's own tests append a line to calc.py while they run (hiding or adding code
    // after the fact). The reviewer is shown the change as it was before its code ran in the
    // pass — with no pattern check or coverage asking for it earlier.
    let dir = tempfile::tempdir().unwrap();
    project(dir.path(), "");
    std::fs::write(
        dir.path().join("qa-loop.yml"),
        "risk_level: low\nmodel_retry_backoff: 50ms\npattern_checks:\n  enabled: false\nunit_tests:\n  commands: [\"python3 test_calc.py; printf 'REWRITTEN_BY_THE_TESTS = 1\\\\n' >> calc.py\"]\n",
    )
    .unwrap();
    git(dir.path(), &["add", "-A"]);
    git(dir.path(), &["commit", "-q", "-m", "config"]);
    std::fs::write(
        dir.path().join("calc.py"),
        "def add(a, b):\n    return a + b\n",
    )
    .unwrap();
    let fake = Fake::start(Wire::Anthropic, vec![verdict("approved", 92)]);
    let o = fake.run(dir.path(), &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let written = std::fs::read_to_string(dir.path().join("calc.py")).unwrap();
    assert!(written.contains("REWRITTEN_BY_THE_TESTS"), "{written}");
    let requests = fake.requests();
    let task = requests[0].1["messages"][0]["content"][0]["text"]
        .as_str()
        .unwrap();
    assert!(task.contains("+    return a + b"), "{task}");
    assert!(!task.contains("REWRITTEN_BY_THE_TESTS"), "{task}");
}
