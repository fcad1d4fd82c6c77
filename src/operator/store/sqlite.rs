//! The default backend: one SQLite file (bundled SQLite, nothing to install).
//!
//! Opening it takes an exclusive advisory lock on `PATH.lock` first, so two relays never share
//! one file (each keeps an in-memory mirror of approvals and revocations, and two mirrors of
//! one file would drift apart); the second gets a clear error instead. Then the schema is
//! brought up to date inside one transaction by `rusqlite_migration`, which keeps the version
//! in SQLite's `user_version`: a file written by a newer relay, or one that is not a SQLite
//! database at all, stops start-up. Files written before that kept their version in a
//! `schema_version` table; it is moved into `user_version` (and dropped) first.

use std::collections::hash_map::{Entry, HashMap};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::Context;
use rusqlite::{params, CachedStatement, Connection, OptionalExtension, Transaction};
use rusqlite_migration::{Migrations, M};

use super::chunk::{self, Packed};
use super::{
    AuditEntry, AuditQuery, AuditRecord, BrowserRecord, LocalStore, Revocations, RevokedToken,
};

/// Each entry moves the schema from version `i` to `i + 1` ([`migrations`] runs them). Append
/// only: a published step never changes, because files out there were migrated with it.
const MIGRATIONS: &[&str] = &[
    // 1: browsers, revocations, the audit trail, small settings (the dev secret).
    "CREATE TABLE browsers (
        id TEXT PRIMARY KEY,
        user_id TEXT NOT NULL,
        name TEXT NOT NULL,
        version TEXT,
        approved INTEGER NOT NULL,
        revoked INTEGER NOT NULL,
        first_seen INTEGER NOT NULL,
        last_seen INTEGER NOT NULL
     );
     CREATE INDEX browsers_user ON browsers(user_id);
     CREATE TABLE revoked_tokens (
        jti TEXT NOT NULL,
        user_id TEXT NOT NULL, -- '' = any user (an admin's revocation)
        revoked_at INTEGER NOT NULL,
        PRIMARY KEY (jti, user_id)
     );
     CREATE TABLE user_cutoffs (
        user_id TEXT PRIMARY KEY,
        issued_before INTEGER NOT NULL
     );
     CREATE TABLE audit (
        at_ms INTEGER NOT NULL,
        kind TEXT NOT NULL,
        user_id TEXT NOT NULL,
        mcp_client_id TEXT,
        connection_id TEXT,
        extension_id TEXT,
        method TEXT,
        code INTEGER NOT NULL,
        duration_ms REAL,
        detail TEXT
     );
     CREATE INDEX audit_time ON audit(at_ms);
     CREATE INDEX audit_user_time ON audit(user_id, at_ms);
     CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);",
    // 2: the audit trail made cheap to append to. The labels every request of a connection
    // repeats (user, MCP client, connection id, browser) move to `audit_labels`, one row per
    // combination; events are packed many to a row in `audit_chunks` (see `chunk.rs`), each
    // referring to its labels by id. The old rows are packed by `pack_v1_audit` after this step,
    // in the same transaction.
    "CREATE TABLE audit_labels (
        id INTEGER PRIMARY KEY,
        user_id TEXT NOT NULL,
        mcp_client_id TEXT,
        connection_id TEXT,
        extension_id TEXT,
        last_ms INTEGER NOT NULL -- newest event that refers to it: pruned with the events
     );
     CREATE INDEX audit_labels_connection ON audit_labels(connection_id);
     CREATE TABLE audit_chunks (
        id INTEGER PRIMARY KEY, -- in the order written: ties on time are broken by it
        first_ms INTEGER NOT NULL, -- oldest and newest event in it
        last_ms INTEGER NOT NULL,
        count INTEGER NOT NULL,
        events BLOB NOT NULL
     );
     CREATE INDEX audit_chunks_last ON audit_chunks(last_ms);
     CREATE INDEX audit_chunks_first ON audit_chunks(first_ms); -- finds what pruning cuts
     ALTER TABLE audit RENAME TO audit_v1;",
];

/// Most events packed in one chunk: a query decodes whole chunks, so this bounds the work of
/// finding the newest few events.
const CHUNK_EVENTS: usize = 2048;

/// Label combinations whose `audit_labels` id is kept in memory; past this the map starts over
/// (a miss costs one indexed lookup, once per connection per batch). Only a connection's labels
/// are kept: its requests repeat them batch after batch. Labels without a connection (a
/// browser's `authenticate`, an MCP socket's `handshake`, a refused `connect`) come once per
/// socket; kept, every new browser identity or MCP socket would cost the relay an entry (about
/// 250 bytes) until the map started over, so they are looked up each time instead.
const LABEL_CACHE: usize = 8192;

/// A combination of audit labels, owned: the key of the id cache.
type Labels = (String, Option<String>, Option<String>, Option<String>);

/// The labels of an entry by where their text lives. Inside one `append_audit` call every entry
/// borrows from a batch that outlives the call, so equal addresses and lengths mean equal text:
/// the requests of one connection, which share one `ConnTag`, find their labels with a few
/// integer compares instead of hashing and comparing the strings on every row.
type LabelsIdentity = [usize; 8];

fn identity(e: &AuditEntry<'_>) -> LabelsIdentity {
    let at = |s: Option<&str>| s.map_or((0, 0), |s| (s.as_ptr() as usize, s.len()));
    let (u, ul) = at(Some(e.user_id));
    let (m, ml) = at(e.mcp_client_id);
    let (c, cl) = at(e.connection_id);
    let (x, xl) = at(e.extension_id);
    [u, ul, m, ml, c, cl, x, xl]
}

