//! Reading the browser and moving around in it: browsers, tabs, navigation, snapshots, find,
//! script, console, network, screenshots and raw CDP.

use serde_json::{json, Map, Value};

use super::args::{
    resolve, Cdp, Connect, ConsoleLevel, ConsoleMessages, Direction, Evaluate, Find, HandleDialog,
    ImageFormat, Navigate, NetworkRequest, NetworkRequests, NoArgs, Offset, Screenshot, Snapshot,
    TabAction, TabOnly, Tabs, TakeScreenshot, WaitFor,
};
use super::Plan;

/// `browser_wait_for`'s limits, in seconds: under the relay's and the bridge's 60 s
/// request timeouts, so the wait's own error (which names its timeout) is what comes back.
const WAIT_DEFAULT_SECS: f64 = 10.0;
const WAIT_MAX_SECS: f64 = 30.0;

pub(super) fn forward(method: &'static str, params: Map<String, Value>) -> Result<Plan, String> {
    Ok(Plan::Forward {
        method,
        params: Value::Object(params),
        image: false,
    })
}

/// Params holding only `tabId`, when given.
pub(super) fn on_tab(tab_id: Option<i64>) -> Map<String, Value> {
    let mut params = Map::new();
    if let Some(id) = tab_id {
        params.insert("tabId".into(), json!(id));
    }
    params
}

/// Sets `key` when `value` is given.
pub(super) fn set<T: serde::Serialize>(
    params: &mut Map<String, Value>,
    key: &str,
    value: Option<T>,
) {
    if let Some(value) = value {
        params.insert(key.into(), json!(value));
    }
}

/// `outline: true` asks an action for the page's outline afterwards (the extension's
/// `snapshot` flag). Not called `snapshot` here because parameter names weigh in
/// `retrieve_tools`' ranking, and "snapshot" pulled every action into queries about reading
/// or seeing the page (docs/BENCHMARKS.md, "Tool retrieval quality").
pub(super) fn outline_after(params: &mut Map<String, Value>, outline: Option<bool>) {
    if outline == Some(true) {
        params.insert("snapshot".into(), json!(true));
    }
}

/// `offset` reads on in the last answer in parts; `filename` saves a whole new answer.
fn read_on(offset: Offset, filename: &Option<String>) -> Result<Option<Plan>, String> {
    match (offset, filename) {
        (Some(_), Some(_)) => Err("\"offset\" reads on in the last answer and \"filename\" \
                                   saves a whole new one: give one of them"
            .into()),
        (Some(offset), None) => Ok(Some(Plan::Continue(offset as usize))),
        (None, _) => Ok(None),
    }
}

pub(super) fn list(_: NoArgs) -> Result<Plan, String> {
    Ok(Plan::List)
}

pub(super) fn status(_: NoArgs) -> Result<Plan, String> {
    Ok(Plan::Status)
}

pub(super) fn connect(args: Connect) -> Result<Plan, String> {
    if args.browser.trim().is_empty() {
        return Err("\"browser\" (a name or id from browser_list) is empty".into());
    }
    Ok(Plan::Connect(args.browser))
}

pub(super) fn close(_: NoArgs) -> Result<Plan, String> {
    forward("closeAgentTabs", Map::new())
}

pub(super) fn tabs(args: Tabs) -> Result<Plan, String> {
    if let Some(offset) = args.offset {
        return Ok(Plan::Continue(offset as usize));
    }
    match args.action {
        TabAction::List => forward("getTabs", Map::new()),
        TabAction::New => {
            let mut params = Map::new();
            set(&mut params, "url", args.url.as_deref().map(absolute_url));
            set(&mut params, "active", args.active);
            forward("createTab", params)
        }
        // Playwright MCP names a tab by its place in the list; this bridge by its id too.
        TabAction::Select if args.tab_id.is_none() && args.index.is_some() => Ok(Plan::TabAt {
            index: args.index.unwrap_or_default() as usize,
        }),
        TabAction::Select => match args.tab_id {
            None => {
                Err("action \"select\" needs \"tabId\" or \"index\" (see action \"list\")".into())
            }
            Some(_) => forward("selectTab", on_tab(args.tab_id)),
        },
        // A tabId, when given, wins over an index.
        TabAction::Close => Ok(Plan::CloseTab {
            tab_id: args.tab_id,
            index: args
                .index
                .filter(|_| args.tab_id.is_none())
                .map(|i| i as usize),
        }),
    }
}

