//! Where a request goes: the one routing core ([`hub`]: extensions, connections, pending
//! requests, id mapping) and, with `serve --cluster`, the link to the other nodes
//! ([`cluster`]), which reaches the hub only through its `Routing` trait.

pub mod cluster;
pub mod hub;
