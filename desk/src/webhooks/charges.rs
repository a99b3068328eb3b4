//! Charge and dispute events (what the desk shows stays current while it
//! serves). A charge that succeeded, was captured, refunded (by us or elsewhere),
//! disputed or otherwise changed at the provider is read back from the provider — the
//! event's copy never decides anything, as for refunds — and then:
//!
//! - its place on the staff list of charges naming no order is refreshed
//!   (`onboarding::charges::refresh_charge`);
//! - every case awaiting approval whose facts name that charge or the order it pays is
//!   sent back to investigation: the proposal a reviewer would approve was made on
//!   records that no longer stand (a dispute opened, a refund made elsewhere, a second
//!   charge on the order). The execution re-checks the policy on fresh facts anyway
//!   (docs/spec/invariants.md #3); this keeps what the reviewer sees true before then.
//!
//! A refund made elsewhere (`refund.*` matching no intent) does the same for its charge.
//! The event id is recorded in the transaction that voids the proposals, so a duplicate
//! delivery changes nothing (docs/spec/invariants.md #4).
//!
//! What it deliberately does not do: change a case that is not awaiting approval (an
//! approved one is re-checked at the payment boundary; an escalated one is with a
//! person), or store the charge (the desk reads charges live from the provider).

use serde_json::Value;
use sqlx::Row;

use super::{insert_event, record_only, Event, Outcome};
use crate::cases::{self, CaseStatus};
use crate::error::{DomainError, DomainResult, ErrorCode};
use crate::refunds::Sender;
use payments_adapter::ProviderError;

/// Charge events whose charge is read back and acted on.
pub const CHARGE_EVENTS: [&str; 7] = [
    "charge.succeeded",
    "charge.captured",
    "charge.updated",
    "charge.refunded",
    "charge.failed",
    "charge.expired",
    "charge.pending",
];

/// Dispute events: the dispute's charge is read back and acted on.
pub const DISPUTE_EVENTS: [&str; 5] = [
    "charge.dispute.created",
    "charge.dispute.updated",
    "charge.dispute.closed",
    "charge.dispute.funds_withdrawn",
    "charge.dispute.funds_reinstated",
];

/// Whether this receiver acts on `kind` as a charge or dispute event.
pub fn is_charge_event(kind: &str) -> bool {
    CHARGE_EVENTS.contains(&kind) || DISPUTE_EVENTS.contains(&kind)
}

/// The charge an event is about: a charge's own id, a dispute's (or refund's) `charge`
/// (an id or, expanded, an object with one).
fn charge_id_of(event: &Event) -> Option<String> {
    let object = &event.data.object;
    let field = if CHARGE_EVENTS.contains(&event.kind.as_str()) {
        object.get("id")
    } else {
        object.get("charge")
    };
    match field? {
        Value::String(id) if !id.is_empty() => Some(id.clone()),
        Value::Object(expanded) => expanded
            .get("id")
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty())
            .map(str::to_string),
        _ => None,
    }
}

/// Applies one (verified, not yet processed) charge or dispute event.
pub async fn process_charge_event(
    s: Sender<'_>,
    versions: &harness::Versions,
    event: &Event,
) -> DomainResult<Outcome> {
    let Some(charge_id) = charge_id_of(event) else {
        return Err(DomainError::bad_request(
            ErrorCode::InvalidEvent,
            format!("a {} event names no charge", event.kind),
        ));
    };
    let charge = match s.payments.get_charge(&charge_id).await {
        Ok(charge) => charge,
        Err(ProviderError::NotFound(_)) => {
            tracing::warn!(%charge_id, "webhook names a charge the provider does not have");
            return record_only(s, event, None, None, Outcome::Unmatched).await;
        }
        Err(e) => {
            // As for refunds: unrecorded, so the provider's retry is processed afresh.
            tracing::warn!(%charge_id, error = %e, "could not re-read the charge; event refused for a retry");
            return Err(DomainError::Provider(format!(
                "charge {charge_id} could not be read back from the provider; retry the event later"
            )));
        }
    };
    let now = s.clock.now_ms();
    crate::onboarding::charges::refresh_charge(s.db, &charge, now).await?;
    let why = format!(
        "the payment provider's records changed ({} on charge {})",
        event.kind, charge.id
    );
    let touched = [Some(charge.id.as_str()), charge.order_id()];
    let change = Change {
        ids: &touched,
        refund_id: None,
        why: &why,
        outcome: Outcome::Applied,
    };
    void_stale_proposals(s, versions, event, change).await
}

