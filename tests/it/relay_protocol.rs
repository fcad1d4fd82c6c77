//! The relay's protocol as real clients see it over real sockets: authentication flows, control
//! methods, id-mapped forwarding, notifications, and the "nothing lost" guarantees.

use crate::common;

use std::time::Duration;

use common::*;
use mcp_relay::auth::Role;
use serde_json::{json, Value};

#[tokio::test]
async fn extension_is_asked_to_authenticate_with_the_spec_frame_and_an_id_of_its_own() {
    let relay = relay().await;
    let mut first = Client::connect(&relay.url("/extension")).await;
    let mut second = Client::connect(&relay.url("/extension")).await;
    let mut ids = Vec::new();
    for ext in [&mut first, &mut second] {
        let text = ext.recv_text().await;
        let (head, tail) = text.split_at(text.find("proxy:").expect("a proxy: id"));
        assert_eq!(head, r#"{"jsonrpc":"2.0","id":""#);
        let (id, rest) = tail.split_at(tail.find('"').unwrap());
        assert_eq!(rest, r#"","method":"authenticate","params":{}}"#);
        // Unguessable: whoever knows a socket's id could answer for it.
        let random = id.strip_prefix("proxy:").unwrap();
        assert_eq!(random.len(), 32, "{id}");
        assert!(random.bytes().all(|b| b.is_ascii_hexdigit()), "{id}");
        ids.push(id.to_owned());
    }
    assert_ne!(ids[0], ids[1], "every socket's authenticate has its own id");
}

#[tokio::test]
async fn extension_with_spec_camel_case_token_is_authenticated() {
    let relay = relay().await;
    let mut ext = Client::connect(&relay.url("/extension")).await;
    let auth = ext.recv().await;
    ext.send(json!({"jsonrpc": "2.0", "id": auth["id"], "result": {
        "name": "Chrome 141", "accessToken": token("alice", Some(Role::Extension))}}))
        .await;
    let note = ext.recv_notification("authenticated").await;
    assert_eq!(note["params"]["user_id"], "alice");
    assert!(note["params"]["extension_id"]
        .as_str()
        .unwrap()
        .starts_with("ext-"));
}

#[tokio::test]
async fn authenticated_notice_carries_user_extension_and_client_ids() {
    let relay = relay().await;
    let mut ext = Client::connect(&relay.url("/extension")).await;
    let auth = ext.recv().await;
    ext.send(
        json!({"id": auth["id"], "result": {"name": "B", "access_token":
        token("alice", None), "client_id": "c-1"}}),
    )
    .await;
    let note = ext.recv_notification("authenticated").await;
    assert_eq!(note["params"]["client_id"], "c-1");
    assert_eq!(note["params"]["user_id"], "alice");
}

#[tokio::test]
async fn extension_id_is_stable_across_reconnects_for_the_same_client_id() {
    let relay = relay().await;
    let first = Extension::connect(&relay, "alice", "Chrome", "client-A").await;
    let id = first.extension_id.clone();
    first.client.close().await;
    wait_until("the first socket has left", || async {
        metric(
            &relay.metrics().render(),
            "mcp_relay_sockets{role=\"extension\"}",
        ) == 0.0
    })
    .await;
    let second = Extension::connect(&relay, "alice", "Chrome", "client-A").await;
    assert_eq!(second.extension_id, id);
    let other = Extension::connect(&relay, "alice", "Chrome", "client-B").await;
    assert_ne!(other.extension_id, id);
    let other_user = Extension::connect(&relay, "bob", "Chrome", "client-A").await;
    assert_ne!(other_user.extension_id, id);
}

#[tokio::test]
async fn extension_with_bad_token_is_closed_with_1008_and_a_reason() {
    let relay = relay().await;
    let mut ext = Client::connect(&relay.url("/extension")).await;
    let auth = ext.recv().await;
    ext.send(json!({"jsonrpc": "2.0", "id": auth["id"], "result": {"name": "x", "accessToken": "garbage"}}))
        .await;
    let (code, reason) = ext.expect_close().await;
    assert_eq!(code, 1008);
    assert!(reason.contains("authentication failed"), "{reason}");

    let mut ext = Client::connect(&relay.url("/extension")).await;
    let auth = ext.recv().await;
    ext.send(json!({"jsonrpc": "2.0", "id": auth["id"], "result": {"name": "x"}}))
        .await;
    let (code, reason) = ext.expect_close().await;
    assert_eq!(code, 1008);
    assert!(reason.contains("missing access token"), "{reason}");
}

#[tokio::test]
async fn extension_answering_authenticate_with_an_error_is_closed() {
    let relay = relay().await;
    let mut ext = Client::connect(&relay.url("/extension")).await;
    let auth = ext.recv().await;
    ext.send(
        json!({"jsonrpc": "2.0", "id": auth["id"], "error": {"message": "no token configured"}}),
    )
    .await;
    let (code, reason) = ext.expect_close().await;
    assert_eq!(code, 1008);
    assert!(reason.contains("no token configured"), "{reason}");
}

#[tokio::test]
async fn extension_that_never_answers_is_closed_after_the_auth_timeout() {
    let relay = relay_with(|c| c.auth_timeout = Duration::from_millis(300)).await;
    let mut ext = Client::connect(&relay.url("/extension")).await;
    let _auth = ext.recv().await;
    let (code, reason) = ext.expect_close().await;
    assert_eq!(code, 1008);
    assert!(reason.contains("timed out"), "{reason}");
}

#[tokio::test]
async fn extension_token_with_mcp_role_is_refused() {
    let relay = relay().await;
    let mut ext = Client::connect(&relay.url("/extension")).await;
    let auth = ext.recv().await;
    ext.send(json!({"id": auth["id"], "result": {"name": "x", "accessToken": token("alice", Some(Role::Mcp))}}))
        .await;
    let (code, reason) = ext.expect_close().await;
    assert_eq!(code, 1008);
    assert!(reason.contains("role"), "{reason}");
}

#[tokio::test]
async fn mcp_handshake_accepts_both_token_spellings_and_returns_ids() {
    let relay = relay().await;
    for key in ["accessToken", "access_token"] {
        let mut mcp = Client::connect(&relay.url("/mcp")).await;
        let response = mcp
            .call(
                json!(1),
                "mcp_handshake",
                json!({key: token("alice", Some(Role::Mcp)), "client_id": "x"}),
            )
            .await;
        assert_eq!(response["id"], 1);
        assert_eq!(response["result"]["authenticated"], true);
        assert_eq!(response["result"]["user_id"], "alice");
        assert!(response["result"]["mcp_client_id"]
            .as_str()
            .unwrap()
            .starts_with("mcp-"));
    }
}

#[tokio::test]
async fn mcp_handshake_with_bad_token_fails_with_32000_and_reason() {
    let relay = relay().await;
    let mut mcp = Client::connect(&relay.url("/mcp")).await;
    let response = mcp
        .call(json!(1), "mcp_handshake", json!({"accessToken": "nope"}))
        .await;
    assert_eq!(response["error"]["code"], -32000);
    let message = response["error"]["message"].as_str().unwrap();
    assert!(message.starts_with("Authentication failed: "), "{message}");
    // The socket stays usable: a good handshake still works.
    let response = mcp
        .call(
            json!(2),
            "mcp_handshake",
            json!({"accessToken": token("alice", None)}),
        )
        .await;
    assert_eq!(response["result"]["authenticated"], true);
}

#[tokio::test]
async fn methods_before_handshake_are_not_authenticated() {
    let relay = relay().await;
    let mut mcp = Client::connect(&relay.url("/mcp")).await;
    for method in ["list_extensions", "connect", "getTabs"] {
        let response = mcp.call(json!(9), method, json!({})).await;
        assert_eq!(response["error"]["code"], -32000);
        assert_eq!(response["error"]["message"], "Not authenticated");
    }
}

#[tokio::test]
async fn list_extensions_shows_only_the_callers_extensions() {
    let relay = relay().await;
    let mut mcp = Mcp::connect(&relay, "alice").await;
    let empty = mcp.call("list_extensions", json!({})).await;
    assert_eq!(empty["result"], json!({"extensions": []}));
    let mine = Extension::connect(&relay, "alice", "Alice's Chrome", "a").await;
    let _theirs = Extension::connect(&relay, "bob", "Bob's Chrome", "b").await;
    let list = mcp.call("list_extensions", json!({})).await;
    let extensions = list["result"]["extensions"].as_array().unwrap();
    assert_eq!(extensions.len(), 1);
    assert_eq!(extensions[0]["id"], mine.extension_id.as_str());
    assert_eq!(extensions[0]["name"], "Alice's Chrome");
    assert_eq!(extensions[0]["connected"], true);
    assert_eq!(extensions[0]["version"], "1.2.3");
}

#[tokio::test]
async fn connect_errors_follow_the_spec_codes() {
    let relay = relay().await;
    let ext = Extension::connect(&relay, "alice", "Chrome", "a").await;
    let bobs = Extension::connect(&relay, "bob", "Chrome", "b").await;
    let mut mcp = Mcp::connect(&relay, "alice").await;

    let unknown = mcp
        .call("connect", json!({"extension_id": "ext-nope"}))
        .await;
    assert_eq!(unknown["error"]["code"], -32000);
    assert_eq!(
        unknown["error"]["message"],
        "Extension not found or not accessible"
    );
    let foreign = mcp
        .call("connect", json!({"extension_id": bobs.extension_id}))
        .await;
    assert_eq!(foreign["error"], unknown["error"]);
    let missing = mcp.call("connect", json!({})).await;
    assert_eq!(missing["error"]["code"], -32602);
    let wrong_type = mcp.call("connect", json!({"extension_id": 5})).await;
    assert_eq!(wrong_type["error"]["code"], -32602);

    let result = mcp.connect_to(&ext.extension_id).await;
    assert!(result["connection_id"]
        .as_str()
        .unwrap()
        .starts_with("conn-"));
    assert_eq!(result["extension_id"], ext.extension_id.as_str());
    assert_eq!(result["extension_name"], "Chrome");
    let again = mcp
        .call("connect", json!({"extension_id": ext.extension_id}))
        .await;
    assert_eq!(again["error"]["code"], -32001);
}

#[tokio::test]
async fn disconnect_succeeds_whether_or_not_connected() {
    let relay = relay().await;
    let ext = Extension::connect(&relay, "alice", "Chrome", "a").await;
    let mut mcp = Mcp::connect(&relay, "alice").await;
    let response = mcp.call("disconnect", json!({})).await;
    assert_eq!(response["result"], json!({"disconnected": true}));
    mcp.connect_to(&ext.extension_id).await;
    let response = mcp.call("disconnect", json!({})).await;
    assert_eq!(response["result"], json!({"disconnected": true}));
    let after = mcp.call("getTabs", json!({})).await;
    assert_eq!(after["error"]["message"], "Not connected to an extension");
    // And connecting again works.
    mcp.connect_to(&ext.extension_id).await;
}

#[tokio::test]
async fn forwarded_request_gets_a_prefixed_id_and_the_answer_gets_the_original_back() {
    let relay = relay().await;
    let mut ext = Extension::connect(&relay, "alice", "Chrome", "a").await;
    let mut mcp = Mcp::connect(&relay, "alice").await;
    let conn = mcp.connect_to(&ext.extension_id).await;
    let connection_id = conn["connection_id"].as_str().unwrap().to_owned();

    mcp.client
        .send(json!({"jsonrpc": "2.0", "id": 100, "method": "createTab",
            "params": {"url": "https://example.com", "stealth": true}}))
        .await;
    let request = ext.next_request().await;
    assert_eq!(request["id"], format!("{connection_id}:100"));
    assert_eq!(request["method"], "createTab");
    assert_eq!(
        request["params"],
        json!({"url": "https://example.com", "stealth": true})
    );
    assert!(request.get("connectionId").is_none());
    ext.reply(&request, json!({"tabId": 42})).await;
    let response = mcp.client.recv_response().await;
    assert_eq!(
        response,
        json!({"jsonrpc": "2.0", "id": 100, "result": {"tabId": 42}})
    );
}

#[tokio::test]
async fn ids_come_back_with_the_same_type_and_bytes() {
    let relay = relay().await;
    let mut ext = Extension::connect(&relay, "alice", "Chrome", "a").await;
    let mut mcp = Mcp::connect(&relay, "alice").await;
    mcp.connect_to(&ext.extension_id).await;
    let ids = [
        "7",
        "\"7\"",
        "\"550e8400-e29b-41d4-a716-446655440000\"",
        "123456789012345678901234567890",
        "1.0",
        "-0",
        "1e3",
        "\"\\u0041b\\\"c\"",
        "null",
    ];
    for id in ids {
        mcp.client
            .send_text(&format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"getTabs","params":{{}}}}"#
            ))
            .await;
        let request = ext.next_request().await;
        ext.reply(&request, json!({"ok": true})).await;
        let text = mcp.client.recv_text().await;
        assert_eq!(
            text,
            format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"ok":true}}}}"#),
            "id {id}"
        );
    }
}

