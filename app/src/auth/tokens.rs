//! Bearer tokens and sessions (stored as hashes), and customers' single-use sign-in links.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

use sqlx::Row;

use super::login::LOGIN_WINDOW_MS;
use super::staff::staff_from_row;
use super::{random_token, token_hash, Principal, API_TOKEN_TTL_MS, SESSION_TTL_MS};
use crate::error::{DomainError, DomainResult};
use crate::store::Db;

/// Issues a bearer token (`kind = api`) or a console session (`kind = session`, with a
/// CSRF token). Returns the token; only its hash is stored.
pub async fn issue_token(
    db: &Db,
    kind: &str,
    subject_kind: &str,
    subject_id: &str,
    now_ms: i64,
) -> DomainResult<(String, Option<String>)> {
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

pub async fn revoke_token(db: &Db, token: &str) -> DomainResult<()> {
    sqlx::query("DELETE FROM auth_tokens WHERE token_hash = $1")
        .bind(token_hash(token))
        .execute(db.pool())
        .await?;
    forget_resolved();
    Ok(())
}

/// How long a customer sign-in link works (issue 16: short-lived, single use).
pub const SIGN_IN_LINK_TTL_MS: i64 = 15 * 60 * 1000;

/// A single-use sign-in link token for a customer, valid `SIGN_IN_LINK_TTL_MS`. It is
/// not an API token: `resolve` never accepts it, and only `redeem_sign_in_link` (the
/// POST from the sign-in page) turns it into a browser session, once.
pub async fn issue_sign_in_link(db: &Db, customer_id: &str, now_ms: i64) -> DomainResult<String> {
    let known = sqlx::query("SELECT id FROM customers WHERE id = $1")
        .bind(customer_id)
        .fetch_optional(db.pool())
        .await?;
    if known.is_none() {
        return Err(DomainError::NotFound("customer"));
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
#[derive(Clone)]
pub struct Resolved {
    pub principal: Principal,
    pub csrf_token: Option<String>,
}

/// Who `token` is, or `None` when it is unknown, revoked or expired. Answered from the
/// in-process cache ([`resolved_cache`]) when this process resolved the same token in
/// the last [`RESOLVED_FRESH`], else from the store.
pub async fn resolve(db: &Db, token: &str, now_ms: i64) -> DomainResult<Option<Resolved>> {
    let hash = token_hash(token);
    let generation = GENERATION.load(Ordering::Acquire);
    if let Some(hit) = cached(&hash, generation, now_ms) {
        return Ok(Some(hit));
    }
    let Some((resolved, expires_at)) = resolve_stored(db, &hash, now_ms).await? else {
        return Ok(None);
    };
    remember(hash, generation, &resolved, expires_at);
    Ok(Some(resolved))
}

// Issue 19: a ticket page or API read was five queries, one of them this lookup. A
// resolved token is kept in this process for at most `RESOLVED_FRESH` of real time.
// Revocation in this process (sign-out, `revoke_token`; a staff member's new role or
// password, `upsert_staff`) bumps `GENERATION`, which drops every entry at once, so here
// it takes effect on the next request. Another instance on the same database sees a
// revocation within `RESOLVED_FRESH`: that is the bound on staleness (SECURITY.md).
// Expiry is checked on every hit against the request's clock. Only token hashes are
// keys: no raw token is held in memory.

/// How long a resolved token is trusted without reading the store again.
pub const RESOLVED_FRESH: std::time::Duration = std::time::Duration::from_secs(1);
/// Entries kept at most; a full cache is emptied (a burst of new tokens, not a leak).
const RESOLVED_MAX: usize = 10_000;

static GENERATION: AtomicU64 = AtomicU64::new(0);

struct CachedToken {
    resolved: Resolved,
    expires_at: i64,
    generation: u64,
    read_at: std::time::Instant,
}

fn resolved_cache() -> &'static Mutex<HashMap<String, CachedToken>> {
    static CACHE: OnceLock<Mutex<HashMap<String, CachedToken>>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Every token resolved in this process is read from the store again on its next use.
pub(super) fn forget_resolved() {
    GENERATION.fetch_add(1, Ordering::AcqRel);
    resolved_cache()
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clear();
}

fn cached(hash: &str, generation: u64, now_ms: i64) -> Option<Resolved> {
    let cache = resolved_cache()
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    let hit = cache.get(hash)?;
    (hit.generation == generation
        && hit.expires_at > now_ms
        && hit.read_at.elapsed() < RESOLVED_FRESH)
        .then(|| hit.resolved.clone())
}

fn remember(hash: String, generation: u64, resolved: &Resolved, expires_at: i64) {
    let mut cache = resolved_cache()
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    if cache.len() >= RESOLVED_MAX {
        cache.clear();
    }
    // A revocation that ran while the store was read bumped the generation: this
    // entry is then already stale, and is never answered from.
    cache.insert(
        hash,
        CachedToken {
            resolved: resolved.clone(),
            expires_at,
            generation,
            read_at: std::time::Instant::now(),
        },
    );
}

/// The store's answer for a token hash, and when the token expires.
async fn resolve_stored(
    db: &Db,
    hash: &str,
    now_ms: i64,
) -> DomainResult<Option<(Resolved, i64)>> {
    let row = sqlx::query(
        "SELECT subject_kind, subject_id, csrf_token, expires_at FROM auth_tokens WHERE token_hash = $1 AND expires_at > $2",
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
    Ok(Some((
        Resolved {
            principal,
            csrf_token,
        },
        expires_at,
    )))
}
