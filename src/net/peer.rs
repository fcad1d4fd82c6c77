//! One WebSocket peer: its outgoing side (a send queue bounded in bytes, the task that writes
//! it to the socket, the keepalive) and its reading side, [`PeerReader`], the one read loop
//! both sessions use.
//!
//! Anything in the relay that wants to talk to a peer holds a cheap [`Peer`] handle and calls
//! [`Peer::send`], which never blocks and never waits for the network: forwarding stays off
//! locks and a slow peer cannot stall the task that produced the frame. The queue's bound is in
//! bytes, not messages, because one screenshot weighs as much as a million small replies.
//! A peer whose queue overflows, or whose socket accepts nothing for `send_timeout`, is
//! disconnected: frames are never dropped silently, so a requester either gets its answer or
//! sees its socket close.
//!
//! Memory bounds (docs/SECURITY.md): each queued frame is charged its length plus
//! [`FRAME_OVERHEAD`] (the queue slot, the shared buffer header and allocator rounding), so
//! the count matches what the queue really holds even for floods of tiny error replies. The
//! queue is bounded per peer (`--max-unauthenticated-queue-bytes` until the socket
//! authenticates, then `--max-send-queue-bytes`) and for all peers together
//! (`--max-total-send-queue-bytes`). Pongs are written by tungstenite outside this queue; its
//! write buffer is bounded (see `server::tune`), and a socket whose writes have been blocked
//! for `--send-timeout` is closed on the next frame it sends, so a peer that pings and never
//! reads is dropped as promptly as one that only stops reading.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket};
use futures_util::stream::{SplitSink, SplitStream};
use futures_util::SinkExt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::metrics::Metrics;
use crate::net::transport::ConnHandle;

/// What a queued frame costs beyond its bytes: the queue slot, the shared buffer header, and
/// allocator rounding. Measured (`queued_tiny_replies_cost_what_the_queue_counts`): 150,000
/// queued 106-byte error replies are counted as 33.5 MiB and grow the relay's RSS by 28.8 MiB
/// (0.86×); counting their lengths alone would have said 15.2 MiB (1.9× under).
pub const FRAME_OVERHEAD: usize = 128;

/// WebSocket close codes the relay uses.
pub mod close_code {
    /// Normal close (a newer socket of the same extension took over).
    pub const NORMAL: u16 = 1000;
    /// The relay is going away (shutdown) or the peer stopped answering pings.
    pub const GOING_AWAY: u16 = 1001;
    /// A protocol error in the peer's WebSocket framing.
    pub const PROTOCOL: u16 = 1002;
    /// A text frame that is not valid UTF-8.
    pub const INVALID_DATA: u16 = 1007;
    /// Policy violation: failed authentication, or a peer that does not read its messages.
    pub const POLICY: u16 = 1008;
    /// A frame larger than `--max-message-bytes`.
    pub const TOO_BIG: u16 = 1009;
    /// Limits reached (too many extensions for this user, relay full).
    pub const TRY_AGAIN_LATER: u16 = 1013;
}

/// Per-socket tuning shared by every peer.
#[derive(Debug, Clone)]
pub struct SocketConfig {
    pub ping_interval: Duration,
    pub send_timeout: Duration,
    pub max_queue_bytes: usize,
    /// The queue bound until the socket authenticates.
    pub max_unauthenticated_queue_bytes: usize,
    /// Bytes queued towards all peers, and its bound.
    pub total_queued: Arc<AtomicUsize>,
    pub max_total_queue_bytes: usize,
}

static NEXT_PEER_ID: AtomicU64 = AtomicU64::new(1);

/// A handle to one socket's send queue. Cloning is cheap; all clones address the same socket.
#[derive(Clone)]
pub struct Peer(Arc<PeerInner>);

struct PeerInner {
    /// Unique for the process lifetime; lets the hub tell two sockets of one extension apart.
    id: u64,
    tx: QueueTx,
    /// Bytes queued but not yet written (plus `FRAME_OVERHEAD` per frame); the bound that
    /// keeps memory finite.
    queued_bytes: AtomicUsize,
    /// The unauthenticated bound at first, raised to `authenticated_queue_bytes`.
    max_queue_bytes: AtomicUsize,
    authenticated_queue_bytes: usize,
    total_queued: Arc<AtomicUsize>,
    max_total_queue_bytes: usize,
    send_timeout: Duration,
    conn: ConnHandle,
    /// Cancelled when the socket must close; both the reader and the writer watch it.
    closing: CancellationToken,
    /// The close frame to send; the first reason given wins.
    close_frame: Mutex<Option<(u16, String)>>,
    metrics: Arc<Metrics>,
}

