//! The relay as a remote MCP server: MCP over Streamable HTTP on `/mcp`, against a real relay
//! on a loopback port and scripted extensions. The HTTP here is written by hand on a TCP
//! socket, so each test sees exactly the status codes and headers a host would; the official
//! SDKs' clients run in `http_sdk_*` below.

// Without the `http-mcp` feature `/mcp` is WebSocket-only (answered 405 otherwise).
#![cfg(feature = "http-mcp")]

use crate::common;

use std::time::Duration;

use common::http::{http, initialize, text, Session, ACCEPT, JSON};
// The relay binary of MCP_RELAY_TEST_BINARY when set (CI: the Dockerfile's build), else the
// relay in this process.
use common::served::{relay, relay_with};
use common::{token, Extension, SECRET, WAIT};
use mcp_relay::auth::{mint_hs256, MintClaims, Role};
use serde_json::{json, Value};

#[tokio::test]
async fn a_request_without_a_token_gets_401_pointing_at_the_resource_metadata() {
    let relay = relay_with(|config| {
        config.oauth_issuers = vec![
            "https://auth.example.com".into(),
            "https://login.example.org/tenant".into(),
        ];
    })
    .await;
    let addr = relay.local_addr;
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}});
    let anonymous = http(addr, "POST", "/mcp", &[ACCEPT, JSON], Some(&init)).await;
    assert_eq!(anonymous.status, 401, "{anonymous:?}");
    let challenge = anonymous.header("www-authenticate").expect("a challenge");
    let metadata_url = format!("http://{addr}/.well-known/oauth-protected-resource");
    assert_eq!(
        challenge,
        format!("Bearer resource_metadata=\"{metadata_url}\"")
    );

    // The host follows the challenge to the metadata (RFC 9728).
    let metadata = http(
        addr,
        "GET",
        "/.well-known/oauth-protected-resource",
        &[],
        None,
    )
    .await;
    assert_eq!(metadata.status, 200);
    let metadata: Value = serde_json::from_str(&metadata.body).unwrap();
    assert_eq!(metadata["resource"], format!("http://{addr}/mcp"));
    assert_eq!(
        metadata["authorization_servers"],
        json!([
            "https://auth.example.com",
            "https://login.example.org/tenant"
        ])
    );
    assert_eq!(metadata["bearer_methods_supported"], json!(["header"]));

    // A token of the wrong role, or a forged one, is refused the same way, and says so.
    for bad in [
        token("alice", Some(Role::Extension)),
        format!("{}x", token("alice", Some(Role::Mcp))),
    ] {
        let auth = format!("Bearer {bad}");
        let refused = http(
            addr,
            "POST",
            "/mcp",
            &[ACCEPT, JSON, ("Authorization", &auth)],
            Some(&init),
        )
        .await;
        assert_eq!(refused.status, 401, "{refused:?}");
        let challenge = refused.header("www-authenticate").unwrap();
        assert!(challenge.contains("error=\"invalid_token\""), "{challenge}");
        assert!(challenge.contains(&metadata_url), "{challenge}");
        assert!(!refused.body.contains(&bad), "the token is echoed back");
    }
    relay.shutdown().await;
}

#[tokio::test]
async fn a_token_for_another_audience_is_refused_when_the_audience_is_pinned() {
    let relay =
        relay_with(|config| config.jwt_audience = Some("https://relay.example".into())).await;
    // `token()` mints no `aud`: with --jwt-audience set that is not this relay's token.
    let refused = initialize(
        relay.local_addr,
        &token("alice", Some(Role::Mcp)),
        "host",
        "/mcp",
    )
    .await;
    assert_eq!(refused.status, 401, "{refused:?}");
    relay.shutdown().await;
}

