//! Pushing fixes with the git CLI: one commit per fix iteration (`qa-loop: fix …`, trailer
//! `QA-Loop-Iteration: N`) holding only the fixer's changes to the project (never qa-loop's own
//! files), pushed as a normal fast-forward (never forced) up to the best iteration's state. If
//! the branch moved, the fix commits are rebased once onto it; if that fails, nothing is pushed
//! and the patch is returned for the comment.

use std::path::{Path, PathBuf};

use crate::config::Secret;
use crate::model::Issue;
use crate::vcs::git;

/// Where and how to push.
#[derive(Debug, Clone)]
pub struct PushTarget {
    /// `origin`, or a URL / path.
    pub remote: String,
    /// The PR's head branch.
    pub branch: String,
    /// A token for pushing (so the push triggers CI); `None` uses the job's credentials.
    pub token: Option<Secret>,
    /// Host for the token's `http.<url>.extraheader` (`https://github.com/`).
    pub host: String,
}

#[derive(Debug, Clone, PartialEq)]
pub enum PushOutcome {
    /// Commits pushed, and the new branch head.
    Pushed {
        commits: usize,
        head: String,
    },
    Nothing,
    /// Not pushed (the branch moved and the rebase failed, or the push was refused): the patch
    /// of the fixes, to attach to the comment.
    NotPushed {
        why: String,
        patch: String,
    },
}

pub struct Pusher {
    root: PathBuf,
    /// qa-loop's own paths (out dir, plan): never committed.
    own: Vec<String>,
    /// HEAD before the first fix.
    base: String,
    /// `(iteration, commit)` of each fix commit.
    commits: Vec<(u32, String)>,
}

/// The commit identity, unless the repository configures one.
const NAME: &str = "qa-loop";
const EMAIL: &str = "qa-loop@users.noreply.github.com";

impl Pusher {
    pub async fn start(root: &Path, own: Vec<String>) -> Result<Pusher, String> {
        let base = git(root, &["rev-parse", "HEAD"]).await?.trim().to_string();
        Ok(Pusher {
            root: root.to_path_buf(),
            own,
            base,
            commits: Vec::new(),
        })
    }

    pub fn commits(&self) -> &[(u32, String)] {
        &self.commits
    }

    /// Commits the fixer's changes of `iteration`; `None` when it changed nothing.
    pub async fn commit_fix(
        &mut self,
        iteration: u32,
        issues: &[Issue],
    ) -> Result<Option<String>, String> {
        let root = &self.root;
        git(root, &["add", "-A", "--", "."]).await?;
        if !self.own.is_empty() {
            let mut args = vec!["rm", "-r", "-q", "--cached", "--ignore-unmatch", "--"];
            args.extend(self.own.iter().map(|p| p.trim_end_matches('/')));
            git(root, &args).await?;
        }
        if git(root, &["diff", "--cached", "--quiet"]).await.is_ok() {
            return Ok(None);
        }
        let ids: Vec<&str> = issues.iter().map(|i| i.id.as_str()).collect();
        let mut message = format!(
            "qa-loop: fix {} (iteration {iteration})\n\n",
            ids.join(", ")
        );
        for i in issues {
            message.push_str(&format!("- {}: {}\n", i.id, i.title));
        }
        message.push_str(&format!("\nQA-Loop-Iteration: {iteration}\n"));
        let has_identity = git(root, &["config", "user.email"]).await.is_ok();
        let mut args: Vec<String> = Vec::new();
        if !has_identity {
            args.extend([
                "-c".into(),
                format!("user.name={NAME}"),
                "-c".into(),
                format!("user.email={EMAIL}"),
            ]);
        }
        args.extend(
            [
                "-c",
                "commit.gpgsign=false",
                "commit",
                "-q",
                "--no-verify",
                "-m",
            ]
            .map(String::from),
        );
        args.push(message);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        git(root, &args).await?;
        let sha = git(root, &["rev-parse", "HEAD"]).await?.trim().to_string();
        self.commits.push((iteration, sha.clone()));
        Ok(Some(sha))
    }