impl std::fmt::Debug for Peer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Peer({})", self.0.id)
    }
}

impl Peer {
    pub fn id(&self) -> u64 {
        self.0.id
    }

    /// Queues a frame. Returns `false` when the peer is closing or its queue overflowed (in
    /// which case it is being disconnected).
    pub fn send(&self, frame: impl Into<Utf8Bytes>) -> bool {
        if self.0.closing.is_cancelled() {
            return false;
        }
        let frame = frame.into();
        let len = frame.len() + FRAME_OVERHEAD;
        let before = self.0.queued_bytes.fetch_add(len, Ordering::AcqRel);
        let total = self.0.total_queued.fetch_add(len, Ordering::AcqRel);
        // A single frame always fits into an empty queue, so the largest allowed message can
        // still be delivered to a peer that keeps up; a peer that is behind when its own or
        // the relay-wide bound is reached is the one disconnected.
        let full = if before == 0 {
            None
        } else if before + len > self.0.max_queue_bytes.load(Ordering::Relaxed) {
            Some("send queue full: the peer is not reading its messages")
        } else if total + len > self.0.max_total_queue_bytes {
            Some("relay send buffers full: the peer is not reading its messages")
        } else {
            None
        };
        if let Some(reason) = full {
            self.unqueue(len);
            self.0.metrics.slow_peer_disconnects.inc();
            tracing::warn!(peer = self.0.id, reason, "disconnecting the peer");
            self.close(close_code::POLICY, reason);
            return false;
        }
        if self.0.tx.send(Outgoing::Frame(frame)).is_err() {
            self.unqueue(len);
            return false;
        }
        true
    }

    /// Takes `cost` (length plus overhead) off this peer's and the relay-wide count.
    fn unqueue(&self, cost: usize) {
        self.0.queued_bytes.fetch_sub(cost, Ordering::AcqRel);
        self.0.total_queued.fetch_sub(cost, Ordering::AcqRel);
    }

    /// **The authentication hook.** Sessions call it once, at the moment the socket has
    /// authenticated (after `register_extension` succeeds, after a successful
    /// `mcp_handshake`): the send queue gets its full bound, the socket leaves the
    /// unauthenticated pool, and its reads stop counting against
    /// `--max-unauthenticated-bytes`.
    pub fn authenticated(&self) {
        self.0
            .max_queue_bytes
            .store(self.0.authenticated_queue_bytes, Ordering::Relaxed);
        self.0.conn.authenticated();
    }

    /// Bytes the queue counts right now (tests check the count returns to zero).
    #[cfg(test)]
    pub(crate) fn queued_bytes(&self) -> usize {
        self.0.queued_bytes.load(Ordering::Acquire)
    }

    /// Closes a peer that has accepted nothing for `--send-timeout`, and counts it.
    fn close_as_not_reading(&self) {
        self.0.metrics.slow_peer_disconnects.inc();
        self.close(
            close_code::POLICY,
            format!(
                "the peer did not read for {} s",
                self.0.send_timeout.as_secs_f64()
            ),
        );
    }

    /// Asks the socket to close with `code` and `reason`.
    pub fn close(&self, code: u16, reason: impl Into<String>) {
        {
            let mut frame = self.0.close_frame.lock().unwrap();
            if frame.is_none() {
                *frame = Some((code, reason.into()));
            }
        }
        self.0.closing.cancel();
    }

    /// Closes with `code` and `reason` once everything queued so far has been written, so a
    /// final error reply or shutdown notice reaches the peer before the close frame.
    pub fn close_after_flush(&self, code: u16, reason: impl Into<String>) {
        {
            let mut frame = self.0.close_frame.lock().unwrap();
            if frame.is_none() {
                *frame = Some((code, reason.into()));
            }
        }
        if self.0.tx.send(Outgoing::Close).is_err() {
            self.0.closing.cancel();
        }
    }

