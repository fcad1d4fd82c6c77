//! The dashboard's sign-in sessions: a random id in an `HttpOnly` cookie maps to who signed in,
//! never to the token itself (the token is checked once and forgotten).
//!
//! The map is bounded (per user and in all) and every entry expires: after [`IDLE_TIMEOUT`]
//! without a request, and never later than the `exp` of the token it was opened with. Every
//! use re-checks the token's revocation, so revoking the token signs its dashboard out too.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

// tokio's clock (the same as std's outside tests) so the idle timeout can be proved on a
// paused clock.
use tokio::time::Instant;

use crate::auth::Identity;
use crate::operator::access::Access;

/// A session unused this long is forgotten.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(30 * 60);
/// Sessions the relay keeps in all; sign-in beyond it is refused (503) until some expire.
pub const MAX_SESSIONS: usize = 4096;
/// Sessions one user keeps; a further sign-in ends that user's least recently used one.
pub const MAX_SESSIONS_PER_USER: usize = 16;

/// Sign-in attempts one address may make: this many per second on average…
pub const SIGN_IN_RATE: f64 = 1.0;
/// …in bursts of up to this many. Beyond, sign-in answers 429 before looking at the token.
pub const SIGN_IN_BURST: f64 = 10.0;
/// Addresses whose attempts are counted at once; when more come, the counts start afresh.
const SIGN_IN_ADDRESSES: usize = 4096;

/// Sign-in attempts per client address (the TCP peer: behind a proxy, the proxy's), so tokens
/// cannot be tried at thousands a second, each costing a signature check.
#[derive(Default)]
pub struct SignInThrottle(Mutex<HashMap<std::net::IpAddr, crate::net::limits::RateLimit>>);

impl SignInThrottle {
    /// Counts one attempt from `ip`; `false` when it is over the rate.
    pub fn allow(&self, ip: Option<std::net::IpAddr>) -> bool {
        let ip = ip.unwrap_or(std::net::IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED));
        let mut buckets = self.0.lock().unwrap();
        if buckets.len() >= SIGN_IN_ADDRESSES && !buckets.contains_key(&ip) {
            buckets.clear();
        }
        buckets
            .entry(ip)
            .or_insert_with(|| crate::net::limits::RateLimit::new(SIGN_IN_RATE, SIGN_IN_BURST))
            .try_acquire()
    }
}

/// One signed-in dashboard.
#[derive(Clone)]
pub struct Session {
    pub identity: Identity,
    pub admin: bool,
    /// Sent back by the page in `X-CSRF-Token` with every state-changing request.
    pub csrf: String,
    last_used: Instant,
}

/// Why a session could not be opened.
#[derive(Debug, PartialEq, Eq)]
pub enum OpenError {
    Full,
}

pub struct Sessions {
    map: Mutex<HashMap<String, Session>>,
    idle_timeout: Duration,
    max_sessions: usize,
    max_per_user: usize,
}

impl Default for Sessions {
    fn default() -> Self {
        Sessions::with_limits(IDLE_TIMEOUT, MAX_SESSIONS, MAX_SESSIONS_PER_USER)
    }
}

/// 244 random bits as 64 hex digits (two v4 UUIDs, from the OS's generator): unguessable.
pub fn random_id() -> String {
    format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    )
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs()
}

fn live(session: &Session, idle: Duration, now: Instant, now_secs: u64) -> bool {
    now.duration_since(session.last_used) < idle && now_secs < session.identity.expires_at
}

/// Compares without stopping at the first difference, so timing tells nothing of a token.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

impl Sessions {
    /// A map with other bounds than the defaults (the unit tests' small ones).
    pub fn with_limits(idle_timeout: Duration, max_sessions: usize, max_per_user: usize) -> Self {
        Sessions {
            map: Mutex::default(),
            idle_timeout,
            max_sessions,
            max_per_user: max_per_user.max(1),
        }
    }

