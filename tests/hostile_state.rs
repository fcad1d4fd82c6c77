//! Issue 11, rows 8, 9, 11 and 12: state a user controls stays bounded in bytes, remembered
//! state ages out, one client's volume never disconnects its browser, and control methods are
//! rate-limited. Each test drives a real relay over loopback sockets and asserts the bound;
//! `docs/SECURITY.md` records the figures they print (run with `--nocapture`).
//!
//! The relay runs in this process, so its memory is this process's RSS (`/proc/self/status`),
//! and its Rust heap is what this process's counting allocator says ([`live_heap_bytes`]).
//! Tests in one binary run in parallel threads; every test here takes [`SERIAL`] so that a
//! memory figure is never inflated by a neighbour's 30 MiB frames.

mod common;

use std::time::{Duration, Instant};

use common::*;
use futures_util::future::join_all;
use futures_util::SinkExt;
use mcp_relay_test_support::NatsServer;
use serde_json::{json, Value};

static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// This process's resident set size in bytes (Linux).
fn rss_bytes() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let kb: usize = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS in /proc/self/status");
    kb * 1024
}

const MIB: usize = 1 << 20;

extern "C" {
    /// glibc: give freed heap memory back to the system.
    fn malloc_trim(pad: usize) -> i32;
}

/// Returns freed memory to the system, so RSS shows what is still allocated.
fn trim() {
    // SAFETY: malloc_trim only releases free memory of glibc's allocator.
    unsafe {
        malloc_trim(0);
    }
}

/// An extension whose socket accepts messages up to 64 MiB (the test client's default is
/// 16 MiB; the relay forwards up to `--max-message-bytes`, 32 MiB).
async fn large_extension(
    relay: &mcp_relay::server::RunningRelay,
    user: &str,
    name: &str,
    client_id: &str,
) -> Extension {
    large_extension_with(relay, user, name, client_id, "").await
}

/// [`large_extension`] whose `authenticate` answer also carries `padding` (ignored by the relay).
async fn large_extension_with(
    relay: &mcp_relay::server::RunningRelay,
    user: &str,
    name: &str,
    client_id: &str,
    padding: &str,
) -> Extension {
    use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
    let config = WebSocketConfig::default()
        .max_message_size(Some(64 * MIB))
        .max_frame_size(Some(64 * MIB));
    // A fixed, small receive buffer (no autotuning): a browser that does not read leaves what
    // the relay sends it in the relay's queue, not in this host's socket buffers (which may
    // take 32 MiB here), so the queue checks are deterministic.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(64 * 1024).unwrap();
    let stream = socket.connect(relay.local_addr).await.unwrap();
    let (ws, _) = tokio_tungstenite::client_async_with_config(
        relay.url("/extension"),
        tokio_tungstenite::MaybeTlsStream::Plain(stream),
        Some(config),
    )
    .await
    .unwrap();
    Extension::authenticate(
        Client { ws },
        user,
        name,
        client_id,
        json!({ "padding": padding }),
    )
    .await
}

/// `count` requests (`slow`) whose ids are 1000 bytes long: each one pending costs about
/// 2.1 KB of bookkeeping.
async fn send_requests_with_1000_byte_ids(mcp: &mut Mcp, count: usize) {
    for n in 0..count {
        let id = format!("{n:05}{}", "p".repeat(995));
        mcp.client
            .send(json!({"jsonrpc": "2.0", "id": id, "method": "slow", "params": {}}))
            .await;
    }
}

/// Every allocation of this process made through Rust's allocator, counted: the relay runs in
/// this process, so [`live_heap_bytes`] says exactly what it holds on the Rust heap (SQLite,
/// written in C, allocates past it: `sqlite3_memory_used` counts that part).
struct CountingAllocator;

static LIVE_HEAP: std::sync::atomic::AtomicIsize = std::sync::atomic::AtomicIsize::new(0);

