//! What one verification pass measured: the gates and the commands behind them.

use serde::{Deserialize, Serialize};

use super::IssueType;

/// Whether a gate holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GateStatus {
    Passed,
    Failed,
    /// Waiting on a human (the `critical` sign-off).
    Pending,
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

/// The result of one verification pass.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct VerificationReport {
    pub gates: Vec<Gate>,
    pub commands: Vec<CommandRun>,
}

impl VerificationReport {
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

    /// Whether the named suite gate passed, if it ran.
    pub fn gate_passed(&self, name: &str) -> Option<bool> {
        self.gates
            .iter()
            .find(|g| g.name == name)
            .map(|g| g.status == GateStatus::Passed)
    }
}
