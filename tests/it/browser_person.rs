//! End-to-end: the assistant hands a step to the person and waits for them (issue 29). The
//! reference extension in a real Chromium, the real relay, `mcp-relay bridge` driven by each
//! official MCP SDK (TypeScript: `tests/mcp-sdk-client/hand-off.mjs`; Python:
//! `tests/mcp-python-client/hand_off.py`, the same steps and report), and the person played
//! here through the DevTools endpoint: they read the request in the extension's own popup
//! (`ui/popup.html`, opened as a page), sign in on the login page in the assistant's tab, and
//! click Done, then Cancel.
//!
//! And a checkout with "ask before submitting forms / purchases" on: the assistant's click on
//! "Place order" waits for the person's Allow, and their Deny stops the next order
//! (`tests/mcp-sdk-client/ask-before.mjs`, `tests/mcp-python-client/ask_before.py`).
//!
//! A host of MCP 2026-07-28 (the Python SDK, `tests/mcp-python-client/hand_off_rounds.py`) is
//! not held in one call: the hand-off arrives as "input required", asked in the host as well as
//! in the popup, and the person answers in either.
//!
//! The TypeScript host gives up after 3 s unless progress arrives (`resetTimeoutOnProgress`);
//! the Python SDK has no such option (its request clock is fixed), so its host waits with a
//! 60 s timeout, and the test checks the progress it received all the same.
//!
//! With `OWNER_SCREENSHOTS=<dir>` the tests also save the popup showing the hand-off and the
//! ask-before prompt, for extension/README.md.

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::bridge::{call, is_error, sdk_report, start_bridge, text, Sdk};
use common::browser::*;
use common::{api, relay, token};
use mcp_relay::auth::Role;
use serde_json::{json, Value};
use tokio::time::Instant;

/// Longer than the host's 3 s request timeout in hand-off.mjs: only progress keeps it waiting.
const PERSON_TAKES: Duration = Duration::from_secs(5);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn person_signs_in_for_the_assistant_and_clicks_done_cancel_stops_it_and_progress_keeps_a_short_timeout_host_waiting(
) {
    let Some(chromium) = chromium_or_skip("hand-off") else {
        return;
    };
    let Some(sdk) = Sdk::typescript_or_skip("hand-off") else {
        return;
    };
    let _one = ONE_BROWSER_AT_A_TIME.lock().await;
    within(SCENARIO_LIMIT, hand_off(&chromium, &sdk, Mode::Headless)).await;
}

/// The same hand-off in real windows on a virtual X display: the person's popup, the agent's
/// window and its tab as a person's Chrome has them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headful_hand_off_under_xvfb_is_done_cancelled_and_withdrawn_the_same_way() {
    let Some(chromium) = chromium_or_skip("headful hand-off") else {
        return;
    };
    if xvfb_run_or_skip("headful hand-off").is_none() {
        return;
    }
    let Some(sdk) = Sdk::typescript_or_skip("headful hand-off") else {
        return;
    };
    let _one = ONE_BROWSER_AT_A_TIME.lock().await;
    within(SCENARIO_LIMIT, hand_off(&chromium, &sdk, Mode::Headful)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkout_with_ask_before_waits_for_allow_and_deny_stops_the_order_without_asking_twice() {
    let Some(chromium) = chromium_or_skip("ask before") else {
        return;
    };
    let Some(sdk) = Sdk::typescript_or_skip("ask before") else {
        return;
    };
    let _one = ONE_BROWSER_AT_A_TIME.lock().await;
    within(SCENARIO_LIMIT, ask_before(&chromium, &sdk)).await;
}

/// The hand-off of [`person_signs_in_for_the_assistant_and_clicks_done_cancel_stops_it_and_progress_keeps_a_short_timeout_host_waiting`]
/// with the official Python SDK as the host: Done, Cancel and a host giving up, each with its
/// receipt, and the progress notifications that arrived while the person took their time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_host_is_parked_while_the_person_signs_in_resumes_on_done_stops_on_cancel_and_sees_progress(
) {
    let Some(chromium) = chromium_or_skip("Python SDK hand-off") else {
        return;
    };
    let Some(sdk) = Sdk::python_or_skip("Python SDK hand-off") else {
        return;
    };
    let _one = ONE_BROWSER_AT_A_TIME.lock().await;
    within(SCENARIO_LIMIT, hand_off(&chromium, &sdk, Mode::Headless)).await;
}

/// The Python SDK's hand-off in real windows on a virtual X display.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headful_python_sdk_hand_off_under_xvfb_is_done_cancelled_and_withdrawn_the_same_way() {
    let Some(chromium) = chromium_or_skip("headful Python SDK hand-off") else {
        return;
    };
    if xvfb_run_or_skip("headful Python SDK hand-off").is_none() {
        return;
    }
    let Some(sdk) = Sdk::python_or_skip("headful Python SDK hand-off") else {
        return;
    };
    let _one = ONE_BROWSER_AT_A_TIME.lock().await;
    within(SCENARIO_LIMIT, hand_off(&chromium, &sdk, Mode::Headful)).await;
}

/// A host of MCP 2026-07-28 gets the hand-off as input required: asked in the host (an
/// elicitation) while the popup asks too, the person signs in and answers Done in the host, and
/// the call finishes with what changed; Cancel in the popup before the host's Done stands;
/// declining in the host cancels; and a host that cannot ask is answered round after round
/// with the state alone until the person clicks Done in the popup. Each answer is a receipt
/// that says whether it came from the host.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_host_of_mcp_2026_07_28_gets_the_hand_off_as_input_required_and_the_person_answers_in_the_host_or_the_popup(
) {
    let Some(chromium) = chromium_or_skip("Python SDK hand-off in rounds") else {
        return;
    };
    let Some(sdk) = Sdk::python_or_skip("Python SDK hand-off in rounds") else {
        return;
    };
    let _one = ONE_BROWSER_AT_A_TIME.lock().await;
    within(SCENARIO_LIMIT, hand_off_in_rounds(&chromium, &sdk)).await;
}

/// The checkout of [`checkout_with_ask_before_waits_for_allow_and_deny_stops_the_order_without_asking_twice`]
/// with the official Python SDK as the host.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_checkout_with_ask_before_waits_for_allow_and_deny_stops_the_order_without_asking_twice(
) {
    let Some(chromium) = chromium_or_skip("Python SDK ask before") else {
        return;
    };
    let Some(sdk) = Sdk::python_or_skip("Python SDK ask before") else {
        return;
    };
    let _one = ONE_BROWSER_AT_A_TIME.lock().await;
    within(SCENARIO_LIMIT, ask_before(&chromium, &sdk)).await;
}

/// A form the page submits itself once a field changes (`tests/fixtures/delivery.html`): with
/// "ask before submitting forms" on, `browser_fill_form` of its country holds the page's
/// submission back and asks the person; Allow lets it go out, Deny leaves the fields filled and
/// nothing submitted, and the retry is refused without asking again. A fill that submits
/// nothing is not asked about.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fill_form_that_makes_the_page_submit_waits_for_allow_and_deny_keeps_the_form_unsent() {
    let Some(chromium) = chromium_or_skip("fill form with ask before") else {
        return;
    };
    let _one = ONE_BROWSER_AT_A_TIME.lock().await;
    within(SCENARIO_LIMIT, fill_form_asks(&chromium)).await;
}

