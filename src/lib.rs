//! # mcp-relay
//!
//! A WebSocket JSON-RPC 2.0 relay between MCP clients and browser extensions, as described in
//! `docs/PROTOCOL.md`.
//!
//! ## Layout
//!
//! Follow a frame by file name. One forwarded request: [`transport`] accepts the TCP connection
//! → [`server`] upgrades it on `/mcp` → [`peer`]'s reader yields its text → [`frame`] parses the
//! envelope → [`mcp_session`] decides it is not a control method → [`hub`] rewrites the id and
//! queues it on the extension's [`peer`] (or, clustered, hands it to [`cluster`] for another
//! node) → the extension's answer comes in through [`extension_session`] → [`hub`] restores the
//! id → the client's [`peer`] writes it. `docs/ARCHITECTURE.md` draws this and an extension
//! dropping, file by file.
//!
//! Sockets:
//! - [`server`]: the listener. HTTP routes (`/extension`, `/mcp`, `/healthz`, `/metrics`), TLS,
//!   the `Origin` check, socket admission, the request-timeout sweeper and graceful shutdown.
//!   It starts one session per socket and is imported by none.
//! - [`transport`]: every TCP connection from accept to close: TCP_NODELAY, a read buffer that
//!   exists only while data flows, the pools of connections not yet upgraded or authenticated
//!   (header deadline, caps, the oldest evicted first), the file-descriptor reserve, and the
//!   read budget of a socket that has not authenticated.
//! - [`peer`]: one socket's two halves: the send queue bounded in bytes with its writer task
//!   and keepalive, and the reader (`next_text()`) both sessions use; the goodbye at shutdown.
//! - [`frame`]: the JSON-RPC frame model. Parses only the envelope; payloads stay raw JSON so
//!   ids are restored byte for byte and large results are never re-parsed.
//!
//! Sessions (one struct per socket kind, each with `run(self)`, leaving the hub through a guard
//! that acts on drop, so a panic cannot leak a registration):
//! - [`mcp_session`]: one MCP client socket (`McpSession`): handshake, control methods (in its
//!   `control` file: `mcp_handshake`, `list_extensions`, `connect`, `disconnect`), forwarding.
//! - [`extension_session`]: one extension socket (`ExtensionSession`): `authenticate` (with its
//!   own random id, and answers that arrive on another socket of the same browser), then
//!   answers and notifications from the browser, until the socket or its token ends.
//! - `mcp_http` (feature `http-mcp`): MCP over Streamable HTTP on `/mcp` for hosts that connect
//!   by URL: bearer auth, sessions bound to their user, the bridge's tools over an in-memory
//!   `McpSession`; `mcp_events` keeps its SSE events for `Last-Event-ID` resumption.
//! - [`state`]: what every session shares (configuration, verifier, hub, metrics, shutdown,
//!   pending `authenticate` requests); it imports no session.
//!
//! Routing:
//! - [`hub`]: the one routing core: extensions, connections (each end here or on another node),
//!   pending requests, id mapping, and how a connection ends (`hub::Ending`). Synchronous: it
//!   never awaits, so it is unit-tested with detached peers and no sockets.
//! - [`cluster`]: `serve --cluster`: presence of each node's extensions and the NATS transport
//!   between nodes. The hub owns it and routes through it; it reaches the hub only through its
//!   `Routing` trait.
//! - [`protocol`]: every notification the relay itself sends and `protocol::RelayError`, every
//!   error it answers with (code and message).
//!
//! The operator's side (docs/ADMIN.md):
//! - [`store`]: durable state (`--state`): browsers, revocations, the audit trail, the dev
//!   secret; SQLite by default, memory for tests, JetStream buckets shared by cluster nodes
//!   (`--state nats`).
//! - [`access`]: the in-memory mirror of approvals and revocations the sessions consult, and
//!   the live sockets a revocation closes.
//! - [`audit`]: the bounded channel and batching writer behind the audit trail.
//! - [`admin`]: the admin API (`/api/v1/…`); [`admin_cli`]: `mcp-relay admin`, its client.
//!
//! Around them:
//! - [`auth`]: JWT verification with a pinned algorithm (minting lives in `crates/wire`);
//!   [`jwks`]: its keys from an identity provider's JWKS (`--jwt-jwks`), reloaded as they
//!   rotate; `state::RelayState::verify` adds the revocation check every door makes.
//! - `http_client`: the small HTTP/1.1 client behind `mcp-relay admin` and the JWKS fetch.
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
//!   the chunked socket reader under [`transport::BufferedIo`]. Re-exported here from their
//!   old paths.
//! - `crates/test-support`: what the tests share with the bench (the skip rule, a
//!   `nats-server` launcher).

pub mod access;
pub mod admin;
pub mod admin_cli;
pub mod audit;
pub mod auth;
pub mod certs;
pub mod cluster;
pub mod config;
pub mod dashboard;
pub mod extension_session;
pub mod frame;
pub(crate) mod http_client;
pub mod hub;
pub mod jwks;
pub mod limits;
#[cfg(feature = "http-mcp")]
pub mod mcp_events;
#[cfg(feature = "http-mcp")]
pub mod mcp_http;
pub mod mcp_session;
pub mod metrics;
pub mod peer;
pub mod protocol;
pub mod redact;
pub mod server;
pub mod state;
pub mod store;
pub mod transport;