// SAFETY: every call is passed on to the system allocator unchanged; the counter is a side note.
unsafe impl std::alloc::GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        LIVE_HEAP.fetch_add(layout.size() as isize, std::sync::atomic::Ordering::Relaxed);
        std::alloc::System.alloc(layout)
    }

    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        LIVE_HEAP.fetch_add(layout.size() as isize, std::sync::atomic::Ordering::Relaxed);
        std::alloc::System.alloc_zeroed(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        LIVE_HEAP.fetch_sub(layout.size() as isize, std::sync::atomic::Ordering::Relaxed);
        std::alloc::System.dealloc(ptr, layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, size: usize) -> *mut u8 {
        LIVE_HEAP.fetch_add(
            size as isize - layout.size() as isize,
            std::sync::atomic::Ordering::Relaxed,
        );
        std::alloc::System.realloc(ptr, layout, size)
    }
}

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

/// Bytes this process holds on the Rust heap now.
fn live_heap_bytes() -> isize {
    LIVE_HEAP.load(std::sync::atomic::Ordering::Relaxed)
}

/// Trimmed RSS growth since `base`, in MiB.
fn grown_mib(base: usize) -> f64 {
    trim();
    rss_bytes().saturating_sub(base) as f64 / MIB as f64
}

/// Row 8: one user, 16 browsers with 16 MiB names, 4 `list_extensions` at once. Before the
/// bound the relay kept 571 MiB and peaked at 3 GiB; names are now cut to `--max-name-bytes`
/// (256) on a character boundary.
///
/// What the relay keeps *because of the names* is measured against a control: 16 browsers of
/// another user whose `authenticate` answers are just as large (16 MiB of padding the relay
/// ignores) but whose names are short. Whatever a socket keeps after receiving one large
/// message is the same in both phases and cancels out.
#[tokio::test]
async fn sixteen_browsers_with_16_mib_names_keep_256_byte_names_and_little_memory() {
    let _serial = SERIAL.lock().await;
    // The test reads none of these sockets while it uploads 512 MiB (half a minute or more
    // in a debug build): no keepalive verdicts meanwhile. With the default 64 KiB a socket may
    // send before it authenticates, such answers never arrive at all (see
    // `a_16_mib_authenticate_answer_is_refused_by_the_pre_auth_budget`); the budget is lifted
    // here so that the name bound is measured on its own.
    let relay = relay_with(|c| {
        c.ping_interval = Duration::from_secs(600);
        c.max_unauthenticated_bytes = 64 * MIB;
    })
    .await;
    let mut listers = Vec::new();
    for _ in 0..4 {
        listers.push(Mcp::connect(&relay, "alice").await);
    }
    let mut browsers = Vec::new();
    trim();
    let start = rss_bytes();
    for i in 0..16 {
        let padding = "é".repeat(8 * MIB);
        let browser = large_extension_with(
            &relay,
            "control",
            &format!("c{i}"),
            &format!("c{i}"),
            &padding,
        )
        .await;
        // Keep the browser's TCP connection but not its WebSocket state: the test client's
        // write buffer keeps the capacity of the largest frame it sent, and this process's RSS
        // should measure the relay, not the fake browsers.
        browsers.push(browser.client.ws.into_inner());
    }
    let control = grown_mib(start);
    trim();
    let before_names = rss_bytes();
    for i in 0..16 {
        // A 3-byte prefix, then two-byte characters: 256 bytes falls inside a character.
        let name = format!("{i:02}-{}", "é".repeat(8 * MIB));
        let browser = large_extension_with(&relay, "alice", &name, &format!("b{i}"), "").await;
        browsers.push(browser.client.ws.into_inner());
    }
    let names = grown_mib(before_names);
    println!(
        "row 8: RSS growth (after malloc_trim): 16 browsers with 16 MiB answers and short names \
         {control:.1} MiB; 16 with 16 MiB names {names:.1} MiB (names account for {:.1} MiB)",
        names - control
    );
    trim();
    let before_lists = rss_bytes();
    let lists = join_all(
        listers
            .iter_mut()
            .map(|mcp| mcp.call("list_extensions", json!({}))),
    )
    .await;
    let listing = grown_mib(before_lists);
    for list in &lists {
        let extensions = list["result"]["extensions"].as_array().expect("a list");
        assert_eq!(extensions.len(), 16, "{list}");
        for (i, extension) in extensions.iter().enumerate() {
            let name = extension["name"].as_str().unwrap();
            assert!(name.len() <= 256, "a name of {} bytes", name.len());
            assert!(name.len() >= 254, "cut too short: {} bytes", name.len());
            assert!(name.starts_with(&format!("{i:02}-éé")), "{name}");
        }
    }
    println!("row 8: 4 concurrent list_extensions: RSS growth {listing:.1} MiB");
    // Kept whole, the names would cost at least 256 MiB (16 x 16 MiB, more as JSON values).
    // Cut, they cost 4 KiB; what is left of the difference is the allocator: a freed frame-sized
    // block that `malloc_trim` cannot hand back because something small sits above it. CI has
    // seen exactly one such block (16.1 MiB), so the bound allows a few and still tells a cut
    // name from a kept one by a factor of four.
    assert!(
        names - control < 64.0,
        "16 MiB names cost {:.1} MiB more than short ones",
        names - control
    );
    assert!(
        listing < 16.0,
        "list_extensions grew RSS by {listing:.1} MiB"
    );
    drop(browsers);
}

