//! The run settings, resolved in exactly one place: CLI > `QA_LOOP_*` env > config file >
//! defaults. clap merges the first two (each flag declares its env var); [`Settings::resolve`]
//! merges the result with the file and the defaults.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::file::{ConfigFile, Mode, ProviderKind, parse_duration};
use crate::env_vars;
use crate::model::Severity;

use crate::secrets::Secret;

/// `--comment`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CommentMode {
    Sticky,
    Off,
}

/// What the check run concludes when a run stops with errors (`--error-conclusion`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ErrorConclusion {
    Failure,
    Neutral,
}

/// The flags shared by every command; each also reads `QA_LOOP_<NAME>` (clap merges CLI > env).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct FlagLayer {
    /// Config file [default: first of .github/qa-loop.yml, .github/qa-loop.yaml, qa-loop.yml, qa-loop.json]
    #[arg(long, env = "QA_LOOP_CONFIG", global = true, value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// An implementation_plan.json (verification_strategy in, QA sign-off and history out)
    #[arg(long, env = "QA_LOOP_PLAN", global = true, value_name = "PATH")]
    pub plan: Option<PathBuf>,
    /// A spec.md whose `## Acceptance Criteria` checklist is reviewed against
    #[arg(long, env = "QA_LOOP_SPEC", global = true, value_name = "PATH")]
    pub spec: Option<PathBuf>,
    /// What the change is compared with: a branch, tag or commit (the change is merge-base(REV, HEAD) to the working tree) [default: the PR's base branch on GitHub, else HEAD]
    #[arg(long, env = "QA_LOOP_BASE", global = true, value_name = "REV")]
    pub base: Option<String>,
    /// Directory for reports [default: .qa-loop]
    #[arg(long, env = "QA_LOOP_OUT_DIR", global = true, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
    /// review: never write code; fix: fix and push; suggest: fix, offer as suggestions [default: fix]
    #[arg(long, env = "QA_LOOP_MODE", global = true, value_enum)]
    pub mode: Option<Mode>,
    /// Stop after this many review iterations [default: 50]
    #[arg(long, env = "QA_LOOP_MAX_ITERATIONS", global = true, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..))]
    pub max_iterations: Option<u32>,
    /// Stop after this many errors in a row (rejections do not count) [default: 3]
    #[arg(long, env = "QA_LOOP_MAX_CONSECUTIVE_ERRORS", global = true, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..))]
    pub max_consecutive_errors: Option<u32>,
    /// Escalate to a human when an issue is seen this many times [default: 3]
    #[arg(long, env = "QA_LOOP_RECURRING_THRESHOLD", global = true, value_name = "N",
          value_parser = clap::value_parser!(u32).range(2..))]
    pub recurring_threshold: Option<u32>,
    /// Title similarity (0–1) above which two issues at the same place are the same [default: 0.8]
    #[arg(long, env = "QA_LOOP_SIMILARITY_THRESHOLD", global = true, value_name = "F",
          value_parser = parse_unit_interval)]
    pub similarity_threshold: Option<f64>,
    /// Issues below this severity are reported as suggestions, never fixed, never blocking:
    /// critical, high, medium or low [default: low]
    #[arg(long, env = "QA_LOOP_FIX_SEVERITY", global = true, value_name = "SEVERITY",
          value_parser = parse_severity)]
    pub fix_severity: Option<Severity>,
    /// Escalate when the best iteration scores below this (0–100) [default: 40]
    #[arg(long, env = "QA_LOOP_MIN_SCORE", global = true, value_name = "N",
          value_parser = clap::value_parser!(u8).range(0..=100))]
    pub min_score: Option<u8>,
    /// Model service
    #[arg(long, env = "QA_LOOP_PROVIDER", global = true, value_enum)]
    pub provider: Option<ProviderKind>,
    /// Model for both agents
    #[arg(long, env = "QA_LOOP_MODEL", global = true)]
    pub model: Option<String>,
    /// Model for the reviewer (overrides --model)
    #[arg(long, env = "QA_LOOP_REVIEWER_MODEL", global = true)]
    pub reviewer_model: Option<String>,
    /// Model for the fixer (overrides --model)
    #[arg(long, env = "QA_LOOP_FIXER_MODEL", global = true)]
    pub fixer_model: Option<String>,
    /// Base URL of an OpenAI-compatible server (or of a cloud platform's endpoint)
    #[arg(long, env = "QA_LOOP_BASE_URL", global = true, value_name = "URL")]
    pub base_url: Option<String>,
    /// Cloud region of --provider bedrock (default AWS_REGION / AWS_DEFAULT_REGION) or vertex
    /// (default CLOUD_ML_REGION)
    #[arg(long, env = "QA_LOOP_REGION", global = true)]
    pub region: Option<String>,
    /// Google Cloud project of --provider vertex (default ANTHROPIC_VERTEX_PROJECT_ID)
    #[arg(long, env = "QA_LOOP_PROJECT", global = true)]
    pub project: Option<String>,
    /// Audience of the job's OIDC token for keyless access through Anthropic or OpenAI workload
    /// identity (default: GitHub's, the repository owner's URL)
    #[arg(long, env = "QA_LOOP_OIDC_AUDIENCE", global = true)]
    pub oidc_audience: Option<String>,
    /// API key (also read from ANTHROPIC_API_KEY / OPENAI_API_KEY); never logged
    #[arg(long, env = "QA_LOOP_API_KEY", global = true, hide_env_values = true)]
    pub api_key: Option<String>,
    /// Stop cleanly when the model cost reaches this many US dollars
    #[arg(long, env = "QA_LOOP_MAX_COST_USD", global = true, value_name = "F", value_parser = parse_non_negative)]
    pub max_cost_usd: Option<f64>,
    /// Stop cleanly when this many model tokens were used
    #[arg(long, env = "QA_LOOP_MAX_TOKENS", global = true, value_name = "N",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub max_tokens: Option<u64>,
    /// Tool calls run per model answer; the rest get an error result [default: 25]
    #[arg(long, env = "QA_LOOP_MAX_TOOL_CALLS_PER_TURN", global = true, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..))]
    pub max_tool_calls_per_turn: Option<u32>,
    /// Tool calls run per iteration, reviewer and fixer together [default: 250]
    #[arg(long, env = "QA_LOOP_MAX_TOOL_CALLS_PER_ITERATION", global = true, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..))]
    pub max_tool_calls_per_iteration: Option<u32>,
    /// Thinking of the reviewer: tokens (≥ 1024) or low|medium|high|xhigh|max, sent as each model takes it [default: the model's]
    #[arg(long, env = "QA_LOOP_REVIEWER_THINKING", global = true, value_name = "TOKENS|EFFORT",
          value_parser = parse_thinking)]
    pub reviewer_thinking: Option<crate::llm::Thinking>,
    /// Thinking of the fixer: tokens (≥ 1024) or an effort level [default: the model's]
    #[arg(long, env = "QA_LOOP_FIXER_THINKING", global = true, value_name = "TOKENS|EFFORT",
          value_parser = parse_thinking)]
    pub fixer_thinking: Option<crate::llm::Thinking>,
    /// Thinking of the conversation judge: tokens (≥ 1024) or an effort level [default: the reviewer's]
    #[arg(long, env = "QA_LOOP_JUDGE_THINKING", global = true, value_name = "TOKENS|EFFORT",
          value_parser = parse_thinking)]
    pub judge_thinking: Option<crate::llm::Thinking>,
    /// Time limit of the whole run, e.g. 45m
    #[arg(long, env = "QA_LOOP_TIMEOUT", global = true, value_name = "DURATION", value_parser = parse_duration)]
    pub timeout: Option<Duration>,
    /// Recorded model session for --provider replay
    #[arg(
        long,
        env = "QA_LOOP_REPLAY_SESSION",
        global = true,
        value_name = "PATH"
    )]
    pub replay_session: Option<PathBuf>,
    /// External coding agent run instead of the built-in fixer (sh -c; $QA_FIX_REQUEST names the request file)
    #[arg(
        long,
        env = "QA_LOOP_FIXER_COMMAND",
        global = true,
        value_name = "COMMAND"
    )]
    pub fixer_command: Option<String>,
    /// Name of the check run on GitHub (default "QA Loop")
    #[arg(long, env = "QA_LOOP_CHECK_NAME", global = true, value_name = "NAME")]
    pub check_name: Option<String>,
    /// The sticky PR comment: sticky (default) or off
    #[arg(
        long,
        env = "QA_LOOP_COMMENT",
        global = true,
        value_name = "sticky|off"
    )]
    pub comment: Option<CommentMode>,
    /// How the change's code is confined: auto (a sandbox where one can be made, else say so), required (refuse to run it unsandboxed) or off [default: auto]
    #[arg(long, env = "QA_LOOP_SANDBOX", global = true, value_enum)]
    pub sandbox: Option<super::file::SandboxMode>,
    /// Check-run conclusion when the run stops with errors: failure (default) or neutral
    #[arg(
        long,
        env = "QA_LOOP_ERROR_CONCLUSION",
        global = true,
        value_name = "failure|neutral"
    )]
    pub error_conclusion: Option<ErrorConclusion>,
    /// Label of escalation issues (default qa-escalation)
    #[arg(
        long,
        env = "QA_LOOP_ESCALATION_LABEL",
        global = true,
        value_name = "LABEL"
    )]
    pub escalation_label: Option<String>,
    /// Assignees of escalation issues (comma list)
    #[arg(
        long,
        env = "QA_LOOP_ESCALATION_ASSIGNEES",
        global = true,
        value_name = "LOGINS"
    )]
    pub escalation_assignees: Option<String>,
    /// Label put on the PR while a human is needed (default qa-loop:needs-human)
    #[arg(
        long,
        env = "QA_LOOP_NEEDS_HUMAN_LABEL",
        global = true,
        value_name = "LABEL"
    )]
    pub needs_human_label: Option<String>,
    /// On a pull request, upload qa-loop.sarif to GitHub code scanning (the token needs `security-events: write`) [default: false]
    #[arg(long, env = "QA_LOOP_SARIF_UPLOAD", global = true, value_name = "BOOL",
          value_parser = clap::builder::BoolishValueParser::new(), num_args = 0..=1, default_missing_value = "true")]
    pub sarif_upload: Option<bool>,
    /// Bots whose events still start a run (comma list; `*` for all)
    #[arg(
        long,
        env = "QA_LOOP_ALLOWED_BOTS",
        global = true,
        value_name = "LOGINS"
    )]
    pub allowed_bots: Option<String>,
    /// Let `pull_request_target` runs on pull requests from this repository run the change and push fixes (default: review only; never for forks)
    #[arg(long, env = "QA_LOOP_ALLOW_PULL_REQUEST_TARGET_FIXES", global = true, value_parser = clap::builder::BoolishValueParser::new())]
    pub allow_pull_request_target_fixes: bool,
    /// The login qa-loop's token posts as, when it is a GitHub App's installation token (e.g. my-app[bot]): only its comments and issues carry trusted cross-run state [default: the token's user (GET /user), else github-actions[bot]]
    #[arg(long, env = "QA_LOOP_BOT_LOGIN", global = true, value_name = "LOGIN")]
    pub bot_login: Option<String>,
    /// Write each run event (started, reviewed, fixes applied, finished) as one JSON line to FILE, as it happens
    #[arg(long, env = "QA_LOOP_EVENTS_JSONL", global = true, value_name = "FILE")]
    pub events_jsonl: Option<PathBuf>,
    /// Exit 1 when the change is not approved [default: true]; false exits 0 (the check run still reports)
    #[arg(long, env = "QA_LOOP_FAIL_ON_REJECT", global = true, value_name = "BOOL",
          value_parser = clap::builder::BoolishValueParser::new(), num_args = 0..=1, default_missing_value = "true")]
    pub fail_on_reject: Option<bool>,
    /// When a run ends escalated, at max iterations or below the minimum score, one model call writes a failure analysis at the top of QA_HUMAN_ESCALATION.md and the escalation issue [default: true]; false keeps the factual report only
    #[arg(long, env = "QA_LOOP_FAILURE_ANALYSIS", global = true, value_name = "BOOL",
          value_parser = clap::builder::BoolishValueParser::new(), num_args = 0..=1, default_missing_value = "true")]
    pub failure_analysis: Option<bool>,
    /// Never call GitHub, even inside GitHub Actions
    #[arg(long, env = "QA_LOOP_NO_GITHUB", global = true, value_parser = clap::builder::BoolishValueParser::new())]
    pub no_github: bool,
    /// More log output
    #[arg(
        long,
        short,
        env = "QA_LOOP_VERBOSE",
        global = true, value_parser = clap::builder::BoolishValueParser::new(),
        conflicts_with = "quiet"
    )]
    pub verbose: bool,
    /// Only errors in the log output
    #[arg(long, short, env = "QA_LOOP_QUIET", global = true, value_parser = clap::builder::BoolishValueParser::new())]
    pub quiet: bool,
}

