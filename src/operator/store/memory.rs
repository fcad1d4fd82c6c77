//! The `--state memory` backend: the same behaviour as SQLite, kept in the process and gone
//! when it exits. The audit trail keeps the newest [`MAX_AUDIT_RECORDS`] records.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use super::{AuditEntry, AuditQuery, AuditRecord, BrowserRecord, Revocations, RevokedToken};

/// Audit records a memory store keeps (the oldest go first): about 30 MB at most.
pub const MAX_AUDIT_RECORDS: usize = 100_000;

#[derive(Default)]
pub struct MemoryStore(Mutex<Inner>);

#[derive(Default)]
struct Inner {
    browsers: HashMap<String, BrowserRecord>,
    revocations: Revocations,
    audit: VecDeque<AuditRecord>,
    meta: HashMap<String, String>,
}

impl MemoryStore {
    pub(super) fn browsers(&self) -> Vec<BrowserRecord> {
        let mut list: Vec<_> = self.0.lock().unwrap().browsers.values().cloned().collect();
        list.sort_by(|a, b| a.id.cmp(&b.id));
        list
    }

    pub(super) fn put_browser(&self, browser: &BrowserRecord) {
        self.0
            .lock()
            .unwrap()
            .browsers
            .insert(browser.id.clone(), browser.clone());
    }

    pub(super) fn delete_browser(&self, id: &str) {
        self.0.lock().unwrap().browsers.remove(id);
    }

    pub(super) fn revocations(&self) -> Revocations {
        self.0.lock().unwrap().revocations.clone()
    }

    pub(super) fn revoke_token(&self, token: &RevokedToken) {
        let mut inner = self.0.lock().unwrap();
        let tokens = &mut inner.revocations.tokens;
        if !tokens
            .iter()
            .any(|t| t.jti == token.jti && t.user_id == token.user_id)
        {
            tokens.push(token.clone());
        }
    }

    pub(super) fn revoke_user(&self, user_id: &str, issued_before: i64) {
        let mut inner = self.0.lock().unwrap();
        let cutoffs = &mut inner.revocations.cutoffs;
        match cutoffs.iter_mut().find(|(u, _)| u == user_id) {
            Some((_, before)) => *before = (*before).max(issued_before),
            None => cutoffs.push((user_id.to_owned(), issued_before)),
        }
    }

    pub(super) fn set_user_cutoff(&self, user_id: &str, issued_before: Option<i64>) {
        let mut inner = self.0.lock().unwrap();
        let cutoffs = &mut inner.revocations.cutoffs;
        cutoffs.retain(|(u, _)| u != user_id);
        if let Some(before) = issued_before {
            cutoffs.push((user_id.to_owned(), before));
        }
    }

    pub(super) fn append_audit(&self, entries: &[AuditEntry<'_>]) {
        // Built before taking the lock: queries and the writer share it.
        let skip = entries.len().saturating_sub(MAX_AUDIT_RECORDS);
        let records: Vec<AuditRecord> = entries[skip..].iter().map(AuditEntry::to_record).collect();
        let mut inner = self.0.lock().unwrap();
        for record in records {
            if inner.audit.len() >= MAX_AUDIT_RECORDS {
                inner.audit.pop_front();
            }
            inner.audit.push_back(record);
        }
    }

    pub(super) fn query_audit(&self, query: &AuditQuery) -> Vec<AuditRecord> {
        let inner = self.0.lock().unwrap();
        inner
            .audit
            .iter()
            .rev()
            .filter(|r| query.matches(r))
            .take(query.limit)
            .cloned()
            .collect()
    }

    pub(super) fn prune_audit(&self, before_ms: i64) -> usize {
        let mut inner = self.0.lock().unwrap();
        let before = inner.audit.len();
        inner.audit.retain(|r| r.at_ms >= before_ms);
        before - inner.audit.len()
    }

    pub(super) fn meta(&self, key: &str) -> Option<String> {
        self.0.lock().unwrap().meta.get(key).cloned()
    }

    pub(super) fn set_meta(&self, key: &str, value: &str) {
        self.0
            .lock()
            .unwrap()
            .meta
            .insert(key.to_owned(), value.to_owned());
    }
}
