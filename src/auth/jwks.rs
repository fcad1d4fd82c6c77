//! Signing keys from a JWKS (`--jwt-jwks FILE_OR_URL`), so an identity provider can rotate its
//! keys without a relay restart.
//!
//! A token names its key with `kid`; the relay looks the key up in the set it last loaded, and
//! verifies the token with that key's algorithm only: the token header's `alg` must name the
//! same one, it never chooses. Which algorithm a key is for:
//!
//! - **`--jwt-alg` given** (pinned): only keys of that algorithm's type are taken from the set
//!   (RSA for RS256, P-256 for ES256, Ed25519 for EdDSA); a key that names another `alg` is
//!   skipped.
//! - **no `--jwt-alg`**: the `alg` each key declares (RS256, ES256 or EdDSA), which must fit its
//!   `kty`/`crv`. A key that names none is taken only where its type admits exactly one of the
//!   three (RFC 7518 §3.4, RFC 8037): an EC P-256 key is ES256, an OKP Ed25519 key EdDSA. An RSA
//!   key without `alg` is skipped, since RSA keys also sign RS384, RS512 and PS256; a set left
//!   without a usable key that way is refused with an error saying its keys name no algorithm.
//!
//! Either way a key whose `use` is not `sig`, or that has no `kid`, is skipped.
//!
//! The set is reloaded every `--jwt-jwks-refresh` and, at most once per
//! [`MIN_REFETCH`], when a token names a key the relay does not have (the provider has just
//! rotated). Verification itself never waits for the network: that token is refused with an
//! error saying so, and the next attempt, a moment later, finds the new key. A failed reload
//! keeps the keys already loaded (and says why in the log); a failed first load stops start-up.
//!
//! Sources: a file, re-read on the same schedule; an `https://` URL (public roots, plus
//! `--jwt-jwks-ca` for a private CA); or an `http://` URL on a loopback host (for a provider or
//! a test on the same machine: keys must not travel in clear).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use anyhow::Context;
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, KeyAlgorithm, PublicKeyUse};
use jsonwebtoken::DecodingKey;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::algorithm::JwtAlgorithm;

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

    async fn load(&self, ca_cert: Option<&std::path::Path>) -> anyhow::Result<String> {
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
                    crate::http_client::call(&base, ca_cert, "GET", &path, None, None)
                        .await
                        .with_context(|| format!("fetching the JWKS from {url}"))?;
                anyhow::ensure!(status == 200, "fetching the JWKS from {url}: HTTP {status}");
                Ok(body.to_string())
            }
        }
    }
}

/// A key of the set and the one algorithm tokens signed with it may use.
#[derive(Clone)]
pub struct SigningKey {
    pub alg: JwtAlgorithm,
    pub key: DecodingKey,
}

/// The keys of one loaded set, by `kid`.
#[derive(Default)]
struct KeySet {
    keys: HashMap<String, SigningKey>,
    /// How many keys were skipped only because they name no `alg` and their type does not fix
    /// one (for the error when nothing else is usable).
    without_alg: usize,
}

impl KeySet {
    /// The algorithms its keys are for, for the log (`ES256, EdDSA`).
    fn algorithms(&self) -> String {
        let mut names: Vec<&str> = self.keys.values().map(|k| k.alg.name()).collect();
        names.sort_unstable();
        names.dedup();
        names.join(", ")
    }
}

/// The relay's view of the identity provider's keys; shared by every verifier clone.
pub struct Jwks {
    source: JwksSource,
    /// `--jwt-alg`, when given; else each key's own.
    pinned: Option<JwtAlgorithm>,
    /// `--jwt-jwks-ca`: a private CA for an `https://` source.
    ca_cert: Option<PathBuf>,
    current: RwLock<Arc<KeySet>>,
    /// When the last reload asked for by an unknown `kid` was let through.
    last_asked: Mutex<Option<Instant>>,
    wake: Notify,
}

impl std::fmt::Debug for Jwks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Jwks")
            .field("source", &self.source)
            .field("pinned", &self.pinned)
            .finish_non_exhaustive()
    }
}

