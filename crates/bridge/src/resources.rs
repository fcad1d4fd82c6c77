//! The browser as MCP resources: the tab list, and each tab's snapshot (text) and screenshot
//! (image), with a resource template per kind so a client can build the URI of any tab.
//!
//! - `browser://tabs`: the extension's `getTabs` answer (JSON).
//! - `browser://tabs/{tabId}/snapshot`: `snapshot {tabId}` (JSON text: URL, title, text,
//!   elements with selectors).
//! - `browser://tabs/{tabId}/screenshot`: `screenshot {tabId}`, a PNG blob.
//!
//! `resources/list` asks the browser for its tabs, with a short time limit so a missing
//! browser leaves the static entry and the templates instead of a hanging list.

use std::time::Duration;

use rmcp::model::ResourceContents;
use serde_json::{json, Value};

use super::tools::advice;
use crate::link::BrowserLink;

pub(crate) const TABS_URI: &str = "browser://tabs";
const SNAPSHOT_TEMPLATE: &str = "browser://tabs/{tabId}/snapshot";
const SCREENSHOT_TEMPLATE: &str = "browser://tabs/{tabId}/screenshot";
/// How long `resources/list` waits for the tab list.
const LIST_WAIT: Duration = Duration::from_secs(3);

/// What a resource URI names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BrowserResource {
    Tabs,
    Snapshot(i64),
    Screenshot(i64),
}

impl BrowserResource {
    pub(crate) fn parse(uri: &str) -> Option<BrowserResource> {
        if uri == TABS_URI {
            return Some(BrowserResource::Tabs);
        }
        let rest = uri.strip_prefix("browser://tabs/")?;
        let (tab, kind) = rest.split_once('/')?;
        let tab: i64 = tab.parse().ok()?;
        match kind {
            "snapshot" => Some(BrowserResource::Snapshot(tab)),
            "screenshot" => Some(BrowserResource::Screenshot(tab)),
            _ => None,
        }
    }
}

/// Why a read failed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ReadError {
    /// No such resource: a protocol error for `resources/read`.
    NotFound(String),
    /// The browser could not answer; the message says what to do.
    Failed(String),
}

/// The resource templates, as MCP `ResourceTemplate` JSON.
pub(crate) fn templates() -> Vec<Value> {
    vec![
        json!({
            "uriTemplate": SNAPSHOT_TEMPLATE,
            "name": "tab_snapshot",
            "title": "Tab snapshot",
            "description": "A tab's URL, title, visible text and interactive elements with CSS selectors (tab ids from browser://tabs).",
            "mimeType": "application/json",
        }),
        json!({
            "uriTemplate": SCREENSHOT_TEMPLATE,
            "name": "tab_screenshot",
            "title": "Tab screenshot",
            "description": "A PNG screenshot of a tab's viewport (tab ids from browser://tabs).",
            "mimeType": "image/png",
        }),
    ]
}

fn tabs_resource() -> Value {
    json!({
        "uri": TABS_URI,
        "name": "tabs",
        "title": "Browser tabs",
        "description": "The open tabs of the connected browser: id, URL, title, which one is current.",
        "mimeType": "application/json",
    })
}

/// The concrete resources: the tab list, and a snapshot and a screenshot per open tab when the
/// browser answers in time.
pub(crate) async fn list(link: &dyn BrowserLink) -> Vec<Value> {
    let mut resources = vec![tabs_resource()];
    let Ok(Ok(tabs)) = tokio::time::timeout(LIST_WAIT, link.call("getTabs", json!({}))).await
    else {
        return resources;
    };
    for tab in tabs["tabs"].as_array().into_iter().flatten() {
        let Some(id) = tab["tabId"].as_i64() else {
            continue;
        };
        let title = tab["title"].as_str().unwrap_or_default();
        let url = tab["url"].as_str().unwrap_or_default();
        resources.push(json!({
            "uri": format!("browser://tabs/{id}/snapshot"),
            "name": format!("tab_{id}_snapshot"),
            "title": format!("Snapshot of {title}"),
            "description": format!("Text and elements of tab {id} ({url})."),
            "mimeType": "application/json",
        }));
        resources.push(json!({
            "uri": format!("browser://tabs/{id}/screenshot"),
            "name": format!("tab_{id}_screenshot"),
            "title": format!("Screenshot of {title}"),
            "description": format!("Screenshot of tab {id} ({url})."),
            "mimeType": "image/png",
        }));
    }
    resources
}

/// Reads one resource from the browser.
pub(crate) async fn read(
    link: &dyn BrowserLink,
    uri: &str,
) -> Result<Vec<ResourceContents>, ReadError> {
    let Some(resource) = BrowserResource::parse(uri) else {
        return Err(ReadError::NotFound(format!(
            "no resource {uri}: the resources are {TABS_URI}, {SNAPSHOT_TEMPLATE} and \
             {SCREENSHOT_TEMPLATE}"
        )));
    };
    let failed = |e| ReadError::Failed(format!("reading {uri} failed: {}", advice(&e)));
    match resource {
        BrowserResource::Tabs => {
            let tabs = link.call("getTabs", json!({})).await.map_err(failed)?;
            Ok(vec![json_contents(uri, &tabs)])
        }
        BrowserResource::Snapshot(tab) => {
            let snapshot = link
                .call("snapshot", json!({"tabId": tab}))
                .await
                .map_err(failed)?;
            Ok(vec![json_contents(uri, &snapshot)])
        }
        BrowserResource::Screenshot(tab) => {
            let shot = link
                .call("screenshot", json!({"tabId": tab}))
                .await
                .map_err(failed)?;
            let Some(data) = shot["data"].as_str() else {
                return Err(ReadError::Failed(format!(
                    "reading {uri} failed: the extension's answer held no image data"
                )));
            };
            let mime = shot["mimeType"].as_str().unwrap_or("image/png");
            Ok(vec![ResourceContents::blob(data, uri).with_mime_type(mime)])
        }
    }
}

fn json_contents(uri: &str, value: &Value) -> ResourceContents {
    ResourceContents::text(value.to_string(), uri).with_mime_type("application/json")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_name_tabs_snapshots_and_screenshots() {
        assert_eq!(
            BrowserResource::parse(TABS_URI),
            Some(BrowserResource::Tabs)
        );
        assert_eq!(
            BrowserResource::parse("browser://tabs/42/snapshot"),
            Some(BrowserResource::Snapshot(42))
        );
        assert_eq!(
            BrowserResource::parse("browser://tabs/7/screenshot"),
            Some(BrowserResource::Screenshot(7))
        );
        for bad in [
            "browser://tabs/x/snapshot",
            "browser://tabs/7/video",
            "file:///etc/passwd",
            "browser://tabs/",
        ] {
            assert_eq!(BrowserResource::parse(bad), None, "{bad}");
        }
    }
}
