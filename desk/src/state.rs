//! What the process runs with: the store, the clock, the provider, the policies and their
//! index, the model, and the settings read once at start. Built by [`crate::build_state`];
//! the web layer wraps it in its own `AppState` (axum state, assembled there and never
//! imported here), the worker and the CLI hold it as it is. The domain
//! never sees it: each domain function takes what it uses (`&Db`, `&dyn Clock`, …), or
//! one of the small structs below that name a need (`Rules`, `Decider`, `Sender`, …),
//! which `Services` lends out. It knows nothing of HTTP.

use std::sync::Arc;

use rag_index::PolicyIndex;
use tokio::sync::Notify;

use crate::agent::Model;
use crate::approvals::Desk;
use crate::billing::BillingSource;
use crate::clock::Clock;
use crate::investigation::Investigator;
use crate::reconcile::Reconciler;
use crate::refunds::{Executor, Sender};
use crate::runs::Queue;
use crate::workflow::{Decider, Rules};
use payments_adapter::PaymentsClient;
use store::Db;

#[derive(Clone)]
pub struct Services {
    pub db: Db,
    pub clock: Arc<dyn Clock>,
    pub payments: PaymentsClient,
    /// The policy set now in force: each copy of the state takes the current
    /// generation (`policies::Policies`; a publish swaps it).
    pub policies: crate::policies::Policies,
    pub index: Arc<PolicyIndex>,
    pub model: Arc<dyn Model>,
    /// What runs are made with (model, prompt and tool schema versions), recorded on each.
    pub versions: Arc<harness::Versions>,
    /// Where tools and the workflow read billing records (live: store + provider).
    pub billing: Arc<dyn BillingSource>,
    /// Wakes the background worker when new work is queued.
    pub wake: Arc<Notify>,
    /// Names this process in leases.
    pub instance_id: String,
    /// Whether cookies get `Secure` (served over TLS).
    pub secure_cookies: bool,
    /// Age after which an unanswered approval request expires.
    pub approval_ttl_ms: i64,
    /// How long message text, run-event payloads and audit details are kept.
    pub retention: crate::config::RetentionWindows,
    /// Work each worker pass does for the crates above the desk (`chores`), registered
    /// by whoever starts the worker; none unless registered.
    pub chores: crate::chores::Chores,
    /// Verifies `Stripe-Signature` on provider webhooks.
    pub webhook_secret: String,
    /// Live shadow mode: the agent's decisions are recorded, humans decide by hand.
    pub shadow_mode: bool,
    /// `DEFAULT_LANGUAGE`: what a customer writing in a language we do not answer in is
    /// answered in.
    pub default_language: crate::replies::Language,
    /// `ESCALATION_ROUTING`: how the agents' escalations are shared out.
    pub escalation_routing: crate::cases::routing::Routing,
    /// Agent runs one worker pass advances at the same time.
    pub worker_concurrency: usize,
    /// When the stuck-run watchdog flags a run, and when it hands the case over.
    pub watchdog: crate::config::WatchdogPeriods,
    /// What the customer's page says about when we usually answer.
    pub reply_targets: crate::cases::ReplyTargets,
    /// Where policy what-ifs find history files by name (`FIXTURES_DIR/history`).
    pub history_dir: std::path::PathBuf,
    /// `POLICY_SECOND_APPROVER=on`: a draft's only author may not publish it.
    pub policy_second_approver: bool,
    /// `METRICS_TOKEN`: when set, `/metrics` needs it as the bearer token.
    pub metrics_token: Option<String>,
    /// `PUBLIC_URL`: where links point (invitations, sign-in).
    pub public_url: Option<String>,
    /// The company's OpenID Connect provider, when configured.
    pub oidc: Option<std::sync::Arc<crate::auth::oidc::Oidc>>,
    /// `GROUP_ROLES`, `SCIM_DEFAULT_ROLE`, `PASSWORD_SIGN_IN`.
    pub group_roles: std::sync::Arc<crate::auth::provisioning::GroupRoles>,
    pub scim_default_role: crate::auth::StaffRole,
    pub password_sign_in: bool,
    /// The database gauges of `/metrics`, shared by every clone of the state.
    pub metrics_cache: std::sync::Arc<crate::gauges::GaugeCache>,
    /// The rollout guards' thresholds and minimum samples.
    pub rollout_guards: crate::rollout::guards::Guards,
    /// Where agent runs commit their steps: several runs' steps share a transaction
    /// (`runs::StepWriter`).
    pub steps: crate::runs::StepWriter,
    /// What each channel runs with (mail: the support address, SMTP, the watched
    /// mailbox, the inbound token), each part absent when its setting is.
    pub channels: Arc<crate::channels::Channels>,
}

/// What the domain's functions are lent: each names one need, borrowed from the state.
impl Services {
    /// Whether staff can sign in through the company's identity provider.
    pub fn oidc_configured(&self) -> bool {
        self.oidc.is_some()
    }

    pub fn rules(&self) -> Rules<'_> {
        Rules {
            policies: &self.policies,
            billing: self.billing.as_ref(),
        }
    }

    pub fn decider(&self) -> Decider<'_> {
        Decider {
            db: &self.db,
            clock: self.clock.as_ref(),
            rules: self.rules(),
            index: &self.index,
            shadow_mode: self.shadow_mode,
            versions: &self.versions,
        }
    }

    pub fn investigator(&self) -> Investigator<'_> {
        Investigator {
            decider: self.decider(),
            model: self.model.as_ref(),
            steps: &self.steps,
        }
    }

    pub fn queue(&self) -> Queue<'_> {
        Queue {
            versions: &self.versions,
            wake: &self.wake,
            rollout_default: crate::rollout::Mode::default_for(self.shadow_mode),
            default_language: self.default_language,
        }
    }

    /// This state with `chore` registered for every worker pass, after those before it.
    pub fn with_chore(mut self, chore: impl crate::chores::Chore + 'static) -> Services {
        self.chores = self.chores.with(chore);
        self
    }

    pub fn sender(&self) -> Sender<'_> {
        Sender {
            db: &self.db,
            clock: self.clock.as_ref(),
            payments: &self.payments,
        }
    }

    pub fn executor(&self) -> Executor<'_> {
        Executor {
            sender: self.sender(),
            rules: self.rules(),
            queue: self.queue(),
            instance_id: &self.instance_id,
        }
    }

    pub fn reconciler(&self) -> Reconciler<'_> {
        Reconciler {
            sender: self.sender(),
            instance_id: &self.instance_id,
        }
    }

    pub fn publisher(&self) -> crate::policies::Publisher<'_> {
        crate::policies::Publisher {
            db: &self.db,
            clock: self.clock.as_ref(),
            policies: &self.policies,
            index: &self.index,
            versions: &self.versions,
            second_approver: self.policy_second_approver,
        }
    }

    /// The outbox's sender.
    pub fn postman(&self) -> crate::mail::send::Postman<'_> {
        self.reach().postman()
    }

    /// Where customer mail is taken in.
    pub fn intake(&self) -> crate::mail::intake::Intake<'_> {
        self.reach().mail_intake()
    }

    /// What the channels are lent by a worker pass.
    pub fn reach(&self) -> crate::reach::Reach<'_> {
        crate::reach::Reach {
            db: &self.db,
            clock: self.clock.as_ref(),
            queue: self.queue(),
            instance_id: &self.instance_id,
            channels: &self.channels,
        }
    }

    pub fn desk(&self) -> Desk<'_> {
        Desk {
            db: &self.db,
            clock: self.clock.as_ref(),
            rules: self.rules(),
            wake: &self.wake,
        }
    }
}
