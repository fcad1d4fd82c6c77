//! The byte stream under every socket: TCP_NODELAY, a read buffer that exists only while data
//! is flowing, and the bookkeeping that keeps anonymous connections bounded.
//!
//! tungstenite allocates its whole read buffer for every socket up front and never reads more
//! than that per call, so one buffer size has to serve two opposite needs: ten thousand idle
//! sockets want it tiny, a 5 MiB screenshot wants it large (a 2 KiB buffer means 2,600 system
//! calls per screenshot). [`BufferedIo`] sits under the WebSocket: a small read is served from a
//! 64 KiB chunk filled by one system call, and that chunk is freed as soon as the socket has
//! nothing more to read, so an idle socket holds no buffer here at all. (The chunk itself is
//! `mcp_relay_wire::io::ChunkedIo`, so the bench's baseline forwarder reads exactly alike.)
//!
//! tungstenite also keeps its read buffer at the size of the largest frame a socket ever
//! received. So the outermost stream of every connection is [`Refragment`]
//! (`super::refragment`, put there by [`Refragmenting`], above TLS when the relay serves it):
//! once the connection is a WebSocket it cuts incoming frames over 64 KiB into fragments, and
//! the codec's buffer never needs more than one. It learns where the frames begin from the
//! connection's state here ([`ConnHandle::upgrading`], and the request heads counted by
//! [`WithConn`]).
//!
//! ## Anonymous connections ([`Registry`], [`ConnHandle`])
//!
//! Every accepted TCP connection goes through three stages: *pending* (plain HTTP, before any
//! upgrade), *unauthenticated* (a WebSocket that has not authenticated yet) and
//! *authenticated*. The first two are anonymous, so each is a capped pool: when a pool is
//! full, its **oldest** member is closed to admit the new connection. Refusing the newcomer
//! instead would let whoever holds the pool lock everyone out; evicting the oldest means an
//! attacker holding idle connections only ever loses them to real clients, which complete
//! their handshake within a round trip. Eviction is `shutdown(2)` on the socket, so the task
//! serving it sees end-of-stream and cleans up on its own: nothing is added to the data path.
//!
//! The byte stream enforces what no layer above can after the upgrade (axum gives no access
//! to tungstenite's configuration once the socket is open): an unauthenticated WebSocket may
//! read at most `--max-unauthenticated-bytes` in total, so an unfinished fragmented message or
//! a ping flood holds at most that much before authentication. The write side records since
//! when the socket has accepted nothing, so a peer that does not read is noticed whatever it
//! sends (see `peer::PeerReader::next_text`). Once a socket is authenticated, the only cost
//! left here on the data path is one branch per read and one relaxed atomic load per write
//! (the re-framer above adds a walk over the frame headers each read brought).

use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures_util::future::{MapOk, TryFutureExt};
use mcp_relay_wire::io::ChunkedIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use super::refragment::{Refragment, Signals};

/// The text of the read error an unauthenticated socket gets once it exceeds its budget;
/// `peer::PeerReader::next_text` turns it into a 1008 close with a clear reason.
pub const BUDGET_EXCEEDED: &str = "too many bytes before authenticating";

// Connection stages.
const PENDING: u8 = 0;
const UNAUTHENTICATED: u8 = 1;
const AUTHENTICATED: u8 = 2;
const EVICTED: u8 = 3;
const CLOSED: u8 = 4;

/// Milliseconds since the first call; a cheap clock for atomics.
fn now_ms() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    EPOCH.get_or_init(Instant::now).elapsed().as_millis() as u64
}

/// The bounds [`Registry`] enforces (see `ServeConfig` for their meaning).
#[derive(Debug, Clone)]
pub struct ConnLimits {
    pub max_pending: usize,
    pub max_unauthenticated: usize,
    pub unauthenticated_bytes: usize,
    pub header_timeout: Duration,
    /// Connections allowed open at once before the file-descriptor reserve is touched.
    pub fd_budget: usize,
    /// `--max-message-bytes`: larger frames are not cut into fragments (see
    /// [`super::refragment`]), tungstenite refuses them at their header.
    pub max_message_bytes: usize,
}

