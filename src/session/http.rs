//! MCP over Streamable HTTP on `/mcp`: the relay is a remote MCP server, so a host connects by
//! URL with a bearer token and needs no local bridge.
//!
//! The transport is rmcp's [`StreamableHttpService`] (POST with JSON or SSE answers, the GET
//! stream, DELETE, `Mcp-Session-Id`, `MCP-Protocol-Version`). Around it this module does what
//! the MCP specification asks of a resource server and what a hosted relay needs:
//!
//! - **Authorization**: every request carries `Authorization: Bearer <token>`, an MCP-role
//!   token checked like the WebSocket handshake's (pinned algorithm, `exp`, `--jwt-issuer`,
//!   `--jwt-audience`). Without a valid one the answer is `401` with `WWW-Authenticate: Bearer
//!   resource_metadata="…"`, pointing at `/.well-known/oauth-protected-resource` (RFC 9728).
//! - **Origin**: a browser page's `Origin` must be in `--allowed-origins` (403 otherwise), the
//!   same rule as the WebSockets: DNS-rebinding protection. rmcp's own `Host` allow-list
//!   (loopback only) is switched off, since a hosted relay is reached under its public name
//!   and every request must carry a token anyway.
//! - **Sessions belong to a user**: the user of the token that initialized a session is the only
//!   one who may use it; another user's token gets `404`, exactly as for an unknown id, so a
//!   session id reveals nothing.
//! - **The tools**: each session runs the bridge's tool server ([`mcp_relay_bridge::hosted`])
//!   whose link to the browser is an in-process MCP session of this relay
//!   ([`McpSession::in_memory`]): the same handshake, limits, rate limits, isolation,
//!   `connection_opened` and consent as a `/mcp` socket, without a socket.
//! - **Idle sessions end** after `--mcp-session-idle`; the host's next request gets `404` and
//!   it initializes again, as the specification provides.
//!
//! Tokens are never logged: they are read from the header, verified, and handed to the session.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, Method, Request, StatusCode};
use axum::response::{IntoResponse, Response};
use futures_util::future::BoxFuture;
use mcp_relay_bridge::hosted::{self, AuditFile, HostedSession, TokenRefresh};
use mcp_relay_bridge::{BrowserServer, Dialer, Exposure, FramePipe};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use crate::auth::Role;
use crate::metrics::Sampled;
use crate::net::limits::SocketSlot;
use crate::net::transport::ConnHandle;
use crate::session::mcp::McpSession;
use crate::state::RelayState;

/// The header that names a Streamable HTTP session.
const SESSION_HEADER: &str = "mcp-session-id";
/// Where the protected resource metadata is served.
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// What the factory of a new session needs from the request that creates it. rmcp calls the
/// factory inside the handling of that request, so the seed travels in a task-local.
struct Seed {
    token: String,
    user_id: String,
    tools: Exposure,
    dynamic: Option<u16>,
    describe: String,
    /// Filled with the session's ticket (and token refresher) once the factory built it.
    ticket: Mutex<Option<(Arc<Ticket>, TokenRefresh)>>,
}

tokio::task_local! {
    static SEED: Arc<Seed>;
}

/// GET (SSE) streams one session may have open at once: its stream, and one more while a host
/// reconnects before the old one has closed.
pub const MAX_STREAMS_PER_SESSION: usize = 2;

/// The session's entry in [`McpHttp::owners`], removed when the session's server is dropped
/// (idle expiry, DELETE, shutdown, revocation), whatever ended it; with it go the session's
/// place in its user's count and its streams.
struct Ticket {
    owners: Arc<Owners>,
    id: Mutex<Option<String>>,
    held: Mutex<Option<Held>>,
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if let Some(id) = self.id.lock().unwrap().take() {
            let owner = self.owners.0.lock().unwrap().sessions.remove(&id);
            if let Some(owner) = owner {
                owner.ended.cancel();
            }
        }
    }
}

