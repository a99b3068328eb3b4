//! Server-rendered pages (askama): the customer's ticket page and the staff console.
//!
//! Every state-changing form carries the session's CSRF token, checked in constant time;
//! askama escapes every value. Customers sign in with a single-use, 15-minute link
//! (`/sign-in?link=…`): the page we serve POSTs it back, from our own origin, and only
//! that POST starts a browser session (an HttpOnly cookie); an API token in a link signs
//! nobody in (issue 16). Customers see only their own tickets.

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Form, Router};
use serde::Deserialize;

use crate::approvals::{self, Verdict};
use crate::auth::{self, constant_time_eq, Principal, Session};
use crate::cases::{self, CaseStatus, CaseView};
use crate::error::AppError;
use crate::refunds::RefundView;
use crate::replies::{self, Language, PageText};
use crate::state::AppState;
use crate::tickets::{self, MessageView, TicketView};
use crate::world::{parse_plain, serde_plain};

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/", get(|| async { Redirect::to("/console") }))
        .route("/tickets", get(tickets_page).post(new_ticket_submit))
        .route("/sign-in", get(sign_in_page).post(sign_in_submit))
        .route("/sign-out", post(sign_out))
        .route("/static/ticket.js", get(ticket_script))
        .route("/tickets/{id}", get(ticket_page))
        .route("/tickets/{id}/messages", post(message_submit))
        .route("/tickets/{id}/withdraw", post(withdraw_submit))
        .route("/console", get(queue_page))
        .route("/console/login", get(login_page).post(login_submit))
        .route("/console/logout", post(logout))
        .route("/console/cases/{id}", get(case_page))
        .route("/console/cases/{id}/approve", post(approve_submit))
        .route("/console/cases/{id}/reject", post(reject_submit))
        .route("/console/cases/{id}/takeover", post(takeover_submit))
        .route("/console/audit", get(audit_page))
        .route("/console/staff", get(staff_page))
        .route("/console/staff/unlock", post(unlock_submit))
        .route("/console/runs/{id}", get(run_page))
        .route(
            "/console/reconcile",
            get(reconcile_page).post(reconcile_submit),
        )
        .route("/console/shadow", get(shadow_page))
        .route("/console/cases/{id}/decide", post(decide_by_hand_submit))
        .merge(crate::policy_pages::routes())
}

pub fn render(t: &impl Template) -> Response {
    match t.render() {
        Ok(html) => Html(html).into_response(),
        Err(e) => AppError::Internal(anyhow::anyhow!("template: {e}")).into_response(),
    }
}

pub fn error_page(status: StatusCode, message: &str) -> Response {
    (
        status,
        Html(format!(
            "<!doctype html><meta charset=utf-8><title>{status}</title><p>{}</p>",
            html_escape(message)
        )),
    )
        .into_response()
}

/// HTML-escapes text for pages built outside askama templates.
pub fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#x27;")
}

fn set_cookie(state: &AppState, name: &str, value: &str, max_age_secs: i64) -> HeaderValue {
    let secure = if state.secure_cookies { "; Secure" } else { "" };
    HeaderValue::from_str(&format!(
        "{name}={value}; Path=/; HttpOnly; SameSite=Lax; Max-Age={max_age_secs}{secure}"
    ))
    .expect("cookie values are hex tokens and always valid header text")
}

/// A redirect to `to` that sets (or, with an empty value and age 0, clears) a cookie.
fn redirect_with_cookie(
    state: &AppState,
    to: &str,
    name: &str,
    value: &str,
    max_age_secs: i64,
) -> Response {
    let mut resp = Redirect::to(to).into_response();
    resp.headers_mut().insert(
        header::SET_COOKIE,
        set_cookie(state, name, value, max_age_secs),
    );
    resp
}

/// A browser session whose forms carry a CSRF token.
trait FormSession: Sized {
    fn csrf(&self) -> &str;
    /// The page shown when there is no session.
    fn missing() -> Response;
}

impl FormSession for Session {
    fn csrf(&self) -> &str {
        &self.csrf_token
    }
    fn missing() -> Response {
        Redirect::to("/console/login").into_response()
    }
}

impl FormSession for CustomerSession {
    fn csrf(&self) -> &str {
        &self.csrf_token
    }
    fn missing() -> Response {
        error_page(
            StatusCode::UNAUTHORIZED,
            "Open this page from the link we sent you.",
        )
    }
}

/// The session of a state-changing form, if there is one and the form's CSRF token is
/// its own (compared in constant time); else the page to answer with.
fn verified<S: FormSession>(session: Result<S, AppError>, form_csrf: &str) -> Result<S, Response> {
    let session = session.map_err(|_| S::missing())?;
    if !constant_time_eq(form_csrf, session.csrf()) {
        return Err(error_page(
            StatusCode::FORBIDDEN,
            "The form expired; reload the page and try again.",
        ));
    }
    Ok(session)
}

/// Re-renders a page with a failed action's message, under the failure's status.
fn with_status(status: StatusCode, mut page: Response) -> Response {
    *page.status_mut() = status;
    page
}

#[derive(Template)]
#[template(path = "ticket.html")]
struct TicketPage {
    ticket: TicketView,
    lang: Language,
    t: &'static PageText,
    csrf: String,
    error: Option<String>,
}

