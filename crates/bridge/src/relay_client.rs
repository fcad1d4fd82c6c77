//! The bridge's one WebSocket to the relay's `/mcp` endpoint, and the browser it is connected to.
//!
//! An MCP host starts the bridge once and keeps it for hours, while the relay restarts and the
//! browser sleeps, closes and comes back. So the socket is owned by a supervisor task that
//! reconnects with backoff and jitter, handshakes again, and returns to the browser it was using;
//! tool calls never see a half-open state: they either get a socket that is authenticated, or a
//! clear error at once.
//!
//! Wire, as the relay speaks it (`docs/PROTOCOL.md`):
//! - requests: `mcp_handshake {access_token, client_id}`, `list_extensions`,
//!   `connect {extension_id}`, `disconnect`, and every extension command (forwarded by the
//!   relay, answered with our id);
//! - notifications: `status`, `disconnected {connection_id, extension_id, name, reason}`,
//!   `connected {extension_id, name, reconnection}`, `shutdown {reason}`, and the extension's own
//!   (`forwardCDPEvent`, …), which MCP has no channel for and are only logged.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot, watch};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, WebSocketConfig};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{Connector, MaybeTlsStream, WebSocketStream};
use tokio_util::sync::CancellationToken;

use mcp_relay_wire::code;

use crate::link::{BrowserLink, ChosenBrowser, ExtensionRow, LinkError, Status};
use crate::pipe::{Dialer, FramePipe};

type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// How the client reaches the relay's MCP session.
#[derive(Clone)]
pub(crate) enum Route {
    /// A WebSocket to `url`, trusting these roots (the bridge).
    WebSocket(Arc<rustls::ClientConfig>),
    /// An in-memory session inside the relay process (the relay's HTTP endpoint).
    InProcess(Arc<dyn Dialer>),
}

/// The sending half of an open session, whatever carries it.
enum Writer {
    Ws(futures_util::stream::SplitSink<Socket, Message>),
    Pipe(mpsc::Sender<String>),
}

impl Writer {
    async fn text(&mut self, text: String) -> Result<(), String> {
        match self {
            Writer::Ws(sink) => sink
                .send(Message::Text(text.into()))
                .await
                .map_err(|e| e.to_string()),
            Writer::Pipe(tx) => tx
                .send(text)
                .await
                .map_err(|_| "the relay ended the session".to_owned()),
        }
    }

    /// A keepalive ping; an in-memory session cannot go silently dead, so it needs none.
    async fn ping(&mut self) -> Result<(), String> {
        match self {
            Writer::Ws(sink) => sink
                .send(Message::Ping(Default::default()))
                .await
                .map_err(|e| e.to_string()),
            Writer::Pipe(_) => Ok(()),
        }
    }

    /// Says goodbye: a close frame on a socket, the end of the channel in process.
    async fn close(self, reason: &str) {
        if let Writer::Ws(mut sink) = self {
            let _ = sink
                .send(Message::Close(Some(CloseFrame {
                    code: CloseCode::Normal,
                    reason: reason.to_owned().into(),
                })))
                .await;
        }
    }
}

/// What the reading half of a session delivers next.
enum Received {
    Text(String),
    /// A ping, pong or binary frame: proof of life, nothing to handle.
    Other,
    /// The session ended; why.
    Ended(String),
}

/// The receiving half of an open session.
enum Reader {
    Ws(futures_util::stream::SplitStream<Socket>),
    Pipe(mpsc::Receiver<String>),
}

impl Reader {
    async fn next(&mut self) -> Received {
        match self {
            Reader::Ws(stream) => match stream.next().await {
                Some(Ok(Message::Text(text))) => Received::Text(text.to_string()),
                Some(Ok(Message::Close(frame))) => Received::Ended(match frame {
                    Some(f) => format!("closed by the relay: {} {}", u16::from(f.code), f.reason),
                    None => "closed by the relay".into(),
                }),
                Some(Ok(_)) => Received::Other,
                Some(Err(e)) => Received::Ended(format!("socket error: {e}")),
                None => Received::Ended("socket closed".into()),
            },
            Reader::Pipe(rx) => match rx.recv().await {
                Some(text) => Received::Text(text),
                None => Received::Ended("the relay ended the session".into()),
            },
        }
    }
}

