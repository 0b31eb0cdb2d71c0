//! What one verification pass measured: the gates and the commands behind them.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::{IssueType, Severity};

/// Whether a gate holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GateStatus {
    Passed,
    Failed,
    /// Waiting on a human (the `critical` sign-off).
    Pending,
    /// Not run, with the reason in the summary (a suite whose `paths` the change does not
    /// touch): it neither blocks nor approves.
    Skipped,
}

/// One gate: a required (or advisory) check that must hold before approval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Gate {
    /// `unit_tests`, `integration_tests`, `e2e_tests`, `coverage:unit_tests`, `human_signoff`.
    pub name: String,
    /// The issue type a failure of this gate becomes.
    pub issue_type: IssueType,
    pub required: bool,
    pub status: GateStatus,
    /// One line: why it passed or failed.
    pub summary: String,
    /// Failure output (head + tail), for the reviewer and the fixer.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub excerpt: String,
    /// Individual problems behind a failure (failing test cases, pattern findings): each becomes
    /// its own issue when the gate is required.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<Finding>,
}

impl Gate {
    /// A gate without findings.
    pub fn new(
        name: impl Into<String>,
        issue_type: IssueType,
        required: bool,
        status: GateStatus,
        summary: impl Into<String>,
        excerpt: impl Into<String>,
    ) -> Gate {
        Gate {
            name: name.into(),
            issue_type,
            required,
            status,
            summary: summary.into(),
            excerpt: excerpt.into(),
            findings: Vec::new(),
        }
    }
}

impl Finding {
    /// `file:line`, `file`, or nothing.
    pub fn location(&self) -> Option<String> {
        super::issue::location(self.file.as_deref(), self.line)
    }
}

/// One located problem found by verification (a failing test, a pattern on an added line).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    #[serde(rename = "type")]
    pub kind: IssueType,
    pub severity: Severity,
    pub title: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// Evidence (assertion text, the matched line), bounded.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub detail: String,
    /// What to do about it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub fix: String,
}

/// How a command ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "outcome")]
pub enum CommandOutcome {
    Passed,
    Failed {
        code: i32,
    },
    TimedOut {
        seconds: u64,
    },
    Signalled {
        signal: i32,
    },
    CouldNotStart {
        error: String,
    },
    /// qa-loop itself was asked to stop (SIGINT/SIGTERM).
    Cancelled {
        reason: String,
    },
}

impl CommandOutcome {
    pub fn passed(&self) -> bool {
        matches!(self, CommandOutcome::Passed)
    }

    /// A short human description: `passed`, `exit code 1`, `timed out after 20s`, ….
    pub fn describe(&self) -> String {
        match self {
            CommandOutcome::Passed => "passed".into(),
            CommandOutcome::Failed { code } => format!("exit code {code}"),
            CommandOutcome::TimedOut { seconds } => format!("timed out after {seconds}s"),
            CommandOutcome::Signalled { signal } => format!("killed by signal {signal}"),
            CommandOutcome::CouldNotStart { error } => format!("could not start: {error}"),
            CommandOutcome::Cancelled { reason } => format!("stopped by {reason}"),
        }
    }
}

/// One command run by a suite.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandRun {
    pub suite: String,
    pub command: String,
    #[serde(flatten)]
    pub outcome: CommandOutcome,
    pub duration_ms: u64,
    /// Head and tail of the combined output.
    pub excerpt: String,
    /// Lines of the output that look like failures.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failure_lines: Vec<String>,
    /// Bytes of output written.
    #[serde(default)]
    pub output_bytes: u64,
    /// The log file holding the whole output (relative to the repository when inside it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log: Option<String>,
}

/// How one ingested test case ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CaseStatus {
    Passed,
    /// An assertion failed (`<failure>`).
    Failed,
    /// The test could not run to its assertions (`<error>`: setup failure, unexpected exception).
    Errored,
    Skipped,
}

/// One test case read from a JUnit report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestCase {
    /// The innermost `<testsuite name>` (shared by the suite's cases).
    pub suite: Arc<str>,
    /// Shared by consecutive cases of one class.
    pub classname: Arc<str>,
    pub name: String,
    pub status: CaseStatus,
    /// Shared by consecutive cases of one file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<Arc<str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// Seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<f64>,
    /// The failure's `message` attribute (or its first text line).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// The failure's text (stack trace, assertion diff), bounded.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub detail: String,
    /// Failed on an earlier attempt and passed on the last (a runner's re-run or retry).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub flaky: bool,
    /// A test a fix added, run on the code before the fix too: it failed there (it proves the
    /// fix) or passed (it proves nothing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proves_fix: Option<bool>,
}

impl TestCase {
    /// `classname::name`, or the name alone when it already carries the class (jest-junit).
    pub fn full_name(&self) -> String {
        if self.classname.is_empty() || self.name.starts_with(&*self.classname) {
            self.name.clone()
        } else {
            format!("{}::{}", self.classname, self.name)
        }
    }

    /// `file:line`, `file`, or nothing.
    pub fn location(&self) -> Option<String> {
        super::issue::location(self.file.as_deref(), self.line)
    }

    pub fn is_failure(&self) -> bool {
        matches!(self.status, CaseStatus::Failed | CaseStatus::Errored)
    }
}

