//! The agent loop: ask the model, run the tools it calls, feed the results back, until it ends its
//! turn (`submit_verdict` / `finish`) or the step limit is reached.

use std::cell::{Cell, RefCell};

use crate::config::ToolCaps;
use crate::llm::{
    AgentRole, Content, Message, Provider, Request, Response, Speaker, Stop, ToolCall,
};
use crate::model::Verdict;
use crate::tools::{ToolBox, ToolSet, TurnEnd};

use super::context;
use super::meter::Meter;
use super::verdict;

/// How an agent's turn ended.
#[derive(Debug, Clone, PartialEq)]
pub enum AgentEnd {
    Verdict(Verdict),
    Finished(String),
}

/// The tool calls run so far in this iteration, shared by the reviewer and the fixer.
#[derive(Debug)]
pub struct ToolCalls {
    pub caps: ToolCaps,
    this_iteration: Cell<u32>,
}

impl ToolCalls {
    pub fn new(caps: ToolCaps) -> Self {
        Self {
            caps,
            this_iteration: Cell::new(0),
        }
    }

    /// A new iteration starts counting from zero.
    pub fn new_iteration(&self) {
        self.this_iteration.set(0);
    }

    /// Why the next call (the `nth_in_turn`, from 1) may not run, if it may not; counts it
    /// when it may.
    fn admit(&self, nth_in_turn: u32) -> Result<(), String> {
        if nth_in_turn > self.caps.per_turn {
            return Err(format!(
                "not run: at most {} tool calls are run per answer (max_tool_calls_per_turn); \
                 ask for fewer at a time",
                self.caps.per_turn
            ));
        }
        let used = self.this_iteration.get();
        if used >= self.caps.per_iteration {
            return Err(format!(
                "not run: this iteration's {} tool calls are used up \
                 (max_tool_calls_per_iteration); end your turn now",
                self.caps.per_iteration
            ));
        }
        self.this_iteration.set(used + 1);
        Ok(())
    }
}

/// One agent: its model, system prompt and tools.
pub struct Agent<'a> {
    pub provider: &'a dyn Provider,
    pub role: AgentRole,
    pub model: Option<String>,
    pub system: String,
    pub tools: &'a ToolBox,
    pub tool_set: ToolSet,
    pub max_steps: usize,
    pub meter: &'a RefCell<Meter>,
    pub calls: &'a ToolCalls,
}

