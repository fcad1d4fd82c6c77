//! The hub: who is online, who is connected to whom, which requests are waiting for an answer,
//! and how a frame gets from one socket to another.
//!
//! There is one hub type, [`Hub`], with or without a cluster. A connection is one record
//! (`connection.rs`) whose two ends, the MCP client and the extension, are each either on this
//! node or on another node of the cluster; routing looks at where an end is and either queues
//! onto a local [`Peer`] or hands the frame to the cluster link. Every way a connection can end
//! goes through one [`Hub::end`] with an [`Ending`] (`ending.rs`).
//!
//! Module edges: the hub owns an optional [`Cluster`] (presence and NATS transport) and calls
//! it to publish; the cluster never imports the hub. What the cluster's receive loop needs from
//! the hub is the small [`crate::routing::cluster::Routing`] interface, which the hub implements in
//! `routing.rs`. So the dependency goes one way, hub → cluster.
//!
//! Every method is synchronous and non-blocking: sending means pushing onto a peer's queue
//! ([`Peer::send`]) or onto the cluster's ordered outbound queue, never awaiting the network.
//! The API takes and gives plain `String`s and `&str`s, so it is tested without sockets
//! (`Peer::detached` in unit tests).
//!
//! # State
//! - `extensions`: one entry per extension *identity* (user + `client_id`) held here, with its
//!   open sockets (newest last; requests go to the newest) and its connections.
//! - `connections`: one entry per MCP-to-extension connection that has an end here.
//! - `users`: per user, the ids of its extensions (the index `list_extensions` reads, so it
//!   costs O(that user's browsers), not O(all browsers)) and its MCP socket count.
//! - `returns`: MCP clients here whose extension went away (here or on another node), waiting
//!   to be told `connected` ([`ReturnWatch`]: bounded per user and per extension, forgotten
//!   after `--reconnect-window`).
//!
//! # Byte bounds (docs/SECURITY.md)
//! Everything a user controls and the hub keeps is bounded in bytes: extension names and
//! versions are cut to `--max-name-bytes`; forwarded request ids longer than `--max-id-bytes`
//! are refused (`-32600`); each connection's pending-request bookkeeping is capped at
//! `--max-pending-bytes` (`-32002`), on the client's node as on the extension's; and what a
//! client sends to an extension is queued with [`Peer::try_send_within`] against a budget below
//! the extension socket's queue bound, shared fairly between the extension's connections, so
//! one client's volume gets that client a `-32002` instead of overflowing the queue and
//! disconnecting the browser for everyone. None of this adds a lock: the checks run under the
//! locks the forwarding path already takes.
//!
//! Lock discipline: never hold a reference into one map while locking another; clone what is
//! needed out first. A connection's `pending` mutex is the innermost lock. The one exception is
//! `register_socket`, which counts a new identity in `users` while holding its `extensions`
//! entry (always in that order).

mod connection;
mod ending;
mod limits;
mod return_watch;
mod routing;
#[cfg(test)]
mod tests;
mod trail;

use std::sync::Arc;
use std::time::Instant;

use dashmap::DashMap;
use serde::Serialize;
use serde_json::value::RawValue;
use uuid::Uuid;

use crate::frame::{self, code, Reply};
use crate::metrics::{Metrics, Sampled};
use crate::net::peer::{close_code, Peer};
use crate::protocol::{self, RelayError};
use crate::routing::cluster::wire::{ConnectBody, PresenceEntry};
use crate::routing::cluster::Cluster;
use connection::{ClientSide, Connection, ExtensionSide, PendingRequest};
pub use trail::{AuditTrail, ConnTag, Control, MAX_METHOD_BYTES};

use crate::text::truncate_utf8;
pub use ending::{EndCause, Ending};
pub use limits::{HubLimits, PENDING_OVERHEAD_BYTES};
pub use return_watch::{ReturnWatch, Waiter};

/// What an extension told the relay about itself when it authenticated.
#[derive(Debug, Clone)]
pub struct ExtensionAuth {
    pub user_id: String,
    /// Generated once and stored by the extension; the stable part of its identity.
    pub client_id: Option<String>,
    pub name: String,
    pub version: Option<String>,
}

