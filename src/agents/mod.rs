//! The LLM agents: the tool-use loop ([`runner`]), verdict parsing ([`verdict`]), the task
//! messages ([`tasks`]), prompts, and token/cost accounting ([`meter`]).

pub mod analyst;
pub mod context;
pub mod meter;
pub mod prompts;
pub mod rereview;
pub mod roles;
pub mod runner;
pub mod tasks;
pub mod verdict;

pub use meter::Meter;
pub use runner::{Agent, AgentEnd, ToolCalls};