    pub fn is_open(&self) -> bool {
        !self.0.closing.is_cancelled()
    }

    /// Resolves once the socket has been asked to close.
    pub async fn closed(&self) {
        self.0.closing.cancelled().await
    }

    /// The close frame reason recorded so far, if any.
    pub fn close_reason(&self) -> Option<(u16, String)> {
        self.0.close_frame.lock().unwrap().clone()
    }

    /// Queues a frame only if the queue then holds at most `limit` bytes (or was empty: one
    /// frame always fits), and never closes the peer: `false` means "full" (or closing; ask
    /// [`Peer::is_open`]). The hub queues what MCP clients send to an extension this way, with a
    /// `limit` below the queue's bound, so a client's volume is refused with an error instead of
    /// overflowing the queue and disconnecting the browser for every client.
    pub fn try_send_within(&self, frame: impl Into<Utf8Bytes>, limit: usize) -> bool {
        if self.0.closing.is_cancelled() {
            return false;
        }
        let frame = frame.into();
        // Charged like `send` charges it, since the writer takes the same cost off again.
        let cost = frame.len() + FRAME_OVERHEAD;
        let fits = |before: usize| (before == 0 || before + cost <= limit).then_some(before + cost);
        let Ok(before) =
            self.0
                .queued_bytes
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, fits)
        else {
            return false;
        };
        let total = self.0.total_queued.fetch_add(cost, Ordering::AcqRel);
        let refused = (before != 0 && total + cost > self.0.max_total_queue_bytes)
            || self.0.tx.send(Outgoing::Frame(frame)).is_err();
        if refused {
            self.unqueue(cost);
            return false;
        }
        true
    }
}

/// The receiving end of a detached peer's queue: what a socket's writer would have written.
#[cfg(test)]
pub(crate) struct DetachedRx {
    peer: Peer,
    rx: QueueRx,
}

#[cfg(test)]
impl DetachedRx {
    /// Takes every frame queued so far, taking each one's cost off the counts as the writer
    /// does once it has written it.
    pub(crate) fn frames(&mut self) -> Vec<String> {
        let mut frames = Vec::new();
        while let Ok(outgoing) = self.rx.try_recv() {
            if let Outgoing::Frame(frame) = outgoing {
                self.peer.unqueue(frame.len() + FRAME_OVERHEAD);
                frames.push(frame.as_str().to_owned());
            }
        }
        frames
    }
}

#[cfg(test)]
impl Peer {
    /// A peer without a socket and its queue's receiving end, so routing rules get fast,
    /// deterministic unit tests: nothing is written until the test reads it. Queue bounds are
    /// the defaults of an authenticated socket (64 MiB).
    pub(crate) fn detached() -> (Peer, DetachedRx) {
        let (tx, rx) = queue();
        let peer = Peer(Arc::new(PeerInner {
            id: NEXT_PEER_ID.fetch_add(1, Ordering::Relaxed),
            tx,
            queued_bytes: AtomicUsize::new(0),
            max_queue_bytes: AtomicUsize::new(64 << 20),
            authenticated_queue_bytes: 64 << 20,
            total_queued: Arc::new(AtomicUsize::new(0)),
            max_total_queue_bytes: usize::MAX,
            send_timeout: Duration::from_secs(30),
            conn: ConnHandle::detached(),
            closing: CancellationToken::new(),
            close_frame: Mutex::new(None),
            metrics: Arc::new(Metrics::default()),
        }));
        (peer.clone(), DetachedRx { peer, rx })
    }
}

/// What travels through a peer's queue.
enum Outgoing {
    Frame(Utf8Bytes),
    /// Everything before this has been written: send the close frame now.
    Close,
}

/// A peer's send queue: many senders (the [`Peer`] handle's clones, one `QueueTx`), one
/// receiver (the writer). A `VecDeque` behind a mutex rather than tokio's unbounded channel,
/// because that channel allocates a block of 32 slots (32 × 32 bytes of [`Outgoing`]) when it
/// is created, so every idle socket held 1 KiB of queue it never used; an empty `VecDeque`
/// holds nothing, and one that held a burst gives its memory back once drained.
struct Queue {
    state: Mutex<QueueState>,
    /// Wakes the receiver; `notify_one` keeps a permit when it is not waiting yet.
    ready: tokio::sync::Notify,
}

