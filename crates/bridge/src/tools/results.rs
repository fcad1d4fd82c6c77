//! What a model reads: the extension's answers as plain text, and the answer's fields.
//!
//! Page text (an outline, an evaluated string, console lines, requests, tabs) is printed as
//! it would be on a screen under a short header (`Tab 7 · https://… · Title`), never as a
//! JSON string with every quote and line break escaped. Short answers without page text stay
//! compact JSON, which a model reads as easily. Screenshots are MCP images.
//!
//! Why a result that carries page text goes to the host without `structuredContent`: MCP
//! describes a result's text as the serialisation of its `structuredContent`, and the hosts
//! people use read it that way. Claude Code gives its model `JSON.stringify(structuredContent)`
//! in place of the text whenever both are present (anthropics/claude-code#55677 and #79944,
//! seen on 2.1.280), as do VS Code (microsoft/vscode#290063), OpenCode and Codex: a snapshot's
//! fields beside its outline would leave the model with `{"tabId":7,"url":…}` and no outline.
//! Playwright MCP sends text only. So the fields of such a result stay inside the bridge (a
//! `code_execution` script reads them as `data`) unless the bridge is started with
//! `--structured-content`, for clients that read fields and show the text to no model;
//! answers whose text says no more than their fields (a click, a JSON answer) keep them.

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{json, Map, Value};

use super::args::{ConsoleLevel, RequestPart};

/// A tool's answer before it is cut into parts: the text a model reads and the fields a
/// client may want, without the page text already in `text`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Rendered {
    pub(crate) text: String,
    pub(crate) structured: Option<Value>,
    /// Whether `text` carries page text that `structured` does not: then a host is sent the
    /// text alone (see the module's documentation).
    pub(crate) page_text: bool,
}

impl Rendered {
    fn json(value: &Value) -> Rendered {
        Rendered {
            text: value.to_string(),
            structured: value.is_object().then(|| value.clone()),
            page_text: false,
        }
    }

    /// Page text a model reads, with the fields a script or a `--structured-content` client
    /// may read.
    pub(crate) fn page(text: String, structured: Value) -> Rendered {
        Rendered {
            text,
            structured: Some(structured),
            page_text: true,
        }
    }

    /// The whole of it as a successful result, marked when it is page text.
    pub(crate) fn into_result(self) -> CallToolResult {
        match (self.page_text, self.structured) {
            (true, Some(fields)) => with_page_fields(success(self.text, None), fields),
            (_, structured) => success(self.text, structured),
        }
    }
}

/// The `_meta` key that marks a result whose text is page text, until [`for_host`] reads it.
const PAGE_TEXT_MARK: &str = "mcp-relay/page-text";

/// Marks `result` as carrying page text its `structuredContent` does not.
fn mark_page_text(result: &mut CallToolResult) {
    let mut meta = result.meta.take().unwrap_or_default();
    meta.0.insert(PAGE_TEXT_MARK.into(), Value::Bool(true));
    result.meta = Some(meta);
}

/// `result` with `fields` as its `structuredContent`, marked as carrying page text they do
/// not: the bridge (a script's `data`) reads them, a host gets them only when it asked.
pub(crate) fn with_page_fields(mut result: CallToolResult, fields: Value) -> CallToolResult {
    result.structured_content = Some(fields);
    mark_page_text(&mut result);
    result
}

/// A tool's result as the host receives it: a result marked as page text loses its
/// `structuredContent` unless `keep_structured` (`--structured-content`); the mark itself
/// never leaves the bridge.
pub(crate) fn for_host(mut result: CallToolResult, keep_structured: bool) -> CallToolResult {
    let marked = result
        .meta
        .as_mut()
        .and_then(|meta| meta.0.remove(PAGE_TEXT_MARK))
        .is_some();
    if result.meta.as_ref().is_some_and(|meta| meta.0.is_empty()) {
        result.meta = None;
    }
    if marked && !keep_structured {
        result.structured_content = None;
    }
    result
}

pub(crate) fn error(message: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}

/// A successful result of `text`, with `structured` beside it when there is any.
pub(crate) fn success(text: String, structured: Option<Value>) -> CallToolResult {
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    result.structured_content = structured.filter(Value::is_object);
    result
}

