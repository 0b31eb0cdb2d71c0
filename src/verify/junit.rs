//! JUnit XML ingestion (quick-xml; FACTS.md explains why not a JUnit crate): the files written by
//! pytest, jest-junit, vitest, cargo-nextest, Maven Surefire, go-junit-report and PHPUnit (nested
//! suites). Every `<testcase>` at any depth is one result; its location comes from the failure
//! text when that names the test's file (`tests/test_calc.py:25:`), else from `file`/`line`.

use std::sync::OnceLock;

use quick_xml::Reader;
use quick_xml::events::{BytesStart, Event};

use super::xml::{attr, line_of, xml_error};
use std::sync::Arc;

use regex::Regex;

pub use crate::model::{CaseStatus, TestCase, TestCounts as Counts};

/// Longest failure text kept per test case.
const DETAIL_MAX: usize = 4096;

struct Open {
    case: TestCase,
    /// Inside `<failure>`/`<error>`: collect its text.
    in_detail: bool,
    /// `<flakyFailure>`/`<rerunFailure>` (nextest, Surefire): a retried test; not the result.
    in_rerun: u32,
}

/// Parses a JUnit XML document. Errors name the line.
pub fn parse(text: &str) -> Result<Vec<TestCase>, String> {
    let mut reader = Reader::from_str(text);
    let mut suites: Vec<Arc<str>> = Vec::new();
    let mut shared = Shared::new();
    let mut outermost: Option<String> = None;
    let mut open: Option<Open> = None;
    let mut cases = Vec::new();
    let mut saw_root = false;
    loop {
        let event = reader
            .read_event()
            .map_err(|e| xml_error(text, reader.error_position() as usize, &e))?;
        match event {
            Event::Start(e) => {
                let name = e.local_name();
                match name.as_ref() {
                    "testsuites" => saw_root = true,
                    "testsuite" => {
                        saw_root = true;
                        let n: Arc<str> = Arc::from(attr(&e, "name").unwrap_or_default());
                        outermost.get_or_insert_with(|| n.to_string());
                        shared.suite = n.clone();
                        suites.push(n);
                    }
                    "testcase" => {
                        open = Some(Open {
                            case: new_case(&e, &mut shared, text, &reader)?,
                            in_detail: false,
                            in_rerun: 0,
                        });
                    }
                    other => {
                        if let Some(o) = &mut open {
                            start_child(o, other, &e);
                        } else if !saw_root {
                            return Err(format!(
                                "line {}: not a JUnit report: the root element is <{other}>, expected <testsuites> or <testsuite>",
                                line_of(text, reader.buffer_position() as usize)
                            ));
                        }
                    }
                }
            }
            Event::Empty(e) => {
                let name = e.local_name();
                match name.as_ref() {
                    "testcase" => cases.push(new_case(&e, &mut shared, text, &reader)?),
                    "testsuite" | "testsuites" => saw_root = true,
                    other => {
                        if let Some(o) = &mut open {
                            start_child(o, other, &e);
                            o.in_detail = false;
                            if is_rerun(other) {
                                o.in_rerun -= 1;
                            }
                        } else if !saw_root {
                            return Err(format!(
                                "line {}: not a JUnit report: the root element is <{other}>, expected <testsuites> or <testsuite>",
                                line_of(text, reader.buffer_position() as usize)
                            ));
                        }
                    }
                }
            }
            Event::End(e) => match e.local_name().as_ref() {
                "testsuite" => {
                    suites.pop();
                    shared.suite = suites
                        .last()
                        .cloned()
                        .unwrap_or_else(|| shared.empty.clone());
                }
                "testcase" => {
                    if let Some(o) = open.take() {
                        cases.push(o.case);
                    }
                }
                "failure" | "error" => {
                    if let Some(o) = &mut open {
                        o.in_detail = false;
                    }
                }
                other if is_rerun(other) => {
                    if let Some(o) = &mut open {
                        o.in_rerun = o.in_rerun.saturating_sub(1);
                    }
                }
                _ => {}
            },
            // Text matters only inside <failure>/<error> (whitespace between elements is skipped).
            Event::Text(t) if open.as_ref().is_some_and(|o| o.in_detail) => {
                push_detail(&mut open, &t.xml10_content())
            }
            Event::CData(t) if open.as_ref().is_some_and(|o| o.in_detail) => {
                push_detail(&mut open, &t.xml10_content())
            }
            Event::GeneralRef(r) if open.as_ref().is_some_and(|o| o.in_detail) => {
                let resolved = match r.resolve_char_ref() {
                    Ok(Some(c)) => c.to_string(),
                    _ => quick_xml::escape::resolve_xml_entity(&r)
                        .map_or_else(|| format!("&{};", &*r), str::to_string),
                };
                push_detail(&mut open, &resolved);
            }
            Event::Eof => break,
            _ => {}
        }
    }
    if !saw_root {
        return Err("line 1: not a JUnit report: no <testsuites> or <testsuite> element".into());
    }
    // pytest's xunit1 `line` attribute counts from 0.
    let zero_based_lines = outermost.as_deref() == Some("pytest");
    for case in &mut cases {
        finish_case(case, zero_based_lines);
    }
    Ok(cases)
}

