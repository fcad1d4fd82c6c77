//! Intent-checked calls: `call_tool_read`, `call_tool_write` and `call_tool_destructive`.
//!
//! The model says what kind of operation it means (the variant) and the bridge checks that
//! against what the target is known to do (its access class). Two keys must agree, so a model
//! cannot reach a destructive command through the read door by mistake, and an audit log can
//! tell a deliberate destructive call from an accidental one.
//!
//! The variants are ordered read < write < destructive, and a call is allowed when the variant
//! is at least the target's class: a read-only target may be called through any variant, a
//! writing one through write or destructive, a destructive one only through destructive.
//! Targets without annotations count as destructive (the MCP default of `destructiveHint`).

use rmcp::model::{JsonObject, ToolAnnotations};
use serde::Serialize;
use serde_json::Value;

/// What a target does, from its annotations or the CDP catalog.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Access {
    Read,
    Write,
    Destructive,
}

impl Access {
    /// `readOnlyHint: true` reads; otherwise `destructiveHint` decides, and a missing one
    /// means destructive, as the MCP schema defines its default.
    pub fn from_annotations(annotations: Option<&ToolAnnotations>) -> Access {
        let Some(a) = annotations else {
            return Access::Destructive;
        };
        if a.read_only_hint == Some(true) {
            Access::Read
        } else if a.destructive_hint == Some(false) {
            Access::Write
        } else {
            Access::Destructive
        }
    }

    pub fn parse(text: &str) -> Option<Access> {
        match text {
            "read" => Some(Access::Read),
            "write" => Some(Access::Write),
            "destructive" => Some(Access::Destructive),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Access::Read => "read",
            Access::Write => "write",
            Access::Destructive => "destructive",
        }
    }

    /// The `call_tool_*` tool that fits a target of this class.
    pub fn call_with(self) -> &'static str {
        match self {
            Access::Read => "call_tool_read",
            Access::Write => "call_tool_write",
            Access::Destructive => "call_tool_destructive",
        }
    }

    /// The variant a `call_tool_*` tool name stands for.
    pub fn of_call_tool(name: &str) -> Option<Access> {
        Access::parse(name.strip_prefix("call_tool_")?)
    }
}

/// Checks that `variant` may call a target of class `target`; the refusal names the variant
/// to use instead.
pub(crate) fn check(variant: Access, target: Access, name: &str) -> Result<(), String> {
    if variant >= target {
        return Ok(());
    }
    let why = match target {
        Access::Destructive => "is destructive (or not annotated as safe)",
        Access::Write => "changes state",
        Access::Read => unreachable!("every variant may call a read-only target"),
    };
    Err(format!(
        "refused: {name} {why}, so {} may not call it; use {} if that is really what you mean",
        variant.call_with(),
        target.call_with()
    ))
}

/// The declared intent that goes to the audit log.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub(crate) struct Intent {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_sensitivity: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A parsed `call_tool_*` request.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct IntentCall {
    pub name: String,
    pub args: JsonObject,
    pub intent: Intent,
}

const SENSITIVITIES: [&str; 4] = ["public", "internal", "private", "unknown"];
const KEYS: [&str; 6] = [
    "name",
    "args",
    "args_json",
    "intent",
    "intent_data_sensitivity",
    "intent_reason",
];

/// Reads `{name, args | args_json, intent_data_sensitivity?, intent_reason?}`, also accepting
/// the nested `intent {operation_type, data_sensitivity, reason}` of mcpproxy.
pub(crate) fn parse(variant: Access, args: &JsonObject) -> Result<IntentCall, String> {
    let tool = variant.call_with();
    if let Some(unknown) = args.keys().find(|k| !KEYS.contains(&k.as_str())) {
        return Err(format!(
            "{tool}: unknown parameter \"{unknown}\"; it takes name, args (object) or args_json \
             (string), intent_data_sensitivity, intent_reason, or intent {{operation_type, \
             data_sensitivity, reason}}"
        ));
    }
    let name = args
        .get("name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .ok_or_else(|| {
            format!("{tool}: \"name\" (a tool name from retrieve_tools, e.g. browser_snapshot or cdp:DOM.getDocument) is required")
        })?
        .to_owned();
    let call_args = match (present(args, "args"), present(args, "args_json")) {
        (Some(_), Some(_)) => {
            return Err(format!(
                "{tool}: give the arguments once, as \"args\" (an object) or \"args_json\" (a JSON string), not both"
            ))
        }
        (Some(Value::Object(o)), None) => o.clone(),
        (Some(Value::String(s)), None) => json_object(tool, "args", s)?,
        (Some(_), None) => return Err(format!("{tool}: \"args\" must be an object")),
        (None, Some(Value::String(s))) => json_object(tool, "args_json", s)?,
        (None, Some(_)) => {
            return Err(format!(
                "{tool}: \"args_json\" must be a string holding a JSON object"
            ))
        }
        (None, None) => JsonObject::new(),
    };
    let mut intent = Intent {
        data_sensitivity: flat_string(tool, args, "intent_data_sensitivity")?,
        reason: flat_string(tool, args, "intent_reason")?,
    };
    match present(args, "intent") {
        None => {}
        Some(Value::Object(nested)) => {
            if let Some(op) = nested.get("operation_type").filter(|v| !v.is_null()) {
                let op = op.as_str().and_then(Access::parse).ok_or_else(|| {
                    format!("{tool}: intent.operation_type must be read, write or destructive")
                })?;
                if op != variant {
                    return Err(format!(
                        "{tool}: intent.operation_type is \"{}\" but this is {tool}; call {} \
                         instead, or fix the intent",
                        op.as_str(),
                        op.call_with()
                    ));
                }
            }
            for (key, slot) in [
                ("data_sensitivity", &mut intent.data_sensitivity),
                ("reason", &mut intent.reason),
            ] {
                let Some(value) = nested.get(key).filter(|v| !v.is_null()) else {
                    continue;
                };
                let value = value
                    .as_str()
                    .ok_or_else(|| format!("{tool}: intent.{key} must be a string"))?;
                match slot {
                    Some(flat) if flat != value => {
                        return Err(format!(
                            "{tool}: intent.{key} and intent_{key} disagree; give one of them"
                        ))
                    }
                    _ => *slot = Some(value.to_owned()),
                }
            }
        }
        Some(_) => return Err(format!("{tool}: \"intent\" must be an object")),
    }
    if let Some(s) = &intent.data_sensitivity {
        if !SENSITIVITIES.contains(&s.as_str()) {
            return Err(format!(
                "{tool}: data sensitivity \"{s}\" is not one of public, internal, private, unknown"
            ));
        }
    }
    Ok(IntentCall {
        name,
        args: call_args,
        intent,
    })
}

