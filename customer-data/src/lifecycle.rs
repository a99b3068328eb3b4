//! What every worker pass does of the customer's data (docs/spec/data.md), at the points
//! of the pass the desk's `chores` seam names: after a restore nothing is worked on until
//! the provider's refunds since the backup are adopted (`may_work`); the intents the
//! backup had not seen final are looked up at the provider before anything is sent
//! (`before_sending`); text past its retention window is redacted, once per period,
//! last (`after_pass`).
//!
//! Deliberately not here: when a pass runs (`desk::worker`), and the jobs themselves
//! (`adoption`, `restore`, `retention`).

use desk::chores::{Chore, ChoreStep};
use desk::refunds::Sender;
use desk::state::Services;

use crate::{adoption, restore, retention};

/// The customer data's chores, with the retention windows of the state it serves.
#[derive(Debug, Clone, Copy)]
pub struct Lifecycle {
    pub retention: retention::Windows,
}

impl Lifecycle {
    /// `state` with these chores registered for its worker passes (`serve`, the
    /// commands that run the worker, the tests' app).
    pub fn register(state: Services) -> Services {
        let lifecycle = Lifecycle {
            retention: state.retention,
        };
        state.with_chore(lifecycle)
    }
}

impl Chore for Lifecycle {
    fn may_work<'a>(&'a self, sender: Sender<'a>) -> ChoreStep<'a, bool> {
        Box::pin(async move {
            if adoption::pending(sender.db).await?.is_none() {
                return Ok(true);
            }
            // Each pass tries until the provider answers.
            if let Err(e) = adoption::adopt_after_restore(sender).await {
                tracing::warn!(error = %e, "a restore waits for its adoption at the provider: nothing is executed");
                return Ok(false);
            }
            Ok(true)
        })
    }

    fn before_sending<'a>(&'a self, sender: Sender<'a>) -> ChoreStep<'a, usize> {
        Box::pin(restore::check_restored(sender))
    }

    fn after_pass<'a>(&'a self, sender: Sender<'a>, now: i64) -> ChoreStep<'a, ()> {
        Box::pin(async move {
            retention::run_if_due(sender.db, self.retention, now).await?;
            Ok(())
        })
    }
}
