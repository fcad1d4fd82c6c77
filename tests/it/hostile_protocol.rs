//! Issue 11's protocol-level attacks, one test per row: what an attacker can make the relay
//! hold before authentication (row 3), acting as the browser by sending the relay's own methods
//! (row 4), forging log lines (row 10) and using a token past its expiry (row 13); plus the
//! protocol points found at the same time.

use crate::common;

use std::time::{Duration, Instant};

use common::child::ChildRelay;
use common::*;
use futures_util::{SinkExt, StreamExt};
use mcp_relay::auth::{mint_hs256, MintClaims, Role};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

const MIB: usize = 1 << 20;

/// `{"v":"1","junk":[[],[],…]}` of about `bytes`: thousands of tiny values, the shape that
/// costs most as a JSON tree (each two-byte `[]` is a 32-byte value in a vector).
fn tree_bomb(bytes: usize) -> String {
    let mut text = String::with_capacity(bytes + 32);
    text.push_str("[[]");
    while text.len() < bytes {
        text.push_str(",[]");
    }
    text.push(']');
    text
}

/// Reads until the relay authenticates the socket or closes it; returns which.
async fn settle(ws: &mut Client) -> &'static str {
    loop {
        // Generous: a debug build on a busy machine validates tens of MiB slowly.
        match tokio::time::timeout(Duration::from_secs(90), ws.ws.next()).await {
            Ok(Some(Ok(Message::Text(text)))) if text.contains("\"authenticated\"") => {
                return "authenticated"
            }
            Ok(Some(Ok(Message::Close(_)))) | Ok(None) | Ok(Some(Err(_))) => return "closed",
            Ok(Some(Ok(_))) => continue,
            Err(_) => panic!("the relay neither authenticated nor closed the socket"),
        }
    }
}

#[test]
fn pre_auth_frames_cost_the_relay_less_than_four_times_their_size() {
    // The pre-auth read budget (64 KiB by default) would close these sockets after their
    // first 64 KiB; lifted, the frames reach the parser, which is what this test measures.
    let relay = ChildRelay::start(&[
        "--max-message-bytes",
        "32MiB",
        "--auth-timeout",
        "120s",
        "--max-unauthenticated-bytes",
        "64MiB",
    ]);
    let url = relay.url("/extension");
    let baseline = relay.peak_rss();
    let sockets = 4;
    let frame = 16 * MIB;
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let outcomes = runtime.block_on(async {
        let bomb = std::sync::Arc::new(tree_bomb(frame));
        let tasks: Vec<_> = (0..sockets)
            .map(|n| {
                let url = url.clone();
                let bomb = std::sync::Arc::clone(&bomb);
                tokio::spawn(async move {
                    let mut ext = Client::connect(&url).await;
                    let auth = ext.recv().await;
                    // build_info whose params are one huge tree, then an answer whose version
                    // (or, on one socket, whose error) is another.
                    let _ = ext
                        .ws
                        .send(Message::Text(
                            format!(
                                r#"{{"jsonrpc":"2.0","method":"build_info","params":{{"version":"1","junk":{bomb}}}}}"#
                            )
                            .into(),
                        ))
                        .await;
                    let answer = if n == 0 {
                        format!(
                            r#"{{"jsonrpc":"2.0","id":{},"error":{{"code":1,"message":"no","data":{bomb}}}}}"#,
                            auth["id"]
                        )
                    } else {
                        format!(
                            r#"{{"jsonrpc":"2.0","id":{},"result":{{"name":"b","access_token":"{}","client_id":"c{n}","version":{bomb}}}}}"#,
                            auth["id"],
                            token("amplifier", Some(Role::Extension))
                        )
                    };
                    let _ = ext.ws.send(Message::Text(answer.into())).await;
                    settle(&mut ext).await
                })
            })
            .collect();
        let mut outcomes = Vec::new();
        for task in tasks {
            outcomes.push(task.await.unwrap());
        }
        outcomes
    });
    let grown = relay.peak_rss().saturating_sub(baseline);
    let sent = sockets * 2 * frame;
    eprintln!(
        "pre-auth frames: {} MiB sent on {sockets} sockets, relay peak RSS grew {} MiB ({:.2}x); outcomes {outcomes:?}",
        sent / MIB,
        grown / MIB,
        grown as f64 / sent as f64
    );
    assert!(
        grown < 4 * sent,
        "pre-auth frames were amplified: {grown} bytes held for {sent} sent"
    );
    assert_eq!(outcomes[0], "closed", "an error answer never authenticates");
}