/// How long a tool call waits for the first connection attempt to finish. After a failed
/// attempt, calls fail at once instead (the supervisor keeps retrying behind them).
const LINK_WAIT: Duration = Duration::from_secs(10);
/// TCP + TLS + handshake of one attempt.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(15);
/// Backoff between attempts: doubles from the base up to the cap, with jitter so many bridges
/// do not return to a restarted relay in lock step.
const BACKOFF_BASE: Duration = Duration::from_millis(250);
const BACKOFF_CAP: Duration = Duration::from_secs(30);
/// Screenshots of large pages arrive as one text frame of many megabytes; the relay's own
/// limit (`--max-message-bytes`) is the one that matters.
const MAX_MESSAGE_BYTES: usize = 512 << 20;
/// How often a connected bridge without a browser tries to get one back.
const BROWSER_RETRY: Duration = Duration::from_secs(2);
/// A laptop that sleeps or a NAT that forgets the flow leaves a socket that is dead without an
/// error; calls would then each wait for their timeout. So the bridge pings, and gives the
/// socket up when nothing at all (not even a pong) has arrived for `SILENCE_LIMIT`.
/// How often a call waiting for the owner's approval tries again.
const APPROVAL_POLL: Duration = Duration::from_millis(500);
const PING_EVERY: Duration = Duration::from_secs(15);
const SILENCE_LIMIT: Duration = Duration::from_secs(45);

/// What the bridge needs to reach the relay.
pub(crate) struct RelayConfig {
    /// `ws(s)://host/mcp`, or a description of the in-process route (for messages).
    pub url: String,
    pub token: String,
    /// Sent in `mcp_handshake`; stable for the same user and relay.
    pub client_id: String,
    pub route: Route,
    /// How long a request waits for its answer.
    pub request_timeout: Duration,
    /// `--approval-wait`: how long a call waits for the browser's owner to allow this
    /// assistant (the extension answers `-32010` until then) before the model is told to ask
    /// the person. Short by default: the model should say what is happening, not sit silent.
    pub approval_wait: Duration,
    /// `--browser`: the extension id or name to connect to when none is chosen yet.
    pub browser: Option<String>,
}

/// The socket side of the state.
#[derive(Default)]
struct Link {
    /// Feeds the current socket's loop; `None` while there is no authenticated socket.
    outgoing: Option<mpsc::UnboundedSender<String>>,
    user_id: Option<String>,
    /// Failed attempts since the last authenticated socket. With one or more, calls fail fast
    /// rather than wait for the next attempt, which may be 30 s away.
    failures: u32,
    /// Why the last attempt failed or the last socket ended, phrased for a person.
    last_error: Option<String>,
}

/// The browser side of the state.
#[derive(Default)]
struct BrowserState {
    chosen: Option<ChosenBrowser>,
    /// The relay's connection to `chosen`; `None` until connected and after it ends.
    connection_id: Option<String>,
    /// Why `chosen` is not connected (the relay's `disconnected` reason, a lost socket, …).
    problem: Option<String>,
}

struct Shared {
    config: RelayConfig,
    /// The token every handshake sends: `config.token`, until [`RelayClient::refresh_token`]
    /// replaces it.
    token: Mutex<String>,
    /// Our request ids, numeric as the relay expects from MCP clients; never reused, so a late
    /// answer to a timed-out request cannot be taken for another one's.
    next_id: AtomicU64,
    /// Requests waiting for their answer, by the numeric id we gave them.
    pending: Mutex<HashMap<u64, oneshot::Sender<Result<Value, LinkError>>>>,
    link: Mutex<Link>,
    /// Bumped whenever `link` changes, so a call can wait for the first attempt.
    link_changed: watch::Sender<u64>,
    browser: Mutex<BrowserState>,
    /// Held while connecting to a browser, so a tool call and a `connected` notification (or
    /// two tool calls) do not both send `connect` and trip over "already connected".
    connecting: tokio::sync::Mutex<()>,
    /// The MCP host's name (`clientInfo.name` at `initialize`), sent to the relay as
    /// `client_name` so the browser's owner sees which assistant asks ("Claude Desktop").
    client_name: Mutex<Option<String>>,
    /// Set once the host has initialized. Until then the bridge does not connect to a browser
    /// by itself: the browser's owner would be asked about an assistant with no name.
    introduced: std::sync::atomic::AtomicBool,
    /// Cancelled by [`RelayClient::close`].
    shutdown: CancellationToken,
}

/// Ends a relay client's supervisor (and so its session with the relay) when dropped.
pub(crate) struct Closer(CancellationToken);

