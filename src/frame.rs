//! The JSON-RPC 2.0 frame model: what one WebSocket text frame means, and how the relay writes
//! the frames it sends.
//!
//! The relay only ever looks at the *envelope* of a message (`jsonrpc`, `id`, `method`,
//! `connectionId`). `params`, `result` and `error` stay borrowed [`RawValue`]s, so a 10 MB
//! screenshot is validated once by the parser and then copied once into the outgoing frame; it is
//! never turned into a `serde_json::Value` tree.
//!
//! Ids are kept as raw JSON text too. That is what makes the id mapping exact: the relay restores
//! the very bytes the client sent (`7` stays `7`, `"7"` stays `"7"`, `1.0`, `1e3` and
//! 30-digit integers survive unchanged), because it never converts them to a number type.

use serde::de::{Deserializer, IgnoredAny};
use serde::Deserialize;
use serde_json::value::RawValue;

/// JSON-RPC error codes the relay itself produces (shared with the bridge, which acts on them).
pub use mcp_relay_wire::code;

/// One incoming frame, classified. Everything borrows from the frame's text.
#[derive(Debug)]
pub enum Incoming<'a> {
    /// Has `method` and `id`: expects exactly one response.
    Request(Call<'a>),
    /// Has `method` and no `id`: fire and forget.
    Notification(Call<'a>),
    /// Has `id` and no `method`. `result` and `error` may both be missing: what to do about a
    /// reply with neither depends on who sent it.
    Response(Reply<'a>),
}

/// A request or notification.
#[derive(Debug)]
pub struct Call<'a> {
    /// Raw JSON of the id (`None` for a notification). Always a string, number or `null`.
    pub id: Option<&'a RawValue>,
    pub method: String,
    pub params: Option<&'a RawValue>,
    /// Raw JSON of a top-level `connectionId`, which the spec lets MCP clients and extensions add
    /// for routing.
    pub connection_id: Option<&'a RawValue>,
}

/// A response.
#[derive(Debug)]
pub struct Reply<'a> {
    pub id: &'a RawValue,
    pub result: Option<&'a RawValue>,
    pub error: Option<&'a RawValue>,
}

/// Why a frame could not be classified. Carries the id when one could be read, so the error
/// reply can still be matched by the sender.
#[derive(Debug, Clone, PartialEq)]
pub struct FrameError {
    pub code: i64,
    pub message: String,
    /// Raw JSON id to answer with (`null` when none could be read).
    pub id: Option<String>,
}

impl FrameError {
    fn invalid(message: impl Into<String>, id: Option<&RawValue>) -> Self {
        FrameError {
            code: code::INVALID_REQUEST,
            message: message.into(),
            id: id.map(|raw| raw.get().to_owned()),
        }
    }

    /// The error response to send back for this frame.
    pub fn to_response(&self) -> String {
        error_response(
            self.id.as_deref().unwrap_or("null"),
            self.code,
            &self.message,
        )
    }
}

/// The envelope as serde sees it. Every field is optional and raw, so that "present but `null`"
/// can be told apart from "absent" (an `"id": null` request is legal JSON-RPC).
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(default, borrow, deserialize_with = "present")]
    jsonrpc: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    method: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    params: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    result: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    error: Option<&'a RawValue>,
    #[serde(default, borrow, rename = "connectionId", deserialize_with = "present")]
    connection_id: Option<&'a RawValue>,
}

/// Deserializes a field that is present (even as `null`) into `Some`.
fn present<'de, D>(deserializer: D) -> Result<Option<&'de RawValue>, D::Error>
where
    D: Deserializer<'de>,
{
    <&RawValue>::deserialize(deserializer).map(Some)
}

/// What kind of JSON value a raw value is, judged by its first byte (serde_json has already
/// validated it and strips surrounding whitespace from a `RawValue`).
fn first_byte(raw: &RawValue) -> u8 {
    raw.get().as_bytes().first().copied().unwrap_or(b' ')
}

/// True when a raw value is a JSON string.
pub fn is_string(raw: &RawValue) -> bool {
    first_byte(raw) == b'"'
}

/// JSON-RPC ids must be strings, numbers or `null`.
fn is_valid_id(raw: &RawValue) -> bool {
    matches!(first_byte(raw), b'"' | b'-' | b'0'..=b'9' | b'n')
}

