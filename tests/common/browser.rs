//! The real-Chromium harness the browser tests share: a profile with the extension and its
//! `dev-config.json`, a Chromium in its own process group, the browser-wide DevTools endpoint
//! (for the extension's service worker, popup and options page), a fixture web site, and an
//! MCP client with generous timeouts.

use std::collections::VecDeque;
use std::fs::{self, File, OpenOptions};
use std::future::Future;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use futures_util::StreamExt;
use mcp_relay::auth::Role;
use serde_json::{json, Value};
use tempfile::TempDir;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::{timeout_at, Instant};
use tokio_tungstenite::tungstenite::Message;

use super::{token, Client, Mcp};

pub const DEFAULT_CHROMIUM: &str = "/usr/bin/chromium";
/// Browser start-up, first debugger attach and page loads on a busy 2-core CI machine.
pub const STEP: Duration = Duration::from_secs(30);
/// A whole scenario; a hang fails the test (and its guards kill the browser) instead of CI's job timeout.
pub const SCENARIO_LIMIT: Duration = Duration::from_secs(120);
pub const POLL: Duration = Duration::from_millis(100);
pub const USER: &str = "e2e-user";

/// One browser at a time: Chromium instances started in parallel on a 2-core machine slow
/// each other down enough to make every timeout in here a coin toss.
pub static ONE_BROWSER_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

// ---------------------------------------------------------------------------
// Chromium

/// The Chromium binary, or None (after a loud message) when it is missing outside CI.
pub fn chromium_or_skip(test: &str) -> Option<PathBuf> {
    let path = PathBuf::from(std::env::var("CHROMIUM").unwrap_or_else(|_| DEFAULT_CHROMIUM.into()));
    let problem = format!(
        "Chromium not found at {} (set CHROMIUM=/path/to/chromium); browser end-to-end tests \
         must run in CI",
        path.display()
    );
    super::present_or_skip(path.is_file().then_some(path), test, &problem)
}

/// A temporary copy of the extension with `dev-config.json` pointing at the relay, and a
/// browser profile that outlives a browser restart (it holds the extension's client_id).
pub struct Profile {
    pub _root: TempDir,
    pub extension_dir: PathBuf,
    pub user_data_dir: PathBuf,
    pub log: PathBuf,
}

impl Profile {
    pub fn new(relay: &impl super::Endpoint, browser_name: &str) -> Profile {
        let root = tempfile::tempdir().expect("temp dir");
        let extension_dir = root.path().join("extension");
        let user_data_dir = root.path().join("profile");
        // E2E_EXTENSION_DIR: another version of the extension (the benchmark's "before").
        let source = std::env::var_os("E2E_EXTENSION_DIR").map_or_else(
            || Path::new(env!("CARGO_MANIFEST_DIR")).join("extension"),
            PathBuf::from,
        );
        copy_extension(&source, &extension_dir);
        let dev_config = json!({
            "relayUrl": relay.url("/extension"),
            "token": token(USER, Some(Role::Extension)),
            "name": browser_name,
            // These tests are about driving the browser; consent has its own (tests/it/browser_owner.rs).
            "autoAllow": true,
        });
        fs::write(
            extension_dir.join("dev-config.json"),
            dev_config.to_string(),
        )
        .unwrap();
        fs::create_dir(&user_data_dir).unwrap();
        Profile {
            log: root.path().join("chromium.log"),
            _root: root,
            extension_dir,
            user_data_dir,
        }
    }
}

/// Copies the extension as a user would load it: without its Node tests and dependencies,
/// and without a developer's own dev-config.json.
pub fn copy_extension(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        if ["test", "node_modules", "dev-config.json"]
            .iter()
            .any(|skip| name == *skip)
        {
            continue;
        }
        let target = to.join(&name);
        if entry.file_type().unwrap().is_dir() {
            copy_extension(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// A headless Chromium in its own process group; dropping it kills the whole group, so a
/// failing assertion never leaves a browser behind. Borrowing the profile keeps the profile
/// directory alive until the browser is gone.
pub struct Browser<'p> {
    pub child: Child,
    pub profile: &'p Profile,
    pub mode: Mode,
    pub killed: bool,
}

/// How Chromium shows its windows: nowhere (`--headless`), or in real windows on a virtual X
/// display that `xvfb-run` starts for it alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Headless,
    Headful,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Headless => "headless",
            Mode::Headful => "headful (xvfb-run)",
        }
    }
}

