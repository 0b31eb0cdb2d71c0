//! OpenAI's Responses API (`POST /v1/responses`): what the newest reasoning models need for
//! function tools, and the only API of Responses-only models (`gpt-5-pro`, codex models). Requests
//! are stateless (`store: false`): the conversation is sent as input items each time, and the
//! reasoning items a model returns (with `encrypted_content`) are carried back unchanged.

use serde_json::{Value, json};

use super::ProviderError;
use super::types::{Content, Request, Response, Speaker, Stop, ToolCall};

/// Which OpenAI API a model the registry does not know needs: the Responses API for
/// Responses-only models (`*-pro`, codex models), the GPT-5 point releases (`gpt-5.1`,
/// `gpt-5.4`, …) and the GPT-6 families (function calling on Chat Completions only without
/// reasoning), Chat Completions for the rest.
pub fn needs_responses(model: &str) -> bool {
    let id = model.rsplit('/').next().unwrap_or(model);
    id.starts_with("gpt-6")
        || id.contains("codex")
        || id.ends_with("-pro")
        || id.contains("-pro-")
        || id
            .strip_prefix("gpt-5.")
            .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
}

/// The request JSON.
pub fn request_body(request: &Request, model: &str, effort: Option<&str>) -> Value {
    let mut input = Vec::new();
    for m in &request.messages {
        match m.speaker {
            Speaker::User => {
                for c in &m.content {
                    push_user_content(&mut input, c);
                }
            }
            Speaker::Assistant => {
                for c in &m.content {
                    push_assistant_content(&mut input, c);
                }
            }
        }
    }
    let mut body = json!({
        "model": model,
        "input": input,
        "store": false,
        "include": ["reasoning.encrypted_content"],
    });
    if !request.system.is_empty() {
        body["instructions"] = json!(request.system);
    }
    if !request.tools.is_empty() {
        body["tools"] = request
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "name": t.name, "description": t.description,
                       "parameters": t.parameters, "strict": false})
            })
            .collect();
    }
    if let Some(effort) = effort {
        body["reasoning"] = json!({"effort": effort});
    }
    body
}

/// Appends the input items of one piece of a user turn (tool results, text, images).
fn push_user_content(input: &mut Vec<Value>, c: &Content) {
    match c {
        Content::ToolResult {
            call_id,
            content,
            is_error,
        } => input.push(json!({
            "type": "function_call_output",
            "call_id": call_id,
            "output": super::openai_common::tool_output(content, *is_error),
        })),
        Content::Text(t) if !t.trim().is_empty() => {
            input.push(json!({"role": "user", "content": t}));
        }
        Content::Image {
            media_type,
            data,
            call_id,
            ..
        } => {
            let image = json!({"type": "input_image", "detail": "auto",
                "image_url": format!("data:{media_type};base64,{data}")});
            push_image(input, image, call_id.as_ref());
        }
        _ => {}
    }
}

/// Places an image: with its tool call's result, else in a user message of images.
fn push_image(input: &mut Vec<Value>, image: Value, call_id: Option<&String>) {
    // A tool's image goes with its result (`output` as a list).
    let result = call_id.and_then(|id| {
        input
            .iter_mut()
            .rev()
            .find(|i| i["type"] == "function_call_output" && i["call_id"] == json!(id))
    });
    match result {
        Some(out) => {
            if let Some(text) = out["output"].as_str().map(str::to_string) {
                out["output"] = json!([{"type": "input_text", "text": text}]);
            }
            if let Some(parts) = out["output"].as_array_mut() {
                parts.push(image);
            }
        }
        // A task's screenshots: a user message of images.
        None => match input.last_mut() {
            Some(last) if last["role"] == "user" && last["content"].is_array() => {
                if let Some(parts) = last["content"].as_array_mut() {
                    parts.push(image);
                }
            }
            _ => input.push(json!({"role": "user", "content": [image]})),
        },
    }
}

/// Appends the input item of one piece of an assistant turn (reasoning, text, tool calls).
fn push_assistant_content(input: &mut Vec<Value>, c: &Content) {
    match c {
        Content::Reasoning(item) => input.push(item.clone()),
        Content::Text(t) if !t.trim().is_empty() => {
            input.push(json!({"role": "assistant", "content": t}));
        }
        Content::ToolCall(call) => input.push(json!({
            "type": "function_call",
            "call_id": call.id,
            "name": call.name,
            "arguments": super::openai_common::arguments_text(&call.arguments),
        })),
        _ => {}
    }
}

