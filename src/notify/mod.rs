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
//! - [`text`]: the one headline and body every target starts from;
//! - `notice`: the [`Notice`] itself, its [`Links`] and the [`Hints`] that find a Linear issue;
//! - `delivery`: one request sent, retried only when it surely did not land ([`deliver`]).

pub mod linear;
pub mod slack;
pub mod telegram;
pub mod text;
pub mod webhook;

mod delivery;
mod notice;

pub use delivery::{REQUEST_TIMEOUT, deliver};
pub use notice::{Hints, LISTED_ISSUES, Links, Notice};

use crate::config::file::{NotifyConfig, NotifyEvent};

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
