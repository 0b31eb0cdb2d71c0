//! `qa-loop run`: wires the engine to the real verifier, agents and report files.

use std::cell::RefCell;
use std::path::PathBuf;
use std::time::Instant;

use crate::agents::prompts::Prompt;
use crate::agents::{Agent, AgentEnd, Meter, tasks};
use crate::cancel::Cancel;
use crate::config::{Inputs, ProviderKind, Settings, Strategy};
use crate::engine::driver::{self, Budget, Fixer, Reporter, Reviewer, Verifier};
use crate::engine::state::{Engine, Outcome, Policy};
use crate::error::InputError;
use crate::github::actions::Group;
use crate::github::origin::Origin;
use crate::github::publish::{Publisher, Target};
use crate::llm::replay::ReplayProvider;
use crate::llm::{AgentRole, Provider};
use crate::model::{Issue, Verdict, VerificationReport};
use crate::report::{RunReport, files};
use crate::tools::{Confinement, ToolBox, ToolSet};
use crate::verify::process::Launcher;

/// Step limits of one agent turn.
const REVIEWER_MAX_STEPS: usize = 30;
const FIXER_MAX_STEPS: usize = 50;

/// Why a run could not start.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Input(#[from] InputError),
    #[error("{0}")]
    Usage(String),
    #[error("{0}")]
    Io(String),
    /// Nothing to do for this event (exit 0 with a notice).
    #[error("{0}")]
    Skipped(String),
}

/// What a finished run leaves behind.
#[derive(Debug)]
pub struct RunResult {
    pub outcome: Outcome,
    /// The open escalation issue on GitHub, if any.
    pub escalation_issue: Option<u64>,
    /// Fix commits pushed to the PR branch.
    pub commits_pushed: usize,
    pub report_path: PathBuf,
    pub out_dir: PathBuf,
}

/// Builds the provider the settings ask for. Missing keys, models or prices are usage errors
/// (exit 2) found before anything runs.
pub fn provider(settings: &Settings) -> Result<Box<dyn Provider>, RunError> {
    use crate::llm::{anthropic::Anthropic, http::Transport, openai::OpenAi};
    let kind = settings.provider.ok_or_else(|| {
        RunError::Usage(
            "no model provider configured: pass --provider (or set QA_LOOP_PROVIDER / `provider:` in the config)".into(),
        )
    })?;
    if kind == ProviderKind::Replay {
        let path = settings.replay_session.as_ref().ok_or_else(|| {
            RunError::Usage(
                "--provider replay needs --replay-session PATH (or `replay_session:` in the config)"
                    .into(),
            )
        })?;
        if !path.exists() {
            return Err(InputError::file(path, "replay session not found").into());
        }
        return Ok(Box::new(ReplayProvider::load(path)?));
    }
    let key = settings.api_key.clone();
    let need_key = |var: &str| {
        RunError::Usage(format!(
            "no API key for --provider {}: set {var} (or QA_LOOP_API_KEY, or pass --api-key)",
            kind.as_str()
        ))
    };
    let default_model = match kind {
        ProviderKind::Anthropic => Some(crate::llm::anthropic::DEFAULT_MODEL),
        ProviderKind::Openai => Some(crate::llm::openai::DEFAULT_MODEL),
        _ => None,
    };
    // Every model the run will call: each needs a price when a cost limit is set.
    let models: Vec<&str> = [&settings.reviewer_model, &settings.fixer_model]
        .into_iter()
        .map(|m| m.as_deref().or(default_model))
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| {
            RunError::Usage(format!(
                "--provider {} needs --model (the model name the server knows)",
                kind.as_str()
            ))
        })?;
    if settings.max_cost_usd.is_some()
        && let Some(m) = models.iter().find(|m| settings.prices.of(m).is_none())
    {
        return Err(RunError::Usage(format!(
            "--max-cost-usd needs the price of model `{m}`, which the built-in table does not know: add it under `prices:` in the config (USD per million tokens: input, output)"
        )));
    }
    let transport = Transport::new(settings.model_retry, key.clone())
        .map_err(|e| RunError::Usage(e.to_string()))?;
    let base_url = settings.base_url.as_deref();
    Ok(match kind {
        ProviderKind::Anthropic => Box::new(Anthropic::new(
            transport,
            base_url,
            key.ok_or_else(|| need_key("ANTHROPIC_API_KEY"))?,
            default_model,
        )),
        ProviderKind::Openai => Box::new(OpenAi::new(
            transport,
            base_url,
            Some(key.ok_or_else(|| need_key("OPENAI_API_KEY"))?),
            default_model.unwrap_or_default(),
            "openai",
        )),
        ProviderKind::OpenaiCompatible => {
            let base = base_url.ok_or_else(|| {
                RunError::Usage(
                    "--provider openai-compatible needs --base-url (e.g. http://localhost:11434/v1 for Ollama)".into(),
                )
            })?;
            Box::new(OpenAi::new(
                transport,
                Some(base),
                key,
                models[0],
                "openai-compatible",
            ))
        }
        ProviderKind::Replay => unreachable!("handled above"),
    })
}