    /// The commit holding the state reviewed at `iteration` (the fixes of earlier iterations).
    pub fn state_of(&self, iteration: u32) -> String {
        self.commits
            .iter()
            .rev()
            .find(|(i, _)| *i < iteration)
            .map_or_else(|| self.base.clone(), |(_, sha)| sha.clone())
    }

    /// Pushes the fixes up to the state reviewed at `best` (all of them when `best` is the last).
    pub async fn push(&self, target: &PushTarget, best: u32) -> PushOutcome {
        let upto = self.state_of(best);
        if upto == self.base {
            return PushOutcome::Nothing;
        }
        let count = self.commits.iter().filter(|(i, _)| *i < best).count();
        match self.push_commit(target, &upto).await {
            Ok(()) => {
                return PushOutcome::Pushed {
                    commits: count,
                    head: upto,
                };
            }
            Err(e) => tracing::warn!("push refused ({e}); fetching and rebasing once"),
        }
        // The branch moved: rebase the fix commits onto it, once.
        let root = &self.root;
        let patch = git(
            root,
            &[
                "format-patch",
                "--stdout",
                &format!("{}..{upto}", self.base),
            ],
        )
        .await
        .unwrap_or_default();
        let rebased = async {
            self.git_auth(target, &["fetch", "-q", &target.remote, &target.branch])
                .await?;
            let work = format!("qa-loop-rebase-{}", std::process::id());
            git(root, &["branch", "-f", &work, &upto]).await?;
            let r = git(
                root,
                &[
                    "-c",
                    "commit.gpgsign=false",
                    "rebase",
                    "-q",
                    "--onto",
                    "FETCH_HEAD",
                    &self.base,
                    &work,
                ],
            )
            .await;
            if r.is_err() {
                let _ = git(root, &["rebase", "--abort"]).await;
                let _ = git(root, &["checkout", "-q", "-"]).await;
                return Err("the fixes do not apply on the moved branch".to_string());
            }
            let head = git(root, &["rev-parse", "HEAD"]).await?.trim().to_string();
            self.push_commit(target, &head).await?;
            Ok::<String, String>(head)
        }
        .await;
        match rebased {
            Ok(head) => PushOutcome::Pushed {
                commits: count,
                head,
            },
            Err(why) => PushOutcome::NotPushed { why, patch },
        }
    }

    async fn push_commit(&self, target: &PushTarget, sha: &str) -> Result<(), String> {
        let refspec = format!("{sha}:refs/heads/{}", target.branch);
        self.git_auth(target, &["push", "-q", &target.remote, &refspec])
            .await
            .map(|_| ())
    }

    /// git with the push token as the only `Authorization` header for the host (an empty value
    /// first clears the header `actions/checkout` persisted).
    async fn git_auth(&self, target: &PushTarget, args: &[&str]) -> Result<String, String> {
        let Some(token) = &target.token else {
            return git(&self.root, args).await;
        };
        let key = format!("http.{}.extraheader", target.host);
        let header = format!(
            "{key}=AUTHORIZATION: basic {}",
            base64(&format!("x-access-token:{}", token.expose()))
        );
        let mut full = vec!["-c".to_string(), format!("{key}=")];
        full.extend(["-c".to_string(), header]);
        full.extend(args.iter().map(|s| s.to_string()));
        let full: Vec<&str> = full.iter().map(String::as_str).collect();
        git(&self.root, &full)
            .await
            .map_err(|e| e.replace(token.expose(), "***"))
    }
}

fn base64(s: &str) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let b = s.as_bytes();
    let mut out = String::new();
    for chunk in b.chunks(3) {
        let n = (chunk[0] as u32) << 16
            | (*chunk.get(1).unwrap_or(&0) as u32) << 8
            | *chunk.get(2).unwrap_or(&0) as u32;
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(T[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_the_standard() {
        assert_eq!(base64("x-access-token:abc"), "eC1hY2Nlc3MtdG9rZW46YWJj");
        assert_eq!(base64("a"), "YQ==");
        assert_eq!(base64("ab"), "YWI=");
        assert_eq!(base64(""), "");
    }
}