/// With "ask before submitting forms" on, a submit button inside a frame of another origin
/// (a payment form embedded from its provider) is asked about like one in the page: the
/// owner's rule reads the button in the frame's own world. Denied, nothing is sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_submit_inside_a_frame_of_another_site_is_asked_about_and_deny_sends_nothing() {
    let Some(chromium) = chromium_or_skip("ask before in a frame of another site") else {
        return;
    };
    let _one = ONE_BROWSER_AT_A_TIME.lock().await;
    within(SCENARIO_LIMIT, ask_in_other_site_frame(&chromium)).await;
}

async fn ask_in_other_site_frame(chromium: &Path) {
    let relay = relay().await;
    let site = FixtureSite::start().await;
    let profile = Profile::new(&relay, "Person's browser");
    let config_path = profile.extension_dir.join("dev-config.json");
    let mut config: Value =
        serde_json::from_str(&std::fs::read_to_string(&config_path).unwrap()).unwrap();
    config["askBefore"] = json!({"forms": ["*"]});
    std::fs::write(&config_path, config.to_string()).unwrap();
    let browser = Browser::launch_with(chromium, &profile, &["--remote-debugging-port=0"]);
    let mut devtools = DevTools::attach(&browser).await;
    let origin = devtools.extension_origin().await;
    let mut watcher = Driver::handshake(&relay, "watcher").await;
    watcher.wait_for_extension(&browser).await;
    let bridge = start_bridge(
        (),
        &["--relay", &relay.url("/mcp")],
        &token(USER, Some(Role::Mcp)),
    )
    .await;
    let opened = call(
        &bridge,
        "browser_navigate",
        json!({"url": site.url("other-site-frame.html")}),
    )
    .await;
    assert!(!is_error(&opened), "{opened}");
    let shown = text(&call(&bridge, "browser_snapshot", json!({})).await);
    let line = shown
        .lines()
        .find(|l| l.contains("button \"Place the order\""))
        .unwrap_or_else(|| panic!("no order button in {shown}"));
    let place = line
        .split("[ref=")
        .nth(1)
        .and_then(|r| r.split(']').next())
        .unwrap()
        .to_owned();
    assert!(place.starts_with('f'), "{line}");
    let popup = devtools.open_popup(&origin, 600).await;
    let (clicked, _) = tokio::join!(
        call(&bridge, "browser_click", json!({ "target": place })),
        async {
            wait_for_request(&mut devtools, &popup).await;
            click_answer(&mut devtools, &popup, "denied").await;
        }
    );
    assert!(is_error(&clicked), "{clicked}");
    let ordered = async || {
        let sent = call(
            &bridge,
            "browser_evaluate",
            json!({"function": "(el) => el.ownerDocument.body.dataset.ordered ?? 'none'", "target": place}),
        )
        .await;
        text(&sent)
    };
    assert_eq!(ordered().await, "none");
    // The same button clicked at its box's centre is the same step: refused with the owner's
    // answer, not clicked through.
    let boxed = text(&call(&bridge, "browser_snapshot", json!({"boxes": true})).await);
    let b = box_on(&boxed, "button \"Place the order\"");
    let at_point = call(
        &bridge,
        "browser_click",
        json!({"x": b[0] + b[2] / 2.0, "y": b[1] + b[3] / 2.0}),
    )
    .await;
    assert!(
        is_error(&at_point) && text(&at_point).contains("denied"),
        "{at_point}"
    );
    assert_eq!(ordered().await, "none");
    // Enter in the frame's card field submits its form: asked about, denied, nothing sent.
    let card = shown
        .lines()
        .find(|l| l.contains("textbox \"Card holder\""))
        .and_then(|l| l.split("[ref=").nth(1))
        .and_then(|r| r.split(']').next())
        .unwrap()
        .to_owned();
    let typed = call(
        &bridge,
        "browser_type",
        json!({"target": card, "text": "Ada"}),
    )
    .await;
    assert!(!is_error(&typed), "{typed}");
    let (entered, _) = tokio::join!(
        call(&bridge, "browser_press_key", json!({"key": "Enter"})),
        async {
            wait_for_request(&mut devtools, &popup).await;
            click_answer(&mut devtools, &popup, "denied").await;
        }
    );
    assert!(is_error(&entered), "{entered}");
    assert_eq!(ordered().await, "none");
}

