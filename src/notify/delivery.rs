//! One notification request sent: bounded in time, retried only when it surely did not land
//! (no connection, `429`, or a `5xx` for targets whose receivers drop repeats).

use std::time::Duration;

/// One request's time limit.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// Attempts of a request that did not land.
const ATTEMPTS: u32 = 3;
/// The longest `Retry-After` honoured.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(10);
/// Whether a failed attempt may be repeated: only when the request surely did not land
/// (`retry_5xx` for targets whose receivers drop repeats).
enum Attempt {
    Done(reqwest::Response),
    Retry(Option<Duration>, String),
    Fail(String),
}

/// Sends the request `build` makes, retrying what did not land; `Ok` is any answer < 400.
pub async fn deliver(
    build: impl Fn() -> reqwest::RequestBuilder,
    retry_5xx: bool,
) -> Result<reqwest::Response, String> {
    let mut last = String::new();
    for attempt in 1..=ATTEMPTS {
        let outcome = match build().send().await {
            Ok(r) if r.status().is_success() => Attempt::Done(r),
            Ok(r) if r.status().as_u16() == 429 || (retry_5xx && r.status().is_server_error()) => {
                let after = r
                    .headers()
                    .get(reqwest::header::RETRY_AFTER)
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.trim().parse::<u64>().ok())
                    .map(Duration::from_secs);
                let status = r.status().as_u16();
                let body = r.text().await.unwrap_or_default();
                Attempt::Retry(
                    after,
                    format!("HTTP {status} {}", crate::text::clip(body.trim(), 200)),
                )
            }
            Ok(r) => {
                let status = r.status().as_u16();
                let body = r.text().await.unwrap_or_default();
                Attempt::Fail(format!(
                    "HTTP {status} {}",
                    crate::text::clip(body.trim(), 300)
                ))
            }
            // Not connected: nothing was sent.
            Err(e) if e.is_connect() => Attempt::Retry(
                None,
                crate::conversations::endpoint::error_chain(&e.without_url()),
            ),
            // A timeout or a broken answer: it may have landed, so it is not sent again.
            Err(e) => Attempt::Fail(crate::conversations::endpoint::error_chain(
                &e.without_url(),
            )),
        };
        match outcome {
            Attempt::Done(r) => return Ok(r),
            Attempt::Fail(why) => return Err(why.trim_end().to_string()),
            Attempt::Retry(after, why) => {
                last = why;
                if attempt < ATTEMPTS {
                    let wait = after
                        .unwrap_or(Duration::from_millis(500 * u64::from(attempt)))
                        .min(MAX_RETRY_AFTER);
                    tokio::time::sleep(wait).await;
                }
            }
        }
    }
    Err(format!("{} (after {ATTEMPTS} attempts)", last.trim_end()))
}
