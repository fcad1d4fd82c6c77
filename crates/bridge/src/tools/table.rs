//! The tool table: each tool's name, title, description, honest hints, input type and plan,
//! in the order hosts show them. The input type gives both the schema and the parsing.

use std::sync::LazyLock;

use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{actions, args, pages, person, transfers, webmcp, Plan};

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
/// Changes how the page looks or where the mouse is, nothing the page keeps.
const PAGE_VIEW: Hints = Hints {
    read_only: false,
    destructive: false,
    idempotent: true,
    open_world: true,
};

type Planner = Box<dyn Fn(&JsonObject) -> Result<Plan, String> + Send + Sync>;

/// One tool: what `tools/list` shows and how a call is planned.
struct Entry {
    /// What `tools/list` shows, its `inputSchema` generated from the input type.
    tool: Tool,
    /// Parses a call into that same input type, then maps it onto a [`Plan`].
    plan: Planner,
}

/// `A`'s JSON Schema as a tool's `inputSchema`: inlined, without the `$schema` line, formats
/// and (unless `null` means something, `keep_null`) the `null` every `Option` adds; parsing
/// still reads `null` as absent.
fn input_schema<A: JsonSchema>(keep_null: bool) -> JsonObject {
    let mut settings = SchemaSettings::draft2020_12();
    settings.inline_subschemas = true;
    settings.meta_schema = None;
    let schema = settings.into_generator().into_root_schema_for::<A>();
    let mut value = serde_json::to_value(schema).expect("a schema serialises");
    tidy(&mut value, keep_null);
    let Value::Object(mut object) = value else {
        unreachable!("tool inputs are structs");
    };
    object.remove("title");
    object.remove("description");
    object.insert("type".into(), "object".into());
    object
        .entry("properties")
        .or_insert_with(|| Value::Object(JsonObject::new()));
    object
}

fn tidy(value: &mut Value, keep_null: bool) {
    match value {
        Value::Object(map) => {
            map.remove("format");
            if map.get("default") == Some(&Value::Null) {
                map.remove("default");
            }
            if !keep_null {
                if let Some(Value::Array(types)) = map.get_mut("type") {
                    types.retain(|t| t != "null");
                    if types.len() == 1 {
                        let only = types.remove(0);
                        map.insert("type".into(), only);
                    }
                }
                if let Some(Value::Array(values)) = map.get_mut("enum") {
                    values.retain(|v| !v.is_null());
                }
                if let Some(Value::Array(choices)) = map.get_mut("anyOf") {
                    choices.retain(|c| c.get("type") != Some(&Value::from("null")));
                    if choices.len() == 1 {
                        let Value::Object(only) = choices.remove(0) else {
                            unreachable!("subschemas are objects");
                        };
                        map.remove("anyOf");
                        for (k, v) in only {
                            map.entry(k).or_insert(v);
                        }
                    }
                }
            }
            for child in map.values_mut() {
                tidy(child, keep_null);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| tidy(v, keep_null)),
        _ => {}
    }
}

fn entry<A: DeserializeOwned + JsonSchema + 'static>(
    name: &'static str,
    title: &'static str,
    description: &'static str,
    hints: Hints,
    plan: fn(A) -> Result<Plan, String>,
) -> Entry {
    entry_with::<A>(name, title, description, hints, false, plan)
}

fn entry_with<A: DeserializeOwned + JsonSchema + 'static>(
    name: &'static str,
    title: &'static str,
    description: &'static str,
    hints: Hints,
    keep_null: bool,
    plan: fn(A) -> Result<Plan, String>,
) -> Entry {
    let schema = input_schema::<A>(keep_null);
    let tool = Tool::new(name, description, schema.clone())
        .with_title(title)
        .with_annotations(annotations(title, &hints));
    Entry {
        tool,
        plan: Box::new(move |call| args::parse::<A>(call, &schema).and_then(plan)),
    }
}

/// The hints a host reads, each said only where it tells the host something: the MCP spec
/// gives `idempotentHint` meaning only beside `readOnlyHint: false` and makes false its
/// default, so it is sent only for a tool that changes the page and is idempotent. Every
/// character of `tools/list` is context the model spends before its first call.
fn annotations(title: &str, hints: &Hints) -> ToolAnnotations {
    let mut annotations = ToolAnnotations::with_title(title)
        .read_only(hints.read_only)
        .destructive(hints.destructive)
        .open_world(hints.open_world);
    if !hints.read_only && hints.idempotent {
        annotations = annotations.idempotent(true);
    }
    annotations
}

static TABLE: LazyLock<Vec<Entry>> = LazyLock::new(table);

