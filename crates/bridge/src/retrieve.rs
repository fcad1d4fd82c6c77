//! `retrieve_tools` and `describe_tool`: finding the right capability among the bridge's tools
//! and the whole Chrome DevTools Protocol without listing them all to the model.
//!
//! Every bridge tool and every CDP command is one BM25 document with three weighted fields:
//! the name split into words (the strongest signal), the description, and the parameter names.
//! A query is tokenized the same way and widened with a small table of everyday words for
//! browser and DevTools terms ("go to" → navigate, "wipe" → clear), added at a lower weight so
//! an exact word still wins. Bridge tools get a small boost: when a high-level tool and a raw
//! CDP command fit equally, the tool is the easier one to call.

use rmcp::model::Tool;
use serde::Serialize;
use serde_json::{json, Value};

use super::bm25::{tokenize, Bm25};
use super::catalog::{catalog, CdpCommand};
use super::intent::Access;

/// Weight of the name words, the description and the parameter names.
const NAME_WEIGHT: f32 = 3.0;
const DESCRIPTION_WEIGHT: f32 = 1.0;
const PARAM_WEIGHT: f32 = 0.5;
/// Weight of the words a query is widened with.
const SYNONYM_WEIGHT: f32 = 0.4;
/// How much a bridge tool's score is raised over a CDP command's.
const BRIDGE_BOOST: f32 = 1.25;

/// Everyday words and the catalog words they stand for.
const SYNONYMS: &[(&str, &[&str])] = &[
    ("go", &["navigate"]),
    ("open", &["navigate", "create"]),
    ("visit", &["navigate"]),
    ("url", &["navigate"]),
    ("website", &["page", "navigate"]),
    ("site", &["page", "origin"]),
    ("previous", &["back", "history"]),
    ("picture", &["screenshot", "capture"]),
    ("image", &["screenshot", "capture"]),
    ("photo", &["screenshot", "capture"]),
    ("screen", &["screenshot", "capture"]),
    ("wipe", &["clear", "delete"]),
    ("erase", &["clear", "delete"]),
    ("delete", &["clear", "remove"]),
    ("remove", &["clear", "delete"]),
    ("purge", &["clear", "delete"]),
    ("run", &["evaluate", "execute"]),
    ("execute", &["evaluate", "run"]),
    ("javascript", &["evaluate", "script", "expression"]),
    ("js", &["evaluate", "script", "expression"]),
    ("script", &["evaluate"]),
    ("press", &["click", "key", "dispatch"]),
    ("tap", &["click", "touch"]),
    ("keyboard", &["key", "type", "input"]),
    ("fill", &["type", "text", "input"]),
    ("enter", &["type", "text", "input"]),
    ("write", &["type", "set"]),
    ("read", &["get", "snapshot", "text"]),
    ("show", &["get", "list"]),
    ("see", &["snapshot", "screenshot"]),
    ("look", &["snapshot", "screenshot"]),
    ("content", &["snapshot", "text", "document"]),
    ("text", &["snapshot", "type"]),
    ("html", &["outer", "dom", "document"]),
    ("markup", &["outer", "html", "dom"]),
    ("element", &["node", "selector", "dom"]),
    ("button", &["click", "selector"]),
    ("link", &["click", "navigate"]),
    ("mouse", &["click", "hover", "dispatch"]),
    ("tooltip", &["hover"]),
    ("menu", &["hover", "click"]),
    ("tab", &["tabs", "target"]),
    ("window", &["browser", "target", "bounds"]),
    ("resize", &["bounds", "metrics", "size"]),
    ("viewport", &["device", "metrics", "emulation"]),
    ("phone", &["device", "emulation", "mobile"]),
    ("mobile", &["device", "emulation"]),
    ("slow", &["throttl", "network", "conditions"]),
    ("offline", &["network", "conditions"]),
    ("request", &["network", "fetch"]),
    ("response", &["network", "body"]),
    ("traffic", &["network"]),
    ("http", &["network", "header"]),
    ("header", &["extra", "network"]),
    ("intercept", &["fetch", "request"]),
    ("block", &["blocked", "url"]),
    ("cache", &["cache", "storage"]),
    ("localstorage", &["dom", "storage", "item"]),
    ("storage", &["storage", "data"]),
    ("memory", &["heap", "usage"]),
    ("leak", &["heap", "snapshot"]),
    ("performance", &["metrics", "profiler", "tracing"]),
    ("speed", &["metrics", "performance"]),
    ("profile", &["profiler"]),
    ("trace", &["tracing"]),
    ("log", &["console", "log"]),
    ("console", &["log", "runtime"]),
    ("error", &["exception", "log"]),
    ("break", &["breakpoint", "pause"]),
    ("debug", &["debugger", "breakpoint"]),
    ("stop", &["pause", "stop"]),
    ("continue", &["resume"]),
    ("pdf", &["print"]),
    ("print", &["pdf"]),
    ("style", &["css", "computed"]),
    ("css", &["style"]),
    ("color", &["css", "style"]),
    ("font", &["css", "platform"]),
    ("location", &["geolocation"]),
    ("gps", &["geolocation"]),
    ("timezone", &["timezone", "emulation"]),
    ("language", &["locale"]),
    ("agent", &["user", "agent"]),
    ("dark", &["media", "emulated", "feature"]),
    ("permission", &["grant", "permission"]),
    ("download", &["download", "behavior"]),
    ("file", &["file", "input"]),
    ("upload", &["file", "input"]),
    ("accessibility", &["ax", "accessibility"]),
    ("a11y", &["ax", "accessibility"]),
    ("scroll", &["scroll", "synthesize"]),
    ("zoom", &["scale", "factor"]),
    ("dialog", &["javascript", "dialog"]),
    ("alert", &["javascript", "dialog"]),
    ("popup", &["javascript", "dialog"]),
    ("reload", &["reload"]),
    ("refresh", &["reload"]),
    ("login", &["cookie", "credential", "type"]),
    ("session", &["cookie", "storage"]),
    ("connected", &["status", "list"]),
    ("connection", &["status", "relay"]),
    ("browsers", &["list", "browser"]),
    ("switch", &["connect", "select"]),
    ("choose", &["connect", "select"]),
    ("pick", &["connect", "select"]),
    ("worker", &["service", "worker"]),
    ("coverage", &["coverage", "profiler"]),
    ("certificate", &["security", "certificate"]),
    ("https", &["security"]),
    ("animation", &["animation"]),
    ("frame", &["frame", "tree"]),
    ("iframe", &["frame", "tree"]),
    ("structure", &["tree", "document"]),
    ("title", &["snapshot", "title"]),
];

