//! Text that qa-loop did not write — the models' answers, test output, names from the change —
//! placed into published markdown (the PR comment, check runs, the job summary, the escalation
//! issue, review suggestions) as data: it cannot mention people or teams, reference other
//! issues, carry HTML (an unclosed `<!--` hides the rest of a comment; a marker forges
//! qa-loop's state), or leave a code fence open over what follows. The one sanitiser: every
//! published field of such text goes through [`line`], [`block`], [`code`] or [`fenced`].

/// Zero-width space: after `@` it stops a mention, after `#` an issue reference.
const BREAK: char = '\u{200b}';

/// Text for a table cell or a single line: no line breaks of any kind, `|` escaped, and no
/// HTML, mentions or references.
pub fn line(text: &str) -> String {
    let flat: String = text
        .trim()
        .chars()
        .map(|c| {
            if matches!(c, '\r' | '\n' | '\u{85}' | '\u{2028}' | '\u{2029}') {
                ' '
            } else {
                c
            }
        })
        .collect();
    inert(&flat).replace('|', "\\|")
}

/// Multi-line text (a reviewer's summary, a fix, a plan) as a block quote: its markdown is kept
/// — emphasis, lists, code — but outside its code fences there is no HTML, no mention and no
/// reference; a fence it leaves open is closed; and being quoted, nothing it holds can reach
/// the markdown that follows (the caller ends the block with a blank line).
pub fn block(text: &str) -> String {
    let normalised = text
        .replace("\r\n", "\n")
        .replace(['\r', '\u{85}', '\u{2028}', '\u{2029}'], "\n");
    // Blank lines around go; the first line's indentation stays (it decides what a line is).
    let lines = normalised
        .trim_end()
        .split('\n')
        .skip_while(|l| l.trim().is_empty());
    let mut out = String::with_capacity(normalised.len() + 16);
    let mut open: Option<Fence> = None;
    for l in lines {
        let shown = match &open {
            Some(f) => {
                if f.closed_by(l) {
                    open = None;
                }
                l.to_string()
            }
            None => match Fence::opened_by(l) {
                Some(f) => {
                    open = Some(f);
                    // The info string is markdown's business, not the model's.
                    inert(l)
                }
                None => inert(l),
            },
        };
        out.push('>');
        if !shown.is_empty() {
            out.push(' ');
            out.push_str(&shown);
        }
        out.push('\n');
    }
    if let Some(f) = open {
        out.push_str(&format!("> {}\n", f.marker()));
    }
    out
}

/// An inline code span of `text` on one line, its backtick fence longer than any run of
/// backticks inside.
pub fn code(text: &str) -> String {
    let flat = text.replace(['\r', '\n', '\u{85}', '\u{2028}', '\u{2029}'], " ");
    let ticks = "`".repeat(longest_run(&flat, '`') + 1);
    let pad = if flat.starts_with('`') || flat.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{ticks}{pad}{flat}{pad}{ticks}")
}

/// A fenced code block of `text` (with `info`, e.g. `diff`), its fence longer than any run of
/// backticks inside, so nothing in `text` can close it.
pub fn fenced(text: &str, info: &str) -> String {
    let ticks = "`".repeat((longest_run(text, '`') + 1).max(3));
    let end = if text.is_empty() { "" } else { "\n" };
    format!("{ticks}{info}\n{text}{end}{ticks}\n")
}

/// No HTML (`<` becomes `&lt;`), no mention (`@name`, `@org/team`), no issue reference (`#12`,
/// `owner/repo#12`, `GH-12`).
fn inert(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    let mut chars = text.chars().peekable();
    let mut prev: Option<char> = None;
    while let Some(c) = chars.next() {
        match c {
            '<' => out.push_str("&lt;"),
            '@' => {
                out.push('@');
                if chars
                    .peek()
                    .is_some_and(|n| n.is_alphanumeric() || *n == '-')
                {
                    out.push(BREAK);
                }
            }
            '#' => {
                out.push('#');
                if chars.peek().is_some_and(char::is_ascii_digit) {
                    out.push(BREAK);
                }
            }
            '-' if prev.is_some_and(|p| p == 'H') && out.ends_with("GH") => {
                out.push('-');
                if chars.peek().is_some_and(char::is_ascii_digit) {
                    out.push(BREAK);
                }
            }
            c => out.push(c),
        }
        prev = Some(c);
    }
    out
}

