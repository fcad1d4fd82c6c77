//! Side by side with Playwright MCP (issue 23): the same calls on the same pages, through this
//! chain (the official-protocol client rmcp → `mcp-relay bridge` → relay → extension in
//! Chromium) and through Playwright MCP (npm `@playwright/mcp`, pinned in
//! `tests/mcp-sdk-client`, launched on the same Chromium binary with `--executable-path`),
//! measured by one client in one run, alternating the two so drift on a shared machine hits
//! both alike.
//!
//! The calls: navigate, snapshot (read to its end), find, screenshot, the network requests
//! and the console messages (each side's default selection) and a click.
//!
//! What a model pays for is counted as it arrives: the characters of a result's text contents
//! (images are counted apart, as base64 characters), and how long the call took. Pages are
//! real ones nobody here wrote (the Rust documentation every Rust install ships) plus the
//! project's fixtures.
//!
//! Not a test but a benchmark (docs/BENCHMARKS.md, "Side by side with Playwright MCP"):
//! `cargo test --release --test side_by_side -- --ignored --nocapture`
//! (`BENCH_ROUNDS`, default 7, calls of each kind per page and per side). Calls follow each
//! other at once unless `BENCH_PAUSE_MS` sets a pause before each, untimed, as a model's turn
//! leaves one between its calls.
//!
//! Playwright launches every Chromium it drives with `--enable-features=CDPScreenshotNewSurface`,
//! a faster code path for CDP screenshots that a person's Chrome does not have (an extension
//! cannot turn it on). By default our browser runs as a person's would, without it;
//! `SIDE_BY_SIDE_LIKE_FOR_LIKE=1` gives our browser the same switch, so the two chains are
//! compared on one browser configuration.
//!
//! Both browsers are headless unless `E2E_HEADFUL=1`: then both have real windows, ours under
//! an `xvfb-run` of its own and Playwright MCP's on the benchmark's display
//! (`E2E_HEADFUL=1 xvfb-run -a cargo test --release --test side_by_side -- --ignored`).

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::bridge::{start_bridge, Bridge};
use common::browser::*;
use common::{relay, token};
use mcp_relay::auth::Role;
use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{json, Value};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;

/// What Claude Code keeps of one result in the conversation, less a margin (issue 23).
const MAX_TEXT_CHARS: usize = 40_000;
const CALL_LIMIT: Duration = Duration::from_secs(60);

/// One page of the benchmark: where it is, a word to find on it, and the visible text of an
/// element to click that leaves the page where it is (an in-page link or a control).
struct Page {
    name: &'static str,
    path: &'static str,
    find: &'static str,
    click: &'static str,
}

const PAGES: &[Page] = &[
    Page {
        name: "book chapter (ownership)",
        path: "rust/book/ch04-01-what-is-ownership.html",
        find: "heap",
        click: "Stack and the Heap",
    },
    Page {
        name: "large table (operators)",
        path: "rust/book/appendix-02-operators.html",
        find: "Remainder",
        click: "Operators",
    },
    Page {
        name: "`Vec` page",
        path: "rust/std/vec/struct.Vec.html",
        find: "with_capacity",
        click: "Examples",
    },
    Page {
        name: "index (std)",
        path: "rust/std/index.html",
        find: "collections",
        click: "How to read this documentation",
    },
    Page {
        name: "fixture controls.html",
        path: "fixtures/controls.html",
        find: "Toppings",
        click: "Log",
    },
    Page {
        name: "fixture table.html",
        path: "fixtures/table.html",
        find: "Export",
        click: "Export",
    },
];

