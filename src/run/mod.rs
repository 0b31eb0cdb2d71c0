//! `qa-loop run`: the run context ([`context`], built and checked before anything runs), the
//! engine with its adapters (the verifier here, the agents in `agents::roles`), and the sinks
//! that turn the run's events into outputs ([`events`], [`sinks`]).

pub mod base;
mod confine;
pub mod context;
mod error;
pub mod events;
pub mod provider;
pub mod queue;
pub mod sinks;
mod verifier;

use std::cell::RefCell;
use std::path::PathBuf;
use std::time::Instant;

use crate::agents::Meter;
use crate::agents::prompts::Prompt;
use crate::agents::roles::{AgentFixer, AgentReviewer, Shared};
use crate::config::Settings;
use crate::engine::driver::{self, Budget};
use crate::engine::state::{Engine, Escalation, Outcome, Policy};
use crate::github::comment::CrossRunState;
use crate::report::files;
use crate::tools::{Confinement, ToolBox};
use crate::verify::process::Launcher;

pub use context::RunContext;
use context::{PrRun, PushPlan};
pub use error::RunError;
use events::{RunEvent, Sinks};
use verifier::RepoVerifier;

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

impl Budget for RefCell<Meter> {
    fn exhausted(&self) -> Option<String> {
        self.borrow().exhausted()
    }

    fn refused(&self) -> Option<String> {
        self.borrow().refused.clone()
    }
}

/// Runs the loop the context describes; the first write happens here.
pub async fn run(ctx: &RunContext) -> Result<RunResult, RunError> {
    if let Some(q) = &ctx.queue {
        return run_queue(ctx, q).await;
    }
    let settings = &ctx.inputs.settings;
    let provider = &ctx.provider;
    let meter = RefCell::new(
        Meter::new(
            settings.limits.max_tokens,
            settings.limits.max_cost_usd,
            deadline(settings),
        )
        .with_registry(settings.models.registry.clone()),
    );
    if let Err(e) = ctx.cancel.on_signals() {
        tracing::warn!("cannot watch SIGINT/SIGTERM: {e}");
    }
    let launcher =
        Launcher::new(&settings.env_policy(), ctx.cancel.clone()).with_sandbox(ctx.sandbox.clone());
    let mcp = start_mcp(settings, &launcher).await;
    let shared = Shared {
        provider: provider.as_ref(),
        tools: toolbox(ctx, &launcher)?.with_mcp(mcp.clone()),
        meter: &meter,
        calls: crate::agents::ToolCalls::new(settings.limits.tool_caps),
        root: settings.paths.root.clone(),
        groups: ctx.groups,
        change: crate::vcs::ChangeCache::default(),
    };
    let omitted = RefCell::new(Vec::new());
    let mut reviewer = reviewer(ctx, &shared, &omitted);
    let mut fixer = fixer(ctx, &shared, &launcher);
    let mut verifier = verifier(ctx, provider.as_ref(), &meter, &launcher, &mcp)
        .with_change(shared.change.clone());
    let mut sinks = report_sinks(ctx, &meter, &omitted, &mcp);
    let state = cross_run_state(ctx, &mut sinks).await;
    add_output_sinks(ctx, &mut sinks).await?;
    let waiting = waiting_for_resume(ctx.pr.as_ref(), &state);
    let mut requests = human_fix_request(settings);
    requests.extend(comment_fix_request(ctx.pr.as_ref()));
    let asked_to_fix = !requests.is_empty();
    let mut engine = Engine::resume(policy_for(ctx), state.history)
        .with_human_request(requests)
        .with_guidance(guidance(ctx.pr.as_ref()));
    let earlier = engine.history().len();
    sinks.emit(RunEvent::Started { engine: &engine }).await;
    let outcome = match waiting {
        Some(issue) => wait_for_resume(&engine, &mut sinks, issue).await,
        None => {
            let (budget, cancel) = (&meter, &ctx.cancel);
            driver::drive(
                &mut engine,
                &mut verifier,
                &mut reviewer,
                &mut fixer,
                &mut sinks,
                budget,
                cancel,
            )
            .await
        }
    };
    mcp.shutdown().await;
    let changed = asked_to_fix || engine.history().len() > earlier + 1;
    upload_sarif(ctx, &engine, (earlier, changed), &outcome, &sinks.products).await;
    result(settings, outcome, sinks.products)
}

