//! SCIM 2.0 (RFC 7643 and 7644) for the company's identity provider: `/scim/v2/Users` and
//! `/scim/v2/Groups` (a group mapped to a role in `GROUP_ROLES` gives its members that
//! role), the discovery documents, and SCIM's own error shape. Only a `scim` service token
//! reaches it (`web::access`); the rules and rows are `auth::provisioning`'s.
//!
//! Deliberately small: no bulk, no sorting, no `/Me`, filters of the form
//! `attribute eq "value"`, no ETags (`ServiceProviderConfig` says so).
//!
//! The routes are here; beneath them, one file a concern: `resources` (the handlers,
//! written once for Users and Groups over `Resource`), `users` and `groups` (each one's
//! JSON and PATCH paths), `discovery`, and `wire` (SCIM's own shapes, which all use).

#![allow(
    clippy::result_large_err,
    reason = "the error is the SCIM response to answer with: built once per request, never carried"
)]

mod discovery;
mod groups;
mod resources;
mod users;
mod wire;

use axum::http::StatusCode;
use axum::response::Response;

use crate::access::{Routes, Rule};
use desk::auth::ServiceKind;
use discovery::{resource_type, resource_types, schema, schemas, service_provider_config};
use resources::{create, delete, get, list, patch, replace, search, search_all, Groups, Users};
pub use wire::error;

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
