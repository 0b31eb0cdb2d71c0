//! Prices and context windows of current Anthropic and OpenAI models, overridable in the config
//! (`prices:`). A built-in entry matches its exact id, a dated snapshot of it
//! (`claude-sonnet-4-5-20250929`, `gpt-4.1-2025-04-14`, `claude-opus-4-6@20260101`) and a router
//! prefix (`anthropic/claude-sonnet-4-6`) — never another model of the family: `claude-opus-4-8`
//! is not priced as `claude-opus-4`, `gpt-5.4` not as `gpt-5`. An unknown id has no price (its
//! cost is reported as unknown, and `max_cost_usd` refuses to start without one). The config's
//! entries also match as prefixes (`llama3.1` prices `llama3.1:8b`).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;

/// USD per million tokens, and the context window in tokens.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, serde::Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// Uncached input.
    pub input: f64,
    pub output: f64,
    /// Input read from the prompt cache (default: the input price).
    #[serde(default)]
    pub cache_read: Option<f64>,
    /// Input written to the prompt cache (Anthropic; default: the input price).
    #[serde(default)]
    pub cache_write: Option<f64>,
    /// Context window in tokens (default 128000).
    #[serde(default)]
    pub context_window: Option<u64>,
}

/// Used when a model's window is unknown.
pub const DEFAULT_CONTEXT_WINDOW: u64 = 128_000;

const fn p(input: f64, output: f64, cache_read: f64, cache_write: f64, context: u64) -> Price {
    Price {
        input,
        output,
        cache_read: Some(cache_read),
        cache_write: Some(cache_write),
        context_window: Some(context),
    }
}

/// List prices (USD per million tokens). Anthropic: platform.claude.com/docs/en/about-claude/pricing
/// (checked 2026-11-23; cache writes are the 5-minute rate) — Claude Sonnet 4.6 at the Sonnet 4.x
/// price ($3 / $15) it launched with. OpenAI: openai.com/api/pricing as of 2025-11 (cached input
/// as listed; no write surcharge). Models without a published price here are left out on purpose.
const BUILTIN: &[(&str, Price)] = &[
    ("claude-fable-5-1", p(10.0, 50.0, 0.25, 12.5, 200_000)),
    ("claude-fable-5", p(10.0, 50.0, 1.0, 12.5, 200_000)),
    ("claude-opus-5", p(5.0, 25.0, 0.5, 6.25, 200_000)),
    ("claude-opus-4-8", p(5.0, 25.0, 0.5, 6.25, 200_000)),
    ("claude-opus-4-7", p(5.0, 25.0, 0.5, 6.25, 200_000)),
    ("claude-opus-4-6", p(5.0, 25.0, 0.5, 6.25, 200_000)),
    ("claude-sonnet-4-6", p(3.0, 15.0, 0.3, 3.75, 200_000)),
    ("claude-opus-4-5", p(5.0, 25.0, 0.5, 6.25, 200_000)),
    ("claude-opus-4-1", p(15.0, 75.0, 1.5, 18.75, 200_000)),
    ("claude-opus-4", p(15.0, 75.0, 1.5, 18.75, 200_000)),
    ("claude-sonnet-4-5", p(3.0, 15.0, 0.3, 3.75, 200_000)),
    ("claude-sonnet-4", p(3.0, 15.0, 0.3, 3.75, 200_000)),
    ("claude-3-7-sonnet", p(3.0, 15.0, 0.3, 3.75, 200_000)),
    ("claude-haiku-4-5", p(1.0, 5.0, 0.1, 1.25, 200_000)),
    ("claude-3-5-haiku", p(0.8, 4.0, 0.08, 1.0, 200_000)),
    ("gpt-5", p(1.25, 10.0, 0.125, 1.25, 400_000)),
    ("gpt-5-mini", p(0.25, 2.0, 0.025, 0.25, 400_000)),
    ("gpt-5-nano", p(0.05, 0.4, 0.005, 0.05, 400_000)),
    ("gpt-4.1", p(2.0, 8.0, 0.5, 2.0, 1_047_576)),
    ("gpt-4.1-mini", p(0.4, 1.6, 0.1, 0.4, 1_047_576)),
    ("gpt-4.1-nano", p(0.1, 0.4, 0.025, 0.1, 1_047_576)),
    ("gpt-4o", p(2.5, 10.0, 1.25, 2.5, 128_000)),
    ("gpt-4o-mini", p(0.15, 0.6, 0.075, 0.15, 128_000)),
    ("o3", p(2.0, 8.0, 0.5, 2.0, 200_000)),
    ("o3-mini", p(1.1, 4.4, 0.55, 1.1, 200_000)),
    ("o4-mini", p(1.1, 4.4, 0.275, 1.1, 200_000)),
];

