//! Uploading `qa-loop.sarif` to GitHub code scanning (`sarif-upload: true`, SPEC §7):
//! `POST /repos/{owner}/{repo}/code-scanning/sarifs` with the file gzip-compressed and
//! base64-encoded, the commit and ref its findings describe, and `tool_name`. The token needs
//! `security-events: write`. An upload is a write: it is sent once and never repeated after an
//! uncertain answer (the next run uploads again, replacing it). Results without a location are
//! left out of what is sent: code scanning rejects a whole file over one of them.

use std::io::Write;

use base64::Engine as _;
use serde_json::{Value, json};

use super::client::{GhError, GitHub};

/// `tool_name` of the upload.
pub const TOOL_NAME: &str = "qa-loop";
/// The largest compressed file GitHub accepts.
pub const MAX_GZIP_BYTES: usize = 10 * 1024 * 1024;

/// The commit and ref the findings are attached to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attach {
    pub commit_sha: String,
    /// `refs/pull/<n>/head`.
    pub git_ref: String,
}

/// Where the last review's findings go on pull request `pr` whose head was `head_sha` when the
/// run started: the commit that review saw (`seen`, known when the working tree was exactly a
/// commit) — the PR head, or a fix commit this run pushed (`pushed` commits, up to the best
/// iteration, which the last one must be); else, when the run changed no code before that
/// review (`changed`), the PR head (the tree differed only by files the tests left). `Err` says
/// why no commit on GitHub holds the findings.
pub fn attach(
    pr: u64,
    head_sha: &str,
    seen: Option<&str>,
    changed: bool,
    pushed: usize,
    last_is_best: bool,
) -> Result<Attach, String> {
    let at = |sha: &str| Attach {
        commit_sha: sha.to_string(),
        git_ref: format!("refs/pull/{pr}/head"),
    };
    match seen {
        Some(sha) if sha == head_sha || (pushed > 0 && last_is_best) => Ok(at(sha)),
        Some(sha) => Err(format!(
            "the last review saw commit {sha}, which this run did not push to the pull request"
        )),
        None if !changed => Ok(at(head_sha)),
        None => Err(
            "the last review saw changes that are in no commit on GitHub: no commit holds its findings"
                .into(),
        ),
    }
}

/// `sarif` (the file's text) as sent: results without a location removed; and how many were.
pub fn uploadable(sarif: &str) -> Result<(String, usize), String> {
    let mut log: Value =
        serde_json::from_str(sarif).map_err(|e| format!("qa-loop.sarif is not JSON: {e}"))?;
    let mut dropped = 0;
    for run in log["runs"].as_array_mut().into_iter().flatten() {
        if let Some(results) = run["results"].as_array_mut() {
            // Findings gone since the previous run: code scanning closes their alerts because
            // they are not uploaded (it documents no `baselineState` it would read).
            results.retain(|r| r["baselineState"] != "absent");
            let before = results.len();
            results.retain(|r| r["locations"].as_array().is_some_and(|l| !l.is_empty()));
            dropped += before - results.len();
        }
    }
    let text = serde_json::to_string(&log).map_err(|e| e.to_string())?;
    Ok((text, dropped))
}

/// gzip, then base64: what the API's `sarif` field takes.
pub fn encode(text: &str) -> Result<String, String> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(text.as_bytes())
        .and_then(|()| gz.finish())
        .map(|bytes| {
            if bytes.len() > MAX_GZIP_BYTES {
                Err(format!(
                    "the compressed file is {} bytes, over GitHub's {MAX_GZIP_BYTES}",
                    bytes.len()
                ))
            } else {
                Ok(base64::engine::general_purpose::STANDARD.encode(bytes))
            }
        })
        .map_err(|e| format!("cannot compress the SARIF file: {e}"))?
}

/// The request body for `sarif` attached `at`; and how many results were left out.
pub fn body(sarif: &str, at: &Attach) -> Result<(Value, usize), String> {
    let (text, dropped) = uploadable(sarif)?;
    let body = json!({
        "commit_sha": at.commit_sha,
        "ref": at.git_ref,
        "sarif": encode(&text)?,
        "tool_name": TOOL_NAME,
    });
    Ok((body, dropped))
}

