//! `code_execution` (issue 27) through both official MCP SDK clients: the TypeScript SDK
//! (`tests/mcp-sdk-client/code-execution.mjs`) and the Python SDK
//! (`tests/mcp-python-client/code_execution.py`) each drive `mcp-relay bridge --code-execution`
//! over stdio, as a host does, against the reference extension in a real Chromium, on the
//! fixture shop (`tests/fixtures/shop.html` and its three product pages).
//!
//! The scripts are this file's ([`plan`]); each SDK client runs them in order and reads the same
//! table with single calls; [`check`] reads both reports: the script's table of name, price and
//! stock equals the single calls' (and the shop's), each bound set low on the bridge (inner
//! calls, bytes returned, CPU time, memory) is hit by a script written to hit it and named in
//! the answer, and scripts reaching for `fetch`, `require`, `process`, `Deno`, `import()` or
//! looping for ever get nothing and are stopped. The bridge's audit log holds each inner call,
//! in order, as a line of its own.
//!
//! Locally these tests skip with a loud message when Chromium or an SDK is missing; in CI
//! (`CI=true`) they fail.

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::bridge::{sdk_report, Sdk};
use common::browser::*;
use common::{relay, token};
use mcp_relay::auth::Role;
use serde_json::{json, Value};

/// The bounds the bridge runs with: low enough for a script to hit each in a moment, high
/// enough for the shop's table (8 inner calls, a few kB).
const MAX_CALLS: usize = 10;
const BRIDGE_BOUNDS: [&str; 10] = [
    "--code-max-calls",
    "10",
    "--code-max-bytes",
    "30000",
    "--code-cpu-time",
    "1s",
    "--code-memory",
    "32MiB",
    "--code-wall-time",
    "10s",
];

/// Reads the shop's product links, as a JSON string (the text of a `browser_evaluate` answer).
const LINKS: &str =
    "() => JSON.stringify([...document.querySelectorAll('a.product')].map(a => a.href))";
/// Reads one product page.
const PRODUCT: &str = "() => JSON.stringify({name: document.getElementById('name').textContent, \
     price: document.getElementById('price').textContent, \
     stock: Number(document.getElementById('stock').textContent)})";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_sdk_script_reads_the_shop_in_one_call_hits_each_bound_and_reaches_nothing_else()
{
    let test =
        "typescript_sdk_script_reads_the_shop_in_one_call_hits_each_bound_and_reaches_nothing_else";
    let Some(chromium) = chromium_or_skip(test) else {
        return;
    };
    let Some(sdk) = Sdk::typescript_or_skip(test) else {
        return;
    };
    let _turn = ONE_BROWSER_AT_A_TIME.lock().await;
    within(
        Duration::from_secs(240),
        scripts(&chromium, &sdk, Via::Bridge),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_script_reads_the_shop_in_one_call_hits_each_bound_and_reaches_nothing_else() {
    let test =
        "python_sdk_script_reads_the_shop_in_one_call_hits_each_bound_and_reaches_nothing_else";
    let Some(chromium) = chromium_or_skip(test) else {
        return;
    };
    let Some(sdk) = Sdk::python_or_skip(test) else {
        return;
    };
    let _turn = ONE_BROWSER_AT_A_TIME.lock().await;
    within(
        Duration::from_secs(240),
        scripts(&chromium, &sdk, Via::Bridge),
    )
    .await;
}

/// The same scripts through the relay's HTTP `/mcp` (`serve --mcp-code-execution` with the same
/// bounds as `--mcp-code-*`), no bridge: the answers name the relay's flags.
#[cfg(feature = "http-mcp")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_sdk_over_http_script_reads_the_shop_hits_each_bound_and_reaches_nothing_else() {
    let test =
        "typescript_sdk_over_http_script_reads_the_shop_hits_each_bound_and_reaches_nothing_else";
    let Some(chromium) = chromium_or_skip(test) else {
        return;
    };
    let Some(sdk) = Sdk::typescript_or_skip(test) else {
        return;
    };
    let _turn = ONE_BROWSER_AT_A_TIME.lock().await;
    within(
        Duration::from_secs(240),
        scripts(&chromium, &sdk, Via::Http),
    )
    .await;
}

#[cfg(feature = "http-mcp")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_over_http_script_reads_the_shop_hits_each_bound_and_reaches_nothing_else() {
    let test =
        "python_sdk_over_http_script_reads_the_shop_hits_each_bound_and_reaches_nothing_else";
    let Some(chromium) = chromium_or_skip(test) else {
        return;
    };
    let Some(sdk) = Sdk::python_or_skip(test) else {
        return;
    };
    let _turn = ONE_BROWSER_AT_A_TIME.lock().await;
    within(
        Duration::from_secs(240),
        scripts(&chromium, &sdk, Via::Http),
    )
    .await;
}