struct QueueState {
    items: std::collections::VecDeque<Outgoing>,
    /// The receiver closed it, or the sender is gone: sends fail, and the receiver sees the
    /// end once it has taken what is left.
    closed: bool,
}

/// Capacity an emptied queue may keep (a peer answering one request at a time reuses it).
const QUEUE_KEPT_CAPACITY: usize = 8;

fn queue() -> (QueueTx, QueueRx) {
    let queue = Arc::new(Queue {
        state: Mutex::new(QueueState {
            items: std::collections::VecDeque::new(),
            closed: false,
        }),
        ready: tokio::sync::Notify::new(),
    });
    (QueueTx(Arc::clone(&queue)), QueueRx(queue))
}

struct QueueTx(Arc<Queue>);

impl QueueTx {
    /// Appends `item`, or hands it back when the queue is closed.
    fn send(&self, item: Outgoing) -> Result<(), Outgoing> {
        {
            let mut state = self.0.state.lock().unwrap();
            if state.closed {
                return Err(item);
            }
            state.items.push_back(item);
        }
        self.0.ready.notify_one();
        Ok(())
    }
}

impl Drop for QueueTx {
    fn drop(&mut self) {
        self.0.state.lock().unwrap().closed = true;
        self.0.ready.notify_one();
    }
}

struct QueueRx(Arc<Queue>);

impl QueueRx {
    /// The next item, or `None` once the queue is closed and empty. Cancel-safe: an item is
    /// taken only by the call that returns it.
    async fn recv(&mut self) -> Option<Outgoing> {
        loop {
            match self.try_take() {
                Ok(item) => return Some(item),
                Err(true) => return None,
                Err(false) => self.0.ready.notified().await,
            }
        }
    }

    /// The next item without waiting (`Err` when there is none right now).
    fn try_recv(&mut self) -> Result<Outgoing, ()> {
        self.try_take().map_err(|_| ())
    }

    /// An item, else whether the queue has ended.
    fn try_take(&mut self) -> Result<Outgoing, bool> {
        let mut state = self.0.state.lock().unwrap();
        match state.items.pop_front() {
            Some(item) => {
                if state.items.is_empty() && state.items.capacity() > QUEUE_KEPT_CAPACITY {
                    state.items = std::collections::VecDeque::new();
                }
                Ok(item)
            }
            None => Err(state.closed),
        }
    }

    /// Refuses further sends; what is queued can still be taken.
    fn close(&mut self) {
        self.0.state.lock().unwrap().closed = true;
    }
}

impl Drop for QueueRx {
    /// A writer that is gone takes nothing more: senders fail and undo their own count.
    fn drop(&mut self) {
        self.close();
    }
}

/// Liveness as seen by the reader: updated on every frame received, checked by the writer at
/// each ping.
#[derive(Clone)]
pub struct LastSeen(Arc<AtomicU64>, Instant);

impl LastSeen {
    pub fn new() -> Self {
        LastSeen(Arc::new(AtomicU64::new(0)), Instant::now())
    }

    pub fn touch(&self) {
        self.0
            .store(self.1.elapsed().as_millis() as u64, Ordering::Relaxed);
    }

    fn idle(&self) -> Duration {
        let last = Duration::from_millis(self.0.load(Ordering::Relaxed));
        self.1.elapsed().saturating_sub(last)
    }
}

impl Default for LastSeen {
    fn default() -> Self {
        Self::new()
    }
}

/// A new peer's shared part, before anything writes its queue.
fn new_inner(tx: QueueTx, conn: ConnHandle, config: &SocketConfig, metrics: Arc<Metrics>) -> Peer {
    Peer(Arc::new(PeerInner {
        id: NEXT_PEER_ID.fetch_add(1, Ordering::Relaxed),
        tx,
        queued_bytes: AtomicUsize::new(0),
        max_queue_bytes: AtomicUsize::new(
            config
                .max_unauthenticated_queue_bytes
                .min(config.max_queue_bytes),
        ),
        authenticated_queue_bytes: config.max_queue_bytes,
        total_queued: Arc::clone(&config.total_queued),
        max_total_queue_bytes: config.max_total_queue_bytes,
        send_timeout: config.send_timeout,
        conn,
        closing: CancellationToken::new(),
        close_frame: Mutex::new(None),
        metrics,
    }))
}