impl ExtensionAuth {
    /// The stable id of this browser identity. Without a client_id (spec-era extensions), the
    /// browser name is the best stable key.
    pub fn extension_id(&self) -> String {
        let key = self
            .client_id
            .as_deref()
            .map(|c| format!("client:{c}"))
            .unwrap_or_else(|| format!("name:{}", self.name));
        extension_id_for(&self.user_id, &key)
    }
}

/// An authenticated MCP socket.
#[derive(Debug, Clone)]
pub struct McpClient {
    pub user_id: String,
    pub mcp_client_id: String,
    /// What the client says it is (`mcp_handshake`'s `client_id` and `client_name`), passed to
    /// the extension in `connection_opened` so its owner can tell assistants apart. Declared by
    /// the client, not proven: the relay vouches only for the user.
    pub client_id: Option<String>,
    pub client_name: Option<String>,
    pub peer: Peer,
}

impl McpClient {
    /// The cluster's `connect` body for this client and `extension_id`.
    fn connect_body(&self, extension_id: &str) -> ConnectBody {
        ConnectBody {
            user_id: self.user_id.clone(),
            extension_id: extension_id.to_owned(),
            mcp_client_id: self.mcp_client_id.clone(),
            client_id: self.client_id.clone(),
            client_name: self.client_name.clone(),
        }
    }
}

/// One row of `list_extensions`.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ExtensionInfo {
    pub id: String,
    pub name: String,
    pub connected: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Present only with `--require-approval` (filled in by the session, which knows the
    /// approvals; the hub does not).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approved: Option<bool>,
}

/// One row of the admin API's `GET /api/v1/connections`.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ConnectionRow {
    pub id: String,
    pub user_id: String,
    pub mcp_client_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_name: Option<String>,
    pub extension_id: String,
    pub extension_name: String,
    pub pending_requests: usize,
}

/// The result of `connect`.
#[derive(Debug, Clone)]
pub struct ConnectInfo {
    pub connection_id: String,
    pub extension_id: String,
    pub extension_name: String,
    pub peer_count: usize,
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

struct ExtensionEntry {
    user_id: String,
    name: String,
    version: Option<String>,
    /// Open sockets of this identity, oldest first; requests go to the last one.
    sockets: Vec<Peer>,
    /// Connections to it, whichever node their client is on.
    connections: Vec<String>,
}

/// Routing for one relay node. See the module documentation.
pub struct Hub {
    /// Extension identities held here, by extension id.
    extensions: DashMap<String, ExtensionEntry>,
    /// Connections with at least one end here, by connection id.
    connections: DashMap<String, Arc<Connection>>,
    /// MCP clients here waiting for a vanished extension to come back.
    returns: ReturnWatch<Peer>,
    /// Per user: its extensions (the `list_extensions` index) and MCP socket count.
    users: DashMap<String, UserState>,
    metrics: Arc<Metrics>,
    limits: HubLimits,
    /// Presence and transport to the other nodes, with `--cluster`.
    cluster: Option<Arc<Cluster>>,
    /// The audit trail (`--audit-retention` not 0): one `try_send` per finished request.
    audit: Option<Arc<dyn AuditTrail>>,
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

impl Hub {
    /// A hub; with `cluster`, one node of a cluster (start the cluster's tasks with
    /// [`Hub::start_cluster`] once the hub is shared).
    pub fn new(limits: HubLimits, metrics: Arc<Metrics>, cluster: Option<Arc<Cluster>>) -> Self {
        Hub {
            extensions: DashMap::new(),
            connections: DashMap::new(),
            returns: ReturnWatch::new(
                limits.reconnect_window,
                limits.max_extensions_per_user,
                limits.max_mcp_clients_per_user,
                Arc::clone(&metrics),
            ),
            users: DashMap::new(),
            metrics,
            limits,
            cluster,
            audit: None,
        }
    }

    /// Records every forwarded request's outcome on `sink` from now on (set before sharing the
    /// hub).
    pub fn set_audit(&mut self, sink: Arc<dyn AuditTrail>) {
        self.audit = Some(sink);
    }

    /// Records a finished request of `conn` (an extension here only: a request to another
    /// node's browser is recorded there, once).
    fn audit_request(&self, conn: &Connection, request: &mut PendingRequest, code: i64) {
        if let (Some(audit), Some(method)) = (&self.audit, request.method.take()) {
            audit.request(&conn.tag, method, code, request.started.elapsed());
        }
    }

