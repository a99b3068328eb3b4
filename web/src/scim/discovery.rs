//! SCIM's discovery documents (RFC 7643 §5–7): what this server supports
//! (`ServiceProviderConfig`), its resource types and their schemas.
//!
//! What it does not do: describe more than it serves; the documents say there is no bulk,
//! sorting, password change or ETag.

use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{json, Value};

use super::wire::{error, list_json, scim_json, BASE, GROUP_SCHEMA, USER_SCHEMA};

pub(super) async fn service_provider_config() -> Response {
    scim_json(
        StatusCode::OK,
        json!({
            "schemas": ["urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig"],
            "documentationUri": "https://github.com/refund-desk/refund-desk/blob/main/docs/spec/roles.md",
            "patch": { "supported": true },
            "bulk": { "supported": false, "maxOperations": 0, "maxPayloadSize": 0 },
            "filter": { "supported": true, "maxResults": 200 },
            "changePassword": { "supported": false },
            "sort": { "supported": false },
            "etag": { "supported": false },
            "authenticationSchemes": [{
                "type": "oauthbearertoken", "name": "Bearer token",
                "description": "A scim token made with `refund-agent token create --kind scim`", "primary": true
            }],
            "meta": { "resourceType": "ServiceProviderConfig", "location": format!("{BASE}/ServiceProviderConfig") },
        }),
    )
}

fn resource_type_json(id: &str) -> Option<Value> {
    let (endpoint, schema, description) = match id {
        "User" => ("/Users", USER_SCHEMA, "Staff of the refund desk"),
        "Group" => (
            "/Groups",
            GROUP_SCHEMA,
            "Groups; a group mapped in GROUP_ROLES gives its members a role",
        ),
        _ => return None,
    };
    Some(json!({
        "schemas": ["urn:ietf:params:scim:schemas:core:2.0:ResourceType"],
        "id": id, "name": id, "endpoint": endpoint, "description": description, "schema": schema,
        "meta": { "resourceType": "ResourceType", "location": format!("{BASE}/ResourceTypes/{id}") },
    }))
}

pub(super) async fn resource_types() -> Response {
    let all: Vec<Value> = ["User", "Group"]
        .iter()
        .filter_map(|id| resource_type_json(id))
        .collect();
    list_json(all, 2, 1)
}

pub(super) async fn resource_type(Path(id): Path<String>) -> Response {
    match resource_type_json(&id) {
        Some(rt) => scim_json(StatusCode::OK, rt),
        None => error(StatusCode::NOT_FOUND, None, "no such resource type"),
    }
}

fn attribute(name: &str, kind: &str, required: bool, mutability: &str, uniqueness: &str) -> Value {
    json!({ "name": name, "type": kind, "multiValued": false, "required": required, "caseExact": false,
            "mutability": mutability, "returned": "default", "uniqueness": uniqueness, "description": name })
}

fn reference_list(name: &str, mutability: &str, refers_to: &str) -> Value {
    json!({
        "name": name, "type": "complex", "multiValued": true, "required": false, "mutability": mutability,
        "returned": "default", "uniqueness": "none", "description": name,
        "subAttributes": [
            { "name": "value", "type": "string", "multiValued": false, "required": false, "caseExact": true,
              "mutability": "immutable", "returned": "default", "uniqueness": "none", "description": "the id" },
            { "name": "display", "type": "string", "multiValued": false, "required": false, "caseExact": false,
              "mutability": "readOnly", "returned": "default", "uniqueness": "none", "description": "its name" },
            { "name": "$ref", "type": "reference", "referenceTypes": [refers_to], "multiValued": false,
              "required": false, "caseExact": true, "mutability": "readOnly", "returned": "default",
              "uniqueness": "none", "description": "its URI" },
        ],
    })
}

fn schema_json(id: &str) -> Option<Value> {
    let (name, attributes) = match id {
        USER_SCHEMA => (
            "User",
            vec![
                attribute("userName", "string", true, "readWrite", "server"),
                attribute("displayName", "string", false, "readWrite", "none"),
                // Required here: the desk must know whether someone may sign in (a create
                // without it means active).
                attribute("active", "boolean", true, "readWrite", "none"),
                reference_list("groups", "readOnly", "Group"),
            ],
        ),
        GROUP_SCHEMA => (
            "Group",
            vec![
                attribute("displayName", "string", true, "readWrite", "server"),
                reference_list("members", "readWrite", "User"),
            ],
        ),
        _ => return None,
    };
    Some(json!({
        "schemas": ["urn:ietf:params:scim:schemas:core:2.0:Schema"],
        "id": id, "name": name, "description": name, "attributes": attributes,
        "meta": { "resourceType": "Schema", "location": format!("{BASE}/Schemas/{id}") },
    }))
}

pub(super) async fn schemas() -> Response {
    let all: Vec<Value> = [USER_SCHEMA, GROUP_SCHEMA]
        .iter()
        .filter_map(|id| schema_json(id))
        .collect();
    list_json(all, 2, 1)
}

pub(super) async fn schema(Path(id): Path<String>) -> Response {
    match schema_json(&id) {
        Some(s) => scim_json(StatusCode::OK, s),
        None => error(StatusCode::NOT_FOUND, None, "no such schema"),
    }
}
