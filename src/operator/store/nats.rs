//! The `--state nats` backend: JetStream key-value buckets and one stream on the NATS the
//! cluster already uses, so that every node sees the same approvals and revocations at once and
//! the audit trail of every node can be queried from any of them.
//!
//! - `mcp-relay-browsers`: per browser, what was seen of it (`s.<id>`: name, version, user,
//!   first and last seen; written by whichever node the browser is on) and the out-of-band
//!   decision about it (`d.<id>`: approved, revoked; written only by approve and revoke). The two
//!   are separate keys so that a node recording "seen again" can never overwrite an approval or
//!   a revocation another node made a moment earlier.
//! - `mcp-relay-revocations`: one key per revoked token (`t.<hash>`), one per user cutoff
//!   (`c.<user>`, raised with a compare-and-set so an earlier cutoff never replaces a later one).
//! - `mcp-relay-meta`: the `--dev` secret and the like.
//! - The stream `MCP_RELAY_AUDIT` (subjects `mcp-relay.audit.<user>`): the audit trail, a
//!   message per user per written batch, kept for `--audit-retention` by the server itself.
//!
//! Every node watches the two buckets and applies what other nodes write to its in-memory
//! mirror (`crate::operator::access`), closing the sockets a revocation names. Every operation
//! is an `async fn` that awaits its NATS requests on the caller's task, bounded by
//! [`OP_TIMEOUT`]: no thread is held while JetStream answers.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use async_nats::jetstream::{self, consumer, kv, stream};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};

use super::{
    AsAuditEntry, AuditEntry, AuditQuery, AuditRecord, BrowserRecord, Revocations, RevokedToken,
};

/// How long one store operation may wait on NATS before it fails (and the admin API answers
/// with an error, or a background write logs one).
pub const OP_TIMEOUT: Duration = Duration::from_secs(5);
/// How long start-up waits for JetStream before it stops with an error.
pub const START_TIMEOUT: Duration = Duration::from_secs(10);

const BROWSERS: &str = "mcp-relay-browsers";
const REVOCATIONS: &str = "mcp-relay-revocations";
const META: &str = "mcp-relay-meta";
const AUDIT_STREAM: &str = "MCP_RELAY_AUDIT";
const AUDIT_SUBJECT: &str = "mcp-relay.audit";
/// Events per audit message: packed (see [`encode_audit`]), about 50 KB at most, far below
/// NATS's default 1 MiB payload limit.
const AUDIT_PER_MESSAGE: usize = 2048;
/// Stream sequences an audit query reads per step back in time.
const AUDIT_WINDOW: u64 = 2048;
/// Audit messages one query reads at most (each holds up to [`AUDIT_PER_MESSAGE`] records),
/// and how long it may read: a query over a long, busy trail answers with what it found among
/// the newest messages rather than reading for minutes. `since` ends the search early.
pub const AUDIT_SCAN_LIMIT: u64 = 200_000;
pub const AUDIT_SCAN_TIME: Duration = Duration::from_secs(3);
/// How far a node's clock (which times events) may run ahead of the NATS server's (which times
/// messages) before a query could stop reading too early.
const AUDIT_CLOCK_SLACK_MS: i64 = 5_000;

/// A change another node (or this one) made, as the watch delivers it to `crate::operator::access`.
#[derive(Debug, Clone, PartialEq)]
pub enum StoreChange {
    /// A browser was seen (name, version, last seen); its decision is not part of it.
    BrowserSeen(BrowserRecord),
    /// A browser was approved or revoked (or its decision cleared: both false).
    BrowserDecision {
        id: String,
        user_id: String,
        approved: bool,
        revoked: bool,
    },
    /// A browser record was forgotten (the per-user bound).
    BrowserForgotten {
        id: String,
    },
    Token(RevokedToken),
    Cutoff {
        user_id: String,
        issued_before: i64,
    },
}

/// What the `d.<id>` key holds.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Decision {
    user_id: String,
    approved: bool,
    revoked: bool,
}

/// What a `t.<hash>` key holds.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct TokenValue {
    jti: String,
    user_id: Option<String>,
    revoked_at: i64,
}

pub struct NatsStore {
    jetstream: jetstream::Context,
    browsers: kv::Store,
    revocations: kv::Store,
    meta: kv::Store,
    /// Watches opened at start, before the first snapshot, so nothing written between the
    /// snapshot and the watcher's start is missed; taken by [`NatsStore::spawn_watcher`].
    watches: Mutex<Option<(kv::Watch, kv::Watch)>>,
    /// Decision keys this node writes or wrote: the watch brings every write back, and the
    /// echo of an older write (approve, then revoke at once) must not undo the newer one in
    /// the mirror, even for a moment.
    decided: Arc<Mutex<HashMap<String, Decided>>>,
    url: String,
}

