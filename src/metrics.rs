//! Counters and gauges served at `/metrics` in the Prometheus text format.
//!
//! The series live in a `prometheus` [`Registry`] (the Prometheus client library, which also
//! writes the text exposition); the handles below are what the relay updates. Each is an atomic
//! (a counter's `inc` is one relaxed add), so the forwarding hot path pays what it paid before;
//! labelled series (`mcp_relay_sockets{role}`, `mcp_relay_errors_total{code}`) are resolved
//! once, here, and never looked up per event.
//!
//! Some figures are kept where they are counted, not here: the connection registry's stages,
//! the cluster's view, the HTTP endpoint's sessions and refusals, the audit writer's drops.
//! Mirroring each into a registered series would add a write on their paths for a value read
//! once per scrape, so they are read at scrape time into a [`Sampled`] and written by the same
//! encoder: one exposition, one format, no text written by hand.

use std::sync::Arc;
use std::time::Duration;

use prometheus::proto::{self, LabelPair, MetricFamily, MetricType};
use prometheus::{
    Encoder, Histogram, HistogramOpts, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts,
    Registry, TextEncoder,
};

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

pub struct Metrics {
    registry: Registry,
    pub extension_sockets: IntGauge,
    pub mcp_sockets: IntGauge,
    pub extensions: IntGauge,
    pub connections: IntGauge,
    pub pending_requests: IntGauge,
    pub forwarded_requests: IntCounter,
    pub forwarded_notifications: IntCounter,
    pub responses: IntCounter,
    pub unknown_responses: IntCounter,
    pub timeouts: IntCounter,
    pub rejected_sockets: IntCounter,
    pub slow_peer_disconnects: IntCounter,
    /// Vanished extensions some MCP client still waits for (`hub::ReturnWatch`).
    pub awaited_extensions: IntGauge,
    /// `mcp_relay_errors_total{code}`, in the order of [`COUNTED_CODES`].
    errors_by_code: Vec<IntCounter>,
    latency: Histogram,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

/// Counts one open socket of a role for as long as it lives (decremented on drop, whatever
/// path the session leaves by).
pub struct SocketGauge {
    metrics: Arc<Metrics>,
    gauge: fn(&Metrics) -> &IntGauge,
}

impl SocketGauge {
    pub fn open(metrics: &Arc<Metrics>, gauge: fn(&Metrics) -> &IntGauge) -> SocketGauge {
        gauge(metrics).inc();
        SocketGauge {
            metrics: Arc::clone(metrics),
            gauge,
        }
    }
}

impl Drop for SocketGauge {
    fn drop(&mut self) {
        (self.gauge)(&self.metrics).dec();
    }
}

impl Metrics {
    /// Every series registered, at zero.
    pub fn new() -> Metrics {
        let registry = Registry::new();
        let register = |collector: Box<dyn prometheus::core::Collector>| {
            registry
                .register(collector)
                .expect("metric names are distinct and valid");
        };
        let gauge = |name: &str, help: &str| {
            let gauge = IntGauge::new(name, help).expect("a valid metric");
            register(Box::new(gauge.clone()));
            gauge
        };
        let counter = |name: &str, help: &str| {
            let counter = IntCounter::new(name, help).expect("a valid metric");
            register(Box::new(counter.clone()));
            counter
        };
        let sockets = IntGaugeVec::new(
            Opts::new("mcp_relay_sockets", "Open WebSocket connections by role."),
            &["role"],
        )
        .expect("a valid metric");
        register(Box::new(sockets.clone()));
        let errors = IntCounterVec::new(
            Opts::new(
                "mcp_relay_errors_total",
                "Error responses sent to MCP clients, by JSON-RPC code.",
            ),
            &["code"],
        )
        .expect("a valid metric");
        register(Box::new(errors.clone()));
        let errors_by_code = COUNTED_CODES
            .iter()
            .map(|code| {
                let label = if *code == 0 {
                    "other".to_owned()
                } else {
                    code.to_string()
                };
                errors.with_label_values(&[label.as_str()])
            })
            .collect();
        let latency = Histogram::with_opts(
            HistogramOpts::new(
                "mcp_relay_forward_latency_seconds",
                "Time from forwarding a request to its answer.",
            )
            .buckets(LATENCY_BUCKETS.to_vec()),
        )
        .expect("a valid metric");
        register(Box::new(latency.clone()));
        Metrics {
            extension_sockets: sockets.with_label_values(&["extension"]),
            mcp_sockets: sockets.with_label_values(&["mcp"]),
            extensions: gauge(
                "mcp_relay_extensions",
                "Authenticated extensions (identities, not sockets).",
            ),
            connections: gauge(
                "mcp_relay_connections",
                "Active MCP-to-extension connections.",
            ),
            pending_requests: gauge(
                "mcp_relay_pending_requests",
                "Forwarded requests waiting for the extension's answer.",
            ),
            awaited_extensions: gauge(
                "mcp_relay_awaited_extensions",
                "Vanished extensions whose MCP clients wait to be told `connected` (bounded, aging out).",
            ),
            forwarded_requests: counter(
                "mcp_relay_forwarded_requests_total",
                "Requests forwarded from MCP clients to extensions.",
            ),
            forwarded_notifications: counter(
                "mcp_relay_forwarded_notifications_total",
                "Notifications forwarded in either direction.",
            ),
            responses: counter(
                "mcp_relay_responses_total",
                "Extension responses delivered to MCP clients.",
            ),
            unknown_responses: counter(
                "mcp_relay_unknown_responses_total",
                "Responses whose id matched no pending request (dropped).",
            ),
            timeouts: counter(
                "mcp_relay_timeouts_total",
                "Forwarded requests answered with a timeout error.",
            ),
            rejected_sockets: counter(
                "mcp_relay_rejected_sockets_total",
                "WebSocket upgrades refused because the socket limit was reached.",
            ),
            slow_peer_disconnects: counter(
                "mcp_relay_slow_peer_disconnects_total",
                "Peers disconnected because they stopped reading.",
            ),
            errors_by_code,
            latency,
            registry,
        }
    }

