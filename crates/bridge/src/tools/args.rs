//! Every tool's input as one typed struct: its JSON Schema (what `tools/list` shows) and its
//! parsing (what the tool reads) both come from it, so the two cannot drift apart.
//!
//! Field docs are the schema's descriptions, so they are short: `tools/list` is read by the
//! model before its first call and weighs on every conversation. Unknown arguments are
//! ignored (hosts and models add their own, e.g. Playwright MCP's `modifiers`), and `null`
//! reads as absent, except in `browser_emulate_media`, where it clears an override.

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use rmcp::model::JsonObject;

/// An element, as Playwright MCP names it (`target`: a ref or a selector) and as this bridge
/// always has (`ref`, `selector`). Playwright MCP's `element` (a description for a permission
/// prompt) is read as any unknown argument is: ignored, and left out of the schema to keep
/// `tools/list` short.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub(crate) struct Element {
    /// A ref (e5) from browser_snapshot, or a selector.
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub(crate) target: Option<Name>,
    // `ref` and `selector` are today's names, kept working; their lack of description saves
    // room in `tools/list`, and target is described.
    #[serde(default, rename = "ref")]
    #[schemars(with = "Option<String>")]
    pub(crate) reference: Option<Name>,
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub(crate) selector: Option<Name>,
}

/// How an element is named on the wire: the extension knows `ref` and `selector` only.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Named {
    Ref(String),
    Selector(String),
}

impl Named {
    /// `ref` or `selector`, for the extension's params.
    pub(crate) fn key(&self) -> &'static str {
        match self {
            Named::Ref(_) => "ref",
            Named::Selector(_) => "selector",
        }
    }

    pub(crate) fn value(&self) -> &str {
        match self {
            Named::Ref(s) | Named::Selector(s) => s,
        }
    }

    /// Sets `prefix` + `Ref`/`Selector` (or `ref`/`selector` without a prefix) in `params`.
    pub(crate) fn put(&self, params: &mut Map<String, Value>, prefix: &str) {
        let key = if prefix.is_empty() {
            self.key().to_owned()
        } else {
            format!(
                "{prefix}{}",
                if self.key() == "ref" {
                    "Ref"
                } else {
                    "Selector"
                }
            )
        };
        params.insert(key, Value::String(self.value().to_owned()));
    }
}

/// Whether `text` is a snapshot ref (`e5`, or `f1e3` inside a frame): the contract's
/// `^(f\d+)?e\d+$`. Anything else in `target` is a selector: CSS, XPath or one of Playwright's
/// locators, which the extension resolves (its lib/locators.js).
pub(crate) fn is_ref(text: &str) -> bool {
    let rest = match text.strip_prefix('f') {
        Some(frame) => {
            let digits = frame.chars().take_while(char::is_ascii_digit).count();
            if digits == 0 {
                return false;
            }
            &frame[digits..]
        }
        None => text,
    };
    rest.strip_prefix('e')
        .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
}

/// The ref of an outline line a model copied whole into `target` (`- button "Save" [ref=e5]`,
/// `[ref=e5]`, `ref=e5`): the element that line shows, rather than a selector that cannot
/// parse. Only one ref, in the outline's own `[ref=…]` form or alone after `ref=`.
fn ref_in_outline_line(text: &str) -> Option<&str> {
    if let Some(bare) = text.strip_prefix("ref=") {
        return is_ref(bare).then_some(bare);
    }
    let mut refs = text.match_indices("[ref=").filter_map(|(at, _)| {
        let rest = &text[at + "[ref=".len()..];
        rest.split_once(']')
            .map(|(inside, _)| inside)
            .filter(|inside| is_ref(inside))
    });
    let first = refs.next()?;
    refs.next().is_none().then_some(first)
}

fn non_empty(value: &Option<String>) -> Option<&str> {
    value.as_deref().map(str::trim).filter(|s| !s.is_empty())
}