/// A live session: whose it is, and how to hand it a fresher token.
#[derive(Clone)]
struct Owner {
    user_id: String,
    refresh: TokenRefresh,
    /// The `exp` of the token the session uses; only a later one replaces it.
    expires_at: Arc<std::sync::atomic::AtomicU64>,
    /// Its GET streams open now.
    streams: Arc<AtomicUsize>,
    /// Cancelled when the session ends: its streams and answers end with it.
    ended: CancellationToken,
    /// The tokens it was opened and refreshed with.
    tokens: Arc<Mutex<SessionTokens>>,
}

/// Tokens a session remembers, newest last.
const TOKENS_PER_SESSION: usize = 4;

/// The tokens (identities) a session has been used with: the one that opened it and the
/// refreshes since, the last [`TOKENS_PER_SESSION`].
struct SessionTokens(Vec<crate::auth::Identity>);

impl SessionTokens {
    /// Whether a request with `identity` (already of the session's user) may use the session:
    /// a token it knows (same `jti`), or a fresher one (a later `exp`), which it then knows.
    fn admit(&mut self, identity: &crate::auth::Identity) -> bool {
        if self.0.iter().any(|known| known.jti == identity.jti) {
            return true;
        }
        let latest = self.0.iter().map(|t| t.expires_at).max().unwrap_or(0);
        if identity.expires_at <= latest {
            return false;
        }
        if self.0.len() == TOKENS_PER_SESSION {
            self.0.remove(0);
        }
        self.0.push(identity.clone());
        true
    }
}

/// How often live sessions are checked against revocations and their tokens' expiry.
const SWEEP_EVERY: std::time::Duration = std::time::Duration::from_millis(250);

/// Ends every HTTP session whose token was revoked (any token it was used with, by `jti` or
/// by its user's cutoff) or has expired (`exp` + `--token-expiry-grace` of its freshest token),
/// with its streams, every [`SWEEP_EVERY`], until shutdown.
fn spawn_sweeper(state: &Arc<RelayState>, owners: Arc<Owners>, sessions: Arc<LocalSessionManager>) {
    use rmcp::transport::streamable_http_server::session::SessionManager;
    let state_ = Arc::clone(state);
    state.tracker.spawn(async move {
        let state = state_;
        let mut tick = tokio::time::interval(SWEEP_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = state.shutdown.cancelled() => break,
                _ = tick.tick() => {}
            }
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64());
            let grace = state.config.token_expiry_grace.as_secs_f64();
            let ended: Vec<(String, Owner)> = {
                let inner = owners.0.lock().unwrap();
                inner
                    .sessions
                    .iter()
                    .filter(|(_, owner)| {
                        let expires = owner.expires_at.load(Ordering::Acquire) as f64;
                        now > expires + grace
                            || owner
                                .tokens
                                .lock()
                                .unwrap()
                                .0
                                .iter()
                                .any(|t| state.gate.check_token(t).is_err())
                    })
                    .map(|(id, owner)| (id.clone(), owner.clone()))
                    .collect()
            };
            for (id, owner) in ended {
                tracing::info!("an HTTP MCP session ended: its token was revoked or expired");
                owners.0.lock().unwrap().sessions.remove(&id);
                owner.ended.cancel();
                let _ = sessions.close_session(&id.as_str().into()).await;
            }
        }
    });
}

/// What a user holds on the endpoint: sessions (with those being created), GET streams, and
/// authenticated HTTP connections.
#[derive(Default, Clone, Copy, PartialEq, Eq, Debug)]
struct UserCounts {
    sessions: usize,
    streams: usize,
    connections: usize,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Session,
    Stream,
    Connection,
}

impl UserCounts {
    fn of(&mut self, kind: Kind) -> &mut usize {
        match kind {
            Kind::Session => &mut self.sessions,
            Kind::Stream => &mut self.streams,
            Kind::Connection => &mut self.connections,
        }
    }
}

#[derive(Default)]
struct OwnersInner {
    sessions: HashMap<String, Owner>,
    users: HashMap<String, UserCounts>,
    /// Sessions live or being created, all users.
    all_sessions: usize,
}

/// Which user each live session belongs to, and what each user holds, under one lock: a
/// session's place is taken (checked and counted at once) before the session is created.
#[derive(Default)]
struct Owners(Mutex<OwnersInner>);

/// A place in a user's count ([`Owners::take`]), given back when dropped.
struct Held {
    owners: Arc<Owners>,
    user_id: String,
    kind: Kind,
}

