//! Notifications (SPEC §11): the run's events to Linear, Slack, Telegram and a webhook. Heard
//! last, so the escalation issue it links to exists; a failed notification is a warning (the
//! log, and appended to `qa_report.md` and `qa-result.json`), never a change of verdict.

use std::path::PathBuf;
use std::time::Instant;

use crate::config::file::NotifyEvent;
use crate::engine::Outcome;
use crate::engine::state::Status;
use crate::notify::{LISTED_ISSUES, Notice, Notifier};
use crate::run::events::{Products, RunEvent, Sink, SinkFuture};

pub struct NotifySink {
    pub notifier: Notifier,
    /// What every notice of this run carries (the change, its links).
    pub base: Notice,
    pub started: Instant,
    pub out_dir: PathBuf,
    /// `https://github.com/<repo>/issues/` on a pull request.
    pub issues_url: Option<String>,
    pub warnings: Vec<String>,
}

/// Text from a model or the change, as every target gets it: redacted, without HTML comments
/// or invisible characters, mentions broken (`@` + a zero-width space), one line, bounded.
/// Each target escapes it for its own format.
fn clean(s: &str, max: usize) -> String {
    let shown = crate::text::visible(&crate::secrets::redact(s));
    let one = shown.split_whitespace().collect::<Vec<_>>().join(" ");
    crate::text::clip(&one.replace('@', "@\u{200b}"), max)
}

impl NotifySink {
    fn notice(&self, event: NotifyEvent) -> Notice {
        let mut n = self.base.clone();
        n.event = Some(event);
        n.duration_seconds = self.started.elapsed().as_secs();
        n
    }

    fn with_record(mut n: Notice, r: &crate::engine::IterationRecord) -> Notice {
        n.iteration = Some(r.iteration);
        n.issues = Some(r.issues.len());
        n.score = Some(r.score);
        n.summary = clean(&r.summary, 600);
        n.top_issues = r
            .issues
            .iter()
            .take(LISTED_ISSUES)
            .map(|i| format!("[{}] {}", i.severity.as_str(), clean(&i.title, 200)))
            .collect();
        if r.issues.len() > LISTED_ISSUES {
            n.top_issues
                .push(format!("… and {} more", r.issues.len() - LISTED_ISSUES));
        }
        n
    }

    fn finished(
        &self,
        engine: &crate::engine::Engine,
        outcome: &Outcome,
        out: &Products,
    ) -> Option<Notice> {
        let event = match outcome {
            Outcome::Approved { .. } => NotifyEvent::Approved,
            Outcome::MaxIterations { .. } => NotifyEvent::MaxIterations,
            Outcome::Escalated { .. } => NotifyEvent::Escalated,
            Outcome::Errors { .. } => NotifyEvent::Error,
            // Review mode: the rejection was sent when it was recorded.
            Outcome::Rejected { .. } => return None,
        };
        let mut n = self.notice(event);
        if let Some(r) = engine.history().last() {
            n = Self::with_record(n, r);
        }
        if event != NotifyEvent::Approved {
            n.summary = clean(
                &format!(
                    "{} {}",
                    crate::report::headline(outcome, engine.history().len()),
                    n.summary
                ),
                800,
            );
        } else {
            n.top_issues.clear();
        }
        if let (Some(url), Some(issue)) = (&self.issues_url, out.escalation_issue) {
            n.links.escalation_issue = Some(format!("{url}{issue}"));
        }
        Some(n)
    }

    async fn send(&mut self, n: Notice) {
        for w in self.notifier.send(&n).await {
            tracing::warn!("{w}");
            self.warnings.push(w);
        }
    }
}

impl Sink for NotifySink {
    fn on<'a>(&'a mut self, event: &'a RunEvent<'a>, out: &'a mut Products) -> SinkFuture<'a> {
        Box::pin(async move {
            match event {
                RunEvent::Started { .. } => {
                    let n = self.notice(NotifyEvent::Started);
                    self.send(n).await;
                }
                RunEvent::Reviewed { record, .. } if record.status == Status::Rejected => {
                    let n = Self::with_record(self.notice(NotifyEvent::Rejected), record);
                    self.send(n).await;
                }
                RunEvent::Finished { engine, outcome } => {
                    if let Some(n) = self.finished(engine, outcome, out) {
                        self.send(n).await;
                    }
                    if !self.warnings.is_empty()
                        && let Err(e) =
                            crate::report::files::append_warnings(&self.out_dir, &self.warnings)
                    {
                        tracing::warn!("cannot add the notification warnings to the report: {e}");
                    }
                }
                RunEvent::Reviewed { .. } | RunEvent::FixesApplied { .. } => {}
            }
        })
    }
}
