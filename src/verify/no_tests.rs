//! Whether a suite executed no test (SPEC §3.1: "ran no tests" fails the suite unless
//! `allow_no_tests: true`). With results ingested the JUnit figures decide; without, the runner's
//! own words do: each of the common runners says so when it found nothing to run, often with
//! exit code 0 (`node --test` with no matching file, `go test` in a package without test files,
//! unittest, cargo, CTest, gotestsum), so the exit code alone would call the suite green.
//!
//! The words are read from what qa-loop captured of each command. Rules that need the whole
//! output (every `go test` package line, every `running N tests` of cargo) only judge an output
//! that was not cut; the others are the runner's final summary, which the kept tail holds.

use crate::model::{CommandRun, SuiteTests};

/// Why the suite executed no test, or `None` when it did (or nothing says it did not).
pub fn ran_none(tests: Option<&SuiteTests>, runs: &[CommandRun], whole: u64) -> Option<String> {
    if let Some(t) = tests {
        return from_results(t);
    }
    runs.iter().find_map(|run| {
        let said = runner_said_none(&run.excerpt, run.output_bytes <= whole)?;
        Some(format!("`{}` says {said}", run.command))
    })
}

/// With results ingested: no report, or reports whose every test was skipped (or absent).
fn from_results(t: &SuiteTests) -> Option<String> {
    if t.reports.is_empty() {
        return Some("no JUnit report was read".to_string());
    }
    let c = t.counts;
    let executed = c.passed + c.failed + c.errored;
    (executed == 0).then(|| match c.skipped {
        0 => format!("the JUnit reports ({}) hold no test", t.reports.join(", ")),
        n => format!(
            "every test in the JUnit reports ({}) was skipped ({n})",
            t.reports.join(", ")
        ),
    })
}

/// The runner's own statement that it ran no test, quoted, if the output holds one. `whole`:
/// the output was captured uncut.
pub fn runner_said_none(output: &str, whole: bool) -> Option<String> {
    // Colour codes (pytest colours its summary on a terminal, `--color=yes`) are not words.
    let plain = strip_ansi(output);
    let lines: Vec<&str> = plain.lines().map(str::trim).collect();
    if let Some(line) = lines.iter().find(|l| says_none(l)) {
        // The runner's own line, as it wrote it (`Ran 0 tests in 0.000s`).
        return Some(format!(
            "\"{}\"",
            line.trim_matches(|c: char| c == '=' || c.is_whitespace())
        ));
    }
    if whole {
        return go_packages_without_tests(&lines).or_else(|| cargo_ran_zero(&lines));
    }
    None
}

/// `text` without ANSI escape sequences (CSI `ESC [ … letter`, and lone `ESC x`).
fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        if chars.peek() == Some(&'[') {
            chars.next();
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            chars.next();
        }
    }
    out
}

/// A line in which a runner states it ran nothing.
fn says_none(line: &str) -> bool {
    let lower = line.to_ascii_lowercase();
    // pytest ("no tests ran in 0.01s", exit 5); unittest before and since Python 3.12.
    lower.trim_matches(|c| c == '=' || c == ' ').starts_with("no tests ran in ")
        || (line.starts_with("Ran 0 tests in "))
        || line == "NO TESTS RAN"
        // CTest built with testing off or no test registered.
        || line.starts_with("No tests were found")
        // jest ("No tests found, exiting with code 1"), vitest ("No test files found, exiting …").
        || line.starts_with("No tests found")
        || line.starts_with("No test files found")
        // TAP summaries: node:test ("# tests 0"; the spec reporter's "ℹ tests 0").
        || line == "# tests 0"
        || line == "ℹ tests 0"
        // gotestsum ("DONE 0 tests in 0.123s").
        || line.starts_with("DONE 0 tests")
}

/// `go test`: every package line says it has no test files or no test to run, and none ran.
fn go_packages_without_tests(lines: &[&str]) -> Option<String> {
    let mut none = 0;
    for line in lines {
        let package_line = ["ok ", "ok\t", "FAIL\t", "? ", "?\t"]
            .iter()
            .any(|p| line.starts_with(p));
        if !package_line {
            continue;
        }
        if line.ends_with("[no test files]") || line.ends_with("[no tests to run]") {
            none += 1;
        } else {
            return None;
        }
    }
    (none > 0).then(|| format!("{none} package(s) with no test files or no test to run"))
}

