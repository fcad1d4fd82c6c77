//! Issue 11, "no anonymous socket can exhaust the relay": one test per attack, over loopback
//! with real sockets and hand-built WebSocket frames, each asserting the bound the relay
//! promises (docs/SECURITY.md).
//!
//! Tests that measure memory run the relay binary as a child process and read its
//! `/proc/PID/status`, so tests running in parallel threads cannot disturb the figure.

use crate::common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::child::ChildRelay;
use common::*;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Samples the relay's RSS every 50 ms while `work` runs; returns the work's output and the
/// peak RSS seen.
async fn peak_rss_during<T>(
    relay: &ChildRelay,
    work: impl std::future::Future<Output = T>,
) -> (T, usize) {
    let pid = relay.pid();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sampler = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut peak = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                if let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) {
                    if let Some(kib) = status
                        .lines()
                        .find_map(|l| l.strip_prefix("VmRSS:"))
                        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<usize>().ok())
                    {
                        peak = peak.max(kib * 1024);
                    }
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            peak
        })
    };
    let out = work.await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    (out, sampler.join().unwrap())
}

const MIB: f64 = 1024.0 * 1024.0;

// ---------------------------------------------------------------------------------------------
// A raw WebSocket client: hand-built frames, nothing read unless asked.

const TEXT: u8 = 0x1;
const CONTINUATION: u8 = 0x0;
const CLOSE: u8 = 0x8;
const PING: u8 = 0x9;

/// One client frame (masked, as RFC 6455 requires of clients).
fn frame(opcode: u8, fin: bool, payload: &[u8]) -> Vec<u8> {
    let mut out = vec![if fin { 0x80 | opcode } else { opcode }];
    let len = payload.len();
    if len < 126 {
        out.push(0x80 | len as u8);
    } else if len < 65536 {
        out.push(0x80 | 126);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(0x80 | 127);
        out.extend_from_slice(&(len as u64).to_be_bytes());
    }
    let mask = [0x12, 0x34, 0x56, 0x78];
    out.extend_from_slice(&mask);
    out.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    out
}

/// Sends the upgrade request for `path`; returns the HTTP status and the stream.
async fn raw_upgrade(addr: SocketAddr, path: &str, origin: Option<&str>) -> (u16, TcpStream) {
    let stream = TcpStream::connect(addr).await.unwrap();
    upgrade_on(stream, path, origin).await
}

/// A socket that reads nothing and whose receive buffer is small, so what the relay writes
/// stays in the relay instead of in the kernel's buffers.
async fn small_window_socket(addr: SocketAddr, path: &str) -> TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let stream = socket.connect(addr).await.unwrap();
    let (status, stream) = upgrade_on(stream, path, None).await;
    assert_eq!(status, 101);
    stream
}

async fn upgrade_on(mut stream: TcpStream, path: &str, origin: Option<&str>) -> (u16, TcpStream) {
    let addr = stream.peer_addr().unwrap();
    let origin = origin.map_or(String::new(), |o| format!("Origin: {o}\r\n"));
    stream
        .write_all(
            format!(
                "GET {path} HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
                 Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n{origin}\r\n"
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8];
    while !head.ends_with(b"\r\n\r\n") {
        let n = tokio::time::timeout(WAIT, stream.read(&mut byte))
            .await
            .expect("upgrade response")
            .unwrap();
        assert_eq!(
            n,
            1,
            "closed during the upgrade: {}",
            String::from_utf8_lossy(&head)
        );
        head.push(byte[0]);
    }
    let status = String::from_utf8_lossy(&head[9..12]).parse().unwrap();
    (status, stream)
}

async fn raw_socket(addr: SocketAddr, path: &str) -> TcpStream {
    let (status, stream) = raw_upgrade(addr, path, None).await;
    assert_eq!(status, 101);
    stream
}

/// Reads server frames until a close frame; returns its code and reason, or `None` if the
/// connection ended without one.
async fn read_close(stream: &mut TcpStream, within: Duration) -> Option<(u16, String)> {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let mut head = [0u8; 2];
        match tokio::time::timeout_at(deadline, stream.read_exact(&mut head)).await {
            Err(_) => panic!("no close within {within:?}"),
            Ok(Err(_)) => return None,
            Ok(Ok(_)) => {}
        }
        let mut len = (head[1] & 0x7f) as u64;
        if len == 126 {
            let mut ext = [0u8; 2];
            stream.read_exact(&mut ext).await.ok()?;
            len = u16::from_be_bytes(ext) as u64;
        } else if len == 127 {
            let mut ext = [0u8; 8];
            stream.read_exact(&mut ext).await.ok()?;
            len = u64::from_be_bytes(ext);
        }
        let mut payload = vec![0u8; len as usize];
        stream.read_exact(&mut payload).await.ok()?;
        if head[0] & 0x0f == CLOSE {
            if payload.len() < 2 {
                return Some((1005, String::new()));
            }
            let code = u16::from_be_bytes([payload[0], payload[1]]);
            return Some((code, String::from_utf8_lossy(&payload[2..]).into_owned()));
        }
    }
}

