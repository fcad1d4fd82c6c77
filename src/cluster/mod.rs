//! Several relay nodes behind one address, joined through NATS (`--cluster`).
//!
//! [`ClusterHub`] implements the same [`Hub`] trait as [`LocalHub`] and wraps one: everything
//! about sockets held by this node (extensions, local pairs, id mapping, pending requests,
//! timeouts) stays in the `LocalHub`, so a pair on one node behaves exactly as without a
//! cluster. The cluster adds three things, described in `docs/CLUSTER.md`:
//!
//! - **Presence.** Each node publishes the extensions it holds every `--cluster-heartbeat`
//!   and at once when that changes. A node not heard from for `--cluster-node-ttl` is dead.
//!   `list_extensions` merges the local list with the live nodes' presence, filtered by user.
//! - **Remote connections.** An MCP client on this node connected to an extension on node B is
//!   a [`RemoteConnection`] here and an ordinary connection on B whose MCP side is a
//!   [`RemoteSink`] (frames published back to this node). B maps ids, tracks pending requests
//!   and times them out as for a local client; this node only remembers which request ids are
//!   outstanding, so it can answer them itself if B dies or NATS fails, and so it delivers at
//!   most one answer per request.
//! - **Faults.** When B's presence expires, its remote connections end here with error replies
//!   for outstanding requests and `disconnected`; the MCP clients are told `connected` when the
//!   extension shows up again on any node.
//!
//! The hub's byte bounds (docs/SECURITY.md) hold here too: B's `LocalHub` applies names,
//! pending bytes and the fair share of the extension's queue to remote clients exactly as to
//! local ones (its refusals travel back as error frames); this node refuses over-long ids and
//! bounds its outstanding list by `--max-pending-bytes` before publishing; clients waiting for a
//! remote extension to return are a bounded, aging [`ReturnWatch`]; and `list_extensions`
//! reads a per-user index of each node's presence, so it costs O(nodes + that user's browsers).
//!
//! Every [`Hub`] method stays synchronous: NATS traffic goes through one ordered outbound queue
//! drained by a publisher task.

mod nats;
pub mod wire;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::ws::Utf8Bytes;
use bytes::Bytes;
use dashmap::DashMap;
use futures_util::StreamExt;
use serde_json::value::RawValue;
use tokio::sync::{mpsc, oneshot, Notify};
use tokio::task::JoinHandle;

use crate::config::ServeConfig;
use crate::frame::{self, Incoming, Reply};
use crate::hub::{
    new_connection_id, ConnectInfo, EndCause, ExtensionAuth, ExtensionInfo, Hub, HubLimits,
    LocalHub, McpClient, McpSink, PresenceEntry, RemoteMcp, ReturnWatch, PENDING_OVERHEAD_BYTES,
};
use crate::metrics::Metrics;
use crate::peer::Peer;
use crate::protocol::{self, RelayError};
use wire::{ConnectBody, Kind, Presence};

/// NATS's default `max_payload`, assumed until the server tells its own.
const DEFAULT_MAX_PAYLOAD: usize = 1 << 20;
/// Room for the envelope's first line on top of a frame.
const ENVELOPE_OVERHEAD: usize = 256;

/// What the publisher task sends, in this order.
enum Outbound {
    Publish {
        subject: String,
        payload: Bytes,
    },
    /// A presence heartbeat, built when it is sent so it is never older than the frames
    /// published before it (see [`ClusterHub::on_presence`]).
    Presence {
        leaving: bool,
    },
    /// Resolves once everything queued before has been handed to NATS.
    Flush(oneshot::Sender<()>),
}

/// A live node as this node last heard it.
struct NodeView {
    /// The process behind the node name (see [`Presence::incarnation`]); empty until its first
    /// heartbeat.
    incarnation: String,
    extensions: Vec<PresenceEntry>,
    /// Per user, positions in `extensions`: built once per heartbeat (which is parsed in full
    /// anyway) so that `list_extensions` and `connect` never scan other users' browsers.
    by_user: HashMap<String, Vec<usize>>,
    last_seen: Instant,
}

