//! The algorithms a relay can pin its tokens to: shared by the verifier and the JWKS loader,
//! which each need to name them, so neither imports the other for it.

use jsonwebtoken::Algorithm;

/// The JWT algorithms the relay can be pinned to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum JwtAlgorithm {
    #[value(name = "HS256")]
    Hs256,
    #[value(name = "RS256")]
    Rs256,
    #[value(name = "ES256")]
    Es256,
    #[value(name = "EdDSA")]
    EdDsa,
}

impl JwtAlgorithm {
    /// Its name in a JWT header and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            JwtAlgorithm::Hs256 => "HS256",
            JwtAlgorithm::Rs256 => "RS256",
            JwtAlgorithm::Es256 => "ES256",
            JwtAlgorithm::EdDsa => "EdDSA",
        }
    }

    pub(crate) fn to_jwt(self) -> Algorithm {
        match self {
            JwtAlgorithm::Hs256 => Algorithm::HS256,
            JwtAlgorithm::Rs256 => Algorithm::RS256,
            JwtAlgorithm::Es256 => Algorithm::ES256,
            JwtAlgorithm::EdDsa => Algorithm::EdDSA,
        }
    }
}
