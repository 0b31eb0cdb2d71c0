//! The decisions of a scenario, without I/O: what follows a judgement or an approval prompt,
//! the soft and hard limits, and what a finished scenario becomes as a gate.

use std::time::Duration;

use super::judge::Judgement;
use crate::config::{ApprovalMode, ScenarioConfig};
use crate::model::{
    Finding, Gate, GateStatus, IssueType, JudgeVerdict, ScenarioOutcome, ScenarioResult, Severity,
};

pub const DEFAULT_MAX_TURNS: u32 = 5;
pub const DEFAULT_MAX_TIME: Duration = Duration::from_secs(300);
/// What qa-loop answers to an approval prompt under `auto-approve` and `auto-deny`.
pub const APPROVE_TEXT: &str = "Approved. Go ahead.";
pub const DENY_TEXT: &str = "Denied. Do not do it.";

/// A scenario's limits and settings with their defaults applied.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    pub max_turns: u32,
    pub max_time: Duration,
    pub approval_mode: ApprovalMode,
    pub required: bool,
}

impl Limits {
    pub fn of(s: &ScenarioConfig) -> Limits {
        Limits {
            max_turns: s.max_turns.unwrap_or(DEFAULT_MAX_TURNS).max(1),
            max_time: s
                .max_time_seconds
                .map_or(DEFAULT_MAX_TIME, Duration::from_secs),
            approval_mode: s.approval_mode.unwrap_or(ApprovalMode::Manual),
            required: s.required.unwrap_or(true),
        }
    }

    /// The hard turn limit: the scenario fails rather than go on past it.
    pub fn hard_turns(&self) -> u32 {
        self.max_turns.saturating_mul(2)
    }

    /// The hard time limit: no reply is waited for past it.
    pub fn hard_time(&self) -> Duration {
        self.max_time.saturating_mul(2)
    }

    /// Why a scenario failed at the hard time limit: `what` (no reply, no decision) came in time.
    pub fn hard_time_limit(&self, what: &str) -> String {
        format!(
            "hard time limit: {what} within {}s (2 × max_time_seconds {})",
            self.hard_time().as_secs(),
            self.max_time.as_secs()
        )
    }
}

/// What happens next in a scenario.
#[derive(Debug, Clone, PartialEq)]
pub enum Next {
    /// Send this as the next user message.
    Send(String),
    End(ScenarioOutcome, String),
}

/// After the judge's decision on turn `turn`.
pub fn after_judgement(j: &Judgement, turn: u32, limits: &Limits) -> Next {
    let why = if j.reasoning.is_empty() {
        String::new()
    } else {
        format!(": {}", j.reasoning)
    };
    match j.verdict {
        JudgeVerdict::Pass => Next::End(
            ScenarioOutcome::Passed,
            format!("the judge passed it on turn {turn}{why}"),
        ),
        JudgeVerdict::Fail => Next::End(
            ScenarioOutcome::Failed,
            format!("the judge failed it on turn {turn}{why}"),
        ),
        JudgeVerdict::Continue if turn >= limits.hard_turns() => {
            Next::End(ScenarioOutcome::Failed, hard_turn_limit(turn, limits))
        }
        JudgeVerdict::Continue => Next::Send(j.follow_up.clone()),
    }
}

/// After a reply holding the approval marker on turn `turn`.
pub fn after_approval_prompt(turn: u32, limits: &Limits) -> Next {
    match limits.approval_mode {
        ApprovalMode::Manual => Next::End(
            ScenarioOutcome::NeedsHuman,
            format!(
                "the agent asked for an approval on turn {turn} and `approval_mode` is `manual`: a human must check this scenario"
            ),
        ),
        _ if turn >= limits.hard_turns() => {
            Next::End(ScenarioOutcome::Failed, hard_turn_limit(turn, limits))
        }
        ApprovalMode::AutoApprove => Next::Send(APPROVE_TEXT.into()),
        ApprovalMode::AutoDeny => Next::Send(DENY_TEXT.into()),
    }
}

fn hard_turn_limit(turn: u32, limits: &Limits) -> String {
    format!(
        "hard limit: no decision after {turn} turns (2 × max_turns {})",
        limits.max_turns
    )
}

/// Whether a reply is an approval prompt (the marker, ignoring case).
pub fn is_approval_prompt(reply: &str, marker: Option<&str>) -> bool {
    marker.is_some_and(|m| reply.to_lowercase().contains(&m.to_lowercase()))
}

