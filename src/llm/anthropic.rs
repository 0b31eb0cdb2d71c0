//! The Anthropic Messages API (`POST /v1/messages`): `tool_use` / `tool_result` blocks, and
//! `cache_control` breakpoints on the stable prefix (tools, system prompt) and on the newest
//! message, so each call of an agent turn reads the previous call's prefix from the cache.

use serde_json::{Value, json};

use super::http::Transport;
use super::types::{Content, Request, Response, Speaker, Stop, ThinkingBudgets, ToolCall, Usage};
use super::{BoxFuture, Provider, ProviderError};
use crate::secrets::Secret;

/// The API version qa-loop speaks.
pub const API_VERSION: &str = "2023-06-01";
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// A current model, on no deprecation list (checked in CI against the `anthropic` SDK's data).
pub const DEFAULT_MODEL: &str = "claude-sonnet-4-6";
/// Output tokens per call (the API requires a limit; every current model allows this many).
pub const MAX_OUTPUT_TOKENS: u32 = 8192;

pub struct Anthropic {
    transport: Transport,
    url: String,
    key: Secret,
    default_model: String,
    thinking: ThinkingBudgets,
}

impl Anthropic {
    pub fn new(
        transport: Transport,
        base_url: Option<&str>,
        key: Secret,
        default_model: Option<&str>,
    ) -> Self {
        let base = base_url.unwrap_or(DEFAULT_BASE_URL).trim_end_matches('/');
        let url = if base.ends_with("/v1") {
            format!("{base}/messages")
        } else {
            format!("{base}/v1/messages")
        };
        Anthropic {
            transport,
            url,
            key,
            default_model: default_model.unwrap_or(DEFAULT_MODEL).to_string(),
            thinking: ThinkingBudgets::default(),
        }
    }

    /// Extended thinking per agent (`thinking.budget_tokens`; the output limit grows by it).
    pub fn with_thinking(mut self, thinking: ThinkingBudgets) -> Self {
        self.thinking = thinking;
        self
    }
}

impl Provider for Anthropic {
    fn name(&self) -> &'static str {
        "anthropic"
    }

    fn complete<'a>(
        &'a self,
        request: &'a Request,
    ) -> BoxFuture<'a, Result<Response, ProviderError>> {
        Box::pin(async move {
            let model = request.model.as_deref().unwrap_or(&self.default_model);
            let mut body = request_body(request, model);
            if let Some(budget) = self.thinking.of(request.role) {
                body["thinking"] = json!({"type": "enabled", "budget_tokens": budget});
                body["max_tokens"] = json!(MAX_OUTPUT_TOKENS + budget);
            }
            let headers = [
                ("x-api-key", self.key.expose().to_string()),
                ("anthropic-version", API_VERSION.to_string()),
            ];
            let answer = self
                .transport
                .post_json("Anthropic", &self.url, &headers, &body)
                .await?;
            parse_response(&answer, model)
        })
    }
}

fn ephemeral() -> Value {
    json!({"type": "ephemeral"})
}

/// The request JSON.
pub fn request_body(request: &Request, model: &str) -> Value {
    let mut tools: Vec<Value> = request
        .tools
        .iter()
        .map(
            |t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}),
        )
        .collect();
    if let Some(last) = tools.last_mut() {
        last["cache_control"] = ephemeral();
    }
    // Turns that end up empty (an answer of whitespace only) are left out, and what is left of
    // one role in a row is one turn: roles alternate, as the API requires.
    let mut messages: Vec<Value> = Vec::new();
    for m in &request.messages {
        let content: Vec<Value> = m.content.iter().filter_map(block).collect();
        if content.is_empty() {
            continue;
        }
        let role = match m.speaker {
            Speaker::User => "user",
            Speaker::Assistant => "assistant",
        };
        match messages.last_mut() {
            Some(last) if last["role"] == role => {
                if let Some(blocks) = last["content"].as_array_mut() {
                    blocks.extend(content);
                }
            }
            _ => messages.push(json!({"role": role, "content": content})),
        }
    }
    // The newest message ends the cacheable prefix of the next call in this turn.
    if let Some(block) = messages
        .last_mut()
        .and_then(|m| m["content"].as_array_mut())
        .and_then(|c| c.last_mut())
        // Thinking blocks take no cache breakpoint.
        .filter(|b| !matches!(b["type"].as_str(), Some("thinking" | "redacted_thinking")))
    {
        block["cache_control"] = ephemeral();
    }
    let mut body = json!({
        "model": model,
        "max_tokens": MAX_OUTPUT_TOKENS,
        "messages": messages,
    });
    if !request.system.is_empty() {
        body["system"] =
            json!([{"type": "text", "text": request.system, "cache_control": ephemeral()}]);
    }
    if !tools.is_empty() {
        body["tools"] = Value::Array(tools);
    }
    body
}

