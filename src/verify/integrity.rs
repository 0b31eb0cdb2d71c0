//! The test-integrity guard: "tests are ground truth" holds only while the fixer cannot move
//! the ground. After every fix, from data qa-loop already has — the JUnit results of the pass
//! before the fix and after it, and the fixer's own change (the tree before the fix against the
//! tree after) — it finds the ways a fix turns a gate green without fixing anything:
//!
//! - a test case that ran before and is gone, or now skipped;
//! - a suite that executes fewer tests (or collects none);
//! - a test file deleted or renamed away;
//! - assertions removed from a test file, or replaced by ones that always hold;
//! - skip / ignore / xfail markers added (pytest, unittest, jest/vitest/mocha, Go, Rust,
//!   JUnit 4/5 and Kotlin);
//! - a test that failed before the fix and, as the fix changed it, passes on the code before
//!   the fix: it no longer catches the defect, however its check was loosened (the old-code run:
//!   [`old_code_candidates`] chooses the tests, `run::verifier` runs them in a scratch checkout,
//!   [`passing_on_old_code`] judges).
//!
//! Each finding is an issue (`unit_test`, high) of the `test_integrity` gate, which is required:
//! the iteration is rejected whatever the reviewer says, and the next fix request says what was
//! weakened. A change to a test that an issue of the iteration asked for (the issue names the
//! test's file, or the test, or says the test is wrong) is allowed and noted.

use std::collections::{BTreeMap, BTreeSet};

use crate::model::{
    CaseStatus, Finding, Gate, GateStatus, Issue, IssueType, Severity, SuiteTests, TestCase,
    VerificationReport,
};

/// The gate's name.
pub const GATE: &str = crate::model::TEST_INTEGRITY_GATE;
/// Findings listed in one gate (the rest are counted).
const LISTED: usize = 20;

/// Whether `path` is a test file by the usual conventions of the languages qa-loop knows.
pub fn is_test_file(path: &str) -> bool {
    let p = path.replace('\\', "/");
    let name = p.rsplit('/').next().unwrap_or(&p);
    let dirs: Vec<&str> = p.split('/').collect();
    let in_test_dir = dirs[..dirs.len().saturating_sub(1)]
        .iter()
        .any(|d| matches!(*d, "test" | "tests" | "__tests__" | "spec" | "testing"));
    let (stem, ext) = name.rsplit_once('.').unwrap_or((name, ""));
    let code = matches!(
        ext,
        "py" | "js"
            | "jsx"
            | "ts"
            | "tsx"
            | "mjs"
            | "cjs"
            | "go"
            | "rs"
            | "java"
            | "kt"
            | "kts"
            | "rb"
            | "cs"
            | "php"
            | "swift"
    );
    code && (in_test_dir
        || stem.starts_with("test_")
        || stem.ends_with("_test")
        || stem.ends_with(".test")
        || stem.ends_with(".spec")
        || stem.ends_with("Test")
        || stem.ends_with("Tests")
        || stem.ends_with("Spec")
        || stem.ends_with("IT")
        || stem == "conftest")
}

/// A line that asserts something, by language.
fn is_assertion(line: &str) -> bool {
    let l = line.trim();
    if l.starts_with("//") || l.starts_with('#') && !l.starts_with("#[") {
        return false;
    }
    const MARKS: [&str; 22] = [
        "assert ",
        "assert(",
        "self.assert",
        "assert_",
        "assert!",
        "assert_eq!",
        "assert_ne!",
        "expect(",
        "assert.",
        "assertEquals",
        "assertThat",
        "assertTrue",
        "assertFalse",
        "assertThrows",
        "t.Error",
        "t.Fatal",
        "require.",
        "pytest.raises",
        "should.",
        ".should(",
        "verify(",
        "XCTAssert",
    ];
    MARKS.iter().any(|m| l.contains(m))
}

/// An assertion that holds whatever the code does.
fn is_vacuous(line: &str) -> bool {
    let l: String = line.split_whitespace().collect::<Vec<_>>().join(" ");
    const VACUOUS: [&str; 12] = [
        "assert True",
        "assert 1",
        "self.assertTrue(True)",
        "expect(true).toBe(true)",
        "expect(true).toBeTruthy()",
        "expect(1).toBe(1)",
        "assertTrue(true)",
        "assert!(true)",
        "assert_eq!(1, 1)",
        "assert_eq!(true, true)",
        "assertEquals(1, 1)",
        "assert.ok(true)",
    ];
    VACUOUS.iter().any(|v| l.contains(v))
}

