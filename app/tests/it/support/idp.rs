//! A small OpenID Connect provider for the sign-in tests, on a loopback port: discovery,
//! its keys (JWKS), an authorization endpoint that signs in whoever the test says, and a
//! token endpoint that checks the code (once) and the PKCE verifier and signs an ID token
//! the way the test asks — with the provider's key or a stranger's, for another audience,
//! already expired, with another nonce. It stands in for the company's provider so the
//! desk's checks can be tried against tokens no honest provider would issue; the real
//! `oidc-provider` (npm) drives the browser sign-in in CI.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::{Form, Query, State};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use rsa::pkcs8::DecodePrivateKey;
use rsa::traits::PublicKeyParts;
use rsa::{Pkcs1v15Sign, RsaPrivateKey};
use serde::Deserialize;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// The test client's credentials at the provider.
pub const CLIENT_ID: &str = "refund-desk";
pub const CLIENT_SECRET: &str = "desk-secret";

/// Who signs in next, and how their token is made.
#[derive(Debug, Clone)]
pub struct Plan {
    pub sub: String,
    pub email: String,
    /// The `email_verified` claim; `None` leaves it out of the token.
    pub email_verified: Option<bool>,
    pub groups: Vec<String>,
    /// Sign with this key id (`k1`, `k2`) or a key the provider never publishes (`stranger`).
    pub key: &'static str,
    pub audience: String,
    /// Seconds from the desk's now to `exp` (negative: already expired).
    pub expires_in: i64,
    /// The nonce to put in the token; `None`: the one the desk sent.
    pub nonce: Option<String>,
    /// The desk's clock, unix seconds (tokens are dated on it).
    pub now: i64,
}

impl Plan {
    pub fn person(sub: &str, email: &str, groups: &[&str], now: i64) -> Plan {
        Plan {
            sub: sub.into(),
            email: email.into(),
            email_verified: Some(true),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            key: "k1",
            audience: CLIENT_ID.into(),
            expires_in: 300,
            nonce: None,
            now,
        }
    }
}

struct Pending {
    nonce: String,
    challenge: String,
    plan: Plan,
}

#[derive(Clone)]
struct Idp {
    issuer: String,
    plan: Arc<Mutex<Plan>>,
    /// The key ids the provider publishes now.
    published: Arc<Mutex<Vec<&'static str>>>,
    codes: Arc<Mutex<HashMap<String, Pending>>>,
    keys: Arc<HashMap<&'static str, RsaPrivateKey>>,
}

/// The running provider: its issuer URL, and the levers a test pulls.
pub struct TestIdp {
    pub issuer: String,
    plan: Arc<Mutex<Plan>>,
    published: Arc<Mutex<Vec<&'static str>>>,
}

impl TestIdp {
    pub async fn start(plan: Plan) -> TestIdp {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let issuer = format!("http://{}", listener.local_addr().unwrap());
        let key = |pem: &str| RsaPrivateKey::from_pkcs8_pem(pem).expect("a test key");
        let keys: HashMap<&'static str, RsaPrivateKey> = [
            ("k1", key(include_str!("keys/idp-k1.pem"))),
            ("k2", key(include_str!("keys/idp-k2.pem"))),
            ("stranger", key(include_str!("keys/stranger.pem"))),
        ]
        .into_iter()
        .collect();
        let idp = Idp {
            issuer: issuer.clone(),
            plan: Arc::new(Mutex::new(plan)),
            published: Arc::new(Mutex::new(vec!["k1"])),
            codes: Arc::new(Mutex::new(HashMap::new())),
            keys: Arc::new(keys),
        };
        let handle = TestIdp {
            issuer,
            plan: idp.plan.clone(),
            published: idp.published.clone(),
        };
        let app = Router::new()
            .route("/.well-known/openid-configuration", get(discovery))
            .route("/jwks", get(jwks))
            .route("/authorize", get(authorize))
            .route("/token", post(token))
            .with_state(idp);
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        handle
    }

    /// Who signs in next, and how.
    pub fn plan(&self, plan: Plan) {
        *self.plan.lock().unwrap() = plan;
    }

    /// Rotates the provider's key: it now signs with `k2` and publishes only `k2`.
    pub fn rotate_keys(&self) {
        *self.published.lock().unwrap() = vec!["k2"];
        self.plan.lock().unwrap().key = "k2";
    }
}

