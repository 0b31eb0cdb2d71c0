//! Reading an `implementation_plan.json` — another tool's file (Auto-Claude's planner writes
//! it, `apps/backend/prompts/planner.md`): unlike the config file, keys qa-loop does not know
//! are warnings naming the file and line, never errors; a known key with a wrong value is an
//! error naming it. What is read, and what it becomes:
//! - `verification_strategy`: qa-loop's own strategy keys; Auto-Claude's `verification_steps`
//!   become suite commands (by their `type`) or, without a command, criteria; `skip_validation:
//!   true` is a review-only (`trivial`) change; its planning notes are accepted as they are.
//! - `qa_acceptance`: the suites' `commands`, `required` and e2e `flows`; `services_to_test`,
//!   `browser_verification.pages` and the flows are told to the reviewer;
//!   `database_verification.checks` are criteria.
//! - `phases[].subtasks[].verification`: `command` runs as an advisory check named after the
//!   subtask; `api`, `browser`, `component`, `e2e` and `manual` are told to the reviewer.
//! - `final_acceptance`: criteria (after the spec's, SPEC §3.2).
//!
//! Everything keeps where it came from (`validate` shows it).

use std::path::Path;

use serde_json::{Map, Value};

use super::file::{StrategyLayer, SuiteConfig};
use super::strategy::{Check, Sourced};
use crate::error::InputError;

/// The settings of the config file's strategy, read from the plan with the config's rules.
const OURS: [&str; 11] = [
    "risk_level",
    "acceptance_criteria",
    "unit_tests",
    "integration_tests",
    "e2e_tests",
    "conversations",
    "timeout",
    "parallel",
    "flaky",
    "flaky_reruns",
    "pattern_checks",
];

/// Auto-Claude's keys that qa-loop reads (see [`apply_step`]).
const AUTO: [&str; 3] = [
    "verification_steps",
    "skip_validation",
    "browser_verification",
];

/// Auto-Claude's planning notes: accepted without a warning (nothing to run).
const NOTES: [&str; 5] = [
    "test_creation_phase",
    "test_types_required",
    "security_scanning_required",
    "staging_deployment_required",
    "reasoning",
];

/// What qa-loop takes from a plan.
#[derive(Debug, Clone, Default)]
pub struct PlanStrategy {
    /// The strategy settings (suites with their commands' origins).
    pub layer: StrategyLayer,
    /// `final_acceptance`.
    pub final_acceptance: Vec<Sourced>,
    /// `verification_strategy.acceptance_criteria`, steps without a command, and required
    /// `database_verification.checks`.
    pub criteria: Vec<Sourced>,
    /// Subtask commands.
    pub checks: Vec<Check>,
    /// What the reviewer is asked to walk through.
    pub reviewer_checks: Vec<Sourced>,
    /// `browser_verification.pages` as lines for the reviewer, for when no MCP server can
    /// drive a browser (the pages themselves are in `layer.browser_verification`).
    pub browser_checks: Vec<Sourced>,
}

/// Reads a plan (`path` names it in errors, warnings and origins).
pub fn strategy(path: &Path, text: &str) -> Result<PlanStrategy, InputError> {
    let plan: Value = serde_json::from_str(text).map_err(|e| InputError::from_json(path, &e))?;
    let Some(plan) = plan.as_object() else {
        return Err(InputError::at(path, 1, 1, "a plan must be a JSON object"));
    };
    let r = Reader {
        path,
        text,
        file: path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into(),
        ),
    };
    let mut out = PlanStrategy::default();
    if let Some(vs) = plan.get("verification_strategy").filter(|v| !v.is_null()) {
        r.verification_strategy(vs, &mut out)?;
    }
    if let Some(qa) = plan.get("qa_acceptance").filter(|v| !v.is_null()) {
        r.qa_acceptance(qa, &mut out)?;
    }
    if let Some(fa) = plan.get("final_acceptance").filter(|v| !v.is_null()) {
        for (i, t) in r
            .strings(fa, &["final_acceptance"])?
            .into_iter()
            .enumerate()
        {
            out.final_acceptance
                .push(Sourced::new(t, r.origin(&format!("final_acceptance[{i}]"))));
        }
    }
    if let Some(phases) = plan.get("phases").and_then(Value::as_array) {
        for (p, phase) in phases.iter().enumerate() {
            let subtasks = phase.get("subtasks").and_then(Value::as_array);
            for (k, subtask) in subtasks.into_iter().flatten().enumerate() {
                r.subtask(subtask, &format!("phases[{p}].subtasks[{k}]"), &mut out)?;
            }
        }
    }
    // A suite the plan requires but gives no command cannot pass: not a gate from the plan alone.
    for (key, suite) in [
        ("unit_tests", &mut out.layer.unit_tests),
        ("integration_tests", &mut out.layer.integration_tests),
        ("e2e_tests", &mut out.layer.e2e_tests),
    ] {
        if let Some(s) = suite
            .as_mut()
            .filter(|s| s.commands.is_empty() && s.junit.is_empty() && s.required == Some(true))
        {
            tracing::warn!(
                "{}: the plan requires `{key}` but gives it no command: not a gate (add its commands to the plan or to qa-loop.yml)",
                r.file
            );
            s.required = None;
        }
    }
    Ok(out)
}