/// Where the SDK client reaches `code_execution`.
#[derive(Clone, Copy, PartialEq)]
enum Via {
    /// `mcp-relay bridge --code-execution` over stdio.
    Bridge,
    /// The relay's HTTP `/mcp` started with `--mcp-code-execution`.
    Http,
}

impl Via {
    /// How the flags that set the bounds begin, as the answers name them.
    fn flags(self) -> &'static str {
        match self {
            Via::Bridge => "--code-",
            Via::Http => "--mcp-code-",
        }
    }
}

/// The scripts, in the order the clients run them, with the tool calls each makes (in the
/// audit log's order).
fn plan(shop: &str, shot: &Path, upload: &Path) -> (Value, Vec<(&'static str, Vec<&'static str>)>) {
    let table = format!(
        "await tools.browser_navigate({{url: {shop:?}}});\n\
         const links = JSON.parse((await tools.browser_evaluate({{function: {LINKS:?}}})).text);\n\
         const rows = [];\n\
         for (const url of links) {{\n\
           await tools.browser_navigate({{url}});\n\
           const product = JSON.parse((await tools.browser_evaluate({{function: {PRODUCT:?}}})).text);\n\
           rows.push({{url, ...product}});\n\
         }}\n\
         return rows;"
    );
    let scripts = [
        ("table", table),
        (
            "calls",
            "for (let i = 0; i < 50; i++) await tools.browser_tabs({action: 'list'});\n\
             return 'all 50 calls made';"
                .into(),
        ),
        (
            "bytes",
            "const big = await tools.browser_evaluate({function: \"() => 'x'.repeat(35000)\"});\n\
             return big.text.length;"
                .into(),
        ),
        ("cpu", "while (true) {}".into()),
        (
            "memory",
            "const hoard = [];\nfor (let i = 0; ; i++) hoard.push(new Array(1 << 18).fill(i));"
                .into(),
        ),
        ("fetch", format!("return await fetch({shop:?});")),
        (
            "require",
            "return require('fs').readFileSync('/etc/hostname', 'utf8');".into(),
        ),
        ("process", "return process.env;".into()),
        (
            "Deno",
            "return Deno.readTextFileSync('/etc/hostname');".into(),
        ),
        ("import", "return await import('fs');".into()),
        (
            "globals",
            "return ['fetch', 'require', 'process', 'Deno', 'XMLHttpRequest', 'WebSocket', \
             'setTimeout', 'performance', 'os', 'std']\n\
               .map(name => name + ':' + typeof globalThis[name]).join(',');"
                .into(),
        ),
        ("awaitLoop", "for (;;) await null;".into()),
        (
            "waitingOnNothing",
            "await new Promise(() => {});\nreturn 'never settles';".into(),
        ),
        // Last: the extension's wait goes on for a second after the script is stopped.
        (
            "wallTime",
            "await tools.browser_wait_for({time: 11});\nreturn 'waited';".into(),
        ),
    ];
    // Playwright code (browser_run_code_unsafe), as a model trained on Playwright MCP writes it.
    let playwright = [
        (
            "playwrightTable",
            format!(
                "async (page) => {{\n\
                   await page.goto({shop:?});\n\
                   const links = await page.locator('a.product').evaluateAll((as) => as.map((a) => a.href));\n\
                   const rows = [];\n\
                   for (const url of links) {{\n\
                     await page.goto(url);\n\
                     rows.push({{ url: page.url(), ...(await page.locator('body').evaluate((body) => ({{\n\
                       name: body.querySelector('#name').textContent,\n\
                       price: body.querySelector('#price').textContent,\n\
                       stock: Number(body.querySelector('#stock').textContent) }}))) }});\n\
                   }}\n\
                   return rows;\n\
                 }}"
            ),
        ),
        (
            "playwrightLocators",
            format!(
                "async (page) => {{\n\
                   await page.goto({shop:?});\n\
                   const count = await page.getByRole('link').count();\n\
                   const names = await page.getByRole('link').allTextContents();\n\
                   const tea = await page.getByRole('link').filter({{ hasText: /^tea/i }}).count();\n\
                   const hrefs = await page.getByRole('link').filter({{ hasText: /^t/i }}).evaluateAll((as, n) => as.map((a) => a.getAttribute('href') + n), '!');\n\
                   const third = await page.getByRole('link').nth(2).textContent();\n\
                   await page.getByRole('link', {{ name: 'Teapot' }}).click();\n\
                   const heading = await page.getByRole('heading', {{ level: 1 }}).innerText();\n\
                   const stock = await page.locator('#stock').textContent();\n\
                   return {{ count, names, tea, hrefs, third, heading, url: page.url(), stock }};\n\
                 }}"
            ),
        ),
        (
            "playwrightRows",
            format!(
                "async (page) => {{\n\
                   await page.goto({shop:?});\n\
                   const names = [];\n\
                   for (const row of await page.locator('#products li').all()) {{\n\
                     names.push(await row.locator('a').textContent());\n\
                   }}\n\
                   const href = await page.locator('li').filter({{ hasText: /^tea/i }}).locator('a').getAttribute('href');\n\
                   await new Promise((resolve) => setTimeout(resolve, 200));\n\
                   return {{ names, href, path: new URL(href, page.url()).pathname }};\n\
                 }}"
            ),
        ),
        (
            "playwrightStrict",
            format!(
                "async (page) => {{\n  await page.goto({shop:?});\n  await page.getByRole('link').click();\n}}"
            ),
        ),
        (
            "playwrightScreenshot",
            format!(
                "async (page) => {{\n\
                   await page.goto({shop:?});\n\
                   await page.getByRole('link', {{ name: 'Teapot' }}).screenshot({{ path: {:?} }});\n\
                   return 'saved';\n\
                 }}",
                shot.display().to_string()
            ),
        ),
        (
            "playwrightKeyboard",
            format!(
                "async (page) => {{\n\
                   await page.goto({form:?});\n\
                   await page.locator('#q').click();\n\
                   await page.keyboard.type('hello world');\n\
                   await page.keyboard.type('!');\n\
                   return await page.locator('#q').inputValue();\n\
                 }}",
                form = shop.replace("shop.html", "form.html")
            ),
        ),
        (
            "playwrightFrame",
            format!(
                "async (page) => {{\n\
                   await page.goto({frames:?});\n\
                   const frame = page.frameLocator('iframe');\n\
                   await frame.getByRole('button').click();\n\
                   await frame.locator('#inner-text').fill('typed in the frame');\n\
                   return {{ inner: await page.evaluate(() => window.seen.inner), \
                             label: await frame.getByText('Inner clicked').textContent(), \
                             typed: await page.locator('iframe').contentFrame().locator('#inner-text').inputValue(), \
                             controls: await frame.locator('button, input').count() }};\n\
                 }}",
                frames = shop.replace("shop.html", "frames.html")
            ),
        ),
        (
            "playwrightUpload",
            format!(
                "async (page) => {{\n\
                   await page.goto({tools:?});\n\
                   let refused = null;\n\
                   try {{ await page.locator('#upload').setInputFiles({:?}); }}\n\
                   catch (error) {{ refused = error.message; }}\n\
                   const files = await page.locator('#upload').evaluate((input) => \
                     Promise.all(Array.from(input.files, async (f) => f.name + ':' + f.size + ':' + await f.text())));\n\
                   return {{ refused, files }};\n\
                 }}",
                upload.display().to_string(),
                tools = shop.replace("shop.html", "tools.html")
            ),
        ),
        (
            "playwrightMissing",
            "async (page) => {\n  return await page.context().cookies();\n}".into(),
        ),
    ];
    let navigate_and_read = ["browser_navigate", "browser_evaluate"];
    let calls = vec![
        ("table", navigate_and_read.repeat(4)),
        ("calls", vec!["browser_tabs"; MAX_CALLS]),
        ("bytes", vec!["browser_evaluate"]),
        ("wallTime", vec!["browser_wait_for"]),
        ("playwrightTable", navigate_and_read.repeat(4)),
        (
            "playwrightLocators",
            // Every link's text, a filtered count and a filtered evaluateAll are one call each.
            vec![
                "browser_navigate",
                "browser_evaluate",
                "browser_evaluate",
                "browser_evaluate",
                "browser_evaluate",
                "browser_evaluate",
                "browser_click",
                "browser_evaluate",
                "browser_evaluate",
            ],
        ),
        (
            "playwrightRows",
            vec![
                "browser_navigate",
                "browser_evaluate",
                "browser_evaluate",
                "browser_evaluate",
                "browser_evaluate",
                "browser_evaluate",
                "browser_wait_for",
            ],
        ),
        (
            "playwrightStrict",
            vec!["browser_navigate", "browser_click"],
        ),
        (
            "playwrightScreenshot",
            vec!["browser_navigate", "browser_take_screenshot"],
        ),
        // keyboard.type is one key press call per text, however long.
        (
            "playwrightKeyboard",
            vec![
                "browser_navigate",
                "browser_click",
                "browser_press_key",
                "browser_press_key",
                "browser_evaluate",
            ],
        ),
        // A frame's button, found inside the frame (the page's own buttons are not its).
        // CSS in the frame's document too (frameLocator(…).locator(css)).
        (
            "playwrightFrame",
            vec![
                "browser_navigate",
                "browser_click",
                "browser_type",
                "browser_evaluate",
                "browser_evaluate",
                "browser_evaluate",
                "browser_evaluate",
            ],
        ),
        // setInputFiles is browser_file_upload (refused over HTTP, where paths are not read).
        (
            "playwrightUpload",
            vec![
                "browser_navigate",
                "browser_file_upload",
                "browser_evaluate",
            ],
        ),
    ];
    let plan = json!({
        "shop": shop,
        "links": LINKS,
        "product": PRODUCT,
        "scripts": scripts.iter().map(|(name, code)| json!([name, code])).collect::<Vec<_>>(),
        "playwright": playwright.iter().map(|(name, code)| json!([name, code])).collect::<Vec<_>>(),
    });
    (plan, calls)
}