impl NodeView {
    fn new(incarnation: String, extensions: Vec<PresenceEntry>) -> Self {
        let mut by_user: HashMap<String, Vec<usize>> = HashMap::new();
        for (index, entry) in extensions.iter().enumerate() {
            by_user
                .entry(entry.user_id.clone())
                .or_default()
                .push(index);
        }
        NodeView {
            incarnation,
            extensions,
            by_user,
            last_seen: Instant::now(),
        }
    }

    /// The extensions of `user_id` on this node.
    fn of_user<'a>(&'a self, user_id: &str) -> impl Iterator<Item = &'a PresenceEntry> + 'a {
        self.by_user
            .get(user_id)
            .into_iter()
            .flatten()
            .map(|&index| &self.extensions[index])
    }
}

/// What one outstanding request costs against `--max-pending-bytes` on the client's node: the
/// same accounting as a local pending request (the owner node's mapped id is about as long as
/// the raw id kept here).
fn outstanding_cost(id: &str) -> usize {
    2 * id.len() + PENDING_OVERHEAD_BYTES
}

/// An MCP client on this node connected to an extension on another node.
struct RemoteConnection {
    id: String,
    /// The node holding the extension.
    node: String,
    extension_id: String,
    extension_name: String,
    /// The client's user, for the per-user bound on clients waiting for a return.
    user_id: String,
    peer: Peer,
    /// Raw ids of requests sent and not yet answered, with when they were sent. The owner node
    /// answers them normally; this list lets this node answer them when the owner cannot, and
    /// drop any answer that arrives after that. Bounded like a local connection's pending
    /// requests: ids by `--max-id-bytes`, the list by `--max-pending-bytes`.
    outstanding: Mutex<Vec<(Box<str>, Instant)>>,
    /// Sum of [`outstanding_cost`] over `outstanding`; only changed with its mutex held.
    outstanding_bytes: AtomicUsize,
}

impl RemoteConnection {
    /// Removes one outstanding request with this raw id; false when there is none.
    fn take_outstanding(&self, id: &str) -> bool {
        let mut outstanding = self.outstanding.lock().unwrap();
        match outstanding.iter().position(|(o, _)| &**o == id) {
            Some(index) => {
                let (id, _) = outstanding.remove(index);
                self.outstanding_bytes
                    .fetch_sub(outstanding_cost(&id), Relaxed);
                true
            }
            None => false,
        }
    }
}

/// The MCP side of a connection held here whose client is on another node.
struct RemoteSink {
    connection_id: String,
    /// This node, written into every envelope.
    node_id: String,
    /// The client node's subject.
    subject: String,
    outbound: mpsc::UnboundedSender<Outbound>,
    max_payload: Arc<AtomicUsize>,
}

impl RemoteMcp for RemoteSink {
    fn send(&self, frame: Utf8Bytes) -> bool {
        let limit = self.max_payload.load(Relaxed);
        let mut body = frame.as_str();
        let replacement;
        if body.len() + ENVELOPE_OVERHEAD > limit {
            // NATS refuses messages over its max_payload. An answer still has to reach its
            // requester, so it becomes an error that says what to change.
            let Ok(Incoming::Response(reply)) = frame::parse(body) else {
                tracing::warn!(
                    bytes = body.len(),
                    limit,
                    "cluster: notification larger than NATS max_payload dropped"
                );
                return false;
            };
            replacement = RelayError::AnswerTooLargeForCluster {
                size: body.len(),
                limit,
            }
            .response(reply.id.get());
            body = &replacement;
        }
        self.outbound
            .send(Outbound::Publish {
                subject: self.subject.clone(),
                payload: wire::envelope(Kind::Frame, &self.connection_id, &self.node_id, body),
            })
            .is_ok()
    }
}

