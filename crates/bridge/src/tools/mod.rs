//! The tools a model sees, and how each becomes an extension command.
//!
//! - [`args`]: each tool's input as one typed struct, the source of both its JSON Schema and
//!   its parsing.
//! - [`pages`]: reading and moving around (tabs, navigate, snapshot, find, evaluate, console,
//!   network, CDP); [`actions`]: acting on the page (click, type, drag, drop, forms, media);
//!   [`transfers`]: files crossing between the bridge's machine and the browser's (uploads,
//!   drops, PDFs, downloads).
//! - [`results`]: answers as plain text with `structuredContent` beside; [`parts`]: long text
//!   in parts; [`find`]: searching an outline; [`errors`]: what a model reads when a call fails.
//!
//! The tool list is fixed: it does not change when the relay or the browser comes and goes,
//! because hosts cache it and models plan with it. Availability shows up in results instead:
//! every failure is a tool result with `isError: true` and a sentence a model can act on,
//! never a protocol error (hosts show those as an opaque "tool failed").
//!
//! The annotations are hints for hosts deciding whether to ask the person first, so they are
//! honest rather than flattering: anything that can submit a form, run script or close a tab
//! says it may be destructive; anything that touches a web page is open-world.

mod actions;
pub(crate) mod args;
mod code;
mod errors;
mod find;
mod pages;
mod parts;
mod person;
mod results;
mod rounds;
mod table;
mod transfers;
mod webmcp;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{CallToolResult, JsonObject, Tool};
use serde_json::{json, Value};

use crate::link::{BrowserLink, LinkError};

pub use code::CodeLimits;
pub(crate) use errors::advice;
pub(crate) use parts::DEFAULT_MAX_RESULT_CHARS;
pub(crate) use person::{in_scope, CallScope};
pub(crate) use rounds::{Round, Rounds};
pub use table::definitions;

pub(crate) use results::for_host;
use results::{error, render, success, Rendered};

/// `result` with `more` content after its own (files carried back, transfers.rs).
fn with_content(
    mut result: CallToolResult,
    more: Vec<rmcp::model::ContentBlock>,
) -> CallToolResult {
    result.content.extend(more);
    result
}

/// Tools whose results can be long and that therefore take `offset`.
const PAGED: [&str; 9] = [
    code::NAME,
    code::RUN_CODE,
    "browser_snapshot",
    "browser_evaluate",
    "browser_cdp",
    "browser_tabs",
    "browser_console_messages",
    "browser_network_requests",
    "browser_network_request",
];

/// What a tool call turns into.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Plan {
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
    /// The rest of this tool's last result in parts, from this character offset.
    Continue(usize),
    /// `fileUpload` (or `drop`) with the bytes of `paths`, read where the bridge runs.
    Upload {
        method: &'static str,
        paths: Vec<String>,
        params: Value,
    },
    /// `printPdf`, its PDF written where the bridge runs.
    SavePdf {
        params: Value,
        filename: Option<String>,
    },
    /// `snapshot` (outline), searched here (find.rs).
    Find {
        params: Value,
        text: Option<String>,
        regex: Option<String>,
    },
    /// `networkRequests` (the list), narrowed here as Playwright MCP narrows it (results.rs
    /// `select_requests`).
    Requests {
        params: Value,
        include_static: bool,
        filter: Option<String>,
    },
    /// `networkRequests {index}`: one request in full, or its one `part`.
    Request {
        params: Value,
        part: Option<args::RequestPart>,
    },
    /// `consoleMessages`, narrowed here to a level as Playwright MCP narrows them (results.rs
    /// `select_console`).
    Console {
        params: Value,
        level: args::ConsoleLevel,
    },
    /// `getTabs`, then `selectTab` on the tab at `index` in that list, the place `browser_tabs`
    /// list shows (Playwright MCP names tabs so).
    TabAt { index: usize },
    /// `closeTab` on the tab named by id; or `getTabs`, then `closeTab` on the tab at `index` in
    /// that list or the current one, and, when that was the session's current tab, `selectTab`
    /// on the last other tab the session holds, so it goes on there as Playwright MCP goes on in
    /// another tab (the protocol's `closeTab` leaves a connection without one).
    CloseTab {
        tab_id: Option<i64>,
        index: Option<usize>,
    },
    /// `listDownloads`, then the session's saved downloads.
    Downloads,
    /// `pageTools`: the page's own tools (WebMCP), as the page's words (webmcp.rs).
    PageTools { params: Value },
    /// `requestHuman`, then `awaitHuman` until the person answers or `timeout` passes (person.rs).
    RequestHuman { params: Value, timeout: Duration },
    /// `pageTools`, the arguments checked against the tool's schema, then `callPageTool`.
    CallPageTool {
        /// `{tabId}` when given.
        tab: Value,
        name: String,
        arguments: Value,
    },
    /// `plan`, its answer written at `filename` where the bridge runs instead of returned
    /// (Playwright MCP's `filename`; transfers.rs).
    Save { plan: Box<Plan>, filename: String },
}

