//! Signing keys from a JWKS (`--jwt-jwks FILE_OR_URL`), so an identity provider can rotate its
//! keys without a relay restart.
//!
//! A token names its key with `kid`; the relay looks the key up in the set it last loaded. The
//! algorithm stays pinned (`--jwt-alg`): only keys of that algorithm's type are taken from the
//! set (RSA for RS256, P-256 for ES256, Ed25519 for EdDSA; a key that names another `alg` or a
//! `use` other than `sig` is skipped), and the token's header must name the same algorithm.
//!
//! The set is reloaded every `--jwt-jwks-refresh` and, at most once per
//! [`MIN_REFETCH`], when a token names a key the relay does not have (the provider has just
//! rotated). Verification itself never waits for the network: that token is refused with an
//! error saying so, and the next attempt, a moment later, finds the new key. A failed reload
//! keeps the keys already loaded (and says why in the log); a failed first load stops start-up.
//!
//! Sources: a file, re-read on the same schedule; an `https://` URL; or an `http://` URL on a
//! loopback host (for a provider or a test on the same machine: keys must not travel in clear).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use anyhow::Context;
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, KeyAlgorithm, PublicKeyUse};
use jsonwebtoken::DecodingKey;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::auth::JwtAlgorithm;

/// Fewest seconds between two reloads asked for by unknown key ids: a client sending made-up
/// `kid`s must not make the relay hammer its identity provider.
pub const MIN_REFETCH: Duration = Duration::from_secs(10);

/// Largest JWKS accepted (a real one is a few KiB).
const MAX_JWKS_BYTES: usize = 1 << 20;

/// Where the set comes from.
#[derive(Debug, Clone)]
pub enum JwksSource {
    File(PathBuf),
    Url(String),
}

impl JwksSource {
    /// `https://…`, `http://` on a loopback host, or a file path.
    pub fn parse(text: &str) -> anyhow::Result<JwksSource> {
        let text = text.trim();
        if text.starts_with("https://") {
            return Ok(JwksSource::Url(text.to_owned()));
        }
        if let Some(rest) = text.strip_prefix("http://") {
            let host = crate::http_client::Base::parse(text)?.host;
            anyhow::ensure!(
                host == "localhost" || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback()),
                "--jwt-jwks {text:?}: keys are fetched over https (plain http only from a loopback host, not {:?})",
                rest.split('/').next().unwrap_or_default()
            );
            return Ok(JwksSource::Url(text.to_owned()));
        }
        anyhow::ensure!(
            !text.contains("://"),
            "--jwt-jwks {text:?}: give a file path or an https:// URL"
        );
        Ok(JwksSource::File(PathBuf::from(text)))
    }

    async fn load(&self) -> anyhow::Result<String> {
        match self {
            JwksSource::File(path) => {
                let text = tokio::fs::read_to_string(path)
                    .await
                    .with_context(|| format!("reading the JWKS file {}", path.display()))?;
                anyhow::ensure!(
                    text.len() <= MAX_JWKS_BYTES,
                    "the JWKS file {} is over 1 MiB",
                    path.display()
                );
                Ok(text)
            }
            JwksSource::Url(url) => {
                let base = crate::http_client::Base::parse(url)?;
                let path = url
                    .splitn(4, '/')
                    .nth(3)
                    .map_or_else(|| "/".to_owned(), |p| format!("/{p}"));
                let (status, body) =
                    crate::http_client::call(&base, None, "GET", &path, None, None)
                        .await
                        .with_context(|| format!("fetching the JWKS from {url}"))?;
                anyhow::ensure!(status == 200, "fetching the JWKS from {url}: HTTP {status}");
                Ok(body.to_string())
            }
        }
    }
}

/// The keys of one loaded set, by `kid`.
#[derive(Default)]
struct KeySet {
    keys: HashMap<String, DecodingKey>,
}

