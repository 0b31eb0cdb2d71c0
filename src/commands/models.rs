//! `qa-loop models`: the model registry as a run sees it — every built-in model with the
//! config's `models:` entries over it, then the config's own models — as a table, as JSON for
//! machines (`--json`, described by `schema/models.schema.json`), or as the Markdown table of
//! docs/providers.md (`--markdown`, statuses as recorded, without today's date).

use schemars::JsonSchema;
use serde::Serialize;

use crate::llm::Effort;
use crate::llm::registry::{
    self, Api, Builtin, Day, Lifecycle, ModelEntry, Price, Registry, Status, ThinkingStyle,
};

/// What `qa-loop models --json` prints.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(
    title = "qa-loop models",
    description = "The model registry with the config's `models:` entries applied (`qa-loop models --json`). See docs/providers.md#the-model-registry."
)]
pub struct ModelsView {
    /// The day (UTC, `YYYY-MM-DD`) each model's `lifecycle` is for.
    #[schemars(regex(pattern = r"^\d{4}-\d{2}-\d{2}$"))]
    pub today: String,
    pub models: Vec<ModelRow>,
}

/// One model.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelRow {
    /// The model id (a config entry's key: the ids it is a prefix of).
    pub id: String,
    /// The wire API it is called through; `null`: the provider decides.
    pub api: Option<Api>,
    /// Input tokens; `null`: unknown (a run assumes 128000).
    pub context_window: Option<u64>,
    /// Output tokens per answer, thinking included; `null`: unknown.
    pub max_output: Option<u32>,
    /// How its thinking is configured; `null`: unknown.
    pub thinking: Option<ThinkingStyle>,
    /// The highest effort level it takes.
    pub max_effort: Option<Effort>,
    /// List prices in USD per million tokens; `null`: none published (its cost is unknown).
    pub price: Option<Price>,
    /// As recorded (`deprecated` once a retirement day is known).
    pub status: Status,
    /// The day it stops being served (`YYYY-MM-DD`).
    #[schemars(regex(pattern = r"^\d{4}-\d{2}-\d{2}$"))]
    pub retires: Option<String>,
    /// The suggested model to move to.
    pub replacement: Option<String>,
    /// Where it stands on `today`: a run refuses a `retired` model and warns about a `retiring` one.
    pub lifecycle: Standing,
    /// Where each group of figures comes from.
    pub sources: Sources,
    /// Whether the config's `models:` changed or added this entry.
    pub configured: bool,
}

/// Where a model stands on a day.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Standing {
    Served,
    /// Retires within 30 days.
    Retiring,
    Retired,
}

/// The source of each group of figures.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Sources {
    /// Of `status`, `retires` and `replacement`.
    pub status: Source,
    /// Of `api`, `context_window`, `max_output`, `thinking` and `max_effort`.
    pub limits: Source,
    /// Of `price`.
    pub price: Source,
}

/// Where figures come from.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Source {
    /// A URL, an SDK file, `config`, or why there is none.
    pub source: String,
    /// The day it was checked (`YYYY-MM-DD`); `null` for the config and unknown models.
    #[schemars(regex(pattern = r"^\d{4}-\d{2}-\d{2}$"))]
    pub checked: Option<String>,
}

impl Source {
    fn of(source: &str, checked: &str) -> Source {
        Source {
            source: source.to_string(),
            checked: Some(checked.to_string()),
        }
    }

    fn config() -> Source {
        Source {
            source: "config".into(),
            checked: None,
        }
    }
}

/// The JSON Schema of [`ModelsView`] (committed as `schema/models.schema.json`).
pub fn schema() -> serde_json::Value {
    let mut schema =
        serde_json::to_value(schemars::schema_for!(ModelsView)).expect("the schema serializes");
    if let Some(obj) = schema.as_object_mut() {
        obj.insert(
            "$id".into(),
            "https://raw.githubusercontent.com/org/qa-loop/main/schema/models.schema.json".into(),
        );
    }
    schema
}

/// Every built-in model with the config's entries over it, then the config's own entries.
pub fn view(registry: &Registry, today: Day) -> ModelsView {
    let mut models: Vec<ModelRow> = registry::builtin()
        .iter()
        .map(|b| row(registry, &b.id, Some(b), today))
        .collect();
    for id in registry.configured() {
        if !registry::builtin().iter().any(|b| b.id == id) {
            models.push(row(registry, id, None, today));
        }
    }
    ModelsView {
        today: today.to_string(),
        models,
    }
}

