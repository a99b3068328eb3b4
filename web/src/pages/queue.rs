//! The console's queue: cases by status, oldest first, in tabs with their counts; and
//! a case's neighbours in a tab ("approve & next", `j`/`k` on the case page).

use askama::Template;
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use crate::error::AppError;
use crate::state::AppState;
use desk::auth::Session;
use desk::cases::sla::ReplyClock;
use desk::cases::{self, CaseStatus};

use super::common::{render, Nav, SignedIn};
use crate::links::query_string;

pub(super) struct QueueRow {
    id: String,
    status: String,
    /// The status in words (`CaseStatus::label`).
    status_label: &'static str,
    customer: String,
    subject: String,
    /// The language the customer is answered in.
    language: String,
    assignee: Option<String>,
    amount: String,
    reason: String,
    required_role: String,
    may_approve: bool,
    age: String,
    /// The reply clock in words, and whether it is overdue (SLA badges).
    reply: Option<(String, bool)>,
    /// The stuck-run watchdog's diagnosis, while its flag stands.
    stuck: Option<String>,
    /// The customer asked for a person and waits for one (their request is among the
    /// messages the reply clock counts from).
    person_requested: bool,
}

#[derive(Template)]
#[template(path = "console_queue.html")]
pub(super) struct QueuePage {
    nav: Nav,
    rows: Vec<QueueRow>,
    /// The filter's choices: (value, words).
    statuses: Vec<(String, String)>,
    filter: String,
    search: String,
    mine: bool,
    /// The order: `oldest`, `newest` or `due` (the most urgent reply first).
    sort: &'static str,
    /// The tabs: (filter value, words, how many cases it holds).
    tabs: Vec<(&'static str, &'static str, i64)>,
    /// The link to the next page, when there is one.
    next: Option<String>,
    /// Bulk actions: the form's CSRF token, whom a supervisor may assign to
    /// (empty for others: they take cases themselves), and what the last one did.
    csrf: String,
    assignable: Vec<String>,
    notice: Option<String>,
    /// The saved replies a bulk close may send: (name, the languages it has), each
    /// customer getting the version in their language.
    saved: Vec<(String, String)>,
}

#[derive(Deserialize)]
pub(super) struct QueueQuery {
    status: Option<String>,
    #[serde(default)]
    q: Option<String>,
    #[serde(default)]
    mine: Option<String>,
    /// `newest` for newest first, `due` for the most urgent reply first (SLA);
    /// anything else is oldest first.
    #[serde(default)]
    sort: Option<String>,
    /// The keyset cursor of the next page: `created_at:case_id`.
    #[serde(default)]
    after: Option<String>,
    /// Rows per page, 1 to 100 [default: 50].
    #[serde(default)]
    per_page: Option<i64>,
    /// After a bulk action: `assigned` or `closed`, how many, how many left as they were.
    #[serde(default)]
    bulk: Option<String>,
    #[serde(default)]
    n: Option<usize>,
    #[serde(default)]
    skipped: Option<usize>,
    /// After "& next" found no further case in the tab: `approved` or `rejected`.
    #[serde(default)]
    done: Option<String>,
}

/// Rows on one page of the queue, unless the view asks for another number.
const PAGE: i64 = 50;

/// The queue's tabs, each a filter value; the first is where the queue lands.
const TABS: [(&str, &str); 7] = [
    (NEEDS_PERSON, "Needs a person"),
    ("needs_me", "Needs me"),
    ("needs_supervisor", "Needs a supervisor"),
    ("escalated", "Escalated"),
    ("in_flight", "In flight"),
    ("done", "Done"),
    ("all", "All"),
];

/// The queue's default view: every case waiting for a person — an approval or an
/// escalation (escalated cases are not hidden by default).
const NEEDS_PERSON: &str = "needs_person";

