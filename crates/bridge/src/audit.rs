//! The audit log (`--audit-log FILE`): one JSON line per call through the bridge.
//!
//! Appended, never rewritten, one `write` per line, so `tail -f` and log shippers see whole
//! records and a crash loses at most the call in flight. Each record says when, which tool,
//! what it reached (`target`: the tool, CDP command, resource or prompt behind a `proxy` or
//! `call_tool_*` call), the declared variant and intent, the outcome, and how long it took.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};

use serde::Serialize;

use super::intent::Intent;

/// How a call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Outcome {
    Ok,
    /// The target ran and failed, or the arguments were wrong.
    Error,
    /// An intent check refused the call; nothing ran.
    Refused,
}

/// One line of the log.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct AuditRecord {
    /// RFC 3339, UTC, milliseconds.
    pub time: String,
    /// The MCP tool the host called.
    pub tool: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// `read`, `write` or `destructive` for `call_tool_*`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub variant: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub intent: Option<Intent>,
    pub outcome: Outcome,
    /// The first line of the error a model saw, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub duration_ms: f64,
}

/// The open log, or nothing when `--audit-log` is not given. Clones share the file: the relay
/// gives each hosted session its own clone, stamped with the session's user.
#[derive(Debug, Default, Clone)]
pub(crate) struct AuditLog {
    /// Behind a mutex so concurrent calls never interleave inside a line.
    file: Option<Arc<Mutex<File>>>,
    /// Added to every record as `user` (a relay serves many users; a bridge only one).
    user: Option<String>,
}

impl AuditLog {
    pub(crate) fn disabled() -> AuditLog {
        AuditLog {
            file: None,
            user: None,
        }
    }

    /// The same file, with every record naming `user`.
    pub(crate) fn for_user(&self, user: &str) -> AuditLog {
        AuditLog {
            file: self.file.clone(),
            user: Some(user.to_owned()),
        }
    }

    pub(crate) fn open(path: &Path) -> std::io::Result<AuditLog> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(AuditLog {
            file: Some(Arc::new(Mutex::new(file))),
            user: None,
        })
    }

    pub(crate) fn append(&self, record: &AuditRecord) {
        let Some(file) = &self.file else { return };
        let mut value = serde_json::to_value(record).expect("audit records serialize");
        if let (Some(user), Some(fields)) = (&self.user, value.as_object_mut()) {
            fields.insert("user".into(), user.as_str().into());
        }
        let mut line = serde_json::to_vec(&value).expect("audit records serialize");
        line.push(b'\n');
        if let Err(e) = file.lock().unwrap().write_all(&line) {
            tracing::warn!(error = %e, "writing the audit log failed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_appended_as_json_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let log = AuditLog::open(&path).unwrap();
        for outcome in [Outcome::Ok, Outcome::Refused] {
            log.append(&AuditRecord {
                time: "2026-01-01T00:00:00.000Z".into(),
                tool: "call_tool_read".into(),
                target: Some("cdp:DOM.getDocument".into()),
                variant: Some("read"),
                intent: Some(Intent {
                    data_sensitivity: Some("public".into()),
                    reason: None,
                }),
                outcome,
                error: None,
                duration_ms: 1.5,
            });
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["outcome"], "ok");
        assert_eq!(lines[1]["outcome"], "refused");
        assert_eq!(lines[0]["intent"]["data_sensitivity"], "public");
        assert!(lines[0].get("error").is_none());
    }
}
