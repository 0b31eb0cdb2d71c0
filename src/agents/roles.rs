//! The reviewer and the fixer as the engine's [`Reviewer`] and [`Fixer`]: each review builds its
//! task (first review, or a follow-up on what changed since the last one) and runs the reviewer
//! agent; each fix writes the fix request and runs the fixer agent or the configured
//! `fixer-command`.

use std::cell::RefCell;
use std::path::PathBuf;
use std::time::Instant;

use super::{Agent, AgentEnd, Meter, ToolCalls, tasks};
use crate::config::Strategy;
use crate::engine::Engine;
use crate::engine::driver::{Fixer, Reviewer};
use crate::github::actions::Group;
use crate::llm::{AgentRole, Provider};
use crate::model::{Issue, Verdict, VerificationReport};
use crate::report::files;
use crate::tools::{ToolBox, ToolSet};
use crate::verify::process::Launcher;

/// Step limits of one agent turn.
const REVIEWER_MAX_STEPS: usize = 30;
const FIXER_MAX_STEPS: usize = 50;

/// What the reviewer and the fixer share: the model, the tools, the budget meter and the
/// tool-call caps.
pub struct Shared<'a> {
    pub provider: &'a dyn Provider,
    pub tools: ToolBox,
    pub meter: &'a RefCell<Meter>,
    pub calls: ToolCalls,
    pub root: PathBuf,
    /// `::group::` per phase (inside GitHub Actions).
    pub groups: bool,
    /// The change and the tree's snapshot, read once per tree (shared with the verification).
    pub change: crate::vcs::ChangeCache,
}

/// The reviewer agent as the engine's [`Reviewer`].
pub struct AgentReviewer<'a> {
    pub shared: &'a Shared<'a>,
    pub strategy: &'a Strategy,
    pub model: Option<String>,
    pub system: String,
    /// Files of the diff the reviewer was not shown (read by the reporter).
    pub omitted_files: &'a RefCell<Vec<String>>,
    /// The reviewer's conversation, continued from review to review so its earlier reading is
    /// a cached prefix; dropped after an error.
    pub conversation: Vec<crate::llm::Message>,
    /// The tree the reviewer last saw (a `vcs::snapshot`).
    pub last_tree: Option<String>,
    /// qa-loop's own files, left out of snapshots.
    pub own_paths: Vec<String>,
    /// A human's guidance for this run (shown in the first review's task).
    pub guidance: Option<String>,
    /// The pull request's title and description (shown when no criteria were given).
    pub pull_request: Option<String>,
}

impl Reviewer for AgentReviewer<'_> {
    async fn review(&mut self, iteration: u32, engine: &Engine) -> Result<Verdict, String> {
        let _group = Group::start(
            self.shared.groups,
            &format!("qa-loop: review (iteration {iteration})"),
        );
        // An iteration is a review and the fix after it.
        self.shared.calls.new_iteration();
        let (tree, reviewed_head) = self.write_task(iteration, engine).await;
        let expected: Vec<String> = self
            .strategy
            .criteria
            .iter()
            .map(|c| c.text.clone())
            .collect();
        let ended = self.run_reviewer(&expected).await;
        self.last_tree = tree;
        if ended.is_err() {
            // Start afresh next time rather than continue a conversation cut mid-turn.
            self.conversation.clear();
        }
        match ended? {
            AgentEnd::Verdict(v) => {
                let mut v = self.complete_verdict(v, &expected, reviewed_head);
                self.check_pre_existing(&mut v).await;
                Ok(v)
            }
            AgentEnd::Finished(_) => Err("the reviewer ended without a verdict".into()),
        }
    }

    async fn before_fix(&mut self) {
        // The tree this review saw, for the next review's follow-up: taken only now that a fix
        // comes (an approving run never needs it).
        if self.last_tree.is_none() && !self.conversation.is_empty() {
            self.last_tree = self.snapshot().await;
        }
    }
}

