//! The idempotency layer of payments.md §6.3, for every mutating `/v1` POST.
//!
//! Order of checks:
//! 1. before the layer, nothing stored: auth (the [`ApiKey`] extractor), a key over
//!    255 characters, a malformed body;
//! 2. lookup by (API key, Idempotency-Key): in flight → 409; stored for another
//!    endpoint or other params → 400 `idempotency_error`; stored and equal → replay
//!    the stored status and body byte for byte with `Idempotent-Replayed: true`;
//! 3. param validation, nothing stored;
//! 4. execution in ONE `BEGIN IMMEDIATE` transaction that also writes the key's row
//!    with whatever status resulted (200, business 4xx, or 500).
//!
//! Invariant: a committed side effect always has its stored response, because both
//! are in the same SQLite transaction; a crash can lose only uncommitted work.
//!
//! Fault rules reach this layer as a [`LayerFault`] in the request extensions:
//! `hold_key` latency sleeps while the key is claimed, `expire_key` deletes the stored
//! row before the lookup, and `server_error_after_begin` / `business_error` replace
//! the outcome that is stored (step 4).

use axum::body::Bytes;
use axum::http::header::HeaderValue;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::charges::ChargeRow;
use crate::events::EventRequest;
use crate::faults::{BusinessErrorCode, LayerFault};
use crate::money::{format_major, Currency};
use crate::state::{InFlightGuard, MockState};
use crate::wire::{
    in_flight_conflict, json_response, ApiError, ApiKey, FormParams, RequestId, IDEMPOTENCY_KEY,
    IDEMPOTENT_REPLAYED, STRIPE_SHOULD_RETRY,
};

/// Stripe documents keys of up to 255 characters.
pub const MAX_KEY_LENGTH: usize = 255;

/// A mutating request as it reached the server.
pub struct PostRequest {
    pub api_key: ApiKey,
    pub request_id: RequestId,
    pub path: String,
    pub headers: HeaderMap,
    pub query: Option<String>,
    pub body: Bytes,
    /// A fault rule's instruction for this request, if one fired.
    pub fault: Option<LayerFault>,
}

/// A future borrowed from its arguments (the mutations' executions).
pub(crate) type BoxFuture<'a, T> =
    std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

/// The charge a mutation concerns and the amount it asks for, if any.
pub(crate) type Concerned = (Option<ChargeRow>, Option<i64>);

/// A validated mutation, executed inside the layer's transaction. Its endpoint's module
/// implements it (a refund created: `refunds`; updated or cancelled: `lifecycle`), so
/// this layer names none of them.
pub(crate) trait Mutation: Send + Sync {
    fn execute<'a>(
        &'a self,
        conn: &'a mut sqlx::SqliteConnection,
        state: &'a MockState,
        context: &'a ExecutionContext,
    ) -> BoxFuture<'a, Result<Outcome, sqlx::Error>>;

    /// The charge it concerns and the amount it asks for, if any: what the
    /// `business_error` fault's refusal names.
    fn concerns<'a>(
        &'a self,
        conn: &'a mut sqlx::SqliteConnection,
    ) -> BoxFuture<'a, Result<Concerned, sqlx::Error>>;
}

/// What execution produced: stored under the key and sent to the client.
#[derive(Debug, Clone)]
pub(crate) struct Outcome {
    pub status: StatusCode,
    pub body: String,
    pub refund_id: Option<String>,
}

impl Outcome {
    pub fn error(error: ApiError) -> Self {
        Self {
            status: error.status,
            body: error.body(),
            refund_id: None,
        }
    }
}

/// Facts about the request that executions record (events, refund rows).
#[derive(Debug, Clone)]
pub(crate) struct ExecutionContext {
    pub request_id: String,
    pub idempotency_key: Option<String>,
    pub now: i64,
}

