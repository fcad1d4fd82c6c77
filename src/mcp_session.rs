//! One MCP client socket: handshake, control methods, and forwarding of everything else to the
//! connected extension.
//!
//! Real MCP clients never put `connectionId` in their frames; the relay knows which connection a
//! socket has. A `connectionId` that is present anyway is checked against it and removed, so a
//! forged one cannot reach another client's connection.

use std::sync::Arc;

use axum::extract::ws::WebSocket;
use futures_util::StreamExt;

use crate::control::{self, McpState};
use crate::extension_session::say_goodbye;
use crate::frame::{self, code, Call, Incoming};
use crate::hub::{EndCause, HubError};
use crate::limits::{RateLimit, SocketSlot};
use crate::metrics::SocketGauge;
use crate::peer::{self, close_code, Inbound, LastSeen, Peer};
use crate::server::RelayState;
use crate::transport::ConnHandle;

/// Runs one MCP socket. It must complete `mcp_handshake` within `--auth-timeout` or is closed
/// with 1008: until then it is anonymous and holds a slot of the unauthenticated pool.
pub async fn run(socket: WebSocket, state: Arc<RelayState>, _slot: SocketSlot, conn: ConnHandle) {
    let _gauge = SocketGauge::open(&state.metrics, |m| &m.mcp_sockets);
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
    let mut mcp = McpState {
        peer: peer.clone(),
        client: None,
        connection: None,
    };
    let mut rate = RateLimit::new(state.config.rate_limit, state.config.rate_burst);
    // Boxed and dropped at authentication, so an authenticated socket does not carry a timer.
    let mut deadline = Some(Box::pin(tokio::time::sleep(state.config.auth_timeout)));
    loop {
        let next = peer::next_inbound(
            &mut stream,
            &peer,
            &state.shutdown,
            &last_seen,
            state.config.max_message_bytes,
        );
        let inbound = match deadline.as_mut() {
            None => next.await,
            Some(deadline) => tokio::select! {
                inbound = next => inbound,
                _ = deadline.as_mut() => {
                    peer.close_after_flush(
                        close_code::POLICY,
                        format!(
                            "authentication timed out: no successful mcp_handshake within {} s",
                            state.config.auth_timeout.as_secs_f64()
                        ),
                    );
                    break;
                }
            },
        };
        match inbound {
            Inbound::Text(text) => {
                handle_frame(&text, &mut mcp, &mut rate, &state);
                if deadline.is_some() && mcp.client.is_some() {
                    deadline = None;
                    peer.authenticated();
                }
            }
            Inbound::NotText => {
                reply_error(
                    &peer,
                    &state,
                    "null",
                    code::PARSE_ERROR,
                    "Parse error: binary frame is not UTF-8 JSON",
                );
            }
            Inbound::Shutdown => {
                if let Some(connection_id) = mcp.connection.take() {
                    state.hub.disconnect(&connection_id, EndCause::ShuttingDown);
                }
                say_goodbye(&peer);
                break;
            }
            Inbound::Closed => break,
        }
    }
    if let Some(connection_id) = mcp.connection.take() {
        state.hub.mcp_closed(&connection_id);
    }
    if let Some(client) = mcp.client.take() {
        state.hub.unregister_mcp(&client.user_id);
    }
    // Let queued frames (a final error, a goodbye) go out before the close frame.
    peer.close_after_flush(close_code::NORMAL, "");
}

fn reply_error(peer: &Peer, state: &RelayState, id: &str, code: i64, message: &str) {
    state.metrics.error(code);
    peer.send(frame::error_response(id, code, message));
}

