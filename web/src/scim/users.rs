//! `/scim/v2/Users` on the wire: a staff member as a SCIM User, the fields of a POST or
//! PUT body, and one PATCH operation on them (RFC 7643 §4.1, RFC 7644 §3.5.2).
//!
//! What it does not do: read or write staff (`auth::provisioning` does).

use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{json, Value};

use super::wire::{error, BASE, USER_SCHEMA};
use desk::auth::provisioning::{ScimUser, UserFields};

pub(super) fn user_json(u: &ScimUser) -> Value {
    let location = format!("{BASE}/Users/{}", u.id);
    let groups: Vec<Value> = u
        .groups
        .iter()
        .map(|(id, name)| json!({ "value": id, "display": name, "$ref": format!("{BASE}/Groups/{id}") }))
        .collect();
    let mut user = json!({
        "schemas": [USER_SCHEMA],
        "id": u.id,
        "userName": u.user_name,
        "active": u.active,
        "meta": { "resourceType": "User", "created": u.created, "lastModified": u.last_modified, "location": location },
    });
    if let Some(d) = &u.display_name {
        user["displayName"] = d.clone().into();
    }
    if let Some(x) = &u.external_id {
        user["externalId"] = x.clone().into();
    }
    if !groups.is_empty() {
        user["groups"] = groups.into();
    }
    user
}

/// The user fields of a full resource (POST, PUT): absent optional fields are cleared.
pub(super) fn user_fields(body: &Value) -> Result<UserFields, Response> {
    let text = |key: &str| body.get(key).and_then(Value::as_str).map(str::to_string);
    if !body.is_object() {
        return Err(error(
            StatusCode::BAD_REQUEST,
            Some("invalidSyntax"),
            "a User is a JSON object",
        ));
    }
    if body.get("active").is_some_and(|a| !a.is_boolean()) {
        return Err(error(
            StatusCode::BAD_REQUEST,
            Some("invalidValue"),
            "active is a boolean",
        ));
    }
    Ok(UserFields {
        user_name: Some(text("userName").unwrap_or_default()),
        display_name: Some(text("displayName")),
        external_id: Some(text("externalId")),
        active: Some(body.get("active").and_then(Value::as_bool).unwrap_or(true)),
    })
}

/// One PATCH operation on a user: `add`/`replace` set, `remove` clears (RFC 7644 §3.5.2).
pub(super) fn apply_user_op(
    fields: &mut UserFields,
    op: &str,
    path: &str,
    value: Value,
) -> Result<(), Response> {
    let removing = op.eq_ignore_ascii_case("remove");
    let text = |v: &Value| v.as_str().map(str::to_string);
    match path {
        p if p.eq_ignore_ascii_case("userName") && removing => {
            return Err(error(
                StatusCode::BAD_REQUEST,
                Some("mutability"),
                "userName is required",
            ))
        }
        p if p.eq_ignore_ascii_case("userName") => {
            fields.user_name = Some(text(&value).unwrap_or_default())
        }
        p if p.eq_ignore_ascii_case("displayName") => {
            fields.display_name = Some(if removing { None } else { text(&value) })
        }
        p if p.eq_ignore_ascii_case("externalId") => {
            fields.external_id = Some(if removing { None } else { text(&value) })
        }
        p if p.eq_ignore_ascii_case("active") => {
            fields.active = Some(if removing {
                true
            } else {
                value
                    .as_bool()
                    .or_else(|| value.as_str().map(|s| s.eq_ignore_ascii_case("true")))
                    .ok_or_else(|| {
                        error(
                            StatusCode::BAD_REQUEST,
                            Some("invalidValue"),
                            "active is a boolean",
                        )
                    })?
            })
        }
        other => {
            return Err(error(
                StatusCode::BAD_REQUEST,
                Some("invalidPath"),
                &format!("'{other}' is not an attribute of a User here"),
            ))
        }
    }
    Ok(())
}
