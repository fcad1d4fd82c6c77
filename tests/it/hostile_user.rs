//! Issue 24: what one authenticated user can cost the relay. Each test drives the relay binary
//! (a child process, so its files, memory and descriptors are its own) over loopback sockets as
//! an attacker holding one ordinary user's token would, and asserts the bound; `docs/SECURITY.md`
//! records the figures they print (`-- --nocapture`; `MCP_RELAY_TEST_BINARY=target/release/mcp-relay`
//! measures the release build).

use crate::common;

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
    assert!(
        refused > N * 9 / 10,
        "{refused} refused, {answered} answered"
    );
    assert_eq!(
        relay.metric("mcp_relay_audit_refusals_total").await as usize,
        refused
    );
    // The tallies are written every 10 s.
    tokio::time::sleep(mcp_relay::operator::audit::REFUSAL_INTERVAL + Duration::from_secs(2)).await;
    let grown = dir_bytes(dir.path()).saturating_sub(before) as f64 / MIB;
    drop(relay);

    let store = mcp_relay::operator::store::Store::open(
        &mcp_relay::operator::store::StateSpec::Sqlite(dir.path().join("state.db")),
    )
    .await
    .unwrap();
    let records = store
        .query_audit(&mcp_relay::operator::store::AuditQuery {
            limit: usize::MAX,
            ..Default::default()
        })
        .await
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

/// Sends one HTTP/1.1 request on a new connection that stays open (keep-alive) and reads the
/// status line and headers only: how a host holds a GET stream, or an attacker a connection.
async fn open_request(
    addr: std::net::SocketAddr,
    method: &str,
    headers: &[(&str, &str)],
) -> (u16, tokio::net::TcpStream) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut request = format!("{method} /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 0\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    let mut socket = tokio::net::TcpStream::connect(addr).await.unwrap();
    socket.write_all(request.as_bytes()).await.unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        let read = tokio::time::timeout(WAIT, socket.read(&mut byte))
            .await
            .expect("an answer's head")
            .unwrap();
        assert_eq!(
            read,
            1,
            "closed before the head: {:?}",
            String::from_utf8_lossy(&head)
        );
        head.push(byte[0]);
    }
    let status = String::from_utf8_lossy(&head)
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    (status, socket)
}

/// Another user is served while the flood holds its places: an extension and an MCP client
/// connect and talk, and `/healthz` answers.
async fn another_user_is_served(relay: &ChildRelay, user: &str) {
    let (status, _) = http_get(relay.addr, "/healthz").await;
    assert_eq!(status, 200);
    let extension = Extension::connect_url(
        &relay.url("/extension"),
        user,
        "Desktop",
        &format!("{user}-pc"),
    )
    .await;
    let extension_id = extension.extension_id.clone();
    let echo = extension.spawn_echo();
    let mut mcp = Mcp::connect_url(&relay.url("/mcp"), user).await;
    mcp.connect_to(&extension_id).await;
    let answer = mcp.call("tabs/list", json!({})).await;
    assert_eq!(answer["result"]["echo"], "tabs/list", "{answer}");
    echo.abort();
}

