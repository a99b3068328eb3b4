//! Cases: the refund work on a ticket, its lifecycle (SPEC §5), and its fingerprint.
//!
//! Every status change is a versioned update (`WHERE id = $x AND version = $y`), so two
//! workers or two reviewers can never both move the same case. The fingerprint binds an
//! approval to the exact refund parameters (SPEC invariant 2).

use serde::Serialize;
use sha2::{Digest, Sha256};
use sqlx::Row;

use crate::agent::Proposal;
use crate::error::{AppError, AppResult};
use crate::runs;
use crate::state::AppState;
use crate::store::{new_id, Backend, Db, Tx};
use crate::tickets::Ticket;
use crate::world::serde_plain;

pub use crate::states::CaseStatus;

#[derive(Debug, Clone)]
pub struct Case {
    pub id: String,
    pub ticket_id: String,
    pub customer_id: String,
    pub status: CaseStatus,
    pub version: i64,
    pub proposal_seq: i64,
    pub run_id: Option<String>,
    pub proposal: Option<String>,
    pub facts: Option<String>,
    pub decision: Option<String>,
    pub evidence_hash: Option<String>,
    pub fingerprint: Option<String>,
    pub required_role: Option<String>,
    pub reason_code: Option<String>,
    pub refund_total_minor: Option<i64>,
    pub currency: Option<String>,
    pub void_reason: Option<String>,
    pub policy_index: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

const CASE_COLUMNS: &str = "id, ticket_id, customer_id, status, version, proposal_seq, run_id, proposal, facts, decision, \
     evidence_hash, fingerprint, required_role, reason_code, refund_total_minor, currency, void_reason, policy_index, created_at, updated_at";

fn case_from_row(r: &sqlx::any::AnyRow) -> AppResult<Case> {
    Ok(Case {
        id: r.try_get("id")?,
        ticket_id: r.try_get("ticket_id")?,
        customer_id: r.try_get("customer_id")?,
        status: CaseStatus::parse(&r.try_get::<String, _>("status")?)?,
        version: r.try_get("version")?,
        proposal_seq: r.try_get("proposal_seq")?,
        run_id: r.try_get("run_id")?,
        proposal: r.try_get("proposal")?,
        facts: r.try_get("facts")?,
        decision: r.try_get("decision")?,
        evidence_hash: r.try_get("evidence_hash")?,
        fingerprint: r.try_get("fingerprint")?,
        required_role: r.try_get("required_role")?,
        reason_code: r.try_get("reason_code")?,
        refund_total_minor: r.try_get("refund_total_minor")?,
        currency: r.try_get("currency")?,
        void_reason: r.try_get("void_reason")?,
        policy_index: r.try_get("policy_index")?,
        created_at: r.try_get("created_at")?,
        updated_at: r.try_get("updated_at")?,
    })
}

impl Case {
    pub fn decision(&self) -> Option<policy_engine::Decision> {
        self.decision
            .as_deref()
            .and_then(|d| serde_json::from_str(d).ok())
    }
}

pub async fn load_case(db: &Db, case_id: &str) -> AppResult<Option<Case>> {
    load_case_from(db.pool(), case_id).await
}

/// Loads a case for showing it, on the read pool.
pub async fn load_case_to_show(db: &Db, case_id: &str) -> AppResult<Option<Case>> {
    load_case_from(db.reader(), case_id).await
}

async fn load_case_from(pool: &sqlx::AnyPool, case_id: &str) -> AppResult<Option<Case>> {
    let row = sqlx::query(&format!("SELECT {CASE_COLUMNS} FROM cases WHERE id = $1"))
        .bind(case_id)
        .fetch_optional(pool)
        .await?;
    row.as_ref().map(case_from_row).transpose()
}

pub async fn load_case_tx(tx: &mut Tx<'_>, case_id: &str) -> AppResult<Option<Case>> {
    let row = sqlx::query(&format!("SELECT {CASE_COLUMNS} FROM cases WHERE id = $1"))
        .bind(case_id)
        .fetch_optional(&mut **tx)
        .await?;
    row.as_ref().map(case_from_row).transpose()
}

pub async fn case_for_ticket(db: &Db, ticket_id: &str) -> AppResult<Option<Case>> {
    let row = sqlx::query(&format!(
        "SELECT {CASE_COLUMNS} FROM cases WHERE ticket_id = $1"
    ))
    .bind(ticket_id)
    .fetch_optional(db.reader())
    .await?;
    row.as_ref().map(case_from_row).transpose()
}

pub async fn case_for_ticket_tx(tx: &mut Tx<'_>, ticket_id: &str) -> AppResult<Option<Case>> {
    let row = sqlx::query(&format!(
        "SELECT {CASE_COLUMNS} FROM cases WHERE ticket_id = $1"
    ))
    .bind(ticket_id)
    .fetch_optional(&mut **tx)
    .await?;
    row.as_ref().map(case_from_row).transpose()
}

/// Opens the case of a new ticket with its first run, ready for a worker.
pub async fn open_case(tx: &mut Tx<'_>, state: &AppState, ticket: &Ticket) -> AppResult<String> {
    let now = state.clock.now_ms();
    let case_id = new_id("case");
    sqlx::query(
        "INSERT INTO cases (id, ticket_id, customer_id, status, version, proposal_seq, created_at, updated_at)
         VALUES ($1, $2, $3, 'investigating', 1, 1, $4, $4)",
    )
    .bind(&case_id)
    .bind(&ticket.id)
    .bind(&ticket.customer_id)
    .bind(now)
    .execute(&mut **tx)
    .await?;
    let run_id = runs::create_run(tx, state, &case_id).await?;
    sqlx::query("UPDATE cases SET run_id = $1 WHERE id = $2")
        .bind(&run_id)
        .bind(&case_id)
        .execute(&mut **tx)
        .await?;
    Ok(case_id)
}

/// The error code of a versioned case update that found the case changed since it was
/// read (another worker, reviewer or customer moved it). The caller's transaction must
/// roll back: nothing it wrote stands.
pub const CASE_CHANGED: &str = "case_changed";

/// The conflict a lost versioned case update reports (see [`CASE_CHANGED`]).
pub fn case_changed() -> AppError {
    AppError::conflict(CASE_CHANGED, "the case changed meanwhile; reload it")
}

/// Whether an error is a lost versioned case update (see [`CASE_CHANGED`]).
pub fn is_case_changed(error: &AppError) -> bool {
    matches!(error, AppError::Conflict { code, .. } if *code == CASE_CHANGED)
}

/// The outcome of a versioned case update (`… WHERE id = $x AND version = $y`): it moved
/// exactly the one case, or the case changed since it was read and [`case_changed`].
pub fn expect_versioned(done: &sqlx::any::AnyQueryResult) -> AppResult<()> {
    if done.rows_affected() == 1 {
        Ok(())
    } else {
        Err(case_changed())
    }
}

/// Moves a case to `to` if nobody moved it since `case.version` was read.
pub async fn transition(tx: &mut Tx<'_>, case: &Case, to: CaseStatus, now: i64) -> AppResult<i64> {
    let done = sqlx::query("UPDATE cases SET status = $1, version = version + 1, updated_at = $2 WHERE id = $3 AND version = $4")
        .bind(to.as_str())
        .bind(now)
        .bind(&case.id)
        .bind(case.version)
        .execute(&mut **tx)
        .await?;
    expect_versioned(&done)?;
    tracing::info!(case_id = %case.id, from = case.status.as_str(), to = to.as_str(), "case transition");
    Ok(case.version + 1)
}

/// Voids the case's valid approvals: what they approved is no longer what would be
/// sent (a new proposal, a withdrawal). Used approvals stay as the record of a refund.
pub(crate) async fn void_approvals(tx: &mut Tx<'_>, case_id: &str) -> AppResult<()> {
    sqlx::query("UPDATE approvals SET status = 'void' WHERE case_id = $1 AND status = 'valid'")
        .bind(case_id)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// Records a reviewer's verdict on the case's current proposal, bound to `fingerprint`
/// (SPEC invariant 2). One verdict per proposal: a second reviewer gets
/// `already_decided` (the unique index decides, not a read before the write).
pub async fn record_approval(
    tx: &mut Tx<'_>,
    case: &Case,
    fingerprint: &str,
    staff_id: &str,
    approved: bool,
    note: Option<&str>,
    now: i64,
) -> AppResult<String> {
    let approval_id = new_id("apr");
    let inserted = sqlx::query(
        "INSERT INTO approvals (id, case_id, proposal_seq, fingerprint, staff_id, verdict, note, status, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, 'valid', $8)",
    )
    .bind(&approval_id)
    .bind(&case.id)
    .bind(case.proposal_seq)
    .bind(fingerprint)
    .bind(staff_id)
    .bind(if approved { "approved" } else { "rejected" })
    .bind(note)
    .bind(now)
    .execute(&mut **tx)
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
    Ok(approval_id)
}

/// Marks the approval the executor is about to carry out as used: it cannot be carried
/// out twice, and stays as the record of the refund.
pub async fn use_approval(tx: &mut Tx<'_>, case: &Case) -> AppResult<()> {
    sqlx::query("UPDATE approvals SET status = 'used' WHERE case_id = $1 AND proposal_seq = $2 AND status = 'valid'")
        .bind(&case.id)
        .bind(case.proposal_seq)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// The case goes to a human (`why` is kept as its void reason). Versioned.
pub async fn escalate(tx: &mut Tx<'_>, case: &Case, why: &str, now: i64) -> AppResult<()> {
    let done = sqlx::query("UPDATE cases SET status = 'escalated', version = version + 1, void_reason = $1, updated_at = $2 WHERE id = $3 AND version = $4")
        .bind(why)
        .bind(now)
        .bind(&case.id)
        .bind(case.version)
        .execute(&mut **tx)
        .await?;
    expect_versioned(&done)
}

/// Live shadow mode: the case goes to a reviewer holding the facts (billing records, not
/// conclusions) and nothing else of the agent's — no proposal, decision, reason or
/// fingerprint a reviewer could anchor on. Versioned: a lost race is `case_changed`.
pub async fn hold_for_review(
    tx: &mut Tx<'_>,
    case: &Case,
    facts: &policy_engine::Facts,
    note: &str,
    now: i64,
) -> AppResult<()> {
    let done = sqlx::query(
        "UPDATE cases SET status = 'escalated', version = version + 1, proposal = NULL, decision = NULL, fingerprint = NULL,
             required_role = NULL, reason_code = NULL, refund_total_minor = NULL, currency = NULL,
             facts = $1, void_reason = $2, updated_at = $3 WHERE id = $4 AND version = $5",
    )
    .bind(serde_json::to_string(facts).unwrap_or_default())
    .bind(note)
    .bind(now)
    .bind(&case.id)
    .bind(case.version)
    .execute(&mut **tx)
    .await?;
    expect_versioned(&done)?;
    Ok(())
}

/// Notes why a case stays where it is (a reviewer escalated it on): versioned.
pub async fn note_void_reason(
    tx: &mut Tx<'_>,
    case: &Case,
    reason: &str,
    now: i64,
) -> AppResult<()> {
    let done = sqlx::query(
        "UPDATE cases SET void_reason = $1, version = version + 1, updated_at = $2 WHERE id = $3 AND version = $4",
    )
    .bind(reason)
    .bind(now)
    .bind(&case.id)
    .bind(case.version)
    .execute(&mut **tx)
    .await?;
    expect_versioned(&done)
}

/// Voids the current proposal (and any approval bound to its fingerprint) and starts a
/// new investigation run.
pub async fn reinvestigate(
    tx: &mut Tx<'_>,
    state: &AppState,
    case: &Case,
    why: &str,
) -> AppResult<()> {
    let now = state.clock.now_ms();
    let run_id = runs::create_run(tx, state, &case.id).await?;
    let done = sqlx::query(
        "UPDATE cases SET status = 'investigating', version = version + 1, proposal_seq = proposal_seq + 1,
             fingerprint = NULL, void_reason = $1, run_id = $2, updated_at = $3
         WHERE id = $4 AND version = $5",
    )
    .bind(why)
    .bind(&run_id)
    .bind(now)
    .bind(&case.id)
    .bind(case.version)
    .execute(&mut **tx)
    .await?;
    expect_versioned(&done)?;
    void_approvals(tx, &case.id).await?;
    if let Some(old_run) = &case.run_id {
        runs::finish_run(tx, old_run, runs::RunStatus::Cancelled, now).await?;
    }
    crate::audit::record(tx, "system", "proposal_voided", &case.id, why, now).await?;
    tracing::info!(case_id = %case.id, why, "proposal voided; re-investigating");
    Ok(())
}

/// What the fingerprint covers (SPEC invariant 2), in a fixed field order.
#[derive(Serialize)]
pub struct FingerprintInput<'a> {
    pub case_id: &'a str,
    pub case_version: i64,
    pub customer_id: &'a str,
    pub order_id: Option<&'a str>,
    pub refunds: Vec<FingerprintRefund>,
    pub reason_code: &'a str,
    pub policy_versions: &'a [String],
    pub evidence_hash: &'a str,
}

#[derive(Serialize)]
pub struct FingerprintRefund {
    pub charge_id: String,
    pub amount: String,
    pub currency: String,
}

/// SHA-256 over the canonical JSON of the approval-relevant parameters.
pub fn fingerprint(input: &FingerprintInput<'_>) -> String {
    let canonical =
        serde_json::to_vec(input).expect("fingerprint input is plain data and always serialises");
    hex::encode(Sha256::digest(&canonical))
}

/// The fingerprint of a decision about a case at a given proposal version.
pub fn decision_fingerprint(
    case_id: &str,
    proposal_seq: i64,
    customer_id: &str,
    order_id: Option<&str>,
    decision: &policy_engine::Decision,
    evidence_hash: &str,
) -> String {
    let reason = serde_plain(&decision.reason_code);
    fingerprint(&FingerprintInput {
        case_id,
        case_version: proposal_seq,
        customer_id,
        order_id,
        refunds: decision
            .refunds
            .iter()
            .map(|r| FingerprintRefund {
                charge_id: r.charge_id.clone(),
                amount: r.amount.amount_string(),
                currency: r.amount.currency().code().to_string(),
            })
            .collect(),
        reason_code: &reason,
        policy_versions: &decision.policy_versions,
        evidence_hash,
    })
}

/// How a decision treats the case's proposal, and so `proposal_seq`, which the
/// fingerprint binds (SPEC invariant 2).
#[derive(Debug, Clone, Copy)]
pub enum ProposalChange<'a> {
    /// The decision on the agent's current proposal, which is stored with it;
    /// `proposal_seq` stays.
    Decides(&'a Proposal),
    /// A person's own proposal, stored in place of the agent's; `proposal_seq` moves on.
    Replaces(&'a Proposal),
    /// A new decision on the stored proposal's inputs (a takeover): `proposal_seq` moves
    /// on and the stored proposal is kept.
    Renews,
}

/// What a decision does to the case's `void_reason` (why an earlier proposal was void,
/// or why the case waits for a person).
#[derive(Debug, Clone, Copy)]
pub enum VoidReason<'a> {
    /// Keep the recorded reason (a re-decision after a void still says why).
    Keep,
    Set(&'a str),
    Clear,
}

/// A decision about a case, as [`record_decision`] writes it.
pub struct DecisionRecord<'a> {
    pub status: CaseStatus,
    pub proposal: ProposalChange<'a>,
    pub facts: &'a policy_engine::Facts,
    pub decision: &'a policy_engine::Decision,
    pub evidence_hash: &'a str,
    pub required_role: Option<policy_engine::Role>,
    pub reason_code: policy_engine::ReasonCode,
    pub void_reason: VoidReason<'a>,
    /// The policy index the decision was made with; `None` keeps the recorded one.
    pub policy_index: Option<&'a str>,
    pub now: i64,
}

/// What [`record_decision`] wrote.
#[derive(Debug, Clone)]
pub struct RecordedDecision {
    /// The case's version after the update.
    pub version: i64,
    pub proposal_seq: i64,
    /// Set exactly when the case now awaits approval.
    pub fingerprint: Option<String>,
}

/// Records a decision on `case` — status, facts, decision, evidence hash, fingerprint,
/// required role, reason, refund total — if nobody changed the case since `case` was
/// read (a versioned update; else [`case_changed`], and the caller's transaction must
/// roll back). The fingerprint is computed here, from the `proposal_seq` this update
/// stores, so an approval can only ever bind the parameters recorded (SPEC invariant 2).
///
/// Callers make this their transaction's first write that another writer of the case
/// could collide with: a lost race then surfaces as the case conflict it is, not as a
/// clash on whatever row the transaction happened to write first.
pub async fn record_decision(
    tx: &mut Tx<'_>,
    case: &Case,
    record: &DecisionRecord<'_>,
) -> AppResult<RecordedDecision> {
    let (proposal_seq, proposal) = match record.proposal {
        ProposalChange::Decides(p) => (case.proposal_seq, Some(p)),
        ProposalChange::Replaces(p) => (case.proposal_seq + 1, Some(p)),
        ProposalChange::Renews => (case.proposal_seq + 1, None),
    };
    let fingerprint = (record.status == CaseStatus::AwaitingApproval).then(|| {
        decision_fingerprint(
            &case.id,
            proposal_seq,
            &case.customer_id,
            record.facts.order_id.as_deref(),
            record.decision,
            record.evidence_hash,
        )
    });
    let (keep_void_reason, void_reason) = match record.void_reason {
        VoidReason::Keep => (1_i64, None),
        VoidReason::Set(why) => (0, Some(why)),
        VoidReason::Clear => (0, None),
    };
    let total = record.decision.refund_total();
    // `proposal` and `policy_index` bound as NULL keep what is recorded.
    let done = sqlx::query(
        "UPDATE cases SET status = $1, version = version + 1, proposal_seq = $2, proposal = COALESCE($3, proposal),
             facts = $4, decision = $5, evidence_hash = $6, fingerprint = $7, required_role = $8, reason_code = $9,
             refund_total_minor = $10, currency = $11,
             void_reason = CASE WHEN $12 = 1 THEN void_reason ELSE $13 END,
             policy_index = COALESCE($14, policy_index), updated_at = $15
         WHERE id = $16 AND version = $17",
    )
    .bind(record.status.as_str())
    .bind(proposal_seq)
    .bind(proposal.map(|p| serde_json::to_string(p).unwrap_or_default()))
    .bind(serde_json::to_string(record.facts).unwrap_or_default())
    .bind(serde_json::to_string(record.decision).unwrap_or_default())
    .bind(record.evidence_hash)
    .bind(&fingerprint)
    .bind(record.required_role.map(|r| serde_plain(&r)))
    .bind(serde_plain(&record.reason_code))
    .bind(total.map(|m| m.minor_units()))
    .bind(total.map(|m| m.currency().code().to_string()))
    .bind(keep_void_reason)
    .bind(void_reason)
    .bind(record.policy_index)
    .bind(record.now)
    .bind(&case.id)
    .bind(case.version)
    .execute(&mut **tx)
    .await?;
    expect_versioned(&done)?;
    Ok(RecordedDecision {
        version: case.version + 1,
        proposal_seq,
        fingerprint,
    })
}

pub async fn list_cases(db: &Db, status: Option<CaseStatus>) -> AppResult<Vec<Case>> {
    let rows = match status {
        Some(s) => {
            sqlx::query(&format!(
            "SELECT {CASE_COLUMNS} FROM cases WHERE status = $1 ORDER BY created_at, id LIMIT 500"
        ))
            .bind(s.as_str())
            .fetch_all(db.reader())
            .await?
        }
        None => {
            sqlx::query(&format!(
                "SELECT {CASE_COLUMNS} FROM cases ORDER BY created_at DESC, id LIMIT 500"
            ))
            .fetch_all(db.reader())
            .await?
        }
    };
    rows.iter().map(case_from_row).collect()
}

/// How long a worker holds a case while it executes the case's refunds (its own lease,
/// on the `cases` row; a run's lease is `runs::LEASE_MS`). A worker that dies mid-case
/// loses it, and another resumes from the stored intents.
const CASE_LEASE_MS: i64 = 60_000;

/// Case states in which the refund executor (or the reconciler) works on a case.
const EXECUTABLE_CASES: &str =
    "status IN ('approved', 'executing', 'refund_pending', 'pending_verification')";

/// A case lease held by one executor: released only by the holder that took it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CaseLease {
    pub case_id: String,
    pub owner: String,
    /// The expiry this claim set: it identifies the claim, so a holder whose lease
    /// expired and was taken over (even by the same owner name) cannot release the next
    /// holder's lease.
    pub expires_at: i64,
}

/// Claims a case for execution; `None` when someone else holds it or it is not ready.
///
/// The claim is a versioned update: it bumps the case's version, so a previous holder
/// whose lease expired (an instance that stalled, or was killed and whose writes are
/// still in flight) fails its next versioned case transition instead of racing the new
/// holder. On PostgreSQL the row is first locked with `FOR UPDATE SKIP LOCKED` in a
/// short transaction, so instances claiming at once never wait on one another: the
/// loser sees no row and moves on. SQLite has one writer and no row locks; there the
/// versioned update alone decides.
pub(crate) async fn claim_case(
    db: &Db,
    case_id: &str,
    owner: &str,
    now: i64,
) -> AppResult<Option<(Case, CaseLease)>> {
    let expires_at = now + CASE_LEASE_MS;
    let claimed = match db.backend() {
        Backend::Postgres => {
            let mut tx = db.begin().await?;
            let candidate = sqlx::query(&format!(
                "SELECT version FROM cases WHERE id = $1 AND {EXECUTABLE_CASES}
                   AND (lease_expires_at IS NULL OR lease_expires_at < $2) FOR UPDATE SKIP LOCKED"
            ))
            .bind(case_id)
            .bind(now)
            .fetch_optional(&mut *tx)
            .await?;
            let taken = match candidate {
                Some(row) => {
                    let version: i64 = row.try_get("version")?;
                    take_case_lease(&mut tx, case_id, version, owner, expires_at, now).await?
                }
                None => false,
            };
            tx.commit().await?;
            taken
        }
        // No read-then-write transaction here: on a SQLite file shared by several
        // processes, upgrading a read transaction to a write one can fail with
        // SQLITE_BUSY at once; two autocommit statements wait on `busy_timeout` instead.
        Backend::Sqlite => {
            let candidate = sqlx::query(&format!(
                "SELECT version FROM cases WHERE id = $1 AND {EXECUTABLE_CASES}
                   AND (lease_expires_at IS NULL OR lease_expires_at < $2)"
            ))
            .bind(case_id)
            .bind(now)
            .fetch_optional(db.pool())
            .await?;
            match candidate {
                Some(row) => {
                    let version: i64 = row.try_get("version")?;
                    let mut conn = db.pool().acquire().await?;
                    take_case_lease(&mut conn, case_id, version, owner, expires_at, now).await?
                }
                None => false,
            }
        }
    };
    if !claimed {
        return Ok(None);
    }
    tracing::debug!(case_id, owner, "case claimed");
    let lease = CaseLease {
        case_id: case_id.to_string(),
        owner: owner.to_string(),
        expires_at,
    };
    match load_case(db, case_id).await? {
        Some(case) => Ok(Some((case, lease))),
        None => {
            release_case(db, &lease).await?;
            Ok(None)
        }
    }
}

/// The versioned lease update both claim paths end with: it succeeds only if the case
/// is still at `version`, still executable, and its lease still free or expired.
async fn take_case_lease(
    conn: &mut sqlx::AnyConnection,
    case_id: &str,
    version: i64,
    owner: &str,
    expires_at: i64,
    now: i64,
) -> AppResult<bool> {
    let done = sqlx::query(&format!(
        "UPDATE cases SET lease_owner = $1, lease_expires_at = $2, version = version + 1
         WHERE id = $3 AND version = $4 AND {EXECUTABLE_CASES}
           AND (lease_expires_at IS NULL OR lease_expires_at < $5)"
    ))
    .bind(owner)
    .bind(expires_at)
    .bind(case_id)
    .bind(version)
    .bind(now)
    .execute(&mut *conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Gives a case lease up, if it is still the one `lease` took (same owner, same
/// expiry). It changes no case state, so it does not bump the version: settles by
/// webhooks or the reconciler in flight need not retry because of it.
pub(crate) async fn release_case(db: &Db, lease: &CaseLease) -> AppResult<()> {
    sqlx::query(
        "UPDATE cases SET lease_owner = NULL, lease_expires_at = NULL
         WHERE id = $1 AND lease_owner = $2 AND lease_expires_at = $3",
    )
    .bind(&lease.case_id)
    .bind(&lease.owner)
    .bind(lease.expires_at)
    .execute(db.pool())
    .await?;
    Ok(())
}
