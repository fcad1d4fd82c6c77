//! `mcp-relay bridge` end to end: a real relay in-process, fake extensions over real WebSockets,
//! and the bridge binary as a subprocess driven over stdio by rmcp's client (and, in one test,
//! by the official TypeScript SDK), the way Claude Desktop or Cursor run it.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use common::{relay, relay_with, token, Extension, SECRET, WAIT};
use mcp_relay::auth::{mint_hs256, MintClaims, Role};
use serde_json::{json, Value};

use common::bridge::{
    call, is_error, ok_json, run_sdk_client, start_bridge, text, typescript_sdk_client, Bridge,
};

/// Starts `mcp-relay bridge` with `args` (plus the user's MCP token) and initializes it.
async fn bridge_with(args: &[&str], mcp_token: &str) -> Bridge {
    start_bridge((), args, mcp_token).await
}

const USER: &str = "alice";

async fn bridge(relay_url: &str, extra: &[&str]) -> Bridge {
    let mut args = vec!["--relay", relay_url];
    args.extend_from_slice(extra);
    bridge_with(&args, &token(USER, Some(Role::Mcp))).await
}

/// Calls a tool while the extension answers the one command it causes with `answer`; returns
/// the command as the extension received it, and the tool result.
async fn call_answered(
    bridge: &Bridge,
    extension: &mut Extension,
    tool: &str,
    args: Value,
    answer: Value,
) -> (Value, Value) {
    let extension_side = async {
        let request = extension.next_request().await;
        extension.reply(&request, answer).await;
        request
    };
    let (result, request) = tokio::join!(call(bridge, tool, args), extension_side);
    (request, result)
}

