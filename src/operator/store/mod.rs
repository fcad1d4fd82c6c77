//! The relay's durable state: which browsers exist and whether they are approved, which tokens
//! are revoked, the audit trail, and the `--dev` secret.
//!
//! One [`Store`] with three backends: [`memory`] for tests and throwaway relays, [`sqlite`]
//! (the default: a file in the platform's data directory) for a single node, and [`nats`]
//! (JetStream buckets on the cluster's NATS) for nodes that must share approvals and
//! revocations. Every method is
//! `async` and callers just await it: the NATS backend awaits JetStream on the runtime, and the
//! local backends (SQLite, whose driver blocks on disk; memory, whose audit trail is scanned
//! under one lock) move each call to a blocking thread themselves, so nothing ever blocks the
//! runtime's own threads and no caller has to remember to hop off them. What the hot path reads (is this token revoked, is this browser
//! approved) is mirrored in memory by `crate::operator::access`; the store is where it survives a restart.
//!
//! Opening never falls back to something else: a corrupt, locked, unreadable or unwritable file
//! is an error at start-up that names the file and what to do about it, because a relay that
//! silently forgot its revocations would let revoked tokens back in.

mod chunk;
pub mod memory;
pub mod nats;
pub mod sqlite;

use std::sync::Arc;

use serde::{Deserialize, Serialize};

pub use crate::config::{default_state_path, StateSpec};

/// A browser identity (user + `client_id`) the relay has seen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BrowserRecord {
    /// The extension id (`ext-…`), stable for the identity.
    pub id: String,
    pub user_id: String,
    pub name: String,
    pub version: Option<String>,
    /// Approved out of band; only enforced with `--require-approval`.
    pub approved: bool,
    /// Revoked: its sockets are closed and it may not authenticate again until approved.
    pub revoked: bool,
    /// Seconds since the epoch.
    pub first_seen: i64,
    pub last_seen: i64,
}

/// A revoked token id. `user_id` scopes it: a user's own revocation only ever matches that
/// user's tokens; `None` (an admin's) matches whoever holds the token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RevokedToken {
    pub jti: String,
    pub user_id: Option<String>,
    pub revoked_at: i64,
}

/// Every revocation, as loaded at start.
#[derive(Debug, Default, Clone)]
pub struct Revocations {
    pub tokens: Vec<RevokedToken>,
    /// Per user: tokens issued before this moment (seconds) are refused.
    pub cutoffs: Vec<(String, i64)>,
}

/// One line of the audit trail. Never holds params or results: only who, what, when, how it
/// ended and how long it took.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditRecord {
    /// Milliseconds since the epoch.
    pub at_ms: i64,
    /// `request` (a forwarded request) or a control action: `handshake`, `connect`,
    /// `disconnect`, `approve`, `revoke_browser`, `revoke_token`, `revoke_user`, `kick`.
    pub kind: String,
    pub user_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mcp_client_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connection_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extension_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// 0 for success, else the JSON-RPC error code the client got.
    pub code: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<f64>,
    /// A short note for control actions (who acted, on what); never a token.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// One audit line on its way into a store, borrowed from whatever holds it: the labels of a
/// forwarded request (user, MCP client, connection, browser) belong to its connection and are
/// shared by every request on it, so the writer hands them over without copying them per
/// request. A store that keeps owned records builds one with [`AuditEntry::to_record`]; the
/// NATS store serializes it as the JSON of an [`AuditRecord`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct AuditEntry<'a> {
    pub at_ms: i64,
    pub kind: &'a str,
    pub user_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mcp_client_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connection_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extension_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<&'a str>,
    pub code: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<&'a str>,
}

impl AuditEntry<'_> {
    pub fn to_record(&self) -> AuditRecord {
        AuditRecord {
            at_ms: self.at_ms,
            kind: self.kind.to_owned(),
            user_id: self.user_id.to_owned(),
            mcp_client_id: self.mcp_client_id.map(str::to_owned),
            connection_id: self.connection_id.map(str::to_owned),
            extension_id: self.extension_id.map(str::to_owned),
            method: self.method.map(str::to_owned),
            code: self.code,
            duration_ms: self.duration_ms,
            detail: self.detail.map(str::to_owned),
        }
    }
}

