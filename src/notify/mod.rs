//! Notifications (SPEC §11): run events sent where the team already looks — a Linear issue's
//! comments (and state), Slack, Telegram, a signed webhook. The same redacted, sanitised
//! [`Notice`] goes everywhere; each target renders it in its own format and escaping.
//!
//! Delivery is bounded (a timeout per request and per event), retried only when the message
//! surely did not land (no connection, `429`), so an event is never sent twice — except to the
//! webhook, whose receivers get a delivery id to drop a repeat; a failure is a warning for the
//! report and never changes the verdict or the exit code.
//!
//! - [`linear`], [`slack`], [`telegram`], [`webhook`]: the targets' wire formats;
//! - [`text`]: the one headline and body every target starts from.

pub mod linear;
pub mod slack;
pub mod telegram;
pub mod text;
pub mod webhook;

use std::time::Duration;

use serde::Serialize;

use crate::config::file::{NotifyConfig, NotifyEvent};

/// One request's time limit.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// Attempts of a request that did not land.
const ATTEMPTS: u32 = 3;
/// The longest `Retry-After` honoured.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(10);
/// Issue titles listed in a notice.
pub const LISTED_ISSUES: usize = 5;

/// What every notification says.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Notice {
    pub event: Option<NotifyEvent>,
    /// `owner/name` on GitHub.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repository: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pull_request: Option<u64>,
    /// The PR's title, or the branch of a local run.
    pub title: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iteration: Option<u32>,
    /// Open issues of the iteration.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub issues: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score: Option<u8>,
    pub duration_seconds: u64,
    /// The reviewer's summary or why the run stopped (redacted, one paragraph).
    pub summary: String,
    /// The first issues' titles.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub top_issues: Vec<String>,
    pub links: Links,
}

/// Where to read more.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Links {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pull_request: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub check_run: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub escalation_issue: Option<String>,
    /// The Actions run (logs and the report artifact).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
}

/// What finds the Linear issue of a change when the config does not name it.
#[derive(Debug, Clone, Default)]
pub struct Hints {
    pub branch: Option<String>,
    pub title: Option<String>,
    pub body: Option<String>,
    /// The plan's `linear_issue`.
    pub plan_issue: Option<String>,
}

/// The configured targets, with their secrets read.
pub struct Notifier {
    events: Vec<NotifyEvent>,
    client: reqwest::Client,
    linear: Option<linear::Linear>,
    slack: Option<slack::Slack>,
    telegram: Option<telegram::Telegram>,
    webhook: Option<webhook::Webhook>,
    /// Events already sent (one message per event per run).
    sent: Vec<(NotifyEvent, Option<u32>)>,
}

impl Notifier {
    /// The targets of `cfg`, their secrets read with `env`; a target whose secret is not set
    /// is left out with a warning.
    pub fn new(
        cfg: &NotifyConfig,
        env: impl Fn(&str) -> Option<String>,
        hints: Hints,
    ) -> Result<(Notifier, Vec<String>), String> {
        let mut warnings = Vec::new();
        let mut secret = |target: &str, var: &str| -> Option<String> {
            match env(var).filter(|v| !v.trim().is_empty()) {
                Some(v) => {
                    crate::secrets::register([v.clone()]);
                    Some(v)
                }
                None => {
                    warnings.push(format!(
                        "notify.{target}: `{var}` is not set; no {target} notifications are sent"
                    ));
                    None
                }
            }
        };
        let linear = cfg.linear.as_ref().and_then(|l| {
            secret("linear", &l.api_key_env).map(|key| linear::Linear::new(l, key, &hints))
        });
        let slack = cfg.slack.as_ref().and_then(|s| {
            let bot = s.bot_token_env.as_deref().and_then(|v| secret("slack", v));
            let hook = match (&bot, s.webhook_url_env.as_deref()) {
                (None, Some(v)) => secret("slack", v),
                _ => None,
            };
            slack::Slack::new(s, hook, bot)
        });
        let telegram = cfg.telegram.as_ref().and_then(|t| {
            secret("telegram", &t.bot_token_env).map(|token| telegram::Telegram::new(t, token))
        });
        let webhook = cfg.webhook.as_ref().map(|w| {
            let key = w.secret_env.as_deref().and_then(|v| secret("webhook", v));
            webhook::Webhook::new(w, key)
        });
        let client = crate::llm::http::https_client(REQUEST_TIMEOUT)?;
        Ok((
            Notifier {
                events: cfg
                    .events
                    .clone()
                    .unwrap_or_else(|| NotifyEvent::ALL.to_vec()),
                client,
                linear,
                slack,
                telegram,
                webhook,
                sent: Vec::new(),
            },
            warnings,
        ))
    }

