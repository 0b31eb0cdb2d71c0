//! Conversation scenarios (SPEC §8): for projects that are themselves chat agents, a judge model
//! drives the project's agent through its real chat endpoint and decides, turn by turn, whether
//! each scenario passes, fails or continues.
//!
//! - [`app`]: the `start` command, the readiness probe, the stop at the end;
//! - [`endpoint`]: the agent's wire format (chat completions or a JSON template, streamed or not);
//! - [`judge`]: the judge's task and answer;
//! - [`scenario`]: the pure decisions (limits, approvals, gates).
//!
//! The agent only ever receives the scenario's `query`, the judge's follow-ups and the approval
//! answers; `context` goes to the judge alone.

pub mod app;
pub mod endpoint;
pub mod judge;
pub mod scenario;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::config::{ConversationsConfig, ScenarioConfig};
use crate::model::{Gate, GateStatus, IssueType, ScenarioOutcome, ScenarioResult, Turn};
use crate::verify::process::Launcher;
use app::App;
use endpoint::{Endpoint, Role};
use judge::{Brief, Judge};
use scenario::{Limits, Next, first_line};

/// How long `ready_url` (or the endpoint's port) is waited for by default.
pub const DEFAULT_READY_TIMEOUT: Duration = Duration::from_secs(60);
/// Characters of an agent reply kept in the transcript (the agent gets its whole reply back).
const REPLY_KEPT: usize = 16_000;
/// How long a refused connection waits for the app's exit to show.
const CRASH_SETTLE: Duration = Duration::from_millis(500);

/// The conversation suite of a verification pass.
pub struct Conversations<'a> {
    pub config: &'a ConversationsConfig,
    pub judge: Judge<'a>,
    pub launcher: Launcher,
    pub root: PathBuf,
}

/// What the suite produced.
#[derive(Debug, Default)]
pub struct SuiteOutcome {
    pub gates: Vec<Gate>,
    pub results: Vec<ScenarioResult>,
}

