//! What relay nodes say to each other over NATS: subjects and message shapes.
//!
//! Two subjects per cluster:
//! - `mcp-relay.presence`: every node's heartbeat, a JSON [`Presence`] listing the extensions it
//!   holds. All nodes subscribe.
//! - `mcp-relay.node.<node id>`: everything addressed to one node, as an [`Envelope`]: a first
//!   line `<kind> <connection id> <sending node>` and the body after it. The body of `request`, `notify` and
//!   `frame` is a JSON-RPC frame as is, so a large result is copied but never re-encoded.
//!
//! A node publishes everything from one task, and NATS keeps one publisher's messages in order
//! for a subscriber, so a connection's `connect`, requests and `end` reach the extension's node
//! in the order the MCP client sent them, and its answers come back in the order they left.

use serde::{Deserialize, Serialize};

/// One extension as other relay nodes see it (what a node's heartbeat lists).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PresenceEntry {
    pub id: String,
    pub user_id: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// MCP connections to it, for the `peer_count` a remote `connect` reports.
    pub connections: usize,
}

/// The subject all presence heartbeats go to.
///
/// (Besides the two subjects above, each node answers admin questions on [`admin_subject`].)
pub const PRESENCE_SUBJECT: &str = "mcp-relay.presence";

/// The subject a node receives its connection traffic on.
pub fn node_subject(node_id: &str) -> String {
    format!("mcp-relay.node.{node_id}")
}

/// The subject a node answers the admin API's questions on (NATS request and reply): the
/// connections it holds, and kicking one of them. Separate from [`node_subject`] because an
/// answer goes back to the asking request's own reply subject, not through the ordered
/// connection traffic.
pub fn admin_subject(node_id: &str) -> String {
    format!("mcp-relay.admin.{node_id}")
}

/// One heartbeat: who is online on a node.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Presence {
    pub node: String,
    /// Random per process: a node restarted under the same `--cluster-node-id` is a new node,
    /// and connections to its previous life end.
    #[serde(default)]
    pub incarnation: String,
    /// True in the last message of a node that shuts down gracefully, so the others need not
    /// wait for its presence to expire.
    #[serde(default)]
    pub leaving: bool,
    pub extensions: Vec<PresenceEntry>,
}

/// The kinds of node-to-node messages about one connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Client node → extension node: open the connection. Body: [`ConnectBody`].
    Connect,
    /// Client node → extension node: a request frame to forward.
    Request,
    /// Client node → extension node: a notification frame to forward.
    Notify,
    /// Client node → extension node: the connection ended on the client's side. Body: the
    /// reason the extension is told.
    End,
    /// Extension node → client node: a frame for the MCP client (answer or notification).
    Frame,
    /// Any node → every other node: a token or browser was revoked (the connection id is
    /// `-`). Body: the revocation as JSON ([`super::Revocation`]).
    Revoke,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Connect => "connect",
            Kind::Request => "request",
            Kind::Notify => "notify",
            Kind::End => "end",
            Kind::Frame => "frame",
            Kind::Revoke => "revoke",
        }
    }

    fn parse(text: &str) -> Option<Kind> {
        Some(match text {
            "connect" => Kind::Connect,
            "request" => Kind::Request,
            "notify" => Kind::Notify,
            "end" => Kind::End,
            "frame" => Kind::Frame,
            "revoke" => Kind::Revoke,
            _ => return None,
        })
    }
}

/// The body of [`Kind::Connect`]: who connects to which extension. The client's labels travel
/// with it because the extension's node tells the extension who connected
/// (`connection_opened`); they default to empty so a node of the previous version still
/// connects.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ConnectBody {
    pub user_id: String,
    pub extension_id: String,
    #[serde(default)]
    pub mcp_client_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_name: Option<String>,
}

/// Builds a node message.
pub fn envelope(kind: Kind, connection_id: &str, from: &str, body: &str) -> bytes::Bytes {
    let mut out = String::with_capacity(body.len() + connection_id.len() + from.len() + 10);
    out.push_str(kind.as_str());
    out.push(' ');
    out.push_str(connection_id);
    out.push(' ');
    out.push_str(from);
    out.push('\n');
    out.push_str(body);
    out.into()
}

/// A node message taken apart.
#[derive(Debug, PartialEq, Eq)]
pub struct Envelope<'a> {
    pub kind: Kind,
    pub connection_id: &'a str,
    /// The node that sent it, where answers go.
    pub from: &'a str,
    pub body: &'a str,
}

/// Splits a node message; `None` for anything malformed.
pub fn open(payload: &[u8]) -> Option<Envelope<'_>> {
    let text = std::str::from_utf8(payload).ok()?;
    let (head, body) = text.split_once('\n')?;
    let mut words = head.split(' ');
    let (kind, connection_id, from) = (words.next()?, words.next()?, words.next()?);
    Some(Envelope {
        kind: Kind::parse(kind)?,
        connection_id,
        from,
        body,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelopes_round_trip_with_newlines_in_the_body() {
        let bytes = envelope(Kind::Frame, "conn-1", "node-a", "{\"a\":\n1}");
        let opened = open(&bytes).unwrap();
        assert_eq!(
            opened,
            Envelope {
                kind: Kind::Frame,
                connection_id: "conn-1",
                from: "node-a",
                body: "{\"a\":\n1}"
            }
        );
        assert!(open(b"bogus conn-1 node-a\n{}").is_none());
        assert!(open(b"frame conn-1\n{}").is_none());
        assert!(open(b"no newline").is_none());
    }
}