/// Reads one plan, naming it in errors and origins.
struct Reader<'a> {
    path: &'a Path,
    text: &'a str,
    /// The file name, for origins.
    file: String,
}

impl Reader<'_> {
    fn origin(&self, at: &str) -> String {
        format!("{}: {at}", self.file)
    }

    /// An error at the key path (its line when it can be found).
    fn error(&self, keys: &[&str], why: impl std::fmt::Display) -> InputError {
        let (line, col) = position_of_path(self.text, keys);
        InputError::at(self.path, line, col, format!("`{}`: {why}", keys.join(".")))
    }

    fn warn_unknown(&self, obj: &Map<String, Value>, keys: &[&str], known: &[&str]) {
        for key in obj.keys().filter(|k| !known.contains(&k.as_str())) {
            let mut at = keys.to_vec();
            at.push(key);
            tracing::warn!(
                "{}:{}: `{}` is not a setting qa-loop knows: ignored",
                self.path.display(),
                position_of_path(self.text, &at).0,
                at.join(".")
            );
        }
    }

    /// A list of strings (a single string is a list of one; `null` is empty).
    fn strings(&self, v: &Value, keys: &[&str]) -> Result<Vec<String>, InputError> {
        match v {
            Value::Null => Ok(Vec::new()),
            Value::String(s) => Ok(vec![s.trim().to_string()]),
            Value::Array(a) => a
                .iter()
                .map(|x| match x {
                    Value::String(s) => Ok(s.trim().to_string()),
                    _ => Err(self.error(keys, "must be a list of strings")),
                })
                .filter(|x| !matches!(x, Ok(s) if s.is_empty()))
                .collect(),
            _ => Err(self.error(keys, "must be a list of strings")),
        }
    }

    fn object<'v>(
        &self,
        v: &'v Value,
        keys: &[&str],
    ) -> Result<&'v Map<String, Value>, InputError> {
        v.as_object()
            .ok_or_else(|| self.error(keys, "must be an object"))
    }

    fn verification_strategy(&self, vs: &Value, out: &mut PlanStrategy) -> Result<(), InputError> {
        let vs = self.object(vs, &["verification_strategy"])?;
        let known: Vec<&str> = OURS.iter().chain(&AUTO).chain(&NOTES).copied().collect();
        self.warn_unknown(vs, &["verification_strategy"], &known);
        // qa-loop's own settings, read from the text (errors keep their line and column).
        #[derive(serde::Deserialize)]
        struct View {
            #[serde(default)]
            verification_strategy: Option<StrategyLayer>,
        }
        let view: View = super::load::parse_json(self.path, self.text)?;
        let mut layer = view.verification_strategy.unwrap_or_default();
        for (key, suite) in [
            ("unit_tests", &mut layer.unit_tests),
            ("integration_tests", &mut layer.integration_tests),
            ("e2e_tests", &mut layer.e2e_tests),
        ] {
            if let Some(s) = suite {
                s.origins = (0..s.commands.len())
                    .map(|i| self.origin(&format!("verification_strategy.{key}.commands[{i}]")))
                    .collect();
            }
        }
        for (i, c) in layer
            .acceptance_criteria
            .take()
            .unwrap_or_default()
            .into_iter()
            .enumerate()
        {
            out.criteria.push(Sourced::new(
                c,
                self.origin(&format!("verification_strategy.acceptance_criteria[{i}]")),
            ));
        }
        if vs.get("skip_validation").and_then(Value::as_bool) == Some(true)
            && layer.risk_level.is_none()
        {
            layer.risk_level = Some(super::RiskLevel::Trivial);
        }
        let steps: &[Value] = match vs.get("verification_steps") {
            None | Some(Value::Null) => &[],
            Some(Value::Array(a)) => a,
            Some(_) => {
                return Err(self.error(
                    &["verification_strategy", "verification_steps"],
                    "must be a list",
                ));
            }
        };
        out.layer = layer;
        for (i, step) in steps.iter().enumerate() {
            self.step(step, i, out).map_err(|why| {
                self.error(
                    &["verification_strategy", "verification_steps"],
                    format!("[{i}]: {why}"),
                )
            })?;
        }
        if let Some(b) = vs.get("browser_verification").filter(|v| !v.is_null()) {
            self.browser(b, &["verification_strategy", "browser_verification"], out)?;
        }
        Ok(())
    }

    /// One of Auto-Claude's `verification_steps` (`{name, command, expected_outcome, type,
    /// required, blocking}`): a command joins the suite its `type` names (`e2e`/`browser` → e2e,
    /// `integration`/`api` → integration, else unit); a required, blocking step makes its suite
    /// a gate, a non-blocking one leaves it advisory unless another step requires it. A step
    /// without a command is a criterion ("name: expected outcome").
    fn step(&self, step: &Value, i: usize, out: &mut PlanStrategy) -> Result<(), String> {
        let step = step.as_object().ok_or("must be an object")?;
        let text = |k: &str| text_of(step, k);
        let (name, command, kind) = (text("name"), text("command"), text("type").to_lowercase());
        let at = format!(
            "verification_strategy.verification_steps[{i}]{}",
            if name.is_empty() {
                String::new()
            } else {
                format!(" ({name})")
            }
        );
        if command.is_empty() {
            let outcome = text("expected_outcome");
            let criterion = match (name.is_empty(), outcome.is_empty()) {
                (false, false) => format!("{name}: {outcome}"),
                (false, true) => name,
                (true, false) => outcome,
                (true, true) => return Err("has neither a command nor a name".into()),
            };
            out.criteria.push(Sourced::new(criterion, self.origin(&at)));
            return Ok(());
        }
        let suite = if kind.contains("e2e") || kind.contains("browser") {
            &mut out.layer.e2e_tests
        } else if kind.contains("integration") || kind.contains("api") {
            &mut out.layer.integration_tests
        } else {
            &mut out.layer.unit_tests
        };
        let suite = suite.get_or_insert_with(SuiteConfig::default);
        add_command(suite, command, self.origin(&at));
        let flag = |k: &str| step.get(k).and_then(Value::as_bool).unwrap_or(true);
        let gate = flag("required") && flag("blocking");
        suite.required = Some(suite.required.unwrap_or(false) || gate);
        Ok(())
    }

    /// `qa_acceptance`: `unit_tests`, `integration_tests`, `e2e_tests` (`required`, `commands`,
    /// `flows`, `services_to_test`), `browser_verification`, `database_verification`.
    fn qa_acceptance(&self, qa: &Value, out: &mut PlanStrategy) -> Result<(), InputError> {
        let qa = self.object(qa, &["qa_acceptance"])?;
        self.warn_unknown(
            qa,
            &["qa_acceptance"],
            &[
                "unit_tests",
                "integration_tests",
                "e2e_tests",
                "browser_verification",
                "database_verification",
            ],
        );
        for key in ["unit_tests", "integration_tests", "e2e_tests"] {
            let Some(v) = qa.get(key).filter(|v| !v.is_null()) else {
                continue;
            };
            let suite = self.qa_suite(key, v)?;
            self.add_qa_suite(key, suite, out);
        }
        if let Some(b) = qa.get("browser_verification").filter(|v| !v.is_null()) {
            self.browser(b, &["qa_acceptance", "browser_verification"], out)?;
        }
        if let Some(db) = qa.get("database_verification").filter(|v| !v.is_null()) {
            self.database_verification(db, out)?;
        }
        Ok(())
    }

    /// Reads one `qa_acceptance` suite (`key`), warning about what qa-loop does not use.
    fn qa_suite(&self, key: &str, v: &Value) -> Result<QaSuite, InputError> {
        let keys = ["qa_acceptance", key];
        let obj = self.object(v, &keys)?;
        self.warn_unknown(
            obj,
            &keys,
            &[
                "required",
                "commands",
                "command",
                "minimum_coverage",
                "services_to_test",
                "flows",
            ],
        );
        let commands = match obj.get("commands").or_else(|| obj.get("command")) {
            Some(c) => self.strings(c, &["qa_acceptance", key, "commands"])?,
            None => Vec::new(),
        };
        let required = match obj.get("required") {
            None | Some(Value::Null) => None,
            Some(Value::Bool(b)) => Some(*b),
            Some(_) => {
                return Err(
                    self.error(&["qa_acceptance", key, "required"], "must be true or false")
                );
            }
        };
        let flows = match obj.get("flows") {
            Some(f) => self.strings(f, &["qa_acceptance", key, "flows"])?,
            None => Vec::new(),
        };
        let services = match obj.get("services_to_test") {
            Some(f) => self.strings(f, &["qa_acceptance", key, "services_to_test"])?,
            None => Vec::new(),
        };
        if obj.get("minimum_coverage").is_some_and(|m| !m.is_null()) {
            tracing::warn!(
                "{}:{}: `qa_acceptance.{key}.minimum_coverage` needs coverage reports: set `{key}.coverage` and `minimum_coverage` in qa-loop.yml to gate on it; ignored",
                self.path.display(),
                position_of_path(self.text, &["qa_acceptance", key, "minimum_coverage"]).0
            );
        }
        Ok(QaSuite {
            commands,
            required,
            flows,
            services,
        })
    }

    /// Merges a `qa_acceptance` suite into the layer's suite of the same `key`, and tells the
    /// reviewer its flows and services.
    fn add_qa_suite(&self, key: &str, qa: QaSuite, out: &mut PlanStrategy) {
        let suite = match key {
            "unit_tests" => &mut out.layer.unit_tests,
            "integration_tests" => &mut out.layer.integration_tests,
            _ => &mut out.layer.e2e_tests,
        };
        if qa.commands.is_empty() && qa.required.is_none() && qa.flows.is_empty() {
            // Nothing to run or to require.
        } else {
            let suite = suite.get_or_insert_with(SuiteConfig::default);
            for (i, c) in qa.commands.into_iter().enumerate() {
                add_command(
                    suite,
                    c,
                    self.origin(&format!("qa_acceptance.{key}.commands[{i}]")),
                );
            }
            if let Some(r) = qa.required {
                suite.required = Some(suite.required.is_some_and(|s| s) || r);
            }
            for f in &qa.flows {
                if !suite.flows.contains(f) {
                    suite.flows.push(f.clone());
                }
            }
        }
        for (i, f) in qa.flows.iter().enumerate() {
            out.reviewer_checks.push(Sourced::new(
                format!("Walk through the flow `{f}`"),
                self.origin(&format!("qa_acceptance.{key}.flows[{i}]")),
            ));
        }
        if !qa.services.is_empty() {
            out.reviewer_checks.push(Sourced::new(
                format!(
                    "Check the services work together: {}",
                    qa.services.join(", ")
                ),
                self.origin(&format!("qa_acceptance.{key}.services_to_test")),
            ));
        }
    }

    /// `qa_acceptance.database_verification`: required checks are criteria, others hints.
    fn database_verification(&self, db: &Value, out: &mut PlanStrategy) -> Result<(), InputError> {
        let keys = ["qa_acceptance", "database_verification"];
        let obj = self.object(db, &keys)?;
        self.warn_unknown(obj, &keys, &["required", "checks"]);
        let required = obj.get("required").and_then(Value::as_bool) != Some(false);
        let checks = match obj.get("checks") {
            Some(c) => self.strings(c, &["qa_acceptance", "database_verification", "checks"])?,
            None => Vec::new(),
        };
        for (i, c) in checks.into_iter().enumerate() {
            let item = Sourced::new(
                format!("Database: {c}"),
                self.origin(&format!("qa_acceptance.database_verification.checks[{i}]")),
            );
            // Required checks are criteria the reviewer must judge; the others are hints.
            if required {
                out.criteria.push(item);
            } else {
                out.reviewer_checks.push(item);
            }
        }
        Ok(())
    }

    /// `browser_verification: {required, pages: [{url, checks}]}`: verified in a browser when
    /// an MCP server can drive one, else told to the reviewer.
    fn browser(&self, b: &Value, keys: &[&str], out: &mut PlanStrategy) -> Result<(), InputError> {
        let obj = self.object(b, keys)?;
        self.warn_unknown(obj, keys, &["required", "pages"]);
        let required = obj.get("required").and_then(Value::as_bool) == Some(true);
        let pages = match obj.get("pages") {
            None | Some(Value::Null) => return Ok(()),
            Some(Value::Array(a)) => a,
            Some(_) => {
                let mut k = keys.to_vec();
                k.push("pages");
                return Err(self.error(&k, "must be a list of `{url, checks}` objects"));
            }
        };
        for (i, page) in pages.iter().enumerate() {
            let (url, checks) = match page {
                Value::String(url) => (url.clone(), Vec::new()),
                Value::Object(p) => {
                    let mut k = keys.to_vec();
                    k.push("pages");
                    let checks = match p.get("checks") {
                        Some(c) => self.strings(c, &k)?,
                        None => Vec::new(),
                    };
                    (text_of(p, "url"), checks)
                }
                _ => (String::new(), Vec::new()),
            };
            if url.is_empty() {
                let mut k = keys.to_vec();
                k.push("pages");
                return Err(self.error(&k, format!("[{i}] has no `url`")));
            }
            let layer = out
                .layer
                .browser_verification
                .get_or_insert_with(Default::default);
            layer.required = Some(layer.required.unwrap_or(false) || required);
            if !layer.pages.iter().any(|p| p.url == url) {
                layer.pages.push(super::file::BrowserPage {
                    url: url.clone(),
                    checks: checks.clone(),
                });
            }
            out.browser_checks.push(Sourced::new(
                format!(
                    "Browser page {url}{}{}",
                    if checks.is_empty() {
                        String::new()
                    } else {
                        format!(": {}", checks.join(", "))
                    },
                    if required {
                        " (required by the plan)"
                    } else {
                        ""
                    }
                ),
                self.origin(&format!("{}.pages[{i}]", keys.join("."))),
            ));
        }
        Ok(())
    }

    /// A subtask's `verification` (`apps/backend/implementation_plan/verification.py`; the
    /// planner prompt writes `command`/`expected`, the dataclass `run`/`expect_status`).
    fn subtask(&self, subtask: &Value, at: &str, out: &mut PlanStrategy) -> Result<(), InputError> {
        let Some(st) = subtask.as_object() else {
            return Ok(());
        };
        let Some(v) = st.get("verification").filter(|v| !v.is_null()) else {
            return Ok(());
        };
        let Some(v) = v.as_object() else {
            return Err(self.error(
                &["phases", "subtasks", "verification"],
                format!("({at}) must be an object"),
            ));
        };
        let id = Some(text_of(st, "id"))
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| at.to_string());
        let description = text_of(st, "description");
        let origin = self.origin(&format!("{at}.verification"));
        let label = if description.is_empty() {
            id.clone()
        } else {
            format!("{id} ({description})")
        };
        let kind = text_of(v, "type").to_lowercase();
        if kind == "command" {
            let command = first_text(v, &["command", "run"]);
            if command.is_empty() {
                tracing::warn!(
                    "{}: `{at}.verification` is a command without a `command`: ignored",
                    self.file
                );
            } else {
                let expected = Some(first_text(v, &["expected", "expected_outcome"]))
                    .filter(|s| !s.is_empty());
                out.checks.push(Check {
                    name: id,
                    description,
                    command,
                    expected,
                    origin,
                });
            }
            return Ok(());
        }
        if let Some(h) = self.subtask_hint(v, &kind, at) {
            out.reviewer_checks
                .push(Sourced::new(format!("{label}: {}", h.trim()), origin));
        }
        Ok(())
    }

    /// What the reviewer is told to check for a subtask verification of `kind` other than
    /// `command` (none for `none`, nor for an unknown kind, which is warned about).
    fn subtask_hint(&self, v: &Map<String, Value>, kind: &str, at: &str) -> Option<String> {
        let field = |keys: &[&str]| first_text(v, keys);
        match kind {
            "" | "none" => None,
            "api" => Some(api_hint(v)),
            "browser" | "component" => {
                let checks = string_list(v, "checks");
                let what = field(&["url", "scenario"]);
                Some(if checks.is_empty() {
                    format!("in the browser: {what}")
                } else {
                    format!("in the browser: {what}: {}", checks.join(", "))
                })
            }
            "e2e" => {
                let steps = string_list(v, "steps");
                Some(if steps.is_empty() {
                    format!("end to end: {}", field(&["scenario", "instructions"]))
                } else {
                    format!("end to end: {}", steps.join(" → "))
                })
            }
            "manual" => Some(format!(
                "by hand: {}",
                field(&["instructions", "scenario", "expected"])
            )),
            other => {
                tracing::warn!(
                    "{}: `{at}.verification.type` `{other}` is not one of command, api, browser, component, e2e, manual, none: ignored",
                    self.file
                );
                None
            }
        }
    }
}