/// A JSON value as a model reads it in a line: strings bare, the rest compact JSON.
fn plain(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `Tab 7 · https://example.com/ · Example`, from whichever of the three `value` has.
pub(crate) fn header(value: &Value) -> String {
    let mut parts = Vec::new();
    if let Some(tab) = value.get("tabId").filter(|t| !t.is_null()) {
        parts.push(format!("Tab {tab}"));
    }
    for key in ["url", "title"] {
        if let Some(text) = value.get(key).and_then(Value::as_str) {
            if !text.is_empty() {
                parts.push(text.to_owned());
            }
        }
    }
    parts.join(" · ")
}

/// `value` without `keys`.
fn without(value: &Value, keys: &[&str]) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| !keys.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// What an action's answer may say happened to the page, in the order its text says it.
/// Each but `settled` (a page still loading, said only beside something else) makes the answer
/// lines rather than JSON (`render`).
const WHAT_HAPPENED: [&str; 24] = [
    "dialog",
    "fileChooser",
    "tabClosed",
    "pageChanged",
    "loadedAgain",
    "httpError",
    "stillLoading",
    "formBlocked",
    "markedInvalid",
    "pageSays",
    "changed",
    "changedMore",
    "closed",
    "opened",
    "appeared",
    "toggled",
    "shows",
    "listed",
    "gone",
    "unread",
    "tabsOpened",
    "console",
    "settled",
    "downloads",
];

/// Tools that act on the page: their answer (what was done, the values read back) reads as
/// lines under the tab's header like every page answer, never as JSON to read through, even
/// when nothing else happened (`{"clicked":true,…}` was 80 characters of quoting; `clicked:
/// true` under `Tab 7` is the same in half). Their fields stay in `structuredContent`.
const ACTIONS: [&str; 12] = [
    "browser_click",
    "browser_type",
    "browser_hover",
    "browser_select_option",
    "browser_press_key",
    "browser_drag",
    "browser_drop",
    "browser_fill_form",
    "browser_file_upload",
    "browser_handle_dialog",
    "browser_resize",
    "browser_emulate_media",
];

/// ` "Name" [ref=e4]`: how an answer's line names an element, each part when it is known.
fn name_and_ref(element: &Value) -> String {
    let mut said = String::new();
    if let Some(name) = element["name"].as_str() {
        said.push_str(&format!(" {name:?}"));
    }
    if let Some(at) = element["ref"].as_str() {
        said.push_str(&format!(" [ref={at}]"));
    }
    said
}

/// What the part a header opened or a tab selected shows (`part: {text, ref?}`), as its line
/// goes on: `, showing "Weight 2 kg" [ref=e9]`; nothing without one.
fn showing(part: &Value) -> String {
    match part["text"].as_str() {
        Some(text) => format!(
            ", showing {text:?}{}",
            name_and_ref(&json!({"ref": part["ref"]}))
        ),
        None => String::new(),
    }
}

/// What a part the action put up offers to press (`controls`, `controlCount`), as its line
/// goes on: ` with links: "Sort ascending" [ref=e513], "Sort descending" [ref=e515]` when all
/// are of one kind, ` with: button "Open" [ref=e9], link "Pin" [ref=e10]` when not, so the
/// model presses one next without reading the page again.
fn controls_held(shown: &Value) -> String {
    let Some(controls) = shown["controls"]
        .as_array()
        .filter(|controls| !controls.is_empty())
    else {
        return String::new();
    };
    let kind_of = |control: &Value| control["kind"].as_str().unwrap_or("button").to_owned();
    let one_kind = controls
        .iter()
        .all(|control| kind_of(control) == kind_of(&controls[0]));
    let said: Vec<String> = controls
        .iter()
        .map(|control| {
            let named = name_and_ref(control).trim_start().to_owned();
            if one_kind {
                named
            } else {
                format!("{} {named}", kind_of(control))
            }
        })
        .collect();
    let joint = if shown["fields"]
        .as_array()
        .is_some_and(|fields| !fields.is_empty())
    {
        ";"
    } else {
        " with"
    };
    let mut text = if one_kind {
        format!("{joint} {}s: {}", kind_of(&controls[0]), said.join(", "))
    } else {
        format!("{joint}: {}", said.join(", "))
    };
    if let Some(count) = shown["controlCount"].as_u64() {
        text.push_str(&format!(", … ({count} in all)"));
    }
    text
}

/// The fields a part the action put up holds (`fields`, `fieldCount`), as its line goes on:
/// ` with fields: textbox [ref=e50] [active]: "New Tiddler"; textbox "tag name" [ref=e51]`, as
/// a snapshot's lines name them, so the model types into them next without reading the page
/// again (TiddlyWiki's editor said only its buttons' words).
fn fields_held(shown: &Value) -> String {
    let Some(fields) = shown["fields"]
        .as_array()
        .filter(|fields| !fields.is_empty())
    else {
        return String::new();
    };
    let said: Vec<String> = fields
        .iter()
        .map(|field| {
            let mut line = format!(
                "{}{}",
                field["kind"].as_str().unwrap_or("textbox"),
                name_and_ref(field)
            );
            if field["checked"] == true {
                line.push_str(" [checked]");
            }
            if field["focused"] == true {
                line.push_str(" [active]");
            }
            if let Some(value) = field["value"].as_str() {
                line.push_str(&format!(": {value:?}"));
            }
            line
        })
        .collect();
    let mut text = format!(" with fields: {}", said.join("; "));
    if let Some(count) = shown["fieldCount"].as_u64() {
        text.push_str(&format!("; … ({count} fields)"));
    }
    text
}

/// The lines of an action's answer: a header, what changed, downloads, then each other field
/// as `key: value`.
fn field_lines(map: &Map<String, Value>, skip: &[&str]) -> Vec<String> {
    let mut lines = Vec::new();
    let head = header(&Value::Object(map.clone()));
    if !head.is_empty() {
        lines.push(head);
    }
    // What happened to the page first, then the action's own fields. Where a click or a hover
    // landed (`x`, `y`) stays in the fields; as lines it is noise a model reads on every one.
    let clicked = map.contains_key("clicked") || map.contains_key("hovered");
    let ordered = WHAT_HAPPENED
        .iter()
        .filter_map(|key| map.get_key_value(*key))
        .chain(
            map.iter()
                .filter(|(key, _)| !WHAT_HAPPENED.contains(&key.as_str())),
        );
    for (key, value) in ordered {
        // `submitted: false` is what typing without `submit` answers, and after an Enter the
        // browser's check stopped, "Form not sent" says it: as a line it reads as a failure.
        if skip.contains(&key.as_str())
            || ["tabId", "url", "title"].contains(&key.as_str())
            || (clicked && ["x", "y"].contains(&key.as_str()))
            || (key == "submitted" && *value == Value::Bool(false))
        {
            continue;
        }
        match key.as_str() {
            "pageChanged" => {
                lines.push(format!("Page changed: {}", header(value)));
            }
            // A new page at the same address: what it shows now is the server's answer.
            "loadedAgain" => {
                lines.push(format!(
                    "Page loaded again (same address): {}",
                    header(value)
                ));
            }
            "console" => lines.push(console_gained(value)),
            // A page still busy is worth a line (one that settled is left out, `render`).
            "settled" => lines.push(format!(
                "Still loading after {} ms: {} in flight",
                value["waitedMs"],
                counted(value["inFlight"].as_u64().unwrap_or(0), "request")
            )),
            "downloads" => lines.extend(download_lines(value)),
            "formBlocked" => {
                lines.push(
                    "Form not sent: the browser's own check stopped it (a person sees this \
                     message over the field):"
                        .to_owned(),
                );
                lines.extend(field_rows(value));
            }
            "markedInvalid" => {
                lines.push("Fields the page now marks invalid:".to_owned());
                lines.extend(field_rows(value));
            }
            "pageSays" => lines.extend(value.as_array().into_iter().flatten().map(|row| {
                format!(
                    "Page says ({}): {}",
                    row["role"].as_str().unwrap_or("status"),
                    row["text"].as_str().unwrap_or("")
                )
            })),
            // Controls whose state the action changed: a checkbox now checked, a quantity
            // from 1 to 2, a field a script filled.
            "changed" => {
                let rows: Vec<&Value> = value.as_array().into_iter().flatten().collect();
                let control = |row: &Value| {
                    format!(
                        "{}{}",
                        row["kind"].as_str().unwrap_or("field"),
                        name_and_ref(&json!({
                            "name": row["field"].as_str().filter(|name| !name.is_empty()),
                            "ref": row["ref"],
                        }))
                    )
                };
                // Controls that came to the same state, one line for each state: a page turn
                // enables "Previous" and "First" and disables "Next" and "Last" at once, and a
                // select-all box checks every row's, lines that said one thing each. Enabled
                // and disabled always read so; another state when two or more share it.
                let state = |row: &Value| -> Option<String> {
                    row["from"]
                        .is_null()
                        .then(|| row["to"].as_str().map(str::to_owned))
                        .flatten()
                };
                let shared = |to: &str| {
                    matches!(to, "enabled" | "disabled")
                        || rows
                            .iter()
                            .filter(|row| state(row).as_deref() == Some(to))
                            .count()
                            > 1
                };
                let mut groups: Vec<(String, Vec<String>)> = Vec::new();
                for row in &rows {
                    match state(row) {
                        Some(to) if shared(&to) => {
                            match groups.iter_mut().find(|(state, _)| *state == to) {
                                Some((_, named)) => named.push(control(row)),
                                None => groups.push((to, vec![control(row)])),
                            }
                        }
                        // (A tab selected says the panel it shows: its words, ref and fields.)
                        Some(to) => lines.push(format!(
                            "Changed: {}: now {to}{}{}",
                            control(row),
                            showing(&row["part"]),
                            fields_held(row)
                        )),
                        None => lines.push(format!(
                            "Changed: {}: {:?} → {:?}",
                            control(row),
                            row["from"].as_str().unwrap_or(""),
                            row["to"].as_str().unwrap_or("")
                        )),
                    }
                }
                for (to, named) in groups {
                    lines.push(format!("Now {to}: {}", named.join(", ")));
                }
            }
            "changedMore" => lines.push(format!(
                "Changed: {}",
                counted(value.as_u64().unwrap_or(0), "more control")
            )),
            // A dialog, menu, list or popover the action showed (where the model acts next)
            // or hid (done with).
            "opened" | "closed" => {
                lines.extend(value.as_array().into_iter().flatten().map(|shown| {
                    let verb = if key == "opened" { "Opened" } else { "Closed" };
                    let mut line = format!(
                        "{verb}: {}{}",
                        shown["role"].as_str().unwrap_or("dialog"),
                        name_and_ref(shown)
                    );
                    if shown["modal"] == true {
                        line.push_str(
                            " (modal: the page behind it takes no clicks until it closes)",
                        );
                    }
                    // What a menu or list box just shown offers, its first items by name.
                    if let Some(items) = shown["items"].as_array().filter(|items| !items.is_empty())
                    {
                        let names: Vec<String> = items
                            .iter()
                            .filter_map(Value::as_str)
                            .map(|name| format!("{name:?}"))
                            .collect();
                        let count = shown["count"].as_u64().unwrap_or(items.len() as u64);
                        line.push_str(&format!(": {}", names.join(", ")));
                        if count > items.len() as u64 {
                            line.push_str(&format!(", … ({count} items)"));
                        }
                    }
                    // What a dialog just shown says and offers: its words, fields and buttons.
                    if let Some(text) = shown["text"].as_str() {
                        line.push_str(&format!(": {text:?}"));
                    }
                    line.push_str(&fields_held(shown));
                    if let Some(buttons) = shown["buttons"]
                        .as_array()
                        .filter(|buttons| !buttons.is_empty())
                    {
                        let said: Vec<String> = buttons
                            .iter()
                            .map(|button| name_and_ref(button).trim_start().to_owned())
                            .collect();
                        let joint = if shown["fields"].is_array() {
                            "; buttons"
                        } else {
                            " with buttons"
                        };
                        line.push_str(&format!("{joint}: {}", said.join(", ")));
                    }
                    line
                }))
            }
            // What the action put up over the page with no role to say what it is (a toast,
            // a tour, a site's own modal).
            "appeared" => lines.extend(value.as_array().into_iter().flatten().map(|shown| {
                // (Its words, when any control does not say them all.)
                let words = match shown["text"].as_str() {
                    Some(text) if !text.is_empty() => format!(": {text:?}"),
                    _ => String::new(),
                };
                format!(
                    "Appeared over the page{words}{}{}{}",
                    name_and_ref(&json!({"ref": shown["ref"]})),
                    fields_held(shown),
                    controls_held(shown)
                )
            })),
            // What the action put in the page's flow or wrote there ("Ordered 1 large pizza"
            // under the button): what a person sees the click do, which `clicked: true` is not.
            "shows" => lines.extend(value.as_array().into_iter().flatten().map(|shown| {
                // A drawing with no words (a chart a click drew): its kind, name, ref and size.
                if let Some(kind) = shown["drawing"]["kind"].as_str() {
                    return format!(
                        "Page now shows: {kind}{} ({} px)",
                        name_and_ref(shown),
                        shown["drawing"]["size"].as_str().unwrap_or("?")
                    );
                }
                format!(
                    "Page now shows: {:?}{}{}",
                    shown["text"].as_str().unwrap_or(""),
                    name_and_ref(&json!({"ref": shown["ref"]})),
                    fields_held(shown)
                )
            })),
            // A list or table the action grew or shrank (a filter typed, "Load more"): how
            // many rows or items it shows now and before, and the first few.
            "listed" => lines.extend(value.as_array().into_iter().flatten().map(|list| {
                let items = list["items"].as_str().unwrap_or("items");
                let now = list["now"].as_u64().unwrap_or(0);
                let shown: Vec<String> = list["first"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .map(|one| format!("{one:?}"))
                    .collect();
                // The first few, and whether more follow.
                let first = format!(
                    "{}{}",
                    shown.join(", "),
                    if now > shown.len() as u64 {
                        ", …"
                    } else {
                        ""
                    }
                );
                let holder = format!(
                    "{}{}",
                    if list["kind"] == "table" {
                        "Table"
                    } else {
                        "List"
                    },
                    name_and_ref(&json!({"ref": list["ref"]}))
                );
                // The same rows in another order: the first few as they stand now.
                if list["reordered"] == true {
                    return format!("{holder} reordered ({now} {items}), now: {first}");
                }
                let mut line = format!(
                    "{holder} now shows {} ({} before)",
                    if now == 0 {
                        format!("no {items}")
                    } else if now == 1 {
                        format!("1 {}", items.trim_end_matches('s'))
                    } else {
                        format!("{now} {items}")
                    },
                    list["before"].as_u64().unwrap_or(0)
                );
                if !shown.is_empty() {
                    line.push_str(&format!(": {first}"));
                }
                line
            })),
            // What the action took off the page for good (the row a "Delete" removed): that
            // it went, which `clicked: true` does not say.
            "gone" => lines.extend(value.as_array().into_iter().flatten().map(|went| {
                format!(
                    "Page no longer shows: {:?}",
                    went["text"].as_str().unwrap_or("")
                )
            })),
            // A part of what the action did that the page threw on while it was read (its
            // other parts are said): the model is told to look rather than to believe that
            // nothing of the kind happened.
            "unread" => {
                let parts: Vec<String> = value
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|part| {
                        format!(
                            "{} ({})",
                            part["what"].as_str().unwrap_or("a part"),
                            part["error"].as_str().unwrap_or("an error")
                        )
                    })
                    .collect();
                if !parts.is_empty() {
                    lines.push(format!(
                        "Not read, the page threw while it was read: {}; a snapshot shows the \
                         page as it is",
                        parts.join("; ")
                    ));
                }
            }
            // A part of the page shown or hidden by its header (an accordion, a <details>).
            "toggled" => {
                // What the part it opened shows (a picker, a panel), when it controls one.
                let line = format!(
                    "{}:{}{}{}",
                    if value["expanded"] == true {
                        "Expanded"
                    } else {
                        "Collapsed"
                    },
                    name_and_ref(value),
                    showing(&value["part"]),
                    fields_held(value)
                );
                lines.push(line);
            }
            // The action opened the page's file chooser, which the browser did not show.
            "fileChooser" => {
                let mut input = value["element"]
                    .as_str()
                    .unwrap_or("its file input")
                    .to_owned();
                input.push_str(&name_and_ref(value));
                let mut takes = vec![if value["multiple"] == true {
                    "several files"
                } else {
                    "one file"
                }
                .to_owned()];
                if let Some(accept) = value["accept"].as_str() {
                    takes.push(format!("accepts {accept}"));
                }
                lines.push(format!(
                    "File chooser open for {input} ({}): browser_file_upload with paths gives \
                     it its files (the browser shows the person no dialog for it)",
                    takes.join("; ")
                ));
            }
            // The page closed its own tab once done (a pop-up that saved).
            "tabClosed" => lines.push(match value.get("current") {
                Some(current) => format!(
                    "The page closed its tab (Tab {}) when done; the current tab is now {}",
                    value["tabId"],
                    header(current)
                ),
                None => format!(
                    "The page closed its tab (Tab {}) when done; this session has no current \
                     tab now (browser_tabs lists the open ones)",
                    value["tabId"]
                ),
            }),
            "tabsOpened" => lines.extend(value.as_array().into_iter().flatten().map(|tab| {
                format!(
                    "Opened a new tab: {} (the current tab stays this one; browser_tabs with \
                     action \"select\" and this tabId works in it)",
                    header(tab)
                )
            })),
            // A navigation answered before its load event (one image or script holding it).
            "stillLoading" => lines.push(format!(
                "Not fully loaded: no load event {} ms after the page was parsed, {} still \
                 in flight; the page is shown as far as it came (browser_wait_for waits for \
                 text that is still to come)",
                value["waitedMs"],
                counted(value["inFlight"].as_u64().unwrap_or(0), "request")
            )),
            "httpError" => lines.push(format!(
                "HTTP {} {}: the server answered with an error, so the page shows that error, \
                 not the content asked for",
                value["status"],
                value["statusText"].as_str().unwrap_or("")
            )),
            "dialog" => lines.push(dialog_line(value)),
            // browser_fill_form: a field a line, its value as read back.
            "filled" => {
                let rows = value.as_array().map(Vec::as_slice).unwrap_or_default();
                lines.push(format!("Filled {}:", counted(rows.len() as u64, "field")));
                lines.extend(rows.iter().map(|row| {
                    // A drop-down's option by the words a person chose, its value beside them
                    // (`"Japan" (value "JP")`, as browser_select_option says it; `"JP"` alone
                    // read as if the wrong option were chosen).
                    let value = match row["label"].as_str() {
                        Some(label) if row["value"].as_str() != Some(label) => {
                            format!("{label:?} (value {})", row["value"])
                        }
                        _ => row["value"].to_string(),
                    };
                    format!(
                        "- {:?} ({}): {value}",
                        row["name"].as_str().unwrap_or(""),
                        row["type"].as_str().unwrap_or("field"),
                    )
                }));
            }
            // browser_file_upload: each file by its name, size and type.
            "uploaded" if value.is_array() => {
                let files: Vec<String> = value
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|file| {
                        format!(
                            "{} ({} bytes, {})",
                            file["name"].as_str().unwrap_or("?"),
                            file["size"],
                            file["type"]
                                .as_str()
                                .filter(|t| !t.is_empty())
                                .unwrap_or("no type")
                        )
                    })
                    .collect();
                lines.push(format!(
                    "Uploaded {}: {}",
                    counted(files.len() as u64, "file"),
                    files.join(", ")
                ));
            }
            // browser_drop: what the drag carried.
            "dropped" if value.is_object() => {
                let kinds: Vec<&str> = value["types"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .collect();
                lines.push(format!(
                    "dropped: {}, data types {}",
                    counted(value["files"].as_u64().unwrap_or(0), "file"),
                    kinds.join(", ")
                ));
            }
            // browser_emulate_media: each feature and what it now reads.
            "emulated" if value.is_object() => {
                let features: Vec<String> = value
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(feature, set)| format!("{feature} {}", plain(set)))
                    .collect();
                lines.push(format!("emulated: {}", features.join(", ")));
            }
            // browser_select_option: each option chosen, by its label and its value.
            "selected" if map.get("labels").is_some_and(Value::is_array) => {
                let labels = map["labels"]
                    .as_array()
                    .map(Vec::as_slice)
                    .unwrap_or_default();
                let values = value.as_array().map(Vec::as_slice).unwrap_or_default();
                let chosen: Vec<String> = values
                    .iter()
                    .enumerate()
                    .map(|(i, v)| match labels.get(i).and_then(Value::as_str) {
                        Some(label) if Some(label) != v.as_str() => {
                            format!("{label:?} (value {v})")
                        }
                        _ => v.to_string(),
                    })
                    .collect();
                lines.push(if chosen.is_empty() {
                    "selected: nothing".to_owned()
                } else {
                    format!("selected: {}", chosen.join(", "))
                });
                lines.extend(set_back_line(map));
            }
            "labels" if map.get("selected").is_some_and(Value::is_array) => {}
            // The page's own handlers set the drop-down to something else once it was chosen
            // (Trac's "And" filter adds a row for the field and shows "field…" again).
            "pageSetItTo" => {}
            // The extension's note on an open dialog names its own method (handleDialog) for
            // every client; the dialog's line above says what to call here.
            "note" if map.contains_key("dialog") => {}
            "note" | "snapshotNote" => lines.push(format!("Note: {}", plain(value))),
            _ => lines.push(format!("{key}: {}", plain(value))),
        }
    }
    lines
}