/// Reads one text frame.
pub fn parse(text: &str) -> Result<Incoming<'_>, FrameError> {
    // serde would happily read a JSON array as a struct's fields in order; only objects are
    // messages.
    if !text.trim_start().starts_with('{') {
        return Err(classify_unparsable(text));
    }
    let env: Envelope<'_> = match serde_json::from_str(text) {
        Ok(env) => env,
        Err(_) => return Err(classify_unparsable(text)),
    };
    if let Some(version) = env.jsonrpc {
        // Real extensions omit `jsonrpc` in replies (the spec's own example does); tolerate
        // absence, but a wrong version is a different protocol.
        if version.get() != "\"2.0\"" {
            return Err(FrameError::invalid(
                "Invalid Request: \"jsonrpc\" must be \"2.0\"",
                env.id.filter(|id| is_valid_id(id)),
            ));
        }
    }
    if let Some(id) = env.id {
        if !is_valid_id(id) {
            return Err(FrameError::invalid(
                "Invalid Request: \"id\" must be a string, a number or null",
                None,
            ));
        }
    }
    match env.method {
        Some(method) => {
            let method: String = match serde_json::from_str(method.get()) {
                Ok(m) => m,
                Err(_) => {
                    return Err(FrameError::invalid(
                        "Invalid Request: \"method\" must be a string",
                        env.id,
                    ))
                }
            };
            if let Some(params) = env.params {
                if !matches!(first_byte(params), b'{' | b'[') {
                    return Err(FrameError::invalid(
                        "Invalid Request: \"params\" must be an object or an array",
                        env.id,
                    ));
                }
            }
            let call = Call {
                id: env.id,
                method,
                params: env.params,
                connection_id: env.connection_id,
            };
            Ok(match env.id {
                Some(_) => Incoming::Request(call),
                None => Incoming::Notification(call),
            })
        }
        None => match env.id {
            Some(id) => Ok(Incoming::Response(Reply {
                id,
                result: env.result,
                // Some peers write `"error": null` beside a successful `result`; that is a
                // success, not an error without a code.
                error: env.error.filter(|e| e.get() != "null" || env.result.is_none()),
            })),
            None => Err(FrameError::invalid(
                "Invalid Request: a frame needs \"method\" (request or notification) or \"id\" (response)",
                None,
            )),
        },
    }
}

/// Tells "not JSON" from "JSON, but not an object we understand", only on the error path.
fn classify_unparsable(text: &str) -> FrameError {
    if serde_json::from_str::<IgnoredAny>(text).is_err() {
        return FrameError {
            code: code::PARSE_ERROR,
            message: "Parse error: the frame is not valid JSON".into(),
            id: None,
        };
    }
    let trimmed = text.trim_start();
    let message = if trimmed.starts_with('[') {
        "Invalid Request: batches are not supported by this relay; send one JSON-RPC message per WebSocket frame"
    } else {
        "Invalid Request: a JSON-RPC message must be a JSON object"
    };
    FrameError::invalid(message, None)
}

/// The id's text as used inside a mapped id: a string's unescaped contents, or a number's (or
/// `null`'s) JSON text. Only used to build a readable mapped id; restoring uses the raw bytes.
pub fn id_text(raw: &RawValue) -> String {
    if is_string(raw) {
        serde_json::from_str::<String>(raw.get()).unwrap_or_else(|_| raw.get().to_owned())
    } else {
        raw.get().to_owned()
    }
}

/// The unescaped value of a string id, `None` for numbers and `null`.
pub fn id_string(raw: &RawValue) -> Option<String> {
    if is_string(raw) {
        serde_json::from_str(raw.get()).ok()
    } else {
        None
    }
}

/// Id prefixes that belong to the relay and the extension; an MCP client may not use them, or it
/// could answer on the relay's behalf or collide with a mapped id.
pub const RESERVED_ID_PREFIXES: [&str; 3] = ["proxy:", "ext:", "conn-"];

/// Methods the relay itself sends to extensions. An MCP client may never send them: forwarded,
/// they would reach the extension as if the relay had spoken (an `authenticate` forwarded from a
/// client would make the extension answer with its own token; a forged `status` or
/// `connection_closed` would make it release another connection's tabs). New relay-to-extension
/// methods belong here the day they are added.
pub const RELAY_METHODS: [&str; 6] = [
    "authenticate",
    "authenticated",
    "status",
    "connection_opened",
    "connection_closed",
    "shutdown",
];