/// A merge-queue run ([`queue`]): one verification of the queue's commit, decided by the gates
/// alone, reported through the log, the report files (no plan) and the check run on the
/// queue's commit. No model, no fixer, no push, no comment, no issue, no notification.
async fn run_queue(ctx: &RunContext, q: &queue::QueueRun) -> Result<RunResult, RunError> {
    use crate::engine::driver::Verifier as _;
    let settings = &ctx.inputs.settings;
    if let Err(e) = ctx.cancel.on_signals() {
        tracing::warn!("cannot watch SIGINT/SIGTERM: {e}");
    }
    let meter = RefCell::new(Meter::new(None, None, deadline(settings)));
    let launcher =
        Launcher::new(&settings.env_policy(), ctx.cancel.clone()).with_sandbox(ctx.sandbox.clone());
    let mcp = std::sync::Arc::new(crate::mcp::Hub::empty());
    let omitted = RefCell::new(Vec::new());
    let mut sinks = Sinks::default();
    sinks.add(sinks::log::Log);
    sinks.add(sinks::files::ReportFiles {
        out_dir: settings.paths.out_dir.clone(),
        plan: None,
        strategy: &ctx.inputs.strategy,
        meter: &meter,
        omitted: &omitted,
        replayed: false,
        sandbox: Some(crate::report::SandboxNote::of(&ctx.sandbox)),
        fixes: Vec::new(),
        mcp: mcp.clone(),
        warnings: Vec::new(),
        sarif_anchor: sinks::files::sarif_anchor(
            &settings.paths.root,
            settings.paths.config_path.as_deref(),
        ),
        earlier: 0,
    });
    if let (Some(target), Some(token)) = (&q.target, q.origin.env.github_token.clone())
        && let Ok(gh) = crate::github::client::GitHub::new(
            &q.origin.env.api_url,
            token,
            settings.models.model_retry,
        )
    {
        let mut check = crate::github::check_run::CheckRun::new(gh, target, settings);
        check.start().await;
        sinks.products.check_run_url = check.id().map(|id| {
            format!(
                "{}/{}/runs/{id}",
                q.origin.env.server_url.trim_end_matches('/'),
                target.repo
            )
        });
        sinks.add(sinks::check_run::CheckRunSink {
            check,
            root: settings.paths.root.clone(),
            diff_base: ctx.diff_base.clone(),
        });
    }
    let suites = ctx.inputs.strategy.suites.len();
    let (_, left) = queue::strategy(&ctx.inputs.strategy);
    let verdict = queue::verdict(&q.group, suites, &left);
    let mut engine = Engine::resume(policy_for(ctx), Vec::new());
    sinks.emit(RunEvent::Started { engine: &engine }).await;
    let verification = if suites == 0 {
        crate::model::VerificationReport::default()
    } else {
        let mut verifier = verifier(ctx, ctx.provider.as_ref(), &meter, &launcher, &mcp);
        verifier.verify().await
    };
    let record = crate::engine::state::apply_gates(
        1,
        verdict,
        verification,
        driver::now(),
        settings.rules.fix_severity,
    );
    let outcome = match record.status {
        crate::engine::Status::Approved => Outcome::Approved { iteration: 1 },
        _ => Outcome::Rejected { best_iteration: 1 },
    };
    engine = Engine::resume(policy_for(ctx), vec![record]);
    sinks
        .emit(RunEvent::Finished {
            engine: &engine,
            outcome: &outcome,
        })
        .await;
    result(settings, outcome, sinks.products)
}

