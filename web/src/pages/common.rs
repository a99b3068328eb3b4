//! What every page shares: rendering, error pages, cookies, the CSRF check of a form,
//! and the same-origin check of a state-changing request.

use askama::Template;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{Html, IntoResponse, Redirect, Response};
use serde::Deserialize;

use crate::access::Capability;
use crate::error::AppError;
use crate::state::AppState;
use desk::auth::{constant_time_eq, Session};
use desk::replies::Language;

pub fn render(t: &impl Template) -> Response {
    match t.render() {
        Ok(html) => Html(html).into_response(),
        Err(e) => AppError::from(anyhow::anyhow!("template: {e}")).into_response(),
    }
}

/// A script file of ours (the CSP allows scripts from our own files only).
pub fn script(body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (header::CACHE_CONTROL, "public, max-age=300"),
        ],
        body,
    )
        .into_response()
}

/// A moment for a page (times in the viewer's zone): `<time>` with the RFC 3339
/// moment and, as its text, the moment in UTC words (`2 Dec 2026, 07:10 UTC`), which
/// `/static/time.js` rewrites in the viewer's zone. Built from the parsed moment only, so
/// nothing of the input reaches the page unescaped; text that is no RFC 3339 moment is
/// shown escaped as it is. Templates write it with `|safe`.
pub fn time_tag(at: &str) -> String {
    use time::format_description::well_known::Rfc3339;
    let Ok(moment) = time::OffsetDateTime::parse(at, &Rfc3339) else {
        return escaped(at);
    };
    let utc = moment.to_offset(time::UtcOffset::UTC);
    let machine = utc.format(&Rfc3339).unwrap_or_default();
    format!("<time datetime=\"{machine}\">{}</time>", utc_words(utc))
}

/// A moment in UTC words (`2 Dec 2026, 07:10 UTC`), for text no script rewrites (a
/// sentence that names when something happened): it says its zone.
pub fn utc_words(moment: time::OffsetDateTime) -> String {
    let utc = moment.to_offset(time::UtcOffset::UTC);
    format!(
        "{} {} {}, {:02}:{:02} UTC",
        utc.day(),
        &utc.month().to_string()[..3],
        utc.year(),
        utc.hour(),
        utc.minute()
    )
}

pub fn error_page(status: StatusCode, message: &str) -> Response {
    styled_error(status, "en", message, ("/console", "Back to the queue"))
}

/// A customer page's error, in `lang`, with the way back to their tickets.
pub fn customer_error_page(status: StatusCode, lang: Language, message: &str) -> Response {
    let back = ("/tickets", desk::replies::page_text(lang).my_tickets);
    styled_error(status, lang.as_str(), message, back)
}

#[derive(Template)]
#[template(path = "error.html")]
struct ErrorPage<'a> {
    status: String,
    lang: &'a str,
    message: &'a str,
    back_href: &'a str,
    back_label: &'a str,
}

/// An error as a page of the product: the site's layout, what went wrong,
/// and a link back — never a bare line of text.
fn styled_error(status: StatusCode, lang: &str, message: &str, back: (&str, &str)) -> Response {
    let page = ErrorPage {
        status: status.to_string(),
        lang,
        message,
        back_href: back.0,
        back_label: back.1,
    };
    match page.render() {
        Ok(html) => (status, Html(html)).into_response(),
        Err(_) => (status, Html(escaped(message))).into_response(),
    }
}

/// The browser's `Accept-Language` choice, `None` when it names none of ours.
pub(super) fn browser_choice(headers: &axum::http::HeaderMap) -> Option<Language> {
    Language::accepted(
        headers
            .get(header::ACCEPT_LANGUAGE)
            .and_then(|v| v.to_str().ok()),
    )
}

/// The language of a page shown before the customer is known: their browser's.
pub(super) fn browser_language(headers: &axum::http::HeaderMap) -> Language {
    Language::from_accept_language(
        headers
            .get(header::ACCEPT_LANGUAGE)
            .and_then(|v| v.to_str().ok()),
    )
}

/// The answer to a path no route serves: a styled 404 leading back to the customer's
/// tickets or the console, by where the path points.
pub async fn page_not_found(uri: axum::http::Uri, headers: axum::http::HeaderMap) -> Response {
    if uri.path().starts_with("/console") {
        return error_page(StatusCode::NOT_FOUND, "There is no such page.");
    }
    let lang = browser_language(&headers);
    let message = desk::replies::page_text(lang).no_such_page;
    customer_error_page(StatusCode::NOT_FOUND, lang, message)
}

/// The console's header on every staff page: the same links, who is signed
/// in, and Log out (a CSRF-carrying form). `here` marks the page the viewer is on.
pub(super) struct Nav {
    pub email: String,
    pub role: &'static str,
    pub csrf: String,
    pub here: &'static str,
    staff_role: desk::auth::StaffRole,
}

