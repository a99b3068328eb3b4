//! The scenario format (`evals/scenarios/*.json`, one scenario a file, or `*.jsonl`, one
//! a line): a billing world, a conversation, faults, harness disturbances, a timeline
//! of staff actions, and the expected outcome. Unknown fields are refused, so a typo in
//! a scenario is an error, never a check silently skipped.

use std::sync::Arc;

use anyhow::{bail, Context};
use desk::agent::investigator::Investigator;
use desk::agent::Model;
use desk::replies::Language;
use desk::world::World;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use time::OffsetDateTime;

use crate::scripted;

/// One scenario file.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub tags: Vec<String>,
    /// The app's clock when the ticket is opened (the policy version in force follows).
    #[serde(with = "time::serde::rfc3339")]
    pub now: OffsetDateTime,
    /// The billing world (docs/spec/interfaces.md), loaded into the app and the payments mock. Charges may
    /// carry the mock's `refund_profile` (e.g. `"pending"`).
    pub world: Value,
    pub conversation: Conversation,
    /// A scripted model from `agent::scripted` by name (`calls_unknown_tool`,
    /// `loops_forever`, `claims_approval`, `invents_evidence`, `stops_mid_task`…);
    /// absent: the suite's model.
    #[serde(default)]
    pub model: Option<String>,
    /// Mock fault rules installed before the conversation starts.
    #[serde(default)]
    pub faults: Vec<Value>,
    /// Harness disturbances during the investigation.
    #[serde(default)]
    pub disturbances: Disturbances,
    /// Staff actions and later disturbances, in order, after the conversation.
    #[serde(default)]
    pub actions: Vec<Action>,
    /// Serve the app's router on a loopback socket and have the mock deliver signed
    /// webhooks to it.
    #[serde(default)]
    pub webhooks: bool,
    /// Timeout of one provider call (default 1000 ms; latency faults exceed it).
    #[serde(default)]
    pub provider_timeout_ms: Option<u64>,
    /// Drain the worker, reconcile and drain again before grading (default true).
    #[serde(default = "yes")]
    pub settle: bool,
    pub expect: Expect,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Conversation {
    pub customer_id: String,
    /// The order picked in the ticket form.
    #[serde(default)]
    pub order_id: Option<String>,
    /// The first opens the ticket; each later one is sent after the worker drained.
    pub messages: Vec<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Disturbances {
    /// The worker investigating dies inside its Nth model call (1-based); another worker
    /// takes the run over once the lease expired.
    #[serde(default)]
    pub crash_at_model_call: Option<usize>,
}

/// A step after the conversation.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "do", rename_all = "snake_case", deny_unknown_fields)]
pub enum Action {
    /// `POST /api/v1/cases/{id}/approve` as a staff role, with the case's `current`
    /// fingerprint, a `stale` one (one character changed) or the `first` one it had.
    Approve {
        #[serde(rename = "as")]
        role: Role,
        #[serde(default)]
        fingerprint: FingerprintChoice,
        #[serde(default = "ok_status")]
        expect_status: u16,
    },
    /// Two reviewers approve at once; exactly one may win.
    ApproveConcurrently {
        #[serde(default)]
        fingerprint: FingerprintChoice,
    },
    Reject {
        #[serde(rename = "as")]
        role: Role,
        reason: String,
        #[serde(default = "ok_status")]
        expect_status: u16,
    },
    /// The customer writes again on the ticket.
    Message {
        text: String,
        #[serde(default = "ok_status")]
        expect_status: u16,
    },
    /// `worker::drain`.
    Drain,
    /// `n` worker passes at once.
    Workers {
        n: usize,
    },
    /// `reconcile::run`.
    Reconcile,
    /// Installs mock fault rules now.
    Faults {
        rules: Vec<Value>,
    },
    ClearFaults,
    /// Moves the app's clock forward.
    AdvanceClock {
        seconds: i64,
    },
    /// A refund made in the provider's dashboard (legitimately, outside the app).
    RefundElsewhere {
        charge_id: String,
        amount_minor: i64,
    },
    /// Money moved by the environment with no approval (for grader self-tests: the
    /// graders must flag it).
    RogueRefund {
        charge_id: String,
        amount_minor: i64,
    },
    /// Settles the app's pending provider refunds (`/__mock/refunds/{id}/settle`).
    SettleRefunds {
        outcome: String,
        #[serde(default)]
        failure_reason: Option<String>,
    },
    /// Waits (bounded) until the mock delivered or dropped every event.
    AwaitWebhooks,
    /// The executing worker dies after the provider committed the refund and before the
    /// answer was stored (the response hangs; the worker's future is dropped).
    CrashDuringExecution,
}

fn ok_status() -> u16 {
    200
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Agent,
    Supervisor,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FingerprintChoice {
    #[default]
    Current,
    Stale,
    First,
}

/// The expected outcome.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// The final case status (one of these).
    pub status: StatusSet,
    /// The case's reason code; absent: not checked.
    #[serde(default)]
    pub reason_code: Option<String>,
    /// The order the facts are about; absent: not checked.
    #[serde(default)]
    pub order_id: Option<String>,
    /// The refunds the policy engine decided (charge, amount, currency); absent: not
    /// checked; `[]`: none.
    #[serde(default)]
    pub decision_refunds: Option<Vec<ExpectedRefund>>,
    /// The refunds the app made at the provider (dashboard refunds of the scenario
    /// excluded), with their provider status. Default: none.
    #[serde(default)]
    pub provider_refunds: Vec<ExpectedProviderRefund>,
    #[serde(default)]
    pub required_role: Option<String>,
    /// `en`, `zh` or `ja`: the language of the ticket and its replies.
    #[serde(default)]
    pub language: Option<Language>,
    /// Phrases the final reply must contain / must not contain.
    #[serde(default)]
    pub reply_contains: Vec<String>,
    #[serde(default)]
    pub reply_excludes: Vec<String>,
    /// Run-log event kinds the latest run must contain (e.g. `policy_violation`).
    #[serde(default)]
    pub events_include: Vec<String>,
    /// The budget the run exhausted (`steps`, `invalid_tool_calls`, `model_errors`…).
    #[serde(default)]
    pub budget_exhausted: Option<String>,
    /// Whether the final reconciliation must report nothing to look at.
    #[serde(default)]
    pub reconcile_clean: bool,
}

/// One status or several acceptable ones.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(untagged)]
pub enum StatusSet {
    #[default]
    Any,
    One(String),
    Many(Vec<String>),
}

impl StatusSet {
    pub(crate) fn accepts(&self, status: &str) -> bool {
        match self {
            StatusSet::Any => true,
            StatusSet::One(s) => s == status,
            StatusSet::Many(v) => v.iter().any(|s| s == status),
        }
    }

    pub(crate) fn describe(&self) -> String {
        match self {
            StatusSet::Any => "any".into(),
            StatusSet::One(s) => s.clone(),
            StatusSet::Many(v) => v.join(" | "),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectedRefund {
    pub charge_id: String,
    pub amount: String,
    pub currency: String,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectedProviderRefund {
    pub charge_id: String,
    /// Minor units, as the provider keeps them.
    pub amount_minor: i64,
    /// The provider's status (`succeeded`, `pending`, `failed`…).
    pub status: String,
}

impl Scenario {
    pub(crate) fn validate(&self) -> anyhow::Result<()> {
        if self.name.trim().is_empty() {
            bail!("a scenario needs a name");
        }
        World::parse(&self.world.to_string())
            .with_context(|| format!("{}: the world is not a billing world", self.name))?;
        if self.conversation.messages.is_empty() {
            bail!("{}: the conversation has no message", self.name);
        }
        if let Some(m) = &self.model {
            scripted_model(m).with_context(|| format!("{}: model", self.name))?;
        }
        Ok(())
    }
}

/// The scripted models a scenario may name.
pub(crate) fn scripted_model(name: &str) -> anyhow::Result<Arc<dyn Model>> {
    Ok(match name {
        "calls_unknown_tool" => Arc::new(scripted::calls_unknown_tool()),
        "sends_string_arguments" => Arc::new(scripted::sends_string_arguments()),
        "claims_approval" => Arc::new(scripted::claims_approval()),
        "calls_approve_refund" => Arc::new(scripted::calls_approve_refund()),
        "tries_write_action" => Arc::new(scripted::tries_write_action()),
        "loops_forever" => Arc::new(scripted::loops_forever()),
        "refunds_the_wrong_charge" => Arc::new(scripted::refunds_the_wrong_charge()),
        "inflates_the_amount" => Arc::new(scripted::inflates_the_amount()),
        "invents_evidence" => Arc::new(scripted::invents_evidence()),
        "stops_mid_task" => Arc::new(scripted::stops_mid_task()),
        "answers_garbage" => Arc::new(scripted::answers_garbage()),
        "builtin" => Arc::new(Investigator),
        other => bail!("unknown scripted model '{other}'"),
    })
}