/// The statuses a filter value selects; `all` and `stuck` select every status (`stuck`
/// then keeps the flagged cases).
fn filter_statuses(filter: &str) -> Result<Vec<CaseStatus>, AppError> {
    use CaseStatus::*;
    match filter {
        NEEDS_PERSON | "needs_supervisor" => Ok(vec![AwaitingApproval, Escalated]),
        "needs_me" => Ok(vec![AwaitingApproval]),
        "in_flight" => Ok(vec![
            Approved,
            Executing,
            PendingVerification,
            RefundPending,
        ]),
        "done" => Ok(vec![
            RefundSucceeded,
            RefundFailed,
            Denied,
            Rejected,
            Replied,
            Closed,
            Cancelled,
        ]),
        "stuck" => Ok(vec![]),
        other => Ok(crate::api::cases::status_filter(Some(other))?
            .into_iter()
            .collect()),
    }
}

pub(super) fn age(now_ms: i64, then_ms: i64) -> String {
    let minutes = (now_ms - then_ms).max(0) / 60_000;
    match minutes {
        m if m < 60 => format!("{m} min"),
        m if m < 48 * 60 => format!("{} h", m / 60),
        m => format!("{} d", m / (24 * 60)),
    }
}

/// The approver roles a tab asks for (of the cases awaiting approval): "needs me" is
/// what the viewer's role may approve, "needs a supervisor" what an agent may not.
fn tab_roles(filter: &str, session: &Session) -> Vec<&'static str> {
    use policy_engine::Role;
    let all = [Role::Agent, Role::Supervisor, Role::Admin];
    match filter {
        "needs_me" => all
            .into_iter()
            .filter(|r| session.staff.role.may_approve(*r))
            .map(Role::as_str)
            .collect(),
        "needs_supervisor" => vec![Role::Supervisor.as_str(), Role::Admin.as_str()],
        _ => Vec::new(),
    }
}

pub(super) async fn queue_page(
    State(state): State<AppState>,
    SignedIn(session): SignedIn,
    Query(q): Query<QueueQuery>,
) -> Response {
    let search = q.q.clone().unwrap_or_default();
    // A search without a tab looks through every status (the header's box).
    let filter = q
        .status
        .clone()
        .unwrap_or_else(|| match search.trim().is_empty() {
            true => NEEDS_PERSON.into(),
            false => "all".into(),
        });
    let mine = q.mine.as_deref().is_some_and(|m| !m.is_empty());
    let sort = match q.sort.as_deref() {
        Some("newest") => "newest",
        Some("due") => "due",
        _ => "oldest",
    };
    let page = q.per_page.unwrap_or(PAGE).clamp(1, 100);
    let tab = match Tab::of(&state, &session, &filter).await {
        Ok(tab) => tab,
        Err(e) => return e.into_response(),
    };
    let query = cases::CaseQuery {
        assignee_id: mine.then_some(session.staff.id.as_str()),
        search: Some(search.as_str()),
        newest_first: Some(sort == "newest"),
        due_first: (sort == "due").then_some(state.reply_targets),
        after: q.after.as_deref().and_then(cases::parse_cursor),
        // One more than a page says whether there is a next one.
        limit: Some(page + 1),
        ..tab.query()
    };
    let mut list = match cases::list_cases(&state.db, &query).await {
        Ok(l) => l,
        Err(e) => return AppError::from(e).into_response(),
    };
    let more = list.len() as i64 > page;
    list.truncate(page as usize);
    let now = state.clock.now_ms();
    let stuck: std::collections::HashMap<&str, &str> = tab
        .flags
        .iter()
        .map(|f| (f.case_id.as_str(), f.summary.as_str()))
        .collect();
    let lines = match desk::views::case_lines(&state.db, &list).await {
        Ok(lines) => lines,
        Err(e) => return AppError::from(e).into_response(),
    };
    let clocks: Vec<Option<ReplyClock>> = list
        .iter()
        .zip(&lines)
        .map(|(c, line)| {
            line.waiting
                .map(|w| ReplyClock::of(c, w, state.reply_targets))
        })
        .collect();
    let next = more
        .then(|| {
            let (last, clock) = list.last().zip(clocks.last())?;
            let at = match sort {
                "due" => ReplyClock::sort_key(clock.as_ref()),
                _ => last.created_at,
            };
            Some(next_link(&q, &format!("{at}:{}", last.id)))
        })
        .flatten();
    let rows = list
        .iter()
        .zip(lines)
        .zip(clocks)
        .map(|((c, line), clock)| queue_row(&session, c, line, clock, now, &stuck))
        .collect();
    // The tab shown counts what its rows are drawn from (the search and "Mine" too).
    let shown = Shown {
        filter: &filter,
        query: &query,
    };
    let tabs = match tab_counts(&state, &session, &tab.flags, shown).await {
        Ok(tabs) => tabs,
        Err(e) => return e.into_response(),
    };
    let assignable = match assignable(&state, &session).await {
        Ok(a) => a,
        Err(e) => return e.into_response(),
    };
    let saved = match saved_reply_names(&state).await {
        Ok(saved) => saved,
        Err(e) => return e.into_response(),
    };
    render(&QueuePage {
        saved,
        nav: Nav::of(&session, "/console"),
        rows,
        statuses: filter_choices(),
        tabs,
        filter,
        search,
        mine,
        sort,
        next,
        csrf: session.csrf_token.clone(),
        assignable,
        notice: bulk_notice(&q).or_else(|| last_verdict_notice(&q)),
    })
}