fn is_rerun(name: &str) -> bool {
    matches!(
        name,
        "flakyFailure" | "flakyError" | "rerunFailure" | "rerunError"
    )
}

fn new_case(
    e: &BytesStart<'_>,
    shared: &mut Shared,
    text: &str,
    reader: &Reader<&[u8]>,
) -> Result<TestCase, String> {
    let mut case = TestCase {
        suite: shared.suite.clone(),
        classname: shared.empty.clone(),
        name: String::new(),
        status: CaseStatus::Passed,
        file: None,
        line: None,
        time: None,
        message: String::new(),
        detail: String::new(),
    };
    let mut class = None;
    // One pass over the attributes: this runs once per test case (100 000s in large reports).
    let mut pairs = Vec::with_capacity(8);
    let owned: Vec<(String, String)>;
    if !scan_attrs(e.attributes_raw(), &mut pairs) {
        // An unusual tag: quick-xml's own attribute parser decides.
        owned = e
            .attributes()
            .flatten()
            .map(|a| (a.key.local_name().as_ref().to_string(), a.value.to_string()))
            .collect();
        pairs = owned
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
    }
    for (key, raw) in pairs {
        match key {
            "name" => case.name = decode(raw).into_owned(),
            "classname" => case.classname = Shared::reuse(&mut shared.class, raw),
            "class" => class = Some(Shared::reuse(&mut shared.class, raw)),
            "file" if !raw.is_empty() => case.file = Some(Shared::reuse(&mut shared.file, raw)),
            "time" => case.time = raw.trim().parse().ok(),
            "line" => {
                case.line = Some(raw.trim().parse::<u32>().map_err(|_| {
                    format!(
                        "line {}: <testcase line=\"{raw}\"> is not a line number",
                        line_of(text, reader.buffer_position() as usize),
                    )
                })?)
            }
            _ => {}
        }
    }
    if case.classname.is_empty()
        && let Some(c) = class
    {
        case.classname = c;
    }
    Ok(case)
}

/// Strings repeated from case to case (suite, class, file), allocated once.
struct Shared {
    suite: Arc<str>,
    class: Arc<str>,
    file: Arc<str>,
    empty: Arc<str>,
}

impl Shared {
    fn new() -> Self {
        let empty: Arc<str> = Arc::from("");
        Shared {
            suite: empty.clone(),
            class: empty.clone(),
            file: empty.clone(),
            empty,
        }
    }

    /// The attribute's value, sharing `last` when it is the same text.
    fn reuse(last: &mut Arc<str>, raw: &str) -> Arc<str> {
        let value = decode(raw);
        if *value != **last {
            *last = Arc::from(value);
        }
        last.clone()
    }
}

/// The `key="value"` pairs of a start tag's attribute text (local names, raw values), scanned
/// directly: much cheaper than the generic attribute iterator on reports with 100 000 cases.
/// `false` for anything unusual (no quotes, stray text), and the caller uses quick-xml's parser.
fn scan_attrs<'a>(mut rest: &'a str, out: &mut Vec<(&'a str, &'a str)>) -> bool {
    out.clear();
    loop {
        rest = rest.trim_start();
        if rest.is_empty() || rest == "/" {
            return true;
        }
        let Some(eq) = rest.find('=') else {
            return false;
        };
        let key = rest[..eq].trim_end();
        if key.is_empty()
            || key.contains(|c: char| c.is_ascii_whitespace() || c == '"' || c == '\'')
        {
            return false;
        }
        let key = key.rsplit(':').next().unwrap_or(key);
        rest = rest[eq + 1..].trim_start();
        let quote = match rest.as_bytes().first() {
            Some(&q @ (b'"' | b'\'')) => q as char,
            _ => return false,
        };
        let Some(close) = rest[1..].find(quote) else {
            return false;
        };
        out.push((key, &rest[1..1 + close]));
        rest = &rest[close + 2..];
    }
}