/// The line saying what a page's own handlers set a drop-down to once it was chosen
/// (`pageSetItTo`), said after the `selected` line.
fn set_back_line(map: &Map<String, Value>) -> Option<String> {
    let shown: Vec<String> = map
        .get("pageSetItTo")?
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(|label| format!("{label:?}"))
        .collect();
    Some(format!(
        "then the page set it to {}",
        if shown.is_empty() {
            "nothing".to_owned()
        } else {
            shown.join(", ")
        }
    ))
}

/// A JavaScript dialog the action opened, which holds the page until it is answered.
fn dialog_line(dialog: &Value) -> String {
    let kind = dialog["type"].as_str().unwrap_or("JavaScript");
    let message = dialog["message"].as_str().unwrap_or("");
    let how = match (kind, dialog["defaultPrompt"].as_str()) {
        ("prompt", Some(given)) if !given.is_empty() => {
            format!("accept true with promptText (the dialog suggests {given:?}), or accept false")
        }
        ("prompt", _) => "accept true with promptText, or accept false".to_owned(),
        ("alert", _) => "accept true".to_owned(),
        _ => "accept true or false".to_owned(),
    };
    format!(
        "Dialog open: {kind} {message:?}. The page waits for an answer before doing anything \
         else: browser_handle_dialog with {how}."
    )
}

/// `- "Email" [ref=e2]: Please fill out this field.`: one line per field the page or the
/// browser found wrong (action-evidence.js), with its ref when it has one to act on.
fn field_rows(fields: &Value) -> Vec<String> {
    fields
        .as_array()
        .into_iter()
        .flatten()
        .map(|row| {
            let mut line = format!("- \"{}\"", row["field"].as_str().unwrap_or(""));
            if let Some(reference) = row["ref"].as_str() {
                line.push_str(&format!(" [ref={reference}]"));
            }
            if let Some(message) = row["message"].as_str().filter(|m| !m.is_empty()) {
                line.push_str(&format!(": {message}"));
            }
            line
        })
        .collect()
}

/// One line per download of an action's answer, once the bridge saved them (files.rs).
fn download_lines(downloads: &Value) -> Vec<String> {
    let Some(rows) = downloads.as_array() else {
        return Vec::new();
    };
    rows.iter()
        .map(|row| {
            let name = row["filename"].as_str().unwrap_or("download");
            if let Some(uri) = row["carried"].as_str() {
                return format!(
                    "Downloaded {name} ({} bytes, {}): carried back in this result as the \
                     resource {uri} (the relay keeps no copy)",
                    row["bytes"],
                    row["mimeType"]
                        .as_str()
                        .unwrap_or("application/octet-stream")
                );
            }
            match (row["saved"].as_str(), row["error"].as_str()) {
                (Some(path), _) => format!(
                    "Downloaded {name}: saved as {path} ({} bytes, {}) on the bridge's machine",
                    row["bytes"],
                    row["mimeType"]
                        .as_str()
                        .unwrap_or("application/octet-stream")
                ),
                (None, Some(error)) => format!("Download {name} failed: {error}"),
                (None, None) => format!(
                    "Download {name}: {} (call browser_downloads to save it once complete)",
                    row["state"].as_str().unwrap_or("in progress")
                ),
            }
        })
        .collect()
}

/// `1 request`, `3 requests`: a count as a person writes it (`noun` takes an `s` for more
/// than one, or none).
fn counted(n: u64, noun: &str) -> String {
    format!("{n} {noun}{}", if n == 1 { "" } else { "s" })
}

/// "Console: 1 new error, 2 new warnings …": what an action's page logged (its `console`).
fn console_gained(value: &Value) -> String {
    let count = |key: &str, one: &str| {
        let n = value[key].as_u64().unwrap_or(0);
        (n > 0).then(|| counted(n, &format!("new {one}")))
    };
    let said: Vec<String> = [count("errors", "error"), count("warnings", "warning")]
        .into_iter()
        .flatten()
        .collect();
    format!(
        "Console: {} (browser_console_messages lists them)",
        said.join(", ")
    )
}

/// An answer that carries an outline (`snapshot`): its fields, a blank line, the outline.
fn with_outline(value: &Value, outline: &str) -> Rendered {
    let map = value.as_object().cloned().unwrap_or_default();
    let mut text = field_lines(&map, &["snapshot"]).join("\n");
    if !text.is_empty() {
        text.push_str("\n\n");
    }
    text.push_str(outline);
    Rendered::page(text, without(value, &["snapshot"]))
}

/// A tool's answer as text and structured fields.
pub(crate) fn render(tool: &str, value: &Value) -> Rendered {
    let Some(map) = value.as_object() else {
        return Rendered::json(value);
    };
    // An action's page that settled says nothing a model can use (a page still loading does,
    // and keeps its `settled`): left out of the text and the fields alike, since some hosts
    // show their model the fields.
    if map
        .get("settled")
        .is_some_and(|settled| settled["quiet"] == true)
    {
        return render(tool, &without(value, &["settled"]));
    }
    // A navigation's new page is its `url` and `title` already.
    if map.get("pageChanged").is_some_and(|page| {
        map.contains_key("url")
            && page.get("url") == map.get("url")
            && page.get("title") == map.get("title")
    }) {
        return render(tool, &without(value, &["pageChanged"]));
    }
    if let Some(outline) = map.get("snapshot").and_then(Value::as_str) {
        return with_outline(value, outline);
    }
    match tool {
        "browser_evaluate" => {
            // The string is the text; `structuredContent` keeps the other fields, so a long
            // value is not carried twice (once cut into parts, once whole).
            if let Some(text) = map.get("value").and_then(Value::as_str) {
                return Rendered::page(text.to_owned(), without(value, &["value"]));
            }
            // Any other value reads as itself, as a script would print it: `2`, `[1,2]`,
            // `undefined`, `NaN`. `structuredContent` keeps the value with its type: it says
            // all the text does, so hosts get both, as for any short answer.
            if let Some(evaluated) = map.get("value") {
                let text = match map.get("unserializableValue").and_then(Value::as_str) {
                    Some(special) => special.to_owned(),
                    None if map.get("type").and_then(Value::as_str) == Some("undefined") => {
                        "undefined".to_owned()
                    }
                    None => evaluated.to_string(),
                };
                return short(text, value);
            }
        }
        "browser_tabs" if map.get("tabs").is_some_and(Value::is_array) => {
            return tabs(value);
        }
        // `close`: the tab is gone; `new` and `select`: the tab this session works in now.
        "browser_tabs" if map.get("closed") == Some(&Value::Bool(true)) => {
            let mut text = format!("Closed tab {}", map["tabId"]);
            match map.get("current") {
                Some(Value::Object(tab)) => text.push_str(&format!(
                    "\nCurrent tab: {}",
                    header(&Value::Object(tab.clone()))
                )),
                Some(Value::Null) => text.push_str(
                    "\nNo current tab: browser_navigate opens one, or browser_tabs \"select\" \
                     takes one browser_tabs lists",
                ),
                _ => {}
            }
            return short(text, value);
        }
        "browser_tabs" if map.contains_key("url") => {
            let lines = field_lines(map, &[]);
            return short(format!("Current tab: {}", lines.join("\n")), value);
        }
        "browser_wait_for" => {
            if let Some(said) = waited(value) {
                return short(said, value);
            }
        }
        "browser_close" if map.get("closed").is_some_and(Value::is_array) => {
            return short(closed_tabs(value), value);
        }
        "browser_console_messages" if map.get("messages").is_some_and(Value::is_array) => {
            return console(value);
        }
        "browser_network_requests" => {
            if let Some(rows) = map.get("requests").and_then(Value::as_array) {
                return requests(value, rows);
            }
            if map.get("request").is_some_and(Value::is_object) {
                return request_details(value, None);
            }
            // An extension from before request details: the body alone.
            if let Some(body) = map.get("body").and_then(Value::as_str) {
                let mut lines = field_lines(map, &["body"]);
                lines.push(String::new());
                lines.push(body.to_owned());
                return Rendered::page(lines.join("\n"), without(value, &["body"]));
            }
        }
        _ => {}
    }
    // What changed, or where a navigation arrived: lines under the page's header, the title
    // as the page writes it, rather than JSON with its quotes escaped (a navigation that
    // logged to the console read so already; one that did not read as JSON).
    let arrived = tool.starts_with("browser_navigate") && map.contains_key("url");
    if arrived
        || ACTIONS.contains(&tool)
        || WHAT_HAPPENED
            .iter()
            .any(|key| *key != "settled" && map.contains_key(*key))
    {
        return Rendered {
            text: field_lines(map, &[]).join("\n"),
            structured: Some(value.clone()),
            page_text: false,
        };
    }
    Rendered::json(value)
}

