//! Reports: reconciliation (provider against internal), live shadow agreement and
//! customer satisfaction.

use crate::extract::Authed;
use askama::Template;
use axum::extract::State;
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;

use crate::error::AppError;
use crate::state::AppState;
use desk::auth::Session;

use super::common::{render, verified, CsrfForm, Nav, SignedIn};

#[derive(Template)]
#[template(path = "reconcile.html")]
pub(super) struct ReconcilePage {
    nav: Nav,
    csrf: String,
    summary: Option<String>,
    sections: Vec<Section>,
}

/// One list of the report as a table: a column per field, cases and provider refunds
/// linked ("reconcile results as linked tables").
pub(super) struct Section {
    title: &'static str,
    /// Matched lines are the good news: their count is not a warning.
    warns: bool,
    columns: Vec<String>,
    rows: Vec<Vec<Cell>>,
}

pub(super) struct Cell {
    text: String,
    href: Option<String>,
}

impl Section {
    fn of<T: serde::Serialize>(title: &'static str, warns: bool, items: &[T]) -> Section {
        let objects: Vec<serde_json::Map<String, serde_json::Value>> = items
            .iter()
            .filter_map(|item| match serde_json::to_value(item) {
                Ok(serde_json::Value::Object(fields)) => Some(fields),
                _ => None,
            })
            .collect();
        let keys: Vec<String> = objects
            .first()
            .map(|first| first.keys().cloned().collect())
            .unwrap_or_default();
        let rows = objects
            .iter()
            .map(|fields| {
                keys.iter()
                    .map(|key| Cell::of(key, fields.get(key)))
                    .collect()
            })
            .collect();
        Section {
            title,
            warns,
            columns: keys.iter().map(|key| column_label(key)).collect(),
            rows,
        }
    }
}

impl Cell {
    fn of(key: &str, value: Option<&serde_json::Value>) -> Cell {
        let text = match value {
            None | Some(serde_json::Value::Null) => String::new(),
            Some(serde_json::Value::String(text)) => text.clone(),
            Some(other) => other.to_string(),
        };
        let href = (key == "case_id" && !text.is_empty()).then(|| format!("/console/cases/{text}"));
        Cell { text, href }
    }
}

/// `intent_id` → `Intent`, `provider_refund_id` → `Provider refund`.
fn column_label(key: &str) -> String {
    let words = key.strip_suffix("_id").unwrap_or(key).replace('_', " ");
    let mut chars = words.chars();
    chars
        .next()
        .map(|first| first.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

pub(super) fn reconcile_view(
    nav: Nav,
    report: Option<desk::reconcile::ReconcileReport>,
) -> ReconcilePage {
    let Some(r) = report else {
        return ReconcilePage {
            csrf: nav.csrf.clone(),
            nav,
            summary: None,
            sections: vec![],
        };
    };
    ReconcilePage {
        csrf: nav.csrf.clone(),
        nav,
        summary: Some(format!("{} — {}", r.generated_at, r.summary())),
        sections: vec![
            Section::of(
                "Intents without a provider refund",
                true,
                &r.intent_without_provider,
            ),
            Section::of(
                "Provider refunds without an intent",
                true,
                &r.provider_without_intent,
            ),
            Section::of("Amount mismatches", true, &r.amount_mismatch),
            Section::of("Status mismatches", true, &r.status_mismatch),
            Section::of("Unresolved", true, &r.unresolved),
            Section::of("Resolved by this run", false, &r.resolved),
            Section::of("Provider errors", true, &r.errors),
            Section::of("Matched", false, &r.matched),
        ],
    }
}

/// `GET /console/reconcile`: the last reconciliation report (staff only).
pub(super) async fn reconcile_page(
    State(state): State<AppState>,
    SignedIn(session): SignedIn,
) -> Response {
    match desk::reconcile::last_report(&state.db).await {
        Ok(report) => render(&reconcile_view(
            Nav::of(&session, "/console/reconcile"),
            report,
        )),
        Err(e) => AppError::from(e).into_response(),
    }
}

pub(super) async fn reconcile_submit(
    State(state): State<AppState>,
    Authed(session): Authed<Result<Session, AppError>>,
    Form(form): Form<CsrfForm>,
) -> Response {
    if let Err(page) = verified(session, &form.csrf) {
        return page;
    }
    // The report is stored; the page shows the last one, so a reload after the run
    // reads it again rather than running another (a redirect after a POST).
    match desk::reconcile::run(state.reconciler()).await {
        Ok(_) => Redirect::to("/console/reconcile").into_response(),
        Err(e) => AppError::from(e).into_response(),
    }
}

#[derive(Template)]
#[template(path = "shadow.html")]
pub(super) struct ShadowPage {
    nav: Nav,
    /// Whether live shadow mode is on: with it off, the page says how to turn it on.
    shadow_on: bool,
    report: shadow::live::LiveShadowReport,
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
    SignedIn(session): SignedIn,
) -> Response {
    // Shadow pairs come from `SHADOW_MODE=on` or from any rollout scope in shadow or
    // canary; only with neither does the page say shadow mode is off.
    let shadow_on = match desk::rollout::modes::list(&state.db).await {
        Ok(scopes) => {
            state.shadow_mode || scopes.iter().any(|s| s.mode != desk::rollout::Mode::Assist)
        }
        Err(e) => return AppError::from(e).into_response(),
    };
    let report = match shadow::live::report(&state.db).await {
        Ok(r) => r,
        Err(e) => return AppError::from(e).into_response(),
    };
    let outcomes: Vec<&'static str> = shadow::replay::CaseOutcome::ALL
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
    let text = super::shadow_report::verdict_text;
    let disagreements = report
        .disagreements
        .iter()
        .map(|p| (p.case_id.clone(), text(&p.human), text(&p.agent)))
        .collect();
    render(&ShadowPage {
        nav: Nav::of(&session, "/console/shadow"),
        shadow_on,
        outcome_pct: share(report.decided, report.outcome_agreement),
        exact_pct: share(report.decided, report.exact_agreement),
        chart: shadow::live::agreement_chart(&report.by_day),
        outcomes,
        matrix,
        disagreements,
        report,
    })
}

/// An agreement share of `decided` pairs: with none decided there is no share to show
/// (a 0.0% would read as "the agent is always wrong").
fn share(decided: usize, rate: f64) -> String {
    if decided == 0 {
        "none yet (no reviewer has decided a shadow pair)".to_string()
    } else {
        format!("{:.1}%", rate * 100.0)
    }
}

#[derive(Template)]
#[template(path = "csat.html")]
pub(super) struct CsatPage {
    nav: Nav,
    report: desk::csat::Report,
    /// The newest comments, for staff to read (an erasure removes them).
    comments: Vec<desk::csat::Comment>,
}

/// `GET /console/csat`: customers' ratings after resolution, per person and per reason.
pub(super) async fn csat_page(
    State(state): State<AppState>,
    SignedIn(session): SignedIn,
) -> Response {
    let comments = match desk::csat::recent_comments(&state.db, 50).await {
        Ok(comments) => comments,
        Err(e) => return AppError::from(e).into_response(),
    };
    match desk::csat::report(&state.db).await {
        Ok(report) => render(&CsatPage {
            nav: Nav::of(&session, "/console/csat"),
            report,
            comments,
        }),
        Err(e) => AppError::from(e).into_response(),
    }
}