fn parse_severity(s: &str) -> Result<Severity, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "critical" => Ok(Severity::Critical),
        "high" => Ok(Severity::High),
        "medium" => Ok(Severity::Medium),
        "low" => Ok(Severity::Low),
        _ => Err(format!("`{s}` is not one of critical, high, medium, low")),
    }
}

fn parse_unit_interval(s: &str) -> Result<f64, String> {
    let f: f64 = s.parse().map_err(|_| format!("`{s}` is not a number"))?;
    if (0.0..=1.0).contains(&f) {
        Ok(f)
    } else {
        Err(format!("must be between 0 and 1, got {f}"))
    }
}

fn parse_non_negative(s: &str) -> Result<f64, String> {
    let f: f64 = s.parse().map_err(|_| format!("`{s}` is not a number"))?;
    if f >= 0.0 && f.is_finite() {
        Ok(f)
    } else {
        Err(format!("must be a non-negative number, got {f}"))
    }
}

fn parse_thinking(s: &str) -> Result<crate::llm::Thinking, String> {
    s.parse()
}

/// The built-in registry with the config's `models:` over it; the deprecated `prices:` entries
/// are read as `models:` entries (where `models:` does not name the same id), with a warning.
fn registry(file: &ConfigFile, shown: &str) -> crate::llm::registry::Registry {
    let mut entries = file.models.clone().unwrap_or_default();
    if let Some(prices) = &file.prices {
        tracing::warn!(
            "{shown}: `prices:` is deprecated: write the same entries under `models:` (see docs/configuration.md#models)"
        );
        for (id, price) in prices {
            entries.entry(id.clone()).or_insert_with(|| (*price).into());
        }
    }
    crate::llm::registry::Registry::new(entries)
}

