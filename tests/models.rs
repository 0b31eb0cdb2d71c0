//! Issue 39: the model registry as checked data. `.ci/check-models.py` compares
//! `src/llm/models.toml` with the providers' own SDKs (passes on the registry, fails with the
//! model's line on a registry missing a current model, with a wrong retirement date, or with a
//! retired model unmarked); a run refuses a retired model (exit 2, naming the replacement) and
//! warns about one retiring within 30 days in the log and the report; `qa-loop models --json`
//! validates against `schema/models.schema.json` (the committed schema is the generated one); the
//! table in docs/providers.md is the registry's (`UPDATE_DOCS=1` rewrites it).
//!
//! The SDK check needs python3 with the pinned `anthropic` and `openai` packages
//! (`pip install -r .ci/model-sdks.txt`), the schema check `check-jsonschema`: without them these
//! tests are skipped with a note, and fail when `QA_LOOP_REAL_TOOLS` is set (CI).

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};
use support::*;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Whether `python3 -c code` succeeds; when not, skipped with a note (or failed in CI).
fn python_has(code: &str, what: &str) -> bool {
    let ok = Command::new("python3")
        .args(["-c", code])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var_os("QA_LOOP_REAL_TOOLS").is_none(),
            "QA_LOOP_REAL_TOOLS is set but python3 lacks {what}"
        );
        eprintln!("skipped: python3 lacks {what}");
    }
    ok
}

/// `.ci/check-models.py --registry <registry>`.
fn check(registry: &Path) -> Output {
    Command::new("python3")
        .arg(root().join(".ci/check-models.py"))
        .arg("--registry")
        .arg(registry)
        .output()
        .unwrap()
}

/// `registry` without the `[[model]]` block of `id`.
fn without(registry: &str, id: &str) -> String {
    let start = registry
        .find(&format!("[[model]]\nid = \"{id}\"\n"))
        .unwrap_or_else(|| panic!("no entry {id}"));
    let end = start + 1 + registry[start + 1..].find("\n[[").unwrap() + 1;
    format!("{}{}", &registry[..start], &registry[end..])
}

/// `registry` with `from` replaced by `to` in the block of `id` (which must contain it).
fn edited(registry: &str, id: &str, from: &str, to: &str) -> String {
    let start = registry
        .find(&format!("[[model]]\nid = \"{id}\"\n"))
        .unwrap_or_else(|| panic!("no entry {id}"));
    let end = start + 1 + registry[start + 1..].find("\n[[").unwrap() + 1;
    let block = &registry[start..end];
    assert!(block.contains(from), "{id}: no `{from}` in\n{block}");
    format!(
        "{}{}{}",
        &registry[..start],
        block.replacen(from, to, 1),
        &registry[end..]
    )
}

#[test]
fn the_sdk_check_passes_on_the_registry_and_names_each_disagreeing_model() {
    if !python_has(
        "import anthropic, openai, tomllib",
        "the anthropic and openai packages (pip install -r .ci/model-sdks.txt)",
    ) {
        return;
    }
    let real = root().join("src/llm/models.toml");
    let o = check(&real);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(out.contains("agree with anthropic"), "{out}");

    let registry = std::fs::read_to_string(&real).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mutants = [
        (
            "a current model missing",
            without(&registry, "claude-haiku-5-5"),
            "claude-haiku-5-5: listed by anthropic",
        ),
        (
            "a wrong retirement date",
            edited(
                &registry,
                "claude-sonnet-4-5",
                "retires = \"2026-11-30\"",
                "retires = \"2026-12-30\"",
            ),
            "claude-sonnet-4-5: anthropic",
        ),
        (
            "a retired model unmarked",
            edited(
                &edited(
                    &registry,
                    "o4-mini",
                    "status = \"retired\"\nretires = \"2026-10-23\"\nreplacement = \"gpt-5.4-mini\"\n",
                    "status = \"current\"\n",
                ),
                "claude-opus-4",
                "status = \"retired\"",
                "status = \"current\"",
            ),
            "o4-mini: openai",
        ),
    ];
    for (what, text_of, line) in mutants {
        let path = dir.path().join("models.toml");
        std::fs::write(&path, &text_of).unwrap();
        let o = check(&path);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(1), "{what}: {out}{err}");
        assert!(
            out.lines().any(|l| l.starts_with(line)),
            "{what}: no line `{line}…` in\n{out}"
        );
        eprintln!("{what}:\n{out}");
    }
    // The unmarked retired Claude model the SDK no longer lists is named too.
    assert!(
        text(&check(&dir.path().join("models.toml")))
            .0
            .contains("claude-opus-4: not in the anthropic")
    );
}

