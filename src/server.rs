//! The listener: HTTP routes (`/extension`, `/mcp`, `/healthz`, `/metrics`), TLS, the `Origin`
//! check and socket admission, the sweepers, and graceful shutdown.
//!
//! It is the only module that knows both sessions: it builds the shared [`RelayState`] and
//! hands each upgraded socket to an [`McpSession`] or an [`ExtensionSession`], which know the
//! state and never the listener.
//!
//! axum's graceful shutdown does not wait for upgraded WebSocket tasks, so every session and
//! writer task is spawned on a [`TaskTracker`](tokio_util::task::TaskTracker) and shutdown
//! waits on it explicitly (bounded by `--shutdown-grace`).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use axum::extract::ws::WebSocketUpgrade;
use axum::extract::{Extension, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use crate::auth::Verifier;
use crate::config::ServeConfig;
use crate::metrics::{Metrics, Sampled};
use crate::net::limits::SocketSlot;
use crate::net::transport::ConnHandle;
use crate::operator::Operator;
use crate::routing::cluster::Cluster;
use crate::routing::hub::AuditTrail;
use crate::routing::hub::{Hub, HubLimits};
use crate::session::extension::ExtensionSession;
use crate::session::mcp::McpSession;
pub use crate::state::RelayState;

/// A relay that is accepting connections.
pub struct RunningRelay {
    pub local_addr: SocketAddr,
    pub tls: bool,
    state: Arc<RelayState>,
    handle: axum_server::Handle<SocketAddr>,
    server: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl RunningRelay {
    /// `ws://` or `wss://` URL of an endpoint (`/extension` or `/mcp`).
    pub fn url(&self, path: &str) -> String {
        let scheme = if self.tls { "wss" } else { "ws" };
        format!("{scheme}://{}{path}", self.local_addr)
    }

    /// `http://` or `https://` URL of a path (the Streamable HTTP MCP endpoint is `/mcp`).
    pub fn http_url(&self, path: &str) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}{path}", self.local_addr)
    }

    pub fn metrics(&self) -> Arc<Metrics> {
        Arc::clone(&self.state.metrics)
    }

    /// Stops accepting, answers pending requests, tells peers, closes sockets with 1001, and
    /// waits (at most `--shutdown-grace`) for every task to finish.
    pub async fn shutdown(self) {
        let grace = self.state.config.shutdown_grace;
        self.handle.graceful_shutdown(Some(grace));
        self.state.hub.shutdown();
        self.state.shutdown.cancel();
        self.state.tracker.close();
        if tokio::time::timeout(grace, self.state.tracker.wait())
            .await
            .is_err()
        {
            tracing::warn!("some sockets did not close within the shutdown grace period");
        }
        if let Some(cluster) = self.state.hub.cluster() {
            cluster.flush().await;
            cluster.kill();
        }
        let _ = tokio::time::timeout(Duration::from_secs(1), self.server).await;
    }

    /// The cluster node, when started with `--cluster`.
    pub fn cluster(&self) -> Option<Arc<Cluster>> {
        self.state.hub.cluster().cloned()
    }

    /// Stops at once, as a crash would for the rest of the cluster: the cluster tasks and the
    /// NATS connection go without a goodbye, pending requests are not answered, and sockets
    /// are dropped. For fault-injection tests of a node dying mid-request.
    pub async fn kill(self) {
        if let Some(cluster) = self.state.hub.cluster() {
            cluster.kill();
        }
        self.server.abort();
        self.handle.shutdown();
        self.state.shutdown.cancel();
        self.state.tracker.close();
        let _ = tokio::time::timeout(Duration::from_secs(2), self.state.tracker.wait()).await;
    }
}

