//! A thin GitHub REST client on the same reqwest/rustls stack as the model providers, with
//! qa-loop's own retry policy:
//!
//! - reads (`GET`) are retried on 5xx, timeouts and connection errors, with backoff;
//! - a write (`POST`/`PATCH`/`PUT`/`DELETE`) is **never re-sent blindly**: after a 5xx or a
//!   timeout GitHub may have done it, so the caller gets [`GhError::Uncertain`] and looks up by
//!   marker before creating again;
//! - secondary rate limits (403/429 with `retry-after`, or an exhausted primary limit with
//!   `x-ratelimit-reset`) were refused before anything happened: any request waits and retries.
//!
//! The token is a sensitive header and is scrubbed from every error text.

use std::ops::ControlFlow;
use std::time::{Duration, SystemTime};

use reqwest::Method;
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::Value;

use crate::llm::http::retry_after;
use crate::retry::{Next, RetryPolicy};
use crate::secrets::Secret;

/// The REST API version qa-loop speaks.
pub const API_VERSION: &str = "2022-11-28";

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum GhError {
    /// GitHub answered with an error status (after retries, for reads).
    #[error("GitHub: {method} {path}: HTTP {status}: {message}")]
    Status {
        method: String,
        path: String,
        status: u16,
        message: String,
    },
    /// A write whose fate is unknown (5xx, timeout, cut connection): look up before redoing it.
    #[error("GitHub: {method} {path}: {message} (the write may or may not have happened)")]
    Uncertain {
        method: String,
        path: String,
        message: String,
    },
    /// Not reachable, or an answer that is not JSON.
    #[error("GitHub: {0}")]
    Transport(String),
}

impl GhError {
    pub fn status(&self) -> Option<u16> {
        match self {
            GhError::Status { status, .. } => Some(*status),
            _ => None,
        }
    }
}

/// One answer: the JSON body and the `Link` header's next page.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub status: u16,
    pub body: Value,
    pub next: Option<String>,
}