/// Frames a channel holds between an in-memory peer and its client. A client that takes
/// nothing for `--send-timeout` with this many waiting is not reading, as for a socket.
const IN_MEMORY_FRAMES: usize = 64;

/// The client's ends of an in-memory peer: what it sends to the relay, and what the relay
/// writes to it (closed when the peer closes).
pub struct InMemoryEnds {
    pub to_relay: mpsc::Sender<String>,
    pub from_relay: mpsc::Receiver<String>,
}

/// Opens a peer without a socket, for a session that lives inside the relay process (the
/// Streamable HTTP endpoint's sessions): the writer moves frames into a bounded channel
/// instead of a socket, and the reader takes frames from one. Everything above the carrier
/// is the socket's: the byte-bounded queue and its relay-wide total, the send timeout, the
/// size limit on incoming frames, shutdown.
pub fn open_in_memory(
    config: &SocketConfig,
    metrics: Arc<Metrics>,
    tracker: &tokio_util::task::TaskTracker,
    shutdown: CancellationToken,
    max_message_bytes: usize,
) -> (Peer, PeerReader, InMemoryEnds) {
    let (tx, rx) = queue();
    let peer = new_inner(tx, ConnHandle::detached(), config, metrics);
    let (out_tx, out_rx) = mpsc::channel(IN_MEMORY_FRAMES);
    let (in_tx, in_rx) = mpsc::channel(IN_MEMORY_FRAMES);
    tracker.spawn(write_channel(out_tx, rx, peer.clone()));
    let reader = PeerReader {
        stream: Source::Channel(in_rx),
        peer: peer.clone(),
        shutdown,
        last_seen: LastSeen::new(),
        max_message_bytes,
    };
    let ends = InMemoryEnds {
        to_relay: in_tx,
        from_relay: out_rx,
    };
    (peer, reader, ends)
}

/// An in-memory peer's writer: the socket writer's loop, with a channel for the socket.
async fn write_channel(out: mpsc::Sender<String>, mut rx: QueueRx, peer: Peer) {
    let mut in_flight = 0;
    loop {
        let frame = tokio::select! {
            biased;
            _ = peer.closed() => break,
            frame = rx.recv() => match frame {
                Some(Outgoing::Frame(frame)) => frame,
                Some(Outgoing::Close) | None => break,
            },
        };
        in_flight = frame.len() + FRAME_OVERHEAD;
        let sent = tokio::select! {
            biased;
            _ = peer.closed() => break,
            sent = tokio::time::timeout(peer.0.send_timeout, out.send(frame.as_str().to_owned())) => sent,
        };
        match sent {
            Ok(Ok(())) => peer.unqueue(std::mem::take(&mut in_flight)),
            Ok(Err(_)) => {
                peer.close(close_code::GOING_AWAY, "the session's client went away");
                break;
            }
            Err(_) => {
                peer.close_as_not_reading();
                break;
            }
        }
    }
    release_queued(&peer, &mut rx, in_flight);
    // Dropping `out` ends the client's stream: its "close frame".
}

/// A writer has stopped: marks the peer closed and takes whatever is still queued, plus the
/// frame it was writing (`in_flight`), off the counts; senders that come later fail and undo
/// their own count.
fn release_queued(peer: &Peer, rx: &mut QueueRx, mut in_flight: usize) {
    peer.close(close_code::NORMAL, "");
    rx.close();
    while let Ok(outgoing) = rx.try_recv() {
        if let Outgoing::Frame(frame) = outgoing {
            in_flight += frame.len() + FRAME_OVERHEAD;
        }
    }
    peer.unqueue(in_flight);
}

/// Creates the peer handle and spawns its writer task on `tracker`.
pub fn spawn(
    sink: SplitSink<WebSocket, Message>,
    conn: ConnHandle,
    config: &SocketConfig,
    last_seen: LastSeen,
    metrics: Arc<Metrics>,
    tracker: &tokio_util::task::TaskTracker,
) -> Peer {
    let (tx, rx) = queue();
    let peer = new_inner(tx, conn, config, metrics);
    tracker.spawn(write_loop(
        sink,
        rx,
        peer.clone(),
        config.clone(),
        last_seen,
    ));
    peer
}