#[tokio::test]
async fn two_clients_sending_identical_ids_each_get_their_own_answer() {
    let relay = relay().await;
    let mut ext = Extension::connect(&relay, "alice", "Chrome", "a").await;
    let mut a = Mcp::connect(&relay, "alice").await;
    let mut b = Mcp::connect(&relay, "alice").await;
    a.connect_to(&ext.extension_id).await;
    b.connect_to(&ext.extension_id).await;
    a.client
        .send(json!({"jsonrpc": "2.0", "id": 1, "method": "who", "params": {"me": "a"}}))
        .await;
    b.client
        .send(json!({"jsonrpc": "2.0", "id": 1, "method": "who", "params": {"me": "b"}}))
        .await;
    let first = ext.next_request().await;
    let second = ext.next_request().await;
    assert_ne!(first["id"], second["id"]);
    // Answer in reverse order.
    ext.reply(&second, json!({"you": second["params"]["me"]}))
        .await;
    ext.reply(&first, json!({"you": first["params"]["me"]}))
        .await;
    assert_eq!(a.client.recv_response().await["result"]["you"], "a");
    assert_eq!(b.client.recv_response().await["result"]["you"], "b");
}

#[tokio::test]
async fn one_client_reusing_an_id_concurrently_gets_one_answer_per_request() {
    let relay = relay().await;
    let mut ext = Extension::connect(&relay, "alice", "Chrome", "a").await;
    let mut mcp = Mcp::connect(&relay, "alice").await;
    mcp.connect_to(&ext.extension_id).await;
    for n in 0..3 {
        mcp.client
            .send(json!({"jsonrpc": "2.0", "id": 1, "method": "step", "params": {"n": n}}))
            .await;
    }
    let mut requests = Vec::new();
    for _ in 0..3 {
        requests.push(ext.next_request().await);
    }
    let ids: std::collections::HashSet<String> = requests
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids.len(), 3, "mapped ids must be distinct: {ids:?}");
    for request in requests.iter().rev() {
        ext.reply(request, json!({"n": request["params"]["n"]}))
            .await;
    }
    let mut answers = Vec::new();
    for _ in 0..3 {
        let response = mcp.client.recv_response().await;
        assert_eq!(response["id"], 1);
        answers.push(response["result"]["n"].as_i64().unwrap());
    }
    answers.sort();
    assert_eq!(answers, vec![0, 1, 2]);
}