/// Row 8 with the defaults: a browser's 16 MiB `authenticate` answer is more than a socket may
/// send before it authenticates, so it closes the socket (1008) before anything is stored.
#[tokio::test]
async fn a_16_mib_authenticate_answer_is_refused_by_the_pre_auth_budget() {
    let _serial = SERIAL.lock().await;
    let relay = relay().await;
    let mut ext = Client::connect(&relay.url("/extension")).await;
    let auth = ext.recv().await;
    let name = "é".repeat(8 * MIB);
    let _ = ext
        .ws
        .send(tokio_tungstenite::tungstenite::Message::Text(
            json!({"jsonrpc": "2.0", "id": auth["id"], "result": {
                "name": name,
                "access_token": token("alice", Some(mcp_relay::auth::Role::Extension)),
            }})
            .to_string()
            .into(),
        ))
        .await;
    let (code, reason) = ext.expect_close().await;
    assert_eq!(code, 1008, "{reason}");
    let mut mcp = Mcp::connect(&relay, "alice").await;
    let listed = mcp.call("list_extensions", json!({})).await;
    assert_eq!(listed["result"]["extensions"], json!([]), "{listed}");
}

/// Row 8: 64 KiB request ids are refused with -32600; ids up to `--max-id-bytes` pass.
#[tokio::test]
async fn request_ids_over_1_kib_are_refused_with_32600() {
    let _serial = SERIAL.lock().await;
    let relay = relay().await;
    let ext = Extension::connect(&relay, "alice", "Chrome", "a").await;
    let extension_id = ext.extension_id.clone();
    let _echo = ext.spawn_echo();
    let mut mcp = Mcp::connect(&relay, "alice").await;
    mcp.connect_to(&extension_id).await;
    let huge = "i".repeat(64 * 1024);
    let refused = mcp.client.call(json!(huge), "getTabs", json!({})).await;
    assert_eq!(
        refused["error"]["code"],
        -32600,
        "{}",
        &refused.to_string()[..200]
    );
    assert_eq!(refused["id"], json!(huge));
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(message.contains("1024 bytes"), "{message}");
    // 1024 bytes of raw JSON: the quotes count.
    let largest = "i".repeat(1022);
    let ok = mcp.client.call(json!(largest), "getTabs", json!({})).await;
    assert_eq!(ok["result"]["echo"], "getTabs", "{ok}");
    assert_eq!(ok["id"], json!(largest));
    let over = "i".repeat(1023);
    let refused = mcp.client.call(json!(over), "getTabs", json!({})).await;
    assert_eq!(refused["error"]["code"], -32600);
}