/// What this node knows of its own writes to one decision key.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
struct Decided {
    /// The revision of its newest write that NATS acknowledged.
    newest: u64,
    /// Writes sent and not yet acknowledged: the echo of an earlier write of ours that comes
    /// back meanwhile is older than one of them (the mirror already holds that newer
    /// decision), so it must not be applied.
    in_flight: u32,
}

/// One decision write of this node, counted in [`Decided::in_flight`] from its start until it
/// ends: acknowledged, failed, or its caller gone.
struct InFlight<'a> {
    decided: &'a Mutex<HashMap<String, Decided>>,
    key: String,
    revision: Option<u64>,
}

impl<'a> InFlight<'a> {
    fn start(decided: &'a Mutex<HashMap<String, Decided>>, key: String) -> InFlight<'a> {
        decided
            .lock()
            .unwrap()
            .entry(key.clone())
            .or_default()
            .in_flight += 1;
        InFlight {
            decided,
            key,
            revision: None,
        }
    }

    fn key(&self) -> &str {
        &self.key
    }

    fn acknowledged(&mut self, revision: u64) {
        self.revision = Some(revision);
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let mut decided = self.decided.lock().unwrap_or_else(|e| e.into_inner());
        let Some(entry) = decided.get_mut(&self.key) else {
            return;
        };
        entry.in_flight = entry.in_flight.saturating_sub(1);
        if let Some(revision) = self.revision {
            entry.newest = entry.newest.max(revision);
        }
        if *entry == Decided::default() {
            decided.remove(&self.key);
        }
    }
}

fn encode(text: &str) -> String {
    // Base64url keeps any id a valid key (`[-_A-Za-z0-9]`), and it is reversible, which a
    // deletion (that carries no value) needs.
    URL_SAFE_NO_PAD.encode(text.as_bytes())
}

fn decode(key: &str) -> Option<String> {
    String::from_utf8(URL_SAFE_NO_PAD.decode(key).ok()?).ok()
}

fn token_key(jti: &str, user_id: Option<&str>) -> String {
    use ring::digest::{digest, SHA256};
    // A jti can be long; the key is a fixed-size digest of it and its scope.
    let scope = user_id.map_or_else(|| "*".to_owned(), |u| format!("u:{u}"));
    let hash = digest(&SHA256, format!("{jti}\0{scope}").as_bytes());
    let hex: String = hash.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    format!("t.{hex}")
}

impl NatsStore {
    /// Connects to the cluster's NATS (`url`, with `serve`'s credentials and TLS), makes sure
    /// the buckets and the audit stream exist, and opens the watches. Fails after
    /// [`START_TIMEOUT`] when JetStream does not answer.
    pub async fn open(config: &crate::config::ServeConfig, url: &str) -> anyhow::Result<NatsStore> {
        let client = crate::routing::cluster::nats::connect(
            config,
            url,
            "",
            crate::routing::cluster::nats::Purpose::State,
            Default::default(),
            Default::default(),
        )
        .await?;
        let jetstream = jetstream::new(client);
        let retention = config.audit_retention;
        let setup = async {
            let browsers = ensure_bucket(&jetstream, BROWSERS).await?;
            let revocations = ensure_bucket(&jetstream, REVOCATIONS).await?;
            let meta = ensure_bucket(&jetstream, META).await?;
            // With the trail off (retention 0) an existing trail is left as it is.
            if !retention.is_zero() {
                ensure_audit_stream(&jetstream, retention)
                    .await
                    .context("the audit stream")?;
            }
            let watches = (browsers.watch_all().await?, revocations.watch_all().await?);
            anyhow::Ok((browsers, revocations, meta, watches))
        };
        let (browsers, revocations, meta, watches) = tokio::time::timeout(START_TIMEOUT, setup)
            .await
            .map_err(|_| {
                anyhow::anyhow!(
                    "--state nats: JetStream at {url} did not answer within {}s (is nats-server \
                     running, reachable, and started with JetStream enabled, `nats-server -js`?)",
                    START_TIMEOUT.as_secs()
                )
            })?
            .with_context(|| {
                format!(
                    "--state nats: setting up the state buckets on {url} (nats-server must run \
                     with JetStream enabled, `nats-server -js`, and the account may use it)"
                )
            })?;
        Ok(NatsStore {
            jetstream,
            browsers,
            revocations,
            meta,
            watches: Mutex::new(Some(watches)),
            decided: Default::default(),
            url: url.to_owned(),
        })
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    /// Awaits `work`, bounded by [`OP_TIMEOUT`]: a NATS that stopped answering fails the
    /// operation (an admin request gets an error, a background write logs one) instead of
    /// leaving it waiting.
    async fn bounded<T>(&self, work: impl Future<Output = anyhow::Result<T>>) -> anyhow::Result<T> {
        tokio::time::timeout(OP_TIMEOUT, work).await.map_err(|_| {
            anyhow::anyhow!(
                "the NATS state store ({}) did not answer within {}s",
                self.url,
                OP_TIMEOUT.as_secs()
            )
        })?
    }

    /// Every current entry of `bucket` (newest value per key), as of now.
    async fn snapshot(bucket: &kv::Store) -> anyhow::Result<Vec<kv::Entry>> {
        let mut entries = Vec::new();
        if bucket.status().await?.values() == 0 {
            return Ok(entries);
        }
        let mut watch = bucket.watch_with_history(">").await?;
        while let Some(entry) = watch.next().await {
            let entry = entry?;
            // The last historical entry is the one after which nothing is pending.
            let current = entry.seen_current;
            if entry.operation == kv::Operation::Put {
                entries.push(entry);
            }
            if current {
                break;
            }
        }
        Ok(entries)
    }

    pub(super) async fn browsers(&self) -> anyhow::Result<Vec<BrowserRecord>> {
        let entries = self.bounded(Self::snapshot(&self.browsers)).await?;
        let mut seen: HashMap<String, BrowserRecord> = HashMap::new();
        let mut decisions: HashMap<String, Decision> = HashMap::new();
        for entry in entries {
            match entry.key.split_once('.') {
                Some(("s", _)) => {
                    if let Ok(record) = serde_json::from_slice::<BrowserRecord>(&entry.value) {
                        seen.insert(record.id.clone(), record);
                    }
                }
                Some(("d", id)) => {
                    if let (Some(id), Ok(decision)) =
                        (decode(id), serde_json::from_slice::<Decision>(&entry.value))
                    {
                        decisions.insert(id, decision);
                    }
                }
                _ => {}
            }
        }
        let mut list: Vec<BrowserRecord> = seen
            .into_values()
            .map(|mut record| {
                if let Some(d) = decisions.remove(&record.id) {
                    record.approved = d.approved;
                    record.revoked = d.revoked;
                }
                record
            })
            .collect();
        // A decision about a browser no record was kept of (revoked on a node before it was
        // ever seen there) still counts.
        for (id, d) in decisions {
            if d.approved || d.revoked {
                list.push(BrowserRecord {
                    id,
                    user_id: d.user_id,
                    name: String::new(),
                    version: None,
                    approved: d.approved,
                    revoked: d.revoked,
                    first_seen: 0,
                    last_seen: 0,
                });
            }
        }
        list.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(list)
    }

    /// What was seen of a browser; never its decision.
    pub(super) async fn put_browser(&self, browser: &BrowserRecord) -> anyhow::Result<()> {
        let key = format!("s.{}", encode(&browser.id));
        let value = serde_json::to_vec(browser)?;
        self.bounded(async {
            self.browsers.put(key, value.into()).await?;
            Ok(())
        })
        .await
    }

    /// The out-of-band decision about a browser (approve, revoke).
    pub(super) async fn put_browser_decision(&self, browser: &BrowserRecord) -> anyhow::Result<()> {
        let key = format!("d.{}", encode(&browser.id));
        let value = serde_json::to_vec(&Decision {
            user_id: browser.user_id.clone(),
            approved: browser.approved,
            revoked: browser.revoked,
        })?;
        // Marked before the write, not after its acknowledgement: the echo of our previous
        // write can arrive in between. The mark goes when the write ends, however it ends.
        let mut writing = InFlight::start(&self.decided, key);
        let revision = self
            .bounded(async { Ok(self.browsers.put(writing.key(), value.into()).await?) })
            .await?;
        writing.acknowledged(revision);
        Ok(())
    }

    pub(super) async fn delete_browser(&self, id: &str) -> anyhow::Result<()> {
        let encoded = encode(id);
        self.bounded(async {
            self.browsers.delete(format!("s.{encoded}")).await?;
            self.browsers.delete(format!("d.{encoded}")).await?;
            Ok(())
        })
        .await
    }

    pub(super) async fn revocations(&self) -> anyhow::Result<Revocations> {
        let entries = self.bounded(Self::snapshot(&self.revocations)).await?;
        let mut revocations = Revocations::default();
        for entry in entries {
            match parse_revocation(&entry) {
                Some(StoreChange::Token(token)) => revocations.tokens.push(token),
                Some(StoreChange::Cutoff {
                    user_id,
                    issued_before,
                }) => revocations.cutoffs.push((user_id, issued_before)),
                _ => {}
            }
        }
        Ok(revocations)
    }

    pub(super) async fn revoke_token(&self, token: &RevokedToken) -> anyhow::Result<()> {
        let key = token_key(&token.jti, token.user_id.as_deref());
        let value = serde_json::to_vec(&TokenValue {
            jti: token.jti.clone(),
            user_id: token.user_id.clone(),
            revoked_at: token.revoked_at,
        })?;
        self.bounded(async {
            self.revocations.put(key, value.into()).await?;
            Ok(())
        })
        .await
    }

    /// Raises `user_id`'s cutoff with a compare-and-set, so that two nodes revoking at once
    /// keep the later cutoff.
    pub(super) async fn revoke_user(
        &self,
        user_id: &str,
        issued_before: i64,
    ) -> anyhow::Result<()> {
        let key = format!("c.{}", encode(user_id));
        self.bounded(async {
            for _ in 0..16 {
                let current = self.revocations.entry(key.as_str()).await?;
                let value = issued_before.to_string().into_bytes();
                let written = match current {
                    Some(entry) if entry.operation == kv::Operation::Put => {
                        let before = std::str::from_utf8(&entry.value)
                            .ok()
                            .and_then(|v| v.parse::<i64>().ok());
                        if before.is_some_and(|b| b >= issued_before) {
                            return Ok(());
                        }
                        self.revocations
                            .update(key.as_str(), value.into(), entry.revision)
                            .await
                            .is_ok()
                    }
                    Some(entry) => self
                        .revocations
                        .update(key.as_str(), value.into(), entry.revision)
                        .await
                        .is_ok(),
                    None => self
                        .revocations
                        .create(key.as_str(), value.into())
                        .await
                        .is_ok(),
                };
                if written {
                    return Ok(());
                }
            }
            anyhow::bail!("raising the cutoff of a user: too many concurrent changes, try again")
        })
        .await
    }

    /// Sets `user_id`'s cutoff exactly, or deletes it: an admin's correction. (Other nodes'
    /// mirrors take a lower cutoff or its removal at their next start; a raise reaches them at
    /// once through the watcher.)
    pub(super) async fn set_user_cutoff(
        &self,
        user_id: &str,
        issued_before: Option<i64>,
    ) -> anyhow::Result<()> {
        let key = format!("c.{}", encode(user_id));
        self.bounded(async {
            match issued_before {
                Some(before) => {
                    self.revocations
                        .put(key.as_str(), before.to_string().into_bytes().into())
                        .await?;
                }
                None => self.revocations.delete(key.as_str()).await?,
            }
            Ok(())
        })
        .await
    }

    /// Publishes the batch as one message per user (and per [`AUDIT_PER_MESSAGE`] records),
    /// waiting for JetStream to acknowledge each, and empties `batch`. The messages are packed
    /// on a blocking thread (a full batch is thousands of events: CPU work the runtime's
    /// threads should not do between forwarding requests), and only the publishing is awaited
    /// here, bounded by [`OP_TIMEOUT`].
    pub(super) async fn append_audit<E: AsAuditEntry>(
        &self,
        batch: &mut Vec<E>,
    ) -> anyhow::Result<()> {
        let messages = super::with_entries_off_runtime(batch, audit_messages)
            .await
            .context("packing audit messages")??;
        self.bounded(async {
            let mut acks = Vec::with_capacity(messages.len());
            for (subject, payload) in messages {
                acks.push(self.jetstream.publish(subject, payload.into()).await?);
            }
            for ack in acks {
                ack.await?;
            }
            Ok(())
        })
        .await
    }

    /// Newest first: reads the stream backwards in windows of [`AUDIT_WINDOW`] sequences
    /// (only the user's subject when the query names one) until no older message can hold an
    /// event newer than the `limit`-th found or than `since`, or [`AUDIT_SCAN_LIMIT`] messages
    /// were read, or [`AUDIT_SCAN_TIME`] passed.
    pub(super) async fn query_audit(&self, query: &AuditQuery) -> anyhow::Result<Vec<AuditRecord>> {
        self.bounded(async {
            let mut stream = match self.jetstream.get_stream(AUDIT_STREAM).await {
                Ok(stream) => stream,
                // The trail has never been on (`--audit-retention 0` on every node).
                Err(e) if stream_not_found(&e) => return Ok(Vec::new()),
                Err(e) => return Err(e.into()),
            };
            if query.limit == 0 {
                return Ok(Vec::new());
            }
            let state = stream.info().await?.state.clone();
            let filter = match &query.user_id {
                Some(user) => format!("{AUDIT_SUBJECT}.{}", audit_token(user)),
                None => format!("{AUDIT_SUBJECT}.>"),
            };
            // The newest `limit` matches so far, newest first.
            let mut found: Vec<AuditRecord> = Vec::new();
            let mut end = state.last_sequence;
            let mut read = 0u64;
            let deadline = tokio::time::Instant::now() + AUDIT_SCAN_TIME;
            while end >= state.first_sequence.max(1)
                && read < AUDIT_SCAN_LIMIT
                && tokio::time::Instant::now() < deadline
            {
                let start = end
                    .saturating_sub(AUDIT_WINDOW - 1)
                    .max(state.first_sequence);
                let consumer = stream
                    .create_consumer(consumer::pull::OrderedConfig {
                        filter_subject: filter.clone(),
                        deliver_policy: consumer::DeliverPolicy::ByStartSequence {
                            start_sequence: start,
                        },
                        ..Default::default()
                    })
                    .await?;
                // Every window costs at least a consumer, even one with nothing in it.
                read += 1;
                let mut pending = consumer.cached_info().num_pending;
                // When the server stored the window's oldest message: every event in an older
                // window was recorded before that (give or take the nodes' clocks).
                let mut oldest_stored_ms = None;
                if pending > 0 {
                    let mut messages = consumer.messages().await?;
                    while pending > 0 {
                        let next = tokio::time::timeout_at(deadline, messages.next());
                        let Ok(Some(message)) = next.await else {
                            break;
                        };
                        let message = message?;
                        let info = message.info().map_err(|e| anyhow::anyhow!("{e}"))?;
                        if info.stream_sequence > end {
                            break;
                        }
                        pending = info.pending;
                        read += 1;
                        oldest_stored_ms.get_or_insert(
                            (info.published.unix_timestamp_nanos() / 1_000_000) as i64,
                        );
                        let records = decode_audit(&message.payload).unwrap_or_else(|| {
                            tracing::warn!("an audit message in NATS does not decode; skipped");
                            Vec::new()
                        });
                        found.extend(records.into_iter().filter(|r| query.matches(r)));
                    }
                }
                found.sort_by_key(|r| std::cmp::Reverse(r.at_ms));
                found.truncate(query.limit);
                // Messages are stored in the order nodes publish them, but a node's batch may
                // hold events newer than another node's later message: stop only once nothing
                // older can still be newer than what was found, or than `since`.
                let older_cannot_count = oldest_stored_ms.is_some_and(|stored| {
                    let bound = stored + AUDIT_CLOCK_SLACK_MS;
                    query.since_ms.is_some_and(|since| bound < since)
                        || (found.len() == query.limit
                            && found.last().is_some_and(|r| bound < r.at_ms))
                });
                if older_cannot_count || start <= state.first_sequence {
                    break;
                }
                end = start - 1;
            }
            Ok(found)
        })
        .await
    }

    pub(super) async fn meta(&self, key: &str) -> anyhow::Result<Option<String>> {
        let key = format!("m.{}", encode(key));
        self.bounded(async {
            let value = self.meta.get(key).await?;
            Ok(value.map(|v| String::from_utf8_lossy(&v).into_owned()))
        })
        .await
    }

    pub(super) async fn set_meta(&self, key: &str, value: &str) -> anyhow::Result<()> {
        let key = format!("m.{}", encode(key));
        let value = value.as_bytes().to_vec();
        self.bounded(async {
            self.meta.put(key, value.into()).await?;
            Ok(())
        })
        .await
    }

    /// Starts applying what any node writes to the buckets: `apply` gets every change in the
    /// order NATS delivers it, including this node's own writes (applying them again changes
    /// nothing). Runs until `shutdown`.
    pub fn spawn_watcher(
        &self,
        apply: Arc<dyn Fn(StoreChange) + Send + Sync>,
        shutdown: tokio_util::sync::CancellationToken,
    ) {
        let Some((mut browsers, mut revocations)) = self.watches.lock().unwrap().take() else {
            return;
        };
        let decided = Arc::clone(&self.decided);
        tokio::spawn(async move {
            loop {
                let entry = tokio::select! {
                    _ = shutdown.cancelled() => break,
                    entry = browsers.next() => entry,
                    entry = revocations.next() => entry,
                };
                match entry {
                    Some(Ok(entry)) => {
                        if superseded(&decided, &entry.key, entry.revision) {
                            continue;
                        }
                        let change = if entry.bucket == BROWSERS {
                            parse_browser(&entry)
                        } else {
                            parse_revocation(&entry)
                        };
                        if let Some(change) = change {
                            apply(change);
                        }
                    }
                    Some(Err(e)) => tracing::warn!("state store watch: {e}"),
                    None => {
                        tracing::warn!("state store watch ended; changes made on other nodes reach this one over the cluster link only");
                        break;
                    }
                }
            }
        });
    }
}

/// Creates (or keeps) a key-value bucket keeping the newest value of each key on disk.
///
/// The bucket's stream is made here rather than through `create_key_value`, which first asks
/// for the account's JetStream info in a shape servers before 2.10 (Debian's 2.9) do not
/// send; the stream is the one a key-value bucket is everywhere: `KV_<bucket>` on
/// `$KV.<bucket>.>`, one message per subject, roll-ups allowed, deletes only through markers.
async fn ensure_bucket(jetstream: &jetstream::Context, bucket: &str) -> anyhow::Result<kv::Store> {
    // An existing bucket is used as it is: an operator may have given it more replicas.
    if let Ok(existing) = jetstream.get_key_value(bucket).await {
        return Ok(existing);
    }
    jetstream
        .create_stream(stream::Config {
            name: format!("KV_{bucket}"),
            subjects: vec![format!("$KV.{bucket}.>")],
            max_messages_per_subject: 1,
            storage: stream::StorageType::File,
            allow_rollup: true,
            deny_delete: true,
            allow_direct: true,
            discard: stream::DiscardPolicy::New,
            num_replicas: 1,
            ..Default::default()
        })
        .await
        .with_context(|| format!("the {bucket} bucket"))?;
    jetstream
        .get_key_value(bucket)
        .await
        .with_context(|| format!("the {bucket} bucket"))
}

/// Creates the audit stream, or sets an existing one's `max_age` to `retention` (and nothing
/// else, so replicas or placement an operator chose stay).
async fn ensure_audit_stream(
    jetstream: &jetstream::Context,
    retention: Duration,
) -> anyhow::Result<()> {
    match jetstream.get_stream(AUDIT_STREAM).await {
        Ok(mut existing) => {
            let mut config = existing.info().await?.config.clone();
            if config.max_age != retention {
                config.max_age = retention;
                jetstream.update_stream(config).await?;
            }
            return Ok(());
        }
        Err(e) if !stream_not_found(&e) => return Err(e.into()),
        Err(_) => {}
    }
    jetstream
        .create_stream(stream::Config {
            name: AUDIT_STREAM.to_owned(),
            subjects: vec![format!("{AUDIT_SUBJECT}.>")],
            storage: stream::StorageType::File,
            max_age: retention,
            ..Default::default()
        })
        .await?;
    Ok(())
}

fn stream_not_found(error: &jetstream::context::GetStreamError) -> bool {
    matches!(
        error.kind(),
        jetstream::context::GetStreamErrorKind::JetStream(e)
            if e.error_code() == jetstream::ErrorCode::STREAM_NOT_FOUND
    )
}

/// Whether `entry` is the echo of a decision this node has since overwritten (see
/// [`NatsStore::decided`]), or of one it is overwriting right now; forgets the key once its
/// newest write came back with none in flight.
fn superseded(decided: &Mutex<HashMap<String, Decided>>, key: &str, revision: u64) -> bool {
    let mut decided = decided.lock().unwrap();
    match decided.get(key) {
        Some(ours) if revision < ours.newest => true,
        // Our own acknowledged write, with a newer one of ours on its way. (A revision above
        // it is another node's write, applied as ever.)
        Some(ours) if ours.in_flight > 0 => revision <= ours.newest,
        Some(_) => {
            decided.remove(key);
            false
        }
        None => false,
    }
}

/// The messages (subject, payload) that carry `entries`: one per user and per
/// [`AUDIT_PER_MESSAGE`] records.
fn audit_messages(entries: &[AuditEntry<'_>]) -> anyhow::Result<Vec<(String, Vec<u8>)>> {
    let mut by_user: HashMap<&str, Vec<&AuditEntry<'_>>> = HashMap::new();
    for entry in entries {
        by_user.entry(entry.user_id).or_default().push(entry);
    }
    let mut messages = Vec::new();
    for (user, records) in by_user {
        for part in records.chunks(AUDIT_PER_MESSAGE) {
            messages.push((
                format!("{AUDIT_SUBJECT}.{}", audit_token(user)),
                encode_audit(part)?,
            ));
        }
    }
    Ok(messages)
}

/// The labels of an audit message: user, MCP client, connection, browser.
type Labels<'a> = (&'a str, Option<&'a str>, Option<&'a str>, Option<&'a str>);

/// The first line of an audit message: its events' labels (each event refers to one by
/// position) and the time its packed event times count from.
#[derive(Serialize)]
struct AuditHeader<'a> {
    first_ms: i64,
    labels: Vec<Labels<'a>>,
}

/// [`AuditHeader`] as read back (owned: a label with a quote in it is escaped in JSON).
#[derive(Deserialize)]
struct AuditHeaderRead {
    first_ms: i64,
    labels: Vec<LabelsRead>,
}

type LabelsRead = (String, Option<String>, Option<String>, Option<String>);

/// One audit message: a JSON header line, then the events packed as the SQLite store packs
/// them (`super::chunk`): about 20 bytes per request instead of 250 of JSON, which at
/// saturation is CPU the relay and nats-server no longer spend.
fn encode_audit(entries: &[&AuditEntry<'_>]) -> anyhow::Result<Vec<u8>> {
    let first_ms = entries.iter().map(|e| e.at_ms).min().unwrap_or(0);
    let mut labels: Vec<Labels<'_>> = Vec::new();
    let mut index: HashMap<Labels<'_>, usize> = HashMap::new();
    let mut blob = Vec::with_capacity(entries.len() * 24);
    for e in entries {
        let key = (e.user_id, e.mcp_client_id, e.connection_id, e.extension_id);
        let at = *index.entry(key).or_insert_with(|| {
            labels.push(key);
            labels.len() - 1
        });
        let packed = super::chunk::Packed {
            at_ms: e.at_ms,
            labels: at as i64,
            kind: e.kind,
            method: e.method,
            code: e.code,
            duration_ms: e.duration_ms,
            detail: e.detail,
        };
        super::chunk::pack(&mut blob, first_ms, &packed);
    }
    let mut message = serde_json::to_vec(&AuditHeader { first_ms, labels })?;
    message.push(b'\n');
    message.extend_from_slice(&blob);
    Ok(message)
}

/// The events of one audit message, in the order written; `None` when it does not decode.
fn decode_audit(payload: &[u8]) -> Option<Vec<AuditRecord>> {
    let split = payload.iter().position(|b| *b == b'\n')?;
    let header: AuditHeaderRead = serde_json::from_slice(&payload[..split]).ok()?;
    let owned = |text: Option<&str>| text.map(str::to_owned);
    super::chunk::unpack(&payload[split + 1..], header.first_ms)
        .map(|event| {
            let event = event.ok()?;
            let (user, mcp, connection, browser) = header.labels.get(event.labels as usize)?;
            Some(AuditRecord {
                at_ms: event.at_ms,
                kind: event.kind.to_owned(),
                user_id: user.clone(),
                mcp_client_id: mcp.clone(),
                connection_id: connection.clone(),
                extension_id: browser.clone(),
                method: owned(event.method),
                code: event.code,
                duration_ms: event.duration_ms,
                detail: owned(event.detail),
            })
        })
        .collect()
}

/// The subject token of `user`'s audit messages.
fn audit_token(user: &str) -> String {
    let encoded = encode(user);
    if encoded.is_empty() {
        "_".to_owned()
    } else {
        encoded
    }
}

fn parse_browser(entry: &kv::Entry) -> Option<StoreChange> {
    let (kind, id) = entry.key.split_once('.')?;
    let deleted = entry.operation != kv::Operation::Put;
    match (kind, deleted) {
        ("s", false) => serde_json::from_slice(&entry.value)
            .ok()
            .map(StoreChange::BrowserSeen),
        ("s", true) => Some(StoreChange::BrowserForgotten { id: decode(id)? }),
        ("d", false) => {
            let d: Decision = serde_json::from_slice(&entry.value).ok()?;
            Some(StoreChange::BrowserDecision {
                id: decode(id)?,
                user_id: d.user_id,
                approved: d.approved,
                revoked: d.revoked,
            })
        }
        _ => None,
    }
}

fn parse_revocation(entry: &kv::Entry) -> Option<StoreChange> {
    if entry.operation != kv::Operation::Put {
        return None;
    }
    let (kind, rest) = entry.key.split_once('.')?;
    match kind {
        "t" => {
            let t: TokenValue = serde_json::from_slice(&entry.value).ok()?;
            Some(StoreChange::Token(RevokedToken {
                jti: t.jti,
                user_id: t.user_id,
                revoked_at: t.revoked_at,
            }))
        }
        "c" => Some(StoreChange::Cutoff {
            user_id: decode(rest)?,
            issued_before: std::str::from_utf8(&entry.value).ok()?.parse().ok()?,
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_valid_nats_keys_and_reversible() {
        for id in ["ext-1", "", "a.b c/ü", &"x".repeat(1024)] {
            let key = format!("s.{}", encode(id));
            assert!(key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)));
            assert_eq!(decode(key.strip_prefix("s.").unwrap()).as_deref(), Some(id));
        }
        let key = token_key(&"j".repeat(8000), Some("alice"));
        assert_eq!(key.len(), 2 + 64);
        assert_ne!(key, token_key(&"j".repeat(8000), None));
        assert_eq!(audit_token(""), "_");
    }

    #[test]
    fn audit_messages_decode_to_exactly_the_events_written() {
        let records = [
            AuditRecord {
                at_ms: 1_700_000_000_123,
                kind: "request".into(),
                user_id: "alice".into(),
                mcp_client_id: Some("mcp-1".into()),
                connection_id: Some("conn-1".into()),
                extension_id: Some("ext-1".into()),
                method: Some("tabs/list".into()),
                code: -32001,
                duration_ms: Some(1.25),
                detail: None,
            },
            AuditRecord {
                at_ms: 1_700_000_000_100,
                kind: "revoke_token".into(),
                user_id: "al\"ice\\".into(),
                mcp_client_id: None,
                connection_id: None,
                extension_id: None,
                method: None,
                code: 0,
                duration_ms: None,
                detail: Some("jti x by admin root, \"quoted\"\nand ü".into()),
            },
        ];
        let entries: Vec<AuditEntry<'_>> = records.iter().map(Into::into).collect();
        let refs: Vec<&AuditEntry<'_>> = entries.iter().collect();
        let message = encode_audit(&refs).unwrap();
        assert_eq!(decode_audit(&message).unwrap(), records);
        assert!(decode_audit(b"not an audit message").is_none());
        let mut cut = message.clone();
        cut.truncate(cut.len() - 3);
        assert!(decode_audit(&cut).is_none());
    }

    #[test]
    fn the_echo_of_an_overwritten_decision_is_skipped_and_the_newest_applied() {
        let ours = |newest, in_flight| Decided { newest, in_flight };
        let decided = Mutex::new(HashMap::from([("d.x".to_owned(), ours(11, 0))]));
        // Approve (10) came back after revoke (11) was written here: skipped.
        assert!(superseded(&decided, "d.x", 10));
        // The revocation's own echo applies, and the key is forgotten.
        assert!(!superseded(&decided, "d.x", 11));
        assert!(decided.lock().unwrap().is_empty());
        // Another node's later write, and keys never written here, always apply.
        assert!(!superseded(&decided, "d.x", 12));
        assert!(!superseded(&decided, "d.y", 1));

        // Approve acknowledged (20), revoke sent and not yet acknowledged: the approval's echo
        // is skipped and the key kept; another node's later write still applies.
        decided.lock().unwrap().insert("d.x".into(), ours(20, 1));
        assert!(superseded(&decided, "d.x", 20));
        assert!(!superseded(&decided, "d.x", 21));
        assert_eq!(decided.lock().unwrap()["d.x"], ours(20, 1));
    }

    #[test]
    fn a_decision_write_is_in_flight_until_it_ends_however_it_ends() {
        let decided = Mutex::new(HashMap::new());
        let mut write = InFlight::start(&decided, "d.x".into());
        assert_eq!(decided.lock().unwrap()["d.x"].in_flight, 1);
        write.acknowledged(7);
        drop(write);
        let after = decided.lock().unwrap()["d.x"];
        assert_eq!((after.newest, after.in_flight), (7, 0));
        // Failed or abandoned (its caller gone): no longer in flight, nothing else changed.
        drop(InFlight::start(&decided, "d.x".into()));
        assert_eq!(decided.lock().unwrap()["d.x"], after);
        // A key with nothing known is not kept.
        drop(InFlight::start(&decided, "d.y".into()));
        assert!(!decided.lock().unwrap().contains_key("d.y"));
    }
}
