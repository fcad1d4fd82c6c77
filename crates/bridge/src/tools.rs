//! The tools a model sees, and how each becomes an extension command.
//!
//! The tool list is fixed: it does not change when the relay or the browser comes and goes,
//! because hosts cache it and models plan with it. Availability shows up in results instead:
//! every failure is a tool result with `isError: true` and a sentence a model can act on,
//! never a protocol error (hosts show those as an opaque "tool failed").
//!
//! The annotations are hints for hosts deciding whether to ask the person first, so they are
//! honest rather than flattering: anything that can submit a form, run script or close a tab
//! says it may be destructive; anything that touches a web page is open-world.
//!
//! Results: screenshots become MCP image content (hosts show them and models see them). Every
//! other result is the extension's JSON, as text, byte for byte. With `--max-result-bytes`,
//! long text is cut at that size and ends with a note; the tools whose results get long
//! (`browser_snapshot`, `browser_evaluate`, `browser_cdp`, `browser_tabs`,
//! `browser_console_messages`) take an `offset`
//! that returns the rest of the same result from memory, without running the command again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool, ToolAnnotations};
use serde_json::{json, Map, Value};

use crate::link::{BrowserLink, LinkError};
use mcp_relay_wire::code;

/// Tools whose results can be long and that therefore take `offset`.
const PAGED: [&str; 6] = [
    "browser_snapshot",
    "browser_evaluate",
    "browser_cdp",
    "browser_tabs",
    "browser_console_messages",
    "browser_network_requests",
];

/// The part size of `browser_snapshot` when `--max-result-bytes` is 0 (no limit): about
/// 25k tokens (tokens ≈ bytes / 4), what a model can take in one result without crowding out
/// its task. A bigger page comes in parts, read on with `offset`.
const SNAPSHOT_PART_BYTES: usize = 100_000;

/// What a tool call turns into.
#[derive(Debug, Clone, PartialEq)]
enum Plan {
    /// `list_extensions` on the relay.
    List,
    /// `disconnect` + `connect` on the relay.
    Connect(String),
    /// The bridge's own state; nothing is sent.
    Status,
    /// An extension command.
    Forward {
        method: &'static str,
        params: Value,
        image: bool,
    },
    /// The rest of this tool's last cut result.
    Continue(usize),
    /// `fileUpload` with the bytes of `paths`, read where the bridge runs (files.rs).
    Upload { paths: Vec<String>, params: Value },
    /// `printPdf`, its PDF written where the bridge runs (files.rs).
    SavePdf {
        params: Value,
        filename: Option<String>,
    },
}

/// The tool definitions and their execution.
pub(crate) struct Toolbox {
    /// Where every call ends up (the relay's socket, for the bridge).
    link: Arc<dyn BrowserLink>,
    /// Built once: the list must be identical for every `tools/list` (see the module docs).
    tools: Vec<Tool>,
    /// `--max-result-bytes`; 0 for no limit.
    max_result_bytes: usize,
    /// The full text of each tool's last cut result, for `offset`.
    cut_results: Mutex<HashMap<String, Arc<str>>>,
    /// `--max-message-bytes`: the budget of one upload's bytes; 0 for no limit.
    max_message_bytes: usize,
}

impl Toolbox {
    pub(crate) fn new(link: Arc<dyn BrowserLink>, max_result_bytes: usize) -> Toolbox {
        Toolbox {
            link,
            tools: definitions(),
            max_result_bytes,
            cut_results: Mutex::new(HashMap::new()),
            max_message_bytes: 0,
        }
    }

    pub(crate) fn with_max_message_bytes(mut self, max_message_bytes: usize) -> Toolbox {
        self.max_message_bytes = max_message_bytes;
        self
    }

    pub(crate) fn definitions(&self) -> &[Tool] {
        &self.tools
    }

    /// The way to the browser, for the resources that read it directly.
    pub(crate) fn link(&self) -> &dyn BrowserLink {
        &*self.link
    }

    pub(crate) fn knows(&self, name: &str) -> bool {
        self.tools.iter().any(|tool| tool.name == name)
    }

    /// Runs a tool. Never fails: problems are results with `isError: true`.
    pub(crate) async fn call(&self, name: &str, args: &JsonObject) -> CallToolResult {
        let plan = match plan(name, args) {
            Ok(plan) => plan,
            Err(message) => return error(format!("{name}: {message}")),
        };
        let outcome = match plan {
            Plan::Status => Ok(self.json_result(name, &json!(self.link.status()))),
            Plan::List => self.list().await,
            Plan::Connect(wanted) => self.link.choose(&wanted).await.map(|chosen| {
                self.json_result(
                    name,
                    &json!({"connected": true, "extension_id": chosen.extension_id, "name": chosen.name}),
                )
            }),
            Plan::Forward {
                method,
                params,
                image,
            } => self.link.call(method, params).await.map(|result| {
                if image {
                    screenshot_result(&result)
                } else {
                    self.json_result(name, &result)
                }
            }),
            Plan::Continue(offset) => Ok(self.continue_result(name, offset)),
            Plan::Upload { paths, mut params } => {
                match crate::files::read_upload(&paths, self.max_message_bytes) {
                    Err(message) => return error(format!("{name}: {message}")),
                    Ok(files) => params["files"] = Value::Array(files),
                }
                let sent = self.link.call("fileUpload", params).await;
                sent.map(|result| self.json_result(name, &result))
            }
            Plan::SavePdf { params, filename } => {
                match self.link.call("printPdf", params).await {
                    Err(e) => Err(e),
                    Ok(result) => Ok(pdf_result(&result, filename.as_deref())),
                }
            }
        };
        outcome.unwrap_or_else(|e| error(format!("{name} failed: {}", advice(&e))))
    }

    async fn list(&self) -> Result<CallToolResult, LinkError> {
        let list = self.link.list_browsers().await?;
        let status = self.link.status();
        let current = status
            .browser
            .filter(|_| status.browser_connected)
            .map(|b| b.extension_id);
        let browsers: Vec<Value> = list
            .iter()
            .map(|row| {
                json!({
                    "id": row.id,
                    "name": row.name,
                    "version": row.version,
                    "current": current.as_deref() == Some(row.id.as_str()),
                })
            })
            .collect();
        Ok(self.json_result("browser_list", &json!({ "browsers": browsers })))
    }