/// Row 8: a client whose extension never answers cannot make the relay keep more than
/// `--max-pending-bytes` (1 MiB) of pending-request bookkeeping; past it, -32002.
#[tokio::test]
async fn pending_request_bytes_per_connection_are_bounded() {
    let _serial = SERIAL.lock().await;
    let relay = relay().await;
    let mut ext = Extension::connect(&relay, "alice", "Chrome", "a").await;
    let mut mcp = Mcp::connect(&relay, "alice").await;
    mcp.connect_to(&ext.extension_id).await;
    let sent = 700;
    send_requests_with_1000_byte_ids(&mut mcp, sent).await;
    // The marker's answer comes after every refusal (answers go out in order).
    mcp.client
        .send(json!({"jsonrpc": "2.0", "id": "marker", "method": "list_extensions"}))
        .await;
    let mut refused = 0;
    loop {
        let response = mcp.client.recv_response().await;
        if response["id"] == "marker" {
            break;
        }
        assert_eq!(response["error"]["code"], -32002, "{response}");
        let message = response["error"]["message"].as_str().unwrap();
        assert!(message.contains("pending requests"), "{message}");
        refused += 1;
    }
    let accepted = sent - refused;
    // 1 MiB / (1002-byte raw id + 1042-byte mapped id + 96) = 489.
    println!("row 8: 1000-byte ids, silent extension: {accepted} pending accepted, {refused} refused (-32002)");
    assert!((480..=500).contains(&accepted), "{accepted} accepted");
    let mut requests = Vec::new();
    for _ in 0..accepted {
        let request = ext.next_request().await;
        assert_eq!(request["method"], "slow");
        requests.push(request);
    }
    ext.client.expect_silence(Duration::from_millis(200)).await;
    let metrics = relay.metrics().render();
    assert_eq!(
        metric(&metrics, "mcp_relay_pending_requests"),
        accepted as f64
    );
    // Answering one frees room for one more.
    ext.reply(&requests[0], json!({})).await;
    assert!(mcp.client.recv_response().await["result"].is_object());
    let id = format!("{:05}{}", sent, "p".repeat(995));
    mcp.client
        .send(json!({"jsonrpc": "2.0", "id": id, "method": "again", "params": {}}))
        .await;
    assert_eq!(ext.next_request().await["method"], "again");
}