/// `sarif-upload`: on a pull request, `qa-loop.sarif` to code scanning, attached to the commit
/// this run's last review saw (nothing when this run reviewed nothing). `earlier`: the
/// iterations of earlier runs; `changed`: whether this run changed code before its last review.
async fn upload_sarif(
    ctx: &RunContext,
    engine: &Engine,
    (earlier, changed): (usize, bool),
    outcome: &Outcome,
    products: &events::Products,
) {
    let settings = &ctx.inputs.settings;
    let Some(pr) = ctx.pr.as_ref().filter(|_| settings.publish.sarif_upload) else {
        return;
    };
    let Some(last) = engine.history().get(earlier..).and_then(<[_]>::last) else {
        tracing::info!("sarif-upload: this run reviewed nothing, so nothing is uploaded");
        return;
    };
    let target = &pr.target;
    let at = match crate::github::sarif::attach(
        target.pr,
        &target.head_sha,
        last.reviewed_head.as_deref(),
        changed,
        products.commits_pushed,
        outcome.best_iteration() == Some(last.iteration),
    ) {
        Ok(at) => at,
        Err(why) => return tracing::warn!("cannot upload qa-loop.sarif to code scanning: {why}"),
    };
    let path = settings.paths.out_dir.join(files::SARIF);
    let (Ok(sarif), Some(token)) = (
        std::fs::read_to_string(&path),
        pr.origin.env.github_token.clone(),
    ) else {
        return tracing::warn!("cannot upload {} to code scanning", path.display());
    };
    match crate::github::client::GitHub::new(
        &pr.origin.env.api_url,
        token,
        settings.models.model_retry,
    ) {
        Ok(gh) => crate::github::sarif::upload(&gh, &target.repo, &at, &sarif).await,
        Err(e) => tracing::warn!("cannot upload qa-loop.sarif to code scanning: {e}"),
    }
}

/// Starts the configured MCP servers (an empty hub when there are none).
async fn start_mcp(settings: &Settings, launcher: &Launcher) -> std::sync::Arc<crate::mcp::Hub> {
    std::sync::Arc::new(if settings.children.mcp_servers.is_empty() {
        crate::mcp::Hub::empty()
    } else {
        crate::mcp::Hub::start(
            &settings.children.mcp_servers,
            &settings.paths.root,
            settings.paths.out_dir.join("mcp"),
            crate::mcp::Launch {
                sandbox: launcher.sandbox(),
                env: launcher.env(),
            },
            crate::env_vars::var,
        )
        .await
    })
}

/// The sinks every run has: the log, the failure analysis (when on) and the report files.
fn report_sinks<'a>(
    ctx: &'a RunContext,
    meter: &'a RefCell<Meter>,
    omitted: &'a RefCell<Vec<String>>,
    mcp: &std::sync::Arc<crate::mcp::Hub>,
) -> Sinks<'a> {
    let settings = &ctx.inputs.settings;
    let mut sinks = Sinks::default();
    sinks.add(sinks::log::Log);
    if settings.output.failure_analysis {
        // Before the report files and the escalation issue, which carry its text.
        sinks.add(sinks::analysis::Analysis {
            analyst: crate::agents::analyst::Analyst {
                provider: ctx.provider.as_ref(),
                model: settings.models.reviewer_model.clone(),
                system: prompt(ctx, Prompt::Analyst),
                meter,
            },
            strategy: &ctx.inputs.strategy,
            fixes: Vec::new(),
        });
    }
    sinks.add(sinks::files::ReportFiles {
        out_dir: settings.paths.out_dir.clone(),
        plan: settings.paths.plan.clone(),
        strategy: &ctx.inputs.strategy,
        meter,
        omitted,
        replayed: settings.models.provider == Some(crate::config::ProviderKind::Replay),
        sandbox: ctx
            .trust
            .is_trusted()
            .then(|| crate::report::SandboxNote::of(&ctx.sandbox)),
        fixes: Vec::new(),
        mcp: mcp.clone(),
        warnings: ctx.model_warnings.clone(),
        sarif_anchor: sinks::files::sarif_anchor(
            &settings.paths.root,
            settings.paths.config_path.as_deref(),
        ),
        earlier: 0,
    });
    sinks
}

