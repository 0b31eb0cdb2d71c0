//! The command line (SPEC §2): parsing, one function per command, exit codes decided in one
//! place ([`main`]).

pub mod demo;
pub mod models;

use crate::github::actions::inert;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::config::{self, FlagLayer, Verbosity};
use crate::engine::matcher::Matcher;
use crate::error::{Exit, InputError};
use crate::report::status;
use crate::run::RunError;

/// An automated QA loop for pull requests: verify, review with an LLM, fix, repeat until approved.
#[derive(Debug, Parser)]
#[command(name = "qa-loop", version, about, long_about = None, after_help = "Exit codes: 0 approved · 1 not approved · 2 bad input · 3 escalated to a human · 4 stopped by errors\nEvery flag can also be set as QA_LOOP_<FLAG> (e.g. QA_LOOP_MAX_ITERATIONS); CLI > env > config file > defaults.")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    #[command(flatten)]
    pub flags: FlagLayer,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// The main job: verify → review → fix loop → report
    Run,
    /// Print QA status, iteration history and recurring issues from a plan or qa-result.json
    Status {
        /// Print JSON for machines
        #[arg(long)]
        json: bool,
    },
    /// Load config, plan and spec; print the resolved strategy and criteria (exit 2 on any error)
    Validate {
        /// Print JSON for machines
        #[arg(long)]
        json: bool,
    },
    /// List the model registry (API, limits, prices, status and retirement date) with the config's `models:` applied
    Models {
        /// Print JSON for machines (schema/models.schema.json)
        #[arg(long)]
        json: bool,
        /// Print the Markdown table of docs/providers.md
        #[arg(long, conflicts_with = "json")]
        markdown: bool,
    },
    /// Run the whole loop offline on the bundled example with a replayed model session
    Demo {
        /// Create the demo project here instead of a new temporary directory
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
}

/// Entry point of the binary.
pub fn main() -> ExitCode {
    // `qa-loop __sandbox-exec`: confine one command and exec it (never returns).
    crate::sandbox::helper::run_if_helper();
    harden();
    let cli = Cli::parse();
    init_logging(&cli.flags);
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return Exit::Errors.into();
        }
    };
    let exit = runtime.block_on(dispatch(cli));
    drop(runtime);
    crate::vcs::remove_private_dir();
    exit.into()
}

/// Keeps the secrets in this process (SPEC §10): non-dumpable, so a test command or a daemon it
/// leaves behind, running as the same user, cannot read `/proc/<qa-loop>/environ`, `mem` or
/// `fd/*`. A child starts dumpable again at `exec`; children never get the secrets.
fn harden() {
    #[cfg(target_os = "linux")]
    if let Err(e) = nix::sys::prctl::set_dumpable(false) {
        eprintln!("qa-loop: warning: cannot make the process non-dumpable: {e}");
    }
}

