//! One test, one outcome (SPEC §3.1): a runner that re-runs a failing test writes each attempt
//! as its own `<testcase>` (pytest-rerunfailures writes the earlier attempts as plain cases and
//! the last with its result), so a report holds one test several times. Within one report the
//! repeats of a test (same suite, class and name) are one test: the first one's place,
//! the last attempt's outcome. A test run more than once whose last attempt passed is **flaky**
//! — runners re-run only after a failure —, as is a case that says so itself (Surefire's
//! `<flakyFailure>`). Two different tests that a report names identically are indistinguishable
//! and count as one.

use std::collections::HashMap;

use super::{CaseStatus, TestCase};

/// The cases of one report with each test once.
pub(super) fn one_per_test(cases: Vec<TestCase>) -> Vec<TestCase> {
    // Not the file: it is read from the failure text when the report has none, so a failing
    // attempt can carry one its passing attempts lack.
    let mut first: HashMap<(&str, &str, &str), usize> = HashMap::with_capacity(cases.len());
    // Where each case's test was first seen; most reports have no repeat and stay as they are.
    let mut slot = Vec::with_capacity(cases.len());
    for (i, c) in cases.iter().enumerate() {
        let key = (&*c.suite, &*c.classname, c.name.as_str());
        slot.push(*first.entry(key).or_insert(i));
    }
    if slot.iter().enumerate().all(|(i, &s)| i == s) {
        return cases;
    }
    let mut attempts = vec![0u32; cases.len()];
    let mut out: Vec<Option<TestCase>> = Vec::with_capacity(cases.len());
    for (i, case) in cases.into_iter().enumerate() {
        let at = slot[i];
        attempts[at] += 1;
        if at == i {
            out.push(Some(case));
        } else {
            // The later attempt's outcome, at the first one's place.
            let flaky = out[at].as_ref().is_some_and(|c| c.flaky);
            out.push(None);
            out[at] = Some(TestCase {
                flaky: flaky || case.flaky,
                ..case
            });
        }
    }
    out.into_iter()
        .enumerate()
        .filter_map(|(i, c)| c.map(|c| (i, c)))
        .map(|(i, mut c)| {
            c.flaky |= attempts[i] > 1 && c.status == CaseStatus::Passed;
            c
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::{CaseStatus, parse};

    /// pytest-rerunfailures 16 with `--reruns 2` (its real output, trimmed): earlier attempts
    /// are plain cases, the last carries the result.
    const PYTEST_RERUNS: &str = r#"<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests"><testsuite name="pytest" errors="0" failures="1" skipped="0" tests="3" time="0.1"><testcase classname="test_f" name="test_flaky" time="0.002" /><testcase classname="test_f" name="test_flaky" time="0.001" /><testcase classname="test_f" name="test_ok" time="0.001" /><testcase classname="test_f" name="test_broken" time="0.001" /><testcase classname="test_f" name="test_broken" time="0.001" /><testcase classname="test_f" name="test_broken" time="0.001"><failure message="assert 1 == 2">def test_broken():
&gt;       assert 1 == 2
E       assert 1 == 2

test_f.py:10: AssertionError</failure></testcase></testsuite></testsuites>"#;

    #[test]
    fn repeated_cases_are_one_test_with_the_last_attempts_outcome() {
        let cases = parse(PYTEST_RERUNS).unwrap();
        let got: Vec<(&str, CaseStatus, bool)> = cases
            .iter()
            .map(|c| (c.name.as_str(), c.status, c.flaky))
            .collect();
        assert_eq!(
            got,
            [
                ("test_flaky", CaseStatus::Passed, true),
                ("test_ok", CaseStatus::Passed, false),
                ("test_broken", CaseStatus::Failed, false),
            ]
        );
        // The failing attempt keeps its location, read from its own failure text.
        assert_eq!(cases[2].location().as_deref(), Some("test_f.py:10"));
    }

    #[test]
    fn surefire_flaky_failures_mark_a_passing_test_flaky() {
        // Maven Surefire with `rerunFailingTestsCount`: a passing test carries its failed runs.
        let xml = r#"<testsuite name="com.x.CartTest" tests="2"><testcase name="adds" classname="com.x.CartTest" time="0.1"><flakyFailure message="expected 3" type="java.lang.AssertionError"><stackTrace>at com.x.CartTest.adds(CartTest.java:12)</stackTrace></flakyFailure></testcase><testcase name="removes" classname="com.x.CartTest" time="0.1"><failure message="boom"/><rerunFailure message="boom"/></testcase></testsuite>"#;
        let cases = parse(xml).unwrap();
        let got: Vec<(&str, CaseStatus, bool)> = cases
            .iter()
            .map(|c| (c.name.as_str(), c.status, c.flaky))
            .collect();
        assert_eq!(
            got,
            [
                ("adds", CaseStatus::Passed, true),
                ("removes", CaseStatus::Failed, false),
            ]
        );
    }
}