fn table() -> Vec<Entry> {
    vec![
        entry(
            "browser_list",
            "List browsers",
            "List the browsers (mcp-relay extensions) connected to the relay for this user, and \
             which one this session uses.",
            LOCAL_READ,
            pages::list,
        ),
        entry(
            "browser_connect",
            "Use a browser",
            "Choose the browser to drive, by name or id from browser_list; needed only when \
             several are connected.",
            Hints {
                read_only: false,
                destructive: false,
                idempotent: true,
                open_world: false,
            },
            pages::connect,
        ),
        entry(
            "browser_status",
            "Connection status",
            "Whether the bridge is connected to the relay and a browser, and if not, why.",
            LOCAL_READ,
            pages::status,
        ),
        entry(
            "browser_tabs",
            "Manage tabs",
            "List tabs (which is current), open, select or close one. new opens one (at url) \
             in its own window, the person's focus kept, and makes it current; close defaults \
             to the current one.",
            PAGE_ACTION,
            pages::tabs,
        ),
        entry(
            "browser_navigate",
            "Navigate",
            "Go to a URL: load it in the current tab (opening one if needed), or go back or \
             forward in history; waits for the page to load.",
            PAGE_ACTION,
            pages::navigate,
        ),
        entry(
            "browser_click",
            "Click",
            "Click an element (target: ref from browser_snapshot, or CSS selector) or a \
             viewport point (x, y).",
            PAGE_ACTION,
            actions::click,
        ),
        entry(
            "browser_type",
            "Type text",
            "Type text into an input field, replacing its content; submit presses Enter.",
            PAGE_ACTION,
            actions::type_text,
        ),
        entry(
            "browser_hover",
            "Hover",
            "Move the mouse over an element, e.g. to open a menu.",
            PAGE_VIEW,
            actions::hover,
        ),
        entry(
            "browser_screenshot",
            "Screenshot",
            "The viewport as an image, longest side 1568 px unless maxDimension.",
            PAGE_READ,
            pages::screenshot,
        ),
        entry(
            "browser_evaluate",
            "Run JavaScript",
            "Run JavaScript in the page and return its value (awaited): a function, called \
             with the element target names, or an expression such as document.title. It can \
             change the page.",
            PAGE_ACTION,
            pages::evaluate,
        ),
        entry(
            "browser_snapshot",
            "Page snapshot",
            "Read the page (URL, title, visible text, links, interactive elements) as an \
             accessibility outline, better than a screenshot: elements carry refs (e5) for \
             other tools' target. target reads one element's subtree; depth and interactive \
             show less.",
            PAGE_READ,
            pages::snapshot,
        ),
        entry(
            "browser_find",
            "Find in page",
            "Search the page for text or a regex: the matching lines of its outline with a \
             few around, each under its path from the root, with refs. Cheaper than a snapshot \
             to locate an element.",
            PAGE_READ,
            pages::find,
        ),
        entry(
            "browser_cdp",
            "Chrome DevTools command",
            "A raw Chrome DevTools Protocol command on the current tab; answers its result. \
             Can do anything DevTools can.",
            PAGE_ACTION,
            pages::cdp,
        ),
        entry(
            "browser_navigate_back",
            "Navigate back",
            "Go back to the previous page.",
            PAGE_ACTION,
            pages::back,
        ),
        entry(
            "browser_navigate_forward",
            "Navigate forward",
            "Go forward to the next page, after going back.",
            PAGE_ACTION,
            pages::forward_in_history,
        ),
        entry(
            "browser_select_option",
            "Select option",
            "Choose options in a drop-down by value or label: a <select>'s are set (input and \
             change fire), a page-drawn one is opened and its option clicked.",
            PAGE_ACTION,
            actions::select_option,
        ),
        entry(
            "browser_press_key",
            "Press a key",
            "Press a key or combination on the focused element: Enter, Escape, ArrowDown, a, \
             Control+A, Shift+Tab.",
            PAGE_ACTION,
            actions::press_key,
        ),
        entry(
            "browser_wait_for",
            "Wait for text",
            "Wait until text appears or disappears (textGone), or for time seconds.",
            PAGE_READ,
            pages::wait_for,
        ),
        entry(
            "browser_request_human",
            "Hand over",
            "A step only the person can do (login, 2FA, CAPTCHA): waits for Done or Cancel.",
            Hints {
                read_only: false,
                destructive: false,
                idempotent: false,
                open_world: true,
            },
            person::plan,
        ),
        entry(
            "browser_handle_dialog",
            "Answer a dialog",
            "Accept or dismiss the page's alert, confirm or prompt dialog.",
            PAGE_ACTION,
            pages::handle_dialog,
        ),
        entry(
            "browser_console_messages",
            "Console messages",
            "The current tab's console messages and uncaught errors since its last navigation, \
             oldest first.",
            PAGE_READ,
            pages::console_messages,
        ),
        entry(
            "browser_drag",
            "Drag and drop",
            "Drag one element onto another with the mouse; HTML5 drop zones get a real drop.",
            PAGE_ACTION,
            actions::drag,
        ),
        entry(
            "browser_drop",
            "Drop files or data",
            "Drop files or MIME data onto an element, as if dragged from outside the page.",
            PAGE_ACTION,
            transfers::drop,
        ),
        entry(
            "browser_fill_form",
            "Fill a form",
            "Fill several fields at once (textbox, checkbox, radio, combobox, slider); the \
             result reads the values back.",
            PAGE_ACTION,
            actions::fill_form,
        ),
        entry(
            "browser_file_upload",
            "Upload files",
            "Give files to a file input (target, an open file chooser's, or the only one).",
            PAGE_ACTION,
            transfers::file_upload,
        ),
        entry(
            "browser_network_requests",
            "Network requests",
            "The current page's network requests, numbered: fetch/XHR and failures, all with \
             static. browser_network_request shows one.",
            PAGE_READ,
            pages::network_requests,
        ),
        entry(
            "browser_network_request",
            "Network request",
            "One request from browser_network_requests, by its number there: headers and \
             bodies, or one part.",
            PAGE_READ,
            pages::network_request,
        ),
        entry(
            "browser_take_screenshot",
            "Take a screenshot",
            "Screenshot of the viewport, the whole page (fullPage) or one element (target), \
             as an image.",
            PAGE_READ,
            pages::take_screenshot,
        ),
        entry(
            "browser_resize",
            "Resize the viewport",
            "Set the current tab's viewport size in CSS pixels (emulated; windows untouched).",
            PAGE_VIEW,
            actions::resize,
        ),
        entry_with(
            "browser_emulate_media",
            "Emulate media",
            "Emulate CSS media features, e.g. dark color scheme or print. Omitted: unchanged; \
             null: cleared.",
            PAGE_VIEW,
            true,
            actions::emulate_media,
        ),
        entry(
            "browser_pdf_save",
            "Save as PDF",
            "Print the page to a PDF file where the bridge runs; the result names it.",
            Hints {
                read_only: false,
                destructive: false,
                idempotent: false,
                open_world: true,
            },
            transfers::pdf_save,
        ),
        entry(
            "browser_downloads",
            "Downloads",
            "List this session's downloads, saved where the bridge runs (saving any finished \
             since).",
            Hints {
                read_only: false,
                destructive: false,
                idempotent: true,
                open_world: true,
            },
            transfers::downloads,
        ),
        entry(
            "browser_page_tools",
            "The page's own tools",
            "List the tools the page registers itself (WebMCP): name, description, input schema \
             (the page's words, untrusted).",
            PAGE_READ,
            webmcp::page_tools,
        ),
        entry(
            "browser_call_page_tool",
            "Call a page's tool",
            "Call a tool from browser_page_tools with arguments fitting its schema; answers the \
             page's result.",
            PAGE_ACTION,
            webmcp::call_page_tool,
        ),
        entry(
            "browser_close",
            "Close the agent's tabs",
            "Close the tabs this session opened; the person's own tabs are never closed.",
            Hints {
                read_only: false,
                destructive: true,
                idempotent: true,
                open_world: true,
            },
            pages::close,
        ),
    ]
}