/// The hub of a clustered node. See the module documentation.
pub struct ClusterHub {
    /// Everything about sockets on this node.
    local: LocalHub,
    node_id: String,
    /// Random per process; see [`Presence::incarnation`].
    incarnation: String,
    /// Every message to NATS goes through this one queue, which keeps them in order.
    outbound: mpsc::UnboundedSender<Outbound>,
    /// Connections of MCP clients here to extensions elsewhere, by connection id.
    remote: DashMap<String, Arc<RemoteConnection>>,
    /// Connections held here whose MCP client is on another node: connection id → that node,
    /// so they can be ended when that node dies.
    inbound: DashMap<String, String>,
    /// The other live nodes and what they hold.
    view: Mutex<HashMap<String, NodeView>>,
    /// MCP clients here whose remote extension went away, waiting for `connected`.
    former_remote: ReturnWatch<Peer>,
    /// Whether NATS is reachable right now, for `/healthz` and `/metrics`.
    connected: Arc<AtomicBool>,
    /// The server's `max_payload`, which bounds one frame between nodes.
    max_payload: Arc<AtomicUsize>,
    /// Wakes the heartbeat task to publish presence now (an extension came or went).
    presence_changed: Notify,
    /// Set by [`Hub::shutdown`]: every later heartbeat says `leaving`, so sockets closing
    /// during the shutdown do not make this node look alive again.
    leaving: AtomicBool,
    limits: HubLimits,
    node_ttl: Duration,
    metrics: Arc<Metrics>,
    /// The NATS client and the cluster's tasks, dropped and aborted by [`ClusterHub::kill`].
    client: Mutex<Option<async_nats::Client>>,
    tasks: Mutex<Vec<JoinHandle<()>>>,
}

impl ClusterHub {
    /// Connects to NATS (in the background) and starts presence, routing and expiry.
    pub async fn start(
        config: &ServeConfig,
        url: &str,
        limits: HubLimits,
        metrics: Arc<Metrics>,
    ) -> anyhow::Result<Arc<ClusterHub>> {
        let node_id = config.cluster_options.node_id.clone().unwrap_or_else(|| {
            format!("node-{}", &uuid::Uuid::new_v4().simple().to_string()[..12])
        });
        anyhow::ensure!(
            !node_id.is_empty()
                && node_id
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'),
            "--cluster-node-id must be letters, digits, '-' or '_' (it is part of a NATS subject)"
        );
        let connected = Arc::new(AtomicBool::new(false));
        let reconnected = Arc::new(Notify::new());
        let client = nats::connect(
            config,
            url,
            &node_id,
            Arc::clone(&connected),
            Arc::clone(&reconnected),
        )
        .await?;
        let presence = client.subscribe(wire::PRESENCE_SUBJECT).await?;
        let inbox = client.subscribe(wire::node_subject(&node_id)).await?;
        let (outbound, outbound_rx) = mpsc::unbounded_channel();
        let hub = Arc::new(ClusterHub {
            local: LocalHub::new(limits.clone(), Arc::clone(&metrics)),
            node_id: node_id.clone(),
            incarnation: uuid::Uuid::new_v4().simple().to_string(),
            outbound,
            remote: DashMap::new(),
            inbound: DashMap::new(),
            view: Mutex::new(HashMap::new()),
            former_remote: ReturnWatch::new(
                limits.reconnect_window,
                limits.max_extensions_per_user,
                limits.max_mcp_clients_per_user,
                Arc::clone(&metrics),
            ),
            connected,
            max_payload: Arc::new(AtomicUsize::new(DEFAULT_MAX_PAYLOAD)),
            presence_changed: Notify::new(),
            leaving: AtomicBool::new(false),
            limits,
            node_ttl: config.cluster_options.node_ttl,
            metrics,
            client: Mutex::new(Some(client.clone())),
            tasks: Mutex::new(Vec::new()),
        });
        let tasks = vec![
            tokio::spawn(publish_loop(Arc::clone(&hub), client.clone(), outbound_rx)),
            tokio::spawn(receive_loop(Arc::clone(&hub), presence, inbox)),
            tokio::spawn(heartbeat_loop(
                Arc::clone(&hub),
                client,
                reconnected,
                config.cluster_options.heartbeat,
            )),
            tokio::spawn(expiry_loop(Arc::clone(&hub))),
        ];
        *hub.tasks.lock().unwrap() = tasks;
        tracing::info!(node = %node_id, nats = %url, "cluster: node started");
        Ok(hub)
    }

    pub fn node_id(&self) -> &str {
        &self.node_id
    }

    /// True while NATS is reachable.
    pub fn is_connected(&self) -> bool {
        self.connected.load(Relaxed)
    }

    /// Other nodes currently alive.
    pub fn live_nodes(&self) -> usize {
        self.view.lock().unwrap().len()
    }

