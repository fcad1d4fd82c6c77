//! Blueprint MCP's packaged extension (v1.9.21, PRO mode) against the relay, scripted: it opens
//! two sockets about 20 ms apart, always sends on its newest socket (so socket A's
//! `authenticate` is answered on socket B), and treats the close of *any* of its sockets as its
//! own disconnect (its next request is lost and it reconnects 5 s later). Before the relay knew
//! this, socket A timed out after `--auth-timeout`, was closed with 1008, and about one run in
//! six lost requests.

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use futures_util::{SinkExt, StreamExt};
use mcp_relay::auth::Role;
use serde_json::{json, Value};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// What the scripted extension saw.
#[derive(Default)]
struct Seen {
    /// Closes of any of its sockets: each one is a disconnect for Blueprint.
    closes: AtomicUsize,
    /// `authenticated` notices, per socket (A, B).
    authenticated: [AtomicUsize; 2],
    answered: AtomicUsize,
}

/// Reads `authenticate` off a fresh socket.
async fn authenticate_request(socket: &mut Socket) -> Value {
    loop {
        let Some(Ok(Message::Text(text))) = socket.next().await else {
            panic!("socket closed before authenticate");
        };
        let frame: Value = serde_json::from_str(&text).unwrap();
        if frame["method"] == "authenticate" {
            return frame;
        }
    }
}

fn answer(request: &Value) -> Message {
    Message::Text(
        json!({"id": request["id"], "result": {
            "name": "Blueprint",
            "access_token": token("bp-user", Some(Role::Extension)),
            "client_id": "blueprint-client",
            "version": "1.9.21",
        }})
        .to_string()
        .into(),
    )
}

/// Watches socket A (which Blueprint never sends on) for notices and its close.
fn watch(mut read: futures_util::stream::SplitStream<Socket>, seen: Arc<Seen>, index: usize) {
    tokio::spawn(async move {
        while let Some(Ok(message)) = read.next().await {
            match message {
                Message::Text(text) if text.contains("\"authenticated\"") => {
                    seen.authenticated[index].fetch_add(1, Ordering::SeqCst);
                }
                Message::Close(_) => break,
                _ => {}
            }
        }
        seen.closes.fetch_add(1, Ordering::SeqCst);
    });
}

/// Opens A, then B 20 ms later, and answers both `authenticate` requests on B, A's first
/// (`a_first`) or B's first. B answers every forwarded request; returns once B is
/// authenticated.
async fn blueprint(url: &str, a_first: bool) -> Arc<Seen> {
    let seen = Arc::new(Seen::default());
    let (mut a, _) = tokio_tungstenite::connect_async(url).await.unwrap();
    a.send(Message::Text(
        r#"{"method":"build_info","params":{"version":"1.9.21"}}"#.into(),
    ))
    .await
    .unwrap();
    let a_auth = authenticate_request(&mut a).await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    let (mut b, _) = tokio_tungstenite::connect_async(url).await.unwrap();
    let b_auth = authenticate_request(&mut b).await;
    let (a_write, a_read) = a.split();
    watch(a_read, Arc::clone(&seen), 0);
    // Blueprint keeps A's write half but never uses it again.
    std::mem::forget(a_write);
    let (first, second) = if a_first {
        (&a_auth, &b_auth)
    } else {
        (&b_auth, &a_auth)
    };
    b.send(answer(first)).await.unwrap();
    b.send(answer(second)).await.unwrap();
    let (mut b_write, mut b_read) = b.split();
    let (ready_tx, mut ready) = mpsc::channel(1);
    let b_seen = Arc::clone(&seen);
    tokio::spawn(async move {
        while let Some(Ok(message)) = b_read.next().await {
            let Message::Text(text) = message else {
                if matches!(message, Message::Close(_)) {
                    break;
                }
                continue;
            };
            let frame: Value = serde_json::from_str(&text).unwrap();
            if frame["method"] == "authenticated" {
                b_seen.authenticated[1].fetch_add(1, Ordering::SeqCst);
                let _ = ready_tx.try_send(());
            } else if frame.get("id").is_some() && frame.get("method").is_some() {
                let reply = json!({"id": frame["id"], "result": {"echo": frame["params"]}});
                if b_write
                    .send(Message::Text(reply.to_string().into()))
                    .await
                    .is_err()
                {
                    break;
                }
                b_seen.answered.fetch_add(1, Ordering::SeqCst);
            }
        }
        b_seen.closes.fetch_add(1, Ordering::SeqCst);
    });
    tokio::time::timeout(WAIT, ready.recv())
        .await
        .expect("B authenticated");
    seen
}

/// Requests at `rate` per second for `duration` through one MCP client; returns how many were
/// answered with their own echo.
async fn drive(relay: &mcp_relay::server::RunningRelay, duration: Duration, rate: u32) -> usize {
    let mut mcp = Mcp::connect(relay, "bp-user").await;
    let listed = mcp.call("list_extensions", json!({})).await;
    let extensions = listed["result"]["extensions"].as_array().unwrap().clone();
    assert_eq!(extensions.len(), 1, "one browser, not two: {listed}");
    mcp.connect_to(extensions[0]["id"].as_str().unwrap()).await;
    let mut tick = tokio::time::interval(Duration::from_secs(1) / rate);
    let started = Instant::now();
    let mut answered = 0;
    let mut n = 0u64;
    while started.elapsed() < duration {
        tick.tick().await;
        n += 1;
        let response = mcp.call("browser_tabs", json!({"n": n})).await;
        if response["result"]["echo"]["n"] == n {
            answered += 1;
        } else {
            eprintln!("request {n} lost: {response}");
        }
    }
    answered
}

fn secs_from_env(default: u64) -> Duration {
    Duration::from_secs(
        std::env::var("BLUEPRINT_SECS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(default),
    )
}

#[tokio::test]
async fn blueprint_answering_the_first_sockets_authenticate_on_the_second_loses_nothing() {
    // A short auth timeout: before the fix, socket A would be closed 2 s in.
    let relay = relay_with(|c| c.auth_timeout = Duration::from_secs(2)).await;
    let seen = blueprint(&relay.url("/extension"), true).await;
    let duration = secs_from_env(60);
    let answered = drive(&relay, duration, 5).await;
    let expected = (duration.as_secs() * 5) as usize;
    assert!(
        answered + 1 >= expected,
        "{answered} of {expected} answered"
    );
    assert_eq!(
        seen.closes.load(Ordering::SeqCst),
        0,
        "no socket was closed: Blueprint saw no disconnect, so it never reconnected"
    );
    assert_eq!(seen.answered.load(Ordering::SeqCst), answered);
    assert_eq!(
        seen.authenticated[0].load(Ordering::SeqCst),
        1,
        "A is authenticated"
    );
    assert_eq!(
        seen.authenticated[1].load(Ordering::SeqCst),
        1,
        "B is authenticated"
    );
}

#[tokio::test]
async fn an_answer_for_the_first_socket_after_the_second_authenticated_still_adopts_it() {
    let relay = relay_with(|c| c.auth_timeout = Duration::from_secs(2)).await;
    let seen = blueprint(&relay.url("/extension"), false).await;
    let answered = drive(&relay, Duration::from_secs(4), 5).await;
    assert!(answered >= 19, "{answered} answered");
    assert_eq!(seen.closes.load(Ordering::SeqCst), 0);
    assert_eq!(seen.authenticated[0].load(Ordering::SeqCst), 1);
}