/// Resolves `target`, then `ref`, then `selector` (the first given wins); `None` when none is.
pub(crate) fn resolve(
    target: &Option<String>,
    reference: &Option<String>,
    selector: &Option<String>,
) -> Option<Named> {
    if let Some(target) = non_empty(target) {
        return Some(if is_ref(target) {
            Named::Ref(target.to_owned())
        } else if let Some(reference) = ref_in_outline_line(target) {
            Named::Ref(reference.to_owned())
        } else {
            Named::Selector(target.to_owned())
        });
    }
    if let Some(reference) = non_empty(reference) {
        return Some(Named::Ref(reference.to_owned()));
    }
    selector
        .as_deref()
        .filter(|s| !s.trim().is_empty())
        .map(|s| Named::Selector(s.to_owned()))
}

impl Element {
    pub(crate) fn named(&self) -> Option<Named> {
        let text = |name: &Option<Name>| name.as_ref().map(|n| n.0.clone());
        resolve(
            &text(&self.target),
            &text(&self.reference),
            &text(&self.selector),
        )
    }

    /// The element, or the sentence a model needs when none was given.
    pub(crate) fn required(&self) -> Result<Named, String> {
        self.named().ok_or_else(|| {
            "give \"target\": the element's ref from browser_snapshot (e.g. \"e5\") or a CSS \
             selector"
                .into()
        })
    }
}

/// Parses a call's arguments into `A`, or says which argument is wrong and what it should be
/// (the description from `schema`, so the sentence matches what `tools/list` showed).
pub(crate) fn parse<A: DeserializeOwned>(
    args: &JsonObject,
    schema: &JsonObject,
) -> Result<A, String> {
    // `null` reads as absent everywhere (hosts send it for "not given").
    serde_path_to_error::deserialize(Value::Object(args.clone())).map_err(|e| {
        let path = e.path().to_string();
        // Rust's names for numbers mean nothing to a model.
        let mut inner = e.inner().to_string();
        for (rust, plain) in [
            ("expected f64", "expected a number"),
            ("expected u8", "expected a whole number"),
            ("expected u32", "expected a whole number"),
            ("expected u64", "expected a whole number"),
            ("expected i64", "expected a whole number"),
        ] {
            inner = inner.replace(rust, plain);
        }
        let top = |path: &str| path.split(['.', '[']).next().unwrap_or_default().to_owned();
        let (field, message) = match inner.strip_prefix("missing field `") {
            Some(rest) => {
                let name = rest.split('`').next().unwrap_or_default().to_owned();
                if path == "." {
                    (name.clone(), format!("\"{name}\" is required"))
                } else {
                    (top(&path), format!("\"{name}\" is required in \"{path}\""))
                }
            }
            // An argument of a flattened group (the element's names) has no path.
            None if path == "." => (String::new(), inner),
            None => (top(&path), format!("\"{path}\": {inner}")),
        };
        let property = schema.get("properties").and_then(|p| p.get(&field));
        let description = property
            .and_then(|p| p.get("description"))
            .and_then(Value::as_str);
        // A field the schema only lists values for is explained by them.
        let values: Vec<&str> = property
            .and_then(|p| p.get("enum"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        match (description, values.split_last()) {
            (Some(description), _) => format!("{message} ({field}: {description})"),
            (None, Some((last, [first, rest @ ..]))) => {
                let mut listed = vec![*first];
                listed.extend(rest);
                format!("{message} ({field}: {} or {last})", listed.join(", "))
            }
            (None, _) => message,
        }
    })
}

/// A string naming an element, whose type error says what it should be.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Name(pub(crate) String);

impl<'de> Deserialize<'de> for Name {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Name, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = Name;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(
                    "a string naming the element: a ref from browser_snapshot such as \"e5\", \
                     or a CSS selector",
                )
            }
            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Name, E> {
                Ok(Name(text.to_owned()))
            }
        }
        deserializer.deserialize_str(Visitor)
    }
}

