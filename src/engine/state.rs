//! The QA loop of SPEC §4 as a pure state machine: `Engine::step(event) -> effects`. No I/O, no
//! clock: the driver feeds events (with timestamps) and performs the effects.

use serde::{Deserialize, Serialize};

use super::matcher::{IssueKey, Matcher};
use super::recurring::{Occurrence, RecurringIssue, find_recurring};
use crate::error::Exit;
use crate::model::{
    CriterionResult, Issue, IssueType, ReviewStatus, Severity, Verdict, VerificationReport,
};

/// A reviewer score is capped at this when a required gate failed: an iteration with red gates
/// never outranks one with green gates in best-of-N.
pub const FAILED_GATE_SCORE_CAP: u8 = 50;

/// The rules of the loop.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Policy {
    pub max_iterations: u32,
    pub max_consecutive_errors: u32,
    pub recurring_threshold: u32,
    pub similarity_threshold: f64,
    pub min_score: u8,
    /// `mode: review`: never fix.
    pub review_only: bool,
    /// Issues below this severity are suggestions: reported, never fixed, never blocking
    /// (`fix_severity`, default `low`: every issue counts).
    pub fix_severity: Severity,
}

/// Loop statuses (SPEC §4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Pending,
    Rejected,
    FixesApplied,
    Approved,
    HumanEscalation,
    MaxIterations,
    Error,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Rejected => "rejected",
            Status::FixesApplied => "fixes_applied",
            Status::Approved => "approved",
            Status::HumanEscalation => "human_escalation",
            Status::MaxIterations => "max_iterations",
            Status::Error => "error",
        }
    }
}

/// One completed review: what was found, and what the gates said.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IterationRecord {
    pub iteration: u32,
    /// `approved` or `rejected` (after gates).
    pub status: Status,
    /// Whether the reviewer itself said approved (it may be overruled by gates).
    pub reviewer_approved: bool,
    pub score: u8,
    pub summary: String,
    pub criteria: Vec<CriterionResult>,
    /// What blocks approval and goes to the fixer: the reviewer's issues at or above the bar
    /// that the change introduced, and every gate's issue.
    pub issues: Vec<Issue>,
    /// The reviewer's issues below the bar (`fix_severity`): reported, never fixed, never
    /// blocking, never counted towards recurrence.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub suggestions: Vec<Issue>,
    /// The reviewer's issues that were there before the change (a checked `introduced: false`):
    /// reported apart, never fixed, never blocking.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pre_existing: Vec<Issue>,
    pub verification: VerificationReport,
    pub timestamp: String,
    /// The reviewer's manual test plan (no-test projects).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manual_test_plan: Option<String>,
    /// A human's words that this iteration started from (`/qa resume <guidance>`, `/qa fix
    /// <instructions>`), with who wrote them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guidance: Option<String>,
    /// The commit this review saw, when the working tree was exactly that commit: a later run
    /// reviews what changed since.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reviewed_head: Option<String>,
}

/// Why a run stopped with errors.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum ErrorStop {
    ConsecutiveErrors {
        count: u32,
        last: String,
    },
    Budget {
        what: String,
    },
    /// The model provider refused the credentials (a bad key, an expired or refused token).
    Refused {
        why: String,
    },
    /// qa-loop was asked to stop (SIGINT/SIGTERM).
    Cancelled {
        reason: String,
    },
}

/// Why a run was escalated to a human.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Escalation {
    Recurring {
        issues: Vec<RecurringIssue>,
    },
    BelowMinScore {
        best_score: u8,
        min_score: u8,
    },
    AwaitingSignoff {
        gates: Vec<String>,
    },
    /// An earlier run escalated (issue `issue`); nothing runs until `/qa resume`.
    AwaitingResume {
        issue: u64,
    },
}

