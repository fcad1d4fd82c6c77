//! The one record of an MCP-client-to-extension connection, whichever nodes its two ends are
//! on, and the requests it has in flight.
//!
//! A connection, not a socket, owns its pending requests: that is what lets a duplicate
//! extension socket take over without losing any of them. When the extension is on another
//! node, that node maps ids and times requests out as usual; the client's node keeps its own
//! list of the requests it sent (keyed by the raw id) so that it can answer them itself when
//! the owner cannot (node gone, NATS down), and so that it delivers at most one answer per
//! request.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::trail::ConnTag;
use crate::net::peer::Peer;
use crate::protocol::RelayError;

/// Where a connection's MCP client is.
#[derive(Clone)]
pub(super) enum ClientSide {
    /// Its socket on this node.
    Local(Peer),
    /// On another relay node: frames for it are published to that node.
    Remote { node: String },
}

/// Where a connection's extension is.
#[derive(Clone, PartialEq, Eq)]
pub(super) enum ExtensionSide {
    /// One of this node's extension identities (`Hub::extensions`).
    Local,
    /// On another relay node, which maps ids and forwards to the browser.
    Remote { node: String },
}

impl ExtensionSide {
    pub(super) fn is_local(&self) -> bool {
        matches!(self, ExtensionSide::Local)
    }
}

pub(super) struct Connection {
    pub id: String,
    /// The client's user: the owner check at connect, and the per-user bound of clients
    /// waiting for the extension to return.
    pub user_id: String,
    pub extension_id: String,
    /// The extension's name when the connection was made; a node failure's `disconnected`
    /// carries it, since the name is then known nowhere else.
    pub extension_name: String,
    pub client: ClientSide,
    pub extension: ExtensionSide,
    /// The `connection_opened` the extension was sent (empty where the extension is on another
    /// node): a socket that takes over from a duplicate is sent it again, so it knows who is
    /// behind each connection it inherits.
    pub opened: String,
    /// `None` once the connection has ended, so a request racing with the end cannot be
    /// inserted into a map nobody will ever drain.
    pub pending: Mutex<Option<Pending>>,
    /// Disambiguates requests that reuse an id that is still pending.
    pub collisions: AtomicU64,
    /// Who is at each end, for the audit trail and the admin API's connection list.
    pub tag: Arc<ConnTag>,
}

impl Connection {
    // One argument per field a connection is born with; a builder would only rename them.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new(
        id: String,
        user_id: &str,
        extension_id: &str,
        extension_name: &str,
        client: ClientSide,
        extension: ExtensionSide,
        opened: String,
        who: (&str, Option<&str>),
    ) -> Self {
        let (mcp_client_id, client_name) = who;
        Connection {
            tag: Arc::new(ConnTag {
                connection_id: id.clone(),
                user_id: user_id.to_owned(),
                mcp_client_id: mcp_client_id.to_owned(),
                client_name: client_name.map(str::to_owned),
                extension_id: extension_id.to_owned(),
            }),
            id,
            user_id: user_id.to_owned(),
            extension_id: extension_id.to_owned(),
            extension_name: extension_name.to_owned(),
            client,
            extension,
            opened,
            pending: Mutex::new(Some(Pending::default())),
            collisions: AtomicU64::new(0),
        }
    }

    /// A key not pending yet, made from `base`: some hosts reuse one id for concurrent
    /// requests, and each still needs its own answer, so a pending id gets a suffix (which the
    /// extension echoes back).
    pub(super) fn unique_key(&self, pending: &Pending, base: String) -> String {
        let mut key = base.clone();
        while pending.requests.contains_key(&key) {
            let n = self.collisions.fetch_add(1, Relaxed) + 1;
            key = format!("{base}#{n}");
        }
        key
    }
}

/// A request waiting for the extension's answer.
pub(super) struct PendingRequest {
    /// The id exactly as the MCP client wrote it (raw JSON).
    pub original_id: Box<str>,
    pub started: Instant,
    /// What this entry counts against `--max-pending-bytes`.
    pub cost: usize,
    /// The forwarded frame's size (estimated), counted against the connection's fair share of
    /// the extension's queue until the request is answered. Zero for a remote extension: its
    /// node applies the fair share.
    pub frame_bytes: usize,
    /// The method, kept only while the audit trail is on (it is recorded with the outcome).
    pub method: Option<Box<str>>,
}

/// A connection's pending requests by key (the mapped id sent to a local extension, the raw id
/// sent to a remote one), with running byte totals (kept under the connection's `pending`
/// mutex, which the forwarding path holds anyway).
#[derive(Default)]
pub(super) struct Pending {
    pub requests: HashMap<String, PendingRequest>,
    /// Sum of `cost`: bounded by `--max-pending-bytes`.
    pub bytes: usize,
    /// Sum of `frame_bytes`: this connection's requests in flight to the extension.
    pub frame_bytes: usize,
}

