//! `retrieve_tools` and `describe_tool`: finding the right capability among the bridge's tools
//! and the whole Chrome DevTools Protocol without listing them all to the model.
//!
//! Every bridge tool and every CDP command is one BM25 document with three weighted fields:
//! the name split into words (the strongest signal), the description, and the parameter names.
//! A query is tokenized the same way and widened with a small table of everyday words for
//! browser and DevTools terms ("go to" → navigate, "wipe" → clear), added at a lower weight so
//! an exact word still wins. Bridge tools get a small boost: when a high-level tool and a raw
//! CDP command fit equally, the tool is the easier one to call.

use std::collections::HashMap;
use std::sync::Arc;

use rmcp::model::Tool;
use serde::Serialize;
use serde_json::{json, Value};

use super::bm25::{split_camel, tokenize, Bm25};
use super::catalog::{catalog, CdpCommand};
use super::embed::{EmbedError, Embedder};
use super::intent::Access;

/// Weight of the name words, the description and the parameter names.
const NAME_WEIGHT: f32 = 3.0;
const DESCRIPTION_WEIGHT: f32 = 1.0;
const PARAM_WEIGHT: f32 = 0.5;
/// Weight of the words a query is widened with.
const SYNONYM_WEIGHT: f32 = 0.4;
/// How much a bridge tool's score is raised over a CDP command's.
const BRIDGE_BOOST: f32 = 1.25;
/// The same preference in the model's ranking, added to a cosine similarity.
const SEMANTIC_BRIDGE_BONUS: f32 = 0.03;
/// How many of the model's nearest entries take part in the fusion.
const SEMANTIC_DEPTH: usize = 100;
/// Prefix of a page's own tools (WebMCP) in `retrieve_tools`' answers.
pub(crate) const PAGE_PREFIX: &str = "page:";
/// A page tool hit's description (the page's own is not repeated, see `set_page_tools`).
const PAGE_TOOL_DESCRIPTION: &str =
    "A tool the page registers itself (WebMCP); browser_page_tools \
shows its description and schema, browser_call_page_tool calls it.";

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
    /// `browser_click`, `cdp:Page.navigate` or `page:add_to_cart`.
    pub name: String,
    pub signature: String,
    pub description: String,
    pub access: Access,
    /// `None` for bridge tools and page tools.
    pub cdp: Option<&'static CdpCommand>,
    /// What the model embeds for this entry (see [`semantic_text`]).
    semantic_text: String,
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

/// A tool a page registers itself (WebMCP), as the bridge last saw it listed.
#[derive(Debug, Clone, PartialEq)]
pub struct PageTool {
    pub name: String,
    pub description: String,
    /// Its input schema's property names.
    pub params: Vec<String>,
}

/// How BM25's ranking and the model's are fused (reciprocal rank fusion, see [`fuse`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fusion {
    /// The damping constant; smaller makes the first ranks count more. The method's paper
    /// (Cormack, Clarke and Büttcher, 2009) uses 60; 5 did better here on the golden and the
    /// tuning sets (docs/BENCHMARKS.md): a tool list is short, only the first few ranks matter.
    pub k: f32,
    /// Weight of an entry's BM25 rank.
    pub lexical: f32,
    /// Weight of an entry's rank by the model.
    pub semantic: f32,
}

impl Default for Fusion {
    fn default() -> Fusion {
        Fusion {
            k: 5.0,
            lexical: 1.0,
            semantic: 1.0,
        }
    }
}

/// The meaning-based half of the index: one unit vector per entry, from a shared model.
#[derive(Debug)]
struct Semantic {
    embedder: Arc<Embedder>,
    /// `vectors[i]` belongs to `entries[i]`.
    vectors: Vec<Arc<[f32]>>,
}

/// The search index over bridge tools, CDP commands and a page's own tools.
#[derive(Debug)]
pub struct ToolIndex {
    pub entries: Vec<Entry>,
    /// The BM25 fields of each entry, kept to rebuild the BM25 statistics when page tools come
    /// and go (their document frequencies change every entry's score).
    docs: Vec<Vec<(String, f32)>>,
    bm25: Bm25,
    /// How many of `entries`, from the front, are bridge tools.
    bridge_count: usize,
    /// How many of `entries`, from the back, are page tools.
    page_count: usize,
    /// With `--embedding-model`, once the vectors are ready.
    semantic: Option<Semantic>,
    fusion: Fusion,
}

