//! One extension socket, from `authenticate` to close.
//!
//! The extension is the passive side: the relay asks it to `authenticate`, and from then on it
//! answers forwarded requests and sends notifications. Real extensions differ from the spec in
//! ways this session tolerates: they send notifications (`build_info`) before being asked to
//! authenticate, answer with `access_token` or `accessToken` plus a `client_id`, omit `jsonrpc`,
//! and send error replies without a `code`.

use std::sync::Arc;

use axum::extract::ws::WebSocket;
use futures_util::StreamExt;
use serde::Deserialize;
use serde_json::json;

use crate::auth::Role;
use crate::frame::{self, code, Incoming};
use crate::hub::ExtensionAuth;
use crate::limits::SocketSlot;
use crate::metrics::SocketGauge;
use crate::peer::{self, close_code, Inbound, LastSeen, Peer};
use crate::server::RelayState;
use crate::transport::ConnHandle;

/// The id of the relay's one request to an extension.
const AUTH_REQUEST_ID: &str = "proxy:1";

/// What an extension answers to `authenticate`. Both spellings of the token are in use.
#[derive(Deserialize)]
struct AuthAnswer {
    #[serde(default)]
    name: Option<String>,
    #[serde(default, rename = "accessToken")]
    access_token_camel: Option<String>,
    #[serde(default)]
    access_token: Option<String>,
    #[serde(default)]
    client_id: Option<String>,
    #[serde(default)]
    version: Option<serde_json::Value>,
}

pub async fn run(socket: WebSocket, state: Arc<RelayState>, _slot: SocketSlot, conn: ConnHandle) {
    let _gauge = SocketGauge::open(&state.metrics, |m| &m.extension_sockets);
    let (sink, mut stream) = socket.split();
    let last_seen = LastSeen::new();
    let peer = peer::spawn(
        sink,
        conn,
        &state.socket,
        last_seen.clone(),
        Arc::clone(&state.metrics),
        &state.tracker,
    );
    peer.send(frame::request(
        &frame::json_string(AUTH_REQUEST_ID),
        "authenticate",
        Some(&serde_json::value::RawValue::from_string("{}".into()).expect("valid JSON")),
    ));

    let Some(extension_id) = authenticate(&mut stream, &peer, &state, &last_seen).await else {
        return;
    };
    peer.authenticated();
    tracing::info!(%extension_id, "extension authenticated");

    loop {
        let text = match peer::next_inbound(
            &mut stream,
            &peer,
            &state.shutdown,
            &last_seen,
            state.config.max_message_bytes,
        )
        .await
        {
            Inbound::Text(text) => text,
            Inbound::NotText => {
                peer.send(not_text_error());
                continue;
            }
            Inbound::Shutdown => {
                say_goodbye(&peer);
                break;
            }
            Inbound::Closed => break,
        };
        route(&text, &extension_id, &peer, &state);
    }
    let reason = match peer.close_reason() {
        Some((_, reason)) if !reason.is_empty() => format!("Extension closed: {reason}"),
        _ => "Extension closed".to_owned(),
    };
    state
        .hub
        .extension_socket_closed(&extension_id, &peer, &reason);
    // Let queued frames (a final error, a goodbye) go out before the close frame.
    peer.close_after_flush(close_code::NORMAL, "");
}

/// Handles one frame from an authenticated extension.
fn route(text: &str, extension_id: &str, peer: &Peer, state: &RelayState) {
    match frame::parse(text) {
        Ok(Incoming::Response(reply)) => {
            if frame::id_string(reply.id).is_some_and(|id| id.starts_with("proxy:")) {
                return; // a late or repeated answer to `authenticate`
            }
            state.hub.deliver_response(extension_id, &reply);
        }
        Ok(Incoming::Notification(call)) => {
            let target = call.connection_id.and_then(frame::id_string);
            let frame = if call.connection_id.is_some() {
                // `connectionId` is routing information for the relay, not for the client.
                frame::notification_raw(&call.method, call.params)
            } else {
                text.to_owned()
            };
            state
                .hub
                .extension_notification(extension_id, target.as_deref(), frame);
        }
        Ok(Incoming::Request(call)) => {
            // Extensions are passive; the relay never forwards requests to MCP clients.
            let id = call.id.map_or("null", |id| id.get());
            peer.send(frame::error_response(
                id,
                code::METHOD_NOT_FOUND,
                &format!(
                    "Method not found: {:?}. Extensions answer requests; the relay does not \
                     forward requests from extensions",
                    call.method
                ),
            ));
        }
        Err(error) => {
            peer.send(error.to_response());
        }
    }
}

