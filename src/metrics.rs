//! Counters and gauges served at `/metrics` in the Prometheus text format.
//!
//! Plain atomics rather than a metrics framework: the relay has a dozen series, they are updated
//! on the forwarding hot path, and a relaxed atomic add is the cheapest thing that is still
//! exact.

use std::fmt::Write;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use crate::frame::code;

/// Upper bounds (seconds) of the forward-latency histogram buckets.
const LATENCY_BUCKETS: [f64; 14] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0, 60.0,
];

/// Error codes counted individually (every code the relay answers with, from the one list in
/// `mcp_relay_wire::code`); anything else lands in `other`, the last slot.
const COUNTED_CODES: [i64; code::RELAY_CODES.len() + 1] = {
    let mut codes = [0; code::RELAY_CODES.len() + 1];
    let mut i = 0;
    while i < code::RELAY_CODES.len() {
        codes[i] = code::RELAY_CODES[i];
        i += 1;
    }
    codes
};

#[derive(Default)]
pub struct Metrics {
    pub extension_sockets: AtomicI64,
    pub mcp_sockets: AtomicI64,
    pub extensions: AtomicI64,
    pub connections: AtomicI64,
    pub pending_requests: AtomicI64,
    pub forwarded_requests: AtomicU64,
    pub forwarded_notifications: AtomicU64,
    pub responses: AtomicU64,
    pub unknown_responses: AtomicU64,
    pub timeouts: AtomicU64,
    pub rejected_sockets: AtomicU64,
    pub slow_peer_disconnects: AtomicU64,
    /// Vanished extensions some MCP client still waits for (`hub::ReturnWatch`).
    pub awaited_extensions: AtomicI64,
    errors_by_code: [AtomicU64; COUNTED_CODES.len()],
    latency_buckets: [AtomicU64; LATENCY_BUCKETS.len()],
    latency_count: AtomicU64,
    latency_sum_micros: AtomicU64,
}

/// Counts one open socket of a role for as long as it lives (decremented on drop, whatever
/// path the session leaves by).
pub struct SocketGauge {
    metrics: Arc<Metrics>,
    gauge: fn(&Metrics) -> &AtomicI64,
}

impl SocketGauge {
    pub fn open(metrics: &Arc<Metrics>, gauge: fn(&Metrics) -> &AtomicI64) -> SocketGauge {
        gauge(metrics).fetch_add(1, Relaxed);
        SocketGauge {
            metrics: Arc::clone(metrics),
            gauge,
        }
    }
}

impl Drop for SocketGauge {
    fn drop(&mut self) {
        (self.gauge)(&self.metrics).fetch_sub(1, Relaxed);
    }
}

impl Metrics {
    /// Counts one error response the relay sent or passed through.
    pub fn error(&self, code: i64) {
        let slot = COUNTED_CODES
            .iter()
            .position(|c| *c == code)
            .unwrap_or(COUNTED_CODES.len() - 1);
        self.errors_by_code[slot].fetch_add(1, Relaxed);
    }

    /// Records how long a forwarded request took to be answered.
    pub fn observe_latency(&self, elapsed: Duration) {
        let secs = elapsed.as_secs_f64();
        for (bucket, bound) in self.latency_buckets.iter().zip(LATENCY_BUCKETS) {
            if secs <= bound {
                bucket.fetch_add(1, Relaxed);
            }
        }
        self.latency_count.fetch_add(1, Relaxed);
        self.latency_sum_micros
            .fetch_add(elapsed.as_micros() as u64, Relaxed);
    }

