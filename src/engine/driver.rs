//! The driver: feeds the engine events and performs its effects through four narrow traits. All
//! I/O lives behind the traits; the driver itself only sequences.

use super::state::{Effect, Engine, Event, Outcome};
use crate::cancel::Cancel;
use crate::model::{Issue, Verdict, VerificationReport};

/// Runs the verification strategy.
#[allow(async_fn_in_trait)]
pub trait Verifier {
    async fn verify(&mut self) -> VerificationReport;

    /// Stops what a pass left running for the review (the browser-verification app): called
    /// at the end, and (through [`Verifier::before_fix`]) before a fix.
    async fn release(&mut self) {}

    /// Called before the fixer works on `issues`: what the next pass compares the fix with.
    async fn before_fix(&mut self, _issues: &[Issue]) {
        self.release().await;
    }
}

/// Reviews the current state (the engine gives the history and the latest verification).
#[allow(async_fn_in_trait)]
pub trait Reviewer {
    async fn review(&mut self, iteration: u32, engine: &Engine) -> Result<Verdict, String>;

    /// Called before a fix (before [`Verifier::before_fix`]): what the next review compares
    /// the tree with.
    async fn before_fix(&mut self) {}
}

/// Fixes the issues of an iteration; returns the fixer's summary.
#[allow(async_fn_in_trait)]
pub trait Fixer {
    async fn fix(&mut self, iteration: u32, issues: &[Issue]) -> Result<String, String>;
}

/// Reports progress and the end (files, check run, comment).
#[allow(async_fn_in_trait)]
pub trait Reporter {
    /// An iteration was recorded.
    async fn checkpoint(&mut self, engine: &Engine);
    /// Fixes were applied after `iteration`.
    async fn fixes_applied(&mut self, engine: &Engine, iteration: u32, summary: &str);
    /// The loop ended.
    async fn finish(&mut self, engine: &Engine, outcome: &Outcome);
}

/// Budget checks before each model call (tokens, cost, time).
pub trait Budget {
    fn exhausted(&self) -> Option<String>;

    /// Why the model provider refused the run's credentials, once it has: a failed step then
    /// stops the run instead of being retried (no later call can succeed).
    fn refused(&self) -> Option<String> {
        None
    }
}

/// The current time, RFC 3339 (UTC, seconds).
pub fn now() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

/// Runs the loop to its end. On cancellation, the step under way is abandoned (a verification
/// pass stops its commands itself) and the loop finishes with what was recorded.
pub async fn drive(
    engine: &mut Engine,
    verifier: &mut impl Verifier,
    reviewer: &mut impl Reviewer,
    fixer: &mut impl Fixer,
    reporter: &mut impl Reporter,
    budget: &impl Budget,
    cancel: &Cancel,
) -> Outcome {
    let mut queue: std::collections::VecDeque<Effect> = engine.step(Event::Started).into();
    while let Some(effect) = queue.pop_front() {
        if let Effect::Fix { issues, .. } = &effect {
            reviewer.before_fix().await;
            verifier.before_fix(issues).await;
        }
        let event = match effect {
            Effect::Verify | Effect::Review { .. } | Effect::Fix { .. }
                if cancel.reason().is_some() =>
            {
                Event::Cancelled(cancel.reason().unwrap_or_default())
            }
            Effect::Verify => {
                let report = verifier.verify().await;
                match cancel.reason() {
                    // A pass cut short measures nothing.
                    Some(reason) => Event::Cancelled(reason),
                    None => Event::Verified(report),
                }
            }
            Effect::Review { iteration } => match budget.exhausted() {
                Some(why) => Event::BudgetExhausted(why),
                None => tokio::select! {
                    result = reviewer.review(iteration, engine) => match (&result, budget.exhausted()) {
                        // A turn cut short by the budget is the budget's stop, not a model error.
                        (Err(_), Some(why)) => Event::BudgetExhausted(why),
                        (Err(_), None) if let Some(why) = budget.refused() => Event::Refused(why),
                        _ => Event::Reviewed { result, at: now() },
                    },
                    reason = cancel.cancelled() => Event::Cancelled(reason),
                },
            },
            Effect::Fix { iteration, issues } => match budget.exhausted() {
                Some(why) => Event::BudgetExhausted(why),
                None => tokio::select! {
                    result = fixer.fix(iteration, &issues) => match (&result, budget.exhausted()) {
                        (Err(_), Some(why)) => Event::BudgetExhausted(why),
                        (Err(_), None) if let Some(why) = budget.refused() => Event::Refused(why),
                        _ => Event::Fixed(result),
                    },
                    reason = cancel.cancelled() => Event::Cancelled(reason),
                },
            },
            Effect::Checkpoint { .. } => {
                reporter.checkpoint(engine).await;
                continue;
            }
            Effect::FixesApplied { iteration, summary } => {
                reporter.fixes_applied(engine, iteration, &summary).await;
                continue;
            }
            Effect::Finish(outcome) => {
                verifier.release().await;
                reporter.finish(engine, &outcome).await;
                return outcome;
            }
        };
        queue.extend(engine.step(event));
    }
    unreachable!("the engine always ends with a Finish effect")
}