fn init_logging(flags: &FlagLayer) {
    let level = if flags.quiet {
        "error"
    } else if flags.verbose {
        "debug"
    } else {
        "info"
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("QA_LOOP_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(format!("qa_loop={level}")));
    let color = crate::env_vars::var(crate::env_vars::NO_COLOR).is_none()
        && std::io::IsTerminal::is_terminal(&std::io::stderr());
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        // Model and test text reach the log: no line of it may act as a workflow command.
        .with_writer(crate::github::actions::InertStderr)
        .with_ansi(color)
        .with_target(false)
        .without_time()
        .try_init();
}

fn bad_input(e: &InputError) -> Exit {
    eprintln!("error: {}", inert(&e.to_string()));
    Exit::BadInput
}

fn run_error(e: &RunError) -> Exit {
    match e {
        RunError::Refused(why) => eprintln!("qa-loop: {}", inert(why)),
        e => eprintln!("error: {}", inert(&e.to_string())),
    }
    match e {
        RunError::Input(_) | RunError::Usage(_) | RunError::Refused(_) => Exit::BadInput,
        RunError::Io(_) => Exit::Errors,
    }
}

/// `qa-loop run`: the context (trust first, SPEC §10), the run, then the step's outputs.
async fn run_command(root: &std::path::Path, flags: &FlagLayer) -> Exit {
    use crate::github::actions::{ActionsEnv, CommandFiles};
    use crate::run::context::{Prepared, prepare};
    let actions = ActionsEnv::from_env(crate::env_vars::var);
    // What the runner's file commands hold now: anything written to them while the change's
    // code runs is discarded before qa-loop writes its outputs.
    let command_files = match &actions {
        Some(_) => CommandFiles::snapshot(crate::env_vars::var),
        None => CommandFiles::default(),
    };
    let ctx = match prepare(root, flags, actions.as_ref()).await {
        Ok(Prepared::Run(ctx)) => ctx,
        Ok(Prepared::Skip(why)) => {
            skipped(&why);
            return Exit::Approved;
        }
        Err(e) => return run_error(&e),
    };
    let result = crate::run::run(&ctx).await;
    // Nothing of the change is alive when the outputs are written.
    ctx.sandbox.settle();
    for name in command_files.restore() {
        tracing::warn!("${name} was written to during the run (not by qa-loop): discarded");
    }
    let r = match result {
        Ok(r) => r,
        Err(e) => return run_error(&e),
    };
    let settings = &ctx.inputs.settings;
    if settings.output.verbosity != Verbosity::Quiet {
        eprintln!(
            "qa-loop: {} — report: {}",
            r.outcome.verdict(),
            r.report_path.display()
        );
    }
    if let Some(env) = &actions
        && let Err(e) = publish_to_actions(env, &r)
    {
        eprintln!("qa-loop: cannot write the step outputs or summary: {e}");
    }
    match r.outcome.exit() {
        Exit::NotApproved if !settings.output.fail_on_reject => {
            eprintln!(
                "qa-loop: not approved; fail-on-reject is false, so the step succeeds (the check run reports the verdict)"
            );
            Exit::Approved
        }
        exit => exit,
    }
}

/// Nothing to do for this event: a notice in the workflow, exit 0.
fn skipped(why: &str) {
    println!(
        "::notice title=qa-loop skipped::{}",
        crate::github::actions::escape_data(why)
    );
    eprintln!("qa-loop: skipped: {why}");
}

fn cwd() -> PathBuf {
    std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."))
}

async fn dispatch(cli: Cli) -> Exit {
    let root = cwd();
    match cli.command {
        Command::Validate { json } => match config::load_inputs(&root, &cli.flags) {
            Ok(inputs) => {
                // Suites chosen by path: what the current change (against `base`, else HEAD)
                // touches decides which would run.
                let by_path = inputs.strategy.suites.iter().any(config::Suite::by_path);
                let changed = if by_path {
                    let base = inputs.settings.paths.base.as_deref().unwrap_or("HEAD");
                    let base = crate::vcs::merge_base(&root, base).await;
                    crate::vcs::changed_files(&root, &crate::vcs::DiffBase::from(base.as_str()))
                        .await
                        .ok()
                } else {
                    None
                };
                // Suite commands and changed paths are the repository's text.
                let view = validate_view(&inputs, json, changed.as_deref());
                print!("{}", inert(&view));
                Exit::Approved
            }
            Err(e) => bad_input(&e),
        },
        Command::Status { json } => status_cmd(&root, &cli.flags, json),
        Command::Run => run_command(&root, &cli.flags).await,
        Command::Models { json, markdown } => models::command(&root, &cli.flags, json, markdown),
        Command::Demo { dir } => {
            eprintln!(
                "qa-loop demo: the model's answers are REPLAYED from a recorded session; tests, tools and files are real."
            );
            match demo::demo(dir.as_deref(), &cli.flags).await {
                Ok(d) => {
                    println!("Demo project:   {}", d.project.display());
                    println!(
                        "Replayed model: {} (recorded answers, no model was called)",
                        d.session.display()
                    );
                    println!(
                        "Verdict:        {} after {} iteration(s)",
                        d.result.outcome.verdict(),
                        iterations(&d.result.out_dir)
                    );
                    println!("Reports:        {}", d.result.out_dir.display());
                    println!("  {}", d.result.report_path.display());
                    println!(
                        "  {}",
                        d.result.out_dir.join(crate::report::files::JUNIT).display()
                    );
                    println!(
                        "  {}",
                        d.result.out_dir.join(crate::report::files::SARIF).display()
                    );
                    println!(
                        "  {}",
                        d.result
                            .out_dir
                            .join(crate::report::files::RESULT)
                            .display()
                    );
                    println!(
                        "See the fix the replayed fixer made: git -C {} diff",
                        d.project.display()
                    );
                    d.result.outcome.exit()
                }
                Err(e) => run_error(&e),
            }
        }
    }
}

/// Step outputs (SPEC §3.3) and the job summary, from the result files the run wrote.
fn publish_to_actions(
    env: &crate::github::actions::ActionsEnv,
    r: &crate::run::RunResult,
) -> std::io::Result<()> {
    use crate::github::actions;
    let result: serde_json::Value =
        std::fs::read_to_string(r.out_dir.join(crate::report::files::RESULT))
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default();
    let field = |p: &str| match result.pointer(p) {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(serde_json::Value::Null) | None => String::new(),
        Some(v) => v.to_string(),
    };
    if let Some(path) = &env.output {
        let issues = result["issues"].as_array().map_or(0, Vec::len);
        actions::write_outputs(
            path,
            &[
                ("verdict", r.outcome.verdict().to_string()),
                ("score", field("/score")),
                ("iterations", field("/iterations")),
                ("issues", issues.to_string()),
                ("report-path", r.report_path.display().to_string()),
                (
                    "junit-path",
                    r.out_dir
                        .join(crate::report::files::JUNIT)
                        .display()
                        .to_string(),
                ),
                (
                    "escalation-issue",
                    r.escalation_issue
                        .map(|n| n.to_string())
                        .unwrap_or_default(),
                ),
                ("commits-pushed", r.commits_pushed.to_string()),
                ("tokens", field("/tokens/total")),
                ("cost-usd", field("/cost_usd")),
            ],
        )?;
    }
    if let Some(path) = &env.step_summary {
        let report = std::fs::read_to_string(&r.report_path).unwrap_or_default();
        let pointer = match env.run_url() {
            Some(url) => format!(
                "in `{}` (the run's artifacts: {url})",
                r.report_path.display()
            ),
            None => format!("in `{}`", r.report_path.display()),
        };
        actions::write_summary(path, &report, &pointer)?;
    }
    Ok(())
}

fn iterations(out_dir: &std::path::Path) -> String {
    std::fs::read_to_string(out_dir.join(crate::report::files::RESULT))
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|v| v.get("iterations").and_then(serde_json::Value::as_u64))
        .map_or("?".into(), |n| n.to_string())
}

fn status_cmd(root: &std::path::Path, flags: &FlagLayer, json: bool) -> Exit {
    let loaded = match config::load::load_config(flags.config.as_deref(), root) {
        Ok(l) => l,
        Err(e) => return bad_input(&e),
    };
    let (path, file) = loaded.map_or((None, config::ConfigFile::default()), |(p, f)| (Some(p), f));
    let settings = config::Settings::resolve(root, flags, path.as_deref(), &file, |_| None);
    let source = settings
        .paths
        .plan
        .clone()
        .unwrap_or_else(|| settings.paths.out_dir.join(crate::report::files::RESULT));
    if !source.exists() {
        return bad_input(&InputError::file(
            &source,
            "no QA state found: pass --plan implementation_plan.json, or run `qa-loop run` first",
        ));
    }
    let text = match crate::nofollow::read_text(&source) {
        Ok(t) => t,
        Err(e) => return bad_input(&e),
    };
    let matcher = Matcher::new(settings.rules.similarity_threshold);
    match status::from_text(&source, &text, &matcher, settings.rules.recurring_threshold) {
        Ok(view) => {
            for w in &view.warnings {
                eprintln!("qa-loop: warning: {}: {}", source.display(), inert(w));
            }
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&view).expect("status serializes")
                );
            } else {
                // Titles are the plan's (a pull request's) text: no line of them may act as a
                // workflow command when `status` runs in a job.
                print!("{}", inert(&status::render_human(&view)));
            }
            Exit::Approved
        }
        Err(e) => bad_input(&e),
    }
}

