//! Keeping a conversation within the model's context window: when the estimated size passes a
//! share of the window, the oldest tool results are replaced by a one-line note (the model can
//! run the tool again), newest kept. Sizes are estimated at 4 bytes per token (FACTS.md).

use crate::llm::types::estimate;
use crate::llm::{Content, Request};

/// Share of the context window a request may fill before old tool results are elided (the rest
/// is the answer's room and estimation slack).
pub const FILL: f64 = 0.7;
/// After eliding, the request is brought down to this share, so eliding is rare and the cached
/// prefix stays stable between elisions.
pub const TARGET: f64 = 0.5;

pub const ELIDED: &str = "[output elided to keep the conversation within the context window; call the tool again if you need it]";

/// Elides the oldest tool results of `request` when it passes [`FILL`] of `window` tokens, down
/// to [`TARGET`]. The first message (the task) and the newest message are never touched.
/// Returns how many results were elided; the request may still be too large when the task
/// What an older image becomes when the context window is fitted.
const ELIDED_IMAGE: &str =
    "[an image of an earlier tool result, left out to fit the context window]";

/// itself is.
pub fn fit(request: &mut Request, window: u64) -> usize {
    if (estimate(request) as f64) <= window as f64 * FILL {
        return 0;
    }
    let target = (window as f64 * TARGET) as u64 * 4;
    let mut bytes = estimate(request) * 4;
    let last = request.messages.len().saturating_sub(1);
    let mut elided = 0;
    for message in request.messages.iter_mut().take(last).skip(1) {
        for c in &mut message.content {
            if bytes <= target {
                return elided;
            }
            if let Content::ToolResult { content, .. } = c
                && content.len() > ELIDED.len()
            {
                bytes -= (content.len() - ELIDED.len()) as u64;
                *content = ELIDED.to_string();
                elided += 1;
            } else if let Content::Image { tokens, .. } = c {
                bytes -= (*tokens * 4).min(bytes);
                *c = Content::Text(ELIDED_IMAGE.to_string());
                elided += 1;
            }
        }
    }
    elided
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{AgentRole, Message, Speaker, ToolCall};

    fn result(n: usize, bytes: usize) -> Message {
        Message {
            speaker: Speaker::User,
            content: vec![Content::ToolResult {
                call_id: format!("c{n}"),
                content: "x".repeat(bytes),
                is_error: false,
            }],
        }
    }

    fn call(n: usize) -> Message {
        Message {
            speaker: Speaker::Assistant,
            content: vec![Content::ToolCall(ToolCall {
                id: format!("c{n}"),
                name: "read_file".into(),
                arguments: serde_json::json!({"path": "a"}),
            })],
        }
    }

    #[test]
    fn oldest_tool_results_go_first_and_the_task_and_newest_stay() {
        let mut messages = vec![Message::user("t".repeat(4_000))];
        for n in 0..6 {
            messages.push(call(n));
            messages.push(result(n, 40_000));
        }
        let mut request = Request {
            role: AgentRole::Reviewer,
            model: None,
            system: String::new(),
            messages,
            tools: Vec::new(),
        };
        // ≈ 61 000 tokens: fits a 128k window untouched.
        assert_eq!(fit(&mut request, 128_000), 0);
        // A 64k window: over 70%, brought down to ≤ 50% (32k tokens ≈ 128 kB): the oldest go.
        let n = fit(&mut request, 64_000);
        assert!(estimate(&request) <= 32_000, "{}", estimate(&request));
        assert_eq!(n, 3);
        let kept: Vec<bool> = request
            .messages
            .iter()
            .filter_map(|m| match &m.content[0] {
                Content::ToolResult { content, .. } => Some(content != ELIDED),
                _ => None,
            })
            .collect();
        assert_eq!(kept, [false, false, false, true, true, true]);
        assert!(matches!(&request.messages[0].content[0], Content::Text(t) if t.len() == 4_000));
        // Nothing left to elide: a task larger than the window is left as is.
        let mut huge = Request {
            messages: vec![Message::user("y".repeat(400_000))],
            ..request.clone()
        };
        assert_eq!(fit(&mut huge, 64_000), 0);
    }
}
