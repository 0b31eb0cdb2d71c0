//! OpenAI Chat Completions (`POST …/chat/completions`: `tools`, `tool_calls`, `role: tool`
//! results) for OpenAI itself and for compatible servers (Ollama, vLLM, OpenRouter), including
//! Azure OpenAI's URL shape and `api-key` header. OpenAI caches long prompt prefixes by itself.

use serde_json::{Value, json};

use super::http::Transport;
use super::openai_common::{arguments_text, arguments_value, tool_output, usage};
use super::registry::{Api, Registry, ThinkingStyle};
use super::thinking::Effort;
use super::types::{Content, Request, Response, Speaker, Stop, ToolCall};
use super::{BoxFuture, Provider, ProviderError};
use crate::secrets::Secret;

pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
/// A current model (checked in CI against the `openai` SDK's model list); it speaks the
/// Responses API.
pub const DEFAULT_MODEL: &str = "gpt-6.2-sol";
/// The Azure OpenAI API version used when the base URL names none.
/// Reasoning deployments refuse older dated versions (Azure's v1 API, `/openai/v1`, takes none).
pub const AZURE_API_VERSION: &str = "2025-04-01-preview";

pub struct OpenAi {
    transport: Transport,
    url: String,
    azure: bool,
    key: Option<Secret>,
    /// A short-lived token in place of the key (workload identity), asked on every attempt.
    auth: Option<Box<dyn super::http::Authorize>>,
    default_model: String,
    /// `openai` or `openai-compatible` (error texts and logs).
    label: &'static str,
    thinking: super::thinking::ThinkingBudgets,
    registry: Registry,
}

impl OpenAi {
    /// `key` may be absent for a local compatible server (Ollama, vLLM).
    pub fn new(
        transport: Transport,
        base_url: Option<&str>,
        key: Option<Secret>,
        default_model: &str,
        label: &'static str,
    ) -> Self {
        let (url, azure) = endpoint(base_url.unwrap_or(DEFAULT_BASE_URL));
        OpenAi {
            transport,
            url,
            azure,
            key,
            auth: None,
            default_model: default_model.to_string(),
            label,
            thinking: Default::default(),
            registry: Registry::default(),
        }
    }

    /// Authenticates each request with `auth` (OpenAI workload identity) instead of a key.
    pub fn with_auth(mut self, auth: Box<dyn super::http::Authorize>) -> Self {
        self.auth = Some(auth);
        self
    }

    /// Reasoning effort per agent, from its thinking setting (reasoning models only).
    pub fn with_thinking(mut self, thinking: super::thinking::ThinkingBudgets) -> Self {
        self.thinking = thinking;
        self
    }

    /// What the run knows about its models (API, reasoning).
    pub fn with_registry(mut self, registry: Registry) -> Self {
        self.registry = registry;
        self
    }

    /// The API `model` is called through (see [`api`]).
    pub fn api(&self, model: &str) -> Api {
        api(self.label != "openai", &self.registry, model)
    }

    /// The effort sent for `role` on `model`: none for a model that does not reason, at most the
    /// model's highest level.
    fn effort(&self, model: &str, role: super::AgentRole) -> Option<Effort> {
        let info = self.registry.model(model);
        if info.thinking == Some(ThinkingStyle::None) {
            return None;
        }
        let t = self.thinking.of(role)?;
        Some(t.effort().min(info.max_effort.unwrap_or(Effort::Max)))
    }
}

/// The API `model` is called through: the registry's for OpenAI itself (a model it does not
/// know: the Responses API for the families that need it), Chat Completions for a compatible
/// server unless the config's `models:` entry says otherwise.
pub fn api(compatible: bool, registry: &Registry, model: &str) -> Api {
    if compatible {
        return registry.configured_api(model).unwrap_or(Api::Chat);
    }
    match registry.model(model).api {
        Some(Api::Messages) | None if super::responses::needs_responses(model) => Api::Responses,
        Some(Api::Messages) | None => Api::Chat,
        Some(api) => api,
    }
}