#[tokio::test]
async fn extension_errors_pass_through_and_missing_parts_are_filled_in() {
    let relay = relay().await;
    let mut ext = Extension::connect(&relay, "alice", "Chrome", "a").await;
    let mut mcp = Mcp::connect(&relay, "alice").await;
    mcp.connect_to(&ext.extension_id).await;

    mcp.client
        .send(json!({"jsonrpc": "2.0", "id": 1, "method": "x"}))
        .await;
    let request = ext.next_request().await;
    ext.client
        .send(json!({"id": request["id"], "error": {"code": -32001, "message": "denied", "data": {"why": 1}}}))
        .await;
    let response = mcp.client.recv_response().await;
    assert_eq!(
        response["error"],
        json!({"code": -32001, "message": "denied", "data": {"why": 1}})
    );

    mcp.client
        .send(json!({"jsonrpc": "2.0", "id": 2, "method": "x"}))
        .await;
    let request = ext.next_request().await;
    ext.client
        .send(json!({"id": request["id"], "error": {"message": "Tab creation failed"}}))
        .await;
    let response = mcp.client.recv_response().await;
    assert_eq!(response["error"]["code"], -32000);
    assert_eq!(response["error"]["message"], "Tab creation failed");

    mcp.client
        .send(json!({"jsonrpc": "2.0", "id": 3, "method": "x"}))
        .await;
    let request = ext.next_request().await;
    ext.client.send(json!({"id": request["id"]})).await;
    let response = mcp.client.recv_response().await;
    assert_eq!(response["id"], 3);
    assert_eq!(response["error"]["code"], -32603);
}

