//! The one sticky comment on the PR: read at start for the cross-run state (only from
//! qa-loop's own account), written at the end (edited in place; after an uncertain create the
//! comment is looked up first; duplicates from racing runs deleted, the oldest kept).

use serde_json::{Value, json};

use super::client::{GhError, GitHub};
use super::comment::{self, CrossRunState};
use super::publish::{Identity, note, patch_twice};

pub struct StickyComment {
    gh: GitHub,
    repo: String,
    pr: u64,
    identity: Identity,
    /// Write it (`comment: sticky`); its state is read either way.
    enabled: bool,
    id: Option<u64>,
    duplicates: Vec<u64>,
}

impl StickyComment {
    pub fn new(gh: GitHub, repo: &str, pr: u64, identity: Identity, enabled: bool) -> Self {
        StickyComment {
            gh,
            repo: repo.to_string(),
            pr,
            identity,
            enabled,
            id: None,
            duplicates: Vec::new(),
        }
    }

    fn comments_path(&self) -> String {
        format!("repos/{}/issues/{}/comments", self.repo, self.pr)
    }

    /// qa-loop's comments among `list`: the one to keep and the duplicates.
    async fn ours(&self, list: &[Value]) -> (Option<u64>, Vec<u64>) {
        // Who qa-loop is matters only once something looks like its comment.
        if !list.iter().any(comment::looks_like_ours) {
            return (None, Vec::new());
        }
        let login = self.identity.login().await;
        comment::pick(list, |u| comment::trusted_author(u, login))
    }

    /// The cross-run state of qa-loop's comment (empty when there is none).
    pub async fn read_state(&mut self) -> CrossRunState {
        let list = match self.gh.get_all(&self.comments_path(), 30).await {
            Ok(list) => list,
            Err(e) => {
                note("read the pull request's comments", &e);
                return CrossRunState::default();
            }
        };
        let (keep, duplicates) = self.ours(&list).await;
        self.id = keep;
        self.duplicates = duplicates;
        keep.and_then(|id| list.iter().find(|c| c["id"].as_u64() == Some(id)))
            .and_then(|c| c["body"].as_str())
            .and_then(comment::decode)
            .unwrap_or_default()
    }

    /// Writes the report and `state`, then deletes duplicates.
    pub async fn write(&mut self, report: &str, state: &CrossRunState, full_report: &str) {
        if !self.enabled {
            return;
        }
        let body = comment::render(report, state, full_report);
        self.put(&body).await;
        for id in std::mem::take(&mut self.duplicates) {
            let path = format!("repos/{}/issues/comments/{id}", self.repo);
            if let Err(e) = self.gh.delete(&path).await {
                note("delete a duplicate comment", &e);
            }
        }
    }

    async fn put(&mut self, body: &str) {
        let payload = json!({"body": body});
        if let Some(id) = self.id {
            let path = format!("repos/{}/issues/comments/{id}", self.repo);
            if let Err(e) = patch_twice(&self.gh, &path, &payload).await {
                note("update the report comment", &e);
            }
            return;
        }
        let path = self.comments_path();
        match self.gh.post(&path, &payload).await {
            Ok(v) => self.id = v["id"].as_u64(),
            Err(GhError::Uncertain { .. }) => {
                // Look up before creating again: the comment may exist (or a racing run's).
                match self.gh.get_all(&path, 30).await {
                    Ok(list) => {
                        let (keep, duplicates) = self.ours(&list).await;
                        self.duplicates.extend(duplicates);
                        let result = match keep {
                            Some(id) => {
                                let at = format!("repos/{}/issues/comments/{id}", self.repo);
                                self.gh.patch(&at, &payload).await
                            }
                            None => self.gh.post(&path, &payload).await,
                        };
                        if let Err(e) = result {
                            note("write the report comment", &e);
                        }
                    }
                    Err(e) => note("write the report comment", &e),
                }
            }
            Err(e) => note("write the report comment", &e),
        }
    }
}
