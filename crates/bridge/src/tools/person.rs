//! `browser_request_human`: the assistant hands a step only the person can do (a login, a
//! second factor, a CAPTCHA, a consent screen) to the person, in the assistant's own tab, and
//! waits for their "Done" or "Cancel" in the extension's popup (issue 29).
//!
//! The person may take minutes; the relay and this bridge time a request out after about a
//! minute. So the wait is not one long request: `requestHuman` opens the hand-off in the
//! extension and answers at once, then `awaitHuman` asks for the answer in requests of at most
//! [`POLL`] each, until the person answers or the hand-off's own timeout passes. The relay never
//! holds a request longer than usual, and a reconnect between two polls loses nothing: the
//! extension keeps the hand-off under its id.
//!
//! The MCP host's single `tools/call` does stay open all along. Hosts time calls out too (the
//! TypeScript SDK after 60 s), unless progress arrives and they reset the timeout on it; so
//! while the call waits, a progress notification goes out every `--progress-interval` to a host
//! that sent a `progressToken`. A host that cancels the call withdraws the hand-off.

use std::future::Future;
use std::time::Duration;

use rmcp::model::{CallToolResult, ProgressNotificationParam, ProgressToken};
use rmcp::service::{Peer, RoleServer};
use serde_json::{json, Value};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::args::RequestHuman;
use super::pages::on_tab;
use super::results::{error, success};
use super::{Plan, Toolbox};
use crate::link::LinkError;

/// The hand-off's timeout when the call names none, and the most it may name (the extension
/// enforces the same bounds).
pub(crate) const DEFAULT_TIMEOUT_SECONDS: u32 = 300;
pub(crate) const MAX_TIMEOUT_SECONDS: u32 = 1_800;
/// One `awaitHuman` request: well under the relay's 60 s request timeout.
const POLL: Duration = Duration::from_secs(20);
/// How often a waiting call tells the host it is alive, unless `--progress-interval` says.
pub(crate) const DEFAULT_PROGRESS_INTERVAL: Duration = Duration::from_secs(15);
/// After a lost connection, the next poll waits this long (the bridge reconnects meanwhile).
const RETRY_AFTER: Duration = Duration::from_secs(1);

/// What the host's call brought that a long tool needs: the host to notify, the token it asked
/// progress under (`_meta.progressToken`), and the call's cancellation.
#[derive(Clone)]
pub(crate) struct CallScope {
    pub(crate) peer: Peer<RoleServer>,
    pub(crate) progress_token: Option<ProgressToken>,
    pub(crate) cancelled: CancellationToken,
}

tokio::task_local! {
    /// Set around each host call (server.rs). A task-local rather than a parameter because the
    /// toolbox is reached from several paths (direct tools, the gateway's proxy and intent
    /// calls, scripts) and only this tool reports progress.
    static CALL: CallScope;
}

/// Runs `call` with `scope` as the host call it serves.
pub(crate) async fn in_scope<F: Future>(scope: CallScope, call: F) -> F::Output {
    CALL.scope(scope, call).await
}

pub(super) fn plan(args: RequestHuman) -> Result<Plan, String> {
    let reason = args.reason.trim();
    if reason.is_empty() {
        return Err(
            "\"reason\" is empty: say what the person should do, e.g. \"Log in to your bank\""
                .into(),
        );
    }
    let timeout = args.timeout_seconds.unwrap_or(DEFAULT_TIMEOUT_SECONDS);
    if !(1..=MAX_TIMEOUT_SECONDS).contains(&timeout) {
        return Err(format!(
            "\"timeoutSeconds\" must be between 1 and {MAX_TIMEOUT_SECONDS} (30 minutes), got {timeout}"
        ));
    }
    let mut params = on_tab(args.tab_id);
    params.insert("reason".into(), json!(reason));
    params.insert("timeoutSeconds".into(), json!(timeout));
    Ok(Plan::RequestHuman {
        params: Value::Object(params),
        timeout: Duration::from_secs(timeout.into()),
    })
}