/// `xvfb-run` (with the `xauth` it needs), or None (after a loud message) when either is
/// missing outside CI.
pub fn xvfb_run_or_skip(test: &str) -> Option<PathBuf> {
    let on_path = |name: &str| {
        std::env::var_os("PATH").and_then(|path| {
            std::env::split_paths(&path)
                .map(|dir| dir.join(name))
                .find(|candidate| candidate.is_file())
        })
    };
    let found = on_path("xauth").and(on_path("xvfb-run"));
    super::present_or_skip(
        found,
        test,
        "xvfb-run or xauth not found (Debian packages xvfb and xauth); the headful browser \
         tests must run in CI",
    )
}

impl<'p> Browser<'p> {
    pub fn launch(chromium: &Path, profile: &'p Profile) -> Browser<'p> {
        Self::launch_with(chromium, profile, &[])
    }

    /// Headless, unless `E2E_HEADFUL=1` asks for real windows under `xvfb-run` (to run any
    /// browser test the way a person's browser runs).
    pub fn launch_with(chromium: &Path, profile: &'p Profile, extra: &[&str]) -> Browser<'p> {
        let mode = if std::env::var("E2E_HEADFUL").is_ok_and(|v| v == "1") {
            Mode::Headful
        } else {
            Mode::Headless
        };
        Self::launch_in(chromium, profile, mode, extra, &["about:blank"])
    }

    /// Chromium in `mode`, its first window showing the tabs `start_urls`, the first in front.
    pub fn launch_in(
        chromium: &Path,
        profile: &'p Profile,
        mode: Mode,
        extra: &[&str],
        start_urls: &[&str],
    ) -> Browser<'p> {
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&profile.log)
            .unwrap();
        let extension = profile.extension_dir.display();
        let mut command = match mode {
            Mode::Headless => {
                let mut command = Command::new(chromium);
                command.arg("--headless");
                command
            }
            Mode::Headful => {
                let mut command = Command::new("xvfb-run");
                command
                    .args(["-a", "-s", "-screen 0 1600x1000x24 -nolisten tcp"])
                    .arg(chromium);
                command
            }
        };
        let child = command
            .args([
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ])
            .arg(format!(
                "--user-data-dir={}",
                profile.user_data_dir.display()
            ))
            .arg(format!("--load-extension={extension}"))
            .arg(format!("--disable-extensions-except={extension}"))
            .arg("--window-size=1280,800")
            .args(extra)
            .args(start_urls)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", chromium.display()));
        Browser {
            child,
            profile,
            mode,
            killed: false,
        }
    }