/// What `qa-loop validate` prints: the resolved inputs, section by section (or as JSON).
fn validate_view(inputs: &config::Inputs, json: bool, changed: Option<&[String]>) -> String {
    let s = &inputs.settings;
    let st = &inputs.strategy;
    if json {
        return validate_json(s, st);
    }
    let mut out = String::new();
    paths_summary(&mut out, s);
    models_summary(&mut out, s);
    risk_summary(&mut out, st);
    for suite in &st.suites {
        suite_summary(&mut out, suite, changed);
    }
    flaky_summary(&mut out, st);
    pattern_checks_summary(&mut out, st.pattern_checks.as_ref());
    if let Some(c) = st
        .conversations
        .as_ref()
        .filter(|c| !c.scenarios.is_empty())
    {
        conversations_summary(&mut out, c);
    }
    if let Some(b) = &st.browser {
        browser_summary(&mut out, b);
    }
    for (name, m) in &s.children.mcp_servers {
        mcp_server_summary(&mut out, name, m);
    }
    if let Some(n) = &s.children.notify {
        notifications_summary(&mut out, n);
    }
    criteria_summary(&mut out, &st.criteria);
    checks_summary(&mut out, st);
    loop_summary(&mut out, s);
    credentials_summary(&mut out, s);
    out
}

