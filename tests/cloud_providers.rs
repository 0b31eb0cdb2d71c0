//! Issue 50: Claude through Amazon Bedrock, against a local fake of Bedrock Runtime and STS that
//! is itself checked by the reference clients (tests/fixtures/cloud/): the fake recomputes every
//! SigV4 signature with botocore's signer, and the `anthropic` SDK's `AnthropicBedrock` (static
//! keys, streaming and not; a Bedrock API key) and botocore's web identity provider must succeed
//! against it before qa-loop's requests are judged by it.
//!
//! `.ci/run` installs `anthropic[bedrock,vertex]==2.14.0` and botocore; elsewhere the tests print
//! why they did not run (and fail when `QA_LOOP_REAL_TOOLS=1`).

mod support;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use support::*;

use serde_json::{Value, json};

const MODEL: &str = "us.anthropic.claude-sonnet-5-5-v1:0";
const KEY_ID: &str = "AKIAQALOOPTEST000001";
const SECRET: &str = "qaloopSECRETbedrock0000000000000000000001";
const BEARER: &str = "ABSKQmVkcm9ja0FQSUtleS1xYWxvb3B0ZXN0";
const OIDC: &str = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJyZXBvOm9yZy9yZXBvIn0.c2lnbmF0dXJl";
const ROLE: &str = "arn:aws:iam::123456789012:role/qa-loop";

fn have_reference_clients() -> bool {
    have_tool(
        "the `anthropic[bedrock]` SDK and botocore",
        "python3",
        &["-c", "import anthropic.lib.bedrock, botocore.auth"],
    )
}

struct Fake {
    child: Child,
    url: String,
    state: tempfile::TempDir,
}

impl Drop for Fake {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/cloud")
        .join(name)
}

/// Starts the Python fake `script` over `state` (its `config.json` written) and waits for its port.
fn spawn_fake(script: &str, state: tempfile::TempDir) -> Fake {
    std::fs::write(state.path().join("requests.jsonl"), "").unwrap();
    let port_file = state.path().join("port");
    let child = Command::new("python3")
        .arg(fixture(script))
        .arg(&port_file)
        .arg(state.path())
        .spawn()
        .unwrap();
    let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !port_file.exists() {
        assert!(std::time::Instant::now() < until, "the fake did not start");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let url = format!(
        "http://127.0.0.1:{}",
        std::fs::read_to_string(&port_file).unwrap().trim()
    );
    Fake { child, url, state }
}

impl Fake {
    fn start(answers: Vec<Value>, extra: Value) -> Fake {
        let state = tempfile::tempdir().unwrap();
        let mut config = json!({"keys": {KEY_ID: SECRET}, "bearer": BEARER,
            "web_identity_token": OIDC, "answers": answers});
        for (k, v) in extra.as_object().unwrap() {
            config[k] = v.clone();
        }
        std::fs::write(state.path().join("config.json"), config.to_string()).unwrap();
        spawn_fake("fake_bedrock.py", state)
    }

    fn requests(&self) -> Vec<Value> {
        std::fs::read_to_string(self.state.path().join("requests.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    fn clear(&self) {
        std::fs::write(self.state.path().join("requests.jsonl"), "").unwrap();
    }
}

fn text_answer() -> Value {
    json!({"content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
           "usage": {"input_tokens": 10, "output_tokens": 2}})
}

fn verdict(status: &str) -> Value {
    let issues = if status == "approved" {
        json!([])
    } else {
        json!([{"id": "Q1", "title": "add subtracts", "type": "unit_test", "severity": "high",
                "file": "calc.py", "line": 2, "fix": "return a + b"}])
    };
    json!({"content": [{"type": "tool_use", "id": "toolu_bdrk_1", "name": "submit_verdict",
        "input": {"status": status, "score": 92, "confidence": 0.9, "summary": "fine",
                  "criteria": [], "issues": issues}}],
        "stop_reason": "tool_use", "usage": {"input_tokens": 1200, "output_tokens": 80}})
}

fn project(dir: &Path, extra: &str) {
    std::fs::write(dir.join("calc.py"), "def add(a, b):\n    return a + b\n").unwrap();
    std::fs::write(
        dir.join("test_calc.py"),
        "from calc import add\nassert add(2, 2) == 4\n",
    )
    .unwrap();
    std::fs::write(
        dir.join(".gitignore"),
        ".qa-loop/\n.actions/\n__pycache__/\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("qa-loop.yml"),
        format!("risk_level: low\nunit_tests:\n  commands: [\"python3 test_calc.py\"]\nmodel_retry_backoff: 50ms\n{extra}"),
    )
    .unwrap();
    git(dir, &["init", "-q"]);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "init"]);
}

/// `qa-loop run --verbose` in `dir` with a clean environment, as in GitHub Actions: the job
/// summary and the step outputs go to `dir/.actions/` (scanned by [`no_credential_anywhere`]).
fn qa_loop(dir: &Path) -> Command {
    let actions = dir.join(".actions");
    std::fs::create_dir_all(&actions).unwrap();
    let mut c = Command::new(env!("CARGO_BIN_EXE_qa-loop"));
    c.current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", dir)
        .env("NO_COLOR", "1")
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_STEP_SUMMARY", actions.join("summary.md"))
        .env("GITHUB_OUTPUT", actions.join("output"))
        .args(["run", "--verbose"]);
    c
}

/// No credential in any output of a run in `dir`: stdout, stderr (`--verbose`), every file of
/// the out dir (the report, the result whose history the sticky comment carries, the JUnit XML,
/// the logs), the job summary (the comment's report) and the step outputs. `known` are the
/// test's own credentials; every token, key and secret the fake issued (`{"issued": […]}` in its
/// record) counts too, and must have been masked in the job's log (`::add-mask::`).
fn no_credential_anywhere(dir: &Path, o: &Output, fake: &[Value], known: &[&str]) {
    let mut secrets: Vec<String> = known.iter().map(|s| s.to_string()).collect();
    for r in fake {
        for t in r["issued"].as_array().into_iter().flatten() {
            secrets.push(t.as_str().unwrap().to_string());
        }
    }
    // `::add-mask::` lines are the runner's to read (it hides the value from then on): each
    // token the fake issued mid-run is masked so, and no other line holds one.
    let stdout = String::from_utf8_lossy(&o.stdout);
    for r in fake {
        for t in r["issued"].as_array().into_iter().flatten() {
            let mask = format!("::add-mask::{}", t.as_str().unwrap());
            assert!(stdout.lines().any(|l| l == mask), "not masked: {mask}");
        }
    }
    let shown: Vec<&str> = stdout
        .lines()
        .filter(|l| !l.starts_with("::add-mask::"))
        .collect();
    let mut texts = vec![
        ("stdout".to_string(), shown.join("\n")),
        ("stderr".to_string(), stderr(o)),
    ];
    let mut stack = vec![dir.join(".qa-loop"), dir.join(".actions")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = e.path();
            if path.is_dir() {
                stack.push(path);
            } else if let Ok(bytes) = std::fs::read(&path) {
                texts.push((
                    path.display().to_string(),
                    String::from_utf8_lossy(&bytes).into_owned(),
                ));
            }
        }
    }
    let summary = std::fs::read_to_string(dir.join(".actions/summary.md")).unwrap_or_default();
    assert!(summary.contains("QA Loop"), "no job summary was written");
    assert!(texts.len() > 5, "too little output to judge: {texts:?}");
    for (name, text) in &texts {
        for secret in &secrets {
            assert!(!text.contains(secret.as_str()), "a credential in {name}");
        }
    }
}