/// What the judge is warned of at turn `turn` after `elapsed`.
pub fn judge_warnings(turn: u32, elapsed: Duration, limits: &Limits) -> Vec<String> {
    let mut out = Vec::new();
    if turn > limits.max_turns {
        out.push(format!(
            "this is turn {turn}, past the soft limit of {} turns. Prefer `pass` or `fail`; choose `continue` only if a pass is clearly one turn away. At turn {} the scenario fails.",
            limits.max_turns,
            limits.hard_turns()
        ));
    }
    if elapsed > limits.max_time {
        out.push(format!(
            "the scenario has taken {}s, past its soft limit of {}s. Move to a decision.",
            elapsed.as_secs(),
            limits.max_time.as_secs()
        ));
    }
    out
}

/// The report's warnings for a scenario that reached turn `turn` after `elapsed` (each said once).
pub fn report_warnings(turn: u32, elapsed: Duration, limits: &Limits, into: &mut Vec<String>) {
    let turns = format!("went past the soft limit of {} turns", limits.max_turns);
    if turn > limits.max_turns && !into.iter().any(|w| w.starts_with(&turns)) {
        into.push(format!("{turns} (turn {turn})"));
    }
    let time = format!(
        "took longer than max_time_seconds ({}s)",
        limits.max_time.as_secs()
    );
    if elapsed > limits.max_time && !into.iter().any(|w| w.starts_with(&time)) {
        into.push(format!("{time}: {}s", elapsed.as_secs()));
    }
}

/// The name of a scenario's gate.
pub fn gate_name(scenario: &str) -> String {
    format!("conversation:{scenario}")
}

/// Bytes of transcript kept in a failed scenario's finding (its end: where it went wrong).
const TRANSCRIPT_IN_FINDING: usize = 3000;

/// A finished scenario as a gate: failed and errored scenarios carry a finding (an issue for the
/// fixer when the scenario is required); a scenario needing a human is pending.
pub fn gate(r: &ScenarioResult) -> Gate {
    let name = gate_name(&r.name);
    let turns = r.turns.len();
    let (status, summary) = match r.outcome {
        ScenarioOutcome::Passed => (
            GateStatus::Passed,
            format!("{} ({turns} turn(s))", r.reason),
        ),
        ScenarioOutcome::Failed => (GateStatus::Failed, r.reason.clone()),
        ScenarioOutcome::Error => (
            GateStatus::Failed,
            format!("could not be carried out: {}", r.reason),
        ),
        ScenarioOutcome::NeedsHuman => (
            GateStatus::Pending,
            format!(
                "{}; `/qa approve` by a user with write access signs it off",
                r.reason
            ),
        ),
    };
    let mut g = Gate::new(name, IssueType::E2eTest, r.required, status, summary, "");
    if matches!(r.outcome, ScenarioOutcome::Failed | ScenarioOutcome::Error) {
        let transcript = r.transcript();
        let tail = tail(&transcript, TRANSCRIPT_IN_FINDING);
        g.findings.push(Finding {
            kind: IssueType::E2eTest,
            severity: Severity::High,
            title: format!(
                "Conversation scenario `{}` {}: {}",
                r.name,
                if r.outcome == ScenarioOutcome::Error {
                    "could not run"
                } else {
                    "failed"
                },
                crate::text::clip(r.reason.lines().next().unwrap_or_default(), 200)
            ),
            file: None,
            line: None,
            detail: format!(
                "Pass criteria: {}\n\nTranscript:\n{tail}",
                r.pass_criteria.trim()
            ),
            fix: if r.outcome == ScenarioOutcome::Error {
                format!(
                    "Make the scenario run to a verdict (the agent must answer its chat endpoint): {}",
                    first_line(&r.reason)
                )
            } else {
                format!(
                    "Change the agent so that, in the conversation starting with \"{}\", it meets: {}",
                    r.turns
                        .first()
                        .map_or("the scenario's query", |t| t.user.trim()),
                    r.pass_criteria.trim()
                )
            },
        });
    }
    g
}

/// The first line of `s` (a reason or an error may carry output below it).
pub fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or_default()
}