async fn fill_form_asks(chromium: &Path) {
    let relay = relay().await;
    let site = FixtureSite::start().await;
    let profile = Profile::new(&relay, "Person's browser");
    let config_path = profile.extension_dir.join("dev-config.json");
    let mut config: Value =
        serde_json::from_str(&std::fs::read_to_string(&config_path).unwrap()).unwrap();
    config["askBefore"] = json!({"forms": ["*"]});
    std::fs::write(&config_path, config.to_string()).unwrap();
    let browser = Browser::launch_with(chromium, &profile, &["--remote-debugging-port=0"]);
    let mut devtools = DevTools::attach(&browser).await;
    let origin = devtools.extension_origin().await;
    let mut watcher = Driver::handshake(&relay, "watcher").await;
    watcher.wait_for_extension(&browser).await;
    let bridge = start_bridge(
        (),
        &["--relay", &relay.url("/mcp")],
        &token(USER, Some(Role::Mcp)),
    )
    .await;
    let page = site.url("delivery.html");
    let title = async || {
        let title = call(
            &bridge,
            "browser_evaluate",
            json!({"function": "() => document.title"}),
        )
        .await;
        text(&title)
    };
    let opened = call(&bridge, "browser_navigate", json!({ "url": page })).await;
    assert!(!is_error(&opened), "{opened}");
    let popup = devtools.open_popup(&origin, 600).await;

    // A box that submits nothing: filled at once, nobody asked.
    let gift = call(
        &bridge,
        "browser_fill_form",
        json!({"fields": [{"name": "Gift wrap", "type": "checkbox", "target": "#gift", "value": "true"}]}),
    )
    .await;
    assert!(!is_error(&gift), "{gift}");
    assert_eq!(
        devtools
            .eval(
                &popup,
                "document.querySelectorAll('.person-request').length"
            )
            .await,
        json!(0)
    );

    // The express box: the page calls requestSubmit as it changes; held, asked, allowed, sent.
    let (express, _) = tokio::join!(
        call(
            &bridge,
            "browser_fill_form",
            json!({"fields": [{"name": "Express", "type": "checkbox", "target": "#express", "value": "true"}]}),
        ),
        async {
            wait_for_request(&mut devtools, &popup).await;
            click_answer(&mut devtools, &popup, "allowed").await;
        }
    );
    assert!(!is_error(&express), "{express}");
    let deadline = Instant::now() + STEP;
    loop {
        let status = call(
            &bridge,
            "browser_evaluate",
            json!({"function": "() => document.getElementById('status').textContent"}),
        )
        .await;
        if text(&status) == "Delivery to anywhere, express" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the express submission: {status}"
        );
        tokio::time::sleep(POLL).await;
    }
    let opened = call(&bridge, "browser_navigate", json!({ "url": page })).await;
    assert!(!is_error(&opened), "{opened}");

    // The country: the page submits as it changes; the person is asked first, and allows it.
    let country = |value: &str| json!({"fields": [{"name": "Country", "type": "combobox", "target": "#country", "value": value}]});
    let (allowed, card) = tokio::join!(
        call(&bridge, "browser_fill_form", country("France")),
        async {
            let card = wait_for_request(&mut devtools, &popup).await;
            click_answer(&mut devtools, &popup, "allowed").await;
            card
        }
    );
    assert!(
        card.contains("is about to fill in the form “Delivery” (the page submits it as its fields are filled)"),
        "{card}"
    );
    assert!(!is_error(&allowed), "{allowed}");
    assert_eq!(
        allowed["structuredContent"]["submitted"],
        json!(["the form “Delivery”"]),
        "{allowed}"
    );
    let deadline = Instant::now() + STEP;
    while title().await != "Delivery set" {
        assert!(
            Instant::now() < deadline,
            "the allowed submission never arrived"
        );
        tokio::time::sleep(POLL).await;
    }

    // Again, denied: the field is filled, the form is not sent, the retry is not asked.
    let opened = call(&bridge, "browser_navigate", json!({ "url": page })).await;
    assert!(!is_error(&opened), "{opened}");
    let (denied, _) = tokio::join!(
        call(&bridge, "browser_fill_form", country("Germany")),
        async {
            wait_for_request(&mut devtools, &popup).await;
            click_answer(&mut devtools, &popup, "denied").await;
        }
    );
    assert!(is_error(&denied), "{denied}");
    let said = text(&denied);
    assert!(
        said.contains("denied this step")
            && said.contains("The fields were filled, but the form was not submitted.")
            && said.contains("Do not retry it"),
        "{said}"
    );
    let retried = call(&bridge, "browser_fill_form", country("Germany")).await;
    assert!(is_error(&retried), "{retried}");
    assert!(text(&retried).contains("denied this step"), "{retried}");
    assert_eq!(title().await, "Delivery", "nothing was submitted");
    let chosen = call(
        &bridge,
        "browser_evaluate",
        json!({"function": "() => document.getElementById('country').value + ' ' + location.search"}),
    )
    .await;
    assert_eq!(text(&chosen), "de ", "filled, not sent");
    assert_eq!(
        devtools
            .eval(
                &popup,
                "document.querySelectorAll('.person-request').length"
            )
            .await,
        json!(0),
        "the retry asked again"
    );

    // The receipts: one per decision, the kind of step and the site, not the page's words.
    let receipts = receipts(&relay, "ask-before", 3).await;
    assert_eq!(receipts.len(), 3, "{receipts:?}");
    for (receipt, outcome) in receipts.iter().zip(["allowed", "allowed", "denied"]) {
        let detail = receipt["detail"].as_str().unwrap();
        assert!(
            detail.starts_with(outcome)
                && detail.ends_with("fill in (the page submits it as its fields are filled)"),
            "{detail}"
        );
        assert!(!detail.contains("Delivery"), "{detail}");
    }

    drop(bridge);
    drop(devtools);
    drop(browser);
    relay.shutdown().await;
}

/// A WebMCP page tool that asks for the person (`requestUserInteraction`,
/// `tests/fixtures/webmcp-person.html`), with no "ask before" rule anywhere: the call is shown
/// to the person in the popup (the assistant, the tool, the page) and waits; on Allow the
/// page's own question shows in the tab, the person answers it there, and the page's result is
/// the assistant's answer. Deny never shows the question, tells the page's tool the person
/// declined and refuses the assistant with words it must not retry; a tool that would wait on
/// after that has its call cancelled; and the page goes on: its next tool call and its
/// replacement of a tool work. Each decision is in
/// the relay's audit trail.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn page_tool_asking_for_the_person_without_any_rule_shows_them_the_call_allow_answers_the_page_and_deny_leaves_the_page_usable(
) {
    let Some(chromium) = chromium_or_skip("page tool asking for the person") else {
        return;
    };
    let _one = ONE_BROWSER_AT_A_TIME.lock().await;
    within(SCENARIO_LIMIT, page_tool_asks(&chromium, Mode::Headless)).await;
}

/// The same in real windows on a virtual X display.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headful_page_tool_asking_for_the_person_under_xvfb_is_shown_allowed_and_denied_the_same_way(
) {
    let Some(chromium) = chromium_or_skip("headful page tool asking for the person") else {
        return;
    };
    if xvfb_run_or_skip("headful page tool asking for the person").is_none() {
        return;
    }
    let _one = ONE_BROWSER_AT_A_TIME.lock().await;
    within(SCENARIO_LIMIT, page_tool_asks(&chromium, Mode::Headful)).await;
}