/// Every open TCP connection of one listener, and the two anonymous pools.
pub struct Registry {
    limits: ConnLimits,
    pending: Pool,
    unauthenticated: Pool,
    /// Accepted connections not yet dropped (each holds a file descriptor).
    open: AtomicUsize,
    /// Connections closed to make room (pool full, header deadline, file descriptors).
    pub evicted: AtomicU64,
    /// New connections closed at once because file descriptors ran short.
    pub shed: AtomicU64,
}

impl Registry {
    pub fn new(limits: ConnLimits) -> Arc<Registry> {
        Arc::new(Registry {
            pending: Pool::new(PENDING, limits.max_pending),
            unauthenticated: Pool::new(UNAUTHENTICATED, limits.max_unauthenticated),
            limits,
            open: AtomicUsize::new(0),
            evicted: AtomicU64::new(0),
            shed: AtomicU64::new(0),
        })
    }

    /// Open connections: (all, pending, unauthenticated).
    pub fn counts(&self) -> (usize, usize, usize) {
        (
            self.open.load(Ordering::Relaxed),
            self.pending.count.load(Ordering::Relaxed),
            self.unauthenticated.count.load(Ordering::Relaxed),
        )
    }

    fn pool(&self, stage: u8) -> Option<&Pool> {
        match stage {
            PENDING => Some(&self.pending),
            UNAUTHENTICATED => Some(&self.unauthenticated),
            _ => None,
        }
    }

    /// Closes pending connections that have not delivered a request head within
    /// `--header-timeout`. Connections that did send a request (HTTP keep-alive) are left to
    /// hyper's own header timeout and only move to the back of the queue. Called a few times
    /// per timeout period by one task for all connections.
    pub fn sweep_pending(&self) {
        let now = now_ms();
        let timeout = self.limits.header_timeout.as_millis() as u64;
        let mut queue = self.pending.queue.lock().unwrap();
        while let Some(front) = queue.front() {
            let Some(conn) = front.upgrade().filter(|c| c.stage() == PENDING) else {
                queue.pop_front();
                continue;
            };
            if conn.since.load(Ordering::Relaxed) + timeout > now {
                break;
            }
            let entry = queue.pop_front().expect("front exists");
            if conn.requested.load(Ordering::Relaxed) {
                conn.since.store(now, Ordering::Relaxed);
                queue.push_back(entry);
            } else {
                conn.evict(PENDING);
            }
        }
    }
}

/// A capped set of connections in one stage, oldest first. Members leave lazily: a
/// connection that moved on (or closed) stays in the queue until it reaches the front or the
/// queue is compacted, so joining and leaving are O(1) and take no lock on the way out.
struct Pool {
    stage: u8,
    cap: usize,
    count: AtomicUsize,
    queue: Mutex<VecDeque<Weak<Conn>>>,
}

impl Pool {
    fn new(stage: u8, cap: usize) -> Pool {
        Pool {
            stage,
            cap: cap.max(1),
            count: AtomicUsize::new(0),
            queue: Mutex::new(VecDeque::new()),
        }
    }

    /// Adds a connection (already in this stage); evicts the oldest member when over the cap.
    fn join(&self, conn: &Arc<Conn>) {
        conn.since.store(now_ms(), Ordering::Relaxed);
        let count = self.count.fetch_add(1, Ordering::AcqRel) + 1;
        let mut queue = self.queue.lock().unwrap();
        queue.push_back(Arc::downgrade(conn));
        if queue.len() > 2 * count + 64 {
            let stage = self.stage;
            queue.retain(|w| w.upgrade().is_some_and(|c| c.stage() == stage));
        }
        if count > self.cap {
            Self::evict_front(&mut queue, self.stage);
        }
    }

