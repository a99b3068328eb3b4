//! Who is asking: staff (argon2id passwords, bearer tokens, console sessions) and
//! customers (bearer tokens, or a browser session started from a single-use sign-in
//! link).
//!
//! Identity comes only from these credentials, never from anything typed in a chat or
//! returned by a tool (SPEC invariant 7). Only SHA-256 hashes of tokens are stored.
//! Password hashing runs on the blocking pool behind a small semaphore, so a login
//! flood cannot stall the runtime; failed logins are counted before the hash is checked
//! and slow the next attempt per address and per account (issue 16), never locking the
//! right password out for long.

use argon2::password_hash::{
    rand_core::OsRng, PasswordHash, PasswordHasher, PasswordVerifier, SaltString,
};
use argon2::Argon2;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use rand::RngCore;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use sqlx::Row;

use crate::error::{AppError, AppResult};
use crate::state::AppState;
use crate::store::{new_id, Db};

pub const SESSION_COOKIE: &str = "rd_session";
pub const CUSTOMER_COOKIE: &str = "rd_customer";
const API_TOKEN_TTL_MS: i64 = 30 * 24 * 3600 * 1000;
const SESSION_TTL_MS: i64 = 12 * 3600 * 1000;

/// Staff roles, lowest first. Approval limits by role come from RP-004.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StaffRole {
    Agent,
    Supervisor,
    Admin,
}

impl StaffRole {
    pub fn parse(s: &str) -> AppResult<StaffRole> {
        match s {
            "agent" => Ok(StaffRole::Agent),
            "supervisor" => Ok(StaffRole::Supervisor),
            "admin" => Ok(StaffRole::Admin),
            _ => Err(AppError::bad_request(
                "invalid_role",
                format!("unknown role '{s}' (agent, supervisor, admin)"),
            )),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            StaffRole::Agent => "agent",
            StaffRole::Supervisor => "supervisor",
            StaffRole::Admin => "admin",
        }
    }

    /// Whether this role may approve a refund that needs `required` (RP-004).
    pub fn may_approve(self, required: policy_engine::Role) -> bool {
        let needed = match required {
            policy_engine::Role::Agent => StaffRole::Agent,
            policy_engine::Role::Supervisor => StaffRole::Supervisor,
            policy_engine::Role::Admin => StaffRole::Admin,
        };
        self >= needed
    }
}

#[derive(Debug, Clone)]
pub struct Staff {
    pub id: String,
    pub email: String,
    pub role: StaffRole,
}

/// The authenticated caller of a request.
#[derive(Debug, Clone)]
pub enum Principal {
    Staff(Staff),
    Customer { customer_id: String },
}

impl Principal {
    pub fn staff(&self) -> AppResult<&Staff> {
        match self {
            Principal::Staff(s) => Ok(s),
            Principal::Customer { .. } => Err(AppError::Forbidden("staff only".into())),
        }
    }

    pub fn customer_id(&self) -> AppResult<&str> {
        match self {
            Principal::Customer { customer_id } => Ok(customer_id),
            Principal::Staff(_) => Err(AppError::Forbidden("customers only".into())),
        }
    }
}

pub fn hash_password(password: &str) -> anyhow::Result<String> {
    let salt = SaltString::generate(&mut OsRng);
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| anyhow::anyhow!("hashing password: {e}"))
}

pub fn verify_password(password: &str, hash: &str) -> bool {
    PasswordHash::new(hash).is_ok_and(|parsed| {
        Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok()
    })
}

pub fn random_token() -> String {
    let mut bytes = [0u8; 32];
    rand::thread_rng().fill_bytes(&mut bytes);
    hex::encode(bytes)
}