/// `--sandbox` over `sandbox:`; a config file inside the checkout cannot switch the sandbox off
/// (the change could), only make it stricter.
/// The MCP servers; `sandbox: false` is dropped (with a warning) from a file inside the
/// checkout: the change could have written it to run its own code outside the sandbox.
fn mcp_servers(
    file: &ConfigFile,
    shown: &str,
    inside_checkout: bool,
) -> std::collections::BTreeMap<String, super::file::McpServerConfig> {
    let mut servers = file.mcp_servers.clone().unwrap_or_default();
    for (name, server) in &mut servers {
        if inside_checkout && server.sandbox == Some(false) {
            tracing::warn!(
                "{shown}: `mcp_servers.{name}.sandbox: false` is ignored in a config file inside the checkout (the change could have written it): the server runs in the sandbox; pass --config with a file outside the checkout to run it unsandboxed"
            );
            server.sandbox = None;
        }
    }
    servers
}

fn sandbox_mode(
    flags: &FlagLayer,
    file: &ConfigFile,
    shown: &str,
    inside_checkout: bool,
) -> super::file::SandboxMode {
    use super::file::SandboxMode;
    if let Some(mode) = flags.sandbox {
        return mode;
    }
    match file.sandbox.and_then(|s| s.mode) {
        Some(SandboxMode::Off) if inside_checkout => {
            tracing::warn!(
                "{shown}: `sandbox: off` is ignored in a config file inside the checkout (the change could switch it off): set the action input `sandbox` or --sandbox"
            );
            SandboxMode::Auto
        }
        Some(mode) => mode,
        None => SandboxMode::Auto,
    }
}