/// `"values": "red"` reads as `["red"]` (a model often sends one value bare).
fn one_or_many<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    match OneOrMany::deserialize(deserializer) {
        Ok(OneOrMany::One(one)) => Ok(vec![one]),
        Ok(OneOrMany::Many(many)) => Ok(many),
        Err(_) => Err(serde::de::Error::custom(
            "expected an array of option values or labels, e.g. [\"blue\"]",
        )),
    }
}

/// A field where `null` means something (clear the override) and absence means "unchanged".
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    deserializer: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(deserializer).map(Some)
}

/// No arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct NoArgs {}

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct Connect {
    /// Browser name or extension id (ext-…).
    pub(crate) browser: String,
}

/// Only to read on after a result came in parts: the offset its note names.
pub(crate) type Offset = Option<u64>;

#[derive(Debug, Clone, Copy, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum TabAction {
    List,
    New,
    Select,
    Close,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct Tabs {
    pub(crate) action: TabAction,
    /// For select and close.
    #[serde(default, rename = "tabId")]
    pub(crate) tab_id: Option<i64>,
    /// Its place in the list, from 0.
    #[serde(default)]
    pub(crate) index: Option<u32>,
    /// For new: the page to open.
    #[serde(default)]
    pub(crate) url: Option<String>,
    /// For new: focus its window.
    #[serde(default)]
    pub(crate) active: Option<bool>,
    // Read on in a long result (each part's note says with which offset: no description).
    #[serde(default)]
    pub(crate) offset: Offset,
}