/// Builds the verifier the configuration asks for (loading a `--jwt-jwks` set first, so a
/// source that cannot be read stops start-up).
async fn verifier(config: &ServeConfig) -> anyhow::Result<Verifier> {
    let mut verifier = match (&config.jwt_public_key, &config.jwt_secret) {
        _ if config.jwt_jwks.is_some() => {
            let text = config.jwt_jwks.as_deref().unwrap_or_default();
            let source = crate::auth::jwks::JwksSource::parse(text)?;
            let jwks =
                crate::auth::jwks::Jwks::load(source, config.jwt_alg, config.jwt_jwks_ca.clone())
                    .await
                    .with_context(|| format!("loading --jwt-jwks {text}"))?;
            Verifier::from_jwks(jwks)
        }
        (Some(path), _) => {
            let alg = config.jwt_alg.ok_or_else(|| {
                anyhow::anyhow!(
                    "--jwt-public-key needs --jwt-alg (RS256, ES256 or EdDSA): a PEM key does \
                     not say which algorithm it signs with"
                )
            })?;
            let pem = std::fs::read(path)
                .with_context(|| format!("reading JWT public key {}", path.display()))?;
            Verifier::from_public_pem(alg, &pem)
                .with_context(|| format!("loading JWT public key {}", path.display()))?
        }
        (None, Some(secret)) => {
            let alg = config.jwt_alg.unwrap_or(crate::auth::JwtAlgorithm::Hs256);
            anyhow::ensure!(
                alg == crate::auth::JwtAlgorithm::Hs256,
                "--jwt-secret is for HS256; for {} give --jwt-public-key or --jwt-jwks",
                alg.name()
            );
            anyhow::ensure!(
                secret.len() >= 16,
                "the JWT secret is too short: use at least 16 characters (32 random bytes is better)"
            );
            Verifier::hs256(secret.as_bytes())
        }
        (None, None) => anyhow::bail!(
            "no JWT key configured: set MCP_RELAY_JWT_SECRET (HS256), or --jwt-public-key with \
             --jwt-alg, or --jwt-jwks, or run `mcp-relay serve --dev` to try it out"
        ),
    };
    if let Some(issuer) = &config.jwt_issuer {
        verifier = verifier.with_issuer(issuer);
    }
    if let Some(audience) = &config.jwt_audience {
        verifier = verifier.with_audience(audience);
    }
    Ok(verifier)
}

fn tls_config(config: &ServeConfig) -> anyhow::Result<Option<rustls::ServerConfig>> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let (Some(cert), Some(key)) = (&config.tls_cert, &config.tls_key) else {
        return Ok(None);
    };
    let chain = CertificateDer::pem_file_iter(cert)
        .with_context(|| format!("reading TLS certificate {}", cert.display()))?
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("parsing TLS certificate {}", cert.display()))?;
    let key = PrivateKeyDer::from_pem_file(key)
        .with_context(|| format!("reading TLS key {}", key.display()))?;
    let mut tls = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()?
    .with_no_client_auth()
    .with_single_cert(chain, key)
    .context("TLS certificate and key do not match")?;
    tls.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Some(tls))
}

/// Opens the state store `--state` names (the default SQLite file when unset), off the
/// runtime: opening migrates and may wait on the disk.
pub async fn open_store(
    config: &ServeConfig,
) -> anyhow::Result<Arc<crate::operator::store::Store>> {
    use crate::operator::store::{default_state_path, StateSpec, Store};
    let spec = match &config.state {
        Some(spec) => spec.clone(),
        // A cluster shares its state by default: a file per node would split approvals,
        // revocations and the audit trail between the nodes (docs/ADMIN.md, "State").
        None if config.cluster.is_some() => StateSpec::Nats,
        None => StateSpec::Sqlite(default_state_path().ok_or_else(|| {
            anyhow::anyhow!(
                "no data directory for the default state file (neither XDG_DATA_HOME nor HOME is \
                 set): pass --state sqlite:PATH, or --state memory to keep nothing"
            )
        })?),
    };
    anyhow::ensure!(
        !(config.require_approval && config.cluster.is_some() && spec != StateSpec::Nats),
        "--require-approval with --cluster needs state shared by every node: leave --state out \
         or give --state nats (JetStream on the cluster's NATS), or approvals would stay on the \
         node they were made on"
    );
    if spec == StateSpec::Nats {
        let url = config.cluster.as_deref().ok_or_else(|| {
            anyhow::anyhow!(
                "--state nats keeps the state on the cluster's NATS: it needs --cluster URL (a \
                 nats-server with JetStream enabled, `nats-server -js`)"
            )
        })?;
        let store = crate::operator::store::nats::NatsStore::open(config, url)
            .await
            .map_err(|e| match config.state {
                Some(_) => e,
                None => e.context(
                    "with --cluster the state is kept on the cluster's NATS unless --state says \
                     otherwise (--state sqlite:PATH for a file per node, docs/ADMIN.md)",
                ),
            })?;
        tracing::info!(
            default = config.state.is_none(),
            "state: JetStream on the cluster's NATS, shared by every node"
        );
        return Ok(Arc::new(Store::Nats(Box::new(store))));
    }
    Ok(Arc::new(Store::open(&spec).await?))
}

