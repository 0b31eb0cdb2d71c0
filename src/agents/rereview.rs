//! Re-review across runs: the first review of a run that continues earlier ones (a second push
//! to a pull request, a `/qa resume`, a local run after a commit) is told what changed since the
//! last review it can trace, instead of being shown the whole change again.
//!
//! Each review records the commit it saw ([`IterationRecord::reviewed_head`], only when the
//! working tree was exactly that commit). The newest recorded head that is still in `HEAD`'s
//! history is the baseline: fix commits pushed after a rebase get new ids, so an older head (the
//! pull request's head the earlier run started from) may be the one that still traces. When none
//! does, the branch was force-pushed or rebased: the review is a full one, and says so.

use std::path::Path;

use crate::engine::IterationRecord;
use crate::vcs::CommitLine;

/// Commits listed in a delta (the newest kept).
const MAX_COMMITS: usize = 50;
/// Recorded heads tried, newest first.
const MAX_CANDIDATES: usize = 10;

/// What a continuing review starts from.
#[derive(Debug, Clone, PartialEq)]
pub enum Baseline {
    /// No earlier review recorded the commit it saw: a full review.
    None,
    /// An earlier review's commit is in `HEAD`'s history.
    Since(Since),
    /// The commit the last review saw is no longer in the branch's history.
    Gone { head: String },
}

/// The delta since an earlier review.
#[derive(Debug, Clone, PartialEq)]
pub struct Since {
    /// The iteration whose review saw `head`.
    pub iteration: u32,
    pub head: String,
    /// `head..HEAD`, oldest first.
    pub commits: Vec<CommitLine>,
    /// `commits` holds only the newest [`MAX_COMMITS`].
    pub more_commits: bool,
    /// The working tree against `head` (`git diff head`, untracked files by name), cut to the
    /// reviewer's budget.
    pub delta: crate::diffview::DiffView,
}

/// A full commit id (SHA-1 or SHA-256): what a recorded head must be before git sees it.
fn is_commit_id(s: &str) -> bool {
    matches!(s.len(), 40 | 64) && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The recorded heads, newest first: `(iteration, commit)`.
pub fn candidates(history: &[IterationRecord]) -> Vec<(u32, &str)> {
    let mut out: Vec<(u32, &str)> = Vec::new();
    for r in history.iter().rev() {
        if let Some(h) = r.reviewed_head.as_deref()
            && is_commit_id(h)
            && !out.iter().any(|(_, seen)| *seen == h)
        {
            out.push((r.iteration, h));
        }
    }
    out.truncate(MAX_CANDIDATES);
    out
}

/// The baseline of the first review of a run continuing `history` in the repository at `root`
/// (the delta cut to `budget` as `hints` order it).
pub async fn baseline(
    root: &Path,
    history: &[IterationRecord],
    budget: usize,
    hints: &crate::diffview::DiffHints,
    exclude: &[String],
) -> Baseline {
    let candidates = candidates(history);
    let Some((_, newest)) = candidates.first() else {
        return Baseline::None;
    };
    for (iteration, head) in &candidates {
        if !crate::vcs::is_ancestor_of_head(root, head).await {
            continue;
        }
        let commits = match crate::vcs::commits_since(root, head, MAX_COMMITS + 1).await {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!("cannot list the commits since {head}: {e}; reviewing in full");
                return Baseline::None;
            }
        };
        let delta = match crate::diffview::load(root, &[head], true, budget, hints, exclude).await {
            Ok(d) => d,
            Err(e) => {
                tracing::warn!("cannot diff against {head}: {e}; reviewing in full");
                return Baseline::None;
            }
        };
        let more_commits = commits.len() > MAX_COMMITS;
        let skip = commits.len().saturating_sub(MAX_COMMITS);
        return Baseline::Since(Since {
            iteration: *iteration,
            head: head.to_string(),
            commits: commits.into_iter().skip(skip).collect(),
            more_commits,
            delta,
        });
    }
    Baseline::Gone {
        head: newest.to_string(),
    }
}