impl Drop for Closer {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

/// A handle on the relay connection; cheap to clone.
#[derive(Clone)]
pub(crate) struct RelayClient {
    shared: Arc<Shared>,
    /// The task that owns the socket, so [`RelayClient::close`] can wait for its goodbye.
    supervisor: Arc<Mutex<Option<tokio::task::JoinHandle<()>>>>,
}

impl RelayClient {
    /// Starts the supervisor, which connects in the background and keeps reconnecting.
    pub(crate) fn start(config: RelayConfig) -> RelayClient {
        let shared = Arc::new(Shared {
            token: Mutex::new(config.token.clone()),
            config,
            next_id: AtomicU64::new(1),
            pending: Mutex::new(HashMap::new()),
            link: Mutex::new(Link::default()),
            link_changed: watch::channel(0).0,
            browser: Mutex::new(BrowserState::default()),
            connecting: tokio::sync::Mutex::new(()),
            client_name: Mutex::new(None),
            introduced: std::sync::atomic::AtomicBool::new(false),
            shutdown: CancellationToken::new(),
        });
        let client = RelayClient {
            shared,
            supervisor: Arc::new(Mutex::new(None)),
        };
        let handle = tokio::spawn(supervise(client.clone()));
        *client.supervisor.lock().unwrap() = Some(handle);
        client
    }

    /// Says goodbye to the relay (close 1000) and stops reconnecting.
    pub(crate) async fn close(&self) {
        self.shared.shutdown.cancel();
        let handle = self.supervisor.lock().unwrap().take();
        if let Some(handle) = handle {
            let _ = tokio::time::timeout(Duration::from_secs(2), handle).await;
        }
    }

    /// Uses `token` from now on (a hosted session's host refreshed its token) and, when a
    /// session is open, handshakes with it at once so the relay moves the session's expiry.
    pub(crate) fn refresh_token(&self, token: &str) {
        {
            let mut current = self.shared.token.lock().unwrap();
            if *current == token {
                return;
            }
            *current = token.to_owned();
        }
        let client = self.clone();
        tokio::spawn(async move {
            if client.shared.link.lock().unwrap().outgoing.is_none() {
                return;
            }
            if let Err(e) = client
                .request("mcp_handshake", handshake_params(&client.shared))
                .await
            {
                tracing::warn!("the relay refused the refreshed token: {e}");
            }
        });
    }

    /// Stops the supervisor when dropped (no goodbye is awaited): for a session whose owner
    /// goes away without calling [`Self::close`].
    pub(crate) fn closer(&self) -> Closer {
        Closer(self.shared.shutdown.clone())
    }

    pub(crate) fn relay_url(&self) -> &str {
        &self.shared.config.url
    }

    /// Sends a request on the current socket and waits for its answer.
    pub(crate) async fn request(&self, method: &str, params: Value) -> Result<Value, LinkError> {
        let outgoing = self.outgoing().await?;
        let id = self.shared.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.shared.pending.lock().unwrap().insert(id, tx);
        let frame = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        if outgoing.send(frame.to_string()).is_err() {
            self.shared.pending.lock().unwrap().remove(&id);
            return Err(LinkError::ConnectionLost);
        }
        let timeout = self.shared.config.request_timeout;
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => Err(LinkError::ConnectionLost),
            Err(_) => {
                self.shared.pending.lock().unwrap().remove(&id);
                Err(LinkError::Timeout(timeout))
            }
        }
    }

    /// Names the MCP host for the browser's owner; every later handshake carries it, and
    /// [`Self::connect_locked`] repeats the handshake before each `connect`, so the extension
    /// is told the name with the connection whichever came first.
    pub(crate) fn introduce(&self, client_name: &str) {
        let name = client_name.trim();
        if !name.is_empty() {
            *self.shared.client_name.lock().unwrap() = Some(name.to_owned());
        }
        self.shared.introduced.store(true, Ordering::Relaxed);
    }

    /// Sends an extension command to the browser, connecting to it first when needed. While
    /// the browser's owner has not allowed this assistant (`-32010`), tries again for up to
    /// `--approval-wait`, so a call made just before the person clicks "Allow" goes through.
    pub(crate) async fn call(&self, method: &str, params: Value) -> Result<Value, LinkError> {
        let deadline = tokio::time::Instant::now() + self.shared.config.approval_wait;
        loop {
            match self.call_once(method, params.clone()).await {
                Err(LinkError::Rpc { code, .. })
                    if code == code::OWNER_APPROVAL_REQUIRED
                        && tokio::time::Instant::now() + APPROVAL_POLL < deadline =>
                {
                    tokio::time::sleep(APPROVAL_POLL).await;
                }
                answer => return answer,
            }
        }
    }

