//! Routing rules without sockets: detached peers ([`Peer::detached`]) whose queues the tests
//! read, and detached cluster nodes fed node messages directly, whose outbound queue shows what
//! they would publish. Every [`Ending`] is checked for what each side receives.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::value::RawValue;
use serde_json::Value;
use tokio::sync::mpsc::UnboundedReceiver;

use super::*;
use crate::config::ServeConfig;
use crate::net::peer::DetachedRx;
use crate::routing::cluster::wire::{self, Kind, Presence, PresenceEntry};
use crate::routing::cluster::{Cluster, Outbound};

const NODE_TTL: Duration = Duration::from_secs(3);

fn limits() -> HubLimits {
    HubLimits::from_config(&ServeConfig::defaults())
}

fn local_hub() -> Hub {
    Hub::new(limits(), Arc::new(Metrics::default()), None)
}

/// A cluster node without NATS, and what it publishes.
fn node(node_id: &str) -> (Arc<Hub>, Arc<Cluster>, UnboundedReceiver<Outbound>) {
    let (cluster, outbound) = Cluster::detached(node_id, NODE_TTL);
    let hub = Arc::new(Hub::new(
        limits(),
        Arc::new(Metrics::default()),
        Some(Arc::clone(&cluster)),
    ));
    (hub, cluster, outbound)
}

fn auth(user: &str, client_id: &str, name: &str) -> ExtensionAuth {
    ExtensionAuth {
        user_id: user.into(),
        client_id: Some(client_id.into()),
        name: name.into(),
        version: Some("v".repeat(1000)),
    }
}

fn raw(json: &str) -> Box<RawValue> {
    RawValue::from_string(json.to_owned()).unwrap()
}

/// A frame in a few words, so tests compare what each side received at a glance:
/// `request <id> <method>`, `result <id>`, `error <id> <code>`, or a notification's method with
/// its telling parameter.
fn summary(frame: &str) -> String {
    let Ok(v) = serde_json::from_str::<Value>(frame) else {
        return frame.to_owned();
    };
    let p = &v["params"];
    let text = |v: &Value| v.as_str().map_or_else(|| v.to_string(), str::to_owned);
    match (v["method"].as_str(), v.get("id")) {
        (Some(method), Some(id)) => format!("request {} {method}", text(id)),
        (Some("status"), None) => format!("status {}", p["peer_count"]),
        (Some("notifications/cancelled"), None) => {
            format!(
                "cancelled {} ({})",
                text(&p["requestId"]),
                text(&p["reason"])
            )
        }
        (Some("connection_closed"), None) => format!("connection_closed ({})", text(&p["reason"])),
        (Some("disconnected"), None) => format!("disconnected ({})", text(&p["reason"])),
        (Some("connected"), None) => format!("connected {}", text(&p["name"])),
        (Some("connection_opened"), None) => format!(
            "connection_opened {} by {}",
            text(&p["connection_id"]),
            text(&p["client_name"])
        ),
        (Some(method), None) => method.to_owned(),
        (None, Some(id)) if v.get("error").is_some() => {
            format!("error {} {}", text(id), v["error"]["code"])
        }
        (None, Some(id)) => format!("result {}", text(id)),
        (None, None) => frame.to_owned(),
    }
}

/// What a detached peer received since the last look, summarised.
fn got(rx: &mut DetachedRx) -> Vec<String> {
    rx.frames().iter().map(|f| summary(f)).collect()
}

/// What a detached node published since the last look: `<kind> <node>: <body summary>`.
fn published(rx: &mut UnboundedReceiver<Outbound>) -> Vec<String> {
    let mut out = Vec::new();
    while let Ok(item) = rx.try_recv() {
        match item {
            Outbound::Publish { subject, payload } => {
                let message = wire::open(&payload).unwrap();
                let node = subject.rsplit('.').next().unwrap();
                out.push(format!(
                    "{:?} {node}: {}",
                    message.kind,
                    summary(message.body)
                ));
            }
            Outbound::Presence { leaving } => out.push(format!("presence leaving={leaving}")),
            Outbound::Flush(_) => {}
        }
    }
    out
}

/// A local extension with one socket, its first frames already read.
fn extension(hub: &Hub, user: &str, client_id: &str) -> (String, Peer, DetachedRx) {
    let (peer, mut rx) = Peer::detached();
    let id = hub
        .register_extension(
            &auth(user, client_id, &format!("Browser {client_id}")),
            &peer,
        )
        .unwrap();
    assert_eq!(got(&mut rx), ["authenticated", "status 0"]);
    (id, peer, rx)
}

fn client(user: &str) -> (McpClient, DetachedRx) {
    let (peer, rx) = Peer::detached();
    let client = McpClient {
        user_id: user.into(),
        mcp_client_id: "mcp-1".into(),
        client_id: Some("bridge-1".into()),
        client_name: Some("Claude Desktop".into()),
        peer,
    };
    (client, rx)
}

fn message(kind: Kind, connection_id: &str, from: &str, body: &str) -> Vec<u8> {
    wire::envelope(kind, connection_id, from, body).to_vec()
}

