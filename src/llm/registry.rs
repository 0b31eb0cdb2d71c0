//! The model registry: per model id, the wire API it speaks, its context window and output
//! limit, how its thinking is configured, and its list prices with their source and date.
//! Compiled in ([`BUILTIN`]) and overridable per model in the config (`models:`).
//!
//! A built-in entry matches its exact id, a dated snapshot of it (`claude-sonnet-4-5-20250929`,
//! `gpt-4.1-2025-04-14`, `claude-opus-4-6@20260101`) and a router prefix
//! (`anthropic/claude-sonnet-4-6`) — never another model of the family: `claude-opus-4-9` is not
//! priced as `claude-opus-4`, `gpt-5.4` not as `gpt-5`. An unknown id has no price (its cost is
//! reported as unknown, and `max_cost_usd` refuses to start without one). The config's entries
//! also match as prefixes (`llama3.1` covers `llama3.1:8b`) and win field by field.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::thinking::Effort;

/// Which API a model is called through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Api {
    /// Anthropic Messages (`/v1/messages`).
    Messages,
    /// OpenAI Chat Completions (`/chat/completions`), also every compatible server.
    Chat,
    /// OpenAI Responses (`/responses`).
    Responses,
}

impl Api {
    pub fn as_str(self) -> &'static str {
        match self {
            Api::Messages => "messages",
            Api::Chat => "chat",
            Api::Responses => "responses",
        }
    }
}

/// How a model's thinking is configured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ThinkingStyle {
    /// The model does not think: a thinking setting is ignored (with a warning).
    None,
    /// Anthropic extended thinking with `budget_tokens` (Claude 4.5 and earlier).
    Budget,
    /// Anthropic adaptive thinking with `output_config.effort` (Claude 4.6 and later; the
    /// Claude 5 family answers 400 to a budget).
    Adaptive,
    /// OpenAI reasoning effort (`reasoning_effort`, `reasoning.effort`).
    Effort,
}

impl ThinkingStyle {
    pub fn as_str(self) -> &'static str {
        match self {
            ThinkingStyle::None => "none",
            ThinkingStyle::Budget => "budget",
            ThinkingStyle::Adaptive => "adaptive",
            ThinkingStyle::Effort => "effort",
        }
    }
}

/// Prices in USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Rates {
    /// Uncached input.
    pub input: f64,
    pub output: f64,
    /// Input read from the prompt cache (default: the input price).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read: Option<f64>,
    /// Input written to the prompt cache (default: the input price).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write: Option<f64>,
}

/// Rates that apply to a whole request whose prompt (input, cache reads and writes) is longer
/// than `above` tokens (OpenAI above 272K input tokens; Claude Haiku 5.5 above 100K).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LongContext {
    pub above: u64,
    #[serde(flatten)]
    pub rates: Rates,
}

/// A model's price: its rates, and other rates for long prompts.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Price {
    #[serde(flatten)]
    pub rates: Rates,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub long_context: Option<LongContext>,
}

impl Price {
    /// USD for one call's `usage`.
    pub fn cost(&self, usage: &super::Usage) -> f64 {
        let prompt = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens;
        let r = match self.long_context {
            Some(l) if prompt > l.above => l.rates,
            _ => self.rates,
        };
        let per = |tokens: u64, price: f64| tokens as f64 * price / 1e6;
        per(usage.input_tokens, r.input)
            + per(usage.output_tokens, r.output)
            + per(usage.cache_read_tokens, r.cache_read.unwrap_or(r.input))
            + per(usage.cache_write_tokens, r.cache_write.unwrap_or(r.input))
    }
}

/// A config entry under `models:` (every field optional; given fields win over the built-in
/// entry's). A price needs both `input` and `output`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelEntry {
    /// `messages` (Anthropic), `chat` (Chat Completions) or `responses` (OpenAI Responses).
    /// For `openai-compatible` servers the default is `chat`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api: Option<Api>,
    /// Input tokens the model takes (default 128000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
    /// Output tokens the model can give in one answer (thinking included).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output: Option<u32>,
    /// `none`, `budget`, `adaptive` or `effort`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<ThinkingStyle>,
    /// The highest effort level the model takes (higher settings are lowered to it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_effort: Option<Effort>,
    /// USD per million uncached input tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<f64>,
    /// USD per million output tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<f64>,
    /// USD per million input tokens read from the cache (default: the input price).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read: Option<f64>,
    /// USD per million input tokens written to the cache (default: the input price).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write: Option<f64>,
    /// Other rates for requests whose prompt is longer than `above` tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub long_context: Option<LongContext>,
}

