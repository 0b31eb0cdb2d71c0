//! The run's outputs, one per file: report files, the log, fix commits and pushes, the
//! escalation issue, the check run, the sticky comment, and an events file.

pub mod analysis;
pub mod check_run;
pub mod comment;
pub mod escalation;
pub mod events_jsonl;
pub mod files;
pub mod log;
pub mod notify;
pub mod pusher;
