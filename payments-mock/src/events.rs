//! Events (`evt_…`): written in the same transaction as the state change they
//! describe, so an event exists iff its change committed. Replays create none.
//! `GET /v1/events` and `GET /v1/events/{id}` read them back (last 30 days, as
//! Stripe keeps them); delivery is [`crate::webhooks`]' job.

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde::Serialize;
use serde_json::Value;
use sqlx::SqliteConnection;

use crate::state::MockState;
use crate::wire::CreatedRange;
use crate::wire::{
    json_response, new_id, to_json, ApiError, ApiKey, FormParams, ListEnvelope, Page,
};

/// Stripe only returns events created in the last 30 days.
pub const RETENTION_SECS: i64 = 30 * 24 * 60 * 60;

pub const API_VERSION: &str = "2024-10-28.acacia";

/// The API call that caused an event; `None` for admin-driven transitions.
#[derive(Debug, Clone, Serialize)]
pub struct EventRequest {
    pub id: Option<String>,
    pub idempotency_key: Option<String>,
}

#[derive(Serialize)]
struct EventData<'a> {
    object: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    previous_attributes: Option<&'a Value>,
}

#[derive(Serialize)]
struct Event<'a> {
    id: &'a str,
    object: &'static str,
    api_version: &'static str,
    created: i64,
    data: EventData<'a>,
    livemode: bool,
    pending_webhooks: i64,
    request: &'a EventRequest,
    #[serde(rename = "type")]
    event_type: &'a str,
}

/// Records an event; returns its id.
pub async fn record(
    conn: &mut SqliteConnection,
    event_type: &str,
    object: &Value,
    previous_attributes: Option<&Value>,
    request: &EventRequest,
    created: i64,
    pending_webhooks: i64,
) -> Result<String, sqlx::Error> {
    let id = new_id("evt");
    let payload = to_json(&Event {
        id: &id,
        object: "event",
        api_version: API_VERSION,
        created,
        data: EventData {
            object,
            previous_attributes,
        },
        livemode: false,
        pending_webhooks,
        request,
        event_type,
    });
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or_default();
    sqlx::query(
        "INSERT INTO events (id, type, created, payload, delivery_success, next_attempt_at, \
         next_attempt_ms) VALUES (?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(&id)
    .bind(event_type)
    .bind(created)
    .bind(payload)
    // With no receiver configured there is nothing to deliver.
    .bind(pending_webhooks == 0)
    .bind(if pending_webhooks > 0 {
        Some(created)
    } else {
        None
    })
    .bind(if pending_webhooks > 0 {
        Some(now_ms)
    } else {
        None
    })
    .execute(conn)
    .await?;
    Ok(id)
}

/// Records the events of one state change, all with the same request and time.
pub struct Emitter<'a> {
    pub request: &'a EventRequest,
    pub created: i64,
    pub pending_webhooks: i64,
}

impl Emitter<'_> {
    pub fn new<'a>(state: &MockState, request: &'a EventRequest, created: i64) -> Emitter<'a> {
        Emitter {
            request,
            created,
            pending_webhooks: i64::from(state.webhook_url().is_some()),
        }
    }

    pub async fn emit(
        &self,
        conn: &mut SqliteConnection,
        event_type: &str,
        object: &Value,
        previous_attributes: Option<&Value>,
    ) -> Result<String, sqlx::Error> {
        record(
            conn,
            event_type,
            object,
            previous_attributes,
            self.request,
            self.created,
            self.pending_webhooks,
        )
        .await
    }
}

#[derive(sqlx::FromRow)]
struct EventRow {
    id: String,
    #[sqlx(rename = "type")]
    event_type: String,
    created: i64,
    payload: String,
    delivery_success: bool,
}

impl EventRow {
    /// The stored event, with `pending_webhooks` as it stands now.
    fn to_value(&self) -> Value {
        let mut value: Value = serde_json::from_str(&self.payload).unwrap_or(Value::Null);
        if self.delivery_success {
            if let Some(object) = value.as_object_mut() {
                object.insert("pending_webhooks".to_owned(), Value::from(0));
            }
        }
        value
    }
}

const EVENT_SELECT: &str = "SELECT id, type, created, payload, delivery_success FROM events";

/// `type` (exact, or `prefix.*`) and `types[]` (exact names, any of).
fn type_matches(filter: &str, event_type: &str) -> bool {
    match filter.strip_suffix('*') {
        Some(prefix) => event_type.starts_with(prefix),
        None => filter == event_type,
    }
}

/// `GET /v1/events?type=&types[]=&created[..]=&delivery_success=&limit=&starting_after=&ending_before=`,
/// newest first, last 30 days of mock time.
pub async fn list(
    State(state): State<MockState>,
    _key: ApiKey,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    let params = FormParams::from_query(query.as_deref())?;
    params.reject_unknown(&[
        "type",
        "types",
        "created",
        "delivery_success",
        "limit",
        "starting_after",
        "ending_before",
        "expand",
    ])?;
    let page = Page::from_params(&params)?;
    let created = CreatedRange::from_params(&params)?;
    let single_type = params.get("type").filter(|t| !t.is_empty());
    let types: Vec<&str> = params
        .pairs()
        .iter()
        .filter(|(name, _)| name == "types[]" || name.starts_with("types["))
        .map(|(_, value)| value.as_str())
        .collect();
    if single_type.is_some() && !types.is_empty() {
        return Err(ApiError::invalid_request(
            "You may only specify one of these parameters: type, types.",
        )
        .with_param("types"));
    }
    if types.len() > 20 {
        return Err(ApiError::invalid_request("You may pass up to 20 types.").with_param("types"));
    }
    let delivery_success = match params.get("delivery_success") {
        None => None,
        Some("true") => Some(true),
        Some("false") => Some(false),
        Some(other) => {
            return Err(
                ApiError::invalid_request(format!("Invalid boolean: {other}"))
                    .with_param("delivery_success"),
            )
        }
    };
    let oldest = state.clock().now().saturating_sub(RETENTION_SECS);
    let rows: Vec<EventRow> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "{EVENT_SELECT} WHERE created >= ? ORDER BY created DESC, seq DESC"
    )))
    .bind(oldest)
    .fetch_all(state.pool())
    .await?;
    let rows: Vec<EventRow> = rows
        .into_iter()
        .filter(|row| created.contains(row.created))
        .filter(|row| single_type.is_none_or(|t| type_matches(t, &row.event_type)))
        .filter(|row| types.is_empty() || types.contains(&row.event_type.as_str()))
        .filter(|row| delivery_success.is_none_or(|want| row.delivery_success == want))
        .collect();
    let (rows, has_more) = page.apply(rows, |row| row.id.as_str(), "event")?;
    let envelope = ListEnvelope {
        object: "list",
        url: "/v1/events",
        has_more,
        data: rows.iter().map(EventRow::to_value).collect(),
    };
    Ok(json_response(StatusCode::OK, to_json(&envelope)))
}

/// `GET /v1/events/{id}`
pub async fn retrieve(
    State(state): State<MockState>,
    _key: ApiKey,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let row: Option<EventRow> =
        sqlx::query_as(sqlx::AssertSqlSafe(format!("{EVENT_SELECT} WHERE id = ?")))
            .bind(&id)
            .fetch_optional(state.pool())
            .await?;
    match row {
        Some(row) => Ok(json_response(StatusCode::OK, to_json(&row.to_value()))),
        None => Err(ApiError::missing("event", &id, "id")),
    }
}