/// What earlier runs left: on a PR, its GitHub sinks' state (adding those sinks); locally, the
/// plan's history.
async fn cross_run_state<'a>(ctx: &'a RunContext, sinks: &mut Sinks<'a>) -> CrossRunState {
    match &ctx.pr {
        Some(pr) => pr_sinks(ctx, pr, sinks).await,
        // Locally the plan is the memory: its history continues the numbering, the
        // recurrences and the iteration total.
        None => CrossRunState {
            history: ctx
                .inputs
                .settings
                .paths
                .plan
                .as_ref()
                .and_then(|p| std::fs::read_to_string(p).ok())
                .map(|t| crate::report::plan::history_of(&t))
                .unwrap_or_default(),
            ..CrossRunState::default()
        },
    }
}

/// Adds the sinks heard last: the events JSONL file and the notifications, when configured.
async fn add_output_sinks(ctx: &RunContext, sinks: &mut Sinks<'_>) -> Result<(), RunError> {
    let settings = &ctx.inputs.settings;
    if let Some(path) = &settings.output.events_jsonl {
        let jsonl = sinks::events_jsonl::EventsJsonl::create(path)
            .map_err(|e| RunError::Io(format!("cannot write {}: {e}", path.display())))?;
        sinks.add(jsonl);
    }
    if let Some(cfg) = &settings.children.notify {
        // Heard last: the escalation issue it links to exists by then.
        sinks.add(notify_sink(ctx, cfg, &sinks.products).await?);
    }
    Ok(())
}

/// The notification sink: the targets with their secrets, and what every notice carries.
async fn notify_sink(
    ctx: &RunContext,
    cfg: &crate::config::file::NotifyConfig,
    products: &events::Products,
) -> Result<sinks::notify::NotifySink, RunError> {
    use crate::notify::{Hints, Links, Notice};
    let settings = &ctx.inputs.settings;
    let plan_issue = settings
        .paths
        .plan
        .as_ref()
        .and_then(|p| std::fs::read_to_string(p).ok())
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|v| {
            v.get("linear_issue")
                .and_then(|i| i.as_str())
                .map(str::to_string)
        });
    let (base, hints, issues_url) = match &ctx.pr {
        Some(pr) => {
            let env = &pr.origin.env;
            let title = pr
                .origin
                .pr
                .as_ref()
                .map(|p| p.title.clone())
                .unwrap_or_default();
            let server = env.server_url.trim_end_matches('/');
            let repo = &pr.target.repo;
            (
                Notice {
                    repository: Some(repo.clone()),
                    pull_request: Some(pr.target.pr),
                    title: crate::text::clip(&crate::report::untrusted::line(&title), 200),
                    branch: Some(pr.target.head_ref.clone()),
                    links: Links {
                        pull_request: Some(format!("{server}/{repo}/pull/{}", pr.target.pr)),
                        check_run: products.check_run_url.clone(),
                        escalation_issue: None,
                        run: env.run_url(),
                    },
                    ..Notice::default()
                },
                Hints {
                    branch: Some(pr.target.head_ref.clone()),
                    title: Some(title),
                    body: pr.origin.pr.as_ref().map(|p| p.body.clone()),
                    plan_issue,
                },
                Some(format!("{server}/{repo}/issues/")),
            )
        }
        None => {
            let branch =
                crate::vcs::git(&settings.paths.root, &["rev-parse", "--abbrev-ref", "HEAD"])
                    .await
                    .ok()
                    .map(|b| b.trim().to_string())
                    .filter(|b| !b.is_empty() && b != "HEAD");
            (
                Notice {
                    title: branch.clone().unwrap_or_else(|| "local run".into()),
                    branch: branch.clone(),
                    ..Notice::default()
                },
                Hints {
                    branch,
                    plan_issue,
                    ..Hints::default()
                },
                None,
            )
        }
    };
    let (notifier, warnings) =
        crate::notify::Notifier::new(cfg, crate::env_vars::var, hints).map_err(RunError::Io)?;
    for w in &warnings {
        tracing::warn!("{w}");
    }
    Ok(sinks::notify::NotifySink {
        notifier,
        base,
        started: Instant::now(),
        out_dir: settings.paths.out_dir.clone(),
        issues_url,
        warnings,
    })
}

