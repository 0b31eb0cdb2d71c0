//! The Anthropic Messages API (`POST /v1/messages`): `tool_use` / `tool_result` blocks, and
//! `cache_control` breakpoints on the stable prefix (tools, system prompt) and on the newest
//! message, so each call of an agent turn reads the previous call's prefix from the cache.

use serde_json::{Value, json};

use super::http::{StreamFault, Transport};
use super::registry::{Model, Registry, ThinkingStyle};
use super::thinking::{Effort, Thinking, ThinkingBudgets};
use super::types::{Content, Request, Response, Speaker, Stop, ToolCall, Usage};
use super::{BoxFuture, Provider, ProviderError};
use crate::secrets::Secret;

/// Where the Messages API is served, and how a request there is addressed, wrapped and
/// authenticated (SPEC §5.1). The wire format — the request body, the answer, the stream's
/// events — is this module's, whatever the endpoint.
pub enum Endpoint {
    /// Anthropic's own API (`POST {base}/v1/messages`, `x-api-key`).
    FirstParty { url: String, key: Secret },
    /// Anthropic's own API with an access token from workload identity federation.
    Federated {
        url: String,
        auth: Box<super::federation::Federation>,
    },
    /// Amazon Bedrock: `POST {base}/model/{model}/invoke` (or `invoke-with-response-stream`, AWS
    /// event-stream frames), the body without `model` and `stream`, with `anthropic_version`;
    /// a Bedrock API key or SigV4.
    Bedrock {
        base: String,
        auth: super::aws::BedrockAuth,
    },
    /// Google Vertex AI: `POST {base}/projects/{p}/locations/{r}/publishers/anthropic/models/
    /// {model}:rawPredict` (or `:streamRawPredict`, server-sent events), the body without `model`,
    /// with `anthropic_version`; a bearer token from Google credentials.
    Vertex {
        base: String,
        project: String,
        region: String,
        auth: Box<super::google::GoogleAuth>,
    },
    /// Microsoft Foundry: the Messages API at `{base}/v1/messages`, with a Foundry key
    /// (`x-api-key`, and `api-key` as the SDK also sends) or an Entra ID bearer token.
    Foundry { url: String, auth: FoundryAuth },
}

/// How a Foundry request is authenticated.
pub enum FoundryAuth {
    Key(Secret),
    Entra(Box<super::azure::EntraAuth>),
}

/// The `anthropic_version` Vertex AI documents for the Messages body.
pub const VERTEX_VERSION: &str = "vertex-2023-10-16";

/// The `anthropic_version` Bedrock documents for the Messages body.
pub const BEDROCK_VERSION: &str = "bedrock-2023-05-31";

/// The API version qa-loop speaks.
pub const API_VERSION: &str = "2023-06-01";
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// A current model, on no deprecation list (checked in CI against the `anthropic` SDK's data).
pub const DEFAULT_MODEL: &str = "claude-sonnet-5-5";
/// Output tokens of an answer, thinking aside (the API requires a limit; every current model
/// allows this many). Thinking raises the limit by its budget, up to the model's maximum.
pub const MAX_OUTPUT_TOKENS: u32 = 8192;
/// The largest `max_tokens` sent without streaming: the `anthropic` SDK refuses more unless the
/// request streams (its rule: 3 600 s × max_tokens / 128 000 must not exceed 10 minutes).
pub const NONSTREAMING_MAX: u32 = 21_333;

pub struct Anthropic {
    transport: Transport,
    endpoint: Endpoint,
    default_model: String,
    thinking: ThinkingBudgets,
    registry: Registry,
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
        Anthropic::at(transport, Endpoint::FirstParty { url, key }, default_model)
    }

    /// The Messages URL of a base (`https://api.anthropic.com` by default, `/v1` or not).
    pub fn messages_url(base_url: Option<&str>) -> String {
        let base = base_url.unwrap_or(DEFAULT_BASE_URL).trim_end_matches('/');
        if base.ends_with("/v1") {
            format!("{base}/messages")
        } else {
            format!("{base}/v1/messages")
        }
    }

    /// The Messages API at `endpoint`.
    pub fn at(transport: Transport, endpoint: Endpoint, default_model: Option<&str>) -> Self {
        Anthropic {
            transport,
            endpoint,
            default_model: default_model.unwrap_or(DEFAULT_MODEL).to_string(),
            thinking: ThinkingBudgets::default(),
            registry: Registry::default(),
        }
    }

    /// Thinking per agent, sent the way each model takes it (see [`plan`]).
    pub fn with_thinking(mut self, thinking: ThinkingBudgets) -> Self {
        self.thinking = thinking;
        self
    }

    /// What the run knows about its models (output limits, thinking styles).
    pub fn with_registry(mut self, registry: Registry) -> Self {
        self.registry = registry;
        self
    }
}

