//! SCIM's wire shape (RFC 7643, 7644): the schema URNs, the `application/scim+json`
//! answer, SCIM's error (with the `scimType` of each error `auth::provisioning` returns),
//! a list response, a PatchOp's operations, and which attributes an answer carries.
//!
//! What it does not do: know Users from Groups (`users`, `groups`) or route anything.

use axum::body::Bytes;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

use crate::error::status_of;
use crate::state::AppState;
use desk::auth::provisioning::Provisioner;
use desk::auth::Principal;
use desk::error::{DomainError, ErrorCode};

pub(super) const USER_SCHEMA: &str = "urn:ietf:params:scim:schemas:core:2.0:User";
pub(super) const GROUP_SCHEMA: &str = "urn:ietf:params:scim:schemas:core:2.0:Group";
pub(super) const LIST_SCHEMA: &str = "urn:ietf:params:scim:api:messages:2.0:ListResponse";
pub(super) const ERROR_SCHEMA: &str = "urn:ietf:params:scim:api:messages:2.0:Error";
pub(super) const PATCH_SCHEMA: &str = "urn:ietf:params:scim:api:messages:2.0:PatchOp";
pub(super) const BASE: &str = "/scim/v2";

/// A SCIM error response (RFC 7644 §3.12).
pub fn error(status: StatusCode, scim_type: Option<&str>, detail: &str) -> Response {
    let mut body = json!({ "schemas": [ERROR_SCHEMA], "status": status.as_u16().to_string(), "detail": detail });
    if let Some(t) = scim_type {
        body["scimType"] = t.into();
    }
    scim_json(status, body)
}

pub(super) fn scim_json(status: StatusCode, body: Value) -> Response {
    let mut response = (status, axum::Json(body)).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/scim+json"),
    );
    response
}

pub(super) fn failure(e: DomainError) -> Response {
    let status = status_of(&e);
    let scim_type = match &e {
        // SCIM's scimType (RFC 7644 §3.12) for the codes `auth::provisioning` returns.
        DomainError::Conflict {
            code: ErrorCode::Uniqueness,
            ..
        } => Some("uniqueness"),
        DomainError::BadRequest {
            code: ErrorCode::InvalidFilter,
            ..
        } => Some("invalidFilter"),
        DomainError::BadRequest { .. } => Some("invalidValue"),
        _ => None,
    };
    if status.is_server_error() {
        tracing::error!(error = %e, "SCIM request failed");
    }
    error(status, scim_type, &e.public_message())
}

pub(super) type ScimResult = Result<Response, Response>;

pub(super) fn provisioner<'a>(state: &'a AppState, principal: &'a Principal) -> Provisioner<'a> {
    let actor = match principal {
        Principal::Service(s) => s.name.as_str(),
        _ => "scim",
    };
    Provisioner {
        db: &state.db,
        default_role: state.scim_default_role,
        group_roles: &state.group_roles,
        actor,
        now_ms: state.clock.now_ms(),
    }
}

pub(super) fn body_json(body: &Bytes) -> Result<Value, Response> {
    serde_json::from_slice(body).map_err(|e| {
        error(
            StatusCode::BAD_REQUEST,
            Some("invalidSyntax"),
            &format!("the body is not JSON: {e}"),
        )
    })
}

pub(super) fn list_json(resources: Vec<Value>, total: i64, start: i64) -> Response {
    let items = resources.len();
    scim_json(
        StatusCode::OK,
        json!({ "schemas": [LIST_SCHEMA], "totalResults": total, "startIndex": start,
                "itemsPerPage": items, "Resources": resources }),
    )
}

/// The operations of a PatchOp request: `(op, path, value)`.
pub(super) fn patch_operations(
    body: &Value,
) -> Result<Vec<(String, Option<String>, Value)>, Response> {
    let bad = |why: &str| error(StatusCode::BAD_REQUEST, Some("invalidSyntax"), why);
    let schemas = body["schemas"]
        .as_array()
        .ok_or_else(|| bad("a PatchOp names its schema"))?;
    if !schemas.iter().any(|s| s == PATCH_SCHEMA) {
        return Err(bad("a PatchOp names its schema"));
    }
    let operations = body["Operations"]
        .as_array()
        .ok_or_else(|| bad("a PatchOp has Operations"))?;
    operations
        .iter()
        .map(|o| {
            let op = o["op"]
                .as_str()
                .ok_or_else(|| bad("each operation has an op"))?
                .to_string();
            if !["add", "remove", "replace"]
                .iter()
                .any(|k| op.eq_ignore_ascii_case(k))
            {
                return Err(bad("op is add, remove or replace"));
            }
            Ok((
                op,
                o["path"].as_str().map(str::to_string),
                o["value"].clone(),
            ))
        })
        .collect()
}

/// Which attributes an answer carries (RFC 7644 §3.4.2.5): `attributes` keeps only
/// those named (with `id`, `schemas` and `meta`, which are always returned),
/// `excludedAttributes` drops those named. Names may carry their schema's URN.
#[derive(Debug, Default, Clone)]
pub(super) struct Projection {
    only: Option<Vec<String>>,
    excluded: Vec<String>,
}

impl Projection {
    pub(super) fn of(attributes: Option<&str>, excluded: Option<&str>) -> Projection {
        let names = |text: &str| -> Vec<String> {
            text.split(',')
                .map(|a| a.trim())
                .filter(|a| !a.is_empty())
                .map(|a| {
                    // `urn:…:User:userName` → `username`; `name.givenName` → `name`.
                    let a = a.rsplit(':').next().unwrap_or(a);
                    a.split('.').next().unwrap_or(a).to_ascii_lowercase()
                })
                .collect()
        };
        Projection {
            only: attributes.map(names),
            excluded: excluded.map(names).unwrap_or_default(),
        }
    }

    pub(super) fn apply(&self, mut resource: Value) -> Value {
        if let Value::Object(map) = &mut resource {
            let always = |k: &str| matches!(k, "id" | "schemas" | "meta");
            map.retain(|k, _| {
                let key = k.to_ascii_lowercase();
                always(k)
                    || (self.only.as_ref().is_none_or(|only| only.contains(&key))
                        && !self.excluded.contains(&key))
            });
        }
        resource
    }
}
