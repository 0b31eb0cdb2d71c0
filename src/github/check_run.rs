//! The check run on the PR head: `in_progress` at start, updated per iteration, then completed
//! with the conclusion and the annotations (batches of 50). A token that may not write checks (a
//! fork PR's) gets the annotations as `::error` workflow commands instead.

use serde_json::json;

use super::checks::{self, ErrorConclusion};
use super::client::{GhError, GitHub};
use super::publish::{id_of, note, patch_twice};
use crate::engine::{IterationRecord, Outcome};
use crate::model::Issue;
use crate::text::percent_encode as encode;
use crate::vcs::AddedLines;

pub struct CheckRun {
    gh: GitHub,
    repo: String,
    head_sha: String,
    name: String,
    on_error: ErrorConclusion,
    id: Option<u64>,
    /// The token may not write checks (fork PRs): annotations go to the log instead.
    denied: bool,
}

impl CheckRun {
    /// The check run's id, once created.
    pub fn id(&self) -> Option<u64> {
        self.id
    }

    pub fn new(
        gh: GitHub,
        target: &super::publish::Target,
        settings: &crate::config::Settings,
    ) -> Self {
        CheckRun {
            gh,
            repo: target.repo.clone(),
            head_sha: target.head_sha.clone(),
            name: settings.publish.check_name.clone(),
            on_error: settings.publish.error_conclusion,
            id: None,
            denied: false,
        }
    }

    /// Opens the check run (`in_progress`).
    pub async fn start(&mut self) {
        match self.create().await {
            Ok(id) => self.id = Some(id),
            Err(e) => {
                self.denied = matches!(e.status(), Some(403 | 404));
                note("create the check run", &e);
            }
        }
    }

    async fn create(&self) -> Result<u64, GhError> {
        let body = json!({
            "name": self.name,
            "head_sha": self.head_sha,
            "status": "in_progress",
            "started_at": crate::engine::driver::now(),
            "output": {"title": "QA Loop: running", "summary": "Verification and review are running."},
        });
        let path = format!("repos/{}/check-runs", self.repo);
        match self.gh.post(&path, &body).await {
            Ok(v) => id_of(&v),
            // It may exist: look it up before creating again.
            Err(GhError::Uncertain { .. }) => match self.find().await? {
                Some(id) => Ok(id),
                None => id_of(&self.gh.post(&path, &body).await?),
            },
            Err(e) => Err(e),
        }
    }

    /// This run's check on the head commit, if GitHub has it.
    async fn find(&self) -> Result<Option<u64>, GhError> {
        let v = self
            .gh
            .get(&format!(
                "repos/{}/commits/{}/check-runs?check_name={}&filter=latest",
                self.repo,
                self.head_sha,
                encode(&self.name)
            ))
            .await?;
        Ok(v["check_runs"]
            .as_array()
            .and_then(|runs| runs.iter().find(|r| r["status"] != "completed"))
            .and_then(|r| r["id"].as_u64()))
    }

    /// Shows an iteration on the check run.
    pub async fn iteration(&self, last: &IterationRecord) {
        let Some(id) = self.id else {
            return;
        };
        let title = format!(
            "QA Loop: iteration {} {} (score {})",
            last.iteration,
            last.status.as_str(),
            last.score
        );
        use crate::report::untrusted::{block, line};
        let mut summary = format!("{}\n", block(&last.summary));
        for i in &last.issues {
            summary.push_str(&format!(
                "- **{}** [{}] {}\n",
                line(&i.id),
                i.kind,
                line(&i.title)
            ));
        }
        let body = json!({"output": checks::output(&title, &summary, "", &[], "the run's report")});
        let path = format!("repos/{}/check-runs/{id}", self.repo);
        // An update is idempotent: re-sending it after an uncertain answer is harmless.
        if let Err(e) = patch_twice(&self.gh, &path, &body).await {
            note("update the check run", &e);
        }
    }

    /// Completes the check run: conclusion, the report as summary, annotations.
    pub async fn complete(
        &self,
        outcome: &Outcome,
        report: &str,
        issues: &[Issue],
        apart: &[Issue],
        added: &AddedLines,
        full_report: &str,
    ) {
        let (annotations, overflow) = checks::annotations(issues, apart, added);
        let mut summary = report.to_string();
        if overflow > 0 {
            summary.push_str(&format!(
                "\n\n{overflow} more issues with a location are not annotated (GitHub shows at most {} per run here); see the report.\n",
                checks::MAX_ANNOTATIONS
            ));
        }
        let title = format!("QA Loop: {}", outcome.verdict());
        if let Some(id) = self.id {
            let path = format!("repos/{}/check-runs/{id}", self.repo);
            let mut batches = annotations.chunks(checks::BATCH);
            let first = batches.next().unwrap_or(&[]);
            let body = json!({
                "status": "completed",
                "conclusion": checks::conclusion(outcome, self.on_error),
                "completed_at": crate::engine::driver::now(),
                "output": checks::output(&title, &summary, "", first, full_report),
            });
            if let Err(e) = patch_twice(&self.gh, &path, &body).await {
                note("complete the check run", &e);
            }
            // Further annotations: each update appends its batch.
            for batch in batches {
                let body =
                    json!({"output": checks::output(&title, &summary, "", batch, full_report)});
                if let Err(e) = self.gh.patch(&path, &body).await {
                    note("add annotations to the check run", &e);
                    break;
                }
            }
        } else if self.denied {
            // A read-only token (fork PR): annotations as workflow commands.
            for i in issues.iter().filter(|i| i.file.is_some()) {
                println!(
                    "{}",
                    super::actions::error_annotation(
                        i.file.as_deref(),
                        i.line,
                        &format!("{} [{}] {}", i.id, i.kind, i.title),
                        if i.description.is_empty() {
                            &i.title
                        } else {
                            &i.description
                        },
                    )
                );
            }
        }
    }
}
