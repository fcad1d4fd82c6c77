//! Files crossing between the bridge's machine and the browser's: uploads and drops carry
//! bytes read here to the page; PDFs and downloads come back and are written here
//! (crate::files does the reading and writing).
//!
//! Served by the relay itself (HTTP `/mcp`, hosted.rs), "here" is the relay's server, which the
//! host cannot reach and which must not hand its own files to whoever holds a token: there
//! [`Keep::InResult`] refuses `paths` and carries PDFs and downloads back inside the tool result
//! as embedded resources (base64 `blob`), the only way to the host's machine.
//!
//! Downloads (issue 23's contract): when an action's answer lists `downloads`, each complete
//! one is taken from the extension at once (`takeDownload`, bounded by
//! `--max-message-bytes`) and saved, never over an existing file; the action's result names
//! the path, size and type. `browser_downloads` takes any that completed since and lists what
//! this session saved.
//!
//! A model may also ask for an answer to be saved rather than returned (Playwright MCP's
//! `filename` on the snapshot, find, evaluate, console, network and screenshot tools): a
//! whole long outline it means to search with its own tools, or an image for the person. The
//! answer is written where the bridge runs (crate::files::Written: never over a file this
//! session did not write) and the result names the file. Over HTTP `/mcp` nothing is written,
//! and the answer is returned as usual under a line that says so.

use std::path::PathBuf;
use std::sync::Mutex;

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use serde_json::{json, Map, Value};

use super::args::{Drop, FileUpload, NoArgs, PdfSave};
use super::results::{self, error, success, Rendered};
use super::{advice, with_content, Answer, Plan, Toolbox};
use crate::link::LinkError;

/// Where files coming back from the browser are kept.
pub(crate) enum Keep {
    /// In this directory on the bridge's machine (`--downloads-dir`, else
    /// `mcp-relay-downloads` in the system's temporary directory); uploads read `paths` here.
    Dir(PathBuf),
    /// Nowhere here: each travels in the tool result that took it, and `paths` are refused.
    InResult,
}

/// Where downloads go and what this session saved.
pub(crate) struct Downloads {
    keep: Keep,
    /// Every download saved (or carried back) in this session, as its result row (with
    /// `saved` or `carried`).
    saved: Mutex<Vec<Value>>,
}

impl Downloads {
    pub(crate) fn new(dir: Option<PathBuf>) -> Downloads {
        let dir = dir.unwrap_or_else(|| std::env::temp_dir().join("mcp-relay-downloads"));
        Downloads::keeping(Keep::Dir(dir))
    }

    pub(crate) fn keeping(keep: Keep) -> Downloads {
        Downloads {
            keep,
            saved: Mutex::new(Vec::new()),
        }
    }

    /// Whether files live with the host rather than here (the relay's HTTP `/mcp`).
    pub(crate) fn in_results(&self) -> bool {
        matches!(self.keep, Keep::InResult)
    }
}

/// Why `paths` are refused over the relay's HTTP `/mcp`, and what to do instead.
pub(crate) const NO_PATHS_OVER_HTTP: &str = "\"paths\" name files on the machine that serves \
    the tools, and over the relay's HTTP /mcp that is the relay's server, whose files are never \
    read for a host. Give \"data\" instead (browser_drop, e.g. {\"text/plain\": \"hello\"}), \
    or run `mcp-relay bridge` on the machine that has the files";

/// An embedded resource carrying `data` (base64) back to the host: a download or a PDF.
pub(crate) fn blob(data: &str, uri: String, mime_type: Option<&str>) -> ContentBlock {
    let contents = ResourceContents::blob(data, uri);
    ContentBlock::resource(match mime_type {
        Some(mime) => contents.with_mime_type(mime),
        None => contents,
    })
}

