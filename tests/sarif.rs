//! `qa-loop.sarif` (issue 40): the file an approved, a rejected and an escalated run writes —
//! the real binary, a real test command, a replayed model — is valid against the OASIS SARIF
//! 2.1.0 JSON schema (vendored in `schema/vendor/` with its source and licence), checked by
//! `check-jsonschema`; the approved run carries a suggestion (below `fix_severity: medium`) and a
//! pre-existing issue (on a line the change did not add). Two runs in a row on one project: the
//! second knows which iterations were the first's (its baseline), and the plan's history carries
//! the fingerprints, so the same finding is `unchanged` there. The baseline states against a
//! previous run whose findings have fingerprints (a pull request's cross-run state) are built
//! from two histories through the library and validated too, the absent results as results.
//! The upload (`sarif-upload`) is sent to a fake of GitHub's code-scanning endpoint, behind
//! `prism proxy --errors` with GitHub's OpenAPI description when `QA_LOOP_PRISM` and
//! `QA_LOOP_GITHUB_OPENAPI` are set (as `.ci/run` does for this test too).
//!
//! `.ci/run` installs check-jsonschema and sets `QA_LOOP_REAL_TOOLS=1`, which makes a missing
//! one a failure; elsewhere the schema checks are skipped with a note on stderr.

mod support;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use support::*;

use serde_json::{Value, json};

/// Whether check-jsonschema runs; a note (or, with `QA_LOOP_REAL_TOOLS`, a failure) when not.
fn have_validator() -> bool {
    let ok = std::process::Command::new("check-jsonschema")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var_os("QA_LOOP_REAL_TOOLS").is_none(),
            "check-jsonschema is not installed (.ci/run installs it)"
        );
        eprintln!("skipped: check-jsonschema is not installed");
    }
    ok
}

fn schema() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/vendor/sarif-schema-2.1.0.json")
}

/// `check-jsonschema --schemafile <vendored schema> file`: whether it validates, and its words.
fn validate(file: &Path) -> (bool, String) {
    let o = std::process::Command::new("check-jsonschema")
        .arg("--schemafile")
        .arg(schema())
        .arg(file)
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    eprintln!("check-jsonschema {}: {}", file.display(), said.trim());
    (o.status.success(), said)
}

/// Validates `log` (written next to `dir`'s out dir as `name`); fails the test when invalid.
fn assert_valid(dir: &Path, name: &str, log: &Value) {
    if !have_validator() {
        return;
    }
    let file = dir.join(name);
    std::fs::write(&file, serde_json::to_string_pretty(log).unwrap()).unwrap();
    let (ok, said) = validate(&file);
    assert!(ok, "{name} is not valid SARIF 2.1.0: {said}");
}

/// `calc.py` as committed: `legacy` (line 5) evaluates its input — there before any change.
const BASE: &str = "def add(a, b):\n    return a + b\n\n\ndef legacy(x):\n    return eval(x)\n";

/// A project with a required unit suite (`python3 test_calc.py`), `fix_severity: medium`, and
/// `calc.py` committed as [`BASE`], then changed in the working tree to `calc` (the change);
/// `calls` are the model's answers.
fn project(dir: &Path, calc: &str, calls: Vec<Value>) {
    std::fs::write(dir.join("calc.py"), BASE).unwrap();
    std::fs::write(
        dir.join("test_calc.py"),
        "from calc import add\nassert add(2, 2) == 4, 'add(2, 2) is not 4'\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("qa-loop.yml"),
        "risk_level: low\nfix_severity: medium\nunit_tests:\n  required: true\n  commands: [\"python3 test_calc.py\"]\n",
    )
    .unwrap();
    std::fs::write(
        dir.join(".gitignore"),
        ".qa-loop/\nsession.json\nplan.json\n__pycache__/\n",
    )
    .unwrap();
    git(dir, &["init", "-q"]);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "init"]);
    std::fs::write(dir.join("calc.py"), calc).unwrap();
    session(dir, calls);
}

fn session(dir: &Path, calls: Vec<Value>) {
    std::fs::write(
        dir.join("session.json"),
        json!({ "calls": calls }).to_string(),
    )
    .unwrap();
}