struct RepoVerifier<'a> {
    verifier: crate::verify::Verifier,
    /// Conversation scenarios against the project's chat agent, after the suites.
    conversations: Option<crate::conversations::Conversations<'a>>,
    log_dir: PathBuf,
    /// `::group::` per phase in GitHub Actions.
    groups: bool,
    passes: u32,
}

impl Verifier for RepoVerifier<'_> {
    async fn verify(&mut self) -> VerificationReport {
        self.passes += 1;
        let mut report = {
            let _group = Group::start(
                self.groups,
                &format!("qa-loop: verify (pass {})", self.passes),
            );
            self.verifier.verify().await
        };
        if let Some(c) = &self.conversations {
            let _group = Group::start(
                self.groups,
                &format!("qa-loop: conversations (pass {})", self.passes),
            );
            let log = crate::conversations::log_path(&self.log_dir, self.passes);
            let done = c.run(Some(log)).await;
            let mut gates = done.gates;
            // A `/qa approve` sign-off also passes scenarios left for a human.
            if let Some(login) = self.verifier.signed_off_by() {
                for g in gates
                    .iter_mut()
                    .filter(|g| g.status == crate::model::GateStatus::Pending)
                {
                    g.status = crate::model::GateStatus::Passed;
                    g.summary = format!("signed off by @{login} (`/qa approve`): {}", g.summary);
                }
            }
            report.gates.extend(gates);
            report.conversations = done.results;
        }
        report
    }
}

/// Whether log output is grouped per phase (`::group::`): inside GitHub Actions.
fn in_actions() -> bool {
    std::env::var("GITHUB_ACTIONS").is_ok_and(|v| v == "true")
}

struct Shared<'a> {
    provider: &'a dyn Provider,
    tools: ToolBox,
    meter: &'a RefCell<Meter>,
    calls: crate::agents::ToolCalls,
    root: PathBuf,
}

struct AgentReviewer<'a> {
    shared: &'a Shared<'a>,
    strategy: &'a Strategy,
    model: Option<String>,
    system: String,
    /// Files of the diff the reviewer was not shown (read by the reporter).
    omitted_files: &'a RefCell<Vec<String>>,
    /// The reviewer's conversation, continued from review to review so its earlier reading is
    /// a cached prefix; dropped after an error.
    conversation: Vec<crate::llm::Message>,
    /// The tree the reviewer last saw (a `vcs::snapshot`).
    last_tree: Option<String>,
    /// qa-loop's own files, left out of snapshots.
    own_paths: Vec<String>,
}

