//! Slack: an incoming webhook (`{text, blocks}`, one message per event), or with a bot token
//! one message per run (`chat.postMessage`) and each later event as a reply in its thread.
//! Text is mrkdwn with `&`, `<`, `>` escaped (Slack's rule); a section's text stays within
//! Slack's 3 000 characters.

use serde_json::{Value, json};

use super::{Notice, deliver, text};
use crate::config::file::SlackNotify;

pub const DEFAULT_API_URL: &str = "https://slack.com/api";
/// A section block's text limit.
pub const SECTION_LIMIT: usize = 3000;

/// Slack's escaping for message text: `&`, `<`, `>`.
pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A link: `<url|label>` (`|` and `>` cannot appear in the URL part).
fn link(url: &str, label: &str) -> String {
    format!(
        "<{}|{}>",
        url.replace('|', "%7C")
            .replace('>', "%3E")
            .replace('<', "%3C"),
        escape(label)
    )
}

/// The message: `text` (the notification fallback) and a section block with the details.
pub fn message(n: &Notice) -> Value {
    let headline = format!(
        "*{}* — {}",
        escape(&text::what(n)),
        escape(&text::subject(n))
    );
    let mut body = format!("{headline}\n{}", escape(&text::facts(n)));
    if !n.summary.is_empty() {
        body.push_str(&format!("\n>{}", escape(&n.summary).replace('\n', "\n>")));
    }
    for i in &n.top_issues {
        body.push_str(&format!("\n• {}", escape(i)));
    }
    let links: Vec<String> = text::links(n)
        .into_iter()
        .map(|(k, v)| link(v, k))
        .collect();
    if !links.is_empty() {
        body.push_str(&format!("\n{}", links.join(" · ")));
    }
    let section = text::cut_chars(&body, SECTION_LIMIT);
    json!({
        "text": text::cut_chars(&format!("{} — {}", escape(&text::what(n)), escape(&text::subject(n))), 300),
        "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": section}}]
    })
}

pub struct Slack {
    webhook: Option<String>,
    bot: Option<(String, String)>,
    api_url: String,
    /// The run's message (`ts`), for thread replies.
    thread: Option<String>,
}

impl Slack {
    pub fn new(
        cfg: &SlackNotify,
        webhook: Option<String>,
        bot_token: Option<String>,
    ) -> Option<Slack> {
        let bot = bot_token.zip(cfg.channel.clone());
        (webhook.is_some() || bot.is_some()).then(|| Slack {
            webhook,
            bot,
            api_url: cfg
                .api_url
                .clone()
                .unwrap_or_else(|| DEFAULT_API_URL.into())
                .trim_end_matches('/')
                .to_string(),
            thread: None,
        })
    }

    pub async fn send(&mut self, client: &reqwest::Client, n: &Notice) -> Result<(), String> {
        let mut msg = message(n);
        if let Some((token, channel)) = &self.bot {
            msg["channel"] = json!(channel);
            if let Some(ts) = &self.thread {
                msg["thread_ts"] = json!(ts);
            }
            let url = format!("{}/chat.postMessage", self.api_url);
            let answer = deliver(|| client.post(&url).bearer_auth(token).json(&msg), false).await?;
            let v: Value = answer
                .json()
                .await
                .map_err(|e| format!("chat.postMessage: not JSON: {e}"))?;
            if v["ok"] != Value::Bool(true) {
                return Err(format!(
                    "chat.postMessage: {}",
                    v["error"].as_str().unwrap_or("not ok")
                ));
            }
            if self.thread.is_none() {
                self.thread = v["ts"].as_str().map(str::to_string);
            }
            return Ok(());
        }
        if let Some(url) = &self.webhook {
            deliver(|| client.post(url).json(&msg), false).await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::file::NotifyEvent;

    #[test]
    fn text_is_escaped_and_links_stay_links() {
        let n = Notice {
            event: Some(NotifyEvent::Rejected),
            title: "Use <b> & co".into(),
            iteration: Some(2),
            issues: Some(1),
            summary: "a > b".into(),
            links: super::super::Links {
                pull_request: Some("https://github.com/o/r/pull/1".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        let m = message(&n);
        let section = m["blocks"][0]["text"]["text"].as_str().unwrap();
        assert!(section.contains("Use &lt;b&gt; &amp; co"), "{section}");
        assert!(section.contains(">a &gt; b"), "{section}");
        assert!(
            section.contains("<https://github.com/o/r/pull/1|pull request>"),
            "{section}"
        );
        let long = Notice {
            summary: "x".repeat(10_000),
            ..n
        };
        let m = message(&long);
        assert!(
            m["blocks"][0]["text"]["text"]
                .as_str()
                .unwrap()
                .chars()
                .count()
                <= SECTION_LIMIT
        );
    }
}
