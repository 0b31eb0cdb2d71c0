//! Keyless access to the model providers' own APIs (SPEC §5.1): an identity token (a JWT — the
//! job's OIDC token) from `<PROVIDER>_IDENTITY_TOKEN_FILE`, `<PROVIDER>_IDENTITY_TOKEN` or, in
//! GitHub Actions, the runner's OIDC URL (`ACTIONS_ID_TOKEN_REQUEST_URL` with its request token;
//! audience from the `oidc-audience` input) is traded for a short-lived access token, sent as
//! `Authorization: Bearer` and fetched again before it expires ([`super::http::TokenCache`]).
//!
//! - Anthropic ([`Federation`]), as the `anthropic` SDK's `WorkloadIdentityCredentials`: RFC 7523
//!   jwt-bearer at `{base}/v1/oauth/token` with the federation rule and organization
//!   (`anthropic-beta: oauth-2025-04-20,oidc-federation-2026-04-01`); requests carry
//!   `anthropic-beta: oauth-2025-04-20`.
//! - OpenAI ([`WorkloadIdentity`]), as the `openai` SDK's `WorkloadIdentity`: RFC 8693 token
//!   exchange (JSON) at `https://auth.openai.com/oauth/token` with the identity provider and the
//!   service account.
//!
//! The identity token, the request token and the access token are secrets.

use std::time::Duration;

use serde_json::{Value, json};

use super::BoxFuture;
use super::http::BearerToken;
use crate::secrets::Secret;

const EXCHANGE_BETA: &str = "oauth-2025-04-20,oidc-federation-2026-04-01";
const OAUTH_BETA: &str = "oauth-2025-04-20";

enum Identity {
    File(String),
    Value(Secret),
    /// The Actions OIDC URL, its request token, the audience asked for.
    Actions {
        url: String,
        token: Secret,
        audience: Option<String>,
    },
}

/// Federation for one base URL.
pub struct Federation {
    base: String,
    rule: String,
    organization: String,
    service_account: Option<String>,
    workspace: Option<String>,
    identity: Identity,
    cached: super::http::TokenCache,
}

impl Identity {
    /// Where `<prefix>_IDENTITY_TOKEN_FILE`, `<prefix>_IDENTITY_TOKEN` or the Actions OIDC URL
    /// (in that order) say the identity token comes from; `None` when none is set.
    fn from_env(
        env: &dyn Fn(&str) -> Option<String>,
        prefix: &str,
        audience: Option<String>,
    ) -> Option<Identity> {
        let get = |k: &str| env(k).filter(|v| !v.trim().is_empty());
        if let Some(file) = get(&format!("{prefix}_IDENTITY_TOKEN_FILE")) {
            return Some(Identity::File(file));
        }
        if let Some(token) = get(&format!("{prefix}_IDENTITY_TOKEN")) {
            crate::secrets::register([token.clone()]);
            return Some(Identity::Value(Secret::new(token)));
        }
        let (url, token) = (
            get("ACTIONS_ID_TOKEN_REQUEST_URL")?,
            get("ACTIONS_ID_TOKEN_REQUEST_TOKEN")?,
        );
        Some(Identity::Actions {
            url,
            token: Secret::new(token),
            audience,
        })
    }

    /// The error for a federation set up without any identity token.
    fn missing(prefix: &str, set: &str) -> String {
        format!(
            "{set} is set but there is no identity token: set {prefix}_IDENTITY_TOKEN_FILE or {prefix}_IDENTITY_TOKEN, or give the job `permissions: id-token: write`"
        )
    }

    /// The identity token, read or fetched now (a registered secret).
    async fn token(&self, prefix: &str) -> Result<String, String> {
        let token = match self {
            Identity::File(path) => std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read {prefix}_IDENTITY_TOKEN_FILE ({path}): {e}"))?
                .trim()
                .to_string(),
            Identity::Value(v) => v.expose().to_string(),
            Identity::Actions {
                url,
                token,
                audience,
            } => {
                let url = match audience {
                    Some(a) => format!("{url}&audience={}", crate::text::percent_encode(a)),
                    None => url.clone(),
                };
                let r = client()?
                    .get(&url)
                    .header("authorization", format!("bearer {}", token.expose()))
                    .send()
                    .await
                    .map_err(|e| format!("the Actions OIDC token request: {e}"))?;
                let status = r.status().as_u16();
                let v: Value = r.json().await.unwrap_or_default();
                v["value"].as_str().map(str::to_string).ok_or_else(|| {
                    format!("the Actions OIDC token request answered HTTP {status} without a token (does the job have `permissions: id-token: write`?)")
                })?
            }
        };
        if token.is_empty() {
            return Err(format!("the identity token for {prefix} is empty"));
        }
        crate::secrets::register([token.clone()]);
        Ok(token)
    }
}

