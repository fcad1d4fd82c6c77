//! `mcp-relay bridge`: an MCP server over stdio that drives a browser through the relay.
//!
//! MCP hosts (Claude Desktop, Cursor, …) start local servers as subprocesses and speak MCP on
//! their stdin/stdout; they cannot open a WebSocket to the relay themselves. The bridge is that
//! subprocess: it keeps one authenticated socket to the relay's `/mcp` endpoint and turns MCP
//! tool calls into the extension's commands.
//!
//! - [`link`]: the [`link::BrowserLink`] interface the tools use to reach a browser, so they
//!   do not depend on how (the relay's socket here; the relay itself, in process, in
//!   [`hosted`], the tools the relay serves over Streamable HTTP, through a [`pipe`]).
//! - [`relay_client`]: the socket to the relay, the bridge's `BrowserLink` (handshake, request matching, notifications,
//!   reconnecting, returning to the chosen browser).
//! - [`tools`]: the browser tools, one typed input each, how each maps onto an extension
//!   command, and their results as text a model reads, in parts when long.
//! - [`gateway`]: what the host sees by `--tools` mode (direct tools, [`proxy`], retrieval
//!   with [`retrieve`], [`bm25`], [`embed`] (the optional embedding model), [`catalog`] and
//!   [`intent`], [`dynamic`] registration),
//!   plus [`resources`] and [`prompts`], and the [`audit`] log of every call.
//! - [`server`]: the rmcp `ServerHandler` that ties them together.
//! - [`wire`]: the stdout pump that puts the proxy spec's annotations where the spec wants them.
//!
//! Stdout carries MCP frames only; every log line goes to stderr.

// Only what another crate uses is `pub`; the lint keeps it that way.
#![warn(unreachable_pub)]

mod audit;
mod bm25;
mod catalog;
mod dynamic;
mod embed;
mod files;
mod gateway;
pub mod hosted;
mod intent;
mod link;
mod pipe;
mod prompts;
mod proxy;
mod relay_client;
mod resources;
mod retrieve;
mod server;
mod tools;
mod wire;

// What the tests outside this crate use: the retrieval benchmark and the catalog count.
pub use catalog::catalog;
pub use embed::{EmbedError, Embedder, EmbeddingModel};
pub use retrieve::{Fusion, PageTool, ToolIndex};
pub use tools::definitions as tool_definitions;
pub use tools::CodeLimits;
// What the relay's Streamable HTTP endpoint builds its sessions from (see `hosted`).
pub use gateway::Exposure;
pub use pipe::{Dialer, FramePipe};
pub use server::BrowserServer;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use base64::Engine;
use clap::Args;
use rmcp::ServiceExt;

use mcp_relay_wire::units::{parse_bytes, parse_duration};
use relay_client::{RelayClient, RelayConfig};

/// Options of `mcp-relay bridge`.
#[derive(Debug, Clone, Args)]
pub struct BridgeArgs {
    /// The relay's MCP endpoint, e.g. `wss://relay.example.com/mcp` or `ws://127.0.0.1:8080/mcp`
    /// (`/mcp` is appended when the URL has no path). Without it, the token's `connection_url`
    /// claim is used.
    #[arg(long, env = "MCP_RELAY_URL")]
    pub relay: Option<String>,

    /// Access token (JWT) for the MCP side, from `mcp-relay token --role mcp` or the
    /// `serve --dev` banner. Prefer the environment variable: host configs and the process list
    /// are easier to leak than the environment.
    #[arg(long, env = "MCP_RELAY_TOKEN", hide_env_values = true)]
    pub token: String,

    /// Which browser to drive: an extension id (`ext-…`) or the browser name set in the
    /// extension's options (case-insensitive). Without it, the only connected browser is used;
    /// with several, the model picks one with `browser_list` and `browser_connect`.
    #[arg(long, env = "MCP_RELAY_BROWSER")]
    pub browser: Option<String>,