/// `qa-loop run --provider bedrock` in `dir` against `fake`, with `env` as the credentials.
fn run(dir: &Path, fake: &Fake, env: &[(&str, &str)], extra: &[&str]) -> Output {
    let mut c = qa_loop(dir);
    c.env("AWS_REGION", "us-east-1")
        .env("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", &fake.url)
        .args(["--provider", "bedrock", "--model", MODEL])
        .args(if extra.contains(&"--mode") {
            &[][..]
        } else {
            &["--mode", "review"][..]
        })
        .args(extra)
        .envs(env.iter().copied());
    c.output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn the_reference_clients_succeed_against_the_fake() {
    if !have_reference_clients() {
        return;
    }
    let fake = Fake::start(vec![text_answer()], json!({}));
    let tmp = tempfile::tempdir().unwrap();
    let token = tmp.path().join("token");
    std::fs::write(&token, OIDC).unwrap();
    let o = Command::new("python3")
        .arg(fixture("reference_bedrock.py"))
        .args([&fake.url, MODEL, KEY_ID, SECRET, BEARER])
        .arg(&token)
        .arg(ROLE)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let got: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        got,
        json!({"static": "text", "stream": "text", "bearer": "text", "web_identity": "text"})
    );
    let reqs = fake.requests();
    let invokes: Vec<&Value> = reqs.iter().filter(|r| r["model"].is_string()).collect();
    assert_eq!(invokes.len(), 4, "{reqs:#?}");
    assert!(invokes.iter().all(|r| r["signed"] == true), "{reqs:#?}");
    assert!(
        reqs.iter()
            .any(|r| r["sts"] == "AssumeRoleWithWebIdentity" && r["token_ok"] == true)
    );
    // A wrong secret is refused by the same check (the fake is not a yes-man).
    let o = Command::new("python3")
        .args(["-c", "import sys; from anthropic import AnthropicBedrock as B; c = B(aws_access_key=sys.argv[2], aws_secret_key='wrong', aws_region='us-east-1', base_url=sys.argv[1], max_retries=0)\ntry:\n    c.messages.create(model=sys.argv[3], max_tokens=8, messages=[{'role': 'user', 'content': 'x'}])\nexcept Exception as e:\n    print(type(e).__name__, e)\n    sys.exit(3)"])
        .args([&fake.url, KEY_ID, MODEL])
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("signature"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
}

/// A review approves through each credential source; every request is signed as AWS verifies it
/// and shaped as the SDK shapes its own: the model and streaming in the path, the body without
/// `model` and `stream`, with `anthropic_version`.
#[test]
fn a_review_approves_through_bedrock_with_each_credential_source() {
    if !have_reference_clients() {
        return;
    }
    let fake = Fake::start(vec![verdict("approved")], json!({}));
    // The SDK's own request for the same model, as the fake recorded it.
    let sdk = Command::new("python3")
        .args(["-c", "import sys; from anthropic import AnthropicBedrock as B; B(aws_access_key=sys.argv[2], aws_secret_key=sys.argv[3], aws_region='us-east-1', base_url=sys.argv[1]).messages.create(model=sys.argv[4], max_tokens=8, system='s', messages=[{'role': 'user', 'content': 'x'}])"])
        .args([&fake.url, KEY_ID, SECRET, MODEL])
        .output()
        .unwrap();
    assert!(sdk.status.success(), "{}", stderr(&sdk));
    let sdk_request = fake.requests().pop().unwrap();
    fake.clear();
    let tmp = tempfile::tempdir().unwrap();
    let token = tmp.path().join("token");
    std::fs::write(&token, OIDC).unwrap();
    let creds = tmp.path().join("credentials");
    std::fs::write(
        &creds,
        format!("[ci]\naws_access_key_id = {KEY_ID}\naws_secret_access_key = {SECRET}\n"),
    )
    .unwrap();
    let (token, creds) = (token.display().to_string(), creds.display().to_string());
    /// A credential source: its name, its variables, how the fake sees it authenticated.
    type Source<'a> = (&'a str, Vec<(&'a str, &'a str)>, &'a str);
    let sources: Vec<Source> = vec![
        (
            "static keys",
            vec![
                ("AWS_ACCESS_KEY_ID", KEY_ID),
                ("AWS_SECRET_ACCESS_KEY", SECRET),
            ],
            "sigv4",
        ),
        (
            "Bedrock API key",
            vec![("AWS_BEARER_TOKEN_BEDROCK", BEARER)],
            "bearer",
        ),
        (
            "web identity",
            vec![
                ("AWS_WEB_IDENTITY_TOKEN_FILE", &token),
                ("AWS_ROLE_ARN", ROLE),
                ("AWS_ENDPOINT_URL_STS", &fake.url),
            ],
            "sigv4",
        ),
        (
            "profile",
            vec![
                ("AWS_SHARED_CREDENTIALS_FILE", &creds),
                ("AWS_PROFILE", "ci"),
            ],
            "sigv4",
        ),
    ];
    for (name, env, how) in sources {
        for stream in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            // A thinking budget past what the SDK sends unstreamed: the request streams.
            project(
                dir.path(),
                if stream {
                    "reviewer_thinking: 32000\n"
                } else {
                    ""
                },
            );
            fake.clear();
            let o = run(dir.path(), &fake, &env, &[]);
            let err = stderr(&o);
            assert_eq!(o.status.code(), Some(0), "{name} (stream {stream}): {err}");
            let reqs = fake.requests();
            let invoke: Vec<&Value> = reqs.iter().filter(|r| r["model"].is_string()).collect();
            assert_eq!(invoke.len(), 1, "{name}: {reqs:#?}");
            let r = invoke[0];
            assert_eq!(r["auth"], how, "{name}");
            assert_eq!(r["signed"], true, "{name}: {r:#}");
            assert_eq!(r["stream"], stream, "{name}");
            let verb = if stream {
                "invoke-with-response-stream"
            } else {
                "invoke"
            };
            assert_eq!(r["path"], format!("/model/{MODEL}/{verb}"), "{name}");
            // As the SDK's: the same path for the same model, no `model` or `stream` in the body,
            // an `anthropic_version`, and the Messages fields the SDK would send.
            assert_eq!(sdk_request["path"], format!("/model/{MODEL}/invoke"));
            let body = r["body"].as_object().unwrap();
            for gone in ["model", "stream"] {
                assert!(
                    !body.contains_key(gone)
                        && !sdk_request["body"].as_object().unwrap().contains_key(gone)
                );
            }
            assert_eq!(body["anthropic_version"], "bedrock-2023-05-31");
            assert!(sdk_request["body"]["anthropic_version"].is_string());
            for key in body.keys() {
                assert!(
                    [
                        "anthropic_version",
                        "max_tokens",
                        "messages",
                        "system",
                        "tools",
                        "thinking",
                        "output_config",
                        "tool_choice"
                    ]
                    .contains(&key.as_str()),
                    "{name}: unexpected body key {key}"
                );
            }
            assert_eq!(
                body["messages"][0]["role"],
                sdk_request["body"]["messages"][0]["role"]
            );
            assert_eq!(r["headers"]["content-type"], "application/json");
            if how == "sigv4" {
                let signed = r["signed_headers"][0].as_str().unwrap();
                assert!(
                    signed.contains("host") && signed.contains("x-amz-date"),
                    "{signed}"
                );
            }
            no_credential_anywhere(dir.path(), &o, &reqs, &[SECRET, BEARER, OIDC]);
            if name == "static keys" {
                // Field by field: the SDK, given qa-loop's prompt, sends the same path and body.
                let theirs = sdk_request_for("bedrock", &fake, MODEL, r, [KEY_ID, SECRET]);
                assert_eq!(theirs["path"], r["path"], "stream {stream}");
                same_but_version(&r["body"], &theirs["body"], "bedrock-2023-05-31");
                assert_eq!(theirs["signed"], true);
            }
        }
    }
}