/// Waits until the relay has dropped the connection (end of stream or reset), reading and
/// discarding whatever arrives; returns how long it took.
async fn wait_dropped(stream: &mut TcpStream, within: Duration) -> Duration {
    let start = Instant::now();
    let mut sink = vec![0u8; 64 * 1024];
    loop {
        match tokio::time::timeout(
            within.saturating_sub(start.elapsed()),
            stream.read(&mut sink),
        )
        .await
        {
            Err(_) => panic!("connection still open after {within:?}"),
            Ok(Ok(0)) | Ok(Err(_)) => return start.elapsed(),
            Ok(Ok(_)) => {}
        }
    }
}

/// Completes `mcp_handshake` on a raw socket and reads its answer, so what follows is sent by
/// an authenticated socket (not charged to the unauthenticated read budget).
async fn handshake(s: &mut TcpStream, user: &str) {
    s.write_all(&handshake_frame(user)).await.unwrap();
    let mut head = [0u8; 2];
    tokio::time::timeout(WAIT, s.read_exact(&mut head))
        .await
        .expect("handshake answer")
        .unwrap();
    let mut len = (head[1] & 0x7f) as usize;
    if len == 126 {
        let mut ext = [0u8; 2];
        s.read_exact(&mut ext).await.unwrap();
        len = u16::from_be_bytes(ext) as usize;
    }
    let mut payload = vec![0u8; len];
    s.read_exact(&mut payload).await.unwrap();
    let answer: serde_json::Value = serde_json::from_slice(&payload).unwrap();
    assert_eq!(answer["result"]["authenticated"], true, "{answer}");
}

fn handshake_frame(user: &str) -> Vec<u8> {
    let request = json!({"jsonrpc": "2.0", "id": 1, "method": "mcp_handshake",
        "params": {"accessToken": token(user, None)}});
    frame(TEXT, true, request.to_string().as_bytes())
}

// ---------------------------------------------------------------------------------------------
// Row 1: pings without reading.

/// Sends pings as fast as allowed (at most `rate` bytes/s) without ever reading, until a
/// write fails; returns how long the relay took to drop the socket and the bytes written.
async fn ping_flood(stream: &mut TcpStream, rate: f64, give_up: Duration) -> (Duration, usize) {
    let ping = frame(PING, true, &[b'p'; 125]);
    let batch: Vec<u8> = ping.iter().copied().cycle().take(ping.len() * 64).collect();
    let start = Instant::now();
    let (mut written, mut offset) = (0usize, 0usize);
    loop {
        assert!(
            start.elapsed() < give_up,
            "still open after {give_up:?} ({written} bytes sent)"
        );
        let due = written as f64 / rate;
        let elapsed = start.elapsed().as_secs_f64();
        if due > elapsed {
            tokio::time::sleep(Duration::from_secs_f64(due - elapsed)).await;
        }
        // One `write` at a time (cancelling it writes nothing), so a timeout never leaves a
        // frame half sent.
        match tokio::time::timeout(Duration::from_millis(200), stream.write(&batch[offset..])).await
        {
            Ok(Ok(0)) | Ok(Err(_)) => return (start.elapsed(), written),
            Ok(Ok(n)) => {
                written += n;
                offset = (offset + n) % batch.len();
            }
            Err(_) => {
                // Our own send buffer is full (the relay stopped reading): check whether the
                // relay has closed the socket.
                let mut probe = [0u8; 1];
                if let Ok(Ok(0) | Err(_)) =
                    tokio::time::timeout(Duration::from_millis(1), stream.peek(&mut probe)).await
                {
                    return (start.elapsed(), written);
                }
            }
        }
    }
}

