//! Events (`evt_…`): written in the same transaction as the state change they
//! describe, so an event exists iff its change committed. Replays create none.

use serde::Serialize;
use serde_json::Value;
use sqlx::SqliteConnection;

use crate::wire::{new_id, to_json};

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
    sqlx::query(
        "INSERT INTO events (id, type, created, payload, delivery_success, next_attempt_at) \
         VALUES (?, ?, ?, ?, ?, ?)",
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
    .execute(conn)
    .await?;
    Ok(id)
}
