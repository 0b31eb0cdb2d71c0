//! The generic webhook: the notice as JSON, signed with HMAC-SHA256 of the body under a
//! configured secret (`X-QA-Loop-Signature: sha256=<hex>`, GitHub's scheme), with the event in
//! `X-QA-Loop-Event` and a delivery id in `X-QA-Loop-Delivery` (a retried delivery keeps it, so
//! a receiver can drop a repeat).

use hmac::{Hmac, Mac};
use sha2::Sha256;

use super::{Notice, deliver};
use crate::config::file::WebhookNotify;

pub struct Webhook {
    url: String,
    secret: Option<String>,
}

/// `sha256=<hex>` of `body` under `secret`.
pub fn signature(secret: &str, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes any key");
    mac.update(body);
    let bytes = mac.finalize().into_bytes();
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256={hex}")
}

/// A delivery id: unique enough to drop repeats (time, process, counter).
fn delivery_id() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "{nanos:x}-{:x}-{:x}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

impl Webhook {
    pub fn new(cfg: &WebhookNotify, secret: Option<String>) -> Webhook {
        Webhook {
            url: cfg.url.clone(),
            secret,
        }
    }

    pub async fn send(&self, client: &reqwest::Client, n: &Notice) -> Result<(), String> {
        let body = serde_json::to_vec(n).map_err(|e| e.to_string())?;
        let event = n.event.map_or("", |e| e.as_str());
        let id = delivery_id();
        let sig = self.secret.as_deref().map(|s| signature(s, &body));
        deliver(
            || {
                let mut r = client
                    .post(&self.url)
                    .header(reqwest::header::CONTENT_TYPE, "application/json")
                    .header("X-QA-Loop-Event", event)
                    .header("X-QA-Loop-Delivery", &id)
                    .body(body.clone());
                if let Some(s) = &sig {
                    r = r.header("X-QA-Loop-Signature", s);
                }
                r
            },
            true,
        )
        .await
        .map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signature_is_hmac_sha256_hex() {
        // RFC 4231 test case 2.
        assert_eq!(
            signature("Jefe", b"what do ya want for nothing?"),
            "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }
}