impl ExecutionContext {
    /// `request` of the events this execution emits.
    pub fn event_request(&self) -> EventRequest {
        EventRequest {
            id: Some(self.request_id.clone()),
            idempotency_key: self.idempotency_key.clone(),
        }
    }
}

/// The `business_error` fault: the refusal a real charge in that state would get,
/// for the charge this operation concerns.
async fn forced_business_error(
    conn: &mut sqlx::SqliteConnection,
    operation: &dyn Mutation,
    code: BusinessErrorCode,
) -> Result<Outcome, sqlx::Error> {
    let (charge, requested) = operation.concerns(conn).await?;
    let charge_id = charge.as_ref().map_or("unknown", |c| c.id.as_str());
    let error = match code {
        BusinessErrorCode::ChargeAlreadyRefunded => {
            ApiError::invalid_request(format!("Charge {charge_id} has already been refunded."))
                .with_code("charge_already_refunded")
        }
        BusinessErrorCode::ChargeDisputed => ApiError::invalid_request(format!(
            "Charge {charge_id} has been charged back; cannot issue a refund."
        ))
        .with_code("charge_disputed"),
        BusinessErrorCode::AmountExceeds => {
            let remaining = charge.as_ref().map_or(0, |c| c.remaining());
            let amount = requested.unwrap_or(remaining).max(1);
            // Forced: report a remainder just below the amount when it actually fits.
            let shown_remaining = remaining.min(amount - 1);
            let currency = charge.as_ref().and_then(|c| Currency::parse(&c.currency));
            let major = |minor: i64| match currency {
                Some(currency) => format_major(minor, currency),
                None => minor.to_string(),
            };
            ApiError::invalid_request(format!(
                "Refund amount (${}) is greater than unrefunded amount on charge (${})",
                major(amount),
                major(shown_remaining)
            ))
            .with_param("amount")
        }
    };
    Ok(Outcome::error(error))
}

#[derive(sqlx::FromRow)]
struct StoredKey {
    path: String,
    params: String,
    response_status: i64,
    response_body: String,
    created: i64,
}

/// Runs a POST through the layer; `validate` turns the params into an operation.
pub(crate) async fn run_post<M: Mutation>(
    state: &MockState,
    request: PostRequest,
    validate: impl FnOnce(&FormParams) -> Result<M, ApiError>,
) -> Response {
    // 1. Before the layer.
    let key = match idempotency_key(&request.headers) {
        Ok(key) => key,
        Err(error) => return error.into_response(),
    };
    let params =
        match FormParams::from_post(&request.headers, request.query.as_deref(), &request.body) {
            Ok(params) => params,
            Err(error) => return error.into_response(),
        };
    let canonical = params.canonical();

    // 2. Lookup; the claim is held until this function returns.
    let claim = match key {
        None => None,
        Some(key) => {
            let Some(claim) = InFlightGuard::claim(state, &request.api_key.0, &key) else {
                return in_flight_conflict(&key);
            };
            match &request.fault {
                Some(LayerFault::HoldKey { sleep }) => tokio::time::sleep(*sleep).await,
                Some(LayerFault::ExpireKey) => {
                    if let Err(error) = expire(state, &claim).await {
                        return ApiError::from(error).into_response();
                    }
                }
                _ => {}
            }
            match lookup(state, &claim, &request.path, &canonical).await {
                Ok(Some(response)) => return response,
                Ok(None) => Some(claim),
                Err(error) => return ApiError::from(error).into_response(),
            }
        }
    };

    // 3. Validation: refused requests are not stored.
    let operation = match validate(&params) {
        Ok(operation) => operation,
        Err(error) => return error.into_response(),
    };
    let operation: &dyn Mutation = &operation;

    // 4. Execution and storage, atomically.
    let context = ExecutionContext {
        request_id: request.request_id.0.clone(),
        idempotency_key: claim.as_ref().map(|c| c.key().to_owned()),
        now: state.clock().now(),
    };
    let stored = StoreTarget {
        claim: claim.as_ref(),
        path: &request.path,
        canonical: &canonical,
        context: &context,
    };
    let result = match &request.fault {
        Some(LayerFault::ServerErrorAfterBegin { commit, .. }) => {
            server_error_after_begin(state, operation, &stored, *commit).await
        }
        Some(LayerFault::BusinessError(code)) => {
            business_error(state, operation, &stored, *code).await
        }
        _ => execute_and_store(state, operation, &stored).await,
    };
    state.wake_webhooks();
    match result {
        Ok(outcome) => {
            let mut response = json_response(outcome.status, outcome.body);
            if let Some(LayerFault::ServerErrorAfterBegin {
                should_retry: Some(retry),
                ..
            }) = &request.fault
            {
                let value = if *retry { "true" } else { "false" };
                response
                    .headers_mut()
                    .insert(STRIPE_SHOULD_RETRY, HeaderValue::from_static(value));
            }
            response
        }
        Err(error) => {
            tracing::error!(%error, request_id = %context.request_id, "execution failed");
            let outcome = Outcome::error(ApiError::internal());
            // Execution began, so the 500 is stored too (Stripe replays 500s).
            if stored.claim.is_some() {
                if let Err(error) = store_alone(state, &stored, &outcome).await {
                    tracing::error!(%error, "could not store the 500 response");
                }
            }
            json_response(outcome.status, outcome.body)
        }
    }
}

