//! The bridge's prompts: ready-made instructions for common browser tasks, for hosts that offer
//! prompts to the person (slash commands, menus) and through `proxy` for the model itself.
//!
//! They need no browser to be built; they tell the model which tools to use, naming both the
//! direct tools and the way to reach them through `proxy` or `call_tool_*`, since which of those
//! a host sees depends on `--tools`.

use serde_json::{json, Map, Value};

/// One prompt's definition.
struct PromptDef {
    name: &'static str,
    title: &'static str,
    description: &'static str,
    /// `(name, description, required)`.
    arguments: &'static [(&'static str, &'static str, bool)],
}

const PROMPTS: &[PromptDef] = &[
    PromptDef {
        name: "inspect_page",
        title: "Inspect a page",
        description: "Look at a web page in the browser and summarise what it is, what it \
                      offers and what looks wrong.",
        arguments: &[
            (
                "url",
                "Page to open first (default: the current tab).",
                false,
            ),
            (
                "focus",
                "What to pay attention to, e.g. \"accessibility\" or \"the checkout form\".",
                false,
            ),
        ],
    },
    PromptDef {
        name: "fill_form",
        title: "Fill a form",
        description: "Fill a form on the current page (or at url) from a plain-language \
                      description of what to enter.",
        arguments: &[
            (
                "description",
                "What to enter, e.g. \"name Ada Lovelace, email ada@example.com, plan Pro\".",
                true,
            ),
            (
                "url",
                "Page with the form (default: the current tab).",
                false,
            ),
            (
                "submit",
                "\"yes\" to submit the form at the end (default: stop before submitting).",
                false,
            ),
        ],
    },
    PromptDef {
        name: "debug_page",
        title: "Debug a page",
        description: "Investigate a problem on the current page with the Chrome DevTools \
                      Protocol: console errors, failed requests, slow loading.",
        arguments: &[(
            "symptom",
            "What goes wrong, e.g. \"the Save button does nothing\".",
            true,
        )],
    },
];

const TOOL_NOTE: &str = "(If these tools are not listed directly, reach them through the proxy \
tool, e.g. proxy {\"action\": \"call\", \"type\": \"tool\", \"path\": \"browser_snapshot\"}, or find \
them with retrieve_tools and call them with call_tool_read / call_tool_write / \
call_tool_destructive.)";

/// The `prompts/list` entries, as MCP `Prompt` JSON.
pub(crate) fn list() -> Vec<Value> {
    PROMPTS
        .iter()
        .map(|p| {
            json!({
                "name": p.name,
                "title": p.title,
                "description": p.description,
                "arguments": p.arguments.iter().map(|(name, description, required)| json!({
                    "name": name, "description": description, "required": required
                })).collect::<Vec<_>>(),
            })
        })
        .collect()
}

/// `prompts/get`: the result as MCP `GetPromptResult` JSON, or a message for a bad request.
pub(crate) fn get(name: &str, args: &Map<String, Value>) -> Result<Value, String> {
    let def = PROMPTS.iter().find(|p| p.name == name).ok_or_else(|| {
        format!(
            "unknown prompt {name}; the prompts are {}",
            PROMPTS
                .iter()
                .map(|p| p.name)
                .collect::<Vec<_>>()
                .join(", ")
        )
    })?;
    let mut values = Map::new();
    for (key, value) in args {
        let Some(text) = value.as_str() else {
            return Err(format!("prompt argument \"{key}\" must be a string"));
        };
        if !def.arguments.iter().any(|(n, _, _)| n == key) {
            return Err(format!(
                "prompt {name} has no argument \"{key}\"; it takes {}",
                def.arguments
                    .iter()
                    .map(|a| a.0)
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        values.insert(key.clone(), json!(text));
    }
    for (arg, _, required) in def.arguments {
        if *required
            && values
                .get(*arg)
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
        {
            return Err(format!("prompt {name} needs the argument \"{arg}\""));
        }
    }
    let arg = |k: &str| {
        values
            .get(k)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    let open = match arg("url") {
        Some(url) => format!("First open {url} with browser_navigate. "),
        None => "Work on the page in the current tab. ".to_owned(),
    };
    let text = match def.name {
        "inspect_page" => {
            let focus = arg("focus")
                .map(|f| format!(" Pay particular attention to: {f}."))
                .unwrap_or_default();
            format!(
                "Inspect a web page in my browser. {open}Take a browser_snapshot to read its \
                 URL, title, text and interactive elements, and a browser_screenshot if the \
                 layout matters. Then summarise: what the page is, its main sections, the \
                 actions it offers (with their refs), and anything that looks broken or \
                 confusing.{focus} Do not click, type or submit anything. {TOOL_NOTE}"
            )
        }
        "fill_form" => {
            let submit = if arg("submit").is_some_and(|s| s.eq_ignore_ascii_case("yes")) {
                "When every field is filled, submit the form and take a browser_snapshot to \
                 confirm the result."
            } else {
                "Do not submit: stop when every field is filled and show me what you entered."
            };
            format!(
                "Fill a form in my browser. {open}Take a browser_snapshot to find the form's \
                 fields and their refs. Then enter, with browser_type (text fields), \
                 browser_select_option (drop-downs) and browser_click (checkboxes, radio \
                 buttons): {}. If a value does not \
                 fit any field, or a required field has no value, ask me instead of guessing. \
                 {submit} {TOOL_NOTE}",
                arg("description").unwrap_or_default()
            )
        }
        "debug_page" => format!(
            "Debug a problem on the page in my browser's current tab: {}. Take a \
             browser_snapshot to see the page and browser_console_messages (onlyErrors) for its \
             console errors and uncaught exceptions. Use retrieve_tools to find Chrome DevTools \
             commands (for example log entries with Log, failed requests with \
             Network, exceptions with Debugger), call read-only ones with call_tool_read, and \
             explain the cause you find, with evidence. Ask before anything that changes the \
             page. {TOOL_NOTE}",
            arg("symptom").unwrap_or_default()
        ),
        _ => unreachable!("every prompt has a text"),
    };
    Ok(json!({
        "description": def.description,
        "messages": [{"role": "user", "content": {"type": "text", "text": text}}],
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn prompts_render_their_arguments() {
        assert_eq!(list().len(), 3);
        let result = get(
            "fill_form",
            &args(json!({"description": "name Ada", "submit": "yes"})),
        )
        .unwrap();
        let text = result["messages"][0]["content"]["text"].as_str().unwrap();
        assert!(
            text.contains("name Ada") && text.contains("submit the form"),
            "{text}"
        );
        let inspect = get("inspect_page", &args(json!({"url": "https://example.com"}))).unwrap();
        assert!(inspect["messages"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .contains("https://example.com"));
    }

    #[test]
    fn bad_prompt_requests_are_explained() {
        assert!(get("nope", &Map::new())
            .unwrap_err()
            .contains("inspect_page"));
        assert!(get("fill_form", &Map::new())
            .unwrap_err()
            .contains("\"description\""));
        assert!(
            get("debug_page", &args(json!({"symptom": "x", "extra": "y"})))
                .unwrap_err()
                .contains("no argument")
        );
        assert!(get("debug_page", &args(json!({"symptom": 3})))
            .unwrap_err()
            .contains("string"));
    }
}
