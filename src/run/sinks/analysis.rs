//! The failure analysis: when the run ends needing a human after failing to converge, one model
//! call writes the hand-off before the report files and the escalation issue are written (they
//! read it from the products). Skipped with `--failure-analysis false`; a failed call is a
//! warning and the factual report stands alone.

use crate::agents::analyst::{self, Analyst, Record};
use crate::config::Strategy;
use crate::run::events::{Products, RunEvent, Sink, SinkFuture};

pub struct Analysis<'a> {
    pub analyst: Analyst<'a>,
    pub strategy: &'a Strategy,
    /// The fixer's summary after each iteration it worked on.
    pub fixes: Vec<(u32, String)>,
}

impl Sink for Analysis<'_> {
    fn on<'a>(&'a mut self, event: &'a RunEvent<'a>, out: &'a mut Products) -> SinkFuture<'a> {
        Box::pin(async move {
            match event {
                RunEvent::FixesApplied {
                    iteration, summary, ..
                } => self.fixes.push((*iteration, summary.to_string())),
                RunEvent::Finished { engine, outcome } if analyst::wanted(outcome) => {
                    let recurring = engine.recurring();
                    let report = crate::report::RunReport {
                        recurring: recurring.clone(),
                        errors: engine.errors(),
                        fixes: &self.fixes,
                        ..crate::report::RunReport::new(outcome, engine.history(), self.strategy)
                    };
                    let task = analyst::task(&Record {
                        headline: report.headline(),
                        criteria: &self.strategy.criteria,
                        history: engine.history(),
                        fixes: &self.fixes,
                        recurring: &recurring,
                    });
                    tracing::info!("writing the failure analysis for a human");
                    match self.analyst.write(task).await {
                        Ok(text) => out.analysis = Some(text),
                        Err(why) => tracing::warn!(
                            "no failure analysis ({why}): the escalation report holds the facts only"
                        ),
                    }
                }
                _ => {}
            }
        })
    }
}
