//! Approvals: a human's yes or no on the exact refund shown, bound to its fingerprint.
//!
//! An approval is accepted only for a case awaiting approval, with the fingerprint the
//! case holds now (else 409), from a role RP-004 allows for the amount (else 403). One
//! proposal takes one verdict: concurrent reviewers race on a unique row and a versioned
//! update, and exactly one wins (SPEC invariants 1, 2 and 12).

use axum::extract::{Path, State};
use axum::Json;
use serde::Deserialize;

use crate::auth::{constant_time_eq, Principal, Staff};
use crate::cases::{self, CaseStatus, CaseView};
use crate::error::{AppError, AppResult};
use crate::http::{ApiJson, AppState};
use crate::store::new_id;
use crate::world::parse_plain;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApproveInput {
    pub fingerprint: String,
    #[serde(default)]
    pub note: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RejectInput {
    pub fingerprint: String,
    pub reason: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Approved,
    Rejected,
}

/// Records a verdict. Returns the case as it stands afterwards.
pub async fn decide(
    state: &AppState,
    staff: &Staff,
    case_id: &str,
    fingerprint: &str,
    verdict: Verdict,
    note: Option<&str>,
) -> AppResult<CaseView> {
    if note.is_some_and(|n| n.chars().count() > 2000) {
        return Err(AppError::bad_request(
            "note_too_long",
            "notes are at most 2000 characters",
        ));
    }
    let now = state.clock.now_ms();
    let mut tx = state.db.begin().await?;
    let case = cases::load_case_tx(&mut tx, case_id)
        .await?
        .ok_or(AppError::NotFound("case"))?;
    if case.status != CaseStatus::AwaitingApproval {
        return Err(AppError::conflict(
            "invalid_state",
            format!(
                "the case is {}, not awaiting approval",
                case.status.as_str()
            ),
        ));
    }
    let current = case.fingerprint.clone().unwrap_or_default();
    if current.is_empty() || !constant_time_eq(fingerprint.trim(), &current) {
        return Err(AppError::conflict(
            "stale_fingerprint",
            "the refund changed since it was shown; review the current proposal",
        ));
    }
    let decision = case
        .decision()
        .ok_or_else(|| anyhow::anyhow!("case {} awaits approval without a decision", case.id))?;
    if verdict == Verdict::Approved {
        let required: policy_engine::Role = match &case.required_role {
            Some(r) => parse_plain(r)?,
            None => policy_engine::Role::Supervisor,
        };
        if !staff.role.may_approve(required) {
            return Err(AppError::Forbidden(format!(
                "this refund needs a {} to approve it",
                crate::world::serde_plain(&required)
            )));
        }
    }
    // SPEC §6.12 / RP-004: nobody approves a refund they proposed. Proposals come from the
    // agent; a staff member who authored one (manual takeover) is recorded as `proposer`.
    let proposer = sqlx::query(
        "SELECT actor FROM audit_log WHERE subject = $1 AND action = 'proposed_by_staff'",
    )
    .bind(&case.id)
    .fetch_optional(&mut *tx)
    .await?;
    if let Some(row) = proposer {
        let actor: String = sqlx::Row::try_get(&row, "actor")?;
        if actor == staff.id {
            return Err(AppError::Forbidden(
                "nobody approves a refund they proposed".into(),
            ));
        }
    }
    let approval_id = new_id("apr");
    let inserted = sqlx::query(
        "INSERT INTO approvals (id, case_id, proposal_seq, fingerprint, staff_id, verdict, note, status, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, 'valid', $8)",
    )
    .bind(&approval_id)
    .bind(&case.id)
    .bind(case.proposal_seq)
    .bind(&current)
    .bind(&staff.id)
    .bind(if verdict == Verdict::Approved { "approved" } else { "rejected" })
    .bind(note)
    .bind(now)
    .execute(&mut *tx)
    .await;
    if let Err(e) = inserted {
        if let sqlx::Error::Database(db) = &e {
            if db.is_unique_violation() {
                return Err(AppError::conflict(
                    "already_decided",
                    "another reviewer already decided this proposal",
                ));
            }
        }
        return Err(e.into());
    }
    match verdict {
        Verdict::Approved => {
            crate::refunds::create_intents(&mut tx, &case, &approval_id, &decision, now).await?;
            cases::transition(&mut tx, &case, CaseStatus::Approved, now).await?;
            crate::audit::record(
                &mut tx,
                &staff.id,
                "approved",
                &case.id,
                &format!("fingerprint {current}"),
                now,
            )
            .await?;
        }
        Verdict::Rejected => {
            cases::transition(&mut tx, &case, CaseStatus::Rejected, now).await?;
            let ticket = crate::tickets::load_ticket(&state.db, &case.ticket_id).await;
            let language = ticket
                .ok()
                .flatten()
                .map(|t| t.language)
                .unwrap_or_else(|| "en".into());
            let reply = if language == "zh" {
                "经过我们团队的审核，这笔退款未获批准。如果您有更多信息，请直接在此回复。"
            } else {
                "After review by our team, this refund was not approved. If you have more information, reply here."
            };
            crate::tickets::append_message(&mut tx, &case.ticket_id, "agent", reply, now).await?;
            crate::audit::record(
                &mut tx,
                &staff.id,
                "rejected",
                &case.id,
                note.unwrap_or(""),
                now,
            )
            .await?;
        }
    }
    tx.commit().await?;
    tracing::info!(case_id = %case.id, staff_id = %staff.id, ?verdict, "verdict recorded");
    state.wake.notify_one();
    let case = cases::load_case(&state.db, case_id)
        .await?
        .ok_or(AppError::NotFound("case"))?;
    cases::case_view(&state.db, &case).await
}

/// `POST /api/v1/cases/{id}/approve`.
pub async fn post_approve(
    State(state): State<AppState>,
    principal: Principal,
    Path(id): Path<String>,
    ApiJson(input): ApiJson<ApproveInput>,
) -> AppResult<Json<CaseView>> {
    let staff = principal.staff()?;
    Ok(Json(
        decide(
            &state,
            staff,
            &id,
            &input.fingerprint,
            Verdict::Approved,
            input.note.as_deref(),
        )
        .await?,
    ))
}

/// `POST /api/v1/cases/{id}/reject`.
pub async fn post_reject(
    State(state): State<AppState>,
    principal: Principal,
    Path(id): Path<String>,
    ApiJson(input): ApiJson<RejectInput>,
) -> AppResult<Json<CaseView>> {
    let staff = principal.staff()?;
    if input.reason.trim().is_empty() {
        return Err(AppError::bad_request(
            "missing_reason",
            "a rejection needs a reason",
        ));
    }
    Ok(Json(
        decide(
            &state,
            staff,
            &id,
            &input.fingerprint,
            Verdict::Rejected,
            Some(&input.reason),
        )
        .await?,
    ))
}
