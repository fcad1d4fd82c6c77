//! The hub: who is online, who is connected to whom, which requests are waiting for an answer,
//! and how a frame gets from one socket to another.
//!
//! Sessions talk to the hub only through the [`Hub`] trait, so that a clustered backend (an MCP
//! client on one relay node, its extension on another) can replace [`LocalHub`] without touching
//! the sessions: `crate::cluster::ClusterHub` wraps a `LocalHub`, and a connection whose MCP
//! client is on another node has an [`McpSink::Remote`] where a local one has a socket. Every method is synchronous and non-blocking: sending means pushing onto a
//! peer's queue ([`Peer::send`]), never awaiting the network.
//!
//! # State
//! - `extensions`: one entry per extension *identity* (user + `client_id`), holding its open
//!   sockets (newest last; requests go to the newest) and its connections.
//! - `connections`: one entry per MCP-to-extension connection, holding the MCP peer and the
//!   pending requests of that connection. A connection, not a socket, owns its pending requests,
//!   which is what lets a duplicate extension socket take over without losing any of them.
//!
//! Lock discipline: never hold a reference into one map while locking another; clone what is
//! needed out first. A connection's `pending` mutex is the innermost lock.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::ws::Utf8Bytes;
use dashmap::DashMap;
use serde::Serialize;
use serde_json::json;
use serde_json::value::RawValue;
use uuid::Uuid;

use crate::frame::{self, code, Reply};
use crate::metrics::Metrics;
use crate::peer::{close_code, Peer};

/// What an extension told the relay about itself when it authenticated.
#[derive(Debug, Clone)]
pub struct ExtensionAuth {
    pub user_id: String,
    /// Generated once and stored by the extension; the stable part of its identity.
    pub client_id: Option<String>,
    pub name: String,
    pub version: Option<String>,
}

/// An authenticated MCP socket.
#[derive(Debug, Clone)]
pub struct McpClient {
    pub user_id: String,
    pub mcp_client_id: String,
    pub peer: Peer,
}

/// One row of `list_extensions`.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ExtensionInfo {
    pub id: String,
    pub name: String,
    pub connected: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// The result of `connect`.
#[derive(Debug, Clone)]
pub struct ConnectInfo {
    pub connection_id: String,
    pub extension_id: String,
    pub extension_name: String,
    pub peer_count: usize,
}

/// Why the hub refused something, with the JSON-RPC code and message the client will see.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HubError {
    #[error("Extension not found or not accessible")]
    ExtensionNotFound,
    #[error("Not connected to an extension")]
    NotConnected,
    #[error("The extension disconnected before the request could be delivered")]
    ExtensionGone,
    #[error("Too many extensions for this user (limit {0})")]
    TooManyExtensions(usize),
    #[error("Too many MCP clients for this user (limit {0})")]
    TooManyMcpClients(usize),
    #[error("Request too large for the cluster transport (NATS max_payload is {0} bytes)")]
    TooLargeForCluster(usize),
}

impl HubError {
    pub fn code(&self) -> i64 {
        match self {
            HubError::ExtensionNotFound | HubError::NotConnected => code::SERVER_ERROR,
            HubError::ExtensionGone => code::EXTENSION_GONE,
            HubError::TooManyExtensions(_)
            | HubError::TooManyMcpClients(_)
            | HubError::TooLargeForCluster(_) => code::LIMIT_REACHED,
        }
    }
}

/// Why a connection ends while its MCP client is still listening.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndCause {
    /// The client sent `disconnect`.
    ClientRequest,
    /// The relay is shutting down.
    ShuttingDown,
}

