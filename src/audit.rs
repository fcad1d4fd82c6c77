//! The audit trail: every control action and every forwarded request (who, which browser,
//! which method, how it ended, how long it took; never params or results), written off the hot
//! path.
//!
//! The forwarding path pays for one thing only: [`AuditSink::request`] builds a small
//! [`AuditEvent`] (an `Arc` of the connection's labels, the method it already had, two
//! numbers) and `try_send`s it on a bounded channel. A writer task takes whatever has
//! accumulated, turns it into [`AuditRecord`]s and appends the batch to the store in one
//! transaction on a blocking thread. When the writer falls behind and the channel is full,
//! events are dropped and counted (`mcp_relay_audit_dropped_total`) rather than slowing or
//! blocking forwarding; the channel holds [`AUDIT_QUEUE`] events.
//!
//! Retention: records older than `--audit-retention` are deleted by the same task, every
//! hundredth of the retention period (at least every second, at most every hour).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::store::{AuditRecord, Store};

/// Events the channel holds before new ones are dropped (and counted).
pub const AUDIT_QUEUE: usize = 65_536;
/// Longest method name recorded (longer ones are cut at a character boundary): a method name is
/// whatever a client sends, and the trail must not keep megabytes of it per request.
pub const MAX_METHOD_BYTES: usize = 128;
/// Longest id or note recorded for a control action (`connect` records the `extension_id` the
/// client asked for, which may be anything).
const MAX_FIELD_BYTES: usize = 256;

/// Most records written in one transaction.
const BATCH: usize = 4096;

/// Who is at each end of a connection, built once per connection and shared by every event of
/// its requests.
#[derive(Debug)]
pub struct ConnTag {
    pub connection_id: String,
    pub user_id: String,
    pub mcp_client_id: String,
    pub client_name: Option<String>,
    pub extension_id: String,
}

/// What the hot path hands over.
pub enum AuditEvent {
    /// One forwarded request and how it ended (`code` 0 = a result).
    Request {
        conn: Arc<ConnTag>,
        method: Box<str>,
        code: i64,
        at: SystemTime,
        duration: Duration,
    },
    /// A control action, already a record.
    Control(Box<AuditRecord>),
}

impl AuditEvent {
    fn into_record(self) -> AuditRecord {
        match self {
            AuditEvent::Request {
                conn,
                method,
                code,
                at,
                duration,
            } => AuditRecord {
                at_ms: millis(at),
                kind: "request".into(),
                user_id: conn.user_id.clone(),
                mcp_client_id: Some(conn.mcp_client_id.clone()),
                connection_id: Some(conn.connection_id.clone()),
                extension_id: Some(conn.extension_id.clone()),
                method: Some(method.into()),
                code,
                duration_ms: Some(duration.as_secs_f64() * 1000.0),
                detail: None,
            },
            AuditEvent::Control(record) => *record,
        }
    }
}

/// Milliseconds since the epoch.
pub fn millis(at: SystemTime) -> i64 {
    at.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// The sending side, held by the hub and the sessions. Cloning is cheap.
#[derive(Clone)]
pub struct AuditSink {
    tx: mpsc::Sender<AuditEvent>,
    dropped: Arc<AtomicU64>,
}

impl AuditSink {
    /// A sink and the receiver its writer drains.
    pub fn channel() -> (AuditSink, mpsc::Receiver<AuditEvent>) {
        let (tx, rx) = mpsc::channel(AUDIT_QUEUE);
        (
            AuditSink {
                tx,
                dropped: Arc::new(AtomicU64::new(0)),
            },
            rx,
        )
    }

    /// Records one forwarded request's outcome; never blocks. `method` should already be cut
    /// to [`MAX_METHOD_BYTES`] (the hub does so when it keeps it); longer ones are cut here.
    pub fn request(&self, conn: &Arc<ConnTag>, method: Box<str>, code: i64, duration: Duration) {
        let method = if method.len() > MAX_METHOD_BYTES {
            crate::hub::truncate_utf8(&method, MAX_METHOD_BYTES).into()
        } else {
            method
        };
        self.send(AuditEvent::Request {
            conn: Arc::clone(conn),
            method,
            code,
            at: SystemTime::now(),
            duration,
        });
    }

    /// Records a control action; never blocks.
    #[allow(clippy::too_many_arguments)]
    pub fn control(
        &self,
        kind: &str,
        user_id: &str,
        mcp_client_id: Option<&str>,
        connection_id: Option<&str>,
        extension_id: Option<&str>,
        code: i64,
        detail: Option<String>,
    ) {
        let cut = |text: &str| crate::hub::truncate_utf8(text, MAX_FIELD_BYTES).to_owned();
        self.send(AuditEvent::Control(Box::new(AuditRecord {
            at_ms: millis(SystemTime::now()),
            kind: kind.to_owned(),
            user_id: cut(user_id),
            mcp_client_id: mcp_client_id.map(cut),
            connection_id: connection_id.map(cut),
            extension_id: extension_id.map(cut),
            method: None,
            code,
            duration_ms: None,
            detail: detail.as_deref().map(cut),
        })));
    }

    fn send(&self, event: AuditEvent) {
        if self.tx.try_send(event).is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Events dropped because the writer fell behind.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

/// Starts the writer (and pruner) task on `tracker`: it drains `rx` in batches into `store`
/// until `shutdown`, then writes what is left and ends.
pub fn spawn_writer(
    store: Arc<Store>,
    mut rx: mpsc::Receiver<AuditEvent>,
    retention: Duration,
    shutdown: CancellationToken,
    tracker: &TaskTracker,
) {
    let prune_every = (retention / 100).clamp(Duration::from_secs(1), Duration::from_secs(3600));
    tracker.spawn(async move {
        let mut prune = tokio::time::interval(prune_every);
        let mut batch = Vec::with_capacity(BATCH);
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = prune.tick() => {
                    let before = millis(SystemTime::now() - retention);
                    let store = Arc::clone(&store);
                    match tokio::task::spawn_blocking(move || store.prune_audit(before)).await {
                        Ok(Ok(0)) => {}
                        Ok(Ok(n)) => tracing::debug!(deleted = n, "pruned the audit trail"),
                        Ok(Err(e)) => tracing::warn!("pruning the audit trail failed: {e:#}"),
                        Err(e) => tracing::warn!("pruning the audit trail failed: {e}"),
                    }
                }
                received = rx.recv_many(&mut batch, BATCH) => {
                    if received == 0 {
                        break;
                    }
                    write(&store, std::mem::take(&mut batch)).await;
                }
            }
        }
        // Shutdown: what the hub recorded while ending connections is already queued.
        while let Ok(event) = rx.try_recv() {
            batch.push(event);
            if batch.len() == BATCH {
                write(&store, std::mem::take(&mut batch)).await;
            }
        }
        if !batch.is_empty() {
            write(&store, batch).await;
        }
    });
}

async fn write(store: &Arc<Store>, events: Vec<AuditEvent>) {
    let store = Arc::clone(store);
    let result = tokio::task::spawn_blocking(move || {
        let records: Vec<AuditRecord> = events.into_iter().map(AuditEvent::into_record).collect();
        store.append_audit(&records).map(|()| records.len())
    })
    .await;
    match result {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => tracing::warn!("writing the audit trail failed: {e:#}"),
        Err(e) => tracing::warn!("writing the audit trail failed: {e}"),
    }
}