    /// Cluster lines for `/metrics`, in the Prometheus text format.
    pub fn render_metrics(&self) -> String {
        format!(
            "# HELP mcp_relay_cluster_connected 1 while the NATS connection is up.\n\
             # TYPE mcp_relay_cluster_connected gauge\n\
             mcp_relay_cluster_connected {}\n\
             # HELP mcp_relay_cluster_nodes Other relay nodes currently alive.\n\
             # TYPE mcp_relay_cluster_nodes gauge\n\
             mcp_relay_cluster_nodes {}\n\
             # HELP mcp_relay_cluster_remote_connections MCP clients here connected to extensions on other nodes.\n\
             # TYPE mcp_relay_cluster_remote_connections gauge\n\
             mcp_relay_cluster_remote_connections {}\n",
            u8::from(self.is_connected()),
            self.live_nodes(),
            self.remote.len(),
        )
    }

    /// Waits (briefly) until everything queued so far has been handed to NATS, so a graceful
    /// shutdown's last answers and its leaving presence are not lost.
    pub async fn flush(&self) {
        let (done, wait) = oneshot::channel();
        if self.outbound.send(Outbound::Flush(done)).is_ok() {
            let _ = tokio::time::timeout(Duration::from_secs(2), wait).await;
        }
    }

    /// Stops every cluster task and drops the NATS connection without a word to the other
    /// nodes, as a crash would. For fault tests; also the last step of a graceful shutdown.
    pub fn kill(&self) {
        for task in self.tasks.lock().unwrap().drain(..) {
            task.abort();
        }
        self.client.lock().unwrap().take();
    }

    fn publish(&self, node: &str, kind: Kind, connection_id: &str, body: &str) {
        let _ = self.outbound.send(Outbound::Publish {
            subject: wire::node_subject(node),
            payload: wire::envelope(kind, connection_id, &self.node_id, body),
        });
    }

    fn remote_connection(&self, connection_id: &str) -> Option<Arc<RemoteConnection>> {
        self.remote.get(connection_id).map(|c| Arc::clone(&c))
    }

    /// Ends a remote connection here. `answer` is the error for outstanding requests,
    /// `notice` the reason of a `disconnected` to send, `remember` whether the client waits
    /// for `connected`.
    fn end_remote(
        &self,
        connection_id: &str,
        answer: Option<RelayError>,
        notice: Option<&str>,
        remember: bool,
    ) {
        let Some((_, conn)) = self.remote.remove(connection_id) else {
            return;
        };
        let outstanding = std::mem::take(&mut *conn.outstanding.lock().unwrap());
        if let Some(answer) = answer {
            for (id, _) in &outstanding {
                conn.peer.send(answer.response(id));
                self.metrics.error(answer.code());
            }
        }
        if let Some(reason) = notice {
            conn.peer.send(protocol::disconnected(
                &conn.id,
                &conn.extension_id,
                Some(&conn.extension_name),
                reason,
            ));
        }
        if remember && conn.peer.is_open() {
            self.former_remote.add(
                &conn.extension_id,
                &conn.user_id,
                vec![conn.peer.clone()],
                Instant::now(),
            );
        }
    }

    /// A node is gone (expired or said goodbye): its extensions vanish from the view, clients
    /// here connected to them are answered and told `disconnected`, and connections held here
    /// for its clients end.
    fn node_gone(&self, node: &str, reason: &str) {
        self.view.lock().unwrap().remove(node);
        tracing::warn!(node, reason, "cluster: node gone");
        let lost: Vec<String> = self
            .remote
            .iter()
            .filter(|c| c.node == node)
            .map(|c| c.key().clone())
            .collect();
        for connection_id in lost {
            self.end_remote(
                &connection_id,
                Some(RelayError::ExtensionLeft),
                Some(reason),
                true,
            );
        }
        let orphans: Vec<String> = self
            .inbound
            .iter()
            .filter(|c| c.value() == node)
            .map(|c| c.key().clone())
            .collect();
        for connection_id in orphans {
            self.inbound.remove(&connection_id);
            self.local
                .end_unanswered(&connection_id, "MCP client's relay node went away");
        }
    }