/// Polls `browser_status` until `check` holds.
async fn wait_for_status(bridge: &Bridge, what: &str, check: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + WAIT;
    loop {
        let status = ok_json(&call(bridge, "browser_status", json!({})).await);
        if check(&status) {
            return status;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}: {status}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn tools_list_has_every_browser_tool_with_schema_title_and_honest_hints() {
    let relay = relay().await;
    let bridge = bridge(&relay.url("/mcp"), &[]).await;

    let info = bridge.peer_info().expect("initialize result");
    assert_eq!(info.server_info.as_ref().unwrap().name, "mcp-relay");
    assert!(info.capabilities.tools.is_some());
    assert!(info
        .instructions
        .as_deref()
        .unwrap()
        .contains("browser_snapshot"));

    let tools = bridge.list_all_tools().await.unwrap();
    let tools: BTreeMap<String, Value> = tools
        .into_iter()
        .map(|t| (t.name.to_string(), serde_json::to_value(t).unwrap()))
        .collect();
    // (readOnly, destructive, idempotent, openWorld)
    let expected = [
        ("browser_call_page_tool", (false, true, false, true)),
        ("browser_cdp", (false, true, false, true)),
        ("browser_click", (false, true, false, true)),
        ("browser_close", (false, true, true, true)),
        ("browser_connect", (false, false, true, false)),
        ("browser_console_messages", (true, false, true, true)),
        ("browser_downloads", (false, false, true, true)),
        ("browser_drag", (false, true, false, true)),
        ("browser_drop", (false, true, false, true)),
        ("browser_emulate_media", (false, false, true, true)),
        ("browser_evaluate", (false, true, false, true)),
        ("browser_file_upload", (false, true, false, true)),
        ("browser_fill_form", (false, true, false, true)),
        ("browser_find", (true, false, true, true)),
        ("browser_handle_dialog", (false, true, false, true)),
        ("browser_hover", (false, false, true, true)),
        ("browser_list", (true, false, true, false)),
        ("browser_navigate", (false, true, false, true)),
        ("browser_navigate_back", (false, true, false, true)),
        ("browser_navigate_forward", (false, true, false, true)),
        ("browser_network_request", (true, false, true, true)),
        ("browser_network_requests", (true, false, true, true)),
        ("browser_page_tools", (true, false, true, true)),
        ("browser_pdf_save", (false, false, false, true)),
        ("browser_press_key", (false, true, false, true)),
        ("browser_request_human", (false, false, false, true)),
        ("browser_resize", (false, false, true, true)),
        ("browser_screenshot", (true, false, true, true)),
        ("browser_select_option", (false, true, false, true)),
        ("browser_snapshot", (true, false, true, true)),
        ("browser_status", (true, false, true, false)),
        ("browser_tabs", (false, true, false, true)),
        ("browser_take_screenshot", (true, false, true, true)),
        ("browser_type", (false, true, false, true)),
        ("browser_wait_for", (true, false, true, true)),
    ];
    assert_eq!(
        tools.keys().map(String::as_str).collect::<Vec<_>>(),
        expected.iter().map(|(name, _)| *name).collect::<Vec<_>>()
    );
    for (name, (read_only, destructive, idempotent, open_world)) in expected {
        let tool = &tools[name];
        assert!(
            tool["title"].as_str().is_some_and(|t| !t.is_empty()),
            "{name}"
        );
        assert!(
            tool["description"].as_str().is_some_and(|d| d.len() > 20),
            "{name}"
        );
        assert_eq!(tool["inputSchema"]["type"], "object", "{name}");
        assert!(tool["inputSchema"]["properties"].is_object(), "{name}");
        let hints = &tool["annotations"];
        assert_eq!(hints["title"], tool["title"], "{name}");
        assert_eq!(hints["readOnlyHint"], read_only, "{name}");
        assert_eq!(hints["destructiveHint"], destructive, "{name}");
        // The spec's default (false) is not sent, nor the hint beside readOnlyHint true,
        // where it means nothing.
        if read_only {
            assert!(hints.get("idempotentHint").is_none(), "{name}");
        } else {
            assert_eq!(
                hints["idempotentHint"].as_bool().unwrap_or(false),
                idempotent,
                "{name}"
            );
        }
        assert_eq!(hints["openWorldHint"], open_world, "{name}");
    }
    let schema = |name: &str| tools[name]["inputSchema"].clone();
    // The element is a ref or a selector: neither alone is required.
    assert_eq!(schema("browser_type")["required"], json!(["text"]));
    assert!(schema("browser_type")["properties"]["ref"].is_object());
    assert!(schema("browser_type")["properties"]["selector"].is_object());
    // Playwright MCP's names: target wherever an element is named.
    for tool in [
        "browser_click",
        "browser_type",
        "browser_hover",
        "browser_select_option",
        "browser_evaluate",
        "browser_file_upload",
        "browser_take_screenshot",
        "browser_snapshot",
        "browser_find",
        "browser_drop",
    ] {
        assert_eq!(
            schema(tool)["properties"]["target"]["type"],
            "string",
            "{tool}"
        );
    }
    // A page's own tool is an argument, never an MCP tool of its own (issue 26).
    assert_eq!(
        schema("browser_call_page_tool")["required"],
        json!(["name"])
    );
    assert_eq!(
        schema("browser_call_page_tool")["properties"]["arguments"]["type"],
        "object"
    );
    assert!(schema("browser_drag")["properties"]["startTarget"].is_object());
    assert!(schema("browser_drag")["properties"]["endTarget"].is_object());
    assert_eq!(schema("browser_tabs")["required"], json!(["action"]));
    assert_eq!(
        schema("browser_tabs")["properties"]["action"]["enum"],
        json!(["list", "new", "select", "close"])
    );
    assert_eq!(
        schema("browser_navigate")["properties"]["direction"]["enum"],
        json!(["back", "forward"])
    );
    assert_eq!(schema("browser_cdp")["required"], json!(["method"]));
    assert_eq!(schema("browser_connect")["required"], json!(["browser"]));
    for paged in [
        "browser_snapshot",
        "browser_evaluate",
        "browser_cdp",
        "browser_tabs",
    ] {
        assert_eq!(schema(paged)["properties"]["offset"]["type"], "integer");
    }
    bridge.cancel().await.unwrap();
}

#[tokio::test]
async fn each_tool_sends_its_command_to_the_extension_and_returns_the_answer() {
    let relay = relay().await;
    let mut extension = Extension::connect(&relay, USER, "Chrome Test", "client-1").await;
    let bridge = bridge(&relay.url("/mcp"), &[]).await;

    let list = ok_json(&call(&bridge, "browser_list", json!({})).await);
    assert_eq!(list["browsers"][0]["id"], extension.extension_id.as_str());
    assert_eq!(list["browsers"][0]["name"], "Chrome Test");
    assert_eq!(list["browsers"][0]["version"], "1.2.3");

    let connected = ok_json(
        &call(
            &bridge,
            "browser_connect",
            json!({"browser": "chrome test"}),
        )
        .await,
    );
    assert_eq!(
        connected,
        json!({"connected": true, "extension_id": extension.extension_id, "name": "Chrome Test"})
    );

    let status = ok_json(&call(&bridge, "browser_status", json!({})).await);
    assert_eq!(status["relay_connected"], true);
    assert_eq!(status["user_id"], USER);
    assert_eq!(status["browser_connected"], true);
    assert_eq!(status["browser"]["name"], "Chrome Test");

    let page = json!({"tabId": 7, "url": "https://example.com/", "title": "Example"});
    // (tool, arguments, method the extension gets, its params, the extension's answer)
    let cases = [
        (
            "browser_tabs",
            json!({"action": "list"}),
            "getTabs",
            json!({}),
            json!({"currentTabId": 7, "tabs": [{"tabId": 7, "url": "https://example.com/", "title": "Example", "active": true, "current": true, "owner": "you"}]}),
        ),
        (
            "browser_tabs",
            json!({"action": "new", "url": "https://example.com/", "active": true}),
            "createTab",
            json!({"url": "https://example.com/", "active": true}),
            page.clone(),
        ),
        (
            "browser_tabs",
            json!({"action": "select", "tabId": 7}),
            "selectTab",
            json!({"tabId": 7}),
            page.clone(),
        ),
        (
            "browser_tabs",
            json!({"action": "close", "tabId": 7}),
            "closeTab",
            json!({"tabId": 7}),
            json!({"tabId": 7, "closed": true}),
        ),
        (
            "browser_navigate",
            json!({"url": "https://example.com/"}),
            "browser_navigate",
            json!({"url": "https://example.com/"}),
            page.clone(),
        ),
        (
            "browser_navigate",
            json!({"direction": "back"}),
            "goBack",
            json!({}),
            page.clone(),
        ),
        (
            "browser_navigate",
            json!({"direction": "forward", "tabId": 7}),
            "goForward",
            json!({"tabId": 7}),
            page.clone(),
        ),
        (
            "browser_click",
            json!({"selector": "#go", "clickCount": 2}),
            "click",
            json!({"selector": "#go", "clickCount": 2}),
            json!({"tabId": 7, "clicked": true, "x": 10, "y": 20, "element": "button#go"}),
        ),
        (
            "browser_click",
            json!({"x": 10.5, "y": 20, "button": "right"}),
            "click",
            json!({"x": 10.5, "y": 20, "button": "right"}),
            json!({"tabId": 7, "clicked": true, "x": 10.5, "y": 20}),
        ),
        (
            "browser_type",
            json!({"selector": "input[name=q]", "text": "héllo", "submit": true}),
            "type",
            json!({"selector": "input[name=q]", "text": "héllo", "submit": true}),
            json!({"tabId": 7, "typed": true, "value": "héllo", "submitted": true}),
        ),
        (
            "browser_hover",
            json!({"selector": "nav a"}),
            "hover",
            json!({"selector": "nav a"}),
            json!({"tabId": 7, "hovered": true, "x": 1, "y": 2, "element": "a"}),
        ),
        (
            "browser_evaluate",
            json!({"expression": "document.title", "tabId": 7}),
            "evaluate",
            json!({"expression": "document.title", "tabId": 7}),
            json!({"value": "Example", "type": "string"}),
        ),
        (
            "browser_snapshot",
            json!({}),
            "snapshot",
            json!({"format": "outline"}),
            json!({"tabId": 7, "url": "https://example.com/", "title": "Example", "text": "Example Domain",
                   "textTruncated": false, "elements": [{"ref": "e1", "role": "link", "name": "More", "selector": "a", "tag": "a"}],
                   "elementsTruncated": false}),
        ),
        (
            "browser_cdp",
            json!({"method": "Runtime.evaluate", "params": {"expression": "1+1"}, "sessionId": "S1"}),
            "forwardCDPCommand",
            json!({"method": "Runtime.evaluate", "params": {"expression": "1+1"}, "sessionId": "S1"}),
            json!({"result": {"type": "number", "value": 2}}),
        ),
    ];
    for (tool, args, method, params, answer) in cases {
        let (request, result) =
            call_answered(&bridge, &mut extension, tool, args.clone(), answer.clone()).await;
        assert_eq!(request["method"], method, "{tool} {args}");
        assert_eq!(request["params"], params, "{tool} {args}");
        if let Some(page_text) = answer["value"]
            .as_str()
            .filter(|_| tool == "browser_evaluate")
        {
            // An evaluated string is page text: the result's text alone, as the page gave it.
            assert_eq!(text(&result), page_text, "{tool} {args}");
            assert!(result.get("structuredContent").is_none(), "{result}");
            continue;
        }
        assert_eq!(ok_json(&result), answer, "{tool} {args}");
    }

    // Screenshots: the image itself, as MCP image content.
    let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
    let (request, result) = call_answered(
        &bridge,
        &mut extension,
        "browser_screenshot",
        json!({"fullPage": true}),
        json!({"tabId": 7, "data": png, "mimeType": "image/png"}),
    )
    .await;
    assert_eq!(request["method"], "screenshot");
    assert_eq!(request["params"], json!({"fullPage": true}));
    assert!(!is_error(&result), "{result}");
    assert_eq!(
        result["content"][0],
        json!({"type": "image", "data": png, "mimeType": "image/png"})
    );
    assert!(text(&result).contains("tab 7"), "{result}");
    bridge.cancel().await.unwrap();
}

#[tokio::test]
async fn a_multi_megabyte_screenshot_arrives_intact_even_with_a_result_limit() {
    let relay = relay().await;
    let mut extension = Extension::connect(&relay, USER, "Chrome", "client-1").await;
    let bridge = bridge(&relay.url("/mcp"), &["--max-result-bytes", "1000"]).await;
    // 3 MB of base64, different at every position, as JPEG.
    let data: String = (0..3_000_000u32)
        .map(|i| {
            let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
            alphabet[(i.wrapping_mul(2_654_435_761) >> 26) as usize] as char
        })
        .collect();
    let (request, result) = call_answered(
        &bridge,
        &mut extension,
        "browser_screenshot",
        json!({"format": "jpeg", "quality": 80}),
        json!({"tabId": 3, "data": data, "mimeType": "image/jpeg"}),
    )
    .await;
    assert_eq!(request["params"], json!({"format": "jpeg", "quality": 80}));
    assert_eq!(result["content"][0]["type"], "image");
    assert_eq!(result["content"][0]["mimeType"], "image/jpeg");
    assert!(
        result["content"][0]["data"] == data.as_str(),
        "image data changed"
    );
    bridge.cancel().await.unwrap();
}

#[tokio::test]
async fn long_text_results_come_in_parts_at_line_boundaries_and_offset_reads_on() {
    let relay = relay().await;
    let mut extension = Extension::connect(&relay, USER, "Chrome", "client-1").await;
    // The former flag name still works, and counts characters now.
    let bridge = bridge(&relay.url("/mcp"), &["--max-result-bytes", "1500"]).await;
    let outline: String = (0..400)
        .map(|i| format!("- listitem \"é{i} \\\"quoted\\\"\" [ref=e{i}]\n"))
        .collect();
    let answer = json!({"tabId": 1, "url": "https://example.com/", "title": "Long",
        "snapshot": outline});
    // What a model reads in all: a plain header, then the outline exactly as printed.
    let full = format!("Tab 1 · https://example.com/ · Long\n\n{outline}");

    let (_, first) = call_answered(
        &bridge,
        &mut extension,
        "browser_snapshot",
        json!({}),
        answer,
    )
    .await;
    assert!(!is_error(&first), "{first}");
    // Page text reaches the host as text alone: Claude Code and VS Code would give their model
    // `structuredContent` in its place (crates/bridge/src/tools/results.rs).
    assert!(first.get("structuredContent").is_none(), "{first}");
    assert!(first.get("_meta").is_none(), "{first}");
    let mut chunk = text(&first);
    let mut collected = String::new();
    let mut calls = 1;
    loop {
        assert!(
            chunk.chars().count() <= 1500,
            "a part of {} characters",
            chunk.chars().count()
        );
        let (body, note) = chunk
            .rsplit_once("[Part ")
            .unwrap_or_else(|| panic!("no note in {chunk}"));
        // Parts end at line boundaries: the note is on a line of its own.
        assert!(body.ends_with('\n'), "{body}");
        collected.push_str(body);
        if note.contains("End of the result.") {
            break;
        }
        let offset: u64 = note
            .split("{\"offset\": ")
            .nth(1)
            .and_then(|rest| rest.split('}').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no offset in {note}"));
        assert!(note.contains("call browser_snapshot with"), "{note}");
        assert_eq!(offset as usize, collected.chars().count());
        // Served from the bridge's memory: the extension sees nothing.
        let next = call(&bridge, "browser_snapshot", json!({"offset": offset})).await;
        assert!(!is_error(&next), "{next}");
        chunk = text(&next);
        calls += 1;
        assert!(calls < 100, "too many parts");
    }
    assert_eq!(collected, full);
    assert!(calls >= 5);
    extension
        .client
        .expect_silence(Duration::from_millis(200))
        .await;

    // A tool without offset says how to see everything instead.
    let long_name = "n".repeat(3000);
    let (_, cut) = call_answered(
        &bridge,
        &mut extension,
        "browser_hover",
        json!({"selector": "a"}),
        json!({"hovered": true, "element": long_name}),
    )
    .await;
    assert!(text(&cut).contains("larger --max-result-chars"), "{cut}");
    bridge.cancel().await.unwrap();
}

/// Issue 23: Playwright MCP's `target`, `browser_find`, `browser_drop`, `browser_emulate_media`
/// and downloads reach the extension as the wire contract (/work/contract-23.md) says, and
/// their results read as text.
#[tokio::test]
async fn issue_23_tools_speak_the_contracts_commands() {
    let relay = relay().await;
    let mut extension = Extension::connect(&relay, USER, "Chrome", "client-1").await;
    let downloads = tempfile::tempdir().unwrap();
    let downloads_dir = downloads.path().to_string_lossy().into_owned();
    let bridge = bridge(&relay.url("/mcp"), &["--downloads-dir", &downloads_dir]).await;

    // target: a ref goes as `ref`, anything else as `selector`.
    let (request, _) = call_answered(
        &bridge,
        &mut extension,
        "browser_click",
        json!({"target": "f1e3"}),
        json!({"tabId": 7, "clicked": true}),
    )
    .await;
    assert_eq!(request["params"], json!({"ref": "f1e3"}));
    let (request, _) = call_answered(
        &bridge,
        &mut extension,
        "browser_drag",
        json!({"startTarget": "li:first-child", "endTarget": "e9"}),
        json!({"tabId": 7, "dragged": true}),
    )
    .await;
    assert_eq!(
        request["params"],
        json!({"startSelector": "li:first-child", "endRef": "e9"})
    );

    // browser_find: one outline from the extension, searched in the bridge.
    let outline = "- main [ref=e1]:\n  - list \"Todo\" [ref=e2]:\n    - listitem [ref=e3]: Buy milk\n  - button \"Save\" [ref=e4]";
    let (request, found) = call_answered(
        &bridge,
        &mut extension,
        "browser_find",
        json!({"regex": "/save/i"}),
        json!({"tabId": 7, "url": "https://t/", "title": "T", "snapshot": outline}),
    )
    .await;
    assert_eq!(request["method"], "snapshot");
    assert_eq!(request["params"], json!({"format": "outline"}));
    assert!(
        text(&found).contains("- main [ref=e1]:\n") && text(&found).contains("[ref=e4]  ◀"),
        "{found}"
    );
    assert!(text(&found).contains("1 of "), "{found}");
    assert!(found.get("structuredContent").is_none(), "{found}");

    // browser_drop: files read here, plus MIME data.
    let file = downloads.path().join("note.txt");
    std::fs::write(&file, "héllo").unwrap();
    let (request, dropped) = call_answered(
        &bridge,
        &mut extension,
        "browser_drop",
        json!({"target": "e2", "paths": [file], "data": {"text/plain": "x"}}),
        json!({"tabId": 7, "dropped": {"files": 1, "types": ["Files", "text/plain"]}, "accepted": true}),
    )
    .await;
    assert_eq!(request["method"], "drop");
    assert_eq!(request["params"]["ref"], "e2");
    assert_eq!(request["params"]["data"], json!({"text/plain": "x"}));
    assert_eq!(request["params"]["files"][0]["name"], "note.txt");
    assert_eq!(request["params"]["files"][0]["data"], "aMOpbGxv");
    assert_eq!(ok_json(&dropped)["accepted"], true);

    // browser_emulate_media: null clears, absent is left alone.
    let (request, _) = call_answered(
        &bridge,
        &mut extension,
        "browser_emulate_media",
        json!({"colorScheme": "dark", "reducedMotion": null}),
        json!({"tabId": 7, "emulated": {"colorScheme": "dark"}}),
    )
    .await;
    assert_eq!(request["method"], "emulateMedia");
    assert_eq!(
        request["params"],
        json!({"colorScheme": "dark", "reducedMotion": null})
    );

    // A download the click started is taken and saved where the bridge runs.
    let extension_side = async {
        let click = extension.next_request().await;
        extension
            .reply(
                &click,
                json!({"tabId": 7, "clicked": true, "downloads": [{"id": "d1", "url": "https://t/r.csv",
                    "filename": "r.csv", "mimeType": "text/csv", "bytes": 4, "state": "complete"}]}),
            )
            .await;
        let take = extension.next_request().await;
        extension
            .reply(
                &take,
                json!({"id": "d1", "filename": "r.csv", "mimeType": "text/csv", "bytes": 4, "data": "YSxiCg=="}),
            )
            .await;
        take
    };
    let (clicked, take) = tokio::join!(
        call(&bridge, "browser_click", json!({"target": "#export"})),
        extension_side
    );
    assert_eq!(take["method"], "takeDownload");
    assert_eq!(take["params"]["id"], "d1");
    assert!(take["params"]["maxBytes"].as_u64().unwrap() > 1_000_000);
    let saved = downloads.path().join("r.csv");
    assert_eq!(std::fs::read(&saved).unwrap(), b"a,b\n");
    assert!(
        text(&clicked).contains(&format!("saved as {}", saved.display())),
        "{clicked}"
    );
    assert_eq!(
        clicked["structuredContent"]["downloads"][0]["saved"],
        saved.display().to_string()
    );
    bridge.cancel().await.unwrap();
}

#[tokio::test]
async fn extension_and_argument_errors_become_tool_errors_a_model_can_act_on() {
    let relay = relay().await;
    let mut extension = Extension::connect(&relay, USER, "Chrome", "client-1").await;
    let bridge = bridge(&relay.url("/mcp"), &[]).await;

    let refusing = async {
        let request = extension.next_request().await;
        extension
            .client
            .send(json!({"jsonrpc": "2.0", "id": request["id"],
                "error": {"code": -32000, "message": "No element matches selector #missing"}}))
            .await;
    };
    let (result, ()) = tokio::join!(
        call(&bridge, "browser_click", json!({"selector": "#missing"})),
        refusing
    );
    assert!(is_error(&result), "{result}");
    assert!(
        text(&result).starts_with(
            "browser_click failed: the browser could not do it: No element matches selector \
             #missing"
        ),
        "{result}"
    );

    // Arguments a model gets wrong are explained without bothering the browser.
    let missing = call(&bridge, "browser_type", json!({"selector": "#q"})).await;
    assert!(is_error(&missing));
    assert!(text(&missing).contains("\"text\""), "{missing}");
    let select = call(&bridge, "browser_tabs", json!({"action": "select"})).await;
    assert!(text(&select).contains("needs \"tabId\""), "{select}");
    extension
        .client
        .expect_silence(Duration::from_millis(200))
        .await;
    bridge.cancel().await.unwrap();
}

#[tokio::test]
async fn without_a_browser_calls_say_to_open_the_extension() {
    let relay = relay().await;
    let bridge = bridge(&relay.url("/mcp"), &[]).await;
    let started = Instant::now();
    let result = call(&bridge, "browser_snapshot", json!({})).await;
    assert!(is_error(&result), "{result}");
    assert!(
        text(&result).starts_with(
            "browser_snapshot failed: no browser connected: open the browser with the mcp-relay \
             extension and check its token"
        ),
        "{result}"
    );
    assert!(started.elapsed() < Duration::from_secs(2));
    bridge.cancel().await.unwrap();
}

#[tokio::test]
async fn browser_going_away_fails_fast_and_coming_back_works_without_restarting_the_bridge() {
    let relay = relay().await;
    let mut extension = Extension::connect(&relay, USER, "Chrome", "client-1").await;
    let extension_id = extension.extension_id.clone();
    let bridge = bridge(&relay.url("/mcp"), &[]).await;
    let (_, before) = call_answered(
        &bridge,
        &mut extension,
        "browser_evaluate",
        json!({"expression": "1"}),
        json!({"value": 1, "type": "number"}),
    )
    .await;
    assert!(!is_error(&before), "{before}");

    extension.client.close().await;
    wait_for_status(&bridge, "the disconnect", |s| {
        s["browser_connected"] == false
    })
    .await;
    let started = Instant::now();
    let gone = call(&bridge, "browser_evaluate", json!({"expression": "1"})).await;
    assert!(started.elapsed() < Duration::from_secs(2), "not fast");
    assert!(is_error(&gone), "{gone}");
    let message = text(&gone);
    assert!(
        message.contains("the browser \"Chrome\" is not available"),
        "{message}"
    );
    assert!(message.contains("disconnected from the relay"), "{message}");
    assert!(
        message.contains("reconnects to it automatically"),
        "{message}"
    );

    // The same extension (same client_id) comes back: the bridge reconnects on the relay's
    // `connected` notification, before any tool call.
    let mut back = Extension::connect(&relay, USER, "Chrome", "client-1").await;
    assert_eq!(back.extension_id, extension_id);
    let status =
        wait_for_status(&bridge, "the reconnect", |s| s["browser_connected"] == true).await;
    assert_eq!(status["browser"]["extension_id"], extension_id.as_str());
    let (request, after) = call_answered(
        &bridge,
        &mut back,
        "browser_evaluate",
        json!({"expression": "2"}),
        json!({"value": 2, "type": "number"}),
    )
    .await;
    assert_eq!(request["params"], json!({"expression": "2"}));
    assert_eq!(ok_json(&after), json!({"value": 2, "type": "number"}));
    // The tool list did not change across all this.
    assert_eq!(bridge.list_all_tools().await.unwrap().len(), 35);
    bridge.cancel().await.unwrap();
}

#[tokio::test]
async fn a_relay_restart_is_survived_and_the_bridge_returns_to_its_browser() {
    let first = relay().await;
    let address = first.local_addr;
    let extension = Extension::connect(&first, USER, "Chrome", "client-1").await;
    let echo = extension.spawn_echo();
    let bridge = bridge(&first.url("/mcp"), &[]).await;
    let answer = ok_json(&call(&bridge, "browser_snapshot", json!({})).await);
    assert_eq!(answer["echo"], "snapshot");

    first.shutdown().await;
    echo.abort();
    let down = call(&bridge, "browser_snapshot", json!({})).await;
    assert!(is_error(&down), "{down}");
    let message = text(&down);
    assert!(
        message.contains("relay") && message.contains("call the tool again"),
        "{message}"
    );

    let second = relay_with(|config| config.listen = address).await;
    let echo = Extension::connect(&second, USER, "Chrome", "client-1")
        .await
        .spawn_echo();
    let status = wait_for_status(&bridge, "the relay and browser to be back", |s| {
        s["relay_connected"] == true && s["browser_connected"] == true
    })
    .await;
    assert_eq!(status["browser"]["name"], "Chrome");
    let answer = ok_json(&call(&bridge, "browser_snapshot", json!({})).await);
    assert_eq!(answer["echo"], "snapshot");
    echo.abort();
    bridge.cancel().await.unwrap();
}

#[tokio::test]
async fn with_several_browsers_the_model_chooses_with_browser_connect() {
    let relay = relay().await;
    let mut work = Extension::connect(&relay, USER, "Work", "client-work").await;
    let mut home = Extension::connect(&relay, USER, "Home", "client-home").await;
    let bridge = bridge(&relay.url("/mcp"), &[]).await;

    let undecided = call(&bridge, "browser_hover", json!({"selector": "a"})).await;
    assert!(is_error(&undecided), "{undecided}");
    let message = text(&undecided);
    assert!(
        message.contains("several browsers are connected"),
        "{message}"
    );
    assert!(
        message.contains("\"Work\"") && message.contains("\"Home\""),
        "{message}"
    );
    assert!(message.contains("browser_connect"), "{message}");

    let list = ok_json(&call(&bridge, "browser_list", json!({})).await);
    assert_eq!(list["browsers"].as_array().unwrap().len(), 2);
    assert!(list["browsers"]
        .as_array()
        .unwrap()
        .iter()
        .all(|b| b["current"] == false));

    let chosen = ok_json(
        &call(
            &bridge,
            "browser_connect",
            json!({"browser": home.extension_id}),
        )
        .await,
    );
    assert_eq!(chosen["name"], "Home");
    let (request, _) = call_answered(
        &bridge,
        &mut home,
        "browser_hover",
        json!({"selector": "a"}),
        json!({"hovered": true}),
    )
    .await;
    assert_eq!(request["method"], "hover");

    // Switching: by name, case-insensitive.
    ok_json(&call(&bridge, "browser_connect", json!({"browser": "WORK"})).await);
    let (request, _) = call_answered(
        &bridge,
        &mut work,
        "browser_hover",
        json!({"selector": "b"}),
        json!({"hovered": true}),
    )
    .await;
    assert_eq!(request["params"], json!({"selector": "b"}));
    let list = ok_json(&call(&bridge, "browser_list", json!({})).await);
    let current: Vec<_> = list["browsers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["current"] == true)
        .map(|b| b["name"].clone())
        .collect();
    assert_eq!(current, vec![json!("Work")]);

    let unknown = call(&bridge, "browser_connect", json!({"browser": "Office"})).await;
    assert!(is_error(&unknown));
    assert!(text(&unknown).contains("no connected browser matches \"Office\""));
    bridge.cancel().await.unwrap();
}

#[tokio::test]
async fn the_browser_flag_picks_one_of_several_browsers() {
    let relay = relay().await;
    let _work = Extension::connect(&relay, USER, "Work", "client-work").await;
    let mut home = Extension::connect(&relay, USER, "Home", "client-home").await;
    let bridge = bridge(&relay.url("/mcp"), &["--browser", "home"]).await;
    let (request, result) = call_answered(
        &bridge,
        &mut home,
        "browser_snapshot",
        json!({}),
        json!({"title": "Home page"}),
    )
    .await;
    assert_eq!(request["method"], "snapshot");
    assert_eq!(ok_json(&result)["title"], "Home page");
    bridge.cancel().await.unwrap();
}

#[tokio::test]
async fn the_relay_url_can_come_from_the_tokens_connection_url_claim() {
    let relay = relay().await;
    let mut claims = MintClaims::new(USER, Some(Role::Mcp), Duration::from_secs(3600));
    claims.connection_url = Some(relay.url("/mcp"));
    let bridge = bridge_with(&[], &mint_hs256(SECRET.as_bytes(), &claims)).await;
    let status = wait_for_status(&bridge, "the relay", |s| s["relay_connected"] == true).await;
    assert_eq!(status["relay_url"], relay.url("/mcp"));
    bridge.cancel().await.unwrap();
}

#[tokio::test]
async fn a_refused_token_is_reported_with_what_to_fix() {
    let relay = relay().await;
    let bridge = bridge_with(&["--relay", &relay.url("/mcp")], "not-a-jwt").await;
    let result = call(&bridge, "browser_list", json!({})).await;
    assert!(is_error(&result), "{result}");
    let message = text(&result);
    assert!(
        message.contains("the relay refused the bridge's token"),
        "{message}"
    );
    assert!(message.contains("MCP_RELAY_TOKEN"), "{message}");
    bridge.cancel().await.unwrap();
}

#[tokio::test]
async fn wss_needs_the_private_ca_given_with_ca_cert() {
    let dir = tempfile::tempdir().unwrap();
    let certs = mcp_relay::net::certs::generate(&[]).unwrap();
    let (cert, key) = mcp_relay::net::certs::write(dir.path(), &certs).unwrap();
    let relay = relay_with(|config| {
        config.tls_cert = Some(cert);
        config.tls_key = Some(key);
    })
    .await;
    let url = relay.url("/mcp");
    assert!(url.starts_with("wss://"));

    let ca = dir.path().join("ca.pem");
    let trusted = bridge(&url, &["--ca-cert", ca.to_str().unwrap()]).await;
    wait_for_status(&trusted, "the TLS connection", |s| {
        s["relay_connected"] == true
    })
    .await;
    trusted.cancel().await.unwrap();

    let untrusted = bridge(&url, &[]).await;
    let status = wait_for_status(&untrusted, "the TLS failure", |s| {
        s["relay_error"].is_string()
    })
    .await;
    assert_eq!(status["relay_connected"], false);
    let error = status["relay_error"].as_str().unwrap();
    assert!(
        error.contains("certificate") && error.contains("--ca-cert"),
        "{error}"
    );
    untrusted.cancel().await.unwrap();
}

#[tokio::test]
async fn a_browser_that_does_not_answer_times_out_with_advice() {
    let relay = relay().await;
    let mut extension = Extension::connect(&relay, USER, "Chrome", "client-1").await;
    let bridge = bridge(&relay.url("/mcp"), &["--request-timeout", "500ms"]).await;
    let (result, request) = tokio::join!(
        call(
            &bridge,
            "browser_evaluate",
            json!({"expression": "while(true){}"})
        ),
        extension.next_request()
    );
    assert_eq!(request["method"], "evaluate");
    assert!(is_error(&result), "{result}");
    let message = text(&result);
    assert!(message.contains("no answer within 500ms"), "{message}");
    assert!(message.contains("browser_status"), "{message}");

    // The late answer is dropped; the next call works.
    extension.reply(&request, json!({"value": "late"})).await;
    let (_, next) = call_answered(
        &bridge,
        &mut extension,
        "browser_evaluate",
        json!({"expression": "1"}),
        json!({"value": 1, "type": "number"}),
    )
    .await;
    assert_eq!(ok_json(&next), json!({"value": 1, "type": "number"}));
    bridge.cancel().await.unwrap();
}

#[tokio::test]
async fn stdout_carries_only_mcp_frames_and_closing_stdin_stops_the_bridge() {
    use std::process::Stdio;
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

    // No relay at this address: the bridge logs warnings while it serves MCP.
    let address = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp-relay"))
        .args(["bridge", "--relay", &format!("ws://{address}/mcp")])
        .env("MCP_RELAY_TOKEN", token(USER, Some(Role::Mcp)))
        .env("MCP_RELAY_LOG", "debug")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut stderr = child.stderr.take().unwrap();
    let frames = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": "browser_list", "arguments": {}}}),
    ];
    for frame in frames {
        stdin
            .write_all(format!("{frame}\n").as_bytes())
            .await
            .unwrap();
    }
    let mut answers = BTreeMap::new();
    while answers.len() < 3 {
        let line = tokio::time::timeout(WAIT, stdout.next_line())
            .await
            .expect("timed out reading stdout")
            .unwrap()
            .expect("stdout closed early");
        let frame: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"));
        assert_eq!(frame["jsonrpc"], "2.0", "{line}");
        if let Some(id) = frame["id"].as_u64() {
            answers.insert(id, frame);
        }
    }
    assert_eq!(answers[&1]["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(answers[&2]["result"]["tools"].as_array().unwrap().len(), 35);
    let listed = &answers[&3]["result"];
    assert_eq!(listed["isError"], true, "{listed}");
    assert!(
        listed["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("is not reachable"),
        "{listed}"
    );

    drop(stdin);
    let status = tokio::time::timeout(WAIT, child.wait())
        .await
        .expect("the bridge did not stop when stdin closed")
        .unwrap();
    assert!(status.success(), "{status}");
    while let Some(line) = stdout.next_line().await.unwrap() {
        serde_json::from_str::<Value>(&line)
            .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"));
    }
    let mut logs = String::new();
    stderr.read_to_string(&mut logs).await.unwrap();
    assert!(logs.contains("is not reachable"), "{logs}");
}

#[tokio::test]
async fn official_typescript_sdk_client_initializes_lists_and_calls_a_tool() {
    let Some(client_dir) =
        typescript_sdk_client("official_typescript_sdk_client_initializes_lists_and_calls_a_tool")
    else {
        return;
    };
    let report = run_sdk_client(Path::new("node"), &client_dir.join("client.mjs"), &[], USER).await;
    assert_eq!(report["ok"], true);
    assert_eq!(report["server"], "mcp-relay");
    assert_eq!(report["tools"], 35);
    assert_eq!(
        report["answer"],
        json!({"echo": "evaluate", "params": {"expression": "document.title"}})
    );
}

/// Issue 15: the browser's owner is told which assistant asks (the host's `clientInfo.name`
/// and the bridge's stable client id), and a call refused with `-32010` ("not allowed yet")
/// goes through by itself once the owner allows it, or ends in advice to ask the person.
#[tokio::test]
async fn the_owner_sees_the_hosts_name_and_a_call_waits_for_their_approval() {
    let relay = relay().await;
    let mut extension = Extension::connect(&relay, USER, "Chrome", "client-1").await;
    let bridge = bridge(&relay.url("/mcp"), &["--approval-wait", "3s"]).await;
    let owner = async {
        let opened = extension
            .client
            .recv_notification("connection_opened")
            .await;
        // Refused twice while the person decides, then allowed.
        for _ in 0..2 {
            let request = extension.next_request().await;
            extension
                .client
                .send(
                    json!({"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32010,
                    "message": "The browser's owner has not allowed \"rmcp\" yet"}}),
                )
                .await;
        }
        let request = extension.next_request().await;
        extension.reply(&request, json!({"tabs": []})).await;
        opened
    };
    let started = Instant::now();
    let (result, opened) = tokio::join!(
        call(&bridge, "browser_tabs", json!({"action": "list"})),
        owner
    );
    assert!(!is_error(&result), "{result}");
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "it waited between tries"
    );
    // rmcp's client introduces itself as "rmcp" (its `clientInfo.name`).
    assert_eq!(opened["params"]["client_name"], "rmcp", "{opened}");
    assert!(opened["params"]["client_id"].is_string(), "{opened}");

    // Never allowed: after --approval-wait the model is told what to ask the person.
    let refusing = async {
        loop {
            let request = extension.next_request().await;
            extension
                .client
                .send(
                    json!({"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32010,
                    "message": "The browser's owner has not allowed \"rmcp\" yet"}}),
                )
                .await;
        }
    };
    let result = tokio::select! {
        result = call(&bridge, "browser_tabs", json!({"action": "list"})) => result,
        () = refusing => unreachable!(),
    };
    assert!(is_error(&result), "{result}");
    assert!(text(&result).contains("click Allow"), "{result}");
    bridge.cancel().await.unwrap();
}

/// A denied assistant (`-32010` with `data.decision` "denied") is told at once: no click is
/// coming, so the bridge does not wait `--approval-wait` for one, and the model is told not to
/// retry.
#[tokio::test]
async fn a_denial_by_the_owner_is_reported_at_once_without_waiting() {
    let relay = relay().await;
    let mut extension = Extension::connect(&relay, USER, "Chrome", "client-1").await;
    let bridge = bridge(&relay.url("/mcp"), &["--approval-wait", "20s"]).await;
    let refusing = async {
        let mut refused = 0;
        loop {
            let request = extension.next_request().await;
            refused += 1;
            extension
                .client
                .send(
                    json!({"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32010,
                    "message": "The browser's owner has denied \"rmcp\" the use of this browser",
                    "data": {"decision": "denied"}}}),
                )
                .await;
            if refused > 1 {
                panic!("the bridge asked again after a denial");
            }
        }
    };
    let started = Instant::now();
    let result = tokio::select! {
        result = call(&bridge, "browser_tabs", json!({"action": "list"})) => result,
        () = refusing => unreachable!(),
    };
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "it waited for a click"
    );
    assert!(is_error(&result), "{result}");
    let said = text(&result);
    assert!(
        said.contains("has denied") && said.contains("do not retry"),
        "{result}"
    );
    bridge.cancel().await.unwrap();
}
