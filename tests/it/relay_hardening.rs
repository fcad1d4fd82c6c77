//! Everything that keeps the relay safe to host: bad input, isolation between users, token
//! checks, keepalive, limits, TLS, the HTTP endpoints and the command line.

use crate::common;

use std::io::{BufRead, BufReader};
use std::sync::Arc;
use std::time::Duration;

use common::*;
use futures_util::{SinkExt, StreamExt};
use mcp_relay::auth::{self, JwtAlgorithm, MintClaims, Role};
use serde_json::json;
use tokio_tungstenite::tungstenite::Message;

#[tokio::test]
async fn healthz_and_metrics_are_served() {
    let relay = relay().await;
    let _ext = Extension::connect(&relay, "alice", "Chrome", "a").await;
    let (status, body) = http_get(relay.local_addr, "/healthz").await;
    assert_eq!((status, body.trim()), (200, "ok"));
    let (status, body) = http_get(relay.local_addr, "/metrics").await;
    assert_eq!(status, 200);
    for series in [
        "mcp_relay_sockets{role=\"extension\"} 1",
        "mcp_relay_sockets{role=\"mcp\"} 0",
        "mcp_relay_pending_requests 0",
        "mcp_relay_forwarded_requests_total",
        "mcp_relay_responses_total",
        "mcp_relay_errors_total{code=\"-32600\"}",
        "mcp_relay_timeouts_total",
        "mcp_relay_forward_latency_seconds_bucket{le=\"+Inf\"}",
    ] {
        assert!(body.contains(series), "missing {series} in\n{body}");
    }
}

