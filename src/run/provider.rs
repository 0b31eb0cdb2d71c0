//! The model provider the settings ask for, checked before anything runs.

use crate::config::{ProviderKind, Settings};
use crate::error::InputError;
use crate::llm::Provider;
use crate::llm::replay::ReplayProvider;

use super::RunError;

/// Builds the provider the settings ask for. Missing keys, models or prices are usage errors
/// (exit 2) found before anything runs.
pub fn provider(
    settings: &Settings,
    stop: Option<&crate::cancel::Cancel>,
) -> Result<Box<dyn Provider>, RunError> {
    use crate::llm::{anthropic::Anthropic, http::Transport, openai::OpenAi};
    let kind = settings.models.provider.ok_or_else(|| {
        RunError::Usage(
            "no model provider configured: pass --provider (or set QA_LOOP_PROVIDER / `provider:` in the config)".into(),
        )
    })?;
    if kind == ProviderKind::Replay {
        let path = settings.models.replay_session.as_ref().ok_or_else(|| {
            RunError::Usage(
                "--provider replay needs --replay-session PATH (or `replay_session:` in the config)"
                    .into(),
            )
        })?;
        if !path.exists() {
            return Err(InputError::file(path, "replay session not found").into());
        }
        return Ok(Box::new(ReplayProvider::load(path)?));
    }
    let key = settings.models.api_key.clone();
    let need_key = |var: &str| {
        RunError::Usage(format!(
            "no API key for --provider {}: set {var} (or QA_LOOP_API_KEY, or pass --api-key)",
            kind.as_str()
        ))
    };
    let default_model = default_model(kind);
    let models = models(settings, kind, default_model)?;
    let transport = Transport::new(settings.models.model_retry, key.clone())
        .map_err(|e| RunError::Usage(e.to_string()))?
        .with_deadline(
            settings
                .limits
                .run_timeout
                .map(|t| std::time::Instant::now() + t),
        )
        .with_stop(stop.cloned());
    let base_url = settings.models.base_url.as_deref();
    let thinking = settings.limits.thinking;
    Ok(match kind {
        ProviderKind::Anthropic => Box::new(
            Anthropic::new(
                transport,
                base_url,
                key.ok_or_else(|| need_key("ANTHROPIC_API_KEY"))?,
                default_model,
            )
            .with_thinking(thinking),
        ),
        ProviderKind::Openai => Box::new(
            OpenAi::new(
                transport,
                base_url,
                Some(key.ok_or_else(|| need_key("OPENAI_API_KEY"))?),
                default_model.unwrap_or_default(),
                "openai",
            )
            .with_thinking(thinking),
        ),
        ProviderKind::OpenaiCompatible => {
            let base = base_url.ok_or_else(|| {
                RunError::Usage(
                    "--provider openai-compatible needs --base-url (e.g. http://localhost:11434/v1 for Ollama)".into(),
                )
            })?;
            Box::new(
                OpenAi::new(transport, Some(base), key, models[0], "openai-compatible")
                    .with_thinking(thinking),
            )
        }
        ProviderKind::Replay => unreachable!("handled above"),
    })
}

/// Every model the run will call; each needs a price when a cost limit is set.
fn models<'a>(
    settings: &'a Settings,
    kind: ProviderKind,
    default_model: Option<&'a str>,
) -> Result<Vec<&'a str>, RunError> {
    let models: Vec<&str> = [
        &settings.models.reviewer_model,
        &settings.models.fixer_model,
    ]
    .into_iter()
    .map(|m| m.as_deref().or(default_model))
    .collect::<Option<Vec<_>>>()
    .ok_or_else(|| {
        RunError::Usage(format!(
            "--provider {} needs --model (the model name the server knows)",
            kind.as_str()
        ))
    })?;
    if settings.limits.max_cost_usd.is_some()
        && let Some(m) = models
            .iter()
            .find(|m| settings.models.prices.of(m).is_none())
    {
        return Err(RunError::Usage(format!(
            "--max-cost-usd needs the price of model `{m}`, which the built-in table does not know: add it under `prices:` in the config (USD per million tokens: input, output)"
        )));
    }
    Ok(models)
}

/// The provider's default model, if it has one.
pub fn default_model(kind: ProviderKind) -> Option<&'static str> {
    match kind {
        ProviderKind::Anthropic => Some(crate::llm::anthropic::DEFAULT_MODEL),
        ProviderKind::Openai => Some(crate::llm::openai::DEFAULT_MODEL),
        _ => None,
    }
}

/// The reviewer's and the fixer's models as the run will call them, with their prices (`None`:
/// unknown, so their cost is not counted).
pub fn resolved_models(
    settings: &Settings,
) -> Vec<(
    &'static str,
    Option<String>,
    Option<crate::llm::pricing::Price>,
)> {
    let default = settings.models.provider.and_then(default_model);
    [
        ("reviewer", &settings.models.reviewer_model),
        ("fixer", &settings.models.fixer_model),
    ]
    .into_iter()
    .map(|(role, m)| {
        let model = m.clone().or_else(|| default.map(str::to_string));
        let price = model.as_deref().and_then(|m| settings.models.prices.of(m));
        (role, model, price)
    })
    .collect()
}
