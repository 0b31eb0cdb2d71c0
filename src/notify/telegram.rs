//! Telegram: `sendMessage` in HTML parse mode (`<`, `>`, `&` escaped), at most 4 096
//! characters — a longer message is cut, with a pointer to the full report.

use serde_json::{Value, json};

use super::{Notice, deliver, text};
use crate::config::file::TelegramNotify;

pub const DEFAULT_API_URL: &str = "https://api.telegram.org";
/// `sendMessage`'s limit.
pub const LIMIT: usize = 4096;

/// HTML escaping for Telegram's HTML mode.
pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The message text, within [`LIMIT`] characters (counted on the source, which is never
/// shorter than what Telegram counts).
pub fn message(n: &Notice) -> String {
    let head = format!(
        "<b>{}</b> — {}\n{}",
        escape(&text::what(n)),
        escape(&text::subject(n)),
        escape(&text::facts(n))
    );
    let links: Vec<String> = text::links(n)
        .into_iter()
        .map(|(k, v)| format!("<a href=\"{}\">{}</a>", escape(v), escape(k)))
        .collect();
    let tail = if links.is_empty() {
        String::new()
    } else {
        format!("\n\n{}", links.join(" · "))
    };
    let mut middle = String::new();
    if !n.summary.is_empty() {
        middle.push_str(&format!("\n\n{}", escape(&n.summary)));
    }
    for i in &n.top_issues {
        middle.push_str(&format!("\n• {}", escape(i)));
    }
    let budget = LIMIT.saturating_sub(head.chars().count() + tail.chars().count());
    if middle.chars().count() > budget {
        let pointer = match &n.links.pull_request {
            Some(_) => "\n… (cut — the full report is on the pull request)",
            None => "\n… (cut — the full report is in qa_report.md)",
        };
        let keep = budget.saturating_sub(pointer.chars().count());
        let mut cut: String = middle.chars().take(keep).collect();
        // Never end inside an entity (`&am`).
        if let Some(amp) = cut.rfind('&')
            && !cut[amp..].contains(';')
        {
            cut.truncate(amp);
        }
        middle = cut + pointer;
    }
    head + &middle + &tail
}

pub struct Telegram {
    api_url: String,
    token: String,
    chat_id: String,
}

impl Telegram {
    pub fn new(cfg: &TelegramNotify, token: String) -> Telegram {
        Telegram {
            api_url: cfg
                .api_url
                .clone()
                .unwrap_or_else(|| DEFAULT_API_URL.into())
                .trim_end_matches('/')
                .to_string(),
            token,
            chat_id: cfg.chat_id.clone(),
        }
    }

    pub async fn send(&self, client: &reqwest::Client, n: &Notice) -> Result<(), String> {
        let url = format!("{}/bot{}/sendMessage", self.api_url, self.token);
        let body = json!({
            "chat_id": self.chat_id,
            "text": message(n),
            "parse_mode": "HTML",
            "link_preview_options": {"is_disabled": true},
        });
        let answer = deliver(|| client.post(&url).json(&body), false).await?;
        let v: Value = answer
            .json()
            .await
            .map_err(|e| format!("sendMessage: not JSON: {e}"))?;
        if v["ok"] != Value::Bool(true) {
            return Err(format!(
                "sendMessage: {}",
                v["description"].as_str().unwrap_or("not ok")
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::file::NotifyEvent;

    #[test]
    fn messages_are_escaped_and_cut_with_a_pointer() {
        let n = Notice {
            event: Some(NotifyEvent::Escalated),
            title: "<script> & \"x\"".into(),
            summary: "fine".into(),
            ..Default::default()
        };
        let m = message(&n);
        assert!(m.contains("&lt;script&gt; &amp; &quot;x&quot;"), "{m}");
        let long = Notice {
            summary: "é&".repeat(5_000),
            links: super::super::Links {
                pull_request: Some("https://github.com/o/r/pull/1".into()),
                ..Default::default()
            },
            ..n
        };
        let m = message(&long);
        assert!(m.chars().count() <= LIMIT, "{}", m.chars().count());
        assert!(
            m.contains("(cut — the full report is on the pull request)"),
            "{m}"
        );
        assert!(
            m.ends_with("<a href=\"https://github.com/o/r/pull/1\">pull request</a>"),
            "{m}"
        );
    }
}
