//! The model registry: per model id, the wire API it speaks, its context window and output
//! limit, how its thinking is configured, its list prices, and where it stands with its provider
//! (current, deprecated with a retirement date and a replacement, retired) — each group of
//! figures with its source and the day it was checked. The data is `models.toml` next to this
//! file, compiled in and parsed once ([`builtin`]); the config's `models:` overrides it per model.
//!
//! A built-in entry matches its exact id, a dated snapshot of it (`claude-sonnet-4-5-20250929`,
//! `gpt-4.1-2025-04-14`, `claude-opus-4-6@20260101`) and a router prefix
//! (`anthropic/claude-sonnet-4-6`) — never another model of the family: `claude-opus-4-9` is not
//! priced as `claude-opus-4`, `gpt-5.3` not as `gpt-5`; an exact id wins over a snapshot match.
//! An unknown id has no price (its cost is reported as unknown, and `max_cost_usd` refuses to
//! start without one). The config's entries also match as prefixes (`llama3.1` covers
//! `llama3.1:8b`) and win field by field.

use std::collections::BTreeMap;
use std::sync::OnceLock;

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
/// than `above` tokens (OpenAI's GPT-6 models above 272K input tokens).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LongContext {
    pub above: u64,
    #[serde(flatten)]
    pub rates: Rates,
}

/// A model's price: its rates, and other rates for long prompts.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, JsonSchema)]
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

/// Where a model stands with its provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Served, no retirement announced.
    Current,
    /// Served until its `retires` date.
    Deprecated,
    /// No longer served by the provider's own API.
    Retired,
    /// Not a model the providers' SDKs list: one the config names, or kept on purpose.
    Custom,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Current => "current",
            Status::Deprecated => "deprecated",
            Status::Retired => "retired",
            Status::Custom => "custom",
        }
    }
}

/// A calendar day (UTC), counted from 1970-01-01.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Day(pub i64);

impl Day {
    /// Today, from the system clock (UTC).
    pub fn today() -> Day {
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        Day((secs / 86_400) as i64)
    }

    /// `YYYY-MM-DD`, a real date.
    pub fn parse(s: &str) -> Option<Day> {
        let digits = |p: &str, n: usize| p.len() == n && p.bytes().all(|b| b.is_ascii_digit());
        let mut parts = s.split('-');
        let (y, m, d) = (parts.next()?, parts.next()?, parts.next()?);
        if parts.next().is_some() || !digits(y, 4) || !digits(m, 2) || !digits(d, 2) {
            return None;
        }
        let (y, m, d): (i64, i64, i64) = (y.parse().ok()?, m.parse().ok()?, d.parse().ok()?);
        if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
            return None;
        }
        // Howard Hinnant's days-from-civil; a day past the month's end does not round-trip.
        let yy = if m <= 2 { y - 1 } else { y };
        let era = yy.div_euclid(400);
        let yoe = yy - era * 400;
        let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + d - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        let day = Day(era * 146_097 + doe - 719_468);
        (day.civil() == (y, m, d)).then_some(day)
    }

    /// (year, month, day).
    fn civil(self) -> (i64, i64, i64) {
        let z = self.0 + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let d = doy - (153 * mp + 2) / 5 + 1;
        let m = if mp < 10 { mp + 3 } else { mp - 9 };
        (yoe + era * 400 + i64::from(m <= 2), m, d)
    }

    /// The day `days` later.
    pub fn plus(self, days: i64) -> Day {
        Day(self.0 + days)
    }
}

impl std::fmt::Display for Day {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (y, m, d) = self.civil();
        write!(f, "{y:04}-{m:02}-{d:02}")
    }
}

/// How long before its retirement a model is warned about.
pub const RETIRING_WITHIN_DAYS: i64 = 30;

