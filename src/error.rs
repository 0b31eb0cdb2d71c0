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

    /// Converts a `serde_json` error, which always knows its line and column.
    pub fn from_json(path: &Path, err: &serde_json::Error) -> Self {
        // serde_json appends " at line L column C" to its message; keep only the message.
        let text = err.to_string();
        let message = match text.rfind(" at line ") {
            Some(idx) => text[..idx].to_string(),
            None => text,
        };
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
