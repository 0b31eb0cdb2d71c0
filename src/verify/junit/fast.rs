//! A direct scanner for the plain XML that test tools write: elements, quoted attributes, text
//! with the predefined and numeric entities, CDATA, comments and processing instructions. It
//! gives up (`None`) on anything else — a DOCTYPE, an unknown entity, a mismatched end tag, a
//! semantic error — and quick-xml then reads the document and names the problem.

use std::borrow::Cow;

use super::TestCase;
use super::build::{Builder, scan_pairs};

pub(super) fn parse(text: &str) -> Option<Vec<TestCase>> {
    let b = text.as_bytes();
    let mut builder = Builder::new(text);
    let mut stack: Vec<&str> = Vec::new();
    let mut attrs = Vec::with_capacity(8);
    let mut i = if text.starts_with('\u{feff}') { 3 } else { 0 };
    loop {
        let Some(lt) = memchr::memchr(b'<', &b[i..]).map(|n| i + n) else {
            // Only white space may follow the root.
            return (stack.is_empty() && text[i..].trim().is_empty())
                .then(|| builder.finish().ok())
                .flatten();
        };
        if lt > i {
            let raw = &text[i..lt];
            if builder.wants_text() {
                builder.text(&content(raw)?);
            } else if memchr::memchr(b'&', raw.as_bytes()).is_some() {
                // Unread, but a bad reference is still an error quick-xml should name.
                content(raw)?;
            }
        }
        let rest = &b[lt + 1..];
        match rest.first()? {
            b'/' => {
                let gt = lt + 1 + memchr::memchr(b'>', rest)?;
                let name = text[lt + 2..gt].trim_end();
                if stack.pop()? != name {
                    return None;
                }
                builder.end(local(name));
                i = gt + 1;
            }
            b'?' => i = lt + 2 + memchr::memmem::find(&rest[1..], b"?>")? + 2,
            b'!' if rest.starts_with(b"!--") => {
                i = lt + 4 + memchr::memmem::find(&rest[3..], b"-->")? + 3
            }
            b'!' if rest.starts_with(b"![CDATA[") => {
                let start = lt + 9;
                let end = start + memchr::memmem::find(&b[start..], b"]]>")?;
                if builder.wants_text() {
                    builder.text(&line_ends(&text[start..end]));
                }
                i = end + 3;
            }
            b'!' => return None,
            _ => {
                let name_len = rest
                    .iter()
                    .position(|c| c.is_ascii_whitespace() || matches!(c, b'/' | b'>'))?;
                let name = &text[lt + 1..lt + 1 + name_len];
                if name.is_empty() || name.contains(['<', '"', '\'', '=', '&']) {
                    return None;
                }
                let end = scan_pairs(text, lt + 1 + name_len, &mut attrs)?;
                let empty = match b.get(end..end + 2)? {
                    [b'/', b'>'] => true,
                    [b'>', _] => false,
                    _ => return None,
                };
                i = end + if empty { 2 } else { 1 };
                builder.start(local(name), &attrs, i).ok()?;
                if empty {
                    builder.end(local(name));
                } else {
                    stack.push(name);
                }
            }
        }
    }
}

fn local(name: &str) -> &str {
    match name.bytes().rposition(|c| c == b':') {
        Some(colon) => &name[colon + 1..],
        None => name,
    }
}

/// Element text with its entities resolved and line ends normalized (`None` for an entity
/// quick-xml should judge).
fn content(raw: &str) -> Option<Cow<'_, str>> {
    let text = if raw.contains('&') {
        Cow::Owned(quick_xml::escape::unescape(raw).ok()?.into_owned())
    } else {
        Cow::Borrowed(raw)
    };
    Some(match text {
        Cow::Borrowed(t) => line_ends(t),
        Cow::Owned(t) => Cow::Owned(line_ends(&t).into_owned()),
    })
}

/// XML's end-of-line handling: `\r\n` and `\r` become `\n`.
fn line_ends(t: &str) -> Cow<'_, str> {
    if t.contains('\r') {
        Cow::Owned(t.replace("\r\n", "\n").replace('\r', "\n"))
    } else {
        Cow::Borrowed(t)
    }
}
