//! The SSE events of HTTP MCP sessions, kept for a while so that a host whose stream broke
//! can resume it with `Last-Event-ID` (MCP Streamable HTTP, "Resumability and Redelivery").
//!
//! Why the relay keeps them itself: rmcp's own per-session cache forgets a request's stream the
//! moment its answer is sent, which is exactly when a host that lost its connection mid-call
//! (a laptop changing networks while the browser works) needs it. Given an event store, rmcp
//! stamps every event with the id the store assigns and replays from the store on resume.
//!
//! Bounded: at most [`MAX_EVENTS`] events holding at most [`MAX_BYTES`] of messages, oldest
//! out first, shared by every session of the relay; a host that comes back after its events
//! were pushed out gets an empty stream (rmcp's answer to an id it cannot resume) and asks
//! again. Ids are `<stream key>-<n>`, the key 128 random bits per stream: an id is learnt only
//! by reading the stream, so nobody replays another session's events by guessing one.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use rmcp::transport::streamable_http_server::session::{
    EventId, EventStore, EventStoreError, EventStream, ServerSseMessage,
};

/// Most events kept, over all sessions.
pub const MAX_EVENTS: usize = 4096;
/// Most message bytes kept, over all sessions (a screenshot result is a few MiB).
pub const MAX_BYTES: usize = 32 << 20;

/// What an event costs besides its message: its id, stream and bookkeeping.
const EVENT_OVERHEAD: usize = 128;

/// The relay's event store for HTTP MCP sessions.
#[derive(Default)]
pub struct RecentEvents {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    /// Each live stream's key and the number its next event gets.
    streams: HashMap<String, (Arc<str>, u64)>,
    /// Oldest first.
    events: VecDeque<Kept>,
    bytes: usize,
}

struct Kept {
    stream: String,
    key: Arc<str>,
    seq: u64,
    bytes: usize,
    event: ServerSseMessage,
}

impl RecentEvents {
    /// How many events are kept now (for tests).
    pub fn len(&self) -> usize {
        self.inner.lock().unwrap().events.len()
    }

    /// Whether nothing is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[async_trait::async_trait]
impl EventStore for RecentEvents {
    async fn store_event(
        &self,
        stream_id: &str,
        event: &ServerSseMessage,
    ) -> Result<EventId, EventStoreError> {
        // Measured outside the lock: a large result is serialized once more here.
        let bytes = EVENT_OVERHEAD
            + event.message.as_ref().map_or(0, |message| {
                serde_json::to_vec(&**message).map_or(0, |v| v.len())
            });
        let mut inner = self.inner.lock().unwrap();
        let (key, seq) = {
            let entry = inner
                .streams
                .entry(stream_id.to_owned())
                .or_insert_with(|| (uuid::Uuid::new_v4().simple().to_string().into(), 0));
            entry.1 += 1;
            (Arc::clone(&entry.0), entry.1 - 1)
        };
        let id = format!("{key}-{seq}");
        let mut kept = event.clone();
        kept.event_id = Some(id.clone());
        inner.events.push_back(Kept {
            stream: stream_id.to_owned(),
            key,
            seq,
            bytes,
            event: kept,
        });
        inner.bytes += bytes;
        while inner.events.len() > MAX_EVENTS || inner.bytes > MAX_BYTES {
            let Some(old) = inner.events.pop_front() else {
                break;
            };
            inner.bytes -= old.bytes;
            // The stream's newest event gone means all of it is: forget its key too.
            if inner
                .streams
                .get(&old.stream)
                .is_some_and(|(key, next)| *key == old.key && *next == old.seq + 1)
            {
                inner.streams.remove(&old.stream);
            }
        }
        Ok(id)
    }

    async fn replay_events_after(
        &self,
        last_event_id: &str,
    ) -> Result<EventStream, EventStoreError> {
        let (key, seq) = last_event_id
            .rsplit_once('-')
            .and_then(|(key, seq)| Some((key, seq.parse::<u64>().ok()?)))
            .ok_or("not an event id this relay gave")?;
        let inner = self.inner.lock().unwrap();
        if !inner.events.iter().any(|kept| &*kept.key == key) {
            return Err("no such event, or it was pushed out by newer ones".into());
        }
        let later: Vec<ServerSseMessage> = inner
            .events
            .iter()
            .filter(|kept| &*kept.key == key && kept.seq > seq)
            .map(|kept| kept.event.clone())
            .collect();
        Ok(Box::pin(futures_util::stream::iter(later)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt;
    use rmcp::model::{JsonRpcResponse, JsonRpcVersion2_0, RequestId, ServerJsonRpcMessage};
    use std::time::Duration;

    fn answer(id: i64, text: &str) -> ServerSseMessage {
        let result = serde_json::from_value(
            serde_json::json!({"content": [{"type": "text", "text": text}]}),
        )
        .unwrap();
        ServerSseMessage::from_message(ServerJsonRpcMessage::Response(JsonRpcResponse {
            jsonrpc: JsonRpcVersion2_0,
            id: RequestId::Number(id),
            result,
        }))
    }

    async fn replay(store: &RecentEvents, after: &str) -> Result<Vec<ServerSseMessage>, String> {
        match store.replay_events_after(after).await {
            Ok(stream) => Ok(stream.collect().await),
            Err(e) => Err(e.to_string()),
        }
    }

    #[tokio::test]
    async fn replay_gives_the_later_events_of_the_same_stream_only() {
        let store = RecentEvents::default();
        let priming = store
            .store_event("a", &ServerSseMessage::retry(Duration::from_secs(3)))
            .await
            .unwrap();
        let other = store.store_event("b", &answer(1, "other")).await.unwrap();
        let first = store.store_event("a", &answer(2, "first")).await.unwrap();
        let later = replay(&store, &priming).await.unwrap();
        assert_eq!(later.len(), 1);
        assert_eq!(later[0].event_id.as_deref(), Some(first.as_str()));
        assert!(replay(&store, &first).await.unwrap().is_empty());
        assert!(replay(&store, &other).await.unwrap().is_empty());
        assert_ne!(
            priming.rsplit_once('-').unwrap().0,
            other.rsplit_once('-').unwrap().0
        );
    }

    #[tokio::test]
    async fn an_unknown_or_guessed_id_replays_nothing() {
        let store = RecentEvents::default();
        store.store_event("a", &answer(1, "secret")).await.unwrap();
        assert!(replay(&store, "0/0").await.is_err());
        assert!(replay(&store, "00000000000000000000000000000000-0")
            .await
            .is_err());
    }

    #[tokio::test]
    async fn old_events_are_pushed_out_by_count_and_by_bytes() {
        let store = RecentEvents::default();
        let first = store.store_event("a", &answer(0, "x")).await.unwrap();
        for n in 1..=MAX_EVENTS as i64 {
            store.store_event("b", &answer(n, "y")).await.unwrap();
        }
        assert_eq!(store.len(), MAX_EVENTS);
        assert!(replay(&store, &first).await.is_err(), "pushed out");
        assert!(!store.inner.lock().unwrap().streams.contains_key("a"));

        let big = "z".repeat(MAX_BYTES / 3);
        for n in 0..4 {
            store.store_event("c", &answer(n, &big)).await.unwrap();
        }
        assert!(store.inner.lock().unwrap().bytes <= MAX_BYTES);
        assert!(store.len() < MAX_EVENTS);
    }
}