impl Conversations<'_> {
    /// Starts the app, runs every scenario, stops the app. `log` receives the app's output.
    pub async fn run(&self, log: Option<PathBuf>) -> SuiteOutcome {
        let cfg = self.config;
        let required = cfg.scenarios.iter().any(|s| Limits::of(s).required);
        if cfg.scenarios.is_empty() {
            return SuiteOutcome::default();
        }
        let endpoint = match Endpoint::new(cfg) {
            Ok(e) => e,
            Err(e) => return self.not_run(required, &e),
        };
        let mut app = match self.ready_app(&endpoint, log).await {
            Ok(app) => app,
            Err(why) => return self.not_run(required, &why),
        };
        let (results, gone, found_gone) = self.run_scenarios(&endpoint, &mut app).await;
        app.stop().await;
        let gates = suite_gates(required, &results, found_gone, gone);
        SuiteOutcome { gates, results }
    }

    /// The suite when none of its scenarios could run: the failed `conversations` gate and
    /// every scenario unrun, for `why`.
    fn not_run(&self, required: bool, why: &str) -> SuiteOutcome {
        SuiteOutcome {
            gates: vec![suite_gate(
                required,
                crate::text::clip(first_line(why), 300),
                why,
            )],
            results: self
                .config
                .scenarios
                .iter()
                .map(|s| unrun(s, &format!("not run: {}", first_line(why))))
                .collect(),
        }
    }

    /// Starts the app (when `start` is set) and waits until it is ready; why it is not (the
    /// app stopped by then).
    async fn ready_app(
        &self,
        endpoint: &Endpoint,
        log: Option<PathBuf>,
    ) -> Result<App<'static>, String> {
        let cfg = self.config;
        let cancel = self.launcher.cancel().clone();
        let mut app = match &cfg.start {
            Some(cmd) => App::spawn(&self.launcher, cmd.clone(), self.root.clone(), log),
            None => App::none(),
        };
        let ready_timeout = cfg.ready_timeout.map_or(DEFAULT_READY_TIMEOUT, |d| d.0);
        // Readiness, given up at once on SIGINT/SIGTERM.
        let probe = async {
            let probed = async {
                match (&cfg.ready_url, &cfg.start) {
                    (Some(url), _) => app::probe_url(url, ready_timeout).await,
                    (None, Some(_)) => app::probe_port(&endpoint.url, ready_timeout).await,
                    (None, None) => Ok(()),
                }
            };
            tokio::select! {
                reason = cancel.cancelled() => Err(format!("qa-loop was stopped by {reason}")),
                r = probed => r,
            }
        };
        let ready = app.during(probe).await;
        let not_ready = match (ready, cancel.reason()) {
            (Ok(Ok(())), _) => None,
            (_, Some(reason)) => Some(format!("qa-loop was stopped by {reason}")),
            (Err(app::Exited(why)), None) => Some(format!(
                "the agent under test exited before it was ready: {why}"
            )),
            (Ok(Err(why)), None) => Some(format!("the agent under test is not ready: {why}")),
        };
        if let Some(why) = not_ready {
            tracing::error!("{why}");
            app.stop().await;
            return Err(why);
        }
        Ok(app)
    }

    /// Runs the scenarios in order: their results, why the agent is gone (it exited, or cannot
    /// be reached) and the scenario that found out. Once the agent is gone, or qa-loop is
    /// stopped, the rest are not run.
    async fn run_scenarios(
        &self,
        endpoint: &Endpoint,
        app: &mut App<'static>,
    ) -> (Vec<ScenarioResult>, Option<String>, Option<usize>) {
        let cancel = self.launcher.cancel().clone();
        let mut results = Vec::new();
        // Why the agent is gone, and the scenario that found out: its result stays in the
        // report, and the one `conversations` gate carries the issue.
        let mut gone: Option<String> = None;
        let mut found_gone: Option<usize> = None;
        for s in &self.config.scenarios {
            if let Some(reason) = cancel.reason() {
                results.push(unrun(
                    s,
                    &format!("not run: qa-loop was stopped by {reason}"),
                ));
                continue;
            }
            if let Some(why) = &gone {
                results.push(unrun(s, &format!("not run: {}", first_line(why))));
                continue;
            }
            let (result, found) = self.run_scenario(endpoint, app, s).await;
            gone = found;
            if gone.is_some() && found_gone.is_none() {
                found_gone = Some(results.len());
            }
            results.push(result);
        }
        (results, gone, found_gone)
    }

    /// Runs one scenario while the app runs (given up at once on SIGINT/SIGTERM): its result,
    /// and why the agent is gone if this scenario found out.
    async fn run_scenario(
        &self,
        endpoint: &Endpoint,
        app: &mut App<'static>,
        s: &ScenarioConfig,
    ) -> (ScenarioResult, Option<String>) {
        let cancel = self.launcher.cancel().clone();
        let mut result = unrun(s, "interrupted");
        tracing::info!(scenario = %s.name, "conversation scenario");
        let started = Instant::now();
        let ran = app
            .during(async {
                tokio::select! {
                    _ = self.scenario(endpoint, s, &mut result, started) => {}
                    reason = cancel.cancelled() => {
                        result.outcome = ScenarioOutcome::Error;
                        result.reason = format!("stopped by {reason}");
                    }
                }
            })
            .await;
        if ran.is_ok() && result.outcome == ScenarioOutcome::Error {
            // A refused connection: is the app dying?
            app.settle(CRASH_SETTLE).await;
        }
        let mut gone = None;
        if let Some(reason) = cancel.reason() {
            // The app was stopped with qa-loop: not its fault.
            result.outcome = ScenarioOutcome::Error;
            result.reason = format!("stopped by {reason}");
        } else if let Some(why) = app.exit() {
            result.outcome = ScenarioOutcome::Error;
            result.reason = format!("the agent under test exited during this scenario: {why}");
            gone = Some(format!(
                "the agent under test exited during `{}`: {why}",
                s.name
            ));
        } else if result.outcome == ScenarioOutcome::Error
            && result.reason.starts_with(endpoint::UNREACHABLE)
        {
            // The next scenarios would only fail the same way.
            gone = Some(result.reason.clone());
        }
        result.duration_ms = started.elapsed().as_millis() as u64;
        tracing::info!(scenario = %s.name, outcome = result.outcome.as_str(), reason = %result.reason, "scenario finished");
        (result, gone)
    }

    /// One scenario, recorded into `result` as it goes (so a crash keeps the turns so far).
    async fn scenario(
        &self,
        endpoint: &Endpoint,
        s: &ScenarioConfig,
        result: &mut ScenarioResult,
        started: Instant,
    ) {
        let limits = Limits::of(s);
        let hard_deadline = started + limits.hard_time();
        let session = session_id(&s.name);
        let marker = self.config.approval_marker.as_deref();
        let mut history: Vec<(Role, String)> = Vec::new();
        let mut text = s.query.clone();
        let mut number = 0;
        let end = |result: &mut ScenarioResult, outcome, reason: String| {
            result.outcome = outcome;
            result.reason = reason;
        };
        loop {
            number += 1;
            // Recorded before sending: an app dying on this message keeps it in the transcript.
            result.turns.push(unanswered(number, text.clone()));
            let asked = Instant::now();
            let reply = tokio::time::timeout_at(
                hard_deadline.into(),
                endpoint.send(&history, &text, &session),
            )
            .await;
            let Some(turn) = result.turns.last_mut() else {
                return;
            };
            turn.reply_ms = asked.elapsed().as_millis() as u64;
            let reply = match reply {
                Ok(Ok(r)) => r,
                Ok(Err(e)) => return end(result, ScenarioOutcome::Error, self.send_error(e)),
                Err(_) => {
                    let why = limits.hard_time_limit("no reply");
                    return end(result, ScenarioOutcome::Failed, why);
                }
            };
            turn.agent = crate::text::clip(&reply, REPLY_KEPT);
            history.push((Role::User, std::mem::take(&mut text)));
            history.push((Role::Agent, reply.clone()));
            let elapsed = started.elapsed();
            scenario::report_warnings(number, elapsed, &limits, &mut result.warnings);
            let next = if scenario::is_approval_prompt(&reply, marker) {
                let next = scenario::after_approval_prompt(number, &limits);
                turn.approval = Some(match &next {
                    Next::Send(answer) => format!("approval prompt answered `{answer}`"),
                    Next::End(..) => "approval prompt left for a human".into(),
                });
                next
            } else {
                let judged = self
                    .ask_judge(
                        s,
                        &mut result.turns,
                        number,
                        elapsed,
                        &limits,
                        hard_deadline,
                    )
                    .await;
                match judged {
                    Ok(next) => next,
                    Err((outcome, why)) => return end(result, outcome, why),
                }
            };
            match next {
                Next::End(outcome, reason) => return end(result, outcome, reason),
                Next::Send(follow_up) => {
                    if started.elapsed() >= limits.hard_time() {
                        let why = limits.hard_time_limit("no decision");
                        return end(result, ScenarioOutcome::Failed, why);
                    }
                    text = follow_up;
                }
            }
        }
    }

    /// Why sending to the agent failed, with a hint when nothing listens and qa-loop did not
    /// start the agent.
    fn send_error(&self, e: String) -> String {
        let hint = if self.config.start.is_none() && e.starts_with(endpoint::UNREACHABLE) {
            " (nothing listens there: start the agent in an earlier step, or set `conversations.start`)"
        } else {
            ""
        };
        format!("{e}{hint}")
    }

    /// Asks the judge about the conversation so far (within the scenario's hard time limit)
    /// and records its judgement on the last turn: what comes next, or how the scenario ends.
    async fn ask_judge(
        &self,
        s: &ScenarioConfig,
        turns: &mut [Turn],
        number: u32,
        elapsed: Duration,
        limits: &Limits,
        hard_deadline: Instant,
    ) -> Result<Next, (ScenarioOutcome, String)> {
        let warnings = scenario::judge_warnings(number, elapsed, limits);
        let task = judge::task(&Brief {
            name: &s.name,
            pass_criteria: &s.pass_criteria,
            context: s.context.as_deref(),
            turns,
            turn: number,
            max_turns: limits.max_turns,
            warnings: &warnings,
        });
        // The judge is bounded by the scenario's hard time limit too.
        let judged = tokio::time::timeout_at(hard_deadline.into(), self.judge.judge(task)).await;
        match judged {
            Ok(Ok(j)) => {
                if let Some(t) = turns.last_mut() {
                    t.verdict = Some(j.verdict);
                    t.confidence = j.confidence;
                    t.reasoning = j.reasoning.clone();
                }
                Ok(scenario::after_judgement(&j, number, limits))
            }
            Ok(Err(e)) => Err((ScenarioOutcome::Error, e)),
            Err(_) => Err((
                ScenarioOutcome::Failed,
                limits.hard_time_limit("no decision from the judge"),
            )),
        }
    }
}

