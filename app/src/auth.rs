//! Who is asking: staff (argon2id passwords, bearer tokens, console sessions) and
//! customers (bearer tokens or a cookie set from a ticket link).
//!
//! Identity comes only from these credentials, never from anything typed in a chat or
//! returned by a tool (SPEC invariant 7). Only SHA-256 hashes of tokens are stored.

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
use crate::http::AppState;
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

/// Adds a staff member or updates their role and password.
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
    let hash = hash_password(password)?;
    let id = new_id("staff");
    sqlx::query(
        "INSERT INTO staff (id, email, role, password_hash, created_at) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (email) DO UPDATE SET role = excluded.role, password_hash = excluded.password_hash",
    )
    .bind(&id)
    .bind(&email)
    .bind(role.as_str())
    .bind(&hash)
    .bind(now_ms)
    .execute(db.pool())
    .await?;
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

/// Failed logins allowed per email in `LOGIN_WINDOW_MS` before logins are refused.
pub const MAX_LOGIN_FAILURES: i64 = 5;
pub const LOGIN_WINDOW_MS: i64 = 15 * 60 * 1000;

/// Checks a password; returns the staff member on success. Unknown emails cost the same
/// hash work as wrong passwords, so timing tells nothing. After `MAX_LOGIN_FAILURES`
/// failures in `LOGIN_WINDOW_MS` the email is refused (429) without checking anything.
pub async fn login(db: &Db, email: &str, password: &str, now_ms: i64) -> AppResult<Option<Staff>> {
    let email = email.trim().to_ascii_lowercase();
    let recent =
        sqlx::query("SELECT COUNT(*) AS n FROM login_failures WHERE email = $1 AND at > $2")
            .bind(&email)
            .bind(now_ms - LOGIN_WINDOW_MS)
            .fetch_one(db.pool())
            .await?;
    if recent.try_get::<i64, _>("n")? >= MAX_LOGIN_FAILURES {
        return Err(AppError::TooManyRequests);
    }
    let staff = check_password(db, &email, password).await?;
    if staff.is_none() {
        sqlx::query("INSERT INTO login_failures (email, at) VALUES ($1, $2)")
            .bind(&email)
            .bind(now_ms)
            .execute(db.pool())
            .await?;
    }
    Ok(staff)
}

async fn check_password(db: &Db, email: &str, password: &str) -> AppResult<Option<Staff>> {
    let row = sqlx::query("SELECT id, email, role, password_hash FROM staff WHERE email = $1")
        .bind(email)
        .fetch_optional(db.pool())
        .await?;
    let Some(row) = row else {
        let _ = verify_password(
            password,
            "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHQ$ZmFrZWhhc2hmYWtlaGFzaGZha2VoYXNo",
        );
        return Ok(None);
    };
    let hash: String = row.try_get("password_hash")?;
    if verify_password(password, &hash) {
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
                    return Ok(r.principal);
                }
            }
        }
        Err(AppError::Unauthorized)
    }
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
