//! The background worker: advances agent runs and executes approved refunds.
//!
//! `run_once` does one pass and reports how much it did, so tests drain the queue
//! without sleeping; `serve` loops it, woken by new work or a short tick.

use std::time::Duration;

use crate::error::DomainResult;
use crate::state::Services;
use crate::stop::StopSignal;

/// One pass over runnable runs and approved cases. Returns the number of items handled.
pub async fn run_once(state: &Services) -> DomainResult<usize> {
    run_pass(state, &StopSignal::default()).await
}

/// One pass that claims nothing more once `stop` is requested.
async fn run_pass(state: &Services, stop: &StopSignal) -> DomainResult<usize> {
    // A chore may hold the whole pass back (docs/spec/data.md, "Backups": after a
    // restore nothing is executed until the provider's refunds since the backup are
    // adopted; each pass tries until the provider answers).
    for chore in state.chores.iter() {
        if !chore.may_work(state.sender()).await? {
            return Ok(0);
        }
    }
    // Each pass first follows the database's policies (a publish on another
    // instance: new index generation, then the set swapped), then works on one copy of
    // the state, so the whole pass decides under one set.
    // A new generation also voids the open approvals it decides differently (docs/spec/invariants.md
    // invariant 2), once per generation on each instance (`policies::follow`).
    let voided = crate::policies::follow::follow(state.publisher()).await?;
    let state = &state.clone();
    // `worker_concurrency` claim loops advance runs side by side. Each claim is a lease
    // in the database, exactly as between instances, so two loops never hold one run.
    let mut loops = tokio::task::JoinSet::new();
    for _ in 0..state.worker_concurrency.max(1) {
        loops.spawn(advance_runs(state.clone(), stop.clone()));
    }
    let mut handled = voided.len() + refunds_while_claiming(state, stop, &mut loops).await?;
    if stop.is_requested() {
        return Ok(handled);
    }
    handled += expire_stale_approvals(state).await?;
    // Before anything is sent (docs/spec/data.md: after a restore, the intents the
    // backup had not seen final are looked up at the provider).
    for chore in state.chores.iter() {
        handled += chore.before_sending(state.sender()).await?;
    }
    handled += execute_due_refunds(state, stop).await?;
    if stop.is_requested() {
        return Ok(handled);
    }
    // Payments reconciliation, at most every `reconcile::PERIOD_MS` of the app clock
    // (claimed in the database, so one instance runs it per period).
    if let Some(report) = crate::reconcile::run_if_due(state.reconciler()).await? {
        handled += report.resolved.len();
    }
    // The rollout guards, once per `rollout::guards::EVALUATION_PERIOD_MS` of the app
    // clock (keyed by period in the database, so one instance evaluates each period); a
    // tripped guard demotes its scope to shadow before the next case is decided.
    let now = state.clock.now_ms();
    let rollout = crate::rollout::guards::evaluate_if_due(&state.db, &state.rollout_guards, now);
    handled += rollout.await?.demoted.len();
    // docs/spec/roles.md, "Where an escalation goes": the agents' escalations nobody holds
    // go to the present agents, round robin (unless ESCALATION_ROUTING=queue).
    handled += crate::cases::routing::share_out(&state.db, state.escalation_routing, now).await?;
    // What the channels held back is taken in (mail over its sender's limit, or
    // confirmed by its sender), then what this pass's changes told people is delivered.
    let reach = state.reach();
    handled += crate::reach::take_in(&reach).await?;
    handled += crate::reach::deliver(&reach).await?;
    // Last, the chores' housekeeping (docs/spec/data.md: text past its retention
    // window, redacted once per period).
    for chore in state.chores.iter() {
        chore.after_pass(state.sender(), now).await?;
    }
    Ok(handled)
}

/// How often approved refunds are looked for while the claim loops are still busy.
const REFUNDS_DURING_CLAIMS: Duration = Duration::from_millis(250);

