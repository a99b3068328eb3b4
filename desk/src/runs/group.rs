//! Group commit of run steps: one writer task applies the steps several runs
//! are waiting to commit in one transaction, then answers each.
//!
//! Every step is still what `record_step` makes it — the run's versioned update, then
//! its events — and a run moves on only once the transaction holding its step has
//! committed: durable before it goes on, as with a transaction of its own. What is
//! shared is the transaction's begin and commit (on SQLite round trips to the one
//! writer connection's thread, on PostgreSQL a WAL flush), which a batch of N steps pays
//! once instead of N times. On SQLite a batch is one round trip (`one_trip`), and the
//! writer keeps the connection for the next batch when steps follow without a pause
//! (at most `HOLD_BATCHES` in a row, so other writers still get their turn). A step
//! whose run changed elsewhere (its versioned update finds another version) writes
//! nothing and is answered `run_changed`; the others in its batch commit. Any other
//! failure rolls the batch back and commits its steps one by one, so a step fails only
//! for its own reason.
//!
//! It does not batch anything but run steps, and it never waits for a batch to fill:
//! the steps that arrived while the previous batch was being written form the next.

use harness::NewEvent as HarnessEvent;
use tokio::sync::{mpsc, oneshot};

use super::one_trip::Held;
use super::{record_step, Appended, EventKind, NewEvent, Run, RunStatus};
use crate::error::{DomainError, DomainResult};
use store::{Db, Tx};

/// At most this many steps share one transaction (bounds how long it holds the writer).
const MAX_BATCH: usize = 64;

/// Steps waiting for the writer task, at most.
const QUEUE: usize = 1024;

/// One run's step, as it is committed.
pub struct StepWrite {
    pub run: Run,
    pub status: RunStatus,
    pub add_steps: i64,
    pub add_tool_calls: i64,
    pub now: i64,
    pub events: Vec<HarnessEvent>,
}

/// What a committed step leaves: the run as updated, and its events as stored.
pub type Committed = (Run, Vec<Appended>);

/// One run's steps, applied in order in one transaction (usually one step; two when
/// the loop commits a step together with the next, `harness::EventLog::commit_steps`).
struct Pending {
    chain: Vec<StepWrite>,
    reply: oneshot::Sender<DomainResult<Vec<Committed>>>,
}

/// The handle runs commit their steps through; clones share one writer task.
#[derive(Clone)]
pub struct StepWriter {
    queue: mpsc::Sender<Pending>,
}

impl StepWriter {
    /// Starts the writer task on the current runtime; it ends when the last handle is
    /// dropped.
    pub fn start(db: Db) -> StepWriter {
        let (queue, waiting) = mpsc::channel(QUEUE);
        tokio::spawn(write_batches(db, waiting));
        StepWriter { queue }
    }

    /// Commits `write` (in a batch with whatever else is waiting) and returns the run as
    /// updated with the events as stored, once its transaction has committed.
    pub async fn commit(&self, write: StepWrite) -> DomainResult<Committed> {
        let mut committed = self.commit_chain(vec![write]).await?;
        committed.pop().ok_or_else(writer_gone)
    }

    /// Commits one run's steps in order, in one transaction (in a batch with whatever
    /// else is waiting): the first step's `run` is the run as read; each next step
    /// applies to the run as the one before left it (their own `run` is not read).
    /// All or none: a step whose run changed writes none of them.
    pub async fn commit_chain(&self, chain: Vec<StepWrite>) -> DomainResult<Vec<Committed>> {
        let (reply, answer) = oneshot::channel();
        self.queue
            .send(Pending { chain, reply })
            .await
            .map_err(|_| writer_gone())?;
        answer.await.map_err(|_| writer_gone())?
    }
}

fn writer_gone() -> DomainError {
    DomainError::Internal(anyhow::anyhow!("the run step writer has stopped"))
}

/// Batches at most written on the writer connection in a row before it goes back to the
/// pool, however fast steps keep coming: every other writer waits at most this many.
const HOLD_BATCHES: usize = 8;

async fn write_batches(db: Db, mut waiting: mpsc::Receiver<Pending>) {
    while let Some(first) = waiting.recv().await {
        // Steps that follow each other without a pause are written on the connection
        // the batch before them used (SQLite; `one_trip::Held`): it goes back to the
        // pool when none is waiting once the runs just answered have had their turn.
        let mut held = Held::default();
        let mut next = Some(first);
        let mut written = 0;
        while let Some(first) = next.take() {
            write_batch(&db, &mut held, gather(first, &mut waiting)).await;
            written += 1;
            if !held.holds() || written == HOLD_BATCHES {
                break;
            }
            tokio::task::yield_now().await;
            next = waiting.try_recv().ok();
        }
    }
}

