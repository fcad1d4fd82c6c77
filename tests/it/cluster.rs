//! Several relay nodes joined through a real `nats-server`: presence, cross-node routing with
//! the single-node guarantees, node death mid-request, and NATS outages.
//!
//! Nodes run in this process, each with its own NATS connection and node id; "killing" one
//! (`RunningRelay::kill`) drops its NATS connection and tasks without a goodbye, which is what
//! the other nodes see of a crash. Without `nats-server` installed these tests print SKIP,
//! except in CI (`CI=true`), where that is a failure.

use crate::common;

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use mcp_relay::server::RunningRelay;
use mcp_relay_test_support::NatsServer;
use serde_json::{json, Value};

/// Heartbeat and TTL short enough for tests; `docs/CLUSTER.md` has the production defaults.
const HEARTBEAT: Duration = Duration::from_millis(200);
const NODE_TTL: Duration = Duration::from_millis(1200);

/// A relay node joined to `nats`.
async fn node(nats: &NatsServer) -> RunningRelay {
    node_with(nats, |_| {}).await
}

async fn node_with(
    nats: &NatsServer,
    tweak: impl FnOnce(&mut mcp_relay::config::ServeConfig),
) -> RunningRelay {
    let relay = unjoined_node(nats, tweak).await;
    wait_until("the node connects to NATS", || {
        let cluster = relay.cluster().unwrap();
        async move { cluster.is_connected() }
    })
    .await;
    relay
}

/// A relay node told to join `nats`, without waiting until it has.
async fn unjoined_node(
    nats: &NatsServer,
    tweak: impl FnOnce(&mut mcp_relay::config::ServeConfig),
) -> RunningRelay {
    let url = nats.url();
    relay_with(|c| {
        c.cluster = Some(url);
        c.cluster_options.heartbeat = HEARTBEAT;
        c.cluster_options.node_ttl = NODE_TTL;
        tweak(c);
    })
    .await
}

/// Two nodes joined to `nats` that already see each other.
async fn joined_pair(nats: &NatsServer) -> (RunningRelay, RunningRelay) {
    let a = node(nats).await;
    let b = node(nats).await;
    wait_until("the nodes see each other", || {
        let (ca, cb) = (a.cluster().unwrap(), b.cluster().unwrap());
        async move { ca.live_nodes() >= 1 && cb.live_nodes() >= 1 }
    })
    .await;
    (a, b)
}

/// The ids `list_extensions` shows this client.
async fn listed(mcp: &mut Mcp) -> Vec<String> {
    let response = mcp.call("list_extensions", json!({})).await;
    response["result"]["extensions"]
        .as_array()
        .unwrap_or_else(|| panic!("{response}"))
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .collect()
}

