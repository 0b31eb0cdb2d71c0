//! What browser verification (SPEC §12) found on each page.

use serde::{Deserialize, Serialize};

/// One page of `browser_verification.pages`, as loaded in the headless browser.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PageResult {
    /// The URL loaded.
    pub url: String,
    /// Every built-in check held (free-text checks are the reviewer's).
    pub passed: bool,
    pub checks: Vec<PageCheck>,
    /// The screenshot, relative to the repository root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub screenshot: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub console_errors: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed_requests: Vec<String>,
}

/// One check of a page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PageCheck {
    pub check: String,
    /// `None` for a free-text check: the reviewer judges it.
    pub passed: Option<bool>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub detail: String,
}
