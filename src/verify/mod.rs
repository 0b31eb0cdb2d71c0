//! Verification: runs the strategy's suites and turns their results into gates.
//!
//! This is the minimal runner (sequential commands, exit codes as gates). JUnit and coverage
//! ingestion and pattern checks build on it.

pub mod coverage;
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
            // Reports are read after the suite's commands wrote them.
            report.gates.extend(coverage_gate(&self.root, suite));
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

/// The `coverage:<suite>` gate: required when the suite is and it sets `minimum_coverage`;
/// advisory (informational) when it only lists reports.
pub fn coverage_gate(root: &std::path::Path, suite: &Suite) -> Option<Gate> {
    if suite.coverage.is_empty() && suite.minimum_coverage.is_none() {
        return None;
    }
    let name = format!("coverage:{}", suite.kind.key());
    let required = suite.required && suite.minimum_coverage.is_some();
    let gate = |status: GateStatus, summary: String, excerpt: String| Gate {
        name: name.clone(),
        issue_type: IssueType::Coverage,
        required,
        status,
        summary,
        excerpt,
    };
    if suite.coverage.is_empty() {
        return Some(gate(
            GateStatus::Failed,
            format!(
                "`{}.minimum_coverage` is set but no `coverage` reports are configured",
                suite.kind.key()
            ),
            String::new(),
        ));
    }
    let mut paths = Vec::new();
    for pattern in &suite.coverage {
        let full = root.join(pattern);
        match glob::glob(&full.to_string_lossy()) {
            Ok(found) => paths.extend(found.flatten().filter(|p| p.is_file())),
            Err(e) => {
                return Some(gate(
                    GateStatus::Failed,
                    format!("bad coverage glob `{pattern}`: {e}"),
                    String::new(),
                ));
            }
        }
    }
    paths.sort();
    paths.dedup();
    if paths.is_empty() {
        return Some(gate(
            GateStatus::Failed,
            format!("no coverage report matched {}", suite.coverage.join(", ")),
            String::new(),
        ));
    }
    let mut overall = coverage::Counts::default();
    let mut files: std::collections::BTreeMap<String, coverage::Counts> = Default::default();
    let mut sources = Vec::new();
    for path in &paths {
        let shown = path
            .strip_prefix(root)
            .unwrap_or(path)
            .display()
            .to_string();
        let parsed = std::fs::read_to_string(path)
            .map_err(|e| e.to_string())
            .and_then(|text| coverage::parse(&text));
        match parsed {
            Ok(c) => {
                overall.covered += c.overall.covered;
                overall.total += c.overall.total;
                for (f, n) in c.files {
                    let e = files.entry(f).or_default();
                    e.covered += n.covered;
                    e.total += n.total;
                }
                sources.push(format!("{shown} ({})", c.format.as_str()));
            }
            Err(e) => {
                return Some(gate(
                    GateStatus::Failed,
                    format!("cannot read coverage report {shown}: {e}"),
                    String::new(),
                ));
            }
        }
    }
    let Some(percent) = overall.percent() else {
        return Some(gate(
            GateStatus::Failed,
            format!("coverage reports measure no lines: {}", sources.join(", ")),
            String::new(),
        ));
    };
    let mut lowest: Vec<(&String, f64)> = files
        .iter()
        .filter_map(|(f, c)| c.percent().map(|p| (f, p)))
        .collect();
    lowest.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(b.0)));
    let excerpt = lowest
        .iter()
        .take(10)
        .map(|(f, p)| format!("{p:6.1}%  {f}"))
        .collect::<Vec<_>>()
        .join("\n");
    let measured = format!(
        "line coverage {percent:.1}% ({}/{}) from {}",
        overall.covered,
        overall.total,
        sources.join(", ")
    );
    Some(match suite.minimum_coverage {
        Some(min) if percent + 1e-9 < min => gate(
            GateStatus::Failed,
            format!("{measured}, below the minimum {min}%"),
            excerpt,
        ),
        Some(min) => gate(
            GateStatus::Passed,
            format!("{measured}, minimum {min}%"),
            excerpt,
        ),
        None => gate(GateStatus::Passed, measured, excerpt),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::strategy::{RequiredBy, SuiteKind};

    fn suite(coverage: &[&str], min: Option<f64>) -> Suite {
        Suite {
            kind: SuiteKind::Unit,
            required: true,
            required_by: RequiredBy::Config,
            commands: vec!["true".into()],
            junit: vec![],
            coverage: coverage.iter().map(|s| s.to_string()).collect(),
            minimum_coverage: min,
            flows: vec![],
            timeout: std::time::Duration::from_secs(5),
        }
    }

    #[test]
    fn coverage_gate_enforces_the_minimum_on_real_coveragepy_reports() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["coveragepy-7.17.3.cobertura.xml", "coveragepy-7.17.3.lcov"] {
            std::fs::copy(
                format!("tests/fixtures/coverage/{name}"),
                dir.path().join(name),
            )
            .unwrap();
        }
        // coverage.py's own total for this project: 15/19 = 78.947%.
        for pattern in ["*.cobertura.xml", "*.lcov"] {
            let g = coverage_gate(dir.path(), &suite(&[pattern], Some(80.0))).unwrap();
            assert_eq!(
                (g.status, g.required),
                (GateStatus::Failed, true),
                "{pattern}: {}",
                g.summary
            );
            assert!(
                g.summary.contains("78.9% (15/19)"),
                "{pattern}: {}",
                g.summary
            );
            assert!(
                g.excerpt.contains("73.3%  shop/cart.py"),
                "{pattern}: {}",
                g.excerpt
            );
            let g = coverage_gate(dir.path(), &suite(&[pattern], Some(78.9))).unwrap();
            assert_eq!(g.status, GateStatus::Passed, "{}", g.summary);
        }
        let g = coverage_gate(dir.path(), &suite(&["*.lcov"], None)).unwrap();
        assert_eq!((g.status, g.required), (GateStatus::Passed, false));
        let g = coverage_gate(dir.path(), &suite(&["nothing/*.xml"], Some(50.0))).unwrap();
        assert_eq!(g.status, GateStatus::Failed);
        assert!(g.summary.contains("no coverage report matched"));
        let g = coverage_gate(dir.path(), &suite(&[], Some(50.0))).unwrap();
        assert!(g.summary.contains("no `coverage` reports are configured"));
        std::fs::write(dir.path().join("bad.lcov"), "SF:a\nDA:x\nend_of_record\n").unwrap();
        let g = coverage_gate(dir.path(), &suite(&["bad.lcov"], Some(50.0))).unwrap();
        assert!(g.summary.contains("bad.lcov: line 2"), "{}", g.summary);
        assert!(coverage_gate(dir.path(), &suite(&[], None)).is_none());
    }
}