impl Jwks {
    /// Loads the set once; an unreachable source or a set without a usable key is an error.
    /// `pinned` is `--jwt-alg` (None: the algorithms the keys declare).
    pub async fn load(
        source: JwksSource,
        pinned: Option<JwtAlgorithm>,
        ca_cert: Option<PathBuf>,
    ) -> anyhow::Result<Arc<Jwks>> {
        anyhow::ensure!(
            pinned != Some(JwtAlgorithm::Hs256),
            "--jwt-jwks needs an asymmetric --jwt-alg (RS256, ES256 or EdDSA), not HS256; or \
             leave --jwt-alg out to take each key's own"
        );
        let jwks = Arc::new(Jwks {
            source,
            pinned,
            ca_cert,
            current: RwLock::new(Arc::default()),
            last_asked: Mutex::new(None),
            wake: Notify::new(),
        });
        // reload() refuses a set without a usable key, so a relay never starts locking everyone out.
        let count = jwks.reload().await?;
        tracing::info!(
            keys = count,
            algorithms = %jwks.current.read().unwrap().algorithms(),
            "loaded the JWKS"
        );
        Ok(jwks)
    }

    /// The key named `kid` and its algorithm, if the loaded set has it.
    pub fn key(&self, kid: &str) -> Option<SigningKey> {
        self.current.read().unwrap().keys.get(kid).cloned()
    }

    /// `--jwt-alg`, if the set is pinned to it.
    pub fn pinned(&self) -> Option<JwtAlgorithm> {
        self.pinned
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
        let text = self.source.load(self.ca_cert.as_deref()).await?;
        let set = parse_set(&text, self.pinned)?;
        let count = set.keys.len();
        // An empty set would lock everyone out: keep the old keys instead.
        if count == 0 {
            match self.pinned {
                Some(alg) => anyhow::bail!("the JWKS has no {} key with a kid", alg.name()),
                None if set.without_alg > 0 => anyhow::bail!(
                    "the JWKS's keys name no algorithm: {} key(s) have no \"alg\" and a type \
                     that does not fix one (an RSA key may sign RS256, RS384, PS256, …); have \
                     the provider publish \"alg\", or give --jwt-alg",
                    set.without_alg
                ),
                None => {
                    anyhow::bail!("the JWKS has no RS256, ES256 or EdDSA signing key with a kid")
                }
            }
        }
        *self.current.write().unwrap() = Arc::new(set);
        Ok(count)
    }
}

/// The usable keys of a JWKS document. Keys that do not parse, have no `kid`, or are for no
/// algorithm the relay takes (see the module's documentation) are skipped, so one exotic key in
/// a provider's set does not hide the others.
fn parse_set(text: &str, pinned: Option<JwtAlgorithm>) -> anyhow::Result<KeySet> {
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
        let alg = match algorithm_of(&jwk, pinned) {
            Ok(alg) => alg,
            Err(Skip::NoAlgorithm) => {
                set.without_alg += 1;
                continue;
            }
            Err(Skip::Unusable) => continue,
        };
        if let Ok(key) = DecodingKey::from_jwk(&jwk) {
            set.keys.insert(kid, SigningKey { alg, key });
        }
    }
    Ok(set)
}

/// Why a key of the set is not used.
#[derive(Debug, PartialEq, Eq)]
enum Skip {
    /// Not a signing key of a type and algorithm the relay takes.
    Unusable,
    /// It names no `alg`, nothing is pinned, and its type alone does not fix one.
    NoAlgorithm,
}

