//! How a connection ends. Every path that ends one (a client's `disconnect`, a socket or a
//! node going away, shutdown) goes through [`Hub::end`] with an [`Ending`], and the `Ending`
//! alone decides what each side is told; the connection's record says where each side is.
//!
//! | Ending | pending requests answered with | extension told | client told | client waits for `connected` |
//! |---|---|---|---|---|
//! | `Disconnect(ClientRequest)` | closed by disconnect | "MCP client disconnected" | | |
//! | `Disconnect(ShuttingDown)` | shutting down | "relay shutting down" | | |
//! | `ClientGone` | (nobody to answer) | "MCP client went away" | | |
//! | `ClientEnded(reason)` | (the client's node did) | `reason` | | |
//! | `ClientNodeGone` | (nobody to answer) | "MCP client's relay node went away" | | |
//! | `ExtensionGone` | extension left | (gone) | `disconnected` | yes |
//! | `ExtensionReportedGone` | extension left | (gone) | (its node's `disconnected` was forwarded) | yes |
//! | `StoppedByOwner(reason)` | stopped by the owner | `reason` | `disconnected` | |
//! | `Shutdown` | shutting down | only a remote extension's node | | |
//! | `Kicked` | closed by the operator | "Closed by the relay's operator" | `disconnected` | |
//! | `Abandoned` | (none yet) | | | |
//!
//! "Extension told" means, for an extension here, `notifications/cancelled` for each pending
//! request, `connection_closed` and a new `status`; for one on another node, an `end` message
//! to that node, which tells the extension the same. Pending requests are answered on whichever
//! node the client is. On `Shutdown` an extension here is not told: its own session sends it
//! `shutdown` and closes its socket.

use std::time::Instant;

use super::connection::{ClientSide, ExtensionSide};
use super::Hub;
use crate::protocol::{self, RelayError};

/// Why a connection ends while its MCP client is still listening (what a session asks for).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndCause {
    /// The client sent `disconnect`.
    ClientRequest,
    /// The relay is shutting down.
    ShuttingDown,
}

/// Why a connection ends; see the module documentation for what each one does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending<'a> {
    /// The client, still listening, ended it.
    Disconnect(EndCause),
    /// The client's socket closed.
    ClientGone,
    /// The client's node ended it (its `end` message) and answered the client itself.
    ClientEnded(&'a str),
    /// The client's node died, restarted or left the cluster.
    ClientNodeGone,
    /// The extension's last socket closed here, or its node went away. `name` is the name the
    /// `disconnected` notice carries, `reason` its reason.
    ExtensionGone { name: &'a str, reason: &'a str },
    /// The extension's node said it is gone, in a `disconnected` already passed to the client.
    ExtensionReportedGone,
    /// The browser's owner stopped it from the extension (`close_connection`); `reason` is
    /// the whole `disconnected` reason. The extension stays, so the client is not told
    /// `connected` later: it was stopped, not dropped.
    StoppedByOwner(&'a str),
    /// This relay is shutting down.
    Shutdown,
    /// The relay's operator ended it (admin API, `mcp-relay admin kick`): the client is told
    /// `disconnected`, the extension `connection_closed`.
    Kicked,
    /// `connect` lost a race with the extension leaving: nobody has heard of it yet.
    Abandoned,
}

impl<'a> Ending<'a> {
    /// The error pending requests are answered with, when the client can still hear it.
    fn answer(self) -> Option<RelayError> {
        match self {
            Ending::Disconnect(EndCause::ClientRequest) => Some(RelayError::ClosedByDisconnect),
            Ending::Disconnect(EndCause::ShuttingDown) | Ending::Shutdown => {
                Some(RelayError::ShuttingDown)
            }
            Ending::ExtensionGone { .. } | Ending::ExtensionReportedGone => {
                Some(RelayError::ExtensionLeft)
            }
            Ending::StoppedByOwner(_) => Some(RelayError::StoppedByOwner),
            Ending::Kicked => Some(RelayError::KickedByOperator),
            Ending::ClientGone
            | Ending::ClientEnded(_)
            | Ending::ClientNodeGone
            | Ending::Abandoned => None,
        }
    }

    /// The reason the extension is given, when it is still there to hear it.
    fn tell_extension(self, extension: &ExtensionSide) -> Option<&'a str> {
        match self {
            Ending::Disconnect(EndCause::ClientRequest) => Some("MCP client disconnected"),
            Ending::Disconnect(EndCause::ShuttingDown) => Some("relay shutting down"),
            Ending::ClientGone => Some("MCP client went away"),
            Ending::ClientEnded(reason) => Some(reason),
            Ending::ClientNodeGone => Some("MCP client's relay node went away"),
            Ending::StoppedByOwner(reason) => Some(reason),
            Ending::Kicked => Some(protocol::KICKED_REASON),
            Ending::Shutdown if !extension.is_local() => Some("relay shutting down"),
            Ending::Shutdown
            | Ending::ExtensionGone { .. }
            | Ending::ExtensionReportedGone
            | Ending::Abandoned => None,
        }
    }
}