/// Reads a Responses API answer. Errors name the field.
pub fn parse_response(answer: &Value, model: &str) -> Result<Response, ProviderError> {
    let bad = |what: &str| ProviderError::Fatal(format!("OpenAI: unexpected answer: {what}"));
    let output = answer
        .get("output")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("no `output` array"))?;
    let mut response = Response {
        model: answer
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or(model)
            .to_string(),
        ..Response::default()
    };
    let mut refusal = None;
    for (i, item) in output.iter().enumerate() {
        match item.get("type").and_then(Value::as_str) {
            Some("reasoning") => response.thinking.push(Content::Reasoning(item.clone())),
            Some("message") => {
                for part in item["content"].as_array().into_iter().flatten() {
                    match part["type"].as_str() {
                        Some("output_text") => {
                            if !response.text.is_empty() {
                                response.text.push('\n');
                            }
                            response
                                .text
                                .push_str(part["text"].as_str().unwrap_or_default());
                        }
                        Some("refusal") => refusal = part["refusal"].as_str().map(str::to_string),
                        _ => {}
                    }
                }
            }
            Some("function_call") => {
                let field = |f: &str| {
                    item.get(f)
                        .and_then(Value::as_str)
                        .map(str::to_string)
                        .ok_or_else(|| bad(&format!("`output[{i}].{f}` missing")))
                };
                let arguments = super::openai_common::arguments_value(field("arguments")?);
                response.tool_calls.push(ToolCall {
                    id: field("call_id")?,
                    name: field("name")?,
                    arguments,
                });
            }
            _ => {}
        }
    }
    response.usage = super::openai_common::usage(
        answer,
        [
            "/usage/input_tokens",
            "/usage/input_tokens_details/cached_tokens",
            "/usage/output_tokens",
        ],
    );
    let incomplete = answer
        .pointer("/incomplete_details/reason")
        .and_then(Value::as_str);
    response.stop = match (incomplete, refusal) {
        (Some("max_output_tokens"), _) => Stop::MaxTokens,
        (Some("content_filter"), _) => Stop::Refused("content_filter".into()),
        (_, Some(r)) if response.tool_calls.is_empty() => {
            Stop::Refused(format!("refusal: {}", crate::text::clip(&r, 200)))
        }
        _ => Stop::Done,
    };
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_models_that_need_the_responses_api() {
        for m in [
            "gpt-5-pro",
            "gpt-5.1-codex",
            "openai/gpt-5.4",
            "gpt-5.5",
            "o3-pro",
            "codex-mini-latest",
            "gpt-6.1-sol",
            "gpt-6-luna",
        ] {
            assert!(needs_responses(m), "{m}");
        }
        for m in [
            "gpt-5",
            "gpt-5-mini",
            "gpt-4.1",
            "o3",
            "gpt-4o-2024-08-06",
            "llama3.1:8b",
        ] {
            assert!(!needs_responses(m), "{m}");
        }
    }

    #[test]
    fn answers_become_text_calls_reasoning_and_stops() {
        let answer = json!({
            "id": "resp_1", "object": "response", "model": "gpt-5.4", "status": "completed",
            "output": [
                {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAA"},
                {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "read_file",
                 "arguments": "{\"path\":\"a.py\"}", "status": "completed"}
            ],
            "usage": {"input_tokens": 1000, "input_tokens_details": {"cached_tokens": 600},
                      "output_tokens": 80, "output_tokens_details": {"reasoning_tokens": 50}, "total_tokens": 1080}
        });
        let r = parse_response(&answer, "m").unwrap();
        assert_eq!(r.tool_calls[0].id, "call_1");
        assert_eq!(r.tool_calls[0].arguments["path"], "a.py");
        assert_eq!(r.usage.input_tokens, 400);
        assert_eq!(r.usage.cache_read_tokens, 600);
        assert!(
            matches!(&r.thinking[0], Content::Reasoning(v) if v["encrypted_content"] == "gAAAA")
        );
        let cut = json!({"output": [], "status": "incomplete",
                         "incomplete_details": {"reason": "max_output_tokens"}});
        assert_eq!(parse_response(&cut, "m").unwrap().stop, Stop::MaxTokens);
        assert!(parse_response(&json!({"id": "x"}), "m").is_err());
    }
}
