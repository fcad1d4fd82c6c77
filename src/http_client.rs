//! A small HTTP/1.1 client: one request per connection, TLS through rustls (public roots plus
//! an optional private CA), the answer read whole and parsed as JSON. It serves
//! `mcp-relay admin` ([`crate::operator::admin_cli`]) and the JWKS fetch ([`crate::auth::jwks`]).
//! The HTTP itself (the request, the answer's framing, chunked bodies) is hyper's client half,
//! over a TCP or rustls stream this file opens: hyper is linked already (it serves the relay),
//! and a full client stack would be the largest dependency of the relay for requests this tiny
//! and rare.

use std::sync::Arc;

use anyhow::Context;
use http_body_util::BodyExt;
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncWrite};

/// The most of an answer read (a JWKS, an admin API answer).
const MAX_ANSWER_BYTES: usize = 16 << 20;

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
/// `{"error": "not JSON …"}`), with `Authorization: Bearer` when a token is given. The whole
/// exchange has 30 s.
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
    let host = if base.host.contains(':') {
        format!("[{}]", base.host)
    } else {
        base.host.clone()
    };
    let mut request = hyper::Request::builder()
        .method(method)
        .uri(path)
        .header(hyper::header::HOST, host)
        .header(hyper::header::ACCEPT, "application/json")
        .header(hyper::header::CONTENT_TYPE, "application/json");
    if let Some(token) = token {
        request = request.header(hyper::header::AUTHORIZATION, format!("Bearer {token}"));
    }
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let request = request
        .body(http_body_util::Full::new(bytes::Bytes::from(body)))
        .context("building the request")?;
    let exchange = async {
        if base.tls {
            let config = tls_config(ca_cert)?;
            let name = rustls::pki_types::ServerName::try_from(base.host.clone())
                .with_context(|| format!("{:?} is not a valid TLS server name", base.host))?;
            let stream = tokio_rustls::TlsConnector::from(config)
                .connect(name, tcp)
                .await
                .with_context(|| format!("TLS handshake with {}", base.host))?;
            exchange(stream, request).await
        } else {
            exchange(tcp, request).await
        }
    };
    match tokio::time::timeout(std::time::Duration::from_secs(30), exchange).await {
        Ok(answer) => answer,
        Err(_) => anyhow::bail!("no answer within 30 s"),
    }
}

/// Sends the request over `stream` and reads the whole answer (at most [`MAX_ANSWER_BYTES`]).
async fn exchange<S: AsyncRead + AsyncWrite + Unpin + Send + 'static>(
    stream: S,
    request: hyper::Request<http_body_util::Full<bytes::Bytes>>,
) -> anyhow::Result<(u16, Value)> {
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .context("starting the HTTP exchange")?;
    let connection = tokio::spawn(connection);
    let response = sender
        .send_request(request)
        .await
        .context("sending the request")?;
    let status = response.status().as_u16();
    let body = http_body_util::Limited::new(response.into_body(), MAX_ANSWER_BYTES)
        .collect()
        .await
        .map_err(|e| anyhow::anyhow!("reading the answer: {e}"))?
        .to_bytes();
    connection.abort();
    let value = serde_json::from_slice(&body).unwrap_or_else(|_| {
        let text = String::from_utf8_lossy(&body);
        json!({ "error": format!("not JSON (status {status}): {}", text.chars().take(200).collect::<String>()) })
    });
    Ok((status, value))
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
