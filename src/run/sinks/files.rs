//! The report files (`qa_report.md`, `qa-result.json`, `qa-loop-junit.xml`, `qa-loop.sarif`, and
//! the escalation and manual-test-plan files): a snapshot after each review, the final version at the end (and
//! the plan's QA keys, written once).

use std::cell::RefCell;
use std::path::{Path, PathBuf};

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
    /// Warnings known before the run (a model retiring soon): added to `qa_report.md` and
    /// `qa-result.json` each time they are written, so the check run and the comment carry them.
    pub warnings: Vec<String>,
    /// Where `qa-loop.sarif` shows a finding without a file ([`sarif_anchor`]).
    pub sarif_anchor: Option<String>,
    /// Iterations of earlier runs in the engine's history (learnt when the run starts): the
    /// last of them is the baseline of `qa-loop.sarif`.
    pub earlier: usize,
}

/// The configuration file, repository-relative, when it is inside the repository: where
/// `qa-loop.sarif` shows a finding without a file (GitHub rejects results without a location).
pub fn sarif_anchor(root: &Path, config: Option<&Path>) -> Option<String> {
    let config = config?;
    let rel = config.strip_prefix(root).unwrap_or(config);
    let inside = rel.is_relative()
        && rel.components().all(|c| {
            matches!(
                c,
                std::path::Component::Normal(_) | std::path::Component::CurDir
            )
        });
    let text = rel.to_string_lossy().replace('\\', "/");
    let text = text.trim_start_matches("./").to_string();
    (inside && !text.is_empty()).then_some(text)
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
        let frame = crate::report::sarif::Frame {
            earlier: self.earlier,
            anchor: self.sarif_anchor.as_deref(),
        };
        match files::write_all(&self.out_dir, &report, &frame, plan, &driver::now()) {
            Ok(p) => {
                if !self.warnings.is_empty()
                    && let Err(e) = files::append_warnings(&self.out_dir, &self.warnings)
                {
                    tracing::warn!("cannot add the model warnings to the report: {e}");
                }
                out.report_path = Some(p)
            }
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
            // What the engine holds before this run's first review came from earlier runs.
            RunEvent::Started { engine } => self.earlier = engine.history().len(),
        }
        Box::pin(std::future::ready(()))
    }
}