fn block(content: &Content) -> Option<Value> {
    Some(match content {
        // The API refuses empty and whitespace-only text blocks.
        Content::Text(t) if t.trim().is_empty() => return None,
        Content::Reasoning(_) => return None,
        Content::Text(t) => json!({"type": "text", "text": t}),
        Content::ToolCall(c) => json!({
            "type": "tool_use",
            "id": c.id,
            "name": c.name,
            "input": if c.arguments.is_object() { c.arguments.clone() } else { json!({}) },
        }),
        Content::ToolResult {
            call_id,
            content,
            is_error,
        } => {
            let mut b = json!({"type": "tool_result", "tool_use_id": call_id, "content": content});
            if *is_error {
                b["is_error"] = Value::Bool(true);
            }
            b
        }
        Content::Thinking {
            redacted: Some(data),
            ..
        } => json!({"type": "redacted_thinking", "data": data}),
        Content::Thinking {
            thinking,
            signature,
            ..
        } => json!({"type": "thinking", "thinking": thinking, "signature": signature}),
    })
}

/// Reads a Messages API answer. Errors name the field.
pub fn parse_response(answer: &Value, model: &str) -> Result<Response, ProviderError> {
    let bad = |what: &str| {
        ProviderError::Fatal(format!(
            "Anthropic: unexpected answer: {what} (stop_reason {})",
            answer.get("stop_reason").unwrap_or(&Value::Null)
        ))
    };
    let blocks = answer
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("no `content` array"))?;
    let mut response = Response {
        model: answer
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or(model)
            .to_string(),
        ..Response::default()
    };
    for (i, b) in blocks.iter().enumerate() {
        match b.get("type").and_then(Value::as_str) {
            Some("text") => {
                let text = b.get("text").and_then(Value::as_str).unwrap_or_default();
                if !response.text.is_empty() && !text.is_empty() {
                    response.text.push('\n');
                }
                response.text.push_str(text);
            }
            Some("tool_use") => {
                let field = |f: &str| {
                    b.get(f)
                        .and_then(Value::as_str)
                        .map(str::to_string)
                        .ok_or_else(|| bad(&format!("`content[{i}].{f}` missing")))
                };
                response.tool_calls.push(ToolCall {
                    id: field("id")?,
                    name: field("name")?,
                    arguments: b.get("input").cloned().unwrap_or(json!({})),
                });
            }
            Some("thinking") => response.thinking.push(Content::Thinking {
                thinking: b["thinking"].as_str().unwrap_or_default().to_string(),
                signature: b["signature"].as_str().unwrap_or_default().to_string(),
                redacted: None,
            }),
            Some("redacted_thinking") => response.thinking.push(Content::Thinking {
                thinking: String::new(),
                signature: String::new(),
                redacted: Some(b["data"].as_str().unwrap_or_default().to_string()),
            }),
            // Other blocks carry nothing the loop uses.
            _ => {}
        }
    }
    let usage = answer.get("usage");
    let count = |f: &str| {
        usage
            .and_then(|u| u.get(f))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    response.usage = Usage {
        input_tokens: count("input_tokens"),
        output_tokens: count("output_tokens"),
        cache_read_tokens: count("cache_read_input_tokens"),
        cache_write_tokens: count("cache_creation_input_tokens"),
    };
    response.stop = match answer.get("stop_reason").and_then(Value::as_str) {
        Some("max_tokens") => Stop::MaxTokens,
        Some("refusal") => Stop::Refused("refusal".into()),
        Some("pause_turn") => Stop::Paused,
        _ => Stop::Done,
    };
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::types::{AgentRole, Message, ToolSpec};

    fn request() -> Request {
        Request {
            role: AgentRole::Reviewer,
            model: None,
            system: "You review.".into(),
            messages: vec![
                Message::user("Review this."),
                Message {
                    speaker: Speaker::Assistant,
                    content: vec![
                        Content::Text(String::new()),
                        Content::ToolCall(ToolCall {
                            id: "toolu_01".into(),
                            name: "read_file".into(),
                            arguments: json!({"path": "a.py"}),
                        }),
                    ],
                },
                Message {
                    speaker: Speaker::User,
                    content: vec![Content::ToolResult {
                        call_id: "toolu_01".into(),
                        content: "no such file".into(),
                        is_error: true,
                    }],
                },
            ],
            tools: vec![
                ToolSpec {
                    name: "read_file",
                    description: "Read a file.",
                    parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
                },
                ToolSpec {
                    name: "submit_verdict",
                    description: "Submit.",
                    parameters: json!({"type": "object"}),
                },
            ],
        }
    }

    /// The shape of the Messages API reference: system blocks, tools with `input_schema`,
    /// `tool_use`/`tool_result` blocks, and cache breakpoints on tools, system and the newest
    /// message only (the API allows four).
    #[test]
    fn the_request_follows_the_messages_api_with_cache_breakpoints_on_the_stable_prefix() {
        let body = request_body(&request(), "claude-sonnet-4-5");
        assert_eq!(body["model"], "claude-sonnet-4-5");
        assert_eq!(body["max_tokens"], MAX_OUTPUT_TOKENS);
        assert_eq!(
            body["system"],
            json!([{"type": "text", "text": "You review.", "cache_control": {"type": "ephemeral"}}])
        );
        assert_eq!(
            body["tools"][0]["input_schema"]["properties"]["path"]["type"],
            "string"
        );
        assert!(body["tools"][0].get("cache_control").is_none());
        assert_eq!(body["tools"][1]["cache_control"]["type"], "ephemeral");
        let msgs = body["messages"].as_array().unwrap();
        assert_eq!(msgs.len(), 3);
        assert_eq!(
            msgs[0],
            json!({"role": "user", "content": [{"type": "text", "text": "Review this."}]})
        );
        // The empty text block is dropped; the tool call keeps its id and input.
        assert_eq!(
            msgs[1]["content"],
            json!([{"type": "tool_use", "id": "toolu_01", "name": "read_file", "input": {"path": "a.py"}}])
        );
        assert_eq!(
            msgs[2]["content"],
            json!([{"type": "tool_result", "tool_use_id": "toolu_01", "content": "no such file",
                    "is_error": true, "cache_control": {"type": "ephemeral"}}])
        );
        let breakpoints = body.to_string().matches("cache_control").count();
        assert_eq!(breakpoints, 3);
    }

    /// An answer as documented (text + tool_use, usage with cache counts).
    #[test]
    fn answers_are_read_with_their_tool_calls_and_cache_usage() {
        let answer = json!({
            "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
            "content": [
                {"type": "text", "text": "Let me check."},
                {"type": "tool_use", "id": "toolu_02", "name": "run_command", "input": {"command": "pytest -q"}}
            ],
            "stop_reason": "tool_use", "stop_sequence": null,
            "usage": {"input_tokens": 120, "output_tokens": 30, "cache_creation_input_tokens": 2000, "cache_read_input_tokens": 5000}
        });
        let r = parse_response(&answer, "claude-sonnet-4-5").unwrap();
        assert_eq!(r.text, "Let me check.");
        assert_eq!(r.model, "claude-sonnet-4-5-20250929");
        assert_eq!(r.tool_calls[0].name, "run_command");
        assert_eq!(r.tool_calls[0].arguments["command"], "pytest -q");
        assert_eq!(
            r.usage,
            Usage {
                input_tokens: 120,
                output_tokens: 30,
                cache_read_tokens: 5000,
                cache_write_tokens: 2000
            }
        );
        let e = parse_response(&json!({"type": "message", "stop_reason": "end_turn"}), "m")
            .unwrap_err();
        assert!(e.to_string().contains("no `content` array"), "{e}");
        let e = parse_response(
            &json!({"content": [{"type": "tool_use", "name": "x"}]}),
            "m",
        )
        .unwrap_err();
        assert!(e.to_string().contains("content[0].id"), "{e}");
    }

    #[test]
    fn the_url_takes_a_base_with_or_without_v1() {
        let t = Transport::new(Default::default(), None).unwrap();
        let key = Secret::new("k");
        assert_eq!(
            Anthropic::new(t.clone(), None, key.clone(), None).url,
            "https://api.anthropic.com/v1/messages"
        );
        assert_eq!(
            Anthropic::new(t.clone(), Some("http://127.0.0.1:9/v1/"), key.clone(), None).url,
            "http://127.0.0.1:9/v1/messages"
        );
        assert_eq!(
            Anthropic::new(t, Some("http://127.0.0.1:9"), key, None).url,
            "http://127.0.0.1:9/v1/messages"
        );
    }
}
