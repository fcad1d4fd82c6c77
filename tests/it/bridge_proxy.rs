//! `mcp-relay bridge --tools proxy|retrieve|all`: the `proxy` tool, retrieval, intent-checked
//! calls, `--dynamic` registration, resources, prompts and the audit log, end to end: a real
//! relay in-process, a fake extension over a real WebSocket, and the bridge binary driven over
//! stdio by rmcp's client, or by a raw JSON-RPC client where the exact bytes matter (rmcp's
//! typed content drops the proxy spec's custom annotation keys, as strict clients do).

use crate::common;

use std::process::Stdio;
use std::sync::Arc;

use common::{relay, token, Extension, WAIT};
use mcp_relay::auth::Role;
use rmcp::model::{CallToolRequestParams, GetPromptRequestParams, ReadResourceRequestParams};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::{ClientHandler, RoleClient};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

const USER: &str = "alice";
/// 35 browser tools and every command of the compiled-in CDP catalog.
const BROWSER_TOOLS: usize = 35;

use common::bridge::{
    bridge_command, call, is_error, ok_json, python_sdk_client, run_sdk_client, start_bridge, text,
    typescript_sdk_client,
};

fn command(relay_url: &str, extra: &[&str]) -> tokio::process::Command {
    let mut args = vec!["--relay", relay_url];
    args.extend_from_slice(extra);
    bridge_command(&args, &token(USER, Some(Role::Mcp)))
}

async fn bridge_as<C: ClientHandler>(
    client: C,
    relay_url: &str,
    extra: &[&str],
) -> RunningService<RoleClient, C> {
    let mut args = vec!["--relay", relay_url];
    args.extend_from_slice(extra);
    start_bridge(client, &args, &token(USER, Some(Role::Mcp))).await
}

async fn bridge(relay_url: &str, extra: &[&str]) -> RunningService<RoleClient, ()> {
    bridge_as((), relay_url, extra).await
}

async fn tool_names<C: ClientHandler>(bridge: &RunningService<RoleClient, C>) -> Vec<String> {
    tokio::time::timeout(WAIT, bridge.list_all_tools())
        .await
        .expect("tools/list timed out")
        .expect("tools/list")
        .into_iter()
        .map(|t| t.name.to_string())
        .collect()
}

/// An MCP client that speaks JSON lines itself, to see the bytes the bridge writes.
struct RawClient {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    stdout: BufReader<tokio::process::ChildStdout>,
    next_id: u64,
}

impl RawClient {
    async fn start(relay_url: &str, extra: &[&str]) -> RawClient {
        let mut command = command(relay_url, extra);
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command.spawn().expect("spawning the bridge");
        let mut client = RawClient {
            stdin: child.stdin.take().unwrap(),
            stdout: BufReader::new(child.stdout.take().unwrap()),
            child,
            next_id: 0,
        };
        let init = client
            .request(
                "initialize",
                json!({"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "raw", "version": "0"}}),
            )
            .await;
        assert!(
            init["result"]["capabilities"]["tools"].is_object(),
            "{init}"
        );
        client
            .send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        client
    }

    async fn send(&mut self, message: Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).await.unwrap();
        self.stdin.flush().await.unwrap();
    }

    /// Sends a request and returns its response, skipping notifications.
    async fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        loop {
            let mut line = String::new();
            let n = tokio::time::timeout(WAIT, self.stdout.read_line(&mut line))
                .await
                .expect("timed out waiting for the bridge")
                .unwrap();
            assert!(n > 0, "the bridge closed stdout");
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id {
                return message;
            }
        }
    }

    /// `tools/call` result.
    async fn call(&mut self, tool: &str, args: Value) -> Value {
        let response = self
            .request("tools/call", json!({"name": tool, "arguments": args}))
            .await;
        response["result"].clone()
    }
}

