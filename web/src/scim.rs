//! SCIM 2.0 (RFC 7643 and 7644) for the company's identity provider: `/scim/v2/Users` and
//! `/scim/v2/Groups` (a group mapped to a role in `GROUP_ROLES` gives its members that
//! role), the discovery documents, and SCIM's own error shape. Only a `scim` service token
//! reaches it (`web::access`); the rules and rows are `auth::provisioning`'s.
//!
//! Deliberately small: no bulk, no sorting, no `/Me`, filters of the form
//! `attribute eq "value"`, no ETags (`ServiceProviderConfig` says so).
//!
//! One file because it is one wire protocol: the list, filter, projection, PATCH and error
//! machinery here serves Users and Groups alike (written once over `Resource`); the rows
//! are `auth::provisioning`'s.

#![allow(
    clippy::result_large_err,
    reason = "the error is the SCIM response to answer with: built once per request, never carried"
)]

use crate::extract::Authed;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::access::{Routes, Rule};
use crate::error::status_of;
use crate::state::AppState;
use desk::auth::provisioning::{
    self, EqFilter, GroupFields, Provisioner, ScimGroup, ScimUser, UserFields,
};
use desk::auth::{Principal, ServiceKind};
use desk::error::{DomainError, DomainResult, ErrorCode};
use std::future::Future;
use store::Db;

const USER_SCHEMA: &str = "urn:ietf:params:scim:schemas:core:2.0:User";
const GROUP_SCHEMA: &str = "urn:ietf:params:scim:schemas:core:2.0:Group";
const LIST_SCHEMA: &str = "urn:ietf:params:scim:api:messages:2.0:ListResponse";
const ERROR_SCHEMA: &str = "urn:ietf:params:scim:api:messages:2.0:Error";
const PATCH_SCHEMA: &str = "urn:ietf:params:scim:api:messages:2.0:PatchOp";
const BASE: &str = "/scim/v2";

/// Every SCIM route, for the `scim` service token only.
pub fn routes() -> Routes {
    let scim = Rule::Service(ServiceKind::Scim);
    Routes::new()
        .get(
            "/scim/v2/ServiceProviderConfig",
            scim,
            service_provider_config,
        )
        .get("/scim/v2/ResourceTypes", scim, resource_types)
        .get("/scim/v2/ResourceTypes/{id}", scim, resource_type)
        .get("/scim/v2/Schemas", scim, schemas)
        .get("/scim/v2/Schemas/{id}", scim, schema)
        .get("/scim/v2/Users", scim, list::<Users>)
        .post("/scim/v2/Users", scim, create::<Users>)
        .get("/scim/v2/Users/{id}", scim, get::<Users>)
        .put("/scim/v2/Users/{id}", scim, replace::<Users>)
        .patch("/scim/v2/Users/{id}", scim, patch::<Users>)
        .delete("/scim/v2/Users/{id}", scim, delete::<Users>)
        .get("/scim/v2/Groups", scim, list::<Groups>)
        .post("/scim/v2/Groups", scim, create::<Groups>)
        .get("/scim/v2/Groups/{id}", scim, get::<Groups>)
        .put("/scim/v2/Groups/{id}", scim, replace::<Groups>)
        .patch("/scim/v2/Groups/{id}", scim, patch::<Groups>)
        .delete("/scim/v2/Groups/{id}", scim, delete::<Groups>)
        .post("/scim/v2/Users/.search", scim, search::<Users>)
        .post("/scim/v2/Groups/.search", scim, search::<Groups>)
        .post("/scim/v2/.search", scim, search_all)
        .get("/scim/v2/{*rest}", scim, no_such_endpoint)
        .post("/scim/v2/{*rest}", scim, no_such_endpoint)
        .put("/scim/v2/{*rest}", scim, no_such_endpoint)
        .patch("/scim/v2/{*rest}", scim, no_such_endpoint)
        .delete("/scim/v2/{*rest}", scim, no_such_endpoint)
}

/// Any other path under `/scim/v2`: SCIM's own 404.
async fn no_such_endpoint() -> Response {
    error(StatusCode::NOT_FOUND, None, "no such SCIM endpoint")
}

/// Which attributes an answer carries (RFC 7644 §3.4.2.5): `attributes` keeps only
/// those named (with `id`, `schemas` and `meta`, which are always returned),
/// `excludedAttributes` drops those named. Names may carry their schema's URN.
#[derive(Debug, Default, Clone)]
struct Projection {
    only: Option<Vec<String>>,
    excluded: Vec<String>,
}

