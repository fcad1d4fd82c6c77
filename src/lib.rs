//! # mcp-relay
//!
//! A WebSocket JSON-RPC 2.0 relay between MCP clients and browser extensions, as described in
//! `docs/PROTOCOL.md`.
//!
//! ## Layout
//!
//! Follow a forwarded request by file name: socket in → frame parsed → session decides → hub
//! routes → peer session writes.
//!
//! - [`server`]: the listener. HTTP routes (`/extension`, `/mcp`, `/healthz`, `/metrics`), TLS,
//!   the `Origin` check, socket admission, the request-timeout sweeper and graceful shutdown.
//! - [`transport`]: every TCP connection from accept to close: TCP_NODELAY, a read buffer that
//!   exists only while data flows, the pools of connections not yet upgraded or authenticated
//!   (header deadline, caps, the oldest evicted first), the file-descriptor reserve, and the
//!   read budget of a socket that has not authenticated.
//! - [`peer`]: one socket's outgoing side: a send queue bounded in bytes, its writer task, the
//!   keepalive, and the reader both sessions share.
//! - [`frame`]: the JSON-RPC frame model. Parses only the envelope; payloads stay raw JSON so
//!   ids are restored byte for byte and large results are never re-parsed.
//! - [`extension_session`]: one extension socket: `authenticate` (with its own random id, and
//!   answers that arrive on another socket of the same browser), then answers and
//!   notifications from the browser, until the socket or its token ends.
//! - [`mcp_session`]: one MCP client socket: handshake, control methods (in its `control`
//!   file: `mcp_handshake`, `list_extensions`, `connect`, `disconnect`), forwarding.
//! - [`state`]: what every session shares (configuration, verifier, hub, metrics, shutdown,
//!   pending `authenticate` requests); it imports no session.
//! - [`hub`]: live state and routing behind the [`hub::Hub`] trait: extensions, connections,
//!   pending requests, id mapping, notifications.
//! - [`cluster`]: `serve --cluster`: several relay nodes joined through NATS; presence,
//!   cross-node connections and node failure, behind the same [`hub::Hub`] trait.
//! - [`auth`]: JWT verification with a pinned algorithm, and token minting.
//! - [`limits`]: the socket cap and per-connection rate limit.
//! - [`redact`]: what a log line may contain of what clients send (escaped, clipped, never a
//!   token).
//! - [`metrics`]: Prometheus counters and gauges.
//! - [`config`]: every `serve` flag and its `MCP_RELAY_*` variable.
//! - [`certs`]: a development CA and localhost certificate for trying wss.
//!
//! ## Beside the relay (`crates/`)
//!
//! The same `mcp-relay` binary also carries two programs that reach the relay only over the
//! wire, each a crate of its own behind a cargo feature of this package (both on by default;
//! `--no-default-features` builds the relay alone):
//!
//! - `crates/bridge` (`mcp-relay bridge`, feature `bridge`): an MCP server over stdio that
//!   drives a browser through the relay's `/mcp` endpoint (for Claude Desktop, Cursor, …).
//! - `crates/bench` (`mcp-relay bench`, feature `bench`): the load generator and JSON-free
//!   baseline forwarder behind `docs/BENCHMARKS.md`.
//! - `crates/wire`: what the relay shares with both: error codes ([`frame::code`]), token
//!   minting ([`auth::mint_hs256`]), `30s`/`32MiB` parsers ([`config::parse_duration`]) and
//!   the chunked socket reader under [`transport::BufferedIo`]. Re-exported here from their
//!   old paths.
//! - `crates/test-support`: what the tests share with the bench (the skip rule, a
//!   `nats-server` launcher).

pub mod auth;
pub mod certs;
pub mod cluster;
pub mod config;
pub mod extension_session;
pub mod frame;
pub mod hub;
pub mod limits;
pub mod mcp_session;
pub mod metrics;
pub mod peer;
pub mod protocol;
pub mod redact;
pub mod server;
pub mod state;
pub mod transport;
