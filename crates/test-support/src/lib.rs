//! # mcp-relay-test-support
//!
//! Harness pieces that do not depend on the relay, shared by the relay's integration tests
//! and by `mcp-relay bench`. It depends on nothing in the workspace, so the relay can
//! dev-depend on it without a cycle, and the bench can depend on it without pulling the relay
//! library into the binary's dependency graph twice.
//!
//! ## Layout
//!
//! - [`present_or_skip`] (this file): the one rule for a part a test needs from outside the
//!   repository: skip loudly on a workstation, fail in CI.
//! - `nats` ([`NatsServer`]): a `nats-server` child process on a free loopback port, for the cluster tests
//!   and the bench's cluster scenarios (one launcher instead of a copy in each).

#![warn(unreachable_pub)]

mod nats;

pub use nats::NatsServer;

/// A part a test needs from outside the repo (an SDK, an interpreter): in CI (`CI=true`) its
/// absence fails the test; elsewhere the test is skipped with a loud message.
pub fn present_or_skip<T>(found: Option<T>, test: &str, missing: &str) -> Option<T> {
    if found.is_none() {
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("{test}: {missing}");
        }
        // Straight to stderr: the test harness hides a passing test's eprintln!.
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "\n*** SKIP {test}: {missing} ***\n");
    }
    found
}