#[derive(Debug, Clone, Copy, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Direction {
    Back,
    Forward,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct Navigate {
    /// The URL to load.
    #[serde(default)]
    pub(crate) url: Option<String>,
    /// Instead of url: go back or forward in history.
    #[serde(default)]
    pub(crate) direction: Option<Direction>,
    /// Also return the outline.
    #[serde(default)]
    pub(crate) outline: Option<bool>,
    #[serde(default, rename = "tabId")]
    pub(crate) tab_id: Option<i64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct RequestHuman {
    /// What they should do.
    pub(crate) reason: String,
    /// Default 300, max 1800.
    #[serde(default, rename = "timeoutSeconds")]
    pub(crate) timeout_seconds: Option<u32>,
    #[serde(default, rename = "tabId")]
    pub(crate) tab_id: Option<i64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct TabOnly {
    #[serde(default, rename = "tabId")]
    pub(crate) tab_id: Option<i64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct CallPageTool {
    /// The tool's name, from browser_page_tools.
    pub(crate) name: String,
    /// Its input, fitting its inputSchema.
    #[serde(default)]
    pub(crate) arguments: Option<Map<String, Value>>,
    #[serde(default, rename = "tabId")]
    pub(crate) tab_id: Option<i64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Button {
    Left,
    Right,
    Middle,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct Click {
    #[serde(flatten)]
    pub(crate) on: Element,
    /// Instead of target: viewport x, with y.
    #[serde(default)]
    pub(crate) x: Option<serde_json::Number>,
    #[serde(default)]
    pub(crate) y: Option<serde_json::Number>,
    #[serde(default)]
    pub(crate) button: Option<Button>,
    #[serde(default, rename = "doubleClick")]
    pub(crate) double_click: Option<bool>,
    #[serde(default, rename = "clickCount")]
    #[schemars(range(min = 1))]
    pub(crate) click_count: Option<u32>,
    /// Keys held during the click.
    #[serde(default)]
    pub(crate) modifiers: Option<Vec<ClickModifier>>,
    /// Also return the outline.
    #[serde(default)]
    pub(crate) outline: Option<bool>,
    #[serde(default, rename = "tabId")]
    pub(crate) tab_id: Option<i64>,
}

// A key held during a click, as Playwright names it (`ControlOrMeta`: Meta on macOS). A plain
// comment, not a doc comment: the schema would carry it on every item, and the field says enough.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize, JsonSchema)]
pub(crate) enum ClickModifier {
    Alt,
    Control,
    ControlOrMeta,
    Meta,
    Shift,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct Type {
    #[serde(flatten)]
    pub(crate) on: Element,
    pub(crate) text: String,
    /// Press Enter afterwards.
    #[serde(default)]
    pub(crate) submit: Option<bool>,
    // Playwright MCP's "slowly": key by key, each with its key events, for pages that act on
    // keys as they come, at the caret (replacing nothing, as pressSequentially). Accepted from models that know it; left out of the schema, where it
    // would take `tools/list` above Playwright MCP's own.
    #[serde(default)]
    #[schemars(skip)]
    pub(crate) slowly: Option<bool>,
    /// Also return the outline.
    #[serde(default)]
    pub(crate) outline: Option<bool>,
    #[serde(default, rename = "tabId")]
    pub(crate) tab_id: Option<i64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct Hover {
    #[serde(flatten)]
    pub(crate) on: Element,
    /// Also return the outline.
    #[serde(default)]
    pub(crate) outline: Option<bool>,
    #[serde(default, rename = "tabId")]
    pub(crate) tab_id: Option<i64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum ImageFormat {
    Png,
    Jpeg,
    Webp,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct Screenshot {
    /// Default png; jpeg (with quality) is smaller.
    #[serde(default)]
    pub(crate) format: Option<ImageFormat>,
    #[serde(default)]
    #[schemars(range(max = 100))]
    pub(crate) quality: Option<u8>,
    /// The whole page.
    #[serde(default, rename = "fullPage")]
    pub(crate) full_page: Option<bool>,
    /// Longest side in pixels (default 1568).
    #[serde(default, rename = "maxDimension")]
    #[schemars(range(min = 16, max = 16384))]
    pub(crate) max_dimension: Option<u32>,
    #[serde(default, rename = "tabId")]
    pub(crate) tab_id: Option<i64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct Evaluate {
    /// A function: () => document.title, or (element) => element.textContent with target.
    #[serde(default)]
    pub(crate) function: Option<String>,
    /// Instead of function: an expression.
    #[serde(default)]
    pub(crate) expression: Option<String>,
    #[serde(flatten)]
    pub(crate) on: Element,
    #[serde(default, rename = "tabId")]
    pub(crate) tab_id: Option<i64>,
    // Read on in a long result (each part's note says with which offset: no description).
    #[serde(default)]
    pub(crate) offset: Offset,
    // Playwright MCP's "filename": the answer saved where the bridge runs instead of returned
    // (transfers.rs). Out of the schema, to keep `tools/list` under Playwright MCP's.
    #[serde(default)]
    #[schemars(skip)]
    pub(crate) filename: Option<String>,
    // The function called with every element target names, the value their list: how a
    // script's `page` reads a getBy… locator's matches in one call (script_page.js). Out of
    // the schema: for scripts, and the list stays under Playwright MCP's.
    #[serde(default)]
    #[schemars(skip)]
    pub(crate) each: Option<bool>,
    // The function called once with the list of them: a script's `evaluateAll` on a getBy…
    // locator. Out of the schema, as `each`.
    #[serde(default)]
    #[schemars(skip)]
    pub(crate) all: Option<bool>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct Snapshot {
    /// Only this element's subtree: a ref (e5) or a selector.
    #[serde(default)]
    pub(crate) target: Option<String>,
    #[serde(default, rename = "ref")]
    #[schemars(skip)]
    pub(crate) reference: Option<String>,
    #[serde(default)]
    #[schemars(skip)]
    pub(crate) selector: Option<String>,
    /// Only elements with refs: much shorter.
    #[serde(default)]
    pub(crate) interactive: Option<bool>,
    /// Levels to show (1 = top level).
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub(crate) depth: Option<u32>,
    // Playwright MCP's "boxes": each element's `[box=x,y,width,height]`, viewport CSS pixels.
    // Accepted from models that know it; out of the schema, to keep `tools/list` under
    // Playwright MCP's own.
    #[serde(default)]
    #[schemars(skip)]
    pub(crate) boxes: Option<bool>,
    #[serde(default, rename = "tabId")]
    pub(crate) tab_id: Option<i64>,
    // Read on in a long result (each part's note says with which offset: no description).
    #[serde(default)]
    pub(crate) offset: Offset,
    // Playwright MCP's "filename": the answer saved where the bridge runs instead of returned
    // (transfers.rs). Out of the schema, to keep `tools/list` under Playwright MCP's.
    #[serde(default)]
    #[schemars(skip)]
    pub(crate) filename: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct Find {
    /// Text to find (case-insensitive).
    #[serde(default)]
    pub(crate) text: Option<String>,
    /// Instead of text: a regular expression, /pattern/i for flags.
    #[serde(default)]
    pub(crate) regex: Option<String>,
    /// Search only this element's subtree.
    #[serde(default)]
    pub(crate) target: Option<String>,
    #[serde(default, rename = "tabId")]
    pub(crate) tab_id: Option<i64>,
    // Playwright MCP's "filename": the answer saved where the bridge runs instead of returned
    // (transfers.rs). Out of the schema, to keep `tools/list` under Playwright MCP's.
    #[serde(default)]
    #[schemars(skip)]
    pub(crate) filename: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct Cdp {
    /// CDP method, e.g. Page.reload.
    pub(crate) method: String,
    #[serde(default)]
    pub(crate) params: Option<Map<String, Value>>,
    /// CDP session of a child target.
    #[serde(default, rename = "sessionId")]
    pub(crate) session_id: Option<String>,
    // Read on in a long result (each part's note says with which offset: no description).
    #[serde(default)]
    pub(crate) offset: Offset,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct SelectOption {
    #[serde(flatten)]
    pub(crate) on: Element,
    /// Values or labels of the options to select.
    #[serde(deserialize_with = "one_or_many")]
    #[schemars(with = "Vec<String>", length(min = 1))]
    pub(crate) values: Vec<String>,
    /// Also return the outline.
    #[serde(default)]
    pub(crate) outline: Option<bool>,
    #[serde(default, rename = "tabId")]
    pub(crate) tab_id: Option<i64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(transform = key_required)]
pub(crate) struct PressKey {
    /// e.g. Enter, ArrowDown, Control+A.
    // Required in the schema, as in Playwright MCP's (`key_required`); a script's
    // `keyboard.type` sends `text` instead (below), so the parser lets it be absent.
    #[serde(default)]
    pub(crate) key: String,
    // Every character of `text` pressed in turn into the focused element, in one call: how a
    // script's `keyboard.type(text)` types (script_page.js). Out of the schema, for scripts.
    #[serde(default)]
    #[schemars(skip)]
    pub(crate) text: Option<String>,
    /// Also return the outline.
    #[serde(default)]
    pub(crate) outline: Option<bool>,
    #[serde(default, rename = "tabId")]
    pub(crate) tab_id: Option<i64>,
}

/// `browser_press_key`'s schema as a model reads it: `key` required, with no default.
fn key_required(schema: &mut schemars::Schema) {
    if let Some(key) = schema
        .get_mut("properties")
        .and_then(|properties| properties.get_mut("key"))
        .and_then(Value::as_object_mut)
    {
        key.remove("default");
    }
    schema.insert("required".into(), serde_json::json!(["key"]));
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct WaitFor {
    /// Text to wait for.
    #[serde(default)]
    pub(crate) text: Option<String>,
    /// Text to wait to disappear.
    #[serde(default, rename = "textGone")]
    pub(crate) text_gone: Option<String>,
    /// Instead: seconds to wait.
    #[serde(default)]
    #[schemars(range(min = 0.0, max = 30.0))]
    pub(crate) time: Option<f64>,
    /// Give up after this many seconds (default 10).
    #[serde(default)]
    #[schemars(range(min = 0.0, max = 30.0))]
    pub(crate) timeout: Option<f64>,
    #[serde(default, rename = "tabId")]
    pub(crate) tab_id: Option<i64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct HandleDialog {
    /// true for OK, false for Cancel.
    pub(crate) accept: bool,
    /// For a prompt: the answer.
    #[serde(default, rename = "promptText")]
    pub(crate) prompt_text: Option<String>,
    #[serde(default, rename = "tabId")]
    pub(crate) tab_id: Option<i64>,
}

/// A console message's level, most severe first, as Playwright MCP names them.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub(crate) enum ConsoleLevel {
    Error,
    Warning,
    Info,
    Debug,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct ConsoleMessages {
    /// This level and more severe (default info).
    #[serde(default)]
    pub(crate) level: Option<ConsoleLevel>,
    /// Also earlier pages' messages.
    #[serde(default)]
    pub(crate) all: Option<bool>,
    /// Only errors and uncaught exceptions: level error.
    #[serde(default, rename = "onlyErrors")]
    #[schemars(skip)]
    pub(crate) only_errors: Option<bool>,
    #[serde(default, rename = "tabId")]
    pub(crate) tab_id: Option<i64>,
    // Read on in a long result (each part's note says with which offset: no description).
    #[serde(default)]
    pub(crate) offset: Offset,
    // Playwright MCP's "filename": the answer saved where the bridge runs instead of returned
    // (transfers.rs). Out of the schema, to keep `tools/list` under Playwright MCP's.
    #[serde(default)]
    #[schemars(skip)]
    pub(crate) filename: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct Drag {
    /// The element to drag: a ref or a selector.
    #[serde(default, rename = "startTarget")]
    pub(crate) start_target: Option<String>,
    /// The element to drop on: a ref or a selector.
    #[serde(default, rename = "endTarget")]
    pub(crate) end_target: Option<String>,
    #[serde(default, rename = "startRef")]
    pub(crate) start_ref: Option<String>,
    #[serde(default, rename = "startSelector")]
    pub(crate) start_selector: Option<String>,
    #[serde(default, rename = "endRef")]
    pub(crate) end_ref: Option<String>,
    #[serde(default, rename = "endSelector")]
    pub(crate) end_selector: Option<String>,
    #[serde(default, rename = "tabId")]
    pub(crate) tab_id: Option<i64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum FieldType {
    Textbox,
    Checkbox,
    Radio,
    Combobox,
    Slider,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct FormField {
    /// For the person's record.
    pub(crate) name: String,
    #[serde(rename = "type")]
    pub(crate) kind: FieldType,
    /// The field: a ref or a selector.
    #[serde(default)]
    pub(crate) target: Option<String>,
    #[serde(default, rename = "ref")]
    pub(crate) reference: Option<String>,
    #[serde(default)]
    pub(crate) selector: Option<String>,
    /// Text; "true"/"false" for checkbox or radio; the option for combobox.
    pub(crate) value: Value,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct FillForm {
    #[schemars(length(min = 1))]
    pub(crate) fields: Vec<FormField>,
    #[serde(default, rename = "tabId")]
    pub(crate) tab_id: Option<i64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct FileUpload {
    /// Absolute paths, where the bridge runs.
    #[schemars(length(min = 1))]
    pub(crate) paths: Vec<String>,
    #[serde(flatten)]
    pub(crate) on: Element,
    #[serde(default, rename = "tabId")]
    pub(crate) tab_id: Option<i64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct Drop {
    /// The element to drop on: a ref (e5) or a selector.
    #[schemars(with = "String")]
    pub(crate) target: Name,
    /// Absolute paths, where the bridge runs.
    #[serde(default)]
    pub(crate) paths: Option<Vec<String>>,
    /// MIME type to string, e.g. {"text/plain": "hello"}.
    #[serde(default)]
    pub(crate) data: Option<std::collections::BTreeMap<String, String>>,
    #[serde(default, rename = "tabId")]
    pub(crate) tab_id: Option<i64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct NetworkRequests {
    // One request in full, as browser_network_request {index} shows it: today's name, kept
    // working, out of the schema (the list numbers requests for browser_network_request).
    #[serde(default, rename = "requestId")]
    #[schemars(skip)]
    pub(crate) request_id: Option<String>,
    /// Also the page's own files loaded (document, scripts, styles, images).
    #[serde(default, rename = "static")]
    pub(crate) include_static: Option<bool>,
    /// Only requests whose URL matches this regex.
    #[serde(default)]
    pub(crate) filter: Option<String>,
    #[serde(default, rename = "tabId")]
    pub(crate) tab_id: Option<i64>,
    // Read on in a long result (each part's note says with which offset: no description).
    #[serde(default)]
    pub(crate) offset: Offset,
    // Playwright MCP's "filename": the answer saved where the bridge runs instead of returned
    // (transfers.rs). Out of the schema, to keep `tools/list` under Playwright MCP's.
    #[serde(default)]
    #[schemars(skip)]
    pub(crate) filename: Option<String>,
}

/// Playwright MCP's `browser_network_request`: one request of the list, by its number there.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct NetworkRequest {
    // Its number in browser_network_requests (the tool's description says so).
    #[schemars(range(min = 1))]
    pub(crate) index: u64,
    #[serde(default)]
    pub(crate) part: Option<RequestPart>,
    #[serde(default, rename = "tabId")]
    pub(crate) tab_id: Option<i64>,
    // Read on in a long result: the part's own note says with which offset, so the schema
    // spends no room on it (`tools/list` stays under Playwright MCP's).
    #[serde(default)]
    #[schemars(skip)]
    pub(crate) offset: Offset,
    // Playwright MCP's "filename", as for browser_network_requests.
    #[serde(default)]
    #[schemars(skip)]
    pub(crate) filename: Option<String>,
}

/// The parts of a request Playwright MCP's `browser_network_request {part}` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum RequestPart {
    RequestHeaders,
    RequestBody,
    ResponseHeaders,
    ResponseBody,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct TakeScreenshot {
    #[serde(default, rename = "type")]
    pub(crate) kind: Option<ImageFormat>,
    #[serde(flatten)]
    pub(crate) on: Element,
    /// The whole scrollable page.
    #[serde(default, rename = "fullPage")]
    pub(crate) full_page: Option<bool>,
    #[serde(default, rename = "tabId")]
    pub(crate) tab_id: Option<i64>,
    // Playwright MCP's "filename": the answer saved where the bridge runs instead of returned
    // (transfers.rs). Out of the schema, to keep `tools/list` under Playwright MCP's.
    #[serde(default)]
    #[schemars(skip)]
    pub(crate) filename: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct Resize {
    #[schemars(range(min = 1, max = 10000))]
    pub(crate) width: u32,
    #[schemars(range(min = 1, max = 10000))]
    pub(crate) height: u32,
    #[serde(default, rename = "tabId")]
    pub(crate) tab_id: Option<i64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct PdfSave {
    /// Where to save it (never over a file it did not write).
    #[serde(default)]
    pub(crate) filename: Option<String>,
    #[serde(default, rename = "tabId")]
    pub(crate) tab_id: Option<i64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Media {
    Screen,
    Print,
}

#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum ColorScheme {
    Light,
    Dark,
}

#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum ReducedMotion {
    Reduce,
    NoPreference,
}

#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum ForcedColors {
    Active,
    None,
}

#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Contrast {
    More,
    NoPreference,
}

/// Each field: absent = unchanged, `null` = cleared. Serialised as the wire's params. The
/// values are Playwright MCP's enums, as the wire contract of issue 23 fixes them.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
pub(crate) struct EmulateMedia {
    /// CSS media type.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) media: Option<Option<Media>>,
    /// prefers-color-scheme.
    #[serde(
        default,
        rename = "colorScheme",
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) color_scheme: Option<Option<ColorScheme>>,
    /// prefers-reduced-motion.
    #[serde(
        default,
        rename = "reducedMotion",
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) reduced_motion: Option<Option<ReducedMotion>>,
    /// forced-colors.
    #[serde(
        default,
        rename = "forcedColors",
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) forced_colors: Option<Option<ForcedColors>>,
    /// prefers-contrast.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) contrast: Option<Option<Contrast>>,
    #[serde(default, rename = "tabId", skip_serializing_if = "Option::is_none")]
    pub(crate) tab_id: Option<i64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_that_look_like_refs_are_refs_and_the_rest_selectors() {
        for r in ["e5", "e123", "f1e3", "f12e0"] {
            assert!(is_ref(r), "{r}");
        }
        for s in ["e", "f1", "fe3", "#e5", "e5 ", "button", "e5a", "f1e", ""] {
            assert!(!is_ref(s), "{s}");
        }
        let some = |s: &str| Some(s.to_owned());
        assert_eq!(
            resolve(&some(" e7 "), &some("e1"), &None),
            Some(Named::Ref("e7".into()))
        );
        assert_eq!(
            resolve(&some("#go"), &None, &None),
            Some(Named::Selector("#go".into()))
        );
        assert_eq!(
            resolve(&None, &some("e1"), &some("#a")),
            Some(Named::Ref("e1".into()))
        );
        assert_eq!(resolve(&some(" "), &None, &None), None);
    }

    #[test]
    fn an_outline_line_copied_into_target_names_its_ref() {
        let some = |s: &str| Some(s.to_owned());
        for (line, reference) in [
            ("- button \"Save\" [ref=e5]", "e5"),
            ("button \"Save\" [ref=f1e12] [active]", "f1e12"),
            ("[ref=e7]", "e7"),
            ("ref=e9", "e9"),
        ] {
            assert_eq!(
                resolve(&some(line), &None, &None),
                Some(Named::Ref(reference.into())),
                "{line}"
            );
        }
        // Two refs, or a ref-like word in a real selector, stay a selector.
        for selector in [
            "[ref=e1] [ref=e2]",
            "[data-ref=e5]",
            "a[ref=x]",
            "ref=button",
        ] {
            assert_eq!(
                resolve(&some(selector), &None, &None),
                Some(Named::Selector(selector.into())),
                "{selector}"
            );
        }
    }
}

/// `browser_run_code_unsafe`'s input, as Playwright MCP names it.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct RunCode {
    /// A function called with `page`, e.g. `async (page) => { await
    /// page.getByRole('button', { name: 'Submit' }).click(); return await page.title(); }`.
    #[serde(default)]
    pub(crate) code: Option<String>,
    /// Load the code from this file, where the bridge runs (a relative name is resolved
    /// against the bridge's working directory). If both are given, code is ignored.
    #[serde(default)]
    pub(crate) filename: Option<String>,
    // Read on in a long answer, as the part's note says; out of the schema (a short list).
    #[serde(default)]
    #[schemars(skip)]
    pub(crate) offset: Offset,
}

/// `code_execution`'s input.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct CodeExecution {
    /// The body of an async JavaScript function, e.g. `const r = await
    /// tools.browser_navigate({url: "https://example.com"}); return r.data.title;`. Each
    /// `await tools.<tool name>(args)` resolves to `{text, data}` (the result's text and its
    /// fields) or rejects with an Error whose message is the tool's error. What it
    /// returns is this tool's result (a string as-is, anything else as JSON).
    #[serde(default)]
    pub(crate) code: Option<String>,
    // Read on in a long result (each part's note says with which offset: no description).
    #[serde(default)]
    pub(crate) offset: Offset,
}
