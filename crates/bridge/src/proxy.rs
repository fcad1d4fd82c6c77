//! The `proxy` tool: one tool through which a model lists, inspects and calls every tool,
//! resource and prompt of the bridge (Magg's proxy tool specification).
//!
//! This file holds the parts that need no browser: reading and validating the arguments, and
//! shaping results. Query results (`list`, `info`) are one embedded JSON resource; call results
//! are the capability's own content. Every content item carries the spec's annotations
//! (`proxyAction`, `proxyType`, `proxyPath`, `many`, `totalCount`, `offset`, `limit`,
//! `dataType`, `pythonType`) in `_meta.proxy`, because strict MCP clients drop annotation keys
//! the MCP schema does not define; [`super::wire`] copies them into `annotations` on the way
//! out, so clients that follow the proxy spec find them where it says.

use rmcp::model::{ContentBlock, JsonObject, MetaObject, ResourceContents};
use serde_json::{json, Map, Value};

/// Default and largest `limit` of a list.
pub(crate) const DEFAULT_LIMIT: u64 = 100;
pub(crate) const MAX_LIMIT: u64 = 1000;

/// The key of `_meta` that holds the proxy annotations.
pub(crate) const META_KEY: &str = "proxy";

const PARAMETERS: [&str; 8] = [
    "action",
    "type",
    "a_type",
    "path",
    "args",
    "limit",
    "offset",
    "filter_server",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Action {
    List,
    Info,
    Call,
}

impl Action {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Action::List => "list",
            Action::Info => "info",
            Action::Call => "call",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Tool,
    Resource,
    Prompt,
}

impl Kind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Kind::Tool => "tool",
            Kind::Resource => "resource",
            Kind::Prompt => "prompt",
        }
    }

    /// The type identifier of a query result's data.
    pub(crate) fn data_type(self) -> &'static str {
        match self {
            Kind::Tool => "Tool",
            Kind::Resource => "Resource|ResourceTemplate",
            Kind::Prompt => "Prompt",
        }
    }
}

/// A validated proxy call.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ProxyRequest {
    pub action: Action,
    pub kind: Kind,
    /// Required for info and call, absent for list.
    pub path: Option<String>,
    /// Only for call; empty when not given.
    pub args: JsonObject,
    pub limit: u64,
    pub offset: u64,
    /// Only for list: keep the capabilities whose name (or URI) starts with this.
    pub filter_server: Option<String>,
}

fn given<'a>(args: &'a JsonObject, key: &str) -> Option<&'a Value> {
    args.get(key).filter(|v| !v.is_null())
}

/// Reads the proxy tool's arguments, refusing every combination the specs forbid. The checks
/// run in a fixed order (unknown keys, action, type, path, args, list options), so a call
/// with several mistakes always hears about the same one first.
pub(crate) fn parse(args: &JsonObject) -> Result<ProxyRequest, String> {
    reject_unknown_parameters(args)?;
    let action = parse_action(args)?;
    let kind = parse_kind(args)?;
    let path = parse_path(args, action, kind)?;
    let call_args = parse_call_args(args, action)?;
    let list = parse_list_options(args, action)?;
    Ok(ProxyRequest {
        action,
        kind,
        path,
        args: call_args,
        limit: list.limit,
        offset: list.offset,
        filter_server: list.filter_server,
    })
}

fn reject_unknown_parameters(args: &JsonObject) -> Result<(), String> {
    match args.keys().find(|k| !PARAMETERS.contains(&k.as_str())) {
        Some(unknown) => Err(format!(
            "unknown parameter \"{unknown}\"; proxy takes action, type, path, args, limit, \
             offset and filter_server"
        )),
        None => Ok(()),
    }
}

fn parse_action(args: &JsonObject) -> Result<Action, String> {
    match given(args, "action").map(|a| a.as_str()) {
        None => Err("\"action\" is required: one of list, info, call".into()),
        Some(Some("list")) => Ok(Action::List),
        Some(Some("info")) => Ok(Action::Info),
        Some(Some("call")) => Ok(Action::Call),
        Some(other) => Err(format!(
            "unknown action {}: use list, info or call",
            other.map_or_else(
                || given(args, "action").unwrap().to_string(),
                |s| format!("\"{s}\"")
            )
        )),
    }
}

