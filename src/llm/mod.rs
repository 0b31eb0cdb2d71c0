//! Model providers: shared conversation types ([`types`]), the [`Provider`] trait, the
//! Anthropic ([`anthropic`]) and OpenAI(-compatible) ([`openai`]) wire formats over one HTTP
//! transport with retries ([`http`]), the model registry ([`registry`]), thinking settings ([`thinking`]), and the `replay` provider.

pub mod anthropic;
pub mod aws;
pub mod azure;
pub mod eventstream;
pub mod federation;
pub mod google;
pub mod http;
pub mod openai;
pub mod openai_common;
pub mod registry;
pub mod replay;
pub mod responses;
pub mod thinking;
pub mod types;

use std::future::Future;
use std::pin::Pin;

pub use thinking::{Effort, Thinking, ThinkingBudgets};
pub use types::{
    AgentRole, Content, Message, Request, Response, Speaker, Stop, ToolCall, ToolSpec, Usage,
};

/// A boxed future, so providers can be chosen at run time (`Box<dyn Provider>`).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;

/// Why a model call failed. The text never contains the API key.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ProviderError {
    /// Retries exhausted on 429/5xx/timeouts.
    #[error("model service unavailable: {0}")]
    Unavailable(String),
    /// A failure retrying cannot fix (bad request, bad key, exhausted replay session).
    #[error("{0}")]
    Fatal(String),
    /// The credential could not be had or was refused (it names the provider, what was refused
    /// and the variable to check): the run stops (exit 4), never a verdict.
    #[error("{0}")]
    Credential(String),
}

impl ProviderError {
    /// A platform's refusal of the credentials (HTTP 401/403: a bad signature, an unknown or
    /// expired key or token) as the credential error it is, naming where they came from.
    pub fn refused(self, platform: &str, origin: &str) -> ProviderError {
        match self {
            ProviderError::Fatal(t) if t.contains("HTTP 401") || t.contains("HTTP 403") => {
                ProviderError::Credential(format!(
                    "{t} — {platform} refused the credentials from {origin}: check them (and, on a cloud platform, the region)"
                ))
            }
            other => other,
        }
    }

    /// A refused API key (HTTP 401) as the credential error it is. A 403 is left alone here: on
    /// the providers' own APIs it also means "this model is not for your organization".
    pub fn unauthorized(self, platform: &str, origin: &str) -> ProviderError {
        match self {
            ProviderError::Fatal(t) if t.contains("HTTP 401") => ProviderError::Credential(
                format!("{t} — {platform} refused the key from {origin}: check it"),
            ),
            other => other,
        }
    }
}

/// No model service: a run that asks no model (a merge-queue run) holds this one, so a
/// workflow without a key still reports; a call is a fatal error naming why.
pub struct NoModel(pub &'static str);

impl Provider for NoModel {
    fn name(&self) -> &'static str {
        "none"
    }
    fn complete<'a>(
        &'a self,
        _request: &'a Request,
    ) -> BoxFuture<'a, Result<Response, ProviderError>> {
        Box::pin(async move {
            Err(ProviderError::Fatal(format!(
                "no model is called: {}",
                self.0
            )))
        })
    }
}

/// A model service.
pub trait Provider {
    fn name(&self) -> &'static str;
    fn complete<'a>(
        &'a self,
        request: &'a Request,
    ) -> BoxFuture<'a, Result<Response, ProviderError>>;
}
