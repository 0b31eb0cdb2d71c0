//! Who is trusted (SPEC §10), decided once before anything runs, from what the change under
//! review cannot influence: the event, the pull request as GitHub reports it, and the action's
//! inputs / CLI flags — never a file inside the checkout. Everything downstream asks the one
//! [`Trust`] value: whether the change's code may run, whether a configuration inside the
//! checkout may widen trust, whether fixes may be pushed.
//!
//! The second rule of this module: a verdict is only published for the commit that was tested
//! ([`check_head`]).

pub mod origin;

use std::path::Path;

use crate::github::event::{PullRequest, Trigger};

/// Whether the change under review is trusted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trust {
    /// A local run, a `pull_request` event, or a `/qa` command on a pull request from this
    /// repository: the change's tests run and fixes may be pushed.
    Trusted,
    /// The change is hostile and a privileged token is in reach: review only, nothing of the
    /// change runs, no configuration, prompts or trust-widening settings from the checkout,
    /// never a push.
    Untrusted { why: String },
}

impl Trust {
    pub fn is_trusted(&self) -> bool {
        matches!(self, Trust::Trusted)
    }

    /// Why the change is untrusted, if it is.
    pub fn why(&self) -> Option<&str> {
        match self {
            Trust::Trusted => None,
            Trust::Untrusted { why } => Some(why),
        }
    }
}

/// Decides trust from the event's trigger, the pull request as GitHub reports it (`None` when
/// it could not be read) and the `allow-pull-request-target-fixes` input. Pure.
///
/// Untrusted: `pull_request_target` (unless the input allows fixes and the PR is not from a
/// fork), `workflow_run` of a fork, and `/qa` comments or dispatches on a fork's PR (or on a PR
/// that could not be read: fail closed).
pub fn decide(trigger: &Trigger, pr: Option<&PullRequest>, allow_target_fixes: bool) -> Trust {
    let untrusted = |why: &str| Trust::Untrusted { why: why.into() };
    match trigger {
        // The base branch's workflow on the queue's commit: the code that merges (the sandbox
        // still confines its tests, as for every trusted run).
        Trigger::PullRequest { target: false, .. }
        | Trigger::MergeGroup { .. }
        | Trigger::Other { .. } => Trust::Trusted,
        Trigger::PullRequest {
            target: true, pr, ..
        } => {
            if pr.is_fork() {
                untrusted(
                    "`pull_request_target` on a fork's pull request: the change is a stranger's and the token can write",
                )
            } else if allow_target_fixes {
                Trust::Trusted
            } else {
                untrusted(
                    "`pull_request_target` runs with a write token: review only (the `allow-pull-request-target-fixes` input allows fixes for pull requests from this repository)",
                )
            }
        }
        Trigger::WorkflowRun {
            head_repo, repo, ..
        } => {
            if head_repo.is_empty() || head_repo != repo || pr.is_some_and(PullRequest::is_fork) {
                untrusted("`workflow_run` of a fork's pull request: the change is a stranger's")
            } else {
                Trust::Trusted
            }
        }
        Trigger::Comment { .. } | Trigger::Dispatch { .. } => match pr {
            Some(pr) if !pr.is_fork() => Trust::Trusted,
            Some(_) => untrusted(
                "a `/qa` command on a fork's pull request: the change is a stranger's and the run has the secrets",
            ),
            None => untrusted("the pull request could not be read, so it is treated as a fork's"),
        },
    }
}

/// Whether the checked-out `HEAD` is what a verdict on `head` may be published for: `head`
/// itself, or a merge commit with `head` as a parent (what `actions/checkout` gives on
/// `pull_request`). `Err` says what is checked out instead.
pub async fn check_head(root: &Path, head: &str) -> Result<(), String> {
    let line = crate::vcs::git(root, &["rev-list", "--parents", "-n", "1", "HEAD"])
        .await
        .map_err(|e| format!("cannot read the checked-out commit: {e}"))?;
    let mut shas = line.split_whitespace();
    let checked_out = shas.next().unwrap_or_default().to_string();
    if checked_out == head {
        return Ok(());
    }
    let parents: Vec<&str> = shas.collect();
    if parents.len() >= 2 && parents.contains(&head) {
        return Ok(());
    }
    Err(checked_out)
}

/// Checks the pull request's head out (detached) for a comment- or dispatch-triggered run,
/// whose workflow checked out the default branch: fetched as `refs/pull/<n>/head` (with the
/// GitHub token, never in argv), and refused unless it is the head GitHub reported.
pub async fn checkout_head(
    root: &Path,
    pr: &PullRequest,
    auth: &crate::vcs::Auth,
) -> Result<(), String> {
    let refspec = format!("refs/pull/{}/head", pr.number);
    let fetched = crate::vcs::git_auth(
        root,
        auth,
        &["fetch", "--no-tags", "-q", "origin", &refspec],
    )
    .await;
    if fetched.is_err() {
        crate::vcs::git_auth(
            root,
            auth,
            &["fetch", "--no-tags", "-q", "origin", &pr.head_sha],
        )
        .await
        .map_err(|e| format!("cannot fetch the pull request's head {}: {e}", pr.head_sha))?;
    }
    let got = crate::vcs::git(root, &["rev-parse", "FETCH_HEAD"]).await?;
    if got.trim() != pr.head_sha {
        return Err(format!(
            "`{refspec}` is {} but GitHub reports the head {}: the pull request moved; the run for its new head will report",
            got.trim(),
            pr.head_sha
        ));
    }
    crate::vcs::git(root, &["checkout", "-q", "--detach", &pr.head_sha])
        .await
        .map_err(|e| format!("cannot check out the pull request's head: {e}"))?;
    Ok(())
}

