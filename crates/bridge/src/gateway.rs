//! What the host sees of the bridge, by `--tools` mode, and how each call is carried out.
//!
//! - `direct`: the browser tools of [`super::tools`], one MCP tool each.
//! - `proxy`: the single `proxy` tool ([`super::proxy`]) over every tool, CDP command,
//!   resource and prompt.
//! - `retrieve`: `retrieve_tools`, `describe_tool` and the intent-checked `call_tool_read`,
//!   `call_tool_write`, `call_tool_destructive` ([`super::retrieve`], [`super::intent`]); with
//!   `--dynamic K`, each search also registers its top K hits as real tools
//!   ([`super::dynamic`]) and tells the host with `notifications/tools/list_changed`.
//! - `all`: all of the above.
//!
//! Resources and prompts are offered in every mode. Every call, resource read and prompt get is
//! written to the audit log ([`super::audit`]) when one is configured.

use std::sync::{Arc, Mutex, RwLock};
use std::time::Instant;

use clap::ValueEnum;
use rmcp::model::{
    CallToolResult, ContentBlock, JsonObject, ResourceContents, Tool, ToolAnnotations,
};
use rmcp::{Peer, RoleServer};
use serde_json::{json, Value};

use super::audit::{AuditLog, AuditRecord, Outcome};
use super::catalog::{catalog, CdpCommand, CDP_PREFIX};
use super::dynamic::ToolPool;
use super::embed::Embedder;
use super::intent::{self, Access, Intent};
use super::prompts;
use super::proxy::{self, Action, Kind};
use super::resources::{self, ReadError};
use super::retrieve::{self, PageTool, ToolIndex, PAGE_PREFIX};
use super::tools::Toolbox;

/// `--tools`: which tools the host sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Exposure {
    /// One MCP tool per browser tool.
    Direct,
    /// Only the `proxy` tool.
    Proxy,
    /// `retrieve_tools`, `describe_tool` and the `call_tool_*` tools.
    Retrieve,
    /// Everything.
    All,
}

impl Exposure {
    fn direct(self) -> bool {
        matches!(self, Exposure::Direct | Exposure::All)
    }
    fn proxy(self) -> bool {
        matches!(self, Exposure::Proxy | Exposure::All)
    }
    pub fn retrieve(self) -> bool {
        matches!(self, Exposure::Retrieve | Exposure::All)
    }
}

/// `--dynamic K` with its pool size.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Dynamic {
    /// How many hits of each search become tools.
    pub top_k: usize,
    /// How many registered tools are kept at most.
    pub pool: usize,
}

/// Prefix of CDP commands registered as real tools: `cdp_Page_navigate` (hosts such as
/// Claude's accept only `[A-Za-z0-9_-]` in tool names).
const DYNAMIC_CDP_PREFIX: &str = "cdp_";
/// Default and largest `limit` of `retrieve_tools`.
const RETRIEVE_DEFAULT: u64 = 10;
const RETRIEVE_MAX: u64 = 50;

