//! JUnit XML ingestion (quick-xml; FACTS.md explains why not a JUnit crate): the files written by
//! pytest, jest-junit, vitest, cargo-nextest, Maven Surefire, go-junit-report and PHPUnit (nested
//! suites). Every `<testcase>` at any depth is a result, and the repeats of one test in a report
//! (re-runs) are one (`attempts`); its location comes from the failure text when that names the
//! test's file (`tests/test_calc.py:25:`), else from `file`/`line`.

use quick_xml::Reader;
use quick_xml::events::{BytesStart, Event};

use super::xml::xml_error;
use build::{Builder, Key, scan_pairs};

pub use crate::model::{CaseStatus, TestCase, TestCounts as Counts};

mod attempts;
mod build;
mod fast;
mod locate;
pub use locate::locations;

/// Parses a JUnit XML document into one case per test (re-runs joined). Errors name the line.
///
/// Two tokenizers feed one [`Builder`]: a direct scanner for the plain XML that test tools write
/// (it is several times faster on reports with 100 000 cases), and quick-xml for everything else —
/// a DOCTYPE, an unusual attribute, a malformed document. Errors always come from quick-xml.
pub fn parse(text: &str) -> Result<Vec<TestCase>, String> {
    let cases = match fast::parse(text) {
        Some(cases) => cases,
        None => parse_with_quick_xml(text)?,
    };
    Ok(attempts::one_per_test(cases))
}

fn parse_with_quick_xml(text: &str) -> Result<Vec<TestCase>, String> {
    let mut reader = Reader::from_str(text);
    let mut b = Builder::new(text);
    let mut attrs = Vec::with_capacity(8);
    loop {
        let event = reader
            .read_event()
            .map_err(|e| xml_error(text, reader.error_position() as usize, &e))?;
        let pos = reader.buffer_position() as usize;
        match event {
            Event::Start(e) => {
                read_attrs(&e, &mut attrs);
                b.start(&local(&e), &attrs, pos)?;
            }
            Event::Empty(e) => {
                read_attrs(&e, &mut attrs);
                let name = local(&e);
                b.start(&name, &attrs, pos)?;
                b.end(&name);
            }
            Event::End(e) => b.end(e.local_name().as_ref()),
            // Text matters only inside <failure>/<error> (whitespace between elements is skipped).
            Event::Text(t) if b.wants_text() => b.text(&t.xml10_content()),
            Event::CData(t) if b.wants_text() => b.text(&t.xml10_content()),
            Event::GeneralRef(r) if b.wants_text() => {
                let resolved = match r.resolve_char_ref() {
                    Ok(Some(c)) => c.to_string(),
                    _ => quick_xml::escape::resolve_xml_entity(&r)
                        .map_or_else(|| format!("&{};", &*r), str::to_string),
                };
                b.text(&resolved);
            }
            Event::Eof => break,
            _ => {}
        }
    }
    b.finish()
}

fn local(e: &BytesStart<'_>) -> String {
    e.local_name().as_ref().to_string()
}

/// A start tag's attributes: the direct scan, or quick-xml's parser for anything unusual.
fn read_attrs(e: &BytesStart<'_>, out: &mut Vec<(Key, String)>) {
    out.clear();
    let raw = e.attributes_raw();
    let mut pairs = Vec::new();
    match scan_pairs(raw, 0, &mut pairs) {
        Some(end) if raw[end..].trim() == "/" || end == raw.len() => {
            out.extend(pairs.into_iter().map(|(k, v)| (k, v.to_string())));
        }
        _ => out.extend(e.attributes().flatten().map(|a| {
            (
                Key::of(a.key.local_name().as_ref().as_bytes()),
                a.value.into_owned(),
            )
        })),
    }
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
        assert_eq!(scan_pairs("name=unquoted", 0, &mut pairs), None);
        assert_eq!(scan_pairs("name=\"open", 0, &mut pairs), None);
        assert_eq!(scan_pairs("name=\"a\"line=\"2\"", 0, &mut pairs), None);
        assert_eq!(scan_pairs("stray name=\"a\"", 0, &mut pairs), None);
        assert_eq!(scan_pairs("name=>", 0, &mut pairs), None);
        let tag = " name='1'  x:line=\"2\" time = \"3\" other=\"\" />";
        assert_eq!(scan_pairs(tag, 0, &mut pairs), Some(tag.len() - 2));
        assert_eq!(
            pairs,
            [
                (Key::Name, "1"),
                (Key::Line, "2"),
                (Key::Time, "3"),
                (Key::Other, "")
            ]
        );
    }

    /// The direct scanner and quick-xml give the same cases on every real report, and the
    /// scanner hands over to quick-xml on whatever it does not read itself.
    #[test]
    fn both_tokenizers_agree_and_the_scanner_hands_unusual_documents_over() {
        let mut n = 0;
        for entry in std::fs::read_dir("tests/fixtures/junit").unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "xml") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let fast = fast::parse(&text).unwrap_or_else(|| panic!("{path:?}: scanner gave up"));
            assert_eq!(fast, parse_with_quick_xml(&text).unwrap(), "{path:?}");
            n += 1;
        }
        assert!(n >= 12, "{n} fixtures");
        let same = [
            "\u{feff}<?xml version='1.0'?><!-- c --><testsuite name='s'>\r\n<testcase name='a' classname='C'>\
             <failure message='m &amp; n'>x &lt; 1\r\n&#65;<![CDATA[<raw> & ]]><!-- no --></failure>\
             <system-out>ignored &amp;</system-out></testcase><x:testcase x:name='b'/></testsuite>\n",
            "<testsuites><testsuite name='outer'><testsuite name='inner'><testcase name='a'/></testsuite>\
             <testcase name='b'><skipped message='later'/></testcase></testsuite></testsuites>",
        ];
        for doc in same {
            let fast = fast::parse(doc).unwrap_or_else(|| panic!("scanner gave up on {doc}"));
            assert_eq!(fast, parse_with_quick_xml(doc).unwrap(), "{doc}");
        }
        let cases = fast::parse(same[0]).unwrap();
        assert_eq!(cases[0].detail, "x < 1\nA<raw> & ");
        assert_eq!(cases[0].message, "m & n");
        assert_eq!(cases[1].name, "b");
        let handed_over = [
            "<!DOCTYPE t [<!ENTITY e 'x'>]><testsuite><testcase name='a'/></testsuite>",
            "<testsuite><testcase name='a'><failure>&custom;</failure></testcase></testsuite>",
            "<testsuite><testcase name='a'></testsuite>",
            "<testsuite><testcase name=a/></testsuite>",
            "<testsuite><testcase name='a' line='x'/></testsuite>",
            "<testsuite/>trailing",
            "<coverage/>",
            "",
        ];
        for doc in handed_over {
            assert_eq!(fast::parse(doc), None, "{doc}");
        }
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

