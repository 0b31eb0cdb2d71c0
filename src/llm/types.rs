//! Provider-neutral conversation types. Each provider maps these to and from its wire format.
//! A request's size is estimated here too, at 4 bytes a token (`estimate`, FACTS.md): context
//! windows are fitted and replayed calls measured by it.

use serde::{Deserialize, Serialize};

/// Which agent is asking (the replay provider checks it; prompts and models differ).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentRole {
    Reviewer,
    Fixer,
    Judge,
    /// Writes the failure analysis when a run needs a human (the reviewer's model).
    Analyst,
}

impl AgentRole {
    pub fn as_str(self) -> &'static str {
        match self {
            AgentRole::Reviewer => "reviewer",
            AgentRole::Fixer => "fixer",
            AgentRole::Judge => "judge",
            AgentRole::Analyst => "analyst",
        }
    }
}

/// A tool call made by the model. `arguments` stays raw JSON only until the tool layer types it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    #[serde(default)]
    pub arguments: serde_json::Value,
}

/// One piece of a message.
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    Text(String),
    ToolCall(ToolCall),
    ToolResult {
        call_id: String,
        content: String,
        is_error: bool,
    },
    /// A model's thinking, sent back unchanged: Anthropic requires the assistant turn of a tool
    /// loop to start with its thinking blocks, signatures intact (`redacted` holds the opaque
    /// `data` of a `redacted_thinking` block).
    Thinking {
        thinking: String,
        signature: String,
        redacted: Option<String>,
    },
    /// An OpenAI Responses reasoning item (with its `encrypted_content`), sent back unchanged.
    Reasoning(serde_json::Value),
    /// An image a tool returned (a screenshot), downscaled, base64; sent after the tool results
    /// of its turn. `tokens` is the estimate counted when the context window is fitted.
    Image {
        media_type: String,
        data: String,
        tokens: u64,
        /// The tool call whose result it belongs to (none for a task's images).
        call_id: Option<String>,
    },
}

/// Who speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Speaker {
    User,
    Assistant,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub speaker: Speaker,
    pub content: Vec<Content>,
}

impl Message {
    pub fn user(text: impl Into<String>) -> Self {
        Message {
            speaker: Speaker::User,
            content: vec![Content::Text(text.into())],
        }
    }
}

/// A tool offered to the model: name, description and JSON Schema of its arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    /// The built-in tools' names are static; MCP tools' are the run's.
    pub name: std::borrow::Cow<'static, str>,
    pub description: std::borrow::Cow<'static, str>,
    pub parameters: serde_json::Value,
}

/// Token counts from the API's `usage`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
    #[serde(default, rename = "cache_read_input_tokens")]
    pub cache_read_tokens: u64,
    #[serde(default, rename = "cache_creation_input_tokens")]
    pub cache_write_tokens: u64,
}

impl Usage {
    pub fn total(&self) -> u64 {
        self.input_tokens + self.output_tokens + self.cache_read_tokens + self.cache_write_tokens
    }

    pub fn add(&mut self, other: Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_read_tokens += other.cache_read_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
    }
}

/// One model request.
#[derive(Debug, Clone)]
pub struct Request {
    pub role: AgentRole,
    pub model: Option<String>,
    pub system: String,
    pub messages: Vec<Message>,
    pub tools: Vec<ToolSpec>,
}

/// Why the model stopped (`stop_reason` / `finish_reason`).
#[derive(Debug, Clone, Default, PartialEq)]
pub enum Stop {
    /// The answer is complete (`end_turn`, `stop`, `tool_use`, `tool_calls`, or not said).
    #[default]
    Done,
    /// Cut at the output limit (`max_tokens`, `length`).
    MaxTokens,
    /// The model refused or a filter stopped it (`refusal`, `content_filter`), with the reason.
    Refused(String),
    /// A long turn paused by the server (`pause_turn`): send it back to continue.
    Paused,
}

/// One model answer.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Response {
    /// The model that answered (as the API names it; empty when unknown).
    pub model: String,
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub usage: Usage,
    pub stop: Stop,
    /// Thinking blocks, in order, to send back at the start of this assistant turn.
    pub thinking: Vec<Content>,
}

/// Estimated tokens of a request: system prompt, tool definitions and messages.
pub fn estimate(request: &Request) -> u64 {
    let tools: usize = request
        .tools
        .iter()
        .map(|t| t.name.len() + t.description.len() + t.parameters.to_string().len())
        .sum();
    (request.system.len() + tools + messages_bytes(&request.messages)) as u64 / 4
}

fn messages_bytes(messages: &[Message]) -> usize {
    messages
        .iter()
        .flat_map(|m| &m.content)
        .map(|c| match c {
            Content::Text(t) => t.len(),
            Content::ToolCall(call) => call.name.len() + call.arguments.to_string().len(),
            Content::ToolResult { content, .. } => content.len(),
            Content::Thinking {
                thinking, redacted, ..
            } => thinking.len() + redacted.as_ref().map_or(0, String::len),
            Content::Reasoning(item) => item.to_string().len(),
            // An image costs its tokens (about four bytes of text each), not its bytes.
            Content::Image { tokens, .. } => *tokens as usize * 4,
        })
        .sum()
}