fn present<'a>(args: &'a JsonObject, key: &str) -> Option<&'a Value> {
    args.get(key).filter(|v| !v.is_null())
}

fn flat_string(tool: &str, args: &JsonObject, key: &str) -> Result<Option<String>, String> {
    match present(args, key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(format!("{tool}: \"{key}\" must be a string")),
    }
}

fn json_object(tool: &str, key: &str, text: &str) -> Result<JsonObject, String> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(o)) => Ok(o),
        Ok(_) => Err(format!("{tool}: \"{key}\" must hold a JSON object")),
        Err(e) => Err(format!("{tool}: \"{key}\" is not valid JSON: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> JsonObject {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn annotations_map_onto_classes_with_destructive_as_the_default() {
        let read = ToolAnnotations::new().read_only(true);
        let write = ToolAnnotations::new().read_only(false).destructive(false);
        let destructive = ToolAnnotations::new().destructive(true);
        let silent = ToolAnnotations::new();
        assert_eq!(Access::from_annotations(Some(&read)), Access::Read);
        assert_eq!(Access::from_annotations(Some(&write)), Access::Write);
        assert_eq!(
            Access::from_annotations(Some(&destructive)),
            Access::Destructive
        );
        assert_eq!(Access::from_annotations(Some(&silent)), Access::Destructive);
        assert_eq!(Access::from_annotations(None), Access::Destructive);
    }

    #[test]
    fn every_variant_against_every_class() {
        use Access::*;
        let cases = [
            (Read, Read, Ok(())),
            (Read, Write, Err("call_tool_write")),
            (Read, Destructive, Err("call_tool_destructive")),
            (Write, Read, Ok(())),
            (Write, Write, Ok(())),
            (Write, Destructive, Err("call_tool_destructive")),
            (Destructive, Read, Ok(())),
            (Destructive, Write, Ok(())),
            (Destructive, Destructive, Ok(())),
        ];
        for (variant, target, expected) in cases {
            let got = check(variant, target, "t");
            match expected {
                Ok(()) => assert!(got.is_ok(), "{variant:?} on {target:?}: {got:?}"),
                Err(use_instead) => {
                    let message = got.unwrap_err();
                    assert!(message.contains(&format!("use {use_instead}")), "{message}");
                    assert!(message.contains(variant.call_with()), "{message}");
                }
            }
        }
    }

    #[test]
    fn arguments_come_as_an_object_or_a_json_string() {
        let a = parse(Access::Read, &obj(json!({"name": "x", "args": {"a": 1}}))).unwrap();
        let b = parse(
            Access::Read,
            &obj(json!({"name": "x", "args_json": "{\"a\": 1}"})),
        )
        .unwrap();
        assert_eq!(a, b);
        assert!(parse(Access::Read, &obj(json!({"name": "x"})))
            .unwrap()
            .args
            .is_empty());
        for bad in [
            json!({"args": {}}),
            json!({"name": ""}),
            json!({"name": "x", "args": {}, "args_json": "{}"}),
            json!({"name": "x", "args": [1]}),
            json!({"name": "x", "args_json": "[1]"}),
            json!({"name": "x", "args_json": "{nope"}),
            json!({"name": "x", "args_json": {"a": 1}}),
            json!({"name": "x", "colour": "red"}),
        ] {
            assert!(parse(Access::Read, &obj(bad.clone())).is_err(), "{bad}");
        }
    }

    #[test]
    fn intent_comes_flat_or_nested_and_must_agree_with_the_variant() {
        let flat = parse(
            Access::Write,
            &obj(json!({"name": "x", "intent_data_sensitivity": "private", "intent_reason": "asked"})),
        )
        .unwrap();
        let nested = parse(
            Access::Write,
            &obj(json!({"name": "x", "intent": {"operation_type": "write", "data_sensitivity": "private", "reason": "asked"}})),
        )
        .unwrap();
        assert_eq!(flat, nested);
        assert_eq!(flat.intent.reason.as_deref(), Some("asked"));
        let mismatch = parse(
            Access::Read,
            &obj(json!({"name": "x", "intent": {"operation_type": "destructive"}})),
        )
        .unwrap_err();
        assert!(
            mismatch.contains("call call_tool_destructive"),
            "{mismatch}"
        );
        assert!(parse(
            Access::Read,
            &obj(json!({"name": "x", "intent_data_sensitivity": "secret"}))
        )
        .unwrap_err()
        .contains("public, internal, private, unknown"));
        assert!(parse(
            Access::Read,
            &obj(json!({"name": "x", "intent_reason": "a", "intent": {"reason": "b"}}))
        )
        .is_err());
    }
}
