//! The load itself: fake extensions that answer every request with a payload of a chosen
//! size, and MCP clients that drive forwarded requests closed-loop or open-loop.
//!
//! The same code drives the relay and the baseline forwarder; only the URLs and the handshake
//! differ. Each request's id is the time it was actually sent (nanoseconds since the run
//! started), so a response's latency needs no shared state and is measured from the real send,
//! not from the scheduled one.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use hdrhistogram::Histogram;
use serde_json::json;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::Message;

use mcp_relay_wire::token::{mint_hs256, MintClaims, Role};

pub(crate) type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Where the load goes.
#[derive(Clone)]
pub(crate) enum Target {
    /// One relay node or several cluster nodes (`ws://addr`), with the HS256 secret to mint
    /// tokens. MCP client `i` connects to `mcp_bases[i % len]`, extension `j` to
    /// `extension_bases[j % len]`, so the lists decide which pairs share a node.
    Relay {
        mcp_bases: Vec<String>,
        extension_bases: Vec<String>,
        secret: String,
    },
    /// `ws://addr` of the baseline forwarder.
    Baseline { base: String },
}

impl Target {
    /// One relay node for both sides.
    pub(crate) fn relay(base: String, secret: String) -> Target {
        Target::Relay {
            mcp_bases: vec![base.clone()],
            extension_bases: vec![base],
            secret,
        }
    }
}

/// How requests are paced.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Pacing {
    /// Keep this many requests in flight per client.
    Closed { in_flight: usize },
    /// Send at this total rate (requests/s) spread over all clients.
    Open { rate: f64 },
}

/// What one run measured on the client side.
pub(crate) struct Outcome {
    pub requests: u64,
    pub response_bytes: u64,
    pub elapsed: Duration,
    pub latency_ns: Histogram<u64>,
}

fn config(max: usize) -> WebSocketConfig {
    WebSocketConfig::default()
        .max_message_size(Some(max))
        .max_frame_size(Some(max))
}

pub(crate) async fn connect(url: &str) -> anyhow::Result<Socket> {
    let (ws, _) =
        tokio_tungstenite::connect_async_with_config(url, Some(config(64 << 20)), true).await?;
    Ok(ws)
}

fn token(secret: &str, user: &str, role: Role) -> String {
    mint_hs256(
        secret.as_bytes(),
        &MintClaims::new(user, Some(role), Duration::from_secs(3600)),
    )
}

