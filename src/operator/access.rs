//! Who may connect, decided out of band: revoked tokens, approved and revoked browsers, and
//! every live socket with the token it opened with, so that a revocation closes the sockets it
//! names at once (1008 "revoked") instead of waiting for their tokens to expire.
//!
//! The store ([`crate::operator::store`]) is where approvals and revocations survive a restart; this is
//! their in-memory mirror, loaded at start, which the sessions consult on every
//! `authenticate`, `mcp_handshake` and `connect` without touching the disk. An admin's change is
//! written through to the store (awaited: the store keeps disk work off the runtime) before the
//! admin API answers; what the sessions record (a browser seen, or gone) is written by a task
//! of its own, so a socket never waits for the store.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::auth::{AuthError, Identity};
use crate::net::peer::{close_code, Peer};
use crate::operator::store::nats::StoreChange;
use crate::operator::store::{BrowserRecord, RevokedToken, Store};

/// Most token revocations one user's token may record (an admin's are not limited): enough for
/// any real use, and a bound on what a user can make the relay store.
pub const MAX_REVOCATIONS_PER_USER: usize = 10_000;

/// Browser identities remembered per user. A user can invent client ids at will, so beyond
/// this the least recently seen browser that is neither approved nor revoked is forgotten
/// (then, if all are approved, the least recently seen approved one); revoked ones are kept
/// longest, and one that is forgotten comes back unapproved.
pub const MAX_BROWSERS_PER_USER: usize = 256;

/// The close reason of a socket whose token or browser was revoked.
pub const REVOKED: &str = "revoked";

/// One authenticated socket, as a revocation sees it.
struct LiveSocket {
    peer: Peer,
    user_id: String,
    jti: Option<String>,
    issued_at: Option<u64>,
    /// For extension sockets: the browser identity.
    extension_id: Option<String>,
}

#[derive(Default)]
struct Revoked {
    /// jti → the users it is revoked for (`None`: whoever holds it).
    tokens: HashMap<String, Vec<Option<String>>>,
    /// Per user: how many token revocations the user's own tokens recorded.
    per_user: HashMap<String, usize>,
    /// Per user: tokens issued before this (seconds) are refused.
    cutoffs: HashMap<String, i64>,
}

impl Revoked {
    fn refuses(&self, user_id: &str, jti: Option<&str>, issued_at: Option<u64>) -> bool {
        if let Some(users) = jti.and_then(|j| self.tokens.get(j)) {
            if users
                .iter()
                .any(|u| u.as_deref().is_none_or(|u| u == user_id))
            {
                return true;
            }
        }
        match self.cutoffs.get(user_id) {
            // A token without `iat` cannot show it was issued after the cutoff.
            Some(before) => issued_at.is_none_or(|iat| (iat as i64) < *before),
            None => false,
        }
    }
}

/// Revocations, approvals and live sockets; shared by the sessions and the admin API.
pub struct Access {
    store: Arc<Store>,
    require_approval: bool,
    browsers: Mutex<HashMap<String, BrowserRecord>>,
    revoked: Mutex<Revoked>,
    live: Mutex<HashMap<u64, LiveSocket>>,
    /// Serialises "read the mirror, write the store" for browsers, so the file always ends up
    /// with the newest record even when two writes race. An async lock: it is held while the
    /// write is awaited.
    persist: tokio::sync::Mutex<()>,
}

/// Which of a browser's records [`Access::persist`] writes.
#[derive(Clone, Copy)]
enum Write {
    /// What was seen of it (name, version, last seen).
    Seen,
    /// The out-of-band decision (approved, revoked).
    Decision,
}

/// Why a change asked of [`Access`] was not made.
#[derive(Debug, thiserror::Error)]
pub enum AccessError {
    #[error("no such browser")]
    NoSuchBrowser,
    #[error("too many revocations recorded by this user (the limit is {MAX_REVOCATIONS_PER_USER}); ask the operator")]
    TooManyRevocations,
    #[error("the state store failed: {0:#}")]
    Store(anyhow::Error),
}

fn now_secs() -> i64 {
    crate::auth::now_secs() as i64
}