/// `type`, or its alias `a_type` (never both).
fn parse_kind(args: &JsonObject) -> Result<Kind, String> {
    let kind_value = match (given(args, "type"), given(args, "a_type")) {
        (Some(_), Some(_)) => return Err("give \"type\" once (a_type is its alias)".into()),
        (Some(v), None) | (None, Some(v)) => v,
        (None, None) => return Err("\"type\" is required: one of tool, resource, prompt".into()),
    };
    match kind_value.as_str() {
        Some("tool") => Ok(Kind::Tool),
        Some("resource") => Ok(Kind::Resource),
        Some("prompt") => Ok(Kind::Prompt),
        Some(other) => Err(format!(
            "unknown type \"{other}\": use tool, resource or prompt"
        )),
        None => Err(format!(
            "unknown type {kind_value}: use tool, resource or prompt"
        )),
    }
}

/// `path`: required for info and call, refused for list.
fn parse_path(args: &JsonObject, action: Action, kind: Kind) -> Result<Option<String>, String> {
    let path = match given(args, "path") {
        None => None,
        Some(Value::String(p)) if !p.is_empty() => Some(p.clone()),
        Some(_) => return Err("\"path\" must be a non-empty string".into()),
    };
    match (action, &path) {
        (Action::List, Some(_)) => Err(
            "\"path\" is not allowed for action list (it lists everything; use \
             filter_server to narrow, or action info for one item)"
                .into(),
        ),
        (Action::Info | Action::Call, None) => Err(format!(
            "\"path\" is required for action {} (the {} name{}; see action list)",
            action.as_str(),
            kind.as_str(),
            if kind == Kind::Resource {
                " or URI"
            } else {
                ""
            }
        )),
        _ => Ok(path),
    }
}

/// `args`, only for call: an object, or a JSON string holding one.
fn parse_call_args(args: &JsonObject, action: Action) -> Result<JsonObject, String> {
    match given(args, "args") {
        None => Ok(JsonObject::new()),
        Some(_) if action != Action::Call => Err(format!(
            "\"args\" is only allowed for action call, not {}",
            action.as_str()
        )),
        Some(Value::Object(o)) => Ok(o.clone()),
        Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
            Ok(Value::Object(o)) => Ok(o),
            Ok(_) => Err("\"args\" as a string must hold a JSON object".into()),
            Err(e) => Err(format!("\"args\" is a string but not valid JSON: {e}")),
        },
        Some(_) => Err("\"args\" must be an object (or a JSON string of one)".into()),
    }
}

/// `limit`, `offset` and `filter_server`: only for list.
struct ListOptions {
    limit: u64,
    offset: u64,
    filter_server: Option<String>,
}

fn parse_list_options(args: &JsonObject, action: Action) -> Result<ListOptions, String> {
    for key in ["limit", "offset", "filter_server"] {
        if action != Action::List && given(args, key).is_some() {
            return Err(format!(
                "\"{key}\" is only allowed for action list, not {}",
                action.as_str()
            ));
        }
    }
    let limit = match given(args, "limit") {
        None => DEFAULT_LIMIT,
        Some(v) => match v.as_u64() {
            Some(l) if (1..=MAX_LIMIT).contains(&l) => l,
            _ => {
                return Err(format!(
                    "\"limit\" must be an integer from 1 to {MAX_LIMIT}, not {v}"
                ))
            }
        },
    };
    let offset = match given(args, "offset") {
        None => 0,
        Some(v) => v
            .as_u64()
            .ok_or_else(|| format!("\"offset\" must be an integer of 0 or more, not {v}"))?,
    };
    let filter_server = match given(args, "filter_server") {
        None => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err("\"filter_server\" must be a string (a name prefix)".into()),
    };
    Ok(ListOptions {
        limit,
        offset,
        filter_server,
    })
}

fn with_proxy_meta(block: ContentBlock, annotations: Value) -> ContentBlock {
    let mut meta = MetaObject::default();
    meta.0.insert(META_KEY.into(), annotations);
    match block {
        ContentBlock::Text(mut c) => {
            c.meta = Some(merge(c.meta.take(), meta));
            ContentBlock::Text(c)
        }
        ContentBlock::Image(mut c) => {
            c.meta = Some(merge(c.meta.take(), meta));
            ContentBlock::Image(c)
        }
        ContentBlock::Audio(mut c) => {
            c.meta = Some(merge(c.meta.take(), meta));
            ContentBlock::Audio(c)
        }
        ContentBlock::Resource(mut c) => {
            c.meta = Some(merge(c.meta.take(), meta));
            ContentBlock::Resource(c)
        }
        other => other,
    }
}

