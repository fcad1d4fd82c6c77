//! Key rotation through a JWKS (`--jwt-jwks`, docs/SECURITY.md): tokens are checked against
//! the key their `kid` names, fetched from a real HTTP server on loopback, and a rotated key
//! is picked up without a restart. Without `--jwt-alg` each token is verified with the
//! algorithm of the key its `kid` names (RS256, ES256, EdDSA), keys from a file or over https.

use crate::common;

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
    serve_jwks(
        json!({"keys": keys.iter().map(|k| k.jwk.clone()).collect::<Vec<_>>()}),
        None,
    )
    .await
}

/// Serves `set` on loopback: plain http, or https with `tls` (a `localhost` certificate).
async fn serve_jwks(set: Value, tls: Option<tokio_rustls::TlsAcceptor>) -> Provider {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let scheme = if tls.is_some() { "https" } else { "http" };
    let url = format!(
        "{scheme}://localhost:{}/.well-known/jwks.json",
        listener.local_addr().unwrap().port()
    );
    let set = Arc::new(Mutex::new(set));
    let fetches = Arc::new(AtomicUsize::new(0));
    let (served, counted) = (Arc::clone(&set), Arc::clone(&fetches));
    tokio::spawn(async move {
        loop {
            let (socket, _) = listener.accept().await.unwrap();
            let body = served.lock().unwrap().to_string();
            let (counted, tls) = (Arc::clone(&counted), tls.clone());
            tokio::spawn(async move {
                match tls {
                    Some(tls) => {
                        // A client that does not trust the certificate gives up in the handshake.
                        if let Ok(stream) = tls.accept(socket).await {
                            counted.fetch_add(1, Ordering::SeqCst);
                            answer(stream, &body).await;
                        }
                    }
                    None => {
                        counted.fetch_add(1, Ordering::SeqCst);
                        answer(socket, &body).await;
                    }
                }
            });
        }
    });
    Provider { url, set, fetches }
}

