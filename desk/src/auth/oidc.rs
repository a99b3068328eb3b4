//! Sign-in with the company's OpenID Connect provider (docs/spec/roles.md): the
//! authorization code flow with PKCE on the `openidconnect` crate — discovery from
//! `OIDC_ISSUER`, each ID token checked against the provider's keys (signature, `iss`,
//! `aud`, `exp` on the app's clock, `nonce`), the keys fetched again once when a token is
//! signed by one we do not hold (key rotation) — and who gets in: only an invited person,
//! existing staff, or (with `OIDC_CREATE_STAFF=on`) someone in a mapped group; the role
//! from `GROUP_ROLES` when groups are mapped, else the staff record's.
//!
//! **Who is who** (docs/spec/roles.md): a staff identity is the provider's (issuer,
//! subject). An e-mail address links a provider identity to an account once, and only
//! when the provider says it is verified (`email_verified: true`) and it names an open
//! invitation or an account with no link yet; a second subject for a linked account is
//! refused and audited, never moved over.
//!
//! The state, nonce and PKCE verifier of a sign-in in flight are kept in `oidc_logins`,
//! used once, and bound to the browser that started it: the row's key is the hash of the
//! state together with a random value that browser holds in a short-lived HttpOnly
//! cookie, so a replayed, forged or planted callback (login CSRF) finds nothing.

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

pub use super::linking::staff_for;
use super::token_hash;
use crate::error::DomainError;
use store::Db;

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

/// Why a sign-in through the provider was refused. Each leaves no session behind. The
/// messages are the console's words; what the provider said is logged, never shown.
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    #[error("the sign-in was not started in this browser, was used already or took too long; start again")]
    UnknownState,
    /// The provider turned the sign-in down (its `error`, a code it would not exchange:
    /// used already, expired, another verifier). Its words, for the log.
    #[error("the identity provider did not accept this sign-in; start again")]
    Provider(String),
    /// The provider could not be reached or read (discovery, the network).
    #[error("the identity provider cannot be reached just now; try again in a moment")]
    Unreachable(String),
    /// The ID token failed a check. What failed, for the log.
    #[error("the identity provider's answer could not be trusted; start again")]
    Token(String),
    #[error("your account has no email address at the identity provider")]
    NoEmail,
    #[error("your email address is not verified at the identity provider; verify it there, then sign in again")]
    EmailNotVerified,
    #[error("this account is already linked to another sign-in at the identity provider; ask your administrator")]
    LinkedToAnother,
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
    /// `issuer sub`: stable at the provider, the identity itself.
    pub subject: String,
    pub email: String,
    /// The provider's `email_verified` claim (absent: false).
    pub email_verified: bool,
    pub groups: Vec<String>,
}

/// A sign-in just started: where to send the browser, and the value the browser keeps
/// (in a cookie) to finish it.
pub struct Started {
    pub url: String,
    pub browser_binding: String,
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
            .map_err(|e| Refused::Unreachable(format!("OIDC_ISSUER: {e}")))?;
        let metadata = CoreProviderMetadata::discover_async(issuer, &self.http)
            .await
            .map_err(|e| Refused::Unreachable(format!("discovery: {e}")))?;
        *cached = Some((Instant::now(), metadata.clone()));
        Ok(metadata)
    }

    fn client(
        &self,
        metadata: CoreProviderMetadata,
        redirect: &str,
    ) -> Result<DeskClient, Refused> {
        let redirect = RedirectUrl::new(redirect.to_string())
            .map_err(|e| Refused::Unreachable(format!("redirect URL: {e}")))?;
        Ok(DeskClient::from_provider_metadata(
            metadata,
            ClientId::new(self.settings.client_id.clone()),
            self.settings.client_secret.clone().map(ClientSecret::new),
        )
        .set_redirect_uri(redirect))
    }

    /// Starts a sign-in: the provider's authorization URL to send the browser to, with
    /// a fresh state, nonce and PKCE challenge kept (by the state's hash) for the return,
    /// bound to the browser by a fresh random value it is to keep.
    pub async fn begin(&self, db: &Db, redirect: &str, now_ms: i64) -> Result<Started, Refused> {
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
        let browser_binding = super::random_token();
        sqlx::query(
            "INSERT INTO oidc_logins (state_hash, nonce, pkce_verifier, created_at) VALUES ($1, $2, $3, $4)",
        )
        .bind(login_key(state.secret(), &browser_binding))
        .bind(nonce.secret())
        .bind(verifier.secret())
        .bind(now_ms)
        .execute(db.pool())
        .await?;
        Ok(Started {
            url: url.to_string(),
            browser_binding,
        })
    }

    /// Finishes a sign-in: the state used once and only by the browser that started it
    /// (`browser_binding`, from its cookie), the code exchanged with its PKCE verifier,
    /// the ID token checked; returns who signed in.
    pub async fn finish(
        &self,
        db: &Db,
        redirect: &str,
        (code, state, browser_binding): (&str, &str, Option<&str>),
        now_ms: i64,
    ) -> Result<Identity, Refused> {
        let (nonce, verifier) = take_login(db, state, browser_binding, now_ms).await?;
        let client = self.client(self.metadata(false).await?, redirect)?;
        let response = client
            .exchange_code(AuthorizationCode::new(code.to_string()))
            .map_err(|e| Refused::Unreachable(e.to_string()))?
            .set_pkce_verifier(PkceCodeVerifier::new(verifier))
            .request_async(&self.http)
            .await
            .map_err(|e| match e {
                // Out of reach: no answer at all. Any answer that is no token is a refusal
                // of this sign-in (a code used already, expired, or for another verifier).
                openidconnect::RequestTokenError::Request(inner) => {
                    Refused::Unreachable(format!("token request: {inner}"))
                }
                other => Refused::Provider(format!("token request: {other}")),
            })?;
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
            email_verified: claims.email_verified() == Some(true),
            groups,
        })
    }
}

/// The key a sign-in in flight is kept by: the hash of its state together with the
/// value its browser holds, so only that state from that browser finds it.
fn login_key(state: &str, browser_binding: &str) -> String {
    token_hash(&format!("{state}\n{browser_binding}"))
}

/// The nonce and PKCE verifier of the sign-in `state` names, deleted as they are read: a
/// second callback with the same state finds nothing. Found only with the browser value
/// its start handed out: a callback opened in another browser (an attacker's code and
/// state planted on a victim) finds nothing.
async fn take_login(
    db: &Db,
    state: &str,
    browser_binding: Option<&str>,
    now_ms: i64,
) -> Result<(String, String), Refused> {
    let browser_binding = browser_binding.ok_or(Refused::UnknownState)?;
    let hash = login_key(state, browser_binding);
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
