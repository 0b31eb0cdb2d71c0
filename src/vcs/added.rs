//! What a unified diff adds, read a line at a time: the added line numbers per file (each
//! added line handed to a visitor as it is read, never kept), and where a hunk's text is (a
//! hunk's `+++ x` line is text, not a header).

/// Lines the change adds, per file (repository-relative path → its added lines).
pub type AddedLines = std::collections::BTreeMap<String, AddedFile>;

/// The line numbers a change adds to one file, ascending (the texts are handed to a visitor as
/// the diff is read, never kept: a change of a million lines costs 4 MB here).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AddedFile {
    lines: Vec<u32>,
}

impl AddedFile {
    pub fn push(&mut self, number: u32) {
        self.lines.push(number);
    }

    /// The added line numbers, ascending.
    pub fn numbers(&self) -> impl Iterator<Item = u32> + '_ {
        self.lines.iter().copied()
    }

    /// Whether line `n` is added.
    pub fn contains(&self, n: u32) -> bool {
        self.lines.binary_search(&n).is_ok()
    }

    /// Whether an added line is within `distance` lines of `n`.
    pub fn near(&self, n: u32, distance: u32) -> bool {
        let from = self
            .lines
            .partition_point(|k| *k < n.saturating_sub(distance));
        self.lines
            .get(from)
            .is_some_and(|k| *k <= n.saturating_add(distance))
    }

    pub fn len(&self) -> usize {
        self.lines.len()
    }

    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }
}

impl From<Vec<(u32, String)>> for AddedFile {
    fn from(lines: Vec<(u32, String)>) -> Self {
        AddedFile {
            lines: lines.into_iter().map(|(n, _)| n).collect(),
        }
    }
}

/// Parses `git diff --unified=0` output into added lines per file, handing each added line to
/// `visit` (`path`, line number, text).
pub fn parse_added_lines(diff: &str, mut visit: impl FnMut(&str, u32, &str)) -> AddedLines {
    let mut parser = AddedParser::new(&mut visit);
    for line in diff.lines() {
        parser.line(line);
    }
    parser.finish()
}

/// [`parse_added_lines`] a line at a time.
pub(super) struct AddedParser<'v, V: FnMut(&str, u32, &str) + ?Sized> {
    out: AddedLines,
    /// The file being read and its lines so far.
    file: Option<(String, AddedFile)>,
    next: u32,
    hunk: Hunk,
    visit: &'v mut V,
}

/// Where a line of a unified diff is: in a hunk (its old and new lines still to come) or in
/// the headers. A hunk's `+++ x` or `--- x` line is text, never mistaken for a file header.
#[derive(Debug, Default)]
pub(super) struct Hunk {
    old: u32,
    new: u32,
}

impl Hunk {
    /// Takes `line` into account; whether it was a line of a hunk's text.
    pub(super) fn text(&mut self, line: &str) -> bool {
        if self.old == 0 && self.new == 0 {
            if let Some(h) = line.strip_prefix("@@ ") {
                let count = |sign: char| {
                    h.split_whitespace()
                        .find_map(|p| p.strip_prefix(sign))
                        .map_or(0, |p| {
                            p.split_once(',').map_or(1, |(_, n)| n.parse().unwrap_or(0))
                        })
                };
                (self.old, self.new) = (count('-'), count('+'));
            }
            return false;
        }
        match line.as_bytes().first() {
            Some(b'+') => self.new = self.new.saturating_sub(1),
            Some(b'-') => self.old = self.old.saturating_sub(1),
            Some(b'\\') => {}
            // Context (an empty context line may come without its space).
            _ => {
                self.old = self.old.saturating_sub(1);
                self.new = self.new.saturating_sub(1);
            }
        }
        true
    }
}

impl<'v, V: FnMut(&str, u32, &str) + ?Sized> AddedParser<'v, V> {
    pub(super) fn new(visit: &'v mut V) -> Self {
        AddedParser {
            out: AddedLines::new(),
            file: None,
            next: 0,
            hunk: Hunk::default(),
            visit,
        }
    }

    pub(super) fn line(&mut self, line: &str) {
        if self.hunk.text(line) {
            match line.as_bytes().first() {
                Some(b'+') => {
                    if let Some((path, lines)) = &mut self.file {
                        lines.push(self.next);
                        (self.visit)(path, self.next, &line[1..]);
                    }
                    self.next += 1;
                }
                Some(b'-' | b'\\') => {}
                _ => self.next += 1,
            }
            return;
        }
        if let Some(rest) = line.strip_prefix("+++ ") {
            self.close();
            if let Some(path) = side_path(rest) {
                let lines = self.out.remove(&path).unwrap_or_default();
                self.file = Some((path, lines));
            }
        } else if line.starts_with("--- ") || line.starts_with("diff --git ") {
            if line.starts_with("diff --git ") {
                self.close();
            }
        } else if let Some(hunk) = line.strip_prefix("@@ ") {
            // `@@ -a,b +c,d @@`: added lines start at c.
            self.next = hunk
                .split_whitespace()
                .find_map(|p| p.strip_prefix('+'))
                .and_then(|p| p.split(',').next())
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
        }
    }

    fn close(&mut self) {
        if let Some((path, lines)) = self.file.take()
            && !lines.is_empty()
        {
            self.out.insert(path, lines);
        }
    }

    pub(super) fn finish(mut self) -> AddedLines {
        self.close();
        self.out
    }
}