impl Reviewer for AgentReviewer<'_> {
    async fn review(&mut self, iteration: u32, engine: &Engine) -> Result<Verdict, String> {
        let _group = Group::start(
            in_actions(),
            &format!("qa-loop: review (iteration {iteration})"),
        );
        // An iteration is a review and the fix after it.
        self.shared.calls.new_iteration();
        let diff = crate::vcs::diff(&self.shared.root, &self.shared.tools.diff_base)
            .await
            .unwrap_or_else(|e| {
                tracing::warn!("cannot compute the diff: {e}");
                String::new()
            });
        let empty = VerificationReport::default();
        let brief = tasks::ReviewBrief {
            iteration,
            risk_level: self.strategy.risk_level,
            criteria: &self.strategy.criteria,
            verification: engine.verification().unwrap_or(&empty),
            earlier: engine.history(),
            diff: &diff,
            no_test_project: self.strategy.no_test_project,
            discovered: &self.strategy.discovered,
            // Without `run_command` nothing of the change may run: an untrusted change.
            untrusted: !self.shared.tools.commands,
        };
        let root = &self.shared.root;
        let tree = match crate::vcs::snapshot(root, &self.own_paths).await {
            Ok(t) => Some(t),
            Err(e) => {
                tracing::warn!("cannot snapshot the tree, the reviewer gets the whole task: {e}");
                None
            }
        };
        let changes = match (&self.last_tree, &tree) {
            (Some(last), Some(now)) if !self.conversation.is_empty() => {
                crate::vcs::diff_trees(root, last, now).await.ok()
            }
            _ => None,
        };
        match changes {
            Some(changes) => {
                let (task, omitted) = tasks::follow_up_task(&brief, &changes);
                let mut all = self.omitted_files.borrow_mut();
                for f in omitted {
                    if !all.contains(&f) {
                        all.push(f);
                    }
                }
                crate::agents::runner::continue_with(&mut self.conversation, task);
            }
            None => {
                let (task, omitted) = tasks::review_task(&brief);
                *self.omitted_files.borrow_mut() = omitted;
                self.conversation = vec![crate::llm::Message::user(task)];
            }
        }
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
        let ended = agent.converse(&mut self.conversation).await;
        self.last_tree = tree;
        if ended.is_err() {
            // Start afresh next time rather than continue a conversation cut mid-turn.
            self.conversation.clear();
        }
        match ended? {
            AgentEnd::Verdict(v) => Ok(v),
            AgentEnd::Finished(_) => Err("the reviewer ended without a verdict".into()),
        }
    }
}

struct AgentFixer<'a> {
    shared: &'a Shared<'a>,
    model: Option<String>,
    system: String,
    out_dir: PathBuf,
    /// `fixer-command`: an external coding agent instead of the built-in fixer.
    command: Option<String>,
    launcher: Launcher,
    deadline: Option<Instant>,
}

/// Longest run of a `fixer-command` (the run's `--timeout` cuts it shorter).
const FIXER_COMMAND_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60 * 60);

impl Fixer for AgentFixer<'_> {
    async fn fix(&mut self, iteration: u32, issues: &[Issue]) -> Result<String, String> {
        let _group = Group::start(
            in_actions(),
            &format!("qa-loop: fix (iteration {iteration})"),
        );
        let request = tasks::fix_request(iteration, issues);
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

struct FileReporter<'a> {
    out_dir: PathBuf,
    plan: Option<PathBuf>,
    strategy: &'a Strategy,
    meter: &'a RefCell<Meter>,
    reviewer_omitted: &'a RefCell<Vec<String>>,
    fixes: Vec<(u32, String)>,
    replayed: bool,
    report_path: Option<PathBuf>,
    write_error: Option<String>,
    /// The check run and sticky comment, when running on a pull request in GitHub Actions.
    github: Option<Publisher>,
    root: PathBuf,
    head_sha: String,
    /// The open escalation issue known from earlier runs, and this run's.
    prior_escalation: Option<u64>,
    escalation_issue: Option<u64>,
    /// Commits the fixes and pushes them (GitHub, `mode: fix`, not a fork).
    pusher: Option<crate::github::push::Pusher>,
    push_target: Option<crate::github::push::PushTarget>,
    commits_pushed: usize,
    /// Lines the PR added (fork PRs: where suggestions may go).
    pr_added: crate::vcs::AddedLines,
}

impl FileReporter<'_> {
    fn write(&mut self, engine: &Engine, outcome: &Outcome, final_write: bool) {
        let meter = self.meter.borrow();
        let omitted = self.reviewer_omitted.borrow();
        let report = RunReport {
            outcome,
            history: engine.history(),
            strategy: self.strategy,
            recurring: engine.recurring(),
            usage: meter.usage,
            cost_usd: meter.cost_usd,
            model_calls: meter.calls,
            errors: engine.errors(),
            fixes: &self.fixes,
            omitted_files: &omitted,
            replayed: self.replayed,
        };
        // The plan is updated once, at the end, so a run appends its iterations exactly once.
        let plan = if final_write {
            self.plan.as_deref()
        } else {
            None
        };
        match files::write_all(&self.out_dir, &report, plan, &driver::now()) {
            Ok(p) => self.report_path = Some(p),
            Err(e) => {
                tracing::error!(
                    "cannot write the reports to {}: {e}",
                    self.out_dir.display()
                );
                self.write_error = Some(e.to_string());
            }
        }
    }
}

