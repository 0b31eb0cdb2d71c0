//! Errors that cross module boundaries and the exit codes they map to (SPEC §2).

use std::fmt;
use std::path::{Path, PathBuf};

/// Bad input: a file (config, plan, spec, session) and, when known, the position in it.
///
/// Displayed as `path:line:column: message`, the form editors and CI logs link to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError {
    pub path: PathBuf,
    pub line: Option<u64>,
    pub column: Option<u64>,
    pub message: String,
}

impl InputError {
    /// An error about a whole file (not found, unreadable).
    pub fn file(path: &Path, message: impl Into<String>) -> Self {
        InputError {
            path: path.to_path_buf(),
            line: None,
            column: None,
            message: message.into(),
        }
    }

    /// An error at a position (1-based line and column).
    pub fn at(path: &Path, line: u64, column: u64, message: impl Into<String>) -> Self {
        InputError {
            path: path.to_path_buf(),
            line: Some(line),
            column: Some(column),
            message: message.into(),
        }
    }

    /// Adds `did you mean …?` to serde's "unknown field/variant `x`, expected one of …" messages.
    pub fn suggest(message: String) -> String {
        let Some(rest) = message
            .strip_prefix("unknown field `")
            .or_else(|| message.strip_prefix("unknown variant `"))
        else {
            return message;
        };
        let Some((unknown, tail)) = rest.split_once('`') else {
            return message;
        };
        let candidates = tail
            .split("expected one of ")
            .nth(1)
            .or_else(|| tail.split("expected ").nth(1))
            .unwrap_or("");
        let best = candidates
            .split(',')
            .map(|c| c.trim().trim_matches('`'))
            .filter(|c| !c.is_empty())
            .map(|c| (edit_distance(unknown, c), c))
            .min();
        match best {
            Some((d, c)) if d <= 2.max(unknown.len() / 4) && d > 0 => {
                let kind = if message.starts_with("unknown field") {
                    "field"
                } else {
                    "variant"
                };
                format!(
                    "unknown {kind} `{unknown}` (did you mean `{c}`?); expected one of {candidates}"
                )
            }
            _ => message,
        }
    }

    /// Converts a `serde_json` error, which always knows its line and column.
    pub fn from_json(path: &Path, err: &serde_json::Error) -> Self {
        // serde_json appends " at line L column C" to its message; keep only the message.
        let text = err.to_string();
        let message = match text.rfind(" at line ") {
            Some(idx) => text[..idx].to_string(),
            None => text,
        };
        let message = InputError::suggest(message);
        if err.line() == 0 {
            return InputError::file(path, message);
        }
        InputError::at(path, err.line() as u64, err.column().max(1) as u64, message)
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.path.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
            if let Some(col) = self.column {
                write!(f, ":{col}")?;
            }
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for InputError {}

/// Levenshtein distance (for suggestions on short keys).
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The process exit codes of SPEC §2, decided in one place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// `0`: approved.
    Approved = 0,
    /// `1`: not approved (rejected, max iterations, below min score).
    NotApproved = 1,
    /// `2`: bad input; nothing was run or written.
    BadInput = 2,
    /// `3`: escalated to a human (or waiting for a human sign-off).
    Escalated = 3,
    /// `4`: stopped by errors (consecutive errors, provider failure, budget).
    Errors = 4,
}

impl From<Exit> for std::process::ExitCode {
    fn from(exit: Exit) -> Self {
        std::process::ExitCode::from(exit as u8)
    }
}

#[cfg(test)]
mod tests {
    use super::InputError;

    #[test]
    fn unknown_keys_and_values_get_a_suggestion() {
        let m = InputError::suggest(
            "unknown field `unit_test`, expected one of `risk_level`, `unit_tests`".into(),
        );
        assert!(m.contains("did you mean `unit_tests`?"), "{m}");
        let m = InputError::suggest("unknown variant `hgh`, expected one of `low`, `high`".into());
        assert!(m.contains("did you mean `high`?"), "{m}");
        let m = InputError::suggest("unknown field `zzzzzz`, expected one of `low`, `high`".into());
        assert!(!m.contains("did you mean"), "{m}");
    }
}