impl AgentReviewer<'_> {
    /// Puts this review's task (and the pages' screenshots) into the conversation; returns the
    /// tree snapshot taken and the commit reviewed, if known.
    async fn write_task(
        &mut self,
        iteration: u32,
        engine: &Engine,
    ) -> (Option<String>, Option<String>) {
        let empty = VerificationReport::default();
        let verification = engine.verification().unwrap_or(&empty);
        let hints = crate::diffview::DiffHints::from_repo(
            &self.shared.root,
            named_files(&self.strategy.criteria, engine.history(), verification),
        );
        // The tree is snapshotted only to compare with the last review's (a follow-up); the
        // first review's is taken before a fix, if one comes (`before_fix`).
        let tree = match self.last_tree {
            Some(_) => self.snapshot().await,
            None => None,
        };
        let changes = self.changes_since_last(tree.as_ref(), &hints).await;
        let baseline = self.baseline(changes.is_some(), engine, &hints).await;
        // The whole change: shown within the budget in a full review; a re-review names its
        // files only (sizes, no text) and a follow-up shows only what changed.
        let budget = match (&baseline, &changes) {
            (super::rereview::Baseline::Since(_), _) | (_, Some(_)) => 0,
            _ => tasks::DIFF_BUDGET,
        };
        let diff = self.whole_diff(budget, &hints).await;
        let brief = tasks::ReviewBrief {
            iteration,
            risk_level: self.strategy.risk_level,
            criteria: &self.strategy.criteria,
            verification,
            earlier: engine.history(),
            diff: diff.as_ref().map_err(String::as_str),
            no_test_project: self.strategy.no_test_project,
            discovered: &self.strategy.discovered,
            plan_checks: &self.strategy.reviewer_checks,
            guidance: self.guidance.as_deref(),
            pull_request: self.pull_request.as_deref(),
            // Without `run_command` nothing of the change may run: an untrusted change.
            untrusted: !self.shared.tools.commands,
            hints: &hints,
            gone: match &baseline {
                super::rereview::Baseline::Gone { head } => Some(head),
                _ => None,
            },
        };
        let reviewed_head = self.reviewed_head().await;
        let follow_up = changes.is_some();
        let (task, omitted) = reviewer_task(&brief, changes.as_ref(), &baseline);
        self.start_task(task, omitted, follow_up);
        if let Some(last) = self.conversation.last_mut() {
            last.content
                .extend(page_images(&self.shared.root, verification));
        }
        (tree, reviewed_head)
    }

    /// The change against the diff base, read once per tree.
    async fn change(&self) -> Result<std::sync::Arc<crate::vcs::Change>, String> {
        let base = self.shared.tools.diff_base.rev()?;
        self.shared.change.get(&self.shared.root, base).await
    }

    /// The commit the review sees: `HEAD`, when the working tree (qa-loop's own files left
    /// out) is exactly `HEAD`'s; `None` with uncommitted changes, no commit, or no change read.
    async fn reviewed_head(&self) -> Option<String> {
        let change = self.change().await.ok()?;
        change.clean_head(&self.own_paths).map(str::to_string)
    }

    /// Snapshots the tree (without qa-loop's own files); `None`, with a warning, when it cannot.
    async fn snapshot(&self) -> Option<String> {
        let (root, own) = (&self.shared.root, &self.own_paths);
        match self
            .shared
            .change
            .snapshot(|| crate::vcs::snapshot(root, own))
            .await
        {
            Ok(t) => Some(t),
            Err(e) => {
                tracing::warn!("cannot snapshot the tree, the reviewer gets the whole task: {e}");
                None
            }
        }
    }

    /// What changed since the tree the last review saw, when this review continues its
    /// conversation.
    async fn changes_since_last(
        &self,
        tree: Option<&String>,
        hints: &tasks::DiffHints,
    ) -> Option<tasks::DiffView> {
        match (&self.last_tree, tree) {
            (Some(last), Some(now)) if !self.conversation.is_empty() => {
                let root = &self.shared.root;
                crate::diffview::load(root, &[last, now], false, tasks::DIFF_BUDGET, hints, &[])
                    .await
                    .ok()
            }
            _ => None,
        }
    }

    /// The earlier review a review continues from when it starts a conversation while earlier
    /// reviews exist (a later run, or after an error): the last commit one of them saw.
    async fn baseline(
        &self,
        follow_up: bool,
        engine: &Engine,
        hints: &tasks::DiffHints,
    ) -> super::rereview::Baseline {
        if follow_up || engine.history().is_empty() {
            return super::rereview::Baseline::None;
        }
        super::rereview::baseline(
            &self.shared.root,
            engine.history(),
            tasks::DIFF_BUDGET,
            hints,
            &self.own_paths,
        )
        .await
    }

    /// The whole change since the merge base with the diff base, within `budget`; warns when
    /// it cannot be computed.
    async fn whole_diff(
        &self,
        budget: usize,
        hints: &tasks::DiffHints,
    ) -> Result<tasks::DiffView, String> {
        let diff = self.change().await.and_then(|change| {
            crate::diffview::load_change(&change, budget, hints, &self.own_paths)
        });
        if let Err(e) = &diff {
            tracing::warn!("cannot compute the diff: {e}");
        }
        diff
    }

    /// Continues the conversation with a follow-up task (adding to the files not shown), or
    /// starts a new one with `task` (whose files not shown replace the earlier ones).
    fn start_task(&mut self, task: String, omitted: Vec<String>, follow_up: bool) {
        if follow_up {
            let mut all = self.omitted_files.borrow_mut();
            let known: std::collections::HashSet<String> = all.iter().cloned().collect();
            all.extend(omitted.into_iter().filter(|f| !known.contains(f)));
            crate::agents::runner::continue_with(&mut self.conversation, task);
        } else {
            *self.omitted_files.borrow_mut() = omitted;
            self.conversation = vec![crate::llm::Message::user(task)];
        }
    }

    /// Runs the reviewer agent on the conversation. Every criterion is judged: one targeted
    /// follow-up for those the verdict left out.
    async fn run_reviewer(&mut self, expected: &[String]) -> Result<AgentEnd, String> {
        let agent = Agent {
            provider: self.shared.provider,
            role: AgentRole::Reviewer,
            model: self.model.clone(),
            system: self.system.clone(),
            tools: &self.shared.tools,
            tool_set: ToolSet::Reviewer,
            max_steps: REVIEWER_MAX_STEPS,
            meter: self.shared.meter,
            calls: &self.shared.calls,
        };
        let mut ended = agent.converse(&mut self.conversation).await;
        if let Ok(AgentEnd::Verdict(v)) = &ended {
            let missing = super::verdict::missing_criteria(v, expected);
            if !missing.is_empty() {
                tracing::info!(
                    missing = missing.len(),
                    "the verdict left acceptance criteria out: asking once for them"
                );
                let first = v.clone();
                crate::agents::runner::continue_with(
                    &mut self.conversation,
                    super::verdict::missing_criteria_request(&missing),
                );
                ended = match agent.converse(&mut self.conversation).await {
                    Ok(AgentEnd::Verdict(v)) => Ok(AgentEnd::Verdict(v)),
                    // The first verdict stands; what it left out is not met.
                    _ => Ok(AgentEnd::Verdict(first)),
                };
            }
        }
        ended
    }

    /// Completes the verdict: every expected criterion listed, the commit reviewed, and each
    /// issue's file length.
    /// Checks each claim that an issue was there before the change (`introduced: false`)
    /// against the diff: an issue on a line the change adds, in a file it adds, without a
    /// location, or when the diff cannot be read, counts as introduced.
    async fn check_pre_existing(&self, v: &mut Verdict) {
        if v.issues.iter().all(|i| i.introduced) {
            return;
        }
        let added = self
            .change()
            .await
            .map(|c| crate::vcs::added_lines_of(&self.shared.root, &c));
        for issue in v.issues.iter_mut().filter(|i| !i.introduced) {
            let verdict = crate::engine::findings::pre_existing_claim(issue, added.as_ref().ok());
            if let Err(why) = verdict {
                tracing::info!(issue = %issue.id, "{why}: counted as introduced");
                issue.introduced = true;
            }
        }
    }

    fn complete_verdict(
        &self,
        mut v: Verdict,
        expected: &[String],
        reviewed_head: Option<String>,
    ) -> Verdict {
        super::verdict::complete_criteria(&mut v, expected);
        v.reviewed_head = reviewed_head;
        // Measured here, never taken from the reviewer: the file's length as reviewed.
        for issue in &mut v.issues {
            issue.file_lines = issue
                .file
                .as_deref()
                .and_then(|f| self.shared.tools.confinement.line_count(f));
        }
        v
    }
}