/// A URI for a file carried back: its kind, an id, and its name with only URI-safe characters.
pub(crate) fn carried_uri(kind: &str, id: &str, name: &str) -> String {
    let safe = |text: &str| -> String {
        text.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "._-".contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    format!("mcp-relay://{kind}/{}/{}", safe(id), safe(name))
}

/// The page an answer came from (`tabId`, `url`, `title`), those it names.
fn page_of(fields: &Value) -> Map<String, Value> {
    ["tabId", "url", "title"]
        .into_iter()
        .filter_map(|key| {
            let value = fields.get(key).filter(|v| !v.is_null())?;
            Some((key.to_owned(), value.clone()))
        })
        .collect()
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
    /// `answer` written at `filename` where the bridge runs, the result naming the file (see
    /// the module's documentation).
    pub(super) fn save_answer(&self, name: &str, answer: Answer, filename: &str) -> CallToolResult {
        if self.downloads.in_results() {
            let note = format!(
                "Not saved to {filename}: over the relay's HTTP /mcp the tools keep no files. \
                 The answer follows."
            );
            return match answer {
                Answer::Text(mut rendered, carried) => {
                    rendered.text = format!("{note}\n{}", rendered.text);
                    with_content(self.deliver(name, rendered), carried)
                }
                Answer::Image(result) => {
                    let mut shown = results::screenshot_result(&result);
                    shown.content.push(ContentBlock::text(note));
                    shown
                }
                Answer::Done(result) => result,
            };
        }
        match answer {
            Answer::Text(rendered, carried) => {
                with_content(self.save_text(name, rendered, filename), carried)
            }
            Answer::Image(result) => self.save_image(name, &result, filename),
            Answer::Done(result) => result,
        }
    }

    fn save_text(&self, name: &str, rendered: Rendered, filename: &str) -> CallToolResult {
        let path = match self.written.save(filename, rendered.text.as_bytes()) {
            Ok(path) => path,
            Err(message) => return error(format!("{name}: {message}")),
        };
        let fields = rendered.structured.unwrap_or_default();
        let lines = rendered.text.lines().count();
        let characters = rendered.text.chars().count();
        let mut text = results::header(&fields);
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&format!(
            "Saved the answer ({lines} lines, {characters} characters) to {} on the machine \
             where the bridge runs; it is not repeated here.",
            path.display()
        ));
        let mut structured = page_of(&fields);
        structured.insert("saved".into(), json!(path.display().to_string()));
        structured.insert("characters".into(), json!(characters));
        success(text, Some(Value::Object(structured)))
    }

    fn save_image(&self, name: &str, result: &Value, filename: &str) -> CallToolResult {
        use base64::Engine;
        let Some(data) = result["data"].as_str() else {
            // The same error the image would have had.
            return results::screenshot_result(result);
        };
        let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(data) else {
            return error(format!(
                "{name} failed: the extension's image was not base64"
            ));
        };
        let path = match self.written.save(filename, &bytes) {
            Ok(path) => path,
            Err(message) => return error(format!("{name}: {message}")),
        };
        let mime = result["mimeType"].as_str().unwrap_or("image/png");
        let text = format!(
            "{}, saved to {} ({} bytes) on the machine where the bridge runs; the image is not \
             repeated here.",
            results::screenshot_line(result, mime),
            path.display(),
            bytes.len()
        );
        let mut structured = page_of(result);
        structured.insert("saved".into(), json!(path.display().to_string()));
        structured.insert("bytes".into(), json!(bytes.len()));
        structured.insert("mimeType".into(), json!(mime));
        success(text, Some(Value::Object(structured)))
    }

    /// Takes and saves each complete download `result` lists, rewriting its rows to say where
    /// each went (or why not). Answers the downloads carried back in the result (only with
    /// [`Keep::InResult`]), to go after its text.
    pub(super) async fn take_downloads(&self, result: &mut Value) -> Vec<ContentBlock> {
        let mut carried = Vec::new();
        let Some(rows) = result.get_mut("downloads").and_then(Value::as_array_mut) else {
            return carried;
        };
        for row in rows {
            if row["state"] == "complete" {
                carried.extend(self.take_download(row).await);
            }
        }
        carried
    }

    async fn take_download(&self, row: &mut Value) -> Option<ContentBlock> {
        let id = row["id"].as_str().map(str::to_owned)?;
        let mut params = json!({ "id": id });
        if self.max_message_bytes != 0 {
            params["maxBytes"] = json!(self.max_message_bytes);
        }
        let taken = match self.link.call("takeDownload", params).await {
            Ok(taken) => taken,
            Err(e) => {
                row["error"] = json!(format!("not saved: {}", download_advice(&e)));
                return None;
            }
        };
        let name = taken["filename"]
            .as_str()
            .or(row["filename"].as_str())
            .unwrap_or("download")
            .to_owned();
        let Some(data) = taken["data"].as_str() else {
            row["error"] = json!("not saved: the extension's answer held no bytes");
            return None;
        };
        if let Some(mime) = taken["mimeType"].as_str() {
            row["mimeType"] = json!(mime);
        }
        let dir = match &self.downloads.keep {
            Keep::Dir(dir) => dir,
            Keep::InResult => {
                use base64::Engine;
                let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(data) else {
                    row["error"] = json!("not carried: the extension's download was not base64");
                    return None;
                };
                let uri = carried_uri("downloads", &id, &crate::files::safe_file_name(&name));
                let bytes = bytes.len();
                row["carried"] = json!(uri);
                row["bytes"] = json!(bytes);
                self.downloads.saved.lock().unwrap().push(row.clone());
                return Some(blob(data, uri, row["mimeType"].as_str()));
            }
        };
        match crate::files::save_download(dir, &name, data) {
            Err(message) => row["error"] = json!(format!("not saved: {message}")),
            Ok((path, bytes)) => {
                row["saved"] = json!(path.display().to_string());
                row["bytes"] = json!(bytes);
                self.downloads.saved.lock().unwrap().push(row.clone());
            }
        }
        None
    }

    /// `browser_downloads`: takes what completed since, then lists the session's downloads.
    pub(super) async fn list_downloads(&self) -> Result<CallToolResult, LinkError> {
        let mut pending = self.link.call("listDownloads", json!({})).await?;
        let carried = self.take_downloads(&mut pending).await;
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
        let mut lines = vec![match &self.downloads.keep {
            Keep::Dir(dir) => format!(
                "{} downloads saved in this session, in {} on the bridge's machine",
                saved.len(),
                dir.display()
            ),
            Keep::InResult => format!(
                "{} downloads carried back in this session, each as an embedded resource of the \
                 result that took it (the relay keeps no copy)",
                saved.len()
            ),
        }];
        for row in &saved {
            lines.push(format!(
                "- {} ({} bytes, {}) from {}",
                row["saved"]
                    .as_str()
                    .or(row["carried"].as_str())
                    .unwrap_or_default(),
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
        let mut result = success(
            lines.join("\n"),
            Some(json!({"saved": saved, "pending": waiting})),
        );
        result.content.extend(carried);
        Ok(result)
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