/// With `--max-mcp-clients-per-user 4` and `--max-connections 300`, one user's token:
/// 400 concurrent `initialize`s make at most 4 sessions (the place is taken before the session
/// exists); 50 GET streams on one session get 2 (the rest 429); 400 kept-open authenticated
/// connections get at most 8 (twice the per-user cap, counted in `--max-connections`); all the
/// while another user's extension, MCP socket and `/healthz` are served, and `/metrics` counts
/// each refusal by its bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_users_sessions_streams_and_connections_stay_within_their_caps_under_concurrency() {
    use common::http::{initialize, Session, ACCEPT};
    use mcp_relay::auth::Role;
    let relay = ChildRelay::start(&[
        "--max-mcp-clients-per-user",
        "4",
        "--max-connections",
        "300",
    ]);
    let addr = relay.addr;
    let alice = token("alice", Some(Role::Mcp));
    let auth = format!("Bearer {alice}");

    // Concurrent initializes.
    let answers =
        futures_util::future::join_all((0..400).map(|_| initialize(addr, &alice, "host", "/mcp")))
            .await;
    let created = answers.iter().filter(|a| a.status == 200).count();
    let statuses: std::collections::BTreeMap<u16, usize> =
        answers.iter().fold(Default::default(), |mut m, a| {
            *m.entry(a.status).or_default() += 1;
            m
        });
    eprintln!("400 concurrent initializes, cap 4: {statuses:?}");
    assert!(created <= 4, "{created} sessions made");
    assert_eq!(
        relay.metric("mcp_relay_http_mcp_sessions").await,
        created as f64
    );
    for answer in answers.iter().filter(|a| a.status == 200) {
        let id = answer.header("mcp-session-id").unwrap();
        let (status, _) = open_request(
            addr,
            "DELETE",
            &[("Authorization", &auth), ("Mcp-Session-Id", id)],
        )
        .await;
        assert!(status < 300, "{status}");
    }
    wait_until("every deleted session has ended", || async {
        relay.metric("mcp_relay_http_mcp_sessions").await == 0.0
    })
    .await;

    // GET streams on one session.
    let session = Session::open(addr, "alice", "host", "/mcp").await;
    let get = [
        ("Accept", "text/event-stream"),
        // The session's own token: a session answers only to the token that opened it.
        ("Authorization", session.auth.as_str()),
        ("Mcp-Session-Id", session.id.as_str()),
        ("MCP-Protocol-Version", "2025-06-18"),
    ];
    let streams =
        futures_util::future::join_all((0..50).map(|_| open_request(addr, "GET", &get))).await;
    let open = streams.iter().filter(|(s, _)| *s == 200).count();
    let refused = streams.iter().filter(|(s, _)| *s == 429).count();
    eprintln!("50 GET streams on one session: {open} open, {refused} refused");
    assert_eq!((open, refused), (2, 48));
    let metric = |bound: &str| format!("mcp_relay_http_mcp_refused_total{{bound=\"{bound}\"}}");
    let per_session = relay.metric(&metric("streams_per_session")).await;
    let per_user = relay.metric(&metric("connections_per_user")).await;
    // Each GET came on its own connection: those beyond the user's eight were refused first.
    assert_eq!(per_session + per_user, 48.0);
    let _streams: Vec<_> = streams.into_iter().filter(|(s, _)| *s == 200).collect();

    // Kept-open authenticated connections (each asks for a session that does not exist).
    let mut held = Vec::new();
    let mut statuses = std::collections::BTreeMap::<u16, usize>::new();
    for _ in 0..400 {
        let (status, socket) = open_request(
            addr,
            "POST",
            &[ACCEPT, ("Authorization", &auth), ("Mcp-Session-Id", "nope")],
        )
        .await;
        *statuses.entry(status).or_default() += 1;
        held.push(socket);
    }
    eprintln!("400 kept-open connections of one user: {statuses:?}");
    // Two GET streams already hold two of the user's eight.
    assert_eq!(statuses.get(&404), Some(&6), "{statuses:?}");
    assert_eq!(statuses.get(&429), Some(&394), "{statuses:?}");
    another_user_is_served(&relay, "bob").await;
    assert!(relay.metric(&metric("sessions_per_user")).await > 0.0);
    assert_eq!(
        relay.metric(&metric("connections_per_user")).await,
        per_user + 394.0
    );
    drop(held);
}

/// A token of `user` with `role`, `jti` and a life of `life`.
fn token_with(
    user: &str,
    role: Option<mcp_relay::auth::Role>,
    jti: &str,
    life: Duration,
) -> String {
    let mut claims = mcp_relay::auth::MintClaims::new(user, role, life);
    claims.jti = jti.to_owned();
    mcp_relay::auth::mint_hs256(SECRET.as_bytes(), &claims)
}