impl Reporter for FileReporter<'_> {
    async fn checkpoint(&mut self, engine: &Engine) {
        if let Some(last) = engine.history().last() {
            tracing::info!(
                iteration = last.iteration,
                status = last.status.as_str(),
                score = last.score,
                issues = last.issues.len(),
                summary = %last.summary,
                "review"
            );
            // An in-progress snapshot: the report as if the loop stopped here.
            let snapshot = Outcome::MaxIterations {
                best_iteration: last.iteration,
            };
            self.write(engine, &snapshot, false);
        }
    }

    async fn fixes_applied(&mut self, engine: &Engine, iteration: u32, summary: &str) {
        tracing::info!(iteration, "fixes applied");
        self.fixes.push((iteration, summary.to_string()));
        if let Some(pusher) = &mut self.pusher {
            let issues = engine
                .history()
                .iter()
                .find(|r| r.iteration == iteration)
                .map(|r| r.issues.clone())
                .unwrap_or_default();
            match pusher.commit_fix(iteration, &issues).await {
                Ok(Some(sha)) => tracing::info!(iteration, commit = %sha, "fix committed"),
                Ok(None) => tracing::info!(iteration, "the fixer changed nothing to commit"),
                Err(e) => tracing::warn!("cannot commit the fixes of iteration {iteration}: {e}"),
            }
        }
        // Another iteration follows: show this one on the check run (the last one goes out
        // with the conclusion, saving a request).
        if let Some(github) = &mut self.github {
            github.iteration(engine).await;
        }
    }

    async fn finish(&mut self, engine: &Engine, outcome: &Outcome) {
        self.write(engine, outcome, true);
        if let Some(github) = &mut self.github {
            let report_path = self
                .report_path
                .clone()
                .unwrap_or_else(|| self.out_dir.join(files::REPORT));
            let mut report = std::fs::read_to_string(&report_path).unwrap_or_default();
            if let (Some(pusher), None, Some(best)) =
                (&self.pusher, &self.push_target, outcome.best_iteration())
                && let Some((patch, diff)) = pusher.fixes_until(best).await
            {
                let comments = crate::github::push::suggestions(&diff, &self.pr_added);
                report.push_str(&format!(
                    "\n## Fixes offered as suggestions\n\nqa-loop does not push to forks: {} suggestion(s) are in a review on the pull request; the whole patch (apply with `git am`):\n\n<details><summary>patch</summary>\n\n{}</details>\n",
                    comments.len(),
                    crate::report::untrusted::fenced(
                        &crate::github::actions::cut(&patch, 30_000, "the workflow log"),
                        "diff"
                    )
                ));
                github.suggest(comments).await;
            }
            if let (Some(pusher), Some(target), Some(best)) =
                (&self.pusher, &self.push_target, outcome.best_iteration())
            {
                use crate::github::push::PushOutcome;
                match pusher.push(target, best).await {
                    PushOutcome::Pushed { commits, head } => {
                        tracing::info!(commits, head = %head, "fixes pushed");
                        self.commits_pushed = commits;
                    }
                    PushOutcome::Nothing => {}
                    PushOutcome::NotPushed { why, patch } => {
                        tracing::warn!("cannot push the fixes: {why}");
                        let why = crate::report::untrusted::line(&why);
                        if patch.is_empty() {
                            report.push_str(&format!("\n## Fixes not pushed\n\n{why}.\n"));
                        } else {
                            report.push_str(&format!(
                                "\n## Fixes not pushed\n\n{why}. Apply them with `git am`:\n\n<details><summary>patch</summary>\n\n{}</details>\n",
                                crate::report::untrusted::fenced(
                                    &crate::github::actions::cut(&patch, 30_000, "the workflow log"),
                                    "diff"
                                )
                            ));
                        }
                    }
                }
            }
            let mut escalation_issue = self.prior_escalation;
            match outcome {
                // Waiting for `/qa resume` or a `/qa approve` sign-off: no escalation issue.
                Outcome::Escalated {
                    escalation:
                        crate::engine::state::Escalation::AwaitingResume { .. }
                        | crate::engine::state::Escalation::AwaitingSignoff { .. },
                    ..
                } => {}
                Outcome::Escalated { .. } => {
                    let text = std::fs::read_to_string(self.out_dir.join(files::ESCALATION))
                        .unwrap_or_default();
                    escalation_issue = github.escalate(&text).await.or(escalation_issue);
                }
                Outcome::Approved { iteration } if escalation_issue.is_some() => {
                    github.resolve_escalation(*iteration).await;
                    escalation_issue = None;
                }
                _ => {}
            }
            self.escalation_issue = escalation_issue;
            let state = crate::github::comment::CrossRunState {
                v: 1,
                history: engine.history().to_vec(),
                escalation_issue,
                head_sha: self.head_sha.clone(),
            };
            let issues = engine
                .history()
                .last()
                .map(|l| l.issues.clone())
                .unwrap_or_default();
            let added = crate::vcs::added_lines(&self.root, &crate::vcs::default_base())
                .await
                .unwrap_or_default();
            let pointer = format!("`{}` (in the workflow's artifacts)", files::REPORT);
            github
                .finish(outcome, &report, &state, &issues, &added, &pointer)
                .await;
            tracing::info!(requests = github.requests(), "published to GitHub");
        }
    }
}