/// The SDK's request for qa-loop's own: `ours` (a request the fake recorded) sent again through
/// the `anthropic` SDK's platform client (`bedrock` or `vertex`, with `auth`: its two credential
/// arguments); returns the request the fake recorded for the SDK.
fn sdk_request_for(
    platform: &str,
    fake: &Fake,
    model: &str,
    ours: &Value,
    auth: [&str; 2],
) -> Value {
    let body = fake.state.path().join("ours.json");
    std::fs::write(&body, ours["body"].to_string()).unwrap();
    let stream = ours["body"]["stream"] == true || ours["stream"] == true;
    fake.clear();
    let o = Command::new("python3")
        .arg(fixture("sdk_replay.py"))
        .args([platform, &fake.url, model])
        .arg(&body)
        .arg(stream.to_string())
        .args(auth)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let reqs = fake.requests();
    reqs.into_iter()
        .find(|r| r["body"].is_object() && r["path"].is_string())
        .unwrap()
}

/// Two Messages bodies equal field by field, but for the platform envelope's `anthropic_version`:
/// the SDK 2.14 sends its own API version there (`2026-10-21`), qa-loop the value the platform
/// documents (`bedrock-2023-05-31`, `vertex-2023-10-16`); both are accepted (FACTS.md).
fn same_but_version(ours: &Value, theirs: &Value, platform_version: &str) {
    assert_eq!(ours["anthropic_version"], platform_version);
    assert!(theirs["anthropic_version"].is_string(), "{theirs}");
    let strip = |v: &Value| {
        let mut v = v.clone();
        v.as_object_mut().unwrap().remove("anthropic_version");
        v
    };
    let (ours, theirs) = (strip(ours), strip(theirs));
    for key in ours
        .as_object()
        .unwrap()
        .keys()
        .chain(theirs.as_object().unwrap().keys())
    {
        assert_eq!(ours[key], theirs[key], "field `{key}`");
    }
}