/// Reads a held response until its body ends (the last chunk, or the connection closing);
/// how long that took, or `None` if it was still open after `limit`.
async fn body_ends_within(socket: &mut tokio::net::TcpStream, limit: Duration) -> Option<Duration> {
    use tokio::io::AsyncReadExt;
    let started = Instant::now();
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let left = limit.checked_sub(started.elapsed())?;
        match tokio::time::timeout(left, socket.read(&mut buf)).await {
            Err(_) => return None,
            Ok(Ok(0)) | Ok(Err(_)) => return Some(started.elapsed()),
            Ok(Ok(n)) => {
                seen.extend_from_slice(&buf[..n]);
                if seen.ends_with(b"\r\n0\r\n\r\n") || seen == b"0\r\n\r\n" {
                    return Some(started.elapsed());
                }
            }
        }
    }
}

/// A GET stream of `session` held open with `auth`.
async fn get_stream(
    addr: std::net::SocketAddr,
    auth: &str,
    session: &str,
) -> tokio::net::TcpStream {
    let (status, socket) = open_request(
        addr,
        "GET",
        &[
            ("Accept", "text/event-stream"),
            ("Authorization", auth),
            ("Mcp-Session-Id", session),
            ("MCP-Protocol-Version", "2025-06-18"),
        ],
    )
    .await;
    assert_eq!(status, 200);
    socket
}

