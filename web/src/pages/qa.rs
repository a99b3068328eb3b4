//! `GET /console/qa`: the lead's quality review (docs/spec/interfaces.md, "QA"): every
//! decision checked against the policy in force (`desk::qa`), per person, reason,
//! language and week, the decisions outside the policy one click from their case, the
//! customers' ratings and comments beside it, and the last reconcile's drift beside
//! that. Supervisors and admins (docs/spec/roles.md). Empty states say what is missing,
//! never a percentage of nothing.

use askama::Template;
use axum::extract::State;
use axum::response::{IntoResponse, Response};

use crate::error::AppError;
use crate::state::AppState;

use super::common::{render, time_tag, Nav, SignedIn};

#[derive(Template)]
#[template(path = "qa.html")]
struct QaPage {
    nav: Nav,
    report: desk::qa::Report,
    /// The headline, in words.
    headline: String,
    this_week: String,
    groups: Vec<GroupTable>,
    breaches: Vec<BreachRow>,
    csat: desk::csat::Report,
    comments: Vec<desk::csat::Comment>,
    /// The last reconcile's drift, in lines; `None` when no run with drift was stored.
    drift: Option<Vec<String>>,
    drift_when: String,
}

/// One "per …" table.
struct GroupTable {
    title: &'static str,
    id: &'static str,
    rows: Vec<(String, usize, usize, String)>,
}

struct BreachRow {
    b: desk::qa::Breach,
    when: String,
}

fn share(within: usize, of: usize) -> String {
    format!("{:.0}%", within as f64 * 100.0 / of.max(1) as f64)
}

fn table(
    title: &'static str,
    id: &'static str,
    groups: &std::collections::BTreeMap<String, desk::qa::Tally>,
) -> GroupTable {
    GroupTable {
        title,
        id,
        rows: groups
            .iter()
            .map(|(name, t)| {
                (
                    name.clone(),
                    t.decisions,
                    t.within_policy,
                    share(t.within_policy, t.decisions),
                )
            })
            .collect(),
    }
}

fn headline(r: &desk::qa::Report) -> String {
    let t = &r.total;
    if t.decisions == 0 {
        return format!(
            "No decisions yet in the last {} weeks: nothing to check against the policy.",
            desk::qa::WEEKS
        );
    }
    format!(
        "{} decisions in the last {} weeks · {} within the policy ({}) · {} outside it",
        t.decisions,
        desk::qa::WEEKS,
        t.within_policy,
        share(t.within_policy, t.decisions),
        t.decisions - t.within_policy
    )
}

/// The last stored reconcile's drift as lines, and when it ran.
async fn drift(state: &AppState) -> Result<(Option<Vec<String>>, String), AppError> {
    let Some(report) = desk::reconcile::last_report(&state.db).await? else {
        return Ok((None, String::new()));
    };
    let when = time_tag(&report.generated_at);
    let Some(d) = report.drift else {
        return Ok((None, when));
    };
    let mut lines: Vec<String> = d
        .customers
        .first
        .iter()
        .map(|c| {
            format!(
                "customer {} ({}): {}",
                c.customer_id,
                c.email,
                desk::world::serde_plain(&c.kind)
            )
        })
        .collect();
    lines.extend(d.orders.first.iter().map(|o| {
        format!(
            "order {}: {} — {}",
            o.order_id,
            desk::world::serde_plain(&o.kind),
            o.detail
        )
    }));
    lines.insert(
        0,
        format!(
            "{} customers and {} orders drifted from the provider; {} charges name no order",
            d.customers.count, d.orders.count, d.unlinked_charges
        ),
    );
    lines.extend(d.errors.iter().map(|e| format!("partial: {e}")));
    Ok((Some(lines), when))
}

pub(super) async fn qa_page(
    State(state): State<AppState>,
    SignedIn(session): SignedIn,
) -> Response {
    match page(&state, Nav::of(&session, "/console/qa")).await {
        Ok(page) => render(&page),
        Err(e) => e.into_response(),
    }
}

async fn page(state: &AppState, nav: Nav) -> Result<QaPage, AppError> {
    let report = desk::qa::report(&state.db, state.clock.now_ms()).await?;
    let csat = desk::csat::report(&state.db).await?;
    let comments = desk::csat::recent_comments(&state.db, 20).await?;
    let (drift, drift_when) = drift(state).await?;
    let this_week = if report.this_week == 0 {
        "No decisions yet this week.".to_string()
    } else {
        format!("{} decisions this week.", report.this_week)
    };
    let groups = vec![
        table("person", "qa-by-person", &report.by_person),
        table("reason", "qa-by-reason", &report.by_reason),
        table("language", "qa-by-language", &report.by_language),
        table("week", "qa-by-week", &report.by_week),
    ];
    let breaches = report
        .breaches
        .iter()
        .map(|b| BreachRow {
            when: time_tag(&desk::clock::rfc3339(b.decided_at)),
            b: b.clone(),
        })
        .collect();
    Ok(QaPage {
        nav,
        headline: headline(&report),
        this_week,
        groups,
        breaches,
        csat,
        comments,
        drift,
        drift_when,
        report,
    })
}