    /// Expires nodes not heard from within the TTL.
    fn expire_nodes(&self, now: Instant) {
        let dead: Vec<String> = self
            .view
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, v)| now.duration_since(v.last_seen) > self.node_ttl)
            .map(|(node, _)| node.clone())
            .collect();
        for node in dead {
            self.node_gone(&node, "the extension's relay node stopped responding");
        }
        // Clients that left, or waited longer than --reconnect-window, for an extension that
        // never came back.
        self.former_remote.sweep(now);
    }

    /// A heartbeat from another node.
    ///
    /// Why a `connected` notice can be sent as soon as an extension is in a heartbeat: a node
    /// publishes presence and frames from one ordered queue and builds each heartbeat when it
    /// is its turn, so a heartbeat that arrives after the `disconnected` for an extension was
    /// built after the extension left; if it lists the extension, the extension is back.
    /// `receive_loop` handles heartbeats before node messages that arrived with them.
    fn on_presence(&self, payload: &[u8]) {
        let presence: Presence = match serde_json::from_slice(payload) {
            Ok(presence) => presence,
            Err(error) => {
                tracing::warn!(%error, "cluster: malformed presence dropped");
                return;
            }
        };
        if presence.node == self.node_id {
            if presence.incarnation != self.incarnation {
                // Both processes receive each other's traffic: routing is broken until one of
                // them is renamed.
                tracing::error!(
                    node = %self.node_id,
                    "cluster: another running relay uses this --cluster-node-id; give every node its own"
                );
            }
            return;
        }
        if presence.leaving {
            self.node_gone(&presence.node, "the extension's relay node shut down");
            return;
        }
        let restarted = self
            .view
            .lock()
            .unwrap()
            .get(&presence.node)
            .is_some_and(|v| !v.incarnation.is_empty() && v.incarnation != presence.incarnation);
        if restarted {
            self.node_gone(&presence.node, "the extension's relay node restarted");
        }
        for entry in &presence.extensions {
            let mut waiting = self.former_remote.take(&entry.id);
            if !self.local.holds_extension(&entry.id) {
                waiting.extend(self.local.take_former_peers(&entry.id));
            }
            if !waiting.is_empty() {
                let notice = protocol::connected(&entry.id, &entry.name);
                for peer in waiting.iter().filter(|p| p.is_open()) {
                    peer.send(notice.clone());
                }
            }
        }
        self.view.lock().unwrap().insert(
            presence.node,
            NodeView::new(presence.incarnation, presence.extensions),
        );
    }

    /// A message on this node's subject.
    fn on_node_message(&self, payload: &[u8]) {
        let Some(message) = wire::open(payload) else {
            tracing::warn!("cluster: malformed node message dropped");
            return;
        };
        let connection_id = message.connection_id;
        match message.kind {
            Kind::Connect => {
                let Ok(body) = serde_json::from_str::<ConnectBody>(message.body) else {
                    return;
                };
                let sink = McpSink::Remote(Arc::new(RemoteSink {
                    connection_id: connection_id.to_owned(),
                    node_id: self.node_id.clone(),
                    subject: wire::node_subject(message.from),
                    outbound: self.outbound.clone(),
                    max_payload: Arc::clone(&self.max_payload),
                }));
                match self.local.connect_sink(
                    &body.user_id,
                    &body.extension_id,
                    sink,
                    connection_id.to_owned(),
                ) {
                    Ok(_) => {
                        // A node can connect before its first heartbeat reached this one;
                        // it must be known here to be expired should it die.
                        self.view
                            .lock()
                            .unwrap()
                            .entry(message.from.to_owned())
                            .or_insert_with(|| NodeView::new(String::new(), Vec::new()));
                        self.inbound
                            .insert(connection_id.to_owned(), message.from.to_owned());
                        self.presence_changed.notify_one();
                    }
                    Err(_) => {
                        // The extension left between the client node's look-up and now.
                        let notice = protocol::disconnected(
                            connection_id,
                            &body.extension_id,
                            None,
                            "Extension not found on its relay node",
                        );
                        self.publish(message.from, Kind::Frame, connection_id, &notice);
                    }
                }
            }
            Kind::Request => {
                let Ok(Incoming::Request(call)) = frame::parse(message.body) else {
                    return;
                };
                let id = call.id.expect("a request has an id");
                if let Err(error) =
                    self.local
                        .forward_request(connection_id, id, &call.method, call.params)
                {
                    self.metrics.error(error.code());
                    let answer = error.response(id.get());
                    self.publish(message.from, Kind::Frame, connection_id, &answer);
                }
            }
            Kind::Notify => {
                if let Ok(Incoming::Notification(call)) = frame::parse(message.body) {
                    let _ =
                        self.local
                            .forward_notification(connection_id, &call.method, call.params);
                }
            }
            Kind::End => {
                self.inbound.remove(connection_id);
                self.local.end_unanswered(connection_id, message.body);
                self.presence_changed.notify_one();
            }
            Kind::Frame => self.deliver_remote_frame(connection_id, message.body),
        }
    }

    /// A frame from an extension's node for an MCP client here.
    fn deliver_remote_frame(&self, connection_id: &str, body: &str) {
        let Some(conn) = self.remote_connection(connection_id) else {
            return; // the connection ended here first; its requests were answered then
        };
        match frame::parse(body) {
            Ok(Incoming::Response(reply)) => {
                if conn.take_outstanding(reply.id.get()) {
                    conn.peer.send(body.to_owned());
                } else {
                    // Answered here already (timeout); exactly one answer per request.
                    self.metrics.unknown_responses.fetch_add(1, Relaxed);
                }
            }
            Ok(Incoming::Notification(call)) if call.method == "disconnected" => {
                conn.peer.send(body.to_owned());
                self.end_remote(connection_id, Some(RelayError::ExtensionLeft), None, true);
            }
            _ => {
                conn.peer.send(body.to_owned());
            }
        }
    }

    /// Where an extension not held here lives, if its owner may see it.
    fn find_remote(&self, user_id: &str, extension_id: &str) -> Option<(String, PresenceEntry)> {
        let view = self.view.lock().unwrap();
        view.iter().find_map(|(node, v)| {
            v.of_user(user_id)
                .find(|e| e.id == extension_id)
                .map(|e| (node.clone(), e.clone()))
        })
    }
}