impl EndCause {
    /// The error pending requests are answered with, and the reason the extension is given
    /// when it is told to cancel them.
    pub fn replies(self) -> ((i64, &'static str), &'static str) {
        match self {
            EndCause::ClientRequest => (
                (
                    code::EXTENSION_GONE,
                    "The connection was closed by disconnect before the extension answered",
                ),
                "MCP client disconnected",
            ),
            EndCause::ShuttingDown => (
                (code::SHUTTING_DOWN, "The relay is shutting down"),
                "relay shutting down",
            ),
        }
    }
}

/// The routing interface the sessions use. See the module documentation.
pub trait Hub: Send + Sync + 'static {
    /// Counts an authenticated MCP socket against its user's limit.
    fn register_mcp(&self, user_id: &str) -> Result<(), HubError>;
    /// Releases what [`Hub::register_mcp`] counted.
    fn unregister_mcp(&self, user_id: &str);
    /// Adds an authenticated extension socket, sends it the `authenticated` notification (then
    /// `status` when it joins a live extension), and returns the extension id.
    fn register_extension(&self, auth: &ExtensionAuth, peer: &Peer) -> Result<String, HubError>;
    /// Adds an authenticated extension socket as the *oldest* of its identity: it is told
    /// `authenticated` and `status` like any socket, but requests keep going to the newer one.
    /// For a socket whose `authenticate` was answered on another socket of the same browser
    /// (see `extension_session`). When the identity is not live, this is
    /// [`Hub::register_extension`].
    fn register_idle_duplicate(
        &self,
        auth: &ExtensionAuth,
        peer: &Peer,
    ) -> Result<String, HubError>;
    /// An extension socket closed. When it was the identity's last, the extension goes away.
    fn extension_socket_closed(&self, extension_id: &str, peer: &Peer, reason: &str);
    /// The caller's user's extensions.
    fn list_extensions(&self, user_id: &str) -> Vec<ExtensionInfo>;
    /// Connects an MCP client to one of its user's extensions.
    fn connect(&self, client: &McpClient, extension_id: &str) -> Result<ConnectInfo, HubError>;
    /// Ends a connection while its MCP client is still there: pending requests are answered
    /// with an error saying why, and the extension is told to cancel them.
    fn disconnect(&self, connection_id: &str, cause: EndCause);
    /// The MCP socket of a connection went away: pending requests are forgotten, and the
    /// extension is told to cancel them.
    fn mcp_closed(&self, connection_id: &str);
    /// True while the connection exists.
    fn is_connected(&self, connection_id: &str) -> bool;
    /// Forwards a request with its id mapped; the answer arrives later on the MCP peer.
    fn forward_request(
        &self,
        connection_id: &str,
        id: &RawValue,
        method: &str,
        params: Option<&RawValue>,
    ) -> Result<(), HubError>;
    /// Forwards an MCP notification to the connection's extension.
    fn forward_notification(
        &self,
        connection_id: &str,
        method: &str,
        params: Option<&RawValue>,
    ) -> Result<(), HubError>;
    /// Routes an extension's response back to its requester. Returns `false` for unknown ids.
    fn deliver_response(&self, extension_id: &str, reply: &Reply<'_>) -> bool;
    /// Routes an extension's notification to one connection (`target`) or all of its
    /// connections. `frame` is the notification to deliver, already without `connectionId`.
    fn extension_notification(&self, extension_id: &str, target: Option<&str>, frame: String);
    /// Answers every request older than the timeout with an error.
    fn expire_requests(&self, now: Instant);
    /// Answers every pending request with a shutdown error.
    fn shutdown(&self);
}

/// Limits the hub enforces.
#[derive(Debug, Clone)]
pub struct HubLimits {
    pub request_timeout: Duration,
    pub max_extensions_per_user: usize,
    pub max_mcp_clients_per_user: usize,
    pub max_sockets_per_extension: usize,
}

/// A request waiting for the extension's answer.
struct PendingRequest {
    /// The id exactly as the MCP client wrote it (raw JSON).
    original_id: Box<str>,
    started: Instant,
}

/// Where the frames for a connection's MCP client go.
#[derive(Clone)]
pub enum McpSink {
    /// The MCP client's socket on this node.
    Socket(Peer),
    /// An MCP client on another relay node; frames travel through the cluster transport.
    Remote(Arc<dyn RemoteMcp>),
}

/// The MCP side of a connection whose client is on another relay node (see `crate::cluster`).
pub trait RemoteMcp: Send + Sync {
    /// Queues a frame for the remote client. Never blocks, like [`Peer::send`].
    fn send(&self, frame: Utf8Bytes) -> bool;
}

impl McpSink {
    pub fn send(&self, frame: impl Into<Utf8Bytes>) -> bool {
        match self {
            McpSink::Socket(peer) => peer.send(frame),
            McpSink::Remote(remote) => remote.send(frame.into()),
        }
    }
}

/// One extension as other relay nodes see it (the presence a node publishes).
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
pub struct PresenceEntry {
    pub id: String,
    pub user_id: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// MCP connections to it, for the `peer_count` a remote `connect` reports.
    pub connections: usize,
}

struct Connection {
    id: String,
    extension_id: String,
    mcp: McpSink,
    /// `None` once the connection has ended, so a request racing with the end cannot be
    /// inserted into a map nobody will ever drain.
    pending: Mutex<Option<HashMap<String, PendingRequest>>>,
    /// Disambiguates requests that reuse an id that is still pending.
    collisions: AtomicU64,
}

struct ExtensionEntry {
    user_id: String,
    name: String,
    version: Option<String>,
    /// Open sockets of this identity, oldest first; requests go to the last one.
    sockets: Vec<Peer>,
    connections: Vec<String>,
}

/// The single-node hub.
pub struct LocalHub {
    extensions: DashMap<String, ExtensionEntry>,
    connections: DashMap<String, Arc<Connection>>,
    /// MCP peers that were connected to an extension when it went away, to be told `connected`
    /// when it comes back.
    former_peers: DashMap<String, Vec<Peer>>,
    /// Per user: (extension identities, authenticated MCP sockets).
    users: DashMap<String, (usize, usize)>,
    metrics: Arc<Metrics>,
    limits: HubLimits,
}

/// Namespace for deriving stable extension ids (a fixed random UUID).
const EXTENSION_ID_NAMESPACE: Uuid = Uuid::from_u128(0x6d63_7072_656c_4179_a5e1_2c0f_3b9d_7e41);

/// The stable extension id for a user's browser: a name-based UUID, so the same browser gets the
/// same id on every reconnect, on every relay node, without shared state.
pub fn extension_id_for(user_id: &str, client_key: &str) -> String {
    let material = format!("{}:{}:{}", user_id.len(), user_id, client_key);
    format!(
        "ext-{}",
        Uuid::new_v5(&EXTENSION_ID_NAMESPACE, material.as_bytes())
    )
}

/// A new connection id; unique across nodes.
pub fn new_connection_id() -> String {
    format!("conn-{}", Uuid::new_v4())
}

/// The `connected` notification MCP clients get when their extension is back.
pub fn connected_frame(extension_id: &str, name: &str) -> String {
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

/// The `status` notification an extension gets: its MCP peers.
fn status_frame(connections: &[String]) -> String {
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

/// The `status` timestamp, in the format the spec shows (`2025-10-20T21:43:53.163+0000`).
pub fn timestamp() -> String {
    chrono::Utc::now()
        .format("%Y-%m-%dT%H:%M:%S%.3f%z")
        .to_string()
}

impl LocalHub {
    pub fn new(limits: HubLimits, metrics: Arc<Metrics>) -> Self {
        LocalHub {
            extensions: DashMap::new(),
            connections: DashMap::new(),
            former_peers: DashMap::new(),
            users: DashMap::new(),
            metrics,
            limits,
        }
    }

    fn connection(&self, connection_id: &str) -> Option<Arc<Connection>> {
        self.connections.get(connection_id).map(|c| Arc::clone(&c))
    }

    /// The socket requests for this extension go to.
    fn newest_socket(&self, extension_id: &str) -> Option<Peer> {
        self.extensions
            .get(extension_id)
            .and_then(|e| e.sockets.last().cloned())
    }

    /// Tells every socket of an extension how many MCP clients are connected to it.
    fn send_status_to_extension(&self, extension_id: &str) {
        let Some((sockets, connections)) = self
            .extensions
            .get(extension_id)
            .map(|e| (e.sockets.clone(), e.connections.clone()))
        else {
            return;
        };
        let status = status_frame(&connections);
        for socket in sockets {
            socket.send(status.clone());
        }
    }

    fn send_to_extension(&self, extension_id: &str, frame: String) {
        if let Some(socket) = self.newest_socket(extension_id) {
            socket.send(frame);
        }
    }

    /// Ends a connection. `answer` is the error for pending requests when the MCP client is
    /// still there to receive it; `cancel_reason` is what the extension is told, when it is
    /// still there to hear it.
    fn end_connection(
        &self,
        connection_id: &str,
        answer: Option<(i64, &str)>,
        cancel_reason: Option<&str>,
    ) -> Option<Arc<Connection>> {
        let (_, conn) = self.connections.remove(connection_id)?;
        self.metrics.connections.fetch_sub(1, Relaxed);
        let pending = conn.pending.lock().unwrap().take().unwrap_or_default();
        self.metrics
            .pending_requests
            .fetch_sub(pending.len() as i64, Relaxed);
        if let Some((code, message)) = answer {
            for request in pending.values() {
                conn.mcp
                    .send(frame::error_response(&request.original_id, code, message));
                self.metrics.error(code);
            }
        }
        if let Some(reason) = cancel_reason {
            for mapped in pending.keys() {
                self.send_to_extension(
                    &conn.extension_id,
                    frame::notification(
                        "notifications/cancelled",
                        &json!({ "requestId": mapped, "reason": reason }),
                    ),
                );
            }
            let removed = self
                .extensions
                .get_mut(&conn.extension_id)
                .map(|mut e| e.connections.retain(|c| c != connection_id))
                .is_some();
            if removed {
                self.send_to_extension(
                    &conn.extension_id,
                    frame::notification(
                        "connection_closed",
                        &json!({ "connection_id": connection_id, "reason": reason }),
                    ),
                );
                self.send_status_to_extension(&conn.extension_id);
            }
        }
        Some(conn)
    }

    /// Connects an MCP client, local or on another node, to an extension held here.
    /// `connection_id` is chosen by the client's node, so both nodes name it the same.
    pub fn connect_sink(
        &self,
        user_id: &str,
        extension_id: &str,
        mcp: McpSink,
        connection_id: String,
    ) -> Result<ConnectInfo, HubError> {
        // Check ownership before creating anything; the same answer for "absent" and
        // "someone else's" so ids of other users' browsers cannot be probed.
        let owned = self
            .extensions
            .get(extension_id)
            .is_some_and(|e| e.user_id == user_id);
        if !owned || self.connections.contains_key(&connection_id) {
            return Err(HubError::ExtensionNotFound);
        }
        self.connections.insert(
            connection_id.clone(),
            Arc::new(Connection {
                id: connection_id.clone(),
                extension_id: extension_id.to_owned(),
                mcp,
                pending: Mutex::new(Some(HashMap::new())),
                collisions: AtomicU64::new(0),
            }),
        );
        self.metrics.connections.fetch_add(1, Relaxed);
        // Insert first, then attach to the extension: if the extension vanished in between,
        // its cleanup either saw this connection or we undo it here.
        let attached = self.extensions.get_mut(extension_id).and_then(|mut e| {
            (e.user_id == user_id).then(|| {
                e.connections.push(connection_id.clone());
                (e.name.clone(), e.connections.len())
            })
        });
        let Some((extension_name, peer_count)) = attached else {
            self.end_connection(&connection_id, None, None);
            return Err(HubError::ExtensionNotFound);
        };
        self.send_status_to_extension(extension_id);
        Ok(ConnectInfo {
            connection_id,
            extension_id: extension_id.to_owned(),
            extension_name,
            peer_count,
        })
    }

    /// Ends a connection whose MCP client has already been answered elsewhere (its node
    /// answered the pending requests, or is gone): pending requests are forgotten and the
    /// extension is told to cancel them.
    pub fn end_unanswered(&self, connection_id: &str, reason: &str) {
        self.end_connection(connection_id, None, Some(reason));
    }

    /// True when this node holds a socket of the extension.
    pub fn holds_extension(&self, extension_id: &str) -> bool {
        self.extensions.contains_key(extension_id)
    }

    /// What this node tells the other nodes it holds.
    pub fn presence(&self) -> Vec<PresenceEntry> {
        self.extensions
            .iter()
            .map(|e| PresenceEntry {
                id: e.key().clone(),
                user_id: e.user_id.clone(),
                name: e.name.clone(),
                version: e.version.clone(),
                connections: e.connections.len(),
            })
            .collect()
    }

    /// Remembers MCP clients that lost their extension, to tell them `connected` when it is
    /// back.
    pub fn add_former_peers(&self, extension_id: &str, peers: Vec<Peer>) {
        if peers.is_empty() {
            return;
        }
        let mut former = self
            .former_peers
            .entry(extension_id.to_owned())
            .or_default();
        former.retain(|p| p.is_open());
        former.extend(peers);
        // Bounded: a browser flapping all day must not grow this list forever.
        let excess = former.len().saturating_sub(256);
        former.drain(..excess);
    }

    /// Takes the MCP clients waiting for an extension to come back (it came back on another
    /// node).
    pub fn take_former_peers(&self, extension_id: &str) -> Vec<Peer> {
        self.former_peers
            .remove(extension_id)
            .map(|(_, peers)| peers)
            .unwrap_or_default()
    }

    /// True when some MCP client waits for this extension to come back.
    pub fn awaits_return(&self, extension_id: &str) -> bool {
        self.former_peers.contains_key(extension_id)
    }

    /// Adds an authenticated socket to its identity: as the newest (requests go to it) or, for
    /// an idle duplicate, as the oldest.
    fn register_socket(
        &self,
        auth: &ExtensionAuth,
        peer: &Peer,
        newest: bool,
    ) -> Result<String, HubError> {
        // Without a client_id (spec-era extensions), the browser name is the best stable key.
        let key = auth
            .client_id
            .as_deref()
            .map(|c| format!("client:{c}"))
            .unwrap_or_else(|| format!("name:{}", auth.name));
        let extension_id = extension_id_for(&auth.user_id, &key);
        let mut superseded = None;
        let joined_status;
        let new_identity;
        match self.extensions.entry(extension_id.clone()) {
            dashmap::Entry::Occupied(mut entry) => {
                // A duplicate socket of a live extension: it becomes the one requests go to,
                // and everything else (connections, pending requests) carries over as is. An
                // idle duplicate goes first in line instead, so the socket it was found through
                // keeps the traffic.
                let entry = entry.get_mut();
                if newest {
                    entry.sockets.push(peer.clone());
                } else {
                    entry.sockets.insert(0, peer.clone());
                }
                entry.name = auth.name.clone();
                if auth.version.is_some() {
                    entry.version = auth.version.clone();
                }
                if entry.sockets.len() > self.limits.max_sockets_per_extension.max(1) {
                    // Beyond the limit the oldest other socket goes; never the one just taken
                    // in as idle, nor the one requests go to.
                    let oldest_other = if newest { 0 } else { 1 };
                    if oldest_other < entry.sockets.len() - 1 {
                        superseded = Some(entry.sockets.remove(oldest_other));
                    }
                }
                joined_status = status_frame(&entry.connections);
                new_identity = false;
            }
            dashmap::Entry::Vacant(entry) => {
                {
                    let mut counts = self.users.entry(auth.user_id.clone()).or_insert((0, 0));
                    if counts.0 >= self.limits.max_extensions_per_user {
                        return Err(HubError::TooManyExtensions(
                            self.limits.max_extensions_per_user,
                        ));
                    }
                    counts.0 += 1;
                }
                entry.insert(ExtensionEntry {
                    user_id: auth.user_id.clone(),
                    name: auth.name.clone(),
                    version: auth.version.clone(),
                    sockets: vec![peer.clone()],
                    connections: Vec::new(),
                });
                self.metrics.extensions.fetch_add(1, Relaxed);
                joined_status = status_frame(&[]);
                new_identity = true;
            }
        }
        peer.send(frame::notification(
            "authenticated",
            &json!({
                "user_id": auth.user_id,
                "extension_id": extension_id,
                "client_id": auth.client_id,
            }),
        ));
        if let Some(old) = superseded {
            old.close(
                close_code::NORMAL,
                "superseded by newer sockets of the same extension",
            );
        }
        if new_identity {
            if let Some((_, peers)) = self.former_peers.remove(&extension_id) {
                let notice = connected_frame(&extension_id, &auth.name);
                for mcp in peers.iter().filter(|p| p.is_open()) {
                    mcp.send(notice.clone());
                }
            }
        }
        // Every new socket learns its peers right away (none, or those it inherits from a
        // duplicate), so the extension can drop state of connections that no longer exist.
        peer.send(joined_status);
        Ok(extension_id)
    }

    /// Removes the pending entry for `mapped`, if it is still there.
    fn take_pending(&self, conn: &Connection, mapped: &str) -> Option<PendingRequest> {
        let taken = conn.pending.lock().unwrap().as_mut()?.remove(mapped);
        if taken.is_some() {
            self.metrics.pending_requests.fetch_sub(1, Relaxed);
        }
        taken
    }
}

impl Hub for LocalHub {
    fn register_mcp(&self, user_id: &str) -> Result<(), HubError> {
        let mut counts = self.users.entry(user_id.to_owned()).or_insert((0, 0));
        if counts.1 >= self.limits.max_mcp_clients_per_user {
            return Err(HubError::TooManyMcpClients(
                self.limits.max_mcp_clients_per_user,
            ));
        }
        counts.1 += 1;
        Ok(())
    }

    fn unregister_mcp(&self, user_id: &str) {
        if let Some(mut counts) = self.users.get_mut(user_id) {
            counts.1 = counts.1.saturating_sub(1);
        }
        self.users.remove_if(user_id, |_, c| *c == (0, 0));
    }

    fn register_extension(&self, auth: &ExtensionAuth, peer: &Peer) -> Result<String, HubError> {
        self.register_socket(auth, peer, true)
    }

    fn register_idle_duplicate(
        &self,
        auth: &ExtensionAuth,
        peer: &Peer,
    ) -> Result<String, HubError> {
        self.register_socket(auth, peer, false)
    }

    fn extension_socket_closed(&self, extension_id: &str, peer: &Peer, reason: &str) {
        if let Some(mut entry) = self.extensions.get_mut(extension_id) {
            entry.sockets.retain(|s| s.id() != peer.id());
        }
        let Some((_, entry)) = self
            .extensions
            .remove_if(extension_id, |_, e| e.sockets.is_empty())
        else {
            return;
        };
        self.metrics.extensions.fetch_sub(1, Relaxed);
        if let Some(mut counts) = self.users.get_mut(&entry.user_id) {
            counts.0 = counts.0.saturating_sub(1);
        }
        self.users.remove_if(&entry.user_id, |_, c| *c == (0, 0));
        let mut peers = Vec::new();
        for connection_id in &entry.connections {
            let Some(conn) = self.end_connection(
                connection_id,
                Some((
                    code::EXTENSION_GONE,
                    "Extension disconnected before responding",
                )),
                None,
            ) else {
                continue;
            };
            conn.mcp.send(frame::notification(
                "disconnected",
                &json!({
                    "connection_id": connection_id,
                    "extension_id": extension_id,
                    "id": extension_id,
                    "name": entry.name,
                    "reason": reason,
                }),
            ));
            // Clients on other nodes are told `connected` by their own node (see `cluster`).
            if let McpSink::Socket(peer) = &conn.mcp {
                peers.push(peer.clone());
            }
        }
        self.add_former_peers(extension_id, peers);
    }

    fn list_extensions(&self, user_id: &str) -> Vec<ExtensionInfo> {
        let mut list: Vec<ExtensionInfo> = self
            .extensions
            .iter()
            .filter(|e| e.user_id == user_id)
            .map(|e| ExtensionInfo {
                id: e.key().clone(),
                name: e.name.clone(),
                connected: !e.sockets.is_empty(),
                version: e.version.clone(),
            })
            .collect();
        list.sort_by(|a, b| a.name.cmp(&b.name).then(a.id.cmp(&b.id)));
        list
    }

    fn connect(&self, client: &McpClient, extension_id: &str) -> Result<ConnectInfo, HubError> {
        self.connect_sink(
            &client.user_id,
            extension_id,
            McpSink::Socket(client.peer.clone()),
            new_connection_id(),
        )
    }

    fn disconnect(&self, connection_id: &str, cause: EndCause) {
        let (answer, cancel_reason) = cause.replies();
        self.end_connection(connection_id, Some(answer), Some(cancel_reason));
    }

    fn mcp_closed(&self, connection_id: &str) {
        self.end_connection(connection_id, None, Some("MCP client went away"));
    }

    fn is_connected(&self, connection_id: &str) -> bool {
        self.connections.contains_key(connection_id)
    }

    fn forward_request(
        &self,
        connection_id: &str,
        id: &RawValue,
        method: &str,
        params: Option<&RawValue>,
    ) -> Result<(), HubError> {
        let conn = self
            .connection(connection_id)
            .ok_or(HubError::NotConnected)?;
        let base = format!("{}:{}", conn.id, frame::id_text(id));
        let mapped = {
            let mut guard = conn.pending.lock().unwrap();
            let pending = guard.as_mut().ok_or(HubError::NotConnected)?;
            let mut mapped = base.clone();
            // Some hosts reuse one id for concurrent requests; each still needs its own
            // answer, so a still-pending id gets a suffix the extension echoes back.
            while pending.contains_key(&mapped) {
                let n = conn.collisions.fetch_add(1, Relaxed) + 1;
                mapped = format!("{base}#{n}");
            }
            pending.insert(
                mapped.clone(),
                PendingRequest {
                    original_id: id.get().into(),
                    started: Instant::now(),
                },
            );
            mapped
        };
        self.metrics.pending_requests.fetch_add(1, Relaxed);
        let request = frame::request(&frame::json_string(&mapped), method, params);
        let delivered = self
            .newest_socket(&conn.extension_id)
            .is_some_and(|socket| socket.send(request));
        if !delivered && self.take_pending(&conn, &mapped).is_some() {
            return Err(HubError::ExtensionGone);
        }
        self.metrics.forwarded_requests.fetch_add(1, Relaxed);
        Ok(())
    }

    fn forward_notification(
        &self,
        connection_id: &str,
        method: &str,
        params: Option<&RawValue>,
    ) -> Result<(), HubError> {
        let conn = self
            .connection(connection_id)
            .ok_or(HubError::NotConnected)?;
        self.send_to_extension(&conn.extension_id, frame::notification_raw(method, params));
        self.metrics.forwarded_notifications.fetch_add(1, Relaxed);
        Ok(())
    }

    fn deliver_response(&self, extension_id: &str, reply: &Reply<'_>) -> bool {
        let delivered = (|| {
            let mapped = frame::id_string(reply.id)?;
            let connection_id = mapped.split(':').next()?;
            let conn = self.connection(connection_id)?;
            // Only the extension a request was sent to may answer it.
            if conn.extension_id != extension_id {
                tracing::warn!(
                    extension_id,
                    "response for another extension's request dropped"
                );
                return None;
            }
            let request = self.take_pending(&conn, &mapped)?;
            let response = match (reply.error, reply.result) {
                (Some(error), _) => {
                    let error = frame::normalize_error(error);
                    let code = serde_json::from_str::<serde_json::Value>(&error)
                        .ok()
                        .and_then(|e| e["code"].as_i64())
                        .unwrap_or(code::SERVER_ERROR);
                    self.metrics.error(code);
                    frame::raw_error_response(&request.original_id, &error)
                }
                (None, Some(result)) => frame::result_response(&request.original_id, result.get()),
                (None, None) => {
                    self.metrics.error(code::INTERNAL_ERROR);
                    frame::error_response(
                        &request.original_id,
                        code::INTERNAL_ERROR,
                        "Internal error: the extension replied with neither result nor error",
                    )
                }
            };
            self.metrics.observe_latency(request.started.elapsed());
            self.metrics.responses.fetch_add(1, Relaxed);
            conn.mcp.send(response);
            Some(())
        })()
        .is_some();
        if !delivered {
            self.metrics.unknown_responses.fetch_add(1, Relaxed);
        }
        delivered
    }

    fn extension_notification(&self, extension_id: &str, target: Option<&str>, frame: String) {
        let targets: Vec<McpSink> = match target {
            Some(connection_id) => self
                .connection(connection_id)
                .filter(|c| c.extension_id == extension_id)
                .map(|c| vec![c.mcp.clone()])
                .unwrap_or_default(),
            None => {
                let ids = self
                    .extensions
                    .get(extension_id)
                    .map(|e| e.connections.clone())
                    .unwrap_or_default();
                ids.iter()
                    .filter_map(|id| self.connection(id).map(|c| c.mcp.clone()))
                    .collect()
            }
        };
        if targets.is_empty() {
            return;
        }
        let frame = axum::extract::ws::Utf8Bytes::from(frame);
        for peer in targets {
            peer.send(frame.clone());
        }
        self.metrics.forwarded_notifications.fetch_add(1, Relaxed);
    }

    fn expire_requests(&self, now: Instant) {
        let timeout = self.limits.request_timeout;
        let message = format!(
            "Request timed out: the extension did not answer within {} s",
            timeout.as_secs_f64()
        );
        let conns: Vec<Arc<Connection>> = self.connections.iter().map(|c| Arc::clone(&c)).collect();
        for conn in conns {
            let expired: Vec<(String, PendingRequest)> = {
                let mut guard = conn.pending.lock().unwrap();
                let Some(pending) = guard.as_mut() else {
                    continue;
                };
                let keys: Vec<String> = pending
                    .iter()
                    .filter(|(_, r)| now.duration_since(r.started) >= timeout)
                    .map(|(k, _)| k.clone())
                    .collect();
                keys.into_iter()
                    .filter_map(|k| pending.remove(&k).map(|r| (k, r)))
                    .collect()
            };
            for (mapped, request) in expired {
                self.metrics.pending_requests.fetch_sub(1, Relaxed);
                self.metrics.timeouts.fetch_add(1, Relaxed);
                self.metrics.error(code::REQUEST_TIMEOUT);
                conn.mcp.send(frame::error_response(
                    &request.original_id,
                    code::REQUEST_TIMEOUT,
                    &message,
                ));
                self.send_to_extension(
                    &conn.extension_id,
                    frame::notification(
                        "notifications/cancelled",
                        &json!({ "requestId": mapped, "reason": "request timed out" }),
                    ),
                );
            }
        }
    }

    fn shutdown(&self) {
        let ids: Vec<String> = self.connections.iter().map(|c| c.key().clone()).collect();
        for id in ids {
            self.end_connection(
                &id,
                Some((code::SHUTTING_DOWN, "The relay is shutting down")),
                None,
            );
        }
    }
}
