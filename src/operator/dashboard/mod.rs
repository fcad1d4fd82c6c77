//! `/dashboard`: the operator's page, served by the relay itself (docs/ADMIN.md, "Dashboard").
//!
//! Static HTML, CSS and JS compiled into the binary: nothing from a CDN, no build step, and a
//! strict `Content-Security-Policy` (no inline script or style) on every answer. Sign-in takes
//! a pasted token once, checks it exactly as the admin API does, and answers with a session
//! cookie; the token is never stored, echoed or logged. Every state-changing request needs the
//! session's CSRF token in `X-CSRF-Token` and an `Origin` (when sent) of the relay itself.
//!
//! The data and the actions are the admin API's own router, mounted under `/dashboard/api`
//! with the session's user as its caller (`crate::operator::caller`), so the scoping rules
//! live in one place.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Extension;
use axum::Router;
use serde::Deserialize;
use serde_json::json;

use crate::auth::Role;
use crate::operator::admin::{self, ApiError, Door};
use crate::operator::caller::{
    error, may_change, same_origin, secure, signed_in, COOKIE_PLAIN, COOKIE_SECURE,
};
use crate::operator::session::{self, OpenError, Session};
use crate::operator::Operator;

const INDEX_HTML: &str = include_str!("index.html");
const STYLE_CSS: &str = include_str!("dashboard.css");
const SCRIPT_JS: &str = include_str!("dashboard.js");

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
        .nest(
            "/dashboard/api",
            admin::surface().layer(Extension(Door::Session)),
        )
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