/// Binds the listener and starts serving, with the state store `--state` names.
pub async fn start(config: ServeConfig) -> anyhow::Result<RunningRelay> {
    let store = open_store(&config).await?;
    start_with_store(config, store).await
}

/// Binds the listener and starts serving with an already opened store (`serve --dev` reads its
/// secret from the store first).
pub async fn start_with_store(
    config: ServeConfig,
    store: Arc<crate::operator::store::Store>,
) -> anyhow::Result<RunningRelay> {
    let verifier = verifier(&config).await?;
    let tls = tls_config(&config)?;
    let metrics = Arc::new(Metrics::default());
    let limits = HubLimits::from_config(&config);
    // Without --cluster nothing about NATS is even constructed.
    let cluster = match &config.cluster {
        Some(url) => Some(Cluster::connect(&config, url).await?),
        None => None,
    };
    let require_approval = config.require_approval;
    let access =
        crate::operator::access::Access::load(Arc::clone(&store), require_approval).await?;
    let mut hub = Hub::new(limits, Arc::clone(&metrics), cluster);
    let audit = if config.audit_retention.is_zero() {
        None
    } else {
        let (sink, rx) = crate::operator::audit::AuditSink::channel();
        let sink: Arc<dyn AuditTrail> = Arc::new(sink);
        hub.set_audit(Arc::clone(&sink));
        Some((sink, rx))
    };
    let hub = Arc::new(hub);
    hub.start_cluster();
    let retention = config.audit_retention;
    let (audit_sink, audit_rx) = match audit {
        Some((sink, rx)) => (Some(sink), Some(rx)),
        None => (None, None),
    };
    let access = Arc::new(access);
    // The core sees the operator's access mirror only as its gate.
    let gate: Arc<dyn crate::state::Gate> = Arc::new(Arc::clone(&access));
    let state = Arc::new(RelayState::new(
        config, verifier, metrics, hub, gate, audit_sink,
    ));
    let operator = Arc::new(Operator::new(Arc::clone(&state), Arc::clone(&access)));
    if let Some(cluster) = state.hub.cluster() {
        // Weak: the operator owns the state, which owns the hub, which owns the cluster.
        let weak: std::sync::Weak<Operator> = Arc::downgrade(&operator);
        cluster.register_operator(weak);
    }
    if let Some(shared) = store.as_nats() {
        let access = Arc::clone(&access);
        shared.spawn_watcher(
            Arc::new(move |change| access.apply_store_change(change)),
            state.shutdown.clone(),
        );
    }
    if let Some(jwks) = state.verifier.jwks() {
        jwks.spawn_refresher(state.config.jwt_jwks_refresh, state.shutdown.clone());
    }
    if let Some(rx) = audit_rx {
        crate::operator::audit::spawn_writer(
            Arc::clone(&store),
            rx,
            retention,
            state.shutdown.clone(),
            &state.tracker,
        );
    }

    #[cfg(feature = "http-mcp")]
    let http = Arc::new(crate::session::http::McpHttp::new(&state)?);
    let app = Router::new()
        .route("/extension", get(extension_endpoint))
        .route("/mcp", axum::routing::any(mcp_endpoint))
        .route(
            "/.well-known/oauth-protected-resource",
            get(protected_resource_metadata),
        )
        .route("/healthz", get(healthz))
        .route("/metrics", get(metrics_endpoint))
        .merge(crate::operator::admin::api().with_state(Arc::clone(&operator)))
        .merge(crate::operator::dashboard::routes().with_state(Arc::clone(&operator)))
        // The path only: a query string may carry a token (`/mcp?token=…`), and tokens
        // never reach a log at any level.
        .layer(
            tower_http::trace::TraceLayer::new_for_http().make_span_with(
                |request: &axum::http::Request<_>| {
                    tracing::debug_span!(
                        "request",
                        method = %request.method(),
                        path = %crate::redact::printable(request.uri().path()),
                    )
                },
            ),
        )
        .with_state(Arc::clone(&state));
    #[cfg(feature = "http-mcp")]
    let app = app.layer(Extension(http));

    let listener = std::net::TcpListener::bind(state.config.listen)
        .with_context(|| format!("binding {}", state.config.listen))?;
    listener.set_nonblocking(true)?;
    let local_addr = listener.local_addr()?;
    let handle = axum_server::Handle::new();
    let is_tls = tls.is_some();
    let acceptor = crate::net::transport::Acceptor::new(Arc::clone(&state.connections));
    // Refragmenting is outermost in both cases: it must see the frames in the clear.
    let header_timeout = state.config.header_timeout;
    let server = match tls {
        Some(tls) => {
            let rustls = axum_server::tls_rustls::RustlsConfig::from_config(Arc::new(tls));
            let acceptor = axum_server::tls_rustls::RustlsAcceptor::new(rustls)
                .handshake_timeout(header_timeout)
                .acceptor(acceptor);
            let acceptor = crate::net::transport::Refragmenting(acceptor);
            let mut server = axum_server::from_tcp(listener)?
                .acceptor(acceptor)
                .handle(handle.clone());
            limit_http(server.http_builder(), header_timeout);
            tokio::spawn(server.serve(app.into_make_service()))
        }
        None => {
            tracing::warn!(
                "serving plain ws (no --tls-cert/--tls-key): terminate TLS in front of the relay \
                 for anything but localhost"
            );
            let mut server = axum_server::from_tcp(listener)?
                .acceptor(crate::net::transport::Refragmenting(acceptor))
                .handle(handle.clone());
            limit_http(server.http_builder(), header_timeout);
            tokio::spawn(server.serve(app.into_make_service()))
        }
    };
    spawn_expiry_sweeper(&state);
    spawn_pending_sweeper(&state);
    tracing::info!(%local_addr, tls = is_tls, "relay listening");
    Ok(RunningRelay {
        local_addr,
        tls: is_tls,
        state,
        handle,
        server,
    })
}

