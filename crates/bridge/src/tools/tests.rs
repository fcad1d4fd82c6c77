//! The tool table and the plans calls turn into.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{CallToolResult, JsonObject};
use serde_json::{json, Value};

use super::results::{screenshot_caption, screenshot_result};
use super::table::plan;
use super::*;
use crate::link::{BrowserLink, LinkError};

fn args(value: Value) -> JsonObject {
    value.as_object().unwrap().clone()
}

#[test]
fn every_tool_has_a_title_an_object_schema_and_every_hint_that_means_something() {
    let tools = definitions();
    assert_eq!(tools.len(), 35);
    for tool in &tools {
        assert!(tool.title.is_some(), "{}", tool.name);
        assert_eq!(tool.input_schema["type"], "object", "{}", tool.name);
        let hints = tool.annotations.as_ref().unwrap();
        assert!(hints.read_only_hint.is_some() && hints.destructive_hint.is_some());
        assert!(hints.open_world_hint.is_some(), "{}", tool.name);
        // idempotentHint means something only beside readOnlyHint false, and false is its
        // default: it is sent as true or not at all.
        match hints.read_only_hint {
            Some(true) => assert_eq!(hints.idempotent_hint, None, "{}", tool.name),
            _ => assert_ne!(hints.idempotent_hint, Some(false), "{}", tool.name),
        }
    }
}

#[test]
fn calls_map_onto_extension_commands() {
    let cases = [
        (
            "browser_tabs",
            json!({"action": "list"}),
            "getTabs",
            json!({}),
        ),
        (
            "browser_tabs",
            json!({"action": "new", "url": "https://example.com"}),
            "createTab",
            json!({"url": "https://example.com"}),
        ),
        (
            "browser_navigate",
            json!({"direction": "back", "tabId": 3}),
            "goBack",
            json!({"tabId": 3}),
        ),
        (
            "browser_click",
            json!({"x": 1, "y": 2, "unknown": true}),
            "click",
            json!({"x": 1, "y": 2}),
        ),
        (
            "browser_cdp",
            json!({"method": "Page.reload", "params": {"ignoreCache": true}}),
            "forwardCDPCommand",
            json!({"method": "Page.reload", "params": {"ignoreCache": true}}),
        ),
    ];
    for (tool, call, method, params) in cases {
        assert_eq!(
            plan(tool, &args(call)).unwrap(),
            Plan::Forward {
                method,
                params,
                image: false
            },
            "{tool}"
        );
    }
}

#[test]
fn bad_arguments_are_explained() {
    assert!(plan("browser_tabs", &args(json!({})))
        .unwrap_err()
        .contains("list, new, select or close"));
    assert!(plan("browser_tabs", &args(json!({"action": "select"})))
        .unwrap_err()
        .contains("tabId"));
    assert!(plan("browser_click", &args(json!({"x": 1})))
        .unwrap_err()
        .contains("selector"));
    assert!(plan("browser_navigate", &args(json!({})))
        .unwrap_err()
        .contains("url"));
    assert_eq!(
        plan("browser_snapshot", &args(json!({"offset": 10}))).unwrap(),
        Plan::Continue(10)
    );
}

#[test]
fn playwright_named_tools_map_onto_extension_commands() {
    let cases = [
        (
            "browser_select_option",
            json!({"element": "Colour", "selector": "#colour", "values": ["Blue", "red"]}),
            "selectOption",
            json!({"selector": "#colour", "values": ["Blue", "red"]}),
        ),
        (
            "browser_select_option",
            json!({"selector": "#colour", "values": "red", "tabId": 4}),
            "selectOption",
            json!({"selector": "#colour", "values": ["red"], "tabId": 4}),
        ),
        (
            "browser_press_key",
            json!({"key": "Control+A"}),
            "pressKey",
            json!({"key": "Control+A"}),
        ),
        (
            "browser_type",
            json!({"element": "Name", "selector": "#name", "text": "Ada", "submit": true}),
            "type",
            json!({"selector": "#name", "text": "Ada", "submit": true}),
        ),
        (
            "browser_click",
            json!({"element": "Save", "selector": "#save"}),
            "click",
            json!({"selector": "#save"}),
        ),
        (
            "browser_hover",
            json!({"element": "Menu", "selector": "#menu"}),
            "hover",
            json!({"selector": "#menu"}),
        ),
        ("browser_navigate_back", json!({}), "goBack", json!({})),
        (
            "browser_navigate_forward",
            json!({"tabId": 2}),
            "goForward",
            json!({"tabId": 2}),
        ),
        (
            "browser_wait_for",
            json!({"text": "Done"}),
            "waitFor",
            json!({"text": "Done", "timeout": 10.0}),
        ),
        (
            "browser_wait_for",
            json!({"textGone": "Loading", "timeout": 2}),
            "waitFor",
            json!({"textGone": "Loading", "timeout": 2.0}),
        ),
        (
            "browser_wait_for",
            json!({"time": 1.5}),
            "waitFor",
            json!({"time": 1.5}),
        ),
        (
            "browser_handle_dialog",
            json!({"accept": true, "promptText": "Ada"}),
            "handleDialog",
            json!({"accept": true, "promptText": "Ada"}),
        ),
    ];
    for (tool, call, method, params) in cases {
        assert_eq!(
            plan(tool, &args(call.clone())).unwrap(),
            Plan::Forward {
                method,
                params,
                image: false
            },
            "{tool} {call}"
        );
    }
}

#[test]
fn element_tools_take_a_ref_or_a_selector_and_a_ref_wins() {
    for (tool, method, extra) in [
        ("browser_click", "click", json!({})),
        ("browser_type", "type", json!({"text": "Ada"})),
        ("browser_hover", "hover", json!({})),
        (
            "browser_select_option",
            "selectOption",
            json!({"values": ["b"]}),
        ),
    ] {
        let mut call = extra.clone();
        call["element"] = json!("Thing");
        call["ref"] = json!("f1e3");
        call["selector"] = json!("#thing");
        let mut params = extra.clone();
        params["ref"] = json!("f1e3");
        assert_eq!(
            plan(tool, &args(call)).unwrap(),
            Plan::Forward {
                method,
                params,
                image: false
            },
            "{tool}"
        );
    }
    assert_eq!(
        plan(
            "browser_click",
            &args(json!({"ref": "e2", "doubleClick": true, "outline": true}))
        )
        .unwrap(),
        Plan::Forward {
            method: "click",
            params: json!({"ref": "e2", "clickCount": 2, "snapshot": true}),
            image: false
        }
    );
    assert_eq!(
        plan(
            "browser_snapshot",
            &args(json!({"interactive": true, "depth": 3}))
        )
        .unwrap(),
        Plan::Forward {
            method: "snapshot",
            params: json!({"interactive": true, "depth": 3, "format": "outline"}),
            image: false
        }
    );
}

#[test]
fn playwright_named_tools_explain_bad_arguments() {
    let err = |tool: &str, call: Value| plan(tool, &args(call)).unwrap_err();
    assert!(err("browser_select_option", json!({"selector": "#s"})).contains("\"values\""));
    assert!(err(
        "browser_select_option",
        json!({"selector": "#s", "values": []})
    )
    .contains("\"values\""));
    assert!(err(
        "browser_select_option",
        json!({"selector": "#s", "values": [1]})
    )
    .contains("\"values\""));
    let no_target = err("browser_hover", json!({"element": "Menu"}));
    assert!(
        no_target.contains("\"target\"") && no_target.contains("selector"),
        "{no_target}"
    );
    assert!(err("browser_click", json!({"ref": 5})).contains("\"e5\""));
    assert!(err("browser_wait_for", json!({"time": "x"})).contains("expected a number"));
    assert!(err(
        "browser_fill_form",
        json!({"fields": [{"name": "a", "value": "b"}]})
    )
    .contains("\"type\" is required in \"fields[0]\""));
    assert!(err("browser_snapshot", json!({"depth": 0})).contains("\"depth\""));
    assert!(err("browser_press_key", json!({})).contains("\"key\""));
    assert!(err("browser_press_key", json!({"key": ""})).contains("\"key\""));
    assert!(err("browser_wait_for", json!({})).contains("\"time\""));
    assert!(err("browser_wait_for", json!({"text": "a", "time": 1})).contains("not both"));
    assert!(err("browser_wait_for", json!({"time": 61})).contains("0 to 30"));
    assert!(err("browser_wait_for", json!({"text": "a", "timeout": "x"})).contains("seconds"));
    assert!(err("browser_handle_dialog", json!({})).contains("\"accept\""));
    assert!(err("browser_handle_dialog", json!({"accept": "yes"})).contains("\"accept\""));
    assert!(err(
        "browser_handle_dialog",
        json!({"accept": true, "promptText": 3})
    )
    .contains("\"promptText\""));
    assert!(err("browser_console_messages", json!({"onlyErrors": 1})).contains("onlyErrors"));
    assert_eq!(
        plan("browser_console_messages", &args(json!({"offset": 5}))).unwrap(),
        Plan::Continue(5)
    );
}

#[test]
fn screenshots_pass_their_size_options_and_name_format_and_pixels() {
    assert_eq!(
        plan(
            "browser_screenshot",
            &args(json!({"format": "jpeg", "quality": 70, "maxDimension": 800, "x": 1}))
        )
        .unwrap(),
        Plan::Forward {
            method: "screenshot",
            params: json!({"format": "jpeg", "quality": 70, "maxDimension": 800}),
            image: true
        }
    );
    let answer = json!({"tabId": 7, "data": "AAAA", "mimeType": "image/jpeg",
                        "format": "jpeg", "width": 800, "height": 500});
    let result = serde_json::to_value(screenshot_result(&answer)).unwrap();
    assert_eq!(result["content"][0]["type"], "image");
    assert_eq!(result["content"][0]["mimeType"], "image/jpeg");
    assert_eq!(
        result["content"][1]["text"],
        "Screenshot of tab 7: JPEG, 800×500 px (image/jpeg, 4 bytes base64)."
    );
    // An older extension without the size still gets a caption.
    let old = json!({"data": "AAAA", "mimeType": "image/png"});
    assert_eq!(
        screenshot_caption(&old, "image/png", 4),
        "Screenshot: PNG (image/png, 4 bytes base64)."
    );
}

#[test]
fn the_rest_of_playwrights_tools_map_onto_extension_commands() {
    let forwarded = |tool: &str, call: Value| match plan(tool, &args(call)).unwrap() {
        Plan::Forward { method, params, .. } => (method, params),
        other => panic!("{tool}: {other:?}"),
    };
    assert_eq!(
        forwarded(
            "browser_drag",
            json!({"startElement": "C", "startRef": "e3", "endSelector": "#a"})
        ),
        ("drag", json!({"startRef": "e3", "endSelector": "#a"}))
    );
    assert_eq!(
        forwarded(
            "browser_evaluate",
            json!({"function": "(el) => el.id", "ref": "e2", "element": "Save"})
        ),
        (
            "evaluateFunction",
            json!({"function": "(el) => el.id", "ref": "e2"})
        )
    );
    assert_eq!(
        forwarded(
            "browser_take_screenshot",
            json!({"type": "jpeg", "ref": "e9"})
        ),
        ("elementScreenshot", json!({"ref": "e9", "format": "jpeg"}))
    );
    assert_eq!(
        forwarded("browser_take_screenshot", json!({"fullPage": true})),
        ("screenshot", json!({"fullPage": true}))
    );
    assert_eq!(
        forwarded("browser_resize", json!({"width": 800, "height": 600})),
        ("resize", json!({"width": 800, "height": 600}))
    );
    assert_eq!(
        forwarded("browser_close", json!({})),
        ("closeAgentTabs", json!({}))
    );
    assert_eq!(
        plan(
            "browser_file_upload",
            &args(json!({"paths": ["/tmp/a.txt"], "selector": "#f"}))
        )
        .unwrap(),
        Plan::Upload {
            method: "fileUpload",
            paths: vec!["/tmp/a.txt".into()],
            params: json!({"selector": "#f"})
        }
    );
    let err = |tool: &str, call: Value| plan(tool, &args(call)).unwrap_err();
    assert!(err("browser_drag", json!({"startRef": "e1"})).contains("endTarget"));
    assert!(err("browser_fill_form", json!({"fields": []})).contains("fields"));
    assert!(err("browser_file_upload", json!({"paths": [3]})).contains("paths"));
    assert!(err("browser_resize", json!({"width": 0, "height": 5})).contains("width"));
    assert!(err("browser_take_screenshot", json!({"type": "gif"})).contains("png"));
    assert!(err("browser_evaluate", json!({})).contains("function"));
}

/// Playwright MCP 0.0.83's default `tools/list`, as compact JSON (/work/pwmcp/tools-default.json
/// when issue 23 was written): this bridge's list must be no larger.
const PLAYWRIGHT_TOOLS_LIST_CHARS: usize = 20_296;

#[test]
fn tools_list_is_no_larger_than_playwright_mcps() {
    let list = rmcp::model::ListToolsResult::with_all_items(definitions());
    let json = serde_json::to_string(&list).unwrap();
    let chars = json.chars().count();
    println!("tools/list: {chars} characters, {} tools", list.tools.len());
    if std::env::var_os("DUMP_TOOLS").is_some() {
        std::fs::write("/tmp/tools-list.json", &json).unwrap();
    }
    assert!(
        chars <= PLAYWRIGHT_TOOLS_LIST_CHARS,
        "tools/list is {chars} characters, above Playwright MCP's {PLAYWRIGHT_TOOLS_LIST_CHARS}"
    );
    // No schema carries the generator's noise.
    assert!(
        !json.contains("$schema") && !json.contains("\"format\""),
        "{json}"
    );
}

