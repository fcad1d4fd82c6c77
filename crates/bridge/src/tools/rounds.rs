//! `browser_request_human` for hosts of MCP 2026-07-28, which ask for input with multi
//! round-trip requests (SEP-2322) instead of holding one call open: the bridge answers
//! `tools/call` with an `InputRequiredResult`, the host fulfils its `inputRequests` (here: an
//! elicitation asking the person to confirm the step) and calls again with their answers
//! (`inputResponses`) and the opaque `requestState` echoed back. Only the flow lives in
//! person.rs; this module is what the rounds carry:
//!
//! - [`HandOffState`], the `requestState`: which hand-off the call is about, sealed with an
//!   HMAC under a key only this bridge process holds, bound to the call (tool name and
//!   arguments) and expiring some minutes after the hand-off's own deadline (rmcp's
//!   [`RequestStateCodec`]). The host sees it but cannot forge another hand-off's, nor move one
//!   to another call: the extension's hand-off ids are unguessable, but a state that names one
//!   must also be one this bridge issued for this very call.
//! - [`ask`]: the elicitation (Done / Cancel) for a host that declared it can show one, and
//!   [`host_answer`], what its answer means.
//! - [`Rounds::lease`]: a host that drives the rounds calls again within a second (the Python
//!   SDK sleeps 50-250 ms after a state-only answer); one that has not called again within the
//!   lease has given up (it ran out of rounds, or went away), so the hand-off is withdrawn
//!   rather than left in the person's popup until its timeout.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    InputRequiredResult, InputResponses, JsonObject, RequestStateCodec, RequestStateError,
    SealOptions,
};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::link::BrowserLink;

/// The key of the elicitation in `inputRequests`, and of its answer in `inputResponses`.
pub(crate) const ASK_KEY: &str = "handOff";
/// How long a state-only answer waits for the host's next call before the hand-off is withdrawn.
const LEASE: Duration = Duration::from_secs(30);
/// A state stays good this long after its hand-off's deadline: the extension keeps an ended
/// hand-off's answer ten minutes, so a late call still learns how it ended.
const KEPT_AFTER_DEADLINE: Duration = Duration::from_secs(600);
/// Mixed into every binding: a state sealed for something else can never open as this.
const DOMAIN: &[u8] = b"mcp-relay/bridge/hand-off-state/v1";

/// What a `requestState` says: the hand-off, and where it stands. Readable by the host (the
/// seal protects integrity, not secrecy); nothing in it is the person's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct HandOffState {
    /// The extension's id of the hand-off.
    pub(crate) handoff_id: String,
    /// When it was opened and when it ends (Unix ms), for progress and the last round.
    pub(crate) opened_ms: i64,
    pub(crate) deadline_ms: i64,
    /// Whether the host was asked (an elicitation), so its answer is one the bridge expects.
    pub(crate) asked: bool,
}

/// The rounds of one bridge: the key its states are sealed with, how long a round waits, and
/// the leases of hand-offs whose host owes the next call.
pub(crate) struct Rounds {
    codec: RequestStateCodec,
    wait: Duration,
    lease: Duration,
    leases: Arc<Mutex<HashMap<String, tokio::task::AbortHandle>>>,
}

/// The one answer to a `requestState` that does not open: rmcp asks that every failure look
/// the same to the client (the reason is logged).
pub(crate) const REFUSED: &str = "requestState refused: it is not a current state this bridge \
issued for this call (altered, issued for other arguments or by another bridge process, or \
expired). Nothing was done. Call the tool again without requestState to start over";

impl Rounds {
    /// Rounds whose states only this process can seal or open: the key is new each start
    /// (two v4 UUIDs from the OS's generator: 244 random bits), so a restarted bridge refuses
    /// the states of the one before, whose hand-offs the extension withdrew with its connection.
    pub(crate) fn new(wait: Duration) -> Rounds {
        let mut key = Vec::with_capacity(32);
        key.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
        key.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
        Rounds::with_key(key, wait)
    }

    fn with_key(key: Vec<u8>, wait: Duration) -> Rounds {
        Rounds {
            codec: RequestStateCodec::try_new(key).expect("a 32-byte key"),
            wait: wait.max(Duration::from_secs(1)),
            lease: LEASE,
            leases: Arc::default(),
        }
    }

    /// The same rounds with a lease of `lease` (tests, which cannot wait 30 s).
    #[cfg(test)]
    pub(crate) fn with_lease(mut self, lease: Duration) -> Rounds {
        self.lease = lease;
        self
    }

    /// How long one round waits for the person before answering "still waiting".
    pub(crate) fn wait(&self) -> Duration {
        self.wait
    }