/// Row 9: browsers vanishing while an MCP client is connected used to leave ~2.1 KB each in
/// `former_peers` forever. Now at most `--max-extensions-per-user` vanished browsers are
/// remembered per user (the oldest forgotten first), and each for `--reconnect-window`.
#[tokio::test]
async fn vanished_browsers_are_remembered_per_user_boundedly_and_then_forgotten() {
    let _serial = SERIAL.lock().await;
    let relay = relay_with(|c| {
        c.max_extensions_per_user = 4;
        c.hub.reconnect_window = Duration::from_secs(2);
        c.request_timeout = Duration::from_secs(2); // sweeps every 100 ms
    })
    .await;
    let mut mcp = Mcp::connect(&relay, "alice").await;
    let identities = 200;
    let mut ids = Vec::new();
    for i in 0..identities {
        let ext = Extension::connect(&relay, "alice", &format!("B{i}"), &format!("c{i}")).await;
        mcp.connect_to(&ext.extension_id).await;
        ids.push(ext.extension_id.clone());
        ext.client.close().await;
        let gone = mcp.client.recv_notification("disconnected").await;
        assert_eq!(gone["params"]["extension_id"], ids[i]);
    }
    let awaited = |relay: &mcp_relay::server::RunningRelay| {
        metric(&relay.metrics().render(), "mcp_relay_awaited_extensions")
    };
    println!(
        "row 9: {identities} vanished identities with a client connected: {} remembered",
        awaited(&relay)
    );
    assert_eq!(awaited(&relay), 4.0);
    // The oldest is forgotten: its return is not announced. The newest is.
    let back = Extension::connect(&relay, "alice", "B0", "c0").await;
    mcp.client.expect_silence(Duration::from_millis(300)).await;
    back.client.close().await;
    let back = Extension::connect(&relay, "alice", "B199", "c199").await;
    let notice = mcp.client.recv_notification("connected").await;
    assert_eq!(notice["params"]["extension_id"], ids[identities - 1]);
    back.client.close().await;
    // The rest age out after the window.
    let deadline = Instant::now() + Duration::from_secs(5);
    while awaited(&relay) > 0.0 {
        assert!(
            Instant::now() < deadline,
            "still {} remembered",
            awaited(&relay)
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let back = Extension::connect(&relay, "alice", "B198", "c198").await;
    mcp.client.expect_silence(Duration::from_millis(300)).await;
    drop(back);
}

/// Row 11: three ~30 MiB requests from one client used to overflow the browser's 64 MiB queue
/// and disconnect the browser for every client of that user. Now the request past the client's
/// fair share gets -32002, a request that would fill the queue past its budget gets -32002, and
/// the browser stays connected and answers the other clients.
#[tokio::test]
async fn a_clients_volume_gets_it_32002_and_never_disconnects_the_browser() {
    let _serial = SERIAL.lock().await;
    let relay = relay().await;
    let mut ext = large_extension(&relay, "alice", "Chrome", "a").await;
    let mut heavy = Mcp::connect(&relay, "alice").await;
    let mut other = Mcp::connect(&relay, "alice").await;
    let mut third = Mcp::connect(&relay, "alice").await;
    heavy.connect_to(&ext.extension_id).await;
    other.connect_to(&ext.extension_id).await;
    third.connect_to(&ext.extension_id).await;
    let payload = "x".repeat(30 * MIB);
    // The extension reads nothing yet: everything sent to it stays queued in the relay.
    for n in 1..=3 {
        heavy
            .client
            .send(
                json!({"jsonrpc": "2.0", "id": n, "method": "upload", "params": {"data": payload}}),
            )
            .await;
    }
    for n in 2..=3 {
        let refused = heavy.client.recv_response().await;
        assert_eq!(refused["id"], n);
        assert_eq!(refused["error"]["code"], -32002, "{refused}");
        let message = refused["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("share of the browser's queue"),
            "{message}"
        );
    }
    // Another client's large request would push the queue past its budget: refused too.
    third
        .client
        .send(json!({"jsonrpc": "2.0", "id": 1, "method": "upload", "params": {"data": payload}}))
        .await;
    let refused = third.client.recv_response().await;
    assert_eq!(refused["error"]["code"], -32002, "{refused}");
    assert_eq!(
        refused["error"]["message"],
        "The browser's queue is full; retry later"
    );
    drop(payload);
    // A small request from another client still goes through, and the browser, once it reads,
    // answers both requests that were admitted.
    other
        .client
        .send(json!({"jsonrpc": "2.0", "id": 7, "method": "getTabs", "params": {}}))
        .await;
    for _ in 0..2 {
        let request = ext.next_request().await;
        ext.reply(&request, json!({"ok": request["method"]})).await;
    }
    let answer = other.client.recv_response().await;
    assert_eq!(answer["result"]["ok"], "getTabs", "{answer}");
    let answer = heavy.client.recv_response().await;
    assert_eq!(answer["id"], 1);
    assert_eq!(answer["result"]["ok"], "upload");
    let metrics = relay.metrics().render();
    println!(
        "row 11: 3 x 30 MiB requests from one client: 1 admitted, 2 refused -32002; browser disconnects: {}",
        metric(&metrics, "mcp_relay_slow_peer_disconnects_total")
    );
    assert_eq!(
        metric(&metrics, "mcp_relay_slow_peer_disconnects_total"),
        0.0
    );
    assert_eq!(metric(&metrics, "mcp_relay_extensions"), 1.0);
    // Still connected for everyone.
    let listed = other.call("list_extensions", json!({})).await;
    assert_eq!(listed["result"]["extensions"][0]["connected"], true);
}

/// Row 12: control methods in a loop get -32002 past `--control-rate-limit`; forwarded
/// requests are not counted against it, and the budget refills.
#[tokio::test]
async fn control_methods_in_a_loop_are_rate_limited() {
    let _serial = SERIAL.lock().await;
    let relay = relay_with(|c| {
        c.hub.control_rate_limit = 10.0;
        c.hub.control_rate_burst = 20.0;
    })
    .await;
    let ext = Extension::connect(&relay, "alice", "Chrome", "a").await;
    let extension_id = ext.extension_id.clone();
    let _echo = ext.spawn_echo();
    let mut mcp = Mcp::connect(&relay, "alice").await; // the handshake took one token
    let started = Instant::now();
    let mut answered = 0;
    let mut refused = 0;
    for _ in 0..200 {
        let response = mcp.call("list_extensions", json!({})).await;
        if response["result"].is_object() {
            answered += 1;
        } else {
            assert_eq!(response["error"]["code"], -32002, "{response}");
            refused += 1;
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    println!(
        "row 12: 200 list_extensions in {elapsed:.2} s at 10/s, burst 20: {answered} answered, {refused} refused"
    );
    let allowed = 19.0 + 10.0 * elapsed;
    assert!(answered as f64 <= allowed + 1.0, "{answered} > {allowed}");
    assert!(answered >= 19, "{answered}");
    assert!(refused >= 100, "{refused}");
    // Connect and disconnect are control methods too; forwarded requests are not.
    let refused = mcp
        .call("connect", json!({"extension_id": extension_id}))
        .await;
    assert_eq!(refused["error"]["code"], -32002, "{refused}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    mcp.connect_to(&extension_id).await;
    for _ in 0..50 {
        let echoed = mcp.call("getTabs", json!({})).await;
        assert_eq!(echoed["result"]["echo"], "getTabs", "{echoed}");
    }
}

/// Row 12: `list_extensions` reads a per-user index; it stays exact through duplicate sockets,
/// closes and other users' churn.
#[tokio::test]
async fn list_extensions_index_stays_exact_through_register_and_close() {
    let _serial = SERIAL.lock().await;
    let relay = relay().await;
    let mut alice = Mcp::connect(&relay, "alice").await;
    let mut bob = Mcp::connect(&relay, "bob").await;
    let listed = |list: Value| -> Vec<String> {
        let mut names: Vec<String> = list["result"]["extensions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["name"].as_str().unwrap().to_owned())
            .collect();
        names.sort();
        names
    };
    let a1 = Extension::connect(&relay, "alice", "A1", "1").await;
    let a1_dup = Extension::connect(&relay, "alice", "A1", "1").await;
    let a2 = Extension::connect(&relay, "alice", "A2", "2").await;
    let b1 = Extension::connect(&relay, "bob", "B1", "1").await;
    assert_eq!(
        listed(alice.call("list_extensions", json!({})).await),
        ["A1", "A2"]
    );
    assert_eq!(listed(bob.call("list_extensions", json!({})).await), ["B1"]);
    // One of two sockets of A1 closes: A1 stays.
    a1.client.close().await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        listed(alice.call("list_extensions", json!({})).await),
        ["A1", "A2"]
    );
    a1_dup.client.close().await;
    b1.client.close().await;
    // Both leave the lists once their sessions have ended.
    let deadline = Instant::now() + WAIT;
    loop {
        let alices = listed(alice.call("list_extensions", json!({})).await);
        let bobs = listed(bob.call("list_extensions", json!({})).await);
        if alices == ["A2"] && bobs.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "still listed: {alices:?}, {bobs:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let _a1 = Extension::connect(&relay, "alice", "A1 again", "1").await;
    assert_eq!(
        listed(alice.call("list_extensions", json!({})).await),
        ["A1 again", "A2"]
    );
    drop(a2);
}

/// The same bounds hold when the client and its browser are on different cluster nodes: long
/// ids are refused on the client's node, pending requests are bounded end to end, the list is
/// the caller's only, and clients waiting for a vanished remote browser are forgotten after
/// the window.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bounds_hold_across_cluster_nodes() {
    let _serial = SERIAL.lock().await;
    let Some(nats) = NatsServer::start_or_skip("hostile_state cluster test", &[]) else {
        return;
    };
    let url = nats.url();
    let node = |url: String| {
        relay_with(move |c| {
            c.cluster = Some(url);
            c.cluster_options.heartbeat = Duration::from_millis(200);
            c.cluster_options.node_ttl = Duration::from_millis(1200);
            c.hub.reconnect_window = Duration::from_secs(1);
        })
    };
    let a = node(url.clone()).await;
    let b = node(url).await;
    let ext = Extension::connect(&b, "alice", "Remote", "r").await;
    let _bobs = Extension::connect(&b, "bob", "Bob's", "b").await;
    let mut mcp = Mcp::connect(&a, "alice").await;
    let deadline = Instant::now() + WAIT;
    loop {
        let list = mcp.call("list_extensions", json!({})).await;
        let names: Vec<&str> = list["result"]["extensions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["name"].as_str().unwrap())
            .collect();
        if names == ["Remote"] {
            break;
        }
        assert!(names.is_empty(), "only alice's browser: {names:?}");
        assert!(Instant::now() < deadline, "the remote browser never showed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    mcp.connect_to(&ext.extension_id).await;
    let refused = mcp
        .client
        .call(json!("i".repeat(64 * 1024)), "getTabs", json!({}))
        .await;
    assert_eq!(refused["error"]["code"], -32600);
    let sent = 700;
    send_requests_with_1000_byte_ids(&mut mcp, sent).await;
    let mut refused = 0;
    while let Ok(response) =
        tokio::time::timeout(Duration::from_secs(2), mcp.client.recv_response()).await
    {
        assert_eq!(response["error"]["code"], -32002, "{response}");
        refused += 1;
    }
    let accepted = sent - refused;
    println!("cluster: 1000-byte ids to a remote silent browser: {accepted} pending accepted, {refused} refused");
    assert!((480..=500).contains(&accepted), "{accepted} accepted");
    // The browser goes away: the client on node A is remembered, then forgotten.
    ext.client.close().await;
    let _ = mcp.client.recv_notification("disconnected").await;
    let awaited = || metric(&a.metrics().render(), "mcp_relay_awaited_extensions");
    assert_eq!(awaited(), 1.0);
    let deadline = Instant::now() + Duration::from_secs(5);
    while awaited() > 0.0 {
        assert!(Instant::now() < deadline, "never forgotten");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `count` new browser identities of one user (client ids `churn-{from}`…), 8 at a time: each
/// authenticates, then its socket closes.
async fn churn_identities(relay: &mcp_relay::server::RunningRelay, from: usize, count: usize) {
    for first in (from..from + count).step_by(8) {
        let browsers = join_all((first..(first + 8).min(from + count)).map(|i| async move {
            Extension::connect(relay, "alice", "Chrome", &format!("churn-{i}")).await
        }))
        .await;
        for browser in browsers {
            browser.client.close().await;
        }
    }
}

/// Issue 24 point 6: one user's browser identities come and go (each a new client id, so a new
/// extension id), with the default SQLite state and its audit trail. Once their sockets have
/// closed, the relay holds nothing per identity on its heap: after a warm-up of 300 identities
/// (enough to fill the user's 256 browser records, which are bounded), 3 rounds of 1,000 leave
/// less than 60 bytes each, less than one identity's extension id with its map slot would take.
/// What they leave is a one-off step (a buffer's capacity doubling once, about 80 KB, in one of
/// the rounds) and a few bytes of noise; the rounds print it. Before, the audit writer kept every
/// identity's `authenticate` labels in its id cache: about 210 bytes each, until 8,192 were kept
/// and the cache started over. SQLite's own memory (its page cache, bounded by its
/// `cache_size`, 2 MB by default) is printed beside.
#[tokio::test]
async fn browser_identity_churn_leaves_no_heap_per_identity_with_the_sqlite_state() {
    let _serial = SERIAL.lock().await;
    const IDENTITIES: usize = 1000;
    const ROUNDS: usize = 3;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let relay = relay_with(|c| {
        c.state = Some(mcp_relay::operator::store::StateSpec::Sqlite(path.clone()));
    })
    .await;
    let relay_config = mcp_relay::config::ServeConfig::defaults();
    assert!(
        !relay_config.audit_retention.is_zero(),
        "the audit trail is on by default"
    );
    churn_identities(&relay, 0, 300).await;
    // The audit writer lets events gather 100 ms, then writes them on a blocking thread.
    let settle = Duration::from_millis(800);
    tokio::time::sleep(settle).await;
    let heap_before = live_heap_bytes();
    // SAFETY: a read of SQLite's global memory counter.
    let sqlite_before = unsafe { rusqlite::ffi::sqlite3_memory_used() };
    for round in 0..ROUNDS {
        let started = Instant::now();
        let heap = live_heap_bytes();
        churn_identities(&relay, 300 + round * IDENTITIES, IDENTITIES).await;
        tokio::time::sleep(settle).await;
        let grown = live_heap_bytes() - heap;
        println!(
            "round {round}: {IDENTITIES} identities in {:.1} s, Rust heap {grown:+} bytes \
             ({:.0} B per identity)",
            started.elapsed().as_secs_f64(),
            grown as f64 / IDENTITIES as f64,
        );
    }
    let heap = live_heap_bytes() - heap_before;
    // SAFETY: as above.
    let sqlite_now = unsafe { rusqlite::ffi::sqlite3_memory_used() };
    let per_identity = heap as f64 / (ROUNDS * IDENTITIES) as f64;
    println!(
        "{} identities: Rust heap {heap:+} bytes ({per_identity:.0} B per identity); SQLite \
         {:.2} MiB -> {:.2} MiB",
        ROUNDS * IDENTITIES,
        sqlite_before as f64 / MIB as f64,
        sqlite_now as f64 / MIB as f64,
    );
    assert!(
        per_identity < 60.0,
        "the relay keeps {per_identity:.0} bytes per browser identity that has left"
    );
}
