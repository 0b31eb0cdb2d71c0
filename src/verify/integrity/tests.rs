//! The guard on hand-built results and diffs in the shapes `git diff` and the JUnit reader give.

use super::*;
use crate::model::{SuiteTests, TestCase, TestCounts};
use std::sync::Arc;

fn case(name: &str, status: CaseStatus) -> TestCase {
    TestCase {
        suite: Arc::from("pytest"),
        classname: Arc::from("tests.test_cart"),
        name: name.into(),
        status,
        file: Some(Arc::from("tests/test_cart.py")),
        line: None,
        time: None,
        message: String::new(),
        detail: String::new(),
        flaky: false,
        proves_fix: None,
    }
}

fn report(cases: Vec<TestCase>) -> VerificationReport {
    VerificationReport {
        tests: vec![SuiteTests {
            suite: "unit_tests".into(),
            reports: vec!["junit.xml".into()],
            counts: TestCounts::of(&cases),
            cases,
            problems: vec![],
        }],
        ..VerificationReport::default()
    }
}

fn issue(id: &str, title: &str, file: Option<&str>) -> Issue {
    Issue {
        id: id.into(),
        title: title.into(),
        kind: IssueType::UnitTest,
        severity: Severity::High,
        file: file.map(str::to_string),
        line: None,
        file_lines: None,
        description: String::new(),
        fix: String::new(),
        recurs: None,
        introduced: true,
        fingerprint: None,
    }
}

fn titles(g: &Gate) -> Vec<String> {
    g.findings.iter().map(|f| f.title.clone()).collect()
}

const DELETE: &str = "diff --git a/tests/test_cart.py b/tests/test_cart.py
deleted file mode 100644
index 1111111..0000000
--- a/tests/test_cart.py
+++ /dev/null
@@ -1,4 +0,0 @@
-from cart import total
-
-def test_total():
-    assert total([1, 2]) == 3
";

#[test]
fn a_deleted_test_and_its_vanished_case_are_found() {
    let before = report(vec![
        case("test_total", CaseStatus::Failed),
        case("test_empty", CaseStatus::Passed),
    ]);
    let after = report(vec![case("test_empty", CaseStatus::Passed)]);
    let g = check(&before, &after, DELETE, &[], Vec::new());
    assert_eq!(g.status, GateStatus::Failed);
    assert!(g.required);
    assert_eq!(
        titles(&g),
        [
            "the fix removed the test `test_total` from `unit_tests`",
            "the fix deleted the test file `tests/test_cart.py`"
        ]
    );
}

#[test]
fn skip_markers_in_every_language_are_found() {
    for (path, line, what) in [
        (
            "tests/test_a.py",
            "@pytest.mark.skip(reason=\"later\")",
            "pytest skip marker",
        ),
        (
            "tests/test_a.py",
            "@pytest.mark.xfail",
            "pytest xfail marker",
        ),
        (
            "test_b.py",
            "        self.skipTest(\"flaky\")",
            "self.skipTest()",
        ),
        ("src/cart.test.ts", "it.skip('adds', () => {", "it.skip"),
        ("src/cart.spec.js", "xit('adds', () => {", "xit"),
        ("cart_test.go", "\tt.Skip(\"broken\")", "t.Skip()"),
        ("tests/cart.rs", "#[ignore]", "#[ignore]"),
        ("src/test/java/CartTest.java", "    @Disabled", "@Disabled"),
        ("src/test/kotlin/CartTest.kt", "    @Ignore", "@Ignore"),
    ] {
        let diff = format!(
            "diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -1 +1,2 @@\n+{line}\n context\n"
        );
        let g = check(
            &VerificationReport::default(),
            &VerificationReport::default(),
            &diff,
            &[],
            Vec::new(),
        );
        assert_eq!(
            titles(&g),
            [format!("the fix added a {what} to `{path}`")],
            "{path}: {line}"
        );
    }
}