impl Agent<'_> {
    /// Runs a turn starting from `task` (the user message). An error is one loop error.
    pub async fn run(&self, task: String) -> Result<AgentEnd, String> {
        self.converse(&mut vec![Message::user(task)]).await
    }

    /// Runs a turn on `messages`, which end with the user's message, and leaves the
    /// conversation in `messages`. A turn that ends with a tool call (`submit_verdict`,
    /// `finish`) leaves a last user message holding that call's result, so the conversation
    /// can go on with [`continue_with`].
    pub async fn converse(&self, messages: &mut Vec<Message>) -> Result<AgentEnd, String> {
        let mut retries = Retries::default();
        for _ in 0..self.max_steps {
            if let Some(why) = self.meter.borrow().exhausted() {
                return Err(format!("budget spent: {why}"));
            }
            let response = self.ask(messages).await?;
            if response.tool_calls.is_empty() {
                match self.answer_without_calls(response, messages, &mut retries) {
                    Some(end) => return end,
                    None => continue,
                }
            }
            let (results, ended) = self
                .run_calls(&response.tool_calls, &mut retries.repaired)
                .await?;
            messages.push(Message {
                speaker: Speaker::User,
                content: results,
            });
            if let Some(end) = ended {
                return Ok(end);
            }
        }
        Err(format!(
            "the {} reached its step limit ({}) without ending its turn",
            self.role.as_str(),
            self.max_steps
        ))
    }

    /// Sends the conversation (fitted to the context window) to the model, meters the answer
    /// and appends it to `messages` as the assistant's turn.
    async fn ask(&self, messages: &mut Vec<Message>) -> Result<Response, String> {
        let mut request = Request {
            role: self.role,
            model: self.model.clone(),
            system: self.system.clone(),
            messages: std::mem::take(messages),
            tools: self.tools.specs(self.tool_set),
        };
        let window = self
            .meter
            .borrow()
            .registry
            .context_window(self.model.as_deref().unwrap_or_default());
        let elided = context::fit(&mut request, window);
        if elided > 0 {
            tracing::info!(
                agent = self.role.as_str(),
                elided,
                "old tool results elided to stay within the context window"
            );
        }
        let response = self.provider.complete(&request).await;
        *messages = request.messages;
        let response = response.map_err(|e| {
            if let crate::llm::ProviderError::Credential(why) = &e {
                self.meter.borrow_mut().refused = Some(why.clone());
            }
            e.to_string()
        })?;
        self.meter
            .borrow_mut()
            .record(&response.model, response.usage);
        // Thinking first: the API wants the turn back as it was given.
        let mut content = response.thinking.clone();
        if !response.text.is_empty() {
            content.push(Content::Text(response.text.clone()));
        }
        content.extend(response.tool_calls.iter().cloned().map(Content::ToolCall));
        messages.push(Message {
            speaker: Speaker::Assistant,
            content,
        });
        Ok(response)
    }

    /// Handles an answer without tool calls: the turn's end (`Some`), or `None` when the model
    /// is asked again (a paused turn, a first cut-off answer, a first unreadable verdict).
    fn answer_without_calls(
        &self,
        response: Response,
        messages: &mut Vec<Message>,
        retries: &mut Retries,
    ) -> Option<Result<AgentEnd, String>> {
        match &response.stop {
            Stop::Done => {}
            Stop::Refused(why) => {
                return Some(Err(format!(
                    "the model refused to answer the {} ({why})",
                    self.role.as_str()
                )));
            }
            // The server paused a long turn: sending it back continues it.
            Stop::Paused => return None,
            Stop::MaxTokens if !retries.continued => {
                retries.continued = true;
                messages.push(Message::user(CUT_OFF.to_string()));
                return None;
            }
            Stop::MaxTokens => {
                return Some(Err(format!(
                    "the {}'s answer was cut at the output limit again without ending its turn",
                    self.role.as_str()
                )));
            }
        }
        match self.tool_set {
            ToolSet::Fixer => Some(Ok(AgentEnd::Finished(response.text))),
            ToolSet::Reviewer => match verdict::from_text(&response.text) {
                Ok(v) => Some(Ok(AgentEnd::Verdict(v))),
                Err(why) if !retries.repaired => {
                    retries.repaired = true;
                    messages.push(Message::user(repair_request(&why)));
                    None
                }
                Err(why) => Some(Err(format!(
                    "unparseable verdict after one repair request: {why}"
                ))),
            },
        }
    }

    /// Runs one answer's tool calls within the caps: their results (images after every
    /// result) and the turn's end if a call ended it. An error is a second invalid verdict.
    async fn run_calls(
        &self,
        calls: &[ToolCall],
        repaired: &mut bool,
    ) -> Result<(Vec<Content>, Option<AgentEnd>), String> {
        let mut results = Vec::new();
        let mut images = Vec::new();
        let mut ended = None;
        let mut nth = 0;
        let mut refused = 0;
        for call in calls {
            tracing::debug!(agent = self.role.as_str(), tool = %call.name, "tool call");
            if !ToolBox::ends_turn(&call.name) {
                nth += 1;
                if let Err(why) = self.calls.admit(nth) {
                    refused += 1;
                    results.push(Content::ToolResult {
                        call_id: call.id.clone(),
                        content: why,
                        is_error: true,
                    });
                    continue;
                }
            }
            let out = self.tools.execute(self.tool_set, call).await;
            match out.end {
                Some(TurnEnd::Verdict(args)) => match verdict::from_value(&args) {
                    Ok(v) => ended = Some(AgentEnd::Verdict(v)),
                    Err(why) if !*repaired => {
                        *repaired = true;
                        results.push(Content::ToolResult {
                            call_id: call.id.clone(),
                            content: repair_request(&why),
                            is_error: true,
                        });
                        continue;
                    }
                    Err(why) => {
                        return Err(format!("invalid verdict after one repair request: {why}"));
                    }
                },
                Some(TurnEnd::Finish(summary)) => ended = Some(AgentEnd::Finished(summary)),
                None => {}
            }
            images.extend(out.images.into_iter().map(|i| Content::Image {
                media_type: i.media_type,
                data: i.data,
                tokens: i.tokens,
                call_id: Some(call.id.clone()),
            }));
            results.push(Content::ToolResult {
                call_id: call.id.clone(),
                content: out.content,
                is_error: out.is_error,
            });
        }
        // Images after every result: providers want the results first.
        results.append(&mut images);
        if refused > 0 {
            tracing::warn!(
                agent = self.role.as_str(),
                refused,
                asked = calls.len(),
                "tool calls over the cap were not run"
            );
        }
        Ok((results, ended))
    }
}

/// The one-time retries a turn allows: a verdict repair request and a cut-off continuation.
#[derive(Default)]
struct Retries {
    repaired: bool,
    continued: bool,
}

/// Adds the next task to a conversation left by [`Agent::converse`]: into the last user message
/// (after the results of the calls that ended the turn), or as a new user message.
pub fn continue_with(messages: &mut Vec<Message>, task: String) {
    match messages.last_mut() {
        Some(last) if last.speaker == Speaker::User => last.content.push(Content::Text(task)),
        _ => messages.push(Message::user(task)),
    }
}

/// Asked once after an answer cut at the output limit without a tool call.
const CUT_OFF: &str = "Your answer was cut off at the output limit. Be brief: end your turn now \
                       with a tool call (`submit_verdict` or `finish`), or call the next tool.";

fn repair_request(why: &str) -> String {
    format!(
        "Your verdict could not be read: {why}. Call `submit_verdict` once with a JSON object \
         {{status: \"approved\"|\"rejected\", score: 0-100, confidence: 0-1, summary, criteria: [...], issues: [...]}} \
         exactly as specified."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_count_per_answer_and_per_iteration_and_a_new_iteration_starts_from_zero() {
        let calls = ToolCalls::new(ToolCaps {
            per_turn: 2,
            per_iteration: 3,
        });
        assert!(calls.admit(1).is_ok());
        assert!(calls.admit(2).is_ok());
        let over_turn = calls.admit(3).unwrap_err();
        assert!(over_turn.contains("max_tool_calls_per_turn"), "{over_turn}");
        assert!(calls.admit(1).is_ok(), "a new answer");
        let over_iteration = calls.admit(2).unwrap_err();
        assert!(
            over_iteration.contains("max_tool_calls_per_iteration"),
            "{over_iteration}"
        );
        calls.new_iteration();
        assert!(calls.admit(1).is_ok());
        assert!(ToolBox::ends_turn("finish") && ToolBox::ends_turn("submit_verdict"));
        assert!(!ToolBox::ends_turn("run_command"));
    }
}
