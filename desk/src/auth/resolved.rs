//! Resolved credentials kept in this process for a moment.
//!
//! A ticket page or API read was five queries, one of them the token lookup. A resolved
//! token is kept here for at most [`RESOLVED_FRESH`] of real time. Revocation in this
//! process (sign-out, `revoke_token`; a staff member's new role or password,
//! `upsert_staff`) calls [`forget_resolved`], which bumps a generation and drops every
//! entry at once, so here it takes effect on the next request. Another instance on the
//! same database sees a revocation within `RESOLVED_FRESH`: that is the bound on
//! staleness (SECURITY.md). Expiry is checked on every hit against the request's clock.
//! Only token hashes are keys: no raw token is held in memory. This module reads no
//! store; `tokens` does.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

use super::Principal;

/// A resolved credential: who, and the CSRF token when it is a console session.
#[derive(Clone)]
pub struct Resolved {
    pub principal: Principal,
    pub csrf_token: Option<String>,
}

/// The generation a lookup starts in: an entry remembered under it is answered from
/// only while no revocation has run since.
pub(super) fn generation() -> u64 {
    GENERATION.load(Ordering::Acquire)
}

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
pub(crate) fn forget_resolved() {
    GENERATION.fetch_add(1, Ordering::AcqRel);
    resolved_cache()
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clear();
}

pub(super) fn cached(hash: &str, generation: u64, now_ms: i64) -> Option<Resolved> {
    let cache = resolved_cache()
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    let hit = cache.get(hash)?;
    (hit.generation == generation
        && hit.expires_at > now_ms
        && hit.read_at.elapsed() < RESOLVED_FRESH)
        .then(|| hit.resolved.clone())
}

pub(super) fn remember(hash: String, generation: u64, resolved: &Resolved, expires_at: i64) {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn customer(id: &str) -> Resolved {
        Resolved {
            principal: Principal::Customer {
                customer_id: id.into(),
            },
            csrf_token: None,
        }
    }

    /// One test, in order: the cache is process-wide, and other tests revoke tokens.
    #[test]
    fn a_remembered_token_is_answered_until_a_revocation_or_its_expiry() {
        let hash = format!("test-{}", uuid::Uuid::new_v4().simple());
        // Answered while no revocation ran in between (another test's revocation bumps
        // the generation; the round is then tried again).
        let answered = (0..5).any(|_| {
            let g = generation();
            remember(hash.clone(), g, &customer("C-1"), 2_000);
            let hit = cached(&hash, g, 1_000).is_some();
            hit && generation() == g
        });
        assert!(answered, "a just-resolved token is answered from the cache");
        let g = generation();
        remember(hash.clone(), g, &customer("C-1"), 2_000);
        assert!(
            cached(&hash, g, 2_000).is_none(),
            "an expired token is never answered"
        );
        forget_resolved();
        assert!(
            cached(&hash, generation(), 1_000).is_none(),
            "a revocation drops every entry"
        );
        // A lookup that started before a revocation and remembered after it.
        let before = generation();
        forget_resolved();
        remember(hash.clone(), before, &customer("C-1"), 2_000);
        assert!(
            cached(&hash, generation(), 1_000).is_none(),
            "an entry read across a revocation is never answered"
        );
    }
}
