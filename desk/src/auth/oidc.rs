//! Sign-in with the company's OpenID Connect provider (docs/spec/roles.md): the
//! authorization code flow with PKCE on the `openidconnect` crate — discovery from
//! `OIDC_ISSUER`, each ID token checked against the provider's keys (signature, `iss`,
//! `aud`, `exp` on the app's clock, `nonce`), the keys fetched again once when a token is
//! signed by one we do not hold (key rotation) — and who gets in: only an invited person,
//! existing staff, or (with `OIDC_CREATE_STAFF=on`) someone in a mapped group; the role
//! from `GROUP_ROLES` when groups are mapped, else the staff record's.
//!
//! The state, nonce and PKCE verifier of a sign-in in flight are kept in `oidc_logins`
//! (by the state's hash), used once: a replayed or forged callback finds nothing.

use std::time::{Duration, Instant};

use openidconnect::core::{
    CoreAuthDisplay, CoreAuthPrompt, CoreErrorResponseType, CoreGenderClaim, CoreJsonWebKey,
    CoreJweContentEncryptionAlgorithm, CoreJwsSigningAlgorithm, CoreProviderMetadata,
    CoreResponseType, CoreRevocableToken, CoreRevocationErrorResponse,
    CoreTokenIntrospectionResponse, CoreTokenType,
};
use openidconnect::{
    AdditionalClaims, AuthenticationFlow, AuthorizationCode, ClaimsVerificationError, Client,
    ClientId, ClientSecret, CsrfToken, EmptyExtraTokenFields, EndpointMaybeSet, EndpointNotSet,
    EndpointSet, IdTokenFields, IssuerUrl, Nonce, PkceCodeChallenge, PkceCodeVerifier, RedirectUrl,
    Scope, StandardErrorResponse, StandardTokenResponse,
};
use serde::{Deserialize, Serialize};
use sqlx::Row;

use super::provisioning::{GroupRoles, NO_PASSWORD};
use super::staff::staff_from_row;
use super::{token_hash, Staff, StaffRole};
use crate::error::DomainError;
use store::{new_id, Db};

/// `OIDC_ISSUER`, `OIDC_CLIENT_ID`, `OIDC_CLIENT_SECRET`, `OIDC_GROUPS_CLAIM`,
/// `OIDC_CREATE_STAFF`: the provider and how its people become staff.
#[derive(Debug, Clone)]
pub struct OidcSettings {
    /// The issuer URL; its `/.well-known/openid-configuration` is discovered.
    pub issuer: String,
    pub client_id: String,
    pub client_secret: Option<String>,
    /// The ID token claim listing the person's groups (mapped by `GROUP_ROLES`).
    pub groups_claim: String,
    /// Whether a person the provider knows, in a mapped group, but never invited gets an
    /// account on first sign-in (off: only invited or existing staff get in).
    pub create_staff: bool,
}

/// How long a sign-in may take between leaving for the provider and coming back.
pub const LOGIN_TTL_MS: i64 = 10 * 60 * 1000;
/// How long discovered provider metadata (and its keys) is used before it is read again.
const METADATA_TTL: Duration = Duration::from_secs(600);

/// The claims beyond the standard ones, kept whole: the groups claim is named by
/// configuration.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct OtherClaims {
    #[serde(flatten)]
    pub other: serde_json::Map<String, serde_json::Value>,
}
impl AdditionalClaims for OtherClaims {}

type IdFields = IdTokenFields<
    OtherClaims,
    EmptyExtraTokenFields,
    CoreGenderClaim,
    CoreJweContentEncryptionAlgorithm,
    CoreJwsSigningAlgorithm,
>;
type TokenResponse = StandardTokenResponse<IdFields, CoreTokenType>;
type DeskClient = Client<
    OtherClaims,
    CoreAuthDisplay,
    CoreGenderClaim,
    CoreJweContentEncryptionAlgorithm,
    CoreJsonWebKey,
    CoreAuthPrompt,
    StandardErrorResponse<CoreErrorResponseType>,
    TokenResponse,
    CoreTokenIntrospectionResponse,
    CoreRevocableToken,
    CoreRevocationErrorResponse,
    EndpointSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointMaybeSet,
    EndpointMaybeSet,
