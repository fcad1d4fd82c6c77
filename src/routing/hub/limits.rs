//! The byte and count bounds the hub enforces (docs/SECURITY.md), in one place so that every
//! path that stores something a user controls checks it the same way.

use std::time::Duration;

use serde_json::value::RawValue;

use crate::config::ServeConfig;
use crate::protocol::RelayError;

/// Limits the hub enforces.
#[derive(Debug, Clone)]
pub struct HubLimits {
    pub request_timeout: Duration,
    pub max_extensions_per_user: usize,
    pub max_mcp_clients_per_user: usize,
    pub max_sockets_per_extension: usize,
    /// Extension names and versions are cut to this many bytes (`--max-name-bytes`).
    pub max_name_bytes: usize,
    /// Forwarded request ids longer than this (raw JSON) are refused (`--max-id-bytes`).
    pub max_id_bytes: usize,
    /// Pending-request bookkeeping per connection, in bytes (`--max-pending-bytes`).
    pub max_pending_bytes: usize,
    /// How long vanished extensions' MCP clients are remembered (`--reconnect-window`).
    pub reconnect_window: Duration,
    /// Bytes an extension socket's queue may hold after queuing a client's frame: the budget
    /// clients share. Below the queue's own bound (`--max-send-queue-bytes`), so the relay's own
    /// notices (`status`, `notifications/cancelled`) always fit and never overflow it.
    pub extension_queue_budget: usize,
}

impl HubLimits {
    /// The limits `serve` is configured with. The client budget on an extension's queue is
    /// three quarters of `--max-send-queue-bytes`: the last quarter is headroom for the relay's
    /// own frames to the extension.
    pub fn from_config(config: &ServeConfig) -> Self {
        HubLimits {
            request_timeout: config.request_timeout,
            max_extensions_per_user: config.max_extensions_per_user,
            max_mcp_clients_per_user: config.max_mcp_clients_per_user,
            max_sockets_per_extension: config.max_sockets_per_extension,
            max_name_bytes: config.hub.max_name_bytes,
            max_id_bytes: config.hub.max_id_bytes,
            max_pending_bytes: config.hub.max_pending_bytes,
            reconnect_window: config.hub.reconnect_window,
            extension_queue_budget: config.max_send_queue_bytes / 4 * 3,
        }
    }

    /// Refuses a forwarded request id longer than `max_id_bytes`. Pending requests keep the id
    /// twice (as sent, and mapped), on whichever node holds them: bound it before anything.
    pub fn check_id(&self, id: &RawValue) -> Result<(), RelayError> {
        if id.get().len() > self.max_id_bytes {
            return Err(RelayError::IdTooLong(self.max_id_bytes));
        }
        Ok(())
    }
}

/// What one pending request costs besides its two ids: the map slot, this struct and the
/// allocation headers, rounded up. Counted so that a flood of tiny ids is bounded too.
pub const PENDING_OVERHEAD_BYTES: usize = 96;
