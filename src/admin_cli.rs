//! `mcp-relay admin`: the admin API (`crate::admin`) from a terminal. Each verb is one HTTP
//! request; the answer is printed as a table (or, with `--json`, as the API's JSON).
//!
//! It speaks plain HTTP/1.1 over one connection per command, with TLS (public roots plus
//! `--ca-cert`) for `https://` and `wss://` relay URLs: the requests are tiny, and a full HTTP
//! client would be the largest dependency of the relay for the sake of seven calls.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::{Args, Subcommand};
use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Options of `mcp-relay admin`.
#[derive(Debug, Args)]
pub struct AdminArgs {
    /// The relay: its base URL (`https://relay.example.com`) or any of its endpoint URLs
    /// (`wss://relay.example.com/mcp` works too).
    #[arg(
        long,
        env = "MCP_RELAY_ADMIN_URL",
        default_value = "http://127.0.0.1:8080",
        global = true
    )]
    pub relay: String,

    /// A token of role `admin` (every user's things) or your own MCP token (your things
    /// only). Prefer the environment variable: a flag shows in the process list.
    #[arg(
        long,
        env = "MCP_RELAY_ADMIN_TOKEN",
        hide_env_values = true,
        global = true
    )]
    pub token: Option<String>,

    /// Print the API's JSON instead of a table.
    #[arg(long, global = true)]
    pub json: bool,

    /// PEM CA certificate(s) to trust besides the public roots (e.g. `certs/ca.pem` from
    /// `mcp-relay dev-certs`).
    #[arg(long, global = true)]
    pub ca_cert: Option<PathBuf>,

    #[command(subcommand)]
    pub verb: Verb,
}

#[derive(Debug, Subcommand)]
pub enum Verb {
    /// List browsers (id, user, name, approved, connected, last seen, version).
    Browsers,
    /// Approve a browser (also lifts a revocation of it).
    Approve { id: String },
    /// Revoke a browser: its sockets close now, and it may not connect until approved again.
    RevokeBrowser { id: String },
    /// Revoke one token by its `jti` (an admin revokes it for whoever holds it; a user for
    /// their own tokens).
    RevokeToken {
        jti: String,
        /// Only this user's token with that jti (admins only; users always mean their own).
        #[arg(long)]
        user: Option<String>,
    },
    /// Revoke every token of USER issued before a moment (default: now).
    RevokeUser {
        user: String,
        /// Seconds since the epoch, RFC 3339, `now`, or how long ago (`15m`).
        #[arg(long, default_value = "now")]
        issued_before: String,
    },
    /// List live assistant (MCP) connections on this relay node.
    Connections,
    /// End an assistant's connection (its client is told `disconnected`).
    Kick { connection: String },
    /// Query the audit trail, newest first.
    Audit {
        #[arg(long)]
        user: Option<String>,
        /// A browser's extension id.
        #[arg(long)]
        browser: Option<String>,
        #[arg(long)]
        method: Option<String>,
        /// From this moment (RFC 3339, seconds, or how long ago: `1h`).
        #[arg(long)]
        since: Option<String>,
        /// Before this moment.
        #[arg(long)]
        until: Option<String>,
        /// At most this many events (the relay caps it at 1000).
        #[arg(long, default_value_t = 50)]
        limit: usize,
    },
}

/// Runs one `admin` command, printing its answer to stdout.
pub async fn run(args: AdminArgs) -> anyhow::Result<()> {
    let token = args
        .token
        .as_deref()
        .filter(|t| !t.trim().is_empty())
        .context(
            "no token: set MCP_RELAY_ADMIN_TOKEN (or pass --token) to an admin token (`mcp-relay \
         token --user ops --role admin`) or your own MCP token",
        )?;
    let base = Base::parse(&args.relay)?;
    let (method, path, body) = request(&args.verb);
    let (status, answer) = call(&base, args.ca_cert.as_deref(), method, &path, token, body).await?;
    if !(200..300).contains(&status) {
        let message = answer["error"].as_str().unwrap_or("(no error message)");
        anyhow::bail!("the relay answered {status}: {message}");
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&answer)?);
    } else {
        print!("{}", render(&args.verb, &answer));
    }
    Ok(())
}

