//! HTTP for the model providers: one reqwest client (rustls with ring), timeouts, and retries with
//! exponential backoff and jitter on 429, 5xx, timeouts and connection errors, honouring
//! `retry-after`. A failure after the last retry is one [`ProviderError`]; the API key never
//! appears in an error text or a log line.

use std::ops::ControlFlow;
use std::time::{Duration, Instant, SystemTime};

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;

use super::ProviderError;
use crate::retry::{Next, RetryPolicy, jitter};
use crate::secrets::Secret;

/// `retry-after` (seconds or an HTTP date) or `retry-after-ms` (OpenAI).
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let text = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = text("retry-after-ms").and_then(|v| v.parse::<f64>().ok())
        && ms.is_finite()
        && ms >= 0.0
    {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    let value = text("retry-after")?;
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(
        at.duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

/// Whether an HTTP status is worth retrying (rate limits, overload, server errors, timeouts).
pub fn retryable(status: u16) -> bool {
    matches!(status, 408 | 409 | 425 | 429 | 500..=599)
}

/// qa-loop's HTTPS client (model APIs, GitHub): rustls with ring — reqwest is built without a
/// A client builder with qa-loop's TLS (rustls with ring, installed once) and user agent.
pub fn client_builder() -> reqwest::ClientBuilder {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder().user_agent(concat!("qa-loop/", env!("CARGO_PKG_VERSION")))
}

/// default crypto provider, so ring is installed here (a second install is refused harmlessly).
pub fn https_client(timeout: Duration) -> Result<reqwest::Client, String> {
    client_builder()
        .connect_timeout(Duration::from_secs(15).min(timeout))
        .timeout(timeout)
        .build()
        .map_err(|e| format!("cannot set up HTTPS: {e}"))
}

/// What went wrong inside a streamed answer that arrived with a success status.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamFault {
    pub message: String,
    /// Whether another attempt may succeed (a cut stream, an overload).
    pub retryable: bool,
}

/// Folds a server-sent event stream into the answer JSON.
pub type FoldEvents = fn(&str) -> Result<Value, StreamFault>;

/// How a streamed answer is framed, and how it is folded into the answer JSON.
#[derive(Clone, Copy)]
pub enum Fold {
    /// Server-sent events (`text/event-stream`).
    Sse(FoldEvents),
    /// AWS event-stream frames (Bedrock): the bytes as they came.
    EventStream(fn(&[u8]) -> Result<Value, StreamFault>),
}

/// A short-lived token and when it must be fetched again (the credential sources that exchange
/// one — Google, Entra ID, Anthropic federation, OpenAI workload identity — share this).
#[derive(Default)]
pub struct TokenCache(std::sync::Mutex<Option<(Secret, SystemTime)>>);

impl TokenCache {
    /// The kept token, until it is due for renewal.
    pub fn fresh(&self) -> Option<Secret> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .filter(|(_, renew)| SystemTime::now() < *renew)
            .map(|(t, _)| t.clone())
    }

    /// Keeps `token`, valid for `lifetime` from now: it is renewed five minutes before it
    /// expires, or halfway through a lifetime shorter than ten minutes.
    pub fn keep(&self, token: Secret, lifetime: Duration) {
        let margin = Duration::from_secs(300).min(lifetime / 2);
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) =
            Some((token, SystemTime::now() + lifetime - margin));
    }
}

/// How a request is authenticated when a fixed header will not do: a signature over the exact
/// bytes sent (SigV4), or a short-lived token refreshed before it expires. Asked on every
/// attempt; its error names the provider and the variable to check.
pub trait Authorize: Send + Sync {
    fn headers<'a>(
        &'a self,
        url: &'a str,
        body: &'a [u8],
    ) -> super::BoxFuture<'a, Result<Vec<(&'static str, String)>, String>>;
}

/// A credential that is a short-lived bearer token the source fetches and keeps (Google, Entra
/// ID, both federations): sent as `Authorization: Bearer`, with the source's own extra headers;
/// when the token cannot be had, the error says what to check.
pub trait BearerToken: Send + Sync {
    fn bearer_token(&self) -> super::BoxFuture<'_, Result<Secret, String>>;

    /// What to check when the token cannot be had (the variables or the file it came from).
    fn check(&self) -> String;

    /// Headers sent along with the token.
    fn extra_headers(&self) -> Vec<(&'static str, String)> {
        Vec::new()
    }
}

