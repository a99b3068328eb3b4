//! The scenario's timeline, applied to its environment: the conversation (with a
//! worker that may die inside a model call), then each staff action and disturbance of
//! `Scenario::actions`, through the API, the worker and the mock's admin API only.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use axum::http::StatusCode;
use serde_json::{json, Value};

use super::env::{Env, API_KEY};
use super::scenario::{Action, FingerprintChoice, Role, Scenario};

impl Env {
    pub(crate) async fn open_ticket(&mut self, scenario: &Scenario) -> anyhow::Result<()> {
        let conversation = &scenario.conversation;
        let token = self.token("customer", &conversation.customer_id).await?;
        let mut body = json!({ "message": conversation.messages[0] });
        if let Some(order) = &conversation.order_id {
            body["order_id"] = json!(order);
        }
        let (status, ticket) = self
            .request("POST", "/api/v1/tickets", &token, Some(body))
            .await?;
        if status != StatusCode::CREATED {
            bail!("opening the ticket: {status} {ticket}");
        }
        self.ticket_id = ticket["id"].as_str().map(str::to_string);
        self.case_id = ticket["case"]["id"].as_str().map(str::to_string);
        if self.case_id.is_none() {
            bail!("the ticket has no case: {ticket}");
        }
        if let Some(crash) = self.crash.clone() {
            // The investigating worker dies inside the Nth model call: its future is
            // dropped there (what it committed stands, its lease is held until it
            // expires); a healthy worker then takes the run over.
            let mut doomed = self.state.clone();
            doomed.instance_id = "eval-doomed-worker".into();
            let crashed = tokio::select! {
                result = desk::worker::run_once(&doomed) => {
                    result.map_err(|e| anyhow!("the worker failed: {e}"))?;
                    false
                }
                _ = crash.tripped.notified() => true,
            };
            crash.trip_at.store(0, Ordering::SeqCst);
            if !crashed {
                self.trace.disturbance_notes.push(format!(
                    "the run finished before model call {:?}: no crash happened",
                    scenario.disturbances.crash_at_model_call
                ));
            }
            self.clock
                .advance(time::Duration::milliseconds(desk::lease::ms() + 1_000));
        }
        self.drain(&self.state.clone()).await?;
        self.trace.first_fingerprint = self.case_view().await?["fingerprint"]
            .as_str()
            .map(str::to_string);
        for text in &conversation.messages[1..] {
            self.customer_message(&conversation.customer_id, text, 200)
                .await?;
            self.drain(&self.state.clone()).await?;
            if self.trace.first_fingerprint.is_none() {
                self.trace.first_fingerprint = self.case_view().await?["fingerprint"]
                    .as_str()
                    .map(str::to_string);
            }
        }
        Ok(())
    }

    async fn customer_message(
        &mut self,
        customer_id: &str,
        text: &str,
        expect_status: u16,
    ) -> anyhow::Result<()> {
        let token = self.token("customer", customer_id).await?;
        let ticket_id = self.ticket_id.clone().context("no ticket")?;
        let (status, body) = self
            .request(
                "POST",
                &format!("/api/v1/tickets/{ticket_id}/messages"),
                &token,
                Some(json!({ "text": text })),
            )
            .await?;
        self.record(
            format!("customer message {text:?}"),
            status.as_u16() == expect_status,
            format!("expected HTTP {expect_status}, got {status}: {body}"),
        );
        Ok(())
    }

    async fn approve(
        &mut self,
        role: Role,
        choice: FingerprintChoice,
        expect_status: u16,
    ) -> anyhow::Result<()> {
        let fingerprint = self.fingerprint(choice).await?;
        let token = self.staff_token(role).await?;
        let case_id = self.case_id.clone().context("no case")?;
        self.checkpoint_before_approval().await?;
        let (status, body) = self
            .request(
                "POST",
                &format!("/api/v1/cases/{case_id}/approve"),
                &token,
                Some(json!({ "fingerprint": fingerprint })),
            )
            .await?;
        if status == StatusCode::OK {
            self.trace.approved = true;
        } else if !self.trace.approved {
            // The checkpoint stands for the first approval that succeeds.
            self.trace.refunds_before_first_approval = None;
        }
        self.record(
            format!("approve as {role:?} with the {choice:?} fingerprint"),
            status.as_u16() == expect_status,
            format!("expected HTTP {expect_status}, got {status}: {body}"),
        );
        Ok(())
    }