type Client = RunningService<RoleClient, ()>;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark, run on purpose (docs/BENCHMARKS.md)"]
async fn side_by_side_with_playwright_mcp() {
    let Some(chromium) = chromium_or_skip("side_by_side_with_playwright_mcp") else {
        return;
    };
    let cli = playwright_mcp_cli();
    let rounds = std::env::var("BENCH_ROUNDS").map_or(7, |n| n.parse().expect("BENCH_ROUNDS"));
    let _turn = ONE_BROWSER_AT_A_TIME.lock().await;

    let site = DocSite::start(rust_docs()).await;
    let relay = relay().await;
    let profile = Profile::new(&relay, "Side by side");
    let like_for_like = std::env::var_os("SIDE_BY_SIDE_LIKE_FOR_LIKE").is_some_and(|v| v == "1");
    let flags: &[&str] = if like_for_like {
        &[OUR_WINDOW, PLAYWRIGHTS_SCREENSHOT_PATH]
    } else {
        &[OUR_WINDOW]
    };
    println!(
        "our browser: {}",
        if like_for_like {
            "with Playwright's screenshot switch (like for like)"
        } else {
            "as a person's (no Playwright switches)"
        }
    );
    let browser = Browser::launch_with(&chromium, &profile, flags);
    // `SIDE_BY_SIDE_RUN_CODE=1`: also one `browser_run_code_unsafe` a round (ours needs
    // `--code-execution`, which lists two tools more, so `tools/list` is then not like for like).
    let run_code = std::env::var_os("SIDE_BY_SIDE_RUN_CODE").is_some_and(|v| v == "1");
    let ours = bridge_on(
        &relay,
        &browser,
        &site.url("fixtures/controls.html"),
        if run_code { &["--code-execution"] } else { &[] },
    )
    .await;
    let theirs = playwright_mcp(&cli, &chromium).await;

    let mut report = Report::default();
    report.tools_list(
        serde_json::to_string(&ours.list_all_tools().await.unwrap())
            .unwrap()
            .chars()
            .count(),
        serde_json::to_string(&theirs.list_all_tools().await.unwrap())
            .unwrap()
            .chars()
            .count(),
    );
    let mut oversized = Vec::new();
    for page in PAGES {
        let url = site.url(page.path);
        for round in 0..rounds {
            // Alternate who goes first, so neither always meets a warm or a cold machine.
            let sides: [(Side, &Client); 2] = if round % 2 == 0 {
                [(Side::Ours, &ours), (Side::Theirs, &theirs)]
            } else {
                [(Side::Theirs, &theirs), (Side::Ours, &ours)]
            };
            for (side, client) in sides {
                let m = one_round(client, side, page, &url, run_code).await;
                for (call, sample) in m {
                    if side == Side::Ours && sample.largest_text > MAX_TEXT_CHARS {
                        oversized.push(format!(
                            "{} {call}: a text of {} characters",
                            page.name, sample.largest_text
                        ));
                    }
                    report.add(page.name, call, side, sample);
                }
            }
        }
    }
    println!("{}", report.table());
    oversized.dedup();
    if !oversized.is_empty() {
        println!("\nresults over {MAX_TEXT_CHARS} characters:");
        for line in &oversized {
            println!("- {line}");
        }
    }
    let _ = ours.cancel().await;
    let _ = theirs.cancel().await;
    drop(browser);
    relay.shutdown().await;
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Side {
    Ours,
    Theirs,
}

/// One call's cost: time, characters of text (all parts, for a snapshot read to its end),
/// characters of base64 image, and the largest single text a model received.
#[derive(Clone, Copy, Default)]
struct Sample {
    ms: f64,
    text: usize,
    image: usize,
    largest_text: usize,
    /// The call failed (`isError`, or a protocol error for a tool this side lacks).
    failed: bool,
}

/// navigate, snapshot (read to the end), find, screenshot, click: each measured.
async fn one_round(
    client: &Client,
    side: Side,
    page: &Page,
    url: &str,
    run_code: bool,
) -> Vec<(&'static str, Sample)> {
    let mut out = Vec::new();
    let (navigate, navigated) = timed(client, "browser_navigate", json!({"url": url})).await;
    dump(side, page, "navigate", &navigated);
    out.push(("navigate", navigate));

    let (mut snapshot, first) = timed(client, "browser_snapshot", json!({})).await;
    dump(side, page, "snapshot", &first);
    let mut whole = texts(&first).join("\n");
    // Our long snapshots come in parts; the whole page's cost includes reading every part.
    let mut next = continuation(&whole);
    while let (Side::Ours, Some(offset)) = (side, next) {
        let (part, result) = timed(client, "browser_snapshot", json!({"offset": offset})).await;
        snapshot.ms += part.ms;
        snapshot.text += part.text;
        snapshot.largest_text = snapshot.largest_text.max(part.largest_text);
        snapshot.failed |= part.failed;
        let text = texts(&result).join("\n");
        next = continuation(&text);
        whole.push_str(&text);
    }
    dump_text(side, page, "snapshot-whole", &whole);
    out.push(("snapshot (whole page)", snapshot));

    let (find, found) = timed(client, "browser_find", json!({"text": page.find})).await;
    dump(side, page, "find", &found);
    out.push(("find", find));

    let shot_args = match side {
        Side::Ours => json!({"type": "png"}),
        Side::Theirs => json!({"type": "png", "scale": "css"}),
    };
    let (shot, image) = timed(client, "browser_take_screenshot", shot_args).await;
    dump(side, page, "screenshot", &image);
    out.push(("screenshot", shot));

    // Both sides' default selection (static: false): the page's API calls and failures, its
    // own files that loaded counted apart.
    let (requests, listed) =
        timed(client, "browser_network_requests", json!({"static": false})).await;
    dump(side, page, "network-requests", &listed);
    out.push(("network requests", requests));

    let (console, messages) =
        timed(client, "browser_console_messages", json!({"level": "info"})).await;
    dump(side, page, "console", &messages);
    out.push(("console messages", console));

    if run_code {
        // The same Playwright code on both sides: a few reads a model would batch.
        let code = "async (page) => ({ title: await page.title(), \
                    headings: await page.locator('h2').allTextContents(), \
                    links: await page.locator('a').count(), \
                    first: await page.getByRole('heading', { level: 1 }).first().textContent() })";
        let (ran, answer) = timed(client, "browser_run_code_unsafe", json!({ "code": code })).await;
        dump(side, page, "run-code", &answer);
        out.push(("run code", ran));
    }

    match ref_of(&whole, page.click) {
        Some(target) => {
            let args = match side {
                Side::Ours => json!({"target": target, "element": page.click}),
                Side::Theirs => json!({"target": target, "element": page.click}),
            };
            let (click, clicked) = timed(client, "browser_click", args).await;
            dump(side, page, "click", &clicked);
            out.push(("click", click));
        }
        None => eprintln!(
            "{side:?}: no ref for {:?} on {}; click not measured",
            page.click, page.name
        ),
    }
    out
}

/// With `SIDE_BY_SIDE_DUMP=<dir>`, the text of a result exactly as the model reads it, one file
/// per side, page and call (the last round's), to look at rather than only count; an image
/// result's image beside it (`.png`).
fn dump(side: Side, page: &Page, call: &str, result: &Value) {
    let Some(file) = dump_text(side, page, call, &texts(result).join("\n")) else {
        return;
    };
    let images = result["content"].as_array().into_iter().flatten();
    for image in images.filter(|c| c["type"] == "image") {
        use base64::Engine;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(image["data"].as_str().unwrap_or_default())
            .expect("an image in base64");
        std::fs::write(file.with_extension("png"), bytes).expect("writing the dump");
    }
}

/// With `SIDE_BY_SIDE_DUMP=<dir>`, `text` written as `<side>-<page>-<call>.txt` there (a
/// snapshot's whole page, all parts together, is `snapshot-whole`); the file written, if any.
fn dump_text(side: Side, page: &Page, call: &str, text: &str) -> Option<std::path::PathBuf> {
    let dir = std::env::var_os("SIDE_BY_SIDE_DUMP")?;
    let name: String = page
        .name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    std::fs::create_dir_all(&dir).expect("creating the dump's directory");
    let file = Path::new(&dir).join(format!("{side:?}-{name}-{call}.txt"));
    std::fs::write(&file, text).expect("writing the dump");
    Some(file)
}

/// The offset a cut result names for reading on (`"offset": N` in its note), if any.
fn continuation(text: &str) -> Option<u64> {
    let at = text.rfind("\"offset\": ")?;
    text[at + 10..]
        .split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

/// The ref on the first outline line that names `needle` and carries a ref.
fn ref_of(outline: &str, needle: &str) -> Option<String> {
    outline
        .lines()
        .filter(|line| line.contains(needle))
        .find_map(|line| {
            let at = line.find("[ref=")?;
            let rest = &line[at + 5..];
            Some(rest[..rest.find(']')?].to_owned())
        })
}

async fn timed(client: &Client, tool: &str, args: Value) -> (Sample, Value) {
    let pause: u64 = std::env::var("BENCH_PAUSE_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    tokio::time::sleep(Duration::from_millis(pause)).await;
    let params = CallToolRequestParams::new(tool.to_owned())
        .with_arguments(args.as_object().unwrap().clone());
    let started = Instant::now();
    let answer = tokio::time::timeout(CALL_LIMIT, client.call_tool(params))
        .await
        .unwrap_or_else(|_| panic!("{tool} {args}: no answer within {CALL_LIMIT:?}"));
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    // A tool this side does not have is a protocol error: not measured, and said so.
    let result = match answer {
        Ok(result) => serde_json::to_value(result).unwrap(),
        Err(e) => {
            eprintln!("{tool} {args}: {e}");
            let failed = Sample {
                ms: f64::NAN,
                failed: true,
                ..Sample::default()
            };
            return (failed, Value::Null);
        }
    };
    if result["isError"] == true {
        eprintln!(
            "{tool} {args} answered an error: {}",
            texts(&result).join(" ")
        );
    }
    let text: Vec<String> = texts(&result);
    let image: usize = result["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["type"] == "image")
        .map(|c| c["data"].as_str().map_or(0, str::len))
        .sum();
    let sample = Sample {
        ms,
        text: text.iter().map(|t| t.chars().count()).sum(),
        image,
        largest_text: text.iter().map(|t| t.chars().count()).max().unwrap_or(0),
        failed: result["isError"] == true,
    };
    (sample, result)
}

fn texts(result: &Value) -> Vec<String> {
    result["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["type"] == "text")
        .filter_map(|c| c["text"].as_str().map(str::to_owned))
        .collect()
}

// ---------------------------------------------------------------------------
// The report

#[derive(Default)]
struct Report {
    tools_list: (usize, usize),
    /// (page, call) → samples of each side, in the order first seen.
    rows: Vec<(&'static str, &'static str, Vec<Sample>, Vec<Sample>)>,
}

impl Report {
    fn tools_list(&mut self, ours: usize, theirs: usize) {
        self.tools_list = (ours, theirs);
    }

    fn add(&mut self, page: &'static str, call: &'static str, side: Side, sample: Sample) {
        let row = match self.rows.iter().position(|r| r.0 == page && r.1 == call) {
            Some(row) => row,
            None => {
                self.rows.push((page, call, Vec::new(), Vec::new()));
                self.rows.len() - 1
            }
        };
        match side {
            Side::Ours => self.rows[row].2.push(sample),
            Side::Theirs => self.rows[row].3.push(sample),
        }
    }

    fn table(&self) -> String {
        let (ours, theirs) = self.tools_list;
        let mut lines = vec![
            format!(
                "tools/list: {ours} characters here, {theirs} Playwright MCP ({:.2}×)\n",
                ours as f64 / theirs as f64
            ),
            "| page | call | p50 ms here | p50 ms Playwright MCP | ratio | characters here | \
             characters Playwright MCP | ratio | failed here / PW |"
                .to_owned(),
            "|---|---|---:|---:|---:|---:|---:|---:|---:|".to_owned(),
        ];
        for (page, call, ours, theirs) in &self.rows {
            let (a, b) = (median(ours, |s| s.ms), median(theirs, |s| s.ms));
            let chars = |s: &Sample| (s.text + s.image) as f64;
            let (c, d) = (median(ours, chars), median(theirs, chars));
            let image_note = if call.starts_with("screenshot") {
                " (image base64)"
            } else {
                ""
            };
            let failed = |samples: &[Sample]| samples.iter().filter(|s| s.failed).count();
            lines.push(format!(
                "| {page} | {call} | {a:.0} | {b:.0} | {} | {c:.0}{image_note} | {d:.0} | {} | \
                 {} / {} |",
                ratio(a, b),
                ratio(c, d),
                failed(ours),
                failed(theirs)
            ));
        }
        lines.join("\n")
    }
}

fn median(samples: &[Sample], by: impl Fn(&Sample) -> f64) -> f64 {
    // Failed calls are counted apart: an error message is neither fast nor cheap.
    let mut values: Vec<f64> = samples.iter().filter(|s| !s.failed).map(by).collect();
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    }
}

fn ratio(a: f64, b: f64) -> String {
    if a.is_nan() || b.is_nan() || b == 0.0 {
        "–".into()
    } else {
        format!("{:.2}", a / b)
    }
}

// ---------------------------------------------------------------------------
// The two sides

/// Our browser's window: the extension gives its tab a window of this size, whose bars take
/// 143 of its pixels (Chromium 156; 139 in 148) once Chrome shows that the extension debugs it,
/// so the page gets 1280×800 CSS pixels, as Playwright MCP's (`--viewport-size`). Not emulated (`browser_resize` would emulate), since an agent's tab
/// usually is not, and an emulated viewport is captured another way (extension/lib/screenshots.js).
const OUR_WINDOW: &str = "--window-size=1280,943";

/// The feature switch Playwright adds to every Chromium it launches (its `chromiumSwitches`):
/// `Page.captureScreenshot` renders into a new surface, 30–45 ms faster for the first capture
/// after a navigation on the documentation pages (raw CDP, same binary, docs/BENCHMARKS.md).
const PLAYWRIGHTS_SCREENSHOT_PATH: &str = "--enable-features=CDPScreenshotNewSurface";

/// `mcp-relay bridge` on `relay` once the browser is online, with a tab of its own at `url`
/// whose viewport is 1280×800, as Playwright MCP's.
async fn bridge_on(
    relay: &mcp_relay::server::RunningRelay,
    browser: &Browser<'_>,
    url: &str,
    more_flags: &[&str],
) -> Bridge {
    let mut watcher = Driver::handshake(relay, "watcher").await;
    watcher.wait_for_extension(browser).await;
    let relay_url = relay.url("/mcp");
    let mut flags = vec!["--relay", relay_url.as_str()];
    flags.extend_from_slice(more_flags);
    let bridge = start_bridge((), &flags, &token(USER, Some(Role::Mcp))).await;
    let deadline = Instant::now() + STEP;
    loop {
        let params = CallToolRequestParams::new("browser_tabs").with_arguments(
            json!({"action": "new", "url": url})
                .as_object()
                .unwrap()
                .clone(),
        );
        let result = serde_json::to_value(bridge.call_tool(params).await.unwrap()).unwrap();
        if result["isError"] != true {
            // Chrome's "started debugging this browser" bar takes its 48 pixels a moment
            // after the extension first attaches: wait for the viewport to settle.
            let size = json!({"expression": "[innerWidth, innerHeight]"});
            loop {
                let params = CallToolRequestParams::new("browser_evaluate")
                    .with_arguments(size.as_object().unwrap().clone());
                let now = serde_json::to_value(bridge.call_tool(params).await.unwrap()).unwrap();
                let now = &now["structuredContent"]["value"];
                if now == &json!([1280, 800]) {
                    break;
                }
                assert!(
                    Instant::now() < deadline,
                    "our viewport is {now}, not 1280×800 (adjust OUR_WINDOW)"
                );
                tokio::time::sleep(POLL).await;
            }
            return bridge;
        }
        assert!(
            Instant::now() < deadline,
            "browser_tabs new kept failing: {result}"
        );
        tokio::time::sleep(POLL).await;
    }
}

/// Playwright MCP's `cli.js`: `$PLAYWRIGHT_MCP`, or the copy `npm ci` pins in
/// `tests/mcp-sdk-client`.
fn playwright_mcp_cli() -> PathBuf {
    let path = std::env::var_os("PLAYWRIGHT_MCP")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/mcp-sdk-client/node_modules/@playwright/mcp/cli.js")
        });
    assert!(
        path.is_file(),
        "Playwright MCP not found at {} (run `npm ci --prefix tests/mcp-sdk-client`, or set \
         PLAYWRIGHT_MCP to its cli.js)",
        path.display()
    );
    path
}

/// Playwright MCP on the same Chromium binary, headless, with the same 1280×800 viewport our
/// side's tab gets, a fresh in-memory profile, and its default tool set.
async fn playwright_mcp(cli: &Path, chromium: &Path) -> Client {
    let mut command = tokio::process::Command::new("node");
    command.arg(cli);
    // With E2E_HEADFUL=1 our browser has real windows (under xvfb-run), as a person's; so
    // does Playwright MCP's, on the display the benchmark runs in (run it under xvfb-run).
    if std::env::var("E2E_HEADFUL").is_ok_and(|v| v == "1") {
        assert!(
            std::env::var_os("DISPLAY").is_some(),
            "E2E_HEADFUL=1: run the benchmark under xvfb-run -a, so Playwright MCP has a display"
        );
    } else {
        command.arg("--headless");
    }
    command
        .args(["--browser", "chromium", "--no-sandbox", "--isolated"])
        .args(["--viewport-size", "1280x800"])
        // Its console logs and saved files go there, not into the checkout.
        .arg("--output-dir")
        .arg(std::env::temp_dir().join("side-by-side-playwright-mcp"))
        .arg("--executable-path")
        .arg(chromium)
        .stderr(std::process::Stdio::null());
    let transport = TokioChildProcess::new(command).expect("spawning Playwright MCP");
    tokio::time::timeout(STEP, ().serve(transport))
        .await
        .expect("Playwright MCP's initialize timed out")
        .expect("Playwright MCP's initialize")
}

// ---------------------------------------------------------------------------
// The pages

/// The Rust documentation of this toolchain (the rust-docs component).
fn rust_docs() -> PathBuf {
    let sysroot = std::process::Command::new("rustc")
        .args(["--print", "sysroot"])
        .output()
        .expect("rustc --print sysroot");
    let root =
        Path::new(String::from_utf8(sysroot.stdout).unwrap().trim()).join("share/doc/rust/html");
    assert!(
        root.join("std/index.html").is_file(),
        "no Rust documentation at {} (rustup component add rust-docs)",
        root.display()
    );
    root
}

/// A static site: `/rust/…` from the Rust documentation, `/fixtures/…` from tests/fixtures.
struct DocSite {
    base: String,
    task: tokio::task::JoinHandle<()>,
}

impl DocSite {
    async fn start(rust: PathBuf) -> DocSite {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}/", listener.local_addr().unwrap());
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serve(stream, rust.clone(), fixtures.clone()));
            }
        });
        DocSite { base, task }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }
}

