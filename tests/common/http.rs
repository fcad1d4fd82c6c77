//! MCP over Streamable HTTP by hand: a minimal HTTP/1.1 client on a TCP socket (each request
//! on its own connection), so tests see exactly the status codes and headers a host would, and
//! an MCP session on top of it.

use std::net::SocketAddr;

use mcp_relay::auth::Role;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

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

/// Sends one request (`Connection: close`) and reads the whole answer.
pub async fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&Value>,
) -> Answer {
    let body = body.map(Value::to_string).unwrap_or_default();
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(&body);
    let exchange = async {
        let mut socket = tokio::net::TcpStream::connect(addr).await.unwrap();
        socket.write_all(request.as_bytes()).await.unwrap();
        let mut raw = Vec::new();
        socket.read_to_end(&mut raw).await.unwrap();
        raw
    };
    let raw = tokio::time::timeout(WAIT, exchange)
        .await
        .unwrap_or_else(|_| panic!("{method} {path} got no complete answer"));
    let raw = String::from_utf8(raw).expect("UTF-8 answer");
    let (head, rest) = raw.split_once("\r\n\r\n").expect("a header block");
    let mut lines = head.lines();
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let chunked = headers.iter().any(|(n, v)| {
        n.eq_ignore_ascii_case("transfer-encoding") && v.eq_ignore_ascii_case("chunked")
    });
    let body = if chunked {
        dechunk(rest)
    } else {
        rest.to_owned()
    };
    Answer {
        status,
        headers,
        body,
    }
}

fn dechunk(mut rest: &str) -> String {
    let mut body = String::new();
    while let Some((size, after)) = rest.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if size == 0 {
            break;
        }
        body.push_str(&after[..size]);
        rest = after[size..].trim_start_matches("\r\n");
    }
    body
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