/// A project whose test passes, committed, with `config` as its qa-loop.yml.
fn project(dir: &Path, config: &str) {
    std::fs::write(dir.join("calc.py"), "def add(a, b):\n    return a + b\n").unwrap();
    std::fs::write(
        dir.join("test_calc.py"),
        "from calc import add\nassert add(2, 2) == 4\n",
    )
    .unwrap();
    std::fs::write(dir.join(".gitignore"), ".qa-loop/\n__pycache__/\n").unwrap();
    std::fs::write(
        dir.join("qa-loop.yml"),
        format!("risk_level: low\nunit_tests:\n  commands: [\"python3 test_calc.py\"]\n{config}"),
    )
    .unwrap();
    git(dir, &["init", "-q"]);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "init"]);
}

#[test]
fn a_retired_model_is_refused_before_anything_runs_naming_its_date_and_replacement() {
    let dir = tempfile::tempdir().unwrap();
    project(dir.path(), "");
    for (provider, key, model, date, replacement) in [
        (
            "openai",
            "OPENAI_API_KEY",
            "o3-mini",
            "2026-10-23",
            "gpt-5.4-mini",
        ),
        (
            "anthropic",
            "ANTHROPIC_API_KEY",
            "claude-3-7-sonnet-20250219",
            "by 2026-11-26",
            "claude-sonnet-5-5",
        ),
    ] {
        let o = qa_loop(dir.path())
            .env(key, "sk-test-not-used")
            .args(["run", "--provider", provider, "--model", model])
            .output()
            .unwrap();
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{model}: {err}");
        for want in [model, date, replacement, "retired"] {
            assert!(err.contains(want), "{model}: no `{want}` in {err}");
        }
        assert!(
            !dir.path().join(".qa-loop").exists(),
            "{model}: wrote reports"
        );
    }
}

/// A fake Anthropic Messages API that approves (one `submit_verdict` call per request).
fn approving_anthropic() -> String {
    let app = axum::Router::new().route(
        "/v1/messages",
        axum::routing::post(|| async {
            axum::Json(json!({
                "id": "msg_1", "type": "message", "role": "assistant",
                "model": "claude-sonnet-5-5",
                "content": [{"type": "tool_use", "id": "toolu_1", "name": "submit_verdict",
                    "input": {"status": "approved", "score": 93, "confidence": 0.9,
                              "summary": "checked", "criteria": [], "issues": []}}],
                "stop_reason": "tool_use", "stop_sequence": null,
                "usage": {"input_tokens": 1000, "output_tokens": 100,
                          "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
            }))
        }),
    );
    format!("http://{}", serve(app))
}

#[test]
fn a_model_retiring_in_10_days_is_warned_about_in_the_log_and_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let on = qa_loop::llm::registry::Day::today().plus(10).to_string();
    project(
        dir.path(),
        &format!(
            "models:\n  claude-sonnet-5-5:\n    retires: \"{on}\"\n    replacement: claude-sonnet-6\n"
        ),
    );
    let base = approving_anthropic();
    let o = qa_loop(dir.path())
        .env("ANTHROPIC_API_KEY", "sk-test-not-used")
        .args(["run", "--provider", "anthropic", "--base-url", &base])
        .output()
        .unwrap();
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let want = format!("the reviewer and fixer model `claude-sonnet-5-5` retires on {on}");
    assert!(err.contains(&want), "log: {err}");
    assert!(err.contains("`claude-sonnet-6`"), "{err}");
    let report = std::fs::read_to_string(dir.path().join(".qa-loop/qa_report.md")).unwrap();
    let warnings = report.split("## Warnings").nth(1).unwrap_or_default();
    assert!(warnings.contains(&want), "report:\n{report}");
    let result = qa_result(dir.path());
    assert!(
        result["warnings"]
            .as_array()
            .is_some_and(|w| w.iter().any(|w| w.as_str().unwrap().contains(&want))),
        "{result:#}"
    );
    // A model not retiring soon: no warning.
    let dir = tempfile::tempdir().unwrap();
    project(dir.path(), "");
    let o = qa_loop(dir.path())
        .env("ANTHROPIC_API_KEY", "sk-test-not-used")
        .args(["run", "--provider", "anthropic", "--base-url", &base])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o).1);
    assert!(!text(&o).1.contains("retires on"), "{}", text(&o).1);
    assert!(qa_result(dir.path()).get("warnings").is_none());
}

