//! One extension socket, from `authenticate` to close: [`ExtensionSession`] asks the browser to
//! authenticate, registers the socket in the hub, then routes the browser's answers and
//! notifications until the socket or its token ends. Leaving the hub is the drop of
//! [`ExtensionRegistration`], so no path out of the session (a panic included) leaves a socket
//! registered.
//!
//! The extension is the passive side: the relay asks it to `authenticate`, and from then on it
//! answers forwarded requests and sends notifications. Real extensions differ from the spec in
//! ways this session tolerates: they send notifications (`build_info`) before being asked to
//! authenticate, answer with `access_token` or `accessToken` plus a `client_id`, omit `jsonrpc`,
//! and send error replies without a `code`.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::ws::WebSocket;
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::sync::oneshot;

use crate::auth::Role;
use crate::frame::{self, Incoming};
use crate::metrics::SocketGauge;
use crate::net::limits::SocketSlot;
use crate::net::peer::{close_code, Inbound, Peer, PeerReader};
use crate::net::transport::ConnHandle;
use crate::protocol::RelayError;
use crate::redact;
use crate::routing::hub::ExtensionAuth;
use crate::state::{Authenticated, RelayState};

/// What an extension answers to `authenticate`. Both spellings of the token are in use.
/// Everything is read without building a JSON tree: before authentication nothing a client
/// sends may cost the relay more than its own size.
#[derive(Deserialize)]
struct AuthAnswer<'a> {
    #[serde(default)]
    name: Option<String>,
    #[serde(default, rename = "accessToken")]
    access_token_camel: Option<String>,
    #[serde(default)]
    access_token: Option<String>,
    #[serde(default)]
    client_id: Option<String>,
    #[serde(default, borrow)]
    version: Option<&'a RawValue>,
}

/// The one field read from notifications sent before authentication (`build_info`).
#[derive(Deserialize)]
struct Announcement<'a> {
    #[serde(default, borrow)]
    version: Option<&'a RawValue>,
}

/// The one field read from an error answer to `authenticate`.
#[derive(Deserialize)]
struct Refusal<'a> {
    #[serde(default, borrow)]
    message: Option<Cow<'a, str>>,
}

/// Removes a socket's pending `authenticate` when the socket authenticates or goes away.
struct PendingAuth {
    state: Arc<RelayState>,
    id: String,
}

impl PendingAuth {
    /// Records that the socket waits for the answer to its `authenticate` request `id`; an
    /// answer that arrives on another socket comes through `adopt`.
    fn wait(
        state: &Arc<RelayState>,
        id: String,
        adopt: oneshot::Sender<Authenticated>,
    ) -> PendingAuth {
        state.pending_auths.insert(id.clone(), adopt);
        PendingAuth {
            state: Arc::clone(state),
            id,
        }
    }
}

impl Drop for PendingAuth {
    fn drop(&mut self) {
        self.state.pending_auths.remove(&self.id);
    }
}

/// An extension socket registered in the hub. Dropping it tells the hub the socket closed,
/// however the session ends, so an early return or a panic cannot leave a dead socket
/// registered (where requests would be routed to it and the extension would stay listed).
pub struct ExtensionRegistration {
    state: Arc<RelayState>,
    extension_id: String,
    peer: Peer,
    /// Keeps the socket where a revocation of its token or browser finds it.
    _live: crate::state::LiveGuard,
}

impl Drop for ExtensionRegistration {
    fn drop(&mut self) {
        // The reason the session recorded when it closed the socket, if any.
        let reason = match self.peer.close_reason() {
            Some((_, reason)) if !reason.is_empty() => format!("Extension closed: {reason}"),
            _ => "Extension closed".to_owned(),
        };
        self.state
            .hub
            .extension_socket_closed(&self.extension_id, &self.peer, &reason);
        self.state.gate.browser_left(&self.extension_id);
    }
}

