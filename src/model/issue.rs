//! An issue found by the reviewer or by a verification gate.

use serde::{Deserialize, Serialize};

/// The kind of problem, as named in the verdict schema (SPEC §5.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IssueType {
    AcceptanceCriteria,
    UnitTest,
    IntegrationTest,
    E2eTest,
    Coverage,
    CodeQuality,
    ErrorHandling,
    Security,
    Performance,
}

impl IssueType {
    /// Every type, in schema order.
    pub const ALL: [IssueType; 9] = [
        IssueType::AcceptanceCriteria,
        IssueType::UnitTest,
        IssueType::IntegrationTest,
        IssueType::E2eTest,
        IssueType::Coverage,
        IssueType::CodeQuality,
        IssueType::ErrorHandling,
        IssueType::Security,
        IssueType::Performance,
    ];

    /// The schema name (`unit_test`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            IssueType::AcceptanceCriteria => "acceptance_criteria",
            IssueType::UnitTest => "unit_test",
            IssueType::IntegrationTest => "integration_test",
            IssueType::E2eTest => "e2e_test",
            IssueType::Coverage => "coverage",
            IssueType::CodeQuality => "code_quality",
            IssueType::ErrorHandling => "error_handling",
            IssueType::Security => "security",
            IssueType::Performance => "performance",
        }
    }

    /// Parses a schema name, tolerating case, dashes and spaces (`Unit Test`, `unit-test`).
    pub fn parse_lenient(text: &str) -> Option<IssueType> {
        let norm: String = text
            .trim()
            .chars()
            .map(|c| {
                if c == '-' || c == ' ' {
                    '_'
                } else {
                    c.to_ascii_lowercase()
                }
            })
            .collect();
        IssueType::ALL.into_iter().find(|t| t.as_str() == norm)
    }

    /// Types that describe failing tests; a reworded issue drifts between these and
    /// `acceptance_criteria` without changing what it is about.
    pub fn family(self) -> u8 {
        match self {
            IssueType::AcceptanceCriteria
            | IssueType::UnitTest
            | IssueType::IntegrationTest
            | IssueType::E2eTest => 0,
            IssueType::CodeQuality | IssueType::ErrorHandling | IssueType::Performance => 1,
            IssueType::Coverage => 2,
            IssueType::Security => 3,
        }
    }
}

impl std::fmt::Display for IssueType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How bad an issue is.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Critical,
    High,
    Medium,
    Low,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Critical => "critical",
            Severity::High => "high",
            Severity::Medium => "medium",
            Severity::Low => "low",
        }
    }

    pub fn parse_lenient(text: &str) -> Option<Severity> {
        match text.trim().to_ascii_lowercase().as_str() {
            "critical" | "blocker" => Some(Severity::Critical),
            "high" | "major" => Some(Severity::High),
            "medium" | "moderate" => Some(Severity::Medium),
            "low" | "minor" | "info" => Some(Severity::Low),
            _ => None,
        }
    }
}

/// One issue of a verdict (SPEC §5.3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Issue {
    /// The reviewer's id within its iteration (`Q1`); gate issues use `G1`, `G2`, ….
    pub id: String,
    pub title: String,
    #[serde(rename = "type")]
    pub kind: IssueType,
    pub severity: Severity,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// How many lines `file` had when the review raised the issue, counted by qa-loop (never
    /// taken from the reviewer): the recurring-issue matcher scales line distances by it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_lines: Option<u32>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// The prescriptive fix the fixer is asked to carry out.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub fix: String,
    /// The reviewer's own mark: the id (`I2.Q1` or `Q1`) of an earlier issue this one repeats.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recurs: Option<String>,
    /// Whether the change introduced the issue (the reviewer's `introduced`, default true); a
    /// located claim that it did not is checked against the base. `false`: it was there before
    /// the change — reported apart, never fixed, never blocking.
    #[serde(default = "introduced_default", skip_serializing_if = "is_introduced")]
    pub introduced: bool,
    /// The finding's identity across iterations and runs (`engine::fingerprint`), the same for
    /// the same problem whatever its wording.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
}

fn introduced_default() -> bool {
    true
}

fn is_introduced(introduced: &bool) -> bool {
    *introduced
}

impl Issue {
    /// `file:line`, `file`, or nothing.
    pub fn location(&self) -> Option<String> {
        location(self.file.as_deref(), self.line)
    }
}

/// The title of the issue a failed required gate without findings of its own becomes.
pub fn gate_failure_title(gate: &str, summary: &str) -> String {
    format!("{GATE_FAILURE}{gate}` failed: {summary}")
}

/// Whether `title` is a failed gate's own issue ([`gate_failure_title`]; earlier runs' history
/// holds the same titles).
pub fn is_gate_failure_title(title: &str) -> bool {
    title
        .strip_prefix(GATE_FAILURE)
        .is_some_and(|rest| rest.contains("` failed: "))
}

const GATE_FAILURE: &str = "Required gate `";

/// `file:line`, or `file` alone, or nothing.
pub fn location(file: Option<&str>, line: Option<u32>) -> Option<String> {
    match (file, line) {
        (Some(f), Some(l)) => Some(format!("{f}:{l}")),
        (Some(f), None) => Some(f.to_string()),
        _ => None,
    }
}