#[test]
fn every_tool_plans_from_empty_or_minimal_arguments_without_panicking() {
    for tool in definitions() {
        // Whatever the answer, it is a plan or a sentence, never a panic.
        let _ = plan(&tool.name, &JsonObject::new());
        let schema = Value::Object((*tool.input_schema).clone());
        for (name, _) in schema["properties"].as_object().unwrap() {
            let mut call = JsonObject::new();
            call.insert(name.clone(), json!({"wrong": "type"}));
            if let Err(message) = plan(&tool.name, &call) {
                assert!(!message.is_empty(), "{} {name}", tool.name);
            }
        }
    }
}

#[test]
fn target_is_accepted_wherever_ref_and_selector_are() {
    let forwarded = |tool: &str, call: Value| match plan(tool, &args(call)).unwrap() {
        Plan::Forward { method, params, .. } => (method, params),
        other => panic!("{tool}: {other:?}"),
    };
    assert_eq!(
        forwarded("browser_click", json!({"target": "e5", "element": "Save"})),
        ("click", json!({"ref": "e5"}))
    );
    assert_eq!(
        forwarded("browser_hover", json!({"target": "nav a.menu"})),
        ("hover", json!({"selector": "nav a.menu"}))
    );
    assert_eq!(
        forwarded("browser_type", json!({"target": "f1e3", "text": "x"})),
        ("type", json!({"ref": "f1e3", "text": "x"}))
    );
    assert_eq!(
        forwarded(
            "browser_evaluate",
            json!({"function": "(e) => e.id", "target": "#a"})
        ),
        (
            "evaluateFunction",
            json!({"function": "(e) => e.id", "selector": "#a"})
        )
    );
    assert_eq!(
        forwarded("browser_take_screenshot", json!({"target": "e9"})),
        ("elementScreenshot", json!({"ref": "e9"}))
    );
    assert_eq!(
        forwarded(
            "browser_drag",
            json!({"startTarget": "e1", "endTarget": "ul.done", "startElement": "card"})
        ),
        ("drag", json!({"startRef": "e1", "endSelector": "ul.done"}))
    );
    assert_eq!(
        forwarded(
            "browser_fill_form",
            json!({"fields": [{"name": "A", "type": "textbox", "target": "e2", "value": "x"},
                              {"name": "B", "type": "checkbox", "selector": "#b", "value": "true"}]})
        ),
        (
            "fillForm",
            json!({"fields": [{"name": "A", "type": "textbox", "ref": "e2", "value": "x"},
                              {"name": "B", "type": "checkbox", "selector": "#b", "value": "true"}]})
        )
    );
    assert_eq!(
        forwarded("browser_snapshot", json!({"target": "e3", "depth": 2})),
        (
            "snapshot",
            json!({"format": "outline", "ref": "e3", "depth": 2})
        )
    );
    assert_eq!(
        forwarded(
            "browser_select_option",
            json!({"target": "#c", "values": ["x"]})
        ),
        ("selectOption", json!({"selector": "#c", "values": ["x"]}))
    );
    assert_eq!(
        plan(
            "browser_file_upload",
            &args(json!({"paths": ["/a"], "target": "e4"}))
        )
        .unwrap(),
        Plan::Upload {
            method: "fileUpload",
            paths: vec!["/a".into()],
            params: json!({"ref": "e4"})
        }
    );
}

#[test]
fn new_tools_map_onto_the_contracts_commands() {
    assert_eq!(
        plan(
            "browser_drop",
            &args(json!({"target": "e7", "paths": ["/tmp/a.png"], "data": {"text/plain": "hi"}}))
        )
        .unwrap(),
        Plan::Upload {
            method: "drop",
            paths: vec!["/tmp/a.png".into()],
            params: json!({"ref": "e7", "data": {"text/plain": "hi"}})
        }
    );
    assert!(plan("browser_drop", &args(json!({"target": "e7"})))
        .unwrap_err()
        .contains("\"paths\""));
    assert!(plan("browser_drop", &args(json!({"data": {"a": "b"}})))
        .unwrap_err()
        .contains("\"target\""));
    // null clears an override, absent leaves it: both reach the extension as such.
    assert_eq!(
        plan(
            "browser_emulate_media",
            &args(json!({"colorScheme": "dark", "media": null, "tabId": 3}))
        )
        .unwrap(),
        Plan::Forward {
            method: "emulateMedia",
            params: json!({"colorScheme": "dark", "media": null, "tabId": 3}),
            image: false
        }
    );
    assert!(plan(
        "browser_emulate_media",
        &args(json!({"colorScheme": "blue"}))
    )
    .unwrap_err()
    .contains("light"));
    assert_eq!(
        plan(
            "browser_find",
            &args(json!({"text": "Save", "target": "e2"}))
        )
        .unwrap(),
        Plan::Find {
            params: json!({"format": "outline", "ref": "e2"}),
            text: Some("Save".into()),
            regex: None
        }
    );
    assert!(plan("browser_find", &args(json!({"regex": "("})))
        .unwrap_err()
        .contains("not a valid regular expression"));
    assert_eq!(
        plan("browser_downloads", &args(json!({}))).unwrap(),
        Plan::Downloads
    );
}

/// A browser that answers each command from a script and records what it was sent.
struct FakeLink {
    answers: Mutex<Vec<(&'static str, Result<Value, LinkError>)>>,
    sent: Mutex<Vec<(String, Value)>>,
}

impl FakeLink {
    fn new(answers: Vec<(&'static str, Result<Value, LinkError>)>) -> Arc<FakeLink> {
        Arc::new(FakeLink {
            answers: Mutex::new(answers),
            sent: Mutex::new(Vec::new()),
        })
    }

    fn sent(&self) -> Vec<(String, Value)> {
        self.sent.lock().unwrap().clone()
    }

    /// What was sent that acts on a tab: the `getTabs` reads left out.
    fn sent_but_reads(&self) -> Vec<(String, Value)> {
        self.sent()
            .into_iter()
            .filter(|(method, _)| method != "getTabs")
            .collect()
    }
}

impl BrowserLink for FakeLink {
    fn describe(&self) -> &str {
        "fake"
    }

    fn call<'a>(
        &'a self,
        method: &'a str,
        params: Value,
    ) -> futures_util::future::BoxFuture<'a, Result<Value, LinkError>> {
        self.sent
            .lock()
            .unwrap()
            .push((method.to_owned(), params.clone()));
        let mut answers = self.answers.lock().unwrap();
        let at = answers.iter().position(|(m, _)| *m == method);
        let answer = match at {
            Some(i) => answers.remove(i).1,
            None => Err(LinkError::Rpc {
                code: mcp_relay_wire::code::METHOD_NOT_FOUND,
                message: format!("no scripted answer for {method}"),
            }),
        };
        Box::pin(async move { answer })
    }

    fn list_browsers(
        &self,
    ) -> futures_util::future::BoxFuture<'_, Result<Vec<crate::link::ExtensionRow>, LinkError>>
    {
        Box::pin(async { Ok(Vec::new()) })
    }

    fn choose<'a>(
        &'a self,
        _wanted: &'a str,
    ) -> futures_util::future::BoxFuture<'a, Result<crate::link::ChosenBrowser, LinkError>> {
        Box::pin(async { Err(LinkError::NoBrowser("none".into())) })
    }

    fn status(&self) -> crate::link::Status {
        crate::link::Status {
            relay_url: "fake".into(),
            relay_connected: true,
            user_id: None,
            relay_error: None,
            browser: None,
            browser_connected: true,
            connection_id: None,
            browser_problem: None,
        }
    }
}

fn result_text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

