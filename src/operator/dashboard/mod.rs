//! `/dashboard`: the operator's page, served by the relay itself (docs/ADMIN.md, "Dashboard").
//!
//! Static HTML, CSS and JS compiled into the binary: nothing from a CDN, no build step, and a
//! strict `Content-Security-Policy` (no inline script or style) on every answer. Sign-in takes
//! a pasted token once, checks it exactly as the admin API does, and answers with a session
//! cookie; the token is never stored, echoed or logged. Every state-changing request needs the
//! session's CSRF token in `X-CSRF-Token` and an `Origin` (when sent) of the relay itself.
//!
//! The data and the actions are the admin API's own functions (`crate::operator::admin::*_as`) called
//! with the session's user, so the scoping rules live in one place.

pub mod session;

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use axum::Router;
use serde::Deserialize;
use serde_json::json;

use crate::auth::Role;
use crate::operator::admin::{self, ApiError, AuditParams, Caller};
use crate::operator::Operator;
use session::{constant_time_eq, OpenError, Session};

const INDEX_HTML: &str = include_str!("index.html");
const STYLE_CSS: &str = include_str!("dashboard.css");
const SCRIPT_JS: &str = include_str!("dashboard.js");

/// The cookie's name over TLS: `__Host-` makes browsers insist on `Secure`, `Path=/` and no
/// `Domain`, so no sibling host can plant one.
const COOKIE_SECURE: &str = "__Host-mcp_relay_session";
/// Over plain HTTP (a local relay, or TLS ended by a proxy that does not say so).
const COOKIE_PLAIN: &str = "mcp_relay_session";

const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; \
                   connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; \
                   frame-ancestors 'none'";

/// Sign-in bodies are a token and a few bytes of JSON.
const MAX_BODY: usize = 16 * 1024;

/// The dashboard's routes, merged into the relay's router.
pub fn routes() -> Router<Arc<Operator>> {
    Router::new()
        .route("/dashboard", get(index))
        .route("/dashboard/", get(index))
        .route("/dashboard/dashboard.css", get(style))
        .route("/dashboard/dashboard.js", get(script))
        .route(
            "/dashboard/session",
            get(whoami).post(sign_in).delete(sign_out),
        )
        .route("/dashboard/api/browsers", get(browsers))
        .route("/dashboard/api/browsers/{id}/approve", post(approve))
        .route("/dashboard/api/browsers/{id}/revoke", post(revoke_browser))
        .route("/dashboard/api/tokens/revoke", post(revoke_tokens))
        .route("/dashboard/api/connections", get(connections))
        .route("/dashboard/api/connections/{id}", delete(kick))
        .route("/dashboard/api/audit", get(audit))
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .layer(axum::middleware::map_response(security_headers))
}

/// Headers every dashboard answer carries, pages and JSON alike.
async fn security_headers(mut response: Response) -> Response {
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    ([(header::CONTENT_TYPE, content_type)], body).into_response()
}

async fn index() -> Response {
    asset("text/html; charset=utf-8", INDEX_HTML)
}
async fn style() -> Response {
    asset("text/css; charset=utf-8", STYLE_CSS)
}
async fn script() -> Response {
    asset("text/javascript; charset=utf-8", SCRIPT_JS)
}

fn error(status: StatusCode, message: &str) -> ApiError {
    ApiError(status, message.to_owned())
}

/// Whether the cookie should be `Secure`: the relay speaks TLS, or a proxy in front says the
/// browser's side was HTTPS.
fn secure(state: &Operator, headers: &HeaderMap) -> bool {
    state.config.tls_cert.is_some()
        || headers
            .get("x-forwarded-proto")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("https"))
}

/// The session id from the `Cookie` header, if any: under TLS only the `__Host-` cookie (a
/// plain one may have been planted by a sibling domain or over plain HTTP, and must not win by
/// coming first), without TLS only the plain one.
fn session_id(headers: &HeaderMap, secure: bool) -> Option<String> {
    let wanted = if secure { COOKIE_SECURE } else { COOKIE_PLAIN };
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == wanted)
        .map(|(_, value)| value.trim().to_owned())
        .filter(|v| !v.is_empty() && v.len() <= 128)
}

/// Refuses a request a page of another site sent: `Origin` (browsers send it with every POST
/// and DELETE) must name this relay's own host, and `Sec-Fetch-Site` must not say cross-site.
fn same_origin(headers: &HeaderMap) -> Result<(), ApiError> {
    let forbidden = || {
        error(
            StatusCode::FORBIDDEN,
            "this request came from another site's page; the dashboard acts only for itself",
        )
    };
    if let Some(site) = headers.get("sec-fetch-site") {
        if site.as_bytes() == b"cross-site" || site.as_bytes() == b"same-site" {
            return Err(forbidden());
        }
    }
    let Some(origin) = headers.get(header::ORIGIN) else {
        return Ok(());
    };
    let origin = origin.to_str().map_err(|_| forbidden())?.trim();
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .ok_or_else(forbidden)?
        .trim();
    let authority = origin
        .strip_prefix("https://")
        .or_else(|| origin.strip_prefix("http://"))
        .ok_or_else(forbidden)?;
    if authority.eq_ignore_ascii_case(host) {
        Ok(())
    } else {
        Err(forbidden())
    }
}

/// The signed-in session, or 401.
fn signed_in(state: &Operator, headers: &HeaderMap) -> Result<(String, Session), ApiError> {
    let id = session_id(headers, secure(state, headers)).ok_or_else(|| {
        error(
            StatusCode::UNAUTHORIZED,
            "not signed in: paste a token on the dashboard",
        )
    })?;
    let session = state.dashboard.get(&id, &state.access).ok_or_else(|| {
        error(
            StatusCode::UNAUTHORIZED,
            "the session ended (signed out, idle, expired or its token was revoked): sign in again",
        )
    })?;
    Ok((id, session))
}