impl Drop for DocSite {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Only paths of plain names below the two roots are served.
async fn serve(mut stream: TcpStream, rust: PathBuf, fixtures: PathBuf) {
    let Some(path) = request_path(&mut stream).await else {
        return;
    };
    let mut parts = path.splitn(2, '/');
    let root = match parts.next() {
        Some("rust") => Some(&rust),
        Some("fixtures") => Some(&fixtures),
        _ => None,
    };
    let rest = parts.next().unwrap_or("");
    let safe = rest
        .split('/')
        .all(|part| !part.is_empty() && part != ".." && part != "." && !part.contains('\\'));
    let body = match root {
        Some(root) if safe => tokio::fs::read(root.join(rest)).await.ok(),
        _ => None,
    };
    let content_type = match rest.rsplit('.').next() {
        Some("html") => "text/html; charset=utf-8",
        Some("css") => "text/css",
        Some("js") => "text/javascript",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("woff2") => "font/woff2",
        _ => "application/octet-stream",
    };
    match body {
        Some(body) => {
            let headers = format!("Content-Type: {content_type}\r\n");
            respond(stream, "200 OK", &headers, &body).await;
        }
        None => not_found(stream).await,
    }
}

#[test]
fn continuation_reads_the_offset_a_part_names() {
    assert_eq!(
        continuation("…\n[Part 1 of 3. To read on, call browser_snapshot with {\"offset\": 812}]"),
        Some(812)
    );
    assert_eq!(continuation("- button \"Save\" [ref=e4]"), None);
}

#[test]
fn ref_of_finds_the_first_line_naming_the_text_with_a_ref() {
    let outline =
        "- heading \"Save\" [level=1]\n- button \"Save\" [ref=e4]\n- link \"Save\" [ref=e9]";
    assert_eq!(ref_of(outline, "Save").as_deref(), Some("e4"));
    assert_eq!(ref_of(outline, "Missing"), None);
}

/// Where the chain's fixed round trip goes (issue 23: the small fixture's calls). On
/// `controls.html`, the same cheap calls made at each hop, interleaved, many times: straight to
/// the relay as a WebSocket client (relay → extension → Chrome), through the bridge (rmcp client
/// → bridge → relay → …), and through Playwright MCP, for scale. Not a test but a benchmark
/// (docs/BENCHMARKS.md, "Where the chain's fixed round trip went"):
/// `cargo test --release --test side_by_side round_trip_by_hop -- --ignored --nocapture`
/// (`BENCH_CALLS`, default 60, calls of each kind).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark, run on purpose (docs/BENCHMARKS.md)"]
async fn round_trip_by_hop() {
    let Some(chromium) = chromium_or_skip("round_trip_by_hop") else {
        return;
    };
    let cli = playwright_mcp_cli();
    let calls = std::env::var("BENCH_CALLS").map_or(60, |n| n.parse().expect("BENCH_CALLS"));
    let _turn = ONE_BROWSER_AT_A_TIME.lock().await;
    let site = DocSite::start(rust_docs()).await;
    let relay = relay().await;
    let profile = Profile::new(&relay, "Round trip by hop");
    let browser = Browser::launch_with(&chromium, &profile, &[OUR_WINDOW]);
    let url = site.url("fixtures/controls.html");
    let ours = bridge_on(&relay, &browser, &url, &[]).await;
    let theirs = playwright_mcp(&cli, &chromium).await;
    timed(&theirs, "browser_navigate", json!({"url": url})).await;

    // A relay client of its own, with a tab of its own on the same page (the bridge's tab
    // belongs to the bridge's connection).
    let mut direct = Driver::handshake(&relay, "direct").await;
    let extension = direct.wait_for_extension(&browser).await;
    direct
        .connect(extension["id"].as_str().expect("extension id"))
        .await;
    let created = direct.ok("createTab", json!({"url": url})).await;
    let tab = created["tabId"].clone();
    assert!(tab.is_number(), "createTab: {created}");

    let direct_calls = [
        ("networkRequests", json!({"tabId": tab, "sincePage": true})),
        ("evaluate", json!({"tabId": tab, "expression": "1"})),
        ("snapshot", json!({"tabId": tab, "format": "outline"})),
    ];
    // Playwright MCP's browser_evaluate waits half a second after every script, so it is
    // measured here only through the bridge.
    let tool_calls = [
        ("browser_network_requests", json!({}), true),
        ("browser_evaluate", json!({"function": "() => 1"}), false),
        ("browser_snapshot", json!({}), true),
    ];
    let mut rows: Vec<(String, Vec<f64>)> = Vec::new();
    let mut add = |name: String, ms: f64| match rows.iter_mut().find(|r| r.0 == name) {
        Some(row) => row.1.push(ms),
        None => rows.push((name, vec![ms])),
    };
    for _ in 0..calls {
        for (method, params) in &direct_calls {
            let started = Instant::now();
            direct.ok(method, params.clone()).await;
            add(
                format!("relay client: `{method}`"),
                started.elapsed().as_secs_f64() * 1e3,
            );
        }
        for (tool, args, both) in &tool_calls {
            let (sample, _) = timed(&ours, tool, args.clone()).await;
            add(format!("bridge: `{tool}`"), sample.ms);
            if *both {
                let (sample, _) = timed(&theirs, tool, args.clone()).await;
                add(format!("Playwright MCP: `{tool}`"), sample.ms);
            }
        }
    }
    println!("| call ({calls} each, interleaved) | p25 ms | p50 ms | p75 ms |");
    println!("|---|---:|---:|---:|");
    for (name, mut values) in rows {
        values.sort_by(f64::total_cmp);
        let at = |q: f64| values[((values.len() - 1) as f64 * q).round() as usize];
        println!(
            "| {name} | {:.2} | {:.2} | {:.2} |",
            at(0.25),
            at(0.5),
            at(0.75)
        );
    }
    let _ = ours.cancel().await;
    let _ = theirs.cancel().await;
    drop(browser);
    relay.shutdown().await;
}