/// The latest a user cutoff may be: the end of the current second (tokens carry `iat` in whole
/// seconds, so a cutoff of "now" refuses every token issued up to this moment), never later.
pub fn latest_cutoff() -> i64 {
    now_secs() + 1
}

impl Access {
    /// Loads the mirror from `store` (at start-up).
    pub async fn load(store: Arc<Store>, require_approval: bool) -> anyhow::Result<Access> {
        let browsers = store
            .browsers()
            .await?
            .into_iter()
            .map(|b| (b.id.clone(), b))
            .collect();
        let loaded = store.revocations().await?;
        let mut revoked = Revoked::default();
        for token in loaded.tokens {
            if let Some(user) = &token.user_id {
                *revoked.per_user.entry(user.clone()).or_default() += 1;
            }
            revoked
                .tokens
                .entry(token.jti)
                .or_default()
                .push(token.user_id);
        }
        // A cutoff in the future (written before cutoffs were clamped) would refuse every token
        // the user gets until then: it counts from now.
        let now = now_secs();
        revoked.cutoffs = loaded
            .cutoffs
            .into_iter()
            .map(|(user, before)| (user, before.min(now + 1)))
            .collect();
        Ok(Access {
            store,
            require_approval,
            browsers: Mutex::new(browsers),
            revoked: Mutex::new(revoked),
            live: Mutex::new(HashMap::new()),
            persist: tokio::sync::Mutex::new(()),
        })
    }

    /// A mirror of a fresh memory store (nothing to load), for unit tests that have no
    /// runtime to load one on.
    #[cfg(test)]
    pub(crate) fn in_memory(require_approval: bool) -> Access {
        Access {
            store: Arc::new(Store::Memory(Default::default())),
            require_approval,
            browsers: Mutex::default(),
            revoked: Mutex::default(),
            live: Mutex::default(),
            persist: tokio::sync::Mutex::new(()),
        }
    }

    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    pub fn require_approval(&self) -> bool {
        self.require_approval
    }

    /// `Err(Revoked)` when the token was revoked by `jti` or falls under its user's cutoff.
    pub fn check_token(&self, identity: &Identity) -> Result<(), AuthError> {
        let refused = self.revoked.lock().unwrap().refuses(
            &identity.user_id,
            identity.jti.as_deref(),
            identity.issued_at,
        );
        if refused {
            Err(AuthError::Revoked)
        } else {
            Ok(())
        }
    }

    /// Whether a browser identity was revoked.
    pub fn browser_revoked(&self, extension_id: &str) -> bool {
        self.browsers
            .lock()
            .unwrap()
            .get(extension_id)
            .is_some_and(|b| b.revoked)
    }

    /// With `--require-approval`: `Some(false)` for `user_id`'s browser that is not approved
    /// yet. `None` when approval is off or the browser is not `user_id`'s (the caller then
    /// answers as for any browser it cannot see).
    pub fn pending_approval(&self, user_id: &str, extension_id: &str) -> Option<bool> {
        if !self.require_approval {
            return None;
        }
        let browsers = self.browsers.lock().unwrap();
        match browsers.get(extension_id) {
            Some(b) if b.user_id == user_id => Some(!b.approved),
            Some(_) => None,
            // Never seen here (another node's, in a cluster): not approved on this node.
            None => Some(true),
        }
    }

    /// Whether `user_id`'s browser is approved (for `list_extensions`' `approved` field).
    pub fn approved(&self, extension_id: &str) -> bool {
        self.browsers
            .lock()
            .unwrap()
            .get(extension_id)
            .is_some_and(|b| b.approved)
    }