pub struct SqliteStore {
    path: PathBuf,
    conn: Mutex<Connection>,
    /// `audit_labels` ids by their text. Locked after `conn`, only by the audit writer and the
    /// pruner.
    labels: Mutex<HashMap<Labels, i64>>,
    /// Held open for the store's life: the advisory lock lives as long as the descriptor.
    _lock: File,
}

impl SqliteStore {
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Opens, locks and migrates the file. Every failure names the file and what to do.
    pub fn open(path: &Path) -> anyhow::Result<SqliteStore> {
        let hint = |what: &str| {
            format!(
                "state file {}: {what} (pass --state sqlite:OTHER_PATH to use another file, or \
                 --state memory to keep nothing)",
                path.display()
            )
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .with_context(|| hint(&format!("cannot create {}", dir.display())))?;
        }
        let lock_path = lock_path(path);
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .with_context(|| hint(&format!("cannot open {}", lock_path.display())))?;
        lock_exclusively(&lock).with_context(|| {
            hint("it is locked: another mcp-relay uses it (one file per relay process)")
        })?;
        let mut conn = Connection::open(path).with_context(|| hint("cannot open it"))?;
        // It may hold the --dev secret: readable by this user only.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600));
        }
        conn.busy_timeout(std::time::Duration::from_secs(2))?;
        migrate(&mut conn).map_err(|e| {
            let text = e.to_string();
            let what = if text.contains("not a database") || text.contains("malformed") {
                "it is not a mcp-relay state database (corrupt, or another kind of file)".to_owned()
            } else if text.contains("readonly") || text.contains("read-only") {
                "it is not writable".to_owned()
            } else if text.contains("locked") || text.contains("busy") {
                "it is locked by another process".to_owned()
            } else {
                text
            };
            anyhow::anyhow!(hint(&what))
        })?;
        Ok(SqliteStore {
            path: path.to_owned(),
            conn: Mutex::new(conn),
            labels: Mutex::new(HashMap::new()),
            _lock: lock,
        })
    }

    fn with<T>(&self, f: impl FnOnce(&Connection) -> rusqlite::Result<T>) -> anyhow::Result<T> {
        let conn = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        f(&conn).with_context(|| format!("state file {}", self.path.display()))
    }
}

impl LocalStore for SqliteStore {
    fn browsers(&self) -> anyhow::Result<Vec<BrowserRecord>> {
        self.with(|c| {
            let mut stmt = c.prepare(
                "SELECT id, user_id, name, version, approved, revoked, first_seen, last_seen
                 FROM browsers ORDER BY id",
            )?;
            let rows = stmt.query_map([], |r| {
                Ok(BrowserRecord {
                    id: r.get(0)?,
                    user_id: r.get(1)?,
                    name: r.get(2)?,
                    version: r.get(3)?,
                    approved: r.get(4)?,
                    revoked: r.get(5)?,
                    first_seen: r.get(6)?,
                    last_seen: r.get(7)?,
                })
            })?;
            rows.collect()
        })
    }

    fn put_browser(&self, b: &BrowserRecord) -> anyhow::Result<()> {
        self.with(|c| {
            c.execute(
                "INSERT INTO browsers (id, user_id, name, version, approved, revoked, first_seen, last_seen)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
                 ON CONFLICT(id) DO UPDATE SET user_id = ?2, name = ?3, version = ?4,
                    approved = ?5, revoked = ?6, first_seen = ?7, last_seen = ?8",
                params![
                    b.id,
                    b.user_id,
                    b.name,
                    b.version,
                    b.approved,
                    b.revoked,
                    b.first_seen,
                    b.last_seen
                ],
            )
            .map(|_| ())
        })
    }

    fn delete_browser(&self, id: &str) -> anyhow::Result<()> {
        self.with(|c| {
            c.execute("DELETE FROM browsers WHERE id = ?1", params![id])
                .map(|_| ())
        })
    }

    fn revocations(&self) -> anyhow::Result<Revocations> {
        self.with(|c| {
            let tokens = c
                .prepare("SELECT jti, user_id, revoked_at FROM revoked_tokens")?
                .query_map([], |r| {
                    let user: String = r.get(1)?;
                    Ok(RevokedToken {
                        jti: r.get(0)?,
                        user_id: (!user.is_empty()).then_some(user),
                        revoked_at: r.get(2)?,
                    })
                })?
                .collect::<rusqlite::Result<_>>()?;
            let cutoffs = c
                .prepare("SELECT user_id, issued_before FROM user_cutoffs ORDER BY user_id")?
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<rusqlite::Result<_>>()?;
            Ok(Revocations { tokens, cutoffs })
        })
    }

    fn revoke_token(&self, t: &RevokedToken) -> anyhow::Result<()> {
        self.with(|c| {
            c.execute(
                "INSERT OR IGNORE INTO revoked_tokens (jti, user_id, revoked_at) VALUES (?1, ?2, ?3)",
                params![t.jti, t.user_id.as_deref().unwrap_or(""), t.revoked_at],
            )
            .map(|_| ())
        })
    }

    fn revoke_user(&self, user_id: &str, issued_before: i64) -> anyhow::Result<()> {
        self.with(|c| {
            c.execute(
                "INSERT INTO user_cutoffs (user_id, issued_before) VALUES (?1, ?2)
                 ON CONFLICT(user_id) DO UPDATE SET issued_before = max(issued_before, ?2)",
                params![user_id, issued_before],
            )
            .map(|_| ())
        })
    }

    fn set_user_cutoff(&self, user_id: &str, issued_before: Option<i64>) -> anyhow::Result<()> {
        self.with(|c| {
            match issued_before {
                Some(before) => c.execute(
                    "INSERT INTO user_cutoffs (user_id, issued_before) VALUES (?1, ?2)
                     ON CONFLICT(user_id) DO UPDATE SET issued_before = ?2",
                    params![user_id, before],
                ),
                None => c.execute(
                    "DELETE FROM user_cutoffs WHERE user_id = ?1",
                    params![user_id],
                ),
            }
            .map(|_| ())
        })
    }

