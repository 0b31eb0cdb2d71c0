//! `qa-loop-junit.xml` (quick-junit): one testsuite per iteration with its gates and issues, one
//! per suite of ingested test results (the last verification's, every case carried through), one
//! for the conversation scenarios (transcripts in `system-out`), and one for the acceptance
//! criteria of the deciding iteration.
//!
//! The file is valid against the JUnit schema strict consumers validate every input against
//! (Jenkins xUnit's `junit-10.xsd`, vendored in `tests/fixtures/junit/`): a `<testcase>` has no
//! `<properties>` there, so what qa-loop knows of a case beyond its status — `required`, `file`,
//! `line`, `flaky`, `evidence`, `turns` — is written as `key: value` lines at the head of the
//! case's `<system-out>`, which every viewer shows with the case; `<testsuites>` carries no
//! `skipped` count. An advisory (not required) result that is not met is `<skipped>`, never a
//! `<failure>`: only what blocks the run is red.

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

use super::RunReport;
use crate::model::{
    CaseStatus, CommandRun, Gate, GateStatus, Issue, ScenarioOutcome, ScenarioResult, SuiteTests,
};

/// The `<failure>` of something that blocks the run.
fn failure(message: &str, ty: &str, description: &str) -> TestCaseStatus {
    let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
    s.set_message(message).set_type(ty);
    if !description.is_empty() {
        s.set_description(description);
    }
    s
}

/// The `<skipped>` of an advisory result that is not met (a gate, command or scenario that is
/// not required): shown, never red.
fn advisory(what: &str, description: &str) -> TestCaseStatus {
    let mut s = TestCaseStatus::skipped();
    s.set_message(format!("advisory, not met: {what}"));
    if !description.is_empty() {
        s.set_description(description);
    }
    s
}

/// `key: value` lines: a case's facts as its `system-out` opens with them.
fn notes(facts: &[(&str, String)]) -> String {
    facts.iter().map(|(k, v)| format!("{k}: {v}\n")).collect()
}

