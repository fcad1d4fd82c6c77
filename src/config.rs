//! Configuration of `mcp-relay serve`: every flag, its environment variable and its default.
//!
//! Each flag can also be set through an `MCP_RELAY_*` variable, because hosted deployments pass
//! configuration (and above all the JWT secret) through the environment, not the command line.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use clap::Args;

use crate::auth::JwtAlgorithm;

fn parse_state(text: &str) -> Result<StateSpec, String> {
    text.parse()
}

/// Options of `mcp-relay serve`.
#[derive(Debug, Clone, Args)]
pub struct ServeConfig {
    /// Address and port to listen on.
    #[arg(long, env = "MCP_RELAY_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,

    /// Development mode: a generated secret (unless one is given), kept in the state store so
    /// that tokens printed by an earlier run keep working (--fresh makes a new one), and
    /// ready-to-use extension and MCP tokens and URLs printed at start-up. Not for production.
    #[arg(long, env = "MCP_RELAY_DEV")]
    pub dev: bool,

    /// With --dev: forget the stored dev secret and make a new one, so tokens printed before
    /// stop working (approvals and revocations are kept).
    #[arg(long, env = "MCP_RELAY_FRESH", requires = "dev")]
    pub fresh: bool,

    /// Where approvals, revocations, the audit trail and the --dev secret live: `memory`
    /// (nothing survives a restart), `sqlite:PATH` (one file per relay process; `sqlite` alone:
    /// the file in the data directory), or `nats` (JetStream buckets on the --cluster NATS,
    /// shared by every node; the server needs JetStream, `nats-server -js`). Default: `nats`
    /// with --cluster; else a SQLite file in the data directory
    /// ($XDG_DATA_HOME/mcp-relay/state.db, else ~/.local/share/mcp-relay/state.db). A cluster
    /// node with a file of its own keeps approvals, revocations and audit events to itself (see
    /// docs/ADMIN.md). A corrupt, locked or unwritable file, or a NATS without JetStream, stops
    /// start-up.
    #[arg(long, env = "MCP_RELAY_STATE", value_parser = parse_state)]
    pub state: Option<StateSpec>,

    /// Browsers seen for the first time are pending: listed with `approved: false`, and
    /// `connect` to them answers -32011 until their owner or an admin approves them out of band
    /// (admin API or `mcp-relay admin approve ID`). With --cluster it needs the shared state
    /// (--state nats, the default there), so that an approval holds on every node. See
    /// docs/ADMIN.md.
    #[arg(long, env = "MCP_RELAY_REQUIRE_APPROVAL")]
    pub require_approval: bool,

    /// How long audit events (control actions and forwarded requests, never their params or
    /// results) are kept; older ones are deleted periodically. `0` turns the audit trail off.
    #[arg(long, env = "MCP_RELAY_AUDIT_RETENTION", default_value = "30d", value_parser = parse_duration)]
    pub audit_retention: Duration,

    /// Shared secret for HS256 tokens. Prefer the environment variable over the flag, so the
    /// secret does not show up in the process list.
    #[arg(long, env = "MCP_RELAY_JWT_SECRET", hide_env_values = true)]
    pub jwt_secret: Option<String>,

    /// PEM file with the public key for RS256, ES256 or EdDSA tokens (needs --jwt-alg).
    #[arg(long, env = "MCP_RELAY_JWT_PUBLIC_KEY")]
    pub jwt_public_key: Option<PathBuf>,

    /// A JWKS with the public keys for RS256, ES256 or EdDSA tokens: a file or an https:// URL
    /// (http:// only on a loopback host). Tokens name their key with `kid` and are verified
    /// with that key's algorithm only: the `alg` each key declares (an EC P-256 key without one
    /// is ES256, an Ed25519 key EdDSA; an RSA key must declare RS256), or --jwt-alg when given.
    /// The set is reloaded every --jwt-jwks-refresh and soon after a token names a key it lacks,
    /// so the identity provider can rotate keys without a restart.
    #[arg(long, env = "MCP_RELAY_JWT_JWKS", conflicts_with_all = ["jwt_public_key", "jwt_secret"])]
    pub jwt_jwks: Option<String>,

    /// How often the --jwt-jwks set is reloaded.
    #[arg(long, env = "MCP_RELAY_JWT_JWKS_REFRESH", default_value = "10m", value_parser = parse_duration)]
    pub jwt_jwks_refresh: Duration,

