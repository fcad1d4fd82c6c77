//! `mcp-relay bench`: the load generator behind `docs/BENCHMARKS.md`.
//!
//! Every figure is measured against a baseline in the same run: the relay and a JSON-free
//! WebSocket forwarder ([`baseline`]) are each started as a separate process, alternately, with
//! the same load, so the relay's figures can be quoted as ratios to what the machine allows at
//! that moment (these machines are shared and noisy). Servers run as child processes so their
//! RSS and CPU time can be read from `/proc` without the generator's own.

// Only what another crate uses is `pub`; the lint keeps it that way.
#![warn(unreachable_pub)]

pub mod baseline;
mod load;

use std::net::{SocketAddr, TcpListener};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use clap::{Args, ValueEnum};
use futures_util::SinkExt;
use serde_json::json;
use tokio_tungstenite::tungstenite::Message;

use load::{Outcome, Pacing, Target};
use mcp_relay_test_support::NatsServer;
use mcp_relay_wire::units::{parse_bytes, parse_duration};

/// What `bench` can measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Scenario {
    /// Peak throughput of small requests, closed loop, relay vs baseline.
    Small,
    /// Latency at half the relay's peak rate, open loop, relay vs baseline.
    Latency,
    /// Round trip of one client with one request in flight (no queueing anywhere).
    Rtt,
    /// One large result (see --large-payload), bytes/s and relay memory growth.
    Large,
    /// Relay RSS per idle authenticated socket.
    Idle,
    /// A client that stops reading: others' throughput and relay memory.
    Slow,
    /// Two relay nodes joined through a local `nats-server`: cross-node against same-node
    /// round trips (not part of `all`; needs `nats-server` on the PATH).
    Cross,
    /// A three-node cluster against one node: throughput and server CPU per request (not part
    /// of `all`; needs `nats-server` on the PATH).
    Scale,
    /// All of the above but `cross` and `scale`.
    All,
}

/// Options of `mcp-relay bench`.
#[derive(Debug, Clone, Args)]
pub struct BenchArgs {
    /// Scenarios to run, comma-separated.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "all")]
    pub scenarios: Vec<Scenario>,
    /// Runs per scenario and target; medians are reported.
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
    /// Measured time per run.
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    pub duration: Duration,
    /// Fake extensions (each its own user) for the small and latency scenarios.
    #[arg(long, default_value_t = 8)]
    pub extensions: usize,
    /// MCP clients, spread over the extensions.
    #[arg(long, default_value_t = 64)]
    pub clients: usize,
    /// Requests in flight per client (closed loop).
    #[arg(long, default_value_t = 4)]
    pub in_flight: usize,
    /// Request params size.
    #[arg(long, default_value = "100", value_parser = parse_bytes)]
    pub request_payload: usize,
    /// Response result size for the small and latency scenarios.
    #[arg(long, default_value = "512", value_parser = parse_bytes)]
    pub payload: usize,
    /// Response size for the large scenario.
    #[arg(long, default_value = "5MiB", value_parser = parse_bytes)]
    pub large_payload: usize,
    /// Sockets for the idle scenario (mind `ulimit -n`: each costs a descriptor on both sides).
    #[arg(long, default_value_t = 10_000)]
    pub idle_sockets: usize,
    /// Open-loop rate for the latency and cross scenarios; default: half the measured peak
    /// (for cross: half and a quarter of the cross-node peak).
    #[arg(long)]
    pub rate: Option<f64>,
    /// Measure an already running relay at this base URL (e.g. `ws://10.0.0.5:8080`) instead
    /// of starting one; its RSS and CPU are then not reported, and the baseline still runs
    /// locally. Needs --secret, and the relay's rate limit raised or off. For `idle`, the
    /// sockets are opened and then held for --duration (for a heap profiler or a debugger).
    #[arg(long)]
    pub target: Option<String>,
    /// HS256 secret of the --target relay, to mint the generator's tokens.
    #[arg(long, env = "MCP_RELAY_JWT_SECRET", hide_env_values = true)]
    pub secret: Option<String>,
    /// Extra flags for the relay under test (e.g. `--relay-arg=--read-buffer-bytes=2KiB`).
    #[arg(long = "relay-arg", allow_hyphen_values = true)]
    pub relay_args: Vec<String>,
    /// Environment for every relay process the bench starts, cluster nodes included (e.g.
    /// `--relay-env TOKIO_WORKER_THREADS=1`): unlike setting it on `bench` itself, the load
    /// generator keeps its own runtime.
    #[arg(long = "relay-env", value_parser = parse_env_pair)]
    pub relay_env: Vec<(String, String)>,
}