#[tokio::test]
async fn ping_flood_without_reading_is_bounded_and_closed_within_the_send_timeout() {
    let relay = ChildRelay::start(&["--send-timeout", "2s", "--ping-interval", "60s"]);
    let rate = 40.0 * MIB;
    // Warm the relay up (runtime, allocator) so the figure below is the attack's alone.
    let mut warm = raw_socket(relay.addr, "/mcp").await;
    ping_flood(&mut warm, rate, Duration::from_secs(10)).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = relay.rss();

    // Anonymous: the read budget (64 KiB before authenticating) ends each almost at once.
    let flood = async {
        let mut tasks = Vec::new();
        for _ in 0..20 {
            let mut s = raw_socket(relay.addr, "/mcp").await;
            tasks.push(tokio::spawn(async move {
                ping_flood(&mut s, rate, Duration::from_secs(10)).await
            }));
        }
        let (mut slowest, mut sent) = (Duration::ZERO, 0);
        for task in tasks {
            let (took, written) = task.await.unwrap();
            slowest = slowest.max(took);
            sent += written;
        }
        (slowest, sent)
    };
    let ((took, written), peak) = peak_rss_during(&relay, flood).await;
    let growth = peak.saturating_sub(before);
    eprintln!(
        "row 1, 20 anonymous sockets: all closed within {took:?}, {:.1} MiB sent, RSS +{:.2} MiB ({:.2}x)",
        written as f64 / MIB,
        growth as f64 / MIB,
        growth as f64 / written as f64
    );
    assert!(took < Duration::from_secs(3), "{took:?}");
    assert!(growth < 4 * written, "amplification over 4x");

    // Authenticated: pongs pile up in the bounded write buffer until the socket has accepted
    // nothing for --send-timeout (2 s); then the next ping closes it.
    let mut authed = raw_socket(relay.addr, "/mcp").await;
    handshake(&mut authed, "alice").await;
    let before = relay.rss();
    let ((took, written), peak) = peak_rss_during(
        &relay,
        ping_flood(&mut authed, rate, Duration::from_secs(10)),
    )
    .await;
    let growth = peak.saturating_sub(before);
    eprintln!(
        "row 1, authenticated: closed after {took:?}, {:.1} MiB sent, RSS +{:.1} MiB",
        written as f64 / MIB,
        growth as f64 / MIB
    );
    assert!(took < Duration::from_secs(10), "{took:?}");
    assert!(
        growth < 100 << 20,
        "RSS grew {:.1} MiB",
        growth as f64 / MIB
    );
    assert!(relay.metric("mcp_relay_slow_peer_disconnects_total").await >= 1.0);
}

// ---------------------------------------------------------------------------------------------
// Row 2: unfinished fragmented messages.

#[tokio::test]
async fn unfinished_messages_are_closed_by_the_handshake_deadline_or_the_read_budget() {
    let relay = ChildRelay::start(&["--auth-timeout", "2s"]);
    let before = relay.rss();

    // Eight messages that never finish, each kept under the 64 KiB budget and kept alive with
    // pings: the /mcp handshake deadline closes them.
    let mut sockets = Vec::new();
    for _ in 0..8 {
        let mut s = raw_socket(relay.addr, "/mcp").await;
        s.write_all(&frame(TEXT, false, &[b'a'; 30 * 1024]))
            .await
            .unwrap();
        sockets.push(s);
    }
    let start = Instant::now();
    let keepalive = async {
        for _ in 0..10 {
            tokio::time::sleep(Duration::from_millis(200)).await;
            for s in sockets.iter_mut() {
                let _ = s.write_all(&frame(PING, true, b"hi")).await;
            }
        }
    };
    keepalive.await;
    for s in sockets.iter_mut() {
        let (code, reason) = read_close(s, Duration::from_secs(3))
            .await
            .expect("close frame");
        assert_eq!(code, 1008, "{reason}");
        assert!(reason.contains("authentication timed out"), "{reason}");
    }
    let took = start.elapsed();
    assert!(took < Duration::from_secs(4), "{took:?}");

    // Eight 30 MiB messages sent in full: the relay reads 64 KiB of each, then closes.
    let attack = async {
        let mut sent = 0usize;
        let mut tasks = Vec::new();
        for _ in 0..8 {
            let mut s = raw_socket(relay.addr, "/mcp").await;
            tasks.push(tokio::spawn(async move {
                let mut written = 0;
                let first = frame(TEXT, false, &vec![b'a'; 1 << 20]);
                if s.write_all(&first).await.is_ok() {
                    written += first.len();
                    let more = frame(CONTINUATION, false, &vec![b'a'; 1 << 20]);
                    for _ in 0..29 {
                        match tokio::time::timeout(Duration::from_secs(2), s.write_all(&more)).await
                        {
                            Ok(Ok(())) => written += more.len(),
                            _ => break,
                        }
                    }
                }
                let closed = read_close(&mut s, Duration::from_secs(5)).await;
                (written, closed)
            }));
        }
        for task in tasks {
            let (written, closed) = task.await.unwrap();
            sent += written;
            if let Some((code, reason)) = closed {
                assert_eq!(code, 1008, "{reason}");
                assert!(reason.contains("before authenticating"), "{reason}");
            }
        }
        sent
    };
    let (sent, peak) = peak_rss_during(&relay, attack).await;
    let growth = peak.saturating_sub(before);
    eprintln!(
        "row 2: {:.1} MiB sent by 8 sockets, relay RSS +{:.2} MiB ({:.3}x)",
        sent as f64 / MIB,
        growth as f64 / MIB,
        growth as f64 / sent as f64
    );
    assert!(growth < 4 * sent, "amplification over 4x");
    assert!(growth < 8 << 20, "RSS grew {:.1} MiB", growth as f64 / MIB);
}