impl Hub for ClusterHub {
    fn register_mcp(&self, user_id: &str) -> Result<(), RelayError> {
        self.local.register_mcp(user_id)
    }

    fn unregister_mcp(&self, user_id: &str) {
        self.local.unregister_mcp(user_id)
    }

    fn register_extension(&self, auth: &ExtensionAuth, peer: &Peer) -> Result<String, RelayError> {
        let extension_id = self.local.register_extension(auth, peer)?;
        self.presence_changed.notify_one();
        let waiting = self.former_remote.take(&extension_id);
        if !waiting.is_empty() {
            let name = crate::hub::truncate_utf8(&auth.name, self.limits.max_name_bytes);
            let notice = protocol::connected(&extension_id, name);
            for mcp in waiting {
                mcp.send(notice.clone());
            }
        }
        Ok(extension_id)
    }

    fn register_idle_duplicate(
        &self,
        auth: &ExtensionAuth,
        peer: &Peer,
    ) -> Result<String, RelayError> {
        // Its identity is already live on this node (the socket it was found through is here),
        // so presence only changes if that socket went away in between.
        let extension_id = self.local.register_idle_duplicate(auth, peer)?;
        self.presence_changed.notify_one();
        Ok(extension_id)
    }

    fn extension_socket_closed(&self, extension_id: &str, peer: &Peer, reason: &str) {
        self.local
            .extension_socket_closed(extension_id, peer, reason);
        if !self.local.holds_extension(extension_id) {
            self.inbound
                .retain(|connection_id, _| self.local.is_connected(connection_id));
        }
        self.presence_changed.notify_one();
    }

    fn list_extensions(&self, user_id: &str) -> Vec<ExtensionInfo> {
        let mut list = self.local.list_extensions(user_id);
        {
            let view = self.view.lock().unwrap();
            for entry in view.values().flat_map(|v| v.of_user(user_id)) {
                if !list.iter().any(|e| e.id == entry.id) {
                    list.push(ExtensionInfo {
                        id: entry.id.clone(),
                        name: entry.name.clone(),
                        connected: true,
                        version: entry.version.clone(),
                    });
                }
            }
        }
        list.sort_by(|a, b| a.name.cmp(&b.name).then(a.id.cmp(&b.id)));
        list
    }