/// An attribute value as XML defines it: entities resolved, tabs and line breaks as spaces.
/// Borrowed when there is nothing to do (almost always).
fn decode(raw: &str) -> std::borrow::Cow<'_, str> {
    if !raw.contains(['&', '\n', '\t', '\r']) {
        return std::borrow::Cow::Borrowed(raw);
    }
    // Literal line breaks and tabs become spaces first; `&#10;` stays a line break.
    let spaced = raw.replace(['\n', '\t', '\r'], " ");
    let value =
        quick_xml::escape::unescape(&spaced).map_or_else(|_| spaced.clone(), |v| v.into_owned());
    std::borrow::Cow::Owned(value)
}

fn start_child(o: &mut Open, name: &str, e: &BytesStart<'_>) {
    if is_rerun(name) {
        o.in_rerun += 1;
        return;
    }
    if o.in_rerun > 0 {
        return;
    }
    let status = match name {
        "failure" => CaseStatus::Failed,
        "error" => CaseStatus::Errored,
        "skipped" => CaseStatus::Skipped,
        _ => return,
    };
    // A failure outranks an error, an error a skip (a case carrying several keeps the worst).
    let rank = |s: CaseStatus| match s {
        CaseStatus::Passed => 0,
        CaseStatus::Skipped => 1,
        CaseStatus::Errored => 2,
        CaseStatus::Failed => 3,
    };
    if rank(status) > rank(o.case.status) {
        o.case.status = status;
        o.case.message = attr(e, "message").unwrap_or_default();
        if status != CaseStatus::Skipped {
            o.case.detail.clear();
            o.in_detail = true;
        }
    }
}

fn push_detail(open: &mut Option<Open>, text: &str) {
    if let Some(o) = open
        && o.in_detail
        && o.in_rerun == 0
    {
        let room = DETAIL_MAX.saturating_sub(o.case.detail.len());
        if room > 0 {
            let mut cut = room.min(text.len());
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            o.case.detail.push_str(&text[..cut]);
        }
    }
}

fn location_regex() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"([A-Za-z0-9_.@/\\-]*[A-Za-z0-9_-]\.[A-Za-z0-9]{1,6}):(\d+)")
            .expect("valid regex")
    })
}

