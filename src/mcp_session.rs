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
use crate::hub::EndCause;
use crate::limits::{RateLimit, SocketSlot};
use crate::metrics::SocketGauge;
use crate::peer::{self, close_code, Inbound, LastSeen, Peer};
use crate::protocol::RelayError;
use crate::state::RelayState;
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
        token_expires: None,
        control_rate: RateLimit::new(
            state.config.hub.control_rate_limit,
            state.config.hub.control_rate_burst,
        ),
    };
    let mut rate = RateLimit::new(state.config.rate_limit, state.config.rate_burst);
    // One timer: until a handshake succeeds it is the --auth-timeout deadline; from then on it
    // is the token's expiry (plus the grace), moved by a later handshake with a fresher token.
    let deadline = tokio::time::sleep(state.config.auth_timeout);
    tokio::pin!(deadline);
    let mut expires: Option<tokio::time::Instant> = None;
    loop {
        let inbound = tokio::select! {
            _ = &mut deadline => {
                if expires.is_some() {
                    // A token that no longer opens a socket must not keep an old one working.
                    peer.close_after_flush(close_code::POLICY, "token expired");
                } else {
                    peer.close_after_flush(
                        close_code::POLICY,
                        format!(
                            "authentication timed out: no successful mcp_handshake within {} s",
                            state.config.auth_timeout.as_secs_f64()
                        ),
                    );
                }
                break;
            }
            inbound = peer::next_inbound(
                &mut stream,
                &peer,
                &state.shutdown,
                &last_seen,
                state.config.max_message_bytes,
            ) => inbound,
        };
        match inbound {
            Inbound::Text(text) => {
                handle_frame(&text, &mut mcp, &mut rate, &state);
                if mcp.token_expires != expires {
                    if expires.is_none() {
                        peer.authenticated();
                    }
                    expires = mcp.token_expires;
                    if let Some(at) = expires {
                        deadline
                            .as_mut()
                            .reset(at + state.config.token_expiry_grace);
                    }
                }
            }
            Inbound::NotText => {
                reply_error(&peer, &state, "null", &RelayError::BinaryNotUtf8);
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

fn reply_error(peer: &Peer, state: &RelayState, id: &str, error: &RelayError) {
    state.metrics.error(error.code());
    peer.send(error.response(id));
}

fn handle_frame(text: &str, mcp: &mut McpState, rate: &mut RateLimit, state: &RelayState) {
    match frame::parse(text) {
        Ok(Incoming::Request(call)) => handle_request(&call, mcp, rate, state),
        Ok(Incoming::Notification(call)) => {
            // Notifications get no answer, so there is nothing to report if they cannot go
            // anywhere; forward them when there is a connection.
            if frame::is_relay_method(&call.method) {
                // Only the relay speaks for the relay (see `frame::RELAY_METHODS`); a
                // notification gets no reply, so it is dropped and counted.
                state.metrics.error(code::METHOD_NOT_FOUND);
                return;
            }
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
                reply_error(
                    &mcp.peer,
                    state,
                    reply.id.get(),
                    &RelayError::IdWithoutMethod,
                );
            }
        }
        Err(error) => {
            state.metrics.error(error.code);
            mcp.peer.send(error.to_response());
        }
    }
}

/// Checks a top-level `connectionId`, if present, against this socket's connection.
fn routable(call: &Call<'_>, mcp: &mut McpState, state: &RelayState) -> Result<(), RelayError> {
    let live = mcp.live_connection(state);
    let Some(named) = call.connection_id else {
        return Ok(());
    };
    match (frame::id_string(named), live) {
        (Some(named), Some(live)) if named == live => Ok(()),
        (_, None) => Err(RelayError::NotConnected),
        _ => Err(RelayError::WrongConnection),
    }
}

fn handle_request(call: &Call<'_>, mcp: &mut McpState, rate: &mut RateLimit, state: &RelayState) {
    let id_raw = call.id.expect("a request has an id");
    let id = id_raw.get();
    let peer = mcp.peer.clone();
    if let Some(prefix) = frame::reserved_prefix(id_raw) {
        return reply_error(&peer, state, id, &RelayError::ReservedId(prefix));
    }
    let result = match call.method.as_str() {
        m if control::is_control(m) && !mcp.control_rate.try_acquire() => {
            Err(RelayError::ControlRateLimited)
        }
        "mcp_handshake" => control::handshake(mcp, state, call.params),
        _ if mcp.client.is_none() => Err(RelayError::NotAuthenticated),
        "list_extensions" => Ok(control::list_extensions(
            mcp.client.as_ref().expect("checked above"),
            state,
        )),
        "connect" => match control::connect(mcp, state, call.params) {
            Ok((result, status)) => {
                peer.send(frame::result_response(id, &result.to_string()));
                peer.send(status);
                return;
            }
            Err(error) => Err(error),
        },
        "disconnect" => Ok(control::disconnect(mcp, state)),
        method if frame::is_relay_method(method) => Err(RelayError::RelayMethod(method.to_owned())),
        _ => return forward(call, mcp, rate, state),
    };
    match result {
        Ok(result) => {
            peer.send(frame::result_response(id, &result.to_string()));
        }
        Err(error) => reply_error(&peer, state, id, &error),
    }
}

fn forward(call: &Call<'_>, mcp: &mut McpState, rate: &mut RateLimit, state: &RelayState) {
    let id_raw = call.id.expect("a request has an id");
    let id = id_raw.get();
    let peer = mcp.peer.clone();
    if let Err(error) = routable(call, mcp, state) {
        return reply_error(&peer, state, id, &error);
    }
    let Some(connection_id) = mcp.connection.clone() else {
        return reply_error(&peer, state, id, &RelayError::NotConnected);
    };
    if !rate.try_acquire() {
        return reply_error(&peer, state, id, &RelayError::RateLimited);
    }
    match state
        .hub
        .forward_request(&connection_id, id_raw, &call.method, call.params)
    {
        Ok(()) => {}
        Err(error) => {
            if error == RelayError::NotConnected {
                mcp.connection = None;
            }
            reply_error(&peer, state, id, &error);
        }
    }
}
