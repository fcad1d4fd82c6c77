//! The audit trail: every control action and every forwarded request (who, which browser,
//! which method, how it ended, how long it took; never params or results), written off the hot
//! path.
//!
//! The forwarding path pays for one thing only: [`AuditSink::request`] builds a small
//! [`AuditEvent`] (an `Arc` of the connection's labels, the method it already had, two
//! numbers) and `try_send`s it on a bounded channel. A writer task takes whatever has
//! accumulated and appends the batch to the store in one transaction (on a blocking thread),
//! borrowing the labels from the connection's [`ConnTag`] instead of copying them per request;
//! then, unless it took a full batch (more are waiting), it sleeps [`GATHER`] so that under load
//! the events of a tenth of a second share one wake-up and one transaction. When the writer
//! falls behind and the channel is full, events are dropped and counted
//! (`mcp_relay_audit_dropped_total`) rather than slowing or blocking forwarding; the channel
//! holds [`AUDIT_QUEUE`] events.
//!
//! Refusals are counted, not stored one by one: a request refused before it reached the browser
//! (rate limit, pending bytes, the browser's queue, an id too long, …) adds one to a tally kept
//! per (user, connection, reason) ([`AuditSink::refused`]), and the writer turns every tally into
//! one `refused` record per [`REFUSAL_INTERVAL`] (the count in `detail`, the first method seen
//! in `method`). A user has at most [`REFUSAL_KEYS_PER_USER`] tallies of its own connections per
//! interval; refusals beyond them go into one tally per (user, reason) with no connection. So a
//! flood of refusals costs at most `REFUSAL_KEYS_PER_USER` + reasons records per user per
//! interval, however fast it comes and whatever method names it uses.
//!
//! Retention: records older than `--audit-retention` are deleted by the same task, every
//! hundredth of the retention period (at least every second, at most every hour).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::operator::store::{AsAuditEntry, AuditEntry, AuditRecord, Store};
use crate::routing::hub::{AuditTrail, Control};
pub use crate::routing::hub::{ConnTag, MAX_METHOD_BYTES};

/// Events the channel holds before new ones are dropped (and counted).
pub const AUDIT_QUEUE: usize = 65_536;
/// Longest id or note recorded for a control action (`connect` records the `extension_id` the
/// client asked for, which may be anything).
const MAX_FIELD_BYTES: usize = 256;

/// How long refusals are tallied before the tallies are written, one record each.
pub const REFUSAL_INTERVAL: Duration = Duration::from_secs(10);
/// Tallies (of a connection and a reason) one user may have per [`REFUSAL_INTERVAL`]; refusals
/// beyond them share one tally per reason for the user, with no connection.
pub const REFUSAL_KEYS_PER_USER: usize = 16;

/// Most records written in one transaction.
const BATCH: usize = 16_384;

/// How long the writer lets events gather after a write that emptied the queue, before it
/// takes the next batch. Under load this turns a transaction (and a wake-up, and a hop to a
/// blocking thread) every few requests into one every `GATHER`; at a low rate an event that
/// finds the writer idle is written at once, and any event is in the store within `GATHER`
/// plus one write. At 100,000 requests/s a gather fills about a sixth of [`AUDIT_QUEUE`].
pub const GATHER: Duration = Duration::from_millis(100);

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

/// The writer hands its batch of events to the store whole ([`Store::append_audit`]).
impl AsAuditEntry for AuditEvent {
    /// The event as a store takes it, borrowing its text (a request's labels from its
    /// connection's [`ConnTag`]) rather than copying it.
    fn entry(&self) -> AuditEntry<'_> {
        match self {
            AuditEvent::Request {
                conn,
                method,
                code,
                at,
                duration,
            } => AuditEntry {
                at_ms: millis(*at),
                kind: "request",
                user_id: &conn.user_id,
                mcp_client_id: Some(&conn.mcp_client_id),
                connection_id: Some(&conn.connection_id),
                extension_id: Some(&conn.extension_id),
                method: Some(method),
                code: *code,
                duration_ms: Some(duration.as_secs_f64() * 1000.0),
                detail: None,
            },
            AuditEvent::Control(record) => AuditEntry::from(&**record),
        }
    }
}

