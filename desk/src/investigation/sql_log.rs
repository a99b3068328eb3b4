//! The harness's [`EventLog`] on a `runs` row and its `run_events`: each step one
//! versioned update of the row plus the step's events, in one transaction
//! (`runs::record_step`), so a worker that lost its lease (another worker claimed the
//! run, or the case cancelled it) writes nothing and stops with [`LogError::Lost`].
//! Used for a case's run (`live`) and for each of its child runs (`children`).

use std::time::Duration;

use harness::{BoxFuture, Counters, EventLog, LogError, Phase, Step};

use crate::clock::Clock;
use crate::error::{DomainError, DomainResult};
use crate::runs::{self, Run, RunStatus};
use store::Db;

/// One step outside the harness's loop (a rest, an end), committed like the loop's.
pub(super) async fn rest(
    db: &Db,
    run: &mut Run,
    to: RunStatus,
    now: i64,
    events: Vec<harness::NewEvent>,
) -> DomainResult<()> {
    commit(db, run, to, (0, 0), now, &events).await.map(drop)
}

/// The run's versioned state change and the step's events, in one transaction
/// (`runs::record_step`: a worker that lost its lease writes nothing). Returns the
/// events as stored.
async fn commit(
    db: &Db,
    run: &mut Run,
    to: RunStatus,
    (add_steps, add_tool_calls): (i64, i64),
    now: i64,
    events: &[harness::NewEvent],
) -> DomainResult<Vec<runs::Appended>> {
    let events = run_events(events)?;
    let mut tx = db.begin().await?;
    let appended =
        runs::record_step(&mut tx, run, to, add_steps, add_tool_calls, now, &events).await?;
    tx.commit().await?;
    Ok(appended)
}

/// The harness's events as `runs` appends them; a kind the app does not know (a
/// harness newer than `runs::EventKind`) is refused before anything is written.
pub(super) fn run_events(events: &[harness::NewEvent]) -> DomainResult<Vec<runs::NewEvent<'_>>> {
    events
        .iter()
        .map(|e| {
            Ok(runs::NewEvent {
                kind: runs::EventKind::parse(e.kind)?,
                call_id: e.call_id.as_deref(),
                payload: &e.payload,
            })
        })
        .collect()
}

/// A run's stored events as the harness folds them.
pub(super) fn harness_events(events: Vec<runs::Event>) -> Vec<harness::Event> {
    events
        .into_iter()
        .map(|e| harness_event(e.seq, e.kind, e.call_id, e.payload))
        .collect()
}

/// One of our events as the harness reads it (its kind as text: the harness knows no
/// refund words).
fn harness_event(
    seq: i64,
    kind: runs::EventKind,
    call_id: Option<String>,
    payload: serde_json::Value,
) -> harness::Event {
    harness::Event {
        seq,
        kind: kind.as_str().to_string(),
        call_id,
        payload,
    }
}

/// The status a step that does not change the run's state keeps: its own, unless the
/// run was resting (claimed again from `awaiting_dependency`), when it is `ready` — a
/// run being worked on keeps its lease.
pub(super) fn working_status(run: &Run) -> RunStatus {
    if run.status.holds_no_worker() {
        RunStatus::Ready
    } else {
        run.status
    }
}

/// The harness's [`EventLog`] on the `runs` row and `run_events`.
///
/// The events are read from the store once, then kept: each committed step adds the
/// events it stored (reading the whole log back before every turn was the
/// largest share of a ticket's statements and of its JSON parsing). That is the store's
/// log as the loop folds it because only the run's holder appends the events the loop
/// reads, each in a versioned update of the run — anyone else who ends or takes the run
/// bumps its version, so this holder's next commit fails (`LogError::Lost`) before it
/// acts on what it knew. (The watchdog's `watchdog_flagged` note is appended beside a
/// working run without a version bump; the loop's fold ignores that kind.)
pub struct SqlLog<'a> {
    pub db: &'a Db,
    pub clock: &'a dyn Clock,
    pub run: &'a mut Run,
    known: Option<Vec<harness::Event>>,
    /// Commits through the group writer (a case's run); `None`: a transaction of its
    /// own per step (child runs, committed inside their parent's step).
    writer: Option<&'a runs::StepWriter>,
}

impl<'a> SqlLog<'a> {
    pub fn new(db: &'a Db, clock: &'a dyn Clock, run: &'a mut Run) -> Self {
        SqlLog {
            db,
            clock,
            run,
            known: None,
            writer: None,
        }
    }

    /// Starts from the run's events as the caller read them (`runs::events`), at the
    /// version `self.run` holds: the first load then reads nothing. `None`: read then.
    pub fn knowing(mut self, events: Option<Vec<runs::Event>>) -> Self {
        self.known = events.map(harness_events);
        self
    }

    /// Steps committed in batches with other runs' steps (`runs::StepWriter`).
    pub fn batched(mut self, writer: &'a runs::StepWriter) -> Self {
        self.writer = Some(writer);
        self
    }

    async fn commit_step(&mut self, step: Step) -> DomainResult<Vec<runs::Appended>> {
        let to = step
            .phase
            .map_or_else(|| working_status(self.run), RunStatus::from);
        let now = self.clock.now_ms();
        let counts = (step.add_steps, step.add_tool_calls);
        let Some(writer) = self.writer else {
            return commit(self.db, self.run, to, counts, now, &step.events).await;
        };
        let write = runs::StepWrite {
            run: self.run.clone(),
            status: to,
            add_steps: counts.0,
            add_tool_calls: counts.1,
            now,
            events: step.events,
        };
        let (run, appended) = writer.commit(write).await?;
        *self.run = run;
        Ok(appended)
    }
}