    async fn call_once(&self, method: &str, params: Value) -> Result<Value, LinkError> {
        let connection_id = self.ensure_browser().await?;
        match self.request(method, params.clone()).await {
            // The relay ended the connection (extension gone) and the notification has not
            // arrived yet: the command never reached a browser, so trying once more is safe.
            Err(LinkError::Rpc { code, .. }) if code == code::NOT_CONNECTED => {
                self.forget_connection(&connection_id, "the relay ended the connection");
                self.ensure_browser().await?;
                self.request(method, params).await
            }
            answer => answer,
        }
    }

    /// The browsers of this user that the relay knows.
    pub(crate) async fn list_extensions(&self) -> Result<Vec<ExtensionRow>, LinkError> {
        let result = self.request("list_extensions", json!({})).await?;
        serde_json::from_value(result["extensions"].clone()).map_err(|e| LinkError::Rpc {
            code: code::INTERNAL_ERROR,
            message: format!("the relay's list_extensions answer was not understood: {e}"),
        })
    }

    /// Switches to the browser named by `wanted` (an extension id or a name).
    pub(crate) async fn choose(&self, wanted: &str) -> Result<ChosenBrowser, LinkError> {
        let _guard = self.shared.connecting.lock().await;
        let list = self.list_extensions().await?;
        let Some(row) = find_browser(&list, wanted) else {
            return Err(LinkError::NoBrowser(format!(
                "no connected browser matches \"{wanted}\". {}",
                online_hint(&list)
            )));
        };
        let current = {
            let browser = self.shared.browser.lock().unwrap();
            match (&browser.chosen, &browser.connection_id) {
                (Some(chosen), Some(_)) => Some(chosen.clone()),
                _ => None,
            }
        };
        if let Some(chosen) = current {
            if chosen.extension_id == row.id {
                return Ok(chosen);
            }
            self.request("disconnect", json!({})).await?;
            self.shared.browser.lock().unwrap().connection_id = None;
        }
        self.connect_locked(&row.id).await
    }

    /// What the bridge knows right now, without asking the relay.
    pub(crate) fn status(&self) -> Status {
        let link = self.shared.link.lock().unwrap();
        let browser = self.shared.browser.lock().unwrap();
        Status {
            relay_url: self.shared.config.url.clone(),
            relay_connected: link.outgoing.is_some(),
            user_id: link.user_id.clone(),
            relay_error: if link.outgoing.is_some() {
                None
            } else {
                link.last_error.clone()
            },
            browser: browser.chosen.clone(),
            browser_connected: browser.connection_id.is_some(),
            connection_id: browser.connection_id.clone(),
            browser_problem: browser.problem.clone(),
        }
    }

    /// The connection id of the browser to use, connecting (or reconnecting) first if needed.
    async fn ensure_browser(&self) -> Result<String, LinkError> {
        if let Some(id) = self.connection_id() {
            return Ok(id);
        }
        let _guard = self.shared.connecting.lock().await;
        if let Some(id) = self.connection_id() {
            return Ok(id);
        }
        let (chosen, problem) = {
            let browser = self.shared.browser.lock().unwrap();
            (browser.chosen.clone(), browser.problem.clone())
        };
        let target = match chosen {
            Some(chosen) => match self.connect_locked(&chosen.extension_id).await {
                Ok(_) => return self.connection_id().ok_or(LinkError::ConnectionLost),
                Err(LinkError::Rpc { code, .. }) if code == code::SERVER_ERROR => {
                    // Not there under its id. An extension whose storage was cleared comes back
                    // with a new id but the same name: follow the name.
                    let list = self.list_extensions().await?;
                    match list.iter().find(|row| row.name == chosen.name) {
                        Some(row) => row.id.clone(),
                        None => {
                            return Err(LinkError::NoBrowser(gone_message(&chosen, problem, &list)))
                        }
                    }
                }
                Err(e) => return Err(e),
            },
            None => self.pick_first_browser().await?,
        };
        self.connect_locked(&target).await?;
        self.connection_id().ok_or(LinkError::ConnectionLost)
    }

    /// With no browser chosen yet: `--browser`, else the only one online.
    async fn pick_first_browser(&self) -> Result<String, LinkError> {
        let list = self.list_extensions().await?;
        if let Some(wanted) = &self.shared.config.browser {
            return match find_browser(&list, wanted) {
                Some(row) => Ok(row.id.clone()),
                None => Err(LinkError::NoBrowser(format!(
                    "the browser \"{wanted}\" (given with --browser) is not connected to the relay. \
                     Open that browser and check that its mcp-relay extension is connected, or \
                     call browser_connect to use another one. {}",
                    online_hint(&list)
                ))),
            };
        }
        match list.as_slice() {
            [] => Err(LinkError::NoBrowser(
                "no browser connected: open the browser with the mcp-relay extension and check its \
                 token in the extension's options (it must belong to the same user as the \
                 bridge's token), then call this tool again"
                    .into(),
            )),
            [only] => Ok(only.id.clone()),
            several => Err(LinkError::NoBrowser(format!(
                "several browsers are connected ({}): call browser_connect with the name or id of \
                 the one to use",
                describe(several)
            ))),
        }
    }