    /// `state` as a `requestState` for the call `binding` names.
    pub(crate) fn seal(&self, state: &HandOffState, binding: &[u8]) -> String {
        let expires_ms = state
            .deadline_ms
            .saturating_add(KEPT_AFTER_DEADLINE.as_millis() as i64);
        let ttl = Duration::from_millis(expires_ms.saturating_sub(now_ms()).max(0) as u64);
        self.codec
            .seal_json_with(state, &SealOptions::new().associated_data(binding).ttl(ttl))
            .expect("a hand-off state serializes")
    }

    /// The state `sealed` names, if this bridge sealed it for the call `binding` names and it
    /// has not expired; else why not, for the log (the host is told [`REFUSED`]).
    pub(crate) fn open(
        &self,
        sealed: &str,
        binding: &[u8],
    ) -> Result<HandOffState, RequestStateError> {
        self.codec.open_json_with(sealed, binding)
    }

    /// Withdraws hand-off `id` through `link` unless the host calls again (see [`Self::renew`])
    /// within the lease.
    pub(crate) fn lease(&self, id: &str, link: Arc<dyn BrowserLink>) {
        let leases = Arc::clone(&self.leases);
        let owned = id.to_owned();
        let after = self.lease;
        let task = tokio::spawn(async move {
            tokio::time::sleep(after).await;
            leases.lock().unwrap().remove(&owned);
            tracing::info!(
                handoff = %owned,
                "the host did not call again for the hand-off; withdrawing it"
            );
            if let Err(e) = link
                .call("cancelHuman", json!({ "handoffId": owned }))
                .await
            {
                tracing::debug!("withdrawing an abandoned hand-off: {e}");
            }
        });
        if let Some(before) = self
            .leases
            .lock()
            .unwrap()
            .insert(id.to_owned(), task.abort_handle())
        {
            before.abort();
        }
    }

    /// The host called again about hand-off `id`: its lease, if any, ends.
    pub(crate) fn renew(&self, id: &str) {
        if let Some(lease) = self.leases.lock().unwrap().remove(id) {
            lease.abort();
        }
    }
}

/// What a host call brought for the rounds: the bridge's [`Rounds`], the call it is (for the
/// binding), the state and answers it echoed, whether the host can show an elicitation, and
/// the place where the hand-off leaves its `InputRequiredResult`.
pub(crate) struct Round {
    pub(crate) rounds: Arc<Rounds>,
    tool: String,
    args: Arc<JsonObject>,
    /// The state the host echoed, already opened: it was checked before anything ran.
    pub(crate) resumed: Option<HandOffState>,
    pub(crate) responses: InputResponses,
    /// The host declared elicitation in form mode (an empty `elicitation` capability means form).
    pub(crate) can_ask: bool,
    outcome: Mutex<Option<InputRequiredResult>>,
}

impl Round {
    /// The round of the host's call of `tool` with `args`; a `request_state` that does not
    /// open is refused before anything runs (the `Err` is the host's message).
    pub(crate) fn begin(
        rounds: Arc<Rounds>,
        tool: &str,
        args: Arc<JsonObject>,
        request_state: Option<&str>,
        responses: Option<InputResponses>,
        can_ask: bool,
    ) -> Result<Round, &'static str> {
        let mut round = Round {
            rounds,
            tool: tool.to_owned(),
            args,
            resumed: None,
            responses: responses.unwrap_or_default(),
            can_ask,
            outcome: Mutex::new(None),
        };
        if let Some(sealed) = request_state {
            match round.rounds.open(sealed, &round.binding()) {
                Ok(state) => round.resumed = Some(state),
                Err(why) => {
                    tracing::info!(tool, reason = %why, "refused a requestState");
                    return Err(REFUSED);
                }
            }
        }
        Ok(round)
    }

    /// What a state is bound to: this tool, called with exactly these arguments.
    pub(crate) fn binding(&self) -> Vec<u8> {
        binding(&self.tool, &self.args)
    }

    /// Sets the call's answer: input required.
    pub(crate) fn require(&self, input: InputRequiredResult) {
        *self.outcome.lock().unwrap() = Some(input);
    }

    /// The `InputRequiredResult` the hand-off left, if it did.
    pub(crate) fn take_input_required(&self) -> Option<InputRequiredResult> {
        self.outcome.lock().unwrap().take()
    }
}

/// The associated data of a state: the domain, the tool and its arguments in a canonical form
/// (keys sorted), so the same call always binds the same bytes.
fn binding(tool: &str, args: &JsonObject) -> Vec<u8> {
    let mut out = DOMAIN.to_vec();
    out.push(0);
    out.extend_from_slice(tool.as_bytes());
    out.push(0);
    canonical(&Value::Object(args.clone()), &mut out);
    out
}