    /// PEM CA certificate(s) to trust, besides the public roots, for an https:// --jwt-jwks
    /// (an identity provider behind a private CA).
    #[arg(long, env = "MCP_RELAY_JWT_JWKS_CA", requires = "jwt_jwks")]
    pub jwt_jwks_ca: Option<PathBuf>,

    /// The one JWT algorithm accepted. Tokens signed with any other, or with `none`, are
    /// refused. Default: HS256 with --jwt-secret; with --jwt-jwks, the algorithm each key
    /// declares; --jwt-public-key needs it.
    #[arg(long, env = "MCP_RELAY_JWT_ALG", value_enum)]
    pub jwt_alg: Option<JwtAlgorithm>,

    /// Required `iss` claim, if set.
    #[arg(long, env = "MCP_RELAY_JWT_ISSUER")]
    pub jwt_issuer: Option<String>,

    /// Required `aud` claim, if set.
    #[arg(long, env = "MCP_RELAY_JWT_AUDIENCE")]
    pub jwt_audience: Option<String>,

    /// PEM certificate chain for wss. Without --tls-cert/--tls-key the relay serves plain ws and
    /// TLS must be terminated in front of it.
    #[arg(long, env = "MCP_RELAY_TLS_CERT", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,

    /// PEM private key for --tls-cert.
    #[arg(long, env = "MCP_RELAY_TLS_KEY", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,

    /// How long a forwarded request may wait for the extension's answer before the MCP client
    /// gets a timeout error (e.g. `60s`, `1500ms`, `2m`).
    #[arg(long, env = "MCP_RELAY_REQUEST_TIMEOUT", default_value = "60s", value_parser = parse_duration)]
    pub request_timeout: Duration,

    /// How long a new socket has to authenticate: an extension to answer `authenticate`, an
    /// MCP client to complete `mcp_handshake`. Closed with 1008 after it.
    #[arg(long, env = "MCP_RELAY_AUTH_TIMEOUT", default_value = "10s", value_parser = parse_duration)]
    pub auth_timeout: Duration,

    /// How long a socket may outlive its token: at `exp` plus this grace the relay closes it
    /// with 1008 "token expired", so an expired token stops working on sockets opened before
    /// it expired, not only on new ones. Clients reconnect with a fresh token.
    #[arg(long, env = "MCP_RELAY_TOKEN_EXPIRY_GRACE", default_value = "30s", value_parser = parse_duration)]
    pub token_expiry_grace: Duration,

    /// WebSocket ping interval; a peer silent for two intervals is dropped.
    #[arg(long, env = "MCP_RELAY_PING_INTERVAL", default_value = "10s", value_parser = parse_duration)]
    pub ping_interval: Duration,

    /// Largest accepted WebSocket message (e.g. `32MiB`). Larger frames close the socket with
    /// 1009. Screenshots are large: keep this generous.
    #[arg(long, env = "MCP_RELAY_MAX_MESSAGE_BYTES", default_value = "32MiB", value_parser = parse_bytes)]
    pub max_message_bytes: usize,

    /// Read buffer per WebSocket. Allocated for every socket, so it dominates the memory of an
    /// idle socket; it is also the most read per system call, so large messages arrive in
    /// chunks of this size. See docs/BENCHMARKS.md for the trade-off.
    #[arg(long, env = "MCP_RELAY_READ_BUFFER_BYTES", default_value = "1KiB", value_parser = parse_bytes)]
    pub read_buffer_bytes: usize,

    /// Most bytes queued towards one peer. A peer that lets its queue overflow, or reads
    /// nothing for --send-timeout, is disconnected (its messages are never dropped silently).
    #[arg(long, env = "MCP_RELAY_MAX_SEND_QUEUE_BYTES", default_value = "64MiB", value_parser = parse_bytes)]
    pub max_send_queue_bytes: usize,

    /// How long a write to a peer may block before the peer counts as not reading.
    #[arg(long, env = "MCP_RELAY_SEND_TIMEOUT", default_value = "30s", value_parser = parse_duration)]
    pub send_timeout: Duration,

    /// Most WebSocket connections the relay holds at once (both endpoints together).
    #[arg(long, env = "MCP_RELAY_MAX_CONNECTIONS", default_value_t = 20_000)]
    pub max_connections: usize,

    /// Most extensions (browsers) one user may have online.
    #[arg(long, env = "MCP_RELAY_MAX_EXTENSIONS_PER_USER", default_value_t = 16)]
    pub max_extensions_per_user: usize,