    /// Whether an extension identity has a socket on this node.
    pub fn extension_online(&self, extension_id: &str) -> bool {
        self.extensions
            .get(extension_id)
            .is_some_and(|e| !e.sockets.is_empty())
    }

    /// Whether `user_id`'s extension has a socket on this node or, in a cluster, on another
    /// live node (every node lists every browser with `--state nats`).
    pub fn extension_online_anywhere(&self, user_id: &str, extension_id: &str) -> bool {
        self.extension_online(extension_id)
            || self
                .cluster
                .as_ref()
                .is_some_and(|c| c.find_extension(user_id, extension_id).is_some())
    }

    /// The connections with an MCP client on this node (`user_id`'s only, when given), for the
    /// admin API.
    pub fn list_connections(&self, user_id: Option<&str>) -> Vec<ConnectionRow> {
        let mut rows: Vec<ConnectionRow> = self
            .connections
            .iter()
            .filter(|c| matches!(c.client, ClientSide::Local(_)))
            .filter(|c| user_id.is_none_or(|u| c.user_id == u))
            .map(|c| ConnectionRow {
                id: c.id.clone(),
                user_id: c.user_id.clone(),
                mcp_client_id: c.tag.mcp_client_id.clone(),
                client_name: c.tag.client_name.clone(),
                extension_id: c.extension_id.clone(),
                extension_name: c.extension_name.clone(),
                pending_requests: c
                    .pending
                    .lock()
                    .unwrap()
                    .as_ref()
                    .map_or(0, |p| p.requests.len()),
            })
            .collect();
        rows.sort_by(|a, b| a.id.cmp(&b.id));
        rows
    }

    /// Who is at each end of a connection (the audit trail's labels).
    pub fn connection_tag(&self, connection_id: &str) -> Option<Arc<ConnTag>> {
        self.connection(connection_id).map(|c| Arc::clone(&c.tag))
    }

    /// The user a connection with a client here belongs to.
    pub fn connection_user(&self, connection_id: &str) -> Option<String> {
        self.connection(connection_id)
            .filter(|c| matches!(c.client, ClientSide::Local(_)))
            .map(|c| c.user_id.clone())
    }

    /// Starts the cluster's presence, receive and expiry tasks, which route through this hub.
    pub fn start_cluster(self: &Arc<Self>) {
        if let Some(cluster) = &self.cluster {
            cluster.run(Arc::clone(self) as Arc<dyn crate::routing::cluster::Routing>);
        }
    }

    /// The cluster link, when started with `--cluster` (health, metrics, fault injection).
    pub fn cluster(&self) -> Option<&Arc<Cluster>> {
        self.cluster.as_ref()
    }