/// A capability a `proxy` or `call_tool_*` call can reach.
enum Target {
    Bridge(Tool),
    Cdp(&'static CdpCommand),
    /// One of the page's own tools (WebMCP) found by `retrieve_tools` as `page:<name>`,
    /// called through `browser_call_page_tool`.
    Page(String),
}

/// What the audit log learns about a call besides its result.
#[derive(Default)]
struct Note {
    target: Option<String>,
    variant: Option<Access>,
    intent: Option<Intent>,
    refused: bool,
}

pub(crate) struct Gateway {
    /// The browser tools, which every path ends in.
    toolbox: Arc<Toolbox>,
    exposure: Exposure,
    /// The bridge's tools and the catalog, which do not change while the bridge runs, and the
    /// page's own tools, which do (replaced at each listing the bridge sees). Shared with the
    /// thread that attaches the embedding model's vectors once they are computed.
    index: Arc<RwLock<ToolIndex>>,
    /// The `proxy` / retrieval tools this mode lists.
    meta_tools: Vec<Tool>,
    dynamic: Option<Dynamic>,
    /// The tools `--dynamic` registered, in eviction order.
    pool: Mutex<ToolPool>,
    audit: AuditLog,
    /// `--structured-content` (see [`Gateway::with_structured_content`]).
    structured_content: bool,
}

fn error(message: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}

fn hints(
    read_only: bool,
    destructive: bool,
    idempotent: bool,
    open_world: bool,
) -> ToolAnnotations {
    ToolAnnotations::new()
        .read_only(read_only)
        .destructive(destructive)
        .idempotent(idempotent)
        .open_world(open_world)
}

fn titled(title: &str, mut annotations: ToolAnnotations) -> ToolAnnotations {
    annotations.title = Some(title.to_owned());
    annotations
}

fn schema(value: Value) -> JsonObject {
    value.as_object().cloned().expect("schemas are objects")
}

fn access_hints(access: Access) -> ToolAnnotations {
    match access {
        Access::Read => hints(true, false, true, true),
        Access::Write => hints(false, false, false, true),
        Access::Destructive => hints(false, true, false, true),
    }
}

/// A CDP command as an MCP tool, under `name`.
fn cdp_tool(command: &CdpCommand, name: String) -> Tool {
    let mut description = format!(
        "[Chrome DevTools {}] {}",
        command.method, command.description
    );
    if !command.returns.is_empty() {
        description.push_str(&format!(" Returns: {}.", command.returns.join(", ")));
    }
    Tool::new(name, description, command.input_schema())
        .with_annotations(access_hints(command.access))
}

fn meta_tools(exposure: Exposure) -> Vec<Tool> {
    let mut tools = Vec::new();
    if exposure.proxy() {
        tools.push(
            Tool::new(
                "proxy",
                "One tool for every browser capability. action list/info/call over type \
                 tool (browser_* tools and every Chrome DevTools command as cdp:Domain.method), \
                 resource (browser://tabs, each tab's snapshot and screenshot) or prompt. \
                 Example: {\"action\": \"call\", \"type\": \"tool\", \"path\": \
                 \"browser_snapshot\"}. list takes limit, offset and filter_server (a name \
                 prefix, e.g. \"cdp:Network.\").",
                proxy::input_schema(),
            )
            .with_title("Browser proxy")
            .with_annotations(titled("Browser proxy", hints(false, true, false, true))),
        );
    }
    if exposure.retrieve() {
        tools.push(
            Tool::new(
                "retrieve_tools",
                "Search the browser tools and the whole Chrome DevTools Protocol by what you \
                 want to do (e.g. \"delete cookies for a site\"). Each hit has a name, a \
                 signature, a score and call_with: the call_tool_* variant to use.",
                schema(json!({
                    "type": "object",
                    "properties": {
                        "query": {"type": "string", "description": "What you want to do, in words."},
                        "limit": {"type": "integer", "minimum": 1, "maximum": RETRIEVE_MAX, "description": "How many hits (default 10)."}
                    },
                    "required": ["query"]
                })),
            )
            .with_title("Find browser tools")
            .with_annotations(titled("Find browser tools", hints(true, false, true, false))),
        );
        tools.push(
            Tool::new(
                "describe_tool",
                "The full description and input schema of a tool or CDP command found with \
                 retrieve_tools.",
                schema(json!({
                    "type": "object",
                    "properties": {"name": {"type": "string", "description": "e.g. browser_click or cdp:DOM.getDocument"}},
                    "required": ["name"]
                })),
            )
            .with_title("Describe a tool")
            .with_annotations(titled("Describe a tool", hints(true, false, true, false))),
        );
        for (access, title, what) in [
            (Access::Read, "Call a read-only tool", "a read-only tool or CDP command (refused for ones that change state)"),
            (Access::Write, "Call a state-changing tool", "a tool or CDP command that changes state but is not destructive (refused for destructive ones)"),
            (Access::Destructive, "Call a destructive tool", "any tool or CDP command, including destructive ones (deleting data, closing, running script)"),
        ] {
            tools.push(
                Tool::new(
                    access.call_with(),
                    format!(
                        "Call {what}. Use the call_with that retrieve_tools gives. Arguments as \
                         args (object) or args_json (JSON string); say why in intent_reason."
                    ),
                    schema(json!({
                        "type": "object",
                        "properties": {
                            "name": {"type": "string", "description": "A name from retrieve_tools, e.g. browser_snapshot or cdp:DOM.getDocument."},
                            "args": {"type": "object", "description": "The tool's arguments."},
                            "args_json": {"type": "string", "description": "Instead of args: the arguments as a JSON string."},
                            "intent_data_sensitivity": {"type": "string", "enum": ["public", "internal", "private", "unknown"]},
                            "intent_reason": {"type": "string", "description": "Why, for the audit trail."},
                            "intent": {
                                "type": "object",
                                "description": "Alternative to the intent_* fields (mcpproxy's shape).",
                                "properties": {
                                    "operation_type": {"type": "string", "enum": [access.as_str()]},
                                    "data_sensitivity": {"type": "string", "enum": ["public", "internal", "private", "unknown"]},
                                    "reason": {"type": "string"}
                                }
                            }
                        },
                        "required": ["name"]
                    })),
                )
                .with_title(title)
                .with_annotations(titled(title, access_hints(access))),
            );
        }
    }
    tools
}

impl Gateway {
    pub(crate) fn new(
        toolbox: Arc<Toolbox>,
        exposure: Exposure,
        dynamic: Option<Dynamic>,
        audit: AuditLog,
        embedder: Option<Arc<Embedder>>,
    ) -> Gateway {
        let index = Arc::new(RwLock::new(ToolIndex::new(toolbox.definitions())));
        if let (Some(embedder), true) = (embedder, exposure.retrieve()) {
            attach_in_background(Arc::clone(&index), embedder);
        }
        Gateway {
            meta_tools: meta_tools(exposure),
            pool: Mutex::new(ToolPool::new(dynamic.map_or(1, |d| d.pool))),
            toolbox,
            exposure,
            index,
            dynamic,
            audit,
            structured_content: false,
        }
    }

