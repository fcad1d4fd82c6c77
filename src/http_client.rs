//! A small HTTP/1.1 client: one request per connection, TLS through rustls (public roots plus
//! an optional private CA), the answer read whole and parsed as JSON. It serves
//! `mcp-relay admin` ([`crate::operator::admin_cli`]) and the JWKS fetch ([`crate::auth::jwks`]): their
//! requests are tiny and rare, and a full HTTP client would be the largest dependency of the
//! relay for their sake.

use std::sync::Arc;

use anyhow::Context;
use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Where a server is: scheme (TLS or not), host and port.
pub(crate) struct Base {
    pub(crate) tls: bool,
    pub(crate) host: String,
    pub(crate) port: u16,
}

impl Base {
    /// Reads the scheme, host and port of `url` (`http`, `https`, `ws`, `wss`); the path is not
    /// kept.
    pub(crate) fn parse(url: &str) -> anyhow::Result<Base> {
        let (tls, rest) = if let Some(rest) = url.strip_prefix("https://") {
            (true, rest)
        } else if let Some(rest) = url.strip_prefix("wss://") {
            (true, rest)
        } else if let Some(rest) = url.strip_prefix("http://") {
            (false, rest)
        } else if let Some(rest) = url.strip_prefix("ws://") {
            (false, rest)
        } else {
            anyhow::bail!("{url:?}: use an http://, https://, ws:// or wss:// URL");
        };
        let authority = rest.split('/').next().unwrap_or_default();
        let (host, port) = match authority.rsplit_once(':') {
            Some((host, port)) if !host.ends_with(']') || authority.starts_with('[') => (
                host,
                port.parse()
                    .with_context(|| format!("{url:?}: bad port {port:?}"))?,
            ),
            _ => (authority, if tls { 443 } else { 80 }),
        };
        anyhow::ensure!(!host.is_empty(), "{url:?} names no host");
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

/// One request, its answer read whole and parsed as JSON (a body that is not JSON becomes
/// `{"error": "not JSON …"}`), with `Authorization: Bearer` when a token is given.
pub(crate) async fn call(
    base: &Base,
    ca_cert: Option<&std::path::Path>,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<Value>,
) -> anyhow::Result<(u16, Value)> {
    let tcp = tokio::net::TcpStream::connect((base.host.as_str(), base.port))
        .await
        .with_context(|| format!("connecting to {}:{}", base.host, base.port))?;
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let authorization = token
        .map(|token| format!("Authorization: Bearer {token}\r\n"))
        .unwrap_or_default();
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n{authorization}\
         Accept: application/json\r\nContent-Type: application/json\r\n\
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
            .with_context(|| format!("TLS handshake with {}", base.host))?;
        exchange(stream, &request).await?
    } else {
        exchange(tcp, &request).await?
    };
    parse_response(&response)
}

/// Sends the request and reads the whole answer (the server closes after it; at most 16 MiB).
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
        Ok(Err(e)) => Err(e).context("reading the answer"),
        Err(_) => anyhow::bail!("no answer within 30 s"),
    }
}

fn parse_response(response: &[u8]) -> anyhow::Result<(u16, Value)> {
    let text = String::from_utf8_lossy(response);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .context("the answer is not HTTP")?;
    let status: u16 = head
        .get(9..12)
        .and_then(|s| s.parse().ok())
        .context("the answer has no status")?;
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
        json!({ "error": format!("not JSON (status {status}): {}", body.chars().take(200).collect::<String>()) })
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
}