fn parse_env_pair(pair: &str) -> Result<(String, String), String> {
    pair.split_once('=')
        .filter(|(key, _)| !key.is_empty())
        .map(|(key, value)| (key.to_owned(), value.to_owned()))
        .ok_or_else(|| format!("expected KEY=VALUE, got {pair:?}"))
}

/// `--relay-env`, set once by [`run`]: the relay processes are started from several places
/// (single relays, cluster nodes) that do not all see the arguments.
static RELAY_ENV: std::sync::OnceLock<Vec<(String, String)>> = std::sync::OnceLock::new();

/// A server child process (the relay or the baseline) on a loopback port.
struct Server {
    child: Child,
    addr: SocketAddr,
}

const SECRET: &str = "bench-secret-not-for-production-0123456789";

impl Server {
    fn relay(extra: &[&str]) -> anyhow::Result<Server> {
        Self::spawn(|addr| {
            let mut cmd = Command::new(std::env::current_exe()?);
            cmd.args(["serve", "--listen", &addr.to_string(), "--rate-limit", "0"])
                .args(["--max-connections", "100000"])
                .args(["--max-mcp-clients-per-user", "100000"])
                .args(["--request-timeout", "120s"])
                .args(extra)
                .env("MCP_RELAY_JWT_SECRET", SECRET)
                // Unless the relay arguments name a store (`--state sqlite:…`), the bench keeps
                // nothing.
                .env("MCP_RELAY_STATE", "memory")
                .env("MCP_RELAY_LOG", "warn")
                .envs(RELAY_ENV.get().into_iter().flatten().cloned());
            Ok(cmd)
        })
    }

    fn baseline() -> anyhow::Result<Server> {
        Self::spawn(|addr| {
            let mut cmd = Command::new(std::env::current_exe()?);
            cmd.args(["bench-baseline", "--listen", &addr.to_string()]);
            Ok(cmd)
        })
    }