impl Drop for RawClient {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

/// The one item of a query result: checks the shape both specs require and returns it.
fn query_item(result: &Value) -> &Value {
    assert!(!is_error(result), "{result}");
    let content = result["content"].as_array().unwrap();
    assert_eq!(content.len(), 1, "{result}");
    let item = &content[0];
    assert_eq!(item["type"], "resource");
    assert_eq!(item["resource"]["mimeType"], "application/json");
    // The same metadata in annotations (proxy spec) and in _meta.proxy (strict clients).
    let annotations = item["annotations"].as_object().expect("annotations");
    for (key, value) in item["_meta"]["proxy"].as_object().expect("_meta.proxy") {
        assert_eq!(&annotations[key], value, "{key}");
    }
    item
}

fn item_data(item: &Value) -> Value {
    serde_json::from_str(item["resource"]["text"].as_str().unwrap()).unwrap()
}

#[tokio::test]
async fn each_mode_lists_its_tools() {
    let relay = relay().await;
    let url = relay.url("/mcp");
    let browser: Vec<String> = tool_names(&bridge(&url, &[]).await).await;
    assert_eq!(browser.len(), BROWSER_TOOLS);
    assert!(browser.iter().all(|n| n.starts_with("browser_")));
    let explicit = tool_names(&bridge(&url, &["--tools", "direct"]).await).await;
    assert_eq!(explicit, browser);
    assert_eq!(
        tool_names(&bridge(&url, &["--tools", "proxy"]).await).await,
        ["proxy"]
    );
    let retrieve_set = [
        "retrieve_tools",
        "describe_tool",
        "call_tool_read",
        "call_tool_write",
        "call_tool_destructive",
    ];
    assert_eq!(
        tool_names(&bridge(&url, &["--tools", "retrieve"]).await).await,
        retrieve_set
    );
    let all = tool_names(&bridge(&url, &["--tools", "all"]).await).await;
    let mut expected = browser.clone();
    expected.push("proxy".into());
    expected.extend(retrieve_set.iter().map(|s| s.to_string()));
    assert_eq!(all, expected);

    // --dynamic without the retrieval tools is a start-up error, said on stderr.
    let output = command(&url, &["--dynamic", "3"])
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--tools retrieve"), "{stderr}");
}

#[tokio::test]
async fn proxy_lists_describes_and_calls_tools_with_the_spec_annotations() {
    let relay = relay().await;
    let mut extension = Extension::connect(&relay, USER, "Chrome Test", "client-1").await;
    let mut client = RawClient::start(&relay.url("/mcp"), &["--tools", "proxy"]).await;
    let total = BROWSER_TOOLS + mcp_relay_bridge::catalog().commands.len();

    // list: one JSON resource, default page, every annotation.
    let list = client
        .call("proxy", json!({"action": "list", "type": "tool"}))
        .await;
    let item = query_item(&list);
    assert_eq!(item["resource"]["uri"], "proxy:list/tool");
    assert_eq!(
        item["annotations"],
        json!({"proxyAction": "list", "proxyType": "tool", "dataType": "Tool", "pythonType": "Tool",
               "many": true, "totalCount": total, "offset": 0, "limit": 100})
    );
    let tools = item_data(item);
    assert_eq!(tools.as_array().unwrap().len(), 100);
    assert_eq!(tools[0]["name"], "browser_list");
    assert!(tools[0]["inputSchema"].is_object());

    // Paging and the name-prefix filter.
    let page = client
        .call(
            "proxy",
            json!({"action": "list", "type": "tool", "filter_server": "browser_", "limit": 5, "offset": 10}),
        )
        .await;
    let item = query_item(&page);
    assert_eq!(item["annotations"]["totalCount"], BROWSER_TOOLS);
    assert_eq!(
        (
            item["annotations"]["offset"].clone(),
            item["annotations"]["limit"].clone()
        ),
        (json!(10), json!(5))
    );
    let names: Vec<Value> = item_data(item)
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].clone())
        .collect();
    assert_eq!(
        names,
        [
            json!("browser_snapshot"),
            json!("browser_find"),
            json!("browser_cdp"),
            json!("browser_navigate_back"),
            json!("browser_navigate_forward")
        ]
    );
    let cdp_network = client
        .call("proxy", json!({"action": "list", "type": "tool", "filter_server": "cdp:Network.", "limit": 1000}))
        .await;
    let network = item_data(query_item(&cdp_network));
    assert!(network.as_array().unwrap().len() > 20);
    assert!(network
        .as_array()
        .unwrap()
        .iter()
        .all(|t| t["name"].as_str().unwrap().starts_with("cdp:Network.")));

    // info: one object, with proxyPath, not many.
    for path in ["browser_click", "cdp:Page.navigate"] {
        let info = client
            .call(
                "proxy",
                json!({"action": "info", "type": "tool", "path": path}),
            )
            .await;
        let item = query_item(&info);
        assert_eq!(item["resource"]["uri"], format!("proxy:info/tool/{path}"));
        assert_eq!(
            item["annotations"],
            json!({"proxyAction": "info", "proxyType": "tool", "proxyPath": path,
                   "dataType": "Tool", "pythonType": "Tool", "many": false})
        );
        assert_eq!(item_data(item)["name"], path);
    }
    let navigate = item_data(query_item(
        &client
            .call(
                "proxy",
                json!({"action": "info", "type": "tool", "path": "cdp:Page.navigate"}),
            )
            .await,
    ));
    assert_eq!(navigate["inputSchema"]["required"], json!(["url"]));
    assert_eq!(navigate["annotations"]["destructiveHint"], false);
    // A page's own tools (WebMCP) are reached through the fixed pair, destructive whatever
    // the page says.
    let call_page_tool = item_data(query_item(
        &client
            .call(
                "proxy",
                json!({"action": "info", "type": "tool", "path": "browser_call_page_tool"}),
            )
            .await,
    ));
    assert_eq!(call_page_tool["inputSchema"]["required"], json!(["name"]));
    assert_eq!(call_page_tool["annotations"]["destructiveHint"], true);

    // call: the tool's own content, each item annotated.
    let call = async {
        client
            .call("proxy", json!({"action": "call", "type": "tool", "path": "browser_snapshot", "args": {"tabId": 3}}))
            .await
    };
    let answer = async {
        let request = extension.next_request().await;
        extension
            .reply(
                &request,
                json!({"url": "https://example.com/", "title": "Example"}),
            )
            .await;
        request
    };
    let (result, request) = tokio::join!(call, answer);
    assert_eq!(request["method"], "snapshot");
    assert_eq!(request["params"], json!({"tabId": 3, "format": "outline"}));
    assert_eq!(result["isError"], false);
    let content = &result["content"][0];
    assert_eq!(content["type"], "text");
    assert_eq!(
        serde_json::from_str::<Value>(content["text"].as_str().unwrap()).unwrap()["title"],
        "Example"
    );
    let call_annotations =
        json!({"proxyType": "tool", "proxyAction": "call", "proxyPath": "browser_snapshot"});
    assert_eq!(content["annotations"], call_annotations);
    assert_eq!(content["_meta"]["proxy"], call_annotations);

    // A CDP command, with args as a JSON string.
    let call = async {
        client
            .call("proxy", json!({"action": "call", "type": "tool", "path": "cdp:DOM.getDocument", "args": "{\"depth\": 1}"}))
            .await
    };
    let answer = async {
        let request = extension.next_request().await;
        extension
            .reply(&request, json!({"root": {"nodeId": 1}}))
            .await;
        request
    };
    let (result, request) = tokio::join!(call, answer);
    assert_eq!(request["method"], "forwardCDPCommand");
    assert_eq!(
        request["params"],
        json!({"method": "DOM.getDocument", "params": {"depth": 1}})
    );
    assert_eq!(
        result["content"][0]["annotations"]["proxyPath"],
        "cdp:DOM.getDocument"
    );

    // A CDP command the browser refuses: a tool error naming the command, still annotated.
    let call = async {
        client
            .call(
                "proxy",
                json!({"action": "call", "type": "tool", "path": "cdp:Page.navigate", "args": {"url": "about:nothing"}}),
            )
            .await
    };
    let answer = async {
        let request = extension.next_request().await;
        extension
            .client
            .send(json!({"jsonrpc": "2.0", "id": request["id"],
                         "error": {"code": -32000, "message": "Cannot navigate to invalid URL"}}))
            .await;
    };
    let (result, ()) = tokio::join!(call, answer);
    assert_eq!(result["isError"], true);
    let message = result["content"][0]["text"].as_str().unwrap();
    assert!(
        message
            .starts_with("cdp:Page.navigate failed: the browser could not do it: Cannot navigate"),
        "{message}"
    );
    assert_eq!(
        result["content"][0]["annotations"]["proxyPath"],
        "cdp:Page.navigate"
    );

    // Errors are tool errors a model can read.
    let missing = client
        .call(
            "proxy",
            json!({"action": "info", "type": "tool", "path": "browser_fly"}),
        )
        .await;
    assert_eq!(missing["isError"], true);
    assert!(text(&missing).contains("no tool browser_fly"), "{missing}");
}