/// For a state-changing request: the session (401 without), then the `Origin` and the CSRF
/// token (403 when either is wrong).
fn may_change(state: &Operator, headers: &HeaderMap) -> Result<(String, Session), ApiError> {
    same_origin(headers)?;
    let (id, session) = signed_in(state, headers)?;
    let sent = headers
        .get("x-csrf-token")
        .map(|v| v.as_bytes())
        .unwrap_or_default();
    if !constant_time_eq(sent, session.csrf.as_bytes()) {
        return Err(error(
            StatusCode::FORBIDDEN,
            "missing or wrong X-CSRF-Token: reload the dashboard",
        ));
    }
    Ok((id, session))
}

fn caller(session: &Session) -> Caller {
    Caller {
        user_id: session.identity.user_id.clone(),
        admin: session.admin,
        role_less: session.identity.role.is_none(),
    }
}

fn session_json(session: &Session) -> serde_json::Value {
    json!({
        "user_id": session.identity.user_id,
        "admin": session.admin,
        "csrf_token": session.csrf,
        "expires_at": session.identity.expires_at,
    })
}

fn json_ok(body: serde_json::Value) -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SignIn {
    token: String,
}

async fn sign_in(
    State(state): State<Arc<Operator>>,
    conn: Option<axum::Extension<crate::net::transport::ConnHandle>>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    same_origin(&headers)?;
    if !state.sign_in.allow(conn.and_then(|c| c.peer_ip())) {
        return Err(error(
            StatusCode::TOO_MANY_REQUESTS,
            "too many sign-in attempts from this address; wait a few seconds",
        ));
    }
    let request: SignIn = serde_json::from_slice(&body).map_err(|_| {
        error(
            StatusCode::BAD_REQUEST,
            "the body must be {\"token\": \"…\"}",
        )
    })?;
    // The admin API's checks: signature, pinned algorithm, `exp`, revocation.
    let identity = state
        .verify_any(request.token.trim(), "admin or mcp")
        .map_err(|e| error(StatusCode::UNAUTHORIZED, &format!("invalid token: {e}")))?;
    if identity.role == Some(Role::Extension) {
        return Err(error(
            StatusCode::FORBIDDEN,
            "extension tokens cannot sign in (a browser must not approve itself); use an MCP \
             token of the same user or an admin token",
        ));
    }
    let admin = identity.role == Some(Role::Admin);
    let user = identity.user_id.clone();
    let max_age = identity.expires_in().min(session::IDLE_TIMEOUT * 48);
    let (id, session) = state.dashboard.open(identity, admin).map_err(|e| match e {
        OpenError::Full => error(
            StatusCode::SERVICE_UNAVAILABLE,
            "too many dashboard sessions are open on this relay; try again later",
        ),
    })?;
    tracing::info!(user = %crate::redact::printable(&user), admin, "dashboard: signed in");
    let secure = secure(&state, &headers);
    let cookie = format!(
        "{}={id}; Path=/; HttpOnly; SameSite=Strict; Max-Age={}{}",
        if secure { COOKIE_SECURE } else { COOKIE_PLAIN },
        max_age.as_secs(),
        if secure { "; Secure" } else { "" }
    );
    let mut response = json_ok(session_json(&session));
    response.headers_mut().insert(
        header::SET_COOKIE,
        HeaderValue::from_str(&cookie).expect("a cookie of hex digits"),
    );
    Ok(response)
}

async fn whoami(
    State(state): State<Arc<Operator>>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let (_, session) = signed_in(&state, &headers)?;
    Ok(json_ok(session_json(&session)))
}

async fn sign_out(
    State(state): State<Arc<Operator>>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let (id, _) = may_change(&state, &headers)?;
    state.dashboard.close(&id);
    let mut response = json_ok(json!({ "signed_out": true }));
    for name in [COOKIE_SECURE, COOKIE_PLAIN] {
        let secure = if name == COOKIE_SECURE {
            "; Secure"
        } else {
            ""
        };
        response.headers_mut().append(
            header::SET_COOKIE,
            HeaderValue::from_str(&format!(
                "{name}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0{secure}"
            ))
            .expect("a static cookie"),
        );
    }
    Ok(response)
}

async fn browsers(
    State(state): State<Arc<Operator>>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let (_, session) = signed_in(&state, &headers)?;
    admin::list_browsers_as(&state, &caller(&session)).await
}

async fn approve(
    State(state): State<Arc<Operator>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let (_, session) = may_change(&state, &headers)?;
    admin::approve_browser_as(&state, &caller(&session), id).await
}

async fn revoke_browser(
    State(state): State<Arc<Operator>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let (_, session) = may_change(&state, &headers)?;
    admin::revoke_browser_as(&state, &caller(&session), id).await
}

async fn revoke_tokens(
    State(state): State<Arc<Operator>>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let (_, session) = may_change(&state, &headers)?;
    admin::revoke_tokens_as(&state, &caller(&session), body).await
}

async fn connections(
    State(state): State<Arc<Operator>>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let (_, session) = signed_in(&state, &headers)?;
    admin::list_connections_as(&state, &caller(&session)).await
}

async fn kick(
    State(state): State<Arc<Operator>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let (_, session) = may_change(&state, &headers)?;
    admin::kick_as(&state, &caller(&session), id).await
}

async fn audit(
    State(state): State<Arc<Operator>>,
    headers: HeaderMap,
    Query(params): Query<AuditParams>,
) -> Result<Response, ApiError> {
    let (_, session) = signed_in(&state, &headers)?;
    admin::audit_as(&state, &caller(&session), params).await
}