/// Which cloud credentials of this environment the suites will not see, and which `pass_env`
/// passes on (SPEC §5.1).
fn credentials_summary(out: &mut String, s: &config::Settings) {
    use crate::env_vars::{CLOUD_CREDENTIALS, var, wildcard};
    let present: Vec<&str> = CLOUD_CREDENTIALS
        .iter()
        .copied()
        .filter(|n| var(n).is_some_and(|v| !v.is_empty()))
        .collect();
    let passed = |n: &str| s.children.env_passthrough.iter().any(|p| wildcard(p, n));
    let (given, kept): (Vec<&str>, Vec<&str>) = present.into_iter().partition(|n| passed(n));
    if !kept.is_empty() {
        out.push_str(&format!(
            "\ncredentials kept from the suites (and hidden in the sandbox): {}\n",
            kept.join(", ")
        ));
    }
    if !given.is_empty() {
        out.push_str(&format!(
            "credentials the suites see (`pass_env`, a deliberate hole): {}\n",
            given.join(", ")
        ));
    }
}

/// `validate --json`: the resolved settings, models and strategy as one JSON object.
fn validate_json(s: &config::Settings, st: &config::Strategy) -> String {
    let v = serde_json::json!({
        "config": s.paths.config_path,
        "plan": s.paths.plan,
        "spec": s.paths.spec,
        "out_dir": s.paths.out_dir,
        "mode": s.rules.mode,
        "max_iterations": s.rules.max_iterations,
        "max_consecutive_errors": s.rules.max_consecutive_errors,
        "recurring_threshold": s.rules.recurring_threshold,
        "similarity_threshold": s.rules.similarity_threshold,
        "min_score": s.rules.min_score,
        "fix_severity": s.rules.fix_severity,
        "base": s.paths.base,
        "provider": s.models.provider,
        "models": crate::run::provider::resolved_models(s)
            .into_iter()
            .map(|m| (m.role.to_string(), m.to_json()))
            .collect::<serde_json::Map<_, _>>(),
        "strategy": st,
    });
    serde_json::to_string_pretty(&v).expect("serializes") + "\n"
}

/// The config, plan and spec files in use, and the base the change is taken against.
fn paths_summary(out: &mut String, s: &config::Settings) {
    let show = |p: &Option<PathBuf>| {
        p.as_ref()
            .map_or("(none)".to_string(), |p| p.display().to_string())
    };
    if let Some(name) =
        crate::env_vars::var(crate::env_vars::GITHUB_EVENT_NAME).filter(|n| !n.is_empty())
    {
        out.push_str(&format!(
            "event:  {}\n",
            crate::github::event::handling(&name)
        ));
    }
    out.push_str(&format!(
        "config: {}\nplan:   {}\nspec:   {}\n\n",
        show(&s.paths.config_path),
        show(&s.paths.plan),
        show(&s.paths.spec)
    ));
    out.push_str(&match &s.paths.base {
        Some(b) => format!("base: {b} (the change is merge-base({b}, HEAD) to the working tree)\n"),
        None => "base: the pull request's base branch on GitHub, else HEAD (uncommitted work)\n"
            .to_string(),
    });
}

/// One line per model role, as resolved from the settings.
fn models_summary(out: &mut String, s: &config::Settings) {
    for m in crate::run::provider::resolved_models(s) {
        out.push_str(&m.describe());
        out.push('\n');
    }
}