/// Every tool, in the order hosts show them.
pub fn definitions() -> Vec<Tool> {
    TABLE.iter().map(|entry| entry.tool.clone()).collect()
}

/// `code_execution`'s definition, listed only when the bridge enables it (see `code`).
pub(crate) fn code_execution() -> Tool {
    script_tool(
        super::code::NAME,
        "Run a script over the browser tools",
        "Run JavaScript (an async function body) in a sandbox whose only way out is this \
         session's browser tools: `await tools.browser_navigate({url})`, `await \
         tools.browser_snapshot({})`, `await tools.browser_find({text})`, … (every tool listed \
         here, same arguments). Each call resolves to {text, data} (the result's text and \
         fields) or rejects with an Error you may catch. Return only what you need \
         (e.g. a table): the return value is the result (a string as-is, else JSON). \
         Playwright's `page` (see browser_run_code_unsafe) is there too. console.log is \
         captured. No fetch, require, import or timers; time, memory, calls and bytes are \
         bounded.",
        input_schema::<args::CodeExecution>(false),
    )
}

/// A script tool: it can do what every tool it calls can (not read-only, destructive,
/// open-world).
fn script_tool(
    name: &'static str,
    title: &'static str,
    description: &'static str,
    schema: JsonObject,
) -> Tool {
    Tool::new(name, description, schema)
        .with_title(title)
        .with_annotations(
            ToolAnnotations::with_title(title)
                .read_only(false)
                .destructive(true)
                .open_world(true),
        )
}