/// Sends `body` once to `repo`'s code scanning; the upload's id.
pub async fn send(gh: &GitHub, repo: &str, body: &Value) -> Result<String, GhError> {
    let receipt = gh
        .post(&format!("repos/{repo}/code-scanning/sarifs"), body)
        .await?;
    Ok(receipt["id"].as_str().unwrap_or_default().to_string())
}

/// Uploads `sarif` (the file's text) to `repo`, attached `at`; logs what happened (publishing
/// never fails the run).
pub async fn upload(gh: &GitHub, repo: &str, at: &Attach, sarif: &str) {
    let (body, dropped) = match body(sarif, at) {
        Ok(b) => b,
        Err(why) => {
            tracing::warn!("cannot upload qa-loop.sarif to code scanning: {why}");
            return;
        }
    };
    if dropped > 0 {
        tracing::warn!(
            "{dropped} finding(s) without a file are not uploaded to code scanning (it rejects results without a location; qa_report.md lists them)"
        );
    }
    match send(gh, repo, &body).await {
        Ok(id) => tracing::info!(
            upload = %id,
            commit = %at.commit_sha,
            git_ref = %at.git_ref,
            "qa-loop.sarif uploaded to code scanning"
        ),
        // Never sent again blindly: the next run's upload replaces this one.
        Err(e) => tracing::warn!("cannot upload qa-loop.sarif to code scanning: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    const HEAD: &str = "0123456789abcdef0123456789abcdef01234567";
    const FIX: &str = "89abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn findings_go_to_the_commit_the_last_review_saw_when_github_has_it() {
        let head = attach(7, HEAD, Some(HEAD), false, 0, true).unwrap();
        assert_eq!(head.commit_sha, HEAD);
        assert_eq!(head.git_ref, "refs/pull/7/head");
        // A fix commit this run pushed (the last iteration is the best: it was pushed).
        let fix = attach(7, HEAD, Some(FIX), true, 2, true).unwrap();
        assert_eq!(fix.commit_sha, FIX);
        // Not pushed, or pushed only up to an earlier (best) iteration: GitHub lacks it.
        let why = attach(7, HEAD, Some(FIX), true, 0, true).unwrap_err();
        assert!(why.contains("did not push"), "{why}");
        assert!(attach(7, HEAD, Some(FIX), true, 2, false).is_err());
        // The tree was no commit: the PR head when the run changed nothing (test output
        // aside), else nowhere.
        assert_eq!(attach(7, HEAD, None, false, 0, true).unwrap(), head);
        let why = attach(7, HEAD, None, true, 0, true).unwrap_err();
        assert!(why.contains("no commit"), "{why}");
    }

    #[test]
    fn the_body_is_the_gzipped_base64_file_without_unlocated_results() {
        let sarif = json!({"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "qa-loop"}},
        "results": [
            {"ruleId": "unit_test", "message": {"text": "a"},
             "locations": [{"physicalLocation": {"artifactLocation": {"uri": "a.py"}}}]},
            {"ruleId": "coverage", "message": {"text": "b"}},
            {"ruleId": "coverage", "message": {"text": "c"}, "locations": []},
        ]}]})
        .to_string();
        let at = attach(3, HEAD, Some(HEAD), false, 0, true).unwrap();
        let (body, dropped) = body(&sarif, &at).unwrap();
        assert_eq!(dropped, 2);
        assert_eq!(body["commit_sha"], HEAD);
        assert_eq!(body["ref"], "refs/pull/3/head");
        assert_eq!(body["tool_name"], "qa-loop");
        let gz = base64::engine::general_purpose::STANDARD
            .decode(body["sarif"].as_str().unwrap())
            .unwrap();
        let mut text = String::new();
        flate2::read::GzDecoder::new(&gz[..])
            .read_to_string(&mut text)
            .unwrap();
        let sent: Value = serde_json::from_str(&text).unwrap();
        let results = sent["runs"][0]["results"].as_array().unwrap();
        assert_eq!(results.len(), 1);
        assert_eq!(results[0]["ruleId"], "unit_test");
        assert!(uploadable("{not json").is_err());
    }
}