/// The last `max` bytes of `s` at a char boundary, with a marker when cut.
fn tail(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut cut = s.len() - max;
    while !s.is_char_boundary(cut) {
        cut += 1;
    }
    format!("[…]\n{}", &s[cut..])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max_turns: u32, mode: ApprovalMode) -> Limits {
        Limits {
            max_turns,
            max_time: Duration::from_secs(60),
            approval_mode: mode,
            required: true,
        }
    }

    fn judgement(verdict: JudgeVerdict) -> Judgement {
        Judgement {
            verdict,
            confidence: 0.8,
            reasoning: "because".into(),
            follow_up: "and bar?".into(),
        }
    }

    #[test]
    fn continue_sends_the_follow_up_until_the_hard_limit_fails_the_scenario() {
        let l = limits(2, ApprovalMode::Manual);
        let c = judgement(JudgeVerdict::Continue);
        assert_eq!(after_judgement(&c, 1, &l), Next::Send("and bar?".into()));
        assert_eq!(after_judgement(&c, 3, &l), Next::Send("and bar?".into()));
        match after_judgement(&c, 4, &l) {
            Next::End(ScenarioOutcome::Failed, why) => assert!(why.contains("hard limit"), "{why}"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            after_judgement(&judgement(JudgeVerdict::Pass), 4, &l),
            Next::End(ScenarioOutcome::Passed, _)
        ));
        assert!(matches!(
            after_judgement(&judgement(JudgeVerdict::Fail), 1, &l),
            Next::End(ScenarioOutcome::Failed, _)
        ));
    }

    #[test]
    fn approval_prompts_are_answered_per_mode_and_manual_never_waits() {
        assert_eq!(
            after_approval_prompt(1, &limits(3, ApprovalMode::AutoApprove)),
            Next::Send(APPROVE_TEXT.into())
        );
        assert_eq!(
            after_approval_prompt(1, &limits(3, ApprovalMode::AutoDeny)),
            Next::Send(DENY_TEXT.into())
        );
        assert!(matches!(
            after_approval_prompt(1, &limits(3, ApprovalMode::Manual)),
            Next::End(ScenarioOutcome::NeedsHuman, _)
        ));
        assert!(matches!(
            after_approval_prompt(2, &limits(1, ApprovalMode::AutoApprove)),
            Next::End(ScenarioOutcome::Failed, _)
        ));
        assert!(is_approval_prompt(
            "… approval required: delete?",
            Some("APPROVAL REQUIRED")
        ));
        assert!(!is_approval_prompt("done", Some("APPROVAL REQUIRED")));
        assert!(!is_approval_prompt("APPROVAL REQUIRED", None));
    }

    #[test]
    fn soft_limits_warn_the_judge_and_the_report_once() {
        let l = limits(2, ApprovalMode::Manual);
        assert!(judge_warnings(2, Duration::from_secs(1), &l).is_empty());
        let w = judge_warnings(3, Duration::from_secs(61), &l);
        assert_eq!(w.len(), 2);
        assert!(w[0].contains("soft limit of 2 turns") && w[0].contains("At turn 4"));
        let mut report = Vec::new();
        report_warnings(3, Duration::from_secs(1), &l, &mut report);
        report_warnings(4, Duration::from_secs(61), &l, &mut report);
        report_warnings(4, Duration::from_secs(62), &l, &mut report);
        assert_eq!(report.len(), 2, "{report:?}");
    }

    #[test]
    fn failed_scenarios_become_findings_and_manual_ones_pending_gates() {
        let mut r = ScenarioResult {
            name: "lists repositories".into(),
            required: true,
            outcome: ScenarioOutcome::Failed,
            reason: "the judge failed it on turn 1: it invented a repo".into(),
            turns: Vec::new(),
            warnings: Vec::new(),
            pass_criteria: "lists foo and bar".into(),
            duration_ms: 5,
        };
        let g = gate(&r);
        assert_eq!(g.name, "conversation:lists repositories");
        assert_eq!(g.status, GateStatus::Failed);
        assert_eq!(g.findings.len(), 1);
        assert!(g.findings[0].fix.contains("lists foo and bar"));
        r.outcome = ScenarioOutcome::NeedsHuman;
        let g = gate(&r);
        assert_eq!(g.status, GateStatus::Pending);
        assert!(g.findings.is_empty());
        assert_eq!(tail("héllo wörld", 5), "[…]\nörld");
    }
}
