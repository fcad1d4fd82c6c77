//! The Chrome DevTools Protocol command catalog: every domain and command with its
//! description, parameters, return names and access class.
//!
//! The data is `data/cdp_catalog.json`, generated from the `devtools-protocol` npm package by
//! `scripts/gen-cdp-catalog.mjs` (which documents how `access` is derived) and compiled in, so
//! the bridge needs no network and no browser to search or describe a command.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::intent::Access;

/// The generated catalog, compiled in.
const CATALOG_JSON: &str = include_str!("data/cdp_catalog.json");

/// Prefix of CDP commands in `retrieve_tools`, `describe_tool` and `call_tool_*` names.
pub(crate) const CDP_PREFIX: &str = "cdp:";

#[derive(Debug, Deserialize)]
struct RawCatalog {
    source: String,
    rule: String,
    domains: Vec<RawDomain>,
}

#[derive(Debug, Deserialize)]
struct RawDomain {
    domain: String,
    #[serde(default)]
    description: Option<String>,
    commands: Vec<RawCommand>,
}

#[derive(Debug, Deserialize)]
struct RawCommand {
    name: String,
    access: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    params: Vec<CdpParam>,
    #[serde(default)]
    returns: Vec<String>,
    #[serde(default)]
    experimental: bool,
    #[serde(default)]
    deprecated: bool,
}

/// One parameter of a command.
#[derive(Debug, Clone, Deserialize)]
pub struct CdpParam {
    pub name: String,
    /// A JSON type, a `Domain.Type` reference, `array<…>`, or an enum as `"a"|"b"`.
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub optional: bool,
    #[serde(default)]
    pub description: Option<String>,
}

/// One command, e.g. `Page.navigate`.
#[derive(Debug, Clone)]
pub struct CdpCommand {
    /// `Domain.command`, the CDP method name.
    pub method: String,
    pub domain: String,
    pub description: String,
    pub domain_description: String,
    pub params: Vec<CdpParam>,
    pub returns: Vec<String>,
    pub access: Access,
    pub experimental: bool,
    pub deprecated: bool,
}

impl CdpCommand {
    /// The name the bridge's retrieval tools use: `cdp:Page.navigate`.
    pub fn tool_name(&self) -> String {
        format!("{CDP_PREFIX}{}", self.method)
    }

    /// `cdp:Page.navigate(url: string, referrer?: string, …) -> frameId, loaderId`.
    pub fn signature(&self) -> String {
        let params: Vec<String> = self
            .params
            .iter()
            .map(|p| {
                let q = if p.optional { "?" } else { "" };
                format!("{}{q}: {}", p.name, p.kind)
            })
            .collect();
        let mut signature = format!("{}({})", self.tool_name(), params.join(", "));
        if !self.returns.is_empty() {
            signature.push_str(" -> ");
            signature.push_str(&self.returns.join(", "));
        }
        signature
    }

    /// A JSON schema of the parameters. Referenced CDP types are described, not expanded.
    pub fn input_schema(&self) -> Map<String, Value> {
        let mut properties = Map::new();
        let mut required = Vec::new();
        for p in &self.params {
            let mut schema = match p.kind.as_str() {
                "string" | "integer" | "number" | "boolean" | "object" => json!({"type": p.kind}),
                "any" => json!({}),
                kind if kind.starts_with("array<") => json!({"type": "array"}),
                kind if kind.starts_with('"') => {
                    let values: Vec<Value> = kind
                        .split('|')
                        .filter_map(|v| serde_json::from_str(v).ok())
                        .collect();
                    json!({"type": "string", "enum": values})
                }
                _ => json!({}),
            };
            let mut description = p.description.clone().unwrap_or_default();
            if !matches!(
                p.kind.as_str(),
                "string" | "integer" | "number" | "boolean" | "object" | "any"
            ) && !p.kind.starts_with('"')
            {
                description = format!("({}) {description}", p.kind).trim().to_owned();
            }
            if !description.is_empty() {
                schema["description"] = json!(description);
            }
            properties.insert(p.name.clone(), schema);
            if !p.optional {
                required.push(json!(p.name));
            }
        }
        let mut schema = Map::new();
        schema.insert("type".into(), json!("object"));
        schema.insert("properties".into(), Value::Object(properties));
        if !required.is_empty() {
            schema.insert("required".into(), Value::Array(required));
        }
        schema
    }
}

/// The whole catalog, indexed by method.
#[derive(Debug)]
pub struct Catalog {
    /// `devtools-protocol@<version>`.
    pub source: String,
    /// How `access` was derived, as the generator wrote it.
    pub rule: String,
    pub commands: Vec<CdpCommand>,
    by_method: HashMap<String, usize>,
}

impl Catalog {
    /// A command by `Domain.method` or `cdp:Domain.method`.
    pub fn get(&self, name: &str) -> Option<&CdpCommand> {
        let method = name.strip_prefix(CDP_PREFIX).unwrap_or(name);
        self.by_method.get(method).map(|&i| &self.commands[i])
    }
}

/// The catalog, parsed on first use.
pub fn catalog() -> &'static Catalog {
    static CATALOG: OnceLock<Catalog> = OnceLock::new();
    CATALOG.get_or_init(|| {
        let raw: RawCatalog =
            serde_json::from_str(CATALOG_JSON).expect("the compiled-in CDP catalog is valid");
        let mut commands = Vec::new();
        for domain in raw.domains {
            for c in domain.commands {
                commands.push(CdpCommand {
                    method: format!("{}.{}", domain.domain, c.name),
                    domain: domain.domain.clone(),
                    description: c.description.unwrap_or_default(),
                    domain_description: domain.description.clone().unwrap_or_default(),
                    params: c.params,
                    returns: c.returns,
                    access: Access::parse(&c.access).unwrap_or(Access::Destructive),
                    experimental: c.experimental,
                    deprecated: c.deprecated,
                });
            }
        }
        let by_method = commands
            .iter()
            .enumerate()
            .map(|(i, c)| (c.method.clone(), i))
            .collect();
        Catalog {
            source: raw.source,
            rule: raw.rule,
            commands,
            by_method,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_catalog_holds_every_domain_with_access_classes() {
        let c = catalog();
        assert!(c.commands.len() > 600, "{}", c.commands.len());
        assert!(c.source.starts_with("devtools-protocol@"));
        assert_eq!(c.get("DOM.getDocument").unwrap().access, Access::Read);
        assert_eq!(c.get("cdp:Page.navigate").unwrap().access, Access::Write);
        assert_eq!(
            c.get("Storage.clearDataForOrigin").unwrap().access,
            Access::Destructive
        );
        assert_eq!(
            c.get("Runtime.evaluate").unwrap().access,
            Access::Destructive
        );
        assert!(c.get("Page.nope").is_none());
    }

    #[test]
    fn signatures_and_schemas_come_from_the_parameters() {
        let navigate = catalog().get("Page.navigate").unwrap();
        let signature = navigate.signature();
        assert!(
            signature.starts_with("cdp:Page.navigate(url: string, referrer?: string"),
            "{signature}"
        );
        assert!(signature.contains("-> frameId"), "{signature}");
        let schema = navigate.input_schema();
        assert_eq!(schema["required"], json!(["url"]));
        assert_eq!(schema["properties"]["url"]["type"], "string");
    }
}
