//! MCP clients whose extension went away, waiting to be told `connected` when it is back:
//! on this node or, in a cluster, on any node. One bounded, aging list serves both.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use dashmap::DashMap;

use crate::metrics::Metrics;
use crate::net::peer::Peer;

/// An MCP client waiting for an extension to come back (a trait so that [`ReturnWatch`] can be
/// unit-tested without sockets).
pub trait Waiter: Clone {
    fn is_open(&self) -> bool;
    fn same(&self, other: &Self) -> bool;
}

impl Waiter for Peer {
    fn is_open(&self) -> bool {
        Peer::is_open(self)
    }
    fn same(&self, other: &Self) -> bool {
        self.id() == other.id()
    }
}

struct Waiting<P> {
    user_id: String,
    peers: Vec<P>,
    /// When the extension last went away; the entry is forgotten `ttl` later.
    since: Instant,
}

/// MCP clients waiting for vanished extensions to come back, to be told `connected`.
///
/// Without bounds this is a leak: a browser that never returns (or a user minting new browser
/// identities) leaves an entry forever. So every entry ages out after `ttl`
/// (`--reconnect-window`), entries whose clients all closed go at the next sweep, one extension
/// keeps at most `max_per_extension` clients (an MCP socket count per user already bounds the
/// open ones), and one user keeps at most `max_per_user` entries, the oldest forgotten first
/// (`by_user` keeps that order, so eviction is O(that user's entries)).
///
/// The two maps are never locked together; a race between an add and a take can at worst leave
/// an entry outside its user's order, and that entry still ages out.
pub struct ReturnWatch<P> {
    waiting: DashMap<String, Waiting<P>>,
    by_user: DashMap<String, VecDeque<String>>,
    ttl: Duration,
    max_per_user: usize,
    max_per_extension: usize,
    metrics: Arc<Metrics>,
}

impl<P: Waiter> ReturnWatch<P> {
    pub fn new(
        ttl: Duration,
        max_per_user: usize,
        max_per_extension: usize,
        metrics: Arc<Metrics>,
    ) -> Self {
        ReturnWatch {
            waiting: DashMap::new(),
            by_user: DashMap::new(),
            ttl,
            max_per_user: max_per_user.max(1),
            max_per_extension: max_per_extension.max(1),
            metrics,
        }
    }

    /// Remembers `peers` as waiting for `extension_id` (of `user_id`) from `now` on.
    pub fn add(&self, extension_id: &str, user_id: &str, peers: Vec<P>, now: Instant) {
        if peers.is_empty() {
            return;
        }
        let created = {
            let mut created = false;
            let mut entry = self
                .waiting
                .entry(extension_id.to_owned())
                .or_insert_with(|| {
                    created = true;
                    Waiting {
                        user_id: user_id.to_owned(),
                        peers: Vec::new(),
                        since: now,
                    }
                });
            entry.since = now;
            entry.peers.retain(P::is_open);
            for peer in peers {
                if !entry.peers.iter().any(|p| p.same(&peer)) {
                    entry.peers.push(peer);
                }
            }
            let excess = entry.peers.len().saturating_sub(self.max_per_extension);
            entry.peers.drain(..excess);
            created
        };
        if created {
            self.metrics.awaited_extensions.inc();
        }
        let evicted: Vec<String> = {
            let mut order = self.by_user.entry(user_id.to_owned()).or_default();
            order.retain(|id| id != extension_id);
            order.push_back(extension_id.to_owned());
            let excess = order.len().saturating_sub(self.max_per_user);
            order.drain(..excess).collect()
        };
        for id in evicted {
            if self.waiting.remove(&id).is_some() {
                self.metrics.awaited_extensions.dec();
            }
        }
    }

    /// Takes the clients waiting for `extension_id` (it is back), open ones only.
    pub fn take(&self, extension_id: &str) -> Vec<P> {
        let Some((_, waiting)) = self.waiting.remove(extension_id) else {
            return Vec::new();
        };
        self.metrics.awaited_extensions.dec();
        self.forget_order(&waiting.user_id, extension_id);
        waiting.peers.into_iter().filter(P::is_open).collect()
    }

    /// True when some client waits for `extension_id`.
    pub fn contains(&self, extension_id: &str) -> bool {
        self.waiting.contains_key(extension_id)
    }

    /// Extensions waited for right now.
    pub fn len(&self) -> usize {
        self.waiting.len()
    }

