//! The console's case page: the proposal, the policy decision with its rules and
//! citations, the billing facts, the fingerprint a reviewer approves or rejects, taking
//! an escalated case over, and shadow mode's hand decision: the one view, and how a form
//! answers by re-rendering it (`after_action`, `after_form`). The forms themselves stand
//! above it, one file a concern: `case_conversation` (reply, note, close, assign, a
//! bounced address cleared), `case_decide` (approve, reject, hand up, take over),
//! `case_shadow` (the hand decision), `case_replies`, `case_translate`.
//!
//! Long because the view is one template's data, assembled from the case, its run, its
//! decision and its facts in one place; its tests sit below it.

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;

use crate::error::{status_of, AppError};
use crate::state::AppState;
use desk::auth::{self, Session};
use desk::cases::{self, CaseStatus};
use desk::error::DomainError;
use desk::refunds::{PastRefund, RefundView};
use desk::tickets::TicketLine;
use desk::views::CaseView;
use desk::world::serde_plain;

use super::common::{error_page, render, with_status, Nav, SignedIn};

pub(super) struct RuleView {
    citation: String,
    link: String,
    summary: String,
}

pub(super) struct RefundLineView {
    charge_id: String,
    amount: String,
    payment_method: String,
}

pub(super) struct DecisionView {
    outcome: String,
    reason_code: String,
    approver: String,
    refunds: Vec<RefundLineView>,
    rules: Vec<RuleView>,
    facts: Vec<String>,
    versions: String,
    hash: String,
}

