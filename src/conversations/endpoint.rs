//! Talking to the agent under test: an OpenAI chat-completions body (the whole conversation is
//! resent each turn) or the project's own JSON template (`{{text}}`, `{{session}}`) with the reply
//! read at `response_path`. Replies may be streamed (server-sent events); qa-loop waits for the
//! whole reply. The session id goes along in the body (`user` / `{{session}}`) and in an
//! `X-Session-Id` header.
//!
//! The pure parts (body, reply extraction, SSE) are separate from the one HTTP call.

use std::time::Duration;

use serde_json::{Value, json};

use crate::config::ConversationsConfig;

/// The longest reply read (bytes); longer ones are an error rather than a memory risk.
const MAX_REPLY_BYTES: usize = 2 * 1024 * 1024;

/// How an error that no connection could be made starts.
pub const UNREACHABLE: &str = "cannot reach the agent at";

/// What the agent's endpoint speaks.
#[derive(Debug, Clone, PartialEq)]
pub enum Wire {
    ChatCompletions,
    Template {
        template: String,
        response_path: String,
    },
}

/// The agent's chat endpoint.
#[derive(Debug, Clone)]
pub struct Endpoint {
    pub url: String,
    pub wire: Wire,
    client: reqwest::Client,
}

/// Who said a line of the conversation with the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    User,
    Agent,
}

impl Endpoint {
    /// The endpoint of a checked config (it has `endpoint` whenever it has scenarios).
    pub fn new(cfg: &ConversationsConfig) -> Result<Endpoint, String> {
        let url = cfg
            .endpoint
            .clone()
            .ok_or("conversations: no `endpoint` configured")?;
        let wire = match (&cfg.request_template, &cfg.response_path) {
            (Some(t), Some(p)) => Wire::Template {
                template: t.clone(),
                response_path: p.clone(),
            },
            _ => Wire::ChatCompletions,
        };
        // Each reply is bounded by the scenario's deadline, not by the client.
        let client = crate::llm::http::https_client(Duration::from_secs(24 * 3600))?;
        Ok(Endpoint { url, wire, client })
    }

    /// The request body for the next user message `text`, after `history`.
    pub fn body(&self, history: &[(Role, String)], text: &str, session: &str) -> String {
        match &self.wire {
            Wire::ChatCompletions => {
                let mut messages: Vec<Value> = history
                    .iter()
                    .map(|(role, content)| {
                        json!({"role": match role { Role::User => "user", Role::Agent => "assistant" },
                               "content": content})
                    })
                    .collect();
                messages.push(json!({"role": "user", "content": text}));
                json!({"messages": messages, "stream": false, "user": session}).to_string()
            }
            Wire::Template { template, .. } => render_template(template, text, session),
        }
    }

