//! [`Dialer`]: a way to open the relay's MCP session without a WebSocket.
//!
//! The relay serves the bridge's tools itself over MCP's Streamable HTTP. Each HTTP session
//! must be one MCP client of the relay's hub with everything a `/mcp` socket gets (the
//! handshake's token check, limits, rate limits, per-user isolation, `connection_opened`,
//! consent), so rather than a second copy of that session logic the relay runs its own
//! socket session over an in-memory pair of channels, and hands the bridge's
//! [`crate::relay_client::RelayClient`] the other ends. The client then speaks the same JSON-RPC
//! frames it would send over a socket, and only the carrier differs.

use futures_util::future::BoxFuture;
use tokio::sync::mpsc;

/// Both ends of one in-memory "socket" to the relay, as the client sees them: text frames
/// (one JSON-RPC message each) in both directions. The relay closes its sender when the
/// session ends; the client closes the session by dropping `to_relay`.
pub struct FramePipe {
    pub to_relay: mpsc::Sender<String>,
    pub from_relay: mpsc::Receiver<String>,
}

/// Opens a new session with the relay each time it is called (the client calls it again after
/// a session ended, as it would reconnect a socket).
pub trait Dialer: Send + Sync {
    /// A new session, or why there is none (a message for a person).
    fn dial(&self) -> BoxFuture<'static, Result<FramePipe, String>>;
}