#[derive(Template)]
#[template(path = "tickets.html")]
struct TicketListPage {
    tickets: Vec<TicketView>,
    lang: Language,
    t: &'static PageText,
    csrf: String,
    error: Option<String>,
}

/// A customer's browser session (from a sign-in link), with its CSRF token.
struct CustomerSession {
    customer_id: String,
    csrf_token: String,
    token: String,
}

impl axum::extract::FromRequestParts<AppState> for CustomerSession {
    type Rejection = AppError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let token = auth::cookie(parts, auth::CUSTOMER_COOKIE)
            .ok_or(AppError::Unauthorized)?
            .to_string();
        let resolved = auth::resolve(&state.db, &token, state.clock.now_ms())
            .await?
            .ok_or(AppError::Unauthorized)?;
        match (resolved.principal, resolved.csrf_token) {
            (Principal::Customer { customer_id }, Some(csrf_token)) => Ok(CustomerSession {
                customer_id,
                csrf_token,
                token,
            }),
            _ => Err(AppError::Unauthorized),
        }
    }
}

impl CustomerSession {
    fn principal(&self) -> Principal {
        Principal::Customer {
            customer_id: self.customer_id.clone(),
        }
    }
}

async fn tickets_page(
    State(state): State<AppState>,
    headers: axum::http::HeaderMap,
    session: Result<CustomerSession, AppError>,
) -> Response {
    let Ok(session) = session else {
        return open_from_link_page(&headers);
    };
    ticket_list_response(&state, &session, None).await
}

async fn ticket_list_response(
    state: &AppState,
    session: &CustomerSession,
    error: Option<&AppError>,
) -> Response {
    let lang = match tickets::customer_language(&state.db, &session.customer_id).await {
        Ok(lang) => lang,
        Err(e) => return e.into_response(),
    };
    match tickets::customer_tickets(state, &session.customer_id).await {
        Ok(list) => render(&TicketListPage {
            tickets: list,
            lang,
            t: replies::page_text(lang),
            csrf: session.csrf_token.clone(),
            error: error.map(|e| replies::page_error(lang, e)),
        }),
        Err(e) => e.into_response(),
    }
}

/// The 404 of a ticket the customer may not see, in the customer's language.
async fn ticket_not_found_page(state: &AppState, session: &CustomerSession) -> Response {
    let lang = tickets::customer_language(&state.db, &session.customer_id)
        .await
        .unwrap_or(Language::En);
    error_page(StatusCode::NOT_FOUND, replies::ticket_not_found(lang))
}

#[derive(Deserialize)]
struct NewTicketForm {
    csrf: String,
    message: String,
    #[serde(default)]
    order_id: Option<String>,
}

async fn new_ticket_submit(
    State(state): State<AppState>,
    session: Result<CustomerSession, AppError>,
    Form(form): Form<NewTicketForm>,
) -> Response {
    let session = match verified(session, &form.csrf) {
        Ok(s) => s,
        Err(page) => return page,
    };
    let input = tickets::NewTicket {
        message: form.message,
        order_id: form.order_id,
    };
    match tickets::create_ticket(&state, &session.customer_id, input).await {
        Ok(ticket) => Redirect::to(&format!("/tickets/{}", ticket.id)).into_response(),
        Err(e) => with_status(
            e.status(),
            ticket_list_response(&state, &session, Some(&e)).await,
        ),
    }
}

async fn ticket_page(
    State(state): State<AppState>,
    Path(id): Path<String>,
    headers: axum::http::HeaderMap,
    session: Result<CustomerSession, AppError>,
) -> Response {
    let Ok(session) = session else {
        return open_from_link_page(&headers);
    };
    ticket_page_response(&state, &session, &id, None).await
}

async fn ticket_page_response(
    state: &AppState,
    session: &CustomerSession,
    id: &str,
    error: Option<&AppError>,
) -> Response {
    let ticket = match tickets::visible_ticket(state, &session.principal(), id).await {
        Ok(t) => t,
        Err(_) => return ticket_not_found_page(state, session).await,
    };
    match tickets::ticket_view(state, &ticket).await {
        Ok(view) => render(&TicketPage {
            lang: view.language,
            t: replies::page_text(view.language),
            error: error.map(|e| replies::page_error(view.language, e)),
            ticket: view,
            csrf: session.csrf_token.clone(),
        }),
        Err(e) => e.into_response(),
    }
}

#[derive(Deserialize)]
struct MessageForm {
    csrf: String,
    text: String,
}

async fn message_submit(
    State(state): State<AppState>,
    Path(id): Path<String>,
    session: Result<CustomerSession, AppError>,
    Form(form): Form<MessageForm>,
) -> Response {
    let session = match verified(session, &form.csrf) {
        Ok(s) => s,
        Err(page) => return page,
    };
    let result = match tickets::visible_ticket(&state, &session.principal(), &id).await {
        Ok(ticket) => tickets::add_customer_message(&state, &ticket, &form.text).await,
        Err(e) => Err(e),
    };
    match result {
        Ok(()) => Redirect::to(&format!("/tickets/{id}")).into_response(),
        Err(AppError::NotFound(_)) => ticket_not_found_page(&state, &session).await,
        Err(e) => with_status(
            e.status(),
            ticket_page_response(&state, &session, &id, Some(&e)).await,
        ),
    }
}