/// A URL as a model may write it (`github.com/rust-lang`, `localhost:3000`) made absolute, as
/// Playwright MCP makes it: a page on this machine over `http://`, any other over `https://`.
/// One with a scheme (`https://…`, `about:blank`, `data:…`) is left as it is.
fn absolute_url(url: &str) -> String {
    let url = url.trim();
    let lower = url.to_ascii_lowercase();
    let has_scheme = url.contains("://")
        || [
            "about:",
            "data:",
            "file:",
            "chrome:",
            "blob:",
            "javascript:",
            "view-source:",
        ]
        .iter()
        .any(|scheme| lower.starts_with(scheme));
    if has_scheme {
        return url.to_owned();
    }
    let host = url.split(['/', '?', '#']).next().unwrap_or("");
    let host = host
        .rsplit_once(':')
        .filter(|(_, port)| port.chars().all(|c| c.is_ascii_digit()))
        .map_or(host, |(name, _)| name);
    let local = ["localhost", "127.0.0.1", "[::1]", "0.0.0.0"].contains(&host)
        || host.ends_with(".localhost");
    format!("{}{url}", if local { "http://" } else { "https://" })
}

pub(super) fn navigate(args: Navigate) -> Result<Plan, String> {
    let mut params = on_tab(args.tab_id);
    match (args.url, args.direction) {
        (Some(url), None) if !url.trim().is_empty() => {
            params.insert("url".into(), json!(absolute_url(&url)));
            outline_after(&mut params, args.outline);
            forward("browser_navigate", params)
        }
        (None, Some(Direction::Back)) => forward("goBack", params),
        (None, Some(Direction::Forward)) => forward("goForward", params),
        _ => Err("give either \"url\" or \"direction\" (\"back\" or \"forward\")".into()),
    }
}

pub(super) fn back(args: TabOnly) -> Result<Plan, String> {
    forward("goBack", on_tab(args.tab_id))
}

pub(super) fn forward_in_history(args: TabOnly) -> Result<Plan, String> {
    forward("goForward", on_tab(args.tab_id))
}

pub(super) fn snapshot(args: Snapshot) -> Result<Plan, String> {
    if let Some(read_on) = read_on(args.offset, &args.filename)? {
        return Ok(read_on);
    }
    if args.depth == Some(0) {
        return Err("\"depth\" must be an integer of at least 1".into());
    }
    let mut params = on_tab(args.tab_id);
    params.insert("format".into(), json!("outline"));
    set(&mut params, "depth", args.depth);
    set(&mut params, "interactive", args.interactive);
    set(&mut params, "boxes", args.boxes.filter(|&boxes| boxes));
    if let Some(root) = resolve(&args.target, &args.reference, &args.selector) {
        root.put(&mut params, "");
    }
    Ok(forward("snapshot", params)?.saved_to(args.filename))
}

pub(super) fn find(args: Find) -> Result<Plan, String> {
    // Checked now, so a bad regex costs no snapshot; built again when the outline is here.
    super::find::Query::new(args.text.as_deref(), args.regex.as_deref())?;
    let mut params = on_tab(args.tab_id);
    params.insert("format".into(), json!("outline"));
    if let Some(root) = resolve(&args.target, &None, &None) {
        root.put(&mut params, "");
    }
    Ok(Plan::Find {
        params: Value::Object(params),
        text: args.text,
        regex: args.regex,
    }
    .saved_to(args.filename))
}