/// In an untrusted run, a configuration file inside the checkout is the change's own unless it
/// is byte for byte the base branch's (`base_sha`, from the event or the API): the change could
/// otherwise point the model key at its own server, or turn the checks off. `Ok` when the file
/// is outside the checkout or unchanged from the base; `Err` says why it is refused and how to
/// load it from the base branch instead.
pub async fn check_config(root: &Path, config: &Path, base_sha: &str) -> Result<(), String> {
    if !crate::config::load::inside(config, root) {
        return Ok(());
    }
    let rel = match (config.canonicalize(), root.canonicalize()) {
        (Ok(c), Ok(r)) => c.strip_prefix(&r).map(Path::to_path_buf).ok(),
        _ => None,
    }
    .unwrap_or_else(|| config.strip_prefix(root).unwrap_or(config).to_path_buf());
    let rel = rel.display().to_string();
    let hint = format!(
        "load it from the base branch instead, e.g. `git show origin/<base>:{rel} > \"$RUNNER_TEMP/qa-loop.yml\"` \
         and `--config \"$RUNNER_TEMP/qa-loop.yml\"` (docs/examples/fork-safe-review.yml)"
    );
    let refused = |why: String| {
        Err(format!(
            "{}: this configuration is part of the untrusted change under review ({why}); {hint}",
            config.display()
        ))
    };
    if base_sha.is_empty() {
        return refused("the base commit is unknown, so it cannot be compared".into());
    }
    let base =
        match crate::vcs::git(root, &["cat-file", "blob", &format!("{base_sha}:{rel}")]).await {
            Ok(text) => text,
            Err(_) => {
                return refused(format!(
                    "the base commit {} is not in the checkout or has no `{rel}`",
                    &base_sha[..base_sha.len().min(12)]
                ));
            }
        };
    let here = std::fs::read_to_string(config).unwrap_or_default();
    if here == base {
        Ok(())
    } else {
        refused("it differs from the base branch's".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pr(fork: bool) -> PullRequest {
        PullRequest {
            number: 2,
            head_sha: "h".into(),
            head_ref: "changes".into(),
            head_repo: if fork { "stranger/app" } else { "acme/app" }.into(),
            base_ref: "main".into(),
            base_sha: "b".into(),
            base_repo: "acme/app".into(),
            draft: false,
            body: String::new(),
            author: "someone".into(),
            title: "A change".into(),
        }
    }

    fn pull_request(target: bool, fork: bool) -> Trigger {
        Trigger::PullRequest {
            action: "opened".into(),
            pr: pr(fork),
            target,
        }
    }

    #[test]
    fn trust_follows_the_event_and_the_input_never_a_file() {
        let comment = Trigger::Comment {
            pr_number: 2,
            command: None,
            association: "OWNER".into(),
            words: String::new(),
            created_at: String::new(),
        };
        let run = |head_repo: &str| Trigger::WorkflowRun {
            action: "completed".into(),
            event: "pull_request".into(),
            head_sha: "h".into(),
            head_branch: "changes".into(),
            head_owner: "x".into(),
            head_repo: head_repo.into(),
            repo: "acme/app".into(),
        };
        let cases: [(&str, Trigger, Option<PullRequest>, bool, bool); 12] = [
            (
                "pull_request",
                pull_request(false, false),
                None,
                false,
                true,
            ),
            (
                "pull_request from a fork: no secrets there",
                pull_request(false, true),
                None,
                false,
                true,
            ),
            (
                "pull_request_target",
                pull_request(true, false),
                None,
                false,
                false,
            ),
            (
                "pull_request_target allowed by the input",
                pull_request(true, false),
                None,
                true,
                true,
            ),
            (
                "pull_request_target of a fork, even allowed",
                pull_request(true, true),
                None,
                true,
                false,
            ),
            (
                "/qa on a same-repository PR",
                comment.clone(),
                Some(pr(false)),
                false,
                true,
            ),
            (
                "/qa on a fork's PR",
                comment.clone(),
                Some(pr(true)),
                true,
                false,
            ),
            ("/qa on an unreadable PR", comment, None, false, false),
            (
                "dispatch on a fork's PR",
                Trigger::Dispatch { pr_number: Some(2) },
                Some(pr(true)),
                false,
                false,
            ),
            (
                "workflow_run of the same repository",
                run("acme/app"),
                None,
                false,
                true,
            ),
            (
                "workflow_run of a fork",
                run("stranger/app"),
                None,
                false,
                false,
            ),
            (
                "workflow_run of a deleted fork",
                run(""),
                None,
                false,
                false,
            ),
        ];
        for (comment, trigger, pr, allow, want) in cases {
            let t = decide(&trigger, pr.as_ref(), allow);
            assert_eq!(t.is_trusted(), want, "{comment}: {t:?}");
            assert_eq!(t.why().is_some(), !want, "{comment}");
        }
    }
}