>;

/// Why a sign-in through the provider was refused. Each leaves no session behind.
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    #[error("the sign-in was not started here, was used already or took too long; start again")]
    UnknownState,
    #[error("the identity provider refused the sign-in: {0}")]
    Provider(String),
    #[error("the identity provider's answer could not be trusted: {0}")]
    Token(String),
    #[error("your account has no email address at the identity provider")]
    NoEmail,
    #[error("you are in no group of the refund desk; ask your administrator")]
    NoGroup,
    #[error("you have not been invited to the refund desk; ask your administrator")]
    NotInvited,
    #[error("your account is deactivated")]
    Deactivated,
    #[error(transparent)]
    Store(#[from] DomainError),
}

impl From<sqlx::Error> for Refused {
    fn from(e: sqlx::Error) -> Self {
        Refused::Store(e.into())
    }
}

/// Who the provider says signed in.
#[derive(Debug, Clone)]
pub struct Identity {
    /// `issuer sub`: stable at the provider.
    pub subject: String,
    pub email: String,
    pub groups: Vec<String>,
}

/// The provider: its settings, an HTTP client that follows no redirects (discovery and
/// token requests go only where the metadata says), and the discovered metadata.
pub struct Oidc {
    pub settings: OidcSettings,
    http: openidconnect::reqwest::Client,
    metadata: tokio::sync::Mutex<Option<(Instant, CoreProviderMetadata)>>,
}

impl Oidc {
    pub fn new(settings: OidcSettings) -> anyhow::Result<Oidc> {
        let http = openidconnect::reqwest::ClientBuilder::new()
            .redirect(openidconnect::reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(10))
            .build()?;
        Ok(Oidc {
            settings,
            http,
            metadata: tokio::sync::Mutex::new(None),
        })
    }

    /// The provider's metadata and keys, discovered at most every [`METADATA_TTL`], or
    /// at once when `fresh` (a token signed by a key we do not hold).
    async fn metadata(&self, fresh: bool) -> Result<CoreProviderMetadata, Refused> {
        let mut cached = self.metadata.lock().await;
        if let Some((at, metadata)) = cached.as_ref() {
            if !fresh && at.elapsed() < METADATA_TTL {
                return Ok(metadata.clone());
            }
        }
        let issuer = IssuerUrl::new(self.settings.issuer.clone())
            .map_err(|e| Refused::Provider(format!("OIDC_ISSUER: {e}")))?;
        let metadata = CoreProviderMetadata::discover_async(issuer, &self.http)
            .await
            .map_err(|e| Refused::Provider(format!("discovery: {e}")))?;
        *cached = Some((Instant::now(), metadata.clone()));
        Ok(metadata)
    }

    fn client(
        &self,
        metadata: CoreProviderMetadata,
        redirect: &str,
    ) -> Result<DeskClient, Refused> {
        let redirect = RedirectUrl::new(redirect.to_string())
            .map_err(|e| Refused::Provider(format!("redirect URL: {e}")))?;
        Ok(DeskClient::from_provider_metadata(
            metadata,
            ClientId::new(self.settings.client_id.clone()),
            self.settings.client_secret.clone().map(ClientSecret::new),
        )
        .set_redirect_uri(redirect))
    }

    /// Starts a sign-in: the provider's authorization URL to send the browser to, with
    /// a fresh state, nonce and PKCE challenge kept (by the state's hash) for the return.
    pub async fn begin(&self, db: &Db, redirect: &str, now_ms: i64) -> Result<String, Refused> {
        let client = self.client(self.metadata(false).await?, redirect)?;
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let (url, state, nonce) = client
            .authorize_url(
                AuthenticationFlow::<CoreResponseType>::AuthorizationCode,
                CsrfToken::new_random,
                Nonce::new_random,
            )
            .add_scope(Scope::new("email".into()))
            .add_scope(Scope::new("profile".into()))
            .set_pkce_challenge(challenge)
            .url();
        sqlx::query(
            "INSERT INTO oidc_logins (state_hash, nonce, pkce_verifier, created_at) VALUES ($1, $2, $3, $4)",
        )
        .bind(token_hash(state.secret()))
        .bind(nonce.secret())
        .bind(verifier.secret())
        .bind(now_ms)
        .execute(db.pool())
        .await
        ?;
        Ok(url.to_string())
    }

