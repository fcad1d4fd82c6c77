//! Minting access tokens: the claims every token carries and HS256 signing.
//!
//! The relay mints them for `mcp-relay token` and `--dev`, and the bench mints them for its
//! load clients; verification (the pinned algorithm, the strict `exp`) stays in the relay's
//! `auth` module, the only place that decides whether a token is good.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde::{Deserialize, Serialize};

/// Which endpoint a token may be used on. Tokens without a `role` claim work on both.
///
/// `admin` opens neither WebSocket endpoint: it is for the admin API (`/api/v1/…`, `mcp-relay
/// admin`), where it sees and acts on every user's browsers, connections and audit events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Extension,
    Mcp,
    Admin,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Extension => "extension",
            Role::Mcp => "mcp",
            Role::Admin => "admin",
        }
    }
}

/// What `mint` puts into a token.
#[derive(Debug, Clone, Serialize)]
pub struct MintClaims {
    pub sub: String,
    pub exp: u64,
    pub iat: u64,
    /// A random id for this one token, so that it alone can be revoked (`mcp-relay admin
    /// revoke-token JTI`) without touching the user's other tokens.
    pub jti: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<Role>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connection_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iss: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aud: Option<String>,
}

impl MintClaims {
    /// Claims for `user` valid for `ttl` from now.
    pub fn new(user: &str, role: Option<Role>, ttl: Duration) -> Self {
        let now = now_secs();
        MintClaims {
            sub: user.to_owned(),
            exp: now + ttl.as_secs(),
            iat: now,
            jti: uuid::Uuid::new_v4().simple().to_string(),
            role,
            connection_url: None,
            iss: None,
            aud: None,
        }
    }
}

/// Signs an HS256 token.
pub fn mint_hs256(secret: &[u8], claims: &MintClaims) -> String {
    jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        claims,
        &EncodingKey::from_secret(secret),
    )
    .expect("HS256 signing cannot fail")
}

pub fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}
