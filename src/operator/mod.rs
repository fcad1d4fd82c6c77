//! The operator's wing (docs/ADMIN.md): durable state ([`store`]), the in-memory mirror of
//! approvals and revocations the sessions consult ([`access`]), the audit trail ([`audit`]),
//! the admin API ([`admin`]) and its command-line client ([`admin_cli`]), and the dashboard
//! ([`dashboard`]). The relay core reaches it only through the seams `crate::state` declares;
//! it reaches the core through `RelayState`.

pub mod access;
pub mod admin;
pub mod admin_cli;
pub mod audit;
pub mod caller;
pub mod dashboard;
pub mod session;
pub mod store;

use std::ops::Deref;
use std::sync::Arc;

use crate::state::RelayState;

/// What the operator's wing holds besides the relay it watches: the concrete access mirror
/// (the core sees it only as its `Gate`), the signed-in dashboard sessions and the sign-in
/// throttle. The admin API and the dashboard are served with it as their state.
pub struct Operator {
    pub relay: Arc<RelayState>,
    /// Approvals, revocations and the live sockets a revocation closes.
    pub access: Arc<access::Access>,
    /// Signed-in `/dashboard` sessions.
    pub dashboard: session::Sessions,
    /// Dashboard sign-in attempts per client address.
    pub sign_in: session::SignInThrottle,
}

impl Operator {
    pub fn new(relay: Arc<RelayState>, access: Arc<access::Access>) -> Operator {
        Operator {
            relay,
            access,
            dashboard: Default::default(),
            sign_in: Default::default(),
        }
    }
}

/// The operator reads the relay's configuration, hub and verifier as its own: `operator.hub`
/// is the relay's hub. Its own fields (`access` above all) come first.
impl Deref for Operator {
    type Target = RelayState;

    fn deref(&self) -> &RelayState {
        &self.relay
    }
}

/// Other nodes' revocations and admin questions reach the wing here.
impl crate::routing::cluster::NodeOperator for Operator {
    fn revoked(&self, revocation: crate::routing::cluster::Revocation) {
        self.access.apply_remote_revocation(&revocation);
    }

    fn answer(
        &self,
        question: crate::routing::cluster::AdminQuestion,
    ) -> crate::routing::cluster::AdminAnswer {
        admin::answer_node(self, question)
    }
}
