//! The SCIM handlers, written once for Users and Groups (RFC 7644 §3 gives every resource
//! type the same list, search, get, replace, patch and delete) over `Resource`, and the
//! search across both (`POST /scim/v2/.search`).
//!
//! What it does not do: the wire shape of either resource (`users`, `groups`) or of
//! SCIM itself (`wire`).

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::Value;
use std::future::Future;

use super::groups::{apply_group_op, group_fields, group_json};
use super::users::{apply_user_op, user_fields, user_json};
use super::wire::{
    body_json, error, failure, list_json, patch_operations, provisioner, scim_json, Projection,
    ScimResult,
};
use crate::extract::Authed;
use crate::state::AppState;
use desk::auth::provisioning::{
    self, EqFilter, GroupFields, Provisioner, ScimGroup, ScimUser, UserFields,
};
use desk::auth::Principal;
use desk::error::DomainResult;
use store::Db;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ListQuery {
    filter: Option<String>,
    start_index: Option<i64>,
    count: Option<i64>,
    attributes: Option<String>,
    excluded_attributes: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(super) struct OneQuery {
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

/// What a SCIM resource type's endpoints differ in: its rows, its JSON, its writable
/// fields and its PATCH paths. The handlers below are written once over it (RFC 7644 §3
/// gives every resource type the same list, search, get, replace, patch and delete).
pub(super) trait Resource {
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

pub(super) async fn list<R: Resource>(
    State(state): State<AppState>,
    Query(q): Query<ListQuery>,
) -> ScimResult {
    page::<R>(&state, q).await
}

pub(super) async fn search<R: Resource>(State(state): State<AppState>, body: Bytes) -> ScimResult {
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

pub(super) async fn create<R: Resource>(
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

pub(super) async fn get<R: Resource>(
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

pub(super) async fn replace<R: Resource>(
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

pub(super) async fn patch<R: Resource>(
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

pub(super) async fn delete<R: Resource>(
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
        pub(super) struct $name;

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

/// `POST /scim/v2/.search`: users, then groups, each under the filter when it names one of
/// their attributes.
pub(super) async fn search_all(State(state): State<AppState>, body: Bytes) -> ScimResult {
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