#[tokio::test]
async fn proxy_validation_errors_reach_the_model_for_each_type() {
    let relay = relay().await;
    let bridge = bridge(&relay.url("/mcp"), &["--tools", "proxy"]).await;
    let cases = [
        (json!({"type": "tool"}), "\"action\" is required"),
        (json!({"action": "list"}), "\"type\" is required"),
        (json!({"action": "fetch", "type": "tool"}), "unknown action"),
        (json!({"action": "list", "type": "widget"}), "unknown type"),
        (
            json!({"action": "list", "type": "resource", "path": "browser://tabs"}),
            "not allowed for action list",
        ),
        (
            json!({"action": "info", "type": "prompt"}),
            "required for action info",
        ),
        (
            json!({"action": "call", "type": "resource"}),
            "required for action call",
        ),
        (
            json!({"action": "info", "type": "prompt", "path": "fill_form", "args": {}}),
            "only allowed for action call",
        ),
        (
            json!({"action": "list", "type": "tool", "args": "{}"}),
            "only allowed for action call",
        ),
        (
            json!({"action": "call", "type": "prompt", "path": "fill_form", "args": "not json"}),
            "not valid JSON",
        ),
        (
            json!({"action": "list", "type": "prompt", "limit": 0}),
            "from 1 to 1000",
        ),
        (
            json!({"action": "list", "type": "resource", "limit": 1001}),
            "from 1 to 1000",
        ),
        (
            json!({"action": "list", "type": "tool", "offset": -5}),
            "0 or more",
        ),
        (
            json!({"action": "call", "type": "tool", "path": "browser_list", "limit": 5}),
            "only allowed for action list",
        ),
        (
            json!({"action": "info", "type": "resource", "path": "browser://tabs", "filter_server": "b"}),
            "only allowed for action list",
        ),
        (
            json!({"action": "call", "type": "resource", "path": "file:///etc/passwd"}),
            "no resource file:///etc/passwd",
        ),
        (
            json!({"action": "call", "type": "prompt", "path": "fill_form"}),
            "needs the argument \"description\"",
        ),
        (
            json!({"action": "call", "type": "prompt", "path": "haiku"}),
            "unknown prompt haiku",
        ),
    ];
    for (args, expected) in cases {
        let result = call(&bridge, "proxy", args.clone()).await;
        assert!(is_error(&result), "{args}: {result}");
        let message = text(&result);
        assert!(message.starts_with("proxy: "), "{message}");
        assert!(message.contains(expected), "{args}: {message}");
    }
}

