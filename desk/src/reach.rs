//! What the worker does with the channels, and `serve` beside it: each pass delivers what
//! the changes before it wrote (mail: the outbox sent over `SMTP_URL`) and takes in what a
//! channel held back (mail over its sender's limit, or confirmed by its sender since); each
//! channel that people write in through is watched (mail: the mailbox at `IMAP_URL`).
//! Above the workflow, because a message taken in opens or joins a ticket; what to tell
//! whom, and each channel's settings, are `channels`', below it (ARCHITECTURE.md, "Adding
//! a channel").

use crate::channels::{Channel, Channels, CHANNELS};
use crate::clock::Clock;
use crate::error::DomainResult;
use crate::mail::intake::Intake;
use crate::mail::send::Postman;
use crate::runs::Queue;
use crate::stop::StopSignal;
use store::Db;

/// What a worker pass lends the channels: the store, the clock, where a message that
/// opens a ticket queues its run, this process's name for the leases on what it delivers,
/// and the channels' settings.
#[derive(Clone, Copy)]
pub struct Reach<'a> {
    pub db: &'a Db,
    pub clock: &'a dyn Clock,
    pub queue: Queue<'a>,
    pub instance_id: &'a str,
    pub channels: &'a Channels,
}

impl<'a> Reach<'a> {
    /// Where customer mail is taken in.
    pub fn mail_intake(&self) -> Intake<'a> {
        Intake {
            db: self.db,
            clock: self.clock,
            queue: self.queue,
            settings: &self.channels.mail,
        }
    }

    /// The mail outbox's sender.
    pub fn postman(&self) -> Postman<'a> {
        Postman {
            db: self.db,
            clock: self.clock,
            settings: &self.channels.mail,
            instance_id: self.instance_id,
        }
    }
}

/// Each channel delivers what the changes before it wrote (one whose setting is unset
/// leaves it waiting); returns how many deliveries were attempted or ended.
pub async fn deliver(reach: &Reach<'_>) -> DomainResult<usize> {
    let mut handled = 0;
    for channel in CHANNELS {
        handled += match channel {
            Channel::Mail => crate::mail::send::run_once(reach.postman())
                .await?
                .handled(),
        };
    }
    Ok(handled)
}

/// Each channel takes in what it held back; returns how many it took in.
pub async fn take_in(reach: &Reach<'_>) -> DomainResult<usize> {
    let mut taken = 0;
    for channel in CHANNELS {
        taken += match channel {
            Channel::Mail => crate::mail::inbound::process_held(reach.mail_intake()).await?,
        };
    }
    Ok(taken)
}

/// Each channel's watcher (mail: the mailbox at `IMAP_URL`, when set) until `stop`.
pub async fn watch(reach: Reach<'_>, stop: &StopSignal) {
    let watchers = CHANNELS.iter().map(|channel| async move {
        match channel {
            Channel::Mail => {
                if let Some(target) = &reach.channels.mail.imap {
                    let intake = reach.mail_intake();
                    crate::mail::imap_watch::watch_until_stopped(intake, target, stop.requested())
                        .await
                }
            }
        }
    });
    futures_util::future::join_all(watchers).await;
}
