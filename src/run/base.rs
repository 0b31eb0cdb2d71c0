//! What the change under review is compared with, decided once before anything runs: `--base`
//! (a branch, tag or commit), else the pull request's base branch (fetched, and the clone
//! deepened, when the checkout lacks it — `actions/checkout` fetches one commit by default), else
//! the commit checked out (uncommitted work). When a pull request's base cannot be found, the run
//! goes on with [`DiffBase::Unresolved`]: every check that needs the change fails with the reason
//! (fail closed), and the reviewer is told.

use std::path::Path;

use crate::vcs::{Auth, DiffBase};

use super::RunError;

/// How deep a shallow clone is fetched, in turn, until the base and `HEAD` share history.
const DEPTHS: [u32; 3] = [50, 500, 5000];

/// Where the base comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source<'a> {
    /// `--base` / `QA_LOOP_BASE` / `base:`.
    Named(&'a str),
    /// The pull request's base branch (on `origin`).
    PullRequest(&'a str),
    /// Neither: the commit checked out.
    Head,
}

/// The base `settings` and the run's pull request call for: a named base first, then the pull
/// request's (`GITHUB_BASE_REF`, else the PR as read from the event or the API).
pub fn source<'a>(named: Option<&'a str>, pr_base: Option<&'a str>) -> Source<'a> {
    match (named, pr_base) {
        (Some(n), _) => Source::Named(n),
        (None, Some(b)) if !b.is_empty() => Source::PullRequest(b),
        _ => Source::Head,
    }
}

/// Resolves `source` in the repository at `root`. A directory outside a git work tree and a
/// named base that does not resolve are usage errors (exit 2); a pull request's base that cannot
/// be fetched is [`DiffBase::Unresolved`].
pub async fn resolve(
    root: &Path,
    source: Source<'_>,
    auth: Option<&Auth>,
) -> Result<DiffBase, RunError> {
    // One git call: inside a work tree, and HEAD.
    let head = crate::vcs::work_tree_head(root).await.map_err(|_| {
        RunError::Usage(format!(
            "{} is not inside a git work tree: qa-loop reviews a change in a git checkout (run it in the repository, or `git init` and commit the base first)",
            root.display()
        ))
    })?;
    match source {
        // No commit yet: every file is part of the change.
        Source::Head => Ok(DiffBase::Rev(
            head.unwrap_or_else(|| crate::vcs::EMPTY_TREE.to_string()),
        )),
        Source::Named(rev) => named(root, rev).await.map(DiffBase::Rev),
        Source::PullRequest(branch) => Ok(pull_request(root, branch, auth).await),
    }
}

/// A commit named by the event (a merge group's `base_sha`): the change is that commit to the
/// working tree. Fetched when the checkout does not hold it; unresolved (with why) when it
/// cannot be.
pub async fn commit(root: &Path, sha: &str, auth: Option<&Auth>) -> Result<DiffBase, RunError> {
    resolve(root, Source::Head, None).await?;
    let held = || crate::vcs::commit_id(root, sha);
    if held().await.is_err() {
        tracing::info!(sha, "fetching the merge group's base commit");
        if let Err(e) = crate::vcs::fetch_commit(root, auth, sha).await {
            tracing::warn!("cannot fetch the base commit {sha}: {e}");
        }
    }
    Ok(match held().await {
        Ok(c) => DiffBase::Rev(c),
        Err(e) => DiffBase::Unresolved(format!(
            "the merge group's base commit {sha} is not in the checkout and could not be fetched ({}): check it out with history (actions/checkout `fetch-depth: 0`)",
            e.trim()
        )),
    })
}

/// `--base REV`: its merge base with `HEAD` (one git call), or that of `origin/REV` for a
/// branch only the remote has.
async fn named(root: &Path, rev: &str) -> Result<String, RunError> {
    match crate::vcs::merge_base_of(root, rev, "HEAD").await {
        Ok(c) => Ok(c),
        Err(e) => crate::vcs::merge_base_of(root, &format!("origin/{rev}"), "HEAD")
            .await
            .map_err(|_| RunError::Usage(format!("--base {rev}: {e}"))),
    }
}

/// The pull request's base branch `origin/<branch>`: its merge base with `HEAD`, fetching and
/// deepening until there is one.
async fn pull_request(root: &Path, branch: &str, auth: Option<&Auth>) -> DiffBase {
    let remote = format!("origin/{branch}");
    let found = || crate::vcs::merge_base_of(root, &remote, "HEAD");
    if let Ok(mb) = found().await {
        return DiffBase::Rev(mb);
    }
    let mut last = String::new();
    for depth in DEPTHS {
        tracing::info!(branch, depth, "fetching the base branch to find the change");
        match crate::vcs::fetch_branch(root, auth, branch, depth).await {
            Ok(()) => match found().await {
                Ok(mb) => return DiffBase::Rev(mb),
                Err(e) => last = e,
            },
            Err(e) => {
                last = e;
                break;
            }
        }
    }
    let why = format!(
        "the base branch `{branch}` and HEAD share no history qa-loop could fetch ({}); check the base out with its history (actions/checkout `fetch-depth: 0`) or name it with --base",
        last.trim()
    );
    tracing::warn!("{why}");
    DiffBase::Unresolved(why)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_named_base_wins_then_the_pull_request_s_then_head() {
        assert_eq!(source(Some("main"), Some("dev")), Source::Named("main"));
        assert_eq!(source(None, Some("dev")), Source::PullRequest("dev"));
        assert_eq!(source(None, Some("")), Source::Head);
        assert_eq!(source(None, None), Source::Head);
    }
}