    /// The cluster's series for `/metrics`; none without a cluster.
    pub fn sample_cluster_metrics(&self, out: &mut Sampled) {
        let Some(cluster) = &self.cluster else {
            return;
        };
        let remote = self
            .connections
            .iter()
            .filter(|c| matches!(c.client, ClientSide::Local(_)) && !c.extension.is_local())
            .count();
        cluster.sample_metrics(remote, out);
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

    /// Queues a frame for a connection's MCP client, on this node or another.
    fn send_to_client(&self, conn: &Connection, frame: String) {
        match &conn.client {
            ClientSide::Local(peer) => {
                peer.send(frame);
            }
            ClientSide::Remote { node } => {
                if let Some(cluster) = &self.cluster {
                    cluster.frame(node, &conn.id, &frame);
                }
            }
        }
    }

    /// Asks the cluster to publish presence now (an extension or a connection to one came or
    /// went).
    fn presence_changed(&self) {
        if let Some(cluster) = &self.cluster {
            cluster.presence_changed();
        }
    }

    /// Tells the MCP clients waiting for `extension_id` that it is back (here or on another
    /// node).
    fn tell_returned(&self, extension_id: &str, name: &str) {
        let waiting = self.returns.take(extension_id);
        if waiting.is_empty() {
            return;
        }
        let notice = protocol::connected(extension_id, name);
        for peer in waiting {
            peer.send(notice.clone());
        }
    }

    /// Connects an MCP client, here or on another node, to an extension held here.
    /// `connection_id` is chosen by the client's node, so both nodes name it the same.
    fn attach(
        &self,
        who: &ConnectBody,
        client: ClientSide,
        connection_id: String,
    ) -> Result<ConnectInfo, RelayError> {
        let (user_id, extension_id) = (who.user_id.as_str(), who.extension_id.as_str());
        // Check ownership before creating anything; the same answer for "absent" and
        // "someone else's" so ids of other users' browsers cannot be probed.
        let name = self
            .extensions
            .get(extension_id)
            .filter(|e| e.user_id == user_id)
            .map(|e| e.name.clone());
        let Some(name) = name else {
            return Err(RelayError::ExtensionNotFound);
        };
        if self.connections.contains_key(&connection_id) {
            return Err(RelayError::ExtensionNotFound);
        }
        let opened = protocol::connection_opened(
            &connection_id,
            &who.mcp_client_id,
            who.client_id.as_deref(),
            who.client_name.as_deref(),
        );
        self.connections.insert(
            connection_id.clone(),
            Arc::new(Connection::new(
                connection_id.clone(),
                user_id,
                extension_id,
                &name,
                client,
                ExtensionSide::Local,
                opened.clone(),
                (&who.mcp_client_id, who.client_name.as_deref()),
            )),
        );
        self.metrics.connections.inc();
        // Insert first, then attach to the extension: if the extension vanished in between,
        // its cleanup either saw this connection or we undo it here.
        let attached = self.extensions.get_mut(extension_id).and_then(|mut e| {
            (e.user_id == user_id).then(|| {
                e.connections.push(connection_id.clone());
                (e.name.clone(), e.connections.len())
            })
        });
        let Some((extension_name, peer_count)) = attached else {
            self.end(&connection_id, Ending::Abandoned);
            return Err(RelayError::ExtensionNotFound);
        };
        // Who connected first, then the new count: an extension that asks its owner before
        // acting for a new assistant learns whom to ask about before any request arrives.
        self.send_to_extension(extension_id, opened);
        self.send_status_to_extension(extension_id);
        Ok(ConnectInfo {
            connection_id,
            extension_id: extension_id.to_owned(),
            extension_name,
            peer_count,
        })
    }

    /// Connects a client here to an extension another node holds. Answered without waiting
    /// for that node (the hub is synchronous): should the extension have left meanwhile, the
    /// owner answers `connect` with `disconnected`.
    fn attach_remote(
        &self,
        cluster: &Cluster,
        client: &McpClient,
        extension_id: &str,
    ) -> Result<ConnectInfo, RelayError> {
        let (node, entry) = cluster
            .find_extension(&client.user_id, extension_id)
            .ok_or(RelayError::ExtensionNotFound)?;
        let connection_id = new_connection_id();
        self.connections.insert(
            connection_id.clone(),
            Arc::new(Connection::new(
                connection_id.clone(),
                &client.user_id,
                extension_id,
                &entry.name,
                ClientSide::Local(client.peer.clone()),
                ExtensionSide::Remote { node: node.clone() },
                String::new(),
                (&client.mcp_client_id, client.client_name.as_deref()),
            )),
        );
        cluster.open(&node, &connection_id, &client.connect_body(extension_id));
        Ok(ConnectInfo {
            connection_id,
            extension_id: extension_id.to_owned(),
            extension_name: entry.name,
            peer_count: entry.connections + 1,
        })
    }

    /// Adds an authenticated socket to its identity: as the newest (requests go to it) or, for
    /// an idle duplicate, as the oldest.
    fn register_socket(
        &self,
        auth: &ExtensionAuth,
        peer: &Peer,
        newest: bool,
    ) -> Result<String, RelayError> {
        let extension_id = auth.extension_id();
        // Stored per browser, listed, and sent to every cluster node: the browser must not
        // choose their size (docs/SECURITY.md).
        let name = truncate_utf8(&auth.name, self.limits.max_name_bytes);
        let version = auth
            .version
            .as_deref()
            .map(|v| truncate_utf8(v, self.limits.max_name_bytes).to_owned());
        let mut superseded = None;
        let mut inherited = Vec::new();
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
                inherited.clone_from(&entry.connections);
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
                self.metrics.extensions.inc();
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
        // A client may be waiting even while the identity is live here: its connection was to
        // a copy of the browser on a node that has since gone. The newest socket is news for
        // it; an idle duplicate only when it brings the identity back.
        if new_identity || newest {
            self.tell_returned(&extension_id, name);
        }
        // Every new socket learns its peers right away (none, or those it inherits from a
        // duplicate, each with who is behind it), so the extension can drop state of
        // connections that no longer exist and knows whom it acts for in the others.
        for connection_id in &inherited {
            if let Some(conn) = self.connection(connection_id) {
                peer.send(conn.opened.clone());
            }
        }
        peer.send(joined_status);
        self.presence_changed();
        Ok(extension_id)
    }

    /// Removes the pending entry for `key`, if it is still there.
    fn take_pending(&self, conn: &Connection, key: &str) -> Option<PendingRequest> {
        let taken = conn.pending.lock().unwrap().as_mut()?.remove(key);
        if taken.is_some() && conn.extension.is_local() {
            self.metrics.pending_requests.dec();
        }
        taken
    }

    /// Counts an authenticated MCP socket against its user's limit.
    pub fn register_mcp(&self, user_id: &str) -> Result<(), RelayError> {
        let mut user = self.users.entry(user_id.to_owned()).or_default();
        if user.mcp_clients >= self.limits.max_mcp_clients_per_user {
            return Err(RelayError::TooManyMcpClients(
                self.limits.max_mcp_clients_per_user,
            ));
        }
        user.mcp_clients += 1;
        Ok(())
    }

    /// Releases what [`Hub::register_mcp`] counted.
    pub fn unregister_mcp(&self, user_id: &str) {
        if let Some(mut user) = self.users.get_mut(user_id) {
            user.mcp_clients = user.mcp_clients.saturating_sub(1);
        }
        self.users.remove_if(user_id, |_, u| u.is_idle());
    }

    /// Adds an authenticated extension socket, sends it the `authenticated` notification (then
    /// `status` when it joins a live extension), and returns the extension id.
    pub fn register_extension(
        &self,
        auth: &ExtensionAuth,
        peer: &Peer,
    ) -> Result<String, RelayError> {
        self.register_socket(auth, peer, true)
    }

    /// Adds an authenticated extension socket as the *oldest* of its identity: it is told
    /// `authenticated` and `status` like any socket, but requests keep going to the newer one.
    /// For a socket whose `authenticate` was answered on another socket of the same browser
    /// (see `extension_session`). When the identity is not live, this is
    /// [`Hub::register_extension`].
    pub fn register_idle_duplicate(
        &self,
        auth: &ExtensionAuth,
        peer: &Peer,
    ) -> Result<String, RelayError> {
        self.register_socket(auth, peer, false)
    }

    /// An extension socket closed. When it was the identity's last, the extension goes away.
    pub fn extension_socket_closed(&self, extension_id: &str, peer: &Peer, reason: &str) {
        if let Some(mut entry) = self.extensions.get_mut(extension_id) {
            entry.sockets.retain(|s| s.id() != peer.id());
        }
        let removed = self
            .extensions
            .remove_if(extension_id, |_, e| e.sockets.is_empty());
        if let Some((_, entry)) = removed {
            self.metrics.extensions.dec();
            if let Some(mut user) = self.users.get_mut(&entry.user_id) {
                user.extensions.retain(|id| id != extension_id);
            }
            self.users.remove_if(&entry.user_id, |_, u| u.is_idle());
            for connection_id in &entry.connections {
                self.end(
                    connection_id,
                    Ending::ExtensionGone {
                        name: &entry.name,
                        reason,
                    },
                );
            }
        }
        self.presence_changed();
    }

    /// The caller's user's extensions, here and on the other live nodes. O(that user's
    /// extensions): reads the per-user indexes, never scans other users'.
    pub fn list_extensions(&self, user_id: &str) -> Vec<ExtensionInfo> {
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
                approved: None,
            })
            .collect();
        if let Some(cluster) = &self.cluster {
            for entry in cluster.extensions_of(user_id) {
                if !list.iter().any(|e| e.id == entry.id) {
                    list.push(ExtensionInfo {
                        id: entry.id,
                        name: entry.name,
                        connected: true,
                        version: entry.version,
                        approved: None,
                    });
                }
            }
        }
        list.sort_by(|a, b| a.name.cmp(&b.name).then(a.id.cmp(&b.id)));
        list
    }

