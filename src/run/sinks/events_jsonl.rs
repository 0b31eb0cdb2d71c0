//! `--events-jsonl FILE`: one JSON object per event, one per line, flushed as it happens — for
//! users who tail a run's progress or feed it to another tool.

use std::io::Write;

use serde_json::{Value, json};

use crate::run::events::{Products, RunEvent, Sink, SinkFuture};

pub struct EventsJsonl {
    file: std::fs::File,
}

impl EventsJsonl {
    /// Creates (or truncates) `path`.
    pub fn create(path: &std::path::Path) -> std::io::Result<EventsJsonl> {
        Ok(EventsJsonl {
            file: std::fs::File::create(path)?,
        })
    }
}

/// The event as one JSON object.
pub fn line(event: &RunEvent<'_>) -> Value {
    let at = crate::engine::driver::now();
    match event {
        RunEvent::Started { engine } => {
            json!({"event": "started", "at": at, "earlier_iterations": engine.history().len()})
        }
        RunEvent::Reviewed { record, .. } => json!({
            "event": "reviewed", "at": at, "iteration": record.iteration,
            "status": record.status.as_str(), "score": record.score, "issues": record.issues.len(),
        }),
        RunEvent::FixesApplied { iteration, .. } => {
            json!({"event": "fixes_applied", "at": at, "iteration": iteration})
        }
        RunEvent::Finished { engine, outcome } => json!({
            "event": "finished", "at": at, "verdict": outcome.verdict(),
            "iterations": engine.history().len(), "best_iteration": outcome.best_iteration(),
        }),
    }
}

impl Sink for EventsJsonl {
    fn on<'a>(&'a mut self, event: &'a RunEvent<'a>, _: &'a mut Products) -> SinkFuture<'a> {
        let text = crate::secrets::redact(&line(event).to_string()).into_owned();
        if let Err(e) = writeln!(self.file, "{text}").and_then(|()| self.file.flush()) {
            tracing::warn!("cannot write the events file: {e}");
        }
        Box::pin(std::future::ready(()))
    }
}