    /// `connect`, with `connecting` held by the caller.
    async fn connect_locked(&self, extension_id: &str) -> Result<ChosenBrowser, LinkError> {
        // The socket's handshake may predate the host's `initialize` (the bridge connects at
        // start): repeat it with the host's name, which the relay announces with the
        // connection (`connection_opened`). One round trip per connect, which is rare.
        if self.shared.client_name.lock().unwrap().is_some() {
            self.request("mcp_handshake", handshake_params(&self.shared))
                .await?;
        }
        let params = json!({ "extension_id": extension_id });
        let result = match self.request("connect", params.clone()).await {
            // The relay still has a connection we gave up on (an answer lost with a socket):
            // end it and connect again.
            Err(LinkError::Rpc { code, .. }) if code == code::ALREADY_CONNECTED => {
                self.request("disconnect", json!({})).await?;
                self.request("connect", params).await?
            }
            other => other?,
        };
        let text = |key: &str| result[key].as_str().unwrap_or_default().to_owned();
        let chosen = ChosenBrowser {
            extension_id: text("extension_id"),
            name: text("extension_name"),
        };
        let mut browser = self.shared.browser.lock().unwrap();
        browser.chosen = Some(chosen.clone());
        browser.connection_id = Some(text("connection_id"));
        browser.problem = None;
        tracing::info!(browser = %chosen.name, extension_id = %chosen.extension_id, "connected to the browser");
        Ok(chosen)
    }

    fn connection_id(&self) -> Option<String> {
        self.shared.browser.lock().unwrap().connection_id.clone()
    }

    /// Marks the connection over, if it is still the current one.
    fn forget_connection(&self, connection_id: &str, problem: &str) {
        let mut browser = self.shared.browser.lock().unwrap();
        if browser.connection_id.as_deref() == Some(connection_id) {
            browser.connection_id = None;
            browser.problem = Some(problem.to_owned());
        }
    }

    /// The sender of the authenticated socket; waits for the first attempt, not for retries.
    async fn outgoing(&self) -> Result<mpsc::UnboundedSender<String>, LinkError> {
        let mut changes = self.shared.link_changed.subscribe();
        let deadline = tokio::time::Instant::now() + LINK_WAIT;
        loop {
            {
                let link = self.shared.link.lock().unwrap();
                if let Some(outgoing) = &link.outgoing {
                    return Ok(outgoing.clone());
                }
                if link.failures > 0 || self.shared.shutdown.is_cancelled() {
                    return Err(LinkError::Unreachable(unreachable_message(
                        &self.shared.config.url,
                        &link,
                    )));
                }
            }
            if tokio::time::timeout_at(deadline, changes.changed())
                .await
                .is_err()
            {
                let link = self.shared.link.lock().unwrap();
                return Err(LinkError::Unreachable(unreachable_message(
                    &self.shared.config.url,
                    &link,
                )));
            }
        }
    }

    fn update_link(&self, change: impl FnOnce(&mut Link)) {
        change(&mut self.shared.link.lock().unwrap());
        self.shared.link_changed.send_modify(|n| *n += 1);
    }

    /// The socket ended: fail what is in flight, and remember that the browser connection is
    /// gone with it (the relay ends connections of closed sockets).
    fn link_lost(&self, reason: String) {
        self.update_link(|link| {
            link.outgoing = None;
            link.failures = 0;
            link.last_error = Some(reason);
        });
        {
            let mut browser = self.shared.browser.lock().unwrap();
            if browser.connection_id.take().is_some() {
                browser.problem = Some("the connection to the relay was lost".into());
            }
        }
        let pending = std::mem::take(&mut *self.shared.pending.lock().unwrap());
        for (_, waiter) in pending {
            let _ = waiter.send(Err(LinkError::ConnectionLost));
        }
    }

    /// Handles one text frame from the relay.
    fn on_frame(&self, text: &str) {
        let Ok(frame) = serde_json::from_str::<Value>(text) else {
            tracing::warn!("ignoring a frame from the relay that is not JSON");
            return;
        };
        match (frame.get("id"), frame.get("method").and_then(Value::as_str)) {
            (Some(id), None) => self.on_response(id, &frame),
            (None, Some(method)) => self.on_notification(method, &frame["params"]),
            _ => tracing::warn!("ignoring a request from the relay (it never sends any)"),
        }
    }