// ---------------------------------------------------------------------------------------------
// Row 5: sockets that never handshake.

#[tokio::test]
async fn sockets_that_never_handshake_are_closed_by_the_deadline_and_the_cap_recovers() {
    let deadline = Duration::from_secs(6);
    let relay = relay_with(|c| {
        c.auth_timeout = deadline;
        c.max_connections = 8000;
        c.max_unauthenticated_connections = 4000;
    })
    .await;
    let open_start = Instant::now();
    let mut sockets = Vec::new();
    for chunk in 0..30 {
        let path = if chunk % 2 == 0 { "/mcp" } else { "/extension" };
        let batch: Vec<_> = (0..100)
            .map(|_| {
                let addr = relay.local_addr;
                tokio::spawn(async move {
                    let s = raw_socket(addr, path).await;
                    (Instant::now(), s)
                })
            })
            .collect();
        for s in batch {
            sockets.push(s.await.unwrap());
        }
    }
    let opened = open_start.elapsed();
    let metrics = relay.metrics().render();
    let open = metric(&metrics, "mcp_relay_sockets{role=\"mcp\"}")
        + metric(&metrics, "mcp_relay_sockets{role=\"extension\"}");
    eprintln!("row 5: 3000 anonymous sockets opened in {opened:?}, {open} open at once");
    assert!(open >= 2000.0, "{metrics}");
    // Each socket is closed by its handshake deadline: not before, and not much after.
    let waits: Vec<_> = sockets
        .into_iter()
        .map(|(opened_at, mut s)| {
            tokio::spawn(async move {
                wait_dropped(&mut s, deadline + Duration::from_secs(4)).await;
                opened_at.elapsed()
            })
        })
        .collect();
    let mut lifetimes = Vec::new();
    for wait in waits {
        lifetimes.push(wait.await.unwrap());
    }
    let (shortest, longest) = (
        lifetimes.iter().min().unwrap(),
        lifetimes.iter().max().unwrap(),
    );
    eprintln!("row 5: every socket closed {shortest:?} to {longest:?} after it opened");
    assert!(
        *shortest >= deadline - Duration::from_millis(500),
        "{shortest:?}"
    );
    assert!(*longest < deadline + Duration::from_secs(3), "{longest:?}");
    wait_until("every closed socket's session has ended", || async {
        let metrics = relay.metrics().render();
        metric(&metrics, "mcp_relay_sockets{role=\"mcp\"}") == 0.0
            && metric(&metrics, "mcp_relay_sockets{role=\"extension\"}") == 0.0
    })
    .await;
    // The cap has recovered: a real client gets in.
    let mut mcp = Mcp::connect(&relay, "alice").await;
    assert!(mcp.call("list_extensions", json!({})).await["result"].is_object());
}

