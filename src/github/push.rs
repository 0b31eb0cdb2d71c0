//! Pushing fixes with the git CLI: one commit per fix iteration (`qa-loop: fix …`, trailer
//! `QA-Loop-Iteration: N`) holding only the fixer's changes to the project (never qa-loop's own
//! files), pushed as a normal fast-forward (never forced) up to the best iteration's state. If
//! the branch moved, the fix commits are rebased once onto it; if that fails, nothing is pushed
//! and the patch is returned for the comment.

use std::path::{Path, PathBuf};

use crate::model::Issue;
use crate::vcs::{Auth, git, git_auth};

/// Where and how to push.
#[derive(Debug, Clone)]
pub struct PushTarget {
    /// `origin`, or a URL / path.
    pub remote: String,
    /// The PR's head branch.
    pub branch: String,
    /// A token for pushing (so the push triggers CI); without one, the job's credentials.
    pub auth: Auth,
}

/// Where the workflows live: never committed unless `allow_workflow_edits`.
pub const WORKFLOWS: &str = ".github/workflows/";

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
    /// qa-loop's own paths (out dir, plan) and, unless allowed, `.github/workflows/`: never
    /// committed.
    own: Vec<String>,
    /// Why nothing may be pushed any more (a fix that would have committed a secret).
    refused: Option<String>,
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
    /// `own`: qa-loop's own paths; workflow files are left out too unless `allow_workflow_edits`.
    pub async fn start(
        root: &Path,
        mut own: Vec<String>,
        allow_workflow_edits: bool,
    ) -> Result<Pusher, String> {
        let base = git(root, &["rev-parse", "HEAD"]).await?.trim().to_string();
        if !allow_workflow_edits {
            own.push(WORKFLOWS.into());
        }
        Ok(Pusher {
            root: root.to_path_buf(),
            own,
            refused: None,
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
        if let Some(why) = &self.refused {
            return Err(why.clone());
        }
        crate::vcs::stage_all(root, &self.own, &[]).await?;
        if git(root, &["diff", "--cached", "--quiet"]).await.is_ok() {
            self.left_out_workflows().await;
            return Ok(None);
        }
        self.left_out_workflows().await;
        // A fix must never publish a secret (a fixer told to `env > notes.txt`).
        let staged = git(
            root,
            &[
                "diff",
                "--cached",
                "--no-color",
                "--no-ext-diff",
                "--no-textconv",
                "--text",
            ],
        )
        .await?;
        let added: String = staged
            .lines()
            .filter(|l| l.starts_with('+') && !l.starts_with("+++"))
            .map(|l| format!("{l}\n"))
            .collect();
        if crate::secrets::contains(&added) {
            let _ = git(root, &["reset", "-q"]).await;
            let why = format!(
                "the fixes of iteration {iteration} would have committed a file containing a secret \
                 (a token or key qa-loop holds); nothing is pushed from this run"
            );
            self.refused = Some(why.clone());
            return Err(why);
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
        let mut args = identity(root).await;
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
                "--no-textconv",
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

    /// Workflow changes in the working tree that the fix commits leave out (logged).
    async fn left_out_workflows(&self) {
        if !self.own.iter().any(|p| p == WORKFLOWS) {
            return;
        }
        let changed = git(
            &self.root,
            &[
                "status",
                "--porcelain",
                "--untracked-files=all",
                "--",
                WORKFLOWS,
            ],
        )
        .await
        .unwrap_or_default();
        if !changed.trim().is_empty() {
            tracing::warn!(
                "changes under {WORKFLOWS} are not committed (allow_workflow_edits is off):\n{}",
                changed.trim_end()
            );
        }
    }

    /// Pushes the fixes up to the state reviewed at `best` (all of them when `best` is the last).
    pub async fn push(&self, target: &PushTarget, best: u32) -> PushOutcome {
        if let Some(why) = &self.refused {
            return PushOutcome::NotPushed {
                why: why.clone(),
                // The patch would carry the secret: none is attached.
                patch: String::new(),
            };
        }
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
            git_auth(
                &self.root,
                &target.auth,
                &["fetch", "--no-tags", "-q", &target.remote, &target.branch],
            )
            .await?;
            let work = format!("qa-loop-rebase-{}", std::process::id());
            git(root, &["branch", "-f", &work, &upto]).await?;
            let mut args = identity(root).await;
            args.extend(
                [
                    "-c",
                    "commit.gpgsign=false",
                    "rebase",
                    "-q",
                    "--onto",
                    "FETCH_HEAD",
                    &self.base,
                    &work,
                ]
                .map(String::from),
            );
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let r = git(root, &args).await;
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

    /// Pushes `sha` to the PR branch and nothing else: an explicit `refs/heads/<branch>`
    /// refspec, no tags, no hooks, git isolated from global configuration (see
    /// [`crate::vcs::git_auth`]); afterwards the remote's refs are compared with those before,
    /// and any other ref that changed is reported.
    async fn push_commit(&self, target: &PushTarget, sha: &str) -> Result<(), String> {
        let refspec = format!("{sha}:refs/heads/{}", target.branch);
        let before = self.remote_refs(target).await;
        git_auth(
            &self.root,
            &target.auth,
            &[
                "push",
                "-q",
                "--no-verify",
                "--no-follow-tags",
                &target.remote,
                &refspec,
            ],
        )
        .await?;
        if let (Ok(before), Ok(after)) = (before, self.remote_refs(target).await) {
            let ours = format!("refs/heads/{}", target.branch);
            let changed: Vec<&String> = after
                .iter()
                .filter(|(r, sha)| *r != &ours && before.get(*r) != Some(*sha))
                .map(|(r, _)| r)
                .collect();
            if !changed.is_empty() {
                tracing::error!(
                    refs = ?changed,
                    "refs other than {ours} changed on the remote during qa-loop's push"
                );
                return Err(format!(
                    "refs other than {ours} changed on the remote: {changed:?}"
                ));
            }
        }
        Ok(())
    }

    /// The remote's refs (`ls-remote`), by name.
    async fn remote_refs(
        &self,
        target: &PushTarget,
    ) -> Result<std::collections::BTreeMap<String, String>, String> {
        let out = git_auth(&self.root, &target.auth, &["ls-remote", &target.remote]).await?;
        Ok(out
            .lines()
            .filter_map(|l| l.split_once('\t'))
            .map(|(sha, r)| (r.to_string(), sha.to_string()))
            .collect())
    }
}

/// `-c user.name=… -c user.email=…` unless the repository configures an identity (git runs
/// without global configuration, see [`crate::vcs`]).
async fn identity(root: &Path) -> Vec<String> {
    if git(root, &["config", "user.email"]).await.is_ok() {
        return Vec::new();
    }
    vec![
        "-c".into(),
        format!("user.name={NAME}"),
        "-c".into(),
        format!("user.email={EMAIL}"),
    ]
}

/// The repository's git configuration file and hooks, as one comparable text.
async fn git_setup(root: &Path) -> String {
    let mut out = String::new();
    let Some((_, _, common)) = crate::vcs::git_dirs(root) else {
        return out;
    };
    for what in ["config", "hooks"] {
        let path = common.join(what);
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
                && added.is_some_and(|lines| (start..start + len).all(|l| lines.contains(l)));
            if inside {
                let mut c = serde_json::json!({
                    "path": path,
                    "line": start + len - 1,
                    "side": "RIGHT",
                    // The fixer's lines cannot close the suggestion's fence.
                    "body": format!("qa-loop suggests:\n\n{}", crate::report::untrusted::fenced(&new.join("\n"), "suggestion")),
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
            ]
            .into(),
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
}
