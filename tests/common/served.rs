//! The relay the HTTP MCP and dashboard tests run against: this crate's relay in the test
//! process, or, with `MCP_RELAY_TEST_BINARY=/path/to/mcp-relay`, that binary as a child
//! process. CI points the variable at the binary built with the `Dockerfile`'s own cargo
//! command (`.ci/run`), so the endpoints the image ships are the ones these tests check.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use mcp_relay::config::ServeConfig;
use mcp_relay::server::RunningRelay;

use super::child::ChildRelay;
use super::Endpoint;

/// The relay binary the tests are told to use instead of the in-process relay.
pub fn binary() -> Option<PathBuf> {
    std::env::var_os("MCP_RELAY_TEST_BINARY")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// A relay serving the tests, wherever it runs.
pub struct Served {
    pub local_addr: SocketAddr,
    pub tls: bool,
    inner: Inner,
}

enum Inner {
    InProcess(RunningRelay),
    Child(ChildRelay),
}

impl Endpoint for Served {
    fn url(&self, path: &str) -> String {
        let scheme = if self.tls { "wss" } else { "ws" };
        format!("{scheme}://{}{path}", self.local_addr)
    }
}

impl Served {
    /// `ws://` or `wss://` URL of an endpoint.
    pub fn url(&self, path: &str) -> String {
        Endpoint::url(self, path)
    }

    /// `http://` or `https://` URL of a path.
    pub fn http_url(&self, path: &str) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}{path}", self.local_addr)
    }

    /// Whether this is the relay binary in a child process.
    pub fn is_child(&self) -> bool {
        matches!(self.inner, Inner::Child(_))
    }

    /// The relay's log so far (the child's stderr); empty for the in-process relay.
    pub fn log(&self) -> String {
        match &self.inner {
            Inner::InProcess(_) => String::new(),
            Inner::Child(child) => child.log(),
        }
    }

    pub async fn shutdown(self) {
        match self.inner {
            Inner::InProcess(relay) => relay.shutdown().await,
            Inner::Child(child) => drop(child),
        }
    }
}

/// A relay with the harness's defaults (see [`super::relay_with`]).
pub async fn relay() -> Served {
    relay_with(|_| {}).await
}

/// A relay with the harness's defaults changed by `tweak`: in this process, or the
/// `MCP_RELAY_TEST_BINARY` started with the flags that say the same.
pub async fn relay_with(tweak: impl FnOnce(&mut ServeConfig)) -> Served {
    let Some(binary) = binary() else {
        let relay = super::relay_with(tweak).await;
        return Served {
            local_addr: relay.local_addr,
            tls: relay.tls,
            inner: Inner::InProcess(relay),
        };
    };
    let mut config = base();
    tweak(&mut config);
    let tls = config.tls_cert.is_some();
    let args = args_for(&config);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let child = ChildRelay::start_binary(&binary, &args, &[], None);
    Served {
        local_addr: child.addr,
        tls,
        inner: Inner::Child(child),
    }
}

/// What [`super::relay_with`] starts from; [`ChildRelay`] passes the same (`--listen
/// 127.0.0.1:0`, the tests' secret, `--rate-limit 0`, `--state memory`).
fn base() -> ServeConfig {
    let mut config = ServeConfig::defaults();
    config.listen = "127.0.0.1:0".parse().unwrap();
    config.jwt_secret = Some(super::SECRET.into());
    config.rate_limit = 0.0;
    config.state = Some(mcp_relay::operator::store::StateSpec::Memory);
    config
}

/// The flags that turn [`base`] into `config`. A setting not handled here fails the test
/// rather than being silently left out of the child's command line.
fn args_for(config: &ServeConfig) -> Vec<String> {
    let base = base();
    let mut rest = config.clone();
    let mut args = Vec::new();
    let millis = |d: Duration| format!("{}ms", d.as_millis());
    let mut flag = |name: &str, value: String| {
        args.push(format!("--{name}"));
        args.push(value);
    };
    for issuer in &config.oauth_issuers {
        flag("oauth-issuer", issuer.clone());
    }
    rest.oauth_issuers = base.oauth_issuers.clone();
    if let Some(audience) = &config.jwt_audience {
        flag("jwt-audience", audience.clone());
    }
    rest.jwt_audience = base.jwt_audience.clone();
    if !config.allowed_origins.is_empty() {
        flag("allowed-origins", config.allowed_origins.join(","));
    }
    rest.allowed_origins = base.allowed_origins.clone();
    if config.mcp_session_idle != base.mcp_session_idle {
        flag("mcp-session-idle", millis(config.mcp_session_idle));
    }
    rest.mcp_session_idle = base.mcp_session_idle;
    if config.mcp_tools != base.mcp_tools {
        flag("mcp-tools", config.mcp_tools.clone());
    }
    rest.mcp_tools = base.mcp_tools.clone();
    if config.token_expiry_grace != base.token_expiry_grace {
        flag("token-expiry-grace", millis(config.token_expiry_grace));
    }
    rest.token_expiry_grace = base.token_expiry_grace;
    if config.max_mcp_clients_per_user != base.max_mcp_clients_per_user {
        flag(
            "max-mcp-clients-per-user",
            config.max_mcp_clients_per_user.to_string(),
        );
    }
    rest.max_mcp_clients_per_user = base.max_mcp_clients_per_user;
    if let (Some(cert), Some(key)) = (&config.tls_cert, &config.tls_key) {
        flag("tls-cert", cert.display().to_string());
        flag("tls-key", key.display().to_string());
    }
    rest.tls_cert = base.tls_cert.clone();
    rest.tls_key = base.tls_key.clone();
    if let Some(log) = &config.mcp_audit_log {
        flag("mcp-audit-log", log.display().to_string());
    }
    rest.mcp_audit_log = base.mcp_audit_log.clone();
    if let Some(model) = &config.mcp_embedding_model {
        flag("mcp-embedding-model", model.display().to_string());
    }
    rest.mcp_embedding_model = base.mcp_embedding_model.clone();
    if config.require_approval {
        args.push("--require-approval".into());
    }
    rest.require_approval = base.require_approval;
    assert_eq!(
        format!("{rest:?}"),
        format!("{base:?}"),
        "a setting tests/common/served.rs cannot pass to MCP_RELAY_TEST_BINARY yet: add it to \
         args_for"
    );
    args
}