/// Reads the id of a response frame written by the relay or the fake extension, both of which
/// start with `{"jsonrpc":"2.0","id":`; avoids parsing megabytes of payload in the generator.
fn response_id(text: &str) -> Option<u64> {
    let rest = text.strip_prefix(r#"{"jsonrpc":"2.0","id":"#)?;
    let end = rest.find(|c: char| !c.is_ascii_digit())?;
    rest[..end].parse().ok()
}

/// How a fake extension answers `authenticate`.
pub(crate) struct ExtensionAuth {
    pub name: String,
    pub client_id: String,
    pub token: String,
}

/// A fake extension: authenticates (relay only), then answers every request with `payload`
/// bytes of result data. Runs until its socket closes.
pub(crate) async fn fake_extension(mut ws: Socket, auth: Option<ExtensionAuth>, payload: usize) {
    let tail = format!(r#","result":{{"data":"{}"}}}}"#, "x".repeat(payload));
    while let Some(Ok(message)) = ws.next().await {
        let Message::Text(text) = message else {
            continue;
        };
        #[derive(serde::Deserialize)]
        struct Envelope<'a> {
            #[serde(borrow)]
            id: Option<&'a serde_json::value::RawValue>,
            method: Option<String>,
        }
        let Ok(envelope) = serde_json::from_str::<Envelope<'_>>(&text) else {
            continue;
        };
        let (Some(id), Some(method)) = (envelope.id, envelope.method) else {
            continue;
        };
        let reply = if method == "authenticate" {
            let Some(auth) = &auth else {
                continue;
            };
            json!({"jsonrpc": "2.0", "id": id, "result": {"name": auth.name,
                "access_token": auth.token, "client_id": auth.client_id}})
            .to_string()
        } else {
            let mut reply = String::with_capacity(tail.len() + 40);
            reply.push_str(r#"{"jsonrpc":"2.0","id":"#);
            reply.push_str(id.get());
            reply.push_str(&tail);
            reply
        };
        if ws.send(Message::Text(reply.into())).await.is_err() {
            break;
        }
    }
}

/// Opens the extension side and the MCP side of one client's path through `target`; returns
/// the MCP socket ready for forwarded requests, and spawns the extension (if it is new).
pub(crate) async fn open_pair(
    target: &Target,
    client: usize,
    extensions: usize,
    payload: usize,
    spawned_extensions: &tokio::sync::Mutex<Vec<bool>>,
) -> anyhow::Result<Socket> {
    match target {
        Target::Baseline { base } => {
            let ext = connect(&format!("{base}/pair/{client}/extension")).await?;
            tokio::spawn(fake_extension(ext, None, payload));
            // Give the forwarder a moment to park the extension side before the MCP side joins.
            tokio::time::sleep(Duration::from_millis(2)).await;
            Ok(connect(&format!("{base}/pair/{client}/mcp")).await?)
        }
        Target::Relay {
            mcp_bases,
            extension_bases,
            secret,
        } => {
            let which = client % extensions;
            let user = format!("bench-user-{which}");
            {
                let mut spawned = spawned_extensions.lock().await;
                if !spawned[which] {
                    spawned[which] = true;
                    let ext_base = &extension_bases[which % extension_bases.len()];
                    let ext = connect(&format!("{ext_base}/extension")).await?;
                    let auth = ExtensionAuth {
                        name: format!("bench {which}"),
                        client_id: format!("bench-{which}"),
                        token: token(secret, &user, Role::Extension),
                    };
                    tokio::spawn(fake_extension(ext, Some(auth), payload));
                }
            }
            let base = &mcp_bases[client % mcp_bases.len()];
            let mut mcp = connect(&format!("{base}/mcp")).await?;
            let handshake = json!({"jsonrpc": "2.0", "id": 1, "method": "mcp_handshake",
                "params": {"access_token": token(secret, &user, Role::Mcp)}});
            mcp.send(Message::Text(handshake.to_string().into()))
                .await?;
            expect_result(&mut mcp).await?;
            // The extension may still be authenticating: retry the listing briefly.
            let deadline = Instant::now() + Duration::from_secs(10);
            let extension_id = loop {
                let list = json!({"jsonrpc": "2.0", "id": 2, "method": "list_extensions"});
                mcp.send(Message::Text(list.to_string().into())).await?;
                let result = expect_result(&mut mcp).await?;
                if let Some(id) = result["extensions"][0]["id"].as_str() {
                    break id.to_owned();
                }
                anyhow::ensure!(Instant::now() < deadline, "extension never appeared");
                tokio::time::sleep(Duration::from_millis(20)).await;
            };
            let connect = json!({"jsonrpc": "2.0", "id": 3, "method": "connect",
                "params": {"extension_id": extension_id}});
            mcp.send(Message::Text(connect.to_string().into())).await?;
            expect_result(&mut mcp).await?;
            Ok(mcp)
        }
    }
}

/// Waits for the next response (skipping notifications) and returns its result.
async fn expect_result(ws: &mut Socket) -> anyhow::Result<serde_json::Value> {
    loop {
        let Some(message) = ws.next().await else {
            anyhow::bail!("socket closed during setup");
        };
        let Message::Text(text) = message? else {
            continue;
        };
        let value: serde_json::Value = serde_json::from_str(&text)?;
        if value.get("method").is_some() {
            continue;
        }
        if let Some(error) = value.get("error") {
            anyhow::bail!("setup failed: {error}");
        }
        return Ok(value["result"].clone());
    }
}

/// Drives one MCP socket for `duration` and returns what it measured. `epoch` is shared by
/// all clients so ids (send times) are comparable.
pub(crate) async fn drive(
    ws: Socket,
    pacing: Pacing,
    clients: usize,
    request_payload: usize,
    duration: Duration,
    epoch: Instant,
) -> Outcome {
    let (mut sink, mut stream) = ws.split();
    let params = format!(r#"{{"data":"{}"}}"#, "y".repeat(request_payload));
    let request = move |id: u64| {
        format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"bench","params":{params}}}"#)
    };
    let mut histogram = Histogram::<u64>::new_with_bounds(1_000, 120_000_000_000, 3).unwrap();
    let mut requests = 0u64;
    let mut response_bytes = 0u64;
    let start = Instant::now();
    let stop_at = start + duration;
    let now_id = move || epoch.elapsed().as_nanos() as u64;
    let record = |text: &str, histogram: &mut Histogram<u64>| -> bool {
        match response_id(text) {
            Some(sent) => {
                let latency = (epoch.elapsed().as_nanos() as u64).saturating_sub(sent);
                let _ = histogram.record(latency.max(1_000));
                true
            }
            None => false,
        }
    };
    match pacing {
        Pacing::Closed { in_flight } => {
            for _ in 0..in_flight {
                let _ = sink.send(Message::Text(request(now_id()).into())).await;
            }
            let mut outstanding = in_flight;
            while outstanding > 0 {
                let next = tokio::time::timeout_at(
                    (stop_at + Duration::from_secs(5)).into(),
                    stream.next(),
                )
                .await;
                let Ok(Some(Ok(Message::Text(text)))) = next else {
                    if matches!(next, Ok(Some(Ok(_)))) {
                        continue;
                    }
                    break;
                };
                if !record(&text, &mut histogram) {
                    continue;
                }
                requests += 1;
                response_bytes += text.len() as u64;
                if Instant::now() < stop_at {
                    let _ = sink.send(Message::Text(request(now_id()).into())).await;
                } else {
                    outstanding -= 1;
                }
            }
        }
        Pacing::Open { rate } => {
            let per_client = (rate / clients as f64).max(0.1);
            let interval = Duration::from_secs_f64(1.0 / per_client);
            let sender = tokio::spawn(async move {
                // Start at a random-ish offset so clients do not fire in lockstep.
                let mut next = Instant::now() + interval.mul_f64((now_id() % 1000) as f64 / 1000.0);
                let mut sent = 0u64;
                while next < stop_at {
                    tokio::time::sleep_until(next.into()).await;
                    if sink
                        .send(Message::Text(request(now_id()).into()))
                        .await
                        .is_err()
                    {
                        break;
                    }
                    sent += 1;
                    next += interval;
                }
                (sent, sink)
            });
            let deadline = stop_at + Duration::from_secs(5);
            let mut received = 0u64;
            let mut expected = u64::MAX;
            let mut sender = Some(sender);
            while received < expected {
                if let Some(handle) = sender.as_mut() {
                    if handle.is_finished() {
                        expected = handle.await.map(|(sent, _)| sent).unwrap_or(0);
                        sender = None;
                        continue;
                    }
                }
                let next = tokio::time::timeout_at(
                    deadline
                        .min(Instant::now() + Duration::from_millis(50))
                        .into(),
                    stream.next(),
                )
                .await;
                match next {
                    Ok(Some(Ok(Message::Text(text)))) => {
                        if record(&text, &mut histogram) {
                            received += 1;
                            response_bytes += text.len() as u64;
                        }
                    }
                    Ok(Some(Ok(_))) => {}
                    Ok(_) => break,
                    Err(_) if Instant::now() >= deadline => break,
                    Err(_) => {}
                }
            }
            requests = received;
        }
    }
    Outcome {
        requests,
        response_bytes,
        elapsed: start.elapsed().min(duration + Duration::from_secs(5)),
        latency_ns: histogram,
    }
}