fn outline(lines: usize) -> String {
    (0..lines)
        .map(|i| format!("- listitem \"Row {i} é\" [ref=e{i}]"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A long result's first part carries its text cut, and nothing whole beside it: an evaluated
/// string is the text only, long console lists stay out of `structuredContent` (named in
/// `inText`), so the whole result, both halves, stays within what a host keeps.
#[tokio::test]
async fn a_long_result_in_parts_does_not_carry_its_whole_value_in_structured_content() {
    let long = "x".repeat(90_000);
    let messages: Vec<Value> = (0..5_000)
        .map(|i| json!({"type": "log", "text": format!("message {i}"), "time": i}))
        .collect();
    let link = FakeLink::new(vec![
        (
            "evaluate",
            Ok(json!({"tabId": 7, "value": long, "type": "string"})),
        ),
        (
            "consoleMessages",
            Ok(json!({"tabId": 7, "messages": messages})),
        ),
    ]);
    let toolbox = Toolbox::new(link, 40_000);
    let evaluated = toolbox
        .call("browser_evaluate", &args(json!({"expression": "1"})))
        .await;
    let console = toolbox
        .call("browser_console_messages", &args(json!({})))
        .await;
    for result in [evaluated, console] {
        assert_eq!(result.is_error, Some(false), "{result:?}");
        let text = result_text(&result);
        let structured = result.structured_content.clone().unwrap();
        assert!(text.chars().count() <= 40_000);
        assert!(
            structured.to_string().chars().count() < 3_000,
            "{}",
            &structured.to_string()[..300]
        );
        assert_eq!(structured["part"]["index"], 1, "{structured}");
        assert_eq!(structured["tabId"], 7, "{structured}");
    }
}

#[tokio::test]
async fn a_snapshot_reads_as_text_and_a_long_one_in_parts_that_add_up() {
    let page = outline(3_000);
    let link = FakeLink::new(vec![(
        "snapshot",
        Ok(json!({"tabId": 7, "url": "https://example.com/", "title": "Rows", "snapshot": page})),
    )]);
    let toolbox = Toolbox::new(link.clone(), 20_000);
    let first = toolbox.call("browser_snapshot", &args(json!({}))).await;
    assert_eq!(first.is_error, Some(false));
    let text = result_text(&first);
    assert!(
        text.starts_with(
            "Tab 7 · https://example.com/ · Rows\n\n- listitem \"Row 0 é\" [ref=e0]\n"
        ),
        "{}",
        &text[..200]
    );
    let structured = first.structured_content.clone().unwrap();
    assert_eq!(structured["url"], "https://example.com/");
    assert!(structured.get("snapshot").is_none());
    assert_eq!(structured["part"]["index"], 1);

    // Reading on returns exactly the rest, part by part, without asking the browser again.
    let whole = format!("Tab 7 · https://example.com/ · Rows\n\n{page}");
    let mut collected = String::new();
    let mut result = first;
    loop {
        let text = result_text(&result);
        assert!(text.chars().count() <= 20_000);
        let structured = result.structured_content.clone().unwrap();
        let part = &structured["part"];
        let (start, end) = (
            part["offset"].as_u64().unwrap() as usize,
            part["end"].as_u64().unwrap() as usize,
        );
        let body: String = whole.chars().skip(start).take(end - start).collect();
        assert!(text.starts_with(&body), "part {part}");
        collected.push_str(&body);
        let Some(next) = part["nextOffset"].as_u64() else {
            assert!(text.ends_with("End of the result.]"), "{text}");
            break;
        };
        assert!(
            text.contains(&format!(
                "call browser_snapshot with {{\"offset\": {next}}}. Or see less: browser_find"
            )),
            "{}",
            &text[text.len() - 200..]
        );
        result = toolbox
            .call("browser_snapshot", &args(json!({"offset": next})))
            .await;
        assert_eq!(result.is_error, Some(false), "{}", result_text(&result));
    }
    assert_eq!(collected, whole);
    assert_eq!(link.sent().len(), 1);
    let past = toolbox
        .call("browser_snapshot", &args(json!({"offset": 10_000_000})))
        .await;
    assert!(result_text(&past).contains("past the end"));
}

/// Playwright MCP's `filename`: the whole answer (all its parts) goes into a file where the
/// bridge runs, the result names it in a line or two, a screenshot's type follows the file's
/// extension, and a file the session did not write is never replaced.
#[tokio::test]
async fn a_named_answer_is_saved_whole_where_the_bridge_runs_instead_of_returned() {
    let dir = tempfile::tempdir().unwrap();
    let at = |name: &str| dir.path().join(name).to_string_lossy().into_owned();
    let page = outline(3_000);
    let link = FakeLink::new(vec![
        (
            "snapshot",
            Ok(json!({"tabId": 7, "url": "https://e.test/", "title": "Rows", "snapshot": page})),
        ),
        (
            "screenshot",
            Ok(
                json!({"tabId": 7, "data": "iVBORw0KGgo=", "mimeType": "image/jpeg",
                      "format": "jpeg", "width": 1280, "height": 800}),
            ),
        ),
        (
            "consoleMessages",
            Ok(json!({"tabId": 7, "messages": [{"type": "error", "text": "boom", "time": 1}]})),
        ),
    ]);
    let toolbox = Toolbox::new(link.clone(), 20_000);

    let saved = toolbox
        .call(
            "browser_snapshot",
            &args(json!({"filename": at("out/rows.md")})),
        )
        .await;
    assert_eq!(saved.is_error, Some(false), "{}", result_text(&saved));
    let text = result_text(&saved);
    let whole = format!("Tab 7 · https://e.test/ · Rows\n\n{page}");
    assert_eq!(
        text,
        format!(
            "Tab 7 · https://e.test/ · Rows\nSaved the answer (3002 lines, {} characters) to {} \
             on the machine where the bridge runs; it is not repeated here.",
            whole.chars().count(),
            at("out/rows.md")
        )
    );
    assert_eq!(std::fs::read_to_string(at("out/rows.md")).unwrap(), whole);
    assert_eq!(
        saved.structured_content.unwrap()["saved"],
        at("out/rows.md")
    );

    let shot = toolbox
        .call(
            "browser_take_screenshot",
            &args(json!({"filename": at("page.jpg")})),
        )
        .await;
    assert_eq!(shot.is_error, Some(false), "{}", result_text(&shot));
    assert!(shot.content.iter().all(|c| c.as_image().is_none()));
    assert!(
        result_text(&shot).starts_with(&format!(
            "Screenshot of tab 7: JPEG, 1280×800 px, saved to {} (8 bytes)",
            at("page.jpg")
        )),
        "{}",
        result_text(&shot)
    );
    assert_eq!(std::fs::read(at("page.jpg")).unwrap(), b"\x89PNG\r\n\x1a\n");
    assert_eq!(
        link.sent()[1],
        ("screenshot".into(), json!({"format": "jpeg"}))
    );

    // The person's file is left alone, and the error says what to do.
    std::fs::write(at("notes.txt"), "mine").unwrap();
    let refused = toolbox
        .call(
            "browser_console_messages",
            &args(json!({"filename": at("notes.txt")})),
        )
        .await;
    assert_eq!(refused.is_error, Some(true));
    assert!(
        result_text(&refused).contains("choose another filename"),
        "{}",
        result_text(&refused)
    );
    assert_eq!(std::fs::read_to_string(at("notes.txt")).unwrap(), "mine");

    let both = toolbox
        .call(
            "browser_snapshot",
            &args(json!({"filename": at("x.md"), "offset": 10})),
        )
        .await;
    assert!(result_text(&both).contains("give one of them"), "{both:?}");
    assert_eq!(link.sent().len(), 3);
}

/// Over the relay's HTTP `/mcp` the tools keep no files: the answer comes back as usual,
/// under a line saying it was not saved.
#[tokio::test]
async fn over_http_a_named_answer_is_returned_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("rows.md");
    let link = FakeLink::new(vec![(
        "snapshot",
        Ok(json!({"tabId": 7, "url": "https://e.test/", "title": "Rows", "snapshot": outline(3)})),
    )]);
    let toolbox = Toolbox::new(link, 20_000).with_files_in_results();
    let result = toolbox
        .call(
            "browser_snapshot",
            &args(json!({"filename": target.to_string_lossy()})),
        )
        .await;
    let text = result_text(&result);
    assert!(
        text.starts_with(&format!(
            "Not saved to {}: over the relay's HTTP /mcp the tools keep no files. The answer \
             follows.\nTab 7 · https://e.test/ · Rows\n\n- listitem",
            target.display()
        )),
        "{text}"
    );
    assert!(!target.exists());
}

#[tokio::test]
async fn find_answers_matching_lines_under_their_path() {
    let page = "- main [ref=e1]:\n  - list \"Todo\" [ref=e2]:\n    - listitem [ref=e3]: Buy milk\n    - listitem [ref=e4]: Call Ada\n  - button \"Save\" [ref=e5]";
    let link = FakeLink::new(vec![
        (
            "snapshot",
            Ok(json!({"tabId": 2, "url": "https://t/", "title": "T", "snapshot": page})),
        ),
        (
            "snapshot",
            Ok(json!({"tabId": 2, "url": "https://t/", "title": "T", "snapshot": page})),
        ),
    ]);
    let toolbox = Toolbox::new(link.clone(), DEFAULT_MAX_RESULT_CHARS);
    let found = toolbox
        .call(
            "browser_find",
            &args(json!({"text": "ada", "target": "e2"})),
        )
        .await;
    let text = result_text(&found);
    assert!(
        text.starts_with("Tab 2 · https://t/ · T\n1 of 5 outline lines match"),
        "{text}"
    );
    assert!(
        text.contains("- main [ref=e1]:\n  - list \"Todo\" [ref=e2]:\n"),
        "{text}"
    );
    assert!(text.contains("- listitem [ref=e4]: Call Ada  ◀"), "{text}");
    assert_eq!(found.structured_content.unwrap()["matches"], 1);
    assert_eq!(
        link.sent()[0],
        ("snapshot".into(), json!({"format": "outline", "ref": "e2"}))
    );
    let none = toolbox
        .call("browser_find", &args(json!({"regex": "/^nothing$/i"})))
        .await;
    assert_eq!(none.is_error, Some(false));
    assert!(result_text(&none).contains("No line of the page's outline"));
}

#[tokio::test]
async fn navigations_carry_the_bridges_navigation_timeout() {
    let link = FakeLink::new(vec![
        (
            "browser_navigate",
            Ok(json!({"tabId": 7, "url": "https://e/", "title": "E"})),
        ),
        (
            "createTab",
            Ok(json!({"tabId": 8, "url": "https://f/", "title": "F"})),
        ),
        ("click", Ok(json!({"tabId": 8, "clicked": true}))),
    ]);
    let toolbox = Toolbox::new(link.clone(), DEFAULT_MAX_RESULT_CHARS)
        .with_navigation_timeout(Some(Duration::from_secs(45)));
    toolbox
        .call("browser_navigate", &args(json!({"url": "https://e/"})))
        .await;
    toolbox
        .call(
            "browser_tabs",
            &args(json!({"action": "new", "url": "https://f/"})),
        )
        .await;
    toolbox
        .call("browser_click", &args(json!({"target": "e3"})))
        .await;
    let sent = link.sent();
    assert_eq!(sent[0].1["timeoutMs"], 45_000);
    assert_eq!(sent[1].1["timeoutMs"], 45_000);
    assert!(sent[2].1.get("timeoutMs").is_none(), "{:?}", sent[2]);
}

#[tokio::test]
async fn downloads_an_action_started_are_saved_and_named_in_its_result() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("report.csv"), b"older").unwrap();
    let link = FakeLink::new(vec![
        (
            "click",
            Ok(json!({"tabId": 7, "clicked": true, "downloads": [
                {"id": "d1", "url": "https://e/report.csv", "filename": "report.csv", "mimeType": "text/csv", "bytes": 4, "state": "complete"},
                {"id": "d2", "url": "https://e/big.zip", "filename": "big.zip", "mimeType": "application/zip", "bytes": 0, "state": "in_progress"}
            ]})),
        ),
        (
            "takeDownload",
            Ok(
                json!({"id": "d1", "filename": "report.csv", "mimeType": "text/csv", "bytes": 4, "data": "YSxiCg=="}),
            ),
        ),
        (
            "listDownloads",
            Ok(
                json!({"downloads": [{"id": "d2", "url": "https://e/big.zip", "filename": "big.zip", "mimeType": "application/zip", "bytes": 9, "state": "complete"}]}),
            ),
        ),
        (
            "takeDownload",
            Err(LinkError::Rpc {
                code: mcp_relay_wire::code::INVALID_PARAMS,
                message: "download big.zip is 90000000 bytes, above maxBytes 1000".into(),
            }),
        ),
    ]);
    let toolbox = Toolbox::new(link.clone(), DEFAULT_MAX_RESULT_CHARS)
        .with_max_message_bytes(1_000)
        .with_downloads_dir(Some(dir.path().to_owned()));
    let clicked = toolbox
        .call("browser_click", &args(json!({"target": "e3"})))
        .await;
    let text = result_text(&clicked);
    let saved = dir.path().join("report (1).csv");
    assert!(
        text.contains(&format!(
            "Downloaded report.csv: saved as {} (4 bytes, text/csv)",
            saved.display()
        )),
        "{text}"
    );
    assert!(text.contains("Download big.zip: in_progress"), "{text}");
    assert_eq!(std::fs::read(&saved).unwrap(), b"a,b\n");
    assert_eq!(
        std::fs::read(dir.path().join("report.csv")).unwrap(),
        b"older"
    );
    assert_eq!(
        link.sent()[1],
        ("takeDownload".into(), json!({"id": "d1", "maxBytes": 1000}))
    );

    let listed = toolbox.call("browser_downloads", &args(json!({}))).await;
    let text = result_text(&listed);
    assert!(
        text.starts_with("1 downloads saved in this session"),
        "{text}"
    );
    assert!(text.contains(&saved.display().to_string()), "{text}");
    assert!(
        text.contains("big.zip: not saved: download big.zip is 90000000 bytes"),
        "{text}"
    );
    assert!(text.contains("--max-message-bytes"), "{text}");
}

/// Served by the relay (HTTP `/mcp`) the tools run on the relay's server: a download and a
/// PDF come back inside the result as embedded resources, nothing is written there, and
/// `paths` are refused before any file is read (the relay's files are not a host's to read).
#[tokio::test]
async fn with_files_in_results_nothing_is_read_or_written_where_the_tools_run() {
    let link = FakeLink::new(vec![
        (
            "click",
            Ok(json!({"tabId": 7, "clicked": true, "downloads": [
                {"id": "d1", "url": "https://e/r.csv", "filename": "../r 1.csv", "mimeType": "text/csv", "bytes": 4, "state": "complete"}
            ]})),
        ),
        (
            "takeDownload",
            Ok(
                json!({"id": "d1", "filename": "../r 1.csv", "mimeType": "text/csv", "data": "YSxiCg=="}),
            ),
        ),
        (
            "printPdf",
            Ok(json!({"tabId": 7, "url": "https://e/", "data": "JVBERi0="})),
        ),
        ("listDownloads", Ok(json!({"downloads": []}))),
    ]);
    let toolbox = Toolbox::new(link.clone(), DEFAULT_MAX_RESULT_CHARS).with_files_in_results();
    let clicked = toolbox
        .call("browser_click", &args(json!({"target": "e3"})))
        .await;
    let text = result_text(&clicked);
    let uri = "mcp-relay://downloads/d1/r_1.csv";
    assert!(
        text.contains(&format!(
            "Downloaded ../r 1.csv (4 bytes, text/csv): carried back in this result as the resource {uri}"
        )),
        "{text}"
    );
    let blob = |result: &CallToolResult| {
        let resource = serde_json::to_value(result.content.last().unwrap()).unwrap();
        assert_eq!(resource["type"], "resource", "{resource}");
        resource["resource"].clone()
    };
    assert_eq!(
        blob(&clicked),
        json!({"uri": uri, "mimeType": "text/csv", "blob": "YSxiCg=="})
    );

    let pdf = toolbox
        .call("browser_pdf_save", &args(json!({"filename": "/etc/x.pdf"})))
        .await;
    assert!(
        result_text(&pdf).contains("nothing was saved"),
        "{}",
        result_text(&pdf)
    );
    assert_eq!(
        blob(&pdf),
        json!({"uri": "mcp-relay://pdf/page/x.pdf", "mimeType": "application/pdf", "blob": "JVBERi0="})
    );
    assert!(!std::path::Path::new("/etc/x.pdf").exists());

    let listed = result_text(&toolbox.call("browser_downloads", &args(json!({}))).await);
    assert!(
        listed.starts_with("1 downloads carried back in this session"),
        "{listed}"
    );
    assert!(listed.contains(uri), "{listed}");

    for (tool, arguments) in [
        ("browser_file_upload", json!({"paths": ["/etc/passwd"]})),
        (
            "browser_drop",
            json!({"target": "e2", "paths": ["/etc/passwd"]}),
        ),
    ] {
        let refused = toolbox.call(tool, &args(arguments)).await;
        assert_eq!(refused.is_error, Some(true));
        assert!(
            result_text(&refused).contains("relay's server"),
            "{}",
            result_text(&refused)
        );
    }
    assert_eq!(link.sent().len(), 4, "a refused call reached the browser");
}

#[tokio::test]
async fn drop_carries_files_read_here_and_data() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.txt");
    std::fs::write(&path, b"hi").unwrap();
    let link = FakeLink::new(vec![(
        "drop",
        Ok(
            json!({"tabId": 1, "dropped": {"files": 1, "types": ["Files", "text/plain"]}, "accepted": true}),
        ),
    )]);
    let toolbox = Toolbox::new(link.clone(), DEFAULT_MAX_RESULT_CHARS);
    let dropped = toolbox
        .call(
            "browser_drop",
            &args(json!({"target": "ul#zone", "paths": [path.to_string_lossy()], "data": {"text/plain": "x"}})),
        )
        .await;
    assert_eq!(dropped.is_error, Some(false), "{}", result_text(&dropped));
    let (method, params) = link.sent()[0].clone();
    assert_eq!(method, "drop");
    assert_eq!(params["selector"], "ul#zone");
    assert_eq!(params["data"], json!({"text/plain": "x"}));
    assert_eq!(
        params["files"],
        json!([{"name": "a.txt", "mimeType": "text/plain", "data": "aGk="}])
    );
    let missing = toolbox
        .call(
            "browser_drop",
            &args(json!({"target": "e1", "paths": ["/nonexistent/file"]})),
        )
        .await;
    assert_eq!(missing.is_error, Some(true));
    assert!(result_text(&missing).contains("bridge's machine"));
}

#[test]
fn what_a_schema_requires_is_what_parsing_requires() {
    for tool in definitions() {
        let required: Vec<String> = tool
            .input_schema
            .get("required")
            .and_then(Value::as_array)
            .map(|names| {
                names
                    .iter()
                    .map(|n| n.as_str().unwrap().to_owned())
                    .collect()
            })
            .unwrap_or_default();
        if let Some(first) = required.first() {
            let err = plan(&tool.name, &JsonObject::new()).unwrap_err();
            assert!(
                err.contains(&format!("\"{first}\"")),
                "{}: {err}",
                tool.name
            );
        }
        // And an argument the schema does not list is ignored, never an error of its own.
        let mut extra = JsonObject::new();
        extra.insert("notAnArgument".into(), json!(1));
        let with_extra = plan(&tool.name, &extra);
        let without = plan(&tool.name, &JsonObject::new());
        assert_eq!(with_extra, without, "{}", tool.name);
    }
}

// code_execution: a sandboxed script over the session's tools (code.rs).

fn limits() -> CodeLimits {
    CodeLimits::default()
}

fn scripted(link: Arc<FakeLink>, limits: CodeLimits) -> Toolbox {
    Toolbox::new(link, 40_000).with_code_execution(Some(limits))
}

async fn run_code(toolbox: &Toolbox, code: &str) -> CallToolResult {
    toolbox
        .call("code_execution", &args(json!({ "code": code })))
        .await
}