/// Waits for the answer to `authenticate`, tolerating notifications that arrive first.
/// Returns the extension id, or `None` after closing the socket with a reason.
async fn authenticate(
    stream: &mut futures_util::stream::SplitStream<WebSocket>,
    peer: &Peer,
    state: &RelayState,
    last_seen: &LastSeen,
) -> Option<String> {
    let deadline = tokio::time::sleep(state.config.auth_timeout);
    tokio::pin!(deadline);
    let mut version_hint: Option<String> = None;
    loop {
        let inbound = tokio::select! {
            _ = &mut deadline => {
                peer.close_after_flush(
                    close_code::POLICY,
                    format!(
                        "authentication timed out: no answer to authenticate within {} s",
                        state.config.auth_timeout.as_secs_f64()
                    ),
                );
                return None;
            }
            inbound = peer::next_inbound(
                stream,
                peer,
                &state.shutdown,
                last_seen,
                state.config.max_message_bytes,
            ) => inbound,
        };
        let text = match inbound {
            Inbound::Text(text) => text,
            Inbound::NotText => {
                peer.send(not_text_error());
                continue;
            }
            Inbound::Shutdown => {
                say_goodbye(peer);
                return None;
            }
            Inbound::Closed => return None,
        };
        match frame::parse(&text) {
            Ok(Incoming::Response(reply))
                if frame::id_string(reply.id).as_deref() == Some(AUTH_REQUEST_ID) =>
            {
                return match check_answer(&reply, state, version_hint) {
                    Ok(auth) => match state.hub.register_extension(&auth, peer) {
                        Ok(extension_id) => Some(extension_id),
                        Err(error) => {
                            peer.close_after_flush(close_code::TRY_AGAIN_LATER, error.to_string());
                            None
                        }
                    },
                    Err(reason) => {
                        tracing::info!(%reason, "extension authentication failed");
                        peer.close_after_flush(close_code::POLICY, reason);
                        None
                    }
                };
            }
            Ok(Incoming::Notification(call)) => {
                // Real extensions announce themselves (`build_info`) before being asked.
                if let Some(version) = call
                    .params
                    .and_then(|p| serde_json::from_str::<serde_json::Value>(p.get()).ok())
                    .and_then(|p| version_string(&p["version"]))
                {
                    version_hint = Some(version);
                }
            }
            Ok(Incoming::Request(call)) => {
                let id = call.id.map_or("null", |id| id.get());
                peer.send(frame::error_response(
                    id,
                    code::SERVER_ERROR,
                    "Not authenticated: answer the relay's authenticate request first",
                ));
            }
            Ok(Incoming::Response(_)) => {}
            Err(error) => {
                peer.send(error.to_response());
            }
        }
    }
}

/// Validates the answer to `authenticate`; the error is the close reason.
fn check_answer(
    reply: &frame::Reply<'_>,
    state: &RelayState,
    version_hint: Option<String>,
) -> Result<ExtensionAuth, String> {
    if let Some(error) = reply.error {
        let error: serde_json::Value =
            serde_json::from_str(&frame::normalize_error(error)).unwrap_or_default();
        return Err(format!(
            "authentication failed: the extension answered with an error: {}",
            error["message"].as_str().unwrap_or("unknown error")
        ));
    }
    let Some(result) = reply.result else {
        return Err("authentication failed: the answer has no result".into());
    };
    let answer: AuthAnswer = serde_json::from_str(result.get()).map_err(|_| {
        "authentication failed: the result must be an object with name and accessToken".to_owned()
    })?;
    let token = answer
        .access_token_camel
        .or(answer.access_token)
        .unwrap_or_default();
    let identity = state
        .verifier
        .verify(&token, Role::Extension)
        .map_err(|e| format!("authentication failed: {e}"))?;
    let name = answer
        .name
        .map(|n| n.trim().to_owned())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "Browser".to_owned());
    Ok(ExtensionAuth {
        user_id: identity.user_id,
        client_id: answer.client_id.filter(|c| !c.is_empty()),
        name,
        version: answer
            .version
            .as_ref()
            .and_then(version_string)
            .or(version_hint),
    })
}

fn version_string(value: &serde_json::Value) -> Option<String> {
    match value {
        serde_json::Value::String(s) if !s.is_empty() => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn not_text_error() -> String {
    frame::error_response(
        "null",
        code::PARSE_ERROR,
        "Parse error: binary frame is not UTF-8 JSON",
    )
}

/// Tells the peer the relay is going away, then closes with 1001 after the notice is written.
pub(crate) fn say_goodbye(peer: &Peer) {
    peer.send(frame::notification(
        "shutdown",
        &json!({ "reason": "relay shutting down" }),
    ));
    peer.close_after_flush(close_code::GOING_AWAY, "relay shutting down");
}