async fn page_tool_asks(chromium: &Path, mode: Mode) {
    let relay = relay().await;
    let site = FixtureSite::start().await;
    // The person's settings as they come: no "ask before" rule for any site.
    let profile = Profile::new(&relay, "Person's browser");
    let config: Value = serde_json::from_str(
        &std::fs::read_to_string(profile.extension_dir.join("dev-config.json")).unwrap(),
    )
    .unwrap();
    assert!(config.get("askBefore").is_none(), "{config}");
    let browser = Browser::launch_in(
        chromium,
        &profile,
        mode,
        &[
            crate::browser_webmcp::WEBMCP_FLAGS,
            "--remote-debugging-port=0",
        ],
        &["about:blank"],
    );
    let mut devtools = DevTools::attach(&browser).await;
    let origin = devtools.extension_origin().await;
    let mut watcher = Driver::handshake(&relay, "watcher").await;
    watcher.wait_for_extension(&browser).await;
    let bridge = start_bridge(
        (),
        &["--relay", &relay.url("/mcp")],
        &token(USER, Some(Role::Mcp)),
    )
    .await;
    let opened = call(
        &bridge,
        "browser_navigate",
        json!({"url": site.url("webmcp-person.html")}),
    )
    .await;
    assert!(!is_error(&opened), "{opened}");
    let listed = listing_until(&bridge, |l| l.contains("name: book_table")).await;
    assert!(listed.contains("name: list_bookings"), "{listed}");
    let popup = devtools.open_popup(&origin, 600).await;
    let tab = page_session(&mut devtools, "webmcp-person.html").await;
    let book = json!({"name": "book_table", "arguments": {"party": 2}});

    // Allowed: the page's question shows in the tab only then, and the person answers it there.
    let (booked, card) = tokio::join!(
        call(&bridge, "browser_call_page_tool", book.clone()),
        async {
            let card = wait_for_request(&mut devtools, &popup).await;
            let shown = devtools
                .eval(&tab, "document.getElementById('ask').hidden")
                .await;
            assert_eq!(
                shown,
                json!(true),
                "the page asked before the person allowed it"
            );
            devtools
                .save_screenshot(&popup, "popup-page-tool-asks.png")
                .await;
            click_answer(&mut devtools, &popup, "allowed").await;
            devtools
                .wait_for(&tab, "document.getElementById('ask').hidden", json!(false))
                .await;
            devtools
                .eval(&tab, "document.getElementById('yes').click(); true")
                .await;
            card
        }
    );
    // Who asks, to run which of the page's tools, on which page.
    assert!(
        card.contains("is about to run the page's tool “book_table”, which asks for you in the tab (the page wants your interaction)"),
        "{card}"
    );
    assert!(
        card.contains("\"Table booking\""),
        "the page, by its title: {card}"
    );
    assert!(!is_error(&booked), "{booked}");
    assert!(
        text(&booked).contains("\nbooked for 2\n<<end-page-words "),
        "{booked}"
    );

    // Denied: the page's question never shows, and its tool hears the person declined.
    let (denied, _) = tokio::join!(
        call(&bridge, "browser_call_page_tool", book.clone()),
        async {
            wait_for_request(&mut devtools, &popup).await;
            click_answer(&mut devtools, &popup, "denied").await;
        }
    );
    assert!(is_error(&denied), "{denied}");
    let said = text(&denied);
    assert!(
        said.contains("denied this step")
            && said.contains(
                "The page's tool was told the person declined, and its call was cancelled."
            )
            && said.contains("Do not retry it"),
        "{said}"
    );
    devtools
        .wait_for(
            &tab,
            "document.getElementById('declined').textContent",
            json!("declined: The person declined the interaction this tool asked for"),
        )
        .await;
    assert_eq!(
        devtools
            .eval(&tab, "[document.getElementById('ask').hidden, document.getElementById('booked').textContent]")
            .await,
        json!([true, "booked for 2"]),
        "the question was shown or a second table booked"
    );

    // A tool that, refused, would wait on in the page: its call is cancelled, so nothing of it
    // stays pending there.
    let (held, _) = tokio::join!(
        call(
            &bridge,
            "browser_call_page_tool",
            json!({"name": "hold_table", "arguments": {}})
        ),
        async {
            wait_for_request(&mut devtools, &popup).await;
            click_answer(&mut devtools, &popup, "denied").await;
        }
    );
    assert!(is_error(&held), "{held}");
    assert!(text(&held).contains("denied this step"), "{held}");
    devtools
        .wait_for(
            &tab,
            "[document.getElementById('cancelled').textContent, document.getElementById('hold').hidden]",
            json!(["a call was cancelled", true]),
        )
        .await;

    // The page goes on: its next tool call answers, and its tools can still change.
    let bookings = call(
        &bridge,
        "browser_call_page_tool",
        json!({"name": "list_bookings", "arguments": {}}),
    )
    .await;
    assert!(!is_error(&bookings), "{bookings}");
    assert!(
        text(&bookings).contains("\nbooked for 2\n<<end-page-words "),
        "{bookings}"
    );
    tools_still_change(&bridge, &mut devtools, &tab, "1 booking").await;

    // The audit trail: one receipt per decision, the kind of step without the page's words.
    let receipts = receipts(&relay, "ask-before", 3).await;
    assert_eq!(receipts.len(), 3, "{receipts:?}");
    for (receipt, outcome) in receipts.iter().zip(["allowed", "denied", "denied"]) {
        let detail = receipt["detail"].as_str().unwrap();
        assert!(
            detail.starts_with(outcome)
                && detail.ends_with("run the page's tool (the page wants your interaction)"),
            "{detail}"
        );
        assert!(!detail.contains("_table"), "{detail}");
    }

    drop(bridge);
    drop(devtools);
    drop(browser);
    relay.shutdown().await;
}

/// The same page tool when the person does not answer: the prompt stays in the popup for the
/// extension's 40 s wait, the host hears progress meanwhile, then the prompt is withdrawn, the
/// page's call is cancelled (the tool, which would wait on, stops), the assistant is refused
/// with words not to retry on its own, the trail records the withdrawal, and the page goes on:
/// its tools can be replaced and called. (The call a previous attempt left pending in the page
/// here kept the page's replacement tool from appearing, in the SDK scenario.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unanswered_page_tool_request_is_withdrawn_after_its_bound_with_progress_meanwhile_and_the_page_goes_on(
) {
    let Some(chromium) = chromium_or_skip("unanswered page tool request") else {
        return;
    };
    let _one = ONE_BROWSER_AT_A_TIME.lock().await;
    within(SCENARIO_LIMIT, page_tool_unanswered(&chromium)).await;
}

/// A host that keeps the progress notifications it receives.
#[derive(Clone, Default)]
struct ProgressLog(std::sync::Arc<std::sync::Mutex<Vec<rmcp::model::ProgressNotificationParam>>>);

impl rmcp::ClientHandler for ProgressLog {
    async fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        _context: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        self.0.lock().unwrap().push(params);
    }
}

async fn page_tool_unanswered(chromium: &Path) {
    let relay = relay().await;
    let site = FixtureSite::start().await;
    let profile = Profile::new(&relay, "Person's browser");
    let browser = Browser::launch_with(
        chromium,
        &profile,
        &[
            crate::browser_webmcp::WEBMCP_FLAGS,
            "--remote-debugging-port=0",
        ],
    );
    let mut devtools = DevTools::attach(&browser).await;
    let origin = devtools.extension_origin().await;
    let mut watcher = Driver::handshake(&relay, "watcher").await;
    watcher.wait_for_extension(&browser).await;
    let progress = ProgressLog::default();
    let bridge = start_bridge(
        progress.clone(),
        &[
            "--relay",
            &relay.url("/mcp"),
            "--progress-interval",
            "500ms",
        ],
        &token(USER, Some(Role::Mcp)),
    )
    .await;
    let opened = call(
        &bridge,
        "browser_navigate",
        json!({"url": site.url("webmcp-person.html")}),
    )
    .await;
    assert!(!is_error(&opened), "{opened}");
    listing_until(&bridge, |l| l.contains("name: hold_table")).await;
    let popup = devtools.open_popup(&origin, 600).await;
    let tab = page_session(&mut devtools, "webmcp-person.html").await;

    // The call, as a host that asks for progress makes it; the person never answers.
    let mut params = rmcp::model::CallToolRequestParams::new("browser_call_page_tool")
        .with_arguments(
            json!({"name": "hold_table", "arguments": {}})
                .as_object()
                .unwrap()
                .clone(),
        );
    params.meta = Some(rmcp::model::RequestMetaObject::with_progress_token(
        rmcp::model::ProgressToken(rmcp::model::NumberOrString::String("hold".into())),
    ));
    let started = Instant::now();
    let (held, id) = tokio::join!(
        async {
            let result = tokio::time::timeout(Duration::from_secs(70), bridge.call_tool(params))
                .await
                .expect("the call ended within the relay's timeout")
                .expect("browser_call_page_tool");
            serde_json::to_value(result).unwrap()
        },
        async {
            wait_for_request(&mut devtools, &popup).await;
            devtools
                .eval(
                    &popup,
                    "document.querySelector('.person-request').dataset.requestId",
                )
                .await
        }
    );
    let took = started.elapsed();
    assert!(is_error(&held), "{held}");
    let said = text(&held);
    assert!(
        said.contains("did not answer within 40 s whether to allow this step: run the page's tool “hold_table”")
            && said.contains("withdrawn from their mcp-relay popup; the page's tool was told, and its call was cancelled.")
            && said.contains("Do not retry it on your own"),
        "{said}"
    );
    assert!(
        took >= Duration::from_secs(40) && took < Duration::from_secs(55),
        "the bound: {took:?}"
    );
    eprintln!("unanswered page tool call answered after {took:?}");
    // The prompt left the popup, and the page's call was cancelled.
    wait_until_gone(
        &mut devtools,
        &popup,
        id.as_str().unwrap(),
        "the withdrawal",
    )
    .await;
    devtools
        .wait_for(
            &tab,
            "[document.getElementById('cancelled').textContent, document.getElementById('hold').hidden]",
            json!(["a call was cancelled", true]),
        )
        .await;
    // Progress all along, counting towards the call's bound and saying what it waits for.
    let notes = progress.0.lock().unwrap().clone();
    assert!(notes.len() >= 40, "{} notifications", notes.len());
    assert!(
        notes.windows(2).all(|w| w[1].progress > w[0].progress),
        "{notes:?}"
    );
    let last = notes.last().unwrap();
    assert_eq!(last.total, Some(55.0), "{last:?}");
    let message = last.message.as_deref().unwrap_or_default();
    assert!(
        message.starts_with("waiting for the page's tool; if it asked for the person, they answer Allow or Deny in the mcp-relay popup (")
            && message.ends_with(" s of at most 55 s)"),
        "{message}"
    );

    // The page goes on: its tools change and answer.
    tools_still_change(&bridge, &mut devtools, &tab, "0 bookings").await;

    let receipts = receipts(&relay, "ask-before", 1).await;
    let detail = receipts[0]["detail"].as_str().unwrap();
    assert!(
        detail.starts_with("withdrawn")
            && detail.ends_with("run the page's tool (the page wants your interaction)"),
        "{detail}"
    );

    drop(bridge);
    drop(devtools);
    drop(browser);
    relay.shutdown().await;
}