/// A short answer that reads as a sentence; its fields stay in `structuredContent`.
fn short(text: String, value: &Value) -> Rendered {
    Rendered {
        text,
        structured: Some(value.clone()),
        page_text: false,
    }
}

/// `browser_wait_for`: what was waited for, on which tab, and how long, as Playwright MCP's
/// "Waited for …" says it (`{"found":true,"tabId":7,…}` read as JSON before).
fn waited(value: &Value) -> Option<String> {
    let tab = &value["tabId"];
    if let Some(seconds) = value.get("waited") {
        return Some(format!("Tab {tab}: waited {seconds} s"));
    }
    if value["found"] != true {
        return None;
    }
    let said: Vec<String> = [("text", "is on the page"), ("textGone", "is not")]
        .iter()
        .filter_map(|(key, state)| Some(format!("\"{}\" {state}", value[*key].as_str()?)))
        .collect();
    Some(format!(
        "Tab {tab}: {} (waited {} ms)",
        said.join(", and "),
        value["waitedMs"]
    ))
}

/// `browser_close`: which tabs were closed, and which were left open and why.
fn closed_tabs(value: &Value) -> String {
    let ids = |key: &str| -> Vec<String> {
        value[key]
            .as_array()
            .into_iter()
            .flatten()
            .map(Value::to_string)
            .collect()
    };
    let closed = ids("closed");
    let mut lines = vec![if closed.is_empty() {
        "Closed no tab: this session opened none that is still open".to_owned()
    } else {
        format!(
            "Closed {}: {}",
            counted(closed.len() as u64, "tab"),
            closed.join(", ")
        )
    }];
    let left = ids("leftOpen");
    if !left.is_empty() {
        lines.push(format!("Left open: {}", left.join(", ")));
    }
    if let Some(note) = value["note"].as_str() {
        lines.push(format!("Note: {note}"));
    }
    lines.join("\n")
}

fn tabs(value: &Value) -> Rendered {
    let rows = value["tabs"].as_array().cloned().unwrap_or_default();
    let mut lines = vec![format!(
        "{}; this session's current tab: {}",
        counted(rows.len() as u64, "tab"),
        match &value["currentTabId"] {
            Value::Null => "none".to_owned(),
            id => id.to_string(),
        }
    )];
    // Each under its place in the list, which browser_tabs' "index" takes, as in Playwright MCP.
    for (index, row) in rows.iter().enumerate() {
        let mut line = format!("- {index}: {}", header(row));
        let mut marks = Vec::new();
        if row["current"] == true {
            marks.push("current".to_owned());
        }
        if row["active"] == true {
            marks.push("active in its window".to_owned());
        }
        if let Some(owner) = row["owner"].as_str() {
            marks.push(format!("used by {owner}"));
        }
        if !marks.is_empty() {
            line.push_str(&format!(" ({})", marks.join(", ")));
        }
        lines.push(line);
    }
    // Tabs' titles and addresses are short and the fields hold all the text says: a host
    // that shows its model the fields loses nothing.
    Rendered {
        text: lines.join("\n"),
        structured: Some(value.clone()),
        page_text: false,
    }
}

fn console(value: &Value) -> Rendered {
    let rows = value["messages"].as_array().cloned().unwrap_or_default();
    let mut head = header(value);
    head.push_str(&format!(
        "{}{}",
        if head.is_empty() { "" } else { " · " },
        counted(rows.len() as u64, "console message")
    ));
    let mut lines = vec![head];
    if let Some(note) = value["note"].as_str() {
        lines.push(format!("Note: {note}"));
    }
    for row in &rows {
        let mut line = format!(
            "[{}] {}",
            row["type"].as_str().unwrap_or("log"),
            row["text"].as_str().unwrap_or_default()
        );
        // An exception's stack names where it was thrown already.
        let has_stack = row["text"]
            .as_str()
            .is_some_and(|text| text.contains("\n    at "));
        if let (Some(url), false) = (row["url"].as_str(), has_stack) {
            line.push_str(&format!(" ({url}"));
            if let Some(n) = row["line"].as_u64() {
                line.push_str(&format!(":{n}"));
            }
            line.push(')');
        }
        lines.push(line);
    }
    Rendered::page(lines.join("\n"), value.clone())
}

fn requests(value: &Value, rows: &[Value]) -> Rendered {
    let mut head = header(value);
    head.push_str(&format!(
        "{}{}",
        if head.is_empty() { "" } else { " · " },
        counted(rows.len() as u64, "request")
    ));
    let mut lines = vec![head];
    if let Some(note) = value["note"].as_str() {
        lines.push(format!("Note: {note}"));
    }
    lines.extend(rows.iter().map(request_line));
    Rendered::page(lines.join("\n"), value.clone())
}

/// `3. GET https://… → 200 OK (Fetch, 12 ms)`: one request as the list shows it, numbered as
/// Playwright MCP numbers the page's requests for `browser_network_request {index}`; one of an
/// earlier page (or from an extension that does not number them) names its `requestId`
/// instead.
fn request_line(row: &Value) -> String {
    let status = match (&row["status"], row["failure"].as_str()) {
        (_, Some(failure)) => format!("failed: {failure}"),
        // A worker's own script: its answer goes to the worker, never to the page.
        (Value::Null, None) if row["worker"] == true => {
            "fetched for a worker, which alone gets its answer".to_owned()
        }
        (Value::Null, None) => "pending".to_owned(),
        (status, None) => format!(
            "{status} {}",
            row["statusText"].as_str().unwrap_or_default()
        )
        .trim_end()
        .to_owned(),
    };
    let mut details = vec![row["type"].as_str().unwrap_or("Other").to_owned()];
    if let Some(ms) = row["durationMs"].as_f64() {
        details.push(format!("{} ms", ms.round()));
    }
    let number = row["index"].as_u64();
    if let (Some(id), None) = (row["requestId"].as_str(), number) {
        details.push(format!("requestId {id}"));
    }
    format!(
        "{}{} {} → {status} ({})",
        number.map(|n| format!("{n}. ")).unwrap_or_default(),
        row["method"].as_str().unwrap_or("GET"),
        row["url"].as_str().unwrap_or_default(),
        details.join(", ")
    )
}

/// One request in full, as Playwright MCP's `browser_network_request` shows it: its line,
/// then each part under a heading: request headers and body, response headers and body (or
/// why there is none). With `part`, that part alone under the line.
pub(crate) fn request_details(value: &Value, part: Option<RequestPart>) -> Rendered {
    let request = &value["request"];
    let mut head = header(&json!({"tabId": value["tabId"]}));
    if !head.is_empty() {
        head.push_str(" · ");
    }
    head.push_str(&request_line(request));
    let mut lines = vec![head];
    if let Some(note) = value["note"].as_str() {
        lines.push(format!("Note: {note}"));
    }
    let wanted = |this: RequestPart| part.is_none_or(|part| part == this);
    // A part asked for alone is said even when empty, so the answer is never only the line.
    let alone = part.is_some();
    let headers = |lines: &mut Vec<String>, title: &str, headers: &Value| match headers
        .as_object()
        .filter(|map| !map.is_empty())
    {
        Some(map) => {
            lines.push(format!("{title}:"));
            lines.extend(
                map.iter()
                    .map(|(name, v)| format!("  {name}: {}", plain(v))),
            );
        }
        None if alone => lines.push(format!("{title}: none")),
        None => {}
    };
    if wanted(RequestPart::RequestHeaders) {
        headers(&mut lines, "Request headers", &request["headers"]);
    }
    if wanted(RequestPart::RequestBody) {
        match request["body"].as_str() {
            Some(body) => {
                lines.push("Request body:".into());
                lines.push(body.to_owned());
            }
            None if alone => lines.push("Request body: none".into()),
            None => {}
        }
    }
    if wanted(RequestPart::ResponseHeaders) {
        let why = if request["failure"].is_string() {
            "none (the request failed)"
        } else {
            "none (no response yet)"
        };
        match &value["responseHeaders"] {
            Value::Null if alone => lines.push(format!("Response headers: {why}")),
            response => headers(&mut lines, "Response headers", response),
        }
    }
    if wanted(RequestPart::ResponseBody) {
        match (value["body"].as_str(), value["bodyUnavailable"].as_str()) {
            (Some(body), _) if value["base64Encoded"] == true => {
                lines.push("Response body (base64):".into());
                lines.push(body.to_owned());
            }
            (Some(body), _) => {
                lines.push("Response body:".into());
                lines.push(body.to_owned());
            }
            (None, Some(why)) => lines.push(format!("Response body: none ({why})")),
            (None, None) => {}
        }
    }
    Rendered::page(lines.join("\n"), without(value, &["body"]))
}

/// `filter` of `browser_network_requests` as a regular expression (Rust syntax, linear in the
/// URL's length whatever the pattern, and bounded in size).
pub(crate) fn url_filter(pattern: &str) -> Result<regex::Regex, String> {
    if pattern.is_empty() {
        return Err("\"filter\" is empty".into());
    }
    regex::RegexBuilder::new(pattern)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| format!("\"filter\" is not a valid regular expression: {e}"))
}