    /// Most authenticated MCP sockets one user may have open.
    #[arg(long, env = "MCP_RELAY_MAX_MCP_CLIENTS_PER_USER", default_value_t = 64)]
    pub max_mcp_clients_per_user: usize,

    /// Open sockets kept per extension identity. Real extensions open a new socket before the
    /// old one closes; the newest gets the traffic, older ones stay open but idle, and beyond
    /// this many the oldest is closed.
    #[arg(long, env = "MCP_RELAY_MAX_SOCKETS_PER_EXTENSION", default_value_t = 2)]
    pub max_sockets_per_extension: usize,

    /// Forwarded requests per second allowed per MCP connection (0 = unlimited).
    #[arg(long, env = "MCP_RELAY_RATE_LIMIT", default_value_t = 200.0)]
    pub rate_limit: f64,

    /// Burst size for --rate-limit.
    #[arg(long, env = "MCP_RELAY_RATE_BURST", default_value_t = 400.0)]
    pub rate_burst: f64,

    /// How long shutdown waits for sockets to close before exiting anyway.
    #[arg(long, env = "MCP_RELAY_SHUTDOWN_GRACE", default_value = "5s", value_parser = parse_duration)]
    pub shutdown_grace: Duration,

    /// Byte bounds and rates on what users control (names, ids, pending requests, remembered
    /// clients, control methods); boxed like the cluster options. See docs/SECURITY.md.
    #[command(flatten)]
    pub hub: Box<HubOptions>,

    // Hostile-input bounds for anonymous sockets (docs/SECURITY.md).
    /// How long a new TCP connection has to deliver its first HTTP request headers (the
    /// WebSocket upgrade, /healthz, …), and how long a kept-alive HTTP connection may wait
    /// between requests. Idle or trickling connections are closed after it.
    #[arg(long, env = "MCP_RELAY_HEADER_TIMEOUT", default_value = "10s", value_parser = parse_duration)]
    pub header_timeout: Duration,

