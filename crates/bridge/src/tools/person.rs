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
//! How the MCP host waits depends on what it speaks:
//! - Most hosts: their single `tools/call` stays open all along. Hosts time calls out too (the
//!   TypeScript SDK after 60 s), unless progress arrives and they reset the timeout on it; so
//!   while the call waits, a progress notification goes out every `--progress-interval` to a
//!   host that sent a `progressToken`. A host that cancels the call withdraws the hand-off.
//! - A host of MCP 2026-07-28, through the stdio bridge: the call is split into rounds
//!   ([`super::rounds`]). The first opens the hand-off and, for a host that can show an
//!   elicitation, answers at once asking the person there too (Done / Cancel); otherwise, and
//!   in every later round, it waits up to `--round-wait` and, if the person has not answered,
//!   answers "input required" with only its sealed state, and the host calls again. Whichever
//!   answer comes first, the popup's or the host's, is the one: the extension takes one answer
//!   per hand-off.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{CallToolResult, ProgressNotificationParam, ProgressToken};
use rmcp::service::{Peer, RoleServer};
use serde_json::{json, Value};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::args::RequestHuman;
use super::pages::on_tab;
use super::results::{error, success};
use super::rounds::{self, HandOffState, Round};
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
/// The extension ends a hand-off at its timeout; the bridge waits this much longer for the poll
/// that reports it.
const PAST_DEADLINE: Duration = Duration::from_secs(25);

