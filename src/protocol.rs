//! What the relay itself says on the wire: one constructor per notification it sends and one
//! enum of the errors it answers with, each with its JSON-RPC code and message.
//!
//! `docs/PROTOCOL.md` documents these frames; this module is where they are made, so the two
//! can be compared side by side and a frame is never spelled twice (a `disconnected` built in
//! three places once drifted apart). Forwarded frames are not here: the relay passes those
//! through byte for byte (see [`crate::frame`]).
//!
//! Messages are part of the protocol too: clients and people read them, and tests match them,
//! so changing one here is a protocol change.

use std::time::Duration;

use serde_json::json;

use crate::frame::{self, code};

/// Every error the relay answers with itself, as the client sees it: [`RelayError::code`]
/// and the `Display` message. Errors an extension sends are forwarded as they are and are
/// not here.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RelayError {
    // --- Authentication and session state (-32000 unless noted: the spec's code for an
    // authentication failure and an unknown extension) ---
    #[error("Not authenticated")]
    NotAuthenticated,
    #[error("Not authenticated: answer the relay's authenticate request first")]
    ExtensionNotAuthenticated,
    #[error("Authentication failed: {0}")]
    AuthenticationFailed(String),
    #[error("Authentication failed: this socket is already authenticated as another user")]
    AuthenticatedAsAnotherUser,
    /// `-32001`.
    #[error("MCP client already connected to an extension; call disconnect first")]
    AlreadyConnected,
    #[error("Extension not found or not accessible")]
    ExtensionNotFound,
    /// `-32011`: `--require-approval` and this browser is not approved yet.
    #[error(
        "Browser {0} is waiting for approval: its owner or the relay's operator approves it out \
         of band (POST /api/v1/browsers/{0}/approve, or `mcp-relay admin approve {0}`); then \
         call connect again"
    )]
    BrowserNotApproved(String),
    /// `-32012`: the client must connect (again) before forwarding; its own code so clients
    /// can act on it without reading the message.
    #[error("Not connected to an extension")]
    NotConnected,
    #[error("connectionId does not name this client's connection")]
    WrongConnection,

    // --- Malformed or forbidden frames ---
    /// `-32602`.
    #[error("Invalid params: {0}")]
    InvalidParams(&'static str),
    /// `-32600`: a request id in a reserved namespace (`conn-`, `proxy:`).
    #[error("Invalid Request: ids starting with {0:?} are reserved by the relay")]
    ReservedId(&'static str),
    /// `-32600`.
    #[error("Invalid Request: the id is longer than {0} bytes; use a shorter id")]
    IdTooLong(usize),
    /// `-32600`: an id with neither method nor result nor error.
    #[error(
        "Invalid Request: a frame with an \"id\" needs a \"method\" (request) or a \"result\" or \
         \"error\" (response)"
    )]
    IdWithoutMethod,
    /// `-32601`: an MCP client sending one of the methods only the relay sends.
    #[error(
        "Method not allowed: {0:?} is sent by the relay to extensions; MCP clients may not send it"
    )]
    RelayMethod(String),
    /// `-32601`: an extension sending a request (the method already clipped for display).
    #[error(
        "Method not found: {0:?}. Extensions answer requests; the relay does not forward \
         requests from extensions"
    )]
    ExtensionRequest(String),
    /// `-32700`.
    #[error("Parse error: binary frame is not UTF-8 JSON")]
    BinaryNotUtf8,
    /// `-32603`.
    #[error("Internal error: the extension replied with neither result nor error")]
    EmptyReply,

    // --- Rates and capacity ---
    /// `-32002`.
    #[error("Rate limit exceeded")]
    RateLimited,
    /// `-32002`.
    #[error(
        "Rate limit exceeded for control methods (mcp_handshake, list_extensions, connect, \
         disconnect); retry later"
    )]
    ControlRateLimited,
    /// `-32002`.
    #[error(
        "Too many pending requests on this connection (their bookkeeping would exceed {0} bytes); \
         retry when earlier requests are answered"
    )]
    TooManyPending(usize),
    /// `-32002`.
    #[error("The browser's queue is full; retry later")]
    BrowserQueueFull,
    /// `-32002`.
    #[error(
        "This connection's share of the browser's queue is used up ({0} bytes of requests \
         in flight); retry when earlier requests are answered"
    )]
    FairShareExceeded(usize),
    /// `-32006`.
    #[error("Too many extensions for this user (limit {0})")]
    TooManyExtensions(usize),
    /// `-32006`.
    #[error("Too many MCP clients for this user (limit {0})")]
    TooManyMcpClients(usize),
    /// `-32006`.
    #[error("Request too large for the cluster transport (NATS max_payload is {0} bytes)")]
    TooLargeForCluster(usize),
    /// `-32603`: an answer the cluster transport cannot carry between nodes.
    #[error(
        "Internal error: the answer ({size} bytes) exceeds the cluster transport's limit (NATS \
         max_payload {limit} bytes)"
    )]
    AnswerTooLargeForCluster { size: usize, limit: usize },

    // --- A request that will never be answered by the extension ---
    /// `-32003`.
    #[error("Request timed out: the extension did not answer within {} s", .0.as_secs_f64())]
    RequestTimedOut(Duration),
    /// `-32004`: the request could not even be handed to the extension.
    #[error("The extension disconnected before the request could be delivered")]
    ExtensionGone,
    /// `-32004`: the extension left with the request in flight.
    #[error("Extension disconnected before responding")]
    ExtensionLeft,
    /// `-32004`: the browser's owner stopped the connection (`close_connection`).
    #[error("The browser's owner stopped this connection before the extension answered")]
    StoppedByOwner,
    /// `-32000`: `close_connection` naming a connection that is not this browser's.
    #[error("No connection {0:?} belongs to this browser")]
    NotThisBrowsersConnection(String),
    /// `-32004`: the relay's operator ended the connection (admin API `DELETE
    /// /api/v1/connections/{id}`, `mcp-relay admin kick`).
    #[error("The relay's operator closed this connection before the extension answered")]
    KickedByOperator,
    /// `-32004`: the client's own `disconnect` ended the connection.
    #[error("The connection was closed by disconnect before the extension answered")]
    ClosedByDisconnect,
    /// `-32005`.
    #[error("The relay is shutting down")]
    ShuttingDown,
}