/// Milliseconds since the epoch.
pub fn millis(at: SystemTime) -> i64 {
    at.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// The refusals of one connection (or of a user's other connections) for one reason, since the
/// tallies were last written.
struct Tally {
    /// The connection's labels; `None` for the tally of a user's connections beyond
    /// [`REFUSAL_KEYS_PER_USER`].
    conn: Option<Arc<ConnTag>>,
    user_id: String,
    code: i64,
    reason: &'static str,
    /// The first method refused, already cut to [`MAX_METHOD_BYTES`].
    first_method: Box<str>,
    count: u64,
    first_at: SystemTime,
    last_at: SystemTime,
}

impl Tally {
    fn record(&self) -> AuditRecord {
        let span = self
            .last_at
            .duration_since(self.first_at)
            .unwrap_or_default();
        let conn = self.conn.as_deref();
        AuditRecord {
            at_ms: millis(self.last_at),
            kind: "refused".into(),
            user_id: crate::text::truncate_utf8(&self.user_id, MAX_FIELD_BYTES).to_owned(),
            mcp_client_id: conn.map(|c| c.mcp_client_id.clone()),
            connection_id: conn.map(|c| c.connection_id.clone()),
            extension_id: conn.map(|c| c.extension_id.clone()),
            method: Some(self.first_method.to_string()),
            code: self.code,
            duration_ms: Some(span.as_secs_f64() * 1000.0),
            detail: Some(format!(
                "{} request{} refused ({}){}",
                self.count,
                if self.count == 1 { "" } else { "s" },
                self.reason,
                if conn.is_none() {
                    " on connections beyond the per-user tally bound"
                } else {
                    ""
                }
            )),
        }
    }
}

/// The tallies of the current interval.
#[derive(Default)]
struct Refusals {
    /// Keyed by (user, connection id or "" for the overflow tally, reason).
    tallies: HashMap<(String, String, &'static str), Tally>,
    /// Connection tallies per user this interval.
    per_user: HashMap<String, usize>,
}

/// The sending side, held by the hub and the sessions. Cloning is cheap.
#[derive(Clone)]
pub struct AuditSink {
    tx: mpsc::Sender<AuditEvent>,
    dropped: Arc<AtomicU64>,
    refused: Arc<AtomicU64>,
    refusals: Arc<Mutex<Refusals>>,
}

/// What the writer drains: the channel, and the refusal tallies.
pub struct AuditQueue {
    rx: mpsc::Receiver<AuditEvent>,
    refusals: Arc<Mutex<Refusals>>,
}

impl Refusals {
    /// The tallies as records (oldest last refusal first), emptied.
    fn take(refusals: &Mutex<Refusals>) -> Vec<AuditEvent> {
        let taken = std::mem::take(&mut *refusals.lock().unwrap());
        let mut tallies: Vec<Tally> = taken.tallies.into_values().collect();
        tallies.sort_by_key(|t| t.last_at);
        tallies
            .iter()
            .map(|t| AuditEvent::Control(Box::new(t.record())))
            .collect()
    }
}

impl AuditSink {
    /// A sink and the queue its writer drains.
    pub fn channel() -> (AuditSink, AuditQueue) {
        let (tx, rx) = mpsc::channel(AUDIT_QUEUE);
        let refusals = Arc::new(Mutex::new(Refusals::default()));
        (
            AuditSink {
                tx,
                dropped: Arc::new(AtomicU64::new(0)),
                refused: Arc::new(AtomicU64::new(0)),
                refusals: Arc::clone(&refusals),
            },
            AuditQueue { rx, refusals },
        )
    }

    /// Counts one request refused before it reached the browser (`reason` names the check,
    /// `code` is what the client got); never blocks on the writer. Written as one `refused`
    /// record per connection and reason every [`REFUSAL_INTERVAL`].
    pub fn refused(&self, conn: &Arc<ConnTag>, method: &str, code: i64, reason: &'static str) {
        self.refused.fetch_add(1, Ordering::Relaxed);
        let now = SystemTime::now();
        let mut refusals = self.refusals.lock().unwrap();
        let Refusals { tallies, per_user } = &mut *refusals;
        let mut key = (conn.user_id.clone(), conn.connection_id.clone(), reason);
        if let Some(tally) = tallies.get_mut(&key) {
            tally.count += 1;
            tally.last_at = now;
            return;
        }
        let seen = per_user.entry(conn.user_id.clone()).or_default();
        let own = *seen < REFUSAL_KEYS_PER_USER;
        if own {
            *seen += 1;
        } else {
            key.1 = String::new();
            if let Some(tally) = tallies.get_mut(&key) {
                tally.count += 1;
                tally.last_at = now;
                return;
            }
        }
        tallies.insert(
            key,
            Tally {
                conn: own.then(|| Arc::clone(conn)),
                user_id: conn.user_id.clone(),
                code,
                reason,
                first_method: crate::text::truncate_utf8(method, MAX_METHOD_BYTES).into(),
                count: 1,
                first_at: now,
                last_at: now,
            },
        );
    }

    /// Records one forwarded request's outcome; never blocks. `method` should already be cut
    /// to [`MAX_METHOD_BYTES`] (the hub does so when it keeps it); longer ones are cut here.
    pub fn request(&self, conn: &Arc<ConnTag>, method: Box<str>, code: i64, duration: Duration) {
        let method = if method.len() > MAX_METHOD_BYTES {
            crate::text::truncate_utf8(&method, MAX_METHOD_BYTES).into()
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
    pub fn control(&self, action: Control<'_>, detail: Option<String>) {
        let Control {
            kind,
            user_id,
            mcp_client_id,
            connection_id,
            extension_id,
            code,
        } = action;
        let cut = |text: &str| crate::text::truncate_utf8(text, MAX_FIELD_BYTES).to_owned();
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

    /// Requests counted by [`AuditSink::refused`].
    pub fn refusals(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    /// Events dropped because the writer fell behind.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

/// The sink is the trail the relay core records into (registered when the relay is built).
impl AuditTrail for AuditSink {
    fn request(&self, conn: &Arc<ConnTag>, method: Box<str>, code: i64, duration: Duration) {
        AuditSink::request(self, conn, method, code, duration);
    }

    fn refused(&self, conn: &Arc<ConnTag>, method: &str, code: i64, reason: &'static str) {
        AuditSink::refused(self, conn, method, code, reason);
    }

    fn control(&self, action: Control<'_>, detail: Option<String>) {
        AuditSink::control(self, action, detail);
    }

    fn refusals(&self) -> u64 {
        AuditSink::refusals(self)
    }

    fn dropped(&self) -> u64 {
        AuditSink::dropped(self)
    }
}

/// Starts the writer (and pruner) task on `tracker`: it drains `rx` in batches into `store`
/// until `shutdown`, then writes what is left and ends.
pub fn spawn_writer(
    store: Arc<Store>,
    queue: AuditQueue,
    retention: Duration,
    shutdown: CancellationToken,
    tracker: &TaskTracker,
) {
    spawn_writer_every(store, queue, retention, REFUSAL_INTERVAL, shutdown, tracker)
}

/// [`spawn_writer`] with the refusal tallies written every `refusals_every`.
fn spawn_writer_every(
    store: Arc<Store>,
    queue: AuditQueue,
    retention: Duration,
    refusals_every: Duration,
    shutdown: CancellationToken,
    tracker: &TaskTracker,
) {
    let prune_every = (retention / 100).clamp(Duration::from_secs(1), Duration::from_secs(3600));
    tracker.spawn(async move {
        let mut prune = tokio::time::interval(prune_every);
        prune.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut tally = tokio::time::interval(refusals_every);
        tally.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tally.tick().await;
        let mut batch = Vec::with_capacity(BATCH);
        let AuditQueue { mut rx, refusals } = queue;
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = tally.tick() => {
                    let tallies = Refusals::take(&refusals);
                    if !tallies.is_empty() {
                        write(&store, tallies).await;
                    }
                }
                _ = prune.tick() => {
                    let before = millis(SystemTime::now() - retention);
                    match store.prune_audit(before).await {
                        Ok(0) => {}
                        Ok(n) => tracing::debug!(deleted = n, "pruned the audit trail"),
                        Err(e) => tracing::warn!("pruning the audit trail failed: {e:#}"),
                    }
                }
                received = rx.recv_many(&mut batch, BATCH) => {
                    if received == 0 {
                        break;
                    }
                    batch = write(&store, batch).await;
                    if received < BATCH {
                        // The queue is empty: let the next events gather.
                        tokio::select! {
                            _ = shutdown.cancelled() => break,
                            _ = tokio::time::sleep(GATHER) => {}
                        }
                    }
                }
            }
        }
        // Shutdown: what the hub recorded while ending connections is already queued.
        while let Ok(event) = rx.try_recv() {
            batch.push(event);
            if batch.len() == BATCH {
                batch = write(&store, batch).await;
            }
        }
        batch.extend(Refusals::take(&refusals));
        if !batch.is_empty() {
            write(&store, batch).await;
        }
    });
}

/// Appends `events` in one transaction and hands back the emptied vector to gather the next
/// batch in. The store takes the batch whole: it reads (and, locally, writes) it on a blocking
/// thread, and the events are dropped there too, off the runtime's threads.
async fn write(store: &Store, mut events: Vec<AuditEvent>) -> Vec<AuditEvent> {
    if let Err(e) = store.append_audit(&mut events).await {
        tracing::warn!("writing the audit trail failed: {e:#}");
    }
    events
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;
    use crate::operator::store::{AuditQuery, StateSpec};

    fn tag(connection_id: &str) -> Arc<ConnTag> {
        Arc::new(ConnTag {
            connection_id: connection_id.into(),
            user_id: "alice".into(),
            mcp_client_id: "mcp-1".into(),
            client_name: None,
            extension_id: "ext-1".into(),
        })
    }

    async fn recorded(store: &Store) -> Vec<AuditRecord> {
        store
            .query_audit(&AuditQuery {
                limit: usize::MAX,
                ..Default::default()
            })
            .await
            .unwrap()
    }

    /// How often [`until_recorded`] looks.
    const POLL: Duration = Duration::from_millis(5);

    /// Waits (up to 5 s on the runtime's clock) until the store holds `n` records; returns
    /// how long that took, to within [`POLL`].
    async fn until_recorded(store: &Arc<Store>, n: usize) -> Duration {
        let start = tokio::time::Instant::now();
        while recorded(store).await.len() < n {
            assert!(start.elapsed() < Duration::from_secs(5), "never written");
            tokio::time::sleep(POLL).await;
        }
        start.elapsed()
    }

    fn start(store: &Arc<Store>) -> (AuditSink, CancellationToken, TaskTracker) {
        let (sink, rx) = AuditSink::channel();
        let shutdown = CancellationToken::new();
        let tracker = TaskTracker::new();
        let day = Duration::from_secs(86_400);
        spawn_writer(Arc::clone(store), rx, day, shutdown.clone(), &tracker);
        (sink, shutdown, tracker)
    }

    /// On a paused clock (the SQLite writes run on blocking threads, during which tokio does
    /// not move it): the bound is proved exactly, whatever the machine's speed.
    #[tokio::test(start_paused = true)]
    async fn events_at_a_low_rate_are_written_within_the_gather_bound() {
        let dir = tempfile::tempdir().unwrap();
        let spec = StateSpec::Sqlite(dir.path().join("s.db"));
        let store = Arc::new(Store::open(&spec).await.unwrap());
        let (sink, shutdown, tracker) = start(&store);
        let conn = tag("c1");
        // The bound: GATHER plus one write (which takes no time on this clock), give or take
        // a poll.
        let bound = GATHER + POLL;
        for n in 1..=4 {
            // One every 30 ms: some find the writer idle, some find it gathering.
            sink.request(&conn, format!("m{n}").into(), 0, Duration::from_millis(1));
            let took = until_recorded(&store, n).await;
            assert!(took <= bound, "event {n} took {took:?}");
            tokio::time::sleep(Duration::from_millis(30)).await;
        }
        let methods: Vec<_> = recorded(&store)
            .await
            .into_iter()
            .map(|r| r.method.unwrap())
            .collect();
        assert_eq!(methods, ["m4", "m3", "m2", "m1"]);
        shutdown.cancel();
        tracker.close();
        tracker.wait().await;
        assert_eq!(sink.dropped(), 0);
    }

    #[tokio::test]
    async fn shutdown_writes_every_event_still_queued() {
        let dir = tempfile::tempdir().unwrap();
        let spec = StateSpec::Sqlite(dir.path().join("s.db"));
        let store = Arc::new(Store::open(&spec).await.unwrap());
        let (sink, shutdown, tracker) = start(&store);
        let conns = [tag("c1"), tag("c2"), tag("c3")];
        // More than one batch, sent while the writer is still gathering or writing.
        let total = BATCH + 5_000;
        for i in 0..total {
            sink.request(&conns[i % 3], "tabs/list".into(), 0, Duration::ZERO);
        }
        sink.control(
            crate::routing::hub::Control {
                kind: "kick",
                user_id: "alice",
                mcp_client_id: None,
                connection_id: Some("c1"),
                extension_id: None,
                code: 0,
            },
            Some("by alice".into()),
        );
        shutdown.cancel();
        tracker.close();
        tracker.wait().await;
        let records = recorded(&store).await;
        assert_eq!(records.len(), total + 1);
        assert_eq!(records[0].kind, "kick");
        assert_eq!(sink.dropped(), 0);
    }

    /// On a paused clock: the tally intervals pass without being waited for.
    #[tokio::test(start_paused = true)]
    async fn refusals_are_tallied_per_connection_and_reason_and_bounded_per_user() {
        let dir = tempfile::tempdir().unwrap();
        let spec = StateSpec::Sqlite(dir.path().join("s.db"));
        let store = Arc::new(Store::open(&spec).await.unwrap());
        let (sink, queue) = AuditSink::channel();
        let shutdown = CancellationToken::new();
        let tracker = TaskTracker::new();
        let day = Duration::from_secs(86_400);
        let every = Duration::from_millis(300);
        spawn_writer_every(
            Arc::clone(&store),
            queue,
            day,
            every,
            shutdown.clone(),
            &tracker,
        );
        let conns: Vec<_> = (0..REFUSAL_KEYS_PER_USER + 10)
            .map(|i| tag(&format!("c{i}")))
            .collect();
        for i in 0..10_000 {
            sink.refused(&conns[0], &format!("unique-{i}"), -32002, "rate limit");
        }
        sink.refused(&conns[0], "m", -32600, "id too long");
        for conn in &conns[1..] {
            sink.refused(conn, "m", -32002, "rate limit");
        }
        until_recorded(&store, REFUSAL_KEYS_PER_USER + 1).await;
        tokio::time::sleep(every * 2).await;
        let records = recorded(&store).await;
        // Connection c0 has two tallies (two reasons), 14 more connections one each, and the
        // last 11 share the user's overflow tally.
        assert_eq!(records.len(), REFUSAL_KEYS_PER_USER + 1, "{records:#?}");
        assert!(records.iter().all(|r| r.kind == "refused"));
        let c0 = records
            .iter()
            .find(|r| r.connection_id.as_deref() == Some("c0") && r.code == -32002)
            .unwrap();
        assert_eq!(c0.method.as_deref(), Some("unique-0"));
        assert_eq!(
            c0.detail.as_deref(),
            Some("10000 requests refused (rate limit)")
        );
        let overflow = records.iter().find(|r| r.connection_id.is_none()).unwrap();
        assert_eq!(overflow.user_id, "alice");
        assert!(overflow
            .detail
            .as_deref()
            .unwrap()
            .starts_with("11 requests refused"));
        assert_eq!(sink.refusals(), 10_000 + 1 + conns.len() as u64 - 1);
        // The next interval starts afresh; shutdown writes what was counted so far.
        sink.refused(&conns[1], "later", -32002, "rate limit");
        shutdown.cancel();
        tracker.close();
        tracker.wait().await;
        let records = recorded(&store).await;
        assert_eq!(records.len(), REFUSAL_KEYS_PER_USER + 2);
        assert_eq!(records[0].method.as_deref(), Some("later"));
    }

    #[test]
    fn a_full_queue_drops_and_counts_instead_of_waiting() {
        let (sink, _rx) = AuditSink::channel();
        let conn = tag("c1");
        for _ in 0..AUDIT_QUEUE + 3 {
            sink.request(&conn, "m".into(), 0, Duration::ZERO);
        }
        assert_eq!(sink.dropped(), 3);
    }

    #[test]
    fn a_request_event_reads_as_its_connections_labels() {
        let conn = tag("c9");
        let event = AuditEvent::Request {
            conn: Arc::clone(&conn),
            method: "tabs/list".into(),
            code: -32001,
            at: UNIX_EPOCH + Duration::from_millis(1234),
            duration: Duration::from_micros(1500),
        };
        let record = event.entry().to_record();
        assert_eq!(
            record,
            AuditRecord {
                at_ms: 1234,
                kind: "request".into(),
                user_id: "alice".into(),
                mcp_client_id: Some("mcp-1".into()),
                connection_id: Some("c9".into()),
                extension_id: Some("ext-1".into()),
                method: Some("tabs/list".into()),
                code: -32001,
                duration_ms: Some(1.5),
                detail: None,
            }
        );
        // Borrowed, not copied.
        assert!(std::ptr::eq(event.entry().user_id, conn.user_id.as_str()));
    }

    /// What recording costs the thread that forwards a request: the method's copy and
    /// [`AuditSink::request`], with the writer running on the runtime into a real SQLite file.
    /// Bursts of 50,000 (below the queue's bound, so nothing is dropped and the cheap
    /// "queue full" path is never taken), the writer draining between bursts.
    /// `cargo test --release --lib audit -- --ignored --nocapture`; docs/BENCHMARKS.md.
    #[test]
    #[ignore = "a benchmark, run on purpose (docs/BENCHMARKS.md)"]
    fn what_recording_a_request_costs_the_forwarding_thread() {
        const BURST: usize = 50_000;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let spec = StateSpec::Sqlite(dir.path().join("state.db"));
        let store = Arc::new(runtime.block_on(Store::open(&spec)).unwrap());
        let (sink, shutdown, tracker) = runtime.block_on(async { start(&store) });
        let conn = tag("conn-bench");
        let cpu = |who| {
            let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
            // SAFETY: getrusage writes the struct it is given and nothing else.
            unsafe { libc::getrusage(who, &mut usage) };
            let time = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
            time(usage.ru_utime) + time(usage.ru_stime)
        };
        let (process_before, thread_before) = (cpu(libc::RUSAGE_SELF), cpu(libc::RUSAGE_THREAD));
        let mut per_event = Vec::new();
        for _ in 0..21 {
            let started = Instant::now();
            for _ in 0..BURST {
                let method: Box<str> = std::hint::black_box("tabs/list").into();
                sink.request(&conn, method, 0, Duration::from_micros(50));
            }
            per_event.push(started.elapsed().as_nanos() as f64 / BURST as f64);
            std::thread::sleep(Duration::from_millis(300));
        }
        shutdown.cancel();
        runtime.block_on(async {
            tracker.close();
            tracker.wait().await;
        });
        // Everything but this thread: the writer, its blocking thread and the runtime.
        let others =
            (cpu(libc::RUSAGE_SELF) - process_before) - (cpu(libc::RUSAGE_THREAD) - thread_before);
        per_event.sort_by(f64::total_cmp);
        let written = runtime.block_on(recorded(&store)).len();
        eprintln!(
            "recording a request on the forwarding thread: median {:.0} ns, min {:.0} ns, max \
             {:.0} ns per event (21 bursts of {BURST}); writer and runtime: {:.0} ns of CPU per \
             event; {written} events written, {} dropped",
            per_event[per_event.len() / 2],
            per_event[0],
            per_event[per_event.len() - 1],
            others * 1e9 / (21 * BURST) as f64,
            sink.dropped()
        );
        assert_eq!(sink.dropped(), 0);
        assert_eq!(written, 21 * BURST);
    }
}