    /// Sends one user message and waits for the agent's whole reply.
    pub async fn send(
        &self,
        history: &[(Role, String)],
        text: &str,
        session: &str,
    ) -> Result<String, String> {
        let response = self
            .client
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("x-session-id", session)
            .body(self.body(history, text, session))
            .send()
            .await
            .map_err(|e| {
                if e.is_connect() {
                    format!("{UNREACHABLE} {}: {}", self.url, error_chain(&e))
                } else {
                    // Connected, but the request failed (the handler died mid-request).
                    format!(
                        "the request to the agent at {} failed: {}",
                        self.url,
                        error_chain(&e)
                    )
                }
            })?;
        let status = response.status();
        let streamed = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        let mut response = response;
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| format!("the agent's reply broke off: {}", error_chain(&e)))?
        {
            body.extend_from_slice(&chunk);
            if body.len() > MAX_REPLY_BYTES {
                return Err(format!(
                    "the agent's reply is larger than {} MiB",
                    MAX_REPLY_BYTES / (1024 * 1024)
                ));
            }
            if streamed && sse_done(&body) {
                break;
            }
        }
        let text = String::from_utf8_lossy(&body);
        if !status.is_success() {
            return Err(format!(
                "the agent answered HTTP {}: {}",
                status.as_u16(),
                crate::text::clip(text.trim(), 300)
            ));
        }
        self.reply_text(&text, streamed)
    }

    /// The reply text of a response body (`streamed`: server-sent events).
    pub fn reply_text(&self, body: &str, streamed: bool) -> Result<String, String> {
        if streamed || body.trim_start().starts_with("data:") {
            let mut out = String::new();
            for data in sse_data(body) {
                if data.trim() == "[DONE]" {
                    break;
                }
                match serde_json::from_str::<Value>(&data) {
                    Ok(v) => out.push_str(&self.chunk_text(&v)),
                    // A plain-text event stream.
                    Err(_) if matches!(self.wire, Wire::Template { .. }) => out.push_str(&data),
                    Err(e) => return Err(format!("a streamed event is not JSON: {e}")),
                }
            }
            return Ok(out);
        }
        let value: Value = serde_json::from_str(body).map_err(|e| {
            format!(
                "the agent's reply is not JSON ({e}): {}",
                crate::text::clip(body.trim(), 200)
            )
        })?;
        match &self.wire {
            Wire::ChatCompletions => {
                let content = value.pointer("/choices/0/message/content").ok_or_else(|| {
                    format!(
                        "the agent's reply has no `choices[0].message.content`: {}",
                        crate::text::clip(&value.to_string(), 200)
                    )
                })?;
                Ok(content_text(content))
            }
            Wire::Template { response_path, .. } => match lookup(&value, response_path) {
                Some(Value::String(s)) => Ok(s.clone()),
                Some(v @ (Value::Number(_) | Value::Bool(_))) => Ok(v.to_string()),
                Some(Value::Array(parts)) if parts.iter().all(Value::is_string) => Ok(parts
                    .iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join("")),
                Some(other) => Err(format!(
                    "`response_path: {response_path}` holds {}, not text",
                    kind(other)
                )),
                None => Err(format!(
                    "`response_path: {response_path}` is not in the agent's reply: {}",
                    crate::text::clip(&value.to_string(), 200)
                )),
            },
        }
    }

    /// The text one streamed event adds.
    fn chunk_text(&self, v: &Value) -> String {
        match &self.wire {
            Wire::ChatCompletions => v
                .pointer("/choices/0/delta/content")
                .or_else(|| v.pointer("/choices/0/message/content"))
                .map(content_text)
                .unwrap_or_default(),
            Wire::Template { response_path, .. } => match lookup(v, response_path) {
                Some(Value::String(s)) => s.clone(),
                _ => String::new(),
            },
        }
    }
}

/// A message `content`: a string, or an array of parts with `text`.
fn content_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str).or(p.as_str()))
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// `{{text}}` and `{{session}}` replaced by JSON strings, in one pass (a user message holding
/// `{{session}}` stays as written).
pub fn render_template(template: &str, text: &str, session: &str) -> String {
    let mut out = String::with_capacity(template.len() + text.len());
    let mut rest = template;
    while let Some(at) = rest.find("{{") {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        if let Some(after) = tail.strip_prefix("{{text}}") {
            out.push_str(&Value::from(text).to_string());
            rest = after;
        } else if let Some(after) = tail.strip_prefix("{{session}}") {
            out.push_str(&Value::from(session).to_string());
            rest = after;
        } else {
            out.push_str("{{");
            rest = &tail[2..];
        }
    }
    out.push_str(rest);
    out
}

/// The value at a dotted path (`reply`, `data.messages.0.text`; a leading `$.` is allowed).
pub fn lookup<'a>(value: &'a Value, path: &str) -> Option<&'a Value> {
    let path = path.trim();
    let path = path.strip_prefix("$.").unwrap_or(path);
    path.split('.')
        .filter(|s| !s.is_empty())
        .try_fold(value, |v, key| match v {
            Value::Object(m) => m.get(key),
            Value::Array(a) => key.parse::<usize>().ok().and_then(|i| a.get(i)),
            _ => None,
        })
}

/// The `data:` payloads of a server-sent event stream, one per event (multi-line data joined
/// with `\n`).
pub fn sse_data(body: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current: Vec<&str> = Vec::new();
    for line in body.lines() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.is_empty() {
            if !current.is_empty() {
                out.push(current.join("\n"));
                current.clear();
            }
        } else if let Some(d) = line.strip_prefix("data:") {
            current.push(d.strip_prefix(' ').unwrap_or(d));
        }
    }
    if !current.is_empty() {
        out.push(current.join("\n"));
    }
    out
}

