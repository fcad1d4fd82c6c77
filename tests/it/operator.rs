//! The operator's side of a hosted relay (docs/ADMIN.md): the state store, revocation that
//! closes live sockets, browser approval, the audit trail and the admin API, against real
//! sockets, a real SQLite file and the relay binary.

use crate::common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::child::ChildRelay;
use common::*;
use mcp_relay::auth::{mint_hs256, MintClaims, Role};
use serde_json::{json, Value};

/// A token of `user` with `role` and a known `jti`.
fn token_with(user: &str, role: Option<Role>, jti: &str) -> String {
    let mut claims = MintClaims::new(user, role, Duration::from_secs(3600));
    claims.jti = jti.to_owned();
    mint_hs256(SECRET.as_bytes(), &claims)
}

fn admin_token() -> String {
    token_with("root", Some(Role::Admin), "admin-jti")
}

/// An extension socket that authenticates with `token` (the relay's `authenticate` answered
/// as real extensions do); returns the client and its extension id, or the close frame.
async fn extension_with(
    url: &str,
    token: &str,
    client_id: &str,
) -> Result<(Client, String), (u16, String)> {
    let mut client = Client::connect(url).await;
    let auth = client.recv().await;
    client
        .send(json!({"jsonrpc": "2.0", "id": auth["id"], "result": {
            "name": format!("Browser {client_id}"), "access_token": token, "client_id": client_id}}))
        .await;
    loop {
        use futures_util::StreamExt;
        use tokio_tungstenite::tungstenite::Message;
        match tokio::time::timeout(WAIT, client.ws.next())
            .await
            .expect("an answer")
        {
            Some(Ok(Message::Text(text))) => {
                let frame: Value = serde_json::from_str(&text).unwrap();
                if frame["method"] == "authenticated" {
                    let id = frame["params"]["extension_id"].as_str().unwrap().to_owned();
                    return Ok((client, id));
                }
            }
            Some(Ok(Message::Close(Some(frame)))) => {
                return Err((u16::from(frame.code), frame.reason.to_string()))
            }
            Some(Ok(_)) => continue,
            other => panic!("socket ended without a close frame: {other:?}"),
        }
    }
}

/// An MCP socket after `mcp_handshake` with `token`; the handshake's answer.
async fn mcp_with(url: &str, token: &str) -> (Client, Value) {
    let mut client = Client::connect(url).await;
    let answer = client
        .call(json!(1), "mcp_handshake", json!({"access_token": token}))
        .await;
    (client, answer)
}

/// Waits for the relay to close `client`; returns the close frame and how long it took.
async fn closed_within(client: &mut Client) -> ((u16, String), Duration) {
    let started = Instant::now();
    let close = client.expect_close().await;
    (close, started.elapsed())
}