/// Playwright MCP's selection for `browser_network_requests`: the page now shown (the extension
/// counts earlier pages' requests in `earlier`, which no argument brings back, so the model is not
/// told of them: a note it cannot act on is only cost); without `static`, a request that succeeded
/// for the page's own files (the document, its scripts, styles, images, fonts: anything but
/// fetch, XHR and their kin) and every CORS preflight (Chrome's, not the page's: the request
/// it preceded shows how it ended) are left out and counted in a note, so a model looking for
/// the page's API calls reads those and the failures; `filter` keeps the URLs it matches.
pub(crate) fn select_requests(
    value: &mut Value,
    include_static: bool,
    filter: Option<&regex::Regex>,
) {
    let Some(rows) = value.get_mut("requests").and_then(Value::as_array_mut) else {
        return;
    };
    let mut hidden = 0;
    let mut preflights = 0;
    let mut unmatched = 0;
    rows.retain(|row| {
        if !include_static && row["preflight"] == true {
            preflights += 1;
            return false;
        }
        if !include_static && is_static_success(row) {
            hidden += 1;
            return false;
        }
        let keep = filter.is_none_or(|f| f.is_match(row["url"].as_str().unwrap_or_default()));
        unmatched += usize::from(!keep);
        keep
    });
    let mut notes = Vec::new();
    let mut held_back = Vec::new();
    if hidden > 0 {
        // Playwright MCP's word for them, which the `static` argument's description explains.
        held_back.push(counted(hidden as u64, "static request"));
    }
    if preflights > 0 {
        held_back.push(counted(preflights as u64, "CORS preflight"));
    }
    if !held_back.is_empty() {
        notes.push(format!(
            "{} not shown; \"static\": true lists them",
            held_back.join(" and ")
        ));
    }
    if let Some(filter) = filter.filter(|_| unmatched > 0) {
        notes.push(format!(
            "{} whose URL does not match {:?} not shown",
            counted(unmatched as u64, "request"),
            filter.as_str()
        ));
    }
    add_notes(value, notes);
}

/// The extension's own `note` (e.g. what its ring dropped), then `more`, as one `note`: what a
/// list left out, each with how to see it.
fn add_notes(value: &mut Value, more: Vec<String>) {
    if more.is_empty() {
        return;
    }
    let mut notes: Vec<String> = value["note"]
        .as_str()
        .map(str::to_owned)
        .into_iter()
        .collect();
    notes.extend(more);
    value["note"] = json!(notes.join("; "));
}

/// Playwright MCP's selection for `browser_console_messages`: the messages of `level` and the
/// more severe ones (a console call's type read as Playwright MCP reads it: `assert` is an
/// error, `log`, `dir`, `table`, `count`… are info, `debug`, `trace`, groups… are debug), the
/// page now shown unless `all`; what is left out is counted in a note that says how to see it.
pub(crate) fn select_console(value: &mut Value, level: ConsoleLevel) {
    let Some(rows) = value.get_mut("messages").and_then(Value::as_array_mut) else {
        return;
    };
    let before = rows.len();
    rows.retain(|row| console_level(row["type"].as_str().unwrap_or("log")) <= level);
    let hidden = before - rows.len();
    let mut notes = Vec::new();
    if hidden > 0 {
        notes.push(format!(
            "{} below level {} not shown; \"level\": \"debug\" shows all",
            counted(hidden as u64, "message"),
            serde_json::to_value(level).unwrap_or_default()
        ));
    }
    if let Some(earlier) = value["earlier"].as_u64().filter(|&n| n > 0) {
        notes.push(format!(
            "{} of earlier pages not shown; \"all\": true shows them",
            counted(earlier, "message")
        ));
    }
    add_notes(value, notes);
}

/// The level of a console message of CDP type `kind` (uncaught exceptions come as `error`).
fn console_level(kind: &str) -> ConsoleLevel {
    match kind {
        "error" | "assert" => ConsoleLevel::Error,
        "warning" => ConsoleLevel::Warning,
        "clear"
        | "debug"
        | "endGroup"
        | "profile"
        | "profileEnd"
        | "startGroup"
        | "startGroupCollapsed"
        | "trace" => ConsoleLevel::Debug,
        _ => ConsoleLevel::Info,
    }
}

/// A request that loaded one of the page's own files and succeeded: not a fetch, XHR, event
/// stream or WebSocket, answered below 400 and not failed. Pending requests are not (yet).
fn is_static_success(row: &Value) -> bool {
    let kind = row["type"].as_str().unwrap_or("Other");
    let from_script = matches!(kind, "Fetch" | "XHR" | "EventSource" | "WebSocket");
    let succeeded =
        row["failure"].is_null() && row["status"].as_u64().is_some_and(|status| status < 400);
    !from_script && succeeded
}

/// The extension's `{tabId, data, mimeType}` as an MCP image, never cut.
pub(crate) fn screenshot_result(result: &Value) -> CallToolResult {
    let Some(data) = result["data"].as_str() else {
        return error(
            "browser_screenshot failed: the extension's answer held no image data; update the \
             mcp-relay extension"
                .into(),
        );
    };
    let mime = result["mimeType"].as_str().unwrap_or("image/png");
    CallToolResult::success(vec![
        ContentBlock::image(data, mime),
        ContentBlock::text(screenshot_caption(result, mime, data.len())),
    ])
}

/// "Screenshot of tab 7: PNG, 1280×800 px (…)": what a model needs to relate the image to
/// the page (clicks take viewport coordinates, which differ from the pixels when scaled).
pub(crate) fn screenshot_caption(result: &Value, mime: &str, base64_len: usize) -> String {
    format!(
        "{} ({mime}, {base64_len} bytes base64).",
        screenshot_line(result, mime)
    )
}

/// "Screenshot of tab 7: PNG, 1280×800 px", from whichever of these the answer has.
pub(crate) fn screenshot_line(result: &Value, mime: &str) -> String {
    let tab = match &result["tabId"] {
        Value::Null => String::new(),
        tab => format!(" of tab {tab}"),
    };
    let format = result["format"]
        .as_str()
        .unwrap_or_else(|| mime.trim_start_matches("image/"))
        .to_uppercase();
    let size = match (result["width"].as_u64(), result["height"].as_u64()) {
        (Some(width), Some(height)) => format!(", {width}×{height} px"),
        _ => String::new(),
    };
    format!("Screenshot{tab}: {format}{size}")
}

/// The extension's base64 PDF, saved where the bridge runs; the result names the file.
pub(crate) fn pdf_result(
    result: &Value,
    filename: Option<&str>,
    in_result: bool,
    written: &crate::files::Written,
) -> CallToolResult {
    let Some(data) = result["data"].as_str() else {
        return error("browser_pdf_save failed: the extension's answer held no PDF".into());
    };
    if in_result {
        return carried_pdf(result, data, filename);
    }
    match crate::files::save_pdf(data, filename, written) {
        Err(message) => error(format!("browser_pdf_save: {message}")),
        Ok((path, bytes)) => {
            let structured = json!({
                "tabId": result["tabId"],
                "url": result["url"],
                "saved": path.display().to_string(),
                "bytes": bytes,
            });
            let mut text = header(result);
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(&format!(
                "Saved the page as PDF: {} ({bytes} bytes) on the machine where the bridge runs",
                path.display()
            ));
            success(text, Some(structured))
        }
    }
}

