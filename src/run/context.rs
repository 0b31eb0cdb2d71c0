//! The run context: everything a run needs to know, decided once before anything of the change
//! runs or is written — where the run is (local, or a pull request with its event), who is
//! trusted, the resolved settings and strategy, the diff base, where fixes go, the cancellation
//! token. Immutable afterwards: everything downstream receives what it needs from it.

use std::path::Path;

use crate::cancel::Cancel;
use crate::config::{self, FlagLayer, Inputs, Strategy};
use crate::github::actions::ActionsEnv;
use crate::github::publish::Target;
use crate::github::push::PushTarget;
use crate::trust::Trust;
use crate::trust::origin::{Origin, Resolved};

use super::RunError;

/// Everything a run needs, decided before it starts.
pub struct RunContext {
    /// The resolved settings, and the strategy as it will run (an untrusted change: no suites,
    /// no scenarios).
    pub inputs: Inputs,
    pub trust: Trust,
    /// The pull request the run reports on (GitHub Actions, a PR event, a token).
    pub pr: Option<PrRun>,
    /// What the change is compared with (`origin/<base>`, else `HEAD`).
    pub diff_base: crate::vcs::DiffBase,
    /// The model service, checked (keys, models, prices) before anything runs.
    pub provider: Box<dyn crate::llm::Provider>,
    pub cancel: Cancel,
    /// Log output grouped per phase (`::group::`): inside GitHub Actions.
    pub groups: bool,
    /// How the change's code is confined (SPEC §10), decided before any of it runs.
    pub sandbox: crate::sandbox::Sandbox,
    /// Warnings about the run's models (one retiring soon), for the report and the check run.
    pub model_warnings: Vec<String>,
    /// A merge-queue run (`merge_group`): the gates only, reported on the queue's commit.
    pub queue: Option<super::queue::QueueRun>,
}

/// A run on a pull request.
pub struct PrRun {
    pub origin: Box<Origin>,
    pub target: Target,
    /// Where fixes go; `None`: nowhere (review mode, untrusted, no branch).
    pub push: Option<PushPlan>,
    /// A writer's `/qa approve` sign-off (their login).
    pub signoff: Option<String>,
}

/// Where fix commits go.
pub enum PushPlan {
    /// A fork: committed locally, offered as review suggestions and a patch.
    Suggest,
    /// The PR branch.
    Branch(PushTarget),
}

/// What preparing found: a run, or nothing to do for this event (exit 0 with a notice).
pub enum Prepared {
    Run(Box<RunContext>),
    Skip(String),
}