    fn json_result(&self, tool: &str, value: &Value) -> CallToolResult {
        self.text_result(tool, value.to_string())
    }

    /// The size at which `tool`'s text is cut: `--max-result-bytes`, and for snapshots
    /// [`SNAPSHOT_PART_BYTES`] when that is 0.
    fn limit_for(&self, tool: &str) -> usize {
        if self.max_result_bytes == 0 && tool == "browser_snapshot" {
            SNAPSHOT_PART_BYTES
        } else {
            self.max_result_bytes
        }
    }

    /// Text, cut at `--max-result-bytes` with a note saying how to read on.
    fn text_result(&self, tool: &str, text: String) -> CallToolResult {
        let max = self.limit_for(tool);
        if max == 0 || text.len() <= max {
            return CallToolResult::success(vec![ContentBlock::text(text)]);
        }
        let cut = floor_char_boundary(&text, max);
        let total = text.len();
        let mut shown = text[..cut].to_owned();
        if PAGED.contains(&tool) {
            shown.push_str(&more_note(tool, 0, cut, total));
            self.cut_results
                .lock()
                .unwrap()
                .insert(tool.to_owned(), Arc::from(text));
        } else {
            shown.push_str(&format!(
                "\n\n[Result cut: {cut} of {total} bytes shown. Start the bridge with a larger \
                 --max-result-bytes (0 = no limit) to see all of it.]"
            ));
        }
        CallToolResult::success(vec![ContentBlock::text(shown)])
    }

    fn continue_result(&self, tool: &str, offset: usize) -> CallToolResult {
        let Some(text) = self.cut_results.lock().unwrap().get(tool).cloned() else {
            return error(format!(
                "{tool}: offset continues a cut result of {tool}, and there is none to continue; \
                 call {tool} without offset"
            ));
        };
        let total = text.len();
        if offset >= total {
            return error(format!(
                "{tool}: offset {offset} is past the end of the last result ({total} bytes)"
            ));
        }
        let start = floor_char_boundary(&text, offset);
        let mut end = floor_char_boundary(&text, start.saturating_add(self.limit_for(tool)));
        if end <= start {
            // A limit smaller than one character: still make progress.
            end = text[start..]
                .char_indices()
                .nth(1)
                .map_or(total, |(i, _)| start + i);
        }
        let mut shown = text[start..end].to_owned();
        if end < total {
            shown.push_str(&more_note(tool, start, end, total));
        } else {
            shown.push_str(&format!(
                "\n\n[End of the result: bytes {start}–{total} of {total}.]"
            ));
        }
        CallToolResult::success(vec![ContentBlock::text(shown)])
    }
}

fn more_note(tool: &str, start: usize, end: usize, total: usize) -> String {
    let shorter = if tool == "browser_snapshot" {
        " Or call browser_snapshot with \"interactive\": true or a \"depth\" to see less at once."
    } else {
        ""
    };
    format!(
        "\n\n[Result cut: bytes {start}–{end} of {total} shown. To read on, call {tool} with \
         {{\"offset\": {end}}}: it returns the rest of this same result without running the \
         command again. Or start the bridge with a larger --max-result-bytes (0 = no limit).{shorter}]"
    )
}

/// The largest char boundary at or below `at`.
fn floor_char_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

fn error(message: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}

/// The extension's `{tabId, data, mimeType}` as an MCP image, never cut.
fn screenshot_result(result: &Value) -> CallToolResult {
    let Some(data) = result["data"].as_str() else {
        return error(
            "browser_screenshot failed: the extension's answer held no image data; update the \
             mcp-relay extension"
                .into(),
        );
    };
    let mime = result["mimeType"].as_str().unwrap_or("image/png");
    CallToolResult::success(vec![
        ContentBlock::image(data, mime),
        ContentBlock::text(screenshot_caption(result, mime, data.len())),
    ])
}

/// "Screenshot of tab 7: PNG, 1280×800 px (…)": what a model needs to relate the image to
/// the page (clicks take viewport coordinates, which differ from the pixels when scaled).
fn screenshot_caption(result: &Value, mime: &str, base64_len: usize) -> String {
    let tab = match &result["tabId"] {
        Value::Null => String::new(),
        tab => format!(" of tab {tab}"),
    };
    let format = result["format"]
        .as_str()
        .unwrap_or_else(|| mime.trim_start_matches("image/"))
        .to_uppercase();
    let size = match (result["width"].as_u64(), result["height"].as_u64()) {
        (Some(width), Some(height)) => format!(", {width}×{height} px"),
        _ => String::new(),
    };
    format!("Screenshot{tab}: {format}{size} ({mime}, {base64_len} bytes base64).")
}

/// The extension's base64 PDF, saved where the bridge runs; the result names the file.
fn pdf_result(result: &Value, filename: Option<&str>) -> CallToolResult {
    let Some(data) = result["data"].as_str() else {
        return error("browser_pdf_save failed: the extension's answer held no PDF".into());
    };
    match crate::files::save_pdf(data, filename) {
        Err(message) => error(format!("browser_pdf_save: {message}")),
        Ok((path, bytes)) => CallToolResult::success(vec![ContentBlock::text(
            json!({
                "tabId": result["tabId"],
                "url": result["url"],
                "saved": path.display().to_string(),
                "bytes": bytes,
                "note": "saved on the machine where the bridge runs"
            })
            .to_string(),
        )]),
    }
}