impl RelayError {
    /// The JSON-RPC error code (the relay's own codes are listed in `docs/PROTOCOL.md`).
    pub fn code(&self) -> i64 {
        use RelayError::*;
        match self {
            NotAuthenticated
            | ExtensionNotAuthenticated
            | AuthenticationFailed(_)
            | AuthenticatedAsAnotherUser
            | ExtensionNotFound
            | WrongConnection
            | NotThisBrowsersConnection(_) => code::SERVER_ERROR,
            AlreadyConnected => code::ALREADY_CONNECTED,
            NotConnected => code::NOT_CONNECTED,
            InvalidParams(_) => code::INVALID_PARAMS,
            ReservedId(_) | IdTooLong(_) | IdWithoutMethod => code::INVALID_REQUEST,
            RelayMethod(_) | ExtensionRequest(_) => code::METHOD_NOT_FOUND,
            BinaryNotUtf8 => code::PARSE_ERROR,
            EmptyReply | AnswerTooLargeForCluster { .. } => code::INTERNAL_ERROR,
            RateLimited | ControlRateLimited | TooManyPending(_) | BrowserQueueFull
            | FairShareExceeded(_) => code::RATE_LIMITED,
            TooManyExtensions(_) | TooManyMcpClients(_) | TooLargeForCluster(_) => {
                code::LIMIT_REACHED
            }
            RequestTimedOut(_) => code::REQUEST_TIMEOUT,
            BrowserNotApproved(_) => code::BROWSER_NOT_APPROVED,
            ExtensionGone | ExtensionLeft | ClosedByDisconnect | StoppedByOwner
            | KickedByOperator => code::EXTENSION_GONE,
            ShuttingDown => code::SHUTTING_DOWN,
        }
    }

