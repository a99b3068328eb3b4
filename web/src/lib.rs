//! The web edge: the router, the extractors, the JSON API's handlers, the MCP endpoint,
//! the OpenAPI document and the server-rendered pages. Everything here turns a request
//! into a call on the domain modules below and their answer (or `AppError`) into a
//! response; no domain module imports from here.

pub mod access;
pub mod api;
pub mod error;
pub mod extract;
pub mod gate;
pub mod links;
pub mod mcp;
pub mod openapi;
pub mod pages;
pub mod router;
pub mod scim;
pub mod state;

pub use router::{router, router_from, routes, CONTENT_SECURITY_POLICY, REQUEST_ID_HEADER};
