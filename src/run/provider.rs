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
    // `var`, then what sets up keyless access instead (after a `;`).
    let need_key = |var: &str| {
        let (var, keyless) = var.split_once(';').unwrap_or((var, ""));
        RunError::Usage(format!(
            "no API key for --provider {}: set {var} (or QA_LOOP_API_KEY, or pass --api-key){keyless}",
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
            anthropic(settings, transport, key, default_model, need_key)?
                .with_thinking(thinking)
                .with_registry(registry),
        ),
        ProviderKind::Openai => Box::new(
            openai(settings, transport, key, default_model, need_key)?
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
        ProviderKind::Bedrock => Box::new(
            Anthropic::at(transport, bedrock(settings)?, None)
                .with_thinking(thinking)
                .with_registry(registry),
        ),
        ProviderKind::Vertex => Box::new(
            Anthropic::at(transport, vertex(settings)?, None)
                .with_thinking(thinking)
                .with_registry(registry),
        ),
        ProviderKind::Foundry => Box::new(
            Anthropic::at(transport, foundry(settings)?, None)
                .with_thinking(thinking)
                .with_registry(registry),
        ),
        ProviderKind::Replay => unreachable!("handled above"),
    })
}

/// Foundry's endpoint and credentials (SPEC §5.1), as the `anthropic` SDK's `AnthropicFoundry`
/// reads them: `--base-url`, else `ANTHROPIC_FOUNDRY_BASE_URL`, else the resource
/// `ANTHROPIC_FOUNDRY_RESOURCE`; `ANTHROPIC_FOUNDRY_API_KEY` (or `--api-key`), else an Entra ID
/// token through workload identity.
fn foundry(settings: &Settings) -> Result<crate::llm::anthropic::Endpoint, RunError> {
    use crate::env_vars::var;
    use crate::llm::anthropic::{Endpoint, FoundryAuth};
    let nonblank = |v: Option<String>| v.filter(|s| !s.trim().is_empty());
    let base = nonblank(
        settings
            .models
            .base_url
            .clone()
            .or_else(|| var("ANTHROPIC_FOUNDRY_BASE_URL")),
    )
    .or_else(|| {
        nonblank(var("ANTHROPIC_FOUNDRY_RESOURCE"))
            .map(|r| format!("https://{r}.services.ai.azure.com/anthropic/"))
    })
    .ok_or_else(|| {
        RunError::Usage(
            "--provider foundry needs ANTHROPIC_FOUNDRY_RESOURCE (the resource name) or ANTHROPIC_FOUNDRY_BASE_URL (or --base-url)".into(),
        )
    })?;
    let base = base.trim_end_matches('/');
    let url = if base.ends_with("/v1") {
        format!("{base}/messages")
    } else {
        format!("{base}/v1/messages")
    };
    let key =
        settings.models.api_key.clone().or_else(|| {
            nonblank(var("ANTHROPIC_FOUNDRY_API_KEY")).map(crate::secrets::Secret::new)
        });
    let auth = match key {
        Some(k) => {
            crate::secrets::register([k.expose().to_string()]);
            FoundryAuth::Key(k)
        }
        None => FoundryAuth::Entra(Box::new(
            crate::llm::azure::workload_identity(&var).ok_or_else(|| {
                RunError::Usage(
                    "--provider foundry needs ANTHROPIC_FOUNDRY_API_KEY, or AZURE_CLIENT_ID, AZURE_TENANT_ID and AZURE_FEDERATED_TOKEN_FILE (Entra workload identity)".into(),
                )
            })?,
        )),
    };
    Ok(Endpoint::Foundry { url, auth })
}