#[test]
fn the_committed_models_schema_is_the_generated_one() {
    let generated =
        serde_json::to_string_pretty(&qa_loop::commands::models::schema()).unwrap() + "\n";
    let path = root().join("schema/models.schema.json");
    if std::env::var_os("UPDATE_SCHEMA").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let committed = std::fs::read_to_string(&path)
        .expect("schema/models.schema.json exists (UPDATE_SCHEMA=1 cargo test --test models)");
    assert_eq!(
        committed, generated,
        "schema/models.schema.json is stale: run UPDATE_SCHEMA=1 cargo test --test models"
    );
}

#[test]
fn models_json_shows_the_config_applied_and_validates_against_its_schema() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("qa-loop.yml"),
        "models:\n  my-llm:\n    api: chat\n    input: 0.5\n    output: 1.5\n    retires: \"2099-01-31\"\n  claude-sonnet-5-5:\n    max_output: 64000\n",
    )
    .unwrap();
    let o = qa(dir.path(), &["models", "--json"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let get = |id: &str| {
        v["models"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["id"] == id)
            .cloned()
            .unwrap_or_else(|| panic!("no {id}"))
    };
    let mine = get("my-llm");
    assert_eq!(
        (&mine["status"], &mine["retires"], &mine["lifecycle"]),
        (&json!("custom"), &json!("2099-01-31"), &json!("served"))
    );
    assert_eq!(
        (
            &mine["price"]["output"],
            &mine["sources"]["price"]["source"]
        ),
        (&json!(1.5), &json!("config"))
    );
    let sonnet = get("claude-sonnet-5-5");
    assert_eq!(sonnet["max_output"], 64_000);
    assert_eq!(sonnet["sources"]["limits"]["source"], "config");
    assert_eq!(sonnet["price"]["input"], 2.0);
    assert_eq!(get("o3-mini")["lifecycle"], "retired");
    // The table names the same.
    let (table, _) = text(&qa(dir.path(), &["models"]));
    assert!(
        table.contains("my-llm") && table.contains("o3-mini"),
        "{table}"
    );

    if !python_has("import check_jsonschema", "check-jsonschema") {
        return;
    }
    let validate = |json: &str| {
        let file = dir.path().join("models.json");
        std::fs::write(&file, json).unwrap();
        Command::new("python3")
            .args(["-m", "check_jsonschema", "--schemafile"])
            .arg(root().join("schema/models.schema.json"))
            .arg(&file)
            .output()
            .unwrap()
    };
    let o = validate(&out);
    assert!(o.status.success(), "{}{}", text(&o).0, text(&o).1);
    // The validator is not blind: an unknown status fails.
    let broken = out.replacen("\"status\": \"current\"", "\"status\": \"shiny\"", 1);
    assert_ne!(broken, out);
    assert!(!validate(&broken).status.success());
}

const BEGIN: &str = "<!-- models:begin (generated: UPDATE_DOCS=1 cargo test --test models) -->\n";
const END: &str = "<!-- models:end -->";

#[test]
fn the_table_in_docs_providers_md_is_the_registry() {
    let dir = tempfile::tempdir().unwrap();
    let o = qa(dir.path(), &["models", "--markdown"]);
    let (table, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let path = root().join("docs/providers.md");
    let doc = std::fs::read_to_string(&path).unwrap();
    let start = doc
        .find(BEGIN)
        .expect("docs/providers.md has the models:begin marker")
        + BEGIN.len();
    let end = start + doc[start..].find(END).expect("and the models:end marker");
    if std::env::var_os("UPDATE_DOCS").is_some() {
        std::fs::write(&path, format!("{}{table}{}", &doc[..start], &doc[end..])).unwrap();
        return;
    }
    assert!(
        doc[start..end] == table,
        "docs/providers.md's model table differs from the registry: run UPDATE_DOCS=1 cargo test --test models"
    );
}