#[tokio::test]
async fn a_foreign_origin_is_refused_and_an_allowed_one_is_served() {
    let relay =
        relay_with(|config| config.allowed_origins = vec!["https://app.example.com".into()]).await;
    let addr = relay.local_addr;
    let auth = format!("Bearer {}", token("alice", Some(Role::Mcp)));
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "web", "version": "1"}}});
    let foreign = http(
        addr,
        "POST",
        "/mcp",
        &[
            ACCEPT,
            JSON,
            ("Authorization", &auth),
            ("Origin", "https://evil.example"),
        ],
        Some(&init),
    )
    .await;
    assert_eq!(foreign.status, 403, "{foreign:?}");
    // The Origin is checked before the token: a rebinding page learns nothing about tokens.
    let anonymous = http(
        addr,
        "POST",
        "/mcp",
        &[ACCEPT, JSON, ("Origin", "http://localhost:1234")],
        Some(&init),
    )
    .await;
    assert_eq!(anonymous.status, 403);
    let allowed = http(
        addr,
        "POST",
        "/mcp",
        &[
            ACCEPT,
            JSON,
            ("Authorization", &auth),
            ("Origin", "https://app.example.com"),
        ],
        Some(&init),
    )
    .await;
    assert_eq!(allowed.status, 200, "{allowed:?}");
    assert!(allowed.header("mcp-session-id").is_some());
    relay.shutdown().await;
}

#[tokio::test]
async fn a_tool_call_reaches_the_users_browser_named_after_the_host() {
    let relay = relay().await;
    let mut extension = Extension::connect(&relay, "alice", "Chrome", "client-1").await;
    let session = Session::open(relay.local_addr, "alice", "Claude Code", "/mcp").await;
    assert!(session.tools().await.contains(&"browser_click".to_owned()));

    let call = {
        let session = &session;
        async move { session.call(3, "browser_snapshot", json!({})).await }
    };
    let browser = async {
        // The browser's owner is told which assistant connects, then gets the command.
        let opened = extension
            .client
            .recv_notification("connection_opened")
            .await;
        assert_eq!(opened["params"]["client_name"], "Claude Code");
        let request = extension.next_request().await;
        assert_eq!(request["method"], "snapshot");
        extension
            .reply(&request, json!({"snapshot": "- button \"Go\" [ref=e1]"}))
            .await;
    };
    let (result, ()) = tokio::join!(call, browser);
    assert_ne!(result["isError"], true, "{result}");
    assert!(text(&result).contains("[ref=e1]"), "{result}");
    relay.shutdown().await;
}

#[tokio::test]
async fn another_user_can_neither_use_a_session_nor_see_its_browser() {
    let relay = relay().await;
    let addr = relay.local_addr;
    let echo = Extension::connect(&relay, "alice", "Alice's Chrome", "client-a")
        .await
        .spawn_echo();
    let alice = Session::open(addr, "alice", "host-a", "/mcp").await;
    let bob = Session::open(addr, "bob", "host-b", "/mcp").await;

    // Bob's token with Alice's session id: as if the session did not exist.
    let bob_auth = bob.auth.clone();
    let hijack = alice
        .post_as(
            &bob_auth,
            &json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                "params": {"name": "browser_snapshot", "arguments": {}}}),
        )
        .await;
    assert_eq!(hijack.status, 404, "{hijack:?}");
    let delete = http(
        addr,
        "DELETE",
        "/mcp",
        &[("Authorization", &bob_auth), ("Mcp-Session-Id", &alice.id)],
        None,
    )
    .await;
    assert_eq!(delete.status, 404, "{delete:?}");

    // Bob's own session sees no browser at all; Alice's sees hers and uses it.
    let listed = bob.call(6, "browser_list", json!({})).await;
    assert!(!text(&listed).contains("Alice's Chrome"), "{listed}");
    let refused = bob.call(7, "browser_snapshot", json!({})).await;
    assert_eq!(refused["isError"], true, "{refused}");
    let listed = alice.call(8, "browser_list", json!({})).await;
    assert!(text(&listed).contains("Alice's Chrome"), "{listed}");
    let answer = alice.call(9, "browser_snapshot", json!({})).await;
    assert_ne!(answer["isError"], true, "{answer}");
    assert!(text(&answer).contains("snapshot"), "{answer}");
    echo.abort();
    relay.shutdown().await;
}

