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
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, Method, Request, StatusCode};
use axum::response::{IntoResponse, Response};
use futures_util::future::BoxFuture;
use mcp_relay_bridge::hosted::{self, AuditFile, HostedSession, TokenRefresh};
use mcp_relay_bridge::{BrowserServer, Dialer, Exposure, FramePipe};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use crate::auth::Role;
use crate::limits::SocketSlot;
use crate::mcp_session::McpSession;
use crate::state::RelayState;
use crate::transport::ConnHandle;

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

/// The session's entry in [`McpHttp::owners`], removed when the session's server is dropped
/// (idle expiry, DELETE, shutdown), whatever ended it.
struct Ticket {
    owners: Arc<Owners>,
    id: Mutex<Option<String>>,
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if let Some(id) = self.id.lock().unwrap().take() {
            self.owners.0.lock().unwrap().remove(&id);
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
}

/// Which user each live session belongs to.
#[derive(Default)]
struct Owners(Mutex<HashMap<String, Owner>>);

impl Owners {
    fn owner(&self, id: &str) -> Option<Owner> {
        self.0.lock().unwrap().get(id).cloned()
    }

    fn count(&self, user_id: &str) -> (usize, usize) {
        let owners = self.0.lock().unwrap();
        let mine = owners.values().filter(|o| o.user_id == user_id).count();
        (mine, owners.len())
    }
}

/// The Streamable HTTP endpoint: rmcp's service, and the bookkeeping around it.
pub struct McpHttp {
    service: StreamableHttpService<BrowserServer, LocalSessionManager>,
    owners: Arc<Owners>,
    default_tools: Exposure,
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
        // Resumption with Last-Event-ID replays from the relay's own store (src/mcp_events.rs):
        // rmcp's session cache alone forgets a call's stream once its answer is sent.
        let mut sessions = LocalSessionManager::default()
            .with_event_store(Arc::new(crate::mcp_events::RecentEvents::default()));
        sessions.session_config.keep_alive = Some(state.config.mcp_session_idle);
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
                });
                let config = &factory_state.config;
                let (server, refresh) = hosted::server(HostedSession {
                    token: seed.token.clone(),
                    user_id: seed.user_id.clone(),
                    tools: seed.tools,
                    dynamic: seed.dynamic,
                    dialer: Arc::new(InProcess(Arc::clone(&factory_state))),
                    describe: seed.describe.clone(),
                    // The relay's own timeout answers first; this only guards against a lost
                    // answer.
                    request_timeout: config.request_timeout + std::time::Duration::from_secs(15),
                    approval_wait: std::time::Duration::from_secs(20),
                    max_message_bytes: config.max_message_bytes,
                    audit: audit.clone(),
                    keep: Some(Box::new(Arc::clone(&ticket))),
                });
                *seed.ticket.lock().unwrap() = Some((ticket, refresh));
                Ok(server)
            },
            Arc::new(sessions),
            config,
        );
        Ok(McpHttp {
            service,
            owners,
            default_tools,
        })
    }

    /// The endpoint's figures for `/metrics`. (Each session's in-process relay client also
    /// counts in `mcp_relay_sockets{role="mcp"}` while it is connected.)
    pub fn render_metrics(&self) -> String {
        let sessions = self.owners.0.lock().unwrap().len();
        format!(
            "# HELP mcp_relay_http_mcp_sessions Live MCP sessions on the Streamable HTTP endpoint.\n\
             # TYPE mcp_relay_http_mcp_sessions gauge\n\
             mcp_relay_http_mcp_sessions {sessions}\n"
        )
    }

    /// Serves one non-WebSocket request to `/mcp`.
    pub async fn handle(
        &self,
        state: &Arc<RelayState>,
        conn: &ConnHandle,
        request: Request<Body>,
    ) -> Response {
        let headers = request.headers();
        if !crate::server::origin_allowed(&state.config, headers, false) {
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
        conn.authenticated_http();
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
        match self.owners.owner(&id) {
            Some(owner) if owner.user_id == identity.user_id => {
                // The host may have refreshed its token; the session's relay client follows
                // (an older token still in flight on another request does not undo that).
                let before = owner
                    .expires_at
                    .fetch_max(identity.expires_at, std::sync::atomic::Ordering::AcqRel);
                if identity.expires_at > before {
                    owner.refresh.refresh(token.unwrap_or_default());
                }
            }
            // Another user's session looks exactly like one that does not exist.
            Some(_) => {
                tracing::info!("refused a request for another user's HTTP MCP session");
                return session_not_found();
            }
            None => return session_not_found(),
        }
        let ending = request.method() == Method::DELETE;
        let mut response = self.forward(request, None).await;
        // The session is ended by the time rmcp answers its DELETE, with 202; the official
        // SDKs expect 200 (Python's client logs "Session termination failed: 202" otherwise).
        if ending && response.status() == StatusCode::ACCEPTED {
            *response.status_mut() = StatusCode::OK;
        }
        response
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
        let (mine, all) = self.owners.count(&identity.user_id);
        if mine >= state.config.max_mcp_clients_per_user {
            return (
                StatusCode::TOO_MANY_REQUESTS,
                format!(
                    "this user already has {mine} MCP sessions (--max-mcp-clients-per-user); end \
                     one (DELETE) or let it expire\n"
                ),
            )
                .into_response();
        }
        if all >= state.config.max_connections {
            return (
                StatusCode::SERVICE_UNAVAILABLE,
                "relay is at its connection limit, try again later\n",
            )
                .into_response();
        }
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
                user_id: identity.user_id,
                refresh,
                expires_at: Arc::new(identity.expires_at.into()),
            };
            self.owners.0.lock().unwrap().insert(id.clone(), owner);
            *ticket.id.lock().unwrap() = Some(id);
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