/// The console's pages as (path, label, what reading it needs), in the header's order.
const PAGES: [(&str, &str, Capability); 13] = [
    ("/console", "Queue", Capability::ReadCases),
    ("/console/shadow", "Shadow", Capability::ReadCases),
    ("/console/csat", "Satisfaction", Capability::ReadCases),
    ("/console/qa", "QA", Capability::ReviewDecisions),
    ("/console/policies", "Policies", Capability::ReadPolicies),
    ("/console/replies", "Replies", Capability::ReadCases),
    ("/console/reconcile", "Reconcile", Capability::ReadCases),
    ("/console/charges", "Charges", Capability::ReadCases),
    ("/console/audit", "Audit", Capability::ReadCases),
    ("/console/rollout", "Rollout", Capability::Administer),
    ("/console/staff", "Staff", Capability::Administer),
    ("/console/data", "Customer data", Capability::Administer),
    ("/console/me/tokens", "My tokens", Capability::ReadPolicies),
];

impl Nav {
    pub fn of(session: &Session, here: &'static str) -> Nav {
        Nav {
            email: session.staff.email.clone(),
            role: session.staff.role.as_str(),
            csrf: session.csrf_token.clone(),
            here,
            staff_role: session.staff.role,
        }
    }

    /// Whether the header offers the search box (it searches cases: those who read them).
    pub fn may_search(&self) -> bool {
        Capability::ReadCases.allows(self.staff_role)
    }

    /// The pages this staff member may open, as (path, label): the access table's
    /// capabilities, so the header never offers a page that would refuse them.
    pub fn links(&self) -> Vec<(&'static str, &'static str)> {
        PAGES
            .iter()
            .filter(|(_, _, needs)| needs.allows(self.staff_role))
            .map(|(path, label, _)| (*path, *label))
            .collect()
    }
}

/// Where a staff member lands after signing in: the queue, or for a role that reads no
/// cases (a policy author) the policies.
pub(super) fn home_of(role: desk::auth::StaffRole) -> &'static str {
    PAGES
        .iter()
        .find(|(_, _, needs)| needs.allows(role))
        .map_or("/console/policies", |(path, _, _)| *path)
}

/// `text` escaped for HTML by askama's own escaper (the one every template uses), for the
/// two places that write a fragment without a template: a `<time>` tag's fallback and
/// the error page's fallback when its template fails; the rollout page's line of who set a
/// mode when.
pub(super) fn escaped(text: &str) -> String {
    askama::filters::escape(text, askama::filters::Html)
        .map(|safe| safe.to_string())
        .unwrap_or_default()
}

pub(super) fn set_cookie(
    state: &AppState,
    name: &str,
    value: &str,
    max_age_secs: i64,
) -> HeaderValue {
    let secure = if state.secure_cookies { "; Secure" } else { "" };
    HeaderValue::from_str(&format!(
        "{name}={value}; Path=/; HttpOnly; SameSite=Lax; Max-Age={max_age_secs}{secure}"
    ))
    .expect("cookie values are hex tokens and always valid header text")
}

/// A redirect to `to` that sets (or, with an empty value and age 0, clears) a cookie.
pub(super) fn redirect_with_cookie(
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

/// `let session = or_page!(verified(session, &form.csrf));`: the `Ok` value of a
/// `Result<T, Response>`, or the handler returns the `Err` page at once (a `?` for
/// handlers that answer `Response`: the sign-in redirect, an expired form, a role refused).
macro_rules! or_page {
    ($result:expr) => {
        match $result {
            Ok(value) => value,
            Err(page) => return page,
        }
    };
}
pub(super) use or_page;

/// A browser session whose forms carry a CSRF token.
pub(super) trait FormSession: Sized {
    fn csrf(&self) -> &str;
    /// The page shown when there is no session (`headers`: the request's, for the
    /// language a customer's page speaks).
    fn missing(headers: &axum::http::HeaderMap) -> Response;
    /// The page shown when the form is refused (expired, another site's).
    fn refused(headers: &axum::http::HeaderMap, status: StatusCode, message: &str) -> Response;
}

impl FormSession for Session {
    fn csrf(&self) -> &str {
        &self.csrf_token
    }
    fn missing(_: &axum::http::HeaderMap) -> Response {
        Redirect::to("/console/login").into_response()
    }
    fn refused(_: &axum::http::HeaderMap, status: StatusCode, message: &str) -> Response {
        error_page(status, message)
    }
}

/// The session of a state-changing form, if there is one and the form's CSRF token is
/// its own (compared in constant time); else the page to answer with.
#[allow(
    clippy::result_large_err,
    reason = "the error is the page to answer with, an axum Response: built once per request, never carried"
)]
pub(super) fn verified<S: FormSession>(
    session: Result<S, AppError>,
    form_csrf: &str,
) -> Result<S, Response> {
    verified_from(&axum::http::HeaderMap::new(), session, form_csrf)
}