impl ToolIndex {
    /// A lexical (BM25) index; [`ToolIndex::attach`] adds the model.
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
                semantic_text: semantic_text(&tool.name, &title, &description),
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
                semantic_text: semantic_text(&command.method, "", &command.description),
                description: command.description.clone(),
                access: command.access,
                cdp: Some(command),
            });
        }
        ToolIndex {
            bm25: Bm25::new(&docs),
            docs,
            entries,
            bridge_count,
            page_count: 0,
            semantic: None,
            fusion: Fusion::default(),
        }
    }

    /// Both halves at once: blocks while the model embeds every entry not in its cache.
    pub fn with_embedder(
        bridge_tools: &[Tool],
        embedder: Arc<Embedder>,
    ) -> Result<ToolIndex, EmbedError> {
        let mut index = ToolIndex::new(bridge_tools);
        index.attach(embedder)?;
        Ok(index)
    }

    /// What the model embeds, one text per entry: warming an [`Embedder`]'s cache with these
    /// (without holding the index) makes a later [`ToolIndex::attach`] instant.
    pub fn semantic_texts(&self) -> Vec<String> {
        self.entries
            .iter()
            .map(|e| e.semantic_text.clone())
            .collect()
    }

    /// Adds the meaning-based ranking; from then on [`ToolIndex::search`] is hybrid.
    pub fn attach(&mut self, embedder: Arc<Embedder>) -> Result<(), EmbedError> {
        let vectors = embedder.documents(&self.semantic_texts())?;
        self.semantic = Some(Semantic { embedder, vectors });
        Ok(())
    }

    /// Other fusion weights than the shipped ones (for the benchmark that chose them).
    pub fn set_fusion(&mut self, fusion: Fusion) {
        self.fusion = fusion;
    }

    /// Whether searches use the model.
    pub fn is_hybrid(&self) -> bool {
        self.semantic.is_some()
    }

    /// Replaces the page tools with `tools` (a page's latest listing; empty when it has none):
    /// BM25 is rebuilt (cheap), and only texts the model has not seen before are embedded.
    /// Returns whether anything changed.
    pub fn set_page_tools(&mut self, tools: &[PageTool]) -> Result<bool, EmbedError> {
        let mut current: Vec<PageTool> = Vec::new();
        let first_page = self.entries.len() - self.page_count;
        for (entry, doc) in self.entries[first_page..]
            .iter()
            .zip(&self.docs[first_page..])
        {
            current.push(PageTool {
                name: entry.name[PAGE_PREFIX.len()..].to_owned(),
                description: doc[1].0.clone(),
                params: doc[2].0.split_whitespace().map(str::to_owned).collect(),
            });
        }
        if current == tools {
            return Ok(false);
        }
        // Embed first: on failure the index is left as it was.
        let texts: Vec<String> = tools
            .iter()
            .map(|t| semantic_text(&t.name, "", &t.description))
            .collect();
        let vectors = match &self.semantic {
            Some(s) => Some(s.embedder.documents(&texts)?),
            None => None,
        };
        self.entries.truncate(first_page);
        self.docs.truncate(first_page);
        for (tool, text) in tools.iter().zip(texts) {
            self.docs.push(vec![
                (tool.name.clone(), NAME_WEIGHT),
                (tool.description.clone(), DESCRIPTION_WEIGHT),
                (tool.params.join(" "), PARAM_WEIGHT),
            ]);
            self.entries.push(Entry {
                name: format!("{PAGE_PREFIX}{}", tool.name),
                signature: format!(
                    "browser_call_page_tool(name: {:?}, arguments: object)",
                    tool.name
                ),
                // The page's own words are untrusted: they rank the tool but are not repeated
                // to the model here (browser_page_tools shows them, fenced).
                description: PAGE_TOOL_DESCRIPTION.to_owned(),
                access: Access::Destructive,
                cdp: None,
                semantic_text: text,
            });
        }
        self.page_count = tools.len();
        self.bm25 = Bm25::new(&self.docs);
        if let (Some(semantic), Some(vectors)) = (&mut self.semantic, vectors) {
            semantic.vectors.truncate(first_page);
            semantic.vectors.extend(vectors);
        }
        Ok(true)
    }

    /// The best `limit` entries for `query`, best first. A query of stop words alone finds
    /// nothing; otherwise, without a model, entries that share no word with the query are left
    /// out, and with one, BM25's ranking and the model's are fused (see [`fuse`]).
    pub fn search(&self, query: &str, limit: usize) -> Vec<Hit> {
        let terms = expand(query);
        if terms.is_empty() {
            return Vec::new();
        }
        let lexical = self.lexical(&terms);
        let ranked = match &self.semantic {
            None => lexical,
            Some(semantic) => match semantic.embedder.query(query) {
                Ok(q) => fuse(&lexical, &self.semantic_ranking(semantic, &q), self.fusion),
                Err(e) => {
                    tracing::warn!(error = %e, "embedding the query failed; BM25 alone");
                    lexical
                }
            },
        };
        ranked
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

    /// The BM25 ranking alone, even when a model is attached (for the benchmark's comparison).
    pub fn search_lexical(&self, query: &str, limit: usize) -> Vec<String> {
        self.lexical(&expand(query))
            .into_iter()
            .take(limit)
            .map(|(i, _)| self.entries[i].name.clone())
            .collect()
    }

    /// The model's ranking alone (for the benchmark's comparison); empty without a model.
    pub fn search_semantic(&self, query: &str, limit: usize) -> Vec<String> {
        let Some(semantic) = &self.semantic else {
            return Vec::new();
        };
        let Ok(q) = semantic.embedder.query(query) else {
            return Vec::new();
        };
        self.semantic_ranking(semantic, &q)
            .into_iter()
            .take(limit)
            .map(|(i, _)| self.entries[i].name.clone())
            .collect()
    }

    /// Entries sharing a term with the query, best first, with their boosted BM25 scores.
    fn lexical(&self, terms: &[(String, f32)]) -> Vec<(usize, f32)> {
        let mut scored: Vec<(usize, f32)> = self
            .bm25
            .scores(terms)
            .into_iter()
            .enumerate()
            .filter(|(_, s)| *s > 0.0)
            .map(|(i, s)| (i, s * self.boost(i)))
            .collect();
        scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        scored
    }

    /// The model's ranking: the [`SEMANTIC_DEPTH`] entries nearest the query, best first.
    fn semantic_ranking(&self, semantic: &Semantic, query: &[f32]) -> Vec<(usize, f32)> {
        let mut scored: Vec<(usize, f32)> = semantic
            .vectors
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let cosine: f32 = v.iter().zip(query).map(|(a, b)| a * b).sum();
                (i, cosine + self.semantic_bonus(i))
            })
            .collect();
        let depth = SEMANTIC_DEPTH.min(scored.len());
        if depth > 0 && depth < scored.len() {
            scored.select_nth_unstable_by(depth - 1, |a, b| b.1.total_cmp(&a.1));
            scored.truncate(depth);
        }
        scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        scored
    }

    /// Bridge tools are easier to call than raw CDP, deprecated commands are a last resort.
    fn boost(&self, i: usize) -> f32 {
        if i < self.bridge_count {
            BRIDGE_BOOST
        } else if self.entries[i].cdp.is_some_and(|c| c.deprecated) {
            0.8
        } else {
            1.0
        }
    }

    /// The same preference on the cosine scale (added, as cosines can be negative).
    fn semantic_bonus(&self, i: usize) -> f32 {
        if i < self.bridge_count {
            SEMANTIC_BRIDGE_BONUS
        } else if self.entries[i].cdp.is_some_and(|c| c.deprecated) {
            -SEMANTIC_BRIDGE_BONUS
        } else {
            0.0
        }
    }

    pub fn get(&self, name: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.name == name)
    }
}