    /// Most TCP connections that have not (yet) become WebSockets: idle connections, requests
    /// in progress, HTTP keep-alive. Over it the oldest such connection is closed to admit the
    /// new one, so idle connections can never lock out a real client.
    #[arg(
        long,
        env = "MCP_RELAY_MAX_PENDING_CONNECTIONS",
        default_value_t = 1024
    )]
    pub max_pending_connections: usize,

    /// Most WebSockets that have not authenticated yet (no `mcp_handshake` or `authenticate`
    /// answer so far). Over it the oldest such socket is closed to admit the new one. Never
    /// more than half of --max-connections (at least 2), so anonymous sockets cannot take the
    /// slots of authenticated clients.
    #[arg(
        long,
        env = "MCP_RELAY_MAX_UNAUTHENTICATED_CONNECTIONS",
        default_value_t = 1000
    )]
    pub max_unauthenticated_connections: usize,

    /// Most bytes a WebSocket may send before it has authenticated (frames, pings and headers
    /// of frames together). More closes the socket with 1008; a real handshake needs a few KiB.
    #[arg(long, env = "MCP_RELAY_MAX_UNAUTHENTICATED_BYTES", default_value = "64KiB", value_parser = parse_bytes)]
    pub max_unauthenticated_bytes: usize,

    /// Send queue bound of a WebSocket that has not authenticated yet (error replies to its
    /// frames); raised to --max-send-queue-bytes once it authenticates.
    #[arg(long, env = "MCP_RELAY_MAX_UNAUTHENTICATED_QUEUE_BYTES", default_value = "1MiB", value_parser = parse_bytes)]
    pub max_unauthenticated_queue_bytes: usize,

    /// Most bytes queued towards all peers together. A peer that is behind when the total is
    /// reached is disconnected like one whose own queue overflowed.
    #[arg(long, env = "MCP_RELAY_MAX_TOTAL_SEND_QUEUE_BYTES", default_value = "1GiB", value_parser = parse_bytes)]
    pub max_total_send_queue_bytes: usize,

    /// Web origins (e.g. `https://app.example.com`, comma-separated) allowed to open the
    /// WebSocket endpoints. Requests without an `Origin` header (non-browser clients) and
    /// `chrome-extension://` origins on /extension are always allowed; other origins get 403,
    /// so a web page cannot drive a relay on localhost.
    #[arg(long, env = "MCP_RELAY_ALLOWED_ORIGINS", value_delimiter = ',')]
    pub allowed_origins: Vec<String>,

    /// Which tools a Streamable HTTP session on /mcp sees by default: `direct`, `proxy`,
    /// `retrieve` or `all`, as `mcp-relay bridge --tools`. A session may choose its own with
    /// `/mcp?tools=…`.
    #[arg(long, env = "MCP_RELAY_MCP_TOOLS", default_value = "direct")]
    pub mcp_tools: String,

    /// A Streamable HTTP MCP session that receives no request for this long is ended; the
    /// host then gets 404 for its session id and initializes a new one.
    #[arg(long, env = "MCP_RELAY_MCP_SESSION_IDLE", default_value = "30m", value_parser = parse_duration)]
    pub mcp_session_idle: Duration,

    /// Append one JSON line per tool call, resource read and prompt get of the HTTP MCP
    /// sessions (time, user, tool, target, variant, intent, outcome, duration) to this file, as
    /// `mcp-relay bridge --audit-log` does for its host.
    #[arg(long, env = "MCP_RELAY_MCP_AUDIT_LOG")]
    pub mcp_audit_log: Option<PathBuf>,

    /// A sentence-embedding model for the HTTP MCP sessions' `retrieve_tools` (tools
    /// `retrieve` or `all`), as `mcp-relay bridge --embedding-model`: a sentence-transformers
    /// BERT directory (config.json, model.safetensors, tokenizer.json), loaded once and shared
    /// by every session. Without it, BM25 alone.
    #[arg(long, env = "MCP_RELAY_MCP_EMBEDDING_MODEL")]
    pub mcp_embedding_model: Option<PathBuf>,

    /// Offer `code_execution` to HTTP MCP sessions, as `mcp-relay bridge --code-execution`: a
    /// JavaScript async function body run in an embedded sandbox (QuickJS) whose only way out
    /// is the session's own tools, within the `--mcp-code-*` bounds; and, in the same sandbox,
    /// `browser_run_code_unsafe` (Playwright code over those tools). Off by default.
    #[arg(long, env = "MCP_RELAY_MCP_CODE_EXECUTION")]
    pub mcp_code_execution: bool,

    /// With `--mcp-code-execution`: a script's longest run, waiting for tools included.
    #[arg(long, env = "MCP_RELAY_MCP_CODE_WALL_TIME", default_value = "60s", value_parser = parse_duration)]
    pub mcp_code_wall_time: Duration,

    /// With `--mcp-code-execution`: a script's longest time running script (not waiting for
    /// tools).
    #[arg(long, env = "MCP_RELAY_MCP_CODE_CPU_TIME", default_value = "10s", value_parser = parse_duration)]
    pub mcp_code_cpu_time: Duration,

    /// With `--mcp-code-execution`: the script engine's memory limit (e.g. `64MiB`).
    #[arg(long, env = "MCP_RELAY_MCP_CODE_MEMORY", default_value = "64MiB", value_parser = parse_bytes)]
    pub mcp_code_memory: usize,

    /// With `--mcp-code-execution`: the most tool calls one script may make.
    #[arg(long, env = "MCP_RELAY_MCP_CODE_MAX_CALLS", default_value = "100")]
    pub mcp_code_max_calls: usize,

    /// With `--mcp-code-execution`: the most bytes of tool results handed to one script (text
    /// plus structured data as JSON).
    #[arg(long, env = "MCP_RELAY_MCP_CODE_MAX_BYTES", default_value = "5MB", value_parser = parse_bytes)]
    pub mcp_code_max_bytes: usize,

    /// Send HTTP MCP sessions each result's fields in `structuredContent` even beside page
    /// text, as `mcp-relay bridge --structured-content`. Off by default: Claude Code, VS Code,
    /// OpenCode and Codex give their model `structuredContent` in place of the text.
    #[arg(long, env = "MCP_RELAY_MCP_STRUCTURED_CONTENT")]
    pub mcp_structured_content: bool,

    /// An OAuth authorization server that issues this relay's MCP tokens (its issuer URL),
    /// named in /.well-known/oauth-protected-resource so MCP hosts know where to get a token.
    /// Repeat for several.
    #[arg(
        long = "oauth-issuer",
        env = "MCP_RELAY_OAUTH_ISSUERS",
        value_delimiter = ','
    )]
    pub oauth_issuers: Vec<String>,

    /// The relay's public base URL (e.g. `https://relay.example.com`), for the protected
    /// resource metadata and the `WWW-Authenticate` header. Without it, the request's `Host`
    /// (and `X-Forwarded-Proto`) are used.
    #[arg(long, env = "MCP_RELAY_PUBLIC_URL")]
    pub public_url: Option<String>,

    /// File descriptors kept free for the relay itself: when open connections come this close
    /// to the file-descriptor limit (raised to the hard limit at start), the oldest pending or
    /// unauthenticated connection is closed, or the new one if there is none.
    #[arg(long, env = "MCP_RELAY_FD_RESERVE", default_value_t = 64)]
    pub fd_reserve: usize,

    /// NATS server(s) to join a relay cluster through (e.g. `nats://nats:4222`; several
    /// separated by commas). Without it the relay is a single node and never contacts NATS.
    /// See docs/CLUSTER.md.
    #[arg(long, env = "MCP_RELAY_CLUSTER")]
    pub cluster: Option<String>,

    /// The rest of the cluster settings (node id, timing, NATS credentials and TLS); boxed,
    /// because they are rarely set and would otherwise weigh on every copy of this struct.
    #[command(flatten)]
    pub cluster_options: Box<ClusterOptions>,
}