impl Plan {
    /// This plan, its answer saved at `filename` when one is given.
    fn saved_to(self, filename: Option<String>) -> Plan {
        match filename {
            Some(filename) => Plan::Save {
                plan: Box::new(self),
                filename,
            },
            None => self,
        }
    }
}

/// What a call produced, before it reaches the model: text goes out in parts (or into a
/// file), an image as an MCP image (or into a file), anything else as it is.
enum Answer {
    /// Text, with the files carried back after it (transfers.rs).
    Text(Rendered, Vec<rmcp::model::ContentBlock>),
    /// The extension's screenshot answer (`data`, `mimeType`, size).
    Image(Value),
    /// A finished result: an error, or one with nothing to save.
    Done(CallToolResult),
}

/// The tool definitions and their execution.
pub(crate) struct Toolbox {
    /// Where every call ends up (the relay's socket, for the bridge).
    link: Arc<dyn BrowserLink>,
    /// Built once: the list must be identical for every `tools/list` (see the module docs).
    tools: Vec<Tool>,
    /// `--max-result-chars`: the longest text result; 0 for no limit.
    max_result_chars: usize,
    /// The full text of each paged tool's last result in parts, for `offset`.
    in_parts: Mutex<HashMap<String, Arc<str>>>,
    /// `--max-message-bytes`: the budget of one upload's or download's bytes; 0 for no limit.
    max_message_bytes: usize,
    /// Where downloads are saved, and what this session saved.
    downloads: transfers::Downloads,
    /// `--code-execution`: the bounds of `code_execution`, listed only then.
    code: Option<CodeLimits>,
    /// `--audit-log`: where a script's inner calls are written, one line each (the gateway
    /// writes the line of each call the host makes).
    audit: crate::audit::AuditLog,
    /// The page's tools (WebMCP) as last listed by `pageTools` and not yet taken by the
    /// gateway, which keeps `retrieve_tools`' index in step with them.
    page_listing: Mutex<Option<Vec<Value>>>,
    /// `--progress-interval`: how often a call waiting for the person notifies the host.
    progress_interval: Duration,
    /// The files a model named that this session wrote (`filename`), which it may replace.
    written: crate::files::Written,
    /// `--navigation-timeout`: sent with each navigation (`timeoutMs`); the extension's own
    /// 30 s when absent.
    navigation_timeout: Option<Duration>,
}

impl Toolbox {
    pub(crate) fn new(link: Arc<dyn BrowserLink>, max_result_chars: usize) -> Toolbox {
        Toolbox {
            link,
            tools: definitions(),
            max_result_chars,
            in_parts: Mutex::new(HashMap::new()),
            max_message_bytes: 0,
            downloads: transfers::Downloads::new(None),
            code: None,
            audit: crate::audit::AuditLog::disabled(),
            page_listing: Mutex::new(None),
            progress_interval: person::DEFAULT_PROGRESS_INTERVAL,
            written: crate::files::Written::default(),
            navigation_timeout: None,
        }
    }

    /// The page tools listed since the last call, if a listing came in (see `page_listing`).
    pub(crate) fn take_page_listing(&self) -> Option<Vec<Value>> {
        self.page_listing.lock().unwrap().take()
    }

    fn saw_page_listing(&self, listing: &Value) {
        let tools = listing["tools"].as_array().cloned().unwrap_or_default();
        *self.page_listing.lock().unwrap() = Some(tools);
    }

