//! Property tests of the frame model and the id mapping: arbitrary bytes never panic the
//! parser, and arbitrary JSON ids survive a real round trip through the relay exactly.

use crate::common;

use common::*;
use mcp_relay::frame::{self, Incoming};
use proptest::prelude::*;
use serde_json::json;

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// Whatever arrives, the parser answers with a classification or an error, never a panic.
    #[test]
    fn arbitrary_bytes_never_panic_the_parser(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        let text = String::from_utf8_lossy(&bytes);
        let _ = frame::parse(&text);
    }

    /// Near-JSON input (JSON-ish characters in random order) exercises the deeper paths.
    #[test]
    fn json_like_text_never_panics_the_parser(text in r#"[\{\}\[\]":,a-z0-9 \-\.eE\\]{0,120}"#) {
        let _ = frame::parse(&text);
    }

    /// Any well-formed request is classified as a request with its id and method intact.
    #[test]
    fn any_request_object_is_classified_with_its_parts(
        id in id_strategy(),
        method in "[a-zA-Z_/.]{1,20}",
        key in "[a-z]{1,8}",
        value in any::<i64>(),
    ) {
        let text = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":{},"params":{{"{key}":{value}}}}}"#,
            frame::json_string(&method)
        );
        match frame::parse(&text) {
            Ok(Incoming::Request(call)) => {
                prop_assert_eq!(call.id.unwrap().get(), id.as_str());
                prop_assert_eq!(call.method, method);
            }
            other => prop_assert!(false, "not a request: {:?}", other),
        }
    }

    /// Error responses the relay writes are always valid JSON with an integer code.
    #[test]
    fn error_responses_are_valid_json(message in ".{0,40}", code in -33000i64..-31000) {
        let text = frame::error_response("1", code, &message);
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        prop_assert_eq!(value["error"]["code"].as_i64(), Some(code));
        prop_assert_eq!(value["error"]["message"].as_str(), Some(message.as_str()));
    }
}

/// JSON ids as raw text: strings with arbitrary content (escaped), integers of any size,
/// fractions and exponents, `null`.
fn id_strategy() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>()
            .prop_filter("reserved prefixes are refused by design", |s| {
                !(s.starts_with("proxy:") || s.starts_with("ext:") || s.starts_with("conn-"))
            })
            .prop_map(|s| frame::json_string(&s)),
        any::<i64>().prop_map(|n| n.to_string()),
        any::<u64>().prop_map(|n| n.to_string()),
        "-?[1-9][0-9]{18,40}",
        "-?[0-9]\\.[0-9]{1,6}",
        "[1-9][0-9]?e[0-9]{1,2}",
        Just("null".to_owned()),
        Just("-0".to_owned()),
        Just(r#""\u00e9\n\"quoted\"""#.to_owned()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// Arbitrary ids go through a real relay to a real socket and come back byte for byte,
    /// even when several requests share one id.
    #[test]
    fn arbitrary_ids_survive_the_round_trip_exactly(ids in proptest::collection::vec(id_strategy(), 1..40)) {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async {
            let relay = relay().await;
            let ext = Extension::connect(&relay, "alice", "Chrome", "p").await;
            let extension_id = ext.extension_id.clone();
            let _echo = ext.spawn_echo();
            let mut mcp = Mcp::connect(&relay, "alice").await;
            mcp.connect_to(&extension_id).await;
            // All requests in flight at once (duplicates included), then all answers.
            for id in &ids {
                mcp.client
                    .send_text(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"m","params":{{}}}}"#))
                    .await;
            }
            let mut returned = Vec::new();
            for _ in &ids {
                let text = mcp.client.recv_text().await;
                let value: serde_json::Value = serde_json::from_str(&text).unwrap();
                assert_eq!(value["result"]["echo"], json!("m"), "{text}");
                // Cut the raw id out of the frame text: it sits between `"id":` and `,"result"`.
                let start = text.find(r#""id":"#).unwrap() + 5;
                let end = text.rfind(r#","result":"#).unwrap();
                returned.push(text[start..end].to_owned());
            }
            let mut sent = ids.clone();
            sent.sort();
            returned.sort();
            assert_eq!(returned, sent);
        });
    }
}
