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
//! - `users`: per user, the ids of its extensions (the index `list_extensions` reads, so it
//!   costs O(that user's browsers), not O(all browsers)) and its MCP socket count.
//! - `former_peers`: MCP clients of extensions that went away, waiting to be told `connected`
//!   ([`ReturnWatch`]: bounded per user and per extension, forgotten after
//!   `--reconnect-window`).
//!
//! # Byte bounds (docs/SECURITY.md)
//! Everything a user controls and the hub keeps is bounded in bytes: extension names and
//! versions are cut to `--max-name-bytes`; forwarded request ids longer than `--max-id-bytes`
//! are refused (`-32600`); each connection's pending-request bookkeeping is capped at
//! `--max-pending-bytes` (`-32002`); and what a client sends to an extension is queued with
//! [`Peer::try_send_within`] against a budget below the extension socket's queue bound, shared
//! fairly between the extension's connections, so one client's volume gets that client a
//! `-32002` instead of overflowing the queue and disconnecting the browser for everyone.
//! None of this adds a lock: the checks run under the locks the forwarding path already takes.
//!
//! Lock discipline: never hold a reference into one map while locking another; clone what is
//! needed out first. A connection's `pending` mutex is the innermost lock. The one exception is
//! `register_extension`, which counts a new identity in `users` while holding its `extensions`
//! entry (always in that order).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::ws::Utf8Bytes;
use dashmap::DashMap;
use serde::Serialize;
use serde_json::value::RawValue;
use uuid::Uuid;

use crate::config::ServeConfig;
use crate::frame::{self, code, Reply};
use crate::metrics::Metrics;
use crate::peer::{close_code, Peer};
use crate::protocol::{self, RelayError};

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
    pub fn replies(self) -> (RelayError, &'static str) {
        match self {
            EndCause::ClientRequest => (RelayError::ClosedByDisconnect, "MCP client disconnected"),
            EndCause::ShuttingDown => (RelayError::ShuttingDown, "relay shutting down"),
        }
    }
}

/// The routing interface the sessions use. See the module documentation.
pub trait Hub: Send + Sync + 'static {
    /// Counts an authenticated MCP socket against its user's limit.
    fn register_mcp(&self, user_id: &str) -> Result<(), RelayError>;
    /// Releases what [`Hub::register_mcp`] counted.
    fn unregister_mcp(&self, user_id: &str);
    /// Adds an authenticated extension socket, sends it the `authenticated` notification (then
    /// `status` when it joins a live extension), and returns the extension id.
    fn register_extension(&self, auth: &ExtensionAuth, peer: &Peer) -> Result<String, RelayError>;
    /// Adds an authenticated extension socket as the *oldest* of its identity: it is told
    /// `authenticated` and `status` like any socket, but requests keep going to the newer one.
    /// For a socket whose `authenticate` was answered on another socket of the same browser
    /// (see `extension_session`). When the identity is not live, this is
    /// [`Hub::register_extension`].
    fn register_idle_duplicate(
        &self,
        auth: &ExtensionAuth,
        peer: &Peer,
    ) -> Result<String, RelayError>;
    /// An extension socket closed. When it was the identity's last, the extension goes away.
    fn extension_socket_closed(&self, extension_id: &str, peer: &Peer, reason: &str);
    /// The caller's user's extensions.
    fn list_extensions(&self, user_id: &str) -> Vec<ExtensionInfo>;
    /// Connects an MCP client to one of its user's extensions.
    fn connect(&self, client: &McpClient, extension_id: &str) -> Result<ConnectInfo, RelayError>;
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
    ) -> Result<(), RelayError>;
    /// Forwards an MCP notification to the connection's extension.
    fn forward_notification(
        &self,
        connection_id: &str,
        method: &str,
        params: Option<&RawValue>,
    ) -> Result<(), RelayError>;
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
    /// Extension names and versions are cut to this many bytes (`--max-name-bytes`).
    pub max_name_bytes: usize,
    /// Forwarded request ids longer than this (raw JSON) are refused (`--max-id-bytes`).
    pub max_id_bytes: usize,
    /// Pending-request bookkeeping per connection, in bytes (`--max-pending-bytes`).
    pub max_pending_bytes: usize,
    /// How long vanished extensions' MCP clients are remembered (`--reconnect-window`).
    pub reconnect_window: Duration,
    /// Bytes an extension socket's queue may hold after queuing a client's frame: the budget
    /// clients share. Below the queue's own bound (`--max-send-queue-bytes`), so the relay's own
    /// notices (`status`, `notifications/cancelled`) always fit and never overflow it.
    pub extension_queue_budget: usize,
}

impl HubLimits {
    /// The limits `serve` is configured with. The client budget on an extension's queue is
    /// three quarters of `--max-send-queue-bytes`: the last quarter is headroom for the relay's
    /// own frames to the extension.
    pub fn from_config(config: &ServeConfig) -> Self {
        HubLimits {
            request_timeout: config.request_timeout,
            max_extensions_per_user: config.max_extensions_per_user,
            max_mcp_clients_per_user: config.max_mcp_clients_per_user,
            max_sockets_per_extension: config.max_sockets_per_extension,
            max_name_bytes: config.hub.max_name_bytes,
            max_id_bytes: config.hub.max_id_bytes,
            max_pending_bytes: config.hub.max_pending_bytes,
            reconnect_window: config.hub.reconnect_window,
            extension_queue_budget: config.max_send_queue_bytes / 4 * 3,
        }
    }

