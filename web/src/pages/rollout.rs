//! `/console/rollout` (admin): each scope's mode, each guard against its
//! threshold with a small server-side SVG of its stored evaluations, the audit of every
//! change, a promote/demote form (CSRF) and a canary preview from the shadow pairs. And
//! the banner every console page shows while a guard's demotion stands (`banner`).

use crate::extract::Authed;
use askama::Template;
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use desk::error::ErrorCode;
use serde::Deserialize;

use crate::error::AppError;
use crate::state::AppState;
use desk::auth::Session;
use desk::rollout::{self, guards, modes, Mode, Scope};

use super::admin::admin;
use super::common::{or_page, render, verified, with_status, Nav};

/// One guard's row: its reading now and its line over time.
pub(super) struct GuardRow {
    name: String,
    value: String,
    threshold: String,
    sample: String,
    tripped: bool,
    chart: String,
}

pub(super) struct ScopeRow {
    scope: String,
    mode: String,
    updated: String,
    guards: Vec<GuardRow>,
}

#[derive(Template)]
#[template(path = "rollout.html")]
pub(super) struct RolloutPage {
    nav: Nav,
    csrf: String,
    default_mode: desk::rollout::ModeName,
    scopes: Vec<ScopeRow>,
    audit: Vec<(String, String, String)>,
    preview: guards::CanaryPreview,
    notice: Option<String>,
    /// A refused change, said in words beside the form (never a raw JSON page).
    error: Option<String>,
    /// The form as typed, kept when a change is refused.
    typed: Typed,
}

/// What the rollout form held.
#[derive(Default)]
pub(super) struct Typed {
    scope: String,
    mode: String,
    percent: String,
    reason: String,
}

#[derive(Debug, Deserialize)]
pub(super) struct PageQuery {
    preview: Option<u8>,
    done: Option<String>,
}

/// How far back the charts and the preview look.
const HISTORY_MS: i64 = guards::WINDOW_MS;

pub(super) async fn rollout_page(
    State(state): State<AppState>,
    Authed(session): Authed<Result<Session, AppError>>,
    Query(query): Query<PageQuery>,
) -> Response {
    let session = or_page!(admin(session));
    let notice = query
        .done
        .map(|_| "Rollout changed; the audit below records it.".to_string());
    let percent = query.preview.filter(|p| (1..=99).contains(p)).unwrap_or(10);
    match page(&state, &session, percent, notice).await {
        Ok(page) => render(&page),
        Err(e) => e.into_response(),
    }
}

async fn page(
    state: &AppState,
    session: &Session,
    percent: u8,
    notice: Option<String>,
) -> Result<RolloutPage, AppError> {
    let now = state.clock.now_ms();
    let default = Mode::default_for(state.shadow_mode);
    let status = rollout::status(&state.db, &state.rollout_guards, default, now).await?;
    let mut scopes = Vec::new();
    for s in status.scopes {
        let scope = Scope::parse(&s.scope)?;
        let mut rows = Vec::new();
        for r in &s.guards {
            let points = guards::history(&state.db, scope, &r.guard, now - HISTORY_MS).await?;
            rows.push(guard_row(r, &points));
        }
        let mode = match s.percent {
            Some(p) => format!("{} {p}%", s.mode),
            None => s.mode.to_string(),
        };
        scopes.push(ScopeRow {
            scope: s.scope,
            mode,
            updated: format!(
                "{} by {}: {}",
                super::common::time_tag(&desk::clock::rfc3339(s.updated_at)),
                super::common::escaped(&s.updated_by),
                super::common::escaped(&s.reason)
            ),
            guards: rows,
        });
    }
    let audit = desk::audit::case_timeline(&state.db, modes::AUDIT_SUBJECT)
        .await?
        .into_iter()
        .rev()
        .map(|e| (desk::clock::rfc3339(e.at), e.who, e.what))
        .collect();
    Ok(RolloutPage {
        nav: Nav::of(session, "/console/rollout"),
        csrf: session.csrf_token.clone(),
        default_mode: status.default_mode,
        scopes,
        audit,
        preview: guards::canary_preview(&state.db, percent, now - HISTORY_MS).await?,
        notice,
        error: None,
        typed: Typed::default(),
    })
}

fn guard_row(r: &guards::Reading, points: &[guards::Point]) -> GuardRow {
    let show = |v: f64| {
        if r.guard == "time_to_decision_ms" {
            format!("{:.1} h", v / 3_600_000.0)
        } else {
            format!("{v:.2}")
        }
    };
    GuardRow {
        name: r.guard.clone(),
        value: r.value.map_or("no sample".into(), show),
        threshold: format!(
            "{} {}",
            if r.trips == guards::Trips::Above {
                "≤"
            } else {
                "≥"
            },
            show(r.threshold)
        ),
        sample: format!("{} (min {})", r.sample, r.min_sample),
        tripped: r.tripped,
        chart: guard_chart(points, r.threshold),
    }
}

/// A line of a guard's stored values over time with its threshold dashed (no scripts,
/// no external resources: the CSP allows inline SVG images only).
pub(super) fn guard_chart(points: &[guards::Point], threshold: f64) -> String {
    let (width, height) = (240.0, 60.0);
    let top = points
        .iter()
        .filter_map(|p| p.value)
        .fold(threshold * 1.5, f64::max)
        .max(f64::MIN_POSITIVE);
    let y = |v: f64| height - (v / top) * (height - 4.0);
    let step = width / (points.len().max(2) - 1) as f64;
    let line: Vec<String> = points
        .iter()
        .enumerate()
        .filter_map(|(i, p)| {
            p.value
                .map(|v| format!("{:.1},{:.1}", i as f64 * step, y(v)))
        })
        .collect();
    let ty = y(threshold);
    format!(
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" aria-label="value per evaluation"><line x1="0" y1="{ty:.1}" x2="{width}" y2="{ty:.1}" stroke="#b42318" stroke-dasharray="4 3"/><polyline fill="none" stroke="#1d4ed8" stroke-width="2" points="{}"/><text x="2" y="10" font-size="9">{} evaluations</text></svg>"##,
        line.join(" "),
        points.len()
    )
}