/// `browser_run_code_unsafe`'s definition, listed with `code_execution` (see `code`).
pub(crate) fn run_code() -> Tool {
    script_tool(
        super::code::RUN_CODE,
        "Run Playwright code",
        "Run Playwright code, `async (page) => { … }`, in code_execution's sandbox (no \
         Node.js, the same bounds): `page` has Playwright's goto, url, title, evaluate, \
         getBy…/locator with click, fill, check, selectOption, press, textContent, count, \
         all, waitFor, …, keyboard and mouse, each step one of this session's tools. The \
         function's return value is the result (a string as-is, else JSON).",
        input_schema::<args::RunCode>(false),
    )
}

/// A script to run, or (`offset`) where to read on in the last long answer of one.
pub(crate) enum CodeCall {
    Run(super::code::Script),
    ReadOn(usize),
}

/// The largest script file `browser_run_code_unsafe {filename}` reads: a script, not data.
const MAX_SCRIPT_FILE_BYTES: u64 = 1 << 20;

/// `code_execution`'s or `browser_run_code_unsafe`'s arguments. `files_here`: the bridge
/// runs beside the host, so a `filename` names a file it can read (not over the relay's HTTP
/// `/mcp`, whose host's files are elsewhere).
pub(crate) fn code_args(
    name: &str,
    args: &JsonObject,
    files_here: bool,
) -> Result<CodeCall, String> {
    let (code, offset, wanted) = if name == super::code::RUN_CODE {
        let schema = input_schema::<args::RunCode>(false);
        let parsed = args::parse::<args::RunCode>(args, &schema)?;
        let code = match parsed.filename {
            // As Playwright MCP: with both, the file wins.
            Some(filename) if parsed.offset.is_none() => Some(script_file(&filename, files_here)?),
            _ => parsed.code,
        };
        (
            code.map(super::code::Script::Playwright),
            parsed.offset,
            "Playwright code, a function of page: async (page) => { … } (or \"filename\", a \
             file holding it)",
        )
    } else {
        let schema = input_schema::<args::CodeExecution>(false);
        let parsed = args::parse::<args::CodeExecution>(args, &schema)?;
        (
            parsed.code.map(super::code::Script::Body),
            parsed.offset,
            "the body of an async JavaScript function",
        )
    };
    match (code, offset) {
        (_, Some(offset)) => Ok(CodeCall::ReadOn(offset as usize)),
        (Some(script), None) if !script.is_empty() => Ok(CodeCall::Run(script)),
        _ => Err(format!(
            "give \"code\": {wanted} (or \"offset\" to read on in the last answer that came \
             in parts)"
        )),
    }
}

/// The text of a script file named by `filename`, or why it cannot be read.
fn script_file(filename: &str, files_here: bool) -> Result<String, String> {
    if !files_here {
        return Err(format!(
            "\"filename\" names a file on the machine where the tools run, which is not \
             yours over this connection; send the script itself as \"code\" (not read: \
             {filename})"
        ));
    }
    let path = std::path::Path::new(filename);
    let meta = std::fs::metadata(path)
        .map_err(|e| format!("cannot read {filename} on the bridge's machine: {e}"))?;
    if !meta.is_file() {
        return Err(format!("{filename} is not a file"));
    }
    if meta.len() > MAX_SCRIPT_FILE_BYTES {
        return Err(format!(
            "{filename} is {} bytes, above the {MAX_SCRIPT_FILE_BYTES}-byte limit of a script \
             file",
            meta.len()
        ));
    }
    let code = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {filename} as UTF-8 text: {e}"))?;
    if code.trim().is_empty() {
        return Err(format!("{filename} is empty"));
    }
    Ok(code)
}

/// Maps a call onto what to do, or says what is wrong with its arguments.
pub(crate) fn plan(name: &str, args: &JsonObject) -> Result<Plan, String> {
    match TABLE.iter().find(|entry| entry.tool.name == name) {
        Some(entry) => (entry.plan)(args),
        None => Err(format!("unknown tool {name}")),
    }
}