    /// Refuses a forwarded request id longer than `max_id_bytes`. Pending requests keep the id
    /// twice (as sent, and mapped), on whichever node holds them: bound it before anything.
    pub fn check_id(&self, id: &RawValue) -> Result<(), RelayError> {
        if id.get().len() > self.max_id_bytes {
            return Err(RelayError::IdTooLong(self.max_id_bytes));
        }
        Ok(())
    }
}

/// What one pending request costs besides its two ids: the map slot, this struct and the
/// allocation headers, rounded up. Counted so that a flood of tiny ids is bounded too.
pub const PENDING_OVERHEAD_BYTES: usize = 96;

/// A request waiting for the extension's answer.
struct PendingRequest {
    /// The id exactly as the MCP client wrote it (raw JSON).
    original_id: Box<str>,
    started: Instant,
    /// What this entry counts against `--max-pending-bytes`.
    cost: usize,
    /// The forwarded frame's size (estimated), counted against the connection's fair share of
    /// the extension's queue until the request is answered.
    frame_bytes: usize,
}

/// A connection's pending requests by mapped id, with running byte totals (kept under the
/// connection's `pending` mutex, which the forwarding path holds anyway).
#[derive(Default)]
struct Pending {
    requests: HashMap<String, PendingRequest>,
    /// Sum of `cost`: bounded by `--max-pending-bytes`.
    bytes: usize,
    /// Sum of `frame_bytes`: this connection's requests in flight to the extension.
    frame_bytes: usize,
}

impl Pending {
    /// Checks the bounds for a new request and records it; the error says which bound.
    fn admit(
        &mut self,
        mapped: String,
        request: PendingRequest,
        max_bytes: usize,
        fair_share: usize,
    ) -> Result<(), RelayError> {
        // An empty map always admits one request, so tiny settings cannot lock a client out.
        if !self.requests.is_empty() && self.bytes + request.cost > max_bytes {
            return Err(RelayError::TooManyPending(max_bytes));
        }
        if self.frame_bytes > 0 && self.frame_bytes + request.frame_bytes > fair_share {
            return Err(RelayError::FairShareExceeded(self.frame_bytes));
        }
        self.bytes += request.cost;
        self.frame_bytes += request.frame_bytes;
        self.requests.insert(mapped, request);
        Ok(())
    }

    fn remove(&mut self, mapped: &str) -> Option<PendingRequest> {
        let request = self.requests.remove(mapped)?;
        self.bytes -= request.cost;
        self.frame_bytes -= request.frame_bytes;
        Some(request)
    }
}

/// Cuts `text` to at most `max` bytes on a character boundary.
pub fn truncate_utf8(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// An MCP client waiting for an extension to come back (a trait so that [`ReturnWatch`] can be
/// unit-tested without sockets).
pub trait Waiter: Clone {
    fn is_open(&self) -> bool;
    fn same(&self, other: &Self) -> bool;
}

impl Waiter for Peer {
    fn is_open(&self) -> bool {
        Peer::is_open(self)
    }
    fn same(&self, other: &Self) -> bool {
        self.id() == other.id()
    }
}

struct Waiting<P> {
    user_id: String,
    peers: Vec<P>,
    /// When the extension last went away; the entry is forgotten `ttl` later.
    since: Instant,
}

/// MCP clients waiting for vanished extensions to come back, to be told `connected`.
///
/// Without bounds this is a leak: a browser that never returns (or a user minting new browser
/// identities) leaves an entry forever. So every entry ages out after `ttl`
/// (`--reconnect-window`), entries whose clients all closed go at the next sweep, one extension
/// keeps at most `max_per_extension` clients (an MCP socket count per user already bounds the
/// open ones), and one user keeps at most `max_per_user` entries, the oldest forgotten first
/// (`by_user` keeps that order, so eviction is O(that user's entries)).
///
/// The two maps are never locked together; a race between an add and a take can at worst leave
/// an entry outside its user's order, and that entry still ages out.
pub struct ReturnWatch<P> {
    waiting: DashMap<String, Waiting<P>>,
    by_user: DashMap<String, VecDeque<String>>,
    ttl: Duration,
    max_per_user: usize,
    max_per_extension: usize,
    metrics: Arc<Metrics>,
}

impl<P: Waiter> ReturnWatch<P> {
    pub fn new(
        ttl: Duration,
        max_per_user: usize,
        max_per_extension: usize,
        metrics: Arc<Metrics>,
    ) -> Self {
        ReturnWatch {
            waiting: DashMap::new(),
            by_user: DashMap::new(),
            ttl,
            max_per_user: max_per_user.max(1),
            max_per_extension: max_per_extension.max(1),
            metrics,
        }
    }

    /// Remembers `peers` as waiting for `extension_id` (of `user_id`) from `now` on.
    pub fn add(&self, extension_id: &str, user_id: &str, peers: Vec<P>, now: Instant) {
        if peers.is_empty() {
            return;
        }
        let created = {
            let mut created = false;
            let mut entry = self
                .waiting
                .entry(extension_id.to_owned())
                .or_insert_with(|| {
                    created = true;
                    Waiting {
                        user_id: user_id.to_owned(),
                        peers: Vec::new(),
                        since: now,
                    }
                });
            entry.since = now;
            entry.peers.retain(P::is_open);
            for peer in peers {
                if !entry.peers.iter().any(|p| p.same(&peer)) {
                    entry.peers.push(peer);
                }
            }
            let excess = entry.peers.len().saturating_sub(self.max_per_extension);
            entry.peers.drain(..excess);
            created
        };
        if created {
            self.metrics.awaited_extensions.fetch_add(1, Relaxed);
        }
        let evicted: Vec<String> = {
            let mut order = self.by_user.entry(user_id.to_owned()).or_default();
            order.retain(|id| id != extension_id);
            order.push_back(extension_id.to_owned());
            let excess = order.len().saturating_sub(self.max_per_user);
            order.drain(..excess).collect()
        };
        for id in evicted {
            if self.waiting.remove(&id).is_some() {
                self.metrics.awaited_extensions.fetch_sub(1, Relaxed);
            }
        }
    }

    /// Takes the clients waiting for `extension_id` (it is back), open ones only.
    pub fn take(&self, extension_id: &str) -> Vec<P> {
        let Some((_, waiting)) = self.waiting.remove(extension_id) else {
            return Vec::new();
        };
        self.metrics.awaited_extensions.fetch_sub(1, Relaxed);
        self.forget_order(&waiting.user_id, extension_id);
        waiting.peers.into_iter().filter(P::is_open).collect()
    }

    /// True when some client waits for `extension_id`.
    pub fn contains(&self, extension_id: &str) -> bool {
        self.waiting.contains_key(extension_id)
    }

    /// Extensions waited for right now.
    pub fn len(&self) -> usize {
        self.waiting.len()
    }

    pub fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }

    /// Forgets entries older than the TTL and those whose clients have all closed.
    pub fn sweep(&self, now: Instant) {
        let mut gone = Vec::new();
        self.waiting.retain(|id, waiting| {
            waiting.peers.retain(P::is_open);
            let keep = !waiting.peers.is_empty()
                && now.saturating_duration_since(waiting.since) < self.ttl;
            if !keep {
                gone.push((id.clone(), std::mem::take(&mut waiting.user_id)));
            }
            keep
        });
        for (id, user_id) in gone {
            self.metrics.awaited_extensions.fetch_sub(1, Relaxed);
            self.forget_order(&user_id, &id);
        }
    }

    fn forget_order(&self, user_id: &str, extension_id: &str) {
        if let Some(mut order) = self.by_user.get_mut(user_id) {
            order.retain(|id| id != extension_id);
        }
        self.by_user.remove_if(user_id, |_, order| order.is_empty());
    }
}