/// One extension socket and what it needs until it closes.
pub struct ExtensionSession {
    state: Arc<RelayState>,
    /// The writing side: `authenticate`, errors and the goodbye go here, and the hub routes
    /// requests to it.
    peer: Peer,
    /// The reading side, shared by the `authenticate` phase and the routing after it.
    reader: PeerReader,
    /// Its place under `--max-connections`, given back when the session ends.
    _slot: SocketSlot,
    /// Counts it in `mcp_relay_extension_sockets` while it lives.
    _gauge: SocketGauge,
}

impl ExtensionSession {
    /// Opens the session of an upgraded `/extension` socket.
    pub fn new(
        socket: WebSocket,
        state: Arc<RelayState>,
        slot: SocketSlot,
        conn: ConnHandle,
    ) -> ExtensionSession {
        let gauge = SocketGauge::open(&state.metrics, |m| &m.extension_sockets);
        let (peer, reader) = state.open_peer(socket, conn);
        ExtensionSession {
            state,
            peer,
            reader,
            _slot: slot,
            _gauge: gauge,
        }
    }

    /// Runs the socket to its end: `authenticate`, then the browser's traffic until the socket
    /// closes, its token expires or the relay shuts down.
    pub async fn run(mut self) {
        let auth_id = format!("proxy:{}", uuid::Uuid::new_v4().simple());
        let (adopt, adopted) = oneshot::channel();
        let waiting = PendingAuth::wait(&self.state, auth_id.clone(), adopt);
        self.peer.send(frame::request(
            &frame::json_string(&auth_id),
            "authenticate",
            Some(&RawValue::from_string("{}".into()).expect("valid JSON")),
        ));

        let Some((registration, expires_in)) = self.authenticate(&auth_id, adopted).await else {
            return;
        };
        drop(waiting);
        self.peer.authenticated();
        let extension_id = registration.extension_id.clone();
        tracing::info!(%extension_id, "extension authenticated");

        let expiry = tokio::time::sleep(expires_in + self.state.config.token_expiry_grace);
        tokio::pin!(expiry);
        loop {
            let inbound = tokio::select! {
                _ = &mut expiry => {
                    self.peer.close_after_flush(close_code::POLICY, "token expired");
                    break;
                }
                inbound = self.reader.next_text() => inbound,
            };
            let text = match inbound {
                Inbound::Text(text) => text,
                Inbound::NotText => {
                    self.peer.send(not_text_error());
                    continue;
                }
                Inbound::Shutdown => {
                    self.peer.say_goodbye();
                    break;
                }
                Inbound::Closed => break,
            };
            self.route(&text, &extension_id);
        }
        // An operator sees browsers come and go, not only come.
        tracing::info!(%extension_id, "extension socket ended");
        // Leave the hub with the reason the socket closed for, before the close frame goes.
        drop(registration);
        // Let queued frames (a final error, a goodbye) go out before the close frame.
        self.peer.close_after_flush(close_code::NORMAL, "");
    }

