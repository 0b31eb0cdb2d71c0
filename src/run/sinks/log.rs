//! The terminal: one line per review and per fix.

use crate::run::events::{Products, RunEvent, Sink, SinkFuture};

pub struct Log;

impl Sink for Log {
    fn on<'a>(&'a mut self, event: &'a RunEvent<'a>, _: &'a mut Products) -> SinkFuture<'a> {
        match event {
            RunEvent::Reviewed { record: last, .. } => tracing::info!(
                iteration = last.iteration,
                status = last.status.as_str(),
                score = last.score,
                issues = last.issues.len(),
                summary = %last.summary,
                "review"
            ),
            RunEvent::FixesApplied { iteration, .. } => {
                tracing::info!(iteration, "fixes applied");
            }
            RunEvent::Started { .. } | RunEvent::Finished { .. } => {}
        }
        Box::pin(std::future::ready(()))
    }
}
