//! Staff sign-in with a password: argon2id off the async runtime, a dummy hash for
//! unknown emails (no timing oracle), and throttling per address and per account.

use sqlx::Row;

use super::rows::staff_from_row;
use super::{verify_password_off_runtime, Staff};
use crate::error::DomainResult;
use store::{new_id, Db};

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
) -> DomainResult<LoginResult> {
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

async fn forget_attempt(db: &Db, attempt: &str) -> DomainResult<()> {
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
) -> DomainResult<i64> {
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
) -> DomainResult<(i64, i64)> {
    // `column` is one of two literals chosen above, never input.
    let row = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT COUNT(*) AS n, COALESCE(MAX(at), 0) AS last FROM login_failures
         WHERE {column} = $1 AND at > $2 AND id <> $3"
    )))
    .bind(value)
    .bind(since_ms)
    .bind(attempt)
    .fetch_one(db.pool())
    .await?;
    Ok((row.try_get("n")?, row.try_get("last")?))
}

/// Recent failed logins per account, for the admin's staff page.
pub async fn recent_failures(db: &Db, email: &str, now_ms: i64) -> DomainResult<i64> {
    let row = sqlx::query("SELECT COUNT(*) AS n FROM login_failures WHERE email = $1 AND at > $2")
        .bind(email)
        .bind(now_ms - LOGIN_WINDOW_MS)
        .fetch_one(db.reader())
        .await?;
    Ok(row.try_get("n")?)
}

/// A hash of nothing, checked for unknown emails so they cost what a wrong password does.
const DUMMY_HASH: &str =
    "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHQ$ZmFrZWhhc2hmYWtlaGFzaGZha2VoYXNo";

async fn check_password(db: &Db, email: &str, password: &str) -> DomainResult<Option<Staff>> {
    // A deactivated person is answered exactly as an unknown email (same hash work).
    let row = sqlx::query(
        "SELECT id, email, role, password_hash FROM staff WHERE email = $1 AND deactivated_at IS NULL",
    )
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