/// A marker that skips, ignores or expects a test to fail.
fn skip_marker(line: &str) -> Option<&'static str> {
    let l = line.trim();
    const MARKERS: [(&str, &str); 24] = [
        ("@pytest.mark.skip", "pytest skip marker"),
        ("@pytest.mark.xfail", "pytest xfail marker"),
        ("pytest.skip(", "pytest.skip()"),
        ("pytest.xfail(", "pytest.xfail()"),
        ("@unittest.skip", "unittest skip decorator"),
        ("@unittest.expectedFailure", "unittest expectedFailure"),
        ("self.skipTest(", "self.skipTest()"),
        ("it.skip(", "it.skip"),
        ("test.skip(", "test.skip"),
        ("describe.skip(", "describe.skip"),
        ("it.todo(", "it.todo"),
        ("test.todo(", "test.todo"),
        ("xit(", "xit"),
        ("xdescribe(", "xdescribe"),
        ("xtest(", "xtest"),
        ("test.fails(", "test.fails"),
        ("t.Skip(", "t.Skip()"),
        ("t.SkipNow(", "t.SkipNow()"),
        ("#[ignore", "#[ignore]"),
        ("@Disabled", "@Disabled"),
        ("@Ignore", "@Ignore"),
        ("assumeTrue(false", "assumeTrue(false)"),
        ("pending(", "pending()"),
        ("this.skip(", "this.skip()"),
    ];
    MARKERS
        .iter()
        .find(|(m, _)| l.contains(m))
        .map(|(_, what)| *what)
}

/// One file of the fixer's change.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct FileChange {
    pub path: String,
    pub deleted: bool,
    /// Renamed to this path.
    pub renamed_to: Option<String>,
    pub added: Vec<String>,
    pub removed: Vec<String>,
}

/// Reads a `git diff` (with renames detected or not) into per-file changes.
pub fn parse_diff(diff: &str) -> Vec<FileChange> {
    let mut files: Vec<FileChange> = Vec::new();
    for line in diff.lines() {
        if let Some(rest) = line.strip_prefix("diff --git a/") {
            let path = rest.split(" b/").next().unwrap_or(rest).to_string();
            files.push(FileChange {
                path,
                ..FileChange::default()
            });
            continue;
        }
        let Some(f) = files.last_mut() else { continue };
        if line.starts_with("deleted file mode") {
            f.deleted = true;
        } else if let Some(to) = line.strip_prefix("rename to ") {
            f.renamed_to = Some(to.to_string());
        } else if line.starts_with("+++") || line.starts_with("---") {
            continue;
        } else if let Some(a) = line.strip_prefix('+') {
            f.added.push(a.to_string());
        } else if let Some(r) = line.strip_prefix('-') {
            f.removed.push(r.to_string());
        }
    }
    files
}

/// What the issues the fixer worked on asked to change in tests: a test file or test an issue
/// names while saying the test itself is wrong.
struct Asked<'a> {
    issues: &'a [Issue],
}

impl Asked<'_> {
    /// The issue that allows changing `path` (or the test `name` in it), if any.
    fn allows(&self, path: &str, name: Option<&str>) -> Option<&Issue> {
        const TEST_IS_WRONG: [&str; 10] = [
            "test is wrong",
            "test is incorrect",
            "wrong test",
            "incorrect test",
            "test expects",
            "outdated test",
            "test is outdated",
            "flaky",
            "obsolete test",
            "test asserts the wrong",
        ];
        self.issues.iter().find(|i| {
            let text = format!("{} {} {}", i.title, i.description, i.fix).to_lowercase();
            let names_file = i.file.as_deref().is_some_and(|f| same_path(f, path))
                || text.contains(&path.to_lowercase())
                || path
                    .rsplit('/')
                    .next()
                    .is_some_and(|n| text.contains(&n.to_lowercase()));
            let names_test = name.is_some_and(|n| text.contains(&n.to_lowercase()));
            // The reviewer must say the test itself is wrong: an issue that merely points at a
            // test file (or the guard's own findings) allows nothing.
            let says_wrong = TEST_IS_WRONG.iter().any(|w| text.contains(w))
                || (text.contains("test")
                    && (text.contains(" is wrong") || text.contains(" is incorrect")));
            (names_file || names_test) && says_wrong
        })
    }
}