fn merge(existing: Option<MetaObject>, mut new: MetaObject) -> MetaObject {
    if let Some(existing) = existing {
        for (k, v) in existing.0 {
            new.0.entry(k).or_insert(v);
        }
    }
    new
}

/// A `list` or `info` answer: one embedded JSON resource with the query annotations.
/// `page` is `(totalCount, offset, limit)` for lists.
pub(crate) fn query_result(
    action: Action,
    kind: Kind,
    path: Option<&str>,
    data: &Value,
    page: Option<(usize, u64, u64)>,
) -> ContentBlock {
    let uri = match path {
        Some(p) => format!("proxy:{}/{}/{p}", action.as_str(), kind.as_str()),
        None => format!("proxy:{}/{}", action.as_str(), kind.as_str()),
    };
    let mut annotations = json!({
        "proxyAction": action.as_str(),
        "proxyType": kind.as_str(),
        "dataType": kind.data_type(),
        "pythonType": kind.data_type(),
        "many": page.is_some(),
    });
    if let Some(p) = path {
        annotations["proxyPath"] = json!(p);
    }
    if let Some((total, offset, limit)) = page {
        annotations["totalCount"] = json!(total);
        annotations["offset"] = json!(offset);
        annotations["limit"] = json!(limit);
    }
    let resource = ResourceContents::TextResourceContents {
        uri,
        mime_type: Some("application/json".into()),
        text: data.to_string(),
        meta: None,
    };
    with_proxy_meta(ContentBlock::resource(resource), annotations)
}

/// The annotations every call result item gets.
fn call_annotations(kind: Kind, path: &str) -> Value {
    json!({"proxyType": kind.as_str(), "proxyAction": "call", "proxyPath": path})
}

/// A tool's result content, each item annotated.
pub(crate) fn annotate_tool_call(content: Vec<ContentBlock>, path: &str) -> Vec<ContentBlock> {
    content
        .into_iter()
        .map(|c| with_proxy_meta(c, call_annotations(Kind::Tool, path)))
        .collect()
}

/// A resource read as tool content: each content an embedded resource; text that parses as
/// JSON is objectified (re-encoded, `application/json`, the original type kept as
/// `contentType`).
pub(crate) fn resource_call(contents: Vec<ResourceContents>, path: &str) -> Vec<ContentBlock> {
    contents
        .into_iter()
        .map(|contents| {
            let mut annotations = call_annotations(Kind::Resource, path);
            let contents = match contents {
                ResourceContents::TextResourceContents {
                    uri,
                    mime_type,
                    text,
                    meta,
                } => match serde_json::from_str::<Value>(&text) {
                    Ok(value) => {
                        annotations["contentType"] =
                            json!(mime_type.as_deref().unwrap_or("text/plain"));
                        ResourceContents::TextResourceContents {
                            uri,
                            mime_type: Some("application/json".into()),
                            text: value.to_string(),
                            meta,
                        }
                    }
                    Err(_) => ResourceContents::TextResourceContents {
                        uri,
                        mime_type,
                        text,
                        meta,
                    },
                },
                blob => blob,
            };
            with_proxy_meta(ContentBlock::resource(contents), annotations)
        })
        .collect()
}

/// A prompt result wrapped in one embedded JSON resource.
pub(crate) fn prompt_call(prompt_result: &Value, path: &str) -> ContentBlock {
    let mut annotations = call_annotations(Kind::Prompt, path);
    annotations["dataType"] = json!("GetPromptResult");
    annotations["pythonType"] = json!("GetPromptResult");
    annotations["many"] = json!(false);
    let resource = ResourceContents::TextResourceContents {
        uri: format!("proxy:call/prompt/{path}"),
        mime_type: Some("application/json".into()),
        text: prompt_result.to_string(),
        meta: None,
    };
    with_proxy_meta(ContentBlock::resource(resource), annotations)
}