#[tokio::test]
async fn anonymous_sockets_cannot_lock_authenticated_clients_out() {
    let relay = relay_with(|c| c.max_connections = 300).await;
    let mut authed = Mcp::connect(&relay, "alice").await;
    // 300 anonymous sockets: they may hold half the slots, the oldest make way for newer ones.
    let mut anonymous = Vec::new();
    for _ in 0..300 {
        let (status, s) = raw_upgrade(relay.local_addr, "/mcp", None).await;
        assert_eq!(
            status, 101,
            "anonymous sockets are admitted (evicting the oldest)"
        );
        anonymous.push(s);
    }
    // Every upgrade was answered; the evicted sockets' sessions end a moment later.
    wait_until("at most half the slots are held anonymously", || async {
        let (_, body) = http_get(relay.local_addr, "/metrics").await;
        metric(
            &body,
            "mcp_relay_tcp_connections{stage=\"unauthenticated\"}",
        ) <= 150.0
            && metric(&body, "mcp_relay_sockets{role=\"mcp\"}") <= 151.0
    })
    .await;
    // A new client gets in and authenticates; the existing one is untouched.
    let mut fresh = Mcp::connect(&relay, "bob").await;
    assert!(fresh.call("list_extensions", json!({})).await["result"].is_object());
    assert!(authed.call("list_extensions", json!({})).await["result"].is_object());
    // The evicted ones were closed (no handshake deadline involved: it is 10 s here).
    let mut closed = 0;
    for s in anonymous.iter_mut().take(100) {
        let mut byte = [0u8; 64];
        if let Ok(Ok(0) | Err(_)) =
            tokio::time::timeout(Duration::from_millis(20), s.read(&mut byte)).await
        {
            closed += 1;
        }
    }
    assert!(closed >= 100, "only {closed} of the oldest 100 were closed");
}

// ---------------------------------------------------------------------------------------------
// Row 6: slowloris, idle TCP, and the file-descriptor limit.

#[tokio::test]
async fn slowloris_and_idle_connections_are_closed_within_the_header_timeout() {
    let relay = relay_with(|c| c.header_timeout = Duration::from_secs(1)).await;
    let addr = relay.local_addr;
    let idle = TcpStream::connect(addr).await.unwrap();
    let trickle = TcpStream::connect(addr).await.unwrap();
    let h2 = TcpStream::connect(addr).await.unwrap();
    let keep_alive = TcpStream::connect(addr).await.unwrap();
    let start = Instant::now();
    let trickler = |mut s: TcpStream, text: &'static [u8]| {
        tokio::spawn(async move {
            for byte in text.iter().cycle().take(400) {
                if s.write_all(&[*byte]).await.is_err() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            s
        })
    };
    let trickle = trickler(
        trickle,
        b"GET /mcp HTTP/1.1\r\nX-A: aaaaaaaaaaaaaaaaaaaaaaaa",
    );
    let h2 = trickler(h2, b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
    // A kept-alive connection that made one request and then idles: hyper's timer.
    let keep_alive = tokio::spawn(async move {
        let mut s = keep_alive;
        s.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        s
    });
    let mut idle = idle;
    let took = wait_dropped(&mut idle, Duration::from_secs(3)).await;
    eprintln!("row 6: idle TCP closed after {took:?}");
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_millis(2000),
        "{took:?}"
    );
    for (name, task) in [("trickled headers", trickle), ("trickled h2 preface", h2)] {
        let mut s = task.await.unwrap();
        let took = start.elapsed();
        eprintln!("row 6: {name} closed after {took:?}");
        assert!(took < Duration::from_millis(2500), "{name}: {took:?}");
        let _ = wait_dropped(&mut s, Duration::from_secs(1)).await;
    }
    let mut s = keep_alive.await.unwrap();
    let took = wait_dropped(&mut s, Duration::from_secs(3)).await;
    assert!(took < Duration::from_millis(2500), "keep-alive: {took:?}");
}

#[tokio::test]
async fn pending_connections_are_capped_and_the_oldest_make_way() {
    let relay = relay_with(|c| c.max_pending_connections = 50).await;
    let mut idle = Vec::new();
    for _ in 0..100 {
        idle.push(TcpStream::connect(relay.local_addr).await.unwrap());
    }
    // The kernel completed the connections; the relay accepts them (evicting the oldest) a
    // moment later.
    wait_until(
        "the relay has accepted them all, evicting the oldest",
        || async {
            let (status, body) = http_get(relay.local_addr, "/metrics").await;
            status == 200
                && metric(&body, "mcp_relay_tcp_connections{stage=\"pending\"}") <= 50.0
                && metric(&body, "mcp_relay_evicted_connections_total") >= 50.0
        },
    )
    .await;
    let mut closed = 0;
    for s in idle.iter_mut().take(50) {
        let mut byte = [0u8; 1];
        if let Ok(Ok(0) | Err(_)) =
            tokio::time::timeout(Duration::from_millis(50), s.read(&mut byte)).await
        {
            closed += 1;
        }
    }
    assert_eq!(closed, 50, "the oldest 50 are the ones closed");
    let mut mcp = Mcp::connect(&relay, "alice").await;
    assert!(mcp.call("list_extensions", json!({})).await["result"].is_object());
}

