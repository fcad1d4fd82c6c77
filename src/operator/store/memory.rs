//! The `--state memory` backend: the same behaviour as SQLite, kept in the process and gone
//! when it exits. The audit trail keeps the newest [`MAX_AUDIT_RECORDS`] records.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use super::{
    AuditEntry, AuditQuery, AuditRecord, BrowserRecord, LocalStore, Revocations, RevokedToken,
};

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

impl LocalStore for MemoryStore {
    fn browsers(&self) -> anyhow::Result<Vec<BrowserRecord>> {
        let mut list: Vec<_> = self.0.lock().unwrap().browsers.values().cloned().collect();
        list.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(list)
    }

    fn put_browser(&self, browser: &BrowserRecord) -> anyhow::Result<()> {
        self.0
            .lock()
            .unwrap()
            .browsers
            .insert(browser.id.clone(), browser.clone());
        Ok(())
    }

    fn delete_browser(&self, id: &str) -> anyhow::Result<()> {
        self.0.lock().unwrap().browsers.remove(id);
        Ok(())
    }

    fn revocations(&self) -> anyhow::Result<Revocations> {
        Ok(self.0.lock().unwrap().revocations.clone())
    }

    fn revoke_token(&self, token: &RevokedToken) -> anyhow::Result<()> {
        let mut inner = self.0.lock().unwrap();
        let tokens = &mut inner.revocations.tokens;
        if !tokens
            .iter()
            .any(|t| t.jti == token.jti && t.user_id == token.user_id)
        {
            tokens.push(token.clone());
        }
        Ok(())
    }

    fn revoke_user(&self, user_id: &str, issued_before: i64) -> anyhow::Result<()> {
        let mut inner = self.0.lock().unwrap();
        let cutoffs = &mut inner.revocations.cutoffs;
        match cutoffs.iter_mut().find(|(u, _)| u == user_id) {
            Some((_, before)) => *before = (*before).max(issued_before),
            None => cutoffs.push((user_id.to_owned(), issued_before)),
        }
        Ok(())
    }

    fn set_user_cutoff(&self, user_id: &str, issued_before: Option<i64>) -> anyhow::Result<()> {
        let mut inner = self.0.lock().unwrap();
        let cutoffs = &mut inner.revocations.cutoffs;
        cutoffs.retain(|(u, _)| u != user_id);
        if let Some(before) = issued_before {
            cutoffs.push((user_id.to_owned(), before));
        }
        Ok(())
    }

    fn append_audit(&self, entries: &[AuditEntry<'_>]) -> anyhow::Result<()> {
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
        Ok(())
    }

    fn query_audit(&self, query: &AuditQuery) -> anyhow::Result<Vec<AuditRecord>> {
        let inner = self.0.lock().unwrap();
        Ok(inner
            .audit
            .iter()
            .rev()
            .filter(|r| query.matches(r))
            .take(query.limit)
            .cloned()
            .collect())
    }

    fn prune_audit(&self, before_ms: i64) -> anyhow::Result<usize> {
        let mut inner = self.0.lock().unwrap();
        let before = inner.audit.len();
        inner.audit.retain(|r| r.at_ms >= before_ms);
        Ok(before - inner.audit.len())
    }

    fn meta(&self, key: &str) -> anyhow::Result<Option<String>> {
        Ok(self.0.lock().unwrap().meta.get(key).cloned())
    }

    fn set_meta(&self, key: &str, value: &str) -> anyhow::Result<()> {
        self.0
            .lock()
            .unwrap()
            .meta
            .insert(key.to_owned(), value.to_owned());
        Ok(())
    }
}