impl ModelEntry {
    /// Why this entry cannot be used, if it cannot (checked when the config is read).
    pub fn problem(&self) -> Option<String> {
        let priced = [self.cache_read, self.cache_write]
            .iter()
            .any(Option::is_some)
            || self.long_context.is_some();
        let rates = [self.input, self.output, self.cache_read, self.cache_write];
        if rates.iter().flatten().any(|p| !p.is_finite() || *p < 0.0) {
            return Some("prices must be numbers ≥ 0".into());
        }
        match (self.input, self.output) {
            (Some(_), None) | (None, Some(_)) => {
                Some("a price needs both `input` and `output`".into())
            }
            (None, None) if priced => {
                Some("cache or long-context prices need `input` and `output` too".into())
            }
            _ if self.context_window == Some(0) || self.max_output == Some(0) => {
                Some("`context_window` and `max_output` must be at least 1".into())
            }
            _ => None,
        }
    }

    fn price(&self) -> Option<Price> {
        Some(Price {
            rates: Rates {
                input: self.input?,
                output: self.output?,
                cache_read: self.cache_read,
                cache_write: self.cache_write,
            },
            long_context: self.long_context,
        })
    }
}

/// What a run knows about one model.
#[derive(Debug, Clone, PartialEq)]
pub struct Model {
    /// `None`: the provider decides (unknown id).
    pub api: Option<Api>,
    pub context_window: u64,
    /// `None`: unknown (the provider's own default output limit is used).
    pub max_output: Option<u32>,
    /// `None`: unknown.
    pub thinking: Option<ThinkingStyle>,
    pub max_effort: Option<Effort>,
    /// Largest `max_tokens` the `anthropic` SDK sends without streaming for this model.
    pub nonstreaming_max: Option<u32>,
    pub price: Option<Price>,
    /// Where the entry comes from: the built-in table's source and date, or `config`.
    pub source: Option<&'static str>,
}

/// Used when a model's window is unknown.
pub const DEFAULT_CONTEXT_WINDOW: u64 = 128_000;

/// One built-in entry.
struct Builtin {
    id: &'static str,
    api: Api,
    context: u64,
    max_output: u32,
    thinking: ThinkingStyle,
    max_effort: Option<Effort>,
    nonstreaming_max: Option<u32>,
    price: Option<Price>,
    source: &'static str,
}

const ANTHROPIC: &str = "platform.claude.com model pages and pricing, checked 2026-11-23";
const OPENAI: &str =
    "developers.openai.com model pages and openai.com/api/pricing, checked 2026-11-23";

const fn rates(input: f64, output: f64, cache_read: f64, cache_write: f64) -> Rates {
    Rates {
        input,
        output,
        cache_read: Some(cache_read),
        cache_write: Some(cache_write),
    }
}

const fn price(input: f64, output: f64, cache_read: f64, cache_write: f64) -> Option<Price> {
    Some(Price {
        rates: rates(input, output, cache_read, cache_write),
        long_context: None,
    })
}

/// A Claude model on the Messages API.
const fn claude(
    id: &'static str,
    context: u64,
    max_output: u32,
    thinking: ThinkingStyle,
    price: Option<Price>,
) -> Builtin {
    Builtin {
        id,
        api: Api::Messages,
        context,
        max_output,
        thinking,
        max_effort: match thinking {
            ThinkingStyle::Adaptive => Some(Effort::Max),
            _ => None,
        },
        nonstreaming_max: None,
        price,
        source: ANTHROPIC,
    }
}

