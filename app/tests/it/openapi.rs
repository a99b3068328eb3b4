//! `GET /api/v1/openapi.json`: an OpenAPI 3.1 document generated from the
//! handlers, that lists exactly the API routes the router serves, each with its
//! request, response and error schemas.

use std::collections::BTreeSet;

use crate::support::spawn_app;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::Value;

const METHODS: [&str; 5] = ["GET", "POST", "PUT", "PATCH", "DELETE"];

async fn document(app: &crate::support::TestApp) -> Value {
    let (status, doc) = app.request("GET", "/api/v1/openapi.json", None, None).await;
    assert_eq!(status, StatusCode::OK, "served without credentials: {doc}");
    doc
}

/// The `/api/v1` paths the router is built with: the access registry every route is
/// declared in (`web::routes`), which is what a new route is added to.
fn router_paths(app: &crate::support::TestApp) -> BTreeSet<String> {
    web::routes(&app.state)
        .declared()
        .iter()
        .filter(|d| d.path.starts_with("/api/v1/"))
        .map(|d| d.path.clone())
        .collect()
}

/// Whether the router serves `method` on `path` (any answer but 405 and the fallback's
/// 404 `route not found`), asked without credentials.
async fn serves(app: &crate::support::TestApp, method: &str, path: &str) -> bool {
    let request = Request::builder()
        .method(method)
        .uri(path.replace("{id}", "x"))
        .header("content-type", "application/json")
        .body(Body::from("{}"))
        .unwrap();
    let (status, body) = app.raw(request).await;
    status != StatusCode::METHOD_NOT_ALLOWED && !body.contains("route not found")
}

#[tokio::test]
async fn the_openapi_document_parses_as_openapi_3_1() {
    let app = spawn_app().await;
    let doc = document(&app).await;
    assert!(
        doc["openapi"].as_str().unwrap().starts_with("3.1"),
        "{}",
        doc["openapi"]
    );
    let parsed = oas3::from_json(doc.to_string()).expect("the document parses as OpenAPI 3.1");
    let paths = parsed.paths.expect("the document has paths");
    assert!(paths.contains_key("/api/v1/tickets"));
    assert!(parsed
        .components
        .is_some_and(|c| c.schemas.contains_key("CaseView")));
    // Every reference resolves to a schema of the document.
    let text = doc.to_string();
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    for piece in text.split("\"$ref\":\"#/components/schemas/").skip(1) {
        let name = piece.split('"').next().unwrap();
        assert!(schemas.contains_key(name), "dangling reference to {name}");
    }
}

#[tokio::test]
async fn every_api_route_the_router_serves_is_documented_and_nothing_else_is() {
    let app = spawn_app().await;
    let doc = document(&app).await;
    let documented: BTreeSet<(String, String)> = doc["paths"]
        .as_object()
        .unwrap()
        .iter()
        .flat_map(|(path, item)| {
            let path = path.clone();
            item.as_object()
                .unwrap()
                .keys()
                .filter(|k| METHODS.contains(&k.to_uppercase().as_str()))
                .map(move |m| (path.clone(), m.to_uppercase()))
        })
        .collect();
    let paths = router_paths(&app);
    assert!(paths.len() >= 15, "{paths:?}");
    let mut served = BTreeSet::new();
    for path in &paths {
        for method in METHODS {
            if serves(&app, method, path).await {
                served.insert((path.clone(), method.to_string()));
            }
        }
    }
    // The MCP service answers every method itself (405 in its own words for the ones
    // MCP's streamable HTTP transport does not use over JSON responses).
    served.retain(|(path, method)| path != "/api/v1/mcp" || method == "POST");
    assert_eq!(
        served.difference(&documented).collect::<Vec<_>>(),
        Vec::<&(String, String)>::new(),
        "routes served without documentation"
    );
    assert_eq!(
        documented.difference(&served).collect::<Vec<_>>(),
        Vec::<&(String, String)>::new(),
        "documented operations the router does not serve"
    );
}

#[tokio::test]
async fn every_operation_documents_its_success_and_error_bodies() {
    let app = spawn_app().await;
    let doc = document(&app).await;
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let responses = op["responses"].as_object().unwrap();
            let success = responses
                .iter()
                .find(|(code, _)| code.starts_with('2'))
                .unwrap_or_else(|| panic!("{method} {path} documents no success"));
            if path == "/api/v1/attachments/{id}"
                || path == "/api/v1/tickets/{id}/attachments/{file}"
            {
                // A customer's file, served only as a download, never as JSON.
                assert!(
                    success.1["content"]["application/octet-stream"]["schema"].is_object(),
                    "{method} {path}: a download"
                );
            } else if path != "/api/v1/mcp" {
                assert!(
                    success.1["content"]["application/json"]["schema"].is_object(),
                    "{method} {path}: success body"
                );
            }
            if path.ends_with("healthz")
                || path.ends_with("readyz")
                || path.ends_with(".json")
                || path.ends_with("mcp")
            {
                continue;
            }
            for code in ["400", "401", "404"] {
                let schema = &responses[code]["content"]["application/json"]["schema"]["$ref"];
                assert_eq!(
                    schema, "#/components/schemas/ErrorBody",
                    "{method} {path} {code}"
                );
            }
            if path == "/api/v1/inbound/email" {
                // One raw mail, as a mail server forwards it.
                assert!(
                    op["requestBody"]["content"]["message/rfc822"]["schema"].is_object(),
                    "{method} {path}: a raw message"
                );
            } else if path == "/api/v1/tickets/{id}/attachments" {
                // One file's bytes, its type read from them.
                assert!(
                    op["requestBody"]["content"]["application/octet-stream"]["schema"].is_object(),
                    "{method} {path}: a file's bytes"
                );
            } else if method == "post"
                && !path.ends_with("withdraw")
                && !path.ends_with("person")
                && !path.ends_with("takeover")
                && !path.ends_with("reconcile")
                && !path.ends_with("sync")
                && !path.ends_with("erase")
            {
                assert!(
                    op["requestBody"]["content"]["application/json"]["schema"].is_object(),
                    "{method} {path}: request body"
                );
            }
        }
    }
}
