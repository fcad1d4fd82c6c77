//! Several relay nodes behind one address, joined through NATS (`--cluster`): presence and
//! transport. Routing stays in the hub, which owns a [`Cluster`] when clustered; a connection
//! whose client or extension is on another node is an ordinary hub connection with that end
//! marked remote. This module knows nothing of connections. It adds, as described in
//! `docs/CLUSTER.md`:
//!
//! - **Presence.** Each node publishes the extensions it holds every `--cluster-heartbeat`
//!   and at once when that changes. A node not heard from for `--cluster-node-ttl` is dead.
//!   `NodeView`s keep a per-user index of each live node's presence, so listing and finding a
//!   user's remote extensions costs O(nodes + that user's browsers).
//! - **Transport.** Node messages ([`wire`]) go out through one ordered queue drained by a
//!   publisher task (so the hub's methods stay synchronous), and come in through one receive
//!   loop that hands each kind of message to its handler (`Cluster::on_node_message`).
//! - **Faults.** When a node's presence expires or says `leaving`, or a node restarts, the hub
//!   is told ([`Routing::node_gone`]) and ends that node's connections; when an extension shows
//!   up in any node's presence, clients waiting for it are told ([`Routing::extension_seen`]).
//!
//! Module edges: the cluster never imports the hub. What it needs from the hub is the
//! [`Routing`] trait below, which the hub implements; the hub calls the cluster's publishing
//! methods directly. So the dependency goes one way, hub → cluster.

pub(crate) mod nats;
pub mod operator;
pub mod wire;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::StreamExt;
use serde_json::value::RawValue;
use tokio::sync::{mpsc, oneshot, Notify};
use tokio::task::JoinHandle;

use crate::config::ServeConfig;
use crate::frame::{self, Call, Incoming};
use crate::metrics::Sampled;
use crate::protocol::{self, RelayError};
pub use operator::{AdminAnswer, AdminQuestion, AskingCaller, NodeOperator, Revocation};
use wire::{ConnectBody, Envelope, Kind, Presence, PresenceEntry};

/// NATS's default `max_payload`, assumed until the server tells its own.
const DEFAULT_MAX_PAYLOAD: usize = 1 << 20;
/// Room for the envelope's first line on top of a frame.
const ENVELOPE_OVERHEAD: usize = 256;

