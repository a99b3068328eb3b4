//! The customer's pages: signing in from a single-use link, the ticket list, a ticket
//! (its messages, its case's status and refunds), writing to it, withdrawing it.

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use serde::Deserialize;

use crate::access::Caller;
use crate::error::{status_of, AppError};
use crate::state::AppState;
use desk::auth::{self, Principal};
use desk::customer::{self, TicketView};
use desk::error::DomainError;
use desk::replies::{self, Language, PageText};
use desk::tickets::{self};

use super::common::{
    browser_choice, browser_language, cross_site_refused, customer_error_page, has_csrf, or_page,
    redirect_with_cookie, render, with_status, CsrfForm, FormSession, SameOrigin, Verified,
};

impl FormSession for CustomerSession {
    fn csrf(&self) -> &str {
        &self.csrf_token
    }
    // No session, or not its form: the customer is not known here, so the browser's
    // language speaks (docs/spec/interfaces.md, "Pages").
    fn missing(headers: &axum::http::HeaderMap) -> Response {
        let lang = browser_language(headers);
        let t = replies::page_text(lang);
        customer_error_page(StatusCode::UNAUTHORIZED, lang, t.open_from_link)
    }
    fn refused(headers: &axum::http::HeaderMap, status: StatusCode, _: &str) -> Response {
        let lang = browser_language(headers);
        customer_error_page(status, lang, &replies::form_expired(lang))
    }
}

#[derive(Template)]
#[template(path = "ticket.html")]
pub(super) struct TicketPage {
    ticket: TicketView,
    /// What the customer typed, kept when their message was refused.
    draft: String,
    lang: Language,
    t: &'static PageText,
    csrf: String,
    error: Option<String>,
    /// What the page says once a person has the case (shown live by
    /// `ticket.js` when the case goes to a person while the page is open).
    with_a_person: String,
    /// The files the customer attached, each a download.
    files: Vec<mailbox::attachments::AttachmentLine>,
    /// CSAT: asked once the case is resolved (`csat_asked`), thanked once answered.
    csat_asked: bool,
    csat_answered: bool,
    /// A refused upload's words by the API error's code (`data-error-…` on the form):
    /// the script shows these, never the API's English message.
    upload_errors: Vec<(&'static str, String)>,
}

/// The upload errors `ticket.js` may show, in the page's language, keyed by error code.
fn upload_errors(lang: Language) -> Vec<(&'static str, String)> {
    use desk::error::ErrorCode;
    let codes = [
        ErrorCode::PayloadTooLarge,
        ErrorCode::UnsupportedMediaType,
        ErrorCode::InvalidBody,
        ErrorCode::Internal,
    ];
    codes
        .into_iter()
        .map(|code| {
            (
                code.as_str(),
                replies::upload_error(lang, code, desk::customer_files::MAX_FILE_BYTES),
            )
        })
        .collect()
}

#[derive(Template)]
#[template(path = "tickets.html")]
pub(super) struct TicketListPage {
    tickets: Vec<TicketView>,
    /// What the customer typed, kept when the new ticket was refused.
    draft: String,
    draft_order: String,
    lang: Language,
    t: &'static PageText,
    csrf: String,
    error: Option<String>,
}

/// A customer's browser session (from a sign-in link), with its CSRF token.
pub(super) struct CustomerSession {
    customer_id: String,
    csrf_token: String,
    token: String,
    /// The browser's `Accept-Language` choice, when it names one of ours.
    browser: Option<Language>,
}

/// The customer's browser session, as the access layer identified it.
impl axum::extract::FromRequestParts<AppState> for CustomerSession {
    type Rejection = AppError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        match parts.extensions.get::<Caller>() {
            Some(Caller::Customer {
                customer_id,
                session: Some(session),
            }) => Ok(CustomerSession {
                customer_id: customer_id.clone(),
                csrf_token: session.csrf_token.clone(),
                token: session.token.clone(),
                browser: browser_choice(&parts.headers),
            }),
            _ => Err(AppError::unauthorized()),
        }
    }
}

/// The same session for `Verified` and `SignedIn`, which read a visitor through `Authed`.
impl axum::extract::FromRequestParts<AppState>
    for crate::extract::Authed<Result<CustomerSession, AppError>>
{
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        Ok(crate::extract::Authed(
            CustomerSession::from_request_parts(parts, state).await,
        ))
    }
}

impl CustomerSession {
    fn principal(&self) -> Principal {
        Principal::Customer {
            customer_id: self.customer_id.clone(),
        }
    }

