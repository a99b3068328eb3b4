//! Server-rendered pages (askama): the customer's ticket page and the staff console.
//!
//! Every state-changing form carries the session's CSRF token, checked in constant time;
//! askama escapes every value. Customers sign in with a single-use, 15-minute link
//! (`/sign-in?link=…`): the page we serve POSTs it back, from our own origin, and only
//! that POST starts a browser session (an HttpOnly cookie); an API token in a link signs
//! nobody in. Customers see only their own tickets.

mod accounts;
mod admin;
mod case;
mod case_conversation;
mod case_decide;
mod case_replies;
mod case_shadow;
mod case_translate;
mod charges;
mod common;
mod customer;
mod customer_data;
mod login;
mod markdown;
pub mod policy;
mod policy_draft;
mod policy_thresholds;
mod qa;
mod queue;
mod queue_bulk;
mod reports;
pub mod rollout;
mod run;
mod saved_replies;
pub mod shadow_report;
mod sso;
mod whatif_words;

pub use common::{error_page, page_not_found, render};
pub use customer::open_from_link_page;

use axum::response::Redirect;

use crate::access::{Capability, Routes, Rule};
use crate::state::AppState;

/// Every page: the customer's, and the console's under the rollout banner
/// (`rollout::banner`). Customer pages never show the banner, so they skip
/// its layer (each layer with state copies the state on every request).
pub fn routes(state: &AppState) -> Routes {
    let banner = axum::middleware::from_fn_with_state(state.clone(), rollout::banner);
    customer_routes().merge(console_routes().map_router(|r| r.layer(banner)))
}

fn script(body: &'static str) -> impl Fn() -> std::future::Ready<axum::response::Response> + Clone {
    move || std::future::ready(common::script(body))
}

fn customer_routes() -> Routes {
    let customer = Rule::Customer;
    Routes::new()
        .get("/tickets", customer, customer::tickets_page)
        .post("/tickets", customer, customer::new_ticket_submit)
        .get("/sign-in", Rule::Anyone, customer::sign_in_page)
        .post("/sign-in", Rule::Anyone, customer::sign_in_submit)
        .post("/sign-out", customer, customer::sign_out)
        .get("/static/ticket.js", Rule::Anyone, customer::ticket_script)
        .get(
            "/static/live.js",
            Rule::Anyone,
            script(include_str!("../../static/live.js")),
        )
        .get(
            "/static/time.js",
            Rule::Anyone,
            script(include_str!("../../static/time.js")),
        )
        .get(
            "/static/saved-replies.js",
            Rule::Anyone,
            script(include_str!("../../static/saved-replies.js")),
        )
        .get("/tickets/{id}", customer, customer::ticket_page)
        .post("/tickets/{id}/messages", customer, customer::message_submit)
        .post(
            "/tickets/{id}/withdraw",
            customer,
            customer::withdraw_submit,
        )
        .post("/tickets/{id}/person", customer, customer::person_submit)
        .post("/tickets/{id}/csat", customer, customer::csat_submit)
}

fn console_routes() -> Routes {
    let read = Rule::Staff(Capability::ReadCases);
    let work = Rule::Staff(Capability::WorkCases);
    let decide = Rule::Staff(Capability::DecideRefunds);
    let admin = Rule::Staff(Capability::Administer);
    Routes::new()
        .get("/", Rule::Anyone, || async { Redirect::to("/console") })
        .get("/console", read, queue::queue_page)
        .post("/console/bulk", work, queue_bulk::bulk_submit)
        .get(
            "/static/console-keys.js",
            Rule::Anyone,
            script(include_str!("../../static/console-keys.js")),
        )
        .get(
            "/static/presence.js",
            Rule::Anyone,
            script(include_str!("../../static/presence.js")),
        )
        .get("/console/login", Rule::Anyone, login::login_page)
        .post("/console/login", Rule::Anyone, login::login_submit)
        .post("/console/logout", Rule::AnyStaff, login::logout)
        .get("/console/cases/{id}", read, case::case_page)
        .post(
            "/console/cases/{id}/approve",
            decide,
            case_decide::approve_submit,
        )
        .post(
            "/console/cases/{id}/reject",
            decide,
            case_decide::reject_submit,
        )
        .post(
            "/console/cases/{id}/handup",
            work,
            case_decide::handup_submit,
        )
        .post(
            "/console/cases/{id}/takeover",
            Rule::Staff(Capability::TakeOver),
            case_decide::takeover_submit,
        )
        .post(
            "/console/cases/{id}/messages",
            work,
            case_conversation::message_submit,
        )
        .post(
            "/console/cases/{id}/close",
            Rule::Staff(Capability::CloseCases),
            case_conversation::close_submit,
        )
        .post(
            "/console/cases/{id}/assign",
            work,
            case_conversation::assign_submit,
        )
        // Staff only: a customer session never matches a staff rule.
        .post(
            "/console/cases/{id}/translate",
            read,
            case_translate::translate_submit,
        )
        .post(
            "/console/cases/{id}/customer-mail",
            work,
            case_conversation::clear_undeliverable_submit,
        )
        .post(
            "/console/cases/{id}/decide",
            work,
            case_shadow::decide_by_hand_submit,
        )
        .get("/console/audit", read, admin::audit_page)
        .get("/console/audit.csv", read, admin::audit_csv)
        .get("/console/staff", admin, admin::staff_page)
        .post("/console/staff/unlock", admin, admin::unlock_submit)
        .post("/console/staff/invite", admin, accounts::invite_submit)
        .get("/console/staff/{id}", admin, accounts::person_page)
        .post("/console/staff/{id}/role", admin, accounts::role_submit)
        .post(
            "/console/staff/{id}/deactivate",
            admin,
            accounts::deactivate_submit,
        )
        .post(
            "/console/staff/{id}/reactivate",
            admin,
            accounts::reactivate_submit,
        )
        .post("/console/tokens", admin, accounts::service_token_submit)
        .post(
            "/console/tokens/{id}/revoke",
            Rule::AnyStaff,
            accounts::revoke_submit,
        )
        .get(
            "/console/me/tokens",
            Rule::AnyStaff,
            accounts::own_tokens_page,
        )
        .post(
            "/console/me/tokens",
            Rule::AnyStaff,
            accounts::own_token_submit,
        )
        .get("/console/sso", Rule::Anyone, sso::start)
        .get("/console/sso/callback", Rule::Anyone, sso::callback)
        .get("/console/invite", Rule::Anyone, accounts::invite_page)
        .post("/console/invite", Rule::Anyone, accounts::accept_submit)
        .get("/console/runs/{id}", read, run::run_page)
        .get("/console/reconcile", read, reports::reconcile_page)
        .post("/console/reconcile", work, reports::reconcile_submit)
        .get("/console/shadow", read, reports::shadow_page)
        .get("/console/csat", read, reports::csat_page)
        .get(
            "/console/qa",
            Rule::Staff(Capability::ReviewDecisions),
            qa::qa_page,
        )
        .get("/console/rollout", admin, rollout::rollout_page)
        .post("/console/rollout", admin, rollout::rollout_submit)
        .get("/console/data", admin, customer_data::data_page)
        .get(
            "/console/data/export",
            admin,
            customer_data::export_download,
        )
        .post("/console/data/erase", admin, customer_data::erase_submit)
        .merge(policy::routes())
        .merge(policy_draft::routes())
        .merge(saved_replies::routes())
        .merge(charges::routes())
}
