//! Reports: reconciliation (provider against internal) and live shadow agreement.

use askama::Template;
use axum::extract::State;
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;

use crate::auth::Session;
use crate::state::AppState;
use crate::web::error::AppError;
use crate::world::serde_plain;

use super::common::{render, verified, CsrfForm, Nav};

#[derive(Template)]
#[template(path = "reconcile.html")]
pub(super) struct ReconcilePage {
    nav: Nav,
    csrf: String,
    summary: Option<String>,
    sections: Vec<(&'static str, usize, String)>,
}

pub(super) fn reconcile_view(
    nav: Nav,
    report: Option<crate::reconcile::ReconcileReport>,
) -> ReconcilePage {
    let Some(r) = report else {
        return ReconcilePage {
            csrf: nav.csrf.clone(),
            nav,
            summary: None,
            sections: vec![],
        };
    };
    fn section<T: serde::Serialize>(
        title: &'static str,
        items: &[T],
    ) -> (&'static str, usize, String) {
        (
            title,
            items.len(),
            serde_json::to_string_pretty(items).unwrap_or_default(),
        )
    }
    ReconcilePage {
        csrf: nav.csrf.clone(),
        nav,
        summary: Some(format!("{} — {}", r.generated_at, r.summary())),
        sections: vec![
            section(
                "Intents without a provider refund",
                &r.intent_without_provider,
            ),
            section(
                "Provider refunds without an intent",
                &r.provider_without_intent,
            ),
            section("Amount mismatches", &r.amount_mismatch),
            section("Status mismatches", &r.status_mismatch),
            section("Unresolved", &r.unresolved),
            section("Resolved by this run", &r.resolved),
            section("Provider errors", &r.errors),
            section("Matched", &r.matched),
        ],
    }
}

/// `GET /console/reconcile`: the last reconciliation report (staff only).
pub(super) async fn reconcile_page(
    State(state): State<AppState>,
    session: Result<Session, AppError>,
) -> Response {
    let Ok(session) = session else {
        return Redirect::to("/console/login").into_response();
    };
    match crate::reconcile::last_report(&state.db).await {
        Ok(report) => render(&reconcile_view(
            Nav::of(&session, "/console/reconcile"),
            report,
        )),
        Err(e) => AppError::from(e).into_response(),
    }
}

pub(super) async fn reconcile_submit(
    State(state): State<AppState>,
    session: Result<Session, AppError>,
    Form(form): Form<CsrfForm>,
) -> Response {
    let session = match verified(session, &form.csrf) {
        Ok(s) => s,
        Err(page) => return page,
    };
    match crate::reconcile::run(state.reconciler()).await {
        Ok(report) => render(&reconcile_view(
            Nav::of(&session, "/console/reconcile"),
            Some(report),
        )),
        Err(e) => AppError::from(e).into_response(),
    }
}

#[derive(Template)]
#[template(path = "shadow.html")]
pub(super) struct ShadowPage {
    nav: Nav,
    /// Whether live shadow mode is on: with it off, the page says how to turn it on.
    shadow_on: bool,
    report: crate::shadow_live::LiveShadowReport,
    outcome_pct: String,
    exact_pct: String,
    chart: String,
    outcomes: Vec<&'static str>,
    matrix: Vec<(&'static str, Vec<usize>)>,
    disagreements: Vec<(String, String, String)>,
}

/// `GET /console/shadow`: live shadow mode's agreement over time, confusion matrix and
/// disagreements (staff only).
pub(super) async fn shadow_page(
    State(state): State<AppState>,
    session: Result<Session, AppError>,
) -> Response {
    let Ok(session) = session else {
        return Redirect::to("/console/login").into_response();
    };
    // Shadow pairs come from `SHADOW_MODE=on` or from any rollout scope in shadow or
    // canary (issue 21); only with neither does the page say shadow mode is off.
    let shadow_on = match crate::rollout::modes::list(&state.db).await {
        Ok(scopes) => {
            state.shadow_mode
                || scopes
                    .iter()
                    .any(|s| s.mode != crate::rollout::Mode::Assist)
        }
        Err(e) => return AppError::from(e).into_response(),
    };
    let report = match crate::shadow_live::report(&state.db).await {
        Ok(r) => r,
        Err(e) => return AppError::from(e).into_response(),
    };
    let outcomes: Vec<&'static str> = crate::replay::CaseOutcome::ALL
        .iter()
        .map(|o| o.as_str())
        .collect();
    let matrix = outcomes
        .iter()
        .map(|h| {
            (
                *h,
                outcomes
                    .iter()
                    .map(|a| {
                        report
                            .confusion
                            .get(*h)
                            .and_then(|r| r.get(*a))
                            .copied()
                            .unwrap_or(0)
                    })
                    .collect(),
            )
        })
        .collect();
    let text = |v: &crate::replay::CaseVerdict| {
        let refunds: Vec<String> = v
            .refunds
            .iter()
            .map(|r| format!("{} {} {}", r.charge_id, r.amount, r.currency))
            .collect();
        format!(
            "{} ({}) {}",
            v.outcome.as_str(),
            serde_plain(&v.reason),
            refunds.join(", ")
        )
    };
    let disagreements = report
        .disagreements
        .iter()
        .map(|p| (p.case_id.clone(), text(&p.human), text(&p.agent)))
        .collect();
    render(&ShadowPage {
        nav: Nav::of(&session, "/console/shadow"),
        shadow_on,
        outcome_pct: format!("{:.1}%", report.outcome_agreement * 100.0),
        exact_pct: format!("{:.1}%", report.exact_agreement * 100.0),
        chart: crate::shadow_live::agreement_chart(&report.by_day),
        outcomes,
        matrix,
        disagreements,
        report,
    })
}
