//! The gate: one middleware over the whole router that applies `web::access`'s table
//! (docs/spec/roles.md). It looks the matched route's [`Rule`] up, identifies the caller
//! once (bearer token, console session or customer session), refuses what the rule does
//! not allow in the surface's own shape (JSON, a JSON-RPC error, a SCIM error, a page or a
//! redirect to sign in), and hands the identified [`Caller`] to the handler in the
//! request's extensions.
//!
//! It sits above the surfaces whose refusals it draws (`pages`, `mcp`, `scim`), so the
//! table itself (`access`) stays below them all. What it does not decide: everything the
//! table does not say (`access::decide` is the verdict; record rules stay with the domain).

use axum::extract::{MatchedPath, Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};

use crate::access::{
    decide, AccessTable, BrowserSession, Caller, Refusal, RefusedByAccess, Rule, Surface,
};
use crate::error::AppError;
use crate::state::AppState;
use desk::auth::{self, Principal, CUSTOMER_COOKIE, SESSION_COOKIE};

/// The middleware: the route's rule, the caller, the verdict.
pub async fn check(
    State((state, table)): State<(AppState, AccessTable)>,
    mut request: Request,
    next: Next,
) -> Response {
    let Some(path) = request
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_owned())
    else {
        // No route matched: the fallback answers 404.
        return next.run(request).await;
    };
    let surface = Surface::of(&path);
    let rule = match table.rule(request.method(), &path) {
        Ok(rule) => rule,
        Err(None) => {
            tracing::error!(route = %path, "a route without an access rule was refused");
            let refusal = Refusal::Forbidden("this route has no access rule".into());
            return refuse(surface, &refusal, request).await;
        }
        Err(Some(allowed)) => return method_not_allowed(&allowed),
    };
    if rule == Rule::Metrics {
        return match metrics_token_matches(&state, &request) {
            true => next.run(request).await,
            false => refuse(surface, &Refusal::SignIn, request).await,
        };
    }
    if rule == Rule::InboundMail {
        return match inbound_token_matches(&state, &request) {
            true => next.run(request).await,
            false => refuse(surface, &Refusal::SignIn, request).await,
        };
    }
    if matches!(rule, Rule::Anyone | Rule::ProviderSigned) {
        request.extensions_mut().insert(Caller::Anonymous);
        return next.run(request).await;
    }
    // The body is not `Sync`: identify from the parts alone, then put the request back.
    let (parts, body) = request.into_parts();
    let caller = match identify(&state, &parts.headers, surface).await {
        Ok(caller) => caller,
        Err(e) => return e.into_response(),
    };
    let mut request = Request::from_parts(parts, body);
    match decide(rule, &caller) {
        Ok(()) => {
            request.extensions_mut().insert(caller);
            next.run(request).await
        }
        Err(refusal) => {
            if let Caller::Staff { staff, .. } = &caller {
                tracing::warn!(route = %path, staff_id = %staff.id, role = staff.role.as_str(), "refused by role");
            }
            request.extensions_mut().insert(caller);
            refuse(surface, &refusal, request).await
        }
    }
}