#[tokio::test]
async fn proxy_lists_and_reads_resources_with_objectification() {
    let relay = relay().await;
    let mut extension = Extension::connect(&relay, USER, "Chrome Test", "client-1").await;
    let mut client = RawClient::start(&relay.url("/mcp"), &["--tools", "proxy"]).await;
    let tabs = json!({"currentTabId": 7, "tabs": [{"tabId": 7, "url": "https://example.com/", "title": "Example"}]});

    let list = async {
        client
            .call("proxy", json!({"action": "list", "type": "resource"}))
            .await
    };
    let answer = async {
        let request = extension.next_request().await;
        extension.reply(&request, tabs.clone()).await;
        request
    };
    let (result, request) = tokio::join!(list, answer);
    assert_eq!(request["method"], "getTabs");
    let item = query_item(&result);
    assert_eq!(item["annotations"]["dataType"], "Resource|ResourceTemplate");
    assert_eq!(
        item["annotations"]["pythonType"],
        "Resource|ResourceTemplate"
    );
    assert_eq!(item["annotations"]["totalCount"], 5);
    let uris: Vec<String> = item_data(item)
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            r.get("uri")
                .or(r.get("uriTemplate"))
                .unwrap()
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(
        uris,
        [
            "browser://tabs",
            "browser://tabs/7/snapshot",
            "browser://tabs/7/screenshot",
            "browser://tabs/{tabId}/snapshot",
            "browser://tabs/{tabId}/screenshot"
        ]
    );

    // info of a template, answered without waiting for a browser that does not answer.
    let info = async {
        client
            .call("proxy", json!({"action": "info", "type": "resource", "path": "browser://tabs/{tabId}/screenshot"}))
            .await
    };
    let answer = async {
        let request = extension.next_request().await;
        extension.reply(&request, tabs.clone()).await;
    };
    let (info, ()) = tokio::join!(info, answer);
    let item = query_item(&info);
    assert_eq!(
        item["annotations"]["proxyPath"],
        "browser://tabs/{tabId}/screenshot"
    );
    assert_eq!(item_data(item)["mimeType"], "image/png");

    // call: JSON text is objectified, the original type kept as contentType.
    let read = async {
        client
            .call(
                "proxy",
                json!({"action": "call", "type": "resource", "path": "browser://tabs"}),
            )
            .await
    };
    let answer = async {
        let request = extension.next_request().await;
        extension.reply(&request, tabs.clone()).await;
    };
    let (read, ()) = tokio::join!(read, answer);
    let content = &read["content"][0];
    assert_eq!(content["type"], "resource");
    assert_eq!(content["resource"]["uri"], "browser://tabs");
    assert_eq!(content["resource"]["mimeType"], "application/json");
    assert_eq!(content["resource"]["contentType"], "application/json");
    assert_eq!(
        serde_json::from_str::<Value>(content["resource"]["text"].as_str().unwrap()).unwrap(),
        tabs
    );
    assert_eq!(
        content["annotations"],
        json!({"proxyType": "resource", "proxyAction": "call", "proxyPath": "browser://tabs"})
    );

    // A blob stays a blob with its own MIME type.
    let shot = async {
        client
            .call("proxy", json!({"action": "call", "type": "resource", "path": "browser://tabs/7/screenshot"}))
            .await
    };
    let answer = async {
        let request = extension.next_request().await;
        extension
            .reply(
                &request,
                json!({"tabId": 7, "data": "iVBORw0KGgo=", "mimeType": "image/png"}),
            )
            .await;
        request
    };
    let (shot, request) = tokio::join!(shot, answer);
    assert_eq!(request["method"], "screenshot");
    assert_eq!(request["params"], json!({"tabId": 7}));
    let content = &shot["content"][0];
    assert_eq!(content["resource"]["blob"], "iVBORw0KGgo=");
    assert_eq!(content["resource"]["mimeType"], "image/png");
    assert!(content["resource"].get("contentType").is_none());
    assert_eq!(
        content["annotations"]["proxyPath"],
        "browser://tabs/7/screenshot"
    );
}

#[tokio::test]
async fn proxy_lists_describes_and_gets_prompts() {
    let relay = relay().await;
    let mut client = RawClient::start(&relay.url("/mcp"), &["--tools", "proxy"]).await;
    let list = client
        .call("proxy", json!({"action": "list", "type": "prompt"}))
        .await;
    let item = query_item(&list);
    assert_eq!(item["annotations"]["dataType"], "Prompt");
    assert_eq!(item["annotations"]["totalCount"], 3);
    let names: Vec<Value> = item_data(item)
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].clone())
        .collect();
    assert_eq!(
        names,
        [
            json!("inspect_page"),
            json!("fill_form"),
            json!("debug_page")
        ]
    );
    let filtered = client
        .call(
            "proxy",
            json!({"action": "list", "type": "prompt", "filter_server": "fill"}),
        )
        .await;
    assert_eq!(query_item(&filtered)["annotations"]["totalCount"], 1);

    let info = client
        .call(
            "proxy",
            json!({"action": "info", "type": "prompt", "path": "fill_form"}),
        )
        .await;
    let item = query_item(&info);
    assert_eq!(item["annotations"]["proxyPath"], "fill_form");
    assert_eq!(item_data(item)["arguments"][0]["name"], "description");

    let got = client
        .call(
            "proxy",
            json!({"action": "call", "type": "prompt", "path": "fill_form", "args": {"description": "name Ada Lovelace"}}),
        )
        .await;
    let content = got["content"].as_array().unwrap();
    assert_eq!(content.len(), 1);
    assert_eq!(content[0]["type"], "resource");
    assert_eq!(content[0]["resource"]["uri"], "proxy:call/prompt/fill_form");
    assert_eq!(content[0]["resource"]["mimeType"], "application/json");
    assert_eq!(
        content[0]["annotations"],
        json!({"proxyType": "prompt", "proxyAction": "call", "proxyPath": "fill_form",
               "dataType": "GetPromptResult", "pythonType": "GetPromptResult", "many": false})
    );
    let prompt = item_data(&content[0]);
    assert_eq!(prompt["messages"][0]["role"], "user");
    assert!(prompt["messages"][0]["content"]["text"]
        .as_str()
        .unwrap()
        .contains("name Ada Lovelace"));
}