/// `browser_page_tools`' text, polled until `done` holds (the page registers as it loads).
/// The page's tools still change and answer after a refused or withdrawn call: the page
/// replaces them, the listing follows, and the new tool counts `bookings` (e.g. "1 booking").
async fn tools_still_change<C: rmcp::ClientHandler>(
    bridge: &common::bridge::Bridge<C>,
    devtools: &mut DevTools,
    tab: &str,
    bookings: &str,
) {
    devtools.eval(tab, "replaceTools()").await;
    let replaced = listing_until(bridge, |l| l.contains("name: count_bookings")).await;
    assert!(!replaced.contains("name: list_bookings"), "{replaced}");
    let counted = call(
        bridge,
        "browser_call_page_tool",
        json!({"name": "count_bookings", "arguments": {}}),
    )
    .await;
    assert!(!is_error(&counted), "{counted}");
    assert!(
        text(&counted).contains(&format!("\n{bookings}\n")),
        "{counted}"
    );
}

async fn listing_until<C: rmcp::ClientHandler>(
    bridge: &common::bridge::Bridge<C>,
    done: impl Fn(&str) -> bool,
) -> String {
    let deadline = Instant::now() + STEP;
    loop {
        let listed = call(bridge, "browser_page_tools", json!({})).await;
        let listing = text(&listed).to_owned();
        if done(&listing) {
            return listing;
        }
        assert!(Instant::now() < deadline, "{listed}");
        tokio::time::sleep(POLL).await;
    }
}

/// Through each official SDK (`tests/mcp-sdk-client/consequential.mjs`,
/// `tests/mcp-python-client/consequential.py`), with "ask before submitting forms" on: a
/// `browser_fill_form` after which the page submits its form waits for Allow (and is then
/// sent) or Deny (and is not), and a page's own tool asking for the person
/// (`requestUserInteraction`) waits for Allow, after which the person answers the page's own
/// question in the tab, or Deny, after which the page never asks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_sdk_fill_form_and_a_page_tool_asking_for_the_person_wait_for_allow_and_deny() {
    let test = "TypeScript SDK fill form and page tool asking";
    let Some(chromium) = chromium_or_skip(test) else {
        return;
    };
    let Some(sdk) = Sdk::typescript_or_skip(test) else {
        return;
    };
    let _one = ONE_BROWSER_AT_A_TIME.lock().await;
    within(SCENARIO_LIMIT, consequential(&chromium, &sdk)).await;
}

/// The same with the official Python SDK.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_fill_form_and_a_page_tool_asking_for_the_person_wait_for_allow_and_deny() {
    let test = "Python SDK fill form and page tool asking";
    let Some(chromium) = chromium_or_skip(test) else {
        return;
    };
    let Some(sdk) = Sdk::python_or_skip(test) else {
        return;
    };
    let _one = ONE_BROWSER_AT_A_TIME.lock().await;
    within(SCENARIO_LIMIT, consequential(&chromium, &sdk)).await;
}

async fn consequential(chromium: &Path, sdk: &Sdk) {
    let name = sdk.name();
    let relay = relay().await;
    let site = FixtureSite::start().await;
    let profile = Profile::new(&relay, "Person's browser");
    let config_path = profile.extension_dir.join("dev-config.json");
    let mut config: Value =
        serde_json::from_str(&std::fs::read_to_string(&config_path).unwrap()).unwrap();
    config["askBefore"] = json!({"forms": ["*"]});
    std::fs::write(&config_path, config.to_string()).unwrap();
    let browser = Browser::launch_with(
        chromium,
        &profile,
        &[
            crate::browser_webmcp::WEBMCP_FLAGS,
            "--remote-debugging-port=0",
        ],
    );
    let mut devtools = DevTools::attach(&browser).await;
    let origin = devtools.extension_origin().await;
    let mut host = sdk.spawn(
        "consequential",
        &[&site.url("delivery.html"), &site.url("webmcp-person.html")],
        &relay.url("/mcp"),
        &[],
        &token(USER, Some(Role::Mcp)),
    );
    let popup = devtools.open_popup(&origin, 600).await;

    // The express box (the page's requestSubmit): allowed. The country (form.submit()): denied.
    let card = wait_for_request(&mut devtools, &popup).await;
    assert!(
        card.contains("Errand Assistant is about to fill in the form “Delivery” (the page submits it as its fields are filled)"),
        "{name}: {card}"
    );
    click_answer(&mut devtools, &popup, "allowed").await;
    wait_for_request(&mut devtools, &popup).await;
    click_answer(&mut devtools, &popup, "denied").await;

    // The page's tool: allowed, then the person answers the page's own question in the tab.
    let card = wait_for_request(&mut devtools, &popup).await;
    assert!(
        card.contains("Errand Assistant is about to run the page's tool “book_table”, which asks for you in the tab"),
        "{name}: {card}"
    );
    let tab = page_session(&mut devtools, "webmcp-person.html").await;
    assert_eq!(
        devtools
            .eval(&tab, "document.getElementById('ask').hidden")
            .await,
        json!(true),
        "{name}: the page asked before the person allowed it"
    );
    click_answer(&mut devtools, &popup, "allowed").await;
    devtools
        .wait_for(&tab, "document.getElementById('ask').hidden", json!(false))
        .await;
    devtools
        .eval(&tab, "document.getElementById('yes').click(); true")
        .await;
    // Then denied: the page never asks.
    wait_for_request(&mut devtools, &popup).await;
    click_answer(&mut devtools, &popup, "denied").await;

    let report = sdk_report(&mut host, name, STEP).await;
    let step = |key: &str| report[key].clone();
    let said = |key: &str| report[key]["text"].as_str().unwrap_or_default().to_owned();
    assert_eq!(step("gift")["isError"], false, "{name}: {report}");
    assert_eq!(step("express")["isError"], false, "{name}: {report}");
    assert_eq!(
        step("express")["structured"]["submitted"],
        json!(["the form “Delivery”"]),
        "{name}: {report}"
    );
    assert_eq!(
        report["expressStatus"], "Delivery to anywhere, express",
        "{name}: the allowed submission arrived"
    );
    for key in ["country", "countryRetry"] {
        assert_eq!(step(key)["isError"], true, "{name}: {key}: {report}");
        assert!(
            said(key).contains("denied this step")
                && said(key).contains("The fields were filled, but the form was not submitted."),
            "{name}: {key}: {report}"
        );
    }
    assert_eq!(
        report["countryAfter"], "de Delivery",
        "{name}: filled, not sent"
    );
    assert_eq!(step("booked")["isError"], false, "{name}: {report}");
    assert!(
        said("booked").contains("\nbooked for 2\n<<end-page-words "),
        "{name}: {report}"
    );
    assert_eq!(step("bookingDenied")["isError"], true, "{name}: {report}");
    assert!(
        said("bookingDenied").contains("denied this step"),
        "{name}: {report}"
    );
    assert_eq!(
        devtools
            .eval(&tab, "[document.getElementById('ask').hidden, document.getElementById('booked').textContent, document.getElementById('declined').textContent]")
            .await,
        json!([true, "booked for 2", "declined: The person declined the interaction this tool asked for"]),
        "{name}: the denied call never asked in the page"
    );
    // The retry of the denied fill did not ask again: four prompts, four receipts.
    assert_eq!(
        devtools
            .eval(
                &popup,
                "document.querySelectorAll('.person-request').length"
            )
            .await,
        json!(0),
        "{name}"
    );
    let receipts = receipts(&relay, "ask-before", 4).await;
    let outcomes: Vec<&str> = receipts
        .iter()
        .map(|r| r["detail"].as_str().unwrap().split(' ').next().unwrap())
        .collect();
    assert_eq!(
        outcomes,
        ["allowed", "denied", "allowed", "denied"],
        "{name}: {receipts:?}"
    );

    drop(devtools);
    drop(browser);
    relay.shutdown().await;
}

