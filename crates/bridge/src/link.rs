//! [`BrowserLink`]: how the tools reach a browser, whatever carries the request.
//!
//! The one implementation is [`crate::relay_client::RelayClient`], over one of two carriers:
//! the bridge's WebSocket to the relay's `/mcp` endpoint, or, when the relay serves these tools
//! itself over MCP's Streamable HTTP ([`crate::hosted`]), an in-process session of the relay
//! that reaches the browser without a socket ([`crate::pipe`]). So the tool layer (`tools`, `gateway`, `proxy`, `resources`) knows only this interface: send a
//! command to my browser and await its answer, list and choose browsers, and say what state the
//! link is in. The browser's own notifications are the link's business (the relay client only
//! logs them: MCP has no channel for them).
//!
//! The methods return boxed futures so the tools can hold an `Arc<dyn BrowserLink>`: one box
//! per browser command is nothing next to the round trip it waits for.

use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::time::Duration;

/// A way to reach the user's browser.
pub(crate) trait BrowserLink: Send + Sync {
    /// Where the browser is reached (the relay's URL), for the server's instructions.
    fn describe(&self) -> &str;
    /// Sends an extension command to the browser, connecting to it first when needed.
    fn call<'a>(
        &'a self,
        method: &'a str,
        params: Value,
    ) -> BoxFuture<'a, Result<Value, LinkError>>;
    /// The browsers of this user that can be reached.
    fn list_browsers(&self) -> BoxFuture<'_, Result<Vec<ExtensionRow>, LinkError>>;
    /// Switches to the browser named by `wanted` (an extension id or a name).
    fn choose<'a>(&'a self, wanted: &'a str) -> BoxFuture<'a, Result<ChosenBrowser, LinkError>>;
    /// What the link knows right now, without asking anyone.
    fn status(&self) -> Status;
    /// Names the MCP host (its `clientInfo.name`, possibly empty) to the browser's owner, who
    /// decides whether this assistant may act; called once, at `initialize`. A link that has
    /// nobody to tell ignores it.
    fn introduce(&self, _client_name: &str) {}
}

/// Why a request got no result. Every message says what to do next, because it ends up in front
/// of a model (see `tools`). The codes in [`LinkError::Rpc`] are the relay's
/// (`mcp_relay_wire::code`), whichever way the browser is reached.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum LinkError {
    /// No authenticated socket, and the last attempt failed; the message says why.
    #[error("{0}")]
    Unreachable(String),
    /// There is no browser to send the command to; the message says what to do.
    #[error("{0}")]
    NoBrowser(String),
    /// The relay or the extension answered with a JSON-RPC error.
    #[error("{message}")]
    Rpc { code: i64, message: String },
    /// The browser's owner has denied this assistant (`-32010` with `data.decision` "denied"):
    /// no click is coming, so nothing waits; the message is the extension's.
    #[error("{0}")]
    Denied(String),
    /// No answer within `--request-timeout`.
    #[error("no answer from the relay within {0:?}")]
    Timeout(Duration),
    /// The socket closed while the request was in flight (the command may or may not have run).
    #[error(
        "the connection to the relay was lost before the answer arrived (the command may or may \
         not have run); the bridge is reconnecting: call the tool again in a moment"
    )]
    ConnectionLost,
}

/// One row of `list_extensions`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub(crate) struct ExtensionRow {
    pub id: String,
    pub name: String,
    #[serde(default)]
    pub connected: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// The browser the bridge uses, kept across relay reconnects and extension restarts so the
/// bridge can return to it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub(crate) struct ChosenBrowser {
    pub extension_id: String,
    pub name: String,
}

/// A snapshot of the bridge's state, for `browser_status`.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Status {
    pub relay_url: String,
    pub relay_connected: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relay_error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub browser: Option<ChosenBrowser>,
    pub browser_connected: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connection_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub browser_problem: Option<String>,
}