impl Drop for Held {
    fn drop(&mut self) {
        let mut inner = self.owners.0.lock().unwrap();
        if self.kind == Kind::Session {
            inner.all_sessions -= 1;
        }
        if let Some(counts) = inner.users.get_mut(&self.user_id) {
            *counts.of(self.kind) -= 1;
            if *counts == UserCounts::default() {
                inner.users.remove(&self.user_id);
            }
        }
    }
}

impl Owners {
    fn owner(&self, id: &str) -> Option<Owner> {
        self.0.lock().unwrap().sessions.get(id).cloned()
    }

    /// Takes one place of `kind` for `user_id` if it has fewer than `max` (and, for sessions,
    /// all users have fewer than `all_max`); else says how many it has.
    fn take(
        self: &Arc<Self>,
        user_id: &str,
        kind: Kind,
        max: usize,
        all_max: usize,
    ) -> Result<Held, usize> {
        let mut inner = self.0.lock().unwrap();
        let had = inner.users.get(user_id).map_or(0, |c| *c.clone().of(kind));
        if had >= max {
            return Err(had);
        }
        if kind == Kind::Session {
            if inner.all_sessions >= all_max {
                return Err(had);
            }
            inner.all_sessions += 1;
        }
        *inner.users.entry(user_id.to_owned()).or_default().of(kind) += 1;
        Ok(Held {
            owners: Arc::clone(self),
            user_id: user_id.to_owned(),
            kind,
        })
    }
}

/// One of a session's [`MAX_STREAMS_PER_SESSION`] GET streams, given back when dropped.
struct SessionStream(Arc<AtomicUsize>);

impl SessionStream {
    fn take(streams: &Arc<AtomicUsize>) -> Option<SessionStream> {
        streams
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < MAX_STREAMS_PER_SESSION).then_some(n + 1)
            })
            .ok()
            .map(|_| SessionStream(Arc::clone(streams)))
    }
}

