//! The relay's durable state: which browsers exist and whether they are approved, which tokens
//! are revoked, the audit trail, and the `--dev` secret.
//!
//! One [`Store`] with three backends: [`memory`] for tests and throwaway relays, [`sqlite`]
//! (the default: a file in the platform's data directory) for a single node, and [`nats`]
//! (JetStream buckets on the cluster's NATS) for nodes that must share approvals and
//! revocations. Every method is
//! synchronous and may block on disk: async code calls them through
//! [`tokio::task::spawn_blocking`] (see `crate::operator::access` and `crate::operator::audit`), never on the
//! runtime's own threads. What the hot path reads (is this token revoked, is this browser
//! approved) is mirrored in memory by `crate::operator::access`; the store is where it survives a restart.
//!
//! Opening never falls back to something else: a corrupt, locked, unreadable or unwritable file
//! is an error at start-up that names the file and what to do about it, because a relay that
//! silently forgot its revocations would let revoked tokens back in.

mod chunk;
pub mod memory;
pub mod nats;
pub mod sqlite;

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

/// The store `--state` names, opened and migrated.
pub enum Store {
    Memory(memory::MemoryStore),
    Sqlite(sqlite::SqliteStore),
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
    /// Opens (creating and migrating when needed) the local store `spec` names. Blocking.
    /// `nats` needs the cluster's connection settings: [`nats::NatsStore::open`].
    pub fn open(spec: &StateSpec) -> anyhow::Result<Store> {
        match spec {
            StateSpec::Memory => Ok(Store::Memory(memory::MemoryStore::default())),
            StateSpec::Sqlite(path) => Ok(Store::Sqlite(sqlite::SqliteStore::open(path)?)),
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

    pub fn browsers(&self) -> anyhow::Result<Vec<BrowserRecord>> {
        match self {
            Store::Memory(m) => Ok(m.browsers()),
            Store::Sqlite(s) => s.browsers(),
            Store::Nats(n) => n.browsers(),
        }
    }

    pub fn put_browser(&self, browser: &BrowserRecord) -> anyhow::Result<()> {
        match self {
            Store::Memory(m) => {
                m.put_browser(browser);
                Ok(())
            }
            Store::Sqlite(s) => s.put_browser(browser),
            Store::Nats(n) => n.put_browser(browser),
        }
    }

    /// An out-of-band decision about a browser (approved, revoked). Local stores keep it in
    /// the browser's record; the shared one under a key of its own, so that another node
    /// recording the browser as seen never overwrites it.
    pub fn put_browser_decision(&self, browser: &BrowserRecord) -> anyhow::Result<()> {
        match self {
            Store::Nats(n) => n.put_browser_decision(browser),
            _ => self.put_browser(browser),
        }
    }

    pub fn delete_browser(&self, id: &str) -> anyhow::Result<()> {
        match self {
            Store::Memory(m) => {
                m.delete_browser(id);
                Ok(())
            }
            Store::Sqlite(s) => s.delete_browser(id),
            Store::Nats(n) => n.delete_browser(id),
        }
    }

    pub fn revocations(&self) -> anyhow::Result<Revocations> {
        match self {
            Store::Memory(m) => Ok(m.revocations()),
            Store::Sqlite(s) => s.revocations(),
            Store::Nats(n) => n.revocations(),
        }
    }

    pub fn revoke_token(&self, token: &RevokedToken) -> anyhow::Result<()> {
        match self {
            Store::Memory(m) => {
                m.revoke_token(token);
                Ok(())
            }
            Store::Sqlite(s) => s.revoke_token(token),
            Store::Nats(n) => n.revoke_token(token),
        }
    }

    /// Sets `user_id`'s cutoff (a later cutoff replaces an earlier one, never the reverse).
    pub fn revoke_user(&self, user_id: &str, issued_before: i64) -> anyhow::Result<()> {
        match self {
            Store::Memory(m) => {
                m.revoke_user(user_id, issued_before);
                Ok(())
            }
            Store::Sqlite(s) => s.revoke_user(user_id, issued_before),
            Store::Nats(n) => n.revoke_user(user_id, issued_before),
        }
    }

    /// Sets `user_id`'s cutoff to exactly `issued_before`, lower or not, or removes it (`None`):
    /// an admin's correction.
    pub fn set_user_cutoff(&self, user_id: &str, issued_before: Option<i64>) -> anyhow::Result<()> {
        match self {
            Store::Memory(m) => {
                m.set_user_cutoff(user_id, issued_before);
                Ok(())
            }
            Store::Sqlite(s) => s.set_user_cutoff(user_id, issued_before),
            Store::Nats(n) => n.set_user_cutoff(user_id, issued_before),
        }
    }

    /// Appends a batch (one transaction in SQLite).
    pub fn append_audit(&self, entries: &[AuditEntry<'_>]) -> anyhow::Result<()> {
        match self {
            Store::Memory(m) => {
                m.append_audit(entries);
                Ok(())
            }
            Store::Sqlite(s) => s.append_audit(entries),
            Store::Nats(n) => n.append_audit(entries),
        }
    }

    /// Newest first.
    pub fn query_audit(&self, query: &AuditQuery) -> anyhow::Result<Vec<AuditRecord>> {
        match self {
            Store::Memory(m) => Ok(m.query_audit(query)),
            Store::Sqlite(s) => s.query_audit(query),
            Store::Nats(n) => n.query_audit(query),
        }
    }

    /// Deletes audit records older than `before_ms`; returns how many.
    pub fn prune_audit(&self, before_ms: i64) -> anyhow::Result<usize> {
        match self {
            Store::Memory(m) => Ok(m.prune_audit(before_ms)),
            Store::Sqlite(s) => s.prune_audit(before_ms),
            // JetStream drops messages older than the stream's max age itself.
            Store::Nats(_) => Ok(0),
        }
    }

    pub fn meta(&self, key: &str) -> anyhow::Result<Option<String>> {
        match self {
            Store::Memory(m) => Ok(m.meta(key)),
            Store::Sqlite(s) => s.meta(key),
            Store::Nats(n) => n.meta(key),
        }
    }

    pub fn set_meta(&self, key: &str, value: &str) -> anyhow::Result<()> {
        match self {
            Store::Memory(m) => {
                m.set_meta(key, value);
                Ok(())
            }
            Store::Sqlite(s) => s.set_meta(key, value),
            Store::Nats(n) => n.set_meta(key, value),
        }
    }
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

    #[test]
    fn nats_state_without_the_clusters_connection_says_it_needs_cluster() {
        let error = Store::open(&StateSpec::Nats).unwrap_err().to_string();
        assert!(error.contains("needs --cluster"), "{error}");
    }

    /// The same behaviour from both backends.
    fn exercise(store: &Store) {
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
        store.put_browser(&browser).unwrap();
        let approved = BrowserRecord {
            approved: true,
            last_seen: 30,
            ..browser.clone()
        };
        store.put_browser(&approved).unwrap();
        assert_eq!(store.browsers().unwrap(), vec![approved]);

        store
            .revoke_token(&RevokedToken {
                jti: "j1".into(),
                user_id: Some("alice".into()),
                revoked_at: 5,
            })
            .unwrap();
        store.revoke_user("bob", 100).unwrap();
        store.revoke_user("bob", 50).unwrap();
        let revocations = store.revocations().unwrap();
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
        store
            .append_audit(&[
                (&record(1, "a")).into(),
                (&record(2, "b")).into(),
                (&record(3, "a")).into(),
            ])
            .unwrap();
        let all = store
            .query_audit(&AuditQuery {
                limit: 10,
                ..Default::default()
            })
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
            .unwrap();
        assert_eq!(only_a, vec![record(3, "a")]);
        assert_eq!(store.prune_audit(3).unwrap(), 2);
        assert_eq!(store.meta("k").unwrap(), None);
        store.set_meta("k", "v").unwrap();
        assert_eq!(store.meta("k").unwrap().as_deref(), Some("v"));
    }

    #[test]
    fn the_memory_store_keeps_what_it_is_given() {
        exercise(&Store::open(&StateSpec::Memory).unwrap());
    }

    #[test]
    fn the_sqlite_store_keeps_what_it_is_given_across_reopening() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub").join("state.db");
        {
            let store = Store::open(&StateSpec::Sqlite(path.clone())).unwrap();
            exercise(&store);
        }
        let store = Store::open(&StateSpec::Sqlite(path)).unwrap();
        assert_eq!(store.browsers().unwrap().len(), 1);
        assert_eq!(store.revocations().unwrap().cutoffs.len(), 1);
        assert_eq!(store.meta("k").unwrap().as_deref(), Some("v"));
    }
}