/// How the loop ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "result")]
pub enum Outcome {
    Approved {
        iteration: u32,
    },
    /// Rejected and not fixed further (`mode: review`).
    Rejected {
        best_iteration: u32,
    },
    MaxIterations {
        best_iteration: u32,
    },
    Escalated {
        escalation: Escalation,
        best_iteration: Option<u32>,
    },
    Errors {
        stop: ErrorStop,
        best_iteration: Option<u32>,
    },
}

impl Outcome {
    /// The process exit code (SPEC §2).
    pub fn exit(&self) -> Exit {
        match self {
            Outcome::Approved { .. } => Exit::Approved,
            Outcome::Rejected { .. } | Outcome::MaxIterations { .. } => Exit::NotApproved,
            Outcome::Escalated { .. } => Exit::Escalated,
            Outcome::Errors { .. } => Exit::Errors,
        }
    }

    /// The action output `verdict`: `approved|rejected|escalated|error`.
    pub fn verdict(&self) -> &'static str {
        match self {
            Outcome::Approved { .. } => "approved",
            Outcome::Rejected { .. } | Outcome::MaxIterations { .. } => "rejected",
            Outcome::Escalated { .. } => "escalated",
            Outcome::Errors { .. } => "error",
        }
    }

    /// The final loop status.
    pub fn status(&self) -> Status {
        match self {
            Outcome::Approved { .. } => Status::Approved,
            Outcome::Rejected { .. } => Status::Rejected,
            Outcome::MaxIterations { .. } => Status::MaxIterations,
            Outcome::Escalated { .. } => Status::HumanEscalation,
            Outcome::Errors { .. } => Status::Error,
        }
    }

    /// The iteration whose code state should be kept (best-of-N), if any.
    pub fn best_iteration(&self) -> Option<u32> {
        match self {
            Outcome::Approved { iteration } => Some(*iteration),
            Outcome::Rejected { best_iteration } | Outcome::MaxIterations { best_iteration } => {
                Some(*best_iteration)
            }
            Outcome::Escalated { best_iteration, .. } | Outcome::Errors { best_iteration, .. } => {
                *best_iteration
            }
        }
    }
}

/// What the driver reports back.
#[derive(Debug, Clone)]
pub enum Event {
    Started,
    Verified(VerificationReport),
    Reviewed {
        result: Result<Verdict, String>,
        at: String,
    },
    Fixed(Result<String, String>),
    /// Tokens, cost or time ran out (checked by the driver before each call).
    BudgetExhausted(String),
    /// The model provider refused the credentials: no later call can succeed.
    Refused(String),
    /// qa-loop received SIGINT/SIGTERM: stop now, keeping what was recorded.
    Cancelled(String),
}

/// What the driver must do next.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    Verify,
    /// Review the current state as iteration `iteration`.
    Review {
        iteration: u32,
    },
    /// Fix these issues (from iteration `iteration`).
    Fix {
        iteration: u32,
        issues: Vec<Issue>,
    },
    /// An iteration was recorded: report progress.
    Checkpoint {
        iteration: u32,
    },
    /// A fix attempt succeeded (status `fixes_applied`).
    FixesApplied {
        iteration: u32,
        summary: String,
    },
    Finish(Outcome),
}

/// The loop's state.
#[derive(Debug, Clone)]
pub struct Engine {
    policy: Policy,
    matcher: Matcher,
    status: Status,
    history: Vec<IterationRecord>,
    verification: Option<VerificationReport>,
    consecutive_errors: u32,
    errors: Vec<String>,
    pending_fix: Vec<Issue>,
    outcome: Option<Outcome>,
    /// A human's guidance for this run, recorded with its first iteration.
    guidance: Option<String>,
}

impl Engine {
    pub fn new(policy: Policy) -> Self {
        Engine::resume(policy, Vec::new())
    }