/// Decides trust from the event (before any file of the checkout is read, SPEC §10), checks
/// an untrusted run's config against the base branch's, loads the inputs, registers and masks
/// the secrets, checks the provider, and settles the diff base, push target and sign-off.
pub async fn prepare(
    root: &Path,
    flags: &FlagLayer,
    actions: Option<&ActionsEnv>,
) -> Result<Prepared, RunError> {
    // git is found, and `origin`'s URL read, before anything of the change runs.
    crate::vcs::program().map_err(RunError::Refused)?;
    crate::vcs::pin_origin(root).await;
    let origin = match actions {
        Some(env) => match crate::trust::origin::resolve(env, root, flags).await {
            Ok(Resolved::Run(o)) => Some(o),
            Ok(Resolved::Skip(why)) => return Ok(Prepared::Skip(why)),
            Ok(Resolved::NoEvent) => None,
            Err(e) => return Err(RunError::Refused(e)),
        },
        None => None,
    };
    let trust = origin.as_ref().map_or(Trust::Trusted, |o| o.trust.clone());
    if !trust.is_trusted() {
        check_untrusted_config(root, flags, origin.as_deref()).await?;
    }
    let mut inputs = config::load_inputs_as(root, flags, trust.is_trusted())?;
    register_secrets(&inputs, actions);
    if let Some(o) = &origin
        && let crate::github::event::Decision::Skip(why) =
            crate::github::event::decide_sender(&o.event, &inputs.settings.trust.allowed_bots)
    {
        return Ok(Prepared::Skip(why));
    }
    // The provider is checked before anything is written; a server's wait longer than the run
    // has left stops the run through `cancel`.
    let cancel = Cancel::new();
    let today = crate::llm::registry::Day::today();
    let merge_group = origin.as_ref().is_some_and(|o| {
        matches!(
            o.event.trigger,
            crate::github::event::Trigger::MergeGroup { .. }
        )
    });
    let (model_warnings, provider): (_, Box<dyn crate::llm::Provider>) = if merge_group {
        // The gates only: no model is asked, so no key is needed.
        (
            Vec::new(),
            Box::new(crate::llm::NoModel(
                "a merge-queue run verifies the gates only",
            )),
        )
    } else {
        (
            super::provider::model_lifecycle(&inputs.settings, today)?,
            super::provider::provider(&inputs.settings, Some(&cancel))?,
        )
    };
    if !trust.is_trusted() {
        tracing::info!("untrusted change: review only, none of its code runs");
        inputs.strategy = untrusted_strategy(&inputs.strategy);
    }
    if let Some(pr) = origin.as_ref().and_then(|o| o.pr.as_ref()) {
        add_pr_criteria(&mut inputs.strategy, pr);
    }
    let (pr, queue) = pr_or_queue(origin, &mut inputs, &trust).await;
    let settings = &inputs.settings;
    let diff_base = match &queue {
        // The group's change: the queue's commit against the base it was merged onto.
        Some(q) if settings.paths.base.is_none() => {
            super::base::commit(root, &q.group.base_sha, queue_auth(actions).as_ref()).await?
        }
        _ => diff_base(root, settings, actions, pr.as_ref()).await?,
    };
    super::confine::own_paths_are_real(settings)?;
    let sandbox = super::confine::sandbox_for(settings, trust.is_trusted())?;
    Ok(Prepared::Run(Box::new(RunContext {
        inputs,
        trust,
        pr,
        diff_base,
        provider,
        cancel,
        groups: actions.is_some(),
        sandbox,
        model_warnings,
        queue,
    })))
}

/// What the run reports on: a pull request (the loop), or a merge group (the gates only, with
/// the strategy narrowed to them).
async fn pr_or_queue(
    origin: Option<Box<Origin>>,
    inputs: &mut Inputs,
    trust: &Trust,
) -> (Option<PrRun>, Option<super::queue::QueueRun>) {
    match origin {
        Some(o) => match &o.event.trigger {
            crate::github::event::Trigger::MergeGroup { group, .. } => {
                let group = group.clone();
                let (strategy, left) = super::queue::strategy(&inputs.strategy);
                inputs.strategy = strategy;
                if !left.is_empty() {
                    tracing::info!(
                        "merge queue: {} stay with the pull request",
                        left.join(", ")
                    );
                }
                (None, Some(queue_run(o, group, &inputs.settings)))
            }
            _ if !inputs.settings.trust.no_github => (pr_run(o, inputs, trust).await, None),
            _ => (None, None),
        },
        None => (None, None),
    }
}

/// The merge-queue run of `origin`: its check run goes on the queue's commit.
fn queue_run(
    origin: Box<Origin>,
    group: crate::github::event::MergeGroup,
    settings: &config::Settings,
) -> super::queue::QueueRun {
    let target = (origin.env.github_token.is_some() && !settings.trust.no_github).then(|| Target {
        repo: origin.env.repository.clone(),
        pr: group.pull_requests().first().copied().unwrap_or_default(),
        fork: false,
        head_sha: group.head_sha.clone(),
        head_ref: group.head_ref.clone(),
        command: None,
        actor: origin.event.sender.login.clone(),
        words: String::new(),
        base_ref: group.base_branch().to_string(),
    });
    super::queue::QueueRun {
        group,
        target,
        origin,
    }
}

fn queue_auth(actions: Option<&ActionsEnv>) -> Option<crate::vcs::Auth> {
    actions.map(|a| crate::vcs::Auth {
        token: a.github_token.clone(),
        host: format!("{}/", a.server_url.trim_end_matches('/')),
    })
}