/// HTTP/1 limits: request headers must arrive within `--header-timeout` (hyper restarts the
/// timer for each request of a kept-alive connection), and at most 64 KiB of them are
/// buffered. The first request's deadline also covers a connection that sends nothing at all
/// (hyper's timer only starts with the first byte), see `spawn_pending_sweeper`.
fn limit_http(
    builder: &mut hyper_util::server::conn::auto::Builder<hyper_util::rt::TokioExecutor>,
    header_timeout: Duration,
) {
    builder
        .http1()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(header_timeout)
        .max_buf_size(64 * 1024);
}

/// Closes connections that have not delivered a request head within `--header-timeout` (idle
/// TCP, trickled headers): a few checks per timeout period.
fn spawn_pending_sweeper(state: &Arc<RelayState>) {
    let period = (state.config.header_timeout / 10)
        .clamp(Duration::from_millis(10), Duration::from_millis(500));
    spawn_sweeper(state, period, |state| state.connections.sweep_pending());
}

/// Answers requests the extension never answered: a few checks per timeout period.
fn spawn_expiry_sweeper(state: &Arc<RelayState>) {
    let period = (state.config.request_timeout / 20)
        .clamp(Duration::from_millis(10), Duration::from_millis(500));
    spawn_sweeper(state, period, |state| {
        state.hub.expire_requests(Instant::now())
    });
}

/// Runs `sweep` every `period` until shutdown. One task checks a whole class of deadlines;
/// cheaper than a timer per connection or request, and precise enough.
fn spawn_sweeper(
    state: &Arc<RelayState>,
    period: Duration,
    sweep: impl Fn(&RelayState) + Send + 'static,
) {
    let state = Arc::clone(state);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(period);
        loop {
            tokio::select! {
                _ = state.shutdown.cancelled() => break,
                _ = tick.tick() => sweep(&state),
            }
        }
    });
}

/// Slack in the WebSocket write buffer beyond one largest message: room for pongs and close
/// frames.
const WRITE_BUFFER_SLACK: usize = 64 * 1024;

/// Applies the buffer sizes and message limits to an upgrade. Small read and write buffers
/// keep an idle socket at a few KiB instead of tungstenite's 128 KiB defaults.
///
/// The write buffer is bounded: it must hold one whole outgoing message (axum cannot send a
/// message in fragments) plus some slack, and no more. Pongs tungstenite queues by itself in
/// answer to pings go into that buffer; once it is full further pongs collapse into the one
/// tungstenite keeps pending (RFC 6455 allows answering only the latest ping), so a ping flood
/// from a peer that does not read can no longer grow it without limit. Before authentication
/// the read budget bounds it far lower: pongs never exceed the pings read.
fn tune(ws: WebSocketUpgrade, state: &RelayState) -> WebSocketUpgrade {
    let max = state.config.max_message_bytes;
    ws.read_buffer_size(state.config.read_buffer_bytes.max(64))
        .write_buffer_size(0)
        .max_write_buffer_size(max.saturating_add(WRITE_BUFFER_SLACK))
        .max_message_size(max)
        .max_frame_size(max)
}

