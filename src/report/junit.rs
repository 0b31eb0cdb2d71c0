//! `qa-loop-junit.xml` (quick-junit): one testsuite per iteration with its gates and issues, one
//! per suite of ingested test results (the last verification's, every case carried through), one
//! for the conversation scenarios (transcripts in `system-out`), and one for the acceptance
//! criteria of the deciding iteration.

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

use super::RunReport;
use crate::model::{
    CaseStatus, CommandRun, Gate, GateStatus, Issue, ScenarioOutcome, ScenarioResult, SuiteTests,
};

fn failure(message: &str, ty: &str, description: &str) -> TestCaseStatus {
    let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
    s.set_message(message).set_type(ty);
    if !description.is_empty() {
        s.set_description(description);
    }
    s
}

/// Renders the JUnit XML.
pub fn render(r: &RunReport<'_>) -> String {
    let mut report = Report::new("qa-loop");
    for h in r.history {
        let mut suite = TestSuite::new(format!("qa-loop iteration {}", h.iteration));
        suite.add_property(("status", h.status.as_str()));
        suite.add_property(("score", h.score.to_string().as_str()));
        for g in &h.verification.gates {
            suite.add_test_case(gate_case(g));
        }
        for cmd in &h.verification.commands {
            suite.add_test_case(command_case(cmd));
        }
        for i in &h.issues {
            suite.add_test_case(issue_case(i));
        }
        report.add_test_suite(suite);
    }
    // The test results ingested by the last verification, carried through case by case.
    if let Some(last) = r.history.last() {
        for t in &last.verification.tests {
            report.add_test_suite(ingested_suite(t, last.iteration));
        }
    }
    // The conversation scenarios of the last verification, each with its transcript.
    if let Some(last) = r.history.last()
        && !last.verification.conversations.is_empty()
    {
        let scenarios = &last.verification.conversations;
        report.add_test_suite(conversations_suite(scenarios, last.iteration));
    }
    report.add_test_suite(criteria_suite(r));
    report
        .to_string()
        .unwrap_or_else(|e| format!("<!-- could not render JUnit: {e} -->"))
}

/// One gate of an iteration's verification; an advisory gate that failed is skipped, not failed.
fn gate_case(g: &Gate) -> TestCase {
    let status = match g.status {
        GateStatus::Passed => TestCaseStatus::success(),
        GateStatus::Failed if g.required => failure(&g.summary, "gate", &g.excerpt),
        // An advisory gate never turns the report red on a green verdict.
        GateStatus::Failed => {
            let mut s = TestCaseStatus::skipped();
            s.set_message(format!("advisory, not met: {}", g.summary));
            s
        }
        GateStatus::Pending | GateStatus::Skipped => {
            let mut s = TestCaseStatus::skipped();
            s.set_message(g.summary.as_str());
            s
        }
    };
    let mut tc = TestCase::new(format!("gate: {}", g.name), status);
    tc.set_classname("qa-loop.gates");
    tc.add_property(("required", if g.required { "true" } else { "false" }));
    tc
}

/// One command a verification ran, with its duration.
fn command_case(cmd: &CommandRun) -> TestCase {
    let status = if cmd.outcome.passed() {
        TestCaseStatus::success()
    } else {
        failure(&cmd.outcome.describe(), "command", &cmd.excerpt)
    };
    let mut tc = TestCase::new(format!("{}: {}", cmd.suite, cmd.command), status);
    tc.set_classname("qa-loop.commands")
        .set_time(std::time::Duration::from_millis(cmd.duration_ms));
    tc
}

/// One issue the reviewer raised, as a failure with its fix and location.
fn issue_case(i: &Issue) -> TestCase {
    let mut desc = i.description.clone();
    if !i.fix.is_empty() {
        desc.push_str(&format!("\nFix: {}", i.fix));
    }
    let mut tc = TestCase::new(
        format!("{}: {}", i.id, i.title),
        failure(&i.title, i.kind.as_str(), desc.trim()),
    );
    tc.set_classname(format!("qa-loop.issues.{}", i.kind));
    if let Some(f) = &i.file {
        tc.add_property(("file", f.as_str()));
    }
    if let Some(l) = i.line {
        tc.add_property(("line", l.to_string().as_str()));
    }
    tc
}

