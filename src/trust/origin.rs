//! Where a run in GitHub Actions comes from, settled before any configuration is read (SPEC
//! §10): the event, the pull request as GitHub reports it, whether the commenter of a `/qa`
//! command may write, the run's [`Trust`], and that the checked-out commit is the one the
//! verdict will be published for. Nothing here reads a file of the checkout.

use std::path::Path;

use super::{self as trust, Trust};
use crate::config::FlagLayer;
use crate::github::actions::ActionsEnv;
use crate::github::client::GitHub;
use crate::github::event::{self, Event, PullRequest, QaCommand, Trigger};
use crate::secrets::Secret;

/// A run's origin in GitHub Actions.
#[derive(Debug, Clone)]
pub struct Origin {
    pub env: ActionsEnv,
    pub event: Event,
    /// The pull request (from the payload, or read from the API for comments, dispatches and
    /// `workflow_run`); `None` when it could not be read.
    pub pr: Option<PullRequest>,
    pub trust: Trust,
}

/// Whether a run goes ahead.
pub enum Resolved {
    Run(Box<Origin>),
    /// Nothing to do for this event (exit 0 with a notice).
    Skip(String),
    /// The runner named no event (`GITHUB_EVENT_PATH` unset): a run like a local one.
    NoEvent,
}

/// Reads the event, skips what needs no run, reads the pull request, checks the commenter's
/// permission, decides trust and makes sure the checked-out commit is the PR head (checking
/// it out itself for comment and dispatch triggers). `Err` is bad input (exit 2).
pub async fn resolve(env: &ActionsEnv, root: &Path, flags: &FlagLayer) -> Result<Resolved, String> {
    let Some(path) = &env.event_path else {
        return Ok(Resolved::NoEvent);
    };
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("{}: cannot read the event payload: {e}", path.display()))?;
    let payload: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| format!("{}:{}:{}: {e}", path.display(), e.line(), e.column()))?;
    let ev =
        event::parse(&env.event_name, &payload).map_err(|e| format!("{}: {e}", path.display()))?;
    if let event::Decision::Skip(why) = event::decide_trigger(&ev) {
        return Ok(Resolved::Skip(why));
    }
    let token = env.github_token.clone();
    let gh = match (&token, flags.no_github) {
        (Some(t), false) => GitHub::new(&env.api_url, t.clone(), Default::default()).ok(),
        _ => None,
    };
    let pr = match (&ev.trigger, &gh) {
        (Trigger::PullRequest { pr, .. }, _) => Some(pr.clone()),
        (Trigger::Comment { pr_number, .. }, Some(gh)) => {
            read_pr(gh, &env.repository, *pr_number).await
        }
        (Trigger::Dispatch { pr_number: Some(n) }, Some(gh)) => {
            read_pr(gh, &env.repository, *n).await
        }
        (
            Trigger::WorkflowRun {
                head_sha,
                head_branch,
                head_owner,
                ..
            },
            Some(gh),
        ) => match find_pr(gh, &env.repository, head_owner, head_branch, head_sha).await {
            Some(pr) => Some(pr),
            None => {
                return Ok(Resolved::Skip(
                    "no open pull request has the finished workflow's head commit (pushed again, \
                     closed, or the token cannot read it)"
                        .into(),
                ));
            }
        },
        _ => None,
    };
    // A `/qa` command runs with the repository's secrets: only for people who may write.
    if let (Trigger::Comment { command, .. }, Some(gh)) = (&ev.trigger, &gh)
        && *command != Some(QaCommand::Approve)
        && !can_write(gh, &env.repository, &ev.sender.login).await
    {
        return Ok(Resolved::Skip(format!(
            "`/qa` by @{} who has no write access to the repository",
            ev.sender.login
        )));
    }
    let trust = trust::decide(
        &ev.trigger,
        pr.as_ref(),
        flags.allow_pull_request_target_fixes,
    );
    if let Some(why) = trust.why() {
        tracing::info!("untrusted change: {why}");
    }
    if let Some(pr) = &pr {
        ensure_head(root, &ev.trigger, pr, token.as_ref(), &env.server_url).await?;
    }
    // The queue's commit is what is verified and reported on: nothing else will do.
    if let Trigger::MergeGroup { group, .. } = &ev.trigger {
        let head = crate::vcs::commit_id(root, "HEAD")
            .await
            .unwrap_or_default();
        if head != group.head_sha {
            return Err(format!(
                "the checked-out commit {} is not the merge queue's commit {} (`merge_group.head_sha`): qa-loop only reports on the commit it tested. Check it out (actions/checkout does on `merge_group` by default)",
                if head.is_empty() { "(none)" } else { &head },
                group.head_sha
            ));
        }
    }
    Ok(Resolved::Run(Box::new(Origin {
        env: env.clone(),
        event: ev,
        pr,
        trust,
    })))
}

