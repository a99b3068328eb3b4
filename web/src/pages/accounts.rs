//! Team accounts in the console: the admin's staff page (invite, change role, deactivate
//! and reactivate, service tokens), one person's sessions and tokens, a staff member's own
//! API tokens, and accepting an invitation. The rules and rows are `auth::accounts`'; who
//! may open each page is `web::access`'s table. A secret (a token, an invitation link) is
//! shown once, on the page that made it, never in an address.

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use serde::Deserialize;

use crate::error::{status_of, AppError};
use crate::state::AppState;
use desk::auth::accounts::{self, Credential, StaffAccount};
use desk::auth::{self, ServiceKind, Session, StaffRole};
use desk::error::{DomainError, ErrorCode};

use super::common::{
    error_page, has_csrf, render, with_status, CsrfForm, Nav, SameOrigin, SignedIn, Verified,
};

const ROLES: [&str; 4] = ["agent", "supervisor", "policy_author", "admin"];

pub(super) struct StaffRow {
    id: String,
    email: String,
    role: String,
    active: bool,
    sessions: i64,
    failures: i64,
}

#[derive(Template)]
#[template(path = "staff.html")]
pub(super) struct StaffPage {
    nav: Nav,
    csrf: String,
    rows: Vec<StaffRow>,
    roles: &'static [&'static str],
    service_tokens: Vec<Credential>,
    notice: Option<String>,
    error: Option<String>,
    /// What was made and its secret, shown once.
    secret: Option<(String, String)>,
    draft_email: String,
}

/// What the staff page shows besides the list.
#[derive(Default)]
pub(super) struct Shown {
    pub notice: Option<String>,
    pub error: Option<String>,
    pub secret: Option<(String, String)>,
    pub draft_email: String,
}

pub(super) async fn staff_page_response(
    state: &AppState,
    session: &Session,
    shown: Shown,
) -> Response {
    let now = state.clock.now_ms();
    let (accounts, service_tokens) = match tokio::try_join!(
        accounts::list_accounts(&state.db, now),
        accounts::service_tokens(&state.db, now)
    ) {
        Ok(found) => found,
        Err(e) => return AppError::from(e).into_response(),
    };
    let mut rows = Vec::with_capacity(accounts.len());
    for StaffAccount {
        id,
        email,
        role,
        active,
        sessions,
        ..
    } in accounts
    {
        let failures = match auth::recent_failures(&state.db, &email, now).await {
            Ok(n) => n,
            Err(e) => return AppError::from(e).into_response(),
        };
        rows.push(StaffRow {
            id,
            role: role.as_str().into(),
            email,
            active,
            sessions,
            failures,
        });
    }
    render(&StaffPage {
        nav: Nav::of(session, "/console/staff"),
        csrf: session.csrf_token.clone(),
        rows,
        roles: &ROLES,
        service_tokens,
        notice: shown.notice,
        error: shown.error,
        secret: shown.secret,
        draft_email: shown.draft_email,
    })
}

/// The staff page again after a refused form, under the refusal's status.
async fn refused(
    state: &AppState,
    session: &Session,
    e: DomainError,
    draft_email: String,
) -> Response {
    let shown = Shown {
        error: Some(e.public_message()),
        draft_email,
        ..Shown::default()
    };
    with_status(
        status_of(&e),
        staff_page_response(state, session, shown).await,
    )
}

#[derive(Deserialize)]
pub(super) struct InviteForm {
    csrf: String,
    email: String,
    role: String,
}

