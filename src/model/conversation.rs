//! What a conversation scenario (SPEC §8) produced: its turns, the judge's verdict on each, and
//! how the scenario ended.

use serde::{Deserialize, Serialize};

/// The judge's decision on one agent reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JudgeVerdict {
    Pass,
    Fail,
    Continue,
}

impl JudgeVerdict {
    pub fn as_str(self) -> &'static str {
        match self {
            JudgeVerdict::Pass => "pass",
            JudgeVerdict::Fail => "fail",
            JudgeVerdict::Continue => "continue",
        }
    }
}

/// How a scenario ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScenarioOutcome {
    Passed,
    /// The judge said `fail`, or the hard turn or time limit was reached.
    Failed,
    /// The agent asked for an approval under `approval_mode: manual`: a human must look.
    NeedsHuman,
    /// The scenario could not be carried out: the agent did not answer, the judge failed.
    Error,
}

impl ScenarioOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            ScenarioOutcome::Passed => "passed",
            ScenarioOutcome::Failed => "failed",
            ScenarioOutcome::NeedsHuman => "needs_human",
            ScenarioOutcome::Error => "error",
        }
    }
}

/// One exchange: the user message qa-loop sent and the agent's reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Turn {
    /// 1-based.
    pub number: u32,
    pub user: String,
    /// The agent's full reply (bounded); empty when it did not answer.
    pub agent: String,
    /// The judge's decision; none for an approval prompt answered by `approval_mode`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<JudgeVerdict>,
    #[serde(default)]
    pub confidence: f64,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reasoning: String,
    /// Set when the reply was an approval prompt: how it was answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<String>,
    /// How long the agent took to reply.
    pub reply_ms: u64,
}

/// The result of one scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScenarioResult {
    pub name: String,
    pub required: bool,
    pub outcome: ScenarioOutcome,
    /// One line: why it ended so.
    pub reason: String,
    pub turns: Vec<Turn>,
    /// Soft turn limit passed, time limit passed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    pub pass_criteria: String,
    pub duration_ms: u64,
}

impl ScenarioResult {
    /// The conversation as plain text (JUnit `system-out`, the reviewer's evidence).
    pub fn transcript(&self) -> String {
        let mut out = String::new();
        for t in &self.turns {
            out.push_str(&format!("--- turn {} ---\nuser: {}\n", t.number, t.user));
            if t.agent.is_empty() {
                out.push_str("agent: (no reply)\n");
            } else {
                out.push_str(&format!("agent: {}\n", t.agent));
            }
            if let Some(a) = &t.approval {
                out.push_str(&format!("approval prompt: {a}\n"));
            }
            if let Some(v) = t.verdict {
                out.push_str(&format!(
                    "judge: {} (confidence {:.2}) {}\n",
                    v.as_str(),
                    t.confidence,
                    t.reasoning
                ));
            }
        }
        for w in &self.warnings {
            out.push_str(&format!("warning: {w}\n"));
        }
        out.push_str(&format!(
            "result: {}: {}\n",
            self.outcome.as_str(),
            self.reason
        ));
        out
    }
}