/// The chat-completions URL for a base URL, and whether it is Azure OpenAI
/// (`https://{resource}.openai.azure.com/openai/deployments/{deployment}`, `api-version` kept or
/// added).
pub fn endpoint(base: &str) -> (String, bool) {
    let (path, query) = match base.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (base, None),
    };
    let path = path.trim_end_matches('/');
    let host = path
        .split("://")
        .nth(1)
        .unwrap_or(path)
        .split('/')
        .next()
        .unwrap_or_default();
    let azure = host.ends_with(".openai.azure.com")
        || host.ends_with(".cognitiveservices.azure.com")
        || path.contains("/openai/deployments/");
    let path = if path.ends_with("/chat/completions") {
        path.to_string()
    } else {
        format!("{path}/chat/completions")
    };
    let query = match query {
        Some(q) => Some(q.to_string()),
        // Azure's v1 API (`…/openai/v1`) has no dated versions.
        None if azure && !path.contains("/openai/v1/") => {
            Some(format!("api-version={AZURE_API_VERSION}"))
        }
        None => None,
    };
    let url = match query {
        Some(q) => format!("{path}?{q}"),
        None => path,
    };
    (url, azure)
}

impl Provider for OpenAi {
    fn name(&self) -> &'static str {
        self.label
    }

    fn complete<'a>(
        &'a self,
        request: &'a Request,
    ) -> BoxFuture<'a, Result<Response, ProviderError>> {
        Box::pin(async move {
            let model = request.model.as_deref().unwrap_or(&self.default_model);
            let effort = self.effort(model, request.role).map(Effort::as_str);
            let responses = self.api(model) == Api::Responses;
            let (url, body) = if responses {
                (
                    self.url.replace("/chat/completions", "/responses"),
                    super::responses::request_body(request, model, effort),
                )
            } else {
                let mut body = request_body(request, model);
                if let Some(effort) = effort {
                    body["reasoning_effort"] = json!(effort);
                }
                (self.url.clone(), body)
            };
            let headers: Vec<(&'static str, String)> = match &self.key {
                Some(k) if self.azure => vec![("api-key", k.expose().to_string())],
                Some(k) => vec![("authorization", format!("Bearer {}", k.expose()))],
                None => Vec::new(),
            };
            let service = if self.azure { "Azure OpenAI" } else { "OpenAI" };
            let answer = self
                .transport
                .post_with(service, &url, &headers, &body, None, self.auth.as_deref())
                .await
                .map_err(server_hint)
                .map_err(|e| match (&self.auth, &self.key) {
                    (Some(_), _) => e.refused(
                        service,
                        "workload identity (OPENAI_IDENTITY_PROVIDER_ID/OPENAI_SERVICE_ACCOUNT_ID)",
                    ),
                    (None, Some(_)) => e.unauthorized(
                        service,
                        "the API key (OPENAI_API_KEY, QA_LOOP_API_KEY or --api-key)",
                    ),
                    (None, None) => e,
                })?;
            let response = if responses {
                super::responses::parse_response(&answer, model)?
            } else {
                parse_response(&answer, model)?
            };
            warn_if_truncated(&body, &response);
            Ok(response)
        })
    }
}

/// Known refusals of compatible servers, with what to change on the server.
fn server_hint(e: ProviderError) -> ProviderError {
    let hint = |text: &str| {
        if text.contains("enable-auto-tool-choice") || text.contains("tool-call-parser") {
            " — a vLLM server takes tools only when started with `--enable-auto-tool-choice --tool-call-parser <parser of the model>`"
        } else {
            ""
        }
    };
    match e {
        ProviderError::Fatal(t) => {
            let h = hint(&t);
            ProviderError::Fatal(format!("{t}{h}"))
        }
        ProviderError::Unavailable(t) => {
            let h = hint(&t);
            ProviderError::Unavailable(format!("{t}{h}"))
        }
        ProviderError::Credential(t) => ProviderError::Credential(t),
    }
}

/// A server that counts far fewer prompt tokens than the request holds cut the prompt (Ollama
/// truncates to its context length, 4 096 tokens by default on small GPUs, without an error).
fn warn_if_truncated(body: &Value, response: &Response) {
    let counted = response.usage.input_tokens + response.usage.cache_read_tokens;
    // About four bytes a token; well below half of that is no tokenizer difference.
    let expected = body.to_string().len() as u64 / 4;
    if counted > 0 && expected > 4096 && counted * 2 < expected {
        tracing::warn!(
            counted,
            expected,
            "the server counted far fewer prompt tokens than were sent: it likely truncated the prompt (Ollama: raise OLLAMA_CONTEXT_LENGTH on the server)"
        );
    }
}