/// The built-in table plus the config's `prices:` (which win).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Prices {
    overrides: BTreeMap<String, Price>,
}

impl Prices {
    pub fn new(overrides: BTreeMap<String, Price>) -> Self {
        Prices { overrides }
    }

    /// The price of `model`: the config's entries first (the longest matching prefix), then the
    /// built-in entry of this exact model or a dated snapshot of it.
    pub fn of(&self, model: &str) -> Option<Price> {
        let id = model.rsplit('/').next().unwrap_or(model);
        longest(self.overrides.iter().map(|(k, v)| (k.as_str(), *v)), id)
            .or_else(|| longest(self.overrides.iter().map(|(k, v)| (k.as_str(), *v)), model))
            .or_else(|| {
                BUILTIN
                    .iter()
                    .find(|(k, _)| id.strip_prefix(k).is_some_and(is_snapshot))
                    .map(|(_, p)| *p)
            })
    }

    /// USD for `usage` on `model`, or `None` when the model has no price.
    pub fn cost(&self, model: &str, usage: &super::Usage) -> Option<f64> {
        let p = self.of(model)?;
        let per = |tokens: u64, price: f64| tokens as f64 * price / 1e6;
        Some(
            per(usage.input_tokens, p.input)
                + per(usage.output_tokens, p.output)
                + per(usage.cache_read_tokens, p.cache_read.unwrap_or(p.input))
                + per(usage.cache_write_tokens, p.cache_write.unwrap_or(p.input)),
        )
    }

    pub fn context_window(&self, model: &str) -> u64 {
        self.of(model)
            .and_then(|p| p.context_window)
            .unwrap_or(DEFAULT_CONTEXT_WINDOW)
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
fn longest<'a>(entries: impl Iterator<Item = (&'a str, Price)>, id: &str) -> Option<Price> {
    entries
        .filter(|(k, _)| {
            id.strip_prefix(k)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with(['-', '@', ':', '.']))
        })
        .max_by_key(|(k, _)| k.len())
        .map(|(_, p)| p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::Usage;

    #[test]
    fn dated_and_routed_ids_find_their_family_and_overrides_win() {
        let prices = Prices::default();
        assert_eq!(prices.of("claude-sonnet-4-5-20250929").unwrap().input, 3.0);
        assert_eq!(prices.of("anthropic/claude-haiku-4-5").unwrap().output, 5.0);
        assert_eq!(prices.of("gpt-4.1-mini-2025-04-14").unwrap().input, 0.4);
        assert_eq!(prices.of("gpt-4o-2024-08-06").unwrap().input, 2.5);
        assert_eq!(prices.of("gpt-4o-mini").unwrap().input, 0.15);
        // Another model of the family has no guessed price.
        assert!(prices.of("gpt-5.1").is_none());
        assert!(prices.of("gpt-5-pro").is_none());
        assert_eq!(prices.of("claude-opus-4-8").unwrap().input, 5.0);
        assert!(prices.of("claude-opus-4-9").is_none());
        assert_eq!(prices.of("claude-opus-4-6@20260101").unwrap().output, 25.0);
        assert_eq!(prices.of("gpt-5-2025-08-07").unwrap().input, 1.25);
        assert!(prices.of("llama3.1:8b").is_none());
        assert!(prices.of("gpt-4oo").is_none());
        assert_eq!(prices.context_window("llama3.1:8b"), DEFAULT_CONTEXT_WINDOW);
        let usage = Usage {
            input_tokens: 1_000_000,
            output_tokens: 100_000,
            cache_read_tokens: 2_000_000,
            cache_write_tokens: 400_000,
        };
        // 3 + 1.5 + 0.6 + 1.5
        let c = prices.cost("claude-sonnet-4-5", &usage).unwrap();
        assert!((c - 6.6).abs() < 1e-9, "{c}");
        let mine = Prices::new(BTreeMap::from([(
            "llama3.1".to_string(),
            Price {
                input: 0.1,
                output: 0.2,
                cache_read: None,
                cache_write: None,
                context_window: Some(8192),
            },
        )]));
        assert_eq!(mine.context_window("llama3.1:8b"), 8192);
        let c = mine.cost("llama3.1:8b", &usage).unwrap();
        assert!((c - (0.1 + 0.02 + 0.2 + 0.04)).abs() < 1e-9, "{c}");
    }
}