#[derive(Template)]
#[template(path = "console_case.html")]
pub(super) struct CasePage {
    nav: Nav,
    staff_role: String,
    csrf: String,
    case: CaseView,
    decision: Option<DecisionView>,
    proposal: Option<desk::agent::Proposal>,
    refunds: Vec<RefundView>,
    awaiting: bool,
    shadow_pending: bool,
    /// (order, charge, amount, captured, status, disputed, refunded, created) from the facts.
    billing: Vec<BillingRow>,
    reasons: Vec<String>,
    may_take_over: bool,
    may_approve: bool,
    required_role: String,
    fingerprint: String,
    error: Option<String>,
    /// The stuck-run watchdog's diagnosis, while its flag stands.
    stuck: Option<String>,
    /// The reply clock in words, and whether it is overdue (SLA).
    reply: Option<(String, bool)>,
    /// The customer's messages and the internal notes, in time order.
    thread: Vec<ThreadEntry>,
    status_label: &'static str,
    /// A supervisor may close this case now (not at rest, no refund in flight).
    may_close: bool,
    /// A supervisor or admin may assign the case to somebody else.
    may_assign_others: bool,
    /// Whom a supervisor may give the case to (empty for others: they take it).
    assignable: Vec<String>,
    /// What the action just done did, after its redirect (`?done=…`).
    notice: Option<&'static str>,
    /// The page refreshes itself (static/live.js) until the case is at rest.
    live: bool,
    /// The case's history in plain words, oldest first.
    timeline: Vec<(String, String, String)>,
    /// (case id, ticket id, status in words) of the customer's other open cases on the
    /// same order: a second refund case about one charge is visible at once.
    same_order: Vec<(String, String, &'static str)>,
    /// (case id, ticket id) of the tickets joined into this case.
    joined: Vec<(String, String)>,
    /// The customer's other tickets and past refunds, newest first.
    other_tickets: Collapsed<TicketLine>,
    past_refunds: Collapsed<PastRefund>,
    /// Saved replies for the reply form, and the messages a decision sends.
    tools: super::case_replies::ReplyTools,
    /// The queue tab the reviewer came from: "& next" and `j`/`k` move in it.
    tab: String,
    /// (previous, next, where "next" goes at the tab's end) in that tab.
    previous_case: Option<String>,
    next_case: Option<String>,
    then_case: Option<String>,
    /// A refused form: which one (`write`, `decide`, `close`), why, in words next to its
    /// button, and what was typed, kept.
    refusal: Refusal,
}

/// What a refused console form is answered with on the case page (errors
/// inline, what was typed kept).
#[derive(Default)]
pub(super) struct Refusal {
    pub form: &'static str,
    pub message: Option<String>,
    pub kept: super::case_replies::Kept,
}

/// How many lines of each of the customer's lists the header shows open; the rest wait
/// behind a "more", so the header stays short on a phone.
const HEADER_LINES: usize = 5;

/// A list of the case header, cut: the newest [`HEADER_LINES`] shown, the rest of those
/// read behind a "more", and how many exist beyond what was read.
pub(super) struct Collapsed<T> {
    first: Vec<T>,
    rest: Vec<T>,
    total: i64,
    unlisted: i64,
}

fn collapsed<T>(mut lines: Vec<T>, total: i64) -> Collapsed<T> {
    let unlisted = (total - lines.len() as i64).max(0);
    let rest = lines.split_off(lines.len().min(HEADER_LINES));
    Collapsed {
        first: lines,
        rest,
        total,
        unlisted,
    }
}

/// One entry of the case's thread on the console: a message of the customer's
/// conversation, or an internal note (marked, never shown to the customer).
pub(super) struct ThreadEntry {
    author: String,
    /// Who wrote it, in words: a staff member by name, else the author.
    label: String,
    at: String,
    body: String,
    pub(super) internal: bool,
    /// `web` or `email` (each message's channel).
    channel: String,
    /// A mail's quoted thread and signature, shown collapsed.
    quoted: Option<String>,
    /// (id, file name, size in bytes) of what the mail attached: download links.
    attachments: Vec<(String, String, i64)>,
    /// The language a customer's message is written in, when its words say (staff may
    /// not read it: docs/spec/interfaces.md, "Pages").
    pub(super) language: Option<&'static str>,
    /// The message's place in its ticket (0 for a note).
    pub(super) seq: i64,
    /// The assistant's translation into the console's language, when asked for.
    pub(super) translation: Option<String>,
    /// Whether the "Translate" button is offered (`attach_translations`).
    pub(super) translatable: bool,
}

/// Who wrote a message, in the console's words: the AI is "the assistant", never "agent"
/// (the human role's name).
fn label_of(author: &str) -> &str {
    match author {
        "agent" => "assistant",
        other => other,
    }
}

fn thread_entries(thread: desk::views::CaseThread) -> Vec<ThreadEntry> {
    let attachments = thread.attachments;
    let messages = thread.messages.into_iter().map(|m| ThreadEntry {
        attachments: attachments
            .iter()
            .filter(|a| a.message_seq == m.seq)
            .map(|a| (a.id.clone(), a.filename.clone(), a.size))
            .collect(),
        language: (m.author == "customer")
            .then(|| desk::replies::written_in(&m.body, &m.body, None))
            .flatten()
            .map(desk::replies::Language::as_str),
        seq: m.seq,
        translation: None,
        translatable: false,
        label: m
            .staff_name
            .unwrap_or_else(|| label_of(&m.author).to_string()),
        author: m.author,
        at: m.at,
        body: m.body,
        internal: false,
        channel: m.channel,
        quoted: m.quoted,
    });
    let notes = thread.notes.into_iter().map(|n| ThreadEntry {
        label: n.author.clone(),
        author: n.author,
        at: n.at,
        body: n.body,
        internal: true,
        channel: "web".into(),
        quoted: None,
        attachments: Vec::new(),
        language: None,
        seq: 0,
        translation: None,
        translatable: false,
    });
    let mut entries: Vec<ThreadEntry> = messages.chain(notes).collect();
    // By time, not by text: RFC 3339 drops trailing zeros of the fraction, so
    // `…54.9Z` sorts after `…54.959Z` as text. The sort is stable: entries
    // of one instant keep their order, messages before notes.
    entries.sort_by_key(|e| instant_of(&e.at));
    entries
}

/// The instant an RFC 3339 time names, in nanoseconds; text that is none sorts first.
fn instant_of(at: &str) -> i128 {
    time::OffsetDateTime::parse(at, &time::format_description::well_known::Rfc3339)
        .map_or(i128::MIN, time::OffsetDateTime::unix_timestamp_nanos)
}

/// The words shown at the top of the case page after an action's redirect.
fn notice_of(done: Option<&str>) -> Option<&'static str> {
    match done? {
        "reply" => Some("Reply sent to the customer."),
        "note" => Some("Internal note added (staff only)."),
        "closed" => Some("Case closed."),
        "assigned" => Some("Case assigned."),
        "translated" => Some("Translated by the assistant, beside the original."),
        "mail_cleared" => Some("Mail goes to the customer's address again."),
        "handed_up" => Some("Handed up: it waits in the supervisors' queue."),
        "approved" => Some("Approved. The refund goes to the provider."),
        "rejected" => Some("Rejected; the customer has your message."),
        "approved_next" => Some("Approved the last case; here is the next one."),
        "rejected_next" => Some("Rejected the last case; here is the next one."),
        _ => None,
    }
}

