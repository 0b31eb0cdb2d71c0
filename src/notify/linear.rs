//! Linear: a comment on the change's issue for each event, and optional moves to workflow
//! states (GraphQL at `https://api.linear.app/graphql`, `Authorization: <key>` without
//! `Bearer`). The documents are in `linear.graphql`, validated in CI against Linear's schema.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::{Hints, Notice, deliver, text};
use crate::config::file::{LinearNotify, NotifyEvent, is_linear_identifier as is_identifier};

/// The GraphQL documents qa-loop sends (one operation is chosen by name).
pub const DOCUMENTS: &str = include_str!("linear.graphql");
pub const DEFAULT_URL: &str = "https://api.linear.app/graphql";

/// Prefixes that look like issue identifiers but name standards.
const NOT_TEAMS: [&str; 12] = [
    "UTF", "SHA", "ISO", "RFC", "CVE", "CWE", "HTTP", "TLS", "X", "GPT", "PEP", "ES",
];

/// The first identifier in `text`; `any_case` for branch names (`eng-123-login`).
pub fn find_identifier(text: &str, any_case: bool) -> Option<String> {
    let re = if any_case {
        regex::Regex::new(
            r"(?i)(?:^|[^A-Za-z0-9])([A-Za-z][A-Za-z0-9]{0,9}-[0-9]{1,7})(?:$|[^0-9])",
        )
    } else {
        regex::Regex::new(r"(?:^|[^A-Za-z0-9])([A-Z][A-Z0-9]{0,9}-[0-9]{1,7})(?:$|[^0-9])")
    }
    .expect("the identifier pattern");
    re.captures_iter(text)
        .map(|c| c[1].to_ascii_uppercase())
        .find(|id| {
            let team = id.split('-').next().unwrap_or_default();
            !NOT_TEAMS.contains(&team)
        })
}

/// The issue a run reports to: the config's, the plan's, then the branch, title and body.
pub fn issue_of(configured: Option<&str>, hints: &Hints) -> Option<String> {
    configured
        .map(str::to_string)
        .or_else(|| hints.plan_issue.clone().filter(|i| is_identifier(i)))
        .or_else(|| {
            hints
                .branch
                .as_deref()
                .and_then(|b| find_identifier(b, true))
        })
        .or_else(|| {
            hints
                .title
                .as_deref()
                .and_then(|t| find_identifier(t, false))
        })
        .or_else(|| {
            hints
                .body
                .as_deref()
                .and_then(|b| find_identifier(b, false))
        })
}

/// The issue as Linear knows it.
#[derive(Debug, Clone)]
struct Found {
    id: String,
    states: Vec<(String, String)>,
}

pub struct Linear {
    url: String,
    key: String,
    identifier: Option<String>,
    states: BTreeMap<NotifyEvent, String>,
    /// Looked up once, at the first event.
    found: Option<Result<Found, String>>,
}

impl Linear {
    pub fn new(cfg: &LinearNotify, key: String, hints: &Hints) -> Linear {
        Linear {
            url: cfg.url.clone().unwrap_or_else(|| DEFAULT_URL.into()),
            key,
            identifier: issue_of(cfg.issue.as_deref(), hints),
            states: cfg.states.clone(),
            found: None,
        }
    }

    /// One GraphQL operation; `data` of the answer, or the errors.
    async fn call(
        &self,
        client: &reqwest::Client,
        operation: &str,
        variables: Value,
    ) -> Result<Value, String> {
        let body = json!({"query": DOCUMENTS, "operationName": operation, "variables": variables});
        let answer = deliver(
            || {
                client
                    .post(&self.url)
                    .header(reqwest::header::AUTHORIZATION, &self.key)
                    .json(&body)
            },
            false,
        )
        .await?;
        let v: Value = answer
            .json()
            .await
            .map_err(|e| format!("{operation}: not JSON: {e}"))?;
        if let Some(errors) = v
            .get("errors")
            .and_then(Value::as_array)
            .filter(|e| !e.is_empty())
        {
            let msgs: Vec<&str> = errors
                .iter()
                .filter_map(|e| e.get("message").and_then(Value::as_str))
                .collect();
            return Err(format!("{operation}: {}", msgs.join("; ")));
        }
        Ok(v.get("data").cloned().unwrap_or(Value::Null))
    }