/// The reviewer's task and the files it leaves out: a follow-up on `changes`, a re-review of
/// what changed since an earlier review's commit, or a full review.
fn reviewer_task(
    brief: &tasks::ReviewBrief<'_>,
    changes: Option<&tasks::DiffView>,
    baseline: &super::rereview::Baseline,
) -> (String, Vec<String>) {
    if let Some(changes) = changes {
        return tasks::follow_up_task(brief, changes);
    }
    match baseline {
        super::rereview::Baseline::Since(since) => {
            tracing::info!(
                since = %since.head,
                commits = since.commits.len(),
                "reviewing what changed since the last review"
            );
            tasks::rereview_task(brief, since)
        }
        _ => tasks::review_task(brief),
    }
}

/// The fixer agent (or a `fixer-command`) as the engine's [`Fixer`].
pub struct AgentFixer<'a> {
    pub shared: &'a Shared<'a>,
    pub model: Option<String>,
    pub system: String,
    pub out_dir: PathBuf,
    /// `fixer-command`: an external coding agent instead of the built-in fixer.
    pub command: Option<String>,
    pub launcher: Launcher,
    pub deadline: Option<Instant>,
    /// A human's guidance for this run, in every fix request.
    pub guidance: Option<String>,
}

/// Longest run of a `fixer-command` (the run's `--timeout` cuts it shorter).
const FIXER_COMMAND_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60 * 60);