/// A refused credential stops the run with exit 4 and an error naming the provider and where the
/// keys came from — never a verdict; the key is in no output.
#[test]
fn a_bad_key_ends_with_exit_4_naming_bedrock() {
    if !have_reference_clients() {
        return;
    }
    let fake = Fake::start(vec![verdict("approved")], json!({}));
    let dir = tempfile::tempdir().unwrap();
    project(dir.path(), "");
    let wrong = "wrongSECRETwrongSECRETwrongSECRET0000000";
    let o = run(
        dir.path(),
        &fake,
        &[
            ("AWS_ACCESS_KEY_ID", KEY_ID),
            ("AWS_SECRET_ACCESS_KEY", wrong),
        ],
        &[],
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(4), "{err}");
    let r = qa_result(dir.path());
    assert_eq!(r["verdict"], "error", "{r:#}");
    let errors = r["errors"].to_string();
    assert!(
        errors.contains("Bedrock") && errors.contains("AWS_ACCESS_KEY_ID"),
        "{errors}"
    );
    assert!(errors.contains("signature"), "{errors}");
    // Refused credentials stop the run at once: one call, one error, no retried review.
    assert_eq!(r["errors"].as_array().unwrap().len(), 1, "{errors}");
    let calls = fake
        .requests()
        .iter()
        .filter(|r| r["model"].is_string())
        .count();
    assert_eq!(calls, 1);
    let report = std::fs::read_to_string(dir.path().join(".qa-loop/qa_report.md")).unwrap();
    assert!(report.contains("refused the credentials"), "{report}");
    for text in [&err, &errors, &report] {
        assert!(!text.contains(wrong) && !text.contains(SECRET));
    }
    no_credential_anywhere(dir.path(), &o, &fake.requests(), &[wrong, SECRET]);
    // No region: exit 2 naming the setting.
    let mut c = Command::new(env!("CARGO_BIN_EXE_qa-loop"));
    let o = c
        .current_dir(dir.path())
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("AWS_ACCESS_KEY_ID", KEY_ID)
        .env("AWS_SECRET_ACCESS_KEY", SECRET)
        .args(["run", "--provider", "bedrock", "--model", MODEL])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("AWS_REGION"), "{}", stderr(&o));
}