    /// Handles one frame from an authenticated extension.
    fn route(&self, text: &str, extension_id: &str) {
        let state = &self.state;
        match frame::parse(text) {
            Ok(Incoming::Response(reply)) => {
                if let Some(id) = frame::id_string(reply.id).filter(|id| id.starts_with("proxy:")) {
                    // A late or repeated answer to `authenticate`, or one meant for another
                    // socket of this browser that is still waiting (see `PendingAuths`).
                    answer_for_another_socket(&id, &reply, state);
                    return;
                }
                state.hub.deliver_response(extension_id, &reply);
            }
            Ok(Incoming::Notification(call)) => {
                let target = call.connection_id.and_then(frame::id_string);
                if call.connection_id.is_some() && target.is_none() {
                    // A `connectionId` that is not a string names no connection: it goes to no
                    // one, never to every client of this browser.
                    return;
                }
                let frame = if call.connection_id.is_some() {
                    // `connectionId` is routing information for the relay, not for the client.
                    frame::notification_raw(&call.method, call.params)
                } else {
                    text.to_owned()
                };
                state
                    .hub
                    .extension_notification(extension_id, target.as_deref(), frame);
            }
            Ok(Incoming::Request(call)) if call.method == "close_connection" => {
                let id = call.id.map_or("null", |id| id.get());
                self.peer
                    .send(match self.close_connection(extension_id, call.params) {
                        Ok(()) => frame::result_response(id, r#"{"closed":true}"#),
                        Err(error) => error.response(id),
                    });
            }
            Ok(Incoming::Request(call)) if call.method == "record_decision" => {
                let id = call.id.map_or("null", |id| id.get());
                self.peer
                    .send(match self.record_decision(extension_id, call.params) {
                        Ok(()) => frame::result_response(id, r#"{"recorded":true}"#),
                        Err(error) => error.response(id),
                    });
            }
            Ok(Incoming::Request(call)) => {
                // Extensions answer requests; the ones they send the relay are
                // `close_connection` and `record_decision`, and nothing is forwarded to MCP
                // clients.
                let id = call.id.map_or("null", |id| id.get());
                self.peer.send(
                    RelayError::ExtensionRequest(redact::clip(&call.method, 100).into_owned())
                        .response(id),
                );
            }
            Err(error) => {
                self.peer.send(error.to_response());
            }
        }
    }

    /// Waits for the answer to `authenticate`, tolerating notifications that arrive first, and
    /// registers the socket. Returns its registration and the time until the token expires, or
    /// `None` after closing the socket with a reason.
    async fn authenticate(
        &mut self,
        auth_id: &str,
        mut adopted: oneshot::Receiver<Authenticated>,
    ) -> Option<(ExtensionRegistration, Duration)> {
        let deadline = tokio::time::sleep(self.state.config.auth_timeout);
        tokio::pin!(deadline);
        let mut version_hint: Option<String> = None;
        loop {
            let inbound = tokio::select! {
                _ = &mut deadline => {
                    self.peer.close_after_flush(
                        close_code::POLICY,
                        format!(
                            "authentication timed out: no answer to authenticate within {} s",
                            self.state.config.auth_timeout.as_secs_f64()
                        ),
                    );
                    return None;
                }
                Ok(answer) = &mut adopted => {
                    // Our `authenticate` was answered on another socket of the same browser:
                    // this socket stays open, authenticated and idle while that one carries the
                    // traffic.
                    return self.register(answer, true);
                }
                inbound = self.reader.next_text() => inbound,
            };
            let text = match inbound {
                Inbound::Text(text) => text,
                Inbound::NotText => {
                    self.peer.send(not_text_error());
                    continue;
                }
                Inbound::Shutdown => {
                    self.peer.say_goodbye();
                    return None;
                }
                Inbound::Closed => return None,
            };
            match frame::parse(&text) {
                Ok(Incoming::Response(reply)) => {
                    let Some(id) = frame::id_string(reply.id).filter(|id| id.starts_with("proxy:"))
                    else {
                        continue; // answers nothing the relay asked
                    };
                    let ours = id == auth_id;
                    if !ours && !self.state.pending_auths.contains(&id) {
                        continue; // a stale id: nothing waits for it
                    }
                    let answer = match check_answer(&reply, &self.state, version_hint.take()) {
                        Ok(answer) => answer,
                        Err(reason) => {
                            tracing::info!(
                                reason = %redact::printable(&reason),
                                "extension authentication failed"
                            );
                            self.peer.close_after_flush(close_code::POLICY, reason);
                            return None;
                        }
                    };
                    if ours {
                        return self.register(answer, false);
                    }
                    // Another socket's answer arrived here while this one waits too: it
                    // authenticates this socket, and the socket it was asked on becomes this
                    // browser's idle duplicate.
                    let registered = self.register(answer.clone(), false);
                    if registered.is_some() {
                        self.state.pending_auths.hand_over(&id, answer);
                    }
                    return registered;
                }
                Ok(Incoming::Notification(call)) => {
                    // Real extensions announce themselves (`build_info`) before being asked.
                    if let Some(version) = call
                        .params
                        .and_then(|p| serde_json::from_str::<Announcement<'_>>(p.get()).ok())
                        .and_then(|p| p.version.and_then(version_string))
                    {
                        version_hint = Some(version);
                    }
                }
                Ok(Incoming::Request(call)) => {
                    let id = call.id.map_or("null", |id| id.get());
                    self.peer
                        .send(RelayError::ExtensionNotAuthenticated.response(id));
                }
                Err(error) => {
                    self.peer.send(error.to_response());
                }
            }
        }
    }

    /// `close_connection {connection_id, reason?}`: the browser's owner stops one assistant
    /// from the extension (its "Stop" button). The relay, not the extension, ends the MCP side,
    /// so the client hears why and its pending requests are answered.
    fn close_connection(
        &self,
        extension_id: &str,
        params: Option<&RawValue>,
    ) -> Result<(), RelayError> {
        #[derive(Deserialize)]
        struct Params<'a> {
            #[serde(borrow)]
            connection_id: Cow<'a, str>,
            #[serde(default, borrow)]
            reason: Option<Cow<'a, str>>,
        }
        let params: Params<'_> = params
            .and_then(|p| serde_json::from_str(p.get()).ok())
            .ok_or(RelayError::InvalidParams(
                "close_connection takes {connection_id, reason?} with string values",
            ))?;
        self.state.hub.stop_by_owner(
            extension_id,
            &params.connection_id,
            params.reason.as_deref(),
        )
    }

    /// `record_decision {connection_id, kind, outcome, site?, tab_id?, waited_ms?, summary?,
    /// via?}`: the receipt of the person's answer to an assistant's hand-off (`kind` "hand-off":
    /// done, cancelled, timed-out, withdrawn) or ask-before prompt ("ask-before": allowed, denied,
    /// timed-out), written to the audit trail as one record of that kind; `via: "host"` (a
    /// hand-off only) when the person answered in the MCP host rather than in the browser's
    /// popup, which the trail must tell apart. The relay builds the record's text from typed,
    /// bounded fields: the browser chooses none of its shape.
    fn record_decision(
        &self,
        extension_id: &str,
        params: Option<&RawValue>,
    ) -> Result<(), RelayError> {
        #[derive(Deserialize)]
        struct Params<'a> {
            #[serde(borrow)]
            connection_id: Cow<'a, str>,
            #[serde(borrow)]
            kind: Cow<'a, str>,
            #[serde(borrow)]
            outcome: Cow<'a, str>,
            #[serde(default, borrow)]
            site: Option<Cow<'a, str>>,
            #[serde(default)]
            tab_id: Option<u64>,
            #[serde(default)]
            waited_ms: Option<u64>,
            #[serde(default, borrow)]
            summary: Option<Cow<'a, str>>,
            #[serde(default, borrow)]
            via: Option<Cow<'a, str>>,
        }
        const USAGE: &str =
            "record_decision takes {connection_id, kind: \"hand-off\"|\"ask-before\", \
                             outcome, site?, tab_id?, waited_ms?, summary?, via?: \"host\"}";
        let params: Params<'_> = params
            .and_then(|p| serde_json::from_str(p.get()).ok())
            .ok_or(RelayError::InvalidParams(USAGE))?;
        let outcomes: &[&str] = match params.kind.as_ref() {
            "hand-off" => &["done", "cancelled", "timed-out", "withdrawn"],
            "ask-before" => &["allowed", "denied", "timed-out", "withdrawn"],
            _ => return Err(RelayError::InvalidParams(USAGE)),
        };
        if !outcomes.contains(&params.outcome.as_ref()) {
            return Err(RelayError::InvalidParams(USAGE));
        }
        // Only a hand-off can be answered in the host: an ask-before is the popup's alone.
        let in_host = match params.via.as_deref() {
            None => false,
            Some("host") if params.kind == "hand-off" => true,
            Some(_) => return Err(RelayError::InvalidParams(USAGE)),
        };
        let mut detail = params.outcome.into_owned();
        if in_host {
            detail.push_str(" in the MCP host");
        }
        if let Some(ms) = params.waited_ms {
            detail.push_str(&format!(" after {:.1} s", ms as f64 / 1000.0));
        }
        if let Some(site) = params.site.filter(|s| !s.is_empty()) {
            detail.push_str(&format!(" on {}", redact::clip(&site, 100)));
        }
        if let Some(tab) = params.tab_id {
            detail.push_str(&format!(" (tab {tab})"));
        }
        if let Some(summary) = params.summary.filter(|s| !s.is_empty()) {
            detail.push_str(&format!(": {}", redact::clip(&summary, 120)));
        }
        self.state.hub.record_owner_decision(
            extension_id,
            &params.connection_id,
            &params.kind,
            detail,
        )
    }

    /// Adds the authenticated socket to the hub, or closes it saying why not.
    fn register(
        &self,
        answer: Authenticated,
        idle_duplicate: bool,
    ) -> Option<(ExtensionRegistration, Duration)> {
        let hub = &self.state.hub;
        let registered = if idle_duplicate {
            hub.register_idle_duplicate(&answer.auth, &self.peer)
        } else {
            hub.register_extension(&answer.auth, &self.peer)
        };
        match registered {
            Ok(extension_id) => {
                let access = &self.state.gate;
                let auth = &answer.auth;
                // Cut like the hub cuts them: the browser must not choose what the relay keeps.
                let max = self.state.config.hub.max_name_bytes;
                let approved = access.browser_seen(
                    &extension_id,
                    &auth.user_id,
                    crate::text::truncate_utf8(&auth.name, max),
                    auth.version
                        .as_deref()
                        .map(|v| crate::text::truncate_utf8(v, max)),
                );
                if let Some(audit) = &self.state.audit {
                    audit.control(
                        crate::routing::hub::Control {
                            kind: "authenticate",
                            user_id: &auth.user_id,
                            mcp_client_id: None,
                            connection_id: None,
                            extension_id: Some(&extension_id),
                            code: 0,
                        },
                        (!approved && access.require_approval())
                            .then(|| "pending approval".to_owned()),
                    );
                }
                let live = access.track(&self.peer, &answer.identity, Some(&extension_id));
                Some((
                    ExtensionRegistration {
                        state: Arc::clone(&self.state),
                        extension_id,
                        peer: self.peer.clone(),
                        _live: live,
                    },
                    answer.expires_in,
                ))
            }
            Err(error) => {
                self.peer
                    .close_after_flush(close_code::TRY_AGAIN_LATER, error.to_string());
                None
            }
        }
    }
}

/// Hands a valid answer to the socket it was asked on, if that socket is still waiting (it then
/// becomes an idle duplicate). Anything else is a late or repeated answer, and ignored.
fn answer_for_another_socket(id: &str, reply: &frame::Reply<'_>, state: &RelayState) {
    if !state.pending_auths.contains(id) {
        return;
    }
    if let Ok(answer) = check_answer(reply, state, None) {
        state.pending_auths.hand_over(id, answer);
    }
}

/// Validates the answer to `authenticate`; the error is the close reason.
fn check_answer(
    reply: &frame::Reply<'_>,
    state: &RelayState,
    version_hint: Option<String>,
) -> Result<Authenticated, String> {
    if let Some(error) = reply.error {
        let message = serde_json::from_str::<Refusal<'_>>(error.get())
            .ok()
            .and_then(|r| r.message)
            .map(|m| redact::clip(&m, 200).into_owned())
            .unwrap_or_else(|| "unknown error".to_owned());
        return Err(format!(
            "authentication failed: the extension answered with an error: {message}"
        ));
    }
    let Some(result) = reply.result else {
        return Err("authentication failed: the answer has no result".into());
    };
    let answer: AuthAnswer<'_> = serde_json::from_str(result.get()).map_err(|_| {
        "authentication failed: the result must be an object with name and accessToken".to_owned()
    })?;
    let token = answer
        .access_token_camel
        .or(answer.access_token)
        .unwrap_or_default();
    let identity = state
        .verify(&token, Role::Extension)
        .map_err(|e| format!("authentication failed: {e}"))?;
    let name = answer
        .name
        .map(|n| n.trim().to_owned())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "Browser".to_owned());
    let auth = ExtensionAuth {
        user_id: identity.user_id.clone(),
        client_id: answer.client_id.filter(|c| !c.is_empty()),
        name,
        version: answer.version.and_then(version_string).or(version_hint),
    };
    if state.gate.browser_revoked(&auth.extension_id()) {
        return Err(format!(
            "authentication failed: this browser ({}) was revoked; its owner or the relay's \
             operator can approve it again (docs/ADMIN.md)",
            auth.extension_id()
        ));
    }
    Ok(Authenticated {
        expires_in: identity.expires_in(),
        identity,
        auth,
    })
}