    /// SIGKILL to the whole process group, as a crash would; waits for the browser process.
    /// Under xvfb-run, SIGTERM first, so that Xvfb removes its lock file and socket.
    pub fn kill(&mut self) {
        if self.killed {
            return;
        }
        self.killed = true;
        let group = format!("-{}", self.child.id());
        if self.mode == Mode::Headful {
            let _ = Command::new("kill")
                .args(["-TERM", "--", &group])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
            // Until the whole group is gone (Xvfb outlives xvfb-run by a moment), 3 s at most.
            let _ = self.child.try_wait();
            let deadline = std::time::Instant::now() + Duration::from_secs(3);
            while std::time::Instant::now() < deadline
                && Command::new("kill")
                    .args(["-0", "--", &group])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status()
                    .is_ok_and(|status| status.success())
            {
                let _ = self.child.try_wait();
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        let _ = Command::new("kill")
            .args(["-KILL", "--", &group])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Whether the browser process still runs (not gone, not a zombie waiting to be reaped).
    /// Saves the whole X screen of a headful browser as `name` (a PNG) when `OWNER_SCREENSHOTS`
    /// names a directory: what the person sees outside the page, a notification among it. Does
    /// nothing headless. The display is the one `xvfb-run` gave Chromium (read from its
    /// environment); `xwd` and netpbm (Debian's x11-apps, netpbm) turn it into a PNG. Takes
    /// 1.5 s, and only when asked.
    pub async fn save_screen(&self, name: &str) {
        let Some(dir) = std::env::var_os("OWNER_SCREENSHOTS") else {
            return;
        };
        if self.mode != Mode::Headful {
            return;
        }
        // A notification slides in from the screen's edge: let it arrive.
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let group = self.child.id().to_string();
        // The display and its cookie file, as xvfb-run gave them to Chromium.
        let environ = fs::read_dir("/proc")
            .unwrap()
            .filter_map(|entry| {
                let path = entry.ok()?.path();
                let stat = fs::read_to_string(path.join("stat")).ok()?;
                // pgrp is the 5th field, after the parenthesised command name.
                let after = stat.rsplit_once(')')?.1;
                (after.split_whitespace().nth(2)? == group).then_some(path)
            })
            .filter_map(|path| fs::read(path.join("environ")).ok())
            .find(|environ| {
                environ
                    .split(|b| *b == 0)
                    .any(|v| v.starts_with(b"DISPLAY="))
            })
            .expect("the DISPLAY xvfb-run gave the browser");
        let mut command = Command::new("bash");
        for var in environ.split(|b| *b == 0) {
            for name in ["DISPLAY", "XAUTHORITY"] {
                if let Some(value) = var.strip_prefix(format!("{name}=").as_bytes()) {
                    command.env(name, String::from_utf8_lossy(value).into_owned());
                }
            }
        }
        let out = Path::new(&dir).join(name);
        let status = command
            .arg("-c")
            .arg(format!(
                "set -o pipefail; xwd -root -silent | xwdtopnm 2>/dev/null | pnmtopng > '{}'",
                out.display()
            ))
            .status()
            .expect("sh");
        assert!(status.success(), "xwd | xwdtopnm | pnmtopng failed");
    }

    pub fn is_running(&self) -> bool {
        fs::read_to_string(format!("/proc/{}/stat", self.child.id())).is_ok_and(|stat| {
            stat.rsplit_once(')')
                .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z'))
        })
    }

    /// Resolves when the browser process ends on its own (a start-up failure).
    pub async fn exited(&self) {
        while self.is_running() {
            tokio::time::sleep(POLL).await;
        }
    }

    /// The end of Chromium's output, for failure messages.
    pub fn log_tail(&self) -> String {
        let mut text = String::new();
        if let Ok(mut file) = File::open(&self.profile.log) {
            let _ = file.read_to_string(&mut text);
        }
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }
}

impl Drop for Browser<'_> {
    fn drop(&mut self) {
        self.kill();
    }
}

// ---------------------------------------------------------------------------
// Chromium's DevTools endpoint

/// A client of the browser-wide DevTools endpoint (`--remote-debugging-port=0`), for what no
/// MCP command reaches: the extension's own popup and options pages.
pub struct DevTools {
    pub ws: tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<TcpStream>>,
    pub next_id: u64,
}

impl DevTools {
    /// Connects through the port and path Chromium writes to `DevToolsActivePort`.
    pub async fn attach(browser: &Browser<'_>) -> DevTools {
        let file = browser.profile.user_data_dir.join("DevToolsActivePort");
        let deadline = Instant::now() + STEP;
        let (port, path) = loop {
            if let Ok(text) = fs::read_to_string(&file) {
                let mut lines = text.lines();
                if let (Some(port), Some(path)) = (lines.next(), lines.next()) {
                    break (port.to_owned(), path.to_owned());
                }
            }
            assert!(
                Instant::now() < deadline,
                "no DevToolsActivePort; Chromium's log:\n{}",
                browser.log_tail()
            );
            tokio::time::sleep(POLL).await;
        };
        let (ws, _) = tokio_tungstenite::connect_async(format!("ws://127.0.0.1:{port}{path}"))
            .await
            .expect("DevTools endpoint");
        DevTools { ws, next_id: 0 }
    }

    /// Sends a command (to a page session when given) and returns its result.
    pub async fn send(&mut self, session: Option<&str>, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut command = json!({"id": id, "method": method, "params": params});
        if let Some(session) = session {
            command["sessionId"] = json!(session);
        }
        futures_util::SinkExt::send(&mut self.ws, Message::Text(command.to_string().into()))
            .await
            .expect("DevTools send");
        let deadline = Instant::now() + STEP;
        loop {
            let message = timeout_at(deadline, self.ws.next())
                .await
                .unwrap_or_else(|_| panic!("DevTools: no answer to {method}"))
                .expect("DevTools socket ended")
                .expect("DevTools socket error");
            let Message::Text(text) = message else {
                continue;
            };
            let frame: Value = serde_json::from_str(&text).expect("DevTools sends JSON");
            if frame["id"] == id {
                assert!(frame.get("error").is_none(), "DevTools {method}: {frame}");
                return frame["result"].clone();
            }
        }
    }

    /// `chrome-extension://<id>`, from the extension's service worker target.
    pub async fn extension_origin(&mut self) -> String {
        let deadline = Instant::now() + STEP;
        loop {
            let targets = self.send(None, "Target.getTargets", json!({})).await;
            let found = targets["targetInfos"].as_array().and_then(|infos| {
                infos.iter().find_map(|t| {
                    let url = t["url"].as_str()?;
                    let host = url.strip_prefix("chrome-extension://")?.split('/').next()?;
                    (t["type"] == "service_worker").then(|| format!("chrome-extension://{host}"))
                })
            });
            if let Some(origin) = found {
                return origin;
            }
            assert!(
                Instant::now() < deadline,
                "no extension service worker: {targets}"
            );
            tokio::time::sleep(POLL).await;
        }
    }

    /// Opens `url` in a new tab and returns a session attached to it.
    pub async fn open_page(&mut self, url: &str) -> String {
        let created = self
            .send(None, "Target.createTarget", json!({"url": url}))
            .await;
        let attached = self
            .send(
                None,
                "Target.attachToTarget",
                json!({"targetId": created["targetId"], "flatten": true}),
            )
            .await;
        attached["sessionId"]
            .as_str()
            .expect("a session id")
            .to_owned()
    }

    /// The extension's popup (`origin` is `chrome-extension://<id>`), opened as a page at the
    /// popup's own width and `height` CSS pixels: the page the owner tests click in as a person.
    pub async fn open_popup(&mut self, origin: &str, height: u32) -> String {
        let session = self.open_page(&format!("{origin}/ui/popup.html")).await;
        self.send(
            Some(&session),
            "Emulation.setDeviceMetricsOverride",
            json!({"width": 360, "height": height, "deviceScaleFactor": 1, "mobile": false}),
        )
        .await;
        session
    }

    /// Saves what the page of `session` shows as `name` (a PNG) when `OWNER_SCREENSHOTS` names a
    /// directory; does nothing otherwise.
    pub async fn save_screenshot(&mut self, session: &str, name: &str) {
        let Some(dir) = std::env::var_os("OWNER_SCREENSHOTS") else {
            return;
        };
        let shot = self
            .send(
                Some(session),
                "Page.captureScreenshot",
                json!({"format": "png", "captureBeyondViewport": true}),
            )
            .await;
        let png = base64::Engine::decode(
            &base64::engine::general_purpose::STANDARD,
            shot["data"].as_str().expect("image data"),
        )
        .expect("base64 image");
        fs::write(Path::new(&dir).join(name), png).unwrap();
    }

    /// Evaluates `expression` in the page (awaiting a promise) and returns its JSON value.
    pub async fn eval(&mut self, session: &str, expression: &str) -> Value {
        let evaluated = self
            .send(
                Some(session),
                "Runtime.evaluate",
                json!({"expression": expression, "returnByValue": true, "awaitPromise": true}),
            )
            .await;
        evaluated["result"]["value"].clone()
    }

    /// Polls `expression` until it equals `wanted`, for at most [`STEP`].
    pub async fn wait_for(&mut self, session: &str, expression: &str, wanted: Value) {
        self.wait_for_within(session, expression, wanted, STEP)
            .await
    }

    /// Polls `expression` until it equals `wanted`, for at most `bound`: for a step whose
    /// cause runs elsewhere (an SDK script's earlier steps) and may take longer than one step.
    pub async fn wait_for_within(
        &mut self,
        session: &str,
        expression: &str,
        wanted: Value,
        bound: Duration,
    ) {
        let deadline = Instant::now() + bound;
        loop {
            let value = self.eval(session, expression).await;
            if value == wanted {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{expression}: {value}, never {wanted}"
            );
            tokio::time::sleep(POLL).await;
        }
    }
}

// ---------------------------------------------------------------------------
// Fixture site

/// Serves `tests/fixtures/` over HTTP/1.1 on a loopback port, one request per connection.
pub struct FixtureSite {
    pub base: String,
    pub task: tokio::task::JoinHandle<()>,
}

impl FixtureSite {
    pub async fn start() -> FixtureSite {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}/", listener.local_addr().unwrap());
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serve_fixture(stream, root.clone()));
            }
        });
        FixtureSite { base, task }
    }

    pub fn url(&self, page: &str) -> String {
        format!("{}{page}", self.base)
    }
}