fn encode(text: &str) -> String {
    let mut out = String::new();
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn request(verb: &Verb) -> (&'static str, String, Option<Value>) {
    match verb {
        Verb::Browsers => ("GET", "/api/v1/browsers".into(), None),
        Verb::Approve { id } => (
            "POST",
            format!("/api/v1/browsers/{}/approve", encode(id)),
            None,
        ),
        Verb::RevokeBrowser { id } => (
            "POST",
            format!("/api/v1/browsers/{}/revoke", encode(id)),
            None,
        ),
        Verb::RevokeToken { jti, user } => {
            let mut body = json!({ "jti": jti });
            if let Some(user) = user {
                body["user_id"] = user.as_str().into();
            }
            ("POST", "/api/v1/tokens/revoke".into(), Some(body))
        }
        Verb::RevokeUser {
            user,
            issued_before,
        } => (
            "POST",
            "/api/v1/tokens/revoke".into(),
            Some(json!({ "user_id": user, "issued_before": issued_before })),
        ),
        Verb::Connections => ("GET", "/api/v1/connections".into(), None),
        Verb::Kick { connection } => (
            "DELETE",
            format!("/api/v1/connections/{}", encode(connection)),
            None,
        ),
        Verb::Audit {
            user,
            browser,
            method,
            since,
            until,
            limit,
        } => {
            let mut query = vec![format!("limit={limit}")];
            for (key, value) in [
                ("user_id", user),
                ("browser", browser),
                ("method", method),
                ("since", since),
                ("until", until),
            ] {
                if let Some(value) = value {
                    query.push(format!("{key}={}", encode(value)));
                }
            }
            ("GET", format!("/api/v1/audit?{}", query.join("&")), None)
        }
    }
}

/// A table with a header row, columns as wide as their widest cell.
fn table(header: &[&str], rows: Vec<Vec<String>>) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in &rows {
        for (i, cell) in row.iter().enumerate() {
            widths[i] = widths[i].max(cell.chars().count());
        }
    }
    let line = |cells: Vec<String>| {
        let mut text = String::new();
        for (i, cell) in cells.iter().enumerate() {
            if i + 1 == cells.len() {
                text.push_str(cell);
            } else {
                let pad = widths[i] - cell.chars().count();
                text.push_str(cell);
                text.push_str(&" ".repeat(pad + 2));
            }
        }
        text.trim_end().to_owned() + "\n"
    };
    let mut out = line(header.iter().map(|h| h.to_string()).collect());
    for row in rows {
        out += &line(row);
    }
    out
}

fn cell(value: &Value) -> String {
    match value {
        Value::Null => "-".into(),
        Value::String(s) => s.clone(),
        Value::Bool(true) => "yes".into(),
        Value::Bool(false) => "no".into(),
        other => other.to_string(),
    }
}

fn render(verb: &Verb, answer: &Value) -> String {
    let rows = |key: &str, fields: &[&str]| -> Vec<Vec<String>> {
        answer[key]
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .map(|item| fields.iter().map(|f| cell(&item[*f])).collect())
                    .collect()
            })
            .unwrap_or_default()
    };
    match verb {
        Verb::Browsers => {
            let fields = [
                "id",
                "user_id",
                "name",
                "approved",
                "connected",
                "last_seen",
                "version",
            ];
            table(
                &[
                    "ID",
                    "USER",
                    "NAME",
                    "APPROVED",
                    "CONNECTED",
                    "LAST SEEN",
                    "VERSION",
                ],
                rows("browsers", &fields),
            )
        }
        Verb::Connections => table(
            &[
                "ID",
                "USER",
                "MCP CLIENT",
                "CLIENT NAME",
                "BROWSER",
                "PENDING",
            ],
            rows(
                "connections",
                &[
                    "id",
                    "user_id",
                    "mcp_client_id",
                    "client_name",
                    "extension_id",
                    "pending_requests",
                ],
            ),
        ),
        Verb::Audit { .. } => table(
            &[
                "AT", "KIND", "USER", "BROWSER", "METHOD", "CODE", "MS", "DETAIL",
            ],
            rows(
                "events",
                &[
                    "at",
                    "kind",
                    "user_id",
                    "extension_id",
                    "method",
                    "code",
                    "duration_ms",
                    "detail",
                ],
            ),
        ),
        Verb::Approve { id } => format!("approved {id}\n"),
        Verb::RevokeBrowser { id } => format!(
            "revoked browser {id} (closed {} sockets)\n",
            cell(&answer["closed_sockets"])
        ),
        Verb::RevokeToken { jti, .. } => format!(
            "revoked token {jti} (closed {} sockets)\n",
            cell(&answer["closed_sockets"])
        ),
        Verb::RevokeUser { user, .. } => format!(
            "revoked every token of {user} issued before {} (closed {} sockets)\n",
            cell(&answer["issued_before"]),
            cell(&answer["closed_sockets"])
        ),
        Verb::Kick { connection } => format!("closed connection {connection}\n"),
    }
}

/// Where the relay is.
struct Base {
    tls: bool,
    host: String,
    port: u16,
}