#[derive(Debug, Clone)]
pub struct GitHub {
    client: reqwest::Client,
    /// `https://api.github.com` or `https://HOST/api/v3`.
    api_url: String,
    token: Secret,
    pub retry: RetryPolicy,
    /// Requests sent (retries included), for the request-count benchmark.
    pub sent: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl GitHub {
    pub fn new(api_url: &str, token: Secret, retry: RetryPolicy) -> Result<Self, GhError> {
        let client = crate::llm::http::https_client(retry.timeout).map_err(GhError::Transport)?;
        Ok(GitHub {
            client,
            api_url: api_url.trim_end_matches('/').to_string(),
            token,
            retry,
            sent: Default::default(),
        })
    }

    pub async fn get(&self, path: &str) -> Result<Value, GhError> {
        Ok(self.send(Method::GET, path, None).await?.body)
    }

    /// Every page of a list (`per_page=100`, following `Link: rel="next"`), up to `max_pages`.
    pub async fn get_all(&self, path: &str, max_pages: usize) -> Result<Vec<Value>, GhError> {
        let sep = if path.contains('?') { '&' } else { '?' };
        let mut next = Some(format!("{path}{sep}per_page=100"));
        let mut out = Vec::new();
        for _ in 0..max_pages {
            let Some(url) = next.take() else { break };
            let answer = self.send(Method::GET, &url, None).await?;
            match answer.body {
                Value::Array(items) => out.extend(items),
                other => {
                    return Err(GhError::Transport(format!(
                        "GET {path}: expected a list, got {}",
                        excerpt(&other.to_string())
                    )));
                }
            }
            next = answer.next;
        }
        Ok(out)
    }

    pub async fn post(&self, path: &str, body: &Value) -> Result<Value, GhError> {
        Ok(self.send(Method::POST, path, Some(body)).await?.body)
    }

    pub async fn patch(&self, path: &str, body: &Value) -> Result<Value, GhError> {
        Ok(self.send(Method::PATCH, path, Some(body)).await?.body)
    }

    pub async fn delete(&self, path: &str) -> Result<(), GhError> {
        self.send(Method::DELETE, path, None).await.map(|_| ())
    }

    /// Sends one request with the retry policy above. `path` is relative to the API URL (or an
    /// absolute URL from a `Link` header on the same host).
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Answer, GhError> {
        let url = self.url_for(path)?;
        let shown = url.strip_prefix(&self.api_url).unwrap_or(&url).to_string();
        let headers = self.headers()?;
        let mut attempt = 0;
        loop {
            let request = self.request(&method, &url, &headers, body);
            self.sent.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let sent = request.send().await;
            let Failure {
                message,
                wait,
                safe_to_retry,
                status,
            } = match self.read_answer(sent, &method, &shown).await {
                ControlFlow::Break(result) => return result,
                ControlFlow::Continue(failure) => failure,
            };
            if !safe_to_retry {
                return Err(GhError::Uncertain {
                    method: method.to_string(),
                    path: shown,
                    message: if status > 0 {
                        format!("HTTP {status}: {message}")
                    } else {
                        message
                    },
                });
            }
            match self.retry.next(attempt, wait, crate::retry::jitter()) {
                Next::Retry(delay) => {
                    tracing::warn!(
                        attempt = attempt + 1,
                        delay_ms = delay.as_millis() as u64,
                        "GitHub {method} {shown}: {}; retrying",
                        if status > 0 {
                            format!("HTTP {status}")
                        } else {
                            message.clone()
                        }
                    );
                    tokio::time::sleep(delay).await;
                    attempt += 1;
                }
                Next::GiveUp if status > 0 => {
                    return Err(GhError::Status {
                        method: method.to_string(),
                        path: shown,
                        status,
                        message,
                    });
                }
                Next::GiveUp => {
                    return Err(GhError::Transport(format!("{method} {shown}: {message}")));
                }
            }
        }
    }

    /// The URL of `path`: relative to the API URL, or an absolute link that must stay on its host.
    fn url_for(&self, path: &str) -> Result<String, GhError> {
        if path.starts_with("http://") || path.starts_with("https://") {
            if !path.starts_with(&self.api_url) {
                return Err(GhError::Transport(format!(
                    "refusing to follow a link off the API host: {path}"
                )));
            }
            Ok(path.to_string())
        } else {
            Ok(format!("{}/{}", self.api_url, path.trim_start_matches('/')))
        }
    }

    /// The headers of every request: the token (sensitive), the media types, the API version.
    fn headers(&self) -> Result<HeaderMap, GhError> {
        let mut headers = HeaderMap::new();
        let mut auth =
            HeaderValue::from_str(&format!("Bearer {}", self.token.expose())).map_err(|_| {
                GhError::Transport("the GitHub token has characters HTTP does not allow".into())
            })?;
        auth.set_sensitive(true);
        headers.insert(reqwest::header::AUTHORIZATION, auth);
        // `application/json` too: GitHub's OpenAPI description lists it (prism checks).
        headers.insert(
            reqwest::header::ACCEPT,
            HeaderValue::from_static("application/vnd.github+json, application/json"),
        );
        headers.insert(
            "x-github-api-version",
            HeaderValue::from_static(API_VERSION),
        );
        Ok(headers)
    }

    /// One attempt's request, its JSON body (if any) redacted.
    fn request(
        &self,
        method: &Method,
        url: &str,
        headers: &HeaderMap,
        body: Option<&Value>,
    ) -> reqwest::RequestBuilder {
        let mut request = self
            .client
            .request(method.clone(), url)
            .headers(headers.clone());
        if let Some(b) = body {
            // Everything published goes through here: no secret leaves in a body.
            let text = serde_json::to_string(b).unwrap_or_default();
            request = request
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(crate::secrets::redact(&text).into_owned());
        }
        request
    }

    /// Reads one attempt's answer: the answer or a final error (`Break`), or the failure the
    /// retry policy decides on (`Continue`).
    async fn read_answer(
        &self,
        sent: Result<reqwest::Response, reqwest::Error>,
        method: &Method,
        shown: &str,
    ) -> ControlFlow<Result<Answer, GhError>, Failure> {
        let read = method == Method::GET;
        ControlFlow::Continue(match sent {
            Ok(response) => {
                let status = response.status().as_u16();
                let wait = rate_limit_wait(status, response.headers());
                let next = next_link(response.headers());
                let text = response.text().await.unwrap_or_default();
                if (200..300).contains(&status) {
                    let body = if text.trim().is_empty() {
                        Value::Null
                    } else {
                        match serde_json::from_str(&text) {
                            Ok(body) => body,
                            Err(e) => {
                                return ControlFlow::Break(Err(GhError::Transport(format!(
                                    "{method} {shown}: the answer is not JSON ({e})"
                                ))));
                            }
                        }
                    };
                    return ControlFlow::Break(Ok(Answer { status, body, next }));
                }
                let message = self.scrub(&api_message(&text));
                match wait {
                    // Rate limited: refused before anything was done.
                    Some(w) => Failure::new(message, Some(w), true, status),
                    None if status >= 500 => Failure::new(message, None, read, status),
                    None => {
                        return ControlFlow::Break(Err(GhError::Status {
                            method: method.to_string(),
                            path: shown.to_string(),
                            status,
                            message,
                        }));
                    }
                }
            }
            Err(e) => {
                // A connection never made is safe to retry; anything later may have landed.
                let never_sent = e.is_connect();
                Failure::new(self.scrub(&e.to_string()), None, read || never_sent, 0)
            }
        })
    }

    fn scrub(&self, text: &str) -> String {
        let t = self.token.expose();
        if t.is_empty() {
            text.to_string()
        } else {
            text.replace(t, "***")
        }
    }
}

/// A failed attempt: its error text, the server's wait, whether it may be sent again, and its
/// status (0 when no answer came).
struct Failure {
    message: String,
    wait: Option<Duration>,
    safe_to_retry: bool,
    status: u16,
}

impl Failure {
    fn new(message: String, wait: Option<Duration>, safe_to_retry: bool, status: u16) -> Self {
        Failure {
            message,
            wait,
            safe_to_retry,
            status,
        }
    }
}

/// How long a rate-limited answer asks to wait: 429, or 403 with `retry-after` or an exhausted
/// limit (`x-ratelimit-remaining: 0`, `x-ratelimit-reset` in epoch seconds). `None` for other
/// answers (a 403 for missing permissions is final).
pub fn rate_limit_wait(status: u16, headers: &HeaderMap) -> Option<Duration> {
    if status != 403 && status != 429 {
        return None;
    }
    if let Some(w) = retry_after(headers) {
        return Some(w);
    }
    let header = |n: &str| headers.get(n).and_then(|v| v.to_str().ok());
    if header("x-ratelimit-remaining") == Some("0")
        && let Some(reset) = header("x-ratelimit-reset").and_then(|r| r.parse::<u64>().ok())
    {
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        return Some(Duration::from_secs(reset.saturating_sub(now) + 1));
    }
    // GitHub's documented fallback for a secondary limit without headers: wait a minute.
    (status == 429).then_some(Duration::from_secs(60))
}

/// The `rel="next"` URL of a `Link` header.
fn next_link(headers: &HeaderMap) -> Option<String> {
    let link = headers.get("link")?.to_str().ok()?;
    link.split(',').find_map(|part| {
        let (url, rel) = part.split_once(';')?;
        rel.contains("rel=\"next\"").then(|| {
            url.trim()
                .trim_start_matches('<')
                .trim_end_matches('>')
                .to_string()
        })
    })
}

fn api_message(body: &str) -> String {
    serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|v| v.get("message").and_then(Value::as_str).map(str::to_string))
        .unwrap_or_else(|| excerpt(body))
}

