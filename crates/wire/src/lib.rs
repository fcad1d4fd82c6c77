//! # mcp-relay-wire
//!
//! The few facts that the relay and the programs beside it (`mcp-relay bridge`, `mcp-relay
//! bench`) must agree on. They live in a crate of their own because the bridge reaches the
//! relay only over the wire and may not depend on the relay crate, and because the `mcp-relay`
//! binary depends on the bench, so the bench cannot depend on the relay library either (cargo
//! forbids that cycle). The relay re-exports each item from its old path, so relay code reads
//! as before.
//!
//! ## Layout
//!
//! - [`code`]: the JSON-RPC error codes the relay produces; the bridge turns them into advice.
//! - [`token`]: minting access tokens (`mcp-relay token`, `--dev`, the bench's clients).
//!   Verifying them stays in the relay.
//! - [`units`]: `30s` and `32MiB` on the command line, parsed alike by every subcommand.
//! - [`io`]: the buffered byte stream under the relay's sockets, shared with the bench's
//!   baseline forwarder so the baseline does the same I/O as the relay.

#![warn(unreachable_pub)]

pub mod code;
pub mod io;
pub mod token;
pub mod units;