/// `first` and whatever else is waiting, up to a batch.
fn gather(first: Pending, waiting: &mut mpsc::Receiver<Pending>) -> Vec<Pending> {
    let mut batch = vec![first];
    while batch.len() < MAX_BATCH {
        match waiting.try_recv() {
            Ok(next) => batch.push(next),
            Err(_) => break,
        }
    }
    batch
}

async fn write_batch(db: &Db, held: &mut Held, batch: Vec<Pending>) {
    let (chains, replies): (Vec<Vec<StepWrite>>, Vec<_>) =
        batch.into_iter().map(|p| (p.chain, p.reply)).unzip();
    let all: Vec<&[StepWrite]> = chains.iter().map(Vec::as_slice).collect();
    let results = commit_chains(db, held, &all).await;
    for (reply, result) in replies.into_iter().zip(results) {
        // A step whose worker stopped waiting (its task was dropped) is committed anyway.
        let _ = reply.send(result);
    }
}

/// Commits `writes` in one transaction, each step's result in order; if the transaction
/// fails as a whole, each step alone, so a step fails only for its own reason.
pub async fn commit_batch(db: &Db, writes: &[StepWrite]) -> Vec<DomainResult<Committed>> {
    let chains: Vec<&[StepWrite]> = writes.iter().map(std::slice::from_ref).collect();
    let results = commit_chains(db, &mut Held::default(), &chains).await;
    results
        .into_iter()
        .map(|r| r.and_then(|mut one| one.pop().ok_or_else(writer_gone)))
        .collect()
}

/// [`commit_batch`] of runs' chains of steps (`StepWriter::commit_chain`). On SQLite in
/// one round trip to the connection's thread when every step's run is as its holder
/// read it (`one_trip`, on the connection `held` keeps); otherwise, and on PostgreSQL,
/// statement by statement on connections from the pool.
async fn commit_chains(
    db: &Db,
    held: &mut Held,
    chains: &[&[StepWrite]],
) -> Vec<DomainResult<Vec<Committed>>> {
    if db.backend() == store::Backend::Sqlite {
        match super::one_trip::commit_chains(db, held, chains).await {
            Ok(Some(committed)) => return committed.into_iter().map(Ok).collect(),
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(error = %e, steps = chains.len(), "a batch of run steps failed in one trip; committing it statement by statement")
            }
        }
    }
    match apply_together(db, chains).await {
        Ok(results) => results,
        Err(e) => {
            if chains.len() > 1 {
                tracing::warn!(error = %e, steps = chains.len(), "a batch of run steps failed; committing them one by one");
            }
            let mut alone = Vec::with_capacity(chains.len());
            for chain in chains {
                alone.push(match apply_together(db, &[chain]).await {
                    Ok(mut one) => one.remove(0),
                    Err(e) => Err(e),
                });
            }
            alone
        }
    }
}

/// Applies every chain in one transaction and commits it. A chain whose run changed is
/// its own `Err` inside the `Ok` (written: none of its steps, as its first step's
/// versioned update is what fails); any other error is the whole batch's.
async fn apply_together(
    db: &Db,
    chains: &[&[StepWrite]],
) -> DomainResult<Vec<DomainResult<Vec<Committed>>>> {
    let mut tx = db.begin().await?;
    let mut results = Vec::with_capacity(chains.len());
    for chain in chains {
        match apply_chain(&mut tx, chain).await {
            Err(e) if !super::is_run_changed(&e) => return Err(e),
            result => results.push(result),
        }
    }
    tx.commit().await?;
    Ok(results)
}

/// One run's steps in order, each on the run as the one before left it.
async fn apply_chain(tx: &mut Tx<'_>, chain: &[StepWrite]) -> DomainResult<Vec<Committed>> {
    let Some(first) = chain.first() else {
        return Ok(Vec::new());
    };
    let mut run = first.run.clone();
    let mut committed = Vec::with_capacity(chain.len());
    for write in chain {
        let appended = apply(tx, &mut run, write).await?;
        committed.push((run.clone(), appended));
    }
    Ok(committed)
}

async fn apply(tx: &mut Tx<'_>, run: &mut Run, write: &StepWrite) -> DomainResult<Vec<Appended>> {
    let events = write
        .events
        .iter()
        .map(|e| {
            Ok(NewEvent {
                kind: EventKind::parse(e.kind)?,
                call_id: e.call_id.as_deref(),
                payload: &e.payload,
            })
        })
        .collect::<DomainResult<Vec<_>>>()?;
    let (status, steps, calls, now) = (
        write.status,
        write.add_steps,
        write.add_tool_calls,
        write.now,
    );
    record_step(tx, run, status, steps, calls, now, &events).await
}