/// After the last case of an "& next" run: the verdict went through, and the tab is
/// empty (docs/spec/interfaces.md, "The queue").
fn last_verdict_notice(q: &QueueQuery) -> Option<String> {
    let verb = match q.done.as_deref()? {
        "approved" => "Approved",
        "rejected" => "Rejected",
        _ => return None,
    };
    Some(format!("{verb} — no more cases in this view."))
}

/// Whom the bulk form offers to assign to: the staff who work cases, for a supervisor
/// or admin (docs/spec/roles.md: agents only take cases themselves).
async fn assignable(state: &AppState, session: &Session) -> Result<Vec<String>, AppError> {
    if session.staff.role < desk::auth::StaffRole::Supervisor {
        return Ok(Vec::new());
    }
    let staff = desk::auth::assignable_staff(&state.db).await?;
    Ok(staff.into_iter().map(|s| s.email).collect())
}

/// Each saved reply's name with the languages it is kept in (`en, zh`).
async fn saved_reply_names(state: &AppState) -> Result<Vec<(String, String)>, AppError> {
    let mut names: Vec<(String, String)> = Vec::new();
    for reply in desk::saved_replies::list(&state.db, None).await? {
        let lang = reply.language.as_str();
        match names.iter_mut().find(|(name, _)| *name == reply.name) {
            Some((_, langs)) => *langs = format!("{langs}, {lang}"),
            None => names.push((reply.name, lang.to_string())),
        }
    }
    names.sort();
    Ok(names)
}

/// What the last bulk action did, in words (counts only: nothing from the address is
/// shown as text).
fn bulk_notice(q: &QueueQuery) -> Option<String> {
    let verb = match q.bulk.as_deref()? {
        "closed" => "Closed",
        _ => "Assigned",
    };
    let (n, skipped) = (q.n.unwrap_or(0), q.skipped.unwrap_or(0));
    let mut words = format!("{verb} {n} case(s).");
    if skipped > 0 {
        words.push_str(&format!(
            " {skipped} left as they were: a refund awaiting approval is decided on its own page, money in flight is never closed, and a reply goes only to a customer it can be sent to in their language."
        ));
    }
    Some(words)
}