/// Two sessions of one user, opened with two tokens. A session answers only to the token that
/// opened it (the user's other token of the same age gets 404). Revoking the first token's
/// `jti` ends its session and both its GET streams within a second (the session then answers
/// 404); the other session and its stream are untouched. A session whose token expires ends,
/// stream included, within a second of `exp` + `--token-expiry-grace`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revocation_and_expiry_end_http_sessions_and_their_streams_within_a_second() {
    use common::http::Session;
    use mcp_relay::auth::Role;
    let relay = ChildRelay::start(&["--token-expiry-grace", "0s"]);
    let addr = relay.addr;
    let hour = Duration::from_secs(3600);
    let (a, b) = (
        token_with("alice", Some(Role::Mcp), "alice-a", hour),
        token_with("alice", Some(Role::Mcp), "alice-b", hour),
    );
    let (auth_a, auth_b) = (format!("Bearer {a}"), format!("Bearer {b}"));
    let session_a = Session::open_with(addr, &a, "host-a", "/mcp").await;
    let session_b = Session::open_with(addr, &b, "host-b", "/mcp").await;
    let ping = json!({"jsonrpc": "2.0", "id": 7, "method": "ping"});
    assert_eq!(session_a.post_as(&auth_b, &ping).await.status, 404);
    assert_eq!(session_a.post(&ping).await.status, 200);
    let mut streams_a = vec![
        get_stream(addr, &auth_a, &session_a.id).await,
        get_stream(addr, &auth_a, &session_a.id).await,
    ];
    let mut stream_b = get_stream(addr, &auth_b, &session_b.id).await;

    let admin = token_with("root", Some(Role::Admin), "admin", hour);
    let (status, body) = api(
        addr,
        "POST",
        "/api/v1/tokens/revoke",
        Some(&admin),
        Some(json!({"jti": "alice-a"})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let revoked = Instant::now();
    for stream in &mut streams_a {
        let took = body_ends_within(stream, Duration::from_secs(3)).await;
        let took = took.expect("the revoked token's stream ends");
        assert!(took < Duration::from_secs(1), "{took:?}");
    }
    let closed_after = revoked.elapsed();
    assert_eq!(
        session_a.post(&ping).await.status,
        401,
        "the token is refused"
    );
    assert_eq!(
        session_a.post_as(&auth_b, &ping).await.status,
        404,
        "the session is gone"
    );
    assert!(body_ends_within(&mut stream_b, Duration::from_millis(600))
        .await
        .is_none());
    assert_eq!(session_b.post(&ping).await.status, 200);

    // Expiry: a token valid for 2 s, no grace.
    let short = token_with("carol", Some(Role::Mcp), "carol-1", Duration::from_secs(2));
    let session_c = Session::open_with(addr, &short, "host-c", "/mcp").await;
    let exp = {
        use base64::Engine;
        let claims = short.split('.').nth(1).unwrap();
        let claims = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(claims)
            .unwrap();
        serde_json::from_slice::<Value>(&claims).unwrap()["exp"]
            .as_u64()
            .unwrap()
    };
    let mut stream_c = get_stream(addr, &format!("Bearer {short}"), &session_c.id).await;
    assert!(body_ends_within(&mut stream_c, Duration::from_secs(5))
        .await
        .is_some());
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let after_exp = now - exp as f64;
    eprintln!(
        "revoked jti: both GET streams ended {:.0} ms after the revocation's answer; expired \
         token: the stream ended {after_exp:.2} s after exp (grace 0)",
        closed_after.as_secs_f64() * 1000.0
    );
    assert!((0.0..1.0).contains(&after_exp), "{after_exp}");
}

/// An MCP handshake with `token`: `Ok` or the refusal's message.
async fn handshake(relay: &ChildRelay, token: &str) -> Result<(), String> {
    let mut client = Client::connect(&relay.url("/mcp")).await;
    let answer = client
        .call(
            json!(1),
            "mcp_handshake",
            json!({"access_token": token, "client_id": "host"}),
        )
        .await;
    client.close().await;
    if answer["result"]["authenticated"] == true {
        Ok(())
    } else {
        Err(answer["error"]["message"].as_str().unwrap_or("").to_owned())
    }
}

/// A token of `user` issued `ahead` seconds in the future.
fn token_issued_ahead(user: &str, ahead: u64) -> String {
    let mut claims = mcp_relay::auth::MintClaims::new(
        user,
        Some(mcp_relay::auth::Role::Mcp),
        Duration::from_secs(7200),
    );
    claims.iat += ahead;
    mcp_relay::auth::mint_hs256(SECRET.as_bytes(), &claims)
}

/// A user's own MCP token asks for a cutoff in 2100: it is clamped to now, so the user's next
/// token works. A token issued an hour in the future is refused (30 s ahead passes: clock
/// skew). An admin lowers and removes a cutoff (a user may not), and a cutoff of 2100 already
/// in a state file (written before the clamp) counts from the relay's start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cutoff_cannot_lie_in_the_future_and_an_admin_can_lower_or_remove_it() {
    use mcp_relay::auth::Role;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("state.db");
    let state = format!("sqlite:{}", file.display());
    let hour = Duration::from_secs(3600);
    let old = {
        let mut claims = mcp_relay::auth::MintClaims::new("alice", Some(Role::Mcp), hour);
        claims.iat -= 10;
        claims.jti = "old".into();
        mcp_relay::auth::mint_hs256(SECRET.as_bytes(), &claims)
    };
    let admin = token_with("root", Some(Role::Admin), "admin", hour);
    {
        let relay = ChildRelay::start(&["--state", &state]);
        let (status, body) = api(
            relay.addr,
            "POST",
            "/api/v1/tokens/revoke",
            Some(&old),
            Some(json!({"user_id": "alice", "issued_before": "2100-01-01T00:00:00Z"})),
        )
        .await;
        assert_eq!(status, 200, "{body}");
        assert!(body["issued_before"].as_str().unwrap() < "2100", "{body}");
        assert_eq!(
            handshake(&relay, &old).await,
            Err("Authentication failed: revoked".into())
        );
        // Issued a second after the cutoff (iat is in whole seconds): a second ahead of now
        // rather than a second's sleep, well within the allowed skew.
        let fresh = token_issued_ahead("alice", 1);
        assert_eq!(handshake(&relay, &fresh).await, Ok(()));

        // Issued in the future.
        let ahead = handshake(&relay, &token_issued_ahead("alice", 3600)).await;
        assert!(ahead.unwrap_err().contains("issued in the future"));
        assert_eq!(
            handshake(&relay, &token_issued_ahead("alice", 30)).await,
            Ok(())
        );

        // Only an admin lowers or removes a cutoff.
        let path = "/api/v1/users/alice/cutoff";
        let remove = json!({"issued_before": null});
        let (status, _) = api(relay.addr, "PUT", path, Some(&fresh), Some(remove.clone())).await;
        assert_eq!(status, 403);
        let lower = json!({"issued_before": 1000});
        let (status, body) = api(relay.addr, "PUT", path, Some(&admin), Some(lower)).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(
            handshake(&relay, &old).await,
            Ok(()),
            "lowered below the old token"
        );
        let (status, _) = api(relay.addr, "PUT", path, Some(&admin), Some(remove)).await;
        assert_eq!(status, 200);
        assert_eq!(handshake(&relay, &old).await, Ok(()));
    }
    // A cutoff of 2100 written into the file (as before the clamp).
    {
        let store = mcp_relay::operator::store::Store::open(
            &mcp_relay::operator::store::StateSpec::Sqlite(file.clone()),
        )
        .await
        .unwrap();
        store.revoke_user("alice", 4_102_444_800).await.unwrap();
    }
    let relay = ChildRelay::start(&["--state", &state]);
    assert_eq!(
        handshake(&relay, &old).await,
        Err("Authentication failed: revoked".into())
    );
    // Issued a second after the clamped cutoff (see above).
    assert_eq!(
        handshake(&relay, &token_issued_ahead("alice", 1)).await,
        Ok(())
    );
}

