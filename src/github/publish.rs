//! Publishing a run on its pull request, shared by the three things qa-loop writes there — the
//! check run ([`super::check_run`]), the sticky comment with the cross-run state
//! ([`super::sticky`]) and the escalation issue ([`super::escalation`]): the PR they report on,
//! the account qa-loop posts as, and how a write is repeated. Publishing never fails the run: a
//! GitHub failure is logged, and the report files stay the source of truth. No create is
//! repeated blindly: an uncertain create is looked up first.

use std::rc::Rc;

use reqwest::Method;
use serde_json::{Value, json};

use super::client::{GhError, GitHub};

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
    /// The human's words after `/qa resume` or `/qa fix` (sanitised; empty otherwise).
    pub words: String,
    /// The PR's base branch (what the change is compared with).
    pub base_ref: String,
}

/// Who the job's token posts as: installation tokens cannot read `GET /user` (403
/// "Resource not accessible by integration").
pub const ACTIONS_BOT: &str = "github-actions[bot]";

/// The login qa-loop posts as, found once and shared by the comment and the escalation issue:
/// only that account's markers are trusted as state.
#[derive(Clone)]
pub struct Identity {
    gh: GitHub,
    known: Rc<tokio::sync::OnceCell<String>>,
}

impl Identity {
    /// `bot_login` (`--bot-login`) when given; else found from the token on first use.
    pub fn new(gh: GitHub, bot_login: Option<String>) -> Identity {
        Identity {
            gh,
            known: Rc::new(tokio::sync::OnceCell::new_with(bot_login)),
        }
    }

    /// `--bot-login`; else the token's user (`GET /user`, user tokens); else — the token cannot
    /// read it, as installation tokens cannot — `github-actions[bot]`.
    pub async fn login(&self) -> &str {
        self.known
            .get_or_init(|| async {
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
                login
            })
            .await
    }

    /// Whether `user` (a REST user object) is qa-loop's account.
    pub async fn is(&self, user: &Value) -> bool {
        super::comment::trusted_author(user, self.login().await)
    }
}

/// Logs what could not be published.
pub fn note(what: &str, e: &GhError) {
    tracing::warn!("cannot {what}: {e}");
}

/// A write whose repetition is harmless (an update, adding a label): sent once more after an
/// uncertain answer.
pub async fn idempotent(
    gh: &GitHub,
    method: Method,
    path: &str,
    body: &Value,
) -> Result<Value, GhError> {
    match gh.send(method.clone(), path, Some(body)).await {
        Err(GhError::Uncertain { .. }) => gh.send(method, path, Some(body)).await,
        other => other,
    }
    .map(|a| a.body)
}

pub async fn patch_twice(gh: &GitHub, path: &str, body: &Value) -> Result<Value, GhError> {
    idempotent(gh, Method::PATCH, path, body).await
}

pub fn id_of(v: &Value) -> Result<u64, GhError> {
    v["id"]
        .as_u64()
        .ok_or_else(|| GhError::Transport("the created object has no `id`".into()))
}

/// Offers fixes as a review with suggestion blocks on the PR head (fork PRs).
pub async fn suggest(gh: &GitHub, target: &Target, comments: Vec<Value>) {
    if comments.is_empty() {
        return;
    }
    let body = json!({
        "commit_id": target.head_sha,
        "event": "COMMENT",
        "body": "qa-loop cannot push to a fork: its fixes are offered as suggestions (the full patch is in the report comment).",
        "comments": comments,
    });
    let path = format!("repos/{}/pulls/{}/reviews", target.repo, target.pr);
    if let Err(e) = gh.post(&path, &body).await {
        note("post the suggestions", &e);
    }
}
