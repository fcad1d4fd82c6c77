//! What the cluster's receive loop asks of the hub: the [`Routing`] interface, implemented here
//! so that the cluster module never imports the hub (see the hub's module documentation).
//! Each method is one kind of node message, or one presence event, applied to this node's
//! connections.

use serde_json::value::RawValue;

use super::connection::{ClientSide, ExtensionSide};
use super::{Ending, Hub};
use crate::frame::{self, Call, Incoming};
use crate::protocol::RelayError;
use crate::routing::cluster::wire::{ConnectBody, Envelope, PresenceEntry};
use crate::routing::cluster::Routing;

impl Routing for Hub {
    fn presence(&self) -> Vec<PresenceEntry> {
        Hub::presence(self)
    }

    fn extension_seen(&self, extension_id: &str, name: &str) {
        self.tell_returned(extension_id, name);
    }

    /// Connections to extensions on `node` end as if the extension left (their clients are
    /// answered, told `disconnected`, and wait for `connected`); connections held here for
    /// clients on `node` end with the extension told to cancel.
    fn node_gone(&self, node: &str, reason: &str) {
        let on_node = |side: &str| side == node;
        let lost: Vec<(String, String)> = self
            .connections
            .iter()
            .filter(|c| matches!(&c.extension, ExtensionSide::Remote { node } if on_node(node)))
            .map(|c| (c.key().clone(), c.extension_name.clone()))
            .collect();
        for (connection_id, name) in lost {
            self.end(
                &connection_id,
                Ending::ExtensionGone {
                    name: &name,
                    reason,
                },
            );
        }
        let orphans: Vec<String> = self
            .connections
            .iter()
            .filter(|c| matches!(&c.client, ClientSide::Remote { node } if on_node(node)))
            .map(|c| c.key().clone())
            .collect();
        for connection_id in orphans {
            self.end(&connection_id, Ending::ClientNodeGone);
        }
    }

    fn open_from(&self, message: &Envelope<'_>, body: &ConnectBody) -> Result<(), RelayError> {
        let client = ClientSide::Remote {
            node: message.from.to_owned(),
        };
        let connection_id = message.connection_id.to_owned();
        self.attach(body, client, connection_id).map(drop)
    }

    fn request_from(&self, connection_id: &str, call: &Call<'_>) -> Result<(), RelayError> {
        // `frame::parse` gives every request an id; without one there is nobody to answer.
        let Some(id) = call.id else {
            return Ok(());
        };
        let result = self.forward_request(connection_id, id, &call.method, call.params);
        if let Err(error) = &result {
            self.metrics.error(error.code());
        }
        result
    }

    fn notification_from(&self, connection_id: &str, method: &str, params: Option<&RawValue>) {
        let _ = self.forward_notification(connection_id, method, params);
    }

    fn end_from(&self, connection_id: &str, reason: &str) {
        self.end(connection_id, Ending::ClientEnded(reason));
    }

    /// A frame from an extension's node for a client here: an answer is delivered once (not if
    /// this node answered that request already, on a timeout); a `disconnected` ends the
    /// connection here too.
    fn frame_for_client(&self, connection_id: &str, body: &str) {
        // Gone: the connection ended here first, and its requests were answered then.
        let Some(conn) = self.connection(connection_id) else {
            return;
        };
        let ClientSide::Local(peer) = &conn.client else {
            return;
        };
        if conn.extension.is_local() {
            return;
        }
        match frame::parse(body) {
            Ok(Incoming::Response(reply)) => {
                let answered = conn
                    .pending
                    .lock()
                    .unwrap()
                    .as_mut()
                    .and_then(|p| p.remove_original(reply.id.get()))
                    .is_some();
                if answered {
                    peer.send(body.to_owned());
                } else {
                    self.metrics.unknown_responses.inc();
                }
            }
            Ok(Incoming::Notification(call)) if call.method == "disconnected" => {
                peer.send(body.to_owned());
                self.end(connection_id, Ending::ExtensionReportedGone);
            }
            _ => {
                peer.send(body.to_owned());
            }
        }
    }
}