#[tokio::test]
async fn resources_and_prompts_through_the_standard_mcp_methods() {
    let relay = relay().await;
    let extension = Extension::connect(&relay, USER, "Chrome Test", "client-1").await;
    let _echo = extension.spawn_echo();
    let bridge = bridge(&relay.url("/mcp"), &[]).await;

    let templates = bridge.list_resource_templates(None).await.unwrap();
    let templates: Vec<String> = templates
        .resource_templates
        .iter()
        .map(|t| t.uri_template.clone())
        .collect();
    assert_eq!(
        templates,
        [
            "browser://tabs/{tabId}/snapshot",
            "browser://tabs/{tabId}/screenshot"
        ]
    );
    // The echo extension answers getTabs with no tabs: only the tab list itself.
    let resources = bridge.list_resources(None).await.unwrap();
    assert_eq!(resources.resources[0].uri, "browser://tabs");

    let read = bridge
        .read_resource(ReadResourceRequestParams::new("browser://tabs/9/snapshot"))
        .await
        .unwrap();
    let read = serde_json::to_value(&read).unwrap();
    let contents = &read["contents"][0];
    assert_eq!(contents["uri"], "browser://tabs/9/snapshot");
    assert_eq!(contents["mimeType"], "application/json");
    let echoed: Value = serde_json::from_str(contents["text"].as_str().unwrap()).unwrap();
    assert_eq!(echoed, json!({"echo": "snapshot", "params": {"tabId": 9}}));
    let unknown = bridge
        .read_resource(ReadResourceRequestParams::new("browser://nothing"))
        .await
        .unwrap_err();
    assert!(
        unknown
            .to_string()
            .contains("no resource browser://nothing"),
        "{unknown}"
    );

    let prompts = bridge.list_prompts(None).await.unwrap();
    assert_eq!(prompts.prompts.len(), 3);
    let mut args = serde_json::Map::new();
    args.insert("symptom".into(), json!("the Save button does nothing"));
    let prompt = bridge
        .get_prompt(GetPromptRequestParams::new("debug_page").with_arguments(args))
        .await
        .unwrap();
    let prompt = serde_json::to_value(&prompt).unwrap();
    assert!(prompt["messages"][0]["content"]["text"]
        .as_str()
        .unwrap()
        .contains("the Save button does nothing"));
    let missing = bridge
        .get_prompt(GetPromptRequestParams::new("debug_page"))
        .await
        .unwrap_err();
    assert!(missing.to_string().contains("symptom"), "{missing}");
}

#[tokio::test]
async fn retrieve_tools_ranks_tools_and_cdp_commands_and_describe_tool_gives_schemas() {
    let relay = relay().await;
    let bridge = bridge(&relay.url("/mcp"), &["--tools", "retrieve"]).await;
    let found = ok_json(
        &call(
            &bridge,
            "retrieve_tools",
            json!({"query": "clear all stored data for a website origin", "limit": 5}),
        )
        .await,
    );
    let hits = found["hits"].as_array().unwrap();
    assert!(!hits.is_empty() && hits.len() <= 5);
    assert_eq!(hits[0]["name"], "cdp:Storage.clearDataForOrigin");
    assert_eq!(hits[0]["call_with"], "call_tool_destructive");
    assert!(hits[0]["signature"]
        .as_str()
        .unwrap()
        .starts_with("cdp:Storage.clearDataForOrigin(origin: string"));
    assert!(hits[0]["score"].as_f64().unwrap() > 0.0);
    assert!(
        found.get("registered").is_none(),
        "no --dynamic, nothing registered"
    );

    let found = ok_json(
        &call(
            &bridge,
            "retrieve_tools",
            json!({"query": "take a screenshot"}),
        )
        .await,
    );
    // Both screenshot tools answer it (the relay's name and Playwright's); both only read.
    let top = found["hits"][0]["name"].as_str().unwrap();
    assert!(
        ["browser_screenshot", "browser_take_screenshot"].contains(&top),
        "{found}"
    );
    assert_eq!(found["hits"][0]["call_with"], "call_tool_read");

    let described = ok_json(
        &call(
            &bridge,
            "describe_tool",
            json!({"name": "cdp:Page.navigate"}),
        )
        .await,
    );
    assert_eq!(
        described["inputSchema"]["properties"]["url"]["type"],
        "string"
    );
    assert_eq!(described["call_with"], "call_tool_write");
    assert!(described["returns"]
        .as_array()
        .unwrap()
        .contains(&json!("frameId")));
    let described = ok_json(&call(&bridge, "describe_tool", json!({"name": "browser_type"})).await);
    // A ref or a selector names the element, so only the text is required.
    assert_eq!(described["inputSchema"]["required"], json!(["text"]));
    assert_eq!(described["annotations"]["destructiveHint"], true);

    for (tool, args, expected) in [
        ("retrieve_tools", json!({}), "\"query\""),
        (
            "retrieve_tools",
            json!({"query": "x", "limit": 0}),
            "from 1 to 50",
        ),
        (
            "retrieve_tools",
            json!({"query": "x", "top": 3}),
            "unknown parameter",
        ),
        (
            "describe_tool",
            json!({"name": "cdp:Page.teleport"}),
            "no tool or CDP command",
        ),
    ] {
        let result = call(&bridge, tool, args).await;
        assert!(
            is_error(&result) && text(&result).contains(expected),
            "{result}"
        );
    }
}

