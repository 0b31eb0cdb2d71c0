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
            if rest != "/dev/null" {
                let path = unquote(rest).trim_start_matches("b/").to_string();
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

/// git quotes unusual paths: `"b/sp\303\251cial.py"`; the quotes are dropped (escapes kept).
pub(super) fn unquote(p: &str) -> &str {
    p.strip_prefix('"')
        .and_then(|p| p.strip_suffix('"'))
        .unwrap_or(p)
}