fn deadline(settings: &Settings) -> Option<Instant> {
    settings.limits.run_timeout.map(|t| Instant::now() + t)
}

/// The agents' tools, confined to the repository; without `run_command` for untrusted code.
fn toolbox(ctx: &RunContext, launcher: &Launcher) -> Result<ToolBox, RunError> {
    let settings = &ctx.inputs.settings;
    let root = &settings.paths.root;
    let protected =
        crate::tools::protected_paths(&settings.paths.out_dir, settings.paths.plan.as_ref());
    let confinement = Confinement::new(root, settings.trust.allow_workflow_edits, &protected)
        .map_err(|e| {
            RunError::Io(format!(
                "cannot open the repository at {}: {e}",
                root.display()
            ))
        })?;
    let tools = ToolBox::new(confinement, ctx.diff_base.clone(), launcher.clone())
        .with_own_paths(own_paths(settings));
    Ok(if ctx.trust.is_trusted() {
        tools
    } else {
        tools.without_commands()
    })
}

/// A prompt: the repository's override when the run is trusted, else the built-in one.
fn prompt(ctx: &RunContext, p: Prompt) -> String {
    if ctx.trust.is_trusted() {
        p.load(&ctx.inputs.settings.paths.root)
    } else {
        p.builtin().to_string()
    }
}

fn reviewer<'a>(
    ctx: &'a RunContext,
    shared: &'a Shared<'a>,
    omitted: &'a RefCell<Vec<String>>,
) -> AgentReviewer<'a> {
    AgentReviewer {
        shared,
        strategy: &ctx.inputs.strategy,
        model: ctx.inputs.settings.models.reviewer_model.clone(),
        system: prompt(ctx, Prompt::Reviewer),
        omitted_files: omitted,
        conversation: Vec::new(),
        last_tree: None,
        own_paths: own_paths(&ctx.inputs.settings),
        guidance: guidance(ctx.pr.as_ref()),
        pull_request: pull_request_text(ctx.pr.as_ref()),
    }
}

fn fixer<'a>(ctx: &RunContext, shared: &'a Shared<'a>, launcher: &Launcher) -> AgentFixer<'a> {
    let settings = &ctx.inputs.settings;
    AgentFixer {
        shared,
        model: settings.models.fixer_model.clone(),
        system: prompt(ctx, Prompt::Fixer),
        out_dir: settings.paths.out_dir.clone(),
        command: settings.children.fixer_command.clone(),
        launcher: launcher.clone(),
        deadline: deadline(settings),
        guidance: guidance(ctx.pr.as_ref()),
    }
}

fn verifier<'a>(
    ctx: &'a RunContext,
    provider: &'a dyn crate::llm::Provider,
    meter: &'a RefCell<Meter>,
    launcher: &Launcher,
    mcp: &std::sync::Arc<crate::mcp::Hub>,
) -> RepoVerifier<'a> {
    let settings = &ctx.inputs.settings;
    let strategy = &ctx.inputs.strategy;
    let root = settings.paths.root.clone();
    let mut verifier =
        crate::verify::Verifier::new(strategy.clone(), root.clone(), launcher.clone())
            .with_logs(settings.paths.out_dir.join(files::LOGS_DIR))
            .with_diff_base(ctx.diff_base.clone(), own_paths(settings));
    verifier.set_signoff(ctx.pr.as_ref().and_then(|p| p.signoff.clone()));
    RepoVerifier {
        verifier,
        conversations: strategy
            .conversations
            .as_ref()
            .filter(|c| !c.scenarios.is_empty())
            .map(|config| crate::conversations::Conversations {
                config,
                judge: crate::conversations::judge::Judge {
                    provider,
                    model: settings.models.reviewer_model.clone(),
                    system: prompt(ctx, Prompt::Judge),
                    meter,
                    mcp: (!mcp.is_empty()).then(|| mcp.clone()),
                },
                launcher: launcher.clone(),
                root: root.clone(),
            }),
        browser: strategy
            .browser
            .clone()
            .map(|config| crate::browser::BrowserVerification {
                config,
                hub: mcp.clone(),
                launcher: launcher.clone(),
                root,
                out_dir: settings.paths.out_dir.join("browser"),
                app: None,
            }),
        log_dir: settings.paths.out_dir.join(files::LOGS_DIR),
        groups: ctx.groups,
        passes: 0,
        guard: verifier::Guard::new(
            settings.paths.root.clone(),
            own_paths(settings),
            crate::vcs::ChangeCache::default(),
        ),
        last: None,
        full_tests: 0,
    }
}