/// The relay's view of the identity provider's keys; shared by every verifier clone.
pub struct Jwks {
    source: JwksSource,
    alg: JwtAlgorithm,
    current: RwLock<Arc<KeySet>>,
    /// When the last reload asked for by an unknown `kid` was let through.
    last_asked: Mutex<Option<Instant>>,
    wake: Notify,
}

impl std::fmt::Debug for Jwks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Jwks")
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

impl Jwks {
    /// Loads the set once; an unreachable source or a set without a usable key is an error.
    pub async fn load(source: JwksSource, alg: JwtAlgorithm) -> anyhow::Result<Arc<Jwks>> {
        anyhow::ensure!(
            alg != JwtAlgorithm::Hs256,
            "--jwt-jwks needs an asymmetric --jwt-alg (RS256, ES256 or EdDSA), not HS256"
        );
        let jwks = Arc::new(Jwks {
            source,
            alg,
            current: RwLock::new(Arc::default()),
            last_asked: Mutex::new(None),
            wake: Notify::new(),
        });
        // reload() refuses a set without a usable key, so a relay never starts locking everyone out.
        jwks.reload().await?;
        Ok(jwks)
    }

    /// The key named `kid`, if the loaded set has it.
    pub fn key(&self, kid: &str) -> Option<DecodingKey> {
        self.current.read().unwrap().keys.get(kid).cloned()
    }

    /// A token named a key the relay does not have: reload soon, unless a reload was asked for
    /// less than [`MIN_REFETCH`] ago.
    pub fn ask_reload(&self) {
        let mut last = self.last_asked.lock().unwrap();
        if last.is_some_and(|at| at.elapsed() < MIN_REFETCH) {
            return;
        }
        *last = Some(Instant::now());
        self.wake.notify_one();
    }

    /// Reloads every `every`, and when [`Jwks::ask_reload`] wakes it, until `shutdown`.
    pub fn spawn_refresher(self: &Arc<Self>, every: Duration, shutdown: CancellationToken) {
        let jwks = Arc::clone(self);
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = shutdown.cancelled() => return,
                    _ = tokio::time::sleep(every) => {}
                    _ = jwks.wake.notified() => {}
                }
                match jwks.reload().await {
                    Ok(count) => tracing::info!(keys = count, "reloaded the JWKS"),
                    Err(e) => tracing::warn!(
                        "reloading the JWKS failed; keeping the keys loaded before: {e:#}"
                    ),
                }
            }
        });
    }

    /// Loads the set and swaps it in; returns how many usable keys it has.
    async fn reload(&self) -> anyhow::Result<usize> {
        let text = self.source.load().await?;
        let set = parse_set(&text, self.alg)?;
        let count = set.keys.len();
        // An empty set would lock everyone out: keep the old keys instead.
        anyhow::ensure!(
            count > 0,
            "the JWKS has no {} key with a kid",
            self.alg.name()
        );
        *self.current.write().unwrap() = Arc::new(set);
        Ok(count)
    }
}

/// The usable keys of a JWKS document. Keys that do not parse, have no `kid`, or are not for
/// `alg` are skipped, so one exotic key in a provider's set does not hide the others.
fn parse_set(text: &str, alg: JwtAlgorithm) -> anyhow::Result<KeySet> {
    let document: serde_json::Value = serde_json::from_str(text).context("the JWKS is not JSON")?;
    let keys = document["keys"]
        .as_array()
        .context("the JWKS has no \"keys\" array")?;
    let mut set = KeySet::default();
    for value in keys {
        let Ok(jwk) = serde_json::from_value::<Jwk>(value.clone()) else {
            continue;
        };
        let Some(kid) = jwk.common.key_id.clone().filter(|k| !k.is_empty()) else {
            continue;
        };
        if !fits(&jwk, alg) {
            continue;
        }
        if let Ok(key) = DecodingKey::from_jwk(&jwk) {
            set.keys.insert(kid, key);
        }
    }
    Ok(set)
}

