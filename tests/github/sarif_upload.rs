//! `sarif-upload` (issue 40): at the end of a pull-request run, `qa-loop.sarif` goes to code
//! scanning in one request (checked by prism against GitHub's OpenAPI description), gzip- and
//! base64-encoded, attached to the PR head the review saw. Two runs in a row on the same PR: the
//! second's SARIF compares with the first's findings through the sticky comment's cross-run
//! state — the finding seen again `unchanged`, the new one `new`, the gone one `absent`.

use super::*;

/// The `sarif` field of an upload, decoded.
fn uploaded(body: &Value) -> Value {
    use base64::Engine as _;
    use std::io::Read;
    let gz = base64::engine::general_purpose::STANDARD
        .decode(body["sarif"].as_str().unwrap())
        .unwrap();
    let mut text = String::new();
    flate2::read::GzDecoder::new(&gz[..])
        .read_to_string(&mut text)
        .unwrap();
    serde_json::from_str(&text).unwrap()
}

fn state_of<'a>(log: &'a Value, title: &str) -> (&'a str, &'a str) {
    let r = log["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["message"]["text"].as_str().unwrap().starts_with(title))
        .unwrap_or_else(|| panic!("no result {title}: {log:#}"));
    (
        r["partialFingerprints"]["qaLoopFindingHash/v1"]
            .as_str()
            .unwrap(),
        r["baselineState"].as_str().unwrap(),
    )
}

#[test]
fn the_sarif_is_uploaded_each_run_and_compares_with_the_previous_run() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    project(d, json!([verdict("rejected", 60)]));
    let gh: Shared = Arc::new(Mutex::new(Gh::default()));
    let api = start(gh.clone());
    let head = git_out(d, &["rev-parse", "HEAD"]);
    let o = run_with_payload(d, &api, &["--mode", "review", "--sarif-upload"], |_| {});
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_published(&o);
    let first = {
        let g = gh.lock().unwrap();
        assert_eq!(g.sarif_uploads.len(), 1, "one upload");
        let body = &g.sarif_uploads[0];
        assert_eq!(body["commit_sha"], head.as_str());
        assert_eq!(body["ref"], "refs/pull/2/head");
        assert_eq!(body["tool_name"], "qa-loop");
        uploaded(body)
    };
    // The upload is the file the run wrote.
    let file: Value =
        serde_json::from_str(&std::fs::read_to_string(d.join(".qa-loop/qa-loop.sarif")).unwrap())
            .unwrap();
    assert_eq!(first, file);
    let (subtracts, state) = state_of(&first, "add subtracts");
    assert_eq!(state, "new");
    let subtracts = subtracts.to_string();

    // The next push: the reviewer no longer names `add subtracts` but a new problem; the
    // failing suite's finding is there again.
    let issue = json!([{"id": "Q1", "title": "the test runs at import time, outside any runner",
        "type": "code_quality", "severity": "medium", "file": "test_calc.py", "line": 2,
        "fix": "Put the assertion in a test function."}]);
    let second_verdict = json!({"role": "reviewer", "tool_calls": [{"id": "v", "name": "submit_verdict",
        "arguments": {"status": "rejected", "score": 60, "confidence": 0.9, "summary": "s",
        "criteria": [], "issues": issue}}]});
    std::fs::write(
        d.join("session.json"),
        json!({"calls": [second_verdict]}).to_string(),
    )
    .unwrap();
    let o = run_with_payload(d, &api, &["--mode", "review", "--sarif-upload"], |p| {
        p["action"] = json!("synchronize");
    });
    assert_published(&o);
    let second = {
        let g = gh.lock().unwrap();
        assert_eq!(g.sarif_uploads.len(), 2, "one upload per run");
        uploaded(&g.sarif_uploads[1])
    };
    let props = &second["runs"][0]["properties"];
    assert_eq!(props["earlierIterations"], 1, "{props:#}");
    assert_eq!(state_of(&second, "the test runs at import time").1, "new");
    assert_eq!(state_of(&second, "Required gate").1, "unchanged");
    // The fixed finding is not uploaded (code scanning closes its alert by its absence) …
    assert!(
        second["runs"][0]["results"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["baselineState"] != "absent"),
        "{second:#}"
    );
    // … and the file itself holds it as an `absent` result with run 1's fingerprint.
    let file: Value =
        serde_json::from_str(&std::fs::read_to_string(d.join(".qa-loop/qa-loop.sarif")).unwrap())
            .unwrap();
    let absent: Vec<&Value> = file["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["baselineState"] == "absent")
        .collect();
    assert_eq!(absent.len(), 1, "{absent:#?}");
    assert_eq!(
        absent[0]["partialFingerprints"]["qaLoopFindingHash/v1"],
        subtracts.as_str()
    );

    // Without `--sarif-upload` nothing is uploaded.
    let o = run_with_payload(d, &api, &["--mode", "review"], |p| {
        p["action"] = json!("synchronize");
    });
    assert_published(&o);
    assert_eq!(gh.lock().unwrap().sarif_uploads.len(), 2);
}