    /// One transaction per batch, one row per [`CHUNK_EVENTS`] events. Labels are looked up
    /// once per connection per batch (in memory, else in `audit_labels`, else added there),
    /// and each labels row used gets its `last_ms` moved on once per batch.
    fn append_audit(&self, entries: &[AuditEntry<'_>]) -> anyhow::Result<()> {
        let mut conn = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        let mut cache = self.labels.lock().unwrap_or_else(|e| e.into_inner());
        let result = (|| -> rusqlite::Result<()> {
            let tx = conn.transaction()?;
            append_chunks(&tx, &mut cache, entries)?;
            tx.commit()
        })();
        if result.is_err() {
            // Rolled back: ids added in this transaction no longer exist.
            cache.clear();
        }
        result.with_context(|| format!("state file {}", self.path.display()))
    }

    /// Newest first (by time, then by the order written). Walks the chunks by their newest
    /// event, newest first, and stops at the first chunk that cannot hold anything newer than
    /// the `limit` events already found: the newest events (the dashboard's view) cost one or
    /// two chunks, a filter that matches little reads the chunks in between.
    fn query_audit(&self, q: &AuditQuery) -> anyhow::Result<Vec<AuditRecord>> {
        self.with(|c| query_chunks(c, q))
    }

    /// Deletes the events older than `before_ms` (whole chunks, and the old part of the chunk
    /// that straddles it), and the labels no remaining event refers to.
    fn prune_audit(&self, before_ms: i64) -> anyhow::Result<usize> {
        let mut conn = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        let mut cache = self.labels.lock().unwrap_or_else(|e| e.into_inner());
        let result = (|| -> rusqlite::Result<usize> {
            let tx = conn.transaction()?;
            let mut deleted: i64 = tx.query_row(
                "SELECT coalesce(sum(count), 0) FROM audit_chunks WHERE last_ms < ?1",
                params![before_ms],
                |r| r.get(0),
            )?;
            tx.execute(
                "DELETE FROM audit_chunks WHERE last_ms < ?1",
                params![before_ms],
            )?;
            let straddling: Vec<(i64, i64, Vec<u8>)> = tx
                .prepare("SELECT id, first_ms, events FROM audit_chunks WHERE first_ms < ?1")?
                .query_map(params![before_ms], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                })?
                .collect::<rusqlite::Result<_>>()?;
            for (id, first_ms, blob) in straddling {
                let kept: Vec<Packed<'_>> = chunk::unpack(&blob, first_ms)
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(damaged)?
                    .into_iter()
                    .filter(|e| e.at_ms >= before_ms)
                    .collect();
                let old = chunk::unpack(&blob, first_ms).count() - kept.len();
                deleted += old as i64;
                let (first, last) = span(kept.iter().map(|e| e.at_ms));
                let mut repacked = Vec::with_capacity(blob.len());
                for event in &kept {
                    chunk::pack(&mut repacked, first, event);
                }
                tx.execute(
                    "UPDATE audit_chunks SET first_ms = ?2, last_ms = ?3, count = ?4, events = ?5
                     WHERE id = ?1",
                    params![id, first, last, kept.len() as i64, repacked],
                )?;
            }
            let labels = tx.execute(
                "DELETE FROM audit_labels WHERE last_ms < ?1",
                params![before_ms],
            )?;
            tx.commit()?;
            if labels > 0 {
                cache.clear();
            }
            Ok(deleted as usize)
        })();
        result.with_context(|| format!("state file {}", self.path.display()))
    }

    fn meta(&self, key: &str) -> anyhow::Result<Option<String>> {
        self.with(|c| {
            c.query_row("SELECT value FROM meta WHERE key = ?1", params![key], |r| {
                r.get(0)
            })
            .optional()
        })
    }

    fn set_meta(&self, key: &str, value: &str) -> anyhow::Result<()> {
        self.with(|c| {
            c.execute(
                "INSERT INTO meta (key, value) VALUES (?1, ?2)
                 ON CONFLICT(key) DO UPDATE SET value = ?2",
                params![key, value],
            )
            .map(|_| ())
        })
    }
}

