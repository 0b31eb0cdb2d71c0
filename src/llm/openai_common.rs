//! What OpenAI's two wire formats, Chat Completions ([`super::openai`]) and Responses
//! ([`super::responses`]), share: usage counts, tool results as text, tool arguments as JSON text.

use serde_json::{Value, json};

use super::types::Usage;

/// Usage from the `[input, cached input, output]` token counts at these pointers: OpenAI counts
/// cached tokens inside the input, qa-loop apart (they are billed at the cache-read price).
pub(crate) fn usage(answer: &Value, [input, cached, output]: [&str; 3]) -> Usage {
    let count = |p: &str| answer.pointer(p).and_then(Value::as_u64).unwrap_or(0);
    let prompt = count(input);
    let cached = count(cached).min(prompt);
    Usage {
        input_tokens: prompt - cached,
        output_tokens: count(output),
        cache_read_tokens: cached,
        cache_write_tokens: 0,
    }
}

/// A tool result as the model reads it (errors marked: these APIs have no error flag).
pub(crate) fn tool_output(content: &str, is_error: bool) -> String {
    if is_error {
        format!("ERROR: {content}")
    } else {
        content.to_string()
    }
}

/// A call's arguments from their JSON text. Arguments that are not JSON reach the tool layer as
/// a string, which reports it to the model like any bad argument.
pub(crate) fn arguments_value(raw: String) -> Value {
    if raw.trim().is_empty() {
        json!({})
    } else {
        serde_json::from_str(&raw).unwrap_or(Value::String(raw))
    }
}

/// Tool arguments travel as a JSON-encoded string.
pub(crate) fn arguments_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
