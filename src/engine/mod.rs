//! The QA loop: a pure state machine ([`state`]), the driver that performs its effects through
//! narrow traits ([`driver`]), and the recurring-issue logic ([`matcher`], [`recurring`]).

pub mod concepts;
pub mod driver;
pub mod findings;
pub mod matcher;
pub mod recurring;
pub mod state;

#[cfg(test)]
mod tests;

pub use state::{Effect, Engine, Event, IterationRecord, Outcome, Policy, Status};