/// Vertex AI's endpoint and credentials (SPEC §5.1): the region from `--region`/`region:`, else
/// `CLOUD_ML_REGION`; the project from `--project`/`project:`, else `ANTHROPIC_VERTEX_PROJECT_ID`,
/// `GOOGLE_CLOUD_PROJECT`, or the credentials' own; the endpoint from `--base-url`, else
/// `ANTHROPIC_VERTEX_BASE_URL`, else the region's (as the `anthropic` SDK picks it).
fn vertex(settings: &Settings) -> Result<crate::llm::anthropic::Endpoint, RunError> {
    use crate::env_vars::var;
    let nonblank = |v: Option<String>| v.filter(|s| !s.trim().is_empty());
    let region = nonblank(settings.models.region.clone().or_else(|| var("CLOUD_ML_REGION")))
        .ok_or_else(|| {
            RunError::Usage(
                "--provider vertex needs a region: set CLOUD_ML_REGION (`global` allowed), the `region` input, --region or `region:` in the config".into(),
            )
        })?;
    let auth = crate::llm::google::chain(&var)
        .map_err(|e| RunError::Usage(format!("--provider vertex: {e}")))?;
    let project = nonblank(
        settings
            .models
            .project
            .clone()
            .or_else(|| var("ANTHROPIC_VERTEX_PROJECT_ID"))
            .or_else(|| var("GOOGLE_CLOUD_PROJECT"))
            .or_else(|| auth.project.clone()),
    )
    .ok_or_else(|| {
        RunError::Usage(
            "--provider vertex needs a project: set ANTHROPIC_VERTEX_PROJECT_ID (or GOOGLE_CLOUD_PROJECT), the `project` input, --project or `project:` in the config".into(),
        )
    })?;
    let base = nonblank(
        settings
            .models
            .base_url
            .clone()
            .or_else(|| var("ANTHROPIC_VERTEX_BASE_URL")),
    )
    .unwrap_or_else(|| match region.as_str() {
        "global" => "https://aiplatform.googleapis.com/v1".to_string(),
        "us" => "https://aiplatform.us.rep.googleapis.com/v1".to_string(),
        "eu" => "https://aiplatform.eu.rep.googleapis.com/v1".to_string(),
        r => format!("https://{r}-aiplatform.googleapis.com/v1"),
    });
    Ok(crate::llm::anthropic::Endpoint::Vertex {
        base,
        project,
        region,
        auth: Box::new(auth),
    })
}

/// Anthropic's own API with the key, else through workload identity federation when it is set
/// up (SPEC §5.1), else the usage error `need_key` makes.
fn anthropic(
    settings: &Settings,
    transport: crate::llm::http::Transport,
    key: Option<crate::secrets::Secret>,
    default_model: Option<&str>,
    need_key: impl Fn(&str) -> RunError,
) -> Result<crate::llm::anthropic::Anthropic, RunError> {
    use crate::llm::anthropic::{Anthropic, DEFAULT_BASE_URL, Endpoint};
    let base_url = settings.models.base_url.as_deref();
    if let Some(k) = key {
        return Ok(Anthropic::new(transport, base_url, k, default_model));
    }
    let federation = crate::llm::federation::from_env(
        &crate::env_vars::var,
        base_url.unwrap_or(DEFAULT_BASE_URL),
        settings.models.oidc_audience.clone(),
    )
    .map_err(|e| RunError::Usage(format!("--provider anthropic: {e}")))?
    .ok_or_else(|| {
        need_key("ANTHROPIC_API_KEY;, or ANTHROPIC_FEDERATION_RULE_ID and ANTHROPIC_ORGANIZATION_ID for keyless access (workload identity federation)")
    })?;
    let endpoint = Endpoint::Federated {
        url: Anthropic::messages_url(base_url),
        auth: Box::new(federation),
    };
    Ok(Anthropic::at(transport, endpoint, default_model))
}

/// OpenAI's own API with the key, else through workload identity when it is set up (SPEC
/// §5.1), else the usage error `need_key` makes.
fn openai(
    settings: &Settings,
    transport: crate::llm::http::Transport,
    key: Option<crate::secrets::Secret>,
    default_model: Option<&str>,
    need_key: impl Fn(&str) -> RunError,
) -> Result<crate::llm::openai::OpenAi, RunError> {
    use crate::llm::openai::OpenAi;
    let base_url = settings.models.base_url.as_deref();
    let model = default_model.unwrap_or_default();
    if key.is_some() {
        return Ok(OpenAi::new(transport, base_url, key, model, "openai"));
    }
    let identity = crate::llm::federation::openai_from_env(
        &crate::env_vars::var,
        settings.models.oidc_audience.clone(),
    )
    .map_err(|e| RunError::Usage(format!("--provider openai: {e}")))?
    .ok_or_else(|| {
        need_key("OPENAI_API_KEY;, or OPENAI_IDENTITY_PROVIDER_ID and OPENAI_SERVICE_ACCOUNT_ID for keyless access (workload identity)")
    })?;
    Ok(OpenAi::new(transport, base_url, None, model, "openai").with_auth(Box::new(identity)))
}