#[tokio::test]
async fn a_revoked_tokens_live_sockets_close_within_a_second_with_1008_revoked() {
    let relay = relay().await;
    let addr = relay.local_addr;
    let ext_token = token_with("alice", Some(Role::Extension), "ext-jti-1");
    let mcp_token = token_with("alice", Some(Role::Mcp), "mcp-jti-1");
    let (mut extension, _) = extension_with(&relay.url("/extension"), &ext_token, "laptop")
        .await
        .unwrap();
    let (mut mcp, answer) = mcp_with(&relay.url("/mcp"), &mcp_token).await;
    assert_eq!(answer["result"]["authenticated"], true, "{answer}");

    // Alice revokes her extension token by jti, with her own MCP token.
    let (status, body) = api(
        addr,
        "POST",
        "/api/v1/tokens/revoke",
        Some(&mcp_token),
        Some(json!({"jti": "ext-jti-1"})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["closed_sockets"], 1, "{body}");
    let (close, took) = closed_within(&mut extension).await;
    assert_eq!(close, (1008, "revoked".to_owned()));
    assert!(took < Duration::from_secs(1), "{took:?}");
    // Refused from then on.
    let refused = extension_with(&relay.url("/extension"), &ext_token, "laptop")
        .await
        .err()
        .expect("a revoked token does not authenticate");
    assert_eq!(refused.0, 1008);
    assert!(refused.1.contains("revoked"), "{refused:?}");

    // An admin revokes every token alice got until now: her MCP socket goes too.
    let (status, body) = api(
        addr,
        "POST",
        "/api/v1/tokens/revoke",
        Some(&admin_token()),
        Some(json!({"user_id": "alice", "issued_before": "now"})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (close, took) = closed_within(&mut mcp).await;
    assert_eq!(close, (1008, "revoked".to_owned()));
    assert!(took < Duration::from_secs(1), "{took:?}");
    let (_, answer) = mcp_with(&relay.url("/mcp"), &mcp_token).await;
    assert_eq!(answer["error"]["code"], -32000, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("revoked"),
        "{answer}"
    );
    // A token issued after the cutoff works: iat is in whole seconds, so one issued a second
    // ahead of now (well within the allowed skew) instead of a second's sleep.
    let mut later = MintClaims::new("alice", Some(Role::Mcp), Duration::from_secs(3600));
    later.iat += 1;
    let (_, answer) = mcp_with(&relay.url("/mcp"), &mint_hs256(SECRET.as_bytes(), &later)).await;
    assert_eq!(answer["result"]["authenticated"], true, "{answer}");
}

/// Polls `GET /api/v1/audit` until `done` holds for the events (the writer batches).
async fn audit_until(
    addr: SocketAddr,
    query: &str,
    token: &str,
    done: impl Fn(&[Value]) -> bool,
) -> Vec<Value> {
    let deadline = Instant::now() + WAIT;
    loop {
        let (status, body) = api(
            addr,
            "GET",
            &format!("/api/v1/audit?{query}"),
            Some(token),
            None,
        )
        .await;
        assert_eq!(status, 200, "{body}");
        let events = body["events"].as_array().cloned().unwrap_or_default();
        if done(&events) || Instant::now() > deadline {
            return events;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn approval_and_revocation_survive_a_restart_with_a_real_sqlite_file() {
    let dir = tempfile::tempdir().unwrap();
    let state = format!("sqlite:{}", dir.path().join("state.db").display());
    let args = ["--state", state.as_str(), "--require-approval"];
    let mcp_token = token_with("alice", Some(Role::Mcp), "alice-mcp");
    let ext_token = token_with("alice", Some(Role::Extension), "alice-ext");
    let extension_id;
    {
        let relay = ChildRelay::start(&args);
        let (_extension, id) = extension_with(&relay.url("/extension"), &ext_token, "laptop")
            .await
            .unwrap();
        extension_id = id;
        let (mut mcp, _) = mcp_with(&relay.url("/mcp"), &mcp_token).await;
        let list = mcp.call(json!(2), "list_extensions", json!({})).await;
        assert_eq!(list["result"]["extensions"][0]["approved"], false, "{list}");
        let refused = mcp
            .call(json!(3), "connect", json!({"extension_id": extension_id}))
            .await;
        assert_eq!(refused["error"]["code"], -32011, "{refused}");
        let message = refused["error"]["message"].as_str().unwrap();
        assert!(message.contains("mcp-relay admin approve"), "{message}");
        assert!(message.contains("/api/v1/browsers/"), "{message}");

        let (status, body) = api(
            relay.addr,
            "POST",
            &format!("/api/v1/browsers/{extension_id}/approve"),
            Some(&mcp_token),
            None,
        )
        .await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["browser"]["approved"], true, "{body}");
        let connected = mcp
            .call(json!(4), "connect", json!({"extension_id": extension_id}))
            .await;
        assert!(
            connected["result"]["connection_id"].is_string(),
            "{connected}"
        );

        let (status, _) = api(
            relay.addr,
            "POST",
            "/api/v1/tokens/revoke",
            Some(&admin_token()),
            Some(json!({"jti": "stolen-jti"})),
        )
        .await;
        assert_eq!(status, 200);
    } // SIGKILL: nothing is flushed at exit; what the API confirmed is already on disk.

    let relay = ChildRelay::start(&args);
    let (_extension, id) = extension_with(&relay.url("/extension"), &ext_token, "laptop")
        .await
        .unwrap();
    assert_eq!(id, extension_id);
    let (mut mcp, _) = mcp_with(&relay.url("/mcp"), &mcp_token).await;
    let list = mcp.call(json!(2), "list_extensions", json!({})).await;
    assert_eq!(list["result"]["extensions"][0]["approved"], true, "{list}");
    let connected = mcp
        .call(json!(3), "connect", json!({"extension_id": extension_id}))
        .await;
    assert!(
        connected["result"]["connection_id"].is_string(),
        "{connected}"
    );
    let (_, answer) = mcp_with(
        &relay.url("/mcp"),
        &token_with("alice", Some(Role::Mcp), "stolen-jti"),
    )
    .await;
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("revoked"),
        "a token revoked before the restart stays revoked: {answer}"
    );
    // A browser first seen now is pending, the approved one is not.
    let (_second, _) = extension_with(&relay.url("/extension"), &ext_token, "desktop")
        .await
        .unwrap();
    let (status, body) = api(
        relay.addr,
        "GET",
        "/api/v1/browsers",
        Some(&mcp_token),
        None,
    )
    .await;
    assert_eq!(status, 200);
    let browsers = body["browsers"].as_array().unwrap();
    assert_eq!(browsers.len(), 2, "{body}");
    for browser in browsers {
        assert_eq!(
            browser["approved"],
            browser["id"] == extension_id.as_str(),
            "{browser}"
        );
        assert_eq!(browser["connected"], true);
        assert_eq!(browser["user_id"], "alice");
        assert!(browser["last_seen"].as_str().unwrap().ends_with('Z'));
    }
}

#[tokio::test]
async fn a_revoked_browser_is_closed_and_refused_until_approved_again() {
    let relay = relay().await;
    let mcp_token = token_with("alice", Some(Role::Mcp), "m");
    let ext_token = token_with("alice", Some(Role::Extension), "e");
    let (mut extension, id) = extension_with(&relay.url("/extension"), &ext_token, "laptop")
        .await
        .unwrap();
    let path = format!("/api/v1/browsers/{id}/revoke");
    let (status, body) = api(relay.local_addr, "POST", &path, Some(&mcp_token), None).await;
    assert_eq!(
        (status, body["closed_sockets"].clone()),
        (200, json!(1)),
        "{body}"
    );
    let (close, took) = closed_within(&mut extension).await;
    assert_eq!(close, (1008, "revoked".to_owned()));
    assert!(took < Duration::from_secs(1), "{took:?}");
    let refused = extension_with(&relay.url("/extension"), &ext_token, "laptop")
        .await
        .err()
        .unwrap();
    assert!(refused.1.contains("was revoked"), "{refused:?}");
    let path = format!("/api/v1/browsers/{id}/approve");
    assert_eq!(
        api(relay.local_addr, "POST", &path, Some(&mcp_token), None)
            .await
            .0,
        200
    );
    assert!(
        extension_with(&relay.url("/extension"), &ext_token, "laptop")
            .await
            .is_ok()
    );
}

#[tokio::test]
async fn a_users_token_cannot_see_or_act_on_another_users_things() {
    let relay = relay().await;
    let addr = relay.local_addr;
    let alice = token_with("alice", Some(Role::Mcp), "a");
    let (_alice_ext, alice_browser) = extension_with(
        &relay.url("/extension"),
        &token_with("alice", Some(Role::Extension), "ae"),
        "a",
    )
    .await
    .unwrap();
    let bob_ext = Extension::connect(&relay, "bob", "Bob's", "b").await;
    let bob_browser = bob_ext.extension_id.clone();
    let mut bob_mcp = Mcp::connect(&relay, "bob").await;
    let bob_connection = bob_mcp.connect_to(&bob_browser).await["connection_id"]
        .as_str()
        .unwrap()
        .to_owned();

    let (status, body) = api(addr, "GET", "/api/v1/browsers", Some(&alice), None).await;
    assert_eq!(status, 200);
    let ids: Vec<&str> = body["browsers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec![alice_browser.as_str()]);
    let (_, body) = api(addr, "GET", "/api/v1/connections", Some(&alice), None).await;
    assert_eq!(body["connections"], json!([]), "{body}");

    for (method, path, body) in [
        (
            "POST",
            format!("/api/v1/browsers/{bob_browser}/approve"),
            None,
        ),
        (
            "POST",
            format!("/api/v1/browsers/{bob_browser}/revoke"),
            None,
        ),
        (
            "DELETE",
            format!("/api/v1/connections/{bob_connection}"),
            None,
        ),
        ("GET", "/api/v1/audit?user_id=bob".to_owned(), None),
        (
            "POST",
            "/api/v1/tokens/revoke".to_owned(),
            Some(json!({"user_id": "bob", "issued_before": "now"})),
        ),
    ] {
        let (status, answer) = api(addr, method, &path, Some(&alice), body).await;
        assert_eq!(status, 403, "{method} {path}: {answer}");
        assert!(answer["error"].is_string(), "{answer}");
    }
    // Bob's connection survived all of that.
    let _echo = bob_ext.spawn_echo();
    let answer = bob_mcp.call("tabs/list", json!({})).await;
    assert_eq!(answer["result"]["echo"], "tabs/list", "{answer}");

    // The admin sees both users.
    let (_, body) = api(addr, "GET", "/api/v1/browsers", Some(&admin_token()), None).await;
    assert_eq!(body["browsers"].as_array().unwrap().len(), 2, "{body}");
    let (_, body) = api(
        addr,
        "GET",
        "/api/v1/connections",
        Some(&admin_token()),
        None,
    )
    .await;
    assert_eq!(
        body["connections"][0]["id"],
        bob_connection.as_str(),
        "{body}"
    );

    // Who may not ask at all, and what is not there.
    assert_eq!(
        api(addr, "GET", "/api/v1/browsers", None, None).await.0,
        401
    );
    assert_eq!(
        api(addr, "GET", "/api/v1/browsers", Some("not-a-token"), None)
            .await
            .0,
        401
    );
    let extension_token = token_with("alice", Some(Role::Extension), "x");
    let (status, body) = api(
        addr,
        "GET",
        "/api/v1/browsers",
        Some(&extension_token),
        None,
    )
    .await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(
        api(
            addr,
            "POST",
            "/api/v1/browsers/ext-nope/approve",
            Some(&alice),
            None
        )
        .await
        .0,
        404
    );
    let (status, body) = api(
        addr,
        "POST",
        "/api/v1/tokens/revoke",
        Some(&alice),
        Some(json!({"nope": 1})),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    let (status, _) = api(
        addr,
        "GET",
        "/api/v1/audit?since=yesterday-ish",
        Some(&alice),
        None,
    )
    .await;
    assert_eq!(status, 400);
}

#[tokio::test]
async fn kicking_a_connection_tells_its_client_and_is_audited() {
    let relay = relay().await;
    let extension = Extension::connect(&relay, "alice", "Chrome", "a").await;
    let mut mcp = Mcp::connect(&relay, "alice").await;
    let connection = mcp.connect_to(&extension.extension_id).await["connection_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let path = format!("/api/v1/connections/{connection}");
    let (status, body) = api(
        relay.local_addr,
        "DELETE",
        &path,
        Some(&admin_token()),
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let notice = mcp.client.recv_notification("disconnected").await;
    assert_eq!(notice["params"]["reason"], "Closed by the relay's operator");
    assert_eq!(
        api(
            relay.local_addr,
            "DELETE",
            &path,
            Some(&admin_token()),
            None
        )
        .await
        .0,
        404
    );
    let events = audit_until(
        relay.local_addr,
        "user_id=alice",
        &admin_token(),
        |events| events.iter().any(|e| e["kind"] == "kick"),
    )
    .await;
    let kinds: Vec<&str> = events.iter().map(|e| e["kind"].as_str().unwrap()).collect();
    for kind in ["kick", "connect", "handshake", "authenticate"] {
        assert!(kinds.contains(&kind), "{kind} missing from {kinds:?}");
    }
}

#[tokio::test]
async fn the_audit_trail_holds_every_forwarded_request_of_a_burst_and_none_of_its_payloads() {
    let relay = relay().await;
    let extension = Extension::connect(&relay, "alice", "Chrome", "a").await;
    let extension_id = extension.extension_id.clone();
    let echo = extension.spawn_echo();
    let mut mcp = Mcp::connect(&relay, "alice").await;
    mcp.connect_to(&extension_id).await;
    const BURST: usize = 300;
    for i in 0..BURST {
        mcp.client
            .send(
                json!({"jsonrpc": "2.0", "id": 1000 + i, "method": "burst/method",
                "params": {"text": format!("PARAM-SECRET-{i}")}}),
            )
            .await;
    }
    for _ in 0..BURST {
        let answer = mcp.client.recv_response().await;
        assert!(answer["result"]["params"]["text"]
            .as_str()
            .unwrap()
            .starts_with("PARAM-SECRET-"));
    }
    let query = format!("method=burst/method&browser={extension_id}&limit=1000");
    let events = audit_until(relay.local_addr, &query, &admin_token(), |e| {
        e.len() >= BURST
    })
    .await;
    assert_eq!(events.len(), BURST);
    for event in &events {
        assert_eq!(event["kind"], "request");
        assert_eq!(event["code"], 0);
        assert_eq!(event["user_id"], "alice");
        assert!(event["duration_ms"].as_f64().unwrap() >= 0.0);
        assert!(event["mcp_client_id"].as_str().unwrap().starts_with("mcp-"));
    }
    let text = serde_json::to_string(&events).unwrap();
    assert!(
        !text.contains("SECRET"),
        "params or results leaked into the audit trail"
    );
    // The time filters and the limit.
    let (_, body) = api(
        relay.local_addr,
        "GET",
        "/api/v1/audit?method=burst/method&limit=5",
        Some(&admin_token()),
        None,
    )
    .await;
    assert_eq!(body["events"].as_array().unwrap().len(), 5);
    let (_, body) = api(
        relay.local_addr,
        "GET",
        "/api/v1/audit?method=burst/method&until=1h",
        Some(&admin_token()),
        None,
    )
    .await;
    assert_eq!(body["events"], json!([]));
    echo.abort();
}

#[test]
fn a_corrupt_state_file_fails_start_up_with_a_clear_message() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    std::fs::write(
        &path,
        "this is not a database, it is a shopping list\n".repeat(200),
    )
    .unwrap();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-relay"))
        .args(["serve", "--listen", "127.0.0.1:0"])
        .arg("--state")
        .arg(format!("sqlite:{}", path.display()))
        .env("MCP_RELAY_JWT_SECRET", SECRET)
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("not a mcp-relay state database"),
        "{stderr}"
    );
    assert!(stderr.contains(&path.display().to_string()), "{stderr}");
    // Not a silent fallback: nothing was listening, and the file is untouched.
    assert!(std::fs::read_to_string(&path)
        .unwrap()
        .starts_with("this is not a database"));
}

/// `mcp-relay admin ARGS` against `relay` with `token`; (success, stdout, stderr).
fn admin_cli(relay: &str, token: &str, args: &[&str]) -> (bool, String, String) {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-relay"))
        .arg("admin")
        .args(args)
        .env("MCP_RELAY_ADMIN_URL", relay)
        .env("MCP_RELAY_ADMIN_TOKEN", token)
        .output()
        .unwrap();
    (
        output.status.success(),
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

#[tokio::test]
async fn the_admin_cli_prints_a_table_or_json_and_acts() {
    let relay = relay_with(|c| c.require_approval = true).await;
    let extension = Extension::connect(&relay, "alice", "Work laptop", "a").await;
    let id = extension.extension_id.clone();
    // The relay's ws:// URL works as well as http://.
    let url = relay.url("/mcp");
    let admin = admin_token();
    let (ok, table, _) = tokio::task::spawn_blocking({
        let (url, admin) = (url.clone(), admin.clone());
        move || admin_cli(&url, &admin, &["browsers"])
    })
    .await
    .unwrap();
    assert!(ok);
    let mut lines = table.lines();
    let header = lines.next().unwrap();
    for column in [
        "ID",
        "USER",
        "NAME",
        "APPROVED",
        "CONNECTED",
        "LAST SEEN",
        "VERSION",
    ] {
        assert!(header.contains(column), "{table}");
    }
    let row = lines.next().unwrap();
    assert!(
        row.starts_with(&id) && row.contains("Work laptop") && row.contains(" no "),
        "{table}"
    );

    let (ok, out, _) = tokio::task::spawn_blocking({
        let (url, admin, id) = (url.clone(), admin.clone(), id.clone());
        move || admin_cli(&url, &admin, &["approve", &id])
    })
    .await
    .unwrap();
    assert!(ok && out.contains("approved"), "{out}");

    let (ok, json_text, _) = tokio::task::spawn_blocking({
        let (url, admin) = (url.clone(), admin.clone());
        move || admin_cli(&url, &admin, &["browsers", "--json"])
    })
    .await
    .unwrap();
    assert!(ok);
    let parsed: Value = serde_json::from_str(&json_text).unwrap();
    assert_eq!(parsed["browsers"][0]["id"], id.as_str());
    assert_eq!(parsed["browsers"][0]["approved"], true);

    // Someone else's token: the API's 403 becomes a failing exit and a readable message.
    let bob = token_with("bob", Some(Role::Mcp), "b");
    let (ok, _, stderr) = tokio::task::spawn_blocking({
        let (url, id) = (url.clone(), id.clone());
        move || admin_cli(&url, &bob, &["revoke-browser", &id])
    })
    .await
    .unwrap();
    assert!(!ok);
    assert!(
        stderr.contains("403") && stderr.contains("another user"),
        "{stderr}"
    );

    // The writer gathers events for up to 100 ms between writes (docs/ADMIN.md).
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let (url, admin) = (url.clone(), admin.clone());
        let (ok, audit, _) = tokio::task::spawn_blocking(move || {
            admin_cli(&url, &admin, &["audit", "--user", "alice"])
        })
        .await
        .unwrap();
        assert!(ok);
        assert!(audit.starts_with("AT"), "{audit}");
        if audit.contains("approve") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no approve event: {audit}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Starts `serve --dev` with `data_home` as its data directory; returns the child and its
/// printed MCP URL and token.
fn dev_relay(data_home: &std::path::Path, extra: &[&str]) -> (std::process::Child, String, String) {
    use std::io::{BufRead, BufReader};
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-relay"))
        .args(["serve", "--dev", "--listen", "127.0.0.1:0"])
        .args(extra)
        .env_remove("MCP_RELAY_JWT_SECRET")
        .env_remove("MCP_RELAY_STATE")
        .env("XDG_DATA_HOME", data_home)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut found = std::collections::HashMap::new();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    for line in lines.by_ref() {
        let line = line.unwrap();
        if let Some((key, value)) = line.split_once(':') {
            found.insert(key.trim().to_owned(), value.trim().to_owned());
        }
        if found.contains_key("MCP token") {
            break;
        }
    }
    // Read the rest of the banner: a closed pipe would fail the relay's next print.
    std::thread::spawn(move || lines.for_each(drop));
    (child, found["MCP URL"].clone(), found["MCP token"].clone())
}

fn stop(mut child: std::process::Child) {
    std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(child.wait().unwrap().success());
}

#[tokio::test]
async fn serve_dev_keeps_its_tokens_across_restarts_until_fresh() {
    let data_home = tempfile::tempdir().unwrap();
    let (first, _, old_token) = dev_relay(data_home.path(), &[]);
    stop(first);
    assert!(data_home.path().join("mcp-relay").join("state.db").exists());

    let (second, url, _) = dev_relay(data_home.path(), &[]);
    let (_, answer) = mcp_with(&url, &old_token).await;
    assert_eq!(
        answer["result"]["user_id"], "dev-user",
        "the first run's token still works: {answer}"
    );
    stop(second);

    let (third, url, new_token) = dev_relay(data_home.path(), &["--fresh"]);
    let (_, answer) = mcp_with(&url, &old_token).await;
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("signature"),
        "--fresh starts over: {answer}"
    );
    let (_, answer) = mcp_with(&url, &new_token).await;
    assert_eq!(answer["result"]["authenticated"], true, "{answer}");
    stop(third);
}

#[tokio::test]
async fn audit_events_older_than_the_retention_are_pruned_and_zero_turns_the_trail_off() {
    let relay = relay_with(|c| c.audit_retention = Duration::from_secs(1)).await;
    let extension = Extension::connect(&relay, "alice", "Chrome", "a").await;
    let _echo = {
        let id = extension.extension_id.clone();
        let echo = extension.spawn_echo();
        let mut mcp = Mcp::connect(&relay, "alice").await;
        mcp.connect_to(&id).await;
        assert!(mcp.call("tabs/list", json!({})).await["result"].is_object());
        (echo, mcp)
    };
    let recorded = audit_until(relay.local_addr, "method=tabs/list", &admin_token(), |e| {
        !e.is_empty()
    })
    .await;
    assert_eq!(recorded.len(), 1);
    // Pruned within a prune period (1 s at this retention) after it is a second old.
    let pruned = audit_until(relay.local_addr, "method=tabs/list", &admin_token(), |e| {
        e.is_empty()
    })
    .await;
    assert!(pruned.is_empty(), "{pruned:?}");

    let off = relay_with(|c| c.audit_retention = Duration::ZERO).await;
    let extension = Extension::connect(&off, "alice", "Chrome", "a").await;
    let id = extension.extension_id.clone();
    let _echo = extension.spawn_echo();
    let mut mcp = Mcp::connect(&off, "alice").await;
    mcp.connect_to(&id).await;
    assert!(mcp.call("tabs/list", json!({})).await["result"].is_object());
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (status, body) = api(
        off.local_addr,
        "GET",
        "/api/v1/audit",
        Some(&admin_token()),
        None,
    )
    .await;
    assert_eq!((status, body), (200, json!({"events": []})));
    let (_, metrics) = http_get(off.local_addr, "/metrics").await;
    assert!(!metrics.contains("mcp_relay_audit_dropped_total"));
}

#[tokio::test]
async fn the_admin_cli_reaches_a_wss_relay_with_its_private_ca() {
    let dir = tempfile::tempdir().unwrap();
    let certs = mcp_relay::net::certs::generate(&[]).unwrap();
    let (cert, key) = mcp_relay::net::certs::write(dir.path(), &certs).unwrap();
    let relay = relay_with(|c| {
        c.tls_cert = Some(cert);
        c.tls_key = Some(key);
    })
    .await;
    let url = relay.url("/mcp");
    assert!(url.starts_with("wss://"));
    let ca = dir.path().join("ca.pem").display().to_string();
    let (ok, out, stderr) = tokio::task::spawn_blocking({
        let url = url.clone();
        move || admin_cli(&url, &admin_token(), &["connections", "--ca-cert", &ca])
    })
    .await
    .unwrap();
    assert!(ok, "{stderr}");
    assert!(out.starts_with("ID"), "{out}");
    // Without the CA the certificate is not trusted, and it says so.
    let (ok, _, stderr) =
        tokio::task::spawn_blocking(move || admin_cli(&url, &admin_token(), &["connections"]))
            .await
            .unwrap();
    assert!(!ok);
    assert!(stderr.contains("TLS"), "{stderr}");
}

#[tokio::test]
async fn the_audit_trail_keeps_at_most_a_short_prefix_of_what_clients_name() {
    let relay = relay().await;
    let extension = Extension::connect(&relay, "alice", "Chrome", "a").await;
    let id = extension.extension_id.clone();
    let _echo = extension.spawn_echo();
    let mut mcp = Mcp::connect(&relay, "alice").await;
    let huge_id = "x".repeat(1 << 20);
    let refused = mcp.call("connect", json!({"extension_id": huge_id})).await;
    assert_eq!(refused["error"]["code"], -32000);
    mcp.connect_to(&id).await;
    let huge_method = format!("m{}", "é".repeat(1 << 19));
    assert!(mcp.call(&huge_method, json!({})).await["result"].is_object());
    let events = audit_until(
        relay.local_addr,
        "user_id=alice&limit=1000",
        &admin_token(),
        |e| e.iter().any(|e| e["kind"] == "request"),
    )
    .await;
    let request = events.iter().find(|e| e["kind"] == "request").unwrap();
    let method = request["method"].as_str().unwrap();
    assert!(
        method.len() <= 128 && method.starts_with("mé"),
        "{} bytes",
        method.len()
    );
    let connect = events
        .iter()
        .find(|e| e["kind"] == "connect" && e["code"] == -32000)
        .unwrap();
    assert!(connect["extension_id"].as_str().unwrap().len() <= 256);
}

/// The relay's HTTP MCP endpoint (docs/BRIDGE.md, "Over HTTP") honours revocation as the
/// WebSocket handshake does: once its token is revoked, a host's open session is answered 401
/// saying so, and so is a new `initialize`, instead of a session whose every call fails.
#[tokio::test]
async fn a_revoked_token_is_refused_by_the_http_mcp_endpoint_for_open_and_new_sessions() {
    use common::http::{initialize, Session};
    let relay = relay().await;
    let addr = relay.local_addr;
    let mcp_token = token_with("alice", Some(Role::Mcp), "http-jti-1");
    let session = Session::open_with(addr, &mcp_token, "Claude Code", "/mcp").await;
    let listed = session
        .post(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
        .await;
    assert_eq!(listed.status, 200, "{listed:?}");

    let (status, body) = api(
        addr,
        "POST",
        "/api/v1/tokens/revoke",
        Some(&mcp_token),
        Some(json!({"jti": "http-jti-1"})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let refused = session
        .post(&json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}))
        .await;
    assert_eq!(refused.status, 401, "{refused:?}");
    assert!(refused.body.contains("revoked"), "{refused:?}");
    let fresh = initialize(addr, &mcp_token, "Claude Code", "/mcp").await;
    assert_eq!(fresh.status, 401, "{fresh:?}");
    assert!(fresh.body.contains("revoked"), "{fresh:?}");
}