/// The gates of the scenarios that ran (but the one that found the agent gone, whose issue
/// the `conversations` gate carries), then that gate when the agent is gone.
fn suite_gates(
    required: bool,
    results: &[ScenarioResult],
    found_gone: Option<usize>,
    gone: Option<String>,
) -> Vec<Gate> {
    let mut gates = Vec::new();
    for (i, r) in results.iter().enumerate() {
        if Some(i) == found_gone || (r.turns.is_empty() && r.reason.starts_with("not run")) {
            continue;
        }
        gates.push(scenario::gate(r));
    }
    if let Some(why) = gone {
        let skipped = results
            .iter()
            .filter(|r| r.reason.starts_with("not run"))
            .count();
        let summary = format!(
            "{}; {skipped} scenario(s) not run",
            crate::text::clip(first_line(&why), 300)
        );
        gates.push(suite_gate(required, summary, &why));
    }
    gates
}

/// Turn `number`, sent as `user` and not answered yet.
fn unanswered(number: u32, user: String) -> Turn {
    Turn {
        number,
        user,
        agent: String::new(),
        verdict: None,
        confidence: 0.0,
        reasoning: String::new(),
        approval: None,
        reply_ms: 0,
    }
}

/// The failed `conversations` gate: the suite could not run (all or some of) its scenarios.
/// `why` is the whole reason, with the app's output.
fn suite_gate(required: bool, summary: String, why: &str) -> Gate {
    Gate::new(
        "conversations",
        IssueType::E2eTest,
        required,
        GateStatus::Failed,
        summary,
        why,
    )
}

/// A scenario result with no turns yet.
fn unrun(s: &ScenarioConfig, reason: &str) -> ScenarioResult {
    ScenarioResult {
        name: s.name.clone(),
        required: Limits::of(s).required,
        outcome: ScenarioOutcome::Error,
        reason: reason.to_string(),
        turns: Vec::new(),
        warnings: Vec::new(),
        pass_criteria: s.pass_criteria.clone(),
        duration_ms: 0,
    }
}

/// A fresh session id per scenario run: `qa-loop-<name>-<random>`.
fn session_id(name: &str) -> String {
    let slug: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect::<String>()
        .split('-')
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("-");
    format!(
        "qa-loop-{}-{:016x}",
        crate::text::prefix(&slug, 40),
        crate::retry::random_u64()
    )
}

/// Where the app's output goes in pass `pass`.
pub fn log_path(log_dir: &Path, pass: u32) -> PathBuf {
    log_dir
        .join(format!("pass-{pass}"))
        .join("conversations-app.log")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids_are_fresh_and_readable() {
        let a = session_id("Lists my Repos!");
        let b = session_id("Lists my Repos!");
        assert!(a.starts_with("qa-loop-lists-my-repos-"), "{a}");
        assert_ne!(a, b);
    }
}