async fn ask_before(chromium: &Path, sdk: &Sdk) {
    let relay = relay().await;
    let site = FixtureSite::start().await;
    let profile = Profile::new(&relay, "Person's browser");
    // The person's setting: ask before forms and purchases, on every site.
    let config_path = profile.extension_dir.join("dev-config.json");
    let mut config: Value =
        serde_json::from_str(&std::fs::read_to_string(&config_path).unwrap()).unwrap();
    config["askBefore"] = json!({"forms": ["*"], "purchases": ["*"]});
    std::fs::write(&config_path, config.to_string()).unwrap();
    let browser = Browser::launch_with(chromium, &profile, &["--remote-debugging-port=0"]);
    let mut devtools = DevTools::attach(&browser).await;
    let origin = devtools.extension_origin().await;
    let mut host = sdk_host(sdk, "ask-before", &site.url("checkout.html"), &relay, &[]);

    let popup = devtools.open_popup(&origin, 600).await;
    let card = wait_for_request(&mut devtools, &popup).await;
    assert!(
        card.contains(
            "Shopping Assistant is about to click the button “Place order” in the form “Checkout”"
        ),
        "{card}"
    );
    assert!(
        card.contains("purchase or payment") && card.contains("submits a form"),
        "{card}"
    );
    assert!(
        card.contains("\"Checkout\""),
        "the page, by its title: {card}"
    );
    devtools
        .save_screenshot(&popup, "popup-ask-before.png")
        .await;
    click_answer(&mut devtools, &popup, "allowed").await;

    wait_for_request(&mut devtools, &popup).await;
    click_answer(&mut devtools, &popup, "denied").await;

    let report = finish(&mut host).await;
    assert_eq!(
        report["unasked"],
        json!({"typed": true, "coupon": true}),
        "{report}"
    );
    assert_eq!(report["allowed"]["isError"], false, "{report}");
    assert_eq!(report["allowed"]["title"], "Order placed", "{report}");
    let denied = &report["denied"];
    assert_eq!(denied["isError"], true, "{report}");
    assert!(
        denied["text"]
            .as_str()
            .unwrap()
            .contains("denied this step")
            && denied["text"].as_str().unwrap().contains("Do not retry it"),
        "{report}"
    );
    assert_eq!(denied["retry"]["isError"], true, "{report}");
    assert!(denied["retry"]["text"]
        .as_str()
        .unwrap()
        .contains("denied this step"));
    assert_eq!(denied["title"], "Checkout", "nothing was ordered: {report}");
    // The receipts: one per decision, with the site and the kind of step, not the page's words.
    let receipts = receipts(&relay, "ask-before", 2).await;
    assert_eq!(receipts.len(), 2, "{receipts:?}");
    for (receipt, outcome) in receipts.iter().zip(["allowed", "denied"]) {
        let detail = receipt["detail"].as_str().unwrap();
        assert!(
            detail.starts_with(outcome) && detail.contains("on 127.0.0.1:"),
            "{detail}"
        );
        assert!(
            detail.ends_with("click (it looks like a purchase or payment; it submits a form)"),
            "{detail}"
        );
        assert!(
            !detail.contains("Place order"),
            "page content in the trail: {detail}"
        );
    }
    // Denied once: the retry did not ask the person again.
    assert_eq!(
        devtools
            .eval(
                &popup,
                "document.querySelectorAll('.person-request').length"
            )
            .await,
        json!(0)
    );

    drop(devtools);
    drop(browser);
    relay.shutdown().await;
}

/// An SDK script (`hand-off` or `ask-before`) driving the bridge at `relay`, its stdout piped
/// for the report (the bridge's log goes to the test's output).
fn sdk_host(
    sdk: &Sdk,
    script: &str,
    page: &str,
    relay: &mcp_relay::server::RunningRelay,
    bridge_args: &[&str],
) -> tokio::process::Child {
    sdk.spawn(
        script,
        &[page],
        &relay.url("/mcp"),
        bridge_args,
        &token(USER, Some(Role::Mcp)),
    )
}