/// The PDF carried back in the result as an embedded resource, `filename` naming it only
/// (the relay's HTTP `/mcp`: nothing is written where the tools run).
fn carried_pdf(result: &Value, data: &str, filename: Option<&str>) -> CallToolResult {
    use base64::Engine;
    let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(data) else {
        return error("browser_pdf_save failed: the extension's PDF was not base64".into());
    };
    let name = crate::files::safe_file_name(filename.unwrap_or("page.pdf"));
    let uri = super::transfers::carried_uri("pdf", "page", &name);
    let bytes = bytes.len();
    let mut text = header(result);
    if !text.is_empty() {
        text.push('\n');
    }
    text.push_str(&format!(
        "The page as PDF ({bytes} bytes) is the resource {uri} in this result: nothing was \
         saved on the relay's machine"
    ));
    let structured = json!({"tabId": result["tabId"], "url": result["url"], "carried": uri,
        "bytes": bytes});
    let mut answer = success(text, Some(structured));
    answer
        .content
        .push(super::transfers::blob(data, uri, Some("application/pdf")));
    answer
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_is_its_outline_under_a_plain_header() {
        let answer = json!({"tabId": 7, "url": "https://example.com/", "title": "Example",
            "snapshot": "- heading \"Hi \\\"there\\\"\" [ref=e1]\n- link \"More\" [ref=e2]",
            "note": "Cut at depth 3"});
        let shown = render("browser_snapshot", &answer);
        assert_eq!(
            shown.text,
            "Tab 7 · https://example.com/ · Example\nNote: Cut at depth 3\n\n\
             - heading \"Hi \\\"there\\\"\" [ref=e1]\n- link \"More\" [ref=e2]"
        );
        let structured = shown.structured.unwrap();
        assert_eq!(structured["url"], "https://example.com/");
        assert!(structured.get("snapshot").is_none());
    }

    #[test]
    fn an_action_that_opened_a_dialog_says_which_and_how_to_answer_it_in_plain_words() {
        let shown = render(
            "browser_click",
            &json!({"tabId": 7, "dialog": {"type": "confirm", "message": "Delete 3 files?",
                    "url": "https://e/"}, "note": "The page opened a JavaScript confirm dialog \
                    and waits for an answer; answer it with handleDialog (…)"}),
        );
        assert_eq!(
            shown.text,
            "Tab 7\nDialog open: confirm \"Delete 3 files?\". The page waits for an answer \
             before doing anything else: browser_handle_dialog with accept true or false."
        );
        let prompt = render(
            "browser_click",
            &json!({"tabId": 7, "dialog": {"type": "prompt", "message": "Your name?",
                    "defaultPrompt": "Ada"}}),
        );
        assert!(
            prompt.text.ends_with(
                "browser_handle_dialog with accept true with promptText (the dialog suggests \
                 \"Ada\"), or accept false."
            ),
            "{}",
            prompt.text
        );
    }

    #[test]
    fn uploads_drops_and_emulated_media_read_as_words_not_json() {
        let uploaded = render(
            "browser_file_upload",
            &json!({"tabId": 7, "uploaded": [{"name": "a.txt", "size": 6, "type": "text/plain"},
                    {"name": "b.bin", "size": 3, "type": ""}]}),
        );
        assert_eq!(
            uploaded.text,
            "Tab 7\nUploaded 2 files: a.txt (6 bytes, text/plain), b.bin (3 bytes, no type)"
        );
        let dropped = render(
            "browser_drop",
            &json!({"tabId": 7, "accepted": true, "dropped": {"files": 1, "types": ["Files"]}}),
        );
        assert_eq!(
            dropped.text,
            "Tab 7\naccepted: true\ndropped: 1 file, data types Files"
        );
        let emulated = render(
            "browser_emulate_media",
            &json!({"tabId": 7, "emulated": {"colorScheme": "dark", "reducedMotion": "reduce"}}),
        );
        assert_eq!(
            emulated.text,
            "Tab 7\nemulated: colorScheme dark, reducedMotion reduce"
        );
    }

    #[test]
    fn filled_fields_and_chosen_options_read_as_words_not_json_lists() {
        let filled = render(
            "browser_fill_form",
            &json!({"tabId": 7, "filled": [
                {"name": "Bio", "type": "textbox", "value": "hi\nthere"},
                {"name": "Agree", "type": "checkbox", "value": true},
                {"name": "Country", "type": "combobox", "value": "JP", "label": "Japan"},
                {"name": "Size", "type": "combobox", "value": "M", "label": "M"}]}),
        );
        assert_eq!(
            filled.text,
            "Tab 7\nFilled 4 fields:\n- \"Bio\" (textbox): \"hi\\nthere\"\n- \"Agree\" (checkbox): true\n\
             - \"Country\" (combobox): \"Japan\" (value \"JP\")\n- \"Size\" (combobox): \"M\""
        );
        let chosen = render(
            "browser_select_option",
            &json!({"tabId": 7, "selected": ["jp", "fr"], "labels": ["Japan", "fr"]}),
        );
        assert_eq!(
            chosen.text,
            "Tab 7\nselected: \"Japan\" (value \"jp\"), \"fr\""
        );
        // The page set the drop-down to something else once it was chosen.
        let set_back = render(
            "browser_select_option",
            &json!({"tabId": 7, "selected": ["priority"], "labels": ["Priority"], "pageSetItTo": ["field…"]}),
        );
        assert_eq!(
            set_back.text,
            "Tab 7\nselected: \"Priority\" (value \"priority\")\nthen the page set it to \"field…\""
        );
    }

    #[test]
    fn a_navigation_to_an_error_page_says_the_server_answered_with_an_error() {
        let shown = render(
            "browser_navigate",
            &json!({"tabId": 7, "url": "https://e/gone", "title": "Error response",
                    "httpError": {"status": 404, "statusText": "Not Found"}}),
        );
        assert_eq!(
            shown.text,
            "Tab 7 · https://e/gone · Error response
\
             HTTP 404 Not Found: the server answered with an error, so the page shows that \
             error, not the content asked for"
        );
    }

    #[test]
    fn a_navigation_answered_before_its_load_event_says_what_still_holds_it() {
        let shown = render(
            "browser_navigate",
            &json!({"tabId": 7, "url": "https://e/slow", "title": "Slow",
                    "stillLoading": {"waitedMs": 5004, "inFlight": 1}}),
        );
        assert_eq!(
            shown.text,
            "Tab 7 · https://e/slow · Slow
\
             Not fully loaded: no load event 5004 ms after the page was parsed, 1 request \
             still in flight; the page is shown as far as it came (browser_wait_for waits \
             for text that is still to come)"
        );
    }

    /// The result as a host receives it (`Gateway::call`): page text alone, since hosts give
    /// their model `structuredContent` in place of the text; short answers keep their fields;
    /// the mark never leaves the bridge.
    #[test]
    fn a_host_gets_page_text_without_structured_content_unless_asked() {
        let deliver = Rendered::into_result;
        let snapshot = render(
            "browser_snapshot",
            &json!({"tabId": 7, "url": "https://e/", "title": "E", "snapshot": "- heading \"E\" [ref=e1]"}),
        );
        let to_host = for_host(deliver(snapshot.clone()), false);
        assert_eq!(to_host.structured_content, None);
        assert_eq!(to_host.meta, None);
        let wire = serde_json::to_value(&to_host).unwrap();
        assert!(wire.get("_meta").is_none() && wire.get("structuredContent").is_none());
        let asked = for_host(deliver(snapshot), true);
        assert_eq!(asked.structured_content.unwrap()["url"], "https://e/");
        assert_eq!(asked.meta, None);
        let clicked = render(
            "browser_click",
            &json!({"tabId": 7, "clicked": true, "pageChanged": {"url": "https://e/b", "title": "B"}}),
        );
        let clicked = for_host(deliver(clicked), false);
        assert_eq!(clicked.structured_content.unwrap()["clicked"], true);
        let hovered = for_host(
            deliver(render("browser_hover", &json!({"hovered": true}))),
            false,
        );
        assert_eq!(hovered.structured_content.unwrap()["hovered"], true);
    }

    #[test]
    fn one_request_reads_as_its_line_then_its_headers_and_bodies() {
        let details = render(
            "browser_network_requests",
            &json!({"tabId": 1, "requestId": "9.1",
                    "request": {"requestId": "9.1", "method": "POST", "url": "https://e/api",
                                "type": "Fetch", "status": 201, "statusText": "Created",
                                "durationMs": 8.2,
                                "headers": {"content-type": "application/json"},
                                "body": "{\"q\":1}"},
                    "responseHeaders": {"content-type": "application/json", "x-id": "7"},
                    "body": "{\"id\":7}", "base64Encoded": false}),
        );
        assert_eq!(
            details.text,
            "Tab 1 · POST https://e/api → 201 Created (Fetch, 8 ms, requestId 9.1)\n\
             Request headers:\n  content-type: application/json\n\
             Request body:\n{\"q\":1}\n\
             Response headers:\n  content-type: application/json\n  x-id: 7\n\
             Response body:\n{\"id\":7}"
        );
        assert!(details.page_text);
        let failed = render(
            "browser_network_requests",
            &json!({"tabId": 1, "requestId": "3",
                    "request": {"requestId": "3", "method": "GET", "url": "https://gone/",
                                "type": "Fetch", "failure": "net::ERR_NAME_NOT_RESOLVED",
                                "headers": {}},
                    "bodyUnavailable": "the request failed"}),
        );
        assert_eq!(
            failed.text,
            "Tab 1 · GET https://gone/ → failed: net::ERR_NAME_NOT_RESOLVED (Fetch, requestId 3)\n\
             Response body: none (the request failed)"
        );
    }

    #[test]
    fn typing_without_submit_does_not_read_as_a_failed_submit() {
        let typed = render(
            "browser_type",
            &json!({"tabId": 1, "typed": true, "value": "transport", "submitted": false}),
        );
        assert_eq!(typed.text, "Tab 1\ntyped: true\nvalue: transport");
        assert_eq!(typed.structured.unwrap()["submitted"], false);
        let sent = render(
            "browser_type",
            &json!({"tabId": 1, "typed": true, "value": "q", "submitted": true}),
        );
        assert!(sent.text.contains("\nsubmitted: true\n"), "{}", sent.text);
    }

    #[test]
    fn a_numbered_request_reads_by_its_number_and_one_part_alone() {
        let value = json!({"tabId": 1, "requestId": "9.1",
                "request": {"requestId": "9.1", "index": 4, "method": "POST", "url": "https://e/api",
                            "type": "Fetch", "status": 201, "statusText": "Created",
                            "headers": {"content-type": "application/json"}},
                "responseHeaders": {"x-id": "7"},
                "body": "{\"id\":7}", "base64Encoded": false});
        // The number the list gave it, as Playwright MCP's list numbers requests; no requestId.
        let line = "Tab 1 · 4. POST https://e/api → 201 Created (Fetch)";
        assert_eq!(
            request_details(&value, Some(RequestPart::ResponseBody)).text,
            format!("{line}\nResponse body:\n{{\"id\":7}}")
        );
        assert_eq!(
            request_details(&value, Some(RequestPart::ResponseHeaders)).text,
            format!("{line}\nResponse headers:\n  x-id: 7")
        );
        // A part that is empty is said to be, so the answer is never the line alone.
        assert_eq!(
            request_details(&value, Some(RequestPart::RequestBody)).text,
            format!("{line}\nRequest body: none")
        );
        let pending = json!({"tabId": 1, "request": {"index": 2, "method": "GET", "url": "https://e/slow", "type": "XHR"},
                             "bodyUnavailable": "the response has not finished loading"});
        assert_eq!(
            request_details(&pending, Some(RequestPart::ResponseHeaders)).text,
            "Tab 1 · 2. GET https://e/slow → pending (XHR)\nResponse headers: none (no response yet)"
        );
        // A worker's own script is not pending for ever: the worker got its answer.
        assert_eq!(
            request_line(
                &json!({"index": 3, "method": "GET", "url": "https://e/w.js", "type": "Script", "worker": true})
            ),
            "3. GET https://e/w.js → fetched for a worker, which alone gets its answer (Script)"
        );
        // The list numbers the page's requests and names an earlier page's by requestId.
        let list = render(
            "browser_network_requests",
            &json!({"tabId": 1, "requests": [
                {"requestId": "3.1", "method": "GET", "url": "https://e/old", "type": "Fetch", "status": 200, "statusText": "OK"},
                {"requestId": "9.1", "index": 1, "method": "GET", "url": "https://e/a", "type": "Fetch", "status": 200, "statusText": "OK", "durationMs": 3}]}),
        );
        assert_eq!(
            list.text,
            "Tab 1 · 2 requests\nGET https://e/old → 200 OK (Fetch, requestId 3.1)\n\
             1. GET https://e/a → 200 OK (Fetch, 3 ms)"
        );
    }

    #[test]
    fn waits_tab_changes_and_closed_tabs_read_as_sentences() {
        let cases = [
            (
                "browser_wait_for",
                json!({"tabId": 7, "found": true, "text": "Done", "waitedMs": 416}),
                r#"Tab 7: "Done" is on the page (waited 416 ms)"#,
            ),
            (
                "browser_wait_for",
                json!({"tabId": 7, "found": true, "text": "Done", "textGone": "Loading", "waitedMs": 2}),
                r#"Tab 7: "Done" is on the page, and "Loading" is not (waited 2 ms)"#,
            ),
            (
                "browser_wait_for",
                json!({"tabId": 7, "waited": 0.5}),
                "Tab 7: waited 0.5 s",
            ),
            (
                "browser_tabs",
                json!({"tabId": 8, "url": "https://e/", "title": "E"}),
                "Current tab: Tab 8 · https://e/ · E",
            ),
            (
                "browser_tabs",
                json!({"tabId": 8, "closed": true}),
                "Closed tab 8",
            ),
            (
                "browser_tabs",
                json!({"tabId": 8, "closed": true,
                       "current": {"tabId": 7, "url": "https://e/a", "title": "A"}}),
                "Closed tab 8\nCurrent tab: Tab 7 · https://e/a · A",
            ),
            (
                "browser_tabs",
                json!({"tabId": 8, "closed": true, "current": null}),
                "Closed tab 8\nNo current tab: browser_navigate opens one, or browser_tabs \
                 \"select\" takes one browser_tabs lists",
            ),
            (
                "browser_close",
                json!({"closed": [8, 9], "leftOpen": [3], "note": "tabs this session did not open are the person's"}),
                "Closed 2 tabs: 8, 9\nLeft open: 3\nNote: tabs this session did not open are the person's",
            ),
            (
                "browser_close",
                json!({"closed": []}),
                "Closed no tab: this session opened none that is still open",
            ),
        ];
        for (tool, value, said) in cases {
            let rendered = render(tool, &value);
            assert_eq!(rendered.text, said, "{tool} {value}");
            // The fields a client may read stay beside the sentence.
            assert_eq!(rendered.structured, Some(value));
        }
    }

    #[test]
    fn page_text_results_read_as_lines() {
        let evaluated = render(
            "browser_evaluate",
            &json!({"value": "a\nb", "type": "string"}),
        );
        assert_eq!(evaluated.text, "a\nb");
        assert_eq!(evaluated.structured, Some(json!({"type": "string"})));
        let number = render("browser_evaluate", &json!({"value": 2, "type": "number"}));
        assert_eq!(number.text, "2");
        assert_eq!(
            number.structured,
            Some(json!({"value": 2, "type": "number"}))
        );
        let list = render(
            "browser_evaluate",
            &json!({"value": [1, {"a": "b"}], "type": "object"}),
        );
        assert_eq!(list.text, r#"[1,{"a":"b"}]"#);
        let nothing = render(
            "browser_evaluate",
            &json!({"value": null, "type": "undefined"}),
        );
        assert_eq!(nothing.text, "undefined");
        let null = render(
            "browser_evaluate",
            &json!({"value": null, "type": "object"}),
        );
        assert_eq!(null.text, "null");
        let special = render(
            "browser_evaluate",
            &json!({"value": null, "type": "number", "unserializableValue": "NaN"}),
        );
        assert_eq!(special.text, "NaN");
        let console = render(
            "browser_console_messages",
            &json!({"tabId": 3, "messages": [{"type": "error", "text": "boom", "url": "https://x/a.js", "line": 4, "time": 1}]}),
        );
        assert_eq!(
            console.text,
            "Tab 3 · 1 console message\n[error] boom (https://x/a.js:4)"
        );
        let thrown = render(
            "browser_console_messages",
            &json!({"tabId": 3, "messages": [{"type": "error", "text": "Uncaught Error: x\n    at f (https://x/a.js:9:2)", "url": "https://x/a.js", "line": 9, "time": 1}]}),
        );
        assert_eq!(
            thrown.text,
            "Tab 3 · 1 console message\n[error] Uncaught Error: x\n    at f (https://x/a.js:9:2)"
        );
        let tabs = render(
            "browser_tabs",
            &json!({"currentTabId": 7, "tabs": [{"tabId": 7, "url": "https://e/", "title": "E", "active": true, "current": true, "owner": "you"}]}),
        );
        assert_eq!(
            tabs.text,
            "1 tab; this session's current tab: 7\n- 0: Tab 7 · https://e/ · E (current, active in its window, used by you)"
        );
        let requests = render(
            "browser_network_requests",
            &json!({"tabId": 1, "requests": [{"requestId": "9.1", "method": "GET", "url": "https://e/a", "type": "Fetch", "status": 200, "statusText": "OK", "durationMs": 12.4}]}),
        );
        assert_eq!(
            requests.text,
            "Tab 1 · 1 request\nGET https://e/a → 200 OK (Fetch, 12 ms, requestId 9.1)"
        );
        let clicked = render(
            "browser_click",
            &json!({"tabId": 7, "clicked": true, "element": "a.next", "x": 75.66, "y": 25,
                    "pageChanged": {"url": "https://e/b", "title": "B"}}),
        );
        // What happened to the page comes first; where the click landed stays in the fields.
        assert_eq!(
            clicked.text,
            "Tab 7\nPage changed: https://e/b · B\nclicked: true\nelement: a.next"
        );
        assert_eq!(clicked.structured.unwrap()["x"], 75.66);
        // What a person would have seen the click cause reads as lines, refs kept.
        let stopped = render(
            "browser_click",
            &json!({"tabId": 7, "clicked": true,
                    "formBlocked": [{"field": "Email", "ref": "e2", "message": "Please fill out this field."},
                                    {"field": "tos", "message": "Please tick this box."}],
                    "markedInvalid": [{"field": "Username", "ref": "e7"}],
                    "pageSays": [{"role": "alert", "text": "Username is required"}]}),
        );
        assert_eq!(
            stopped.text,
            "Tab 7\nForm not sent: the browser's own check stopped it (a person sees this \
             message over the field):\n- \"Email\" [ref=e2]: Please fill out this field.\n\
             - \"tos\": Please tick this box.\nFields the page now marks invalid:\n\
             - \"Username\" [ref=e7]\nPage says (alert): Username is required\nclicked: true"
        );
        let shown = render(
            "browser_click",
            &json!({"tabId": 7, "clicked": true,
                    "opened": [{"role": "dialog", "name": "Remove the file", "modal": true},
                               {"role": "menu", "ref": "e4"}],
                    "closed": [{"role": "listbox", "name": "Country"}]}),
        );
        assert_eq!(
            shown.text,
            "Tab 7\nClosed: listbox \"Country\"\nOpened: dialog \"Remove the file\" (modal: the page behind it takes no \
             clicks until it closes)\nOpened: menu [ref=e4]\nclicked: true"
        );
        // A dialog shown says what it asks and offers: its words, fields and buttons.
        let asked = render(
            "browser_click",
            &json!({"tabId": 7, "clicked": true,
                    "opened": [{"role": "dialog", "ref": "e60", "modal": true,
                                "text": "Delete order? Order A-1002 will be deleted.",
                                "buttons": [{"name": "Cancel", "ref": "e61"}, {"name": "Delete", "ref": "e62"}]},
                               {"role": "dialog", "name": "Rename", "text": "New name",
                                "fields": [{"kind": "textbox", "name": "New name", "ref": "e70"}],
                                "buttons": [{"name": "Save", "ref": "e71"}]}]}),
        );
        assert_eq!(
            asked.text,
            "Tab 7\nOpened: dialog [ref=e60] (modal: the page behind it takes no clicks until it \
             closes): \"Delete order? Order A-1002 will be deleted.\" with buttons: \"Cancel\" \
             [ref=e61], \"Delete\" [ref=e62]\nOpened: dialog \"Rename\": \"New name\" with fields: \
             textbox \"New name\" [ref=e70]; buttons: \"Save\" [ref=e71]\nclicked: true"
        );
        // A part the page threw on is named as not read, beside the parts that were read.
        let partly = render(
            "browser_click",
            &json!({"tabId": 7, "clicked": true,
                    "changed": [{"kind": "checkbox", "field": "Rush", "to": "checked"}],
                    "unread": [{"what": "what the page announced", "error": "boom"}]}),
        );
        assert_eq!(
            partly.text,
            "Tab 7\nChanged: checkbox \"Rush\": now checked\nNot read, the page threw while it \
             was read: what the page announced (boom); a snapshot shows the page as it is\n\
             clicked: true"
        );
        // Controls the click changed: a state said as it is now, a value from and to.
        let changed = render(
            "browser_click",
            &json!({"tabId": 7, "clicked": true,
                    "changed": [{"kind": "checkbox", "field": "Rush delivery", "ref": "e41", "to": "checked"},
                                {"kind": "spinbutton", "field": "Quantity", "from": "1", "to": "2"},
                                {"kind": "textbox", "field": "", "from": "", "to": "1 Main St"}],
                    "changedMore": 4}),
        );
        assert_eq!(
            changed.text,
            "Tab 7\nChanged: checkbox \"Rush delivery\" [ref=e41]: now checked\n\
             Changed: spinbutton \"Quantity\": \"1\" → \"2\"\nChanged: textbox: \"\" → \"1 Main St\"\n\
             Changed: 4 more controls\nclicked: true"
        );
        // Controls it let a person use, or stopped them using: a line for each.
        let turned = render(
            "browser_click",
            &json!({"tabId": 7, "clicked": true,
                    "changed": [{"kind": "button", "field": "First page", "ref": "e53", "to": "enabled"},
                                {"kind": "button", "field": "Next page", "ref": "e57", "to": "disabled"},
                                {"kind": "button", "field": "Previous page", "ref": "e55", "to": "enabled"},
                                {"kind": "checkbox", "field": "All", "to": "checked"}]}),
        );
        assert_eq!(
            turned.text,
            "Tab 7\nChanged: checkbox \"All\": now checked\n\
             Now enabled: button \"First page\" [ref=e53], button \"Previous page\" [ref=e55]\n\
             Now disabled: button \"Next page\" [ref=e57]\nclicked: true"
        );
        // A select-all box: the boxes it checked in one line, the rest counted.
        let all = render(
            "browser_click",
            &json!({"tabId": 7, "clicked": true,
                    "changed": [{"kind": "checkbox", "field": "Select all rows", "ref": "e15", "to": "checked"},
                                {"kind": "checkbox", "field": "Select this row", "ref": "e25", "to": "checked"},
                                {"kind": "spinbutton", "field": "Total", "from": "0", "to": "3"}],
                    "changedMore": 2}),
        );
        assert_eq!(
            all.text,
            "Tab 7\nChanged: spinbutton \"Total\": \"0\" → \"3\"\n\
             Now checked: checkbox \"Select all rows\" [ref=e15], checkbox \"Select this row\" [ref=e25]\n\
             Changed: 2 more controls\nclicked: true"
        );
        // What the action put in the page's flow, with its ref when it has one.
        let shows = render(
            "browser_click",
            &json!({"tabId": 7, "clicked": true,
                    "shows": [{"text": "Ordered 1 large pizza"}, {"text": "Total: $5", "ref": "e9"}]}),
        );
        assert_eq!(
            shows.text,
            "Tab 7\nPage now shows: \"Ordered 1 large pizza\"\n\
             Page now shows: \"Total: $5\" [ref=e9]\nclicked: true"
        );
        // A tab selected says the panel it shows, with its ref and fields.
        let tab = render(
            "browser_click",
            &json!({"tabId": 7, "clicked": true, "changed": [
                {"kind": "tab", "field": "Details", "ref": "e5", "to": "selected",
                 "part": {"text": "Weight 2 kg", "ref": "e9"},
                 "fields": [{"kind": "textbox", "name": "Note", "ref": "e10"}]}]}),
        );
        assert_eq!(
            tab.text,
            "Tab 7\nChanged: tab \"Details\" [ref=e5]: now selected, showing \"Weight 2 kg\" \
             [ref=e9] with fields: textbox \"Note\" [ref=e10]\nclicked: true"
        );
        // A list a filter shrank: how many it shows now and before, and the first few.
        let filtered = render(
            "browser_type",
            &json!({"tabId": 7, "typed": true, "listed": [
                {"kind": "table", "items": "rows", "now": 2, "before": 12, "ref": "e4",
                 "first": ["Ada | Japan", "Frances | Japan"]},
                {"kind": "list", "items": "items", "now": 1, "before": 12, "first": ["Alan"]},
                {"kind": "list", "items": "items", "now": 0, "before": 5},
                {"kind": "list", "items": "items", "now": 4, "before": 4, "reordered": true,
                 "ref": "e1", "first": ["Breakfast", "Sea view", "Quiet floor"]}]}),
        );
        assert_eq!(
            filtered.text,
            "Tab 7\nTable [ref=e4] now shows 2 rows (12 before): \"Ada | Japan\", \"Frances | Japan\"\n\
             List now shows 1 item (12 before): \"Alan\"\nList now shows no items (5 before)\n\
             List [ref=e1] reordered (4 items), now: \"Breakfast\", \"Sea view\", \"Quiet floor\", …\n\
             typed: true"
        );
        // A drawing with no words, by its kind, ref and size.
        let chart = render(
            "browser_click",
            &json!({"tabId": 7, "clicked": true, "shows": [
                {"drawing": {"kind": "canvas", "size": "183×272"}, "ref": "e54"}]}),
        );
        assert_eq!(
            chart.text,
            "Tab 7\nPage now shows: canvas [ref=e54] (183×272 px)\nclicked: true"
        );
        // What the action put up over the page with no role.
        let appeared = render(
            "browser_click",
            &json!({"tabId": 7, "clicked": true, "appeared": [{"text": "Successfully deployed"}]}),
        );
        assert_eq!(
            appeared.text,
            "Tab 7\nAppeared over the page: \"Successfully deployed\"\nclicked: true"
        );
        // What it offers to press is named with refs: one kind as one list, mixed kinds each
        // with its role, and only the words no control says.
        let menu = render(
            "browser_click",
            &json!({"tabId": 7, "clicked": true, "appeared": [
                {"text": "Type: TEXT", "ref": "e510", "controls": [
                    {"kind": "link", "name": "Sort ascending", "ref": "e513"},
                    {"kind": "link", "name": "Facet by this", "ref": "e517"}]},
                {"text": "", "controls": [
                    {"kind": "button", "name": "Open", "ref": "e9"},
                    {"kind": "link", "name": "Pin"}], "controlCount": 9}]}),
        );
        assert_eq!(
            menu.text,
            "Tab 7\nAppeared over the page: \"Type: TEXT\" [ref=e510] with links: \
             \"Sort ascending\" [ref=e513], \"Facet by this\" [ref=e517]\n\
             Appeared over the page with: button \"Open\" [ref=e9], link \"Pin\", … (9 in all)\n\
             clicked: true"
        );
        // A form sent to the page's own address: the page loaded again.
        let again = render(
            "browser_click",
            &json!({"tabId": 7, "clicked": true,
                    "loadedAgain": {"url": "http://x/admin", "title": "Components"}}),
        );
        assert_eq!(
            again.text,
            "Tab 7\nPage loaded again (same address): http://x/admin · Components\nclicked: true"
        );
        // What the action took off the page.
        let deleted = render(
            "browser_click",
            &json!({"tabId": 7, "clicked": true, "gone": [{"text": "Invoice 1042 Ada Lovelace $120"}]}),
        );
        assert_eq!(
            deleted.text,
            "Tab 7\nPage no longer shows: \"Invoice 1042 Ada Lovelace $120\"\nclicked: true"
        );
        // A part holding fields names them as a snapshot would, the focused one marked.
        let editor = render(
            "browser_click",
            &json!({"tabId": 7, "clicked": true, "shows": [{
                "text": "Draft of 'New Tiddler' add", "ref": "e46",
                "fields": [
                    {"kind": "textbox", "ref": "e50", "value": "New Tiddler", "focused": true},
                    {"kind": "textbox", "name": "tag name", "ref": "e51"},
                    {"kind": "checkbox", "name": "Private", "ref": "e52", "checked": true},
                ],
                "fieldCount": 9,
            }]}),
        );
        assert_eq!(
            editor.text,
            "Tab 7\nPage now shows: \"Draft of 'New Tiddler' add\" [ref=e46] with fields: \
             textbox [ref=e50] [active]: \"New Tiddler\"; textbox \"tag name\" [ref=e51]; \
             checkbox \"Private\" [ref=e52] [checked]; … (9 fields)\nclicked: true"
        );
        // A part of the page its header showed or hid.
        let toggled = render(
            "browser_click",
            &json!({"tabId": 7, "clicked": true,
                    "toggled": {"expanded": true, "name": "Details", "ref": "e43"}}),
        );
        assert_eq!(
            toggled.text,
            "Tab 7\nExpanded: \"Details\" [ref=e43]\nclicked: true"
        );
        // With the fields the part it showed holds.
        let form = render(
            "browser_click",
            &json!({"tabId": 7, "clicked": true, "toggled": {"expanded": true, "name": "+ Table", "ref": "e6",
                    "fields": [{"kind": "textbox", "name": "new_table_name", "ref": "e50"}]}}),
        );
        assert_eq!(
            form.text,
            "Tab 7\nExpanded: \"+ Table\" [ref=e6] with fields: textbox \"new_table_name\" [ref=e50]\nclicked: true"
        );
        let folded = render(
            "browser_press_key",
            &json!({"tabId": 7, "pressed": "Enter", "toggled": {"expanded": false, "name": "FAQ"}}),
        );
        assert_eq!(folded.text, "Tab 7\nCollapsed: \"FAQ\"\npressed: Enter");
        // With what the part it controls now shows: a date field's picker.
        let picker = render(
            "browser_click",
            &json!({"tabId": 7, "clicked": true, "toggled": {"expanded": true, "name": "Delivery date", "ref": "e81",
                    "part": {"text": "Select date Enter date November 2026", "ref": "e95"}}}),
        );
        assert_eq!(
            picker.text,
            "Tab 7\nExpanded: \"Delivery date\" [ref=e81], showing \"Select date Enter date November 2026\" \
             [ref=e95]\nclicked: true"
        );
        // A menu or list box just shown names its first items.
        let menu = render(
            "browser_click",
            &json!({"tabId": 7, "clicked": true,
                    "opened": [{"role": "menu", "name": "Kernel", "ref": "e101",
                                "items": ["Interrupt Kernel", "Restart Kernel…"], "count": 14}]}),
        );
        assert_eq!(
            menu.text,
            "Tab 7\nOpened: menu \"Kernel\" [ref=e101]: \"Interrupt Kernel\", \"Restart Kernel…\", … \
             (14 items)\nclicked: true"
        );
        let all = render(
            "browser_click",
            &json!({"tabId": 7, "clicked": true,
                    "opened": [{"role": "listbox", "name": "Plan", "items": ["Basic", "Pro"], "count": 2}]}),
        );
        assert_eq!(
            all.text,
            "Tab 7\nOpened: listbox \"Plan\": \"Basic\", \"Pro\"\nclicked: true"
        );
        // A pop-up that closed itself once saved: the click is done, and the model is told
        // where it goes on.
        let closed = render(
            "browser_click",
            &json!({"tabId": 9, "clicked": true,
                    "tabClosed": {"tabId": 9, "current": {"tabId": 7, "url": "https://e/", "title": "Form"}}}),
        );
        assert_eq!(
            closed.text,
            "Tab 9\nThe page closed its tab (Tab 9) when done; the current tab is now Tab 7 · \
             https://e/ · Form\nclicked: true"
        );
        let alone = render(
            "browser_click",
            &json!({"tabId": 9, "clicked": true, "tabClosed": {"tabId": 9}}),
        );
        assert!(alone.text.contains("no current tab now"), "{}", alone.text);
        // A click that opened the page's file chooser: which input, what it takes, what answers it.
        let chooser = render(
            "browser_click",
            &json!({"tabId": 7, "clicked": true, "fileChooser": {"element": "input#photos",
                    "name": "Photos", "ref": "e4", "accept": "image/*", "multiple": true}}),
        );
        assert_eq!(
            chooser.text,
            "Tab 7\nFile chooser open for input#photos \"Photos\" [ref=e4] (several files; \
             accepts image/*): browser_file_upload with paths gives it its files (the browser \
             shows the person no dialog for it)\nclicked: true"
        );
        let opened = render(
            "browser_click",
            &json!({"tabId": 7, "clicked": true,
                    "tabsOpened": [{"tabId": 9, "url": "https://e/docs", "title": "Docs"}]}),
        );
        assert_eq!(
            opened.text,
            "Tab 7\nOpened a new tab: Tab 9 · https://e/docs · Docs (the current tab stays \
             this one; browser_tabs with action \"select\" and this tabId works in it)\n\
             clicked: true"
        );
        // What the console gained is a line; a settled page and a navigation's own new page
        // (the header already) are none; a page still loading is one.
        let navigated = render(
            "browser_navigate",
            &json!({"tabId": 7, "url": "https://e/b", "title": "B",
                    "pageChanged": {"url": "https://e/b", "title": "B"},
                    "settled": {"quiet": true, "waitedMs": 3},
                    "console": {"errors": 1, "warnings": 2}}),
        );
        assert_eq!(
            navigated.text,
            "Tab 7 · https://e/b · B\nConsole: 1 new error, 2 new warnings \
             (browser_console_messages lists them)"
        );
        let busy = render(
            "browser_click",
            &json!({"tabId": 7, "clicked": true,
                    "settled": {"quiet": false, "waitedMs": 5000, "inFlight": 2},
                    "console": {"errors": 0, "warnings": 1}}),
        );
        assert_eq!(
            busy.text,
            "Tab 7\nConsole: 1 new warning (browser_console_messages lists them)\nStill \
             loading after 5000 ms: 2 requests in flight\nclicked: true"
        );
        assert_eq!(busy.structured.unwrap()["console"]["warnings"], 1);
        // A page's answer (a navigation with nothing else to say, a tab) is its header, the
        // title as the page writes it, not JSON with its quotes escaped; the fields stay.
        let plain = render(
            "browser_navigate_back",
            &json!({"tabId": 7, "url": "https://e/a", "title": "The \"A\" page",
                    "settled": {"quiet": true, "waitedMs": 3}}),
        );
        assert_eq!(plain.text, "Tab 7 · https://e/a · The \"A\" page");
        assert_eq!(plain.structured.unwrap()["title"], "The \"A\" page");
        // An action's own answer reads as lines even when nothing else happened (where a click
        // landed stays in the fields); the fields stay beside.
        let hovered = render("browser_hover", &json!({"tabId": 7, "hovered": true}));
        assert_eq!(hovered.text, "Tab 7\nhovered: true");
        assert_eq!(hovered.structured.unwrap()["hovered"], true);
        let clicked = render(
            "browser_click",
            &json!({"tabId": 7, "clicked": true, "element": "button#log", "x": 27.125, "y": 352.375}),
        );
        assert_eq!(clicked.text, "Tab 7\nclicked: true\nelement: button#log");
        assert_eq!(clicked.structured.unwrap()["x"], 27.125);
        let selected = render(
            "browser_select_option",
            &json!({"tabId": 7, "selected": ["b"], "labels": ["Blue"]}),
        );
        assert_eq!(selected.text, "Tab 7\nselected: \"Blue\" (value \"b\")");
        // Other short answers (a raw CDP result, the bridge's own state) stay JSON.
        let raw = render("browser_cdp", &json!({"result": {"value": 2}}));
        assert_eq!(raw.text, r#"{"result":{"value":2}}"#);
    }
}