    /// Continues from an earlier run's history (cross-run memory): iterations keep counting.
    pub fn resume(policy: Policy, history: Vec<IterationRecord>) -> Self {
        Engine {
            policy,
            matcher: Matcher::new(policy.similarity_threshold),
            status: Status::Pending,
            history,
            verification: None,
            consecutive_errors: 0,
            errors: Vec::new(),
            pending_fix: Vec::new(),
            outcome: None,
            guidance: None,
        }
    }

    /// A human's fix request found at the start: the fixer works on it first, then the loop
    /// verifies and reviews as usual (not in review-only runs, where nothing is fixed).
    pub fn with_human_request(mut self, issues: Vec<Issue>) -> Self {
        if !self.policy.review_only {
            self.pending_fix = issues;
        }
        self
    }

    /// A human's guidance (`/qa resume <guidance>`, `/qa fix <instructions>`): recorded with
    /// this run's first iteration.
    pub fn with_guidance(mut self, guidance: Option<String>) -> Self {
        self.guidance = guidance.filter(|g| !g.trim().is_empty());
        self
    }

    pub fn status(&self) -> Status {
        self.status
    }

    pub fn history(&self) -> &[IterationRecord] {
        &self.history
    }

    pub fn errors(&self) -> &[String] {
        &self.errors
    }

    pub fn outcome(&self) -> Option<&Outcome> {
        self.outcome.as_ref()
    }

    /// The latest verification, if any.
    pub fn verification(&self) -> Option<&VerificationReport> {
        self.verification.as_ref()
    }

    fn next_iteration(&self) -> u32 {
        self.history
            .last()
            .map_or(1, |r| r.iteration.saturating_add(1))
    }

    /// Gives the record's findings their fingerprints: the same problem as an earlier finding
    /// of this run or an earlier one (the history carries them) keeps its fingerprint.
    fn fingerprint(&self, record: &mut IterationRecord) {
        let earlier: Vec<&Issue> = self
            .history
            .iter()
            .flat_map(IterationRecord::all_findings)
            .collect();
        let mut new: Vec<&mut Issue> = record
            .issues
            .iter_mut()
            .chain(record.suggestions.iter_mut())
            .chain(record.pre_existing.iter_mut())
            .collect();
        super::findings::assign(&mut new, &earlier, &self.matcher);
    }

    /// Problems seen in `recurring_threshold` or more iterations so far.
    pub fn recurring(&self) -> Vec<RecurringIssue> {
        recurring_in(
            &self.history,
            &self.matcher,
            self.policy.recurring_threshold,
        )
    }

    /// Advances the machine by one event.
    pub fn step(&mut self, event: Event) -> Vec<Effect> {
        if self.outcome.is_some() {
            return Vec::new();
        }
        match event {
            Event::Started => {
                // A resumed run that already used every iteration cannot review again.
                if self.history.len() as u32 >= self.policy.max_iterations
                    && !self.history.is_empty()
                {
                    return self.end_without_approval(false);
                }
                if !self.pending_fix.is_empty() {
                    return vec![Effect::Fix {
                        iteration: self.history.last().map_or(0, |r| r.iteration),
                        issues: self.pending_fix.clone(),
                    }];
                }
                vec![Effect::Verify]
            }
            Event::Verified(report) => {
                self.verification = Some(report);
                vec![Effect::Review {
                    iteration: self.next_iteration(),
                }]
            }
            Event::Reviewed {
                result: Ok(verdict),
                at,
            } => self.on_verdict(verdict, at),
            Event::Reviewed {
                result: Err(error), ..
            } => self.on_error(
                error,
                Effect::Review {
                    iteration: self.next_iteration(),
                },
            ),
            Event::Fixed(Ok(summary)) => {
                self.consecutive_errors = 0;
                self.pending_fix.clear();
                self.status = Status::FixesApplied;
                let iteration = self.history.last().map_or(0, |r| r.iteration);
                vec![Effect::FixesApplied { iteration, summary }, Effect::Verify]
            }
            Event::Fixed(Err(error)) => {
                let retry = Effect::Fix {
                    iteration: self.history.last().map_or(0, |r| r.iteration),
                    issues: self.pending_fix.clone(),
                };
                self.on_error(error, retry)
            }
            Event::Cancelled(reason) => {
                let best = self.best().map(|r| r.iteration);
                self.finish(Outcome::Errors {
                    stop: ErrorStop::Cancelled { reason },
                    best_iteration: best,
                })
            }
            Event::BudgetExhausted(what) => {
                let best = self.best().map(|r| r.iteration);
                self.finish(Outcome::Errors {
                    stop: ErrorStop::Budget { what },
                    best_iteration: best,
                })
            }
            Event::Refused(why) => {
                self.errors.push(why.clone());
                let best = self.best().map(|r| r.iteration);
                self.finish(Outcome::Errors {
                    stop: ErrorStop::Refused { why },
                    best_iteration: best,
                })
            }
        }
    }