    /// How often a call that waits for the person sends the host a progress notification.
    pub(crate) fn with_progress_interval(mut self, interval: Duration) -> Toolbox {
        self.progress_interval = interval.max(Duration::from_millis(100));
        self
    }

    /// How long each navigation may take to open its page (`--navigation-timeout`).
    pub(crate) fn with_navigation_timeout(mut self, timeout: Option<Duration>) -> Toolbox {
        self.navigation_timeout = timeout;
        self
    }

    /// Writes each inner call of a script to `audit`.
    pub(crate) fn with_audit(mut self, audit: crate::audit::AuditLog) -> Toolbox {
        self.audit = audit;
        self
    }

    /// Offers `code_execution` and `browser_run_code_unsafe` under `limits` (none: neither
    /// offered nor listed).
    pub(crate) fn with_code_execution(mut self, limits: Option<CodeLimits>) -> Toolbox {
        self.tools
            .retain(|tool| tool.name != code::NAME && tool.name != code::RUN_CODE);
        if limits.is_some() {
            self.tools.push(table::code_execution());
            self.tools.push(table::run_code());
        }
        self.code = limits;
        self
    }

    pub(crate) fn with_max_message_bytes(mut self, max_message_bytes: usize) -> Toolbox {
        self.max_message_bytes = max_message_bytes;
        self
    }

    /// Saves downloads in `dir` instead of the system's temporary directory.
    pub(crate) fn with_downloads_dir(mut self, dir: Option<PathBuf>) -> Toolbox {
        self.downloads = transfers::Downloads::new(dir);
        self
    }

    /// Keeps no file where the tools run (the relay's HTTP `/mcp`): `paths` are refused, and
    /// PDFs and downloads travel back in their results (transfers.rs).
    pub(crate) fn with_files_in_results(mut self) -> Toolbox {
        self.downloads = transfers::Downloads::keeping(transfers::Keep::InResult);
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
        if name == code::NAME || name == code::RUN_CODE {
            let Some(limits) = self.code.clone() else {
                return error(format!(
                    "unknown tool {name} (start the bridge with --code-execution to offer it)"
                ));
            };
            return match table::code_args(name, args, !self.downloads.in_results()) {
                Ok(table::CodeCall::Run(script)) => {
                    person::without_round(self.execute(script, limits)).await
                }
                Ok(table::CodeCall::ReadOn(offset)) => self.continue_result(name, offset),
                Err(message) => error(format!("{name}: {message}")),
            };
        }
        self.call_tool_as(name, args, false).await
    }

    /// Runs a tool other than the scripts: what [`Toolbox::call`] does for each of them, and
    /// for each call a script makes. `whole`: the text uncut, for a script's `page`, which
    /// reads page values through it (the script's own bytes bound still counts it).
    async fn call_tool_as(&self, name: &str, args: &JsonObject, whole: bool) -> CallToolResult {
        let plan = match table::plan(name, args) {
            Ok(plan) => plan,
            Err(message) => return error(format!("{name}: {message}")),
        };
        self.run(name, plan, whole)
            .await
            .unwrap_or_else(|e| error(format!("{name} failed: {}", advice(&e))))
    }

    async fn run(&self, name: &str, plan: Plan, whole: bool) -> Result<CallToolResult, LinkError> {
        let (plan, filename) = match plan {
            Plan::Save { plan, filename } => (*plan, Some(filename)),
            plan => (plan, None),
        };
        let answer = self.answer_plan(name, plan).await?;
        Ok(match filename {
            Some(filename) => self.save_answer(name, answer, &filename),
            None if whole => match answer {
                Answer::Text(rendered, carried) => with_content(rendered.into_result(), carried),
                answer => self.show(name, answer),
            },
            None => self.show(name, answer),
        })
    }

    /// `answer` as the model receives it.
    fn show(&self, name: &str, answer: Answer) -> CallToolResult {
        match answer {
            Answer::Text(rendered, carried) => with_content(self.deliver(name, rendered), carried),
            Answer::Image(result) => results::screenshot_result(&result),
            Answer::Done(result) => result,
        }
    }

