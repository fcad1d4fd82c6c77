//! The control methods the relay answers itself for MCP clients: `mcp_handshake`,
//! `list_extensions`, `connect` and `disconnect`, as methods of [`McpSession`]. Everything
//! else is forwarded.
//!
//! Control methods cost the relay work (a token check, a list, state changes) and, unlike
//! forwarded requests, nothing downstream slows a client that calls them in a loop, so each MCP
//! socket has its own token bucket for them (`--control-rate-limit`, `--control-rate-burst`);
//! beyond it they are answered `-32002` at once ([`RelayError::ControlRateLimited`]). The
//! default (50/s, bursts of 100) is far above what polling clients do (a bridge waiting for a
//! browser, a test polling every 25 ms) and far below a loop.

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};
use uuid::Uuid;

use super::{McpRegistration, McpSession};
use crate::auth::Role;
use crate::protocol::{self, RelayError};
use crate::routing::hub::{EndCause, McpClient};

/// True for the methods the relay answers itself.
pub(super) fn is_control(method: &str) -> bool {
    matches!(
        method,
        "mcp_handshake" | "list_extensions" | "connect" | "disconnect"
    )
}

#[derive(Deserialize, Default)]
struct HandshakeParams {
    #[serde(default, rename = "accessToken")]
    access_token_camel: Option<String>,
    #[serde(default)]
    access_token: Option<String>,
    /// Labels the client gives itself for the browser's owner (`connection_opened`). Taken
    /// only when they are strings: older clients send other shapes, and a label is never a
    /// reason to refuse a handshake.
    #[serde(default)]
    client_id: Option<Value>,
    #[serde(default)]
    client_name: Option<Value>,
}

impl HandshakeParams {
    /// A label as the relay keeps it: a non-empty string, cut to `--max-name-bytes`.
    fn label(value: &Option<Value>, max_bytes: usize) -> Option<String> {
        let text = value.as_ref()?.as_str()?.trim();
        (!text.is_empty()).then(|| crate::text::truncate_utf8(text, max_bytes).to_owned())
    }
}

impl McpSession {
    /// The active connection, after checking that it still exists.
    pub(super) fn live_connection(&mut self) -> Option<String> {
        let registration = self.registration.as_mut()?;
        if let Some(id) = &registration.connection {
            if !self.state.hub.is_connected(id) {
                registration.connection = None;
            }
        }
        registration.connection.clone()
    }

    /// `mcp_handshake {accessToken | access_token, client_id?, client_name?}`. A repeated
    /// handshake of the same user refreshes the token's expiry and, when given, the labels
    /// (a bridge learns its host's name only after the host initializes).
    pub(super) fn handshake(&mut self, params: Option<&RawValue>) -> Result<Value, RelayError> {
        let params: HandshakeParams = match params {
            Some(p) => serde_json::from_str(p.get()).map_err(|_| {
                RelayError::InvalidParams(
                    "mcp_handshake takes an object with accessToken (or access_token)",
                )
            })?,
            None => HandshakeParams::default(),
        };
        let max_label = self.state.config.hub.max_name_bytes;
        let client_id = HandshakeParams::label(&params.client_id, max_label);
        if !self.in_process
            && client_id
                .as_deref()
                .is_some_and(|id| id.starts_with(super::HTTP_CLIENT_PREFIX))
        {
            // The relay gives each HTTP session its own random id; a socket declaring one could
            // pass for that assistant with the browser's owner.
            return Err(RelayError::InvalidParams(
                "client_id values beginning \"http-\" are reserved for the relay's HTTP MCP \
                 sessions",
            ));
        }
        let client_name = HandshakeParams::label(&params.client_name, max_label);
        let token = params
            .access_token_camel
            .or(params.access_token)
            .unwrap_or_default();
        let identity = self
            .state
            .verify(&token, Role::Mcp)
            .map_err(|e| RelayError::AuthenticationFailed(e.to_string()))?;
        if let Some(client) = &mut self.client {
            // A repeated handshake is harmless when it names the same user.
            if client.user_id != identity.user_id {
                return Err(RelayError::AuthenticatedAsAnotherUser);
            }
            client.client_id = client_id.or(client.client_id.take());
            client.client_name = client_name.or(client.client_name.take());
            self.token_expires = Some(tokio::time::Instant::now() + identity.expires_in());
            self.state.gate.retrack(&self.peer, &identity);
            return Ok(handshake_result(client));
        }
        let expires = tokio::time::Instant::now() + identity.expires_in();
        let registration = McpRegistration::register(&self.state, &identity.user_id)?;
        self.live = Some(self.state.gate.track(&self.peer, &identity, None));
        let client = McpClient {
            user_id: identity.user_id,
            mcp_client_id: format!("mcp-{}", Uuid::new_v4()),
            client_id,
            client_name,
            peer: self.peer.clone(),
        };
        let result = handshake_result(&client);
        if let Some(audit) = &self.state.audit {
            audit.control(
                crate::routing::hub::Control {
                    kind: "handshake",
                    user_id: &client.user_id,
                    mcp_client_id: Some(&client.mcp_client_id),
                    connection_id: None,
                    extension_id: None,
                    code: 0,
                },
                client.client_name.clone(),
            );
        }
        self.client = Some(client);
        self.registration = Some(registration);
        self.token_expires = Some(expires);
        Ok(result)
    }

