//! One MCP client socket, from `mcp_handshake` to close: [`McpSession`] reads its frames,
//! answers the control methods, and forwards everything else to the connected extension.
//!
//! The control methods themselves (`mcp_handshake`, `list_extensions`, `connect`,
//! `disconnect`) are methods of the same session, in `control`: they read and change exactly
//! this socket's state, so they belong to it, but they are one family with one reason to change
//! (the relay's own API), so they get their own file beside the frame routing here.
//!
//! Real MCP clients never put `connectionId` in their frames; the relay knows which connection a
//! socket has. A `connectionId` that is present anyway is checked against it and removed, so a
//! forged one cannot reach another client's connection.

mod control;

use std::sync::Arc;

use axum::extract::ws::WebSocket;

use crate::frame::{self, code, Call, Incoming};
use crate::metrics::SocketGauge;
use crate::net::limits::{RateLimit, SocketSlot};
use crate::net::peer::{close_code, Inbound, Peer, PeerReader};
use crate::net::transport::ConnHandle;
use crate::protocol::RelayError;
use crate::routing::hub::{EndCause, McpClient};
use crate::state::RelayState;

/// One MCP socket and everything it knows about itself.
/// How the `client_id` of every Streamable HTTP session begins (the relay chooses it, random,
/// per session); reserved for them: a socket's `mcp_handshake` may not declare it.
pub const HTTP_CLIENT_PREFIX: &str = "http-";

pub struct McpSession {
    state: Arc<RelayState>,
    /// A client inside the relay process (an HTTP session's tools), not a socket.
    in_process: bool,
    /// The writing side: replies, errors and the goodbye go here.
    peer: Peer,
    /// The reading side, until the socket closes or the relay shuts down.
    reader: PeerReader,
    /// Who the socket authenticated as, once an `mcp_handshake` succeeded.
    client: Option<McpClient>,
    /// What the socket holds in the hub from the handshake on; dropping it gives it back,
    /// however the session ends.
    registration: Option<McpRegistration>,
    /// When the token of the last successful handshake expires; a new handshake with a fresher
    /// token of the same user moves it.
    token_expires: Option<tokio::time::Instant>,
    /// Where a revocation of this socket's token finds it, from the first handshake on.
    live: Option<crate::state::LiveGuard>,
    /// This socket's budget for control methods (see [`control`]).
    control_rate: RateLimit,
    /// This socket's budget for forwarded requests (`--rate-limit`, `--rate-burst`).
    rate: RateLimit,
    /// Its place under `--max-connections`, given back when the session ends.
    _slot: SocketSlot,
    /// Counts it in `mcp_relay_mcp_sockets` while it lives.
    _gauge: SocketGauge,
}

/// What an authenticated MCP socket holds in the hub: a place in its user's
/// `--max-mcp-clients-per-user` count and, while connected, its connection.
///
/// Leaving the hub is its `Drop`, not a step at the end of [`McpSession::run`], so an early
/// return or a panic in the session cannot leak the user's count (which would lock the user
/// out once it reached the limit) or leave a connection to a socket that is gone.
pub struct McpRegistration {
    state: Arc<RelayState>,
    user_id: String,
    /// The active connection, if any. The hub is the authority: it may have ended the
    /// connection (extension gone), which this session learns when it next asks.
    connection: Option<String>,
}

impl McpRegistration {
    /// Counts one socket against `user_id`'s limit, or says why it may not.
    fn register(state: &Arc<RelayState>, user_id: &str) -> Result<McpRegistration, RelayError> {
        state.hub.register_mcp(user_id)?;
        Ok(McpRegistration {
            state: Arc::clone(state),
            user_id: user_id.to_owned(),
            connection: None,
        })
    }
}

impl Drop for McpRegistration {
    fn drop(&mut self) {
        if let Some(connection_id) = self.connection.take() {
            self.state.hub.mcp_closed(&connection_id);
        }
        self.state.hub.unregister_mcp(&self.user_id);
    }
}

impl McpSession {
    /// Opens the session of an upgraded `/mcp` socket.
    pub fn new(
        socket: WebSocket,
        state: Arc<RelayState>,
        slot: SocketSlot,
        conn: ConnHandle,
    ) -> McpSession {
        let (peer, reader) = state.open_peer(socket, conn);
        McpSession::with_peer(peer, reader, state, slot)
    }

    /// Opens a session without a socket, for a client inside the relay process (a Streamable
    /// HTTP session's tools): the same session, limits and hub registration as a socket's, over
    /// the returned in-memory ends. Run it with [`Self::run`].
    pub fn in_memory(
        state: Arc<RelayState>,
        slot: SocketSlot,
    ) -> (McpSession, crate::net::peer::InMemoryEnds) {
        let (peer, reader, ends) = state.open_in_memory_peer();
        let mut session = McpSession::with_peer(peer, reader, state, slot);
        session.in_process = true;
        (session, ends)
    }