#[tokio::test]
async fn requests_without_a_connection_are_refused() {
    let relay = relay().await;
    let mut mcp = Mcp::connect(&relay, "alice").await;
    let response = mcp.call("getTabs", json!({})).await;
    assert_eq!(response["error"]["code"], -32012);
    assert_eq!(
        response["error"]["message"],
        "Not connected to an extension"
    );
}

#[tokio::test]
async fn connection_id_naming_this_connection_is_stripped_and_another_is_rejected() {
    let relay = relay().await;
    let mut ext = Extension::connect(&relay, "alice", "Chrome", "a").await;
    let mut mcp = Mcp::connect(&relay, "alice").await;
    let conn = mcp.connect_to(&ext.extension_id).await;
    mcp.client
        .send(json!({"jsonrpc": "2.0", "id": 5, "method": "getTabs", "connectionId": conn["connection_id"]}))
        .await;
    let request = ext.next_request().await;
    assert!(request.get("connectionId").is_none());
    ext.reply(&request, json!({})).await;
    assert_eq!(mcp.client.recv_response().await["result"], json!({}));

    mcp.client
        .send(json!({"jsonrpc": "2.0", "id": 7, "method": "getTabs",
            "connectionId": "conn-00000000-0000-0000-0000-000000000000"}))
        .await;
    let response = mcp.client.recv_response().await;
    assert_eq!(response["id"], 7);
    assert_eq!(response["error"]["code"], -32000);
    assert!(response["error"]["message"]
        .as_str()
        .unwrap()
        .contains("connectionId"));
}

#[tokio::test]
async fn ten_megabyte_result_round_trips_byte_exact() {
    let relay = relay().await;
    let mut ext = Extension::connect(&relay, "alice", "Chrome", "a").await;
    let mut mcp = Mcp::connect(&relay, "alice").await;
    mcp.connect_to(&ext.extension_id).await;
    let blob: String = (0..10 * 1024 * 1024)
        .map(|i| char::from(b'A' + (i % 26) as u8))
        .collect();
    mcp.client
        .send(json!({"jsonrpc": "2.0", "id": "big", "method": "screenshot"}))
        .await;
    let request = ext.next_request().await;
    let reply = format!(
        r#"{{"jsonrpc":"2.0","id":{},"result":{{"data":"{blob}","mimeType":"image/png"}}}}"#,
        request["id"]
    );
    ext.client.send_text(&reply).await;
    let text = mcp.client.recv_text().await;
    assert_eq!(
        text,
        format!(
            r#"{{"jsonrpc":"2.0","id":"big","result":{{"data":"{blob}","mimeType":"image/png"}}}}"#
        )
    );
}

#[tokio::test]
async fn mcp_notifications_reach_the_extension_unchanged() {
    let relay = relay().await;
    let mut ext = Extension::connect(&relay, "alice", "Chrome", "a").await;
    let mut mcp = Mcp::connect(&relay, "alice").await;
    mcp.connect_to(&ext.extension_id).await;
    mcp.client
        .send(json!({"jsonrpc": "2.0", "method": "notifications/initialized", "params": {"x": 1}}))
        .await;
    let note = ext
        .client
        .recv_notification("notifications/initialized")
        .await;
    assert_eq!(
        note,
        json!({"jsonrpc": "2.0", "method": "notifications/initialized", "params": {"x": 1}})
    );
}

#[tokio::test]
async fn extension_notifications_go_to_all_peers_or_only_the_named_connection() {
    let relay = relay().await;
    let mut ext = Extension::connect(&relay, "alice", "Chrome", "a").await;
    let mut a = Mcp::connect(&relay, "alice").await;
    let mut b = Mcp::connect(&relay, "alice").await;
    let conn_a = a.connect_to(&ext.extension_id).await;
    b.connect_to(&ext.extension_id).await;

    ext.client
        .send(json!({"jsonrpc": "2.0", "method": "notifications/tab_info_update", "params": {"tabs": 3}}))
        .await;
    for client in [&mut a, &mut b] {
        let note = client
            .client
            .recv_notification("notifications/tab_info_update")
            .await;
        assert_eq!(note["params"]["tabs"], 3);
    }

    ext.client
        .send(json!({"jsonrpc": "2.0", "method": "forwardCDPEvent",
            "params": {"method": "Page.loadEventFired"}, "connectionId": conn_a["connection_id"]}))
        .await;
    let note = a.client.recv_notification("forwardCDPEvent").await;
    assert!(note.get("connectionId").is_none());
    assert_eq!(note["params"]["method"], "Page.loadEventFired");
    b.client.expect_silence(Duration::from_millis(300)).await;
}