impl Base {
    fn parse(url: &str) -> anyhow::Result<Base> {
        let (tls, rest) = if let Some(rest) = url.strip_prefix("https://") {
            (true, rest)
        } else if let Some(rest) = url.strip_prefix("wss://") {
            (true, rest)
        } else if let Some(rest) = url.strip_prefix("http://") {
            (false, rest)
        } else if let Some(rest) = url.strip_prefix("ws://") {
            (false, rest)
        } else {
            anyhow::bail!("--relay {url:?}: use an http://, https://, ws:// or wss:// URL");
        };
        let authority = rest.split('/').next().unwrap_or_default();
        let (host, port) = match authority.rsplit_once(':') {
            Some((host, port)) if !host.ends_with(']') || authority.starts_with('[') => (
                host,
                port.parse()
                    .with_context(|| format!("--relay {url:?}: bad port {port:?}"))?,
            ),
            _ => (authority, if tls { 443 } else { 80 }),
        };
        anyhow::ensure!(!host.is_empty(), "--relay {url:?} names no host");
        Ok(Base {
            tls,
            host: host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_owned(),
            port,
        })
    }
}

async fn call(
    base: &Base,
    ca_cert: Option<&std::path::Path>,
    method: &str,
    path: &str,
    token: &str,
    body: Option<Value>,
) -> anyhow::Result<(u16, Value)> {
    let tcp = tokio::net::TcpStream::connect((base.host.as_str(), base.port))
        .await
        .with_context(|| format!("connecting to {}:{}", base.host, base.port))?;
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nAuthorization: Bearer \
         {token}\r\nAccept: application/json\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        base.host,
        body.len()
    );
    let response = if base.tls {
        let config = tls_config(ca_cert)?;
        let name = rustls::pki_types::ServerName::try_from(base.host.clone())
            .with_context(|| format!("{:?} is not a valid TLS server name", base.host))?;
        let stream = tokio_rustls::TlsConnector::from(config)
            .connect(name, tcp)
            .await
            .context("TLS handshake with the relay")?;
        exchange(stream, &request).await?
    } else {
        exchange(tcp, &request).await?
    };
    parse_response(&response)
}

/// Sends the request and reads the whole answer (the relay closes after it; at most 16 MiB).
async fn exchange<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: S,
    request: &str,
) -> anyhow::Result<Vec<u8>> {
    stream.write_all(request.as_bytes()).await?;
    stream.flush().await?;
    let mut response = Vec::new();
    let mut limited = (&mut stream).take(16 << 20);
    let read = limited.read_to_end(&mut response);
    match tokio::time::timeout(std::time::Duration::from_secs(30), read).await {
        Ok(Ok(_)) => Ok(response),
        // A TLS peer that closes without close_notify still sent the whole answer.
        Ok(Err(e)) if !response.is_empty() && e.kind() == std::io::ErrorKind::UnexpectedEof => {
            Ok(response)
        }
        Ok(Err(e)) => Err(e).context("reading the relay's answer"),
        Err(_) => anyhow::bail!("the relay did not answer within 30 s"),
    }
}

fn parse_response(response: &[u8]) -> anyhow::Result<(u16, Value)> {
    let text = String::from_utf8_lossy(response);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .context("the relay's answer is not HTTP")?;
    let status: u16 = head
        .get(9..12)
        .and_then(|s| s.parse().ok())
        .context("the relay's answer has no status")?;
    let chunked = head.lines().any(|l| {
        l.to_ascii_lowercase()
            .starts_with("transfer-encoding: chunked")
    });
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_owned()
    };
    let value = serde_json::from_str(&body).unwrap_or_else(|_| {
        json!({ "error": format!("not JSON (is {status} from a relay?): {}", body.chars().take(200).collect::<String>()) })
    });
    Ok((status, value))
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if size == 0 || rest.len() < size {
            break;
        }
        out.push_str(&rest[..size]);
        body = rest[size..].trim_start_matches("\r\n");
    }
    out
}

/// rustls with ring, the public web roots and the `--ca-cert` certificates.
fn tls_config(ca_cert: Option<&std::path::Path>) -> anyhow::Result<Arc<rustls::ClientConfig>> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::CertificateDer;
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    if let Some(path) = ca_cert {
        for cert in CertificateDer::pem_file_iter(path)
            .with_context(|| format!("reading --ca-cert {}", path.display()))?
        {
            roots.add(cert.with_context(|| format!("parsing --ca-cert {}", path.display()))?)?;
        }
    }
    Ok(Arc::new(
        rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relay_urls_of_every_scheme_name_the_same_listener() {
        let base = Base::parse("wss://relay.example.com/mcp").unwrap();
        assert_eq!(
            (base.tls, base.host.as_str(), base.port),
            (true, "relay.example.com", 443)
        );
        let base = Base::parse("http://127.0.0.1:8080").unwrap();
        assert_eq!(
            (base.tls, base.host.as_str(), base.port),
            (false, "127.0.0.1", 8080)
        );
        assert!(Base::parse("relay.example.com").is_err());
    }

    #[test]
    fn tables_align_their_columns() {
        let text = table(&["A", "LONG"], vec![vec!["xyz".into(), "1".into()]]);
        assert_eq!(text, "A    LONG\nxyz  1\n");
    }
}
