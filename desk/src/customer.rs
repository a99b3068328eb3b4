//! What a customer does with a ticket — opens it, writes to it, withdraws it — and what
//! they are shown of it.
//!
//! A customer sees only their own tickets; an unknown id and someone else's id get the
//! same 404, so ids cannot be probed. A new customer message on a case waiting for a
//! decision voids its proposal and sends it back to investigation (docs/spec/invariants.md #2).
//!
//! One file because every customer action here (open, write, withdraw, ask for a person)
//! answers with the same `TicketView` and passes the same rate limits; split, the view's
//! assembly would serve callers in other files.

use domain::ids::{CustomerId, OrderId, TicketId};
use serde::{Deserialize, Serialize};
use sqlx::any::AnyRow;
use sqlx::Row;

use crate::auth::Principal;
use crate::cases::{self, CaseStatus};
use crate::clock::rfc3339;
use crate::clock::Clock;
use crate::error::{DomainError, DomainResult, ErrorCode};
use crate::mailbox::attachments::AttachmentLine;
use crate::refunds;
use crate::replies::{self, detect_language, Language, WithdrawalReply};
use crate::runs::Queue;
use crate::tickets::{
    append_message, customer_region, load_ticket, validate_message, MessageView, Ticket,
};
use store::{new_id, packed_field, Db, Packed};

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

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct TicketView {
    pub id: String,
    pub customer_id: String,
    pub order_id: Option<String>,
    pub language: Language,
    pub created_at: String,
    /// The first line of the first message, shortened: what the ticket is about.
    pub subject: String,
    pub messages: Vec<CustomerMessageView>,
    pub case: Option<CustomerCaseView>,
}

/// A message on the customer's side, with its author named in the ticket's language.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct CustomerMessageView {
    #[serde(flatten)]
    pub message: MessageView,
    /// The author in the ticket's language; a staff member's message names the person
    /// by their display name when they have one (issue 38).
    pub author_label: String,
    /// What the customer wrote now (issue 34, `structure::split`): their new words, pasted
    /// records and everything else of theirs; the whole body for our own messages.
    pub new_text: String,
    /// The quoted earlier thread, forwarded mail and signature of a customer's message,
    /// which the page folds away; `None` when there is none.
    pub earlier: Option<String>,
}

impl CustomerMessageView {
    fn new(message: MessageView, lang: Language) -> Self {
        let (new_text, earlier) = if message.author == "customer" {
            split_for_page(&message.body)
        } else {
            (message.body.clone(), None)
        };
        CustomerMessageView {
            author_label: match (&message.staff_name, message.author.as_str()) {
                (Some(name), "staff") => name.clone(),
                _ => replies::page_text(lang).author(&message.author).to_string(),
            },
            new_text,
            earlier,
            message,
        }
    }
}

/// A customer's message as the ticket page shows it: what they wrote now, and what they
/// quoted, forwarded or signed, apart. Nothing is dropped: the two together hold every
/// block of the message.
fn split_for_page(body: &str) -> (String, Option<String>) {
    if let Some(split) = PageSplits::lock().get(body) {
        return split.clone();
    }
    let split = split_now(body);
    PageSplits::lock().keep(body, &split);
    split
}

/// The page's splits of customer messages, by text: a message never changes once
/// written, and its page is read again every few seconds while it is open
/// (`ticket.js`), so each text is split once (issue 35: splitting was two thirds of the
/// ticket page's own time). Bounded by [`SPLITS_BYTES`] of text: all are forgotten when
/// it is full, and when a customer's data is erased or redacted ([`forget_page_splits`]).
#[derive(Default)]
struct PageSplits {
    splits: std::collections::HashMap<String, (String, Option<String>)>,
    bytes: usize,
}

/// At most this much text (messages and their splits) is remembered.
const SPLITS_BYTES: usize = 1 << 20;

static PAGE_SPLITS: std::sync::LazyLock<std::sync::Mutex<PageSplits>> =
    std::sync::LazyLock::new(Default::default);

impl PageSplits {
    fn lock() -> std::sync::MutexGuard<'static, PageSplits> {
        PAGE_SPLITS
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn get(&self, body: &str) -> Option<&(String, Option<String>)> {
        self.splits.get(body)
    }