    fn connect(&self, client: &McpClient, extension_id: &str) -> Result<ConnectInfo, RelayError> {
        if self.local.holds_extension(extension_id) {
            return self.local.connect(client, extension_id);
        }
        let (node, entry) = self
            .find_remote(&client.user_id, extension_id)
            .ok_or(RelayError::ExtensionNotFound)?;
        // Answered without waiting for the owner node (the hub is synchronous). Should the
        // extension have left meanwhile, the owner answers `connect` with `disconnected`.
        let connection_id = new_connection_id();
        self.remote.insert(
            connection_id.clone(),
            Arc::new(RemoteConnection {
                id: connection_id.clone(),
                node: node.clone(),
                extension_id: extension_id.to_owned(),
                extension_name: entry.name.clone(),
                user_id: client.user_id.clone(),
                peer: client.peer.clone(),
                outstanding: Mutex::new(Vec::new()),
                outstanding_bytes: AtomicUsize::new(0),
            }),
        );
        let body = serde_json::to_string(&ConnectBody {
            user_id: client.user_id.clone(),
            extension_id: extension_id.to_owned(),
        })
        .expect("serializable");
        self.publish(&node, Kind::Connect, &connection_id, &body);
        Ok(ConnectInfo {
            connection_id,
            extension_id: extension_id.to_owned(),
            extension_name: entry.name,
            peer_count: entry.connections + 1,
        })
    }

    fn disconnect(&self, connection_id: &str, cause: EndCause) {
        let Some(conn) = self.remote_connection(connection_id) else {
            return self.local.disconnect(connection_id, cause);
        };
        let (answer, cancel_reason) = cause.replies();
        self.end_remote(connection_id, Some(answer), None, false);
        self.publish(&conn.node, Kind::End, connection_id, cancel_reason);
    }

    fn mcp_closed(&self, connection_id: &str) {
        let Some(conn) = self.remote_connection(connection_id) else {
            return self.local.mcp_closed(connection_id);
        };
        self.end_remote(connection_id, None, None, false);
        self.publish(&conn.node, Kind::End, connection_id, "MCP client went away");
    }

    fn is_connected(&self, connection_id: &str) -> bool {
        self.remote.contains_key(connection_id) || self.local.is_connected(connection_id)
    }

    fn forward_request(
        &self,
        connection_id: &str,
        id: &RawValue,
        method: &str,
        params: Option<&RawValue>,
    ) -> Result<(), RelayError> {
        let Some(conn) = self.remote_connection(connection_id) else {
            return self
                .local
                .forward_request(connection_id, id, method, params);
        };
        self.limits.check_id(id)?;
        let request = frame::request(id.get(), method, params);
        let limit = self.max_payload.load(Relaxed);
        if request.len() + ENVELOPE_OVERHEAD > limit {
            return Err(RelayError::TooLargeForCluster(limit));
        }
        {
            let mut outstanding = conn.outstanding.lock().unwrap();
            let cost = outstanding_cost(id.get());
            let max = self.limits.max_pending_bytes;
            if !outstanding.is_empty() && conn.outstanding_bytes.load(Relaxed) + cost > max {
                return Err(RelayError::TooManyPending(max));
            }
            conn.outstanding_bytes.fetch_add(cost, Relaxed);
            outstanding.push((id.get().into(), Instant::now()));
        }
        self.publish(&conn.node, Kind::Request, connection_id, &request);
        Ok(())
    }

    fn forward_notification(
        &self,
        connection_id: &str,
        method: &str,
        params: Option<&RawValue>,
    ) -> Result<(), RelayError> {
        let Some(conn) = self.remote_connection(connection_id) else {
            return self
                .local
                .forward_notification(connection_id, method, params);
        };
        let notification = frame::notification_raw(method, params);
        self.publish(&conn.node, Kind::Notify, connection_id, &notification);
        Ok(())
    }

    fn deliver_response(&self, extension_id: &str, reply: &Reply<'_>) -> bool {
        self.local.deliver_response(extension_id, reply)
    }

    fn extension_notification(&self, extension_id: &str, target: Option<&str>, frame: String) {
        self.local
            .extension_notification(extension_id, target, frame)
    }

