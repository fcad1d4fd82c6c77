//! What the operator's wing says to the other nodes, typed: revocations every node must apply,
//! and the admin questions one node asks the others (their connections; kicking one of
//! them). The cluster carries these as JSON between nodes of the same version; the wing
//! (`crate::operator`) answers them through [`NodeOperator`], registered once when the relay
//! is built, so the cluster never imports the wing.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A revocation as the cluster link carries it to the other nodes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Revocation {
    Token {
        jti: String,
        user_id: Option<String>,
    },
    User {
        user_id: String,
        issued_before: i64,
    },
    Browser {
        extension_id: String,
        /// Its user, for a node that has not seen the browser yet.
        #[serde(default)]
        user_id: String,
    },
}

/// The caller a node authenticated, for a question another node acts on with the same checks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AskingCaller {
    pub user_id: String,
    pub admin: bool,
}

/// An admin question one node asks every other live node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum AdminQuestion {
    /// The connections whose MCP client the node holds (`user_id`'s only, when given).
    Connections { user_id: Option<String> },
    /// Kick this connection if its client is held there and the caller may.
    Kick {
        connection_id: String,
        caller: AskingCaller,
    },
}

/// A node's answer to an [`AdminQuestion`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "answer", rename_all = "snake_case")]
pub enum AdminAnswer {
    /// Its connections, each a row of the admin API's connection listing.
    Connections { connections: Vec<Value> },
    /// It kicked the connection; `body` is the admin API's answer.
    Kicked { body: Value },
    /// The connection is there, but the caller may not act on it.
    Forbidden { error: String },
    /// The connection is not there.
    NotHere,
    /// The node could not read the question (another version?).
    Unknown,
}

/// What the operator's wing does with what other nodes send.
pub trait NodeOperator: Send + Sync {
    /// Applies a revocation another node announced: close the sockets it names, refuse its
    /// tokens.
    fn revoked(&self, revocation: Revocation);
    /// Answers another node's admin question.
    fn answer(&self, question: AdminQuestion) -> AdminAnswer;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn questions_and_answers_cross_as_tagged_json() {
        let kick = AdminQuestion::Kick {
            connection_id: "conn-1".into(),
            caller: AskingCaller {
                user_id: "alice".into(),
                admin: false,
            },
        };
        let text = serde_json::to_string(&kick).unwrap();
        assert_eq!(
            text,
            r#"{"op":"kick","connection_id":"conn-1","caller":{"user_id":"alice","admin":false}}"#
        );
        assert_eq!(serde_json::from_str::<AdminQuestion>(&text).unwrap(), kick);
        let answer = serde_json::to_string(&AdminAnswer::NotHere).unwrap();
        assert_eq!(answer, r#"{"answer":"not_here"}"#);
        let revocation = Revocation::User {
            user_id: "bob".into(),
            issued_before: 5,
        };
        let text = serde_json::to_string(&revocation).unwrap();
        assert_eq!(text, r#"{"kind":"user","user_id":"bob","issued_before":5}"#);
        assert!(serde_json::from_str::<AdminQuestion>(r#"{"op":"drop_tables"}"#).is_err());
    }
}