/// The federation the environment sets up (`ANTHROPIC_FEDERATION_RULE_ID` and
/// `ANTHROPIC_ORGANIZATION_ID`), or `None`; `Err` when it is set up without an identity token.
pub fn from_env(
    env: &dyn Fn(&str) -> Option<String>,
    base: &str,
    audience: Option<String>,
) -> Result<Option<Federation>, String> {
    let get = |k: &str| env(k).filter(|v| !v.trim().is_empty());
    let (Some(rule), Some(organization)) = (
        get("ANTHROPIC_FEDERATION_RULE_ID"),
        get("ANTHROPIC_ORGANIZATION_ID"),
    ) else {
        return Ok(None);
    };
    let identity = Identity::from_env(env, "ANTHROPIC", audience)
        .ok_or_else(|| Identity::missing("ANTHROPIC", "ANTHROPIC_FEDERATION_RULE_ID"))?;
    Ok(Some(Federation {
        base: base
            .trim_end_matches('/')
            .trim_end_matches("/v1")
            .to_string(),
        rule,
        organization,
        service_account: get("ANTHROPIC_SERVICE_ACCOUNT_ID"),
        workspace: get("ANTHROPIC_WORKSPACE_ID"),
        identity,
        cached: Default::default(),
    }))
}

fn client() -> Result<reqwest::Client, String> {
    super::http::https_client(Duration::from_secs(30))
}