    fn on_response(&self, id: &Value, frame: &Value) {
        let Some(waiter) = id
            .as_u64()
            .and_then(|id| self.shared.pending.lock().unwrap().remove(&id))
        else {
            tracing::debug!(%id, "answer for a request nobody waits for (timed out?)");
            return;
        };
        let answer = match frame.get("error") {
            Some(error)
                if error["code"] == code::OWNER_APPROVAL_REQUIRED
                    && error["data"]["decision"] == "denied" =>
            {
                Err(LinkError::Denied(
                    error["message"]
                        .as_str()
                        .unwrap_or("the browser's owner denied this assistant")
                        .to_owned(),
                ))
            }
            Some(error) => Err(LinkError::Rpc {
                code: error["code"].as_i64().unwrap_or(code::INTERNAL_ERROR),
                message: error["message"]
                    .as_str()
                    .unwrap_or("error without a message")
                    .to_owned(),
            }),
            None => Ok(frame.get("result").cloned().unwrap_or(Value::Null)),
        };
        let _ = waiter.send(answer);
    }

    fn on_notification(&self, method: &str, params: &Value) {
        let text = |key: &str| params[key].as_str().unwrap_or_default().to_owned();
        match method {
            "disconnected" => {
                let name = text("name");
                let reason = text("reason");
                tracing::warn!(browser = %name, %reason, "the browser disconnected from the relay");
                self.forget_connection(
                    &text("connection_id"),
                    &format!("the browser \"{name}\" disconnected from the relay ({reason})"),
                );
            }
            "connected" => {
                let extension_id = text("extension_id");
                let ours = {
                    let browser = self.shared.browser.lock().unwrap();
                    browser.connection_id.is_none()
                        && browser
                            .chosen
                            .as_ref()
                            .is_some_and(|c| c.extension_id == extension_id)
                };
                if ours {
                    tracing::info!(browser = %text("name"), "the browser is back; reconnecting to it");
                    let client = self.clone();
                    tokio::spawn(async move {
                        if let Err(e) = client.ensure_browser().await {
                            tracing::warn!("reconnecting to the browser failed: {e}");
                        }
                    });
                }
            }
            "shutdown" => {
                tracing::warn!(reason = %text("reason"), "the relay is shutting down");
            }
            "status" => tracing::debug!(%params, "relay status"),
            other => tracing::debug!(method = other, "extension notification (not forwarded)"),
        }
    }
}

/// The tools reach the browser through the relay's `/mcp` socket.
impl BrowserLink for RelayClient {
    fn describe(&self) -> &str {
        self.relay_url()
    }

    fn call<'a>(
        &'a self,
        method: &'a str,
        params: Value,
    ) -> BoxFuture<'a, Result<Value, LinkError>> {
        Box::pin(RelayClient::call(self, method, params))
    }

    fn list_browsers(&self) -> BoxFuture<'_, Result<Vec<ExtensionRow>, LinkError>> {
        Box::pin(self.list_extensions())
    }

    fn choose<'a>(&'a self, wanted: &'a str) -> BoxFuture<'a, Result<ChosenBrowser, LinkError>> {
        Box::pin(RelayClient::choose(self, wanted))
    }

    fn introduce(&self, client_name: &str) {
        RelayClient::introduce(self, client_name);
    }

    fn status(&self) -> Status {
        RelayClient::status(self)
    }
}

/// Keeps a socket open for as long as the bridge runs.
async fn supervise(client: RelayClient) {
    let shutdown = client.shared.shutdown.clone();
    let mut failures: u32 = 0;
    loop {
        let attempt = tokio::select! {
            _ = shutdown.cancelled() => return,
            attempt = open_session(&client.shared) => attempt,
        };
        match attempt {
            Ok((writer, reader, user_id)) => {
                failures = 0;
                tracing::info!(url = %client.shared.config.url, %user_id, "connected to the relay");
                let reason = run_session(&client, writer, reader, user_id).await;
                if shutdown.is_cancelled() {
                    return;
                }
                tracing::warn!(%reason, "lost the relay connection; reconnecting");
                client.link_lost(format!("the connection to the relay ended ({reason})"));
            }
            Err(message) => {
                failures += 1;
                tracing::warn!(attempt = failures, "{message}");
                client.update_link(|link| {
                    link.failures = failures;
                    link.last_error = Some(message);
                });
            }
        }
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(backoff(failures)) => {}
        }
    }
}

