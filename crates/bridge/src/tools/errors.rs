//! What a model reads when a call fails: what happened, and what to do about it.

use crate::link::LinkError;
use mcp_relay_wire::code;

/// What a model should read when a call fails.
pub(crate) fn advice(error: &LinkError) -> String {
    match error {
        LinkError::Unreachable(m) | LinkError::NoBrowser(m) => m.clone(),
        LinkError::ConnectionLost => error.to_string(),
        LinkError::Denied(message) => format!(
            "the browser's owner has denied this assistant ({message}); do not retry: tell the \
             person, who can undo it on the mcp-relay extension's options page"
        ),
        LinkError::Timeout(d) => format!(
            "no answer within {d:?} (the bridge's --request-timeout): the page may be busy or \
             the browser asleep; call browser_status, then retry"
        ),
        LinkError::Rpc { code, message } => {
            let message = &in_tool_terms(message);
            match *code {
                code::RATE_LIMITED => {
                    format!("the relay's rate limit was hit ({message}): wait a few seconds, then retry")
                }
                code::REQUEST_TIMEOUT => format!(
                "the browser did not answer in time ({message}): the page may still be loading \
                 or busy; retry, or take a browser_snapshot to see where it is"
            ),
                code::EXTENSION_GONE => format!(
                "the browser went away before answering ({message}); the bridge reconnects to it \
                 when it is back: call the tool again in a moment"
            ),
                code::SHUTTING_DOWN => format!(
                "the relay is restarting ({message}); the bridge reconnects by itself: call the \
                 tool again in a few seconds"
            ),
                code::INVALID_PARAMS => format!(
                    "the browser refused the arguments: {message}{}",
                    next_step(message)
                ),
                code::OWNER_APPROVAL_REQUIRED => format!(
                    "the browser's owner has not allowed this assistant yet ({message}); the \
                     bridge waited --approval-wait for them. Tell the person to click Allow in the mcp-relay \
                     extension (its toolbar icon or the notification), then call the tool again"
                ),
                code::BROWSER_NOT_APPROVED => format!(
                    "this browser is waiting for approval on the relay ({message}). Tell the \
                     person to approve it (`mcp-relay admin approve ID` with their token, or \
                     their relay's operator), then call the tool again"
                ),
                code::METHOD_NOT_FOUND => format!(
                    "the browser extension does not know this command ({message}): update the \
                 mcp-relay extension"
                ),
                code::LIMIT_REACHED => format!("the relay refused: {message}"),
                code::NOT_CONNECTED => {
                    "no browser connected: open the browser with the mcp-relay extension and check \
                 its token, then call the tool again"
                        .into()
                }
                _ => format!("the browser could not do it: {message}{}", next_step(message)),
            }
        }
    }
}

/// The extension's sentence in this bridge's terms. The extension answers in the relay
/// protocol's method names (`createTab`, `selectTab`, `getTabs`), which a relay client calls
/// but a model cannot: it has tools.
fn in_tool_terms(message: &str) -> String {
    const TERMS: [(&str, &str); 4] = [
        // No current tab: the first navigation opens one.
        (
            "call createTab, or selectTab with a tabId from getTabs",
            "call browser_navigate with a URL (it opens a tab for this session), or \
             browser_tabs with action \"select\" and a tab it lists",
        ),
        ("createTab", "browser_tabs with action \"new\""),
        ("selectTab", "browser_tabs with action \"select\""),
        ("getTabs", "browser_tabs"),
    ];
    TERMS
        .iter()
        .fold(message.to_owned(), |text, (theirs, ours)| {
            text.replace(theirs, ours)
        })
}

/// The next step a model can take after the extension's own sentence, when that sentence
/// does not already give one: a ref that is gone needs a fresh look at the page.
fn next_step(message: &str) -> &'static str {
    let lower = message.to_lowercase();
    let names_a_step = ["snapshot", "call ", "retry", "try ", "update"]
        .iter()
        .any(|step| lower.contains(step));
    if names_a_step {
        ""
    } else if lower.contains("ref")
        && (lower.contains("not found") || lower.contains("stale") || lower.contains("no element"))
    {
        " (the page changed since the snapshot: take a new browser_snapshot, or browser_find, and use a ref from it)"
    } else if lower.contains("no element") || lower.contains("matches no") {
        " (check the selector, or find the element with browser_find)"
    } else {
        ""
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_browser_waiting_for_approval_tells_the_model_how_to_unblock_it() {
        let text = advice(&LinkError::Rpc {
            code: code::BROWSER_NOT_APPROVED,
            message: "Browser ext-1 is waiting for approval".into(),
        });
        assert!(text.contains("waiting for approval") && text.contains("mcp-relay admin approve"));
    }

    #[test]
    fn the_extensions_method_names_become_the_tools_a_model_can_call() {
        let none = advice(&LinkError::Rpc {
            code: -32000,
            message: "This MCP connection has no current tab; call createTab, or selectTab with \
                      a tabId from getTabs"
                .into(),
        });
        assert_eq!(
            none,
            "the browser could not do it: This MCP connection has no current tab; call \
             browser_navigate with a URL (it opens a tab for this session), or browser_tabs \
             with action \"select\" and a tab it lists"
        );
        let owned = advice(&LinkError::Rpc {
            code: -32000,
            message: "tab 7 belongs to another MCP connection; use a tab from getTabs that is \
                      not owned, or createTab"
                .into(),
        });
        assert!(
            owned.ends_with(
                "use a tab from browser_tabs that is not owned, or browser_tabs with action \"new\""
            ),
            "{owned}"
        );
    }

    #[test]
    fn an_error_without_a_next_step_gets_one() {
        let gone = advice(&LinkError::Rpc {
            code: -32000,
            message: "Element ref e9 not found".into(),
        });
        assert!(gone.ends_with("use a ref from it)"), "{gone}");
        let told = advice(&LinkError::Rpc {
            code: -32000,
            message: "No element matches selector #missing; take a snapshot to see the page".into(),
        });
        assert_eq!(
            told,
            "the browser could not do it: No element matches selector #missing; take a snapshot to see the page"
        );
    }
}
