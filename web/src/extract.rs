//! Extractors of the web edge: the JSON body with the API's error shape, and who is
//! asking (`Authed<Principal>`, `Authed<Session>`: the types are `desk::auth`'s, which knows
//! no HTTP; reading them off a request is this crate's).

use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::Json;
use desk::error::ErrorCode;

use crate::access::Caller;
use crate::error::{AppError, AppResult};
use crate::state::AppState;
use desk::auth::{constant_time_eq, Principal, Session};

/// Who is asking, read off a request the access layer let through: `Authed<Principal>`
/// or `Authed<Session>` in a handler's arguments. A wrapper because the types belong to
/// `desk::auth` and the extractor trait to axum: neither is this crate's to join directly.
pub struct Authed<T>(pub T);

/// JSON body extractor whose failures use the API's error shape.
pub struct ApiJson<T>(pub T);

impl<S, T> FromRequest<S> for ApiJson<T>
where
    T: serde::de::DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = AppError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        match Json::<T>::from_request(req, state).await {
            Ok(Json(value)) => Ok(ApiJson(value)),
            Err(JsonRejection::MissingJsonContentType(_)) => Err(AppError::bad_request(
                ErrorCode::UnsupportedMediaType,
                "send the body as application/json",
            )),
            Err(JsonRejection::JsonSyntaxError(e)) => {
                Err(AppError::bad_request(ErrorCode::InvalidJson, e.body_text()))
            }
            Err(JsonRejection::JsonDataError(e)) => {
                Err(AppError::bad_request(ErrorCode::InvalidBody, e.body_text()))
            }
            Err(e) => Err(AppError::bad_request(ErrorCode::InvalidBody, e.body_text())),
        }
    }
}

pub fn cookie<'a>(parts: &'a Parts, name: &str) -> Option<&'a str> {
    cookie_header(&parts.headers, name)
}

/// The value of cookie `name` in a request's headers.
pub fn cookie_header<'a>(headers: &'a axum::http::HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(axum::http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

/// The token of an `Authorization: Bearer …` header.
pub fn bearer(parts: &Parts) -> Option<&str> {
    bearer_header(&parts.headers)
}

/// The token of an `Authorization: Bearer …` header among `headers`.
pub fn bearer_header(headers: &axum::http::HeaderMap) -> Option<&str> {
    headers
        .get(axum::http::header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .strip_prefix("Bearer ")
        .map(str::trim)
}

/// The caller `web::gate::check` identified for this request.
fn caller(parts: &Parts) -> AppResult<&Caller> {
    parts
        .extensions
        .get::<Caller>()
        .ok_or_else(AppError::unauthorized)
}

/// The principal of a request the access layer let through. A cookie-authenticated
/// state change must also prove it came from our own pages ([`check_cookie_request`]).
impl FromRequestParts<AppState> for Authed<Principal> {
    type Rejection = AppError;

    async fn from_request_parts(
        parts: &mut Parts,
        _state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let caller = caller(parts)?;
        let principal = caller.principal().ok_or_else(AppError::unauthorized)?;
        if let Some(session) = caller.session() {
            check_cookie_request(parts, Some(&session.csrf_token))?;
        }
        Ok(Authed(principal))
    }
}

/// The header a script sends a session's CSRF token in.
pub const CSRF_HEADER: &str = "x-csrf-token";

/// A browser sends its cookies on requests other sites start, so a state-changing API
/// request authenticated by cookie must prove it came from our own pages: the session's
/// CSRF token in `X-CSRF-Token`, or `Sec-Fetch-Site: same-origin`, or an `Origin` naming
/// this host (docs/spec/invariants.md
/// #12). Bodyless POSTs are no exception. Bearer tokens need neither: a
/// browser never attaches them on its own.
pub fn check_cookie_request(parts: &Parts, csrf_token: Option<&str>) -> AppResult<()> {
    if parts.method.is_safe() {
        return Ok(());
    }
    let sent = parts.headers.get(CSRF_HEADER).and_then(|v| v.to_str().ok());
    if let (Some(sent), Some(expected)) = (sent, csrf_token) {
        if constant_time_eq(sent, expected) {
            return Ok(());
        }
    }
    if origin_matches_host(parts) == Some(true) {
        return Ok(());
    }
    Err(AppError::forbidden(
        "a request signed in by cookie needs the X-CSRF-Token header or a same-origin Origin"
            .into(),
    ))
}

/// Whether a request was started by one of our own pages: the browser's
/// `Sec-Fetch-Site` (which no page can forge) when sent, else whether `Origin` names
/// the host the request was sent to; `None` when the request carries neither (not a
/// browser, or a very old one). Under `Referrer-Policy: no-referrer` browsers send
/// `Origin: null` on POSTs, so `Sec-Fetch-Site` is asked first.
pub fn origin_matches_host(parts: &Parts) -> Option<bool> {
    if let Some(site) = parts.headers.get("sec-fetch-site") {
        return Some(site.as_bytes() == b"same-origin");
    }
    let origin = parts
        .headers
        .get(axum::http::header::ORIGIN)?
        .to_str()
        .ok()?;
    let host = parts
        .headers
        .get(axum::http::header::HOST)
        .and_then(|v| v.to_str().ok());
    let origin_host = origin
        .strip_prefix("https://")
        .or_else(|| origin.strip_prefix("http://"));
    Some(origin_host.is_some() && origin_host == host)
}

/// A staff member's console session, as the access layer identified it.
impl FromRequestParts<AppState> for Authed<Session> {
    type Rejection = AppError;

    async fn from_request_parts(
        parts: &mut Parts,
        _state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        match caller(parts)? {
            Caller::Staff {
                staff,
                session: Some(session),
            } => Ok(Authed(Session {
                staff: staff.clone(),
                csrf_token: session.csrf_token.clone(),
                token: session.token.clone(),
            })),
            _ => Err(AppError::unauthorized()),
        }
    }
}

/// A console page's visitor, signed in or not: the page decides (most send the visitor
/// to the sign-in page). Never rejects.
impl FromRequestParts<AppState> for Authed<Result<Session, AppError>> {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let session = Authed::<Session>::from_request_parts(parts, state).await;
        Ok(Authed(session.map(|Authed(session)| session)))
    }
}

/// The peer address of a request, from `ConnectInfo` (which `serve` installs), for
/// throttling logins per client. Behind a reverse proxy every client shares the proxy's
/// address; forwarded headers are not trusted, since any client can write them.
pub struct ClientAddr(pub String);

impl<S: Send + Sync> FromRequestParts<S> for ClientAddr {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let addr = parts
            .extensions
            .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
            .map(|info| info.0.ip().to_string())
            .unwrap_or_else(|| "unknown".to_string());
        Ok(ClientAddr(addr))
    }
}