/// [`verified`], the refusal page chosen by the request's `headers`.
#[allow(
    clippy::result_large_err,
    reason = "the error is the page to answer with, an axum Response: built once per request, never carried"
)]
pub(super) fn verified_from<S: FormSession>(
    headers: &axum::http::HeaderMap,
    session: Result<S, AppError>,
    form_csrf: &str,
) -> Result<S, Response> {
    let session = session.map_err(|_| S::missing(headers))?;
    if !constant_time_eq(form_csrf, session.csrf()) {
        return Err(S::refused(
            headers,
            StatusCode::FORBIDDEN,
            "The form expired; reload the page and try again.",
        ));
    }
    Ok(session)
}

/// Re-renders a page with a failed action's message, under the failure's status.
pub(super) fn with_status(status: StatusCode, mut page: Response) -> Response {
    *page.status_mut() = status;
    page
}

/// Whether a form post came from our own pages (`crate::extract::origin_matches_host`; a request
/// with neither `Sec-Fetch-Site` nor `Origin` is not a browser's and passes). A sign-in
/// form posted from another site would sign the victim in as the attacker (login
/// CSRF).
pub(super) struct SameOrigin(pub(super) bool);

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for SameOrigin {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _state: &S,
    ) -> Result<Self, Self::Rejection> {
        Ok(SameOrigin(
            crate::extract::origin_matches_host(parts) != Some(false),
        ))
    }
}

pub(super) fn cross_site_refused() -> Response {
    error_page(
        StatusCode::FORBIDDEN,
        "This form was sent from another site; open the page here and try again.",
    )
}

#[derive(Deserialize)]
pub(super) struct CsrfForm {
    pub(super) csrf: String,
}

/// A console or customer form: it carries the session's CSRF token.
pub(super) trait HasCsrf {
    fn csrf(&self) -> &str;
}

/// Declares that each named form's `csrf` field is its CSRF token.
macro_rules! has_csrf {
    ($($form:ty),* $(,)?) => {$(
        impl $crate::pages::common::HasCsrf for $form {
            fn csrf(&self) -> &str {
                &self.csrf
            }
        }
    )*};
}
pub(super) use has_csrf;

has_csrf!(CsrfForm);

/// A page's visitor with a session: [`FormSession::missing`] (the sign-in page) for
/// anyone without one.
pub(super) struct SignedIn<S = Session>(pub S);

impl<S> axum::extract::FromRequestParts<AppState> for SignedIn<S>
where
    S: FormSession + Send,
    crate::extract::Authed<Result<S, AppError>>:
        axum::extract::FromRequestParts<AppState, Rejection = std::convert::Infallible>,
{
    type Rejection = Response;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &AppState,
    ) -> Result<Self, Response> {
        let Ok(crate::extract::Authed(session)) =
            crate::extract::Authed::<Result<S, AppError>>::from_request_parts(parts, state).await;
        session
            .map(SignedIn)
            .map_err(|_| S::missing(&parts.headers))
    }
}

/// A state-changing form and the session that posted it, the form's CSRF token checked
/// against the session's: [`verified`] as an extractor. It refuses with the page
/// `verified` answers with (the sign-in page, or "the form expired").
pub(super) struct Verified<F, S = Session>(pub S, pub F);

impl<F, S> axum::extract::FromRequest<AppState> for Verified<F, S>
where
    F: serde::de::DeserializeOwned + HasCsrf + Send,
    S: FormSession + Send,
    crate::extract::Authed<Result<S, AppError>>:
        axum::extract::FromRequestParts<AppState, Rejection = std::convert::Infallible>,
{
    type Rejection = Response;

    async fn from_request(req: axum::extract::Request, state: &AppState) -> Result<Self, Response> {
        use axum::extract::FromRequestParts;
        let (mut parts, body) = req.into_parts();
        let Ok(crate::extract::Authed(session)) =
            crate::extract::Authed::<Result<S, AppError>>::from_request_parts(&mut parts, state)
                .await;
        let headers = parts.headers.clone();
        let request = axum::extract::Request::from_parts(parts, body);
        let axum::Form(form) = axum::Form::<F>::from_request(request, state)
            .await
            .map_err(IntoResponse::into_response)?;
        let session = verified_from(&headers, session, form.csrf())?;
        Ok(Verified(session, form))
    }
}

#[cfg(test)]
mod tests {
    use super::time_tag;

    #[test]
    fn a_moment_becomes_a_time_tag_in_utc_words_whatever_offset_it_was_written_in() {
        assert_eq!(
            time_tag("2026-12-02T16:10:05.123+09:00"),
            "<time datetime=\"2026-12-02T07:10:05.123Z\">2 Dec 2026, 07:10 UTC</time>"
        );
    }

    #[test]
    fn text_that_is_no_moment_is_shown_escaped_and_never_as_markup() {
        assert_eq!(
            time_tag("<script>x</script>"),
            "&#60;script&#62;x&#60;/script&#62;"
        );
    }
}