async fn hand_off(chromium: &Path, sdk: &Sdk, mode: Mode) {
    let relay = relay().await;
    let site = FixtureSite::start().await;
    let profile = Profile::new(&relay, "Person's browser");
    let browser = Browser::launch_in(
        chromium,
        &profile,
        mode,
        &["--remote-debugging-port=0"],
        &["about:blank"],
    );
    let mut devtools = DevTools::attach(&browser).await;
    let origin = devtools.extension_origin().await;

    // The host: the official SDK, through the bridge, with progress every 500 ms.
    let mut host = sdk_host(
        sdk,
        "hand-off",
        &site.url("login.html"),
        &relay,
        &["--progress-interval", "500ms"],
    );

    // The person opens the popup and finds the request there, saying who asks what, where.
    let popup = devtools.open_popup(&origin, 600).await;
    let card = wait_for_request(&mut devtools, &popup).await;
    assert!(
        card.contains("Hand-off Test Host asks you to: Sign in to Example Bank"),
        "{card}"
    );
    assert!(
        card.contains("\"Sign in\""),
        "the page, by its title: {card}"
    );
    devtools.save_screenshot(&popup, "popup-hand-off.png").await;
    if mode == Mode::Headful {
        browser.save_screen("screen-hand-off.png").await;
    }

    // They take their time, sign in in the assistant's tab, and click Done.
    tokio::time::sleep(PERSON_TAKES).await;
    let tab = page_session(&mut devtools, "login.html").await;
    devtools
        .eval(
            &tab,
            "document.getElementById('user').value = 'ada'; \
             document.getElementById('password').value = 'correct horse'; \
             document.getElementById('sign-in').click(); document.title",
        )
        .await;
    click_answer(&mut devtools, &popup, "done").await;

    // The next request: they will not do it now.
    let card = wait_for_request(&mut devtools, &popup).await;
    assert!(
        card.contains("Approve the transfer on your phone"),
        "{card}"
    );
    click_answer(&mut devtools, &popup, "cancelled").await;

    // The third goes unanswered; its host gives up, which withdraws it from the popup.
    let card = wait_for_request(&mut devtools, &popup).await;
    assert!(card.contains("Nobody will answer this"), "{card}");
    let id = devtools
        .eval(
            &popup,
            "document.querySelector('.person-request').dataset.requestId",
        )
        .await;
    wait_until_gone(
        &mut devtools,
        &popup,
        id.as_str().unwrap(),
        "the host's giving up",
    )
    .await;

    let report = finish(&mut host).await;
    let signed_in = &report["signIn"];
    assert_eq!(signed_in["isError"], false, "{report}");
    let structured = &signed_in["structured"];
    assert_eq!(structured["status"], "done", "{report}");
    assert_eq!(structured["before"]["title"], "Sign in");
    assert_eq!(structured["after"]["title"], "Your account");
    assert!(
        structured["after"]["url"]
            .as_str()
            .unwrap()
            .ends_with("login.html?signed-in"),
        "{report}"
    );
    assert_eq!(structured["changed"], json!(["url", "title"]));
    // The host's timeout is 3 s; the call lasted longer, kept alive by progress.
    let elapsed = signed_in["elapsedMs"].as_u64().unwrap();
    assert!(elapsed > 4_000, "{report}");
    assert!(signed_in["progress"].as_u64().unwrap() >= 4, "{report}");
    assert_eq!(signed_in["progressIncreases"], true, "{report}");
    assert!(
        signed_in["lastProgress"]["message"]
            .as_str()
            .unwrap()
            .contains("waiting for the person"),
        "{report}"
    );
    let refused = &signed_in["refusedMeanwhile"];
    assert_eq!(refused["isError"], true, "{report}");
    assert!(
        refused["text"]
            .as_str()
            .unwrap()
            .contains("is handed to the person"),
        "{report}"
    );

    let cancel = &report["cancel"];
    assert_eq!(cancel["isError"], true, "{report}");
    assert!(
        cancel["text"]
            .as_str()
            .unwrap()
            .contains("Hand-off cancelled"),
        "{report}"
    );

    let gave_up = &report["hostGaveUp"];
    assert_eq!(gave_up["gaveUp"], true, "{report}");
    assert_eq!(gave_up["tabFreedAfterwards"], true, "{report}");

    // Each hand-off's end is a receipt in the relay's audit trail, oldest first.
    let receipts = receipts(&relay, "hand-off", 3).await;
    let details: Vec<&str> = receipts
        .iter()
        .map(|r| r["detail"].as_str().unwrap())
        .collect();
    assert_eq!(details.len(), 3, "{details:?}");
    assert!(
        details[0].starts_with("done after ") && details[0].ends_with(": Sign in to Example Bank"),
        "{details:?}"
    );
    assert!(
        details[1].starts_with("cancelled")
            && details[1].ends_with(": Approve the transfer on your phone"),
        "{details:?}"
    );
    assert!(details[2].starts_with("withdrawn"), "{details:?}");
    assert!(receipts
        .iter()
        .all(|r| r["mcp_client_id"].is_string() && r["connection_id"].is_string()));

    drop(devtools);
    drop(browser);
    relay.shutdown().await;
}