    async fn find(&mut self, client: &reqwest::Client) -> Result<Found, String> {
        if let Some(found) = &self.found {
            return found.clone();
        }
        let result = match &self.identifier {
            None => Err("no Linear issue: set `notify.linear.issue`, or name the issue (like `ENG-123`) in the branch, the PR title or body, or the plan's `linear_issue`".to_string()),
            Some(id) => match self.call(client, "QaLoopIssue", json!({"id": id})).await {
                Err(e) => Err(e),
                Ok(data) => match data.get("issue").filter(|i| !i.is_null()) {
                    None => Err(format!("Linear has no issue `{id}`")),
                    Some(issue) => Ok(Found {
                        id: issue["id"].as_str().unwrap_or_default().to_string(),
                        states: issue["team"]["states"]["nodes"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .filter_map(|s| {
                                Some((s["id"].as_str()?.to_string(), s["name"].as_str()?.to_string()))
                            })
                            .collect(),
                    }),
                },
            },
        };
        self.found = Some(result.clone());
        result
    }

    pub async fn send(&mut self, client: &reqwest::Client, n: &Notice) -> Result<(), String> {
        let found = self.find(client).await?;
        let data = self
            .call(
                client,
                "QaLoopComment",
                json!({"input": {"issueId": found.id, "body": markdown(n)}}),
            )
            .await?;
        if data["commentCreate"]["success"] != Value::Bool(true) {
            return Err("commentCreate did not succeed".into());
        }
        let Some(want) = n.event.and_then(|e| self.states.get(&e)) else {
            return Ok(());
        };
        let Some((state_id, _)) = found
            .states
            .iter()
            .find(|(_, name)| name.eq_ignore_ascii_case(want))
        else {
            let names: Vec<&str> = found.states.iter().map(|(_, n)| n.as_str()).collect();
            return Err(format!(
                "the issue's team has no workflow state `{want}` (it has: {})",
                names.join(", ")
            ));
        };
        let data = self
            .call(
                client,
                "QaLoopMoveIssue",
                json!({"id": found.id, "input": {"stateId": state_id}}),
            )
            .await?;
        if data["issueUpdate"]["success"] != Value::Bool(true) {
            return Err(format!("issueUpdate to `{want}` did not succeed"));
        }
        Ok(())
    }
}

/// The comment: Linear renders markdown, so text from models and the change goes through
/// the sanitiser of every published markdown text (no HTML, mentions or references).
pub fn markdown(n: &Notice) -> String {
    let inert = |s: &str| crate::report::untrusted::line(s).replace("\\|", "|");
    let mut out = format!(
        "**{}** — {}\n\n{}\n",
        text::what(n),
        inert(&text::subject(n)),
        text::facts(n)
    );
    if !n.summary.is_empty() {
        out.push_str(&format!("\n> {}\n", inert(&n.summary)));
    }
    if !n.top_issues.is_empty() {
        out.push('\n');
        for i in &n.top_issues {
            out.push_str(&format!("- {}\n", inert(i)));
        }
    }
    let links: Vec<String> = text::links(n)
        .into_iter()
        .map(|(k, v)| format!("[{k}]({v})"))
        .collect();
    if !links.is_empty() {
        out.push_str(&format!("\n{}\n", links.join(" · ")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_are_found_in_branches_titles_and_bodies_but_not_standards() {
        assert_eq!(
            find_identifier("alice/eng-123-fix-login", true).as_deref(),
            Some("ENG-123")
        );
        assert_eq!(
            find_identifier("feature/ENG-42", true).as_deref(),
            Some("ENG-42")
        );
        assert_eq!(
            find_identifier("Fix login (ENG-7)", false).as_deref(),
            Some("ENG-7")
        );
        assert_eq!(
            find_identifier("Use UTF-8 and SHA-256 for APP-9", false).as_deref(),
            Some("APP-9")
        );
        assert_eq!(find_identifier("fix the eng-12 thing", false), None);
        assert_eq!(find_identifier("v2-release", true).as_deref(), None);
        assert!(is_identifier("ENG-123") && !is_identifier("eng-123") && !is_identifier("ENG-"));
        let hints = Hints {
            branch: Some("main".into()),
            title: Some("Add slugify".into()),
            body: Some("Closes QA-77".into()),
            plan_issue: None,
        };
        assert_eq!(issue_of(None, &hints).as_deref(), Some("QA-77"));
        assert_eq!(issue_of(Some("ENG-1"), &hints).as_deref(), Some("ENG-1"));
    }
}
