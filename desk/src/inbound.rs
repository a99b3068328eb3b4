//! What people write in, from every channel that receives (mail today: the watched
//! mailbox and `POST /api/v1/inbound/email`): the messages a channel held back taken in by
//! each worker pass, and each channel's watcher run by `serve`. Above the workflow, because
//! a message opens or joins a ticket; what a channel delivers is `channels`', below it.

use crate::channels::Reach;
use crate::error::DomainResult;
use crate::mail::intake::Intake;
use crate::runs::Queue;
use crate::stop::StopSignal;

/// The channels that receive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Receiver {
    /// The support mailbox and the inbound-mail route (docs/spec/email.md).
    Mail,
}

pub const RECEIVERS: &[Receiver] = &[Receiver::Mail];

fn mail_intake<'a>(reach: &Reach<'a>, queue: Queue<'a>) -> Intake<'a> {
    Intake {
        db: reach.db,
        clock: reach.clock,
        queue,
        settings: &reach.channels.mail,
    }
}

/// Each channel takes in what it held back (mail over its sender's limit, or confirmed by
/// its sender since); returns how many it took in.
pub async fn take_in(reach: &Reach<'_>, queue: Queue<'_>) -> DomainResult<usize> {
    let mut taken = 0;
    for receiver in RECEIVERS {
        taken += match receiver {
            Receiver::Mail => crate::mail::inbound::process_held(mail_intake(reach, queue)).await?,
        };
    }
    Ok(taken)
}

/// Each channel's watcher (mail: the mailbox at `IMAP_URL`, when set) until `stop`.
pub async fn watch(reach: Reach<'_>, queue: Queue<'_>, stop: &StopSignal) {
    let watchers = RECEIVERS.iter().map(|receiver| async move {
        match receiver {
            Receiver::Mail => {
                if let Some(target) = &reach.channels.mail.imap {
                    let intake = mail_intake(&reach, queue);
                    crate::mail::imap_watch::watch_until_stopped(intake, target, stop.requested())
                        .await
                }
            }
        }
    });
    futures_util::future::join_all(watchers).await;
}
