//! # mcp-relay
//!
//! A WebSocket JSON-RPC 2.0 relay between MCP clients and browser extensions, as described in
//! `docs/PROTOCOL.md`.
//!
//! ## Layout
//!
//! Follow a frame by file name. One forwarded request: [`net::transport`] accepts the TCP
//! connection → [`server`] upgrades it on `/mcp` → [`net::peer`]'s reader yields its text →
//! [`frame`] parses the envelope → [`session::mcp`] decides it is not a control method →
//! [`routing::hub`] rewrites the id and queues it on the extension's peer (or, clustered, hands
//! it to [`routing::cluster`] for another node) → the extension's answer comes in through
//! [`session::extension`] → the hub restores the id → the client's peer writes it.
//! `docs/ARCHITECTURE.md` draws this, an extension dropping and an HTTP MCP call, file by file.
//!
//! The folders are the relay's parts:
//! - [`net`]: every TCP connection from accept to close, one socket's send queue and reader,
//!   the socket cap and rate limit, the `Origin` check, a development certificate.
//! - [`session`]: one session per kind of client, each with `run(self)` and a guard that leaves
//!   the hub on drop: an MCP client's socket ([`session::mcp`]), an extension's
//!   ([`session::extension`]) and, with feature `http-mcp`, MCP over Streamable HTTP
//!   (`session::http`, its SSE events in `session::http_events`).
//! - [`routing`]: the one routing core ([`routing::hub`], synchronous, unit-tested without
//!   sockets) and the NATS link between nodes ([`routing::cluster`]).
//! - [`auth`]: JWT verification with a pinned algorithm, and its keys from a JWKS.
//! - [`operator`]: the operator's wing (docs/ADMIN.md): the store, the access mirror, the audit
//!   trail, the admin API and its CLI, the dashboard. The core reaches it only through two
//!   seams, [`state::Gate`] and [`routing::hub::AuditTrail`], which [`server`] fills when it
//!   builds the relay; the wing reaches the core through [`operator::Operator`].
//!
//! At the top: [`server`] builds the relay (routes, TLS, admission, sweepers, shutdown) and is
//! imported by none; [`state`] is what every session shares; [`config`] every `serve` flag;
//! [`frame`] the JSON-RPC frame model (only the envelope is parsed, so ids are restored byte
//! for byte); [`protocol`] every notification and error the relay itself sends; [`metrics`],
//! [`redact`] (what a log line may hold), [`text`] (the one UTF-8 cut) and `http_client`.
//! `tests/it/architecture.rs` fails on a cycle between modules at any level.
//!
//! ## Beside the relay (`crates/`)
//!
//! The same `mcp-relay` binary also carries two programs that reach the relay only over the
//! wire, each a crate of its own behind a cargo feature of this package (both on by default;
//! `--no-default-features --features http-mcp`, what the Dockerfile builds, is the relay with
//! its HTTP MCP endpoint, admin API and dashboard; `--no-default-features` alone, the relay
//! without the HTTP MCP endpoint):
//!
//! - `crates/bridge` (`mcp-relay bridge`, feature `bridge`): an MCP server over stdio that
//!   drives a browser through the relay's `/mcp` endpoint (for Claude Desktop, Cursor, …). Its
//!   tool server is also what `mcp_http` serves (feature `http-mcp`, implied by `bridge`).
//! - `crates/bench` (`mcp-relay bench`, feature `bench`): the load generator and JSON-free
//!   baseline forwarder behind `docs/BENCHMARKS.md`.
//! - `crates/wire`: what the relay shares with both: error codes ([`frame::code`]), token
//!   minting ([`auth::mint_hs256`]), `30s`/`32MiB` parsers ([`config::parse_duration`]) and
//!   the chunked socket reader under [`net::transport::BufferedIo`]. Re-exported here from their
//!   old paths.
//! - `crates/test-support`: what the tests share with the bench (the skip rule, a
//!   `nats-server` launcher).

pub mod auth;
pub mod config;
pub mod frame;
pub(crate) mod http_client;
pub mod metrics;
pub mod net;
pub mod operator;
pub mod protocol;
pub mod redact;
pub mod routing;
pub mod server;
pub mod session;
pub mod state;
pub mod text;
