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
    /// The repository's git configuration and hooks at the start: if a test command, the
    /// fixer's `run_command` or an external fixer changes them (a remote URL, an `insteadOf`, a
    /// hook that would see the push token), nothing is pushed.
    guard: String,
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
            guard: git_setup(root).await,
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
        crate::vcs::stage_all(root, &self.own, &[]).await?;
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

    /// The fixes up to the state reviewed at `best`, as a patch (`format-patch`) and a zero-context
    /// diff (for suggestions); `None` when there are none.
    pub async fn fixes_until(&self, best: u32) -> Option<(String, String)> {
        let upto = self.state_of(best);
        if upto == self.base {
            return None;
        }
        let range = format!("{}..{upto}", self.base);
        let patch = git(&self.root, &["format-patch", "--stdout", &range])
            .await
            .ok()?;
        let diff = git(
            &self.root,
            &[
                "diff",
                "--no-color",
                "--no-ext-diff",
                "-U0",
                &self.base,
                &upto,
                "--",
            ],
        )
        .await
        .ok()?;
        Some((patch, diff))
    }

    /// Pushes the fixes up to the state reviewed at `best` (all of them when `best` is the last).
    pub async fn push(&self, target: &PushTarget, best: u32) -> PushOutcome {
        let upto = self.state_of(best);
        if upto == self.base {
            return PushOutcome::Nothing;
        }
        let count = self.commits.iter().filter(|(i, _)| *i < best).count();
        if git_setup(&self.root).await != self.guard {
            let patch = git(
                &self.root,
                &[
                    "format-patch",
                    "--stdout",
                    &format!("{}..{upto}", self.base),
                ],
            )
            .await
            .unwrap_or_default();
            return PushOutcome::NotPushed {
                why: "the repository's git configuration or hooks changed during the run \
                      (by a test or fixer command); nothing is pushed from a tampered checkout"
                    .into(),
                patch,
            };
        }
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
        self.git_auth(
            target,
            &["push", "-q", "--no-verify", &target.remote, &refspec],
        )
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
        // No hook runs while the token is in git's environment (`-c` values are passed on).
        let mut full = vec!["-c".to_string(), "core.hooksPath=/dev/null".to_string()];
        full.extend(["-c".to_string(), format!("{key}=")]);
        full.extend(["-c".to_string(), header]);
        full.extend(args.iter().map(|s| s.to_string()));
        let full: Vec<&str> = full.iter().map(String::as_str).collect();
        git(&self.root, &full)
            .await
            .map_err(|e| e.replace(token.expose(), "***"))
    }
}

/// The repository's git configuration file and hooks, as one comparable text.
async fn git_setup(root: &Path) -> String {
    let mut out = String::new();
    for what in ["config", "hooks"] {
        let Ok(path) = git(root, &["rev-parse", "--git-path", what]).await else {
            continue;
        };
        let path = root.join(path.trim());
        if let Ok(text) = std::fs::read(&path) {
            out.push_str(&format!("{what}\n{}\n", String::from_utf8_lossy(&text)));
        } else if let Ok(entries) = std::fs::read_dir(&path) {
            let mut hooks: Vec<_> = entries.flatten().map(|e| e.path()).collect();
            hooks.sort();
            for h in hooks {
                let body = std::fs::read(&h).unwrap_or_default();
                out.push_str(&format!(
                    "hook {}\n{}\n",
                    h.display(),
                    String::from_utf8_lossy(&body)
                ));
            }
        }
    }
    out
}

/// Review comments with suggestion blocks for the small hunks of a zero-context diff whose
/// replaced lines are all lines the PR added (GitHub only takes comments on the PR's diff):
/// `{path, start_line?, line, side: RIGHT, body}`. Hunks that are not (large ones, pure
/// additions, lines the PR did not touch) stay in the patch only.
pub fn suggestions(diff: &str, pr_added: &crate::vcs::AddedLines) -> Vec<serde_json::Value> {
    const MAX_LINES: u32 = 12;
    let mut out = Vec::new();
    let mut path = String::new();
    let mut hunk: Option<(u32, u32, Vec<String>)> = None;
    let flush = |hunk: &mut Option<(u32, u32, Vec<String>)>,
                 path: &str,
                 out: &mut Vec<serde_json::Value>| {
        if let Some((start, len, new)) = hunk.take() {
            let added = pr_added.get(path);
            let inside = len > 0
                && len <= MAX_LINES
                && new.len() as u32 <= MAX_LINES * 2
                && added.is_some_and(|lines| {
                    (start..start + len).all(|l| lines.iter().any(|(a, _)| *a == l))
                });
            if inside {
                let mut c = serde_json::json!({
                    "path": path,
                    "line": start + len - 1,
                    "side": "RIGHT",
                    "body": format!("qa-loop suggests:\n\n```suggestion\n{}{}```\n", new.join("\n"), if new.is_empty() { "" } else { "\n" }),
                });
                if len > 1 {
                    c["start_line"] = serde_json::json!(start);
                    c["start_side"] = serde_json::json!("RIGHT");
                }
                out.push(c);
            }
        }
    };
    for line in diff.lines() {
        if let Some(p) = line.strip_prefix("+++ b/") {
            flush(&mut hunk, &path, &mut out);
            path = p.to_string();
        } else if line.starts_with("+++ ")
            || line.starts_with("--- ")
            || line.starts_with("diff --git")
        {
            flush(&mut hunk, &path, &mut out);
        } else if let Some(h) = line.strip_prefix("@@ -") {
            flush(&mut hunk, &path, &mut out);
            let old = h.split_whitespace().next().unwrap_or_default();
            let (start, len) = match old.split_once(',') {
                Some((s, l)) => (s.parse().unwrap_or(0), l.parse().unwrap_or(0)),
                None => (old.parse().unwrap_or(0), 1),
            };
            hunk = Some((start, len, Vec::new()));
        } else if let (Some(text), Some((_, _, new))) = (line.strip_prefix('+'), hunk.as_mut()) {
            new.push(text.to_string());
        }
    }
    flush(&mut hunk, &path, &mut out);
    out
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
    fn small_hunks_on_lines_the_pr_added_become_suggestions() {
        let diff = "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -2 +2 @@ def add(a, b):\n-    return a - b\n+    return a + b\n@@ -9,2 +9,0 @@\n-x\n-y\n@@ -20,0 +21 @@\n+new\n";
        let mut added = crate::vcs::AddedLines::new();
        added.insert(
            "calc.py".into(),
            vec![
                (2, "    return a - b".into()),
                (9, "x".into()),
                (10, "y".into()),
            ],
        );
        let s = suggestions(diff, &added);
        assert_eq!(s.len(), 2, "{s:?}");
        assert_eq!(s[0]["line"], 2);
        assert!(s[0].get("start_line").is_none());
        assert_eq!(
            s[0]["body"],
            "qa-loop suggests:\n\n```suggestion\n    return a + b\n```\n"
        );
        assert_eq!(
            (s[1]["start_line"].as_u64(), s[1]["line"].as_u64()),
            (Some(9), Some(10))
        );
        assert_eq!(s[1]["body"], "qa-loop suggests:\n\n```suggestion\n```\n");
        // Lines the PR did not add are not commentable: patch only.
        assert!(suggestions(diff, &crate::vcs::AddedLines::new()).is_empty());
    }

    #[test]
    fn base64_matches_the_standard() {
        assert_eq!(base64("x-access-token:abc"), "eC1hY2Nlc3MtdG9rZW46YWJj");
        assert_eq!(base64("a"), "YQ==");
        assert_eq!(base64("ab"), "YWI=");
        assert_eq!(base64(""), "");
    }
}
