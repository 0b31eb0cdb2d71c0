//! Test fixtures shared by the verification modules' unit tests: a required unit suite that
//! runs `true`, and a medium-risk strategy around suites.

use crate::config::file::FlakyPolicy;
use crate::config::strategy::RequiredBy;
use crate::config::{Strategy, Suite, SuiteKind};

/// A required unit suite running `true` (5 s timeout, no reports).
pub fn suite() -> Suite {
    Suite {
        kind: SuiteKind::Unit,
        required: true,
        required_by: RequiredBy::Config,
        commands: vec!["true".into()],
        junit: vec![],
        coverage: vec![],
        minimum_coverage: None,
        flows: vec![],
        timeout: std::time::Duration::from_secs(5),
        sources: vec![],
        paths: vec![],
        paths_ignore: vec![],
        always: false,
        paths_overridden: false,
        allow_no_tests: false,
        working_directory: None,
    }
}

/// A medium-risk strategy of `suites` (one flaky re-run, nothing else configured).
pub fn strategy(parallel: bool, suites: Vec<Suite>) -> Strategy {
    Strategy {
        risk_level: crate::config::RiskLevel::Medium,
        suites,
        parallel,
        flaky: FlakyPolicy::Report,
        flaky_reruns: 1,
        conversations: None,
        browser: None,
        no_test_project: false,
        human_signoff_required: false,
        criteria: vec![],
        pattern_checks: None,
        discovered: vec![],
        checks: vec![],
        reviewer_checks: vec![],
        check_timeout: std::time::Duration::from_secs(5),
    }
}