fn verdict(status: &str, score: u8, issues: Value) -> Value {
    json!({"role": "reviewer", "tool_calls": [{"id": "v", "name": "submit_verdict", "arguments": {
        "status": status, "score": score, "confidence": 0.9, "summary": "s", "criteria": [],
        "issues": issues}}]})
}

/// The change: `sub` added at lines 9–10.
const CHANGED: &str = "def add(a, b):\n    return a + b\n\n\ndef legacy(x):\n    return eval(x)\n\n\ndef sub(a, b):\n    return a - b\n";
/// The change breaks `add`: the unit suite fails.
const BROKEN: &str = "def add(a, b):\n    return a - b\n\n\ndef legacy(x):\n    return eval(x)\n";

fn high_issue() -> Value {
    json!([{"id": "Q1", "title": "add() subtracts", "type": "unit_test", "severity": "high",
            "file": "calc.py", "line": 2, "description": "add(2, 2) is 0",
            "fix": "return a + b"}])
}

/// Runs the project in `dir` with `args`: the exit code, the verdict and the SARIF log.
fn run(dir: &Path, args: &[&str]) -> (Option<i32>, Value, Value) {
    let o = replay_run(dir, args);
    let path = dir.join(".qa-loop/qa-loop.sarif");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}\n{}",
            path.display(),
            String::from_utf8_lossy(&o.stderr)
        )
    });
    let log: Value = serde_json::from_str(&text).expect("qa-loop.sarif is JSON");
    (o.status.code(), qa_result(dir)["verdict"].clone(), log)
}

fn results(log: &Value) -> &Vec<Value> {
    log["runs"][0]["results"].as_array().unwrap()
}

fn by_id<'a>(log: &'a Value, id: &str) -> &'a Value {
    results(log)
        .iter()
        .find(|r| r["properties"]["qaLoopId"] == id)
        .unwrap_or_else(|| panic!("no result {id}: {log:#}"))
}

#[test]
fn an_approved_run_with_a_suggestion_and_a_pre_existing_issue_writes_valid_sarif() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let issues = json!([
        {"id": "Q1", "title": "sub has no docstring", "type": "code_quality", "severity": "low",
         "file": "calc.py", "line": 9, "fix": "Add a one-line docstring."},
        {"id": "Q2", "title": "legacy() evaluates its input", "type": "security", "severity": "high",
         "file": "calc.py", "line": 6, "introduced": false,
         "description": "eval on caller input runs arbitrary code.", "fix": "Use ast.literal_eval."}
    ]);
    project(d, CHANGED, vec![verdict("approved", 92, issues)]);
    let (code, said, log) = run(d, &[]);
    assert_eq!((code, said), (Some(0), json!("approved")), "{log:#}");
    assert_eq!(results(&log).len(), 2, "{log:#}");
    let q1 = by_id(&log, "Q1");
    assert_eq!(q1["ruleId"], "code_quality");
    assert_eq!(q1["level"], "note");
    assert_eq!(q1["properties"]["standing"], "suggestion");
    assert_eq!(q1["properties"]["blocking"], false);
    assert_eq!(q1["properties"]["fix"], "Add a one-line docstring.");
    let q2 = by_id(&log, "Q2");
    assert_eq!(
        (&q2["ruleId"], &q2["level"]),
        (&json!("security"), &json!("note"))
    );
    assert_eq!(q2["properties"]["standing"], "pre-existing");
    assert_eq!(q2["properties"]["introduced"], false);
    let place = &q2["locations"][0]["physicalLocation"];
    assert_eq!(place["artifactLocation"]["uri"], "calc.py");
    assert_eq!(place["artifactLocation"]["uriBaseId"], "%SRCROOT%");
    assert_eq!(place["region"]["startLine"], 6);
    // Every finding has its fingerprint, as qa-result.json has it.
    let history = &qa_result(d)["history"];
    let fp = history[0]["pre_existing"][0]["fingerprint"]
        .as_str()
        .unwrap();
    assert_eq!(q2["partialFingerprints"]["qaLoopFindingHash/v1"], fp);
    assert!(results(&log).iter().all(|r| r["baselineState"] == "new"));
    let invocation = &log["runs"][0]["invocations"][0];
    assert_eq!(invocation["executionSuccessful"], true);
    assert_eq!(invocation["properties"]["verdict"], "approved");
    assert_valid(d, "approved.sarif", &log);
}

