//! AWS credentials for Bedrock, read in the AWS SDKs' order (SPEC §5.1), and SigV4 signing of
//! each request over the exact bytes sent (`aws-sigv4`, service `bedrock`).
//!
//! 1. `AWS_BEARER_TOKEN_BEDROCK`: a Bedrock API key, sent as `Authorization: Bearer`;
//! 2. `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY` / `AWS_SESSION_TOKEN` (what
//!    `aws-actions/configure-aws-credentials` exports);
//! 3. `AWS_WEB_IDENTITY_TOKEN_FILE` + `AWS_ROLE_ARN`: STS `AssumeRoleWithWebIdentity` (query
//!    protocol, XML answer; `AWS_ENDPOINT_URL_STS`), refreshed before the keys expire;
//! 4. `AWS_PROFILE` (else `default`) in the shared credentials file
//!    (`AWS_SHARED_CREDENTIALS_FILE`, else `~/.aws/credentials`).
//!
//! Every key, token and signature is a secret: registered for redaction, never in an error.

use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use super::BoxFuture;
use super::http::Authorize;
use crate::secrets::Secret;

/// How a Bedrock request is authenticated.
pub enum BedrockAuth {
    /// A Bedrock API key (`Authorization: Bearer …`).
    Bearer(Secret),
    /// SigV4 with keys from the credential chain.
    SigV4(Box<SigV4>),
}

/// Access keys, and when temporary ones expire.
#[derive(Clone)]
pub struct Keys {
    pub access_key_id: String,
    pub secret: Secret,
    pub session_token: Option<Secret>,
    pub expires: Option<SystemTime>,
}

/// Where the keys come from.
enum Source {
    Static(Keys),
    WebIdentity {
        token_file: String,
        role_arn: String,
        session_name: String,
        sts_url: String,
        cached: Mutex<Option<Keys>>,
    },
}

/// SigV4 signing for one region and service, with keys from a [`Source`].
pub struct SigV4 {
    source: Source,
    region: String,
    service: &'static str,
    /// Where the keys came from, for errors (`AWS_ACCESS_KEY_ID`, `AWS_ROLE_ARN`, …).
    pub origin: String,
}

/// Refresh temporary keys this long before they expire.
const REFRESH_MARGIN: Duration = Duration::from_secs(5 * 60);

/// The credential chain for `region`. `env` reads qa-loop's environment; `Err` says what to set.
pub fn chain(env: &dyn Fn(&str) -> Option<String>, region: &str) -> Result<BedrockAuth, String> {
    let get = |k: &str| env(k).filter(|v| !v.trim().is_empty());
    if let Some(token) = get("AWS_BEARER_TOKEN_BEDROCK") {
        crate::secrets::register([token.clone()]);
        return Ok(BedrockAuth::Bearer(Secret::new(token)));
    }
    let signer = |source: Source, origin: &str| {
        BedrockAuth::SigV4(Box::new(SigV4 {
            source,
            region: region.to_string(),
            service: "bedrock",
            origin: origin.to_string(),
        }))
    };
    if let (Some(id), Some(secret)) = (get("AWS_ACCESS_KEY_ID"), get("AWS_SECRET_ACCESS_KEY")) {
        let token = get("AWS_SESSION_TOKEN");
        crate::secrets::register([secret.clone()].into_iter().chain(token.clone()));
        let keys = Keys {
            access_key_id: id,
            secret: Secret::new(secret),
            session_token: token.map(Secret::new),
            expires: None,
        };
        return Ok(signer(
            Source::Static(keys),
            "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY",
        ));
    }
    if let (Some(token_file), Some(role_arn)) =
        (get("AWS_WEB_IDENTITY_TOKEN_FILE"), get("AWS_ROLE_ARN"))
    {
        let sts_url = get("AWS_ENDPOINT_URL_STS")
            .or_else(|| get("AWS_ENDPOINT_URL"))
            .unwrap_or_else(|| format!("https://sts.{region}.amazonaws.com"));
        let source = Source::WebIdentity {
            token_file,
            role_arn,
            session_name: get("AWS_ROLE_SESSION_NAME").unwrap_or_else(|| "qa-loop".into()),
            sts_url,
            cached: Mutex::new(None),
        };
        return Ok(signer(source, "AWS_WEB_IDENTITY_TOKEN_FILE/AWS_ROLE_ARN"));
    }
    let profile = get("AWS_PROFILE").unwrap_or_else(|| "default".into());
    let file = get("AWS_SHARED_CREDENTIALS_FILE")
        .or_else(|| get("HOME").map(|h| format!("{h}/.aws/credentials")));
    if let Some(keys) = file
        .and_then(|f| std::fs::read_to_string(f).ok())
        .and_then(|t| profile_keys(&t, &profile))
    {
        crate::secrets::register(
            [keys.secret.expose().to_string()]
                .into_iter()
                .chain(keys.session_token.as_ref().map(|t| t.expose().to_string())),
        );
        return Ok(signer(
            Source::Static(keys),
            &format!("AWS_PROFILE `{profile}`"),
        ));
    }
    Err("no AWS credentials: set AWS_BEARER_TOKEN_BEDROCK (a Bedrock API key), or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (aws-actions/configure-aws-credentials exports them), or AWS_WEB_IDENTITY_TOKEN_FILE with AWS_ROLE_ARN, or AWS_PROFILE".into())
}

