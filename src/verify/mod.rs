//! Verification: runs the strategy's suites and turns their results into gates.
//!
//! This is the minimal runner (sequential commands, exit codes as gates). JUnit and coverage
//! ingestion and pattern checks build on it.

pub mod process;

use std::path::PathBuf;

use crate::config::{Strategy, Suite};
use crate::model::{CommandRun, Gate, GateStatus, IssueType, VerificationReport};

/// Runs the verification strategy in a repository.
#[derive(Debug, Clone)]
pub struct Verifier {
    pub strategy: Strategy,
    pub root: PathBuf,
}

impl Verifier {
    pub fn new(strategy: Strategy, root: PathBuf) -> Self {
        Verifier { strategy, root }
    }

    /// Runs every suite's commands in order and returns the gates.
    pub async fn verify(&self) -> VerificationReport {
        let mut report = VerificationReport::default();
        for suite in &self.strategy.suites {
            let (gate, runs) = self.run_suite(suite).await;
            report.gates.push(gate);
            report.commands.extend(runs);
        }
        if self.strategy.human_signoff_required {
            report.gates.push(Gate {
                name: "human_signoff".into(),
                issue_type: IssueType::AcceptanceCriteria,
                required: true,
                status: GateStatus::Pending,
                summary:
                    "critical risk: waiting for a `/qa approve` comment by a user with write access"
                        .into(),
                excerpt: String::new(),
            });
        }
        report
    }

    async fn run_suite(&self, suite: &Suite) -> (Gate, Vec<CommandRun>) {
        let name = suite.kind.key().to_string();
        let issue_type = match suite.kind {
            crate::config::SuiteKind::Unit => IssueType::UnitTest,
            crate::config::SuiteKind::Integration => IssueType::IntegrationTest,
            crate::config::SuiteKind::E2e => IssueType::E2eTest,
        };
        if suite.commands.is_empty() {
            let gate = Gate {
                name,
                issue_type,
                required: suite.required,
                status: GateStatus::Failed,
                summary: format!(
                    "required at risk level but no `{}.commands` are configured",
                    suite.kind.key()
                ),
                excerpt: String::new(),
            };
            return (gate, Vec::new());
        }
        let mut runs = Vec::new();
        let mut failure: Option<(String, String)> = None;
        for command in &suite.commands {
            tracing::info!(suite = %name, %command, "running");
            let done = process::run_shell(
                command,
                &self.root,
                suite.timeout,
                process::EXCERPT_HEAD,
                process::EXCERPT_TAIL,
            )
            .await;
            tracing::info!(suite = %name, %command, outcome = %done.outcome.describe(), "finished");
            if failure.is_none() && !done.outcome.passed() {
                failure = Some((
                    format!("`{command}` {}", done.outcome.describe()),
                    done.output.clone(),
                ));
            }
            runs.push(CommandRun {
                suite: name.clone(),
                command: command.clone(),
                outcome: done.outcome,
                duration_ms: done.duration.as_millis() as u64,
                excerpt: done.output,
            });
        }
        let gate = match failure {
            None => Gate {
                name,
                issue_type,
                required: suite.required,
                status: GateStatus::Passed,
                summary: format!("{} command(s) passed", runs.len()),
                excerpt: String::new(),
            },
            Some((summary, excerpt)) => Gate {
                name,
                issue_type,
                required: suite.required,
                status: GateStatus::Failed,
                summary,
                excerpt,
            },
        };
        (gate, runs)
    }
}
