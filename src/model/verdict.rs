//! The reviewer's verdict (SPEC §5.3), after parsing and validation.

use serde::{Deserialize, Serialize};

use super::Issue;

/// The reviewer's decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReviewStatus {
    Approved,
    Rejected,
}

/// Whether one acceptance criterion is met, with the reviewer's evidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CriterionResult {
    pub criterion: String,
    pub met: bool,
    #[serde(default)]
    pub evidence: String,
}

/// A validated verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub status: ReviewStatus,
    /// 0–100.
    pub score: u8,
    /// 0.0–1.0.
    pub confidence: f64,
    pub summary: String,
    pub criteria: Vec<CriterionResult>,
    pub issues: Vec<Issue>,
    /// For projects without tests: the reviewer's checklist for a human (`MANUAL_TEST_PLAN.md`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manual_test_plan: Option<String>,
    /// The commit the review saw (set by qa-loop when the working tree was that commit, never
    /// read from the model).
    #[serde(skip)]
    pub reviewed_head: Option<String>,
}