    /// Extra PEM CA certificate(s) to trust for wss, e.g. `certs/ca.pem` from
    /// `mcp-relay dev-certs`. Public CAs are always trusted; verification is never switched off.
    #[arg(long, env = "MCP_RELAY_CA_CERT")]
    pub ca_cert: Option<PathBuf>,

    /// Longest text result, in characters (e.g. `40000` or `100K`): a longer one comes in
    /// parts cut at line boundaries, each saying where it is and how to read on. Images are
    /// never cut. `0` means no limit. (`--max-result-bytes` is its former name.)
    #[arg(
        long,
        visible_alias = "max-result-bytes",
        env = "MCP_RELAY_MAX_RESULT_BYTES",
        default_value = "40000",
        value_parser = parse_bytes
    )]
    pub max_result_chars: usize,

    /// Where files the page downloads are saved, on this machine (default:
    /// `mcp-relay-downloads` in the system's temporary directory). An existing file is never
    /// replaced: a new name is chosen instead.
    #[arg(long, env = "MCP_RELAY_DOWNLOADS_DIR")]
    pub downloads_dir: Option<PathBuf>,

    /// Largest request the bridge sends (e.g. `32MiB`, the relay's default): file uploads
    /// carry their bytes in one request, and one above this is refused with a clear error
    /// instead of being cut off by the relay. Keep it at or below the relay's
    /// `--max-message-bytes`. `0` means no limit.
    #[arg(long, env = "MCP_RELAY_BRIDGE_MAX_MESSAGE_BYTES", default_value = "32MiB", value_parser = parse_bytes)]
    pub max_message_bytes: usize,

    /// How long a tool call waits for the relay's answer (e.g. `90s`). Keep it above the relay's
    /// own --request-timeout (60 s by default) so the relay's clearer timeout error wins. (The
    /// variable is not serve's MCP_RELAY_REQUEST_TIMEOUT, so one environment can hold both.)
    #[arg(long, env = "MCP_RELAY_BRIDGE_REQUEST_TIMEOUT", default_value = "75s", value_parser = parse_duration)]
    pub request_timeout: Duration,
    /// How long `browser_navigate` waits for a page to open and be parsed (e.g. `60s`; 1s to
    /// 5m) before it stops the navigation and says why (a server that did not answer, the
    /// browser waiting for a free connection to the host). Keep it under the relay's
    /// --request-timeout (60 s by default). A parsed page whose load event a slow image or
    /// script holds is answered 5 s after it was parsed, whatever this is. Unset, the
    /// extension's own 30 s applies (and navigations carry no timeout, as other clients' do).
    #[arg(long, env = "MCP_RELAY_BRIDGE_NAVIGATION_TIMEOUT", value_parser = parse_navigation_timeout)]
    pub navigation_timeout: Option<Duration>,
    /// How long a tool call waits for the browser's owner to allow this assistant in the
    /// extension (it refuses with -32010 until then) before the model is told to ask them.
    #[arg(long, env = "MCP_RELAY_BRIDGE_APPROVAL_WAIT", default_value = "20s", value_parser = parse_duration)]
    pub approval_wait: Duration,

    /// Which tools the host sees: `direct` (one tool per browser action), `proxy` (the single
    /// `proxy` tool), `retrieve` (`retrieve_tools`, `describe_tool`, `call_tool_read`/`_write`/
    /// `_destructive`) or `all`.
    #[arg(
        long,
        env = "MCP_RELAY_BRIDGE_TOOLS",
        value_enum,
        default_value = "direct"
    )]
    pub tools: gateway::Exposure,

    /// With `--tools retrieve|all`: each `retrieve_tools` call also registers its top K hits as
    /// real tools and sends `notifications/tools/list_changed`.
    #[arg(long, env = "MCP_RELAY_BRIDGE_DYNAMIC", value_parser = clap::value_parser!(u16).range(1..=50))]
    pub dynamic: Option<u16>,

    /// With `--dynamic`: at most this many registered tools; the least recently used go first.
    #[arg(long, env = "MCP_RELAY_BRIDGE_DYNAMIC_POOL", default_value = "20", value_parser = clap::value_parser!(u16).range(1..=500))]
    pub dynamic_pool: u16,

    /// Send each result's fields in MCP's `structuredContent` even beside page text (an
    /// outline, an evaluated string, console lines). Off by default because Claude Code, VS
    /// Code, OpenCode and Codex give their model `structuredContent` in place of the text when
    /// both are present, so the model would never read the page; turn it on for clients that
    /// read fields and show the text to no model. Short answers keep their fields either way.
    #[arg(long, env = "MCP_RELAY_BRIDGE_STRUCTURED_CONTENT")]
    pub structured_content: bool,

    /// Offer `code_execution`: a JavaScript async function body run in an embedded sandbox
    /// (QuickJS) whose only way out is this session's own tools; and, in the same sandbox,
    /// Playwright MCP's `browser_run_code_unsafe` (Playwright code, `async (page) => { … }`,
    /// its `page` made of those tools). Off by default.
    #[arg(long, env = "MCP_RELAY_BRIDGE_CODE_EXECUTION")]
    pub code_execution: bool,

    /// With `--code-execution`: a script's longest run, waiting for tools included.
    #[arg(long, env = "MCP_RELAY_BRIDGE_CODE_WALL_TIME", default_value = "60s", value_parser = parse_duration)]
    pub code_wall_time: Duration,

    /// With `--code-execution`: a script's longest time running script (not waiting for tools).
    #[arg(long, env = "MCP_RELAY_BRIDGE_CODE_CPU_TIME", default_value = "10s", value_parser = parse_duration)]
    pub code_cpu_time: Duration,

    /// With `--code-execution`: the script engine's memory limit (e.g. `64MiB`).
    #[arg(long, env = "MCP_RELAY_BRIDGE_CODE_MEMORY", default_value = "64MiB", value_parser = parse_bytes)]
    pub code_memory: usize,

    /// With `--code-execution`: the most tool calls one script may make.
    #[arg(long, env = "MCP_RELAY_BRIDGE_CODE_MAX_CALLS", default_value = "100")]
    pub code_max_calls: usize,

    /// With `--code-execution`: the most bytes of tool results handed to one script (text plus
    /// structured data as JSON).
    #[arg(long, env = "MCP_RELAY_BRIDGE_CODE_MAX_BYTES", default_value = "5MB", value_parser = parse_bytes)]
    pub code_max_bytes: usize,

    /// While a call waits for the person (`browser_request_human`, up to 30 minutes), a progress
    /// notification this often (e.g. `15s`) to a host that sent a `progressToken`, so a host
    /// that resets its request timeout on progress (60 s in the TypeScript SDK) keeps waiting.
    #[arg(long, env = "MCP_RELAY_BRIDGE_PROGRESS_INTERVAL", default_value = "15s", value_parser = parse_duration)]
    pub progress_interval: Duration,

    /// For a host of MCP 2026-07-28, which is answered "input required" and calls again rather
    /// than holding one call open: how long one round of `browser_request_human` waits for the
    /// person before answering that they have not yet (at least 1s). Keep it under the host's
    /// request timeout (60 s in the official SDKs).
    #[arg(long, env = "MCP_RELAY_BRIDGE_ROUND_WAIT", default_value = "40s", value_parser = parse_duration)]
    pub round_wait: Duration,

    /// Append one JSON line per tool call, resource read and prompt get (time, tool, target,
    /// variant, intent, outcome, duration) to this file.
    #[arg(long, env = "MCP_RELAY_AUDIT_LOG")]
    pub audit_log: Option<PathBuf>,

    /// With `--tools retrieve|all`: a sentence-embedding model that makes `retrieve_tools`
    /// understand meaning ("make the page bigger" finds browser_resize), fused with BM25. A
    /// sentence-transformers BERT directory (config.json, model.safetensors, tokenizer.json),
    /// e.g. all-MiniLM-L6-v2; run on the CPU in process, never downloaded. Without it, BM25
    /// alone.
    #[arg(long, env = "MCP_RELAY_BRIDGE_EMBEDDING_MODEL")]
    pub embedding_model: Option<PathBuf>,
}