/// Calls `browser_snapshot` in each of `sessions` while `extension` answers; returns the
/// `client_id`s of the `connection_opened`s the extension saw.
async fn client_ids_seen(
    sessions: &[&common::http::Session],
    extension: &mut Extension,
) -> Vec<String> {
    let calls = futures_util::future::join_all(
        sessions
            .iter()
            .map(|session| session.call(2, "browser_snapshot", json!({}))),
    );
    let browser = async {
        let (mut ids, mut answered) = (Vec::new(), 0);
        while answered < sessions.len() || ids.len() < sessions.len() {
            let frame = extension.client.recv().await;
            if frame["method"] == "connection_opened" {
                assert_eq!(frame["params"]["client_name"], "Claude Desktop");
                ids.push(frame["params"]["client_id"].as_str().unwrap().to_owned());
            } else if frame.get("id").is_some() && frame["method"] == "snapshot" {
                extension.reply(&frame, json!({"snapshot": "ok"})).await;
                answered += 1;
            }
        }
        ids
    };
    let (results, ids) = tokio::join!(calls, browser);
    for result in results {
        assert_ne!(result["isError"], true, "{result}");
    }
    ids
}

/// Two HTTP sessions of one user from hosts with the same name, URL and `Host`: the browser's
/// owner sees two different `client_id`s (random, `http-` + a v4 UUID), so an Allow or Deny
/// given to one is never the other's; a WebSocket client declaring one of them (or any
/// `http-` id) is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_http_session_is_its_own_assistant_whose_client_id_no_socket_can_claim() {
    use common::http::Session;
    let relay = ChildRelay::start(&[]);
    let mut extension =
        Extension::connect_url(&relay.url("/extension"), "alice", "Chrome", "laptop").await;
    let first = Session::open(relay.addr, "alice", "Claude Desktop", "/mcp").await;
    let second = Session::open(relay.addr, "alice", "Claude Desktop", "/mcp").await;
    let ids = client_ids_seen(&[&first, &second], &mut extension).await;
    eprintln!("two sessions of one host: client ids {ids:?}");
    assert_ne!(ids[0], ids[1]);
    for id in &ids {
        let uuid = id.strip_prefix("http-").expect("an http- id");
        assert_eq!(uuid::Uuid::parse_str(uuid).unwrap().get_version_num(), 4);
    }
    for claimed in [ids[0].as_str(), "http-anything"] {
        let mut client = Client::connect(&relay.url("/mcp")).await;
        let answer = client
            .call(
                json!(1),
                "mcp_handshake",
                json!({"access_token": token("alice", Some(mcp_relay::auth::Role::Mcp)),
                       "client_id": claimed}),
            )
            .await;
        assert_eq!(answer["error"]["code"], -32602, "{answer}");
    }
}

