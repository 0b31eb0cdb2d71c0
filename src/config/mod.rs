//! Configuration: the config file, the plan's verification strategy, the spec's criteria, and
//! the run settings resolved from CLI, environment, file and defaults.

pub mod discover;
pub mod file;
pub mod load;
pub mod plan;
pub mod settings;
pub mod strategy;

use std::path::Path;

pub use file::{
    ApprovalMode, ConfigFile, ConversationsConfig, Mode, ProviderKind, RiskLevel, ScenarioConfig,
};
pub use settings::{FlagLayer, Settings, ToolCaps, Verbosity};
pub use strategy::{Criterion, CriterionSource, Strategy, Suite, SuiteKind};

use crate::error::InputError;

/// Everything a command needs to know before it runs anything.
#[derive(Debug, Clone)]
pub struct Inputs {
    pub settings: Settings,
    pub strategy: Strategy,
}

/// Loads config, plan and spec under `root` for a trusted run (a local run).
pub fn load_inputs(root: &Path, flags: &FlagLayer) -> Result<Inputs, InputError> {
    load_inputs_as(root, flags, true)
}

/// Loads config, plan and spec under `root` and resolves them for a run that is `trusted` or
/// not (decided before, SPEC §10): when it is not, a configuration inside the checkout cannot
/// widen trust (its `base_url`, `allow_workflow_edits`, `env_passthrough`, `fixer_command` are
/// ignored). Reads files only; on any error nothing has been run or written.
pub fn load_inputs_as(root: &Path, flags: &FlagLayer, trusted: bool) -> Result<Inputs, InputError> {
    let loaded = load::load_config(flags.config.as_deref(), root)?;
    let (config_path, file) = match loaded {
        Some((p, f)) => (Some(p), f),
        None => (None, ConfigFile::default()),
    };
    let widen = trusted
        || config_path
            .as_deref()
            .is_none_or(|p| !load::inside(p, root));
    let settings = Settings::resolve_as(
        root,
        flags,
        config_path.as_deref(),
        &file,
        crate::env_vars::var,
        widen,
    );
    let plan = match &settings.paths.plan {
        Some(p) if !p.exists() => return Err(InputError::file(p, "plan file not found")),
        Some(p) => plan::load_plan_strategy(p)?,
        None => plan::PlanStrategy::default(),
    };
    let spec_criteria = match &settings.paths.spec {
        Some(p) if !p.exists() => return Err(InputError::file(p, "spec file not found")),
        Some(p) => load::load_spec_criteria(p)?,
        None => Vec::new(),
    };
    let config_name = config_path
        .as_deref()
        .and_then(Path::file_name)
        .map_or_else(
            || "config".to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
    // The config file wins where both set a field (SPEC §3.1); criteria are merged, not replaced.
    let mut merged = file.strategy().or(plan.layer);
    let browser = browser_checks(
        &mut merged,
        plan.browser_checks,
        &settings,
        &file,
        &config_name,
    );
    let criteria = strategy::CriteriaLists {
        spec: spec_criteria,
        final_acceptance: plan.final_acceptance,
        config: config_criteria(&file, &config_name),
        plan: plan.criteria.into_iter().chain(browser.criteria).collect(),
    };
    let mut strategy = Strategy::resolve(&merged, criteria);
    // A subtask command a suite already runs is not run twice.
    strategy.checks = plan
        .checks
        .into_iter()
        .filter(|c| {
            !strategy
                .suites
                .iter()
                .any(|s| s.commands.contains(&c.command))
        })
        .collect();
    strategy.reviewer_checks = plan.reviewer_checks;
    strategy.reviewer_checks.extend(browser.lines);
    if strategy.suites.iter().all(|s| s.commands.is_empty()) {
        // Tests that exist but are not configured mean this is not a no-test project.
        strategy.discovered = discover::discover(root);
        strategy.no_test_project &= strategy.discovered.is_empty();
    }
    Ok(Inputs { settings, strategy })
}

/// The browser pages' checks: lines told to the reviewer, and the criteria of required pages.
struct BrowserChecks {
    lines: Vec<strategy::Sourced>,
    criteria: Vec<strategy::Sourced>,
}

/// Decides whether the merged `browser_verification` pages are carried out (a configured MCP
/// server drives them) or only told to the reviewer, and turns their checks into lines or
/// criteria; the pages stay in `merged` only when they are carried out.
fn browser_checks(
    merged: &mut file::StrategyLayer,
    plan_lines: Vec<strategy::Sourced>,
    settings: &Settings,
    file: &ConfigFile,
    config_name: &str,
) -> BrowserChecks {
    let mut checks = BrowserChecks {
        lines: plan_lines,
        criteria: Vec::new(),
    };
    let Some(b) = merged
        .browser_verification
        .take()
        .filter(|b| !b.pages.is_empty())
    else {
        return checks;
    };
    let server = b.server();
    let why_not = if settings.children.mcp_servers.contains_key(server) {
        b.problem()
    } else {
        Some(format!(
            "no MCP server `{server}` is configured under `mcp_servers` (docs/browser-verification.md)"
        ))
    };
    let in_config = file
        .browser_verification
        .as_ref()
        .is_some_and(|f| !f.pages.is_empty());
    match why_not {
        Some(why) => {
            // Asked for in the config: a warning; a plan's pages (Auto-Claude writes them
            // for every UI change) without a browser set up: a note.
            if in_config {
                tracing::warn!(
                    "browser verification is not carried out: {why}; its pages are told to the reviewer"
                );
            } else {
                tracing::info!("the plan's browser pages are told to the reviewer: {why}");
            }
            if in_config {
                checks.lines = pages_as_reviewer_lines(&b, config_name);
            }
        }
        None => {
            add_free_text_checks(&b, in_config, config_name, &mut checks);
            checks
                .lines
                .retain(|l| !l.text.starts_with("Browser page "));
            merged.browser_verification = Some(b);
        }
    }
    checks
}

/// The config's pages as one reviewer line each, for when no browser can load them.
fn pages_as_reviewer_lines(
    b: &file::BrowserVerificationConfig,
    config_name: &str,
) -> Vec<strategy::Sourced> {
    b.pages
        .iter()
        .enumerate()
        .map(|(i, p)| {
            strategy::Sourced::new(
                format!("Browser page {}: {}", p.url, p.checks.join(", ")),
                format!("{config_name}: browser_verification.pages[{i}]"),
            )
        })
        .collect()
}

/// Free-text checks of carried-out pages: criteria of a required page, checks of an advisory one.
fn add_free_text_checks(
    b: &file::BrowserVerificationConfig,
    in_config: bool,
    config_name: &str,
    checks: &mut BrowserChecks,
) {
    for (i, p) in b.pages.iter().enumerate() {
        let url = b.page_url(&p.url).unwrap_or_else(|_| p.url.clone());
        for c in p.checks.iter().filter(|c| !file::is_builtin_check(c)) {
            let item = strategy::Sourced::new(
                format!("In the browser, {url}: {}", c.trim()),
                format!(
                    "{}browser_verification.pages[{i}]",
                    if in_config {
                        format!("{config_name}: ")
                    } else {
                        String::new()
                    }
                ),
            );
            if b.required == Some(true) {
                checks.criteria.push(item);
            } else {
                checks.lines.push(item);
            }
        }
    }
}

/// The config file's `acceptance_criteria`, each with its origin.
fn config_criteria(file: &ConfigFile, config_name: &str) -> Vec<strategy::Sourced> {
    file.acceptance_criteria
        .clone()
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .map(|(i, c)| strategy::Sourced::new(c, format!("{config_name}: acceptance_criteria[{i}]")))
        .collect()
}

/// The JSON Schema of the config file (committed as `schema/qa-loop.schema.json`).
pub fn config_schema() -> serde_json::Value {
    let mut schema =
        serde_json::to_value(schemars::schema_for!(ConfigFile)).expect("the schema serializes");
    if let Some(obj) = schema.as_object_mut() {
        obj.insert(
            "$id".into(),
            "https://raw.githubusercontent.com/org/qa-loop/main/schema/qa-loop.schema.json".into(),
        );
    }
    schema
}
