//! Reading the verification strategy of an `implementation_plan.json` — another tool's file
//! (Auto-Claude's planner writes it): unlike the config file, keys qa-loop does not know are
//! warnings naming the file and line, never errors. Auto-Claude's own keys are read for what
//! they mean: `verification_steps` become commands (by their `type`) or, without a command,
//! criteria; `skip_validation: true` is a review-only (`trivial`) change; its planning notes
//! (`reasoning`, `test_types_required`, …) are accepted as they are.

use std::path::Path;

use serde_json::Value;

use super::file::{StrategyLayer, SuiteConfig};
use crate::error::InputError;

/// The settings of the config file's strategy, read from the plan with the config's rules.
const OURS: [&str; 9] = [
    "risk_level",
    "acceptance_criteria",
    "unit_tests",
    "integration_tests",
    "e2e_tests",
    "conversations",
    "timeout",
    "parallel",
    "pattern_checks",
];

/// Auto-Claude's keys that qa-loop reads (see [`apply_step`]).
const AUTO: [&str; 2] = ["verification_steps", "skip_validation"];

/// Auto-Claude's planning notes: accepted without a warning (nothing to run).
const NOTES: [&str; 6] = [
    "test_creation_phase",
    "test_types_required",
    "security_scanning_required",
    "staging_deployment_required",
    "reasoning",
    "browser_verification",
];

/// The plan's `verification_strategy` as a strategy layer (empty when the plan has none).
/// qa-loop's own settings are read from the text (errors keep their line and column); the
/// rest of the object decides the warnings and Auto-Claude's steps.
pub fn strategy(path: &Path, text: &str) -> Result<StrategyLayer, InputError> {
    let plan: Value = serde_json::from_str(text).map_err(|e| InputError::from_json(path, &e))?;
    let Some(plan) = plan.as_object() else {
        return Err(InputError::at(path, 1, 1, "a plan must be a JSON object"));
    };
    let Some(vs) = plan.get("verification_strategy") else {
        return Ok(StrategyLayer::default());
    };
    let at = |key: &str| position_of_key(text, key);
    let Some(vs) = vs.as_object() else {
        let (line, col) = at("verification_strategy");
        return Err(InputError::at(
            path,
            line,
            col,
            "`verification_strategy` must be an object",
        ));
    };
    for key in vs.keys() {
        let k = key.as_str();
        if !OURS.contains(&k) && !NOTES.contains(&k) && !AUTO.contains(&k) {
            tracing::warn!(
                "{}:{}: `verification_strategy.{k}` is not a setting qa-loop knows: ignored",
                path.display(),
                at(k).0
            );
        }
    }
    #[derive(serde::Deserialize)]
    struct View {
        #[serde(default)]
        verification_strategy: Option<StrategyLayer>,
    }
    let view: View = super::load::parse_json(path, text)?;
    let mut layer = view.verification_strategy.unwrap_or_default();
    let steps: &[Value] = match vs.get("verification_steps") {
        None | Some(Value::Null) => &[],
        Some(Value::Array(a)) => a,
        Some(_) => {
            let (line, col) = at("verification_steps");
            return Err(InputError::at(
                path,
                line,
                col,
                "`verification_strategy.verification_steps` must be a list",
            ));
        }
    };
    if vs.get("skip_validation").and_then(Value::as_bool) == Some(true)
        && layer.risk_level.is_none()
    {
        layer.risk_level = Some(super::RiskLevel::Trivial);
    }
    for (i, step) in steps.iter().enumerate() {
        apply_step(&mut layer, step).map_err(|why| {
            let (line, col) = at("verification_steps");
            InputError::at(
                path,
                line,
                col,
                format!("`verification_strategy.verification_steps[{i}]`: {why}"),
            )
        })?;
    }
    Ok(layer)
}

/// One of Auto-Claude's `verification_steps` (`{name, command, expected_outcome, type,
/// required, blocking}`): a command joins the suite its `type` names (`e2e`/`browser` → e2e,
/// `integration`/`api` → integration, else unit); a required, blocking step makes its suite a
/// gate, a non-blocking one leaves it advisory unless another step requires it. A step without
/// a command is a criterion ("name: expected outcome").
fn apply_step(layer: &mut StrategyLayer, step: &Value) -> Result<(), String> {
    let step = step.as_object().ok_or("must be an object")?;
    let text = |k: &str| {
        step.get(k)
            .and_then(Value::as_str)
            .map(str::trim)
            .unwrap_or_default()
            .to_string()
    };
    let (name, command, kind) = (text("name"), text("command"), text("type").to_lowercase());
    if command.is_empty() {
        let outcome = text("expected_outcome");
        let criterion = match (name.is_empty(), outcome.is_empty()) {
            (false, false) => format!("{name}: {outcome}"),
            (false, true) => name,
            (true, false) => outcome,
            (true, true) => return Err("has neither a command nor a name".into()),
        };
        layer
            .acceptance_criteria
            .get_or_insert_with(Vec::new)
            .push(criterion);
        return Ok(());
    }
    let suite = if kind.contains("e2e") || kind.contains("browser") {
        &mut layer.e2e_tests
    } else if kind.contains("integration") || kind.contains("api") {
        &mut layer.integration_tests
    } else {
        &mut layer.unit_tests
    };
    let suite = suite.get_or_insert_with(SuiteConfig::default);
    suite.commands.push(command);
    let required = step
        .get("required")
        .and_then(Value::as_bool)
        .unwrap_or(true);
    let blocking = step
        .get("blocking")
        .and_then(Value::as_bool)
        .unwrap_or(true);
    let gate = required && blocking;
    suite.required = Some(suite.required.unwrap_or(false) || gate);
    Ok(())
}

/// The line and column of the first `"key"` in the text (1:1 when not found).
fn position_of_key(text: &str, key: &str) -> (u64, u64) {
    let needle = format!("\"{key}\"");
    text.find(&needle).map_or((1, 1), |i| {
        let before = &text[..i];
        let line = before.matches('\n').count() as u64 + 1;
        let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) as u64 + 1;
        (line, col)
    })
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
        let layer = strategy(Path::new("implementation_plan.json"), plan).unwrap();
        assert_eq!(layer.risk_level, Some(super::super::RiskLevel::Medium));
        let unit = layer.unit_tests.unwrap();
        assert_eq!(unit.commands, ["pytest tests/unit"]);
        assert_eq!(unit.required, Some(true));
        let integration = layer.integration_tests.unwrap();
        assert_eq!(integration.commands, ["pytest tests/api"]);
        assert_eq!(integration.required, Some(false), "non-blocking: advisory");
        assert_eq!(
            layer.acceptance_criteria.unwrap(),
            [
                "Users can log in",
                "Manual check: The login form shows an error on a bad password"
            ]
        );
        let skip = r#"{"verification_strategy": {"skip_validation": true}}"#;
        assert_eq!(
            strategy(Path::new("p.json"), skip).unwrap().risk_level,
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
}
