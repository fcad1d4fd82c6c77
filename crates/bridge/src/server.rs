//! The MCP server the host talks to over stdio: `initialize`, tools, resources and prompts.
//!
//! Deliberately thin: what is listed and how calls run lives in [`super::gateway`], the relay
//! in [`super::relay_client`]. The decisions made here are which failures are protocol
//! errors (a call to a tool that does not exist, an unknown resource or prompt, bad prompt
//! arguments, and a `requestState` the bridge did not issue for the call) and what a host of
//! MCP 2026-07-28 is answered: such a host sends no `initialize`, so its name comes with each
//! request, and a hand-off may answer it "input required" (tools/rounds.rs). Tool failures are
//! tool results, because hosts hide protocol error messages from the model.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, GetPromptRequestParams, GetPromptResponse,
    GetPromptResult, Implementation, InitializeRequestParams, InitializeResult, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
    ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::json;

use super::gateway::{Exposure, Gateway};
use super::link::BrowserLink;
use super::relay_client::Closer;
use super::resources::ReadError;
use super::tools::{Round, Rounds};

/// What the host reads once, at `initialize`.
const INSTRUCTIONS: &str = "Drives the person's own web browser through an mcp-relay extension. \
Start with browser_snapshot (an outline whose elements carry refs such as e5), browser_find (only \
the lines that match, with their path) or browser_take_screenshot to see the page, act with \
browser_navigate, browser_click, browser_type, browser_fill_form, browser_select_option, \
browser_press_key, browser_hover, browser_drag, browser_drop and browser_file_upload (naming \
elements by target: a ref or a CSS selector), wait for text with browser_wait_for, answer \
alert/confirm/prompt dialogs with browser_handle_dialog, read console errors and network requests \
with browser_console_messages and browser_network_requests, and use browser_tabs for tabs. Files \
the page downloads are saved where this server runs (browser_downloads lists them). If a \
ref is refused, take a new snapshot. If a tool says no browser is connected, call browser_status; \
with several browsers, pick one with browser_list and browser_connect. If a tool says the \
browser's owner has not allowed you yet, tell the person to click Allow in the extension.";
const PROXY_INSTRUCTIONS: &str =
    " All of these, every Chrome DevTools command (cdp:Domain.method), \
the tab resources and the prompts are reached through the proxy tool: start with \
{\"action\": \"list\", \"type\": \"tool\", \"filter_server\": \"browser_\"}.";
const RETRIEVE_INSTRUCTIONS: &str = " Find these tools and any Chrome DevTools command with \
retrieve_tools, then call a hit with the call_tool_* variant it names (call_with).";

/// The rmcp handler. Cloned per session by rmcp; the clones share the gateway.
#[derive(Clone)]
pub struct BrowserServer {
    gateway: Arc<Gateway>,
    /// The way to the browser, told the host's name at `initialize`.
    link: Arc<dyn BrowserLink>,
    /// For a session the relay hosts: ends its relay client (and drops the relay's
    /// bookkeeping) once the last clone is gone.
    _end: Option<Arc<SessionEnd>>,
    /// Hand-offs in rounds for hosts of MCP 2026-07-28 (the stdio bridge only: a hosted
    /// request of that protocol has a server of its own, gone with its hand-off by the next
    /// round, so it waits in its call as for any host).
    rounds: Option<Arc<Rounds>>,
}

impl BrowserServer {
    pub(crate) fn new(gateway: Arc<Gateway>, link: Arc<dyn BrowserLink>) -> BrowserServer {
        BrowserServer {
            gateway,
            link,
            _end: None,
            rounds: None,
        }
    }

    /// Answers a host of MCP 2026-07-28 waiting for the person in rounds of at most `wait`.
    pub(crate) fn with_rounds(mut self, wait: std::time::Duration) -> BrowserServer {
        self.rounds = Some(Arc::new(Rounds::new(wait)));
        self
    }

    /// A host of MCP 2026-07-28 sends no `initialize`: its name comes in each request's
    /// `_meta`, and the browser's owner is told it as for any other host.
    fn introduce_inline(&self, context: &RequestContext<RoleServer>) {
        if context.peer.peer_info().is_some() {
            return;
        }
        if let Some(client) = context.client_info() {
            self.link.introduce(&client.name);
        }
    }