/// The request JSON.
pub fn request_body(request: &Request, model: &str) -> Value {
    let mut messages = Vec::new();
    if !request.system.is_empty() {
        messages.push(json!({"role": "system", "content": request.system}));
    }
    for m in &request.messages {
        match m.speaker {
            Speaker::Assistant => {
                let text: Vec<&str> = m
                    .content
                    .iter()
                    .filter_map(|c| match c {
                        Content::Text(t) if !t.trim().is_empty() => Some(t.as_str()),
                        _ => None,
                    })
                    .collect();
                let calls: Vec<Value> = m
                    .content
                    .iter()
                    .filter_map(|c| match c {
                        Content::ToolCall(call) => Some(json!({
                            "id": call.id,
                            "type": "function",
                            "function": {"name": call.name, "arguments": arguments_text(&call.arguments)},
                        })),
                        _ => None,
                    })
                    .collect();
                let mut msg = json!({
                    "role": "assistant",
                    "content": if text.is_empty() { Value::Null } else { Value::String(text.join("\n")) },
                });
                if calls.is_empty() && text.is_empty() {
                    // An empty answer: `content: null` without `tool_calls` is refused (400).
                    continue;
                }
                if !calls.is_empty() {
                    msg["tool_calls"] = Value::Array(calls);
                }
                messages.push(msg);
            }
            Speaker::User => {
                // Tool results first (they must follow the assistant's calls), then any text.
                let mut text = Vec::new();
                let mut images = Vec::new();
                for c in &m.content {
                    match c {
                        Content::ToolResult {
                            call_id,
                            content,
                            is_error,
                        } => messages.push(json!({
                            "role": "tool",
                            "tool_call_id": call_id,
                            "content": tool_output(content, *is_error),
                        })),
                        Content::Text(t) => text.push(t.as_str()),
                        // A tool message holds text only: images go in a user message after it.
                        Content::Image {
                            media_type, data, ..
                        } => images.push(json!({"type": "image_url", "image_url": {
                            "url": format!("data:{media_type};base64,{data}")}})),
                        Content::ToolCall(_) | Content::Thinking { .. } | Content::Reasoning(_) => {
                        }
                    }
                }
                if !images.is_empty() {
                    let mut parts = vec![json!({"type": "text", "text": if text.is_empty() {
                        "The images the tools above returned:".to_string()
                    } else {
                        text.join("\n")
                    }})];
                    parts.extend(images);
                    messages.push(json!({"role": "user", "content": parts}));
                } else if !text.is_empty() {
                    messages.push(json!({"role": "user", "content": text.join("\n")}));
                }
            }
        }
    }
    let mut body = json!({"model": model, "messages": messages});
    if !request.tools.is_empty() {
        body["tools"] = request
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {
                    "name": t.name, "description": t.description, "parameters": t.parameters}})
            })
            .collect();
    }
    body
}

/// Reads a Chat Completions answer. Errors name the field.
pub fn parse_response(answer: &Value, model: &str) -> Result<Response, ProviderError> {
    let bad = |what: &str| ProviderError::Fatal(format!("OpenAI: unexpected answer: {what}"));
    let message = answer
        .pointer("/choices/0/message")
        .ok_or_else(|| bad("no `choices[0].message`"))?;
    let mut response = Response {
        model: answer
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or(model)
            .to_string(),
        text: message
            .get("content")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        ..Response::default()
    };
    if let Some(refusal) = message.get("refusal").and_then(Value::as_str)
        && response.text.is_empty()
    {
        response.text = refusal.to_string();
    }
    for (i, call) in message
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let field = |p: &str| {
            call.pointer(p)
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or_else(|| bad(&format!("`tool_calls[{i}]{}` missing", p.replace('/', "."))))
        };
        let arguments = arguments_value(field("/function/arguments")?);
        response.tool_calls.push(ToolCall {
            id: field("/id")?,
            name: field("/function/name")?,
            arguments,
        });
    }
    response.usage = usage(
        answer,
        [
            "/usage/prompt_tokens",
            "/usage/prompt_tokens_details/cached_tokens",
            "/usage/completion_tokens",
        ],
    );
    let refusal = message.get("refusal").and_then(Value::as_str);
    response.stop = match answer
        .pointer("/choices/0/finish_reason")
        .and_then(Value::as_str)
    {
        Some("length") => Stop::MaxTokens,
        Some("content_filter") => Stop::Refused("content_filter".into()),
        _ if refusal.is_some_and(|r| !r.is_empty()) && response.tool_calls.is_empty() => {
            Stop::Refused(format!(
                "refusal: {}",
                crate::text::clip(refusal.unwrap_or_default(), 200)
            ))
        }
        _ => Stop::Done,
    };
    Ok(response)
}