impl<T: BearerToken> Authorize for T {
    fn headers<'a>(
        &'a self,
        _url: &'a str,
        _body: &'a [u8],
    ) -> super::BoxFuture<'a, Result<Vec<(&'static str, String)>, String>> {
        Box::pin(async move {
            let token = self
                .bearer_token()
                .await
                .map_err(|e| format!("{e} (check {})", self.check()))?;
            let mut headers = vec![("authorization", format!("Bearer {}", token.expose()))];
            headers.extend(self.extra_headers());
            Ok(headers)
        })
    }
}

/// How long a streamed answer may take in all: the `anthropic` SDK's longest expected request.
const STREAM_LIMIT: Duration = Duration::from_secs(60 * 60);

/// The JSON transport shared by the providers.
#[derive(Debug, Clone)]
pub struct Transport {
    client: reqwest::Client,
    pub retry: RetryPolicy,
    /// Scrubbed from every error text.
    secret: Option<Secret>,
    /// The run's time limit: no call runs past it, no retry waits beyond it.
    deadline: Option<Instant>,
    /// Cancelled (with the reason) when a server asks to wait longer than the run has left:
    /// the run stops instead of spending its error budget on calls that cannot succeed.
    stop: Option<crate::cancel::Cancel>,
}

impl Transport {
    pub fn new(retry: RetryPolicy, secret: Option<Secret>) -> Result<Self, ProviderError> {
        let client = https_client(retry.timeout).map_err(ProviderError::Fatal)?;
        Ok(Transport {
            client,
            retry,
            secret,
            deadline: None,
            stop: None,
        })
    }

    /// Stops the run through `cancel` when the server's wait outlasts it.
    pub fn with_stop(mut self, cancel: Option<crate::cancel::Cancel>) -> Self {
        self.stop = cancel;
        self
    }

    /// Bounds every call and every wait by the run's time limit.
    pub fn with_deadline(mut self, deadline: Option<Instant>) -> Self {
        self.deadline = deadline;
        self
    }

    /// One attempt: the status and the answer's text, or why there is none. Cut at the run's
    /// deadline.
    async fn attempt(
        &self,
        url: &str,
        headers: &HeaderMap,
        body: &[u8],
        streamed: Option<Fold>,
    ) -> AttemptOutcome {
        let call = async {
            let mut request = self
                .client
                .post(url)
                .headers(headers.clone())
                .header(reqwest::header::CONTENT_TYPE, "application/json");
            if let Some(fold) = streamed {
                // Events keep coming while a long answer is written: the per-request limit
                // would cut it, so a streamed answer gets the SDK's longest request time.
                let accept = match fold {
                    Fold::Sse(_) => "text/event-stream",
                    Fold::EventStream(_) => "application/vnd.amazon.eventstream",
                };
                request = request
                    .header(reqwest::header::ACCEPT, accept)
                    .timeout(STREAM_LIMIT.max(self.retry.timeout));
            }
            let response = request
                .body(body.to_vec())
                .send()
                .await
                .map_err(|e| transport_error(&e))?;
            let status = response.status().as_u16();
            let wait = retry_after(response.headers());
            let bytes = response
                .bytes()
                .await
                .map(|b| b.to_vec())
                .map_err(|e| e.to_string());
            Ok((status, wait, bytes))
        };
        match self.deadline {
            Some(at) => tokio::time::timeout_at(at.into(), call)
                .await
                .unwrap_or_else(|_| Err(DEADLINE.to_string())),
            None => call.await,
        }
    }

