//! The control methods the relay answers itself for MCP clients: `mcp_handshake`,
//! `list_extensions`, `connect` and `disconnect`. Everything else is forwarded.
//!
//! Control methods cost the relay work (a token check, a list, state changes) and, unlike
//! forwarded requests, nothing downstream slows a client that calls them in a loop, so each MCP
//! socket has its own token bucket for them (`--control-rate-limit`, `--control-rate-burst`);
//! beyond it they are answered `-32002` at once ([`rate_limited`]). The default (50/s, bursts
//! of 100) is far above what polling clients do (a bridge waiting for a browser, a test
//! polling every 25 ms) and far below a loop.

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::auth::Role;
use crate::frame::code;
use crate::hub::{EndCause, McpClient};
use crate::limits::RateLimit;
use crate::peer::Peer;
use crate::server::RelayState;

/// A control method's error: JSON-RPC code and message.
pub type ControlError = (i64, String);

/// What an MCP socket knows about itself.
pub struct McpState {
    pub peer: Peer,
    pub client: Option<McpClient>,
    /// The active connection, if any. The hub is the authority: it may have ended the
    /// connection (extension gone), which this session learns when it next asks.
    pub connection: Option<String>,
    /// When the token of the last successful handshake expires; a new handshake with a fresher
    /// token of the same user moves it.
    pub token_expires: Option<tokio::time::Instant>,
    /// This socket's budget for control methods (see the module documentation).
    pub control_rate: RateLimit,
}

/// True for the methods the relay answers itself.
pub fn is_control(method: &str) -> bool {
    matches!(
        method,
        "mcp_handshake" | "list_extensions" | "connect" | "disconnect"
    )
}

/// The answer to a control method over `--control-rate-limit`.
pub fn rate_limited() -> ControlError {
    (
        code::RATE_LIMITED,
        "Rate limit exceeded for control methods (mcp_handshake, list_extensions, connect, \
         disconnect); retry later"
            .into(),
    )
}

impl McpState {
    /// The active connection, after checking that it still exists.
    pub fn live_connection(&mut self, state: &RelayState) -> Option<String> {
        if let Some(id) = &self.connection {
            if !state.hub.is_connected(id) {
                self.connection = None;
            }
        }
        self.connection.clone()
    }
}

fn invalid_params(message: &str) -> ControlError {
    (code::INVALID_PARAMS, format!("Invalid params: {message}"))
}

#[derive(Deserialize, Default)]
struct HandshakeParams {
    #[serde(default, rename = "accessToken")]
    access_token_camel: Option<String>,
    #[serde(default)]
    access_token: Option<String>,
}

/// `mcp_handshake {accessToken | access_token, client_id?}`.
pub fn handshake(
    mcp: &mut McpState,
    state: &RelayState,
    params: Option<&RawValue>,
) -> Result<Value, ControlError> {
    let params: HandshakeParams = match params {
        Some(p) => serde_json::from_str(p.get()).map_err(|_| {
            invalid_params("mcp_handshake takes an object with accessToken (or access_token)")
        })?,
        None => HandshakeParams::default(),
    };
    let token = params
        .access_token_camel
        .or(params.access_token)
        .unwrap_or_default();
    let identity = state
        .verifier
        .verify(&token, Role::Mcp)
        .map_err(|e| (code::SERVER_ERROR, format!("Authentication failed: {e}")))?;
    if let Some(client) = &mcp.client {
        // A repeated handshake is harmless when it names the same user.
        if client.user_id != identity.user_id {
            return Err((
                code::SERVER_ERROR,
                "Authentication failed: this socket is already authenticated as another user"
                    .into(),
            ));
        }
        mcp.token_expires = Some(tokio::time::Instant::now() + identity.expires_in());
        return Ok(handshake_result(client));
    }
    let expires = tokio::time::Instant::now() + identity.expires_in();
    state
        .hub
        .register_mcp(&identity.user_id)
        .map_err(|e| (e.code(), e.to_string()))?;
    let client = McpClient {
        user_id: identity.user_id,
        mcp_client_id: format!("mcp-{}", Uuid::new_v4()),
        peer: mcp.peer.clone(),
    };
    let result = handshake_result(&client);
    mcp.client = Some(client);
    mcp.token_expires = Some(expires);
    Ok(result)
}

fn handshake_result(client: &McpClient) -> Value {
    json!({
        "authenticated": true,
        "user_id": client.user_id,
        "mcp_client_id": client.mcp_client_id,
    })
}

/// `list_extensions`: the caller's user's extensions only.
pub fn list_extensions(client: &McpClient, state: &RelayState) -> Value {
    json!({ "extensions": state.hub.list_extensions(&client.user_id) })
}

/// `connect {extension_id}`. On success also returns the `status` notification to send after
/// the response.
pub fn connect(
    mcp: &mut McpState,
    state: &RelayState,
    params: Option<&RawValue>,
) -> Result<(Value, Value), ControlError> {
    let params: Value = params
        .and_then(|p| serde_json::from_str(p.get()).ok())
        .unwrap_or(Value::Null);
    let Some(extension_id) = params.get("extension_id").and_then(Value::as_str) else {
        return Err(invalid_params("extension_id (a string) is required"));
    };
    if mcp.live_connection(state).is_some() {
        return Err((
            code::ALREADY_CONNECTED,
            "MCP client already connected to an extension; call disconnect first".into(),
        ));
    }
    let client = mcp.client.as_ref().expect("checked by the session");
    let info = state
        .hub
        .connect(client, extension_id)
        .map_err(|e| (e.code(), e.to_string()))?;
    mcp.connection = Some(info.connection_id.clone());
    let status = json!({
        "connected": true,
        "peer_count": info.peer_count,
        "extension_id": info.extension_id,
        "connection_id": info.connection_id,
        "timestamp": crate::hub::timestamp(),
    });
    Ok((
        json!({
            "connection_id": info.connection_id,
            "extension_id": info.extension_id,
            "extension_name": info.extension_name,
        }),
        status,
    ))
}

/// `disconnect`: succeeds also when not connected.
pub fn disconnect(mcp: &mut McpState, state: &RelayState) -> Value {
    if let Some(connection_id) = mcp.connection.take() {
        state
            .hub
            .disconnect(&connection_id, EndCause::ClientRequest);
    }
    json!({ "disconnected": true })
}
