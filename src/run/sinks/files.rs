//! The report files (`qa_report.md`, `qa-result.json`, `qa-loop-junit.xml`, and the escalation
//! and manual-test-plan files): a snapshot after each review, the final version at the end (and
//! the plan's QA keys, written once).

use std::cell::RefCell;
use std::path::PathBuf;

use crate::agents::Meter;
use crate::config::Strategy;
use crate::engine::driver;
use crate::engine::{Engine, Outcome};
use crate::report::{RunReport, files};
use crate::run::events::{Products, RunEvent, Sink, SinkFuture};

pub struct ReportFiles<'a> {
    pub out_dir: PathBuf,
    pub plan: Option<PathBuf>,
    pub strategy: &'a Strategy,
    pub meter: &'a RefCell<Meter>,
    /// Files of the diff the reviewer was not shown.
    pub omitted: &'a RefCell<Vec<String>>,
    pub replayed: bool,
    /// How the change's code was confined (none when none of it ran).
    pub sandbox: Option<crate::report::SandboxNote>,
    /// The fixer's summary after each iteration it worked on.
    pub fixes: Vec<(u32, String)>,
    /// The run's MCP servers (their state and calls go into the report).
    pub mcp: std::sync::Arc<crate::mcp::Hub>,
}

impl ReportFiles<'_> {
    fn write(&self, engine: &Engine, outcome: &Outcome, final_write: bool, out: &mut Products) {
        let meter = self.meter.borrow();
        let omitted = self.omitted.borrow();
        let report = RunReport {
            outcome,
            history: engine.history(),
            strategy: self.strategy,
            recurring: engine.recurring(),
            usage: meter.usage,
            cost_usd: meter.cost_usd,
            model_calls: meter.calls,
            errors: engine.errors(),
            fixes: &self.fixes,
            omitted_files: &omitted,
            replayed: self.replayed,
            finished: final_write,
            analysis: out.analysis.as_deref(),
            mcp: self.mcp.status(),
            sandbox: self.sandbox.clone(),
        };
        // The plan is updated once, at the end, so a run appends its iterations exactly once.
        let plan = self.plan.as_deref().filter(|_| final_write);
        match files::write_all(&self.out_dir, &report, plan, &driver::now()) {
            Ok(p) => out.report_path = Some(p),
            Err(e) => {
                tracing::error!(
                    "cannot write the reports to {}: {e}",
                    self.out_dir.display()
                );
                out.write_error = Some(e.to_string());
            }
        }
    }
}

impl Sink for ReportFiles<'_> {
    fn on<'a>(&'a mut self, event: &'a RunEvent<'a>, out: &'a mut Products) -> SinkFuture<'a> {
        match event {
            RunEvent::Reviewed { engine, record } => {
                // An in-progress snapshot: the report as if the loop stopped here.
                let snapshot = Outcome::MaxIterations {
                    best_iteration: record.iteration,
                };
                self.write(engine, &snapshot, false, out);
            }
            RunEvent::FixesApplied {
                iteration, summary, ..
            } => self.fixes.push((*iteration, summary.to_string())),
            RunEvent::Finished { engine, outcome } => {
                self.write(engine, outcome, true, out);
                let path = out
                    .report_path
                    .clone()
                    .unwrap_or_else(|| self.out_dir.join(files::REPORT));
                out.published = std::fs::read_to_string(path).unwrap_or_default();
            }
            RunEvent::Started { .. } => {}
        }
        Box::pin(std::future::ready(()))
    }
}
