//! End-to-end: the browser's owner stays in control (issue 15). The reference extension in a
//! real Chromium, the real relay, and test MCP clients that say who they are; the person's side
//! is played through the DevTools endpoint: clicks in the extension's popup and options page,
//! and `chrome.tabs` / `chrome.tabGroups` calls in its service worker.
//!
//! With `OWNER_SCREENSHOTS=<dir>` the tests also save what the person sees (the popup asking,
//! the popup while an assistant works, the options page) for extension/README.md.

use crate::common;

use std::fs;
use std::path::Path;
use std::time::Duration;

use common::browser::*;
use common::{relay, token, Client};
use mcp_relay::auth::Role;
use mcp_relay::server::RunningRelay;
use serde_json::{json, Value};
use tokio::time::Instant;

const ASSISTANT: &str = "Owner Test Assistant";
const ASSISTANT_ID: &str = "owner-e2e-client-0001";

/// The refusal code of a not-yet-allowed assistant (docs/PROTOCOL.md).
const CONSENT_REQUIRED: i64 = -32010;

/// Also: while it waits, the badge reads "1?" and a notification with Allow / Deny is up; once
/// answered, the notification goes and the badge counts the active assistant.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_assistant_is_refused_until_allowed_and_always_allow_survives_a_browser_restart_until_revoked_and_deny_is_remembered_until_forgotten(
) {
    let Some(chromium) = chromium_or_skip("consent") else {
        return;
    };
    let _one = ONE_BROWSER_AT_A_TIME.lock().await;
    within(SCENARIO_LIMIT * 2, consent(&chromium)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn assistant_tabs_are_grouped_under_its_name_a_tab_dragged_in_is_given_one_dragged_out_refused_and_closing_the_group_ends_access(
) {
    let Some(chromium) = chromium_or_skip("tab groups") else {
        return;
    };
    let _one = ONE_BROWSER_AT_A_TIME.lock().await;
    within(SCENARIO_LIMIT, tab_groups(&chromium)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_in_the_popup_disconnects_the_assistant_with_the_owners_reason_within_a_second() {
    let Some(chromium) = chromium_or_skip("stop") else {
        return;
    };
    let _one = ONE_BROWSER_AT_A_TIME.lock().await;
    within(SCENARIO_LIMIT, stop(&chromium)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocked_site_is_refused_for_navigate_snapshot_screenshot_and_click() {
    let Some(chromium) = chromium_or_skip("blocked sites") else {
        return;
    };
    let _one = ONE_BROWSER_AT_A_TIME.lock().await;
    within(SCENARIO_LIMIT, blocked_sites(&chromium)).await;
}

// ---------------------------------------------------------------------------
// Scenarios

async fn consent(chromium: &Path) {
    let relay = relay().await;
    let profile = profile_with(&relay, json!({}));
    let mut browser = Browser::launch_with(chromium, &profile, &["--remote-debugging-port=0"]);
    let mut mcp = assistant(&relay).await;
    let extension_id = extension_id_of(&mut mcp, &browser).await;
    let refused = connect_and_call(&mut mcp, &extension_id, "getTabs").await["error"].clone();
    assert_eq!(refused["code"], CONSENT_REQUIRED, "{refused}");
    let message = refused["message"].as_str().unwrap();
    assert!(
        message.contains(ASSISTANT) && message.contains("Allow"),
        "{refused}"
    );

    // The request shows without opening anything: an amber "1?" badge and a notification with
    // Allow / Deny. (Its buttons are the operating system's; nothing here can click them.)
    let mut devtools = DevTools::attach(&browser).await;
    let worker = service_worker(&mut devtools).await;
    devtools
        .wait_for(&worker, "chrome.action.getBadgeText({})", json!("1?"))
        .await;
    // Created asynchronously, just after the badge: waited for, not read once.
    devtools
        .wait_for(
            &worker,
            "chrome.notifications.getAll().then(all => Object.keys(all)).then(ids => ids.length === 1 && ids[0].startsWith('consent:'))",
            json!(true),
        )
        .await;

    // The person opens the popup: the assistant asks, with its name and three choices.
    let origin = devtools.extension_origin().await;
    let popup = devtools.open_popup(&origin, 560).await;
    devtools
        .wait_for(
            &popup,
            "[...document.querySelectorAll('.assistant.pending button')].map(b => b.textContent).join('|')",
            json!("Allow once|Always allow|Deny"),
        )
        .await;
    let name = devtools
        .eval(
            &popup,
            "document.querySelector('.assistant-name').textContent",
        )
        .await;
    assert_eq!(name, ASSISTANT);
    devtools.save_screenshot(&popup, "popup-asks.png").await;
    devtools
        .eval(&popup, "document.querySelector('.decide-always').click()")
        .await;
    let tabs = ok_soon(&mut mcp, "getTabs").await;
    assert!(tabs["tabs"].is_array(), "{tabs}");
    // Answered: the notification is gone and the badge counts one active assistant.
    devtools
        .wait_for(&worker, "chrome.action.getBadgeText({})", json!("1"))
        .await;
    devtools
        .wait_for(
            &worker,
            "chrome.notifications.getAll().then(all => Object.keys(all).length)",
            json!(0),
        )
        .await;

    // A browser restart: the same assistant, on a new connection, is let in at once.
    drop(devtools);
    drop(mcp);
    browser.kill();
    drop(browser);
    let browser = Browser::launch_with(chromium, &profile, &["--remote-debugging-port=0"]);
    let mut mcp = assistant(&relay).await;
    let extension_id = extension_id_of(&mut mcp, &browser).await;
    let tabs = connect_and_call(&mut mcp, &extension_id, "getTabs").await;
    assert!(tabs["result"]["tabs"].is_array(), "{tabs}");

    // The options page lists it; Revoke refuses it again, on the live connection too.
    let mut devtools = DevTools::attach(&browser).await;
    let origin = devtools.extension_origin().await;
    let options = devtools
        .open_page(&format!("{origin}/ui/options.html"))
        .await;
    devtools
        .wait_for(
            &options,
            "[...document.querySelectorAll('#allowed-assistants li')].some(li => li.textContent.includes('Owner Test Assistant'))",
            json!(true),
        )
        .await;
    devtools.save_screenshot(&options, "options.png").await;
    devtools
        .eval(
            &options,
            "document.querySelector('#allowed-assistants .revoke').click()",
        )
        .await;
    let deadline = Instant::now() + STEP;
    loop {
        let response = mcp.call("getTabs", json!({})).await;
        if response["error"]["code"] == CONSENT_REQUIRED {
            break;
        }
        assert!(Instant::now() < deadline, "still allowed: {response}");
        tokio::time::sleep(POLL).await;
    }

    // Deny in the popup ends the connection and is remembered: the same assistant, back on a
    // new connection, is refused at once ("denied", no new notification) until the person
    // forgets the denial on the options page, after which it is asked about again.
    let asking = devtools.open_popup(&origin, 560).await;
    devtools
        .wait_for(
            &asking,
            "!!document.querySelector('.assistant.pending .decide-deny')",
            json!(true),
        )
        .await;
    devtools
        .eval(&asking, "document.querySelector('.decide-deny').click()")
        .await;
    let disconnected = mcp.notification("disconnected", |_| true).await;
    assert!(
        disconnected["params"]["reason"]
            .as_str()
            .unwrap()
            .contains("denied"),
        "{disconnected}"
    );
    let mut mcp = assistant(&relay).await;
    mcp.connect(&extension_id).await;
    let refused = mcp.err("getTabs", json!({})).await;
    assert_eq!(refused["code"], CONSENT_REQUIRED, "{refused}");
    assert_eq!(refused["data"]["decision"], "denied", "{refused}");
    let worker = service_worker(&mut devtools).await;
    let shown = devtools
        .eval(
            &worker,
            "chrome.notifications.getAll().then(all => Object.keys(all).length)",
        )
        .await;
    assert_eq!(shown, 0, "a denied assistant raises no notification");
    devtools
        .wait_for(
            &options,
            "[...document.querySelectorAll('#denied-assistants li')].some(li => li.textContent.includes('Owner Test Assistant'))",
            json!(true),
        )
        .await;
    devtools
        .save_screenshot(&options, "options-denied.png")
        .await;
    devtools
        .eval(
            &options,
            "document.querySelector('#denied-assistants .forget').click()",
        )
        .await;
    let deadline = Instant::now() + STEP;
    loop {
        let response = mcp.call("getTabs", json!({})).await;
        if response["error"]["code"] == CONSENT_REQUIRED && response["error"].get("data").is_none()
        {
            break;
        }
        assert!(Instant::now() < deadline, "still denied: {response}");
        tokio::time::sleep(POLL).await;
    }

    drop(devtools);
    drop(browser);
    relay.shutdown().await;
}

async fn tab_groups(chromium: &Path) {
    let relay = relay().await;
    let site = FixtureSite::start().await;
    // allowedClients: the headless way to let one assistant in without a click.
    let profile = profile_with(&relay, json!({"allowedClients": [ASSISTANT_ID]}));
    let browser = Browser::launch_with(chromium, &profile, &["--remote-debugging-port=0"]);
    let mut mcp = assistant(&relay).await;
    let extension_id = extension_id_of(&mut mcp, &browser).await;
    let settled = connect_and_call(&mut mcp, &extension_id, "getTabs").await;
    assert!(settled["result"]["tabs"].is_array(), "{settled}");

    let created = mcp
        .ok("createTab", json!({"url": site.url("page1.html")}))
        .await;
    let tab_id = created["tabId"].as_i64().unwrap();
    mcp.ok("snapshot", json!({})).await;

    let mut devtools = DevTools::attach(&browser).await;
    let worker = service_worker(&mut devtools).await;
    let group = devtools
        .eval(
            &worker,
            &format!(
                "chrome.tabs.get({tab_id}).then(tab => chrome.tabGroups.get(tab.groupId)).then(g => [g.title, g.color])"
            ),
        )
        .await;
    assert_eq!(group[0], ASSISTANT, "{group}");
    assert!(group[1].is_string(), "{group}");

    // Nothing silent: the popup shows the assistant, its tab and its last actions.
    let origin = devtools.extension_origin().await;
    let popup = devtools.open_popup(&origin, 560).await;
    devtools
        .wait_for(
            &popup,
            "[...document.querySelectorAll('.assistant.allowed .actions li')].map(li => li.textContent.split(' ').pop()).join(',')",
            json!("snapshot,createTab,getTabs"),
        )
        .await;
    let tabs_line = devtools
        .eval(
            &popup,
            "document.querySelector('.assistant .tabs').textContent",
        )
        .await;
    assert!(tabs_line == "Tabs: Page one", "{tabs_line}");
    devtools.save_screenshot(&popup, "popup-working.png").await;

    // The person drags one of their own tabs into the group: it becomes the assistant's.
    let theirs = devtools
        .eval(
            &worker,
            &format!(
                "chrome.tabs.get({tab_id}).then(t => chrome.tabs.create({{windowId: t.windowId, url: '{}', active: false}}).then(mine => chrome.tabs.group({{tabIds: [mine.id], groupId: t.groupId}}).then(() => mine.id)))",
                site.url("page2.html")
            ),
        )
        .await
        .as_i64()
        .unwrap();
    let deadline = Instant::now() + STEP;
    loop {
        let tabs = mcp.ok("getTabs", json!({})).await;
        let owner = tabs["tabs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|tab| tab["tabId"] == theirs)
            .map(|tab| tab["owner"].clone());
        if owner == Some(json!("you")) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the dragged-in tab was not given: {tabs}"
        );
        tokio::time::sleep(POLL).await;
    }
    mcp.ok("snapshot", json!({"tabId": theirs})).await;

    // The person drags the tab out of the group: the assistant is told, clearly.
    devtools
        .eval(
            &worker,
            &format!("chrome.tabs.ungroup({tab_id}).then(() => true)"),
        )
        .await;
    let deadline = Instant::now() + STEP;
    let refused = loop {
        let response = mcp.call("snapshot", json!({"tabId": tab_id})).await;
        if let Some(error) = response.get("error") {
            break error.clone();
        }
        assert!(Instant::now() < deadline, "tab still reachable: {response}");
        tokio::time::sleep(POLL).await;
    };
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("taken back by the browser's owner"),
        "{refused}"
    );

    // The person closes the group (Chrome closes its tabs): the assistant holds nothing there,
    // and its next tab goes into a new group under its name.
    devtools
        .eval(
            &worker,
            &format!("chrome.tabs.get({theirs}).then(t => chrome.tabs.query({{groupId: t.groupId}})).then(tabs => chrome.tabs.remove(tabs.map(t => t.id))).then(() => true)"),
        )
        .await;
    let deadline = Instant::now() + STEP;
    loop {
        let response = mcp.call("snapshot", json!({"tabId": theirs})).await;
        if response.get("error").is_some() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "closed group's tab still reachable: {response}"
        );
        tokio::time::sleep(POLL).await;
    }
    let again = mcp
        .ok("createTab", json!({"url": site.url("page1.html")}))
        .await;
    let again = again["tabId"].as_i64().unwrap();
    mcp.ok("snapshot", json!({})).await;
    let regrouped = devtools
        .eval(
            &worker,
            &format!("chrome.tabs.get({again}).then(tab => chrome.tabGroups.get(tab.groupId)).then(g => g.title)"),
        )
        .await;
    assert_eq!(regrouped, ASSISTANT);

    drop(devtools);
    drop(browser);
    relay.shutdown().await;
}

async fn stop(chromium: &Path) {
    let relay = relay().await;
    let profile = profile_with(&relay, json!({"autoAllow": true}));
    let browser = Browser::launch_with(chromium, &profile, &["--remote-debugging-port=0"]);
    let mut mcp = assistant(&relay).await;
    let extension_id = extension_id_of(&mut mcp, &browser).await;
    let settled = connect_and_call(&mut mcp, &extension_id, "getTabs").await;
    assert!(settled["result"]["tabs"].is_array(), "{settled}");

    let mut devtools = DevTools::attach(&browser).await;
    let origin = devtools.extension_origin().await;
    let popup = devtools.open_popup(&origin, 560).await;
    devtools
        .wait_for(
            &popup,
            "!!document.querySelector('.assistant.allowed .stop')",
            json!(true),
        )
        .await;
    devtools
        .eval(&popup, "document.querySelector('.assistant .stop').click()")
        .await;
    let clicked = Instant::now();
    let disconnected = mcp.notification("disconnected", |_| true).await;
    let took = clicked.elapsed();
    assert!(took < Duration::from_secs(1), "disconnected after {took:?}");
    let reason = disconnected["params"]["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("Stopped by the browser's owner"),
        "{disconnected}"
    );

    drop(devtools);
    drop(browser);
    relay.shutdown().await;
}

async fn blocked_sites(chromium: &Path) {
    let relay = relay().await;
    let site = FixtureSite::start().await;
    let blocked = site.url("page2.html");
    let pattern = blocked.trim_start_matches("http://");
    let profile = profile_with(
        &relay,
        json!({"autoAllow": true, "blockedSites": [pattern]}),
    );
    let browser = Browser::launch_with(chromium, &profile, &["--remote-debugging-port=0"]);
    let mut mcp = assistant(&relay).await;
    let extension_id = extension_id_of(&mut mcp, &browser).await;
    let settled = connect_and_call(&mut mcp, &extension_id, "getTabs").await;
    assert!(settled["result"]["tabs"].is_array(), "{settled}");

    mcp.ok("createTab", json!({"url": site.url("page1.html")}))
        .await;
    let refused = mcp.err("browser_navigate", json!({"url": blocked})).await;
    assert_off_limits(&refused);

    // A tab the person has open on the blocked site: listed, but not readable or usable.
    let mut devtools = DevTools::attach(&browser).await;
    devtools.open_page(&blocked).await;
    let deadline = Instant::now() + STEP;
    let persons = loop {
        let tabs = mcp.ok("getTabs", json!({})).await;
        let found = tabs["tabs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["title"] == "(off limits)")
            .cloned();
        if let Some(tab) = found {
            assert_eq!(tab["url"], "", "{tabs}");
            break tab["tabId"].as_i64().unwrap();
        }
        assert!(Instant::now() < deadline, "blocked tab not listed: {tabs}");
        tokio::time::sleep(POLL).await;
    };
    for (method, params) in [
        ("snapshot", json!({"tabId": persons})),
        ("screenshot", json!({"tabId": persons})),
        ("click", json!({"tabId": persons, "selector": "body"})),
    ] {
        let refused = mcp.err(method, params).await;
        assert_off_limits(&refused);
    }

    // The assistant's own tab wanders there (a script, a redirect): it is taken out of reach.
    mcp.call(
        "evaluate",
        json!({"expression": format!("setTimeout(() => location.href = {blocked:?}, 10), 1")}),
    )
    .await;
    let deadline = Instant::now() + STEP;
    // A snapshot taken while the tab is between pages may fail on its own ("Inspected target
    // navigated or closed"); what matters is that the tab ends up out of reach.
    loop {
        let response = mcp.call("snapshot", json!({})).await;
        let message = response["error"]["message"].as_str().unwrap_or_default();
        if message.contains("off limits") {
            break;
        }
        assert!(Instant::now() < deadline, "still reachable: {response}");
        tokio::time::sleep(POLL).await;
    }

    drop(devtools);
    drop(browser);
    relay.shutdown().await;
}

// ---------------------------------------------------------------------------
// Helpers

fn assert_off_limits(error: &Value) {
    assert_eq!(error["code"], -32000, "{error}");
    assert!(
        error["message"].as_str().unwrap().contains("is off limits"),
        "{error}"
    );
}

/// A profile whose dev-config.json carries `extra` (consent and site keys) and no `autoAllow`
/// unless `extra` says so.
fn profile_with(relay: &RunningRelay, extra: Value) -> Profile {
    let profile = Profile::new(relay, "Owner's browser");
    let mut config = json!({
        "relayUrl": relay.url("/extension"),
        "token": token(USER, Some(Role::Extension)),
        "name": "Owner's browser",
    });
    config
        .as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    fs::write(
        profile.extension_dir.join("dev-config.json"),
        config.to_string(),
    )
    .unwrap();
    profile
}

/// An MCP client that says who it is, as the bridge does: the host's name and a stable id.
async fn assistant(relay: &RunningRelay) -> Driver {
    let mut client = Client::connect(&relay.url("/mcp")).await;
    let response = client
        .call(
            json!("owner-handshake"),
            "mcp_handshake",
            json!({
                "access_token": token(USER, Some(Role::Mcp)),
                "client_id": ASSISTANT_ID,
                "client_name": ASSISTANT,
            }),
        )
        .await;
    assert_eq!(response["result"]["authenticated"], true, "{response}");
    Driver {
        client,
        next_id: 1000,
        backlog: Default::default(),
        name: "assistant",
    }
}

async fn extension_id_of(mcp: &mut Driver, browser: &Browser<'_>) -> String {
    mcp.wait_for_extension(browser).await["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Connects and makes one request; again if the browser, just started, replaced its relay
/// socket meanwhile ("not found" on `connect`; on the request, -32004, or -32012 where the
/// relay had already ended the session; and `disconnected`).
/// Chrome may restart a new extension's service worker once at start-up, and an assistant
/// (the bridge) simply connects again.
async fn connect_and_call(mcp: &mut Driver, extension_id: &str, method: &str) -> Value {
    let deadline = Instant::now() + STEP;
    loop {
        let connected = mcp
            .call("connect", json!({"extension_id": extension_id}))
            .await;
        if connected.get("result").is_some() {
            let response = mcp.call(method, json!({})).await;
            if response["error"]["code"] != -32004 && response["error"]["code"] != -32012 {
                return response;
            }
            mcp.notification("disconnected", |_| true).await;
        }
        assert!(
            Instant::now() < deadline,
            "{method} never reached the browser: {connected}"
        );
        tokio::time::sleep(POLL).await;
    }
}

/// A command that must succeed once the owner's click has reached the service worker.
async fn ok_soon(mcp: &mut Driver, method: &str) -> Value {
    let deadline = Instant::now() + STEP;
    loop {
        let response = mcp.call(method, json!({})).await;
        if let Some(result) = response.get("result") {
            return result.clone();
        }
        assert!(Instant::now() < deadline, "{method}: {response}");
        tokio::time::sleep(POLL).await;
    }
}

/// A session in the extension's service worker, where `chrome.tabGroups` lives.
async fn service_worker(devtools: &mut DevTools) -> String {
    let targets = devtools.send(None, "Target.getTargets", json!({})).await;
    let worker = targets["targetInfos"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| {
            t["type"] == "service_worker"
                && t["url"]
                    .as_str()
                    .is_some_and(|u| u.starts_with("chrome-extension://"))
        })
        .unwrap_or_else(|| panic!("no service worker: {targets}"))
        .clone();
    let attached = devtools
        .send(
            None,
            "Target.attachToTarget",
            json!({"targetId": worker["targetId"], "flatten": true}),
        )
        .await;
    attached["sessionId"].as_str().unwrap().to_owned()
}

/// Issue 27, point 2: a script's inner calls obey the owner's settings as single calls do. A
/// `code_execution` script through the bridge that reaches for a blocked site gets the same
/// refusal as a rejected promise (and the page is never opened), while its other calls work;
/// the audit log has the refused inner call as an error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scripts_inner_calls_are_refused_on_a_blocked_site_as_single_calls_are() {
    let Some(chromium) = chromium_or_skip("a script on a blocked site") else {
        return;
    };
    let _one = ONE_BROWSER_AT_A_TIME.lock().await;
    within(SCENARIO_LIMIT, async {
        let relay = relay().await;
        let site = FixtureSite::start().await;
        let blocked = site.url("page2.html");
        let pattern = blocked.trim_start_matches("http://");
        let profile = profile_with(
            &relay,
            json!({"autoAllow": true, "blockedSites": [pattern]}),
        );
        let browser = Browser::launch_with(&chromium, &profile, &[]);
        let mut watcher = Driver::handshake(&relay, "watcher").await;
        watcher.wait_for_extension(&browser).await;
        let dir = tempfile::tempdir().unwrap();
        let audit_log = dir.path().join("audit.jsonl");
        let url = relay.url("/mcp");
        let bridge = common::bridge::start_bridge(
            (),
            &[
                "--relay",
                url.as_str(),
                "--code-execution",
                "--audit-log",
                audit_log.to_str().unwrap(),
            ],
            &token(USER, Some(Role::Mcp)),
        )
        .await;
        let script = format!(
            "const open = await tools.browser_navigate({{url: {allowed:?}}});\n\
             let refused = null;\n\
             try {{ await tools.browser_navigate({{url: {blocked:?}}}); }}\n\
             catch (e) {{ refused = e.message; }}\n\
             return {{opened: open.data.url, refused}};",
            allowed = site.url("page1.html"),
        );
        let deadline = Instant::now() + STEP;
        let answer = loop {
            let result =
                common::bridge::call(&bridge, "code_execution", json!({ "code": script })).await;
            let text = common::bridge::text(&result);
            // The first tab may still be on its way while the extension settles.
            if !common::bridge::is_error(&result) && text.contains("\"opened\"") {
                break serde_json::from_str::<Value>(&text).unwrap();
            }
            assert!(Instant::now() < deadline, "{result}");
            tokio::time::sleep(POLL).await;
        };
        assert_eq!(answer["opened"], site.url("page1.html"), "{answer}");
        assert!(
            answer["refused"]
                .as_str()
                .is_some_and(|m| m.contains("is off limits")),
            "{answer}"
        );
        let log = fs::read_to_string(&audit_log).unwrap();
        assert!(
            log.lines().any(|line| {
                let record: Value = serde_json::from_str(line).unwrap();
                record["tool"] == "code_execution"
                    && record["target"] == "browser_navigate"
                    && record["outcome"] == "error"
            }),
            "{log}"
        );
        let _ = bridge.cancel().await;
    })
    .await;
}
