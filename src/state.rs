//! What every session shares: the configuration, the token verifier, the hub, metrics, the
//! task tracker and shutdown signal, and the `authenticate` requests waiting across extension
//! sockets.
//!
//! It lives apart from the listener so that the sessions can reach it without importing
//! [`crate::server`], which imports them: the edges go state ← sessions ← server and never
//! back. Like mini-redis's `Db`, it is plain shared data behind an `Arc`; it knows no session.

use std::collections::HashMap;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};

use axum::extract::ws::WebSocket;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::auth::{AuthError, Identity, Role, Verifier};
use crate::config::ServeConfig;
use crate::metrics::Metrics;
use crate::net::peer::{self, Peer, PeerReader, SocketConfig};
use crate::net::transport::{ConnHandle, ConnLimits, Registry};
use crate::routing::hub::{AuditTrail, ExtensionAuth, Hub};

/// Everything a session needs, shared by all of them.
pub struct RelayState {
    pub config: ServeConfig,
    /// Live extensions, connections and pending requests; every routing decision goes here.
    pub hub: Arc<Hub>,
    /// Checks the tokens of both roles, with the algorithm and claims `serve` pinned.
    pub verifier: Verifier,
    pub metrics: Arc<Metrics>,
    /// Queue bounds and keepalive every peer is opened with.
    pub socket: SocketConfig,
    /// Every session and writer task, so shutdown can wait for them.
    pub tracker: TaskTracker,
    /// Cancelled when shutdown begins; sessions then say goodbye and close with 1001.
    pub shutdown: CancellationToken,
    /// Sockets open right now, for `--max-connections`.
    pub(crate) open_sockets: Arc<AtomicUsize>,
    /// Extension sockets waiting for their answer to `authenticate`.
    pub(crate) pending_auths: PendingAuths,
    /// Every TCP connection, and the pending and unauthenticated pools.
    pub(crate) connections: Arc<Registry>,
    /// Approvals, revocations and the live sockets a revocation closes: the operator's
    /// `Access`, registered when the relay is built.
    pub gate: Arc<dyn Gate>,
    /// The audit trail, unless `--audit-retention 0`.
    pub audit: Option<Arc<dyn AuditTrail>>,
}

impl RelayState {
    /// The state `serve` runs with, around an already started hub (with its cluster link, if
    /// clustered).
    pub fn new(
        config: ServeConfig,
        verifier: Verifier,
        metrics: Arc<Metrics>,
        hub: Arc<Hub>,
        gate: Arc<dyn Gate>,
        audit: Option<Arc<dyn AuditTrail>>,
    ) -> RelayState {
        RelayState {
            gate,
            audit,
            socket: SocketConfig {
                ping_interval: config.ping_interval,
                send_timeout: config.send_timeout,
                max_queue_bytes: config.max_send_queue_bytes,
                max_unauthenticated_queue_bytes: config.max_unauthenticated_queue_bytes,
                total_queued: Arc::new(AtomicUsize::new(0)),
                max_total_queue_bytes: config.max_total_send_queue_bytes,
            },
            connections: Registry::new(conn_limits(&config)),
            config,
            hub,
            verifier,
            metrics,
            tracker: TaskTracker::new(),
            shutdown: CancellationToken::new(),
            open_sockets: Arc::new(AtomicUsize::new(0)),
            pending_auths: PendingAuths::default(),
        }
    }

    /// Opens the peer of an upgraded socket: its writer task runs on the tracker, and the
    /// reader stops at this relay's shutdown and message limit.
    pub(crate) fn open_peer(&self, socket: WebSocket, conn: ConnHandle) -> (Peer, PeerReader) {
        peer::open(
            socket,
            conn,
            &self.socket,
            Arc::clone(&self.metrics),
            &self.tracker,
            self.shutdown.clone(),
            self.config.max_message_bytes,
        )
    }
}

impl RelayState {
    /// Verifies `token` for a socket or session of `role` and refuses it if it was revoked
    /// (docs/ADMIN.md): every door the relay has asks both questions, here, so a new door
    /// cannot forget the second.
    pub fn verify(&self, token: &str, role: Role) -> Result<Identity, AuthError> {
        self.verifier
            .verify(token, role)
            .and_then(|identity| self.live(identity))
    }

    /// [`RelayState::verify`] whatever the token's role, for the admin API and the dashboard,
    /// which decide what each role may do; `needed` words the error for an unknown role.
    pub fn verify_any(&self, token: &str, needed: &'static str) -> Result<Identity, AuthError> {
        self.verifier
            .verify_any(token, needed)
            .and_then(|identity| self.live(identity))
    }

    fn live(&self, identity: Identity) -> Result<Identity, AuthError> {
        self.gate.check_token(&identity).map(|()| identity)
    }

    /// Opens an in-memory peer (see [`peer::open_in_memory`]) with this relay's bounds.
    pub(crate) fn open_in_memory_peer(&self) -> (Peer, PeerReader, peer::InMemoryEnds) {
        peer::open_in_memory(
            &self.socket,
            Arc::clone(&self.metrics),
            &self.tracker,
            self.shutdown.clone(),
            self.config.max_message_bytes,
        )
    }
}