fn longest_run(text: &str, c: char) -> usize {
    let (mut best, mut now) = (0, 0);
    for ch in text.chars() {
        now = if ch == c { now + 1 } else { 0 };
        best = best.max(now);
    }
    best
}

/// An open fenced code block (CommonMark: up to three spaces, then three or more backticks or
/// tildes; a backtick fence's info string has no backtick).
struct Fence {
    ch: char,
    len: usize,
}

impl Fence {
    fn opened_by(line: &str) -> Option<Fence> {
        let rest = line.strip_prefix_spaces(3)?;
        let ch = rest.chars().next().filter(|c| *c == '`' || *c == '~')?;
        let len = rest.chars().take_while(|c| *c == ch).count();
        if len < 3 {
            return None;
        }
        let info = &rest[len..];
        if ch == '`' && info.contains('`') {
            return None;
        }
        Some(Fence { ch, len })
    }

    fn closed_by(&self, line: &str) -> bool {
        let Some(rest) = line.strip_prefix_spaces(3) else {
            return false;
        };
        let len = rest.chars().take_while(|c| *c == self.ch).count();
        len >= self.len && rest[len..].trim().is_empty()
    }

    fn marker(&self) -> String {
        self.ch.to_string().repeat(self.len)
    }
}

trait StripSpaces {
    /// The line without its leading spaces, when there are at most `max`.
    fn strip_prefix_spaces(&self, max: usize) -> Option<&str>;
}

impl StripSpaces for str {
    fn strip_prefix_spaces(&self, max: usize) -> Option<&str> {
        let rest = self.trim_start_matches(' ');
        (self.len() - rest.len() <= max).then_some(rest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_cannot_break_the_table_hide_the_comment_mention_or_reference() {
        let text = "done|ok\r\n<!-- hide the rest\r@octo-org/admins please\u{2028}see #12 and GH-3";
        let c = line(text);
        assert!(!c.contains(['\r', '\n', '\u{2028}']), "{c:?}");
        assert!(!c.contains("<!--") && c.contains("&lt;!--"), "{c}");
        assert!(!c.contains("@octo") && c.contains("@\u{200b}octo"), "{c}");
        assert!(
            c.contains("#\u{200b}12") && c.contains("GH-\u{200b}3"),
            "{c}"
        );
        assert!(c.contains("done\\|ok"), "{c}");
        assert_eq!(
            line("a@ b # c"),
            "a@ b # c",
            "no break where nothing follows"
        );
    }

    #[test]
    fn a_block_is_quoted_keeps_its_code_and_closes_what_it_opens() {
        let b = block(
            "Fix it:\n```rust\nlet v: Vec<u8> = x; // @keep\n```\n<b>bold</b> @octocat\n~~~\nnever closed",
        );
        let lines: Vec<&str> = b.lines().collect();
        assert!(lines.iter().all(|l| l.starts_with('>')), "{b}");
        assert!(
            b.contains("> let v: Vec<u8> = x; // @keep"),
            "code kept: {b}"
        );
        assert!(b.contains("> &lt;b>bold&lt;/b> @\u{200b}octocat"), "{b}");
        assert_eq!(
            lines.last(),
            Some(&"> ~~~"),
            "the open fence is closed: {b}"
        );
        // A backtick fence with a backtick in its info string is no fence (CommonMark).
        let b = block("``` a`b\n<!-- x");
        assert!(b.contains("&lt;!-- x") && !b.ends_with("> ```\n"), "{b}");
        // Four spaces: an indented code block, not a fence.
        assert!(!block("    ```\n<i>").contains("<i>"));
    }

    #[test]
    fn code_and_fences_outlast_any_backticks_inside() {
        assert_eq!(code("a`b"), "``a`b``");
        assert_eq!(code("`x`"), "`` `x` ``");
        assert_eq!(code("two\nlines"), "`two lines`");
        let f = fenced("```\n<!-- not html\n```", "diff");
        assert!(
            f.starts_with("````diff\n") && f.ends_with("\n````\n"),
            "{f}"
        );
        assert_eq!(fenced("", "suggestion"), "```suggestion\n```\n");
        assert_eq!(
            fenced("a\n", "suggestion"),
            "```suggestion\na\n\n```\n",
            "a blank last line kept"
        );
    }
}
