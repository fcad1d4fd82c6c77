//! The `mcp-relay` command: `serve`, `token`, `dev-certs`, and (with the default features
//! `bridge` and `bench`) `bridge`, `bench` and the hidden `bench-baseline`, which live in their
//! own crates under `crates/` and are built into this one binary so host configs keep running
//! `mcp-relay bridge`.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use mcp_relay::auth::{self, JwtAlgorithm, MintClaims, Role};
use mcp_relay::config::{parse_duration, ServeConfig};

/// A WebSocket JSON-RPC 2.0 relay that lets MCP clients drive a person's own browser through a
/// browser extension.
#[derive(Parser)]
#[command(name = "mcp-relay", version, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the relay: extensions connect to /extension, MCP clients to /mcp.
    ///
    /// Every flag can also be set with the MCP_RELAY_* variable shown. For a first try, run
    /// `mcp-relay serve --dev`: it prints tokens and URLs ready to paste.
    Serve(Box<ServeConfig>),
    /// Mint an access token (JWT) for an extension or an MCP client.
    Token(TokenArgs),
    /// Create a development CA and a localhost certificate for trying wss.
    DevCerts(DevCertsArgs),
    /// Operate a running relay through its admin API: list and approve browsers, revoke
    /// tokens and browsers, kick connections, query the audit trail (docs/ADMIN.md).
    Admin(mcp_relay::operator::admin_cli::AdminArgs),
    /// Run an MCP server over stdio that drives the browser through the relay (for Claude
    /// Desktop, Cursor, …).
    #[cfg(feature = "bridge")]
    Bridge(mcp_relay_bridge::BridgeArgs),
    /// Measure the relay against a JSON-free WebSocket forwarder (the figures in
    /// docs/BENCHMARKS.md). Starts both as child processes on loopback ports.
    #[cfg(feature = "bench")]
    Bench(mcp_relay_bench::BenchArgs),
    /// The baseline forwarder `bench` measures against (started by `bench` itself).
    #[cfg(feature = "bench")]
    #[command(hide = true)]
    BenchBaseline(BaselineArgs),
}

#[cfg(feature = "bench")]
#[derive(Args)]
struct BaselineArgs {
    #[arg(long)]
    listen: std::net::SocketAddr,
    #[arg(long, default_value = "64MiB", value_parser = mcp_relay::config::parse_bytes)]
    max_message_bytes: usize,
}

#[derive(Args)]
struct TokenArgs {
    /// The user the token belongs to (its `sub` claim). Extensions and MCP clients see each
    /// other only when their tokens name the same user.
    #[arg(long)]
    user: String,
    /// Restrict the token to one endpoint (`extension`, `mcp`); without it, the token works on
    /// both. `admin` opens neither WebSocket: it is for the admin API (`mcp-relay admin`), on
    /// every user's browsers, connections and audit events.
    #[arg(long, value_enum)]
    role: Option<Role>,
    /// How long the token is valid (e.g. 1h, 30d).
    #[arg(long, default_value = "1h", value_parser = parse_duration)]
    ttl: Duration,
    /// Relay URL to embed as the `connection_url` claim (clients use it when no URL is set).
    #[arg(long)]
    connection_url: Option<String>,
    /// HS256 secret (the relay's MCP_RELAY_JWT_SECRET).
    #[arg(long, env = "MCP_RELAY_JWT_SECRET", hide_env_values = true)]
    secret: Option<String>,
    /// Signing algorithm; for anything but HS256 give --private-key.
    #[arg(long, value_enum, default_value = "HS256")]
    alg: JwtAlgorithm,
    /// PEM private key for RS256, ES256 or EdDSA.
    #[arg(long)]
    private_key: Option<PathBuf>,
    /// `iss` claim to include.
    #[arg(long)]
    issuer: Option<String>,
    /// `aud` claim to include.
    #[arg(long)]
    audience: Option<String>,
}

#[derive(Args)]
struct DevCertsArgs {
    /// Directory for ca.pem, ca.key, localhost.pem and localhost.key.
    #[arg(long, default_value = "certs")]
    out: PathBuf,
    /// Extra DNS names or IP addresses for the server certificate.
    #[arg(long = "name")]
    names: Vec<String>,
}