    async fn answer_plan(&self, name: &str, plan: Plan) -> Result<Answer, LinkError> {
        let text = |value: &Value| Answer::Text(render(name, value), Vec::new());
        match plan {
            Plan::Status => Ok(text(&json!(self.link.status()))),
            Plan::List => Ok(text(&self.list().await?)),
            Plan::Connect(wanted) => {
                let chosen = self.link.choose(&wanted).await?;
                Ok(text(
                    &json!({"connected": true, "extension_id": chosen.extension_id, "name": chosen.name}),
                ))
            }
            Plan::Forward {
                method,
                mut params,
                image,
            } => {
                if let (Some(timeout), "browser_navigate" | "createTab") =
                    (self.navigation_timeout, method)
                {
                    params["timeoutMs"] = json!(timeout.as_millis() as u64);
                }
                let mut result = self.link.call(method, params).await?;
                if image {
                    return Ok(Answer::Image(result));
                }
                let carried = self.take_downloads(&mut result).await;
                Ok(Answer::Text(render(name, &result), carried))
            }
            Plan::Continue(offset) => Ok(Answer::Done(self.continue_result(name, offset))),
            Plan::Upload {
                method,
                paths,
                mut params,
            } => {
                if !paths.is_empty() && self.downloads.in_results() {
                    return Ok(Answer::Done(error(format!(
                        "{name}: {}",
                        transfers::NO_PATHS_OVER_HTTP
                    ))));
                }
                if !paths.is_empty() {
                    match crate::files::read_upload(&paths, self.max_message_bytes) {
                        Err(message) => {
                            return Ok(Answer::Done(error(format!("{name}: {message}"))))
                        }
                        Ok(files) => params["files"] = Value::Array(files),
                    }
                }
                let mut result = self.link.call(method, params).await?;
                let carried = self.take_downloads(&mut result).await;
                Ok(Answer::Text(render(name, &result), carried))
            }
            Plan::SavePdf { params, filename } => {
                let result = self.link.call("printPdf", params).await?;
                Ok(Answer::Done(results::pdf_result(
                    &result,
                    filename.as_deref(),
                    self.downloads.in_results(),
                    &self.written,
                )))
            }
            Plan::Find {
                params,
                text,
                regex,
            } => {
                let result = self.link.call("snapshot", params).await?;
                Ok(self.found(&result, text.as_deref(), regex.as_deref()))
            }
            Plan::Requests {
                params,
                include_static,
                filter,
            } => {
                let mut result = self.link.call("networkRequests", params).await?;
                let filter = match filter.as_deref().map(results::url_filter).transpose() {
                    Ok(filter) => filter,
                    Err(message) => return Ok(Answer::Done(error(format!("{name}: {message}")))),
                };
                results::select_requests(&mut result, include_static, filter.as_ref());
                Ok(text(&result))
            }
            Plan::Request { params, part } => {
                let result = self.link.call("networkRequests", params).await?;
                Ok(Answer::Text(
                    results::request_details(&result, part),
                    Vec::new(),
                ))
            }
            Plan::Console { params, level } => {
                let mut result = self.link.call("consoleMessages", params).await?;
                results::select_console(&mut result, level);
                Ok(text(&result))
            }
            Plan::TabAt { index } => {
                let list = self.link.call("getTabs", json!({})).await?;
                let tab_id = match tab_at(name, &list, index) {
                    Ok(tab_id) => tab_id,
                    Err(refused) => return Ok(Answer::Done(refused)),
                };
                let result = self
                    .link
                    .call("selectTab", json!({ "tabId": tab_id }))
                    .await?;
                Ok(text(&result))
            }
            Plan::CloseTab { tab_id, index } => {
                // A tab named by its id is closed as the protocol closes it, and nothing more.
                if let Some(tab_id) = tab_id {
                    let result = self
                        .link
                        .call("closeTab", json!({ "tabId": tab_id }))
                        .await?;
                    return Ok(text(&result));
                }
                let list = self.link.call("getTabs", json!({})).await?;
                let target = match index {
                    Some(index) => match tab_at(name, &list, index) {
                        Ok(tab_id) => json!({ "tabId": tab_id }),
                        Err(refused) => return Ok(Answer::Done(refused)),
                    },
                    None => json!({}),
                };
                let mut result = self.link.call("closeTab", target).await?;
                let closed = result["tabId"].as_i64();
                if closed.is_some() && closed == list["currentTabId"].as_i64() {
                    let tabs = list["tabs"].as_array().map_or(&[][..], Vec::as_slice);
                    let next = tabs
                        .iter()
                        .rev()
                        .filter(|tab| tab["owner"] == "you")
                        .filter_map(|tab| tab["tabId"].as_i64())
                        .find(|&tab_id| Some(tab_id) != closed);
                    result["current"] = match next {
                        // A tab closed meanwhile leaves the session with none, as before.
                        Some(tab_id) => self
                            .link
                            .call("selectTab", json!({ "tabId": tab_id }))
                            .await
                            .unwrap_or(Value::Null),
                        None => Value::Null,
                    };
                }
                Ok(text(&result))
            }
            Plan::Downloads => Ok(Answer::Done(self.list_downloads().await?)),
            Plan::RequestHuman { params, timeout } => Ok(Answer::Done(
                self.request_human(name, params, timeout).await?,
            )),
            Plan::PageTools { params } => {
                let listing = self.link.call("pageTools", params).await?;
                self.saw_page_listing(&listing);
                let (text, structured) = webmcp::render_listing(&listing, &webmcp::nonce());
                Ok(Answer::Text(Rendered::page(text, structured), Vec::new()))
            }
            Plan::CallPageTool {
                tab,
                name: tool,
                arguments,
            } => Ok(Answer::Done(
                self.call_page_tool(name, tab, &tool, arguments).await?,
            )),
            // Plans are saved once, at the top (`run`); none is built nested.
            Plan::Save { plan, .. } => Box::pin(self.answer_plan(name, *plan)).await,
        }
    }