/// Runs the bridge until the MCP host closes stdin.
pub async fn run(args: BridgeArgs) -> anyhow::Result<()> {
    let dynamic = match args.dynamic {
        None => None,
        Some(_) if !args.tools.retrieve() => {
            anyhow::bail!("--dynamic needs --tools retrieve or --tools all (it registers what retrieve_tools finds)")
        }
        Some(k) => {
            anyhow::ensure!(
                args.dynamic_pool >= k,
                "--dynamic-pool ({}) must be at least --dynamic ({k})",
                args.dynamic_pool
            );
            Some(gateway::Dynamic {
                top_k: k.into(),
                pool: args.dynamic_pool.into(),
            })
        }
    };
    let embedder = match &args.embedding_model {
        None => None,
        Some(_) if !args.tools.retrieve() => {
            anyhow::bail!("--embedding-model needs --tools retrieve or --tools all (it ranks what retrieve_tools finds)")
        }
        Some(path) => {
            let embedder = embed::Embedder::load(path)
                .with_context(|| format!("loading --embedding-model {}", path.display()))?;
            tracing::info!(
                path = %path.display(),
                seconds = embedder.model().load_time().as_secs_f64(),
                "embedding model loaded"
            );
            Some(Arc::new(embedder))
        }
    };
    let audit = match &args.audit_log {
        Some(path) => audit::AuditLog::open(path)
            .with_context(|| format!("opening --audit-log {}", path.display()))?,
        None => audit::AuditLog::disabled(),
    };
    let claims = token_claims(&args.token);
    let url = relay_url(args.relay.as_deref(), &claims)?;
    let tls = tls_config(args.ca_cert.as_deref())?;
    // The relay keys nothing on it today, but a stable id lets its logs follow one bridge
    // across restarts; derive it from who we are and where we connect.
    let subject = claims
        .get("sub")
        .and_then(|s| s.as_str())
        .unwrap_or_default();
    let client_id = format!(
        "bridge-{}",
        uuid::Uuid::new_v5(
            &uuid::Uuid::NAMESPACE_URL,
            format!("{url}#{subject}").as_bytes()
        )
    );
    tracing::info!(%url, "bridge starting");
    let relay = RelayClient::start(RelayConfig {
        url,
        token: args.token.clone(),
        client_id,
        route: relay_client::Route::WebSocket(tls),
        request_timeout: args.request_timeout,
        approval_wait: args.approval_wait,
        browser: args.browser.clone(),
    });
    let link: Arc<dyn link::BrowserLink> = Arc::new(relay.clone());
    let toolbox = tools::Toolbox::new(Arc::clone(&link), args.max_result_chars)
        .with_max_message_bytes(args.max_message_bytes)
        .with_downloads_dir(args.downloads_dir.clone())
        .with_progress_interval(args.progress_interval)
        .with_navigation_timeout(args.navigation_timeout)
        .with_code_execution(args.code_execution.then_some(tools::CodeLimits {
            wall_time: args.code_wall_time,
            cpu_time: args.code_cpu_time,
            memory: args.code_memory,
            calls: args.code_max_calls,
            bytes: args.code_max_bytes,
            flag_prefix: "--code-",
        }));
    let toolbox = toolbox.with_audit(audit.clone());
    let gateway = gateway::Gateway::new(Arc::new(toolbox), args.tools, dynamic, audit, embedder)
        .with_structured_content(args.structured_content);
    let (stdout, pump) = wire::stdout_pump();
    let service = server::BrowserServer::new(Arc::new(gateway), link)
        .with_rounds(args.round_wait)
        .serve((tokio::io::stdin(), stdout))
        .await
        .context("starting the MCP server on stdio")?;
    let reason = service.waiting().await;
    tracing::info!(?reason, "MCP host went away; stopping");
    // The service is gone with its end of the pipe: let the pump write what is left.
    let _ = tokio::time::timeout(Duration::from_secs(2), pump).await;
    relay.close().await;
    Ok(())
}