impl Drop for FixtureSite {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// What `[key=…]` says on the first outline line that contains `needle` (`e5` for `ref`).
pub fn marked_on<'a>(outline: &'a str, needle: &str, key: &str) -> &'a str {
    let line = outline
        .lines()
        .find(|line| line.contains(needle))
        .unwrap_or_else(|| panic!("no line with {needle} in\n{outline}"));
    line.split(&format!("[{key}="))
        .nth(1)
        .and_then(|rest| rest.split(']').next())
        .unwrap_or_else(|| panic!("no {key} on {line}"))
}

/// The box (`[box=x,y,width,height]`) on the first outline line that contains `needle`.
pub fn box_on(outline: &str, needle: &str) -> Vec<f64> {
    marked_on(outline, needle, "box")
        .split(',')
        .map(|n| n.parse().unwrap())
        .collect()
}

pub async fn serve_fixture(mut stream: TcpStream, root: PathBuf) {
    let Some(name) = request_path(&mut stream).await else {
        return;
    };
    // Connections a live page keeps open: an event stream that ticks, and a long poll that
    // is not answered (each for at most 20 s, or until the page goes away).
    match name.as_str() {
        "stream" => {
            let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n\r\n";
            if stream.write_all(head.as_bytes()).await.is_err() {
                return;
            }
            for tick in 0..60 {
                let event = format!("data: tick {tick}\n\n");
                if stream.write_all(event.as_bytes()).await.is_err() {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
            return;
        }
        "hold" => {
            tokio::time::sleep(Duration::from_secs(20)).await;
            return respond(stream, "204 No Content", "", b"").await;
        }
        _ => {}
    }
    // Real editors and components as a page loads them from a CDN, installed with the SDK
    // clients (tests/mcp-sdk-client/package.json): Monaco, the editor VS Code is built on (its
    // `min` build), Quill, a rich-text editor, and Vue with Vuetify, its Material components
    // (their `dist` builds).
    for (prefix, build) in [
        ("monaco/", "monaco-editor/min"),
        ("quill/", "quill/dist"),
        ("vue/", "vue/dist"),
        ("vuetify/", "vuetify/dist"),
    ] {
        if let Some(rest) = name.strip_prefix(prefix) {
            return serve_package(stream, build, rest).await;
        }
    }
    // Flat directory: no sub-paths, so nothing outside it can be named.
    let file = (!name.is_empty() && !name.contains(['/', '\\']) && name != "..")
        .then(|| fs::read(root.join(&name)).ok())
        .flatten();
    match file {
        Some(body) => {
            respond(
                stream,
                "200 OK",
                "Content-Type: text/html; charset=utf-8\r\n",
                &body,
            )
            .await
        }
        None => not_found(stream).await,
    }
}

/// A file of an npm package's build (`build`, under tests/mcp-sdk-client/node_modules), with
/// the type its loader needs (styles are refused as `text/html`). Only plain path segments:
/// nothing outside the build can be named.
async fn serve_package(stream: TcpStream, build: &str, rest: &str) {
    let build = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/mcp-sdk-client/node_modules")
        .join(build);
    assert!(
        build.exists(),
        "{} is missing (run `npm ci` in tests/mcp-sdk-client)",
        build.display()
    );
    let plain = rest
        .split('/')
        .all(|part| !part.is_empty() && part != ".." && part != "." && !part.contains('\\'));
    let Some(body) = plain.then(|| fs::read(build.join(rest)).ok()).flatten() else {
        return not_found(stream).await;
    };
    let kind = match rest.rsplit('.').next() {
        Some("js") => "text/javascript",
        Some("css") => "text/css",
        Some("ttf") => "font/ttf",
        _ => "application/octet-stream",
    };
    respond(
        stream,
        "200 OK",
        &format!("Content-Type: {kind}\r\n"),
        &body,
    )
    .await
}

/// The path of a GET request read from `stream`, without its leading `/`, query or fragment;
/// empty (which no server here serves: a 404) for any other method; None when the connection
/// ends first. One request per connection.
pub async fn request_path(stream: &mut TcpStream) -> Option<String> {
    let mut request = Vec::new();
    let mut buffer = [0u8; 4096];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") && request.len() < 64 * 1024 {
        match stream.read(&mut buffer).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => request.extend_from_slice(&buffer[..n]),
        }
    }
    let request = String::from_utf8_lossy(&request);
    let mut words = request.split_whitespace();
    if words.next() != Some("GET") {
        return Some(String::new());
    }
    let target = words.next().unwrap_or("");
    Some(
        target
            .split(['?', '#'])
            .next()
            .unwrap_or("")
            .trim_start_matches('/')
            .to_owned(),
    )
}

