//! Cutting text to a number of characters (never inside one), shared by the providers' and
//! GitHub's error excerpts, check-run titles and the cross-run state; percent-encoding for URLs
//! (GitHub paths, and the form in which secrets are also redacted).

/// The first `max` characters of `s` (all of `s` when it is shorter).
pub fn prefix(s: &str, max: usize) -> &str {
    match s.char_indices().nth(max) {
        Some((cut, _)) => &s[..cut],
        None => s,
    }
}

/// `s` cut to `max` characters, ending with `…` when it was cut.
pub fn clip(s: &str, max: usize) -> String {
    let p = prefix(s, max);
    if p.len() < s.len() {
        format!("{p}…")
    } else {
        p.to_string()
    }
}

/// Percent-encodes a path segment or query value (RFC 3986 unreserved characters kept).
pub fn percent_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_count_characters() {
        assert_eq!(prefix("héllo", 2), "hé");
        assert_eq!(prefix("hé", 5), "hé");
        assert_eq!(clip("héllo", 2), "hé…");
        assert_eq!(clip("hé", 2), "hé");
    }
}