impl<'a> From<&'a AuditRecord> for AuditEntry<'a> {
    fn from(r: &'a AuditRecord) -> Self {
        AuditEntry {
            at_ms: r.at_ms,
            kind: &r.kind,
            user_id: &r.user_id,
            mcp_client_id: r.mcp_client_id.as_deref(),
            connection_id: r.connection_id.as_deref(),
            extension_id: r.extension_id.as_deref(),
            method: r.method.as_deref(),
            code: r.code,
            duration_ms: r.duration_ms,
            detail: r.detail.as_deref(),
        }
    }
}

/// What `GET /api/v1/audit` filters by. `limit` is clamped by the caller.
#[derive(Debug, Clone, Default)]
pub struct AuditQuery {
    pub user_id: Option<String>,
    pub browser: Option<String>,
    pub method: Option<String>,
    pub since_ms: Option<i64>,
    pub until_ms: Option<i64>,
    pub limit: usize,
}

impl AuditQuery {
    fn matches(&self, r: &AuditRecord) -> bool {
        self.user_id.as_ref().is_none_or(|u| *u == r.user_id)
            && self
                .browser
                .as_ref()
                .is_none_or(|b| r.extension_id.as_ref() == Some(b))
            && self
                .method
                .as_ref()
                .is_none_or(|m| r.method.as_ref() == Some(m))
            && self.since_ms.is_none_or(|s| r.at_ms >= s)
            && self.until_ms.is_none_or(|u| r.at_ms < u)
    }
}

/// Something an audit entry can be read from, borrowed. [`Store::append_audit`] takes a whole
/// batch of these rather than entries, so that the SQLite store can move the batch to a
/// blocking thread and build there entries that borrow from it (a request's labels from its
/// connection's tag) instead of copying every event's text to get it across the hop.
pub trait AsAuditEntry: Send + 'static {
    fn entry(&self) -> AuditEntry<'_>;
}

impl AsAuditEntry for AuditRecord {
    fn entry(&self) -> AuditEntry<'_> {
        self.into()
    }
}

/// The store `--state` names, opened and migrated.
///
/// Its methods are `async`, and every caller simply awaits them: each backend decides how it
/// waits. The NATS store awaits JetStream on the runtime (bounded by [`nats::OP_TIMEOUT`]);
/// the local stores do their work on a blocking thread ([`off_runtime`]), never on the
/// runtime's own. An enum rather than a trait object: three known backends, and `async fn`s
/// without boxing.
pub enum Store {
    Memory(Arc<memory::MemoryStore>),
    Sqlite(Arc<sqlite::SqliteStore>),
    Nats(Box<nats::NatsStore>),
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Store::Memory(_) => f.write_str("Store::Memory"),
            Store::Sqlite(s) => write!(f, "Store::Sqlite({})", s.path().display()),
            Store::Nats(n) => write!(f, "Store::Nats({})", n.url()),
        }
    }
}

impl Store {
    /// Opens (creating and migrating when needed, on a blocking thread) the local store `spec`
    /// names. `nats` needs the cluster's connection settings: [`nats::NatsStore::open`].
    pub async fn open(spec: &StateSpec) -> anyhow::Result<Store> {
        match spec {
            StateSpec::Memory => Ok(Store::Memory(Arc::default())),
            StateSpec::Sqlite(path) => {
                let path = path.clone();
                let store =
                    tokio::task::spawn_blocking(move || sqlite::SqliteStore::open(&path)).await??;
                Ok(Store::Sqlite(Arc::new(store)))
            }
            StateSpec::Nats => anyhow::bail!(
                "--state nats keeps the state on the cluster's NATS: it needs --cluster URL \
                 (a nats-server with JetStream enabled, `nats-server -js`)"
            ),
        }
    }

    /// Whether anything survives a restart.
    pub fn is_persistent(&self) -> bool {
        !matches!(self, Store::Memory(_))
    }

    /// Whether other nodes read and write the same store (and so see its changes without
    /// being told over the cluster link).
    pub fn is_shared(&self) -> bool {
        matches!(self, Store::Nats(_))
    }

    /// The NATS backend, for starting its watcher.
    pub fn as_nats(&self) -> Option<&nats::NatsStore> {
        match self {
            Store::Nats(n) => Some(n),
            _ => None,
        }
    }

