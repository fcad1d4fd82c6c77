//! Files crossing between the bridge's machine and the browser's: uploads and drops carry
//! bytes read here to the page; PDFs and downloads come back and are written here
//! (crate::files does the reading and writing).
//!
//! Downloads (issue 23's contract): when an action's answer lists `downloads`, each complete
//! one is taken from the extension at once (`takeDownload`, bounded by
//! `--max-message-bytes`) and saved, never over an existing file; the action's result names
//! the path, size and type. `browser_downloads` takes any that completed since and lists what
//! this session saved.

use std::path::PathBuf;
use std::sync::Mutex;

use rmcp::model::CallToolResult;
use serde_json::{json, Map, Value};

use super::args::{Drop, FileUpload, NoArgs, PdfSave};
use super::results::success;
use super::{advice, Plan, Toolbox};
use crate::link::LinkError;

/// Where downloads go and what this session saved.
pub(crate) struct Downloads {
    /// `--downloads-dir`, else `mcp-relay-downloads` in the system's temporary directory.
    dir: PathBuf,
    /// Every download saved in this session, as its result row (with `saved`).
    saved: Mutex<Vec<Value>>,
}

impl Downloads {
    pub(crate) fn new(dir: Option<PathBuf>) -> Downloads {
        Downloads {
            dir: dir.unwrap_or_else(|| std::env::temp_dir().join("mcp-relay-downloads")),
            saved: Mutex::new(Vec::new()),
        }
    }
}

fn tab(params: &mut Map<String, Value>, tab_id: Option<i64>) {
    if let Some(id) = tab_id {
        params.insert("tabId".into(), json!(id));
    }
}

pub(super) fn file_upload(args: FileUpload) -> Result<Plan, String> {
    if args.paths.is_empty() {
        return Err(
            "\"paths\" (the files to upload, as paths on the machine where the bridge \
                    runs) is required"
                .into(),
        );
    }
    let mut params = Map::new();
    if let Some(on) = args.on.named() {
        on.put(&mut params, "");
    }
    tab(&mut params, args.tab_id);
    Ok(Plan::Upload {
        method: "fileUpload",
        paths: args.paths,
        params: Value::Object(params),
    })
}

pub(super) fn drop(args: Drop) -> Result<Plan, String> {
    let on = super::args::resolve(&Some(args.target.0), &None, &None).ok_or(
        "\"target\" is empty: give the element's ref from browser_snapshot (e.g. \"e5\") or a \
         CSS selector",
    )?;
    let paths = args.paths.unwrap_or_default();
    let data = args.data.unwrap_or_default();
    if paths.is_empty() && data.is_empty() {
        return Err(
            "give \"paths\" (files where the bridge runs) or \"data\" (e.g. \
                    {\"text/plain\": \"hello\"}) to drop"
                .into(),
        );
    }
    let mut params = Map::new();
    on.put(&mut params, "");
    if !data.is_empty() {
        params.insert("data".into(), json!(data));
    }
    tab(&mut params, args.tab_id);
    Ok(Plan::Upload {
        method: "drop",
        paths,
        params: Value::Object(params),
    })
}

pub(super) fn pdf_save(args: PdfSave) -> Result<Plan, String> {
    let mut params = Map::new();
    tab(&mut params, args.tab_id);
    Ok(Plan::SavePdf {
        params: Value::Object(params),
        filename: args.filename,
    })
}

pub(super) fn downloads(_: NoArgs) -> Result<Plan, String> {
    Ok(Plan::Downloads)
}

impl Toolbox {
    /// Takes and saves each complete download `result` lists, rewriting its rows to say where
    /// each went (or why not).
    pub(super) async fn take_downloads(&self, result: &mut Value) {
        let Some(rows) = result.get_mut("downloads").and_then(Value::as_array_mut) else {
            return;
        };
        for row in rows {
            if row["state"] == "complete" {
                self.take_download(row).await;
            }
        }
    }

    async fn take_download(&self, row: &mut Value) {
        let Some(id) = row["id"].as_str().map(str::to_owned) else {
            return;
        };
        let mut params = json!({ "id": id });
        if self.max_message_bytes != 0 {
            params["maxBytes"] = json!(self.max_message_bytes);
        }
        let taken = match self.link.call("takeDownload", params).await {
            Ok(taken) => taken,
            Err(e) => {
                row["error"] = json!(format!("not saved: {}", download_advice(&e)));
                return;
            }
        };
        let name = taken["filename"]
            .as_str()
            .or(row["filename"].as_str())
            .unwrap_or("download")
            .to_owned();
        let Some(data) = taken["data"].as_str() else {
            row["error"] = json!("not saved: the extension's answer held no bytes");
            return;
        };
        match crate::files::save_download(&self.downloads.dir, &name, data) {
            Err(message) => row["error"] = json!(format!("not saved: {message}")),
            Ok((path, bytes)) => {
                row["saved"] = json!(path.display().to_string());
                row["bytes"] = json!(bytes);
                if let Some(mime) = taken["mimeType"].as_str() {
                    row["mimeType"] = json!(mime);
                }
                self.downloads.saved.lock().unwrap().push(row.clone());
            }
        }
    }

    /// `browser_downloads`: takes what completed since, then lists the session's downloads.
    pub(super) async fn list_downloads(&self) -> Result<CallToolResult, LinkError> {
        let mut pending = self.link.call("listDownloads", json!({})).await?;
        self.take_downloads(&mut pending).await;
        let waiting: Vec<Value> = pending["downloads"]
            .as_array()
            .map(|rows| {
                rows.iter()
                    .filter(|r| r.get("saved").is_none())
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        let saved = self.downloads.saved.lock().unwrap().clone();
        let mut lines = vec![format!(
            "{} downloads saved in this session, in {} on the bridge's machine",
            saved.len(),
            self.downloads.dir.display()
        )];
        for row in &saved {
            lines.push(format!(
                "- {} ({} bytes, {}) from {}",
                row["saved"].as_str().unwrap_or_default(),
                row["bytes"],
                row["mimeType"]
                    .as_str()
                    .unwrap_or("application/octet-stream"),
                row["url"].as_str().unwrap_or("the page")
            ));
        }
        for row in &waiting {
            let name = row["filename"].as_str().unwrap_or("download");
            lines.push(match row["error"].as_str() {
                Some(error) => format!("- {name}: {error}"),
                None => format!(
                    "- {name}: {} (not saved yet; call browser_downloads again)",
                    row["state"].as_str().unwrap_or("in progress")
                ),
            });
        }
        Ok(success(
            lines.join("\n"),
            Some(json!({"saved": saved, "pending": waiting})),
        ))
    }
}

fn download_advice(error: &LinkError) -> String {
    match error {
        LinkError::Rpc { code, message } if *code == mcp_relay_wire::code::INVALID_PARAMS => {
            format!(
                "{message}. Files above the bridge's --max-message-bytes cannot be carried; \
                 raise it on both the bridge and the relay"
            )
        }
        other => advice(other),
    }
}