async fn scripts(chromium: &Path, sdk: &Sdk, via: Via) {
    let dir = tempfile::tempdir().unwrap();
    let audit_log = dir.path().join("audit.jsonl");
    let relay = match via {
        Via::Bridge => relay().await,
        Via::Http => {
            let log = audit_log.clone();
            common::relay_with(move |c| {
                c.mcp_code_execution = true;
                c.mcp_code_max_calls = 10;
                c.mcp_code_max_bytes = 30_000;
                c.mcp_code_cpu_time = Duration::from_secs(1);
                c.mcp_code_memory = 32 << 20;
                c.mcp_code_wall_time = Duration::from_secs(10);
                // The script reads each answer's fields (see below).
                c.mcp_structured_content = true;
                c.mcp_audit_log = Some(log);
            })
            .await
        }
    };
    let site = FixtureSite::start().await;
    let profile = Profile::new(&relay, "Script Chromium");
    let browser = Browser::launch_with(chromium, &profile, &[]);
    let mut watcher = Driver::handshake(&relay, "watcher").await;
    watcher.wait_for_extension(&browser).await;

    let shop = site.url("shop.html");
    let shot = dir.path().join("shots").join("teapot.png");
    let upload = dir.path().join("upload.txt");
    std::fs::write(&upload, "héllo upload").unwrap();
    let (plan, inner_calls) = plan(&shop, &shot, &upload);
    let plan_file = dir.path().join("plan.json");
    std::fs::write(&plan_file, plan.to_string()).unwrap();
    // The script reads each answer's fields (`stoppedBy`, `innerCalls`): a client that reads
    // fields asks for them beside page text (docs/BRIDGE.md, `structuredContent`).
    let mut bridge_args = vec![
        "--code-execution",
        "--structured-content",
        "--audit-log",
        audit_log.to_str().unwrap(),
    ];
    bridge_args.extend(BRIDGE_BOUNDS);
    let mut script = match via {
        Via::Bridge => sdk.spawn(
            "code-execution",
            &[plan_file.to_str().unwrap()],
            &relay.url("/mcp"),
            &bridge_args,
            &token(USER, Some(Role::Mcp)),
        ),
        Via::Http => sdk.spawn_http(
            "code-execution",
            &[plan_file.to_str().unwrap()],
            &format!("http://{}/mcp", relay.local_addr),
            &token(USER, Some(Role::Mcp)),
        ),
    };
    let report = sdk_report(&mut script, sdk.name(), Duration::from_secs(220)).await;
    check(&report, &site, sdk, via.flags());
    // Playwright's locator.screenshot({ path }): saved where the bridge runs, a real PNG of
    // the link; over the relay's HTTP /mcp no file is kept, and the script is told so.
    let saved = run(&report, "playwrightScreenshot");
    match via {
        Via::Bridge => {
            assert_eq!(said(saved), "saved", "{}: {saved}", sdk.name());
            let png = std::fs::read(&shot).expect("the screenshot's file");
            assert!(
                png.starts_with(b"\x89PNG\r\n\x1a\n"),
                "{}: not a PNG",
                sdk.name()
            );
            if let Some(dir) = std::env::var_os("SCRIPT_SHOTS") {
                std::fs::copy(
                    &shot,
                    Path::new(&dir).join(format!("teapot-{}.png", sdk.name())),
                )
                .unwrap();
            }
        }
        Via::Http => {
            assert_eq!(saved["isError"], true, "{}: {saved}", sdk.name());
            assert!(
                said(saved).contains("Not saved to"),
                "{}: {saved}",
                sdk.name()
            );
            assert!(!shot.exists(), "{}: a file was written", sdk.name());
        }
    }
    // Playwright's setInputFiles: the file read where the bridge runs and set on the input;
    // over HTTP the relay's server reads no file, and the script is told so.
    let uploaded = run(&report, "playwrightUpload");
    let uploaded: Value = serde_json::from_str(said(uploaded))
        .unwrap_or_else(|e| panic!("{}: not JSON ({e}): {uploaded}", sdk.name()));
    match via {
        Via::Bridge => assert_eq!(
            uploaded,
            json!({"refused": null, "files": ["upload.txt:13:héllo upload"]}),
            "{}",
            sdk.name()
        ),
        Via::Http => {
            assert_eq!(uploaded["files"], json!([]), "{}: {uploaded}", sdk.name());
            assert!(
                uploaded["refused"]
                    .as_str()
                    .is_some_and(|why| why.contains("over the relay's HTTP /mcp")),
                "{}: {uploaded}",
                sdk.name()
            );
        }
    }
    if via == Via::Http {
        // The relay's endpoint writes the audit log a moment after the answer: wait for every
        // script's own line (each comes after its inner calls').
        let scripts = script_count(&plan);
        let written = || {
            std::fs::read_to_string(&audit_log)
                .unwrap_or_default()
                .lines()
                .filter_map(|line| serde_json::from_str::<Value>(line).ok())
                .filter(|r| a_script(r) && r.get("target").is_none_or(Value::is_null))
                .count()
        };
        common::wait_until("every script's line is in the audit log", || {
            std::future::ready(written() >= scripts)
        })
        .await;
    }

    // The audit log: each inner call a line of its own (`code_execution` or
    // `browser_run_code_unsafe` → the tool), in the order made, then the script's own line;
    // the escapes made none.
    let log = std::fs::read_to_string(&audit_log).unwrap();
    let records: Vec<Value> = log
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let scripts: Vec<&Value> = records
        .iter()
        .filter(|r| a_script(r) && r.get("target").is_none_or(Value::is_null))
        .collect();
    assert_eq!(
        scripts.len(),
        script_count(&plan),
        "{}: one line per script: {log}",
        sdk.name()
    );
    let inner: Vec<&str> = records
        .iter()
        .filter(|r| a_script(r))
        .filter_map(|r| r["target"].as_str())
        .collect();
    let expected: Vec<&str> = inner_calls
        .iter()
        .flat_map(|(_, calls)| calls.iter().copied())
        .collect();
    assert_eq!(inner, expected, "{}: {log}", sdk.name());
    // Each script's line comes after its inner calls: the first script line follows the
    // table's 8 calls.
    let first_script = records
        .iter()
        .position(|r| r["tool"] == "code_execution" && r.get("target").is_none_or(Value::is_null))
        .unwrap();
    assert_eq!(
        first_script,
        inner_calls[0].1.len(),
        "{}: {log}",
        sdk.name()
    );

    drop(browser);
    relay.shutdown().await;
}