    /// The store on this machine (memory or SQLite), as one interface, or the shared one.
    fn local(&self) -> Result<Arc<dyn LocalStore>, &nats::NatsStore> {
        match self {
            Store::Memory(m) => Ok(Arc::clone(m) as Arc<dyn LocalStore>),
            Store::Sqlite(s) => Ok(Arc::clone(s) as Arc<dyn LocalStore>),
            Store::Nats(n) => Err(n),
        }
    }

    pub async fn browsers(&self) -> anyhow::Result<Vec<BrowserRecord>> {
        match self.local() {
            Ok(local) => off_runtime(local, |s| s.browsers()).await,
            Err(n) => n.browsers().await,
        }
    }

    pub async fn put_browser(&self, browser: &BrowserRecord) -> anyhow::Result<()> {
        match self.local() {
            Ok(local) => {
                let browser = browser.clone();
                off_runtime(local, move |s| s.put_browser(&browser)).await
            }
            Err(n) => n.put_browser(browser).await,
        }
    }

    /// [`Store::put_browser`] on the calling thread, for a session dropped where there is no
    /// runtime to await anything (the runtime itself shutting down): a local store writes at
    /// once; the shared one needs the runtime to reach NATS, so `None` (the write is lost).
    pub fn put_browser_without_runtime(
        &self,
        browser: &BrowserRecord,
    ) -> Option<anyhow::Result<()>> {
        self.local().ok().map(|local| local.put_browser(browser))
    }

    /// An out-of-band decision about a browser (approved, revoked). Local stores keep it in
    /// the browser's record; the shared one under a key of its own, so that another node
    /// recording the browser as seen never overwrites it.
    pub async fn put_browser_decision(&self, browser: &BrowserRecord) -> anyhow::Result<()> {
        match self {
            Store::Nats(n) => n.put_browser_decision(browser).await,
            _ => self.put_browser(browser).await,
        }
    }

    pub async fn delete_browser(&self, id: &str) -> anyhow::Result<()> {
        match self.local() {
            Ok(local) => {
                let id = id.to_owned();
                off_runtime(local, move |s| s.delete_browser(&id)).await
            }
            Err(n) => n.delete_browser(id).await,
        }
    }

    pub async fn revocations(&self) -> anyhow::Result<Revocations> {
        match self.local() {
            Ok(local) => off_runtime(local, |s| s.revocations()).await,
            Err(n) => n.revocations().await,
        }
    }

    pub async fn revoke_token(&self, token: &RevokedToken) -> anyhow::Result<()> {
        match self.local() {
            Ok(local) => {
                let token = token.clone();
                off_runtime(local, move |s| s.revoke_token(&token)).await
            }
            Err(n) => n.revoke_token(token).await,
        }
    }

    /// Sets `user_id`'s cutoff (a later cutoff replaces an earlier one, never the reverse).
    pub async fn revoke_user(&self, user_id: &str, issued_before: i64) -> anyhow::Result<()> {
        match self.local() {
            Ok(local) => {
                let user_id = user_id.to_owned();
                off_runtime(local, move |s| s.revoke_user(&user_id, issued_before)).await
            }
            Err(n) => n.revoke_user(user_id, issued_before).await,
        }
    }

    /// Sets `user_id`'s cutoff to exactly `issued_before`, lower or not, or removes it (`None`):
    /// an admin's correction.
    pub async fn set_user_cutoff(
        &self,
        user_id: &str,
        issued_before: Option<i64>,
    ) -> anyhow::Result<()> {
        match self.local() {
            Ok(local) => {
                let user_id = user_id.to_owned();
                off_runtime(local, move |s| s.set_user_cutoff(&user_id, issued_before)).await
            }
            Err(n) => n.set_user_cutoff(user_id, issued_before).await,
        }
    }

    /// Appends a batch (one transaction in SQLite) and empties `batch`, written or not: its
    /// events are dropped where they were read (a blocking thread, whatever the backend), and
    /// the vector keeps its allocation for the next batch.
    pub async fn append_audit<E: AsAuditEntry>(&self, batch: &mut Vec<E>) -> anyhow::Result<()> {
        match self.local() {
            Ok(local) => {
                with_entries_off_runtime(batch, move |entries| local.append_audit(entries)).await?
            }
            Err(n) => n.append_audit(batch).await,
        }
    }