/// Bedrock's throttling answer (429 ThrottlingException with `retry-after`) is waited out and
/// retried; a cost budget stops the run on Bedrock as anywhere (exit 4).
#[test]
fn throttling_is_retried_and_a_cost_budget_stops_the_run() {
    if !have_reference_clients() {
        return;
    }
    let fake = Fake::start(
        vec![verdict("approved")],
        json!({"throttle_first": 1, "retry_after": 1}),
    );
    let dir = tempfile::tempdir().unwrap();
    project(dir.path(), "");
    let keys = [
        ("AWS_ACCESS_KEY_ID", KEY_ID),
        ("AWS_SECRET_ACCESS_KEY", SECRET),
    ];
    let started = std::time::Instant::now();
    let o = run(dir.path(), &fake, &keys, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(started.elapsed() >= std::time::Duration::from_secs(1));
    let invokes = fake
        .requests()
        .iter()
        .filter(|r| r["model"].is_string())
        .count();
    assert_eq!(invokes, 2, "one throttled, one answered");
    assert!(stderr(&o).contains("retrying"), "{}", stderr(&o));

    // A rejecting review costs more than the budget allows for the fixer's turn.
    let fake = Fake::start(vec![verdict("rejected")], json!({}));
    let dir = tempfile::tempdir().unwrap();
    project(dir.path(), "");
    let mut args = vec!["--max-cost-usd", "0.001"];
    args.extend(["--mode", "fix"]);
    let o = run(dir.path(), &fake, &keys, &args);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    let report = std::fs::read_to_string(dir.path().join(".qa-loop/qa_report.md")).unwrap();
    assert!(report.to_lowercase().contains("budget"), "{report}");
}

// ---------------------------------------------------------------------------------------------
// Google Vertex AI.

const VMODEL: &str = "claude-sonnet-5-5@20251001";
const PROJECT: &str = "qa-loop-test";
const REQUEST_TOKEN: &str = "ghs_ACTIONSIDTOKENREQUESTTOKEN0000001";
/// A Vertex access token the fake takes as given (for the SDK's replay of qa-loop's request).
const VERTEX_TOKEN: &str = "ya29.qaloop-sdk-replay-0000000001";
const AUDIENCE: &str =
    "//iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/p/providers/gh";

/// The fake Vertex with its Google endpoints, and the two credential files that point at it: an
/// `external_account` file as google-github-actions/auth writes it (subject token from the
/// Actions OIDC URL with the request token in its headers, impersonation of a service account)
/// and a `service_account` key made with openssl.
struct Vertex {
    fake: Fake,
    files: tempfile::TempDir,
}

impl Vertex {
    fn start(answers: Vec<Value>) -> Vertex {
        let files = tempfile::tempdir().unwrap();
        let key = files.path().join("key.pem");
        let ok = Command::new("openssl")
            .args([
                "genpkey",
                "-algorithm",
                "RSA",
                "-pkeyopt",
                "rsa_keygen_bits:2048",
                "-out",
            ])
            .arg(&key)
            .output()
            .unwrap();
        assert!(ok.status.success(), "{}", stderr(&ok));
        let public = Command::new("openssl")
            .args(["pkey", "-pubout", "-in"])
            .arg(&key)
            .output()
            .unwrap();
        let public = String::from_utf8(public.stdout).unwrap();
        let state = tempfile::tempdir().unwrap();
        let config = json!({"oidc": OIDC, "request_token": REQUEST_TOKEN, "audience": AUDIENCE,
            "public_key": public, "access_token": VERTEX_TOKEN, "answers": answers});
        std::fs::write(state.path().join("config.json"), config.to_string()).unwrap();
        let fake = spawn_fake("fake_vertex.py", state);
        let url = fake.url.clone();
        let external = json!({
            "type": "external_account", "audience": AUDIENCE,
            "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
            "token_url": format!("{url}/v1/token"),
            "service_account_impersonation_url": format!("{url}/v1/projects/-/serviceAccounts/qa@{PROJECT}.iam.gserviceaccount.com:generateAccessToken"),
            "credential_source": {"url": format!("{url}/oidc?audience=https://iam.googleapis.com"),
                "headers": {"Authorization": format!("Bearer {REQUEST_TOKEN}")},
                "format": {"type": "json", "subject_token_field_name": "value"}}
        });
        std::fs::write(files.path().join("gha-creds-1.json"), external.to_string()).unwrap();
        let sa = json!({"type": "service_account", "project_id": PROJECT, "private_key_id": "k1",
            "private_key": std::fs::read_to_string(&key).unwrap(),
            "client_email": format!("qa@{PROJECT}.iam.gserviceaccount.com"), "client_id": "1",
            "token_uri": format!("{url}/oauth2/token")});
        std::fs::write(files.path().join("sa.json"), sa.to_string()).unwrap();
        Vertex { fake, files }
    }

    /// A line of the service account's private key (a credential no output may hold).
    fn key_line(&self) -> String {
        let sa: Value =
            serde_json::from_str(&std::fs::read_to_string(self.file("sa.json")).unwrap()).unwrap();
        sa["private_key"]
            .as_str()
            .unwrap()
            .lines()
            .nth(1)
            .unwrap()
            .to_string()
    }

    fn file(&self, name: &str) -> String {
        self.files.path().join(name).display().to_string()
    }

    fn run(&self, dir: &Path, env: &[(&str, &str)]) -> Output {
        qa_loop(dir)
            .env("CLOUD_ML_REGION", "us-east5")
            .env("ANTHROPIC_VERTEX_PROJECT_ID", PROJECT)
            .env("ANTHROPIC_VERTEX_BASE_URL", format!("{}/v1", self.fake.url))
            .args([
                "--provider",
                "vertex",
                "--model",
                VMODEL,
                "--mode",
                "review",
            ])
            .envs(env.iter().copied())
            .output()
            .unwrap()
    }
}

#[test]
fn the_reference_clients_succeed_against_the_fake_vertex() {
    if !have_reference_clients() {
        return;
    }
    let v = Vertex::start(vec![text_answer()]);
    let o = Command::new("python3")
        .arg(fixture("reference_vertex.py"))
        .args([
            &v.fake.url,
            &v.file("gha-creds-1.json"),
            &v.file("sa.json"),
            PROJECT,
            VMODEL,
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let got: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        got,
        json!({"external_token": "sa", "external": "text", "stream": "text", "service_account": "text"})
    );
    let reqs = v.fake.requests();
    assert!(
        reqs.iter()
            .filter(|r| r["path"].is_string())
            .all(|r| r["authorized"] == true)
    );
    assert!(
        reqs.iter()
            .any(|r| r["jwt_bearer"] == true && r["ok"] == true),
        "{reqs:#?}"
    );
}

/// A review approves through Vertex with the external_account file (the Actions OIDC URL, STS,
/// impersonation) and with a service account key, streaming and not; requests shaped as the SDK's.
#[test]
fn a_review_approves_through_vertex_with_each_credential_source() {
    if !have_reference_clients() {
        return;
    }
    let v = Vertex::start(vec![verdict("approved")]);
    let (external, sa) = (v.file("gha-creds-1.json"), v.file("sa.json"));
    for (name, file) in [("external_account", &external), ("service_account", &sa)] {
        for stream in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            project(
                dir.path(),
                if stream {
                    "reviewer_thinking: 32000\n"
                } else {
                    ""
                },
            );
            v.fake.clear();
            let o = v.run(dir.path(), &[("GOOGLE_APPLICATION_CREDENTIALS", file)]);
            let err = stderr(&o);
            assert_eq!(o.status.code(), Some(0), "{name} (stream {stream}): {err}");
            let reqs = v.fake.requests();
            let predict: Vec<&Value> = reqs.iter().filter(|r| r["path"].is_string()).collect();
            assert_eq!(predict.len(), 1, "{reqs:#?}");
            let r = predict[0];
            assert_eq!(r["authorized"], true);
            let specifier = if stream {
                "streamRawPredict"
            } else {
                "rawPredict"
            };
            assert_eq!(
                r["path"],
                format!(
                    "/v1/projects/{PROJECT}/locations/us-east5/publishers/anthropic/models/{VMODEL}:{specifier}"
                )
            );
            let body = r["body"].as_object().unwrap();
            assert!(!body.contains_key("model"));
            assert_eq!(body.get("stream").is_some(), stream);
            assert_eq!(body["anthropic_version"], "vertex-2023-10-16");
            if name == "external_account" {
                // The subject token came from the OIDC URL with the request token; STS, then
                // impersonation.
                assert!(
                    reqs.iter().any(|r| r["oidc"] == true && r["ok"] == true),
                    "{reqs:#?}"
                );
                // The STS step asks what google-auth asks for an impersonating file.
                assert!(reqs.iter().any(|r| r["sts"] == true
                    && r["ok"] == true
                    && r["scope"] == "https://www.googleapis.com/auth/iam"));
                assert!(
                    reqs.iter()
                        .any(|r| r["impersonation"] == true && r["ok"] == true)
                );
            }
            // The request token, the OIDC token, a line of the service account's private key
            // and every token the fake issued.
            let key = v.key_line();
            no_credential_anywhere(dir.path(), &o, &reqs, &[REQUEST_TOKEN, OIDC, &key]);
            if name == "service_account" {
                // Field by field: the SDK, given qa-loop's prompt, sends the same path and body.
                let theirs = sdk_request_for("vertex", &v.fake, VMODEL, r, [PROJECT, VERTEX_TOKEN]);
                assert_eq!(theirs["path"], r["path"], "stream {stream}");
                same_but_version(&r["body"], &theirs["body"], "vertex-2023-10-16");
            }
        }
    }
    // A refused token: exit 4 naming Vertex AI and the variable.
    let dir = tempfile::tempdir().unwrap();
    project(dir.path(), "");
    v.fake.clear();
    let o = v.run(
        dir.path(),
        &[("CLOUDSDK_AUTH_ACCESS_TOKEN", "ya29.not-issued-by-the-fake")],
    );
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    let errors = qa_result(dir.path())["errors"].to_string();
    assert!(
        errors.contains("Vertex AI") && errors.contains("CLOUDSDK_AUTH_ACCESS_TOKEN"),
        "{errors}"
    );
    no_credential_anywhere(
        dir.path(),
        &o,
        &v.fake.requests(),
        &["ya29.not-issued-by-the-fake"],
    );
}

// ---------------------------------------------------------------------------------------------
// Microsoft Foundry.

const FOUNDRY_KEY: &str = "fndryKEY0123456789abcdef0123456789";
const FEDERATED: &str = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQifQ.ZmVk";

fn foundry_fake(answers: Vec<Value>) -> Fake {
    let state = tempfile::tempdir().unwrap();
    let config = json!({"key": FOUNDRY_KEY, "tenant": "tenant-1", "client_id": "client-1",
        "federated": FEDERATED, "answers": answers});
    std::fs::write(state.path().join("config.json"), config.to_string()).unwrap();
    spawn_fake("fake_foundry.py", state)
}

/// The SDK's `AnthropicFoundry` with a key succeeds against the fake; a review approves through
/// Foundry with the key and with an Entra ID token (workload identity), and a refused key ends
/// with exit 4 naming Foundry and the variable.
#[test]
fn a_review_approves_through_foundry_with_a_key_and_with_workload_identity() {
    if !have_reference_clients() {
        return;
    }
    let fake = foundry_fake(vec![text_answer(), verdict("approved")]);
    let base = format!("{}/anthropic/", fake.url);
    let o = Command::new("python3")
        .args(["-c", "import sys; from anthropic import AnthropicFoundry as F; print(F(api_key=sys.argv[1], base_url=sys.argv[2]).messages.create(model='claude-sonnet-5-5', max_tokens=8, messages=[{'role': 'user', 'content': 'x'}]).content[0].type)"])
        .args([FOUNDRY_KEY, &base])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        "text",
        "{}",
        stderr(&o)
    );
    let sdk = fake.requests().pop().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let token = tmp.path().join("federated");
    std::fs::write(&token, FEDERATED).unwrap();
    let token = token.display().to_string();
    let run = |dir: &Path, env: &[(&str, &str)]| {
        qa_loop(dir)
            .env("ANTHROPIC_FOUNDRY_BASE_URL", &base)
            .args([
                "--provider",
                "foundry",
                "--model",
                "claude-sonnet-5-5",
                "--mode",
                "review",
            ])
            .envs(env.iter().copied())
            .output()
            .unwrap()
    };
    for (name, env, how) in [
        (
            "key",
            vec![("ANTHROPIC_FOUNDRY_API_KEY", FOUNDRY_KEY)],
            "key",
        ),
        (
            "workload identity",
            vec![
                ("AZURE_CLIENT_ID", "client-1"),
                ("AZURE_TENANT_ID", "tenant-1"),
                ("AZURE_FEDERATED_TOKEN_FILE", token.as_str()),
                ("AZURE_AUTHORITY_HOST", fake.url.as_str()),
            ],
            "entra",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        project(dir.path(), "");
        fake.clear();
        let o = run(dir.path(), &env);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(0), "{name}: {err}");
        let reqs = fake.requests();
        let msgs: Vec<&Value> = reqs.iter().filter(|r| r["messages"] == true).collect();
        assert_eq!(msgs.len(), 1, "{name}: {reqs:#?}");
        assert_eq!(msgs[0]["ok"], true);
        assert_eq!(msgs[0]["how"], how);
        // The same Messages request as the SDK's, at the same path.
        assert!(
            msgs[0]["body_keys"]
                .as_array()
                .unwrap()
                .contains(&json!("model"))
        );
        assert!(
            sdk["body_keys"]
                .as_array()
                .unwrap()
                .contains(&json!("model"))
        );
        if how == "entra" {
            assert!(
                reqs.iter().any(|r| r["entra"] == true && r["ok"] == true),
                "{reqs:#?}"
            );
        }
        no_credential_anywhere(dir.path(), &o, &reqs, &[FOUNDRY_KEY, FEDERATED]);
    }
    let dir = tempfile::tempdir().unwrap();
    project(dir.path(), "");
    fake.clear();
    let o = run(
        dir.path(),
        &[("ANTHROPIC_FOUNDRY_API_KEY", "wrong-key-0000000000000000")],
    );
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    let errors = qa_result(dir.path())["errors"].to_string();
    assert!(
        errors.contains("Foundry") && errors.contains("ANTHROPIC_FOUNDRY_API_KEY"),
        "{errors}"
    );
    no_credential_anywhere(
        dir.path(),
        &o,
        &fake.requests(),
        &["wrong-key-0000000000000000"],
    );
}