#[tokio::test]
async fn a_deleted_session_answers_404() {
    let relay = relay().await;
    let session = Session::open(relay.local_addr, "alice", "host", "/mcp").await;
    let deleted = http(
        relay.local_addr,
        "DELETE",
        "/mcp",
        &[
            ("Authorization", &session.auth),
            ("Mcp-Session-Id", &session.id),
            ("MCP-Protocol-Version", "2025-06-18"),
        ],
        None,
    )
    .await;
    // As the official SDKs expect (Python's client warns on anything but 200 or 204).
    assert_eq!(deleted.status, 200, "{deleted:?}");
    let after = session
        .post(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
        .await;
    assert_eq!(after.status, 404, "{after:?}");
    relay.shutdown().await;
}

#[tokio::test]
async fn metrics_count_live_http_sessions() {
    let relay = relay().await;
    let sessions = || async {
        let answer = http(relay.local_addr, "GET", "/metrics", &[], None).await;
        common::metric(&answer.body, "mcp_relay_http_mcp_sessions")
    };
    assert_eq!(sessions().await, 0.0);
    let one = Session::open(relay.local_addr, "alice", "host", "/mcp").await;
    let _two = Session::open(relay.local_addr, "bob", "host", "/mcp").await;
    assert_eq!(sessions().await, 2.0);
    let deleted = http(
        relay.local_addr,
        "DELETE",
        "/mcp",
        &[
            ("Authorization", &one.auth),
            ("Mcp-Session-Id", &one.id),
            ("MCP-Protocol-Version", "2025-06-18"),
        ],
        None,
    )
    .await;
    assert!(deleted.status < 300, "{deleted:?}");
    let deadline = tokio::time::Instant::now() + WAIT;
    while sessions().await != 1.0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the ended session is still counted"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    relay.shutdown().await;
}

#[tokio::test]
async fn an_idle_session_expires_and_answers_404() {
    let relay = relay_with(|config| config.mcp_session_idle = Duration::from_millis(300)).await;
    let session = Session::open(relay.local_addr, "alice", "host", "/mcp").await;
    assert!(!session.tools().await.is_empty());
    // The host stays silent (reading /metrics does not touch the session) until the session
    // has ended on its own.
    common::wait_until("the idle session has ended", || async {
        let answer = http(relay.local_addr, "GET", "/metrics", &[], None).await;
        common::metric(&answer.body, "mcp_relay_http_mcp_sessions") == 0.0
    })
    .await;
    let expired = session
        .post(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
        .await;
    assert_eq!(expired.status, 404, "{expired:?}");
    // The host initializes again and carries on.
    let again = Session::open(relay.local_addr, "alice", "host", "/mcp").await;
    assert_ne!(again.id, session.id);
    relay.shutdown().await;
}

#[tokio::test]
async fn the_tools_mode_is_chosen_per_relay_and_per_session() {
    let relay = relay_with(|config| config.mcp_tools = "proxy".into()).await;
    let addr = relay.local_addr;
    let default = Session::open(addr, "alice", "host", "/mcp").await;
    assert_eq!(default.tools().await, vec!["proxy".to_owned()]);
    let retrieve = Session::open(addr, "alice", "host", "/mcp?tools=retrieve").await;
    let tools = retrieve.tools().await;
    assert!(tools.contains(&"retrieve_tools".to_owned()), "{tools:?}");
    let direct = Session::open(addr, "alice", "host", "/mcp?tools=direct").await;
    assert!(direct
        .tools()
        .await
        .contains(&"browser_navigate".to_owned()));

    let unknown = initialize(
        addr,
        &token("alice", Some(Role::Mcp)),
        "host",
        "/mcp?tools=everything",
    )
    .await;
    assert_eq!(unknown.status, 400);
    assert!(
        unknown.body.contains("direct, proxy, retrieve or all"),
        "{unknown:?}"
    );
    relay.shutdown().await;
}

/// Calls `browser_snapshot` in `session` while `extension` answers it; returns the
/// `connection_opened` the extension saw first, if any.
async fn snapshot_through(session: &Session, extension: &mut Extension, id: u64) -> Option<Value> {
    let call = session.call(id, "browser_snapshot", json!({}));
    let browser = async {
        let mut opened = None;
        loop {
            let frame = extension.client.recv().await;
            if frame["method"] == "connection_opened" {
                opened = Some(frame);
            } else if frame.get("id").is_some() && frame["method"] == "snapshot" {
                extension.reply(&frame, json!({"snapshot": "ok"})).await;
                return opened;
            }
        }
    };
    let (result, opened) = tokio::join!(call, browser);
    assert_ne!(result["isError"], true, "{result}");
    opened
}

/// Whether `extension` is told `connection_closed` within `wait`.
async fn told_closed(extension: &mut Extension, wait: Duration) -> bool {
    tokio::time::timeout(wait, async {
        loop {
            if extension.client.recv().await["method"] == "connection_closed" {
                return;
            }
        }
    })
    .await
    .is_ok()
}

#[tokio::test]
async fn a_refreshed_token_keeps_the_session_past_the_old_tokens_expiry() {
    let relay = relay_with(|config| config.token_expiry_grace = Duration::from_millis(200)).await;
    let addr = relay.local_addr;
    let short = |user: &str| {
        mint_hs256(
            SECRET.as_bytes(),
            &MintClaims::new(user, Some(Role::Mcp), Duration::from_secs(2)),
        )
    };
    let mut alice_browser = Extension::connect(&relay, "alice", "Chrome", "client-a").await;
    let mut bob_browser = Extension::connect(&relay, "bob", "Chrome", "client-b").await;
    let mut alice = Session::open_with(addr, &short("alice"), "host", "/mcp").await;
    let bob = Session::open_with(addr, &short("bob"), "host", "/mcp").await;
    assert!(snapshot_through(&alice, &mut alice_browser, 3)
        .await
        .is_some());
    assert!(snapshot_through(&bob, &mut bob_browser, 3).await.is_some());

    // Alice's host refreshes its token; Bob's does not.
    alice.auth = format!("Bearer {}", token("alice", Some(Role::Mcp)));
    assert!(!alice.tools().await.is_empty());

    // Bob's relay session ends with his token (2 s + 0.2 s grace) and his browser is told so;
    // Alice's lives on and the next call reuses the same connection.
    assert!(told_closed(&mut bob_browser, Duration::from_secs(5)).await);
    assert!(!told_closed(&mut alice_browser, Duration::from_millis(500)).await);
    assert!(snapshot_through(&alice, &mut alice_browser, 4)
        .await
        .is_none());
    relay.shutdown().await;
}

#[tokio::test]
async fn a_user_with_too_many_sessions_is_told_so() {
    let relay = relay_with(|config| config.max_mcp_clients_per_user = 2).await;
    let addr = relay.local_addr;
    let _one = Session::open(addr, "alice", "host", "/mcp").await;
    let _two = Session::open(addr, "alice", "host", "/mcp").await;
    let third = initialize(addr, &token("alice", Some(Role::Mcp)), "host", "/mcp").await;
    assert_eq!(third.status, 429, "{third:?}");
    // Another user is not affected.
    let _bob = Session::open(addr, "bob", "host", "/mcp").await;
    relay.shutdown().await;
}

#[test]
fn http_session_tokens_never_reach_the_log_even_at_trace() {
    let relay = common::child::ChildRelay::start_with(&[], &[("MCP_RELAY_LOG", "trace")], None);
    let bearer = token("alice", Some(Role::Mcp));
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let session = Session::open_with(relay.addr, &bearer, "host", "/mcp").await;
        assert!(!session.tools().await.is_empty());
        let status = session.call(3, "browser_status", json!({})).await;
        assert!(text(&status).contains("alice"), "{status}");
        let refused = http(
            relay.addr,
            "POST",
            "/mcp",
            &[
                ACCEPT,
                JSON,
                ("Authorization", &format!("Bearer {bearer}x")),
            ],
            Some(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}})),
        )
        .await;
        assert_eq!(refused.status, 401);
        // The child's log is read on a thread of its own: wait until it holds the session's
        // start and the refused request's answer.
        common::wait_until("the log holds the session and the refusal", || async {
            let log = relay.log();
            log.contains("an HTTP MCP session started")
                && log.lines().any(|line| {
                    line.contains("finished processing request") && line.contains("401")
                })
        })
        .await;
    });
    let log = relay.log();
    // The signature is the secret part; the whole token includes it.
    let signature = bearer.rsplit('.').next().unwrap();
    assert!(!log.contains(signature), "a bearer token reached the log");
}