/// The delay before the next attempt: 250 ms doubling up to 30 s, each time a random 50–100 %
/// of it.
fn backoff(failures: u32) -> Duration {
    let full = BACKOFF_BASE
        .saturating_mul(1u32 << failures.min(16))
        .min(BACKOFF_CAP);
    // uuid's v4 randomness is already a dependency; jitter needs nothing better.
    let random = (uuid::Uuid::new_v4().as_u128() % 1000) as u32;
    full / 2 + full / 2 * random / 1000
}

/// `mcp_handshake`'s params: the token, this bridge's stable `client_id`, and the host's name
/// once known.
fn handshake_params(shared: &Shared) -> Value {
    let mut params = json!({"access_token": *shared.token.lock().unwrap(), "client_id": shared.config.client_id});
    if let Some(name) = shared.client_name.lock().unwrap().as_deref() {
        params["client_name"] = name.into();
    }
    params
}

/// Opens the carrier: a WebSocket (TCP, TLS, upgrade), or an in-memory session of this relay.
async fn dial(shared: &Shared) -> Result<(Writer, Reader), String> {
    let url = &shared.config.url;
    match &shared.config.route {
        Route::InProcess(dialer) => {
            let FramePipe {
                to_relay,
                from_relay,
            } = dialer.dial().await?;
            Ok((Writer::Pipe(to_relay), Reader::Pipe(from_relay)))
        }
        Route::WebSocket(tls) => {
            let config = WebSocketConfig::default()
                .max_message_size(Some(MAX_MESSAGE_BYTES))
                .max_frame_size(Some(MAX_MESSAGE_BYTES));
            let (socket, _) = tokio_tungstenite::connect_async_tls_with_config(
                url.as_str(),
                Some(config),
                true,
                Some(Connector::Rustls(Arc::clone(tls))),
            )
            .await
            .map_err(|e| {
                if e.to_string().contains("certificate") {
                    format!(
                        "the relay at {url} presented a certificate the bridge does not trust \
                         ({e}): for a private CA such as the one from `mcp-relay dev-certs`, pass \
                         --ca-cert"
                    )
                } else {
                    format!(
                        "the relay at {url} is not reachable ({e}): check that `mcp-relay serve` \
                         is running and that the bridge's --relay URL is right"
                    )
                }
            })?;
            let (sink, stream) = socket.split();
            Ok((Writer::Ws(sink), Reader::Ws(stream)))
        }
    }
}

/// Connects and handshakes. Returns the session and the user id, or a message for a person.
async fn open_session(shared: &Shared) -> Result<(Writer, Reader, String), String> {
    let url = &shared.config.url;
    let attempt = async {
        let (mut writer, mut reader) = dial(shared).await?;
        let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
        let handshake = json!({
            "jsonrpc": "2.0",
            "id": id,
            "method": "mcp_handshake",
            "params": handshake_params(shared),
        });
        writer.text(handshake.to_string()).await.map_err(|e| {
            format!("the relay at {url} closed the session during the handshake ({e})")
        })?;
        loop {
            let text = match reader.next().await {
                Received::Text(text) => text,
                Received::Other => continue,
                Received::Ended(why) => {
                    return Err(format!(
                        "the relay at {url} ended the session during the handshake ({why})"
                    ))
                }
            };
            let Ok(frame) = serde_json::from_str::<Value>(&text) else {
                continue;
            };
            if frame["id"].as_u64() != Some(id) {
                continue;
            }
            if let Some(error) = frame.get("error") {
                return Err(format!(
                    "the relay refused the bridge's token ({}): give the bridge a valid MCP token \
                     (MCP_RELAY_TOKEN) for the same user as the browser extension",
                    error["message"].as_str().unwrap_or("no reason given")
                ));
            }
            let user_id = frame["result"]["user_id"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            return Ok((writer, reader, user_id));
        }
    };
    tokio::time::timeout(ATTEMPT_TIMEOUT, attempt)
        .await
        .unwrap_or_else(|_| {
            Err(format!(
                "the relay at {url} did not complete the connection within {ATTEMPT_TIMEOUT:?}"
            ))
        })
}

/// Runs an authenticated session until it ends; returns why it ended.
async fn run_session(
    client: &RelayClient,
    mut sink: Writer,
    mut stream: Reader,
    user_id: String,
) -> String {
    let (outgoing, mut queue) = mpsc::unbounded_channel::<String>();
    client.update_link(|link| {
        link.outgoing = Some(outgoing);
        link.user_id = Some(user_id);
        link.failures = 0;
        link.last_error = None;
    });
    // Return to the browser in use before the socket was lost (or pick the first one), now and
    // then every few seconds while there is none: after a relay restart the relay does not
    // know we were connected, so no `connected` notification will tell us the browser is back.
    // The attempts run beside this loop, which delivers their answers.
    let mut browser_check = tokio::time::interval(BROWSER_RETRY);
    browser_check.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut browser_attempt: Option<tokio::task::JoinHandle<()>> = None;
    let mut keepalive = tokio::time::interval(PING_EVERY);
    keepalive.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last_heard = tokio::time::Instant::now();
    let in_process = matches!(sink, Writer::Pipe(_));
    let shutdown = client.shared.shutdown.clone();
    loop {
        tokio::select! {
            _ = keepalive.tick() => {
                // An in-memory session is never silently dead, and may well be quiet.
                if !in_process && last_heard.elapsed() > SILENCE_LIMIT {
                    return format!("nothing heard from the relay for {SILENCE_LIMIT:?}");
                }
                if let Err(e) = sink.ping().await {
                    return format!("write failed: {e}");
                }
            }
            _ = browser_check.tick() => {
                let idle = browser_attempt.as_ref().is_none_or(|a| a.is_finished());
                let introduced = client.shared.introduced.load(Ordering::Relaxed);
                if idle && introduced && client.connection_id().is_none() {
                    let retry = client.clone();
                    browser_attempt = Some(tokio::spawn(async move {
                        if let Err(e) = retry.ensure_browser().await {
                            tracing::debug!("no browser yet: {e}");
                        }
                    }));
                }
            }
            _ = shutdown.cancelled() => {
                sink.close("bridge stopping").await;
                return "the bridge is stopping".into();
            }
            Some(text) = queue.recv() => {
                if let Err(e) = sink.text(text).await {
                    return format!("write failed: {e}");
                }
            }
            received = stream.next() => match received {
                Received::Text(text) => {
                    last_heard = tokio::time::Instant::now();
                    client.on_frame(&text);
                }
                Received::Other => last_heard = tokio::time::Instant::now(),
                Received::Ended(why) => return why,
            },
        }
    }
}

/// An extension matching `wanted` by id, else by name (case-insensitive).
fn find_browser<'a>(list: &'a [ExtensionRow], wanted: &str) -> Option<&'a ExtensionRow> {
    let wanted = wanted.trim();
    list.iter().find(|row| row.id == wanted).or_else(|| {
        list.iter()
            .find(|row| row.name.eq_ignore_ascii_case(wanted))
    })
}