fn first<const N: usize>(options: [&Option<String>; N]) -> Option<String> {
    options.into_iter().find_map(|o| o.clone())
}

/// Log verbosity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verbosity {
    Quiet,
    Normal,
    Verbose,
}

/// Every run setting, resolved, by concern.
#[derive(Debug, Clone)]
pub struct Settings {
    pub paths: Paths,
    pub rules: Rules,
    pub models: Models,
    pub limits: Limits,
    pub publish: Publish,
    pub trust: TrustSettings,
    pub children: Children,
    pub output: Output,
}

/// Where the run reads and writes.
#[derive(Debug, Clone)]
pub struct Paths {
    /// The repository root (the working directory).
    pub root: PathBuf,
    pub config_path: Option<PathBuf>,
    pub plan: Option<PathBuf>,
    pub spec: Option<PathBuf>,
    pub out_dir: PathBuf,
    /// What the change is compared with (`--base`), when named.
    pub base: Option<String>,
}

/// The loop's rules.
#[derive(Debug, Clone)]
pub struct Rules {
    pub mode: Mode,
    pub max_iterations: u32,
    pub max_consecutive_errors: u32,
    pub recurring_threshold: u32,
    pub similarity_threshold: f64,
    pub min_score: u8,
    /// Issues below this severity are suggestions (`fix_severity`).
    pub fix_severity: Severity,
}

/// The model service and its models.
#[derive(Debug, Clone)]
pub struct Models {
    pub provider: Option<ProviderKind>,
    pub reviewer_model: Option<String>,
    pub fixer_model: Option<String>,
    pub base_url: Option<String>,
    /// The cloud region (`--region`, `region:`), for `bedrock` and `vertex`.
    pub region: Option<String>,
    /// The Google Cloud project (`--project`, `project:`), for `vertex`.
    pub project: Option<String>,
    /// The audience asked for the job's OIDC token (`--oidc-audience`), for federation.
    pub oidc_audience: Option<String>,
    pub api_key: Option<Secret>,
    /// Retries and time limits of model requests.
    pub model_retry: crate::retry::RetryPolicy,
    /// The model registry: the built-in table with the config's `models:` over it.
    pub registry: crate::llm::registry::Registry,
    pub replay_session: Option<PathBuf>,
}

/// What a run may spend.
#[derive(Debug, Clone)]
pub struct Limits {
    pub max_cost_usd: Option<f64>,
    pub max_tokens: Option<u64>,
    pub run_timeout: Option<Duration>,
    /// Tool calls per model answer and per iteration.
    pub tool_caps: ToolCaps,
    /// Thinking (reasoning) budgets per agent.
    pub thinking: crate::llm::ThinkingBudgets,
}

/// How the run shows on a pull request (SPEC §3.3 inputs).
#[derive(Debug, Clone)]
pub struct Publish {
    /// GitHub presentation (SPEC §3.3 inputs).
    pub check_name: String,
    pub comment: CommentMode,
    pub error_conclusion: ErrorConclusion,
    pub escalation_label: String,
    pub escalation_assignees: Vec<String>,
    pub needs_human_label: String,
    /// Upload `qa-loop.sarif` to code scanning at the end of a pull-request run.
    pub sarif_upload: bool,
}