/// An OpenAI model.
const fn gpt(
    id: &'static str,
    api: Api,
    context: u64,
    max_output: u32,
    max_effort: Option<Effort>,
    price: Option<Price>,
) -> Builtin {
    Builtin {
        id,
        api,
        context,
        max_output,
        thinking: match max_effort {
            Some(_) => ThinkingStyle::Effort,
            None => ThinkingStyle::None,
        },
        max_effort,
        nonstreaming_max: None,
        price,
        source: OPENAI,
    }
}

/// OpenAI's GPT-6 pricing for prompts over 272K input tokens: input and cache rates doubled,
/// output 1.5×, for the whole request.
const fn gpt6(input: f64, output: f64, cache_read: f64, cache_write: f64) -> Option<Price> {
    Some(Price {
        rates: rates(input, output, cache_read, cache_write),
        long_context: Some(LongContext {
            above: 272_000,
            rates: rates(
                input * 2.0,
                output * 1.5,
                cache_read * 2.0,
                cache_write * 2.0,
            ),
        }),
    })
}

use ThinkingStyle::{Adaptive, Budget};

/// Current Anthropic and OpenAI models: list prices in USD per million tokens (Anthropic cache
/// writes at the 5-minute rate; OpenAI cached input as listed, cache writes where listed).
/// Models without a published price here are left out on purpose. Claude Sonnet 4.5 reaches end
/// of life on 2026-11-30 (kept so its runs are priced until then).
const BUILTIN: &[Builtin] = &[
    claude(
        "claude-fable-5-2",
        1_000_000,
        128_000,
        Adaptive,
        price(8.0, 40.0, 0.8, 10.0),
    ),
    claude(
        "claude-fable-5-1",
        1_000_000,
        128_000,
        Adaptive,
        price(10.0, 50.0, 0.25, 12.5),
    ),
    claude(
        "claude-fable-5",
        1_000_000,
        128_000,
        Adaptive,
        price(10.0, 50.0, 1.0, 12.5),
    ),
    claude(
        "claude-opus-5-5",
        1_000_000,
        128_000,
        Adaptive,
        price(4.0, 20.0, 0.4, 5.0),
    ),
    claude(
        "claude-opus-5",
        1_000_000,
        128_000,
        Adaptive,
        price(5.0, 25.0, 0.5, 6.25),
    ),
    claude(
        "claude-sonnet-5-5",
        1_000_000,
        128_000,
        Adaptive,
        price(2.0, 10.0, 0.2, 2.5),
    ),
    claude(
        "claude-sonnet-5",
        1_000_000,
        128_000,
        Adaptive,
        price(2.0, 10.0, 0.2, 2.5),
    ),
    claude(
        "claude-opus-4-8",
        1_000_000,
        128_000,
        Adaptive,
        price(5.0, 25.0, 0.5, 6.25),
    ),
    claude(
        "claude-opus-4-7",
        1_000_000,
        128_000,
        Adaptive,
        price(5.0, 25.0, 0.5, 6.25),
    ),
    claude(
        "claude-opus-4-6",
        200_000,
        128_000,
        Adaptive,
        price(5.0, 25.0, 0.5, 6.25),
    ),
    claude(
        "claude-sonnet-4-6",
        200_000,
        64_000,
        Adaptive,
        price(3.0, 15.0, 0.3, 3.75),
    ),
    claude(
        "claude-opus-4-5",
        200_000,
        64_000,
        Budget,
        price(5.0, 25.0, 0.5, 6.25),
    ),
    Builtin {
        nonstreaming_max: Some(8_192),
        ..claude(
            "claude-opus-4-1",
            200_000,
            32_000,
            Budget,
            price(15.0, 75.0, 1.5, 18.75),
        )
    },
    Builtin {
        nonstreaming_max: Some(8_192),
        ..claude(
            "claude-opus-4",
            200_000,
            32_000,
            Budget,
            price(15.0, 75.0, 1.5, 18.75),
        )
    },
    claude(
        "claude-sonnet-4-5",
        200_000,
        64_000,
        Budget,
        price(3.0, 15.0, 0.3, 3.75),
    ),
    claude(
        "claude-sonnet-4",
        200_000,
        64_000,
        Budget,
        price(3.0, 15.0, 0.3, 3.75),
    ),
    claude(
        "claude-3-7-sonnet",
        200_000,
        64_000,
        Budget,
        price(3.0, 15.0, 0.3, 3.75),
    ),
    claude(
        "claude-haiku-4-5",
        200_000,
        64_000,
        Budget,
        price(1.0, 5.0, 0.1, 1.25),
    ),
    claude(
        "claude-3-5-haiku",
        200_000,
        8_192,
        ThinkingStyle::None,
        price(0.8, 4.0, 0.08, 1.0),
    ),
    gpt(
        "gpt-6.2-sol",
        Api::Responses,
        922_000,
        128_000,
        Some(Effort::Max),
        gpt6(2.0, 10.0, 0.1, 2.5),
    ),
    gpt(
        "gpt-6-sol",
        Api::Responses,
        922_000,
        128_000,
        Some(Effort::Max),
        gpt6(2.0, 10.0, 0.2, 2.5),
    ),
    gpt(
        "gpt-5",
        Api::Chat,
        272_000,
        128_000,
        Some(Effort::High),
        price(1.25, 10.0, 0.125, 1.25),
    ),
    gpt(
        "gpt-5-mini",
        Api::Chat,
        272_000,
        128_000,
        Some(Effort::High),
        price(0.25, 2.0, 0.025, 0.25),
    ),
    gpt(
        "gpt-5-nano",
        Api::Chat,
        272_000,
        128_000,
        Some(Effort::High),
        price(0.05, 0.4, 0.005, 0.05),
    ),
    gpt(
        "gpt-4.1",
        Api::Chat,
        1_047_576,
        32_768,
        None,
        price(2.0, 8.0, 0.5, 2.0),
    ),
    gpt(
        "gpt-4.1-mini",
        Api::Chat,
        1_047_576,
        32_768,
        None,
        price(0.4, 1.6, 0.1, 0.4),
    ),
    gpt(
        "gpt-4.1-nano",
        Api::Chat,
        1_047_576,
        32_768,
        None,
        price(0.1, 0.4, 0.025, 0.1),
    ),
    gpt(
        "gpt-4o",
        Api::Chat,
        128_000,
        16_384,
        None,
        price(2.5, 10.0, 1.25, 2.5),
    ),
    gpt(
        "gpt-4o-mini",
        Api::Chat,
        128_000,
        16_384,
        None,
        price(0.15, 0.6, 0.075, 0.15),
    ),
    gpt(
        "o3",
        Api::Chat,
        200_000,
        100_000,
        Some(Effort::High),
        price(2.0, 8.0, 0.5, 2.0),
    ),
    gpt(
        "o3-mini",
        Api::Chat,
        200_000,
        100_000,
        Some(Effort::High),
        price(1.1, 4.4, 0.55, 1.1),
    ),
    gpt(
        "o4-mini",
        Api::Chat,
        200_000,
        100_000,
        Some(Effort::High),
        price(1.1, 4.4, 0.275, 1.1),
    ),
];