/// On a pull request: opens the check run, reads the cross-run state from the sticky comment,
/// and adds the pusher, escalation, check-run and comment sinks.
async fn pr_sinks<'a>(ctx: &'a RunContext, pr: &'a PrRun, sinks: &mut Sinks<'a>) -> CrossRunState {
    use crate::github::{check_run::CheckRun, escalation::EscalationIssue};
    use crate::github::{client::GitHub, publish::Identity, sticky::StickyComment};
    let settings = &ctx.inputs.settings;
    let (origin, target) = (&pr.origin, &pr.target);
    let token = origin
        .env
        .github_token
        .clone()
        .expect("a PR run has a token");
    let Ok(gh) = GitHub::new(&origin.env.api_url, token, settings.models.model_retry) else {
        return CrossRunState::default();
    };
    let identity = Identity::new(gh.clone(), settings.trust.bot_login.clone());
    let mut check = CheckRun::new(gh.clone(), target, settings);
    check.start().await;
    sinks.products.check_run_url = check.id().map(|id| {
        format!(
            "{}/{}/runs/{id}",
            origin.env.server_url.trim_end_matches('/'),
            target.repo
        )
    });
    let enabled = settings.publish.comment == crate::config::settings::CommentMode::Sticky;
    let mut comment = StickyComment::new(
        gh.clone(),
        &target.repo,
        target.pr,
        identity.clone(),
        enabled,
    );
    let state = comment.read_state().await;
    if !state.history.is_empty() {
        tracing::info!(
            iterations = state.history.len(),
            "continuing from earlier runs on this pull request"
        );
    }
    if let Some(push) = pusher(ctx, pr, gh.clone(), identity.clone()).await {
        sinks.add(push);
    }
    sinks.add(sinks::escalation::EscalationSink {
        issue: EscalationIssue::new(gh.clone(), &target.repo, target.pr, identity, settings),
        prior: state.escalation_issue,
        out_dir: settings.paths.out_dir.clone(),
    });
    sinks.add(sinks::check_run::CheckRunSink {
        check,
        root: settings.paths.root.clone(),
        diff_base: ctx.diff_base.clone(),
    });
    sinks.add(sinks::comment::CommentSink {
        comment,
        head_sha: target.head_sha.clone(),
        gh,
    });
    state
}

/// The pusher sink, when fixes go somewhere (`mode: fix` or `suggest`, trusted, a branch).
async fn pusher<'a>(
    ctx: &'a RunContext,
    pr: &'a PrRun,
    gh: crate::github::client::GitHub,
    identity: crate::github::publish::Identity,
) -> Option<sinks::pusher::Push<'a>> {
    let settings = &ctx.inputs.settings;
    let root = &settings.paths.root;
    let plan = pr.push.as_ref()?;
    let pusher = crate::github::push::Pusher::start(
        root,
        own_paths(settings),
        settings.trust.allow_workflow_edits,
    )
    .await
    .map_err(|e| tracing::warn!("cannot prepare to push fixes: {e}"))
    .ok()?;
    let pr_added = match plan {
        // Committed locally, offered as suggestions (a fork is never pushed to).
        PushPlan::Suggest => crate::vcs::added_lines(root, &ctx.diff_base)
            .await
            .unwrap_or_default(),
        PushPlan::Branch(_) => Default::default(),
    };
    Some(sinks::pusher::Push {
        pusher,
        plan,
        gh,
        target: &pr.target,
        pr_added,
        sandbox: ctx.sandbox.clone(),
        identity,
    })
}

