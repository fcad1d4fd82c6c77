//! One session per kind of client, each owning its socket's life: an MCP client's WebSocket
//! ([`mcp`]), an extension's WebSocket ([`extension`]) and, with feature `http-mcp`, an MCP
//! host's Streamable HTTP session ([`http`], its resumable events in [`http_events`]). Each
//! reaches routing through the hub and the operator's side only through the seams in
//! [`crate::state`].

pub mod extension;
#[cfg(feature = "http-mcp")]
pub mod http;
#[cfg(feature = "http-mcp")]
pub mod http_events;
pub mod mcp;