/// One thing `retrieve_tools` can find.
#[derive(Debug, Clone)]
pub struct Entry {
    /// `browser_click` or `cdp:Page.navigate`.
    pub name: String,
    pub signature: String,
    pub description: String,
    pub access: Access,
    /// `None` for bridge tools.
    pub cdp: Option<&'static CdpCommand>,
}

/// One ranked answer.
#[derive(Debug, Clone, Serialize)]
pub struct Hit {
    pub name: String,
    pub signature: String,
    /// Rounded to three decimals (f64, so JSON shows 16.771, not 16.770999908447266).
    pub score: f64,
    pub call_with: &'static str,
    pub description: String,
}

/// The search index over bridge tools and CDP commands.
#[derive(Debug)]
pub struct ToolIndex {
    pub entries: Vec<Entry>,
    bm25: Bm25,
    /// How many of `entries`, from the front, are bridge tools.
    bridge_count: usize,
}

impl ToolIndex {
    pub fn new(bridge_tools: &[Tool]) -> ToolIndex {
        let mut entries = Vec::new();
        let mut docs = Vec::new();
        for tool in bridge_tools {
            let params = property_names(&tool.input_schema);
            let description = tool.description.as_deref().unwrap_or_default().to_owned();
            let title = tool.title.clone().unwrap_or_default();
            docs.push(vec![
                (format!("{} {title}", tool.name), NAME_WEIGHT),
                (description.clone(), DESCRIPTION_WEIGHT),
                (params.join(" "), PARAM_WEIGHT),
            ]);
            entries.push(Entry {
                name: tool.name.to_string(),
                signature: tool_signature(tool),
                description,
                access: Access::from_annotations(tool.annotations.as_ref()),
                cdp: None,
            });
        }
        let bridge_count = entries.len();
        for command in &catalog().commands {
            let params: Vec<&str> = command.params.iter().map(|p| p.name.as_str()).collect();
            docs.push(vec![
                (command.method.clone(), NAME_WEIGHT),
                (command.description.clone(), DESCRIPTION_WEIGHT),
                (params.join(" "), PARAM_WEIGHT),
            ]);
            entries.push(Entry {
                name: command.tool_name(),
                signature: command.signature(),
                description: command.description.clone(),
                access: command.access,
                cdp: Some(command),
            });
        }
        ToolIndex {
            bm25: Bm25::new(&docs),
            entries,
            bridge_count,
        }
    }

    /// The best `limit` entries for `query`, best first; entries that match nothing are left out.
    pub fn search(&self, query: &str, limit: usize) -> Vec<Hit> {
        let terms = expand(query);
        let mut scored: Vec<(usize, f32)> = self
            .bm25
            .scores(&terms)
            .into_iter()
            .enumerate()
            .filter(|(_, s)| *s > 0.0)
            .map(|(i, s)| {
                let boost = if i < self.bridge_count {
                    BRIDGE_BOOST
                } else if self.entries[i].cdp.is_some_and(|c| c.deprecated) {
                    0.8
                } else {
                    1.0
                };
                (i, s * boost)
            })
            .collect();
        scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        scored
            .into_iter()
            .take(limit)
            .map(|(i, score)| {
                let e = &self.entries[i];
                Hit {
                    name: e.name.clone(),
                    signature: e.signature.clone(),
                    score: (f64::from(score) * 1000.0).round() / 1000.0,
                    call_with: e.access.call_with(),
                    description: e.description.clone(),
                }
            })
            .collect()
    }

