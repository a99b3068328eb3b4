//! Bearer tokens and sessions (stored as hashes), and customers' single-use sign-in links.

use sqlx::Row;

use super::login::LOGIN_WINDOW_MS;
use super::resolved::{cached, forget_resolved, generation, remember, Resolved};
use super::rows::staff_from_row;
use super::{random_token, token_hash, Principal, API_TOKEN_TTL_MS, SESSION_TTL_MS};
use crate::error::DomainResult;
use store::Db;

/// Issues a bearer token (`kind = api`) or a console session (`kind = session`, with a
/// CSRF token), unnamed, for the default time. Returns the token; only its hash is stored.
pub async fn issue_token(
    db: &Db,
    kind: &str,
    subject_kind: &str,
    subject_id: &str,
    now_ms: i64,
) -> DomainResult<(String, Option<String>)> {
    let ttl_ms = if kind == "session" {
        SESSION_TTL_MS
    } else {
        API_TOKEN_TTL_MS
    };
    let new = NewToken {
        kind,
        subject_kind,
        subject_id,
        name: None,
        ttl_ms,
    };
    let issued = issue(db, &new, now_ms).await?;
    Ok((issued.token, issued.csrf_token))
}

/// A token to issue: what it is, for whom, its name and how long it lives.
pub struct NewToken<'a> {
    /// `api`, `session`, or a service kind (`integration`, `scim`).
    pub kind: &'a str,
    /// `staff`, `customer` or `service`.
    pub subject_kind: &'a str,
    pub subject_id: &'a str,
    pub name: Option<&'a str>,
    pub ttl_ms: i64,
}

/// A token just issued: the secret (shown once), its public id, and a session's CSRF token.
pub struct Issued {
    pub token: String,
    pub token_id: String,
    pub csrf_token: Option<String>,
}

/// Issues `new`; only the token's hash is stored, with a public id to list and revoke it by.
pub async fn issue(db: &Db, new: &NewToken<'_>, now_ms: i64) -> DomainResult<Issued> {
    let token = random_token();
    let token_id = store::new_id("tok");
    let csrf = (new.kind == "session").then(random_token);
    sqlx::query(
        "INSERT INTO auth_tokens (token_hash, kind, subject_kind, subject_id, csrf_token, expires_at, created_at, token_id, name)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
    )
    .bind(token_hash(&token))
    .bind(new.kind)
    .bind(new.subject_kind)
    .bind(new.subject_id)
    .bind(csrf.clone())
    .bind(now_ms.saturating_add(new.ttl_ms))
    .bind(now_ms)
    .bind(&token_id)
    .bind(new.name)
    .execute(db.pool())
    .await?;
    Ok(Issued {
        token,
        token_id,
        csrf_token: csrf,
    })
}

pub async fn revoke_token(db: &Db, token: &str) -> DomainResult<()> {
    sqlx::query("DELETE FROM auth_tokens WHERE token_hash = $1")
        .bind(token_hash(token))
        .execute(db.pool())
        .await?;
    forget_resolved();
    Ok(())
}

/// The id of the stored token `token` (a session's own, for "this is you" on the token
/// list); `None` when it is unknown or the lookup failed.
pub async fn token_id(db: &Db, token: &str) -> Option<String> {
    sqlx::query_scalar("SELECT token_id FROM auth_tokens WHERE token_hash = $1")
        .bind(token_hash(token))
        .fetch_optional(db.reader())
        .await
        .ok()
        .flatten()
}

/// How long a customer sign-in link works (short-lived, single use).
pub const SIGN_IN_LINK_TTL_MS: i64 = 15 * 60 * 1000;