    /// Finishes a sign-in: the state used once, the code exchanged with its PKCE verifier,
    /// the ID token checked; returns who signed in.
    pub async fn finish(
        &self,
        db: &Db,
        redirect: &str,
        (code, state): (&str, &str),
        now_ms: i64,
    ) -> Result<Identity, Refused> {
        let (nonce, verifier) = take_login(db, state, now_ms).await?;
        let client = self.client(self.metadata(false).await?, redirect)?;
        let response = client
            .exchange_code(AuthorizationCode::new(code.to_string()))
            .map_err(|e| Refused::Provider(e.to_string()))?
            .set_pkce_verifier(PkceCodeVerifier::new(verifier))
            .request_async(&self.http)
            .await
            .map_err(|e| Refused::Provider(format!("token request: {e}")))?;
        let nonce = Nonce::new(nonce);
        match self.identity(&client, &response, &nonce, now_ms) {
            // A key we do not hold: the provider may have rotated its keys since we read
            // them. Read them again, once.
            Err(Refused::Token(why)) if why.starts_with("signature") => {
                let fresh = self.client(self.metadata(true).await?, redirect)?;
                self.identity(&fresh, &response, &nonce, now_ms)
            }
            other => other,
        }
    }

    fn identity(
        &self,
        client: &DeskClient,
        response: &TokenResponse,
        nonce: &Nonce,
        now_ms: i64,
    ) -> Result<Identity, Refused> {
        let id_token = response
            .extra_fields()
            .id_token()
            .ok_or_else(|| Refused::Token("no ID token".into()))?;
        let now = chrono::DateTime::from_timestamp_millis(now_ms).unwrap_or_default();
        let verifier = client.id_token_verifier().set_time_fn(move || now);
        let claims = id_token.claims(&verifier, nonce).map_err(|e| {
            Refused::Token(match e {
                ClaimsVerificationError::SignatureVerification(inner) => {
                    format!("signature: {inner}")
                }
                other => other.to_string(),
            })
        })?;
        let email = claims
            .email()
            .map(|e| e.as_str().trim().to_ascii_lowercase())
            .filter(|e| !e.is_empty())
            .ok_or(Refused::NoEmail)?;
        let groups = match claims
            .additional_claims()
            .other
            .get(&self.settings.groups_claim)
        {
            Some(serde_json::Value::Array(items)) => items
                .iter()
                .filter_map(|g| g.as_str().map(str::to_string))
                .collect(),
            Some(serde_json::Value::String(one)) => vec![one.clone()],
            _ => Vec::new(),
        };
        Ok(Identity {
            subject: format!("{} {}", claims.issuer().as_str(), claims.subject().as_str()),
            email,
            groups,
        })
    }
}

/// The nonce and PKCE verifier of the sign-in `state` names, deleted as they are read: a
/// second callback with the same state finds nothing.
async fn take_login(db: &Db, state: &str, now_ms: i64) -> Result<(String, String), Refused> {
    let hash = token_hash(state);
    let mut tx = db.begin().await?;
    let row = sqlx::query(
        "SELECT nonce, pkce_verifier, created_at FROM oidc_logins WHERE state_hash = $1",
    )
    .bind(&hash)
    .fetch_optional(&mut *tx)
    .await?
    .ok_or(Refused::UnknownState)?;
    let gone = sqlx::query("DELETE FROM oidc_logins WHERE state_hash = $1")
        .bind(&hash)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    let created_at: i64 = row.try_get("created_at")?;
    if gone.rows_affected() != 1 || now_ms - created_at > LOGIN_TTL_MS {
        return Err(Refused::UnknownState);
    }
    Ok((row.try_get("nonce")?, row.try_get("pkce_verifier")?))
}