/// What the cluster's receive loop asks of the hub, one method per kind of event. Implemented
/// by `crate::routing::hub::Hub`; see the module documentation for why it is a trait.
pub trait Routing: Send + Sync + 'static {
    /// The extensions this node holds, for its heartbeat.
    fn presence(&self) -> Vec<PresenceEntry>;
    /// `extension_id` is listed by another node: clients waiting for it are told `connected`.
    fn extension_seen(&self, extension_id: &str, name: &str);
    /// `node` is gone (expired, left, restarted): its connections end, `reason` says why.
    fn node_gone(&self, node: &str, reason: &str);
    /// `connect`: a client on the sending node connects to an extension held here.
    fn open_from(&self, message: &Envelope<'_>, body: &ConnectBody) -> Result<(), RelayError>;
    /// `request`: a remote client's request to an extension here; an error is for the client.
    fn request_from(&self, connection_id: &str, call: &Call<'_>) -> Result<(), RelayError>;
    /// `notify`: a remote client's notification to an extension here.
    fn notification_from(&self, connection_id: &str, method: &str, params: Option<&RawValue>);
    /// `end`: a remote client's node ended the connection, for `reason`.
    fn end_from(&self, connection_id: &str, reason: &str);
    /// `frame`: an answer or notification from an extension's node for a client here.
    fn frame_for_client(&self, connection_id: &str, body: &str);
}

/// How long [`Cluster::ask_others`] waits for each node's answer.
pub const ASK_TIMEOUT: Duration = Duration::from_secs(2);

/// What the publisher task sends, in this order.
#[derive(Debug)]
pub(crate) enum Outbound {
    Publish {
        subject: String,
        payload: Bytes,
    },
    /// A presence heartbeat, built when it is sent so it is never older than the frames
    /// published before it (see [`Cluster::on_presence`]).
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
    /// anyway) so that listing and connecting never scan other users' browsers.
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

/// What [`Cluster::run`] starts the tasks with: the NATS side made by [`Cluster::connect`].
struct Startup {
    client: async_nats::Client,
    presence: async_nats::Subscriber,
    inbox: async_nats::Subscriber,
    admin: async_nats::Subscriber,
    outbound: mpsc::UnboundedReceiver<Outbound>,
    reconnected: Arc<Notify>,
    heartbeat: Duration,
}

/// This node's membership of the cluster. See the module documentation.
pub struct Cluster {
    node_id: String,
    /// Random per process; see [`Presence::incarnation`].
    incarnation: String,
    /// Every message to NATS goes through this one queue, which keeps them in order.
    outbound: mpsc::UnboundedSender<Outbound>,
    /// The other live nodes and what they hold.
    view: Mutex<HashMap<String, NodeView>>,
    /// Whether NATS is reachable right now, for `/healthz` and `/metrics`.
    connected: Arc<AtomicBool>,
    /// The server's `max_payload`, which bounds one frame between nodes.
    max_payload: Arc<AtomicUsize>,
    /// Wakes the heartbeat task to publish presence now (an extension came or went).
    presence_changed: Notify,
    /// Set when the relay shuts down: every later heartbeat says `leaving`, so sockets closing
    /// during the shutdown do not make this node look alive again.
    leaving: AtomicBool,
    node_ttl: Duration,
    /// Taken by [`Cluster::run`].
    startup: Mutex<Option<Startup>>,
    /// The NATS client and the cluster's tasks, dropped and aborted by [`Cluster::kill`].
    client: Mutex<Option<async_nats::Client>>,
    tasks: Mutex<Vec<JoinHandle<()>>>,
    /// The operator's wing, registered once when the relay is built (weak: the wing holds the
    /// relay state, which holds the hub, which holds this cluster).
    operator: std::sync::OnceLock<std::sync::Weak<dyn NodeOperator>>,
}

impl Cluster {
    /// Connects to NATS (in the background) and subscribes; [`Cluster::run`] starts presence,
    /// routing and expiry once the hub that routes exists.
    pub async fn connect(config: &ServeConfig, url: &str) -> anyhow::Result<Arc<Cluster>> {
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
            nats::Purpose::Cluster,
            Arc::clone(&connected),
            Arc::clone(&reconnected),
        )
        .await?;
        let presence = client.subscribe(wire::PRESENCE_SUBJECT).await?;
        let inbox = client.subscribe(wire::node_subject(&node_id)).await?;
        let admin = client.subscribe(wire::admin_subject(&node_id)).await?;
        let (outbound, outbound_rx) = mpsc::unbounded_channel();
        let cluster = Cluster::new(
            node_id,
            outbound,
            connected,
            config.cluster_options.node_ttl,
        );
        *cluster.client.lock().unwrap() = Some(client.clone());
        *cluster.startup.lock().unwrap() = Some(Startup {
            client,
            presence,
            inbox,
            admin,
            outbound: outbound_rx,
            reconnected,
            heartbeat: config.cluster_options.heartbeat,
        });
        tracing::info!(node = %cluster.node_id, nats = %url, "cluster: node started");
        Ok(Arc::new(cluster))
    }

    fn new(
        node_id: String,
        outbound: mpsc::UnboundedSender<Outbound>,
        connected: Arc<AtomicBool>,
        node_ttl: Duration,
    ) -> Self {
        Cluster {
            node_id,
            incarnation: uuid::Uuid::new_v4().simple().to_string(),
            outbound,
            view: Mutex::new(HashMap::new()),
            connected,
            max_payload: Arc::new(AtomicUsize::new(DEFAULT_MAX_PAYLOAD)),
            presence_changed: Notify::new(),
            leaving: AtomicBool::new(false),
            node_ttl,
            startup: Mutex::new(None),
            client: Mutex::new(None),
            tasks: Mutex::new(Vec::new()),
            operator: std::sync::OnceLock::new(),
        }
    }

    /// A node without NATS, and what it would publish: for unit tests of the handlers.
    #[cfg(test)]
    pub(crate) fn detached(
        node_id: &str,
        node_ttl: Duration,
    ) -> (Arc<Cluster>, mpsc::UnboundedReceiver<Outbound>) {
        let (outbound, rx) = mpsc::unbounded_channel();
        let connected = Arc::new(AtomicBool::new(true));
        let cluster = Cluster::new(node_id.to_owned(), outbound, connected, node_ttl);
        (Arc::new(cluster), rx)
    }

    /// Starts publishing, receiving, heartbeats and node expiry, routing through `routing`.
    /// Does nothing a second time, or for a detached cluster.
    pub fn run(self: &Arc<Self>, routing: Arc<dyn Routing>) {
        let Some(startup) = self.startup.lock().unwrap().take() else {
            return;
        };
        let tasks = vec![
            tokio::spawn(publish_loop(
                Arc::clone(self),
                Arc::clone(&routing),
                startup.client.clone(),
                startup.outbound,
            )),
            tokio::spawn(receive_loop(
                Arc::clone(self),
                Arc::clone(&routing),
                startup.presence,
                startup.inbox,
            )),
            tokio::spawn(admin_loop(
                Arc::clone(self),
                startup.client.clone(),
                startup.admin,
            )),
            tokio::spawn(heartbeat_loop(
                Arc::clone(self),
                startup.client,
                startup.reconnected,
                startup.heartbeat,
            )),
            tokio::spawn(expiry_loop(Arc::clone(self), routing)),
        ];
        *self.tasks.lock().unwrap() = tasks;
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

    /// How long a silent node is still believed alive.
    pub fn node_ttl(&self) -> Duration {
        self.node_ttl
    }

    /// The cluster's series for `/metrics`. `remote_connections` is counted by the hub, which
    /// holds the connections.
    pub fn sample_metrics(&self, remote_connections: usize, out: &mut Sampled) {
        out.gauge(
            "mcp_relay_cluster_connected",
            "1 while the NATS connection is up.",
            u64::from(self.is_connected()),
        )
        .gauge(
            "mcp_relay_cluster_nodes",
            "Other relay nodes currently alive.",
            self.live_nodes() as u64,
        )
        .gauge(
            "mcp_relay_cluster_remote_connections",
            "MCP clients here connected to extensions on other nodes.",
            remote_connections as u64,
        );
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

    /// Publish presence now rather than at the next heartbeat.
    pub fn presence_changed(&self) {
        self.presence_changed.notify_one();
    }

    /// From now on, presence says this node is leaving.
    pub fn set_leaving(&self) {
        self.leaving.store(true, Relaxed);
    }

    /// Queues the last heartbeat, which tells the other nodes to end this node's connections.
    pub fn publish_leaving(&self) {
        let _ = self.outbound.send(Outbound::Presence { leaving: true });
    }

    fn publish(&self, node: &str, kind: Kind, connection_id: &str, body: &str) {
        let _ = self.outbound.send(Outbound::Publish {
            subject: wire::node_subject(node),
            payload: wire::envelope(kind, connection_id, &self.node_id, body),
        });
    }

    /// Refuses a request too large for NATS to carry to another node.
    pub fn check_size(&self, request_bytes: usize) -> Result<(), RelayError> {
        let limit = self.max_payload.load(Relaxed);
        if request_bytes + ENVELOPE_OVERHEAD > limit {
            return Err(RelayError::TooLargeForCluster(limit));
        }
        Ok(())
    }

    /// Asks `node` to connect a client here to its extension.
    pub fn open(&self, node: &str, connection_id: &str, who: &ConnectBody) {
        let body = serde_json::to_string(who).expect("serializable");
        self.publish(node, Kind::Connect, connection_id, &body);
    }

    /// Registers the operator's wing, which applies other nodes' revocations and answers their
    /// admin questions. Once: a second registration is ignored.
    pub fn register_operator(&self, operator: std::sync::Weak<dyn NodeOperator>) {
        let _ = self.operator.set(operator);
    }

    fn operator(&self) -> Option<Arc<dyn NodeOperator>> {
        self.operator.get().and_then(std::sync::Weak::upgrade)
    }

    /// Asks every other live node `question` and returns the answers that came within
    /// [`ASK_TIMEOUT`] (a node that is slow, or died since its last heartbeat, is left out;
    /// so is an answer this node cannot read).
    pub async fn ask_others(&self, question: &AdminQuestion) -> Vec<AdminAnswer> {
        let Some(client) = self.client.lock().unwrap().clone() else {
            return Vec::new();
        };
        let question = Bytes::from(serde_json::to_vec(question).expect("serializable"));
        let nodes: Vec<String> = self.view.lock().unwrap().keys().cloned().collect();
        let asks = nodes
            .into_iter()
            .filter(|node| *node != self.node_id)
            .map(|node| {
                let client = client.clone();
                let question = question.clone();
                async move {
                    let asked = client.request(wire::admin_subject(&node), question);
                    match tokio::time::timeout(ASK_TIMEOUT, asked).await {
                        Ok(Ok(answer)) => serde_json::from_slice(&answer.payload).ok(),
                        _ => {
                            tracing::warn!(
                                node,
                                "cluster: a node did not answer an admin question"
                            );
                            None
                        }
                    }
                }
            });
        futures_util::future::join_all(asks)
            .await
            .into_iter()
            .flatten()
            .collect()
    }

    /// Tells every other live node about a revocation, so their sockets holding the revoked
    /// token or browser close too and the token is refused there.
    pub fn revoke(&self, revocation: &Revocation) {
        let body = serde_json::to_string(revocation).expect("serializable");
        let nodes: Vec<String> = self.view.lock().unwrap().keys().cloned().collect();
        for node in nodes {
            if node != self.node_id {
                self.publish(&node, Kind::Revoke, "-", &body);
            }
        }
    }

    /// A client's request for the extension on `node`.
    pub fn request(&self, node: &str, connection_id: &str, request: &str) {
        self.publish(node, Kind::Request, connection_id, request);
    }

    /// A client's notification for the extension on `node`.
    pub fn notify(&self, node: &str, connection_id: &str, notification: &str) {
        self.publish(node, Kind::Notify, connection_id, notification);
    }

    /// Tells the extension's `node` that the connection ended on the client's side.
    pub fn end(&self, node: &str, connection_id: &str, reason: &str) {
        self.publish(node, Kind::End, connection_id, reason);
    }

    /// A frame for a client on `node`. NATS refuses messages over its `max_payload`: an answer
    /// still has to reach its requester, so a too-large one becomes an error that says what to
    /// change; a too-large notification is dropped and logged.
    pub fn frame(&self, node: &str, connection_id: &str, frame: &str) {
        let limit = self.max_payload.load(Relaxed);
        if frame.len() + ENVELOPE_OVERHEAD <= limit {
            return self.publish(node, Kind::Frame, connection_id, frame);
        }
        let Ok(Incoming::Response(reply)) = frame::parse(frame) else {
            tracing::warn!(
                bytes = frame.len(),
                limit,
                "cluster: notification larger than NATS max_payload dropped"
            );
            return;
        };
        let error = RelayError::AnswerTooLargeForCluster {
            size: frame.len(),
            limit,
        }
        .response(reply.id.get());
        self.publish(node, Kind::Frame, connection_id, &error);
    }

    /// Where an extension not held here lives, if its owner may see it.
    pub fn find_extension(
        &self,
        user_id: &str,
        extension_id: &str,
    ) -> Option<(String, PresenceEntry)> {
        let view = self.view.lock().unwrap();
        view.iter().find_map(|(node, v)| {
            v.of_user(user_id)
                .find(|e| e.id == extension_id)
                .map(|e| (node.clone(), e.clone()))
        })
    }

    /// The user's extensions on the other live nodes.
    pub fn extensions_of(&self, user_id: &str) -> Vec<PresenceEntry> {
        let view = self.view.lock().unwrap();
        view.values()
            .flat_map(|v| v.of_user(user_id))
            .cloned()
            .collect()
    }

    /// A node is gone (expired, said goodbye, restarted): its extensions vanish from the view
    /// and the hub ends its connections.
    fn node_gone(&self, routing: &dyn Routing, node: &str, reason: &str) {
        self.view.lock().unwrap().remove(node);
        tracing::warn!(node, reason, "cluster: node gone");
        routing.node_gone(node, reason);
    }

    /// Expires nodes not heard from within the TTL.
    pub(crate) fn expire_nodes(&self, routing: &dyn Routing, now: Instant) {
        let dead: Vec<String> = self
            .view
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, v)| now.duration_since(v.last_seen) > self.node_ttl)
            .map(|(node, _)| node.clone())
            .collect();
        for node in dead {
            self.node_gone(
                routing,
                &node,
                "the extension's relay node stopped responding",
            );
        }
    }

    /// A heartbeat from another node.
    ///
    /// Why a `connected` notice can be sent as soon as an extension is in a heartbeat: a node
    /// publishes presence and frames from one ordered queue and builds each heartbeat when it
    /// is its turn, so a heartbeat that arrives after the `disconnected` for an extension was
    /// built after the extension left; if it lists the extension, the extension is back.
    /// `receive_loop` handles heartbeats before node messages that arrived with them.
    pub(crate) fn on_presence(&self, routing: &dyn Routing, payload: &[u8]) {
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
            self.node_gone(
                routing,
                &presence.node,
                "the extension's relay node shut down",
            );
            return;
        }
        let restarted = self
            .view
            .lock()
            .unwrap()
            .get(&presence.node)
            .is_some_and(|v| !v.incarnation.is_empty() && v.incarnation != presence.incarnation);
        if restarted {
            self.node_gone(
                routing,
                &presence.node,
                "the extension's relay node restarted",
            );
        }
        for entry in &presence.extensions {
            routing.extension_seen(&entry.id, &entry.name);
        }
        self.view.lock().unwrap().insert(
            presence.node,
            NodeView::new(presence.incarnation, presence.extensions),
        );
    }

    /// A message on this node's subject, handed to the handler of its kind.
    pub(crate) fn on_node_message(&self, routing: &dyn Routing, payload: &[u8]) {
        let Some(message) = wire::open(payload) else {
            tracing::warn!("cluster: malformed node message dropped");
            return;
        };
        match message.kind {
            Kind::Connect => self.on_connect(routing, &message),
            Kind::Request => self.on_request(routing, &message),
            Kind::Notify => on_notify(routing, &message),
            Kind::End => self.on_end(routing, &message),
            Kind::Frame => routing.frame_for_client(message.connection_id, message.body),
            Kind::Revoke => match serde_json::from_str::<Revocation>(message.body) {
                Ok(revocation) => {
                    if let Some(operator) = self.operator() {
                        operator.revoked(revocation);
                    }
                }
                Err(_) => tracing::warn!("cluster: malformed revocation dropped"),
            },
        }
    }

    /// `connect`: opens the connection here, or answers the client's node with `disconnected`
    /// when the extension left between that node's look-up and now.
    fn on_connect(&self, routing: &dyn Routing, message: &Envelope<'_>) {
        let Ok(body) = serde_json::from_str::<ConnectBody>(message.body) else {
            return;
        };
        let connection_id = message.connection_id;
        match routing.open_from(message, &body) {
            Ok(()) => {
                // A node can connect before its first heartbeat reached this one; it must be
                // known here to be expired should it die.
                self.view
                    .lock()
                    .unwrap()
                    .entry(message.from.to_owned())
                    .or_insert_with(|| NodeView::new(String::new(), Vec::new()));
                self.presence_changed();
            }
            Err(_) => {
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

    /// `request`: forwarded to the extension here; a refusal goes back as the answer.
    fn on_request(&self, routing: &dyn Routing, message: &Envelope<'_>) {
        let Ok(Incoming::Request(call)) = frame::parse(message.body) else {
            return;
        };
        let id = call.id.expect("a request has an id");
        let connection_id = message.connection_id;
        if let Err(error) = routing.request_from(connection_id, &call) {
            let answer = error.response(id.get());
            self.publish(message.from, Kind::Frame, connection_id, &answer);
        }
    }

    /// `end`: the client's node ended the connection.
    fn on_end(&self, routing: &dyn Routing, message: &Envelope<'_>) {
        routing.end_from(message.connection_id, message.body);
        self.presence_changed();
    }
}

/// `notify`: forwarded to the extension here; a notification has nobody to tell of a refusal.
fn on_notify(routing: &dyn Routing, message: &Envelope<'_>) {
    if let Ok(Incoming::Notification(call)) = frame::parse(message.body) {
        routing.notification_from(message.connection_id, &call.method, call.params);
    }
}

/// Answers other nodes' admin questions on this node's admin subject.
async fn admin_loop(
    cluster: Arc<Cluster>,
    client: async_nats::Client,
    mut questions: async_nats::Subscriber,
) {
    while let Some(message) = questions.next().await {
        let Some(reply) = message.reply else {
            continue;
        };
        let answer = match (
            cluster.operator(),
            serde_json::from_slice::<AdminQuestion>(&message.payload),
        ) {
            (Some(operator), Ok(question)) => operator.answer(question),
            _ => AdminAnswer::Unknown,
        };
        let answer = serde_json::to_vec(&answer).expect("serializable");
        if let Err(error) = client.publish(reply, answer.into()).await {
            tracing::warn!(%error, "cluster: answering an admin question failed");
        }
    }
}

/// Hands queued messages to NATS in order. While NATS is unreachable they are dropped: the
/// other nodes expire this one meanwhile, and every request is answered by the fallbacks.
async fn publish_loop(
    cluster: Arc<Cluster>,
    routing: Arc<dyn Routing>,
    client: async_nats::Client,
    mut queue: mpsc::UnboundedReceiver<Outbound>,
) {
    while let Some(item) = queue.recv().await {
        let (subject, payload) = match item {
            Outbound::Publish { subject, payload } => (subject, payload),
            Outbound::Presence { leaving } => {
                let leaving = leaving || cluster.leaving.load(Relaxed);
                let presence = Presence {
                    node: cluster.node_id.clone(),
                    incarnation: cluster.incarnation.clone(),
                    leaving,
                    extensions: if leaving {
                        Vec::new()
                    } else {
                        routing.presence()
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
        if !cluster.is_connected() {
            continue;
        }
        if let Err(error) = client.publish(subject, payload).await {
            tracing::warn!(%error, "cluster: publish failed");
        }
    }
}

/// Handles presence and this node's messages. Presence first when both are waiting: see
/// [`Cluster::on_presence`].
async fn receive_loop(
    cluster: Arc<Cluster>,
    routing: Arc<dyn Routing>,
    mut presence: async_nats::Subscriber,
    mut inbox: async_nats::Subscriber,
) {
    loop {
        tokio::select! {
            biased;
            Some(message) = presence.next() => cluster.on_presence(&*routing, &message.payload),
            Some(message) = inbox.next() => cluster.on_node_message(&*routing, &message.payload),
            else => break,
        }
    }
}

/// Publishes presence every `period`, at once when it changed, and after a reconnect.
async fn heartbeat_loop(
    cluster: Arc<Cluster>,
    client: async_nats::Client,
    reconnected: Arc<Notify>,
    period: Duration,
) {
    let mut tick = tokio::time::interval(period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = cluster.presence_changed.notified() => {}
            _ = reconnected.notified() => {
                if let Some(info) = client.try_server_info() {
                    if info.max_payload > 0 {
                        cluster.max_payload.store(info.max_payload, Relaxed);
                    }
                }
            }
        }
        if cluster
            .outbound
            .send(Outbound::Presence { leaving: false })
            .is_err()
        {
            break;
        }
    }
}

/// Expires silent nodes a few times per TTL.
async fn expiry_loop(cluster: Arc<Cluster>, routing: Arc<dyn Routing>) {
    let mut tick = tokio::time::interval(
        (cluster.node_ttl / 6).clamp(Duration::from_millis(50), Duration::from_millis(500)),
    );
    loop {
        tick.tick().await;
        cluster.expire_nodes(&*routing, Instant::now());
    }
}