fn same_path(a: &str, b: &str) -> bool {
    let (a, b) = (a.trim_start_matches("./"), b.trim_start_matches("./"));
    a == b || a.ends_with(&format!("/{b}")) || b.ends_with(&format!("/{a}"))
}

/// The guard's verdict on one fix.
pub fn check(
    before: &VerificationReport,
    after: &VerificationReport,
    fix_diff: &str,
    asked_by: &[Issue],
    old_code: Vec<Finding>,
) -> Gate {
    let mut verdict = Verdict {
        asked: Asked { issues: asked_by },
        findings: old_code,
        allowed: Vec::new(),
    };
    // 1. Test cases and counts, per suite.
    for b in &before.tests {
        let Some(a) = after.tests.iter().find(|s| s.suite == b.suite) else {
            continue;
        };
        let gone = verdict.check_cases(b, a);
        verdict.check_counts(b, a, gone);
    }
    // 2. The fixer's change to test files.
    for f in parse_diff(fix_diff) {
        if is_test_file(&f.path) {
            verdict.check_file_change(&f);
        }
    }
    verdict.into_gate()
}

/// The tests the old-code run must check, per suite: those that failed in the run's first pass
/// and whose test file the fixes changed (when the report names no file, any failing test of a
/// suite once a test file changed), unless an issue asked for that test to change.
pub fn old_code_candidates<'a>(
    before: &'a VerificationReport,
    fix_diff: &str,
    asked_by: &[Issue],
) -> Vec<(&'a str, Vec<&'a TestCase>)> {
    let changed: Vec<String> = parse_diff(fix_diff)
        .into_iter()
        .filter(|f| !f.deleted && is_test_file(&f.path))
        .map(|f| f.renamed_to.unwrap_or(f.path))
        .collect();
    if changed.is_empty() {
        return Vec::new();
    }
    let asked = Asked { issues: asked_by };
    before
        .tests
        .iter()
        .map(|s| {
            let cases = s
                .cases
                .iter()
                .filter(|c| c.is_failure())
                .filter(|c| {
                    c.file
                        .as_deref()
                        .is_none_or(|f| changed.iter().any(|p| same_path(p, f)))
                })
                .filter(|c| {
                    let file = c.file.as_deref().unwrap_or_default();
                    asked.allows(file, Some(&c.name)).is_none()
                })
                .collect();
            (s.suite.as_str(), cases)
        })
        .filter(|(_, cases): &(&str, Vec<&TestCase>)| !cases.is_empty())
        .collect()
}

/// The tests the fixes added as proof, per suite: passing now, absent from the first pass, in a
/// test file the fixes changed (or anywhere, when the report names no file).
pub fn new_tests<'a>(
    before: &VerificationReport,
    after: &'a VerificationReport,
    fix_diff: &str,
) -> Vec<(&'a str, Vec<&'a TestCase>)> {
    let changed: Vec<String> = parse_diff(fix_diff)
        .into_iter()
        .filter(|f| !f.deleted && is_test_file(&f.path))
        .map(|f| f.renamed_to.unwrap_or(f.path))
        .collect();
    if changed.is_empty() {
        return Vec::new();
    }
    after
        .tests
        .iter()
        .map(|s| {
            let known: BTreeSet<(&str, &str)> = before
                .tests
                .iter()
                .filter(|b| b.suite == s.suite)
                .flat_map(|b| b.cases.iter().map(|c| (&*c.classname, c.name.as_str())))
                .collect();
            let cases = s
                .cases
                .iter()
                .filter(|c| c.status == CaseStatus::Passed)
                .filter(|c| !known.contains(&(&*c.classname, c.name.as_str())))
                .filter(|c| {
                    c.file
                        .as_deref()
                        .is_none_or(|f| changed.iter().any(|p| same_path(p, f)))
                })
                .collect();
            (s.suite.as_str(), cases)
        })
        .filter(|(_, cases): &(&str, Vec<&TestCase>)| !cases.is_empty())
        .collect()
}

/// Whether each of `tests` failed (`true`: it proves the fix) or passed (`false`: it proves
/// nothing) in the old-code run; tests the run did not report are left out.
pub fn evidence(tests: &[&TestCase], old: &SuiteTests) -> Vec<(String, String, bool)> {
    tests
        .iter()
        .filter_map(|t| {
            let o = old
                .cases
                .iter()
                .find(|o| o.classname == t.classname && o.name == t.name)?;
            (o.status != CaseStatus::Skipped)
                .then(|| (t.classname.to_string(), t.name.clone(), o.is_failure()))
        })
        .collect()
}

