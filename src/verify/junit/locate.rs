//! Where a test case failed: its message when the report gives none, and the failing line — the
//! first `path:line` in the failure text that names the test's file (or its class's file),
//! 1-based, a stack frame's (the failing `expect`) before a mere mention (Playwright's title
//! line names the `test(` declaration).

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
    for (path, line) in mentions(&case.detail) {
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
        if matches_case {
            if case.file.is_none() {
                // Playwright: classname `calc.spec.js`, the frame `/…/web/tests/calc.spec.js`.
                case.file = Some(Arc::from(path));
            }
            case.line = Some(line);
            return;
        }
    }
    // No report-given file: the first project-looking relative location (`panicked at
    // src/lib.rs:26:9`, `fail_test.go:6:`); absolute ones are resolved against the checkout
    // by the caller (`locations`).
    if case.file.is_none()
        && let Some((path, line)) = locations(&case.detail)
            .into_iter()
            .find(|(p, _)| !p.starts_with('/'))
    {
        case.file = Some(Arc::from(path.as_str()));
        case.line = Some(line);
    }
}

/// Toolchain and dependency paths: never a project's location.
const FOREIGN: [&str; 5] = [
    "node_modules",
    "site-packages",
    "/rustc/",
    ".cargo/",
    "/usr/",
];

/// The `path:line` locations in a failure's text that may be the project's, stack frames first
/// (`at /…/calc.test.js:4:10`, `(FailingTest.java:32)`, `panicked at src/lib.rs:26:9`), then
/// the other mentions, each in text order.
pub fn locations(text: &str) -> Vec<(String, u32)> {
    mentions(text)
        .into_iter()
        .filter(|(p, _)| !FOREIGN.iter().any(|f| p.contains(f)))
        .map(|(p, l)| (p.to_string(), l))
        .collect()
}

/// Every `path:line` in `text`: stack frames first, then the rest.
fn mentions(text: &str) -> Vec<(&str, u32)> {
    let mut frames = Vec::new();
    let mut others = Vec::new();
    for m in location_regex().captures_iter(text) {
        let Ok(line) = m[2].parse::<u32>() else {
            continue;
        };
        let whole = m.get(0).expect("match");
        let before = text[..whole.start()].trim_end_matches([' ', '\t']);
        let frame = before.ends_with('(')
            || before.ends_with(" at")
            || before.ends_with("\tat")
            || before == "at"
            || before.ends_with("\nat");
        let found = (m.get(1).expect("group").as_str(), line);
        if frame {
            frames.push(found);
        } else {
            others.push(found);
        }
    }
    frames.extend(others);
    frames
}

fn basename(p: &str) -> &str {
    p.rsplit(['/', '\\']).next().unwrap_or(p)
}