/// A refund made elsewhere on `charge_id`: recorded as unmatched (reconciliation
/// reports it), and the proposals resting on that charge are voided.
pub async fn refund_made_elsewhere(
    s: Sender<'_>,
    versions: &harness::Versions,
    event: &Event,
    refund_id: &str,
    charge_id: Option<&str>,
) -> DomainResult<Outcome> {
    let Some(charge_id) = charge_id else {
        return record_only(s, event, Some(refund_id), None, Outcome::Unmatched).await;
    };
    let why = format!(
        "the payment provider's records changed (refund {refund_id} made elsewhere on charge {charge_id})"
    );
    let change = Change {
        ids: &[Some(charge_id)],
        refund_id: Some(refund_id),
        why: &why,
        outcome: Outcome::Unmatched,
    };
    void_stale_proposals(s, versions, event, change).await
}

/// What changed at the provider: the ids it touches (a charge, an order), the refund
/// if one, why proposals resting on them are void, and the event's outcome.
struct Change<'a> {
    ids: &'a [Option<&'a str>],
    refund_id: Option<&'a str>,
    why: &'a str,
    outcome: Outcome,
}

/// Records the event and sends every case awaiting approval whose facts name one of
/// the change's ids back to investigation, in one transaction. A charge event that
/// touched no such case is recorded as `unchanged`.
async fn void_stale_proposals(
    s: Sender<'_>,
    versions: &harness::Versions,
    event: &Event,
    change: Change<'_>,
) -> DomainResult<Outcome> {
    let (why, now) = (change.why, s.clock.now_ms());
    let mut tx = s.db.begin().await?;
    let cases = awaiting_cases_naming(&mut tx, change.ids).await?;
    let recorded = if cases.is_empty() && change.outcome == Outcome::Applied {
        Outcome::Unchanged
    } else {
        change.outcome
    };
    let refund_id = change.refund_id;
    if !insert_event(&mut tx, event, refund_id, None, recorded.as_str(), now).await? {
        return Ok(Outcome::Duplicate);
    }
    for case_id in &cases {
        let Some(case) = cases::load_case_tx(&mut tx, case_id).await? else {
            continue;
        };
        if case.status == CaseStatus::AwaitingApproval {
            cases::reinvestigate(&mut tx, versions, &case, why, now).await?;
        }
    }
    tx.commit().await?;
    if !cases.is_empty() {
        tracing::info!(event_id = %event.id, cases = cases.len(), why, "proposals voided on changed provider records");
    }
    Ok(recorded)
}

/// Cases awaiting approval whose facts name one of `ids` as a JSON `"id"` (an order or
/// a charge, as the case search reads them).
async fn awaiting_cases_naming(
    tx: &mut store::Tx<'_>,
    ids: &[Option<&str>],
) -> DomainResult<Vec<String>> {
    let mut found = Vec::new();
    for id in ids.iter().flatten() {
        let json = serde_json::to_string(id).map_err(anyhow::Error::from)?;
        let pattern = format!("%\"id\":{}%", store::like_literal(&json));
        let rows = sqlx::query(
            "SELECT id FROM cases WHERE status = 'awaiting_approval' AND facts LIKE $1 ESCAPE '\\'
             ORDER BY id",
        )
        .bind(pattern)
        .fetch_all(&mut **tx)
        .await?;
        for row in rows {
            let case_id: String = row.try_get("id")?;
            if !found.contains(&case_id) {
                found.push(case_id);
            }
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(kind: &str, object: Value) -> Event {
        serde_json::from_value(serde_json::json!({
            "id": "evt_1", "type": kind, "data": { "object": object }
        }))
        .expect("an event")
    }

    #[test]
    fn the_charge_is_found_in_charges_and_in_disputes_plain_or_expanded() {
        let charge = event(
            "charge.refunded",
            serde_json::json!({ "id": "ch_1", "object": "charge" }),
        );
        assert_eq!(charge_id_of(&charge).as_deref(), Some("ch_1"));
        let dispute = event(
            "charge.dispute.created",
            serde_json::json!({ "id": "dp_1", "charge": "ch_2" }),
        );
        assert_eq!(charge_id_of(&dispute).as_deref(), Some("ch_2"));
        let expanded = event(
            "charge.dispute.closed",
            serde_json::json!({ "id": "dp_1", "charge": { "id": "ch_3", "object": "charge" } }),
        );
        assert_eq!(charge_id_of(&expanded).as_deref(), Some("ch_3"));
        let none = event(
            "charge.dispute.updated",
            serde_json::json!({ "id": "dp_1", "charge": null }),
        );
        assert_eq!(charge_id_of(&none), None);
    }
}