fn presence(node: &str, extensions: Vec<PresenceEntry>, leaving: bool) -> Vec<u8> {
    serde_json::to_vec(&Presence {
        node: node.into(),
        incarnation: format!("{node}-life-1"),
        leaving,
        extensions,
    })
    .unwrap()
}

fn listed(id: &str, user: &str, name: &str) -> PresenceEntry {
    PresenceEntry {
        id: id.into(),
        user_id: user.into(),
        name: name.into(),
        version: None,
        connections: 0,
    }
}

/// A local pair with one request pending: (hub, connection id, client rx, extension rx).
fn pair_with_a_pending_request() -> (Hub, String, DetachedRx, String, Peer, DetachedRx) {
    let hub = local_hub();
    let (ext, ext_peer, mut ext_rx) = extension(&hub, "alice", "1");
    let (mcp, mcp_rx) = client("alice");
    let conn = hub.connect(&mcp, &ext).unwrap().connection_id;
    hub.forward_request(&conn, &raw("7"), "tools/call", None)
        .unwrap();
    assert_eq!(
        got(&mut ext_rx),
        [
            format!("connection_opened {conn} by Claude Desktop"),
            "status 1".to_owned(),
            format!("request {conn}:7 tools/call")
        ]
    );
    (hub, conn, mcp_rx, ext, ext_peer, ext_rx)
}

#[test]
fn names_are_cut_on_a_character_boundary() {
    assert_eq!(truncate_utf8("short", 256), "short");
    let name = format!("abc{}", "é".repeat(1000));
    let cut = truncate_utf8(&name, 256);
    assert_eq!(cut.len(), 255, "the 256th byte is inside an é");
    assert!(name.starts_with(cut));
    assert_eq!(truncate_utf8("é", 1), "");
}

#[test]
fn byte_bound_errors_have_their_codes() {
    assert_eq!(RelayError::IdTooLong(1024).code(), code::INVALID_REQUEST);
    assert!(RelayError::IdTooLong(1024)
        .to_string()
        .contains("1024 bytes"));
    assert_eq!(RelayError::BrowserQueueFull.code(), code::RATE_LIMITED);
    assert_eq!(RelayError::FairShareExceeded(1).code(), code::RATE_LIMITED);
    let limits = limits();
    assert_eq!(limits.max_name_bytes, 256);
    assert_eq!(limits.max_id_bytes, 1024);
    assert_eq!(limits.max_pending_bytes, 1 << 20);
    assert_eq!(limits.extension_queue_budget, 48 << 20);
}