/// Answers and closes: `headers` are whole header lines (each ending in CRLF).
pub async fn respond(mut stream: TcpStream, status: &str, headers: &str, body: &[u8]) {
    let head = format!(
        "HTTP/1.1 {status}\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes()).await;
    let _ = stream.write_all(body).await;
    let _ = stream.shutdown().await;
}

pub async fn not_found(stream: TcpStream) {
    respond(
        stream,
        "404 Not Found",
        "Content-Type: text/plain\r\n",
        b"not found",
    )
    .await;
}

// ---------------------------------------------------------------------------
// MCP client

/// An MCP client with generous per-step timeouts (browser work is slower than the relay
/// alone) that keeps the notifications it passes while waiting for a response.
pub struct Driver {
    pub client: Client,
    pub next_id: u64,
    pub backlog: VecDeque<Value>,
    pub name: &'static str,
}

impl Driver {
    pub async fn handshake(relay: &impl super::Endpoint, name: &'static str) -> Driver {
        Driver {
            client: Mcp::connect(relay, USER).await.client,
            next_id: 1000,
            backlog: VecDeque::new(),
            name,
        }
    }

    pub async fn next_frame(&mut self, deadline: Instant, waiting_for: &str) -> Value {
        loop {
            let message = timeout_at(deadline, self.client.ws.next())
                .await
                .unwrap_or_else(|_| panic!("{}: timed out waiting for {waiting_for}", self.name))
                .unwrap_or_else(|| panic!("{}: socket ended waiting for {waiting_for}", self.name))
                .unwrap_or_else(|e| {
                    panic!("{}: socket error waiting for {waiting_for}: {e}", self.name)
                });
            match message {
                Message::Text(text) => {
                    return serde_json::from_str(&text)
                        .unwrap_or_else(|e| panic!("{}: not JSON ({e}): {text}", self.name))
                }
                Message::Close(frame) => {
                    panic!("{}: closed waiting for {waiting_for}: {frame:?}", self.name)
                }
                _ => continue,
            }
        }
    }

    /// Sends a request and returns the whole response frame.
    pub async fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.client
            .send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        let deadline = Instant::now() + STEP;
        loop {
            let frame = self
                .next_frame(deadline, &format!("the reply to {method}"))
                .await;
            if frame.get("method").is_some() && frame.get("id").is_none() {
                self.backlog.push_back(frame);
            } else if frame["id"] == id {
                return frame;
            } else {
                panic!(
                    "{}: unexpected frame while waiting for {method}: {frame}",
                    self.name
                );
            }
        }
    }

    /// The result of a command that must succeed.
    pub async fn ok(&mut self, method: &str, params: Value) -> Value {
        let response = self.call(method, params.clone()).await;
        match response.get("result") {
            Some(result) if response.get("error").is_none() => result.clone(),
            _ => panic!("{}: {method} {params} failed: {response}", self.name),
        }
    }

    /// The error of a command that must fail.
    pub async fn err(&mut self, method: &str, params: Value) -> Value {
        let response = self.call(method, params.clone()).await;
        match response.get("error") {
            Some(error) => error.clone(),
            None => panic!(
                "{}: {method} {params} should have failed: {response}",
                self.name
            ),
        }
    }

    pub async fn eval(&mut self, expression: &str) -> Value {
        self.ok("evaluate", json!({"expression": expression})).await["value"].clone()
    }

    /// The next notification `method` matching `wanted`, including ones already received.
    pub async fn notification(&mut self, method: &str, wanted: impl Fn(&Value) -> bool) -> Value {
        let is_it = |frame: &Value| frame["method"] == method && wanted(frame);
        if let Some(index) = self.backlog.iter().position(is_it) {
            return self.backlog.remove(index).unwrap();
        }
        let deadline = Instant::now() + STEP;
        loop {
            let frame = self
                .next_frame(deadline, &format!("a {method} notification"))
                .await;
            if is_it(&frame) {
                return frame;
            }
            if frame.get("method").is_some() && frame.get("id").is_none() {
                self.backlog.push_back(frame);
            }
        }
    }

    /// `connect`, and the `status` the relay sends right after it.
    pub async fn connect(&mut self, extension_id: &str) -> Value {
        let result = self
            .ok("connect", json!({"extension_id": extension_id}))
            .await;
        assert!(result["connection_id"].is_string(), "{result}");
        let status = self.notification("status", |_| true).await;
        assert_eq!(status["params"]["connected"], true, "{status}");
        result
    }

    /// Polls `list_extensions` until the browser's extension has authenticated.
    pub async fn wait_for_extension(&mut self, browser: &Browser<'_>) -> Value {
        let deadline = Instant::now() + STEP;
        loop {
            let listed = self.ok("list_extensions", json!({})).await;
            let extensions = listed["extensions"].as_array().expect("extensions array");
            if let Some(found) = extensions.first() {
                assert_eq!(extensions.len(), 1, "one browser, one extension: {listed}");
                return found.clone();
            }
            if !browser.is_running() {
                panic!("Chromium exited; its log:\n{}", browser.log_tail());
            }
            if Instant::now() > deadline {
                panic!(
                    "the extension did not reach the relay within {STEP:?}; Chromium's log:\n{}",
                    browser.log_tail()
                );
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Polls the current tab until it shows `url`, fully loaded. Evaluations may fail while
    /// one document replaces another; those are retried.
    pub async fn wait_for_page(&mut self, url: &str) {
        let deadline = Instant::now() + STEP;
        let mut last = Value::Null;
        while Instant::now() < deadline {
            last = self
                .call(
                    "evaluate",
                    json!({"expression": "[location.href, document.readyState]"}),
                )
                .await;
            if last["result"]["value"] == json!([url, "complete"]) {
                return;
            }
            tokio::time::sleep(POLL).await;
        }
        panic!("{}: {url} did not load; last answer {last}", self.name);
    }

    /// Polls `getTabs` until the tab is gone.
    pub async fn wait_until_tab_gone(&mut self, tab_id: i64) {
        let deadline = Instant::now() + STEP;
        loop {
            let tabs = self.ok("getTabs", json!({})).await;
            if find_tab(&tabs, tab_id).is_none() {
                return;
            }
            assert!(Instant::now() < deadline, "tab {tab_id} still open: {tabs}");
            tokio::time::sleep(POLL).await;
        }
    }
}

pub fn find_tab(get_tabs: &Value, tab_id: i64) -> Option<&Value> {
    get_tabs["tabs"]
        .as_array()
        .expect("getTabs lists tabs")
        .iter()
        .find(|t| t["tabId"] == tab_id)
}

pub async fn within(limit: Duration, scenario: impl Future<Output = ()>) {
    if tokio::time::timeout(limit, scenario).await.is_err() {
        panic!("scenario did not finish within {limit:?}");
    }
}
