//! Known secret values and their redaction (SPEC §10). Every secret qa-loop holds — the model
//! key, the GitHub and push tokens, the runner's tokens, variables the configuration names in
//! `secret_env` — is replaced by `***` in everything that leaves the process: tool results sent
//! to the model, bodies sent to GitHub, report files, step outputs, the job summary and the log.
//! A secret is also found in the forms it travels in: percent-encoded, and base64 (alone, or
//! inside a basic-auth header such as the `x-access-token:<token>` that `actions/checkout`
//! writes to `.git/config`).
//!
//! The set is process-wide: [`register`] adds values as they become known, [`redact`] and
//! [`contains`] read it.

use std::borrow::Cow;
use std::sync::{LazyLock, RwLock};

use aho_corasick::AhoCorasick;

/// A secret value (an API key): never printed, never in `Debug` output.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The value, for the one place that sends it (an HTTP header).
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// What a secret is replaced with.
pub const MASK: &str = "***";
/// Shorter values are not treated as secrets (they would match ordinary text).
pub const MIN_LEN: usize = 8;

/// A set of secret values and the forms they are searched in.
#[derive(Default)]
pub struct Redactor {
    values: Vec<String>,
    matcher: Option<AhoCorasick>,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Redactor([{} hidden])", self.values.len())
    }
}

impl Redactor {
    pub fn new(values: impl IntoIterator<Item = String>) -> Self {
        let mut r = Redactor::default();
        r.add(values);
        r
    }

    /// Adds values (ignoring those shorter than [`MIN_LEN`] and those already known).
    pub fn add(&mut self, values: impl IntoIterator<Item = String>) -> &[String] {
        let before = self.values.len();
        for v in values {
            let v = v.trim().to_string();
            if v.len() >= MIN_LEN && !self.values.contains(&v) {
                self.values.push(v);
            }
        }
        if self.values.len() == before {
            return &[];
        }
        let mut needles: Vec<String> = self.values.iter().flat_map(|v| forms(v)).collect();
        needles.sort_by_key(|n| std::cmp::Reverse(n.len()));
        needles.dedup();
        self.matcher = AhoCorasick::builder()
            .match_kind(aho_corasick::MatchKind::LeftmostLongest)
            .build(&needles)
            .ok();
        &self.values[before..]
    }

    /// `text` with every known secret (in any of its forms) replaced by [`MASK`].
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        match &self.matcher {
            Some(m) if m.is_match(text) => {
                let masks = vec![MASK; m.patterns_len()];
                Cow::Owned(m.replace_all(text, &masks))
            }
            _ => Cow::Borrowed(text),
        }
    }

    /// Whether `text` holds a known secret in any of its forms.
    pub fn contains(&self, text: &str) -> bool {
        self.matcher.as_ref().is_some_and(|m| m.is_match(text))
    }
}

/// The forms a value is searched in: itself, percent-encoded, and base64 at each of the three
/// alignments it can have inside a longer encoded text (only the characters that depend on the
/// value alone, so `base64("x-access-token:" + value)` is found too).
fn forms(value: &str) -> Vec<String> {
    let mut out = vec![value.to_string()];
    let encoded = crate::text::percent_encode(value);
    if encoded != value {
        out.push(encoded);
    }
    let bytes = value.as_bytes();
    for pad in 0..3usize {
        let mut padded = vec![0u8; pad];
        padded.extend_from_slice(bytes);
        let b64 = base64(&padded);
        // Characters 6-bit groups wholly inside the value: from ceil(8·pad/6) to floor(8·(pad+len)/6).
        let start = (8 * pad).div_ceil(6);
        let end = (8 * (pad + bytes.len())) / 6;
        if end > start && end - start >= MIN_LEN {
            out.push(b64[start..end].to_string());
        }
    }
    out
}

