//! The escalation issue: one open issue per PR (found by marker, written by qa-loop's own
//! account), labelled, with the PR labelled as needing a human; closed with a comment when a
//! later run approves.

use reqwest::Method;
use serde_json::{Value, json};

use super::client::{GhError, GitHub};
use super::publish::{Identity, idempotent, note, patch_twice};
use crate::text::percent_encode as encode;

/// The escalation settings (SPEC §3.3 inputs).
#[derive(Debug, Clone, PartialEq)]
pub struct Escalation {
    /// Label of escalation issues (`qa-escalation`).
    pub label: String,
    /// Label put on the PR while a human is needed (`qa-loop:needs-human`).
    pub needs_human: String,
    pub assignees: Vec<String>,
}

/// Marks the one open escalation issue of a PR.
pub fn escalation_marker(pr: u64) -> String {
    format!("<!-- qa-loop:escalation pr={pr} -->")
}

pub struct EscalationIssue {
    gh: GitHub,
    repo: String,
    pr: u64,
    identity: Identity,
    settings: Escalation,
}

impl EscalationIssue {
    pub fn new(
        gh: GitHub,
        repo: &str,
        pr: u64,
        identity: Identity,
        settings: &crate::config::Settings,
    ) -> Self {
        EscalationIssue {
            gh,
            repo: repo.to_string(),
            pr,
            identity,
            settings: Escalation {
                label: settings.publish.escalation_label.clone(),
                needs_human: settings.publish.needs_human_label.clone(),
                assignees: settings.publish.escalation_assignees.clone(),
            },
        }
    }

    /// Escalated: the labels exist, one open issue per PR carries `body` (looked up by marker
    /// before creating), the PR is labelled. Returns the issue number.
    pub async fn escalate(&self, body: &str) -> Option<u64> {
        let e = &self.settings;
        self.ensure_label(&e.label, "qa-loop needs a human").await;
        self.ensure_label(&e.needs_human, "qa-loop stopped: a human must look")
            .await;
        let number = match self.find().await {
            Ok(Some(n)) => {
                let path = format!("repos/{}/issues/{n}", self.repo);
                let r = self
                    .gh
                    .patch(&path, &json!({"body": self.body(body)}))
                    .await;
                if let Err(err) = r {
                    note("update the escalation issue", &err);
                }
                Some(n)
            }
            Ok(None) => self.open(body).await,
            Err(err) => {
                note("look up the escalation issue", &err);
                None
            }
        };
        // Adding a label twice is harmless: re-sent after an uncertain answer.
        let labels = json!({"labels": [e.needs_human]});
        let path = format!("repos/{}/issues/{}/labels", self.repo, self.pr);
        if let Err(err) = idempotent(&self.gh, Method::POST, &path, &labels).await {
            note("label the pull request", &err);
        }
        number
    }

    async fn open(&self, body: &str) -> Option<u64> {
        let payload = json!({
            "title": format!("QA Loop needs a human on #{}", self.pr),
            "body": self.body(body),
            "labels": [self.settings.label],
            "assignees": self.settings.assignees,
        });
        let path = format!("repos/{}/issues", self.repo);
        let created = match self.gh.post(&path, &payload).await {
            Err(GhError::Uncertain { .. }) => match self.find().await {
                Ok(Some(n)) => return Some(n),
                _ => self.gh.post(&path, &payload).await,
            },
            other => other,
        };
        match created {
            Ok(v) => v["number"].as_u64(),
            Err(err) => {
                note("open the escalation issue", &err);
                None
            }
        }
    }

    /// Approved after an escalation: the issue is closed with a comment and the PR label removed.
    pub async fn resolve(&self, iteration: u32) {
        let n = match self.find().await {
            Ok(Some(n)) => n,
            Ok(None) => return,
            Err(err) => return note("look up the escalation issue", &err),
        };
        let repo = &self.repo;
        let comment = format!(
            "Resolved: #{} was approved by QA Loop at iteration {iteration}.",
            self.pr
        );
        let r = self
            .gh
            .post(
                &format!("repos/{repo}/issues/{n}/comments"),
                &json!({"body": comment}),
            )
            .await;
        if let Err(err) = r {
            note("comment on the escalation issue", &err);
        }
        let closed = json!({"state": "closed", "state_reason": "completed"});
        if let Err(err) = patch_twice(&self.gh, &format!("repos/{repo}/issues/{n}"), &closed).await
        {
            note("close the escalation issue", &err);
        }
        let label = encode(&self.settings.needs_human);
        let path = format!("repos/{repo}/issues/{}/labels/{label}", self.pr);
        match self.gh.delete(&path).await {
            Ok(()) => {}
            Err(err) if err.status() == Some(404) => {}
            Err(err) => note("remove the needs-human label", &err),
        }
    }

    fn body(&self, body: &str) -> String {
        format!(
            "{}\nPull request: #{}\n\n{}",
            escalation_marker(self.pr),
            self.pr,
            crate::github::actions::cut(body, 60_000, "the run's QA_HUMAN_ESCALATION.md")
        )
    }

    /// The open escalation issue of this PR (by marker, written by qa-loop's account).
    async fn find(&self) -> Result<Option<u64>, GhError> {
        let path = format!(
            "repos/{}/issues?state=open&labels={}",
            self.repo,
            encode(&self.settings.label)
        );
        let marker = escalation_marker(self.pr);
        let list = self.gh.get_all(&path, 10).await?;
        let marked: Vec<&Value> = list
            .iter()
            .filter(|i| i["pull_request"].is_null())
            .filter(|i| i["body"].as_str().is_some_and(|b| b.starts_with(&marker)))
            .collect();
        let mut ours = Vec::new();
        for i in marked {
            if self.identity.is(&i["user"]).await {
                ours.extend(i["number"].as_u64());
            }
        }
        Ok(ours.into_iter().min())
    }

    async fn ensure_label(&self, name: &str, description: &str) {
        let repo = &self.repo;
        match self
            .gh
            .get(&format!("repos/{repo}/labels/{}", encode(name)))
            .await
        {
            Ok(_) => {}
            Err(e) if e.status() == Some(404) => {
                let body = json!({"name": name, "color": "d93f0b", "description": description});
                match self.gh.post(&format!("repos/{repo}/labels"), &body).await {
                    // 422: it exists after all (an uncertain create, or a racing run).
                    Ok(_) => {}
                    Err(e) if e.status() == Some(422) => {}
                    Err(GhError::Uncertain { .. }) => {}
                    Err(e) => note(&format!("create the label `{name}`"), &e),
                }
            }
            Err(e) => note(&format!("read the label `{name}`"), &e),
        }
    }
}
