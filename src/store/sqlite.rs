//! The default backend: one SQLite file (bundled SQLite, nothing to install).
//!
//! Opening it takes an exclusive advisory lock on `PATH.lock` first, so two relays never share
//! one file (each keeps an in-memory mirror of approvals and revocations, and two mirrors of
//! one file would drift apart); the second gets a clear error instead. Then the schema is
//! brought up to date inside one transaction, driven by the `schema_version` table: a file
//! written by a newer relay, or one that is not a SQLite database at all, stops start-up.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::Context;
use rusqlite::{params, Connection, OptionalExtension};

use super::{AuditQuery, AuditRecord, BrowserRecord, Revocations, RevokedToken};

/// Each entry moves the schema from version `i` to `i + 1`. Append only: a published step never
/// changes, because files out there were migrated with it.
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
];

pub struct SqliteStore {
    path: PathBuf,
    conn: Mutex<Connection>,
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
        let conn = Connection::open(path).with_context(|| hint("cannot open it"))?;
        // It may hold the --dev secret: readable by this user only.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600));
        }
        conn.busy_timeout(std::time::Duration::from_secs(2))?;
        migrate(&conn).map_err(|e| {
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
            _lock: lock,
        })
    }

    fn with<T>(&self, f: impl FnOnce(&Connection) -> rusqlite::Result<T>) -> anyhow::Result<T> {
        let conn = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        f(&conn).with_context(|| format!("state file {}", self.path.display()))
    }

    pub(super) fn browsers(&self) -> anyhow::Result<Vec<BrowserRecord>> {
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

    pub(super) fn put_browser(&self, b: &BrowserRecord) -> anyhow::Result<()> {
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

    pub(super) fn delete_browser(&self, id: &str) -> anyhow::Result<()> {
        self.with(|c| {
            c.execute("DELETE FROM browsers WHERE id = ?1", params![id])
                .map(|_| ())
        })
    }

    pub(super) fn revocations(&self) -> anyhow::Result<Revocations> {
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

    pub(super) fn revoke_token(&self, t: &RevokedToken) -> anyhow::Result<()> {
        self.with(|c| {
            c.execute(
                "INSERT OR IGNORE INTO revoked_tokens (jti, user_id, revoked_at) VALUES (?1, ?2, ?3)",
                params![t.jti, t.user_id.as_deref().unwrap_or(""), t.revoked_at],
            )
            .map(|_| ())
        })
    }

    pub(super) fn revoke_user(&self, user_id: &str, issued_before: i64) -> anyhow::Result<()> {
        self.with(|c| {
            c.execute(
                "INSERT INTO user_cutoffs (user_id, issued_before) VALUES (?1, ?2)
                 ON CONFLICT(user_id) DO UPDATE SET issued_before = max(issued_before, ?2)",
                params![user_id, issued_before],
            )
            .map(|_| ())
        })
    }

    /// One transaction per batch: a few hundred rows cost about one fsync.
    pub(super) fn append_audit(&self, records: &[AuditRecord]) -> anyhow::Result<()> {
        let mut conn = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        let write = |conn: &mut Connection| -> rusqlite::Result<()> {
            let tx = conn.transaction()?;
            {
                let mut stmt = tx.prepare_cached(
                    "INSERT INTO audit (at_ms, kind, user_id, mcp_client_id, connection_id,
                        extension_id, method, code, duration_ms, detail)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                )?;
                for r in records {
                    stmt.execute(params![
                        r.at_ms,
                        r.kind,
                        r.user_id,
                        r.mcp_client_id,
                        r.connection_id,
                        r.extension_id,
                        r.method,
                        r.code,
                        r.duration_ms,
                        r.detail
                    ])?;
                }
            }
            tx.commit()
        };
        write(&mut conn).with_context(|| format!("state file {}", self.path.display()))
    }

    pub(super) fn query_audit(&self, q: &AuditQuery) -> anyhow::Result<Vec<AuditRecord>> {
        self.with(|c| {
            let mut stmt = c.prepare_cached(
                "SELECT at_ms, kind, user_id, mcp_client_id, connection_id, extension_id, method,
                        code, duration_ms, detail
                 FROM audit
                 WHERE (?1 IS NULL OR user_id = ?1)
                   AND (?2 IS NULL OR extension_id = ?2)
                   AND (?3 IS NULL OR method = ?3)
                   AND (?4 IS NULL OR at_ms >= ?4)
                   AND (?5 IS NULL OR at_ms < ?5)
                 ORDER BY at_ms DESC, rowid DESC
                 LIMIT ?6",
            )?;
            let rows = stmt.query_map(
                params![
                    q.user_id,
                    q.browser,
                    q.method,
                    q.since_ms,
                    q.until_ms,
                    q.limit as i64
                ],
                |r| {
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
                },
            )?;
            rows.collect()
        })
    }

    pub(super) fn prune_audit(&self, before_ms: i64) -> anyhow::Result<usize> {
        self.with(|c| c.execute("DELETE FROM audit WHERE at_ms < ?1", params![before_ms]))
    }

    pub(super) fn meta(&self, key: &str) -> anyhow::Result<Option<String>> {
        self.with(|c| {
            c.query_row("SELECT value FROM meta WHERE key = ?1", params![key], |r| {
                r.get(0)
            })
            .optional()
        })
    }

    pub(super) fn set_meta(&self, key: &str, value: &str) -> anyhow::Result<()> {
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

/// Brings the schema to `MIGRATIONS.len()` in one immediate transaction.
fn migrate(conn: &Connection) -> anyhow::Result<()> {
    conn.execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;")?;
    conn.execute_batch("BEGIN IMMEDIATE")?;
    let result = (|| -> anyhow::Result<()> {
        conn.execute_batch("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")?;
        let current: Option<i64> = conn
            .query_row("SELECT max(version) FROM schema_version", [], |r| r.get(0))
            .optional()?
            .flatten();
        let current = current.unwrap_or(0) as usize;
        anyhow::ensure!(
            current <= MIGRATIONS.len(),
            "it was written by a newer mcp-relay (schema version {current}, this one knows {})",
            MIGRATIONS.len()
        );
        for (step, sql) in MIGRATIONS.iter().enumerate().skip(current) {
            conn.execute_batch(sql)?;
            conn.execute(
                "INSERT INTO schema_version (version) VALUES (?1)",
                params![(step + 1) as i64],
            )?;
        }
        Ok(())
    })();
    match result {
        Ok(()) => {
            conn.execute_batch("COMMIT")?;
            Ok(())
        }
        Err(error) => {
            let _ = conn.execute_batch("ROLLBACK");
            Err(error)
        }
    }
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

    #[test]
    fn a_file_from_a_newer_relay_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.db");
        drop(SqliteStore::open(&path).unwrap());
        let conn = Connection::open(&path).unwrap();
        conn.execute("INSERT INTO schema_version (version) VALUES (99)", [])
            .unwrap();
        drop(conn);
        let error = SqliteStore::open(&path).err().unwrap().to_string();
        assert!(error.contains("newer mcp-relay"), "{error}");
    }
}