    /// Closes the oldest member; `false` when there is none.
    fn evict_oldest(&self) -> bool {
        Self::evict_front(&mut self.queue.lock().unwrap(), self.stage)
    }

    fn evict_front(queue: &mut VecDeque<Weak<Conn>>, stage: u8) -> bool {
        while let Some(entry) = queue.pop_front() {
            if entry.upgrade().is_some_and(|conn| conn.evict(stage)) {
                return true;
            }
        }
        false
    }
}

/// The shared state of one accepted TCP connection.
struct Conn {
    registry: Arc<Registry>,
    stage: AtomicU8,
    /// When it entered its current pool (ms, `now_ms`).
    since: AtomicU64,
    /// Whether an HTTP request head has arrived.
    requested: AtomicBool,
    /// Request heads parsed and the upgrade, for [`Refragment`] (which learns from them where
    /// its frames begin).
    signals: Arc<Signals>,
    /// `now_ms() + 1` when a write last found the socket full, 0 while writes go through.
    write_blocked_since: AtomicU64,
    /// The socket, until it is closed; eviction shuts it down under this lock so a reused
    /// descriptor number is never touched.
    fd: Mutex<Option<RawFd>>,
    /// What an authenticated HTTP connection holds while it is open (its `--max-connections`
    /// slot and its place in its user's count), released when the socket closes.
    hold: Mutex<Option<Box<dyn Send>>>,
    /// The address the connection came from (the TCP peer: a proxy's, behind one).
    peer_ip: OnceLock<std::net::IpAddr>,
}

impl Conn {
    /// A new pending connection, counted as open (not yet in the pending pool).
    fn open(registry: &Arc<Registry>, fd: Option<RawFd>) -> Arc<Conn> {
        registry.open.fetch_add(1, Ordering::AcqRel);
        Arc::new(Conn {
            registry: Arc::clone(registry),
            stage: AtomicU8::new(PENDING),
            since: AtomicU64::new(0),
            requested: AtomicBool::new(false),
            signals: Arc::default(),
            write_blocked_since: AtomicU64::new(0),
            fd: Mutex::new(fd),
            hold: Mutex::new(None),
            peer_ip: OnceLock::new(),
        })
    }

    fn stage(&self) -> u8 {
        self.stage.load(Ordering::Acquire)
    }

    /// Moves from `from` to `to`; the pool of `from` loses a member. `false` if the
    /// connection was not in `from` (already moved on, evicted or closed).
    fn leave(&self, from: u8, to: u8) -> bool {
        let moved = self
            .stage
            .compare_exchange(from, to, Ordering::AcqRel, Ordering::Acquire)
            .is_ok();
        if moved {
            if let Some(pool) = self.registry.pool(from) {
                pool.count.fetch_sub(1, Ordering::AcqRel);
            }
        }
        moved
    }

    /// Closes the connection if it is still in stage `from`.
    fn evict(&self, from: u8) -> bool {
        if !self.leave(from, EVICTED) {
            return false;
        }
        if let Some(fd) = *self.fd.lock().unwrap() {
            // SAFETY: `fd` is open: it is cleared under this lock before the socket is
            // dropped. shutdown(2) only ends the connection; the owner still closes the fd.
            unsafe { libc::shutdown(fd, libc::SHUT_RDWR) };
        }
        self.registry.evicted.fetch_add(1, Ordering::Relaxed);
        true
    }

