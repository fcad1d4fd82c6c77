//! Acting on the page: click, type, hover, select, keys, drag, forms, viewport and media.
//! Elements go to the extension as `ref` or `selector`, which it resolves in the page
//! (extension/lib/targets.js); `target` is turned into one of them here (args.rs).

use serde_json::{json, Map, Value};

use super::args::{
    resolve, Click, Drag, EmulateMedia, FillForm, Hover, PressKey, Resize, SelectOption, Type,
};
use super::pages::{forward, on_tab, outline_after, set};
use super::Plan;

pub(super) fn click(args: Click) -> Result<Plan, String> {
    let mut params = on_tab(args.tab_id);
    set(&mut params, "button", args.button);
    set(&mut params, "clickCount", args.click_count);
    set(
        &mut params,
        "modifiers",
        args.modifiers.filter(|m| !m.is_empty()),
    );
    // Playwright MCP's name for a double click.
    if args.double_click == Some(true) && args.click_count.is_none() {
        params.insert("clickCount".into(), json!(2));
    }
    match (args.on.named(), args.x, args.y) {
        (Some(on), _, _) => on.put(&mut params, ""),
        (None, Some(x), Some(y)) => {
            params.insert("x".into(), json!(x));
            params.insert("y".into(), json!(y));
        }
        (None, _, _) => {
            return Err(format!(
                "{}; or give both \"x\" and \"y\" to click a point",
                args.on.required().unwrap_err()
            ))
        }
    }
    outline_after(&mut params, args.outline);
    forward("click", params)
}

pub(super) fn type_text(args: Type) -> Result<Plan, String> {
    let mut params = on_tab(args.tab_id);
    args.on.required()?.put(&mut params, "");
    params.insert("text".into(), json!(args.text));
    set(&mut params, "submit", args.submit);
    set(&mut params, "slowly", args.slowly.filter(|&slowly| slowly));
    outline_after(&mut params, args.outline);
    forward("type", params)
}

pub(super) fn hover(args: Hover) -> Result<Plan, String> {
    let mut params = on_tab(args.tab_id);
    args.on.required()?.put(&mut params, "");
    outline_after(&mut params, args.outline);
    forward("hover", params)
}

pub(super) fn select_option(args: SelectOption) -> Result<Plan, String> {
    if args.values.is_empty() {
        return Err(
            "\"values\" (an array of option values or labels, e.g. [\"blue\"]) is empty".into(),
        );
    }
    let mut params = on_tab(args.tab_id);
    args.on.required()?.put(&mut params, "");
    params.insert("values".into(), json!(args.values));
    outline_after(&mut params, args.outline);
    forward("selectOption", params)
}

pub(super) fn press_key(args: PressKey) -> Result<Plan, String> {
    let mut params = on_tab(args.tab_id);
    match args.text {
        Some(text) if args.key.is_empty() => params.insert("text".into(), json!(text)),
        Some(_) => return Err("give \"key\" or \"text\", not both".into()),
        None if args.key.is_empty() => {
            return Err("\"key\" is required: give a key such as Enter or Control+A".into())
        }
        None => params.insert("key".into(), json!(args.key)),
    };
    outline_after(&mut params, args.outline);
    forward("pressKey", params)
}

pub(super) fn drag(args: Drag) -> Result<Plan, String> {
    let mut params = on_tab(args.tab_id);
    for (end, target, reference, selector) in [
        (
            "start",
            &args.start_target,
            &args.start_ref,
            &args.start_selector,
        ),
        ("end", &args.end_target, &args.end_ref, &args.end_selector),
    ] {
        match resolve(target, reference, selector) {
            Some(on) => on.put(&mut params, end),
            None => {
                return Err(format!(
                    "give \"{end}Target\": the {} element's ref from browser_snapshot (e.g. \
                     \"e5\") or a CSS selector",
                    if end == "start" { "dragged" } else { "drop" }
                ))
            }
        }
    }
    forward("drag", params)
}

pub(super) fn fill_form(args: FillForm) -> Result<Plan, String> {
    if args.fields.is_empty() {
        return Err(
            "\"fields\" (a non-empty array of {name, type, target, value}) is required".into(),
        );
    }
    let mut fields = Vec::with_capacity(args.fields.len());
    for (i, field) in args.fields.into_iter().enumerate() {
        let Some(on) = resolve(&field.target, &field.reference, &field.selector) else {
            return Err(format!(
                "field {} ({}) needs \"target\": its ref from browser_snapshot or a CSS selector",
                i + 1,
                field.name
            ));
        };
        let mut row = Map::new();
        row.insert("name".into(), json!(field.name));
        row.insert("type".into(), json!(field.kind));
        on.put(&mut row, "");
        row.insert("value".into(), field.value);
        fields.push(Value::Object(row));
    }
    let mut params = on_tab(args.tab_id);
    params.insert("fields".into(), Value::Array(fields));
    forward("fillForm", params)
}

pub(super) fn resize(args: Resize) -> Result<Plan, String> {
    for (key, value) in [("width", args.width), ("height", args.height)] {
        if !(1..=10_000).contains(&value) {
            return Err(format!(
                "\"{key}\" must be from 1 to 10000 CSS pixels, not {value}"
            ));
        }
    }
    let mut params = on_tab(args.tab_id);
    params.insert("width".into(), json!(args.width));
    params.insert("height".into(), json!(args.height));
    forward("resize", params)
}

pub(super) fn emulate_media(args: EmulateMedia) -> Result<Plan, String> {
    let Value::Object(params) = serde_json::to_value(&args).map_err(|e| e.to_string())? else {
        unreachable!("a struct serialises as an object");
    };
    forward("emulateMedia", params)
}
