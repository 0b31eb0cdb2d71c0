//! Table-driven tests of every rule of the loop, without I/O: a scripted driver feeds the
//! engine verification results, verdicts and fix results.

use std::collections::VecDeque;

use super::state::*;
use crate::model::*;

fn policy() -> Policy {
    Policy {
        max_iterations: 5,
        max_consecutive_errors: 3,
        recurring_threshold: 3,
        similarity_threshold: 0.8,
        min_score: 40,
        review_only: false,
        fix_severity: Severity::Low,
    }
}

fn gates(pass: bool) -> VerificationReport {
    VerificationReport {
        gates: vec![Gate {
            name: "unit_tests".into(),
            issue_type: IssueType::UnitTest,
            required: true,
            status: if pass {
                GateStatus::Passed
            } else {
                GateStatus::Failed
            },
            summary: if pass {
                "1 command passed".into()
            } else {
                "`pytest` exit code 1".into()
            },
            excerpt: String::new(),
            findings: vec![],
        }],
        commands: vec![],
        tests: vec![],
        conversations: vec![],
        browser: vec![],
        reused_from: None,
        failing_first: None,
    }
}

fn signoff_pending() -> VerificationReport {
    let mut v = gates(true);
    v.gates.push(Gate {
        name: "human_signoff".into(),
        issue_type: IssueType::AcceptanceCriteria,
        required: true,
        status: GateStatus::Pending,
        summary: "waiting for /qa approve".into(),
        excerpt: String::new(),
        findings: vec![],
    });
    v
}

fn issue(title: &str, line: u32) -> Issue {
    Issue {
        id: "Q1".into(),
        title: title.into(),
        kind: IssueType::ErrorHandling,
        severity: Severity::High,
        file: Some("src/cart.py".into()),
        line: Some(line),
        file_lines: None,
        description: String::new(),
        fix: "validate it".into(),
        recurs: None,
        introduced: true,
        fingerprint: None,
    }
}

fn verdict(approved: bool, score: u8, issues: Vec<Issue>) -> Result<Verdict, String> {
    Ok(Verdict {
        status: if approved {
            ReviewStatus::Approved
        } else {
            ReviewStatus::Rejected
        },
        score,
        confidence: 0.9,
        summary: String::new(),
        criteria: vec![],
        issues,
        manual_test_plan: None,
        reviewed_head: None,
    })
}

fn approve(score: u8) -> Result<Verdict, String> {
    verdict(true, score, vec![])
}

fn reject(score: u8, title: &str) -> Result<Verdict, String> {
    verdict(false, score, vec![issue(title, 10)])
}

struct Script {
    verifications: VecDeque<VerificationReport>,
    reviews: VecDeque<Result<Verdict, String>>,
    fixes: VecDeque<Result<String, String>>,
    /// Stop with a budget event before this review number (1-based call count).
    budget_before_review: Option<usize>,
}

/// Drives the engine like the real driver does, recording the statuses it passes through.
fn run(policy: Policy, mut script: Script) -> (Outcome, Engine, Vec<Status>, usize) {
    let mut engine = Engine::new(policy);
    let mut queue: VecDeque<Effect> = engine.step(Event::Started).into();
    let mut statuses = vec![engine.status()];
    let mut fix_calls = 0;
    let mut review_calls = 0;
    let mut last_verification = gates(true);
    while let Some(effect) = queue.pop_front() {
        let event = match effect {
            Effect::Verify => {
                last_verification = script
                    .verifications
                    .pop_front()
                    .unwrap_or(last_verification);
                Event::Verified(last_verification.clone())
            }
            Effect::Review { .. } => {
                review_calls += 1;
                if script.budget_before_review == Some(review_calls) {
                    Event::BudgetExhausted("tokens: 1000 of 1000".into())
                } else {
                    let result = script
                        .reviews
                        .pop_front()
                        .expect("script ran out of reviews");
                    Event::Reviewed {
                        result,
                        at: "2026-11-21T10:00:00Z".into(),
                    }
                }
            }
            Effect::Fix { .. } => {
                fix_calls += 1;
                Event::Fixed(script.fixes.pop_front().unwrap_or(Ok("fixed".into())))
            }
            Effect::Checkpoint { .. } | Effect::FixesApplied { .. } => continue,
            Effect::Finish(outcome) => {
                return (outcome, engine, statuses, fix_calls);
            }
        };
        queue.extend(engine.step(event));
        if statuses.last() != Some(&engine.status()) {
            statuses.push(engine.status());
        }
    }
    panic!("the engine stopped without a Finish effect");
}