#[tokio::test]
async fn every_call_tool_variant_against_every_access_class() {
    let relay = relay().await;
    let extension = Extension::connect(&relay, USER, "Chrome Test", "client-1").await;
    let _echo = extension.spawn_echo();
    let bridge = bridge(&relay.url("/mcp"), &["--tools", "retrieve"]).await;
    // (target, its class, arguments) for CDP commands and annotated browser tools.
    let targets = [
        ("cdp:DOM.getDocument", "read", json!({})),
        (
            "cdp:Page.navigate",
            "write",
            json!({"url": "https://example.com/"}),
        ),
        (
            "cdp:Storage.clearDataForOrigin",
            "destructive",
            json!({"origin": "https://example.com", "storageTypes": "all"}),
        ),
        ("browser_snapshot", "read", json!({})),
        (
            "browser_connect",
            "write",
            json!({"browser": "Chrome Test"}),
        ),
        ("browser_click", "destructive", json!({"selector": "#go"})),
    ];
    let rank = |c: &str| {
        ["read", "write", "destructive"]
            .iter()
            .position(|x| *x == c)
            .unwrap()
    };
    for variant in ["read", "write", "destructive"] {
        let tool = format!("call_tool_{variant}");
        for (target, class, args) in &targets {
            let result = call(
                &bridge,
                &tool,
                json!({"name": target, "args": args, "intent_reason": "test"}),
            )
            .await;
            if rank(variant) >= rank(class) {
                assert!(!is_error(&result), "{tool} {target}: {result}");
                let answer = ok_json(&result);
                if let Some(method) = target.strip_prefix("cdp:") {
                    assert_eq!(answer["echo"], "forwardCDPCommand", "{answer}");
                    assert_eq!(answer["params"]["method"], method);
                    assert_eq!(&answer["params"]["params"], args);
                } else if *target == "browser_connect" {
                    assert_eq!(answer["connected"], true);
                } else {
                    assert!(answer["echo"].is_string(), "{answer}");
                }
            } else {
                assert!(
                    is_error(&result),
                    "{tool} {target} should be refused: {result}"
                );
                let message = text(&result);
                assert!(
                    message.contains(&format!("use call_tool_{class}")),
                    "{message}"
                );
                assert!(message.contains("refused"), "{message}");
            }
        }
    }
    // The nested intent of mcpproxy, and args_json.
    let nested = call(
        &bridge,
        "call_tool_read",
        json!({"name": "cdp:DOM.getDocument", "args_json": "{\"depth\": 2}",
               "intent": {"operation_type": "read", "data_sensitivity": "public", "reason": "look"}}),
    )
    .await;
    assert_eq!(ok_json(&nested)["params"]["params"], json!({"depth": 2}));
    let mismatch = call(
        &bridge,
        "call_tool_read",
        json!({"name": "cdp:DOM.getDocument", "intent": {"operation_type": "write"}}),
    )
    .await;
    assert!(
        is_error(&mismatch) && text(&mismatch).contains("call call_tool_write"),
        "{mismatch}"
    );
}

#[tokio::test]
async fn every_call_is_written_to_the_audit_log() {
    let relay = relay().await;
    let extension = Extension::connect(&relay, USER, "Chrome Test", "client-1").await;
    let _echo = extension.spawn_echo();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.jsonl");
    let bridge = bridge(
        &relay.url("/mcp"),
        &["--tools", "all", "--audit-log", log.to_str().unwrap()],
    )
    .await;
    call(&bridge, "call_tool_read", json!({"name": "cdp:DOM.getDocument", "intent_data_sensitivity": "public", "intent_reason": "read the page"})).await;
    call(&bridge, "call_tool_read", json!({"name": "cdp:Page.close"})).await;
    call(&bridge, "browser_type", json!({"selector": "#q"})).await;
    call(
        &bridge,
        "proxy",
        json!({"action": "list", "type": "prompt"}),
    )
    .await;
    bridge.cancel().await.unwrap();

    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 4, "{text}");
    for line in &lines {
        assert!(line["time"].as_str().unwrap().ends_with('Z'));
        assert!(line["duration_ms"].as_f64().unwrap() >= 0.0);
    }
    assert_eq!(lines[0]["tool"], "call_tool_read");
    assert_eq!(lines[0]["target"], "cdp:DOM.getDocument");
    assert_eq!(lines[0]["variant"], "read");
    assert_eq!(
        lines[0]["intent"],
        json!({"data_sensitivity": "public", "reason": "read the page"})
    );
    assert_eq!(lines[0]["outcome"], "ok");
    assert_eq!(lines[1]["outcome"], "refused");
    assert!(lines[1]["error"]
        .as_str()
        .unwrap()
        .contains("call_tool_destructive"));
    assert_eq!(lines[2]["tool"], "browser_type");
    assert_eq!(lines[2]["outcome"], "error");
    assert_eq!(lines[3]["tool"], "proxy");
    assert_eq!(lines[3]["target"], "list prompt");
    assert_eq!(lines[3]["outcome"], "ok");
}

