//! What a customer does with a ticket — opens it, writes to it, withdraws it — and what
//! they are shown of it.
//!
//! A customer sees only their own tickets; an unknown id and someone else's id get the
//! same 404, so ids cannot be probed. A new customer message on a case waiting for a
//! decision voids its proposal and sends it back to investigation (docs/spec/invariants.md #2).
//!
//! The actions are here; what the customer is shown, and how it is read, is `view`.

use domain::ids::{CustomerId, OrderId, TicketId};
use serde::{Deserialize, Serialize};
use sqlx::Row;

use crate::auth::Principal;
use crate::cases::{self, CaseStatus};
use crate::clock::Clock;
use crate::error::{DomainError, DomainResult, ErrorCode};
use crate::refunds;
use crate::replies::{self, detect_language, WithdrawalReply};
use crate::runs::Queue;
use crate::tickets::{append_message, customer_region, load_ticket, validate_message, Ticket};
use store::{new_id, Db};

mod view;
pub use view::{
    customer_tickets, forget_page_splits, ticket_view, visible_ticket_page, visible_ticket_view,
    CustomerCaseView, CustomerMessageView, CustomerRefundLine, TicketPageRead, TicketView,
};

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewTicket {
    pub message: String,
    #[serde(default)]
    pub order_id: Option<String>,
}

#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewMessage {
    pub text: String,
}

/// Refuses a customer who is flooding us (429), counting across all their tickets.
async fn check_rate(
    db: &Db,
    clock: &dyn Clock,
    customer_id: &str,
    new_ticket: bool,
) -> DomainResult<()> {
    let now = clock.now_ms();
    let messages = sqlx::query(
        "SELECT COUNT(*) AS n FROM messages m JOIN tickets t ON t.id = m.ticket_id
         WHERE t.customer_id = $1 AND m.author = 'customer' AND m.created_at > $2",
    )
    .bind(customer_id)
    .bind(now - 60_000)
    .fetch_one(db.pool())
    .await?;
    if messages.try_get::<i64, _>("n")? >= MAX_MESSAGES_PER_MINUTE {
        return Err(DomainError::TooManyRequests);
    }
    if new_ticket {
        let tickets = sqlx::query(
            "SELECT COUNT(*) AS n FROM tickets WHERE customer_id = $1 AND created_at > $2",
        )
        .bind(customer_id)
        .bind(now - 3_600_000)
        .fetch_one(db.pool())
        .await?;
        if tickets.try_get::<i64, _>("n")? >= MAX_TICKETS_PER_HOUR {
            return Err(DomainError::TooManyRequests);
        }
    }
    Ok(())
}

/// Where a customer's words came from (one conversation, whichever way).
#[derive(Debug, Clone, Copy)]
pub enum Origin<'a> {
    /// The ticket page or the API.
    Web,
    /// A mail: recorded with the message in its transaction, so it is taken once.
    Email(&'a EmailIn<'a>),
    /// A file the customer attached on the ticket page (`customer_files`): kept
    /// with the message that names it, in its transaction.
    Upload(&'a mailbox::attachments::Attachment),
}

/// What a customer's mail brings besides its new words.
#[derive(Debug)]
pub struct EmailIn<'a> {
    /// The quoted thread and the signature, kept for staff (shown collapsed).
    pub quoted: Option<&'a str>,
    /// Attachments already within the limits (`mail::inbound`).
    pub attachments: &'a [mailbox::attachments::Attachment],
    /// The mail's record; its outcome and ticket are filled in here.
    pub taken: mailbox::inbound::Taken<'a>,
    /// A held mail's record, finished here instead of written anew.
    pub held_id: Option<&'a str>,
}

/// The error of a mail whose Message-ID was taken meanwhile (two deliveries at once):
/// nothing was written.
pub const DUPLICATE_MAIL: crate::error::ErrorCode = crate::error::ErrorCode::DuplicateMail;

