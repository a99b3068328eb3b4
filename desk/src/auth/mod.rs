//! Who is asking: staff (argon2id passwords, bearer tokens, console sessions) and
//! customers (bearer tokens, or a browser session started from a single-use sign-in
//! link).
//!
//! Identity comes only from these credentials, never from anything typed in a chat or
//! returned by a tool (docs/spec/invariants.md #7). Only SHA-256 hashes of tokens are stored.
//! Password hashing runs on the blocking pool behind a small semaphore, so a login
//! flood cannot stall the runtime; failed logins are counted before the hash is checked
//! and slow the next attempt per address and per account, never locking the
//! right password out for long.

pub mod accounts;
mod linking;
pub mod oidc;
pub mod provisioning;
mod rows;
mod staff;
pub use staff::{assignable_staff, list_staff, staff_by_email, unlock_staff, upsert_staff};
mod login;
pub use login::{
    login, recent_failures, throttle_delay_ms, LoginResult, ACCOUNT_FREE_FAILURES,
    ACCOUNT_MAX_DELAY_MS, ADDRESS_MAX_DELAY_MS, LOGIN_WINDOW_MS, MAX_LOGIN_FAILURES,
};
mod resolved;
pub use resolved::{Resolved, RESOLVED_FRESH};
mod tokens;
pub use tokens::{
    issue, issue_mail_sign_in_link, issue_sign_in_link, issue_token, purge_expired,
    redeem_sign_in_link, resolve, revoke_token, sign_in_link_customer, token_id, Issued, NewToken,
    MAIL_SIGN_IN_LINK_TTL_MS, SIGN_IN_LINK_TTL_MS,
};

use argon2::password_hash::{
    rand_core::OsRng, PasswordHash, PasswordHasher, PasswordVerifier, SaltString,
};
use argon2::Argon2;
use rand::RngCore;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::{DomainError, DomainResult, ErrorCode};

pub const SESSION_COOKIE: &str = "rd_session";
pub const CUSTOMER_COOKIE: &str = "rd_customer";
const API_TOKEN_TTL_MS: i64 = 30 * 24 * 3600 * 1000;
const SESSION_TTL_MS: i64 = 12 * 3600 * 1000;

/// Staff roles, lowest first. Approval limits by role come from RP-004. A
/// `policy_author` drafts and publishes policies and is below `agent`: the
/// role approves no refund and works no case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StaffRole {
    PolicyAuthor,
    Agent,
    Supervisor,
    Admin,
}

impl StaffRole {
    pub fn parse(s: &str) -> DomainResult<StaffRole> {
        match s {
            "policy_author" => Ok(StaffRole::PolicyAuthor),
            "agent" => Ok(StaffRole::Agent),
            "supervisor" => Ok(StaffRole::Supervisor),
            "admin" => Ok(StaffRole::Admin),
            _ => Err(DomainError::bad_request(
                ErrorCode::InvalidRole,
                format!("unknown role '{s}' (agent, supervisor, admin, policy_author)"),
            )),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            StaffRole::PolicyAuthor => "policy_author",
            StaffRole::Agent => "agent",
            StaffRole::Supervisor => "supervisor",
            StaffRole::Admin => "admin",
        }
    }

    /// Whether this role may edit and publish policy drafts.
    pub fn may_author_policies(self) -> bool {
        matches!(self, StaffRole::Admin | StaffRole::PolicyAuthor)
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

/// What a service token is for: a shop backend keeping customers and orders current, or
/// the identity provider provisioning staff over SCIM. Neither is a person; each may use
/// its own routes only (docs/spec/roles.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ServiceKind {
    Integration,
    Scim,
}

impl ServiceKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ServiceKind::Integration => "integration",
            ServiceKind::Scim => "scim",
        }
    }

    pub fn parse(s: &str) -> DomainResult<ServiceKind> {
        match s {
            "integration" => Ok(ServiceKind::Integration),
            "scim" => Ok(ServiceKind::Scim),
            _ => Err(DomainError::bad_request(
                ErrorCode::InvalidTokenKind,
                format!("unknown token kind '{s}' (integration, scim)"),
            )),
        }
    }
}

/// A service token's holder.
#[derive(Debug, Clone)]
pub struct Service {
    pub kind: ServiceKind,
    pub token_id: String,
    pub name: String,
}

/// The authenticated caller of a request.
#[derive(Debug, Clone)]
pub enum Principal {
    Staff(Staff),
    Customer { customer_id: String },
    Service(Service),
}

impl Principal {
    pub fn staff(&self) -> DomainResult<&Staff> {
        match self {
            Principal::Staff(s) => Ok(s),
            _ => Err(DomainError::Forbidden("staff only".into())),
        }
    }

    pub fn customer_id(&self) -> DomainResult<&str> {
        match self {
            Principal::Customer { customer_id } => Ok(customer_id),
            _ => Err(DomainError::Forbidden("customers only".into())),
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

static PASSWORD_WORK: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(PASSWORD_WORKERS);

/// The console session of a request (cookie), with its CSRF token.
pub struct Session {
    pub staff: Staff,
    pub csrf_token: String,
    pub token: String,
}

/// Constant-time comparison for CSRF tokens, fingerprints and signatures.
pub fn constant_time_eq(a: &str, b: &str) -> bool {
    use subtle::ConstantTimeEq;
    a.len() == b.len() && bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

/// Password hashes computed at the same time (argon2 takes a core for tens of ms).
pub const PASSWORD_WORKERS: usize = 2;

/// A hash check on the blocking pool, at most `PASSWORD_WORKERS` at once.
async fn verify_password_off_runtime(password: String, hash: String) -> DomainResult<bool> {
    let _permit = PASSWORD_WORK
        .acquire()
        .await
        .map_err(|e| anyhow::anyhow!("password semaphore: {e}"))?;
    tokio::task::spawn_blocking(move || verify_password(&password, &hash))
        .await
        .map_err(|e| DomainError::Internal(anyhow::anyhow!("password check: {e}")))
}

pub(crate) async fn hash_password_off_runtime(password: String) -> DomainResult<String> {
    let _permit = PASSWORD_WORK
        .acquire()
        .await
        .map_err(|e| anyhow::anyhow!("password semaphore: {e}"))?;
    tokio::task::spawn_blocking(move || hash_password(&password))
        .await
        .map_err(|e| DomainError::Internal(anyhow::anyhow!("password hashing: {e}")))?
        .map_err(DomainError::Internal)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_role_parses_from_its_name_and_a_policy_author_approves_nothing() {
        for role in [
            StaffRole::PolicyAuthor,
            StaffRole::Agent,
            StaffRole::Supervisor,
            StaffRole::Admin,
        ] {
            assert_eq!(StaffRole::parse(role.as_str()).ok(), Some(role));
        }
        assert!(!StaffRole::PolicyAuthor.may_approve(policy_engine::Role::Agent));
        assert!(StaffRole::PolicyAuthor < StaffRole::Agent, "works no case");
        let authors: Vec<_> = [
            StaffRole::PolicyAuthor,
            StaffRole::Agent,
            StaffRole::Supervisor,
            StaffRole::Admin,
        ]
        .into_iter()
        .filter(|r| r.may_author_policies())
        .collect();
        assert_eq!(authors, [StaffRole::PolicyAuthor, StaffRole::Admin]);
    }
}