/// Who the request's credentials name. A bearer token wins over cookies and must be an
/// API token: a browser session's cookie value sent as a bearer token names nobody
/// (a cookie-authenticated request must pass the CSRF checks a bearer request skips).
/// Console pages read the staff session cookie, customer pages the customer's, the
/// API either.
async fn identify(
    state: &AppState,
    headers: &axum::http::HeaderMap,
    surface: Surface,
) -> Result<Caller, AppError> {
    let now = state.clock.now_ms();
    if matches!(surface, Surface::Api | Surface::Mcp | Surface::Scim) {
        if let Some(token) = crate::extract::bearer_header(headers) {
            return Ok(match auth::resolve(&state.db, token, now).await? {
                Some(resolved) if resolved.csrf_token.is_none() => {
                    caller_of(resolved.principal, None)
                }
                _ => Caller::Anonymous,
            });
        }
    }
    let cookies: &[&str] = match surface {
        Surface::Console => &[SESSION_COOKIE],
        Surface::CustomerPage => &[CUSTOMER_COOKIE],
        Surface::Api => &[SESSION_COOKIE, CUSTOMER_COOKIE],
        Surface::Mcp | Surface::Scim => &[],
    };
    for name in cookies {
        let Some(token) = crate::extract::cookie_header(headers, name) else {
            continue;
        };
        if let Some(resolved) = auth::resolve(&state.db, token, now).await? {
            // Only a browser session (it has a CSRF token) is a cookie credential.
            if let Some(csrf_token) = resolved.csrf_token {
                let session = BrowserSession {
                    token: token.to_string(),
                    csrf_token,
                };
                return Ok(caller_of(resolved.principal, Some(session)));
            }
        }
    }
    Ok(Caller::Anonymous)
}

fn caller_of(principal: Principal, session: Option<BrowserSession>) -> Caller {
    match principal {
        Principal::Staff(staff) => Caller::Staff { staff, session },
        Principal::Customer { customer_id } => Caller::Customer {
            customer_id,
            session,
        },
        Principal::Service(service) => Caller::Service(service),
    }
}

/// `/metrics` with `METRICS_TOKEN` set needs it as the bearer token (compared in
/// constant time); without one it is open, as `/healthz` is.
fn metrics_token_matches(state: &AppState, request: &Request) -> bool {
    match state.metrics_token.as_deref() {
        None => true,
        Some(expected) => crate::extract::bearer_header(request.headers())
            .is_some_and(|sent| auth::constant_time_eq(sent, expected)),
    }
}

/// `INBOUND_EMAIL_TOKEN` as the bearer token (compared in constant time); with none set,
/// nobody passes (a mail server, not a person).
fn inbound_token_matches(state: &AppState, request: &Request) -> bool {
    match state.channels.mail.inbound_token.as_deref() {
        None => false,
        Some(expected) => crate::extract::bearer_header(request.headers())
            .is_some_and(|sent| auth::constant_time_eq(sent, expected)),
    }
}

/// A refusal in the surface's own shape, marked [`RefusedByAccess`].
async fn refuse(surface: Surface, refusal: &Refusal, request: Request) -> Response {
    let mut response = match (surface, refusal) {
        (Surface::Api, Refusal::SignIn) => AppError::unauthorized().into_response(),
        (Surface::Api, Refusal::Forbidden(why)) => AppError::forbidden(why.clone()).into_response(),
        (Surface::Mcp, refusal) => crate::mcp::refused_by_access(refusal, request).await,
        (Surface::Scim, Refusal::SignIn) => crate::scim::error(
            StatusCode::UNAUTHORIZED,
            None,
            "a SCIM bearer token is required",
        ),
        (Surface::Scim, Refusal::Forbidden(why)) => {
            crate::scim::error(StatusCode::FORBIDDEN, None, why)
        }
        (Surface::Console, Refusal::SignIn) => Redirect::to("/console/login").into_response(),
        (Surface::Console, Refusal::Forbidden(why)) => {
            crate::pages::error_page(StatusCode::FORBIDDEN, &format!("Not allowed: {why}."))
        }
        (Surface::CustomerPage, Refusal::SignIn) => {
            crate::pages::open_from_link_page(request.headers())
        }
        (Surface::CustomerPage, Refusal::Forbidden(why)) => {
            crate::pages::error_page(StatusCode::FORBIDDEN, &format!("Not allowed: {why}."))
        }
    };
    response.extensions_mut().insert(RefusedByAccess);
    response
}

fn method_not_allowed(allowed: &[Method]) -> Response {
    let allow = allowed
        .iter()
        .map(Method::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    let mut response = StatusCode::METHOD_NOT_ALLOWED.into_response();
    if let Ok(value) = HeaderValue::from_str(&allow) {
        response.headers_mut().insert(header::ALLOW, value);
    }
    response
}