fn page(n: usize) -> Value {
    json!({
        "tabId": 1,
        "url": format!("https://shop.test/p/{n}"),
        "title": format!("Product {n}"),
        "snapshot": format!("- main [ref=e1]:\n  - heading \"Product {n}\" [ref=e2]\n  - text: Price {n}0 EUR\n  - text: In stock"),
    })
}

#[tokio::test]
async fn code_execution_makes_several_calls_and_returns_a_table() {
    let link = FakeLink::new(vec![
        ("browser_navigate", Ok(page(1))),
        ("snapshot", Ok(page(1))),
        ("browser_navigate", Ok(page(2))),
        ("snapshot", Ok(page(2))),
        ("browser_navigate", Ok(page(3))),
        ("snapshot", Ok(page(3))),
    ]);
    let toolbox = scripted(link.clone(), limits());
    let code = r#"
        const rows = [];
        for (const n of [1, 2, 3]) {
          const page = await tools.browser_navigate({url: "https://shop.test/p/" + n});
          const found = await tools.browser_find({text: "Price"});
          console.log("visited", n);
          rows.push({title: page.data.title, matches: found.data.matches,
                     price: found.text.match(/Price (\d+)/)[1]});
        }
        return rows;"#;
    let result = run_code(&toolbox, code).await;
    let text = result_text(&result);
    assert_eq!(result.is_error, Some(false), "{text}");
    let table: Value = serde_json::from_str(text.split("\n\nconsole.log:").next().unwrap())
        .unwrap_or_else(|e| panic!("{e}: {text}"));
    assert_eq!(
        table,
        json!([
            {"title": "Product 1", "matches": 1, "price": "10"},
            {"title": "Product 2", "matches": 1, "price": "20"},
            {"title": "Product 3", "matches": 1, "price": "30"},
        ])
    );
    assert!(
        text.ends_with("console.log:\nvisited 1\nvisited 2\nvisited 3"),
        "{text}"
    );
    let sent: Vec<String> = link.sent().into_iter().map(|(m, _)| m).collect();
    assert_eq!(
        sent,
        [
            "browser_navigate",
            "snapshot",
            "browser_navigate",
            "snapshot",
            "browser_navigate",
            "snapshot"
        ]
    );
    let structured = result.structured_content.unwrap();
    assert_eq!(structured["innerCalls"].as_array().unwrap().len(), 6);
    assert_eq!(
        structured["innerCalls"][0],
        json!({"tool": "browser_navigate", "ok": true})
    );

    // A string is returned as-is.
    let toolbox = scripted(FakeLink::new(vec![]), limits());
    let result = run_code(&toolbox, "return 'plain ' + (1 + 1);").await;
    assert_eq!(result_text(&result), "plain 2");
}

#[tokio::test]
async fn code_execution_answers_which_bound_stopped_it_and_what_it_did() {
    // Inner calls.
    let link = FakeLink::new(vec![
        ("snapshot", Ok(page(1))),
        ("snapshot", Ok(page(2))),
        ("snapshot", Ok(page(3))),
    ]);
    let toolbox = scripted(
        link,
        CodeLimits {
            calls: 2,
            ..limits()
        },
    );
    let result = run_code(
        &toolbox,
        "for (let i = 0; i < 3; i++) { try { await tools.browser_snapshot({}); } catch (e) {} }\nreturn 'done';",
    )
    .await;
    let text = result_text(&result);
    assert_eq!(result.is_error, Some(true), "{text}");
    assert!(
        text.contains("inner-call bound (2 tool calls, --code-max-calls)"),
        "{text}"
    );
    assert!(
        text.contains(
            "It had made 2 tool call(s):\n1. browser_snapshot {} → ok\n2. browser_snapshot {} → ok"
        ),
        "{text}"
    );
    assert_eq!(result.structured_content.unwrap()["stoppedBy"], "calls");

    // Bytes returned to the script.
    let link = FakeLink::new(vec![("snapshot", Ok(page(1))), ("snapshot", Ok(page(2)))]);
    let toolbox = scripted(
        link,
        CodeLimits {
            bytes: 200,
            ..limits()
        },
    );
    let result = run_code(
        &toolbox,
        "await tools.browser_snapshot({}); await tools.browser_snapshot({}); return 'done';",
    )
    .await;
    let text = result_text(&result);
    assert!(
        text.contains("bytes returned to the script (200 bytes, --code-max-bytes)"),
        "{text}"
    );
    assert!(
        text.contains("It had made 1 tool call(s)") || text.contains("It had made 2 tool call(s)"),
        "{text}"
    );

    // CPU time: an endless loop.
    let toolbox = scripted(
        FakeLink::new(vec![]),
        CodeLimits {
            cpu_time: Duration::from_millis(300),
            ..limits()
        },
    );
    let started = std::time::Instant::now();
    let result = run_code(&toolbox, "while (true) {}").await;
    let text = result_text(&result);
    assert!(text.contains("the CPU-time bound"), "{text}");
    assert!(text.contains("It had made no tool call."), "{text}");
    assert!(started.elapsed() < Duration::from_secs(5));

    // Wall time, below the CPU bound; catching does not keep it going.
    let toolbox = scripted(
        FakeLink::new(vec![]),
        CodeLimits {
            wall_time: Duration::from_millis(300),
            ..limits()
        },
    );
    let result = run_code(
        &toolbox,
        "for (;;) { try { while (true) {} } catch (e) {} }",
    )
    .await;
    let text = result_text(&result);
    assert!(text.contains("the wall-time bound"), "{text}");
    assert_eq!(result.structured_content.unwrap()["stoppedBy"], "wall_time");

    // Memory.
    let toolbox = scripted(
        FakeLink::new(vec![]),
        CodeLimits {
            memory: 8 << 20,
            ..limits()
        },
    );
    let result = run_code(
        &toolbox,
        "const a = []; for (let i = 0; ; i++) a.push('x'.repeat(1000) + i); return a.length;",
    )
    .await;
    let text = result_text(&result);
    assert!(text.contains("the memory bound"), "{text}");
    // Out of memory the engine may throw null; a script that throws null itself is not out of
    // memory.
    let toolbox = scripted(FakeLink::new(vec![]), limits());
    let result = run_code(&toolbox, "throw null;").await;
    let text = result_text(&result);
    assert!(
        text.contains("the script threw null") && !text.contains("memory"),
        "{text}"
    );
}

/// The clock a script sees is coarse: whole seconds, however it is read.
#[tokio::test]
async fn code_execution_sees_only_whole_seconds() {
    let toolbox = scripted(FakeLink::new(vec![]), limits());
    let result = run_code(
        &toolbox,
        "const reads = [Date.now(), new Date().getTime(), new (new Date().constructor)().getTime(), \
         Date.parse(Date()), new Date(1234567).getTime()];\n\
         let spins = 0; const first = Date.now(); while (Date.now() === first && spins < 1e6) spins++;\n\
         return [reads, new Date() instanceof Date, Date.now() - first];",
    )
    .await;
    assert_eq!(result.is_error, Some(false), "{}", result_text(&result));
    let answer: Value = serde_json::from_str(&result_text(&result)).unwrap();
    for read in answer[0].as_array().unwrap().iter().take(4) {
        assert_eq!(read.as_i64().unwrap() % 1000, 0, "{answer}");
    }
    // A date the script makes itself is what it says.
    assert_eq!(answer[0][4], 1234567, "{answer}");
    assert_eq!(answer[1], true, "{answer}");
    // Spinning until the clock moves sees it move by a whole second or not at all.
    assert_eq!(answer[2].as_i64().unwrap() % 1000, 0, "{answer}");
}

#[tokio::test]
async fn code_execution_has_no_way_out_but_its_tools() {
    let toolbox = scripted(FakeLink::new(vec![]), limits());
    let result = run_code(
        &toolbox,
        "return [typeof fetch, typeof require, typeof process, typeof Deno, typeof performance, typeof std, typeof os, typeof setTimeout, typeof XMLHttpRequest, typeof WebSocket, typeof tools.browser_snapshot, typeof tools.code_execution];",
    )
    .await;
    assert_eq!(
        result_text(&result),
        r#"["undefined","undefined","undefined","undefined","undefined","undefined","undefined","undefined","undefined","undefined","function","undefined"]"#
    );
    for (code, expected) in [
        ("return fetch('https://example.com')", "ReferenceError"),
        ("return require('fs')", "ReferenceError"),
        ("return process.env", "ReferenceError"),
        ("return Deno.readTextFile('/etc/passwd')", "ReferenceError"),
        ("const m = await import('fs'); return m;", "Error"),
        ("return await import('https://example.com/x.js');", "Error"),
    ] {
        let result = run_code(&toolbox, code).await;
        let text = result_text(&result);
        assert_eq!(result.is_error, Some(true), "{code}: {text}");
        assert!(text.contains(expected), "{code}: {text}");
    }
    // The global object holds the language's built-ins, tools, console and Playwright's
    // `page` made of those tools (script_page.js), and nothing else.
    let result = run_code(
        &toolbox,
        "const builtins = new Set(['Object','Function','Array','Number','parseFloat','parseInt','Infinity','NaN','undefined','decodeURI','decodeURIComponent','encodeURI','encodeURIComponent','escape','unescape','isFinite','isNaN','globalThis','Symbol','Error','EvalError','RangeError','ReferenceError','SyntaxError','TypeError','URIError','InternalError','AggregateError','SuppressedError','Iterator','Math','Reflect','Boolean','String','BigInt','Date','eval','RegExp','JSON','Proxy','Map','Set','WeakMap','WeakSet','ArrayBuffer','SharedArrayBuffer','Uint8ClampedArray','Int8Array','Uint8Array','Int16Array','Uint16Array','Int32Array','Uint32Array','BigInt64Array','BigUint64Array','Float16Array','Float32Array','Float64Array','DataView','Atomics','Promise','WeakRef','FinalizationRegistry','queueMicrotask','structuredClone','DisposableStack','AsyncDisposableStack','AsyncIterator']);\nreturn Object.getOwnPropertyNames(globalThis).filter(n => !builtins.has(n));",
    )
    .await;
    assert_eq!(result_text(&result), r#"["tools","console","page"]"#);
    // An endless loop is stopped.
    let toolbox = scripted(
        FakeLink::new(vec![]),
        CodeLimits {
            cpu_time: Duration::from_millis(200),
            ..limits()
        },
    );
    let result = run_code(&toolbox, "while(true){}").await;
    assert!(
        result_text(&result).contains("stopped"),
        "{}",
        result_text(&result)
    );
}

#[tokio::test]
async fn code_execution_errors_say_message_and_line() {
    let toolbox = scripted(FakeLink::new(vec![]), limits());
    let result = run_code(&toolbox, "const a = 1;\nconst b = ;\nreturn a;").await;
    let text = result_text(&result);
    assert_eq!(result.is_error, Some(true));
    assert!(text.contains("SyntaxError"), "{text}");
    assert!(text.contains("(line 2)"), "{text}");

    let result = run_code(&toolbox, "const a = 1;\n\nthrow new Error('boom ' + a);").await;
    let text = result_text(&result);
    assert!(text.contains("Error: boom 1 (line 3)"), "{text}");

    // An inner tool's error is a rejected promise the script may catch.
    let link = FakeLink::new(vec![("snapshot", Ok(page(1)))]);
    let toolbox = scripted(link, limits());
    let result = run_code(
        &toolbox,
        "try { await tools.browser_click({}); return 'no'; } catch (e) {\n  const s = await tools.browser_snapshot({});\n  return {caught: e.message, title: s.data.title};\n}",
    )
    .await;
    let text = result_text(&result);
    assert_eq!(result.is_error, Some(false), "{text}");
    let value: Value = serde_json::from_str(&text).unwrap();
    assert!(
        value["caught"]
            .as_str()
            .unwrap()
            .starts_with("browser_click"),
        "{text}"
    );
    assert_eq!(value["title"], "Product 1");

    // Uncaught, it fails the script with its message.
    let result = run_code(&toolbox, "\nawait tools.browser_click({});").await;
    let text = result_text(&result);
    assert!(text.contains("browser_click"), "{text}");
    assert!(text.contains("(line 2)"), "{text}");
    assert!(text.contains("1. browser_click {} → error"), "{text}");
}

#[tokio::test]
async fn code_execution_is_offered_only_when_enabled() {
    let plain = Toolbox::new(FakeLink::new(vec![]), 40_000);
    assert!(!plain.knows("code_execution"));
    let result = run_code(&plain, "return 1").await;
    assert_eq!(result.is_error, Some(true));
    assert!(result_text(&result).contains("--code-execution"));

    let enabled = scripted(FakeLink::new(vec![]), limits());
    assert!(enabled.knows("code_execution"));
    let tool = enabled
        .definitions()
        .iter()
        .find(|t| t.name == "code_execution")
        .unwrap();
    let properties = tool.input_schema["properties"].as_object().unwrap();
    assert!(properties.contains_key("code") && properties.contains_key("offset"));
    // Playwright MCP's script tool comes with it, and only with it.
    assert!(enabled.knows("browser_run_code_unsafe") && !plain.knows("browser_run_code_unsafe"));
    assert_eq!(enabled.definitions().len(), definitions().len() + 2);
    let result = run_code(&enabled, "return 1").await;
    assert_eq!(result_text(&result), "1");
    let result = run_playwright(&plain, "async (page) => 1").await;
    assert!(result_text(&result).contains("--code-execution"));
}

/// A script's long answer comes in parts like any long result, and `offset` reads on in it
/// without running the script again.
#[tokio::test]
async fn code_execution_long_answers_come_in_parts_read_on_with_offset() {
    let toolbox = scripted(FakeLink::new(vec![]), limits());
    let script = "return Array.from({length: 20000}, (_, i) => `row ${i}`).join('\\n');";
    let whole = (0..20_000)
        .map(|i| format!("row {i}"))
        .collect::<Vec<_>>()
        .join("\n");
    let mut result = run_code(&toolbox, script).await;
    let mut read = String::new();
    for _ in 0..20 {
        let text = result_text(&result);
        assert!(text.chars().count() <= 40_000, "{}", text.chars().count());
        let (body, note) = text.rsplit_once("\n[Part ").expect("a note");
        let Some((_, rest)) = note.split_once("call code_execution with {\"offset\": ") else {
            assert!(note.contains("End of the result"), "{note}");
            read.push_str(body);
            break;
        };
        read.push_str(body);
        read.push('\n');
        let offset: u64 = rest.split('}').next().unwrap().parse().unwrap();
        assert_eq!(read.chars().count() as u64, offset);
        result = toolbox
            .call("code_execution", &args(json!({ "offset": offset })))
            .await;
    }
    assert!(read == whole, "the parts are not the answer");
    let nothing = toolbox.call("code_execution", &args(json!({}))).await;
    assert!(result_text(&nothing).contains("give \"code\""));
}

#[tokio::test]
async fn code_execution_writes_each_inner_call_to_the_audit_log() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let link = FakeLink::new(vec![("snapshot", Ok(page(1)))]);
    let toolbox = scripted(link, limits()).with_audit(crate::audit::AuditLog::open(&path).unwrap());
    let result = run_code(
        &toolbox,
        "await tools.browser_snapshot({}); try { await tools.browser_click({}); } catch (e) {} return 'ok';",
    )
    .await;
    assert_eq!(result_text(&result), "ok");
    let lines: Vec<Value> = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["tool"], "code_execution");
    assert_eq!(lines[0]["target"], "browser_snapshot");
    assert_eq!(lines[0]["outcome"], "ok");
    assert_eq!(lines[1]["target"], "browser_click");
    assert_eq!(lines[1]["outcome"], "error");
    assert!(lines[1]["error"]
        .as_str()
        .unwrap()
        .starts_with("browser_click"));
}