    /// `--structured-content`: results that carry page text keep their fields in
    /// `structuredContent` for the host too (tools/results.rs says why they do not by default).
    pub(crate) fn with_structured_content(mut self, keep: bool) -> Gateway {
        self.structured_content = keep;
        self
    }

    pub(crate) fn exposure(&self) -> Exposure {
        self.exposure
    }

    pub(crate) fn dynamic(&self) -> bool {
        self.dynamic.is_some()
    }

    pub(crate) fn relay_url(&self) -> &str {
        self.toolbox.link().describe()
    }

    /// The `tools/list` answer.
    pub(crate) fn tools(&self) -> Vec<Tool> {
        let mut tools = Vec::new();
        if self.exposure.direct() {
            tools.extend(self.toolbox.definitions().iter().cloned());
        }
        tools.extend(self.meta_tools.iter().cloned());
        if self.dynamic.is_some() {
            for name in self.pool.lock().unwrap().names() {
                if tools.iter().any(|t| t.name == name) {
                    continue;
                }
                if let Some(tool) = self.dynamic_tool(&name) {
                    tools.push(tool);
                }
            }
        }
        tools
    }

    fn dynamic_tool(&self, name: &str) -> Option<Tool> {
        match name.strip_prefix(DYNAMIC_CDP_PREFIX) {
            Some(_) => {
                let command = catalog().get(&cdp_method(name)?)?;
                Some(cdp_tool(command, name.to_owned()))
            }
            None => self.bridge_tool(name),
        }
    }

    fn bridge_tool(&self, name: &str) -> Option<Tool> {
        self.toolbox
            .definitions()
            .iter()
            .find(|t| t.name == name)
            .cloned()
    }

    pub(crate) fn knows(&self, name: &str) -> bool {
        (self.exposure.direct() && self.toolbox.knows(name))
            || self.meta_tools.iter().any(|t| t.name == name)
            || (self.dynamic.is_some() && self.pool.lock().unwrap().contains(name))
    }

