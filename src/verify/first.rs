//! Failing first, full once (SPEC §3.1): after a fix, what failed in the pass before runs first
//! — the failing tests alone where the suite's runner can select them (`select`), the failing
//! suite whole otherwise. While that still fails, the pass ends there (the rest is not run);
//! when it passes, the full verification runs. Anything else that failed before (coverage,
//! pattern checks, the integrity guard, conversations, browser pages, a plan check) needs the
//! full verification: failing first does not apply.
//!
//! This module only decides what runs; `Verifier::verify_failing_first` runs it. Approval never
//! follows a failing-first pass: the engine refuses to approve one (`VerificationReport::is_full`).

use crate::config::{Strategy, Suite};
use crate::model::{CommandRun, GateStatus, SuiteTests, TestCase, VerificationReport};

/// One failing suite to run first.
#[derive(Debug)]
pub struct Selected<'s> {
    pub suite: &'s Suite,
    /// The suite's commands, the last narrowed to the failing tests when it can be.
    pub commands: Vec<String>,
    /// Whether the last command was narrowed (else the suite runs whole).
    pub narrowed: bool,
}

/// What to run first after a fix, given the pass before: `None` when failing first does not
/// apply (nothing required failed, or something other than a suite's tests did).
pub fn plan<'s>(
    strategy: &'s Strategy,
    previous: &VerificationReport,
) -> Option<Vec<Selected<'s>>> {
    let failed: Vec<&str> = previous
        .failed_required()
        .map(|g| g.name.as_str())
        .collect();
    if failed.is_empty() {
        return None;
    }
    let mut out = Vec::new();
    for name in failed {
        // Only a suite's own gate: its coverage, the patterns, the guard, … need everything.
        let suite = strategy
            .suites
            .iter()
            .find(|s| s.kind.key() == name && !s.commands.is_empty())?;
        if out
            .iter()
            .any(|s: &Selected<'_>| s.suite.kind == suite.kind)
        {
            continue;
        }
        out.push(select_in(suite, previous));
    }
    Some(out)
}

/// The failing tests of `suite` in `previous`, narrowed when the failure was the last
/// command's and that command's runner can select tests; the whole suite otherwise.
fn select_in<'s>(suite: &'s Suite, previous: &VerificationReport) -> Selected<'s> {
    let whole = Selected {
        suite,
        commands: suite.commands.clone(),
        narrowed: false,
    };
    let key = suite.kind.key();
    let failing: Vec<&TestCase> = previous
        .tests
        .iter()
        .filter(|t| t.suite == key)
        .flat_map(|t| t.cases.iter().filter(|c| c.is_failure()))
        .collect();
    let runs: Vec<&CommandRun> = previous
        .commands
        .iter()
        .filter(|r| r.suite == key)
        .collect();
    let last = suite.commands.len() - 1;
    // A setup command that failed (a build, an install) is not a test to select.
    let earlier_failed = runs
        .iter()
        .any(|r| !r.outcome.passed() && r.command != suite.commands[last] && !is_rerun(r, suite));
    if failing.is_empty() || earlier_failed {
        return whole;
    }
    match super::select::narrowed(&suite.commands[last], &failing) {
        Some(narrowed) => {
            let mut commands = suite.commands[..last].to_vec();
            commands.push(narrowed);
            Selected {
                suite,
                commands,
                narrowed: true,
            }
        }
        None => whole,
    }
}

/// Whether `run` is a narrowed run of the suite's last command (a flaky re-run, or a
/// failing-first pass): its failure is the tests'.
fn is_rerun(run: &CommandRun, suite: &Suite) -> bool {
    suite
        .commands
        .last()
        .is_some_and(|last| run.command.starts_with(last.trim_end()))
}