/// At `trace` (the WebSocket library logs every frame whole at that level), an extension's
/// `authenticate` answer and an MCP client's `mcp_handshake` carry their tokens: neither token
/// appears in the relay's log, though the log is at trace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websocket_tokens_never_reach_the_log_even_at_trace() {
    use mcp_relay::auth::Role;
    let relay = ChildRelay::start_with(&[], &[("MCP_RELAY_LOG", "trace")], None);
    let hour = Duration::from_secs(3600);
    let extension_token = token_with("alice", Some(Role::Extension), "ext-jti", hour);
    let mcp_token = token_with("alice", Some(Role::Mcp), "mcp-jti", hour);
    let extension = Extension::authenticate(
        Client::connect(&relay.url("/extension")).await,
        "alice",
        "Chrome",
        "laptop",
        json!({ "access_token": extension_token }),
    )
    .await;
    let extension_id = extension.extension_id.clone();
    let mut mcp = Client::connect(&relay.url("/mcp")).await;
    let answer = mcp
        .call(
            json!(1),
            "mcp_handshake",
            json!({"access_token": mcp_token, "client_id": "host"}),
        )
        .await;
    assert_eq!(answer["result"]["authenticated"], true, "{answer}");
    let answer = mcp
        .call(json!(2), "connect", json!({"extension_id": extension_id}))
        .await;
    assert!(answer["result"]["connection_id"].is_string(), "{answer}");
    // The browser leaves: its end is the last line the relay logs of this exchange, and the
    // child's log is read on a thread of its own.
    drop(extension);
    wait_until("the log holds the browser's end", || async {
        relay.log().contains("extension socket ended")
    })
    .await;
    let log = relay.log();
    assert!(log.contains("DEBUG"), "the log is on below info:\n{log}");
    let signature = |t: &str| t.rsplit('.').next().unwrap().to_owned();
    for secret in [&extension_token, &mcp_token] {
        assert!(!log.contains(secret.as_str()), "a token is in the log");
        assert!(
            !log.contains(&signature(secret)),
            "a token's signature is in the log"
        );
    }
    eprintln!("{} lines at trace, no token", log.lines().count());
}

/// With `--require-approval`, a browser authenticated with a role-less token (what
/// `mcp-relay token` mints by default, accepted on both endpoints) cannot be approved with that
/// same token through the admin API: 403; the user's MCP token approves it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_role_less_token_cannot_approve_the_browser_it_authenticates() {
    use mcp_relay::auth::Role;
    let relay = ChildRelay::start(&["--require-approval"]);
    let role_less = token("alice", None);
    let rogue = Extension::authenticate(
        Client::connect(&relay.url("/extension")).await,
        "alice",
        "Rogue",
        "rogue",
        json!({ "access_token": role_less }),
    )
    .await;
    let id = &rogue.extension_id;
    let path = format!("/api/v1/browsers/{id}/approve");
    let (status, body) = api(relay.addr, "POST", &path, Some(&role_less), None).await;
    assert_eq!(status, 403, "{body}");
    let mcp = token("alice", Some(Role::Mcp));
    let (status, body) = api(relay.addr, "POST", &path, Some(&mcp), None).await;
    assert_eq!(status, 200, "{body}");
}

