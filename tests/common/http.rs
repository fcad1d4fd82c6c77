//! HTTP for tests: one request per connection through hyper's client ([`http`]), so tests see
//! exactly the status codes and headers a host would, and an MCP session over Streamable HTTP
//! on top of it.

use std::net::SocketAddr;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use mcp_relay::auth::Role;
use serde_json::{json, Value};

use super::{token, WAIT};

/// One HTTP answer.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Answer {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON (`Null` when it is not JSON).
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }

    /// The JSON-RPC messages of the body, whether it is JSON or an SSE stream.
    pub fn messages(&self) -> Vec<Value> {
        if let Ok(value) = serde_json::from_str::<Value>(&self.body) {
            return vec![value];
        }
        self.body
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .filter_map(|data| serde_json::from_str(data.trim()).ok())
            .collect()
    }

    /// The message answering request `id`.
    pub fn answer(&self, id: u64) -> Value {
        self.messages()
            .into_iter()
            .find(|m| m["id"] == id)
            .unwrap_or_else(|| panic!("no answer to {id} in {self:?}"))
    }
}

/// Sends one request on a connection of its own and reads the whole answer (a stream until
/// the server ends it), within [`WAIT`]. The HTTP itself is hyper's client half, as in
/// `src/http_client.rs`: tests read statuses, headers and bodies as a host's HTTP stack would,
/// chunked or not. `Host` is the address unless `headers` name one; `Connection: close`. Tests of malformed or
/// held-open HTTP write their bytes by hand on purpose and do not come here.
pub async fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&Value>,
) -> Answer {
    let body = body.map(Value::to_string).unwrap_or_default();
    let mut request = hyper::Request::builder().method(method).uri(path);
    if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("host")) {
        request = request.header("host", addr.to_string());
    }
    // The server ends the connection with its answer, so a test's connections are gone when
    // its requests are (per-user connection caps count open ones).
    request = request.header("connection", "close");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request
        .body(Full::new(Bytes::from(body)))
        .expect("a well-formed request");
    let exchange = async {
        let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
            .await
            .expect("an HTTP/1.1 connection");
        tokio::spawn(connection);
        let response = sender.send_request(request).await.expect("an answer");
        let status = response.status().as_u16();
        let headers = response
            .headers()
            .iter()
            .map(|(n, v)| {
                let value = String::from_utf8_lossy(v.as_bytes()).into_owned();
                (n.as_str().to_owned(), value)
            })
            .collect();
        let body = response
            .into_body()
            .collect()
            .await
            .expect("the whole body")
            .to_bytes();
        Answer {
            status,
            headers,
            body: String::from_utf8(body.to_vec()).expect("UTF-8 answer"),
        }
    };
    tokio::time::timeout(WAIT, exchange)
        .await
        .unwrap_or_else(|_| panic!("{method} {path} got no complete answer"))
}

pub const ACCEPT: (&str, &str) = ("Accept", "application/json, text/event-stream");
pub const JSON: (&str, &str) = ("Content-Type", "application/json");

/// A host's `initialize` (protocol 2025-06-18, as `host`) at `path` with `token` as its bearer
/// token: the first request of every session, and the one refused when the token is not good.
pub async fn initialize(addr: SocketAddr, token: &str, host: &str, path: &str) -> Answer {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": host, "version": "1.0"}}});
    http(
        addr,
        "POST",
        path,
        &[ACCEPT, JSON, ("Authorization", &format!("Bearer {token}"))],
        Some(&init),
    )
    .await
}

/// An MCP session over HTTP, as a host holds it.
pub struct Session {
    pub addr: SocketAddr,
    pub auth: String,
    pub id: String,
}

impl Session {
    /// `initialize` (as `host`) and `notifications/initialized`, at `path` (`/mcp?tools=…`).
    pub async fn open(addr: SocketAddr, user: &str, host: &str, path: &str) -> Session {
        Session::open_with(addr, &token(user, Some(Role::Mcp)), host, path).await
    }

    pub async fn open_with(addr: SocketAddr, token: &str, host: &str, path: &str) -> Session {
        let auth = format!("Bearer {token}");
        let answer = initialize(addr, token, host, path).await;
        assert_eq!(answer.status, 200, "{answer:?}");
        assert_eq!(
            answer.answer(1)["result"]["serverInfo"]["name"],
            "mcp-relay"
        );
        let id = answer
            .header("mcp-session-id")
            .expect("a session id")
            .to_owned();
        let session = Session { addr, auth, id };
        let initialized = session
            .post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        assert_eq!(initialized.status, 202, "{initialized:?}");
        session
    }

    pub async fn post(&self, message: &Value) -> Answer {
        self.post_as(&self.auth, message).await
    }

    pub async fn post_as(&self, auth: &str, message: &Value) -> Answer {
        http(
            self.addr,
            "POST",
            "/mcp",
            &[
                ACCEPT,
                JSON,
                ("Authorization", auth),
                ("Mcp-Session-Id", &self.id),
                ("MCP-Protocol-Version", "2025-06-18"),
            ],
            Some(message),
        )
        .await
    }

    pub async fn call(&self, id: u64, tool: &str, args: Value) -> Value {
        let answer = self
            .post(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": tool, "arguments": args}}))
            .await;
        assert_eq!(answer.status, 200, "{answer:?}");
        answer.answer(id)["result"].clone()
    }

    pub async fn tools(&self) -> Vec<String> {
        let answer = self
            .post(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
            .await;
        assert_eq!(answer.status, 200, "{answer:?}");
        answer.answer(2)["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    }
}

pub fn text(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}
