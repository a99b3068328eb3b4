//! The worker's seam for work done on behalf of crates above the desk: a [`Chore`] says
//! what to do at three fixed points of every pass, the worker (`worker::run_once`) says
//! when. Whoever starts the worker registers them on `Services` (`app`: the customer
//! data's lifecycle — the adoption after a restore, the restored intents looked up, the
//! retention job, docs/spec/data.md). The desk calls no crate above it.
//!
//! Deliberately not here: the order of the pass itself (`worker`), and any chore's
//! own schedule (a chore due once per period claims its period itself).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use crate::error::DomainResult;
use crate::refunds::Sender;

/// What a chore's step returns: a boxed future, so the chores are one list of trait
/// objects.
pub type ChoreStep<'a, T> = Pin<Box<dyn Future<Output = DomainResult<T>> + Send + 'a>>;

/// Work a pass does at fixed points for a crate above the desk. Each point defaults to
/// nothing.
pub trait Chore: Send + Sync {
    /// First in the pass, before any run is advanced or refund sent: whether the pass
    /// may go on. `false` ends the pass having done nothing (a restore waiting for its
    /// adoption at the provider).
    fn may_work<'a>(&'a self, _sender: Sender<'a>) -> ChoreStep<'a, bool> {
        Box::pin(async { Ok(true) })
    }

    /// After the runs are advanced and stale approvals expired, before the approved
    /// refunds due are executed. Returns the items handled.
    fn before_sending<'a>(&'a self, _sender: Sender<'a>) -> ChoreStep<'a, usize> {
        Box::pin(async { Ok(0) })
    }

    /// Last in the pass, after the outbox is sent; `now` is the pass's clock reading.
    fn after_pass<'a>(&'a self, _sender: Sender<'a>, _now: i64) -> ChoreStep<'a, ()> {
        Box::pin(async { Ok(()) })
    }
}

/// The chores registered on a process's state, in the order registered.
#[derive(Clone, Default)]
pub struct Chores(Arc<Vec<Arc<dyn Chore>>>);

impl Chores {
    /// These chores and `chore` after them.
    pub fn with(&self, chore: impl Chore + 'static) -> Chores {
        let mut all = self.0.as_ref().clone();
        all.push(Arc::new(chore));
        Chores(Arc::new(all))
    }

    pub fn iter(&self) -> impl Iterator<Item = &dyn Chore> {
        self.0.iter().map(|c| c.as_ref())
    }
}