/// What the host's call brought that a long tool needs: the host to notify, the token it asked
/// progress under (`_meta.progressToken`), the call's cancellation, and, for a host of MCP
/// 2026-07-28, the call's round.
#[derive(Clone)]
pub(crate) struct CallScope {
    pub(crate) peer: Option<Peer<RoleServer>>,
    pub(crate) progress_token: Option<ProgressToken>,
    pub(crate) cancelled: CancellationToken,
    pub(crate) round: Option<Arc<Round>>,
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

/// Runs `call` (a script's) without the host call's round: a script cannot be resumed from a
/// later round, so a hand-off inside one waits in its call as for any host.
pub(super) async fn without_round<F: Future>(call: F) -> F::Output {
    match CALL.try_with(|scope| CallScope {
        round: None,
        ..scope.clone()
    }) {
        Ok(scope) => CALL.scope(scope, call).await,
        Err(_) => call.await,
    }
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

/// How a bounded wait for the person ended.
enum Waited {
    /// The hand-off ended (done, cancelled, timed out, withdrawn): the extension's answer.
    Ended(Value),
    /// The person has not answered yet.
    Open,
    /// The host cancelled its call; the hand-off was withdrawn. The call's answer.
    Withdrawn(CallToolResult),
}

/// What a waiting call tells the host meanwhile.
struct Watch<'a> {
    scope: Option<&'a CallScope>,
    /// When the hand-off was opened, for "waited … s".
    opened: Instant,
    timeout: Duration,
    reason: &'a str,
}

impl Toolbox {
    /// Opens the hand-off, then waits for the person's answer: in bounded polls within this
    /// call, telling the host it is alive meanwhile, or in rounds for a host of MCP 2026-07-28.
    pub(super) async fn request_human(
        &self,
        name: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<CallToolResult, LinkError> {
        let scope = CALL.try_with(Clone::clone).ok();
        if let Some(round) = scope.as_ref().and_then(|s| s.round.clone()) {
            return self
                .request_human_in_rounds(name, params, timeout, scope.as_ref(), &round)
                .await;
        }
        let reason = params["reason"].as_str().unwrap_or_default().to_owned();
        let id = match self.open_hand_off(name, params).await? {
            Ok(id) => id,
            Err(refused) => return Ok(refused),
        };
        let watch = Watch {
            scope: scope.as_ref(),
            opened: Instant::now(),
            timeout,
            reason: &reason,
        };
        let give_up = watch.opened + timeout + PAST_DEADLINE;
        match self
            .wait_for_person(name, &id, give_up, give_up, &watch)
            .await?
        {
            Waited::Ended(answer) => Ok(answered(name, answer)),
            Waited::Withdrawn(result) => Ok(result),
            Waited::Open => Ok(no_answer(name, &id, timeout)),
        }
    }

    /// One round of a hand-off for a host of MCP 2026-07-28: opens it (the first round) or
    /// takes up the one the host's state names, takes the person's answer from the host if it
    /// brought one, then waits up to `--round-wait`; still open, the call's answer is "input
    /// required" (set on `round`) with the state for the next round.
    async fn request_human_in_rounds(
        &self,
        name: &str,
        params: Value,
        timeout: Duration,
        scope: Option<&CallScope>,
        round: &Round,
    ) -> Result<CallToolResult, LinkError> {
        let reason = params["reason"].as_str().unwrap_or_default().to_owned();
        let state = match &round.resumed {
            Some(state) => {
                round.rounds.renew(&state.handoff_id);
                state.clone()
            }
            None => {
                let id = match self.open_hand_off(name, params).await? {
                    Ok(id) => id,
                    Err(refused) => return Ok(refused),
                };
                let opened_ms = rounds::now_ms();
                let state = HandOffState {
                    handoff_id: id,
                    opened_ms,
                    deadline_ms: opened_ms + timeout.as_millis() as i64,
                    asked: round.can_ask,
                };
                if round.can_ask {
                    // The host shows the question while the person may also use the popup.
                    let sealed = round.rounds.seal(&state, &round.binding());
                    round.require(rounds::ask(&reason, sealed));
                    return Ok(input_required_placeholder(&state.handoff_id));
                }
                state
            }
        };
        let id = state.handoff_id.as_str();
        if state.asked {
            if let Some(answer) = rounds::host_answer(&round.responses) {
                let ended = self
                    .link
                    .call(
                        "answerHuman",
                        json!({"handoffId": id, "answer": answer.as_str()}),
                    )
                    .await?;
                // Already answered in the popup: that answer stands, and is what comes back.
                if ended["status"] != "waiting" {
                    return Ok(answered(name, ended));
                }
            }
        }
        let now_ms = rounds::now_ms();
        let since_opened =
            Duration::from_millis(now_ms.saturating_sub(state.opened_ms).max(0) as u64);
        let to_deadline =
            Duration::from_millis(state.deadline_ms.saturating_sub(now_ms).max(0) as u64);
        let now = Instant::now();
        let watch = Watch {
            scope,
            opened: now.checked_sub(since_opened).unwrap_or(now),
            timeout,
            reason: &reason,
        };
        let give_up = now + to_deadline + PAST_DEADLINE;
        let until = give_up.min(now + round.rounds.wait());
        match self
            .wait_for_person(name, id, until, give_up, &watch)
            .await?
        {
            Waited::Ended(answer) => Ok(answered(name, answer)),
            Waited::Withdrawn(result) => Ok(result),
            Waited::Open if Instant::now() >= give_up => Ok(no_answer(name, id, timeout)),
            Waited::Open => {
                let sealed = round.rounds.seal(&state, &round.binding());
                round.require(rounds::still_waiting(sealed));
                round.rounds.lease(id, Arc::clone(&self.link));
                Ok(input_required_placeholder(id))
            }
        }
    }

    /// `requestHuman`: the hand-off's id, or the answer for an extension that has none.
    async fn open_hand_off(
        &self,
        name: &str,
        params: Value,
    ) -> Result<Result<String, CallToolResult>, LinkError> {
        let opened = self.link.call("requestHuman", params).await?;
        Ok(match opened["handoffId"].as_str() {
            Some(id) => Ok(id.to_owned()),
            None => Err(error(format!(
                "{name} failed: the extension does not know hand-offs; update the mcp-relay extension"
            ))),
        })
    }

    /// Polls `awaitHuman` for hand-off `id` until the person answers or `until` passes, telling
    /// the host it is alive meanwhile; a lost connection is waited out until `give_up`. The
    /// host's cancelling the call withdraws the hand-off.
    async fn wait_for_person(
        &self,
        name: &str,
        id: &str,
        until: Instant,
        give_up: Instant,
        watch: &Watch<'_>,
    ) -> Result<Waited, LinkError> {
        let mut ticker = tokio::time::interval(self.progress_interval);
        ticker.tick().await;
        loop {
            let left = until.saturating_duration_since(Instant::now());
            let poll = self.link.call(
                "awaitHuman",
                json!({"handoffId": id, "waitMs": left.min(POLL).as_millis() as u64}),
            );
            tokio::pin!(poll);
            let answer = loop {
                tokio::select! {
                    answer = &mut poll => break answer,
                    _ = ticker.tick() => {
                        let message = format!(
                            "waiting for the person ({} s of at most {} s): {}",
                            seconds(watch.opened),
                            watch.timeout.as_secs(),
                            watch.reason
                        );
                        progress(watch.scope, watch.opened, watch.timeout, message).await;
                    }
                    _ = cancelled(watch.scope) => {
                        // The host gave up on the call: the person should not be left waiting.
                        let _ = self.link.call("cancelHuman", json!({"handoffId": id})).await;
                        return Ok(Waited::Withdrawn(error(format!(
                            "{name}: the call was cancelled; the hand-off was withdrawn"
                        ))));
                    }
                }
            };
            match answer {
                Ok(answer) if answer["status"] == "waiting" => {}
                Ok(answer) => return Ok(Waited::Ended(answer)),
                // The relay or the socket went away between two polls: the extension keeps the
                // hand-off, so poll again once the bridge has reconnected, until the timeout.
                Err(
                    LinkError::ConnectionLost | LinkError::Timeout(_) | LinkError::Unreachable(_),
                ) if Instant::now() < give_up => {
                    tokio::time::sleep(RETRY_AFTER).await;
                }
                Err(other) => return Err(other),
            }
            if Instant::now() >= until {
                return Ok(Waited::Open);
            }
        }
    }
}

/// The answer when the hand-off's timeout passed without word from the extension.
fn no_answer(name: &str, id: &str, timeout: Duration) -> CallToolResult {
    error(format!(
        "{name}: no answer about hand-off {id} within {} s",
        timeout.as_secs()
    ))
}

/// What the gateway (and its audit line) sees of a round that answers "input required"; the
/// host gets the `InputRequiredResult` instead (server.rs).
fn input_required_placeholder(id: &str) -> CallToolResult {
    success(
        format!("Hand-off {id} is waiting for the person; input required from the host."),
        None,
    )
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
        peer: Some(peer),
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
