//! `/dashboard` (docs/ADMIN.md, "Dashboard"): sign-in, the session cookie, CSRF and `Origin`
//! checks, the security headers and the per-user scoping over plain HTTP on loopback; then a
//! real headless Chromium signs in by typing a token, approves a browser, kicks a connection
//! and takes the screenshots committed under docs/.

use crate::common;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use common::browser::{chromium_or_skip, Browser, DevTools, Profile, ONE_BROWSER_AT_A_TIME};
use common::*;
// The relay binary of MCP_RELAY_TEST_BINARY when set (CI: the Dockerfile's build), else the
// relay in this process.
use common::served::{relay, relay_with};
use mcp_relay::auth::{mint_hs256, MintClaims, Role};
use serde_json::{json, Value};

/// One answer: status, raw headers (lower-cased names) and the body as JSON (`Null` if not).
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: Value,
    text: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// One request with `headers` and a JSON body (Host is `127.0.0.1:<port>` unless given).
async fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<Value>,
) -> Answer {
    let mut all = vec![("Content-Type", "application/json")];
    all.extend_from_slice(headers);
    let answer = common::http::http(addr, method, path, &all, body.as_ref()).await;
    Answer {
        status: answer.status,
        body: answer.json(),
        headers: answer.headers,
        text: answer.body,
    }
}

fn token_with(user: &str, role: Option<Role>, jti: &str) -> String {
    let mut claims = MintClaims::new(user, role, Duration::from_secs(3600));
    claims.jti = jti.to_owned();
    mint_hs256(SECRET.as_bytes(), &claims)
}

/// A signed-in session: its `Cookie` header value and CSRF token.
struct Signed {
    cookie: String,
    csrf: String,
}