    fn with_peer(
        peer: Peer,
        reader: PeerReader,
        state: Arc<RelayState>,
        slot: SocketSlot,
    ) -> McpSession {
        let gauge = SocketGauge::open(&state.metrics, |m| &m.mcp_sockets);
        McpSession {
            in_process: false,
            peer,
            reader,
            client: None,
            registration: None,
            live: None,
            token_expires: None,
            control_rate: RateLimit::new(
                state.config.hub.control_rate_limit,
                state.config.hub.control_rate_burst,
            ),
            rate: RateLimit::new(state.config.rate_limit, state.config.rate_burst),
            _slot: slot,
            _gauge: gauge,
            state,
        }
    }

    /// Runs the socket to its end. It must complete `mcp_handshake` within `--auth-timeout` or
    /// is closed with 1008: until then it is anonymous and holds a slot of the unauthenticated
    /// pool.
    pub async fn run(mut self) {
        // One timer: until a handshake succeeds it is the --auth-timeout deadline; from then on
        // it is the token's expiry (plus the grace), moved by a later handshake with a fresher
        // token.
        let deadline = tokio::time::sleep(self.state.config.auth_timeout);
        tokio::pin!(deadline);
        let mut expires: Option<tokio::time::Instant> = None;
        loop {
            let inbound = tokio::select! {
                _ = &mut deadline => {
                    if expires.is_some() {
                        // A token that no longer opens a socket must not keep an old one
                        // working.
                        self.peer.close_after_flush(close_code::POLICY, "token expired");
                    } else {
                        self.peer.close_after_flush(
                            close_code::POLICY,
                            format!(
                                "authentication timed out: no successful mcp_handshake within {} s",
                                self.state.config.auth_timeout.as_secs_f64()
                            ),
                        );
                    }
                    break;
                }
                inbound = self.reader.next_text() => inbound,
            };
            match inbound {
                Inbound::Text(text) => {
                    self.handle_frame(&text);
                    if self.token_expires != expires {
                        if expires.is_none() {
                            self.peer.authenticated();
                        }
                        expires = self.token_expires;
                        if let Some(at) = expires {
                            deadline
                                .as_mut()
                                .reset(at + self.state.config.token_expiry_grace);
                        }
                    }
                }
                Inbound::NotText => self.reply_error("null", &RelayError::BinaryNotUtf8),
                Inbound::Shutdown => {
                    if let Some(connection_id) = self.take_connection() {
                        self.state
                            .hub
                            .disconnect(&connection_id, EndCause::ShuttingDown);
                    }
                    self.peer.say_goodbye();
                    break;
                }
                Inbound::Closed => break,
            }
        }
        // Leave the hub (the connection, then the user's count) before the socket closes.
        drop(self.registration.take());
        // Let queued frames (a final error, a goodbye) go out before the close frame.
        self.peer.close_after_flush(close_code::NORMAL, "");
    }

    fn reply_error(&self, id: &str, error: &RelayError) {
        self.state.metrics.error(error.code());
        self.peer.send(error.response(id));
    }

    /// The connection this socket believes it has, without asking the hub.
    fn connection(&self) -> Option<&String> {
        self.registration.as_ref()?.connection.as_ref()
    }

    /// Forgets the connection and returns it, so the caller can end it in the hub.
    fn take_connection(&mut self) -> Option<String> {
        self.registration.as_mut()?.connection.take()
    }

    fn handle_frame(&mut self, text: &str) {
        match frame::parse(text) {
            Ok(Incoming::Request(call)) => self.handle_request(&call),
            Ok(Incoming::Notification(call)) => {
                // Notifications get no answer, so there is nothing to report if they cannot go
                // anywhere; forward them when there is a connection.
                if frame::is_relay_method(&call.method) {
                    // Only the relay speaks for the relay (see `frame::RELAY_METHODS`); a
                    // notification gets no reply, so it is dropped and counted.
                    self.state.metrics.error(code::METHOD_NOT_FOUND);
                    return;
                }
                if self.client.is_some() && self.routable(&call).is_ok() {
                    if let Some(connection_id) = self.connection() {
                        let _ = self.state.hub.forward_notification(
                            connection_id,
                            &call.method,
                            call.params,
                        );
                    }
                }
            }
            // The relay never sends requests to MCP clients, so a response answers nothing and,
            // as JSON-RPC requires, gets no reply. A frame with an id and nothing else is neither
            // a request nor a response: the sender is waiting for something, so say what is
            // wrong.
            Ok(Incoming::Response(reply)) => {
                if reply.result.is_none() && reply.error.is_none() {
                    self.reply_error(reply.id.get(), &RelayError::IdWithoutMethod);
                }
            }
            Err(error) => {
                self.state.metrics.error(error.code);
                self.peer.send(error.to_response());
            }
        }
    }

    /// Checks a top-level `connectionId`, if present, against this socket's connection.
    fn routable(&mut self, call: &Call<'_>) -> Result<(), RelayError> {
        let live = self.live_connection();
        let Some(named) = call.connection_id else {
            return Ok(());
        };
        match (frame::id_string(named), live) {
            (Some(named), Some(live)) if named == live => Ok(()),
            (_, None) => Err(RelayError::NotConnected),
            _ => Err(RelayError::WrongConnection),
        }
    }

