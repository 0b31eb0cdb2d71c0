//! Google credentials for Vertex AI, as Application Default Credentials read them (SPEC §5.1):
//!
//! 1. `CLOUDSDK_AUTH_ACCESS_TOKEN`: an access token as it is;
//! 2. `GOOGLE_APPLICATION_CREDENTIALS` naming an `external_account` file (what
//!    `google-github-actions/auth` writes): the subject token read from a file or fetched from a
//!    URL with the file's headers (the Actions OIDC URL), exchanged at the file's `token_url`
//!    (RFC 8693 token exchange), then — with `service_account_impersonation_url` — traded for the
//!    service account's token;
//! 3. … or naming a `service_account` key: a JWT assertion signed RS256 (ring) exchanged at its
//!    `token_uri`.
//!
//! Tokens are kept until five minutes before they expire, then fetched again. Every token and the
//! file's subject-token headers are secrets.

use std::time::{Duration, SystemTime};

use base64::Engine as _;
use serde_json::{Value, json};

use super::BoxFuture;
use super::http::BearerToken;
use crate::secrets::Secret;

/// The scope Vertex AI takes.
pub const SCOPE: &str = "https://www.googleapis.com/auth/cloud-platform";

/// Where Vertex's bearer token comes from.
pub struct GoogleAuth {
    source: Source,
    cached: super::http::TokenCache,
    /// The variable to check when it is refused.
    pub origin: String,
    /// The project the credentials name (`quota_project_id`, a service account's `project_id`).
    pub project: Option<String>,
}

enum Source {
    Token(Secret),
    External(Value),
    ServiceAccount(Value),
}

/// The credentials of the environment; `Err` says what to set.
pub fn chain(env: &dyn Fn(&str) -> Option<String>) -> Result<GoogleAuth, String> {
    let get = |k: &str| env(k).filter(|v| !v.trim().is_empty());
    let auth = |source, origin: &str, project| GoogleAuth {
        source,
        cached: Default::default(),
        origin: origin.to_string(),
        project,
    };
    if let Some(token) = get("CLOUDSDK_AUTH_ACCESS_TOKEN") {
        crate::secrets::register([token.clone()]);
        return Ok(auth(
            Source::Token(Secret::new(token)),
            "CLOUDSDK_AUTH_ACCESS_TOKEN",
            None,
        ));
    }
    let Some(path) = get("GOOGLE_APPLICATION_CREDENTIALS") else {
        return Err("no Google credentials: set GOOGLE_APPLICATION_CREDENTIALS (google-github-actions/auth sets it) or CLOUDSDK_AUTH_ACCESS_TOKEN".into());
    };
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read GOOGLE_APPLICATION_CREDENTIALS ({path}): {e}"))?;
    let file: Value = serde_json::from_str(&text)
        .map_err(|e| format!("GOOGLE_APPLICATION_CREDENTIALS ({path}) is not JSON: {e}"))?;
    let project = file["quota_project_id"]
        .as_str()
        .or_else(|| file["project_id"].as_str())
        .map(str::to_string);
    // What the file holds that opens doors: the private key, the subject token's headers.
    let mut secrets: Vec<String> = Vec::new();
    secrets.extend(file["private_key"].as_str().map(str::to_string));
    if let Some(headers) = file
        .pointer("/credential_source/headers")
        .and_then(Value::as_object)
    {
        secrets.extend(headers.values().filter_map(|v| v.as_str()).map(|v| {
            v.trim_start_matches("Bearer ")
                .trim_start_matches("bearer ")
                .to_string()
        }));
    }
    crate::secrets::register(secrets);
    match file["type"].as_str() {
        Some("external_account") => Ok(auth(
            Source::External(file),
            "GOOGLE_APPLICATION_CREDENTIALS (external_account)",
            project,
        )),
        Some("service_account") => Ok(auth(
            Source::ServiceAccount(file),
            "GOOGLE_APPLICATION_CREDENTIALS (service_account)",
            project,
        )),
        other => Err(format!(
            "GOOGLE_APPLICATION_CREDENTIALS ({path}): type {} is not supported (external_account or service_account)",
            other.unwrap_or("(none)")
        )),
    }
}