    /// Records a browser that just authenticated (new ones start unapproved) and persists it
    /// off the runtime. Returns whether it is approved.
    pub fn browser_seen(
        self: &Arc<Self>,
        extension_id: &str,
        user_id: &str,
        name: &str,
        version: Option<&str>,
    ) -> bool {
        let now = now_secs();
        let mut forgotten = None;
        let approved = {
            let mut browsers = self.browsers.lock().unwrap();
            if !browsers.contains_key(extension_id) {
                forgotten = make_room(&mut browsers, user_id);
            }
            let record = browsers
                .entry(extension_id.to_owned())
                .or_insert_with(|| BrowserRecord {
                    id: extension_id.to_owned(),
                    user_id: user_id.to_owned(),
                    name: name.to_owned(),
                    version: None,
                    approved: false,
                    revoked: false,
                    first_seen: now,
                    last_seen: now,
                });
            record.name = name.to_owned();
            if version.is_some() {
                record.version = version.map(str::to_owned);
            }
            record.last_seen = now;
            record.approved
        };
        if let Some(id) = forgotten {
            let access = Arc::clone(self);
            tokio::spawn(async move {
                let _order = access.persist.lock().await;
                if let Err(e) = access.store.delete_browser(&id).await {
                    tracing::warn!("forgetting browser {id}: {e:#}");
                }
            });
        }
        self.persist_in_background(extension_id);
        approved
    }

    /// Moves a browser's `last_seen` to now (its socket closed) and persists it.
    pub fn browser_left(self: &Arc<Self>, extension_id: &str) {
        if let Some(b) = self.browsers.lock().unwrap().get_mut(extension_id) {
            b.last_seen = now_secs();
        }
        self.persist_in_background(extension_id);
    }