    fn on_error(&mut self, error: String, retry: Effect) -> Vec<Effect> {
        self.consecutive_errors += 1;
        self.errors.push(error.clone());
        if self.consecutive_errors >= self.policy.max_consecutive_errors {
            let best = self.best().map(|r| r.iteration);
            let stop = ErrorStop::ConsecutiveErrors {
                count: self.consecutive_errors,
                last: error,
            };
            return self.finish(Outcome::Errors {
                stop,
                best_iteration: best,
            });
        }
        vec![retry]
    }

    fn on_verdict(&mut self, verdict: Verdict, at: String) -> Vec<Effect> {
        self.consecutive_errors = 0;
        let iteration = self.next_iteration();
        let verification = self.verification.clone().unwrap_or_default();
        let mut record = apply_gates(
            iteration,
            verdict,
            verification,
            at,
            self.policy.fix_severity,
        );
        self.fingerprint(&mut record);
        record.guidance = self.guidance.take();
        let approved = record.status == Status::Approved;
        let pending: Vec<String> = record
            .verification
            .pending_required()
            .map(|g| g.name.clone())
            .collect();
        self.status = record.status;
        self.pending_fix = record.issues.clone();
        self.history.push(record);
        let mut effects = vec![Effect::Checkpoint { iteration }];
        if approved {
            if !pending.is_empty() {
                // Gates beat words: a pending sign-off holds the approval (SPEC §3.1 critical).
                effects.extend(self.finish(Outcome::Escalated {
                    escalation: Escalation::AwaitingSignoff { gates: pending },
                    best_iteration: Some(iteration),
                }));
                return effects;
            }
            effects.extend(self.finish(Outcome::Approved { iteration }));
            return effects;
        }
        let recurring = self.recurring();
        if !recurring.is_empty() {
            let best = self.best().map(|r| r.iteration);
            effects.extend(self.finish(Outcome::Escalated {
                escalation: Escalation::Recurring { issues: recurring },
                best_iteration: best,
            }));
            return effects;
        }
        if self.history.len() as u32 >= self.policy.max_iterations {
            effects.extend(self.end_without_approval(false));
            return effects;
        }
        if self.policy.review_only {
            effects.extend(self.end_without_approval(true));
            return effects;
        }
        effects.push(Effect::Fix {
            iteration,
            issues: self.pending_fix.clone(),
        });
        effects
    }

    /// Best-of-N: keep the best iteration; below `min_score` escalate instead.
    fn end_without_approval(&mut self, review_only: bool) -> Vec<Effect> {
        let best = self.best().map(|r| (r.iteration, r.score));
        let Some((best_iteration, best_score)) = best else {
            return self.finish(Outcome::Errors {
                stop: ErrorStop::ConsecutiveErrors {
                    count: 0,
                    last: "no iteration completed".into(),
                },
                best_iteration: None,
            });
        };
        if best_score < self.policy.min_score {
            return self.finish(Outcome::Escalated {
                escalation: Escalation::BelowMinScore {
                    best_score,
                    min_score: self.policy.min_score,
                },
                best_iteration: Some(best_iteration),
            });
        }
        if review_only {
            self.finish(Outcome::Rejected { best_iteration })
        } else {
            self.finish(Outcome::MaxIterations { best_iteration })
        }
    }