/// cargo test: every test binary said `running 0 tests`.
fn cargo_ran_zero(lines: &[&str]) -> Option<String> {
    let counts: Vec<u64> = lines
        .iter()
        .filter_map(|l| {
            // "running 0 tests", "running 1 test", "running 12 tests".
            let rest = l.strip_prefix("running ")?;
            let n = rest
                .strip_suffix(" tests")
                .or_else(|| rest.strip_suffix(" test"))?;
            n.parse().ok()
        })
        .collect();
    (!counts.is_empty() && counts.iter().all(|&n| n == 0))
        .then(|| "\"running 0 tests\" for every test binary".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 49: pytest's coloured summary and unittest's line are quoted as the runner wrote
    /// them, never blank.
    #[test]
    fn coloured_and_framed_lines_are_quoted_as_written() {
        let coloured =
            "\u{1b}[33m\u{1b}[33mno tests ran\u{1b}[0m\u{1b}[33m in 0.01s\u{1b}[0m\u{1b}[0m\n";
        assert_eq!(
            runner_said_none(coloured, true).as_deref(),
            Some("\"no tests ran in 0.01s\"")
        );
        let framed =
            "============================ no tests ran in 0.01s ============================\n";
        assert_eq!(
            runner_said_none(framed, true).as_deref(),
            Some("\"no tests ran in 0.01s\"")
        );
        let unittest = "\n----------------------------------------------------------------------\nRan 0 tests in 0.000s\n\nNO TESTS RAN\n";
        assert_eq!(
            runner_said_none(unittest, true).as_deref(),
            Some("\"Ran 0 tests in 0.000s\"")
        );
    }

    /// What the runners print, copied from their real runs (`.ci/run` also runs them:
    /// tests/real_tools.rs).
    #[test]
    fn each_runners_own_words_for_no_tests() {
        let said = |out: &str| runner_said_none(out, true);
        for (comment, out, none) in [
            (
                "pytest -q, no test collected (exit 5)",
                "\nno tests ran in 0.01s\n",
                true,
            ),
            (
                "pytest, full summary",
                "===== no tests ran in 0.12s =====",
                true,
            ),
            ("pytest with tests", "3 passed in 0.02s", false),
            ("unittest 3.11", "----\nRan 0 tests in 0.000s\n\nOK\n", true),
            (
                "unittest 3.12",
                "----\nRan 0 tests in 0.000s\n\nNO TESTS RAN\n",
                true,
            ),
            ("unittest with tests", "Ran 12 tests in 0.3s\n\nOK", false),
            ("ctest", "Test project /b\nNo tests were found!!!\n", true),
            (
                "jest",
                "No tests found, exiting with code 1\nRun with `--passWithNoTests`",
                true,
            ),
            ("vitest", "No test files found, exiting with code 1", true),
            (
                "node --test, TAP",
                "1..0\n# tests 0\n# suites 0\n# pass 0\n",
                true,
            ),
            (
                "node --test with tests",
                "1..2\n# tests 2\n# pass 2\n",
                false,
            ),
            ("node --test spec reporter", "ℹ tests 0\nℹ pass 0\n", true),
            ("gotestsum", "DONE 0 tests in 0.210s", true),
            ("go test, no test files", "?   \tx\t[no test files]\n", true),
            (
                "go test, no match for -run",
                "ok  \tx\t0.002s [no tests to run]\n",
                true,
            ),
            (
                "go test, one package with tests",
                "?   \tx/cmd\t[no test files]\nok  \tx/lib\t0.004s\n",
                false,
            ),
            (
                "go test, failing",
                "--- FAIL: TestA\nFAIL\nFAIL\tx\t0.002s\n",
                false,
            ),
            (
                "cargo test, nothing anywhere",
                "running 0 tests\ntest result: ok. 0 passed\n   Doc-tests x\nrunning 0 tests\n",
                true,
            ),
            (
                "cargo test, one unit test (singular) and empty doc-tests",
                "running 1 test\n.\ntest result: ok. 1 passed\nrunning 0 tests\n",
                false,
            ),
            (
                "cargo test, doc-tests empty but unit tests ran",
                "running 4 tests\ntest result: ok. 4 passed\nrunning 0 tests\n",
                false,
            ),
            ("a build command", "Compiling x v0.1.0\nFinished", false),
        ] {
            assert_eq!(said(out).is_some(), none, "{comment}: {:?}", said(out));
        }
    }

    #[test]
    fn rules_that_need_the_whole_output_do_not_judge_a_cut_one() {
        // The middle of a cut output may hold the packages (or binaries) that ran tests.
        let go = "?   \tx\t[no test files]\n";
        assert!(runner_said_none(go, true).is_some());
        assert_eq!(runner_said_none(go, false), None);
        assert_eq!(runner_said_none("running 0 tests\n", false), None);
        // A runner's final summary is in the kept tail: judged either way.
        assert!(runner_said_none("\n[… 9 bytes omitted …]\n# tests 0\n", false).is_some());
    }
}