/// Reads `Idempotency-Key`; `None` when absent or blank.
fn idempotency_key(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    let Some(value) = headers.get(IDEMPOTENCY_KEY) else {
        return Ok(None);
    };
    let key = value
        .to_str()
        .map_err(|_| ApiError::invalid_request("Invalid idempotency key: not valid ASCII."))?
        .trim();
    if key.is_empty() {
        return Ok(None);
    }
    if key.chars().count() > MAX_KEY_LENGTH {
        return Err(ApiError::invalid_request(format!(
            "Idempotency key too long: keys can be up to {MAX_KEY_LENGTH} characters long."
        )));
    }
    Ok(Some(key.to_owned()))
}

/// A stored, unexpired key: the replay or the mismatch error. `None`: execute.
async fn lookup(
    state: &MockState,
    claim: &InFlightGuard,
    path: &str,
    canonical: &str,
) -> Result<Option<Response>, sqlx::Error> {
    let stored: Option<StoredKey> = sqlx::query_as(
        "SELECT path, params, response_status, response_body, created FROM idempotency_keys \
         WHERE api_key = ? AND idempotency_key = ?",
    )
    .bind(claim.api_key())
    .bind(claim.key())
    .fetch_optional(state.pool())
    .await?;
    let Some(stored) = stored else {
        return Ok(None);
    };
    let ttl = i64::try_from(state.config().idempotency_ttl.as_secs()).unwrap_or(i64::MAX);
    if state.clock().now() >= stored.created.saturating_add(ttl) {
        // Pruned: the same key now executes afresh (and replaces the row).
        return Ok(None);
    }
    let key = claim.key();
    if stored.path != path {
        let error = ApiError::new(
            StatusCode::BAD_REQUEST,
            "idempotency_error",
            format!(
                "Keys for idempotent requests can only be used for the same endpoint they were \
                 first used for ('{path}' vs '{}'). Try using a key other than '{key}' if you \
                 meant to execute a different request.",
                stored.path
            ),
        );
        return Ok(Some(error.into_response()));
    }
    if stored.params != canonical {
        let error = ApiError::new(
            StatusCode::BAD_REQUEST,
            "idempotency_error",
            format!(
                "Keys for idempotent requests can only be used with the same parameters they \
                 were first used with. Try using a key other than '{key}' if you meant to \
                 execute a different request."
            ),
        );
        return Ok(Some(error.into_response()));
    }
    let status = u16::try_from(stored.response_status)
        .ok()
        .and_then(|s| StatusCode::from_u16(s).ok())
        .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = json_response(status, stored.response_body);
    response
        .headers_mut()
        .insert(IDEMPOTENT_REPLAYED, HeaderValue::from_static("true"));
    state.count_replay();
    Ok(Some(response))
}