/// Checks the request and its `Origin`, takes a socket slot and moves the connection into the
/// unauthenticated pool, or says why the upgrade is refused (400 for a body, 403 for an
/// origin, 503 otherwise).
///
/// RFC 6455's opening handshake is a GET without a body. hyper would consume a body between
/// the request's head and the first frame, where the transport's re-framer (`net/refragment.rs`)
/// takes the frames to begin: a client could then send frames it misreads and keep a large
/// read buffer after all.
fn admit(
    state: &RelayState,
    headers: &HeaderMap,
    conn: &ConnHandle,
    extension: bool,
) -> Result<SocketSlot, (StatusCode, &'static str)> {
    let no_body = !headers.contains_key(axum::http::header::TRANSFER_ENCODING)
        && headers
            .get_all(axum::http::header::CONTENT_LENGTH)
            .iter()
            .all(|length| length.to_str().is_ok_and(|n| n.trim().parse() == Ok(0u64)));
    if !no_body {
        return Err((
            StatusCode::BAD_REQUEST,
            "a WebSocket upgrade request has no body\n",
        ));
    }
    if !crate::net::origin::allowed(&state.config, headers, extension) {
        tracing::info!(origin = ?headers.get(axum::http::header::ORIGIN), "refused a WebSocket from a web origin");
        return Err((
            StatusCode::FORBIDDEN,
            "this Origin may not open the relay's WebSockets (see --allowed-origins)\n",
        ));
    }
    if state.shutdown.is_cancelled() {
        return Err((StatusCode::SERVICE_UNAVAILABLE, "relay is shutting down\n"));
    }
    let slot = SocketSlot::acquire(&state.open_sockets, state.config.max_connections).ok_or_else(
        || {
            state.metrics.rejected_sockets.inc();
            (
                StatusCode::SERVICE_UNAVAILABLE,
                "relay is at its connection limit, try again later\n",
            )
        },
    )?;
    conn.upgrading();
    Ok(slot)
}

async fn extension_endpoint(
    ws: WebSocketUpgrade,
    State(state): State<Arc<RelayState>>,
    Extension(conn): Extension<ConnHandle>,
    headers: HeaderMap,
) -> Response {
    upgrade(
        ws,
        state,
        conn,
        &headers,
        true,
        |socket, state, slot, conn| ExtensionSession::new(socket, state, slot, conn).run(),
    )
}

/// `/mcp`: a request with `Upgrade: websocket` is the relay's WebSocket protocol; anything else
/// is MCP over Streamable HTTP (see [`crate::session::http`]), when built with the `http-mcp` feature.
async fn mcp_endpoint(
    State(state): State<Arc<RelayState>>,
    Extension(conn): Extension<ConnHandle>,
    #[cfg(feature = "http-mcp")] Extension(http): Extension<Arc<crate::session::http::McpHttp>>,
    request: axum::extract::Request,
) -> Response {
    let wants_websocket = request
        .headers()
        .get(axum::http::header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("websocket"));
    if !wants_websocket {
        #[cfg(feature = "http-mcp")]
        return http.handle(&state, &conn, request).await;
        #[cfg(not(feature = "http-mcp"))]
        return (
            StatusCode::METHOD_NOT_ALLOWED,
            [(axum::http::header::ALLOW, "GET")],
            "/mcp is a WebSocket endpoint here (send Upgrade: websocket); this relay was built \
             without the `http-mcp` feature, which serves MCP over Streamable HTTP\n",
        )
            .into_response();
    }
    let (mut parts, _body) = request.into_parts();
    let ws = match <WebSocketUpgrade as axum::extract::FromRequestParts<_>>::from_request_parts(
        &mut parts, &state,
    )
    .await
    {
        Ok(ws) => ws,
        Err(rejection) => return rejection.into_response(),
    };
    upgrade(
        ws,
        state,
        conn,
        &parts.headers,
        false,
        |socket, state, slot, conn| McpSession::new(socket, state, slot, conn).run(),
    )
}