impl Pending {
    /// Checks the bounds for a new request and records it; the error says which bound.
    pub(super) fn admit(
        &mut self,
        key: String,
        request: PendingRequest,
        max_bytes: usize,
        fair_share: usize,
    ) -> Result<(), RelayError> {
        // An empty map always admits one request, so tiny settings cannot lock a client out.
        if !self.requests.is_empty() && self.bytes + request.cost > max_bytes {
            return Err(RelayError::TooManyPending(max_bytes));
        }
        if self.frame_bytes > 0 && self.frame_bytes + request.frame_bytes > fair_share {
            return Err(RelayError::FairShareExceeded(self.frame_bytes));
        }
        self.bytes += request.cost;
        self.frame_bytes += request.frame_bytes;
        self.requests.insert(key, request);
        Ok(())
    }

    pub(super) fn remove(&mut self, key: &str) -> Option<PendingRequest> {
        let request = self.requests.remove(key)?;
        self.bytes -= request.cost;
        self.frame_bytes -= request.frame_bytes;
        Some(request)
    }

    /// Removes one request the client sent with this raw id (an answer from a remote
    /// extension's node carries the client's own id). A linear scan, like the list it replaces:
    /// bounded by `--max-pending-bytes`.
    pub(super) fn remove_original(&mut self, original_id: &str) -> Option<PendingRequest> {
        let key = self
            .requests
            .iter()
            .find(|(_, r)| &*r.original_id == original_id)
            .map(|(k, _)| k.clone())?;
        self.remove(&key)
    }

    /// Removes and returns the requests that have waited `timeout` or longer.
    pub(super) fn remove_expired(
        &mut self,
        now: Instant,
        timeout: std::time::Duration,
    ) -> Vec<(String, PendingRequest)> {
        let keys: Vec<String> = self
            .requests
            .iter()
            .filter(|(_, r)| now.duration_since(r.started) >= timeout)
            .map(|(k, _)| k.clone())
            .collect();
        keys.into_iter()
            .filter_map(|k| self.remove(&k).map(|r| (k, r)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::code;
    use crate::routing::hub::PENDING_OVERHEAD_BYTES;

    fn pending_request(id_len: usize, frame_bytes: usize) -> PendingRequest {
        PendingRequest {
            original_id: "x".repeat(id_len).into(),
            started: Instant::now(),
            cost: 2 * id_len + PENDING_OVERHEAD_BYTES,
            frame_bytes,
            method: None,
        }
    }

    #[test]
    fn pending_bytes_are_bounded_and_freed() {
        let mut pending = Pending::default();
        let max = 10_000;
        let mut admitted = 0;
        let refused = loop {
            match pending.admit(
                format!("m{admitted}"),
                pending_request(1000, 10),
                max,
                usize::MAX,
            ) {
                Ok(()) => admitted += 1,
                Err(error) => break error,
            }
        };
        assert_eq!(refused, RelayError::TooManyPending(max));
        assert_eq!(refused.code(), code::RATE_LIMITED);
        assert_eq!(admitted, max / (2000 + PENDING_OVERHEAD_BYTES));
        assert!(pending.bytes <= max);
        // Answering one makes room for one.
        assert!(pending.remove("m0").is_some());
        assert!(pending
            .admit("again".into(), pending_request(1000, 10), max, usize::MAX)
            .is_ok());
        for key in pending.requests.keys().cloned().collect::<Vec<_>>() {
            pending.remove(&key);
        }
        assert_eq!((pending.bytes, pending.frame_bytes), (0, 0));
        // An empty map admits one request whatever it costs.
        assert!(pending
            .admit("big".into(), pending_request(50_000, 10), max, usize::MAX)
            .is_ok());
    }

    #[test]
    fn a_connection_keeps_to_its_fair_share_of_the_extension_queue() {
        let mut pending = Pending::default();
        let share = 48 << 20;
        // One request always goes, however large: the queue bound still applies to it.
        assert!(pending
            .admit("a".into(), pending_request(1, 30 << 20), 1 << 20, share)
            .is_ok());
        assert_eq!(
            pending.admit("b".into(), pending_request(1, 30 << 20), 1 << 20, share),
            Err(RelayError::FairShareExceeded(30 << 20))
        );
        assert!(pending
            .admit("c".into(), pending_request(1, 1 << 20), 1 << 20, share)
            .is_ok());
        pending.remove("a");
        assert!(pending
            .admit("b".into(), pending_request(1, 30 << 20), 1 << 20, share)
            .is_ok());
    }
}