/// Sets the case's `system-out` to `facts` (as [`notes`]), then `more` after a blank line.
fn set_output(tc: &mut TestCase, facts: &[(&str, String)], more: &str) {
    let mut out = notes(facts);
    if !more.is_empty() {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(more);
    }
    if !out.is_empty() {
        tc.set_system_out(out);
    }
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
        // A command run again in the same pass (a suite re-run whole because a test failed) is
        // its own case, named as the re-run: each case of a suite has its own name.
        let mut runs: std::collections::HashMap<(&str, &str), u32> = Default::default();
        for cmd in &h.verification.commands {
            let seen = runs.entry((&cmd.suite, &cmd.command)).or_default();
            let mut case = command_case(cmd, &h.verification.gates);
            if *seen > 0 {
                case.name = format!("{}: {} (re-run {seen})", cmd.suite, cmd.command).into();
            }
            *seen += 1;
            suite.add_test_case(case);
        }
        for i in &h.issues {
            suite.add_test_case(issue_case(i));
        }
        for i in h.suggestions.iter().chain(&h.pre_existing) {
            suite.add_test_case(set_apart_case(i));
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
    report.to_string().map_or_else(
        |e| format!("<!-- could not render JUnit: {e} -->"),
        without_total_skipped,
    )
}

/// `xml` without the `skipped` count quick-junit writes on `<testsuites>`, which `junit-10.xsd`
/// does not allow there (`name`, `time`, `tests`, `failures`, `errors` only); each
/// `<testsuite>` keeps its own.
fn without_total_skipped(mut xml: String) -> String {
    // The root is the first `<testsuites`: every `<` in text or attributes is escaped.
    let Some(open) = xml.find("<testsuites") else {
        return xml;
    };
    let close = xml[open..].find('>').map_or(xml.len(), |e| open + e);
    let key = " skipped=\"";
    if let Some(at) = xml[open..close].find(key).map(|a| open + a)
        && let Some(end) = xml[at + key.len()..close].find('"')
    {
        xml.replace_range(at..at + key.len() + end + 1, "");
    }
    xml
}

/// One gate of an iteration's verification; an advisory gate that failed is skipped, not failed.
fn gate_case(g: &Gate) -> TestCase {
    let status = match g.status {
        GateStatus::Passed => TestCaseStatus::success(),
        GateStatus::Failed if g.required => failure(&g.summary, "gate", &g.excerpt),
        // An advisory gate never turns the report red on a green verdict.
        GateStatus::Failed => advisory(&g.summary, &g.excerpt),
        GateStatus::Pending | GateStatus::Skipped => {
            let mut s = TestCaseStatus::skipped();
            s.set_message(g.summary.as_str());
            s
        }
    };
    let mut tc = TestCase::new(format!("gate: {}", g.name), status);
    tc.set_classname("qa-loop.gates");
    set_output(&mut tc, &[("required", g.required.to_string())], "");
    tc
}

/// One command a verification ran, with its duration. A failed command is a failure only when
/// its suite's gate (in `gates`, named as the suite) is required and failed: an advisory
/// suite's or check's command is skipped as advisory, and one whose suite passed all the same
/// (its failing tests passed on a re-run: flaky) passes with its outcome in `system-out`.
fn command_case(cmd: &CommandRun, gates: &[Gate]) -> TestCase {
    let gate = gates.iter().find(|g| g.name == cmd.suite);
    let mut facts = Vec::new();
    let status = match gate {
        _ if cmd.outcome.passed() => TestCaseStatus::success(),
        Some(g) if !g.required => advisory(&cmd.outcome.describe(), &cmd.excerpt),
        Some(g) if g.status == GateStatus::Passed => {
            facts.push(("outcome", cmd.outcome.describe()));
            facts.push((
                "counted",
                format!(
                    "no: the `{}` gate passed (its failing tests passed on a re-run)",
                    g.name
                ),
            ));
            TestCaseStatus::success()
        }
        _ => failure(&cmd.outcome.describe(), "command", &cmd.excerpt),
    };
    let mut tc = TestCase::new(format!("{}: {}", cmd.suite, cmd.command), status);
    tc.set_classname("qa-loop.commands")
        .set_time(std::time::Duration::from_millis(cmd.duration_ms));
    if let Some(g) = gate {
        facts.insert(0, ("required", g.required.to_string()));
    }
    set_output(&mut tc, &facts, "");
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
    let mut facts = location(i.file.as_deref(), i.line);
    facts.extend(i.fingerprint.as_ref().map(|f| ("fingerprint", f.clone())));
    set_output(&mut tc, &facts, "");
    tc
}

/// A finding that does not block (a suggestion below the `fix_severity` bar, an issue that was
/// there before the change): `<skipped>` with why, never red.
fn set_apart_case(i: &Issue) -> TestCase {
    let why = if i.introduced {
        format!(
            "suggestion ({} is below the fix_severity bar): {}",
            i.severity.as_str(),
            i.title
        )
    } else {
        format!("pre-existing (there before this change): {}", i.title)
    };
    let mut status = TestCaseStatus::skipped();
    status.set_message(why);
    let mut tc = TestCase::new(format!("{}: {}", i.id, i.title), status);
    tc.set_classname(format!("qa-loop.issues.{}", i.kind));
    let mut facts = location(i.file.as_deref(), i.line);
    facts.extend(i.fingerprint.as_ref().map(|f| ("fingerprint", f.clone())));
    let mut more = i.description.clone();
    if !i.fix.is_empty() {
        more.push_str(&format!("\nFix: {}", i.fix));
    }
    set_output(&mut tc, &facts, more.trim());
    tc
}

/// The `file` and `line` facts of a case, those it has.
fn location(file: Option<&str>, line: Option<u32>) -> Vec<(&'static str, String)> {
    let mut facts = Vec::new();
    if let Some(f) = file {
        facts.push(("file", f.to_string()));
    }
    if let Some(l) = line {
        facts.push(("line", l.to_string()));
    }
    facts
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
    let mut facts = location(c.file.as_deref(), c.line);
    if c.flaky {
        facts.push((
            "flaky",
            "true (failed, then passed on a re-run)".to_string(),
        ));
    }
    match c.proves_fix {
        Some(true) => facts.push((
            "evidence",
            "fails on the code before the fix: proves the fix".to_string(),
        )),
        Some(false) => facts.push((
            "evidence",
            "passes on the code before the fix too: proves nothing".to_string(),
        )),
        None => {}
    }
    set_output(&mut tc, &facts, "");
    tc
}

/// The conversation scenarios, each with its transcript in `system-out`.
fn conversations_suite(scenarios: &[ScenarioResult], iteration: u32) -> TestSuite {
    let mut suite = TestSuite::new(format!("conversations (iteration {iteration})"));
    for sc in scenarios {
        let status = match sc.outcome {
            ScenarioOutcome::Passed => TestCaseStatus::success(),
            ScenarioOutcome::Failed | ScenarioOutcome::Error if !sc.required => {
                advisory(&sc.reason, "")
            }
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
            .set_time(std::time::Duration::from_millis(sc.duration_ms));
        let facts = [
            ("required", sc.required.to_string()),
            ("turns", sc.turns.len().to_string()),
        ];
        set_output(&mut tc, &facts, &sc.transcript());
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Turn;

    fn scenario(name: &str, required: bool, outcome: ScenarioOutcome) -> ScenarioResult {
        ScenarioResult {
            name: name.into(),
            required,
            outcome,
            reason: "invents a repository".into(),
            turns: vec![Turn {
                number: 1,
                user: "List my repositories".into(),
                agent: "foo, bar, baz".into(),
                verdict: None,
                confidence: 0.0,
                reasoning: String::new(),
                approval: None,
                reply_ms: 5,
            }],
            warnings: Vec::new(),
            pass_criteria: "foo and bar".into(),
            duration_ms: 5,
        }
    }

    /// A failed required scenario is a failure; an advisory one that fails or errs is skipped
    /// as advisory. Each case's facts open its `system-out`, the transcript after them.
    #[test]
    fn advisory_scenarios_are_skipped_and_facts_head_the_transcript() {
        let mut report = Report::new("qa-loop");
        report.add_test_suite(conversations_suite(
            &[
                scenario("blocks", true, ScenarioOutcome::Failed),
                scenario("advises", false, ScenarioOutcome::Failed),
                scenario("errs", false, ScenarioOutcome::Error),
            ],
            1,
        ));
        let xml = without_total_skipped(report.to_string().unwrap());
        assert!(
            xml.starts_with(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"qa-loop\" tests=\"3\" failures=\"1\" errors=\"0\">\n"
            ),
            "{xml}"
        );
        assert!(
            xml.contains("tests=\"3\" skipped=\"2\" errors=\"0\" failures=\"1\""),
            "{xml}"
        );
        assert!(
            xml.contains("<skipped message=\"advisory, not met: invents a repository\"/>"),
            "{xml}"
        );
        assert!(!xml.contains("<properties>"), "{xml}");
        assert!(
            xml.contains(
                "<system-out>required: false\nturns: 1\n\n--- turn 1 ---\nuser: List my repositories\n"
            ),
            "{xml}"
        );
    }

    /// Only the root's `skipped` goes; a suite's, and text that looks like one, stay.
    #[test]
    fn only_the_root_loses_its_skipped_count() {
        let xml = "<?xml?>\n<testsuites name=\"q\" tests=\"1\" skipped=\"12\" failures=\"0\">\n<testsuite name=\"a skipped=&quot;1&quot;\" skipped=\"1\">";
        assert_eq!(
            without_total_skipped(xml.to_string()),
            "<?xml?>\n<testsuites name=\"q\" tests=\"1\" failures=\"0\">\n<testsuite name=\"a skipped=&quot;1&quot;\" skipped=\"1\">"
        );
        let none = "<?xml?>\n<testsuites name=\"q\">\n<testsuite skipped=\"1\">";
        assert_eq!(without_total_skipped(none.to_string()), none);
    }
}