/// The request settings that depend on the model and the agent's thinking.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub max_tokens: u32,
    /// The `thinking` parameter, if any.
    pub thinking: Option<Value>,
    /// `output_config.effort`, if any.
    pub effort: Option<Effort>,
    /// Whether the request must stream (see [`NONSTREAMING_MAX`]).
    pub stream: bool,
}

/// How a request to `id` is sized and how its thinking is asked for: a budget
/// (`{"type": "enabled", "budget_tokens"}`) for Claude 4.5 and earlier, adaptive thinking with
/// an effort level for Claude 4.6 and later (the Claude 5 family answers 400 to a budget), and
/// nothing for a model that does not think. The output limit grows by the thinking, up to the
/// model's maximum; past what the SDK sends without streaming, the request streams.
pub fn plan(model: &Model, id: &str, thinking: Option<Thinking>) -> Plan {
    let style = model.thinking.unwrap_or_else(|| guess_style(id));
    let room = match (style, thinking) {
        (ThinkingStyle::Budget | ThinkingStyle::Adaptive, Some(t)) => t.tokens(),
        _ => 0,
    };
    let max_tokens = (MAX_OUTPUT_TOKENS + room).min(model.max_output.unwrap_or(u32::MAX));
    let (thinking, effort) = match (style, thinking) {
        (ThinkingStyle::Budget, Some(t)) => {
            // The budget must stay below max_tokens, leaving room for the answer.
            let budget = t
                .tokens()
                .min(max_tokens.saturating_sub(MAX_OUTPUT_TOKENS / 2))
                .max(super::thinking::MIN_BUDGET);
            (
                Some(json!({"type": "enabled", "budget_tokens": budget})),
                None,
            )
        }
        (ThinkingStyle::Adaptive, Some(t)) => (
            Some(json!({"type": "adaptive"})),
            Some(t.effort().min(model.max_effort.unwrap_or(Effort::Max))),
        ),
        _ => (None, None),
    };
    let stream =
        max_tokens > NONSTREAMING_MAX || model.nonstreaming_max.is_some_and(|m| max_tokens > m);
    Plan {
        max_tokens,
        thinking,
        effort,
        stream,
    }
}

/// The thinking style of a Claude model the registry does not know: adaptive from Claude 5 on
/// (the first number in the id is the major version: `claude-sonnet-6`, `claude-3-7-sonnet`),
/// a budget before.
fn guess_style(id: &str) -> ThinkingStyle {
    let id = id.rsplit('/').next().unwrap_or(id);
    let major = id
        .split(['-', '.', '@', ':'])
        .find_map(|t| (t.len() < 4).then(|| t.parse::<u32>().ok()).flatten());
    match major {
        Some(m) if m >= 5 => ThinkingStyle::Adaptive,
        _ => ThinkingStyle::Budget,
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
            let plan = plan(
                &self.registry.model(model),
                model,
                self.thinking.of(request.role),
            );
            body["max_tokens"] = json!(plan.max_tokens);
            if let Some(thinking) = plan.thinking {
                body["thinking"] = thinking;
            }
            if let Some(effort) = plan.effort {
                body["output_config"] = json!({"effort": effort.as_str()});
            }
            let answer = self.send(model, body, plan.stream).await?;
            parse_response(&answer, model)
        })
    }
}