/// A single-use sign-in link token for a customer, valid `SIGN_IN_LINK_TTL_MS`. It is
/// not an API token: `resolve` never accepts it, and only `redeem_sign_in_link` (the
/// POST from the sign-in page) turns it into a browser session, once.
pub async fn issue_sign_in_link(db: &Db, customer_id: &str, now_ms: i64) -> DomainResult<String> {
    crate::onboarding::records::require_customer(db, customer_id).await?;
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

/// How long the sign-in link in a mail works: single use like any link, but
/// mail is read hours or days after it was sent.
pub const MAIL_SIGN_IN_LINK_TTL_MS: i64 = 3 * 24 * 3600 * 1000;

/// A single-use sign-in link for a mail, issued in the transaction that renders the mail
/// (so the link exists exactly when the mail's bytes are kept). Returns the token.
pub async fn issue_mail_sign_in_link(
    tx: &mut store::Tx<'_>,
    customer_id: &str,
    now_ms: i64,
) -> DomainResult<String> {
    let token = random_token();
    sqlx::query(
        "INSERT INTO sign_in_links (token_hash, customer_id, expires_at, created_at) VALUES ($1, $2, $3, $4)",
    )
    .bind(token_hash(&token))
    .bind(customer_id)
    .bind(now_ms + MAIL_SIGN_IN_LINK_TTL_MS)
    .bind(now_ms)
    .execute(&mut **tx)
    .await?;
    Ok(token)
}

/// Uses a sign-in link: marks it used (one versioned update, so two tabs racing get one
/// session between them) and returns its customer, or `None` when it is unknown, used or
/// expired.
pub async fn redeem_sign_in_link(
    db: &Db,
    token: &str,
    now_ms: i64,
) -> DomainResult<Option<String>> {
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

/// The customer a sign-in link would sign in, without using it up (the page a GET
/// shows speaks their language); `None` for a link that is used, expired or unknown.
pub async fn sign_in_link_customer(
    db: &Db,
    token: &str,
    now_ms: i64,
) -> DomainResult<Option<String>> {
    let customer: Option<String> = sqlx::query_scalar(
        "SELECT customer_id FROM sign_in_links WHERE token_hash = $1 AND used_at IS NULL AND expires_at > $2",
    )
    .bind(token_hash(token))
    .bind(now_ms)
    .fetch_optional(db.reader())
    .await?;
    Ok(customer)
}

/// Deletes what can no longer be used: expired tokens and sessions, used or expired
/// sign-in links, and failed logins older than the throttle window. `serve` runs it
/// periodically; returns the rows removed.
pub async fn purge_expired(db: &Db, now_ms: i64) -> DomainResult<u64> {
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
        (
            "DELETE FROM oidc_logins WHERE created_at <= $1",
            now_ms - super::oidc::LOGIN_TTL_MS,
        ),
        (
            "DELETE FROM staff_invites WHERE expires_at <= $1 OR used_at IS NOT NULL",
            now_ms,
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

/// Who `token` is, or `None` when it is unknown, revoked or expired. Answered from the
/// in-process cache (`auth::resolved`) when this process resolved the same token in
/// the last `RESOLVED_FRESH`, else from the store.
pub async fn resolve(db: &Db, token: &str, now_ms: i64) -> DomainResult<Option<Resolved>> {
    let hash = token_hash(token);
    let generation = generation();
    if let Some(hit) = cached(&hash, generation, now_ms) {
        return Ok(Some(hit));
    }
    let Some((resolved, expires_at)) = resolve_stored(db, &hash, now_ms).await? else {
        return Ok(None);
    };
    remember(hash, generation, &resolved, expires_at);
    Ok(Some(resolved))
}

/// The store's answer for a token hash, and when the token expires.
async fn resolve_stored(db: &Db, hash: &str, now_ms: i64) -> DomainResult<Option<(Resolved, i64)>> {
    let row = sqlx::query(
        "SELECT kind, subject_kind, subject_id, csrf_token, expires_at, token_id, name
         FROM auth_tokens WHERE token_hash = $1 AND expires_at > $2",
    )
    .bind(hash)
    .bind(now_ms)
    .fetch_optional(db.reader())
    .await?;
    let Some(row) = row else { return Ok(None) };
    let kind: String = row.try_get("subject_kind")?;
    let subject: String = row.try_get("subject_id")?;
    let csrf_token: Option<String> = row.try_get("csrf_token")?;
    let expires_at: i64 = row.try_get("expires_at")?;
    let principal = match kind.as_str() {
        "staff" => {
            // A deactivated person's credentials are deleted with the deactivation; the
            // condition is the second lock on the same door.
            let r = sqlx::query(
                "SELECT id, email, role FROM staff WHERE id = $1 AND deactivated_at IS NULL",
            )
            .bind(&subject)
            .fetch_optional(db.reader())
            .await?;
            match r {
                Some(r) => Principal::Staff(staff_from_row(&r)?),
                None => return Ok(None),
            }
        }
        "service" => Principal::Service(super::Service {
            kind: super::ServiceKind::parse(&row.try_get::<String, _>("kind")?)?,
            token_id: row
                .try_get::<Option<String>, _>("token_id")?
                .unwrap_or_default(),
            name: row
                .try_get::<Option<String>, _>("name")?
                .unwrap_or_default(),
        }),
        _ => Principal::Customer {
            customer_id: subject,
        },
    };
    Ok(Some((
        Resolved {
            principal,
            csrf_token,
        },
        expires_at,
    )))
}