async fn write_loop(
    mut sink: SplitSink<WebSocket, Message>,
    mut rx: QueueRx,
    peer: Peer,
    config: SocketConfig,
    last_seen: LastSeen,
) {
    let mut ping = tokio::time::interval_at(
        tokio::time::Instant::now() + config.ping_interval,
        config.ping_interval,
    );
    ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // The cost of the frame being written, until it is written.
    let mut in_flight = 0;
    loop {
        let message = tokio::select! {
            biased;
            _ = peer.closed() => break,
            frame = rx.recv() => match frame {
                Some(Outgoing::Frame(frame)) => Message::Text(frame),
                Some(Outgoing::Close) | None => break,
            },
            _ = ping.tick() => {
                if last_seen.idle() > config.ping_interval * 2 {
                    tracing::info!(peer = peer.id(), "peer silent for two ping intervals, dropping it");
                    peer.close(close_code::GOING_AWAY, "no pong received within two ping intervals");
                    break;
                }
                Message::Ping(Default::default())
            }
        };
        in_flight = match &message {
            Message::Text(text) => text.len() + FRAME_OVERHEAD,
            _ => 0,
        };
        let sent = tokio::select! {
            biased;
            _ = peer.closed() => break,
            sent = tokio::time::timeout(config.send_timeout, sink.send(message)) => sent,
        };
        match sent {
            Ok(Ok(())) => {
                peer.unqueue(std::mem::take(&mut in_flight));
            }
            Ok(Err(_)) => {
                peer.close(close_code::GOING_AWAY, "socket write failed");
                break;
            }
            Err(_) => {
                peer.close_as_not_reading();
                break;
            }
        }
    }
    // Make sure the reader side stops too, then say goodbye with the recorded reason.
    release_queued(&peer, &mut rx, in_flight);
    let (code, reason) = peer
        .close_reason()
        .unwrap_or((close_code::NORMAL, String::new()));
    // A close the peer began was answered by the socket itself (tungstenite replies to it at
    // once); a second Close frame would only be refused as a send after closing.
    if reason != CLOSED_BY_PEER {
        let frame = CloseFrame {
            code,
            reason: crate::text::truncate_utf8(&reason, MAX_CLOSE_REASON_BYTES).into(),
        };
        let _ = tokio::time::timeout(
            Duration::from_secs(1),
            sink.send(Message::Close(Some(frame))),
        )
        .await;
    }
    let _ = tokio::time::timeout(Duration::from_secs(1), sink.close()).await;
}

/// Close reasons are limited to 123 bytes by RFC 6455.
const MAX_CLOSE_REASON_BYTES: usize = 123;

/// The reason recorded when the other side closed the socket (its Close frame, or its end).
const CLOSED_BY_PEER: &str = "closed by the peer";

/// Opens both sides of an upgraded socket: the [`Peer`] that writes to it (its writer task
/// spawned on `tracker`) and the [`PeerReader`] the session reads it with. They share the
/// liveness clock, so frames the reader sees keep the writer's keepalive from dropping the peer.
pub fn open(
    socket: WebSocket,
    conn: ConnHandle,
    config: &SocketConfig,
    metrics: Arc<Metrics>,
    tracker: &tokio_util::task::TaskTracker,
    shutdown: CancellationToken,
    max_message_bytes: usize,
) -> (Peer, PeerReader) {
    use futures_util::StreamExt;
    let (sink, stream) = socket.split();
    let last_seen = LastSeen::new();
    let peer = spawn(sink, conn, config, last_seen.clone(), metrics, tracker);
    let reader = PeerReader {
        stream: Source::Socket(stream),
        peer: peer.clone(),
        shutdown,
        last_seen,
        max_message_bytes,
    };
    (peer, reader)
}

impl Peer {
    /// Tells the peer the relay is going away, then closes with 1001 once the notice is
    /// written. Both roles get the same goodbye (docs/PROTOCOL.md, shutdown).
    pub fn say_goodbye(&self) {
        self.send(crate::protocol::shutdown());
        self.close_after_flush(close_code::GOING_AWAY, "relay shutting down");
    }
}