/// RFC 9728 metadata for the HTTP MCP endpoint; 404 when the relay serves no such endpoint.
async fn protected_resource_metadata(
    State(state): State<Arc<RelayState>>,
    headers: HeaderMap,
) -> Response {
    #[cfg(feature = "http-mcp")]
    return crate::session::http::protected_resource_metadata(&state, &headers);
    #[cfg(not(feature = "http-mcp"))]
    {
        let _ = (state, headers);
        (
            StatusCode::NOT_FOUND,
            "this relay was built without the HTTP MCP endpoint (the `http-mcp` feature)\n",
        )
            .into_response()
    }
}

/// Admits an upgrade (or says why not) and runs `session` on the socket, tracked for shutdown.
fn upgrade<Session, Running>(
    ws: WebSocketUpgrade,
    state: Arc<RelayState>,
    conn: ConnHandle,
    headers: &HeaderMap,
    extension: bool,
    session: Session,
) -> Response
where
    Session: FnOnce(axum::extract::ws::WebSocket, Arc<RelayState>, SocketSlot, ConnHandle) -> Running
        + Send
        + 'static,
    Running: std::future::Future<Output = ()> + Send + 'static,
{
    let slot = match admit(&state, headers, &conn, extension) {
        Ok(slot) => slot,
        Err(refusal) => return refusal.into_response(),
    };
    let tracker = state.tracker.clone();
    tune(ws, &state)
        .on_upgrade(move |socket| tracker.track_future(session(socket, state, slot, conn)))
}

/// 200 while serving. A cluster node that lost NATS still serves its local pairs, so it stays
/// 200 (a load balancer should keep sending it traffic) and says `cluster: degraded`.
async fn healthz(State(state): State<Arc<RelayState>>) -> Response {
    if state.shutdown.is_cancelled() {
        return (StatusCode::SERVICE_UNAVAILABLE, "shutting down\n").into_response();
    }
    match state.hub.cluster() {
        None => (StatusCode::OK, "ok\n").into_response(),
        Some(cluster) if cluster.is_connected() => (
            StatusCode::OK,
            format!(
                "ok\ncluster: connected (node {}, {} other nodes)\n",
                cluster.node_id(),
                cluster.live_nodes()
            ),
        )
            .into_response(),
        Some(cluster) => (
            StatusCode::OK,
            format!(
                "ok\ncluster: degraded (node {}: NATS unreachable, serving local pairs only)\n",
                cluster.node_id()
            ),
        )
            .into_response(),
    }
}

async fn metrics_endpoint(
    State(state): State<Arc<RelayState>>,
    #[cfg(feature = "http-mcp")] Extension(http): Extension<Arc<crate::session::http::McpHttp>>,
) -> Response {
    let mut sampled = Sampled::default();
    state.hub.sample_cluster_metrics(&mut sampled);
    sample_connection_metrics(&state, &mut sampled);
    #[cfg(feature = "http-mcp")]
    http.sample_metrics(&mut sampled);
    if let Some(audit) = &state.audit {
        sampled
            .counter(
                "mcp_relay_audit_dropped_total",
                "Audit events dropped because the writer fell behind.",
                audit.dropped(),
            )
            .counter(
                "mcp_relay_audit_refusals_total",
                "Requests refused before reaching a browser, counted in the audit trail's refused tallies.",
                audit.refusals(),
            );
    }
    let text = state.metrics.render_with(sampled);
    ([("content-type", "text/plain; version=0.0.4")], text).into_response()
}

/// The connection registry's figures (docs/SECURITY.md).
fn sample_connection_metrics(state: &RelayState, out: &mut Sampled) {
    let (open, pending, unauthenticated) = state.connections.counts();
    let load = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
    out.gauge_by(
        "mcp_relay_tcp_connections",
        "Open TCP connections by stage.",
        "stage",
        &[
            ("all", open as u64),
            ("pending", pending as u64),
            ("unauthenticated", unauthenticated as u64),
        ],
    )
    .counter(
        "mcp_relay_evicted_connections_total",
        "Anonymous connections closed to make room or for missing their header deadline.",
        load(&state.connections.evicted),
    )
    .counter(
        "mcp_relay_shed_connections_total",
        "New connections closed at once because file descriptors ran short.",
        load(&state.connections.shed),
    )
    .gauge(
        "mcp_relay_send_queue_bytes",
        "Bytes queued towards all peers (with per-frame overhead).",
        state.socket.total_queued.load(Ordering::Relaxed) as u64,
    );
}