/// Whether an audit line is a script's (its own, or one of its inner calls').
fn a_script(record: &Value) -> bool {
    record["tool"] == "code_execution" || record["tool"] == "browser_run_code_unsafe"
}

/// How many scripts the clients run: `code_execution`'s and `browser_run_code_unsafe`'s.
fn script_count(plan: &Value) -> usize {
    plan["scripts"].as_array().unwrap().len() + plan["playwright"].as_array().unwrap().len()
}

fn run<'r>(report: &'r Value, name: &str) -> &'r Value {
    let found = &report["runs"][name];
    assert!(found.is_object(), "no run {name}: {report}");
    found
}

fn said(run: &Value) -> &str {
    run["text"].as_str().unwrap_or_default()
}

/// A run that the bridge stopped at `bound` (its `structuredContent.stoppedBy`), naming it.
fn stopped_by(report: &Value, name: &str, bounds: &[&str], words: &str, sdk: &Sdk) -> usize {
    let run = run(report, name);
    assert_eq!(
        run["isError"],
        true,
        "{}: {name} was not stopped: {run}",
        sdk.name()
    );
    let by = run["structured"]["stoppedBy"].as_str().unwrap_or_default();
    assert!(
        bounds.contains(&by),
        "{}: {name} stopped by {by:?}, not {bounds:?}: {run}",
        sdk.name()
    );
    assert!(
        said(run).contains("the script was stopped") && said(run).contains(words),
        "{}: {name}: the answer does not name the bound: {run}",
        sdk.name()
    );
    run["structured"]["innerCalls"]
        .as_array()
        .map_or(0, Vec::len)
}