/// One `qa_acceptance` suite as read: its commands, whether it is required, flows and services.
struct QaSuite {
    commands: Vec<String>,
    required: Option<bool>,
    flows: Vec<String>,
    services: Vec<String>,
}

/// An `api` verification as one line: method, URL, expected status and body.
fn api_hint(v: &Map<String, Value>) -> String {
    let field = |keys: &[&str]| first_text(v, keys);
    let status = v
        .get("expected_status")
        .or_else(|| v.get("expect_status"))
        .and_then(Value::as_u64);
    let contains = field(&["expect_contains"]);
    format!(
        "{} {}{}{}",
        Some(field(&["method"]))
            .filter(|m| !m.is_empty())
            .unwrap_or("GET".into()),
        field(&["url"]),
        status.map(|s| format!(" answers {s}")).unwrap_or_default(),
        if contains.is_empty() {
            String::new()
        } else {
            format!(" containing `{contains}`")
        }
    )
}

/// The first of `keys` with a non-empty text, else empty.
fn first_text(v: &Map<String, Value>, keys: &[&str]) -> String {
    keys.iter()
        .map(|k| text_of(v, k))
        .find(|s| !s.is_empty())
        .unwrap_or_default()
}

/// The strings of the list at `key` (other items skipped; empty when it is not a list).
fn string_list(v: &Map<String, Value>, key: &str) -> Vec<String> {
    v.get(key)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// Adds a command to a suite once (a plan often lists the same one in several places).
fn add_command(suite: &mut SuiteConfig, command: String, origin: String) {
    if !suite.commands.contains(&command) {
        // Earlier commands without a recorded origin (none from the plan) keep their place.
        suite.origins.resize(suite.commands.len(), String::new());
        suite.commands.push(command);
        suite.origins.push(origin);
    }
}

fn text_of(obj: &Map<String, Value>, key: &str) -> String {
    obj.get(key)
        .and_then(Value::as_str)
        .map(str::trim)
        .unwrap_or_default()
        .to_string()
}

/// The line and column of the key path in the text: each key searched after the one before
/// (1:1 when the first is not found; the deepest one found otherwise).
fn position_of_path(text: &str, keys: &[&str]) -> (u64, u64) {
    let mut from = None;
    let mut pos = 0;
    for key in keys {
        let needle = format!("\"{key}\"");
        match text[pos..].find(&needle) {
            Some(i) => {
                pos += i;
                from = Some(pos);
                pos += needle.len();
            }
            None => break,
        }
    }
    from.map_or((1, 1), |i| {
        let before = &text[..i];
        let line = before.matches('\n').count() as u64 + 1;
        let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) as u64 + 1;
        (line, col)
    })
}