/// What a model should read when a call fails.
pub(crate) fn advice(error: &LinkError) -> String {
    match error {
        LinkError::Unreachable(m) | LinkError::NoBrowser(m) => m.clone(),
        LinkError::ConnectionLost => error.to_string(),
        LinkError::Denied(message) => format!(
            "the browser's owner has denied this assistant ({message}); do not retry: tell the \
             person, who can undo it on the mcp-relay extension's options page"
        ),
        LinkError::Timeout(d) => format!(
            "no answer within {d:?} (the bridge's --request-timeout): the page may be busy or \
             the browser asleep; call browser_status, then retry"
        ),
        LinkError::Rpc { code, message } => {
            match *code {
                code::RATE_LIMITED => {
                    format!("the relay's rate limit was hit ({message}): wait a few seconds, then retry")
                }
                code::REQUEST_TIMEOUT => format!(
                "the browser did not answer in time ({message}): the page may still be loading \
                 or busy; retry, or take a browser_snapshot to see where it is"
            ),
                code::EXTENSION_GONE => format!(
                "the browser went away before answering ({message}); the bridge reconnects to it \
                 when it is back: call the tool again in a moment"
            ),
                code::SHUTTING_DOWN => format!(
                "the relay is restarting ({message}); the bridge reconnects by itself: call the \
                 tool again in a few seconds"
            ),
                code::INVALID_PARAMS => format!("the browser rejected the arguments: {message}"),
                code::OWNER_APPROVAL_REQUIRED => format!(
                    "the browser's owner has not allowed this assistant yet ({message}); the \
                     bridge waited --approval-wait for them. Tell the person to click Allow in the mcp-relay \
                     extension (its toolbar icon or the notification), then call the tool again"
                ),
                code::BROWSER_NOT_APPROVED => format!(
                    "this browser is waiting for approval on the relay ({message}). Tell the \
                     person to approve it (`mcp-relay admin approve ID` with their token, or \
                     their relay's operator), then call the tool again"
                ),
                code::METHOD_NOT_FOUND => format!(
                    "the browser extension does not know this command ({message}): update the \
                 mcp-relay extension"
                ),
                code::LIMIT_REACHED => format!("the relay refused: {message}"),
                _ if message.starts_with("Not connected") => {
                    "no browser connected: open the browser with the mcp-relay extension and check \
                 its token, then call the tool again"
                        .into()
                }
                _ => format!("the browser could not do it: {message}"),
            }
        }
    }
}

/// Copies the present, non-null `keys` of `args`.
fn pick(args: &JsonObject, keys: &[&str]) -> Value {
    let picked: Map<String, Value> = keys
        .iter()
        .filter_map(|key| {
            args.get(*key)
                .filter(|v| !v.is_null())
                .map(|v| ((*key).to_owned(), v.clone()))
        })
        .collect();
    Value::Object(picked)
}

fn has(args: &JsonObject, key: &str) -> bool {
    args.get(key).is_some_and(|v| !v.is_null())
}

fn string<'a>(args: &'a JsonObject, key: &str) -> Option<&'a str> {
    args.get(key).and_then(Value::as_str)
}

fn require_string<'a>(args: &'a JsonObject, key: &str) -> Result<&'a str, String> {
    string(args, key)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| format!("\"{key}\" (a non-empty string) is required"))
}

/// The element a tool acts on, as Playwright MCP's callers name it: `ref` (from
/// `browser_snapshot`, e.g. `e5`, or `f1e3` inside a frame), or a CSS `selector`, which
/// today's callers send. `element` (a description, for the person's permission prompt) is
/// not sent on. A ref wins when both come, as the extension decides too; the extension
/// resolves either in the page, and refuses a ref whose element is gone.
fn element_target(args: &JsonObject) -> Result<(&'static str, Value), String> {
    if let Some(reference) = string(args, "ref").filter(|s| !s.trim().is_empty()) {
        return Ok(("ref", json!(reference.trim())));
    }
    if has(args, "ref") {
        return Err("\"ref\" must be a string such as \"e5\", from browser_snapshot".into());
    }
    if let Some(selector) = string(args, "selector").filter(|s| !s.trim().is_empty()) {
        return Ok(("selector", json!(selector)));
    }
    Err(
        "give \"ref\" (the element's ref from browser_snapshot, e.g. \"e5\") or \"selector\" \
         (a CSS selector)"
            .into(),
    )
}

/// `outline: true` asks an action for the page's outline afterwards (the extension's
/// `snapshot` flag). Not called `snapshot` here because parameter names weigh in
/// `retrieve_tools`' ranking, and "snapshot" pulled every action into queries about reading
/// or seeing the page (docs/BENCHMARKS.md, "Tool retrieval quality").
fn outline_after(args: &JsonObject, mut params: Value) -> Value {
    if args.get("outline") == Some(&Value::Bool(true)) {
        params["snapshot"] = json!(true);
    }
    params
}

/// `params` with `ref` or `selector` set from [`element_target`].
fn with_target(args: &JsonObject, keys: &[&str]) -> Result<Value, String> {
    let mut params = pick(args, keys);
    let (key, target) = element_target(args)?;
    params[key] = target;
    Ok(params)
}

/// `browser_wait_for`'s limits, in seconds: under the relay's and the bridge's 60 s
/// request timeouts, so the wait's own error (which names its timeout) is what comes back.
const WAIT_DEFAULT_SECS: f64 = 10.0;
const WAIT_MAX_SECS: f64 = 30.0;

fn seconds(args: &JsonObject, key: &str) -> Result<Option<f64>, String> {
    match args.get(key).filter(|v| !v.is_null()) {
        None => Ok(None),
        Some(v) => match v.as_f64() {
            Some(secs) if (0.0..=WAIT_MAX_SECS).contains(&secs) => Ok(Some(secs)),
            _ => Err(format!(
                "\"{key}\" must be a number of seconds from 0 to {WAIT_MAX_SECS}"
            )),
        },
    }
}

/// An optional argument that, when present, must pass `is` (`what` says what it must be).
fn optional(
    args: &JsonObject,
    key: &str,
    is: fn(&Value) -> bool,
    what: &str,
) -> Result<(), String> {
    match args.get(key) {
        Some(value) if !value.is_null() && !is(value) => Err(format!("\"{key}\" must be {what}")),
        _ => Ok(()),
    }
}

