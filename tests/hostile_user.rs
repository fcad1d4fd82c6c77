//! Issue 24: what one authenticated user can cost the relay. Each test drives the relay binary
//! (a child process, so its files, memory and descriptors are its own) over loopback sockets as
//! an attacker holding one ordinary user's token would, and asserts the bound; `docs/SECURITY.md`
//! records the figures they print (`-- --nocapture`; `MCP_RELAY_TEST_BIN=target/release/mcp-relay`
//! measures the release build).

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::child::ChildRelay;
use common::*;
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

const MIB: f64 = (1 << 20) as f64;

/// The bytes of every file in `dir` (the state file, its WAL and shared memory).
fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok()?.metadata().ok())
        .map(|m| m.len())
        .sum()
}

/// One MCP socket connected to an echo browser sends 200,000 requests with unique 128-byte
/// method names as fast as it can, under `--rate-limit 200/s` (burst 400): nearly all are
/// refused. The audit trail keeps every admitted request and one `refused` record per
/// connection, reason and 10 s, holding the count; the state file grows by far less than
/// 10 MiB. Before, each refusal was a record with its own method name: about 150 bytes each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_refused_requests_is_counted_not_stored_one_by_one() {
    const N: usize = 200_000;
    let dir = tempfile::tempdir().unwrap();
    let state = format!("sqlite:{}", dir.path().join("state.db").display());
    let relay = ChildRelay::start(&[
        "--state",
        &state,
        "--rate-limit",
        "200",
        "--rate-burst",
        "400",
    ]);
    let extension =
        Extension::connect_url(&relay.url("/extension"), "alice", "Laptop", "laptop").await;
    let extension_id = extension.extension_id.clone();
    let _echo = extension.spawn_echo();
    let mut mcp = Mcp::connect_url(&relay.url("/mcp"), "alice").await;
    mcp.connect_to(&extension_id).await;
    // What the connect and the browser's record wrote is in the file before the baseline.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = dir_bytes(dir.path());

    let (mut sink, mut stream) = mcp.client.ws.split();
    let reader = tokio::spawn(async move {
        let (mut refused, mut answered) = (0usize, 0usize);
        while refused + answered < N {
            let Some(Ok(Message::Text(text))) = stream.next().await else {
                panic!("the MCP socket ended after {} answers", refused + answered);
            };
            let frame: Value = serde_json::from_str(&text).unwrap();
            if frame.get("id").is_none() {
                continue;
            }
            if frame["error"]["code"] == -32002 {
                refused += 1;
            } else {
                assert!(frame["result"]["echo"].is_string(), "{frame}");
                answered += 1;
            }
        }
        (refused, answered)
    });
    let started = Instant::now();
    let padding = "x".repeat(117);
    for i in 0..N {
        // Unique and 128 bytes long: the longest the trail keeps.
        let method = format!("{i:010}-{padding}");
        let frame = json!({"jsonrpc": "2.0", "id": i, "method": method}).to_string();
        sink.feed(Message::Text(frame.into())).await.unwrap();
        if i % 256 == 255 {
            sink.flush().await.unwrap();
        }
    }
    sink.flush().await.unwrap();
    let (refused, answered) = tokio::time::timeout(Duration::from_secs(120), reader)
        .await
        .expect("every request is answered")
        .unwrap();
    let flood = started.elapsed();
    assert!(refused > N * 9 / 10, "{refused} refused, {answered} answered");
    assert_eq!(
        relay.metric("mcp_relay_audit_refusals_total").await as usize,
        refused
    );
    // The tallies are written every 10 s.
    tokio::time::sleep(mcp_relay::audit::REFUSAL_INTERVAL + Duration::from_secs(2)).await;
    let grown = dir_bytes(dir.path()).saturating_sub(before) as f64 / MIB;
    drop(relay);

    let store =
        mcp_relay::store::Store::open(&mcp_relay::store::StateSpec::Sqlite(
            dir.path().join("state.db"),
        ))
        .unwrap();
    let records = store
        .query_audit(&mcp_relay::store::AuditQuery {
            limit: usize::MAX,
            ..Default::default()
        })
        .unwrap();
    let tallies: Vec<_> = records.iter().filter(|r| r.kind == "refused").collect();
    let requests = records.iter().filter(|r| r.kind == "request").count();
    let counted: usize = tallies
        .iter()
        .map(|r| {
            let detail = r.detail.as_deref().unwrap();
            assert!(detail.contains("(rate limit)"), "{detail}");
            detail.split(' ').next().unwrap().parse::<usize>().unwrap()
        })
        .sum();
    eprintln!(
        "{N} requests in {:.1} s: {refused} refused, {answered} answered; the trail holds \
         {requests} request records and {} refused tallies counting {counted}; the state file \
         grew {grown:.2} MiB",
        flood.as_secs_f64(),
        tallies.len()
    );
    assert_eq!(counted, refused, "every refusal is counted once");
    assert_eq!(requests, answered, "every admitted request is recorded");
    // One tally per 10 s interval the flood touched (one connection, one reason).
    let intervals = (flood.as_secs_f64() / 10.0).ceil() as usize + 1;
    assert!(tallies.len() <= intervals, "{} tallies", tallies.len());
    assert!(tallies
        .iter()
        .all(|t| t.connection_id.is_some() && t.method.as_ref().unwrap().len() == 128));
    assert!(grown <= 10.0, "the state file grew {grown:.1} MiB");
}