/// Parses what qa-loop reads from a plan (unknown keys are warnings).
pub fn parse_plan_strategy(path: &Path, text: &str) -> Result<PlanStrategy, InputError> {
    strategy(path, text)
}

/// Loads the plan's strategy from a file.
pub fn load_plan_strategy(path: &Path) -> Result<PlanStrategy, InputError> {
    let text = crate::nofollow::read_text(path)?;
    parse_plan_strategy(path, &text)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 19: every plan Auto-Claude's planner writes was rejected ("unknown field
    /// `skip_validation`"). Its keys are read now, other unknown keys only warned about.
    #[test]
    fn auto_claude_s_verification_strategy_is_read() {
        let plan = r#"{
  "feature": "Add login",
  "verification_strategy": {
    "risk_level": "medium",
    "skip_validation": false,
    "test_creation_phase": "post_implementation",
    "test_types_required": ["unit", "integration"],
    "security_scanning_required": false,
    "staging_deployment_required": false,
    "acceptance_criteria": ["Users can log in"],
    "verification_steps": [
      {"name": "Unit tests", "command": "pytest tests/unit", "expected_outcome": "All pass", "type": "test", "required": true, "blocking": true},
      {"name": "API smoke", "command": "pytest tests/api", "expected_outcome": "200s", "type": "api", "required": true, "blocking": false},
      {"name": "Manual check", "command": "", "expected_outcome": "The login form shows an error on a bad password", "type": "manual", "required": false, "blocking": false}
    ],
    "reasoning": "Auth is medium risk",
    "something_new": 1
  }
}"#;
        let read = strategy(Path::new("implementation_plan.json"), plan).unwrap();
        let layer = read.layer;
        assert_eq!(layer.risk_level, Some(super::super::RiskLevel::Medium));
        let unit = layer.unit_tests.unwrap();
        assert_eq!(unit.commands, ["pytest tests/unit"]);
        assert_eq!(unit.required, Some(true));
        let integration = layer.integration_tests.unwrap();
        assert_eq!(integration.commands, ["pytest tests/api"]);
        assert_eq!(integration.required, Some(false), "non-blocking: advisory");
        assert_eq!(
            unit.origins,
            ["implementation_plan.json: verification_strategy.verification_steps[0] (Unit tests)"]
        );
        assert_eq!(
            read.criteria,
            [
                Sourced::new(
                    "Users can log in",
                    "implementation_plan.json: verification_strategy.acceptance_criteria[0]"
                ),
                Sourced::new(
                    "Manual check: The login form shows an error on a bad password",
                    "implementation_plan.json: verification_strategy.verification_steps[2] (Manual check)"
                )
            ]
        );
        let skip = r#"{"verification_strategy": {"skip_validation": true}}"#;
        assert_eq!(
            strategy(Path::new("p.json"), skip)
                .unwrap()
                .layer
                .risk_level,
            Some(super::super::RiskLevel::Trivial)
        );
        // A known key with a wrong value is still an error naming it and its line.
        let bad = "{\n \"verification_strategy\": {\n   \"risk_level\": \"extreme\"\n }\n}";
        let e = strategy(Path::new("p.json"), bad).unwrap_err().to_string();
        assert!(
            e.starts_with("p.json:3:26: `verification_strategy.risk_level`: unknown variant"),
            "{e}"
        );
        let e = strategy(
            Path::new("p.json"),
            "{\"verification_strategy\": {\"verification_steps\": \"run\"}}",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("must be a list"), "{e}");
    }

    /// Issue 19, point 2: the suites of `qa_acceptance`, the subtasks' verifications and
    /// `final_acceptance` (planner.md's "Plan Structure" and PHASE 4 `qa_acceptance`).
    #[test]
    fn qa_acceptance_subtasks_and_final_acceptance_are_read() {
        let plan = r#"{
  "phases": [{"id": "phase-1", "subtasks": [
    {"id": "subtask-1-1", "description": "Create models", "verification": {"type": "command", "command": "python -c 'import m'", "expected": "OK"}},
    {"id": "subtask-1-2", "description": "Endpoints", "verification": {"type": "api", "method": "POST", "url": "http://localhost:5000/api/x", "expected_status": 201}},
    {"id": "subtask-1-3", "description": "Worker", "verification": {"type": "command", "run": "celery -A worker inspect ping"}},
    {"id": "subtask-1-4", "description": "Dashboard", "verification": {"type": "browser", "url": "http://localhost:3000/d", "checks": ["renders"]}},
    {"id": "subtask-1-5", "description": "Flow", "verification": {"type": "e2e", "steps": ["a", "b"]}},
    {"id": "subtask-1-6", "description": "Investigate", "verification": {"type": "manual", "instructions": "Read INVESTIGATION.md"}},
    {"id": "subtask-1-7", "description": "Docs", "verification": {"type": "none"}}
  ]}],
  "qa_acceptance": {
    "unit_tests": {"required": true, "commands": ["pytest tests/", "npm test"], "minimum_coverage": null},
    "integration_tests": {"required": true, "commands": [], "services_to_test": ["backend", "worker"]},
    "e2e_tests": {"required": false, "commands": ["npx playwright test"], "flows": ["user-login"]},
    "browser_verification": {"required": true, "pages": [{"url": "http://localhost:3000/", "checks": ["renders", "no-console-errors"]}]},
    "database_verification": {"required": true, "checks": ["migrations-exist"]}
  },
  "final_acceptance": ["The dashboard shows live events"]
}"#;
        let read = strategy(Path::new("implementation_plan.json"), plan).unwrap();
        let unit = read.layer.unit_tests.as_ref().unwrap();
        assert_eq!(unit.commands, ["pytest tests/", "npm test"]);
        assert_eq!(unit.required, Some(true));
        assert_eq!(
            unit.origins[1],
            "implementation_plan.json: qa_acceptance.unit_tests.commands[1]"
        );
        // Required without a command: not a gate from the plan alone (it could never pass).
        assert_eq!(
            read.layer.integration_tests.as_ref().unwrap().required,
            None
        );
        let e2e = read.layer.e2e_tests.as_ref().unwrap();
        assert_eq!(
            (e2e.required, e2e.flows.as_slice()),
            (Some(false), &["user-login".to_string()][..])
        );
        let checks: Vec<(&str, &str, Option<&str>)> = read
            .checks
            .iter()
            .map(|c| (c.name.as_str(), c.command.as_str(), c.expected.as_deref()))
            .collect();
        assert_eq!(
            checks,
            [
                ("subtask-1-1", "python -c 'import m'", Some("OK")),
                ("subtask-1-3", "celery -A worker inspect ping", None)
            ]
        );
        let hints: Vec<&str> = read
            .reviewer_checks
            .iter()
            .map(|c| c.text.as_str())
            .collect();
        assert_eq!(
            hints,
            [
                "Check the services work together: backend, worker",
                "Walk through the flow `user-login`",
                "subtask-1-2 (Endpoints): POST http://localhost:5000/api/x answers 201",
                "subtask-1-4 (Dashboard): in the browser: http://localhost:3000/d: renders",
                "subtask-1-5 (Flow): end to end: a → b",
                "subtask-1-6 (Investigate): by hand: Read INVESTIGATION.md"
            ]
        );
        assert_eq!(
            read.criteria,
            [Sourced::new(
                "Database: migrations-exist",
                "implementation_plan.json: qa_acceptance.database_verification.checks[0]"
            )]
        );
        assert_eq!(
            read.final_acceptance,
            [Sourced::new(
                "The dashboard shows live events",
                "implementation_plan.json: final_acceptance[0]"
            )]
        );
        // A known key with a wrong type is an error naming the key path and its line.
        let bad = "{\n \"qa_acceptance\": {\n  \"unit_tests\": {\"commands\": 3}\n }\n}";
        let e = strategy(Path::new("p.json"), bad).unwrap_err().to_string();
        assert_eq!(
            e,
            "p.json:3:18: `qa_acceptance.unit_tests.commands`: must be a list of strings"
        );
    }
}