/// The old-code run's verdict: each test that failed before the fix and, as the fix left it,
/// passes on the code before the fix no longer catches the defect — the fix weakened it.
pub fn passing_on_old_code(tests: &[&TestCase], old: &SuiteTests) -> Vec<Finding> {
    tests
        .iter()
        .filter(|t| {
            old.cases.iter().any(|o| {
                o.classname == t.classname && o.name == t.name && o.status == CaseStatus::Passed
            })
        })
        .map(|t| {
            finding(
                format!(
                    "`{}` passes on the code before the fix: the fix changed the test so it no longer catches the defect",
                    t.full_name()
                ),
                t.file.as_deref(),
                "Run as the fix left it against the code as it was before the fix, the test passed; before the fix it failed.".to_string(),
                "Restore the test's check; fix the code it tests instead.",
            )
        })
        .collect()
}

/// A finding of the guard: a unit-test issue of high severity.
fn finding(title: String, file: Option<&str>, detail: String, fix: &str) -> Finding {
    Finding {
        kind: IssueType::UnitTest,
        severity: Severity::High,
        title,
        file: file.map(str::to_string),
        line: None,
        detail,
        fix: fix.to_string(),
    }
}

/// The guard's findings so far, and the changes to tests that an issue asked for.
struct Verdict<'a> {
    asked: Asked<'a>,
    findings: Vec<Finding>,
    allowed: Vec<String>,
}