async fn withdraw_submit(
    State(state): State<AppState>,
    Path(id): Path<String>,
    session: Result<CustomerSession, AppError>,
    Form(form): Form<CsrfForm>,
) -> Response {
    let session = match verified(session, &form.csrf) {
        Ok(s) => s,
        Err(page) => return page,
    };
    let ticket = match tickets::visible_ticket(&state, &session.principal(), &id).await {
        Ok(t) => t,
        Err(_) => return ticket_not_found_page(&state, &session).await,
    };
    match tickets::withdraw(&state, &ticket).await {
        Ok(_) => Redirect::to(&format!("/tickets/{id}")).into_response(),
        Err(e) => ticket_page_response(&state, &session, &id, Some(&e)).await,
    }
}

#[derive(Template)]
#[template(path = "login.html")]
struct LoginPage {
    error: Option<String>,
}

async fn login_page() -> Response {
    render(&LoginPage { error: None })
}

#[derive(Deserialize)]
struct LoginForm {
    email: String,
    password: String,
}

async fn login_submit(
    State(state): State<AppState>,
    client: auth::ClientAddr,
    origin: SameOrigin,
    Form(form): Form<LoginForm>,
) -> Response {
    if !origin.0 {
        return cross_site_refused();
    }
    let now = state.clock.now_ms();
    let login = auth::login(&state.db, &form.email, &form.password, &client.0, now).await;
    let login_page = |status: StatusCode, error: String| {
        with_status(status, render(&LoginPage { error: Some(error) }))
    };
    match login {
        Ok(auth::LoginResult::LoggedIn(staff)) => {
            match auth::issue_token(&state.db, "session", "staff", &staff.id, now).await {
                Ok((token, _)) => redirect_with_cookie(
                    &state,
                    "/console",
                    auth::SESSION_COOKIE,
                    &token,
                    12 * 3600,
                ),
                Err(e) => e.into_response(),
            }
        }
        Ok(auth::LoginResult::Throttled { retry_after_ms }) => {
            let secs = (retry_after_ms + 999) / 1000;
            let mut resp = login_page(
                StatusCode::TOO_MANY_REQUESTS,
                format!("Too many failed attempts. Wait {secs} s and try again."),
            );
            resp.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
            resp
        }
        Ok(auth::LoginResult::WrongCredentials) => {
            login_page(StatusCode::UNAUTHORIZED, "Wrong email or password.".into())
        }
        Err(e) => e.into_response(),
    }
}

/// Whether a form post came from our own pages (`auth::origin_matches_host`; a request
/// with neither `Sec-Fetch-Site` nor `Origin` is not a browser's and passes). A sign-in
/// form posted from another site would sign the victim in as the attacker (login CSRF,
/// issue 16).
struct SameOrigin(bool);

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for SameOrigin {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _state: &S,
    ) -> Result<Self, Self::Rejection> {
        Ok(SameOrigin(auth::origin_matches_host(parts) != Some(false)))
    }
}

fn cross_site_refused() -> Response {
    error_page(
        StatusCode::FORBIDDEN,
        "This form was sent from another site; open the page here and try again.",
    )
}

#[derive(Deserialize)]
struct CsrfForm {
    csrf: String,
}

async fn logout(
    State(state): State<AppState>,
    session: Result<Session, AppError>,
    Form(form): Form<CsrfForm>,
) -> Response {
    if let Ok(session) = session {
        if constant_time_eq(&form.csrf, &session.csrf_token) {
            let _ = auth::revoke_token(&state.db, &session.token).await;
        }
    }
    redirect_with_cookie(&state, "/console/login", auth::SESSION_COOKIE, "", 0)
}

#[derive(Template)]
#[template(path = "sign_in.html")]
struct SignInPage {
    link: String,
    next: String,
    error: Option<String>,
    lang: Language,
    t: &'static PageText,
}

/// The language of a page shown before the customer is known: their browser's.
fn browser_language(headers: &axum::http::HeaderMap) -> Language {
    Language::from_accept_language(
        headers
            .get(header::ACCEPT_LANGUAGE)
            .and_then(|v| v.to_str().ok()),
    )
}

/// The page for a customer page opened without a session, in the browser's language.
fn open_from_link_page(headers: &axum::http::HeaderMap) -> Response {
    let t = replies::page_text(browser_language(headers));
    error_page(StatusCode::UNAUTHORIZED, t.open_from_link)
}

#[derive(Deserialize)]
struct SignInQuery {
    #[serde(default)]
    link: String,
    #[serde(default)]
    next: Option<String>,
}

/// Where a sign-in may lead: one of the customer's pages, never another site.
fn sign_in_target(next: Option<&str>) -> String {
    match next {
        Some(n) if n.starts_with("/tickets") && !n.contains("//") && !n.contains('\\') => {
            n.to_string()
        }
        _ => "/tickets".to_string(),
    }
}

/// `GET /sign-in?link=…`: a page whose button POSTs the link back. Opening the link
/// (a GET, which mail scanners and link previews also do) uses nothing up.
async fn sign_in_page(headers: axum::http::HeaderMap, Query(q): Query<SignInQuery>) -> Response {
    let lang = browser_language(&headers);
    let t = replies::page_text(lang);
    let error = q.link.is_empty().then(|| t.signed_out.to_string());
    render(&SignInPage {
        next: sign_in_target(q.next.as_deref()),
        link: q.link,
        error,
        lang,
        t,
    })
}