/// True when `method` is one only the relay may send to an extension.
pub fn is_relay_method(method: &str) -> bool {
    RELAY_METHODS.contains(&method)
}

/// Returns the reserved prefix a string id starts with, if any.
pub fn reserved_prefix(raw: &RawValue) -> Option<&'static str> {
    let s = id_string(raw)?;
    RESERVED_ID_PREFIXES
        .into_iter()
        .find(|prefix| s.starts_with(prefix))
}

/// Writes a JSON string literal.
pub fn json_string(s: &str) -> String {
    serde_json::to_string(s).expect("a string always serializes")
}

/// `{"jsonrpc":"2.0","id":<id>,"result":<result>}` with both parts already JSON.
pub fn result_response(id: &str, result: &str) -> String {
    let mut out = String::with_capacity(id.len() + result.len() + 36);
    out.push_str("{\"jsonrpc\":\"2.0\",\"id\":");
    out.push_str(id);
    out.push_str(",\"result\":");
    out.push_str(result);
    out.push('}');
    out
}

/// `{"jsonrpc":"2.0","id":<id>,"error":<error>}` with both parts already JSON.
pub fn raw_error_response(id: &str, error: &str) -> String {
    let mut out = String::with_capacity(id.len() + error.len() + 35);
    out.push_str("{\"jsonrpc\":\"2.0\",\"id\":");
    out.push_str(id);
    out.push_str(",\"error\":");
    out.push_str(error);
    out.push('}');
    out
}

/// An error response with the relay's own `code` and `message`.
pub fn error_response(id: &str, code: i64, message: &str) -> String {
    raw_error_response(
        id,
        &format!("{{\"code\":{code},\"message\":{}}}", json_string(message)),
    )
}

/// A notification with params given as a serializable value.
pub fn notification(method: &str, params: &serde_json::Value) -> String {
    format!(
        "{{\"jsonrpc\":\"2.0\",\"method\":{},\"params\":{}}}",
        json_string(method),
        params
    )
}

/// A request frame: `{"jsonrpc":"2.0","id":<id>,"method":<method>[,"params":<params>]}`.
pub fn request(id: &str, method: &str, params: Option<&RawValue>) -> String {
    let params_len = params.map_or(0, |p| p.get().len());
    let mut out = String::with_capacity(id.len() + method.len() + params_len + 48);
    out.push_str("{\"jsonrpc\":\"2.0\",\"id\":");
    out.push_str(id);
    out.push_str(",\"method\":");
    out.push_str(&json_string(method));
    if let Some(params) = params {
        out.push_str(",\"params\":");
        out.push_str(params.get());
    }
    out.push('}');
    out
}

/// A notification frame rebuilt from its parts (used when a routing field must be dropped).
pub fn notification_raw(method: &str, params: Option<&RawValue>) -> String {
    let params_len = params.map_or(0, |p| p.get().len());
    let mut out = String::with_capacity(method.len() + params_len + 40);
    out.push_str("{\"jsonrpc\":\"2.0\",\"method\":");
    out.push_str(&json_string(method));
    if let Some(params) = params {
        out.push_str(",\"params\":");
        out.push_str(params.get());
    }
    out.push('}');
    out
}

