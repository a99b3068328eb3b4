//! Shadow mode's hand decision on the case page (`POST /console/cases/{id}/decide`,
//! docs/spec/interfaces.md; who may, docs/spec/roles.md): the reviewer's own outcome,
//! reason and up to three refund lines; each line's currency comes from its charge in
//! the case's facts.
//!
//! It compares nothing itself: `shadow::live` records the decision.

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;

use crate::error::status_of;
use crate::state::AppState;
use desk::cases;
use desk::error::{DomainError, ErrorCode};
use desk::world::parse_plain;

use super::case::case_page_response;
use super::common::{has_csrf, with_status, Verified};

#[derive(Deserialize)]
pub(super) struct HandDecisionForm {
    csrf: String,
    outcome: String,
    reason: String,
    #[serde(default)]
    charge_1: String,
    #[serde(default)]
    amount_1: String,
    #[serde(default)]
    charge_2: String,
    #[serde(default)]
    amount_2: String,
    #[serde(default)]
    charge_3: String,
    #[serde(default)]
    amount_3: String,
    #[serde(default)]
    note: Option<String>,
}

has_csrf!(HandDecisionForm);

pub(super) async fn decide_by_hand_submit(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Verified(session, form): Verified<HandDecisionForm>,
) -> Response {
    let manual = hand_decision(&form);
    let result = match manual {
        Ok(mut manual) => {
            // Fill each line's currency from the charge in the case's facts.
            if let Ok(Some(case)) = cases::load_case(&state.db, &id).await {
                let facts: Option<policy_engine::Facts> = case
                    .facts
                    .as_deref()
                    .and_then(|f| serde_json::from_str(f).ok());
                for r in &mut manual.refunds {
                    if let Some(c) = facts
                        .iter()
                        .flat_map(|f| f.orders.iter())
                        .flat_map(|o| o.charges.iter())
                        .find(|c| c.id == r.charge_id)
                    {
                        r.currency = c.amount.currency();
                    }
                }
            }
            shadow::live::decide_by_hand(state.desk(), &session.staff, &id, manual).await
        }
        Err(e) => Err(e),
    };
    match result {
        Ok(_) => Redirect::to(&format!("/console/cases/{id}")).into_response(),
        Err(e) => with_status(
            status_of(&e),
            case_page_response(&state, &session, &id, Some(e.public_message())).await,
        ),
    }
}

/// The form's decision; each refund line's currency is filled from its charge later.
pub(super) fn hand_decision(
    form: &HandDecisionForm,
) -> Result<shadow::live::ManualDecision, DomainError> {
    let outcome = parse_plain(&form.outcome)
        .map_err(|e| DomainError::bad_request(ErrorCode::InvalidOutcome, e.to_string()))?;
    let reason = parse_plain(&form.reason)
        .map_err(|e| DomainError::bad_request(ErrorCode::InvalidReason, e.to_string()))?;
    let refunds = [
        (&form.charge_1, &form.amount_1),
        (&form.charge_2, &form.amount_2),
        (&form.charge_3, &form.amount_3),
    ]
    .into_iter()
    .filter(|(charge, _)| !charge.trim().is_empty())
    .map(|(charge, amount)| shadow::replay::RefundRecord {
        charge_id: charge.trim().to_string(),
        amount: amount.trim().to_string(),
        currency: policy_engine::Currency::CNY,
    })
    .collect();
    Ok(shadow::live::ManualDecision {
        outcome,
        reason,
        refunds,
        note: form.note.clone(),
    })
}
