//! The `replay` provider: answers from a recorded session file, in order. Used by the demo and by
//! tests. Format: docs/replay-sessions.md.

use std::path::Path;
use std::sync::Mutex;

use serde::Deserialize;

use super::types::{AgentRole, Request, Response, ToolCall, Usage};
use super::{BoxFuture, Provider, ProviderError};
use crate::error::InputError;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct SessionFile {
    #[serde(default)]
    #[allow(dead_code)]
    description: String,
    /// `estimated`: calls without their own `usage` report the request's estimated size.
    #[serde(default)]
    usage: SessionUsage,
    calls: Vec<Call>,
}

/// Where replayed token counts come from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum SessionUsage {
    /// Each call's `usage` (0 when absent).
    #[default]
    Recorded,
    /// A call without `usage` reports the request's estimated input tokens (4 bytes a token,
    /// as qa-loop sizes context windows) and its answer's estimated output tokens.
    Estimated,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Call {
    role: AgentRole,
    #[serde(default)]
    text: String,
    #[serde(default)]
    tool_calls: Vec<ToolCall>,
    #[serde(default)]
    usage: Option<Usage>,
    /// Texts the tool results this call answers must contain (checks that a tool really
    /// answered, e.g. an MCP server's result); a missing one is an error naming it.
    #[serde(default)]
    expect_tool_results: Vec<String>,
    /// How many images the message this call answers must carry (screenshots).
    #[serde(default)]
    expect_images: Option<usize>,
    /// Texts the request's messages must hold (the task as the agent got it).
    #[serde(default)]
    expect_in_request: Vec<String>,
    /// Texts the request's messages must not hold.
    #[serde(default)]
    expect_not_in_request: Vec<String>,
}

/// Replays a session's calls in order, checking each is asked by the expected agent.
#[derive(Debug)]
pub struct ReplayProvider {
    calls: Vec<Call>,
    usage: SessionUsage,
    next: Mutex<usize>,
}

impl ReplayProvider {
    /// Parses a session (`path` labels errors).
    pub fn parse(path: &Path, text: &str) -> Result<Self, InputError> {
        let session: SessionFile =
            serde_json::from_str(text).map_err(|e| InputError::from_json(path, &e))?;
        Ok(ReplayProvider {
            calls: session.calls,
            usage: session.usage,
            next: Mutex::new(0),
        })
    }

    pub fn load(path: &Path) -> Result<Self, InputError> {
        let text = crate::nofollow::read_text(path)?;
        Self::parse(path, &text)
    }

    fn answer(&self, request: &Request) -> Result<Response, ProviderError> {
        let mut next = self.next.lock().expect("replay lock");
        let index = *next;
        let call = self.calls.get(index).ok_or_else(|| {
            ProviderError::Fatal(format!(
                "replay session exhausted: the {} asked for call {} but the session has {} calls",
                request.role.as_str(),
                index + 1,
                self.calls.len()
            ))
        })?;
        if call.role != request.role {
            return Err(ProviderError::Fatal(format!(
                "replay session call {} is for the {} but the {} asked",
                index + 1,
                call.role.as_str(),
                request.role.as_str()
            )));
        }
        call.check_tool_results(index + 1, request)?;
        call.check_request_text(index + 1, request)?;
        call.check_images(index + 1, request)?;
        *next += 1;
        Ok(Response {
            // Replayed answers are free: no model, no price.
            model: String::new(),
            text: call.text.clone(),
            tool_calls: call.tool_calls.clone(),
            usage: call.usage(self.usage, request),
            ..Response::default()
        })
    }
}

impl Call {
    /// Checks the request's last message holds a tool result containing each expected text.
    fn check_tool_results(&self, number: usize, request: &Request) -> Result<(), ProviderError> {
        if self.expect_tool_results.is_empty() {
            return Ok(());
        }
        // The results of the last turn: the request's final message.
        let results: Vec<&str> = request
            .messages
            .last()
            .into_iter()
            .flat_map(|m| &m.content)
            .filter_map(|c| match c {
                super::types::Content::ToolResult { content, .. } => Some(content.as_str()),
                _ => None,
            })
            .collect();
        for want in &self.expect_tool_results {
            if !results.iter().any(|r| r.contains(want.as_str())) {
                return Err(ProviderError::Fatal(format!(
                    "replay session call {number}: no tool result contains `{want}`; the results were:\n{}",
                    crate::text::clip(&results.join("\n---\n"), 2000)
                )));
            }
        }
        Ok(())
    }