#[test]
fn a_rejected_and_an_escalated_run_write_valid_sarif() {
    // Rejected (review mode): the reviewer's issue and the failed suite's, which names no file
    // and is shown at the config file.
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    project(d, BROKEN, vec![verdict("rejected", 60, high_issue())]);
    let (code, said, log) = run(d, &["--mode", "review"]);
    assert_eq!((code, said), (Some(1), json!("rejected")), "{log:#}");
    let q1 = by_id(&log, "Q1");
    assert_eq!(q1["level"], "error");
    assert_eq!(q1["message"]["text"], "add() subtracts\n\nadd(2, 2) is 0");
    let gate = by_id(&log, "G1");
    assert_eq!(gate["properties"]["blocking"], true);
    assert_eq!(gate["properties"]["anchored"], true);
    let place = &gate["locations"][0]["physicalLocation"];
    assert_eq!(place["artifactLocation"]["uri"], "qa-loop.yml");
    assert_eq!(place["region"]["startLine"], 1);
    // Every result has a location: GitHub rejects a file with one that has none.
    assert!(results(&log).iter().all(|r| r["locations"][0].is_object()));
    assert_valid(d, "rejected.sarif", &log);

    // Escalated: the best score is below the minimum (40).
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    project(d, BROKEN, vec![verdict("rejected", 20, high_issue())]);
    let (code, said, log) = run(d, &["--mode", "review"]);
    assert_eq!((code, said), (Some(3), json!("escalated")), "{log:#}");
    let invocation = &log["runs"][0]["invocations"][0];
    assert_eq!(invocation["properties"]["verdict"], "escalated");
    assert_eq!(invocation["exitCode"], 3);
    assert_eq!(by_id(&log, "Q1")["level"], "error");
    assert_valid(d, "escalated.sarif", &log);

    // The validator is not blind: a level SARIF does not have fails.
    if have_validator() {
        let mut broken = log.clone();
        broken["runs"][0]["results"][0]["level"] = json!("fatal");
        let file = d.join("broken.sarif");
        std::fs::write(&file, broken.to_string()).unwrap();
        assert!(!validate(&file).0, "an invalid level passed the schema");
    }
}

#[test]
fn a_second_run_knows_the_first_runs_iterations_as_its_baseline() {
    // Locally the plan's history is the memory between runs.
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    project(d, BROKEN, vec![verdict("rejected", 60, high_issue())]);
    std::fs::write(d.join("plan.json"), "{}").unwrap();
    let (_, _, first) = run(d, &["--mode", "review", "--plan", "plan.json"]);
    let props = &first["runs"][0]["properties"];
    assert_eq!(props["earlierIterations"], 0);
    assert_eq!(props["baseline"]["kind"], "none");
    session(d, vec![verdict("rejected", 60, high_issue())]);
    let (_, _, second) = run(d, &["--mode", "review", "--plan", "plan.json"]);
    let props = &second["runs"][0]["properties"];
    assert_eq!(props["earlierIterations"], 1, "{props:#}");
    assert_eq!(props["iterationsThisRun"], 1);
    assert_eq!(props["baseline"]["iteration"], 1);
    assert_eq!(by_id(&second, "Q1")["properties"]["iteration"], 2);
    // The plan's history keeps each finding's fingerprint: the same problem in the second run
    // has the first run's fingerprint and is `unchanged`.
    let q1_first = by_id(&first, "Q1")["partialFingerprints"].clone();
    let q1 = by_id(&second, "Q1");
    assert_eq!(q1["partialFingerprints"], q1_first, "{q1:#}");
    assert_eq!(q1["baselineState"], "unchanged", "{q1:#}");
    assert_valid(d, "second.sarif", &second);
}

/// An issue for [`record`].
fn issue(id: &str, fingerprint: &str, line: u32) -> qa_loop::model::Issue {
    qa_loop::model::Issue {
        id: id.into(),
        title: format!("{id}: add() subtracts"),
        kind: qa_loop::model::IssueType::UnitTest,
        severity: qa_loop::model::Severity::High,
        file: Some("calc.py".into()),
        line: Some(line),
        file_lines: None,
        description: String::new(),
        fix: "return a + b".into(),
        recurs: None,
        introduced: true,
        fingerprint: Some(fingerprint.into()),
    }
}