impl Fixer for AgentFixer<'_> {
    async fn fix(&mut self, iteration: u32, issues: &[Issue]) -> Result<String, String> {
        let _group = Group::start(
            self.shared.groups,
            &format!("qa-loop: fix (iteration {iteration})"),
        );
        let request = tasks::fix_request(iteration, issues, self.guidance.as_deref());
        files::write_fix_request(&self.out_dir, &request)
            .map_err(|e| format!("cannot write {}: {e}", files::FIX_REQUEST))?;
        if let Some(command) = &self.command {
            return self.run_command(command, iteration).await;
        }
        let agent = Agent {
            provider: self.shared.provider,
            role: AgentRole::Fixer,
            model: self.model.clone(),
            system: self.system.clone(),
            tools: &self.shared.tools,
            tool_set: ToolSet::Fixer,
            max_steps: FIXER_MAX_STEPS,
            meter: self.shared.meter,
            calls: &self.shared.calls,
        };
        match agent.run(request).await? {
            AgentEnd::Finished(summary) => Ok(summary),
            AgentEnd::Verdict(_) => {
                Err("the fixer submitted a verdict instead of finishing".into())
            }
        }
    }
}

impl AgentFixer<'_> {
    /// Runs the external agent on `QA_FIX_REQUEST.md` (its path in `$QA_FIX_REQUEST`), in the
    /// repository root, with the test commands' environment (never qa-loop's own keys). Exit 0
    /// is a fix; anything else is one loop error (a fixer crash).
    async fn run_command(&self, command: &str, iteration: u32) -> Result<String, String> {
        let request = std::path::absolute(self.out_dir.join(files::FIX_REQUEST))
            .unwrap_or_else(|_| self.out_dir.join(files::FIX_REQUEST));
        let launcher = self.launcher.with_vars(&[
            ("QA_FIX_REQUEST", request.display().to_string()),
            ("QA_LOOP_ITERATION", iteration.to_string()),
        ]);
        let timeout = match self.deadline {
            Some(d) => d
                .saturating_duration_since(Instant::now())
                .min(FIXER_COMMAND_TIMEOUT),
            None => FIXER_COMMAND_TIMEOUT,
        };
        let log = self
            .out_dir
            .join(files::LOGS_DIR)
            .join(format!("fixer-{iteration}.log"));
        tracing::info!(iteration, command, "running the fixer command");
        let done = launcher
            .run(crate::verify::process::Job {
                command,
                cwd: &self.shared.root,
                timeout,
                head: 2 * 1024,
                tail: 6 * 1024,
                log: Some(log),
            })
            .await;
        let output = done.output.trim();
        if done.outcome.passed() {
            Ok(if output.is_empty() {
                format!("`{command}` finished")
            } else {
                format!("`{command}` finished:\n\n{output}")
            })
        } else {
            Err(format!(
                "the fixer command `{command}` {}{}",
                done.outcome.describe(),
                if output.is_empty() {
                    String::new()
                } else {
                    format!(": {output}")
                }
            ))
        }
    }
}