impl Budget for RefCell<Meter> {
    fn exhausted(&self) -> Option<String> {
        self.borrow().exhausted()
    }
}

/// Runs the loop in `settings.root`. Inputs are already validated (and trust decided, in
/// `inputs.trust`); the first write happens here. `origin`: the GitHub Actions event, when any.
pub async fn run(
    inputs: &Inputs,
    origin: Option<&Origin>,
    trust: &crate::trust::Trust,
) -> Result<RunResult, RunError> {
    let settings = &inputs.settings;
    let provider = provider(settings)?;
    let replayed = settings.provider == Some(ProviderKind::Replay);
    let root = settings.root.clone();
    // Untrusted code (SPEC §10): review only, none of it runs, built-in prompts, never a push.
    let untrusted = !trust.is_trusted();
    let mut github = match origin {
        Some(o) if !settings.no_github => publisher(settings, o, untrusted),
        _ => None,
    };
    // The diff base: the PR's base branch (`GITHUB_BASE_REF` is empty under `workflow_run`).
    let diff_base = match (&github, std::env::var("GITHUB_BASE_REF")) {
        (Some(p), Err(_)) if !p.target().base_ref.is_empty() => {
            let base = format!("origin/{}", p.target().base_ref);
            if crate::vcs::resolves(&root, &base).await {
                base
            } else {
                crate::vcs::default_base()
            }
        }
        _ => crate::vcs::default_base(),
    };
    let untrusted_strategy;
    let strategy = if untrusted {
        tracing::info!("untrusted change: review only, none of its code runs");
        untrusted_strategy = Strategy {
            suites: Vec::new(),
            conversations: None,
            no_test_project: false,
            discovered: Vec::new(),
            ..inputs.strategy.clone()
        };
        &untrusted_strategy
    } else {
        &inputs.strategy
    };
    let prompt = |p: Prompt| {
        if untrusted {
            p.builtin().to_string()
        } else {
            p.load(&root)
        }
    };
    let protected = crate::tools::protected_paths(&settings.out_dir, settings.plan.as_ref());
    let confinement =
        Confinement::new(&root, settings.allow_workflow_edits, &protected).map_err(|e| {
            RunError::Io(format!(
                "cannot open the repository at {}: {e}",
                root.display()
            ))
        })?;
    let meter = RefCell::new(
        Meter::new(
            settings.max_tokens,
            settings.max_cost_usd,
            settings.run_timeout.map(|t| Instant::now() + t),
        )
        .with_prices(settings.prices.clone()),
    );
    let cancel = Cancel::new();
    if let Err(e) = cancel.on_signals() {
        tracing::warn!("cannot watch SIGINT/SIGTERM: {e}");
    }
    let launcher = Launcher::new(&settings.env_policy(), cancel.clone());
    let shared = Shared {
        provider: provider.as_ref(),
        tools: {
            let tools = ToolBox::new(confinement, diff_base.clone(), launcher.clone());
            if untrusted {
                tools.without_commands()
            } else {
                tools
            }
        },
        meter: &meter,
        calls: crate::agents::ToolCalls::new(settings.tool_caps),
        root: root.clone(),
    };
    let omitted = RefCell::new(Vec::new());
    let mut reviewer = AgentReviewer {
        shared: &shared,
        strategy,
        model: settings.reviewer_model.clone(),
        system: prompt(Prompt::Reviewer),
        omitted_files: &omitted,
        conversation: Vec::new(),
        last_tree: None,
        own_paths: own_paths(settings),
    };
    let mut fixer = AgentFixer {
        shared: &shared,
        model: settings.fixer_model.clone(),
        system: prompt(Prompt::Fixer),
        out_dir: settings.out_dir.clone(),
        command: settings.fixer_command.clone(),
        launcher: launcher.clone(),
        deadline: settings.run_timeout.map(|t| Instant::now() + t),
    };
    let mut reporter = FileReporter {
        out_dir: settings.out_dir.clone(),
        plan: settings.plan.clone(),
        strategy,
        meter: &meter,
        reviewer_omitted: &omitted,
        fixes: Vec::new(),
        replayed,
        report_path: None,
        write_error: None,
        github: None,
        root: root.clone(),
        head_sha: String::new(),
        prior_escalation: None,
        escalation_issue: None,
        pusher: None,
        push_target: None,
        commits_pushed: 0,
        pr_added: Default::default(),
    };
    let mut verifier = RepoVerifier {
        verifier: crate::verify::Verifier::new(strategy.clone(), root.clone(), launcher.clone())
            .with_logs(settings.out_dir.join(files::LOGS_DIR))
            .with_diff_base(diff_base.clone(), own_paths(settings)),
        conversations: strategy
            .conversations
            .as_ref()
            .filter(|c| !c.scenarios.is_empty())
            .map(|config| crate::conversations::Conversations {
                config,
                judge: crate::conversations::judge::Judge {
                    provider: provider.as_ref(),
                    model: settings.reviewer_model.clone(),
                    system: prompt(Prompt::Judge),
                    meter: &meter,
                },
                launcher: launcher.clone(),
                root: root.clone(),
            }),
        log_dir: settings.out_dir.join(files::LOGS_DIR),
        groups: in_actions(),
        passes: 0,
    };
    let state = match &mut github {
        Some(p) => p.start().await,
        None => Default::default(),
    };
    reporter.prior_escalation = state.escalation_issue;
    let history = state.history;
    if !history.is_empty() {
        tracing::info!(
            iterations = history.len(),
            "continuing from earlier runs on this pull request"
        );
    }
    reporter.head_sha = github
        .as_ref()
        .map(|p| p.target().head_sha.clone())
        .unwrap_or_default();
    let forced_review = untrusted;
    // `/qa approve` from a user with write access signs a `critical` change off, and the
    // conversation scenarios left for a human (`approval_mode: manual`).
    if let Some(p) = &mut github
        && p.target().command == Some(crate::github::event::QaCommand::Approve)
        && (strategy.human_signoff_required || verifier.conversations.is_some())
    {
        let login = p.target().actor.clone();
        if p.can_write(&login).await {
            tracing::info!(login, "signed off by /qa approve");
            verifier.verifier.set_signoff(Some(login));
        } else {
            tracing::warn!(
                login,
                "`/qa approve` ignored: the commenter has no write access"
            );
        }
    }
    if let Some(p) = &github
        && settings.mode == crate::config::Mode::Fix
        && !forced_review
        && !p.target().head_ref.is_empty()
    {
        match crate::github::push::Pusher::start(
            &root,
            own_paths(settings),
            settings.allow_workflow_edits,
        )
        .await
        {
            Ok(pusher) if p.target().fork => {
                // Committed locally, offered as suggestions (a fork is never pushed to).
                reporter.pusher = Some(pusher);
                reporter.pr_added = crate::vcs::added_lines(&root, &diff_base)
                    .await
                    .unwrap_or_default();
            }
            Ok(pusher) => {
                reporter.pusher = Some(pusher);
                reporter.push_target = Some(crate::github::push::PushTarget {
                    remote: "origin".into(),
                    branch: p.target().head_ref.clone(),
                    auth: crate::vcs::Auth {
                        // The push token (so the push triggers CI), else the job's token: the
                        // checkout need not persist credentials where tests can read them.
                        token: crate::github::origin::push_token(|n| std::env::var(n).ok())
                            .or_else(|| origin.and_then(|o| o.token.clone())),
                        host: origin.map_or("https://github.com/".into(), |o| {
                            format!("{}/", o.env.server_url)
                        }),
                    },
                });
            }
            Err(e) => tracing::warn!("cannot prepare to push fixes: {e}"),
        }
    }
    // Escalated by an earlier run: nothing runs until a `/qa resume` comment.
    let waiting = match (&github, state.escalation_issue) {
        (Some(p), Some(issue))
            if p.target().command != Some(crate::github::event::QaCommand::Resume) =>
        {
            Some(issue)
        }
        _ => None,
    };
    reporter.github = github;
    let mut policy = policy(settings);
    policy.review_only |= forced_review;
    let mut engine = Engine::resume(policy, history);
    let outcome = match waiting {
        Some(issue) => {
            tracing::info!(
                issue,
                "waiting for a human: comment `/qa resume` to run again"
            );
            let best_iteration = engine
                .history()
                .iter()
                .max_by_key(|r| (r.score, std::cmp::Reverse(r.iteration)))
                .map(|r| r.iteration);
            let outcome = Outcome::Escalated {
                escalation: crate::engine::state::Escalation::AwaitingResume { issue },
                best_iteration,
            };
            driver::Reporter::finish(&mut reporter, &engine, &outcome).await;
            outcome
        }
        None => {
            driver::drive(
                &mut engine,
                &mut verifier,
                &mut reviewer,
                &mut fixer,
                &mut reporter,
                &meter,
                &cancel,
            )
            .await
        }
    };
    if let Some(e) = reporter.write_error {
        return Err(RunError::Io(format!(
            "cannot write the reports to {}: {e}",
            settings.out_dir.display()
        )));
    }
    let report_path = reporter
        .report_path
        .unwrap_or_else(|| settings.out_dir.join(files::REPORT));
    Ok(RunResult {
        outcome,
        escalation_issue: reporter.escalation_issue,
        commits_pushed: reporter.commits_pushed,
        report_path,
        out_dir: settings.out_dir.clone(),
    })
}