async fn answer<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin>(
    mut stream: S,
    body: &str,
) {
    let mut request = [0u8; 4096];
    let _ = stream.read(&mut request).await;
    let answer = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(answer.as_bytes()).await;
    let _ = stream.shutdown().await;
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
        config.jwt_alg = Some(JwtAlgorithm::Es256);
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
    config.state = Some(mcp_relay::operator::store::StateSpec::Memory);
    config.jwt_alg = Some(JwtAlgorithm::Es256);
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

    config.jwt_alg = Some(JwtAlgorithm::Hs256);
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
#[cfg(feature = "http-mcp")]
#[tokio::test]
async fn the_http_mcp_endpoint_takes_tokens_signed_by_a_jwks_key() {
    use common::http::Session;
    let signer = key("http-key");
    let idp = provider(&[&signer]).await;
    let url = idp.url.clone();
    let relay = relay_with(|config| {
        config.jwt_alg = Some(JwtAlgorithm::Es256);
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

/// A key of each algorithm the relay takes, and how to sign with it.
struct Signer {
    kid: &'static str,
    alg: jsonwebtoken::Algorithm,
    key: jsonwebtoken::EncodingKey,
    jwk: Value,
}

impl Signer {
    /// RS256, from a fixed test key (ring cannot generate RSA keys).
    fn rsa(kid: &'static str) -> Signer {
        let pem = std::fs::read(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/jwks-rsa-test-key.pem"),
        )
        .unwrap();
        let key = jsonwebtoken::EncodingKey::from_rsa_pem(&pem).unwrap();
        let mut jwk = serde_json::to_value(
            jsonwebtoken::jwk::Jwk::from_encoding_key(&key, jsonwebtoken::Algorithm::RS256)
                .unwrap(),
        )
        .unwrap();
        jwk["kid"] = json!(kid);
        jwk["use"] = json!("sig");
        Signer {
            kid,
            alg: jsonwebtoken::Algorithm::RS256,
            key,
            jwk,
        }
    }

    /// ES256; its JWK names no `alg` (a P-256 key admits ES256 only).
    fn p256(kid: &'static str) -> Signer {
        let k = key(kid);
        let mut jwk = k.jwk;
        jwk.as_object_mut().unwrap().remove("alg");
        Signer {
            kid,
            alg: jsonwebtoken::Algorithm::ES256,
            key: jsonwebtoken::EncodingKey::from_ec_pem(k.pem.as_bytes()).unwrap(),
            jwk,
        }
    }

    /// EdDSA over Ed25519.
    fn ed25519(kid: &'static str) -> Signer {
        let pair = rcgen::KeyPair::generate_for(&rcgen::PKCS_ED25519).unwrap();
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        Signer {
            kid,
            alg: jsonwebtoken::Algorithm::EdDSA,
            key: jsonwebtoken::EncodingKey::from_ed_pem(pair.serialize_pem().as_bytes()).unwrap(),
            jwk: json!({"kty": "OKP", "crv": "Ed25519", "kid": kid, "alg": "EdDSA", "use": "sig",
                "x": b64.encode(pair.public_key_raw())}),
        }
    }

    /// A token of `user` signed by this key, its header naming `kid` and `alg`.
    fn sign_as(&self, kid: &str, alg: jsonwebtoken::Algorithm, user: &str) -> String {
        let mut header = jsonwebtoken::Header::new(alg);
        header.kid = Some(kid.to_owned());
        let exp = mcp_relay::auth::now_secs() + 3600;
        jsonwebtoken::encode(
            &header,
            &json!({"sub": user, "role": "mcp", "exp": exp}),
            &self.key,
        )
        .unwrap()
    }

    fn sign(&self, user: &str) -> String {
        self.sign_as(self.kid, self.alg, user)
    }
}

/// The three keys, and a relay taking them from `source` (a file or a URL) without --jwt-alg.
async fn relay_without_alg(
    source: String,
    ca: Option<std::path::PathBuf>,
) -> anyhow::Result<mcp_relay::server::RunningRelay> {
    let mut config = mcp_relay::config::ServeConfig::defaults();
    config.listen = "127.0.0.1:0".parse().unwrap();
    config.state = Some(mcp_relay::operator::store::StateSpec::Memory);
    config.jwt_alg = None;
    config.jwt_jwks = Some(source);
    config.jwt_jwks_ca = ca;
    mcp_relay::server::start(config).await
}

/// Each signer's own token is accepted; a token whose header names another algorithm than its
/// key's, whoever signed it, is refused.
async fn check_each_key_with_its_own_algorithm(
    relay: &mcp_relay::server::RunningRelay,
    signers: &[Signer],
) {
    for signer in signers {
        let answer = handshake(relay, &signer.sign("alice")).await;
        assert_eq!(
            answer["result"]["authenticated"], true,
            "{:?}: {answer}",
            signer.alg
        );
    }
    let (rsa, ec, ed) = (&signers[0], &signers[1], &signers[2]);
    // An RS256 token naming the ES256 key, an ES256 token naming the RS256 key, an EdDSA
    // token naming the ES256 key: the header's alg never chooses.
    for forged in [
        rsa.sign_as(ec.kid, jsonwebtoken::Algorithm::RS256, "mallory"),
        ec.sign_as(rsa.kid, jsonwebtoken::Algorithm::ES256, "mallory"),
        ed.sign_as(ec.kid, jsonwebtoken::Algorithm::EdDSA, "mallory"),
    ] {
        let answer = handshake(relay, &forged).await;
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("algorithm"), "{answer}");
    }
    // HMAC keyed with the RSA key's public JWK (the classic confusion): refused too.
    let secret = rsa.jwk.to_string();
    let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256);
    header.kid = Some(rsa.kid.to_owned());
    let hs = jsonwebtoken::encode(
        &header,
        &json!({"sub": "mallory", "role": "mcp", "exp": mcp_relay::auth::now_secs() + 60}),
        &jsonwebtoken::EncodingKey::from_secret(secret.as_bytes()),
    )
    .unwrap();
    let answer = handshake(relay, &hs).await;
    assert!(answer["error"].is_object(), "{answer}");
}

#[tokio::test]
async fn without_jwt_alg_rs256_es256_and_eddsa_keys_from_a_file_each_verify_their_own_tokens() {
    let signers = [
        Signer::rsa("rsa-1"),
        Signer::p256("p256-1"),
        Signer::ed25519("ed-1"),
    ];
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("jwks.json");
    let set = json!({"keys": signers.iter().map(|s| s.jwk.clone()).collect::<Vec<_>>()});
    std::fs::write(&path, set.to_string()).unwrap();
    let relay = relay_without_alg(path.to_string_lossy().into_owned(), None)
        .await
        .expect("the relay starts on the keys' own algorithms");
    check_each_key_with_its_own_algorithm(&relay, &signers).await;
    relay.shutdown().await;
}

#[tokio::test]
async fn without_jwt_alg_rs256_es256_and_eddsa_keys_over_https_each_verify_their_own_tokens() {
    let signers = [
        Signer::rsa("rsa-2"),
        Signer::p256("p256-2"),
        Signer::ed25519("ed-2"),
    ];
    // The provider serves https with a certificate of a private CA the relay is told about.
    let dir = tempfile::tempdir().unwrap();
    let certs = mcp_relay::net::certs::generate(&[]).unwrap();
    let (cert, key) = mcp_relay::net::certs::write(dir.path(), &certs).unwrap();
    let tls = {
        use rustls::pki_types::pem::PemObject;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer};
        let chain = CertificateDer::pem_file_iter(&cert)
            .unwrap()
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        let key = PrivateKeyDer::from_pem_file(&key).unwrap();
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap();
        tokio_rustls::TlsAcceptor::from(Arc::new(config))
    };
    let set = json!({"keys": signers.iter().map(|s| s.jwk.clone()).collect::<Vec<_>>()});
    let idp = serve_jwks(set, Some(tls)).await;
    assert!(idp.url.starts_with("https://localhost:"), "{}", idp.url);

    // Without the CA the certificate is not trusted: start-up stops, saying where.
    let error = relay_without_alg(idp.url.clone(), None)
        .await
        .err()
        .expect("an untrusted certificate is refused");
    assert!(format!("{error:#}").contains("--jwt-jwks"), "{error:#}");

    let relay = relay_without_alg(idp.url.clone(), Some(dir.path().join("ca.pem")))
        .await
        .expect("the relay starts with the provider's CA");
    assert!(idp.fetches.load(Ordering::SeqCst) >= 1);
    check_each_key_with_its_own_algorithm(&relay, &signers).await;
    relay.shutdown().await;
}

#[tokio::test]
async fn without_jwt_alg_a_jwks_whose_keys_name_no_algorithm_is_refused() {
    // An RSA key without "alg" could be for RS256, RS384 or PS256: the relay does not guess.
    let rsa = Signer::rsa("rsa-bare");
    let mut bare = rsa.jwk.clone();
    bare.as_object_mut().unwrap().remove("alg");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("jwks.json");
    std::fs::write(&path, json!({"keys": [bare]}).to_string()).unwrap();
    let source = path.to_string_lossy().into_owned();
    let error = relay_without_alg(source.clone(), None)
        .await
        .err()
        .expect("refused");
    let text = format!("{error:#}");
    assert!(
        text.contains("name no algorithm") && text.contains("--jwt-alg"),
        "{text}"
    );
    // Named on the command line instead, the same set works.
    let mut config = mcp_relay::config::ServeConfig::defaults();
    config.listen = "127.0.0.1:0".parse().unwrap();
    config.state = Some(mcp_relay::operator::store::StateSpec::Memory);
    config.jwt_alg = Some(JwtAlgorithm::Rs256);
    config.jwt_jwks = Some(source);
    let relay = mcp_relay::server::start(config).await.unwrap();
    let answer = handshake(&relay, &rsa.sign("alice")).await;
    assert_eq!(answer["result"]["authenticated"], true, "{answer}");
    relay.shutdown().await;
}