    /// Puts the page tools of the latest listing a call brought in into the index (on a
    /// blocking thread: with a model, new descriptions are embedded).
    async fn follow_page_tools(&self) {
        let Some(listing) = self.toolbox.take_page_listing() else {
            return;
        };
        if !self.exposure.retrieve() {
            return;
        }
        let tools: Vec<PageTool> = listing
            .iter()
            .filter_map(|t| {
                Some(PageTool {
                    name: t["name"].as_str().filter(|n| !n.is_empty())?.to_owned(),
                    description: t["description"].as_str().unwrap_or_default().to_owned(),
                    params: t["inputSchema"]["properties"]
                        .as_object()
                        .map(|p| p.keys().cloned().collect())
                        .unwrap_or_default(),
                })
            })
            .collect();
        let index = Arc::clone(&self.index);
        let updated =
            tokio::task::spawn_blocking(move || index.write().unwrap().set_page_tools(&tools))
                .await;
        match updated {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "embedding the page's tools failed; the index keeps the previous ones")
            }
            Err(e) => tracing::warn!(error = %e, "updating the page's tools in the index failed"),
        }
    }

    /// A browser tool, CDP command or page tool by any of its names.
    fn resolve(&self, name: &str) -> Option<Target> {
        if let Some(method) = cdp_method(name) {
            return catalog().get(&method).map(Target::Cdp);
        }
        if let Some(tool) = name.strip_prefix(PAGE_PREFIX) {
            return Some(Target::Page(tool.to_owned()));
        }
        self.bridge_tool(name).map(Target::Bridge)
    }

    async fn run(&self, target: &Target, args: &JsonObject) -> CallToolResult {
        match target {
            Target::Bridge(tool) => self.toolbox.call(&tool.name, args).await,
            Target::Page(name) => {
                let mut call = JsonObject::new();
                call.insert("name".into(), json!(name));
                call.insert("arguments".into(), Value::Object(args.clone()));
                self.toolbox.call("browser_call_page_tool", &call).await
            }
            Target::Cdp(command) => {
                let mut cdp = JsonObject::new();
                cdp.insert("method".into(), json!(command.method));
                cdp.insert("params".into(), Value::Object(args.clone()));
                let mut result = self.toolbox.call("browser_cdp", &cdp).await;
                if result.is_error == Some(true) {
                    // Name what the model called, not the tool that carried it.
                    let name = command.tool_name();
                    for block in &mut result.content {
                        if let ContentBlock::Text(t) = block {
                            if let Some(rest) = t.text.strip_prefix("browser_cdp") {
                                t.text = format!("{name}{rest}");
                            }
                        }
                    }
                }
                result
            }
        }
    }

    /// Runs a tool call (the name is known, see [`Gateway::knows`]) and logs it.
    pub(crate) async fn call(
        &self,
        name: &str,
        args: &JsonObject,
        peer: Option<&Peer<RoleServer>>,
    ) -> CallToolResult {
        let started = Instant::now();
        let (result, note) = self.dispatch(name, args, peer).await;
        self.follow_page_tools().await;
        let failed = result.is_error == Some(true);
        let outcome = if note.refused {
            Outcome::Refused
        } else if failed {
            Outcome::Error
        } else {
            Outcome::Ok
        };
        let error = failed.then(|| first_text(&result)).flatten();
        self.log(name, note, outcome, error, started);
        crate::tools::for_host(result, self.structured_content)
    }

    fn log(
        &self,
        tool: &str,
        note: Note,
        outcome: Outcome,
        error: Option<String>,
        started: Instant,
    ) {
        self.audit.append(&AuditRecord {
            time: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            tool: tool.to_owned(),
            target: note.target,
            variant: note.variant.map(Access::as_str),
            intent: note.intent,
            outcome,
            error,
            duration_ms: (started.elapsed().as_secs_f64() * 1e6).round() / 1e3,
        });
    }

    async fn dispatch(
        &self,
        name: &str,
        args: &JsonObject,
        peer: Option<&Peer<RoleServer>>,
    ) -> (CallToolResult, Note) {
        if self.meta_tools.iter().any(|t| t.name == name) {
            if name == "proxy" {
                return self.proxy(args).await;
            }
            if name == "retrieve_tools" {
                return (self.retrieve(args, peer).await, Note::default());
            }
            if name == "describe_tool" {
                return self.describe(args);
            }
            if let Some(variant) = Access::of_call_tool(name) {
                return self.intent_call(variant, args).await;
            }
        }
        if self.exposure.direct() && self.toolbox.knows(name) {
            let note = Note {
                target: page_tool_target(name, args),
                ..Note::default()
            };
            return (self.toolbox.call(name, args).await, note);
        }
        // A tool --dynamic registered.
        self.pool.lock().unwrap().touch(name);
        let note = Note {
            target: Some(name.to_owned()),
            ..Note::default()
        };
        match self.resolve(name) {
            Some(target) => (self.run(&target, args).await, note),
            None => (error(format!("unknown tool {name}")), note),
        }
    }

    async fn intent_call(&self, variant: Access, args: &JsonObject) -> (CallToolResult, Note) {
        let mut note = Note {
            variant: Some(variant),
            ..Note::default()
        };
        let call = match intent::parse(variant, args) {
            Ok(call) => call,
            Err(message) => return (error(message), note),
        };
        note.target = Some(call.name.clone());
        note.intent = Some(call.intent.clone());
        let tool = variant.call_with();
        let Some(target) = self.resolve(&call.name) else {
            return (
                error(format!(
                    "{tool}: no tool or CDP command named {}; find one with retrieve_tools",
                    call.name
                )),
                note,
            );
        };
        let access = match &target {
            Target::Bridge(t) => Access::from_annotations(t.annotations.as_ref()),
            Target::Cdp(c) => c.access,
            Target::Page(_) => Access::Destructive,
        };
        if let Err(refusal) = intent::check(variant, access, &call.name) {
            note.refused = true;
            return (error(format!("{tool}: {refusal}")), note);
        }
        (self.run(&target, &call.args).await, note)
    }

    async fn retrieve(&self, args: &JsonObject, peer: Option<&Peer<RoleServer>>) -> CallToolResult {
        if let Some(unknown) = args.keys().find(|k| *k != "query" && *k != "limit") {
            return error(format!(
                "retrieve_tools: unknown parameter \"{unknown}\"; it takes query and limit"
            ));
        }
        let Some(query) = args
            .get("query")
            .and_then(Value::as_str)
            .filter(|q| !q.trim().is_empty())
        else {
            return error(
                "retrieve_tools: \"query\" (what you want to do, in words) is required".into(),
            );
        };
        let limit = match args.get("limit").filter(|v| !v.is_null()) {
            None => RETRIEVE_DEFAULT,
            Some(v) => match v.as_u64() {
                Some(l) if (1..=RETRIEVE_MAX).contains(&l) => l,
                _ => {
                    return error(format!(
                        "retrieve_tools: \"limit\" must be an integer from 1 to {RETRIEVE_MAX}"
                    ))
                }
            },
        };
        // On a blocking thread: with a model, a search is a forward pass of some milliseconds.
        let index = Arc::clone(&self.index);
        let owned = query.to_owned();
        let hits = match tokio::task::spawn_blocking(move || {
            index.read().unwrap().search(&owned, limit as usize)
        })
        .await
        {
            Ok(hits) => hits,
            Err(e) => return error(format!("retrieve_tools: the search failed: {e}")),
        };
        let mut hits_json: Vec<Value> = hits
            .iter()
            .map(|h| serde_json::to_value(h).expect("hits serialize"))
            .collect();
        let mut answer = json!({"query": query});
        if let Some(dynamic) = self.dynamic {
            let listed: Vec<String> = self.tools().iter().map(|t| t.name.to_string()).collect();
            let mut registered = Vec::new();
            for (hit, hit_json) in hits.iter().zip(hits_json.iter_mut()).take(dynamic.top_k) {
                // A page tool is called through browser_call_page_tool, never registered: its
                // name is the page's to choose, and the page may drop it at any moment.
                if hit.name.starts_with(PAGE_PREFIX) {
                    continue;
                }
                let tool_name = dynamic_name(&hit.name);
                hit_json["registered_as"] = json!(tool_name);
                let already_static =
                    listed.contains(&tool_name) && !self.pool.lock().unwrap().contains(&tool_name);
                if !already_static {
                    registered.push(tool_name);
                }
            }
            let changed = self.pool.lock().unwrap().register(&registered);
            if changed {
                if let Some(peer) = peer {
                    if let Err(e) = peer.notify_tool_list_changed().await {
                        tracing::warn!(error = %e, "sending tools/list_changed failed");
                    }
                }
            }
            answer["registered"] = json!(registered);
        }
        answer["hits"] = Value::Array(hits_json);
        answer["how_to_call"] = json!(if self.dynamic.is_some() {
            "The top hits are now tools of their own (registered_as); or call any hit with its \
             call_with variant: {\"name\": <name>, \"args\": {...}}. describe_tool gives the \
             full schema."
        } else {
            "Call a hit with its call_with variant: {\"name\": <name>, \"args\": {...}}. \
             describe_tool gives the full schema."
        });
        if hits.is_empty() {
            answer["note"] = json!("nothing matched; try other words, e.g. the DevTools domain (Network, DOM, Page, Runtime)");
        }
        CallToolResult::success(vec![ContentBlock::text(answer.to_string())])
    }

    fn describe(&self, args: &JsonObject) -> (CallToolResult, Note) {
        let Some(name) = args
            .get("name")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
        else {
            return (
                error("describe_tool: \"name\" is required".into()),
                Note::default(),
            );
        };
        let note = Note {
            target: Some(name.to_owned()),
            ..Note::default()
        };
        let described = match self.resolve(name) {
            Some(Target::Bridge(tool)) => retrieve::describe_tool(&tool),
            Some(Target::Cdp(command)) => retrieve::describe_cdp(command),
            Some(Target::Page(tool)) => retrieve::describe_page_tool(&tool),
            None => {
                return (
                    error(format!(
                        "describe_tool: no tool or CDP command named {name}; find one with retrieve_tools"
                    )),
                    note,
                )
            }
        };
        (
            CallToolResult::success(vec![ContentBlock::text(described.to_string())]),
            note,
        )
    }

    /// Every tool the proxy reaches: the browser tools, then every CDP command.
    fn proxied_tools(&self) -> Vec<(String, Value)> {
        let mut items: Vec<(String, Value)> = self
            .toolbox
            .definitions()
            .iter()
            .map(|t| {
                (
                    t.name.to_string(),
                    serde_json::to_value(t).expect("tools serialize"),
                )
            })
            .collect();
        for command in &catalog().commands {
            let tool = cdp_tool(command, command.tool_name());
            items.push((
                command.tool_name(),
                serde_json::to_value(tool).expect("tools serialize"),
            ));
        }
        items
    }

    async fn proxy(&self, args: &JsonObject) -> (CallToolResult, Note) {
        let request = match proxy::parse(args) {
            Ok(r) => r,
            Err(message) => return (error(format!("proxy: {message}")), Note::default()),
        };
        let note = Note {
            target: Some(format!(
                "{} {}{}",
                request.action.as_str(),
                request.kind.as_str(),
                request
                    .path
                    .as_deref()
                    .map(|p| format!(" {p}"))
                    .unwrap_or_default()
            )),
            ..Note::default()
        };
        let path = request.path.clone().unwrap_or_default();
        let not_found = |what: &str| {
            error(format!(
                "proxy: no {what} {path}; see {{\"action\": \"list\", \"type\": \"{what}\"}}"
            ))
        };
        let result = match (request.action, request.kind) {
            (Action::List, kind) => {
                let items = match kind {
                    Kind::Tool => self.proxied_tools(),
                    Kind::Resource => self.resource_items().await,
                    Kind::Prompt => prompts::list()
                        .into_iter()
                        .map(|p| (p["name"].as_str().unwrap_or_default().to_owned(), p))
                        .collect(),
                };
                let (page, total) = proxy::page(items, &request);
                CallToolResult::success(vec![proxy::query_result(
                    Action::List,
                    kind,
                    None,
                    &Value::Array(page),
                    Some((total, request.offset, request.limit)),
                )])
            }
            (Action::Info, kind) => {
                let found = match kind {
                    Kind::Tool => self.proxied_tool(&path),
                    Kind::Resource => self.resource_info(&path).await,
                    Kind::Prompt => prompts::list()
                        .into_iter()
                        .find(|p| p["name"] == path.as_str()),
                };
                match found {
                    Some(data) => CallToolResult::success(vec![proxy::query_result(
                        Action::Info,
                        kind,
                        Some(&path),
                        &data,
                        None,
                    )]),
                    None => not_found(kind.as_str()),
                }
            }
            (Action::Call, Kind::Tool) => match self.resolve(&path) {
                Some(target) => {
                    let result = self.run(&target, &request.args).await;
                    let mut annotated =
                        CallToolResult::success(proxy::annotate_tool_call(result.content, &path));
                    annotated.is_error = result.is_error;
                    // The answer's fields stay beside its text, as the tool gave them, and
                    // so does what says whether a host gets them (tools/results.rs).
                    annotated.structured_content = result.structured_content;
                    annotated.meta = result.meta;
                    annotated
                }
                None => not_found("tool"),
            },
            (Action::Call, Kind::Resource) => {
                match resources::read(self.toolbox.link(), &path).await {
                    Ok(contents) => CallToolResult::success(proxy::resource_call(contents, &path)),
                    Err(ReadError::NotFound(m) | ReadError::Failed(m)) => {
                        error(format!("proxy: {m}"))
                    }
                }
            }
            (Action::Call, Kind::Prompt) => match prompts::get(&path, &request.args) {
                Ok(prompt) => CallToolResult::success(vec![proxy::prompt_call(&prompt, &path)]),
                Err(m) => error(format!("proxy: {m}")),
            },
        };
        (result, note)
    }

    fn proxied_tool(&self, name: &str) -> Option<Value> {
        let tool = match self.resolve(name)? {
            Target::Bridge(tool) => tool,
            Target::Cdp(command) => cdp_tool(command, command.tool_name()),
            Target::Page(tool) => return Some(retrieve::describe_page_tool(&tool)),
        };
        Some(serde_json::to_value(tool).expect("tools serialize"))
    }

    /// Resources then templates, keyed by URI (template) for paging and filtering.
    async fn resource_items(&self) -> Vec<(String, Value)> {
        let mut items: Vec<(String, Value)> = resources::list(self.toolbox.link())
            .await
            .into_iter()
            .map(|r| (r["uri"].as_str().unwrap_or_default().to_owned(), r))
            .collect();
        items.extend(
            resources::templates()
                .into_iter()
                .map(|t| (t["uriTemplate"].as_str().unwrap_or_default().to_owned(), t)),
        );
        items
    }

    async fn resource_info(&self, path: &str) -> Option<Value> {
        if let Some((_, item)) = self
            .resource_items()
            .await
            .into_iter()
            .find(|(k, _)| k == path)
        {
            return Some(item);
        }
        // A tab the list did not show (the browser was slow): describe it from its template.
        let kind = resources::BrowserResource::parse(path)?;
        let template = resources::templates().into_iter().find(|t| match kind {
            resources::BrowserResource::Snapshot(_) => t["name"] == "tab_snapshot",
            resources::BrowserResource::Screenshot(_) => t["name"] == "tab_screenshot",
            resources::BrowserResource::Tabs => false,
        })?;
        Some(json!({
            "uri": path,
            "name": template["name"],
            "description": template["description"],
            "mimeType": template["mimeType"],
        }))
    }

    pub(crate) async fn list_resources(&self) -> Vec<Value> {
        resources::list(self.toolbox.link()).await
    }

    pub(crate) async fn read_resource(
        &self,
        uri: &str,
    ) -> Result<Vec<ResourceContents>, ReadError> {
        let started = Instant::now();
        let result = resources::read(self.toolbox.link(), uri).await;
        let error = match &result {
            Ok(_) => None,
            Err(ReadError::NotFound(m) | ReadError::Failed(m)) => Some(m.clone()),
        };
        let note = Note {
            target: Some(uri.to_owned()),
            ..Note::default()
        };
        let outcome = if error.is_some() {
            Outcome::Error
        } else {
            Outcome::Ok
        };
        self.log("resources/read", note, outcome, error, started);
        result
    }

    pub(crate) fn get_prompt(&self, name: &str, args: &JsonObject) -> Result<Value, String> {
        let started = Instant::now();
        let result = prompts::get(name, args);
        let note = Note {
            target: Some(name.to_owned()),
            ..Note::default()
        };
        let outcome = if result.is_ok() {
            Outcome::Ok
        } else {
            Outcome::Error
        };
        self.log("prompts/get", note, outcome, result.clone().err(), started);
        result
    }
}