    /// `list_extensions`: the caller's user's extensions only.
    pub(super) fn list_extensions(&self) -> Value {
        let client = self.client.as_ref().expect("checked by the session");
        let mut list = self.state.hub.list_extensions(&client.user_id);
        if self.state.gate.require_approval() {
            for extension in &mut list {
                extension.approved = Some(self.state.gate.approved(&extension.id));
            }
        }
        json!({ "extensions": list })
    }

    /// `connect {extension_id}`. On success also returns the `status` notification to send
    /// after the response.
    pub(super) fn connect(
        &mut self,
        params: Option<&RawValue>,
    ) -> Result<(Value, String), RelayError> {
        let params: Value = params
            .and_then(|p| serde_json::from_str(p.get()).ok())
            .unwrap_or(Value::Null);
        let Some(extension_id) = params.get("extension_id").and_then(Value::as_str) else {
            return Err(RelayError::InvalidParams(
                "extension_id (a string) is required",
            ));
        };
        if self.live_connection().is_some() {
            return Err(RelayError::AlreadyConnected);
        }
        let client = self.client.as_ref().expect("checked by the session");
        let result = self.connect_to(client, extension_id);
        if let Some(audit) = &self.state.audit {
            audit.control(
                crate::routing::hub::Control {
                    kind: "connect",
                    user_id: &client.user_id,
                    mcp_client_id: Some(&client.mcp_client_id),
                    connection_id: result.as_ref().ok().map(|i| i.connection_id.as_str()),
                    extension_id: Some(extension_id),
                    code: result.as_ref().err().map_or(0, RelayError::code),
                },
                None,
            );
        }
        let info = result?;
        let registration = self.registration.as_mut().expect("set with the client");
        registration.connection = Some(info.connection_id.clone());
        let status =
            protocol::client_status(&info.connection_id, &info.extension_id, info.peer_count);
        Ok((
            json!({
                "connection_id": info.connection_id,
                "extension_id": info.extension_id,
                "extension_name": info.extension_name,
            }),
            status,
        ))
    }

    /// The hub's `connect`, behind the approval check: with `--require-approval` a browser of
    /// this user that nobody approved yet gets `-32011` (someone else's gets the same answer as
    /// a browser that does not exist, from the hub).
    fn connect_to(
        &self,
        client: &McpClient,
        extension_id: &str,
    ) -> Result<crate::routing::hub::ConnectInfo, RelayError> {
        let access = &self.state.gate;
        if access.require_approval()
            && !access.approved(extension_id)
            && self
                .state
                .hub
                .list_extensions(&client.user_id)
                .iter()
                .any(|e| e.id == extension_id)
        {
            return Err(RelayError::BrowserNotApproved(extension_id.to_owned()));
        }
        self.state.hub.connect(client, extension_id)
    }

    /// `disconnect`: succeeds also when not connected.
    pub(super) fn disconnect(&mut self) -> Value {
        if let (Some(audit), Some(client), Some(connection_id)) =
            (&self.state.audit, &self.client, self.connection())
        {
            audit.control(
                crate::routing::hub::Control {
                    kind: "disconnect",
                    user_id: &client.user_id,
                    mcp_client_id: Some(&client.mcp_client_id),
                    connection_id: Some(connection_id),
                    extension_id: None,
                    code: 0,
                },
                None,
            );
        }
        if let Some(connection_id) = self.take_connection() {
            self.state
                .hub
                .disconnect(&connection_id, EndCause::ClientRequest);
        }
        json!({ "disconnected": true })
    }
}

fn handshake_result(client: &McpClient) -> Value {
    json!({
        "authenticated": true,
        "user_id": client.user_id,
        "mcp_client_id": client.mcp_client_id,
    })
}