fn record(iteration: u32, issues: Vec<qa_loop::model::Issue>) -> qa_loop::engine::IterationRecord {
    qa_loop::engine::IterationRecord {
        iteration,
        status: qa_loop::engine::Status::Rejected,
        reviewer_approved: false,
        score: 60,
        summary: String::new(),
        criteria: Vec::new(),
        issues,
        suggestions: Vec::new(),
        pre_existing: Vec::new(),
        verification: Default::default(),
        timestamp: "2026-11-21T10:00:00Z".into(),
        manual_test_plan: None,
        guidance: None,
        reviewed_head: None,
    }
}

/// The SARIF of `history` whose first `earlier` iterations are an earlier run's.
fn sarif_of(history: &[qa_loop::engine::IterationRecord], earlier: usize) -> Value {
    use qa_loop::report::{RunReport, sarif};
    let strategy = qa_loop::config::Strategy::resolve(
        &Default::default(),
        qa_loop::config::strategy::CriteriaLists::default(),
    );
    let outcome = qa_loop::engine::Outcome::MaxIterations {
        best_iteration: history.last().unwrap().iteration,
    };
    let r = RunReport {
        replayed: true,
        ..RunReport::new(&outcome, history, &strategy)
    };
    let frame = sarif::Frame {
        earlier,
        anchor: Some("qa-loop.yml"),
    };
    serde_json::from_str(&sarif::render(&r, &frame)).unwrap()
}

/// The pull-request case (the sticky comment's state carries every finding's fingerprint): a
/// finding of the previous run seen again is `unchanged`, one not seen before `new`, one gone
/// `absent` — valid SARIF, the absent results too when put among the results.
#[test]
fn baseline_states_against_a_previous_run_with_fingerprints_are_valid_sarif() {
    let tmp = tempfile::tempdir().unwrap();
    let previous = record(1, vec![issue("Q1", "aaaa", 2), issue("Q2", "bbbb", 5)]);
    let now = record(2, vec![issue("Q1", "aaaa", 3), issue("Q3", "cccc", 8)]);
    let log = sarif_of(&[previous, now], 1);
    let states: Vec<(&str, &str)> = results(&log)
        .iter()
        .map(|r| {
            (
                r["partialFingerprints"]["qaLoopFindingHash/v1"]
                    .as_str()
                    .unwrap(),
                r["baselineState"].as_str().unwrap(),
            )
        })
        .collect();
    // Issue 49: the finding fixed since the previous run is a result, `absent`, with the
    // previous run's fingerprint, after the present ones.
    assert_eq!(
        states,
        [("aaaa", "unchanged"), ("cccc", "new"), ("bbbb", "absent")]
    );
    let absent = &results(&log)[2];
    assert_eq!(absent["kind"], "pass");
    assert_eq!(absent["level"], "none");
    assert_valid(tmp.path(), "states.sarif", &log);
    // qa-loop's upload to code scanning leaves it out (the alert closes by its absence).
    let (uploaded, _) =
        qa_loop::github::sarif::uploadable(&serde_json::to_string(&log).unwrap()).unwrap();
    let uploaded: Value = serde_json::from_str(&uploaded).unwrap();
    assert_eq!(results(&uploaded).len(), 2, "{uploaded:#}");
}

/// What the fake code-scanning endpoint received.
#[derive(Default)]
struct Seen {
    requests: Vec<(String, Value)>,
}