    /// A short fixed name for the check that refused a request, for the audit trail's
    /// `refused` tallies (the message may carry numbers; this never does).
    pub fn reason(&self) -> &'static str {
        use RelayError::*;
        match self {
            RateLimited => "rate limit",
            ControlRateLimited => "control rate limit",
            TooManyPending(_) => "pending request bytes",
            BrowserQueueFull => "browser queue full",
            FairShareExceeded(_) => "fair share of the browser queue",
            IdTooLong(_) => "id too long",
            ReservedId(_) => "reserved id",
            TooLargeForCluster(_) => "too large for the cluster",
            NotConnected | WrongConnection => "not connected",
            ExtensionGone | ExtensionLeft => "browser gone",
            BrowserNotApproved(_) => "browser not approved",
            ShuttingDown => "shutting down",
            _ => "refused",
        }
    }

    /// The error response to the request whose raw JSON id is `id`.
    pub fn response(&self, id: &str) -> String {
        frame::error_response(id, self.code(), &self.to_string())
    }
}

/// `authenticated`: tells a new extension socket who the relay takes it for.
pub fn authenticated(user_id: &str, extension_id: &str, client_id: Option<&str>) -> String {
    frame::notification(
        "authenticated",
        &json!({
            "user_id": user_id,
            "extension_id": extension_id,
            "client_id": client_id,
        }),
    )
}

/// `status` to an extension: the MCP connections it currently serves.
pub fn extension_status(connections: &[String]) -> String {
    frame::notification(
        "status",
        &json!({
            "connected": !connections.is_empty(),
            "peer_count": connections.len(),
            "timestamp": timestamp(),
            "connection_ids": connections,
        }),
    )
}

/// `status` to an MCP client, sent right after a successful `connect`'s response.
pub fn client_status(connection_id: &str, extension_id: &str, peer_count: usize) -> String {
    frame::notification(
        "status",
        &json!({
            "connected": true,
            "peer_count": peer_count,
            "extension_id": extension_id,
            "connection_id": connection_id,
            "timestamp": timestamp(),
        }),
    )
}

/// `connection_opened`: tells an extension which MCP client just connected to it, so it can ask
/// its owner before acting for an assistant it has not seen (the extension may answer that
/// client's requests `-32010` until then). `client_id` and `client_name` are what the client
/// declared in `mcp_handshake`; absent when it declared nothing.
pub fn connection_opened(
    connection_id: &str,
    mcp_client_id: &str,
    client_id: Option<&str>,
    client_name: Option<&str>,
) -> String {
    let mut params = json!({
        "connection_id": connection_id,
        "mcp_client_id": mcp_client_id,
    });
    if let Some(client_id) = client_id {
        params["client_id"] = client_id.into();
    }
    if let Some(client_name) = client_name {
        params["client_name"] = client_name.into();
    }
    frame::notification("connection_opened", &params)
}

/// The `disconnected` reason when the browser's owner stopped a connection from the extension
/// (`close_connection`), with the reason the extension gave, if any.
pub fn stopped_by_owner_reason(reason: Option<&str>) -> String {
    match reason.map(str::trim).filter(|r| !r.is_empty()) {
        Some(reason) => format!("Stopped by the browser's owner: {reason}"),
        None => "Stopped by the browser's owner".to_owned(),
    }
}

/// The `disconnected` reason when the relay's operator ends a connection.
pub const KICKED_REASON: &str = "Closed by the relay's operator";

/// `connected`: an extension an MCP client was connected to is back (the client reconnects
/// with `connect`).
pub fn connected(extension_id: &str, name: &str) -> String {
    frame::notification(
        "connected",
        &json!({
            "id": extension_id,
            "extension_id": extension_id,
            "name": name,
            "reconnection": true,
        }),
    )
}