/// Whether `jwk` is a signing key of the pinned algorithm's type.
fn fits(jwk: &Jwk, alg: JwtAlgorithm) -> bool {
    if matches!(jwk.common.public_key_use, Some(ref u) if *u != PublicKeyUse::Signature) {
        return false;
    }
    let named = jwk.common.key_algorithm;
    let (kind_fits, wanted) = match (&jwk.algorithm, alg) {
        (AlgorithmParameters::RSA(_), JwtAlgorithm::Rs256) => (true, KeyAlgorithm::RS256),
        (AlgorithmParameters::EllipticCurve(p), JwtAlgorithm::Es256) => {
            (p.curve == EllipticCurve::P256, KeyAlgorithm::ES256)
        }
        (AlgorithmParameters::OctetKeyPair(p), JwtAlgorithm::EdDsa) => {
            (p.curve == EllipticCurve::Ed25519, KeyAlgorithm::EdDSA)
        }
        _ => return false,
    };
    kind_fits && named.is_none_or(|named| named == wanted)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ec_jwk(kid: &str) -> (rcgen::KeyPair, serde_json::Value) {
        use base64::Engine;
        let pair = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let raw = pair.public_key_raw();
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let jwk = json!({"kty": "EC", "crv": "P-256", "kid": kid, "use": "sig", "alg": "ES256",
            "x": b64.encode(&raw[1..33]), "y": b64.encode(&raw[33..65])});
        (pair, jwk)
    }

    #[test]
    fn only_keys_of_the_pinned_algorithm_with_a_kid_are_taken() {
        let (_, good) = ec_jwk("k1");
        let mut no_kid = good.clone();
        no_kid.as_object_mut().unwrap().remove("kid");
        let mut for_encryption = good.clone();
        for_encryption["use"] = json!("enc");
        for_encryption["kid"] = json!("k3");
        let mut other_alg = good.clone();
        other_alg["alg"] = json!("ES384");
        other_alg["kid"] = json!("k4");
        let junk = json!({"kty": "nonsense", "kid": "k5"});
        let text = json!({"keys": [good, no_kid, for_encryption, other_alg, junk]}).to_string();
        let set = parse_set(&text, JwtAlgorithm::Es256).unwrap();
        assert_eq!(set.keys.keys().collect::<Vec<_>>(), vec!["k1"]);
        assert!(parse_set(&text, JwtAlgorithm::EdDsa)
            .unwrap()
            .keys
            .is_empty());
        assert!(parse_set(&text, JwtAlgorithm::Rs256)
            .unwrap()
            .keys
            .is_empty());
        assert!(parse_set("{}", JwtAlgorithm::Es256).is_err());
    }

    #[test]
    fn sources_are_files_https_or_loopback_http_only() {
        assert!(matches!(
            JwksSource::parse("/etc/keys.json").unwrap(),
            JwksSource::File(_)
        ));
        assert!(matches!(
            JwksSource::parse("https://idp.example.com/.well-known/jwks.json").unwrap(),
            JwksSource::Url(_)
        ));
        assert!(JwksSource::parse("http://127.0.0.1:9000/jwks").is_ok());
        assert!(JwksSource::parse("http://localhost:9000/jwks").is_ok());
        let refused = JwksSource::parse("http://idp.example.com/jwks").unwrap_err();
        assert!(refused.to_string().contains("https"), "{refused}");
        assert!(JwksSource::parse("ftp://x/keys").is_err());
    }

    #[tokio::test]
    async fn reload_requests_are_rate_limited() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("jwks.json");
        let (_, jwk) = ec_jwk("k1");
        std::fs::write(&path, json!({"keys": [jwk]}).to_string()).unwrap();
        let jwks = Jwks::load(JwksSource::File(path), JwtAlgorithm::Es256)
            .await
            .unwrap();
        assert!(jwks.key("k1").is_some());
        jwks.ask_reload();
        let first = jwks.last_asked.lock().unwrap().unwrap();
        jwks.ask_reload();
        assert_eq!(
            jwks.last_asked.lock().unwrap().unwrap(),
            first,
            "a second ask within MIN_REFETCH is ignored"
        );
    }
}