    fn keep(&mut self, body: &str, split: &(String, Option<String>)) {
        let bytes = body.len() + split.0.len() + split.1.as_ref().map_or(0, String::len);
        if self.bytes + bytes > SPLITS_BYTES {
            *self = PageSplits::default();
        }
        if bytes <= SPLITS_BYTES {
            self.bytes += bytes;
            self.splits.insert(body.to_string(), split.clone());
        }
    }
}

/// Forgets every remembered split: an erasure or a redaction leaves no customer's words
/// in this process's memory either.
pub fn forget_page_splits() {
    *PageSplits::lock() = PageSplits::default();
}

fn split_now(body: &str) -> (String, Option<String>) {
    use domain::structure::{split, Place};
    let parts = split(body);
    let folded = [Place::Quoted, Place::Forwarded, Place::Signature];
    let shown: Vec<Place> = Place::ALL
        .into_iter()
        .filter(|p| !folded.contains(p))
        .collect();
    let new_text = parts.text_of(&shown);
    let earlier = parts.text_of(&folded);
    if new_text.trim().is_empty() || earlier.trim().is_empty() {
        return (body.to_string(), None);
    }
    (new_text, Some(earlier))
}

/// What a customer may know about their case: status and refunds, nothing internal.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct CustomerCaseView {
    pub id: String,
    pub status: String,
    pub status_text: String,
    pub refunds: Vec<CustomerRefundLine>,
    /// Whether a withdrawal can still happen (nothing reached the provider).
    pub may_withdraw: bool,
    /// Whether to offer "talk to a person": the agent answered the customer itself
    /// (issue 17; since issue 38 it never repeats itself, so there is no repeat to wait for).
    pub may_ask_for_person: bool,
    /// Whether the case waits for us, and in which team's queue (issue 38: the page says
    /// when we usually answer). Not sent: which team decides is internal (RP-005).
    #[serde(skip)]
    pub waits_in: Option<crate::cases::TeamQueue>,
    /// "We usually answer within 4 hours", from the target of the queue the case waits
    /// in (issue 38); `null` when the next word is the customer's or the case is done.
    /// Filled by [`TicketView::with_reply_time`], where the settings are known.
    pub reply_time_text: Option<String>,
}

impl TicketView {
    /// The view with its expected reply time, from the team queues' targets.
    pub fn with_reply_time(mut self, targets: crate::cases::ReplyTargets) -> TicketView {
        let lang = self.language;
        if let Some(case) = self.case.as_mut() {
            case.reply_time_text = case
                .waits_in
                .map(|queue| replies::reply_time_text(lang, targets.of(queue)));
        }
        self
    }
}

/// A refund on the customer's side, with its status in the ticket's language.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct CustomerRefundLine {
    #[serde(flatten)]
    pub refund: replies::CustomerRefundView,
    pub status_text: &'static str,
    /// The amount as the ticket's language writes it (issue 38: ¥19,800, 1.234,56 €).
    pub amount_text: String,
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

/// Where a customer's words came from (issue 37: one conversation, whichever way).
#[derive(Debug, Clone, Copy)]
pub enum Origin<'a> {
    /// The ticket page or the API.
    Web,
    /// A mail: recorded with the message in its transaction, so it is taken once.
    Email(&'a EmailIn<'a>),
    /// A file the customer attached on the ticket page (issue 38, `customer_files`): kept
    /// with the message that names it, in its transaction.
    Upload(&'a crate::mailbox::attachments::Attachment),
}