/// Who the signed-in person is at the desk: existing staff (by the provider's subject,
/// else their email), an invited person (the invitation spent), or — with
/// `create_staff` — someone in a mapped group. With groups mapped, the role follows them
/// (someone in no mapped group is refused); without, the staff record's role stands.
pub async fn staff_for(
    db: &Db,
    settings: &OidcSettings,
    group_roles: &GroupRoles,
    identity: &Identity,
    now_ms: i64,
) -> Result<Staff, Refused> {
    let mapped = if group_roles.is_empty() {
        None
    } else {
        Some(
            group_roles
                .role_of(identity.groups.iter().map(String::as_str))
                .ok_or(Refused::NoGroup)?,
        )
    };
    let mut tx = db.begin().await?;
    let row = sqlx::query(
        "SELECT id, email, role, deactivated_at FROM staff WHERE oidc_subject = $1 OR email = $2
         ORDER BY CASE WHEN oidc_subject = $1 THEN 0 ELSE 1 END LIMIT 1",
    )
    .bind(&identity.subject)
    .bind(&identity.email)
    .fetch_optional(&mut *tx)
    .await?;
    let staff = match row {
        Some(row) => {
            if row.try_get::<Option<i64>, _>("deactivated_at")?.is_some() {
                return Err(Refused::Deactivated);
            }
            staff_from_row(&row)?
        }
        None => {
            let invited = spend_invite(&mut tx, &identity.email, now_ms).await?;
            let role = match (invited, mapped) {
                (_, Some(role)) if invited.is_some() || settings.create_staff => role,
                (Some(role), None) => role,
                _ => return Err(Refused::NotInvited),
            };
            sqlx::query(
                "INSERT INTO staff (id, email, role, password_hash, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $5)",
            )
            .bind(new_id("staff"))
            .bind(&identity.email)
            .bind(role.as_str())
            .bind(NO_PASSWORD)
            .bind(now_ms)
            .execute(&mut *tx)
            .await
            ?;
            let row = sqlx::query("SELECT id, email, role FROM staff WHERE email = $1")
                .bind(&identity.email)
                .fetch_one(&mut *tx)
                .await?;
            let staff = staff_from_row(&row)?;
            crate::audit::record(
                &mut tx,
                &staff.id,
                "staff_joined_by_sso",
                &staff.id,
                &staff.email,
                now_ms,
            )
            .await?;
            staff
        }
    };
    let role = mapped.unwrap_or(staff.role);
    sqlx::query("UPDATE staff SET oidc_subject = $1, role = $2, updated_at = $3 WHERE id = $4")
        .bind(&identity.subject)
        .bind(role.as_str())
        .bind(now_ms)
        .bind(&staff.id)
        .execute(&mut *tx)
        .await?;
    if role != staff.role {
        let detail = format!(
            "{}: {} → {} (groups)",
            staff.email,
            staff.role.as_str(),
            role.as_str()
        );
        crate::audit::record(
            &mut tx,
            "sso",
            "staff_role_changed",
            &staff.id,
            &detail,
            now_ms,
        )
        .await?;
    }
    tx.commit().await?;
    super::resolved::forget_resolved();
    Ok(Staff { role, ..staff })
}

/// Spends the open invitation for `email`, if any; returns its role.
async fn spend_invite(
    tx: &mut store::Tx<'_>,
    email: &str,
    now_ms: i64,
) -> Result<Option<StaffRole>, Refused> {
    let row = sqlx::query(
        "SELECT token_hash, role FROM staff_invites WHERE email = $1 AND used_at IS NULL AND expires_at > $2
         ORDER BY created_at DESC LIMIT 1",
    )
    .bind(email)
    .bind(now_ms)
    .fetch_optional(&mut **tx)
    .await
    ?;
    let Some(row) = row else { return Ok(None) };
    let hash: String = row.try_get("token_hash")?;
    sqlx::query("UPDATE staff_invites SET used_at = $1 WHERE token_hash = $2")
        .bind(now_ms)
        .bind(&hash)
        .execute(&mut **tx)
        .await?;
    Ok(Some(StaffRole::parse(&row.try_get::<String, _>("role")?)?))
}