/// The risk level, and the tests found that no suite runs.
fn risk_summary(out: &mut String, st: &config::Strategy) {
    out.push_str(&format!(
        "risk level: {}{}\n",
        st.risk_level.as_str(),
        if st.human_signoff_required {
            " (a human sign-off is required)"
        } else {
            ""
        }
    ));
    if st.no_test_project {
        out.push_str(
            "no tests configured: QA validates by inspection and writes MANUAL_TEST_PLAN.md\n",
        );
    }
    if !st.discovered.is_empty() {
        out.push_str(
            "tests found but no suite runs them (add the command to a suite's `commands`):\n",
        );
        for d in &st.discovered {
            out.push_str(&format!("  $ {}   # {}\n", d.command, d.evidence));
        }
    }
}

/// One suite: whether it gates, its commands, when it runs, and the reports it reads.
fn suite_summary(out: &mut String, suite: &config::Suite, changed: Option<&[String]>) {
    out.push_str(&format!(
        "\n{} ({}, by {}; timeout {}):\n",
        suite.kind.key(),
        if suite.required {
            "required"
        } else {
            "advisory"
        },
        match suite.required_by {
            config::strategy::RequiredBy::Config => "config",
            config::strategy::RequiredBy::RiskLevel => "risk level",
        },
        humantime::format_duration(suite.timeout)
    ));
    let ingest_only = !suite.junit.is_empty() || !suite.coverage.is_empty();
    match (suite.commands.is_empty(), ingest_only) {
        (true, false) => out.push_str("  (no commands and no reports: this gate fails)\n"),
        (true, true) => out.push_str(
            "  (no commands: results are read from reports produced elsewhere; after a fix they wait for those jobs to run again)\n",
        ),
        _ => {}
    }
    if let Some(dir) = &suite.working_directory {
        out.push_str(&format!("  in {dir}/ (`working_directory`)\n"));
    }
    for (c, from) in suite.commands.iter().zip(&suite.sources) {
        out.push_str(&format!("  $ {c}\n      from {from}\n"));
    }
    if suite.by_path() {
        suite_paths_summary(out, suite, changed);
    }
    for g in &suite.junit {
        out.push_str(&format!("  junit: {g}\n"));
    }
    for g in &suite.coverage {
        out.push_str(&format!("  coverage: {g}\n"));
    }
    if let Some(m) = suite.minimum_coverage {
        out.push_str(&format!("  minimum coverage: {m}%\n"));
        if suite.coverage.is_empty() {
            out.push_str("  (a minimum without `coverage` reports: this gate fails)\n");
        }
    }
    if suite.allow_no_tests {
        out.push_str("  running no test passes (`allow_no_tests: true`)\n");
    }
}

/// How failing tests are re-run, and what a flaky one does (only said when some suite reads
/// JUnit reports, the only results that name tests).
fn flaky_summary(out: &mut String, st: &config::Strategy) {
    if st.suites.iter().all(|s| s.junit.is_empty()) {
        return;
    }
    let policy = match st.flaky {
        config::file::FlakyPolicy::Report => "reported, never blocking",
        config::file::FlakyPolicy::Fail => "fail their suite (`flaky: fail`)",
    };
    out.push_str(&match st.flaky_reruns {
        0 => format!("\nfailing tests: not re-run (`flaky_reruns: 0`); flaky ones are {policy}\n"),
        n => format!(
            "\nfailing tests: re-run {n} time(s) before they count as defects; those that pass then are flaky: {policy}\n"
        ),
    });
}

/// A path-filtered suite's paths, and whether it would run for the current change.
fn suite_paths_summary(out: &mut String, suite: &config::Suite, changed: Option<&[String]>) {
    if !suite.paths.is_empty() {
        out.push_str(&format!("  paths: {}\n", suite.paths.join(", ")));
    }
    if !suite.paths_ignore.is_empty() {
        out.push_str(&format!(
            "  paths_ignore: {}\n",
            suite.paths_ignore.join(", ")
        ));
    }
    out.push_str(&match (suite.always, changed) {
        (true, _) => "  runs always (`always: true`)\n".to_string(),
        (false, None) => "  the current change is unknown here: it would run\n".to_string(),
        (false, Some(files)) => match suite.skip_reason(Some(files)) {
            None => format!(
                "  for the current change ({} file(s)): it would run\n",
                files.len()
            ),
            Some(why) => format!("  for the current change: {why}\n"),
        },
    });
}