/// One request to the dashboard; its status, headers (`name: value` lines) and body.
async fn dashboard(
    addr: std::net::SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<Value>,
) -> (u16, String, String) {
    let mut all = vec![("Content-Type", "application/json")];
    all.extend_from_slice(headers);
    let answer = common::http::http(addr, method, path, &all, body.as_ref()).await;
    let head = answer
        .headers
        .iter()
        .map(|(n, v)| format!("{n}: {v}\r\n"))
        .collect();
    (answer.status, head, answer.body)
}

/// Behind TLS (here a proxy that says so), the dashboard reads only its `__Host-` cookie: a
/// plain `mcp_relay_session` cookie with a valid session id, listed first or alone, signs
/// nobody in (a sibling domain or a plain-HTTP page can plant a plain cookie, not a
/// `__Host-` one).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_tls_only_the_host_prefixed_cookie_signs_in() {
    let relay = ChildRelay::start(&[]);
    let tls = ("X-Forwarded-Proto", "https");
    let mcp = token("alice", Some(mcp_relay::auth::Role::Mcp));
    let (status, head, _) = dashboard(
        relay.addr,
        "POST",
        "/dashboard/session",
        &[tls],
        Some(json!({ "token": mcp })),
    )
    .await;
    assert_eq!(status, 200);
    let cookie = head
        .lines()
        .find_map(|l| l.strip_prefix("set-cookie: "))
        .unwrap();
    let id = cookie.split(';').next().unwrap().split_once('=').unwrap().1;
    assert!(cookie.starts_with("__Host-mcp_relay_session="), "{cookie}");
    let me = |cookies: String| async move {
        dashboard(
            relay.addr,
            "GET",
            "/dashboard/session",
            &[tls, ("Cookie", &cookies)],
            None,
        )
        .await
        .0
    };
    assert_eq!(me(format!("__Host-mcp_relay_session={id}")).await, 200);
    assert_eq!(me(format!("mcp_relay_session={id}")).await, 401);
    let planted = format!("mcp_relay_session=0000; __Host-mcp_relay_session={id}");
    assert_eq!(
        me(planted).await,
        200,
        "the plain cookie listed first does not win"
    );
}

/// Dashboard sign-in from one address: 30 attempts with a wrong token at once, then a good
/// one. The first 10 (the burst) are checked and refused (401), the other 20 are throttled
/// (429) before any token is looked at; a second later a good token signs in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dashboard_sign_in_is_throttled_per_address() {
    let relay = ChildRelay::start(&[]);
    let wrong = format!("{}x", token("alice", Some(mcp_relay::auth::Role::Mcp)));
    let mut statuses = std::collections::BTreeMap::<u16, usize>::new();
    let started = Instant::now();
    for _ in 0..30 {
        let (status, _, _) = dashboard(
            relay.addr,
            "POST",
            "/dashboard/session",
            &[],
            Some(json!({ "token": wrong })),
        )
        .await;
        *statuses.entry(status).or_default() += 1;
    }
    eprintln!("30 sign-ins in {:?}: {statuses:?}", started.elapsed());
    assert_eq!(statuses.get(&401), Some(&10), "{statuses:?}");
    assert_eq!(statuses.get(&429), Some(&20), "{statuses:?}");
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let good = token("alice", Some(mcp_relay::auth::Role::Mcp));
    let (status, _, _) = dashboard(
        relay.addr,
        "POST",
        "/dashboard/session",
        &[],
        Some(json!({ "token": good })),
    )
    .await;
    assert_eq!(status, 200);
}

