//! Admission limits that do not belong to the hub: the global socket cap, the
//! per-connection rate limit, and the process's file-descriptor limit.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// A token bucket: `rate` requests per second on average, bursts up to `burst`.
///
/// Over the limit a request is refused at once (`-32002`) rather than queued, so a runaway
/// client learns about it immediately and nothing waits in the relay forever.
#[derive(Debug)]
pub struct RateLimit {
    rate: f64,
    burst: f64,
    tokens: f64,
    last: Instant,
}

impl RateLimit {
    /// A `rate` of zero (or less) disables the limit.
    pub fn new(rate: f64, burst: f64) -> Self {
        let burst = burst.max(1.0);
        RateLimit {
            rate,
            burst,
            tokens: burst,
            last: Instant::now(),
        }
    }

    /// Takes one token; `false` when the bucket is empty.
    pub fn try_acquire(&mut self) -> bool {
        if self.rate <= 0.0 {
            return true;
        }
        let now = Instant::now();
        let refill = now.duration_since(self.last).as_secs_f64() * self.rate;
        self.tokens = (self.tokens + refill).min(self.burst);
        self.last = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// One of the `--max-connections` socket slots, released on drop.
pub struct SocketSlot(Arc<AtomicUsize>);

impl SocketSlot {
    /// Takes a slot if fewer than `max` are taken.
    pub fn acquire(counter: &Arc<AtomicUsize>, max: usize) -> Option<SocketSlot> {
        counter
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .ok()
            .map(|_| SocketSlot(Arc::clone(counter)))
    }
}

impl Drop for SocketSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The soft limit on open file descriptors (`RLIMIT_NOFILE`), or `None` if unknown.
pub fn fd_limit() -> Option<usize> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we own.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0;
    (ok && limit.rlim_cur != libc::RLIM_INFINITY).then_some(limit.rlim_cur as usize)
}

/// Raises the soft file-descriptor limit to the hard limit, as servers must: many
/// distributions start processes at a soft limit of 1,024, a few hundred idle clients' worth.
/// Returns the limit now in force.
pub fn raise_fd_limit() -> Option<usize> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit read and write the struct we own.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return None;
        }
        if limit.rlim_cur < limit.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: limit.rlim_max,
                rlim_max: limit.rlim_max,
            };
            // On failure the soft limit simply stays where it was.
            libc::setrlimit(libc::RLIMIT_NOFILE, &raised);
        }
    }
    fd_limit()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_limit_allows_the_burst_then_refuses() {
        let mut limit = RateLimit::new(1.0, 3.0);
        assert!((0..3).all(|_| limit.try_acquire()));
        assert!(!limit.try_acquire());
        let mut unlimited = RateLimit::new(0.0, 1.0);
        assert!((0..10_000).all(|_| unlimited.try_acquire()));
    }

    #[test]
    fn socket_slots_are_capped_and_released() {
        let counter = Arc::new(AtomicUsize::new(0));
        let a = SocketSlot::acquire(&counter, 1).unwrap();
        assert!(SocketSlot::acquire(&counter, 1).is_none());
        drop(a);
        assert!(SocketSlot::acquire(&counter, 1).is_some());
    }
}