#[derive(Debug, Deserialize)]
pub(super) struct RolloutForm {
    csrf: String,
    scope: String,
    mode: String,
    #[serde(default)]
    percent: String,
    #[serde(default)]
    reason: String,
}

/// Promote or demote a scope (admin, CSRF-checked), then back to the page.
#[allow(
    clippy::result_large_err,
    reason = "the error is the page to answer with, an axum Response: built once per request, never carried"
)]
pub(super) async fn rollout_submit(
    State(state): State<AppState>,
    Authed(session): Authed<Result<Session, AppError>>,
    Form(form): Form<RolloutForm>,
) -> Response {
    let session = or_page!(verified(session, &form.csrf).and_then(|s| admin(Ok(s))));
    let changed = async {
        let percent = match form.percent.trim() {
            "" => None,
            p => Some(p.parse::<i64>().map_err(|_| {
                desk::error::DomainError::bad_request(
                    ErrorCode::InvalidPercent,
                    "the percent is a whole number",
                )
            })?),
        };
        let scope = Scope::parse(&form.scope)?;
        let mode = Mode::parse(&form.mode, percent)?;
        let now = state.clock.now_ms();
        modes::set_mode(&state.db, &session.staff.id, scope, mode, &form.reason, now).await
    };
    let error = match changed.await {
        Ok(_) => return Redirect::to("/console/rollout?done=changed").into_response(),
        Err(e) => AppError::from(e),
    };
    refused(&state, &session, error, form).await
}

/// The page again, with why the change was refused beside the form and what was typed.
async fn refused(
    state: &AppState,
    session: &Session,
    error: AppError,
    form: RolloutForm,
) -> Response {
    let status = error.status();
    match page(state, session, 10, None).await {
        Ok(mut page) => {
            page.error = Some(error.to_string());
            page.typed = Typed {
                scope: form.scope,
                mode: form.mode,
                percent: form.percent,
                reason: form.reason,
            };
            with_status(status, render(&page))
        }
        Err(e) => e.into_response(),
    }
}

/// Where `base.html` takes the banner (the marker is a comment: a page without a
/// standing demotion shows nothing).
/// The notice a guard's demotion puts on every console page: each demoted scope and the
/// guard's reason, escaped by askama (a scope or a reason is text from the database).
#[derive(Template)]
#[template(
    source = r#"<div class="card error" id="rollout-banner" role="alert"><strong>Rollout guard tripped.</strong> {% for (scope, why) in demotions %}{% if !loop.first %}; {% endif %}{{ scope }} demoted to shadow: {{ why }}{% endfor %} — <a href="/console/rollout">rollout</a></div>"#,
    ext = "html"
)]
struct Banner<'a> {
    demotions: &'a [(String, String)],
}

pub const BANNER_MARKER: &str = "<!--rollout-banner-->";

/// Puts the rollout banner into every console page while a guard's demotion stands: the
/// page's HTML is read, the marker replaced. Other responses pass untouched.
pub async fn banner(
    State(state): State<AppState>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let console = request.uri().path().starts_with("/console");
    let response = next.run(request).await;
    let is_html = response
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/html"));
    if !console || !is_html {
        return response;
    }
    let demotions = match guards::standing_demotions(&state.db).await {
        Ok(d) if !d.is_empty() => d,
        Ok(_) => return response,
        Err(e) => {
            tracing::warn!(error = %e, "rollout banner: demotions not read");
            return response;
        }
    };
    let (mut parts, body) = response.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, 4 << 20).await else {
        return AppError::from(anyhow::anyhow!("page body not read")).into_response();
    };
    let html = String::from_utf8_lossy(&bytes);
    let banner = match (Banner {
        demotions: &demotions,
    })
    .render()
    {
        Ok(banner) => banner,
        Err(e) => return AppError::from(anyhow::anyhow!("rollout banner: {e}")).into_response(),
    };
    parts.headers.remove(axum::http::header::CONTENT_LENGTH);
    Response::from_parts(
        parts,
        axum::body::Body::from(html.replacen(BANNER_MARKER, &banner, 1)),
    )
}

#[cfg(test)]
mod tests {
    use desk::rollout::guards::Point;

    #[test]
    fn a_guard_chart_draws_its_points_and_threshold_without_scripts() {
        let point = |value| Point {
            period_start: 0,
            value,
            threshold: 0.3,
            tripped: false,
        };
        let svg = super::guard_chart(&[point(Some(0.1)), point(None), point(Some(0.5))], 0.3);
        assert!(svg.starts_with("<svg") && !svg.contains("<script"), "{svg}");
        assert_eq!(
            svg.matches("stroke-dasharray").count(),
            1,
            "one threshold line"
        );
        assert!(svg.contains("3 evaluations"), "{svg}");
        let polyline = svg.split("points=\"").nth(1).unwrap();
        let drawn = polyline.split('"').next().unwrap();
        assert_eq!(
            drawn.split(' ').count(),
            2,
            "a reading without a sample is no point: {drawn}"
        );
    }
}