/// POSTs a token request as JSON and keeps the access token it answers with. `refused` names
/// what to check when the exchange says no.
async fn exchange(
    cached: &super::http::TokenCache,
    url: &str,
    headers: &[(&'static str, &str)],
    body: &Value,
    refused: &str,
) -> Result<Secret, String> {
    let mut request = client()?.post(url).json(body);
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    let r = request
        .send()
        .await
        .map_err(|e| format!("the token exchange at {url}: {e}"))?;
    let status = r.status().as_u16();
    let answer: Value = r.json().await.unwrap_or_default();
    if status != 200 {
        // Anthropic answers `{"error": {"message"}}`, RFC 6749 servers `error` and
        // `error_description`.
        let text = |p: &str| answer.pointer(p).and_then(Value::as_str);
        let why = match (text("/error"), text("/error_description")) {
            (Some(code), Some(description)) => format!("{code}: {description}"),
            (Some(code), None) => code.to_string(),
            _ => text("/error/message").unwrap_or_default().to_string(),
        };
        return Err(format!("{refused} was refused (HTTP {status}: {why})"));
    }
    let token = answer["access_token"]
        .as_str()
        .filter(|t| !t.is_empty())
        .ok_or("the token exchange answered without `access_token`")?
        .to_string();
    crate::secrets::register([token.clone()]);
    let lifetime =
        Duration::from_secs_f64(answer["expires_in"].as_f64().unwrap_or(3600.0).max(0.0));
    let token = Secret::new(token);
    cached.keep(token.clone(), lifetime);
    Ok(token)
}

impl Federation {
    async fn access_token(&self) -> Result<Secret, String> {
        if let Some(t) = self.cached.fresh() {
            return Ok(t);
        }
        let assertion = self.identity.token("ANTHROPIC").await?;
        let mut body = json!({
            "grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer",
            "assertion": assertion,
            "federation_rule_id": self.rule,
            "organization_id": self.organization,
        });
        if let Some(s) = &self.service_account {
            body["service_account_id"] = json!(s);
        }
        if let Some(w) = &self.workspace {
            body["workspace_id"] = json!(w);
        }
        let url = format!("{}/v1/oauth/token", self.base);
        let refused = format!(
            "the token exchange for ANTHROPIC_FEDERATION_RULE_ID {}",
            self.rule
        );
        exchange(
            &self.cached,
            &url,
            &[("anthropic-beta", EXCHANGE_BETA)],
            &body,
            &refused,
        )
        .await
    }
}

impl BearerToken for Federation {
    fn bearer_token(&self) -> BoxFuture<'_, Result<Secret, String>> {
        Box::pin(self.access_token())
    }

    fn check(&self) -> String {
        "ANTHROPIC_FEDERATION_RULE_ID, ANTHROPIC_ORGANIZATION_ID and the identity token".into()
    }

    fn extra_headers(&self) -> Vec<(&'static str, String)> {
        vec![("anthropic-beta", OAUTH_BETA.to_string())]
    }
}

/// OpenAI's token endpoint, as the `openai` SDK's `DEFAULT_TOKEN_EXCHANGE_URL`.
pub const OPENAI_TOKEN_EXCHANGE_URL: &str = "https://auth.openai.com/oauth/token";

/// OpenAI workload identity: the identity token traded for an access token by RFC 8693 token
/// exchange, as the `openai` SDK's `WorkloadIdentityAuth` sends it.
pub struct WorkloadIdentity {
    url: String,
    provider: String,
    service_account: String,
    identity: Identity,
    cached: super::http::TokenCache,
}

/// The workload identity the environment sets up (`OPENAI_IDENTITY_PROVIDER_ID` and
/// `OPENAI_SERVICE_ACCOUNT_ID`; the endpoint `OPENAI_TOKEN_EXCHANGE_URL`, else OpenAI's), or
/// `None`; `Err` when it is half set up or has no identity token.
pub fn openai_from_env(
    env: &dyn Fn(&str) -> Option<String>,
    audience: Option<String>,
) -> Result<Option<WorkloadIdentity>, String> {
    let get = |k: &str| env(k).filter(|v| !v.trim().is_empty());
    let (provider, service_account) = match (
        get("OPENAI_IDENTITY_PROVIDER_ID"),
        get("OPENAI_SERVICE_ACCOUNT_ID"),
    ) {
        (None, None) => return Ok(None),
        (Some(p), Some(s)) => (p, s),
        (Some(_), None) => {
            return Err("OPENAI_IDENTITY_PROVIDER_ID is set without OPENAI_SERVICE_ACCOUNT_ID (workload identity needs both)".into());
        }
        (None, Some(_)) => {
            return Err("OPENAI_SERVICE_ACCOUNT_ID is set without OPENAI_IDENTITY_PROVIDER_ID (workload identity needs both)".into());
        }
    };
    let identity = Identity::from_env(env, "OPENAI", audience)
        .ok_or_else(|| Identity::missing("OPENAI", "OPENAI_IDENTITY_PROVIDER_ID"))?;
    Ok(Some(WorkloadIdentity {
        url: get("OPENAI_TOKEN_EXCHANGE_URL").unwrap_or_else(|| OPENAI_TOKEN_EXCHANGE_URL.into()),
        provider,
        service_account,
        identity,
        cached: Default::default(),
    }))
}

impl WorkloadIdentity {
    async fn access_token(&self) -> Result<Secret, String> {
        if let Some(t) = self.cached.fresh() {
            return Ok(t);
        }
        let subject = self.identity.token("OPENAI").await?;
        let body = json!({
            "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
            "subject_token": subject,
            "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
            "identity_provider_id": self.provider,
            "service_account_id": self.service_account,
        });
        let refused = format!(
            "the token exchange for OPENAI_IDENTITY_PROVIDER_ID {}",
            self.provider
        );
        exchange(&self.cached, &self.url, &[], &body, &refused).await
    }
}

impl BearerToken for WorkloadIdentity {
    fn bearer_token(&self) -> BoxFuture<'_, Result<Secret, String>> {
        Box::pin(self.access_token())
    }

    fn check(&self) -> String {
        "OPENAI_IDENTITY_PROVIDER_ID, OPENAI_SERVICE_ACCOUNT_ID and the identity token".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn openai_workload_identity_needs_both_ids_and_an_identity_token() {
        assert!(openai_from_env(&env(&[]), None).unwrap().is_none());
        let half = openai_from_env(&env(&[("OPENAI_IDENTITY_PROVIDER_ID", "idp")]), None);
        assert!(half.err().unwrap().contains("OPENAI_SERVICE_ACCOUNT_ID"));
        let half = openai_from_env(&env(&[("OPENAI_SERVICE_ACCOUNT_ID", "svc")]), None);
        assert!(half.err().unwrap().contains("OPENAI_IDENTITY_PROVIDER_ID"));
        let ids = [
            ("OPENAI_IDENTITY_PROVIDER_ID", "idp"),
            ("OPENAI_SERVICE_ACCOUNT_ID", "svc"),
        ];
        let none = openai_from_env(&env(&ids), None).err().unwrap();
        assert!(
            none.contains("OPENAI_IDENTITY_TOKEN_FILE") && none.contains("id-token: write"),
            "{none}"
        );
        let mut with_file = ids.to_vec();
        with_file.push(("OPENAI_IDENTITY_TOKEN_FILE", "/run/token"));
        let wi = openai_from_env(&env(&with_file), None).unwrap().unwrap();
        assert_eq!(wi.url, OPENAI_TOKEN_EXCHANGE_URL);
        assert!(matches!(wi.identity, Identity::File(ref f) if f == "/run/token"));
        // The Actions OIDC URL when no token is given; a file wins over it.
        let mut actions = ids.to_vec();
        actions.extend([
            ("ACTIONS_ID_TOKEN_REQUEST_URL", "https://runner/oidc?x=1"),
            ("ACTIONS_ID_TOKEN_REQUEST_TOKEN", "req"),
        ]);
        let wi = openai_from_env(&env(&actions), Some("api://openai".into()))
            .unwrap()
            .unwrap();
        assert!(
            matches!(wi.identity, Identity::Actions { ref audience, .. } if audience.as_deref() == Some("api://openai"))
        );
    }
}