/// Writes the customer's message as it came: a page message, or a mail with its quoted
/// part, attachments and record (a duplicate record rolls everything back).
async fn append_customer_words(
    tx: &mut store::Tx<'_>,
    ticket_id: &str,
    text: &str,
    origin: Origin<'_>,
    outcome: &str,
    now: i64,
) -> DomainResult<()> {
    let mail = match origin {
        Origin::Web => {
            append_message(tx, ticket_id, "customer", text, now).await?;
            return Ok(());
        }
        Origin::Upload(file) => {
            let seq = append_message(tx, ticket_id, "customer", text, now).await?;
            let (name, kind) = (&file.filename, &file.content_type);
            mailbox::attachments::store(tx, ticket_id, seq, name, kind, &file.bytes, now).await?;
            return Ok(());
        }
        Origin::Email(mail) => mail,
    };
    let seq = crate::tickets::append_email_message(tx, ticket_id, text, mail.quoted, now).await?;
    for a in mail.attachments {
        let (name, kind) = (&a.filename, &a.content_type);
        mailbox::attachments::store(tx, ticket_id, seq, name, kind, &a.bytes, now).await?;
    }
    let recorded = match mail.held_id {
        Some(id) => {
            let held = mailbox::inbound::InboundStatus::Held;
            let ticket = Some(ticket_id);
            mailbox::inbound::finish(tx, id, held, outcome, None, ticket, now).await?
        }
        None => {
            let mut taken = mail.taken.clone();
            taken.outcome = Some(outcome);
            taken.ticket_id = Some(ticket_id);
            mailbox::inbound::record(tx, &taken).await?.is_some()
        }
    };
    if !recorded {
        return Err(DomainError::conflict(
            DUPLICATE_MAIL,
            "this mail was taken already",
        ));
    }
    Ok(())
}

/// Opens a ticket with its first message, its case and the case's first agent run.
pub async fn create_ticket(
    db: &Db,
    clock: &dyn Clock,
    queue: Queue<'_>,
    customer_id: &str,
    input: NewTicket,
) -> DomainResult<Ticket> {
    open_ticket(db, clock, queue, customer_id, input, Origin::Web).await
}

/// [`create_ticket`] from either channel.
pub async fn open_ticket(
    db: &Db,
    clock: &dyn Clock,
    queue: Queue<'_>,
    customer_id: &str,
    input: NewTicket,
    origin: Origin<'_>,
) -> DomainResult<Ticket> {
    let message = validate_message(&input.message)?;
    check_rate(db, clock, customer_id, true).await?;
    let order_id = match input
        .order_id
        .map(|o| o.trim().to_string())
        .filter(|o| !o.is_empty())
    {
        Some(o) if o.len() > 64 => {
            return Err(DomainError::bad_request(
                ErrorCode::InvalidOrderId,
                "order ids are at most 64 characters",
            ))
        }
        other => other,
    };
    let now = clock.now_ms();
    // Read before the transaction: on SQLite the pool has one writer connection.
    let region = customer_region(db, customer_id).await?;
    let subject =
        crate::rollout::modes::subject_at_opening(db, region, order_id.as_deref()).await?;
    let ticket = Ticket {
        id: TicketId::parse(new_id("tkt"))?,
        customer_id: CustomerId::parse(customer_id)?,
        order_id: order_id
            .map(OrderId::parse)
            .transpose()
            .map_err(|e| DomainError::bad_request(ErrorCode::InvalidOrderId, e.to_string()))?,
        language: detect_language(&message, region, queue.default_language),
        created_at: now,
    };
    let mut tx = db.begin().await?;
    let exists = sqlx::query("SELECT id FROM customers WHERE id = $1")
        .bind(customer_id)
        .fetch_optional(&mut *tx)
        .await?;
    if exists.is_none() {
        return Err(DomainError::Forbidden("unknown customer".into()));
    }
    crate::tickets::insert_ticket(&mut tx, &ticket).await?;
    append_customer_words(&mut tx, &ticket.id, &message, origin, "opened", now).await?;
    let case_id = if waits_for_sender(origin) {
        // docs/spec/email.md: a mail that does not prove its sender opens its ticket, but
        // nothing is investigated until the customer confirms through the mailed link.
        let confirm = crate::channels::Notice::ConfirmSender;
        crate::channels::tell_customer(&mut tx, confirm, &ticket.id, "", now).await?;
        cases::open_case_waiting_for_sender(&mut tx, &ticket, now).await?
    } else {
        // docs/spec/email.md: "we received your request", whichever way it came.
        let received = crate::channels::Notice::Received;
        crate::channels::tell_customer(&mut tx, received, &ticket.id, "", now).await?;
        cases::open_case(&mut tx, queue.versions, &ticket, now).await?
    };
    // The mode in force when the case opened is stored with it.
    crate::rollout::modes::assign_case(&mut tx, &case_id, &subject, queue.rollout_default, now)
        .await?;
    tx.commit().await?;
    tracing::info!(ticket_id = %ticket.id, customer_id, "ticket opened");
    queue.wake.notify_one();
    Ok(ticket)
}

/// Whether the words come in a mail that does not prove its sender (`mail::unverified`).
fn waits_for_sender(origin: Origin<'_>) -> bool {
    matches!(origin, Origin::Email(mail)
        if mail.taken.status == mailbox::inbound::InboundStatus::Unverified)
}