/// Normalizes an extension's `error` member into a JSON-RPC error object.
///
/// Real extensions send `{"message": "..."}` without `code`, or even a bare string; MCP clients
/// expect `code` to be an integer, so the relay fills in `-32000` and keeps every other member.
pub fn normalize_error(error: &RawValue) -> String {
    match first_byte(error) {
        b'{' => {
            let mut obj: serde_json::Map<String, serde_json::Value> =
                serde_json::from_str(error.get()).unwrap_or_default();
            let has_int_code = obj.get("code").is_some_and(|c| c.is_i64());
            if has_int_code && obj.get("message").is_some_and(|m| m.is_string()) {
                return error.get().to_owned();
            }
            if !has_int_code {
                if let Some(bad) = obj.remove("code") {
                    obj.entry("data")
                        .or_insert(serde_json::json!({ "code": bad }));
                }
                obj.insert("code".into(), code::SERVER_ERROR.into());
            }
            if !obj.get("message").is_some_and(|m| m.is_string()) {
                let text = match obj.remove("message") {
                    Some(serde_json::Value::Null) | None => "Extension reported an error".into(),
                    Some(other) => other.to_string(),
                };
                obj.insert("message".into(), text.into());
            }
            serde_json::Value::Object(obj).to_string()
        }
        b'"' => {
            let message: String = serde_json::from_str(error.get()).unwrap_or_default();
            serde_json::json!({ "code": code::SERVER_ERROR, "message": message }).to_string()
        }
        _ => serde_json::json!({
            "code": code::SERVER_ERROR,
            "message": "Extension reported an error",
            "data": serde_json::from_str::<serde_json::Value>(error.get()).unwrap_or_default(),
        })
        .to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_keeps_raw_id_and_params() {
        let Incoming::Request(call) =
            parse(r#"{"jsonrpc":"2.0","id":1e3,"method":"x","params":{"a":[1,2]}}"#).unwrap()
        else {
            panic!("not a request")
        };
        assert_eq!(call.id.unwrap().get(), "1e3");
        assert_eq!(call.params.unwrap().get(), r#"{"a":[1,2]}"#);
    }

    #[test]
    fn null_id_is_a_request_and_absent_id_a_notification() {
        assert!(matches!(
            parse(r#"{"jsonrpc":"2.0","id":null,"method":"x"}"#),
            Ok(Incoming::Request(_))
        ));
        assert!(matches!(
            parse(r#"{"jsonrpc":"2.0","method":"x"}"#),
            Ok(Incoming::Notification(_))
        ));
    }

    #[test]
    fn not_json_is_a_parse_error_and_json_non_object_invalid_request() {
        assert_eq!(parse("{nope").unwrap_err().code, code::PARSE_ERROR);
        assert_eq!(parse("42").unwrap_err().code, code::INVALID_REQUEST);
        assert!(parse("[]").unwrap_err().message.contains("batches"));
        let batch = parse(r#"[{"jsonrpc":"2.0","id":1,"method":"x"}]"#).unwrap_err();
        assert!(batch.message.contains("batches"));
    }

    #[test]
    fn object_ids_and_wrong_versions_are_invalid() {
        assert_eq!(
            parse(r#"{"jsonrpc":"2.0","id":{},"method":"x"}"#)
                .unwrap_err()
                .code,
            code::INVALID_REQUEST
        );
        let err = parse(r#"{"jsonrpc":"1.0","id":5,"method":"x"}"#).unwrap_err();
        assert_eq!(err.id.as_deref(), Some("5"));
    }

    #[test]
    fn error_without_code_gets_server_error_code() {
        let raw = RawValue::from_string(r#"{"message":"boom"}"#.into()).unwrap();
        let fixed: serde_json::Value = serde_json::from_str(&normalize_error(&raw)).unwrap();
        assert_eq!(fixed["code"], -32000);
        assert_eq!(fixed["message"], "boom");
        let raw = RawValue::from_string(r#""boom""#.into()).unwrap();
        let fixed: serde_json::Value = serde_json::from_str(&normalize_error(&raw)).unwrap();
        assert_eq!(fixed["message"], "boom");
    }

    #[test]
    fn reserved_prefixes_are_detected_only_on_strings() {
        let raw = RawValue::from_string(r#""proxy:1""#.into()).unwrap();
        assert_eq!(reserved_prefix(&raw), Some("proxy:"));
        let raw = RawValue::from_string("1".into()).unwrap();
        assert_eq!(reserved_prefix(&raw), None);
    }

    #[test]
    fn null_error_beside_a_result_is_a_success() {
        let Incoming::Response(reply) =
            parse(r#"{"jsonrpc":"2.0","id":1,"result":{"ok":true},"error":null}"#).unwrap()
        else {
            panic!("not a response")
        };
        assert!(reply.error.is_none());
        assert_eq!(reply.result.unwrap().get(), r#"{"ok":true}"#);
        // Without a result, a null error stays visible so the reply is not taken for a success.
        let Incoming::Response(reply) = parse(r#"{"id":1,"error":null}"#).unwrap() else {
            panic!("not a response")
        };
        assert!(reply.error.is_some());
    }

    #[test]
    fn relay_methods_are_known_and_ordinary_ones_are_not() {
        for method in ["authenticate", "status", "connection_closed", "shutdown"] {
            assert!(is_relay_method(method), "{method}");
        }
        assert!(!is_relay_method("tools/call"));
        assert!(!is_relay_method("Authenticate"));
    }
}