/// Bounds on state users control; see docs/SECURITY.md.
#[derive(Debug, Clone, Args)]
pub struct HubOptions {
    /// Longest extension name (and version) the relay keeps, in bytes. Longer ones are cut at a
    /// character boundary: names are stored per browser, listed by list_extensions and sent to
    /// every node of a cluster, so their size must not be the browser's choice.
    #[arg(long, env = "MCP_RELAY_MAX_NAME_BYTES", default_value = "256", value_parser = parse_bytes)]
    pub max_name_bytes: usize,

    /// Longest id (its raw JSON) of a request the relay forwards. Longer ids are refused with
    /// -32600: the relay keeps every pending request's id twice (as sent, and mapped).
    #[arg(long, env = "MCP_RELAY_MAX_ID_BYTES", default_value = "1KiB", value_parser = parse_bytes)]
    pub max_id_bytes: usize,

    /// Bytes of bookkeeping one MCP connection may hold for requests waiting for the
    /// extension's answer (both forms of each id plus about 100 bytes per request). Beyond it
    /// requests are refused with -32002 until earlier ones are answered.
    #[arg(long, env = "MCP_RELAY_MAX_PENDING_BYTES", default_value = "1MiB", value_parser = parse_bytes)]
    pub max_pending_bytes: usize,

    /// How long the MCP clients of a browser that went away are remembered, to be told
    /// `connected` when it comes back. At most --max-extensions-per-user vanished browsers are
    /// remembered per user (the oldest is forgotten first).
    #[arg(long, env = "MCP_RELAY_RECONNECT_WINDOW", default_value = "5m", value_parser = parse_duration)]
    pub reconnect_window: Duration,

    /// Control methods (mcp_handshake, list_extensions, connect, disconnect) per second allowed
    /// per MCP socket (0 = unlimited); beyond it they are answered -32002.
    #[arg(long, env = "MCP_RELAY_CONTROL_RATE_LIMIT", default_value_t = 50.0)]
    pub control_rate_limit: f64,

    /// Burst size for --control-rate-limit.
    #[arg(long, env = "MCP_RELAY_CONTROL_RATE_BURST", default_value_t = 100.0)]
    pub control_rate_burst: f64,
}

/// Cluster settings besides `--cluster` itself; see docs/CLUSTER.md.
#[derive(Debug, Clone, Args)]
pub struct ClusterOptions {
    /// This node's name in the cluster, for logs and `/healthz` (default: a random one). A
    /// restarted process is a new node even under the same name.
    #[arg(long = "cluster-node-id", env = "MCP_RELAY_CLUSTER_NODE_ID")]
    pub node_id: Option<String>,

    /// How often this node publishes its presence (the extensions it holds).
    #[arg(long = "cluster-heartbeat", env = "MCP_RELAY_CLUSTER_HEARTBEAT", default_value = "1s", value_parser = parse_duration)]
    pub heartbeat: Duration,

    /// A node not heard from for this long counts as dead: its extensions disappear and
    /// connections to them end with `disconnected`.
    #[arg(long = "cluster-node-ttl", env = "MCP_RELAY_CLUSTER_NODE_TTL", default_value = "3s", value_parser = parse_duration)]
    pub node_ttl: Duration,

    /// NATS user name (with --nats-password).
    #[arg(long, env = "MCP_RELAY_NATS_USER", requires = "nats_password")]
    pub nats_user: Option<String>,