/// Counts of a set of test cases.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestCounts {
    pub tests: u64,
    pub passed: u64,
    pub failed: u64,
    pub errored: u64,
    pub skipped: u64,
    /// Passed tests that failed on an earlier attempt (counted among `passed` too).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub flaky: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl TestCounts {
    pub fn of<'a>(cases: impl IntoIterator<Item = &'a TestCase>) -> TestCounts {
        let mut c = TestCounts::default();
        for case in cases {
            c.tests += 1;
            c.flaky += u64::from(case.flaky);
            match case.status {
                CaseStatus::Passed => c.passed += 1,
                CaseStatus::Failed => c.failed += 1,
                CaseStatus::Errored => c.errored += 1,
                CaseStatus::Skipped => c.skipped += 1,
            }
        }
        c
    }

    /// `120 tests: 117 passed, 2 failed, 1 skipped` (zero figures left out).
    pub fn describe(&self) -> String {
        let mut parts = vec![format!("{} passed", self.passed)];
        for (n, what) in [
            (self.failed, "failed"),
            (self.errored, "errored"),
            (self.skipped, "skipped"),
            (self.flaky, "flaky (passed on a re-run)"),
        ] {
            if n > 0 {
                parts.push(format!("{n} {what}"));
            }
        }
        format!("{} tests: {}", self.tests, parts.join(", "))
    }
}

/// The test results a suite's JUnit reports held.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SuiteTests {
    /// The qa-loop suite (`unit_tests`, …).
    pub suite: String,
    /// The report files read (relative to the repository).
    pub reports: Vec<String>,
    pub counts: TestCounts,
    /// Every case (`qa-loop-junit.xml` carries them through); only the failing ones are
    /// serialized into `qa-result.json`.
    #[serde(serialize_with = "failing_only")]
    pub cases: Vec<TestCase>,
    /// Reports that were missing, stale or unreadable.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
}

fn failing_only<S: serde::Serializer>(cases: &[TestCase], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(cases.iter().filter(|c| c.is_failure()))
}

/// The result of one verification pass.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct VerificationReport {
    pub gates: Vec<Gate>,
    pub commands: Vec<CommandRun>,
    /// Results ingested from JUnit reports, per suite.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tests: Vec<SuiteTests>,
    /// Conversation scenarios run against the project's chat agent (SPEC §8).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conversations: Vec<super::ScenarioResult>,
    /// Pages verified in a headless browser (SPEC §12).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub browser: Vec<super::PageResult>,
    /// The pass whose results these are, reused because the tree was the same (a fix that
    /// changed nothing): nothing is verified twice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reused_from: Option<u32>,
    /// Set when this pass ran only what failed in the pass before (after a fix) and it still
    /// failed: the rest did not run. Such a pass never approves (only a full verification of
    /// the final tree does).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failing_first: Option<FailingFirst>,
}

/// A pass that ran only what failed before (SPEC §3: failing first, full once).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailingFirst {
    /// The test cases this pass ran (the failing tests, or the whole failing suites where the
    /// runner cannot select tests).
    pub ran: u64,
    /// The test cases of the last full verification.
    pub of: u64,
}

/// The gate that fails when a fix removed, skipped or weakened tests.
pub const TEST_INTEGRITY_GATE: &str = "test_integrity";

impl VerificationReport {
    /// Whether the test-integrity gate failed: the fix before this pass weakened the tests.
    pub fn tests_weakened(&self) -> bool {
        self.gates
            .iter()
            .any(|g| g.name == TEST_INTEGRITY_GATE && g.status == GateStatus::Failed)
    }

    /// Required gates that failed.
    pub fn failed_required(&self) -> impl Iterator<Item = &Gate> {
        self.gates
            .iter()
            .filter(|g| g.required && g.status == GateStatus::Failed)
    }

    /// Required gates waiting on a human.
    pub fn pending_required(&self) -> impl Iterator<Item = &Gate> {
        self.gates
            .iter()
            .filter(|g| g.required && g.status == GateStatus::Pending)
    }

    /// Whether this pass verified everything (not only what failed before).
    pub fn is_full(&self) -> bool {
        self.failing_first.is_none()
    }

    /// The test cases this pass ran, over every suite.
    pub fn test_count(&self) -> u64 {
        self.tests.iter().map(|t| t.counts.tests).sum()
    }

    /// What this pass ran, for the report: `full: 340` (`full` without JUnit results),
    /// `failing tests first: 2 of 340`, or `reused (pass 1)`.
    pub fn scope_text(&self) -> String {
        match (self.failing_first, self.reused_from) {
            (Some(f), Some(pass)) => {
                format!(
                    "failing tests first: {} of {} (reused, pass {pass})",
                    f.ran, f.of
                )
            }
            (None, Some(pass)) => format!("reused (pass {pass})"),
            (Some(f), None) if f.of == 0 => "failing suites first".to_string(),
            (Some(f), None) => format!("failing tests first: {} of {}", f.ran, f.of),
            // Without JUnit results the count is unknown.
            (None, None) if self.tests.is_empty() => "full".to_string(),
            (None, None) => format!("full: {}", self.test_count()),
        }
    }

    /// Whether the named suite gate passed, if it ran.
    pub fn gate_passed(&self, name: &str) -> Option<bool> {
        self.gates
            .iter()
            .find(|g| g.name == name && g.status != GateStatus::Skipped)
            .map(|g| g.status == GateStatus::Passed)
    }
}