async fn hand_off_in_rounds(chromium: &Path, sdk: &Sdk) {
    use tokio::io::AsyncWriteExt;
    let relay = relay().await;
    let site = FixtureSite::start().await;
    let profile = Profile::new(&relay, "Person's browser");
    let browser = Browser::launch_in(
        chromium,
        &profile,
        Mode::Headless,
        &["--remote-debugging-port=0"],
        &["about:blank"],
    );
    let mut devtools = DevTools::attach(&browser).await;
    let origin = devtools.extension_origin().await;
    // Rounds of 2 s: the person takes longer than two of them in the last hand-off. The
    // bridges' audit log has a line for each round.
    let audit = tempfile::NamedTempFile::new().unwrap();
    let mut host = sdk_host(
        sdk,
        "hand-off-rounds",
        &site.url("login.html"),
        &relay,
        &[
            "--round-wait",
            "2s",
            "--audit-log",
            audit.path().to_str().unwrap(),
        ],
    );
    // What the person answers in the host, line by line.
    let mut in_host = host.stdin.take().expect("the host's stdin is piped");
    let popup = devtools.open_popup(&origin, 600).await;
    let first_id = async |devtools: &mut DevTools| {
        let id = devtools
            .eval(
                &popup,
                "document.querySelector('.person-request').dataset.requestId",
            )
            .await;
        id.as_str().unwrap().to_owned()
    };

    // 1. The popup asks, naming the host that sent no `initialize`; the person signs in, then
    // answers Done in the host: the popup's card goes.
    let card = wait_for_request(&mut devtools, &popup).await;
    assert!(
        card.contains("Hand-off Test Host asks you to: Sign in to Example Bank"),
        "{card}"
    );
    let id = first_id(&mut devtools).await;
    let tab = page_session(&mut devtools, "login.html").await;
    devtools
        .eval(
            &tab,
            "document.getElementById('user').value = 'ada'; \
             document.getElementById('password').value = 'correct horse'; \
             document.getElementById('sign-in').click(); document.title",
        )
        .await;
    in_host.write_all(b"done\n").await.unwrap();
    wait_until_gone(&mut devtools, &popup, &id, "Done in the host").await;

    // 2. Cancel in the popup, then (too late) Done in the host.
    let card = wait_for_request(&mut devtools, &popup).await;
    assert!(
        card.contains("Approve the transfer on your phone"),
        "{card}"
    );
    click_answer(&mut devtools, &popup, "cancelled").await;
    in_host.write_all(b"done\n").await.unwrap();

    // 3. Declined in the host.
    let card = wait_for_request(&mut devtools, &popup).await;
    assert!(card.contains("Confirm the payment"), "{card}");
    let id = first_id(&mut devtools).await;
    in_host.write_all(b"cancel\n").await.unwrap();
    wait_until_gone(&mut devtools, &popup, &id, "declining in the host").await;

    // 4. A host that cannot ask: the person takes longer than a round (and than the host's
    // read timeout of one round), then clicks Done in the popup.
    let card = wait_for_request(&mut devtools, &popup).await;
    assert!(card.contains("Solve the puzzle for me"), "{card}");
    tokio::time::sleep(PERSON_TAKES).await;
    click_answer(&mut devtools, &popup, "done").await;

    let report = finish(&mut host).await;
    assert_eq!(report["protocol"], "2026-07-28", "{report}");
    let asked = &report["askedInHost"];
    assert_eq!(asked["firstIsInputRequired"], true, "{report}");
    assert_eq!(asked["method"], "elicitation/create", "{report}");
    assert!(
        asked["question"].as_str().unwrap().starts_with(
            "Do this step in your browser, then confirm here: Sign in to Example Bank."
        ),
        "{report}"
    );
    assert_eq!(asked["hasState"], true, "{report}");
    assert_eq!(asked["finishedIsInputRequired"], false, "{report}");
    assert_eq!(asked["isError"], false, "{report}");
    let structured = &asked["structured"];
    assert_eq!(structured["status"], "done", "{report}");
    assert_eq!(structured["before"]["title"], "Sign in");
    assert_eq!(structured["after"]["title"], "Your account");
    assert_eq!(structured["changed"], json!(["url", "title"]));
    assert!(
        structured["note"]
            .as_str()
            .unwrap()
            .contains("answered Done in the MCP host"),
        "{report}"
    );
    assert!(
        asked["refusedMeanwhile"]["text"]
            .as_str()
            .unwrap()
            .contains("is handed to the person"),
        "{report}"
    );

    let popup_first = &report["popupFirst"];
    assert_eq!(popup_first["isError"], true, "{report}");
    assert_eq!(popup_first["structured"]["status"], "cancelled", "{report}");
    assert!(
        popup_first["text"]
            .as_str()
            .unwrap()
            .contains("clicked Cancel"),
        "the popup's answer, not the host's: {report}"
    );
    assert!(popup_first["asked"]
        .as_str()
        .unwrap()
        .contains("Approve the transfer on your phone"));

    let declined = &report["declinedInHost"];
    assert_eq!(declined["isError"], true, "{report}");
    assert!(
        declined["text"]
            .as_str()
            .unwrap()
            .contains("answered Cancel in the MCP host"),
        "{report}"
    );
    assert_eq!(
        declined["asked"], 2,
        "the SDK's driver asked in 2 and 3: {report}"
    );

    let polled = &report["polled"];
    assert_eq!(polled["protocol"], "2026-07-28", "{report}");
    assert_eq!(polled["isError"], false, "{report}");
    assert_eq!(polled["structured"]["status"], "done", "{report}");
    // Longer than one round may last (the host's read timeout is 4 s): it took rounds, as
    // the audit log shows: two calls for each of the first three hand-offs (the question, then
    // the answer), and at least three for the last (two rounds of 2 s, then the answer).
    assert!(polled["elapsedMs"].as_u64().unwrap() > 5_000, "{report}");
    let rounds = std::fs::read_to_string(audit.path())
        .unwrap()
        .lines()
        .filter(|line| line.contains(r#""tool":"browser_request_human""#))
        .count();
    assert!(rounds >= 2 * 3 + 3, "{rounds} rounds");

    let receipts = receipts(&relay, "hand-off", 4).await;
    let details: Vec<&str> = receipts
        .iter()
        .map(|r| r["detail"].as_str().unwrap())
        .collect();
    assert_eq!(details.len(), 4, "{details:?}");
    for (detail, (start, end)) in details.iter().zip([
        ("done in the MCP host after ", ": Sign in to Example Bank"),
        ("cancelled after ", ": Approve the transfer on your phone"),
        ("cancelled in the MCP host after ", ": Confirm the payment"),
        ("done after ", ": Solve the puzzle for me"),
    ]) {
        assert!(
            detail.starts_with(start) && detail.ends_with(end),
            "{details:?}"
        );
    }

    drop(devtools);
    drop(browser);
    relay.shutdown().await;
}

/// The relay's audit records of `kind` (the receipts the extension sent), oldest first, once
/// there are `count` (the writer batches).
pub(crate) async fn receipts(
    relay: &mcp_relay::server::RunningRelay,
    kind: &str,
    count: usize,
) -> Vec<Value> {
    let admin = token("root", Some(Role::Admin));
    let deadline = Instant::now() + STEP;
    loop {
        let (status, body) = api(
            relay.local_addr,
            "GET",
            "/api/v1/audit?user_id=e2e-user&limit=1000",
            Some(&admin),
            None,
        )
        .await;
        assert_eq!(status, 200, "{body}");
        let mut found: Vec<Value> = body["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["kind"] == kind)
            .cloned()
            .collect();
        assert!(
            Instant::now() < deadline,
            "{count} {kind} receipts never came; the trail: {body}"
        );
        if found.len() >= count {
            found.sort_by_key(|e| e["at_ms"].as_i64());
            return found;
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Waits for one request in the popup and returns its card's text.
pub(crate) async fn wait_for_request(devtools: &mut DevTools, popup: &str) -> String {
    wait_for_request_within(devtools, popup, STEP).await
}

/// [`wait_for_request`] for at most `bound`: when the request comes from a script that first
/// takes many other steps (an SDK client starting and calling tools), which under CI's load
/// can take longer than one step's bound.
pub(crate) async fn wait_for_request_within(
    devtools: &mut DevTools,
    popup: &str,
    bound: Duration,
) -> String {
    devtools
        .wait_for_within(
            popup,
            "document.querySelectorAll('.person-request').length > 0",
            json!(true),
            bound,
        )
        .await;
    devtools
        .eval(popup, "document.querySelector('.person-request').innerText")
        .await
        .as_str()
        .unwrap()
        .to_owned()
}

/// Clicks an answer on the popup's first request and waits until that request is gone from it
/// (the host's next request may already be there); the popup's own error line, if the extension
/// refused the answer, is in the failure's message.
pub(crate) async fn click_answer(devtools: &mut DevTools, popup: &str, answer: &str) {
    let id = devtools
        .eval(
            popup,
            &format!(
                "(() => {{ const first = document.querySelector('.person-request'); \
                 first.querySelector('.person-{answer}').click(); return first.dataset.requestId; }})()"
            ),
        )
        .await;
    let id = id.as_str().expect("a request to answer").to_owned();
    wait_until_gone(devtools, popup, &id, answer).await;
}

/// Waits until the request `id` is no longer in the popup.
async fn wait_until_gone(devtools: &mut DevTools, popup: &str, id: &str, why: &str) {
    let deadline = Instant::now() + STEP;
    loop {
        let state = devtools
            .eval(
                popup,
                &format!(
                    "[!!document.querySelector('[data-request-id=\"{id}\"]'), \
                     document.getElementById('person-status').textContent]"
                ),
            )
            .await;
        if state[0] == false {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{why} did not end request {id}: {state}"
        );
        tokio::time::sleep(POLL).await;
    }
}

/// A session in the page whose URL contains `part` (the assistant's tab).
async fn page_session(devtools: &mut DevTools, part: &str) -> String {
    let targets = devtools.send(None, "Target.getTargets", json!({})).await;
    let target = targets["targetInfos"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["type"] == "page" && t["url"].as_str().is_some_and(|u| u.contains(part)))
        .unwrap_or_else(|| panic!("no page at {part}: {targets}"))
        .clone();
    let attached = devtools
        .send(
            None,
            "Target.attachToTarget",
            json!({"targetId": target["targetId"], "flatten": true}),
        )
        .await;
    attached["sessionId"].as_str().unwrap().to_owned()
}

/// The host's report (its last line), once it exits.
async fn finish(host: &mut tokio::process::Child) -> Value {
    sdk_report(host, "the SDK host", STEP).await
}