    /// `browser_call_page_tool`: the page's current tools first, for the tool's schema; the
    /// arguments checked against it here; then the call (webmcp.rs says why here).
    async fn call_page_tool(
        &self,
        name: &str,
        tab: Value,
        tool: &str,
        arguments: Value,
    ) -> Result<CallToolResult, LinkError> {
        let nonce = webmcp::nonce();
        let listing = self.link.call("pageTools", tab.clone()).await?;
        self.saw_page_listing(&listing);
        let Some(found) = webmcp::find_tool(&listing, tool) else {
            return Ok(error(format!(
                "{name}: {}",
                webmcp::not_listed(&listing, tool, &nonce)
            )));
        };
        let schema = found.get("inputSchema").cloned().unwrap_or(json!({}));
        if let Err(message) = webmcp::check_arguments(&schema, &arguments) {
            return Ok(error(format!("{name}: {message}")));
        }
        let mut params = tab;
        params["name"] = json!(tool);
        params["arguments"] = arguments;
        if let Some(frame) = found.get("frame").filter(|f| f.is_string()) {
            params["frame"] = frame.clone();
        }
        let call = self.link.call("callPageTool", params);
        let answer = match self
            .with_progress(call, webmcp::CALL_BOUND, webmcp::WAITING_FOR)
            .await
        {
            Ok(answer) => answer,
            Err(LinkError::Rpc { message, .. }) if webmcp::page_error(&message, "").is_some() => {
                let marked = webmcp::page_error(&message, &nonce).unwrap_or(message);
                return Ok(error(format!("{name} failed: {marked}")));
            }
            Err(other) => return Err(other),
        };
        let (text, structured) = webmcp::render_result(&answer, &nonce);
        Ok(self.deliver(name, Rendered::page(text, structured)))
    }

    async fn list(&self) -> Result<Value, LinkError> {
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
        Ok(json!({ "browsers": browsers }))
    }

    /// `browser_find`'s answer from the outline the extension sent.
    fn found(&self, result: &Value, text: Option<&str>, regex: Option<&str>) -> Answer {
        let query = match find::Query::new(text, regex) {
            Ok(query) => query,
            Err(message) => return Answer::Done(error(format!("browser_find: {message}"))),
        };
        let Some(outline) = result["snapshot"].as_str() else {
            return Answer::Done(error(
                "browser_find failed: the extension's answer held no outline; update the \
                 mcp-relay extension"
                    .into(),
            ));
        };
        let wanted = text.or(regex).unwrap_or_default();
        let (snippets, count) = find::search(outline, &query);
        let head = results::header(result);
        let lines = outline.lines().count();
        let text = if count == 0 {
            format!(
                "{head}\nNo line of the page's outline ({lines} lines) matches {wanted:?}. Try \
                 other words, a regex, or browser_snapshot to read the page."
            )
        } else {
            format!(
                "{head}\n{count} of {lines} outline lines match {wanted:?} (◀), each under its \
                 path from the root:\n\n{snippets}"
            )
        };
        let structured = json!({
            "tabId": result["tabId"],
            "url": result["url"],
            "title": result["title"],
            "matches": count,
        });
        Answer::Text(
            Rendered::page(text.trim_end().to_owned(), structured),
            Vec::new(),
        )
    }