#[tokio::test]
async fn code_execution_survives_recursion_parallel_calls_and_dead_promises() {
    let toolbox = scripted(FakeLink::new(vec![]), limits());
    let result = run_code(
        &toolbox,
        "function f(n) { return f(n + 1) + 1; }\nreturn f(0);",
    )
    .await;
    let text = result_text(&result);
    assert_eq!(result.is_error, Some(true), "{text}");
    assert!(text.contains("RangeError"), "{text}");

    let result = run_code(&toolbox, "await new Promise(() => {});").await;
    let text = result_text(&result);
    assert!(text.contains("nothing will settle"), "{text}");

    let link = FakeLink::new(vec![("snapshot", Ok(page(1))), ("snapshot", Ok(page(2)))]);
    let toolbox = scripted(link, limits());
    let result = run_code(
        &toolbox,
        "const [a, b] = await Promise.all([tools.browser_snapshot({}), tools.browser_snapshot({})]);\nreturn [a.data.title, b.data.title];",
    )
    .await;
    assert_eq!(result_text(&result), r#"["Product 1","Product 2"]"#);
}

/// A browser that takes `delay` to answer anything.
struct SlowLink {
    inner: Arc<FakeLink>,
    delay: Duration,
}

impl BrowserLink for SlowLink {
    fn describe(&self) -> &str {
        "slow"
    }

    fn call<'a>(
        &'a self,
        method: &'a str,
        params: Value,
    ) -> futures_util::future::BoxFuture<'a, Result<Value, LinkError>> {
        Box::pin(async move {
            tokio::time::sleep(self.delay).await;
            self.inner.call(method, params).await
        })
    }

    fn list_browsers(
        &self,
    ) -> futures_util::future::BoxFuture<'_, Result<Vec<crate::link::ExtensionRow>, LinkError>>
    {
        self.inner.list_browsers()
    }

    fn choose<'a>(
        &'a self,
        wanted: &'a str,
    ) -> futures_util::future::BoxFuture<'a, Result<crate::link::ChosenBrowser, LinkError>> {
        self.inner.choose(wanted)
    }

    fn status(&self) -> crate::link::Status {
        self.inner.status()
    }
}

#[tokio::test]
async fn code_execution_wall_time_stops_a_script_waiting_for_a_slow_tool() {
    let link = Arc::new(SlowLink {
        inner: FakeLink::new(vec![("snapshot", Ok(page(1))), ("snapshot", Ok(page(2)))]),
        delay: Duration::from_millis(400),
    });
    let toolbox = Toolbox::new(link, 40_000).with_code_execution(Some(CodeLimits {
        wall_time: Duration::from_millis(600),
        ..limits()
    }));
    let started = std::time::Instant::now();
    let result = run_code(
        &toolbox,
        "await tools.browser_snapshot({});\nawait tools.browser_snapshot({});\nreturn 'done';",
    )
    .await;
    let text = result_text(&result);
    assert!(text.contains("the wall-time bound"), "{text}");
    assert!(
        text.contains("1. browser_snapshot {} → ok\n2. browser_snapshot {} → no answer yet"),
        "{text}"
    );
    assert!(started.elapsed() < Duration::from_secs(2));
}

/// A hand-off is one short `requestHuman`, then `awaitHuman` polls (each under the relay's
/// 60 s timeout) until the person answers; a lost connection between polls is waited out.
#[tokio::test]
async fn request_human_polls_in_short_waits_until_the_person_answers() {
    let page = |url: &str, title: &str| json!({"url": url, "title": title});
    let link = FakeLink::new(vec![
        (
            "requestHuman",
            Ok(json!({"handoffId": "h1", "status": "waiting", "tabId": 7})),
        ),
        (
            "awaitHuman",
            Ok(json!({"handoffId": "h1", "status": "waiting"})),
        ),
        ("awaitHuman", Err(LinkError::ConnectionLost)),
        (
            "awaitHuman",
            Ok(json!({
                "handoffId": "h1", "status": "done", "tabId": 7, "waitedSeconds": 42.0,
                "before": page("https://bank.test/login", "Sign in"),
                "after": page("https://bank.test/home", "Accounts"),
                "changed": ["url", "title"],
                "note": "The person did the step and clicked Done; the tab is yours again.",
            })),
        ),
    ]);
    let toolbox = Toolbox::new(link.clone(), DEFAULT_MAX_RESULT_CHARS);
    let result = toolbox
        .call(
            "browser_request_human",
            &args(json!({"reason": "  Log in to your bank ", "timeoutSeconds": 600, "tabId": 7})),
        )
        .await;
    assert_ne!(result.is_error, Some(true), "{result:?}");
    let text = format!("{:?}", result.content);
    assert!(text.contains("Hand-off done after 42.0 s"), "{text}");
    assert!(
        text.contains("\\\"Accounts\\\" at https://bank.test/home"),
        "{text}"
    );
    let sent = link.sent();
    assert_eq!(
        sent[0],
        (
            "requestHuman".to_owned(),
            json!({"reason": "Log in to your bank", "timeoutSeconds": 600, "tabId": 7})
        )
    );
    assert_eq!(sent.len(), 4, "one request, three polls: {sent:?}");
    for (method, params) in &sent[1..] {
        assert_eq!(method, "awaitHuman");
        assert_eq!(params["handoffId"], "h1");
        assert!(params["waitMs"].as_u64().unwrap() < 60_000);
    }
}

#[tokio::test]
async fn a_cancelled_hand_off_is_an_error_the_model_reads_as_not_done() {
    let link = FakeLink::new(vec![
        (
            "requestHuman",
            Ok(json!({"handoffId": "h2", "status": "waiting"})),
        ),
        (
            "awaitHuman",
            Ok(json!({
                "handoffId": "h2", "status": "cancelled", "waitedSeconds": 3.0,
                "before": {"url": "https://a.test/", "title": "A"},
                "after": {"url": "https://a.test/", "title": "A"},
                "note": "The person clicked Cancel: they will not do this step now.",
            })),
        ),
    ]);
    let toolbox = Toolbox::new(link, DEFAULT_MAX_RESULT_CHARS);
    let result = toolbox
        .call("browser_request_human", &args(json!({"reason": "Log in"})))
        .await;
    assert_eq!(result.is_error, Some(true));
    assert!(format!("{:?}", result.content).contains("Hand-off cancelled"));
}

/// The person's side of hand-offs, for the rounds of a host of MCP 2026-07-28: `awaitHuman`
/// waits its `waitMs` unless the person has answered; `answerHuman` and `cancelHuman` answer
/// (only a waiting hand-off takes an answer, as in the extension).
struct PersonLink {
    status: Mutex<&'static str>,
    sent: Mutex<Vec<(String, Value)>>,
}

impl PersonLink {
    fn new() -> Arc<PersonLink> {
        Arc::new(PersonLink {
            status: Mutex::new("waiting"),
            sent: Mutex::new(Vec::new()),
        })
    }

    /// The person answers in the popup.
    fn answer(&self, status: &'static str) {
        *self.status.lock().unwrap() = status;
    }

    fn methods(&self) -> Vec<String> {
        self.sent
            .lock()
            .unwrap()
            .iter()
            .map(|(m, _)| m.clone())
            .collect()
    }

    fn state(&self) -> Value {
        let status = *self.status.lock().unwrap();
        let after = if status == "done" {
            "Accounts"
        } else {
            "Sign in"
        };
        json!({
            "handoffId": "h1", "status": status, "tabId": 7, "waitedSeconds": 2.0,
            "before": {"url": "https://bank.test/login", "title": "Sign in"},
            "after": {"url": "https://bank.test/login", "title": after},
            "note": format!("ended: {status}"),
        })
    }
}

impl BrowserLink for PersonLink {
    fn describe(&self) -> &str {
        "person"
    }

    fn call<'a>(
        &'a self,
        method: &'a str,
        params: Value,
    ) -> futures_util::future::BoxFuture<'a, Result<Value, LinkError>> {
        self.sent
            .lock()
            .unwrap()
            .push((method.to_owned(), params.clone()));
        Box::pin(async move {
            let settle = |status: &'static str| {
                let mut now = self.status.lock().unwrap();
                if *now == "waiting" {
                    *now = status;
                }
            };
            match method {
                "requestHuman" => Ok(json!({"handoffId": "h1", "status": "waiting", "tabId": 7})),
                "awaitHuman" => {
                    let wait = Duration::from_millis(params["waitMs"].as_u64().unwrap());
                    let until = tokio::time::Instant::now() + wait;
                    while *self.status.lock().unwrap() == "waiting"
                        && tokio::time::Instant::now() < until
                    {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                    Ok(self.state())
                }
                "answerHuman" => {
                    settle(if params["answer"] == "done" {
                        "done"
                    } else {
                        "cancelled"
                    });
                    Ok(self.state())
                }
                "cancelHuman" => {
                    settle("withdrawn");
                    Ok(self.state())
                }
                other => Err(LinkError::Rpc {
                    code: mcp_relay_wire::code::METHOD_NOT_FOUND,
                    message: format!("no {other} here"),
                }),
            }
        })
    }

    fn list_browsers(
        &self,
    ) -> futures_util::future::BoxFuture<'_, Result<Vec<crate::link::ExtensionRow>, LinkError>>
    {
        Box::pin(async { Ok(Vec::new()) })
    }

    fn choose<'a>(
        &'a self,
        _wanted: &'a str,
    ) -> futures_util::future::BoxFuture<'a, Result<crate::link::ChosenBrowser, LinkError>> {
        Box::pin(async { Err(LinkError::NoBrowser("none".into())) })
    }

    fn status(&self) -> crate::link::Status {
        FakeLink::new(vec![]).status()
    }
}

/// One host call of `browser_request_human {reason: "Log in"}` in a round: the round's
/// `InputRequiredResult` if it left one, else the call's result.
async fn round_call(
    toolbox: &Toolbox,
    rounds: &Arc<Rounds>,
    state: Option<&str>,
    responses: Option<Value>,
    can_ask: bool,
) -> Result<CallToolResult, rmcp::model::InputRequiredResult> {
    let call = Arc::new(args(json!({"reason": "Log in", "timeoutSeconds": 120})));
    let responses = responses.map(|r| serde_json::from_value(r).unwrap());
    let round = Arc::new(
        Round::begin(
            Arc::clone(rounds),
            "browser_request_human",
            Arc::clone(&call),
            state,
            responses,
            can_ask,
        )
        .unwrap(),
    );
    let scope = CallScope {
        peer: None,
        progress_token: None,
        cancelled: tokio_util::sync::CancellationToken::new(),
        round: Some(Arc::clone(&round)),
    };
    let result = in_scope(scope, toolbox.call("browser_request_human", &call)).await;
    match round.take_input_required() {
        Some(input) => Err(input),
        None => Ok(result),
    }
}

#[tokio::test]
async fn a_host_that_can_ask_gets_the_hand_off_as_an_elicitation_at_once_and_its_done_finishes_it()
{
    let link = PersonLink::new();
    let toolbox = Toolbox::new(link.clone(), DEFAULT_MAX_RESULT_CHARS);
    let rounds = Arc::new(Rounds::new(Duration::from_secs(1)));
    let started = std::time::Instant::now();
    let asked = round_call(&toolbox, &rounds, None, None, true)
        .await
        .expect_err("input required");
    assert!(started.elapsed() < Duration::from_millis(500), "at once");
    assert_eq!(link.methods(), ["requestHuman"], "opened, not waited for");
    let question = serde_json::to_value(&asked.input_requests).unwrap();
    assert!(question["handOff"]["params"]["message"]
        .as_str()
        .unwrap()
        .contains("then confirm here: Log in"));
    let state = asked.request_state.unwrap();

    let done = round_call(
        &toolbox,
        &rounds,
        Some(&state),
        Some(json!({"handOff": {"action": "accept", "content": {"answer": "done"}}})),
        true,
    )
    .await
    .expect("the call's result");
    assert_ne!(done.is_error, Some(true), "{done:?}");
    assert!(format!("{:?}", done.content).contains("Hand-off done"));
    let sent = link.sent.lock().unwrap().clone();
    assert_eq!(
        sent[1],
        (
            "answerHuman".to_owned(),
            json!({"handoffId": "h1", "answer": "done"})
        )
    );
}