#[test]
fn an_answer_reaches_its_requester_with_the_original_id_once() {
    let (hub, _conn, mut mcp_rx, ext, _peer, _ext_rx) = pair_with_a_pending_request();
    let answer = format!(r#"{{"jsonrpc":"2.0","id":"{_conn}:7","result":{{}}}}"#);
    let Ok(frame::Incoming::Response(reply)) = frame::parse(&answer) else {
        panic!("a response");
    };
    assert!(hub.deliver_response(&ext, &reply));
    assert!(!hub.deliver_response(&ext, &reply), "answered already");
    assert_eq!(got(&mut mcp_rx), ["result 7"]);
    assert_eq!(hub.metrics.pending_requests.get(), 0);
    assert_eq!(hub.metrics.unknown_responses.get(), 1);
}

#[test]
fn a_disconnect_answers_pending_requests_and_tells_the_extension_why() {
    let causes = [
        (
            EndCause::ClientRequest,
            RelayError::ClosedByDisconnect,
            "MCP client disconnected",
        ),
        (
            EndCause::ShuttingDown,
            RelayError::ShuttingDown,
            "relay shutting down",
        ),
    ];
    for (cause, answer, reason) in causes {
        let (hub, conn, mut mcp_rx, _ext, _peer, mut ext_rx) = pair_with_a_pending_request();
        hub.disconnect(&conn, cause);
        assert_eq!(got(&mut mcp_rx), [format!("error 7 {}", answer.code())]);
        assert_eq!(
            got(&mut ext_rx),
            [
                format!("cancelled {conn}:7 ({reason})"),
                format!("connection_closed ({reason})"),
                "status 0".to_owned(),
            ]
        );
        assert!(!hub.is_connected(&conn));
        assert!(!hub.end(&conn, Ending::ClientGone), "ended once");
        assert_eq!(hub.metrics.connections.get(), 0);
        assert_eq!(hub.metrics.pending_requests.get(), 0);
    }
}

#[test]
fn a_client_gone_is_not_answered_but_the_extension_cancels() {
    let (hub, conn, mut mcp_rx, _ext, _peer, mut ext_rx) = pair_with_a_pending_request();
    hub.mcp_closed(&conn);
    assert!(got(&mut mcp_rx).is_empty());
    assert_eq!(
        got(&mut ext_rx),
        [
            format!("cancelled {conn}:7 (MCP client went away)"),
            "connection_closed (MCP client went away)".to_owned(),
            "status 0".to_owned(),
        ]
    );
}

#[test]
fn an_extension_gone_answers_tells_disconnected_and_later_connected() {
    let (hub, conn, mut mcp_rx, ext, ext_peer, mut ext_rx) = pair_with_a_pending_request();
    hub.extension_socket_closed(&ext, &ext_peer, "browser closed");
    let code = RelayError::ExtensionLeft.code();
    assert_eq!(
        got(&mut mcp_rx),
        [
            format!("error 7 {code}"),
            "disconnected (browser closed)".to_owned()
        ]
    );
    assert!(got(&mut ext_rx).is_empty(), "nobody to tell");
    assert!(!hub.is_connected(&conn));
    assert_eq!(hub.metrics.awaited_extensions.get(), 1);
    // The same browser comes back: the client learns it once.
    let (again, _peer, _rx) = extension(&hub, "alice", "1");
    assert_eq!(again, ext);
    assert_eq!(got(&mut mcp_rx), ["connected Browser 1"]);
    assert_eq!(hub.metrics.awaited_extensions.get(), 0);
}

#[test]
fn shutdown_answers_the_client_and_leaves_the_extension_to_its_session() {
    let (hub, conn, mut mcp_rx, _ext, _peer, mut ext_rx) = pair_with_a_pending_request();
    hub.shutdown();
    let code = RelayError::ShuttingDown.code();
    assert_eq!(got(&mut mcp_rx), [format!("error 7 {code}")]);
    assert!(got(&mut ext_rx).is_empty());
    assert!(!hub.is_connected(&conn));
}

#[test]
fn a_timed_out_request_is_answered_and_cancelled() {
    let (hub, conn, mut mcp_rx, _ext, _peer, mut ext_rx) = pair_with_a_pending_request();
    hub.expire_requests(Instant::now());
    assert!(got(&mut mcp_rx).is_empty(), "not yet");
    hub.expire_requests(Instant::now() + limits().request_timeout);
    let code = RelayError::RequestTimedOut(limits().request_timeout).code();
    assert_eq!(got(&mut mcp_rx), [format!("error 7 {code}")]);
    assert_eq!(
        got(&mut ext_rx),
        [format!("cancelled {conn}:7 (request timed out)")]
    );
    assert!(hub.is_connected(&conn), "the connection stays");
}

#[test]
fn connecting_to_a_vanished_or_foreign_extension_leaves_nothing_behind() {
    let hub = local_hub();
    let (ext, ext_peer, _ext_rx) = extension(&hub, "alice", "1");
    let (bob, _bob_rx) = client("bob");
    assert_eq!(
        hub.connect(&bob, &ext).map(|c| c.connection_id),
        Err(RelayError::ExtensionNotFound)
    );
    hub.extension_socket_closed(&ext, &ext_peer, "closed");
    let (alice, _alice_rx) = client("alice");
    assert_eq!(
        hub.connect(&alice, &ext).map(|c| c.connection_id),
        Err(RelayError::ExtensionNotFound)
    );
    assert!(hub.connections.is_empty());
    assert_eq!(hub.metrics.connections.get(), 0);
    // The insert-then-attach undo: a connection whose extension is gone by the time it is
    // attached ends as `Abandoned`, telling nobody.
    let (ext, _peer, mut ext_rx) = extension(&hub, "alice", "2");
    let (mcp, mut mcp_rx) = client("alice");
    let conn = hub.connect(&mcp, &ext).unwrap().connection_id;
    assert_eq!(
        got(&mut ext_rx),
        [
            format!("connection_opened {conn} by Claude Desktop"),
            "status 1".to_owned()
        ]
    );
    hub.extensions.get_mut(&ext).unwrap().connections.clear();
    assert!(hub.end(&conn, Ending::Abandoned));
    assert!(got(&mut mcp_rx).is_empty() && got(&mut ext_rx).is_empty());
    assert_eq!(hub.metrics.connections.get(), 0);
}

#[test]
fn a_duplicate_socket_takes_over_the_traffic_and_keeps_the_pending_requests() {
    let (hub, conn, mut mcp_rx, ext, old, mut old_rx) = pair_with_a_pending_request();
    let (new, mut new_rx) = Peer::detached();
    hub.register_extension(&auth("alice", "1", "Browser 1"), &new)
        .unwrap();
    // The socket taking over is told who is behind the connection it inherits.
    assert_eq!(
        got(&mut new_rx),
        [
            "authenticated".to_owned(),
            format!("connection_opened {conn} by Claude Desktop"),
            "status 1".to_owned()
        ]
    );
    hub.extension_socket_closed(&ext, &old, "closed");
    hub.forward_request(&conn, &raw("8"), "m", None).unwrap();
    assert_eq!(got(&mut new_rx), [format!("request {conn}:8 m")]);
    assert!(got(&mut old_rx).is_empty());
    let answer = format!(r#"{{"jsonrpc":"2.0","id":"{conn}:7","result":1}}"#);
    let Ok(frame::Incoming::Response(reply)) = frame::parse(&answer) else {
        panic!("a response");
    };
    assert!(hub.deliver_response(&ext, &reply));
    assert_eq!(got(&mut mcp_rx), ["result 7"]);
}

#[test]
fn a_reused_id_gets_its_own_mapped_id_while_the_first_is_pending() {
    let (hub, conn, _mcp_rx, _ext, _peer, mut ext_rx) = pair_with_a_pending_request();
    hub.forward_request(&conn, &raw("7"), "again", None)
        .unwrap();
    assert_eq!(got(&mut ext_rx), [format!("request {conn}:7#1 again")]);
}

/// The `users` index says exactly what a scan of `extensions` says.
fn assert_index_consistent(hub: &Hub) {
    let mut scanned: HashMap<String, BTreeSet<String>> = HashMap::new();
    for entry in hub.extensions.iter() {
        scanned
            .entry(entry.user_id.clone())
            .or_default()
            .insert(entry.key().clone());
    }
    for user in hub.users.iter() {
        let indexed: BTreeSet<String> = user.extensions.iter().cloned().collect();
        assert_eq!(indexed.len(), user.extensions.len(), "no duplicates");
        assert_eq!(
            &indexed,
            scanned.get(user.key()).unwrap_or(&BTreeSet::new()),
            "index of {}",
            user.key()
        );
        assert!(!user.is_idle(), "idle users are removed");
    }
    for (user, ids) in &scanned {
        assert!(
            hub.users.contains_key(user),
            "{user} missing from the index"
        );
        let listed: BTreeSet<String> = hub
            .list_extensions(user)
            .into_iter()
            .map(|e| e.id)
            .collect();
        assert_eq!(&listed, ids);
    }
}

#[test]
fn the_user_index_stays_consistent_through_register_and_close() {
    let hub = local_hub();
    let p: Vec<Peer> = (0..12).map(|_| Peer::detached().0).collect();
    let a1 = hub
        .register_extension(&auth("alice", "1", "A1"), &p[0])
        .unwrap();
    assert_index_consistent(&hub);
    // A duplicate socket of the same identity adds no index entry.
    assert_eq!(
        hub.register_extension(&auth("alice", "1", "A1"), &p[1])
            .unwrap(),
        a1
    );
    hub.register_extension(&auth("alice", "2", "A2"), &p[2])
        .unwrap();
    let b1 = hub
        .register_extension(&auth("bob", "1", "B1"), &p[3])
        .unwrap();
    hub.register_mcp("carol").unwrap();
    let c1 = hub
        .register_extension(&auth("carol", "1", "C1"), &p[4])
        .unwrap();
    assert_index_consistent(&hub);
    assert_eq!(hub.list_extensions("alice").len(), 2);
    // Closing one of two sockets keeps the identity; closing the last removes it.
    hub.extension_socket_closed(&a1, &p[0], "closed");
    assert_index_consistent(&hub);
    assert_eq!(hub.list_extensions("alice").len(), 2);
    hub.extension_socket_closed(&a1, &p[1], "closed");
    hub.extension_socket_closed(&b1, &p[3], "closed");
    assert_index_consistent(&hub);
    assert!(!hub.users.contains_key("bob"), "bob has nothing left");
    // Carol still has an MCP socket: her entry stays, with no extensions.
    hub.extension_socket_closed(&c1, &p[4], "closed");
    assert_index_consistent(&hub);
    assert!(hub.users.get("carol").unwrap().extensions.is_empty());
    hub.unregister_mcp("carol");
    assert!(!hub.users.contains_key("carol"));
    // A closed socket closing again, or an unknown one, changes nothing.
    hub.extension_socket_closed(&a1, &p[0], "closed");
    hub.extension_socket_closed("ext-unknown", &p[5], "closed");
    assert_index_consistent(&hub);
    // Refusal at the per-user limit leaves the index as it was.
    let small = Hub::new(
        HubLimits {
            max_extensions_per_user: 1,
            ..limits()
        },
        Arc::new(Metrics::default()),
        None,
    );
    small
        .register_extension(&auth("dave", "1", "D1"), &p[6])
        .unwrap();
    assert_eq!(
        small.register_extension(&auth("dave", "2", "D2"), &p[7]),
        Err(RelayError::TooManyExtensions(1))
    );
    assert_index_consistent(&small);
    // Names and versions are stored cut to the bound.
    let long = format!("x{}", "é".repeat(10_000));
    let id = hub
        .register_extension(&auth("erin", "1", &long), &p[8])
        .unwrap();
    let entry = hub.extensions.get(&id).unwrap();
    assert_eq!(entry.name.len(), 255);
    assert_eq!(entry.version.as_deref().map(str::len), Some(256));
    drop(entry);
    assert_index_consistent(&hub);
}

#[test]
fn try_send_within_refuses_without_closing_the_peer() {
    let (peer, _rx) = Peer::detached();
    assert!(
        peer.try_send_within("x".repeat(2 << 20), 1 << 20),
        "an empty queue takes one"
    );
    assert!(!peer.try_send_within("small", 1 << 20));
    assert!(peer.is_open(), "refused, not closed");
    assert!(peer.try_send_within("small", 4 << 20));
}

#[test]
fn forwarding_refuses_long_ids_and_keeps_clients_within_the_browser_queue() {
    let hub = local_hub();
    let (ext, browser, _browser_rx) = extension(&hub, "alice", "1");
    let (heavy, _heavy_rx) = client("alice");
    let (other, _other_rx) = client("alice");
    let heavy_conn = hub.connect(&heavy, &ext).unwrap().connection_id;
    let other_conn = hub.connect(&other, &ext).unwrap().connection_id;
    let long_id = raw(&format!("\"{}\"", "i".repeat(2000)));
    assert_eq!(
        hub.forward_request(&heavy_conn, &long_id, "m", None),
        Err(RelayError::IdTooLong(1024))
    );
    let params = raw(&format!("{{\"data\":\"{}\"}}", "x".repeat(30 << 20)));
    // Nothing leaves the browser's queue until the test reads it: the checks are deterministic.
    hub.forward_request(&heavy_conn, &raw("1"), "upload", Some(&params))
        .unwrap();
    // Two connections share the 48 MiB budget: 24 MiB each, one request always allowed.
    assert!(matches!(
        hub.forward_request(&heavy_conn, &raw("2"), "upload", Some(&params)),
        Err(RelayError::FairShareExceeded(_))
    ));
    assert_eq!(
        hub.forward_request(&other_conn, &raw("3"), "upload", Some(&params)),
        Err(RelayError::BrowserQueueFull)
    );
    hub.forward_request(&other_conn, &raw("4"), "small", None)
        .unwrap();
    assert!(
        browser.is_open(),
        "the browser is never disconnected for it"
    );
    assert_eq!(hub.metrics.pending_requests.get(), 2);
    // Refused requests leave no bookkeeping behind.
    let heavy_pending = hub.connection(&heavy_conn).unwrap();
    let guard = heavy_pending.pending.lock().unwrap();
    let pending = guard.as_ref().unwrap();
    assert_eq!(pending.requests.len(), 1);
    assert!(pending.frame_bytes > 30 << 20 && pending.frame_bytes < (30 << 20) + 200);
}

/// Real peers over loopback, for the one rule that needs a real writer task.
async fn socket_peer() -> (
    Peer,
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>,
) {
    use axum::extract::ws::WebSocketUpgrade;
    use futures_util::StreamExt;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let app = axum::Router::new().route(
        "/",
        axum::routing::get(move |ws: WebSocketUpgrade| {
            let tx = tx.clone();
            async move {
                ws.on_upgrade(move |socket| async move {
                    let _ = tx.send(socket);
                })
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}/", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let config = crate::net::peer::SocketConfig {
        ping_interval: Duration::from_secs(600),
        send_timeout: Duration::from_secs(30),
        max_queue_bytes: 64 << 20,
        max_unauthenticated_queue_bytes: 64 << 20,
        total_queued: Arc::new(std::sync::atomic::AtomicUsize::new(0)),
        max_total_queue_bytes: usize::MAX,
    };
    let (client, _) = tokio_tungstenite::connect_async(url.as_str())
        .await
        .unwrap();
    let (sink, _stream) = rx.recv().await.unwrap().split();
    let peer = crate::net::peer::spawn(
        sink,
        crate::net::transport::ConnHandle::detached(),
        &config,
        crate::net::peer::LastSeen::new(),
        Arc::new(Metrics::default()),
        &tokio_util::task::TaskTracker::new(),
    );
    (peer, client)
}

#[tokio::test]
async fn what_try_send_within_and_send_charge_the_writer_takes_off_again() {
    let (peer, _client) = socket_peer().await;
    for round in 0..50 {
        assert!(peer.try_send_within(format!("frame {round}"), 1 << 20));
        assert!(peer.send(format!("frame {round}")));
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    while peer.queued_bytes() != 0 {
        assert!(
            Instant::now() < deadline,
            "{} bytes never drained",
            peer.queued_bytes()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // A queue whose count had drifted (charged less than taken off) would refuse this.
    assert!(peer.try_send_within("small", 64));
    assert!(peer.try_send_within("small", 1 << 20));
    assert!(peer.is_open());
}

#[test]
fn a_detached_peer_counts_what_it_holds_like_a_socket() {
    let (peer, mut rx) = Peer::detached();
    assert!(peer.send("a frame"));
    assert_eq!(peer.queued_bytes(), 7 + crate::net::peer::FRAME_OVERHEAD);
    assert_eq!(rx.frames(), ["a frame"]);
    assert_eq!(peer.queued_bytes(), 0);
}

// ---- Cluster: the extension's node (B) with a client on node A --------------------------

/// Node B holding alice's extension, with a connection from a client on node A.
fn extension_node_with_a_remote_client() -> (
    Arc<Hub>,
    Arc<Cluster>,
    UnboundedReceiver<Outbound>,
    String,
    DetachedRx,
) {
    let (hub, cluster, mut out) = node("node-b");
    let (ext, _peer, mut ext_rx) = extension(&hub, "alice", "1");
    let connect = serde_json::to_string(&wire::ConnectBody {
        user_id: "alice".into(),
        extension_id: ext.clone(),
        mcp_client_id: "mcp-a".into(),
        client_id: None,
        client_name: Some("Claude Code".into()),
    })
    .unwrap();
    cluster.on_node_message(
        hub.as_ref(),
        &message(Kind::Connect, "conn-x", "node-a", &connect),
    );
    assert!(hub.is_connected("conn-x"));
    assert_eq!(cluster.live_nodes(), 1, "node A is known, to be expired");
    // The client's labels crossed with the connect.
    assert_eq!(
        got(&mut ext_rx),
        ["connection_opened conn-x by Claude Code", "status 1"]
    );
    let request = r#"{"jsonrpc":"2.0","id":5,"method":"tools/call"}"#;
    cluster.on_node_message(
        hub.as_ref(),
        &message(Kind::Request, "conn-x", "node-a", request),
    );
    assert_eq!(got(&mut ext_rx), ["request conn-x:5 tools/call"]);
    assert!(published(&mut out).is_empty());
    (hub, cluster, out, ext, ext_rx)
}

#[test]
fn a_remote_clients_answers_and_refusals_are_published_to_its_node() {
    let (hub, cluster, mut out, ext, _ext_rx) = extension_node_with_a_remote_client();
    let Ok(frame::Incoming::Response(reply)) =
        frame::parse(r#"{"jsonrpc":"2.0","id":"conn-x:5","result":{}}"#)
    else {
        panic!("a response");
    };
    assert!(hub.deliver_response(&ext, &reply));
    assert_eq!(published(&mut out), ["Frame node-a: result 5"]);
    let long = format!(
        r#"{{"jsonrpc":"2.0","id":"{}","method":"m"}}"#,
        "i".repeat(2000)
    );
    cluster.on_node_message(
        hub.as_ref(),
        &message(Kind::Request, "conn-x", "node-a", &long),
    );
    let code = RelayError::IdTooLong(0).code();
    assert_eq!(
        published(&mut out),
        [format!("Frame node-a: error {} {code}", "i".repeat(2000))]
    );
    // A connect for an extension that is not here is answered with `disconnected`.
    let connect = r#"{"user_id":"alice","extension_id":"ext-gone"}"#;
    cluster.on_node_message(
        hub.as_ref(),
        &message(Kind::Connect, "conn-y", "node-a", connect),
    );
    assert_eq!(
        published(&mut out),
        ["Frame node-a: disconnected (Extension not found on its relay node)"]
    );
    assert!(!hub.is_connected("conn-y"));
}

#[test]
fn an_end_from_the_clients_node_cancels_at_the_extension_without_answering() {
    let (hub, cluster, mut out, _ext, mut ext_rx) = extension_node_with_a_remote_client();
    cluster.on_node_message(
        hub.as_ref(),
        &message(Kind::End, "conn-x", "node-a", "MCP client disconnected"),
    );
    assert_eq!(
        got(&mut ext_rx),
        [
            "cancelled conn-x:5 (MCP client disconnected)",
            "connection_closed (MCP client disconnected)",
            "status 0"
        ]
    );
    assert!(published(&mut out).is_empty(), "the client's node answered");
    assert!(!hub.is_connected("conn-x"));
}

#[test]
fn the_clients_node_leaving_ends_its_connections_here() {
    let (hub, cluster, mut out, _ext, mut ext_rx) = extension_node_with_a_remote_client();
    cluster.on_presence(hub.as_ref(), &presence("node-a", vec![], true));
    assert_eq!(
        got(&mut ext_rx),
        [
            "cancelled conn-x:5 (MCP client's relay node went away)",
            "connection_closed (MCP client's relay node went away)",
            "status 0"
        ]
    );
    assert!(published(&mut out).is_empty());
    assert_eq!(cluster.live_nodes(), 0);
}

#[test]
fn the_extension_leaving_tells_the_remote_client_through_its_node() {
    let (hub, _cluster, mut out, ext, _ext_rx) = extension_node_with_a_remote_client();
    let socket = hub.newest_socket(&ext).unwrap();
    hub.extension_socket_closed(&ext, &socket, "browser closed");
    let code = RelayError::ExtensionLeft.code();
    assert_eq!(
        published(&mut out),
        [
            format!("Frame node-a: error 5 {code}"),
            "Frame node-a: disconnected (browser closed)".to_owned()
        ]
    );
    assert_eq!(hub.metrics.awaited_extensions.get(), 0, "node A remembers");
}

#[test]
fn shutdown_answers_a_remote_client_and_says_leaving() {
    let (hub, _cluster, mut out, _ext, mut ext_rx) = extension_node_with_a_remote_client();
    hub.shutdown();
    let code = RelayError::ShuttingDown.code();
    assert_eq!(
        published(&mut out),
        [
            format!("Frame node-a: error 5 {code}"),
            "presence leaving=true".to_owned()
        ]
    );
    assert!(got(&mut ext_rx).is_empty());
}

// ---- Cluster: the client's node (A) with an extension on node B --------------------------

/// Node A whose client is connected to alice's extension on node B, with request 9 sent.
fn client_node_with_a_remote_extension() -> (
    Arc<Hub>,
    Arc<Cluster>,
    UnboundedReceiver<Outbound>,
    String,
    DetachedRx,
) {
    let (hub, cluster, mut out) = node("node-a");
    cluster.on_presence(
        hub.as_ref(),
        &presence("node-b", vec![listed("ext-1", "alice", "Far")], false),
    );
    cluster.on_presence(
        hub.as_ref(),
        &presence("node-c", vec![listed("ext-2", "bob", "Bob's")], false),
    );
    let names: Vec<String> = hub
        .list_extensions("alice")
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(names, ["Far"], "only alice's, from every node");
    let (mcp, mut mcp_rx) = client("alice");
    assert_eq!(
        hub.connect(&mcp, "ext-2").map(|c| c.connection_id),
        Err(RelayError::ExtensionNotFound)
    );
    let info = hub.connect(&mcp, "ext-1").unwrap();
    assert_eq!((info.extension_name.as_str(), info.peer_count), ("Far", 1));
    let conn = info.connection_id;
    hub.forward_request(&conn, &raw("9"), "tools/call", None)
        .unwrap();
    assert_eq!(
        published(&mut out),
        [
            r#"Connect node-b: {"user_id":"alice","extension_id":"ext-1","mcp_client_id":"mcp-1","client_id":"bridge-1","client_name":"Claude Desktop"}"#,
            "Request node-b: request 9 tools/call"
        ]
    );
    assert!(got(&mut mcp_rx).is_empty());
    (hub, cluster, out, conn, mcp_rx)
}

fn frame_from_b(hub: &Hub, cluster: &Cluster, conn: &str, body: &str) {
    cluster.on_node_message(hub, &message(Kind::Frame, conn, "node-b", body));
}

#[test]
fn an_answer_from_the_extensions_node_is_delivered_once() {
    let (hub, cluster, _out, conn, mut mcp_rx) = client_node_with_a_remote_extension();
    let answer = r#"{"jsonrpc":"2.0","id":9,"result":{}}"#;
    frame_from_b(&hub, &cluster, &conn, answer);
    frame_from_b(&hub, &cluster, &conn, answer);
    assert_eq!(got(&mut mcp_rx), ["result 9"]);
    assert_eq!(hub.metrics.unknown_responses.get(), 1);
    assert_eq!(
        hub.metrics.pending_requests.get(),
        0,
        "the extension's node counts requests"
    );
}

#[test]
fn the_client_node_answers_only_after_the_owner_had_its_chance() {
    let (hub, cluster, mut out, conn, mut mcp_rx) = client_node_with_a_remote_extension();
    let timeout = limits().request_timeout;
    hub.expire_requests(Instant::now() + timeout);
    assert!(got(&mut mcp_rx).is_empty(), "the owner times out first");
    hub.expire_requests(Instant::now() + timeout + NODE_TTL);
    let code = RelayError::RequestTimedOut(timeout).code();
    assert_eq!(got(&mut mcp_rx), [format!("error 9 {code}")]);
    assert!(
        published(&mut out).is_empty(),
        "the owner cancels on its own"
    );
    // The owner's late answer is dropped: one answer per request.
    frame_from_b(
        &hub,
        &cluster,
        &conn,
        r#"{"jsonrpc":"2.0","id":9,"result":{}}"#,
    );
    assert!(got(&mut mcp_rx).is_empty());
}

#[test]
fn a_client_disconnect_from_a_remote_extension_answers_here_and_ends_there() {
    let (hub, _cluster, mut out, conn, mut mcp_rx) = client_node_with_a_remote_extension();
    hub.disconnect(&conn, EndCause::ClientRequest);
    let code = RelayError::ClosedByDisconnect.code();
    assert_eq!(got(&mut mcp_rx), [format!("error 9 {code}")]);
    assert_eq!(published(&mut out), ["End node-b: MCP client disconnected"]);
    let (_hub, _cluster, mut out, conn, mut mcp_rx) = client_node_with_a_remote_extension();
    _hub.mcp_closed(&conn);
    assert!(got(&mut mcp_rx).is_empty());
    assert_eq!(published(&mut out), ["End node-b: MCP client went away"]);
}

#[test]
fn the_extensions_node_dying_answers_and_reports_then_presence_brings_connected() {
    let (hub, cluster, mut out, conn, mut mcp_rx) = client_node_with_a_remote_extension();
    cluster.on_presence(hub.as_ref(), &presence("node-b", vec![], true));
    let code = RelayError::ExtensionLeft.code();
    assert_eq!(
        got(&mut mcp_rx),
        [
            format!("error 9 {code}"),
            "disconnected (the extension's relay node shut down)".to_owned()
        ]
    );
    assert!(!hub.is_connected(&conn));
    assert!(published(&mut out).is_empty(), "nobody to tell there");
    assert!(hub.list_extensions("alice").is_empty());
    // The browser reconnects to node C: its heartbeat brings the news.
    cluster.on_presence(
        hub.as_ref(),
        &presence("node-c", vec![listed("ext-1", "alice", "Far")], false),
    );
    assert_eq!(got(&mut mcp_rx), ["connected Far"]);
}

#[test]
fn a_disconnected_from_the_extensions_node_then_its_presence_arrive_in_that_order() {
    let (hub, cluster, _out, conn, mut mcp_rx) = client_node_with_a_remote_extension();
    let notice = protocol::disconnected(&conn, "ext-1", Some("Far"), "browser closed");
    frame_from_b(&hub, &cluster, &conn, &notice);
    // A heartbeat built after the `disconnected` that lists the extension means it is back.
    cluster.on_presence(
        hub.as_ref(),
        &presence("node-b", vec![listed("ext-1", "alice", "Far")], false),
    );
    let code = RelayError::ExtensionLeft.code();
    assert_eq!(
        got(&mut mcp_rx),
        [
            "disconnected (browser closed)".to_owned(),
            format!("error 9 {code}"),
            "connected Far".to_owned()
        ]
    );
    assert!(!hub.is_connected(&conn));
}

#[test]
fn shutdown_answers_a_client_of_a_remote_extension_and_ends_it_there() {
    let (hub, _cluster, mut out, _conn, mut mcp_rx) = client_node_with_a_remote_extension();
    hub.shutdown();
    let code = RelayError::ShuttingDown.code();
    assert_eq!(got(&mut mcp_rx), [format!("error 9 {code}")]);
    assert_eq!(
        published(&mut out),
        ["End node-b: relay shutting down", "presence leaving=true"]
    );
}

#[test]
fn requests_to_a_remote_extension_are_bounded_here_too() {
    let (hub, _cluster, mut out, conn, _mcp_rx) = client_node_with_a_remote_extension();
    let huge = raw(&format!("{{\"data\":\"{}\"}}", "x".repeat(2 << 20)));
    assert_eq!(
        hub.forward_request(&conn, &raw("10"), "upload", Some(&huge)),
        Err(RelayError::TooLargeForCluster(1 << 20))
    );
    let id = raw(&format!("\"{}\"", "i".repeat(1000)));
    let mut admitted = 0;
    let refused = loop {
        match hub.forward_request(&conn, &id, "m", None) {
            Ok(()) => admitted += 1,
            Err(error) => break error,
        }
    };
    assert_eq!(
        refused,
        RelayError::TooManyPending(limits().max_pending_bytes)
    );
    assert!(admitted > 100);
    let sent = published(&mut out).len();
    assert_eq!(sent, admitted, "refused requests are not published");
}

#[test]
fn a_node_restarted_under_the_same_name_ends_the_connections_to_its_previous_life() {
    let (hub, cluster, _out, conn, mut mcp_rx) = client_node_with_a_remote_extension();
    let mut restarted: Presence =
        serde_json::from_slice(&presence("node-b", vec![], false)).unwrap();
    restarted.incarnation = "node-b-life-2".into();
    cluster.on_presence(hub.as_ref(), &serde_json::to_vec(&restarted).unwrap());
    let frames = got(&mut mcp_rx);
    assert_eq!(
        frames.last().map(String::as_str),
        Some("disconnected (the extension's relay node restarted)")
    );
    assert!(!hub.is_connected(&conn));
    assert_eq!(cluster.live_nodes(), 2, "node B's new life, and node C");
}

#[test]
fn a_silent_node_expires_after_its_ttl() {
    let (hub, cluster, _out, conn, mut mcp_rx) = client_node_with_a_remote_extension();
    cluster.expire_nodes(hub.as_ref(), Instant::now());
    assert!(hub.is_connected(&conn));
    cluster.expire_nodes(hub.as_ref(), Instant::now() + NODE_TTL * 2);
    assert_eq!(
        got(&mut mcp_rx).last().map(String::as_str),
        Some("disconnected (the extension's relay node stopped responding)")
    );
    assert_eq!(cluster.live_nodes(), 0);
}

#[test]
fn the_owner_stopping_a_connection_answers_tells_both_sides_and_waits_for_nothing() {
    let (hub, conn, mut mcp_rx, ext, _peer, mut ext_rx) = pair_with_a_pending_request();
    assert_eq!(
        hub.stop_by_owner("ext-someone-else", &conn, Some("Stop clicked")),
        Err(RelayError::NotThisBrowsersConnection(conn.clone())),
        "only the connection's own browser may stop it"
    );
    assert!(hub.is_connected(&conn));
    hub.stop_by_owner(&ext, &conn, Some("Stop clicked"))
        .unwrap();
    let reason = "Stopped by the browser's owner: Stop clicked";
    let code = RelayError::StoppedByOwner.code();
    assert_eq!(
        got(&mut mcp_rx),
        [
            format!("error 7 {code}"),
            format!("disconnected ({reason})")
        ]
    );
    assert_eq!(
        got(&mut ext_rx),
        [
            format!("cancelled {conn}:7 ({reason})"),
            format!("connection_closed ({reason})"),
            "status 0".to_owned(),
        ]
    );
    assert_eq!(
        hub.metrics.awaited_extensions.get(),
        0,
        "stopped, not dropped: nobody waits for `connected`"
    );
    assert!(hub.stop_by_owner(&ext, &conn, None).is_err(), "ended once");
}