/// The pattern checks on added lines: off, or the blocking and advisory rule ids.
fn pattern_checks_summary(out: &mut String, checks: Option<&config::file::PatternChecksConfig>) {
    match checks {
        None => out.push_str("\npattern checks: off\n"),
        Some(p) => {
            let rules = crate::verify::patterns::rules(p);
            let list = |blocking: bool| {
                let mut ids: Vec<&str> = rules
                    .iter()
                    .filter(|r| r.blocking == blocking)
                    .map(|r| r.id.as_str())
                    .collect();
                ids.dedup();
                if ids.is_empty() {
                    "none".to_string()
                } else {
                    ids.join(", ")
                }
            };
            out.push_str(&format!(
                "\npattern checks on added lines: blocking {}; advisory {}\n",
                list(true),
                list(false)
            ));
            if !p.exclude.is_empty() {
                out.push_str(&format!("  excluded: {}\n", p.exclude.join(", ")));
            }
        }
    }
}

/// Browser verification: the server, how the app starts, and each page with its checks.
fn browser_summary(out: &mut String, b: &config::file::BrowserVerificationConfig) {
    out.push_str(&format!(
        "\nbrowser verification: {} page(s) through the MCP server `{}`, {}\n",
        b.pages.len(),
        b.server(),
        if b.required == Some(true) {
            "required (each page a gate)"
        } else {
            "advisory"
        }
    ));
    if let Some(start) = &b.start {
        out.push_str(&format!("  start: {start}\n"));
    }
    if let Some(url) = &b.ready_url {
        out.push_str(&format!("  ready when: {url} answers 2xx\n"));
    }
    for p in &b.pages {
        let checks = if p.checks.is_empty() {
            "renders, no-console-errors".to_string()
        } else {
            p.checks.join(", ")
        };
        out.push_str(&format!(
            "  browser:{}  [{checks}]\n",
            b.page_url(&p.url).unwrap_or_else(|_| p.url.clone())
        ));
    }
}

/// One MCP server: how it is reached, the tools it offers and the agents that get it.
fn mcp_server_summary(out: &mut String, name: &str, m: &config::file::McpServerConfig) {
    let how = match (&m.command, &m.url) {
        (Some(c), _) => format!("stdio: {c} {}", m.args.join(" ")),
        (None, Some(u)) => format!("streamable HTTP: {u}"),
        (None, None) => String::new(),
    };
    let agents: Vec<&str> = m
        .agents
        .as_deref()
        .unwrap_or(&[crate::config::file::McpAgent::Reviewer])
        .iter()
        .map(|a| match a {
            crate::config::file::McpAgent::Reviewer => "reviewer",
            crate::config::file::McpAgent::Fixer => "fixer",
            crate::config::file::McpAgent::Judge => "judge",
        })
        .collect();
    out.push_str(&format!(
        "\nMCP server `{name}` ({}): tools {}, for the {}\n",
        how.trim_end(),
        m.tools.as_ref().map_or("all".to_string(), |t| t.join(", ")),
        agents.join(", ")
    ));
}

/// The notification targets and events, and the secrets not set in this environment.
fn notifications_summary(out: &mut String, n: &config::file::NotifyConfig) {
    let mut targets = Vec::new();
    if n.linear.is_some() {
        targets.push("linear");
    }
    if n.slack.is_some() {
        targets.push("slack");
    }
    if n.telegram.is_some() {
        targets.push("telegram");
    }
    if n.webhook.is_some() {
        targets.push("webhook");
    }
    let events: Vec<&str> = n
        .events
        .as_deref()
        .unwrap_or(&crate::config::file::NotifyEvent::ALL)
        .iter()
        .map(|e| e.as_str())
        .collect();
    let unset: Vec<String> = n
        .secret_vars()
        .into_iter()
        .filter(|v| crate::env_vars::var(v).is_none_or(|x| x.trim().is_empty()))
        .collect();
    out.push_str(&format!(
        "\nnotifications: {} on {}{}\n",
        targets.join(", "),
        events.join(", "),
        if unset.is_empty() {
            String::new()
        } else {
            format!(" (not set here: {})", unset.join(", "))
        }
    ));
}