/// A model's standing on a given day.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lifecycle {
    /// Served (as far as the registry knows), not retiring within [`RETIRING_WITHIN_DAYS`].
    Served,
    /// Retires on `on`, `days` days from the day asked about.
    Retiring { on: Day, days: i64 },
    /// Retired on `on` when the date is known, else known retired by `by` (the day the
    /// registry's entry was checked).
    Retired { on: Option<Day>, by: Option<Day> },
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
    /// The day the model stops being served (`YYYY-MM-DD`): from then a run refuses it (exit 2;
    /// behind another base URL than the provider's own API, a warning), within 30 days before
    /// it a run warns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^\d{4}-\d{2}-\d{2}$"))]
    pub retires: Option<String>,
    /// The model to move to, named when the model retires.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replacement: Option<String>,
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
        if let Some(d) = self.retires.as_deref().filter(|d| Day::parse(d).is_none()) {
            return Some(format!("`retires: {d}` is not a date (YYYY-MM-DD)"));
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

    /// This entry's fields over `m`.
    fn apply(&self, m: &mut Model) {
        m.api = self.api.or(m.api);
        m.context_window = self.context_window.unwrap_or(m.context_window);
        m.max_output = self.max_output.or(m.max_output);
        m.thinking = self.thinking.or(m.thinking);
        m.max_effort = self.max_effort.or(m.max_effort);
        if let Some(p) = self.price() {
            m.price = Some(p);
        }
        if self.retires.is_some() {
            m.retires = self.retires.clone();
        }
        if self.replacement.is_some() {
            m.replacement = self.replacement.clone();
        }
        m.status = m.status.or(Some(Status::Custom));
        m.source = Some("config");
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
    /// Where the entry comes from: the built-in price's source and date, or `config`.
    pub source: Option<&'static str>,
    /// `None`: a model neither the registry nor the config knows.
    pub status: Option<Status>,
    /// The day it stops being served (`YYYY-MM-DD`).
    pub retires: Option<String>,
    /// The model to move to.
    pub replacement: Option<String>,
    /// The day the built-in status was checked.
    pub status_checked: Option<&'static str>,
}

impl Model {
    fn unknown() -> Model {
        Model {
            api: None,
            context_window: DEFAULT_CONTEXT_WINDOW,
            max_output: None,
            thinking: None,
            max_effort: None,
            nonstreaming_max: None,
            price: None,
            source: None,
            status: None,
            retires: None,
            replacement: None,
            status_checked: None,
        }
    }

    /// Where the model stands on `today`: retired from its `retires` day on (or when the registry
    /// marks it retired without a date), retiring within [`RETIRING_WITHIN_DAYS`] before it.
    pub fn lifecycle(&self, today: Day) -> Lifecycle {
        let on = self.retires.as_deref().and_then(Day::parse);
        match (self.status, on) {
            (_, Some(d)) if d <= today => Lifecycle::Retired {
                on: Some(d),
                by: None,
            },
            (Some(Status::Retired), None) => Lifecycle::Retired {
                on: None,
                by: self.status_checked.and_then(Day::parse),
            },
            (_, Some(d)) if d.0 - today.0 <= RETIRING_WITHIN_DAYS => Lifecycle::Retiring {
                on: d,
                days: d.0 - today.0,
            },
            _ => Lifecycle::Served,
        }
    }
}

/// Used when a model's window is unknown.
pub const DEFAULT_CONTEXT_WINDOW: u64 = 128_000;

/// One built-in entry, as `models.toml` gives it (see the file's header for each field).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Builtin {
    pub id: String,
    pub api: Api,
    pub status: Status,
    #[serde(default)]
    pub retires: Option<String>,
    #[serde(default)]
    pub replacement: Option<String>,
    pub status_source: String,
    pub status_checked: String,
    #[serde(default)]
    pub context: Option<u64>,
    #[serde(default)]
    pub max_output: Option<u32>,
    #[serde(default)]
    pub thinking: Option<ThinkingStyle>,
    #[serde(default)]
    pub max_effort: Option<Effort>,
    #[serde(default)]
    pub nonstreaming_max: Option<u32>,
    pub limits_source: String,
    pub limits_checked: String,
    #[serde(default)]
    pub input: Option<f64>,
    #[serde(default)]
    pub output: Option<f64>,
    #[serde(default)]
    pub cache_read: Option<f64>,
    #[serde(default)]
    pub cache_write: Option<f64>,
    #[serde(default)]
    pub long_context: Option<LongContext>,
    pub price_source: String,
    pub price_checked: String,
    /// `price_source, checked price_checked` (filled in after parsing).
    #[serde(skip)]
    source_line: String,
}