impl Projection {
    fn of(attributes: Option<&str>, excluded: Option<&str>) -> Projection {
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

    fn apply(&self, mut resource: Value) -> Value {
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

/// A SCIM error response (RFC 7644 §3.12).
pub fn error(status: StatusCode, scim_type: Option<&str>, detail: &str) -> Response {
    let mut body = json!({ "schemas": [ERROR_SCHEMA], "status": status.as_u16().to_string(), "detail": detail });
    if let Some(t) = scim_type {
        body["scimType"] = t.into();
    }
    scim_json(status, body)
}

fn scim_json(status: StatusCode, body: Value) -> Response {
    let mut response = (status, axum::Json(body)).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/scim+json"),
    );
    response
}

fn failure(e: DomainError) -> Response {
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

type ScimResult = Result<Response, Response>;

fn provisioner<'a>(state: &'a AppState, principal: &'a Principal) -> Provisioner<'a> {
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

fn body_json(body: &Bytes) -> Result<Value, Response> {
    serde_json::from_slice(body).map_err(|e| {
        error(
            StatusCode::BAD_REQUEST,
            Some("invalidSyntax"),
            &format!("the body is not JSON: {e}"),
        )
    })
}

// --- Users ------------------------------------------------------------------------------

fn user_json(u: &ScimUser) -> Value {
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
fn user_fields(body: &Value) -> Result<UserFields, Response> {
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

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ListQuery {
    filter: Option<String>,
    start_index: Option<i64>,
    count: Option<i64>,
    attributes: Option<String>,
    excluded_attributes: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct OneQuery {
    attributes: Option<String>,
    excluded_attributes: Option<String>,
}

/// A `POST …/.search` body (RFC 7644 §3.4.3): the list query in JSON, the attribute lists
/// as arrays.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct SearchRequest {
    filter: Option<String>,
    start_index: Option<i64>,
    count: Option<i64>,
    #[serde(default)]
    attributes: Vec<String>,
    #[serde(default)]
    excluded_attributes: Vec<String>,
}

impl SearchRequest {
    fn into_query(self) -> ListQuery {
        let joined = |v: Vec<String>| (!v.is_empty()).then(|| v.join(","));
        ListQuery {
            filter: self.filter,
            start_index: self.start_index,
            count: self.count,
            attributes: joined(self.attributes),
            excluded_attributes: joined(self.excluded_attributes),
        }
    }
}

fn search_request(body: &Bytes) -> Result<ListQuery, Response> {
    let request: SearchRequest = serde_json::from_slice(body).map_err(|e| {
        error(
            StatusCode::BAD_REQUEST,
            Some("invalidSyntax"),
            &format!("not a SearchRequest: {e}"),
        )
    })?;
    Ok(request.into_query())
}

fn list_json(resources: Vec<Value>, total: i64, start: i64) -> Response {
    let items = resources.len();
    scim_json(
        StatusCode::OK,
        json!({ "schemas": [LIST_SCHEMA], "totalResults": total, "startIndex": start,
                "itemsPerPage": items, "Resources": resources }),
    )
}

/// `POST /scim/v2/.search`: users, then groups, each under the filter when it names one of
/// their attributes.
async fn search_all(State(state): State<AppState>, body: Bytes) -> ScimResult {
    let q = search_request(&body)?;
    let projection = Projection::of(q.attributes.as_deref(), q.excluded_attributes.as_deref());
    let filter_of = |attributes: &[&str]| match q.filter.as_deref() {
        None => Ok(Some(None)),
        Some(f) => match EqFilter::parse(f, attributes) {
            Ok(parsed) => Ok(Some(Some(parsed))),
            Err(_) if EqFilter::parse(f, Users::FILTERABLE).is_ok() => Ok(None),
            Err(e) => Err(failure(e)),
        },
    };
    let start = q.start_index.unwrap_or(1).max(1);
    let count = q.count.unwrap_or(100);
    let mut resources = Vec::new();
    let mut total = 0;
    if let Some(filter) = filter_of(Users::FILTERABLE)? {
        let (users, n) = Users::list(&state.db, filter.as_ref(), 1, count)
            .await
            .map_err(failure)?;
        resources.extend(users.iter().map(|u| projection.apply(Users::json(u))));
        total += n;
    }
    if let Some(filter) = filter_of(Groups::FILTERABLE)? {
        let (groups, n) = Groups::list(&state.db, filter.as_ref(), 1, count)
            .await
            .map_err(failure)?;
        resources.extend(groups.iter().map(|g| projection.apply(Groups::json(g))));
        total += n;
    }
    let page: Vec<Value> = resources
        .into_iter()
        .skip((start - 1) as usize)
        .take(count.clamp(0, 200) as usize)
        .collect();
    Ok(list_json(page, total, start))
}

/// One PATCH operation on a user: `add`/`replace` set, `remove` clears (RFC 7644 §3.5.2).
fn apply_user_op(
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

/// The operations of a PatchOp request: `(op, path, value)`.
fn patch_operations(body: &Value) -> Result<Vec<(String, Option<String>, Value)>, Response> {
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

// --- Groups -----------------------------------------------------------------------------

fn group_json(g: &ScimGroup) -> Value {
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

fn group_fields(body: &Value) -> Result<GroupFields, Response> {
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
fn apply_group_op(
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

// --- The handlers, one set for Users and Groups ----------------------------------------

/// What a SCIM resource type's endpoints differ in: its rows, its JSON, its writable
/// fields and its PATCH paths. The handlers below are written once over it (RFC 7644 §3
/// gives every resource type the same list, search, get, replace, patch and delete).
trait Resource {
    type Record: Send + Sync;
    type Fields: Default + Send + Sync;
    /// The attributes a list filter may name.
    const FILTERABLE: &'static [&'static str];
    fn json(record: &Self::Record) -> Value;
    /// The fields of a full resource in a POST or PUT body.
    fn fields(body: &Value) -> Result<Self::Fields, Response>;
    /// One PATCH operation with a path, applied to `fields`.
    fn apply_op(
        fields: &mut Self::Fields,
        op: &str,
        path: &str,
        value: Value,
    ) -> Result<(), Response>;
    fn list(
        db: &Db,
        filter: Option<&EqFilter>,
        start: i64,
        count: i64,
    ) -> impl Future<Output = DomainResult<(Vec<Self::Record>, i64)>> + Send;
    fn get(db: &Db, id: &str) -> impl Future<Output = DomainResult<Self::Record>> + Send;
    fn create(
        p: Provisioner<'_>,
        fields: &Self::Fields,
    ) -> impl Future<Output = DomainResult<Self::Record>> + Send;
    fn update(
        p: Provisioner<'_>,
        id: &str,
        fields: &Self::Fields,
    ) -> impl Future<Output = DomainResult<Self::Record>> + Send;
    fn delete(p: Provisioner<'_>, id: &str) -> impl Future<Output = DomainResult<()>> + Send;
}

async fn list<R: Resource>(
    State(state): State<AppState>,
    Query(q): Query<ListQuery>,
) -> ScimResult {
    page::<R>(&state, q).await
}

async fn search<R: Resource>(State(state): State<AppState>, body: Bytes) -> ScimResult {
    page::<R>(&state, search_request(&body)?).await
}

async fn page<R: Resource>(state: &AppState, q: ListQuery) -> ScimResult {
    let projection = Projection::of(q.attributes.as_deref(), q.excluded_attributes.as_deref());
    let filter = q
        .filter
        .as_deref()
        .map(|f| EqFilter::parse(f, R::FILTERABLE))
        .transpose()
        .map_err(failure)?;
    let start = q.start_index.unwrap_or(1).max(1);
    let (records, total) = R::list(&state.db, filter.as_ref(), start, q.count.unwrap_or(100))
        .await
        .map_err(failure)?;
    let records = records
        .iter()
        .map(|r| projection.apply(R::json(r)))
        .collect();
    Ok(list_json(records, total, start))
}

async fn create<R: Resource>(
    State(state): State<AppState>,
    Authed(principal): Authed<Principal>,
    body: Bytes,
) -> ScimResult {
    let fields = R::fields(&body_json(&body)?)?;
    let record = R::create(provisioner(&state, &principal), &fields)
        .await
        .map_err(failure)?;
    Ok(scim_json(StatusCode::CREATED, R::json(&record)))
}

async fn get<R: Resource>(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Query(q): Query<OneQuery>,
) -> ScimResult {
    let record = R::get(&state.db, &id).await.map_err(failure)?;
    let projection = Projection::of(q.attributes.as_deref(), q.excluded_attributes.as_deref());
    Ok(scim_json(
        StatusCode::OK,
        projection.apply(R::json(&record)),
    ))
}

async fn replace<R: Resource>(
    State(state): State<AppState>,
    Authed(principal): Authed<Principal>,
    Path(id): Path<String>,
    body: Bytes,
) -> ScimResult {
    let fields = R::fields(&body_json(&body)?)?;
    let record = R::update(provisioner(&state, &principal), &id, &fields)
        .await
        .map_err(failure)?;
    Ok(scim_json(StatusCode::OK, R::json(&record)))
}

async fn patch<R: Resource>(
    State(state): State<AppState>,
    Authed(principal): Authed<Principal>,
    Path(id): Path<String>,
    body: Bytes,
) -> ScimResult {
    let mut fields = R::Fields::default();
    for (op, path, value) in patch_operations(&body_json(&body)?)? {
        apply_op::<R>(&mut fields, &op, path.as_deref(), value)?;
    }
    let record = R::update(provisioner(&state, &principal), &id, &fields)
        .await
        .map_err(failure)?;
    Ok(scim_json(StatusCode::OK, R::json(&record)))
}

/// One PATCH operation (RFC 7644 §3.5.2): with a path, the resource's own; without, the
/// value is an object of attributes, each applied as if named by a path.
fn apply_op<R: Resource>(
    fields: &mut R::Fields,
    op: &str,
    path: Option<&str>,
    value: Value,
) -> Result<(), Response> {
    if let Some(path) = path {
        return R::apply_op(fields, op, path, value);
    }
    let Value::Object(map) = value else {
        return Err(error(
            StatusCode::BAD_REQUEST,
            Some("invalidValue"),
            "a PATCH without a path takes an object",
        ));
    };
    for (key, v) in map {
        R::apply_op(fields, op, &key, v)?;
    }
    Ok(())
}

async fn delete<R: Resource>(
    State(state): State<AppState>,
    Authed(principal): Authed<Principal>,
    Path(id): Path<String>,
) -> ScimResult {
    R::delete(provisioner(&state, &principal), &id)
        .await
        .map_err(failure)?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// A resource type's `Resource` impl from its functions: Users and Groups differ in
/// these names only, so the impl is written once.
macro_rules! resource {
    ($(#[$doc:meta])* $name:ident: $record:ty, $fields:ty, $filterable:expr,
     $json:path, $parse:path, $apply:path,
     $list:path, $get:path, $create:path, $update:path, $delete:path) => {
        $(#[$doc])*
        struct $name;

        impl Resource for $name {
            type Record = $record;
            type Fields = $fields;
            const FILTERABLE: &'static [&'static str] = $filterable;
            fn json(record: &$record) -> Value {
                $json(record)
            }
            fn fields(body: &Value) -> Result<$fields, Response> {
                $parse(body)
            }
            fn apply_op(
                fields: &mut $fields,
                op: &str,
                path: &str,
                value: Value,
            ) -> Result<(), Response> {
                $apply(fields, op, path, value)
            }
            async fn list(
                db: &Db,
                filter: Option<&EqFilter>,
                start: i64,
                count: i64,
            ) -> DomainResult<(Vec<$record>, i64)> {
                $list(db, filter, start, count).await
            }
            async fn get(db: &Db, id: &str) -> DomainResult<$record> {
                $get(db, id).await
            }
            async fn create(p: Provisioner<'_>, fields: &$fields) -> DomainResult<$record> {
                $create(p, fields).await
            }
            async fn update(p: Provisioner<'_>, id: &str, fields: &$fields) -> DomainResult<$record> {
                $update(p, id, fields).await
            }
            async fn delete(p: Provisioner<'_>, id: &str) -> DomainResult<()> {
                $delete(p, id).await
            }
        }
    };
}

resource!(
    /// `/scim/v2/Users`: staff members.
    Users: ScimUser, UserFields, &["userName", "externalId", "displayName", "id"],
    user_json, user_fields, apply_user_op,
    provisioning::list_users, provisioning::get_user, provisioning::create_user,
    provisioning::update_user, provisioning::delete_user
);

resource!(
    /// `/scim/v2/Groups`: groups, a mapped one giving its members a role.
    Groups: ScimGroup, GroupFields, &["displayName", "externalId", "id"],
    group_json, group_fields, apply_group_op,
    provisioning::list_groups, provisioning::get_group, provisioning::create_group,
    provisioning::update_group, provisioning::delete_group
);

// --- Discovery (RFC 7643 §5–7) ----------------------------------------------------------

async fn service_provider_config() -> Response {
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

async fn resource_types() -> Response {
    let all: Vec<Value> = ["User", "Group"]
        .iter()
        .filter_map(|id| resource_type_json(id))
        .collect();
    list_json(all, 2, 1)
}

async fn resource_type(Path(id): Path<String>) -> Response {
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

async fn schemas() -> Response {
    let all: Vec<Value> = [USER_SCHEMA, GROUP_SCHEMA]
        .iter()
        .filter_map(|id| schema_json(id))
        .collect();
    list_json(all, 2, 1)
}

async fn schema(Path(id): Path<String>) -> Response {
    match schema_json(&id) {
        Some(s) => scim_json(StatusCode::OK, s),
        None => error(StatusCode::NOT_FOUND, None, "no such schema"),
    }
}
