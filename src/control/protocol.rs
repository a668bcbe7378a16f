//! The control socket's messages. A public, versioned contract: new optional fields may appear,
//! nothing is renamed without a new version.
//!
//! Request: `{"v": 1, "op": "observe", "observation": {...}}`, `{"v": 1, "op": "list"}`,
//! `{"v": 1, "op": "ping"}`, `{"v": 1, "op": "history", "limit": 50}`, `{"v": 1, "op": "watch"}`.
//! Reply: `{"v": 1, "ok": true, "result": ...}` or
//! `{"v": 1, "ok": false, "error": {"code": "...", "message": "..."}}`.
//! A `watch` reply is followed by one line per change (`{"kind": "added" | "changed" | "removed", ...}`)
//! until the client hangs up.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::model::{Observation, Session};

pub const PROTOCOL_VERSION: u32 = 1;
/// The longest line either side accepts, newline included.
pub const MAX_LINE: usize = 1 << 20;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
#[allow(clippy::large_enum_variant)] // short-lived: one per line, decoded and dropped
pub enum Request {
    Observe {
        observation: Observation,
    },
    List,
    History {
        #[serde(default = "default_history_limit")]
        limit: usize,
    },
    Ping,
    Watch,
}

fn default_history_limit() -> usize {
    50
}

/// A stable machine-readable error code, with a message for people.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    BadJson,
    LineTooLong,
    UnsupportedVersion,
    BadRequest,
    InvalidObservation,
    Internal,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub code: ErrorCode,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reply {
    pub v: u32,
    pub ok: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorBody>,
}

impl Reply {
    pub fn ok(result: Value) -> Self {
        Reply {
            v: PROTOCOL_VERSION,
            ok: true,
            result: Some(result),
            error: None,
        }
    }

    pub fn error(code: ErrorCode, message: impl Into<String>) -> Self {
        Reply {
            v: PROTOCOL_VERSION,
            ok: false,
            result: None,
            error: Some(ErrorBody {
                code,
                message: message.into(),
            }),
        }
    }
}

/// `ping`'s result: who is serving.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PingInfo {
    pub pid: u32,
    /// "daemon" or "desktop".
    pub host: String,
    pub version: String,
    pub sessions: usize,
}

/// `list`'s result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionList {
    pub sessions: Vec<Session>,
}

/// Encodes a request as one line (with its version and the trailing newline).
pub fn encode_request(request: &Request) -> Result<Vec<u8>, serde_json::Error> {
    let mut value = serde_json::to_value(request)?;
    if let Value::Object(map) = &mut value {
        map.insert("v".into(), Value::from(PROTOCOL_VERSION));
    }
    let mut line = serde_json::to_vec(&value)?;
    line.push(b'\n');
    Ok(line)
}

/// Decodes one request line, with an error reply ready for anything wrong with it.
pub fn decode_request(line: &[u8]) -> Result<Request, Reply> {
    let value: Value = serde_json::from_slice(line)
        .map_err(|e| Reply::error(ErrorCode::BadJson, format!("not JSON: {e}")))?;
    let Value::Object(map) = &value else {
        return Err(Reply::error(
            ErrorCode::BadRequest,
            "a request is a JSON object",
        ));
    };
    match map.get("v").and_then(Value::as_u64) {
        Some(v) if v == u64::from(PROTOCOL_VERSION) => {}
        Some(v) => {
            return Err(Reply::error(
                ErrorCode::UnsupportedVersion,
                format!(
                    "protocol version {v} is not supported (this engine speaks {PROTOCOL_VERSION})"
                ),
            ))
        }
        None => {
            return Err(Reply::error(
                ErrorCode::UnsupportedVersion,
                "missing protocol version \"v\"",
            ))
        }
    }
    let op = map.get("op").and_then(Value::as_str).unwrap_or("");
    let code = if op == "observe" {
        ErrorCode::InvalidObservation
    } else {
        ErrorCode::BadRequest
    };
    serde_json::from_value::<Request>(value.clone())
        .map_err(|e| Reply::error(code, format!("bad {op:?} request: {e}")))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::model::{Agent, EventKind};

    #[test]
    fn a_request_round_trips_through_one_line() {
        let obs = Observation::new("s", Agent::Claude, EventKind::Stop, chrono::Utc::now());
        let line = encode_request(&Request::Observe {
            observation: obs.clone(),
        })
        .unwrap();
        assert_eq!(line.last(), Some(&b'\n'));
        assert_eq!(line.iter().filter(|b| **b == b'\n').count(), 1);
        let back = decode_request(&line).unwrap();
        assert_eq!(back, Request::Observe { observation: obs });
    }

    #[test]
    fn bad_requests_get_a_stable_code() {
        let code = |line: &str| {
            decode_request(line.as_bytes())
                .unwrap_err()
                .error
                .unwrap()
                .code
        };
        assert_eq!(code("not json"), ErrorCode::BadJson);
        assert_eq!(code("[1]"), ErrorCode::BadRequest);
        assert_eq!(code(r#"{"op":"list"}"#), ErrorCode::UnsupportedVersion);
        assert_eq!(
            code(r#"{"v":2,"op":"list"}"#),
            ErrorCode::UnsupportedVersion
        );
        assert_eq!(code(r#"{"v":1,"op":"dance"}"#), ErrorCode::BadRequest);
        assert_eq!(
            code(
                r#"{"v":1,"op":"observe","observation":{"session_id":"s","agent":"claude","event":"Bogus","at":"2026-01-01T00:00:00Z"}}"#
            ),
            ErrorCode::InvalidObservation
        );
        assert_eq!(
            code(
                r#"{"v":1,"op":"observe","observation":{"agent":"claude","event":"Stop","at":"2026-01-01T00:00:00Z"}}"#
            ),
            ErrorCode::InvalidObservation
        );
    }
}
