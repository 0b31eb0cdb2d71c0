//! The shared vocabulary of qa-loop: issues, verdicts, gates and iteration records.
//!
//! Every other module speaks these types; none of them does I/O.

mod browser;
mod conversation;
mod issue;
mod verdict;
mod verification;

pub use browser::{PageCheck, PageResult};
pub use conversation::{JudgeVerdict, ScenarioOutcome, ScenarioResult, Turn};
pub use issue::{Issue, IssueType, Severity, gate_failure_title, is_gate_failure_title};
pub use verdict::{CriterionResult, ReviewStatus, Verdict};
pub use verification::{
    CaseStatus, CommandOutcome, CommandRun, FailingFirst, Finding, Gate, GateStatus, SuiteTests,
    TEST_INTEGRITY_GATE, TestCase, TestCounts, VerificationReport,
};
