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
    let registry = settings.models.registry.clone();
    warn_unthinking(settings);
    Ok(match kind {
        ProviderKind::Anthropic => Box::new(
            Anthropic::new(
                transport,
                base_url,
                key.ok_or_else(|| need_key("ANTHROPIC_API_KEY"))?,
                default_model,
            )
            .with_thinking(thinking)
            .with_registry(registry),
        ),
        ProviderKind::Openai => Box::new(
            OpenAi::new(
                transport,
                base_url,
                Some(key.ok_or_else(|| need_key("OPENAI_API_KEY"))?),
                default_model.unwrap_or_default(),
                "openai",
            )
            .with_thinking(thinking)
            .with_registry(registry),
        ),
        ProviderKind::OpenaiCompatible => {
            let base = base_url.ok_or_else(|| {
                RunError::Usage(
                    "--provider openai-compatible needs --base-url (e.g. http://localhost:11434/v1 for Ollama)".into(),
                )
            })?;
            Box::new(
                OpenAi::new(transport, Some(base), key, models[0], "openai-compatible")
                    .with_thinking(thinking)
                    .with_registry(registry),
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
            .find(|m| settings.models.registry.price(m).is_none())
    {
        return Err(RunError::Usage(format!(
            "--max-cost-usd needs the price of model `{m}`, which the built-in table does not know: add it under `models:` in the config (`{m}: {{input: …, output: …}}`, USD per million tokens)"
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

/// A model as the run will call it.
#[derive(Debug, Clone)]
pub struct ResolvedModel {
    pub role: &'static str,
    pub id: String,
    /// The API it is called through.
    pub api: crate::llm::registry::Api,
    pub info: crate::llm::registry::Model,
    pub thinking: Option<crate::llm::Thinking>,
}

/// The reviewer's and the fixer's models as the run will call them (those the settings name or
/// the provider defaults to), with what the registry knows of them.
pub fn resolved_models(settings: &Settings) -> Vec<ResolvedModel> {
    use crate::llm::AgentRole;
    use crate::llm::registry::Api;
    let kind = settings.models.provider;
    let default = kind.and_then(default_model);
    let registry = &settings.models.registry;
    [
        (
            "reviewer",
            AgentRole::Reviewer,
            &settings.models.reviewer_model,
        ),
        ("fixer", AgentRole::Fixer, &settings.models.fixer_model),
    ]
    .into_iter()
    .filter_map(|(role, agent, m)| {
        let id = m.clone().or_else(|| default.map(str::to_string))?;
        let api = match kind {
            Some(ProviderKind::Anthropic) => Api::Messages,
            Some(ProviderKind::Openai) => crate::llm::openai::api(false, registry, &id),
            _ => crate::llm::openai::api(true, registry, &id),
        };
        Some(ResolvedModel {
            role,
            info: registry.model(&id),
            id,
            api,
            thinking: settings.limits.thinking.of(agent),
        })
    })
    .collect()
}

impl ResolvedModel {
    /// For `validate --json`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "model": self.id,
            "api": self.api,
            "context_window": self.info.context_window,
            "max_output": self.info.max_output,
            "thinking_style": self.info.thinking,
            "thinking": self.thinking,
            "price": self.info.price,
            "source": self.info.source,
        })
    }

    /// One line for `validate`.
    pub fn describe(&self) -> String {
        use crate::llm::registry::ThinkingStyle;
        let m = &self.info;
        let mut parts = vec![format!("{} API", self.api.as_str())];
        parts.push(format!("context {} tokens", m.context_window));
        if let Some(out) = m.max_output {
            parts.push(format!("output ≤ {out} tokens"));
        }
        match (m.thinking, self.thinking) {
            (Some(ThinkingStyle::None), Some(t)) => {
                parts.push(format!("does not think (thinking {t} ignored)"))
            }
            (Some(style), Some(t)) => parts.push(format!("thinking {} ({t})", style.as_str())),
            (None, Some(t)) => parts.push(format!("thinking {t}")),
            _ => {}
        }
        let price = match &m.price {
            Some(p) => {
                let r = &p.rates;
                let mut text = format!("${} in / ${} out per million tokens", r.input, r.output);
                if let (Some(read), Some(write)) = (r.cache_read, r.cache_write) {
                    text.push_str(&format!(", cache read ${read} / write ${write}"));
                }
                if let Some(l) = &p.long_context {
                    text.push_str(&format!(
                        "; prompts over {} tokens ${} in / ${} out",
                        l.above, l.rates.input, l.rates.output
                    ));
                }
                text
            }
            None => "no price known: its cost is not counted (add it under `models:`)".into(),
        };
        let source = m
            .source
            .map_or("not in the registry".to_string(), |s| format!("from {s}"));
        format!(
            "{}: {} — {}; {} [{source}]",
            self.role,
            self.id,
            parts.join(", "),
            price
        )
    }
}

/// Thinking asked of a model that does not think is ignored: say so once, before the run.
fn warn_unthinking(settings: &Settings) {
    use crate::llm::registry::ThinkingStyle;
    for m in resolved_models(settings) {
        if let (Some(t), Some(ThinkingStyle::None)) = (m.thinking, m.info.thinking) {
            tracing::warn!(
                "the {} model `{}` does not think: its thinking setting ({t}) is ignored",
                m.role,
                m.id
            );
        }
    }
}