/// What the reading side of a session sees next.
pub enum Inbound {
    /// A text frame (binary frames holding UTF-8 are accepted as text).
    Text(Utf8Bytes),
    /// A binary frame that is not UTF-8: answered with a parse error.
    NotText,
    /// The relay is shutting down.
    Shutdown,
    /// The socket is gone (closed by either side, failed, or too large a frame).
    Closed,
}

/// The reading side of one socket: the one read loop every session and the extension's
/// `authenticate` phase share, so keepalive, stalled writers, size limits and shutdown are
/// handled alike for both roles.
pub struct PeerReader {
    stream: Source,
    /// The same socket's writing side: closed with the reason when reading fails, and asked
    /// whether the socket is already closing.
    peer: Peer,
    /// The relay's shutdown signal; reading stops with [`Inbound::Shutdown`] when it fires.
    shutdown: CancellationToken,
    /// Touched on every frame, so the writer's keepalive knows the peer is alive.
    last_seen: LastSeen,
    /// `--max-message-bytes`, for the close reason of a frame beyond it.
    max_message_bytes: usize,
}

/// Where a reader's frames come from.
enum Source {
    Socket(SplitStream<WebSocket>),
    /// An in-memory session's client (see [`open_in_memory`]).
    Channel(mpsc::Receiver<String>),
}

impl PeerReader {
    /// [`Self::next_text`] for an in-memory session: frames beyond `--max-message-bytes` end
    /// it as they would a socket; a client that drops its sender has closed it.
    async fn next_from_channel(&mut self) -> Inbound {
        let Source::Channel(rx) = &mut self.stream else {
            unreachable!("called for channel sources only");
        };
        let text = tokio::select! {
            biased;
            _ = self.peer.closed() => return Inbound::Closed,
            _ = self.shutdown.cancelled() => return Inbound::Shutdown,
            text = rx.recv() => text,
        };
        match text {
            Some(text) if text.len() > self.max_message_bytes => {
                self.peer.close(
                    close_code::TOO_BIG,
                    format!(
                        "message too large: the limit is {} bytes",
                        self.max_message_bytes
                    ),
                );
                Inbound::Closed
            }
            Some(text) => Inbound::Text(text.into()),
            None => {
                self.peer.close(close_code::NORMAL, CLOSED_BY_PEER);
                Inbound::Closed
            }
        }
    }