/// A client that counts `notifications/tools/list_changed`.
#[derive(Clone, Default)]
struct ListWatcher {
    changed: Arc<tokio::sync::Notify>,
}

impl ClientHandler for ListWatcher {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.changed.notify_one();
    }
}

#[tokio::test]
async fn dynamic_registration_announces_new_tools_that_can_be_called() {
    let relay = relay().await;
    let extension = Extension::connect(&relay, USER, "Chrome Test", "client-1").await;
    let _echo = extension.spawn_echo();
    let watcher = ListWatcher::default();
    let bridge = bridge_as(
        watcher.clone(),
        &relay.url("/mcp"),
        &[
            "--tools",
            "retrieve",
            "--dynamic",
            "2",
            "--dynamic-pool",
            "3",
        ],
    )
    .await;
    let info = bridge.peer_info().unwrap();
    assert_eq!(
        info.capabilities.tools.as_ref().unwrap().list_changed,
        Some(true)
    );
    assert_eq!(tool_names(&bridge).await.len(), 5);

    let found = ok_json(
        &call(
            &bridge,
            "retrieve_tools",
            json!({"query": "get the document root node"}),
        )
        .await,
    );
    assert_eq!(found["hits"][0]["name"], "cdp:DOM.getDocument");
    assert_eq!(found["hits"][0]["registered_as"], "cdp_DOM_getDocument");
    assert_eq!(found["registered"].as_array().unwrap().len(), 2);
    tokio::time::timeout(WAIT, watcher.changed.notified())
        .await
        .expect("no tools/list_changed after retrieve_tools");
    let names = tool_names(&bridge).await;
    assert_eq!(names.len(), 7, "{names:?}");
    assert!(
        names.contains(&"cdp_DOM_getDocument".to_owned()),
        "{names:?}"
    );
    let tools = bridge.list_all_tools().await.unwrap();
    let registered = tools
        .iter()
        .find(|t| t.name == "cdp_DOM_getDocument")
        .unwrap();
    assert_eq!(
        registered.annotations.as_ref().unwrap().read_only_hint,
        Some(true)
    );
    assert!(registered.input_schema["properties"]["depth"].is_object());

    let result = ok_json(&call(&bridge, "cdp_DOM_getDocument", json!({"depth": 1})).await);
    assert_eq!(result["echo"], "forwardCDPCommand");
    assert_eq!(
        result["params"],
        json!({"method": "DOM.getDocument", "params": {"depth": 1}})
    );

    // The same search again changes nothing, so no notification and the same list.
    call(
        &bridge,
        "retrieve_tools",
        json!({"query": "get the document root node"}),
    )
    .await;
    // A new search fills the bounded pool: the least recently used registration goes, the
    // one just called stays.
    ok_json(
        &call(
            &bridge,
            "retrieve_tools",
            json!({"query": "take a screenshot"}),
        )
        .await,
    );
    tokio::time::timeout(WAIT, watcher.changed.notified())
        .await
        .expect("no tools/list_changed after the second search");
    let names = tool_names(&bridge).await;
    assert_eq!(names.len(), 5 + 3, "{names:?}");
    assert!(
        names.contains(&"browser_screenshot".to_owned()),
        "{names:?}"
    );
    assert!(
        names.contains(&"cdp_DOM_getDocument".to_owned()),
        "{names:?}"
    );
    // A tool that was evicted is unknown again.
    let evicted = found["registered"][1].as_str().unwrap();
    assert!(!names.contains(&evicted.to_owned()), "{names:?}");
    let params = CallToolRequestParams::new(evicted.to_owned());
    assert!(bridge.call_tool(params).await.is_err());
}

#[tokio::test]
async fn a_strict_client_keeps_the_proxy_metadata_in_meta() {
    let relay = relay().await;
    let bridge = bridge(&relay.url("/mcp"), &["--tools", "all"]).await;
    // rmcp's typed client, like the official Python SDK, keeps only the annotation keys the
    // MCP schema defines; `_meta` survives.
    let result = call(
        &bridge,
        "proxy",
        json!({"action": "info", "type": "prompt", "path": "inspect_page"}),
    )
    .await;
    let item = &result["content"][0];
    assert!(item["annotations"].get("proxyAction").is_none(), "{item}");
    assert_eq!(
        item["_meta"]["proxy"],
        json!({"proxyAction": "info", "proxyType": "prompt", "proxyPath": "inspect_page",
               "dataType": "Prompt", "pythonType": "Prompt", "many": false})
    );
}