/// Bedrock's endpoint and credentials (SPEC §5.1): the region from `--region`/`region:`, else
/// `AWS_REGION`/`AWS_DEFAULT_REGION`; the endpoint from `--base-url`, else the AWS SDKs' own
/// override variables, else the region's; the credentials in the AWS SDKs' order. Missing ones
/// are usage errors naming what to set.
fn bedrock(settings: &Settings) -> Result<crate::llm::anthropic::Endpoint, RunError> {
    use crate::env_vars::var;
    let region = settings
        .models
        .region
        .clone()
        .or_else(|| var("AWS_REGION"))
        .or_else(|| var("AWS_DEFAULT_REGION"))
        .filter(|r| !r.trim().is_empty())
        .ok_or_else(|| {
            RunError::Usage(
                "--provider bedrock needs a region: set AWS_REGION (aws-actions/configure-aws-credentials exports it), the `region` input, --region or `region:` in the config".into(),
            )
        })?;
    let base = settings
        .models
        .base_url
        .clone()
        .or_else(|| var("AWS_ENDPOINT_URL_BEDROCK_RUNTIME"))
        .or_else(|| var("AWS_ENDPOINT_URL"))
        .filter(|b| !b.trim().is_empty())
        .unwrap_or_else(|| format!("https://bedrock-runtime.{region}.amazonaws.com"));
    let auth = crate::llm::aws::chain(&var, &region)
        .map_err(|e| RunError::Usage(format!("--provider bedrock: {e}")))?;
    Ok(crate::llm::anthropic::Endpoint::Bedrock { base, auth })
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
            Some(
                ProviderKind::Anthropic
                | ProviderKind::Bedrock
                | ProviderKind::Vertex
                | ProviderKind::Foundry,
            ) => Api::Messages,
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

/// Where the run's models stand on `today` (SPEC §5.1), checked before anything runs. A retired
/// model is refused (exit 2) naming its date and the suggested replacement — on its provider's
/// own API; behind another base URL (a gateway, a compatible server, a router) that server may
/// still serve it, so there it is a warning. A model retiring within 30 days is a warning. A
/// replayed session calls no model. Returns the warnings (logged here; the run appends them to
/// the report, which the check run and the comment publish).
pub fn model_lifecycle(
    settings: &Settings,
    today: crate::llm::registry::Day,
) -> Result<Vec<String>, RunError> {
    use crate::llm::registry::Lifecycle;
    let kind = settings.models.provider;
    if matches!(kind, None | Some(ProviderKind::Replay)) {
        return Ok(Vec::new());
    }
    let own_api = matches!(kind, Some(ProviderKind::Anthropic | ProviderKind::Openai))
        && settings
            .models
            .base_url
            .as_deref()
            .is_none_or(is_providers_own_api);
    let mut warnings = Vec::new();
    for (id, roles, m) in models_by_id(settings) {
        let instead = match &m.info.replacement {
            Some(r) => format!("its suggested replacement is `{r}`"),
            None => "choose another model".to_string(),
        };
        match m.info.lifecycle(today) {
            Lifecycle::Served => {}
            Lifecycle::Retiring { on, days } => warnings.push(format!(
                "the {roles} model `{id}` retires on {on} (in {days} day{}): {instead}; move to it before then",
                if days == 1 { "" } else { "s" }
            )),
            Lifecycle::Retired { on, by } => {
                let when = match (on, by) {
                    (Some(d), _) => format!("was retired on {d}"),
                    (None, Some(d)) => format!(
                        "is retired (by {d}, when the registry last checked it; the day is not published)"
                    ),
                    (None, None) => "is retired".to_string(),
                };
                if own_api {
                    return Err(RunError::Usage(format!(
                        "the {roles} model `{id}` {when}: {instead} (--model, --{role}-model or `{role}_model:` in the config)",
                        role = m.role
                    )));
                }
                warnings.push(format!(
                    "the {roles} model `{id}` {when} on its provider's own API; the server at the base URL may still serve it ({instead})"
                ));
            }
        }
    }
    for w in &warnings {
        tracing::warn!("{w}");
    }
    Ok(warnings)
}

/// The run's models, each once, with the roles that use it (`reviewer and fixer`).
fn models_by_id(settings: &Settings) -> Vec<(String, String, ResolvedModel)> {
    let mut out: Vec<(String, String, ResolvedModel)> = Vec::new();
    for m in resolved_models(settings) {
        match out.iter_mut().find(|(id, ..)| *id == m.id) {
            Some((_, roles, _)) => *roles = format!("{roles} and {}", m.role),
            None => out.push((m.id.clone(), m.role.to_string(), m)),
        }
    }
    out
}

/// Whether `base_url` is Anthropic's or OpenAI's own API host.
fn is_providers_own_api(base_url: &str) -> bool {
    let rest = base_url.split_once("://").map_or(base_url, |(_, r)| r);
    let host = rest.split(['/', ':', '?']).next().unwrap_or_default();
    matches!(
        host.to_ascii_lowercase().as_str(),
        "api.anthropic.com" | "api.openai.com"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::registry::{Day, ModelEntry, Registry};

    fn settings(provider: ProviderKind, model: &str, base_url: Option<&str>) -> Settings {
        let mut s = Settings::resolve(
            std::path::Path::new("/repo"),
            &crate::config::FlagLayer::default(),
            None,
            &crate::config::file::ConfigFile::default(),
            |_| None,
        );
        s.models.provider = Some(provider);
        s.models.reviewer_model = Some(model.into());
        s.models.fixer_model = Some(model.into());
        s.models.base_url = base_url.map(str::to_string);
        s
    }

    fn day(s: &str) -> Day {
        Day::parse(s).unwrap()
    }

    #[test]
    fn a_retired_model_is_refused_with_its_date_and_replacement() {
        let s = settings(ProviderKind::Openai, "o3-mini", None);
        let e = model_lifecycle(&s, day("2026-11-27")).unwrap_err();
        let text = e.to_string();
        assert!(matches!(e, RunError::Usage(_)), "{text}");
        for want in [
            "reviewer and fixer model `o3-mini`",
            "2026-10-23",
            "`gpt-5.4-mini`",
        ] {
            assert!(text.contains(want), "{want}: {text}");
        }
        // Retired without a published day: the day the registry saw it retired.
        let s = settings(ProviderKind::Anthropic, "claude-3-7-sonnet-20250219", None);
        let text = model_lifecycle(&s, day("2026-11-27"))
            .unwrap_err()
            .to_string();
        assert!(text.contains("by 2026-11-26"), "{text}");
        assert!(text.contains("`claude-sonnet-5-5`"), "{text}");
        // Behind another server it is a warning; a replayed session calls no model.
        let s = settings(
            ProviderKind::Openai,
            "o3-mini",
            Some("https://gateway.example/v1"),
        );
        let w = model_lifecycle(&s, day("2026-11-27")).unwrap();
        assert!(w[0].contains("may still serve it"), "{w:?}");
        let s = settings(
            ProviderKind::Openai,
            "o3-mini",
            Some("https://api.openai.com/v1"),
        );
        assert!(model_lifecycle(&s, day("2026-11-27")).is_err());
        let s = settings(ProviderKind::Replay, "o3-mini", None);
        assert_eq!(
            model_lifecycle(&s, day("2026-11-27")).unwrap(),
            Vec::<String>::new()
        );
    }

    #[test]
    fn a_model_retiring_within_30_days_is_a_warning() {
        let mut s = settings(ProviderKind::Anthropic, "claude-sonnet-4-5", None);
        s.models.fixer_model = Some("claude-sonnet-5-5".into());
        let w = model_lifecycle(&s, day("2026-11-20")).unwrap();
        assert_eq!(
            w,
            vec![
                "the reviewer model `claude-sonnet-4-5` retires on 2026-11-30 (in 10 days): its suggested replacement is `claude-sonnet-5-5`; move to it before then"
                    .to_string()
            ]
        );
        assert_eq!(
            model_lifecycle(&s, day("2026-10-30")).unwrap(),
            Vec::<String>::new()
        );
        assert!(model_lifecycle(&s, day("2026-11-30")).is_err());
        // The config's `retires:` for a model of its own.
        s.models.registry = Registry::new(std::collections::BTreeMap::from([(
            "my-llm".to_string(),
            ModelEntry {
                retires: Some("2026-11-21".into()),
                ..ModelEntry::default()
            },
        )]));
        s.models.reviewer_model = Some("my-llm".into());
        let w = model_lifecycle(&s, day("2026-11-20")).unwrap();
        assert!(w[0].contains("(in 1 day): choose another model"), "{w:?}");
    }
}
