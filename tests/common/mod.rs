//! Shared test harness: a real relay on a loopback port, and WebSocket clients that play an
//! extension or an MCP client the way real ones do.
#![allow(dead_code)]

pub mod bridge;
pub mod browser;
pub mod child;
pub mod http;
pub mod served;

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use mcp_relay::auth::{mint_hs256, MintClaims, Role};
use mcp_relay::config::ServeConfig;
use mcp_relay::server::{start, RunningRelay};
use serde_json::{json, Value};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

pub const SECRET: &str = "integration-test-secret-0123456789";
pub const WAIT: Duration = Duration::from_secs(10);

/// Starts a relay on 127.0.0.1 with an ephemeral port and test-friendly limits.
pub async fn relay_with(tweak: impl FnOnce(&mut ServeConfig)) -> RunningRelay {
    let mut config = ServeConfig::defaults();
    config.listen = "127.0.0.1:0".parse().unwrap();
    config.jwt_secret = Some(SECRET.into());
    config.rate_limit = 0.0;
    // Tests share nothing through the user's data directory; those about persistence give a
    // file of their own.
    config.state = Some(mcp_relay::operator::store::StateSpec::Memory);
    tweak(&mut config);
    start(config).await.expect("relay starts")
}

pub async fn relay() -> RunningRelay {
    relay_with(|_| {}).await
}

/// Polls `check` until it holds, failing the test after [`WAIT`]. For what happens a moment
/// after the step a test can see (a gauge falling once a session task ends, a counter the
/// relay bumps after answering): waiting for the event itself, instead of a fixed sleep that
/// is too long on a fast machine and too short on a loaded one.
pub async fn wait_until<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + WAIT;
    while !check().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting until {what}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// What the helpers need of a relay: where its endpoints are. The in-process relay has it, and
/// so has the relay binary run as a child ([`served::Served`]).
pub trait Endpoint {
    /// `ws://` or `wss://` URL of `/extension` or `/mcp`.
    fn url(&self, path: &str) -> String;
}

impl Endpoint for RunningRelay {
    fn url(&self, path: &str) -> String {
        RunningRelay::url(self, path)
    }
}

pub fn token(user: &str, role: Option<Role>) -> String {
    mint_hs256(
        SECRET.as_bytes(),
        &MintClaims::new(user, role, Duration::from_secs(3600)),
    )
}

/// A raw WebSocket client speaking JSON.
pub struct Client {
    pub ws: WebSocketStream<MaybeTlsStream<TcpStream>>,
}

impl Client {
    pub async fn connect(url: &str) -> Client {
        let (ws, _) = tokio_tungstenite::connect_async(url)
            .await
            .unwrap_or_else(|e| panic!("connecting to {url}: {e}"));
        Client { ws }
    }

    pub async fn send(&mut self, value: Value) {
        self.send_text(&value.to_string()).await;
    }

    pub async fn send_text(&mut self, text: &str) {
        self.ws
            .send(Message::Text(text.into()))
            .await
            .expect("send");
    }

    /// Next JSON frame, failing the test after `WAIT`.
    pub async fn recv(&mut self) -> Value {
        let text = self.recv_text().await;
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
    }

    /// Next text frame, raw.
    pub async fn recv_text(&mut self) -> String {
        loop {
            let message = tokio::time::timeout(WAIT, self.ws.next())
                .await
                .expect("timed out waiting for a frame")
                .expect("socket closed while waiting for a frame")
                .expect("socket error");
            match message {
                Message::Text(text) => return text.to_string(),
                Message::Close(frame) => panic!("socket closed: {frame:?}"),
                _ => continue,
            }
        }
    }

    /// Next frame that is a notification with `method`, skipping others.
    pub async fn recv_notification(&mut self, method: &str) -> Value {
        loop {
            let frame = self.recv().await;
            if frame["method"] == method && frame.get("id").is_none() {
                return frame;
            }
        }
    }

    /// Next frame that is a response (no method), skipping notifications.
    pub async fn recv_response(&mut self) -> Value {
        loop {
            let frame = self.recv().await;
            if frame.get("method").is_none() {
                return frame;
            }
        }
    }

    /// Waits for no frame at all during `quiet`.
    pub async fn expect_silence(&mut self, quiet: Duration) {
        if let Ok(Some(Ok(Message::Text(text)))) = tokio::time::timeout(quiet, self.ws.next()).await
        {
            panic!("expected silence, got {text}");
        }
    }

    /// Waits for the socket to be closed by the relay; returns the close code and reason.
    pub async fn expect_close(&mut self) -> (u16, String) {
        loop {
            let message = tokio::time::timeout(WAIT, self.ws.next())
                .await
                .expect("timed out waiting for close");
            match message {
                Some(Ok(Message::Close(Some(frame)))) => {
                    return (u16::from(frame.code), frame.reason.to_string())
                }
                Some(Ok(Message::Close(None))) | None => return (1005, String::new()),
                Some(Ok(_)) => continue,
                Some(Err(e)) => panic!("socket error instead of close: {e}"),
            }
        }
    }

    /// Sends a request and returns its response.
    pub async fn call(&mut self, id: Value, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        self.recv_response().await
    }

    pub async fn close(mut self) {
        let _ = self
            .ws
            .close(Some(tokio_tungstenite::tungstenite::protocol::CloseFrame {
                code: CloseCode::Normal,
                reason: "".into(),
            }))
            .await;
    }
}

/// A fake extension that authenticates like the real (Blueprint) one: `build_info` first,
/// then `access_token` + `client_id`.
pub struct Extension {
    pub client: Client,
    pub extension_id: String,
    pub user_id: String,
    /// The `status` every new socket gets right after `authenticated`.
    pub initial_status: Value,
}