fn script(verifications: Vec<VerificationReport>, reviews: Vec<Result<Verdict, String>>) -> Script {
    Script {
        verifications: verifications.into(),
        reviews: reviews.into(),
        fixes: VecDeque::new(),
        budget_before_review: None,
    }
}

struct Case {
    comment: &'static str,
    policy: Policy,
    script: Script,
    want_verdict: &'static str,
    want_exit: crate::error::Exit,
    want_iterations: usize,
    want_best: Option<u32>,
}

#[test]
fn termination_rules() {
    use crate::error::Exit;
    let cases = vec![
        Case {
            comment: "approved on the first pass",
            policy: policy(),
            script: script(vec![gates(true)], vec![approve(92)]),
            want_verdict: "approved",
            want_exit: Exit::Approved,
            want_iterations: 1,
            want_best: Some(1),
        },
        Case {
            comment: "gates beat words: approved over a red gate is rejected until max iterations",
            policy: Policy {
                max_iterations: 2,
                ..policy()
            },
            script: script(vec![gates(false)], vec![approve(95), approve(95)]),
            want_verdict: "rejected",
            want_exit: Exit::NotApproved,
            want_iterations: 2,
            want_best: Some(2),
        },
        Case {
            comment: "rejected, fixed, approved",
            policy: policy(),
            script: script(
                vec![gates(false), gates(true)],
                vec![reject(30, "Negative quantity accepted"), approve(90)],
            ),
            want_verdict: "approved",
            want_exit: Exit::Approved,
            want_iterations: 2,
            want_best: Some(2),
        },
        Case {
            comment: "max iterations keeps the best-scoring iteration",
            policy: Policy {
                max_iterations: 3,
                ..policy()
            },
            script: script(
                vec![gates(true)],
                vec![
                    reject(50, "SQL injection in search"),
                    reject(70, "Missing index on orders.created_at"),
                    reject(60, "Typo in log message"),
                ],
            ),
            want_verdict: "rejected",
            want_exit: Exit::NotApproved,
            want_iterations: 3,
            want_best: Some(2),
        },
        Case {
            comment: "an issue reworded in three iterations escalates",
            policy: policy(),
            script: script(
                vec![gates(true)],
                vec![
                    reject(
                        50,
                        "Missing validation for negative quantity in add_to_cart",
                    ),
                    reject(55, "Negative quantity is not validated in add_to_cart"),
                    reject(52, "Error: add_to_cart does not validate negative quantity"),
                ],
            ),
            want_verdict: "escalated",
            want_exit: Exit::Escalated,
            want_iterations: 3,
            want_best: Some(2),
        },
        Case {
            comment: "consecutive errors stop the loop",
            policy: policy(),
            script: script(
                vec![gates(true)],
                vec![
                    Err("timeout".into()),
                    Err("500".into()),
                    Err("bad json".into()),
                ],
            ),
            want_verdict: "error",
            want_exit: Exit::Errors,
            want_iterations: 0,
            want_best: None,
        },
        Case {
            comment: "rejections are not errors and a success resets the error count",
            policy: Policy {
                max_consecutive_errors: 2,
                ..policy()
            },
            script: script(
                vec![gates(true)],
                vec![
                    Err("timeout".into()),
                    reject(50, "A is broken"),
                    Err("timeout".into()),
                    reject(55, "B is broken in parse_x"),
                    Err("timeout".into()),
                    approve(90),
                ],
            ),
            want_verdict: "approved",
            want_exit: Exit::Approved,
            want_iterations: 3,
            want_best: Some(3),
        },
        Case {
            comment: "best of N below min-score escalates",
            policy: Policy {
                max_iterations: 2,
                ..policy()
            },
            script: script(
                vec![gates(true)],
                vec![
                    reject(20, "Nothing works"),
                    reject(30, "Still failing in parse_y"),
                ],
            ),
            want_verdict: "escalated",
            want_exit: Exit::Escalated,
            want_iterations: 2,
            want_best: Some(2),
        },
        Case {
            comment: "review mode rejects without fixing",
            policy: Policy {
                review_only: true,
                ..policy()
            },
            script: script(vec![gates(true)], vec![reject(60, "Missing docs")]),
            want_verdict: "rejected",
            want_exit: Exit::NotApproved,
            want_iterations: 1,
            want_best: Some(1),
        },
        Case {
            comment: "critical risk: approval waits for the human sign-off",
            policy: policy(),
            script: script(vec![signoff_pending()], vec![approve(95)]),
            want_verdict: "escalated",
            want_exit: Exit::Escalated,
            want_iterations: 1,
            want_best: Some(1),
        },
        Case {
            comment: "budget spent stops cleanly with the partial findings",
            policy: policy(),
            script: Script {
                budget_before_review: Some(2),
                ..script(vec![gates(false)], vec![reject(45, "Broken")])
            },
            want_verdict: "error",
            want_exit: Exit::Errors,
            want_iterations: 1,
            want_best: Some(1),
        },
    ];
    for c in cases {
        let (outcome, engine, _, _) = run(c.policy, c.script);
        assert_eq!(
            outcome.verdict(),
            c.want_verdict,
            "{}: {outcome:?}",
            c.comment
        );
        assert_eq!(outcome.exit(), c.want_exit, "{}", c.comment);
        assert_eq!(engine.history().len(), c.want_iterations, "{}", c.comment);
        assert_eq!(outcome.best_iteration(), c.want_best, "{}", c.comment);
    }
}