/// The built-in table plus the config's `models:` (which win, field by field).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Registry {
    overrides: BTreeMap<String, ModelEntry>,
}

impl Registry {
    pub fn new(overrides: BTreeMap<String, ModelEntry>) -> Self {
        Registry { overrides }
    }

    /// Everything known about `model`.
    pub fn model(&self, model: &str) -> Model {
        let id = model.rsplit('/').next().unwrap_or(model);
        let builtin = BUILTIN
            .iter()
            .find(|b| id.strip_prefix(b.id).is_some_and(is_snapshot));
        let entry = longest(&self.overrides, id).or_else(|| longest(&self.overrides, model));
        let mut m = match builtin {
            Some(b) => Model {
                api: Some(b.api),
                context_window: b.context,
                max_output: Some(b.max_output),
                thinking: Some(b.thinking),
                max_effort: b.max_effort,
                nonstreaming_max: b.nonstreaming_max,
                price: b.price,
                source: Some(b.source),
            },
            None => Model {
                api: None,
                context_window: DEFAULT_CONTEXT_WINDOW,
                max_output: None,
                thinking: None,
                max_effort: None,
                nonstreaming_max: None,
                price: None,
                source: None,
            },
        };
        if let Some(e) = entry {
            m.api = e.api.or(m.api);
            m.context_window = e.context_window.unwrap_or(m.context_window);
            m.max_output = e.max_output.or(m.max_output);
            m.thinking = e.thinking.or(m.thinking);
            m.max_effort = e.max_effort.or(m.max_effort);
            if let Some(p) = e.price() {
                m.price = Some(p);
            }
            m.source = Some("config");
        }
        m
    }