/// Loads a ticket the principal may see: its customer, or any staff member.
pub async fn visible_ticket(
    db: &Db,
    principal: &Principal,
    ticket_id: &str,
) -> DomainResult<Ticket> {
    let ticket = load_ticket(db, ticket_id)
        .await?
        .ok_or(DomainError::NotFound("ticket"))?;
    match principal {
        Principal::Staff(_) => Ok(ticket),
        Principal::Customer { customer_id } if ticket.customer_id == customer_id.as_str() => {
            Ok(ticket)
        }
        // Same answer as an unknown id (RP-007: never confirm another customer's records).
        Principal::Customer { .. } | Principal::Service(_) => Err(DomainError::NotFound("ticket")),
    }
}

/// The customer asks for a person: a case the agent answered itself goes to
/// the staff queue, escalated, with the whole conversation; the customer is told so.
/// Refused, changing nothing, where a person is not the next step (`may_go_to_a_person`).
pub async fn ask_for_person(db: &Db, clock: &dyn Clock, ticket: &Ticket) -> DomainResult<()> {
    let now = clock.now_ms();
    let mut tx = db.begin().await?;
    let case = cases::case_for_ticket_tx(&mut tx, &ticket.id)
        .await?
        .ok_or(DomainError::NotFound("case"))?;
    if !case.status.may_go_to_a_person() {
        return Err(DomainError::conflict(
            ErrorCode::NotWithTheAgent,
            format!(
                "the case is {}: a person already has it or it is done",
                case.status.as_str()
            ),
        ));
    }
    cases::escalate_to_person(
        &mut tx,
        &case,
        "the customer asked to talk to a person",
        now,
    )
    .await?;
    let reply = replies::person_reply(ticket.language);
    append_message(&mut tx, &ticket.id, "agent", &reply, now).await?;
    let kind = crate::channels::Notice::Reply;
    crate::channels::tell_customer(&mut tx, kind, &ticket.id, &reply, now).await?;
    let why = "the customer asked to talk to a person";
    cases::routing::escalated(&mut tx, &case.id, why, now).await?;
    let customer = &ticket.customer_id;
    crate::audit::record(&mut tx, customer, "asked_for_person", &case.id, "", now).await?;
    tx.commit().await?;
    Ok(())
}

/// Records a customer message. A case waiting on a decision built from the old
/// conversation goes back to investigation: its proposal (and any approval bound to its
/// fingerprint) is void.
pub async fn add_customer_message(
    db: &Db,
    clock: &dyn Clock,
    queue: Queue<'_>,
    ticket: &Ticket,
    text: &str,
) -> DomainResult<()> {
    add_message_from(db, clock, queue, ticket, text, Origin::Web).await
}

/// [`add_customer_message`] from either channel.
pub async fn add_message_from(
    db: &Db,
    clock: &dyn Clock,
    queue: Queue<'_>,
    ticket: &Ticket,
    text: &str,
    origin: Origin<'_>,
) -> DomainResult<()> {
    let text = validate_message(text)?;
    check_rate(db, clock, &ticket.customer_id, false).await?;
    let now = clock.now_ms();
    let mut tx = db.begin().await?;
    append_customer_words(&mut tx, &ticket.id, &text, origin, "appended", now).await?;
    if let Some(case) = cases::case_for_ticket_tx(&mut tx, &ticket.id).await? {
        // A ticket joined into the open case on its order: the message goes on
        // to that case's conversation, where the work on the order happens.
        let case = match &case.joined_into {
            Some(into) => {
                let into = cases::load_case_tx(&mut tx, into)
                    .await?
                    .ok_or(DomainError::NotFound("case"))?;
                append_message(&mut tx, &into.ticket_id, "customer", &text, now).await?;
                into
            }
            None => case,
        };
        let why = "new customer message";
        let asks = domain::structure::asks_for_a_person(&text);
        // Asked for a person in so many words, they get one at once (docs/spec/roles.md).
        if asks && case.status.may_go_to_a_person() {
            hand_to_a_person(&mut tx, &case, ticket, now).await?;
        } else {
            let reopened =
                cases::take_customer_message(&mut tx, queue.versions, &case, why, now).await?;
            if asks {
                // A case that keeps its course (a refund awaiting approval) keeps the
                // request too: nobody approves it without a word to the customer first.
                let case = cases::load_case_tx(&mut tx, &case.id)
                    .await?
                    .ok_or(DomainError::NotFound("case"))?;
                cases::mark_person_requested(&mut tx, &case, now).await?;
            }
            if reopened {
                // The customer is told that their words reopened the case.
                let kind = crate::channels::Notice::Reopened;
                crate::channels::tell_customer(&mut tx, kind, &case.ticket_id, "", now).await?;
            }
        }
    }
    tx.commit().await?;
    queue.wake.notify_one();
    Ok(())
}