impl Toolbox {
    /// Opens the hand-off, then waits for the person's answer in bounded polls, telling the
    /// host it is alive meanwhile.
    pub(super) async fn request_human(
        &self,
        name: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<CallToolResult, LinkError> {
        let reason = params["reason"].as_str().unwrap_or_default().to_owned();
        let opened = self.link.call("requestHuman", params).await?;
        let Some(id) = opened["handoffId"].as_str().map(str::to_owned) else {
            return Ok(error(format!(
                "{name} failed: the extension does not know hand-offs; update the mcp-relay extension"
            )));
        };
        let scope = CALL.try_with(Clone::clone).ok();
        let started = Instant::now();
        // The extension ends the hand-off at its timeout; a little more here for the last poll.
        let give_up = started + timeout + POLL + Duration::from_secs(5);
        let mut ticker = tokio::time::interval(self.progress_interval);
        ticker.tick().await;
        loop {
            let poll = self.link.call(
                "awaitHuman",
                json!({"handoffId": id, "waitMs": POLL.as_millis() as u64}),
            );
            tokio::pin!(poll);
            let answer = loop {
                tokio::select! {
                    answer = &mut poll => break answer,
                    _ = ticker.tick() => {
                        let message = format!("waiting for the person ({} s of at most {} s): {reason}", seconds(started), timeout.as_secs());
                        progress(scope.as_ref(), started, timeout, message).await;
                    }
                    _ = cancelled(scope.as_ref()) => {
                        // The host gave up on the call: the person should not be left waiting.
                        let _ = self.link.call("cancelHuman", json!({"handoffId": id})).await;
                        return Ok(error(format!("{name}: the call was cancelled; the hand-off was withdrawn")));
                    }
                }
            };
            match answer {
                Ok(answer) if answer["status"] == "waiting" => {}
                Ok(answer) => return Ok(answered(name, answer)),
                // The relay or the socket went away between two polls: the extension keeps the
                // hand-off, so poll again once the bridge has reconnected, until the timeout.
                Err(
                    LinkError::ConnectionLost | LinkError::Timeout(_) | LinkError::Unreachable(_),
                ) if Instant::now() < give_up => {
                    tokio::time::sleep(RETRY_AFTER).await;
                }
                Err(other) => return Err(other),
            }
            if Instant::now() >= give_up {
                return Ok(error(format!(
                    "{name}: no answer about hand-off {id} within {} s",
                    timeout.as_secs()
                )));
            }
        }
    }
}

/// The person's answer as the model reads it: done is a success; cancelled, timed out or
/// withdrawn are errors, since the step was not (or not knowingly) done.
fn answered(name: &str, answer: Value) -> CallToolResult {
    let status = answer["status"].as_str().unwrap_or("unknown");
    let note = answer["note"].as_str().unwrap_or_default();
    let page = |key: &str| {
        let page = &answer[key];
        match (page["url"].as_str(), page["title"].as_str()) {
            (Some(url), Some(title)) => format!("{title:?} at {url}"),
            _ => "(the tab is gone)".to_owned(),
        }
    };
    let text = format!(
        "Hand-off {status} after {} s. {note}\nBefore: {}\nAfter: {}",
        answer["waitedSeconds"],
        page("before"),
        page("after"),
    );
    if status == "done" {
        success(text, Some(answer))
    } else {
        let mut result = error(format!("{name}: {text}"));
        result.structured_content = Some(answer);
        result
    }
}

/// Tenths of a second since `started`: `progress` must grow with every notification, even
/// 100 ms apart.
fn waited(started: Instant) -> f64 {
    (started.elapsed().as_secs_f64() * 10.0).round() / 10.0
}

/// Whole seconds since `started`, for a progress message.
fn seconds(started: Instant) -> String {
    format!("{:.0}", waited(started))
}

async fn progress(scope: Option<&CallScope>, started: Instant, total: Duration, message: String) {
    let Some(CallScope {
        peer,
        progress_token: Some(token),
        ..
    }) = scope
    else {
        return;
    };
    let param = ProgressNotificationParam::new(token.clone(), waited(started))
        .with_total(total.as_secs_f64())
        .with_message(message);
    if let Err(e) = peer.notify_progress(param).await {
        tracing::debug!("progress notification not sent: {e}");
    }
}

impl Toolbox {
    /// Awaits `call` (one request to the extension that may wait for the person: a page tool
    /// that asked for them), telling a host that sent a `progressToken` it is alive every
    /// `--progress-interval`, with `what` it waits for and the bound the call keeps to, so a
    /// host that resets its timeout on progress keeps waiting and the person reading the
    /// host's status knows why.
    pub(super) async fn with_progress<T>(
        &self,
        call: impl Future<Output = T>,
        bound: Duration,
        what: &str,
    ) -> T {
        let scope = CALL.try_with(Clone::clone).ok();
        let started = Instant::now();
        let mut ticker = tokio::time::interval(self.progress_interval);
        ticker.tick().await;
        tokio::pin!(call);
        loop {
            tokio::select! {
                answer = &mut call => return answer,
                _ = ticker.tick() => {
                    let message = format!("{what} ({} s of at most {} s)", seconds(started), bound.as_secs());
                    progress(scope.as_ref(), started, bound, message).await;
                }
            }
        }
    }
}

async fn cancelled(scope: Option<&CallScope>) {
    match scope {
        Some(scope) => scope.cancelled.cancelled().await,
        None => std::future::pending().await,
    }
}