    pub(crate) async fn apply(
        &mut self,
        action: &Action,
        scenario: &Scenario,
    ) -> anyhow::Result<()> {
        match action {
            Action::Approve {
                role,
                fingerprint,
                expect_status,
            } => self.approve(*role, *fingerprint, *expect_status).await?,
            Action::ApproveConcurrently { fingerprint } => {
                self.approve_concurrently(*fingerprint).await?
            }
            Action::Reject {
                role,
                reason,
                expect_status,
            } => self.reject(*role, reason, *expect_status).await?,
            Action::Message {
                text,
                expect_status,
            } => {
                let customer = scenario.conversation.customer_id.clone();
                self.customer_message(&customer, text, *expect_status)
                    .await?;
            }
            Action::Drain => self.drain(&self.state.clone()).await?,
            Action::Workers { n } => self.concurrent_workers(*n).await?,
            Action::Reconcile => {
                self.trace.reconcile = Some(
                    desk::reconcile::run(self.state.reconciler())
                        .await
                        .map_err(|e| anyhow!("reconciliation failed: {e}"))?,
                );
            }
            Action::Faults { rules } => self.install_faults(rules).await?,
            Action::ClearFaults => {
                self.mock_admin("DELETE", "/__mock/faults", Value::Null)
                    .await?;
            }
            Action::AdvanceClock { seconds } => {
                self.clock.advance(time::Duration::seconds(*seconds));
            }
            Action::RefundElsewhere {
                charge_id,
                amount_minor,
            } => {
                self.refund_outside_the_app(charge_id, *amount_minor, true)
                    .await?
            }
            Action::RogueRefund {
                charge_id,
                amount_minor,
            } => {
                self.refund_outside_the_app(charge_id, *amount_minor, false)
                    .await?
            }
            Action::SettleRefunds {
                outcome,
                failure_reason,
            } => {
                self.settle_refunds(outcome, failure_reason.as_deref())
                    .await?
            }
            Action::AwaitWebhooks => self.await_webhooks().await?,
            Action::CrashDuringExecution => self.crash_during_execution().await?,
        }
        Ok(())
    }

    /// Two reviewers approve at once; exactly one may win.
    async fn approve_concurrently(&mut self, choice: FingerprintChoice) -> anyhow::Result<()> {
        let fingerprint = self.fingerprint(choice).await?;
        let case_id = self.case_id.clone().context("no case")?;
        let (agent, supervisor) = (
            self.staff_token(Role::Agent).await?,
            self.staff_token(Role::Supervisor).await?,
        );
        self.checkpoint_before_approval().await?;
        let path = format!("/api/v1/cases/{case_id}/approve");
        let body = json!({ "fingerprint": fingerprint });
        let (a, b) = tokio::join!(
            self.request("POST", &path, &agent, Some(body.clone())),
            self.request("POST", &path, &supervisor, Some(body.clone()))
        );
        let mut statuses = [a?.0.as_u16(), b?.0.as_u16()];
        statuses.sort();
        if statuses.contains(&200) {
            self.trace.approved = true;
        } else if !self.trace.approved {
            self.trace.refunds_before_first_approval = None;
        }
        self.record(
            "two reviewers approve at once".into(),
            statuses == [200, 409],
            format!("expected one 200 and one 409, got {statuses:?}"),
        );
        Ok(())
    }

    async fn reject(&mut self, role: Role, reason: &str, expect_status: u16) -> anyhow::Result<()> {
        let fingerprint = self.fingerprint(FingerprintChoice::Current).await?;
        let token = self.staff_token(role).await?;
        let case_id = self.case_id.clone().context("no case")?;
        let (status, body) = self
            .request(
                "POST",
                &format!("/api/v1/cases/{case_id}/reject"),
                &token,
                Some(json!({ "fingerprint": fingerprint, "reason": reason })),
            )
            .await?;
        self.record(
            format!("reject as {role:?}"),
            status.as_u16() == expect_status,
            format!("expected HTTP {expect_status}, got {status}: {body}"),
        );
        Ok(())
    }

