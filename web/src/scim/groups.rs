//! `/scim/v2/Groups` on the wire: a group as a SCIM Group with its members, the fields
//! of a POST or PUT body, and one PATCH operation on them, a `members[value eq "id"]`
//! filter included (RFC 7643 §4.2, RFC 7644 §3.5.2).
//!
//! What it does not do: map a group to a role (`auth::provisioning` does).

use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{json, Value};

use super::wire::{error, failure, BASE, GROUP_SCHEMA};
use desk::auth::provisioning::{EqFilter, GroupFields, ScimGroup};

pub(super) fn group_json(g: &ScimGroup) -> Value {
    let members: Vec<Value> = g
        .members
        .iter()
        .map(|(id, name)| match name {
            Some(name) => {
                json!({ "value": id, "display": name, "$ref": format!("{BASE}/Users/{id}") })
            }
            None => json!({ "value": id }),
        })
        .collect();
    let mut group = json!({
        "schemas": [GROUP_SCHEMA],
        "id": g.id,
        "displayName": g.display_name,
        "members": members,
        "meta": { "resourceType": "Group", "created": g.created, "lastModified": g.last_modified,
                  "location": format!("{BASE}/Groups/{}", g.id) },
    });
    if let Some(x) = &g.external_id {
        group["externalId"] = x.clone().into();
    }
    group
}

fn member_ids(value: &Value) -> Vec<String> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["value"].as_str().map(str::to_string))
        .collect()
}

pub(super) fn group_fields(body: &Value) -> Result<GroupFields, Response> {
    if !body.is_object() {
        return Err(error(
            StatusCode::BAD_REQUEST,
            Some("invalidSyntax"),
            "a Group is a JSON object",
        ));
    }
    Ok(GroupFields {
        display_name: Some(body["displayName"].as_str().unwrap_or_default().to_string()),
        external_id: Some(body["externalId"].as_str().map(str::to_string)),
        members: Some(member_ids(&body["members"])),
        ..GroupFields::default()
    })
}

/// One PATCH operation on a group, members included: `members[value eq "id"]` names one.
pub(super) fn apply_group_op(
    fields: &mut GroupFields,
    op: &str,
    path: &str,
    value: Value,
) -> Result<(), Response> {
    let removing = op.eq_ignore_ascii_case("remove");
    let replacing = op.eq_ignore_ascii_case("replace");
    if let Some(filter) = path
        .strip_prefix("members[")
        .and_then(|p| p.strip_suffix(']'))
    {
        let one = EqFilter::parse(filter, &["value"]).map_err(failure)?;
        if removing {
            fields.remove_members.push(one.value);
            return Ok(());
        }
        return Err(error(
            StatusCode::BAD_REQUEST,
            Some("invalidPath"),
            "only remove takes a member filter",
        ));
    }
    match path {
        p if p.eq_ignore_ascii_case("members") => {
            let ids = member_ids(&value);
            if removing && ids.is_empty() {
                fields.members = Some(Vec::new());
            } else if removing {
                fields.remove_members.extend(ids);
            } else if replacing {
                fields.members = Some(ids);
            } else {
                fields.add_members.extend(ids);
            }
        }
        p if p.eq_ignore_ascii_case("displayName") && removing => {
            return Err(error(
                StatusCode::BAD_REQUEST,
                Some("mutability"),
                "displayName is required",
            ))
        }
        p if p.eq_ignore_ascii_case("displayName") => {
            fields.display_name = Some(value.as_str().unwrap_or_default().to_string())
        }
        p if p.eq_ignore_ascii_case("externalId") => {
            fields.external_id = Some(if removing {
                None
            } else {
                value.as_str().map(str::to_string)
            })
        }
        other => {
            return Err(error(
                StatusCode::BAD_REQUEST,
                Some("invalidPath"),
                &format!("'{other}' is not an attribute of a Group here"),
            ))
        }
    }
    Ok(())
}
