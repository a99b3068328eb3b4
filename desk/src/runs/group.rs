//! Group commit of run steps (issue 19): one writer task applies the steps several runs
//! are waiting to commit in one transaction, then answers each.
//!
//! Every step is still what `record_step` makes it — the run's versioned update, then
//! its events — and a run moves on only once the transaction holding its step has
//! committed: durable before it goes on, as with a transaction of its own. What is
//! shared is the transaction's begin and commit (on SQLite two round trips to the one
//! writer connection's thread, on PostgreSQL a WAL flush), which a batch of N steps pays
//! once instead of N times. A step whose run changed elsewhere (its versioned update
//! finds another version) writes nothing and is answered `run_changed`; the others in
//! its batch commit. Any other failure rolls the batch back and commits its steps one
//! by one, so a step fails only for its own reason.
//!
//! It does not batch anything but run steps, and it never waits for a batch to fill:
//! the steps that arrived while the previous batch was being written form the next.

use harness::NewEvent as HarnessEvent;
use tokio::sync::{mpsc, oneshot};

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

struct Pending {
    write: StepWrite,
    reply: oneshot::Sender<DomainResult<Committed>>,
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
        let (reply, answer) = oneshot::channel();
        self.queue
            .send(Pending { write, reply })
            .await
            .map_err(|_| writer_gone())?;
        answer.await.map_err(|_| writer_gone())?
    }
}

fn writer_gone() -> DomainError {
    DomainError::Internal(anyhow::anyhow!("the run step writer has stopped"))
}

async fn write_batches(db: Db, mut waiting: mpsc::Receiver<Pending>) {
    while let Some(first) = waiting.recv().await {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match waiting.try_recv() {
                Ok(next) => batch.push(next),
                Err(_) => break,
            }
        }
        write_batch(&db, batch).await;
    }
}

async fn write_batch(db: &Db, batch: Vec<Pending>) {
    let (writes, replies): (Vec<StepWrite>, Vec<_>) =
        batch.into_iter().map(|p| (p.write, p.reply)).unzip();
    let results = commit_batch(db, &writes).await;
    for (reply, result) in replies.into_iter().zip(results) {
        // A step whose worker stopped waiting (its task was dropped) is committed anyway.
        let _ = reply.send(result);
    }
}

/// Commits `writes` in one transaction, each step's result in order; if the transaction
/// fails as a whole, each step alone, so a step fails only for its own reason.
pub async fn commit_batch(db: &Db, writes: &[StepWrite]) -> Vec<DomainResult<Committed>> {
    let all: Vec<&StepWrite> = writes.iter().collect();
    match apply_together(db, &all).await {
        Ok(results) => results,
        Err(e) => {
            if writes.len() > 1 {
                tracing::warn!(error = %e, steps = writes.len(), "a batch of run steps failed; committing them one by one");
            }
            let mut alone = Vec::with_capacity(writes.len());
            for write in &all {
                alone.push(match apply_together(db, &[write]).await {
                    Ok(mut one) => one.remove(0),
                    Err(e) => Err(e),
                });
            }
            alone
        }
    }
}

/// Applies every step in one transaction and commits it. A step whose run changed is
/// its own `Err` inside the `Ok`; any other error is the whole batch's.
async fn apply_together(
    db: &Db,
    writes: &[&StepWrite],
) -> DomainResult<Vec<DomainResult<Committed>>> {
    let mut tx = db.begin().await?;
    let mut results = Vec::with_capacity(writes.len());
    for write in writes {
        match apply(&mut tx, write).await {
            Err(e) if !super::is_run_changed(&e) => return Err(e),
            result => results.push(result),
        }
    }
    tx.commit().await?;
    Ok(results)
}

async fn apply(tx: &mut Tx<'_>, write: &StepWrite) -> DomainResult<Committed> {
    let mut run = write.run.clone();
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
    let appended = record_step(tx, &mut run, status, steps, calls, now, &events).await?;
    Ok((run, appended))
}