    /// Newest first.
    pub async fn query_audit(&self, query: &AuditQuery) -> anyhow::Result<Vec<AuditRecord>> {
        match self.local() {
            Ok(local) => {
                let query = query.clone();
                off_runtime(local, move |s| s.query_audit(&query)).await
            }
            Err(n) => n.query_audit(query).await,
        }
    }

    /// Deletes audit records older than `before_ms`; returns how many.
    pub async fn prune_audit(&self, before_ms: i64) -> anyhow::Result<usize> {
        match self.local() {
            Ok(local) => off_runtime(local, move |s| s.prune_audit(before_ms)).await,
            // JetStream drops messages older than the stream's max age itself.
            Err(_) => Ok(0),
        }
    }

    pub async fn meta(&self, key: &str) -> anyhow::Result<Option<String>> {
        match self.local() {
            Ok(local) => {
                let key = key.to_owned();
                off_runtime(local, move |s| s.meta(&key)).await
            }
            Err(n) => n.meta(key).await,
        }
    }

    pub async fn set_meta(&self, key: &str, value: &str) -> anyhow::Result<()> {
        match self.local() {
            Ok(local) => {
                let (key, value) = (key.to_owned(), value.to_owned());
                off_runtime(local, move |s| s.set_meta(&key, &value)).await
            }
            Err(n) => n.set_meta(key, value).await,
        }
    }
}

/// The two stores on this machine, memory and SQLite, behind one interface, so each [`Store`]
/// method is written once for both (the memory store's calls simply never fail). Their calls
/// block (on the file, on one lock), so [`Store`] makes them only through [`off_runtime`].
trait LocalStore: Send + Sync + 'static {
    fn browsers(&self) -> anyhow::Result<Vec<BrowserRecord>>;
    fn put_browser(&self, browser: &BrowserRecord) -> anyhow::Result<()>;
    fn delete_browser(&self, id: &str) -> anyhow::Result<()>;
    fn revocations(&self) -> anyhow::Result<Revocations>;
    fn revoke_token(&self, token: &RevokedToken) -> anyhow::Result<()>;
    fn revoke_user(&self, user_id: &str, issued_before: i64) -> anyhow::Result<()>;
    fn set_user_cutoff(&self, user_id: &str, issued_before: Option<i64>) -> anyhow::Result<()>;
    fn append_audit(&self, entries: &[AuditEntry<'_>]) -> anyhow::Result<()>;
    fn query_audit(&self, query: &AuditQuery) -> anyhow::Result<Vec<AuditRecord>>;
    fn prune_audit(&self, before_ms: i64) -> anyhow::Result<usize>;
    fn meta(&self, key: &str) -> anyhow::Result<Option<String>>;
    fn set_meta(&self, key: &str, value: &str) -> anyhow::Result<()>;
}

/// Runs `f` with a local store on a blocking thread and awaits it. SQLite blocks on the file
/// (and on its connection's lock while another call holds it); the memory store scans up to
/// [`memory::MAX_AUDIT_RECORDS`] audit records under its one lock, which every other call then
/// waits for. Either wait, on one of the runtime's own threads, would stall every socket that
/// thread serves.
async fn off_runtime<T: Send + 'static>(
    store: Arc<dyn LocalStore>,
    f: impl FnOnce(&dyn LocalStore) -> anyhow::Result<T> + Send + 'static,
) -> anyhow::Result<T> {
    tokio::task::spawn_blocking(move || f(store.as_ref()))
        .await
        .map_err(|e| anyhow::anyhow!("a state store call failed: {e}"))?
}