#[tokio::test]
async fn extension_gets_status_whenever_its_peers_change() {
    let relay = relay().await;
    let mut ext = Extension::connect(&relay, "alice", "Chrome", "a").await;
    let mut a = Mcp::connect(&relay, "alice").await;
    let conn = a.connect_to(&ext.extension_id).await;
    let status = ext.client.recv_notification("status").await;
    assert_eq!(status["params"]["connected"], true);
    assert_eq!(status["params"]["peer_count"], 1);
    assert!(status["params"]["timestamp"].is_string());
    assert_eq!(
        status["params"]["connection_ids"],
        json!([conn["connection_id"]])
    );
    let mut b = Mcp::connect(&relay, "alice").await;
    b.connect_to(&ext.extension_id).await;
    assert_eq!(
        ext.client.recv_notification("status").await["params"]["peer_count"],
        2
    );
    b.call("disconnect", json!({})).await;
    let closed = ext.client.recv_notification("connection_closed").await;
    assert!(closed["params"]["connection_id"].is_string());
    assert_eq!(
        ext.client.recv_notification("status").await["params"]["peer_count"],
        1
    );
    a.client.close().await;
    let status = ext.client.recv_notification("status").await;
    assert_eq!(status["params"]["peer_count"], 0);
    assert_eq!(status["params"]["connected"], false);
}

#[tokio::test]
async fn extension_dropped_mid_request_yields_an_error_and_a_disconnected_notice() {
    let relay = relay().await;
    let mut ext = Extension::connect(&relay, "alice", "Chrome", "a").await;
    let extension_id = ext.extension_id.clone();
    let mut mcp = Mcp::connect(&relay, "alice").await;
    let conn = mcp.connect_to(&extension_id).await;
    mcp.client
        .send(json!({"jsonrpc": "2.0", "id": 77, "method": "slow"}))
        .await;
    let _request = ext.next_request().await;
    ext.client.close().await;

    let mut got_error = false;
    let mut got_notice = false;
    while !(got_error && got_notice) {
        let frame = mcp.client.recv().await;
        if frame["id"] == 77 {
            assert_eq!(frame["error"]["code"], -32004);
            got_error = true;
        } else if frame["method"] == "disconnected" {
            let p = &frame["params"];
            assert_eq!(p["connection_id"], conn["connection_id"]);
            assert_eq!(p["extension_id"], extension_id.as_str());
            assert_eq!(p["id"], extension_id.as_str());
            assert_eq!(p["name"], "Chrome");
            assert!(p["reason"]
                .as_str()
                .unwrap()
                .starts_with("Extension closed"));
            got_notice = true;
        }
    }
    let after = mcp.call("getTabs", json!({})).await;
    assert_eq!(after["error"]["message"], "Not connected to an extension");
}

#[tokio::test]
async fn reconnecting_extension_keeps_its_id_and_former_peers_get_connected() {
    let relay = relay().await;
    let ext = Extension::connect(&relay, "alice", "Chrome", "stable").await;
    let extension_id = ext.extension_id.clone();
    let mut mcp = Mcp::connect(&relay, "alice").await;
    mcp.connect_to(&extension_id).await;
    ext.client.close().await;
    mcp.client.recv_notification("disconnected").await;

    let back = Extension::connect(&relay, "alice", "Chrome", "stable").await;
    assert_eq!(back.extension_id, extension_id);
    let note = mcp.client.recv_notification("connected").await;
    assert_eq!(
        note["params"],
        json!({"id": extension_id, "extension_id": extension_id, "name": "Chrome", "reconnection": true})
    );
    mcp.connect_to(&extension_id).await;
}

#[tokio::test]
async fn duplicate_socket_takes_over_without_notices_and_old_answers_still_arrive() {
    let relay = relay().await;
    let mut old = Extension::connect(&relay, "alice", "Chrome", "dup").await;
    let mut mcp = Mcp::connect(&relay, "alice").await;
    mcp.connect_to(&old.extension_id).await;
    mcp.client
        .send(json!({"jsonrpc": "2.0", "id": 1, "method": "before"}))
        .await;
    let pending_on_old = old.next_request().await;

    let mut new = Extension::connect(&relay, "alice", "Chrome", "dup").await;
    assert_eq!(new.extension_id, old.extension_id);
    // The new socket learns about the existing peer.
    assert_eq!(new.initial_status["params"]["peer_count"], 1);
    assert_eq!(
        new.initial_status["params"]["connection_ids"]
            .as_array()
            .unwrap()
            .len(),
        1
    );

    mcp.client
        .send(json!({"jsonrpc": "2.0", "id": 2, "method": "after"}))
        .await;
    let on_new = new.next_request().await;
    assert_eq!(on_new["method"], "after");
    new.reply(&on_new, json!({"from": "new"})).await;
    old.reply(&pending_on_old, json!({"from": "old"})).await;

    let mut answers = [mcp.client.recv().await, mcp.client.recv().await];
    answers.sort_by_key(|a| a["id"].as_i64());
    assert_eq!(answers[0]["result"]["from"], "old");
    assert_eq!(answers[1]["result"]["from"], "new");
    // No disconnected/connected notices, and the old socket stays open (it is not closed).
    mcp.client.expect_silence(Duration::from_millis(300)).await;
    old.client.expect_silence(Duration::from_millis(100)).await;

    // Beyond the cap (2 by default) the oldest socket is closed.
    let _third = Extension::connect(&relay, "alice", "Chrome", "dup").await;
    let (code, reason) = old.client.expect_close().await;
    assert_eq!(code, 1000);
    assert!(reason.contains("superseded"), "{reason}");
    mcp.client.expect_silence(Duration::from_millis(200)).await;
}