/// Log targets held at `debug` whatever the filter asks: the WebSocket library logs every frame
/// it reads and writes at `trace`, whole, and frames carry tokens (`mcp_handshake`,
/// `authenticate` answers). docs/SECURITY.md: tokens appear at no level.
const FRAME_LOGGERS: [&str; 2] = ["tungstenite", "tokio_tungstenite"];

fn init_logging() {
    let mut filter = tracing_subscriber::EnvFilter::try_from_env("MCP_RELAY_LOG")
        .or_else(|_| tracing_subscriber::EnvFilter::try_from_default_env())
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    for target in FRAME_LOGGERS {
        if let Ok(directive) = format!("{target}=debug").parse() {
            filter = filter.add_directive(directive);
        }
    }
    // Colour codes only on a terminal: the bridge's stderr usually ends up in a host's log file.
    use std::io::IsTerminal;
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve(config) => {
            init_logging();
            serve(*config).await
        }
        Command::Token(args) => token(args),
        Command::Admin(args) => mcp_relay::operator::admin_cli::run(args).await,
        #[cfg(feature = "bench")]
        Command::Bench(args) => mcp_relay_bench::run(args).await,
        #[cfg(feature = "bench")]
        Command::BenchBaseline(args) => {
            mcp_relay_bench::baseline::serve(args.listen, args.max_message_bytes).await
        }
        #[cfg(feature = "bridge")]
        Command::Bridge(args) => {
            init_logging();
            mcp_relay_bridge::run(args).await
        }
        Command::DevCerts(args) => {
            let certs = mcp_relay::net::certs::generate(&args.names)?;
            let (cert, key) = mcp_relay::net::certs::write(&args.out, &certs)?;
            println!(
                "Wrote {}, {} and the CA {}.\nServe with: mcp-relay serve --tls-cert {} --tls-key {}\n\
                 Trust {} in clients (the bridge: --ca-cert).",
                cert.display(),
                key.display(),
                args.out.join("ca.pem").display(),
                cert.display(),
                key.display(),
                args.out.join("ca.pem").display()
            );
            Ok(())
        }
    }
}

fn token(args: TokenArgs) -> anyhow::Result<()> {
    let mut claims = MintClaims::new(&args.user, args.role, args.ttl);
    claims.connection_url = args.connection_url;
    claims.iss = args.issuer;
    claims.aud = args.audience;
    let token = match (args.alg, &args.private_key, &args.secret) {
        (JwtAlgorithm::Hs256, _, Some(secret)) => auth::mint_hs256(secret.as_bytes(), &claims),
        (JwtAlgorithm::Hs256, _, None) => {
            anyhow::bail!("HS256 needs the secret: set MCP_RELAY_JWT_SECRET or pass --secret")
        }
        (alg, Some(path), _) => {
            let pem = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
            auth::mint_with_private_pem(alg, &pem, &claims)?
        }
        (alg, None, _) => anyhow::bail!("{alg:?} needs --private-key"),
    };
    println!("{token}");
    Ok(())
}

async fn serve(mut config: ServeConfig) -> anyhow::Result<()> {
    let signals = ShutdownSignals::install()?;
    // Every socket is a file descriptor: use all the hard limit allows (the relay keeps
    // --fd-reserve of them free, see docs/SECURITY.md).
    match mcp_relay::net::limits::raise_fd_limit() {
        Some(limit) => tracing::info!(limit, "file-descriptor limit"),
        None => tracing::warn!("could not read the file-descriptor limit"),
    }
    let store = mcp_relay::server::open_store(&config).await?;
    let dev_secret = if config.dev
        && config.jwt_secret.is_none()
        && config.jwt_public_key.is_none()
        && config.jwt_jwks.is_none()
    {
        let secret = dev_secret(&store, config.fresh).await?;
        config.jwt_secret = Some(secret.clone());
        Some(secret)
    } else {
        None
    };
    let dev = config.dev;
    let kept = store.is_persistent();
    let relay = mcp_relay::server::start_with_store(config, store).await?;
    if dev {
        print_dev_banner(&relay, dev_secret.as_deref(), kept);
    }
    signals.wait().await;
    tracing::info!("shutting down");
    relay.shutdown().await;
    Ok(())
}