pub(super) async fn case_page_response(
    state: &AppState,
    session: &Session,
    id: &str,
    error: Option<String>,
) -> Response {
    let refusal = Refusal {
        message: error,
        ..Refusal::default()
    };
    case_page_with(state, session, id, Shown::refused(refusal)).await
}

/// What the case page shows beside the case itself.
#[derive(Default)]
pub(super) struct Shown<'a> {
    /// After an action's redirect.
    pub notice: Option<&'static str>,
    /// The saved reply chosen, and the form it goes into (`reply`, `reject`, `close`).
    pub saved: Option<&'a str>,
    pub into: Option<&'a str>,
    /// The queue tab the reviewer works in.
    pub tab: Option<&'a str>,
    pub refusal: Refusal,
}

impl Shown<'_> {
    pub(super) fn refused(refusal: Refusal) -> Self {
        Shown {
            refusal,
            ..Shown::default()
        }
    }
}

/// The case page, with what `shown` adds.
pub(super) async fn case_page_with(
    state: &AppState,
    session: &Session,
    id: &str,
    shown: Shown<'_>,
) -> Response {
    let case = match cases::load_case(&state.db, id).await {
        Ok(Some(c)) => c,
        Ok(None) => return error_page(StatusCode::NOT_FOUND, "No such case."),
        Err(e) => return AppError::from(e).into_response(),
    };
    let tab = shown
        .tab
        .filter(|t| super::queue::known_filter(t))
        .unwrap_or(DEFAULT_TAB)
        .to_string();
    let neighbours = match super::queue::neighbours(state, session, &tab, &case).await {
        Ok(n) => n,
        Err(e) => return e.into_response(),
    };
    match read_page(state, session, case, shown).await {
        Ok(mut page) => {
            (page.previous_case, page.next_case, page.then_case) = neighbours;
            page.tab = tab;
            render(&page)
        }
        Err(e) => AppError::from(e).into_response(),
    }
}

/// The queue's default view, where a case page opened from elsewhere moves on in.
const DEFAULT_TAB: &str = "needs_person";