#[tokio::test]
async fn official_typescript_sdk_sees_the_proxy_meta_and_the_dynamic_tools() {
    let Some(client_dir) =
        typescript_sdk_client("official_typescript_sdk_sees_the_proxy_meta_and_the_dynamic_tools")
    else {
        return;
    };
    let report = run_sdk_client(
        std::path::Path::new("node"),
        &client_dir.join("proxy.mjs"),
        &["--tools", "all", "--dynamic", "2"],
        USER,
    )
    .await;
    assert_sdk_kept_the_list_metadata_in_meta(&report);
    assert_eq!(report["before"], BROWSER_TOOLS + 6);
    assert_eq!(report["registered"][0], "cdp_DOM_getDocument");
    assert!(report["listChanged"].as_u64().unwrap() >= 1);
    assert!(report["after"]
        .as_array()
        .unwrap()
        .contains(&json!("cdp_DOM_getDocument")));
    assert_eq!(
        report["answer"],
        json!({"echo": "forwardCDPCommand", "params": {"method": "DOM.getDocument", "params": {"depth": 1}}})
    );
}

/// What an SDK client script reports of `proxy {action: list, type: tool, filter_server:
/// "browser_", limit: 3}`: the official SDKs keep only the annotation keys the MCP schema
/// defines, and `_meta.proxy` carries the proxy metadata instead.
fn assert_sdk_kept_the_list_metadata_in_meta(report: &Value) {
    assert_eq!(report["ok"], true, "{report}");
    assert_eq!(
        report["listed"],
        json!(["browser_list", "browser_connect", "browser_status"])
    );
    assert!(
        report["annotations"].get("proxyAction").is_none(),
        "{report}"
    );
    let meta = &report["meta"]["proxy"];
    assert_eq!(meta["proxyAction"], "list", "{report}");
    assert_eq!(meta["proxyType"], "tool", "{report}");
    assert_eq!(meta["many"], true, "{report}");
    assert_eq!(meta["totalCount"], BROWSER_TOOLS, "{report}");
    assert_eq!(meta["limit"], 3, "{report}");
    assert_eq!(meta["offset"], 0, "{report}");
    assert_eq!(meta["dataType"], "Tool", "{report}");
    assert_eq!(meta["pythonType"], "Tool", "{report}");
}

#[tokio::test]
async fn official_python_sdk_keeps_the_proxy_meta_and_calls_through_the_proxy() {
    let Some(python) =
        python_sdk_client("official_python_sdk_keeps_the_proxy_meta_and_calls_through_the_proxy")
    else {
        return;
    };
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/mcp-python-client/proxy_client.py");
    let report = run_sdk_client(&python, &script, &["--tools", "all"], USER).await;
    assert_eq!(report["server"], "mcp-relay");
    assert_eq!(report["tools"].as_array().unwrap().len(), BROWSER_TOOLS + 6);
    assert_sdk_kept_the_list_metadata_in_meta(&report);
    assert_eq!(
        report["call_meta"]["proxy"],
        json!({"proxyAction": "call", "proxyType": "tool", "proxyPath": "browser_evaluate"})
    );
    // `args` given as a JSON string reached the extension as an object.
    assert_eq!(
        report["answer"],
        json!({"echo": "evaluate", "params": {"expression": "document.title"}})
    );
    assert_eq!(report["refused"]["is_error"], true);
    assert!(
        report["refused"]["text"]
            .as_str()
            .unwrap()
            .contains("\"path\" is not allowed"),
        "{report}"
    );
}

/// Issue 27, point 5: with `--code-execution`, `retrieve_tools` finds `code_execution` by what it
/// does, and the `proxy` tool lists it and describes its input; without the flag neither knows it.
#[tokio::test]
async fn code_execution_is_found_by_retrieve_tools_and_listed_by_the_proxy_tool() {
    let relay = relay().await;
    let url = relay.url("/mcp");
    let with = bridge(&url, &["--tools", "all", "--code-execution"]).await;
    let found = ok_json(
        &call(
            &with,
            "retrieve_tools",
            json!({"query": "run a script that calls several browser tools in one go", "limit": 5}),
        )
        .await,
    );
    let hits: Vec<&str> = found["hits"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|hit| hit["name"].as_str())
        .collect();
    assert!(hits.contains(&"code_execution"), "{found}");
    let listed = call(
        &with,
        "proxy",
        json!({"action": "list", "type": "tool", "filter_server": "code_", "limit": 10}),
    )
    .await;
    assert!(!is_error(&listed), "{listed}");
    assert!(
        listed["content"][0]["resource"]["text"]
            .as_str()
            .unwrap_or_default()
            .contains("\"name\":\"code_execution\""),
        "{listed}"
    );
    let info = call(
        &with,
        "proxy",
        json!({"action": "info", "type": "tool", "path": "code_execution"}),
    )
    .await;
    assert!(!is_error(&info), "{info}");
    let described = info["content"][0]["resource"]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(
        described.contains("\"inputSchema\"") && described.contains("async function"),
        "{info}"
    );

    let without = bridge(&url, &["--tools", "all"]).await;
    let found = ok_json(
        &call(
            &without,
            "retrieve_tools",
            json!({"query": "run a script that calls several browser tools in one go", "limit": 10}),
        )
        .await,
    );
    assert!(!found.to_string().contains("\"code_execution\""), "{found}");
}