#[test]
fn removed_and_vacuous_assertions_are_found_a_rewrite_is_not() {
    let removed = "diff --git a/tests/test_cart.py b/tests/test_cart.py
--- a/tests/test_cart.py
+++ b/tests/test_cart.py
@@ -3,3 +3,2 @@ def test_total():
     cart = Cart()
-    assert cart.total() == 3
-    assert cart.count == 2
+    assert cart.count == 2
";
    let g = check(
        &VerificationReport::default(),
        &VerificationReport::default(),
        removed,
        &[],
        Vec::new(),
    );
    assert_eq!(
        titles(&g),
        ["the fix removed 1 assertion(s) from `tests/test_cart.py`"]
    );
    let vacuous = "diff --git a/src/cart.test.ts b/src/cart.test.ts
--- a/src/cart.test.ts
+++ b/src/cart.test.ts
@@ -3 +3 @@
-  expect(total([1, 2])).toBe(3);
+  expect(true).toBe(true);
";
    let g = check(
        &VerificationReport::default(),
        &VerificationReport::default(),
        vacuous,
        &[],
        Vec::new(),
    );
    assert_eq!(
        titles(&g),
        ["the fix replaced assertions in `src/cart.test.ts` with ones that always hold"]
    );
    // The same number of real assertions, reworded: not a weakening.
    let rewrite = "diff --git a/cart_test.go b/cart_test.go
--- a/cart_test.go
+++ b/cart_test.go
@@ -3 +3 @@
-\tif got != 3 { t.Errorf(\"got %d\", got) }
+\tif got != 3 { t.Fatalf(\"total = %d, want 3\", got) }
";
    let g = check(
        &VerificationReport::default(),
        &VerificationReport::default(),
        rewrite,
        &[],
        Vec::new(),
    );
    assert_eq!(g.status, GateStatus::Passed, "{:?}", titles(&g));
    // Code outside test files is the fixer's job.
    let code = "diff --git a/src/cart.py b/src/cart.py\n--- a/src/cart.py\n+++ b/src/cart.py\n@@ -1 +1 @@\n-    assert x > 0\n";
    assert_eq!(
        check(
            &VerificationReport::default(),
            &VerificationReport::default(),
            code,
            &[],
            Vec::new()
        )
        .status,
        GateStatus::Passed
    );
}

#[test]
fn a_skipped_case_and_a_suite_that_collects_nothing_are_found() {
    let before = report(vec![
        case("test_total", CaseStatus::Failed),
        case("test_empty", CaseStatus::Passed),
    ]);
    let skipped = report(vec![
        case("test_total", CaseStatus::Skipped),
        case("test_empty", CaseStatus::Passed),
    ]);
    assert_eq!(
        titles(&check(&before, &skipped, "", &[], Vec::new())),
        [
            "the fix made the test `test_total` skipped",
            "`unit_tests` runs 1 tests after the fix, 2 before"
        ]
    );
    let nothing = report(vec![]);
    let g = check(&before, &nothing, "", &[], Vec::new());
    assert!(
        titles(&g).contains(&"`unit_tests` collects no tests after the fix (2 before)".to_string()),
        "{:?}",
        titles(&g)
    );
}

#[test]
fn a_test_an_issue_called_wrong_may_change_and_is_noted() {
    let diff = "diff --git a/tests/test_cart.py b/tests/test_cart.py
--- a/tests/test_cart.py
+++ b/tests/test_cart.py
@@ -3 +3 @@
-    assert total([1, 2]) == 4
";
    let wrong = issue(
        "Q2",
        "test_total is wrong: it expects 4 for [1, 2]",
        Some("tests/test_cart.py"),
    );
    let g = check(
        &VerificationReport::default(),
        &VerificationReport::default(),
        diff,
        &[wrong],
        Vec::new(),
    );
    assert_eq!(g.status, GateStatus::Passed);
    assert!(
        g.excerpt
            .contains("allowed: the fix removed 1 assertion(s)")
            && g.excerpt.contains("as Q2 asked"),
        "{}",
        g.excerpt
    );
    // An issue about the code, not the test, allows nothing.
    let code = issue("Q1", "total() adds wrongly", Some("src/cart.py"));
    let g = check(
        &VerificationReport::default(),
        &VerificationReport::default(),
        diff,
        &[code],
        Vec::new(),
    );
    assert_eq!(g.status, GateStatus::Failed);
}

#[test]
fn test_files_are_recognised_by_convention() {
    for yes in [
        "tests/test_cart.py",
        "test_cart.py",
        "cart_test.py",
        "src/cart.test.ts",
        "web/cart.spec.js",
        "cart_test.go",
        "tests/cart.rs",
        "src/test/java/app/CartTest.java",
        "CartTests.kt",
        "src/__tests__/cart.js",
        "conftest.py",
    ] {
        assert!(is_test_file(yes), "{yes}");
    }
    for no in [
        "src/cart.py",
        "testdata/input.json",
        "src/contest.py",
        "docs/tests.md",
        "latest.py",
    ] {
        assert!(!is_test_file(no), "{no}");
    }
}

#[test]
fn the_guard_s_own_finding_or_an_issue_about_a_test_file_allows_nothing() {
    let diff = "diff --git a/tests/test_cart.py b/tests/test_cart.py
--- a/tests/test_cart.py
+++ b/tests/test_cart.py
@@ -3 +3 @@
-    assert total([1, 2]) == 3
";
    let own = issue(
        "T1",
        "the fix removed 1 assertion(s) from `tests/test_cart.py`",
        Some("tests/test_cart.py"),
    );
    let missing = issue(
        "Q3",
        "tests/test_cart.py lacks a test for an empty cart",
        Some("tests/test_cart.py"),
    );
    let g = check(
        &VerificationReport::default(),
        &VerificationReport::default(),
        diff,
        &[own, missing],
        Vec::new(),
    );
    assert_eq!(g.status, GateStatus::Failed);
}