    /// The highest-scoring iteration; the latest among equals (it holds the most fixes):
    /// `max_by_key` returns the last maximum.
    /// The best-scoring iteration, the latest among ties, among those whose tests were not
    /// weakened: an iteration that failed the test-integrity gate is never the state kept,
    /// pushed or offered as suggestions (the first iteration, before any fix, always counts).
    fn best(&self) -> Option<&IterationRecord> {
        self.history
            .iter()
            .filter(|r| !r.verification.tests_weakened())
            .max_by_key(|r| r.score)
    }

    fn finish(&mut self, outcome: Outcome) -> Vec<Effect> {
        self.status = outcome.status();
        self.outcome = Some(outcome.clone());
        vec![Effect::Finish(outcome)]
    }
}

/// Recurring problems in a history.
pub fn recurring_in(
    history: &[IterationRecord],
    matcher: &Matcher,
    threshold: u32,
) -> Vec<RecurringIssue> {
    let occurrences: Vec<Occurrence<'_>> = history
        .iter()
        .flat_map(|r| {
            r.issues.iter().map(move |i| Occurrence {
                iteration: r.iteration,
                id: &i.id,
                key: IssueKey::from(i),
                recurs: i.recurs.as_deref(),
            })
        })
        .collect();
    find_recurring(&occurrences, matcher, threshold)
}

/// Gates beat words: the verdict is approved only if the reviewer approved and every required
/// gate passed. Each failed required gate becomes an issue; the score is capped.
pub fn apply_gates(
    iteration: u32,
    mut verdict: Verdict,
    verification: VerificationReport,
    at: String,
    bar: Severity,
) -> IterationRecord {
    let (mut issues, suggestions, pre_existing) =
        set_apart(std::mem::take(&mut verdict.issues), bar);
    // A reviewer that rejected only for what is below the bar or was there before did not
    // reject the change.
    if verdict.status == ReviewStatus::Rejected
        && issues.is_empty()
        && !(suggestions.is_empty() && pre_existing.is_empty())
    {
        verdict.status = ReviewStatus::Approved;
    }
    let failed: Vec<_> = verification.failed_required().cloned().collect();
    issues.extend(gate_issues(&failed));
    let reviewer_approved = verdict.status == ReviewStatus::Approved;
    // Words cannot approve an unmet criterion (one the reviewer left out is unmet too).
    let unmet: Vec<_> = verdict.criteria.iter().filter(|c| !c.met).collect();
    if reviewer_approved {
        for (k, c) in unmet.iter().enumerate() {
            issues.push(Issue {
                id: format!("C{}", k + 1),
                title: format!("Acceptance criterion not met: {}", c.criterion),
                kind: IssueType::AcceptanceCriteria,
                severity: Severity::High,
                file: None,
                line: None,
                file_lines: None,
                description: c.evidence.clone(),
                fix: format!("Make the change meet the criterion: {}", c.criterion),
                recurs: None,
                introduced: true,
                fingerprint: None,
            });
        }
    }
    // Approval only ever follows a full verification of the final tree: a failing-first pass
    // (only what failed before ran, and it still failed) never approves.
    if !verification.is_full() && failed.is_empty() {
        issues.push(incomplete_verification());
    }
    let gates_hold = failed.is_empty() && unmet.is_empty() && verification.is_full();
    let mut score = verdict.score.min(100);
    if !gates_hold {
        score = score.min(FAILED_GATE_SCORE_CAP);
    }
    let status = if reviewer_approved && gates_hold {
        Status::Approved
    } else {
        Status::Rejected
    };
    bounded(IterationRecord {
        iteration,
        status,
        reviewer_approved,
        score,
        summary: verdict.summary,
        criteria: verdict.criteria,
        issues,
        suggestions,
        pre_existing,
        verification,
        timestamp: at,
        manual_test_plan: verdict.manual_test_plan,
        guidance: None,
        reviewed_head: verdict.reviewed_head,
    })
}