impl GoogleAuth {
    async fn token(&self) -> Result<Secret, String> {
        if let Some(t) = self.cached.fresh() {
            return Ok(t);
        }
        let (token, lifetime) = match &self.source {
            Source::Token(t) => return Ok(t.clone()),
            Source::External(file) => external_account(file).await?,
            Source::ServiceAccount(file) => service_account(file).await?,
        };
        crate::secrets::register([token.clone()]);
        let token = Secret::new(token);
        self.cached.keep(token.clone(), lifetime);
        Ok(token)
    }
}

impl BearerToken for GoogleAuth {
    fn bearer_token(&self) -> BoxFuture<'_, Result<Secret, String>> {
        Box::pin(self.token())
    }

    fn check(&self) -> String {
        self.origin.clone()
    }
}

fn client() -> Result<reqwest::Client, String> {
    super::http::https_client(Duration::from_secs(30))
}

/// A token endpoint's answer: the token and how long it lives.
fn token_of(answer: &Value, field: &str) -> Result<(String, Duration), String> {
    let token = answer[field]
        .as_str()
        .ok_or_else(|| format!("the answer has no `{field}`"))?
        .to_string();
    let lifetime = answer["expires_in"]
        .as_u64()
        .map(Duration::from_secs)
        .or_else(|| {
            answer["expireTime"]
                .as_str()
                .and_then(|t| humantime::parse_rfc3339_weak(t).ok())
                .and_then(|t| t.duration_since(SystemTime::now()).ok())
        })
        .unwrap_or(Duration::from_secs(3600));
    Ok((token, lifetime))
}

async fn answer_json(r: reqwest::Response, what: &str) -> Result<Value, String> {
    let status = r.status().as_u16();
    let text = r.text().await.map_err(|e| format!("{what}: {e}"))?;
    if status != 200 {
        let said = serde_json::from_str::<Value>(&text)
            .ok()
            .and_then(|v| {
                v["error_description"]
                    .as_str()
                    .or_else(|| v.pointer("/error/message").and_then(Value::as_str))
                    .or_else(|| v["error"].as_str())
                    .map(str::to_string)
            })
            .unwrap_or_default();
        return Err(format!("{what} was refused (HTTP {status}): {said}"));
    }
    serde_json::from_str(&text).map_err(|e| format!("{what}: the answer is not JSON ({e})"))
}

/// The `external_account` flow: subject token, STS exchange, optional impersonation.
async fn external_account(file: &Value) -> Result<(String, Duration), String> {
    let source = &file["credential_source"];
    let raw = if let Some(path) = source["file"].as_str() {
        std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read the subject token file {path}: {e}"))?
    } else if let Some(url) = source["url"].as_str() {
        let mut request = client()?.get(url);
        if let Some(headers) = source["headers"].as_object() {
            for (k, v) in headers {
                request = request.header(k, v.as_str().unwrap_or_default());
            }
        }
        let r = request
            .send()
            .await
            .map_err(|e| format!("the subject token URL: {e}"))?;
        let status = r.status().as_u16();
        let text = r.text().await.unwrap_or_default();
        if status != 200 {
            return Err(format!("the subject token URL answered HTTP {status}"));
        }
        text
    } else {
        return Err("the external_account file has no credential_source file or url".into());
    };
    let subject = match source.pointer("/format/type").and_then(Value::as_str) {
        Some("json") => {
            let field = source
                .pointer("/format/subject_token_field_name")
                .and_then(Value::as_str)
                .unwrap_or("value");
            serde_json::from_str::<Value>(&raw)
                .ok()
                .and_then(|v| v[field].as_str().map(str::to_string))
                .ok_or_else(|| format!("the subject token answer has no `{field}`"))?
        }
        _ => raw.trim().to_string(),
    };
    crate::secrets::register([subject.clone()]);
    let token_url = file["token_url"]
        .as_str()
        .unwrap_or("https://sts.googleapis.com/v1/token");
    let impersonation = file["service_account_impersonation_url"].as_str();
    // As google-auth asks: the IAM scope for a token that only impersonates, else Vertex's.
    let scope = match impersonation {
        Some(_) => "https://www.googleapis.com/auth/iam",
        None => SCOPE,
    };
    let form = [
        (
            "grant_type",
            "urn:ietf:params:oauth:grant-type:token-exchange",
        ),
        ("audience", file["audience"].as_str().unwrap_or_default()),
        ("scope", scope),
        (
            "requested_token_type",
            "urn:ietf:params:oauth:token-type:access_token",
        ),
        ("subject_token", subject.as_str()),
        (
            "subject_token_type",
            file["subject_token_type"]
                .as_str()
                .unwrap_or("urn:ietf:params:oauth:token-type:jwt"),
        ),
    ];
    let r = client()?
        .post(token_url)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form_body(&form))
        .send()
        .await
        .map_err(|e| format!("the STS token exchange at {token_url}: {e}"))?;
    let (federated, lifetime) = token_of(
        &answer_json(r, "the STS token exchange").await?,
        "access_token",
    )?;
    crate::secrets::register([federated.clone()]);
    let Some(url) = impersonation else {
        return Ok((federated, lifetime));
    };
    let r = client()?
        .post(url)
        .bearer_auth(&federated)
        .json(&json!({"scope": [SCOPE], "lifetime": "3600s"}))
        .send()
        .await
        .map_err(|e| format!("the service account impersonation at {url}: {e}"))?;
    token_of(
        &answer_json(r, "the service account impersonation").await?,
        "accessToken",
    )
}