fn canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push(b'{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(Value::String(key.clone()).to_string().as_bytes());
                out.push(b':');
                canonical(&map[key], out);
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                canonical(item, out);
            }
            out.push(b']');
        }
        scalar => out.extend_from_slice(scalar.to_string().as_bytes()),
    }
}

/// An `InputRequiredResult` carrying only `state`: "still waiting, call again".
pub(crate) fn still_waiting(state: String) -> InputRequiredResult {
    InputRequiredResult::from_request_state(state)
}

/// An `InputRequiredResult` asking the person, through the host, to do the step and confirm:
/// a form with one choice, Done or Cancel, and `state`.
pub(crate) fn ask(reason: &str, state: String) -> InputRequiredResult {
    let message = format!(
        "Do this step in your browser, then confirm here: {reason}. (You can also answer \
         Done or Cancel in the mcp-relay extension's popup.)"
    );
    let result = json!({
        "resultType": "input_required",
        "inputRequests": {
            ASK_KEY: {
                "method": "elicitation/create",
                "params": {
                    "mode": "form",
                    "message": message,
                    "requestedSchema": {
                        "type": "object",
                        "properties": {
                            "answer": {
                                "type": "string",
                                "title": "Did you do the step?",
                                "oneOf": [
                                    {"const": "done", "title": "Done: I did it"},
                                    {"const": "cancel", "title": "Cancel: I will not do it now"},
                                ],
                                "default": "done",
                            },
                        },
                        "required": ["answer"],
                    },
                },
            },
        },
        "requestState": state,
    });
    serde_json::from_value(result).expect("the hand-off's elicitation is a valid input request")
}

/// The person's answer to [`ask`] as the host sent it back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HostAnswer {
    Done,
    Cancelled,
}

impl HostAnswer {
    /// The extension's word for it (`answerHuman`'s `answer`).
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            HostAnswer::Done => "done",
            HostAnswer::Cancelled => "cancelled",
        }
    }
}

/// What the host's answer to [`ask`] says: Done only when the person chose Done; Cancel when
/// they chose Cancel, declined or dismissed the question; nothing for an answer that says
/// neither (the popup still can).
pub(crate) fn host_answer(responses: &InputResponses) -> Option<HostAnswer> {
    let response = responses.get(ASK_KEY)?;
    match response["action"].as_str()? {
        "accept" => match response["content"]["answer"].as_str()? {
            "done" => Some(HostAnswer::Done),
            "cancel" => Some(HostAnswer::Cancelled),
            _ => None,
        },
        "decline" | "cancel" => Some(HostAnswer::Cancelled),
        _ => None,
    }
}