/// The page `[offset, offset + limit)` of the items whose name starts with `filter`.
pub(crate) fn page(items: Vec<(String, Value)>, request: &ProxyRequest) -> (Vec<Value>, usize) {
    let filtered: Vec<Value> = items
        .into_iter()
        .filter(|(name, _)| {
            request
                .filter_server
                .as_deref()
                .is_none_or(|prefix| name.starts_with(prefix))
        })
        .map(|(_, v)| v)
        .collect();
    let total = filtered.len();
    let page = filtered
        .into_iter()
        .skip(request.offset as usize)
        .take(request.limit as usize)
        .collect();
    (page, total)
}

/// The proxy tool's input schema.
pub(crate) fn input_schema() -> Map<String, Value> {
    let Value::Object(schema) = json!({
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": ["list", "info", "call"], "description": "list: enumerate; info: one item's full description; call: run a tool, read a resource, or get a prompt."},
            "type": {"type": "string", "enum": ["tool", "resource", "prompt"], "description": "Which kind of capability."},
            "path": {"type": "string", "description": "Tool or prompt name, or resource URI. Required for info and call; not allowed for list."},
            "args": {"type": ["object", "string"], "description": "Only for call: the arguments, as an object or a JSON string of one."},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "description": "Only for list: at most this many items (default 100)."},
            "offset": {"type": "integer", "minimum": 0, "description": "Only for list: skip this many items (default 0)."},
            "filter_server": {"type": "string", "description": "Only for list: keep items whose name (URI for resources) starts with this prefix, e.g. \"browser_\", \"cdp:Network.\" or \"browser://tabs/\"."}
        },
        "required": ["action", "type"]
    }) else {
        unreachable!()
    };
    schema
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_json(v: Value) -> Result<ProxyRequest, String> {
        parse(v.as_object().unwrap())
    }

    #[test]
    fn valid_requests_get_defaults() {
        let list = parse_json(json!({"action": "list", "type": "tool"})).unwrap();
        assert_eq!((list.limit, list.offset, list.path), (100, 0, None));
        let call = parse_json(
            json!({"action": "call", "type": "tool", "path": "t", "args": "{\"a\": 5}"}),
        )
        .unwrap();
        assert_eq!(call.args["a"], 5);
        let alias = parse_json(json!({"action": "info", "a_type": "prompt", "path": "p"})).unwrap();
        assert_eq!(alias.kind, Kind::Prompt);
        let paged = parse_json(json!({"action": "list", "type": "resource", "limit": 1000, "offset": 3, "filter_server": "browser://"})).unwrap();
        assert_eq!((paged.limit, paged.offset), (1000, 3));
    }

    #[test]
    fn every_bad_combination_is_refused_with_a_reason() {
        let cases = [
            (json!({"type": "tool"}), "\"action\" is required"),
            (
                json!({"action": "run", "type": "tool"}),
                "unknown action \"run\"",
            ),
            (json!({"action": 3, "type": "tool"}), "unknown action 3"),
            (json!({"action": "list"}), "\"type\" is required"),
            (
                json!({"action": "list", "type": "widget"}),
                "unknown type \"widget\"",
            ),
            (
                json!({"action": "list", "type": "tool", "a_type": "tool"}),
                "give \"type\" once",
            ),
            (
                json!({"action": "list", "type": "tool", "path": "x"}),
                "not allowed for action list",
            ),
            (
                json!({"action": "info", "type": "tool"}),
                "required for action info",
            ),
            (json!({"action": "call", "type": "resource"}), "name or URI"),
            (
                json!({"action": "call", "type": "tool", "path": ""}),
                "non-empty string",
            ),
            (
                json!({"action": "list", "type": "tool", "args": {}}),
                "only allowed for action call, not list",
            ),
            (
                json!({"action": "info", "type": "tool", "path": "x", "args": {}}),
                "only allowed for action call, not info",
            ),
            (
                json!({"action": "call", "type": "tool", "path": "x", "args": [1]}),
                "must be an object",
            ),
            (
                json!({"action": "call", "type": "tool", "path": "x", "args": "{oops"}),
                "not valid JSON",
            ),
            (
                json!({"action": "call", "type": "tool", "path": "x", "args": "[1]"}),
                "must hold a JSON object",
            ),
            (
                json!({"action": "list", "type": "tool", "limit": 0}),
                "from 1 to 1000",
            ),
            (
                json!({"action": "list", "type": "tool", "limit": 1001}),
                "from 1 to 1000",
            ),
            (
                json!({"action": "list", "type": "tool", "limit": "5"}),
                "from 1 to 1000",
            ),
            (
                json!({"action": "list", "type": "tool", "offset": -1}),
                "0 or more",
            ),
            (
                json!({"action": "list", "type": "tool", "filter_server": 1}),
                "must be a string",
            ),
            (
                json!({"action": "info", "type": "tool", "path": "x", "limit": 5}),
                "\"limit\" is only allowed for action list",
            ),
            (
                json!({"action": "call", "type": "tool", "path": "x", "offset": 5}),
                "\"offset\" is only allowed for action list",
            ),
            (
                json!({"action": "info", "type": "tool", "path": "x", "filter_server": "b"}),
                "\"filter_server\" is only allowed",
            ),
            (
                json!({"action": "list", "type": "tool", "colour": 1}),
                "unknown parameter \"colour\"",
            ),
        ];
        for (args, expected) in cases {
            let error = parse_json(args.clone()).unwrap_err();
            assert!(error.contains(expected), "{args}: {error}");
        }
    }

    fn meta(block: &ContentBlock) -> Value {
        serde_json::to_value(block).unwrap()["_meta"][META_KEY].clone()
    }

    #[test]
    fn query_results_are_one_json_resource_with_annotations() {
        let list = query_result(
            Action::List,
            Kind::Tool,
            None,
            &json!([{"name": "t"}]),
            Some((250, 0, 100)),
        );
        let wire = serde_json::to_value(&list).unwrap();
        assert_eq!(wire["resource"]["uri"], "proxy:list/tool");
        assert_eq!(wire["resource"]["mimeType"], "application/json");
        assert_eq!(
            meta(&list),
            json!({"proxyAction": "list", "proxyType": "tool", "dataType": "Tool", "pythonType": "Tool", "many": true, "totalCount": 250, "offset": 0, "limit": 100})
        );
        let info = query_result(
            Action::Info,
            Kind::Resource,
            Some("browser://tabs"),
            &json!({}),
            None,
        );
        assert_eq!(meta(&info)["proxyPath"], "browser://tabs");
        assert_eq!(meta(&info)["many"], false);
        assert_eq!(meta(&info)["dataType"], "Resource|ResourceTemplate");
        assert!(meta(&info).get("totalCount").is_none());
    }

    #[test]
    fn text_resources_that_parse_as_json_are_objectified() {
        let contents = vec![
            ResourceContents::text("{ \"a\" : 1 }", "x://json"),
            ResourceContents::text("plain words", "x://text"),
            ResourceContents::blob("AAAA", "x://img").with_mime_type("image/png"),
        ];
        let out = resource_call(contents, "x://json");
        let wire: Vec<Value> = out
            .iter()
            .map(|c| serde_json::to_value(c).unwrap())
            .collect();
        assert_eq!(wire[0]["resource"]["mimeType"], "application/json");
        assert_eq!(wire[0]["resource"]["text"], "{\"a\":1}");
        assert_eq!(wire[0]["_meta"]["proxy"]["contentType"], "text/plain");
        assert_eq!(wire[1]["resource"]["mimeType"], "text/plain");
        assert!(wire[1]["_meta"]["proxy"].get("contentType").is_none());
        assert_eq!(wire[2]["resource"]["blob"], "AAAA");
        assert_eq!(wire[2]["resource"]["mimeType"], "image/png");
        for w in &wire {
            assert_eq!(w["_meta"]["proxy"]["proxyType"], "resource");
            assert_eq!(w["_meta"]["proxy"]["proxyAction"], "call");
        }
    }

    #[test]
    fn pages_filter_by_prefix_then_cut() {
        let items: Vec<(String, Value)> = (0..10)
            .map(|i| {
                (
                    format!("{}{i}", if i % 2 == 0 { "a_" } else { "b_" }),
                    json!(i),
                )
            })
            .collect();
        let request = parse_json(json!({"action": "list", "type": "tool", "limit": 2, "offset": 1, "filter_server": "a_"})).unwrap();
        let (page, total) = page(items, &request);
        assert_eq!(total, 5);
        assert_eq!(page, vec![json!(2), json!(4)]);
    }
}