/// A fake of `POST /repos/{owner}/{repo}/code-scanning/sarifs`, answering as GitHub does (202
/// with the receipt); behind prism when configured.
fn code_scanning(seen: Arc<Mutex<Seen>>) -> Api {
    use axum::Json;
    use axum::http::{StatusCode, Uri};
    use axum::response::IntoResponse;
    let app = axum::Router::new().fallback(move |uri: Uri, body: Option<Json<Value>>| {
        let seen = seen.clone();
        async move {
            let body = body.map(|b| b.0).unwrap_or(Value::Null);
            seen.lock()
                .unwrap()
                .requests
                .push((uri.path().to_string(), body));
            if uri.path() != "/repos/Codertocat/Hello-World/code-scanning/sarifs" {
                return (StatusCode::NOT_FOUND, Json(json!({"message": "Not Found"})))
                    .into_response();
            }
            let id = "47177e22-5596-11eb-80a1-c1e54ef945c6";
            (
                StatusCode::ACCEPTED,
                Json(json!({"id": id, "url": format!(
                    "https://api.github.com/repos/Codertocat/Hello-World/code-scanning/sarifs/{id}")})),
            )
                .into_response()
        }
    });
    start(app)
}

/// `app`'s base URL — behind `prism proxy --errors` with GitHub's OpenAPI description when
/// `QA_LOOP_PRISM` and `QA_LOOP_GITHUB_OPENAPI` are set (a request against the description is
/// answered 422, an answer against it 500).
fn start(app: axum::Router) -> Api {
    let fake = format!("http://{}", serve(app));
    let Some((child, port)) = start_prism(&fake) else {
        eprintln!(
            "note: QA_LOOP_PRISM/QA_LOOP_GITHUB_OPENAPI unset: the request is not checked by prism"
        );
        return Api {
            url: fake,
            prism: None,
        };
    };
    Api {
        url: format!("http://127.0.0.1:{port}"),
        prism: Some(child),
    }
}

/// The API URL; stops prism when dropped.
struct Api {
    url: String,
    prism: Option<std::process::Child>,
}

impl Drop for Api {
    fn drop(&mut self) {
        if let Some(c) = &mut self.prism {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The upload of a run's `qa-loop.sarif`: one request, as GitHub's description has it (prism),
/// the file gzip-compressed and base64-encoded, attached to the commit the review saw.
#[test]
fn the_upload_is_one_request_github_accepts() {
    use qa_loop::github::{client::GitHub, sarif};
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    project(d, BROKEN, vec![verdict("rejected", 60, high_issue())]);
    let (_, _, log) = run(d, &["--mode", "review"]);
    let text = std::fs::read_to_string(d.join(".qa-loop/qa-loop.sarif")).unwrap();
    let seen = Arc::new(Mutex::new(Seen::default()));
    let api = code_scanning(seen.clone());
    let head = git_out(d, &["rev-parse", "HEAD"]);
    let at = sarif::attach(2, &head, Some(&head), false, 0, true).unwrap();
    let gh = GitHub::new(
        &api.url,
        qa_loop::secrets::Secret::new("ghs_canary_sarif"),
        qa_loop::retry::RetryPolicy {
            retries: 0,
            ..Default::default()
        },
    )
    .unwrap();
    let (body, dropped) = sarif::body(&text, &at).unwrap();
    assert_eq!(dropped, 0, "every result has a location");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let id = rt
        .block_on(sarif::send(&gh, "Codertocat/Hello-World", &body))
        .unwrap_or_else(|e| {
            panic!(
                "the upload failed (prism: a request against GitHub's description is a 422): {e}"
            )
        });
    assert_eq!(id, "47177e22-5596-11eb-80a1-c1e54ef945c6");
    let seen = seen.lock().unwrap();
    assert_eq!(seen.requests.len(), 1, "one request");
    let (path, sent) = &seen.requests[0];
    assert_eq!(path, "/repos/Codertocat/Hello-World/code-scanning/sarifs");
    assert_eq!(sent["commit_sha"], head.as_str());
    assert_eq!(sent["ref"], "refs/pull/2/head");
    assert_eq!(sent["tool_name"], "qa-loop");
    let gz = base64_decode(sent["sarif"].as_str().unwrap());
    let mut unzipped = String::new();
    flate2_read(&gz, &mut unzipped);
    let got: Value = serde_json::from_str(&unzipped).unwrap();
    assert_eq!(got, log, "the upload is the file");
}

fn base64_decode(text: &str) -> Vec<u8> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .unwrap()
}

fn flate2_read(gz: &[u8], out: &mut String) {
    flate2::read::GzDecoder::new(gz)
        .read_to_string(out)
        .unwrap();
}
