//! GitHub: the Actions runtime ([`actions`]: environment, outputs, job summary, workflow
//! commands), the triggering event ([`event`]; where a run comes from is `trust::origin`), and what qa-loop writes on a pull
//! request — the check run ([`check_run`]), the sticky comment ([`sticky`]), the escalation
//! issue ([`escalation`]), fix commits ([`push`]) and the review threads of findings ([`threads`]) — over one REST client ([`client`]).

pub mod actions;
pub mod check_run;
pub mod checks;
pub mod client;
pub mod comment;
pub mod escalation;
pub mod event;
pub mod publish;
pub mod push;
pub mod sarif;
pub mod signoff;
pub mod sticky;
pub mod threads;