    /// The first part of `rendered` (the whole of it when short enough); a paged tool keeps
    /// the text so `offset` reads on.
    fn deliver(&self, tool: &str, rendered: Rendered) -> CallToolResult {
        let Rendered {
            text,
            structured,
            page_text,
        } = rendered;
        let part =
            parts::part_at(&text, 0, self.max_result_chars).expect("offset 0 is in every text");
        if part.is_whole() {
            return Rendered {
                text,
                structured,
                page_text,
            }
            .into_result();
        }
        let paged = PAGED.contains(&tool);
        if paged {
            self.in_parts
                .lock()
                .unwrap()
                .insert(tool.to_owned(), Arc::from(text.as_str()));
        }
        let mut structured = bounded_fields(structured);
        structured["part"] = part_fields(&part);
        // A part's text is never its fields' JSON: it goes to a host as text alone.
        results::with_page_fields(success(part.text(tool, paged), None), structured)
    }

    fn continue_result(&self, tool: &str, offset: usize) -> CallToolResult {
        let Some(text) = self.in_parts.lock().unwrap().get(tool).cloned() else {
            return error(format!(
                "{tool}: \"offset\" reads on in a result of {tool} that came in parts, and there \
                 is none (the bridge keeps only the last one); call {tool} without offset"
            ));
        };
        match parts::part_at(&text, offset, self.max_result_chars) {
            None => error(format!(
                "{tool}: offset {offset} is past the end of the last result ({} characters)",
                text.chars().count()
            )),
            Some(part) => results::with_page_fields(
                success(part.text(tool, true), None),
                json!({ "part": part_fields(&part) }),
            ),
        }
    }
}

/// The largest structured field a part carries beside its text. A result comes in parts
/// because it is long; a field that long (console messages, requests, a JSON answer) is what
/// the parts' text already carries, and sending it whole beside the first part would undo
/// the cut (`structuredContent` counts against a host's result budget as text does).
const MAX_FIELD_CHARS_IN_A_PART: usize = 2_000;

/// `structured` without the fields over [`MAX_FIELD_CHARS_IN_A_PART`], named in `inText`.
fn bounded_fields(structured: Option<Value>) -> Value {
    let Some(Value::Object(map)) = structured else {
        return json!({});
    };
    let mut kept = serde_json::Map::new();
    let mut in_text = Vec::new();
    for (key, value) in map {
        if value.to_string().chars().count() > MAX_FIELD_CHARS_IN_A_PART {
            in_text.push(Value::String(key));
        } else {
            kept.insert(key, value);
        }
    }
    if !in_text.is_empty() {
        kept.insert("inText".into(), Value::Array(in_text));
    }
    Value::Object(kept)
}

/// Where a part is, for `structuredContent`.
fn part_fields(part: &parts::Part) -> Value {
    json!({
        "index": part.index,
        "count": part.count,
        "offset": part.start,
        "end": part.end,
        "totalChars": part.total,
        "nextOffset": (part.end < part.total).then_some(part.end),
    })
}

#[cfg(test)]
mod tests;

/// The id of the tab at `index` in `getTabs`'s `list`, or the refusal `name` answers with.
fn tab_at(name: &str, list: &Value, index: usize) -> Result<i64, CallToolResult> {
    let tabs = list["tabs"].as_array().map_or(&[][..], Vec::as_slice);
    tabs.get(index)
        .and_then(|tab| tab["tabId"].as_i64())
        .ok_or_else(|| {
            error(format!(
                "{name}: there is no tab at index {index}: the browser has {} tabs, numbered \
                 from 0 (browser_tabs with action \"list\")",
                tabs.len()
            ))
        })
}