    /// The round of a host call, for a host of MCP 2026-07-28 where the bridge has rounds; a
    /// `requestState` that does not open is refused before the call runs.
    fn round(
        &self,
        request: &mut CallToolRequestParams,
        args: &Arc<rmcp::model::JsonObject>,
        context: &RequestContext<RoleServer>,
    ) -> Result<Option<Arc<Round>>, ErrorData> {
        let Some(rounds) = &self.rounds else {
            return Ok(None);
        };
        if !context
            .protocol_version()
            .is_some_and(|version| version >= ProtocolVersion::V_2026_07_28)
        {
            return Ok(None);
        }
        // An empty `elicitation` capability means form mode, as the specification says.
        let can_ask = context
            .client_capabilities()
            .and_then(|capabilities| capabilities.elicitation)
            .is_some_and(|elicitation| elicitation.form.is_some() || elicitation.url.is_none());
        Round::begin(
            Arc::clone(rounds),
            &request.name,
            Arc::clone(args),
            request.request_state.as_deref(),
            request.input_responses.take(),
            can_ask,
        )
        .map(|round| Some(Arc::new(round)))
        .map_err(|refused| ErrorData::invalid_params(refused, None))
    }

    /// Ends `closer`'s relay client, and drops `keep`, when the server (every clone) is
    /// dropped.
    pub(crate) fn ending_with(
        mut self,
        closer: Closer,
        keep: Option<Box<dyn std::any::Any + Send + Sync>>,
    ) -> BrowserServer {
        self._end = Some(Arc::new(SessionEnd {
            _closer: closer,
            _keep: keep,
        }));
        self
    }
}

/// What a hosted session lets go of when it ends.
struct SessionEnd {
    _closer: Closer,
    _keep: Option<Box<dyn std::any::Any + Send + Sync>>,
}

fn from_json<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> Result<T, ErrorData> {
    serde_json::from_value(value)
        .map_err(|e| ErrorData::internal_error(format!("building a result: {e}"), None))
}

impl ServerHandler for BrowserServer {
    /// Answers as rmcp does, and passes the host's name on: the browser's owner is asked about
    /// "Claude Desktop", not about an anonymous bridge.
    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        let name = request.client_info.name.trim();
        tracing::info!(host = name, "the MCP host introduced itself");
        self.link.introduce(name);
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    fn get_info(&self) -> ServerConfig {
        let capabilities: ServerCapabilities = serde_json::from_value(json!({
            "tools": {"listChanged": self.gateway.dynamic()},
            "resources": {},
            "prompts": {},
        }))
        .expect("capabilities deserialize");
        let mut instructions = INSTRUCTIONS.to_owned();
        match self.gateway.exposure() {
            Exposure::Direct => {}
            Exposure::Proxy => instructions.push_str(PROXY_INSTRUCTIONS),
            Exposure::Retrieve => instructions.push_str(RETRIEVE_INSTRUCTIONS),
            Exposure::All => {
                instructions.push_str(PROXY_INSTRUCTIONS);
                instructions.push_str(RETRIEVE_INSTRUCTIONS);
            }
        }
        ServerConfig::new(capabilities)
            .with_server_info(
                Implementation::new("mcp-relay", env!("CARGO_PKG_VERSION"))
                    .with_title("mcp-relay browser bridge")
                    .with_description(format!(
                        "Browser tools through the relay at {}",
                        self.gateway.relay_url()
                    )),
            )
            .with_instructions(instructions)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.gateway.tools()))
    }

    async fn call_tool(
        &self,
        mut request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if !self.gateway.knows(&request.name) {
            return Err(ErrorData::invalid_params(
                format!("unknown tool {}; tools/list shows the tools", request.name),
                None,
            ));
        }
        self.introduce_inline(&context);
        let args = Arc::new(request.arguments.take().unwrap_or_default());
        let round = self.round(&mut request, &args, &context)?;
        let scope = crate::tools::CallScope {
            peer: Some(context.peer.clone()),
            progress_token: context.meta.get_progress_token(),
            cancelled: context.ct.clone(),
            round: round.clone(),
        };
        let result = crate::tools::in_scope(
            scope,
            self.gateway.call(&request.name, &args, Some(&context.peer)),
        )
        .await;
        if let Some(input) = round.and_then(|round| round.take_input_required()) {
            return Ok(CallToolResponse::InputRequired(input));
        }
        if result.is_error == Some(true) {
            tracing::info!(tool = %request.name, "tool call failed");
        }
        Ok(result.into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        self.introduce_inline(&context);
        from_json(json!({"resources": self.gateway.list_resources().await}))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        from_json(json!({"resourceTemplates": super::resources::templates()}))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        self.introduce_inline(&context);
        match self.gateway.read_resource(&request.uri).await {
            Ok(contents) => {
                let result: ReadResourceResult = from_json(json!({ "contents": contents }))?;
                Ok(result.into())
            }
            Err(ReadError::NotFound(m)) => Err(ErrorData::resource_not_found(m, None)),
            Err(ReadError::Failed(m)) => Err(ErrorData::internal_error(m, None)),
        }
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        from_json(json!({"prompts": super::prompts::list()}))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        match self.gateway.get_prompt(&request.name, &args) {
            Ok(prompt) => {
                let result: GetPromptResult = from_json(prompt)?;
                Ok(result.into())
            }
            Err(m) => Err(ErrorData::invalid_params(m, None)),
        }
    }
}