/// The token's claims, read without verification: the bridge only needs hints from it (where
/// the relay is, whose token it is); the relay does the verifying.
/// `--navigation-timeout`: a duration the extension accepts (1 s to 5 min).
fn parse_navigation_timeout(text: &str) -> Result<Duration, String> {
    let timeout = parse_duration(text)?;
    if !(Duration::from_secs(1)..=Duration::from_secs(300)).contains(&timeout) {
        return Err(format!("{text:?} is outside 1s to 5m"));
    }
    Ok(timeout)
}

fn token_claims(token: &str) -> serde_json::Map<String, serde_json::Value> {
    token
        .split('.')
        .nth(1)
        .and_then(|payload| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(payload.trim_end_matches('='))
                .ok()
        })
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

/// `--relay`, else the token's `connection_url`; `/mcp` is added to a bare `ws://host:port`.
fn relay_url(
    flag: Option<&str>,
    claims: &serde_json::Map<String, serde_json::Value>,
) -> anyhow::Result<String> {
    let url = match flag {
        Some(url) => url.to_owned(),
        None => claims
            .get("connection_url")
            .and_then(|u| u.as_str())
            .map(str::to_owned)
            .context(
                "no relay URL: pass --relay ws://HOST:PORT/mcp (or set MCP_RELAY_URL); the token \
                 has no connection_url claim to fall back on",
            )?,
    };
    let url = url.trim().trim_end_matches('/').to_owned();
    let Some((scheme, rest)) = url.split_once("://") else {
        anyhow::bail!("the relay URL {url:?} has no scheme: use ws://… or wss://…");
    };
    anyhow::ensure!(
        scheme == "ws" || scheme == "wss",
        "the relay URL {url:?} must start with ws:// or wss://"
    );
    if rest.contains('/') {
        Ok(url)
    } else {
        Ok(format!("{url}/mcp"))
    }
}