    /// The Prometheus text exposition.
    pub fn render(&self) -> String {
        let mut out = String::with_capacity(4096);
        let gauge = |out: &mut String, name: &str, help: &str, value: i64| {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {value}"
            );
        };
        let counter = |out: &mut String, name: &str, help: &str, value: u64| {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} counter\n{name} {value}"
            );
        };
        let _ = writeln!(
            out,
            "# HELP mcp_relay_sockets Open WebSocket connections by role.\n# TYPE mcp_relay_sockets gauge"
        );
        let _ = writeln!(
            out,
            "mcp_relay_sockets{{role=\"extension\"}} {}",
            self.extension_sockets.load(Relaxed)
        );
        let _ = writeln!(
            out,
            "mcp_relay_sockets{{role=\"mcp\"}} {}",
            self.mcp_sockets.load(Relaxed)
        );
        gauge(
            &mut out,
            "mcp_relay_extensions",
            "Authenticated extensions (identities, not sockets).",
            self.extensions.load(Relaxed),
        );
        gauge(
            &mut out,
            "mcp_relay_connections",
            "Active MCP-to-extension connections.",
            self.connections.load(Relaxed),
        );
        gauge(
            &mut out,
            "mcp_relay_pending_requests",
            "Forwarded requests waiting for the extension's answer.",
            self.pending_requests.load(Relaxed),
        );
        gauge(
            &mut out,
            "mcp_relay_awaited_extensions",
            "Vanished extensions whose MCP clients wait to be told `connected` (bounded, aging out).",
            self.awaited_extensions.load(Relaxed),
        );
        counter(
            &mut out,
            "mcp_relay_forwarded_requests_total",
            "Requests forwarded from MCP clients to extensions.",
            self.forwarded_requests.load(Relaxed),
        );
        counter(
            &mut out,
            "mcp_relay_forwarded_notifications_total",
            "Notifications forwarded in either direction.",
            self.forwarded_notifications.load(Relaxed),
        );
        counter(
            &mut out,
            "mcp_relay_responses_total",
            "Extension responses delivered to MCP clients.",
            self.responses.load(Relaxed),
        );
        counter(
            &mut out,
            "mcp_relay_unknown_responses_total",
            "Responses whose id matched no pending request (dropped).",
            self.unknown_responses.load(Relaxed),
        );
        counter(
            &mut out,
            "mcp_relay_timeouts_total",
            "Forwarded requests answered with a timeout error.",
            self.timeouts.load(Relaxed),
        );
        counter(
            &mut out,
            "mcp_relay_rejected_sockets_total",
            "WebSocket upgrades refused because the socket limit was reached.",
            self.rejected_sockets.load(Relaxed),
        );
        counter(
            &mut out,
            "mcp_relay_slow_peer_disconnects_total",
            "Peers disconnected because they stopped reading.",
            self.slow_peer_disconnects.load(Relaxed),
        );
        let _ = writeln!(
            out,
            "# HELP mcp_relay_errors_total Error responses sent to MCP clients, by JSON-RPC code.\n# TYPE mcp_relay_errors_total counter"
        );
        for (code, count) in COUNTED_CODES.iter().zip(&self.errors_by_code) {
            let label = if *code == 0 {
                "other".to_string()
            } else {
                code.to_string()
            };
            let _ = writeln!(
                out,
                "mcp_relay_errors_total{{code=\"{label}\"}} {}",
                count.load(Relaxed)
            );
        }
        let _ = writeln!(
            out,
            "# HELP mcp_relay_forward_latency_seconds Time from forwarding a request to its answer.\n# TYPE mcp_relay_forward_latency_seconds histogram"
        );
        for (bound, count) in LATENCY_BUCKETS.iter().zip(&self.latency_buckets) {
            let _ = writeln!(
                out,
                "mcp_relay_forward_latency_seconds_bucket{{le=\"{bound}\"}} {}",
                count.load(Relaxed)
            );
        }
        let count = self.latency_count.load(Relaxed);
        let _ = writeln!(
            out,
            "mcp_relay_forward_latency_seconds_bucket{{le=\"+Inf\"}} {count}"
        );
        let _ = writeln!(
            out,
            "mcp_relay_forward_latency_seconds_sum {}",
            self.latency_sum_micros.load(Relaxed) as f64 / 1e6
        );
        let _ = writeln!(out, "mcp_relay_forward_latency_seconds_count {count}");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_relay_code_has_its_own_series_and_the_rest_are_other() {
        let metrics = Metrics::default();
        for code in [
            code::OWNER_APPROVAL_REQUIRED,
            code::BROWSER_NOT_APPROVED,
            code::NOT_CONNECTED,
        ] {
            metrics.error(code);
        }
        metrics.error(-32099);
        let text = metrics.render();
        for code in code::RELAY_CODES {
            assert!(
                text.contains(&format!("mcp_relay_errors_total{{code=\"{code}\"}}")),
                "no series for {code}"
            );
        }
        assert!(
            text.contains("mcp_relay_errors_total{code=\"-32012\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("mcp_relay_errors_total{code=\"-32010\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("mcp_relay_errors_total{code=\"other\"} 1"),
            "{text}"
        );
    }
}