    fn spawn(build: impl FnOnce(SocketAddr) -> anyhow::Result<Command>) -> anyhow::Result<Server> {
        let addr = TcpListener::bind("127.0.0.1:0")?.local_addr()?;
        let child = build(addr)?
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()?;
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(addr).is_err() {
            anyhow::ensure!(Instant::now() < deadline, "server did not start on {addr}");
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(Server { child, addr })
    }

    fn target(&self, relay: bool) -> Target {
        let base = format!("ws://{}", self.addr);
        if relay {
            Target::relay(base, SECRET.into())
        } else {
            Target::Baseline { base }
        }
    }

    fn stats(&self) -> ProcStats {
        ProcStats::read(self.child.id())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Memory and CPU of a process, from `/proc`.
#[derive(Debug, Clone, Copy, Default)]
struct ProcStats {
    rss_kib: u64,
    peak_rss_kib: u64,
    cpu_secs: f64,
}

impl ProcStats {
    fn read(pid: u32) -> ProcStats {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.split_whitespace().next())
                .and_then(|v| v.parse().ok())
                .unwrap_or(0)
        };
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // Fields after the command name (which may contain spaces) start at ')'.
        let ticks: u64 = stat
            .rsplit_once(')')
            .map(|(_, rest)| {
                rest.split_whitespace()
                    .skip(11)
                    .take(2)
                    .filter_map(|v| v.parse::<u64>().ok())
                    .sum()
            })
            .unwrap_or(0);
        ProcStats {
            rss_kib: field("VmRSS:"),
            peak_rss_kib: field("VmHWM:"),
            // Linux reports CPU time in USER_HZ ticks, 100 per second on every mainstream
            // configuration.
            cpu_secs: ticks as f64 / 100.0,
        }
    }
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(|a, b| a.partial_cmp(b).unwrap());
    if values.is_empty() {
        return f64::NAN;
    }
    values[values.len() / 2]
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// One run's figures.
#[derive(Debug, Clone, Copy)]
struct Figures {
    rps: f64,
    bytes_per_sec: f64,
    p50: f64,
    p90: f64,
    p99: f64,
    p999: f64,
    max: f64,
    cpu_secs: f64,
    peak_growth_mib: f64,
}

impl Figures {
    fn from(outcome: &Outcome, before: ProcStats, after: ProcStats) -> Figures {
        let secs = outcome.elapsed.as_secs_f64();
        let h = &outcome.latency_ns;
        Figures {
            rps: outcome.requests as f64 / secs,
            bytes_per_sec: outcome.response_bytes as f64 / secs,
            p50: ms(h.value_at_quantile(0.5)),
            p90: ms(h.value_at_quantile(0.9)),
            p99: ms(h.value_at_quantile(0.99)),
            p999: ms(h.value_at_quantile(0.999)),
            max: ms(h.max()),
            cpu_secs: after.cpu_secs - before.cpu_secs,
            peak_growth_mib: after.peak_rss_kib.saturating_sub(before.rss_kib) as f64 / 1024.0,
        }
    }
}

/// Medians of each figure over runs.
fn medians(runs: &[Figures]) -> Figures {
    let m = |f: fn(&Figures) -> f64| median(&mut runs.iter().map(f).collect::<Vec<_>>());
    Figures {
        rps: m(|f| f.rps),
        bytes_per_sec: m(|f| f.bytes_per_sec),
        p50: m(|f| f.p50),
        p90: m(|f| f.p90),
        p99: m(|f| f.p99),
        p999: m(|f| f.p999),
        max: m(|f| f.max),
        cpu_secs: m(|f| f.cpu_secs),
        peak_growth_mib: m(|f| f.peak_growth_mib),
    }
}

fn relay_args(args: &BenchArgs) -> Vec<&str> {
    args.relay_args.iter().map(String::as_str).collect()
}

/// One measured run against a fresh server.
async fn measure(
    relay: bool,
    args: &BenchArgs,
    extensions: usize,
    clients: usize,
    pacing: Pacing,
    payload: usize,
) -> anyhow::Result<Figures> {
    // A --target relay is measured as it is; anything else runs in a fresh child process
    // whose RSS and CPU time are read around the run.
    let server = match (relay, &args.target) {
        (true, Some(_)) => None,
        (true, None) => Some(Server::relay(&relay_args(args))?),
        (false, _) => Some(Server::baseline()?),
    };
    let target = match (&server, &args.target) {
        (Some(server), _) => server.target(relay),
        (None, base) => Target::relay(
            base.as_deref()
                .unwrap_or_default()
                .trim_end_matches('/')
                .to_owned(),
            args.secret.clone().ok_or_else(|| {
                anyhow::anyhow!("--target needs --secret (or MCP_RELAY_JWT_SECRET)")
            })?,
        ),
    };
    let phase = Phase {
        what: if relay { "relay" } else { "baseline" }.to_owned(),
        pids: server.iter().map(|s| s.child.id()).collect(),
    };
    measured(
        server.as_ref(),
        &phase,
        &target,
        args,
        extensions,
        clients,
        pacing,
        payload,
    )
    .await
}

/// What a measured window runs against, for `MCP_RELAY_BENCH_ON_PHASE`.
struct Phase {
    what: String,
    /// The server processes under test (none for a `--target`).
    pids: Vec<u32>,
}

impl Phase {
    /// Starts `MCP_RELAY_BENCH_ON_PHASE`, if set, with `sh -c` as the measured window begins,
    /// and does not wait for it. Its environment says what runs: `BENCH_PHASE` (e.g.
    /// `cross-node Open { rate: 20428.0 }`), `BENCH_PIDS` (the servers' process ids,
    /// comma-separated, `nats-server` last for a cluster) and `BENCH_SECS` (the window). Why:
    /// a profiler attached by hand catches set-up or the wrong phase (an idle `nats-server`,
    /// say); this attaches one (`perf record -p "$BENCH_PIDS" -- sleep "$BENCH_SECS"`) to
    /// exactly the window one row of the table is measured in.
    fn started(&self, pacing: Pacing, window: Duration) {
        let Ok(command) = std::env::var("MCP_RELAY_BENCH_ON_PHASE") else {
            return;
        };
        let phase = format!("{} {pacing:?}", self.what);
        let pids = self
            .pids
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(",");
        eprintln!("  phase starts: {phase} (pids {pids})");
        let spawned = Command::new("sh")
            .args(["-c", &command])
            .env("BENCH_PHASE", &phase)
            .env("BENCH_PIDS", &pids)
            .env("BENCH_SECS", format!("{}", window.as_secs_f64()))
            .stdin(Stdio::null())
            .spawn();
        match spawned {
            // Reaped in the background: the window must not wait for the profiler.
            Ok(mut child) => drop(std::thread::spawn(move || child.wait())),
            Err(error) => eprintln!("  MCP_RELAY_BENCH_ON_PHASE did not start: {error}"),
        }
    }
}

/// One run of the load against `target`, with `server`'s RSS and CPU time read around it when
/// it is a local child process.
#[allow(clippy::too_many_arguments)]
async fn measured(
    server: Option<&Server>,
    phase: &Phase,
    target: &Target,
    args: &BenchArgs,
    extensions: usize,
    clients: usize,
    pacing: Pacing,
    payload: usize,
) -> anyhow::Result<Figures> {
    // Setup (sockets, handshakes) happens inside `run` before the clock starts; stats are
    // read around the whole run, which is dominated by the measured window.
    let stats = || server.map(Server::stats).unwrap_or_default();
    let before = stats();
    let outcome = load::run(
        target,
        extensions,
        clients,
        pacing,
        args.request_payload,
        payload,
        args.duration,
        || phase.started(pacing, args.duration),
    )
    .await?;
    let after = stats();
    Ok(Figures::from(&outcome, before, after))
}

async fn compare(
    args: &BenchArgs,
    extensions: usize,
    clients: usize,
    pacing: Pacing,
    payload: usize,
) -> anyhow::Result<(Figures, Figures)> {
    let mut relay_runs = Vec::new();
    let mut base_runs = Vec::new();
    for run in 0..args.runs {
        // Alternate which goes first so drift on the machine hits both alike.
        let order = if run % 2 == 0 {
            [true, false]
        } else {
            [false, true]
        };
        for relay in order {
            let figures = measure(relay, args, extensions, clients, pacing, payload).await?;
            eprintln!(
                "  run {run} {}: {:.0} req/s, p50 {:.3} ms, p99 {:.3} ms",
                if relay { "relay   " } else { "baseline" },
                figures.rps,
                figures.p50,
                figures.p99
            );
            if relay {
                relay_runs.push(figures);
            } else {
                base_runs.push(figures);
            }
        }
    }
    Ok((medians(&relay_runs), medians(&base_runs)))
}

/// The one line a latency scenario ends with: what the relay costs over the baseline.
fn added_latency(relay: &Figures, base: &Figures) {
    println!(
        "\nrelay adds {:.3} ms at p50 and {:.3} ms at p99 over the baseline\n",
        relay.p50 - base.p50,
        relay.p99 - base.p99
    );
}

fn latency_table(relay: &Figures, base: &Figures) {
    println!("| | req/s | p50 ms | p90 ms | p99 ms | p99.9 ms | max ms | server CPU s |");
    println!("|---|---|---|---|---|---|---|---|");
    for (name, f) in [("relay", relay), ("baseline", base)] {
        println!(
            "| {name} | {:.0} | {:.3} | {:.3} | {:.3} | {:.3} | {:.2} | {:.2} |",
            f.rps, f.p50, f.p90, f.p99, f.p999, f.max, f.cpu_secs
        );
    }
}

/// Entry point of `mcp-relay bench`.
pub async fn run(args: BenchArgs) -> anyhow::Result<()> {
    let _ = RELAY_ENV.set(args.relay_env.clone());
    let all = args.scenarios.contains(&Scenario::All);
    let wants = |s: Scenario| all || args.scenarios.contains(&s);
    println!(
        "# mcp-relay bench\n\nmachine: {} cores; runs per figure: {} (medians); {} s per run\n",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        args.runs,
        args.duration.as_secs_f64()
    );
    let mut relay_peak = None;
    // `latency` runs at half the peak `small` measures, unless `--rate` sets its rate.
    if wants(Scenario::Small) || (wants(Scenario::Latency) && args.rate.is_none()) {
        relay_peak = Some(small(&args).await?);
    }
    if wants(Scenario::Latency) {
        latency(&args, relay_peak).await?;
    }
    if wants(Scenario::Rtt) {
        rtt(&args).await?;
    }
    if wants(Scenario::Large) {
        large(&args).await?;
    }
    if wants(Scenario::Idle) {
        idle(&args).await?;
    }
    if wants(Scenario::Slow) {
        slow(&args).await?;
    }
    if args.scenarios.contains(&Scenario::Cross) {
        cross(&args).await?;
    }
    if args.scenarios.contains(&Scenario::Scale) {
        scale(&args).await?;
    }
    Ok(())
}

/// Peak throughput of small requests, closed loop, relay against baseline; returns the
/// relay's requests/s.
async fn small(args: &BenchArgs) -> anyhow::Result<f64> {
    eprintln!(
        "small: {} clients on {} extensions, {} in flight each",
        args.clients, args.extensions, args.in_flight
    );
    let (relay, base) = compare(
        args,
        args.extensions,
        args.clients,
        Pacing::Closed {
            in_flight: args.in_flight,
        },
        args.payload,
    )
    .await?;
    println!(
        "## small requests, closed loop ({} clients on {} extensions, {} in flight each, {} B results)\n",
        args.clients, args.extensions, args.in_flight, args.payload
    );
    latency_table(&relay, &base);
    println!(
        "\nrelay throughput = {:.0}% of baseline\n",
        100.0 * relay.rps / base.rps
    );
    if args.extensions != args.clients {
        same_topology_as_baseline(args, &base).await?;
    }
    Ok(relay.rps)
}

/// The baseline pairs one extension socket per client; the same topology through the relay
/// separates the cost of the relay's work from that of fewer sockets.
async fn same_topology_as_baseline(args: &BenchArgs, base: &Figures) -> anyhow::Result<()> {
    let mut runs = Vec::new();
    for _ in 0..args.runs {
        let pacing = Pacing::Closed {
            in_flight: args.in_flight,
        };
        runs.push(measure(true, args, args.clients, args.clients, pacing, args.payload).await?);
    }
    let same = medians(&runs);
    println!(
        "same topology as the baseline ({} clients on {} extensions): relay {:.0} req/s = {:.0}% of baseline, p50 {:.3} ms, p99 {:.3} ms\n",
        args.clients, args.clients, same.rps, 100.0 * same.rps / base.rps, same.p50, same.p99
    );
    Ok(())
}

/// Latency below saturation, open loop at `--rate` or half the relay's peak.
async fn latency(args: &BenchArgs, relay_peak: Option<f64>) -> anyhow::Result<()> {
    let rate = args
        .rate
        .unwrap_or_else(|| relay_peak.unwrap_or(1000.0) / 2.0);
    eprintln!("latency: open loop at {rate:.0} req/s");
    let (relay, base) = compare(
        args,
        args.extensions,
        args.clients,
        Pacing::Open { rate },
        args.payload,
    )
    .await?;
    let why = if args.rate.is_some() {
        "set with --rate"
    } else {
        "half the relay's peak"
    };
    println!("## latency below saturation, open loop at {rate:.0} req/s ({why})\n");
    latency_table(&relay, &base);
    added_latency(&relay, &base);
    Ok(())
}

/// Round trip of one client with one request in flight.
async fn rtt(args: &BenchArgs) -> anyhow::Result<()> {
    eprintln!("rtt: one client, one request in flight");
    let (relay, base) = compare(args, 1, 1, Pacing::Closed { in_flight: 1 }, args.payload).await?;
    println!(
        "## round trip, one client, one request in flight ({} B results)\n",
        args.payload
    );
    latency_table(&relay, &base);
    added_latency(&relay, &base);
    Ok(())
}

/// One large result at a time: bytes/s and how much the server's memory grows with it.
async fn large(args: &BenchArgs) -> anyhow::Result<()> {
    eprintln!("large: one client, {} B results", args.large_payload);
    let (relay, base) = compare(
        args,
        1,
        1,
        Pacing::Closed { in_flight: 1 },
        args.large_payload,
    )
    .await?;
    println!(
        "## large results ({:.1} MiB each, one client, one in flight)\n",
        args.large_payload as f64 / 1048576.0
    );
    println!("| | results/s | MiB/s | p50 ms | p99 ms | server peak RSS growth MiB |");
    println!("|---|---|---|---|---|---|");
    for (name, f) in [("relay", &relay), ("baseline", &base)] {
        println!(
            "| {name} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} |",
            f.rps,
            f.bytes_per_sec / 1048576.0,
            f.p50,
            f.p99,
            f.peak_growth_mib
        );
    }
    println!(
        "\nrelay bytes/s = {:.0}% of baseline; relay peak RSS growth = {:.1}x the payload\n",
        100.0 * relay.bytes_per_sec / base.bytes_per_sec,
        relay.peak_growth_mib * 1048576.0 / args.large_payload as f64
    );
    Ok(())
}

/// RSS per idle authenticated MCP socket.
async fn idle(args: &BenchArgs) -> anyhow::Result<()> {
    if let Some(base) = &args.target {
        return idle_target(args, base).await;
    }
    let mut per_socket = Vec::new();
    for run in 0..args.runs {
        let server = Server::relay(&relay_args(args))?;
        let url = format!("ws://{}/mcp", server.addr);
        // Warm up allocator and runtime with a few sockets before the "before" reading.
        let mut sockets = Vec::with_capacity(args.idle_sockets + 16);
        for _ in 0..16 {
            sockets.push(handshaken(&url, SECRET).await?);
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        let before = server.stats();
        open_idle(&url, SECRET, args.idle_sockets, &mut sockets).await?;
        tokio::time::sleep(Duration::from_secs(1)).await;
        let after = server.stats();
        let kib = after.rss_kib.saturating_sub(before.rss_kib) as f64 / args.idle_sockets as f64;
        eprintln!(
            "  run {run}: {kib:.2} KiB per idle socket ({} sockets)",
            args.idle_sockets
        );
        per_socket.push(kib);
        drop(sockets);
    }
    println!(
        "## idle sockets\n\n{} authenticated idle MCP sockets: relay RSS {:.2} KiB per socket (median of {} runs: {:?})\n",
        args.idle_sockets,
        median(&mut per_socket.clone()),
        args.runs,
        per_socket.iter().map(|k| format!("{k:.2}")).collect::<Vec<_>>()
    );
    Ok(())
}

/// The idle scenario against a relay already running (`--target`): opens the same sockets the
/// same way and holds them for `--duration` before closing them. It reads no RSS; it is there
/// so that a relay started under a heap profiler or inspected with a debugger (the accounting
/// of an idle socket's bytes in docs/BENCHMARKS.md) sees exactly what the scenario's relay does.
async fn idle_target(args: &BenchArgs, base: &str) -> anyhow::Result<()> {
    let secret = args
        .secret
        .clone()
        .ok_or_else(|| anyhow::anyhow!("--target needs --secret (or MCP_RELAY_JWT_SECRET)"))?;
    let url = format!("{}/mcp", base.trim_end_matches('/'));
    let mut sockets = Vec::with_capacity(args.idle_sockets);
    open_idle(&url, secret.as_str(), args.idle_sockets, &mut sockets).await?;
    eprintln!(
        "  {} idle sockets open on {base}, held for {:.1} s",
        sockets.len(),
        args.duration.as_secs_f64()
    );
    tokio::time::sleep(args.duration).await;
    drop(sockets);
    Ok(())
}

/// Opens `count` authenticated MCP sockets on `url` into `sockets`, 200 handshakes at a time:
/// the idle scenario's relay and a `--target` relay see the same sockets opened the same way.
async fn open_idle(
    url: &str,
    secret: &str,
    count: usize,
    sockets: &mut Vec<load::Socket>,
) -> anyhow::Result<()> {
    let mut batch = Vec::new();
    for opened in 0..count {
        batch.push(handshaken(url, secret));
        if batch.len() == 200 || opened + 1 == count {
            for ws in futures_util::future::join_all(batch.drain(..)).await {
                sockets.push(ws?);
            }
        }
    }
    Ok(())
}

async fn handshaken(url: &str, secret: &str) -> anyhow::Result<load::Socket> {
    let mut ws = load::connect(url).await?;
    let token = mcp_relay_wire::token::mint_hs256(
        secret.as_bytes(),
        &mcp_relay_wire::token::MintClaims::new("idle", None, Duration::from_secs(3600)),
    );
    let handshake = json!({"jsonrpc": "2.0", "id": 1, "method": "mcp_handshake",
        "params": {"access_token": token}});
    ws.send(Message::Text(handshake.to_string().into())).await?;
    use futures_util::StreamExt;
    let reply = ws.next().await.ok_or_else(|| anyhow::anyhow!("closed"))??;
    anyhow::ensure!(
        reply.to_text()?.contains("\"authenticated\":true"),
        "handshake failed"
    );
    Ok(ws)
}

/// Throughput of well-behaved clients with and without one client that never reads.
async fn slow(args: &BenchArgs) -> anyhow::Result<()> {
    let clients = 16;
    let payload = 64 * 1024;
    let mut without = Vec::new();
    let mut with = Vec::new();
    let mut peaks = Vec::new();
    for _ in 0..args.runs {
        for stalled in [false, true] {
            let server =
                Server::relay(&["--max-send-queue-bytes", "16MiB", "--send-timeout", "5s"])?;
            let target = server.target(true);
            let staller = if stalled {
                Some(stalled_client(&target).await?)
            } else {
                None
            };
            let before = server.stats();
            let outcome = load::run(
                &target,
                4,
                clients,
                Pacing::Closed { in_flight: 2 },
                args.request_payload,
                payload,
                args.duration,
                || {},
            )
            .await?;
            let after = server.stats();
            let figures = Figures::from(&outcome, before, after);
            eprintln!(
                "  {}: {:.0} req/s, peak RSS {} KiB",
                if stalled {
                    "with a stalled client"
                } else {
                    "no stalled client"
                },
                figures.rps,
                after.peak_rss_kib
            );
            if stalled {
                with.push(figures.rps);
                peaks.push(after.peak_rss_kib as f64 / 1024.0);
            } else {
                without.push(figures.rps);
            }
            drop(staller);
        }
    }
    let (without, with) = (median(&mut without), median(&mut with));
    println!(
        "## a client that stops reading\n\n{clients} clients with 64 KiB results: {without:.0} req/s alone, {with:.0} req/s next to a client that sends 2000 requests and never reads ({:.0}%). Relay peak RSS with the stalled client: {:.1} MiB (send queue bound 16 MiB, send timeout 5 s).\n",
        100.0 * with / without,
        median(&mut peaks)
    );
    Ok(())
}

/// Relay nodes joined through one local `nats-server`, fresh for every run.
struct Cluster {
    nodes: Vec<Server>,
    nats: NatsServer,
}

impl Cluster {
    async fn start(nodes: usize) -> anyhow::Result<Cluster> {
        let nats = NatsServer::start(&[])
            .map_err(|e| anyhow::anyhow!("{e} (is nats-server installed?)"))?;
        let url = nats.url();
        let nodes = (0..nodes)
            .map(|n| Server::relay(&["--cluster", &url, "--cluster-node-id", &format!("node-{n}")]))
            .collect::<anyhow::Result<Vec<_>>>()?;
        // Let the nodes see each other's presence before extensions arrive.
        tokio::time::sleep(Duration::from_millis(1500)).await;
        Ok(Cluster { nodes, nats })
    }

    fn base(&self, node: usize) -> String {
        format!("ws://{}", self.nodes[node].addr)
    }

    /// A phase measured against this cluster: its nodes and `nats-server`.
    fn phase(&self, what: &str) -> Phase {
        Phase {
            what: what.to_owned(),
            pids: self
                .nodes
                .iter()
                .map(|n| n.child.id())
                .chain(self.nats.pid())
                .collect(),
        }
    }

    /// CPU seconds of every node and of `nats-server`.
    fn cpu_secs(&self) -> f64 {
        self.nodes.iter().map(|n| n.stats().cpu_secs).sum::<f64>()
            + self
                .nats
                .pid()
                .map_or(0.0, |pid| ProcStats::read(pid).cpu_secs)
    }
}

/// Same-node against cross-node round trips on a two-node cluster: the MCP clients always on
/// node 0, the extensions on node 0 (same node) or node 1 (cross node), alternating per run.
/// "Below saturation" is half (and a quarter of) the cross-node peak, measured first in the
/// same invocation, unless `--rate` sets it.
async fn cross(args: &BenchArgs) -> anyhow::Result<()> {
    let mut rows = Vec::new();
    let mut loads = vec![
        (
            "one client, one in flight".to_owned(),
            1,
            1,
            Pacing::Closed { in_flight: 1 },
        ),
        (
            format!(
                "{} clients on {} extensions, {} in flight each (peak)",
                args.clients, args.extensions, args.in_flight
            ),
            args.clients,
            args.extensions,
            Pacing::Closed {
                in_flight: args.in_flight,
            },
        ),
    ];
    let mut index = 0;
    while index < loads.len() {
        let (name, clients, extensions, pacing) = loads[index].clone();
        index += 1;
        let mut same = Vec::new();
        let mut crossed = Vec::new();
        for run in 0..args.runs {
            for cross_node in [run % 2 == 0, run % 2 != 0] {
                let cluster = Cluster::start(2).await?;
                let target = Target::Relay {
                    mcp_bases: vec![cluster.base(0)],
                    extension_bases: vec![cluster.base(usize::from(cross_node))],
                    secret: SECRET.into(),
                };
                let phase = cluster.phase(if cross_node {
                    "cross-node"
                } else {
                    "same-node"
                });
                let figures = measured(
                    None,
                    &phase,
                    &target,
                    args,
                    extensions,
                    clients,
                    pacing,
                    args.payload,
                )
                .await?;
                eprintln!(
                    "  {name}, {}: {:.0} req/s, p50 {:.3} ms, p99 {:.3} ms",
                    if cross_node {
                        "cross-node"
                    } else {
                        "same node "
                    },
                    figures.rps,
                    figures.p50,
                    figures.p99
                );
                if cross_node {
                    crossed.push(figures);
                } else {
                    same.push(figures);
                }
            }
        }
        let (same, crossed) = (medians(&same), medians(&crossed));
        if matches!(pacing, Pacing::Closed { in_flight } if in_flight > 1) {
            let rates = match args.rate {
                Some(rate) => vec![(rate, "set with --rate")],
                None => vec![
                    ((crossed.rps / 2.0).round(), "half the cross-node peak"),
                    (
                        (crossed.rps / 4.0).round(),
                        "a quarter of the cross-node peak",
                    ),
                ],
            };
            for (rate, why) in rates {
                loads.push((
                    format!(
                        "{clients} clients on {extensions} extensions, open loop at {rate:.0} req/s ({why})"
                    ),
                    clients,
                    extensions,
                    Pacing::Open { rate },
                ));
            }
        }
        rows.push((name, same, crossed));
    }
    println!("## cluster: cross-node against same-node (two nodes, one local nats-server)\n");
    println!("| load | path | req/s | p50 ms | p99 ms |");
    println!("|---|---|---|---|---|");
    for (name, same, crossed) in &rows {
        println!(
            "| {name} | same node | {:.0} | {:.3} | {:.3} |",
            same.rps, same.p50, same.p99
        );
        println!(
            "| {name} | cross node | {:.0} | {:.3} | {:.3} |",
            crossed.rps, crossed.p50, crossed.p99
        );
    }
    for (name, same, crossed) in &rows {
        println!(
            "\n{name}: a cross-node round trip adds {:.3} ms at p50 and {:.3} ms at p99",
            crossed.p50 - same.p50,
            crossed.p99 - same.p99
        );
    }
    println!();
    Ok(())
}

/// How the scale scenario places sockets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Placement {
    /// One relay, no cluster.
    OneNode,
    /// Three nodes; every MCP client on the node of its extension (an affinity-aware balancer).
    Colocated,
    /// Three nodes; clients and extensions dealt round-robin, so most pairs cross nodes (a
    /// balancer that knows nothing of users).
    Spread,
}

impl Placement {
    fn describe(self) -> &'static str {
        match self {
            Placement::OneNode => "one node",
            Placement::Colocated => "three nodes, each pair on one node",
            Placement::Spread => "three nodes, clients and extensions dealt round-robin",
        }
    }
}

/// Throughput of a three-node cluster against one node, closed loop, with the CPU time all
/// server processes (nodes and `nats-server`) spent per request.
async fn scale(args: &BenchArgs) -> anyhow::Result<()> {
    let placements = [Placement::OneNode, Placement::Colocated, Placement::Spread];
    let pacing = Pacing::Closed {
        in_flight: args.in_flight,
    };
    let (clients, extensions) = (args.clients, args.extensions);
    let mut results: Vec<(Vec<Figures>, Vec<f64>)> = vec![Default::default(); placements.len()];
    for run in 0..args.runs {
        // Rotate the order so drift on the machine hits every placement alike.
        for k in 0..placements.len() {
            let slot = (k + run) % placements.len();
            let placement = placements[slot];
            let (figures, cpu) = if placement == Placement::OneNode {
                let server = Server::relay(&relay_args(args))?;
                let target = server.target(true);
                let phase = Phase {
                    what: "scale one-node".to_owned(),
                    pids: vec![server.child.id()],
                };
                let figures = measured(
                    Some(&server),
                    &phase,
                    &target,
                    args,
                    extensions,
                    clients,
                    pacing,
                    args.payload,
                )
                .await?;
                (figures, figures.cpu_secs)
            } else {
                let cluster = Cluster::start(3).await?;
                let nodes: Vec<String> = (0..3).map(|n| cluster.base(n)).collect();
                // Client i drives extension i % extensions (see `load::open_pair`).
                let mcp_bases = match placement {
                    Placement::Colocated => (0..extensions).map(|j| nodes[j % 3].clone()).collect(),
                    _ => nodes.clone(),
                };
                let target = Target::Relay {
                    mcp_bases,
                    extension_bases: nodes.clone(),
                    secret: SECRET.into(),
                };
                let before = cluster.cpu_secs();
                let phase = cluster.phase(&format!("scale {placement:?}"));
                let figures = measured(
                    None,
                    &phase,
                    &target,
                    args,
                    extensions,
                    clients,
                    pacing,
                    args.payload,
                )
                .await?;
                (figures, cluster.cpu_secs() - before)
            };
            eprintln!(
                "  {}: {:.0} req/s, p50 {:.3} ms, p99 {:.3} ms, server CPU {:.2} s",
                placement.describe(),
                figures.rps,
                figures.p50,
                figures.p99,
                cpu
            );
            results[slot].0.push(figures);
            // CPU per request, in microseconds.
            results[slot]
                .1
                .push(cpu * 1e6 / (figures.rps * args.duration.as_secs_f64()));
        }
    }
    let crossing = (0..clients)
        .filter(|i| i % 3 != (i % extensions) % 3)
        .count();
    println!(
        "## cluster: three nodes against one ({clients} clients on {extensions} extensions, {} in flight each, closed loop)\n",
        args.in_flight
    );
    println!("| placement | req/s | vs one node | p50 ms | p99 ms | server CPU µs per request |");
    println!("|---|---|---|---|---|---|");
    let one = medians(&results[0].0).rps;
    for (placement, (figures, cpu)) in placements.iter().zip(&results) {
        let f = medians(figures);
        println!(
            "| {} | {:.0} | {:.0}% | {:.3} | {:.3} | {:.1} |",
            placement.describe(),
            f.rps,
            100.0 * f.rps / one,
            f.p50,
            f.p99,
            median(&mut cpu.clone())
        );
    }
    println!(
        "\nround-robin placement: {crossing} of {clients} clients drive an extension on another node\n"
    );
    Ok(())
}

/// A connected MCP client that sends a burst of requests and never reads the answers.
async fn stalled_client(target: &Target) -> anyhow::Result<load::Socket> {
    let spawned = tokio::sync::Mutex::new(vec![false; 1]);
    let mut ws = load::open_pair(target, 0, 1, 64 * 1024, &spawned).await?;
    for id in 0..2000u64 {
        let request = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"bench","params":{{}}}}"#);
        if ws.send(Message::Text(request.into())).await.is_err() {
            break;
        }
    }
    Ok(ws)
}