/// A path as git writes it in a diff, unquoted: git puts a path with unusual characters in
/// C-style quotes (`"b/sp\303\251cial.py"`, `\"`, `\\`, `\t`, `\n`); the escapes are decoded
/// (octal bytes as UTF-8, invalid bytes replaced).
pub(super) fn unquote(p: &str) -> String {
    let Some(inner) = p.strip_prefix('"').and_then(|p| p.strip_suffix('"')) else {
        return p.to_string();
    };
    let (mut bytes, mut chars) = (Vec::new(), inner.bytes().peekable());
    while let Some(b) = chars.next() {
        if b != b'\\' {
            bytes.push(b);
            continue;
        }
        match chars.next() {
            Some(d @ b'0'..=b'7') => {
                let mut n = u32::from(d - b'0');
                for _ in 0..2 {
                    if let Some(d @ b'0'..=b'7') = chars.peek().copied() {
                        n = n * 8 + u32::from(d - b'0');
                        chars.next();
                    }
                }
                bytes.push(n as u8);
            }
            Some(b't') => bytes.push(b'\t'),
            Some(b'n') => bytes.push(b'\n'),
            Some(b'r') => bytes.push(b'\r'),
            Some(b'a') => bytes.push(7),
            Some(b'b') => bytes.push(8),
            Some(b'f') => bytes.push(12),
            Some(b'v') => bytes.push(11),
            Some(other) => bytes.push(other),
            None => {}
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The path of a `--- a/x` / `+++ b/x` line's rest (`a/x`, `"b/x y"`, `/dev/null`), without its
/// one `a/` or `b/` prefix; `None` for `/dev/null`.
pub(super) fn side_path(rest: &str) -> Option<String> {
    let p = unquote(rest.trim_end_matches('\t'));
    if p == "/dev/null" {
        return None;
    }
    Some(
        p.strip_prefix("a/")
            .or_else(|| p.strip_prefix("b/"))
            .unwrap_or(&p)
            .to_string(),
    )
}

/// The two paths of a `diff --git a/x b/y` header: quoted or not; for unquoted ones with
/// ` b/` in them, the header's two equal halves (the same path on both sides) when they are,
/// else the last ` b/`.
pub(super) fn header_paths(header: &str) -> (String, String) {
    let rest = header.strip_prefix("diff --git ").unwrap_or(header);
    let strip = |p: String, prefix: &str| p.strip_prefix(prefix).map(str::to_string).unwrap_or(p);
    if let Some(quoted) = rest.strip_prefix('"') {
        // `"a/…" b/…` or `"a/…" "b/…"`: the first ends at an unescaped quote.
        let mut end = None;
        let mut escaped = false;
        for (i, c) in quoted.char_indices() {
            match (c, escaped) {
                ('\\', false) => escaped = true,
                ('"', false) => {
                    end = Some(i);
                    break;
                }
                _ => escaped = false,
            }
        }
        if let Some(end) = end {
            let a = unquote(&rest[..end + 2]);
            let b = unquote(rest[end + 2..].trim_start());
            return (strip(a, "a/"), strip(b, "b/"));
        }
    }
    if rest.ends_with('"')
        && let Some(i) = rest.rfind(" \"b/")
    {
        let (a, b) = (&rest[..i], &rest[i + 1..]);
        return (strip(unquote(a), "a/"), strip(unquote(b), "b/"));
    }
    let n = rest.len();
    if n % 2 == 1 && rest.is_char_boundary(n / 2) && rest.as_bytes()[n / 2] == b' ' {
        let (a, b) = (&rest[..n / 2], &rest[n / 2 + 1..]);
        if a.strip_prefix("a/")
            .is_some_and(|x| Some(x) == b.strip_prefix("b/"))
        {
            return (a[2..].to_string(), b[2..].to_string());
        }
    }
    match rest.rsplit_once(" b/") {
        Some((a, b)) => (strip(a.to_string(), "a/"), b.to_string()),
        None => (String::new(), rest.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_and_spaced_paths_are_read_as_git_meant_them() {
        assert_eq!(unquote(r#""src/caf\303\251.py""#), "src/café.py");
        assert_eq!(unquote(r#""a \"q\" \\ b\tc""#), "a \"q\" \\ b\tc");
        assert_eq!(unquote("plain.py"), "plain.py");
        assert_eq!(
            side_path(r#""b/caf\303\251.py""#).as_deref(),
            Some("café.py")
        );
        assert_eq!(
            side_path("b/b/x.py").as_deref(),
            Some("b/x.py"),
            "one prefix only"
        );
        assert_eq!(side_path("/dev/null"), None);
        let h = |s: &str| header_paths(s);
        assert_eq!(
            h("diff --git a/x.py b/x.py"),
            ("x.py".into(), "x.py".into())
        );
        // ` b/` inside the name: the two equal halves.
        assert_eq!(
            h("diff --git a/x b/y.py b/x b/y.py"),
            ("x b/y.py".into(), "x b/y.py".into())
        );
        assert_eq!(
            h(r#"diff --git "a/caf\303\251 \"1\".py" "b/caf\303\251 \"1\".py""#),
            ("café \"1\".py".into(), "café \"1\".py".into())
        );
        assert_eq!(
            h("diff --git a/old.py b/new.py"),
            ("old.py".into(), "new.py".into())
        );
    }
}
