//! Staff sign in and out of the console (password, argon2id; see `auth`).

use crate::extract::Authed;
use askama::Template;
use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Form;
use serde::Deserialize;

use crate::error::AppError;
use crate::state::AppState;
use desk::auth::{self, constant_time_eq, Session};

use super::common::{
    cross_site_refused, redirect_with_cookie, render, with_status, CsrfForm, SameOrigin,
};

#[derive(Template)]
#[template(path = "login.html")]
pub(super) struct LoginPage {
    error: Option<String>,
    notice: Option<String>,
    /// Password sign-in is on (`PASSWORD_SIGN_IN`).
    password: bool,
    /// The company's identity provider is configured (`OIDC_ISSUER`).
    sso: bool,
}

impl LoginPage {
    pub(super) fn of(state: &AppState, error: Option<String>, notice: Option<String>) -> LoginPage {
        LoginPage {
            error,
            notice,
            password: state.password_sign_in,
            sso: state.oidc_configured(),
        }
    }
}

#[derive(Deserialize)]
pub(super) struct LoginQuery {
    #[serde(default)]
    joined: Option<String>,
}

pub(super) async fn login_page(
    State(state): State<AppState>,
    axum::extract::Query(q): axum::extract::Query<LoginQuery>,
) -> Response {
    let notice = q.joined.map(|_| "Welcome: sign in to start.".to_string());
    render(&LoginPage::of(&state, None, notice))
}

#[derive(Deserialize)]
pub(super) struct LoginForm {
    email: String,
    password: String,
}

pub(super) async fn login_submit(
    State(state): State<AppState>,
    client: crate::extract::ClientAddr,
    origin: SameOrigin,
    Form(form): Form<LoginForm>,
) -> Response {
    if !origin.0 {
        return cross_site_refused();
    }
    let login_page = |status: StatusCode, error: String| {
        with_status(status, render(&LoginPage::of(&state, Some(error), None)))
    };
    if !state.password_sign_in {
        let why = "Password sign-in is off: sign in with your company account.".to_string();
        return login_page(StatusCode::FORBIDDEN, why);
    }
    let now = state.clock.now_ms();
    let login = auth::login(&state.db, &form.email, &form.password, &client.0, now).await;
    match login {
        Ok(auth::LoginResult::LoggedIn(staff)) => {
            match auth::issue_token(&state.db, "session", "staff", &staff.id, now).await {
                Ok((token, _)) => redirect_with_cookie(
                    &state,
                    super::common::home_of(staff.role),
                    auth::SESSION_COOKIE,
                    &token,
                    12 * 3600,
                ),
                Err(e) => AppError::from(e).into_response(),
            }
        }
        Ok(auth::LoginResult::Throttled { retry_after_ms }) => {
            let secs = (retry_after_ms + 999) / 1000;
            let mut resp = login_page(
                StatusCode::TOO_MANY_REQUESTS,
                format!("Too many failed attempts. Wait {secs} s and try again."),
            );
            resp.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
            resp
        }
        Ok(auth::LoginResult::WrongCredentials) => {
            login_page(StatusCode::UNAUTHORIZED, "Wrong email or password.".into())
        }
        Err(e) => AppError::from(e).into_response(),
    }
}

pub(super) async fn logout(
    State(state): State<AppState>,
    Authed(session): Authed<Result<Session, AppError>>,
    Form(form): Form<CsrfForm>,
) -> Response {
    if let Ok(session) = session {
        if constant_time_eq(&form.csrf, &session.csrf_token) {
            let _ = auth::revoke_token(&state.db, &session.token).await;
        }
    }
    redirect_with_cookie(&state, "/console/login", auth::SESSION_COOKIE, "", 0)
}