/// What a customer's mail brings besides its new words.
#[derive(Debug)]
pub struct EmailIn<'a> {
    /// The quoted thread and the signature, kept for staff (shown collapsed).
    pub quoted: Option<&'a str>,
    /// Attachments already within the limits (`mail::inbound`).
    pub attachments: &'a [crate::mailbox::attachments::Attachment],
    /// The mail's record; its outcome and ticket are filled in here.
    pub taken: crate::mailbox::inbound::Taken<'a>,
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
            crate::mailbox::attachments::store(tx, ticket_id, seq, name, kind, &file.bytes, now)
                .await?;
            return Ok(());
        }
        Origin::Email(mail) => mail,
    };
    let seq = crate::tickets::append_email_message(tx, ticket_id, text, mail.quoted, now).await?;
    for a in mail.attachments {
        let (name, kind) = (&a.filename, &a.content_type);
        crate::mailbox::attachments::store(tx, ticket_id, seq, name, kind, &a.bytes, now).await?;
    }
    let recorded = match mail.held_id {
        Some(id) => {
            let held = crate::mailbox::inbound::InboundStatus::Held;
            let ticket = Some(ticket_id);
            crate::mailbox::inbound::finish(tx, id, held, outcome, None, ticket, now).await?
        }
        None => {
            let mut taken = mail.taken.clone();
            taken.outcome = Some(outcome);
            taken.ticket_id = Some(ticket_id);
            crate::mailbox::inbound::record(tx, &taken).await?.is_some()
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
        language: detect_language(&message, region),
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
    // Issue 37: "we received your request", by mail, whichever way it came.
    let received = crate::mailbox::MailKind::Received;
    crate::mailbox::outbox::to_customer(&mut tx, received, &ticket.id, "", now).await?;
    let case_id = cases::open_case(&mut tx, queue.versions, &ticket, now).await?;
    // Issue 21: the mode in force when the case opened is stored with it.
    crate::rollout::modes::assign_case(&mut tx, &case_id, &subject, queue.rollout_default, now)
        .await?;
    tx.commit().await?;
    tracing::info!(ticket_id = %ticket.id, customer_id, "ticket opened");
    queue.wake.notify_one();
    Ok(ticket)
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

/// What the customer side reads of a ticket's case: its id, status and reason — not the
/// facts, decision and proposal documents a full case row carries (issue 19: copying
/// those kilobytes on every page view was a measurable share of the ticket page).
struct CaseGlance {
    id: String,
    status: CaseStatus,
    reason_code: Option<String>,
    required_role: Option<policy_engine::Role>,
}

/// The one row a ticket view is read from (issue 19: the view was three reads, and
/// each read — and each row of one — is a hand-off to the store's connection thread or
/// server, which cost more than the reading): the ticket and its case, its messages
/// (`said`: seq, created_at, author, body, by `seq`) and the case's refunds that are not
/// void (`refunds`: amount in minor units, currency, status, by charge), each list
/// packed into one column (`store::packed_field`). `$more` adds columns to the same row
/// (the ticket page's attachments and CSAT answer). `$who` narrows the ticket, so a
/// customer's read of someone else's ticket reads nothing, as for an unknown id (RP-007).
macro_rules! ticket_view_sql {
    ($more:expr, $who:literal) => {
        concat!(
            "SELECT t.customer_id, t.order_id, t.language, t.created_at, ",
            "c.id AS case_id, c.status AS case_status, c.reason_code AS case_reason, c.required_role AS case_role, ",
            "(SELECT string_agg(",
            packed_field!("m.seq"),
            " || ",
            packed_field!("m.created_at"),
            " || ",
            packed_field!("m.author"),
            " || ",
            packed_field!("m.body"),
            " || ",
            packed_field!("COALESCE(m.channel, 'web')"),
            " || ",
            packed_field!("COALESCE(s.display_name, '')"),
            ", '' ORDER BY m.seq) FROM messages m LEFT JOIN staff s ON s.id = m.staff_id ",
            "WHERE m.ticket_id = t.id) AS said, ",
            "(SELECT string_agg(",
            packed_field!("r.amount_minor"),
            " || ",
            packed_field!("r.currency"),
            " || ",
            packed_field!("r.status"),
            ", '' ORDER BY r.charge_id) FROM refund_intents r ",
            "WHERE r.case_id = c.id AND r.status <> 'void') AS refunds",
            $more,
            " FROM tickets t LEFT JOIN cases c ON c.ticket_id = t.id WHERE t.id = $1",
            $who
        )
    };
}

/// A ticket view as its customer reads it (`$2`: the customer).
const CUSTOMER_TICKET_VIEW: &str = ticket_view_sql!("", " AND t.customer_id = $2");
/// A ticket view as staff read it (any ticket).
const ANY_TICKET_VIEW: &str = ticket_view_sql!("", "");

/// The ticket page's two more columns: the ticket's attachments (`files`: id, message
/// seq, file name, content type, size, in the order `attachments::of_ticket` gives) and
/// whether the customer answered the CSAT question (`csat_answers`).
macro_rules! page_columns {
    () => {
        concat!(
            ", (SELECT string_agg(",
            packed_field!("a.id"),
            " || ",
            packed_field!("a.message_seq"),
            " || ",
            packed_field!("a.filename"),
            " || ",
            packed_field!("a.content_type"),
            " || ",
            packed_field!("a.size"),
            ", '' ORDER BY a.message_seq, a.created_at, a.id) FROM mail_attachments a ",
            "WHERE a.ticket_id = t.id) AS files, ",
            "(SELECT COUNT(*) FROM csat_answers q WHERE q.ticket_id = t.id) AS csat_answers"
        )
    };
}

/// The ticket page's read: the customer's view and the page's columns.
const CUSTOMER_TICKET_PAGE: &str = ticket_view_sql!(page_columns!(), " AND t.customer_id = $2");
/// The same, as staff read it.
const ANY_TICKET_PAGE: &str = ticket_view_sql!(page_columns!(), "");

/// What the ticket page shows: the view, the ticket's attachments and whether its
/// customer has answered the CSAT question — one row, as the view alone is (each read
/// is a hand-off to the store's connection; the page made three).
pub struct TicketPageRead {
    pub view: TicketView,
    pub files: Vec<AttachmentLine>,
    pub csat_answered: bool,
}

/// The ticket `ticket_id` as `principal` may see it on the ticket page, in one read.
pub async fn visible_ticket_page(
    db: &Db,
    principal: &Principal,
    ticket_id: &str,
) -> DomainResult<TicketPageRead> {
    let query = match principal {
        Principal::Staff(_) => sqlx::query(ANY_TICKET_PAGE).bind(ticket_id),
        Principal::Customer { customer_id } => sqlx::query(CUSTOMER_TICKET_PAGE)
            .bind(ticket_id)
            .bind(customer_id.as_str()),
        Principal::Service(_) => return Err(DomainError::NotFound("ticket")),
    };
    let row = query
        .fetch_optional(db.reader())
        .await?
        .ok_or(DomainError::NotFound("ticket"))?;
    let stored: Option<String> = row.try_get("files")?;
    let mut packed = Packed::new(stored.as_deref().unwrap_or(""));
    let mut files = Vec::new();
    while !packed.is_empty() {
        let id = packed.field()?.to_string();
        let message_seq = packed.integer()?;
        let (filename, content_type) = (packed.field()?, packed.field()?);
        files.push(AttachmentLine {
            id,
            message_seq,
            filename: filename.to_string(),
            content_type: content_type.to_string(),
            size: packed.integer()?,
        });
    }
    Ok(TicketPageRead {
        view: view_of_row(ticket_id, &row)?,
        files,
        csat_answered: row.try_get::<i64, _>("csat_answers")? > 0,
    })
}

/// The ticket `ticket_id` as `principal` may see it (see [`visible_ticket`]), in one
/// read: the ticket page and `GET /api/v1/tickets/{id}`.
pub async fn visible_ticket_view(
    db: &Db,
    principal: &Principal,
    ticket_id: &str,
) -> DomainResult<TicketView> {
    let customer = match principal {
        Principal::Staff(_) => None,
        Principal::Customer { customer_id } => Some(customer_id.as_str()),
        Principal::Service(_) => return Err(DomainError::NotFound("ticket")),
    };
    // Same answer for an unknown id and someone else's (RP-007).
    read_view(db, ticket_id, customer)
        .await?
        .ok_or(DomainError::NotFound("ticket"))
}

/// A ticket's view as it stands now (after the customer changed it), in one read.
pub async fn ticket_view(db: &Db, ticket: &Ticket) -> DomainResult<TicketView> {
    read_view(db, &ticket.id, None)
        .await?
        .ok_or(DomainError::NotFound("ticket"))
}

/// One read of a ticket's view; with `customer`, only if it is that customer's.
async fn read_view(
    db: &Db,
    ticket_id: &str,
    customer: Option<&str>,
) -> DomainResult<Option<TicketView>> {
    let query = match customer {
        None => sqlx::query(ANY_TICKET_VIEW).bind(ticket_id),
        Some(customer_id) => sqlx::query(CUSTOMER_TICKET_VIEW)
            .bind(ticket_id)
            .bind(customer_id),
    };
    match query.fetch_optional(db.reader()).await? {
        Some(row) => Ok(Some(view_of_row(ticket_id, &row)?)),
        None => Ok(None),
    }
}

/// The view from the row of [`ticket_view_sql`].
fn view_of_row(ticket_id: &str, row: &AnyRow) -> DomainResult<TicketView> {
    let ticket = Ticket {
        id: TicketId::parse(ticket_id)?,
        customer_id: crate::columns::stored_id(row, "customer_id", CustomerId::parse)?,
        order_id: crate::columns::stored_opt_id(row, "order_id", OrderId::parse)?,
        language: Language::from_stored(&row.try_get::<String, _>("language")?),
        created_at: row.try_get("created_at")?,
    };
    let case = match row.try_get::<Option<String>, _>("case_id")? {
        Some(id) => Some(CaseGlance {
            id,
            status: CaseStatus::parse(&row.try_get::<String, _>("case_status")?)?,
            reason_code: row.try_get("case_reason")?,
            required_role: crate::columns::stored_name(row, "case_role")?,
        }),
        None => None,
    };
    let said: Option<String> = row.try_get("said")?;
    let mut packed = Packed::new(said.as_deref().unwrap_or(""));
    let mut messages = Vec::new();
    while !packed.is_empty() {
        let (seq, created_at) = (packed.integer()?, packed.integer()?);
        let (author, body) = (packed.field()?, packed.field()?);
        let channel = packed.field()?;
        // Issue 38: the display name only, never a staff email, on a customer surface.
        let staff_name = packed.field()?;
        messages.push(MessageView {
            seq,
            author: author.to_string(),
            body: body.to_string(),
            at: rfc3339(created_at),
            channel: channel.to_string(),
            quoted: None,
            staff_name: (!staff_name.is_empty()).then(|| staff_name.to_string()),
        });
    }
    let stored: Option<String> = row.try_get("refunds")?;
    let mut packed = Packed::new(stored.as_deref().unwrap_or(""));
    let mut refunds = Vec::new();
    while !packed.is_empty() {
        let amount_minor = packed.integer()?;
        let (currency, status) = (packed.field()?, packed.field()?);
        refunds.push(refunds::customer_refund(amount_minor, currency, status)?);
    }
    Ok(assemble(ticket, messages, case, refunds))
}

/// What the customer is shown, from what was read: the status in RP-005's words, each
/// author and refund in the ticket's language, and which actions are still open.
fn assemble(
    ticket: Ticket,
    said: Vec<MessageView>,
    case: Option<CaseGlance>,
    refunds: Vec<replies::CustomerRefundView>,
) -> TicketView {
    let lang = ticket.language;
    let case = case.map(|c| {
        let status = crate::replies::customer_status(c.status, c.reason_code.as_deref());
        CustomerCaseView {
            status_text: replies::status_text(lang, status, &refunds),
            // Issue 38: a declined ticket offers no withdrawal: there is nothing left to
            // withdraw from the customer's side.
            may_withdraw: c.status.may_be_withdrawn()
                && !matches!(c.status, CaseStatus::Denied | CaseStatus::Rejected),
            waits_in: waits_in(c.status, c.required_role),
            reply_time_text: None,
            // Issue 38: the agent never repeats itself (a repeat hands the case over at
            // once), so a person is offered wherever the agent answered on its own.
            may_ask_for_person: c.status.may_go_to_a_person(),
            id: c.id,
            status: status.as_str().to_string(),
            refunds: refunds
                .into_iter()
                .map(|refund| CustomerRefundLine {
                    status_text: replies::refund_status_text(lang, &refund.status),
                    amount_text: replies::money_text(lang, &refund.amount, &refund.currency),
                    refund,
                })
                .collect(),
        }
    });
    TicketView {
        subject: crate::tickets::subject_of(said.first().map_or("", |m| m.body.as_str())),
        messages: said
            .into_iter()
            .map(|message| CustomerMessageView::new(message, lang))
            .collect(),
        id: ticket.id.into_string(),
        customer_id: ticket.customer_id.into_string(),
        order_id: ticket.order_id.map(OrderId::into_string),
        language: lang,
        created_at: rfc3339(ticket.created_at),
        case,
    }
}

/// The team whose answer a case waits for: its team queue, or the agents' while the
/// case is new or being investigated (a first answer); `None` when the next word is the
/// customer's or the case is at its end.
fn waits_in(
    status: CaseStatus,
    required_role: Option<policy_engine::Role>,
) -> Option<crate::cases::TeamQueue> {
    match status {
        CaseStatus::Open | CaseStatus::Investigating => Some(crate::cases::TeamQueue::Agents),
        _ => crate::cases::team_queue_of(status, required_role),
    }
}

/// The customer asks for a person (issue 17): a case the agent answered itself goes to
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
    let kind = crate::mailbox::MailKind::Reply;
    crate::mailbox::outbox::to_customer(&mut tx, kind, &ticket.id, &reply, now).await?;
    let why = "the customer asked to talk to a person";
    crate::mailbox::outbox::to_supervisors(&mut tx, &case.id, why, now).await?;
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
        // A ticket joined into the open case on its order (issue 17): the message goes on
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
        // Issue 38: asked for a person in so many words, they get one at once.
        if domain::structure::asks_for_a_person(&text) && case.status.may_go_to_a_person() {
            hand_to_a_person(&mut tx, &case, ticket, now).await?;
        } else if cases::take_customer_message(&mut tx, queue.versions, &case, why, now).await? {
            // Issue 37: the customer hears that their words reopened the case.
            let kind = crate::mailbox::MailKind::Reopened;
            crate::mailbox::outbox::to_customer(&mut tx, kind, &case.ticket_id, "", now).await?;
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
            let kind = crate::mailbox::MailKind::Closed;
            crate::mailbox::outbox::to_customer(&mut tx, kind, &ticket.id, &text, now).await?;
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

pub async fn customer_tickets(db: &Db, customer_id: &str) -> DomainResult<Vec<TicketView>> {
    let rows = sqlx::query(
        "SELECT id FROM tickets WHERE customer_id = $1 ORDER BY created_at DESC LIMIT 50",
    )
    .bind(customer_id)
    .fetch_all(db.reader())
    .await?;
    let mut views = Vec::new();
    for r in rows {
        let id: String = r.try_get("id")?;
        views.extend(read_view(db, &id, Some(customer_id)).await?);
    }
    Ok(views)
}

/// Messages (tickets included) one customer may send per minute.
pub const MAX_MESSAGES_PER_MINUTE: i64 = 10;

/// Tickets one customer may open per hour.
pub const MAX_TICKETS_PER_HOUR: i64 = 5;

#[cfg(test)]
mod tests {
    use super::*;

    /// A remembered split is the split itself, however many texts came between, and
    /// forgetting leaves no text behind.
    #[test]
    fn the_page_remembers_each_split_as_it_was_made_and_forgets_on_demand() {
        let quoted = "Still waiting.\n\nOn Mon, 1 Dec 2026, Support wrote:\n> We are looking into it\n> Thanks";
        let bodies = [
            quoted.to_string(),
            "I was charged twice for O-1001".to_string(),
            format!("{}\n-- \nAnn", "x".repeat(SPLITS_BYTES / 3)),
        ];
        for round in 0..3 {
            for body in &bodies {
                assert_eq!(split_for_page(body), split_now(body), "round {round}");
            }
        }
        assert!(split_now(quoted).1.is_some(), "{:?}", split_now(quoted));
        let huge = "y".repeat(SPLITS_BYTES + 1);
        assert_eq!(split_for_page(&huge), split_now(&huge));
        assert!(PageSplits::lock().get(&huge).is_none());
        forget_page_splits();
        assert!(PageSplits::lock().get(quoted).is_none());
    }
}
