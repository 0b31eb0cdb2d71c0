//! AWS event-stream framing (`application/vnd.amazon.eventstream`), as Bedrock's
//! InvokeModelWithResponseStream answers: each message is a prelude (total length, headers
//! length, the prelude's CRC-32), typed headers (`:message-type`, `:event-type`,
//! `:exception-type`), a payload and the message's CRC-32. Bedrock's `chunk` events carry
//! `{"bytes": base64(<Anthropic stream event JSON>)}`; they are turned back into the server-sent
//! events the Messages stream folder reads, so the Anthropic wire code stays one.

use base64::Engine as _;
use serde_json::Value;

use super::http::StreamFault;

/// One decoded message.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub headers: Vec<(String, String)>,
    pub payload: Vec<u8>,
}

impl Message {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Every message of `bytes`, or why the framing is broken (a cut stream is retryable).
pub fn decode(mut bytes: &[u8]) -> Result<Vec<Message>, StreamFault> {
    let cut = |why: String| StreamFault {
        message: format!("the event stream {why}"),
        retryable: true,
    };
    let mut out = Vec::new();
    while !bytes.is_empty() {
        if bytes.len() < 16 {
            return Err(cut(format!(
                "ends inside a message ({} bytes left)",
                bytes.len()
            )));
        }
        let u32_at = |b: &[u8], i: usize| u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let total = u32_at(bytes, 0) as usize;
        let headers_len = u32_at(bytes, 4) as usize;
        if crc32fast::hash(&bytes[..8]) != u32_at(bytes, 8) {
            return Err(cut("has a message whose prelude checksum is wrong".into()));
        }
        if total < 16 + headers_len || total > bytes.len() {
            return Err(cut(format!(
                "has a message of {total} bytes where {} are left",
                bytes.len()
            )));
        }
        let message = &bytes[..total];
        if crc32fast::hash(&message[..total - 4]) != u32_at(message, total - 4) {
            return Err(cut("has a message whose checksum is wrong".into()));
        }
        let headers = headers(&message[12..12 + headers_len]).map_err(cut)?;
        out.push(Message {
            headers,
            payload: message[12 + headers_len..total - 4].to_vec(),
        });
        bytes = &bytes[total..];
    }
    Ok(out)
}

/// The typed headers of one message; only string values are kept (the rest are skipped).
fn headers(mut b: &[u8]) -> Result<Vec<(String, String)>, String> {
    let short = || "has a header cut short".to_string();
    let mut out = Vec::new();
    while !b.is_empty() {
        let name_len = *b.first().ok_or_else(short)? as usize;
        let name = b.get(1..1 + name_len).ok_or_else(short)?;
        let name = String::from_utf8_lossy(name).into_owned();
        b = &b[1 + name_len..];
        let kind = *b.first().ok_or_else(short)?;
        b = &b[1..];
        let fixed = |n: usize, b: &mut &[u8]| -> Result<(), String> {
            if b.len() < n {
                return Err(short());
            }
            *b = &b[n..];
            Ok(())
        };
        match kind {
            0 | 1 => {}
            2 => fixed(1, &mut b)?,
            3 => fixed(2, &mut b)?,
            4 => fixed(4, &mut b)?,
            5 | 8 => fixed(8, &mut b)?,
            9 => fixed(16, &mut b)?,
            6 | 7 => {
                let len = u16::from_be_bytes([
                    *b.first().ok_or_else(short)?,
                    *b.get(1).ok_or_else(short)?,
                ]) as usize;
                let value = b.get(2..2 + len).ok_or_else(short)?;
                if kind == 7 {
                    out.push((name, String::from_utf8_lossy(value).into_owned()));
                }
                b = &b[2 + len..];
            }
            other => return Err(format!("has a header of unknown type {other}")),
        }
    }
    Ok(out)
}

/// Whether `bytes` look like an event stream (a plausible first prelude) rather than JSON text.
pub fn looks_like(bytes: &[u8]) -> bool {
    bytes.len() >= 16
        && crc32fast::hash(&bytes[..8])
            == u32::from_be_bytes([bytes[8], bytes[9], bytes[10], bytes[11]])
}

/// Bedrock's stream as the server-sent events of the Messages API (`event: <type>` and `data:
/// <json>` per chunk), for [`super::anthropic::fold_events`]. An exception message ends it with
/// its error: throttling and service errors may be retried, the rest not.
pub fn bedrock_to_sse(bytes: &[u8]) -> Result<String, StreamFault> {
    let mut sse = String::new();
    for m in decode(bytes)? {
        match m.header(":message-type") {
            Some("exception") | Some("error") => {
                let kind = m
                    .header(":exception-type")
                    .or_else(|| m.header(":error-code"))
                    .unwrap_or("exception")
                    .to_string();
                let said = serde_json::from_slice::<Value>(&m.payload)
                    .ok()
                    .and_then(|v| v["message"].as_str().map(str::to_string))
                    .unwrap_or_default();
                let retryable = matches!(
                    kind.as_str(),
                    "throttlingException"
                        | "serviceUnavailableException"
                        | "internalServerException"
                        | "modelStreamErrorException"
                );
                return Err(StreamFault {
                    message: format!("Bedrock: {kind}: {said}"),
                    retryable,
                });
            }
            _ if m.header(":event-type") == Some("chunk") => {
                let wrapper: Value =
                    serde_json::from_slice(&m.payload).map_err(|e| StreamFault {
                        message: format!("the event stream holds a chunk that is not JSON ({e})"),
                        retryable: true,
                    })?;
                let inner = base64::engine::general_purpose::STANDARD
                    .decode(wrapper["bytes"].as_str().unwrap_or_default())
                    .map_err(|e| StreamFault {
                        message: format!("the event stream holds a chunk that is not base64 ({e})"),
                        retryable: true,
                    })?;
                let event = String::from_utf8_lossy(&inner);
                let kind = serde_json::from_str::<Value>(&event)
                    .ok()
                    .and_then(|v| v["type"].as_str().map(str::to_string))
                    .unwrap_or_default();
                sse.push_str(&format!("event: {kind}\ndata: {event}\n\n"));
            }
            _ => {}
        }
    }
    Ok(sse)
}

/// One message as Bedrock frames it (tests and fakes): string headers, then the payload.
pub fn encode(headers: &[(&str, &str)], payload: &[u8]) -> Vec<u8> {
    let mut h = Vec::new();
    for (name, value) in headers {
        h.push(name.len() as u8);
        h.extend_from_slice(name.as_bytes());
        h.push(7);
        h.extend_from_slice(&(value.len() as u16).to_be_bytes());
        h.extend_from_slice(value.as_bytes());
    }
    let total = 16 + h.len() + payload.len();
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(&(total as u32).to_be_bytes());
    out.extend_from_slice(&(h.len() as u32).to_be_bytes());
    let prelude_crc = crc32fast::hash(&out);
    out.extend_from_slice(&prelude_crc.to_be_bytes());
    out.extend_from_slice(&h);
    out.extend_from_slice(payload);
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_be_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(event: &str) -> Vec<u8> {
        let b64 = base64::engine::general_purpose::STANDARD.encode(event);
        encode(
            &[
                (":event-type", "chunk"),
                (":content-type", "application/json"),
                (":message-type", "event"),
            ],
            format!("{{\"bytes\":\"{b64}\",\"p\":\"abcd\"}}").as_bytes(),
        )
    }

    #[test]
    fn chunks_become_the_messages_stream_and_exceptions_errors() {
        let mut bytes = chunk(r#"{"type":"message_start","message":{"id":"m"}}"#);
        bytes.extend(chunk(r#"{"type":"message_stop"}"#));
        assert!(looks_like(&bytes));
        assert!(!looks_like(b"{\"message\": \"no\"}"));
        let sse = bedrock_to_sse(&bytes).unwrap();
        assert_eq!(
            sse,
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\"}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
        );
        // A cut stream and a broken checksum are retryable faults.
        let err = bedrock_to_sse(&bytes[..bytes.len() - 3]).unwrap_err();
        assert!(err.retryable && err.message.contains("bytes"), "{err:?}");
        let mut bad = bytes.clone();
        let last = bad.len() - 1;
        bad[last] ^= 1;
        assert!(
            bedrock_to_sse(&bad)
                .unwrap_err()
                .message
                .contains("checksum")
        );
        // Throttling mid-stream: retry; a validation error: final.
        let throttled = encode(
            &[
                (":message-type", "exception"),
                (":exception-type", "throttlingException"),
            ],
            br#"{"message":"Too many requests"}"#,
        );
        let e = bedrock_to_sse(&throttled).unwrap_err();
        assert!(
            e.retryable && e.message.contains("Too many requests"),
            "{e:?}"
        );
        let invalid = encode(
            &[
                (":message-type", "exception"),
                (":exception-type", "validationException"),
            ],
            br#"{"message":"bad"}"#,
        );
        assert!(!bedrock_to_sse(&invalid).unwrap_err().retryable);
    }
}
