//! The mail channel's HTTP edge: `POST /api/v1/inbound/email`, where a mail
//! server or provider forwards one raw message, and `GET /api/v1/attachments/{id}`, where
//! staff download what a customer attached. What a mail does is `mail::inbound`.

use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{post, MethodRouter};
use axum::Json;

use crate::error::{AppError, AppResult};
use crate::state::AppState;
use desk::error::{DomainError, ErrorCode};
use desk::mail::inbound;
use desk::mail::intake::{InboundOutcome, MAX_MAIL_BYTES};

/// The inbound route, with a body limit of one whole mail (the app's default is 64 KiB).
pub fn inbound_route() -> MethodRouter<AppState> {
    post(post_inbound_email).layer(DefaultBodyLimit::max(MAX_MAIL_BYTES))
}

/// `POST /api/v1/inbound/email` (`Authorization: Bearer $INBOUND_EMAIL_TOKEN`, checked
/// by the access layer): one raw RFC 5322 message as `message/rfc822`. 202 with what it
/// did: `opened`, `appended`, `duplicate` or `ignored` (with `reason`).
#[utoipa::path(post, path = "/api/v1/inbound/email", tag = "mail", security(("bearer" = [])),
    request_body(content = String, description = "one raw RFC 5322 message", content_type = "message/rfc822"),
    responses((status = 202, description = "taken: what the mail did", body = InboundOutcome), crate::error::ApiErrors))]
pub async fn post_inbound_email(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> AppResult<(StatusCode, Json<InboundOutcome>)> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let essence = content_type.split(';').next().unwrap_or("").trim();
    if !essence.eq_ignore_ascii_case("message/rfc822") {
        return Err(DomainError::bad_request(
            ErrorCode::UnsupportedMediaType,
            "send one raw message as Content-Type: message/rfc822",
        )
        .into());
    }
    let outcome = inbound::take(state.intake(), &body, "api", None).await?;
    state.wake.notify_one();
    Ok((StatusCode::ACCEPTED, Json(outcome)))
}

/// `GET /api/v1/attachments/{id}` (staff who read cases): the bytes, always as a
/// download (`Content-Disposition: attachment`, `nosniff`, a sandboxing CSP), whatever
/// the file claims to be: a customer's HTML or SVG is never rendered in our origin.
#[utoipa::path(get, path = "/api/v1/attachments/{id}", tag = "mail", security(("bearer" = [])),
    params(("id" = String, Path, description = "attachment id")),
    responses((status = 200, description = "the file, as a download", content_type = "application/octet-stream", body = Vec<u8>), crate::error::ApiErrors))]
pub async fn get_attachment(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> AppResult<Response> {
    let (line, bytes) = mailbox::attachments::load(&state.db, &id)
        .await?
        .ok_or(DomainError::NotFound("attachment"))?;
    download(&line, bytes)
}

/// A stored file as a download: opaque bytes, `Content-Disposition: attachment`,
/// `nosniff` and a sandboxing CSP, whatever it claims to be (the
/// customer files are served the same way).
pub fn download(
    line: &mailbox::attachments::AttachmentLine,
    bytes: Vec<u8>,
) -> AppResult<Response> {
    let filename = mail_message::parse::safe_filename(&line.filename);
    let ascii: String = filename
        .chars()
        .map(|c| {
            if c.is_ascii_graphic() || c == ' ' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let disposition = format!(
        "attachment; filename=\"{ascii}\"; filename*=UTF-8''{}",
        percent_encode(&filename)
    );
    let disposition = HeaderValue::from_str(&disposition)
        .map_err(|e| AppError::from(DomainError::Internal(anyhow::anyhow!("disposition: {e}"))))?;
    let mut response = Body::from(bytes).into_response();
    let headers = response.headers_mut();
    // Served as opaque bytes whatever was declared: nothing a customer sent runs here.
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    headers.insert(header::CONTENT_DISPOSITION, disposition);
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("default-src 'none'; sandbox"),
    );
    Ok(response)
}

/// RFC 5987 encoding of a file name.
fn percent_encode(name: &str) -> String {
    name.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'.' | b'-' | b'_' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// `GET /api/v1/customers/{id}/mail` (staff who read cases): the customer's address on
/// record and whether mail to it is held as undeliverable (docs/spec/email.md).
#[utoipa::path(get, path = "/api/v1/customers/{id}/mail", tag = "mail", security(("bearer" = [])),
    params(("id" = String, Path, description = "customer id")),
    responses((status = 200, description = "the address and its mark", body = desk::mail::bounces::CustomerMail), crate::error::ApiErrors))]
pub async fn get_customer_mail(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> AppResult<Json<desk::mail::bounces::CustomerMail>> {
    Ok(Json(
        desk::mail::bounces::customer_mail(&state.db, &id).await?,
    ))
}

/// `DELETE /api/v1/customers/{id}/mail/undeliverable` (staff who work cases): clears the
/// mark, so mail goes to the address again; audited. 200 with the address as it is now.
#[utoipa::path(delete, path = "/api/v1/customers/{id}/mail/undeliverable", tag = "mail", security(("bearer" = [])),
    params(("id" = String, Path, description = "customer id")),
    responses((status = 200, description = "cleared: the address, no mark", body = desk::mail::bounces::CustomerMail), crate::error::ApiErrors))]
pub async fn delete_undeliverable(
    State(state): State<AppState>,
    Path(id): Path<String>,
    crate::extract::Authed(principal): crate::extract::Authed<desk::auth::Principal>,
) -> AppResult<Json<desk::mail::bounces::CustomerMail>> {
    let staff = principal.staff()?;
    let now = desk::clock::Clock::now_ms(state.clock.as_ref());
    desk::mail::bounces::clear(&state.db, &staff.id, &id, now).await?;
    Ok(Json(
        desk::mail::bounces::customer_mail(&state.db, &id).await?,
    ))
}
