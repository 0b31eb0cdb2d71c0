//! A merge-queue run (`merge_group`, SPEC §7): the required `QA Loop` check reported on the
//! queue's commit, so the queue never stalls waiting for it. The plan of phases is short and
//! fixed: verify the queue's commit (the suites the change against the base chooses, pattern
//! checks), decide from the gates alone, complete the check run. No model call, no fixer, no
//! push (the `gh-readonly-queue/…` branch is GitHub's), no comment, no issue, no plan
//! bookkeeping — the review was given on each pull request.
//!
//! This file holds what is decided; `run::run_queue` does it.

use crate::config::Strategy;
use crate::github::event::MergeGroup;
use crate::model::{ReviewStatus, Verdict};

/// A run on a merge group.
pub struct QueueRun {
    pub group: MergeGroup,
    /// The check run's target (the queue's commit); `None` without a token or with
    /// `--no-github` (the gates still run and the files are written).
    pub target: Option<crate::github::publish::Target>,
    pub origin: Box<crate::trust::origin::Origin>,
}

/// What of the strategy runs on the queue's commit: the suites and pattern checks. Conversation
/// scenarios (judged by a model), browser pages (free-text checks judged by the reviewer) and
/// the human sign-off (given with `/qa approve` on the pull request) stay with the pull request;
/// what was left out is named for the report.
pub fn strategy(full: &Strategy) -> (Strategy, Vec<&'static str>) {
    let mut s = full.clone();
    let mut left = Vec::new();
    if s.conversations
        .take()
        .is_some_and(|c| !c.scenarios.is_empty())
    {
        left.push("conversation scenarios");
    }
    if s.browser.take().is_some() {
        left.push("browser verification");
    }
    if std::mem::take(&mut s.human_signoff_required) {
        left.push("the human sign-off");
    }
    (s, left)
}

/// The verdict the gates alone give (no model is asked): approved, so the gates decide.
pub fn verdict(group: &MergeGroup, suites: usize, left_out: &[&str]) -> Verdict {
    let prs = group.pull_requests();
    let prs = match prs.len() {
        0 => "the queued pull request(s)".to_string(),
        _ => format!(
            "pull request{} {}",
            if prs.len() == 1 { "" } else { "s" },
            prs.iter()
                .map(|n| format!("#{n}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let short = &group.head_sha[..group.head_sha.len().min(12)];
    let mut summary = if suites == 0 {
        format!(
            "Merge queue: {prs} merged onto `{}` as {short}. No suites are configured: the review was given on the pull request, so the queue's commit passes at once.",
            group.base_branch()
        )
    } else {
        format!(
            "Merge queue: {prs} merged onto `{}` as {short}, verified by the gates only ({suites} suite(s) chosen by the change against the base); no model was asked — the review was given on the pull request.",
            group.base_branch()
        )
    };
    if !left_out.is_empty() {
        summary.push_str(&format!(
            " Left to the pull request: {}.",
            left_out.join(", ")
        ));
    }
    Verdict {
        status: ReviewStatus::Approved,
        score: 100,
        confidence: 1.0,
        summary,
        criteria: Vec::new(),
        issues: Vec::new(),
        manual_test_plan: None,
        reviewed_head: Some(group.head_sha.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(head_ref: &str) -> MergeGroup {
        MergeGroup {
            head_sha: "ec26c3e57ca3a959ca5aad62de7213c562f8c821".into(),
            head_ref: head_ref.into(),
            base_sha: "f95f852bd8fca8fcc58a9a2d6c842781e32a215e".into(),
            base_ref: "refs/heads/main".into(),
        }
    }

    #[test]
    fn the_verdict_names_the_queued_pull_requests_and_what_was_left_out() {
        let g = group(
            "refs/heads/gh-readonly-queue/main/pr-104-f95f852bd8fca8fcc58a9a2d6c842781e32a215e",
        );
        assert_eq!(g.pull_requests(), [104]);
        let v = verdict(&g, 2, &["conversation scenarios"]);
        assert_eq!(v.status, ReviewStatus::Approved);
        assert!(
            v.summary
                .contains("pull request #104 merged onto `main` as ec26c3e57ca3"),
            "{}",
            v.summary
        );
        assert!(
            v.summary
                .contains("Left to the pull request: conversation scenarios.")
        );
        let none = verdict(&g, 0, &[]);
        assert!(
            none.summary.contains("No suites are configured"),
            "{}",
            none.summary
        );
        let batch = group("refs/heads/gh-readonly-queue/release/v2/pr-7-aaaa/pr-9-bbbb");
        assert_eq!(batch.pull_requests(), [7, 9]);
    }
}
