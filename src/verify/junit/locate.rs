//! Where a test case failed: its message when the report gives none, and the failing line — the
//! first `path:line` in the failure text that names the test's file (or its class's file),
//! 1-based.

use std::sync::{Arc, OnceLock};

use regex::Regex;

use super::{CaseStatus, TestCase};

fn location_regex() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"([A-Za-z0-9_.@/\\-]*[A-Za-z0-9_-]\.[A-Za-z0-9]{1,6}):(\d+)")
            .expect("valid regex")
    })
}

pub(super) fn finish_case(case: &mut TestCase, zero_based_lines: bool) {
    if zero_based_lines && let Some(l) = &mut case.line {
        *l += 1;
    }
    if case.message.is_empty() {
        case.message = case
            .detail
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .map(|l| crate::text::prefix(l, 300).to_string())
            .unwrap_or_default();
    }
    if !matches!(case.status, CaseStatus::Failed | CaseStatus::Errored) {
        return;
    }
    // The failing line: the first `path:line` in the text naming the test's file, or — when the
    // report gives no file — naming the class's file (vitest: classname `sum.test.js`; Surefire:
    // `(FailingTest.java:32)`).
    let wanted = case
        .file
        .as_deref()
        .map(basename)
        .map(str::to_string)
        .or_else(|| {
            let c = basename(&case.classname);
            if c.contains('.') && location_regex().is_match(&format!("{c}:1")) {
                // `sum.test.js` or `org.example.FailingTest` → `FailingTest`.
                Some(c.to_string())
            } else {
                None
            }
        });
    let simple_class = case
        .classname
        .rsplit('.')
        .next()
        .unwrap_or_default()
        .to_string();
    for m in location_regex().captures_iter(&case.detail) {
        let path = &m[1];
        let file_name = basename(path);
        let matches_case = match &wanted {
            Some(w) => file_name == w,
            None => {
                !simple_class.is_empty()
                    && file_name
                        .split('.')
                        .next()
                        .is_some_and(|stem| stem == simple_class)
            }
        };
        if matches_case && let Ok(line) = m[2].parse::<u32>() {
            if case.file.is_none() {
                case.file = Some(Arc::from(path));
            }
            case.line = Some(line);
            return;
        }
    }
    // No report-given file: the first project-looking location (`panicked at src/lib.rs:26:9`,
    // `fail_test.go:6:`), skipping toolchain and dependency paths.
    if case.file.is_none() {
        let foreign = [
            "node_modules",
            "site-packages",
            "/rustc/",
            ".cargo/",
            "/usr/",
        ];
        let found = location_regex().captures_iter(&case.detail).find(|m| {
            let p = &m[1];
            !p.starts_with('/') && !foreign.iter().any(|f| p.contains(f))
        });
        if let Some(m) = found
            && let Ok(line) = m[2].parse::<u32>()
        {
            case.file = Some(Arc::from(&m[1]));
            case.line = Some(line);
        }
    }
}

fn basename(p: &str) -> &str {
    p.rsplit(['/', '\\']).next().unwrap_or(p)
}