/// The keys of `[profile]` in a shared credentials file.
fn profile_keys(text: &str, profile: &str) -> Option<Keys> {
    let mut section = String::new();
    let (mut id, mut secret, mut token) = (None, None, None);
    for line in text.lines() {
        let line = line.trim();
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = name.trim().trim_start_matches("profile ").to_string();
            continue;
        }
        if section != profile {
            continue;
        }
        if let Some((k, v)) = line.split_once('=') {
            let v = v.trim().to_string();
            match k.trim() {
                "aws_access_key_id" => id = Some(v),
                "aws_secret_access_key" => secret = Some(v),
                "aws_session_token" => token = Some(v),
                _ => {}
            }
        }
    }
    Some(Keys {
        access_key_id: id?,
        secret: Secret::new(secret?),
        session_token: token.map(Secret::new),
        expires: None,
    })
}

impl SigV4 {
    /// The keys to sign with: static ones, or temporary ones from STS (exchanged again shortly
    /// before they expire).
    async fn keys(&self) -> Result<Keys, String> {
        match &self.source {
            Source::Static(k) => Ok(k.clone()),
            Source::WebIdentity {
                token_file,
                role_arn,
                session_name,
                sts_url,
                cached,
            } => {
                let fresh = |k: &Keys| {
                    k.expires
                        .is_none_or(|e| SystemTime::now() + REFRESH_MARGIN < e)
                };
                if let Some(k) = cached.lock().unwrap_or_else(|e| e.into_inner()).as_ref()
                    && fresh(k)
                {
                    return Ok(k.clone());
                }
                let token = std::fs::read_to_string(token_file).map_err(|e| {
                    format!("cannot read the web identity token (AWS_WEB_IDENTITY_TOKEN_FILE {token_file}): {e}")
                })?;
                let keys =
                    assume_role_with_web_identity(sts_url, role_arn, session_name, token.trim())
                        .await?;
                *cached.lock().unwrap_or_else(|e| e.into_inner()) = Some(keys.clone());
                Ok(keys)
            }
        }
    }
}

impl Authorize for SigV4 {
    fn headers<'a>(
        &'a self,
        url: &'a str,
        body: &'a [u8],
    ) -> BoxFuture<'a, Result<Vec<(&'static str, String)>, String>> {
        Box::pin(async move {
            let keys = self.keys().await?;
            sign(
                &keys,
                &self.region,
                self.service,
                "POST",
                url,
                body,
                SystemTime::now(),
            )
            .map_err(|e| {
                format!(
                    "cannot sign the request with the keys from {}: {e}",
                    self.origin
                )
            })
        })
    }
}

/// The SigV4 headers (`authorization`, `x-amz-date`, `x-amz-security-token`,
/// `x-amz-content-sha256` when asked) of one request, signed as AWS verifies it: the path
/// encoded twice (a non-S3 service), `content-type` signed with the body.
pub fn sign(
    keys: &Keys,
    region: &str,
    service: &str,
    method: &str,
    url: &str,
    body: &[u8],
    at: SystemTime,
) -> Result<Vec<(&'static str, String)>, String> {
    use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
    let identity: aws_smithy_runtime_api::client::identity::Identity =
        aws_credential_types::Credentials::new(
            &keys.access_key_id,
            keys.secret.expose(),
            keys.session_token.as_ref().map(|t| t.expose().to_string()),
            keys.expires,
            "qa-loop",
        )
        .into();
    let params = aws_sigv4::sign::v4::SigningParams::builder()
        .identity(&identity)
        .region(region)
        .name(service)
        .time(at)
        .settings(SigningSettings::default())
        .build()
        .map_err(|e| e.to_string())?
        .into();
    let headers = [("content-type", "application/json")];
    let request = SignableRequest::new(method, url, headers.into_iter(), SignableBody::Bytes(body))
        .map_err(|e| e.to_string())?;
    let (instructions, _) = sign(request, &params)
        .map_err(|e| e.to_string())?
        .into_parts();
    let mut out = Vec::new();
    for (name, value) in instructions.headers() {
        let name: &'static str = match name {
            "authorization" => "authorization",
            "x-amz-date" => "x-amz-date",
            "x-amz-security-token" => "x-amz-security-token",
            "x-amz-content-sha256" => "x-amz-content-sha256",
            _ => continue,
        };
        out.push((name, value.to_string()));
    }
    Ok(out)
}