    /// The API the config's entry for `model` names, if any (compatible servers take only this).
    pub fn configured_api(&self, model: &str) -> Option<Api> {
        let id = model.rsplit('/').next().unwrap_or(model);
        longest(&self.overrides, model)
            .or_else(|| longest(&self.overrides, id))
            .and_then(|e| e.api)
    }

    /// The price of `model`, if known.
    pub fn price(&self, model: &str) -> Option<Price> {
        self.model(model).price
    }

    /// USD for `usage` on `model`, or `None` when the model has no price.
    pub fn cost(&self, model: &str, usage: &super::Usage) -> Option<f64> {
        Some(self.price(model)?.cost(usage))
    }

    pub fn context_window(&self, model: &str) -> u64 {
        self.model(model).context_window
    }
}

/// What follows a model id in one of its snapshots: nothing, or a date (`-20250929`,
/// `-2025-04-14`, `@20250929`).
fn is_snapshot(rest: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if rest.is_empty() {
        return true;
    }
    let Some(date) = rest.strip_prefix('-').or_else(|| rest.strip_prefix('@')) else {
        return false;
    };
    let parts: Vec<&str> = date.split('-').collect();
    match parts.as_slice() {
        [d] => d.len() == 8 && digits(d),
        [y, m, d] => {
            y.len() == 4 && m.len() == 2 && d.len() == 2 && [y, m, d].iter().all(|p| digits(p))
        }
        _ => false,
    }
}