/// Waits until `mcp` sees exactly `expected` (in any order).
async fn wait_listed(mcp: &mut Mcp, expected: &[&str]) {
    let mut expected: Vec<String> = expected.iter().map(|s| s.to_string()).collect();
    expected.sort();
    let deadline = Instant::now() + WAIT;
    loop {
        let mut seen = listed(mcp).await;
        seen.sort();
        if seen == expected {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "list_extensions shows {seen:?}, expected {expected:?}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// Sends a request with a raw id and returns the raw text of its answer.
async fn raw_call(mcp: &mut Mcp, raw_id: &str, method: &str) -> String {
    mcp.client
        .send_text(&format!(
            r#"{{"jsonrpc":"2.0","id":{raw_id},"method":"{method}","params":{{}}}}"#
        ))
        .await;
    loop {
        let text = mcp.client.recv_text().await;
        let frame: Value = serde_json::from_str(&text).unwrap();
        if frame.get("method").is_none() {
            return text;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_extensions_shows_the_users_extensions_on_every_node_and_never_another_users() {
    let Some(nats) = NatsServer::start_or_skip("cluster test", &[]) else {
        return;
    };
    let a = node(&nats).await;
    let b = node(&nats).await;
    let on_a = Extension::connect(&a, "alice", "Firefox", "laptop").await;
    let on_b = Extension::connect(&b, "alice", "Chrome", "desktop").await;
    let _bobs = Extension::connect(&b, "bob", "Chrome", "desktop").await;
    let mut alice_on_a = Mcp::connect(&a, "alice").await;
    let mut alice_on_b = Mcp::connect(&b, "alice").await;
    let mut bob_on_a = Mcp::connect(&a, "bob").await;
    let both = [on_a.extension_id.as_str(), on_b.extension_id.as_str()];
    wait_listed(&mut alice_on_a, &both).await;
    wait_listed(&mut alice_on_b, &both).await;
    wait_listed(&mut bob_on_a, &[&_bobs.extension_id]).await;
    let response = alice_on_a.call("list_extensions", json!({})).await;
    let chrome = response["result"]["extensions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["id"] == on_b.extension_id.as_str())
        .unwrap()
        .clone();
    assert_eq!(chrome["name"], "Chrome");
    assert_eq!(chrome["connected"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_extension_keeps_its_id_when_it_reconnects_to_another_node() {
    let Some(nats) = NatsServer::start_or_skip("cluster test", &[]) else {
        return;
    };
    let a = node(&nats).await;
    let b = node(&nats).await;
    let first = Extension::connect(&a, "alice", "Chrome", "laptop").await;
    let id = first.extension_id.clone();
    first.client.close().await;
    let second = Extension::connect(&b, "alice", "Chrome", "laptop").await;
    assert_eq!(second.extension_id, id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_cross_nodes_with_ids_restored_byte_for_byte_and_notifications_both_ways() {
    let Some(nats) = NatsServer::start_or_skip("cluster test", &[]) else {
        return;
    };
    let a = node(&nats).await;
    let b = node(&nats).await;
    let mut ext = Extension::connect(&b, "alice", "Chrome", "laptop").await;
    let mut mcp = Mcp::connect(&a, "alice").await;
    wait_listed(&mut mcp, &[&ext.extension_id]).await;
    let connected = mcp.connect_to(&ext.extension_id).await;
    let connection_id = connected["connection_id"].as_str().unwrap().to_owned();
    assert_eq!(connected["extension_name"], "Chrome");

    // The extension's node tells it about its new peer, under the same connection id.
    let status = ext.client.recv_notification("status").await;
    assert_eq!(status["params"]["peer_count"], 1);
    assert_eq!(status["params"]["connection_ids"], json!([connection_id]));

    for raw_id in [r#""req-1""#, "7", "1.50", r#""\u00e9t\u00e9""#, "-0"] {
        let answer = tokio::join!(raw_call(&mut mcp, raw_id, "tools/call"), async {
            let request = ext.next_request().await;
            assert_eq!(request["method"], "tools/call");
            ext.reply(&request, json!({"ok": raw_id})).await;
        })
        .0;
        assert!(
            answer.contains(&format!(r#""id":{raw_id}"#)),
            "id {raw_id} not restored exactly: {answer}"
        );
        let answer: Value = serde_json::from_str(&answer).unwrap();
        assert_eq!(answer["result"]["ok"], raw_id);
    }

    // Extension notifications reach the client on the other node, without `connectionId`.
    ext.client
        .send(
            json!({"jsonrpc": "2.0", "method": "tab_changed", "params": {"tab": 3},
            "connectionId": connection_id}),
        )
        .await;
    let notification = mcp.client.recv_notification("tab_changed").await;
    assert_eq!(notification["params"]["tab"], 3);
    assert!(notification.get("connectionId").is_none());

    // MCP notifications reach the extension on the other node.
    mcp.client
        .send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    let forwarded = ext
        .client
        .recv_notification("notifications/initialized")
        .await;
    assert_eq!(forwarded["jsonrpc"], "2.0");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_cannot_connect_to_another_users_extension_on_another_node() {
    let Some(nats) = NatsServer::start_or_skip("cluster test", &[]) else {
        return;
    };
    let a = node(&nats).await;
    let b = node(&nats).await;
    let alices = Extension::connect(&b, "alice", "Chrome", "laptop").await;
    let mut alice = Mcp::connect(&a, "alice").await;
    wait_listed(&mut alice, &[&alices.extension_id]).await;
    let mut bob = Mcp::connect(&a, "bob").await;
    let refused = bob
        .call("connect", json!({"extension_id": alices.extension_id}))
        .await;
    assert_eq!(refused["error"]["code"], -32000, "{refused}");
    assert_eq!(
        refused["error"]["message"],
        "Extension not found or not accessible"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cross_node_requests_time_out_and_disconnect_answers_pending_ones() {
    let Some(nats) = NatsServer::start_or_skip("cluster test", &[]) else {
        return;
    };
    let a = node(&nats).await;
    let b = node_with(&nats, |c| c.request_timeout = Duration::from_millis(800)).await;
    let mut ext = Extension::connect(&b, "alice", "Chrome", "laptop").await;
    let mut mcp = Mcp::connect(&a, "alice").await;
    wait_listed(&mut mcp, &[&ext.extension_id]).await;
    mcp.connect_to(&ext.extension_id).await;

    // Never answered: the extension's node times it out, the answer crosses back.
    let timed_out = mcp.call("slow/thing", json!({})).await;
    assert_eq!(timed_out["error"]["code"], -32003, "{timed_out}");
    let request = ext.next_request().await;
    let cancelled = ext
        .client
        .recv_notification("notifications/cancelled")
        .await;
    assert_eq!(cancelled["params"]["requestId"], request["id"]);

    // A late answer to the timed-out request reaches no one.
    ext.reply(&request, json!({"late": true})).await;

    // `disconnect` answers what is still pending, and the extension hears of it.
    mcp.client
        .send(json!({"jsonrpc": "2.0", "id": "pending-1", "method": "tools/call"}))
        .await;
    let pending = ext.next_request().await;
    let response = mcp.client.call(json!(99), "disconnect", json!({})).await;
    assert_eq!(response["id"], "pending-1", "{response}");
    assert_eq!(response["error"]["code"], -32004);
    let done = mcp.client.recv_response().await;
    assert_eq!(done["result"]["disconnected"], true);
    let cancelled = ext
        .client
        .recv_notification("notifications/cancelled")
        .await;
    assert_eq!(cancelled["params"]["requestId"], pending["id"]);
    let closed = ext.client.recv_notification("connection_closed").await;
    assert_eq!(closed["params"]["reason"], "MCP client disconnected");
    mcp.client.expect_silence(Duration::from_millis(300)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_extension_leaving_one_node_disconnects_clients_on_others_until_it_returns_elsewhere() {
    let Some(nats) = NatsServer::start_or_skip("cluster test", &[]) else {
        return;
    };
    let a = node(&nats).await;
    let b = node(&nats).await;
    let c = node(&nats).await;
    let mut ext = Extension::connect(&b, "alice", "Chrome", "laptop").await;
    let id = ext.extension_id.clone();
    let mut mcp = Mcp::connect(&a, "alice").await;
    wait_listed(&mut mcp, &[&id]).await;
    mcp.connect_to(&id).await;
    mcp.client
        .send(json!({"jsonrpc": "2.0", "id": 41, "method": "tools/call"}))
        .await;
    ext.next_request().await;
    ext.client.close().await;

    let answer = mcp.client.recv_response().await;
    assert_eq!(answer["id"], 41);
    assert_eq!(answer["error"]["code"], -32004, "{answer}");
    let gone = mcp.client.recv_notification("disconnected").await;
    assert_eq!(gone["params"]["extension_id"], id.as_str());
    let not_connected = mcp.call("tools/call", json!({})).await;
    assert_eq!(
        not_connected["error"]["message"],
        "Not connected to an extension"
    );

    let back = Extension::connect(&c, "alice", "Chrome", "laptop").await;
    assert_eq!(back.extension_id, id);
    let notice = mcp.client.recv_notification("connected").await;
    assert_eq!(notice["params"]["extension_id"], id.as_str());
    assert_eq!(notice["params"]["reconnection"], true);
    // And it works again through its new node.
    mcp.connect_to(&id).await;
    let _echo = back.spawn_echo();
    let answer = mcp.call("tools/list", json!({})).await;
    assert_eq!(answer["result"]["echo"], "tools/list", "{answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_killed_mid_request_is_answered_and_disconnected_within_the_ttl() {
    let Some(nats) = NatsServer::start_or_skip("cluster test", &[]) else {
        return;
    };
    let a = node(&nats).await;
    let b = node(&nats).await;
    let c = node(&nats).await;
    let mut ext = Extension::connect(&b, "alice", "Chrome", "laptop").await;
    let id = ext.extension_id.clone();
    let mut mcp = Mcp::connect(&a, "alice").await;
    wait_listed(&mut mcp, &[&id]).await;
    mcp.connect_to(&id).await;
    mcp.client
        .send(json!({"jsonrpc": "2.0", "id": "in-flight", "method": "tools/call"}))
        .await;
    ext.next_request().await;

    let killed = Instant::now();
    b.kill().await;
    let answer = mcp.client.recv_response().await;
    assert_eq!(answer["id"], "in-flight");
    assert_eq!(answer["error"]["code"], -32004, "{answer}");
    let gone = mcp.client.recv_notification("disconnected").await;
    assert_eq!(gone["params"]["extension_id"], id.as_str());
    let bound = NODE_TTL + Duration::from_secs(1);
    assert!(
        killed.elapsed() < bound,
        "took {:?}, more than {bound:?}",
        killed.elapsed()
    );
    wait_listed(&mut mcp, &[]).await;

    // The browser reconnects through the load balancer and lands on node C.
    drop(ext);
    let _back = Extension::connect(&c, "alice", "Chrome", "laptop").await;
    let notice = mcp.client.recv_notification("connected").await;
    assert_eq!(notice["params"]["extension_id"], id.as_str());
    // Exactly one answer for the in-flight request: nothing else arrives.
    mcp.client.expect_silence(Duration::from_millis(500)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_the_clients_node_dies_the_extension_is_told_its_peer_left() {
    let Some(nats) = NatsServer::start_or_skip("cluster test", &[]) else {
        return;
    };
    let a = node(&nats).await;
    let b = node(&nats).await;
    let mut ext = Extension::connect(&b, "alice", "Chrome", "laptop").await;
    let mut mcp = Mcp::connect(&a, "alice").await;
    wait_listed(&mut mcp, &[&ext.extension_id]).await;
    let connection = mcp.connect_to(&ext.extension_id).await;
    let status = ext.client.recv_notification("status").await;
    assert_eq!(status["params"]["peer_count"], 1);
    a.kill().await;
    let closed = ext.client.recv_notification("connection_closed").await;
    assert_eq!(
        closed["params"]["connection_id"],
        connection["connection_id"]
    );
    let status = ext.client.recv_notification("status").await;
    assert_eq!(status["params"]["peer_count"], 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_shutting_down_gracefully_disconnects_remote_clients_at_once() {
    let Some(nats) = NatsServer::start_or_skip("cluster test", &[]) else {
        return;
    };
    let a = node(&nats).await;
    let b = node_with(&nats, |c| c.shutdown_grace = Duration::from_secs(1)).await;
    let ext = Extension::connect(&b, "alice", "Chrome", "laptop").await;
    let id = ext.extension_id.clone();
    let mut mcp = Mcp::connect(&a, "alice").await;
    wait_listed(&mut mcp, &[&id]).await;
    mcp.connect_to(&id).await;
    let started = Instant::now();
    b.shutdown().await;
    let gone = mcp.client.recv_notification("disconnected").await;
    assert_eq!(gone["params"]["extension_id"], id.as_str());
    assert!(started.elapsed() < NODE_TTL + Duration::from_secs(1));
    drop(ext);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nats_outage_keeps_local_pairs_working_shows_in_health_and_heals() {
    let Some(mut nats) = NatsServer::start_or_skip("cluster test", &[]) else {
        return;
    };
    let a = node(&nats).await;
    let b = node(&nats).await;
    let local = Extension::connect(&a, "alice", "Firefox", "laptop").await;
    let remote = Extension::connect(&b, "alice", "Chrome", "desktop").await;
    let (local_id, remote_id) = (local.extension_id.clone(), remote.extension_id.clone());
    let _local_echo = local.spawn_echo();
    let _remote_echo = remote.spawn_echo();
    let mut mcp = Mcp::connect(&a, "alice").await;
    wait_listed(&mut mcp, &[&local_id, &remote_id]).await;
    let (status, body) = http_get(a.local_addr, "/healthz").await;
    assert_eq!(status, 200);
    assert!(body.contains("cluster: connected"), "{body}");
    // A client connected across nodes when NATS goes away.
    let mut cross = Mcp::connect(&a, "alice").await;
    cross.connect_to(&remote_id).await;

    nats.stop();
    let cluster = a.cluster().unwrap();
    wait_until("node A notices the outage", || {
        let cluster = cluster.clone();
        async move { !cluster.is_connected() }
    })
    .await;
    let (status, body) = http_get(a.local_addr, "/healthz").await;
    assert_eq!(status, 200);
    assert!(body.contains("cluster: degraded"), "{body}");
    let (_, metrics) = http_get(a.local_addr, "/metrics").await;
    assert!(
        metrics.contains("mcp_relay_cluster_connected 0"),
        "{metrics}"
    );
    // The other node's extension expires and the cross-node client learns it has lost it;
    // the local pair keeps working.
    let gone = cross.client.recv_notification("disconnected").await;
    assert_eq!(gone["params"]["extension_id"], remote_id.as_str());
    wait_listed(&mut mcp, &[&local_id]).await;
    mcp.connect_to(&local_id).await;
    let answer = mcp.call("tools/list", json!({})).await;
    assert_eq!(answer["result"]["echo"], "tools/list", "{answer}");

    nats.restart().expect("nats-server restarts");
    wait_until("node A reconnects", || {
        let cluster = cluster.clone();
        async move { cluster.is_connected() }
    })
    .await;
    let (_, metrics) = http_get(a.local_addr, "/metrics").await;
    assert!(
        metrics.contains("mcp_relay_cluster_connected 1"),
        "{metrics}"
    );
    wait_listed(&mut mcp, &[&local_id, &remote_id]).await;
    let back = cross.client.recv_notification("connected").await;
    assert_eq!(back["params"]["extension_id"], remote_id.as_str());
    mcp.call("disconnect", json!({})).await;
    mcp.connect_to(&remote_id).await;
    let answer = mcp.call("tools/list", json!({})).await;
    assert_eq!(answer["result"]["echo"], "tools/list", "{answer}");
}

#[tokio::test]
async fn without_cluster_health_and_metrics_say_nothing_about_a_cluster() {
    let relay = relay().await;
    assert!(relay.cluster().is_none());
    let (status, body) = http_get(relay.local_addr, "/healthz").await;
    assert_eq!((status, body.as_str()), (200, "ok\n"));
    let (_, metrics) = http_get(relay.local_addr, "/metrics").await;
    assert!(!metrics.contains("mcp_relay_cluster"), "{metrics}");
}

/// A relay node as its own process (the built binary), for a real SIGKILL.
struct NodeProcess {
    child: Child,
    port: u16,
}

impl NodeProcess {
    fn start(nats: &NatsServer) -> NodeProcess {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(env!("CARGO_BIN_EXE_mcp-relay"))
            .args([
                "serve",
                "--listen",
                &format!("127.0.0.1:{port}"),
                "--cluster",
                &nats.url(),
                "--cluster-heartbeat",
                "200ms",
                "--cluster-node-ttl",
                "1200ms",
                "--rate-limit",
                "0",
            ])
            .env("MCP_RELAY_JWT_SECRET", SECRET)
            .env("MCP_RELAY_STATE", "memory")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("relay binary starts");
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "relay process did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        NodeProcess { child, port }
    }

    fn url(&self, path: &str) -> String {
        format!("ws://127.0.0.1:{}{path}", self.port)
    }
}

impl Drop for NodeProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relay_process_killed_with_sigkill_mid_request_is_answered_and_disconnected() {
    let Some(nats) = NatsServer::start_or_skip("cluster test", &[]) else {
        return;
    };
    let a = node(&nats).await;
    let c = node(&nats).await;
    let mut b = NodeProcess::start(&nats);
    let mut ext = Extension::connect_url(&b.url("/extension"), "alice", "Chrome", "laptop").await;
    let id = ext.extension_id.clone();
    let mut mcp = Mcp::connect(&a, "alice").await;
    wait_listed(&mut mcp, &[&id]).await;
    mcp.connect_to(&id).await;
    mcp.client
        .send(json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call"}))
        .await;
    ext.next_request().await;

    let killed = Instant::now();
    b.child.kill().expect("SIGKILL"); // std's kill is SIGKILL on Unix: no goodbye at all
    let answer = mcp.client.recv_response().await;
    assert_eq!(answer["id"], 5);
    assert_eq!(answer["error"]["code"], -32004, "{answer}");
    let gone = mcp.client.recv_notification("disconnected").await;
    assert_eq!(gone["params"]["extension_id"], id.as_str());
    assert!(killed.elapsed() < NODE_TTL + Duration::from_secs(1));

    drop(ext);
    let _back = Extension::connect(&c, "alice", "Chrome", "laptop").await;
    let notice = mcp.client.recv_notification("connected").await;
    assert_eq!(notice["params"]["extension_id"], id.as_str());
    mcp.client.expect_silence(Duration::from_millis(300)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_concurrent_cross_node_requests_are_each_answered_exactly_once() {
    let Some(nats) = NatsServer::start_or_skip("cluster test", &[]) else {
        return;
    };
    let a = node(&nats).await;
    let b = node(&nats).await;
    let ext = Extension::connect(&b, "alice", "Chrome", "laptop").await;
    let id = ext.extension_id.clone();
    let _echo = ext.spawn_echo();
    let mut mcp = Mcp::connect(&a, "alice").await;
    wait_listed(&mut mcp, &[&id]).await;
    mcp.connect_to(&id).await;
    // Ids reused on purpose: some hosts do, and each request still gets its own answer.
    const N: usize = 300;
    for i in 0..N {
        mcp.client
            .send(json!({"jsonrpc": "2.0", "id": i % 100, "method": format!("m{i}")}))
            .await;
    }
    let mut seen = std::collections::HashSet::new();
    for _ in 0..N {
        let answer = mcp.client.recv_response().await;
        let method = answer["result"]["echo"].as_str().unwrap().to_owned();
        let i: usize = method[1..].parse().unwrap();
        assert_eq!(answer["id"], i % 100, "{answer}");
        assert!(seen.insert(i), "request {i} answered twice");
    }
    mcp.client.expect_silence(Duration::from_millis(300)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frames_above_the_nats_limit_become_error_replies_not_silence() {
    let Some(nats) = NatsServer::start_or_skip("cluster test", &[]) else {
        return;
    };
    let a = node(&nats).await;
    let b = node(&nats).await;
    let mut ext = Extension::connect(&b, "alice", "Chrome", "laptop").await;
    let mut mcp = Mcp::connect(&a, "alice").await;
    wait_listed(&mut mcp, &[&ext.extension_id]).await;
    mcp.connect_to(&ext.extension_id).await;
    // nats-server's default max_payload is 1 MB.
    let big = "x".repeat(2 << 20);

    let (answer, _) = tokio::join!(mcp.call("screenshot", json!({})), async {
        let request = ext.next_request().await;
        ext.reply(&request, json!({ "data": big })).await;
    });
    assert_eq!(answer["error"]["code"], -32603, "{answer}");
    assert!(answer["error"]["message"]
        .as_str()
        .unwrap()
        .contains("max_payload"));

    let refused = mcp.call("upload", json!({ "data": big })).await;
    assert_eq!(refused["error"]["code"], -32006, "{refused}");

    // Normal traffic continues on the same connection.
    let (answer, _) = tokio::join!(mcp.call("small", json!({})), async {
        let request = ext.next_request().await;
        ext.reply(&request, json!({"ok": true})).await;
    });
    assert_eq!(answer["result"]["ok"], true, "{answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_restarted_under_the_same_name_counts_as_a_new_node() {
    let Some(nats) = NatsServer::start_or_skip("cluster test", &[]) else {
        return;
    };
    let a = node(&nats).await;
    let b = node_with(&nats, |c| {
        c.cluster_options.node_id = Some("relay-b".into())
    })
    .await;
    let ext = Extension::connect(&b, "alice", "Chrome", "laptop").await;
    let id = ext.extension_id.clone();
    let mut mcp = Mcp::connect(&a, "alice").await;
    wait_listed(&mut mcp, &[&id]).await;
    mcp.connect_to(&id).await;
    b.kill().await;
    drop(ext);
    // Back under the same name well within the TTL, with the extension reconnected to it.
    let b2 = node_with(&nats, |c| {
        c.cluster_options.node_id = Some("relay-b".into())
    })
    .await;
    let _back = Extension::connect(&b2, "alice", "Chrome", "laptop").await;
    let gone = mcp.client.recv_notification("disconnected").await;
    assert_eq!(gone["params"]["extension_id"], id.as_str());
    let notice = mcp.client.recv_notification("connected").await;
    assert_eq!(notice["params"]["extension_id"], id.as_str());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_authenticate_to_nats_with_user_and_password() {
    let Some(nats) = NatsServer::start_or_skip(
        "cluster test",
        &["--user", "relay", "--pass", "nats-secret"],
    ) else {
        return;
    };
    let with_password = |c: &mut mcp_relay::config::ServeConfig| {
        c.cluster_options.nats_user = Some("relay".into());
        c.cluster_options.nats_password = Some("nats-secret".into());
    };
    let a = node_with(&nats, with_password).await;
    let b = node_with(&nats, with_password).await;
    let ext = Extension::connect(&b, "alice", "Chrome", "laptop").await;
    let mut mcp = Mcp::connect(&a, "alice").await;
    wait_listed(&mut mcp, &[&ext.extension_id]).await;

    let wrong = unjoined_node(&nats, |c| {
        c.cluster_options.nats_user = Some("relay".into());
        c.cluster_options.nats_password = Some("guess".into());
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!wrong.cluster().unwrap().is_connected());
    let (status, body) = http_get(wrong.local_addr, "/healthz").await;
    assert_eq!(status, 200);
    assert!(body.contains("cluster: degraded"), "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_reach_nats_over_tls_verified_with_the_given_ca() {
    let dir = tempfile::tempdir().unwrap();
    let certs = mcp_relay::net::certs::generate(&[]).unwrap();
    let (cert, key) = mcp_relay::net::certs::write(dir.path(), &certs).unwrap();
    let ca = dir.path().join("ca.pem");
    let Some(nats) = NatsServer::start_or_skip(
        "cluster test",
        &[
            "--tls",
            "--tlscert",
            cert.to_str().unwrap(),
            "--tlskey",
            key.to_str().unwrap(),
        ],
    ) else {
        return;
    };
    let with_ca = |c: &mut mcp_relay::config::ServeConfig| {
        c.cluster_options.nats_tls_ca = Some(ca.clone());
    };
    let a = node_with(&nats, with_ca).await;
    let b = node_with(&nats, with_ca).await;
    let ext = Extension::connect(&b, "alice", "Chrome", "laptop").await;
    let mut mcp = Mcp::connect(&a, "alice").await;
    wait_listed(&mut mcp, &[&ext.extension_id]).await;

    // Without the CA the server's certificate is not trusted: no connection.
    let untrusting = unjoined_node(&nats, |_| {}).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!untrusting.cluster().unwrap().is_connected());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extension_notifications_reach_clients_on_every_node_or_only_the_one_addressed() {
    let Some(nats) = NatsServer::start_or_skip("cluster test", &[]) else {
        return;
    };
    let a = node(&nats).await;
    let b = node(&nats).await;
    let mut ext = Extension::connect(&b, "alice", "Chrome", "laptop").await;
    let id = ext.extension_id.clone();
    let mut remote = Mcp::connect(&a, "alice").await;
    let mut local = Mcp::connect(&b, "alice").await;
    wait_listed(&mut remote, &[&id]).await;
    let remote_connection = remote.connect_to(&id).await["connection_id"].clone();
    local.connect_to(&id).await;

    ext.client
        .send(json!({"jsonrpc": "2.0", "method": "page_loaded", "params": {"n": 1}}))
        .await;
    assert_eq!(
        remote.client.recv_notification("page_loaded").await["params"]["n"],
        1
    );
    assert_eq!(
        local.client.recv_notification("page_loaded").await["params"]["n"],
        1
    );

    ext.client
        .send(
            json!({"jsonrpc": "2.0", "method": "page_loaded", "params": {"n": 2},
            "connectionId": remote_connection}),
        )
        .await;
    assert_eq!(
        remote.client.recv_notification("page_loaded").await["params"]["n"],
        2
    );
    local
        .client
        .expect_silence(Duration::from_millis(300))
        .await;
}

/// Issue 15 across nodes: the extension's node announces who connected with the labels the
/// client gave its own node, and the owner's "Stop" reaches a client on another node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_owner_sees_and_stops_a_client_connected_through_another_node() {
    let Some(nats) = NatsServer::start_or_skip("cluster test", &[]) else {
        return;
    };
    let a = node(&nats).await;
    let b = node(&nats).await;
    let mut ext = Extension::connect(&b, "alice", "Chrome", "laptop").await;
    let mut mcp = Mcp::connect(&a, "alice").await;
    let named = mcp
        .call(
            "mcp_handshake",
            json!({"access_token": token("alice", Some(mcp_relay::auth::Role::Mcp)), "client_name": "Claude Code"}),
        )
        .await;
    assert_eq!(named["result"]["authenticated"], true, "{named}");
    wait_listed(&mut mcp, &[&ext.extension_id]).await;
    let conn = mcp.connect_to(&ext.extension_id).await;

    let opened = ext.client.recv_notification("connection_opened").await;
    assert_eq!(opened["params"]["connection_id"], conn["connection_id"]);
    assert_eq!(opened["params"]["client_name"], "Claude Code");
    assert_eq!(opened["params"]["client_id"], "test-client");
    assert!(opened["params"]["mcp_client_id"]
        .as_str()
        .unwrap()
        .starts_with("mcp-"));

    mcp.client
        .send(json!({"jsonrpc": "2.0", "id": "pending-1", "method": "tools/call"}))
        .await;
    ext.next_request().await;
    ext.client
        .send(
            json!({"jsonrpc": "2.0", "id": 1, "method": "close_connection",
                     "params": {"connection_id": conn["connection_id"], "reason": "Stop clicked"}}),
        )
        .await;
    assert_eq!(ext.client.recv_response().await["result"]["closed"], true);
    let pending = mcp.client.recv_response().await;
    assert_eq!(pending["id"], "pending-1");
    assert_eq!(pending["error"]["code"], -32004, "{pending}");
    let notice = mcp.client.recv_notification("disconnected").await;
    assert_eq!(
        notice["params"]["reason"],
        "Stopped by the browser's owner: Stop clicked"
    );
    let after = mcp.call("tools/call", json!({})).await;
    assert_eq!(after["error"]["message"], "Not connected to an extension");
}

/// Alice's MCP token with jti `leaked` holds a socket on node `b`; an admin revokes it through
/// node `a`, and the socket on `b` closes with 1008 "revoked" within a second. Returns the token.
/// Approves browser `id` through node `b`'s admin API, then has `on_a` (a client on another
/// node) retry `connect` until that node lets it in, which must happen within a second;
/// returns how long it took after `b` answered.
async fn approve_through_b_until_a_lets_in(b: &RunningRelay, on_a: &mut Mcp, id: &str) -> Duration {
    let admin = token("root", Some(mcp_relay::auth::Role::Admin));
    let (status, body) = api(
        b.local_addr,
        "POST",
        &format!("/api/v1/browsers/{id}/approve"),
        Some(&admin),
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let started = Instant::now();
    loop {
        let answer = on_a.call("connect", json!({"extension_id": id})).await;
        if answer["result"]["connection_id"].is_string() {
            return started.elapsed();
        }
        assert_eq!(answer["error"]["code"], -32011, "{answer}");
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "node a still refuses after {:?}",
            started.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

async fn revoking_through_a_closes_the_socket_on_b(a: &RunningRelay, b: &RunningRelay) -> String {
    let mut claims = mcp_relay::auth::MintClaims::new(
        "alice",
        Some(mcp_relay::auth::Role::Mcp),
        Duration::from_secs(3600),
    );
    claims.jti = "leaked".into();
    let leaked = mcp_relay::auth::mint_hs256(SECRET.as_bytes(), &claims);
    let mut on_b = Client::connect(&b.url("/mcp")).await;
    let answer = on_b
        .call(json!(1), "mcp_handshake", json!({"access_token": leaked}))
        .await;
    assert_eq!(answer["result"]["authenticated"], true, "{answer}");

    let admin = token("root", Some(mcp_relay::auth::Role::Admin));
    let started = Instant::now();
    let (status, body) = api(
        a.local_addr,
        "POST",
        "/api/v1/tokens/revoke",
        Some(&admin),
        Some(json!({"jti": "leaked"})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(on_b.expect_close().await, (1008, "revoked".to_owned()));
    let took = started.elapsed();
    assert!(took < Duration::from_secs(1), "{took:?}");
    leaked
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revocation_made_on_one_node_closes_sockets_on_another_within_a_second() {
    let Some(nats) = NatsServer::start_or_skip("cluster test", &[]) else {
        return;
    };
    let (a, b) = joined_pair(&nats).await;
    let leaked = revoking_through_a_closes_the_socket_on_b(&a, &b).await;
    // And node b refuses the token from then on.
    let mut again = Client::connect(&b.url("/mcp")).await;
    let answer = again
        .call(json!(1), "mcp_handshake", json!({"access_token": leaked}))
        .await;
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("revoked"),
        "{answer}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_revoked_through_one_node_is_closed_and_refused_on_another() {
    let Some(nats) = NatsServer::start_or_skip("cluster test", &[]) else {
        return;
    };
    let (a, b) = joined_pair(&nats).await;
    // Node a has seen the browser; it now lives on node b.
    let first = Extension::connect(&a, "alice", "Laptop", "laptop").await;
    let id = first.extension_id.clone();
    first.client.close().await;
    let mut on_b = Extension::connect(&b, "alice", "Laptop", "laptop").await;
    assert_eq!(on_b.extension_id, id);

    let admin = token("root", Some(mcp_relay::auth::Role::Admin));
    let started = Instant::now();
    let (status, body) = api(
        a.local_addr,
        "POST",
        &format!("/api/v1/browsers/{id}/revoke"),
        Some(&admin),
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        on_b.client.expect_close().await,
        (1008, "revoked".to_owned())
    );
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    // Node b now refuses it too, although it heard of the revocation only over the cluster.
    let mut again = Client::connect(&b.url("/extension")).await;
    let auth = again.recv().await;
    again
        .send(
            json!({"id": auth["id"], "result": {"name": "Laptop", "client_id": "laptop",
            "access_token": token("alice", Some(mcp_relay::auth::Role::Extension))}}),
        )
        .await;
    let (code, reason) = again.expect_close().await;
    assert_eq!(code, 1008);
    assert!(reason.contains("was revoked"), "{reason}");
}

/// A nats-server with JetStream, its store in `dir` (so a restart keeps it).
fn jetstream_nats(dir: &std::path::Path) -> Option<NatsServer> {
    let store = dir.display().to_string();
    NatsServer::start_or_skip("shared state test", &["-js", "-sd", &store])
}

/// A node keeping its state on the cluster's NATS (`--state nats`), approval required.
async fn shared_state_node(nats: &NatsServer) -> RunningRelay {
    node_with(nats, |c| {
        c.state = Some(mcp_relay::operator::store::StateSpec::Nats);
        c.require_approval = true;
    })
    .await
}

/// `GET /api/v1/browsers` on `relay` as an admin: the browser with `id`.
async fn browser_record(relay: &RunningRelay, id: &str) -> Option<Value> {
    let admin = token("root", Some(mcp_relay::auth::Role::Admin));
    let (status, body) = api(
        relay.local_addr,
        "GET",
        "/api/v1/browsers",
        Some(&admin),
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    body["browsers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["id"] == id)
        .cloned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_state_nats_an_approval_made_through_one_node_holds_on_every_node_and_after_restarts()
{
    let dir = tempfile::tempdir().unwrap();
    let Some(nats) = jetstream_nats(dir.path()) else {
        return;
    };
    let a = shared_state_node(&nats).await;
    let b = shared_state_node(&nats).await;
    wait_until("the nodes see each other", || {
        let (ca, cb) = (a.cluster().unwrap(), b.cluster().unwrap());
        async move { ca.live_nodes() >= 1 && cb.live_nodes() >= 1 }
    })
    .await;

    // A new browser on node a is pending on node b too.
    let mut ext = Extension::connect(&a, "alice", "Laptop", "laptop").await;
    let id = ext.extension_id.clone();
    let mut on_b = Mcp::connect(&b, "alice").await;
    wait_listed(&mut on_b, &[&id]).await;
    let listed = on_b.call("list_extensions", json!({})).await;
    assert_eq!(
        listed["result"]["extensions"][0]["approved"], false,
        "{listed}"
    );
    let refused = on_b.call("connect", json!({"extension_id": id})).await;
    assert_eq!(refused["error"]["code"], -32011, "{refused}");

    // Node b learnt of the browser through the shared store, so it can approve it; node a
    // lets the client in at once.
    wait_until("node b knows the browser, connected on node a", || {
        let (b, id) = (&b, id.clone());
        async move {
            browser_record(b, &id)
                .await
                .is_some_and(|r| r["connected"] == true)
        }
    })
    .await;
    let admin = token("root", Some(mcp_relay::auth::Role::Admin));
    let mut on_a = Mcp::connect(&a, "alice").await;
    let took = approve_through_b_until_a_lets_in(&b, &mut on_a, &id).await;
    eprintln!("shared state: node a let the client in {took:?} after node b's API answered");
    // A forwarded request through node a is in the trail that node b reads.
    on_a.client.recv_notification("status").await;
    on_a.client
        .send(json!({"jsonrpc": "2.0", "id": "audited-1", "method": "tabs/list"}))
        .await;
    let request = ext.next_request().await;
    ext.client
        .send(json!({"jsonrpc": "2.0", "id": request["id"], "result": {}}))
        .await;
    assert_eq!(on_a.client.recv_response().await["id"], "audited-1");
    wait_until("node b's audit query shows node a's request", || {
        let (b, admin) = (&b, admin.clone());
        async move {
            let (status, body) = api(
                b.local_addr,
                "GET",
                "/api/v1/audit?user_id=alice&method=tabs/list",
                Some(&admin),
                None,
            )
            .await;
            status == 200 && body["events"].as_array().is_some_and(|e| !e.is_empty())
        }
    })
    .await;

    // Everything restarts; the approval is still there, on a node that never saw the browser.
    ext.client.close().await;
    a.shutdown().await;
    b.shutdown().await;
    let c = shared_state_node(&nats).await;
    let record = browser_record(&c, &id)
        .await
        .expect("the browser is remembered");
    assert_eq!(record["approved"], true, "{record}");
}

/// A node started with `--cluster` and no `--state` at all (approval required, which a file
/// per node would refuse).
async fn default_state_node(nats: &NatsServer) -> RunningRelay {
    node_with(nats, |c| {
        c.state = None;
        c.require_approval = true;
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_cluster_and_no_state_two_nodes_share_an_approval_and_a_revocation() {
    let dir = tempfile::tempdir().unwrap();
    let Some(nats) = jetstream_nats(dir.path()) else {
        return;
    };
    let a = default_state_node(&nats).await;
    let b = default_state_node(&nats).await;
    wait_until("the nodes see each other", || {
        let (ca, cb) = (a.cluster().unwrap(), b.cluster().unwrap());
        async move { ca.live_nodes() >= 1 && cb.live_nodes() >= 1 }
    })
    .await;

    // A browser on node a, pending. Node b knows it only through the shared store (with a file
    // per node it would answer 404), and approves it; node a lets a client in.
    let ext = Extension::connect(&a, "alice", "Laptop", "laptop").await;
    let id = ext.extension_id.clone();
    wait_until("node b knows node a's browser", || {
        let (b, id) = (&b, id.clone());
        async move { browser_record(b, &id).await.is_some() }
    })
    .await;
    let mut on_a = Mcp::connect(&a, "alice").await;
    let refused = on_a.call("connect", json!({"extension_id": id})).await;
    assert_eq!(refused["error"]["code"], -32011, "{refused}");
    approve_through_b_until_a_lets_in(&b, &mut on_a, &id).await;

    // A token revoked through node a closes its socket on node b, and is in the shared store:
    // a node started after both are gone refuses it, and knows the approval.
    let leaked = revoking_through_a_closes_the_socket_on_b(&a, &b).await;
    ext.client.close().await;
    a.shutdown().await;
    b.shutdown().await;
    let c = default_state_node(&nats).await;
    let mut again = Client::connect(&c.url("/mcp")).await;
    let answer = again
        .call(json!(1), "mcp_handshake", json!({"access_token": leaked}))
        .await;
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("revoked"), "{answer}");
    let record = browser_record(&c, &id)
        .await
        .expect("the browser is remembered");
    assert_eq!(record["approved"], true, "{record}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_state_nats_revocations_reach_every_node_and_outlive_them_all() {
    let dir = tempfile::tempdir().unwrap();
    let Some(nats) = jetstream_nats(dir.path()) else {
        return;
    };
    let a = shared_state_node(&nats).await;
    let b = shared_state_node(&nats).await;
    let leaked = revoking_through_a_closes_the_socket_on_b(&a, &b).await;
    // Every node restarts; a new one refuses the token without having heard the revocation.
    a.shutdown().await;
    b.shutdown().await;
    let c = shared_state_node(&nats).await;
    let mut again = Client::connect(&c.url("/mcp")).await;
    let answer = again
        .call(json!(1), "mcp_handshake", json!({"access_token": leaked}))
        .await;
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("revoked"), "{answer}");
}

#[tokio::test]
async fn state_nats_start_up_errors_say_what_is_missing() {
    let serve = |args: &[&str]| {
        let output = Command::new(env!("CARGO_BIN_EXE_mcp-relay"))
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(args)
            .env("MCP_RELAY_JWT_SECRET", SECRET)
            .env("XDG_DATA_HOME", std::env::temp_dir())
            .output()
            .unwrap();
        assert!(!output.status.success());
        String::from_utf8_lossy(&output.stderr).into_owned()
    };
    let stderr = serve(&["--state", "nats"]);
    assert!(stderr.contains("needs --cluster"), "{stderr}");
    // Without JetStream, start-up stops rather than serving without the shared state.
    let Some(plain) = NatsServer::start_or_skip("shared state test", &[]) else {
        return;
    };
    let started = Instant::now();
    let stderr = serve(&["--cluster", &plain.url(), "--state", "nats"]);
    assert!(stderr.contains("JetStream"), "{stderr}");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    // With --cluster and no --state the state is the shared one: the same error, saying how
    // to ask for a file per node instead.
    let stderr = serve(&["--cluster", &plain.url()]);
    assert!(
        stderr.contains("JetStream") && stderr.contains("--state sqlite:PATH"),
        "{stderr}"
    );
    // Approval on several nodes needs the shared state.
    let stderr = serve(&[
        "--cluster",
        &plain.url(),
        "--require-approval",
        "--state",
        "memory",
    ]);
    assert!(stderr.contains("--state nats"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shared_audit_trail_answers_newest_first_by_user_method_and_time_across_many_messages()
{
    use mcp_relay::operator::store::{AuditQuery, AuditRecord, Store};
    let dir = tempfile::tempdir().unwrap();
    let Some(nats) = jetstream_nats(dir.path()) else {
        return;
    };
    let mut config = mcp_relay::config::ServeConfig::defaults();
    config.cluster = Some(nats.url());
    let store = Store::Nats(Box::new(
        mcp_relay::operator::store::nats::NatsStore::open(&config, &nats.url())
            .await
            .expect("the NATS store opens"),
    ));
    let record = |i: i64| AuditRecord {
        at_ms: 1_000_000 + i,
        kind: "request".into(),
        user_id: if i % 2 == 0 { "alice" } else { "bob" }.into(),
        mcp_client_id: Some("mcp-1".into()),
        connection_id: Some("conn-1".into()),
        extension_id: Some("ext-1".into()),
        method: Some(format!("m{}", i % 10)),
        code: 0,
        duration_ms: Some(1.0),
        detail: None,
    };
    let times = |records: Vec<AuditRecord>| -> Vec<i64> {
        records.iter().map(|r| r.at_ms - 1_000_000).collect()
    };
    // The store's calls are awaited right here: the NATS store awaits JetStream itself.
    // One message per record: more messages than one window of the backwards search.
    for i in 0..3000 {
        store.append_audit(&mut vec![record(i)]).await.unwrap();
    }
    // And one batch of many, split per user.
    let mut batch: Vec<AuditRecord> = (3000..4000).map(record).collect();
    store.append_audit(&mut batch).await.unwrap();
    let query = |q: AuditQuery| {
        let store = &store;
        async move { times(store.query_audit(&q).await.unwrap()) }
    };
    assert_eq!(
        query(AuditQuery {
            user_id: Some("alice".into()),
            limit: 3,
            ..Default::default()
        })
        .await,
        vec![3998, 3996, 3994]
    );
    assert_eq!(
        query(AuditQuery {
            method: Some("m3".into()),
            until_ms: Some(1_000_000 + 3000),
            limit: 3,
            ..Default::default()
        })
        .await,
        vec![2993, 2983, 2973]
    );
    assert_eq!(
        query(AuditQuery {
            user_id: Some("bob".into()),
            since_ms: Some(1_000_000 + 3991),
            limit: 100,
            ..Default::default()
        })
        .await,
        vec![3999, 3997, 3995, 3993, 3991]
    );
    let all_alice = query(AuditQuery {
        user_id: Some("alice".into()),
        limit: 5000,
        ..Default::default()
    })
    .await;
    assert_eq!(all_alice.len(), 2000);
    assert!(all_alice.windows(2).all(|w| w[0] > w[1]));
    assert_eq!(all_alice.last(), Some(&0));

    // One node's batch can hold an event newer than those of messages stored after it:
    // carol's newest event is in her oldest message, more than a window of messages back.
    let carol = |at: i64| AuditRecord {
        user_id: "carol".into(),
        at_ms: 1_000_000 + at,
        ..record(at)
    };
    store.append_audit(&mut vec![carol(9_000)]).await.unwrap();
    for i in 0..2100 {
        store.append_audit(&mut vec![carol(i)]).await.unwrap();
    }
    assert_eq!(
        query(AuditQuery {
            user_id: Some("carol".into()),
            limit: 2,
            ..Default::default()
        })
        .await,
        vec![9_000, 2099]
    );
    // A node started with the trail off leaves the shared trail as it is.
    config.audit_retention = Duration::ZERO;
    let off = Store::Nats(Box::new(
        mcp_relay::operator::store::nats::NatsStore::open(&config, &nats.url())
            .await
            .unwrap(),
    ));
    let kept = off
        .query_audit(&AuditQuery {
            limit: 10,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(kept.len(), 10);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_state_nats_approvals_reach_other_nodes_again_after_a_nats_restart() {
    let dir = tempfile::tempdir().unwrap();
    let Some(mut nats) = jetstream_nats(dir.path()) else {
        return;
    };
    let a = shared_state_node(&nats).await;
    let b = shared_state_node(&nats).await;
    let ext = Extension::connect(&a, "alice", "Laptop", "laptop").await;
    let id = ext.extension_id.clone();
    let _echo = ext.spawn_echo();
    wait_until("node b knows the browser", || {
        let (b, id) = (&b, id.clone());
        async move { browser_record(b, &id).await.is_some() }
    })
    .await;

    nats.stop();
    let (ca, cb) = (a.cluster().unwrap(), b.cluster().unwrap());
    wait_until("the nodes notice the outage", || {
        let (ca, cb) = (ca.clone(), cb.clone());
        async move { !ca.is_connected() && !cb.is_connected() }
    })
    .await;
    // While NATS is away, an approval cannot be stored, and says so.
    let admin = token("root", Some(mcp_relay::auth::Role::Admin));
    let path = format!("/api/v1/browsers/{id}/approve");
    let approve = || api(b.local_addr, "POST", &path, Some(&admin), None);
    let (status, body) = approve().await;
    assert!(status >= 500, "{status} {body}");
    assert!(body.to_string().contains("state store"), "{body}");

    nats.restart().expect("nats-server restarts");
    wait_until("the nodes reconnect", || {
        let (ca, cb) = (ca.clone(), cb.clone());
        async move { ca.is_connected() && cb.is_connected() }
    })
    .await;
    wait_until("the approval is stored", || async {
        approve().await.0 == 200
    })
    .await;
    let mut on_a = Mcp::connect(&a, "alice").await;
    let deadline = Instant::now() + WAIT;
    loop {
        let answer = on_a.call("connect", json!({"extension_id": id})).await;
        if answer["result"]["connection_id"].is_string() {
            break;
        }
        assert_eq!(answer["error"]["code"], -32011, "{answer}");
        assert!(Instant::now() < deadline, "node a never saw the approval");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_state_nats_a_browser_revoked_right_after_its_approval_never_looks_approved_again() {
    let dir = tempfile::tempdir().unwrap();
    let Some(nats) = jetstream_nats(dir.path()) else {
        return;
    };
    let a = shared_state_node(&nats).await;
    let ext = Extension::connect(&a, "alice", "Laptop", "laptop").await;
    let id = ext.extension_id.clone();
    ext.client.close().await;
    // The relay admits the browser when it has read the extension's answer, which the test
    // client does not wait for: under load an approval could otherwise come first.
    common::wait_until("the relay knows the browser", || async {
        browser_record(&a, &id).await.is_some()
    })
    .await;
    let admin = token("root", Some(mcp_relay::auth::Role::Admin));
    for round in 0..10 {
        for verb in ["approve", "revoke"] {
            let path = format!("/api/v1/browsers/{id}/{verb}");
            let (status, body) = api(a.local_addr, "POST", &path, Some(&admin), None).await;
            assert_eq!(status, 200, "{body}");
        }
        // The approval's own write comes back through the watch after the revocation: it must
        // not make the browser approved again, not even for a moment.
        let until = Instant::now() + Duration::from_millis(150);
        while Instant::now() < until {
            let record = browser_record(&a, &id).await.unwrap();
            assert_eq!(record["revoked"], true, "round {round}: {record}");
            assert_eq!(record["approved"], false, "round {round}: {record}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_admin_api_lists_and_kicks_connections_held_by_any_node() {
    let Some(nats) = NatsServer::start_or_skip("cluster test", &[]) else {
        return;
    };
    let (a, b) = joined_pair(&nats).await;
    let ext = Extension::connect(&b, "alice", "Laptop", "laptop").await;
    let id = ext.extension_id.clone();
    let _echo = ext.spawn_echo();
    let mut on_a = Mcp::connect(&a, "alice").await;
    wait_listed(&mut on_a, &[&id]).await;
    let far = on_a.connect_to(&id).await["connection_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut on_b = Mcp::connect(&b, "alice").await;
    let near = on_b.connect_to(&id).await["connection_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut bob = Mcp::connect(&a, "bob").await;
    bob.call("list_extensions", json!({})).await;

    // Node b lists both of alice's connections, saying where each client is.
    let alice = token("alice", Some(mcp_relay::auth::Role::Mcp));
    let (status, body) = api(
        b.local_addr,
        "GET",
        "/api/v1/connections",
        Some(&alice),
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let rows = body["connections"].as_array().unwrap();
    let node_of = |connection: &str| {
        rows.iter()
            .find(|r| r["id"] == connection)
            .map(|r| r["node"].as_str().unwrap().to_owned())
    };
    assert_eq!(rows.len(), 2, "{body}");
    assert_eq!(
        node_of(&far).as_deref(),
        Some(a.cluster().unwrap().node_id())
    );
    assert_eq!(
        node_of(&near).as_deref(),
        Some(b.cluster().unwrap().node_id())
    );

    // Bob may neither see nor kick alice's connection on another node.
    let bobs = token("bob", Some(mcp_relay::auth::Role::Mcp));
    let (_, body) = api(
        b.local_addr,
        "GET",
        "/api/v1/connections",
        Some(&bobs),
        None,
    )
    .await;
    assert_eq!(body["connections"], json!([]), "{body}");
    let path = format!("/api/v1/connections/{far}");
    let (status, body) = api(b.local_addr, "DELETE", &path, Some(&bobs), None).await;
    assert_eq!(status, 403, "{body}");

    // Alice kicks, through node b, the connection whose client is on node a.
    let (status, body) = api(b.local_addr, "DELETE", &path, Some(&alice), None).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["kicked"], true);
    let notice = on_a.client.recv_notification("disconnected").await;
    assert_eq!(notice["params"]["connection_id"], far.as_str(), "{notice}");
    let (status, _) = api(b.local_addr, "DELETE", &path, Some(&alice), None).await;
    assert_eq!(status, 404);
}