/// The customer asked for a person in their words: the case goes to the staff queue,
/// escalated, and they are told so (as the page's "talk to a person" does).
async fn hand_to_a_person(
    tx: &mut store::Tx<'_>,
    case: &cases::Case,
    ticket: &Ticket,
    now: i64,
) -> DomainResult<()> {
    let why = "the customer asked for a person in their message";
    cases::escalate_to_person(tx, case, why, now).await?;
    let reply = replies::person_reply(ticket.language);
    append_message(tx, &case.ticket_id, "agent", &reply, now).await?;
    cases::routing::escalated(tx, &case.id, why, now).await?;
    let customer = &ticket.customer_id;
    crate::audit::record(tx, customer, "asked_for_person", &case.id, why, now).await
}

/// What a withdrawal did.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Withdrawal {
    pub withdrawn: bool,
    pub message: String,
    pub ticket: TicketView,
    /// Why nothing was withdrawn, as an error code (`refund_already_submitted`,
    /// `nothing_to_withdraw`): the API answers 409 with it.
    #[serde(skip)]
    pub refused: Option<ErrorCode>,
}

/// The customer withdraws their request. Work that has not reached the provider is
/// cancelled (runs stopped, approvals and unsent intents voided); a refund already
/// submitted cannot be withdrawn, and the customer is told so truthfully (RP-005).
pub async fn withdraw(db: &Db, clock: &dyn Clock, ticket: &Ticket) -> DomainResult<Withdrawal> {
    let now = clock.now_ms();
    let lang = ticket.language;
    // Read everything the reply may need before the transaction: on SQLite the pool
    // has one connection, and the transaction holds it.
    let current = cases::case_for_ticket(db, &ticket.id)
        .await?
        .ok_or(DomainError::NotFound("case"))?;
    let refunds = crate::refunds::customer_refunds(db, &current.id).await?;
    let joined_ticket = match &current.joined_into {
        Some(into) => cases::load_case(db, into).await?.map(|c| c.ticket_id),
        None => None,
    };
    let mut refused = None;
    let mut tx = db.begin().await?;
    let case = cases::case_for_ticket_tx(&mut tx, &ticket.id)
        .await?
        .ok_or(DomainError::NotFound("case"))?;
    let (withdrawn, message) = match case.status {
        CaseStatus::Cancelled => (
            true,
            replies::withdrawal_reply(lang, WithdrawalReply::AlreadyWithdrawn),
        ),
        status if status.may_be_withdrawn() => {
            // A versioned update: if the executor moved an approved case on meanwhile,
            // this fails and nothing is cancelled behind its back.
            cases::transition(&mut tx, &case, CaseStatus::Cancelled, now).await?;
            refunds::void_unsent(&mut tx, &case.id, now).await?;
            cases::void_approvals(&mut tx, &case.id).await?;
            if let Some(run_id) = &case.run_id {
                crate::runs::finish_run(&mut tx, run_id, crate::runs::RunStatus::Cancelled, now)
                    .await?;
            }
            crate::audit::record(
                &mut tx,
                &ticket.customer_id,
                "withdrawn",
                &case.id,
                case.status.as_str(),
                now,
            )
            .await?;
            let text = replies::withdrawal_reply(lang, WithdrawalReply::Withdrawn);
            append_message(&mut tx, &ticket.id, "agent", &text, now).await?;
            let kind = crate::channels::Notice::Closed;
            crate::channels::tell_customer(&mut tx, kind, &ticket.id, &text, now).await?;
            (true, text)
        }
        // At its end with no refund under way: saying "already submitted" would be untrue
        // (RP-005), so the customer is told there is nothing to withdraw.
        CaseStatus::Closed | CaseStatus::Replied | CaseStatus::RefundFailed => {
            refused = Some(ErrorCode::NothingToWithdraw);
            let joined_ticket = joined_ticket.as_deref();
            let outcome = WithdrawalReply::NothingToWithdraw { joined_ticket };
            let text = replies::withdrawal_reply(lang, outcome);
            append_message(&mut tx, &ticket.id, "agent", &text, now).await?;
            (false, text)
        }
        _ => {
            refused = Some(ErrorCode::RefundAlreadySubmitted);
            let status = replies::status_text(lang, case.status, &refunds);
            let text =
                replies::withdrawal_reply(lang, WithdrawalReply::TooLate { status: &status });
            append_message(&mut tx, &ticket.id, "agent", &text, now).await?;
            (false, text)
        }
    };
    tx.commit().await?;
    Ok(Withdrawal {
        withdrawn,
        message,
        ticket: ticket_view(db, ticket).await?,
        refused,
    })
}

/// Messages (tickets included) one customer may send per minute.
pub const MAX_MESSAGES_PER_MINUTE: i64 = 10;

/// Tickets one customer may open per hour.
pub const MAX_TICKETS_PER_HOUR: i64 = 5;