/// Now, in Unix milliseconds (the states' clock).
pub(crate) fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::InputRequest;

    fn rounds() -> Rounds {
        Rounds::with_key(vec![7; 32], Duration::from_secs(40))
    }

    fn args(value: Value) -> Arc<JsonObject> {
        Arc::new(value.as_object().unwrap().clone())
    }

    fn state() -> HandOffState {
        HandOffState {
            handoff_id: "1c9e0f".into(),
            opened_ms: now_ms(),
            deadline_ms: now_ms() + 300_000,
            asked: true,
        }
    }

    fn begin(rounds: &Arc<Rounds>, call: Value, sealed: &str) -> Result<Round, &'static str> {
        Round::begin(
            Arc::clone(rounds),
            "browser_request_human",
            args(call),
            Some(sealed),
            None,
            false,
        )
    }

    #[test]
    fn a_sealed_state_opens_again_for_the_same_call_whatever_the_order_of_its_arguments() {
        let rounds = Arc::new(rounds());
        let first = Round::begin(
            Arc::clone(&rounds),
            "browser_request_human",
            args(json!({"reason": "Log in", "timeoutSeconds": 120, "tabId": 7})),
            None,
            None,
            true,
        )
        .unwrap();
        let opened = state();
        let sealed = rounds.seal(&opened, &first.binding());
        assert!(
            !sealed.contains("Log in"),
            "the arguments are bound, not stored"
        );
        let again = begin(
            &rounds,
            json!({"tabId": 7, "timeoutSeconds": 120, "reason": "Log in"}),
            &sealed,
        )
        .unwrap();
        assert_eq!(again.resumed, Some(opened));
    }

    #[test]
    fn a_state_forged_altered_or_moved_to_another_call_is_refused_with_one_clear_message() {
        let rounds = Arc::new(rounds());
        let call = json!({"reason": "Log in"});
        let bound = binding("browser_request_human", &args(call.clone()));
        let sealed = rounds.seal(&state(), &bound);

        // Another hand-off's id written into the readable body: the tag no longer matches.
        let parts: Vec<&str> = sealed.split('.').collect();
        use base64::Engine;
        let engine = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let mut body = engine.decode(parts[1]).unwrap();
        let text = String::from_utf8_lossy(&body[8..]).replace("1c9e0f", "2d0f1a");
        body.truncate(8);
        body.extend_from_slice(text.as_bytes());
        let forged = format!("{}.{}.{}", parts[0], engine.encode(body), parts[2]);

        // Sealed by another bridge process (another key).
        let elsewhere =
            Rounds::with_key(vec![9; 32], Duration::from_secs(40)).seal(&state(), &bound);

        for (what, sealed, call) in [
            ("forged", forged.as_str(), call.clone()),
            ("not a state", "hand-off 1c9e0f", call.clone()),
            ("another bridge's", elsewhere.as_str(), call.clone()),
            (
                "another call's",
                sealed.as_str(),
                json!({"reason": "Pay the bill"}),
            ),
        ] {
            let refused = begin(&rounds, call, sealed).err();
            assert_eq!(refused, Some(REFUSED), "{what}");
        }
        assert!(REFUSED.contains("Call the tool again without requestState"));
        // The original still opens: nothing above was a lucky guess.
        assert!(begin(&rounds, call, &sealed).is_ok());
    }

    #[test]
    fn a_state_long_past_its_hand_offs_deadline_is_refused_as_stale() {
        let rounds = rounds();
        let bound = binding("browser_request_human", &args(json!({"reason": "Log in"})));
        let long_ago = HandOffState {
            deadline_ms: now_ms() - KEPT_AFTER_DEADLINE.as_millis() as i64 - 60_000,
            ..state()
        };
        let sealed = rounds.seal(&long_ago, &bound);
        std::thread::sleep(Duration::from_millis(20));
        assert!(matches!(
            rounds.open(&sealed, &bound),
            Err(RequestStateError::Expired)
        ));
        // One whose hand-off ended a minute ago still opens: the extension has its answer.
        let recent = HandOffState {
            deadline_ms: now_ms() - 60_000,
            ..state()
        };
        assert!(rounds.open(&rounds.seal(&recent, &bound), &bound).is_ok());
    }

    #[test]
    fn the_question_to_the_host_is_one_form_elicitation_with_done_and_cancel() {
        let asked = ask("Log in to your bank", "state-1".into());
        assert_eq!(asked.request_state.as_deref(), Some("state-1"));
        let requests = asked.input_requests.as_ref().unwrap();
        assert!(matches!(requests[ASK_KEY], InputRequest::Elicitation(_)));
        let wire = serde_json::to_value(&asked).unwrap();
        assert_eq!(wire["resultType"], "input_required");
        let request = &wire["inputRequests"][ASK_KEY];
        assert_eq!(request["method"], "elicitation/create");
        assert_eq!(request["params"]["mode"], "form");
        assert!(request["params"]["message"]
            .as_str()
            .unwrap()
            .starts_with("Do this step in your browser, then confirm here: Log in to your bank."));
        let choices = &request["params"]["requestedSchema"]["properties"]["answer"]["oneOf"];
        assert_eq!(choices[0]["const"], "done");
        assert_eq!(choices[1]["const"], "cancel");
        let polled = serde_json::to_value(still_waiting("state-2".into())).unwrap();
        assert_eq!(
            polled,
            json!({"resultType": "input_required", "requestState": "state-2"})
        );
    }

    #[test]
    fn only_an_explicit_done_is_done_and_declining_or_dismissing_is_cancel() {
        let answer = |response: Value| {
            let mut responses = InputResponses::new();
            responses.insert(ASK_KEY.into(), response);
            host_answer(&responses)
        };
        assert_eq!(
            answer(json!({"action": "accept", "content": {"answer": "done"}})),
            Some(HostAnswer::Done)
        );
        assert_eq!(
            answer(json!({"action": "accept", "content": {"answer": "cancel"}})),
            Some(HostAnswer::Cancelled)
        );
        assert_eq!(
            answer(json!({"action": "decline"})),
            Some(HostAnswer::Cancelled)
        );
        assert_eq!(
            answer(json!({"action": "cancel"})),
            Some(HostAnswer::Cancelled)
        );
        assert_eq!(answer(json!({"action": "accept", "content": {}})), None);
        assert_eq!(answer(json!({"action": "accept"})), None);
        assert_eq!(host_answer(&InputResponses::new()), None);
    }
}