#[derive(Deserialize)]
struct SignInForm {
    link: String,
    #[serde(default)]
    next: Option<String>,
}

/// `POST /sign-in`: uses the link once and starts the customer's browser session.
async fn sign_in_submit(
    State(state): State<AppState>,
    headers: axum::http::HeaderMap,
    origin: SameOrigin,
    Form(form): Form<SignInForm>,
) -> Response {
    if !origin.0 {
        return cross_site_refused();
    }
    let now = state.clock.now_ms();
    let customer_id = match auth::redeem_sign_in_link(&state.db, &form.link, now).await {
        Ok(Some(id)) => id,
        Ok(None) => {
            let lang = browser_language(&headers);
            let t = replies::page_text(lang);
            let page = render(&SignInPage {
                link: String::new(),
                next: String::new(),
                error: Some(t.link_not_valid.into()),
                lang,
                t,
            });
            return with_status(StatusCode::UNAUTHORIZED, page);
        }
        Err(e) => return e.into_response(),
    };
    match auth::issue_token(&state.db, "session", "customer", &customer_id, now).await {
        Ok((session, _)) => {
            let target = sign_in_target(form.next.as_deref());
            redirect_with_cookie(&state, &target, auth::CUSTOMER_COOKIE, &session, 12 * 3600)
        }
        Err(e) => e.into_response(),
    }
}

/// `POST /sign-out`: ends the customer's browser session.
async fn sign_out(
    State(state): State<AppState>,
    session: Result<CustomerSession, AppError>,
    Form(form): Form<CsrfForm>,
) -> Response {
    let session = match verified(session, &form.csrf) {
        Ok(s) => s,
        Err(page) => return page,
    };
    if let Err(e) = auth::revoke_token(&state.db, &session.token).await {
        return e.into_response();
    }
    redirect_with_cookie(&state, "/sign-in", auth::CUSTOMER_COOKIE, "", 0)
}

/// `GET /static/ticket.js`: the ticket page's polling script (no inline script: CSP).
async fn ticket_script() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (header::CACHE_CONTROL, "public, max-age=300"),
        ],
        include_str!("../static/ticket.js"),
    )
        .into_response()
}

struct QueueRow {
    id: String,
    status: String,
    amount: String,
    reason: String,
    required_role: String,
    may_approve: bool,
    age: String,
    /// The stuck-run watchdog's diagnosis, while its flag stands (issue 18).
    stuck: Option<String>,
}

#[derive(Template)]
#[template(path = "console_queue.html")]
struct QueuePage {
    staff_email: String,
    staff_role: String,
    csrf: String,
    rows: Vec<QueueRow>,
    statuses: Vec<String>,
    filter: String,
}

#[derive(Deserialize)]
struct QueueQuery {
    status: Option<String>,
}

fn age(now_ms: i64, then_ms: i64) -> String {
    let minutes = (now_ms - then_ms).max(0) / 60_000;
    match minutes {
        m if m < 60 => format!("{m} min"),
        m if m < 48 * 60 => format!("{} h", m / 60),
        m => format!("{} d", m / (24 * 60)),
    }
}

async fn queue_page(
    State(state): State<AppState>,
    session: Result<Session, AppError>,
    Query(q): Query<QueueQuery>,
) -> Response {
    let Ok(session) = session else {
        return Redirect::to("/console/login").into_response();
    };
    let filter = q.status.unwrap_or_else(|| "awaiting_approval".into());
    let flags = match crate::watchdog::open_flags(&state.db).await {
        Ok(flags) => flags,
        Err(e) => return e.into_response(),
    };
    // "stuck" is a view over every status: the cases whose run the watchdog flagged.
    let status = if filter == "all" || filter == "stuck" {
        None
    } else {
        match CaseStatus::parse(&filter) {
            Ok(s) => Some(s),
            Err(e) => return e.into_response(),
        }
    };
    let list = match cases::list_cases(&state.db, status).await {
        Ok(l) => l,
        Err(e) => return e.into_response(),
    };
    let now = state.clock.now_ms();
    let stuck: std::collections::HashMap<&str, &str> = flags
        .iter()
        .map(|f| (f.case_id.as_str(), f.summary.as_str()))
        .collect();
    let rows = list
        .iter()
        .filter(|c| filter != "stuck" || stuck.contains_key(c.id.as_str()))
        .map(|c| {
            let required = c.required_role.clone().unwrap_or_default();
            let may_approve = parse_plain::<policy_engine::Role>(&required)
                .map(|r| session.staff.role.may_approve(r))
                .unwrap_or(false);
            let amount = match (c.refund_total_minor, c.currency.as_deref()) {
                (Some(minor), Some(cur)) => cur
                    .parse::<policy_engine::Currency>()
                    .ok()
                    .and_then(|cur| policy_engine::Money::from_minor(minor, cur).ok())
                    .map(|m| m.to_string())
                    .unwrap_or_default(),
                _ => String::new(),
            };
            QueueRow {
                id: c.id.clone(),
                status: c.status.as_str().to_string(),
                amount,
                reason: c.reason_code.clone().unwrap_or_default(),
                required_role: required,
                may_approve,
                age: age(now, c.created_at),
                stuck: stuck.get(c.id.as_str()).map(|s| s.to_string()),
            }
        })
        .collect();
    render(&QueuePage {
        staff_email: session.staff.email.clone(),
        staff_role: session.staff.role.as_str().into(),
        csrf: session.csrf_token.clone(),
        rows,
        statuses: [
            "awaiting_approval",
            "escalated",
            "pending_verification",
            "refund_pending",
            "refund_succeeded",
            "refund_failed",
            "denied",
            "awaiting_customer",
            "investigating",
            "stuck",
            "all",
        ]
        .map(String::from)
        .to_vec(),
        filter,
    })
}