impl Builtin {
    /// The list price, when one is published.
    pub fn price(&self) -> Option<Price> {
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

    fn model(&'static self) -> Model {
        Model {
            api: Some(self.api),
            context_window: self.context.unwrap_or(DEFAULT_CONTEXT_WINDOW),
            max_output: self.max_output,
            thinking: self.thinking,
            max_effort: self.max_effort,
            nonstreaming_max: self.nonstreaming_max,
            price: self.price(),
            source: Some(&self.source_line),
            status: Some(self.status),
            retires: self.retires.clone(),
            replacement: self.replacement.clone(),
            status_checked: Some(&self.status_checked),
        }
    }
}

/// A model the providers' SDKs list that qa-loop does not call, and why.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Skip {
    pub id: String,
    pub reason: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Table {
    model: Vec<Builtin>,
    #[serde(default)]
    skip: Vec<Skip>,
}

/// `models.toml`, parsed once.
fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t: Table = toml::from_str(include_str!("models.toml"))
            .unwrap_or_else(|e| panic!("src/llm/models.toml: {e}"));
        for b in &mut t.model {
            b.source_line = format!("{}, checked {}", b.price_source, b.price_checked);
        }
        t
    })
}

/// The built-in entries, in the file's order.
pub fn builtin() -> &'static [Builtin] {
    &table().model
}

/// The SDK-listed models qa-loop does not call.
pub fn skipped() -> &'static [Skip] {
    &table().skip
}

/// The built-in entry for `id` (no router prefix): its exact id, else the entry `id` is a dated
/// snapshot of.
fn find(id: &str) -> Option<&'static Builtin> {
    let all = builtin();
    let exact = |id: &str| {
        all.iter().find(|b| b.id == id).or_else(|| {
            all.iter()
                .find(|b| id.strip_prefix(b.id.as_str()).is_some_and(is_snapshot))
        })
    };
    exact(id).or_else(|| exact(cloud_model_id(id)))
}