/// What the sessions ask the operator's side about a token or a browser: a seam, so the core
/// never imports the operator's wing. `operator::access::Access` is the implementation the
/// relay registers when it is built; every method answers from memory and never blocks.
pub trait Gate: Send + Sync {
    /// Whether new browsers wait for an approval (`--require-approval`).
    fn require_approval(&self) -> bool;
    /// Refuses a token revoked by its `jti`, its browser or its user's cutoff.
    fn check_token(&self, identity: &Identity) -> Result<(), AuthError>;
    /// Whether this browser was revoked (its sockets are refused).
    fn browser_revoked(&self, extension_id: &str) -> bool;
    /// Whether this browser is approved.
    fn approved(&self, extension_id: &str) -> bool;
    /// Records a browser that just authenticated; returns whether it is approved.
    fn browser_seen(
        &self,
        extension_id: &str,
        user_id: &str,
        name: &str,
        version: Option<&str>,
    ) -> bool;
    /// Records that a browser's socket closed.
    fn browser_left(&self, extension_id: &str);
    /// Registers an authenticated socket, so a revocation can close it; dropping the guard
    /// forgets it.
    fn track(&self, peer: &Peer, identity: &Identity, extension_id: Option<&str>) -> LiveGuard;
    /// A repeated `mcp_handshake` with another token of the same user: the socket now holds it.
    fn retrack(&self, peer: &Peer, identity: &Identity);
}

/// Keeps a socket registered with the [`Gate`] while it lives.
pub struct LiveGuard(#[allow(dead_code)] Box<dyn Send + Sync>);

impl LiveGuard {
    /// Wraps whatever the gate forgets the socket by when dropped.
    pub fn new(forget_on_drop: impl Send + Sync + 'static) -> Self {
        LiveGuard(Box::new(forget_on_drop))
    }
}

/// The bounds on anonymous connections, from the configuration and the file-descriptor limit.
fn conn_limits(config: &ServeConfig) -> ConnLimits {
    let fd_budget = crate::net::limits::fd_limit()
        .map_or(usize::MAX, |limit| limit.saturating_sub(config.fd_reserve));
    ConnLimits {
        max_pending: config.max_pending_connections,
        // Anonymous sockets never get more than half of --max-connections: authenticated
        // clients always have the other half.
        max_unauthenticated: config
            .max_unauthenticated_connections
            .min((config.max_connections / 2).max(2)),
        unauthenticated_bytes: config.max_unauthenticated_bytes,
        header_timeout: config.header_timeout,
        fd_budget,
        max_message_bytes: config.max_message_bytes,
    }
}

/// An extension's verified answer to `authenticate`: what registering its socket needs.
#[derive(Clone)]
pub(crate) struct Authenticated {
    pub auth: ExtensionAuth,
    /// The verified token, for the revocation registry.
    pub identity: crate::auth::Identity,
    /// Time left until the token's `exp`; the socket closes then (plus the grace).
    pub expires_in: std::time::Duration,
}

/// The relay's `authenticate` requests still waiting for their answer, by request id, across
/// every extension socket of this relay.
///
/// Blueprint's extension opens two sockets about 20 ms apart and always sends on its newest
/// one, so the first socket's answer arrives on the second. Each socket's request therefore
/// has its own unguessable id, and an answer that arrives on another socket is handed to the
/// socket it was asked on: that one becomes an idle duplicate of the same browser instead of
/// timing out, and its close (which the extension takes for its own disconnect) never happens.
/// The ids are random because whoever knows one could attach that socket to their browser.
#[derive(Default)]
pub(crate) struct PendingAuths(Mutex<HashMap<String, oneshot::Sender<Authenticated>>>);

impl PendingAuths {
    pub fn insert(&self, id: String, adopt: oneshot::Sender<Authenticated>) {
        self.0.lock().unwrap().insert(id, adopt);
    }

    pub fn remove(&self, id: &str) -> Option<oneshot::Sender<Authenticated>> {
        self.0.lock().unwrap().remove(id)
    }

    pub fn contains(&self, id: &str) -> bool {
        self.0.lock().unwrap().contains_key(id)
    }

    /// Gives a verified answer to the socket waiting for `id`, if one still is.
    pub fn hand_over(&self, id: &str, answer: Authenticated) {
        if let Some(adopt) = self.remove(id) {
            let _ = adopt.send(answer);
        }
    }
}

/// A relay state around a local hub and no listener, for unit tests of what sessions leave in
/// the hub.
#[cfg(test)]
pub(crate) fn for_tests(config: ServeConfig) -> Arc<RelayState> {
    let metrics = Arc::new(Metrics::default());
    let hub = Hub::new(
        crate::routing::hub::HubLimits::from_config(&config),
        Arc::clone(&metrics),
        None,
    );
    Arc::new(RelayState::new(
        config,
        Verifier::hs256(b"unit-test-secret-0123456789"),
        metrics,
        Arc::new(hub),
        Arc::new(Arc::new(crate::operator::access::Access::in_memory(false))),
        None,
    ))
}