fn describe(list: &[ExtensionRow]) -> String {
    list.iter()
        .map(|row| format!("\"{}\" {}", row.name, row.id))
        .collect::<Vec<_>>()
        .join(", ")
}

fn online_hint(list: &[ExtensionRow]) -> String {
    if list.is_empty() {
        "No browser is connected to the relay right now.".into()
    } else {
        format!("Connected browsers: {}.", describe(list))
    }
}

fn gone_message(chosen: &ChosenBrowser, problem: Option<String>, list: &[ExtensionRow]) -> String {
    let why = problem.unwrap_or_else(|| "it is not connected to the relay".into());
    let others = if list.is_empty() {
        String::new()
    } else {
        format!(
            " Other browsers online: {}; browser_connect switches to one of them.",
            describe(list)
        )
    };
    format!(
        "the browser \"{}\" is not available: {why}. The bridge reconnects to it automatically \
         when it comes back: make sure the browser is running and its mcp-relay extension is \
         connected (see its popup), then call the tool again.{others}",
        chosen.name
    )
}

fn unreachable_message(url: &str, link: &Link) -> String {
    let why = link
        .last_error
        .clone()
        .unwrap_or_else(|| format!("the relay at {url} has not answered yet"));
    format!("{why}. The bridge keeps retrying in the background; call the tool again in a moment.")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_to_the_cap_with_jitter() {
        for failures in 0..40 {
            let delay = backoff(failures);
            let full = BACKOFF_BASE
                .saturating_mul(1u32 << failures.min(16))
                .min(BACKOFF_CAP);
            assert!(delay >= full / 2 && delay <= full, "{failures}: {delay:?}");
        }
        assert!(backoff(30) <= BACKOFF_CAP);
    }

    #[test]
    fn browsers_are_found_by_id_then_by_name() {
        let list = vec![
            ExtensionRow {
                id: "ext-1".into(),
                name: "Work".into(),
                connected: true,
                version: None,
            },
            ExtensionRow {
                id: "ext-2".into(),
                name: "Home".into(),
                connected: true,
                version: None,
            },
        ];
        assert_eq!(find_browser(&list, "ext-2").unwrap().name, "Home");
        assert_eq!(find_browser(&list, " work ").unwrap().id, "ext-1");
        assert!(find_browser(&list, "Office").is_none());
    }
}