/// Raises this test process's own descriptor limit: it holds 1,100 sockets itself.
fn raise_own_fd_limit() {
    mcp_relay::net::limits::raise_fd_limit();
}

#[tokio::test]
async fn a_real_client_is_served_with_1100_idle_connections_at_a_1024_fd_limit() {
    raise_own_fd_limit();
    // A long header timeout: what keeps the relay reachable here is the descriptor reserve
    // and the eviction of the oldest idle connection, not the timeout.
    let relay = ChildRelay::start_with(&["--header-timeout", "60s"], &[], Some(1024));
    let mut idle = Vec::new();
    for _ in 0..1100 {
        match tokio::time::timeout(Duration::from_secs(2), TcpStream::connect(relay.addr)).await {
            Ok(Ok(s)) => idle.push(s),
            other => panic!("connect failed after {}: {other:?}", idle.len()),
        }
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let start = Instant::now();
    let (status, body) =
        tokio::time::timeout(Duration::from_secs(3), http_get(relay.addr, "/healthz"))
            .await
            .expect("/healthz answers");
    assert_eq!((status, body.trim()), (200, "ok"));
    let mut mcp = tokio::time::timeout(
        Duration::from_secs(3),
        Mcp::connect_url(&relay.url("/mcp"), "alice"),
    )
    .await
    .expect("an MCP client connects");
    assert!(mcp.call("list_extensions", json!({})).await["result"].is_object());
    eprintln!(
        "row 6: /healthz and an MCP handshake served in {:?} with 1,100 idle connections",
        start.elapsed()
    );
    let (_, metrics) = http_get(relay.addr, "/metrics").await;
    let open = metric(&metrics, "mcp_relay_tcp_connections{stage=\"all\"}");
    let evicted = metric(&metrics, "mcp_relay_evicted_connections_total");
    let shed = metric(&metrics, "mcp_relay_shed_connections_total");
    eprintln!("row 6: {open} connections open, {evicted} idle ones evicted, {shed} shed");
    assert!(open <= 1024.0 - 64.0 + 2.0, "{metrics}");
    assert!(evicted >= 1100.0 - (1024.0 - 64.0), "{metrics}");
    drop(idle);
}

// ---------------------------------------------------------------------------------------------
// Row 7: replies that are never read.

/// Sends `frames` garbage frames, never reading; returns the bytes written before the relay
/// closed the socket (or all were sent), and the socket: dropping it with unread replies
/// would reset the connection, so callers keep it until they have measured.
async fn garbage(s: TcpStream, frames: usize) -> (usize, TcpStream) {
    send_frames(s, frame(TEXT, true, b"{not json"), frames).await
}

/// Requests with `id_len`-byte ids, answered with an error that repeats the id.
async fn long_id_requests(s: TcpStream, id_len: usize, frames: usize) -> (usize, TcpStream) {
    let request = json!({"jsonrpc": "2.0", "id": "i".repeat(id_len), "method": "x"});
    send_frames(s, frame(TEXT, true, request.to_string().as_bytes()), frames).await
}

async fn send_frames(mut s: TcpStream, one: Vec<u8>, frames: usize) -> (usize, TcpStream) {
    let per_batch = (64 * 1024 / one.len()).max(1);
    let batch: Vec<u8> = one
        .iter()
        .copied()
        .cycle()
        .take(one.len() * per_batch)
        .collect();
    let mut written = 0;
    for _ in 0..frames.div_ceil(per_batch) {
        match tokio::time::timeout(Duration::from_secs(3), s.write_all(&batch)).await {
            Ok(Ok(())) => written += batch.len(),
            _ => break,
        }
    }
    (written, s)
}

#[tokio::test]
async fn unread_error_replies_are_bounded_per_socket_and_in_total() {
    let relay = ChildRelay::start(&[
        "--max-send-queue-bytes",
        "4MiB",
        "--max-total-send-queue-bytes",
        "8MiB",
        "--send-timeout",
        "30s",
    ]);
    let before = relay.rss();
    // Anonymous: at most 64 KiB read and 1 MiB of replies each.
    let anonymous = async {
        let mut tasks = Vec::new();
        for _ in 0..20 {
            let s = small_window_socket(relay.addr, "/mcp").await;
            tasks.push(tokio::spawn(garbage(s, 100_000)));
        }
        let (mut sent, mut sockets) = (0, Vec::new());
        for t in tasks {
            let (written, s) = t.await.unwrap();
            sent += written;
            sockets.push(s);
        }
        (sent, sockets)
    };
    let ((sent, _sockets), peak) = peak_rss_during(&relay, anonymous).await;
    let growth = peak.saturating_sub(before);
    let budget = 20 * ((64 << 10) + (1 << 20));
    eprintln!(
        "row 7, 20 anonymous sockets: {:.2} MiB sent, RSS +{:.2} MiB ({:.2}x the bytes sent, {:.2}x their budget)",
        sent as f64 / MIB,
        growth as f64 / MIB,
        growth as f64 / sent as f64,
        growth as f64 / budget as f64
    );
    assert!(
        growth < 4 * budget,
        "RSS grew {:.1} MiB",
        growth as f64 / MIB
    );

    let disconnects = relay.metric("mcp_relay_slow_peer_disconnects_total").await;

    // Authenticated: 4 MiB each, 8 MiB for all ten together (a peer whose queue is empty may
    // always queue one frame, hence the slack of one reply per socket).
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = relay.rss();
    let authenticated = async {
        let mut tasks = Vec::new();
        for i in 0..10 {
            let mut s = small_window_socket(relay.addr, "/mcp").await;
            handshake(&mut s, &format!("user{i}")).await;
            tasks.push(tokio::spawn(long_id_requests(s, 8 * 1024, 3_000)));
        }
        let mut sockets = Vec::new();
        for t in tasks {
            sockets.push(t.await.unwrap().1);
        }
        sockets
    };
    // The relay works through what the kernel buffered for a while after the writes end.
    let sample_queue = async {
        let mut peak: f64 = 0.0;
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(15) {
            peak = peak.max(relay.metric("mcp_relay_send_queue_bytes").await);
            let closed = relay.metric("mcp_relay_slow_peer_disconnects_total").await;
            if closed - disconnects >= 10.0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        peak
    };
    let ((_sockets, queued), peak) =
        peak_rss_during(&relay, async { tokio::join!(authenticated, sample_queue) }).await;
    let growth = peak.saturating_sub(before);
    let closed = relay.metric("mcp_relay_slow_peer_disconnects_total").await - disconnects;
    eprintln!(
        "row 7, 10 authenticated sockets: queue peak {:.1} MiB (bound 8), RSS +{:.1} MiB, {closed} disconnected",
        queued / MIB,
        growth as f64 / MIB
    );
    assert!(queued <= 8.0 * MIB + 10.0 * 9000.0, "{queued}");
    assert!(closed >= 6.0, "{closed}");
    // What the queue holds is what it counts: the growth stays within 2x the 8 MiB bound.
    assert!(growth < 16 << 20, "RSS grew {:.1} MiB", growth as f64 / MIB);
}

// ---------------------------------------------------------------------------------------------
// Row 14: web pages.

#[tokio::test]
async fn web_origins_are_refused_unless_allowed() {
    let relay = relay_with(|c| c.allowed_origins = vec!["https://app.example.com".into()]).await;
    let addr = relay.local_addr;
    for (path, origin, expected) in [
        ("/mcp", None, 101),
        ("/extension", None, 101),
        ("/mcp", Some("http://localhost:3000"), 403),
        ("/mcp", Some("https://evil.example"), 403),
        ("/extension", Some("https://evil.example"), 403),
        ("/mcp", Some("null"), 403),
        (
            "/extension",
            Some("chrome-extension://abcdefghijklmnop"),
            101,
        ),
        ("/mcp", Some("chrome-extension://abcdefghijklmnop"), 403),
        ("/mcp", Some("https://app.example.com"), 101),
        ("/extension", Some("https://APP.example.com/"), 101),
    ] {
        let (status, _) = raw_upgrade(addr, path, origin).await;
        assert_eq!(status, expected, "{path} from {origin:?}");
    }
}

/// An upgrade request with a body is refused (400): hyper would consume the body between the
/// head and the first frame, where the transport takes the frames to begin (it cuts large
/// frames into fragments, `net/refragment.rs`). An explicit `Content-Length: 0` is no body.
#[tokio::test]
async fn an_upgrade_request_with_a_body_is_refused() {
    let relay = relay().await;
    for (extra, expected) in [
        ("Content-Length: 8\r\n\r\nABCDEFGH", 400),
        ("Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400),
        ("Content-Length: 0\r\n\r\n", 101),
        ("\r\n", 101),
    ] {
        let mut stream = TcpStream::connect(relay.local_addr).await.unwrap();
        let request = format!(
            "GET /mcp HTTP/1.1\r\nHost: relay\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n{extra}"
        );
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut head = [0u8; 12];
        tokio::time::timeout(WAIT, stream.read_exact(&mut head))
            .await
            .expect("an answer")
            .unwrap();
        let status: u16 = String::from_utf8_lossy(&head[9..12]).parse().unwrap();
        assert_eq!(status, expected, "{extra:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// Protocol close codes.

#[tokio::test]
async fn invalid_utf8_closes_with_1007_and_protocol_errors_with_1002() {
    let relay = relay().await;
    let mut s = raw_socket(relay.local_addr, "/mcp").await;
    handshake(&mut s, "alice").await;
    s.write_all(&frame(TEXT, true, &[b'"', 0xff, 0xfe, b'"']))
        .await
        .unwrap();
    let (code, reason) = read_close(&mut s, WAIT).await.expect("close frame");
    assert_eq!(code, 1007, "{reason}");

    let mut s = raw_socket(relay.local_addr, "/mcp").await;
    // Reserved opcode 0x3.
    s.write_all(&frame(0x3, true, b"x")).await.unwrap();
    let (code, reason) = read_close(&mut s, WAIT).await.expect("close frame");
    assert_eq!(code, 1002, "{reason}");

    let mut s = raw_socket(relay.local_addr, "/extension").await;
    // A continuation frame with no message to continue.
    s.write_all(&frame(CONTINUATION, true, b"x")).await.unwrap();
    let (code, reason) = read_close(&mut s, WAIT).await.expect("close frame");
    assert_eq!(code, 1002, "{reason}");
}

#[tokio::test]
async fn mcp_sockets_must_handshake_within_the_auth_timeout() {
    let relay = relay_with(|c| c.auth_timeout = Duration::from_millis(500)).await;
    let mut silent = Client::connect(&relay.url("/mcp")).await;
    let start = Instant::now();
    let (code, reason) = silent.expect_close().await;
    assert_eq!(code, 1008);
    assert!(reason.contains("authentication timed out"), "{reason}");
    assert!(start.elapsed() < Duration::from_secs(2));
    // A failed handshake does not stop the clock; a successful one does.
    let mut mcp = Mcp::connect(&relay, "alice").await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert!(mcp.call("list_extensions", json!({})).await["result"].is_object());
}

/// The queue's count is what it really holds, even for the costliest case: tiny replies.
#[tokio::test]
async fn queued_tiny_replies_cost_what_the_queue_counts() {
    let relay = ChildRelay::start(&["--send-timeout", "60s"]);
    let mut s = small_window_socket(relay.addr, "/mcp").await;
    handshake(&mut s, "alice").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = relay.rss();
    // The socket stays in the task's output until it is awaited at the end.
    let flood = tokio::spawn(garbage(s, 150_000));
    let (mut peak_queue, mut peak_rss): (f64, usize) = (0.0, 0);
    let (start, mut last_growth) = (Instant::now(), Instant::now());
    while start.elapsed() < Duration::from_secs(10)
        && last_growth.elapsed() < Duration::from_millis(1500)
    {
        let queue = relay.metric("mcp_relay_send_queue_bytes").await;
        if queue > peak_queue {
            peak_queue = queue;
            last_growth = Instant::now();
        }
        peak_rss = peak_rss.max(relay.rss());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let growth = peak_rss.saturating_sub(before) as f64;
    eprintln!(
        "row 7, tiny replies: queue count {:.2} MiB, RSS +{:.2} MiB ({:.2}x)",
        peak_queue / MIB,
        growth / MIB,
        growth / peak_queue
    );
    assert!(
        peak_queue > 4.0 * MIB,
        "the flood queued too little to measure"
    );
    drop(flood.await.unwrap());
    assert!(
        growth > 0.5 * peak_queue && growth < 1.5 * peak_queue,
        "the queue holds more than it counts"
    );
}