/// Standard base64 with padding.
pub fn base64(bytes: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = (chunk[0] as u32) << 16
            | (*chunk.get(1).unwrap_or(&0) as u32) << 8
            | *chunk.get(2).unwrap_or(&0) as u32;
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(T[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

static KNOWN: LazyLock<RwLock<Redactor>> = LazyLock::new(Default::default);

/// Told each value added to the process-wide set (in GitHub Actions: `::add-mask::`).
static ANNOUNCE: std::sync::OnceLock<fn(&str)> = std::sync::OnceLock::new();

/// Adds values to the process-wide set; each new one is announced (see [`announce_with`]).
pub fn register(values: impl IntoIterator<Item = String>) {
    if let Ok(mut r) = KNOWN.write() {
        let added = r.add(values);
        if let Some(announce) = ANNOUNCE.get() {
            added.iter().for_each(|v| announce(v));
        }
    }
}

/// From now on, tells `announce` every value registered — those known already at once, and
/// each one found later (a token fetched mid-run) when it is. Set once per process.
pub fn announce_with(announce: fn(&str)) {
    if let Ok(r) = KNOWN.write()
        && ANNOUNCE.set(announce).is_ok()
    {
        r.values.iter().for_each(|v| announce(v));
    }
}

/// The values of the secret variables of `vars` (SPEC §10: the built-in secrets and the
/// `secret_env` patterns).
pub fn of_env<'a>(
    vars: impl IntoIterator<Item = (&'a str, &'a str)>,
    secret_env: &[String],
) -> Vec<String> {
    vars.into_iter()
        .filter(|(k, _)| {
            crate::env_vars::is_secret(k)
                || secret_env.iter().any(|p| crate::env_vars::wildcard(p, k))
        })
        .map(|(_, v)| v.to_string())
        .collect()
}

/// `text` with every registered secret replaced by [`MASK`].
pub fn redact(text: &str) -> Cow<'_, str> {
    match KNOWN.read() {
        Ok(r) => match r.redact(text) {
            Cow::Borrowed(_) => Cow::Borrowed(text),
            Cow::Owned(s) => Cow::Owned(s),
        },
        Err(_) => Cow::Borrowed(text),
    }
}

/// Whether `text` holds a registered secret.
pub fn contains(text: &str) -> bool {
    KNOWN.read().is_ok_and(|r| r.contains(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_redacted_in_every_form_they_travel_in() {
        let token = "ghs_canaryTOKEN0123456789";
        let key = "sk-ant-api03-k+y/with=odd&chars";
        let r = Redactor::new([token.to_string(), key.to_string(), "short".to_string()]);
        let basic = base64(format!("x-access-token:{token}").as_bytes());
        let header = format!("\textraheader = AUTHORIZATION: basic {basic}\n");
        let texts = [
            format!("GITHUB_TOKEN={token}\n"),
            format!("key: {key}"),
            format!("url?k={}", crate::text::percent_encode(key)),
            header.clone(),
            base64(token.as_bytes()),
            base64(format!("a{token}").as_bytes()),
            base64(format!("ab{token}").as_bytes()),
            base64(format!("user:{key}").as_bytes()),
        ];
        for t in &texts {
            assert!(r.contains(t), "{t}");
            let out = r.redact(t);
            assert!(out.contains(MASK), "{t} → {out}");
            assert!(!out.contains(token) && !out.contains(key), "{out}");
        }
        assert_eq!(r.redact(&header).matches(MASK).count(), 1, "one mask");
        // Short values and ordinary text are left alone.
        assert!(!r.contains("a short word"));
        assert!(matches!(r.redact("nothing here"), Cow::Borrowed(_)));
        assert!(!format!("{r:?}").contains("canary"));
    }

    #[test]
    fn base64_matches_the_standard() {
        assert_eq!(base64(b"x-access-token:abc"), "eC1hY2Nlc3MtdG9rZW46YWJj");
        assert_eq!(base64(b"a"), "YQ==");
        assert_eq!(base64(b"ab"), "YWI=");
        assert_eq!(base64(b""), "");
    }

    #[test]
    fn variables_named_secret_give_their_values() {
        let vars = [
            ("GITHUB_TOKEN", "ghs_one_value_1"),
            ("AWS_SECRET_ACCESS_KEY", "aws_two_value"),
            ("PATH", "/usr/bin:/bin"),
        ];
        let got = of_env(vars.iter().copied(), &["AWS_*".into()]);
        assert_eq!(got, ["ghs_one_value_1", "aws_two_value"]);
    }
}
