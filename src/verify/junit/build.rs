//! What a JUnit document means, whichever tokenizer reads it: suites, cases, their results.

use std::borrow::Cow;
use std::sync::Arc;

use super::super::xml::line_of;
use super::locate::finish_case;
use super::{CaseStatus, TestCase};

/// Of a longer failure text, its first and its last this many bytes are kept per test case
/// (the assertion at the top, the stack with the failing line at the bottom): the location is
/// read from both before the text is cut to its shown size (`text::head_tail`).
const DETAIL_HEAD: usize = 16 * 1024;
const DETAIL_TAIL: usize = 16 * 1024;

/// The attributes qa-loop reads (local names: `x:file` is `file`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Key {
    Name,
    Classname,
    Class,
    File,
    Time,
    Line,
    Message,
    Other,
}

impl Key {
    pub(super) fn of(local_name: &[u8]) -> Key {
        match local_name {
            b"name" => Key::Name,
            b"classname" => Key::Classname,
            b"class" => Key::Class,
            b"file" => Key::File,
            b"time" => Key::Time,
            b"line" => Key::Line,
            b"message" => Key::Message,
            _ => Key::Other,
        }
    }
}

struct Open {
    case: TestCase,
    /// Inside `<failure>`/`<error>`: collect its text.
    in_detail: bool,
    /// Failure text past `DETAIL_HEAD` (its last `DETAIL_TAIL` bytes kept) and how many bytes
    /// of it were dropped.
    tail: String,
    dropped: usize,
    /// `<flakyFailure>`/`<rerunFailure>` (nextest, Surefire): a retried test; not the result.
    in_rerun: u32,
}

impl Open {
    /// Adds failure text: to the head while it has room, else to the kept tail.
    fn push_detail(&mut self, text: &str) {
        let room = DETAIL_HEAD.saturating_sub(self.case.detail.len());
        let cut = floor_boundary(text, room.min(text.len()));
        self.case.detail.push_str(&text[..cut]);
        self.tail.push_str(&text[cut..]);
        if self.tail.len() > 2 * DETAIL_TAIL {
            let drop = floor_boundary(&self.tail, self.tail.len() - DETAIL_TAIL);
            self.dropped += drop;
            self.tail.drain(..drop);
        }
    }

    /// The failure text as head, a line saying what was dropped, and tail.
    fn join_tail(&mut self) {
        if self.tail.is_empty() {
            return;
        }
        let drop = floor_boundary(&self.tail, self.tail.len().saturating_sub(DETAIL_TAIL));
        self.dropped += drop;
        if self.dropped > 0 {
            let line = format!("\n[… {} bytes cut …]\n", self.dropped);
            self.case.detail.push_str(&line);
        }
        self.case.detail.push_str(&self.tail[drop..]);
        self.tail.clear();
        self.dropped = 0;
    }
}

/// The largest char boundary of `s` at or below `i`.
fn floor_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Builds the test cases from start tags, end tags and text, in document order.
pub(super) struct Builder<'t> {
    text: &'t str,
    suites: Vec<Arc<str>>,
    shared: Shared,
    outermost: Option<Arc<str>>,
    open: Option<Open>,
    cases: Vec<TestCase>,
    saw_root: bool,
}

impl<'t> Builder<'t> {
    pub(super) fn new(text: &'t str) -> Self {
        Builder {
            text,
            suites: Vec::new(),
            shared: Shared::new(),
            outermost: None,
            open: None,
            // Sized once: large reports would otherwise copy the records several times.
            cases: Vec::with_capacity(
                memchr::memmem::find_iter(text.as_bytes(), "<testcase").count(),
            ),
            saw_root: false,
        }
    }

    /// A start tag (an empty element is a start then an end); `pos` is the offset after it.
    pub(super) fn start<S: AsRef<str>>(
        &mut self,
        name: &str,
        attrs: &[(Key, S)],
        pos: usize,
    ) -> Result<(), String> {
        match name {
            "testsuites" => self.saw_root = true,
            "testsuite" => {
                self.saw_root = true;
                let n: Arc<str> = Arc::from(value(attrs, Key::Name).unwrap_or_default());
                self.outermost.get_or_insert_with(|| n.clone());
                self.shared.suite = n.clone();
                self.suites.push(n);
            }
            "testcase" => {
                let case = self.new_case(attrs, pos)?;
                self.open = Some(Open {
                    case,
                    in_detail: false,
                    tail: String::new(),
                    dropped: 0,
                    in_rerun: 0,
                });
            }
            other => {
                if let Some(o) = &mut self.open {
                    start_child(o, other, attrs);
                } else if !self.saw_root {
                    return Err(format!(
                        "line {}: not a JUnit report: the root element is <{other}>, expected <testsuites> or <testsuite>",
                        line_of(self.text, pos)
                    ));
                }
            }
        }
        Ok(())
    }

    pub(super) fn end(&mut self, name: &str) {
        match name {
            "testsuite" => {
                self.suites.pop();
                self.shared.suite = self
                    .suites
                    .last()
                    .cloned()
                    .unwrap_or_else(|| self.shared.empty.clone());
            }
            "testcase" => {
                if let Some(mut o) = self.open.take() {
                    o.join_tail();
                    self.cases.push(o.case);
                }
            }
            "failure" | "error" => {
                if let Some(o) = &mut self.open {
                    o.in_detail = false;
                    o.join_tail();
                }
            }
            other if is_rerun(other) => {
                if let Some(o) = &mut self.open {
                    o.in_rerun = o.in_rerun.saturating_sub(1);
                }
            }
            _ => {}
        }
    }