    /// Checks the request's texts hold every expected text and none of the unwanted ones.
    fn check_request_text(&self, number: usize, request: &Request) -> Result<(), ProviderError> {
        if self.expect_in_request.is_empty() && self.expect_not_in_request.is_empty() {
            return Ok(());
        }
        let text: String = request
            .messages
            .iter()
            .flat_map(|m| &m.content)
            .filter_map(|c| match c {
                super::types::Content::Text(t) => Some(t.as_str()),
                super::types::Content::ToolResult { content, .. } => Some(content.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n");
        for want in &self.expect_in_request {
            if !text.contains(want.as_str()) {
                return Err(ProviderError::Fatal(format!(
                    "replay session call {number}: the request does not contain `{want}`"
                )));
            }
        }
        for unwanted in &self.expect_not_in_request {
            if text.contains(unwanted.as_str()) {
                return Err(ProviderError::Fatal(format!(
                    "replay session call {number}: the request contains `{unwanted}`"
                )));
            }
        }
        Ok(())
    }

    /// Checks the request's last message carries the expected number of images.
    fn check_images(&self, number: usize, request: &Request) -> Result<(), ProviderError> {
        let Some(want) = self.expect_images else {
            return Ok(());
        };
        let got = request
            .messages
            .last()
            .into_iter()
            .flat_map(|m| &m.content)
            .filter(|c| matches!(c, super::types::Content::Image { .. }))
            .count();
        if got != want {
            return Err(ProviderError::Fatal(format!(
                "replay session call {number}: the message carries {got} image(s), the session expects {want}"
            )));
        }
        Ok(())
    }

    /// The call's token counts: recorded, else nothing or the estimate, as the session says.
    fn usage(&self, session: SessionUsage, request: &Request) -> Usage {
        match (self.usage, session) {
            (Some(u), _) => u,
            (None, SessionUsage::Recorded) => Usage::default(),
            (None, SessionUsage::Estimated) => Usage {
                input_tokens: crate::llm::types::estimate(request),
                output_tokens: (self.text.len()
                    + self
                        .tool_calls
                        .iter()
                        .map(|t| t.name.len() + t.arguments.to_string().len())
                        .sum::<usize>()) as u64
                    / 4,
                ..Usage::default()
            },
        }
    }
}

impl Provider for ReplayProvider {
    fn name(&self) -> &'static str {
        "replay"
    }

    fn complete<'a>(
        &'a self,
        request: &'a Request,
    ) -> BoxFuture<'a, Result<Response, ProviderError>> {
        Box::pin(async move { self.answer(request) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(role: AgentRole) -> Request {
        Request {
            role,
            model: None,
            system: String::new(),
            messages: vec![],
            tools: vec![],
        }
    }

    #[test]
    fn answers_in_order_and_checks_roles() {
        let text = r#"{"calls": [
            {"role": "reviewer", "tool_calls": [{"id": "c1", "name": "read_file", "arguments": {"path": "a.py"}}],
             "usage": {"input_tokens": 10, "output_tokens": 2}},
            {"role": "fixer", "text": "done"}
        ]}"#;
        let p = ReplayProvider::parse(Path::new("s.json"), text).unwrap();
        let r = p.answer(&req(AgentRole::Reviewer)).unwrap();
        assert_eq!(r.tool_calls[0].name, "read_file");
        assert_eq!(r.usage.input_tokens, 10);
        let err = p.answer(&req(AgentRole::Reviewer)).unwrap_err();
        assert!(err.to_string().contains("call 2 is for the fixer"), "{err}");
        assert_eq!(p.answer(&req(AgentRole::Fixer)).unwrap().text, "done");
        assert!(
            p.answer(&req(AgentRole::Fixer))
                .unwrap_err()
                .to_string()
                .contains("exhausted")
        );
    }

    #[test]
    fn estimated_usage_measures_the_request_unless_a_call_records_its_own() {
        let text = r#"{"usage": "estimated", "calls": [
            {"role": "reviewer", "text": "abcdefgh"},
            {"role": "reviewer", "text": "x", "usage": {"input_tokens": 7}}
        ]}"#;
        let p = ReplayProvider::parse(Path::new("s.json"), text).unwrap();
        let mut request = req(AgentRole::Reviewer);
        request.system = "s".repeat(400);
        request.messages = vec![super::super::types::Message::user("m".repeat(4000))];
        let r = p.answer(&request).unwrap();
        assert_eq!(r.usage.input_tokens, 1100);
        assert_eq!(r.usage.output_tokens, 2);
        assert_eq!(p.answer(&request).unwrap().usage.input_tokens, 7);
        // Recorded (the default): a call without usage counts nothing.
        let p = ReplayProvider::parse(Path::new("s.json"), r#"{"calls": [{"role": "reviewer"}]}"#)
            .unwrap();
        assert_eq!(p.answer(&request).unwrap().usage.input_tokens, 0);
    }

    #[test]
    fn bad_session_names_line_and_column() {
        let err = ReplayProvider::parse(
            Path::new("s.json"),
            "{\"calls\": [\n {\"role\": \"boss\"}]}",
        )
        .unwrap_err();
        assert_eq!(err.line, Some(2), "{err}");
    }
}