/// A Messages request as Bedrock takes it, as the `anthropic` SDK's `AnthropicBedrock` makes
/// it: the model (percent-encoded but for `:` and `;`, so an ARN's `/` stays in one segment) and
/// streaming in the URL, `anthropic_version` in the body.
pub fn bedrock_request(base: &str, model: &str, mut body: Value, stream: bool) -> (String, Value) {
    if let Some(map) = body.as_object_mut() {
        map.remove("model");
        map.remove("stream");
        map.insert("anthropic_version".into(), json!(BEDROCK_VERSION));
    }
    let model: String = model
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b':' | b';' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect();
    let verb = if stream {
        "invoke-with-response-stream"
    } else {
        "invoke"
    };
    (
        format!("{}/model/{model}/{verb}", base.trim_end_matches('/')),
        body,
    )
}

fn bedrock_origin(auth: &super::aws::BedrockAuth) -> String {
    match auth {
        super::aws::BedrockAuth::Bearer(_) => "AWS_BEARER_TOKEN_BEDROCK".to_string(),
        super::aws::BedrockAuth::SigV4(s) => s.origin.clone(),
    }
}

/// A Messages request as Vertex AI takes it, as the `anthropic` SDK's `AnthropicVertex` makes it:
/// project, region, model and the streaming specifier in the path; `stream` stays in the body.
pub fn vertex_request(
    base: &str,
    project: &str,
    region: &str,
    model: &str,
    mut body: Value,
    stream: bool,
) -> (String, Value) {
    if let Some(map) = body.as_object_mut() {
        map.remove("model");
        map.remove("stream");
        if stream {
            map.insert("stream".into(), json!(true));
        }
        map.insert("anthropic_version".into(), json!(VERTEX_VERSION));
    }
    let segment = |s: &str| -> String {
        s.bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b'@' => {
                    (b as char).to_string()
                }
                _ => format!("%{b:02X}"),
            })
            .collect()
    };
    let specifier = if stream {
        "streamRawPredict"
    } else {
        "rawPredict"
    };
    (
        format!(
            "{}/projects/{}/locations/{}/publishers/anthropic/models/{}:{specifier}",
            base.trim_end_matches('/'),
            segment(project),
            segment(region),
            segment(model)
        ),
        body,
    )
}

/// Bedrock's event stream folded into the answer, through the Messages stream's own folder.
pub fn fold_bedrock(bytes: &[u8]) -> Result<Value, StreamFault> {
    fold_events(&super::eventstream::bedrock_to_sse(bytes)?)
}

impl Anthropic {
    /// Anthropic's own API (or a gateway in front of it) with a key; a refused key is the
    /// credential error that stops the run.
    async fn send_first_party(
        &self,
        url: &str,
        key: &Secret,
        mut body: Value,
        stream: bool,
    ) -> Result<Value, ProviderError> {
        let headers = [
            ("x-api-key", key.expose().to_string()),
            ("anthropic-version", API_VERSION.to_string()),
        ];
        let answer = if stream {
            body["stream"] = json!(true);
            self.transport
                .post_events("Anthropic", url, &headers, &body, fold_events)
                .await
        } else {
            self.transport
                .post_json("Anthropic", url, &headers, &body)
                .await
        };
        answer.map_err(|e| e.unauthorized("Anthropic", "ANTHROPIC_API_KEY (or --api-key)"))
    }