struct RuleView {
    citation: String,
    link: String,
    summary: String,
}

struct RefundLineView {
    charge_id: String,
    amount: String,
    payment_method: String,
}

struct DecisionView {
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
struct CasePage {
    staff_email: String,
    staff_role: String,
    csrf: String,
    case: CaseView,
    messages: Vec<MessageView>,
    decision: Option<DecisionView>,
    proposal: Option<crate::agent::Proposal>,
    refunds: Vec<RefundView>,
    awaiting: bool,
    shadow_pending: bool,
    /// (order, charge, amount, captured, status, disputed, refunded, created) from the facts.
    billing: Vec<(String, String, String, bool, String, bool, String, String)>,
    reasons: Vec<String>,
    may_take_over: bool,
    may_approve: bool,
    required_role: String,
    fingerprint: String,
    error: Option<String>,
    /// The stuck-run watchdog's diagnosis, while its flag stands (issue 18).
    stuck: Option<String>,
}

async fn case_page_response(
    state: &AppState,
    session: &Session,
    id: &str,
    error: Option<String>,
) -> Response {
    let case = match cases::load_case(&state.db, id).await {
        Ok(Some(c)) => c,
        Ok(None) => return error_page(StatusCode::NOT_FOUND, "No such case."),
        Err(e) => return e.into_response(),
    };
    let view = match cases::case_view(&state.db, &case).await {
        Ok(v) => v,
        Err(e) => return e.into_response(),
    };
    let messages = tickets::messages(&state.db, &case.ticket_id)
        .await
        .unwrap_or_default();
    let decision = case.decision().map(|d| DecisionView {
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
                link: crate::policy_pages::citation_link(&r.citation),
                summary: r.summary.clone(),
            })
            .collect(),
        facts: d.facts_used.clone(),
        versions: d.policy_versions.join(", "),
        hash: d.hash.clone(),
    });
    let proposal = case
        .proposal
        .as_deref()
        .and_then(|p| serde_json::from_str(p).ok());
    let shadow_pending = crate::shadow_live::pending(&state.db, &case.id)
        .await
        .unwrap_or(true);
    let required_role = case
        .required_role
        .clone()
        .unwrap_or_else(|| "supervisor".into());
    let may_approve = parse_plain::<policy_engine::Role>(&required_role)
        .map(|r| session.staff.role.may_approve(r))
        .unwrap_or(false);
    let stuck = match crate::watchdog::open_flag_of_case(&state.db, &case.id).await {
        Ok(flag) => flag.map(|f| f.summary),
        Err(e) => return e.into_response(),
    };
    render(&CasePage {
        staff_email: session.staff.email.clone(),
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
            && session.staff.role >= auth::StaffRole::Supervisor,
        fingerprint: case.fingerprint.clone().unwrap_or_default(),
        case: view,
        messages,
        decision,
        proposal,
        may_approve,
        required_role,
        error,
        stuck,
    })
}

async fn case_page(
    State(state): State<AppState>,
    session: Result<Session, AppError>,
    Path(id): Path<String>,
) -> Response {
    let Ok(session) = session else {
        return Redirect::to("/console/login").into_response();
    };
    case_page_response(&state, &session, &id, None).await
}

#[derive(Deserialize)]
struct DecideForm {
    csrf: String,
    fingerprint: String,
    #[serde(default)]
    note: Option<String>,
    #[serde(default)]
    reason: Option<String>,
}

async fn decide_submit(
    state: AppState,
    session: Result<Session, AppError>,
    id: String,
    form: DecideForm,
    verdict: Verdict,
) -> Response {
    let session = match verified(session, &form.csrf) {
        Ok(s) => s,
        Err(page) => return page,
    };
    let note = match verdict {
        Verdict::Approved => form.note.filter(|n| !n.trim().is_empty()),
        Verdict::Rejected => form.reason.filter(|n| !n.trim().is_empty()),
    };
    if verdict == Verdict::Rejected && note.is_none() {
        return case_page_response(
            &state,
            &session,
            &id,
            Some("A rejection needs a reason.".into()),
        )
        .await;
    }
    match approvals::decide(
        &state,
        &session.staff,
        &id,
        &form.fingerprint,
        verdict,
        note.as_deref(),
    )
    .await
    {
        Ok(_) => Redirect::to(&format!("/console/cases/{id}")).into_response(),
        Err(e) => with_status(
            e.status(),
            case_page_response(&state, &session, &id, Some(e.public_message())).await,
        ),
    }
}

async fn approve_submit(
    State(state): State<AppState>,
    session: Result<Session, AppError>,
    Path(id): Path<String>,
    Form(form): Form<DecideForm>,
) -> Response {
    decide_submit(state, session, id, form, Verdict::Approved).await
}

async fn reject_submit(
    State(state): State<AppState>,
    session: Result<Session, AppError>,
    Path(id): Path<String>,
    Form(form): Form<DecideForm>,
) -> Response {
    decide_submit(state, session, id, form, Verdict::Rejected).await
}