/// Waits for the claim loops, executing the refunds approved meanwhile every
/// [`REFUNDS_DURING_CLAIMS`]: a backlog of runs to advance must not hold up money a
/// person has approved (under a thousand queued tickets, approved refunds
/// waited for the whole backlog, a p50 of 16 s from approval to the provider). Returns
/// what was handled; the first error of a loop or an execution, once all have ended.
async fn refunds_while_claiming(
    state: &Services,
    stop: &StopSignal,
    loops: &mut tokio::task::JoinSet<DomainResult<usize>>,
) -> DomainResult<usize> {
    let (mut handled, mut first_error) = (0, None);
    loop {
        tokio::select! {
            joined = loops.join_next() => match joined {
                Some(Ok(Ok(n))) => handled += n,
                Some(Ok(Err(e))) => first_error = first_error.or(Some(e)),
                Some(Err(panic)) => std::panic::resume_unwind(panic.into_panic()),
                None => break,
            },
            _ = tokio::time::sleep(REFUNDS_DURING_CLAIMS), if !stop.is_requested() => {
                match execute_due_refunds(state, stop).await {
                    Ok(n) => handled += n,
                    Err(e) => first_error = first_error.or(Some(e)),
                }
            }
        }
    }
    first_error.map_or(Ok(handled), Err)
}

/// Executes the approved cases due now, up to `worker_concurrency` at once (each case is
/// claimed with a lease first, exactly as between instances, so two executions never
/// hold one case); none is started once a stop is requested. An approved case not yet
/// started stays approved for the next pass or instance; one started has stored its
/// intent and key first (docs/spec/invariants.md #4). Returns the first error once all
/// started have ended.
async fn execute_due_refunds(state: &Services, stop: &StopSignal) -> DomainResult<usize> {
    use futures_util::StreamExt;
    let due = crate::refunds::cases_to_execute(&state.db, state.clock.now_ms()).await?;
    let ended: Vec<DomainResult<()>> = futures_util::stream::iter(due)
        .filter(|_| std::future::ready(!stop.is_requested()))
        .map(
            |case_id| async move { crate::refunds::execute_case(state.executor(), &case_id).await },
        )
        .buffer_unordered(state.worker_concurrency.max(1))
        .collect()
        .await;
    let handled = ended.iter().filter(|r| r.is_ok()).count();
    ended.into_iter().find(Result::is_err).unwrap_or(Ok(()))?;
    Ok(handled)
}

/// Claims and advances runs until none is runnable or a stop is requested; stops at the
/// first failed step.
async fn advance_runs(state: Services, stop: StopSignal) -> DomainResult<usize> {
    let state = &state;
    let mut handled = 0;
    while !stop.is_requested() {
        let Some(mut run) =
            crate::runs::claim_next(&state.db, &state.instance_id, state.clock.now_ms()).await?
        else {
            break;
        };
        let result = crate::investigation::advance(state.investigator(), &mut run).await;
        // Release the run as this worker last wrote it (`advance` keeps its version
        // current). A reloaded copy could belong to a worker that took the lease over
        // after ours expired; releasing that would take its lease away.
        release_when_reachable(state, &run, &stop).await?;
        if let Err(e) = result {
            tracing::error!(run_id = %run.id, error = %e, "run step failed; it will be retried");
            return Err(e);
        }
        handled += 1;
    }
    Ok(handled)
}