    /// Opens a session for a verified, unrevoked identity; returns its id.
    pub fn open(&self, identity: Identity, admin: bool) -> Result<(String, Session), OpenError> {
        let now = Instant::now();
        let secs = now_secs();
        let mut map = self.map.lock().unwrap();
        let idle = self.idle_timeout;
        map.retain(|_, s| live(s, idle, now, secs));
        let mut mine: Vec<(String, Instant)> = map
            .iter()
            .filter(|(_, s)| s.identity.user_id == identity.user_id)
            .map(|(id, s)| (id.clone(), s.last_used))
            .collect();
        if mine.len() >= self.max_per_user {
            mine.sort_by_key(|(_, used)| *used);
            for (id, _) in mine.iter().take(mine.len() + 1 - self.max_per_user) {
                map.remove(id);
            }
        }
        if map.len() >= self.max_sessions {
            return Err(OpenError::Full);
        }
        let session = Session {
            identity,
            admin,
            csrf: random_id(),
            last_used: now,
        };
        let id = random_id();
        map.insert(id.clone(), session.clone());
        Ok((id, session))
    }

    /// The live session `id` names (touching it), or `None`: unknown, idle too long, past its
    /// token's `exp`, or its token revoked since (then it is forgotten at once).
    pub fn get(&self, id: &str, access: &Access) -> Option<Session> {
        let now = Instant::now();
        let mut map = self.map.lock().unwrap();
        let session = map.get_mut(id)?;
        if !live(session, self.idle_timeout, now, now_secs())
            || access.check_token(&session.identity).is_err()
        {
            map.remove(id);
            return None;
        }
        session.last_used = now;
        Some(session.clone())
    }

    /// Signs out.
    pub fn close(&self, id: &str) {
        self.map.lock().unwrap().remove(id);
    }

    pub fn len(&self) -> usize {
        self.map.lock().unwrap().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn identity(user: &str, expires_in: u64) -> Identity {
        Identity {
            user_id: user.into(),
            role: None,
            connection_url: None,
            expires_at: now_secs() + expires_in,
            jti: None,
            issued_at: None,
        }
    }

    #[test]
    fn session_ids_are_long_random_and_distinct() {
        let (a, b) = (random_id(), random_id());
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
    }

    #[test]
    fn a_user_keeps_at_most_sixteen_sessions_the_oldest_goes() {
        let sessions = Sessions::default();
        let (first, _) = sessions.open(identity("alice", 3600), false).unwrap();
        for _ in 0..MAX_SESSIONS_PER_USER {
            sessions.open(identity("alice", 3600), false).unwrap();
        }
        assert_eq!(sessions.len(), MAX_SESSIONS_PER_USER);
        let map = sessions.map.lock().unwrap();
        assert!(!map.contains_key(&first));
    }

    #[test]
    fn a_session_never_outlives_its_tokens_exp() {
        let access = Access::in_memory(false);
        let sessions = Sessions::default();
        // A token at its `exp` second: the session is refused at its first use.
        let (id, _) = sessions.open(identity("alice", 0), false).unwrap();
        assert!(sessions.get(&id, &access).is_none());
        assert!(sessions.is_empty(), "and forgotten");
    }

    #[test]
    fn beyond_the_relays_cap_sign_in_is_refused_not_evicting_others() {
        let sessions = Sessions::with_limits(IDLE_TIMEOUT, 2, 16);
        let (a, _) = sessions.open(identity("alice", 3600), false).unwrap();
        let (b, _) = sessions.open(identity("bob", 3600), false).unwrap();
        assert_eq!(
            sessions.open(identity("carol", 3600), false).err(),
            Some(OpenError::Full)
        );
        let map = sessions.map.lock().unwrap();
        assert!(map.contains_key(&a) && map.contains_key(&b));
    }

    #[tokio::test(start_paused = true)]
    async fn an_idle_session_is_forgotten() {
        let access = Access::in_memory(false);
        let idle = IDLE_TIMEOUT;
        let sessions = Sessions::with_limits(idle, 8, 8);
        let (id, _) = sessions.open(identity("alice", 3600), false).unwrap();
        assert!(sessions.get(&id, &access).is_some(), "fresh");
        // Each use starts the idle time afresh.
        tokio::time::advance(idle - Duration::from_millis(1)).await;
        assert!(sessions.get(&id, &access).is_some(), "used just in time");
        tokio::time::advance(idle - Duration::from_millis(1)).await;
        assert!(sessions.get(&id, &access).is_some(), "and again");
        tokio::time::advance(idle).await;
        assert!(
            sessions.get(&id, &access).is_none(),
            "idle past the timeout"
        );
        assert!(sessions.is_empty());
    }

    #[test]
    fn constant_time_eq_compares_whole_strings() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
    }
}