    /// NATS password (with --nats-user). Prefer the environment variable.
    #[arg(
        long,
        env = "MCP_RELAY_NATS_PASSWORD",
        hide_env_values = true,
        requires = "nats_user"
    )]
    pub nats_password: Option<String>,

    /// NATS authentication token. Prefer the environment variable.
    #[arg(long, env = "MCP_RELAY_NATS_TOKEN", hide_env_values = true)]
    pub nats_token: Option<String>,

    /// NATS credentials file (JWT and NKey seed, as `nsc` writes it).
    #[arg(long, env = "MCP_RELAY_NATS_CREDS")]
    pub nats_creds: Option<PathBuf>,

    /// PEM CA certificate to verify the NATS server with (implies TLS).
    #[arg(long, env = "MCP_RELAY_NATS_TLS_CA")]
    pub nats_tls_ca: Option<PathBuf>,

    /// PEM client certificate for NATS mutual TLS (with --nats-tls-key).
    #[arg(long, env = "MCP_RELAY_NATS_TLS_CERT", requires = "nats_tls_key")]
    pub nats_tls_cert: Option<PathBuf>,

    /// PEM private key for --nats-tls-cert.
    #[arg(long, env = "MCP_RELAY_NATS_TLS_KEY", requires = "nats_tls_cert")]
    pub nats_tls_key: Option<PathBuf>,

    /// Refuse to talk to NATS without TLS.
    #[arg(long, env = "MCP_RELAY_NATS_TLS_REQUIRED")]
    pub nats_tls_required: bool,
}

impl ServeConfig {
    /// Defaults as `--help` documents them, for tests and embedding.
    pub fn defaults() -> Self {
        #[derive(clap::Parser)]
        struct Wrapper {
            #[command(flatten)]
            config: ServeConfig,
        }
        <Wrapper as clap::Parser>::try_parse_from(["mcp-relay"])
            .expect("defaults parse")
            .config
    }
}

// The parsers are shared with `bridge` and `bench`, so `30s` and `32MiB` mean the same everywhere.
pub use mcp_relay_wire::units::{parse_bytes, parse_duration};

/// What `--state` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StateSpec {
    /// Nothing survives the process (tests, benchmarks, a quick try).
    Memory,
    /// A SQLite file (created with its directory when missing).
    Sqlite(PathBuf),
    /// NATS JetStream key-value buckets (and an audit stream) on the cluster's NATS.
    Nats,
}

impl FromStr for StateSpec {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let text = text.trim();
        match text {
            "memory" => Ok(StateSpec::Memory),
            "nats" => Ok(StateSpec::Nats),
            "sqlite" | "default" => default_state_path()
                .map(StateSpec::Sqlite)
                .ok_or_else(|| NO_DATA_DIR.to_owned()),
            _ => match text.strip_prefix("sqlite:") {
                Some(path) if !path.is_empty() => Ok(StateSpec::Sqlite(PathBuf::from(path))),
                _ => Err(format!(
                    "{text:?} is not a state store: use memory, sqlite:PATH (e.g. \
                     sqlite:/var/lib/mcp-relay/state.db) or nats"
                )),
            },
        }
    }
}

impl std::fmt::Display for StateSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StateSpec::Memory => f.write_str("memory"),
            StateSpec::Sqlite(path) => write!(f, "sqlite:{}", path.display()),
            StateSpec::Nats => f.write_str("nats"),
        }
    }
}

const NO_DATA_DIR: &str = "no data directory: neither XDG_DATA_HOME nor HOME is set; pass \
                           --state sqlite:PATH (or --state memory to keep nothing)";

/// `$XDG_DATA_HOME/mcp-relay/state.db`, else `~/.local/share/mcp-relay/state.db` (on macOS
/// `~/Library/Application Support/mcp-relay/state.db`).
pub fn default_state_path() -> Option<PathBuf> {
    let nonempty = |key| std::env::var_os(key).filter(|v| !v.is_empty());
    let base = if let Some(xdg) = nonempty("XDG_DATA_HOME") {
        PathBuf::from(xdg)
    } else {
        let home = PathBuf::from(nonempty("HOME")?);
        if cfg!(target_os = "macos") {
            home.join("Library").join("Application Support")
        } else {
            home.join(".local").join("share")
        }
    };
    Some(base.join("mcp-relay").join("state.db"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_the_documented_values() {
        let c = ServeConfig::defaults();
        assert_eq!(c.listen.to_string(), "127.0.0.1:8080");
        assert_eq!(c.request_timeout, Duration::from_secs(60));
        assert_eq!(c.ping_interval, Duration::from_secs(10));
        assert_eq!(c.max_message_bytes, 32 << 20);
    }
}