/// A version given as a string or a number, read from raw JSON and kept short.
fn version_string(raw: &RawValue) -> Option<String> {
    let text = raw.get();
    let version = match text.as_bytes().first()? {
        b'"' => serde_json::from_str::<String>(text).ok()?,
        b'-' | b'0'..=b'9' => text.to_owned(),
        _ => return None,
    };
    (!version.is_empty()).then(|| redact::clip(&version, 64).into_owned())
}

fn not_text_error() -> String {
    RelayError::BinaryNotUtf8.response("null")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ServeConfig;
    use crate::routing::hub::ExtensionAuth;

    fn auth() -> ExtensionAuth {
        ExtensionAuth {
            user_id: "alice".into(),
            client_id: Some("laptop".into()),
            name: "Chrome".into(),
            version: None,
        }
    }

    /// What `register` builds, without a socket.
    fn registered(state: &Arc<RelayState>, peer: &Peer) -> ExtensionRegistration {
        let extension_id = state.hub.register_extension(&auth(), peer).unwrap();
        let identity = crate::auth::Identity {
            user_id: "alice".into(),
            role: None,
            connection_url: None,
            expires_at: u64::MAX,
            jti: None,
            issued_at: None,
        };
        ExtensionRegistration {
            _live: state.gate.track(peer, &identity, Some(&extension_id)),
            state: Arc::clone(state),
            extension_id,
            peer: peer.clone(),
        }
    }

    #[tokio::test]
    async fn a_session_that_panics_takes_its_browser_out_of_the_list() {
        let state = crate::state::for_tests(ServeConfig::defaults());
        let (peer, _rx) = Peer::detached();
        let session_state = Arc::clone(&state);
        let session = tokio::spawn(async move {
            let _registration = registered(&session_state, &peer);
            assert_eq!(session_state.hub.list_extensions("alice").len(), 1);
            panic!("a bug in the session");
        });
        assert!(session.await.unwrap_err().is_panic());
        assert!(state.hub.list_extensions("alice").is_empty());
    }

    #[tokio::test]
    async fn a_dropped_registration_tells_connected_clients_why_the_browser_left() {
        let state = crate::state::for_tests(ServeConfig::defaults());
        let (extension, _extension_rx) = Peer::detached();
        let (client, mut client_rx) = Peer::detached();
        let registration = registered(&state, &extension);
        let mcp = crate::routing::hub::McpClient {
            user_id: "alice".into(),
            mcp_client_id: "mcp-1".into(),
            client_id: None,
            client_name: None,
            peer: client,
        };
        let extension_id = state.hub.list_extensions("alice")[0].id.clone();
        state.hub.connect(&mcp, &extension_id).unwrap();
        extension.close(close_code::POLICY, "token expired");
        drop(registration);
        let frames = client_rx.frames();
        let notice: serde_json::Value = serde_json::from_str(frames.last().unwrap()).unwrap();
        assert_eq!(notice["method"], "disconnected");
        assert_eq!(
            notice["params"]["reason"],
            "Extension closed: token expired"
        );
    }
}
