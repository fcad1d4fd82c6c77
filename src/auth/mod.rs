//! Access tokens: verifying the JWTs that extensions and MCP clients present, and minting them for
//! self-hosters (`mcp-relay token`) and for `--dev` mode.
//!
//! The accepted algorithm is pinned by configuration (or, with a JWKS and no `--jwt-alg`, by
//! the key the token's `kid` names), never taken from the token's header: a token signed with
//! anything else (including `alg: none`, which the JWT library cannot even
//! represent) is refused. `exp` is required and must be a number; `nbf`, when present, must be a
//! number too. A string `exp` is refused rather than ignored, because a verifier that skips a
//! claim it cannot read would accept a token that never expires.

mod algorithm;
pub mod jwks;

pub use algorithm::JwtAlgorithm;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use std::sync::Arc;

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{DecodingKey, EncodingKey, Header, Validation};
use serde::Deserialize;

// Minting (the claims, HS256, the role) is shared with the bench, which mints its clients' tokens.
pub use mcp_relay_wire::token::{mint_hs256, now_secs, MintClaims, Role};

/// How far ahead of the relay's clock a token's `iat` may be (clock skew between the issuer and
/// the relay); beyond it the token is refused.
pub const MAX_IAT_SKEW: Duration = Duration::from_secs(60);

/// The claims the relay reads. Typed fields make a mistyped claim a verification failure.
#[derive(Debug, Clone, Deserialize)]
struct WireClaims {
    #[serde(default)]
    sub: Option<String>,
    #[serde(default)]
    user_id: Option<String>,
    exp: u64,
    #[serde(default)]
    #[allow(dead_code)] // checked by the JWT library; typed here so a string `nbf` is refused
    nbf: Option<u64>,
    #[serde(default)]
    role: Option<String>,
    #[serde(default)]
    connection_url: Option<String>,
    /// The token's own id: what `revoke-token` names.
    #[serde(default)]
    jti: Option<String>,
    /// When it was issued: what `revoke-user --issued-before` compares.
    #[serde(default)]
    iat: Option<u64>,
}

/// A verified identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The user every isolation decision is keyed on (`sub`, else `user_id`).
    pub user_id: String,
    pub role: Option<Role>,
    pub connection_url: Option<String>,
    /// Seconds since the epoch.
    pub expires_at: u64,
    /// The token's `jti`, when it has one (`mcp-relay token` always sets one).
    pub jti: Option<String>,
    /// The token's `iat` (seconds since the epoch), when it has one.
    pub issued_at: Option<u64>,
}

impl Identity {
    /// Time left until `exp` (zero once past), capped at ten years so that a far-future `exp`
    /// still makes a valid timer deadline.
    pub fn expires_in(&self) -> Duration {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs();
        Duration::from_secs(self.expires_at.saturating_sub(now).min(10 * 365 * 86_400))
    }
}

/// Why a token was refused, phrased for the person who has to fix it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    #[error("missing access token")]
    Missing,
    #[error("token expired")]
    Expired,
    #[error("token not yet valid (nbf is in the future)")]
    NotYetValid,
    /// `iat` more than [`MAX_IAT_SKEW`] ahead of the relay's clock: a token "issued in the
    /// future" would pass any cutoff set before that moment.
    #[error("token issued in the future (iat is more than {} s ahead of the relay's clock)", MAX_IAT_SKEW.as_secs())]
    IssuedInTheFuture,
    #[error("invalid signature")]
    BadSignature,
    #[error("token algorithm not accepted (this relay accepts {0} only)")]
    WrongAlgorithm(&'static str),
    /// With `--jwt-jwks` and no `--jwt-alg`: the header's `alg` is not the one of the key its
    /// `kid` names.
    #[error("token algorithm not accepted (its signing key is for {0} only)")]
    WrongAlgorithmForKey(&'static str),
    #[error("token has no exp claim")]
    MissingExp,
    #[error("malformed claims: {0}")]
    BadClaims(String),
    #[error("token has neither sub nor user_id")]
    NoUser,
    #[error("wrong issuer")]
    WrongIssuer,
    #[error("wrong audience")]
    WrongAudience,
    #[error("token role is {found:?}, this endpoint needs {needed:?}")]
    WrongRole { found: String, needed: &'static str },
    #[error("malformed token")]
    Malformed,
    #[error("token too large (the limit is {MAX_TOKEN_BYTES} bytes)")]
    TooLarge,
    /// Revoked out of band (`mcp-relay admin revoke-…`, the admin API): the same word closes
    /// live sockets (1008 "revoked").
    #[error("revoked")]
    Revoked,
    /// With `--jwt-jwks`: the token's header names no key.
    #[error("token has no kid: this relay takes its keys from a JWKS and needs to know which")]
    NoKeyId,
    /// With `--jwt-jwks`: a key the relay does not have (yet); it reloads the set soon.
    #[error(
        "unknown signing key {0:?}: the relay is reloading its JWKS, try again in a few seconds"
    )]
    UnknownKey(String),
}