/// Embeds the index's entries on a thread of its own, then makes the index hybrid: the bridge
/// answers at once (with BM25 alone for the first seconds) instead of waiting for the model to
/// read the whole catalogue. The vectors are computed without holding the index; only the
/// attaching (every vector then in the embedder's cache) takes its lock.
fn attach_in_background(index: Arc<RwLock<ToolIndex>>, embedder: Arc<Embedder>) {
    let spawned = std::thread::Builder::new()
        .name("embed-catalogue".into())
        .spawn(move || {
            let started = Instant::now();
            let texts = index.read().unwrap().semantic_texts();
            let attached = embedder
                .documents(&texts)
                .and_then(|_| index.write().unwrap().attach(Arc::clone(&embedder)));
            match attached {
                Ok(()) => tracing::info!(
                    entries = texts.len(),
                    seconds = started.elapsed().as_secs_f64(),
                    "retrieve_tools: embedding model ready, ranking is hybrid"
                ),
                Err(e) => {
                    tracing::error!(error = %e, "retrieve_tools: embedding the catalogue failed; BM25 alone")
                }
            }
        });
    if let Err(e) = spawned {
        tracing::error!(error = %e, "retrieve_tools: no thread for the embedding model; BM25 alone");
    }
}

/// `Page.navigate` from `cdp:Page.navigate` or `cdp_Page_navigate`.
fn cdp_method(name: &str) -> Option<String> {
    if let Some(method) = name.strip_prefix(CDP_PREFIX) {
        return Some(method.to_owned());
    }
    let rest = name.strip_prefix(DYNAMIC_CDP_PREFIX)?;
    let (domain, method) = rest.split_once('_')?;
    Some(format!("{domain}.{method}"))
}