pub(super) fn evaluate(args: Evaluate) -> Result<Plan, String> {
    if let Some(read_on) = read_on(args.offset, &args.filename)? {
        return Ok(read_on);
    }
    let mut params = on_tab(args.tab_id);
    if let Some(function) = args.function {
        if function.trim().is_empty() {
            return Err("\"function\" is empty".into());
        }
        params.insert("function".into(), json!(function));
        let named = args.on.named();
        for (flag, set, how) in [
            ("each", args.each, "with every element"),
            ("all", args.all, "once with the list of every element"),
        ] {
            if set != Some(true) {
                continue;
            }
            if named.is_none() {
                return Err(format!(
                    "\"{flag}\" calls the function {how} \"target\" names: give \"target\" too"
                ));
            }
            params.insert(flag.into(), json!(true));
        }
        if let Some(on) = named {
            on.put(&mut params, "");
        }
        return Ok(forward("evaluateFunction", params)?.saved_to(args.filename));
    }
    match args.expression {
        Some(expression) if !expression.trim().is_empty() => {
            params.insert("expression".into(), json!(expression));
            Ok(forward("evaluate", params)?.saved_to(args.filename))
        }
        _ => Err("give \"function\" (e.g. \"() => document.title\") or \"expression\"".into()),
    }
}

pub(super) fn console_messages(args: ConsoleMessages) -> Result<Plan, String> {
    if let Some(read_on) = read_on(args.offset, &args.filename)? {
        return Ok(read_on);
    }
    let mut params = on_tab(args.tab_id);
    // The page now shown, as Playwright MCP lists them, unless "all".
    if args.all != Some(true) {
        params.insert("sincePage".into(), json!(true));
    }
    let level = if args.only_errors == Some(true) {
        ConsoleLevel::Error
    } else {
        args.level.unwrap_or(ConsoleLevel::Info)
    };
    Ok(Plan::Console {
        params: Value::Object(params),
        level,
    }
    .saved_to(args.filename))
}

pub(super) fn network_requests(args: NetworkRequests) -> Result<Plan, String> {
    if let Some(read_on) = read_on(args.offset, &args.filename)? {
        return Ok(read_on);
    }
    let mut params = on_tab(args.tab_id);
    if args.request_id.is_some() {
        set(&mut params, "requestId", args.request_id);
        return Ok(forward("networkRequests", params)?.saved_to(args.filename));
    }
    // Checked now, so a bad pattern costs no round trip; built again when the list is here.
    if let Some(filter) = &args.filter {
        super::results::url_filter(filter)?;
    }
    // The page now shown, as Playwright MCP lists it (earlier pages are not shown: no argument
    // brings them back).
    params.insert("sincePage".into(), json!(true));
    Ok(Plan::Requests {
        params: Value::Object(params),
        include_static: args.include_static.unwrap_or(false),
        filter: args.filter,
    }
    .saved_to(args.filename))
}

/// `browser_network_request`: the request numbered `index` in the list of the page now shown.
pub(super) fn network_request(args: NetworkRequest) -> Result<Plan, String> {
    if let Some(read_on) = read_on(args.offset, &args.filename)? {
        return Ok(read_on);
    }
    if args.index == 0 {
        return Err("\"index\" counts from 1, as browser_network_requests numbers requests".into());
    }
    let mut params = on_tab(args.tab_id);
    params.insert("index".into(), json!(args.index));
    Ok(Plan::Request {
        params: Value::Object(params),
        part: args.part,
    }
    .saved_to(args.filename))
}

pub(super) fn cdp(args: Cdp) -> Result<Plan, String> {
    if let Some(offset) = args.offset {
        return Ok(Plan::Continue(offset as usize));
    }
    if args.method.trim().is_empty() {
        return Err("\"method\" (a CDP method such as Page.reload) is empty".into());
    }
    let mut params = Map::new();
    params.insert("method".into(), json!(args.method));
    set(&mut params, "params", args.params);
    set(&mut params, "sessionId", args.session_id);
    forward("forwardCDPCommand", params)
}