pub fn token_hash(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// Adds a staff member or updates their role and password. Every session and token the
/// person held is revoked in the same transaction: whoever knew the old password, or
/// held a token issued under the old role, keeps nothing (issue 16).
pub async fn upsert_staff(
    db: &Db,
    email: &str,
    role: StaffRole,
    password: &str,
    now_ms: i64,
) -> AppResult<Staff> {
    let email = email.trim().to_ascii_lowercase();
    if !email.contains('@') || email.len() > 254 {
        return Err(AppError::bad_request(
            "invalid_email",
            format!("'{email}' is not an email address"),
        ));
    }
    if password.chars().count() < 8 {
        return Err(AppError::bad_request(
            "weak_password",
            "passwords have at least 8 characters",
        ));
    }
    let hash = hash_password_off_runtime(password.to_string()).await?;
    let id = new_id("staff");
    let mut tx = db.begin().await?;
    sqlx::query(
        "INSERT INTO staff (id, email, role, password_hash, created_at) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (email) DO UPDATE SET role = excluded.role, password_hash = excluded.password_hash",
    )
    .bind(&id)
    .bind(&email)
    .bind(role.as_str())
    .bind(&hash)
    .bind(now_ms)
    .execute(&mut *tx)
    .await?;
    sqlx::query(
        "DELETE FROM auth_tokens WHERE subject_kind = 'staff'
         AND subject_id = (SELECT id FROM staff WHERE email = $1)",
    )
    .bind(&email)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    staff_by_email(db, &email)
        .await?
        .ok_or(AppError::NotFound("staff"))
}

pub async fn staff_by_email(db: &Db, email: &str) -> AppResult<Option<Staff>> {
    let row = sqlx::query("SELECT id, email, role FROM staff WHERE email = $1")
        .bind(email.trim().to_ascii_lowercase())
        .fetch_optional(db.pool())
        .await?;
    row.map(|r| staff_from_row(&r)).transpose()
}

fn staff_from_row(r: &sqlx::any::AnyRow) -> AppResult<Staff> {
    Ok(Staff {
        id: r.try_get("id")?,
        email: r.try_get("email")?,
        role: StaffRole::parse(&r.try_get::<String, _>("role")?)?,
    })
}

/// Failures are remembered this long, per address and per account.
pub const LOGIN_WINDOW_MS: i64 = 15 * 60 * 1000;
/// Failed logins from one client address before each next attempt waits; the wait then
/// doubles from one second up to `ADDRESS_MAX_DELAY_MS`.
pub const MAX_LOGIN_FAILURES: i64 = 5;
pub const ADDRESS_MAX_DELAY_MS: i64 = LOGIN_WINDOW_MS;
/// Failed logins on one account (from any address) before each next attempt waits; the
/// wait is capped low, so someone who only knows a staff email can slow that person's
/// login by at most a minute, never lock them out.
pub const ACCOUNT_FREE_FAILURES: i64 = 10;
pub const ACCOUNT_MAX_DELAY_MS: i64 = 60 * 1000;
/// Password hashes computed at the same time (argon2 takes a core for tens of ms).
pub const PASSWORD_WORKERS: usize = 2;

static PASSWORD_WORK: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(PASSWORD_WORKERS);

/// What a login attempt came to.
#[derive(Debug)]
pub enum LoginResult {
    LoggedIn(Staff),
    WrongCredentials,
    /// Too many recent failures from this address or on this account: try again after
    /// this many milliseconds. No password was checked.
    Throttled {
        retry_after_ms: i64,
    },
}

/// The wait after `failures` failures, `free` of which cost nothing: one second,
/// doubling, at most `max_ms`.
pub fn throttle_delay_ms(failures: i64, free: i64, max_ms: i64) -> i64 {
    if failures < free {
        return 0;
    }
    let doublings = (failures - free).min(30) as u32;
    1000i64.saturating_mul(1i64 << doublings).min(max_ms)
}

/// Checks a password from `client` (the peer address). The attempt is written as a
/// failure *before* anything is checked, so parallel guesses see each other and at most
/// `MAX_LOGIN_FAILURES` of them reach the hash; it is deleted again when refused by the
/// throttle (a refused attempt neither counts nor extends the wait) or when the password
/// is right. Unknown emails cost the same hash work as wrong passwords.
pub async fn login(
    db: &Db,
    email: &str,
    password: &str,
    client: &str,
    now_ms: i64,
) -> AppResult<LoginResult> {
    let email = email.trim().to_ascii_lowercase();
    let attempt = new_id("login");
    sqlx::query("INSERT INTO login_failures (id, email, client, at) VALUES ($1, $2, $3, $4)")
        .bind(&attempt)
        .bind(&email)
        .bind(client)
        .bind(now_ms)
        .execute(db.pool())
        .await?;
    let wait = login_wait_ms(db, &email, client, &attempt, now_ms).await?;
    if wait > 0 {
        forget_attempt(db, &attempt).await?;
        crate::metrics::record_login_failure("throttled");
        return Ok(LoginResult::Throttled {
            retry_after_ms: wait,
        });
    }
    match check_password(db, &email, password).await? {
        Some(staff) => {
            // The person proved who they are: their own typos from this address go.
            sqlx::query("DELETE FROM login_failures WHERE email = $1 AND client = $2")
                .bind(&email)
                .bind(client)
                .execute(db.pool())
                .await?;
            Ok(LoginResult::LoggedIn(staff))
        }
        None => {
            crate::metrics::record_login_failure("wrong_credentials");
            Ok(LoginResult::WrongCredentials)
        }
    }
}

async fn forget_attempt(db: &Db, attempt: &str) -> AppResult<()> {
    sqlx::query("DELETE FROM login_failures WHERE id = $1")
        .bind(attempt)
        .execute(db.pool())
        .await?;
    Ok(())
}

/// How long this attempt must wait: the longer of the address's and the account's
/// waits, each counted from its latest earlier failure.
async fn login_wait_ms(
    db: &Db,
    email: &str,
    client: &str,
    attempt: &str,
    now_ms: i64,
) -> AppResult<i64> {
    let since = now_ms - LOGIN_WINDOW_MS;
    let by_address = failures_since(db, "client", client, attempt, since).await?;
    let by_account = failures_since(db, "email", email, attempt, since).await?;
    let wait = |(count, last): (i64, i64), free, max| {
        (last + throttle_delay_ms(count, free, max) - now_ms).max(0)
    };
    Ok(
        wait(by_address, MAX_LOGIN_FAILURES, ADDRESS_MAX_DELAY_MS).max(wait(
            by_account,
            ACCOUNT_FREE_FAILURES,
            ACCOUNT_MAX_DELAY_MS,
        )),
    )
}

/// (count, latest time) of failures other than `attempt` whose `column` is `value`.
async fn failures_since(
    db: &Db,
    column: &str,
    value: &str,
    attempt: &str,
    since_ms: i64,
) -> AppResult<(i64, i64)> {
    // `column` is one of two literals chosen above, never input.
    let row = sqlx::query(&format!(
        "SELECT COUNT(*) AS n, COALESCE(MAX(at), 0) AS last FROM login_failures
         WHERE {column} = $1 AND at > $2 AND id <> $3"
    ))
    .bind(value)
    .bind(since_ms)
    .bind(attempt)
    .fetch_one(db.pool())
    .await?;
    Ok((row.try_get("n")?, row.try_get("last")?))
}

/// Forgets an account's failed logins (`refund-agent staff unlock`, the admin's unlock
/// button); returns how many there were.
pub async fn unlock_staff(db: &Db, email: &str) -> AppResult<u64> {
    let done = sqlx::query("DELETE FROM login_failures WHERE email = $1")
        .bind(email.trim().to_ascii_lowercase())
        .execute(db.pool())
        .await?;
    Ok(done.rows_affected())
}

/// Recent failed logins per account, for the admin's staff page.
pub async fn recent_failures(db: &Db, email: &str, now_ms: i64) -> AppResult<i64> {
    let row = sqlx::query("SELECT COUNT(*) AS n FROM login_failures WHERE email = $1 AND at > $2")
        .bind(email)
        .bind(now_ms - LOGIN_WINDOW_MS)
        .fetch_one(db.reader())
        .await?;
    Ok(row.try_get("n")?)
}

/// A hash check on the blocking pool, at most `PASSWORD_WORKERS` at once.
async fn verify_password_off_runtime(password: String, hash: String) -> AppResult<bool> {
    let _permit = PASSWORD_WORK
        .acquire()
        .await
        .map_err(|e| anyhow::anyhow!("password semaphore: {e}"))?;
    tokio::task::spawn_blocking(move || verify_password(&password, &hash))
        .await
        .map_err(|e| AppError::Internal(anyhow::anyhow!("password check: {e}")))
}

async fn hash_password_off_runtime(password: String) -> AppResult<String> {
    let _permit = PASSWORD_WORK
        .acquire()
        .await
        .map_err(|e| anyhow::anyhow!("password semaphore: {e}"))?;
    tokio::task::spawn_blocking(move || hash_password(&password))
        .await
        .map_err(|e| AppError::Internal(anyhow::anyhow!("password hashing: {e}")))?
        .map_err(AppError::Internal)
}

/// A hash of nothing, checked for unknown emails so they cost what a wrong password does.
const DUMMY_HASH: &str =
    "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHQ$ZmFrZWhhc2hmYWtlaGFzaGZha2VoYXNo";

async fn check_password(db: &Db, email: &str, password: &str) -> AppResult<Option<Staff>> {
    let row = sqlx::query("SELECT id, email, role, password_hash FROM staff WHERE email = $1")
        .bind(email)
        .fetch_optional(db.pool())
        .await?;
    let Some(row) = row else {
        verify_password_off_runtime(password.to_string(), DUMMY_HASH.to_string()).await?;
        return Ok(None);
    };
    let hash: String = row.try_get("password_hash")?;
    if verify_password_off_runtime(password.to_string(), hash).await? {
        Ok(Some(staff_from_row(&row)?))
    } else {
        Ok(None)
    }
}

/// Issues a bearer token (`kind = api`) or a console session (`kind = session`, with a
/// CSRF token). Returns the token; only its hash is stored.
pub async fn issue_token(
    db: &Db,
    kind: &str,
    subject_kind: &str,
    subject_id: &str,
    now_ms: i64,
) -> AppResult<(String, Option<String>)> {
    let token = random_token();
    let csrf = (kind == "session").then(random_token);
    let ttl = if kind == "session" {
        SESSION_TTL_MS
    } else {
        API_TOKEN_TTL_MS
    };
    sqlx::query(
        "INSERT INTO auth_tokens (token_hash, kind, subject_kind, subject_id, csrf_token, expires_at, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(token_hash(&token))
    .bind(kind)
    .bind(subject_kind)
    .bind(subject_id)
    .bind(csrf.clone())
    .bind(now_ms + ttl)
    .bind(now_ms)
    .execute(db.pool())
    .await?;
    Ok((token, csrf))
}

pub async fn revoke_token(db: &Db, token: &str) -> AppResult<()> {
    sqlx::query("DELETE FROM auth_tokens WHERE token_hash = $1")
        .bind(token_hash(token))
        .execute(db.pool())
        .await?;
    Ok(())
}

/// How long a customer sign-in link works (issue 16: short-lived, single use).
pub const SIGN_IN_LINK_TTL_MS: i64 = 15 * 60 * 1000;

/// A single-use sign-in link token for a customer, valid `SIGN_IN_LINK_TTL_MS`. It is
/// not an API token: `resolve` never accepts it, and only `redeem_sign_in_link` (the
/// POST from the sign-in page) turns it into a browser session, once.
pub async fn issue_sign_in_link(db: &Db, customer_id: &str, now_ms: i64) -> AppResult<String> {
    let known = sqlx::query("SELECT id FROM customers WHERE id = $1")
        .bind(customer_id)
        .fetch_optional(db.pool())
        .await?;
    if known.is_none() {
        return Err(AppError::NotFound("customer"));
    }
    let token = random_token();
    sqlx::query(
        "INSERT INTO sign_in_links (token_hash, customer_id, expires_at, created_at) VALUES ($1, $2, $3, $4)",
    )
    .bind(token_hash(&token))
    .bind(customer_id)
    .bind(now_ms + SIGN_IN_LINK_TTL_MS)
    .bind(now_ms)
    .execute(db.pool())
    .await?;
    Ok(token)
}

/// Uses a sign-in link: marks it used (one versioned update, so two tabs racing get one
/// session between them) and returns its customer, or `None` when it is unknown, used or
/// expired.
pub async fn redeem_sign_in_link(db: &Db, token: &str, now_ms: i64) -> AppResult<Option<String>> {
    let hash = token_hash(token);
    let used = sqlx::query(
        "UPDATE sign_in_links SET used_at = $1 WHERE token_hash = $2 AND used_at IS NULL AND expires_at > $1",
    )
    .bind(now_ms)
    .bind(&hash)
    .execute(db.pool())
    .await?;
    if used.rows_affected() != 1 {
        return Ok(None);
    }
    let row = sqlx::query("SELECT customer_id FROM sign_in_links WHERE token_hash = $1")
        .bind(&hash)
        .fetch_one(db.pool())
        .await?;
    Ok(Some(row.try_get("customer_id")?))
}

/// Deletes what can no longer be used: expired tokens and sessions, used or expired
/// sign-in links, and failed logins older than the throttle window. `serve` runs it
/// periodically; returns the rows removed.
pub async fn purge_expired(db: &Db, now_ms: i64) -> AppResult<u64> {
    let mut removed = 0;
    for (sql, cutoff) in [
        ("DELETE FROM auth_tokens WHERE expires_at <= $1", now_ms),
        (
            "DELETE FROM sign_in_links WHERE expires_at <= $1 OR used_at IS NOT NULL",
            now_ms,
        ),
        (
            "DELETE FROM login_failures WHERE at <= $1",
            now_ms - LOGIN_WINDOW_MS,
        ),
    ] {
        removed += sqlx::query(sql)
            .bind(cutoff)
            .execute(db.pool())
            .await?
            .rows_affected();
    }
    Ok(removed)
}

/// A resolved credential: who, and the CSRF token when it is a console session.
pub struct Resolved {
    pub principal: Principal,
    pub csrf_token: Option<String>,
}

pub async fn resolve(db: &Db, token: &str, now_ms: i64) -> AppResult<Option<Resolved>> {
    let row = sqlx::query(
        "SELECT subject_kind, subject_id, csrf_token FROM auth_tokens WHERE token_hash = $1 AND expires_at > $2",
    )
    .bind(token_hash(token))
    .bind(now_ms)
    .fetch_optional(db.reader())
    .await?;
    let Some(row) = row else { return Ok(None) };
    let kind: String = row.try_get("subject_kind")?;
    let subject: String = row.try_get("subject_id")?;
    let csrf_token: Option<String> = row.try_get("csrf_token")?;
    let principal = match kind.as_str() {
        "staff" => {
            let r = sqlx::query("SELECT id, email, role FROM staff WHERE id = $1")
                .bind(&subject)
                .fetch_optional(db.reader())
                .await?;
            match r {
                Some(r) => Principal::Staff(staff_from_row(&r)?),
                None => return Ok(None),
            }
        }
        _ => Principal::Customer {
            customer_id: subject,
        },
    };
    Ok(Some(Resolved {
        principal,
        csrf_token,
    }))
}

pub fn cookie<'a>(parts: &'a Parts, name: &str) -> Option<&'a str> {
    parts
        .headers
        .get_all(axum::http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

/// The token of an `Authorization: Bearer …` header.
pub fn bearer(parts: &Parts) -> Option<&str> {
    parts
        .headers
        .get(axum::http::header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .strip_prefix("Bearer ")
        .map(str::trim)
}

/// The console session of a request (cookie), with its CSRF token.
pub struct Session {
    pub staff: Staff,
    pub csrf_token: String,
    pub token: String,
}

impl FromRequestParts<AppState> for Principal {
    type Rejection = AppError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let now = state.clock.now_ms();
        if let Some(token) = bearer(parts) {
            return resolve(&state.db, token, now)
                .await?
                .map(|r| r.principal)
                .ok_or(AppError::Unauthorized);
        }
        for name in [SESSION_COOKIE, CUSTOMER_COOKIE] {
            if let Some(token) = cookie(parts, name) {
                if let Some(r) = resolve(&state.db, token, now).await? {
                    check_cookie_request(parts, r.csrf_token.as_deref())?;
                    return Ok(r.principal);
                }
            }
        }
        Err(AppError::Unauthorized)
    }
}

/// The header a script sends a session's CSRF token in.
pub const CSRF_HEADER: &str = "x-csrf-token";

/// A browser sends its cookies on requests other sites start, so a state-changing API
/// request authenticated by cookie must prove it came from our own pages: the session's
/// CSRF token in `X-CSRF-Token`, or `Sec-Fetch-Site: same-origin`, or an `Origin` naming
/// this host (issue 16; SPEC
/// invariant 12). Bodyless POSTs are no exception. Bearer tokens need neither: a
/// browser never attaches them on its own.
pub fn check_cookie_request(parts: &Parts, csrf_token: Option<&str>) -> AppResult<()> {
    if parts.method.is_safe() {
        return Ok(());
    }
    let sent = parts.headers.get(CSRF_HEADER).and_then(|v| v.to_str().ok());
    if let (Some(sent), Some(expected)) = (sent, csrf_token) {
        if constant_time_eq(sent, expected) {
            return Ok(());
        }
    }
    if origin_matches_host(parts) == Some(true) {
        return Ok(());
    }
    Err(AppError::Forbidden(
        "a request signed in by cookie needs the X-CSRF-Token header or a same-origin Origin"
            .into(),
    ))
}

/// Whether a request was started by one of our own pages: the browser's
/// `Sec-Fetch-Site` (which no page can forge) when sent, else whether `Origin` names
/// the host the request was sent to; `None` when the request carries neither (not a
/// browser, or a very old one). Under `Referrer-Policy: no-referrer` browsers send
/// `Origin: null` on POSTs, so `Sec-Fetch-Site` is asked first.
pub fn origin_matches_host(parts: &Parts) -> Option<bool> {
    if let Some(site) = parts.headers.get("sec-fetch-site") {
        return Some(site.as_bytes() == b"same-origin");
    }
    let origin = parts
        .headers
        .get(axum::http::header::ORIGIN)?
        .to_str()
        .ok()?;
    let host = parts
        .headers
        .get(axum::http::header::HOST)
        .and_then(|v| v.to_str().ok());
    let origin_host = origin
        .strip_prefix("https://")
        .or_else(|| origin.strip_prefix("http://"));
    Some(origin_host.is_some() && origin_host == host)
}

impl FromRequestParts<AppState> for Session {
    type Rejection = AppError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let token = cookie(parts, SESSION_COOKIE)
            .ok_or(AppError::Unauthorized)?
            .to_string();
        let resolved = resolve(&state.db, &token, state.clock.now_ms())
            .await?
            .ok_or(AppError::Unauthorized)?;
        match (resolved.principal, resolved.csrf_token) {
            (Principal::Staff(staff), Some(csrf_token)) => Ok(Session {
                staff,
                csrf_token,
                token,
            }),
            _ => Err(AppError::Unauthorized),
        }
    }
}

/// Constant-time comparison for CSRF tokens, fingerprints and signatures.
pub fn constant_time_eq(a: &str, b: &str) -> bool {
    use subtle::ConstantTimeEq;
    a.len() == b.len() && bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

/// The peer address of a request, from `ConnectInfo` (which `serve` installs), for
/// throttling logins per client. Behind a reverse proxy every client shares the proxy's
/// address; forwarded headers are not trusted, since any client can write them.
pub struct ClientAddr(pub String);

impl<S: Send + Sync> FromRequestParts<S> for ClientAddr {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let addr = parts
            .extensions
            .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
            .map(|info| info.0.ip().to_string())
            .unwrap_or_else(|| "unknown".to_string());
        Ok(ClientAddr(addr))
    }
}

/// Every staff member, by email.
pub async fn list_staff(db: &Db) -> AppResult<Vec<Staff>> {
    let rows = sqlx::query("SELECT id, email, role FROM staff ORDER BY email")
        .fetch_all(db.reader())
        .await?;
    rows.iter().map(staff_from_row).collect()
}
