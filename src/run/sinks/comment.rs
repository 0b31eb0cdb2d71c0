//! The sticky comment: the published report and the cross-run state (iterations so far, the
//! open escalation issue, the head reviewed), written at the end.

use crate::github::client::GitHub;
use crate::github::comment::CrossRunState;
use crate::github::sticky::StickyComment;
use crate::run::events::{Products, RunEvent, Sink, SinkFuture};

pub struct CommentSink {
    pub comment: StickyComment,
    pub head_sha: String,
    /// The client all GitHub sinks share (its request count is logged at the end).
    pub gh: GitHub,
}

impl Sink for CommentSink {
    fn on<'a>(&'a mut self, event: &'a RunEvent<'a>, out: &'a mut Products) -> SinkFuture<'a> {
        Box::pin(async move {
            if let RunEvent::Finished { engine, .. } = event {
                let state = CrossRunState {
                    v: 1,
                    history: engine.history().to_vec(),
                    escalation_issue: out.escalation_issue,
                    head_sha: self.head_sha.clone(),
                };
                self.comment
                    .write(&out.published, &state, super::check_run::POINTER)
                    .await;
                let requests = self.gh.sent.load(std::sync::atomic::Ordering::Relaxed);
                tracing::info!(requests, "published to GitHub");
            }
        })
    }
}