/// Per user: the index `list_extensions` reads and the per-user counts.
#[derive(Debug, Default)]
struct UserState {
    /// Ids of the user's extensions on this node.
    extensions: Vec<String>,
    /// Authenticated MCP sockets.
    mcp_clients: usize,
}

impl UserState {
    fn is_idle(&self) -> bool {
        self.extensions.is_empty() && self.mcp_clients == 0
    }
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
    pending: Mutex<Option<Pending>>,
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
    former_peers: ReturnWatch<Peer>,
    /// Per user: its extensions (the `list_extensions` index) and MCP socket count.
    users: DashMap<String, UserState>,
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

impl LocalHub {
    pub fn new(limits: HubLimits, metrics: Arc<Metrics>) -> Self {
        LocalHub {
            extensions: DashMap::new(),
            connections: DashMap::new(),
            former_peers: ReturnWatch::new(
                limits.reconnect_window,
                limits.max_extensions_per_user,
                limits.max_mcp_clients_per_user,
                Arc::clone(&metrics),
            ),
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
        let status = protocol::extension_status(&connections);
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
        answer: Option<RelayError>,
        cancel_reason: Option<&str>,
    ) -> Option<Arc<Connection>> {
        let (_, conn) = self.connections.remove(connection_id)?;
        self.metrics.connections.fetch_sub(1, Relaxed);
        let pending = conn
            .pending
            .lock()
            .unwrap()
            .take()
            .unwrap_or_default()
            .requests;
        self.metrics
            .pending_requests
            .fetch_sub(pending.len() as i64, Relaxed);
        if let Some(answer) = answer {
            for request in pending.values() {
                conn.mcp.send(answer.response(&request.original_id));
                self.metrics.error(answer.code());
            }
        }
        if let Some(reason) = cancel_reason {
            for mapped in pending.keys() {
                self.send_to_extension(&conn.extension_id, protocol::cancelled(mapped, reason));
            }
            let removed = self
                .extensions
                .get_mut(&conn.extension_id)
                .map(|mut e| e.connections.retain(|c| c != connection_id))
                .is_some();
            if removed {
                self.send_to_extension(
                    &conn.extension_id,
                    protocol::connection_closed(connection_id, reason),
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
    ) -> Result<ConnectInfo, RelayError> {
        // Check ownership before creating anything; the same answer for "absent" and
        // "someone else's" so ids of other users' browsers cannot be probed.
        let owned = self
            .extensions
            .get(extension_id)
            .is_some_and(|e| e.user_id == user_id);
        if !owned || self.connections.contains_key(&connection_id) {
            return Err(RelayError::ExtensionNotFound);
        }
        self.connections.insert(
            connection_id.clone(),
            Arc::new(Connection {
                id: connection_id.clone(),
                extension_id: extension_id.to_owned(),
                mcp,
                pending: Mutex::new(Some(Pending::default())),
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
            return Err(RelayError::ExtensionNotFound);
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
    /// back (bounded and aging out: see [`ReturnWatch`]).
    pub fn add_former_peers(&self, extension_id: &str, user_id: &str, peers: Vec<Peer>) {
        self.former_peers
            .add(extension_id, user_id, peers, Instant::now());
    }

    /// Takes the MCP clients waiting for an extension to come back (it came back on another
    /// node).
    pub fn take_former_peers(&self, extension_id: &str) -> Vec<Peer> {
        self.former_peers.take(extension_id)
    }

    /// True when some MCP client waits for this extension to come back.
    pub fn awaits_return(&self, extension_id: &str) -> bool {
        self.former_peers.contains(extension_id)
    }

    /// Vanished extensions some MCP client here still waits for.
    pub fn awaited_extensions(&self) -> usize {
        self.former_peers.len()
    }

    /// Adds an authenticated socket to its identity: as the newest (requests go to it) or, for
    /// an idle duplicate, as the oldest.
    fn register_socket(
        &self,
        auth: &ExtensionAuth,
        peer: &Peer,
        newest: bool,
    ) -> Result<String, RelayError> {
        // Without a client_id (spec-era extensions), the browser name is the best stable key.
        let key = auth
            .client_id
            .as_deref()
            .map(|c| format!("client:{c}"))
            .unwrap_or_else(|| format!("name:{}", auth.name));
        let extension_id = extension_id_for(&auth.user_id, &key);
        // Stored per browser, listed, and sent to every cluster node: the browser must not
        // choose their size (docs/SECURITY.md).
        let name = truncate_utf8(&auth.name, self.limits.max_name_bytes);
        let version = auth
            .version
            .as_deref()
            .map(|v| truncate_utf8(v, self.limits.max_name_bytes).to_owned());
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
                name.clone_into(&mut entry.name);
                if version.is_some() {
                    entry.version = version;
                }
                if entry.sockets.len() > self.limits.max_sockets_per_extension.max(1) {
                    // Beyond the limit the oldest other socket goes; never the one just taken
                    // in as idle, nor the one requests go to.
                    let oldest_other = if newest { 0 } else { 1 };
                    if oldest_other < entry.sockets.len() - 1 {
                        superseded = Some(entry.sockets.remove(oldest_other));
                    }
                }
                joined_status = protocol::extension_status(&entry.connections);
                new_identity = false;
            }
            dashmap::Entry::Vacant(entry) => {
                {
                    let mut user = self.users.entry(auth.user_id.clone()).or_default();
                    if user.extensions.len() >= self.limits.max_extensions_per_user {
                        return Err(RelayError::TooManyExtensions(
                            self.limits.max_extensions_per_user,
                        ));
                    }
                    user.extensions.push(extension_id.clone());
                }
                entry.insert(ExtensionEntry {
                    user_id: auth.user_id.clone(),
                    name: name.to_owned(),
                    version,
                    sockets: vec![peer.clone()],
                    connections: Vec::new(),
                });
                self.metrics.extensions.fetch_add(1, Relaxed);
                joined_status = protocol::extension_status(&[]);
                new_identity = true;
            }
        }
        peer.send(protocol::authenticated(
            &auth.user_id,
            &extension_id,
            auth.client_id.as_deref(),
        ));
        if let Some(old) = superseded {
            old.close(
                close_code::NORMAL,
                "superseded by newer sockets of the same extension",
            );
        }
        if new_identity {
            let peers = self.former_peers.take(&extension_id);
            if !peers.is_empty() {
                let notice = protocol::connected(&extension_id, name);
                for mcp in peers {
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
    fn register_mcp(&self, user_id: &str) -> Result<(), RelayError> {
        let mut user = self.users.entry(user_id.to_owned()).or_default();
        if user.mcp_clients >= self.limits.max_mcp_clients_per_user {
            return Err(RelayError::TooManyMcpClients(
                self.limits.max_mcp_clients_per_user,
            ));
        }
        user.mcp_clients += 1;
        Ok(())
    }

    fn unregister_mcp(&self, user_id: &str) {
        if let Some(mut user) = self.users.get_mut(user_id) {
            user.mcp_clients = user.mcp_clients.saturating_sub(1);
        }
        self.users.remove_if(user_id, |_, u| u.is_idle());
    }

    fn register_extension(&self, auth: &ExtensionAuth, peer: &Peer) -> Result<String, RelayError> {
        self.register_socket(auth, peer, true)
    }

    fn register_idle_duplicate(
        &self,
        auth: &ExtensionAuth,
        peer: &Peer,
    ) -> Result<String, RelayError> {
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
        if let Some(mut user) = self.users.get_mut(&entry.user_id) {
            user.extensions.retain(|id| id != extension_id);
        }
        self.users.remove_if(&entry.user_id, |_, u| u.is_idle());
        let mut peers = Vec::new();
        for connection_id in &entry.connections {
            let Some(conn) =
                self.end_connection(connection_id, Some(RelayError::ExtensionLeft), None)
            else {
                continue;
            };
            conn.mcp.send(protocol::disconnected(
                connection_id,
                extension_id,
                Some(&entry.name),
                reason,
            ));
            // Clients on other nodes are told `connected` by their own node (see `cluster`).
            if let McpSink::Socket(peer) = &conn.mcp {
                peers.push(peer.clone());
            }
        }
        self.add_former_peers(extension_id, &entry.user_id, peers);
    }

    /// O(that user's extensions): reads the per-user index, never scans other users'.
    fn list_extensions(&self, user_id: &str) -> Vec<ExtensionInfo> {
        let ids = self
            .users
            .get(user_id)
            .map(|u| u.extensions.clone())
            .unwrap_or_default();
        let mut list: Vec<ExtensionInfo> = ids
            .iter()
            .filter_map(|id| self.extensions.get(id))
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

    fn connect(&self, client: &McpClient, extension_id: &str) -> Result<ConnectInfo, RelayError> {
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
    ) -> Result<(), RelayError> {
        self.limits.check_id(id)?;
        let conn = self
            .connection(connection_id)
            .ok_or(RelayError::NotConnected)?;
        // The socket and how many connections share it, in the one look-up this path always did.
        let target = self.extensions.get(&conn.extension_id).and_then(|e| {
            e.sockets
                .last()
                .map(|socket| (socket.clone(), e.connections.len().max(1)))
        });
        let budget = self.limits.extension_queue_budget;
        let fair_share = budget / target.as_ref().map_or(1, |(_, sharers)| *sharers);
        let base = format!("{}:{}", conn.id, frame::id_text(id));
        let mapped = {
            let mut guard = conn.pending.lock().unwrap();
            let pending = guard.as_mut().ok_or(RelayError::NotConnected)?;
            let mut mapped = base.clone();
            // Some hosts reuse one id for concurrent requests; each still needs its own
            // answer, so a still-pending id gets a suffix the extension echoes back.
            while pending.requests.contains_key(&mapped) {
                let n = conn.collisions.fetch_add(1, Relaxed) + 1;
                mapped = format!("{base}#{n}");
            }
            let request = PendingRequest {
                original_id: id.get().into(),
                started: Instant::now(),
                cost: mapped.len() + id.get().len() + PENDING_OVERHEAD_BYTES,
                // The frame built below: envelope, mapped id, method, params.
                frame_bytes: 64 + mapped.len() + method.len() + params.map_or(0, |p| p.get().len()),
            };
            pending.admit(
                mapped.clone(),
                request,
                self.limits.max_pending_bytes,
                fair_share,
            )?;
            mapped
        };
        self.metrics.pending_requests.fetch_add(1, Relaxed);
        let request = frame::request(&frame::json_string(&mapped), method, params);
        // Never `send`: a queue overflow would disconnect the browser for every client. Over
        // the budget, this client is refused instead and the browser stays.
        let refused = match &target {
            Some((socket, _)) if socket.try_send_within(request, budget) => None,
            Some((socket, _)) if socket.is_open() => Some(RelayError::BrowserQueueFull),
            _ => Some(RelayError::ExtensionGone),
        };
        if let Some(error) = refused {
            if self.take_pending(&conn, &mapped).is_some() {
                return Err(error);
            }
        }
        self.metrics.forwarded_requests.fetch_add(1, Relaxed);
        Ok(())
    }

    fn forward_notification(
        &self,
        connection_id: &str,
        method: &str,
        params: Option<&RawValue>,
    ) -> Result<(), RelayError> {
        let conn = self
            .connection(connection_id)
            .ok_or(RelayError::NotConnected)?;
        if let Some(socket) = self.newest_socket(&conn.extension_id) {
            // Client volume must not overflow the browser's queue (see forward_request). A
            // notification has no answer to carry an error, so over the budget it is dropped,
            // logged and counted under -32002.
            let notification = frame::notification_raw(method, params);
            if !socket.try_send_within(notification, self.limits.extension_queue_budget)
                && socket.is_open()
            {
                tracing::warn!(
                    connection_id,
                    "browser queue full: client notification dropped"
                );
                self.metrics.error(code::RATE_LIMITED);
                return Err(RelayError::BrowserQueueFull);
            }
        }
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
                    self.metrics.error(RelayError::EmptyReply.code());
                    RelayError::EmptyReply.response(&request.original_id)
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
        let answer = RelayError::RequestTimedOut(timeout);
        let conns: Vec<Arc<Connection>> = self.connections.iter().map(|c| Arc::clone(&c)).collect();
        for conn in conns {
            let expired: Vec<(String, PendingRequest)> = {
                let mut guard = conn.pending.lock().unwrap();
                let Some(pending) = guard.as_mut() else {
                    continue;
                };
                let keys: Vec<String> = pending
                    .requests
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
                self.metrics.error(answer.code());
                conn.mcp.send(answer.response(&request.original_id));
                self.send_to_extension(
                    &conn.extension_id,
                    protocol::cancelled(&mapped, "request timed out"),
                );
            }
        }
        self.former_peers.sweep(now);
    }

    fn shutdown(&self) {
        let ids: Vec<String> = self.connections.iter().map(|c| c.key().clone()).collect();
        for id in ids {
            self.end_connection(&id, Some(RelayError::ShuttingDown), None);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn limits() -> HubLimits {
        HubLimits::from_config(&ServeConfig::defaults())
    }

    #[test]
    fn names_are_cut_on_a_character_boundary() {
        assert_eq!(truncate_utf8("short", 256), "short");
        let name = format!("abc{}", "é".repeat(1000));
        let cut = truncate_utf8(&name, 256);
        assert_eq!(cut.len(), 255, "the 256th byte is inside an é");
        assert!(name.starts_with(cut));
        assert_eq!(truncate_utf8("é", 1), "");
    }

    fn pending_request(id_len: usize, frame_bytes: usize) -> PendingRequest {
        PendingRequest {
            original_id: "x".repeat(id_len).into(),
            started: Instant::now(),
            cost: 2 * id_len + PENDING_OVERHEAD_BYTES,
            frame_bytes,
        }
    }

    #[test]
    fn pending_bytes_are_bounded_and_freed() {
        let mut pending = Pending::default();
        let max = 10_000;
        let mut admitted = 0;
        let refused = loop {
            match pending.admit(
                format!("m{admitted}"),
                pending_request(1000, 10),
                max,
                usize::MAX,
            ) {
                Ok(()) => admitted += 1,
                Err(error) => break error,
            }
        };
        assert_eq!(refused, RelayError::TooManyPending(max));
        assert_eq!(refused.code(), code::RATE_LIMITED);
        assert_eq!(admitted, max / (2000 + PENDING_OVERHEAD_BYTES));
        assert!(pending.bytes <= max);
        // Answering one makes room for one.
        assert!(pending.remove("m0").is_some());
        assert!(pending
            .admit("again".into(), pending_request(1000, 10), max, usize::MAX)
            .is_ok());
        for key in pending.requests.keys().cloned().collect::<Vec<_>>() {
            pending.remove(&key);
        }
        assert_eq!((pending.bytes, pending.frame_bytes), (0, 0));
        // An empty map admits one request whatever it costs.
        assert!(pending
            .admit("big".into(), pending_request(50_000, 10), max, usize::MAX)
            .is_ok());
    }

    #[test]
    fn a_connection_keeps_to_its_fair_share_of_the_extension_queue() {
        let mut pending = Pending::default();
        let share = 48 << 20;
        // One request always goes, however large: the queue bound still applies to it.
        assert!(pending
            .admit("a".into(), pending_request(1, 30 << 20), 1 << 20, share)
            .is_ok());
        assert_eq!(
            pending.admit("b".into(), pending_request(1, 30 << 20), 1 << 20, share),
            Err(RelayError::FairShareExceeded(30 << 20))
        );
        assert!(pending
            .admit("c".into(), pending_request(1, 1 << 20), 1 << 20, share)
            .is_ok());
        pending.remove("a");
        assert!(pending
            .admit("b".into(), pending_request(1, 30 << 20), 1 << 20, share)
            .is_ok());
    }

    #[test]
    fn byte_bound_errors_have_their_codes() {
        assert_eq!(RelayError::IdTooLong(1024).code(), code::INVALID_REQUEST);
        assert!(RelayError::IdTooLong(1024)
            .to_string()
            .contains("1024 bytes"));
        assert_eq!(RelayError::BrowserQueueFull.code(), code::RATE_LIMITED);
        assert_eq!(RelayError::FairShareExceeded(1).code(), code::RATE_LIMITED);
        let limits = limits();
        assert_eq!(limits.max_name_bytes, 256);
        assert_eq!(limits.max_id_bytes, 1024);
        assert_eq!(limits.max_pending_bytes, 1 << 20);
        assert_eq!(limits.extension_queue_budget, 48 << 20);
    }

    /// A waiting MCP client without a socket.
    #[derive(Clone)]
    struct FakePeer(u32, Arc<std::sync::atomic::AtomicBool>);

    impl FakePeer {
        fn new(id: u32) -> Self {
            FakePeer(id, Arc::new(std::sync::atomic::AtomicBool::new(true)))
        }
        fn close(&self) {
            self.1.store(false, Relaxed);
        }
    }

    impl Waiter for FakePeer {
        fn is_open(&self) -> bool {
            self.1.load(Relaxed)
        }
        fn same(&self, other: &Self) -> bool {
            self.0 == other.0
        }
    }

    fn watch(ttl: Duration, per_user: usize, per_extension: usize) -> ReturnWatch<FakePeer> {
        ReturnWatch::new(ttl, per_user, per_extension, Arc::new(Metrics::default()))
    }

    fn gauge(watch: &ReturnWatch<FakePeer>) -> i64 {
        watch.metrics.awaited_extensions.load(Relaxed)
    }

    #[test]
    fn return_watch_keeps_at_most_n_extensions_per_user_oldest_forgotten_first() {
        let watch = watch(Duration::from_secs(60), 4, 64);
        let now = Instant::now();
        let client = FakePeer::new(1);
        for i in 0..1000 {
            watch.add(&format!("ext-{i}"), "alice", vec![client.clone()], now);
        }
        watch.add("ext-bob", "bob", vec![FakePeer::new(2)], now);
        assert_eq!(watch.len(), 5);
        assert_eq!(gauge(&watch), 5);
        assert!(!watch.contains("ext-0"));
        assert!(watch.contains("ext-999") && watch.contains("ext-996"));
        assert!(
            watch.contains("ext-bob"),
            "another user's entry is untouched"
        );
        assert_eq!(watch.by_user.get("alice").unwrap().len(), 4);
        // Coming back takes the entry and its place in the user's order.
        assert_eq!(watch.take("ext-999").len(), 1);
        assert!(watch.take("ext-999").is_empty());
        assert_eq!(watch.by_user.get("alice").unwrap().len(), 3);
        assert_eq!(gauge(&watch), 4);
    }

    #[test]
    fn return_watch_bounds_clients_per_extension_and_counts_each_once() {
        let watch = watch(Duration::from_secs(60), 4, 3);
        let now = Instant::now();
        let a = FakePeer::new(1);
        for _ in 0..10 {
            watch.add("ext-1", "alice", vec![a.clone()], now);
        }
        assert_eq!(watch.waiting.get("ext-1").unwrap().peers.len(), 1);
        for id in 2..10 {
            watch.add("ext-1", "alice", vec![FakePeer::new(id)], now);
        }
        assert_eq!(watch.waiting.get("ext-1").unwrap().peers.len(), 3);
        assert_eq!(gauge(&watch), 1);
    }

    #[test]
    fn return_watch_forgets_after_the_ttl_and_when_clients_close() {
        let ttl = Duration::from_secs(300);
        let watch = watch(ttl, 16, 64);
        let t0 = Instant::now();
        let closing = FakePeer::new(1);
        watch.add("ext-old", "alice", vec![FakePeer::new(2)], t0);
        watch.add("ext-closed", "alice", vec![closing.clone()], t0);
        watch.add("ext-young", "bob", vec![FakePeer::new(3)], t0 + ttl / 2);
        closing.close();
        watch.sweep(t0 + ttl / 2);
        assert!(!watch.contains("ext-closed"));
        assert!(watch.contains("ext-old"));
        watch.sweep(t0 + ttl);
        assert!(!watch.contains("ext-old"));
        assert!(watch.contains("ext-young"));
        assert!(
            watch.by_user.get("alice").is_none(),
            "no empty per-user entry"
        );
        watch.sweep(t0 + ttl * 2);
        assert!(watch.is_empty());
        assert!(watch.by_user.is_empty());
        assert_eq!(gauge(&watch), 0);
        // Closed clients are not handed out.
        let gone = FakePeer::new(4);
        watch.add("ext-x", "carol", vec![gone.clone(), FakePeer::new(5)], t0);
        gone.close();
        assert_eq!(watch.take("ext-x").len(), 1);
    }

    /// Real peers over loopback: a `Peer` can only be made from a socket.
    struct Sockets {
        peers: Vec<Peer>,
        _clients: Vec<
            tokio_tungstenite::WebSocketStream<
                tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>,
            >,
        >,
    }

    async fn sockets(n: usize) -> Sockets {
        use axum::extract::ws::WebSocketUpgrade;
        use futures_util::StreamExt;
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let app = axum::Router::new().route(
            "/",
            axum::routing::get(move |ws: WebSocketUpgrade| {
                let tx = tx.clone();
                async move {
                    ws.on_upgrade(move |socket| async move {
                        let _ = tx.send(socket);
                    })
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("ws://{}/", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        let config = crate::peer::SocketConfig {
            ping_interval: Duration::from_secs(600),
            send_timeout: Duration::from_secs(30),
            max_queue_bytes: 64 << 20,
            max_unauthenticated_queue_bytes: 64 << 20,
            total_queued: Arc::new(std::sync::atomic::AtomicUsize::new(0)),
            max_total_queue_bytes: usize::MAX,
        };
        let tracker = tokio_util::task::TaskTracker::new();
        let mut sockets = Sockets {
            peers: Vec::new(),
            _clients: Vec::new(),
        };
        for _ in 0..n {
            let (client, _) = tokio_tungstenite::connect_async(url.as_str())
                .await
                .unwrap();
            let (sink, _stream) = rx.recv().await.unwrap().split();
            sockets.peers.push(crate::peer::spawn(
                sink,
                crate::transport::ConnHandle::detached(),
                &config,
                crate::peer::LastSeen::new(),
                Arc::new(Metrics::default()),
                &tracker,
            ));
            sockets._clients.push(client);
        }
        sockets
    }

    fn auth(user: &str, client_id: &str, name: &str) -> ExtensionAuth {
        ExtensionAuth {
            user_id: user.into(),
            client_id: Some(client_id.into()),
            name: name.into(),
            version: Some("v".repeat(1000)),
        }
    }

    /// The `users` index says exactly what a scan of `extensions` says.
    fn assert_index_consistent(hub: &LocalHub) {
        let mut scanned: HashMap<String, BTreeSet<String>> = HashMap::new();
        for entry in hub.extensions.iter() {
            scanned
                .entry(entry.user_id.clone())
                .or_default()
                .insert(entry.key().clone());
        }
        for user in hub.users.iter() {
            let indexed: BTreeSet<String> = user.extensions.iter().cloned().collect();
            assert_eq!(indexed.len(), user.extensions.len(), "no duplicates");
            assert_eq!(
                &indexed,
                scanned.get(user.key()).unwrap_or(&BTreeSet::new()),
                "index of {}",
                user.key()
            );
            assert!(!user.is_idle(), "idle users are removed");
        }
        for (user, ids) in &scanned {
            assert!(
                hub.users.contains_key(user),
                "{user} missing from the index"
            );
            let listed: BTreeSet<String> = hub
                .list_extensions(user)
                .into_iter()
                .map(|e| e.id)
                .collect();
            assert_eq!(&listed, ids);
        }
    }

    #[tokio::test]
    async fn the_user_index_stays_consistent_through_register_and_close() {
        let hub = LocalHub::new(limits(), Arc::new(Metrics::default()));
        let s = sockets(12).await;
        let p = &s.peers;
        let a1 = hub
            .register_extension(&auth("alice", "1", "A1"), &p[0])
            .unwrap();
        assert_index_consistent(&hub);
        // A duplicate socket of the same identity adds no index entry.
        assert_eq!(
            hub.register_extension(&auth("alice", "1", "A1"), &p[1])
                .unwrap(),
            a1
        );
        let a2 = hub
            .register_extension(&auth("alice", "2", "A2"), &p[2])
            .unwrap();
        let b1 = hub
            .register_extension(&auth("bob", "1", "B1"), &p[3])
            .unwrap();
        hub.register_mcp("carol").unwrap();
        let c1 = hub
            .register_extension(&auth("carol", "1", "C1"), &p[4])
            .unwrap();
        assert_index_consistent(&hub);
        assert_eq!(hub.list_extensions("alice").len(), 2);
        // Closing one of two sockets keeps the identity; closing the last removes it.
        hub.extension_socket_closed(&a1, &p[0], "closed");
        assert_index_consistent(&hub);
        assert_eq!(hub.list_extensions("alice").len(), 2);
        hub.extension_socket_closed(&a1, &p[1], "closed");
        hub.extension_socket_closed(&b1, &p[3], "closed");
        assert_index_consistent(&hub);
        assert!(!hub.users.contains_key("bob"), "bob has nothing left");
        // Carol still has an MCP socket: her entry stays, with no extensions.
        hub.extension_socket_closed(&c1, &p[4], "closed");
        assert_index_consistent(&hub);
        assert!(hub.users.get("carol").unwrap().extensions.is_empty());
        hub.unregister_mcp("carol");
        assert!(!hub.users.contains_key("carol"));
        // A closed socket closing again, or an unknown one, changes nothing.
        hub.extension_socket_closed(&a1, &p[0], "closed");
        hub.extension_socket_closed("ext-unknown", &p[5], "closed");
        assert_index_consistent(&hub);
        // Refusal at the per-user limit leaves the index as it was.
        let small = LocalHub::new(
            HubLimits {
                max_extensions_per_user: 1,
                ..limits()
            },
            Arc::new(Metrics::default()),
        );
        small
            .register_extension(&auth("dave", "1", "D1"), &p[6])
            .unwrap();
        assert_eq!(
            small.register_extension(&auth("dave", "2", "D2"), &p[7]),
            Err(RelayError::TooManyExtensions(1))
        );
        assert_index_consistent(&small);
        // Names and versions are stored cut to the bound.
        let long = format!("x{}", "é".repeat(10_000));
        let id = hub
            .register_extension(&auth("erin", "1", &long), &p[8])
            .unwrap();
        let entry = hub.extensions.get(&id).unwrap();
        assert_eq!(entry.name.len(), 255);
        assert_eq!(entry.version.as_deref().map(str::len), Some(256));
        drop(entry);
        assert_index_consistent(&hub);
        let _ = a2;
    }

    fn raw(json: String) -> Box<RawValue> {
        RawValue::from_string(json).unwrap()
    }

    #[tokio::test]
    async fn try_send_within_refuses_without_closing_the_peer() {
        let s = sockets(1).await;
        let peer = &s.peers[0];
        // No await in between: the writer task cannot drain the queue meanwhile.
        assert!(
            peer.try_send_within("x".repeat(2 << 20), 1 << 20),
            "an empty queue takes one"
        );
        assert!(!peer.try_send_within("small", 1 << 20));
        assert!(peer.is_open(), "refused, not closed");
        assert!(peer.try_send_within("small", 4 << 20));
    }

    #[tokio::test]
    async fn what_try_send_within_and_send_charge_the_writer_takes_off_again() {
        let s = sockets(1).await;
        let peer = &s.peers[0];
        for round in 0..50 {
            assert!(peer.try_send_within(format!("frame {round}"), 1 << 20));
            assert!(peer.send(format!("frame {round}")));
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while peer.queued_bytes() != 0 {
            assert!(
                Instant::now() < deadline,
                "{} bytes never drained",
                peer.queued_bytes()
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // A queue whose count had drifted (charged less than taken off) would refuse this.
        assert!(peer.try_send_within("small", 64));
        assert!(peer.try_send_within("small", 1 << 20));
        assert!(peer.is_open());
    }

    #[tokio::test]
    async fn forwarding_refuses_long_ids_and_keeps_clients_within_the_browser_queue() {
        let hub = LocalHub::new(limits(), Arc::new(Metrics::default()));
        let s = sockets(3).await;
        let (browser, heavy, other) = (&s.peers[0], &s.peers[1], &s.peers[2]);
        let ext = hub
            .register_extension(&auth("alice", "1", "A"), browser)
            .unwrap();
        let connect = |peer: &Peer| {
            hub.connect_sink(
                "alice",
                &ext,
                McpSink::Socket(peer.clone()),
                new_connection_id(),
            )
            .unwrap()
            .connection_id
        };
        let (heavy_conn, other_conn) = (connect(heavy), connect(other));
        let long_id = raw(format!("\"{}\"", "i".repeat(2000)));
        assert_eq!(
            hub.forward_request(&heavy_conn, &long_id, "m", None),
            Err(RelayError::IdTooLong(1024))
        );
        let params = raw(format!("{{\"data\":\"{}\"}}", "x".repeat(30 << 20)));
        // Without awaiting, nothing leaves the browser's queue: the checks are deterministic.
        hub.forward_request(&heavy_conn, &raw("1".into()), "upload", Some(&params))
            .unwrap();
        // Two connections share the 48 MiB budget: 24 MiB each, one request always allowed.
        assert!(matches!(
            hub.forward_request(&heavy_conn, &raw("2".into()), "upload", Some(&params)),
            Err(RelayError::FairShareExceeded(_))
        ));
        assert_eq!(
            hub.forward_request(&other_conn, &raw("3".into()), "upload", Some(&params)),
            Err(RelayError::BrowserQueueFull)
        );
        hub.forward_request(&other_conn, &raw("4".into()), "small", None)
            .unwrap();
        assert!(
            browser.is_open(),
            "the browser is never disconnected for it"
        );
        assert_eq!(hub.metrics.pending_requests.load(Relaxed), 2);
        // Refused requests leave no bookkeeping behind.
        let heavy_pending = hub.connection(&heavy_conn).unwrap();
        let guard = heavy_pending.pending.lock().unwrap();
        let pending = guard.as_ref().unwrap();
        assert_eq!(pending.requests.len(), 1);
        assert!(pending.frame_bytes > 30 << 20 && pending.frame_bytes < (30 << 20) + 200);
    }
}