/// Whether what ran first for `selected` still fails: its gate failed and, for a narrowed run,
/// a test case failed (a narrowed run that failed without a failing case — nothing selected,
/// a collection error — proves nothing: the full verification decides).
pub fn still_fails(
    selected: &Selected<'_>,
    status: GateStatus,
    tests: Option<&SuiteTests>,
) -> bool {
    status == GateStatus::Failed
        && (!selected.narrowed || tests.is_some_and(|t| t.cases.iter().any(TestCase::is_failure)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{CaseStatus, CommandOutcome, Gate, IssueType, TestCounts};

    fn suite(commands: &[&str]) -> Suite {
        Suite {
            commands: commands.iter().map(|c| c.to_string()).collect(),
            ..crate::verify::fixtures::suite()
        }
    }

    fn strategy(suites: Vec<Suite>) -> Strategy {
        crate::verify::fixtures::strategy(false, suites)
    }

    fn case(name: &str, status: CaseStatus) -> TestCase {
        TestCase {
            suite: "unit_tests".into(),
            classname: "tests.test_calc".into(),
            name: name.into(),
            status,
            file: None,
            line: None,
            time: None,
            message: String::new(),
            detail: String::new(),
            flaky: false,
            proves_fix: None,
        }
    }

    fn run(command: &str, passed: bool) -> CommandRun {
        CommandRun {
            suite: "unit_tests".into(),
            command: command.into(),
            outcome: if passed {
                CommandOutcome::Passed
            } else {
                CommandOutcome::Failed { code: 1 }
            },
            duration_ms: 0,
            excerpt: String::new(),
            failure_lines: vec![],
            output_bytes: 0,
            log: None,
        }
    }

    fn failed(name: &str) -> Gate {
        Gate::new(name, IssueType::UnitTest, true, GateStatus::Failed, "f", "")
    }

    fn previous(
        gates: Vec<Gate>,
        runs: Vec<CommandRun>,
        cases: Vec<TestCase>,
    ) -> VerificationReport {
        VerificationReport {
            gates,
            commands: runs,
            tests: vec![SuiteTests {
                suite: "unit_tests".into(),
                reports: vec![],
                counts: TestCounts::of(&cases),
                cases,
                problems: vec![],
            }],
            ..VerificationReport::default()
        }
    }

    #[test]
    fn the_failing_tests_alone_when_the_runner_selects_them() {
        let s = strategy(vec![suite(&[
            "pip install -e .",
            "pytest --junitxml=r.xml",
        ])]);
        let prev = previous(
            vec![failed("unit_tests")],
            vec![
                run("pip install -e .", true),
                run("pytest --junitxml=r.xml", false),
            ],
            vec![
                case("test_add", CaseStatus::Failed),
                case("test_sub", CaseStatus::Passed),
            ],
        );
        let plan = plan(&s, &prev).expect("failing first applies");
        assert_eq!(plan.len(), 1);
        assert!(plan[0].narrowed);
        assert_eq!(
            plan[0].commands,
            ["pip install -e .", "pytest --junitxml=r.xml -k 'test_add'"]
        );
    }

    #[test]
    fn the_whole_suite_when_the_runner_cannot_select_or_a_setup_command_failed() {
        let s = strategy(vec![suite(&["make build", "./run-tests.sh"])]);
        let prev = previous(
            vec![failed("unit_tests")],
            vec![run("make build", true), run("./run-tests.sh", false)],
            vec![case("test_add", CaseStatus::Failed)],
        );
        let plan = plan(&s, &prev).unwrap();
        assert!(!plan[0].narrowed);
        assert_eq!(plan[0].commands, ["make build", "./run-tests.sh"]);

        let s = strategy(vec![suite(&["make build", "pytest"])]);
        let prev = previous(
            vec![failed("unit_tests")],
            vec![run("make build", false), run("pytest", false)],
            vec![case("test_add", CaseStatus::Failed)],
        );
        assert!(
            !plan_of(&s, &prev)[0].narrowed,
            "a failed build is not a test"
        );

        // No failing case known (the suite timed out, ran no test): the whole suite.
        let prev = previous(
            vec![failed("unit_tests")],
            vec![run("pytest", false)],
            vec![],
        );
        assert!(!plan_of(&s, &prev)[0].narrowed);
    }

    fn plan_of<'s>(s: &'s Strategy, prev: &VerificationReport) -> Vec<Selected<'s>> {
        plan(s, prev).unwrap()
    }

    #[test]
    fn anything_but_a_suite_failing_needs_the_full_verification() {
        let s = strategy(vec![suite(&["pytest"])]);
        let cases = vec![case("test_add", CaseStatus::Failed)];
        let runs = vec![run("pytest", false)];
        for other in [
            "coverage:unit_tests",
            "patterns",
            "test_integrity",
            "conversations",
        ] {
            let prev = previous(
                vec![failed("unit_tests"), failed(other)],
                runs.clone(),
                cases.clone(),
            );
            assert!(
                plan(&s, &prev).is_none(),
                "{other} failed: full verification"
            );
        }
        // Nothing required failed (the reviewer rejected): full verification.
        let mut optional = failed("unit_tests");
        optional.required = false;
        assert!(plan(&s, &previous(vec![optional], runs, cases)).is_none());
    }

    #[test]
    fn a_narrowed_run_still_fails_only_with_a_failing_case() {
        let s = suite(&["pytest"]);
        let sel = Selected {
            suite: &s,
            commands: vec!["pytest -k 'test_add'".into()],
            narrowed: true,
        };
        let t = |cases: Vec<TestCase>| SuiteTests {
            suite: "unit_tests".into(),
            reports: vec![],
            counts: TestCounts::of(&cases),
            cases,
            problems: vec![],
        };
        let failing = t(vec![case("test_add", CaseStatus::Failed)]);
        assert!(still_fails(&sel, GateStatus::Failed, Some(&failing)));
        assert!(!still_fails(
            &sel,
            GateStatus::Passed,
            Some(&t(vec![case("test_add", CaseStatus::Passed)]))
        ));
        // Failed without a failing case (nothing selected, a collection error): not known.
        assert!(!still_fails(&sel, GateStatus::Failed, Some(&t(vec![]))));
        assert!(!still_fails(&sel, GateStatus::Failed, None));
        let whole = Selected {
            narrowed: false,
            ..sel
        };
        assert!(still_fails(&whole, GateStatus::Failed, None));
    }
}