async fn takeover_submit(
    State(state): State<AppState>,
    session: Result<Session, AppError>,
    Path(id): Path<String>,
    Form(form): Form<CsrfForm>,
) -> Response {
    let session = match verified(session, &form.csrf) {
        Ok(s) => s,
        Err(page) => return page,
    };
    match approvals::take_over(&state, &session.staff, &id).await {
        Ok(_) => Redirect::to(&format!("/console/cases/{id}")).into_response(),
        Err(e) => with_status(
            e.status(),
            case_page_response(&state, &session, &id, Some(e.public_message())).await,
        ),
    }
}

struct StaffRow {
    email: String,
    role: String,
    failures: i64,
}

#[derive(Template)]
#[template(path = "staff.html")]
struct StaffPage {
    staff_email: String,
    staff_role: String,
    csrf: String,
    rows: Vec<StaffRow>,
    notice: Option<String>,
}

/// The admin's session, or the page to answer with (login, or 403 for other roles).
fn admin(session: Result<Session, AppError>) -> Result<Session, Response> {
    let session = session.map_err(|_| Redirect::to("/console/login").into_response())?;
    if session.staff.role < auth::StaffRole::Admin {
        return Err(error_page(StatusCode::FORBIDDEN, "Admins only."));
    }
    Ok(session)
}

async fn staff_page_response(
    state: &AppState,
    session: &Session,
    notice: Option<String>,
) -> Response {
    let now = state.clock.now_ms();
    let staff = match auth::list_staff(&state.db).await {
        Ok(s) => s,
        Err(e) => return e.into_response(),
    };
    let mut rows = Vec::with_capacity(staff.len());
    for member in staff {
        let failures = match auth::recent_failures(&state.db, &member.email, now).await {
            Ok(n) => n,
            Err(e) => return e.into_response(),
        };
        rows.push(StaffRow {
            role: member.role.as_str().into(),
            email: member.email,
            failures,
        });
    }
    render(&StaffPage {
        staff_email: session.staff.email.clone(),
        staff_role: session.staff.role.as_str().into(),
        csrf: session.csrf_token.clone(),
        rows,
        notice,
    })
}

/// `GET /console/staff` (admin): staff and their recent failed logins.
async fn staff_page(State(state): State<AppState>, session: Result<Session, AppError>) -> Response {
    match admin(session) {
        Ok(session) => staff_page_response(&state, &session, None).await,
        Err(page) => page,
    }
}

#[derive(Deserialize)]
struct UnlockForm {
    csrf: String,
    email: String,
}

/// `POST /console/staff/unlock` (admin): forgets an account's failed logins, as
/// `refund-agent staff unlock --email E` does.
async fn unlock_submit(
    State(state): State<AppState>,
    session: Result<Session, AppError>,
    Form(form): Form<UnlockForm>,
) -> Response {
    let session = match verified(session, &form.csrf).and_then(|s| admin(Ok(s))) {
        Ok(s) => s,
        Err(page) => return page,
    };
    match unlock_and_audit(&state, &session.staff, &form.email).await {
        Ok(n) => {
            let notice = format!("Unlocked {}: {n} failed logins forgotten.", form.email);
            staff_page_response(&state, &session, Some(notice)).await
        }
        Err(e) => e.into_response(),
    }
}

async fn unlock_and_audit(
    state: &AppState,
    admin: &auth::Staff,
    email: &str,
) -> Result<u64, AppError> {
    let n = auth::unlock_staff(&state.db, email).await?;
    let mut tx = state.db.begin().await?;
    let detail = format!("{n} failed logins forgotten");
    crate::audit::record(
        &mut tx,
        &admin.id,
        "staff_unlocked",
        email,
        &detail,
        state.clock.now_ms(),
    )
    .await?;
    tx.commit().await?;
    tracing::info!(actor = %admin.email, email, failures = n, "staff login unlocked");
    Ok(n)
}

struct AuditRow {
    at: String,
    actor: String,
    action: String,
    subject: String,
    detail: String,
}

#[derive(Template)]
#[template(path = "audit.html")]
struct AuditPage {
    rows: Vec<AuditRow>,
}

/// `GET /console/audit`: who did what, and when (staff only).
async fn audit_page(State(state): State<AppState>, session: Result<Session, AppError>) -> Response {
    use sqlx::Row;
    if session.is_err() {
        return Redirect::to("/console/login").into_response();
    }
    let rows = sqlx::query(
        "SELECT a.created_at, COALESCE(s.email, a.actor) AS actor, a.action, a.subject, a.detail
         FROM audit_log a LEFT JOIN staff s ON s.id = a.actor ORDER BY a.created_at DESC, a.id LIMIT 500",
    )
    .fetch_all(state.db.pool())
    .await;
    let rows = match rows {
        Ok(r) => r,
        Err(e) => return AppError::from(e).into_response(),
    };
    let rows = rows
        .iter()
        .map(|r| AuditRow {
            at: crate::clock::rfc3339(r.try_get("created_at").unwrap_or_default()),
            actor: r.try_get("actor").unwrap_or_default(),
            action: r.try_get("action").unwrap_or_default(),
            subject: r.try_get("subject").unwrap_or_default(),
            detail: r.try_get("detail").unwrap_or_default(),
        })
        .collect();
    render(&AuditPage { rows })
}

