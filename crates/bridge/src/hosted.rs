//! The tools as the relay itself serves them, one [`BrowserServer`] per MCP session of its
//! Streamable HTTP endpoint.
//!
//! Same tool code, same gateway, same relay client as `mcp-relay bridge`: only the route to
//! the relay differs ([`Route::InProcess`] instead of a WebSocket), and nothing is written to
//! stdout. The relay builds one with [`server`] when a host initializes a session, with the
//! token that session authenticated with, and the session's relay client lives exactly as long
//! as the rmcp session: [`BrowserServer`] ends it when the last clone is dropped.

use std::sync::Arc;
use std::time::Duration;

use clap::ValueEnum;

use crate::gateway::{Exposure, Gateway};
use crate::link::BrowserLink;
use crate::pipe::Dialer;
use crate::relay_client::{RelayClient, RelayConfig, Route};
use crate::server::BrowserServer;

/// What one hosted session is served with.
pub struct HostedSession {
    /// The session's bearer token; the in-process MCP session checks it again in
    /// `mcp_handshake`, exactly as for a socket (expiry, role, user).
    pub token: String,
    /// Who the token names (the audit log's `user`).
    pub user_id: String,
    /// The session's `client_id` in `mcp_handshake`, chosen by the relay: what the browser's
    /// owner sees (`connection_opened`) and remembers an Allow or Deny for. The relay makes it
    /// unpredictable and one per session, so no other host or socket shares it.
    pub client_id: String,
    /// Which tools the host sees (`--mcp-tools`, or the session's `?tools=`).
    pub tools: Exposure,
    /// With `retrieve` or `all`: register each search's top K hits as tools and send
    /// `notifications/tools/list_changed` (the session's `?dynamic=K`, as `bridge --dynamic`;
    /// at most 20 are kept, the least recently used go first).
    pub dynamic: Option<u16>,
    /// Opens the in-process MCP session with the relay's hub.
    pub dialer: Arc<dyn Dialer>,
    /// Where the host reaches the tools (the endpoint's URL), for the server's description.
    pub describe: String,
    /// How long a tool call waits for the relay's answer.
    pub request_timeout: Duration,
    /// How long a call waits for the browser's owner to allow this assistant.
    pub approval_wait: Duration,
    /// Largest request the tools send (file uploads); the relay's `--max-message-bytes`.
    pub max_message_bytes: usize,
    /// The relay's audit log (`--mcp-audit-log`), if any; records name the session's user.
    pub audit: Option<AuditFile>,
    /// `--mcp-embedding-model`: the model every session's `retrieve_tools` shares (with its
    /// cache of the catalogue's vectors), or BM25 alone.
    pub embedder: Option<Arc<crate::embed::Embedder>>,
    /// `--mcp-code-execution`: offer `code_execution` (a sandboxed script whose only way out is
    /// this session's own tools) within these bounds (`--mcp-code-wall-time`, …).
    pub code_execution: Option<crate::CodeLimits>,
    /// `--mcp-structured-content`: results that carry page text keep their fields in
    /// `structuredContent` (off by default: hosts show a model those in place of the text).
    pub structured_content: bool,
    /// Dropped when the session ends (the relay's bookkeeping of who owns it).
    pub keep: Option<Box<dyn std::any::Any + Send + Sync>>,
}

/// An audit log file shared by every hosted session (one JSON line per tool call, resource
/// read and prompt get, as `bridge --audit-log` writes, plus the session's `user`).
#[derive(Clone)]
pub struct AuditFile(crate::audit::AuditLog);

impl AuditFile {
    /// Opens `path` for appending.
    pub fn open(path: &std::path::Path) -> std::io::Result<AuditFile> {
        crate::audit::AuditLog::open(path).map(AuditFile)
    }
}

/// Parses a `--tools` mode as `mcp-relay bridge --tools` spells it (`direct`, `proxy`,
/// `retrieve`, `all`), for a query parameter.
pub fn parse_tools(text: &str) -> Result<Exposure, String> {
    Exposure::from_str(text.trim(), true)
        .map_err(|_| format!("unknown tools mode {text:?}: use direct, proxy, retrieve or all"))
}

/// Hands a hosted session a newer token of the same user (checked by the caller).
#[derive(Clone)]
pub struct TokenRefresh(RelayClient);

impl TokenRefresh {
    /// The session's relay client handshakes with `token` from now on (at once if it differs):
    /// a host that refreshed an expiring token keeps its session instead of seeing its tools
    /// fail when the old token's session with the relay ends.
    pub fn refresh(&self, token: &str) {
        self.0.refresh_token(token);
    }
}

/// The MCP server of one hosted session, and the way to give it a fresher token. Its relay
/// client starts dialling at once (the handshake checks the token); the browser is chosen when
/// the first tool needs it.
pub fn server(session: HostedSession) -> (BrowserServer, TokenRefresh) {
    let relay = RelayClient::start(RelayConfig {
        url: session.describe,
        token: session.token,
        client_id: session.client_id,
        route: Route::InProcess(session.dialer),
        request_timeout: session.request_timeout,
        approval_wait: session.approval_wait,
        browser: None,
    });
    let closer = relay.closer();
    let refresh = TokenRefresh(relay.clone());
    let link: Arc<dyn BrowserLink> = Arc::new(relay);
    let audit = match &session.audit {
        Some(AuditFile(log)) => log.for_user(&session.user_id),
        None => crate::audit::AuditLog::disabled(),
    };
    let toolbox =
        crate::tools::Toolbox::new(Arc::clone(&link), crate::tools::DEFAULT_MAX_RESULT_CHARS)
            .with_max_message_bytes(session.max_message_bytes)
            // The relay's server is not the host's machine, and its files are not the host's
            // to read: files travel in results instead.
            .with_files_in_results()
            .with_code_execution(session.code_execution)
            // A script's inner calls are lines of the audit log, as over the bridge.
            .with_audit(audit.clone());
    let gateway = Gateway::new(
        Arc::new(toolbox),
        session.tools,
        session.dynamic.map(|k| crate::gateway::Dynamic {
            top_k: k.into(),
            pool: usize::from(k).max(20),
        }),
        audit,
        session.embedder,
    )
    .with_structured_content(session.structured_content);
    let server = BrowserServer::new(Arc::new(gateway), link).ending_with(closer, session.keep);
    (server, refresh)
}