#[test]
fn a_red_gate_turns_an_approval_into_a_rejection_with_a_gate_issue() {
    let (_, engine, _, _) = run(
        Policy {
            max_iterations: 1,
            ..policy()
        },
        script(vec![gates(false)], vec![approve(95)]),
    );
    let record = &engine.history()[0];
    assert!(record.reviewer_approved);
    assert_eq!(record.status, Status::Rejected);
    assert_eq!(record.score, FAILED_GATE_SCORE_CAP);
    let gate_issue = record
        .issues
        .iter()
        .find(|i| i.id == "G1")
        .expect("gate issue");
    assert_eq!(gate_issue.kind, IssueType::UnitTest);
    assert!(
        gate_issue.title.contains("unit_tests"),
        "{}",
        gate_issue.title
    );
}

#[test]
fn a_failing_first_pass_never_approves_even_with_every_gate_green() {
    // Only a full verification of the final tree approves (gates beat words): a pass that ran
    // only what failed before cannot, whatever its gates and the reviewer say.
    let mut partial = gates(true);
    partial.failing_first = Some(crate::model::FailingFirst { ran: 1, of: 340 });
    let record = apply_gates(1, approve(95).unwrap(), partial, "t".into(), Severity::Low);
    assert_eq!(record.status, Status::Rejected);
    assert!(
        record
            .issues
            .iter()
            .any(|i| i.title.starts_with("Verification incomplete")),
        "{:?}",
        record.issues
    );
    // The same pass, full, approves.
    let record = apply_gates(
        1,
        approve(95).unwrap(),
        gates(true),
        "t".into(),
        Severity::Low,
    );
    assert_eq!(record.status, Status::Approved);
}