/// The cases one tab (a filter value) of the queue holds, for the viewer: its statuses,
/// the approver roles it asks for, and the watchdog's open flags (the `stuck` tab's ids).
pub(super) struct Tab {
    statuses: Vec<CaseStatus>,
    roles: Vec<&'static str>,
    flags: Vec<desk::watchdog::Flag>,
    flagged: Option<Vec<String>>,
    /// Whose escalations the tab shows (`None`: every one).
    escalations_of: Option<cases::TeamQueue>,
    /// "Needs me": also every case assigned to the viewer that needs a person.
    mine: Option<String>,
}

impl Tab {
    pub(super) async fn of(
        state: &AppState,
        session: &Session,
        filter: &str,
    ) -> Result<Tab, AppError> {
        let flags = desk::watchdog::open_flags(&state.db).await?;
        Tab::with_flags(flags, session, filter)
    }

    /// The tab with the watchdog's open flags already read (the queue counts six tabs
    /// on one read of them).
    fn with_flags(
        flags: Vec<desk::watchdog::Flag>,
        session: &Session,
        filter: &str,
    ) -> Result<Tab, AppError> {
        let mut statuses = filter_statuses(filter)?;
        // docs/spec/roles.md, "Where an escalation goes": each escalation is in one team's
        // queue, and in that team's "Needs me"; a case someone took stays in theirs.
        let own_team = match takes_escalations(session) {
            true => cases::TeamQueue::Supervisors,
            false => cases::TeamQueue::Agents,
        };
        let escalations_of = match filter {
            "needs_me" => Some(own_team),
            "needs_supervisor" => Some(cases::TeamQueue::Supervisors),
            _ => None,
        };
        if filter == "needs_me" {
            statuses.push(CaseStatus::Escalated);
        }
        let flagged =
            (filter == "stuck").then(|| flags.iter().map(|f| f.case_id.clone()).collect());
        Ok(Tab {
            statuses,
            roles: tab_roles(filter, session),
            flags,
            flagged,
            escalations_of,
            mine: (filter == "needs_me").then(|| session.staff.id.to_string()),
        })
    }

    /// Every case of the tab, oldest first.
    pub(super) fn query(&self) -> cases::CaseQuery<'_> {
        cases::CaseQuery {
            statuses: &self.statuses,
            required_roles: &self.roles,
            newest_first: Some(false),
            ids: self.flagged.as_deref(),
            escalations_of: self.escalations_of,
            or_assigned_to: self.mine.as_deref(),
            ..Default::default()
        }
    }
}

/// The tab the queue shows and the query its rows come from.
struct Shown<'a> {
    filter: &'a str,
    query: &'a cases::CaseQuery<'a>,
}

/// Each tab with how many cases it holds now (counts on the tabs): the one
/// shown counts by its rows' own query (search, "Mine"), so its count is its rows'.
async fn tab_counts(
    state: &AppState,
    session: &Session,
    flags: &[desk::watchdog::Flag],
    shown: Shown<'_>,
) -> Result<Vec<(&'static str, &'static str, i64)>, AppError> {
    let mut tabs = Vec::with_capacity(TABS.len());
    for (value, words) in TABS {
        let count = if value == shown.filter {
            cases::count_cases(&state.db, shown.query).await?
        } else {
            let tab = Tab::with_flags(flags.to_vec(), session, value)?;
            cases::count_cases(&state.db, &tab.query()).await?
        };
        tabs.push((value, words, count));
    }
    Ok(tabs)
}

/// A case's neighbours in the tab `filter`, oldest first: (the previous, the next, and
/// the tab's first case other than it — where "next" goes at the end of the tab).
pub(super) async fn neighbours(
    state: &AppState,
    session: &Session,
    filter: &str,
    case: &cases::Case,
) -> Result<(Option<String>, Option<String>, Option<String>), AppError> {
    let tab = Tab::of(state, session, filter).await?;
    let cursor = Some((case.created_at, case.id.as_str()));
    let one = |newest_first, after| cases::CaseQuery {
        newest_first: Some(newest_first),
        after,
        limit: Some(2),
        ..tab.query()
    };
    let id_of = |list: Vec<cases::Case>| {
        list.into_iter()
            .map(|c| c.id.into_string())
            .find(|id| id != case.id.as_str())
    };
    let previous = id_of(cases::list_cases(&state.db, &one(true, cursor)).await?);
    let next = id_of(cases::list_cases(&state.db, &one(false, cursor)).await?);
    let first = match &next {
        Some(next) => Some(next.clone()),
        None => id_of(cases::list_cases(&state.db, &one(false, None)).await?),
    };
    Ok((previous, next, first))
}

