//! Review threads for findings — fork PRs, where fixes are offered as review suggestions. The
//! first comment of each thread qa-loop opens carries the fingerprint of the finding it fixes as a
//! hidden marker at the very start of its body (`<!-- qa-loop:finding <fp> -->`), so:
//!
//! - a finding is published once: a fingerprint that already has a thread by qa-loop — open, or
//!   resolved by someone else (a reviewer dismissed it) — is not posted again; only one that
//!   qa-loop itself resolved as fixed is posted again when the finding comes back;
//! - a thread whose finding the latest review of the PR head no longer finds (none of its
//!   issues, suggestions or pre-existing issues) is answered "Fixed in <sha>" (a reply marked
//!   `<!-- qa-loop:fixed <fp> -->`) and resolved with GraphQL's `resolveReviewThread`.
//!
//! Only comments by qa-loop's own account count ([`Identity`]); a marker is read only at the
//! start of a body, which qa-loop writes — the finding's title (made inert) and the suggested
//! code come after it, so no model text can forge one. The GraphQL documents here are validated
//! against GitHub's published schema by `scripts/validate-github-graphql.py`. Writes are never
//! re-sent blindly: after an uncertain reply or resolution, the next run's listing shows what
//! happened (a thread qa-loop already answered is left as it is).

use std::collections::BTreeSet;

use reqwest::Method;
use serde_json::{Value, json};

use super::client::{GhError, GitHub};
use super::publish::{Identity, Target, note};
use crate::engine::IterationRecord;
use crate::model::Issue;

/// Opens the marker of a finding's first comment.
pub const FINDING: &str = "<!-- qa-loop:finding ";
/// Opens the marker of qa-loop's "fixed" reply.
pub const FIXED: &str = "<!-- qa-loop:fixed ";
const CLOSE: &str = " -->";

/// GitHub's GraphQL endpoint, relative to the REST API URL as URL resolution reads it:
/// `https://api.github.com/graphql`, and on GitHub Enterprise Server `https://HOST/api/graphql`
/// beside the REST API's `https://HOST/api/v3`.
pub const GRAPHQL: &str = "../graphql";

/// A PR's review threads: each one's state and first comment (`fullDatabaseId` is the REST id;
/// `databaseId` is deprecated, it cannot hold 64-bit ids).
pub const THREADS_QUERY: &str =
    "query ReviewThreads($owner: String!, $name: String!, $number: Int!, $after: String) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      reviewThreads(first: 100, after: $after) {
        pageInfo { hasNextPage endCursor }
        nodes {
          id
          isResolved
          comments(first: 1) { nodes { fullDatabaseId } }
        }
      }
    }
  }
}";

/// Resolves one review thread.
pub const RESOLVE_MUTATION: &str = "mutation ResolveReviewThread($threadId: ID!) {
  resolveReviewThread(input: {threadId: $threadId}) {
    thread { id isResolved }
  }
}";

/// Pages of review threads read at most (100 each).
const MAX_THREAD_PAGES: usize = 20;

/// Whether `fp` may go into a marker: hex digits only (the engine's fingerprints are 16).
pub fn is_fingerprint(fp: &str) -> bool {
    (1..=64).contains(&fp.len()) && fp.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The fingerprint in marker `open` at the very start of `body`, alone on its line.
fn read_marker<'b>(body: &'b str, open: &str) -> Option<&'b str> {
    let (fp, after) = body.strip_prefix(open)?.split_once(CLOSE)?;
    (is_fingerprint(fp) && (after.is_empty() || after.starts_with('\n'))).then_some(fp)
}

/// The finding a first comment was posted for.
pub fn finding_of(body: &str) -> Option<&str> {
    read_marker(body, FINDING)
}

/// The finding a reply says was fixed.
pub fn fixed_of(body: &str) -> Option<&str> {
    read_marker(body, FIXED)
}

/// The reply to a thread whose finding is gone at `sha`.
pub fn fixed_reply(fp: &str, sha: &str) -> String {
    let short = &sha[..sha.len().min(7)];
    format!(
        "{FIXED}{fp}{CLOSE}\nFixed in {short}: qa-loop's review of that commit no longer finds this."
    )
}