fn excerpt(text: &str) -> String {
    crate::text::clip(text.trim(), 200)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    use axum::http::StatusCode;
    use axum::response::IntoResponse;

    /// A scripted server: `(status, headers, body)` per request, recording method and path.
    type Script = Vec<(u16, Vec<(&'static str, String)>, Value)>;

    fn serve(script: Script) -> (String, Arc<Mutex<Vec<String>>>) {
        serve_with(|_| script)
    }

    /// `make` gets the server's base URL (for `Link` headers).
    fn serve_with(make: impl FnOnce(&str) -> Script) -> (String, Arc<Mutex<Vec<String>>>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let script = make(&format!("http://{addr}"));
        let script = Arc::new(Mutex::new(std::collections::VecDeque::from(script)));
        let seen2 = seen.clone();
        std::thread::spawn(move || {
            crate::test_support::rt().block_on(async move {
                let app = axum::Router::new().fallback(move |req: axum::extract::Request| {
                    let seen = seen2.clone();
                    let script = script.clone();
                    async move {
                        seen.lock().unwrap().push(format!(
                            "{} {} {}",
                            req.method(),
                            req.uri(),
                            req.headers()
                                .get("authorization")
                                .and_then(|v| v.to_str().ok())
                                .unwrap_or_default()
                        ));
                        let (status, headers, body) = script.lock().unwrap().pop_front().unwrap_or(
                            (500, vec![], serde_json::json!({"message": "script empty"})),
                        );
                        let mut r = (StatusCode::from_u16(status).unwrap(), axum::Json(body))
                            .into_response();
                        for (k, v) in headers {
                            r.headers_mut().insert(k, v.parse().unwrap());
                        }
                        r
                    }
                });
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                axum::serve(listener, app).await.unwrap();
            });
        });
        (format!("http://{addr}"), seen)
    }

    fn client(url: &str) -> GitHub {
        let retry = RetryPolicy {
            retries: 3,
            backoff: Duration::from_millis(10),
            max_wait: Duration::from_secs(5),
            timeout: Duration::from_secs(5),
        };
        GitHub::new(url, Secret::new("ghs_canary_token"), retry).unwrap()
    }

    #[test]
    fn reads_are_retried_and_paginated() {
        let (url, seen) = serve_with(|base| {
            let next = format!(
                "<{base}/repos/o/r/issues/1/comments?per_page=100&page=2>; rel=\"next\", <{base}/x>; rel=\"last\""
            );
            vec![
                (502, vec![], serde_json::json!({"message": "Bad Gateway"})),
                (200, vec![("link", next)], serde_json::json!([{"id": 1}])),
                (200, vec![], serde_json::json!([{"id": 2}])),
            ]
        });
        let gh = client(&url);
        let got = crate::test_support::rt()
            .block_on(gh.get_all("repos/o/r/issues/1/comments", 5))
            .unwrap();
        assert_eq!(
            got,
            [serde_json::json!({"id": 1}), serde_json::json!({"id": 2})]
        );
        let s = seen.lock().unwrap();
        assert_eq!(s.len(), 3, "{s:?}");
        assert_eq!(
            s[0],
            "GET /repos/o/r/issues/1/comments?per_page=100 Bearer ghs_canary_token"
        );
        assert_eq!(s[1], s[0], "the read was retried after the 502");
        assert!(
            s[2].starts_with("GET /repos/o/r/issues/1/comments?per_page=100&page=2 "),
            "{s:?}"
        );
        assert_eq!(gh.sent.load(std::sync::atomic::Ordering::Relaxed), 3);
    }

    #[test]
    fn a_write_is_never_resent_after_a_5xx_but_waits_out_a_rate_limit() {
        let rt = crate::test_support::rt();
        let (url, seen) = serve(vec![(
            502,
            vec![],
            serde_json::json!({"message": "Bad Gateway"}),
        )]);
        let gh = client(&url);
        let err = rt
            .block_on(gh.post(
                "repos/o/r/issues/1/comments",
                &serde_json::json!({"body": "x"}),
            ))
            .unwrap_err();
        assert!(matches!(err, GhError::Uncertain { .. }), "{err:?}");
        assert_eq!(seen.lock().unwrap().len(), 1, "not re-sent");

        let (url, seen) = serve(vec![
            (
                403,
                vec![("retry-after", "1".into())],
                serde_json::json!({"message": "You have exceeded a secondary rate limit"}),
            ),
            (201, vec![], serde_json::json!({"id": 7})),
        ]);
        let gh = client(&url);
        let started = std::time::Instant::now();
        let body = rt
            .block_on(gh.post(
                "repos/o/r/issues/1/comments",
                &serde_json::json!({"body": "x"}),
            ))
            .unwrap();
        assert_eq!(body["id"], 7);
        assert!(started.elapsed() >= Duration::from_secs(1));
        assert_eq!(seen.lock().unwrap().len(), 2);

        // A plain 403 (no permission) is final, and the token never shows in the error.
        let (url, _) = serve(vec![(
            403,
            vec![],
            serde_json::json!({"message": "Resource not accessible by integration (token ghs_canary_token)"}),
        )]);
        let gh = client(&url);
        let err = rt
            .block_on(gh.patch("repos/o/r/check-runs/1", &serde_json::json!({})))
            .unwrap_err();
        assert_eq!(err.status(), Some(403));
        assert!(
            !err.to_string().contains("ghs_canary_token") && err.to_string().contains("***"),
            "{err}"
        );
    }

    #[test]
    fn rate_limit_headers() {
        let mut h = HeaderMap::new();
        assert_eq!(rate_limit_wait(403, &h), None);
        assert_eq!(rate_limit_wait(429, &h), Some(Duration::from_secs(60)));
        h.insert("x-ratelimit-remaining", HeaderValue::from_static("0"));
        let reset = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_secs()
            + 30;
        h.insert(
            "x-ratelimit-reset",
            HeaderValue::from_str(&reset.to_string()).unwrap(),
        );
        let w = rate_limit_wait(403, &h).unwrap();
        assert!(
            w >= Duration::from_secs(29) && w <= Duration::from_secs(31),
            "{w:?}"
        );
        assert_eq!(rate_limit_wait(500, &h), None);
        let mut l = HeaderMap::new();
        l.insert(
            "link",
            HeaderValue::from_static("<https://api.github.com/x?page=2>; rel=\"next\", <https://api.github.com/x?page=5>; rel=\"last\""),
        );
        assert_eq!(
            next_link(&l).as_deref(),
            Some("https://api.github.com/x?page=2")
        );
    }
}
