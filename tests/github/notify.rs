//! Notifications on a pull request (issue 21): the notice names the PR and links to it, to the
//! check run and to the escalation issue qa-loop opened.

use super::*;

#[test]
fn an_escalation_notice_links_the_pr_the_check_run_and_the_escalation_issue() {
    let dir = tempfile::tempdir().unwrap();
    let mut calls = Vec::new();
    for (n, title) in [
        "add() returns the wrong sum",
        "The add function returns a wrong sum",
        "Error: add returns the wrong sum",
    ]
    .iter()
    .enumerate()
    {
        let mut v = verdict("rejected", 50);
        v["tool_calls"][0]["arguments"]["issues"][0]["title"] = json!(title);
        calls.push(v);
        if n < 2 {
            calls.push(json!({"role": "fixer", "tool_calls": [{"id": "f", "name": "finish", "arguments": {"summary": "tried"}}]}));
        }
    }
    project(dir.path(), json!(calls));
    let got: Arc<Mutex<Vec<(String, Value)>>> = Arc::default();
    let seen = got.clone();
    let hook = axum::Router::new().fallback(move |headers: axum::http::HeaderMap, body: String| {
        let seen = seen.clone();
        async move {
            let event = headers["x-qa-loop-event"].to_str().unwrap().to_string();
            seen.lock()
                .unwrap()
                .push((event, serde_json::from_str(&body).unwrap()));
            StatusCode::NO_CONTENT
        }
    });
    let url = format!("http://{}/qa", serve(hook));
    let config = std::fs::read_to_string(dir.path().join("qa-loop.yml")).unwrap();
    std::fs::write(
        dir.path().join("qa-loop.yml"),
        format!("{config}notify:\n  webhook:\n    url: {url}\n"),
    )
    .unwrap();
    git(dir.path(), &["commit", "-qam", "notify"]);
    git(dir.path(), &["push", "-q", "origin", "changes"]);
    let gh: Shared = Arc::default();
    let api = start(gh.clone());
    let o = run(dir.path(), &api, &[]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let got = got.lock().unwrap();
    let events: Vec<&str> = got.iter().map(|(e, _)| e.as_str()).collect();
    assert_eq!(
        events,
        ["started", "rejected", "rejected", "rejected", "escalated"]
    );
    let pr = payload("pull_request.opened");
    let number = pr["pull_request"]["number"].as_u64().unwrap();
    let (_, escalated) = &got[4];
    assert_eq!(escalated["repository"], REPO);
    assert_eq!(escalated["pull_request"], number);
    assert_eq!(escalated["title"], pr["pull_request"]["title"]);
    let links = &escalated["links"];
    assert_eq!(
        links["pull_request"],
        format!("https://github.com/{REPO}/pull/{number}")
    );
    let check_id = gh.lock().unwrap().check_runs[0]["id"].clone();
    assert_eq!(
        links["check_run"],
        format!("https://github.com/{REPO}/runs/{check_id}")
    );
    let issue = gh.lock().unwrap().issues[0]["number"].clone();
    assert_eq!(
        links["escalation_issue"],
        format!("https://github.com/{REPO}/issues/{issue}")
    );
    assert!(
        escalated["summary"]
            .as_str()
            .unwrap()
            .starts_with("Escalated to a human"),
        "{escalated:#}"
    );
}
