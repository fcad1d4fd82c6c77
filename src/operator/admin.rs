//! The admin API: JSON over HTTP on the relay's own listener, under `/api/v1/`, authenticated
//! with `Authorization: Bearer <token>` (docs/ADMIN.md has every request and answer). The same
//! handlers serve the dashboard under `/dashboard/api/` with its session cookie: who is calling
//! is the [`Caller`] extractor's business (`crate::operator::caller`), not the handlers'.
//!
//! Who sees what: a token of role `admin` sees and acts on every user's browsers, connections
//! and audit events; any other token (role `mcp`, or none) only on its own user's. Extension
//! tokens are refused outright: the threat approval answers is a stolen extension token
//! registering a rogue browser, and that token must not be able to approve it. Revoked tokens
//! are refused here as everywhere.
//!
//! Errors are `{"error": "…"}` with the status that says what kind: 400 a malformed request,
//! 401 no or a bad token, 403 someone else's thing (or an extension token), 404 no such thing,
//! 500 the state store failed.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::{delete, get, post, put};
use axum::Extension;
use axum::Router;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::operator::access::{AccessError, RemoteRevocation};
use crate::operator::caller::json_response;
pub use crate::operator::caller::{ApiError, Caller, Door};
use crate::operator::store::{AuditQuery, BrowserRecord};
use crate::operator::Operator;
use crate::routing::cluster::{AdminAnswer, AdminQuestion, AskingCaller};

/// Largest request body the API reads (its bodies are a few dozen bytes).
const MAX_BODY: usize = 16 * 1024;
/// Audit events one query returns by default, and at most.
pub const DEFAULT_AUDIT_LIMIT: usize = 100;
pub const MAX_AUDIT_LIMIT: usize = 1000;

/// The admin surface: one router, mounted twice (see `crate::operator::caller`): under
/// `/api/v1` for bearer tokens ([`api`]) and under `/dashboard/api` for the dashboard's
/// session (`crate::operator::dashboard::routes`).
pub fn surface() -> Router<Arc<Operator>> {
    Router::new()
        .route("/browsers", get(list_browsers))
        .route("/browsers/{id}/approve", post(approve_browser))
        .route("/browsers/{id}/revoke", post(revoke_browser))
        .route("/tokens/revoke", post(revoke_tokens))
        .route("/users/{user_id}/cutoff", put(set_cutoff))
        .route("/connections", get(list_connections))
        .route("/connections/{id}", delete(kick))
        .route("/audit", get(audit))
        .layer(DefaultBodyLimit::max(MAX_BODY))
}

/// `/api/v1/…`, each request with `Authorization: Bearer <token>`; merged into the relay's
/// router.
pub fn api() -> Router<Arc<Operator>> {
    Router::new().nest("/api/v1", surface().layer(Extension(Door::Bearer)))
}

fn ok(body: Value) -> Result<Response, ApiError> {
    Ok(json_response(StatusCode::OK, &body))
}

/// A moment as people type it: seconds since the epoch, RFC 3339 (`2026-11-24T05:00:00Z`),
/// `now`, or a duration meaning that long ago (`15m`, `2d`). Returns milliseconds.
pub fn parse_moment(text: &str) -> Result<i64, String> {
    let text = text.trim();
    let now = crate::operator::audit::millis(std::time::SystemTime::now());
    if text == "now" {
        return Ok(now);
    }
    if let Ok(secs) = text.parse::<i64>() {
        return Ok(secs.saturating_mul(1000));
    }
    if let Ok(at) = chrono::DateTime::parse_from_rfc3339(text) {
        return Ok(at.timestamp_millis());
    }
    if let Ok(ago) = crate::config::parse_duration(text) {
        return Ok(now - ago.as_millis() as i64);
    }
    Err(format!(
        "{text:?} is not a moment: use seconds since the epoch, RFC 3339 \
         (2026-11-24T05:00:00Z), `now`, or how long ago (15m, 2d)"
    ))
}