fn seconds(key: &str, value: Option<f64>) -> Result<Option<f64>, String> {
    match value {
        Some(secs) if !(0.0..=WAIT_MAX_SECS).contains(&secs) => Err(format!(
            "\"{key}\" must be a number of seconds from 0 to {WAIT_MAX_SECS}"
        )),
        other => Ok(other),
    }
}

pub(super) fn wait_for(args: WaitFor) -> Result<Plan, String> {
    let time = seconds("time", args.time)?;
    let timeout = seconds("timeout", args.timeout)?;
    for (key, text) in [("text", &args.text), ("textGone", &args.text_gone)] {
        if text.as_deref() == Some("") {
            return Err(format!("\"{key}\" is empty"));
        }
    }
    let waits_for_text = args.text.is_some() || args.text_gone.is_some();
    if time.is_some() && waits_for_text {
        return Err("give either \"time\", or \"text\"/\"textGone\", not both".into());
    }
    if time.is_none() && !waits_for_text {
        return Err("give \"text\" to wait for, \"textGone\", or \"time\" (seconds)".into());
    }
    let mut params = on_tab(args.tab_id);
    set(&mut params, "text", args.text);
    set(&mut params, "textGone", args.text_gone);
    set(&mut params, "time", time);
    if waits_for_text {
        params.insert(
            "timeout".into(),
            json!(timeout.unwrap_or(WAIT_DEFAULT_SECS)),
        );
    }
    forward("waitFor", params)
}

pub(super) fn handle_dialog(args: HandleDialog) -> Result<Plan, String> {
    let mut params = on_tab(args.tab_id);
    params.insert("accept".into(), json!(args.accept));
    set(&mut params, "promptText", args.prompt_text);
    forward("handleDialog", params)
}

pub(super) fn screenshot(args: Screenshot) -> Result<Plan, String> {
    let mut params = on_tab(args.tab_id);
    set(&mut params, "format", args.format);
    set(&mut params, "quality", args.quality);
    set(&mut params, "fullPage", args.full_page);
    set(&mut params, "maxDimension", args.max_dimension);
    Ok(Plan::Forward {
        method: "screenshot",
        params: Value::Object(params),
        image: true,
    })
}

pub(super) fn take_screenshot(args: TakeScreenshot) -> Result<Plan, String> {
    let mut params = on_tab(args.tab_id);
    // Without "type", the file's extension says it, as in Playwright MCP.
    set(
        &mut params,
        "format",
        args.kind
            .or_else(|| args.filename.as_deref().and_then(format_of_file)),
    );
    let element = args.on.named();
    if let Some(on) = &element {
        on.put(&mut params, "");
    } else if args.full_page == Some(true) {
        params.insert("fullPage".into(), json!(true));
    }
    Ok(Plan::Forward {
        method: if element.is_some() {
            "elementScreenshot"
        } else {
            "screenshot"
        },
        params: Value::Object(params),
        image: true,
    }
    .saved_to(args.filename))
}

/// The image format a file name's extension names, if any.
fn format_of_file(name: &str) -> Option<ImageFormat> {
    let (_, extension) = name.rsplit_once('.')?;
    match extension.to_ascii_lowercase().as_str() {
        "png" => Some(ImageFormat::Png),
        "jpg" | "jpeg" => Some(ImageFormat::Jpeg),
        "webp" => Some(ImageFormat::Webp),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::absolute_url;

    #[test]
    fn a_url_without_a_scheme_is_made_absolute_as_playwright_mcp_does() {
        assert_eq!(
            absolute_url("github.com/rust-lang"),
            "https://github.com/rust-lang"
        );
        assert_eq!(absolute_url(" example.com "), "https://example.com");
        assert_eq!(
            absolute_url("localhost:3000/app"),
            "http://localhost:3000/app"
        );
        assert_eq!(absolute_url("127.0.0.1:8080"), "http://127.0.0.1:8080");
        assert_eq!(absolute_url("app.localhost"), "http://app.localhost");
        for kept in [
            "https://e.com/",
            "http://localhost/",
            "about:blank",
            "data:text/html,hi",
        ] {
            assert_eq!(absolute_url(kept), kept);
        }
    }
}