/// Whether a stream read so far has ended with `data: [DONE]` (servers that keep the connection
/// open after it are not waited for).
fn sse_done(body: &[u8]) -> bool {
    let tail = &body[body.len().saturating_sub(64)..];
    String::from_utf8_lossy(tail)
        .lines()
        .any(|l| l.trim() == "data: [DONE]" || l.trim() == "data:[DONE]")
}

/// The innermost cause of an error ("Connection refused (os error 111)"), else its own text.
pub(crate) fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    crate::llm::http::root_cause(e)
        .filter(|t| !t.trim().is_empty())
        .unwrap_or_else(|| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint(wire: Wire) -> Endpoint {
        Endpoint {
            url: "http://127.0.0.1:9/chat".into(),
            wire,
            client: crate::llm::http::https_client(Duration::from_secs(1)).unwrap(),
        }
    }

    fn template(t: &str, path: &str) -> Wire {
        Wire::Template {
            template: t.into(),
            response_path: path.into(),
        }
    }

    #[test]
    fn templates_get_json_strings_and_user_text_cannot_break_out() {
        let body = render_template(
            r#"{"message": {{text}}, "session": {{session}}, "keep": "{{other}}"}"#,
            "say \"hi\"\n{{session}}",
            "s-1",
        );
        let v: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["message"], "say \"hi\"\n{{session}}");
        assert_eq!(v["session"], "s-1");
        assert_eq!(v["keep"], "{{other}}");
    }

    #[test]
    fn chat_completions_resend_the_history_and_carry_the_session() {
        let e = endpoint(Wire::ChatCompletions);
        let body: Value = serde_json::from_str(&e.body(
            &[(Role::User, "q".into()), (Role::Agent, "a".into())],
            "next",
            "s-9",
        ))
        .unwrap();
        let roles: Vec<_> = body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        assert_eq!(roles, ["user", "assistant", "user"]);
        assert_eq!(body["messages"][2]["content"], "next");
        assert_eq!(body["user"], "s-9");
        assert_eq!(body["stream"], false);
    }

    #[test]
    fn replies_are_read_plain_streamed_and_by_path() {
        let chat = endpoint(Wire::ChatCompletions);
        assert_eq!(
            chat.reply_text(
                r#"{"choices":[{"message":{"role":"assistant","content":"hello"}}]}"#,
                false
            )
            .unwrap(),
            "hello"
        );
        let stream = "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\n\
                      data: {\"choices\":[{\"delta\":{\"content\":\"hel\"}}]}\n\n\
                      data: {\"choices\":[{\"delta\":{\"content\":\"lo\"}}]}\n\n\
                      data: [DONE]\n\n";
        assert_eq!(chat.reply_text(stream, true).unwrap(), "hello");
        assert!(
            chat.reply_text(r#"{"error":"x"}"#, false)
                .unwrap_err()
                .contains("choices[0].message.content")
        );
        let t = endpoint(template(r#"{"m": {{text}}}"#, "data.messages.1.text"));
        assert_eq!(
            t.reply_text(
                r#"{"data":{"messages":[{"text":"a"},{"text":"b"}]}}"#,
                false
            )
            .unwrap(),
            "b"
        );
        assert!(
            t.reply_text(r#"{"data":{}}"#, false)
                .unwrap_err()
                .contains("is not in the agent's reply")
        );
        let t = endpoint(template(r#"{"m": {{text}}}"#, "reply"));
        assert!(
            t.reply_text(r#"{"reply":{"x":1}}"#, false)
                .unwrap_err()
                .contains("an object")
        );
        assert_eq!(
            t.reply_text(
                "data: {\"reply\":\"a\"}\r\n\r\ndata: {\"reply\":\"b\"}\r\n\r\n",
                true
            )
            .unwrap(),
            "ab"
        );
        assert!(
            t.reply_text("<html>", false)
                .unwrap_err()
                .contains("not JSON")
        );
    }

    #[test]
    fn sse_events_join_multi_line_data_and_done_is_seen() {
        assert_eq!(
            sse_data(": comment\nevent: x\ndata: a\ndata: b\n\ndata:c\n"),
            ["a\nb", "c"]
        );
        assert!(sse_done(b"data: {}\n\ndata: [DONE]\n\n"));
        assert!(!sse_done(b"data: {}\n\n"));
    }
}