    fn persist_in_background(self: &Arc<Self>, extension_id: &str) {
        let id = extension_id.to_owned();
        // A session dropped while the runtime itself shuts down has no runtime to ask.
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            let _order = self.persist.blocking_lock();
            let record = self.browsers.lock().unwrap().get(&id).cloned();
            // A shared store needs the runtime to talk to NATS; its last-seen time is lost.
            if let Some(Err(e)) = record.and_then(|r| self.store.put_browser_without_runtime(&r)) {
                tracing::warn!("saving browser {id}: {e:#}");
            }
            return;
        };
        let access = Arc::clone(self);
        runtime.spawn(async move {
            if let Err(e) = access.persist(&id, Write::Seen).await {
                tracing::warn!("saving browser {id}: {e:#}");
            }
        });
    }

    /// Writes the mirror's record of `extension_id` to the store: what was seen of it
    /// ([`Store::put_browser`]) or the decision about it ([`Store::put_browser_decision`]).
    async fn persist(&self, extension_id: &str, write: Write) -> anyhow::Result<()> {
        let _order = self.persist.lock().await;
        let record = self.browsers.lock().unwrap().get(extension_id).cloned();
        match (record, write) {
            (Some(record), Write::Seen) => self.store.put_browser(&record).await,
            (Some(record), Write::Decision) => self.store.put_browser_decision(&record).await,
            (None, _) => Ok(()),
        }
    }

    /// Every known browser (`user_id`'s only, when given), sorted by user then name.
    pub fn browsers(&self, user_id: Option<&str>) -> Vec<BrowserRecord> {
        let mut list: Vec<BrowserRecord> = self
            .browsers
            .lock()
            .unwrap()
            .values()
            .filter(|b| user_id.is_none_or(|u| b.user_id == u))
            .cloned()
            .collect();
        list.sort_by(|a, b| {
            (a.user_id.as_str(), a.name.as_str(), a.id.as_str()).cmp(&(
                b.user_id.as_str(),
                b.name.as_str(),
                b.id.as_str(),
            ))
        });
        list
    }

    /// One browser's record.
    pub fn browser(&self, extension_id: &str) -> Option<BrowserRecord> {
        self.browsers.lock().unwrap().get(extension_id).cloned()
    }

    /// Approves a browser (and lifts a revocation of it). Persists before returning.
    pub async fn approve(&self, extension_id: &str) -> Result<BrowserRecord, AccessError> {
        let record = {
            let mut browsers = self.browsers.lock().unwrap();
            let b = browsers
                .get_mut(extension_id)
                .ok_or(AccessError::NoSuchBrowser)?;
            b.approved = true;
            b.revoked = false;
            b.clone()
        };
        self.persist(extension_id, Write::Decision)
            .await
            .map_err(AccessError::Store)?;
        Ok(record)
    }

    /// Revokes a browser identity: its sockets close now and it may not authenticate again
    /// until approved. Persists before returning. Returns the sockets closed.
    pub async fn revoke_browser(&self, extension_id: &str) -> Result<usize, AccessError> {
        {
            let mut browsers = self.browsers.lock().unwrap();
            let b = browsers
                .get_mut(extension_id)
                .ok_or(AccessError::NoSuchBrowser)?;
            b.revoked = true;
            b.approved = false;
        }
        self.persist(extension_id, Write::Decision)
            .await
            .map_err(AccessError::Store)?;
        Ok(self.close_where(|s| s.extension_id.as_deref() == Some(extension_id)))
    }

    /// Revokes one token by `jti`: for `user_id`'s tokens only, or (`None`, an admin's) for
    /// whoever holds it. Persists before returning. Returns the sockets closed.
    pub async fn revoke_token(
        &self,
        jti: &str,
        user_id: Option<&str>,
    ) -> Result<usize, AccessError> {
        {
            let mut revoked = self.revoked.lock().unwrap();
            let scope = user_id.map(str::to_owned);
            let known = revoked
                .tokens
                .get(jti)
                .is_some_and(|users| users.contains(&scope));
            if !known {
                if let Some(user) = user_id {
                    let count = revoked.per_user.entry(user.to_owned()).or_default();
                    if *count >= MAX_REVOCATIONS_PER_USER {
                        return Err(AccessError::TooManyRevocations);
                    }
                    *count += 1;
                }
                revoked
                    .tokens
                    .entry(jti.to_owned())
                    .or_default()
                    .push(scope);
            }
        }
        self.store
            .revoke_token(&RevokedToken {
                jti: jti.to_owned(),
                user_id: user_id.map(str::to_owned),
                revoked_at: now_secs(),
            })
            .await
            .map_err(AccessError::Store)?;
        Ok(self.close_where(|s| {
            s.jti.as_deref() == Some(jti) && user_id.is_none_or(|u| s.user_id == u)
        }))
    }

    /// Revokes every token of `user_id` issued before `issued_before` (seconds). Persists
    /// before returning. Returns the sockets closed.
    pub async fn revoke_user(
        &self,
        user_id: &str,
        issued_before: i64,
    ) -> Result<usize, AccessError> {
        // Never in the future: "every token until 2100" would lock the user out for good.
        let issued_before = issued_before.min(latest_cutoff());
        {
            let mut revoked = self.revoked.lock().unwrap();
            let cutoff = revoked
                .cutoffs
                .entry(user_id.to_owned())
                .or_insert(i64::MIN);
            *cutoff = (*cutoff).max(issued_before);
        }
        self.store
            .revoke_user(user_id, issued_before)
            .await
            .map_err(AccessError::Store)?;
        let revoked = self.revoked.lock().unwrap();
        let names: Vec<u64> = self
            .live
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, s)| s.user_id == user_id && revoked.refuses(&s.user_id, None, s.issued_at))
            .map(|(id, _)| *id)
            .collect();
        drop(revoked);
        Ok(self.close_ids(&names))
    }

    /// An admin's correction of `user_id`'s cutoff: set to exactly `issued_before` (clamped to
    /// now; it may be lower than before), or removed (`None`). Persists before returning.
    /// Returns the sockets closed (when the new cutoff is later than their tokens).
    pub async fn set_cutoff(
        &self,
        user_id: &str,
        issued_before: Option<i64>,
    ) -> Result<usize, AccessError> {
        let issued_before = issued_before.map(|b| b.min(latest_cutoff()));
        {
            let mut revoked = self.revoked.lock().unwrap();
            match issued_before {
                Some(before) => revoked.cutoffs.insert(user_id.to_owned(), before),
                None => revoked.cutoffs.remove(user_id),
            };
        }
        self.store
            .set_user_cutoff(user_id, issued_before)
            .await
            .map_err(AccessError::Store)?;
        let Some(before) = issued_before else {
            return Ok(0);
        };
        Ok(self.close_where(|s| {
            s.user_id == user_id && s.issued_at.is_none_or(|i| (i as i64) < before)
        }))
    }

    /// Applies a revocation another cluster node made: the mirror and this node's sockets now,
    /// and this node's own store in the background, so it survives this node's restart too (a
    /// shared store already holds it: the node that made it wrote it there).
    pub fn apply_remote_revocation(&self, revocation: &RemoteRevocation) {
        let browser = self.apply_revocation_here(revocation);
        if self.store.is_shared() {
            return;
        }
        let store = Arc::clone(&self.store);
        let saved = revocation.clone();
        tokio::spawn(async move {
            let result = match saved {
                RemoteRevocation::Token { jti, user_id } => {
                    store
                        .revoke_token(&RevokedToken {
                            jti,
                            user_id,
                            revoked_at: now_secs(),
                        })
                        .await
                }
                RemoteRevocation::User {
                    user_id,
                    issued_before,
                } => store.revoke_user(&user_id, issued_before).await,
                RemoteRevocation::Browser { .. } => match browser {
                    Some(b) => store.put_browser_decision(&b).await,
                    None => Ok(()),
                },
            };
            if let Err(e) = result {
                tracing::warn!("saving a revocation from another node: {e:#}");
            }
        });
    }

    /// Puts a revocation into the mirror and closes this node's sockets it names. Returns the
    /// browser's record for a browser revocation.
    fn apply_revocation_here(&self, revocation: &RemoteRevocation) -> Option<BrowserRecord> {
        match revocation {
            RemoteRevocation::Token { jti, user_id } => {
                let mut revoked = self.revoked.lock().unwrap();
                let users = revoked.tokens.entry(jti.clone()).or_default();
                if !users.contains(user_id) {
                    users.push(user_id.clone());
                    if let Some(user) = user_id {
                        *revoked.per_user.entry(user.clone()).or_default() += 1;
                    }
                }
                drop(revoked);
                self.close_where(|s| {
                    s.jti.as_deref() == Some(jti.as_str())
                        && user_id.as_deref().is_none_or(|u| s.user_id == u)
                });
                None
            }
            RemoteRevocation::User {
                user_id,
                issued_before,
            } => {
                let issued_before = &(*issued_before).min(latest_cutoff());
                {
                    let mut revoked = self.revoked.lock().unwrap();
                    let cutoff = revoked.cutoffs.entry(user_id.clone()).or_insert(i64::MIN);
                    *cutoff = (*cutoff).max(*issued_before);
                }
                self.close_where(|s| {
                    s.user_id == *user_id && s.issued_at.is_none_or(|i| (i as i64) < *issued_before)
                });
                None
            }
            RemoteRevocation::Browser {
                extension_id,
                user_id,
            } => {
                let record = self.decide_here(extension_id, user_id, false, true);
                Some(record)
            }
        }
    }

    /// Sets a browser's decision in the mirror (recording a browser this node has not seen
    /// yet, so it is refused or let in here should it come to this node later), and closes
    /// its sockets when it is revoked.
    fn decide_here(
        &self,
        extension_id: &str,
        user_id: &str,
        approved: bool,
        revoked: bool,
    ) -> BrowserRecord {
        let record = {
            let now = now_secs();
            let mut browsers = self.browsers.lock().unwrap();
            let b = browsers
                .entry(extension_id.to_owned())
                .or_insert_with(|| BrowserRecord {
                    id: extension_id.to_owned(),
                    user_id: user_id.to_owned(),
                    name: String::new(),
                    version: None,
                    approved,
                    revoked,
                    first_seen: now,
                    last_seen: now,
                });
            b.approved = approved;
            b.revoked = revoked;
            b.clone()
        };
        if revoked {
            self.close_where(|s| s.extension_id.as_deref() == Some(extension_id));
        }
        record
    }

    /// Applies a change read from a shared store (`--state nats`): whatever any node wrote,
    /// this one's included (applying it again changes nothing).
    pub fn apply_store_change(&self, change: StoreChange) {
        match change {
            StoreChange::BrowserSeen(seen) => {
                let mut browsers = self.browsers.lock().unwrap();
                let b = browsers
                    .entry(seen.id.clone())
                    .or_insert_with(|| BrowserRecord {
                        approved: false,
                        revoked: false,
                        ..seen.clone()
                    });
                b.user_id = seen.user_id;
                if !seen.name.is_empty() {
                    b.name = seen.name;
                }
                if seen.version.is_some() {
                    b.version = seen.version;
                }
                b.first_seen = b.first_seen.min(seen.first_seen);
                b.last_seen = b.last_seen.max(seen.last_seen);
            }
            StoreChange::BrowserDecision {
                id,
                user_id,
                approved,
                revoked,
            } => {
                self.decide_here(&id, &user_id, approved, revoked);
            }
            StoreChange::BrowserForgotten { id } => {
                self.browsers.lock().unwrap().remove(&id);
            }
            StoreChange::Token(token) => {
                self.apply_revocation_here(&RemoteRevocation::Token {
                    jti: token.jti,
                    user_id: token.user_id,
                });
            }
            StoreChange::Cutoff {
                user_id,
                issued_before,
            } => {
                self.apply_revocation_here(&RemoteRevocation::User {
                    user_id,
                    issued_before,
                });
            }
        }
    }

    /// Registers an authenticated socket; dropping the guard forgets it.
    pub fn track(
        self: &Arc<Self>,
        peer: &Peer,
        identity: &Identity,
        extension_id: Option<&str>,
    ) -> LiveGuard {
        self.live.lock().unwrap().insert(
            peer.id(),
            LiveSocket {
                peer: peer.clone(),
                user_id: identity.user_id.clone(),
                jti: identity.jti.clone(),
                issued_at: identity.issued_at,
                extension_id: extension_id.map(str::to_owned),
            },
        );
        LiveGuard {
            access: Arc::clone(self),
            peer_id: peer.id(),
        }
    }

    /// A repeated `mcp_handshake` with another token of the same user: the socket now holds
    /// that token.
    pub fn retrack(&self, peer: &Peer, identity: &Identity) {
        if let Some(s) = self.live.lock().unwrap().get_mut(&peer.id()) {
            s.jti.clone_from(&identity.jti);
            s.issued_at = identity.issued_at;
        }
    }

    fn close_where(&self, matches: impl Fn(&LiveSocket) -> bool) -> usize {
        let ids: Vec<u64> = self
            .live
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, s)| matches(s))
            .map(|(id, _)| *id)
            .collect();
        self.close_ids(&ids)
    }

    fn close_ids(&self, ids: &[u64]) -> usize {
        let peers: Vec<Peer> = {
            let live = self.live.lock().unwrap();
            ids.iter()
                .filter_map(|id| live.get(id).map(|s| s.peer.clone()))
                .collect()
        };
        for peer in &peers {
            peer.close(close_code::POLICY, REVOKED);
        }
        peers.len()
    }
}