/// The `--dev` secret: the one kept in the state store, so tokens printed by an earlier run
/// keep working, or (first run, `--fresh`) a new one, kept for the next run.
async fn dev_secret(
    store: &std::sync::Arc<mcp_relay::operator::store::Store>,
    fresh: bool,
) -> anyhow::Result<String> {
    const KEY: &str = "dev_secret";
    if !fresh {
        if let Some(secret) = store.meta(KEY).await? {
            return Ok(secret);
        }
    }
    let secret = format!(
        "dev-{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    );
    store.set_meta(KEY, &secret).await?;
    Ok(secret)
}

fn print_dev_banner(relay: &mcp_relay::server::RunningRelay, secret: Option<&str>, kept: bool) {
    // The relay keeps running if whoever started it stopped reading its stdout (a test that
    // took the tokens, `| head`): a closed pipe must not make the banner panic.
    macro_rules! say {
        ($($arg:tt)*) => {{
            use std::io::Write;
            let _ = writeln!(std::io::stdout(), $($arg)*);
        }};
    }
    let extension_url = relay.url("/extension");
    let mcp_url = relay.url("/mcp");
    let ttl = Duration::from_secs(24 * 3600);
    let Some(secret) = secret else {
        say!("dev mode: tokens are not printed because a key was configured; mint them with `mcp-relay token`");
        return;
    };
    let mut ext_claims = MintClaims::new("dev-user", Some(Role::Extension), ttl);
    ext_claims.connection_url = Some(extension_url.clone());
    let mut mcp_claims = MintClaims::new("dev-user", Some(Role::Mcp), ttl);
    mcp_claims.connection_url = Some(mcp_url.clone());
    let mcp_token = auth::mint_hs256(secret.as_bytes(), &mcp_claims);
    let secret_note = if kept {
        "secret kept in the state store: tokens survive restarts, --fresh starts over"
    } else {
        "ephemeral secret"
    };
    say!(
        "mcp-relay is running in DEV MODE ({secret_note}; tokens valid 24 h; not for production)\n\n\
         Extension URL:   {extension_url}\n\
         Extension token: {}\n\n\
         MCP URL:         {mcp_url}\n\
         MCP token:       {mcp_token}\n\n\
         Paste the extension URL and token into the extension's options page; give the MCP\n\
         URL and token to your MCP client. Press Ctrl-C to stop.\n\n\
         Dashboard:       {dashboard_url}  (sign in with the MCP token above to see, approve and revoke)",
        auth::mint_hs256(secret.as_bytes(), &ext_claims),
        dashboard_url = relay.http_url("/dashboard"),
    );
    // The HTTP endpoint shares /mcp with the WebSocket one; hosts that speak Streamable HTTP
    // connect to it directly.
    #[cfg(feature = "http-mcp")]
    {
        let http_url = relay.http_url("/mcp");
        say!(
            "\nConnect Claude Code to this relay over MCP Streamable HTTP (no bridge needed):\n\n  \
             claude mcp add --transport http browser {http_url} --header \"Authorization: Bearer {mcp_token}\""
        );
    }
}

/// SIGTERM and Ctrl-C, listened for from before the relay starts: a SIGTERM that comes right
/// after the banner (a supervisor, a test) still shuts it down gracefully instead of killing it.
struct ShutdownSignals {
    #[cfg(unix)]
    term: tokio::signal::unix::Signal,
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
}

impl ShutdownSignals {
    fn install() -> anyhow::Result<ShutdownSignals> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            Ok(ShutdownSignals {
                term: signal(SignalKind::terminate()).context("installing the SIGTERM handler")?,
                interrupt: signal(SignalKind::interrupt())
                    .context("installing the SIGINT handler")?,
            })
        }
        #[cfg(not(unix))]
        Ok(ShutdownSignals {})
    }

    async fn wait(mut self) {
        #[cfg(unix)]
        tokio::select! {
            _ = self.term.recv() => {}
            _ = self.interrupt.recv() => {}
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