async fn discovery(State(idp): State<Idp>) -> Json<Value> {
    let i = &idp.issuer;
    Json(json!({
        "issuer": i,
        "authorization_endpoint": format!("{i}/authorize"),
        "token_endpoint": format!("{i}/token"),
        "jwks_uri": format!("{i}/jwks"),
        "response_types_supported": ["code"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["RS256"],
        "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
        "code_challenge_methods_supported": ["S256"],
    }))
}

fn b64(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

async fn jwks(State(idp): State<Idp>) -> Json<Value> {
    let published = idp.published.lock().unwrap().clone();
    let keys: Vec<Value> = published
        .iter()
        .map(|kid| {
            let public = idp.keys[kid].to_public_key();
            json!({ "kty": "RSA", "use": "sig", "alg": "RS256", "kid": kid,
                    "n": b64(&public.n().to_bytes_be()), "e": b64(&public.e().to_bytes_be()) })
        })
        .collect();
    Json(json!({ "keys": keys }))
}

#[derive(Deserialize)]
struct AuthorizeQuery {
    redirect_uri: String,
    state: String,
    nonce: String,
    code_challenge: String,
}

/// Signs in whoever the plan names, at once (no page): back to the desk with a code.
async fn authorize(State(idp): State<Idp>, Query(q): Query<AuthorizeQuery>) -> Response {
    let code = format!("code-{}", uuid::Uuid::new_v4().simple());
    let plan = idp.plan.lock().unwrap().clone();
    idp.codes.lock().unwrap().insert(
        code.clone(),
        Pending {
            nonce: q.nonce,
            challenge: q.code_challenge,
            plan,
        },
    );
    Redirect::to(&format!("{}?code={code}&state={}", q.redirect_uri, q.state)).into_response()
}

#[derive(Deserialize)]
struct TokenForm {
    code: String,
    code_verifier: String,
}

/// The code (once) and its PKCE verifier checked, an ID token signed as planned.
async fn token(State(idp): State<Idp>, Form(form): Form<TokenForm>) -> Response {
    let Some(pending) = idp.codes.lock().unwrap().remove(&form.code) else {
        return (
            axum::http::StatusCode::BAD_REQUEST,
            Json(json!({ "error": "invalid_grant" })),
        )
            .into_response();
    };
    if b64(&Sha256::digest(form.code_verifier.as_bytes())) != pending.challenge {
        return (
            axum::http::StatusCode::BAD_REQUEST,
            Json(json!({ "error": "invalid_grant" })),
        )
            .into_response();
    }
    let plan = pending.plan;
    let mut claims = json!({
        "iss": idp.issuer, "sub": plan.sub, "aud": plan.audience, "email": plan.email,
        "groups": plan.groups, "iat": plan.now, "exp": plan.now + plan.expires_in,
        "nonce": plan.nonce.clone().unwrap_or(pending.nonce),
    });
    if let Some(verified) = plan.email_verified {
        claims["email_verified"] = json!(verified);
    }
    let id_token = sign(
        &idp.keys[plan.key],
        if plan.key == "stranger" {
            "k1"
        } else {
            plan.key
        },
        &claims,
    );
    Json(json!({ "access_token": "at", "token_type": "Bearer", "expires_in": 300, "id_token": id_token }))
        .into_response()
}

/// An RS256 JWT: RSASSA-PKCS1-v1_5 over SHA-256 of `header.payload`.
fn sign(key: &RsaPrivateKey, kid: &str, claims: &Value) -> String {
    let header = json!({ "alg": "RS256", "typ": "JWT", "kid": kid });
    let signing_input = format!(
        "{}.{}",
        b64(header.to_string().as_bytes()),
        b64(claims.to_string().as_bytes())
    );
    let digest = Sha256::digest(signing_input.as_bytes());
    let signature = key
        .sign(Pkcs1v15Sign::new::<Sha256>(), &digest)
        .expect("signing with a test key");
    format!("{signing_input}.{}", b64(&signature))
}