/// Forgets one of `user_id`'s browsers when the user has [`MAX_BROWSERS_PER_USER`]; returns
/// its id.
fn make_room(browsers: &mut HashMap<String, BrowserRecord>, user_id: &str) -> Option<String> {
    let mine: Vec<&BrowserRecord> = browsers.values().filter(|b| b.user_id == user_id).collect();
    if mine.len() < MAX_BROWSERS_PER_USER {
        return None;
    }
    let oldest = |approved: bool| {
        mine.iter()
            .filter(|b| !b.revoked && b.approved == approved)
            .min_by_key(|b| b.last_seen)
            .map(|b| b.id.clone())
    };
    // Only a user who revoked all of their own 256 browsers gets here: the oldest revoked one
    // goes, and comes back (if ever) as a new, unapproved browser.
    let oldest_revoked = || {
        mine.iter()
            .filter(|b| b.revoked)
            .min_by_key(|b| b.last_seen)
            .map(|b| b.id.clone())
    };
    let id = oldest(false)
        .or_else(|| oldest(true))
        .or_else(oldest_revoked)?;
    browsers.remove(&id);
    Some(id)
}

/// A revocation as the cluster link carries it to the other nodes (its wire form is the
/// cluster's).
pub use crate::routing::cluster::Revocation as RemoteRevocation;