/// Everything the case page shows of `case`.
async fn read_page(
    state: &AppState,
    session: &Session,
    case: cases::Case,
    shown: Shown<'_>,
) -> desk::error::DomainResult<CasePage> {
    let (notice, error) = (shown.notice, shown.refusal.message.clone());
    let mut view = desk::views::case_view(&state.db, &case).await?;
    view.customer_email_undeliverable = desk::views::email_undeliverable(&state.db, &view).await?;
    view.person_requested = cases::person_awaited_now(&state.db, &case).await?;
    let history = desk::views::customer_history(&state.db, &case).await?;
    let mut thread = thread_entries(desk::views::thread(&state.db, &case).await?);
    attach_translations(state, &case.ticket_id, &mut thread).await?;
    let around = around(&state.db, &case).await?;
    let reply = reply_clock(state, &case).await?;
    let chosen = super::case_replies::Chosen {
        saved: shown.saved,
        into: shown.into,
    };
    let tools = super::case_replies::reply_tools(state, &case, chosen, &shown.refusal.kept).await?;
    let decision = case.decision().map(|d| decision_view(&d));
    let proposal = case
        .proposal
        .as_deref()
        .and_then(|p| serde_json::from_str(p).ok());
    let shadow_pending = desk::shadow_pairs::pending(&state.db, &case.id)
        .await
        .unwrap_or(true);
    let required = case
        .required_role
        .unwrap_or(policy_engine::Role::Supervisor);
    let may_approve = session.staff.role.may_approve(required);
    let required_role = required.as_str().to_string();
    let supervisor = session.staff.role >= auth::StaffRole::Supervisor;
    Ok(CasePage {
        tools,
        timeline: around.timeline,
        same_order: around.same_order,
        joined: around.joined,
        other_tickets: collapsed(history.tickets, history.tickets_total),
        past_refunds: collapsed(history.refunds, history.refunds_total),
        thread,
        status_label: case.status.label(),
        // docs/spec/roles.md: anyone who works cases closes one that moves no money; a
        // case awaiting a refund only someone who could approve it.
        may_close: !case.status.is_at_rest()
            && !case.status.has_refund_in_flight()
            && (case.status != CaseStatus::AwaitingApproval || may_approve),
        may_assign_others: supervisor,
        assignable: match supervisor {
            true => auth::assignable_staff(&state.db)
                .await?
                .into_iter()
                .map(|s| s.email)
                .collect(),
            false => Vec::new(),
        },
        notice,
        live: !case.status.is_at_rest(),
        nav: Nav::of(session, "/console"),
        staff_role: session.staff.role.as_str().into(),
        csrf: session.csrf_token.clone(),
        refunds: view.refunds.clone(),
        awaiting: case.status == CaseStatus::AwaitingApproval,
        shadow_pending,
        billing: billing_rows(case.facts.as_deref()),
        reasons: policy_engine::ReasonCode::ALL
            .iter()
            .map(|r| r.as_str().to_string())
            .collect(),
        may_take_over: case.status == CaseStatus::Escalated
            && !shadow_pending
            && session.staff.role >= auth::StaffRole::Supervisor,
        fingerprint: case.fingerprint.clone().unwrap_or_default(),
        case: view,
        decision,
        proposal,
        may_approve,
        required_role,
        error,
        stuck: around.stuck,
        reply,
        tab: String::new(),
        previous_case: None,
        next_case: None,
        then_case: None,
        refusal: shown.refusal,
    })
}

/// The case's reply clock in words and whether it is overdue, while one runs.
async fn reply_clock(
    state: &AppState,
    case: &cases::Case,
) -> desk::error::DomainResult<Option<(String, bool)>> {
    let lines = desk::views::case_lines(&state.db, std::slice::from_ref(case)).await?;
    let now = state.clock.now_ms();
    Ok(lines.first().and_then(|line| line.waiting).map(|waiting| {
        let clock = cases::sla::ReplyClock::of(case, waiting, state.reply_targets);
        (clock.words(now), clock.is_breached(now))
    }))
}

