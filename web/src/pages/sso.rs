//! Signing in with the company's identity provider: `GET /console/sso` sends the browser
//! to the provider, `GET /console/sso/callback` comes back with a code, and only a
//! person `auth::oidc::staff_for` lets in gets a console session. The start hands the
//! browser a short-lived HttpOnly cookie the callback must bring back (the sign-in is
//! bound to that browser: docs/spec/roles.md). Every refusal is a 4xx (a 503 when the
//! provider is out of reach) page that says why in the console's words and sets no
//! cookie; what the provider said goes to the log only.

use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;

use crate::state::AppState;
use desk::auth::{self, oidc::Refused};

use super::common::{home_of, redirect_with_cookie, render, set_cookie, with_status};
use super::login::LoginPage;
use crate::extract::cookie_header;

/// Where the provider sends the browser back: under `PUBLIC_URL`.
fn redirect_url(state: &AppState) -> String {
    let base = state
        .public_url
        .as_deref()
        .unwrap_or("")
        .trim_end_matches('/');
    format!("{base}/console/sso/callback")
}

/// The cookie that binds a sign-in in flight to the browser that started it.
const BINDING_COOKIE: &str = "rd_sso";
/// How long that cookie lives: as long as a sign-in may take.
const BINDING_SECS: i64 = auth::oidc::LOGIN_TTL_MS / 1000;

fn refused(state: &AppState, why: &Refused) -> Response {
    let status = match why {
        Refused::Store(_) => StatusCode::INTERNAL_SERVER_ERROR,
        Refused::Unreachable(_) => StatusCode::SERVICE_UNAVAILABLE,
        Refused::Provider(_) => StatusCode::BAD_REQUEST,
        Refused::UnknownState | Refused::Token(_) => StatusCode::UNAUTHORIZED,
        Refused::NoEmail
        | Refused::EmailNotVerified
        | Refused::LinkedToAnother
        | Refused::NoGroup
        | Refused::NotInvited
        | Refused::Deactivated => StatusCode::FORBIDDEN,
    };
    match why {
        Refused::Store(e) => {
            tracing::error!(error = %e, "sign-in with the identity provider failed")
        }
        Refused::Provider(said) | Refused::Unreachable(said) | Refused::Token(said) => {
            tracing::warn!(reason = %why, provider = %said, "sign-in with the identity provider refused")
        }
        _ => tracing::warn!(reason = %why, "sign-in with the identity provider refused"),
    }
    let message = match why {
        Refused::Store(_) => "The sign-in could not be recorded; try again.".to_string(),
        other => format!("{}.", capitalised(&other.to_string())),
    };
    with_status(status, render(&LoginPage::of(state, Some(message), None)))
}

fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// `GET /console/sso` (anyone): off to the provider.
pub(super) async fn start(State(state): State<AppState>) -> Response {
    let Some(oidc) = state.oidc.clone() else {
        return with_status(
            StatusCode::NOT_FOUND,
            render(&LoginPage::of(
                &state,
                Some("Sign-in with an identity provider is not set up here.".into()),
                None,
            )),
        );
    };
    match oidc
        .begin(&state.db, &redirect_url(&state), state.clock.now_ms())
        .await
    {
        Ok(started) => {
            let mut response = Redirect::to(&started.url).into_response();
            let cookie = set_cookie(
                &state,
                BINDING_COOKIE,
                &started.browser_binding,
                BINDING_SECS,
            );
            response.headers_mut().insert(header::SET_COOKIE, cookie);
            response
        }
        Err(why) => refused(&state, &why),
    }
}

#[derive(Deserialize)]
pub(super) struct Callback {
    #[serde(default)]
    code: Option<String>,
    #[serde(default)]
    state: Option<String>,
    #[serde(default)]
    error: Option<String>,
}

/// `GET /console/sso/callback` (anyone with a state we issued): the code exchanged, the
/// ID token checked, the person let in or refused.
pub(super) async fn callback(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<Callback>,
) -> Response {
    let Some(oidc) = state.oidc.clone() else {
        return with_status(
            StatusCode::NOT_FOUND,
            render(&LoginPage::of(&state, None, None)),
        );
    };
    if let Some(error) = q.error {
        return refused(&state, &Refused::Provider(error));
    }
    let (Some(code), Some(sign_in)) = (q.code, q.state) else {
        return refused(&state, &Refused::UnknownState);
    };
    let now = state.clock.now_ms();
    let identity = match oidc
        .finish(
            &state.db,
            &redirect_url(&state),
            (&code, &sign_in, cookie_header(&headers, BINDING_COOKIE)),
            now,
        )
        .await
    {
        Ok(identity) => identity,
        Err(why) => return refused(&state, &why),
    };
    let staff = match auth::oidc::staff_for(
        &state.db,
        &oidc.settings,
        &state.group_roles,
        &identity,
        now,
    )
    .await
    {
        Ok(staff) => staff,
        Err(why) => return refused(&state, &why),
    };
    match auth::issue_token(&state.db, "session", "staff", &staff.id, now).await {
        Ok((token, _)) => redirect_with_cookie(
            &state,
            home_of(staff.role),
            auth::SESSION_COOKIE,
            &token,
            12 * 3600,
        ),
        Err(e) => refused(&state, &Refused::Store(e)),
    }
}