#[tokio::test]
async fn request_without_answer_times_out_and_extension_is_told_to_cancel() {
    let relay = relay_with(|c| c.request_timeout = Duration::from_millis(300)).await;
    let mut ext = Extension::connect(&relay, "alice", "Chrome", "a").await;
    let mut mcp = Mcp::connect(&relay, "alice").await;
    mcp.connect_to(&ext.extension_id).await;
    mcp.client
        .send(json!({"jsonrpc": "2.0", "id": "t", "method": "hang"}))
        .await;
    let request = ext.next_request().await;
    let response = mcp.client.recv_response().await;
    assert_eq!(response["id"], "t");
    assert_eq!(response["error"]["code"], -32003);
    let cancel = ext
        .client
        .recv_notification("notifications/cancelled")
        .await;
    assert_eq!(cancel["params"]["requestId"], request["id"]);
    // A late answer is dropped (counted), not delivered twice.
    ext.reply(&request, json!({"late": true})).await;
    mcp.client.expect_silence(Duration::from_millis(300)).await;
    assert!(relay
        .metrics()
        .render()
        .contains("mcp_relay_unknown_responses_total 1"));
}

#[tokio::test]
async fn mcp_client_leaving_with_pending_requests_cancels_them_at_the_extension() {
    let relay = relay().await;
    let mut ext = Extension::connect(&relay, "alice", "Chrome", "a").await;
    let mut mcp = Mcp::connect(&relay, "alice").await;
    mcp.connect_to(&ext.extension_id).await;
    mcp.client
        .send(json!({"jsonrpc": "2.0", "id": 1, "method": "slow"}))
        .await;
    let request = ext.next_request().await;
    mcp.client.close().await;
    let cancel = ext
        .client
        .recv_notification("notifications/cancelled")
        .await;
    assert_eq!(cancel["params"]["requestId"], request["id"]);
    assert!(cancel["params"]["reason"].is_string());
    // The answer arriving now is dropped without harm.
    ext.reply(&request, json!({})).await;
    wait_until("no request is pending", || async {
        relay
            .metrics()
            .render()
            .contains("mcp_relay_pending_requests 0")
    })
    .await;
}

#[tokio::test]
async fn unknown_response_ids_are_dropped_and_counted() {
    let relay = relay().await;
    let mut ext = Extension::connect(&relay, "alice", "Chrome", "a").await;
    ext.client
        .send(json!({"jsonrpc": "2.0", "id": "conn-ffffffff-ffff-ffff-ffff-ffffffffffff:1", "result": {}}))
        .await;
    ext.client
        .send(json!({"jsonrpc": "2.0", "id": 12, "result": {}}))
        .await;
    wait_until("both unknown responses are counted", || async {
        relay
            .metrics()
            .render()
            .contains("mcp_relay_unknown_responses_total 2")
    })
    .await;
    // Still alive: a notification from it is handled.
    let mut mcp = Mcp::connect(&relay, "alice").await;
    mcp.connect_to(&ext.extension_id).await;
}

#[tokio::test]
async fn shutdown_answers_pending_requests_notifies_and_closes_with_1001() {
    let relay = relay().await;
    let mut ext = Extension::connect(&relay, "alice", "Chrome", "a").await;
    let mut mcp = Mcp::connect(&relay, "alice").await;
    mcp.connect_to(&ext.extension_id).await;
    mcp.client
        .send(json!({"jsonrpc": "2.0", "id": 9, "method": "slow"}))
        .await;
    let _request = ext.next_request().await;
    let shutdown = tokio::spawn(relay.shutdown());
    let response = mcp.client.recv_response().await;
    assert_eq!(response["id"], 9);
    assert_eq!(response["error"]["code"], -32005);
    mcp.client.recv_notification("shutdown").await;
    assert_eq!(mcp.client.expect_close().await.0, 1001);
    ext.client.recv_notification("shutdown").await;
    assert_eq!(ext.client.expect_close().await.0, 1001);
    tokio::time::timeout(Duration::from_secs(10), shutdown)
        .await
        .expect("shutdown finishes in bounded time")
        .unwrap();
}

#[tokio::test]
async fn requests_from_extensions_are_refused_with_method_not_found() {
    let relay = relay().await;
    let mut ext = Extension::connect(&relay, "alice", "Chrome", "a").await;
    let response = ext.client.call(json!("ext:1"), "getTabs", json!({})).await;
    assert_eq!(response["id"], "ext:1");
    assert_eq!(response["error"]["code"], -32601);
}

/// The status timestamp looks like the spec's example.
#[tokio::test]
async fn status_after_connect_reaches_the_mcp_client() {
    let relay = relay().await;
    let ext = Extension::connect(&relay, "alice", "Chrome", "a").await;
    let mut mcp = Mcp::connect(&relay, "alice").await;
    let response = mcp
        .call("connect", json!({"extension_id": ext.extension_id}))
        .await;
    assert!(response["result"].is_object());
    let status: Value = mcp.client.recv_notification("status").await;
    assert_eq!(status["params"]["peer_count"], 1);
    let ts = status["params"]["timestamp"].as_str().unwrap();
    assert!(ts.len() >= 28 && ts.contains('T'), "{ts}");
}