struct StoreTarget<'a> {
    claim: Option<&'a InFlightGuard>,
    path: &'a str,
    canonical: &'a str,
    context: &'a ExecutionContext,
}

async fn execute_and_store(
    state: &MockState,
    operation: &dyn Mutation,
    target: &StoreTarget<'_>,
) -> Result<Outcome, sqlx::Error> {
    // IMMEDIATE: take SQLite's write lock up front, so the reads that decide the
    // refund (remaining amount) cannot be invalidated before the write.
    let mut tx = state.pool().begin_with("BEGIN IMMEDIATE").await?;
    let outcome = operation.execute(&mut tx, state, target.context).await?;
    store(&mut tx, target, &outcome).await?;
    tx.commit().await?;
    Ok(outcome)
}

/// The `server_error_after_begin` fault: execution began (and its effects commit
/// iff `commit`), but the stored and returned response is a 500 `api_error`.
async fn server_error_after_begin(
    state: &MockState,
    operation: &dyn Mutation,
    target: &StoreTarget<'_>,
    commit: bool,
) -> Result<Outcome, sqlx::Error> {
    let mut tx = state.pool().begin_with("BEGIN IMMEDIATE").await?;
    let refund_id = if commit {
        operation
            .execute(&mut tx, state, target.context)
            .await?
            .refund_id
    } else {
        None
    };
    let outcome = Outcome {
        refund_id,
        ..Outcome::error(ApiError::internal())
    };
    store(&mut tx, target, &outcome).await?;
    tx.commit().await?;
    Ok(outcome)
}

/// The `business_error` fault: a refusal is stored and returned instead of executing.
async fn business_error(
    state: &MockState,
    operation: &dyn Mutation,
    target: &StoreTarget<'_>,
    code: BusinessErrorCode,
) -> Result<Outcome, sqlx::Error> {
    let mut tx = state.pool().begin_with("BEGIN IMMEDIATE").await?;
    let outcome = forced_business_error(&mut tx, operation, code).await?;
    store(&mut tx, target, &outcome).await?;
    tx.commit().await?;
    Ok(outcome)
}

/// The `expire_key` fault: forget the stored response, as if pruned.
async fn expire(state: &MockState, claim: &InFlightGuard) -> Result<(), sqlx::Error> {
    sqlx::query("DELETE FROM idempotency_keys WHERE api_key = ? AND idempotency_key = ?")
        .bind(claim.api_key())
        .bind(claim.key())
        .execute(state.pool())
        .await?;
    Ok(())
}

async fn store_alone(
    state: &MockState,
    target: &StoreTarget<'_>,
    outcome: &Outcome,
) -> Result<(), sqlx::Error> {
    let mut tx = state.pool().begin_with("BEGIN IMMEDIATE").await?;
    store(&mut tx, target, outcome).await?;
    tx.commit().await
}

async fn store(
    conn: &mut sqlx::SqliteConnection,
    target: &StoreTarget<'_>,
    outcome: &Outcome,
) -> Result<(), sqlx::Error> {
    let Some(claim) = target.claim else {
        return Ok(());
    };
    sqlx::query(
        "INSERT OR REPLACE INTO idempotency_keys (api_key, idempotency_key, method, path, params, \
         response_status, response_body, refund_id, request_id, created) \
         VALUES (?, ?, 'POST', ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(claim.api_key())
    .bind(claim.key())
    .bind(target.path)
    .bind(target.canonical)
    .bind(i64::from(outcome.status.as_u16()))
    .bind(&outcome.body)
    .bind(&outcome.refund_id)
    .bind(&target.context.request_id)
    .bind(target.context.now)
    .execute(conn)
    .await?;
    Ok(())
}