#[tokio::test]
async fn a_huge_token_is_refused_before_it_is_decoded() {
    let relay = relay().await;
    let started = Instant::now();
    // Before authentication (within the pre-auth read budget) and after it (a repeated
    // handshake, where no such budget applies): a "header" of base64 the relay must not decode.
    let mut mcp = Client::connect(&relay.url("/mcp")).await;
    for (id, size) in [(1, 32 * 1024), (3, MIB)] {
        let huge = format!("{}.e30.sig", "A".repeat(size));
        let response = mcp
            .call(json!(id), "mcp_handshake", json!({"accessToken": huge}))
            .await;
        assert_eq!(response["error"]["code"], -32000, "{response}");
        let message = response["error"]["message"].as_str().unwrap();
        assert!(message.contains("token too large"), "{message}");
        if id == 1 {
            let ok = mcp
                .call(
                    json!(2),
                    "mcp_handshake",
                    json!({"accessToken": token("alice", Some(Role::Mcp))}),
                )
                .await;
            assert_eq!(ok["result"]["authenticated"], true, "{ok}");
        }
    }
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn mcp_clients_cannot_send_the_relays_own_methods() {
    let relay = relay().await;
    let mut ext = Extension::connect(&relay, "alice", "Chrome", "c1").await;
    let mut mcp = Mcp::connect(&relay, "alice").await;
    mcp.connect_to(&ext.extension_id).await;
    // Skip the `status` the extension gets on connect.
    ext.client.recv_notification("status").await;
    for method in mcp_relay::frame::RELAY_METHODS {
        let response = mcp.call(method, json!({"connection_ids": []})).await;
        assert_eq!(response["error"]["code"], -32601, "{method}: {response}");
        let message = response["error"]["message"].as_str().unwrap();
        assert!(message.contains("sent by the relay"), "{message}");
        // As a notification it gets no answer, and goes nowhere either.
        mcp.client
            .send(json!({"jsonrpc": "2.0", "method": method, "params": {}}))
            .await;
    }
    ext.client.expect_silence(Duration::from_millis(300)).await;
    // The socket still works for everything else.
    mcp.client
        .send(json!({"jsonrpc": "2.0", "id": 99, "method": "tools/list"}))
        .await;
    let request = ext.next_request().await;
    assert_eq!(request["method"], "tools/list");
    ext.reply(&request, json!({"tools": []})).await;
    assert_eq!(
        mcp.client.recv_response().await["result"]["tools"],
        json!([])
    );
}

#[tokio::test]
async fn another_socket_cannot_answer_an_authenticate_it_did_not_see() {
    let relay = relay().await;
    let mut victim = Client::connect(&relay.url("/extension")).await;
    let victim_auth = victim.recv().await;
    // An attacker with a token of their own guesses the ids the spec shows.
    let mut attacker = Client::connect(&relay.url("/extension")).await;
    let attacker_auth = attacker.recv().await;
    for guess in ["proxy:1", "proxy:2"] {
        attacker
            .send(json!({"jsonrpc": "2.0", "id": guess, "result": {
                "name": "rogue", "access_token": token("mallory", Some(Role::Extension))}}))
            .await;
    }
    attacker
        .send(
            json!({"jsonrpc": "2.0", "id": attacker_auth["id"], "result": {
            "name": "rogue", "access_token": token("mallory", Some(Role::Extension))}}),
        )
        .await;
    attacker.recv_notification("authenticated").await;
    // The victim's socket is untouched: still waiting for its own answer, which works.
    victim.expect_silence(Duration::from_millis(200)).await;
    victim
        .send(
            json!({"jsonrpc": "2.0", "id": victim_auth["id"], "result": {
            "name": "mine", "access_token": token("alice", Some(Role::Extension))}}),
        )
        .await;
    let note = victim.recv_notification("authenticated").await;
    assert_eq!(note["params"]["user_id"], "alice");
}

#[test]
fn client_strings_cannot_forge_log_lines_and_tokens_never_reach_the_log() {
    let relay = ChildRelay::start_with(&[], &[("MCP_RELAY_LOG", "debug")], None);
    let extension_url = relay.url("/extension");
    let mcp_url = relay.url("/mcp?token=QUERYSECRET");
    let good_token = token("alice", Some(Role::Extension));
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let forged = raw_token(
            json!({"alg": "HS256\n2026-11-23T00:00:00.000000Z ERROR mcp_relay: FORGED LINE admin=true", "typ": "JWT"}),
            json!({"sub": "x", "exp": 4_000_000_000u64}),
            "sig",
        );
        let mut ext = Client::connect(&extension_url).await;
        let auth = ext.recv().await;
        ext.send(json!({"jsonrpc": "2.0", "id": auth["id"], "result": {
            "name": "Chrome\nFORGED NAME", "access_token": forged}}))
            .await;
        let (code, _) = ext.expect_close().await;
        assert_eq!(code, 1008);
        // A working extension, and an MCP client with a token in its URL.
        let mut ext = Client::connect(&extension_url).await;
        let auth = ext.recv().await;
        ext.send(json!({"jsonrpc": "2.0", "id": auth["id"], "result": {
            "name": "Chrome", "access_token": good_token}}))
            .await;
        ext.recv_notification("authenticated").await;
        let mut mcp = Client::connect(&mcp_url).await;
        let response = mcp
            .call(json!(1), "mcp_handshake", json!({"access_token": token("alice", Some(Role::Mcp))}))
            .await;
        assert_eq!(response["result"]["authenticated"], true);
    });
    // The sockets closed with the block above. The working extension's end is the last thing
    // the relay logs about them; the child's log is read on a thread of its own.
    runtime.block_on(wait_until(
        "the log holds the working extension's end",
        || async { relay.log().contains("extension socket ended") },
    ));
    let log = relay.log();
    assert!(log.contains("extension authentication failed"), "{log}");
    for line in log.lines() {
        assert!(
            !line.trim_start().starts_with("2026-11-23T00:00:00") && !line.starts_with("FORGED"),
            "a client string started a log line: {line}"
        );
    }
    assert!(
        log.contains("HS256\\u{a}2026"),
        "the newline is shown escaped: {log}"
    );
    assert!(
        !log.contains("QUERYSECRET"),
        "a token from a URL was logged"
    );
    assert!(!log.contains(&good_token), "an extension token was logged");
}