/// Keeps a socket in [`Access`]'s live set while it lives.
pub struct LiveGuard {
    access: Arc<Access>,
    peer_id: u64,
}

impl Drop for LiveGuard {
    fn drop(&mut self) {
        self.access.live.lock().unwrap().remove(&self.peer_id);
    }
}

/// The access mirror is the gate the relay core asks (registered when the relay is built).
impl crate::state::Gate for Arc<Access> {
    fn require_approval(&self) -> bool {
        Access::require_approval(self)
    }

    fn check_token(&self, identity: &Identity) -> Result<(), AuthError> {
        Access::check_token(self, identity)
    }

    fn browser_revoked(&self, extension_id: &str) -> bool {
        Access::browser_revoked(self, extension_id)
    }

    fn approved(&self, extension_id: &str) -> bool {
        Access::approved(self, extension_id)
    }

    fn browser_seen(
        &self,
        extension_id: &str,
        user_id: &str,
        name: &str,
        version: Option<&str>,
    ) -> bool {
        Access::browser_seen(self, extension_id, user_id, name, version)
    }

    fn browser_left(&self, extension_id: &str) {
        Access::browser_left(self, extension_id);
    }

    fn track(
        &self,
        peer: &Peer,
        identity: &Identity,
        extension_id: Option<&str>,
    ) -> crate::state::LiveGuard {
        crate::state::LiveGuard::new(Access::track(self, peer, identity, extension_id))
    }