/// The decision block of the case page.
fn decision_view(d: &policy_engine::Decision) -> DecisionView {
    DecisionView {
        outcome: serde_plain(&d.outcome),
        reason_code: serde_plain(&d.reason_code),
        approver: d
            .approver_role
            .map(|r| serde_plain(&r))
            .unwrap_or_else(|| "—".into()),
        refunds: d
            .refunds
            .iter()
            .map(|r| RefundLineView {
                charge_id: r.charge_id.clone(),
                amount: r.amount.to_string(),
                payment_method: r.payment_method.clone(),
            })
            .collect(),
        rules: d
            .rules
            .iter()
            .map(|r| RuleView {
                citation: r.citation.clone(),
                link: super::policy::citation_link(&r.citation),
                summary: r.summary.clone(),
            })
            .collect(),
        facts: d.facts_used.clone(),
        versions: d.policy_versions.join(", "),
        hash: d.hash.clone(),
    }
}

/// What the case page shows around the case: a watchdog flag, the timeline, the other
/// open cases on its order and the tickets joined into it.
struct Around {
    stuck: Option<String>,
    timeline: Vec<(String, String, String)>,
    same_order: Vec<(String, String, &'static str)>,
    joined: Vec<(String, String)>,
}

async fn around(db: &store::Db, case: &cases::Case) -> desk::error::DomainResult<Around> {
    let stuck = desk::watchdog::open_flag_of_case(db, &case.id)
        .await?
        .map(|f| f.summary);
    let mut timeline = desk::audit::case_timeline(db, &case.id).await?;
    // In reverse: the sends of one approval each go right after it, so the first
    // intent's ends up first.
    for intent in desk::refunds::intents(db, &case.id).await?.iter().rev() {
        if let Some(at) = intent.first_submitted_at {
            insert_send(&mut timeline, at, intent);
        }
    }
    let timeline = timeline
        .into_iter()
        .map(|e| (desk::clock::rfc3339(e.at), e.who, e.what))
        .collect();
    let same_order = cases::other_open_cases_on_order(db, case)
        .await?
        .into_iter()
        .map(|c| {
            (
                c.id.into_string(),
                c.ticket_id.into_string(),
                c.status.label(),
            )
        })
        .collect();
    let joined = cases::joined_cases(db, &case.id)
        .await?
        .into_iter()
        .map(|c| (c.id.into_string(), c.ticket_id.into_string()))
        .collect();
    Ok(Around {
        stuck,
        timeline,
        same_order,
        joined,
    })
}

/// The moment a refund went to the provider, read from its intent (the send
/// writes no audit line: the payment boundary stays one statement). It goes after the
/// last approval made by then — a send follows its approval, and the log's lines of one
/// millisecond would otherwise hide which came first — else by time.
fn insert_send(
    timeline: &mut Vec<desk::audit::TimelineEntry>,
    at: i64,
    intent: &desk::refunds::Intent,
) {
    let entry = desk::audit::TimelineEntry {
        at,
        who: "system".to_string(),
        action: "refund_sent".to_string(),
        what: format!(
            "Sent the refund of {} on {} to the provider",
            intent.amount, intent.charge_id
        ),
    };
    let after_approval = timeline
        .iter()
        .rposition(|e| e.action == "approved" && e.at <= at)
        .map(|i| i + 1);
    let by_time = timeline.partition_point(|e| e.at <= at);
    timeline.insert(after_approval.unwrap_or(by_time), entry);
}

#[derive(Deserialize)]
pub(super) struct CasePageQuery {
    #[serde(default)]
    done: Option<String>,
    /// A saved reply to put into the reply form.
    #[serde(default)]
    saved: Option<String>,
    /// The form the saved reply goes into: `reply` (the default), `reject` or `close`.
    #[serde(default)]
    into: Option<String>,
    /// The queue tab the reviewer works in.
    #[serde(default)]
    tab: Option<String>,
}

pub(super) async fn case_page(
    State(state): State<AppState>,
    SignedIn(session): SignedIn,
    Path(id): Path<String>,
    Query(query): Query<CasePageQuery>,
) -> Response {
    let shown = Shown {
        notice: notice_of(query.done.as_deref()),
        saved: query.saved.as_deref(),
        into: query.into.as_deref(),
        tab: query.tab.as_deref(),
        refusal: Refusal::default(),
    };
    case_page_with(&state, &session, &id, shown).await
}

/// After a console action (post/redirect/get): on success the browser is sent to the
/// case page (a GET, so a reload repeats nothing and never meets a POST-only URL), with
/// `done` naming what happened; on failure the page is shown with the error, under the
/// failure's status.
pub(super) async fn after_action<T>(
    state: &AppState,
    session: &Session,
    id: &str,
    result: Result<T, DomainError>,
    done: &str,
) -> Response {
    let refused = |_: &DomainError| Refusal::default();
    after_form(state, session, id, result, done, refused).await
}

/// As [`after_action`], for a form whose refusal is shown next to it with what was
/// typed kept: `refusal` says which form and what it held.
pub(super) async fn after_form<T>(
    state: &AppState,
    session: &Session,
    id: &str,
    result: Result<T, DomainError>,
    done: &str,
    refusal: impl FnOnce(&DomainError) -> Refusal,
) -> Response {
    match result {
        Ok(_) => Redirect::to(&format!("/console/cases/{id}?done={done}")).into_response(),
        Err(e) => {
            let mut refused = refusal(&e);
            refused.message = Some(e.public_message());
            let page = case_page_with(state, session, id, Shown::refused(refused)).await;
            with_status(status_of(&e), page)
        }
    }
}

pub(super) type BillingRow = (String, String, String, bool, String, bool, String, String);

/// The charges in a case's facts, for reviewers (records, not conclusions).
fn billing_rows(facts: Option<&str>) -> Vec<BillingRow> {
    let Some(facts) = facts.and_then(|f| serde_json::from_str::<policy_engine::Facts>(f).ok())
    else {
        return vec![];
    };
    let mut rows = Vec::new();
    for order in &facts.orders {
        for c in &order.charges {
            rows.push((
                format!(
                    "{} ({}, {})",
                    order.id,
                    order.product.as_str(),
                    order.amount
                ),
                c.id.clone(),
                c.amount.to_string(),
                c.captured,
                serde_plain(&c.status),
                c.disputed,
                c.amount_refunded.to_string(),
                c.created_at.to_string(),
            ));
        }
    }
    rows
}

/// Marks the thread's customer messages: their stored translation, else whether the
/// button is offered (a model is configured and the message is in another language).
async fn attach_translations(
    state: &AppState,
    ticket_id: &str,
    entries: &mut [ThreadEntry],
) -> desk::error::DomainResult<()> {
    let stored =
        desk::translations::stored(&state.db, ticket_id, desk::translations::STAFF_LANGUAGE)
            .await?;
    let configured = state.model.sub_agent_server().is_some();
    for entry in entries.iter_mut().filter(|e| !e.internal) {
        let language = entry.language.map(desk::replies::Language::from_stored);
        if !desk::translations::offered(language) {
            continue;
        }
        entry.translation = stored
            .iter()
            .find(|t| t.seq == entry.seq)
            .map(|t| t.text.clone());
        entry.translatable = configured && entry.translation.is_none();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note(at: &str, body: &str) -> desk::cases::NoteView {
        desk::cases::NoteView {
            id: body.into(),
            author: "lead@shop.example".into(),
            body: body.into(),
            at: at.into(),
        }
    }

    #[test]
    fn the_thread_sorts_by_time_not_by_text() {
        let thread = desk::views::CaseThread {
            case_id: "case_1".into(),
            messages: vec![],
            notes: vec![
                note("2026-12-01T18:32:54.959Z", "second"),
                note("2026-12-01T18:32:55Z", "third"),
                note("2026-12-01T18:32:54.9Z", "first"),
            ],
            attachments: vec![],
        };
        let order: Vec<String> = thread_entries(thread).into_iter().map(|e| e.body).collect();
        assert_eq!(order, ["first", "second", "third"]);
    }
}