/// The fingerprints of every finding (issues, suggestions, pre-existing) of the latest review
/// of commit `sha`; `None` when no review saw exactly that commit — then nothing can be said
/// to be gone.
pub fn found_at(history: &[IterationRecord], sha: &str) -> Option<BTreeSet<String>> {
    let record = history
        .iter()
        .rev()
        .find(|r| r.reviewed_head.as_deref() == Some(sha))?;
    Some(
        record
            .all_findings()
            .filter_map(|i| i.fingerprint.clone())
            .collect(),
    )
}

/// The issues the fixes up to `best` fixed: those of the iterations that have a fix commit
/// (`commits`: `(iteration, sha)`) before `best`, in order — the first is the review of the PR
/// head, in the line numbers the suggestions use.
pub fn fixed_findings<'h>(
    history: &'h [IterationRecord],
    commits: &[(u32, String)],
    best: u32,
) -> Vec<&'h Issue> {
    let fixed: BTreeSet<u32> = commits
        .iter()
        .map(|(i, _)| *i)
        .filter(|i| *i < best)
        .collect();
    history
        .iter()
        .filter(|r| fixed.contains(&r.iteration))
        .flat_map(|r| &r.issues)
        .collect()
}

fn same_file(finding: &Issue, path: &str) -> bool {
    finding
        .file
        .as_deref()
        .is_some_and(|f| f.trim_start_matches("./") == path)
}

/// The finding a suggestion on `path`, lines `first..=last`, fixes:
/// 1. a finding in that file whose line is within the suggestion's lines;
/// 2. else the nearest located finding in that file (fewest lines away, the earlier on a tie);
/// 3. else a finding in that file without a line;
/// 4. else the only finding, if there is just one (a failing test's fix lies in another file).
fn finding_for<'f>(findings: &[&'f Issue], path: &str, first: u32, last: u32) -> Option<&'f Issue> {
    let in_file: Vec<&Issue> = findings
        .iter()
        .copied()
        .filter(|f| same_file(f, path))
        .collect();
    let distance = |line: u32| {
        if line < first {
            first - line
        } else {
            line.saturating_sub(last)
        }
    };
    let only = match findings {
        [only] => Some(*only),
        _ => None,
    };
    in_file
        .iter()
        .filter_map(|f| Some((distance(f.line?), *f)))
        .min_by_key(|(d, _)| *d)
        .map(|(_, f)| f)
        .or_else(|| in_file.iter().find(|f| f.line.is_none()).copied())
        .or(only)
}

/// Ties each suggestion (a review comment of [`super::push::suggestions`]) to the finding it
/// fixes among `findings` (see [`finding_for`]) and marks its body with the finding's
/// fingerprint and title; a suggestion tied to none is left unmarked.
pub fn tie(comments: Vec<Value>, findings: &[&Issue]) -> Vec<Value> {
    comments
        .into_iter()
        .map(|mut c| {
            let path = c["path"].as_str().unwrap_or_default().to_string();
            let last = c["line"].as_u64().unwrap_or(0) as u32;
            let first = c["start_line"].as_u64().map_or(last, |l| l as u32);
            let finding = finding_for(findings, &path, first, last);
            let fp = finding.and_then(|f| f.fingerprint.as_deref().filter(|fp| is_fingerprint(fp)));
            if let (Some(f), Some(fp)) = (finding, fp) {
                let body = c["body"].as_str().unwrap_or_default();
                let code = body.strip_prefix("qa-loop suggests:").unwrap_or(body);
                c["body"] = json!(format!(
                    "{FINDING}{fp}{CLOSE}\nqa-loop suggests a fix for “{}”:{code}",
                    crate::report::untrusted::line(&f.title)
                ));
            }
            c
        })
        .collect()
}

/// A thread qa-loop opened for a finding.
#[derive(Debug, Clone, PartialEq)]
pub struct Thread {
    /// Its first comment's id (REST `id`, GraphQL `fullDatabaseId`).
    pub comment: u64,
    pub fingerprint: String,
    /// The GraphQL node id; `None` when the threads could not be read.
    pub node: Option<String>,
    pub resolved: bool,
    /// qa-loop replied that it was fixed.
    pub replied: bool,
}