/// A token of `user` for `role` that expires in `secs` seconds.
fn short_token(user: &str, role: Role, secs: u64) -> String {
    mint_hs256(
        SECRET.as_bytes(),
        &MintClaims::new(user, Some(role), Duration::from_secs(secs)),
    )
}

#[tokio::test]
async fn sockets_close_when_their_token_expires() {
    let relay = relay_with(|c| c.token_expiry_grace = Duration::from_millis(200)).await;
    let started = Instant::now();
    let mut mcp = Client::connect(&relay.url("/mcp")).await;
    let response = mcp
        .call(
            json!(1),
            "mcp_handshake",
            json!({"access_token": short_token("alice", Role::Mcp, 2)}),
        )
        .await;
    assert_eq!(response["result"]["authenticated"], true);
    let mut ext = Client::connect(&relay.url("/extension")).await;
    let auth = ext.recv().await;
    ext.send(json!({"jsonrpc": "2.0", "id": auth["id"], "result": {
        "name": "Chrome", "access_token": short_token("alice", Role::Extension, 2)}}))
        .await;
    ext.recv_notification("authenticated").await;
    // A socket on a long-lived token is not affected.
    let mut lasting = Mcp::connect(&relay, "alice").await;
    assert_eq!(mcp.expect_close().await, (1008, "token expired".to_owned()));
    assert_eq!(ext.expect_close().await, (1008, "token expired".to_owned()));
    let elapsed = started.elapsed();
    assert!(
        elapsed > Duration::from_millis(900) && elapsed < Duration::from_secs(5),
        "{elapsed:?}"
    );
    let listed = lasting.call("list_extensions", json!({})).await;
    assert_eq!(listed["result"]["extensions"], json!([]), "{listed}");
}

#[tokio::test]
async fn a_new_handshake_with_a_fresh_token_keeps_the_socket_open() {
    let relay = relay_with(|c| c.token_expiry_grace = Duration::ZERO).await;
    let mut mcp = Client::connect(&relay.url("/mcp")).await;
    let first = mcp
        .call(
            json!(1),
            "mcp_handshake",
            json!({"access_token": short_token("alice", Role::Mcp, 1)}),
        )
        .await;
    assert_eq!(first["result"]["authenticated"], true);
    let fresh = mcp
        .call(
            json!(2),
            "mcp_handshake",
            json!({"access_token": token("alice", Some(Role::Mcp))}),
        )
        .await;
    assert_eq!(fresh["result"]["authenticated"], true);
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let listed = mcp.call(json!(3), "list_extensions", json!({})).await;
    assert!(listed["result"]["extensions"].is_array(), "{listed}");
}

#[tokio::test]
async fn a_null_error_beside_a_result_is_delivered_as_a_success() {
    let relay = relay().await;
    let mut ext = Extension::connect(&relay, "alice", "Chrome", "c1").await;
    let mut mcp = Mcp::connect(&relay, "alice").await;
    mcp.connect_to(&ext.extension_id).await;
    mcp.client
        .send(json!({"jsonrpc": "2.0", "id": "x", "method": "tabs/list"}))
        .await;
    let request = ext.next_request().await;
    ext.client
        .send(json!({"jsonrpc": "2.0", "id": request["id"], "result": {"tabs": []}, "error": null}))
        .await;
    let response: Value = mcp.client.recv_response().await;
    assert_eq!(
        response,
        json!({"jsonrpc": "2.0", "id": "x", "result": {"tabs": []}})
    );
}

#[tokio::test]
async fn an_extension_notification_with_a_non_string_connection_id_goes_to_no_one() {
    let relay = relay().await;
    let mut ext = Extension::connect(&relay, "alice", "Chrome", "c1").await;
    let mut first = Mcp::connect(&relay, "alice").await;
    let mut second = Mcp::connect(&relay, "alice").await;
    first.connect_to(&ext.extension_id).await;
    second.connect_to(&ext.extension_id).await;
    for id in [json!(null), json!(7), json!({"all": true})] {
        ext.client
            .send(json!({"jsonrpc": "2.0", "method": "forwardCDPEvent", "connectionId": id, "params": {}}))
            .await;
    }
    first
        .client
        .expect_silence(Duration::from_millis(300))
        .await;
    second
        .client
        .expect_silence(Duration::from_millis(100))
        .await;
}