    fn closed(&self) {
        *self.fd.lock().unwrap() = None;
        drop(self.hold.lock().unwrap().take());
        let stage = self.stage.swap(CLOSED, Ordering::AcqRel);
        if let Some(pool) = self.registry.pool(stage) {
            pool.count.fetch_sub(1, Ordering::AcqRel);
        }
        self.registry.open.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A connection as the HTTP handlers and sessions see it (a request extension on every
/// request of the connection).
#[derive(Clone)]
pub struct ConnHandle(Arc<Conn>);

impl std::fmt::Debug for ConnHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ConnHandle(stage {})", self.0.stage())
    }
}

impl ConnHandle {
    /// The connection is becoming a WebSocket: it leaves the pending pool and joins the
    /// unauthenticated one (evicting the oldest member if that is full), from now on its
    /// reads count against `--max-unauthenticated-bytes`, and its large frames are cut into
    /// fragments. Called only once the answer is certain to be 101.
    pub fn upgrading(&self) {
        self.0.signals.upgrading();
        if self.0.leave(PENDING, UNAUTHENTICATED) {
            self.0.registry.unauthenticated.join(&self.0);
        }
    }

    /// hyper has parsed a request head on this connection (it calls the connection's service
    /// at once, before it reads again).
    pub(crate) fn request_arrived(&self) {
        self.0.requested.store(true, Ordering::Relaxed);
        self.0.signals.request_arrived();
    }

    /// [`Refragment`] over `stream`, told of this connection's request heads and upgrade;
    /// frames over the listener's `--max-message-bytes` pass whole.
    fn refragmented<T>(&self, stream: T) -> Refragment<T> {
        let max_frame = self.0.registry.limits.max_message_bytes as u64;
        Refragment::watching(stream, Arc::clone(&self.0.signals), max_frame)
    }

    /// A plain HTTP request on this connection presented a valid token (the Streamable HTTP
    /// MCP endpoint): it leaves the pending pool, so a long-lived event stream is not evicted
    /// as an idle anonymous connection.
    pub fn authenticated_http(&self) {
        self.0.leave(PENDING, AUTHENTICATED);
    }

    /// The TCP peer's address, when the listener knew it.
    pub fn peer_ip(&self) -> Option<std::net::IpAddr> {
        self.0.peer_ip.get().copied()
    }

    /// Whether [`ConnHandle::hold_while_open`] already gave this connection something to hold.
    pub fn holds(&self) -> bool {
        self.0.hold.lock().unwrap().is_some()
    }

    /// Keeps `hold` (a slot, a place in a count) until the connection closes. A connection
    /// holds one thing; a later call replaces nothing and drops `hold` at once.
    pub fn hold_while_open(&self, hold: Box<dyn Send>) {
        let mut held = self.0.hold.lock().unwrap();
        if held.is_none() && self.0.stage() != CLOSED {
            *held = Some(hold);
        }
    }

    /// The socket has authenticated: it leaves the unauthenticated pool and its reads are no
    /// longer counted. Sessions reach this through `Peer::authenticated`.
    pub fn authenticated(&self) {
        self.0.leave(UNAUTHENTICATED, AUTHENTICATED);
    }

    /// A handle for a socket no listener accepted, already authenticated: the hub's unit tests
    /// build peers on plain loopback sockets, and in-memory sessions (the Streamable HTTP
    /// endpoint's) have no connection of their own.
    pub(crate) fn detached() -> ConnHandle {
        let registry = Registry::new(ConnLimits {
            max_pending: usize::MAX,
            max_unauthenticated: usize::MAX,
            unauthenticated_bytes: usize::MAX,
            header_timeout: Duration::from_secs(3600),
            fd_budget: usize::MAX,
            max_message_bytes: usize::MAX,
        });
        let conn = Conn::open(&registry, None);
        conn.stage.store(AUTHENTICATED, Ordering::Release);
        ConnHandle(conn)
    }