/// The largest token the relay will look at. Real tokens are a few hundred bytes; checking the
/// length before any base64 or JSON decoding means a hostile header or payload costs nothing
/// (a 30 MiB "header" used to be decoded, and parsed, before its signature was checked).
pub const MAX_TOKEN_BYTES: usize = 8 * 1024;

/// Where a verifier's key comes from.
#[derive(Clone)]
enum Keys {
    /// One key: the shared secret or the `--jwt-public-key`.
    Fixed(DecodingKey),
    /// The key the token's `kid` names in the `--jwt-jwks` set.
    Jwks(Arc<crate::auth::jwks::Jwks>),
}

/// What every token must satisfy, signed with `alg` and nothing else.
fn validation(alg: JwtAlgorithm) -> Validation {
    let mut validation = Validation::new(alg.to_jwt());
    validation.set_required_spec_claims(&["exp"]);
    validation.validate_exp = true;
    validation.validate_nbf = true;
    validation.validate_aud = false;
    validation.leeway = 30;
    validation
}

/// Verifies tokens with one pinned algorithm and key (or set of keys), or, with a JWKS and no
/// pinned algorithm, each with the algorithm of the key its `kid` names.
#[derive(Clone)]
pub struct Verifier {
    keys: Keys,
    /// One validation per algorithm a key may be for (one when pinned), each accepting that
    /// algorithm only.
    validations: Vec<(JwtAlgorithm, Validation)>,
    /// The pinned algorithm's name, or `None` when each key brings its own.
    alg_name: Option<&'static str>,
}

impl std::fmt::Debug for Verifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Verifier")
            .field("alg", &self.alg_name.unwrap_or("each JWKS key's own"))
            .finish_non_exhaustive()
    }
}

impl Verifier {
    /// HS256 with a shared secret.
    pub fn hs256(secret: &[u8]) -> Self {
        Self::new(
            JwtAlgorithm::Hs256,
            Keys::Fixed(DecodingKey::from_secret(secret)),
        )
    }

    /// An asymmetric algorithm with a PEM public key.
    pub fn from_public_pem(alg: JwtAlgorithm, pem: &[u8]) -> anyhow::Result<Self> {
        let key = match alg {
            JwtAlgorithm::Hs256 => anyhow::bail!("HS256 uses a shared secret, not a public key"),
            JwtAlgorithm::Rs256 => DecodingKey::from_rsa_pem(pem)?,
            JwtAlgorithm::Es256 => DecodingKey::from_ec_pem(pem)?,
            JwtAlgorithm::EdDsa => DecodingKey::from_ed_pem(pem)?,
        };
        Ok(Self::new(alg, Keys::Fixed(key)))
    }

    /// The keys of a JWKS, chosen by each token's `kid`: with the set's pinned algorithm
    /// (`--jwt-alg`), else with the algorithm of the key the token names.
    pub fn from_jwks(jwks: Arc<crate::auth::jwks::Jwks>) -> Self {
        match jwks.pinned() {
            Some(alg) => Self::new(alg, Keys::Jwks(jwks)),
            None => Verifier {
                keys: Keys::Jwks(jwks),
                validations: [
                    JwtAlgorithm::Rs256,
                    JwtAlgorithm::Es256,
                    JwtAlgorithm::EdDsa,
                ]
                .into_iter()
                .map(|alg| (alg, validation(alg)))
                .collect(),
                alg_name: None,
            },
        }
    }