/// Escalated by an earlier run: nothing runs until a `/qa resume` comment.
fn waiting_for_resume(pr: Option<&PrRun>, state: &CrossRunState) -> Option<u64> {
    let pr = pr?;
    let resume = pr.target.command == Some(crate::github::event::QaCommand::Resume);
    state.escalation_issue.filter(|_| !resume)
}

async fn wait_for_resume(engine: &Engine, sinks: &mut Sinks<'_>, issue: u64) -> Outcome {
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
        escalation: Escalation::AwaitingResume { issue },
        best_iteration,
    };
    driver::Reporter::finish(sinks, engine, &outcome).await;
    outcome
}

fn result(
    settings: &Settings,
    outcome: Outcome,
    products: events::Products,
) -> Result<RunResult, RunError> {
    if let Some(e) = products.write_error {
        return Err(RunError::Io(format!(
            "cannot write the reports to {}: {e}",
            settings.paths.out_dir.display()
        )));
    }
    Ok(RunResult {
        outcome,
        escalation_issue: products.escalation_issue,
        commits_pushed: products.commits_pushed,
        report_path: products
            .report_path
            .unwrap_or_else(|| settings.paths.out_dir.join(files::REPORT)),
        out_dir: settings.paths.out_dir.clone(),
    })
}

/// Paths of the checkout that are not the change's, relative to the root: qa-loop's own files
/// (`.qa-loop/`, the plan) and the cloud credential files a login step left in the workspace
/// (`gha-creds-*.json`, a token file a credential variable names). Never pattern-checked, never
/// in the diff the reviewer reads, never staged for a fix commit.
fn own_paths(settings: &Settings) -> Vec<String> {
    let mut out = Vec::new();
    if let Ok(rel) = settings.paths.out_dir.strip_prefix(&settings.paths.root) {
        out.push(format!("{}/", rel.display()));
    }
    if let Some(plan) = &settings.paths.plan
        && let Ok(rel) = plan.strip_prefix(&settings.paths.root)
    {
        out.push(rel.display().to_string());
    }
    let root = std::fs::canonicalize(&settings.paths.root).unwrap_or(settings.paths.root.clone());
    for file in confine::credential_files(settings) {
        if let Ok(rel) = file.strip_prefix(&root) {
            out.push(rel.display().to_string());
        }
    }
    out
}

/// The loop's rules: the settings', and review only for untrusted code.
/// A human's `QA_FIX_REQUEST.md` present at the start — next to the plan (where Auto-Claude's
/// UI writes it) or at the repository root — as one issue for the fixer to work on first. The
/// file is moved into the out dir (`QA_FIX_REQUEST.human.md`) so that the next run does not
/// repeat it; qa-loop's own requests live in the out dir and are never taken for a human's.
fn human_fix_request(settings: &Settings) -> Vec<crate::model::Issue> {
    let root = &settings.paths.root;
    let mut places = Vec::new();
    if let Some(dir) = settings.paths.plan.as_ref().and_then(|p| p.parent()) {
        places.push(root.join(dir).join(crate::report::files::FIX_REQUEST));
    }
    places.push(root.join(crate::report::files::FIX_REQUEST));
    let Some((path, text)) = places.into_iter().find_map(|p| {
        if let Some(link) = crate::nofollow::first_link(root, &p) {
            tracing::warn!(
                "{}: a link, not read (qa-loop does not follow links in the checkout)",
                link.display()
            );
            return None;
        }
        let text = crate::nofollow::read_to_string(root, &p).ok()?;
        (!text.trim().is_empty()).then_some((p, text))
    }) else {
        return Vec::new();
    };
    tracing::info!(
        "{}: a human's fix request: the fixer works on it first",
        path.display()
    );
    let kept = settings.paths.out_dir.join("QA_FIX_REQUEST.human.md");
    if std::fs::create_dir_all(&settings.paths.out_dir)
        .and_then(|()| std::fs::rename(&path, &kept))
        .is_err()
    {
        tracing::warn!(
            "cannot move {} aside: the next run will read it again",
            path.display()
        );
    }
    vec![crate::model::Issue {
        id: "H1".into(),
        title: "A human's fix request (QA_FIX_REQUEST.md)".into(),
        kind: crate::model::IssueType::AcceptanceCriteria,
        severity: crate::model::Severity::High,
        file: None,
        line: None,
        file_lines: None,
        description: crate::text::clip(crate::text::visible(&text).trim(), 16_000),
        fix: "Do what the request asks, then `finish` with a summary of what you changed.".into(),
        recurs: None,
        introduced: true,
        fingerprint: None,
    }]
}