/// The one algorithm tokens signed with `jwk` may use: `pinned` if the key fits it, else the
/// key's own `alg` (which must fit its type), else the one its type admits.
fn algorithm_of(jwk: &Jwk, pinned: Option<JwtAlgorithm>) -> Result<JwtAlgorithm, Skip> {
    if matches!(jwk.common.public_key_use, Some(ref u) if *u != PublicKeyUse::Signature) {
        return Err(Skip::Unusable);
    }
    // What the key's type admits among the relay's algorithms; only RSA is ambiguous (it also
    // signs RS384, RS512 and PS*, which the relay does not take).
    let (by_type, unambiguous) = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => (JwtAlgorithm::Rs256, false),
        AlgorithmParameters::EllipticCurve(p) if p.curve == EllipticCurve::P256 => {
            (JwtAlgorithm::Es256, true)
        }
        AlgorithmParameters::OctetKeyPair(p) if p.curve == EllipticCurve::Ed25519 => {
            (JwtAlgorithm::EdDsa, true)
        }
        _ => return Err(Skip::Unusable),
    };
    let named = match jwk.common.key_algorithm {
        None => None,
        Some(KeyAlgorithm::RS256) => Some(JwtAlgorithm::Rs256),
        Some(KeyAlgorithm::ES256) => Some(JwtAlgorithm::Es256),
        Some(KeyAlgorithm::EdDSA) => Some(JwtAlgorithm::EdDsa),
        Some(_) => return Err(Skip::Unusable),
    };
    if named.is_some_and(|named| named != by_type) {
        return Err(Skip::Unusable);
    }
    match (pinned, named) {
        (Some(pinned), _) if pinned != by_type => Err(Skip::Unusable),
        (Some(pinned), _) => Ok(pinned),
        (None, Some(named)) => Ok(named),
        (None, None) if unambiguous => Ok(by_type),
        (None, None) => Err(Skip::NoAlgorithm),
    }
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
        let set = parse_set(&text, Some(JwtAlgorithm::Es256)).unwrap();
        assert_eq!(set.keys.keys().collect::<Vec<_>>(), vec!["k1"]);
        assert!(parse_set(&text, Some(JwtAlgorithm::EdDsa))
            .unwrap()
            .keys
            .is_empty());
        assert!(parse_set(&text, Some(JwtAlgorithm::Rs256))
            .unwrap()
            .keys
            .is_empty());
        assert!(parse_set("{}", Some(JwtAlgorithm::Es256)).is_err());
    }

    fn jwk(value: serde_json::Value) -> Jwk {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn without_a_pinned_algorithm_each_key_is_for_the_one_it_declares_or_its_type_fixes() {
        let (_, ec) = ec_jwk("k1");
        assert_eq!(
            algorithm_of(&jwk(ec.clone()), None),
            Ok(JwtAlgorithm::Es256)
        );
        // P-256 and Ed25519 admit one algorithm each: no alg needed.
        let mut bare = ec.clone();
        bare.as_object_mut().unwrap().remove("alg");
        assert_eq!(
            algorithm_of(&jwk(bare.clone()), None),
            Ok(JwtAlgorithm::Es256)
        );
        let ed = json!({"kty": "OKP", "crv": "Ed25519", "kid": "k2",
            "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"});
        assert_eq!(algorithm_of(&jwk(ed), None), Ok(JwtAlgorithm::EdDsa));
        // An RSA key without alg could be for RS384 or PS256 as well: skipped, counted.
        let rsa = json!({"kty": "RSA", "kid": "k3", "n": "sXchDaQebHnPiGvyDOAT4saGEUetSyo9MKLOoWFsueri23bOdgWp4Dy1WlUzewbgBHod5pcM9H95GQRV3JDXboIRROSBigeC5yjU1hGzHHyXss8UDprecbAYxknTcQkhslANGRUZmdTOQ5qTRsLAt6BTYuyvVRdhS8exSZEy_c4gs_7svlJJQ4H9_NxsiIoLwAEk7-Q3UXERGYw_75IDrGA84-lA_-Ct4eTlXHBIY2EaV7t7LjJaynVJCpkv4LKjTTAumiGUIuQhrNhZLuF_RJLqHpM2kgWFLU7-VTdL1VbC2tejvcI2BlMkEpk1BzBZI0KQB0GaDWFLN-aEAw3vRw", "e": "AQAB"});
        assert_eq!(
            algorithm_of(&jwk(rsa.clone()), None),
            Err(Skip::NoAlgorithm)
        );
        let mut rs256 = rsa.clone();
        rs256["alg"] = json!("RS256");
        assert_eq!(algorithm_of(&jwk(rs256), None), Ok(JwtAlgorithm::Rs256));
        // Pinned, the RSA key is taken for RS256 as before.
        assert_eq!(
            algorithm_of(&jwk(rsa.clone()), Some(JwtAlgorithm::Rs256)),
            Ok(JwtAlgorithm::Rs256)
        );
        // A declared alg must fit the key's type, and be one the relay takes.
        let mut liar = ec.clone();
        liar["alg"] = json!("RS256");
        assert_eq!(algorithm_of(&jwk(liar), None), Err(Skip::Unusable));
        let mut ps = rsa.clone();
        ps["alg"] = json!("PS256");
        assert_eq!(algorithm_of(&jwk(ps), None), Err(Skip::Unusable));
        assert_eq!(
            algorithm_of(&jwk(bare), Some(JwtAlgorithm::EdDsa)),
            Err(Skip::Unusable)
        );
        let set = parse_set(&json!({"keys": [rsa]}).to_string(), None).unwrap();
        assert!(set.keys.is_empty());
        assert_eq!(set.without_alg, 1);
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
        let jwks = Jwks::load(JwksSource::File(path), Some(JwtAlgorithm::Es256), None)
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