    /// The JWKS the keys come from, if they do (its refresher runs beside the relay).
    pub fn jwks(&self) -> Option<&Arc<crate::auth::jwks::Jwks>> {
        match &self.keys {
            Keys::Jwks(jwks) => Some(jwks),
            Keys::Fixed(_) => None,
        }
    }

    fn new(alg: JwtAlgorithm, keys: Keys) -> Self {
        Verifier {
            keys,
            validations: vec![(alg, validation(alg))],
            alg_name: Some(alg.name()),
        }
    }

    /// Requires `iss` to equal `issuer`.
    pub fn with_issuer(mut self, issuer: &str) -> Self {
        for (_, validation) in &mut self.validations {
            validation.set_issuer(&[issuer]);
            // jsonwebtoken checks `iss` only when the token has one: a pinned issuer must be
            // present.
            validation.required_spec_claims.insert("iss".into());
        }
        self
    }

    /// Requires `aud` to contain `audience`.
    pub fn with_audience(mut self, audience: &str) -> Self {
        for (_, validation) in &mut self.validations {
            validation.set_audience(&[audience]);
            validation.validate_aud = true;
            // Likewise `aud`: a token minted for no audience is not a token for this relay.
            validation.required_spec_claims.insert("aud".into());
        }
        self
    }

    /// Verifies `token` for use on the endpoint of `needed`.
    pub fn verify(&self, token: &str, needed: Role) -> Result<Identity, AuthError> {
        let identity = self.verify_any(token, needed.as_str())?;
        if let Some(role) = identity.role {
            if role != needed {
                return Err(AuthError::WrongRole {
                    found: role.as_str().to_owned(),
                    needed: needed.as_str(),
                });
            }
        }
        Ok(identity)
    }

    /// Verifies `token` whatever its role (the admin API decides what each role may do);
    /// `needed` only words the error for an unknown role.
    pub fn verify_any(&self, token: &str, needed: &'static str) -> Result<Identity, AuthError> {
        if token.trim().is_empty() {
            return Err(AuthError::Missing);
        }
        if token.len() > MAX_TOKEN_BYTES {
            return Err(AuthError::TooLarge);
        }
        let found;
        let (key, alg) = match &self.keys {
            Keys::Fixed(key) => (key, self.validations[0].0),
            Keys::Jwks(jwks) => {
                let header = jsonwebtoken::decode_header(token)
                    .map_err(|e| self.describe(e.into_kind(), None))?;
                let kid = header.kid.ok_or(AuthError::NoKeyId)?;
                found = jwks.key(&kid).ok_or_else(|| {
                    jwks.ask_reload();
                    AuthError::UnknownKey(kid.chars().take(64).collect())
                })?;
                (&found.key, found.alg)
            }
        };
        // The key's algorithm decides which validation (accepting that one algorithm) applies;
        // the header's `alg` only has to agree with it.
        let validation = self
            .validations
            .iter()
            .find(|(a, _)| *a == alg)
            .map(|(_, v)| v)
            .ok_or_else(|| self.wrong_algorithm(alg))?;
        let data = jsonwebtoken::decode::<WireClaims>(token, key, validation)
            .map_err(|e| self.describe(e.into_kind(), Some(alg)))?;
        let claims = data.claims;
        let user_id = claims
            .sub
            .filter(|s| !s.is_empty())
            .or(claims.user_id.filter(|s| !s.is_empty()))
            .ok_or(AuthError::NoUser)?;
        let role = match claims.role.as_deref() {
            None => None,
            Some("extension") => Some(Role::Extension),
            Some("mcp") => Some(Role::Mcp),
            Some("admin") => Some(Role::Admin),
            Some(other) => {
                return Err(AuthError::WrongRole {
                    found: other.to_owned(),
                    needed,
                })
            }
        };
        if claims
            .iat
            .is_some_and(|iat| iat > now_secs().saturating_add(MAX_IAT_SKEW.as_secs()))
        {
            return Err(AuthError::IssuedInTheFuture);
        }
        Ok(Identity {
            user_id,
            role,
            connection_url: claims.connection_url,
            expires_at: claims.exp,
            jti: claims.jti.filter(|j| !j.is_empty()),
            issued_at: claims.iat,
        })
    }