/// A human's words on the PR that started this run, with who wrote them and how: `/qa resume
/// <guidance>` and `/qa fix <instructions>` reach the next review and every fix request, and
/// are recorded with the run's first iteration.
fn guidance(pr: Option<&PrRun>) -> Option<String> {
    use crate::github::event::QaCommand;
    let t = &pr?.target;
    let how = match t.command? {
        QaCommand::Resume => "`/qa resume`",
        QaCommand::Fix => "`/qa fix`",
        _ => return None,
    };
    (!t.words.trim().is_empty()).then(|| format!("@{} ({how}): {}", t.actor, t.words.trim()))
}

/// The longest PR description the reviewer is shown (the author's text, bounded in tokens).
const PR_DESCRIPTION_CHARS: usize = 4000;

/// The pull request's title and description, as the reviewer is shown them.
fn pull_request_text(pr: Option<&PrRun>) -> Option<String> {
    let p = pr?.origin.pr.as_ref()?;
    let (title, body) = (
        crate::text::visible(&p.title),
        crate::text::visible(&p.body),
    );
    let body = body.trim();
    Some(if body.is_empty() {
        format!("{}\n\n(no description)", title.trim())
    } else {
        format!(
            "{}\n\n{}",
            title.trim(),
            crate::text::clip(body, PR_DESCRIPTION_CHARS)
        )
    })
}

/// `/qa fix <instructions>` (write access, checked before the run): the instructions are the
/// fixer's first task, as a human's `QA_FIX_REQUEST.md` is.
fn comment_fix_request(pr: Option<&PrRun>) -> Option<crate::model::Issue> {
    let t = &pr?.target;
    if t.command != Some(crate::github::event::QaCommand::Fix) || t.words.trim().is_empty() {
        return None;
    }
    Some(crate::model::Issue {
        id: "H2".into(),
        title: format!("@{}'s instructions (`/qa fix`)", t.actor),
        kind: crate::model::IssueType::AcceptanceCriteria,
        severity: crate::model::Severity::High,
        file: None,
        line: None,
        file_lines: None,
        description: t.words.trim().to_string(),
        fix: "Do what the instructions ask, then `finish` with a summary of what you changed."
            .into(),
        recurs: None,
        introduced: true,
        fingerprint: None,
    })
}

fn policy_for(ctx: &RunContext) -> Policy {
    let mut policy = policy(&ctx.inputs.settings);
    policy.review_only |= !ctx.trust.is_trusted();
    policy
}

/// The loop's rules from the settings.
pub fn policy(settings: &Settings) -> Policy {
    Policy {
        max_iterations: settings.rules.max_iterations,
        max_consecutive_errors: settings.rules.max_consecutive_errors,
        recurring_threshold: settings.rules.recurring_threshold,
        similarity_threshold: settings.rules.similarity_threshold,
        min_score: settings.rules.min_score,
        review_only: settings.rules.mode == crate::config::Mode::Review,
        fix_severity: settings.rules.fix_severity,
    }
}
