//! What happens during a run, as events, and the sinks that turn them into outputs. The engine's
//! effects arrive through the driver's [`Reporter`]; [`Sinks`] hands each event to every sink in
//! order. A sink has one job (report files, the pusher, the escalation issue, the check run, the
//! sticky comment, the log, an events file); it never decides the verdict, and a sink that fails
//! logs it and leaves the exit code alone. Adding one is a new file under `sinks/` and one line
//! where the run wires its sinks.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;

use crate::engine::driver::Reporter;
use crate::engine::{Engine, IterationRecord, Outcome};

/// One thing that happened.
pub enum RunEvent<'a> {
    /// The loop starts (with the iterations of earlier runs on this pull request, if any).
    Started { engine: &'a Engine },
    /// An iteration was reviewed and recorded.
    Reviewed {
        engine: &'a Engine,
        record: &'a IterationRecord,
    },
    /// The fixer worked on the issues of `iteration`.
    FixesApplied {
        engine: &'a Engine,
        iteration: u32,
        summary: &'a str,
    },
    /// The loop ended.
    Finished {
        engine: &'a Engine,
        outcome: &'a Outcome,
    },
}

/// What sinks leave for the sinks after them and for the run's result.
#[derive(Debug, Default)]
pub struct Products {
    pub report_path: Option<PathBuf>,
    pub write_error: Option<String>,
    /// The report as published on the pull request: the report file's text plus what the
    /// pusher adds (fixes not pushed, fixes offered as suggestions).
    pub published: String,
    /// The open escalation issue on GitHub, if any.
    pub escalation_issue: Option<u64>,
    /// Fix commits pushed to the PR branch.
    pub commits_pushed: usize,
    /// The failure analysis written for a human (heads `QA_HUMAN_ESCALATION.md`).
    pub analysis: Option<String>,
    /// The check run's page on GitHub (notifications link to it).
    pub check_run_url: Option<String>,
}

pub type SinkFuture<'a> = Pin<Box<dyn Future<Output = ()> + 'a>>;

/// An output of the run.
pub trait Sink {
    fn on<'a>(&'a mut self, event: &'a RunEvent<'a>, products: &'a mut Products) -> SinkFuture<'a>;
}

/// The run's sinks, in the order they hear each event.
#[derive(Default)]
pub struct Sinks<'s> {
    sinks: Vec<Box<dyn Sink + 's>>,
    pub products: Products,
}

impl<'s> Sinks<'s> {
    pub fn add(&mut self, sink: impl Sink + 's) {
        self.sinks.push(Box::new(sink));
    }

    pub async fn emit(&mut self, event: RunEvent<'_>) {
        for sink in &mut self.sinks {
            sink.on(&event, &mut self.products).await;
        }
    }
}

impl Reporter for Sinks<'_> {
    async fn checkpoint(&mut self, engine: &Engine) {
        if let Some(record) = engine.history().last() {
            self.emit(RunEvent::Reviewed { engine, record }).await;
        }
    }

    async fn fixes_applied(&mut self, engine: &Engine, iteration: u32, summary: &str) {
        self.emit(RunEvent::FixesApplied {
            engine,
            iteration,
            summary,
        })
        .await;
    }

    async fn finish(&mut self, engine: &Engine, outcome: &Outcome) {
        self.emit(RunEvent::Finished { engine, outcome }).await;
    }
}