// ---------------------------------------------------------------------------------------------
// Anthropic workload identity federation (issue 51).

/// Without a key, a review approves through Anthropic's jwt-bearer exchange — the identity token
/// from a file, and from the Actions OIDC URL — sending what the SDK's own exchange sends (same
/// endpoint, grant fields, beta headers; checked against the same fake, which the SDK passes).
#[test]
fn a_review_approves_through_anthropic_federation_as_the_sdk_exchanges() {
    if !have_reference_clients() {
        return;
    }
    let state = tempfile::tempdir().unwrap();
    let config = json!({"oidc": OIDC, "request_token": REQUEST_TOKEN, "rule": "fdrl_01qaloop",
        "org": "org-qaloop", "answers": [text_answer(), verdict("approved")]});
    std::fs::write(state.path().join("config.json"), config.to_string()).unwrap();
    let fake = spawn_fake("fake_oauth.py", state);
    let token = fake.state.path().join("identity");
    std::fs::write(&token, OIDC).unwrap();
    let token = token.display().to_string();
    let federation = [
        ("ANTHROPIC_FEDERATION_RULE_ID", "fdrl_01qaloop"),
        ("ANTHROPIC_ORGANIZATION_ID", "org-qaloop"),
    ];
    // The SDK's own exchange, through its default credentials chain.
    let o = Command::new("python3")
        .args(["-c", "from anthropic import Anthropic; print(Anthropic().messages.create(model='claude-sonnet-5-5', max_tokens=8, messages=[{'role': 'user', 'content': 'x'}]).content[0].type)"])
        .env_remove("ANTHROPIC_API_KEY")
        .env("ANTHROPIC_BASE_URL", &fake.url)
        .env("ANTHROPIC_IDENTITY_TOKEN_FILE", &token)
        .envs(federation)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        "text",
        "{}",
        stderr(&o)
    );
    let sdk = fake.requests();
    let oidc_url = format!("{}/oidc?x=1", fake.url);
    for (name, identity) in [
        (
            "token file",
            vec![("ANTHROPIC_IDENTITY_TOKEN_FILE", token.as_str())],
        ),
        (
            "Actions OIDC",
            vec![
                ("ACTIONS_ID_TOKEN_REQUEST_URL", oidc_url.as_str()),
                ("ACTIONS_ID_TOKEN_REQUEST_TOKEN", REQUEST_TOKEN),
                ("QA_LOOP_OIDC_AUDIENCE", "https://api.anthropic.com"),
            ],
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        project(dir.path(), "");
        fake.clear();
        let o = qa_loop(dir.path())
            .args([
                "--provider",
                "anthropic",
                "--base-url",
                &fake.url,
                "--mode",
                "review",
            ])
            .envs(federation)
            .envs(identity.iter().copied())
            .output()
            .unwrap();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(0), "{name}: {err}");
        let reqs = fake.requests();
        let pick =
            |list: &[Value], what: &str| list.iter().find(|r| r[what] == true).cloned().unwrap();
        let (ours, theirs) = (pick(&reqs, "exchange"), pick(&sdk, "exchange"));
        assert_eq!(ours["ok"], true, "{name}: {reqs:#?}");
        for field in ["keys", "beta", "content_type"] {
            assert_eq!(ours[field], theirs[field], "{name}: {field}");
        }
        let (ours, theirs) = (pick(&reqs, "messages"), pick(&sdk, "messages"));
        assert_eq!(ours["ok"], true);
        assert_eq!(
            (&ours["beta"], &ours["x_api_key"]),
            (&theirs["beta"], &theirs["x_api_key"])
        );
        if name == "Actions OIDC" {
            assert!(
                reqs.iter().any(|r| r["oidc"] == true
                    && r["ok"] == true
                    && r["audience"] == "https://api.anthropic.com"),
                "{reqs:#?}"
            );
        }
        no_credential_anywhere(dir.path(), &o, &reqs, &[OIDC, REQUEST_TOKEN]);
    }
}

