//! What a run left behind, read once for every grader: the case and ticket views, the
//! provider's ledger, the app's refunds there, the case's intents and the run's log.

use anyhow::anyhow;
use desk::refunds::Intent;
use serde_json::Value;

use super::super::env::Env;

/// What a run left behind, read once for every grader.
pub(super) struct Observed {
    /// `views::case_view` of the scenario's case.
    pub(super) case: Value,
    /// `customer::ticket_view` of its ticket (what the customer's page shows).
    pub(super) ticket: Value,
    /// The mock's ledger: every charge, refund, event and fault counter.
    pub(super) ledger: Value,
    /// Refunds the app made at the provider (the scenario's own dashboard refunds left out).
    pub(super) app_refunds: Vec<Value>,
    pub(super) intents: Vec<Intent>,
    /// The latest run's events, as JSON.
    pub(super) events: Vec<Value>,
    pub(super) status: String,
    pub(super) reason: Option<String>,
    pub(super) messages: Vec<Value>,
    /// The last message not written by the customer.
    pub(super) final_reply: Option<String>,
}

impl Observed {
    pub(super) async fn gather(env: &Env) -> anyhow::Result<Observed> {
        let case = env.case_view().await?;
        let ticket = env.ticket_view().await?;
        let ledger = env.ledger().await?;
        let app_refunds = env.app_refunds().await?;
        let intents = desk::refunds::intents(&env.state.db, env.case_id.as_deref().unwrap_or(""))
            .await
            .map_err(|e| anyhow!("{e}"))?;
        let events: Vec<Value> = match case["run_id"].as_str() {
            Some(run_id) => desk::runs::events(&env.state.db, run_id)
                .await
                .map_err(|e| anyhow!("{e}"))?
                .into_iter()
                .map(|e| serde_json::to_value(e).unwrap_or(Value::Null))
                .collect(),
            None => Vec::new(),
        };
        let status = case["status"].as_str().unwrap_or_default().to_string();
        let reason = case["reason_code"].as_str().map(str::to_string);
        let messages = ticket["messages"].as_array().cloned().unwrap_or_default();
        let final_reply = messages
            .iter()
            .rev()
            .find(|m| m["author"] != "customer")
            .and_then(|m| m["body"].as_str())
            .map(str::to_string);
        Ok(Observed {
            case,
            ticket,
            ledger,
            app_refunds,
            intents,
            events,
            status,
            reason,
            messages,
            final_reply,
        })
    }

    /// Every message the customer was sent.
    pub(super) fn replies(&self) -> impl Iterator<Item = &Value> {
        self.messages.iter().filter(|m| m["author"] != "customer")
    }
}