    /// Whether anything would be sent for `event`.
    pub fn wants(&self, event: NotifyEvent) -> bool {
        self.events.contains(&event)
    }

    /// Sends `notice` to every target (once per event and iteration); returns the warnings.
    pub async fn send(&mut self, notice: &Notice) -> Vec<String> {
        let Some(event) = notice.event else {
            return Vec::new();
        };
        let key = (event, notice.iteration);
        if !self.wants(event) || self.sent.contains(&key) {
            return Vec::new();
        }
        self.sent.push(key);
        let mut warnings = Vec::new();
        let client = &self.client;
        if let Some(l) = &mut self.linear
            && let Err(e) = l.send(client, notice).await
        {
            warnings.push(format!("notify.linear: {e}"));
        }
        if let Some(s) = &mut self.slack
            && let Err(e) = s.send(client, notice).await
        {
            warnings.push(format!("notify.slack: {e}"));
        }
        if let Some(t) = &self.telegram
            && let Err(e) = t.send(client, notice).await
        {
            warnings.push(format!("notify.telegram: {e}"));
        }
        if let Some(w) = &self.webhook
            && let Err(e) = w.send(client, notice).await
        {
            warnings.push(format!("notify.webhook: {e}"));
        }
        warnings
            .into_iter()
            .map(|w| crate::secrets::redact(&w).into_owned())
            .collect()
    }
}

/// Whether a failed attempt may be repeated: only when the request surely did not land
/// (`retry_5xx` for targets whose receivers drop repeats).
enum Attempt {
    Done(reqwest::Response),
    Retry(Option<Duration>, String),
    Fail(String),
}

/// Sends the request `build` makes, retrying what did not land; `Ok` is any answer < 400.
pub async fn deliver(
    build: impl Fn() -> reqwest::RequestBuilder,
    retry_5xx: bool,
) -> Result<reqwest::Response, String> {
    let mut last = String::new();
    for attempt in 1..=ATTEMPTS {
        let outcome = match build().send().await {
            Ok(r) if r.status().is_success() => Attempt::Done(r),
            Ok(r) if r.status().as_u16() == 429 || (retry_5xx && r.status().is_server_error()) => {
                let after = r
                    .headers()
                    .get(reqwest::header::RETRY_AFTER)
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.trim().parse::<u64>().ok())
                    .map(Duration::from_secs);
                let status = r.status().as_u16();
                let body = r.text().await.unwrap_or_default();
                Attempt::Retry(
                    after,
                    format!("HTTP {status} {}", crate::text::clip(body.trim(), 200)),
                )
            }
            Ok(r) => {
                let status = r.status().as_u16();
                let body = r.text().await.unwrap_or_default();
                Attempt::Fail(format!(
                    "HTTP {status} {}",
                    crate::text::clip(body.trim(), 300)
                ))
            }
            // Not connected: nothing was sent.
            Err(e) if e.is_connect() => Attempt::Retry(
                None,
                crate::conversations::endpoint::error_chain(&e.without_url()),
            ),
            // A timeout or a broken answer: it may have landed, so it is not sent again.
            Err(e) => Attempt::Fail(crate::conversations::endpoint::error_chain(
                &e.without_url(),
            )),
        };
        match outcome {
            Attempt::Done(r) => return Ok(r),
            Attempt::Fail(why) => return Err(why.trim_end().to_string()),
            Attempt::Retry(after, why) => {
                last = why;
                if attempt < ATTEMPTS {
                    let wait = after
                        .unwrap_or(Duration::from_millis(500 * u64::from(attempt)))
                        .min(MAX_RETRY_AFTER);
                    tokio::time::sleep(wait).await;
                }
            }
        }
    }
    Err(format!("{} (after {ATTEMPTS} attempts)", last.trim_end()))
}