impl SqlLog<'_> {
    /// Adds what a commit appended to the events this log has loaded (if it has).
    fn remember(&mut self, appended: Vec<runs::Appended>) {
        if let Some(known) = &mut self.known {
            known.extend(
                appended
                    .into_iter()
                    .map(|e| harness_event(e.seq, e.kind, e.call_id, e.payload)),
            );
        }
    }

    /// Several steps in one transaction (`harness::EventLog::commit_steps`): each its
    /// versioned update and its events, as `commit_step` writes it, committed together.
    async fn commit_chain(&mut self, steps: Vec<Step>) -> DomainResult<Vec<runs::Appended>> {
        let now = self.clock.now_ms();
        let mut status = self.run.status;
        let mut writes = Vec::with_capacity(steps.len());
        for step in steps {
            let to = step.phase.map_or(
                if status.holds_no_worker() {
                    RunStatus::Ready
                } else {
                    status
                },
                RunStatus::from,
            );
            status = to;
            writes.push(runs::StepWrite {
                run: self.run.clone(),
                status: to,
                add_steps: step.add_steps,
                add_tool_calls: step.add_tool_calls,
                now,
                events: step.events,
            });
        }
        let committed = match self.writer {
            Some(writer) => writer.commit_chain(writes).await?,
            None => commit_alone(self.db, writes).await?,
        };
        let mut appended = Vec::new();
        for (run, events) in committed {
            *self.run = run;
            appended.extend(events);
        }
        Ok(appended)
    }
}

/// A chain of steps in a transaction of its own (a log without the group writer).
async fn commit_alone(db: &Db, writes: Vec<runs::StepWrite>) -> DomainResult<Vec<runs::Committed>> {
    let Some(first) = writes.first() else {
        return Ok(Vec::new());
    };
    let mut run = first.run.clone();
    let mut tx = db.begin().await?;
    let mut committed = Vec::with_capacity(writes.len());
    for w in &writes {
        let events = run_events(&w.events)?;
        let (to, steps, calls) = (w.status, w.add_steps, w.add_tool_calls);
        let appended =
            runs::record_step(&mut tx, &mut run, to, steps, calls, w.now, &events).await?;
        committed.push((run.clone(), appended));
    }
    tx.commit().await?;
    Ok(committed)
}

pub(super) fn from_app(e: DomainError) -> LogError<DomainError> {
    if runs::is_run_changed(&e) {
        LogError::Lost
    } else {
        LogError::Store(e)
    }
}

impl EventLog for SqlLog<'_> {
    type Error = LogError<DomainError>;

    fn load(&mut self) -> BoxFuture<'_, Result<Vec<harness::Event>, Self::Error>> {
        self.load_after(None)
    }

    /// Read from the database once, then kept as this process commits: only the events
    /// after `after` are copied out.
    fn load_after(
        &mut self,
        after: Option<i64>,
    ) -> BoxFuture<'_, Result<Vec<harness::Event>, Self::Error>> {
        Box::pin(async move {
            if self.known.is_none() {
                let events = runs::events(self.db, &self.run.id)
                    .await
                    .map_err(from_app)?;
                self.known = Some(harness_events(events));
            }
            let known = self.known.as_deref().unwrap_or_default();
            let new = known.partition_point(|e| after.is_some_and(|seq| e.seq <= seq));
            Ok(known[new..].to_vec())
        })
    }

    fn commit(&mut self, step: Step) -> BoxFuture<'_, Result<(), Self::Error>> {
        Box::pin(async move {
            let appended = self.commit_step(step).await.map_err(from_app)?;
            self.remember(appended);
            Ok(())
        })
    }

    fn commit_steps(&mut self, steps: Vec<Step>) -> BoxFuture<'_, Result<(), Self::Error>> {
        Box::pin(async move {
            let appended = self.commit_chain(steps).await.map_err(from_app)?;
            self.remember(appended);
            Ok(())
        })
    }

    fn counters(&self) -> Counters {
        Counters {
            steps: self.run.steps,
            tool_calls: self.run.tool_calls,
        }
    }

    fn phase(&self) -> Option<Phase> {
        self.run.status.phase()
    }

    /// A step that changes the run's status stores a `state` event after its own.
    fn added_events(&self, from: Option<Phase>, step: &Step) -> usize {
        usize::from(step.phase.is_some_and(|to| from != Some(to)))
    }

    fn holder(&self) -> Option<String> {
        self.run.lease_owner.clone()
    }

    /// Every third of the lease, so a slow model or tool does not let another worker
    /// take the run. A child run holds no lease (its parent's is kept while it works).
    fn keep_alive_every(&self) -> Option<Duration> {
        self.run
            .lease_owner
            .as_ref()
            .map(|_| crate::lease::keep_alive_every())
    }

    fn keep_alive(&mut self) -> BoxFuture<'_, Result<(), Self::Error>> {
        Box::pin(async move {
            let now = self.clock.now_ms();
            runs::renew_lease(self.db, self.run, now)
                .await
                .map_err(from_app)
        })
    }
}