/// rustls with the `ring` provider, the public web roots, and the `--ca-cert` certificates.
fn tls_config(ca_cert: Option<&std::path::Path>) -> anyhow::Result<Arc<rustls::ClientConfig>> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::CertificateDer;
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    if let Some(path) = ca_cert {
        let mut added = 0;
        for cert in CertificateDer::pem_file_iter(path)
            .with_context(|| format!("reading --ca-cert {}", path.display()))?
        {
            let cert = cert.with_context(|| format!("parsing --ca-cert {}", path.display()))?;
            roots
                .add(cert)
                .with_context(|| format!("adding --ca-cert {}", path.display()))?;
            added += 1;
        }
        anyhow::ensure!(
            added > 0,
            "--ca-cert {} holds no PEM certificate",
            path.display()
        );
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()?
    .with_root_certificates(roots)
    .with_no_client_auth();
    Ok(Arc::new(config))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relay_url_prefers_the_flag_and_adds_the_mcp_path() {
        let claims = serde_json::Map::new();
        assert_eq!(
            relay_url(Some("ws://127.0.0.1:8080"), &claims).unwrap(),
            "ws://127.0.0.1:8080/mcp"
        );
        assert_eq!(
            relay_url(Some("wss://h/custom/mcp/"), &claims).unwrap(),
            "wss://h/custom/mcp"
        );
        assert!(relay_url(Some("http://h/mcp"), &claims).is_err());
        assert!(relay_url(None, &claims).is_err());
    }

    #[test]
    fn relay_url_falls_back_to_the_connection_url_claim() {
        let payload = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(br#"{"sub":"u","connection_url":"ws://127.0.0.1:9/mcp"}"#);
        let claims = token_claims(&format!("h.{payload}.s"));
        assert_eq!(relay_url(None, &claims).unwrap(), "ws://127.0.0.1:9/mcp");
        assert!(token_claims("not a jwt").is_empty());
    }
}