/// Who and what is trusted, and what the run may touch.
#[derive(Debug, Clone)]
pub struct TrustSettings {
    /// Bot logins whose events start a run (GitHub Actions).
    pub allowed_bots: Vec<String>,
    /// Let `pull_request_target` runs fix and push (default: review only). A flag or the
    /// action's input only: a file in the checkout cannot widen trust.
    pub allow_pull_request_target_fixes: bool,
    /// Who qa-loop posts as (`--bot-login`; a flag or the action's input only: a file in the
    /// checkout could name an attacker). `None`: found from the token.
    pub bot_login: Option<String>,
    pub no_github: bool,
    pub allow_workflow_edits: bool,
}

/// What child processes (test commands, `run_command`, a fixer command) get.
#[derive(Debug, Clone)]
pub struct Children {
    pub fixer_command: Option<String>,
    /// MCP servers for the agents (none from a checkout's file in an untrusted run).
    pub mcp_servers: std::collections::BTreeMap<String, super::file::McpServerConfig>,
    /// Where run events are sent (none from a checkout's file in an untrusted run).
    pub notify: Option<super::file::NotifyConfig>,
    /// `env_passthrough` patterns.
    pub env_passthrough: Vec<String>,
    /// `secret_env` patterns.
    pub secret_env: Vec<String>,
    /// How they are confined (`--sandbox`, `sandbox:`).
    pub sandbox: super::file::SandboxMode,
    /// Whether they keep the network (`sandbox.network`, default on).
    pub sandbox_network: bool,
}

/// What the run prints and how it exits.
#[derive(Debug, Clone)]
pub struct Output {
    pub verbosity: Verbosity,
    /// `--events-jsonl`: one JSON line per run event.
    pub events_jsonl: Option<PathBuf>,
    /// Exit 1 when not approved (`--fail-on-reject`, default true).
    pub fail_on_reject: bool,
    /// Write a failure analysis with one model call when the run needs a human (default true).
    pub failure_analysis: bool,
}

/// Most tool calls run per model answer and per iteration: a model (or a prompt injection
/// steering it) that asks for hundreds of commands gets the rest answered with an error.
/// `submit_verdict` and `finish` are never capped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolCaps {
    pub per_turn: u32,
    pub per_iteration: u32,
}

/// The defaults of SPEC §2.
pub mod defaults {
    pub const OUT_DIR: &str = ".qa-loop";
    pub const MAX_ITERATIONS: u32 = 50;
    pub const MAX_CONSECUTIVE_ERRORS: u32 = 3;
    pub const RECURRING_THRESHOLD: u32 = 3;
    pub const SIMILARITY_THRESHOLD: f64 = 0.8;
    pub const MIN_SCORE: u8 = 40;
    pub const MAX_TOOL_CALLS_PER_TURN: u32 = 25;
    pub const MAX_TOOL_CALLS_PER_ITERATION: u32 = 250;
}