/// Reciprocal rank fusion of two rankings (best first): an entry scores
/// `lexical / (k + rank)` in BM25's list plus `semantic / (k + rank)` in the model's, ranks
/// from 1; the sum is scaled so that first in both lists is 1.0. Ranks, not raw scores, are
/// fused because BM25's scale grows with the query's length while a cosine's does not: no
/// weight would suit both a two-word and a ten-word query.
fn fuse(lexical: &[(usize, f32)], semantic: &[(usize, f32)], fusion: Fusion) -> Vec<(usize, f32)> {
    let mut fused: HashMap<usize, f32> = HashMap::new();
    for (list, weight) in [(lexical, fusion.lexical), (semantic, fusion.semantic)] {
        for (rank, (i, _)) in list.iter().enumerate() {
            *fused.entry(*i).or_default() += weight / (fusion.k + rank as f32 + 1.0);
        }
    }
    let top = (fusion.lexical + fusion.semantic) / (fusion.k + 1.0);
    let mut ranked: Vec<(usize, f32)> = fused.into_iter().map(|(i, s)| (i, s / top)).collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    ranked
}

/// What the model reads for an entry: its name as words, then its title and description
/// (`Page.navigate` → "Page navigate: Navigates current page to the given URL.").
fn semantic_text(name: &str, title: &str, description: &str) -> String {
    let mut words = Vec::new();
    for chunk in name.split(|c: char| !c.is_alphanumeric()) {
        split_camel(chunk, &mut words);
    }
    let mut text = words.join(" ");
    text.push(':');
    for part in [title, description] {
        if !part.is_empty() {
            text.push(' ');
            text.push_str(part.trim());
            if !part.trim_end().ends_with('.') {
                text.push('.');
            }
        }
    }
    text
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

/// `describe_tool`'s answer for a page's own tool: how to reach it, not the page's words
/// (`browser_page_tools` shows those, fenced as untrusted).
pub(crate) fn describe_page_tool(name: &str) -> Value {
    json!({
        "name": format!("{PAGE_PREFIX}{name}"),
        "description": PAGE_TOOL_DESCRIPTION,
        "access": Access::Destructive,
        "call_with": Access::Destructive.call_with(),
        "signature": format!("browser_call_page_tool(name: {name:?}, arguments: object)"),
        "how_to_call": "call_tool_destructive with this name and the tool's own arguments as \
                        args, or browser_call_page_tool; browser_page_tools gives its schema.",
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
        assert_eq!(index.bridge_count, 35);
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
    fn fusion_rewards_agreement_and_puts_first_in_both_at_one() {
        let lexical = [(1, 9.0), (2, 5.0), (3, 1.0)];
        let semantic = [(1, 0.9), (3, 0.8), (4, 0.7)];
        let fused = fuse(&lexical, &semantic, Fusion::default());
        assert_eq!(fused[0], (1, 1.0));
        // 3 is in both lists; 2 and 4 in one each.
        assert_eq!(fused[1].0, 3, "{fused:?}");
        assert_eq!(fused.len(), 4);
        assert!(fused.windows(2).all(|w| w[0].1 >= w[1].1));
    }

    #[test]
    fn the_model_reads_names_as_words_then_the_description() {
        assert_eq!(
            semantic_text(
                "Page.navigate",
                "",
                "Navigates current page to the given URL."
            ),
            "Page navigate: Navigates current page to the given URL."
        );
        assert_eq!(
            semantic_text("browser_resize", "Resize the viewport", "Set the size"),
            "browser resize: Resize the viewport. Set the size."
        );
    }

    #[test]
    fn page_tools_come_and_go_and_their_words_are_not_repeated() {
        let mut index = index();
        let n = index.entries.len();
        let cart = PageTool {
            name: "add_to_cart".into(),
            description: "Adds a product to the shopping cart.".into(),
            params: vec!["sku".into()],
        };
        assert!(index.set_page_tools(std::slice::from_ref(&cart)).unwrap());
        assert_eq!(index.entries.len(), n + 1);
        let hits = index.search("add a product to the cart", 5);
        assert_eq!(hits[0].name, "page:add_to_cart", "{hits:?}");
        assert_eq!(hits[0].call_with, "call_tool_destructive");
        assert!(!hits[0].description.contains("shopping"), "{hits:?}");
        assert!(!index.set_page_tools(&[cart]).unwrap(), "same listing");
        assert!(index.set_page_tools(&[]).unwrap());
        assert_eq!(index.entries.len(), n);
        assert!(index
            .search("shopping cart", 5)
            .iter()
            .all(|h| !h.name.starts_with(PAGE_PREFIX)));
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
