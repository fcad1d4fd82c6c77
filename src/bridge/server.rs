//! The MCP server the host talks to over stdio: `initialize`, `tools/list` and `tools/call`.
//!
//! Deliberately thin: the tools and their results live in [`super::tools`], the relay in
//! [`super::relay_client`]. The one decision made here is which failures are protocol errors:
//! only a call to a tool that does not exist. Everything else is a tool result, because hosts
//! hide protocol error messages from the model.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};

use super::relay_client::RelayClient;
use super::tools::Toolbox;

/// What the host reads once, at `initialize`.
const INSTRUCTIONS: &str = "Drives the person's own web browser through an mcp-relay extension. \
Start with browser_snapshot (or browser_screenshot) to see the page, act with browser_navigate, \
browser_click, browser_type and browser_hover, and use browser_tabs for tabs. If a tool says no \
browser is connected, call browser_status; with several browsers, pick one with browser_list and \
browser_connect.";

/// The rmcp handler. Cloned per session by rmcp; the clones share the relay connection.
#[derive(Clone)]
pub struct BrowserServer {
    /// Kept so the server owns the connection it advertises; tools use it through `toolbox`.
    relay: RelayClient,
    toolbox: Arc<Toolbox>,
}

impl BrowserServer {
    pub fn new(relay: RelayClient, toolbox: Arc<Toolbox>) -> BrowserServer {
        BrowserServer { relay, toolbox }
    }
}

impl ServerHandler for BrowserServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(
                Implementation::new("mcp-relay", env!("CARGO_PKG_VERSION"))
                    .with_title("mcp-relay browser bridge")
                    .with_description(format!(
                        "Browser tools through the relay at {}",
                        self.relay.relay_url()
                    )),
            )
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(
            self.toolbox.definitions().to_vec(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if !self.toolbox.knows(&request.name) {
            return Err(ErrorData::invalid_params(
                format!("unknown tool {}; tools/list shows the tools", request.name),
                None,
            ));
        }
        let args = request.arguments.unwrap_or_default();
        let result = self.toolbox.call(&request.name, &args).await;
        if result.is_error == Some(true) {
            tracing::info!(tool = %request.name, "tool call failed");
        }
        Ok(result.into())
    }
}