/// A local run (no GitHub): trusted, compared with `--base` or `HEAD`.
pub async fn local(inputs: Inputs) -> Result<RunContext, RunError> {
    crate::vcs::program().map_err(RunError::Refused)?;
    let cancel = Cancel::new();
    let today = crate::llm::registry::Day::today();
    let model_warnings = super::provider::model_lifecycle(&inputs.settings, today)?;
    let provider = super::provider::provider(&inputs.settings, Some(&cancel))?;
    let diff_base = diff_base(&inputs.settings.paths.root, &inputs.settings, None, None).await?;
    super::confine::own_paths_are_real(&inputs.settings)?;
    let sandbox = super::confine::sandbox_for(&inputs.settings, true)?;
    Ok(RunContext {
        inputs,
        trust: Trust::Trusted,
        pr: None,
        diff_base,
        provider,
        cancel,
        groups: false,
        sandbox,
        model_warnings,
        queue: None,
    })
}

/// An untrusted run's config inside the checkout must be the base branch's, byte for byte.
async fn check_untrusted_config(
    root: &Path,
    flags: &FlagLayer,
    origin: Option<&Origin>,
) -> Result<(), RunError> {
    let Some(config) = config::load::config_path(flags.config.as_deref(), root)? else {
        return Ok(());
    };
    let base = origin
        .and_then(|o| o.pr.as_ref())
        .map(|pr| pr.base_sha.clone())
        .unwrap_or_default();
    crate::trust::check_config(root, &config, &base)
        .await
        .map_err(RunError::Refused)
}

/// Every secret known from here on is redacted wherever text leaves the process, and masked
/// in the Actions log.
fn register_secrets(inputs: &Inputs, actions: Option<&ActionsEnv>) {
    let vars = crate::env_vars::vars();
    crate::secrets::register(crate::secrets::of_env(
        vars.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        &inputs.settings.children.secret_env,
    ));
    if let Some(key) = &inputs.settings.models.api_key {
        crate::secrets::register([key.expose().to_string()]);
    }
    let Some(env) = actions else { return };
    crate::secrets::register(
        [env.github_token.as_ref(), env.push_token.as_ref()]
            .into_iter()
            .flatten()
            .map(|t| t.expose().to_string()),
    );
    // Every secret, those known now and each token fetched later, masked in the job's log.
    crate::secrets::announce_with(|value| {
        for line in value
            .lines()
            .filter(|l| l.trim().len() >= crate::secrets::MIN_LEN)
        {
            println!("{}", crate::github::actions::mask(line.trim()));
        }
    });
}

/// The PR description's `## Acceptance Criteria` checklist, after every other source's (SPEC
/// §3.2). A malformed item is the PR author's to fix: a warning naming the line, and the
/// description's criteria are left out.
fn add_pr_criteria(strategy: &mut Strategy, pr: &crate::github::event::PullRequest) {
    match config::load::parse_pr_criteria(pr.number, &pr.body) {
        Ok(list) => {
            if !list.is_empty() {
                tracing::info!(
                    "pull request #{}: {} acceptance criteria from its description",
                    pr.number,
                    list.len()
                );
            }
            config::strategy::add_criteria(
                &mut strategy.criteria,
                config::CriterionSource::PullRequest,
                list,
            );
        }
        Err(e) => tracing::warn!("{e}; its acceptance criteria are left out"),
    }
}

/// Untrusted code (SPEC §10): review only — none of it runs.
fn untrusted_strategy(strategy: &Strategy) -> Strategy {
    Strategy {
        suites: Vec::new(),
        conversations: None,
        no_test_project: false,
        discovered: Vec::new(),
        ..strategy.clone()
    }
}