/// `POST /console/staff/invite` (admin): the link is shown once on the page.
pub(super) async fn invite_submit(
    State(state): State<AppState>,
    headers: axum::http::HeaderMap,
    Verified(session, form): Verified<InviteForm>,
) -> Response {
    let now = state.clock.now_ms();
    let invited = match StaffRole::parse(&form.role) {
        Ok(role) => accounts::invite(&state.db, &session.staff.id, &form.email, role, now)
            .await
            .map(|token| (token, role)),
        Err(e) => Err(e),
    };
    match invited {
        Ok((token, role)) => {
            let base = public_base(&state, &headers);
            let link = format!("{base}/console/invite?token={token}");
            // The link is also on the page: a mail that could not be queued is logged,
            // and the admin still has the link to pass on.
            if let Err(e) =
                accounts::send_invitation(&state.db, &form.email, role, &link, now).await
            {
                tracing::warn!(error = %e, "the invitation mail was not queued");
            }
            let secret = Some((format!("Invitation for {}", form.email.trim()), link));
            staff_page_response(
                &state,
                &session,
                Shown {
                    secret,
                    ..Shown::default()
                },
            )
            .await
        }
        Err(e) => refused(&state, &session, e, form.email).await,
    }
}

/// Where links point: `PUBLIC_URL`, else the address this request reached the desk at
/// (its `Host`), so a link copied into a mail opens from anywhere.
fn public_base(state: &AppState, headers: &axum::http::HeaderMap) -> String {
    if let Some(url) = state.public_url.as_deref() {
        return url.trim_end_matches('/').to_string();
    }
    let host = headers
        .get(axum::http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .filter(|h| h.bytes().all(|b| b.is_ascii_graphic()))
        .unwrap_or("127.0.0.1:8080");
    let scheme = if state.secure_cookies {
        "https"
    } else {
        "http"
    };
    format!("{scheme}://{host}")
}

#[derive(Deserialize)]
pub(super) struct RoleForm {
    csrf: String,
    role: String,
}

/// `POST /console/staff/{id}/role` (admin).
pub(super) async fn role_submit(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Verified(session, form): Verified<RoleForm>,
) -> Response {
    let now = state.clock.now_ms();
    let changed = match StaffRole::parse(&form.role) {
        Ok(role) => accounts::change_role(&state.db, &session.staff.id, &id, role, now).await,
        Err(e) => Err(e),
    };
    done(&state, &session, changed, "Role changed.").await
}

/// `POST /console/staff/{id}/deactivate` (admin): every session and token of theirs stops
/// working at once. An admin cannot deactivate themselves (the desk would lose its admin).
pub(super) async fn deactivate_submit(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Verified(session, _): Verified<CsrfForm>,
) -> Response {
    let result = if id == session.staff.id {
        Err(DomainError::conflict(
            ErrorCode::OwnAccount,
            "you cannot deactivate yourself",
        ))
    } else {
        accounts::deactivate(&state.db, &session.staff.id, &id, state.clock.now_ms()).await
    };
    done(
        &state,
        &session,
        result,
        "Deactivated: their sessions and tokens no longer work.",
    )
    .await
}

/// `POST /console/staff/{id}/reactivate` (admin).
pub(super) async fn reactivate_submit(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Verified(session, _): Verified<CsrfForm>,
) -> Response {
    let result =
        accounts::reactivate(&state.db, &session.staff.id, &id, state.clock.now_ms()).await;
    done(
        &state,
        &session,
        result,
        "Reactivated: they sign in again with new credentials.",
    )
    .await
}

async fn done(
    state: &AppState,
    session: &Session,
    result: Result<(), DomainError>,
    notice: &str,
) -> Response {
    match result {
        Ok(()) => {
            let shown = Shown {
                notice: Some(notice.to_string()),
                ..Shown::default()
            };
            staff_page_response(state, session, shown).await
        }
        Err(e) => refused(state, session, e, String::new()).await,
    }
}

// Declared field by field like `InviteForm` (a pair the `duplicates` count shows): each
// console form is the list of what its page posts, read by serde where it is used.
#[derive(Deserialize)]
pub(super) struct ServiceTokenForm {
    csrf: String,
    name: String,
    kind: String,
    days: i64,
}

/// `POST /console/tokens` (admin): a service token, shown once.
pub(super) async fn service_token_submit(
    State(state): State<AppState>,
    Verified(session, form): Verified<ServiceTokenForm>,
) -> Response {
    let now = state.clock.now_ms();
    let issued = match ServiceKind::parse(&form.kind) {
        Ok(kind) => {
            accounts::issue_service_token(
                &state.db,
                &session.staff.id,
                kind,
                &form.name,
                form.days,
                now,
            )
            .await
        }
        Err(e) => Err(e),
    };
    match issued {
        Ok((token, _)) => {
            let secret = Some((format!("{} token {}", form.kind, form.name.trim()), token));
            staff_page_response(
                &state,
                &session,
                Shown {
                    secret,
                    ..Shown::default()
                },
            )
            .await
        }
        Err(e) => refused(&state, &session, e, String::new()).await,
    }
}

#[derive(Template)]
#[template(path = "credentials.html")]
struct CredentialsPage {
    nav: Nav,
    csrf: String,
    heading: String,
    credentials: Vec<Credential>,
    own: bool,
    error: Option<String>,
    secret: Option<(String, String)>,
}

/// `GET /console/staff/{id}` (admin): one person's sessions and tokens.
pub(super) async fn person_page(
    State(state): State<AppState>,
    SignedIn(session): SignedIn,
    Path(id): Path<String>,
) -> Response {
    let now = state.clock.now_ms();
    let found = tokio::try_join!(
        accounts::account(&state.db, &id, now),
        accounts::credentials_of(&state.db, &id, now)
    );
    match found {
        Ok((person, credentials)) => render(&CredentialsPage {
            nav: Nav::of(&session, "/console/staff"),
            csrf: session.csrf_token.clone(),
            heading: format!("{} ({})", person.email, person.role.as_str()),
            credentials,
            own: person.id == session.staff.id,
            error: None,
            secret: None,
        }),
        Err(e) => AppError::from(e).into_response(),
    }
}

/// `GET /console/me/tokens` (any staff): their own sessions and API tokens.
pub(super) async fn own_tokens_page(
    State(state): State<AppState>,
    SignedIn(session): SignedIn,
) -> Response {
    own_tokens_response(&state, &session, None, None).await
}

async fn own_tokens_response(
    state: &AppState,
    session: &Session,
    error: Option<String>,
    secret: Option<(String, String)>,
) -> Response {
    match accounts::credentials_of(&state.db, &session.staff.id, state.clock.now_ms()).await {
        Ok(credentials) => render(&CredentialsPage {
            nav: Nav::of(session, "/console/me/tokens"),
            csrf: session.csrf_token.clone(),
            heading: "Your sessions and tokens".into(),
            credentials,
            own: true,
            error,
            secret,
        }),
        Err(e) => AppError::from(e).into_response(),
    }
}

#[derive(Deserialize)]
pub(super) struct OwnTokenForm {
    csrf: String,
    name: String,
    days: i64,
}

has_csrf!(InviteForm, RoleForm, ServiceTokenForm, OwnTokenForm);

/// `POST /console/me/tokens` (any staff): a named API token of their own, shown once.
pub(super) async fn own_token_submit(
    State(state): State<AppState>,
    Verified(session, form): Verified<OwnTokenForm>,
) -> Response {
    let now = state.clock.now_ms();
    let issued = accounts::issue_staff_token(
        &state.db,
        &session.staff.id,
        &session.staff,
        &form.name,
        form.days,
        now,
    )
    .await;
    match issued {
        Ok((token, _)) => {
            let secret = Some((format!("API token {}", form.name.trim()), token));
            own_tokens_response(&state, &session, None, secret).await
        }
        Err(e) => with_status(
            status_of(&e),
            own_tokens_response(&state, &session, Some(e.public_message()), None).await,
        ),
    }
}

/// `POST /console/tokens/{id}/revoke` (any staff): their own credential, or — an admin —
/// anyone's and every service token.
pub(super) async fn revoke_submit(
    State(state): State<AppState>,
    Path(token_id): Path<String>,
    Verified(session, _): Verified<CsrfForm>,
) -> Response {
    let owner = match accounts::owner_of(&state.db, &token_id).await {
        Ok(owner) => owner,
        Err(e) => return AppError::from(e).into_response(),
    };
    let own = owner.0 == "staff" && owner.1 == session.staff.id;
    if !own && session.staff.role != StaffRole::Admin {
        return error_page(
            StatusCode::FORBIDDEN,
            "Not allowed: only an admin revokes someone else's credential.",
        );
    }
    let now = state.clock.now_ms();
    match accounts::revoke(&state.db, &session.staff.id, &token_id, now).await {
        // Revoking the session in use signs this browser out.
        Ok(())
            if own
                && token_id_of_session(&state, &session).await.as_deref()
                    == Some(token_id.as_str()) =>
        {
            Redirect::to("/console/login").into_response()
        }
        Ok(()) if own => Redirect::to("/console/me/tokens").into_response(),
        Ok(()) if owner.0 == "staff" => {
            Redirect::to(&format!("/console/staff/{}", owner.1)).into_response()
        }
        Ok(()) => Redirect::to("/console/staff").into_response(),
        Err(e) => AppError::from(e).into_response(),
    }
}

async fn token_id_of_session(state: &AppState, session: &Session) -> Option<String> {
    auth::token_id(&state.db, &session.token).await
}

#[derive(Template)]
#[template(path = "invite.html")]
struct InvitePage {
    token: String,
    /// `(email, role)`.
    invite: Option<(String, String)>,
    password_sign_in: bool,
    sso: bool,
    error: Option<String>,
}

#[derive(Deserialize)]
pub(super) struct InviteQuery {
    #[serde(default)]
    token: String,
}

/// `GET /console/invite?token=…` (anyone with the link): what the invitation is for.
/// Opening it spends nothing.
pub(super) async fn invite_page(
    State(state): State<AppState>,
    Query(q): Query<InviteQuery>,
) -> Response {
    let invite = match accounts::open_invite(&state.db, &q.token, state.clock.now_ms()).await {
        Ok(invite) => invite,
        Err(e) => return AppError::from(e).into_response(),
    };
    let error = invite.is_none().then(|| {
        "This invitation is used, expired or unknown; ask an admin for a new one.".to_string()
    });
    let status = if invite.is_some() {
        StatusCode::OK
    } else {
        StatusCode::NOT_FOUND
    };
    with_status(
        status,
        render(&InvitePage {
            invite: invite.map(|i| (i.email, i.role.as_str().to_string())),
            token: q.token,
            password_sign_in: state.password_sign_in,
            sso: state.oidc_configured(),
            error,
        }),
    )
}

#[derive(Deserialize)]
pub(super) struct AcceptForm {
    token: String,
    password: String,
}

/// `POST /console/invite`: the account is made, the link spent, and the person signs in
/// with the password they chose.
pub(super) async fn accept_submit(
    State(state): State<AppState>,
    origin: SameOrigin,
    Form(form): Form<AcceptForm>,
) -> Response {
    if !origin.0 {
        return super::common::cross_site_refused();
    }
    if !state.password_sign_in {
        return error_page(
            StatusCode::FORBIDDEN,
            "Password sign-in is off: sign in with your company account.",
        );
    }
    match accounts::accept_invite(&state.db, &form.token, &form.password, state.clock.now_ms())
        .await
    {
        Ok(_) => Redirect::to("/console/login?joined=1").into_response(),
        Err(e) => {
            let page = render(&InvitePage {
                invite: accounts::open_invite(&state.db, &form.token, state.clock.now_ms())
                    .await
                    .ok()
                    .flatten()
                    .map(|i| (i.email, i.role.as_str().to_string())),
                token: form.token,
                password_sign_in: true,
                sso: state.oidc_configured(),
                error: Some(e.public_message()),
            });
            with_status(status_of(&e), page)
        }
    }
}