async fn sign_in(addr: SocketAddr, token: &str) -> Signed {
    let answer = request(
        addr,
        "POST",
        "/dashboard/session",
        &[],
        Some(json!({ "token": token })),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let set = answer.header("set-cookie").expect("a session cookie");
    Signed {
        cookie: set.split(';').next().unwrap().to_owned(),
        csrf: answer.body["csrf_token"].as_str().unwrap().to_owned(),
    }
}

#[tokio::test]
async fn sign_in_refuses_bad_extension_and_revoked_tokens() {
    let relay = relay().await;
    let addr = relay.local_addr;
    let post = |token: String| async move {
        request(
            addr,
            "POST",
            "/dashboard/session",
            &[],
            Some(json!({ "token": token })),
        )
        .await
    };
    let bad = post("not.a.token".into()).await;
    assert_eq!(bad.status, 401, "{}", bad.text);
    assert!(bad.header("set-cookie").is_none());
    let wrong_key = mint_hs256(
        b"another-secret-another-secret-0123",
        &MintClaims::new("alice", Some(Role::Mcp), Duration::from_secs(60)),
    );
    assert_eq!(post(wrong_key).await.status, 401);
    let extension = post(token("alice", Some(Role::Extension))).await;
    assert_eq!(extension.status, 403, "{}", extension.text);
    assert!(extension.body["error"]
        .as_str()
        .unwrap()
        .contains("extension tokens"));
    assert!(extension.header("set-cookie").is_none());

    // Revoked by jti through the admin API: refused at sign-in.
    let mcp = token_with("alice", Some(Role::Mcp), "dash-jti-1");
    let (status, _) = api(
        addr,
        "POST",
        "/api/v1/tokens/revoke",
        Some(&mcp),
        Some(json!({"jti": "dash-jti-1"})),
    )
    .await;
    assert_eq!(status, 200);
    let revoked = post(mcp).await;
    assert_eq!(revoked.status, 401, "{}", revoked.text);
    assert!(revoked.text.contains("revoked"), "{}", revoked.text);
    // Malformed bodies are a clear 400.
    let malformed = request(addr, "POST", "/dashboard/session", &[], Some(json!([1]))).await;
    assert_eq!(malformed.status, 400);
}

#[tokio::test]
async fn the_session_cookie_is_httponly_samesite_strict_and_never_the_token() {
    let relay = relay().await;
    let addr = relay.local_addr;
    let mcp = token("alice", Some(Role::Mcp));
    let answer = request(
        addr,
        "POST",
        "/dashboard/session",
        &[],
        Some(json!({ "token": mcp })),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    let cookie = answer.header("set-cookie").unwrap();
    assert!(cookie.contains("HttpOnly"), "{cookie}");
    assert!(cookie.contains("SameSite=Strict"), "{cookie}");
    assert!(cookie.contains("Path=/"), "{cookie}");
    assert!(!cookie.contains("Secure"), "plain HTTP: {cookie}");
    let id = cookie.split(';').next().unwrap().split_once('=').unwrap().1;
    assert!(id.len() >= 32, "at least 128 random bits: {id}");
    assert!(!cookie.contains(&mcp) && !answer.text.contains(&mcp));
    assert_eq!(answer.body["user_id"], "alice");
    assert_eq!(answer.body["admin"], false);

    // Behind a TLS-terminating proxy that says so, the cookie is Secure (and __Host-).
    let proxied = request(
        addr,
        "POST",
        "/dashboard/session",
        &[("X-Forwarded-Proto", "https")],
        Some(json!({ "token": mcp })),
    )
    .await;
    let cookie = proxied.header("set-cookie").unwrap();
    assert!(
        cookie.starts_with("__Host-") && cookie.contains("; Secure"),
        "{cookie}"
    );

    // The session works, then signing out ends it.
    let signed = sign_in(addr, &mcp).await;
    let me = request(
        addr,
        "GET",
        "/dashboard/session",
        &[("Cookie", &signed.cookie)],
        None,
    )
    .await;
    assert_eq!(me.status, 200);
    assert_eq!(me.body["csrf_token"], signed.csrf.as_str());
    let out = request(
        addr,
        "DELETE",
        "/dashboard/session",
        &[("Cookie", &signed.cookie), ("X-CSRF-Token", &signed.csrf)],
        None,
    )
    .await;
    assert_eq!(out.status, 200, "{}", out.text);
    assert!(out.header("set-cookie").unwrap().contains("Max-Age=0"));
    let after = request(
        addr,
        "GET",
        "/dashboard/api/browsers",
        &[("Cookie", &signed.cookie)],
        None,
    )
    .await;
    assert_eq!(after.status, 401);
}

#[tokio::test]
async fn every_answer_carries_the_csp_and_the_other_security_headers() {
    let relay = relay().await;
    for path in [
        "/dashboard",
        "/dashboard/dashboard.js",
        "/dashboard/dashboard.css",
        "/dashboard/api/browsers",
    ] {
        let answer = request(relay.local_addr, "GET", path, &[], None).await;
        let csp = answer.header("content-security-policy").unwrap_or("");
        assert!(csp.contains("default-src 'self'"), "{path}: {csp}");
        assert!(csp.contains("frame-ancestors 'none'"), "{path}: {csp}");
        assert!(!csp.contains("unsafe-inline"), "{path}: {csp}");
        assert_eq!(answer.header("x-content-type-options"), Some("nosniff"));
        assert_eq!(answer.header("referrer-policy"), Some("no-referrer"));
        assert_eq!(answer.header("x-frame-options"), Some("DENY"));
    }
    let page = request(relay.local_addr, "GET", "/dashboard", &[], None).await;
    assert_eq!(page.status, 200);
    assert!(page
        .header("content-type")
        .unwrap()
        .starts_with("text/html"));
    // No inline script or style: the CSP would block them anyway.
    assert!(!page.text.contains("<script>") && !page.text.contains("<style"));
    assert!(!page.text.contains(" style="));
}

#[tokio::test]
async fn actions_need_a_session_a_csrf_token_and_the_relays_own_origin() {
    let relay = relay().await;
    let addr = relay.local_addr;
    let ext = Extension::connect(&relay, "alice", "Laptop", "laptop").await;
    let id = ext.extension_id.clone();
    let approve = format!("/dashboard/api/browsers/{id}/approve");
    let revoke = format!("/dashboard/api/browsers/{id}/revoke");
    let actions: [(&str, &str, Option<Value>); 5] = [
        ("POST", &approve, None),
        ("POST", &revoke, None),
        ("DELETE", "/dashboard/api/connections/conn-nope", None),
        (
            "POST",
            "/dashboard/api/tokens/revoke",
            Some(json!({"jti": "x"})),
        ),
        ("DELETE", "/dashboard/session", None),
    ];
    let signed = sign_in(addr, &token("alice", Some(Role::Mcp))).await;
    let own_origin = format!("http://{addr}");
    for (method, path, body) in &actions {
        let none = request(addr, method, path, &[], body.clone()).await;
        assert_eq!(none.status, 401, "{method} {path} without a session");
        let forged = request(
            addr,
            method,
            path,
            &[(
                "Cookie",
                "mcp_relay_session=00112233445566778899aabbccddeeff",
            )],
            body.clone(),
        )
        .await;
        assert_eq!(forged.status, 401, "{method} {path} with a made-up session");
        let no_csrf = request(
            addr,
            method,
            path,
            &[("Cookie", &signed.cookie)],
            body.clone(),
        )
        .await;
        assert_eq!(no_csrf.status, 403, "{method} {path} without X-CSRF-Token");
        let wrong = request(
            addr,
            method,
            path,
            &[("Cookie", &signed.cookie), ("X-CSRF-Token", "0000")],
            body.clone(),
        )
        .await;
        assert_eq!(
            wrong.status, 403,
            "{method} {path} with a wrong X-CSRF-Token"
        );
        let foreign = request(
            addr,
            method,
            path,
            &[
                ("Cookie", &signed.cookie),
                ("X-CSRF-Token", &signed.csrf),
                ("Origin", "https://evil.example"),
            ],
            body.clone(),
        )
        .await;
        assert_eq!(foreign.status, 403, "{method} {path} from a foreign Origin");
        let cross = request(
            addr,
            method,
            path,
            &[
                ("Cookie", &signed.cookie),
                ("X-CSRF-Token", &signed.csrf),
                ("Sec-Fetch-Site", "cross-site"),
            ],
            body.clone(),
        )
        .await;
        assert_eq!(cross.status, 403, "{method} {path} cross-site");
    }
    // Nothing above changed anything.
    let (_, listed) = api(
        addr,
        "GET",
        "/api/v1/browsers",
        Some(&token("alice", None)),
        None,
    )
    .await;
    assert_eq!(listed["browsers"][0]["approved"], false, "{listed}");
    // A foreign Origin cannot even sign in (login CSRF).
    let login = request(
        addr,
        "POST",
        "/dashboard/session",
        &[("Origin", "https://evil.example")],
        Some(json!({"token": token("alice", Some(Role::Mcp))})),
    )
    .await;
    assert_eq!(login.status, 403);

    // With all three, from the page's own origin, the action happens.
    let ok = request(
        addr,
        "POST",
        &approve,
        &[
            ("Cookie", &signed.cookie),
            ("X-CSRF-Token", &signed.csrf),
            ("Origin", &own_origin),
        ],
        None,
    )
    .await;
    assert_eq!(ok.status, 200, "{}", ok.text);
    assert_eq!(ok.body["browser"]["approved"], true);
    drop(ext);
}

#[tokio::test]
async fn a_users_session_sees_and_acts_on_their_own_browsers_only() {
    let relay = relay().await;
    let addr = relay.local_addr;
    let alices = Extension::connect(&relay, "alice", "Alice's laptop", "a").await;
    let bobs = Extension::connect(&relay, "bob", "Bob's laptop", "b").await;
    let mut bob_mcp = Mcp::connect(&relay, "bob").await;
    bob_mcp.connect_to(&bobs.extension_id).await;

    let alice = sign_in(addr, &token("alice", Some(Role::Mcp))).await;
    let with = |s: &Signed| {
        vec![
            ("Cookie".to_owned(), s.cookie.clone()),
            ("X-CSRF-Token".to_owned(), s.csrf.clone()),
        ]
    };
    let h = with(&alice);
    let h: Vec<(&str, &str)> = h.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    let browsers = request(addr, "GET", "/dashboard/api/browsers", &h, None).await;
    let ids: Vec<&str> = browsers.body["browsers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec![alices.extension_id.as_str()]);
    let connections = request(addr, "GET", "/dashboard/api/connections", &h, None).await;
    assert_eq!(connections.body["connections"], json!([]));
    let audit = request(addr, "GET", "/dashboard/api/audit?user_id=bob", &h, None).await;
    assert_eq!(audit.status, 403, "{}", audit.text);

    for path in [
        format!("/dashboard/api/browsers/{}/approve", bobs.extension_id),
        format!("/dashboard/api/browsers/{}/revoke", bobs.extension_id),
    ] {
        let answer = request(addr, "POST", &path, &h, None).await;
        assert_eq!(answer.status, 403, "{path}: {}", answer.text);
    }
    // Bob's connection, kicked by alice: refused.
    let (_, admin_view) = api(
        addr,
        "GET",
        "/api/v1/connections",
        Some(&token("root", Some(Role::Admin))),
        None,
    )
    .await;
    let conn = admin_view["connections"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let kick = request(
        addr,
        "DELETE",
        &format!("/dashboard/api/connections/{conn}"),
        &h,
        None,
    )
    .await;
    assert_eq!(kick.status, 403, "{}", kick.text);

    // An admin's session sees everyone's.
    let root = sign_in(addr, &token("root", Some(Role::Admin))).await;
    let everyone = request(
        addr,
        "GET",
        "/dashboard/api/browsers",
        &[("Cookie", &root.cookie)],
        None,
    )
    .await;
    assert_eq!(everyone.body["browsers"].as_array().unwrap().len(), 2);
    let whoami = request(
        addr,
        "GET",
        "/dashboard/session",
        &[("Cookie", &root.cookie)],
        None,
    )
    .await;
    assert_eq!(whoami.body["admin"], true);
}

#[tokio::test]
async fn revoking_the_token_ends_its_dashboard_session() {
    let relay = relay().await;
    let addr = relay.local_addr;
    let mcp = token_with("alice", Some(Role::Mcp), "dash-jti-2");
    let signed = sign_in(addr, &mcp).await;
    let (status, _) = api(
        addr,
        "POST",
        "/api/v1/tokens/revoke",
        Some(&token("root", Some(Role::Admin))),
        Some(json!({"jti": "dash-jti-2"})),
    )
    .await;
    assert_eq!(status, 200);
    let after = request(
        addr,
        "GET",
        "/dashboard/api/browsers",
        &[("Cookie", &signed.cookie)],
        None,
    )
    .await;
    assert_eq!(after.status, 401, "{}", after.text);
}

// ---------------------------------------------------------------------------
// Real Chromium

/// Where screenshots go: `$DASHBOARD_SCREENSHOTS`, else `target/dashboard-screenshots`.
fn screenshot_dir() -> PathBuf {
    let dir = std::env::var_os("DASHBOARD_SCREENSHOTS").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/dashboard-screenshots"),
        PathBuf::from,
    );
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

async fn screenshot(devtools: &mut DevTools, page: &str, width: u32, height: u32, name: &str) {
    devtools
        .send(
            Some(page),
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600}),
        )
        .await;
    // Waits for the page to be drawn at the new width (two animation frames after it has it:
    // resize handlers have run and a frame was painted), not for a fixed time.
    let drawn = "new Promise(done => requestAnimationFrame(() => requestAnimationFrame(() => \
                 done(window.innerWidth))))";
    let deadline = tokio::time::Instant::now() + WAIT;
    while devtools.eval(page, drawn).await != json!(width) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{name}: the page never took the width {width}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // No horizontal page scroll at either width.
    let wide = devtools
        .eval(
            page,
            "document.documentElement.scrollWidth <= window.innerWidth",
        )
        .await;
    assert_eq!(wide, json!(true), "{name}: the page scrolls sideways");
    let shot = devtools
        .send(
            Some(page),
            "Page.captureScreenshot",
            json!({"format": "png"}),
        )
        .await;
    use base64::Engine;
    let png = base64::engine::general_purpose::STANDARD
        .decode(shot["data"].as_str().unwrap())
        .unwrap();
    assert!(png.starts_with(b"\x89PNG"));
    std::fs::write(screenshot_dir().join(name), png).unwrap();
}

/// Clicks the centre of the element `selector` finds, as a mouse would.
async fn click(devtools: &mut DevTools, page: &str, selector: &str) {
    let rect = devtools
        .eval(
            page,
            &format!(
                "(() => {{ const e = document.querySelector({selector:?}); if (!e) return null; \
                 e.scrollIntoView({{block: 'center'}}); const r = e.getBoundingClientRect(); \
                 return [r.x + r.width / 2, r.y + r.height / 2]; }})()"
            ),
        )
        .await;
    let (x, y) = (rect[0].as_f64().unwrap(), rect[1].as_f64().unwrap());
    for kind in ["mousePressed", "mouseReleased"] {
        devtools
            .send(
                Some(page),
                "Input.dispatchMouseEvent",
                json!({"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}),
            )
            .await;
    }
}

#[tokio::test]
async fn chromium_signs_in_approves_a_pending_browser_and_kicks_a_connection() {
    let Some(chromium) = chromium_or_skip("dashboard in Chromium") else {
        return;
    };
    let _one = ONE_BROWSER_AT_A_TIME.lock().await;
    let relay = relay_with(|c| c.require_approval = true).await;
    let addr = relay.local_addr;
    let alice_mcp = token("alice", Some(Role::Mcp));
    // A scripted browser of alice's, pending approval, and an assistant of hers.
    let laptop = Extension::connect(&relay, "alice", "Work laptop", "work").await;
    let ext_id = laptop.extension_id.clone();
    let _phone = Extension::connect(&relay, "alice", "Home desktop", "home").await;
    let mut mcp = Mcp::connect(&relay, "alice").await;
    let refused = mcp.call("connect", json!({"extension_id": ext_id})).await;
    assert_eq!(refused["error"]["code"], -32011, "pending: {refused}");
    let (_status, _) = api(addr, "GET", "/api/v1/browsers", Some(&alice_mcp), None).await;

    let profile = Profile::new(&relay, "dashboard-test");
    let browser = Browser::launch_with(&chromium, &profile, &["--remote-debugging-port=0"]);
    let mut devtools = DevTools::attach(&browser).await;
    let page = devtools
        .open_page(&format!("http://{addr}/dashboard"))
        .await;
    devtools.send(Some(&page), "Page.enable", json!({})).await;
    devtools
        .send(Some(&page), "Runtime.enable", json!({}))
        .await;
    devtools
        .wait_for(
            &page,
            "!!document.getElementById('token') && !document.getElementById('sign-in').hidden",
            json!(true),
        )
        .await;

    // A wrong token: a clear error, still signed out.
    click(&mut devtools, &page, "#token").await;
    devtools
        .send(Some(&page), "Input.insertText", json!({"text": "nonsense"}))
        .await;
    click(&mut devtools, &page, "#sign-in-button").await;
    devtools
        .wait_for(
            &page,
            "document.getElementById('error').textContent.startsWith('Sign-in refused')",
            json!(true),
        )
        .await;
    screenshot(
        &mut devtools,
        &page,
        390,
        844,
        "dashboard-sign-in-phone.png",
    )
    .await;
    screenshot(
        &mut devtools,
        &page,
        1280,
        800,
        "dashboard-sign-in-wide.png",
    )
    .await;
    devtools
        .eval(&page, "document.getElementById('token').value = ''")
        .await;

    // Type alice's token and click Sign in.
    click(&mut devtools, &page, "#token").await;
    devtools
        .send(Some(&page), "Input.insertText", json!({"text": alice_mcp}))
        .await;
    click(&mut devtools, &page, "#sign-in-button").await;
    let row = format!("#browsers tr[data-id='{ext_id}']");
    devtools
        .wait_for(
            &page,
            &format!("document.querySelector(\"{row}\")?.textContent.includes('pending') ?? false"),
            json!(true),
        )
        .await;
    let cookie_visible = devtools.eval(&page, "document.cookie").await;
    assert_eq!(cookie_visible, json!(""), "the cookie is HttpOnly");
    let token_in_page = devtools
        .eval(
            &page,
            &format!("document.documentElement.outerHTML.includes({alice_mcp:?})"),
        )
        .await;
    assert_eq!(
        token_in_page,
        json!(false),
        "the token is not kept in the page"
    );

    screenshot(
        &mut devtools,
        &page,
        1280,
        800,
        "dashboard-pending-wide.png",
    )
    .await;

    // Approve: the page shows it, the admin API agrees, and `connect` now succeeds.
    click(&mut devtools, &page, &format!("{row} td.actions button")).await;
    devtools
        .wait_for(
            &page,
            &format!(
                "document.querySelector(\"{row}\")?.textContent.includes('approved') ?? false"
            ),
            json!(true),
        )
        .await;
    let (_, listed) = api(addr, "GET", "/api/v1/browsers", Some(&alice_mcp), None).await;
    let approved = listed["browsers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["id"] == ext_id.as_str())
        .unwrap()["approved"]
        .clone();
    assert_eq!(approved, json!(true), "{listed}");
    let listing = mcp.call("list_extensions", json!({})).await;
    let row_json = listing["result"]["extensions"]
        .as_array()
        .unwrap_or_else(|| panic!("{listing}"))
        .iter()
        .find(|e| e["id"] == ext_id.as_str())
        .cloned()
        .unwrap_or_else(|| panic!("{listing}"));
    assert_eq!(row_json["approved"], true, "{listing}");
    mcp.connect_to(&ext_id).await;
    // Some traffic for the activity table.
    let mut laptop = laptop;
    let call = tokio::spawn(async move {
        let answer = mcp.call("tabs/list", json!({})).await;
        (mcp, answer)
    });
    let forwarded = laptop.next_request().await;
    laptop.reply(&forwarded, json!({"tabs": []})).await;
    let (mut mcp, _) = call.await.unwrap();

    // The connection shows up live; Kick ends it and the scripted client hears it.
    devtools
        .wait_for(
            &page,
            "document.querySelectorAll('#connections tbody tr').length",
            json!(1),
        )
        .await;
    devtools
        .wait_for(
            &page,
            "[...document.querySelectorAll('#audit tbody tr')].some(r => r.textContent.includes('tabs/list'))",
            json!(true),
        )
        .await;
    screenshot(&mut devtools, &page, 1280, 800, "dashboard-wide.png").await;
    screenshot(&mut devtools, &page, 390, 844, "dashboard-phone.png").await;
    devtools
        .send(
            Some(&page),
            "Emulation.setDeviceMetricsOverride",
            json!({"width": 1280, "height": 800, "deviceScaleFactor": 1, "mobile": false}),
        )
        .await;
    click(
        &mut devtools,
        &page,
        "#connections tbody tr td.actions button",
    )
    .await;
    let gone = mcp.client.recv_notification("disconnected").await;
    assert!(
        gone["params"]["reason"]
            .as_str()
            .unwrap_or("")
            .contains("operator"),
        "{gone}"
    );
    devtools
        .wait_for(
            &page,
            "document.querySelectorAll('#connections tbody tr').length",
            json!(0),
        )
        .await;
    devtools
        .wait_for(
            &page,
            "document.getElementById('connections-empty').hidden",
            json!(false),
        )
        .await;

    // Revoke asks for a second click, then the browser's socket closes with 1008.
    let revoke = format!("{row} td.actions button.danger");
    click(&mut devtools, &page, &revoke).await;
    devtools
        .wait_for(
            &page,
            &format!("document.querySelector(\"{revoke}\")?.textContent"),
            json!("Confirm revoke"),
        )
        .await;
    click(&mut devtools, &page, &revoke).await;
    let (code, reason) = laptop.client.expect_close().await;
    assert_eq!((code, reason.as_str()), (1008, "revoked"));
    devtools
        .wait_for(
            &page,
            &format!("document.querySelector(\"{row}\")?.textContent.includes('revoked') ?? false"),
            json!(true),
        )
        .await;

    // Revoke a token by its jti: the assistant socket holding it closes with 1008.
    let mut held = Client::connect(&relay.url("/mcp")).await;
    let shaken = held
        .call(
            json!(1),
            "mcp_handshake",
            json!({"access_token": token_with("alice", Some(Role::Mcp), "held-jti")}),
        )
        .await;
    assert_eq!(shaken["result"]["authenticated"], true, "{shaken}");
    click(&mut devtools, &page, "#jti").await;
    devtools
        .send(Some(&page), "Input.insertText", json!({"text": "held-jti"}))
        .await;
    click(&mut devtools, &page, "#revoke-jti").await;
    devtools
        .wait_for(
            &page,
            "document.getElementById('revoke-jti').textContent",
            json!("Confirm: revoke token"),
        )
        .await;
    click(&mut devtools, &page, "#revoke-jti").await;
    let (code, reason) = held.expect_close().await;
    assert_eq!((code, reason.as_str()), (1008, "revoked"));
    devtools
        .wait_for(
            &page,
            "document.getElementById('revoke-result').textContent",
            json!("Revoked; 1 live socket(s) closed."),
        )
        .await;
    // A user's session may revoke only their own user's tokens: the field is fixed to alice.
    let fixed = devtools
        .eval(
            &page,
            "[document.getElementById('revoke-user').value, document.getElementById('revoke-user').readOnly]",
        )
        .await;
    assert_eq!(fixed, json!(["alice", true]));
    screenshot(
        &mut devtools,
        &page,
        390,
        844,
        "dashboard-after-revoke-phone.png",
    )
    .await;

    // Sign out: back to the sign-in form, and the session is gone server-side.
    click(&mut devtools, &page, "#sign-out").await;
    devtools
        .wait_for(
            &page,
            "document.getElementById('sign-in').hidden",
            json!(false),
        )
        .await;
    let api_after = devtools
        .eval(
            &page,
            "fetch('/dashboard/api/browsers').then(r => r.status)",
        )
        .await;
    assert_eq!(api_after, json!(401));
    drop(browser);
}

#[tokio::test]
async fn the_relays_debug_log_never_holds_a_dashboard_token_or_session_id() {
    let relay = common::child::ChildRelay::start_with(&[], &[("MCP_RELAY_LOG", "debug")], None);
    let mcp = token("alice", Some(Role::Mcp));
    let signed = sign_in(relay.addr, &mcp).await;
    let refused = request(
        relay.addr,
        "POST",
        "/dashboard/session",
        &[],
        Some(json!({ "token": token("alice", Some(Role::Extension)) })),
    )
    .await;
    assert_eq!(refused.status, 403);
    let listed = request(
        relay.addr,
        "GET",
        "/dashboard/api/browsers",
        &[("Cookie", &signed.cookie)],
        None,
    )
    .await;
    assert_eq!(listed.status, 200);
    // The child's log is read on a thread of its own: wait until it holds the last request.
    wait_until("the log holds the sign-in and the last request", || async {
        let log = relay.log();
        log.contains("dashboard: signed in")
            && log.lines().any(|line| {
                line.contains("path=/dashboard/api/browsers")
                    && line.contains("finished processing request")
            })
    })
    .await;
    let log = relay.log();
    let session_id = signed.cookie.split_once('=').unwrap().1;
    for secret in [mcp.as_str(), session_id, signed.csrf.as_str()] {
        assert!(!log.contains(secret), "a secret reached the log:\n{log}");
    }
    // Not even the signature part of the token.
    assert!(!log.contains(mcp.rsplit('.').next().unwrap()));
}

#[tokio::test]
async fn over_tls_chromium_keeps_a_secure_host_prefixed_httponly_strict_cookie() {
    let Some(chromium) = chromium_or_skip("dashboard over TLS in Chromium") else {
        return;
    };
    let _one = ONE_BROWSER_AT_A_TIME.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let certs = mcp_relay::net::certs::generate(&[]).unwrap();
    let (cert, key) = mcp_relay::net::certs::write(dir.path(), &certs).unwrap();
    let relay = relay_with(|c| {
        c.tls_cert = Some(cert);
        c.tls_key = Some(key);
    })
    .await;
    let profile = Profile::new(&relay, "dashboard-tls");
    let browser = Browser::launch_with(
        &chromium,
        &profile,
        &["--remote-debugging-port=0", "--ignore-certificate-errors"],
    );
    let mut devtools = DevTools::attach(&browser).await;
    let url = format!("https://{}/dashboard", relay.local_addr);
    let page = devtools.open_page(&url).await;
    devtools
        .wait_for(
            &page,
            "!!document.getElementById('sign-in') && !document.getElementById('sign-in').hidden",
            json!(true),
        )
        .await;
    let mcp = token("alice", Some(Role::Mcp));
    let status = devtools
        .eval(
            &page,
            &format!(
                "fetch('/dashboard/session', {{method: 'POST', headers: {{'Content-Type': \
                 'application/json'}}, body: JSON.stringify({{token: {mcp:?}}})}}).then(r => r.status)"
            ),
        )
        .await;
    assert_eq!(status, json!(200));
    devtools
        .send(Some(&page), "Network.enable", json!({}))
        .await;
    let cookies = devtools
        .send(Some(&page), "Network.getCookies", json!({"urls": [url]}))
        .await;
    let cookie = cookies["cookies"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "__Host-mcp_relay_session")
        .unwrap_or_else(|| panic!("the browser kept no __Host- cookie: {cookies}"))
        .clone();
    assert_eq!(cookie["secure"], true, "{cookie}");
    assert_eq!(cookie["httpOnly"], true, "{cookie}");
    assert_eq!(cookie["sameSite"], "Strict", "{cookie}");
    assert_eq!(cookie["path"], "/", "{cookie}");
    assert_ne!(cookie["value"], json!(mcp));
    // And the session works from the page.
    let listed = devtools
        .eval(
            &page,
            "fetch('/dashboard/api/browsers').then(r => r.status)",
        )
        .await;
    assert_eq!(listed, json!(200));
    drop(browser);
}