    /// Reads the next meaningful frame, handling pings, liveness and oversized frames on the
    /// way. Cancel-safe: a `select!` may drop it between frames.
    pub async fn next_text(&mut self) -> Inbound {
        use futures_util::StreamExt;
        if matches!(self.stream, Source::Channel(_)) {
            return self.next_from_channel().await;
        }
        let peer = &self.peer;
        loop {
            let Source::Socket(stream) = &mut self.stream else {
                unreachable!("channel sources are read above");
            };
            let message = tokio::select! {
                biased;
                _ = peer.closed() => return Inbound::Closed,
                _ = self.shutdown.cancelled() => return Inbound::Shutdown,
                message = stream.next() => message,
            };
            self.last_seen.touch();
            // A peer whose socket has accepted nothing for --send-timeout is not reading,
            // whatever it sends (pongs to its pings pile up in the write buffer, not in the
            // queue).
            if let Some(stalled) = peer.0.conn.write_stalled_for() {
                if stalled > peer.0.send_timeout {
                    tracing::info!(
                        peer = peer.id(),
                        ?stalled,
                        "peer not reading, disconnecting it"
                    );
                    peer.close_as_not_reading();
                    return Inbound::Closed;
                }
            }
            match message {
                Some(Ok(Message::Text(text))) => return Inbound::Text(text),
                Some(Ok(Message::Binary(bytes))) => {
                    return match Utf8Bytes::try_from(bytes) {
                        Ok(text) => Inbound::Text(text),
                        Err(_) => Inbound::NotText,
                    }
                }
                Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
                Some(Ok(Message::Close(_))) | None => {
                    peer.close(close_code::NORMAL, CLOSED_BY_PEER);
                    return Inbound::Closed;
                }
                Some(Err(error)) => {
                    let text = error.to_string();
                    if text.contains("too long") || text.contains("Space limit") {
                        peer.close(
                            close_code::TOO_BIG,
                            format!(
                                "message too large: the limit is {} bytes",
                                self.max_message_bytes
                            ),
                        );
                    } else if text.contains(crate::net::transport::BUDGET_EXCEEDED) {
                        peer.close(
                            close_code::POLICY,
                            format!(
                                "{}: authenticate first",
                                crate::net::transport::BUDGET_EXCEEDED
                            ),
                        );
                    } else if text.contains("UTF-8") {
                        peer.close(close_code::INVALID_DATA, "text frame is not valid UTF-8");
                    } else if text.contains("protocol error") {
                        peer.close(close_code::PROTOCOL, text);
                    } else {
                        peer.close(close_code::GOING_AWAY, "connection lost");
                    }
                    return Inbound::Closed;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> SocketConfig {
        SocketConfig {
            ping_interval: Duration::from_secs(10),
            send_timeout: Duration::from_millis(200),
            max_queue_bytes: 1 << 20,
            max_unauthenticated_queue_bytes: 1 << 20,
            total_queued: Arc::new(AtomicUsize::new(0)),
            max_total_queue_bytes: usize::MAX,
        }
    }

    fn open(max_message_bytes: usize) -> (Peer, PeerReader, InMemoryEnds, SocketConfig) {
        let config = config();
        let (peer, reader, ends) = open_in_memory(
            &config,
            Arc::new(Metrics::default()),
            &tokio_util::task::TaskTracker::new(),
            CancellationToken::new(),
            max_message_bytes,
        );
        (peer, reader, ends, config)
    }

    #[tokio::test]
    async fn an_in_memory_peer_carries_frames_both_ways_and_counts_them_off() {
        let (peer, mut reader, mut ends, config) = open(1024);
        ends.to_relay.send("{\"id\":1}".into()).await.unwrap();
        assert!(matches!(reader.next_text().await, Inbound::Text(t) if t.as_str() == "{\"id\":1}"));
        assert!(peer.send("{\"result\":1}"));
        assert_eq!(ends.from_relay.recv().await.unwrap(), "{\"result\":1}");
        // Once written to the channel, the frame no longer counts against the bounds (the
        // writer takes it off just after handing it over: waited for, within a bound).
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while peer.queued_bytes() != 0 || config.total_queued.load(Ordering::Acquire) != 0 {
            assert!(tokio::time::Instant::now() < deadline, "never counted off");
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test]
    async fn an_in_memory_frame_beyond_the_limit_closes_the_peer_as_a_socket_would() {
        let (peer, mut reader, ends, _) = open(16);
        ends.to_relay.send("x".repeat(17)).await.unwrap();
        assert!(matches!(reader.next_text().await, Inbound::Closed));
        assert_eq!(peer.close_reason().unwrap().0, close_code::TOO_BIG);
    }

    /// On a paused clock: the timeout is proved to the millisecond, without waiting for it.
    #[tokio::test(start_paused = true)]
    async fn a_client_that_stops_reading_is_dropped_after_the_send_timeout() {
        let (peer, _reader, mut ends, config) = open(1024);
        // Nothing reads `from_relay`: the channel fills, then the writer waits --send-timeout.
        for _ in 0..(IN_MEMORY_FRAMES + 1) {
            peer.send("{}");
        }
        let started = tokio::time::Instant::now();
        tokio::time::sleep(config.send_timeout - Duration::from_millis(1)).await;
        assert!(peer.is_open(), "not before the send timeout");
        tokio::time::timeout(Duration::from_secs(5), peer.closed())
            .await
            .expect("closed as not reading");
        let took = started.elapsed();
        assert!(
            took >= config.send_timeout && took <= config.send_timeout + Duration::from_millis(2),
            "closed {took:?} after the channel filled, not at the send timeout"
        );
        assert_eq!(peer.close_reason().unwrap().0, close_code::POLICY);
        // Its client sees the session end after what was already delivered.
        let mut delivered = 0;
        while ends.from_relay.recv().await.is_some() {
            delivered += 1;
        }
        assert_eq!(delivered, IN_MEMORY_FRAMES);
    }

    #[tokio::test]
    async fn a_client_dropping_its_sender_closes_the_session() {
        let (_peer, mut reader, ends, _) = open(1024);
        drop(ends.to_relay);
        assert!(matches!(reader.next_text().await, Inbound::Closed));
    }
}