    /// Connects an MCP client to one of its user's extensions, here or on another node.
    pub fn connect(
        &self,
        client: &McpClient,
        extension_id: &str,
    ) -> Result<ConnectInfo, RelayError> {
        match &self.cluster {
            Some(cluster) if !self.extensions.contains_key(extension_id) => {
                self.attach_remote(cluster, client, extension_id)
            }
            _ => self.attach(
                &client.connect_body(extension_id),
                ClientSide::Local(client.peer.clone()),
                new_connection_id(),
            ),
        }
    }

    /// Ends a connection while its MCP client is still there: pending requests are answered
    /// with an error saying why, and the extension is told to cancel them.
    pub fn disconnect(&self, connection_id: &str, cause: EndCause) {
        self.end(connection_id, Ending::Disconnect(cause));
    }

    /// The relay's operator ends a connection (admin API). False when there is none.
    pub fn kick(&self, connection_id: &str) -> bool {
        self.end(connection_id, Ending::Kicked)
    }

    /// The MCP socket of a connection went away: pending requests are forgotten, and the
    /// extension is told to cancel them.
    pub fn mcp_closed(&self, connection_id: &str) {
        self.end(connection_id, Ending::ClientGone);
    }

    /// The browser's owner stops one of this extension's connections (`close_connection` from
    /// the extension). Only the extension the connection belongs to may do so, and only where
    /// it is held: the relay node its socket is on.
    pub fn stop_by_owner(
        &self,
        extension_id: &str,
        connection_id: &str,
        reason: Option<&str>,
    ) -> Result<(), RelayError> {
        let owned = self
            .connection(connection_id)
            .is_some_and(|c| c.extension_id == extension_id && c.extension.is_local());
        // The reason reaches MCP clients: bounded like every name an extension gives.
        let reason = protocol::stopped_by_owner_reason(reason.map(|r| truncate_utf8(r, 256)));
        if owned && self.end(connection_id, Ending::StoppedByOwner(&reason)) {
            return Ok(());
        }
        Err(RelayError::NotThisBrowsersConnection(
            crate::redact::clip(connection_id, 100).into_owned(),
        ))
    }