impl Drop for SessionStream {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A response body that ends when its session does, holding what it counts against until it
/// is dropped (a GET stream's places).
struct Watched {
    inner: Body,
    ended: Pin<Box<tokio_util::sync::WaitForCancellationFutureOwned>>,
    /// Whether the session's end ends this body (a stream), see [`watched`].
    cut: bool,
    _hold: Option<Box<dyn Send>>,
}

impl axum::body::HttpBody for Watched {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        let this = self.get_mut();
        if this.cut && this.ended.as_mut().poll(cx).is_ready() {
            return Poll::Ready(None);
        }
        Pin::new(&mut this.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    // Kept, so a JSON answer still goes out with its Content-Length.
    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// Why the endpoint refused a request for what it would hold (`/metrics`).
#[derive(Default)]
struct Refused {
    sessions_per_user: AtomicU64,
    sessions_all: AtomicU64,
    streams_per_session: AtomicU64,
    streams_per_user: AtomicU64,
    connections_per_user: AtomicU64,
    connections_all: AtomicU64,
}

/// The Streamable HTTP endpoint: rmcp's service, and the bookkeeping around it.
pub struct McpHttp {
    service: StreamableHttpService<BrowserServer, LocalSessionManager>,
    owners: Arc<Owners>,
    default_tools: Exposure,
    refused: Refused,
}

/// Embeds the catalogue on a thread of its own as the relay starts, so the first session that
/// retrieves finds every vector cached instead of waiting for them.
fn warm_catalogue(embedder: Arc<mcp_relay_bridge::Embedder>) {
    let spawned = std::thread::Builder::new()
        .name("embed-catalogue".into())
        .spawn(move || {
            let texts = mcp_relay_bridge::ToolIndex::new(&mcp_relay_bridge::tool_definitions())
                .semantic_texts();
            if let Err(e) = embedder.documents(&texts) {
                tracing::error!(error = %e, "embedding the catalogue failed");
            }
        });
    if let Err(e) = spawned {
        tracing::error!(error = %e, "no thread to embed the catalogue");
    }
}

/// Opens in-process MCP sessions with this relay's hub.
struct InProcess(Arc<RelayState>);

impl Dialer for InProcess {
    fn dial(&self) -> BoxFuture<'static, Result<FramePipe, String>> {
        let state = Arc::clone(&self.0);
        Box::pin(async move {
            if state.shutdown.is_cancelled() {
                return Err("the relay is shutting down".into());
            }
            let slot = SocketSlot::acquire(&state.open_sockets, state.config.max_connections)
                .ok_or("the relay is at its connection limit (--max-connections)")?;
            let (session, ends) = McpSession::in_memory(Arc::clone(&state), slot);
            state.tracker.spawn(session.run());
            Ok(FramePipe {
                to_relay: ends.to_relay,
                from_relay: ends.from_relay,
            })
        })
    }
}

impl McpHttp {
    /// Builds the endpoint, or says which setting is wrong.
    pub fn new(state: &Arc<RelayState>) -> anyhow::Result<McpHttp> {
        let default_tools = hosted::parse_tools(&state.config.mcp_tools)
            .map_err(|e| anyhow::anyhow!("--mcp-tools: {e}"))?;
        let audit =
            match &state.config.mcp_audit_log {
                Some(path) => Some(AuditFile::open(path).map_err(|e| {
                    anyhow::anyhow!("opening --mcp-audit-log {}: {e}", path.display())
                })?),
                None => None,
            };
        let embedder = match &state.config.mcp_embedding_model {
            Some(path) => {
                let embedder = Arc::new(mcp_relay_bridge::Embedder::load(path).map_err(|e| {
                    anyhow::anyhow!("loading --mcp-embedding-model {}: {e}", path.display())
                })?);
                tracing::info!(
                    path = %path.display(),
                    seconds = embedder.model().load_time().as_secs_f64(),
                    "embedding model loaded"
                );
                warm_catalogue(Arc::clone(&embedder));
                Some(embedder)
            }
            None => None,
        };
        // Resumption with Last-Event-ID replays from the relay's own store (src/session/http_events.rs):
        // rmcp's session cache alone forgets a call's stream once its answer is sent.
        let mut sessions = LocalSessionManager::default().with_event_store(Arc::new(
            crate::session::http_events::RecentEvents::default(),
        ));
        sessions.session_config.keep_alive = Some(state.config.mcp_session_idle);
        let sessions = Arc::new(sessions);
        let mut config = StreamableHttpServerConfig::default()
            .disable_allowed_hosts()
            .with_cancellation_token(state.shutdown.child_token())
            .with_max_request_body_bytes(state.config.max_message_bytes);
        // The GET stream is kept open with SSE comments, well inside common proxy timeouts.
        config.sse_keep_alive = Some(std::time::Duration::from_secs(15));
        let owners = Arc::new(Owners::default());
        let factory_state = Arc::clone(state);
        let factory_owners = Arc::clone(&owners);
        let service = StreamableHttpService::new(
            move || {
                let seed = SEED.try_with(Arc::clone).map_err(|_| {
                    std::io::Error::other("a session can only be created by an initialize request")
                })?;
                let ticket = Arc::new(Ticket {
                    owners: Arc::clone(&factory_owners),
                    id: Mutex::new(None),
                    held: Mutex::new(None),
                });
                let config = &factory_state.config;
                let (server, refresh) = hosted::server(HostedSession {
                    token: seed.token.clone(),
                    user_id: seed.user_id.clone(),
                    // Random (122 bits from the OS) and one per session: each assistant is its
                    // own identity for the browser's owner, and no other host or socket can
                    // predict it (sockets may not declare the prefix at all).
                    client_id: format!(
                        "{}{}",
                        crate::session::mcp::HTTP_CLIENT_PREFIX,
                        uuid::Uuid::new_v4()
                    ),
                    tools: seed.tools,
                    dynamic: seed.dynamic,
                    dialer: Arc::new(InProcess(Arc::clone(&factory_state))),
                    describe: seed.describe.clone(),
                    // The relay's own timeout answers first; this only guards against a lost
                    // answer.
                    request_timeout: config.request_timeout + std::time::Duration::from_secs(15),
                    approval_wait: std::time::Duration::from_secs(20),
                    max_message_bytes: config.max_message_bytes,
                    code_execution: config.mcp_code_execution.then_some(
                        mcp_relay_bridge::CodeLimits {
                            wall_time: config.mcp_code_wall_time,
                            cpu_time: config.mcp_code_cpu_time,
                            memory: config.mcp_code_memory,
                            calls: config.mcp_code_max_calls,
                            bytes: config.mcp_code_max_bytes,
                            flag_prefix: "--mcp-code-",
                        },
                    ),
                    structured_content: config.mcp_structured_content,
                    audit: audit.clone(),
                    embedder: embedder.clone(),
                    keep: Some(Box::new(Arc::clone(&ticket))),
                });
                *seed.ticket.lock().unwrap() = Some((ticket, refresh));
                Ok(server)
            },
            Arc::clone(&sessions),
            config,
        );
        spawn_sweeper(state, Arc::clone(&owners), sessions);
        Ok(McpHttp {
            service,
            owners,
            default_tools,
            refused: Refused::default(),
        })
    }