struct EventRow {
    seq: i64,
    at: String,
    kind: String,
    call_id: Option<String>,
    summary: String,
    payload: String,
}

#[derive(Template)]
#[template(path = "run_trace.html")]
struct RunPage {
    run_id: String,
    case_id: String,
    status: String,
    steps: i64,
    tool_calls: i64,
    events: Vec<EventRow>,
    /// The run that spawned this one, if it is a child run (issue 18).
    parent_run_id: Option<String>,
    /// The child runs this run spawned (issue 18).
    children: Vec<crate::runs::ChildRun>,
}

/// `GET /console/runs/{id}`: the run's event log, each tool result anchored by call id
/// so evidence on the case page links to the record it came from (staff only).
async fn run_page(
    State(state): State<AppState>,
    session: Result<Session, AppError>,
    Path(id): Path<String>,
) -> Response {
    if session.is_err() {
        return Redirect::to("/console/login").into_response();
    }
    let run = match crate::runs::load_run(&state.db, &id).await {
        Ok(Some(r)) => r,
        Ok(None) => return error_page(StatusCode::NOT_FOUND, "No such run."),
        Err(e) => return e.into_response(),
    };
    if crate::shadow_live::pending(&state.db, &run.case_id)
        .await
        .unwrap_or(true)
    {
        return error_page(
            StatusCode::FORBIDDEN,
            "Shadow mode: the agent's trace is hidden until a reviewer decides this case.",
        );
    }
    let events = match crate::runs::events(&state.db, &id).await {
        Ok(e) => e,
        Err(e) => return e.into_response(),
    };
    let family = tokio::try_join!(
        crate::runs::parent_of(&state.db, &id),
        crate::runs::children(&state.db, &id)
    );
    let (parent_run_id, children) = match family {
        Ok(family) => family,
        Err(e) => return e.into_response(),
    };
    let events = events
        .into_iter()
        .map(|e| {
            let summary = match e.kind.as_str() {
                "tool_intent" => format!(
                    "{} {}",
                    e.payload["name"].as_str().unwrap_or(""),
                    e.payload["arguments"]
                ),
                "tool_result" => {
                    if e.payload["ok"] == serde_json::Value::Bool(true) {
                        "ok".to_string()
                    } else {
                        format!("error: {}", e.payload["content"]["error"])
                    }
                }
                "state" => format!(
                    "{} → {}",
                    e.payload["from"].as_str().unwrap_or("?"),
                    e.payload["to"].as_str().unwrap_or("?")
                ),
                "decision" => format!(
                    "{} ({})",
                    e.payload["outcome"].as_str().unwrap_or(""),
                    e.payload["reason_code"].as_str().unwrap_or("")
                ),
                _ => String::new(),
            };
            let summary: String = summary.chars().take(160).collect();
            EventRow {
                seq: e.seq,
                at: e.at,
                kind: e.kind,
                call_id: e.call_id,
                summary,
                payload: serde_json::to_string_pretty(&e.payload).unwrap_or_default(),
            }
        })
        .collect();
    render(&RunPage {
        run_id: run.id,
        case_id: run.case_id,
        status: run.status.to_string(),
        steps: run.steps,
        tool_calls: run.tool_calls,
        events,
        parent_run_id,
        children,
    })
}

