//! How much an agent thinks: a token budget or an effort level, per agent, and how each is
//! turned into what a model takes (Anthropic's `budget_tokens` or adaptive thinking with
//! `output_config.effort`, OpenAI's `reasoning_effort` / `reasoning.effort`).

use std::fmt;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};

use super::types::AgentRole;

/// The smallest thinking budget the providers take.
pub const MIN_BUDGET: u32 = 1024;

/// An effort level, as both providers name them (OpenAI also has `none`/`minimal`, which
/// qa-loop never asks for).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Effort {
    Low,
    Medium,
    High,
    Xhigh,
    Max,
}

impl Effort {
    pub const ALL: [Effort; 5] = [
        Effort::Low,
        Effort::Medium,
        Effort::High,
        Effort::Xhigh,
        Effort::Max,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Effort::Low => "low",
            Effort::Medium => "medium",
            Effort::High => "high",
            Effort::Xhigh => "xhigh",
            Effort::Max => "max",
        }
    }

    /// The token budget an effort stands for where a model takes budgets.
    pub fn tokens(self) -> u32 {
        match self {
            Effort::Low => 4_096,
            Effort::Medium => 16_384,
            Effort::High => 32_000,
            Effort::Xhigh => 48_000,
            Effort::Max => 64_000,
        }
    }
}

/// An agent's thinking: a budget in tokens (at least 1024) or an effort level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Thinking {
    Tokens(u32),
    Effort(Effort),
}

impl Thinking {
    /// The effort level for models that take one (a budget maps to ≤ 4 096 low, ≤ 16 384
    /// medium, else high).
    pub fn effort(self) -> Effort {
        match self {
            Thinking::Effort(e) => e,
            Thinking::Tokens(0..=4_096) => Effort::Low,
            Thinking::Tokens(4_097..=16_384) => Effort::Medium,
            Thinking::Tokens(_) => Effort::High,
        }
    }

    /// The budget in tokens for models that take one.
    pub fn tokens(self) -> u32 {
        match self {
            Thinking::Tokens(n) => n,
            Thinking::Effort(e) => e.tokens(),
        }
    }
}

impl fmt::Display for Thinking {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Thinking::Tokens(n) => write!(f, "{n} tokens"),
            Thinking::Effort(e) => write!(f, "effort {}", e.as_str()),
        }
    }
}

impl FromStr for Thinking {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        if let Ok(n) = s.parse::<u64>() {
            return match u32::try_from(n) {
                Ok(n) if n >= MIN_BUDGET => Ok(Thinking::Tokens(n)),
                _ => Err(format!(
                    "`{s}`: a thinking budget is at least {MIN_BUDGET} tokens (the smallest the providers take)"
                )),
            };
        }
        Effort::ALL
            .into_iter()
            .find(|e| e.as_str().eq_ignore_ascii_case(s))
            .map(Thinking::Effort)
            .ok_or_else(|| {
                format!("`{s}`: expected a token budget (≥ {MIN_BUDGET}) or low, medium, high, xhigh or max")
            })
    }
}

impl<'de> Deserialize<'de> for Thinking {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(u64),
            Text(String),
        }
        let text = match Raw::deserialize(d)? {
            Raw::Number(n) => n.to_string(),
            Raw::Text(t) => t,
        };
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl Serialize for Thinking {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Thinking::Tokens(n) => s.serialize_u32(*n),
            Thinking::Effort(e) => s.serialize_str(e.as_str()),
        }
    }
}

impl JsonSchema for Thinking {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Thinking".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A thinking budget in tokens (at least 1024) or an effort level.",
            "oneOf": [
                {"type": "integer", "minimum": MIN_BUDGET},
                {"type": "string", "enum": ["low", "medium", "high", "xhigh", "max"]}
            ]
        })
    }
}

/// Thinking per agent; `None`: the model's default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ThinkingBudgets {
    pub reviewer: Option<Thinking>,
    pub fixer: Option<Thinking>,
    /// The conversation judge (default: as the reviewer).
    pub judge: Option<Thinking>,
}

impl ThinkingBudgets {
    pub fn of(&self, role: AgentRole) -> Option<Thinking> {
        match role {
            AgentRole::Reviewer | AgentRole::Analyst => self.reviewer,
            AgentRole::Judge => self.judge.or(self.reviewer),
            AgentRole::Fixer => self.fixer,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_and_efforts_parse_and_convert_both_ways() {
        assert_eq!("2048".parse(), Ok(Thinking::Tokens(2048)));
        assert_eq!("HIGH".parse(), Ok(Thinking::Effort(Effort::High)));
        assert!(
            "1023"
                .parse::<Thinking>()
                .unwrap_err()
                .contains("at least 1024")
        );
        assert!("lots".parse::<Thinking>().unwrap_err().contains("xhigh"));
        assert!("99999999999".parse::<Thinking>().is_err());
        assert_eq!(Thinking::Tokens(4096).effort(), Effort::Low);
        assert_eq!(Thinking::Tokens(16_000).effort(), Effort::Medium);
        assert_eq!(Thinking::Tokens(16_385).effort(), Effort::High);
        assert_eq!(Thinking::Effort(Effort::Max).tokens(), 64_000);
        let t: Thinking = serde_json::from_str("\"xhigh\"").unwrap();
        assert_eq!(t, Thinking::Effort(Effort::Xhigh));
        let t: Thinking = serde_json::from_str("3000").unwrap();
        assert_eq!(t, Thinking::Tokens(3000));
        assert!(serde_json::from_str::<Thinking>("100").is_err());
        let b = ThinkingBudgets {
            reviewer: Some(Thinking::Tokens(2048)),
            fixer: None,
            judge: None,
        };
        assert_eq!(b.of(AgentRole::Judge), Some(Thinking::Tokens(2048)));
        let b = ThinkingBudgets {
            judge: Some(Thinking::Effort(Effort::Low)),
            ..b
        };
        assert_eq!(b.of(AgentRole::Judge), Some(Thinking::Effort(Effort::Low)));
        assert_eq!(b.of(AgentRole::Fixer), None);
    }
}