#[test]
fn each_finding_of_a_failed_gate_is_its_own_located_issue() {
    let mut v = gates(false);
    let finding = |title: &str, line| Finding {
        kind: IssueType::UnitTest,
        severity: Severity::High,
        title: title.into(),
        file: Some("tests/test_cart.py".into()),
        line: Some(line),
        detail: "assert 3 == 4".into(),
        fix: "Make it pass.".into(),
    };
    v.gates[0].findings = vec![
        finding("Test `test_total` failed: assert 3 == 4", 12),
        finding("Test `test_tax` failed: assert 0.2 == 0.21", 30),
    ];
    // An advisory gate's findings are shown to the reviewer, not turned into issues.
    let mut advisory = v.gates[0].clone();
    advisory.name = "patterns".into();
    advisory.required = false;
    v.gates.push(advisory);
    let record = apply_gates(1, approve(90).unwrap(), v, "t".into(), Severity::Low);
    assert_eq!(record.status, Status::Rejected);
    let got: Vec<_> = record
        .issues
        .iter()
        .map(|i| (i.id.as_str(), i.title.as_str(), i.file.as_deref(), i.line))
        .collect();
    assert_eq!(
        got,
        [
            (
                "G1",
                "Test `test_total` failed: assert 3 == 4",
                Some("tests/test_cart.py"),
                Some(12)
            ),
            (
                "G2",
                "Test `test_tax` failed: assert 0.2 == 0.21",
                Some("tests/test_cart.py"),
                Some(30)
            ),
        ]
    );
}

#[test]
fn statuses_follow_the_spec_sequence() {
    let (_, _, statuses, fixes) = run(
        policy(),
        script(
            vec![gates(false), gates(false), gates(true)],
            vec![reject(30, "A"), reject(40, "B in parse_z"), approve(90)],
        ),
    );
    use Status::*;
    assert_eq!(
        statuses,
        vec![
            Pending,
            Rejected,
            FixesApplied,
            Rejected,
            FixesApplied,
            Approved
        ]
    );
    assert_eq!(fixes, 2);
}

#[test]
fn fixer_errors_count_and_retry_the_same_issues() {
    let mut s = script(
        vec![gates(false), gates(true)],
        vec![reject(30, "A"), approve(90)],
    );
    s.fixes = vec![Err("fixer crashed".into()), Ok("done".into())].into();
    let (outcome, engine, _, fixes) = run(policy(), s);
    assert_eq!(outcome.verdict(), "approved");
    assert_eq!(fixes, 2);
    assert_eq!(engine.errors(), ["fixer crashed".to_string()]);

    let mut s = script(vec![gates(false)], vec![reject(30, "A")]);
    s.fixes = vec![Err("e1".into()), Err("e2".into()), Err("e3".into())].into();
    let (outcome, _, _, _) = run(policy(), s);
    assert_eq!(outcome.verdict(), "error");
}

#[test]
fn a_resumed_run_never_exceeds_max_iterations_in_total() {
    let mut first = Engine::new(Policy {
        max_iterations: 3,
        ..policy()
    });
    first.step(Event::Started);
    first.step(Event::Verified(gates(true)));
    first.step(Event::Reviewed {
        result: reject(50, "A"),
        at: String::new(),
    });
    first.step(Event::Fixed(Ok(String::new())));
    first.step(Event::Verified(gates(true)));
    first.step(Event::Reviewed {
        result: reject(60, "B in f_b"),
        at: String::new(),
    });
    let history = first.history().to_vec();
    assert_eq!(history.len(), 2);

    // The next run continues at iteration 3 and stops there.
    let mut second = Engine::resume(
        Policy {
            max_iterations: 3,
            ..policy()
        },
        history.clone(),
    );
    assert_eq!(second.step(Event::Started), vec![Effect::Verify]);
    assert_eq!(
        second.step(Event::Verified(gates(true))),
        vec![Effect::Review { iteration: 3 }]
    );
    let effects = second.step(Event::Reviewed {
        result: reject(55, "C in f_c"),
        at: String::new(),
    });
    assert!(
        matches!(
            effects.last(),
            Some(Effect::Finish(Outcome::MaxIterations { best_iteration: 2 }))
        ),
        "{effects:?}"
    );

    // A run started with every iteration already used reviews nothing.
    let mut full = Engine::resume(
        Policy {
            max_iterations: 2,
            ..policy()
        },
        history,
    );
    assert!(matches!(
        full.step(Event::Started).as_slice(),
        [Effect::Finish(Outcome::MaxIterations { .. })]
    ));
}

