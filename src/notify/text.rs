//! The words of a notification, before each target's format and escaping.

use super::Notice;
use crate::config::file::NotifyEvent;

/// `3m 12s`.
pub fn duration(seconds: u64) -> String {
    match seconds {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m {}s", s / 60, s % 60),
        s => format!("{}h {}m", s / 3600, (s % 3600) / 60),
    }
}

/// What happened, in a few words.
pub fn what(n: &Notice) -> String {
    let it = n.iteration.unwrap_or(0);
    match n.event {
        Some(NotifyEvent::Started) => "QA started".into(),
        Some(NotifyEvent::Rejected) => format!(
            "QA rejected iteration {it}: {} issue{}",
            n.issues.unwrap_or(0),
            if n.issues == Some(1) { "" } else { "s" }
        ),
        Some(NotifyEvent::Approved) => format!(
            "QA approved after {it} iteration{} in {}",
            if it == 1 { "" } else { "s" },
            duration(n.duration_seconds)
        ),
        Some(NotifyEvent::MaxIterations) => {
            format!("QA stopped at max iterations ({it}) without approval")
        }
        Some(NotifyEvent::Escalated) => "QA escalated to a human".into(),
        Some(NotifyEvent::Error) => "QA stopped with errors".into(),
        None => "QA".into(),
    }
}

/// What the change is: `owner/name#12 "title"`, or the branch of a local run.
pub fn subject(n: &Notice) -> String {
    match (&n.repository, n.pull_request) {
        (Some(repo), Some(pr)) => format!("{repo}#{pr} {}", n.title),
        _ => n.title.clone(),
    }
}

/// `iteration 2 · 3 issues · score 55/100 · 4m 2s`.
pub fn facts(n: &Notice) -> String {
    let mut parts = Vec::new();
    if let Some(i) = n.iteration {
        parts.push(format!("iteration {i}"));
    }
    if let Some(k) = n.issues {
        parts.push(format!("{k} issue{}", if k == 1 { "" } else { "s" }));
    }
    if let Some(s) = n.score {
        parts.push(format!("score {s}/100"));
    }
    parts.push(duration(n.duration_seconds));
    parts.join(" · ")
}

/// The links, labelled, in a fixed order.
pub fn links(n: &Notice) -> Vec<(&'static str, &str)> {
    let l = &n.links;
    [
        ("pull request", l.pull_request.as_deref()),
        ("check run", l.check_run.as_deref()),
        ("escalation issue", l.escalation_issue.as_deref()),
        ("run", l.run.as_deref()),
    ]
    .into_iter()
    .filter_map(|(k, v)| v.map(|v| (k, v)))
    .collect()
}

/// Plain text: headline, facts, summary, issues, links (Linear's markdown starts from it too).
pub fn plain(n: &Notice) -> String {
    let mut out = format!("{} — {}\n{}\n", what(n), subject(n), facts(n));
    if !n.summary.is_empty() {
        out.push_str(&format!("\n{}\n", n.summary));
    }
    if !n.top_issues.is_empty() {
        out.push('\n');
        for i in &n.top_issues {
            out.push_str(&format!("- {i}\n"));
        }
    }
    for (k, v) in links(n) {
        out.push_str(&format!("{k}: {v}\n"));
    }
    out
}

/// `s` cut to at most `max` characters, ending with `…` when cut.
pub fn cut_chars(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}