    pub fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }

    /// Forgets entries older than the TTL and those whose clients have all closed.
    pub fn sweep(&self, now: Instant) {
        let mut gone = Vec::new();
        self.waiting.retain(|id, waiting| {
            waiting.peers.retain(P::is_open);
            let keep = !waiting.peers.is_empty()
                && now.saturating_duration_since(waiting.since) < self.ttl;
            if !keep {
                gone.push((id.clone(), std::mem::take(&mut waiting.user_id)));
            }
            keep
        });
        for (id, user_id) in gone {
            self.metrics.awaited_extensions.dec();
            self.forget_order(&user_id, &id);
        }
    }

    fn forget_order(&self, user_id: &str, extension_id: &str) {
        if let Some(mut order) = self.by_user.get_mut(user_id) {
            order.retain(|id| id != extension_id);
        }
        self.by_user.remove_if(user_id, |_, order| order.is_empty());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering::Relaxed;

    /// A waiting MCP client without a socket.
    #[derive(Clone)]
    struct FakePeer(u32, Arc<std::sync::atomic::AtomicBool>);

    impl FakePeer {
        fn new(id: u32) -> Self {
            FakePeer(id, Arc::new(std::sync::atomic::AtomicBool::new(true)))
        }
        fn close(&self) {
            self.1.store(false, Relaxed);
        }
    }

    impl Waiter for FakePeer {
        fn is_open(&self) -> bool {
            self.1.load(Relaxed)
        }
        fn same(&self, other: &Self) -> bool {
            self.0 == other.0
        }
    }

    fn watch(ttl: Duration, per_user: usize, per_extension: usize) -> ReturnWatch<FakePeer> {
        ReturnWatch::new(ttl, per_user, per_extension, Arc::new(Metrics::default()))
    }

    fn gauge(watch: &ReturnWatch<FakePeer>) -> i64 {
        watch.metrics.awaited_extensions.get()
    }

    #[test]
    fn return_watch_keeps_at_most_n_extensions_per_user_oldest_forgotten_first() {
        let watch = watch(Duration::from_secs(60), 4, 64);
        let now = Instant::now();
        let client = FakePeer::new(1);
        for i in 0..1000 {
            watch.add(&format!("ext-{i}"), "alice", vec![client.clone()], now);
        }
        watch.add("ext-bob", "bob", vec![FakePeer::new(2)], now);
        assert_eq!(watch.len(), 5);
        assert_eq!(gauge(&watch), 5);
        assert!(!watch.contains("ext-0"));
        assert!(watch.contains("ext-999") && watch.contains("ext-996"));
        assert!(
            watch.contains("ext-bob"),
            "another user's entry is untouched"
        );
        assert_eq!(watch.by_user.get("alice").unwrap().len(), 4);
        // Coming back takes the entry and its place in the user's order.
        assert_eq!(watch.take("ext-999").len(), 1);
        assert!(watch.take("ext-999").is_empty());
        assert_eq!(watch.by_user.get("alice").unwrap().len(), 3);
        assert_eq!(gauge(&watch), 4);
    }

    #[test]
    fn return_watch_bounds_clients_per_extension_and_counts_each_once() {
        let watch = watch(Duration::from_secs(60), 4, 3);
        let now = Instant::now();
        let a = FakePeer::new(1);
        for _ in 0..10 {
            watch.add("ext-1", "alice", vec![a.clone()], now);
        }
        assert_eq!(watch.waiting.get("ext-1").unwrap().peers.len(), 1);
        for id in 2..10 {
            watch.add("ext-1", "alice", vec![FakePeer::new(id)], now);
        }
        assert_eq!(watch.waiting.get("ext-1").unwrap().peers.len(), 3);
        assert_eq!(gauge(&watch), 1);
    }

    #[test]
    fn return_watch_forgets_after_the_ttl_and_when_clients_close() {
        let ttl = Duration::from_secs(300);
        let watch = watch(ttl, 16, 64);
        let t0 = Instant::now();
        let closing = FakePeer::new(1);
        watch.add("ext-old", "alice", vec![FakePeer::new(2)], t0);
        watch.add("ext-closed", "alice", vec![closing.clone()], t0);
        watch.add("ext-young", "bob", vec![FakePeer::new(3)], t0 + ttl / 2);
        closing.close();
        watch.sweep(t0 + ttl / 2);
        assert!(!watch.contains("ext-closed"));
        assert!(watch.contains("ext-old"));
        watch.sweep(t0 + ttl);
        assert!(!watch.contains("ext-old"));
        assert!(watch.contains("ext-young"));
        assert!(
            watch.by_user.get("alice").is_none(),
            "no empty per-user entry"
        );
        watch.sweep(t0 + ttl * 2);
        assert!(watch.is_empty());
        assert!(watch.by_user.is_empty());
        assert_eq!(gauge(&watch), 0);
        // Closed clients are not handed out.
        let gone = FakePeer::new(4);
        watch.add("ext-x", "carol", vec![gone.clone(), FakePeer::new(5)], t0);
        gone.close();
        assert_eq!(watch.take("ext-x").len(), 1);
    }
}