    pub fn get(&self, name: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.name == name)
    }
}

/// Query terms: its own words at weight 1, their everyday equivalents at a lower weight.
fn expand(query: &str) -> Vec<(String, f32)> {
    let mut terms: Vec<(String, f32)> = Vec::new();
    let mut add = |term: String, weight: f32| match terms.iter_mut().find(|(t, _)| *t == term) {
        Some((_, w)) => *w = w.max(weight),
        None => terms.push((term, weight)),
    };
    for word in query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        for term in tokenize(word) {
            add(term, 1.0);
        }
        let lower = word.to_lowercase();
        let stemmed = tokenize(&lower);
        if let Some((_, extra)) = SYNONYMS.iter().find(|(w, _)| {
            *w == lower
                || tokenize(w)
                    .first()
                    .is_some_and(|t| stemmed.first() == Some(t))
        }) {
            for e in *extra {
                for term in tokenize(e) {
                    add(term, SYNONYM_WEIGHT);
                }
            }
        }
    }
    terms
}

fn property_names(schema: &serde_json::Map<String, Value>) -> Vec<String> {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}

/// `browser_click(selector?: string, x?: number, …)`.
pub(crate) fn tool_signature(tool: &Tool) -> String {
    let required: Vec<&str> = tool
        .input_schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let params: Vec<String> = tool
        .input_schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|props| {
            props
                .iter()
                .map(|(name, schema)| {
                    let q = if required.contains(&name.as_str()) {
                        ""
                    } else {
                        "?"
                    };
                    let kind = match schema.get("enum").and_then(Value::as_array) {
                        Some(values) => values
                            .iter()
                            .map(Value::to_string)
                            .collect::<Vec<_>>()
                            .join("|"),
                        None => schema["type"].as_str().unwrap_or("any").to_owned(),
                    };
                    format!("{name}{q}: {kind}")
                })
                .collect()
        })
        .unwrap_or_default();
    format!("{}({})", tool.name, params.join(", "))
}

/// `describe_tool`'s answer for a CDP command.
pub(crate) fn describe_cdp(command: &CdpCommand) -> Value {
    json!({
        "name": command.tool_name(),
        "method": command.method,
        "description": command.description,
        "domain": command.domain,
        "domainDescription": command.domain_description,
        "inputSchema": command.input_schema(),
        "returns": command.returns,
        "access": command.access,
        "call_with": command.access.call_with(),
        "experimental": command.experimental,
        "deprecated": command.deprecated,
        "signature": command.signature(),
    })
}

/// `describe_tool`'s answer for a bridge tool.
pub(crate) fn describe_tool(tool: &Tool) -> Value {
    let access = Access::from_annotations(tool.annotations.as_ref());
    json!({
        "name": tool.name,
        "title": tool.title,
        "description": tool.description,
        "inputSchema": tool.input_schema,
        "annotations": tool.annotations,
        "access": access,
        "call_with": access.call_with(),
        "signature": tool_signature(tool),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index() -> ToolIndex {
        ToolIndex::new(&super::super::tools::definitions())
    }

    #[test]
    fn the_index_holds_bridge_tools_and_cdp_commands() {
        let index = index();
        assert_eq!(index.bridge_count, 34);
        assert!(index.entries.len() > 600);
        assert!(index.get("cdp:Page.navigate").is_some());
        assert!(index.get("browser_click").is_some());
        assert!(index.get("browser_select_option").is_some());
        assert!(index.get("browser_console_messages").is_some());
    }

    #[test]
    fn hits_carry_signature_score_and_variant() {
        let hits = index().search("delete all cookies for a site", 5);
        let top = &hits[0];
        assert!(
            top.name.contains("Cookies") || top.name.contains("clear"),
            "{hits:?}"
        );
        assert_eq!(top.call_with, "call_tool_destructive");
        assert!(top.signature.starts_with(&top.name), "{top:?}");
        assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
    }

    #[test]
    fn a_pages_own_tools_are_found_by_intent() {
        let hits = index().search("list the tools the page registers itself", 5);
        assert_eq!(hits[0].name, "browser_page_tools", "{hits:?}");
        assert_eq!(hits[0].call_with, "call_tool_read");
        let hits = index().search("call a page's tool with arguments", 5);
        let call = hits
            .iter()
            .find(|h| h.name == "browser_call_page_tool")
            .unwrap_or_else(|| panic!("{hits:?}"));
        assert_eq!(call.call_with, "call_tool_destructive");
    }

    #[test]
    fn a_query_of_stop_words_finds_nothing() {
        assert!(index().search("the of and", 5).is_empty());
    }

    #[test]
    fn synonyms_widen_at_a_lower_weight() {
        let terms = expand("wipe cookies");
        assert!(terms.contains(&("wip".to_owned(), 1.0)), "{terms:?}");
        assert!(
            terms.contains(&("clear".to_owned(), SYNONYM_WEIGHT)),
            "{terms:?}"
        );
    }
}
