//! Fix commits: one per fix iteration, and at the end the best state pushed to the PR branch
//! (or, for a fork, offered as review suggestions and a patch). What could not be pushed is
//! added to the published report with the patch.

use crate::engine::Outcome;
use crate::github::client::GitHub;
use crate::github::publish::Target;
use crate::github::push::{PushOutcome, Pusher};
use crate::report::untrusted;
use crate::run::context::PushPlan;
use crate::run::events::{Products, RunEvent, Sink, SinkFuture};

pub struct Push<'a> {
    pub pusher: Pusher,
    pub plan: &'a PushPlan,
    pub gh: GitHub,
    pub target: &'a Target,
    /// Lines the PR added (fork PRs: where suggestions may go).
    pub pr_added: crate::vcs::AddedLines,
    /// Settled (nothing of the change alive) before every commit and push.
    pub sandbox: crate::sandbox::Sandbox,
}

/// A patch for the comment: cut to fit, in a fence nothing inside can close.
fn patch_block(patch: &str) -> String {
    untrusted::fenced(
        &crate::github::actions::cut(patch, 30_000, "the workflow log"),
        "diff",
    )
}

impl Push<'_> {
    async fn commit(&mut self, engine: &crate::engine::Engine, iteration: u32) {
        self.sandbox.settle();
        let issues = engine
            .history()
            .iter()
            .find(|r| r.iteration == iteration)
            .map(|r| r.issues.clone())
            .unwrap_or_default();
        match self.pusher.commit_fix(iteration, &issues).await {
            Ok(Some(sha)) => tracing::info!(iteration, commit = %sha, "fix committed"),
            Ok(None) => tracing::info!(iteration, "the fixer changed nothing to commit"),
            Err(e) => tracing::warn!("cannot commit the fixes of iteration {iteration}: {e}"),
        }
    }

    async fn finish(&mut self, outcome: &Outcome, out: &mut Products) {
        self.sandbox.settle();
        let Some(best) = outcome.best_iteration() else {
            return;
        };
        match self.plan {
            PushPlan::Suggest => {
                let Some((patch, diff)) = self.pusher.fixes_until(best).await else {
                    return;
                };
                let comments = crate::github::push::suggestions(&diff, &self.pr_added);
                out.published.push_str(&format!(
                    "\n## Fixes offered as suggestions\n\nqa-loop does not push to forks: {} suggestion(s) are in a review on the pull request; the whole patch (apply with `git am`):\n\n<details><summary>patch</summary>\n\n{}</details>\n",
                    comments.len(),
                    patch_block(&patch)
                ));
                crate::github::publish::suggest(&self.gh, self.target, comments).await;
            }
            PushPlan::Branch(target) => match self.pusher.push(target, best).await {
                PushOutcome::Pushed { commits, head } => {
                    tracing::info!(commits, head = %head, "fixes pushed");
                    out.commits_pushed = commits;
                }
                PushOutcome::Nothing => {}
                PushOutcome::NotPushed { why, patch } => {
                    tracing::warn!("cannot push the fixes: {why}");
                    let why = untrusted::line(&why);
                    if patch.is_empty() {
                        out.published
                            .push_str(&format!("\n## Fixes not pushed\n\n{why}.\n"));
                    } else {
                        out.published.push_str(&format!(
                            "\n## Fixes not pushed\n\n{why}. Apply them with `git am`:\n\n<details><summary>patch</summary>\n\n{}</details>\n",
                            patch_block(&patch)
                        ));
                    }
                }
            },
        }
    }
}

impl Sink for Push<'_> {
    fn on<'a>(&'a mut self, event: &'a RunEvent<'a>, out: &'a mut Products) -> SinkFuture<'a> {
        Box::pin(async move {
            match event {
                RunEvent::FixesApplied {
                    engine, iteration, ..
                } => self.commit(engine, *iteration).await,
                RunEvent::Finished { outcome, .. } => self.finish(outcome, out).await,
                RunEvent::Started { .. } | RunEvent::Reviewed { .. } => {}
            }
        })
    }
}