/// Runs `f` on a blocking thread over the entries `batch`'s events give, then empties `batch`
/// (its events dropped there, its allocation kept for the next batch). Every backend writes
/// an audit batch this way: the entries borrow from their events (a request's labels from its
/// connection's tag), so they are built on the thread that uses them rather than copied across.
async fn with_entries_off_runtime<E, T>(
    batch: &mut Vec<E>,
    f: impl FnOnce(&[AuditEntry<'_>]) -> T + Send + 'static,
) -> anyhow::Result<T>
where
    E: AsAuditEntry,
    T: Send + 'static,
{
    let mut events = std::mem::take(batch);
    let (events, value) = tokio::task::spawn_blocking(move || {
        let entries: Vec<AuditEntry<'_>> = events.iter().map(E::entry).collect();
        let value = f(&entries);
        drop(entries);
        events.clear();
        (events, value)
    })
    .await
    .map_err(|e| anyhow::anyhow!("a state store call failed: {e}"))?;
    *batch = events;
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_specs_parse_and_bad_ones_say_what_is_accepted() {
        assert_eq!("memory".parse::<StateSpec>(), Ok(StateSpec::Memory));
        assert_eq!(
            "sqlite:/tmp/x.db".parse::<StateSpec>(),
            Ok(StateSpec::Sqlite("/tmp/x.db".into()))
        );
        assert_eq!("nats".parse::<StateSpec>(), Ok(StateSpec::Nats));
        let error = "redis://x".parse::<StateSpec>().unwrap_err();
        assert!(error.contains("memory, sqlite:PATH"), "{error}");
        assert!("sqlite:".parse::<StateSpec>().is_err());
    }

    #[tokio::test]
    async fn nats_state_without_the_clusters_connection_says_it_needs_cluster() {
        let error = Store::open(&StateSpec::Nats).await.unwrap_err().to_string();
        assert!(error.contains("needs --cluster"), "{error}");
    }

    /// The same behaviour from both backends.
    async fn exercise(store: &Store) {
        let browser = BrowserRecord {
            id: "ext-1".into(),
            user_id: "alice".into(),
            name: "Work".into(),
            version: Some("1.0".into()),
            approved: false,
            revoked: false,
            first_seen: 10,
            last_seen: 20,
        };
        store.put_browser(&browser).await.unwrap();
        let approved = BrowserRecord {
            approved: true,
            last_seen: 30,
            ..browser.clone()
        };
        store.put_browser(&approved).await.unwrap();
        assert_eq!(store.browsers().await.unwrap(), vec![approved]);

        store
            .revoke_token(&RevokedToken {
                jti: "j1".into(),
                user_id: Some("alice".into()),
                revoked_at: 5,
            })
            .await
            .unwrap();
        store.revoke_user("bob", 100).await.unwrap();
        store.revoke_user("bob", 50).await.unwrap();
        let revocations = store.revocations().await.unwrap();
        assert_eq!(revocations.tokens.len(), 1);
        assert_eq!(revocations.cutoffs, vec![("bob".to_owned(), 100)]);

        let record = |at_ms, method: &str| AuditRecord {
            at_ms,
            kind: "request".into(),
            user_id: "alice".into(),
            mcp_client_id: Some("mcp-1".into()),
            connection_id: Some("conn-1".into()),
            extension_id: Some("ext-1".into()),
            method: Some(method.into()),
            code: 0,
            duration_ms: Some(1.5),
            detail: None,
        };
        let mut batch = vec![record(1, "a"), record(2, "b"), record(3, "a")];
        store.append_audit(&mut batch).await.unwrap();
        assert!(batch.is_empty(), "the batch is handed back emptied");
        let all = store
            .query_audit(&AuditQuery {
                limit: 10,
                ..Default::default()
            })
            .await
            .unwrap();
        assert_eq!(
            all.iter().map(|r| r.at_ms).collect::<Vec<_>>(),
            vec![3, 2, 1]
        );
        let only_a = store
            .query_audit(&AuditQuery {
                method: Some("a".into()),
                since_ms: Some(2),
                limit: 10,
                ..Default::default()
            })
            .await
            .unwrap();
        assert_eq!(only_a, vec![record(3, "a")]);
        assert_eq!(store.prune_audit(3).await.unwrap(), 2);
        assert_eq!(store.meta("k").await.unwrap(), None);
        store.set_meta("k", "v").await.unwrap();
        assert_eq!(store.meta("k").await.unwrap().as_deref(), Some("v"));
    }

    #[tokio::test]
    async fn the_memory_store_keeps_what_it_is_given() {
        exercise(&Store::open(&StateSpec::Memory).await.unwrap()).await;
    }

    #[tokio::test]
    async fn the_sqlite_store_keeps_what_it_is_given_across_reopening() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub").join("state.db");
        {
            let store = Store::open(&StateSpec::Sqlite(path.clone())).await.unwrap();
            exercise(&store).await;
        }
        let store = Store::open(&StateSpec::Sqlite(path)).await.unwrap();
        assert_eq!(store.browsers().await.unwrap().len(), 1);
        assert_eq!(store.revocations().await.unwrap().cutoffs.len(), 1);
        assert_eq!(store.meta("k").await.unwrap().as_deref(), Some("v"));
    }
}