/// The publisher for this run's pull request: inside GitHub Actions, with a token, on an event
/// with a pull request (read by [`crate::github::origin`] before anything ran).
fn publisher(settings: &Settings, origin: &Origin, untrusted: bool) -> Option<Publisher> {
    use crate::github::{client::GitHub, event};
    let token = origin.token.clone()?;
    let pr = origin.pr.clone()?;
    let gh = GitHub::new(&origin.env.api_url, token, settings.model_retry).ok()?;
    let command = match &origin.event.trigger {
        event::Trigger::Comment { command, .. } => *command,
        _ => None,
    };
    let target = Target {
        repo: origin.env.repository.clone(),
        pr: pr.number,
        fork: pr.is_fork(),
        head_sha: pr.head_sha,
        head_ref: pr.head_ref,
        command,
        actor: origin.event.sender.login.clone(),
        base_ref: pr.base_ref,
        untrusted,
    };
    Some(Publisher::new(gh, target, settings))
}

/// qa-loop's own files, relative to the root (`.qa-loop/`, the plan): never pattern-checked.
fn own_paths(settings: &Settings) -> Vec<String> {
    let mut out = Vec::new();
    if let Ok(rel) = settings.out_dir.strip_prefix(&settings.root) {
        out.push(format!("{}/", rel.display()));
    }
    if let Some(plan) = &settings.plan
        && let Ok(rel) = plan.strip_prefix(&settings.root)
    {
        out.push(rel.display().to_string());
    }
    out
}

/// The loop's rules from the settings.
pub fn policy(settings: &Settings) -> Policy {
    Policy {
        max_iterations: settings.max_iterations,
        max_consecutive_errors: settings.max_consecutive_errors,
        recurring_threshold: settings.recurring_threshold,
        similarity_threshold: settings.similarity_threshold,
        min_score: settings.min_score,
        review_only: settings.mode == crate::config::Mode::Review,
    }
}