/// Packs `entries` into chunks inside the caller's transaction.
fn append_chunks(
    tx: &Connection,
    cache: &mut HashMap<Labels, i64>,
    entries: &[AuditEntry<'_>],
) -> rusqlite::Result<()> {
    let mut find = tx.prepare_cached(
        "SELECT id FROM audit_labels WHERE connection_id IS ?3 AND user_id = ?1
            AND mcp_client_id IS ?2 AND extension_id IS ?4 LIMIT 1",
    )?;
    let mut add = tx.prepare_cached(
        "INSERT INTO audit_labels (user_id, mcp_client_id, connection_id, extension_id, last_ms)
         VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    let mut insert = tx.prepare_cached(
        "INSERT INTO audit_chunks (first_ms, last_ms, count, events) VALUES (?1, ?2, ?3, ?4)",
    )?;
    let mut seen: HashMap<LabelsIdentity, (i64, i64)> = HashMap::new();
    let mut blob = Vec::new();
    for part in entries.chunks(CHUNK_EVENTS) {
        let (first_ms, last_ms) = span(part.iter().map(|e| e.at_ms));
        blob.clear();
        for e in part {
            let slot = match seen.entry(identity(e)) {
                Entry::Occupied(slot) => slot.into_mut(),
                Entry::Vacant(slot) => {
                    let id = labels_id(cache, &mut find, &mut add, tx, e)?;
                    slot.insert((id, e.at_ms))
                }
            };
            slot.1 = slot.1.max(e.at_ms);
            let event = Packed {
                at_ms: e.at_ms,
                labels: slot.0,
                kind: e.kind,
                method: e.method,
                code: e.code,
                duration_ms: e.duration_ms,
                detail: e.detail,
            };
            chunk::pack(&mut blob, first_ms, &event);
        }
        insert.execute(params![first_ms, last_ms, part.len() as i64, blob])?;
    }
    let mut touch =
        tx.prepare_cached("UPDATE audit_labels SET last_ms = max(last_ms, ?2) WHERE id = ?1")?;
    for (id, last_ms) in seen.values() {
        touch.execute(params![id, last_ms])?;
    }
    Ok(())
}

/// Smallest and largest of `times` (0, 0 for none).
fn span(times: impl Iterator<Item = i64>) -> (i64, i64) {
    times
        .fold(None, |span, t| match span {
            None => Some((t, t)),
            Some((lo, hi)) => Some((t.min(lo), t.max(hi))),
        })
        .unwrap_or((0, 0))
}

fn damaged(error: chunk::Damaged) -> rusqlite::Error {
    rusqlite::Error::ToSqlConversionFailure(Box::new(error))
}

/// See [`SqliteStore::query_audit`].
fn query_chunks(c: &Connection, q: &AuditQuery) -> rusqlite::Result<Vec<AuditRecord>> {
    if q.limit == 0 {
        return Ok(Vec::new());
    }
    // A user or browser filter is a set of labels ids.
    let wanted: Option<std::collections::HashSet<i64>> =
        if q.user_id.is_some() || q.browser.is_some() {
            let mut stmt = c.prepare_cached(
                "SELECT id FROM audit_labels WHERE (?1 IS NULL OR user_id = ?1)
                    AND (?2 IS NULL OR extension_id = ?2)",
            )?;
            let ids = stmt.query_map(params![q.user_id, q.browser], |r| r.get(0))?;
            let ids = ids.collect::<rusqlite::Result<std::collections::HashSet<i64>>>()?;
            if ids.is_empty() {
                return Ok(Vec::new());
            }
            Some(ids)
        } else {
            None
        };
    let mut chunks = c.prepare_cached(
        "SELECT id, first_ms, last_ms, events FROM audit_chunks
         WHERE last_ms >= ?1 AND first_ms < ?2 ORDER BY last_ms DESC",
    )?;
    let mut rows = chunks.query(params![
        q.since_ms.unwrap_or(i64::MIN),
        q.until_ms.unwrap_or(i64::MAX)
    ])?;
    // (at_ms, chunk id, position in it, labels id, the record without its labels)
    let mut found: Vec<(i64, i64, usize, i64, AuditRecord)> = Vec::new();
    let newest_first = |a: &(i64, i64, usize, i64, AuditRecord),
                        b: &(i64, i64, usize, i64, AuditRecord)| {
        (b.0, b.1, b.2).cmp(&(a.0, a.1, a.2))
    };
    while let Some(row) = rows.next()? {
        let last_ms: i64 = row.get(2)?;
        if found.len() >= q.limit && found.last().is_some_and(|f| last_ms < f.0) {
            break;
        }
        let (id, first_ms): (i64, i64) = (row.get(0)?, row.get(1)?);
        let blob = row.get_ref(3)?.as_blob()?;
        for (at, event) in chunk::unpack(blob, first_ms).enumerate() {
            let e = event.map_err(damaged)?;
            let keep = q.since_ms.is_none_or(|s| e.at_ms >= s)
                && q.until_ms.is_none_or(|u| e.at_ms < u)
                && q.method.as_deref().is_none_or(|m| e.method == Some(m))
                && wanted.as_ref().is_none_or(|w| w.contains(&e.labels));
            if keep {
                let record = AuditRecord {
                    at_ms: e.at_ms,
                    kind: e.kind.to_owned(),
                    user_id: String::new(),
                    mcp_client_id: None,
                    connection_id: None,
                    extension_id: None,
                    method: e.method.map(str::to_owned),
                    code: e.code,
                    duration_ms: e.duration_ms,
                    detail: e.detail.map(str::to_owned),
                };
                found.push((e.at_ms, id, at, e.labels, record));
            }
        }
        if found.len() >= q.limit {
            // Sorted, so that the last is the oldest that still makes the answer.
            found.sort_by(newest_first);
            found.truncate(q.limit);
        }
    }
    found.sort_by(newest_first);
    // The labels, once per id.
    let mut labels: HashMap<i64, Labels> = HashMap::new();
    let mut read = c.prepare_cached(
        "SELECT user_id, mcp_client_id, connection_id, extension_id FROM audit_labels
         WHERE id = ?1",
    )?;
    let mut records = Vec::with_capacity(found.len());
    for (_, _, _, id, mut record) in found {
        let l = match labels.entry(id) {
            Entry::Occupied(l) => l.into_mut(),
            Entry::Vacant(l) => l.insert(read.query_row(params![id], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
            })?),
        };
        record.user_id = l.0.clone();
        record.mcp_client_id = l.1.clone();
        record.connection_id = l.2.clone();
        record.extension_id = l.3.clone();
        records.push(record);
    }
    Ok(records)
}

/// Packs the rows of migration 1's `audit` table (renamed `audit_v1` by migration 2) into
/// chunks, in their order, and drops it. Runs inside the migration's transaction, after
/// migration 2's SQL.
fn pack_v1_audit(conn: &Transaction<'_>) -> rusqlite_migration::HookResult {
    pack_v1_audit_rows(conn)?;
    Ok(())
}

fn pack_v1_audit_rows(conn: &Connection) -> rusqlite::Result<()> {
    let pending: i64 = conn.query_row(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'audit_v1'",
        [],
        |r| r.get(0),
    )?;
    if pending == 0 {
        return Ok(());
    }
    let mut cache = HashMap::new();
    let mut stmt = conn.prepare(
        "SELECT at_ms, kind, user_id, mcp_client_id, connection_id, extension_id, method, code,
                duration_ms, detail
         FROM audit_v1 ORDER BY rowid",
    )?;
    let mut rows = stmt.query([])?;
    let mut batch: Vec<AuditRecord> = Vec::with_capacity(CHUNK_EVENTS);
    let mut flush = |batch: &mut Vec<AuditRecord>| -> rusqlite::Result<()> {
        let entries: Vec<AuditEntry<'_>> = batch.iter().map(AuditEntry::from).collect();
        append_chunks(conn, &mut cache, &entries)?;
        batch.clear();
        Ok(())
    };
    while let Some(r) = rows.next()? {
        batch.push(AuditRecord {
            at_ms: r.get(0)?,
            kind: r.get(1)?,
            user_id: r.get(2)?,
            mcp_client_id: r.get(3)?,
            connection_id: r.get(4)?,
            extension_id: r.get(5)?,
            method: r.get(6)?,
            code: r.get(7)?,
            duration_ms: r.get(8)?,
            detail: r.get(9)?,
        });
        if batch.len() == CHUNK_EVENTS {
            flush(&mut batch)?;
        }
    }
    if !batch.is_empty() {
        flush(&mut batch)?;
    }
    drop(rows);
    drop(stmt);
    conn.execute_batch("DROP TABLE audit_v1")
}

/// The `audit_labels` id of `e`'s labels: from the cache, else found, else added.
fn labels_id(
    cache: &mut HashMap<Labels, i64>,
    find: &mut CachedStatement<'_>,
    add: &mut CachedStatement<'_>,
    tx: &Connection,
    e: &AuditEntry<'_>,
) -> rusqlite::Result<i64> {
    let key: Labels = (
        e.user_id.to_owned(),
        e.mcp_client_id.map(str::to_owned),
        e.connection_id.map(str::to_owned),
        e.extension_id.map(str::to_owned),
    );
    if let Some(id) = cache.get(&key) {
        return Ok(*id);
    }
    let labels = params![key.0, key.1, key.2, key.3];
    let id = match find.query_row(labels, |r| r.get(0)).optional()? {
        Some(id) => id,
        None => {
            add.execute(params![key.0, key.1, key.2, key.3, e.at_ms])?;
            tx.last_insert_rowid()
        }
    };
    if key.2.is_none() {
        return Ok(id);
    }
    if cache.len() >= LABEL_CACHE {
        cache.clear();
    }
    cache.insert(key, id);
    Ok(id)
}

fn lock_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".lock");
    path.with_file_name(name)
}