/// An MCP socket over `ws://` or, with `ca` (the dev CA's PEM), over `wss://localhost`,
/// handshaken as `user`.
async fn mcp_socket(relay: &ChildRelay, ca: Option<&str>, user: &str) -> Client {
    let ws = match ca {
        None => {
            tokio_tungstenite::connect_async(relay.url("/mcp"))
                .await
                .unwrap()
                .0
        }
        Some(ca) => {
            use rustls::pki_types::pem::PemObject;
            let mut roots = rustls::RootCertStore::empty();
            roots
                .add(rustls::pki_types::CertificateDer::from_pem_slice(ca.as_bytes()).unwrap())
                .unwrap();
            let config = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
                rustls::crypto::ring::default_provider(),
            ))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
            let url = format!("wss://localhost:{}/mcp", relay.addr.port());
            tokio_tungstenite::connect_async_tls_with_config(
                &url,
                None,
                false,
                Some(tokio_tungstenite::Connector::Rustls(std::sync::Arc::new(
                    config,
                ))),
            )
            .await
            .unwrap()
            .0
        }
    };
    let mut client = Client { ws };
    let response = client
        .call(
            json!(0),
            "mcp_handshake",
            json!({"access_token": token(user, Some(mcp_relay::auth::Role::Mcp)), "client_id": "big"}),
        )
        .await;
    assert_eq!(response["result"]["authenticated"], true, "{response}");
    client
}

/// Issue 24 point 6: 8 authenticated sockets each send one 4 MiB request (one frame, within
/// `--max-message-bytes`), get its answer, then idle; the relay's RSS grows by far less than
/// the 32 MiB their read buffers used to keep (tungstenite kept each socket's largest frame;
/// the transport now cuts large frames into fragments of at most 64 KiB). Over plain
/// WebSockets and over TLS (the re-framer sits above TLS).
///
/// glibc's mmap threshold is held at its initial 128 KiB (`MALLOC_MMAP_THRESHOLD_`): by
/// default it rises after the first large block is freed, and later freed messages would
/// linger in its heap, so RSS would show the allocator's cache rather than what the relay
/// still holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sockets_read_buffer_shrinks_back_after_a_large_message() {
    const SOCKETS: usize = 8;
    let dir = tempfile::tempdir().unwrap();
    let certs = mcp_relay::net::certs::generate(&[]).unwrap();
    let (cert, key) = mcp_relay::net::certs::write(dir.path(), &certs).unwrap();
    let (cert, key) = (cert.to_str().unwrap(), key.to_str().unwrap());
    let pad = "x".repeat(4 << 20);
    for tls in [false, true] {
        let args: &[&str] = if tls {
            &["--tls-cert", cert, "--tls-key", key]
        } else {
            &[]
        };
        let relay = ChildRelay::start_with(args, &[("MALLOC_MMAP_THRESHOLD_", "131072")], None);
        let ca = tls.then_some(certs.ca_cert_pem.as_str());
        let mut sockets = Vec::new();
        for _ in 0..SOCKETS {
            let mut socket = mcp_socket(&relay, ca, "alice").await;
            let listed = socket.call(json!(1), "list_extensions", json!({})).await;
            assert!(listed.get("result").is_some(), "{listed}");
            sockets.push(socket);
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        let before = relay.rss();
        for socket in &mut sockets {
            let answer = socket
                .call(json!(2), "list_extensions", json!({ "pad": pad }))
                .await;
            assert!(answer.get("result").is_some(), "{answer}");
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        let after = relay.rss();
        let grown = after as f64 - before as f64;
        eprintln!(
            "{} sockets × one 4 MiB message ({}): RSS {:.1} → {:.1} MiB, {:+.1} MiB once idle \
             (peak {:.1} MiB)",
            SOCKETS,
            if tls { "wss" } else { "ws" },
            before as f64 / MIB,
            after as f64 / MIB,
            grown / MIB,
            relay.peak_rss() as f64 / MIB,
        );
        assert!(
            grown < 8.0 * MIB,
            "{:+.1} MiB held after the messages",
            grown / MIB
        );
        // The sockets still work.
        let answer = sockets[0]
            .call(json!(3), "list_extensions", json!({}))
            .await;
        assert!(answer.get("result").is_some(), "{answer}");
    }
}
