//! The `Origin` check every door makes: the WebSocket upgrades on `/extension` and `/mcp` and
//! the HTTP MCP endpoint. One function, so the doors cannot disagree about which pages may
//! reach a relay.

use axum::http::HeaderMap;

use crate::config::ServeConfig;

/// Whether a browser page from `origin` may open `endpoint`. Non-browser clients send no
/// `Origin`; browsers always do, so this is what keeps a web page from reaching a relay on
/// localhost. Extensions connect from `chrome-extension://<id>`.
pub fn allowed(config: &ServeConfig, headers: &HeaderMap, extension: bool) -> bool {
    let Some(origin) = headers.get(axum::http::header::ORIGIN) else {
        return true;
    };
    let Ok(origin) = origin.to_str() else {
        return false;
    };
    let origin = origin.trim().trim_end_matches('/');
    if extension
        && origin
            .get(.."chrome-extension://".len())
            .is_some_and(|scheme| scheme.eq_ignore_ascii_case("chrome-extension://"))
    {
        return true;
    }
    config.allowed_origins.iter().any(|allowed| {
        allowed
            .trim()
            .trim_end_matches('/')
            .eq_ignore_ascii_case(origin)
    })
}