impl Extension {
    pub async fn connect(relay: &impl Endpoint, user: &str, name: &str, client_id: &str) -> Self {
        Self::connect_url(&relay.url("/extension"), user, name, client_id).await
    }

    pub async fn connect_url(url: &str, user: &str, name: &str, client_id: &str) -> Self {
        let mut client = Client::connect(url).await;
        client
            .send(json!({"jsonrpc": "2.0", "method": "build_info", "params": {"version": "1.2.3"}}))
            .await;
        Self::authenticate(client, user, name, client_id, json!({})).await
    }

    /// Answers the relay's `authenticate` on an open socket, with `extra` fields added to the
    /// answer, and waits for `authenticated` and the first `status`.
    pub async fn authenticate(
        mut client: Client,
        user: &str,
        name: &str,
        client_id: &str,
        extra: Value,
    ) -> Self {
        let auth = client.recv().await;
        assert_eq!(auth["method"], "authenticate");
        assert!(auth["id"].as_str().unwrap().starts_with("proxy:"));
        let mut result = json!({
            "name": name,
            "access_token": token(user, Some(Role::Extension)),
            "client_id": client_id,
        });
        if let (Some(result), Value::Object(extra)) = (result.as_object_mut(), extra) {
            result.extend(extra);
        }
        client
            .send(json!({"jsonrpc": "2.0", "id": auth["id"], "result": result}))
            .await;
        let authenticated = client.recv_notification("authenticated").await;
        let extension_id = authenticated["params"]["extension_id"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(extension_id.starts_with("ext-"));
        let initial_status = client.recv_notification("status").await;
        Extension {
            client,
            extension_id,
            user_id: user.to_owned(),
            initial_status,
        }
    }

    /// The next forwarded request (skipping notifications).
    pub async fn next_request(&mut self) -> Value {
        loop {
            let frame = self.client.recv().await;
            if frame.get("id").is_some() && frame.get("method").is_some() {
                return frame;
            }
        }
    }

    pub async fn reply(&mut self, request: &Value, result: Value) {
        self.client
            .send(json!({"jsonrpc": "2.0", "id": request["id"], "result": result}))
            .await;
    }

    /// Answers every request with `{"echo": <method>, "params": <params>}` forever.
    pub fn spawn_echo(mut self) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            while let Some(Ok(message)) = self.client.ws.next().await {
                let Message::Text(text) = message else {
                    continue;
                };
                let frame: Value = serde_json::from_str(&text).unwrap();
                if frame.get("id").is_some() && frame.get("method").is_some() {
                    let reply = json!({"jsonrpc": "2.0", "id": frame["id"],
                        "result": {"echo": frame["method"], "params": frame["params"]}});
                    if self
                        .client
                        .ws
                        .send(Message::Text(reply.to_string().into()))
                        .await
                        .is_err()
                    {
                        break;
                    }
                }
            }
        })
    }
}

/// An MCP client as real ones behave: snake-case token, a client_id, no connectionId.
pub struct Mcp {
    pub client: Client,
    next_id: u64,
}

impl Mcp {
    pub async fn connect(relay: &impl Endpoint, user: &str) -> Self {
        Self::connect_url(&relay.url("/mcp"), user).await
    }

    pub async fn connect_url(url: &str, user: &str) -> Self {
        let mut client = Client::connect(url).await;
        let response = client
            .call(
                json!("5b7c7d2e-0000-4000-8000-000000000001"),
                "mcp_handshake",
                json!({"access_token": token(user, Some(Role::Mcp)), "client_id": "test-client"}),
            )
            .await;
        assert_eq!(response["result"]["authenticated"], true, "{response}");
        Mcp { client, next_id: 1 }
    }

    /// Sends a request with a fresh numeric id and returns the response.
    pub async fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        self.client.call(json!(self.next_id), method, params).await
    }

    /// Connects to an extension and consumes the `status` notification that follows.
    pub async fn connect_to(&mut self, extension_id: &str) -> Value {
        let response = self
            .call("connect", json!({"extension_id": extension_id}))
            .await;
        assert!(
            response["result"]["connection_id"].is_string(),
            "{response}"
        );
        let status = self.client.recv_notification("status").await;
        assert_eq!(status["params"]["connected"], true);
        response["result"].clone()
    }
}

/// A GET on loopback; returns (status, body).
pub async fn http_get(addr: std::net::SocketAddr, path: &str) -> (u16, String) {
    let answer = http::http(addr, "GET", path, &[], None).await;
    (answer.status, answer.body)
}

/// One JSON request on loopback, with the token as its bearer; returns the status and the
/// body as JSON (`Null` when it is not JSON).
pub async fn api(
    addr: std::net::SocketAddr,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<Value>,
) -> (u16, Value) {
    let auth = token.map(|t| format!("Bearer {t}"));
    let mut headers = vec![("Content-Type", "application/json")];
    if let Some(auth) = &auth {
        headers.push(("Authorization", auth));
    }
    let answer = http::http(addr, method, path, &headers, body.as_ref()).await;
    (answer.status, answer.json())
}

pub use mcp_relay_test_support::present_or_skip;

/// A JWT assembled by hand from `header` and `claims`, with `signature` as its third part.
pub fn raw_token(header: Value, claims: Value, signature: &str) -> String {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    format!(
        "{}.{}.{signature}",
        b64.encode(header.to_string()),
        b64.encode(claims.to_string())
    )
}

/// A value from Prometheus text (`name` includes its labels), failing the test when missing.
pub fn metric(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name).and_then(|rest| rest.strip_prefix(' ')))
        .unwrap_or_else(|| panic!("metric {name} missing in\n{text}"))
        .trim()
        .parse()
        .unwrap()
}