    /// Writes the receipt of the browser's owner's answer to one of `connection_id`'s requests
    /// (a hand-off done or cancelled, an ask-before allowed or denied) into the audit trail,
    /// with the connection's labels: who asked, which browser, when, and `detail` (what, where;
    /// never page content). Only the browser the connection is on may record for it.
    pub fn record_owner_decision(
        &self,
        extension_id: &str,
        connection_id: &str,
        kind: &str,
        detail: String,
    ) -> Result<(), RelayError> {
        let conn = self
            .connection(connection_id)
            .filter(|c| c.extension_id == extension_id && c.extension.is_local())
            .ok_or_else(|| {
                RelayError::NotThisBrowsersConnection(
                    crate::redact::clip(connection_id, 100).into_owned(),
                )
            })?;
        if let Some(audit) = &self.audit {
            let tag = &conn.tag;
            audit.control(
                Control {
                    kind,
                    user_id: &tag.user_id,
                    mcp_client_id: Some(&tag.mcp_client_id),
                    connection_id: Some(&tag.connection_id),
                    extension_id: Some(&tag.extension_id),
                    code: 0,
                },
                Some(detail),
            );
        }
        Ok(())
    }

    /// True while the connection exists.
    pub fn is_connected(&self, connection_id: &str) -> bool {
        self.connections.contains_key(connection_id)
    }

    /// Forwards a request with its id mapped; the answer arrives later on the MCP peer.
    pub fn forward_request(
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
        if let ExtensionSide::Remote { node } = &conn.extension {
            return self.forward_request_to_node(&conn, node, id, method, params);
        }
        let result = self.forward_local(&conn, id, method, params);
        if let (Err(error), Some(audit)) = (&result, &self.audit) {
            // Refused before it reached the browser: counted (per connection and reason) with
            // the code the client got, not stored one by one.
            audit.refused(&conn.tag, method, error.code(), error.reason());
        }
        result
    }

