//! Server-rendered pages (askama): the customer's ticket page and the staff console.
//!
//! Every state-changing form carries the session's CSRF token, checked in constant time;
//! askama escapes every value. Customers sign in with a single-use, 15-minute link
//! (`/sign-in?link=…`): the page we serve POSTs it back, from our own origin, and only
//! that POST starts a browser session (an HttpOnly cookie); an API token in a link signs
//! nobody in (issue 16). Customers see only their own tickets.

mod admin;
mod case;
mod case_replies;
mod common;
mod customer;
mod login;
mod markdown;
pub mod policy;
mod policy_draft;
mod queue;
mod reports;
pub mod rollout;
mod run;
mod saved_replies;

pub use common::{error_page, html_escape, page_not_found, render};

use axum::response::Redirect;
use axum::routing::{get, post};
use axum::Router;

use crate::state::AppState;

/// Every page: the customer's, and the console's under the rollout banner
/// (`rollout::banner`, issue 21). Customer pages never show the banner, so they skip
/// its layer (issue 19: each layer with state copies the state on every request).
pub fn routes(state: &AppState) -> Router<AppState> {
    customer_routes().merge(console_routes().layer(axum::middleware::from_fn_with_state(
        state.clone(),
        rollout::banner,
    )))
}

fn customer_routes() -> Router<AppState> {
    Router::new()
        .route(
            "/tickets",
            get(customer::tickets_page).post(customer::new_ticket_submit),
        )
        .route(
            "/sign-in",
            get(customer::sign_in_page).post(customer::sign_in_submit),
        )
        .route("/sign-out", post(customer::sign_out))
        .route("/static/ticket.js", get(customer::ticket_script))
        .route(
            "/static/live.js",
            get(|| async { common::script(include_str!("../../../static/live.js")) }),
        )
        .route(
            "/static/time.js",
            get(|| async { common::script(include_str!("../../../static/time.js")) }),
        )
        .route(
            "/static/saved-replies.js",
            get(|| async { common::script(include_str!("../../../static/saved-replies.js")) }),
        )
        .route("/tickets/{id}", get(customer::ticket_page))
        .route("/tickets/{id}/messages", post(customer::message_submit))
        .route("/tickets/{id}/withdraw", post(customer::withdraw_submit))
        .route("/tickets/{id}/person", post(customer::person_submit))
}

fn console_routes() -> Router<AppState> {
    Router::new()
        .route("/", get(|| async { Redirect::to("/console") }))
        .route("/console", get(queue::queue_page))
        .route(
            "/console/login",
            get(login::login_page).post(login::login_submit),
        )
        .route("/console/logout", post(login::logout))
        .route("/console/cases/{id}", get(case::case_page))
        .route("/console/cases/{id}/approve", post(case::approve_submit))
        .route("/console/cases/{id}/reject", post(case::reject_submit))
        .route("/console/cases/{id}/takeover", post(case::takeover_submit))
        .route("/console/cases/{id}/messages", post(case::message_submit))
        .route("/console/cases/{id}/close", post(case::close_submit))
        .route("/console/cases/{id}/assign", post(case::assign_submit))
        .route("/console/audit", get(admin::audit_page))
        .route("/console/audit.csv", get(admin::audit_csv))
        .route("/console/staff", get(admin::staff_page))
        .route("/console/staff/unlock", post(admin::unlock_submit))
        .route("/console/runs/{id}", get(run::run_page))
        .route(
            "/console/reconcile",
            get(reports::reconcile_page).post(reports::reconcile_submit),
        )
        .route("/console/shadow", get(reports::shadow_page))
        .route(
            "/console/cases/{id}/decide",
            post(case::decide_by_hand_submit),
        )
        .route(
            "/console/rollout",
            get(rollout::rollout_page).post(rollout::rollout_submit),
        )
        .merge(policy::routes())
        .merge(policy_draft::routes())
        .merge(saved_replies::routes())
}