/// The browser's owner sees who connected: `connection_opened` arrives before the new
/// `status`, with the labels the client gave in `mcp_handshake` (issue 15).
#[tokio::test]
async fn extension_is_told_who_connected_before_the_new_status() {
    let relay = relay().await;
    let mut ext = Extension::connect(&relay, "alice", "Chrome", "laptop").await;
    let mut client = Client::connect(&relay.url("/mcp")).await;
    let handshake = client
        .call(
            json!(1),
            "mcp_handshake",
            json!({"access_token": token("alice", Some(Role::Mcp)),
                   "client_id": "bridge-7", "client_name": "Claude Desktop"}),
        )
        .await;
    let mcp_client_id = handshake["result"]["mcp_client_id"].clone();
    let connected = client
        .call(
            json!(2),
            "connect",
            json!({"extension_id": ext.extension_id}),
        )
        .await;
    let opened = ext.client.recv().await;
    assert_eq!(opened["method"], "connection_opened", "{opened}");
    assert_eq!(
        opened["params"],
        json!({
            "connection_id": connected["result"]["connection_id"],
            "mcp_client_id": mcp_client_id,
            "client_id": "bridge-7",
            "client_name": "Claude Desktop",
        })
    );
    let status = ext.client.recv().await;
    assert_eq!(status["method"], "status");
    assert_eq!(status["params"]["peer_count"], 1);
}

/// A label given in a later handshake (a bridge learns its host's name after the host
/// initializes) is what the next connection is announced with; labels that are not strings
/// are ignored rather than refusing the handshake.
#[tokio::test]
async fn a_repeated_handshake_names_the_client_for_later_connections() {
    let relay = relay().await;
    let mut ext = Extension::connect(&relay, "alice", "Chrome", "laptop").await;
    let mut client = Client::connect(&relay.url("/mcp")).await;
    let token = token("alice", Some(Role::Mcp));
    let first = client
        .call(
            json!(1),
            "mcp_handshake",
            json!({"access_token": token, "client_id": 42}),
        )
        .await;
    assert_eq!(first["result"]["authenticated"], true, "{first}");
    let again = client
        .call(
            json!(2),
            "mcp_handshake",
            json!({"access_token": token, "client_name": "Cursor"}),
        )
        .await;
    assert_eq!(again["result"]["authenticated"], true, "{again}");
    client
        .call(
            json!(3),
            "connect",
            json!({"extension_id": ext.extension_id}),
        )
        .await;
    let opened = ext.client.recv_notification("connection_opened").await;
    assert_eq!(opened["params"]["client_name"], "Cursor");
    assert!(opened["params"].get("client_id").is_none(), "{opened}");
}

/// "Stop" in the extension: `close_connection` ends the MCP side with a reason that says the
/// owner stopped it, answers what was pending, tells the extension `connection_closed`, and
/// is not followed by `connected` (the browser did not leave).
#[tokio::test]
async fn the_owner_stops_a_connection_from_the_extension() {
    let relay = relay().await;
    let mut ext = Extension::connect(&relay, "alice", "Chrome", "laptop").await;
    let mut mcp = Mcp::connect(&relay, "alice").await;
    let conn = mcp.connect_to(&ext.extension_id).await;
    mcp.client
        .send(json!({"jsonrpc": "2.0", "id": "pending-1", "method": "tabs/list"}))
        .await;
    ext.next_request().await;
    ext.client
        .send(
            json!({"jsonrpc": "2.0", "id": "stop-1", "method": "close_connection",
                     "params": {"connection_id": conn["connection_id"], "reason": "Stop clicked"}}),
        )
        .await;
    // The extension hears the connection end (`notifications/cancelled`, `connection_closed`,
    // `status`) before the answer to its request.
    let mut heard = Vec::new();
    let answer = loop {
        let frame = ext.client.recv().await;
        if frame.get("method").is_none() {
            break frame;
        }
        heard.push(frame["method"].as_str().unwrap().to_owned());
    };
    assert_eq!(
        answer,
        json!({"jsonrpc": "2.0", "id": "stop-1", "result": {"closed": true}})
    );
    assert_eq!(
        heard,
        ["notifications/cancelled", "connection_closed", "status"]
    );
    let pending = mcp.client.recv_response().await;
    assert_eq!(pending["id"], "pending-1");
    assert_eq!(pending["error"]["code"], -32004, "{pending}");
    let notice = mcp.client.recv_notification("disconnected").await;
    assert_eq!(notice["params"]["connection_id"], conn["connection_id"]);
    assert_eq!(
        notice["params"]["reason"],
        "Stopped by the browser's owner: Stop clicked"
    );
    assert_eq!(notice["params"]["name"], "Chrome");
    let still_there = mcp.call("tabs/list", json!({})).await;
    assert_eq!(
        still_there["error"]["message"],
        "Not connected to an extension"
    );
    // Stopped, not dropped: no `connected` follows, and connecting again is the client's call.
    mcp.client.expect_silence(Duration::from_millis(300)).await;
}

/// Only the browser a connection belongs to may stop it: another browser of the same user
/// cannot, nor can anyone name a connection that does not exist.
#[tokio::test]
async fn only_the_connections_own_browser_may_stop_it() {
    let relay = relay().await;
    let ext = Extension::connect(&relay, "alice", "Chrome", "laptop").await;
    let mut other = Extension::connect(&relay, "alice", "Firefox", "desktop").await;
    let mut mcp = Mcp::connect(&relay, "alice").await;
    let conn = mcp.connect_to(&ext.extension_id).await;
    for (id, params) in [
        ("a", json!({"connection_id": conn["connection_id"]})),
        (
            "b",
            json!({"connection_id": "conn-00000000-0000-4000-8000-000000000000"}),
        ),
    ] {
        other
            .client
            .send(
                json!({"jsonrpc": "2.0", "id": id, "method": "close_connection", "params": params}),
            )
            .await;
        let refused = other.client.recv_response().await;
        assert_eq!(refused["error"]["code"], -32000, "{refused}");
        assert!(
            refused["error"]["message"]
                .as_str()
                .unwrap()
                .contains("belongs to this browser"),
            "{refused}"
        );
    }
    other
        .client
        .send(json!({"jsonrpc": "2.0", "id": "c", "method": "close_connection", "params": {}}))
        .await;
    assert_eq!(other.client.recv_response().await["error"]["code"], -32602);
    let _echo = ext.spawn_echo();
    let alive = mcp.call("tabs/list", json!({})).await;
    assert_eq!(alive["result"]["echo"], "tabs/list", "{alive}");
}