/// The `service_account` flow: an RS256 JWT assertion for the token endpoint.
async fn service_account(file: &Value) -> Result<(String, Duration), String> {
    let email = file["client_email"]
        .as_str()
        .ok_or("the service_account file has no client_email")?;
    let token_uri = file["token_uri"]
        .as_str()
        .unwrap_or("https://oauth2.googleapis.com/token");
    let pem = file["private_key"]
        .as_str()
        .ok_or("the service_account file has no private_key")?;
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs();
    let b64 = |b: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b);
    let header = b64(
        json!({"alg": "RS256", "typ": "JWT", "kid": file["private_key_id"]})
            .to_string()
            .as_bytes(),
    );
    let claims = b64(json!({"iss": email, "scope": SCOPE, "aud": token_uri,
        "iat": now, "exp": now + 3600})
    .to_string()
    .as_bytes());
    let signing_input = format!("{header}.{claims}");
    let der: String = pem
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .collect::<Vec<_>>()
        .join("");
    let der = base64::engine::general_purpose::STANDARD
        .decode(der.trim())
        .map_err(|e| format!("the service account's private_key is not PEM: {e}"))?;
    let key = ring::signature::RsaKeyPair::from_pkcs8(&der)
        .map_err(|e| format!("the service account's private_key is not a PKCS#8 RSA key: {e}"))?;
    let mut signature = vec![0u8; key.public().modulus_len()];
    key.sign(
        &ring::signature::RSA_PKCS1_SHA256,
        &ring::rand::SystemRandom::new(),
        signing_input.as_bytes(),
        &mut signature,
    )
    .map_err(|_| "cannot sign the service account's assertion".to_string())?;
    let assertion = format!("{signing_input}.{}", b64(&signature));
    let form = [
        ("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"),
        ("assertion", assertion.as_str()),
    ];
    let r = client()?
        .post(token_uri)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form_body(&form))
        .send()
        .await
        .map_err(|e| format!("the token endpoint {token_uri}: {e}"))?;
    token_of(
        &answer_json(r, "the service account's token request").await?,
        "access_token",
    )
}

fn form_body(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{k}={}", crate::text::percent_encode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chain_names_what_to_set_and_refuses_other_kinds() {
        let none = |_: &str| None;
        let err = chain(&none).err().unwrap();
        assert!(err.contains("GOOGLE_APPLICATION_CREDENTIALS"), "{err}");
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("adc.json");
        std::fs::write(&file, r#"{"type": "authorized_user"}"#).unwrap();
        let path = file.display().to_string();
        let env = move |k: &str| (k == "GOOGLE_APPLICATION_CREDENTIALS").then(|| path.clone());
        let err = chain(&env).err().unwrap();
        assert!(err.contains("authorized_user"), "{err}");
        let token = |k: &str| (k == "CLOUDSDK_AUTH_ACCESS_TOKEN").then(|| "ya29.x".to_string());
        assert_eq!(chain(&token).unwrap().origin, "CLOUDSDK_AUTH_ACCESS_TOKEN");
    }
}