/// Runs `clients` MCP clients against `target` and merges what they measured. `started` is
/// called once every socket is set up, as the measured window begins (a profiler's hook).
#[allow(clippy::too_many_arguments)]
pub(crate) async fn run(
    target: &Target,
    extensions: usize,
    clients: usize,
    pacing: Pacing,
    request_payload: usize,
    response_payload: usize,
    duration: Duration,
    started: impl FnOnce(),
) -> anyhow::Result<Outcome> {
    let spawned = Arc::new(tokio::sync::Mutex::new(vec![false; extensions.max(1)]));
    let mut sockets = Vec::with_capacity(clients);
    for client in 0..clients {
        sockets.push(
            open_pair(
                target,
                client,
                extensions.max(1),
                response_payload,
                &spawned,
            )
            .await?,
        );
    }
    let epoch = Instant::now();
    started();
    let tasks: Vec<_> = sockets
        .into_iter()
        .map(|ws| tokio::spawn(drive(ws, pacing, clients, request_payload, duration, epoch)))
        .collect();
    let mut merged = Outcome {
        requests: 0,
        response_bytes: 0,
        elapsed: Duration::ZERO,
        latency_ns: Histogram::new_with_bounds(1_000, 120_000_000_000, 3).unwrap(),
    };
    for task in tasks {
        let outcome = task.await?;
        merged.requests += outcome.requests;
        merged.response_bytes += outcome.response_bytes;
        merged.elapsed = merged.elapsed.max(outcome.elapsed);
        merged.latency_ns.add(&outcome.latency_ns)?;
    }
    // Throughput over the measured window, not the drain after it.
    merged.elapsed = duration;
    Ok(merged)
}
