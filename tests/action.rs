//! `action.yml` against the contract: every input and output of SPEC §3.3 is declared with a
//! description, every input reaches qa-loop (through `scripts/run-action.sh`), every output is
//! written by qa-loop, and the README documents each one.

use serde_json::Value;

fn action() -> Value {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/action.yml")).unwrap();
    serde_saphyr::from_str(&text).expect("action.yml is YAML")
}

fn read(path: &str) -> String {
    std::fs::read_to_string(format!("{}/{path}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

/// SPEC §3.3: the CLI flags in kebab-case, plus the action's own inputs.
const INPUTS: &[&str] = &[
    "config",
    "plan",
    "spec",
    "out-dir",
    "mode",
    "max-iterations",
    "max-consecutive-errors",
    "recurring-threshold",
    "similarity-threshold",
    "min-score",
    "fix-severity",
    "sarif-upload",
    "provider",
    "model",
    "reviewer-model",
    "fixer-model",
    "base-url",
    "api-key",
    "max-cost-usd",
    "max-tokens",
    "timeout",
    "github-token",
    "push-token",
    "check-name",
    "comment",
    "escalation-label",
    "escalation-assignees",
    "needs-human-label",
    "allowed-bots",
    "fail-on-reject",
    "failure-analysis",
    "fixer-command",
];

const OUTPUTS: &[&str] = &[
    "verdict",
    "score",
    "iterations",
    "issues",
    "report-path",
    "junit-path",
    "escalation-issue",
    "commits-pushed",
    "tokens",
    "cost-usd",
];

#[test]
fn every_spec_input_and_output_is_declared_described_and_wired() {
    let a = action();
    let inputs = a["inputs"].as_object().unwrap();
    for name in INPUTS {
        let i = inputs
            .get(*name)
            .unwrap_or_else(|| panic!("input `{name}` missing"));
        assert!(
            i["description"].as_str().is_some_and(|d| d.len() > 10),
            "{name}: description"
        );
        assert!(i.get("default").is_some(), "{name}: default");
    }
    let run = read("scripts/run-action.sh");
    let steps = a["runs"]["steps"].as_array().unwrap();
    let env = &steps.iter().find(|s| s["id"] == "run").unwrap()["env"];
    for name in inputs.keys().filter(|n| *n != "version") {
        let var = format!("IN_{}", name.to_uppercase().replace('-', "_"));
        let expr = format!("${{{{ inputs.{name} }}}}");
        assert_eq!(
            env[&var].as_str(),
            Some(expr.as_str()),
            "{name} is passed to the run step"
        );
        assert!(run.contains(&var), "{name} is read by run-action.sh");
    }
    // Each QA_LOOP_* variable run-action.sh sets is one qa-loop reads.
    let help = std::process::Command::new(env!("CARGO_BIN_EXE_qa-loop"))
        .args(["run", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    for line in run.lines().filter(|l| l.starts_with("pass IN_")) {
        let var = line.split_whitespace().nth(2).unwrap();
        let read_by_qa_loop =
            help.contains(var) || ["QA_LOOP_GITHUB_TOKEN", "QA_LOOP_PUSH_TOKEN"].contains(&var);
        assert!(read_by_qa_loop, "{var} is not a variable qa-loop reads");
    }
    let outputs = a["outputs"].as_object().unwrap();
    let written = read("src/commands/mod.rs");
    for name in OUTPUTS {
        let o = outputs
            .get(*name)
            .unwrap_or_else(|| panic!("output `{name}` missing"));
        assert_eq!(
            o["value"].as_str(),
            Some(format!("${{{{ steps.run.outputs.{name} }}}}").as_str())
        );
        assert!(
            written.contains(&format!("\"{name}\"")),
            "qa-loop writes the `{name}` output"
        );
    }
}

#[test]
fn the_readme_documents_every_input_and_output() {
    let readme = read("README.md");
    let a = action();
    for name in a["inputs"]
        .as_object()
        .unwrap()
        .keys()
        .chain(a["outputs"].as_object().unwrap().keys())
    {
        assert!(
            readme.contains(&format!("| `{name}` |")),
            "README documents `{name}`"
        );
    }
}
