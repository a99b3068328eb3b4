//! `GET /api/v1/customers/{id}/export` and `POST /api/v1/customers/{id}/erase` (admin,
//! docs/spec/roles.md: "retention, erasure"): a customer's data handed out as one JSON
//! document, streamed; or erased, audited. The rules are in `customer_data`.

use crate::extract::Authed;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::Json;
use tokio::io::AsyncReadExt;

use crate::error::AppResult;
use crate::state::AppState;
use ::customer_data::{self, erase::Erased};
use desk::auth::Principal;
use desk::error::DomainError;

/// Bytes handed to the client at a time (and the pipe between export and response).
const CHUNK: usize = 16 * 1024;

/// `GET /api/v1/customers/{id}/export` (admin): everything held about the customer.
#[utoipa::path(get, path = "/api/v1/customers/{id}/export", tag = "admin", security(("bearer" = [])), params(("id" = String, Path, description = "the customer's id")), responses((status = 200, description = "one JSON document: the customer's rows, table by table", body = ::customer_data::export::ExportDocument, content_type = "application/json"), crate::error::ApiErrors))]
pub async fn get_export(
    State(state): State<AppState>,
    Authed(principal): Authed<Principal>,
    Path(id): Path<String>,
) -> AppResult<Response> {
    principal.staff()?;
    stream_export(state, id).await
}

/// The export as a streamed JSON response (the API's and the console's): 404 for an
/// unknown customer before anything is sent.
pub(crate) async fn stream_export(state: AppState, id: String) -> AppResult<Response> {
    if !desk::onboarding::records::customer_exists(&state.db, &id).await? {
        return Err(DomainError::NotFound("customer").into());
    }
    let disposition = format!("attachment; filename=\"customer-{}.json\"", safe_name(&id));
    let (mut writer, reader) = tokio::io::duplex(CHUNK);
    let now = state.clock.now_ms();
    tokio::spawn(async move {
        if let Err(e) = customer_data::export::export(&state.db, &id, now, &mut writer).await {
            // The body ends early: the client sees a cut document, never a wrong one.
            tracing::error!(error = %e, "customer export failed midway");
        }
    });
    let stream = futures_util::stream::unfold(reader, |mut reader| async move {
        let mut buf = vec![0u8; CHUNK];
        match reader.read(&mut buf).await {
            Ok(0) => None,
            Ok(n) => {
                buf.truncate(n);
                Some((Ok::<_, std::io::Error>(buf), reader))
            }
            Err(e) => Some((Err(e), reader)),
        }
    });
    Ok((
        [
            (header::CONTENT_TYPE, "application/json".to_string()),
            (header::CONTENT_DISPOSITION, disposition),
        ],
        Body::from_stream(stream),
    )
        .into_response())
}

/// The id as a file name: letters, digits, `-` and `_` kept, the rest `_`.
fn safe_name(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// `POST /api/v1/customers/{id}/erase` (admin): the customer's personal data erased,
/// money records kept under a pseudonym; 409 `refund_in_flight` while a refund of theirs
/// is being executed (nothing changes). Harmless twice.
#[utoipa::path(post, path = "/api/v1/customers/{id}/erase", tag = "admin", security(("bearer" = [])), params(("id" = String, Path, description = "the customer's id")), responses((status = 200, description = "what was erased, and the pseudonym kept", body = Erased), crate::error::ApiErrors))]
pub async fn post_erase(
    State(state): State<AppState>,
    Authed(principal): Authed<Principal>,
    Path(id): Path<String>,
) -> AppResult<Json<Erased>> {
    let staff = principal.staff()?;
    let now = state.clock.now_ms();
    Ok(Json(
        customer_data::erase::erase(&state.db, &staff.id, &id, now).await?,
    ))
}