/// `disconnected`: the MCP client's connection ended without the client asking. `name` is
/// absent when the relay no longer knows the extension (it left before a cross-node connect
/// arrived).
pub fn disconnected(
    connection_id: &str,
    extension_id: &str,
    name: Option<&str>,
    reason: &str,
) -> String {
    let mut params = json!({
        "connection_id": connection_id,
        "extension_id": extension_id,
        "id": extension_id,
        "reason": reason,
    });
    if let Some(name) = name {
        params["name"] = name.into();
    }
    frame::notification("disconnected", &params)
}

/// `connection_closed`: tells an extension one of its MCP connections ended.
pub fn connection_closed(connection_id: &str, reason: &str) -> String {
    frame::notification(
        "connection_closed",
        &json!({ "connection_id": connection_id, "reason": reason }),
    )
}

/// `notifications/cancelled`: tells an extension to stop working on a request nobody will
/// read the answer to. `request_id` is the relay's rewritten id (`conn-…:<id>`).
pub fn cancelled(request_id: &str, reason: &str) -> String {
    frame::notification(
        "notifications/cancelled",
        &json!({ "requestId": request_id, "reason": reason }),
    )
}

/// `shutdown`: the relay is going away; sent to every socket before it closes with 1001.
pub fn shutdown() -> String {
    frame::notification("shutdown", &json!({ "reason": "relay shutting down" }))
}

/// The `status` timestamp, in the format the spec shows (`2025-10-20T21:43:53.163+0000`).
pub fn timestamp() -> String {
    chrono::Utc::now()
        .format("%Y-%m-%dT%H:%M:%S%.3f%z")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_the_relay_answers_with_is_a_row_of_docs_protocol() {
        let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/PROTOCOL.md"))
            .unwrap();
        for code in code::RELAY_CODES {
            assert!(
                doc.contains(&format!("\n| {code} |")),
                "docs/PROTOCOL.md has no row for {code}"
            );
        }
    }

    #[test]
    fn errors_carry_the_codes_docs_protocol_lists() {
        assert_eq!(RelayError::NotConnected.code(), -32012);
        assert_eq!(RelayError::AlreadyConnected.code(), -32001);
        assert_eq!(RelayError::RateLimited.code(), -32002);
        assert_eq!(
            RelayError::RequestTimedOut(Duration::from_secs(30)).code(),
            -32003
        );
        assert_eq!(RelayError::ExtensionLeft.code(), -32004);
        assert_eq!(RelayError::ShuttingDown.code(), -32005);
        assert_eq!(RelayError::TooManyExtensions(2).code(), -32006);
        assert_eq!(RelayError::ReservedId("conn-").code(), -32600);
        assert_eq!(RelayError::RelayMethod("status".into()).code(), -32601);
        assert_eq!(RelayError::InvalidParams("x").code(), -32602);
    }

    #[test]
    fn a_timeout_names_the_bound_in_seconds() {
        assert_eq!(
            RelayError::RequestTimedOut(Duration::from_millis(1500)).to_string(),
            "Request timed out: the extension did not answer within 1.5 s"
        );
    }

    #[test]
    fn an_error_response_keeps_the_raw_id() {
        let frame = RelayError::NotConnected.response("\"a\\u0062\"");
        assert_eq!(
            frame,
            "{\"jsonrpc\":\"2.0\",\"id\":\"a\\u0062\",\"error\":{\"code\":-32012,\"message\":\"Not connected to an extension\"}}"
        );
    }

    #[test]
    fn disconnected_names_the_extension_only_when_known() {
        let with: serde_json::Value =
            serde_json::from_str(&disconnected("conn-1", "ext-1", Some("Chrome"), "gone")).unwrap();
        assert_eq!(with["params"]["name"], "Chrome");
        assert_eq!(with["params"]["id"], "ext-1");
        let without: serde_json::Value =
            serde_json::from_str(&disconnected("conn-1", "ext-1", None, "gone")).unwrap();
        assert!(without["params"].get("name").is_none());
    }
}
