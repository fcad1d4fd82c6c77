//! The network under both sessions: every TCP connection from accept to close
//! ([`transport`]), large incoming frames cut into fragments so no socket keeps a large read
//! buffer ([`refragment`]), one socket's two halves with its bounded send queue ([`peer`]),
//! the socket cap and per-connection rate ([`limits`]), the `Origin` check every door makes
//! ([`origin`]), and the development certificate for trying wss ([`certs`]). Nothing here
//! knows a session, the hub or the operator's side.

pub mod certs;
pub mod limits;
pub mod origin;
pub mod peer;
pub mod refragment;
pub mod transport;
