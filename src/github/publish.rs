//! Publishing a run on its pull request: the check run (in progress → per iteration →
//! conclusion with annotations) and the sticky comment carrying the cross-run state. Publishing
//! never fails the run: a GitHub failure is logged and listed, and the report files stay the
//! source of truth. No create is repeated blindly: an uncertain create is looked up first.

use reqwest::Method;
use serde_json::{Value, json};

use super::checks::{self, ErrorConclusion};
use super::client::{GhError, GitHub};
use super::comment::{self, CrossRunState};
use crate::engine::{Engine, Outcome};
use crate::model::Issue;
use crate::text::percent_encode as encode;
use crate::vcs::AddedLines;

/// The pull request a run reports on.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    /// `owner/name`.
    pub repo: String,
    pub pr: u64,
    /// The PR head commit (never the merge commit).
    pub head_sha: String,
    /// The PR head branch (where fixes are pushed).
    pub head_ref: String,
    /// A PR from a fork: never pushed to.
    pub fork: bool,
    /// The `/qa` command that started the run, if any.
    pub command: Option<super::event::QaCommand>,
    /// Who caused the event (the commenter of a `/qa` command).
    pub actor: String,
    /// The PR's base branch (what the change is compared with).
    pub base_ref: String,
    /// Untrusted code (`pull_request_target`, the fork-safe `workflow_run` publisher): review
    /// only, and nothing of the change runs.
    pub untrusted: bool,
}

/// The escalation settings (SPEC §3.3 inputs).
#[derive(Debug, Clone, PartialEq)]
pub struct Escalation {
    /// Label of escalation issues (`qa-escalation`).
    pub label: String,
    /// Label put on the PR while a human is needed (`qa-loop:needs-human`).
    pub needs_human: String,
    pub assignees: Vec<String>,
}

/// Marks the one open escalation issue of a PR.
pub fn escalation_marker(pr: u64) -> String {
    format!("<!-- qa-loop:escalation pr={pr} -->")
}

pub struct Publisher {
    gh: GitHub,
    pub escalation: Escalation,
    /// Write the sticky comment (`comment: sticky`); its state is still read.
    comment: bool,
    target: Target,
    check_name: String,
    on_error: ErrorConclusion,
    check_id: Option<u64>,
    /// The token may not write checks (fork PRs): annotations go to the log instead.
    checks_denied: bool,
    comment_id: Option<u64>,
    duplicates: Vec<u64>,
    /// The login qa-loop posts as: only its comments and issues are trusted as state
    /// (`--bot-login`, else found by [`Publisher::start`]).
    identity: Option<String>,
    /// What could not be published.
    pub problems: Vec<String>,
}

/// Who the job's token posts as: installation tokens cannot read `GET /user` (403
/// "Resource not accessible by integration").
pub const ACTIONS_BOT: &str = "github-actions[bot]";

impl Publisher {
    /// Check name, error conclusion, labels, assignees and the comment switch from `settings`.
    pub fn new(gh: GitHub, target: Target, settings: &crate::config::Settings) -> Self {
        Publisher {
            gh,
            escalation: Escalation {
                label: settings.escalation_label.clone(),
                needs_human: settings.needs_human_label.clone(),
                assignees: settings.escalation_assignees.clone(),
            },
            comment: settings.comment == crate::config::settings::CommentMode::Sticky,
            target,
            check_name: settings.check_name.clone(),
            on_error: settings.error_conclusion,
            check_id: None,
            checks_denied: false,
            comment_id: None,
            duplicates: Vec::new(),
            identity: settings.bot_login.clone(),
            problems: Vec::new(),
        }
    }

    /// The login qa-loop posts as: `--bot-login`; else the token's user (`GET /user`, user
    /// tokens); else — the token cannot read it, as installation tokens cannot —
    /// `github-actions[bot]`, the job token's identity.
    async fn identify(&mut self) -> String {
        if let Some(login) = &self.identity {
            return login.clone();
        }
        let login = match self.gh.get("user").await {
            Ok(user) => match user["login"].as_str() {
                Some(l) if !l.is_empty() => l.to_string(),
                _ => ACTIONS_BOT.to_string(),
            },
            Err(e) if e.status() == Some(403) => ACTIONS_BOT.to_string(),
            Err(e) => {
                tracing::warn!(
                    "cannot tell which account the token posts as ({e}); trusting state only from {ACTIONS_BOT}"
                );
                ACTIONS_BOT.to_string()
            }
        };
        tracing::debug!(login, "qa-loop posts as");
        self.identity = Some(login.clone());
        login
    }