fn forward(method: &'static str, params: Value) -> Result<Plan, String> {
    Ok(Plan::Forward {
        method,
        params,
        image: false,
    })
}

/// Maps a call onto what to do, checking the arguments a model most often gets wrong.
fn plan(name: &str, args: &JsonObject) -> Result<Plan, String> {
    if PAGED.contains(&name) {
        if let Some(offset) = args.get("offset").filter(|v| !v.is_null()) {
            return offset
                .as_u64()
                .map(|o| Plan::Continue(o as usize))
                .ok_or_else(|| "\"offset\" must be a non-negative integer".into());
        }
    }
    match name {
        "browser_list" => Ok(Plan::List),
        "browser_status" => Ok(Plan::Status),
        "browser_connect" => Ok(Plan::Connect(require_string(args, "browser")?.to_owned())),
        "browser_tabs" => match string(args, "action") {
            Some("list") => forward("getTabs", json!({})),
            Some("new") => forward("createTab", pick(args, &["url", "active"])),
            Some("select") => {
                if !has(args, "tabId") {
                    return Err("action \"select\" needs \"tabId\" (see action \"list\")".into());
                }
                forward("selectTab", pick(args, &["tabId"]))
            }
            Some("close") => forward("closeTab", pick(args, &["tabId"])),
            _ => Err("\"action\" is required: one of list, new, select, close".into()),
        },
        "browser_navigate" => match (string(args, "url"), string(args, "direction")) {
            (Some(_), None) => forward(
                "browser_navigate",
                outline_after(args, pick(args, &["url", "tabId"])),
            ),
            (None, Some("back")) => forward("goBack", pick(args, &["tabId"])),
            (None, Some("forward")) => forward("goForward", pick(args, &["tabId"])),
            _ => Err("give either \"url\" or \"direction\" (\"back\" or \"forward\")".into()),
        },
        "browser_click" => {
            let keys = ["x", "y", "button", "clickCount", "tabId"];
            if has(args, "x") && has(args, "y") && !has(args, "ref") && !has(args, "selector") {
                return forward("click", outline_after(args, pick(args, &keys)));
            }
            let mut params = with_target(args, &keys)
                .map_err(|e| format!("{e}; or give both \"x\" and \"y\" to click a point"))?;
            // Playwright MCP's name for a double click.
            if args.get("doubleClick") == Some(&Value::Bool(true)) && !has(args, "clickCount") {
                params["clickCount"] = json!(2);
            }
            forward("click", outline_after(args, params))
        }
        "browser_type" => {
            let params = outline_after(args, with_target(args, &["text", "submit", "tabId"])?);
            if string(args, "text").is_none() {
                return Err("\"text\" (a string) is required".into());
            }
            forward("type", params)
        }
        "browser_hover" => forward("hover", outline_after(args, with_target(args, &["tabId"])?)),
        "browser_navigate_back" => forward("goBack", pick(args, &["tabId"])),
        "browser_navigate_forward" => forward("goForward", pick(args, &["tabId"])),
        "browser_select_option" => {
            let values = match args.get("values") {
                Some(Value::Array(values))
                    if !values.is_empty() && values.iter().all(Value::is_string) =>
                {
                    values.clone()
                }
                Some(Value::String(one)) => vec![json!(one)],
                _ => {
                    return Err("\"values\" (an array of option values or labels, e.g. \
                                [\"blue\"]) is required"
                        .into())
                }
            };
            let mut params = outline_after(args, with_target(args, &["tabId"])?);
            params["values"] = Value::Array(values);
            forward("selectOption", params)
        }
        "browser_press_key" => {
            require_string(args, "key")?;
            forward(
                "pressKey",
                outline_after(args, pick(args, &["key", "tabId"])),
            )
        }
        "browser_wait_for" => {
            let waits_for_text = has(args, "text") || has(args, "textGone");
            for key in ["text", "textGone"] {
                if has(args, key) {
                    require_string(args, key)?;
                }
            }
            let time = seconds(args, "time")?;
            let timeout = seconds(args, "timeout")?;
            if time.is_some() && waits_for_text {
                return Err("give either \"time\", or \"text\"/\"textGone\", not both".into());
            }
            if time.is_none() && !waits_for_text {
                return Err(
                    "give \"text\" to wait for, \"textGone\", or \"time\" (seconds)".into(),
                );
            }
            let mut params = pick(args, &["text", "textGone", "time", "tabId"]);
            if waits_for_text {
                params["timeout"] = json!(timeout.unwrap_or(WAIT_DEFAULT_SECS));
            }
            forward("waitFor", params)
        }
        "browser_handle_dialog" => {
            if !args.get("accept").is_some_and(Value::is_boolean) {
                return Err("\"accept\" (true or false) is required".into());
            }
            optional(args, "promptText", Value::is_string, "a string")?;
            forward(
                "handleDialog",
                pick(args, &["accept", "promptText", "tabId"]),
            )
        }
        "browser_console_messages" => {
            optional(args, "onlyErrors", Value::is_boolean, "true or false")?;
            forward("consoleMessages", pick(args, &["onlyErrors", "tabId"]))
        }
        "browser_screenshot" => Ok(Plan::Forward {
            method: "screenshot",
            params: pick(
                args,
                &["format", "quality", "fullPage", "maxDimension", "tabId"],
            ),
            image: true,
        }),
        "browser_evaluate" => {
            if has(args, "function") {
                require_string(args, "function")?;
                return forward(
                    "evaluateFunction",
                    pick(args, &["function", "ref", "selector", "tabId"]),
                );
            }
            require_string(args, "expression").map_err(|_| {
                "give \"function\" (e.g. \"() => document.title\") or \"expression\""
            })?;
            forward("evaluate", pick(args, &["expression", "tabId"]))
        }
        "browser_snapshot" => {
            optional(
                args,
                "depth",
                |v| v.as_u64().is_some_and(|d| d >= 1),
                "an integer of at least 1",
            )?;
            optional(args, "interactive", Value::is_boolean, "true or false")?;
            let mut params = pick(args, &["depth", "interactive", "tabId"]);
            params["format"] = json!("outline");
            forward("snapshot", params)
        }
        "browser_cdp" => {
            require_string(args, "method")?;
            if args
                .get("params")
                .is_some_and(|p| !p.is_object() && !p.is_null())
            {
                return Err("\"params\" must be an object".into());
            }
            forward(
                "forwardCDPCommand",
                pick(args, &["method", "params", "sessionId"]),
            )
        }
        _ => plan_more(name, args),
    }
}