    /// [`Hub::forward_request`] to an extension on this node.
    fn forward_local(
        &self,
        conn: &Connection,
        id: &RawValue,
        method: &str,
        params: Option<&RawValue>,
    ) -> Result<(), RelayError> {
        // The socket and how many connections share it, in the one look-up this path always did.
        let target = self.extensions.get(&conn.extension_id).and_then(|e| {
            e.sockets
                .last()
                .map(|socket| (socket.clone(), e.connections.len().max(1)))
        });
        let budget = self.limits.extension_queue_budget;
        let fair_share = budget / target.as_ref().map_or(1, |(_, sharers)| *sharers);
        let mapped = {
            let mut guard = conn.pending.lock().unwrap();
            let pending = guard.as_mut().ok_or(RelayError::NotConnected)?;
            let mapped = conn.unique_key(pending, format!("{}:{}", conn.id, frame::id_text(id)));
            let request = PendingRequest {
                original_id: id.get().into(),
                started: Instant::now(),
                cost: mapped.len() + id.get().len() + PENDING_OVERHEAD_BYTES,
                // The frame built below: envelope, mapped id, method, params.
                frame_bytes: 64 + mapped.len() + method.len() + params.map_or(0, |p| p.get().len()),
                // Cut before it is kept: the pending budget does not count it.
                method: self
                    .audit
                    .as_ref()
                    .map(|_| truncate_utf8(method, MAX_METHOD_BYTES).into()),
            };
            pending.admit(
                mapped.clone(),
                request,
                self.limits.max_pending_bytes,
                fair_share,
            )?;
            mapped
        };
        self.metrics.pending_requests.inc();
        let request = frame::request(&frame::json_string(&mapped), method, params);
        // Never `send`: a queue overflow would disconnect the browser for every client. Over
        // the budget, this client is refused instead and the browser stays.
        let refused = match &target {
            Some((socket, _)) if socket.try_send_within(request, budget) => None,
            Some((socket, _)) if socket.is_open() => Some(RelayError::BrowserQueueFull),
            _ => Some(RelayError::ExtensionGone),
        };
        if let Some(error) = refused {
            if self.take_pending(conn, &mapped).is_some() {
                return Err(error);
            }
        }
        self.metrics.forwarded_requests.inc();
        Ok(())
    }

    /// Publishes a request to the extension's node with the client's own id: that node maps
    /// it, applies its fair share and answers. This node keeps the request (bounded by
    /// `--max-pending-bytes`) to answer it itself should that node fail.
    fn forward_request_to_node(
        &self,
        conn: &Connection,
        node: &str,
        id: &RawValue,
        method: &str,
        params: Option<&RawValue>,
    ) -> Result<(), RelayError> {
        let Some(cluster) = &self.cluster else {
            return Err(RelayError::NotConnected);
        };
        let request = frame::request(id.get(), method, params);
        cluster.check_size(request.len())?;
        {
            let mut guard = conn.pending.lock().unwrap();
            let pending = guard.as_mut().ok_or(RelayError::NotConnected)?;
            let key = conn.unique_key(pending, id.get().to_owned());
            let outstanding = PendingRequest {
                original_id: id.get().into(),
                started: Instant::now(),
                cost: key.len() + id.get().len() + PENDING_OVERHEAD_BYTES,
                frame_bytes: 0,
                method: None,
            };
            pending.admit(key, outstanding, self.limits.max_pending_bytes, usize::MAX)?;
        }
        cluster.request(node, &conn.id, &request);
        Ok(())
    }

    /// Forwards an MCP notification to the connection's extension.
    pub fn forward_notification(
        &self,
        connection_id: &str,
        method: &str,
        params: Option<&RawValue>,
    ) -> Result<(), RelayError> {
        let conn = self
            .connection(connection_id)
            .ok_or(RelayError::NotConnected)?;
        if let (ExtensionSide::Remote { node }, Some(cluster)) = (&conn.extension, &self.cluster) {
            cluster.notify(
                node,
                connection_id,
                &frame::notification_raw(method, params),
            );
            return Ok(());
        }
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
        self.metrics.forwarded_notifications.inc();
        Ok(())
    }

