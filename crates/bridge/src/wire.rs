//! The last step before stdout: the proxy spec's annotations, put where the spec puts them.
//!
//! rmcp's typed content keeps only the annotation keys the MCP schema defines (`audience`,
//! `priority`, `lastModified`) and has no `contentType` on resources, as do other strict
//! clients and servers. So [`super::proxy`] stores the proxy metadata in each content item's
//! `_meta.proxy`, which every SDK keeps, and this pump copies it into `annotations` (and
//! `contentType` into the embedded resource) on the serialized JSON-RPC lines. Lines without
//! proxy metadata pass through untouched, byte for byte.

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};

/// Marks a serialized content item that holds proxy metadata.
const MARKER: &str = "\"_meta\":{\"proxy\":";

/// The rewritten line, or `None` when it has nothing to lift.
pub(crate) fn lift(line: &str) -> Option<String> {
    if !line.contains(MARKER) {
        return None;
    }
    let mut message: Value = serde_json::from_str(line).ok()?;
    let content = message
        .get_mut("result")?
        .get_mut("content")?
        .as_array_mut()?;
    let mut changed = false;
    for item in content {
        let Some(proxy) = item
            .get("_meta")
            .and_then(|m| m.get(super::proxy::META_KEY))
            .and_then(Value::as_object)
            .cloned()
        else {
            continue;
        };
        let annotations = item
            .as_object_mut()?
            .entry("annotations")
            .or_insert_with(|| Value::Object(Default::default()));
        let Some(annotations) = annotations.as_object_mut() else {
            continue;
        };
        let mut content_type = None;
        for (key, value) in proxy {
            if key == "contentType" {
                content_type = Some(value);
            } else {
                annotations.insert(key, value);
            }
        }
        if let (Some(ct), Some(resource)) = (content_type, item.get_mut("resource")) {
            if let Some(resource) = resource.as_object_mut() {
                resource.insert("contentType".into(), ct);
            }
        }
        changed = true;
    }
    changed.then(|| message.to_string())
}

/// Starts the pump: rmcp writes into the returned stream; the task writes the (lifted) lines
/// to stdout and ends, flushed, when rmcp drops its end.
pub(crate) fn stdout_pump() -> (DuplexStream, tokio::task::JoinHandle<()>) {
    let (for_rmcp, ours) = tokio::io::duplex(1 << 16);
    let task = tokio::spawn(async move {
        let mut reader = BufReader::new(ours);
        let mut stdout = tokio::io::stdout();
        let mut line = Vec::new();
        loop {
            line.clear();
            match reader.read_until(b'\n', &mut line).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            let lifted = std::str::from_utf8(&line)
                .ok()
                .and_then(|text| lift(text.trim_end_matches('\n')));
            let written = match lifted {
                Some(mut text) => {
                    text.push('\n');
                    stdout.write_all(text.as_bytes()).await
                }
                None => stdout.write_all(&line).await,
            };
            if written.is_err() || stdout.flush().await.is_err() {
                break;
            }
        }
        let _ = stdout.flush().await;
    });
    (for_rmcp, task)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn proxy_meta_is_lifted_into_annotations_and_content_type() {
        let line = json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [
            {"type": "resource", "resource": {"uri": "x://a", "mimeType": "application/json", "text": "{}"},
             "_meta": {"proxy": {"proxyAction": "call", "proxyType": "resource", "proxyPath": "x://a", "contentType": "text/plain"}}},
            {"type": "text", "text": "plain", "annotations": {"priority": 0.5}}
        ]}})
        .to_string();
        let lifted: Value = serde_json::from_str(&lift(&line).unwrap()).unwrap();
        let first = &lifted["result"]["content"][0];
        assert_eq!(first["annotations"]["proxyAction"], "call");
        assert_eq!(first["annotations"]["proxyPath"], "x://a");
        assert!(first["annotations"].get("contentType").is_none());
        assert_eq!(first["resource"]["contentType"], "text/plain");
        assert_eq!(first["_meta"]["proxy"]["proxyType"], "resource");
        assert_eq!(
            lifted["result"]["content"][1]["annotations"],
            json!({"priority": 0.5})
        );
    }

    #[test]
    fn other_lines_pass_untouched() {
        assert_eq!(
            lift(r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#),
            None
        );
        assert_eq!(lift("not json \"_meta\":{\"proxy\":"), None);
    }
}