fn rfc3339_secs(secs: i64) -> String {
    rfc3339_millis(secs.saturating_mul(1000))
}

fn rfc3339_millis(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
        .unwrap_or_default()
}

fn browser_row(state: &Operator, b: &BrowserRecord) -> Value {
    json!({
        "id": b.id,
        "user_id": b.user_id,
        "name": b.name,
        "approved": b.approved,
        "revoked": b.revoked,
        "connected": state.hub.extension_online_anywhere(&b.user_id, &b.id),
        "first_seen": rfc3339_secs(b.first_seen),
        "last_seen": rfc3339_secs(b.last_seen),
        "version": b.version,
    })
}

/// Propagates a revocation to the other cluster nodes, when clustered.
fn propagate(state: &Operator, revocation: RemoteRevocation) {
    if let Some(cluster) = state.hub.cluster() {
        cluster.revoke(&revocation);
    }
}

fn record(
    state: &Operator,
    kind: &str,
    caller: &Caller,
    owner: &str,
    ext: Option<&str>,
    detail: String,
) {
    if let Some(audit) = &state.audit {
        let by = if caller.admin {
            format!("by admin {}", caller.user_id)
        } else {
            format!("by {}", caller.user_id)
        };
        audit.control(
            crate::routing::hub::Control {
                kind,
                user_id: owner,
                mcp_client_id: None,
                connection_id: None,
                extension_id: ext,
                code: 0,
            },
            Some(format!("{detail} {by}").trim().to_owned()),
        );
    }
}

/// Runs a change that writes through to the store as a task of its own, and awaits it: a
/// client that hangs up while its change is being written must not cancel the write halfway
/// (the mirror already holds the change, so the store must get it too).
async fn detached<T: Send + 'static>(
    change: impl std::future::Future<Output = Result<T, AccessError>> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::spawn(change)
        .await
        .map_err(|_| ApiError(StatusCode::INTERNAL_SERVER_ERROR, "internal error".into()))?
        .map_err(ApiError::from)
}

async fn list_browsers(
    State(state): State<Arc<Operator>>,
    caller: Caller,
) -> Result<Response, ApiError> {
    let (state, caller) = (&state, &caller);
    let rows: Vec<Value> = state
        .access
        .browsers(caller.scope())
        .iter()
        .map(|b| browser_row(state, b))
        .collect();
    ok(json!({ "browsers": rows }))
}

/// The browser `id` names, after checking the caller may act on it.
fn owned_browser(state: &Operator, caller: &Caller, id: &str) -> Result<BrowserRecord, ApiError> {
    let browser = state
        .access
        .browser(id)
        .ok_or_else(|| ApiError::not_found(format!("no browser {id:?}")))?;
    caller.may_act_for(&browser.user_id, "browser")?;
    Ok(browser)
}

async fn approve_browser(
    State(state): State<Arc<Operator>>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let (state, caller) = (&state, &caller);
    if caller.role_less {
        return Err(ApiError::forbidden(
            "a token without a role also authenticates browsers, so it may not approve one (a \
             browser must not approve itself); use a token with role mcp of the same user, or an \
             admin token",
        ));
    }
    let browser = owned_browser(state, caller, &id)?;
    let access = Arc::clone(&state.access);
    let approved = detached({
        let id = id.clone();
        async move { access.approve(&id).await }
    })
    .await?;
    record(
        state,
        "approve",
        caller,
        &browser.user_id,
        Some(&id),
        String::new(),
    );
    ok(json!({ "browser": browser_row(state, &approved) }))
}