/// `abc1234`.
pub fn short(sha: &str) -> &str {
    &sha[..sha.len().min(7)]
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn record(iteration: u32, head: Option<&str>) -> IterationRecord {
        IterationRecord {
            iteration,
            status: crate::engine::Status::Rejected,
            reviewer_approved: false,
            score: 40,
            summary: String::new(),
            criteria: Vec::new(),
            issues: Vec::new(),
            suggestions: Vec::new(),
            pre_existing: Vec::new(),
            verification: Default::default(),
            timestamp: String::new(),
            manual_test_plan: None,
            guidance: None,
            reviewed_head: head.map(str::to_string),
        }
    }

    #[test]
    fn recorded_heads_are_tried_newest_first_once_each() {
        let (a, b) = ("a".repeat(40), "b".repeat(64));
        let history = [
            record(1, Some(&a)),
            record(2, None),
            record(3, Some(&b)),
            record(4, Some(&a)),
            // Never handed to git: not a commit id.
            record(5, Some("--output=/tmp/x")),
        ];
        assert_eq!(candidates(&history), [(4, a.as_str()), (3, b.as_str())]);
        assert!(candidates(&[record(1, None)]).is_empty());
    }

    /// The last run's fix commit was rebased when it was pushed (its recorded id is gone): the
    /// run's first head still traces, and the delta tells qa-loop's fix from the author's
    /// commit.
    #[test]
    fn a_rebased_fix_falls_back_to_an_older_head_and_commits_are_told_apart() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let git = |args: &[&str]| {
            let o = std::process::Command::new("git")
                .args([
                    "-c",
                    "user.name=Ada",
                    "-c",
                    "user.email=ada@example.invalid",
                ])
                .args(args)
                .current_dir(root)
                .output()
                .unwrap();
            assert!(o.status.success(), "git {args:?}");
            String::from_utf8(o.stdout).unwrap().trim().to_string()
        };
        git(&["init", "-q"]);
        std::fs::write(root.join("a.py"), "a = 1\n").unwrap();
        git(&["add", "-A"]);
        git(&["commit", "-q", "-m", "start"]);
        let first = git(&["rev-parse", "HEAD"]);
        std::fs::write(root.join("a.py"), "a = 2\n").unwrap();
        git(&[
            "commit",
            "-qam",
            "qa-loop: fix Q1 (iteration 1)\n\nQA-Loop-Iteration: 1",
        ]);
        std::fs::write(root.join("b.py"), "b = 1\n").unwrap();
        git(&["add", "-A"]);
        git(&["commit", "-q", "-m", "add b"]);
        let history = [
            record(1, Some(&first)),
            record(2, Some("0123456789abcdef0123456789abcdef01234567")),
        ];
        let hints = crate::diffview::DiffHints::default();
        let got =
            crate::test_support::rt().block_on(baseline(root, &history, 1 << 20, &hints, &[]));
        let Baseline::Since(since) = got else {
            panic!("{got:?}")
        };
        assert_eq!((since.iteration, since.head.as_str()), (1, first.as_str()));
        let who: Vec<(Option<u32>, &str, &str)> = since
            .commits
            .iter()
            .map(|c| (c.fix_iteration, c.author.as_str(), c.subject.as_str()))
            .collect();
        assert_eq!(
            who,
            [
                (Some(1), "Ada", "qa-loop: fix Q1 (iteration 1)"),
                (None, "Ada", "add b")
            ]
        );
        let delta = &since.delta.shown.text;
        assert!(
            delta.contains("+a = 2") && delta.contains("+b = 1"),
            "{delta}"
        );
        // Nothing recorded traces: gone, naming the newest.
        let gone = [record(3, Some("fedcba9876543210fedcba9876543210fedcba98"))];
        assert_eq!(
            crate::test_support::rt().block_on(baseline(root, &gone, 1 << 20, &hints, &[])),
            Baseline::Gone {
                head: "fedcba9876543210fedcba9876543210fedcba98".into()
            }
        );
        assert_eq!(
            crate::test_support::rt().block_on(baseline(
                root,
                &[record(1, None)],
                1 << 20,
                &hints,
                &[]
            )),
            Baseline::None
        );
    }
}