    fn handle_request(&mut self, call: &Call<'_>) {
        let id_raw = call.id.expect("a request has an id");
        let id = id_raw.get();
        if let Some(prefix) = frame::reserved_prefix(id_raw) {
            return self.reply_error(id, &RelayError::ReservedId(prefix));
        }
        let result = match call.method.as_str() {
            m if control::is_control(m) && !self.control_rate.try_acquire() => {
                Err(RelayError::ControlRateLimited)
            }
            "mcp_handshake" => self.handshake(call.params),
            _ if self.client.is_none() => Err(RelayError::NotAuthenticated),
            "list_extensions" => Ok(self.list_extensions()),
            "connect" => match self.connect(call.params) {
                Ok((result, status)) => {
                    self.peer
                        .send(frame::result_response(id, &result.to_string()));
                    self.peer.send(status);
                    return;
                }
                Err(error) => Err(error),
            },
            "disconnect" => Ok(self.disconnect()),
            method if frame::is_relay_method(method) => {
                Err(RelayError::RelayMethod(method.to_owned()))
            }
            _ => return self.forward(call),
        };
        match result {
            Ok(result) => {
                self.peer
                    .send(frame::result_response(id, &result.to_string()));
            }
            Err(error) => self.reply_error(id, &error),
        }
    }

    fn forward(&mut self, call: &Call<'_>) {
        let id_raw = call.id.expect("a request has an id");
        let id = id_raw.get();
        if let Err(error) = self.routable(call) {
            return self.reply_error(id, &error);
        }
        let Some(connection_id) = self.connection().cloned() else {
            return self.reply_error(id, &RelayError::NotConnected);
        };
        if !self.rate.try_acquire() {
            if let (Some(audit), Some(tag)) = (
                &self.state.audit,
                self.state.hub.connection_tag(&connection_id),
            ) {
                let refusal = RelayError::RateLimited;
                audit.refused(&tag, &call.method, refusal.code(), refusal.reason());
            }
            return self.reply_error(id, &RelayError::RateLimited);
        }
        if let Err(error) =
            self.state
                .hub
                .forward_request(&connection_id, id_raw, &call.method, call.params)
        {
            if error == RelayError::NotConnected {
                self.take_connection();
            }
            self.reply_error(id, &error);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ServeConfig;

    fn one_client_per_user() -> Arc<RelayState> {
        let mut config = ServeConfig::defaults();
        config.max_mcp_clients_per_user = 1;
        crate::state::for_tests(config)
    }

    #[test]
    fn a_registration_holds_the_users_place_until_dropped() {
        let state = one_client_per_user();
        let registration = McpRegistration::register(&state, "alice").unwrap();
        assert_eq!(
            McpRegistration::register(&state, "alice").err(),
            Some(RelayError::TooManyMcpClients(1))
        );
        drop(registration);
        assert!(McpRegistration::register(&state, "alice").is_ok());
    }

    #[tokio::test]
    async fn a_session_that_panics_gives_back_its_users_place() {
        let state = one_client_per_user();
        let session_state = Arc::clone(&state);
        let session = tokio::spawn(async move {
            let _registration = McpRegistration::register(&session_state, "alice").unwrap();
            panic!("a bug in the session");
        });
        assert!(session.await.unwrap_err().is_panic());
        assert!(McpRegistration::register(&state, "alice").is_ok());
    }

    /// The pre-auth deadline itself, on a paused clock and without a socket: a client that
    /// never completes `mcp_handshake` is ended exactly at `--auth-timeout`, not before.
    /// (`hostile_sockets::mcp_sockets_must_handshake_within_the_auth_timeout` shows the close
    /// frame on a real socket, in real time.)
    #[tokio::test(start_paused = true)]
    async fn a_client_that_never_handshakes_is_ended_at_the_auth_timeout() {
        let state = crate::state::for_tests(ServeConfig::defaults());
        let auth_timeout = state.config.auth_timeout;
        let slot = SocketSlot::acquire(&state.open_sockets, usize::MAX).unwrap();
        let (session, mut ends) = McpSession::in_memory(Arc::clone(&state), slot);
        let started = tokio::time::Instant::now();
        tokio::spawn(session.run());
        let early = auth_timeout - std::time::Duration::from_millis(1);
        assert!(
            tokio::time::timeout(early, ends.from_relay.recv())
                .await
                .is_err(),
            "ended before the auth timeout"
        );
        assert_eq!(ends.from_relay.recv().await, None, "ended without a word");
        assert_eq!(started.elapsed(), auth_timeout);
    }

    #[tokio::test]
    async fn an_aborted_session_gives_back_its_users_place() {
        let state = one_client_per_user();
        let session_state = Arc::clone(&state);
        let (registered, wait) = tokio::sync::oneshot::channel();
        let session = tokio::spawn(async move {
            let _registration = McpRegistration::register(&session_state, "alice").unwrap();
            let _ = registered.send(());
            std::future::pending::<()>().await;
        });
        wait.await.unwrap();
        assert!(McpRegistration::register(&state, "alice").is_err());
        session.abort();
        assert!(session.await.unwrap_err().is_cancelled());
        assert!(McpRegistration::register(&state, "alice").is_ok());
    }
}