    /// A token whose algorithm is not `alg`, the one its key is for.
    fn wrong_algorithm(&self, alg: JwtAlgorithm) -> AuthError {
        match self.alg_name {
            Some(pinned) => AuthError::WrongAlgorithm(pinned),
            None => AuthError::WrongAlgorithmForKey(alg.name()),
        }
    }

    fn describe(&self, kind: ErrorKind, alg: Option<JwtAlgorithm>) -> AuthError {
        match kind {
            ErrorKind::ExpiredSignature => AuthError::Expired,
            ErrorKind::ImmatureSignature => AuthError::NotYetValid,
            ErrorKind::InvalidSignature => AuthError::BadSignature,
            ErrorKind::InvalidAlgorithm
            | ErrorKind::InvalidAlgorithmName
            | ErrorKind::MissingAlgorithm => match alg {
                Some(alg) => self.wrong_algorithm(alg),
                // The header itself names an algorithm no key is for (`none`, HS256, …).
                None => AuthError::WrongAlgorithm(self.alg_name.unwrap_or("RS256, ES256 or EdDSA")),
            },
            ErrorKind::MissingRequiredClaim(claim) if claim == "exp" => AuthError::MissingExp,
            ErrorKind::MissingRequiredClaim(claim) => {
                AuthError::BadClaims(format!("missing {claim}"))
            }
            ErrorKind::InvalidClaimFormat(claim) => {
                AuthError::BadClaims(format!("{claim} has the wrong type"))
            }
            ErrorKind::InvalidIssuer => AuthError::WrongIssuer,
            ErrorKind::InvalidAudience => AuthError::WrongAudience,
            ErrorKind::Json(e) => {
                let text = e.to_string();
                if text.contains("missing field `exp`") {
                    AuthError::MissingExp
                } else {
                    // serde's message can quote the token's own text; keep it short.
                    AuthError::BadClaims(crate::redact::clip(&text, 160).into_owned())
                }
            }
            _ => AuthError::Malformed,
        }
    }
}