/// One suite of ingested test results, named after the iteration that read it.
fn ingested_suite(t: &SuiteTests, iteration: u32) -> TestSuite {
    let mut suite = TestSuite::new(format!("{} (iteration {})", t.suite, iteration));
    for rep in &t.reports {
        suite.add_property(("report", rep.as_str()));
    }
    for c in &t.cases {
        suite.add_test_case(ingested_case(c));
    }
    suite
}

/// One ingested test case, carried through with its status, time and location.
fn ingested_case(c: &crate::model::TestCase) -> TestCase {
    let status = match c.status {
        CaseStatus::Passed => TestCaseStatus::success(),
        CaseStatus::Failed => failure(&c.message, "failure", &c.detail),
        CaseStatus::Errored => {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Error);
            s.set_message(c.message.as_str()).set_type("error");
            if !c.detail.is_empty() {
                s.set_description(c.detail.as_str());
            }
            s
        }
        CaseStatus::Skipped => {
            let mut s = TestCaseStatus::skipped();
            if !c.message.is_empty() {
                s.set_message(c.message.as_str());
            }
            s
        }
    };
    let mut tc = TestCase::new(c.name.as_str(), status);
    tc.set_classname(&*c.classname);
    if let Some(t) = c.time.filter(|t| t.is_finite() && *t >= 0.0) {
        tc.set_time(std::time::Duration::from_secs_f64(t));
    }
    if let Some(f) = &c.file {
        tc.add_property(("file", &**f));
    }
    if let Some(l) = c.line {
        tc.add_property(("line", l.to_string().as_str()));
    }
    if c.flaky {
        tc.add_property(("flaky", "true"));
    }
    match c.proves_fix {
        Some(true) => tc.add_property((
            "evidence",
            "fails on the code before the fix: proves the fix",
        )),
        Some(false) => tc.add_property((
            "evidence",
            "passes on the code before the fix too: proves nothing",
        )),
        None => &mut tc,
    };
    tc
}

/// The conversation scenarios, each with its transcript in `system-out`.
fn conversations_suite(scenarios: &[ScenarioResult], iteration: u32) -> TestSuite {
    let mut suite = TestSuite::new(format!("conversations (iteration {iteration})"));
    for sc in scenarios {
        let status = match sc.outcome {
            ScenarioOutcome::Passed => TestCaseStatus::success(),
            ScenarioOutcome::Failed => failure(&sc.reason, "conversation", ""),
            ScenarioOutcome::Error => {
                let mut s = TestCaseStatus::non_success(NonSuccessKind::Error);
                s.set_message(sc.reason.as_str()).set_type("conversation");
                s
            }
            ScenarioOutcome::NeedsHuman => {
                let mut s = TestCaseStatus::skipped();
                s.set_message(sc.reason.as_str());
                s
            }
        };
        let mut tc = TestCase::new(sc.name.as_str(), status);
        tc.set_classname("qa-loop.conversations")
            .set_time(std::time::Duration::from_millis(sc.duration_ms))
            .set_system_out(sc.transcript());
        tc.add_property(("required", if sc.required { "true" } else { "false" }));
        tc.add_property(("turns", sc.turns.len().to_string().as_str()));
        suite.add_test_case(tc);
    }
    suite
}

/// The deciding iteration's acceptance criteria (an empty suite when there is none).
fn criteria_suite(r: &RunReport<'_>) -> TestSuite {
    let mut criteria = TestSuite::new("qa-loop acceptance criteria");
    if let Some(d) = r.deciding() {
        for c in &d.criteria {
            let status = if c.met {
                TestCaseStatus::success()
            } else {
                failure("criterion not met", "acceptance_criteria", &c.evidence)
            };
            let mut tc = TestCase::new(c.criterion.as_str(), status);
            tc.set_classname("qa-loop.criteria");
            if !c.evidence.is_empty() {
                tc.set_system_out(c.evidence.as_str());
            }
            criteria.add_test_case(tc);
        }
    }
    criteria
}
