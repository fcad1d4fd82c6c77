//! Key rotation through a JWKS (`--jwt-jwks`, docs/SECURITY.md): tokens are checked against
//! the key their `kid` names, fetched from a real HTTP server on loopback, and a rotated key
//! is picked up without a restart.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine;
use common::{relay_with, Client};
use mcp_relay::auth::JwtAlgorithm;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// An ES256 key pair and its public JWK under `kid`.
struct Key {
    kid: String,
    pem: String,
    jwk: Value,
}

fn key(kid: &str) -> Key {
    let pair = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let raw = pair.public_key_raw();
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    Key {
        kid: kid.to_owned(),
        pem: pair.serialize_pem(),
        jwk: json!({"kty": "EC", "crv": "P-256", "kid": kid, "use": "sig", "alg": "ES256",
            "x": b64.encode(&raw[1..33]), "y": b64.encode(&raw[33..65])}),
    }
}

/// A token of `user` (role mcp) signed with `key`, naming `kid` (or none).
fn token(key: &Key, kid: Option<&str>, user: &str) -> String {
    let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
    header.kid = kid.map(str::to_owned);
    let exp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 3600;
    let claims = json!({"sub": user, "role": "mcp", "exp": exp});
    jsonwebtoken::encode(
        &header,
        &claims,
        &jsonwebtoken::EncodingKey::from_ec_pem(key.pem.as_bytes()).unwrap(),
    )
    .unwrap()
}

/// A JWKS server on loopback: answers every request with the current set, and counts them.
struct Provider {
    url: String,
    set: Arc<Mutex<Value>>,
    fetches: Arc<AtomicUsize>,
}

async fn provider(keys: &[&Key]) -> Provider {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!(
        "http://{}/.well-known/jwks.json",
        listener.local_addr().unwrap()
    );
    let set = Arc::new(Mutex::new(
        json!({"keys": keys.iter().map(|k| k.jwk.clone()).collect::<Vec<_>>()}),
    ));
    let fetches = Arc::new(AtomicUsize::new(0));
    let (served, counted) = (Arc::clone(&set), Arc::clone(&fetches));
    tokio::spawn(async move {
        loop {
            let (mut socket, _) = listener.accept().await.unwrap();
            let body = served.lock().unwrap().to_string();
            counted.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let mut request = [0u8; 4096];
                let _ = socket.read(&mut request).await;
                let answer = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
                     Connection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(answer.as_bytes()).await;
            });
        }
    });
    Provider { url, set, fetches }
}

impl Provider {
    fn rotate_to(&self, keys: &[&Key]) {
        *self.set.lock().unwrap() =
            json!({"keys": keys.iter().map(|k| k.jwk.clone()).collect::<Vec<_>>()});
    }
}

async fn handshake(relay: &mcp_relay::server::RunningRelay, token: &str) -> Value {
    let mut client = Client::connect(&relay.url("/mcp")).await;
    client
        .call(json!(1), "mcp_handshake", json!({"access_token": token}))
        .await
}

#[tokio::test]
async fn tokens_are_checked_by_kid_and_a_rotated_key_is_picked_up_without_a_restart() {
    let (old, new) = (key("2026-11-old"), key("2026-11-new"));
    let idp = provider(&[&old]).await;
    let url = idp.url.clone();
    let relay = relay_with(|config| {
        config.jwt_alg = JwtAlgorithm::Es256;
        config.jwt_jwks = Some(url);
    })
    .await;

    let answer = handshake(&relay, &token(&old, Some(&old.kid), "alice")).await;
    assert_eq!(answer["result"]["authenticated"], true, "{answer}");
    // No kid, or a key the provider never published: refused, saying why.
    let answer = handshake(&relay, &token(&old, None, "alice")).await;
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no kid"),
        "{answer}"
    );
    let stranger = key("someone-else");
    let answer = handshake(&relay, &token(&stranger, Some(&old.kid), "alice")).await;
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("signature"),
        "{answer}"
    );

    // The provider rotates: the new key is unknown for a moment, then accepted.
    idp.rotate_to(&[&new]);
    let fresh = token(&new, Some(&new.kid), "alice");
    let first = handshake(&relay, &fresh).await;
    assert!(
        first["error"]["message"]
            .as_str()
            .unwrap()
            .contains("unknown signing key"),
        "{first}"
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let answer = handshake(&relay, &fresh).await;
        if answer["result"]["authenticated"] == true {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the rotated key was never picked up: {answer}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The retired key no longer works.
    let answer = handshake(&relay, &token(&old, Some(&old.kid), "alice")).await;
    assert!(answer["error"].is_object(), "{answer}");

    // Made-up kids cannot make the relay hammer the provider: at most one fetch per 10 s.
    let before = idp.fetches.load(Ordering::SeqCst);
    for n in 0..20 {
        let kid = format!("made-up-{n}");
        handshake(&relay, &token(&new, Some(&kid), "alice")).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let fetched = idp.fetches.load(Ordering::SeqCst) - before;
    assert!(fetched <= 1, "{fetched} fetches for 20 unknown kids");
    relay.shutdown().await;
}

#[tokio::test]
async fn a_jwks_that_cannot_be_loaded_stops_start_up_with_a_clear_error() {
    let mut config = mcp_relay::config::ServeConfig::defaults();
    config.listen = "127.0.0.1:0".parse().unwrap();
    config.state = Some(mcp_relay::store::StateSpec::Memory);
    config.jwt_alg = JwtAlgorithm::Es256;
    config.jwt_jwks = Some("/nonexistent/jwks.json".into());
    let error = mcp_relay::server::start(config.clone())
        .await
        .err()
        .expect("refused");
    let text = format!("{error:#}");
    assert!(
        text.contains("--jwt-jwks") && text.contains("/nonexistent/jwks.json"),
        "{text}"
    );

    config.jwt_jwks = Some("http://relay.example.com/jwks".into());
    let error = mcp_relay::server::start(config.clone())
        .await
        .err()
        .expect("refused");
    assert!(format!("{error:#}").contains("https"), "{error:#}");

    config.jwt_alg = JwtAlgorithm::Hs256;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("jwks.json");
    std::fs::write(&path, json!({"keys": [key("k").jwk]}).to_string()).unwrap();
    config.jwt_jwks = Some(path.to_string_lossy().into_owned());
    let error = mcp_relay::server::start(config)
        .await
        .err()
        .expect("refused");
    assert!(format!("{error:#}").contains("asymmetric"), "{error:#}");
}

/// Hosts that connect by URL (MCP over HTTP on `/mcp`) are checked against the same keys.
#[cfg(feature = "bridge")]
#[tokio::test]
async fn the_http_mcp_endpoint_takes_tokens_signed_by_a_jwks_key() {
    use common::http::Session;
    let signer = key("http-key");
    let idp = provider(&[&signer]).await;
    let url = idp.url.clone();
    let relay = relay_with(|config| {
        config.jwt_alg = JwtAlgorithm::Es256;
        config.jwt_jwks = Some(url);
    })
    .await;
    let session = Session::open_with(
        relay.local_addr,
        &token(&signer, Some(&signer.kid), "alice"),
        "Claude Code",
        "/mcp",
    )
    .await;
    assert!(session
        .tools()
        .await
        .contains(&"browser_snapshot".to_owned()));
    let stranger = key("http-key");
    let refused = common::http::initialize(
        relay.local_addr,
        &token(&stranger, Some("http-key"), "alice"),
        "Claude Code",
        "/mcp",
    )
    .await;
    assert_eq!(refused.status, 401, "{refused:?}");
    relay.shutdown().await;
}
