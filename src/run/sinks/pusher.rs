//! Fix commits: one per fix iteration, and at the end the best state pushed to the PR branch
//! (or, for a fork, offered as review suggestions and a patch). What could not be pushed is
//! added to the published report with the patch.

use crate::engine::{Engine, Outcome};
use crate::github::client::GitHub;
use crate::github::publish::{Identity, Target};
use crate::github::push::{PushOutcome, Pusher};
use crate::github::threads::{self, Threads};
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
    /// qa-loop's account (`--bot-login`, else found from the token): only its review threads
    /// count.
    pub identity: Identity,
}

/// A patch for the comment: cut to fit, in a fence nothing inside can close.
fn patch_block(patch: &str) -> String {
    untrusted::fenced(
        &crate::github::actions::cut(patch, 30_000, "the workflow log"),
        "diff",
    )
}

impl Push<'_> {
    async fn commit(&mut self, engine: &Engine, iteration: u32) {
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

    /// Fork PRs: the threads of findings gone at the PR head are resolved, and the fixes up to
    /// the best state are offered as suggestions — each tied to the finding it fixes, posted
    /// once — with the whole patch in the report.
    async fn suggest(&mut self, engine: &Engine, outcome: &Outcome, out: &mut Products) {
        let threads = Threads::new(&self.gh, self.target, &self.identity);
        let listing = threads.list().await;
        let head = &self.target.head_sha;
        if let (Some(listing), Some(found)) = (&listing, threads::found_at(engine.history(), head))
        {
            threads.resolve(listing, &found, head).await;
        }
        let Some(best) = outcome.best_iteration() else {
            return;
        };
        let Some((patch, diff)) = self.pusher.fixes_until(best).await else {
            return;
        };
        let fixed = threads::fixed_findings(engine.history(), self.pusher.commits(), best);
        let comments = threads::tie(
            crate::github::push::suggestions(&diff, &self.pr_added),
            &fixed,
        );
        let (fresh, already) = match &listing {
            Some(l) => l.fresh(comments),
            None => (comments, 0),
        };
        let earlier = match already {
            0 => String::new(),
            n => format!(" ({n} of them posted by an earlier run and not repeated)"),
        };
        out.published.push_str(&format!(
            "\n## Fixes offered as suggestions\n\nqa-loop does not push to forks: {} suggestion(s) are in review threads on the pull request{earlier}; the whole patch (apply with `git am`):\n\n<details><summary>patch</summary>\n\n{}</details>\n",
            fresh.len() + already,
            patch_block(&patch)
        ));
        crate::github::publish::suggest(&self.gh, self.target, fresh).await;
    }

    async fn finish(&mut self, engine: &Engine, outcome: &Outcome, out: &mut Products) {
        self.sandbox.settle();
        let target = match self.plan {
            PushPlan::Suggest => return self.suggest(engine, outcome, out).await,
            PushPlan::Branch(target) => target,
        };
        let Some(best) = outcome.best_iteration() else {
            return;
        };
        match self.pusher.push(target, best).await {
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
                RunEvent::Finished { engine, outcome } => self.finish(engine, outcome, out).await,
                RunEvent::Started { .. } | RunEvent::Reviewed { .. } => {}
            }
        })
    }
}