/// Issue 18: a verdict `approved` with a criterion `met: false` ended approved. An unmet
/// criterion rejects like a failed gate and becomes an issue.
#[test]
fn words_cannot_approve_an_unmet_criterion() {
    let mut v = approve(95).unwrap();
    v.criteria = vec![
        CriterionResult {
            criterion: "Users can log in".into(),
            met: true,
            evidence: "auth.py:10".into(),
        },
        CriterionResult {
            criterion: "Sessions expire after 30 minutes".into(),
            met: false,
            evidence: "not judged: the reviewer's verdict did not address this criterion".into(),
        },
    ];
    let record = apply_gates(1, v.clone(), gates(true), "t".into(), Severity::Low);
    assert_eq!(record.status, Status::Rejected);
    assert!(record.reviewer_approved);
    let titles: Vec<&str> = record.issues.iter().map(|i| i.title.as_str()).collect();
    assert_eq!(
        titles,
        ["Acceptance criterion not met: Sessions expire after 30 minutes"]
    );
    assert_eq!(record.issues[0].kind, IssueType::AcceptanceCriteria);
    v.criteria[1].met = true;
    assert_eq!(
        apply_gates(1, v, gates(true), "t".into(), Severity::Low).status,
        Status::Approved
    );
}

/// The one clipping rule on an iteration (issue 38): a 300 KB title from the model or a tool
/// becomes one line of at most 200 characters; descriptions, fixes and the summary keep their
/// head and tail within 4,000 characters.
#[test]
fn an_iteration_bounds_what_tools_and_the_model_wrote() {
    let huge = format!("first line {}\nsecond line", "x".repeat(300_000));
    let mut i = issue(&huge, 3);
    i.description = format!("HEAD{}TAIL", "y".repeat(300_000));
    i.fix = huge.clone();
    let mut v = verdict(false, 40, vec![i]).unwrap();
    v.summary = huge.clone();
    let record = apply_gates(1, v, gates(false), "t".into(), Severity::Low);
    for issue in &record.issues {
        assert!(issue.title.chars().count() <= 201, "{}", issue.title.len());
        assert!(!issue.title.contains('\n'));
        assert!(issue.description.chars().count() <= 4100);
        assert!(issue.fix.chars().count() <= 4100);
    }
    let q1 = &record.issues[0];
    assert!(q1.title.starts_with("first line xxx"));
    assert!(q1.description.starts_with("HEAD") && q1.description.ends_with("TAIL"));
    assert!(record.summary.chars().count() <= 4100);
}

#[test]
fn refused_credentials_stop_at_once_with_one_error() {
    let mut engine = Engine::new(policy());
    assert_eq!(engine.step(Event::Started), vec![Effect::Verify]);
    let next = engine.step(Event::Verified(gates(true)));
    assert!(matches!(next[..], [Effect::Review { .. }]), "{next:?}");
    let why = "Bedrock: HTTP 403 — refused the credentials from AWS_ACCESS_KEY_ID".to_string();
    let next = engine.step(Event::Refused(why.clone()));
    // No retry of the review, unlike any other error: the run ends here.
    match &next[..] {
        [Effect::Finish(Outcome::Errors { stop, .. })] => {
            assert_eq!(stop, &ErrorStop::Refused { why: why.clone() })
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(engine.errors(), [why]);
}