    /// Routes an extension's response back to its requester. Returns `false` for unknown ids.
    pub fn deliver_response(&self, extension_id: &str, reply: &Reply<'_>) -> bool {
        let delivered = (|| {
            let mapped = frame::id_string(reply.id)?;
            let connection_id = mapped.split(':').next()?;
            let conn = self.connection(connection_id)?;
            // Only the extension a request was sent to may answer it.
            if conn.extension_id != extension_id || !conn.extension.is_local() {
                tracing::warn!(
                    extension_id,
                    "response for another extension's request dropped"
                );
                return None;
            }
            let mut request = self.take_pending(&conn, &mapped)?;
            let (response, outcome) = match (reply.error, reply.result) {
                (Some(error), _) => {
                    let error = frame::normalize_error(error);
                    let code = serde_json::from_str::<serde_json::Value>(&error)
                        .ok()
                        .and_then(|e| e["code"].as_i64())
                        .unwrap_or(code::SERVER_ERROR);
                    self.metrics.error(code);
                    (
                        frame::raw_error_response(&request.original_id, &error),
                        code,
                    )
                }
                (None, Some(result)) => (
                    frame::result_response(&request.original_id, result.get()),
                    0,
                ),
                (None, None) => {
                    self.metrics.error(RelayError::EmptyReply.code());
                    (
                        RelayError::EmptyReply.response(&request.original_id),
                        RelayError::EmptyReply.code(),
                    )
                }
            };
            self.audit_request(&conn, &mut request, outcome);
            self.metrics.observe_latency(request.started.elapsed());
            self.metrics.responses.inc();
            self.send_to_client(&conn, response);
            Some(())
        })()
        .is_some();
        if !delivered {
            self.metrics.unknown_responses.inc();
        }
        delivered
    }

    /// Routes an extension's notification to one connection (`target`) or all of its
    /// connections. `frame` is the notification to deliver, already without `connectionId`.
    pub fn extension_notification(&self, extension_id: &str, target: Option<&str>, frame: String) {
        let targets: Vec<Arc<Connection>> = match target {
            Some(connection_id) => self
                .connection(connection_id)
                .filter(|c| c.extension_id == extension_id && c.extension.is_local())
                .into_iter()
                .collect(),
            None => {
                let ids = self
                    .extensions
                    .get(extension_id)
                    .map(|e| e.connections.clone())
                    .unwrap_or_default();
                ids.iter().filter_map(|id| self.connection(id)).collect()
            }
        };
        let Some((last, others)) = targets.split_last() else {
            return;
        };
        for conn in others {
            self.send_to_client(conn, frame.clone());
        }
        self.send_to_client(last, frame);
        self.metrics.forwarded_notifications.inc();
    }

    /// Answers every request older than the timeout with an error, and forgets clients that
    /// waited too long for an extension to return.
    ///
    /// A request to an extension on another node is timed out (and answered) by that node; the
    /// client's node answers it too only a node TTL later, for when that answer cannot
    /// arrive (NATS down), so the owner's answer normally wins.
    pub fn expire_requests(&self, now: Instant) {
        let timeout = self.limits.request_timeout;
        let answer = RelayError::RequestTimedOut(timeout);
        let fallback = timeout
            + self
                .cluster
                .as_ref()
                .map_or_else(Default::default, |c| c.node_ttl());
        let conns: Vec<Arc<Connection>> = self.connections.iter().map(|c| Arc::clone(&c)).collect();
        for conn in conns {
            let local = conn.extension.is_local();
            let expired = {
                let mut guard = conn.pending.lock().unwrap();
                let Some(pending) = guard.as_mut() else {
                    continue;
                };
                pending.remove_expired(now, if local { timeout } else { fallback })
            };
            for (mapped, mut request) in expired {
                self.audit_request(&conn, &mut request, answer.code());
                if local {
                    self.metrics.pending_requests.dec();
                }
                self.metrics.timeouts.inc();
                self.metrics.error(answer.code());
                self.send_to_client(&conn, answer.response(&request.original_id));
                if local {
                    self.send_to_extension(
                        &conn.extension_id,
                        protocol::cancelled(&mapped, "request timed out"),
                    );
                }
            }
        }
        self.returns.sweep(now);
    }

    /// Answers every pending request with a shutdown error, tells the other nodes this one is
    /// leaving, and ends every connection.
    pub fn shutdown(&self) {
        if let Some(cluster) = &self.cluster {
            // Sockets closing during the shutdown must not make this node look alive again.
            cluster.set_leaving();
        }
        let ids: Vec<String> = self.connections.iter().map(|c| c.key().clone()).collect();
        for id in ids {
            self.end(&id, Ending::Shutdown);
        }
        if let Some(cluster) = &self.cluster {
            cluster.publish_leaving();
        }
    }

    /// What this node tells the other nodes it holds.
    fn presence(&self) -> Vec<PresenceEntry> {
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
}