#[tokio::test]
async fn the_popups_answer_given_first_stands_when_the_hosts_answer_comes_after_it() {
    let link = PersonLink::new();
    let toolbox = Toolbox::new(link.clone(), DEFAULT_MAX_RESULT_CHARS);
    let rounds = Arc::new(Rounds::new(Duration::from_secs(1)));
    let asked = round_call(&toolbox, &rounds, None, None, true)
        .await
        .expect_err("input required");
    link.answer("cancelled");
    let late_done = round_call(
        &toolbox,
        &rounds,
        asked.request_state.as_deref(),
        Some(json!({"handOff": {"action": "accept", "content": {"answer": "done"}}})),
        true,
    )
    .await
    .expect("the call's result");
    assert_eq!(late_done.is_error, Some(true));
    assert!(format!("{:?}", late_done.content).contains("Hand-off cancelled"));
}

/// On a paused clock: a round's wait is proved without waiting for it.
#[tokio::test(start_paused = true)]
async fn a_host_without_elicitation_is_answered_with_the_state_alone_until_the_person_clicks_done()
{
    let link = PersonLink::new();
    let toolbox = Toolbox::new(link.clone(), DEFAULT_MAX_RESULT_CHARS);
    let rounds = Arc::new(Rounds::new(Duration::from_secs(1)));
    let started = tokio::time::Instant::now();
    let first = round_call(&toolbox, &rounds, None, None, false)
        .await
        .expect_err("input required");
    // A round, give or take the fake person's 10 ms polls.
    let waited = started.elapsed();
    assert!(
        waited >= rounds.wait() && waited <= rounds.wait() + Duration::from_millis(20),
        "it waited a round, not {waited:?}"
    );
    assert!(first.input_requests.is_none(), "nothing to ask: state only");
    let second = round_call(
        &toolbox,
        &rounds,
        first.request_state.as_deref(),
        None,
        false,
    )
    .await
    .expect_err("still input required");
    assert_ne!(second.request_state, None);
    link.answer("done");
    let done = round_call(
        &toolbox,
        &rounds,
        second.request_state.as_deref(),
        None,
        false,
    )
    .await
    .expect("the call's result");
    assert_ne!(done.is_error, Some(true), "{done:?}");
    assert!(format!("{:?}", done.content).contains("\\\"Accounts\\\""));
    let methods = link.methods();
    assert_eq!(methods[0], "requestHuman");
    assert!(
        methods[1..].iter().all(|m| m == "awaitHuman"),
        "{methods:?}"
    );
}

/// On a paused clock: the rounds' waits and the lease pass without being waited for, and the
/// lease is shown to end exactly when it should.
#[tokio::test(start_paused = true)]
async fn a_host_that_stops_calling_again_has_its_hand_off_withdrawn_after_the_lease() {
    let link = PersonLink::new();
    let toolbox = Toolbox::new(link.clone(), DEFAULT_MAX_RESULT_CHARS);
    let lease = Duration::from_millis(200);
    let rounds = Arc::new(Rounds::new(Duration::from_secs(1)).with_lease(lease));
    let first = round_call(&toolbox, &rounds, None, None, false)
        .await
        .expect_err("input required");
    // A host that calls again in time keeps it.
    let second = round_call(
        &toolbox,
        &rounds,
        first.request_state.as_deref(),
        None,
        false,
    )
    .await
    .expect_err("input required");
    assert!(!link.methods().contains(&"cancelHuman".to_owned()));
    assert!(second.request_state.is_some());
    // Then it stops: the hand-off stays until its lease ends, and is withdrawn then.
    tokio::time::sleep(lease - Duration::from_millis(1)).await;
    assert!(!link.methods().contains(&"cancelHuman".to_owned()));
    tokio::time::sleep(Duration::from_millis(2)).await;
    assert_eq!(link.methods().last().unwrap(), "cancelHuman");
    assert_eq!(*link.status.lock().unwrap(), "withdrawn");
}

#[tokio::test]
async fn a_hand_off_inside_a_script_waits_in_its_call_even_for_a_host_of_rounds() {
    let link = PersonLink::new();
    link.answer("done");
    let toolbox = Toolbox::new(link.clone(), 40_000).with_code_execution(Some(limits()));
    let rounds = Arc::new(Rounds::new(Duration::from_secs(1)));
    let code = args(
        json!({"code": "const r = await tools.browser_request_human({reason: 'Log in'});\nreturn r.data.status;"}),
    );
    let round = Arc::new(
        Round::begin(
            rounds,
            "code_execution",
            Arc::new(code.clone()),
            None,
            None,
            true,
        )
        .unwrap(),
    );
    let scope = CallScope {
        peer: None,
        progress_token: None,
        cancelled: tokio_util::sync::CancellationToken::new(),
        round: Some(Arc::clone(&round)),
    };
    let result = in_scope(scope, toolbox.call("code_execution", &code)).await;
    assert!(
        round.take_input_required().is_none(),
        "a script is not resumable"
    );
    assert_eq!(result_text(&result), "done", "{result:?}");
    assert_eq!(link.methods(), ["requestHuman", "awaitHuman"]);
}

#[test]
fn request_human_refuses_an_empty_reason_or_a_timeout_over_30_minutes() {
    let err = |call: Value| plan("browser_request_human", &args(call)).unwrap_err();
    assert!(err(json!({"reason": "  "})).contains("reason"));
    assert!(err(json!({"reason": "Log in", "timeoutSeconds": 1801})).contains("1800"));
    assert!(err(json!({"reason": "Log in", "timeoutSeconds": 0})).contains("between 1"));
}

#[test]
fn network_requests_show_fetches_and_failures_unless_static_and_filter_by_url() {
    let list = || {
        json!({"tabId": 7, "requests": [
            {"method": "GET", "url": "https://e.test/", "type": "Document", "status": 200},
            {"method": "GET", "url": "https://e.test/app.js", "type": "Script", "status": 304},
            {"method": "GET", "url": "https://e.test/logo.png", "type": "Image", "status": 404},
            {"method": "GET", "url": "https://e.test/f.woff2", "type": "Font", "failure": "net::ERR_FAILED"},
            {"method": "POST", "url": "https://e.test/api/user", "type": "Fetch", "status": 200},
            {"method": "GET", "url": "https://e.test/api/cart", "type": "XHR"},
            {"method": "OPTIONS", "url": "https://x.test/api", "type": "Other", "preflight": true,
             "failure": "net::ERR_NAME_NOT_RESOLVED"},
        ]})
    };
    let urls = |value: &Value| -> Vec<String> {
        value["requests"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                r["url"]
                    .as_str()
                    .unwrap()
                    .trim_start_matches("https://e.test")
                    .to_owned()
            })
            .collect()
    };
    // Playwright MCP's default: the page's own files that loaded are counted, not listed.
    let mut shown = list();
    super::results::select_requests(&mut shown, false, None);
    assert_eq!(
        urls(&shown),
        ["/logo.png", "/f.woff2", "/api/user", "/api/cart"]
    );
    assert!(
        shown["note"]
            .as_str()
            .unwrap()
            .starts_with("2 static requests and 1 CORS"),
        "{shown}"
    );
    assert!(
        shown["note"]
            .as_str()
            .unwrap()
            .ends_with("1 CORS preflight not shown; \"static\": true lists them"),
        "{shown}"
    );
    let mut all = list();
    super::results::select_requests(&mut all, true, None);
    assert_eq!(urls(&all).len(), 7);
    assert!(all.get("note").is_none(), "{all}");
    // A filter keeps the URLs it matches and says how many it left out; an older note stays.
    // Earlier pages' requests, which no argument shows, are not mentioned.
    let mut api = list();
    api["note"] = json!("3 older requests were dropped");
    api["earlier"] = json!(4);
    let filter = super::results::url_filter("/api/").unwrap();
    super::results::select_requests(&mut api, false, Some(&filter));
    assert_eq!(urls(&api), ["/api/user", "/api/cart"]);
    let note = api["note"].as_str().unwrap();
    assert!(
        note.starts_with("3 older requests were dropped; 2 static requests")
            && note.ends_with("2 requests whose URL does not match \"/api/\" not shown"),
        "{note}"
    );
    // A bad pattern is refused before anything is sent; requestId reads one body as before.
    let bad = plan("browser_network_requests", &args(json!({"filter": "(api"}))).unwrap_err();
    assert!(
        bad.contains("\"filter\" is not a valid regular expression"),
        "{bad}"
    );
    assert_eq!(
        plan(
            "browser_network_requests",
            &args(json!({"requestId": "9.1", "static": true}))
        )
        .unwrap(),
        Plan::Forward {
            method: "networkRequests",
            params: json!({"requestId": "9.1"}),
            image: false
        }
    );
    assert_eq!(
        plan("browser_network_requests", &args(json!({}))).unwrap(),
        Plan::Requests {
            params: json!({"sincePage": true}),
            include_static: false,
            filter: None
        }
    );
}

#[test]
fn network_request_reads_one_request_by_its_number_and_part_as_playwright_mcp_names_them() {
    use super::args::RequestPart;
    assert_eq!(
        plan(
            "browser_network_request",
            &args(json!({"index": 3, "part": "response-body"}))
        )
        .unwrap(),
        Plan::Request {
            params: json!({"index": 3}),
            part: Some(RequestPart::ResponseBody)
        }
    );
    assert_eq!(
        plan(
            "browser_network_request",
            &args(json!({"index": 1, "tabId": 4}))
        )
        .unwrap(),
        Plan::Request {
            params: json!({"index": 1, "tabId": 4}),
            part: None
        }
    );
    // Numbers count from 1; a part Playwright MCP does not name is refused with those it does.
    let zero = plan("browser_network_request", &args(json!({"index": 0}))).unwrap_err();
    assert!(zero.contains("counts from 1"), "{zero}");
    let part = plan(
        "browser_network_request",
        &args(json!({"index": 1, "part": "cookies"})),
    )
    .unwrap_err();
    assert!(part.contains("response-body"), "{part}");
    assert!(plan("browser_network_request", &args(json!({})))
        .unwrap_err()
        .contains("\"index\" is required"));
    // A long body reads on where its part's note says.
    assert_eq!(
        plan(
            "browser_network_request",
            &args(json!({"index": 1, "offset": 40000}))
        )
        .unwrap(),
        Plan::Continue(40_000)
    );
}