    /// `n` worker passes at once, each as its own instance.
    async fn concurrent_workers(&self, n: usize) -> anyhow::Result<()> {
        let handles: Vec<_> = (0..n)
            .map(|i| {
                let mut state = self.state.clone();
                state.instance_id = format!("eval-worker-{i}");
                tokio::spawn(async move { desk::worker::run_once(&state).await })
            })
            .collect();
        for handle in handles {
            handle
                .await?
                .map_err(|e| anyhow!("a concurrent worker failed: {e}"))?;
        }
        Ok(())
    }

    /// A refund made at the provider, not by the app: `legitimate` ones (the provider's
    /// dashboard) are the scenario's own and excluded from the app's refunds; the others
    /// are money moved with no approval, which the graders must flag.
    async fn refund_outside_the_app(
        &mut self,
        charge_id: &str,
        amount_minor: i64,
        legitimate: bool,
    ) -> anyhow::Result<()> {
        let resp = self
            .http
            .post(format!("{}/v1/refunds", self.base()))
            .bearer_auth(API_KEY)
            .form(&[("charge", charge_id), ("amount", &amount_minor.to_string())])
            .send()
            .await?;
        let status = resp.status();
        let body: Value = resp.json().await.unwrap_or(Value::Null);
        if !status.is_success() {
            bail!("a refund outside the app was refused: {status} {body}");
        }
        if legitimate {
            if let Some(id) = body["id"].as_str() {
                self.trace.made_elsewhere.insert(id.to_string());
            }
        }
        Ok(())
    }

    /// Settles the app's pending provider refunds (`/__mock/refunds/{id}/settle`).
    async fn settle_refunds(
        &mut self,
        outcome: &str,
        failure_reason: Option<&str>,
    ) -> anyhow::Result<()> {
        let mut body = json!({ "outcome": outcome });
        if let Some(reason) = failure_reason {
            body["failure_reason"] = json!(reason);
        }
        let pending: Vec<String> = self
            .app_refunds()
            .await?
            .iter()
            .filter(|r| r["status"] == "pending")
            .filter_map(|r| r["id"].as_str().map(str::to_string))
            .collect();
        if pending.is_empty() {
            self.trace
                .disturbance_notes
                .push("settle_refunds: no pending refund to settle".into());
        }
        for id in pending {
            self.mock_admin(
                "POST",
                &format!("/__mock/refunds/{id}/settle"),
                body.clone(),
            )
            .await?;
        }
        Ok(())
    }

    /// Waits (bounded: 15 s) until the mock delivered or dropped every event. Delivery
    /// happens on the mock's own task, so this is the one place the suite polls.
    async fn await_webhooks(&mut self) -> anyhow::Result<()> {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let ledger = self.ledger().await?;
            let done = ledger["events"].as_array().is_some_and(|events| {
                events
                    .iter()
                    .all(|e| e["delivery_success"] == true || e["dropped"] == true)
            });
            if done {
                return Ok(());
            }
            if Instant::now() > deadline {
                self.trace
                    .disturbance_notes
                    .push("await_webhooks: events still undelivered after 15 s".into());
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    async fn crash_during_execution(&mut self) -> anyhow::Result<()> {
        // The provider commits, then holds the answer: the worker waits on it when it
        // dies, so the refund exists and our record of it does not.
        self.install_faults(&[json!({
            "mode": "drop_response_after_commit", "drop_mode": "hang", "ms": 3000,
            "method": "POST", "path": "/v1/refunds", "times": 1
        })])
        .await?;
        let before = self.app_refunds().await?.len();
        let mut doomed = self.state.clone();
        doomed.instance_id = "eval-doomed-executor".into();
        let committed = async {
            let deadline = Instant::now() + Duration::from_secs(5);
            while Instant::now() < deadline {
                if self.app_refunds().await.map(|r| r.len()).unwrap_or(0) > before {
                    return true;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            false
        };
        let crashed = tokio::select! {
            result = desk::worker::run_once(&doomed) => {
                result.map_err(|e| anyhow!("the worker failed: {e}"))?;
                false
            }
            committed = committed => committed,
        };
        if !crashed {
            self.trace.disturbance_notes.push(
                "crash_during_execution: no refund was submitted, nothing was interrupted".into(),
            );
        }
        self.mock_admin("DELETE", "/__mock/faults", Value::Null)
            .await?;
        // Past the dead worker's case lease.
        self.clock.advance(time::Duration::minutes(2));
        Ok(())
    }
}