/// Releases a run this loop advanced. When the database is out of reach (a restart cut
/// the step off), it tries again every half second while the lease would still hold the
/// run: released as soon as the database is back, the run is picked up at once instead of
/// waiting out its lease (`WORK_LEASE_SECS`). A stop request ends the waiting; the lease
/// then expires as it would have.
async fn release_when_reachable(
    state: &Services,
    run: &crate::runs::Run,
    stop: &StopSignal,
) -> DomainResult<()> {
    let give_up = std::time::Instant::now() + Duration::from_millis(crate::lease::ms() as u64);
    loop {
        match crate::runs::release(&state.db, run).await {
            Err(e)
                if e.is_unavailable()
                    && std::time::Instant::now() < give_up
                    && !stop.is_requested() =>
            {
                tracing::warn!(run_id = %run.id, "database out of reach; releasing the run again shortly");
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            other => return other,
        }
    }
}

/// Sends cases whose approval request is older than the TTL back to investigation.
pub async fn expire_stale_approvals(state: &Services) -> DomainResult<usize> {
    use sqlx::Row;
    let cutoff = state.clock.now_ms() - state.approval_ttl_ms;
    let rows = sqlx::query(
        "SELECT id FROM cases WHERE status = 'awaiting_approval' AND updated_at < $1 LIMIT 100",
    )
    .bind(cutoff)
    .fetch_all(state.db.pool())
    .await?;
    let mut expired = 0;
    for row in rows {
        let id: String = row.try_get("id")?;
        let mut tx = state.db.begin().await?;
        if let Some(case) = crate::cases::load_case_tx(&mut tx, &id).await? {
            if case.status == crate::cases::CaseStatus::AwaitingApproval && case.updated_at < cutoff
            {
                let why = "approval request expired";
                let now = state.clock.now_ms();
                crate::cases::reinvestigate(&mut tx, &state.versions, &case, why, now).await?;
                expired += 1;
            }
        }
        tx.commit().await?;
    }
    Ok(expired)
}

/// Runs passes until one finds nothing that changes (bounded, for tests and the CLI).
pub async fn drain(state: &Services) -> DomainResult<()> {
    for _ in 0..50 {
        let before = progress_marker(state).await?;
        run_once(state).await?;
        if progress_marker(state).await? == before {
            return Ok(());
        }
    }
    Ok(())
}

async fn progress_marker(state: &Services) -> DomainResult<(i64, i64, i64)> {
    use sqlx::Row;
    let row = sqlx::query(
        "SELECT (SELECT COUNT(*) FROM run_events) AS events, (SELECT CAST(COALESCE(SUM(version), 0) AS BIGINT) FROM cases) AS cases,
                (SELECT CAST(COALESCE(SUM(version), 0) AS BIGINT) FROM refund_intents) AS intents",
    )
    .fetch_one(state.db.pool())
    .await?;
    Ok((
        row.try_get("events")?,
        row.try_get("cases")?,
        row.try_get("intents")?,
    ))
}

/// The serve loop: a pass on every wake-up or tick, until `stop` is requested; then it
/// returns once the pass in flight has finished what it claimed.
pub async fn run_until_stopped(state: Services, stop: StopSignal) {
    // The watchdog runs beside the passes, not after them: a pass stuck on a hung model
    // or tool is exactly what it must see. Joined, not spawned, so aborting
    // this task (tests) stops both.
    tokio::join!(
        work_until_stopped(&state, &stop),
        watch_until_stopped(&state, &stop),
        crate::reach::watch(state.reach(), &stop)
    );
}

async fn work_until_stopped(state: &Services, stop: &StopSignal) {
    while !stop.is_requested() {
        if let Err(e) = run_pass(state, stop).await {
            tracing::error!(error = %e, "worker pass failed");
        }
        tokio::select! {
            _ = state.wake.notified() => {}
            _ = stop.requested() => {}
            _ = tokio::time::sleep(Duration::from_millis(500)) => {}
        }
    }
}

/// The stuck-run watchdog's scan every `watchdog::SCAN_PERIOD_MS` of the app clock,
/// looked at once a second (so a test's moved clock is seen at once).
async fn watch_until_stopped(state: &Services, stop: &StopSignal) {
    let mut next_scan = 0;
    while !stop.is_requested() {
        let now = state.clock.now_ms();
        if now >= next_scan {
            next_scan = now + crate::watchdog::SCAN_PERIOD_MS;
            if let Err(e) =
                crate::watchdog::scan(&state.db, state.clock.as_ref(), state.watchdog).await
            {
                tracing::error!(error = %e, "watchdog scan failed");
            }
        }
        tokio::select! {
            _ = stop.requested() => {}
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
    }
}

/// The serve loop with nothing to stop it (tests that abort the task).
pub async fn run_forever(state: Services) {
    run_until_stopped(state, StopSignal::default()).await
}
