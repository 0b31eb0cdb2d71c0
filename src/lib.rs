//! qa-loop: an automated QA loop for pull requests.
//!
//! The flow is verify → review → (fix → verify → review)* → report. Each concern has a module:
//!
//! - [`config`]: config file, plan, spec and run settings (CLI > env > file > defaults)
//! - [`model`]: the shared vocabulary (issues, verdicts)
//! - [`engine`]: the loop as a pure state machine, its driver, and the recurring-issue matcher

pub mod agents;
pub mod browser;
pub mod cancel;
pub mod commands;
pub mod config;
pub mod conversations;
pub mod diffview;
pub mod engine;
pub mod env_vars;
pub mod error;
pub mod github;
pub mod llm;
pub mod mcp;
pub mod model;
pub mod nofollow;
pub mod notify;
pub mod report;
pub mod retry;
pub mod run;
pub mod sandbox;
pub mod secrets;
pub mod text;
pub mod tools;
pub mod trust;
pub mod vcs;
pub mod verify;

#[cfg(test)]
pub(crate) mod test_support {
    //! Helpers shared by unit tests.

    /// A current-thread runtime with timers and process support.
    pub fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }
}