impl Verdict<'_> {
    /// Records `f` about `path` (or its test `test`): allowed if an issue asked for it, else kept.
    fn push(&mut self, f: Finding, path: &str, test: Option<&str>) {
        match self.asked.allows(path, test) {
            Some(issue) => self
                .allowed
                .push(format!("{} (as {} asked)", f.title, issue.id)),
            None => self.findings.push(f),
        }
    }

    /// Flags each case of suite `b` that ran before the fix and is gone or skipped in `a`;
    /// returns how many are gone.
    fn check_cases(&mut self, b: &SuiteTests, a: &SuiteTests) -> usize {
        let key = |c: &TestCase| format!("{}::{}", c.classname, c.name);
        let now: BTreeMap<String, &TestCase> = a.cases.iter().map(|c| (key(c), c)).collect();
        let mut gone = 0usize;
        for c in b.cases.iter().filter(|c| c.status != CaseStatus::Skipped) {
            let file = c.file.as_deref().unwrap_or_default().to_string();
            match now.get(&key(c)) {
                None => {
                    gone += 1;
                    self.push(
                        finding(
                            format!("the fix removed the test `{}` from `{}`", c.name, b.suite),
                            c.file.as_deref(),
                            format!(
                                "`{}` ran before the fix ({:?}) and is not in the results after it",
                                key(c),
                                c.status
                            ),
                            "Restore the test; fix the code it tests instead.",
                        ),
                        &file,
                        Some(&c.name),
                    );
                }
                Some(n) if n.status == CaseStatus::Skipped => self.push(
                    finding(
                        format!("the fix made the test `{}` skipped", c.name),
                        c.file.as_deref(),
                        format!(
                            "`{}` ran before the fix ({:?}) and is skipped after it",
                            key(c),
                            c.status
                        ),
                        "Remove the skip; fix the code the test checks.",
                    ),
                    &file,
                    Some(&c.name),
                ),
                Some(_) => {}
            }
        }
        gone
    }

    /// Flags suite `a` executing fewer tests than `b` did, unless the `gone` cases explain it
    /// (a suite that collects none is flagged regardless).
    fn check_counts(&mut self, b: &SuiteTests, a: &SuiteTests, gone: usize) {
        let ran = |s: &SuiteTests| s.counts.tests.saturating_sub(s.counts.skipped);
        let (was, is) = (ran(b), ran(a));
        if is < was && (gone == 0 || is == 0) {
            let title = if is == 0 {
                format!(
                    "`{}` collects no tests after the fix ({was} before)",
                    b.suite
                )
            } else {
                format!("`{}` runs {is} tests after the fix, {was} before", b.suite)
            };
            self.push(
                finding(
                    title,
                    None,
                    format!("executed tests (not skipped): {was} → {is}"),
                    "Make the suite collect and run every test it ran before.",
                ),
                "",
                None,
            );
        }
    }

    /// Flags the fixer's change to one test file: deleted, renamed away, skip markers added,
    /// assertions removed or made vacuous.
    fn check_file_change(&mut self, f: &FileChange) {
        if f.deleted {
            self.push(
                finding(
                    format!("the fix deleted the test file `{}`", f.path),
                    Some(&f.path),
                    format!("{} line(s) of tests removed", f.removed.len()),
                    "Restore the test file.",
                ),
                &f.path,
                None,
            );
            return;
        }
        if let Some(to) = f.renamed_to.as_deref().filter(|t| !is_test_file(t)) {
            self.push(
                finding(
                    format!(
                        "the fix renamed the test file `{}` to `{to}`, which no test run collects",
                        f.path
                    ),
                    Some(&f.path),
                    String::new(),
                    "Move the test file back.",
                ),
                &f.path,
                None,
            );
        }
        self.check_skip_markers(f);
        self.check_assertions(f);
    }

    /// Flags each kind of skip marker the change adds to a test file (and did not remove).
    fn check_skip_markers(&mut self, f: &FileChange) {
        let markers: BTreeSet<&str> = f.added.iter().filter_map(|l| skip_marker(l)).collect();
        let removed_markers: BTreeSet<&str> =
            f.removed.iter().filter_map(|l| skip_marker(l)).collect();
        for m in markers.difference(&removed_markers) {
            self.push(
                finding(
                    format!("the fix added a {m} to `{}`", f.path),
                    Some(&f.path),
                    f.added
                        .iter()
                        .find(|l| skip_marker(l) == Some(m))
                        .map(|l| l.trim().to_string())
                        .unwrap_or_default(),
                    "Remove the marker; fix the code the test checks.",
                ),
                &f.path,
                None,
            );
        }
    }

    /// Flags real assertions the change removes from a test file: replaced by vacuous ones,
    /// or more removed than added.
    fn check_assertions(&mut self, f: &FileChange) {
        let removed_asserts: Vec<&String> = f
            .removed
            .iter()
            .filter(|l| is_assertion(l) && !is_vacuous(l))
            .collect();
        let added_real = f
            .added
            .iter()
            .filter(|l| is_assertion(l) && !is_vacuous(l))
            .count();
        let added_vacuous: Vec<&String> = f.added.iter().filter(|l| is_vacuous(l)).collect();
        if !added_vacuous.is_empty() && !removed_asserts.is_empty() {
            self.push(
                finding(
                    format!(
                        "the fix replaced assertions in `{}` with ones that always hold",
                        f.path
                    ),
                    Some(&f.path),
                    format!(
                        "- {}\n+ {}",
                        removed_asserts[0].trim(),
                        added_vacuous[0].trim()
                    ),
                    "Restore the assertion; fix the code it checks.",
                ),
                &f.path,
                None,
            );
        } else if removed_asserts.len() > added_real {
            self.push(
                finding(
                    format!(
                        "the fix removed {} assertion(s) from `{}`",
                        removed_asserts.len() - added_real,
                        f.path
                    ),
                    Some(&f.path),
                    removed_asserts
                        .iter()
                        .take(3)
                        .map(|l| format!("- {}", l.trim()))
                        .collect::<Vec<_>>()
                        .join("\n"),
                    "Restore the assertions; fix the code they check.",
                ),
                &f.path,
                None,
            );
        }
    }

    /// The gate: failed if anything was found, with a summary, the allowed changes and the
    /// first findings.
    fn into_gate(self) -> Gate {
        let Verdict {
            mut findings,
            allowed,
            ..
        } = self;
        let status = if findings.is_empty() {
            GateStatus::Passed
        } else {
            GateStatus::Failed
        };
        let summary = match (findings.len(), allowed.len()) {
            (0, 0) => "no test was removed, skipped or weakened by the fix".to_string(),
            (0, n) => format!("{n} change(s) to tests, each asked for by an issue"),
            (_, _) => format!(
                "the fix weakened the tests: {}",
                findings
                    .iter()
                    .take(3)
                    .map(|f| f.title.as_str())
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
        };
        let mut excerpt = String::new();
        if findings.len() > LISTED {
            excerpt.push_str(&format!(
                "… and {} more findings\n",
                findings.len() - LISTED
            ));
            findings.truncate(LISTED);
        }
        for a in &allowed {
            excerpt.push_str(&format!("allowed: {a}\n"));
        }
        Gate {
            name: GATE.into(),
            issue_type: IssueType::UnitTest,
            required: true,
            status,
            summary: crate::text::clip(&summary, 300),
            excerpt,
            findings,
        }
    }
}

#[cfg(test)]
mod tests;