/// The acceptance criteria, numbered, each with where it came from.
fn criteria_summary(out: &mut String, criteria: &[config::Criterion]) {
    out.push_str(&format!("\nacceptance criteria ({}):\n", criteria.len()));
    if criteria.is_empty() {
        out.push_str("  (none: the reviewer will judge against the PR title and description)\n");
    }
    for (i, c) in criteria.iter().enumerate() {
        out.push_str(&format!(
            "  {}. {}\n      from {}\n",
            i + 1,
            c.text,
            c.origin
        ));
    }
}

/// The plan's subtask checks and the checks it asks the reviewer to walk through.
fn checks_summary(out: &mut String, st: &config::Strategy) {
    if !st.checks.is_empty() {
        out.push_str(&format!(
            "\nsubtask checks ({}, advisory: run after the suites, evidence for the reviewer):\n",
            st.checks.len()
        ));
        for c in &st.checks {
            out.push_str(&format!(
                "  check:{} $ {}{}\n      from {}\n",
                c.name,
                c.command,
                c.expected
                    .as_deref()
                    .map(|e| format!("   # expects: {e}"))
                    .unwrap_or_default(),
                c.origin
            ));
        }
    }
    if !st.reviewer_checks.is_empty() {
        out.push_str(&format!(
            "\nchecks the plan asks the reviewer to walk through ({}):\n",
            st.reviewer_checks.len()
        ));
        for c in &st.reviewer_checks {
            out.push_str(&format!("  - {}\n      from {}\n", c.text, c.origin));
        }
    }
}

/// The loop's limits and the model provider.
fn loop_summary(out: &mut String, s: &config::Settings) {
    out.push_str(&format!(
        "\nloop: mode {}, max {} iterations, {} consecutive errors, recurring threshold {}, similarity {}, min score {}, fix severity {}\n",
        serde_json::to_value(s.rules.mode).unwrap().as_str().unwrap_or(""),
        s.rules.max_iterations,
        s.rules.max_consecutive_errors,
        s.rules.recurring_threshold,
        s.rules.similarity_threshold,
        s.rules.min_score,
        s.rules.fix_severity.as_str()
    ));
    out.push_str(&format!(
        "provider: {}\n",
        s.models
            .provider
            .map_or("(none)".to_string(), |p| serde_json::to_value(p)
                .unwrap()
                .as_str()
                .unwrap_or("")
                .to_string())
    ));
}

/// The conversation suite as `validate` prints it.
fn conversations_summary(out: &mut String, c: &crate::config::ConversationsConfig) {
    use crate::conversations::scenario::Limits;
    let wire = if c.request_template.is_some() {
        format!(
            "JSON template, reply at `{}`",
            c.response_path.as_deref().unwrap_or_default()
        )
    } else {
        "OpenAI chat completions".to_string()
    };
    out.push_str(&format!(
        "\nconversations: {} scenario(s) against {} ({wire})\n",
        c.scenarios.len(),
        c.endpoint.as_deref().unwrap_or_default()
    ));
    if let Some(start) = &c.start {
        out.push_str(&format!("  start: {start}\n"));
    }
    let ready = c
        .ready_timeout
        .map_or(crate::conversations::DEFAULT_READY_TIMEOUT, |d| d.0);
    match (&c.ready_url, &c.start) {
        (Some(url), _) => out.push_str(&format!(
            "  ready: GET {url} answers 2xx (within {})\n",
            humantime::format_duration(ready)
        )),
        (None, Some(_)) => out.push_str(&format!(
            "  ready: the endpoint's port accepts connections (within {})\n",
            humantime::format_duration(ready)
        )),
        (None, None) => {}
    }
    for s in &c.scenarios {
        let l = Limits::of(s);
        out.push_str(&format!(
            "  - {} [{}]: max {} turns (hard {}), {}s (hard {}s), approvals {}{}\n",
            s.name,
            if l.required { "required" } else { "advisory" },
            l.max_turns,
            l.hard_turns(),
            l.max_time.as_secs(),
            l.hard_time().as_secs(),
            serde_json::to_value(l.approval_mode)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
            if s.context.is_some() {
                ", context for the judge"
            } else {
                ""
            }
        ));
    }
}
