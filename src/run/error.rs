//! Why a run could not start ([`RunError`]): bad input, bad usage, a refusal before anything
//! ran, or a file qa-loop could not write.

use crate::error::InputError;

/// Why a run could not start.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Input(#[from] InputError),
    #[error("{0}")]
    Usage(String),
    /// Refused before anything ran (an event or a checkout qa-loop must not run on).
    #[error("{0}")]
    Refused(String),
    #[error("{0}")]
    Io(String),
}