    /// Sends a Messages body to the endpoint: addressed, wrapped and authenticated as the
    /// endpoint takes it (SPEC §5.1); the answer JSON.
    async fn send(
        &self,
        model: &str,
        mut body: Value,
        stream: bool,
    ) -> Result<Value, ProviderError> {
        let plan_stream = stream;
        Ok(match &self.endpoint {
            Endpoint::FirstParty { url, key } => {
                self.send_first_party(url, key, body, plan_stream).await?
            }
            Endpoint::Bedrock { base, auth } => {
                let (url, body) = bedrock_request(base, model, body, plan_stream);
                let fold = plan_stream.then_some(super::http::Fold::EventStream(fold_bedrock));
                let (headers, signer): (Vec<(&'static str, String)>, _) = match auth {
                    super::aws::BedrockAuth::Bearer(k) => (
                        vec![("authorization", format!("Bearer {}", k.expose()))],
                        None,
                    ),
                    super::aws::BedrockAuth::SigV4(s) => {
                        (Vec::new(), Some(&**s as &dyn super::http::Authorize))
                    }
                };
                self.transport
                    .post_with("Bedrock", &url, &headers, &body, fold, signer)
                    .await
                    .map_err(|e| e.refused("Bedrock", &bedrock_origin(auth)))?
            }
            Endpoint::Federated { url, auth } => {
                let headers = [("anthropic-version", API_VERSION.to_string())];
                let fold = plan_stream.then_some(super::http::Fold::Sse(fold_events));
                if plan_stream {
                    body["stream"] = json!(true);
                }
                let signer = Some(&**auth as &dyn super::http::Authorize);
                self.transport
                    .post_with("Anthropic", url, &headers, &body, fold, signer)
                    .await
                    .map_err(|e| {
                        e.refused(
                            "Anthropic",
                            "ANTHROPIC_FEDERATION_RULE_ID/ANTHROPIC_ORGANIZATION_ID",
                        )
                    })?
            }
            Endpoint::Foundry { url, auth } => {
                let mut headers = vec![("anthropic-version", API_VERSION.to_string())];
                let (signer, origin) = match auth {
                    FoundryAuth::Key(k) => {
                        headers.push(("x-api-key", k.expose().to_string()));
                        headers.push(("api-key", k.expose().to_string()));
                        (None, "ANTHROPIC_FOUNDRY_API_KEY")
                    }
                    FoundryAuth::Entra(e) => (
                        Some(&**e as &dyn super::http::Authorize),
                        "AZURE_CLIENT_ID/AZURE_TENANT_ID/AZURE_FEDERATED_TOKEN_FILE",
                    ),
                };
                let fold = plan_stream.then_some(super::http::Fold::Sse(fold_events));
                if plan_stream {
                    body["stream"] = json!(true);
                }
                self.transport
                    .post_with("Foundry", url, &headers, &body, fold, signer)
                    .await
                    .map_err(|e| e.refused("Foundry", origin))?
            }
            Endpoint::Vertex {
                base,
                project,
                region,
                auth,
            } => {
                let (url, body) = vertex_request(base, project, region, model, body, plan_stream);
                let fold = plan_stream.then_some(super::http::Fold::Sse(fold_events));
                let signer = Some(&**auth as &dyn super::http::Authorize);
                self.transport
                    .post_with("Vertex AI", &url, &[], &body, fold, signer)
                    .await
                    .map_err(|e| e.refused("Vertex AI", &auth.origin))?
            }
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
        Content::Image {
            media_type, data, ..
        } => {
            json!({"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}})
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

/// A streamed answer (server-sent events) folded into the answer JSON a non-streamed request
/// gets: `message_start` gives the message, `content_block_*` its blocks (text, tool input as
/// JSON fragments, thinking and its signature), `message_delta` the stop reason and final usage.
/// An `error` event, or a stream that ends before `message_stop`, is a fault (retried when the
/// error is one a retry can fix).
pub fn fold_events(text: &str) -> Result<Value, StreamFault> {
    let mut message: Option<Value> = None;
    let mut blocks: Vec<Value> = Vec::new();
    let mut inputs: Vec<String> = Vec::new();
    let cut = |why: &str| StreamFault {
        message: format!("the answer stream {why}"),
        retryable: true,
    };
    for data in sse_data(text) {
        let event: Value = serde_json::from_str(&data)
            .map_err(|e| cut(&format!("holds an event that is not JSON ({e})")))?;
        let index = event["index"].as_u64().unwrap_or(0) as usize;
        match event["type"].as_str().unwrap_or_default() {
            "message_start" => message = Some(event["message"].clone()),
            "content_block_start" => {
                blocks.resize(index + 1, Value::Null);
                inputs.resize(index + 1, String::new());
                blocks[index] = event["content_block"].clone();
            }
            "content_block_delta" => {
                let Some(block) = blocks.get_mut(index) else {
                    return Err(cut("has a delta for a block it never started"));
                };
                let delta = &event["delta"];
                let append = |block: &mut Value, field: &str, key: &str| {
                    let mut s = block[field].as_str().unwrap_or_default().to_string();
                    s.push_str(delta[key].as_str().unwrap_or_default());
                    block[field] = json!(s);
                };
                match delta["type"].as_str().unwrap_or_default() {
                    "text_delta" => append(block, "text", "text"),
                    "thinking_delta" => append(block, "thinking", "thinking"),
                    "signature_delta" => append(block, "signature", "signature"),
                    "input_json_delta" => {
                        inputs[index].push_str(delta["partial_json"].as_str().unwrap_or_default())
                    }
                    _ => {}
                }
            }
            "content_block_stop" => {
                if let Some(block) = blocks.get_mut(index)
                    && block["type"] == "tool_use"
                    && !inputs[index].trim().is_empty()
                {
                    block["input"] = serde_json::from_str(&inputs[index])
                        .map_err(|e| cut(&format!("holds tool input that is not JSON ({e})")))?;
                }
            }
            "message_delta" => {
                let m = message
                    .as_mut()
                    .ok_or_else(|| cut("has no message_start"))?;
                for (k, v) in event["delta"].as_object().into_iter().flatten() {
                    m[k.as_str()] = v.clone();
                }
                for (k, v) in event["usage"].as_object().into_iter().flatten() {
                    if !v.is_null() {
                        m["usage"][k.as_str()] = v.clone();
                    }
                }
            }
            "message_stop" => {
                let mut m = message.ok_or_else(|| cut("has no message_start"))?;
                m["content"] = Value::Array(blocks.into_iter().filter(|b| !b.is_null()).collect());
                return Ok(m);
            }
            "error" => {
                let kind = event["error"]["type"].as_str().unwrap_or("error");
                return Err(StreamFault {
                    message: format!(
                        "error in the answer stream ({kind}): {}",
                        event["error"]["message"].as_str().unwrap_or_default()
                    ),
                    retryable: matches!(
                        kind,
                        "overloaded_error" | "api_error" | "rate_limit_error"
                    ),
                });
            }
            _ => {} // ping and events added later
        }
    }
    Err(cut("ended before `message_stop` (the connection was cut)"))
}

/// The `data:` payloads of a server-sent event stream, one per event.
fn sse_data(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut data = String::new();
    for line in text.lines().chain(std::iter::once("")) {
        if line.is_empty() {
            if !data.is_empty() {
                out.push(std::mem::take(&mut data));
            }
        } else if let Some(d) = line.strip_prefix("data:") {
            if !data.is_empty() {
                data.push('\n');
            }
            data.push_str(d.strip_prefix(' ').unwrap_or(d));
        }
    }
    out
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
                    name: "read_file".into(),
                    description: "Read a file.".into(),
                    parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
                },
                ToolSpec {
                    name: "submit_verdict".into(),
                    description: "Submit.".into(),
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
    fn bedrock_requests_carry_the_model_in_the_path() {
        let body = json!({"model": "m", "stream": true, "max_tokens": 8, "messages": []});
        let (url, body) = bedrock_request(
            "http://127.0.0.1:9/",
            "arn:aws:bedrock:us-east-1:1:inference-profile/us.anthropic.claude-sonnet-5-5-v1:0",
            body,
            true,
        );
        assert_eq!(
            url,
            "http://127.0.0.1:9/model/arn:aws:bedrock:us-east-1:1:inference-profile%2Fus.anthropic.claude-sonnet-5-5-v1:0/invoke-with-response-stream"
        );
        assert_eq!(
            body,
            json!({"max_tokens": 8, "messages": [], "anthropic_version": BEDROCK_VERSION})
        );
    }

    #[test]
    fn the_url_takes_a_base_with_or_without_v1() {
        let t = Transport::new(Default::default(), None).unwrap();
        let key = Secret::new("k");
        let url = |a: Anthropic| match a.endpoint {
            Endpoint::FirstParty { url, .. } => url,
            _ => unreachable!(),
        };
        assert_eq!(
            url(Anthropic::new(t.clone(), None, key.clone(), None)),
            "https://api.anthropic.com/v1/messages"
        );
        assert_eq!(
            url(Anthropic::new(
                t.clone(),
                Some("http://127.0.0.1:9/v1/"),
                key.clone(),
                None
            )),
            "http://127.0.0.1:9/v1/messages"
        );
        assert_eq!(
            url(Anthropic::new(t, Some("http://127.0.0.1:9"), key, None)),
            "http://127.0.0.1:9/v1/messages"
        );
    }

    #[test]
    fn thinking_is_asked_for_as_each_model_takes_it() {
        use crate::llm::thinking::{Effort, Thinking};
        let r = Registry::default();
        // Claude 4.5 and earlier: a budget, the output limit raised by it.
        let p = plan(
            &r.model("claude-haiku-4-5"),
            "claude-haiku-4-5",
            Some(Thinking::Tokens(2048)),
        );
        assert_eq!(
            p.thinking,
            Some(json!({"type": "enabled", "budget_tokens": 2048}))
        );
        assert_eq!(
            (p.max_tokens, p.effort, p.stream),
            (8192 + 2048, None, false)
        );
        // Claude 5: adaptive with an effort (a budget is a 400); a long limit streams.
        let p = plan(
            &r.model("claude-sonnet-5-5"),
            "claude-sonnet-5-5",
            Some(Thinking::Tokens(16_000)),
        );
        assert_eq!(p.thinking, Some(json!({"type": "adaptive"})));
        assert_eq!(p.effort, Some(Effort::Medium));
        assert_eq!((p.max_tokens, p.stream), (8192 + 16_000, true));
        // An unknown Claude 6 id is treated as adaptive, an unknown 4.x one as a budget.
        let p = plan(
            &r.model("claude-sonnet-6"),
            "claude-sonnet-6",
            Some(Thinking::Effort(Effort::Low)),
        );
        assert_eq!(p.effort, Some(Effort::Low));
        let p = plan(
            &r.model("claude-opus-4-9"),
            "claude-opus-4-9",
            Some(Thinking::Effort(Effort::Low)),
        );
        assert_eq!(
            p.thinking,
            Some(json!({"type": "enabled", "budget_tokens": 4096}))
        );
        // The model's output limit caps the request, and the budget stays below it.
        let p = plan(
            &r.model("claude-opus-4-1"),
            "claude-opus-4-1",
            Some(Thinking::Effort(Effort::Max)),
        );
        assert_eq!(p.max_tokens, 32_000);
        assert_eq!(
            p.thinking,
            Some(json!({"type": "enabled", "budget_tokens": 32_000 - 4096}))
        );
        // Over the SDK's non-streaming limit of this model.
        assert!(p.stream);
        // No thinking: the default limit, no stream; a model that does not think gets none.
        let p = plan(&r.model("claude-sonnet-5-5"), "claude-sonnet-5-5", None);
        assert_eq!(
            (p.max_tokens, p.thinking.clone(), p.stream),
            (8192, None, false)
        );
        let p = plan(
            &r.model("claude-3-5-haiku"),
            "claude-3-5-haiku",
            Some(Thinking::Tokens(2048)),
        );
        assert_eq!((p.max_tokens, p.thinking), (8192, None));
    }

    #[test]
    fn a_streamed_answer_folds_into_the_answer_json() {
        let events = r#"event: message_start
data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-5-5","content":[],"stop_reason":null,"usage":{"input_tokens":120,"output_tokens":1,"cache_read_input_tokens":100}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Read calc"}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":".py first."}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBsig"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: ping
data: {"type": "ping"}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"read_file","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"path\": \"ca"}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"lc.py\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":57}}

event: message_stop
data: {"type":"message_stop"}
"#;
        let answer = fold_events(events).unwrap();
        let r = parse_response(&answer, "x").unwrap();
        assert_eq!(r.model, "claude-sonnet-5-5");
        assert_eq!(r.tool_calls[0].arguments, json!({"path": "calc.py"}));
        assert_eq!(
            r.thinking,
            vec![Content::Thinking {
                thinking: "Read calc.py first.".into(),
                signature: "EqQBsig".into(),
                redacted: None
            }]
        );
        assert_eq!(
            (
                r.usage.input_tokens,
                r.usage.output_tokens,
                r.usage.cache_read_tokens
            ),
            (120, 57, 100)
        );
        assert_eq!(r.stop, Stop::Done);
        // Cut before message_stop: retried; an overload event: retried; a bad request: not.
        let cut = &events[..events.find("event: message_delta").unwrap()];
        assert!(fold_events(cut).unwrap_err().retryable);
        let overloaded = "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n";
        let f = fold_events(overloaded).unwrap_err();
        assert!(f.retryable && f.message.contains("Overloaded"), "{f:?}");
        let bad = overloaded.replace("overloaded_error", "invalid_request_error");
        assert!(!fold_events(&bad).unwrap_err().retryable);
    }
}