    /// The endpoint's figures for `/metrics`. (Each session's in-process relay client also
    /// counts in `mcp_relay_sockets{role="mcp"}` while it is connected.)
    pub fn sample_metrics(&self, out: &mut Sampled) {
        let sessions = self.owners.0.lock().unwrap().sessions.len();
        let r = &self.refused;
        let n = |c: &AtomicU64| c.load(Ordering::Relaxed);
        out.gauge(
            "mcp_relay_http_mcp_sessions",
            "Live MCP sessions on the Streamable HTTP endpoint.",
            sessions as u64,
        )
        .counter_by(
            "mcp_relay_http_mcp_refused_total",
            "Streamable HTTP requests refused for what they would hold, by the bound they met.",
            "bound",
            &[
                ("sessions_per_user", n(&r.sessions_per_user)),
                ("sessions_all", n(&r.sessions_all)),
                ("streams_per_session", n(&r.streams_per_session)),
                ("streams_per_user", n(&r.streams_per_user)),
                ("connections_per_user", n(&r.connections_per_user)),
                ("connections_all", n(&r.connections_all)),
            ],
        );
    }

    /// Counts an authenticated HTTP connection once, while it is open: in `--max-connections`
    /// (a slot, as a WebSocket's) and among its user's connections (at most twice
    /// `--max-mcp-clients-per-user`: a session's stream and a request beside it). Else the
    /// answer that refuses it (boxed: a response is large beside `Ok`).
    fn admit_connection(
        &self,
        state: &Arc<RelayState>,
        conn: &ConnHandle,
        user_id: &str,
    ) -> Result<(), Box<Response>> {
        if conn.holds() {
            return Ok(());
        }
        let max = state.config.max_mcp_clients_per_user.saturating_mul(2);
        let held = self
            .owners
            .take(user_id, Kind::Connection, max, usize::MAX)
            .map_err(|had| {
                self.refused
                    .connections_per_user
                    .fetch_add(1, Ordering::Relaxed);
                Box::new(too_many(format!(
                    "this user already has {had} HTTP connections open to the MCP endpoint (twice \
                     --max-mcp-clients-per-user); close some\n"
                )))
            })?;
        let slot = SocketSlot::acquire(&state.open_sockets, state.config.max_connections)
            .ok_or_else(|| {
                self.refused.connections_all.fetch_add(1, Ordering::Relaxed);
                Box::new(at_capacity())
            })?;
        conn.authenticated_http();
        conn.hold_while_open(Box::new((slot, held)));
        Ok(())
    }

    /// A GET (the session's SSE stream): at most [`MAX_STREAMS_PER_SESSION`] per session and
    /// `--max-mcp-clients-per-user` per user at once.
    async fn stream(
        &self,
        state: &Arc<RelayState>,
        owner: &Owner,
        request: Request<Body>,
    ) -> Response {
        let Some(of_session) = SessionStream::take(&owner.streams) else {
            self.refused
                .streams_per_session
                .fetch_add(1, Ordering::Relaxed);
            return too_many(format!(
                "this session already has {MAX_STREAMS_PER_SESSION} GET streams open; close one\n"
            ));
        };
        let max = state.config.max_mcp_clients_per_user;
        let of_user = match self
            .owners
            .take(&owner.user_id, Kind::Stream, max, usize::MAX)
        {
            Ok(held) => held,
            Err(had) => {
                self.refused
                    .streams_per_user
                    .fetch_add(1, Ordering::Relaxed);
                return too_many(format!(
                    "this user already has {had} GET streams open (--max-mcp-clients-per-user); \
                     close one\n"
                ));
            }
        };
        let response = self.forward(request, None).await;
        watched(response, owner, Some(Box::new((of_session, of_user))))
    }