fn handle_frame(text: &str, mcp: &mut McpState, rate: &mut RateLimit, state: &RelayState) {
    match frame::parse(text) {
        Ok(Incoming::Request(call)) => handle_request(&call, mcp, rate, state),
        Ok(Incoming::Notification(call)) => {
            // Notifications get no answer, so there is nothing to report if they cannot go
            // anywhere; forward them when there is a connection.
            if mcp.client.is_some() && routable(&call, mcp, state).is_ok() {
                if let Some(connection_id) = &mcp.connection {
                    let _ =
                        state
                            .hub
                            .forward_notification(connection_id, &call.method, call.params);
                }
            }
        }
        // The relay never sends requests to MCP clients, so a response answers nothing and,
        // as JSON-RPC requires, gets no reply. A frame with an id and nothing else is neither
        // a request nor a response: the sender is waiting for something, so say what is wrong.
        Ok(Incoming::Response(reply)) => {
            if reply.result.is_none() && reply.error.is_none() {
                state.metrics.error(code::INVALID_REQUEST);
                mcp.peer.send(frame::error_response(
                    reply.id.get(),
                    code::INVALID_REQUEST,
                    "Invalid Request: a frame with an \"id\" needs a \"method\" (request) or a \"result\" or \"error\" (response)",
                ));
            }
        }
        Err(error) => {
            state.metrics.error(error.code);
            mcp.peer.send(error.to_response());
        }
    }
}

/// Checks a top-level `connectionId`, if present, against this socket's connection.
fn routable(call: &Call<'_>, mcp: &mut McpState, state: &RelayState) -> Result<(), String> {
    let live = mcp.live_connection(state);
    let Some(named) = call.connection_id else {
        return Ok(());
    };
    match (frame::id_string(named), live) {
        (Some(named), Some(live)) if named == live => Ok(()),
        (_, None) => Err("Not connected to an extension".into()),
        _ => Err("connectionId does not name this client's connection".into()),
    }
}

fn handle_request(call: &Call<'_>, mcp: &mut McpState, rate: &mut RateLimit, state: &RelayState) {
    let id_raw = call.id.expect("a request has an id");
    let id = id_raw.get();
    let peer = mcp.peer.clone();
    if let Some(prefix) = frame::reserved_prefix(id_raw) {
        return reply_error(
            &peer,
            state,
            id,
            code::INVALID_REQUEST,
            &format!("Invalid Request: ids starting with {prefix:?} are reserved by the relay"),
        );
    }
    let result = match call.method.as_str() {
        "mcp_handshake" => control::handshake(mcp, state, call.params),
        _ if mcp.client.is_none() => Err((code::SERVER_ERROR, "Not authenticated".to_owned())),
        "list_extensions" => Ok(control::list_extensions(
            mcp.client.as_ref().expect("checked above"),
            state,
        )),
        "connect" => match control::connect(mcp, state, call.params) {
            Ok((result, status)) => {
                peer.send(frame::result_response(id, &result.to_string()));
                peer.send(frame::notification("status", &status));
                return;
            }
            Err(error) => Err(error),
        },
        "disconnect" => Ok(control::disconnect(mcp, state)),
        _ => return forward(call, mcp, rate, state),
    };
    match result {
        Ok(result) => {
            peer.send(frame::result_response(id, &result.to_string()));
        }
        Err((code, message)) => reply_error(&peer, state, id, code, &message),
    }
}

fn forward(call: &Call<'_>, mcp: &mut McpState, rate: &mut RateLimit, state: &RelayState) {
    let id_raw = call.id.expect("a request has an id");
    let id = id_raw.get();
    let peer = mcp.peer.clone();
    if let Err(message) = routable(call, mcp, state) {
        return reply_error(&peer, state, id, code::SERVER_ERROR, &message);
    }
    let Some(connection_id) = mcp.connection.clone() else {
        return reply_error(
            &peer,
            state,
            id,
            code::SERVER_ERROR,
            "Not connected to an extension",
        );
    };
    if !rate.try_acquire() {
        return reply_error(&peer, state, id, code::RATE_LIMITED, "Rate limit exceeded");
    }
    match state
        .hub
        .forward_request(&connection_id, id_raw, &call.method, call.params)
    {
        Ok(()) => {}
        Err(HubError::NotConnected) => {
            mcp.connection = None;
            reply_error(
                &peer,
                state,
                id,
                code::SERVER_ERROR,
                "Not connected to an extension",
            );
        }
        Err(error) => reply_error(&peer, state, id, error.code(), &error.to_string()),
    }
}