impl Hub {
    /// Ends a connection as `ending` says (see the module documentation). Returns `false` when
    /// it had already ended: whoever ended it first told everyone.
    pub fn end(&self, connection_id: &str, ending: Ending<'_>) -> bool {
        let Some((_, conn)) = self.connections.remove(connection_id) else {
            return false;
        };
        let pending = conn
            .pending
            .lock()
            .unwrap()
            .take()
            .unwrap_or_default()
            .requests;
        if conn.extension.is_local() {
            self.metrics.connections.dec();
            self.metrics.pending_requests.sub(pending.len() as i64);
        }
        let mut pending = pending;
        if let Some(answer) = ending.answer() {
            for request in pending.values() {
                self.send_to_client(&conn, answer.response(&request.original_id));
                self.metrics.error(answer.code());
            }
        }
        // Every request ends in the audit trail: with the answer the client got, or -32004
        // when nobody was left to answer.
        let recorded = ending
            .answer()
            .map_or(crate::frame::code::EXTENSION_GONE, |a| a.code());
        for request in pending.values_mut() {
            self.audit_request(&conn, request, recorded);
        }
        let notice = match ending {
            Ending::ExtensionGone { name, reason } => Some((name, reason)),
            Ending::StoppedByOwner(reason) => Some((conn.extension_name.as_str(), reason)),
            Ending::Kicked => Some((conn.extension_name.as_str(), protocol::KICKED_REASON)),
            _ => None,
        };
        if let Some((name, reason)) = notice {
            self.send_to_client(
                &conn,
                protocol::disconnected(connection_id, &conn.extension_id, Some(name), reason),
            );
        }
        if let Some(reason) = ending.tell_extension(&conn.extension) {
            match &conn.extension {
                ExtensionSide::Local => {
                    for mapped in pending.keys() {
                        self.send_to_extension(
                            &conn.extension_id,
                            protocol::cancelled(mapped, reason),
                        );
                    }
                    let detached = self
                        .extensions
                        .get_mut(&conn.extension_id)
                        .map(|mut e| e.connections.retain(|c| c != connection_id))
                        .is_some();
                    if detached {
                        self.send_to_extension(
                            &conn.extension_id,
                            protocol::connection_closed(connection_id, reason),
                        );
                        self.send_status_to_extension(&conn.extension_id);
                    }
                }
                ExtensionSide::Remote { node } => {
                    if let Some(cluster) = &self.cluster {
                        cluster.end(node, connection_id, reason);
                    }
                }
            }
        }
        let remembers = matches!(
            ending,
            Ending::ExtensionGone { .. } | Ending::ExtensionReportedGone
        );
        // Clients on other nodes are told `connected` by their own node.
        if let (true, ClientSide::Local(peer)) = (remembers, &conn.client) {
            if peer.is_open() {
                self.returns.add(
                    &conn.extension_id,
                    &conn.user_id,
                    vec![peer.clone()],
                    Instant::now(),
                );
            }
        }
        true
    }
}