/// The tool name a hit is registered under.
fn dynamic_name(hit: &str) -> String {
    match hit.strip_prefix(CDP_PREFIX) {
        Some(method) => format!("{DYNAMIC_CDP_PREFIX}{}", method.replacen('.', "_", 1)),
        None => hit.to_owned(),
    }
}

fn first_text(result: &CallToolResult) -> Option<String> {
    result.content.iter().find_map(|c| {
        c.as_text()
            .map(|t| t.text.lines().next().unwrap_or_default().to_owned())
    })
}

/// The audit log's `target` of a call to one of a page's own tools (WebMCP): `page-tool:<name>`,
/// the name cut at 128 characters; the arguments are never logged.
fn page_tool_target(tool: &str, args: &JsonObject) -> Option<String> {
    if tool != "browser_call_page_tool" {
        return None;
    }
    let name: String = args.get("name")?.as_str()?.chars().take(128).collect();
    Some(format!("page-tool:{name}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cdp_names_round_trip_between_forms() {
        assert_eq!(
            cdp_method("cdp:Page.navigate").as_deref(),
            Some("Page.navigate")
        );
        assert_eq!(
            cdp_method("cdp_Page_navigate").as_deref(),
            Some("Page.navigate")
        );
        assert_eq!(cdp_method("browser_click"), None);
        assert_eq!(dynamic_name("cdp:Page.navigate"), "cdp_Page_navigate");
        assert_eq!(dynamic_name("browser_click"), "browser_click");
    }

    #[test]
    fn each_mode_lists_its_meta_tools() {
        let names = |e| {
            meta_tools(e)
                .iter()
                .map(|t| t.name.to_string())
                .collect::<Vec<_>>()
        };
        assert!(names(Exposure::Direct).is_empty());
        assert_eq!(names(Exposure::Proxy), ["proxy"]);
        assert_eq!(
            names(Exposure::Retrieve),
            [
                "retrieve_tools",
                "describe_tool",
                "call_tool_read",
                "call_tool_write",
                "call_tool_destructive"
            ]
        );
        assert_eq!(names(Exposure::All).len(), 6);
    }
}
