//! Sub-agents: child runs with their own context window and tool subset, on budgets
//! drawn from their parent's, joined by the parent.
//!
//! A parent opens a [`Shared`] budget with what it has left (tokens, tool calls), gives
//! each child its own [`crate::Run`] (its own tools, inputs, limits) pointing at it, and
//! [`join`]s them: they run concurrently, every token and tool call a child spends is
//! taken from the shared budget, and [`Joined::spent`] is what the parent records
//! (`children_joined`) so its own budgets count it. A required child that does not
//! answer stops the join at "evidence incomplete" (and cancels its siblings before their
//! next model or tool call); an optional one lets it continue with the gap named.
//! Cancelling the shared budget (a customer withdrew) stops every child before its next
//! call; a call already under way finishes and is recorded. Whatever a child already
//! did outside is for the caller to verify, never assumed undone.
//!
//! Children's logs are ordinary [`EventLog`]s: a child that answered before a crash
//! answers again from its log when joined again, without asking its model.

use serde_json::{json, Value};

pub use crate::budget::Shared;
use crate::log::{Counters, EventLog, Kind, NewEvent, RunLog, Step};
use crate::model::Answer;
use crate::run::{run_loop, Outcome, Run};

/// One child to join: its name (in the parent's record), whether the parent needs it,
/// its run and its log.
pub struct Child<'a, A: Send + 'static, L> {
    pub name: &'a str,
    pub required: bool,
    pub run: Run<'a, A>,
    pub log: L,
}

/// How one child ended.
#[derive(Debug, Clone)]
pub struct ChildEnd<A> {
    pub name: String,
    pub required: bool,
    pub outcome: Outcome<A>,
    pub counters: Counters,
    pub tokens: u64,
    /// The child's log as it ended, folded: what its parent is briefed from when the
    /// log itself is not kept (an in-memory replay).
    pub log: RunLog<A>,
}

/// What the join comes to.
#[derive(Debug, Clone, PartialEq)]
pub enum JoinOutcome {
    /// Every child answered.
    Complete,
    /// Every required child answered; these optional ones did not (named, with why).
    Partial { gaps: Vec<String> },
    /// A required child did not answer: the parent cannot go on.
    EvidenceIncomplete { missing: String, reason: String },
}

#[derive(Debug, Clone)]
pub struct Joined<A> {
    pub children: Vec<ChildEnd<A>>,
    pub outcome: JoinOutcome,
}

impl<A> Joined<A> {
    /// Tokens and tool calls the children spent, for the parent's budgets.
    pub fn spent(&self) -> (u64, i64) {
        self.children.iter().fold((0, 0), |(t, c), child| {
            (t + child.tokens, c + child.counters.tool_calls)
        })
    }

    /// The answer of the named child, if it answered.
    pub fn answer(&self, name: &str) -> Option<&A> {
        self.children
            .iter()
            .find(|c| c.name == name)
            .and_then(|c| match &c.outcome {
                Outcome::Answered(a) => Some(a),
                _ => None,
            })
    }

    /// The step the parent commits after the join: the event below, and the children's
    /// tool calls added to its own count.
    pub fn step(&self) -> Step {
        let mut step = Step::events(vec![self.event()]);
        step.add_tool_calls = self.spent().1;
        step
    }

    /// The event the parent records: what each child came to and what it spent. Folded
    /// into the parent's token count ([`crate::RunLog`] reads `tokens`).
    pub fn event(&self) -> NewEvent {
        let children: Vec<Value> = self
            .children
            .iter()
            .map(|c| {
                json!({ "name": c.name, "required": c.required, "ended": ended_word(&c.outcome),
                        "steps": c.counters.steps, "tool_calls": c.counters.tool_calls, "tokens": c.tokens })
            })
            .collect();
        let (tokens, tool_calls) = self.spent();
        let outcome = match &self.outcome {
            JoinOutcome::Complete => json!({ "complete": true }),
            JoinOutcome::Partial { gaps } => json!({ "complete": false, "gaps": gaps }),
            JoinOutcome::EvidenceIncomplete { missing, reason } => {
                json!({ "complete": false, "evidence_incomplete": missing, "reason": reason })
            }
        };
        let payload = json!({ "children": children, "tokens": tokens, "tool_calls": tool_calls, "outcome": outcome });
        NewEvent::of(Kind::ChildrenJoined, None, payload)
    }
}

fn ended_word<A>(outcome: &Outcome<A>) -> &'static str {
    match outcome {
        Outcome::Answered(_) => "answered",
        Outcome::HandedOff { .. } => "handed_off",
        Outcome::Cancelled => "cancelled",
    }
}

fn why_not<A>(outcome: &Outcome<A>) -> Option<String> {
    match outcome {
        Outcome::Answered(_) => None,
        Outcome::HandedOff { reason, .. } => Some(reason.clone()),
        Outcome::Cancelled => Some("cancelled".into()),
    }
}

/// Runs the children concurrently on `shared` and joins them. A child's log error stops
/// the join with that error (the children's logs keep what they committed; joining again
/// resumes them).
pub async fn join<A: Answer, L: EventLog>(
    children: Vec<Child<'_, A, L>>,
    shared: &Shared,
) -> Result<Joined<A>, L::Error> {
    let runs = children.into_iter().map(|mut child| async move {
        let ended = run_loop(&child.run, &mut child.log).await;
        if ended
            .as_ref()
            .is_ok_and(|e| child.required && why_not(&e.outcome).is_some())
        {
            // The parent cannot use the others without this one: stop spending on them.
            shared.cancel();
        }
        ended.map(|e| ChildEnd {
            name: child.name.to_string(),
            required: child.required,
            tokens: e.log.tokens,
            counters: e.counters,
            outcome: e.outcome,
            log: e.log,
        })
    });
    let ends = futures_util::future::join_all(runs).await;
    let children = ends.into_iter().collect::<Result<Vec<_>, _>>()?;
    Ok(Joined {
        outcome: join_outcome(&children),
        children,
    })
}

fn join_outcome<A>(children: &[ChildEnd<A>]) -> JoinOutcome {
    let missing = children
        .iter()
        .filter(|c| c.required)
        .find_map(|c| why_not(&c.outcome).map(|why| (c.name.clone(), why)));
    if let Some((missing, reason)) = missing {
        return JoinOutcome::EvidenceIncomplete { missing, reason };
    }
    let gaps: Vec<String> = children
        .iter()
        .filter_map(|c| why_not(&c.outcome).map(|why| format!("{}: {why}", c.name)))
        .collect();
    if gaps.is_empty() {
        JoinOutcome::Complete
    } else {
        JoinOutcome::Partial { gaps }
    }
}