/// One model's row: `registry`'s view of `id` (its built-in entry `b`, if any, for the sources).
fn row(registry: &Registry, id: &str, b: Option<&Builtin>, today: Day) -> ModelRow {
    let m = registry.model(id);
    let entry = registry.entry(id);
    let status = match m.status.unwrap_or(Status::Custom) {
        Status::Current if m.retires.is_some() => Status::Deprecated,
        s => s,
    };
    let lifecycle = match m.lifecycle(today) {
        Lifecycle::Served => Standing::Served,
        Lifecycle::Retiring { .. } => Standing::Retiring,
        Lifecycle::Retired { .. } => Standing::Retired,
    };
    ModelRow {
        id: id.to_string(),
        api: m.api,
        context_window: entry
            .and_then(|e| e.context_window)
            .or(b.and_then(|b| b.context)),
        max_output: m.max_output,
        thinking: m.thinking,
        max_effort: m.max_effort,
        price: m.price,
        status,
        retires: m.retires,
        replacement: m.replacement,
        lifecycle,
        sources: sources(b, entry),
        configured: entry.is_some(),
    }
}

/// The sources of a row: the config's for the groups its entry sets, else the built-in entry's.
fn sources(b: Option<&Builtin>, e: Option<&ModelEntry>) -> Sources {
    let set = |f: fn(&ModelEntry) -> bool| e.is_some_and(f);
    let none = || Source {
        source: "not in the registry".into(),
        checked: None,
    };
    let pick = |configured: bool, builtin: Option<Source>| match (configured, builtin) {
        (true, _) => Source::config(),
        (false, Some(s)) => s,
        (false, None) => none(),
    };
    Sources {
        status: pick(
            set(|e| e.retires.is_some() || e.replacement.is_some()) || b.is_none() && e.is_some(),
            b.map(|b| Source::of(&b.status_source, &b.status_checked)),
        ),
        limits: pick(
            set(|e| {
                e.api.is_some()
                    || e.context_window.is_some()
                    || e.max_output.is_some()
                    || e.thinking.is_some()
                    || e.max_effort.is_some()
            }),
            b.map(|b| Source::of(&b.limits_source, &b.limits_checked)),
        ),
        price: pick(
            set(|e| e.input.is_some() && e.output.is_some()),
            b.map(|b| Source::of(&b.price_source, &b.price_checked)),
        ),
    }
}

/// `1M`, `922K`, `8192`.
fn tokens(n: Option<u64>) -> String {
    match n {
        None => "—".into(),
        Some(n) if n >= 1_000_000 && n % 1_000_000 == 0 => format!("{}M", n / 1_000_000),
        Some(n) if n >= 1_000 && n % 1_000 == 0 => format!("{}K", n / 1_000),
        Some(n) => n.to_string(),
    }
}

fn usd(p: Option<f64>) -> String {
    p.map_or("—".into(), |p| p.to_string())
}

/// The cells every table shows: model, API, context / output, thinking, the four prices, the
/// long-prompt rates, and the status with its day and replacement.
fn cells(r: &ModelRow, code: bool) -> Vec<String> {
    let quote = |s: &str| {
        if code {
            format!("`{s}`")
        } else {
            s.to_string()
        }
    };
    let thinking = match (r.thinking, r.max_effort) {
        (Some(t), Some(e)) => format!("{} ≤ {}", t.as_str(), e.as_str()),
        (Some(t), None) => t.as_str().to_string(),
        (None, _) => "—".into(),
    };
    let rates = r.price.map(|p| p.rates);
    let long = r
        .price
        .and_then(|p| p.long_context)
        .map_or(String::new(), |l| {
            format!(
                "over {}: {} / {} / {} / {}",
                tokens(Some(l.above)),
                l.rates.input,
                l.rates.output,
                usd(l.rates.cache_read),
                usd(l.rates.cache_write)
            )
        });
    let mut status = r.status.as_str().to_string();
    if let Some(d) = &r.retires {
        let verb = if r.status == Status::Retired {
            ""
        } else {
            ", retires"
        };
        status.push_str(&format!("{verb} {d}"));
    }
    if let Some(to) = &r.replacement {
        status.push_str(&format!(" → {}", quote(to)));
    }
    vec![
        quote(&r.id),
        r.api.map_or("—".into(), |a| a.as_str().to_string()),
        format!(
            "{} / {}",
            tokens(r.context_window),
            tokens(r.max_output.map(u64::from))
        ),
        thinking,
        usd(rates.map(|r| r.input)),
        usd(rates.map(|r| r.output)),
        usd(rates.and_then(|r| r.cache_read)),
        usd(rates.and_then(|r| r.cache_write)),
        long,
        status,
    ]
}

const HEADER: [&str; 10] = [
    "model",
    "API",
    "context / output",
    "thinking",
    "input",
    "output",
    "cache read",
    "cache write",
    "long prompts (in / out / read / write)",
    "status",
];

/// The Markdown table of docs/providers.md: statuses as recorded (no day), sources per group.
pub fn markdown_table(v: &ModelsView) -> String {
    let mut out = format!("| {} | sources (checked) |\n", HEADER.join(" | "));
    out.push_str(&format!("|{}\n", "---|".repeat(HEADER.len() + 1)));
    for r in &v.models {
        let s = &r.sources;
        let source = |name: &str, s: &Source| match &s.checked {
            Some(d) => format!("{name}: {} ({d})", s.source),
            None => format!("{name}: {}", s.source),
        };
        let sources = [
            source("status", &s.status),
            source("limits", &s.limits),
            source("price", &s.price),
        ]
        .join("; ");
        let mut row = cells(r, true);
        row.push(sources);
        let row: Vec<String> = row.iter().map(|c| c.replace('|', "\\|")).collect();
        out.push_str(&format!("| {} |\n", row.join(" | ")));
    }
    out
}