    /// Counts one error response the relay sent or passed through.
    pub fn error(&self, code: i64) {
        let slot = COUNTED_CODES
            .iter()
            .position(|c| *c == code)
            .unwrap_or(COUNTED_CODES.len() - 1);
        self.errors_by_code[slot].inc();
    }

    /// Records how long a forwarded request took to be answered.
    pub fn observe_latency(&self, elapsed: Duration) {
        self.latency.observe(elapsed.as_secs_f64());
    }

    /// The registered series alone, as text.
    pub fn render(&self) -> String {
        self.render_with(Sampled::default())
    }

    /// The Prometheus text exposition: the registered series, then `sampled`'s.
    pub fn render_with(&self, sampled: Sampled) -> String {
        let mut families = self.registry.gather();
        families.extend(sampled.0);
        let mut out = Vec::with_capacity(4096);
        TextEncoder::new()
            .encode(&families, &mut out)
            .expect("the text encoder writes to memory");
        String::from_utf8(out).expect("the text exposition is UTF-8")
    }
}

/// Series read at scrape time from where they are kept (see the module doc), in the order
/// they are added.
#[derive(Default)]
pub struct Sampled(Vec<MetricFamily>);

impl Sampled {
    /// A gauge without labels.
    pub fn gauge(&mut self, name: &str, help: &str, value: u64) -> &mut Self {
        self.family(name, help, MetricType::GAUGE, None, &[("", value)])
    }

    /// A counter without labels.
    pub fn counter(&mut self, name: &str, help: &str, value: u64) -> &mut Self {
        self.family(name, help, MetricType::COUNTER, None, &[("", value)])
    }

    /// A gauge with one sample per value of `label`.
    pub fn gauge_by(
        &mut self,
        name: &str,
        help: &str,
        label: &str,
        samples: &[(&str, u64)],
    ) -> &mut Self {
        self.family(name, help, MetricType::GAUGE, Some(label), samples)
    }