/// Runs an official SDK's HTTP client script against a relay with one echoing extension of
/// `user`, and returns the JSON report it prints last.
async fn run_http_sdk(
    interpreter: &std::path::Path,
    script: &std::path::Path,
    user: &str,
) -> Value {
    let relay = relay().await;
    let echo = Extension::connect(&relay, user, "Chrome", "client-1")
        .await
        .spawn_echo();
    let url = relay.http_url("/mcp");
    let output = tokio::time::timeout(
        Duration::from_secs(60),
        tokio::process::Command::new(interpreter)
            .arg(script)
            .arg(&url)
            .env("MCP_RELAY_TOKEN", token(user, Some(Role::Mcp)))
            .output(),
    )
    .await
    .unwrap_or_else(|_| panic!("{} timed out", script.display()))
    .unwrap_or_else(|e| panic!("running {}: {e}", interpreter.display()));
    echo.abort();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{} failed ({}):\n{stdout}\n{}",
        script.display(),
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let report: Value = serde_json::from_str(stdout.trim().lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{} printed no JSON ({e}): {stdout}", script.display()));
    // What both SDKs must have seen.
    assert_eq!(report["server"], "mcp-relay", "{report}");
    assert!(
        report["tools"]
            .as_array()
            .unwrap()
            .contains(&json!("browser_click")),
        "{report}"
    );
    assert_eq!(report["answer"]["echo"], "snapshot", "{report}");
    assert_eq!(report["metadata"]["resource"], url, "{report}");
    assert_eq!(report["after_delete"], 404, "{report}");
    relay.shutdown().await;
    report
}

#[tokio::test]
async fn http_sdk_typescript_streamable_http_client_drives_the_relay() {
    let Some(dir) = common::bridge::typescript_sdk_client(
        "http_sdk_typescript_streamable_http_client_drives_the_relay",
    ) else {
        return;
    };
    let report = run_http_sdk("node".as_ref(), &dir.join("http.mjs"), "ts-user").await;
    assert!(
        report["protocol"]
            .as_str()
            .is_some_and(|p| p.starts_with("20")),
        "{report}"
    );
}

#[tokio::test]
async fn http_sdk_python_streamable_http_client_drives_the_relay() {
    let Some(python) = common::bridge::python_sdk_client(
        "http_sdk_python_streamable_http_client_drives_the_relay",
    ) else {
        return;
    };
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/mcp-python-client/http_client.py");
    let report = run_http_sdk(&python, &script, "py-user").await;
    assert_eq!(report["deletes"], json!([200]), "{report}");
    assert_eq!(report["warnings"], json!([]), "{report}");
}

#[tokio::test]
async fn a_session_on_one_node_drives_a_browser_on_another_and_other_nodes_answer_404() {
    let Some(nats) =
        mcp_relay_test_support::NatsServer::start_or_skip("HTTP MCP cluster test", &[])
    else {
        return;
    };
    let join = |config: &mut mcp_relay::config::ServeConfig| {
        config.cluster = Some(nats.url());
        config.cluster_options.heartbeat = Duration::from_millis(200);
        config.cluster_options.node_ttl = Duration::from_millis(1200);
    };
    // In this process whatever MCP_RELAY_TEST_BINARY says: the test watches the nodes join.
    let node_a = common::relay_with(join).await;
    let node_b = common::relay_with(join).await;
    for node in [&node_a, &node_b] {
        let cluster = node.cluster().unwrap();
        let deadline = tokio::time::Instant::now() + WAIT;
        while !cluster.is_connected() {
            assert!(
                tokio::time::Instant::now() < deadline,
                "a node did not join NATS"
            );
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }
    // The browser is on node B; the host's session on node A.
    let mut browser = Extension::connect(&node_b, "alice", "Chrome B", "client-1").await;
    let session = Session::open(node_a.local_addr, "alice", "Claude Code", "/mcp").await;
    let deadline = tokio::time::Instant::now() + WAIT;
    let mut id = 100;
    loop {
        id += 1;
        let listed = session.call(id, "browser_list", json!({})).await;
        if text(&listed).contains("Chrome B") {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "node A never saw the browser: {listed}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let opened = snapshot_through(&session, &mut browser, 3)
        .await
        .expect("connection_opened across nodes");
    assert_eq!(opened["params"]["client_name"], "Claude Code");

    // The session lives on node A only: node B answers its id with 404, and the host
    // re-initializes there and reaches the same browser.
    let elsewhere = Session {
        addr: node_b.local_addr,
        auth: session.auth.clone(),
        id: session.id.clone(),
    };
    let moved = elsewhere
        .post(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
        .await;
    assert_eq!(moved.status, 404, "{moved:?}");
    let again = Session::open(node_b.local_addr, "alice", "Claude Code", "/mcp").await;
    assert!(snapshot_through(&again, &mut browser, 4).await.is_some());
    node_a.shutdown().await;
    node_b.shutdown().await;
}

/// docs/BENCHMARKS.md: one tool call over HTTP vs over the bridge, same run. Ignored by
/// default (it measures, and takes a while): `cargo test --release --test mcp_http
/// tool_call_latency -- --ignored --nocapture`.
#[cfg(feature = "bridge")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn tool_call_latency_over_http_and_over_the_bridge() {
    let Some(dir) =
        common::bridge::typescript_sdk_client("tool_call_latency_over_http_and_over_the_bridge")
    else {
        return;
    };
    let calls: usize = std::env::var("MCP_RELAY_BENCH_CALLS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(2000);
    let relay = relay().await;
    let echo = Extension::connect(&relay, "bench", "Chrome", "client-1")
        .await
        .spawn_echo();
    let output = tokio::process::Command::new("node")
        .arg(dir.join("bench_http.mjs"))
        .arg(relay.http_url("/mcp"))
        .arg(calls.to_string())
        .arg(env!("CARGO_BIN_EXE_mcp-relay"))
        .args(["bridge", "--relay", &relay.url("/mcp")])
        .env("MCP_RELAY_TOKEN", token("bench", Some(Role::Mcp)))
        .output()
        .await
        .unwrap();
    echo.abort();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: Value = serde_json::from_str(stdout.trim().lines().last().unwrap()).unwrap();
    eprintln!("tool call latency: {report}");
    assert_eq!(report["calls"], calls);
    for transport in ["http", "bridge"] {
        assert!(
            report[transport]["p50_us"].as_u64().unwrap() > 0,
            "{report}"
        );
    }
    relay.shutdown().await;
}

/// Reads an open stream into `seen` until it holds `wanted`.
async fn read_until(stream: &mut tokio::net::TcpStream, seen: &mut String, wanted: &str) {
    use tokio::io::AsyncReadExt;
    let mut buffer = vec![0u8; 16 * 1024];
    let read = async {
        while !seen.contains(wanted) {
            let n = stream.read(&mut buffer).await.unwrap();
            assert!(n > 0, "the stream ended: {seen}");
            seen.push_str(&String::from_utf8_lossy(&buffer[..n]));
        }
    };
    if tokio::time::timeout(WAIT, read).await.is_err() {
        panic!("{wanted:?} never came on the stream: {seen}");
    }
}

#[tokio::test]
async fn dynamically_registered_tools_are_announced_on_the_get_stream() {
    use tokio::io::AsyncWriteExt;
    let relay = relay().await;
    let addr = relay.local_addr;
    let session = Session::open(addr, "alice", "host", "/mcp?tools=retrieve&dynamic=2").await;
    let before = session.tools().await;

    // The host's GET stream, for what the server says unprompted.
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let get = format!(
        "GET /mcp HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\nAuthorization: {}\r\n\
         Mcp-Session-Id: {}\r\nMCP-Protocol-Version: 2025-06-18\r\n\r\n",
        session.auth, session.id
    );
    stream.write_all(get.as_bytes()).await.unwrap();
    let mut seen = String::new();
    read_until(&mut stream, &mut seen, "\r\n\r\n").await;
    assert!(seen.starts_with("HTTP/1.1 200"), "{seen}");
    assert!(
        seen.to_ascii_lowercase().contains("text/event-stream"),
        "{seen}"
    );

    let found = session
        .call(
            3,
            "retrieve_tools",
            json!({"query": "get the document root node"}),
        )
        .await;
    let registered: Value = serde_json::from_str(&text(&found)).unwrap();
    let registered = registered["registered"][0]
        .as_str()
        .unwrap_or_else(|| panic!("nothing registered: {found}"))
        .to_owned();
    read_until(&mut stream, &mut seen, "notifications/tools/list_changed").await;
    let after = session.tools().await;
    assert!(
        !before.contains(&registered) && after.contains(&registered),
        "{after:?}"
    );
    relay.shutdown().await;
}

#[tokio::test]
async fn tool_calls_of_http_sessions_are_audited_with_their_user() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let audit_path = path.clone();
    let relay = relay_with(move |config| config.mcp_audit_log = Some(audit_path)).await;
    let echo = Extension::connect(&relay, "alice", "Chrome", "client-1")
        .await
        .spawn_echo();
    let alice = Session::open(relay.local_addr, "alice", "host", "/mcp").await;
    let bob = Session::open(relay.local_addr, "bob", "host", "/mcp").await;
    assert_ne!(
        alice.call(3, "browser_snapshot", json!({})).await["isError"],
        true
    );
    assert_eq!(
        bob.call(3, "browser_snapshot", json!({})).await["isError"],
        true
    );
    echo.abort();
    let lines: Vec<Value> = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let of = |user: &str| lines.iter().find(|l| l["user"] == user).cloned();
    let alice_line = of("alice").unwrap_or_else(|| panic!("{lines:?}"));
    assert_eq!(alice_line["tool"], "browser_snapshot");
    assert_eq!(alice_line["outcome"], "ok");
    let bob_line = of("bob").unwrap_or_else(|| panic!("{lines:?}"));
    assert_eq!(bob_line["outcome"], "error");
    relay.shutdown().await;
}

#[tokio::test]
async fn protocol_revisions_are_negotiated_and_the_version_header_is_checked() {
    let relay = relay().await;
    let addr = relay.local_addr;
    let auth = format!("Bearer {}", token("alice", Some(Role::Mcp)));
    let mut negotiated = Vec::new();
    for asked in ["2025-11-25", "2025-06-18", "2025-03-26"] {
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": asked, "capabilities": {},
            "clientInfo": {"name": "host", "version": "1"}}});
        let answer = http(
            addr,
            "POST",
            "/mcp",
            &[ACCEPT, JSON, ("Authorization", &auth)],
            Some(&init),
        )
        .await;
        assert_eq!(answer.status, 200, "{answer:?}");
        negotiated.push(answer.answer(1)["result"]["protocolVersion"].clone());
    }
    assert_eq!(
        negotiated,
        vec![
            json!("2025-11-25"),
            json!("2025-06-18"),
            json!("2025-03-26")
        ]
    );

    // A request whose MCP-Protocol-Version header names no revision is refused (with the
    // session's own token: a session answers only to the token that opened it).
    let session = Session::open(addr, "alice", "host", "/mcp").await;
    let wrong = http(
        addr,
        "POST",
        "/mcp",
        &[
            ACCEPT,
            JSON,
            ("Authorization", &session.auth),
            ("Mcp-Session-Id", &session.id),
            ("MCP-Protocol-Version", "1999-01-01"),
        ],
        Some(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})),
    )
    .await;
    assert_eq!(wrong.status, 400, "{wrong:?}");
    relay.shutdown().await;
}

