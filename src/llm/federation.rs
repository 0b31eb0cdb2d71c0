//! Anthropic workload identity federation (SPEC §5.1), as the `anthropic` SDK's
//! `WorkloadIdentityCredentials` does it: an identity token (a JWT — the job's OIDC token) from
//! `ANTHROPIC_IDENTITY_TOKEN_FILE`, `ANTHROPIC_IDENTITY_TOKEN` or, in GitHub Actions, the runner's
//! OIDC URL (`ACTIONS_ID_TOKEN_REQUEST_URL` with its request token; audience from the
//! `oidc-audience` input) is exchanged at `{base}/v1/oauth/token` (RFC 7523 jwt-bearer, with the
//! federation rule and organization; `anthropic-beta: oauth-2025-04-20,oidc-federation-2026-04-01`)
//! for an access token, sent as `Authorization: Bearer` with `anthropic-beta: oauth-2025-04-20`.
//! Fetched again five minutes before it expires. The identity token, the request token and the
//! access token are secrets.

use std::time::Duration;

use serde_json::{Value, json};

use super::BoxFuture;
use super::http::Authorize;
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
    let identity = if let Some(file) = get("ANTHROPIC_IDENTITY_TOKEN_FILE") {
        Identity::File(file)
    } else if let Some(token) = get("ANTHROPIC_IDENTITY_TOKEN") {
        crate::secrets::register([token.clone()]);
        Identity::Value(Secret::new(token))
    } else if let (Some(url), Some(token)) = (
        get("ACTIONS_ID_TOKEN_REQUEST_URL"),
        get("ACTIONS_ID_TOKEN_REQUEST_TOKEN"),
    ) {
        Identity::Actions {
            url,
            token: Secret::new(token),
            audience,
        }
    } else {
        return Err("ANTHROPIC_FEDERATION_RULE_ID is set but there is no identity token: set ANTHROPIC_IDENTITY_TOKEN_FILE or ANTHROPIC_IDENTITY_TOKEN, or give the job `permissions: id-token: write`".into());
    };
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

impl Federation {
    async fn identity_token(&self) -> Result<String, String> {
        let token = match &self.identity {
            Identity::File(path) => std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read ANTHROPIC_IDENTITY_TOKEN_FILE ({path}): {e}"))?
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
        crate::secrets::register([token.clone()]);
        Ok(token)
    }

    async fn access_token(&self) -> Result<Secret, String> {
        if let Some(t) = self.cached.fresh() {
            return Ok(t);
        }
        let assertion = self.identity_token().await?;
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
        let r = client()?
            .post(&url)
            .header("anthropic-beta", EXCHANGE_BETA)
            .json(&body)
            .send()
            .await
            .map_err(|e| format!("the token exchange at {url}: {e}"))?;
        let status = r.status().as_u16();
        let answer: Value = r.json().await.unwrap_or_default();
        if status != 200 {
            return Err(format!(
                "the token exchange for ANTHROPIC_FEDERATION_RULE_ID {} was refused (HTTP {status}: {})",
                self.rule,
                answer
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
            ));
        }
        let token = answer["access_token"]
            .as_str()
            .ok_or("the token exchange answered without `access_token`")?
            .to_string();
        crate::secrets::register([token.clone()]);
        let lifetime = Duration::from_secs(answer["expires_in"].as_u64().unwrap_or(3600));
        let token = Secret::new(token);
        self.cached.keep(token.clone(), lifetime);
        Ok(token)
    }
}

impl Authorize for Federation {
    fn headers<'a>(
        &'a self,
        _url: &'a str,
        _body: &'a [u8],
    ) -> BoxFuture<'a, Result<Vec<(&'static str, String)>, String>> {
        Box::pin(async move {
            let token = self.access_token().await.map_err(|e| {
                format!("{e} (check ANTHROPIC_FEDERATION_RULE_ID, ANTHROPIC_ORGANIZATION_ID and the identity token)")
            })?;
            Ok(vec![
                ("authorization", format!("Bearer {}", token.expose())),
                ("anthropic-beta", OAUTH_BETA.to_string()),
            ])
        })
    }
}
