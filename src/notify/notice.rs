//! What every notification says ([`Notice`]), where to read more ([`Links`]), and what finds
//! the Linear issue of a change when the config does not name it ([`Hints`]).

use serde::Serialize;

use crate::config::file::NotifyEvent;

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