/// The owner's consent works as for the bridge: a call refused with `-32010` ("not allowed
/// yet") is retried until the owner allows it, and `connection_opened` names the host.
#[tokio::test]
async fn a_call_waits_for_the_owners_approval() {
    let relay = relay().await;
    let mut extension = Extension::connect(&relay, "alice", "Chrome", "client-1").await;
    let session = Session::open(relay.local_addr, "alice", "Cursor", "/mcp").await;
    let owner = async {
        let opened = extension
            .client
            .recv_notification("connection_opened")
            .await;
        for _ in 0..2 {
            let request = extension.next_request().await;
            extension
                .client
                .send(
                    json!({"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32010,
                    "message": "The browser's owner has not allowed \"Cursor\" yet"}}),
                )
                .await;
        }
        let request = extension.next_request().await;
        extension.reply(&request, json!({"tabs": []})).await;
        opened
    };
    let started = std::time::Instant::now();
    let (result, opened) = tokio::join!(
        session.call(3, "browser_tabs", json!({"action": "list"})),
        owner
    );
    assert_ne!(result["isError"], true, "{result}");
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "it waited between tries"
    );
    assert_eq!(opened["params"]["client_name"], "Cursor", "{opened}");
    assert!(
        opened["params"]["client_id"]
            .as_str()
            .is_some_and(|id| id.starts_with("http-")),
        "{opened}"
    );
    relay.shutdown().await;
}