/// Pages whose screenshots go with the review: those with free-text checks for the reviewer.
const PAGE_IMAGES: usize = 4;

/// The screenshots of the pages whose free-text checks the reviewer judges (browser
/// verification), downscaled, after a line naming them.
fn page_images(root: &std::path::Path, v: &VerificationReport) -> Vec<crate::llm::Content> {
    let mut named = Vec::new();
    let mut images = Vec::new();
    for page in v
        .browser
        .iter()
        .filter(|p| p.checks.iter().any(|c| c.passed.is_none()))
        .take(PAGE_IMAGES)
    {
        let Some(shot) = &page.screenshot else {
            continue;
        };
        match std::fs::read(root.join(shot))
            .map_err(|e| e.to_string())
            .and_then(|b| crate::mcp::for_model(&b))
        {
            Ok(i) => {
                named.push(page.url.clone());
                images.push(crate::llm::Content::Image {
                    media_type: i.media_type,
                    data: i.data,
                    tokens: i.tokens,
                    call_id: None,
                });
            }
            Err(e) => tracing::warn!("the screenshot {shot} is not shown to the reviewer: {e}"),
        }
    }
    if images.is_empty() {
        return images;
    }
    let mut out = vec![crate::llm::Content::Text(format!(
        "Screenshots of the pages whose browser checks you judge, in order: {}",
        named.join(", ")
    ))];
    out.extend(images);
    out
}

/// The files the review is about first: those the criteria name (path-like words), the open
/// issues of the last iteration point at, and the failing tests live in.
fn named_files(
    criteria: &[crate::config::Criterion],
    history: &[crate::engine::IterationRecord],
    verification: &VerificationReport,
) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for c in criteria {
        for w in c.text.split(|ch: char| {
            ch.is_whitespace() || matches!(ch, '`' | '\'' | '"' | '(' | ')' | ',')
        }) {
            let w = w.trim_end_matches(['.', ':', ';']);
            let (stem, ext) = w.rsplit_once('.').unwrap_or(("", ""));
            if !stem.is_empty()
                && (1..=5).contains(&ext.len())
                && ext.chars().all(|c| c.is_ascii_alphanumeric())
            {
                out.push(w.to_string());
            }
        }
    }
    if let Some(last) = history.last() {
        out.extend(last.issues.iter().filter_map(|i| i.file.clone()));
    }
    for suite in &verification.tests {
        out.extend(
            suite
                .cases
                .iter()
                .filter(|c| c.is_failure())
                .filter_map(|c| c.file.as_deref().map(str::to_string)),
        );
    }
    out.sort();
    out.dedup();
    out
}