    /// How long writes have found the socket full (the peer is not reading), if they do.
    pub fn write_stalled_for(&self) -> Option<Duration> {
        match self.0.write_blocked_since.load(Ordering::Relaxed) {
            0 => None,
            since => Some(Duration::from_millis(now_ms().saturating_sub(since - 1))),
        }
    }
}

/// The relay's byte stream: [`ChunkedIo`]'s transient read buffer (shared with the bench's
/// baseline forwarder, see `mcp_relay_wire::io`), plus the connection's read budget before
/// authentication and its write-stall clock.
pub struct BufferedIo<S> {
    io: ChunkedIo<S>,
    conn: Option<Arc<Conn>>,
    /// Bytes this socket may still read before it authenticates.
    budget: usize,
    /// Authenticated (or not tracked): reads are no longer counted.
    unlimited: bool,
}

impl<S> BufferedIo<S> {
    fn tracked(inner: S, conn: Arc<Conn>) -> Self {
        BufferedIo {
            io: ChunkedIo::new(inner),
            budget: conn.registry.limits.unauthenticated_bytes,
            conn: Some(conn),
            unlimited: false,
        }
    }
    /// Charges `n` bytes read against the budget while the socket is an unauthenticated
    /// WebSocket; `false` once the budget is exceeded.
    fn charge(&mut self, n: usize) -> bool {
        let Some(conn) = &self.conn else {
            return true;
        };
        match conn.stage() {
            PENDING => true, // HTTP headers: bounded by hyper's buffer limit
            UNAUTHENTICATED | EVICTED => match self.budget.checked_sub(n) {
                Some(left) => {
                    self.budget = left;
                    true
                }
                None => {
                    self.budget = 0;
                    false
                }
            },
            _ => {
                self.unlimited = true;
                true
            }
        }
    }

