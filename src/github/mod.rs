//! GitHub: the Actions runtime ([`actions`]: environment, outputs, job summary, workflow
//! commands) and the triggering event ([`event`]: payload reading and the decision to run).

pub mod actions;
pub mod checks;
pub mod client;
pub mod comment;
pub mod event;
pub mod origin;
pub mod publish;
pub mod push;