    fn expire_requests(&self, now: Instant) {
        self.local.expire_requests(now);
        // The owner node times requests out and answers; this is the fallback for when its
        // answer cannot arrive (NATS down), a little later so the owner's normally wins.
        let timeout = self.limits.request_timeout + self.node_ttl;
        let answer = RelayError::RequestTimedOut(self.limits.request_timeout);
        let conns: Vec<Arc<RemoteConnection>> =
            self.remote.iter().map(|c| Arc::clone(&c)).collect();
        for conn in conns {
            let expired: Vec<Box<str>> = {
                let mut outstanding = conn.outstanding.lock().unwrap();
                let (old, young): (Vec<_>, Vec<_>) = outstanding
                    .drain(..)
                    .partition(|(_, started)| now.duration_since(*started) >= timeout);
                *outstanding = young;
                let freed: usize = old.iter().map(|(id, _)| outstanding_cost(id)).sum();
                conn.outstanding_bytes.fetch_sub(freed, Relaxed);
                old.into_iter().map(|(id, _)| id).collect()
            };
            for id in expired {
                self.metrics.timeouts.fetch_add(1, Relaxed);
                self.metrics.error(answer.code());
                conn.peer.send(answer.response(&id));
            }
        }
    }

    fn shutdown(&self) {
        self.leaving.store(true, Relaxed);
        self.local.shutdown();
        let ids: Vec<(String, String)> = self
            .remote
            .iter()
            .map(|c| (c.key().clone(), c.node.clone()))
            .collect();
        for (connection_id, node) in ids {
            self.end_remote(&connection_id, Some(RelayError::ShuttingDown), None, false);
            self.publish(&node, Kind::End, &connection_id, "relay shutting down");
        }
        let _ = self.outbound.send(Outbound::Presence { leaving: true });
    }
}

/// Hands queued messages to NATS in order. While NATS is unreachable they are dropped: the
/// other nodes expire this one meanwhile, and every request is answered by the fallbacks.
async fn publish_loop(
    hub: Arc<ClusterHub>,
    client: async_nats::Client,
    mut queue: mpsc::UnboundedReceiver<Outbound>,
) {
    while let Some(item) = queue.recv().await {
        let (subject, payload) = match item {
            Outbound::Publish { subject, payload } => (subject, payload),
            Outbound::Presence { leaving } => {
                let leaving = leaving || hub.leaving.load(Relaxed);
                let presence = Presence {
                    node: hub.node_id.clone(),
                    incarnation: hub.incarnation.clone(),
                    leaving,
                    extensions: if leaving {
                        Vec::new()
                    } else {
                        hub.local.presence()
                    },
                };
                let payload = serde_json::to_vec(&presence).expect("serializable");
                (wire::PRESENCE_SUBJECT.to_owned(), payload.into())
            }
            Outbound::Flush(done) => {
                let _ = tokio::time::timeout(Duration::from_secs(1), client.flush()).await;
                let _ = done.send(());
                continue;
            }
        };
        if !hub.is_connected() {
            continue;
        }
        if let Err(error) = client.publish(subject, payload).await {
            tracing::warn!(%error, "cluster: publish failed");
        }
    }
}

/// Handles presence and this node's messages. Presence first when both are waiting: see
/// [`ClusterHub::on_presence`].
async fn receive_loop(
    hub: Arc<ClusterHub>,
    mut presence: async_nats::Subscriber,
    mut inbox: async_nats::Subscriber,
) {
    loop {
        tokio::select! {
            biased;
            Some(message) = presence.next() => hub.on_presence(&message.payload),
            Some(message) = inbox.next() => hub.on_node_message(&message.payload),
            else => break,
        }
    }
}

/// Publishes presence every `period`, at once when it changed, and after a reconnect.
async fn heartbeat_loop(
    hub: Arc<ClusterHub>,
    client: async_nats::Client,
    reconnected: Arc<Notify>,
    period: Duration,
) {
    let mut tick = tokio::time::interval(period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = hub.presence_changed.notified() => {}
            _ = reconnected.notified() => {
                if let Some(info) = client.try_server_info() {
                    if info.max_payload > 0 {
                        hub.max_payload.store(info.max_payload, Relaxed);
                    }
                }
            }
        }
        if hub
            .outbound
            .send(Outbound::Presence { leaving: false })
            .is_err()
        {
            break;
        }
    }
}

/// Expires silent nodes a few times per TTL.
async fn expiry_loop(hub: Arc<ClusterHub>) {
    let mut tick = tokio::time::interval(
        (hub.node_ttl / 6).clamp(Duration::from_millis(50), Duration::from_millis(500)),
    );
    loop {
        tick.tick().await;
        hub.expire_nodes(Instant::now());
    }
}