/// The table for a terminal: aligned columns, today's standing after the status, and where the
/// price comes from.
pub fn table(v: &ModelsView) -> String {
    let mut rows: Vec<Vec<String>> = vec![HEADER.iter().map(|h| h.to_string()).collect()];
    rows[0].push("price source".into());
    for r in &v.models {
        let mut row = cells(r, false);
        match r.lifecycle {
            Standing::Retiring => row[9].push_str(" (retiring soon)"),
            Standing::Retired if r.status != Status::Retired => row[9].push_str(" (retired now)"),
            _ => {}
        }
        row.push(r.sources.price.source.clone());
        rows.push(row);
    }
    let widths: Vec<usize> = (0..rows[0].len())
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in &rows {
        let line: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c}{}", " ".repeat(w - c.chars().count())))
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out.push_str(&format!(
        "\nStatuses as of {} (UTC). Prices in USD per million tokens; — : not published in what the registry checked. Sources per figure: --json or --markdown.\n",
        v.today
    ));
    out
}

/// `qa-loop models [--json | --markdown]`: the registry with the config under `root` applied
/// (a config that does not load is bad input, exit 2, as for `validate`).
pub fn command(
    root: &std::path::Path,
    flags: &crate::config::FlagLayer,
    json: bool,
    markdown: bool,
) -> crate::error::Exit {
    let inputs = match crate::config::load_inputs(root, flags) {
        Ok(inputs) => inputs,
        Err(e) => {
            eprintln!("error: {}", crate::github::actions::inert(&e.to_string()));
            return crate::error::Exit::BadInput;
        }
    };
    let v = view(&inputs.settings.models.registry, Day::today());
    let text = if json {
        serde_json::to_string_pretty(&v).expect("the view serializes") + "\n"
    } else if markdown {
        markdown_table(&v)
    } else {
        table(&v)
    };
    // Config keys are the repository's text. A closed pipe (`| head`) is no error.
    let _ = std::io::Write::write_all(
        &mut std::io::stdout(),
        crate::github::actions::inert(&text).as_bytes(),
    );
    crate::error::Exit::Approved
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn the_view_applies_the_config_and_adds_its_own_models() {
        let registry = Registry::new(BTreeMap::from([
            (
                "claude-sonnet-5-5".to_string(),
                ModelEntry {
                    retires: Some("2026-12-07".into()),
                    replacement: Some("claude-sonnet-6".into()),
                    ..ModelEntry::default()
                },
            ),
            (
                "my-llm".to_string(),
                ModelEntry {
                    input: Some(0.5),
                    output: Some(1.5),
                    context_window: Some(32_000),
                    ..ModelEntry::default()
                },
            ),
        ]));
        let v = view(&registry, Day::parse("2026-11-27").unwrap());
        let get = |id: &str| v.models.iter().find(|r| r.id == id).unwrap();
        let sonnet = get("claude-sonnet-5-5");
        assert_eq!(
            (sonnet.status, sonnet.lifecycle, sonnet.configured),
            (Status::Deprecated, Standing::Retiring, true)
        );
        assert_eq!(sonnet.sources.status.source, "config");
        assert!(sonnet.sources.price.checked.is_some());
        let mine = get("my-llm");
        assert_eq!(
            (mine.status, mine.context_window),
            (Status::Custom, Some(32_000))
        );
        assert_eq!(mine.price.unwrap().rates.output, 1.5);
        assert_eq!(mine.sources.price.source, "config");
        let o3 = get("o3-mini");
        assert_eq!(
            (o3.status, o3.lifecycle),
            (Status::Retired, Standing::Retired)
        );
        // Unknown figures stay unknown (not the 128000 a run assumes).
        assert_eq!(get("claude-haiku-5-5").context_window, None);
        assert_eq!(v.models.last().unwrap().id, "my-llm");
    }

    #[test]
    fn the_tables_show_limits_prices_and_status() {
        let v = view(&Registry::default(), Day::parse("2026-11-27").unwrap());
        let md = markdown_table(&v);
        assert!(
            md.contains("| `claude-sonnet-4-5` | messages | 200K / 64K | budget | 3 | 15 | 0.3 | 3.75 |  | deprecated, retires 2026-11-30 → `claude-sonnet-5-5` | status: SDK anthropic 2.14.0"),
            "{md}"
        );
        assert!(md.contains("over 272K: 4 / 15 / 0.2 / 5"), "{md}");
        assert!(
            md.contains("| `o3-mini` | chat | 200K / 100K | effort ≤ high |"),
            "{md}"
        );
        let text = table(&v);
        assert!(text.contains("(retiring soon)"), "{text}");
        assert!(text.contains("Statuses as of 2026-11-27"), "{text}");
    }
}