    /// POSTs `body` as JSON and returns the JSON answer, retrying what is worth retrying.
    /// `service` names the provider in errors; `headers` carry the key (marked sensitive).
    pub async fn post_json(
        &self,
        service: &str,
        url: &str,
        headers: &[(&'static str, String)],
        body: &Value,
    ) -> Result<Value, ProviderError> {
        self.post(service, url, headers, body, None, None).await
    }

    /// The general call: `fold` for a streamed answer, `auth` for headers made per attempt
    /// over the exact bytes sent (a signature, a refreshed token).
    pub async fn post_with(
        &self,
        service: &str,
        url: &str,
        headers: &[(&'static str, String)],
        body: &Value,
        fold: Option<Fold>,
        auth: Option<&dyn Authorize>,
    ) -> Result<Value, ProviderError> {
        self.post(service, url, headers, body, fold, auth).await
    }

    /// As [`post_json`](Self::post_json) for a request that streams (`"stream": true`): the
    /// event stream is read to its end and folded into the answer JSON by `fold`.
    pub async fn post_events(
        &self,
        service: &str,
        url: &str,
        headers: &[(&'static str, String)],
        body: &Value,
        fold: FoldEvents,
    ) -> Result<Value, ProviderError> {
        self.post(service, url, headers, body, Some(Fold::Sse(fold)), None)
            .await
    }

    async fn post(
        &self,
        service: &str,
        url: &str,
        headers: &[(&'static str, String)],
        body: &Value,
        fold: Option<Fold>,
        auth: Option<&dyn Authorize>,
    ) -> Result<Value, ProviderError> {
        let header_map = sensitive_headers(service, headers)?;
        let body = serde_json::to_string(body).map_err(|e| {
            ProviderError::Fatal(format!("{service}: cannot encode the request: {e}"))
        })?;
        // Nothing qa-loop holds reaches the model (test output, diffs, tool results).
        let body = crate::secrets::redact(&body).into_owned().into_bytes();
        let mut attempt = 0;
        loop {
            let mut header_map = header_map.clone();
            if let Some(auth) = auth {
                let made = auth.headers(url, &body).await.map_err(|e| {
                    ProviderError::Credential(self.scrub(&format!("{service}: {e}")))
                })?;
                header_map.extend(sensitive_headers(service, &made)?);
            }
            let outcome = self.attempt(url, &header_map, &body, fold).await;
            let (why, wait) = match self.judge(service, outcome, fold) {
                ControlFlow::Break(result) => return result,
                ControlFlow::Continue(failure) => failure,
            };
            match self.next(attempt, wait) {
                Next::Retry(delay) => {
                    tracing::warn!(
                        attempt = attempt + 1,
                        delay_ms = delay.as_millis() as u64,
                        "{}; retrying",
                        self.scrub(&why)
                    );
                    tokio::time::sleep(delay).await;
                    attempt += 1;
                }
                Next::GiveUp => return Err(self.give_up(&why, wait, attempt)),
            }
        }
    }

    /// What one attempt's outcome means: the answer or a final error (`Break`), or why it failed
    /// and the server's wait when another attempt may succeed (`Continue`).
    fn judge(
        &self,
        service: &str,
        outcome: AttemptOutcome,
        fold: Option<Fold>,
    ) -> ControlFlow<Result<Value, ProviderError>, (String, Option<Duration>)> {
        let outcome = match outcome {
            Ok((status, wait, Ok(bytes))) if (200..300).contains(&status) => {
                // A JSON answer to a streamed request is an error body, not frames.
                if let Some(Fold::EventStream(fold)) = fold
                    && !bytes.trim_ascii_start().starts_with(b"{")
                {
                    return match fold(&bytes) {
                        Ok(answer) => ControlFlow::Break(Ok(answer)),
                        Err(f) if !f.retryable => {
                            let why = format!("{service}: {}", f.message);
                            ControlFlow::Break(Err(ProviderError::Fatal(self.scrub(&why))))
                        }
                        Err(f) => {
                            ControlFlow::Continue((format!("{service}: {}", f.message), wait))
                        }
                    };
                }
                Ok((
                    status,
                    wait,
                    Ok(String::from_utf8_lossy(&bytes).into_owned()),
                ))
            }
            Ok((status, wait, Ok(bytes))) => Ok((
                status,
                wait,
                Ok(String::from_utf8_lossy(&bytes).into_owned()),
            )),
            Ok((status, wait, Err(e))) => Ok((status, wait, Err(e))),
            Err(e) => Err(e),
        };
        let fold = match fold {
            Some(Fold::Sse(f)) => Some(f),
            _ => None,
        };
        ControlFlow::Continue(match outcome {
            Err(e) if e == DEADLINE => {
                let why = format!("{service}: {DEADLINE}");
                return ControlFlow::Break(Err(ProviderError::Unavailable(why)));
            }
            Err(e) => (format!("{service}: {e}"), None),
            Ok((status, wait, Ok(text)))
                if (200..300).contains(&status)
                    && let Some(fold) = fold
                    && looks_like_events(&text) =>
            {
                match fold(&text) {
                    Ok(answer) => return ControlFlow::Break(Ok(answer)),
                    Err(f) if !f.retryable => {
                        let why = format!("{service}: {}", f.message);
                        return ControlFlow::Break(Err(ProviderError::Fatal(self.scrub(&why))));
                    }
                    Err(f) => (format!("{service}: {}", f.message), wait),
                }
            }
            Ok((status, wait, Ok(text))) if (200..300).contains(&status) => {
                return self.read_json(service, &text, wait);
            }
            Ok((status, wait, Ok(text))) => {
                let why = format!("{service}: HTTP {status}{}", api_message(&text));
                if !retryable(status) || final_error(&text) {
                    return ControlFlow::Break(Err(ProviderError::Fatal(self.scrub(&why))));
                }
                (why, wait)
            }
            Ok((status, wait, Err(e))) => (
                format!("{service}: HTTP {status}, the answer was cut: {e}"),
                wait,
            ),
        })
    }

    /// Reads a successful plain answer as JSON, as [`judge`](Self::judge) decides: the answer,
    /// a final error, or an error in the body worth another attempt.
    fn read_json(
        &self,
        service: &str,
        text: &str,
        wait: Option<Duration>,
    ) -> ControlFlow<Result<Value, ProviderError>, (String, Option<Duration>)> {
        let answer: Value = match serde_json::from_str(text) {
            Ok(answer) => answer,
            Err(e) => {
                return ControlFlow::Break(Err(ProviderError::Fatal(self.scrub(&format!(
                    "{service}: the answer is not JSON ({e}): {}",
                    excerpt(text)
                )))));
            }
        };
        // Some routers answer HTTP 200 with `{"error": …}` instead of a completion.
        match error_in_body(&answer) {
            None => ControlFlow::Break(Ok(answer)),
            Some((code, _)) if !code.is_some_and(retryable) => {
                let why = format!("{service}: error{}", api_message(text));
                ControlFlow::Break(Err(ProviderError::Fatal(self.scrub(&why))))
            }
            Some(_) => {
                ControlFlow::Continue((format!("{service}: error{}", api_message(text)), wait))
            }
        }
    }

    /// The error after the last attempt; stops the run when the server asked to wait longer
    /// than the run has left.
    fn give_up(&self, why: &str, wait: Option<Duration>, attempt: u32) -> ProviderError {
        let tries = attempt + 1;
        let asked = match wait {
            Some(w) if !self.fits(w) => format!(
                "; the server asked to wait {} s, more than the run has left",
                w.as_secs()
            ),
            _ => String::new(),
        };
        if let (false, Some(stop)) = (asked.is_empty(), &self.stop) {
            stop.cancel(&self.scrub(&format!("{why}{asked}")));
        }
        ProviderError::Unavailable(self.scrub(&format!(
            "{why} (after {tries} attempt{}{asked})",
            if tries == 1 { "" } else { "s" }
        )))
    }

    /// Whether waiting `wait` still ends before the run's time limit.
    fn fits(&self, wait: Duration) -> bool {
        self.deadline.is_none_or(|at| Instant::now() + wait < at)
    }

    /// The policy's decision, except that a server's `retry-after` longer than the policy's
    /// cap is honoured when the run has the time (a rate limit is not a failure to give up on).
    fn next(&self, attempt: u32, wait: Option<Duration>) -> Next {
        match wait {
            Some(w) if w > self.retry.max_wait && attempt < self.retry.retries => {
                if self.fits(w) {
                    Next::Retry(w)
                } else {
                    Next::GiveUp
                }
            }
            Some(w) if !self.fits(w) => Next::GiveUp,
            _ => match self.retry.next(attempt, wait, jitter()) {
                Next::Retry(d) if !self.fits(d) => Next::GiveUp,
                n => n,
            },
        }
    }

    fn scrub(&self, text: &str) -> String {
        match &self.secret {
            Some(s) if !s.expose().is_empty() => text.replace(s.expose(), "***"),
            _ => text.to_string(),
        }
    }
}

/// Whether a successful answer is an event stream (a server may answer a streamed request
/// with plain JSON, which is read as such).
fn looks_like_events(text: &str) -> bool {
    let start = text.trim_start();
    start.starts_with("event:") || start.starts_with("data:") || start.starts_with(':')
}

/// The HTTP headers of a request, all marked sensitive (they carry the key).
fn sensitive_headers(
    service: &str,
    headers: &[(&'static str, String)],
) -> Result<HeaderMap, ProviderError> {
    let mut header_map = HeaderMap::new();
    for (name, value) in headers {
        let mut v = HeaderValue::from_str(value).map_err(|_| {
            ProviderError::Fatal(format!(
                "{service}: the `{name}` header has characters HTTP does not allow (check the API key)"
            ))
        })?;
        v.set_sensitive(true);
        header_map.insert(HeaderName::from_static(name), v);
    }
    Ok(header_map)
}

/// One attempt's outcome: the status, the server's wait and the answer's text (or why it was
/// cut); or why there is no answer.
type AttemptOutcome = Result<(u16, Option<Duration>, Result<Vec<u8>, String>), String>;

/// Said when the run's time limit ends a call.
const DEADLINE: &str = "the run's time limit was reached during the model call";

/// An error carried in a successful answer's body (`{"error": {"code", "message"}}`), with its
/// numeric code when it has one.
fn error_in_body(answer: &Value) -> Option<(Option<u16>, String)> {
    let error = answer.get("error").filter(|e| !e.is_null())?;
    if answer.get("choices").is_some() || answer.get("content").is_some() {
        return None;
    }
    let code = error
        .get("code")
        .and_then(|c| {
            c.as_u64()
                .or_else(|| c.as_str().and_then(|s| s.parse().ok()))
        })
        .and_then(|c| u16::try_from(c).ok());
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or_default();
    Some((code, message.to_string()))
}

/// Errors no retry can fix although their status would allow one: the account is out of
/// quota (OpenAI answers 429 `insufficient_quota`).
fn final_error(body: &str) -> bool {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let error = parsed.as_ref().and_then(|v| v.get("error"));
    ["code", "type"].iter().any(|f| {
        error
            .and_then(|e| e.get(*f))
            .and_then(Value::as_str)
            .is_some_and(|v| v == "insufficient_quota")
    })
}

/// The provider's own error message (`{"error": {"type", "message"}}` in both wire formats).
fn api_message(body: &str) -> String {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let error = parsed.as_ref().and_then(|v| v.get("error"));
    let message = error
        .and_then(|e| e.get("message").or(Some(e)))
        .and_then(Value::as_str);
    let kind = error.and_then(|e| e.get("type")).and_then(Value::as_str);
    match (kind, message) {
        (Some(k), Some(m)) => format!(" ({k}): {}", excerpt(m)),
        (None, Some(m)) => format!(": {}", excerpt(m)),
        _ if body.trim().is_empty() => String::new(),
        _ => format!(": {}", excerpt(body)),
    }
}

/// A reqwest error without its URL (the text stays short and never carries query strings).
fn transport_error(e: &reqwest::Error) -> String {
    let kind = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "cannot connect"
    } else {
        "request failed"
    };
    let detail = root_cause(e).unwrap_or_default();
    if detail.is_empty() {
        kind.to_string()
    } else {
        format!("{kind}: {detail}")
    }
}

/// The text of an error's innermost cause ("Connection refused (os error 111)"), which reqwest's
/// own text hides; none when it has no cause.
pub(crate) fn root_cause(e: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut source = e.source();
    let mut detail = None;
    while let Some(s) = source {
        detail = Some(s.to_string());
        source = s.source();
    }
    detail
}

fn excerpt(text: &str) -> String {
    crate::text::clip(text.trim(), 300)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_token_is_renewed_before_it_expires() {
        let cache = TokenCache::default();
        assert!(cache.fresh().is_none());
        cache.keep(Secret::new("an hour"), Duration::from_secs(3600));
        assert_eq!(cache.fresh().unwrap().expose(), "an hour");
        // A life shorter than ten minutes is renewed halfway through.
        cache.keep(Secret::new("4 minutes"), Duration::from_secs(240));
        assert_eq!(cache.fresh().unwrap().expose(), "4 minutes");
        cache.keep(Secret::new("2 s"), Duration::from_secs(2));
        assert!(cache.fresh().is_some());
        std::thread::sleep(Duration::from_millis(1100));
        assert!(
            cache.fresh().is_none(),
            "renewed halfway through a short life"
        );
        cache.keep(Secret::new("gone"), Duration::ZERO);
        assert!(cache.fresh().is_none());
    }

    #[test]
    fn retry_after_reads_seconds_dates_and_milliseconds() {
        let mut h = HeaderMap::new();
        assert_eq!(retry_after(&h), None);
        h.insert("retry-after", HeaderValue::from_static("3"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(3)));
        h.insert("retry-after-ms", HeaderValue::from_static("250"));
        assert_eq!(retry_after(&h), Some(Duration::from_millis(250)));
        let mut h = HeaderMap::new();
        let later = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(30));
        h.insert("retry-after", HeaderValue::from_str(&later).unwrap());
        let d = retry_after(&h).unwrap();
        assert!(
            d > Duration::from_secs(27) && d <= Duration::from_secs(30),
            "{d:?}"
        );
        h.insert("retry-after", HeaderValue::from_static("soon"));
        assert_eq!(retry_after(&h), None);
        assert!(retryable(429) && retryable(529) && retryable(503) && !retryable(400));
        assert!(!retryable(401) && !retryable(404));
    }

    #[test]
    fn api_errors_are_summarised_from_both_wire_formats() {
        let anthropic =
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        assert_eq!(api_message(anthropic), " (overloaded_error): Overloaded");
        let openai = r#"{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}"#;
        assert_eq!(api_message(openai), " (requests): Rate limit reached");
        assert_eq!(
            api_message("<html>bad gateway</html>"),
            ": <html>bad gateway</html>"
        );
        assert_eq!(api_message(""), "");
    }
}