/// Whether `filter` names a tab or a filter of the queue (what a case page's `tab` may be).
pub(super) fn known_filter(filter: &str) -> bool {
    filter == NEEDS_PERSON || filter == "stuck" || filter_statuses(filter).is_ok()
}

/// The same view's next page: every parameter kept, the cursor moved on.
fn next_link(q: &QueueQuery, cursor: &str) -> String {
    let per_page = q.per_page.map(|n| n.to_string());
    let query = query_string(&[
        ("status", q.status.as_deref()),
        ("q", q.q.as_deref()),
        ("mine", q.mine.as_deref()),
        ("sort", q.sort.as_deref()),
        ("per_page", per_page.as_deref()),
        ("after", Some(cursor)),
    ]);
    format!("/console?{query}")
}

/// Whether this staff member's role takes escalated cases over (supervisors, admins).
fn takes_escalations(session: &Session) -> bool {
    crate::access::Capability::TakeOver.allows(session.staff.role)
}

fn queue_row(
    session: &Session,
    c: &cases::Case,
    line: desk::views::CaseLine,
    clock: Option<ReplyClock>,
    now: i64,
    stuck: &std::collections::HashMap<&str, &str>,
) -> QueueRow {
    // An escalation needs a supervisor to take it over; an approval, the role RP-004 asks.
    let (required, may_approve) = if c.status == CaseStatus::Escalated {
        ("supervisor".to_string(), takes_escalations(session))
    } else {
        let may = c
            .required_role
            .is_some_and(|r| session.staff.role.may_approve(r));
        (
            c.required_role
                .map_or(String::new(), |r| r.as_str().to_string()),
            may,
        )
    };
    QueueRow {
        id: c.id.to_string(),
        status: c.status.as_str().to_string(),
        status_label: c.status.label(),
        customer: line
            .customer_name
            .unwrap_or_else(|| c.customer_id.to_string()),
        subject: line.subject,
        language: line.language,
        assignee: line.assignee,
        amount: line.amount.unwrap_or_default(),
        reason: c
            .reason_code
            .map_or(String::new(), |r| r.as_str().to_string()),
        required_role: required,
        may_approve,
        age: age(now, c.created_at),
        reply: clock.map(|k| (k.words(now), k.is_breached(now))),
        stuck: stuck.get(c.id.as_str()).map(|s| s.to_string()),
        person_requested: c
            .person_requested_at
            .zip(clock)
            .is_some_and(|(at, k)| k.since_ms <= at),
    }
}

/// The queue filter's choices, in words: the tabs first (so the filter names the tab
/// that is selected), then single statuses.
fn filter_choices() -> Vec<(String, String)> {
    let mut choices: Vec<(String, String)> = TABS
        .iter()
        .filter(|(value, _)| *value != "all")
        .map(|(value, words)| (value.to_string(), words.to_string()))
        .collect();
    for status in [
        CaseStatus::AwaitingApproval,
        CaseStatus::Escalated,
        CaseStatus::PendingVerification,
        CaseStatus::RefundPending,
        CaseStatus::RefundSucceeded,
        CaseStatus::RefundFailed,
        CaseStatus::Denied,
        CaseStatus::AwaitingCustomer,
        CaseStatus::Investigating,
        CaseStatus::Closed,
    ] {
        choices.push((status.as_str().to_string(), status.label().to_string()));
    }
    choices.push(("stuck".into(), "Stuck".into()));
    choices.push(("all".into(), "All".into()));
    choices
}
