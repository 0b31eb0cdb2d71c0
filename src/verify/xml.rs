//! Small helpers shared by the XML readers (JUnit, Cobertura, JaCoCo): attribute lookup and
//! error positions.

use quick_xml::events::BytesStart;

/// An attribute's value by local name, normalized as XML defines it.
pub fn attr(e: &BytesStart<'_>, name: &str) -> Option<String> {
    e.attributes()
        .flatten()
        .find(|a| a.key.local_name().as_ref() == name)
        .and_then(|a| {
            a.normalized_value(quick_xml::XmlVersion::Implicit1_0)
                .ok()
                .map(|v| v.into_owned())
        })
}

/// The 1-based line of byte offset `pos` in `text`.
pub fn line_of(text: &str, pos: usize) -> usize {
    text.as_bytes()[..pos.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// `line N: invalid XML: …`
pub fn xml_error(text: &str, pos: usize, e: &dyn std::fmt::Display) -> String {
    format!("line {}: invalid XML: {e}", line_of(text, pos))
}