/// Resumability (MCP Streamable HTTP, "Resumability and Redelivery"): a host whose POST stream
/// dropped after the priming event, while the browser was still working, gets the answer by
/// `GET` with `Last-Event-ID` once the browser has answered.
#[tokio::test]
async fn a_call_whose_stream_dropped_is_resumed_with_last_event_id() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let relay = relay().await;
    let addr = relay.local_addr;
    let mut extension = Extension::connect(&relay, "alice", "Chrome", "client-1").await;
    let session = Session::open(addr, "alice", "Claude Code", "/mcp").await;

    // The call, by hand: read up to the priming event's id, then drop the connection.
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "browser_snapshot", "arguments": {}}})
    .to_string();
    let mut socket = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAccept: application/json, text/event-stream\r\n\
         Content-Type: application/json\r\nAuthorization: {}\r\nMcp-Session-Id: {}\r\n\
         MCP-Protocol-Version: 2025-06-18\r\nContent-Length: {}\r\n\r\n{body}",
        session.auth,
        session.id,
        body.len()
    );
    socket.write_all(request.as_bytes()).await.unwrap();
    let mut seen = String::new();
    let event_id = tokio::time::timeout(WAIT, async {
        let mut buffer = [0u8; 4096];
        loop {
            let n = socket.read(&mut buffer).await.unwrap();
            assert!(n > 0, "stream ended before an event id: {seen}");
            seen.push_str(&String::from_utf8_lossy(&buffer[..n]));
            if let Some(line) = seen.lines().find(|l| l.starts_with("id:")) {
                break line["id:".len()..].trim().to_owned();
            }
        }
    })
    .await
    .expect("a priming event with an id");
    assert!(
        !seen.contains("\"id\":7"),
        "answered before the browser did: {seen}"
    );
    drop(socket);

    // The browser answers while nobody is listening.
    let request = extension.next_request().await;
    extension
        .reply(&request, json!({"snapshot": "- button \"Later\" [ref=e9]"}))
        .await;
    tokio::time::sleep(Duration::from_millis(200)).await;

    let resumed = http(
        addr,
        "GET",
        "/mcp",
        &[
            ("Accept", "text/event-stream"),
            ("Authorization", &session.auth),
            ("Mcp-Session-Id", &session.id),
            ("MCP-Protocol-Version", "2025-06-18"),
            ("Last-Event-ID", &event_id),
        ],
        None,
    )
    .await;
    assert_eq!(resumed.status, 200, "{resumed:?}");
    let answer = resumed.answer(7);
    assert!(text(&answer["result"]).contains("[ref=e9]"), "{resumed:?}");
    relay.shutdown().await;
}