/// The rest of Playwright MCP's tools (issue 14): element arguments (`ref` or `selector`)
/// go to the extension as they are, which resolves them (extension/lib/targets.js).
fn plan_more(name: &str, args: &JsonObject) -> Result<Plan, String> {
    match name {
        "browser_drag" => {
            for end in ["start", "end"] {
                if !has(args, &format!("{end}Ref")) && !has(args, &format!("{end}Selector")) {
                    return Err(format!(
                        "give \"{end}Ref\" (from browser_snapshot) or \"{end}Selector\" (CSS)"
                    ));
                }
            }
            forward(
                "drag",
                pick(
                    args,
                    &[
                        "startRef",
                        "startSelector",
                        "endRef",
                        "endSelector",
                        "tabId",
                    ],
                ),
            )
        }
        "browser_fill_form" => match args.get("fields") {
            Some(Value::Array(fields)) if !fields.is_empty() => {
                forward("fillForm", pick(args, &["fields", "tabId"]))
            }
            _ => Err(
                "\"fields\" (a non-empty array of {name, type, ref or selector, value}) \
                      is required"
                    .into(),
            ),
        },
        "browser_file_upload" => {
            let paths: Vec<String> = match args.get("paths") {
                Some(Value::Array(paths)) if !paths.is_empty() => paths
                    .iter()
                    .map(|p| p.as_str().map(str::to_owned))
                    .collect::<Option<_>>()
                    .ok_or("\"paths\" must be an array of file paths (strings)")?,
                _ => {
                    return Err("\"paths\" (the files to upload, as paths on the machine \
                                where the bridge runs) is required"
                        .into())
                }
            };
            Ok(Plan::Upload {
                paths,
                params: pick(args, &["ref", "selector", "tabId"]),
            })
        }
        "browser_network_requests" => {
            forward("networkRequests", pick(args, &["requestId", "tabId"]))
        }
        "browser_take_screenshot" => {
            optional(
                args,
                "type",
                |v| matches!(v.as_str(), Some("png" | "jpeg")),
                "\"png\" or \"jpeg\"",
            )?;
            let mut params = pick(args, &["ref", "selector", "tabId"]);
            if let Some(format) = string(args, "type") {
                params["format"] = json!(format);
            }
            let by_element = has(args, "ref") || has(args, "selector");
            if !by_element && args.get("fullPage").is_some_and(|v| v == true) {
                params["fullPage"] = json!(true);
            }
            Ok(Plan::Forward {
                method: if by_element {
                    "elementScreenshot"
                } else {
                    "screenshot"
                },
                params,
                image: true,
            })
        }
        "browser_resize" => {
            for key in ["width", "height"] {
                if args.get(key).and_then(Value::as_u64).unwrap_or(0) == 0 {
                    return Err(format!(
                        "\"{key}\" (a positive integer, CSS pixels) is required"
                    ));
                }
            }
            forward("resize", pick(args, &["width", "height", "tabId"]))
        }
        "browser_pdf_save" => {
            optional(args, "filename", Value::is_string, "a path (string)")?;
            Ok(Plan::SavePdf {
                params: pick(args, &["tabId"]),
                filename: string(args, "filename").map(str::to_owned),
            })
        }
        "browser_close" => forward("closeAgentTabs", json!({})),
        other => Err(format!("unknown tool {other}")),
    }
}

/// The honest hints of one tool.
struct Hints {
    read_only: bool,
    destructive: bool,
    idempotent: bool,
    open_world: bool,
}

const LOCAL_READ: Hints = Hints {
    read_only: true,
    destructive: false,
    idempotent: true,
    open_world: false,
};
const PAGE_READ: Hints = Hints {
    read_only: true,
    destructive: false,
    idempotent: true,
    open_world: true,
};
const PAGE_ACTION: Hints = Hints {
    read_only: false,
    destructive: true,
    idempotent: false,
    open_world: true,
};

fn tool(
    name: &'static str,
    title: &str,
    description: &'static str,
    schema: Value,
    hints: Hints,
) -> Tool {
    let Value::Object(mut schema) = schema else {
        unreachable!("tool schemas are objects");
    };
    schema.insert("type".into(), json!("object"));
    if PAGED.contains(&name) {
        let properties = schema
            .entry("properties")
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .expect("properties is an object");
        properties.insert(
            "offset".into(),
            json!({
                "type": "integer",
                "minimum": 0,
                "description": "Only to read on after a result was cut: the offset named in the \
                                note. Returns the rest of that same result; other arguments are \
                                ignored."
            }),
        );
    }
    Tool::new(name, description, schema)
        .with_title(title)
        .with_annotations(
            ToolAnnotations::with_title(title)
                .read_only(hints.read_only)
                .destructive(hints.destructive)
                .idempotent(hints.idempotent)
                .open_world(hints.open_world),
        )
}

fn element() -> Value {
    json!({
        "type": "string",
        "description": "Optional: what the element is, in words (e.g. \"Country drop-down\"), for the person's record."
    })
}

fn element_ref() -> Value {
    json!({"type": "string", "description": "Element ref from browser_snapshot, e.g. e5 or f1e3."})
}

fn css_selector(what: &str) -> Value {
    json!({"type": "string", "description": format!("Or a CSS selector of {what}.")})
}

/// The optional outline an action returns, so a model rarely needs a separate snapshot call.
fn outline_flag() -> Value {
    json!({"type": "boolean", "description": "Also return the page's outline (browser_snapshot) after the action, cut at 20,000 characters."})
}

fn tab_id() -> Value {
    json!({
        "type": "integer",
        "description": "Tab to act on (from browser_tabs list). Default: this session's current tab."
    })
}