    /// Serves one non-WebSocket request to `/mcp`.
    pub async fn handle(
        &self,
        state: &Arc<RelayState>,
        conn: &ConnHandle,
        request: Request<Body>,
    ) -> Response {
        let headers = request.headers();
        if !crate::net::origin::allowed(&state.config, headers, false) {
            tracing::info!(origin = ?headers.get(header::ORIGIN), "refused an HTTP MCP request from a web origin");
            return (
                StatusCode::FORBIDDEN,
                "this Origin may not use the relay's MCP endpoint (see --allowed-origins)\n",
            )
                .into_response();
        }
        let base = base_url(state, headers);
        let token = bearer(headers);
        // A revoked token (docs/ADMIN.md) is refused here, as at a WebSocket handshake, so a
        // host learns it with a 401 instead of a session whose every call fails.
        let identity = match state.verify(token.unwrap_or_default(), Role::Mcp) {
            Ok(identity) => identity,
            Err(error) => return unauthorized(&base, token.is_some(), &error.to_string()),
        };
        if let Err(refused) = self.admit_connection(state, conn, &identity.user_id) {
            return *refused;
        }
        let session = headers
            .get(SESSION_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let Some(id) = session else {
            if request.method() != Method::POST {
                // rmcp answers these (a GET or DELETE needs a session id).
                return self.forward(request, None).await;
            }
            return self.initialize(state, request, identity, base).await;
        };
        let owner = match self.owners.owner(&id) {
            Some(owner) if owner.user_id == identity.user_id => {
                // A session belongs to the token that opened it: another token of its user is
                // taken only as a refresh (it expires later), and from then on the session
                // answers to it too; the session ends if any of its tokens is revoked.
                if !owner.tokens.lock().unwrap().admit(&identity) {
                    tracing::info!("refused a request for an HTTP MCP session with another token");
                    return session_not_found();
                }
                // The session's relay client follows a refreshed token (an older token still
                // in flight on another request does not undo that).
                let before = owner
                    .expires_at
                    .fetch_max(identity.expires_at, std::sync::atomic::Ordering::AcqRel);
                if identity.expires_at > before {
                    owner.refresh.refresh(token.unwrap_or_default());
                }
                owner
            }
            // Another user's session looks exactly like one that does not exist.
            Some(_) => {
                tracing::info!("refused a request for another user's HTTP MCP session");
                return session_not_found();
            }
            None => return session_not_found(),
        };
        if request.method() == Method::GET {
            return self.stream(state, &owner, request).await;
        }
        let ending = request.method() == Method::DELETE;
        let mut response = self.forward(request, None).await;
        // The session is ended by the time rmcp answers its DELETE, with 202; the official
        // SDKs expect 200 (Python's client logs "Session termination failed: 202" otherwise).
        if ending && response.status() == StatusCode::ACCEPTED {
            *response.status_mut() = StatusCode::OK;
        }
        watched(response, &owner, None)
    }

    /// A POST without a session id: an `initialize` (rmcp refuses anything else), which creates
    /// a session for the token's user.
    async fn initialize(
        &self,
        state: &Arc<RelayState>,
        request: Request<Body>,
        identity: crate::auth::Identity,
        base: String,
    ) -> Response {
        let query = request.uri().query();
        let choice = query_tools(query).and_then(|tools| {
            let tools = tools.unwrap_or(self.default_tools);
            Ok((tools, query_dynamic(query, tools)?))
        });
        let (tools, dynamic) = match choice {
            Ok(choice) => choice,
            Err(message) => {
                return (StatusCode::BAD_REQUEST, format!("{message}\n")).into_response()
            }
        };
        // The place is taken before the session exists, under the lock that counts: concurrent
        // initializes cannot all pass a check made before any of them is recorded.
        let max = state.config.max_mcp_clients_per_user;
        let held = match self.owners.take(
            &identity.user_id,
            Kind::Session,
            max,
            state.config.max_connections,
        ) {
            Ok(held) => held,
            Err(mine) if mine >= max => {
                self.refused
                    .sessions_per_user
                    .fetch_add(1, Ordering::Relaxed);
                return too_many(format!(
                    "this user already has {mine} MCP sessions (--max-mcp-clients-per-user); end \
                     one (DELETE) or let it expire\n"
                ));
            }
            Err(_) => {
                self.refused.sessions_all.fetch_add(1, Ordering::Relaxed);
                return at_capacity();
            }
        };
        let token = bearer(request.headers()).unwrap_or_default().to_owned();
        let seed = Arc::new(Seed {
            token,
            user_id: identity.user_id.clone(),
            tools,
            dynamic,
            describe: format!("{base}/mcp"),
            ticket: Mutex::new(None),
        });
        let response = self.forward(request, Some(Arc::clone(&seed))).await;
        let created = response
            .headers()
            .get(SESSION_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let ticket = seed.ticket.lock().unwrap().take();
        if let (Some(id), Some((ticket, refresh))) = (created, ticket) {
            let owner = Owner {
                tokens: Arc::new(Mutex::new(SessionTokens(vec![identity.clone()]))),
                user_id: identity.user_id,
                refresh,
                expires_at: Arc::new(identity.expires_at.into()),
                streams: Arc::new(AtomicUsize::new(0)),
                ended: CancellationToken::new(),
            };
            self.owners
                .0
                .lock()
                .unwrap()
                .sessions
                .insert(id.clone(), owner);
            *ticket.id.lock().unwrap() = Some(id);
            *ticket.held.lock().unwrap() = Some(held);
            tracing::info!(tools = ?tools, "an HTTP MCP session started");
        }
        response
    }

    async fn forward(&self, request: Request<Body>, seed: Option<Arc<Seed>>) -> Response {
        let response = match seed {
            Some(seed) => SEED.scope(seed, self.service.handle(request)).await,
            None => self.service.handle(request).await,
        };
        response.map(Body::new)
    }
}

/// `?tools=` of the session's URL, if given.
fn query_tools(query: Option<&str>) -> Result<Option<Exposure>, String> {
    let Some(query) = query else { return Ok(None) };
    for pair in query.split('&') {
        if let Some(value) = pair.strip_prefix("tools=") {
            return hosted::parse_tools(value).map(Some);
        }
    }
    Ok(None)
}

/// `?dynamic=K` of the session's URL: 1 to 50, and only with a tool set that retrieves.
fn query_dynamic(query: Option<&str>, tools: Exposure) -> Result<Option<u16>, String> {
    let Some(value) = query
        .into_iter()
        .flat_map(|q| q.split('&'))
        .find_map(|pair| pair.strip_prefix("dynamic="))
    else {
        return Ok(None);
    };
    let k = value
        .parse::<u16>()
        .ok()
        .filter(|k| (1..=50).contains(k))
        .ok_or_else(|| format!("dynamic={value:?}: give a number from 1 to 50"))?;
    if !tools.retrieve() {
        return Err(
            "dynamic needs tools=retrieve or tools=all (it registers what retrieve_tools finds)"
                .into(),
        );
    }
    Ok(Some(k))
}

/// The token of `Authorization: Bearer …` (the scheme is case-insensitive).
fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?.trim();
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

/// `response` with a body that ends when `owner`'s session does, holding `hold` until then.
fn watched(response: Response, owner: &Owner, hold: Option<Box<dyn Send>>) -> Response {
    let ended = Box::pin(owner.ended.clone().cancelled_owned());
    response.map(|inner| {
        // Only a stream is cut when the session ends. A body of known length (a JSON answer,
        // DELETE's) goes out whole: cutting it short of its Content-Length would make hyper
        // close the connection under a client that may already be reusing it.
        let cut = axum::body::HttpBody::size_hint(&inner).exact().is_none();
        Body::new(Watched {
            inner,
            ended,
            cut,
            _hold: hold,
        })
    })
}

/// `429` with `why`.
fn too_many(why: String) -> Response {
    (StatusCode::TOO_MANY_REQUESTS, why).into_response()
}

/// `503`: the relay's `--max-connections` is reached.
fn at_capacity() -> Response {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        "relay is at its connection limit, try again later\n",
    )
        .into_response()
}

/// `404` for an unknown, expired, ended or foreign session: the host initializes a new one.
fn session_not_found() -> Response {
    (
        StatusCode::NOT_FOUND,
        "Not Found: no such MCP session (it ended, expired, lives on another relay node, or \
         belongs to another user); initialize a new one\n",
    )
        .into_response()
}

/// `401` with the `WWW-Authenticate` challenge the MCP authorization spec asks for.
fn unauthorized(base: &str, had_token: bool, why: &str) -> Response {
    let mut challenge = format!("Bearer resource_metadata=\"{base}{METADATA_PATH}\"");
    if had_token {
        challenge.push_str(", error=\"invalid_token\"");
    }
    let mut response = (
        StatusCode::UNAUTHORIZED,
        if had_token {
            format!("the bearer token was refused: {why}\n")
        } else {
            "an MCP access token is required: send Authorization: Bearer <token> (mint one with \
             `mcp-relay token --role mcp`)\n"
                .to_owned()
        },
    )
        .into_response();
    if let Ok(value) = HeaderValue::from_str(&challenge) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

/// The relay's public base URL: `--public-url`, else the request's `Host` with the scheme the
/// relay (or the proxy in front of it, `X-Forwarded-Proto`) serves.
pub fn base_url(state: &RelayState, headers: &HeaderMap) -> String {
    if let Some(url) = &state.config.public_url {
        return url.trim().trim_end_matches('/').to_owned();
    }
    let tls = state.config.tls_cert.is_some();
    let scheme = headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.split(',')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
        .filter(|v| v == "http" || v == "https")
        .unwrap_or_else(|| if tls { "https" } else { "http" }.to_owned());
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .filter(|h| {
            !h.is_empty()
                && h.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b".-:[]".contains(&b))
        })
        .map(str::to_owned)
        .unwrap_or_else(|| state.config.listen.to_string());
    format!("{scheme}://{host}")
}

/// `GET /.well-known/oauth-protected-resource` (RFC 9728): what the relay is as a protected
/// resource, and which authorization servers issue its tokens.
pub fn protected_resource_metadata(state: &RelayState, headers: &HeaderMap) -> Response {
    let base = base_url(state, headers);
    let body = serde_json::json!({
        "resource": format!("{base}/mcp"),
        "authorization_servers": state.config.oauth_issuers,
        "bearer_methods_supported": ["header"],
        "resource_name": "mcp-relay browser tools",
    });
    (
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bearer_token_is_read_case_insensitively_and_never_empty() {
        let mut headers = HeaderMap::new();
        assert_eq!(bearer(&headers), None);
        headers.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("bearer abc"),
        );
        assert_eq!(bearer(&headers), Some("abc"));
        headers.insert(header::AUTHORIZATION, HeaderValue::from_static("Basic abc"));
        assert_eq!(bearer(&headers), None);
        headers.insert(header::AUTHORIZATION, HeaderValue::from_static("Bearer  "));
        assert_eq!(bearer(&headers), None);
    }

    #[test]
    fn the_tools_query_parameter_takes_the_bridges_modes() {
        assert_eq!(query_tools(None), Ok(None));
        assert_eq!(
            query_tools(Some("x=1&tools=proxy")),
            Ok(Some(Exposure::Proxy))
        );
        assert!(query_tools(Some("tools=everything")).is_err());
    }

    #[test]
    fn dynamic_registration_is_bounded_and_needs_retrieval() {
        assert_eq!(query_dynamic(None, Exposure::Retrieve), Ok(None));
        assert_eq!(
            query_dynamic(Some("tools=retrieve&dynamic=3"), Exposure::Retrieve),
            Ok(Some(3))
        );
        assert!(query_dynamic(Some("dynamic=3"), Exposure::Direct).is_err());
        assert!(query_dynamic(Some("dynamic=0"), Exposure::All).is_err());
        assert!(query_dynamic(Some("dynamic=51"), Exposure::All).is_err());
    }
}