/// The person's answers to an assistant's hand-off or ask-before prompt are receipts in the
/// audit trail (issue 29): the extension sends `record_decision`, and the admin API shows one
/// record of that kind with who (user, MCP client, connection, browser), when, and what and
/// where in the relay's own words, and whether a hand-off was answered in the MCP host instead
/// of the browser's popup. Only the connection's own browser may record for it, and only known
/// kinds and outcomes are taken; an ask-before cannot claim the host answered it.
#[tokio::test]
async fn the_owners_hand_off_and_ask_before_answers_are_receipts_in_the_audit_trail() {
    let relay = relay().await;
    let mut ext = Extension::connect(&relay, "alice", "Chrome", "laptop").await;
    let mut other = Extension::connect(&relay, "alice", "Firefox", "desktop").await;
    let mut mcp = Mcp::connect(&relay, "alice").await;
    let conn = mcp.connect_to(&ext.extension_id).await;
    let connection_id = conn["connection_id"].as_str().unwrap().to_owned();
    let record = |id: &str, params: Value| json!({"jsonrpc": "2.0", "id": id, "method": "record_decision", "params": params});
    ext.client
        .send(record(
            "r1",
            json!({"connection_id": connection_id, "kind": "hand-off", "outcome": "done",
                   "site": "bank.test", "tab_id": 7, "waited_ms": 42_000,
                   "summary": "Sign in to Example Bank"}),
        ))
        .await;
    let answer = loop {
        let frame = ext.client.recv().await;
        if frame.get("method").is_none() {
            break frame;
        }
    };
    assert_eq!(answer["result"]["recorded"], true, "{answer}");
    ext.client
        .send(record(
            "r2",
            json!({"connection_id": connection_id, "kind": "ask-before", "outcome": "denied",
                   "site": "shop.test", "tab_id": 7, "waited_ms": 1_500,
                   "summary": "click (it submits a form)"}),
        ))
        .await;
    assert_eq!(ext.client.recv_response().await["result"]["recorded"], true);
    ext.client
        .send(record(
            "r3",
            json!({"connection_id": connection_id, "kind": "hand-off", "outcome": "cancelled",
                   "site": "bank.test", "tab_id": 7, "waited_ms": 2_000,
                   "summary": "Approve the transfer", "via": "host"}),
        ))
        .await;
    assert_eq!(ext.client.recv_response().await["result"]["recorded"], true);
    // Not another browser's connection, not an unknown kind or outcome.
    other
        .client
        .send(record(
            "x",
            json!({"connection_id": connection_id, "kind": "hand-off", "outcome": "done"}),
        ))
        .await;
    let refused = other.client.recv_response().await;
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("belongs to this browser"),
        "{refused}"
    );
    for (id, kind, outcome, via) in [
        ("y", "hand-off", "allowed", None),
        ("z", "anything", "done", None),
        ("v", "ask-before", "allowed", Some("host")),
        ("w", "hand-off", "done", Some("popup")),
    ] {
        ext.client
            .send(record(
                id,
                json!({"connection_id": connection_id, "kind": kind, "outcome": outcome, "via": via}),
            ))
            .await;
        assert_eq!(ext.client.recv_response().await["error"]["code"], -32602);
    }

    let admin = token("root", Some(Role::Admin));
    let deadline = tokio::time::Instant::now() + WAIT;
    let events = loop {
        let (status, body) = api(
            relay.local_addr,
            "GET",
            "/api/v1/audit?user_id=alice",
            Some(&admin),
            None,
        )
        .await;
        assert_eq!(status, 200, "{body}");
        let events: Vec<Value> = body["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["kind"] == "hand-off" || e["kind"] == "ask-before")
            .cloned()
            .collect();
        if events.len() >= 3 || tokio::time::Instant::now() > deadline {
            break events;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(events.len(), 3, "{events:?}");
    let hand_off = events
        .iter()
        .find(|e| e["kind"] == "hand-off" && e["detail"].as_str().unwrap().starts_with("done"))
        .unwrap();
    assert_eq!(
        hand_off["detail"],
        "done after 42.0 s on bank.test (tab 7): Sign in to Example Bank"
    );
    assert!(
        events.iter().any(|e| e["detail"]
            == "cancelled in the MCP host after 2.0 s on bank.test (tab 7): Approve the transfer"),
        "{events:?}"
    );
    assert_eq!(hand_off["connection_id"], connection_id.as_str());
    assert_eq!(hand_off["extension_id"], ext.extension_id.as_str());
    assert!(hand_off["mcp_client_id"]
        .as_str()
        .unwrap()
        .starts_with("mcp-"));
    assert!(hand_off["at"].as_str().is_some());
    let ask = events.iter().find(|e| e["kind"] == "ask-before").unwrap();
    assert_eq!(
        ask["detail"],
        "denied after 1.5 s on shop.test (tab 7): click (it submits a form)"
    );
}
