//! Following the published policies: every worker pass moves this instance to the
//! database's current generation (`Policies::refresh`) and voids, once per generation,
//! the open approvals it decides differently (docs/spec/invariants.md #2). Publishing
//! itself is the `authoring` crate's; it sweeps with `void_changed_approvals` at once,
//! through the same `Publisher` this module's `follow` takes.

use std::sync::Arc;

use policy_engine::{Facts, PolicySet};
use rag_index::PolicyIndex;

use super::Policies;
use crate::cases::{self, CaseQuery, CaseStatus};
use crate::clock::Clock;
use crate::error::DomainResult;
use store::Db;

/// What publishing needs of the instance besides the store and the clock.
#[derive(Clone, Copy)]
pub struct Publisher<'a> {
    pub db: &'a Db,
    pub clock: &'a dyn Clock,
    pub policies: &'a Policies,
    pub index: &'a Arc<PolicyIndex>,
    pub versions: &'a harness::Versions,
    /// `POLICY_SECOND_APPROVER=on`: a draft's only author may not publish it.
    pub second_approver: bool,
}

/// What every worker pass does first: follows the database's policies
/// (`Policies::refresh`) and, once for each generation this process moves to, voids the
/// open approvals that generation decides differently — approvals this instance or any
/// other decided under the set it held before it noticed a publish, here or elsewhere.
/// The publishing instance swept at publish time and sweeps again at its next pass (a
/// pass in flight then may have decided under the old set); another instance sweeps
/// when its pass sees the publish. Instances sweeping at once void each case once: the
/// void is a versioned update, and the loser skips the case. Returns the voided cases.
pub async fn follow(p: Publisher<'_>) -> DomainResult<Vec<String>> {
    p.policies.refresh(p.db, p.index).await?;
    let (mut swept, current) = p.policies.sweep_lock().await;
    if *swept == current.sources_hash() {
        return Ok(Vec::new());
    }
    let hash = current.sources_hash();
    let why = format!(
        "policies changed (sources {}): the decision would change",
        &hash[..hash.len().min(12)]
    );
    let voided = void_changed_approvals(p, &current, &why).await?;
    *swept = hash.to_string();
    Ok(voided)
}

/// Cases awaiting approval or approved but not yet sent whose decision, on the facts it
/// was made on, differs under `policies`: their proposal and approval are void and the
/// case goes back to investigation (docs/spec/invariants.md #2), through `cases::reinvestigate`
/// as a new customer message does. Cases already decided otherwise keep their decision.
pub async fn void_changed_approvals(
    p: Publisher<'_>,
    policies: &PolicySet,
    why: &str,
) -> DomainResult<Vec<String>> {
    let open = cases::list_cases(
        p.db,
        &CaseQuery {
            statuses: &[CaseStatus::AwaitingApproval, CaseStatus::Approved],
            ..CaseQuery::default()
        },
    )
    .await?;
    let mut voided = Vec::new();
    for case in open {
        let (Some(decision), Some(facts)) = (case.decision(), case.facts.as_deref()) else {
            continue;
        };
        let Ok(facts) = serde_json::from_str::<Facts>(facts) else {
            continue;
        };
        if policy_engine::decide(&facts, policies).hash == decision.hash {
            continue;
        }
        let now = p.clock.now_ms();
        let mut tx = p.db.begin().await?;
        crate::refunds::void_unsent(&mut tx, &case.id, now).await?;
        match cases::reinvestigate(&mut tx, p.versions, &case, why, now).await {
            Ok(()) => {
                tx.commit().await?;
                voided.push(case.id.to_string());
            }
            // Moved on meanwhile (approved and sent, withdrawn): its own path decides it.
            Err(e) if cases::is_case_changed(&e) => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(voided)
}