    /// A counter with one sample per value of `label`.
    pub fn counter_by(
        &mut self,
        name: &str,
        help: &str,
        label: &str,
        samples: &[(&str, u64)],
    ) -> &mut Self {
        self.family(name, help, MetricType::COUNTER, Some(label), samples)
    }

    fn family(
        &mut self,
        name: &str,
        help: &str,
        kind: MetricType,
        label: Option<&str>,
        samples: &[(&str, u64)],
    ) -> &mut Self {
        let metrics = samples
            .iter()
            .map(|&(label_value, value)| {
                let mut metric = proto::Metric::default();
                if let Some(label) = label {
                    let mut pair = LabelPair::default();
                    pair.set_name(label.to_owned());
                    pair.set_value(label_value.to_owned());
                    metric.set_label(vec![pair]);
                }
                // Counts far below 2^53: exact as f64, written as integers.
                let value = value as f64;
                if kind == MetricType::COUNTER {
                    let mut counter = proto::Counter::default();
                    counter.set_value(value);
                    metric.set_counter(counter);
                } else {
                    let mut gauge = proto::Gauge::default();
                    gauge.set_value(value);
                    metric.set_gauge(gauge);
                }
                metric
            })
            .collect();
        let mut family = MetricFamily::default();
        family.set_name(name.to_owned());
        family.set_help(help.to_owned());
        family.set_field_type(kind);
        family.set_metric(metrics);
        self.0.push(family);
        self
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

    /// The library writes what the hand-written exposition wrote: the same names, labels,
    /// label values (bucket bounds as `0.0005` and `60`, not `60.0`) and values.
    #[test]
    fn the_exposition_keeps_every_name_label_and_value() {
        let metrics = Arc::new(Metrics::default());
        let _socket = SocketGauge::open(&metrics, |m| &m.extension_sockets);
        metrics.forwarded_requests.inc_by(3);
        metrics.pending_requests.set(2);
        metrics.observe_latency(Duration::from_millis(2));
        metrics.observe_latency(Duration::from_secs(61));
        let mut sampled = Sampled::default();
        sampled
            .gauge_by(
                "mcp_relay_tcp_connections",
                "Open TCP connections by stage.",
                "stage",
                &[("all", 7), ("pending", 2)],
            )
            .counter("mcp_relay_shed_connections_total", "Shed.", 4);
        let text = metrics.render_with(sampled);
        for line in [
            "# HELP mcp_relay_sockets Open WebSocket connections by role.",
            "# TYPE mcp_relay_sockets gauge",
            "mcp_relay_sockets{role=\"extension\"} 1",
            "mcp_relay_sockets{role=\"mcp\"} 0",
            "# TYPE mcp_relay_forwarded_requests_total counter",
            "mcp_relay_forwarded_requests_total 3",
            "mcp_relay_pending_requests 2",
            "mcp_relay_awaited_extensions 0",
            "# TYPE mcp_relay_forward_latency_seconds histogram",
            "mcp_relay_forward_latency_seconds_bucket{le=\"0.0005\"} 0",
            "mcp_relay_forward_latency_seconds_bucket{le=\"0.0025\"} 1",
            "mcp_relay_forward_latency_seconds_bucket{le=\"60\"} 1",
            "mcp_relay_forward_latency_seconds_bucket{le=\"+Inf\"} 2",
            "mcp_relay_forward_latency_seconds_sum 61.002",
            "mcp_relay_forward_latency_seconds_count 2",
            "mcp_relay_errors_total{code=\"other\"} 0",
            "# HELP mcp_relay_tcp_connections Open TCP connections by stage.",
            "# TYPE mcp_relay_tcp_connections gauge",
            "mcp_relay_tcp_connections{stage=\"all\"} 7",
            "mcp_relay_tcp_connections{stage=\"pending\"} 2",
            "# TYPE mcp_relay_shed_connections_total counter",
            "mcp_relay_shed_connections_total 4",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "no line {line:?} in:\n{text}"
            );
        }
    }
}