/// The checked-out commit must be the PR head, or a merge commit of it; comment and dispatch
/// triggers (whose workflow checked out the default branch) get the head checked out.
async fn ensure_head(
    root: &Path,
    trigger: &Trigger,
    pr: &PullRequest,
    token: Option<&Secret>,
    server_url: &str,
) -> Result<(), String> {
    let Err(checked_out) = trust::check_head(root, &pr.head_sha).await else {
        return Ok(());
    };
    if matches!(trigger, Trigger::Comment { .. } | Trigger::Dispatch { .. }) {
        tracing::info!(
            head = %pr.head_sha,
            "checking out the pull request's head (the workflow checked out {checked_out})"
        );
        let auth = crate::vcs::Auth {
            token: token.cloned(),
            host: format!("{}/", server_url.trim_end_matches('/')),
        };
        return trust::checkout_head(root, pr, &auth).await.map_err(|e| {
            format!(
                "pull request #{}: {e}; qa-loop only reports on the commit it tested",
                pr.number
            )
        });
    }
    Err(format!(
        "the checked-out commit {checked_out} is not the head {} of pull request #{} (nor a merge \
         commit of it): qa-loop only publishes a verdict for the commit it tested. Check the head \
         out (actions/checkout with `ref: ${{{{ github.event.pull_request.head.sha }}}}`)",
        pr.head_sha, pr.number
    ))
}

/// A pull request read from the API (events that only name its number).
async fn read_pr(gh: &GitHub, repo: &str, number: u64) -> Option<PullRequest> {
    match gh.get(&format!("repos/{repo}/pulls/{number}")).await {
        Ok(v) => event::pull_request(&serde_json::json!({ "pull_request": v })).ok(),
        Err(e) => {
            tracing::warn!("cannot read pull request #{number}: {e}");
            None
        }
    }
}

/// The open PR whose head is `owner:branch` at `sha` (`workflow_run` payloads carry no PR for
/// forks). The head commit must match: a PR pushed to since is left to its own, newer run.
async fn find_pr(
    gh: &GitHub,
    repo: &str,
    owner: &str,
    branch: &str,
    sha: &str,
) -> Option<PullRequest> {
    let path = format!(
        "repos/{repo}/pulls?state=open&head={}",
        crate::text::percent_encode(&format!("{owner}:{branch}"))
    );
    let prs = match gh.get_all(&path, 10).await {
        Ok(prs) => prs,
        Err(e) => {
            tracing::warn!("cannot list the pull requests of {owner}:{branch}: {e}");
            return None;
        }
    };
    prs.into_iter()
        .filter_map(|v| event::pull_request(&serde_json::json!({ "pull_request": v })).ok())
        .find(|pr| pr.head_sha == sha)
}

/// Whether `login` has `admin`, `maintain` or `write` on the repository (false when unknown).
pub async fn can_write(gh: &GitHub, repo: &str, login: &str) -> bool {
    let path = format!(
        "repos/{repo}/collaborators/{}/permission",
        crate::text::percent_encode(login)
    );
    match gh.get(&path).await {
        Ok(v) => {
            let role = v["role_name"].as_str().unwrap_or_default();
            matches!(
                v["permission"].as_str(),
                Some("admin" | "maintain" | "write")
            ) || matches!(role, "admin" | "maintain" | "write")
        }
        Err(e) => {
            tracing::warn!("cannot read the permission of @{login}: {e}");
            false
        }
    }
}

/// When GitHub first saw `sha`: the earliest `created_at` of its check suites (made by GitHub
/// when the commit is pushed, so not a time the pusher can write, as a committer date is).
/// `None` when it has none or they cannot be read.
pub async fn first_seen(gh: &GitHub, repo: &str, sha: &str) -> Option<String> {
    let path = format!("repos/{repo}/commits/{sha}/check-suites?per_page=100");
    match gh.get(&path).await {
        Ok(v) => v["check_suites"]
            .as_array()?
            .iter()
            .filter_map(|s| s["created_at"].as_str())
            .filter_map(|t| Some((crate::github::signoff::seconds(t)?, t.to_string())))
            .min()
            .map(|(_, t)| t),
        Err(e) => {
            tracing::warn!("cannot read when {sha} was pushed: {e}");
            None
        }
    }
}