#[cfg(test)]
mod tests {

    /// A tool's image (a screenshot) on each wire: an `image` block after the `tool_result` for
    /// Anthropic; a user message with an `image_url` part after the `tool` message for Chat
    /// Completions (a tool message holds text only); an `input_image` item for Responses.
    #[test]
    fn tool_images_go_on_every_wire() {
        use crate::llm::types::{AgentRole, Content, Message, Request, Speaker, ToolCall};
        let request = Request {
            role: AgentRole::Reviewer,
            model: None,
            system: "s".into(),
            messages: vec![
                // A task with a page's screenshot.
                Message {
                    speaker: Speaker::User,
                    content: vec![
                        Content::Text("task".into()),
                        Content::Image {
                            media_type: "image/png".into(),
                            data: "AAAA".into(),
                            tokens: 1,
                            call_id: None,
                        },
                    ],
                },
                Message {
                    speaker: Speaker::Assistant,
                    content: vec![Content::ToolCall(ToolCall {
                        id: "c1".into(),
                        name: "mcp__playwright__browser_take_screenshot".into(),
                        arguments: serde_json::json!({}),
                    })],
                },
                Message {
                    speaker: Speaker::User,
                    content: vec![
                        Content::ToolResult {
                            call_id: "c1".into(),
                            content: "shot".into(),
                            is_error: false,
                        },
                        Content::Image {
                            media_type: "image/png".into(),
                            data: "iVBORw0KGgo=".into(),
                            tokens: 1,
                            call_id: Some("c1".into()),
                        },
                    ],
                },
            ],
            tools: vec![],
        };
        let chat = request_body(&request, "m");
        let msgs = chat["messages"].as_array().unwrap();
        let task = msgs.iter().find(|m| m["role"] == "user").unwrap();
        assert_eq!(
            task["content"][0],
            serde_json::json!({"type": "text", "text": "task"})
        );
        assert_eq!(
            task["content"][1]["image_url"]["url"],
            "data:image/png;base64,AAAA"
        );
        let n = msgs.len();
        assert_eq!(msgs[n - 2]["role"], "tool");
        assert_eq!(msgs[n - 1]["role"], "user");
        assert_eq!(
            msgs[n - 1]["content"][1]["image_url"]["url"],
            "data:image/png;base64,iVBORw0KGgo="
        );
        let anthropic = crate::llm::anthropic::request_body(&request, "m");
        let last = anthropic["messages"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()
            .clone();
        assert_eq!(last["content"][0]["type"], "tool_result");
        assert_eq!(last["content"][1]["type"], "image");
        assert_eq!(last["content"][1]["source"]["media_type"], "image/png");
        let first = &anthropic["messages"][0]["content"];
        assert_eq!(
            (first[0]["type"].as_str(), first[1]["type"].as_str()),
            (Some("text"), Some("image"))
        );
        let responses = crate::llm::responses::request_body(&request, "m", None);
        let input = responses["input"].as_array().unwrap();
        assert_eq!(
            input[0],
            serde_json::json!({"role": "user", "content": "task"})
        );
        assert_eq!(
            input[1]["content"][0]["image_url"],
            "data:image/png;base64,AAAA"
        );
        let last = input.last().unwrap();
        assert_eq!(last["type"], "function_call_output");
        assert_eq!(
            last["output"][0],
            serde_json::json!({"type": "input_text", "text": "shot"})
        );
        assert_eq!(last["output"][1]["type"], "input_image");
        // Recorded for scripts/validate-requests.py when asked (as the providers test does).
        if let Some(dir) = std::env::var_os("QA_LOOP_RECORD_IMAGE_REQUESTS") {
            let dir = std::path::PathBuf::from(dir);
            std::fs::create_dir_all(&dir).unwrap();
            for (wire, body) in [
                ("openai", &chat),
                ("anthropic", &anthropic),
                ("responses", &responses),
            ] {
                let list = serde_json::Value::Array(vec![body.clone()]);
                std::fs::write(
                    dir.join(format!("image-requests-{wire}.json")),
                    list.to_string(),
                )
                .unwrap();
            }
        }
    }

    use super::*;
    use crate::llm::types::{AgentRole, Message, ToolSpec, Usage};

    #[test]
    fn the_request_follows_chat_completions_with_tool_calls_and_tool_messages() {
        let request = Request {
            role: AgentRole::Fixer,
            model: Some("gpt-4.1".into()),
            system: "You fix.".into(),
            messages: vec![
                Message::user("Fix Q1."),
                Message {
                    speaker: Speaker::Assistant,
                    content: vec![Content::ToolCall(ToolCall {
                        id: "call_1".into(),
                        name: "edit_file".into(),
                        arguments: json!({"path": "a.py", "old": "x", "new": "y"}),
                    })],
                },
                Message {
                    speaker: Speaker::User,
                    content: vec![Content::ToolResult {
                        call_id: "call_1".into(),
                        content: "no match".into(),
                        is_error: true,
                    }],
                },
            ],
            tools: vec![ToolSpec {
                name: "edit_file".into(),
                description: "Edit.".into(),
                parameters: json!({"type": "object"}),
            }],
        };
        let body = request_body(&request, "gpt-4.1");
        assert_eq!(
            body["messages"],
            json!([
                {"role": "system", "content": "You fix."},
                {"role": "user", "content": "Fix Q1."},
                {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
                    "function": {"name": "edit_file", "arguments": "{\"path\":\"a.py\",\"old\":\"x\",\"new\":\"y\"}"}}]},
                {"role": "tool", "tool_call_id": "call_1", "content": "ERROR: no match"}
            ])
        );
        assert_eq!(
            body["tools"],
            json!([{"type": "function", "function": {"name": "edit_file", "description": "Edit.", "parameters": {"type": "object"}}}])
        );
    }

    #[test]
    fn answers_are_read_with_tool_calls_and_cached_tokens() {
        let answer = json!({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4.1-2025-04-14",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": null, "refusal": null,
                "tool_calls": [
                    {"id": "call_9", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"a.py\"}"}},
                    {"id": "call_10", "type": "function", "function": {"name": "list_files", "arguments": ""}},
                    {"id": "call_11", "type": "function", "function": {"name": "search", "arguments": "{bad"}}
                ]}}],
            "usage": {"prompt_tokens": 1000, "completion_tokens": 50, "total_tokens": 1050,
                      "prompt_tokens_details": {"cached_tokens": 800}}
        });
        let r = parse_response(&answer, "gpt-4.1").unwrap();
        assert_eq!(r.model, "gpt-4.1-2025-04-14");
        assert_eq!(r.text, "");
        assert_eq!(r.tool_calls.len(), 3);
        assert_eq!(r.tool_calls[0].arguments, json!({"path": "a.py"}));
        assert_eq!(r.tool_calls[1].arguments, json!({}));
        assert_eq!(r.tool_calls[2].arguments, json!("{bad"));
        assert_eq!(
            r.usage,
            Usage {
                input_tokens: 200,
                output_tokens: 50,
                cache_read_tokens: 800,
                cache_write_tokens: 0
            }
        );
        let e = parse_response(&json!({"choices": []}), "m").unwrap_err();
        assert!(e.to_string().contains("choices[0].message"), "{e}");
    }

    #[test]
    fn endpoints_for_openai_compatible_servers_and_azure() {
        assert_eq!(
            endpoint(DEFAULT_BASE_URL),
            ("https://api.openai.com/v1/chat/completions".into(), false)
        );
        assert_eq!(
            endpoint("http://localhost:11434/v1/"),
            ("http://localhost:11434/v1/chat/completions".into(), false)
        );
        assert_eq!(
            endpoint("https://openrouter.ai/api/v1/chat/completions"),
            (
                "https://openrouter.ai/api/v1/chat/completions".into(),
                false
            )
        );
        assert_eq!(
            endpoint("https://acme.openai.azure.com/openai/deployments/gpt4o"),
            (
                format!(
                    "https://acme.openai.azure.com/openai/deployments/gpt4o/chat/completions?api-version={AZURE_API_VERSION}"
                ),
                true
            )
        );
        assert_eq!(
            endpoint("https://acme.openai.azure.com/openai/v1/"),
            (
                "https://acme.openai.azure.com/openai/v1/chat/completions".into(),
                true
            ),
            "Azure's v1 API takes no dated version"
        );
        assert_eq!(
            endpoint("https://acme.openai.azure.com/openai/deployments/gpt4o?api-version=2025-01-01-preview"),
            (
                "https://acme.openai.azure.com/openai/deployments/gpt4o/chat/completions?api-version=2025-01-01-preview".into(),
                true
            )
        );
    }
}
