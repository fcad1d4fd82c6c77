//! The audit trail as the routing core sees it: a seam. The hub and the sessions record what
//! happened through [`AuditTrail`]; the operator's wing (`crate::operator::audit`) implements
//! it and is registered when the relay is built, so the core never imports the operator's side
//! and runs the same with no trail at all (`--audit-retention 0`).

use std::sync::Arc;
use std::time::Duration;

/// Longest method name recorded (longer ones are cut at a character boundary): a method name is
/// whatever a client sends, and the trail must not keep megabytes of it per request.
pub const MAX_METHOD_BYTES: usize = 128;

/// Who is at each end of a connection, built once per connection and shared by every event of
/// its requests.
#[derive(Debug)]
pub struct ConnTag {
    pub connection_id: String,
    pub user_id: String,
    pub mcp_client_id: String,
    pub client_name: Option<String>,
    pub extension_id: String,
}

/// A control action (a handshake, a connect, a browser's first appearance) as the trail keeps
/// it: who, on which connection and browser, with what result. No payloads.
#[derive(Debug, Clone, Copy)]
pub struct Control<'a> {
    /// `connect`, `disconnect`, `handshake`, `browser_seen`, …
    pub kind: &'a str,
    pub user_id: &'a str,
    pub mcp_client_id: Option<&'a str>,
    pub connection_id: Option<&'a str>,
    pub extension_id: Option<&'a str>,
    /// 0 for success, else the JSON-RPC error code the client got.
    pub code: i64,
}

/// Where the core records requests and control actions. Implementations never block: the
/// calls are on the forwarding path.
pub trait AuditTrail: Send + Sync {
    /// One forwarded request's outcome (`code` 0 for a result).
    fn request(&self, conn: &Arc<ConnTag>, method: Box<str>, code: i64, duration: Duration);
    /// One request refused before it reached the browser; `reason` names the check.
    fn refused(&self, conn: &Arc<ConnTag>, method: &str, code: i64, reason: &'static str);
    /// A control action, with an optional short note.
    fn control(&self, action: Control<'_>, detail: Option<String>);
    /// Requests counted by [`AuditTrail::refused`] so far.
    fn refusals(&self) -> u64;
    /// Events dropped because the trail fell behind.
    fn dropped(&self) -> u64;
}