/// qa-loop's review comments on a PR.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Listing {
    pub threads: Vec<Thread>,
    /// Its unmarked first comments, as `(path, line, body)`: posted once too.
    pub unmarked: BTreeSet<(String, u64, String)>,
}

/// The `fullDatabaseId` (a BigInt, sent as a string) of a thread's first comment.
fn first_comment(thread: &Value) -> Option<u64> {
    match &thread["comments"]["nodes"][0]["fullDatabaseId"] {
        Value::String(s) => s.parse().ok(),
        v => v.as_u64(),
    }
}

/// qa-loop's threads among a PR's review comments (REST objects) — only those `ours` says
/// qa-loop's account wrote — with their state from `nodes` (GraphQL review threads; `None`
/// when they could not be read: every thread then counts as open).
pub fn listing(
    comments: &[Value],
    nodes: Option<&[Value]>,
    ours: impl Fn(&Value) -> bool,
) -> Listing {
    let mine: Vec<&Value> = comments.iter().filter(|c| ours(&c["user"])).collect();
    let mut out = Listing::default();
    for c in mine
        .iter()
        .filter(|c| c["in_reply_to_id"].as_u64().is_none())
    {
        let (Some(id), Some(body)) = (c["id"].as_u64(), c["body"].as_str()) else {
            continue;
        };
        let Some(fp) = finding_of(body) else {
            let line = c["original_line"].as_u64().or(c["line"].as_u64());
            let path = c["path"].as_str().unwrap_or_default();
            out.unmarked
                .insert((path.to_string(), line.unwrap_or(0), body.to_string()));
            continue;
        };
        let node = nodes.and_then(|n| n.iter().find(|t| first_comment(t) == Some(id)));
        out.threads.push(Thread {
            comment: id,
            fingerprint: fp.to_string(),
            node: node.and_then(|t| t["id"].as_str()).map(str::to_string),
            resolved: node.is_some_and(|t| t["isResolved"] == true),
            replied: mine.iter().any(|r| {
                r["in_reply_to_id"].as_u64() == Some(id)
                    && r["body"].as_str().and_then(fixed_of) == Some(fp)
            }),
        });
    }
    out
}

impl Listing {
    /// Fingerprints already published: a thread that is open, or that someone other than
    /// qa-loop resolved (resolved without qa-loop's "fixed" reply).
    pub fn published(&self) -> BTreeSet<&str> {
        self.threads
            .iter()
            .filter(|t| !t.resolved || !t.replied)
            .map(|t| t.fingerprint.as_str())
            .collect()
    }

    /// The open threads whose finding is not among `found` and that qa-loop has not answered
    /// yet (one it answered but that is open again was reopened by a person: left alone).
    pub fn gone(&self, found: &BTreeSet<String>) -> Vec<&Thread> {
        self.threads
            .iter()
            .filter(|t| !t.resolved && !t.replied && !found.contains(&t.fingerprint))
            .collect()
    }

    /// `comments` less those already on the PR, and how many those were.
    pub fn fresh(&self, comments: Vec<Value>) -> (Vec<Value>, usize) {
        let published = self.published();
        let (fresh, old): (Vec<Value>, Vec<Value>) = comments.into_iter().partition(|c| {
            let body = c["body"].as_str().unwrap_or_default();
            match finding_of(body) {
                Some(fp) => !published.contains(fp),
                None => !self.unmarked.contains(&(
                    c["path"].as_str().unwrap_or_default().to_string(),
                    c["line"].as_u64().unwrap_or(0),
                    body.to_string(),
                )),
            }
        });
        (fresh, old.len())
    }
}