/// Signs a token with a PEM private key for an asymmetric algorithm.
pub fn mint_with_private_pem(
    alg: JwtAlgorithm,
    pem: &[u8],
    claims: &MintClaims,
) -> anyhow::Result<String> {
    let key = match alg {
        JwtAlgorithm::Hs256 => anyhow::bail!("HS256 uses --secret, not a private key"),
        JwtAlgorithm::Rs256 => EncodingKey::from_rsa_pem(pem)?,
        JwtAlgorithm::Es256 => EncodingKey::from_ec_pem(pem)?,
        JwtAlgorithm::EdDsa => EncodingKey::from_ed_pem(pem)?,
    };
    Ok(jsonwebtoken::encode(
        &Header::new(alg.to_jwt()),
        claims,
        &key,
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;
    use jsonwebtoken::Algorithm;

    const SECRET: &[u8] = b"test-secret-test-secret-test-secret";

    fn unsigned(header: &str, claims: &serde_json::Value) -> String {
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        format!("{}.{}.", b64.encode(header), b64.encode(claims.to_string()))
    }

    fn hs256_raw(claims: &serde_json::Value) -> String {
        jsonwebtoken::encode(
            &Header::new(Algorithm::HS256),
            claims,
            &EncodingKey::from_secret(SECRET),
        )
        .unwrap()
    }

    #[test]
    fn valid_token_yields_user_and_role() {
        let token = mint_hs256(
            SECRET,
            &MintClaims::new("alice", Some(Role::Mcp), Duration::from_secs(60)),
        );
        let id = Verifier::hs256(SECRET).verify(&token, Role::Mcp).unwrap();
        assert_eq!(id.user_id, "alice");
        assert_eq!(id.role, Some(Role::Mcp));
    }

    #[test]
    fn user_id_claim_is_accepted_when_sub_is_absent() {
        let token = hs256_raw(&serde_json::json!({"user_id": "bob", "exp": now_secs() + 60}));
        let id = Verifier::hs256(SECRET).verify(&token, Role::Mcp).unwrap();
        assert_eq!(id.user_id, "bob");
    }

    #[test]
    fn alg_none_is_refused() {
        let token = unsigned(
            r#"{"alg":"none","typ":"JWT"}"#,
            &serde_json::json!({"sub": "eve", "exp": now_secs() + 60}),
        );
        assert!(Verifier::hs256(SECRET).verify(&token, Role::Mcp).is_err());
    }

    #[test]
    fn string_exp_and_missing_exp_are_refused() {
        let token = hs256_raw(&serde_json::json!({"sub": "eve", "exp": "99999999999"}));
        assert!(Verifier::hs256(SECRET).verify(&token, Role::Mcp).is_err());
        let token = hs256_raw(&serde_json::json!({"sub": "eve"}));
        assert_eq!(
            Verifier::hs256(SECRET).verify(&token, Role::Mcp),
            Err(AuthError::MissingExp)
        );
        let token =
            hs256_raw(&serde_json::json!({"sub": "eve", "exp": now_secs() + 60, "nbf": "0"}));
        assert!(Verifier::hs256(SECRET).verify(&token, Role::Mcp).is_err());
    }

    #[test]
    fn expired_and_wrongly_signed_tokens_are_refused() {
        let token = hs256_raw(&serde_json::json!({"sub": "eve", "exp": now_secs() - 3600}));
        assert_eq!(
            Verifier::hs256(SECRET).verify(&token, Role::Mcp),
            Err(AuthError::Expired)
        );
        let token = mint_hs256(
            b"another-secret",
            &MintClaims::new("eve", None, Duration::from_secs(60)),
        );
        assert_eq!(
            Verifier::hs256(SECRET).verify(&token, Role::Mcp),
            Err(AuthError::BadSignature)
        );
    }

    #[test]
    fn role_mismatch_is_refused() {
        let token = mint_hs256(
            SECRET,
            &MintClaims::new("alice", Some(Role::Extension), Duration::from_secs(60)),
        );
        assert!(matches!(
            Verifier::hs256(SECRET).verify(&token, Role::Mcp),
            Err(AuthError::WrongRole { .. })
        ));
    }

    #[test]
    fn issuer_and_audience_are_checked_when_configured() {
        let mut claims = MintClaims::new("alice", None, Duration::from_secs(60));
        claims.iss = Some("me".into());
        claims.aud = Some("relay".into());
        let token = mint_hs256(SECRET, &claims);
        let v = Verifier::hs256(SECRET)
            .with_issuer("me")
            .with_audience("relay");
        assert!(v.verify(&token, Role::Mcp).is_ok());
        let v = Verifier::hs256(SECRET).with_issuer("other");
        assert_eq!(v.verify(&token, Role::Mcp), Err(AuthError::WrongIssuer));
        let v = Verifier::hs256(SECRET).with_audience("other");
        assert_eq!(v.verify(&token, Role::Mcp), Err(AuthError::WrongAudience));
    }

    #[test]
    fn a_pinned_issuer_or_audience_must_be_present_in_the_token() {
        let token = mint_hs256(
            SECRET,
            &MintClaims::new("alice", None, Duration::from_secs(60)),
        );
        assert!(Verifier::hs256(SECRET)
            .with_audience("relay")
            .verify(&token, Role::Mcp)
            .is_err());
        assert!(Verifier::hs256(SECRET)
            .with_issuer("me")
            .verify(&token, Role::Mcp)
            .is_err());
        assert!(Verifier::hs256(SECRET).verify(&token, Role::Mcp).is_ok());
    }
}
