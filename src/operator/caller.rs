//! Who is calling the admin surface, and how a request proves it: one extractor for both doors.
//!
//! The admin API (`/api/v1/…`) is called with `Authorization: Bearer <token>`; the dashboard's
//! page calls the same routes under `/dashboard/api/…` with its session cookie, plus the
//! session's CSRF token and a same-site `Origin` on every state-changing request. The routes are
//! one router (`admin::routes`) mounted at both places, each mount marked with its [`Door`];
//! [`Caller`] reads the door and checks what that door requires, so the handlers are written
//! once and the scoping rules (`Caller::may_act_for`, `Caller::scope`) apply to both alike.

use std::sync::Arc;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::auth::Role;
use crate::operator::access::AccessError;
use crate::operator::session::{constant_time_eq, Session};
use crate::operator::Operator;

/// Which door a request of the admin surface came through: set by the mount, read by
/// [`Caller`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Door {
    /// `/api/v1`: a bearer token on every request.
    Bearer,
    /// `/dashboard/api`: the dashboard's session cookie (and CSRF token to change anything).
    Session,
}

/// An API error: its status and a message for the person at the terminal.
#[derive(Debug)]
pub struct ApiError(pub(crate) StatusCode, pub(crate) String);

impl ApiError {
    pub(crate) fn bad_request(message: impl Into<String>) -> Self {
        ApiError(StatusCode::BAD_REQUEST, message.into())
    }
    pub(crate) fn forbidden(message: impl Into<String>) -> Self {
        ApiError(StatusCode::FORBIDDEN, message.into())
    }
    pub(crate) fn not_found(message: impl Into<String>) -> Self {
        ApiError(StatusCode::NOT_FOUND, message.into())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = json_response(self.0, &json!({ "error": self.1 }));
        if self.0 == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                header::HeaderValue::from_static("Bearer"),
            );
        }
        response
    }
}

impl From<AccessError> for ApiError {
    fn from(error: AccessError) -> Self {
        match error {
            AccessError::NoSuchBrowser => ApiError::not_found("no such browser"),
            AccessError::TooManyRevocations => ApiError::bad_request(error.to_string()),
            AccessError::Store(e) => {
                tracing::error!("admin API: state store failed: {e:#}");
                ApiError(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "the relay's state store failed; see the relay's log".into(),
                )
            }
        }
    }
}

pub(crate) fn json_response(status: StatusCode, body: &serde_json::Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// Who is calling: from a Bearer token here, or from a dashboard session
/// (src/operator/dashboard/session.rs), so both are scoped by the same rules below.
pub struct Caller {
    pub(crate) user_id: String,
    pub(crate) admin: bool,
    /// The token names no role: it is accepted on the extension endpoint too, so it may not
    /// approve a browser (the browser it authenticates would approve itself).
    pub(crate) role_less: bool,
}

impl Caller {
    /// `Err(403)` unless the caller may act on `owner`'s things.
    pub(crate) fn may_act_for(&self, owner: &str, what: &str) -> Result<(), ApiError> {
        if self.admin || self.user_id == owner {
            Ok(())
        } else {
            Err(ApiError::forbidden(format!(
                "this {what} belongs to another user; only its user or an admin token may act on it"
            )))
        }
    }

    /// The user filter for listings: the caller's own user unless admin.
    pub(crate) fn scope(&self) -> Option<&str> {
        (!self.admin).then_some(self.user_id.as_str())
    }
}

impl FromRequestParts<Arc<Operator>> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &Arc<Operator>,
    ) -> Result<Caller, ApiError> {
        match parts.extensions.get::<Door>().copied() {
            Some(Door::Session) => {
                let reads = matches!(parts.method, Method::GET | Method::HEAD);
                let (_, session) = if reads {
                    signed_in(state, &parts.headers)?
                } else {
                    may_change(state, &parts.headers)?
                };
                Ok(session_caller(&session))
            }
            Some(Door::Bearer) | None => bearer_caller(state, &parts.headers),
        }
    }
}

fn bearer_caller(state: &Operator, headers: &HeaderMap) -> Result<Caller, ApiError> {
    let unauthorized = |m: &str| ApiError(StatusCode::UNAUTHORIZED, m.to_owned());
    let value = headers
        .get(header::AUTHORIZATION)
        .ok_or_else(|| unauthorized("missing Authorization: Bearer <token>"))?
        .to_str()
        .map_err(|_| unauthorized("malformed Authorization header"))?;
    let token = value
        .strip_prefix("Bearer ")
        .or_else(|| value.strip_prefix("bearer "))
        .ok_or_else(|| unauthorized("the Authorization header must be `Bearer <token>`"))?
        .trim();
    let identity = state
        .verify_any(token, "admin or mcp")
        .map_err(|e| unauthorized(&format!("invalid token: {e}")))?;
    match identity.role {
        Some(Role::Extension) => Err(ApiError::forbidden(
            "extension tokens cannot use the admin API (a browser must not approve itself); use \
             an MCP token of the same user or an admin token",
        )),
        role => Ok(Caller {
            user_id: identity.user_id,
            admin: role == Some(Role::Admin),
            role_less: role.is_none(),
        }),
    }
}

fn session_caller(session: &Session) -> Caller {
    Caller {
        user_id: session.identity.user_id.clone(),
        admin: session.admin,
        role_less: session.identity.role.is_none(),
    }
}

/// The cookie's name over TLS: `__Host-` makes browsers insist on `Secure`, `Path=/` and no
/// `Domain`, so no sibling host can plant one.
pub(crate) const COOKIE_SECURE: &str = "__Host-mcp_relay_session";
/// Over plain HTTP (a local relay, or TLS ended by a proxy that does not say so).
pub(crate) const COOKIE_PLAIN: &str = "mcp_relay_session";

pub(crate) fn error(status: StatusCode, message: &str) -> ApiError {
    ApiError(status, message.to_owned())
}

/// Whether the cookie should be `Secure`: the relay speaks TLS, or a proxy in front says the
/// browser's side was HTTPS.
pub(crate) fn secure(state: &Operator, headers: &HeaderMap) -> bool {
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
pub(crate) fn same_origin(headers: &HeaderMap) -> Result<(), ApiError> {
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
pub(crate) fn signed_in(
    state: &Operator,
    headers: &HeaderMap,
) -> Result<(String, Session), ApiError> {
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
pub(crate) fn may_change(
    state: &Operator,
    headers: &HeaderMap,
) -> Result<(String, Session), ApiError> {
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