    fn trusted(&self) -> impl Fn(&Value) -> bool + '_ {
        move |user| comment::trusted_author(user, self.identity.as_deref().unwrap_or(ACTIONS_BOT))
    }

    pub fn target(&self) -> &Target {
        &self.target
    }

    pub fn requests(&self) -> u64 {
        self.gh.sent.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn note(&mut self, what: &str, e: &GhError) {
        tracing::warn!("cannot {what}: {e}");
        self.problems.push(format!("cannot {what}: {e}"));
    }

    /// Opens the check run and reads the sticky comment's state (empty when there is none).
    pub async fn start(&mut self) -> CrossRunState {
        match self.create_check().await {
            Ok(id) => self.check_id = Some(id),
            Err(e) => {
                self.checks_denied = matches!(e.status(), Some(403 | 404));
                self.note("create the check run", &e);
            }
        }
        let path = format!(
            "repos/{}/issues/{}/comments",
            self.target.repo, self.target.pr
        );
        match self.gh.get_all(&path, 30).await {
            Ok(list) => {
                // Who qa-loop is matters only once something looks like its comment.
                if list.iter().any(comment::looks_like_ours) {
                    self.identify().await;
                }
                let (keep, duplicates) = comment::pick(&list, self.trusted());
                self.comment_id = keep;
                self.duplicates = duplicates;
                keep.and_then(|id| list.iter().find(|c| c["id"].as_u64() == Some(id)))
                    .and_then(|c| c["body"].as_str())
                    .and_then(comment::decode)
                    .unwrap_or_default()
            }
            Err(e) => {
                self.note("read the pull request's comments", &e);
                CrossRunState::default()
            }
        }
    }

    async fn create_check(&self) -> Result<u64, GhError> {
        let body = json!({
            "name": self.check_name,
            "head_sha": self.target.head_sha,
            "status": "in_progress",
            "started_at": crate::engine::driver::now(),
            "output": {"title": "QA Loop: running", "summary": "Verification and review are running."},
        });
        let path = format!("repos/{}/check-runs", self.target.repo);
        match self.gh.post(&path, &body).await {
            Ok(v) => id_of(&v),
            // It may exist: look it up before creating again.
            Err(GhError::Uncertain { .. }) => match self.find_check().await? {
                Some(id) => Ok(id),
                None => id_of(&self.gh.post(&path, &body).await?),
            },
            Err(e) => Err(e),
        }
    }

    /// This run's check on the head commit, if GitHub has it.
    async fn find_check(&self) -> Result<Option<u64>, GhError> {
        let v = self
            .gh
            .get(&format!(
                "repos/{}/commits/{}/check-runs?check_name={}&filter=latest",
                self.target.repo,
                self.target.head_sha,
                encode(&self.check_name)
            ))
            .await?;
        Ok(v["check_runs"]
            .as_array()
            .and_then(|runs| runs.iter().find(|r| r["status"] != "completed"))
            .and_then(|r| r["id"].as_u64()))
    }

    /// Shows the latest iteration on the check run.
    pub async fn iteration(&mut self, engine: &Engine) {
        let (Some(id), Some(last)) = (self.check_id, engine.history().last()) else {
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
        let path = format!("repos/{}/check-runs/{id}", self.target.repo);
        // An update is idempotent: re-sending it after an uncertain answer is harmless.
        if let Err(e) = self.patch_twice(&path, &body).await {
            self.note("update the check run", &e);
        }
    }

    /// Completes the check run and writes the sticky comment.
    pub async fn finish(
        &mut self,
        outcome: &Outcome,
        report: &str,
        state: &CrossRunState,
        issues: &[Issue],
        added: &AddedLines,
        full_report: &str,
    ) {
        let (annotations, overflow) = checks::annotations(issues, added);
        let mut summary = report.to_string();
        if overflow > 0 {
            summary.push_str(&format!(
                "\n\n{overflow} more issues with a location are not annotated (GitHub shows at most {} per run here); see the report.\n",
                checks::MAX_ANNOTATIONS
            ));
        }
        let title = format!("QA Loop: {}", outcome.verdict());
        if let Some(id) = self.check_id {
            let path = format!("repos/{}/check-runs/{id}", self.target.repo);
            let mut batches = annotations.chunks(checks::BATCH);
            let first = batches.next().unwrap_or(&[]);
            let body = json!({
                "status": "completed",
                "conclusion": checks::conclusion(outcome, self.on_error),
                "completed_at": crate::engine::driver::now(),
                "output": checks::output(&title, &summary, "", first, full_report),
            });
            if let Err(e) = self.patch_twice(&path, &body).await {
                self.note("complete the check run", &e);
            }
            // Further annotations: each update appends its batch.
            for batch in batches {
                let body =
                    json!({"output": checks::output(&title, &summary, "", batch, full_report)});
                if let Err(e) = self.gh.patch(&path, &body).await {
                    self.note("add annotations to the check run", &e);
                    break;
                }
            }
        } else if self.checks_denied {
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
        if !self.comment {
            return;
        }
        let body = comment::render(report, state, full_report);
        self.write_comment(&body).await;
        for id in std::mem::take(&mut self.duplicates) {
            let path = format!("repos/{}/issues/comments/{id}", self.target.repo);
            if let Err(e) = self.gh.delete(&path).await {
                self.note("delete a duplicate comment", &e);
            }
        }
    }

    async fn write_comment(&mut self, body: &str) {
        let repo = self.target.repo.clone();
        let payload = json!({"body": body});
        if let Some(id) = self.comment_id {
            let path = format!("repos/{repo}/issues/comments/{id}");
            if let Err(e) = self.patch_twice(&path, &payload).await {
                self.note("update the report comment", &e);
            }
            return;
        }
        let path = format!("repos/{repo}/issues/{}/comments", self.target.pr);
        match self.gh.post(&path, &payload).await {
            Ok(v) => self.comment_id = v["id"].as_u64(),
            Err(GhError::Uncertain { .. }) => {
                // Look up before creating again: the comment may exist (or a racing run's).
                match self.gh.get_all(&path, 30).await {
                    Ok(list) => {
                        if list.iter().any(comment::looks_like_ours) {
                            self.identify().await;
                        }
                        let (keep, duplicates) = comment::pick(&list, self.trusted());
                        self.duplicates.extend(duplicates);
                        let result = match keep {
                            Some(id) => {
                                self.gh
                                    .patch(&format!("repos/{repo}/issues/comments/{id}"), &payload)
                                    .await
                            }
                            None => self.gh.post(&path, &payload).await,
                        };
                        if let Err(e) = result {
                            self.note("write the report comment", &e);
                        }
                    }
                    Err(e) => self.note("write the report comment", &e),
                }
            }
            Err(e) => self.note("write the report comment", &e),
        }
    }

    /// Offers fixes as a review with suggestion blocks on the PR head (fork PRs).
    pub async fn suggest(&mut self, comments: Vec<Value>) {
        if comments.is_empty() {
            return;
        }
        let body = json!({
            "commit_id": self.target.head_sha,
            "event": "COMMENT",
            "body": "qa-loop cannot push to a fork: its fixes are offered as suggestions (the full patch is in the report comment).",
            "comments": comments,
        });
        let path = format!(
            "repos/{}/pulls/{}/reviews",
            self.target.repo, self.target.pr
        );
        if let Err(e) = self.gh.post(&path, &body).await {
            self.note("post the suggestions", &e);
        }
    }

    /// Whether `login` may sign off (`admin`, `maintain` or `write` on the repository).
    pub async fn can_write(&mut self, login: &str) -> bool {
        super::origin::can_write(&self.gh, &self.target.repo, login).await
    }

    /// Escalated: the label exists, one open issue per PR carries `body` (looked up by marker
    /// before creating), the PR is labelled. Returns the issue number.
    pub async fn escalate(&mut self, body: &str) -> Option<u64> {
        let repo = self.target.repo.clone();
        let e = self.escalation.clone();
        self.ensure_label(&e.label, "d93f0b", "qa-loop needs a human")
            .await;
        self.ensure_label(
            &e.needs_human,
            "d93f0b",
            "qa-loop stopped: a human must look",
        )
        .await;
        let number = match self.find_escalation().await {
            Ok(Some(n)) => {
                let r = self
                    .gh
                    .patch(
                        &format!("repos/{repo}/issues/{n}"),
                        &json!({"body": self.escalation_body(body)}),
                    )
                    .await;
                if let Err(err) = r {
                    self.note("update the escalation issue", &err);
                }
                Some(n)
            }
            Ok(None) => {
                let payload = json!({
                    "title": format!("QA Loop needs a human on #{}", self.target.pr),
                    "body": self.escalation_body(body),
                    "labels": [e.label],
                    "assignees": e.assignees,
                });
                match self
                    .gh
                    .post(&format!("repos/{repo}/issues"), &payload)
                    .await
                {
                    Ok(v) => v["number"].as_u64(),
                    Err(GhError::Uncertain { .. }) => match self.find_escalation().await {
                        Ok(Some(n)) => Some(n),
                        _ => match self
                            .gh
                            .post(&format!("repos/{repo}/issues"), &payload)
                            .await
                        {
                            Ok(v) => v["number"].as_u64(),
                            Err(err) => {
                                self.note("open the escalation issue", &err);
                                None
                            }
                        },
                    },
                    Err(err) => {
                        self.note("open the escalation issue", &err);
                        None
                    }
                }
            }
            Err(err) => {
                self.note("look up the escalation issue", &err);
                None
            }
        };
        // Adding a label twice is harmless: re-sent after an uncertain answer.
        let labels = json!({"labels": [e.needs_human]});
        let path = format!("repos/{repo}/issues/{}/labels", self.target.pr);
        if let Err(err) = self.idempotent(Method::POST, &path, &labels).await {
            self.note("label the pull request", &err);
        }
        number
    }

    /// Approved after an escalation: the issue is closed with a comment and the PR label removed.
    pub async fn resolve_escalation(&mut self, iteration: u32) {
        let repo = self.target.repo.clone();
        match self.find_escalation().await {
            Ok(Some(n)) => {
                let comment = format!(
                    "Resolved: #{} was approved by QA Loop at iteration {iteration}.",
                    self.target.pr
                );
                let r = self
                    .gh
                    .post(
                        &format!("repos/{repo}/issues/{n}/comments"),
                        &json!({"body": comment}),
                    )
                    .await;
                if let Err(err) = r {
                    self.note("comment on the escalation issue", &err);
                }
                let closed = json!({"state": "closed", "state_reason": "completed"});
                if let Err(err) = self
                    .patch_twice(&format!("repos/{repo}/issues/{n}"), &closed)
                    .await
                {
                    self.note("close the escalation issue", &err);
                }
                let label = encode(&self.escalation.needs_human);
                let path = format!("repos/{repo}/issues/{}/labels/{label}", self.target.pr);
                match self.gh.delete(&path).await {
                    Ok(()) => {}
                    Err(err) if err.status() == Some(404) => {}
                    Err(err) => self.note("remove the needs-human label", &err),
                }
            }
            Ok(None) => {}
            Err(err) => self.note("look up the escalation issue", &err),
        }
    }

    fn escalation_body(&self, body: &str) -> String {
        format!(
            "{}\nPull request: #{}\n\n{}",
            escalation_marker(self.target.pr),
            self.target.pr,
            crate::github::actions::cut(body, 60_000, "the run's QA_HUMAN_ESCALATION.md")
        )
    }

    /// The open escalation issue of this PR (by marker, written by a trusted author).
    async fn find_escalation(&mut self) -> Result<Option<u64>, GhError> {
        let path = format!(
            "repos/{}/issues?state=open&labels={}",
            self.target.repo,
            encode(&self.escalation.label)
        );
        let marker = escalation_marker(self.target.pr);
        let list = self.gh.get_all(&path, 10).await?;
        let marked: Vec<&Value> = list
            .iter()
            .filter(|i| i["pull_request"].is_null())
            .filter(|i| i["body"].as_str().is_some_and(|b| b.starts_with(&marker)))
            .collect();
        if !marked.is_empty() {
            self.identify().await;
        }
        Ok(marked
            .into_iter()
            .filter(|i| (self.trusted())(&i["user"]))
            .filter_map(|i| i["number"].as_u64())
            .min())
    }

    async fn ensure_label(&mut self, name: &str, color: &str, description: &str) {
        let repo = self.target.repo.clone();
        match self
            .gh
            .get(&format!("repos/{repo}/labels/{}", encode(name)))
            .await
        {
            Ok(_) => {}
            Err(e) if e.status() == Some(404) => {
                let body = json!({"name": name, "color": color, "description": description});
                match self.gh.post(&format!("repos/{repo}/labels"), &body).await {
                    // 422: it exists after all (an uncertain create, or a racing run).
                    Ok(_) => {}
                    Err(e) if e.status() == Some(422) => {}
                    Err(GhError::Uncertain { .. }) => {}
                    Err(e) => self.note(&format!("create the label `{name}`"), &e),
                }
            }
            Err(e) => self.note(&format!("read the label `{name}`"), &e),
        }
    }

    /// A write whose repetition is harmless (an update, adding a label): sent once more after an
    /// uncertain answer.
    async fn idempotent(&self, method: Method, path: &str, body: &Value) -> Result<Value, GhError> {
        match self.gh.send(method.clone(), path, Some(body)).await {
            Err(GhError::Uncertain { .. }) => self.gh.send(method, path, Some(body)).await,
            other => other,
        }
        .map(|a| a.body)
    }

    async fn patch_twice(&self, path: &str, body: &Value) -> Result<Value, GhError> {
        self.idempotent(Method::PATCH, path, body).await
    }
}

fn id_of(v: &Value) -> Result<u64, GhError> {
    v["id"]
        .as_u64()
        .ok_or_else(|| GhError::Transport("the created object has no `id`".into()))
}