    fn retrack(&self, peer: &Peer, identity: &Identity) {
        Access::retrack(self, peer, identity);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn identity(user: &str, jti: Option<&str>, iat: Option<u64>) -> Identity {
        Identity {
            user_id: user.into(),
            role: None,
            connection_url: None,
            expires_at: u64::MAX,
            jti: jti.map(str::to_owned),
            issued_at: iat,
        }
    }

    fn access() -> Access {
        Access::in_memory(true)
    }

    #[tokio::test]
    async fn a_users_jti_revocation_never_touches_another_users_token() {
        let access = access();
        access.revoke_token("j", Some("alice")).await.unwrap();
        assert!(access
            .check_token(&identity("alice", Some("j"), Some(1)))
            .is_err());
        assert!(access
            .check_token(&identity("bob", Some("j"), Some(1)))
            .is_ok());
        access.revoke_token("j", None).await.unwrap();
        assert!(access
            .check_token(&identity("bob", Some("j"), Some(1)))
            .is_err());
    }

    #[tokio::test]
    async fn a_user_cutoff_refuses_older_tokens_and_tokens_without_iat() {
        let access = access();
        access.revoke_user("alice", 100).await.unwrap();
        assert!(access
            .check_token(&identity("alice", None, Some(99)))
            .is_err());
        assert!(access.check_token(&identity("alice", None, None)).is_err());
        assert!(access
            .check_token(&identity("alice", None, Some(100)))
            .is_ok());
        assert!(access.check_token(&identity("bob", None, Some(1))).is_ok());
        // An earlier cutoff never undoes a later one.
        access.revoke_user("alice", 50).await.unwrap();
        assert!(access
            .check_token(&identity("alice", None, Some(99)))
            .is_err());
    }

    #[tokio::test]
    async fn a_user_may_record_a_bounded_number_of_token_revocations_and_an_admin_more() {
        let access = access();
        for i in 0..MAX_REVOCATIONS_PER_USER {
            access
                .revoke_token(&format!("j{i}"), Some("alice"))
                .await
                .unwrap();
        }
        assert!(matches!(
            access.revoke_token("one-more", Some("alice")).await,
            Err(AccessError::TooManyRevocations)
        ));
        assert!(access.revoke_token("one-more", None).await.is_ok());
        // Revoking one already revoked again costs nothing.
        assert!(access.revoke_token("j0", Some("alice")).await.is_ok());
    }

    #[tokio::test]
    async fn a_user_keeps_a_bounded_number_of_browser_records() {
        let access = Arc::new(access());
        for i in 0..MAX_BROWSERS_PER_USER + 10 {
            access.browser_seen(&format!("ext-{i}"), "alice", "b", None);
        }
        assert_eq!(access.browsers(Some("alice")).len(), MAX_BROWSERS_PER_USER);
    }
}