    /// The language of this customer's pages that no ticket decides (their list, a 404):
    /// their tickets', else their browser's, else the team's default.
    async fn language(&self, state: &AppState) -> Result<Language, DomainError> {
        let asked = tickets::PageLanguage {
            link: None,
            customer_id: Some(&self.customer_id),
            browser: self.browser,
            default: state.default_language,
        };
        tickets::page_language(&state.db, asked).await
    }
}

pub(super) async fn tickets_page(
    State(state): State<AppState>,
    headers: axum::http::HeaderMap,
    session: Result<CustomerSession, AppError>,
) -> Response {
    let Ok(session) = session else {
        return open_from_link_page(&headers);
    };
    ticket_list_response(&state, &session, None).await
}

/// A refused form: the error, and what the customer typed so nothing is lost.
pub(super) struct Refused<'a> {
    error: &'a DomainError,
    text: &'a str,
    order_id: &'a str,
}

impl<'a> Refused<'a> {
    /// A refused action that carried no text (withdraw, talk to a person).
    fn only(error: &'a DomainError) -> Refused<'a> {
        Refused {
            error,
            text: "",
            order_id: "",
        }
    }
}

pub(super) async fn ticket_list_response(
    state: &AppState,
    session: &CustomerSession,
    refused: Option<Refused<'_>>,
) -> Response {
    let lang = match session.language(state).await {
        Ok(lang) => lang,
        Err(e) => return AppError::from(e).into_response(),
    };
    match customer::customer_tickets(&state.db, &session.customer_id).await {
        Ok(list) => render(&TicketListPage {
            tickets: list,
            draft: refused.as_ref().map_or("", |r| r.text).to_string(),
            draft_order: refused.as_ref().map_or("", |r| r.order_id).to_string(),
            lang,
            t: replies::page_text(lang),
            csrf: session.csrf_token.clone(),
            error: refused.map(|r| replies::page_error(lang, r.error.code())),
        }),
        Err(e) => AppError::from(e).into_response(),
    }
}

/// The 404 of a ticket the customer may not see, in the customer's language.
pub(super) async fn ticket_not_found_page(state: &AppState, session: &CustomerSession) -> Response {
    let lang = session
        .language(state)
        .await
        .unwrap_or(state.default_language);
    customer_error_page(StatusCode::NOT_FOUND, lang, replies::ticket_not_found(lang))
}

#[derive(Deserialize)]
pub(super) struct NewTicketForm {
    csrf: String,
    message: String,
    #[serde(default)]
    order_id: Option<String>,
}

pub(super) async fn new_ticket_submit(
    State(state): State<AppState>,
    Verified(session, form): Verified<NewTicketForm, CustomerSession>,
) -> Response {
    let input = customer::NewTicket {
        message: form.message.clone(),
        order_id: form.order_id.clone(),
    };
    match customer::create_ticket(
        &state.db,
        state.clock.as_ref(),
        state.queue(),
        &session.customer_id,
        input,
    )
    .await
    {
        Ok(ticket) => Redirect::to(&format!("/tickets/{}", ticket.id)).into_response(),
        Err(e) => {
            let refused = Refused {
                error: &e,
                text: &form.message,
                order_id: form.order_id.as_deref().unwrap_or(""),
            };
            let page = ticket_list_response(&state, &session, Some(refused)).await;
            with_status(status_of(&e), page)
        }
    }
}

pub(super) async fn ticket_page(
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

pub(super) async fn ticket_page_response(
    state: &AppState,
    session: &CustomerSession,
    id: &str,
    refused: Option<Refused<'_>>,
) -> Response {
    let read = customer::visible_ticket_page(&state.db, &session.principal(), id).await;
    match read {
        Err(DomainError::NotFound(_)) => ticket_not_found_page(state, session).await,
        Ok(customer::TicketPageRead {
            view,
            files,
            csat_answered,
        }) => {
            let resolved = is_resolved(&view);
            render(&TicketPage {
                files,
                lang: view.language,
                t: replies::page_text(view.language),
                draft: refused.as_ref().map_or("", |r| r.text).to_string(),
                error: refused.map(|r| replies::page_error(view.language, r.error.code())),
                with_a_person: replies::person_reply(view.language),
                csrf: session.csrf_token.clone(),
                csat_asked: resolved && !csat_answered,
                csat_answered: resolved && csat_answered,
                upload_errors: upload_errors(view.language),
                ticket: view.with_reply_time(state.reply_targets),
            })
        }
        Err(e) => AppError::from(e).into_response(),
    }
}

#[derive(Deserialize)]
pub(super) struct MessageForm {
    csrf: String,
    text: String,
}

pub(super) async fn message_submit(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Verified(session, form): Verified<MessageForm, CustomerSession>,
) -> Response {
    let result = match customer::visible_ticket(&state.db, &session.principal(), &id).await {
        Ok(ticket) => {
            customer::add_customer_message(
                &state.db,
                state.clock.as_ref(),
                state.queue(),
                &ticket,
                &form.text,
            )
            .await
        }
        Err(e) => Err(e),
    };
    match result {
        Ok(()) => Redirect::to(&format!("/tickets/{id}")).into_response(),
        Err(DomainError::NotFound(_)) => ticket_not_found_page(&state, &session).await,
        Err(e) => {
            let refused = Refused {
                error: &e,
                text: &form.text,
                order_id: "",
            };
            let page = ticket_page_response(&state, &session, &id, Some(refused)).await;
            with_status(status_of(&e), page)
        }
    }
}

/// The ticket a form acts on, if the customer may see it; else the page to answer with.
async fn visible(
    state: &AppState,
    session: &CustomerSession,
    id: &str,
) -> Result<desk::tickets::Ticket, Response> {
    match customer::visible_ticket(&state.db, &session.principal(), id).await {
        Ok(ticket) => Ok(ticket),
        Err(_) => Err(ticket_not_found_page(state, session).await),
    }
}

/// `POST /tickets/{id}/person`: the customer asks to talk to a person.
pub(super) async fn person_submit(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Verified(session, _): Verified<CsrfForm, CustomerSession>,
) -> Response {
    let ticket = or_page!(visible(&state, &session, &id).await);
    match customer::ask_for_person(&state.db, state.clock.as_ref(), &ticket).await {
        Ok(()) => Redirect::to(&format!("/tickets/{id}")).into_response(),
        Err(e) => with_status(
            status_of(&e),
            ticket_page_response(&state, &session, &id, Some(Refused::only(&e))).await,
        ),
    }
}

pub(super) async fn withdraw_submit(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Verified(session, _): Verified<CsrfForm, CustomerSession>,
) -> Response {
    let ticket = or_page!(visible(&state, &session, &id).await);
    match customer::withdraw(&state.db, state.clock.as_ref(), &ticket).await {
        Ok(_) => Redirect::to(&format!("/tickets/{id}")).into_response(),
        Err(e) => ticket_page_response(&state, &session, &id, Some(Refused::only(&e))).await,
    }
}

#[derive(Template)]
#[template(path = "sign_in.html")]
pub(super) struct SignInPage {
    link: String,
    next: String,
    error: Option<String>,
    lang: Language,
    t: &'static PageText,
}

/// The page for a customer page opened without a session, in the browser's language.
pub fn open_from_link_page(headers: &axum::http::HeaderMap) -> Response {
    let lang = browser_language(headers);
    let t = replies::page_text(lang);
    customer_error_page(StatusCode::UNAUTHORIZED, lang, t.open_from_link)
}

#[derive(Deserialize)]
pub(super) struct SignInQuery {
    #[serde(default)]
    link: String,
    #[serde(default)]
    next: Option<String>,
    /// The page's language (`?lang=de`), ahead of the browser's Accept-Language
    ///; a code that is none of ours is ignored.
    #[serde(default)]
    lang: Option<String>,
}

/// Where a sign-in may lead: one of the customer's pages, never another site.
pub(super) fn sign_in_target(next: Option<&str>) -> String {
    match next {
        Some(n) if next_is_acceptable(n) => n.to_string(),
        _ => "/tickets".to_string(),
    }
}

/// A `next` a sign-in may send the browser to: a path of the customer's pages, of
/// visible ASCII only (a CR or LF would split the `Location` header).
fn next_is_acceptable(next: &str) -> bool {
    next.starts_with("/tickets")
        && !next.contains("//")
        && !next.contains('\\')
        && next.bytes().all(|b| b.is_ascii_graphic())
}

/// `GET /sign-in?link=…`: a page whose button POSTs the link back. Opening the link
/// (a GET, which mail scanners and link previews also do) uses nothing up.
pub(super) async fn sign_in_page(
    State(state): State<AppState>,
    headers: axum::http::HeaderMap,
    Query(q): Query<SignInQuery>,
) -> Response {
    let link = q
        .lang
        .as_deref()
        .and_then(|code| code.parse::<Language>().ok());
    // The customer the link names, read without using it up: their tickets' language
    // comes before the browser's (a German customer on an English laptop).
    let now = state.clock.now_ms();
    let customer = match link {
        None if !q.link.is_empty() => auth::sign_in_link_customer(&state.db, &q.link, now)
            .await
            .unwrap_or_default(),
        _ => None,
    };
    let asked = tickets::PageLanguage {
        link,
        customer_id: customer.as_deref(),
        browser: browser_choice(&headers),
        default: state.default_language,
    };
    let lang = match tickets::page_language(&state.db, asked).await {
        Ok(lang) => lang,
        Err(e) => return AppError::from(e).into_response(),
    };
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
pub(super) struct SignInForm {
    link: String,
    #[serde(default)]
    next: Option<String>,
}

/// `POST /sign-in`: uses the link once and starts the customer's browser session.
pub(super) async fn sign_in_submit(
    State(state): State<AppState>,
    headers: axum::http::HeaderMap,
    origin: SameOrigin,
    Form(form): Form<SignInForm>,
) -> Response {
    if !origin.0 {
        return cross_site_refused();
    }
    // Checked before the link is used: a refused sign-in leaves the link unspent.
    if form
        .next
        .as_deref()
        .is_some_and(|n| !n.is_empty() && !next_is_acceptable(n))
    {
        let lang = browser_choice(&headers).unwrap_or(state.default_language);
        let message = replies::page_text(lang).link_not_valid;
        return customer_error_page(StatusCode::BAD_REQUEST, lang, message);
    }
    let now = state.clock.now_ms();
    let customer_id = match auth::redeem_sign_in_link(&state.db, &form.link, now).await {
        Ok(Some(id)) => id,
        Ok(None) => {
            let lang = browser_choice(&headers).unwrap_or(state.default_language);
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
        Err(e) => return AppError::from(e).into_response(),
    };
    // docs/spec/email.md: a mail that did not prove its sender is the customer's once they
    // sign in through the link mailed for it.
    desk::mail::unverified::confirmed_by_link(&state.db, state.queue(), &form.link, now).await;
    match auth::issue_token(&state.db, "session", "customer", &customer_id, now).await {
        Ok((session, _)) => {
            let target = sign_in_target(form.next.as_deref());
            redirect_with_cookie(&state, &target, auth::CUSTOMER_COOKIE, &session, 12 * 3600)
        }
        Err(e) => AppError::from(e).into_response(),
    }
}

/// `POST /sign-out`: ends the customer's browser session.
pub(super) async fn sign_out(
    State(state): State<AppState>,
    Verified(session, _): Verified<CsrfForm, CustomerSession>,
) -> Response {
    if let Err(e) = auth::revoke_token(&state.db, &session.token).await {
        return AppError::from(e).into_response();
    }
    redirect_with_cookie(&state, "/sign-in", auth::CUSTOMER_COOKIE, "", 0)
}

/// `GET /static/ticket.js`: the ticket page's polling script (no inline script: CSP).
pub(super) async fn ticket_script() -> Response {
    super::common::script(include_str!("../../static/ticket.js"))
}

has_csrf!(NewTicketForm, MessageForm);

/// Whether the ticket's case is resolved, when the page asks the CSAT question (until
/// answered) or thanks for the answer.
fn is_resolved(view: &TicketView) -> bool {
    view.case
        .as_ref()
        .and_then(|c| desk::cases::CaseStatus::parse(&c.status).ok())
        .is_some_and(desk::cases::CaseStatus::is_resolved)
}

#[derive(Deserialize)]
pub(super) struct CsatForm {
    csrf: String,
    rating: i64,
    #[serde(default)]
    comment: String,
}

has_csrf!(CsatForm);

/// `POST /tickets/{id}/csat`: the customer's one answer after resolution.
pub(super) async fn csat_submit(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Verified(session, form): Verified<CsatForm, CustomerSession>,
) -> Response {
    let answered = match desk::csat::Answer::new(form.rating, Some(&form.comment)) {
        Ok(answer) => {
            let now = state.clock.now_ms();
            desk::csat::answer(&state.db, &session.principal(), &id, &answer, now).await
        }
        Err(e) => Err(e),
    };
    match answered {
        Ok(()) => Redirect::to(&format!("/tickets/{id}")).into_response(),
        Err(e) => with_status(
            status_of(&e),
            ticket_page_response(&state, &session, &id, Some(Refused::only(&e))).await,
        ),
    }
}