#[cfg(test)]
mod properties {
    use super::*;
    use proptest::prelude::*;

    /// Pieces of JUnit-looking XML, well-formed or not, to assemble at random.
    fn piece() -> impl Strategy<Value = String> {
        let value = prop::sample::select(vec![
            "a",
            "",
            "x &amp; y",
            "&#10;",
            "line\nbreak",
            "tab\t",
            ">",
            "'",
            "&bad;",
            "tests/t.py",
            "12",
            " 3 ",
            "0.5",
            "pytest",
            "k.C",
            "&lt;&gt;",
            "<",
        ]);
        let key = prop::sample::select(vec![
            "name",
            "classname",
            "class",
            "file",
            "line",
            "time",
            "message",
            "x:file",
            "other",
        ]);
        let attr = (key, value, prop::bool::ANY).prop_map(|(k, v, single)| {
            if single {
                format!(" {k}='{}'", v.replace('\'', "&apos;"))
            } else {
                format!(" {k} = \"{v}\"")
            }
        });
        let tag = prop::sample::select(vec![
            "testsuites",
            "testsuite",
            "testcase",
            "failure",
            "error",
            "skipped",
            "system-out",
            "flakyFailure",
            "properties",
            "property",
            "x:testcase",
        ]);
        prop_oneof![
            (
                tag.clone(),
                prop::collection::vec(attr, 0..4),
                prop::bool::ANY
            )
                .prop_map(|(t, attrs, empty)| format!(
                    "<{t}{}{}>",
                    attrs.concat(),
                    if empty { "/" } else { "" }
                )),
            tag.prop_map(|t| format!("</{t}>")),
            prop::sample::select(vec![
                "text",
                " ",
                "\n",
                "\r\n",
                "a &amp; b",
                "&#x41;",
                "&nope;",
                "x < y",
                "]]>",
                "<![CDATA[ <b> & ]]>",
                "<!-- c -->",
                "<?pi x?>",
                "<!DOCTYPE x>",
                "&",
                "\"",
                ">",
                "<",
                "<a b=1>",
                "\u{feff}",
                "é",
            ])
            .prop_map(str::to_string),
        ]
    }

    /// Balanced documents: a piece that is an end tag closes whatever is open instead.
    fn balanced(pieces: &[String]) -> String {
        let mut doc = String::from("<testsuites>");
        let mut open: Vec<String> = Vec::new();
        for p in pieces {
            if p.starts_with("</") {
                if let Some(t) = open.pop() {
                    doc.push_str(&format!("</{t}>"));
                }
            } else {
                doc.push_str(p);
                if p.starts_with('<')
                    && !p.starts_with("<!")
                    && !p.starts_with("<?")
                    && !p.ends_with("/>")
                    && p.ends_with('>')
                {
                    let name: String = p[1..]
                        .chars()
                        .take_while(|c| !c.is_whitespace() && *c != '>' && *c != '/')
                        .collect();
                    open.push(name);
                }
            }
        }
        while let Some(t) = open.pop() {
            doc.push_str(&format!("</{t}>"));
        }
        doc + "</testsuites>"
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

        /// On balanced documents the scanner mostly reads them itself, and agrees.
        #[test]
        fn the_scanner_agrees_on_balanced_documents(pieces in prop::collection::vec(piece(), 0..30)) {
            let doc = balanced(&pieces);
            let slow = parse_with_quick_xml(&doc);
            if let Some(fast) = fast::parse(&doc) {
                prop_assert_eq!(Ok(fast), slow, "{}", doc);
            }
        }

        /// Whatever the scanner accepts, quick-xml reads identically; nothing panics.
        #[test]
        fn the_scanner_never_disagrees_with_quick_xml(pieces in prop::collection::vec(piece(), 0..24)) {
            let doc = pieces.concat();
            let slow = parse_with_quick_xml(&doc);
            if let Some(fast) = fast::parse(&doc) {
                prop_assert_eq!(Ok(fast), slow, "{}", doc);
            }
            let _ = parse(&doc);
        }

        #[test]
        fn arbitrary_text_never_panics(doc in ".{0,200}") {
            let _ = parse(&doc);
        }
    }
}