fn finish_case(case: &mut TestCase, zero_based_lines: bool) {
    if zero_based_lines && let Some(l) = &mut case.line {
        *l += 1;
    }
    if case.message.is_empty() {
        case.message = case
            .detail
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or_default()
            .chars()
            .take(300)
            .collect();
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

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> Vec<TestCase> {
        let path = format!("tests/fixtures/junit/{name}");
        let text = std::fs::read_to_string(&path).unwrap();
        parse(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    fn counts(cases: &[TestCase]) -> (u64, u64, u64, u64, u64) {
        let c = Counts::of(cases);
        (c.tests, c.passed, c.failed, c.errored, c.skipped)
    }

    fn bad(cases: &[TestCase]) -> Vec<(String, CaseStatus, Option<String>, Option<u32>)> {
        cases
            .iter()
            .filter(|c| matches!(c.status, CaseStatus::Failed | CaseStatus::Errored))
            .map(|c| {
                (
                    c.full_name(),
                    c.status,
                    c.file.as_deref().map(str::to_string),
                    c.line,
                )
            })
            .collect()
    }

    use CaseStatus::{Errored as E, Failed as F};

    fn s(x: &str) -> Option<String> {
        Some(x.to_string())
    }

    #[test]
    fn pytest_xunit1_and_xunit2() {
        let want = vec![
            (
                "tests.test_calc::test_string_special_chars".to_string(),
                F,
                s("tests/test_calc.py"),
                Some(25),
            ),
            (
                "tests.test_calc::test_numbers_fail".to_string(),
                F,
                s("tests/test_calc.py"),
                Some(29),
            ),
            (
                "tests.test_calc::test_unexpected_exception".to_string(),
                F,
                s("tests/test_calc.py"),
                Some(33),
            ),
            // The fixture's own file and line: conftest-less, the fixture lives in the test file.
            (
                "tests.test_calc::test_fixture_error".to_string(),
                E,
                s("tests/test_calc.py"),
                Some(8),
            ),
        ];
        for name in ["pytest-9.2.0-xunit1.xml", "pytest-9.2.0-xunit2.xml"] {
            let cases = fixture(name);
            assert_eq!(counts(&cases), (8, 3, 3, 1, 1), "{name}");
            // xunit2 has no file attribute: the location comes from the text and the class.
            assert_eq!(bad(&cases), want, "{name}");
            let special = cases
                .iter()
                .find(|c| c.name == "test_string_special_chars")
                .unwrap();
            assert!(
                special
                    .message
                    .starts_with("assert 'a < b & c' == 'x \"quoted\"'\n"),
                "entities and &#10; decoded: {:?}",
                special.message
            );
            assert!(special.detail.contains("E       assert 'a < b & c'"));
        }
        // Passing cases keep the (1-based) definition line.
        let add = fixture("pytest-9.2.0-xunit1.xml")
            .into_iter()
            .find(|c| c.name == "test_add")
            .unwrap();
        assert_eq!(add.line, Some(11));
    }

    #[test]
    fn jest_junit_with_and_without_the_file_attribute() {
        for name in ["jest-junit-17.0.0.xml", "jest-junit-17.0.0-default.xml"] {
            let cases = fixture(name);
            // The `test.todo` is a testcase with no child: counted as passed (jest-junit leaves it
            // out of its own `tests` attribute).
            assert_eq!(counts(&cases), (7, 4, 2, 0, 1), "{name}");
            let got = bad(&cases);
            let names: Vec<_> = got.iter().map(|g| g.0.as_str()).collect();
            assert_eq!(
                names,
                ["sum fails on wrong sum", "product fails with special chars"],
                "{name}"
            );
            if name == "jest-junit-17.0.0.xml" {
                assert_eq!(got[0].2.as_deref(), Some("sum.test.js"));
                assert_eq!(got[0].3, Some(13));
                assert_eq!(got[1].3, Some(27));
            }
        }
    }

    #[test]
    fn vitest() {
        let cases = fixture("vitest-4.1.12.xml");
        assert_eq!(counts(&cases), (7, 3, 2, 0, 2));
        assert_eq!(
            bad(&cases),
            vec![
                (
                    "sum.test.js::sum > fails on wrong sum".to_string(),
                    F,
                    s("sum.test.js"),
                    Some(14)
                ),
                (
                    "sum.test.js::product > fails with special chars".to_string(),
                    F,
                    s("sum.test.js"),
                    Some(28)
                ),
            ]
        );
        let special = cases
            .iter()
            .find(|c| c.name == "product > fails with special chars")
            .unwrap();
        assert_eq!(
            special.message,
            "expected 'a < b' to be 'x' // Object.is equality"
        );
    }

    #[test]
    fn phpunit_nested_suites() {
        let cases = fixture("phpunit-9.6.7.xml");
        assert_eq!(counts(&cases), (8, 5, 1, 1, 1));
        let got = bad(&cases);
        assert_eq!(got.len(), 2);
        assert_eq!(
            got[0].0,
            "Demo.Tests.CalculatorTest::testComparesEqualNumbers"
        );
        assert_eq!(got[0].1, F);
        assert!(
            got[0]
                .2
                .as_deref()
                .unwrap()
                .ends_with("tests/CalculatorTest.php")
        );
        assert_eq!(got[1].0, "Demo.Tests.ParserTest::testRejectsScalar");
        assert_eq!(got[1].1, E);
        assert!(
            got[1]
                .2
                .as_deref()
                .unwrap()
                .ends_with("tests/ParserTest.php")
        );
        // The innermost suite is the class (or the data provider's suite).
        assert!(cases.iter().all(|c| c.suite.starts_with("Demo\\Tests\\")));
    }

    #[test]
    fn cargo_nextest_with_retries() {
        let cases = fixture("nextest-0.9.143.xml");
        // The flaky test passed on retry (`<flakyFailure>`); `<rerunFailure>` repeats a failure.
        assert_eq!(counts(&cases), (5, 3, 2, 0, 0));
        assert_eq!(
            bad(&cases),
            vec![
                (
                    "shop::tests::discount_is_applied".to_string(),
                    F,
                    s("src/lib.rs"),
                    Some(26)
                ),
                (
                    "shop::tests::discount_overflows".to_string(),
                    F,
                    s("src/lib.rs"),
                    Some(33)
                ),
            ]
        );
        let first = &cases[0];
        assert!(
            first.detail.contains("discount <10%> & rounding"),
            "{}",
            first.detail
        );
        assert!(
            !first.detail.contains("(3705)"),
            "rerun text is not appended"
        );
    }

    #[test]
    fn go_junit_report() {
        let cases = fixture("go-junit-report-4d05b2d.xml");
        assert_eq!(counts(&cases), (5, 2, 1, 0, 2));
        assert_eq!(
            bad(&cases),
            vec![(
                "package/fail::TestOne".to_string(),
                F,
                s("fail_test.go"),
                Some(6)
            )]
        );
        let cases = fixture("go-junit-report-9bc291d-build-error.xml");
        assert_eq!(counts(&cases), (5, 2, 0, 3, 0));
        let names: Vec<_> = bad(&cases).into_iter().map(|b| b.0).collect();
        assert_eq!(
            names,
            [
                "package/name/failing1::[build failed]",
                "package/name/failing2::[build failed]",
                "package/name/setupfailing1::[setup failed]"
            ]
        );
    }

    #[test]
    fn surefire() {
        let cases = fixture("surefire-2.13-SNAPSHOT.xml");
        assert_eq!(counts(&cases), (2, 0, 2, 0, 0));
        let got = bad(&cases);
        assert_eq!(
            got.iter().map(|g| g.0.as_str()).collect::<Vec<_>>(),
            [
                "org.apache.maven.surefire.test.FailingTest::defaultTestValueIs_Value",
                "org.apache.maven.surefire.test.FailingTest::setTestAndRetrieveValue"
            ]
        );
        // From the stack trace: `at …FailingTest.setTestAndRetrieveValue(FailingTest.java:NN)`.
        assert!(
            got.iter()
                .all(|g| g.2.as_deref() == Some("FailingTest.java") && g.3.is_some()),
            "{got:?}"
        );
        let cases = fixture("surefire-14e8e1a-error.xml");
        assert_eq!(counts(&cases), (1, 0, 0, 1, 0));
        assert_eq!(bad(&cases)[0].0, "surefire.MyTest::test");
        let cases = fixture("surefire-2.22.2-skipped.xml");
        assert_eq!(counts(&cases), (5, 2, 2, 0, 1));
        let names: Vec<_> = bad(&cases).into_iter().map(|b| b.0).collect();
        assert!(
            names.iter().any(|n| n.ends_with("::require_fail")),
            "{names:?}"
        );
        assert!(names.iter().any(|n| n.ends_with("::require")), "{names:?}");
    }

    #[test]
    fn attribute_scanning_matches_xml_rules_and_falls_back_on_unusual_tags() {
        let xml = "<testsuite name='s'>\
            <testcase name=\"a &amp; b&#10;c\" classname = 'k.C' x:file=\"f.py\" line=\"3\" time=\"0.5\"/>\
            <testcase name=\"tab\there\" classname=\"k.C\"/>\
            <testcase classname=\"k.D\" name=\"gt > inside\" />\
            </testsuite>";
        let cases = parse(xml).unwrap();
        assert_eq!(cases[0].name, "a & b\nc");
        assert_eq!(&*cases[0].classname, "k.C");
        assert_eq!(cases[0].file.as_deref(), Some("f.py"));
        assert_eq!((cases[0].line, cases[0].time), (Some(3), Some(0.5)));
        assert_eq!(cases[1].name, "tab here");
        assert!(std::sync::Arc::ptr_eq(
            &cases[0].classname,
            &cases[1].classname
        ));
        assert_eq!(
            (cases[2].name.as_str(), &*cases[2].classname),
            ("gt > inside", "k.D")
        );
        let mut pairs = Vec::new();
        assert!(!scan_attrs("name=unquoted", &mut pairs));
        assert!(!scan_attrs("name=\"open", &mut pairs));
        assert!(scan_attrs(" a='1'  b=\"2\" /", &mut pairs));
        assert_eq!(pairs, [("a", "1"), ("b", "2")]);
    }

    #[test]
    fn flaky_reruns_do_not_change_the_result_and_bad_input_names_the_line() {
        let xml = r#"<testsuite name="s"><testcase name="t" classname="c">
            <flakyFailure message="first try failed"><stackTrace>boom</stackTrace></flakyFailure>
            </testcase><testcase name="u" classname="c"><failure message="m">a &amp; b</failure><skipped/></testcase></testsuite>"#;
        let cases = parse(xml).unwrap();
        assert_eq!(cases[0].status, CaseStatus::Passed);
        assert_eq!(cases[1].status, CaseStatus::Failed);
        assert_eq!(cases[1].detail, "a & b");
        let e = parse("<testsuites>\n<testsuite>\n<testcase name='a'>\n</testsuite>").unwrap_err();
        assert!(e.starts_with("line 4: invalid XML"), "{e}");
        let e = parse("<coverage/>").unwrap_err();
        assert!(e.contains("not a JUnit report"), "{e}");
        let e = parse("<testsuite>\n<testcase name='a' line='x'/></testsuite>").unwrap_err();
        assert!(e.starts_with("line 2:"), "{e}");
        assert!(parse("<testsuites/>").unwrap().is_empty());
    }
}