/// The pull request to report on, where fixes go, and a writer's sign-off.
async fn pr_run(origin: Box<Origin>, inputs: &Inputs, trust: &Trust) -> Option<PrRun> {
    use crate::github::event;
    let settings = &inputs.settings;
    origin.env.github_token.as_ref()?;
    let pr = origin.pr.clone()?;
    let (command, words, commented_at) = match &origin.event.trigger {
        event::Trigger::Comment {
            command,
            words,
            created_at,
            ..
        } => (*command, words.clone(), created_at.clone()),
        _ => (None, String::new(), String::new()),
    };
    let target = Target {
        repo: origin.env.repository.clone(),
        pr: pr.number,
        fork: pr.is_fork(),
        head_sha: pr.head_sha,
        head_ref: pr.head_ref,
        command,
        actor: origin.event.sender.login.clone(),
        words,
        base_ref: pr.base_ref,
    };
    let mode = settings.rules.mode;
    let push = (matches!(mode, config::Mode::Fix | config::Mode::Suggest)
        && trust.is_trusted()
        && !target.head_ref.is_empty())
    .then(|| push_plan(&origin, &target, mode));
    let wants_signoff = command == Some(event::QaCommand::Approve)
        && (inputs.strategy.human_signoff_required
            || inputs
                .strategy
                .conversations
                .as_ref()
                .is_some_and(|c| !c.scenarios.is_empty()));
    let signoff = match wants_signoff {
        true => signoff(&origin, &target, &commented_at, settings).await,
        false => None,
    };
    Some(PrRun {
        origin,
        target,
        push,
        signoff,
    })
}

/// A fork's branch is never pushed to, and `mode: suggest` pushes nowhere: the fixes go out as
/// review suggestions (and a patch).
fn push_plan(origin: &Origin, target: &Target, mode: config::Mode) -> PushPlan {
    if target.fork || mode == config::Mode::Suggest {
        return PushPlan::Suggest;
    }
    PushPlan::Branch(PushTarget {
        remote: "origin".into(),
        branch: target.head_ref.clone(),
        auth: crate::vcs::Auth {
            // The push token (so the push triggers CI), else the job's token: the checkout
            // need not persist credentials where tests can read them.
            token: origin
                .env
                .push_token
                .clone()
                .or_else(|| origin.env.github_token.clone()),
            host: format!("{}/", origin.env.server_url),
        },
    })
}

/// `/qa approve` from a user with write access signs a `critical` change off, and the
/// conversation scenarios left for a human (`approval_mode: manual`) — for one commit: the one
/// the comment names (`/qa approve <sha>`), else the head that was current when the comment was
/// written. A head pushed after the comment needs a new sign-off.
async fn signoff(
    origin: &Origin,
    target: &Target,
    commented_at: &str,
    settings: &config::Settings,
) -> Option<String> {
    let token = origin.env.github_token.clone()?;
    let gh =
        crate::github::client::GitHub::new(&origin.env.api_url, token, settings.models.model_retry)
            .ok()?;
    let login = target.actor.clone();
    if !crate::trust::origin::can_write(&gh, &target.repo, &login).await {
        tracing::warn!(
            login,
            "`/qa approve` ignored: the commenter has no write access"
        );
        return None;
    }
    let named = target.words.trim();
    let pushed_at = if named.is_empty() {
        crate::trust::origin::first_seen(&gh, &target.repo, &target.head_sha).await
    } else {
        None
    };
    match crate::github::signoff::binds(named, &target.head_sha, commented_at, pushed_at.as_deref())
    {
        Ok(()) => {
            tracing::info!(login, head = %target.head_sha, "signed off by /qa approve");
            Some(login)
        }
        Err(why) => {
            tracing::warn!(login, "`/qa approve` does not sign this head off: {why}");
            None
        }
    }
}

/// What the change is compared with: `--base`, else the PR's base branch (`GITHUB_BASE_REF`;
/// empty under `workflow_run` and on comment triggers, where the PR names it), else `HEAD`.
async fn diff_base(
    root: &Path,
    settings: &config::Settings,
    actions: Option<&ActionsEnv>,
    pr: Option<&PrRun>,
) -> Result<crate::vcs::DiffBase, RunError> {
    let pr_base = actions
        .and_then(|a| a.base_ref.as_deref())
        .filter(|b| !b.is_empty())
        .or_else(|| pr.map(|p| p.target.base_ref.as_str()));
    let auth = actions.map(|a| crate::vcs::Auth {
        token: a.github_token.clone(),
        host: format!("{}/", a.server_url.trim_end_matches('/')),
    });
    let source = super::base::source(settings.paths.base.as_deref(), pr_base);
    super::base::resolve(root, source, auth.as_ref()).await
}