/// One GraphQL request through the REST client (its token, rate-limit waits, and writes never
/// re-sent blindly). A query is a read: re-sent on an uncertain answer as reads are. GraphQL
/// errors (answered with HTTP 200) are errors; the answer is its `data`.
pub async fn graphql(
    gh: &GitHub,
    document: &str,
    operation: &str,
    variables: Value,
) -> Result<Value, GhError> {
    let read = document.trim_start().starts_with("query");
    let body = json!({"query": document, "operationName": operation, "variables": variables});
    let mut attempt = 0;
    let answer = loop {
        match gh.send(Method::POST, GRAPHQL, Some(&body)).await {
            Err(GhError::Uncertain { message, .. }) if read => {
                match gh.retry.next(attempt, None, crate::retry::jitter()) {
                    crate::retry::Next::Retry(delay) => {
                        tracing::warn!("GitHub GraphQL {operation}: {message}; retrying");
                        tokio::time::sleep(delay).await;
                        attempt += 1;
                    }
                    crate::retry::Next::GiveUp => {
                        return Err(GhError::Transport(format!(
                            "GraphQL {operation}: {message}"
                        )));
                    }
                }
            }
            other => break other?.body,
        }
    };
    if let Some(errors) = answer["errors"].as_array().filter(|e| !e.is_empty()) {
        let messages: Vec<&str> = errors
            .iter()
            .map(|e| e["message"].as_str().unwrap_or("(no message)"))
            .collect();
        return Err(GhError::Transport(format!(
            "GraphQL {operation}: {}",
            crate::text::clip(&messages.join("; "), 500)
        )));
    }
    match answer.get("data") {
        Some(data) if !data.is_null() => Ok(data.clone()),
        _ => Err(GhError::Transport(format!(
            "GraphQL {operation}: the answer has no data"
        ))),
    }
}

/// qa-loop's review threads on one pull request.
pub struct Threads<'a> {
    gh: &'a GitHub,
    target: &'a Target,
    identity: &'a Identity,
}

impl<'a> Threads<'a> {
    pub fn new(gh: &'a GitHub, target: &'a Target, identity: &'a Identity) -> Self {
        Threads {
            gh,
            target,
            identity,
        }
    }

    /// qa-loop's review comments (REST, every page) with, when one carries a finding, the
    /// threads' state (GraphQL). `None` when the comments cannot be read.
    pub async fn list(&self) -> Option<Listing> {
        let path = format!(
            "repos/{}/pulls/{}/comments",
            self.target.repo, self.target.pr
        );
        let comments = match self.gh.get_all(&path, 30).await {
            Ok(list) => list,
            Err(e) => {
                note("read the pull request's review comments", &e);
                return None;
            }
        };
        if comments.is_empty() {
            return Some(Listing::default());
        }
        let login = self.identity.login().await;
        let ours = |u: &Value| super::comment::trusted_author(u, login);
        let first = listing(&comments, None, ours);
        if first.threads.is_empty() {
            return Some(first);
        }
        match self.nodes().await {
            Ok(nodes) => Some(listing(&comments, Some(&nodes), ours)),
            Err(e) => {
                note("read the pull request's review threads", &e);
                Some(first)
            }
        }
    }

    /// The PR's review threads (GraphQL), every page up to [`MAX_THREAD_PAGES`].
    async fn nodes(&self) -> Result<Vec<Value>, GhError> {
        let (owner, name) = self.target.repo.split_once('/').unwrap_or_default();
        let mut out = Vec::new();
        let mut after = Value::Null;
        for _ in 0..MAX_THREAD_PAGES {
            let vars =
                json!({"owner": owner, "name": name, "number": self.target.pr, "after": after});
            let data = graphql(self.gh, THREADS_QUERY, "ReviewThreads", vars).await?;
            let page = &data["repository"]["pullRequest"]["reviewThreads"];
            let Some(nodes) = page["nodes"].as_array() else {
                return Err(GhError::Transport(
                    "GraphQL ReviewThreads: no pull request or no threads in the answer".into(),
                ));
            };
            out.extend(nodes.iter().cloned());
            match &page["pageInfo"] {
                p if p["hasNextPage"] == true && p["endCursor"].is_string() => {
                    after = p["endCursor"].clone();
                }
                _ => break,
            }
        }
        Ok(out)
    }