#[test]
fn console_messages_are_those_of_the_page_now_shown_at_info_and_above_as_playwright_mcp_lists_them()
{
    use super::args::ConsoleLevel;
    assert_eq!(
        plan("browser_console_messages", &args(json!({}))).unwrap(),
        Plan::Console {
            params: json!({"sincePage": true}),
            level: ConsoleLevel::Info
        }
    );
    assert_eq!(
        plan(
            "browser_console_messages",
            &args(json!({"all": true, "level": "warning", "tabId": 3}))
        )
        .unwrap(),
        Plan::Console {
            params: json!({"tabId": 3}),
            level: ConsoleLevel::Warning
        }
    );
    // Today's callers' onlyErrors is level error.
    assert_eq!(
        plan(
            "browser_console_messages",
            &args(json!({"onlyErrors": true}))
        )
        .unwrap(),
        Plan::Console {
            params: json!({"sincePage": true}),
            level: ConsoleLevel::Error
        }
    );
    let bad = plan("browser_console_messages", &args(json!({"level": "fatal"}))).unwrap_err();
    assert!(bad.contains("level"), "{bad}");

    // A console call's type read as Playwright MCP reads it; what is left out is counted.
    let list = || {
        json!({"tabId": 1, "earlier": 2, "messages": [
            {"type": "log", "text": "a log"},
            {"type": "debug", "text": "a debug"},
            {"type": "warning", "text": "a warning"},
            {"type": "assert", "text": "an assert"},
            {"type": "error", "text": "Uncaught Error: boom"},
            {"type": "startGroup", "text": "a group"},
            {"type": "table", "text": "a table"},
        ]})
    };
    let texts = |value: &Value| -> Vec<String> {
        value["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["text"].as_str().unwrap().to_owned())
            .collect()
    };
    let mut info = list();
    super::results::select_console(&mut info, ConsoleLevel::Info);
    assert_eq!(
        texts(&info),
        [
            "a log",
            "a warning",
            "an assert",
            "Uncaught Error: boom",
            "a table"
        ]
    );
    assert_eq!(
        info["note"],
        "2 messages below level \"info\" not shown; \"level\": \"debug\" shows all; \
         2 messages of earlier pages not shown; \"all\": true shows them"
    );
    let mut errors = list();
    super::results::select_console(&mut errors, ConsoleLevel::Error);
    assert_eq!(texts(&errors), ["an assert", "Uncaught Error: boom"]);
    let mut every = list();
    every["earlier"] = json!(0);
    super::results::select_console(&mut every, ConsoleLevel::Debug);
    assert_eq!(texts(&every).len(), 7);
    assert!(every.get("note").is_none(), "{every}");
}

#[test]
fn a_click_carries_playwright_mcps_modifiers_and_refuses_a_key_that_is_not_one() {
    assert_eq!(
        plan(
            "browser_click",
            &args(json!({"target": "e3", "modifiers": ["Shift", "ControlOrMeta"]}))
        )
        .unwrap(),
        Plan::Forward {
            method: "click",
            params: json!({"ref": "e3", "modifiers": ["Shift", "ControlOrMeta"]}),
            image: false
        }
    );
    // None held is a plain click.
    assert_eq!(
        plan(
            "browser_click",
            &args(json!({"target": "e3", "modifiers": []}))
        )
        .unwrap(),
        Plan::Forward {
            method: "click",
            params: json!({"ref": "e3"}),
            image: false
        }
    );
    let bad = plan(
        "browser_click",
        &args(json!({"target": "e3", "modifiers": ["Ctrl"]})),
    )
    .unwrap_err();
    assert!(
        bad.contains("modifiers") && bad.contains("ControlOrMeta"),
        "{bad}"
    );
}

/// Closing the tab the session works in leaves it in the last other tab it holds (not the
/// person's, not another session's), and the answer says which; the protocol's `closeTab` is
/// unchanged.
#[tokio::test]
async fn closing_the_current_tab_goes_on_in_the_last_other_tab_the_session_holds() {
    let tabs = json!({"currentTabId": 7, "tabs": [
        {"tabId": 3, "url": "https://a.test/", "title": "A", "owner": "you"},
        {"tabId": 4, "url": "https://mine.test/", "title": "Mine", "owner": null},
        {"tabId": 5, "url": "https://other.test/", "title": "O", "owner": "another connection"},
        {"tabId": 7, "url": "https://b.test/", "title": "B", "owner": "you", "current": true},
    ]});
    let link = FakeLink::new(vec![
        ("getTabs", Ok(tabs.clone())),
        ("closeTab", Ok(json!({"tabId": 7, "closed": true}))),
        (
            "selectTab",
            Ok(json!({"tabId": 3, "url": "https://a.test/", "title": "A"})),
        ),
        ("closeTab", Ok(json!({"tabId": 3, "closed": true}))),
    ]);
    let toolbox = Toolbox::new(link.clone(), 40_000);
    let closed = toolbox
        .call("browser_tabs", &args(json!({"action": "close"})))
        .await;
    assert_eq!(
        result_text(&closed),
        "Closed tab 7\nCurrent tab: Tab 3 · https://a.test/ · A"
    );
    // A tab named by its id: closed as the protocol closes it, nothing else sent.
    let other = toolbox
        .call(
            "browser_tabs",
            &args(json!({"action": "close", "tabId": 3})),
        )
        .await;
    assert_eq!(result_text(&other), "Closed tab 3");
    assert_eq!(
        link.sent_but_reads(),
        [
            ("closeTab".to_owned(), json!({})),
            ("selectTab".to_owned(), json!({"tabId": 3})),
            ("closeTab".to_owned(), json!({"tabId": 3})),
        ]
    );
}

#[tokio::test]
async fn a_tab_is_selected_or_closed_by_its_place_in_the_list_as_playwright_mcp_names_it() {
    let tabs = json!({"currentTabId": 7, "tabs": [
        {"tabId": 3, "url": "https://a.test/", "title": "A"},
        {"tabId": 7, "url": "https://b.test/", "title": "B", "current": true},
    ]});
    let link = FakeLink::new(vec![
        ("getTabs", Ok(tabs.clone())),
        ("getTabs", Ok(tabs.clone())),
        (
            "selectTab",
            Ok(json!({"tabId": 3, "url": "https://a.test/", "title": "A"})),
        ),
        ("getTabs", Ok(tabs.clone())),
        ("getTabs", Ok(tabs)),
        ("closeTab", Ok(json!({"tabId": 7, "closed": true}))),
    ]);
    let toolbox = Toolbox::new(link.clone(), 40_000);
    // The list shows each tab's place, which "index" takes.
    let list = toolbox
        .call("browser_tabs", &args(json!({"action": "list"})))
        .await;
    let text = result_text(&list);
    assert!(
        text.contains("\n- 0: Tab 3 · https://a.test/ · A"),
        "{text}"
    );
    assert!(text.contains("\n- 1: Tab 7 · "), "{text}");
    let selected = toolbox
        .call(
            "browser_tabs",
            &args(json!({"action": "select", "index": 0})),
        )
        .await;
    assert_eq!(selected.is_error, Some(false), "{selected:?}");
    let missing = toolbox
        .call(
            "browser_tabs",
            &args(json!({"action": "select", "index": 2})),
        )
        .await;
    assert_eq!(missing.is_error, Some(true));
    assert!(
        result_text(&missing).contains("no tab at index 2: the browser has 2 tabs"),
        "{missing:?}"
    );
    toolbox
        .call(
            "browser_tabs",
            &args(json!({"action": "close", "index": 1})),
        )
        .await;
    assert_eq!(
        link.sent_but_reads(),
        [
            ("selectTab".to_owned(), json!({"tabId": 3})),
            ("closeTab".to_owned(), json!({"tabId": 7}))
        ]
    );
    // A tabId, when given, wins; neither is refused for select with both named.
    assert_eq!(
        plan(
            "browser_tabs",
            &args(json!({"action": "select", "tabId": 9, "index": 0}))
        )
        .unwrap(),
        Plan::Forward {
            method: "selectTab",
            params: json!({"tabId": 9}),
            image: false
        }
    );
    let neither = plan("browser_tabs", &args(json!({"action": "select"}))).unwrap_err();
    assert!(neither.contains("\"tabId\" or \"index\""), "{neither}");
}

#[test]
fn typing_slowly_as_playwright_mcp_asks_it_is_sent_and_stays_out_of_the_schema() {
    assert_eq!(
        plan(
            "browser_type",
            &args(json!({"target": "e2", "text": "ab", "slowly": true}))
        )
        .unwrap(),
        Plan::Forward {
            method: "type",
            params: json!({"ref": "e2", "text": "ab", "slowly": true}),
            image: false
        }
    );
    assert_eq!(
        plan(
            "browser_type",
            &args(json!({"target": "e2", "text": "ab", "slowly": false}))
        )
        .unwrap(),
        Plan::Forward {
            method: "type",
            params: json!({"ref": "e2", "text": "ab"}),
            image: false
        }
    );
    let tools = definitions();
    let typing = tools.iter().find(|t| t.name == "browser_type").unwrap();
    assert!(typing.input_schema["properties"].get("slowly").is_none());
}

#[test]
fn a_snapshot_with_playwright_mcps_boxes_asks_the_extension_for_them_and_stays_out_of_the_schema() {
    assert_eq!(
        plan("browser_snapshot", &args(json!({"boxes": true}))).unwrap(),
        Plan::Forward {
            method: "snapshot",
            params: json!({"format": "outline", "boxes": true}),
            image: false
        }
    );
    assert_eq!(
        plan("browser_snapshot", &args(json!({"boxes": false}))).unwrap(),
        Plan::Forward {
            method: "snapshot",
            params: json!({"format": "outline"}),
            image: false
        }
    );
    let tools = definitions();
    let snapshot = tools.iter().find(|t| t.name == "browser_snapshot").unwrap();
    assert!(snapshot.input_schema["properties"].get("boxes").is_none());
}

// browser_run_code_unsafe: Playwright code over the session's tools (script_page.js).

async fn run_playwright(toolbox: &Toolbox, code: &str) -> CallToolResult {
    toolbox
        .call("browser_run_code_unsafe", &args(json!({ "code": code })))
        .await
}

/// What a script that ran to its end returned, as JSON.
async fn playwright_returned(toolbox: &Toolbox, code: &str) -> Value {
    let result = run_playwright(toolbox, code).await;
    let text = result_text(&result);
    assert_eq!(result.is_error, Some(false), "{text}");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

#[tokio::test]
async fn playwright_code_steps_are_the_tools_a_model_would_call() {
    let link = FakeLink::new(vec![
        (
            "browser_navigate",
            Ok(json!({"tabId": 1, "url": "https://shop.test/", "title": "Shop"})),
        ),
        ("click", Ok(json!({"tabId": 1, "clicked": true}))),
        (
            "evaluateFunction",
            Ok(json!({"tabId": 1, "type": "string", "value": "{\"v\":\"Kettle\"}"})),
        ),
        (
            "type",
            Ok(json!({"tabId": 1, "typed": true, "value": "tea"})),
        ),
    ]);
    let toolbox = scripted(link.clone(), limits());
    let code = r#"async (page) => {
        const response = await page.goto('https://shop.test/');
        await page.getByRole('link', { name: 'Kettle' }).click();
        const name = await page.locator('h1').textContent();
        await page.getByLabel(/search/i).fill('tea');
        return { name, url: page.url(), ok: response.ok() };
    }"#;
    assert_eq!(
        playwright_returned(&toolbox, code).await,
        json!({"name": "Kettle", "url": "https://shop.test/", "ok": true})
    );
    let sent = link.sent();
    let methods: Vec<&str> = sent.iter().map(|(m, _)| m.as_str()).collect();
    assert_eq!(
        methods,
        ["browser_navigate", "click", "evaluateFunction", "type"]
    );
    assert_eq!(
        sent[1].1["selector"],
        r#"getByRole("link", { name: "Kettle" })"#
    );
    assert_eq!(sent[2].1["selector"], "h1");
    assert_eq!(sent[3].1["selector"], "getByLabel(/search/i)");
    assert_eq!(sent[3].1["text"], "tea");
}

#[test]
fn playwright_code_is_a_function_of_page_or_a_body() {
    for function in [
        "async (page) => { await page.goto('x'); }",
        "  async page => page.title()",
        "async function (page) { return 1; }",
        "function run(page) { return 1; }",
        "async ({ page }) => 1",
        "(page) => page.url()",
        "// Read the title\nasync (page) => page.title()",
        "/* a script */ async (page) => 1;",
    ] {
        assert!(code::is_function(function), "{function}");
    }
    for body in [
        "await page.goto('x');\nreturn await page.title();",
        "(await page.title()).length",
        "return 1;",
        "const f = (x) => x; return f(1);",
        "// a body\nreturn 1;",
    ] {
        assert!(!code::is_function(body), "{body}");
    }
}

#[tokio::test]
async fn playwright_code_counts_reads_whole_values_and_names_the_failing_line() {
    let refused = |message: &str| {
        Err(LinkError::Rpc {
            code: -32000,
            message: message.to_owned(),
        })
    };
    let long = "x".repeat(100_000);
    let link = FakeLink::new(vec![
        // page.url() is read before any navigation: where the script starts, first.
        (
            "evaluateFunction",
            Ok(json!({"tabId": 1, "type": "string", "value": "{\"v\":\"https://shop.test/\"}"})),
        ),
        (
            "evaluateFunction",
            refused("getByRole(\"link\") matches 3 elements; name one (Playwright's locators are strict): use one's ref, or add .first(), .last() or .nth(i)"),
        ),
        ("evaluateFunction", refused("No element matches getByText(\"Gone\"); take a snapshot")),
        (
            "evaluateFunction",
            Ok(json!({"tabId": 1, "type": "string", "value": json!({"v": long}).to_string()})),
        ),
        (
            "click",
            Ok(json!({"tabId": 1, "clicked": true, "pageChanged": {"url": "https://shop.test/next", "title": "Next"}})),
        ),
        ("click", refused("No element matches getByRole(\"button\", { name: \"Buy\" })")),
    ]);
    let toolbox = scripted(link.clone(), limits());
    let code = "async (page) => {
        const links = await page.getByRole('link').count();
        const gone = await page.getByText('Gone').count();
        const html = await page.content();
        await page.getByRole('link', { name: 'Next' }).first().click();
        const url = page.url();
        try {
            await page.getByRole('button', { name: 'Buy' }).click();
        } catch (e) {
            return JSON.stringify({ links, gone, length: html.length, url, failed: e.message, stack: String(e.stack) });
        }
    }";
    let seen = playwright_returned(&toolbox, code).await;
    assert_eq!(seen["links"], 3);
    assert_eq!(seen["gone"], 0);
    // Whole, though a direct call's text stops at 40,000 characters.
    assert_eq!(seen["length"], 100_000);
    assert_eq!(seen["url"], "https://shop.test/next");
    assert!(
        seen["failed"]
            .as_str()
            .unwrap()
            .contains("No element matches"),
        "{seen}"
    );
    // The error's stack names the script's line of the step, though the step awaited first.
    assert!(seen["stack"].as_str().unwrap().contains("code:8"), "{seen}");
    assert_eq!(
        link.sent()[4].1["selector"],
        r#"getByRole("link", { name: "Next" }).first()"#
    );

    // A step this `page` lacks is refused by name, with the line.
    let result = run_playwright(
        &toolbox,
        "async (page) => {\n  await page.route('**', () => {});\n}",
    )
    .await;
    let text = result_text(&result);
    assert_eq!(result.is_error, Some(true));
    assert!(
        text.contains("page.route is not available in this bridge's scripts")
            && text.contains("(line 2)")
            && text.contains("It had made no tool call."),
        "{text}"
    );
}

#[tokio::test]
async fn playwright_code_has_timers_as_waits_urls_and_base64_but_no_way_out() {
    let link = FakeLink::new(vec![(
        "waitFor",
        Ok(json!({"tabId": 1, "found": true, "waitedMs": 500})),
    )]);
    let toolbox = scripted(link.clone(), limits());
    let code = r#"async (page) => {
        await new Promise((resolve) => setTimeout(resolve, 500));
        const cancelled = setTimeout(() => { throw new Error('never'); }, 0);
        clearTimeout(cancelled);
        const u = new URL('../b/c.html?x=1&y=a+b#top', 'https://Shop.test:443/a/d/index.html');
        return { href: u.href, path: u.pathname, x: u.searchParams.get('x'), y: u.searchParams.get('y'),
                 host: u.host, b64: btoa('hi!'), back: atob(btoa('hi!')),
                 rel: new URL('/p?q=1', 'http://localhost:3000/x').href,
                 escapes: [typeof fetch, typeof require, typeof process, typeof setInterval] };
    }"#;
    assert_eq!(
        playwright_returned(&toolbox, code).await,
        json!({"href": "https://shop.test/a/b/c.html?x=1&y=a+b#top", "path": "/a/b/c.html",
               "x": "1", "y": "a b", "host": "shop.test", "b64": "aGkh", "back": "hi!",
               "rel": "http://localhost:3000/p?q=1",
               "escapes": ["undefined", "undefined", "undefined", "undefined"]})
    );
    // The one timer that ran was one wait in the page's tab; the cancelled one made no call.
    let sent = link.sent();
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0].0, "waitFor");
    assert_eq!(sent[0].1["time"], 0.5);
}

