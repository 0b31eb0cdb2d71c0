//! Microsoft Entra ID tokens for Claude on Microsoft Foundry, through workload identity (what
//! `azure/login` with OIDC and Azure's workload identity webhook leave): `AZURE_CLIENT_ID`,
//! `AZURE_TENANT_ID` and the federated token in `AZURE_FEDERATED_TOKEN_FILE`, exchanged at the
//! tenant's token endpoint (`AZURE_AUTHORITY_HOST`, else `https://login.microsoftonline.com`) as a
//! client assertion, for the scope `https://ai.azure.com/.default`. Tokens are kept until five
//! minutes before they expire; each is a secret.

use std::time::Duration;

use serde_json::Value;

use super::BoxFuture;
use super::http::BearerToken;
use crate::secrets::Secret;

/// The scope Foundry's Anthropic endpoint takes.
pub const SCOPE: &str = "https://ai.azure.com/.default";

/// Workload identity: a federated token traded for an Entra access token.
pub struct EntraAuth {
    client_id: String,
    tenant_id: String,
    token_file: String,
    authority: String,
    cached: super::http::TokenCache,
}

/// The workload identity of the environment, if its three variables are set.
pub fn workload_identity(env: &dyn Fn(&str) -> Option<String>) -> Option<EntraAuth> {
    let get = |k: &str| env(k).filter(|v| !v.trim().is_empty());
    Some(EntraAuth {
        client_id: get("AZURE_CLIENT_ID")?,
        tenant_id: get("AZURE_TENANT_ID")?,
        token_file: get("AZURE_FEDERATED_TOKEN_FILE")?,
        authority: get("AZURE_AUTHORITY_HOST")
            .unwrap_or_else(|| "https://login.microsoftonline.com".into()),
        cached: Default::default(),
    })
}

impl EntraAuth {
    async fn token(&self) -> Result<Secret, String> {
        if let Some(t) = self.cached.fresh() {
            return Ok(t);
        }
        let assertion = std::fs::read_to_string(&self.token_file).map_err(|e| {
            format!(
                "cannot read AZURE_FEDERATED_TOKEN_FILE ({}): {e}",
                self.token_file
            )
        })?;
        crate::secrets::register([assertion.trim().to_string()]);
        let url = format!(
            "{}/{}/oauth2/v2.0/token",
            self.authority.trim_end_matches('/'),
            self.tenant_id
        );
        let form = [
            ("client_id", self.client_id.as_str()),
            ("scope", SCOPE),
            (
                "client_assertion_type",
                "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
            ),
            ("client_assertion", assertion.trim()),
            ("grant_type", "client_credentials"),
        ];
        let body = form
            .iter()
            .map(|(k, v)| format!("{k}={}", crate::text::percent_encode(v)))
            .collect::<Vec<_>>()
            .join("&");
        let r = super::http::https_client(Duration::from_secs(30))?
            .post(&url)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body)
            .send()
            .await
            .map_err(|e| format!("the Entra token endpoint {url}: {e}"))?;
        let status = r.status().as_u16();
        let answer: Value = r.json().await.unwrap_or_default();
        if status != 200 {
            return Err(format!(
                "Entra ID refused the federated token for AZURE_CLIENT_ID {} (HTTP {status}: {})",
                self.client_id,
                answer["error_description"]
                    .as_str()
                    .or(answer["error"].as_str())
                    .unwrap_or_default()
            ));
        }
        let token = answer["access_token"]
            .as_str()
            .ok_or("Entra ID answered without `access_token`")?
            .to_string();
        crate::secrets::register([token.clone()]);
        let lifetime = answer["expires_in"].as_u64().unwrap_or(3600);
        let token = Secret::new(token);
        self.cached
            .keep(token.clone(), Duration::from_secs(lifetime));
        Ok(token)
    }
}

impl BearerToken for EntraAuth {
    fn bearer_token(&self) -> BoxFuture<'_, Result<Secret, String>> {
        Box::pin(self.token())
    }

    fn check(&self) -> String {
        "AZURE_CLIENT_ID, AZURE_TENANT_ID, AZURE_FEDERATED_TOKEN_FILE".into()
    }
}
