//! The escalation issue: opened (or updated) when the run escalates to a human, closed when a
//! later run approves. Waiting for `/qa resume` or a sign-off opens none.

use crate::engine::Outcome;
use crate::engine::state::Escalation;
use crate::github::escalation::EscalationIssue;
use crate::report::files;
use crate::run::events::{Products, RunEvent, Sink, SinkFuture};

pub struct EscalationSink {
    pub issue: EscalationIssue,
    /// The open escalation issue known from earlier runs.
    pub prior: Option<u64>,
    pub out_dir: std::path::PathBuf,
}

impl EscalationSink {
    async fn finish(&self, outcome: &Outcome) -> Option<u64> {
        match outcome {
            Outcome::Escalated {
                escalation: Escalation::AwaitingResume { .. } | Escalation::AwaitingSignoff { .. },
                ..
            } => self.prior,
            Outcome::Escalated { .. } => {
                let text = std::fs::read_to_string(self.out_dir.join(files::ESCALATION))
                    .unwrap_or_default();
                self.issue.escalate(&text).await.or(self.prior)
            }
            Outcome::Approved { iteration } if self.prior.is_some() => {
                self.issue.resolve(*iteration).await;
                None
            }
            _ => self.prior,
        }
    }
}

impl Sink for EscalationSink {
    fn on<'a>(&'a mut self, event: &'a RunEvent<'a>, out: &'a mut Products) -> SinkFuture<'a> {
        Box::pin(async move {
            if let RunEvent::Finished { outcome, .. } = event {
                out.escalation_issue = self.finish(outcome).await;
            }
        })
    }
}