// ---------------------------------------------------------------------------------------------
// OpenAI workload identity (issue 51).

const IDP: &str = "idp_01qaloop";
const SERVICE_ACCOUNT: &str = "svc_01qaloop";

/// A Responses API answer: a reasoning item, then `text` or a `submit_verdict` call.
fn responses_answer(n: u32, verdict: Option<&str>) -> Value {
    let mut items = vec![json!({"type": "reasoning", "id": format!("rs_{n}"), "summary": []})];
    match verdict {
        Some(status) => items.push(json!({"type": "function_call", "id": format!("fc_{n}"),
            "call_id": format!("call_{n}"), "name": "submit_verdict", "status": "completed",
            "arguments": json!({"status": status, "score": 90, "confidence": 0.9,
                "summary": "fine", "criteria": [], "issues": []}).to_string()})),
        None => items.push(
            json!({"type": "message", "id": format!("msg_{n}"), "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "I read the change.", "annotations": []}]}),
        ),
    }
    json!({"id": format!("resp_{n}"), "object": "response", "created_at": 1_763_700_000,
        "status": "completed", "model": "gpt-5.4", "output": items,
        "usage": {"input_tokens": 900, "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 60, "output_tokens_details": {"reasoning_tokens": 10},
            "total_tokens": 960}})
}

fn oauth_fake(expires_in: u64) -> Fake {
    let state = tempfile::tempdir().unwrap();
    let config = json!({"oidc": OIDC, "request_token": REQUEST_TOKEN, "idp": IDP,
        "service_account": SERVICE_ACCOUNT, "expires_in": expires_in, "answers": [],
        "responses": [responses_answer(1, None), responses_answer(2, Some("approved"))]});
    std::fs::write(state.path().join("config.json"), config.to_string()).unwrap();
    spawn_fake("fake_oauth.py", state)
}

/// `qa-loop run --provider openai` (review) against the fake, keyless: `env` says where the
/// identity token comes from.
fn run_openai(dir: &Path, fake: &Fake, env: &[(&str, &str)]) -> Output {
    let exchange = format!("{}/oauth/token", fake.url);
    qa_loop(dir)
        .env("OPENAI_TOKEN_EXCHANGE_URL", &exchange)
        .args([
            "--provider",
            "openai",
            "--model",
            "gpt-5.4",
            "--mode",
            "review",
        ])
        .args(["--base-url", &format!("{}/v1", fake.url)])
        .envs(env.iter().copied())
        .output()
        .unwrap()
}

/// Without a key, a review approves through OpenAI's RFC 8693 token exchange — the identity
/// token from a file and from the Actions OIDC URL — sending the body the `openai` SDK's own
/// `WorkloadIdentity` sends (checked on the same fake, which the SDK passes); the token is
/// fetched again once it is due; a refused exchange ends with exit 4 naming OpenAI and the
/// variables; no token in any output.
#[test]
fn a_review_approves_through_openai_workload_identity_as_the_sdk_exchanges() {
    if !have_tool("the `openai` SDK", "python3", &["-c", "import openai.auth"]) {
        return;
    }
    let fake = oauth_fake(3600);
    let token = fake.state.path().join("identity");
    std::fs::write(&token, OIDC).unwrap();
    let token = token.display().to_string();
    // The SDK's own exchange. Its client takes no exchange URL, so the test points the
    // client's auth at the fake's.
    let o = Command::new("python3")
        .args([
            "-c",
            r#"
import sys
from openai import OpenAI
from openai.auth import k8s_service_account_token_provider as k8s
c = OpenAI(base_url=sys.argv[1] + "/v1", workload_identity={"identity_provider_id": sys.argv[2],
    "service_account_id": sys.argv[3], "provider": k8s(sys.argv[4])}, max_retries=0)
c._workload_identity_auth.token_exchange_url = sys.argv[1] + "/oauth/token"
print(c.responses.create(model="gpt-5.4", input="x").output[-1].type)
"#,
        ])
        .args([&fake.url, IDP, SERVICE_ACCOUNT, &token])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        "message",
        "{}",
        stderr(&o)
    );
    let sdk = fake.requests();
    let pick = |list: &[Value], what: &str| -> Vec<Value> {
        list.iter().filter(|r| r[what] == true).cloned().collect()
    };
    let theirs = pick(&sdk, "openai_exchange").remove(0);
    assert_eq!(theirs["ok"], true, "{sdk:#?}");
    let federation = [
        ("OPENAI_IDENTITY_PROVIDER_ID", IDP),
        ("OPENAI_SERVICE_ACCOUNT_ID", SERVICE_ACCOUNT),
    ];
    for name in ["token file", "Actions OIDC"] {
        let dir = tempfile::tempdir().unwrap();
        project(dir.path(), "");
        let fake = oauth_fake(3600);
        let oidc_url = format!("{}/oidc?x=1", fake.url);
        let mut env = federation.to_vec();
        if name == "token file" {
            env.push(("OPENAI_IDENTITY_TOKEN_FILE", token.as_str()));
        } else {
            env.extend([
                ("ACTIONS_ID_TOKEN_REQUEST_URL", oidc_url.as_str()),
                ("ACTIONS_ID_TOKEN_REQUEST_TOKEN", REQUEST_TOKEN),
                ("QA_LOOP_OIDC_AUDIENCE", "api://openai"),
            ]);
        }
        let o = run_openai(dir.path(), &fake, &env);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(0), "{name}: {err}");
        let reqs = fake.requests();
        let ours = pick(&reqs, "openai_exchange");
        // Two model calls (a text answer, then the verdict), one exchange: the token is kept.
        assert_eq!(ours.len(), 1, "{name}: {reqs:#?}");
        assert_eq!(ours[0]["ok"], true, "{name}");
        // The same grant, token type, identity provider and service account, and JSON.
        assert_eq!(ours[0]["body"], theirs["body"], "{name}");
        assert_eq!(ours[0]["content_type"], theirs["content_type"], "{name}");
        let calls = pick(&reqs, "responses");
        assert_eq!(calls.len(), 2, "{name}: {reqs:#?}");
        assert!(calls.iter().all(|c| c["ok"] == true), "{name}");
        if name == "Actions OIDC" {
            assert!(
                reqs.iter().any(|r| r["oidc"] == true
                    && r["ok"] == true
                    && r["audience"] == "api://openai"),
                "{reqs:#?}"
            );
        }
        no_credential_anywhere(dir.path(), &o, &reqs, &[OIDC, REQUEST_TOKEN]);
    }
    // A token that is due at once is fetched again for every call.
    let dir = tempfile::tempdir().unwrap();
    project(dir.path(), "");
    let fake = oauth_fake(0);
    let mut env = federation.to_vec();
    env.push(("OPENAI_IDENTITY_TOKEN_FILE", token.as_str()));
    let o = run_openai(dir.path(), &fake, &env);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let reqs = fake.requests();
    assert_eq!(pick(&reqs, "openai_exchange").len(), 2, "{reqs:#?}");
    // A refused exchange: exit 4, naming OpenAI and the variables, never a verdict.
    let dir = tempfile::tempdir().unwrap();
    project(dir.path(), "");
    let fake = oauth_fake(3600);
    let o = run_openai(
        dir.path(),
        &fake,
        &[
            ("OPENAI_IDENTITY_PROVIDER_ID", IDP),
            ("OPENAI_SERVICE_ACCOUNT_ID", "svc_someone_else"),
            ("OPENAI_IDENTITY_TOKEN_FILE", token.as_str()),
        ],
    );
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    let errors = qa_result(dir.path())["errors"].to_string();
    for want in ["OpenAI", "OPENAI_IDENTITY_PROVIDER_ID", "invalid_grant"] {
        assert!(errors.contains(want), "{want}: {errors}");
    }
    // One exchange, not one per retried review: a refused credential stops the run at once.
    assert_eq!(pick(&fake.requests(), "openai_exchange").len(), 1);
    assert!(pick(&fake.requests(), "responses").is_empty());
    no_credential_anywhere(dir.path(), &o, &fake.requests(), &[OIDC]);
}