#[cfg(unix)]
fn lock_exclusively(file: &File) -> std::io::Result<()> {
    use std::os::unix::io::AsRawFd;
    // SAFETY: flock on a descriptor this function borrows; no memory is involved.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(not(unix))]
fn lock_exclusively(_file: &File) -> std::io::Result<()> {
    Ok(())
}

/// The schema's steps as `rusqlite_migration` runs them: [`MIGRATIONS`] in order, migration 2
/// with the Rust step that packs migration 1's audit rows.
fn migrations() -> Migrations<'static> {
    Migrations::new(
        MIGRATIONS
            .iter()
            .enumerate()
            .map(|(step, sql)| match step {
                1 => M::up_with_hook(sql, pack_v1_audit),
                _ => M::up(sql),
            })
            .collect(),
    )
}

/// Brings the schema to `MIGRATIONS.len()` in one immediate transaction.
fn migrate(conn: &mut Connection) -> anyhow::Result<()> {
    conn.execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;")?;
    adopt_schema_version_table(conn)?;
    conn.set_transaction_behavior(rusqlite::TransactionBehavior::Immediate);
    let result = migrations().to_latest(conn);
    conn.set_transaction_behavior(rusqlite::TransactionBehavior::Deferred);
    match result {
        Err(rusqlite_migration::Error::MigrationDefinition(
            rusqlite_migration::MigrationDefinitionError::DatabaseTooFarAhead,
        )) => {
            let current: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
            anyhow::bail!(
                "it was written by a newer mcp-relay (schema version {current}, this one knows {})",
                MIGRATIONS.len()
            )
        }
        Err(rusqlite_migration::Error::RusqliteError { err, .. }) => Err(err.into()),
        other => Ok(other?),
    }
}