async fn revoke_browser(
    State(state): State<Arc<Operator>>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let (state, caller) = (&state, &caller);
    let browser = owned_browser(state, caller, &id)?;
    let access = Arc::clone(&state.access);
    let closed = detached({
        let id = id.clone();
        async move { access.revoke_browser(&id).await }
    })
    .await?;
    propagate(
        state,
        RemoteRevocation::Browser {
            extension_id: id.clone(),
            user_id: browser.user_id.clone(),
        },
    );
    record(
        state,
        "revoke_browser",
        caller,
        &browser.user_id,
        Some(&id),
        format!("closed {closed} sockets"),
    );
    ok(json!({ "revoked": true, "closed_sockets": closed }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RevokeTokens {
    #[serde(default)]
    jti: Option<String>,
    #[serde(default)]
    user_id: Option<String>,
    /// Seconds since the epoch or RFC 3339 (or `now`, or a duration ago).
    #[serde(default)]
    issued_before: Option<Value>,
}

/// `PUT /api/v1/users/{user_id}/cutoff` with `{"issued_before": <seconds or RFC 3339>}` or
/// `{"issued_before": null}`: an admin sets a user's cutoff exactly (clamped to now, so it may
/// lower one) or removes it. Only an admin: a user's own tokens may only raise it (`POST
/// /api/v1/tokens/revoke`).
async fn set_cutoff(
    State(state): State<Arc<Operator>>,
    caller: Caller,
    Path(user_id): Path<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    if !caller.admin {
        return Err(ApiError::forbidden(
            "only an admin token may lower or remove a user's cutoff",
        ));
    }
    let request: Value = serde_json::from_slice(&body)
        .map_err(|e| ApiError::bad_request(format!("the body must be JSON: {e}")))?;
    let before_secs = match request.get("issued_before") {
        Some(Value::Null) => None,
        Some(Value::Number(n)) => Some(
            n.as_i64()
                .ok_or_else(|| ApiError::bad_request("issued_before must be whole seconds"))?,
        ),
        Some(Value::String(text)) => {
            Some((parse_moment(text).map_err(ApiError::bad_request)? + 999).div_euclid(1000))
        }
        _ => {
            return Err(ApiError::bad_request(
                "give {\"issued_before\": <seconds or RFC 3339>} or {\"issued_before\": null}",
            ))
        }
    }
    .map(|b| b.min(crate::operator::access::latest_cutoff()));
    let access = Arc::clone(&state.access);
    let closed = detached({
        let user_id = user_id.clone();
        async move { access.set_cutoff(&user_id, before_secs).await }
    })
    .await?;
    record(
        state.as_ref(),
        "set_cutoff",
        &caller,
        &user_id,
        None,
        match before_secs {
            Some(b) => format!("issued before {}", rfc3339_secs(b)),
            None => "removed".to_owned(),
        },
    );
    ok(json!({
        "user_id": user_id,
        "issued_before": before_secs.map(rfc3339_secs),
        "closed_sockets": closed,
    }))
}

async fn revoke_tokens(
    State(state): State<Arc<Operator>>,
    caller: Caller,
    body: Bytes,
) -> Result<Response, ApiError> {
    let (state, caller) = (&state, &caller);
    let request: RevokeTokens = serde_json::from_slice(&body).map_err(|e| {
        ApiError::bad_request(format!(
            "the body must be {{\"jti\": \"…\"}} or {{\"user_id\": \"…\", \"issued_before\": …}}: {e}"
        ))
    })?;
    let access = Arc::clone(&state.access);
    match (request.jti, request.user_id, request.issued_before) {
        (Some(jti), user_id, None) => {
            if jti.is_empty() || jti.len() > 256 {
                return Err(ApiError::bad_request("jti must be 1 to 256 bytes"));
            }
            // A user's revocation only ever matches that user's tokens; an admin's matches
            // whoever holds the token, or the user it names.
            let scope = match (caller.admin, user_id) {
                (true, named) => named,
                (false, Some(named)) => {
                    caller.may_act_for(&named, "token")?;
                    Some(named)
                }
                (false, None) => Some(caller.user_id.clone()),
            };
            let closed = detached({
                let (jti, scope) = (jti.clone(), scope.clone());
                async move { access.revoke_token(&jti, scope.as_deref()).await }
            })
            .await?;
            propagate(
                state,
                RemoteRevocation::Token {
                    jti: jti.clone(),
                    user_id: scope.clone(),
                },
            );
            record(
                state,
                "revoke_token",
                caller,
                scope.as_deref().unwrap_or(&caller.user_id),
                None,
                format!("jti {}", crate::redact::clip(&jti, 64)),
            );
            ok(json!({ "revoked": true, "jti": jti, "closed_sockets": closed }))
        }
        (None, Some(user_id), Some(before)) => {
            caller.may_act_for(&user_id, "user's token")?;
            let before_ms = match &before {
                Value::Number(n) => n
                    .as_i64()
                    .map(|s| s.saturating_mul(1000))
                    .ok_or_else(|| ApiError::bad_request("issued_before must be whole seconds"))?,
                Value::String(text) => parse_moment(text).map_err(ApiError::bad_request)?,
                _ => {
                    return Err(ApiError::bad_request(
                        "issued_before must be a number or a string",
                    ))
                }
            };
            // Tokens carry `iat` in whole seconds: a cutoff of 12.3 s refuses iat 12. Never in
            // the future: a cutoff of 2100 would refuse every token the user gets until then.
            let before_secs = (before_ms + 999)
                .div_euclid(1000)
                .min(crate::operator::access::latest_cutoff());
            let closed = detached({
                let user_id = user_id.clone();
                async move { access.revoke_user(&user_id, before_secs).await }
            })
            .await?;
            propagate(
                state,
                RemoteRevocation::User {
                    user_id: user_id.clone(),
                    issued_before: before_secs,
                },
            );
            record(
                state,
                "revoke_user",
                caller,
                &user_id,
                None,
                format!("issued before {}", rfc3339_secs(before_secs)),
            );
            ok(json!({
                "revoked": true,
                "user_id": user_id,
                "issued_before": rfc3339_secs(before_secs),
                "closed_sockets": closed,
            }))
        }
        _ => Err(ApiError::bad_request(
            "give either {\"jti\": \"…\"} or {\"user_id\": \"…\", \"issued_before\": …}",
        )),
    }
}

async fn list_connections(
    State(state): State<Arc<Operator>>,
    caller: Caller,
) -> Result<Response, ApiError> {
    let (state, caller) = (&state, &caller);
    let mut rows = local_connections(state, caller.scope());
    // In a cluster, every node lists the connections whose MCP client it holds.
    if let Some(cluster) = state.hub.cluster() {
        let question = AdminQuestion::Connections {
            user_id: caller.scope().map(str::to_owned),
        };
        for answer in cluster.ask_others(&question).await {
            if let AdminAnswer::Connections { connections } = answer {
                rows.extend(connections);
            }
        }
    }
    ok(json!({ "connections": rows }))
}

/// This node's connections (`user_id`'s only, when given), each with the node it is on.
fn local_connections(state: &Operator, user_id: Option<&str>) -> Vec<Value> {
    let node = state.hub.cluster().map(|c| c.node_id().to_owned());
    state
        .hub
        .list_connections(user_id)
        .into_iter()
        .map(|row| {
            let mut row = serde_json::to_value(row).unwrap_or_default();
            if let (Some(node), Some(fields)) = (&node, row.as_object_mut()) {
                fields.insert("node".into(), json!(node));
            }
            row
        })
        .collect()
}

async fn kick(
    State(state): State<Arc<Operator>>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let (state, caller) = (&state, &caller);
    let here = kick_here(state, caller, &id);
    let Some(cluster) = state.hub.cluster() else {
        return here.and_then(ok);
    };
    if !matches!(&here, Err(ApiError(StatusCode::NOT_FOUND, _))) {
        return here.and_then(ok);
    }
    // Not held here: the node holding the connection's client kicks it, with the same checks.
    let question = AdminQuestion::Kick {
        connection_id: id.clone(),
        caller: AskingCaller {
            user_id: caller.user_id.clone(),
            admin: caller.admin,
        },
    };
    for answer in cluster.ask_others(&question).await {
        match answer {
            AdminAnswer::Kicked { body } => return ok(body),
            AdminAnswer::Forbidden { error } => return Err(ApiError::forbidden(error)),
            _ => {}
        }
    }
    here.and_then(ok)
}

/// Kicks a connection whose MCP client is on this node, if the caller may.
fn kick_here(state: &Operator, caller: &Caller, id: &str) -> Result<Value, ApiError> {
    let not_found = || ApiError::not_found(format!("no connection {id:?} on this relay"));
    let owner = state.hub.connection_user(id).ok_or_else(not_found)?;
    caller.may_act_for(&owner, "connection")?;
    let tag = state.hub.connection_tag(id);
    if !state.hub.kick(id) {
        return Err(not_found());
    }
    if let Some(audit) = &state.audit {
        audit.control(
            crate::routing::hub::Control {
                kind: "kick",
                user_id: &owner,
                mcp_client_id: tag.as_ref().map(|t| t.mcp_client_id.as_str()),
                connection_id: Some(id),
                extension_id: tag.as_ref().map(|t| t.extension_id.as_str()),
                code: 0,
            },
            Some(format!("by {}", caller.user_id)),
        );
    }
    Ok(json!({ "kicked": true, "connection_id": id }))
}

/// Answers another node's admin question (`Cluster::ask_others`): this node's connections,
/// or kicking one of them for a caller the asking node authenticated.
pub fn answer_node(state: &Operator, question: AdminQuestion) -> AdminAnswer {
    match question {
        AdminQuestion::Connections { user_id } => AdminAnswer::Connections {
            connections: local_connections(state, user_id.as_deref()),
        },
        AdminQuestion::Kick {
            connection_id,
            caller,
        } => {
            let caller = Caller {
                user_id: caller.user_id,
                admin: caller.admin,
                role_less: false,
            };
            match kick_here(state, &caller, &connection_id) {
                Ok(body) => AdminAnswer::Kicked { body },
                Err(ApiError(StatusCode::FORBIDDEN, error)) => AdminAnswer::Forbidden { error },
                Err(_) => AdminAnswer::NotHere,
            }
        }
    }
}

#[derive(Deserialize)]
pub(crate) struct AuditParams {
    user_id: Option<String>,
    browser: Option<String>,
    method: Option<String>,
    since: Option<String>,
    until: Option<String>,
    limit: Option<String>,
}

async fn audit(
    State(state): State<Arc<Operator>>,
    caller: Caller,
    Query(params): Query<AuditParams>,
) -> Result<Response, ApiError> {
    let (state, caller) = (&state, &caller);
    let nonempty = |v: Option<String>| v.filter(|s| !s.is_empty());
    let user_id = match (nonempty(params.user_id), caller.admin) {
        (Some(user), false) => {
            caller.may_act_for(&user, "audit trail")?;
            Some(user)
        }
        (user, true) => user,
        (None, false) => Some(caller.user_id.clone()),
    };
    let moment = |v: Option<String>| {
        nonempty(v)
            .map(|t| parse_moment(&t))
            .transpose()
            .map_err(ApiError::bad_request)
    };
    let limit = match nonempty(params.limit) {
        Some(text) => text
            .parse::<usize>()
            .map_err(|_| ApiError::bad_request("limit must be a whole number"))?,
        None => DEFAULT_AUDIT_LIMIT,
    }
    .clamp(1, MAX_AUDIT_LIMIT);
    let query = AuditQuery {
        user_id,
        browser: nonempty(params.browser),
        method: nonempty(params.method),
        since_ms: moment(params.since)?,
        until_ms: moment(params.until)?,
        limit,
    };
    let store = Arc::clone(state.access.store());
    let records = store
        .query_audit(&query)
        .await
        .map_err(|e| ApiError::from(AccessError::Store(e)))?;
    let events: Vec<Value> = records
        .into_iter()
        .map(|r| {
            let mut value = serde_json::to_value(&r).unwrap_or(Value::Null);
            value["at"] = rfc3339_millis(r.at_ms).into();
            value
        })
        .collect();
    ok(json!({ "events": events }))
}