/// Protocol 2026-07-28 has no `initialize` and no session: every request carries the protocol
/// version and the client's capabilities in `_meta`. Each such request is served on its own,
/// with the same bearer token check, and a tool call reaches the user's browser.
#[tokio::test]
async fn a_client_of_protocol_2026_07_28_calls_a_tool_without_a_session() {
    let relay = relay().await;
    let echo = Extension::connect(&relay, "alice", "Chrome", "client-1")
        .await
        .spawn_echo();
    let auth = format!("Bearer {}", token("alice", Some(Role::Mcp)));
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "stateless host", "version": "1"},
    });
    let post = |id: u64, method: &'static str, name: Option<&'static str>, params: Value| {
        let auth = auth.clone();
        let mut params = params;
        params["_meta"] = meta.clone();
        async move {
            let mut headers = vec![
                ACCEPT,
                JSON,
                ("Authorization", auth.as_str()),
                ("MCP-Protocol-Version", "2026-07-28"),
                ("Mcp-Method", method),
            ];
            if let Some(name) = name {
                headers.push(("Mcp-Name", name));
            }
            http(
                relay.local_addr,
                "POST",
                "/mcp",
                &headers,
                Some(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})),
            )
            .await
        }
    };
    let listed = post(1, "tools/list", None, json!({})).await;
    assert_eq!(listed.status, 200, "{listed:?}");
    assert!(listed.header("mcp-session-id").is_none(), "{listed:?}");
    let tools = listed.answer(1)["result"]["tools"].clone();
    assert!(tools.to_string().contains("browser_snapshot"), "{tools}");
    let called = post(
        2,
        "tools/call",
        Some("browser_snapshot"),
        json!({"name": "browser_snapshot", "arguments": {}}),
    )
    .await;
    assert_eq!(called.status, 200, "{called:?}");
    let result = called.answer(2)["result"].clone();
    assert_ne!(result["isError"], true, "{result}");
    assert!(text(&result).contains("snapshot"), "{result}");
    // Without a token: 401, as for any request.
    let anonymous = http(
        relay.local_addr,
        "POST",
        "/mcp",
        &[ACCEPT, JSON, ("MCP-Protocol-Version", "2026-07-28")],
        Some(
            &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {"_meta": meta}}),
        ),
    )
    .await;
    assert_eq!(anonymous.status, 401, "{anonymous:?}");
    echo.abort();
    relay.shutdown().await;
}