impl Settings {
    /// What child processes (test commands, `run_command`) may see of the environment: never the
    /// API key in use nor the LLM key variables' values, under any name.
    pub fn env_policy(&self) -> env_vars::EnvPolicy {
        let mut policy = env_vars::EnvPolicy::new(
            self.children.env_passthrough.clone(),
            self.children.secret_env.clone(),
        );
        if let Some(key) = &self.models.api_key {
            policy.hide_value(key.expose());
        }
        let vars = env_vars::vars();
        policy.hide_llm_keys(vars.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        policy
    }

    /// Merges the flag layer (CLI > env, already merged by clap) over the config file over the
    /// defaults. `env_key` looks up the provider key variables (injected for tests).
    pub fn resolve(
        root: &Path,
        flags: &FlagLayer,
        config_path: Option<&Path>,
        file: &ConfigFile,
        env_key: impl Fn(&str) -> Option<String>,
    ) -> Settings {
        Self::resolve_as(root, flags, config_path, file, env_key, true)
    }

    /// [`Settings::resolve`], honouring the file's trust-widening settings (`base_url`,
    /// `allow_workflow_edits`, `env_passthrough`, `fixer_command`) only when `widen` (the run
    /// is trusted, or the file is not part of the checkout). Ignored settings are warned about.
    pub fn resolve_as(
        root: &Path,
        flags: &FlagLayer,
        config_path: Option<&Path>,
        file: &ConfigFile,
        env_key: impl Fn(&str) -> Option<String>,
        widen: bool,
    ) -> Settings {
        let shown = config_path.map_or("the config file".into(), |p| p.display().to_string());
        let inside_checkout = config_path.is_some_and(|p| super::load::inside(p, root));
        if file.allow_pull_request_target_fixes.is_some() {
            tracing::warn!(
                "{shown}: `allow_pull_request_target_fixes` is ignored in a config file (a pull request could switch it on): set the action input `allow-pull-request-target-fixes` or --allow-pull-request-target-fixes"
            );
        }
        let file = &if widen {
            file.clone()
        } else {
            narrowed_for_untrusted_run(file, &shown)
        };
        let provider = flags.provider.or(file.provider);
        let api_key = api_key(flags, provider, env_key);
        Settings {
            paths: Paths::from_layers(root, config_path, flags, file),
            rules: Rules::from_layers(flags, file),
            models: Models::from_layers(root, flags, file, provider, api_key, &shown),
            limits: Limits::from_layers(flags, file),
            publish: Publish::from_flags(flags),
            trust: TrustSettings::from_layers(flags, file),
            children: Children::from_layers(flags, file, &shown, inside_checkout),
            output: Output::from_layers(flags, file),
        }
    }
}

/// The file without its trust-widening settings, warning about each one that was set.
fn narrowed_for_untrusted_run(file: &ConfigFile, shown: &str) -> ConfigFile {
    let mut narrowed = file.clone();
    for (key, set) in [
        ("base_url", narrowed.base_url.take().is_some()),
        (
            "allow_workflow_edits",
            narrowed.allow_workflow_edits.take().is_some(),
        ),
        ("env_passthrough", narrowed.env_passthrough.take().is_some()),
        ("fixer_command", narrowed.fixer_command.take().is_some()),
        ("mcp_servers", narrowed.mcp_servers.take().is_some()),
        ("notify", narrowed.notify.take().is_some()),
    ] {
        if set {
            tracing::warn!(
                "{shown}: `{key}` is ignored: the run is untrusted and this file is part of the checkout"
            );
        }
    }
    narrowed
}

/// `--api-key`, else the provider's own key variable; an empty key is no key.
fn api_key(
    flags: &FlagLayer,
    provider: Option<ProviderKind>,
    env_key: impl Fn(&str) -> Option<String>,
) -> Option<Secret> {
    flags
        .api_key
        .clone()
        .or_else(|| match provider {
            Some(ProviderKind::Anthropic) => env_key(env_vars::ANTHROPIC_API_KEY),
            Some(ProviderKind::Openai) => env_key(env_vars::OPENAI_API_KEY),
            // A compatible server is someone else's: the OpenAI key is never sent there
            // unless given explicitly (--api-key / QA_LOOP_API_KEY).
            _ => None,
        })
        .filter(|k| !k.is_empty())
        .map(Secret::new)
}

/// A non-blank flag value, else `default`.
fn non_blank_or(flag: &Option<String>, default: &str) -> String {
    flag.clone()
        .filter(|n| !n.trim().is_empty())
        .unwrap_or_else(|| default.into())
}

impl Paths {
    /// The paths: flags, else the file's (relative to `root`), else the defaults.
    fn from_layers(
        root: &Path,
        config_path: Option<&Path>,
        flags: &FlagLayer,
        file: &ConfigFile,
    ) -> Paths {
        let rel = |p: &String| root.join(p);
        Paths {
            root: root.to_path_buf(),
            config_path: config_path.map(Path::to_path_buf),
            plan: flags.plan.clone().or_else(|| file.plan.as_ref().map(rel)),
            spec: flags.spec.clone().or_else(|| file.spec.as_ref().map(rel)),
            out_dir: flags
                .out_dir
                .clone()
                .or_else(|| file.out_dir.as_ref().map(rel))
                .unwrap_or_else(|| root.join(defaults::OUT_DIR)),
            base: flags
                .base
                .clone()
                .or_else(|| file.base.clone())
                .filter(|b| !b.trim().is_empty()),
        }
    }
}

impl Rules {
    /// The loop's rules: flags, else the file, else the defaults.
    fn from_layers(flags: &FlagLayer, file: &ConfigFile) -> Rules {
        Rules {
            mode: flags.mode.or(file.mode).unwrap_or(Mode::Fix),
            max_iterations: flags
                .max_iterations
                .or(file.max_iterations)
                .unwrap_or(defaults::MAX_ITERATIONS),
            max_consecutive_errors: flags
                .max_consecutive_errors
                .or(file.max_consecutive_errors)
                .unwrap_or(defaults::MAX_CONSECUTIVE_ERRORS),
            recurring_threshold: flags
                .recurring_threshold
                .or(file.recurring_threshold)
                .unwrap_or(defaults::RECURRING_THRESHOLD),
            similarity_threshold: flags
                .similarity_threshold
                .or(file.similarity_threshold)
                .unwrap_or(defaults::SIMILARITY_THRESHOLD),
            min_score: flags
                .min_score
                .or(file.min_score)
                .unwrap_or(defaults::MIN_SCORE),
            fix_severity: flags
                .fix_severity
                .or(file.fix_severity)
                .unwrap_or(Severity::Low),
        }
    }
}

impl Models {
    /// The models, the provider and its key, and how model calls are retried.
    fn from_layers(
        root: &Path,
        flags: &FlagLayer,
        file: &ConfigFile,
        provider: Option<ProviderKind>,
        api_key: Option<Secret>,
        shown: &str,
    ) -> Models {
        let rel = |p: &String| root.join(p);
        Models {
            provider,
            // A model given on the command line (or env) beats any model in the file.
            reviewer_model: first([
                &flags.reviewer_model,
                &flags.model,
                &file.reviewer_model,
                &file.model,
            ]),
            fixer_model: first([
                &flags.fixer_model,
                &flags.model,
                &file.fixer_model,
                &file.model,
            ]),
            base_url: flags.base_url.clone().or_else(|| file.base_url.clone()),
            region: flags.region.clone().or_else(|| file.region.clone()),
            project: flags.project.clone().or_else(|| file.project.clone()),
            oidc_audience: flags.oidc_audience.clone(),
            api_key,
            model_retry: {
                let d = crate::retry::RetryPolicy::default();
                crate::retry::RetryPolicy {
                    retries: file.model_retries.unwrap_or(d.retries),
                    backoff: file.model_retry_backoff.map_or(d.backoff, |b| b.0),
                    max_wait: d.max_wait,
                    timeout: file.model_timeout.map_or(d.timeout, |t| t.0),
                }
            },
            registry: registry(file, shown),
            replay_session: flags
                .replay_session
                .clone()
                .or_else(|| file.replay_session.as_ref().map(rel)),
        }
    }
}

impl Limits {
    /// The budgets: cost, tokens, time, thinking and tool calls.
    fn from_layers(flags: &FlagLayer, file: &ConfigFile) -> Limits {
        Limits {
            max_cost_usd: flags.max_cost_usd.or(file.max_cost_usd),
            max_tokens: flags.max_tokens.or(file.max_tokens),
            run_timeout: flags.timeout.or(file.run_timeout.map(|d| d.0)),
            thinking: crate::llm::ThinkingBudgets {
                reviewer: flags.reviewer_thinking.or(file.reviewer_thinking),
                fixer: flags.fixer_thinking.or(file.fixer_thinking),
                judge: flags.judge_thinking.or(file.judge_thinking),
            },
            tool_caps: ToolCaps {
                per_turn: flags
                    .max_tool_calls_per_turn
                    .or(file.max_tool_calls_per_turn)
                    .unwrap_or(defaults::MAX_TOOL_CALLS_PER_TURN),
                per_iteration: flags
                    .max_tool_calls_per_iteration
                    .or(file.max_tool_calls_per_iteration)
                    .unwrap_or(defaults::MAX_TOOL_CALLS_PER_ITERATION),
            },
        }
    }
}

impl Publish {
    /// How results are published: flags only (a config file cannot set these).
    fn from_flags(flags: &FlagLayer) -> Publish {
        Publish {
            check_name: non_blank_or(&flags.check_name, "QA Loop"),
            comment: flags.comment.unwrap_or(CommentMode::Sticky),
            error_conclusion: flags.error_conclusion.unwrap_or(ErrorConclusion::Failure),
            escalation_label: non_blank_or(&flags.escalation_label, "qa-escalation"),
            escalation_assignees: flags
                .escalation_assignees
                .as_deref()
                .unwrap_or_default()
                .split(',')
                .map(|a| a.trim().trim_start_matches('@').to_string())
                .filter(|a| !a.is_empty())
                .collect(),
            needs_human_label: non_blank_or(&flags.needs_human_label, "qa-loop:needs-human"),
            sarif_upload: flags.sarif_upload.unwrap_or(false),
        }
    }
}

impl TrustSettings {
    /// Whom the run trusts and what it lets them do.
    fn from_layers(flags: &FlagLayer, file: &ConfigFile) -> TrustSettings {
        TrustSettings {
            allowed_bots: match &flags.allowed_bots {
                Some(list) => list
                    .split(',')
                    .map(str::trim)
                    .filter(|b| !b.is_empty())
                    .map(str::to_string)
                    .collect(),
                None => file.allowed_bots.clone().unwrap_or_default(),
            },
            allow_pull_request_target_fixes: flags.allow_pull_request_target_fixes,
            bot_login: flags
                .bot_login
                .as_deref()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(str::to_string),
            no_github: flags.no_github,
            allow_workflow_edits: file.allow_workflow_edits.unwrap_or(false),
        }
    }
}

impl Children {
    /// What child processes get: the fixer command, MCP servers, environment and sandbox.
    fn from_layers(
        flags: &FlagLayer,
        file: &ConfigFile,
        shown: &str,
        inside_checkout: bool,
    ) -> Children {
        Children {
            fixer_command: flags
                .fixer_command
                .clone()
                .or_else(|| file.fixer_command.clone())
                .filter(|c| !c.trim().is_empty()),
            mcp_servers: mcp_servers(file, shown, inside_checkout),
            env_passthrough: file.env_passthrough.clone().unwrap_or_default(),
            // The variables notifications read their secrets from, and those substituted
            // into an MCP server's `env` or `headers`, are secrets too.
            secret_env: file
                .secret_env
                .clone()
                .unwrap_or_default()
                .into_iter()
                .chain(
                    file.notify
                        .iter()
                        .flat_map(super::file::NotifyConfig::secret_vars),
                )
                .chain(
                    file.mcp_servers
                        .iter()
                        .flat_map(|s| s.values())
                        .flat_map(super::file::McpServerConfig::secret_vars),
                )
                .collect(),
            notify: file.notify.clone(),
            sandbox: sandbox_mode(flags, file, shown, inside_checkout),
            sandbox_network: file.sandbox.and_then(|s| s.network).unwrap_or(true),
        }
    }
}

impl Output {
    /// What the run prints and how it exits.
    fn from_layers(flags: &FlagLayer, file: &ConfigFile) -> Output {
        Output {
            verbosity: if flags.quiet {
                Verbosity::Quiet
            } else if flags.verbose {
                Verbosity::Verbose
            } else {
                Verbosity::Normal
            },
            events_jsonl: flags.events_jsonl.clone(),
            fail_on_reject: flags.fail_on_reject.unwrap_or(true),
            failure_analysis: flags
                .failure_analysis
                .or(file.failure_analysis)
                .unwrap_or(true),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file() -> ConfigFile {
        ConfigFile {
            max_iterations: Some(7),
            min_score: Some(55),
            mode: Some(Mode::Review),
            provider: Some(ProviderKind::Anthropic),
            ..ConfigFile::default()
        }
    }

    struct Case {
        comment: &'static str,
        flags: FlagLayer,
        file: ConfigFile,
        want_iterations: u32,
        want_min_score: u8,
        want_mode: Mode,
    }

    #[test]
    fn precedence_is_flags_then_file_then_defaults() {
        let cases = [
            Case {
                comment: "nothing set: defaults",
                flags: FlagLayer::default(),
                file: ConfigFile::default(),
                want_iterations: 50,
                want_min_score: 40,
                want_mode: Mode::Fix,
            },
            Case {
                comment: "file over defaults",
                flags: FlagLayer::default(),
                file: file(),
                want_iterations: 7,
                want_min_score: 55,
                want_mode: Mode::Review,
            },
            Case {
                comment: "flag (or env, merged by clap) over file",
                flags: FlagLayer {
                    max_iterations: Some(2),
                    mode: Some(Mode::Suggest),
                    ..FlagLayer::default()
                },
                file: file(),
                want_iterations: 2,
                want_min_score: 55,
                want_mode: Mode::Suggest,
            },
        ];
        for c in cases {
            let s = Settings::resolve(Path::new("/repo"), &c.flags, None, &c.file, |_| None);
            assert_eq!(s.rules.max_iterations, c.want_iterations, "{}", c.comment);
            assert_eq!(s.rules.min_score, c.want_min_score, "{}", c.comment);
            assert_eq!(s.rules.mode, c.want_mode, "{}", c.comment);
        }
    }

    #[test]
    fn api_key_comes_from_the_provider_variable_and_never_prints() {
        let s = Settings::resolve(
            Path::new("/r"),
            &FlagLayer::default(),
            None,
            &file(),
            |name| (name == "ANTHROPIC_API_KEY").then(|| "sk-ant-canary".to_string()),
        );
        let key = s.models.api_key.clone().expect("key from env");
        assert_eq!(key.expose(), "sk-ant-canary");
        assert!(!format!("{s:?}").contains("canary"));
    }

    #[test]
    fn a_model_on_the_command_line_beats_models_in_the_file() {
        let f = ConfigFile {
            reviewer_model: Some("file-reviewer".into()),
            model: Some("file".into()),
            ..ConfigFile::default()
        };
        let flags = FlagLayer {
            model: Some("cli".into()),
            ..FlagLayer::default()
        };
        let s = Settings::resolve(Path::new("/r"), &flags, None, &f, |_| None);
        assert_eq!(
            (
                s.models.reviewer_model.as_deref(),
                s.models.fixer_model.as_deref()
            ),
            (Some("cli"), Some("cli"))
        );
        let s = Settings::resolve(Path::new("/r"), &FlagLayer::default(), None, &f, |_| None);
        assert_eq!(
            (
                s.models.reviewer_model.as_deref(),
                s.models.fixer_model.as_deref()
            ),
            (Some("file-reviewer"), Some("file"))
        );
    }

    #[test]
    fn paths_from_the_file_are_relative_to_the_root() {
        let f = ConfigFile {
            plan: Some("plan.json".into()),
            ..ConfigFile::default()
        };
        let s = Settings::resolve(Path::new("/repo"), &FlagLayer::default(), None, &f, |_| {
            None
        });
        assert_eq!(s.paths.plan.unwrap(), PathBuf::from("/repo/plan.json"));
        assert_eq!(s.paths.out_dir, PathBuf::from("/repo/.qa-loop"));
    }
}