/// STS `AssumeRoleWithWebIdentity` (unsigned, the query protocol as the AWS SDKs send it: a form
/// POST), its temporary keys read from the XML answer.
async fn assume_role_with_web_identity(
    sts_url: &str,
    role_arn: &str,
    session_name: &str,
    token: &str,
) -> Result<Keys, String> {
    let client = super::http::https_client(Duration::from_secs(30))?;
    let form = [
        ("Action", "AssumeRoleWithWebIdentity"),
        ("Version", "2011-06-15"),
        ("RoleArn", role_arn),
        ("RoleSessionName", session_name),
        ("WebIdentityToken", token),
    ];
    let body: String = form
        .iter()
        .map(|(k, v)| format!("{k}={}", crate::text::percent_encode(v)))
        .collect::<Vec<_>>()
        .join("&");
    let answer = client
        .post(sts_url)
        .header(
            "content-type",
            "application/x-www-form-urlencoded; charset=utf-8",
        )
        .body(body)
        .send()
        .await
        .map_err(|e| format!("STS AssumeRoleWithWebIdentity at {sts_url}: {e}"))?;
    let status = answer.status().as_u16();
    let text = answer.text().await.unwrap_or_default();
    let field = |name: &str| {
        let open = format!("<{name}>");
        let close = format!("</{name}>");
        let start = text.find(&open)? + open.len();
        let end = text[start..].find(&close)? + start;
        Some(text[start..end].trim().to_string())
    };
    if status != 200 {
        let said = field("Message").unwrap_or_default();
        let code = field("Code").unwrap_or_default();
        return Err(format!(
            "STS refused AssumeRoleWithWebIdentity for AWS_ROLE_ARN {role_arn} (HTTP {status} {code}: {said})"
        ));
    }
    let keys = Keys {
        access_key_id: field("AccessKeyId").ok_or("STS answered without `AccessKeyId`")?,
        secret: Secret::new(
            field("SecretAccessKey").ok_or("STS answered without `SecretAccessKey`")?,
        ),
        session_token: field("SessionToken").map(Secret::new),
        expires: field("Expiration").and_then(|e| humantime::parse_rfc3339_weak(&e).ok()),
    };
    crate::secrets::register(
        [keys.secret.expose().to_string()]
            .into_iter()
            .chain(keys.session_token.as_ref().map(|t| t.expose().to_string())),
    );
    Ok(keys)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
    }

    #[test]
    fn the_chain_reads_credentials_in_the_sdks_order() {
        let both = env(&[
            ("AWS_BEARER_TOKEN_BEDROCK", "bedrock-key"),
            ("AWS_ACCESS_KEY_ID", "AKID"),
            ("AWS_SECRET_ACCESS_KEY", "secret"),
        ]);
        assert!(matches!(
            chain(&both, "us-east-1"),
            Ok(BedrockAuth::Bearer(_))
        ));
        let keys = env(&[
            ("AWS_ACCESS_KEY_ID", "AKID"),
            ("AWS_SECRET_ACCESS_KEY", "secret"),
        ]);
        assert!(matches!(
            chain(&keys, "us-east-1"),
            Ok(BedrockAuth::SigV4(_))
        ));
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("credentials");
        std::fs::write(
            &file,
            "[default]\naws_access_key_id = A\naws_secret_access_key = B\n[ci]\naws_access_key_id = C\naws_secret_access_key = D\naws_session_token = E\n",
        )
        .unwrap();
        let k = profile_keys(&std::fs::read_to_string(&file).unwrap(), "ci").unwrap();
        assert_eq!(k.access_key_id, "C");
        assert_eq!(k.session_token.unwrap().expose(), "E");
        let path = file.display().to_string();
        let profile = env(&[
            ("AWS_SHARED_CREDENTIALS_FILE", &path),
            ("AWS_PROFILE", "ci"),
        ]);
        match chain(&profile, "eu-west-1") {
            Ok(BedrockAuth::SigV4(s)) => assert!(s.origin.contains("ci")),
            _ => panic!("the profile's keys"),
        }
        let none = env(&[]);
        let err = chain(&none, "us-east-1").err().unwrap();
        assert!(
            err.contains("AWS_ACCESS_KEY_ID") && err.contains("AWS_BEARER_TOKEN_BEDROCK"),
            "{err}"
        );
    }

    /// AWS's published SigV4 example keys; the signature is checked against botocore's own signer
    /// end to end (tests/cloud_providers.rs); here its shape.
    #[test]
    fn a_signature_names_the_scope_and_signs_the_content_type() {
        let keys = Keys {
            access_key_id: "AKIDEXAMPLE".into(),
            secret: Secret::new("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"),
            session_token: Some(Secret::new("TOKEN")),
            expires: None,
        };
        let at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_764_000_000);
        let h = sign(
            &keys,
            "us-east-1",
            "bedrock",
            "POST",
            "https://bedrock-runtime.us-east-1.amazonaws.com/model/us.anthropic.claude-sonnet-5-5-v1:0/invoke",
            b"{}",
            at,
        )
        .unwrap();
        let auth = &h.iter().find(|(n, _)| *n == "authorization").unwrap().1;
        assert!(
            auth.starts_with(
                "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20251124/us-east-1/bedrock/aws4_request"
            ),
            "{auth}"
        );
        assert!(
            auth.contains("SignedHeaders=content-type;host;x-amz-date;x-amz-security-token"),
            "{auth}"
        );
        assert!(
            h.iter()
                .any(|(n, v)| *n == "x-amz-security-token" && v == "TOKEN")
        );
    }
}