#[derive(Template)]
#[template(path = "reconcile.html")]
struct ReconcilePage {
    csrf: String,
    summary: Option<String>,
    sections: Vec<(&'static str, usize, String)>,
}

fn reconcile_view(
    csrf: String,
    report: Option<crate::reconcile::ReconcileReport>,
) -> ReconcilePage {
    let Some(r) = report else {
        return ReconcilePage {
            csrf,
            summary: None,
            sections: vec![],
        };
    };
    fn section<T: serde::Serialize>(
        title: &'static str,
        items: &[T],
    ) -> (&'static str, usize, String) {
        (
            title,
            items.len(),
            serde_json::to_string_pretty(items).unwrap_or_default(),
        )
    }
    ReconcilePage {
        csrf,
        summary: Some(format!("{} — {}", r.generated_at, r.summary())),
        sections: vec![
            section(
                "Intents without a provider refund",
                &r.intent_without_provider,
            ),
            section(
                "Provider refunds without an intent",
                &r.provider_without_intent,
            ),
            section("Amount mismatches", &r.amount_mismatch),
            section("Status mismatches", &r.status_mismatch),
            section("Unresolved", &r.unresolved),
            section("Resolved by this run", &r.resolved),
            section("Provider errors", &r.errors),
            section("Matched", &r.matched),
        ],
    }
}

/// `GET /console/reconcile`: the last reconciliation report (staff only).
async fn reconcile_page(
    State(state): State<AppState>,
    session: Result<Session, AppError>,
) -> Response {
    let Ok(session) = session else {
        return Redirect::to("/console/login").into_response();
    };
    match crate::reconcile::last_report(&state).await {
        Ok(report) => render(&reconcile_view(session.csrf_token.clone(), report)),
        Err(e) => e.into_response(),
    }
}

async fn reconcile_submit(
    State(state): State<AppState>,
    session: Result<Session, AppError>,
    Form(form): Form<CsrfForm>,
) -> Response {
    let session = match verified(session, &form.csrf) {
        Ok(s) => s,
        Err(page) => return page,
    };
    match crate::reconcile::run(&state).await {
        Ok(report) => render(&reconcile_view(session.csrf_token.clone(), Some(report))),
        Err(e) => e.into_response(),
    }
}

type BillingRow = (String, String, String, bool, String, bool, String, String);

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

#[derive(Deserialize)]
struct HandDecisionForm {
    csrf: String,
    outcome: String,
    reason: String,
    #[serde(default)]
    charge_1: String,
    #[serde(default)]
    amount_1: String,
    #[serde(default)]
    charge_2: String,
    #[serde(default)]
    amount_2: String,
    #[serde(default)]
    charge_3: String,
    #[serde(default)]
    amount_3: String,
    #[serde(default)]
    note: Option<String>,
}

async fn decide_by_hand_submit(
    State(state): State<AppState>,
    session: Result<Session, AppError>,
    Path(id): Path<String>,
    Form(form): Form<HandDecisionForm>,
) -> Response {
    let session = match verified(session, &form.csrf) {
        Ok(s) => s,
        Err(page) => return page,
    };
    let manual = hand_decision(&form);
    let result = match manual {
        Ok(mut manual) => {
            // Fill each line's currency from the charge in the case's facts.
            if let Ok(Some(case)) = cases::load_case(&state.db, &id).await {
                let facts: Option<policy_engine::Facts> = case
                    .facts
                    .as_deref()
                    .and_then(|f| serde_json::from_str(f).ok());
                for r in &mut manual.refunds {
                    if let Some(c) = facts
                        .iter()
                        .flat_map(|f| f.orders.iter())
                        .flat_map(|o| o.charges.iter())
                        .find(|c| c.id == r.charge_id)
                    {
                        r.currency = c.amount.currency();
                    }
                }
            }
            crate::shadow_live::decide_by_hand(&state, &session.staff, &id, manual).await
        }
        Err(e) => Err(e),
    };
    match result {
        Ok(_) => Redirect::to(&format!("/console/cases/{id}")).into_response(),
        Err(e) => with_status(
            e.status(),
            case_page_response(&state, &session, &id, Some(e.public_message())).await,
        ),
    }
}

/// The form's decision; each refund line's currency is filled from its charge later.
fn hand_decision(form: &HandDecisionForm) -> Result<crate::shadow_live::ManualDecision, AppError> {
    let outcome = parse_plain(&form.outcome)
        .map_err(|e| AppError::bad_request("invalid_outcome", e.to_string()))?;
    let reason = parse_plain(&form.reason)
        .map_err(|e| AppError::bad_request("invalid_reason", e.to_string()))?;
    let refunds = [
        (&form.charge_1, &form.amount_1),
        (&form.charge_2, &form.amount_2),
        (&form.charge_3, &form.amount_3),
    ]
    .into_iter()
    .filter(|(charge, _)| !charge.trim().is_empty())
    .map(|(charge, amount)| crate::replay::RefundRecord {
        charge_id: charge.trim().to_string(),
        amount: amount.trim().to_string(),
        currency: policy_engine::Currency::CNY,
    })
    .collect();
    Ok(crate::shadow_live::ManualDecision {
        outcome,
        reason,
        refunds,
        note: form.note.clone(),
    })
}

#[derive(Template)]
#[template(path = "shadow.html")]
struct ShadowPage {
    report: crate::shadow_live::LiveShadowReport,
    outcome_pct: String,
    exact_pct: String,
    chart: String,
    outcomes: Vec<&'static str>,
    matrix: Vec<(&'static str, Vec<usize>)>,
    disagreements: Vec<(String, String, String)>,
}

/// `GET /console/shadow`: live shadow mode's agreement over time, confusion matrix and
/// disagreements (staff only).
async fn shadow_page(
    State(state): State<AppState>,
    session: Result<Session, AppError>,
) -> Response {
    if session.is_err() {
        return Redirect::to("/console/login").into_response();
    }
    let report = match crate::shadow_live::report(&state.db).await {
        Ok(r) => r,
        Err(e) => return e.into_response(),
    };
    let outcomes: Vec<&'static str> = crate::replay::CaseOutcome::ALL
        .iter()
        .map(|o| o.as_str())
        .collect();
    let matrix = outcomes
        .iter()
        .map(|h| {
            (
                *h,
                outcomes
                    .iter()
                    .map(|a| {
                        report
                            .confusion
                            .get(*h)
                            .and_then(|r| r.get(*a))
                            .copied()
                            .unwrap_or(0)
                    })
                    .collect(),
            )
        })
        .collect();
    let text = |v: &crate::replay::CaseVerdict| {
        let refunds: Vec<String> = v
            .refunds
            .iter()
            .map(|r| format!("{} {} {}", r.charge_id, r.amount, r.currency))
            .collect();
        format!(
            "{} ({}) {}",
            v.outcome.as_str(),
            serde_plain(&v.reason),
            refunds.join(", ")
        )
    };
    let disagreements = report
        .disagreements
        .iter()
        .map(|p| (p.case_id.clone(), text(&p.human), text(&p.agent)))
        .collect();
    render(&ShadowPage {
        outcome_pct: format!("{:.1}%", report.outcome_agreement * 100.0),
        exact_pct: format!("{:.1}%", report.exact_agreement * 100.0),
        chart: crate::shadow_live::agreement_chart(&report.by_day),
        outcomes,
        matrix,
        disagreements,
        report,
    })
}