    fn note_write<T>(&self, result: &Poll<io::Result<T>>, wrote: impl Fn(&T) -> bool) {
        let Some(conn) = &self.conn else { return };
        let blocked = &conn.write_blocked_since;
        match result {
            Poll::Pending => {
                if blocked.load(Ordering::Relaxed) == 0 {
                    blocked.store(now_ms() + 1, Ordering::Relaxed);
                }
            }
            Poll::Ready(Ok(n)) if wrote(n) => {
                if blocked.load(Ordering::Relaxed) != 0 {
                    blocked.store(0, Ordering::Relaxed);
                }
            }
            Poll::Ready(_) => {}
        }
    }
}

impl<S> Drop for BufferedIo<S> {
    fn drop(&mut self) {
        if let Some(conn) = &self.conn {
            conn.closed();
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for BufferedIo<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        dst: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.unlimited {
            return Pin::new(&mut this.io).poll_read(cx, dst);
        }
        let before = dst.filled().len();
        let result = Pin::new(&mut this.io).poll_read(cx, dst);
        if matches!(result, Poll::Ready(Ok(()))) && !this.charge(dst.filled().len() - before) {
            return Poll::Ready(Err(io::Error::other(BUDGET_EXCEEDED)));
        }
        result
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for BufferedIo<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let result = Pin::new(&mut this.io).poll_write(cx, buf);
        this.note_write(&result, |n| *n > 0);
        result
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let result = Pin::new(&mut this.io).poll_write_vectored(cx, bufs);
        this.note_write(&result, |n| *n > 0);
        result
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

/// The relay's acceptor: TCP_NODELAY (JSON-RPC frames are small and latency-bound; Nagle's
/// algorithm would hold them back waiting for ACKs), [`BufferedIo`], and admission into the
/// [`Registry`]: the new connection joins the pending pool, and when open connections reach
/// the file-descriptor budget the oldest anonymous connection is closed first (or, with none
/// to close, the new one), so `accept` never fails for lack of descriptors and /healthz and
/// authenticated clients keep being served.
#[derive(Clone)]
pub struct Acceptor {
    registry: Arc<Registry>,
}

impl Acceptor {
    pub fn new(registry: Arc<Registry>) -> Self {
        Acceptor { registry }
    }
}

impl<S> axum_server::accept::Accept<TcpStream, S> for Acceptor {
    type Stream = BufferedIo<TcpStream>;
    type Service = WithConn<S>;
    type Future = std::future::Ready<io::Result<(Self::Stream, Self::Service)>>;

    fn accept(&self, stream: TcpStream, service: S) -> Self::Future {
        let registry = &self.registry;
        if let Err(error) = stream.set_nodelay(true) {
            return std::future::ready(Err(error));
        }
        let conn = Conn::open(registry, Some(stream.as_raw_fd()));
        if let Ok(peer) = stream.peer_addr() {
            let _ = conn.peer_ip.set(peer.ip());
        }
        let io = BufferedIo::tracked(stream, Arc::clone(&conn));
        if registry.open.load(Ordering::Acquire) > registry.limits.fd_budget
            && !registry.pending.evict_oldest()
            && !registry.unauthenticated.evict_oldest()
        {
            registry.shed.fetch_add(1, Ordering::Relaxed);
            // Never joined a pool; dropping `io` closes the socket and undoes the open count.
            conn.stage.store(EVICTED, Ordering::Release);
            return std::future::ready(Err(io::Error::other("file-descriptor reserve reached")));
        }
        // Counted in the pending pool from here on (the stage is already PENDING).
        registry.pending.join(&conn);
        std::future::ready(Ok((
            io,
            WithConn {
                inner: service,
                conn: ConnHandle(conn),
            },
        )))
    }
}

/// The service of one connection: puts its [`ConnHandle`] into every request's extensions
/// and notes that a request head has arrived (which ends the pending header deadline, and
/// tells [`Refragment`] that the head ended where its last read did).
#[derive(Clone)]
pub struct WithConn<S> {
    inner: S,
    conn: ConnHandle,
}

impl<S, B> tower_service::Service<axum::http::Request<B>> for WithConn<S>
where
    S: tower_service::Service<axum::http::Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: axum::http::Request<B>) -> Self::Future {
        self.conn.request_arrived();
        request.extensions_mut().insert(self.conn.clone());
        self.inner.call(request)
    }
}

/// The outermost acceptor: wraps the plaintext stream of every connection (over TLS when the
/// relay serves it, over [`BufferedIo`] otherwise) in [`Refragment`], which watches the
/// connection for its upgrade and then cuts large incoming frames into fragments. It has to
/// sit above TLS to see the frames; the byte budget below it still counts what the peer sent.
#[derive(Clone)]
pub struct Refragmenting<A>(pub A);

/// The stream and service of an accepted connection, the stream wrapped in [`Refragment`].
type Refragmented<T, S> = (Refragment<T>, WithConn<S>);

impl<A, I, S> axum_server::accept::Accept<I, S> for Refragmenting<A>
where
    A: axum_server::accept::Accept<I, S, Service = WithConn<S>>,
{
    type Stream = Refragment<A::Stream>;
    type Service = WithConn<S>;
    type Future = MapOk<A::Future, fn((A::Stream, WithConn<S>)) -> Refragmented<A::Stream, S>>;

    fn accept(&self, stream: I, service: S) -> Self::Future {
        fn wrap<T, S>((stream, service): (T, WithConn<S>)) -> Refragmented<T, S> {
            (service.conn.refragmented(stream), service)
        }
        self.0.accept(stream, service).map_ok(wrap as fn(_) -> _)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    fn registry(max_unauthenticated: usize, unauthenticated_bytes: usize) -> Arc<Registry> {
        Registry::new(ConnLimits {
            max_pending: 100,
            max_unauthenticated,
            unauthenticated_bytes,
            header_timeout: std::time::Duration::from_secs(10),
            fd_budget: usize::MAX,
            max_message_bytes: usize::MAX,
        })
    }

    #[tokio::test]
    async fn unauthenticated_reads_are_capped_until_the_socket_authenticates() {
        let registry = registry(10, 1000);
        for authenticate in [false, true] {
            let (mut client, server) = tokio::io::duplex(1 << 20);
            let conn = Conn::open(&registry, None);
            registry.pending.join(&conn);
            let mut io = BufferedIo::tracked(server, Arc::clone(&conn));
            let handle = ConnHandle(conn);
            // HTTP headers are not counted (hyper bounds them).
            client.write_all(&[1u8; 3000]).await.unwrap();
            let mut buf = vec![0u8; 3000];
            io.read_exact(&mut buf).await.unwrap();
            handle.upgrading();
            if authenticate {
                handle.authenticated();
            }
            client.write_all(&[2u8; 1500]).await.unwrap();
            let mut got = 0;
            let result = loop {
                match io.read(&mut buf[..100]).await {
                    Ok(n) => got += n,
                    Err(error) => break Err(error),
                }
                if got == 1500 {
                    break Ok(());
                }
            };
            if authenticate {
                assert!(result.is_ok());
            } else {
                let error = result.unwrap_err();
                assert!(error.to_string().contains(BUDGET_EXCEEDED), "{error}");
                assert!(got <= 1000, "{got}");
            }
        }
        // Both dropped: nothing is counted any more.
        assert_eq!(registry.counts(), (0, 0, 0));
    }

    /// The read budget sits below the re-framer: it counts the bytes the peer sent, not the
    /// fragment headers written for the codec. A 150,000-byte frame is 150,014 bytes on the
    /// wire and 150,024 once cut in three; a budget of exactly 150,014 lets it all through,
    /// and the next byte is over.
    #[tokio::test]
    async fn the_read_budget_counts_what_the_peer_sent_not_the_fragment_headers() {
        let payload = 150_000usize;
        let mut frame = vec![0x82, 0x80 | 127];
        frame.extend_from_slice(&(payload as u64).to_be_bytes());
        frame.extend_from_slice(&[1, 2, 3, 4]);
        frame.resize(frame.len() + payload, 0x55);
        let registry = registry(10, frame.len());
        let (mut client, server) = tokio::io::duplex(1 << 20);
        let conn = Conn::open(&registry, None);
        registry.pending.join(&conn);
        let handle = ConnHandle(Arc::clone(&conn));
        let mut io = handle.refragmented(BufferedIo::tracked(server, conn));
        let head = b"GET /mcp HTTP/1.1\r\nUpgrade: websocket\r\n\r\n";
        client.write_all(head).await.unwrap();
        let mut buf = vec![0u8; 1024];
        io.read_exact(&mut buf[..head.len()]).await.unwrap();
        handle.request_arrived();
        handle.upgrading();
        client.write_all(&frame).await.unwrap();
        let mut got = 0;
        while got < payload + 3 * 8 {
            got += io.read(&mut buf).await.expect("within the budget");
        }
        assert_eq!(got, payload + 3 * 8, "three fragments with 8-byte headers");
        client.write_all(&[0x89]).await.unwrap();
        let error = io.read(&mut buf).await.unwrap_err();
        assert!(error.to_string().contains(BUDGET_EXCEEDED), "{error}");
    }

    #[test]
    fn a_full_pool_evicts_its_oldest_member() {
        let registry = registry(2, 1000);
        let handles: Vec<_> = (0..3)
            .map(|_| {
                let conn = Conn::open(&registry, None);
                registry.pending.join(&conn);
                ConnHandle(conn)
            })
            .collect();
        assert_eq!(registry.counts(), (3, 3, 0));
        for handle in &handles {
            handle.upgrading();
        }
        assert_eq!(registry.counts(), (3, 0, 2));
        assert_eq!(handles[0].0.stage(), EVICTED);
        assert_eq!(registry.evicted.load(Ordering::Relaxed), 1);
        handles[1].authenticated();
        assert_eq!(registry.counts(), (3, 0, 1));
        for handle in &handles {
            handle.0.closed();
        }
        assert_eq!(registry.counts(), (0, 0, 0));
    }
}