/// A file written before the relay used `rusqlite_migration` keeps its version in a
/// `schema_version` table, and `user_version` is 0: the version moves into `user_version` and
/// the table goes, in one transaction. (A relay from before then, given a file without the
/// table, starts migration 1 again, finds its tables there and stops: it fails closed.)
fn adopt_schema_version_table(conn: &mut Connection) -> rusqlite::Result<()> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let legacy: i64 = tx.query_row(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'",
        [],
        |r| r.get(0),
    )?;
    if legacy == 0 {
        return Ok(());
    }
    let user_version: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if user_version == 0 {
        let version: Option<i64> = tx
            .query_row("SELECT max(version) FROM schema_version", [], |r| r.get(0))
            .optional()?
            .flatten();
        tx.pragma_update(None, "user_version", version.unwrap_or(0))?;
    }
    tx.execute_batch("DROP TABLE schema_version")?;
    tx.commit()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_corrupt_file_is_a_clear_error_not_a_fresh_store() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.db");
        std::fs::write(&path, vec![0x5a; 8192]).unwrap();
        let error = SqliteStore::open(&path).err().unwrap().to_string();
        assert!(error.contains("not a mcp-relay state database"), "{error}");
        assert!(error.contains(&path.display().to_string()), "{error}");
        // Left as it was: nothing overwrote it.
        assert_eq!(std::fs::read(&path).unwrap(), vec![0x5a; 8192]);
    }

    #[test]
    fn a_second_opener_of_the_same_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.db");
        let _first = SqliteStore::open(&path).unwrap();
        let error = SqliteStore::open(&path).err().unwrap().to_string();
        assert!(error.contains("locked"), "{error}");
    }

    fn entry<'a>(at_ms: i64, labels: &'a [Option<&'a str>; 4], method: &'a str) -> AuditEntry<'a> {
        AuditEntry {
            at_ms,
            kind: "request",
            user_id: labels[0].unwrap(),
            mcp_client_id: labels[1],
            connection_id: labels[2],
            extension_id: labels[3],
            method: Some(method),
            code: if method == "fails" { -32000 } else { 0 },
            duration_ms: Some(at_ms as f64 / 7.0),
            detail: None,
        }
    }

    fn all(store: &SqliteStore) -> Vec<AuditRecord> {
        store
            .query_audit(&AuditQuery {
                limit: usize::MAX,
                ..Default::default()
            })
            .unwrap()
    }

    /// What `q` must answer, from every record newest first.
    fn answer(expected: &[AuditRecord], q: &AuditQuery) -> Vec<AuditRecord> {
        expected
            .iter()
            .filter(|r| q.matches(r))
            .take(q.limit)
            .cloned()
            .collect()
    }

    fn count(store: &SqliteStore, table: &str) -> i64 {
        store
            .with(|c| c.query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0)))
            .unwrap()
    }

    fn events(store: &SqliteStore) -> i64 {
        store
            .with(|c| c.query_row("SELECT sum(count) FROM audit_chunks", [], |r| r.get(0)))
            .unwrap()
    }

    /// The queries `GET /api/v1/audit` can make, as the memory store answers them.
    fn queries() -> Vec<AuditQuery> {
        let q = |user: Option<&str>, browser: Option<&str>, method: Option<&str>, since, until| {
            AuditQuery {
                user_id: user.map(Into::into),
                browser: browser.map(Into::into),
                method: method.map(Into::into),
                since_ms: since,
                until_ms: until,
                limit: 1000,
            }
        };
        vec![
            q(None, None, None, None, None),
            q(Some("alice"), None, None, None, None),
            q(Some("bob"), None, None, Some(3), Some(9)),
            q(None, Some("ext-a"), None, None, None),
            q(None, None, Some("tabs/list"), Some(2), None),
            q(Some("alice"), Some("ext-b"), Some("fails"), None, Some(100)),
            AuditQuery {
                limit: 3,
                ..q(None, None, None, None, None)
            },
        ]
    }

    /// A row of migration 1's `audit` table, column by column.
    type OldRow = (
        i64,
        &'static str,
        &'static str,
        Option<&'static str>,
        Option<&'static str>,
        Option<&'static str>,
        Option<&'static str>,
        i64,
        Option<f64>,
        Option<&'static str>,
    );

    #[test]
    fn a_file_with_the_old_audit_table_is_migrated_and_its_rows_query_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.db");
        // A file as a relay with only migration 1 left it.
        let old: Vec<AuditRecord> = {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch(MIGRATIONS[0]).unwrap();
            conn.execute_batch(
                "CREATE TABLE schema_version (version INTEGER NOT NULL);
                 INSERT INTO schema_version (version) VALUES (1);",
            )
            .unwrap();
            let rows: &[OldRow] = &[
                (
                    1,
                    "handshake",
                    "alice",
                    Some("mcp-1"),
                    Some("c1"),
                    None,
                    None,
                    0,
                    None,
                    Some("ok"),
                ),
                (
                    2,
                    "request",
                    "alice",
                    Some("mcp-1"),
                    Some("c1"),
                    Some("ext-a"),
                    Some("tabs/list"),
                    0,
                    Some(0.25),
                    None,
                ),
                (
                    2,
                    "request",
                    "alice",
                    Some("mcp-1"),
                    Some("c1"),
                    Some("ext-a"),
                    Some("fails"),
                    -32000,
                    Some(1.5),
                    None,
                ),
                (
                    3,
                    "request",
                    "bob",
                    Some("mcp-2"),
                    Some("c2"),
                    Some("ext-b"),
                    Some("tabs/list"),
                    0,
                    Some(3.0),
                    None,
                ),
                (
                    4,
                    "approve",
                    "alice",
                    None,
                    None,
                    Some("ext-b"),
                    None,
                    0,
                    None,
                    Some("by admin"),
                ),
                (
                    5,
                    "connect",
                    "alice",
                    Some(""),
                    Some("c3"),
                    Some(""),
                    None,
                    -32011,
                    None,
                    None,
                ),
                (
                    6,
                    "request",
                    "alice",
                    Some("mcp-1"),
                    Some("c1"),
                    Some("ext-a"),
                    Some("tabs/list"),
                    0,
                    Some(0.125),
                    None,
                ),
                (
                    8,
                    "request",
                    "bob",
                    Some("mcp-2"),
                    Some("c2"),
                    Some("ext-b"),
                    Some("fails"),
                    -32000,
                    Some(9.0),
                    None,
                ),
                (
                    8,
                    "kick",
                    "bob",
                    None,
                    Some("c2"),
                    None,
                    None,
                    0,
                    None,
                    Some("by bob"),
                ),
            ];
            for r in rows {
                conn.execute(
                    "INSERT INTO audit (at_ms, kind, user_id, mcp_client_id, connection_id,
                        extension_id, method, code, duration_ms, detail)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                    params![r.0, r.1, r.2, r.3, r.4, r.5, r.6, r.7, r.8, r.9],
                )
                .unwrap();
            }
            let mut stmt = conn
                .prepare(
                    "SELECT at_ms, kind, user_id, mcp_client_id, connection_id, extension_id,
                        method, code, duration_ms, detail
                     FROM audit ORDER BY at_ms DESC, rowid DESC",
                )
                .unwrap();
            let rows = stmt.query_map([], |r| {
                Ok(AuditRecord {
                    at_ms: r.get(0)?,
                    kind: r.get(1)?,
                    user_id: r.get(2)?,
                    mcp_client_id: r.get(3)?,
                    connection_id: r.get(4)?,
                    extension_id: r.get(5)?,
                    method: r.get(6)?,
                    code: r.get(7)?,
                    duration_ms: r.get(8)?,
                    detail: r.get(9)?,
                })
            });
            rows.unwrap().map(Result::unwrap).collect()
        };
        assert_eq!(old.len(), 9);

        let store = SqliteStore::open(&path).unwrap();
        let version: i64 = store
            .with(|c| c.query_row("PRAGMA user_version", [], |r| r.get(0)))
            .unwrap();
        assert_eq!(version as usize, MIGRATIONS.len());
        assert_eq!(
            count(&store, "sqlite_master WHERE name = 'schema_version'"),
            0
        );
        let old_table: i64 = store
            .with(|c| {
                c.query_row(
                    "SELECT count(*) FROM sqlite_master WHERE name IN ('audit', 'audit_v1')",
                    [],
                    |r| r.get(0),
                )
            })
            .unwrap();
        assert_eq!(old_table, 0, "the old table is gone");
        // Same records, same order (ties on at_ms keep their insertion order).
        assert_eq!(all(&store), old);
        for q in queries() {
            let expected: Vec<_> = old
                .iter()
                .filter(|r| q.matches(r))
                .take(q.limit)
                .cloned()
                .collect();
            assert_eq!(store.query_audit(&q).unwrap(), expected, "{q:?}");
        }
        // Six label combinations: c1 without and with a browser, c2, c3 with empty ids,
        // alice's approval (no connection) and bob's kick (no client, no browser).
        assert_eq!(count(&store, "audit_labels"), 6);

        // New requests on an old connection reuse its labels row, and the file reopens.
        let c1 = [Some("alice"), Some("mcp-1"), Some("c1"), Some("ext-a")];
        store.append_audit(&[entry(10, &c1, "tabs/list")]).unwrap();
        assert_eq!(count(&store, "audit_labels"), 6);
        drop(store);
        let store = SqliteStore::open(&path).unwrap();
        let records = all(&store);
        assert_eq!(records.len(), 10);
        assert_eq!(records[0], entry(10, &c1, "tabs/list").to_record());
        assert_eq!(&records[1..], &old[..]);
    }

    #[test]
    fn a_connections_labels_are_stored_once_and_every_request_reads_back_whole() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("state.db")).unwrap();
        let a = [Some("alice"), Some("mcp-1"), Some("c1"), Some("ext-a")];
        let b = [Some("bob"), Some("mcp-2"), Some("c2"), Some("ext-b")];
        // The same text at another address (as a control record owns it): still one row.
        let owned: Vec<String> = a.iter().map(|s| s.unwrap().to_owned()).collect();
        let a_again = [
            Some(owned[0].as_str()),
            Some(owned[1].as_str()),
            Some(owned[2].as_str()),
            Some(owned[3].as_str()),
        ];
        let mut entries = Vec::new();
        for i in 0..600 {
            let labels = [&a, &b, &a_again][i % 3];
            let method = ["tabs/list", "fails"][i % 2];
            entries.push(entry(i as i64, labels, method));
        }
        store.append_audit(&entries[..300]).unwrap();
        store.append_audit(&entries[300..]).unwrap();
        assert_eq!(count(&store, "audit_labels"), 2);
        assert_eq!(events(&store), 600);
        let expected: Vec<AuditRecord> = entries.iter().rev().map(AuditEntry::to_record).collect();
        assert_eq!(all(&store), expected);
        for q in queries() {
            assert_eq!(
                store.query_audit(&q).unwrap(),
                answer(&expected, &q),
                "{q:?}"
            );
        }
    }

    /// Issue 24 point 6: a browser's `authenticate` (or an MCP socket's `handshake`) has labels
    /// without a connection, new with every identity: they are stored once each and read back
    /// whole, and the store keeps none of them in memory; a connection's labels, which its
    /// requests repeat, are kept.
    #[test]
    fn labels_without_a_connection_are_not_kept_in_memory_per_identity() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("state.db")).unwrap();
        let ids: Vec<String> = (0..500).map(|i| format!("ext-{i}")).collect();
        let identities: Vec<[Option<&str>; 4]> = ids
            .iter()
            .map(|id| [Some("alice"), None, None, Some(id.as_str())])
            .collect();
        for (i, labels) in identities.iter().enumerate() {
            // One batch per identity, as browsers come one by one; the second identity comes
            // back in a later batch and finds its row.
            store
                .append_audit(&[entry(i as i64, labels, "authenticate")])
                .unwrap();
        }
        store
            .append_audit(&[entry(500, &identities[1], "authenticate")])
            .unwrap();
        assert_eq!(count(&store, "audit_labels"), 500);
        assert_eq!(
            store.labels.lock().unwrap().len(),
            0,
            "identities kept in memory"
        );
        let connection = [Some("alice"), Some("mcp-1"), Some("c1"), Some("ext-1")];
        store
            .append_audit(&[entry(501, &connection, "tabs/list")])
            .unwrap();
        store
            .append_audit(&[entry(502, &connection, "tabs/list")])
            .unwrap();
        assert_eq!(store.labels.lock().unwrap().len(), 1);
        assert_eq!(count(&store, "audit_labels"), 501);
        let records = all(&store);
        assert_eq!(records.len(), 503);
        assert_eq!(
            records[2],
            entry(500, &identities[1], "authenticate").to_record()
        );
        assert_eq!(
            records[502],
            entry(0, &identities[0], "authenticate").to_record()
        );
    }

    #[test]
    fn pruning_drops_labels_no_event_refers_to_and_later_events_still_get_theirs() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("state.db")).unwrap();
        let a = [Some("alice"), Some("mcp-1"), Some("c1"), Some("ext-a")];
        let b = [Some("bob"), Some("mcp-2"), Some("c2"), Some("ext-b")];
        store
            .append_audit(&[entry(1, &a, "x"), entry(2, &a, "x"), entry(5, &b, "x")])
            .unwrap();
        assert_eq!(store.prune_audit(3).unwrap(), 2);
        assert_eq!(
            count(&store, "audit_labels"),
            1,
            "a's labels went with its events"
        );
        // a's labels were cached with an id that no longer exists: they are added again.
        store.append_audit(&[entry(7, &a, "y")]).unwrap();
        assert_eq!(
            all(&store),
            vec![entry(7, &a, "y").to_record(), entry(5, &b, "x").to_record()]
        );
        assert_eq!(count(&store, "audit_labels"), 2);
        // b's labels were used at 5: pruning before 5 keeps them, before 6 drops them.
        assert_eq!(store.prune_audit(5).unwrap(), 0);
        assert_eq!(count(&store, "audit_labels"), 2);
        assert_eq!(store.prune_audit(6).unwrap(), 1);
        assert_eq!(count(&store, "audit_labels"), 1);
    }

    #[test]
    fn queries_order_by_time_then_by_the_order_written_across_chunks() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("state.db")).unwrap();
        let a = [Some("alice"), Some("mcp-1"), Some("c1"), Some("ext-a")];
        let b = [Some("bob"), Some("mcp-2"), Some("c2"), Some("ext-b")];
        // Times out of order and often equal (threads race for the clock), written in batches
        // of several chunks each.
        let entries: Vec<AuditEntry<'_>> = (0..3 * CHUNK_EVENTS + 100)
            .map(|i| {
                let labels = if i % 5 == 0 { &b } else { &a };
                let method = ["tabs/list", "fails", "x"][i % 3];
                entry(((i * 7919) % 1000) as i64, labels, method)
            })
            .collect();
        for batch in entries.chunks(CHUNK_EVENTS + 700) {
            store.append_audit(batch).unwrap();
        }
        let mut expected: Vec<(usize, AuditRecord)> = entries
            .iter()
            .map(AuditEntry::to_record)
            .enumerate()
            .collect();
        expected.sort_by(|(i, x), (j, y)| (y.at_ms, j).cmp(&(x.at_ms, i)));
        let expected: Vec<AuditRecord> = expected.into_iter().map(|(_, r)| r).collect();
        assert_eq!(all(&store), expected);
        for limit in [1, 7, 50, 3000] {
            for q in queries() {
                let q = AuditQuery { limit, ..q };
                assert_eq!(
                    store.query_audit(&q).unwrap(),
                    answer(&expected, &q),
                    "{q:?}"
                );
            }
        }
    }

    #[test]
    fn a_limit_reached_in_one_chunk_still_looks_into_chunks_with_newer_events() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("state.db")).unwrap();
        let a = [Some("alice"), Some("mcp-1"), Some("c1"), Some("ext-a")];
        // The first chunk reaches the limit with its events out of order (10 then 100); the
        // second, whose newest event is older than the first's, holds one newer than 10.
        store
            .append_audit(&[entry(10, &a, "x"), entry(100, &a, "x")])
            .unwrap();
        store.append_audit(&[entry(50, &a, "x")]).unwrap();
        let newest_two = store
            .query_audit(&AuditQuery {
                limit: 2,
                ..Default::default()
            })
            .unwrap();
        let times: Vec<i64> = newest_two.iter().map(|r| r.at_ms).collect();
        assert_eq!(times, [100, 50]);
    }

    #[test]
    fn a_file_from_a_newer_relay_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.db");
        drop(SqliteStore::open(&path).unwrap());
        let conn = Connection::open(&path).unwrap();
        conn.pragma_update(None, "user_version", 99).unwrap();
        drop(conn);
        let error = SqliteStore::open(&path).err().unwrap().to_string();
        assert!(error.contains("newer mcp-relay"), "{error}");
        assert!(error.contains("schema version 99"), "{error}");
    }

    /// A file as the relay left it before the migrations moved to `rusqlite_migration` (both
    /// steps applied, the version in a `schema_version` table, a browser and a revocation in
    /// it) opens at the same version with its rows, the table gone and `user_version` 2; opened
    /// again, nothing runs twice.
    #[test]
    fn a_file_versioned_by_the_old_schema_version_table_opens_with_its_rows() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.db");
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch(MIGRATIONS[0]).unwrap();
            conn.execute_batch(MIGRATIONS[1]).unwrap();
            conn.execute_batch(
                "DROP TABLE audit_v1;
                 CREATE TABLE schema_version (version INTEGER NOT NULL);
                 INSERT INTO schema_version (version) VALUES (1), (2);
                 INSERT INTO browsers VALUES ('ext-1', 'alice', 'Laptop', '1.0', 1, 0, 10, 20);
                 INSERT INTO revoked_tokens VALUES ('jti-1', 'alice', 30);",
            )
            .unwrap();
        }
        for _ in 0..2 {
            let store = SqliteStore::open(&path).unwrap();
            let version: i64 = store
                .with(|c| c.query_row("PRAGMA user_version", [], |r| r.get(0)))
                .unwrap();
            assert_eq!(version, 2);
            assert_eq!(
                count(&store, "sqlite_master WHERE name = 'schema_version'"),
                0
            );
            let browsers = store.browsers().unwrap();
            assert_eq!(browsers.len(), 1);
            assert_eq!(browsers[0].id, "ext-1");
            assert!(browsers[0].approved);
            let revoked = store.revocations().unwrap();
            assert_eq!(revoked.tokens.len(), 1);
            assert_eq!(revoked.tokens[0].jti, "jti-1");
        }
    }
}