fn check(report: &Value, site: &FixtureSite, sdk: &Sdk, flag: &str) {
    let name = sdk.name();
    assert!(
        report["tools"]
            .as_array()
            .unwrap()
            .contains(&json!("code_execution")),
        "{name}: {report}"
    );

    // The table: one call, the same rows as single calls, and the shop's own figures.
    let table = run(report, "table");
    assert_eq!(table["isError"], false, "{name}: {table}");
    let rows: Value = serde_json::from_str(said(table))
        .unwrap_or_else(|e| panic!("{name}: the table is not JSON ({e}): {table}"));
    assert_eq!(
        rows, report["single"],
        "{name}: script and single calls differ"
    );
    assert_eq!(
        rows,
        json!([
            {"url": site.url("shop-kettle.html"), "name": "Kettle", "price": "24.90", "stock": 12},
            {"url": site.url("shop-teapot.html"), "name": "Teapot", "price": "31.50", "stock": 0},
            {"url": site.url("shop-mug.html"), "name": "Mug", "price": "7.25", "stock": 140},
        ]),
        "{name}"
    );
    let made = table["structured"]["innerCalls"].as_array().unwrap();
    assert_eq!(made.len(), 8, "{name}: {table}");
    assert!(made.iter().all(|c| c["ok"] == true), "{name}: {table}");

    // Each bound, hit by a script written to hit it, named in the answer.
    let calls = stopped_by(
        report,
        "calls",
        &["calls"],
        &format!("inner-call bound (10 tool calls, {flag}max-calls)"),
        sdk,
    );
    assert_eq!(calls, MAX_CALLS, "{name}: what it had done so far");
    assert!(
        said(run(report, "calls")).contains("It had made 10 tool call(s)"),
        "{name}"
    );
    stopped_by(
        report,
        "bytes",
        &["bytes"],
        &format!("{flag}max-bytes"),
        sdk,
    );
    assert_eq!(
        stopped_by(
            report,
            "cpu",
            &["cpu_time"],
            &format!("{flag}cpu-time"),
            sdk
        ),
        0
    );
    assert_eq!(
        stopped_by(report, "memory", &["memory"], &format!("{flag}memory"), sdk),
        0
    );
    // An endless loop of awaits is stopped too (it runs script, or waits on nothing).
    let by = run(report, "awaitLoop")["structured"]["stoppedBy"].clone();
    let words = if by == "wall_time" {
        format!("{flag}wall-time")
    } else {
        format!("{flag}cpu-time")
    };
    stopped_by(report, "awaitLoop", &["cpu_time", "wall_time"], &words, sdk);
    // A script waiting for a tool longer than the wall-time bound is stopped by it.
    stopped_by(
        report,
        "wallTime",
        &["wall_time"],
        &format!("the wall-time bound (10s, {flag}wall-time)"),
        sdk,
    );
    // One waiting on a promise nothing can settle is ended at once, saying why.
    let nothing = run(report, "waitingOnNothing");
    assert_eq!(nothing["isError"], true, "{name}: {nothing}");
    assert!(
        said(nothing).contains("waiting for a promise that nothing will settle"),
        "{name}: {nothing}"
    );

    // Playwright code: the same table in Playwright's words, locators counted, read and
    // clicked, and what this bridge's `page` lacks refused by name.
    let table = run(report, "playwrightTable");
    assert_eq!(table["isError"], false, "{name}: {table}");
    let rows: Value = serde_json::from_str(said(table))
        .unwrap_or_else(|e| panic!("{name}: the table is not JSON ({e}): {table}"));
    assert_eq!(
        rows, report["single"],
        "{name}: Playwright code and single calls differ"
    );
    let located = run(report, "playwrightLocators");
    assert_eq!(located["isError"], false, "{name}: {located}");
    assert_eq!(
        serde_json::from_str::<Value>(said(located)).unwrap_or_default(),
        json!({"count": 3, "names": ["Kettle", "Teapot", "Mug"], "tea": 1,
               "hrefs": ["shop-teapot.html!"],
               "third": "Mug", "heading": "Teapot",
               "url": site.url("shop-teapot.html"), "stock": "0"}),
        "{name}: {located}"
    );
    // CSS locators within CSS locators, filtered, one page call each; a timer as a wait; URL.
    let rows = run(report, "playwrightRows");
    assert_eq!(
        serde_json::from_str::<Value>(said(rows)).unwrap_or_default(),
        json!({"names": ["Kettle", "Teapot", "Mug"], "href": "shop-teapot.html",
               "path": "/shop-teapot.html"}),
        "{name}: {rows}"
    );
    let strict = run(report, "playwrightStrict");
    assert_eq!(strict["isError"], true, "{name}: {strict}");
    assert!(
        said(strict).contains("browser_run_code_unsafe: the script failed")
            && said(strict).contains("matches 3 elements; name one")
            && said(strict).contains("(line 3)"),
        "{name}: {strict}"
    );
    let framed = run(report, "playwrightFrame");
    assert_eq!(
        serde_json::from_str::<Value>(said(framed)).unwrap_or_default(),
        json!({"inner": 1, "label": "Inner clicked", "typed": "typed in the frame", "controls": 2}),
        "{name}: {framed}"
    );
    let typed = run(report, "playwrightKeyboard");
    assert_eq!(said(typed), "hello world!", "{name}: {typed}");
    let missing = run(report, "playwrightMissing");
    assert_eq!(missing["isError"], true, "{name}: {missing}");
    assert!(
        said(missing).contains("page.context is not available in this bridge's scripts")
            && said(missing).contains("It had made no tool call."),
        "{name}: {missing}"
    );

    // Reaching out: nothing there, and nothing done.
    for (escape, missing) in [
        ("fetch", "fetch"),
        ("require", "require"),
        ("process", "process"),
        ("Deno", "Deno"),
    ] {
        let run = run(report, escape);
        assert_eq!(run["isError"], true, "{name}: {escape}: {run}");
        assert!(
            said(run).contains(&format!(
                "the script failed: ReferenceError: {missing} is not defined (line 1)"
            )) && said(run).contains("It had made no tool call."),
            "{name}: {escape}: {run}"
        );
        assert_eq!(
            run["structured"]["innerCalls"],
            json!([]),
            "{name}: {escape}: {run}"
        );
    }
    let import = run(report, "import");
    assert_eq!(import["isError"], true, "{name}: {import}");
    assert!(
        said(import).contains("the script failed: ReferenceError: could not load module 'fs'"),
        "{name}: {import}"
    );
    assert_eq!(import["structured"]["innerCalls"], json!([]), "{name}");
    let globals = run(report, "globals");
    assert_eq!(globals["isError"], false, "{name}: {globals}");
    assert_eq!(
        said(globals),
        "fetch:undefined,require:undefined,process:undefined,Deno:undefined,\
         XMLHttpRequest:undefined,WebSocket:undefined,setTimeout:undefined,\
         performance:undefined,os:undefined,std:undefined",
        "{name}"
    );
}