/// Every tool, in the order hosts show them.
pub fn definitions() -> Vec<Tool> {
    vec![
        tool(
            "browser_list",
            "List browsers",
            "List the browsers (mcp-relay extensions) connected to the relay for this user, and \
             which one this session uses.",
            json!({"properties": {}}),
            LOCAL_READ,
        ),
        tool(
            "browser_connect",
            "Use a browser",
            "Choose the browser to drive, by name or id from browser_list. Needed only when \
             several browsers are connected.",
            json!({
                "properties": {"browser": {"type": "string", "description": "Browser name or extension id (ext-…)."}},
                "required": ["browser"]
            }),
            Hints {
                read_only: false,
                destructive: false,
                idempotent: true,
                open_world: false,
            },
        ),
        tool(
            "browser_status",
            "Connection status",
            "Show whether the bridge is connected to the relay and to a browser, and if not, why.",
            json!({"properties": {}}),
            LOCAL_READ,
        ),
        tool(
            "browser_tabs",
            "Manage tabs",
            "List, open, select or close tabs. \"new\" opens a tab (optionally at url) in a \
             window of its own, without taking the person's focus, and makes it this session's \
             current tab; \"select\" makes an existing tab \
             current; \"close\" closes a tab (default: the current one).",
            json!({
                "properties": {
                    "action": {"type": "string", "enum": ["list", "new", "select", "close"]},
                    "tabId": {"type": "integer", "description": "For select (required) and close."},
                    "url": {"type": "string", "description": "For new: the page to open."},
                    "active": {"type": "boolean", "description": "For new: bring its window to the front and focus it (default false)."}
                },
                "required": ["action"]
            }),
            PAGE_ACTION,
        ),
        tool(
            "browser_navigate",
            "Navigate",
            "Load a URL in the current tab (opening one in a window of its own if there is \
             none), or go back or forward in its history. Waits for the page to load.",
            json!({
                "properties": {
                    "url": {"type": "string", "description": "The URL to load."},
                    "direction": {"type": "string", "enum": ["back", "forward"], "description": "Instead of url: go back or forward in history."},
                    "outline": outline_flag(),
                    "tabId": tab_id()
                }
            }),
            PAGE_ACTION,
        ),
        tool(
            "browser_click",
            "Click",
            "Click an element (by ref from browser_snapshot, or CSS selector) or a point in the \
             viewport.",
            json!({
                "properties": {
                    "element": element(),
                    "ref": element_ref(),
                    "selector": css_selector("the element"),
                    "x": {"type": "number", "description": "Viewport x, with y, instead of ref or selector."},
                    "y": {"type": "number"},
                    "button": {"type": "string", "enum": ["left", "right", "middle"]},
                    "doubleClick": {"type": "boolean", "description": "A double click (same as clickCount 2)."},
                    "clickCount": {"type": "integer", "minimum": 1, "description": "2 for a double click."},
                    "outline": outline_flag(),
                    "tabId": tab_id()
                }
            }),
            PAGE_ACTION,
        ),
        tool(
            "browser_type",
            "Type text",
            "Replace the content of an input field with text; optionally submit (press Enter).",
            json!({
                "properties": {
                    "element": element(),
                    "ref": element_ref(),
                    "selector": css_selector("the field"),
                    "text": {"type": "string"},
                    "submit": {"type": "boolean", "description": "Press Enter afterwards (default false)."},
                    "outline": outline_flag(),
                    "tabId": tab_id()
                },
                "required": ["text"]
            }),
            PAGE_ACTION,
        ),
        tool(
            "browser_hover",
            "Hover",
            "Move the mouse over an element, e.g. to open a menu or show a tooltip.",
            json!({
                "properties": {
                    "element": element(),
                    "ref": element_ref(),
                    "selector": css_selector("the element"),
                    "outline": outline_flag(),
                    "tabId": tab_id()
                }
            }),
            Hints {
                read_only: false,
                destructive: false,
                idempotent: true,
                open_world: true,
            },
        ),
        tool(
            "browser_screenshot",
            "Screenshot",
            "Take a screenshot of the current tab's viewport, returned as an image scaled so its \
             longest side is at most 1568 px (maxDimension changes that). Answers within about \
             5 s; if the page cannot be painted, the error says what to do.",
            json!({
                "properties": {
                    "format": {"type": "string", "enum": ["png", "jpeg", "webp"], "description": "Default png; jpeg (with quality) is smaller."},
                    "quality": {"type": "integer", "minimum": 0, "maximum": 100, "description": "For jpeg and webp."},
                    "fullPage": {"type": "boolean", "description": "The whole page, not only the viewport (scaled to maxDimension as well)."},
                    "maxDimension": {"type": "integer", "minimum": 16, "maximum": 16384, "description": "Longest side in pixels (default 1568); smaller pages are not enlarged."},
                    "tabId": tab_id()
                }
            }),
            PAGE_READ,
        ),
        tool(
            "browser_evaluate",
            "Run JavaScript",
            "Evaluate JavaScript in the page and return its value (promises are awaited): a \
             function, called with the element when ref or selector names one, or an \
             expression such as document.title. It can change the page.",
            json!({
                "properties": {
                    "function": {"type": "string", "description": "A function's source: () => document.title, or (element) => element.textContent with ref/selector."},
                    "element": element(),
                    "ref": {"type": "string", "description": "The element passed to the function (from browser_snapshot)."},
                    "selector": {"type": "string", "description": "Instead of ref: the element's CSS selector."},
                    "expression": {"type": "string", "description": "Instead of function: an expression, e.g. document.title"},
                    "tabId": tab_id()
                }
            }),
            PAGE_ACTION,
        ),
        tool(
            "browser_snapshot",
            "Page snapshot",
            "Read the current page: URL, title, visible text, links and interactive elements, \
             as an accessibility outline in which each element you can act on has a ref (e.g. \
             e5) for browser_click, browser_type, browser_hover and browser_select_option; CSS \
             selectors work too. A ref holds while its element lives; when one is refused, take \
             a new snapshot. Long pages come in parts; interactive and depth show less.",
            json!({
                "properties": {
                    "interactive": {"type": "boolean", "description": "Only the elements with refs (and the frames holding them): much shorter."},
                    "depth": {"type": "integer", "minimum": 1, "description": "Only this many levels of the outline (1 = top level); what is left out is counted."},
                    "tabId": tab_id()
                }
            }),
            PAGE_READ,
        ),
        tool(
            "browser_cdp",
            "Chrome DevTools command",
            "Send a raw Chrome DevTools Protocol command to the current tab (e.g. \
             Network.getCookies) and return its result. Powerful: it can do anything DevTools can.",
            json!({
                "properties": {
                    "method": {"type": "string", "description": "CDP method, e.g. Page.reload."},
                    "params": {"type": "object", "description": "CDP parameters."},
                    "sessionId": {"type": "string", "description": "CDP session of a child target, if any."}
                },
                "required": ["method"]
            }),
            PAGE_ACTION,
        ),
        tool(
            "browser_navigate_back",
            "Navigate back",
            "Go back to the previous page in the current tab's history; waits for it to load.",
            json!({"properties": {"tabId": tab_id()}}),
            PAGE_ACTION,
        ),
        tool(
            "browser_navigate_forward",
            "Navigate forward",
            "Go forward to the next page in the current tab's history (after going back); \
             waits for it to load.",
            json!({"properties": {"tabId": tab_id()}}),
            PAGE_ACTION,
        ),
        tool(
            "browser_select_option",
            "Select option",
            "Choose options in a <select> drop-down or list, by value or by visible label; fires \
             the input and change events a person's choice would. Several values only for a \
             multi-select; the options not named are deselected.",
            json!({
                "properties": {
                    "element": element(),
                    "ref": element_ref(),
                    "selector": css_selector("the <select>"),
                    "values": {"type": "array", "items": {"type": "string"}, "minItems": 1, "description": "Values or labels of the options to select."},
                    "outline": outline_flag(),
                    "tabId": tab_id()
                },
                "required": ["values"]
            }),
            PAGE_ACTION,
        ),
        tool(
            "browser_press_key",
            "Press a key",
            "Press a key or key combination in the page, as a keyboard would, on the focused \
             element: Playwright key names such as Enter, Escape, Tab, ArrowDown, Backspace, \
             PageDown, F5, a character like \"a\", or combinations like Control+A or Shift+Tab.",
            json!({
                "properties": {
                    "key": {"type": "string", "description": "e.g. Enter, ArrowDown, Control+A"},
                    "outline": outline_flag(),
                    "tabId": tab_id()
                },
                "required": ["key"]
            }),
            PAGE_ACTION,
        ),
        tool(
            "browser_wait_for",
            "Wait for text",
            "Wait until text appears on the page, or disappears (textGone), or simply for time \
             seconds. Text waits give up after timeout seconds (default 10, at most 30) with an \
             error that says so.",
            json!({
                "properties": {
                    "text": {"type": "string", "description": "Text to wait for (in the page's visible text)."},
                    "textGone": {"type": "string", "description": "Text to wait to disappear."},
                    "time": {"type": "number", "minimum": 0, "maximum": 30, "description": "Instead of text: seconds to wait."},
                    "timeout": {"type": "number", "minimum": 0.1, "maximum": 30, "description": "Seconds to wait for text before giving up (default 10)."},
                    "tabId": tab_id()
                }
            }),
            PAGE_READ,
        ),
        tool(
            "browser_handle_dialog",
            "Answer a dialog",
            "Answer the JavaScript dialog (alert, confirm, prompt) the page shows: accept (OK) or \
             dismiss (Cancel), with promptText for a prompt. An open dialog is reported in the \
             result of the tool that opened it, and blocks the page until it is answered.",
            json!({
                "properties": {
                    "accept": {"type": "boolean", "description": "true for OK, false for Cancel."},
                    "promptText": {"type": "string", "description": "For a prompt: the text to answer with."},
                    "tabId": tab_id()
                },
                "required": ["accept"]
            }),
            PAGE_ACTION,
        ),
        tool(
            "browser_console_messages",
            "Console messages",
            "List the console messages (console.log, console.error, …) and uncaught errors of \
             the current tab since the bridge began controlling it, oldest first; the last 500 \
             are kept, each clipped to 2000 characters.",
            json!({
                "properties": {
                    "onlyErrors": {"type": "boolean", "description": "Only errors: console.error, failed console.assert and uncaught exceptions."},
                    "tabId": tab_id()
                }
            }),
            PAGE_READ,
        ),
        tool(
            "browser_drag",
            "Drag and drop",
            "Drag one element onto another with the mouse (press, move, release); HTML5 \
             drag-and-drop lists receive a real drop.",
            json!({
                "properties": {
                    "startElement": element(),
                    "startRef": {"type": "string", "description": "The element to drag (from browser_snapshot)."},
                    "startSelector": {"type": "string", "description": "Instead of startRef: its CSS selector."},
                    "endElement": element(),
                    "endRef": {"type": "string", "description": "The element to drop on."},
                    "endSelector": {"type": "string", "description": "Instead of endRef: its CSS selector."},
                    "tabId": tab_id()
                }
            }),
            PAGE_ACTION,
        ),
        tool(
            "browser_fill_form",
            "Fill a form",
            "Fill several form fields in one call: text boxes, checkboxes, radio buttons, \
             drop-downs (combobox: the option's label or value) and sliders; each fires the \
             input and change events a person's input would, and the result reads the values \
             back.",
            json!({
                "properties": {
                    "fields": {
                        "type": "array",
                        "minItems": 1,
                        "items": {
                            "type": "object",
                            "properties": {
                                "name": {"type": "string", "description": "The field's name, for the person's record."},
                                "type": {"type": "string", "enum": ["textbox", "checkbox", "radio", "combobox", "slider"]},
                                "ref": {"type": "string", "description": "The field (from browser_snapshot)."},
                                "selector": {"type": "string", "description": "Instead of ref: its CSS selector."},
                                "value": {"type": "string", "description": "Text; \"true\"/\"false\" for a checkbox or radio; the option for a combobox; a number for a slider."}
                            },
                            "required": ["name", "type", "value"]
                        }
                    },
                    "tabId": tab_id()
                },
                "required": ["fields"]
            }),
            PAGE_ACTION,
        ),
        tool(
            "browser_file_upload",
            "Upload files",
            "Upload files to the page's file input: the files are read on the machine where \
             this bridge runs (the browser may be elsewhere) and their bytes handed to the \
             input named by ref or selector, or to the page's only file input. Limited to the \
             bridge's --max-message-bytes in all.",
            json!({
                "properties": {
                    "paths": {"type": "array", "items": {"type": "string"}, "minItems": 1, "description": "Absolute paths of the files, where the bridge runs."},
                    "element": element(),
                    "ref": {"type": "string", "description": "The file input (from browser_snapshot)."},
                    "selector": {"type": "string", "description": "Instead of ref: its CSS selector."},
                    "tabId": tab_id()
                },
                "required": ["paths"]
            }),
            PAGE_ACTION,
        ),
        tool(
            "browser_network_requests",
            "Network requests",
            "List the network requests of the current tab since the bridge began controlling it \
             (method, URL, status, resource type, start time, duration), oldest first; the last \
             500 are kept. With requestId: that request's response body (first 100,000 \
             characters).",
            json!({
                "properties": {
                    "requestId": {"type": "string", "description": "A request from the list, to read its response body."},
                    "tabId": tab_id()
                }
            }),
            PAGE_READ,
        ),
        tool(
            "browser_take_screenshot",
            "Take a screenshot",
            "Take a screenshot of the current tab's viewport, of the whole page (fullPage), or of \
             one element (ref or selector), returned as an image.",
            json!({
                "properties": {
                    "type": {"type": "string", "enum": ["png", "jpeg"], "description": "Image format, default png."},
                    "element": element(),
                    "ref": {"type": "string", "description": "Only this element (from browser_snapshot)."},
                    "selector": {"type": "string", "description": "Instead of ref: its CSS selector."},
                    "fullPage": {"type": "boolean", "description": "The whole scrollable page (not with an element)."},
                    "tabId": tab_id()
                }
            }),
            PAGE_READ,
        ),
        tool(
            "browser_resize",
            "Resize the viewport",
            "Set the current tab's viewport to width × height CSS pixels (innerWidth and \
             innerHeight), by emulation: the person's windows are not touched.",
            json!({
                "properties": {
                    "width": {"type": "integer", "minimum": 1, "maximum": 10000},
                    "height": {"type": "integer", "minimum": 1, "maximum": 10000},
                    "tabId": tab_id()
                },
                "required": ["width", "height"]
            }),
            Hints {
                read_only: false,
                destructive: false,
                idempotent: true,
                open_world: true,
            },
        ),
        tool(
            "browser_pdf_save",
            "Save as PDF",
            "Print the current page to a PDF file, saved on the machine where this bridge runs \
             (at filename, or a new file in its temporary directory); the result names it.",
            json!({
                "properties": {
                    "filename": {"type": "string", "description": "Where to save it; an existing file is not overwritten."},
                    "tabId": tab_id()
                }
            }),
            Hints {
                read_only: false,
                destructive: false,
                idempotent: false,
                open_world: true,
            },
        ),
        tool(
            "browser_close",
            "Close the agent's tabs",
            "Close the tabs this session opened; the person's own tabs are never closed (ones \
             this session worked on are only released).",
            json!({"properties": {}}),
            Hints {
                read_only: false,
                destructive: true,
                idempotent: true,
                open_world: true,
            },
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_browser_waiting_for_approval_tells_the_model_how_to_unblock_it() {
        let text = advice(&LinkError::Rpc {
            code: code::BROWSER_NOT_APPROVED,
            message: "Browser ext-1 is waiting for approval".into(),
        });
        assert!(text.contains("waiting for approval") && text.contains("mcp-relay admin approve"));
    }

    fn args(value: Value) -> JsonObject {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn every_tool_has_a_title_an_object_schema_and_all_four_hints() {
        let tools = definitions();
        assert_eq!(tools.len(), 27);
        for tool in &tools {
            assert!(tool.title.is_some(), "{}", tool.name);
            assert_eq!(tool.input_schema["type"], "object", "{}", tool.name);
            let hints = tool.annotations.as_ref().unwrap();
            assert!(hints.read_only_hint.is_some() && hints.destructive_hint.is_some());
            assert!(hints.idempotent_hint.is_some() && hints.open_world_hint.is_some());
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
            .contains("list, new, select, close"));
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
            (
                "browser_console_messages",
                json!({"onlyErrors": true}),
                "consoleMessages",
                json!({"onlyErrors": true}),
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
            no_target.contains("\"ref\"") && no_target.contains("\"selector\""),
            "{no_target}"
        );
        assert!(err("browser_click", json!({"ref": 5})).contains("\"e5\""));
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
                paths: vec!["/tmp/a.txt".into()],
                params: json!({"selector": "#f"})
            }
        );
        let err = |tool: &str, call: Value| plan(tool, &args(call)).unwrap_err();
        assert!(err("browser_drag", json!({"startRef": "e1"})).contains("endRef"));
        assert!(err("browser_fill_form", json!({"fields": []})).contains("fields"));
        assert!(err("browser_file_upload", json!({"paths": [3]})).contains("paths"));
        assert!(err("browser_resize", json!({"width": 0, "height": 5})).contains("width"));
        assert!(err("browser_take_screenshot", json!({"type": "gif"})).contains("png"));
        assert!(err("browser_evaluate", json!({})).contains("function"));
    }

    #[test]
    fn cuts_respect_utf8() {
        let text = "aé€";
        assert_eq!(floor_char_boundary(text, 2), 1);
        assert_eq!(floor_char_boundary(text, 3), 3);
        assert_eq!(floor_char_boundary(text, 99), text.len());
    }
}