    /// Whether text at this point is kept (inside a result's `<failure>`/`<error>`).
    pub(super) fn wants_text(&self) -> bool {
        self.open
            .as_ref()
            .is_some_and(|o| o.in_detail && o.in_rerun == 0)
    }

    /// Decoded text (entities resolved, line ends normalized).
    pub(super) fn text(&mut self, text: &str) {
        if let Some(o) = &mut self.open
            && o.in_detail
            && o.in_rerun == 0
        {
            o.push_detail(text);
        }
    }

    pub(super) fn finish(mut self) -> Result<Vec<TestCase>, String> {
        if !self.saw_root {
            return Err(
                "line 1: not a JUnit report: no <testsuites> or <testsuite> element".into(),
            );
        }
        // pytest's xunit1 `line` attribute counts from 0.
        let zero_based_lines = self.outermost.as_deref() == Some("pytest");
        for case in &mut self.cases {
            if zero_based_lines || case.status != CaseStatus::Passed {
                finish_case(case, zero_based_lines);
            }
        }
        Ok(self.cases)
    }

    fn new_case<S: AsRef<str>>(
        &mut self,
        attrs: &[(Key, S)],
        pos: usize,
    ) -> Result<TestCase, String> {
        let shared = &mut self.shared;
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
            flaky: false,
            proves_fix: None,
        };
        let mut class = None;
        for (key, raw) in attrs {
            let raw = raw.as_ref();
            match key {
                Key::Name => case.name = decode(raw).into_owned(),
                Key::Classname => case.classname = Shared::reuse(&mut shared.class, raw),
                Key::Class => class = Some(Shared::reuse(&mut shared.class, raw)),
                Key::File if !raw.is_empty() => {
                    case.file = Some(Shared::reuse(&mut shared.file, raw))
                }
                Key::Time => case.time = raw.trim().parse().ok(),
                Key::Line => {
                    case.line = Some(raw.trim().parse::<u32>().map_err(|_| {
                        format!(
                            "line {}: <testcase line=\"{raw}\"> is not a line number",
                            line_of(self.text, pos),
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
}

fn value<S: AsRef<str>>(attrs: &[(Key, S)], key: Key) -> Option<String> {
    attrs
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, v)| decode(v.as_ref()).into_owned())
}

fn is_rerun(name: &str) -> bool {
    matches!(
        name,
        "flakyFailure" | "flakyError" | "rerunFailure" | "rerunError"
    )
}

fn start_child<S: AsRef<str>>(o: &mut Open, name: &str, attrs: &[(Key, S)]) {
    if is_rerun(name) {
        o.in_rerun += 1;
        // Surefire: a test that passed after failing attempts carries them as `flaky…`.
        o.case.flaky |= name.starts_with("flaky");
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
        o.case.message = crate::text::message(&value(attrs, Key::Message).unwrap_or_default());
        if status != CaseStatus::Skipped {
            o.case.detail.clear();
            o.in_detail = true;
        }
    }
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

/// Scans `key="value"` pairs (raw values) from `i`, up to the end of `text` or the first `/` or
/// `>` outside a value, and returns that offset: much cheaper than a generic attribute iterator
/// on reports with 100 000 cases. `None` for anything unusual (no quotes, stray text), which
/// sends the caller to quick-xml.
pub(super) fn scan_pairs<'a>(
    text: &'a str,
    mut i: usize,
    out: &mut Vec<(Key, &'a str)>,
) -> Option<usize> {
    out.clear();
    let b = text.as_bytes();
    loop {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        if i == b.len() || matches!(b[i], b'/' | b'>') {
            return Some(i);
        }
        // `key`, `=`, a quoted value (white space allowed around `=`).
        let key_start = i;
        let mut colon = None;
        while i < b.len() {
            match b[i] {
                b':' => colon = Some(i),
                b'=' | b'/' | b'>' | b'<' | b'"' | b'\'' | b'&' => break,
                c if c.is_ascii_whitespace() => break,
                _ => {}
            }
            i += 1;
        }
        if i == key_start {
            return None;
        }
        let local = &b[colon.map_or(key_start, |c| c + 1)..i];
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        if b.get(i) != Some(&b'=') {
            return None;
        }
        i += 1;
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        let q = match b.get(i) {
            Some(&q @ (b'"' | b'\'')) => q,
            _ => return None,
        };
        let start = i + 1;
        let len = memchr::memchr(q, &b[start..])?;
        let raw = &text[start..start + len];
        // Quotes are ASCII: both ends are character boundaries.
        out.push((Key::of(local), raw));
        i = start + len + 1;
        // XML wants white space between attributes.
        if i < b.len() && !b[i].is_ascii_whitespace() && !matches!(b[i], b'/' | b'>') {
            return None;
        }
    }
}

/// An attribute value as XML defines it: entities resolved, tabs and line breaks as spaces.
/// Borrowed when there is nothing to do (almost always).
pub(super) fn decode(raw: &str) -> Cow<'_, str> {
    if !raw
        .bytes()
        .any(|c| matches!(c, b'&' | b'\n' | b'\t' | b'\r'))
    {
        return Cow::Borrowed(raw);
    }
    // Line ends normalized, then literal white space becomes spaces; `&#10;` stays a line break.
    let spaced = raw.replace("\r\n", " ").replace(['\n', '\t', '\r'], " ");
    let value =
        quick_xml::escape::unescape(&spaced).map_or_else(|_| spaced.clone(), |v| v.into_owned());
    Cow::Owned(value)
}
