//! The check run: each iteration after a fix, then the conclusion with the published report
//! and the annotations (lines the change added first).

use crate::github::check_run::CheckRun;
use crate::run::events::{Products, RunEvent, Sink, SinkFuture};

pub struct CheckRunSink {
    pub check: CheckRun,
    pub root: std::path::PathBuf,
    pub diff_base: crate::vcs::DiffBase,
}

/// Where the full report is when the published one is cut.
pub const POINTER: &str = "`qa_report.md` (in the workflow's artifacts)";

impl Sink for CheckRunSink {
    fn on<'a>(&'a mut self, event: &'a RunEvent<'a>, out: &'a mut Products) -> SinkFuture<'a> {
        Box::pin(async move {
            match event {
                // Another iteration follows: show this one (the last one goes out with the
                // conclusion, saving a request).
                RunEvent::FixesApplied { engine, .. } => {
                    if let Some(last) = engine.history().last() {
                        self.check.iteration(last).await;
                    }
                }
                RunEvent::Finished { engine, outcome } => {
                    let (issues, apart) = engine
                        .history()
                        .last()
                        .map(|l| {
                            let apart = l.suggestions.iter().chain(&l.pre_existing);
                            (l.issues.clone(), apart.cloned().collect::<Vec<_>>())
                        })
                        .unwrap_or_default();
                    let added = crate::vcs::added_lines(&self.root, &self.diff_base)
                        .await
                        .unwrap_or_default();
                    self.check
                        .complete(outcome, &out.published, &issues, &apart, &added, POINTER)
                        .await;
                }
                RunEvent::Started { .. } | RunEvent::Reviewed { .. } => {}
            }
        })
    }
}