#[tokio::test]
async fn bad_frames_get_json_rpc_errors_and_the_socket_stays_usable() {
    let relay = relay().await;
    let mut mcp = Mcp::connect(&relay, "alice").await;
    let cases = [
        ("{not json", -32700, json!(null)),
        ("42", -32600, json!(null)),
        ("[]", -32600, json!(null)),
        (
            r#"[{"jsonrpc":"2.0","id":1,"method":"list_extensions"}]"#,
            -32600,
            json!(null),
        ),
        (r#"{"jsonrpc":"2.0"}"#, -32600, json!(null)),
        (
            r#"{"jsonrpc":"2.0","id":{"a":1},"method":"x"}"#,
            -32600,
            json!(null),
        ),
        (r#"{"jsonrpc":"2.0","id":3,"method":17}"#, -32600, json!(3)),
        (
            r#"{"jsonrpc":"2.0","id":4,"method":"x","params":"str"}"#,
            -32600,
            json!(4),
        ),
        (r#"{"jsonrpc":"1.0","id":5,"method":"x"}"#, -32600, json!(5)),
        // An id alone is neither a request nor a response.
        (r#"{"jsonrpc":"2.0","id":6}"#, -32600, json!(6)),
        (
            r#"{"jsonrpc":"2.0","id":"proxy:1","method":"x"}"#,
            -32600,
            json!("proxy:1"),
        ),
        (
            r#"{"jsonrpc":"2.0","id":"ext:1","method":"x"}"#,
            -32600,
            json!("ext:1"),
        ),
        (
            r#"{"jsonrpc":"2.0","id":"conn-1:2","method":"x"}"#,
            -32600,
            json!("conn-1:2"),
        ),
    ];
    for (text, code, id) in cases {
        mcp.client.send_text(text).await;
        let response = mcp.client.recv().await;
        assert_eq!(response["error"]["code"], code, "{text} -> {response}");
        assert_eq!(response["id"], id, "{text} -> {response}");
        assert!(response["error"]["message"].as_str().unwrap().len() > 10);
    }
    mcp.client
        .ws
        .send(Message::Binary(vec![0xff, 0xfe, 0x00].into()))
        .await
        .unwrap();
    assert_eq!(mcp.client.recv().await["error"]["code"], -32700);
    // Well-formed responses answer nothing the relay asked, and JSON-RPC forbids replying to
    // them: the next frame the client sees is the answer to its next request.
    mcp.client
        .send_text(r#"{"jsonrpc":"2.0","id":7,"result":{}}"#)
        .await;
    mcp.client
        .send_text(r#"{"jsonrpc":"2.0","id":8,"error":{"code":1,"message":"no"}}"#)
        .await;
    let ok = mcp.call("list_extensions", json!({})).await;
    assert_eq!(ok["result"], json!({"extensions": []}), "{ok}");
}

#[tokio::test]
async fn batch_message_explains_batches_are_not_supported() {
    let relay = relay().await;
    let mut mcp = Mcp::connect(&relay, "alice").await;
    mcp.client
        .send_text(r#"[{"jsonrpc":"2.0","id":1,"method":"list_extensions"}]"#)
        .await;
    let response = mcp.client.recv().await;
    assert!(response["error"]["message"]
        .as_str()
        .unwrap()
        .contains("batch"));
}

#[tokio::test]
async fn oversized_frame_closes_that_socket_with_1009_only() {
    let relay = relay_with(|c| c.max_message_bytes = 1 << 20).await;
    let mut big = Mcp::connect(&relay, "alice").await;
    let mut bystander = Mcp::connect(&relay, "alice").await;
    let payload = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"x","params":{{"d":"{}"}}}}"#,
        "a".repeat(2 << 20)
    );
    let _ = big.client.ws.send(Message::Text(payload.into())).await;
    let (code, reason) = big.client.expect_close().await;
    assert_eq!(code, 1009);
    assert!(reason.contains("too large"), "{reason}");
    let ok = bystander.call("list_extensions", json!({})).await;
    assert!(ok["result"].is_object());
}

#[tokio::test]
async fn users_cannot_see_or_reach_each_others_extensions() {
    let relay = relay().await;
    let mut alice_ext = Extension::connect(&relay, "alice", "Alice", "a").await;
    let mut bob_ext = Extension::connect(&relay, "bob", "Bob", "b").await;
    let mut alice = Mcp::connect(&relay, "alice").await;
    let mut bob = Mcp::connect(&relay, "bob").await;

    let list = bob.call("list_extensions", json!({})).await;
    assert_eq!(list["result"]["extensions"].as_array().unwrap().len(), 1);
    assert_eq!(
        list["result"]["extensions"][0]["id"],
        bob_ext.extension_id.as_str()
    );
    let denied = bob
        .call("connect", json!({"extension_id": alice_ext.extension_id}))
        .await;
    assert_eq!(
        denied["error"]["message"],
        "Extension not found or not accessible"
    );

    let alice_conn = alice.connect_to(&alice_ext.extension_id).await;
    bob.connect_to(&bob_ext.extension_id).await;
    // Bob names Alice's connection: refused, nothing reaches Alice's browser.
    bob.client
        .send(json!({"jsonrpc": "2.0", "id": 1, "method": "getTabs",
            "connectionId": alice_conn["connection_id"]}))
        .await;
    let refused = bob.client.recv_response().await;
    assert_eq!(refused["error"]["code"], -32000);

    // Alice asks her browser something; Bob's browser tries to answer it: dropped.
    alice
        .client
        .send(json!({"jsonrpc": "2.0", "id": 2, "method": "secret"}))
        .await;
    let request = alice_ext.next_request().await;
    bob_ext
        .client
        .send(json!({"jsonrpc": "2.0", "id": request["id"], "result": {"stolen": true}}))
        .await;
    // Bob's browser addresses a notification to Alice's connection: dropped.
    bob_ext
        .client
        .send(
            json!({"jsonrpc": "2.0", "method": "forwardCDPEvent", "params": {},
            "connectionId": alice_conn["connection_id"]}),
        )
        .await;
    alice
        .client
        .expect_silence(Duration::from_millis(300))
        .await;
    alice_ext.reply(&request, json!({"mine": true})).await;
    let response = alice.client.recv_response().await;
    assert_eq!(response["result"], json!({"mine": true}));
}

async fn handshake_error(relay: &mcp_relay::server::RunningRelay, token: &str) -> String {
    let mut mcp = Client::connect(&relay.url("/mcp")).await;
    let response = mcp
        .call(json!(1), "mcp_handshake", json!({"accessToken": token}))
        .await;
    assert_eq!(response["error"]["code"], -32000, "{response}");
    response["error"]["message"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn expired_wrongly_signed_unsigned_and_mistyped_tokens_are_refused() {
    let relay = relay().await;
    let now = auth::now_secs();
    let expired = auth::mint_hs256(
        SECRET.as_bytes(),
        &MintClaims {
            exp: now - 3600,
            ..MintClaims::new("alice", None, Duration::ZERO)
        },
    );
    assert!(handshake_error(&relay, &expired).await.contains("expired"));
    let wrong = auth::mint_hs256(
        b"some-other-secret-entirely",
        &MintClaims::new("alice", None, Duration::from_secs(60)),
    );
    assert!(handshake_error(&relay, &wrong).await.contains("signature"));
    let none = raw_token(
        json!({"alg": "none", "typ": "JWT"}),
        json!({"sub": "alice", "exp": now + 60}),
        "",
    );
    assert!(handshake_error(&relay, &none)
        .await
        .starts_with("Authentication failed"));
    let hs512 = jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS512),
        &json!({"sub": "alice", "exp": now + 60}),
        &jsonwebtoken::EncodingKey::from_secret(SECRET.as_bytes()),
    )
    .unwrap();
    assert!(handshake_error(&relay, &hs512).await.contains("algorithm"));
    let string_exp = jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
        &json!({"sub": "alice", "exp": (now + 60).to_string()}),
        &jsonwebtoken::EncodingKey::from_secret(SECRET.as_bytes()),
    )
    .unwrap();
    handshake_error(&relay, &string_exp).await;
    let no_exp = jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
        &json!({"sub": "alice"}),
        &jsonwebtoken::EncodingKey::from_secret(SECRET.as_bytes()),
    )
    .unwrap();
    assert!(handshake_error(&relay, &no_exp).await.contains("exp"));
    let wrong_role = token("alice", Some(Role::Extension));
    assert!(handshake_error(&relay, &wrong_role).await.contains("role"));
}

#[tokio::test]
async fn asymmetric_algorithms_verify_with_a_pinned_public_key() {
    for (alg, key) in [
        (
            JwtAlgorithm::Es256,
            rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap(),
        ),
        (
            JwtAlgorithm::EdDsa,
            rcgen::KeyPair::generate_for(&rcgen::PKCS_ED25519).unwrap(),
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let public = dir.path().join("public.pem");
        std::fs::write(&public, key.public_key_pem()).unwrap();
        let relay = relay_with(|c| {
            c.jwt_secret = None;
            c.jwt_public_key = Some(public.clone());
            c.jwt_alg = Some(alg);
        })
        .await;
        let good = auth::mint_with_private_pem(
            alg,
            key.serialize_pem().as_bytes(),
            &MintClaims::new("alice", Some(Role::Mcp), Duration::from_secs(60)),
        )
        .unwrap();
        let mut mcp = Client::connect(&relay.url("/mcp")).await;
        let ok = mcp
            .call(json!(1), "mcp_handshake", json!({"accessToken": good}))
            .await;
        assert_eq!(ok["result"]["user_id"], "alice", "{alg:?}: {ok}");
        // An HS256 token (even with a valid-looking secret) is refused by a pinned relay.
        let hs = token("alice", Some(Role::Mcp));
        assert!(handshake_error(&relay, &hs).await.contains("algorithm"));
    }
}

#[tokio::test]
async fn silent_peer_is_dropped_after_two_ping_intervals() {
    let relay = relay_with(|c| c.ping_interval = Duration::from_millis(150)).await;
    let mut ext = Extension::connect(&relay, "alice", "Chrome", "a").await;
    let mut mcp = Mcp::connect(&relay, "alice").await;
    mcp.connect_to(&ext.extension_id).await;
    // The extension keeps reading (so it answers pings); the MCP client stops reading.
    let reader = tokio::spawn(async move {
        let deadline = tokio::time::Instant::now() + Duration::from_millis(1500);
        while let Ok(Some(Ok(message))) =
            tokio::time::timeout_at(deadline, ext.client.ws.next()).await
        {
            if matches!(message, Message::Close(_)) {
                return true;
            }
        }
        false
    });
    wait_until("the silent MCP client is dropped", || async {
        metric(&relay.metrics().render(), "mcp_relay_sockets{role=\"mcp\"}") == 0.0
    })
    .await;
    let metrics = relay.metrics().render();
    assert_eq!(
        metric(&metrics, "mcp_relay_sockets{role=\"extension\"}"),
        1.0
    );
    drop(mcp);
    assert!(
        !reader.await.unwrap(),
        "the responsive extension must stay connected"
    );
}

#[tokio::test]
async fn rate_limit_answers_32002_without_queueing() {
    let relay = relay_with(|c| {
        c.rate_limit = 1.0;
        c.rate_burst = 2.0;
    })
    .await;
    let ext = Extension::connect(&relay, "alice", "Chrome", "a").await;
    let extension_id = ext.extension_id.clone();
    let _echo = ext.spawn_echo();
    let mut mcp = Mcp::connect(&relay, "alice").await;
    mcp.connect_to(&extension_id).await;
    assert!(mcp.call("a", json!({})).await["result"].is_object());
    assert!(mcp.call("b", json!({})).await["result"].is_object());
    let limited = mcp.call("c", json!({})).await;
    assert_eq!(limited["error"]["code"], -32002);
    assert_eq!(limited["error"]["message"], "Rate limit exceeded");
}

#[tokio::test]
async fn socket_cap_refuses_upgrades_with_503() {
    let relay = relay_with(|c| c.max_connections = 2).await;
    let _a = Client::connect(&relay.url("/mcp")).await;
    let _b = Client::connect(&relay.url("/mcp")).await;
    let refused = tokio_tungstenite::connect_async(relay.url("/mcp")).await;
    match refused {
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
            assert_eq!(response.status(), 503)
        }
        other => panic!("expected HTTP 503, got {other:?}"),
    }
    drop(_a);
    wait_until("the dropped socket's place is free", || async {
        metric(&relay.metrics().render(), "mcp_relay_sockets{role=\"mcp\"}") < 2.0
    })
    .await;
    let _c = Client::connect(&relay.url("/mcp")).await;
}

#[tokio::test]
async fn per_user_limits_on_extensions_and_mcp_clients() {
    let relay = relay_with(|c| {
        c.max_extensions_per_user = 1;
        c.max_mcp_clients_per_user = 1;
    })
    .await;
    let _first = Extension::connect(&relay, "alice", "One", "1").await;
    let mut second = Client::connect(&relay.url("/extension")).await;
    let auth = second.recv().await;
    second
        .send(json!({"id": auth["id"], "result": {"name": "Two", "accessToken": token("alice", None), "client_id": "2"}}))
        .await;
    let (code, reason) = second.expect_close().await;
    assert_eq!(code, 1013);
    assert!(reason.contains("Too many extensions"), "{reason}");
    let _bob = Extension::connect(&relay, "bob", "Bob", "1").await;

    let _mcp = Mcp::connect(&relay, "alice").await;
    let mut extra = Client::connect(&relay.url("/mcp")).await;
    let response = extra
        .call(
            json!(1),
            "mcp_handshake",
            json!({"accessToken": token("alice", None)}),
        )
        .await;
    assert_eq!(response["error"]["code"], -32006);
}

#[tokio::test]
async fn slow_reader_is_disconnected_without_slowing_other_clients() {
    let relay = relay_with(|c| {
        c.max_send_queue_bytes = 256 * 1024;
        c.send_timeout = Duration::from_secs(2);
    })
    .await;
    let mut ext = Extension::connect(&relay, "alice", "Chrome", "a").await;
    let mut slow = Mcp::connect(&relay, "alice").await;
    let mut fast = Mcp::connect(&relay, "alice").await;
    slow.connect_to(&ext.extension_id).await;
    fast.connect_to(&ext.extension_id).await;
    let chunk = "x".repeat(100 * 1024);
    let total = 300; // 30 MB broadcast: far beyond socket buffers plus the queue bound
    let (seen_tx, mut seen_rx) = tokio::sync::watch::channel(0);
    let fast_reader = tokio::spawn(async move {
        let mut seen = 0;
        while seen < total {
            let note = fast.client.recv().await;
            if note["method"] == "tick" {
                assert_eq!(note["params"]["n"], seen);
                seen += 1;
                let _ = seen_tx.send(seen);
            }
        }
        (seen, fast)
    });
    // The extension produces at the pace of the fast reader (one tick in flight): that client
    // keeps up, the other one reads nothing.
    for n in 0..total {
        ext.client
            .send(json!({"jsonrpc": "2.0", "method": "tick", "params": {"n": n, "pad": chunk}}))
            .await;
        tokio::time::timeout(Duration::from_secs(20), seen_rx.wait_for(|seen| *seen > n))
            .await
            .expect("the fast client is not held back")
            .unwrap();
    }
    let (seen, _fast) = tokio::time::timeout(Duration::from_secs(30), fast_reader)
        .await
        .expect("the fast client is not held back")
        .unwrap();
    assert_eq!(seen, total);
    wait_until("the slow client is disconnected and gone", || async {
        let metrics = relay.metrics().render();
        metric(&metrics, "mcp_relay_slow_peer_disconnects_total") >= 1.0
            && metric(&metrics, "mcp_relay_sockets{role=\"mcp\"}") == 1.0
    })
    .await;
    drop(slow);
}

#[tokio::test]
async fn wss_works_with_a_generated_certificate() {
    let dir = tempfile::tempdir().unwrap();
    let certs = mcp_relay::net::certs::generate(&[]).unwrap();
    let (cert, key) = mcp_relay::net::certs::write(dir.path(), &certs).unwrap();
    let relay = relay_with(|c| {
        c.tls_cert = Some(cert);
        c.tls_key = Some(key);
    })
    .await;
    assert!(relay.url("/mcp").starts_with("wss://"));
    let mut roots = rustls::RootCertStore::empty();
    use rustls::pki_types::pem::PemObject;
    roots
        .add(
            rustls::pki_types::CertificateDer::from_pem_slice(certs.ca_cert_pem.as_bytes())
                .unwrap(),
        )
        .unwrap();
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let url = relay.url("/mcp").replace("127.0.0.1", "localhost");
    let (ws, _) = tokio_tungstenite::connect_async_tls_with_config(
        &url,
        None,
        false,
        Some(tokio_tungstenite::Connector::Rustls(Arc::new(config))),
    )
    .await
    .expect("wss handshake with the dev CA");
    let mut client = Client { ws };
    let response = client
        .call(
            json!(1),
            "mcp_handshake",
            json!({"accessToken": token("alice", None)}),
        )
        .await;
    assert_eq!(response["result"]["authenticated"], true);
}

#[test]
fn token_command_mints_a_token_the_relay_accepts() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-relay"))
        .args(["token", "--user", "carol", "--role", "mcp", "--ttl", "2h"])
        .args(["--connection-url", "wss://relay.example/mcp"])
        .env("MCP_RELAY_JWT_SECRET", SECRET)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let token = String::from_utf8(output.stdout).unwrap();
    let identity = auth::Verifier::hs256(SECRET.as_bytes())
        .verify(token.trim(), Role::Mcp)
        .unwrap();
    assert_eq!(identity.user_id, "carol");
    assert_eq!(
        identity.connection_url.as_deref(),
        Some("wss://relay.example/mcp")
    );
    let ttl = identity.expires_at - auth::now_secs();
    assert!((7100..=7200).contains(&ttl), "{ttl}");
}

#[test]
fn serve_help_documents_every_flag_and_its_environment_variable() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-relay"))
        .args(["serve", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8(output.stdout).unwrap();
    // Every flag `ServeConfig` defines, read from the definition itself, so a new flag cannot
    // be added without its help text and variable.
    let defined =
        <mcp_relay::config::ServeConfig as clap::Args>::augment_args(clap::Command::new("serve"));
    let mut checked = 0;
    for arg in defined.get_arguments() {
        let Some(long) = arg.get_long() else { continue };
        assert!(
            help.contains(&format!("--{long}")),
            "--{long} missing from --help"
        );
        let env = arg
            .get_env()
            .expect("every flag has an MCP_RELAY_* variable");
        let env = env.to_str().unwrap();
        assert!(env.starts_with("MCP_RELAY_"), "{env}");
        assert!(help.contains(env), "{env} missing from --help");
        let text = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
        assert!(text.len() > 20, "--{long} has no real help text: {text:?}");
        checked += 1;
    }
    assert!(checked > 40, "only {checked} flags found");
}

/// Whoever started `serve --dev` may stop reading its output at once (`| head`, a supervisor
/// that closed the pipe): the banner's prints then fail, and the relay must keep running and
/// still stop cleanly on SIGTERM.
#[test]
fn dev_mode_survives_a_closed_stdout_and_stops_cleanly_on_sigterm() {
    let data_home = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-relay"))
        .args(["serve", "--dev", "--listen", "127.0.0.1:0"])
        .env_remove("MCP_RELAY_JWT_SECRET")
        .env_remove("MCP_RELAY_STATE")
        .env("XDG_DATA_HOME", data_home.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Closed before the relay has printed anything.
    drop(child.stdout.take());
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        child.try_wait().unwrap().is_none(),
        "the relay died on a closed stdout"
    );
    std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
}

#[tokio::test]
async fn dev_mode_prints_working_tokens_and_stops_on_sigterm() {
    let data_home = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-relay"))
        .args(["serve", "--dev", "--listen", "127.0.0.1:0"])
        .env_remove("MCP_RELAY_JWT_SECRET")
        .env_remove("MCP_RELAY_STATE")
        // The default state file, in a data directory of the test's own.
        .env("XDG_DATA_HOME", data_home.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let lines = tokio::task::spawn_blocking(move || {
        let mut found = std::collections::HashMap::new();
        for line in BufReader::new(stdout).lines() {
            let line = line.unwrap();
            if let Some((key, value)) = line.split_once(':') {
                found.insert(key.trim().to_owned(), value.trim().to_owned());
            }
            if found.contains_key("MCP token") {
                break;
            }
        }
        found
    })
    .await
    .unwrap();
    // The printed extension token is what a person pastes into the extension.
    let mut raw = Client::connect(&lines["Extension URL"]).await;
    let auth = raw.recv().await;
    raw.send(json!({"id": auth["id"], "result": {"name": "Dev2", "accessToken": lines["Extension token"], "client_id": "x"}}))
        .await;
    assert_eq!(
        raw.recv_notification("authenticated").await["params"]["user_id"],
        "dev-user"
    );
    let mut mcp = Client::connect(&lines["MCP URL"]).await;
    let response = mcp
        .call(
            json!(1),
            "mcp_handshake",
            json!({"accessToken": lines["MCP token"]}),
        )
        .await;
    assert_eq!(response["result"]["user_id"], "dev-user");
    // SIGTERM: graceful, bounded exit.
    let pid = child.id().to_string();
    std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    let status = tokio::task::spawn_blocking(move || child.wait().unwrap())
        .await
        .unwrap();
    assert!(status.success(), "{status:?}");
}