/// The model a cloud platform's id names (SPEC §5.1: Bedrock and Vertex ids map to the
/// registry's entry): Bedrock's `us.anthropic.claude-sonnet-5-5-v1:0` (an inference profile's
/// geography prefix, the `anthropic.` vendor, the `-vN:M` version) or an ARN's last part; Vertex's
/// `claude-sonnet-5-5@20251001` is a snapshot already.
pub fn cloud_model_id(id: &str) -> &str {
    let id = id.rsplit('/').next().unwrap_or(id);
    let id = id.split_once("anthropic.").map_or(id, |(geo, rest)| {
        // Only an inference profile's geography may precede the vendor.
        const GEOGRAPHIES: [&str; 9] = [
            "", "us.", "eu.", "apac.", "global.", "us-gov.", "jp.", "au.", "ca.",
        ];
        if GEOGRAPHIES.contains(&geo) { rest } else { id }
    });
    match id.rfind("-v") {
        Some(i)
            if id[i + 2..]
                .split(':')
                .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit())) =>
        {
            &id[..i]
        }
        _ => id,
    }
}

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
        let mut m = find(id).map_or_else(Model::unknown, Builtin::model);
        if self.entry(model).is_none()
            && let Some(e) = self.entry(cloud_model_id(model))
        {
            e.apply(&mut m);
        }
        if let Some(e) = self.entry(model) {
            e.apply(&mut m);
        }
        m
    }

    /// The config's entry that applies to `model` (the longest key it starts with), if any.
    pub fn entry(&self, model: &str) -> Option<&ModelEntry> {
        let id = model.rsplit('/').next().unwrap_or(model);
        longest(&self.overrides, id).or_else(|| longest(&self.overrides, model))
    }

    /// The config's `models:` keys.
    pub fn configured(&self) -> impl Iterator<Item = &str> {
        self.overrides.keys().map(String::as_str)
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

    /// Issue 50: Bedrock's model ids, inference profiles and ARNs map to the registry's entry.
    #[test]
    fn cloud_platform_ids_find_their_model() {
        for (id, want) in [
            ("us.anthropic.claude-sonnet-5-5-v1:0", "claude-sonnet-5-5"),
            (
                "global.anthropic.claude-sonnet-5-5-v1:0",
                "claude-sonnet-5-5",
            ),
            (
                "anthropic.claude-sonnet-4-5-20250929-v1:0",
                "claude-sonnet-4-5-20250929",
            ),
            (
                "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-sonnet-5-5-v1:0",
                "claude-sonnet-5-5",
            ),
            ("claude-sonnet-5-5@20251001", "claude-sonnet-5-5@20251001"),
            ("gpt-5.4", "gpt-5.4"),
            ("my.anthropic.fork.model", "my.anthropic.fork.model"),
        ] {
            assert_eq!(cloud_model_id(id), want, "{id}");
        }
        let r = Registry::default();
        assert_eq!(
            r.model("us.anthropic.claude-sonnet-5-5-v1:0"),
            r.model("claude-sonnet-5-5")
        );
        assert_eq!(
            r.price("anthropic.claude-sonnet-4-5-20250929-v1:0")
                .map(|p| p.rates.input),
            Some(3.0)
        );
    }

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
            "gpt-5.3",
            "gpt-5-turbo",
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

    /// Every entry of `models.toml` as the registry file's header promises: parsed, each id once,
    /// real dates, a status that agrees with its dates, a current replacement, prices complete or
    /// absent with a source saying so — never a guessed figure without its source.
    #[test]
    fn the_registry_file_parses_and_every_entry_is_consistent() {
        use std::collections::HashSet;
        let all = builtin();
        assert!(all.len() > 50, "{} entries", all.len());
        let mut ids = HashSet::new();
        let status_of: BTreeMap<&str, Status> =
            all.iter().map(|b| (b.id.as_str(), b.status)).collect();
        for b in all {
            let id = &b.id;
            assert!(ids.insert(id.as_str()), "{id}: listed twice");
            for (what, d) in [
                ("status_checked", &b.status_checked),
                ("limits_checked", &b.limits_checked),
                ("price_checked", &b.price_checked),
            ] {
                assert!(Day::parse(d).is_some(), "{id}: {what} `{d}` is not a date");
            }
            for (what, s) in [
                ("status_source", &b.status_source),
                ("limits_source", &b.limits_source),
                ("price_source", &b.price_source),
            ] {
                assert!(!s.trim().is_empty(), "{id}: {what} is empty");
            }
            let checked = Day::parse(&b.status_checked).unwrap();
            let retires = b.retires.as_deref().map(|d| {
                Day::parse(d).unwrap_or_else(|| panic!("{id}: retires `{d}` is not a date"))
            });
            match (b.status, retires) {
                (Status::Current, None) | (Status::Custom, _) => {}
                (Status::Deprecated, Some(d)) if d > checked => {}
                (Status::Retired, None) => {}
                (Status::Retired, Some(d)) if d <= checked => {}
                (s, _) => panic!("{id}: status {} with retires {:?}", s.as_str(), b.retires),
            }
            let leaving = matches!(b.status, Status::Deprecated | Status::Retired);
            assert_eq!(b.replacement.is_some(), leaving, "{id}: replacement");
            if let Some(r) = &b.replacement {
                assert_eq!(
                    status_of.get(r.as_str()),
                    Some(&Status::Current),
                    "{id}: {r}"
                );
            }
            let entry = ModelEntry {
                input: b.input,
                output: b.output,
                cache_read: b.cache_read,
                cache_write: b.cache_write,
                long_context: b.long_context,
                context_window: b.context,
                max_output: b.max_output,
                ..ModelEntry::default()
            };
            assert_eq!(entry.problem(), None, "{id}");
            let none = |s: &str| s.starts_with("none published");
            assert_eq!(
                b.price().is_none(),
                none(&b.price_source),
                "{id}: price_source"
            );
            let limits = b.context.is_some() || b.max_output.is_some() || b.thinking.is_some();
            assert_eq!(!limits, none(&b.limits_source), "{id}: limits_source");
        }
        for s in skipped() {
            assert!(!s.reason.trim().is_empty(), "{}: no reason", s.id);
            assert!(find(&s.id).is_none(), "{}: both skipped and listed", s.id);
        }
    }

    /// Issue 39: the figures the providers' model pages gave, the models added, the retired ones.
    #[test]
    fn the_corrected_figures_and_the_models_added_and_retired() {
        let r = Registry::default();
        let opus = r.price("claude-opus-5-5").unwrap();
        assert_eq!(opus.rates.cache_read, Some(0.2));
        assert_eq!(r.context_window("claude-opus-4-6"), 1_000_000);
        let sonnet = r.model("claude-sonnet-4-6");
        assert_eq!(
            (sonnet.context_window, sonnet.max_output),
            (1_000_000, Some(128_000))
        );
        // Issue 49: gpt-5.4 carries its model page's figures, long-context tier included.
        let g = r.price("gpt-5.4").unwrap();
        assert_eq!(
            (g.rates.input, g.rates.output, g.rates.cache_read),
            (2.5, 15.0, Some(0.25))
        );
        let tier = g.long_context.unwrap();
        assert_eq!(
            (tier.above, tier.rates.input, tier.rates.output),
            (272_000, 5.0, 22.5)
        );
        assert_eq!(r.context_window("gpt-5.4"), 1_050_000);
        // The model pages the search tool holds (translated copies), each with its tier.
        let terra = r.price("gpt-6.1-terra").unwrap();
        assert_eq!((terra.rates.input, terra.rates.output), (1.0, 5.0));
        assert_eq!(terra.long_context.unwrap().rates.cache_read, Some(0.1));
        assert_eq!(r.price("gpt-5-pro").unwrap().rates.output, 120.0);
        // Issue 49's named models: OpenAI's own page is not held here, the listings that agree are.
        let g = r.price("gpt-5.5").unwrap();
        assert_eq!(
            (g.rates.input, g.rates.output, g.rates.cache_read),
            (5.0, 30.0, Some(0.5))
        );
        assert_eq!(g.long_context.unwrap().rates.output, 45.0);
        let mini = r.price("gpt-5.4-mini").unwrap();
        assert_eq!((mini.rates.input, mini.rates.output), (0.75, 4.5));
        assert_eq!(mini.rates.cache_read, Some(0.075));
        // OpenAI's model index and pages the search tool holds.
        let astra = r.price("gpt-6-astra").unwrap();
        assert_eq!((astra.rates.input, astra.rates.output), (10.0, 50.0));
        assert_eq!(astra.long_context.unwrap().rates.output, 75.0);
        // No cached price of OpenAI's own: cached tokens count at the input price.
        assert_eq!(r.price("gpt-6.2-astra").unwrap().rates.cache_read, None);
        assert_eq!(
            r.price("gpt-5-codex").unwrap().rates.cache_read,
            Some(0.125)
        );
        assert_eq!(r.context_window("gpt-5.4-mini"), 400_000);
        let pro = r.price("gpt-5.5-pro").unwrap();
        assert_eq!((pro.rates.input, pro.rates.output), (30.0, 180.0));
        assert_eq!(r.price("gpt-5.2").unwrap().rates.output, 14.0);
        for current in ["claude-haiku-5-5", "gpt-6-cyber", "o1-pro"] {
            let m = r.model(current);
            assert_eq!(m.status, Some(Status::Current), "{current}");
            // Known, but without a published price: none is guessed.
            assert_eq!(m.price, None, "{current}");
        }
        assert_eq!(r.model("gpt-6-luna").api, Some(Api::Responses));
        for (retired, on) in [
            ("claude-opus-4", None),
            ("claude-3-7-sonnet", None),
            ("o3-mini", Some("2026-10-23")),
            ("gpt-4.1-nano-2025-04-14", Some("2026-10-23")),
        ] {
            let m = r.model(retired);
            assert_eq!(m.status, Some(Status::Retired), "{retired}");
            assert_eq!(m.retires.as_deref(), on, "{retired}");
        }
        let m = r.model("claude-sonnet-4-5-20250929");
        assert_eq!(m.retires.as_deref(), Some("2026-11-30"));
        assert_eq!(m.replacement.as_deref(), Some("claude-sonnet-5-5"));
    }

    #[test]
    fn an_exact_id_wins_over_a_snapshot_match() {
        let r = Registry::default();
        assert_eq!(
            r.model("gpt-4o-2024-05-13").retires.as_deref(),
            Some("2026-10-23")
        );
        assert_eq!(
            r.model("gpt-4o-2024-08-06").retires.as_deref(),
            Some("2027-01-14")
        );
    }

    #[test]
    fn days_parse_print_and_count() {
        let d = Day::parse("2026-11-30").unwrap();
        assert_eq!(d.to_string(), "2026-11-30");
        assert_eq!(Day::parse("1970-01-01"), Some(Day(0)));
        assert_eq!(d.plus(1).to_string(), "2026-12-01");
        assert_eq!(
            Day::parse("2028-02-28").unwrap().plus(1).to_string(),
            "2028-02-29"
        );
        assert_eq!(d.0 - Day::parse("2026-10-31").unwrap().0, 30);
        for bad in [
            "2026-02-30",
            "2026-13-01",
            "2026-1-01",
            "26-11-30",
            "2026-11-30x",
            "",
        ] {
            assert_eq!(Day::parse(bad), None, "{bad}");
        }
        assert!(Day::today() > d.plus(-365), "the clock is read");
    }

    #[test]
    fn where_a_model_stands_on_a_given_day() {
        let day = |s| Day::parse(s).unwrap();
        let r = Registry::default();
        let sonnet = r.model("claude-sonnet-4-5");
        assert_eq!(sonnet.lifecycle(day("2026-10-30")), Lifecycle::Served);
        assert_eq!(
            sonnet.lifecycle(day("2026-11-20")),
            Lifecycle::Retiring {
                on: day("2026-11-30"),
                days: 10
            }
        );
        let gone = Lifecycle::Retired {
            on: Some(day("2026-11-30")),
            by: None,
        };
        assert_eq!(sonnet.lifecycle(day("2026-11-30")), gone);
        assert_eq!(
            r.model("claude-opus-4").lifecycle(day("2026-12-01")),
            Lifecycle::Retired {
                on: None,
                by: Some(day("2026-11-26"))
            }
        );
        assert_eq!(
            r.model("claude-sonnet-5-5").lifecycle(day("2030-01-01")),
            Lifecycle::Served
        );
        assert_eq!(
            r.model("llama3.1").lifecycle(day("2030-01-01")),
            Lifecycle::Served
        );
        // The config's date wins: a custom model retiring, a built-in one kept longer.
        let r = Registry::new(BTreeMap::from([
            (
                "my-llm".to_string(),
                ModelEntry {
                    retires: Some("2026-12-07".into()),
                    replacement: Some("my-llm-2".into()),
                    ..ModelEntry::default()
                },
            ),
            (
                "claude-sonnet-4-5".to_string(),
                ModelEntry {
                    retires: Some("2027-06-30".into()),
                    ..ModelEntry::default()
                },
            ),
        ]));
        let m = r.model("my-llm:8b");
        assert_eq!(m.status, Some(Status::Custom));
        assert_eq!(m.replacement.as_deref(), Some("my-llm-2"));
        assert_eq!(
            m.lifecycle(day("2026-11-27")),
            Lifecycle::Retiring {
                on: day("2026-12-07"),
                days: 10
            }
        );
        assert_eq!(
            r.model("claude-sonnet-4-5").lifecycle(day("2026-12-01")),
            Lifecycle::Served
        );
        let bad = ModelEntry {
            retires: Some("next year".into()),
            ..ModelEntry::default()
        };
        assert!(bad.problem().unwrap().contains("not a date"), "{bad:?}");
    }
}