/// The issue of a pass that did not verify everything (failing first) yet failed nothing: it
/// cannot approve (the verifier never hands one over; this holds whatever it does).
fn incomplete_verification() -> Issue {
    Issue {
        id: "G0".into(),
        title: "Verification incomplete: only the tests that failed before ran".into(),
        kind: IssueType::UnitTest,
        severity: Severity::High,
        file: None,
        line: None,
        file_lines: None,
        description: "A failing-first pass ran only what failed in the pass before; approval needs a full verification of the final tree.".into(),
        fix: "Run the full verification.".into(),
        recurs: None,
        introduced: true,
        fingerprint: None,
    }
}

/// The failed required gates' issues (`G1`, `G2`, …): a gate's findings each one issue (a
/// failing test, a pattern on an added line), a gate without findings one issue.
fn gate_issues(failed: &[crate::model::Gate]) -> Vec<Issue> {
    let mut out = Vec::new();
    let mut n = 0;
    let mut next_id = || {
        n += 1;
        format!("G{n}")
    };
    for gate in failed {
        if gate.findings.is_empty() {
            out.push(Issue {
                id: next_id(),
                title: crate::model::gate_failure_title(&gate.name, &gate.summary),
                kind: gate.issue_type,
                severity: Severity::High,
                file: None,
                line: None,
                file_lines: None,
                description: gate.excerpt.clone(),
                fix: format!("Make the `{}` gate pass: {}", gate.name, gate.summary),
                recurs: None,
                introduced: true,
                fingerprint: None,
            });
        }
        // Each finding (a failing test, a pattern on an added line) is its own issue, so the
        // fixer gets a location and recurrences are tracked per problem.
        for f in &gate.findings {
            out.push(Issue {
                id: next_id(),
                title: f.title.clone(),
                kind: f.kind,
                severity: f.severity,
                file: f.file.clone(),
                line: f.line,
                file_lines: None,
                description: f.detail.clone(),
                fix: f.fix.clone(),
                recurs: None,
                introduced: true,
                fingerprint: None,
            });
        }
    }
    out
}

/// The reviewer's issues as (blocking, below the bar, pre-existing).
fn set_apart(all: Vec<Issue>, bar: Severity) -> (Vec<Issue>, Vec<Issue>, Vec<Issue>) {
    let (pre_existing, introduced): (Vec<Issue>, Vec<Issue>) =
        all.into_iter().partition(|i| !i.introduced);
    let (suggestions, issues) = introduced
        .into_iter()
        .partition(|i| super::findings::below_bar(i, bar));
    (issues, suggestions, pre_existing)
}

impl IterationRecord {
    /// Every finding of the iteration: blocking, suggestions and pre-existing.
    pub fn all_findings(&self) -> impl Iterator<Item = &Issue> {
        self.issues
            .iter()
            .chain(&self.suggestions)
            .chain(&self.pre_existing)
    }
}

/// The one clipping rule (`text::title`, `text::message`) on everything a tool or the model
/// wrote into an iteration, before it reaches a report, a prompt or GitHub: titles one line of
/// at most 200 characters, messages head and tail within 4,000.
fn bounded(mut record: IterationRecord) -> IterationRecord {
    use crate::text::{message, title};
    for i in record
        .issues
        .iter_mut()
        .chain(record.suggestions.iter_mut())
        .chain(record.pre_existing.iter_mut())
    {
        i.title = title(&i.title);
        i.description = message(&i.description);
        i.fix = message(&i.fix);
    }
    for c in &mut record.criteria {
        c.evidence = message(&c.evidence);
    }
    record.summary = message(&record.summary);
    record
}