    /// Answers "Fixed in <sha>" and resolves each thread whose finding is not among `found`
    /// (the findings of the review of `sha`, the PR head); how many were resolved.
    pub async fn resolve(&self, listing: &Listing, found: &BTreeSet<String>, sha: &str) -> usize {
        let mut resolved = 0;
        for t in listing.gone(found) {
            let Some(node) = &t.node else { continue };
            let path = format!(
                "repos/{}/pulls/{}/comments/{}/replies",
                self.target.repo, self.target.pr, t.comment
            );
            let reply = json!({"body": fixed_reply(&t.fingerprint, sha)});
            if let Err(e) = self.gh.post(&path, &reply).await {
                note("reply to a review thread whose finding is fixed", &e);
                continue;
            }
            match graphql(
                self.gh,
                RESOLVE_MUTATION,
                "ResolveReviewThread",
                json!({"threadId": node}),
            )
            .await
            {
                Ok(_) => resolved += 1,
                Err(e) => note("resolve a review thread whose finding is fixed", &e),
            }
        }
        if resolved > 0 {
            tracing::info!(
                resolved,
                fixed_in = sha,
                "review threads of fixed findings resolved"
            );
        }
        resolved
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{IssueType, Severity};

    fn issue(fp: &str, file: Option<&str>, line: Option<u32>, title: &str) -> Issue {
        Issue {
            id: "Q1".into(),
            title: title.into(),
            kind: IssueType::CodeQuality,
            severity: Severity::High,
            file: file.map(str::to_string),
            line,
            file_lines: None,
            description: String::new(),
            fix: String::new(),
            recurs: None,
            introduced: true,
            fingerprint: Some(fp.into()),
        }
    }

    fn suggestion(path: &str, first: u32, last: u32, code: &str) -> Value {
        let mut c = json!({"path": path, "line": last, "side": "RIGHT",
            "body": format!("qa-loop suggests:\n\n```suggestion\n{code}\n```\n")});
        if first != last {
            c["start_line"] = json!(first);
        }
        c
    }

    #[test]
    fn markers_are_read_only_where_qa_loop_writes_them() {
        let fp = "0123456789abcdef";
        let body = format!("{FINDING}{fp}{CLOSE}\nqa-loop suggests a fix");
        assert_eq!(finding_of(&body), Some(fp));
        assert_eq!(fixed_of(&fixed_reply(fp, &"c".repeat(40))), Some(fp));
        assert!(fixed_reply(fp, &"c".repeat(40)).contains("Fixed in ccccccc:"));
        for forged in [
            format!("qa-loop suggests:\n{FINDING}{fp}{CLOSE}\n"),
            format!(" {FINDING}{fp}{CLOSE}"),
            format!("{FINDING}{fp} --> and more"),
            format!("{FINDING}not-hex{CLOSE}"),
            format!("{FINDING}{CLOSE}"),
            format!("{FINDING}{fp}"),
        ] {
            assert_eq!(finding_of(&forged), None, "{forged}");
        }
        // A suggestion whose code and title carry a marker keeps only qa-loop's own.
        let evil = format!("{FINDING}ffffffffffffffff{CLOSE}");
        let tied = tie(
            vec![suggestion("a.py", 3, 3, &evil)],
            &[&issue(fp, Some("a.py"), Some(3), &format!("title {evil}"))],
        );
        let body = tied[0]["body"].as_str().unwrap();
        assert_eq!(finding_of(body), Some(fp), "{body}");
        assert_eq!(
            body.matches("<!-- qa-loop:").count(),
            2,
            "the code is kept: {body}"
        );
        assert!(body.contains("title &lt;!-- qa-loop:finding"), "{body}");
    }

    #[test]
    fn a_suggestion_is_tied_to_the_finding_it_fixes() {
        let within = issue("aaaa", Some("calc.py"), Some(10), "within");
        let near = issue("bbbb", Some("./calc.py"), Some(30), "near");
        let far = issue("cccc", Some("calc.py"), Some(90), "far");
        let unlocated = issue("dddd", Some("util.py"), None, "unlocated");
        let test = issue("eeee", Some("test_calc.py"), Some(2), "a failing test");
        let all = [&within, &near, &far, &unlocated, &test];
        let fp = |c: &Value| finding_of(c["body"].as_str().unwrap()).map(str::to_string);
        let tied = tie(
            vec![
                suggestion("calc.py", 9, 11, "x"),
                suggestion("calc.py", 40, 41, "y"),
                suggestion("util.py", 5, 5, "z"),
                suggestion("other.py", 1, 1, "w"),
            ],
            &all,
        );
        assert_eq!(
            fp(&tied[0]).as_deref(),
            Some("aaaa"),
            "the line within the hunk"
        );
        assert_eq!(fp(&tied[1]).as_deref(), Some("bbbb"), "the nearest line");
        assert_eq!(
            fp(&tied[2]).as_deref(),
            Some("dddd"),
            "the file's unlocated finding"
        );
        assert_eq!(
            fp(&tied[3]),
            None,
            "no finding in the file, several findings"
        );
        assert_eq!(
            tied[3]["body"],
            "qa-loop suggests:\n\n```suggestion\nw\n```\n"
        );
        assert!(
            tied[0]["body"]
                .as_str()
                .unwrap()
                .ends_with("qa-loop suggests a fix for “within”:\n\n```suggestion\nx\n```\n")
        );
        // A fix in the source for the only finding, a failing test.
        let tied = tie(vec![suggestion("calc.py", 2, 2, "v")], &[&test]);
        assert_eq!(fp(&tied[0]).as_deref(), Some("eeee"));
    }

    fn rest(id: u64, user: &str, body: &str, reply_to: Option<u64>) -> Value {
        let mut c = json!({"id": id, "user": {"login": user}, "body": body, "path": "calc.py",
            "line": 2, "original_line": 2});
        if let Some(r) = reply_to {
            c["in_reply_to_id"] = json!(r);
        }
        c
    }

    fn node(id: &str, resolved: bool, first: u64) -> Value {
        json!({"id": id, "isResolved": resolved,
            "comments": {"nodes": [{"fullDatabaseId": first.to_string()}]}})
    }

    #[test]
    fn only_qa_loop_s_threads_count_and_each_finding_is_published_once() {
        let bot = "github-actions[bot]";
        let m = |fp: &str| format!("{FINDING}{fp}{CLOSE}\nqa-loop suggests a fix for “t”:\n\nx");
        let comments = [
            rest(1, bot, &m("aaaa"), None),
            rest(2, "mallory", &m("bbbb"), None),
            rest(3, bot, &m("cccc"), None),
            rest(4, bot, &fixed_reply("cccc", "abcdef0"), Some(3)),
            rest(5, bot, &m("dddd"), None),
            rest(6, bot, "qa-loop suggests:\n\nuntied", None),
            rest(7, bot, &m("eeee"), None),
            rest(8, bot, &fixed_reply("eeee", "abcdef0"), Some(7)),
            // A forged "fixed" reply by someone else does not count.
            rest(9, "mallory", &fixed_reply("aaaa", "abcdef0"), Some(1)),
        ];
        let nodes = [
            node("T1", false, 1),
            node("T2", false, 2),
            node("T3", true, 3),
            node("T5", true, 5),
            node("T7", false, 7),
        ];
        let l = listing(&comments, Some(&nodes), |u| {
            super::super::comment::trusted_author(u, bot)
        });
        let fps: Vec<&str> = l.threads.iter().map(|t| t.fingerprint.as_str()).collect();
        assert_eq!(
            fps,
            ["aaaa", "cccc", "dddd", "eeee"],
            "mallory's thread is not ours"
        );
        assert_eq!(l.threads[0].node.as_deref(), Some("T1"));
        assert!(!l.threads[0].replied && l.threads[1].replied && l.threads[1].resolved);
        // Open (aaaa), dismissed by a person (dddd: resolved, no reply), answered and reopened
        // (eeee) are published; cccc was resolved by qa-loop as fixed: it may be posted again.
        assert_eq!(
            l.published().into_iter().collect::<Vec<_>>(),
            ["aaaa", "dddd", "eeee"]
        );
        let (fresh, old) = l.fresh(vec![
            json!({"path": "calc.py", "line": 2, "body": m("aaaa")}),
            json!({"path": "calc.py", "line": 2, "body": m("cccc")}),
            json!({"path": "calc.py", "line": 2, "body": m("ffff")}),
            json!({"path": "calc.py", "line": 2, "body": "qa-loop suggests:\n\nuntied"}),
            json!({"path": "calc.py", "line": 3, "body": "qa-loop suggests:\n\nuntied"}),
        ]);
        assert_eq!(old, 2);
        let bodies: Vec<&str> = fresh.iter().map(|c| c["body"].as_str().unwrap()).collect();
        assert_eq!(
            bodies,
            [
                m("cccc").as_str(),
                &m("ffff"),
                "qa-loop suggests:\n\nuntied"
            ]
        );
        // Gone: open, unanswered, not found any more — never a thread someone else opened.
        let found: BTreeSet<String> = ["dddd".to_string()].into();
        let gone: Vec<u64> = l.gone(&found).iter().map(|t| t.comment).collect();
        assert_eq!(gone, [1]);
        let found: BTreeSet<String> = ["aaaa".to_string()].into();
        assert!(l.gone(&found).is_empty());
        // Without the threads' state every thread counts as open.
        let blind = listing(&comments, None, |u| {
            super::super::comment::trusted_author(u, bot)
        });
        assert!(
            blind
                .threads
                .iter()
                .all(|t| !t.resolved && t.node.is_none())
        );
        assert_eq!(blind.published().len(), 4);
    }

    #[test]
    fn the_findings_at_a_head_and_the_fixed_ones() {
        use crate::engine::Status;
        let record = |n: u32, head: Option<&str>, fps: &[&str]| IterationRecord {
            iteration: n,
            status: Status::Rejected,
            reviewer_approved: false,
            score: 40,
            summary: String::new(),
            criteria: Vec::new(),
            issues: fps.iter().map(|f| issue(f, None, None, "t")).collect(),
            suggestions: vec![issue(&format!("5{n}"), None, None, "nit")],
            pre_existing: Vec::new(),
            verification: Default::default(),
            timestamp: String::new(),
            manual_test_plan: None,
            guidance: None,
            reviewed_head: head.map(str::to_string),
        };
        let history = [
            record(1, Some("h1"), &["a1"]),
            record(2, Some("local"), &[]),
            record(3, Some("h1"), &["a1", "b1"]),
            record(4, Some("local2"), &["c1"]),
        ];
        let at = found_at(&history, "h1").unwrap();
        assert_eq!(at.into_iter().collect::<Vec<_>>(), ["53", "a1", "b1"]);
        assert_eq!(found_at(&history, "h2"), None);
        let commits = [(3, "x".to_string()), (4, "y".to_string())];
        let fixed: Vec<&str> = fixed_findings(&history, &commits, 4)
            .iter()
            .map(|i| i.fingerprint.as_deref().unwrap())
            .collect();
        assert_eq!(fixed, ["a1", "b1"]);
    }

    /// The GraphQL endpoint beside the REST API's, on github.com and on GitHub Enterprise Server;
    /// GraphQL errors answered with HTTP 200 are errors.
    #[test]
    fn graphql_goes_to_the_endpoint_beside_the_rest_api() {
        use std::sync::{Arc, Mutex};
        let seen = Arc::new(Mutex::new(Vec::<String>::new()));
        let seen2 = seen.clone();
        let app = axum::Router::new().fallback(move |req: axum::extract::Request| {
            let seen = seen2.clone();
            async move {
                seen.lock().unwrap().push(req.uri().path().to_string());
                let answer = if req.uri().path() == "/api/graphql" {
                    json!({"data": null, "errors": [{"type": "NOT_FOUND", "message": "Could not resolve to a PullRequest"}]})
                } else {
                    json!({"data": {"repository": null}})
                };
                axum::Json(answer)
            }
        });
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            crate::test_support::rt().block_on(async move {
                let l = tokio::net::TcpListener::from_std(listener).unwrap();
                axum::serve(l, app).await.unwrap();
            })
        });
        let rt = crate::test_support::rt();
        let client = |url: &str| {
            GitHub::new(
                url,
                crate::secrets::Secret::new("t"),
                crate::retry::RetryPolicy {
                    retries: 0,
                    backoff: std::time::Duration::from_millis(1),
                    max_wait: std::time::Duration::from_secs(1),
                    timeout: std::time::Duration::from_secs(5),
                },
            )
            .unwrap()
        };
        let dotcom = client(&format!("http://{addr}"));
        let data = rt
            .block_on(graphql(&dotcom, THREADS_QUERY, "ReviewThreads", json!({})))
            .unwrap();
        assert_eq!(data, json!({"repository": null}));
        let ghes = client(&format!("http://{addr}/api/v3"));
        let err = rt
            .block_on(graphql(
                &ghes,
                RESOLVE_MUTATION,
                "ResolveReviewThread",
                json!({}),
            ))
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("Could not resolve to a PullRequest"),
            "{err}"
        );
        assert_eq!(*seen.lock().unwrap(), ["/graphql", "/api/graphql"]);
    }
}
