//! Connecting to NATS with the credentials and TLS options from `serve`'s flags.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;

use crate::config::ServeConfig;

/// What a NATS connection is for, which its log lines say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// The cluster link: presence and connection traffic.
    Cluster,
    /// The shared state store (`--state nats`).
    State,
}

impl Purpose {
    fn label(self) -> &'static str {
        match self {
            Purpose::Cluster => "cluster",
            Purpose::State => "state store",
        }
    }

    fn when_lost(self) -> &'static str {
        match self {
            Purpose::Cluster => "serving local pairs only",
            Purpose::State => "approvals and revocations made now fail until it is back",
        }
    }
}

/// Opens the NATS client. The connection is made in the background and retried forever, so a
/// relay started while NATS is down serves its local pairs and joins the cluster once NATS is
/// reachable. `connected` follows the connection state for `/healthz` and `/metrics`.
pub async fn connect(
    config: &ServeConfig,
    url: &str,
    node_id: &str,
    purpose: Purpose,
    connected: Arc<AtomicBool>,
    on_reconnect: Arc<tokio::sync::Notify>,
) -> anyhow::Result<async_nats::Client> {
    let settings = &config.cluster_options;
    let mut options = async_nats::ConnectOptions::new()
        .name(match purpose {
            Purpose::Cluster => format!("mcp-relay {node_id}"),
            Purpose::State => "mcp-relay state store".to_owned(),
        })
        .retry_on_initial_connect()
        .max_reconnects(None)
        .connection_timeout(Duration::from_secs(2))
        // Frequent pings notice a dead NATS server quickly; the outage then shows in /healthz.
        .ping_interval(Duration::from_secs(2))
        // Backoff capped low: a cluster whose transport just came back should heal in seconds.
        .reconnect_delay_callback(|attempts| {
            Duration::from_millis((100 * attempts.min(10) as u64).max(100))
        })
        .event_callback(move |event| {
            let connected = Arc::clone(&connected);
            let on_reconnect = Arc::clone(&on_reconnect);
            async move {
                let label = purpose.label();
                match event {
                    async_nats::Event::Connected => {
                        tracing::info!("{label}: connected to NATS");
                        connected.store(true, Ordering::Relaxed);
                        on_reconnect.notify_one();
                    }
                    async_nats::Event::Disconnected => {
                        let lost = purpose.when_lost();
                        tracing::warn!("{label}: lost the NATS connection; {lost}");
                        connected.store(false, Ordering::Relaxed);
                    }
                    other => tracing::info!(event = %other, "{label}: NATS event"),
                }
            }
        });
    if let (Some(user), Some(password)) = (&settings.nats_user, &settings.nats_password) {
        options = options.user_and_password(user.clone(), password.clone());
    }
    if let Some(token) = &settings.nats_token {
        options = options.token(token.clone());
    }
    if let Some(creds) = &settings.nats_creds {
        options = options
            .credentials_file(creds)
            .await
            .with_context(|| format!("reading NATS credentials {}", creds.display()))?;
    }
    if let Some(ca) = &settings.nats_tls_ca {
        options = options.add_root_certificates(ca.clone()).require_tls(true);
    }
    if let (Some(cert), Some(key)) = (&settings.nats_tls_cert, &settings.nats_tls_key) {
        options = options.add_client_certificate(cert.clone(), key.clone());
    }
    if settings.nats_tls_required {
        options = options.require_tls(true);
    }
    let servers: Vec<async_nats::ServerAddr> = url
        .split(',')
        .map(|s| s.trim().parse())
        .collect::<Result<_, _>>()
        .with_context(|| format!("parsing --cluster {url:?}"))?;
    options
        .connect(servers)
        .await
        .with_context(|| format!("connecting to NATS at {url}"))
}