#[tokio::test]
async fn playwright_code_that_reads_the_url_before_navigating_learns_it_first() {
    let link = FakeLink::new(vec![(
        "evaluateFunction",
        Ok(json!({"tabId": 1, "type": "string", "value": "{\"v\":\"https://shop.test/cart\"}"})),
    )]);
    let toolbox = scripted(link.clone(), limits());
    let result = run_playwright(&toolbox, "async (page) => page.url()").await;
    assert_eq!(result_text(&result), "https://shop.test/cart");
    assert_eq!(link.sent().len(), 1);
    // With no page yet, about:blank, as a new Playwright page starts.
    let toolbox = scripted(FakeLink::new(vec![]), limits());
    let result = run_playwright(&toolbox, "return page.url();").await;
    assert_eq!(result_text(&result), "about:blank");
}

#[tokio::test]
async fn playwright_code_with_a_comment_before_and_a_semicolon_after_still_runs() {
    let toolbox = scripted(FakeLink::new(vec![]), limits());
    let result = run_playwright(
        &toolbox,
        "// Give the answer\nasync (page) => {\n  return 6 * 7;\n};\n",
    )
    .await;
    assert_eq!(result_text(&result), "42");
}

#[tokio::test]
async fn playwright_code_can_come_from_a_file_where_the_bridge_runs() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("answer.js");
    std::fs::write(&file, "async (page) => {\n  return 6 * 7;\n}\n").unwrap();
    let path = file.to_string_lossy().into_owned();
    let toolbox = scripted(FakeLink::new(vec![]), limits());
    // As Playwright MCP: the file wins over code given beside it.
    let result = toolbox
        .call(
            "browser_run_code_unsafe",
            &args(json!({"filename": path, "code": "async () => 1"})),
        )
        .await;
    assert_eq!(result.is_error, Some(false), "{}", result_text(&result));
    assert_eq!(result_text(&result), "42");

    let missing = dir.path().join("nope.js").to_string_lossy().into_owned();
    let result = toolbox
        .call(
            "browser_run_code_unsafe",
            &args(json!({"filename": missing})),
        )
        .await;
    assert_eq!(result.is_error, Some(true));
    let text = result_text(&result);
    assert!(
        text.contains("cannot read") && text.contains("nope.js"),
        "{text}"
    );

    // Over the relay's HTTP /mcp the host's files are not where the tools run.
    let hosted = scripted(FakeLink::new(vec![]), limits()).with_files_in_results();
    let result = hosted
        .call("browser_run_code_unsafe", &args(json!({"filename": path})))
        .await;
    assert_eq!(result.is_error, Some(true));
    let text = result_text(&result);
    assert!(
        text.contains("send the script itself as \"code\""),
        "{text}"
    );
}

#[tokio::test]
async fn playwright_code_reads_every_match_of_a_getby_locator_in_one_call() {
    let each = |values: Vec<Value>| {
        let list: Vec<String> = values
            .iter()
            .map(|v| json!({ "v": v }).to_string())
            .collect();
        Ok(json!({"tabId": 1, "type": "object", "value": list}))
    };
    let link = FakeLink::new(vec![
        (
            "evaluateFunction",
            each(vec![json!("Mug"), json!("Teapot"), json!("Cup")]),
        ),
        (
            "evaluateFunction",
            each(vec![
                json!(["Mug 4 EUR", "Mug"]),
                json!(["Teapot 30 EUR", "Teapot"]),
                json!(["Cup 3 EUR", "Cup"]),
            ]),
        ),
        (
            "evaluateFunction",
            each(vec![
                json!(["Mug 4 EUR", 0]),
                json!(["Teapot 30 EUR", 0]),
                json!(["Cup 3 EUR", 0]),
            ]),
        ),
        (
            "evaluateFunction",
            each(vec![
                json!("Mug 4 EUR"),
                json!("Teapot 30 EUR"),
                json!("Cup 3 EUR"),
            ]),
        ),
        ("click", Ok(json!({"tabId": 1, "clicked": true}))),
    ]);
    let toolbox = scripted(link.clone(), limits());
    let code = "async (page) => {
        const names = await page.getByRole('link').allTextContents();
        const items = page.getByRole('listitem');
        const cheap = await items.filter({ hasText: /[34] EUR/ }).allTextContents();
        const others = await items.filter({ hasNotText: 'Teapot' }).count();
        await items.filter({ hasText: 'Cup' }).click();
        return { names, cheap, others };
    }";
    let seen = playwright_returned(&toolbox, code).await;
    assert_eq!(seen["names"], json!(["Mug", "Teapot", "Cup"]));
    // A filter reads each match's text beside the value, in the same call.
    assert_eq!(seen["cheap"], json!(["Mug", "Cup"]));
    assert_eq!(seen["others"], 2);
    let sent = link.sent();
    // One call per read, however many elements: each names the whole locator, `each` set.
    assert_eq!(sent.len(), 5, "{sent:?}");
    assert_eq!(sent[0].1["selector"], r#"getByRole("link")"#);
    assert_eq!(sent[0].1["each"], true);
    assert_eq!(sent[1].1["selector"], r#"getByRole("listitem")"#);
    assert_eq!(sent[2].1["each"], true);
    // The filtered click acts on the one kept element, named by its place among the matches.
    assert_eq!(sent[4].0, "click");
    assert_eq!(sent[4].1["selector"], r#"getByRole("listitem").nth(2)"#);

    // Called directly, `each` needs the elements named.
    let result = toolbox
        .call(
            "browser_evaluate",
            &args(json!({"function": "(e) => e.id", "each": true})),
        )
        .await;
    assert_eq!(result.is_error, Some(true));
    assert!(
        result_text(&result).contains("give \"target\" too"),
        "{}",
        result_text(&result)
    );
}

#[tokio::test]
async fn code_execution_stopped_after_many_calls_lists_the_first_and_last_and_counts_the_rest() {
    let answers = (1..=30).map(|n| ("snapshot", Ok(page(n)))).collect();
    let toolbox = scripted(
        FakeLink::new(answers),
        CodeLimits {
            calls: 30,
            ..limits()
        },
    );
    let result = run_code(
        &toolbox,
        "for (let i = 0; i < 40; i++) await tools.browser_snapshot({});",
    )
    .await;
    let text = result_text(&result);
    assert_eq!(result.is_error, Some(true), "{text}");
    assert!(
        text.contains("It had made 30 tool call(s):\n1. browser_snapshot {} → ok\n"),
        "{text}"
    );
    assert!(
        text.contains(
            "5. browser_snapshot {} → ok\n… 20 more call(s), 0 of them failed …\n26. browser_snapshot {} → ok"
        ),
        "{text}"
    );
    assert!(text.contains("\n30. browser_snapshot {} → ok"), "{text}");
    assert!(!text.contains("\n6. "), "{text}");
    // Every call is still in structuredContent.
    let structured = result.structured_content.unwrap();
    assert_eq!(structured["innerCalls"].as_array().unwrap().len(), 30);
}

#[tokio::test]
async fn playwright_code_saves_a_screenshot_where_the_bridge_runs_when_given_a_path() {
    let dir = tempfile::tempdir().unwrap();
    let at = |name: &str| dir.path().join(name).to_string_lossy().into_owned();
    let shot = || {
        Ok(
            json!({"tabId": 7, "data": "iVBORw0KGgo=", "mimeType": "image/png",
                  "format": "png", "width": 1280, "height": 800}),
        )
    };
    let link = FakeLink::new(vec![("screenshot", shot()), ("elementScreenshot", shot())]);
    let toolbox = scripted(link.clone(), limits());
    let code = format!(
        "async (page) => {{\n  const value = await page.screenshot({{ path: {:?}, fullPage: true }});\n  \
         await page.locator('#cart').screenshot({{ path: {:?} }});\n  return String(value);\n}}",
        at("whole.png"),
        at("cart.png")
    );
    let result = run_playwright(&toolbox, &code).await;
    assert_eq!(result.is_error, Some(false), "{}", result_text(&result));
    assert_eq!(result_text(&result), "undefined");
    assert_eq!(
        std::fs::read(at("whole.png")).unwrap(),
        b"\x89PNG\r\n\x1a\n"
    );
    assert_eq!(std::fs::read(at("cart.png")).unwrap(), b"\x89PNG\r\n\x1a\n");
    let sent = link.sent();
    assert_eq!(sent[0].1["fullPage"], true, "{sent:?}");
    assert_eq!(sent[1].0, "elementScreenshot", "{sent:?}");
    assert_eq!(sent[1].1["selector"], "#cart", "{sent:?}");

    // Without a path there is nowhere for the image to go: said, with what to do instead.
    let result = run_playwright(&toolbox, "async (page) => page.screenshot()").await;
    let text = result_text(&result);
    assert_eq!(result.is_error, Some(true));
    assert!(
        text.contains("page.screenshot() without a path is not available")
            && text.contains("{ path: 'shot.png' }"),
        "{text}"
    );

    // Over the relay's HTTP /mcp nothing is saved where the tools run: the script is told.
    let hosted =
        scripted(FakeLink::new(vec![("screenshot", shot())]), limits()).with_files_in_results();
    let code = format!(
        "async (page) => page.screenshot({{ path: {:?} }})",
        at("remote.png")
    );
    let result = run_playwright(&hosted, &code).await;
    let text = result_text(&result);
    assert_eq!(result.is_error, Some(true), "{text}");
    assert!(text.contains("Not saved to"), "{text}");
    assert!(!std::path::Path::new(&at("remote.png")).exists());
}

#[tokio::test]
async fn playwright_code_types_on_the_keyboard_in_one_call() {
    let link = FakeLink::new(vec![
        ("pressKey", Ok(json!({"tabId": 1, "typed": "hi there"}))),
        ("pressKey", Ok(json!({"tabId": 1, "pressed": "Enter"}))),
    ]);
    let toolbox = scripted(link.clone(), limits());
    let result = run_playwright(
        &toolbox,
        "async (page) => {\n  await page.keyboard.type('hi there');\n  await page.keyboard.type('');\n  await page.keyboard.press('Enter');\n}",
    )
    .await;
    assert_eq!(result.is_error, Some(false), "{}", result_text(&result));
    let sent = link.sent();
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert_eq!(sent[0].1["text"], "hi there");
    assert!(sent[0].1.get("key").is_none(), "{sent:?}");
    assert_eq!(sent[1].1["key"], "Enter");

    // A model's own call still needs its key, and gets one or the other.
    let toolbox = Toolbox::new(FakeLink::new(vec![]), 40_000);
    let result = toolbox.call("browser_press_key", &args(json!({}))).await;
    assert!(
        result_text(&result).contains("\"key\" is required"),
        "{}",
        result_text(&result)
    );
    let schema = toolbox
        .definitions()
        .iter()
        .find(|tool| tool.name == "browser_press_key")
        .unwrap()
        .input_schema
        .clone();
    assert_eq!(schema["required"], json!(["key"]), "{schema:?}");
    assert_eq!(schema["properties"]["key"]["type"], "string", "{schema:?}");
    assert!(schema["properties"].get("text").is_none(), "{schema:?}");
}

#[tokio::test]
async fn playwright_code_evaluates_all_matches_of_a_getby_locator_at_once() {
    let link = FakeLink::new(vec![(
        "evaluateFunction",
        Ok(
            json!({"tabId": 1, "type": "string", "value": json!({"v": ["a.html", "b.html"]}).to_string()}),
        ),
    )]);
    let toolbox = scripted(link.clone(), limits());
    let code = "async (page) => page.getByRole('link').filter({ hasText: 'x' }).evaluateAll((as) => as.map((a) => a.href))";
    assert_eq!(
        playwright_returned(&toolbox, code).await,
        json!(["a.html", "b.html"])
    );
    let sent = link.sent();
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0].1["all"], true);
    assert_eq!(sent[0].1["selector"], r#"getByRole("link")"#);
    // The filter is applied in the page, before the script's function.
    let function = sent[0].1["function"].as_str().unwrap();
    assert!(
        function.contains(r#"[{"text":"x","not":false}]"#),
        "{function}"
    );
}

#[tokio::test]
async fn playwright_code_finds_a_frames_elements_inside_the_frame() {
    let link = FakeLink::new(vec![
        ("click", Ok(json!({"tabId": 1, "clicked": true}))),
        ("click", Ok(json!({"tabId": 1, "clicked": true}))),
    ]);
    let toolbox = scripted(link.clone(), limits());
    let result = run_playwright(
        &toolbox,
        "async (page) => {\n  await page.frameLocator('iframe#pay').getByRole('button', { name: 'Pay' }).click();\n  \
         await page.locator('iframe#pay').contentFrame().locator('#card').first().click();\n  \
         page.frameLocator('iframe').locator('text=Pay');\n}",
    )
    .await;
    let text = result_text(&result);
    let sent = link.sent();
    assert_eq!(
        sent[0].1["selector"],
        r#"locator("iframe#pay").getByRole("button", { name: "Pay" })"#
    );
    // CSS in the frame's document: the extension's frame locator, picks after it.
    assert_eq!(
        sent[1].1["selector"],
        r##"frameLocator("iframe#pay").locator("#card").first()"##
    );
    // A selector engine there is refused by name, with what works instead.
    assert!(
        text.contains("frameLocator(…).locator(…) with a selector engine is not available")
            && text.contains("(line 4)"),
        "{text}"
    );
}