/// The entry whose key is the longest prefix of `id` at a word boundary (`gpt-4o` matches
/// `gpt-4o-2024-08-06` but not `gpt-4o1`).
fn longest<'a>(entries: &'a BTreeMap<String, ModelEntry>, id: &str) -> Option<&'a ModelEntry> {
    entries
        .iter()
        .filter(|(k, _)| {
            id.strip_prefix(k.as_str())
                .is_some_and(|rest| rest.is_empty() || rest.starts_with(['-', '@', ':', '.']))
        })
        .max_by_key(|(k, _)| k.len())
        .map(|(_, e)| e)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::Usage;

    #[test]
    fn dated_and_routed_ids_find_their_entry_and_no_family_guess() {
        let r = Registry::default();
        let input = |m: &str| r.price(m).map(|p| p.rates.input);
        assert_eq!(input("claude-sonnet-4-5-20250929"), Some(3.0));
        assert_eq!(input("anthropic/claude-haiku-4-5"), Some(1.0));
        assert_eq!(input("gpt-4.1-mini-2025-04-14"), Some(0.4));
        assert_eq!(input("gpt-4o-2024-08-06"), Some(2.5));
        assert_eq!(input("gpt-4o-mini"), Some(0.15));
        assert_eq!(input("claude-opus-4-8"), Some(5.0));
        assert_eq!(input("claude-opus-4-6@20260101"), Some(5.0));
        assert_eq!(input("gpt-5-2025-08-07"), Some(1.25));
        assert_eq!(input("claude-sonnet-5-5"), Some(2.0));
        // Another model of the family has no guessed price or capabilities.
        for unknown in [
            "gpt-5.1",
            "gpt-5-pro",
            "claude-opus-4-9",
            "llama3.1:8b",
            "gpt-4oo",
        ] {
            let m = r.model(unknown);
            assert_eq!(
                (m.price, m.api, m.thinking),
                (None, None, None),
                "{unknown}"
            );
            assert_eq!(m.context_window, DEFAULT_CONTEXT_WINDOW);
        }
    }

    #[test]
    fn the_registry_knows_each_model_s_api_limits_and_thinking() {
        let r = Registry::default();
        let m = r.model("claude-sonnet-5-5");
        assert_eq!(m.api, Some(Api::Messages));
        assert_eq!(m.thinking, Some(ThinkingStyle::Adaptive));
        assert_eq!((m.context_window, m.max_output), (1_000_000, Some(128_000)));
        assert_eq!(
            r.model("claude-haiku-4-5").thinking,
            Some(ThinkingStyle::Budget)
        );
        assert_eq!(r.model("claude-opus-4-1").nonstreaming_max, Some(8_192));
        assert_eq!(r.model("gpt-6.2-sol").api, Some(Api::Responses));
        assert_eq!(r.model("gpt-5").api, Some(Api::Chat));
        assert_eq!(r.model("gpt-4.1").thinking, Some(ThinkingStyle::None));
        assert_eq!(r.model("o3").max_effort, Some(Effort::High));
        assert!(r.model("gpt-5").source.unwrap().contains("2026-11-23"));
    }

    #[test]
    fn costs_use_cache_rates_and_long_context_tiers() {
        let r = Registry::default();
        let usage = Usage {
            input_tokens: 1_000_000,
            output_tokens: 100_000,
            cache_read_tokens: 2_000_000,
            cache_write_tokens: 400_000,
        };
        // 3 + 1.5 + 0.6 + 1.5
        let c = r.cost("claude-sonnet-4-5", &usage).unwrap();
        assert!((c - 6.6).abs() < 1e-9, "{c}");
        // GPT-6.2 Sol: a 3.4M-token prompt is over 272K: 2× input and cache, 1.5× output.
        let c = r.cost("gpt-6.2-sol", &usage).unwrap();
        assert!((c - (4.0 + 1.5 + 0.4 + 2.0)).abs() < 1e-9, "{c}");
        let short = Usage {
            input_tokens: 200_000,
            output_tokens: 10_000,
            ..Usage::default()
        };
        let c = r.cost("gpt-6.2-sol", &short).unwrap();
        assert!((c - (0.4 + 0.1)).abs() < 1e-9, "{c}");
    }

    #[test]
    fn config_entries_match_by_prefix_and_win_field_by_field() {
        let r = Registry::new(BTreeMap::from([
            (
                "llama3.1".to_string(),
                ModelEntry {
                    input: Some(0.1),
                    output: Some(0.2),
                    context_window: Some(8192),
                    ..ModelEntry::default()
                },
            ),
            (
                "gpt-5".to_string(),
                ModelEntry {
                    api: Some(Api::Responses),
                    ..ModelEntry::default()
                },
            ),
        ]));
        let m = r.model("llama3.1:8b");
        assert_eq!(m.context_window, 8192);
        assert_eq!(m.source, Some("config"));
        let usage = Usage {
            input_tokens: 1_000_000,
            output_tokens: 100_000,
            cache_read_tokens: 2_000_000,
            cache_write_tokens: 400_000,
        };
        let c = r.cost("llama3.1:8b", &usage).unwrap();
        assert!((c - (0.1 + 0.02 + 0.2 + 0.04)).abs() < 1e-9, "{c}");
        // Only the api changes; the built-in price and limits stay.
        let m = r.model("gpt-5");
        assert_eq!(m.api, Some(Api::Responses));
        assert_eq!(m.price.unwrap().rates.input, 1.25);
        assert_eq!(m.max_output, Some(128_000));
    }

    #[test]
    fn incomplete_config_entries_are_refused_with_the_reason() {
        let half = ModelEntry {
            input: Some(1.0),
            ..ModelEntry::default()
        };
        assert!(
            half.problem()
                .unwrap()
                .contains("both `input` and `output`")
        );
        let cache_only = ModelEntry {
            cache_read: Some(0.1),
            ..ModelEntry::default()
        };
        assert!(cache_only.problem().is_some());
        let negative = ModelEntry {
            input: Some(-1.0),
            output: Some(1.0),
            ..ModelEntry::default()
        };
        assert!(negative.problem().unwrap().contains("≥ 0"));
        assert_eq!(ModelEntry::default().problem(), None);
    }
}
