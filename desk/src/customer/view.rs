//! What a customer is shown of a ticket (`TicketView`): the ticket, its messages — a
//! customer's split into their new words and what they quoted, forwarded or signed —
//! the case's status and refunds in the ticket's language, read in one row
//! (`ticket_view_sql`). The ticket page reads its attachments and CSAT answer in the same
//! row (`visible_ticket_page`).

use domain::ids::{CustomerId, OrderId, TicketId};
use serde::Serialize;
use sqlx::any::AnyRow;
use sqlx::Row;

use crate::auth::Principal;
use crate::cases::CaseStatus;
use crate::clock::rfc3339;
use crate::error::{DomainError, DomainResult};
use crate::refunds;
use crate::replies::{self, Language};
use crate::tickets::{MessageView, Ticket};
use mailbox::attachments::AttachmentLine;
use store::{packed_field, Db, Packed};

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct TicketView {
    pub id: String,
    pub customer_id: String,
    pub order_id: Option<String>,
    #[schema(value_type = crate::schema::Language)]
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
    /// by their display name when they have one.
    pub author_label: String,
    /// What the customer wrote now (`structure::split`): their new words, pasted
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
/// (`ticket.js`), so each text is split once (splitting was two thirds of the
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
    /// (it never repeats itself, so there is no repeat to wait for).
    pub may_ask_for_person: bool,
    /// Whether the case waits for us, and in which team's queue (the page says
    /// when we usually answer). Not sent: which team decides is internal (RP-005).
    #[serde(skip)]
    pub waits_in: Option<crate::cases::TeamQueue>,
    /// "We usually answer within 4 hours", from the target of the queue the case waits
    /// in; `null` when the next word is the customer's or the case is done.
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
    #[schema(value_type = crate::schema::CustomerRefundView)]
    pub refund: replies::CustomerRefundView,
    pub status_text: &'static str,
    /// The amount as the ticket's language writes it (¥19,800, 1.234,56 €).
    pub amount_text: String,
}

/// What the customer side reads of a ticket's case: its id, status and reason — not the
/// facts, decision and proposal documents a full case row carries (copying
/// those kilobytes on every page view was a measurable share of the ticket page).
struct CaseGlance {
    id: String,
    status: CaseStatus,
    reason_code: Option<String>,
    required_role: Option<policy_engine::Role>,
}

/// The one row a ticket view is read from (the view was three reads, and
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
    let page = [CUSTOMER_TICKET_PAGE, ANY_TICKET_PAGE];
    let row = read_row(db, page, ticket_id, narrowed_to(principal)?)
        .await?
        .ok_or(DomainError::NotFound("ticket"))?;
    Ok(TicketPageRead {
        view: view_of_row(ticket_id, &row)?,
        files: files_of_row(&row)?,
        csat_answered: row.try_get::<i64, _>("csat_answers")? > 0,
    })
}

/// The ticket `ticket_id` as `principal` may see it (see [`super::visible_ticket`]), in one
/// read: `GET /api/v1/tickets/{id}`.
pub async fn visible_ticket_view(
    db: &Db,
    principal: &Principal,
    ticket_id: &str,
) -> DomainResult<TicketView> {
    read_view(db, ticket_id, narrowed_to(principal)?)
        .await?
        .ok_or(DomainError::NotFound("ticket"))
}

/// A ticket's view as it stands now (after the customer changed it), in one read.
pub async fn ticket_view(db: &Db, ticket: &Ticket) -> DomainResult<TicketView> {
    read_view(db, &ticket.id, None)
        .await?
        .ok_or(DomainError::NotFound("ticket"))
}

/// The customer whose tickets `principal` may read (`None`: staff, any ticket). A
/// service reads none; an unknown id and someone else's get the same answer (RP-007).
fn narrowed_to(principal: &Principal) -> DomainResult<Option<&str>> {
    match principal {
        Principal::Staff(_) => Ok(None),
        Principal::Customer { customer_id } => Ok(Some(customer_id.as_str())),
        Principal::Service(_) => Err(DomainError::NotFound("ticket")),
    }
}

/// One read of a ticket's view; with `customer`, only if it is that customer's.
async fn read_view(
    db: &Db,
    ticket_id: &str,
    customer: Option<&str>,
) -> DomainResult<Option<TicketView>> {
    let view = [CUSTOMER_TICKET_VIEW, ANY_TICKET_VIEW];
    match read_row(db, view, ticket_id, customer).await? {
        Some(row) => Ok(Some(view_of_row(ticket_id, &row)?)),
        None => Ok(None),
    }
}

/// The row of one of `[customer's, any]` (a [`ticket_view_sql`] pair) for `ticket_id`;
/// with `customer`, only if the ticket is theirs.
async fn read_row(
    db: &Db,
    [customers, any]: [&'static str; 2],
    ticket_id: &str,
    customer: Option<&str>,
) -> DomainResult<Option<AnyRow>> {
    let query = match customer {
        None => sqlx::query(any).bind(ticket_id),
        Some(customer_id) => sqlx::query(customers).bind(ticket_id).bind(customer_id),
    };
    Ok(query.fetch_optional(db.reader()).await?)
}

/// The attachments of a [`page_columns`] row, in `attachments::of_ticket`'s order.
fn files_of_row(row: &AnyRow) -> DomainResult<Vec<AttachmentLine>> {
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
    Ok(files)
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
        // The display name only, never a staff email, on a customer surface.
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
            // A declined ticket offers no withdrawal: there is nothing left to
            // withdraw from the customer's side.
            may_withdraw: c.status.may_be_withdrawn()
                && !matches!(c.status, CaseStatus::Denied | CaseStatus::Rejected),
            waits_in: waits_in(
                c.status,
                c.required_role,
                c.reason_code.as_deref().and_then(|r| r.parse().ok()),
            ),
            reply_time_text: None,
            // The agent never repeats itself (a repeat hands the case over at
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
    reason: Option<policy_engine::ReasonCode>,
) -> Option<crate::cases::TeamQueue> {
    match status {
        CaseStatus::Open | CaseStatus::Investigating => Some(crate::cases::TeamQueue::Agents),
        _ => crate::cases::team_queue_of(status, required_role, reason),
    }
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
