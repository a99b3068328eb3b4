//! A Stripe-compatible payment-provider emulator for Refund desk: real HTTP, durable
//! state in SQLite, admin-driven test worlds, fault injection and signed webhooks.
//!
//! It speaks the subset of Stripe API v1 that the app's payments adapter uses
//! (customers, charges, refunds and their lifecycle, disputes' events, events, the idempotency layer of
//! docs/spec/payments.md) so the adapter can be tested exactly as it will talk to the
//! real provider, including when that provider misbehaves (its faults, same page).
//!
//! What it deliberately does not do: depend on any other workspace crate, create
//! charges through `/v1` (they come from `POST /__mock/world`), or keep durable state
//! anywhere but `data_dir/payments.db` (which is why it survives restarts). Fault
//! rules and their counters are the exception: they are in memory and a restart
//! clears them.
//!
//! Entry points: [`start`] (bind and serve, plus the webhook sender), [`router`] (the
//! routes without a socket; connection-cutting faults then answer 500 instead),
//! [`MockState::open`] (the database), [`sign_payload`] / [`verify_signature`] (the
//! `Stripe-Signature` scheme, for receivers), and the `payments-mock` binary.

mod admin;
mod charges;
mod config;
mod connection;
mod customers;
mod disputes;
mod events;
mod fault_layer;
mod faults;
mod idempotency;
mod lifecycle;
mod money;
mod refunds;
mod state;
mod webhooks;
mod wire;
mod world;

use std::net::SocketAddr;
use std::time::Duration;

use axum::http::{Method, Uri};
use axum::routing::{delete, get, post};
use axum::Router;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

pub use config::{MockConfig, MockError, RetryPolicy};
pub use state::{Clock, MockState};
pub use webhooks::{sign_payload, verify_signature, SignatureError, DEFAULT_TOLERANCE_SECS};

/// All routes, with state; serving is separate (see [`start`]).
pub fn router(state: MockState) -> Router {
    Router::new()
        .route("/v1/charges", get(charges::list))
        .route("/v1/charges/{id}", get(charges::retrieve))
        .route("/v1/customers", get(customers::list))
        .route("/v1/customers/{id}", get(customers::retrieve))
        .route("/v1/refunds", post(refunds::create).get(refunds::list))
        .route(
            "/v1/refunds/{id}",
            get(refunds::retrieve).post(lifecycle::update),
        )
        .route("/v1/refunds/{id}/cancel", post(lifecycle::cancel))
        .route("/v1/events", get(events::list))
        .route("/v1/events/{id}", get(events::retrieve))
        .route("/__mock/world", post(world::load))
        .route("/__mock/about", get(admin::about))
        .route("/__mock/ledger", get(admin::ledger))
        .route("/__mock/clock", post(admin::advance_clock))
        .route("/__mock/refunds/{id}/settle", post(lifecycle::settle))
        .route("/__mock/charges/{id}/dispute", post(disputes::dispute))
        .route(
            "/__mock/faults",
            post(fault_layer::install)
                .get(fault_layer::list)
                .delete(fault_layer::clear),
        )
        .route("/__mock/faults/{id}", delete(fault_layer::remove))
        .route("/__mock/webhooks", post(admin::set_webhook_endpoint))
        .fallback(unknown_route)
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            fault_layer::layer,
        ))
        .layer(axum::middleware::from_fn(wire::request_id_layer))
        .with_state(state)
}

async fn unknown_route(method: Method, uri: Uri) -> wire::ApiError {
    wire::ApiError::new(
        axum::http::StatusCode::NOT_FOUND,
        "invalid_request_error",
        format!("Unrecognized request URL ({method}: {}).", uri.path()),
    )
}

/// A mock serving in the background. Dropping it also stops the server (gracefully),
/// but only [`RunningMock::shutdown`] waits for that and closes the database.
pub struct RunningMock {
    addr: SocketAddr,
    state: MockState,
    stop: Option<oneshot::Sender<()>>,
    server: Option<JoinHandle<std::io::Result<()>>>,
    webhooks: Option<JoinHandle<()>>,
}

/// Opens the database under `config.data_dir`, binds `addr` (port 0 picks a free
/// port) and serves [`router`] on a background task, with the webhook sender on
/// another. Connections can be cut by fault rules (see `connection`).
pub async fn start(config: MockConfig, addr: SocketAddr) -> Result<RunningMock, MockError> {
    let state = MockState::open(config).await?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| MockError::Bind { addr, source })?;
    let local_addr = listener.local_addr()?;
    let (stop, stopped) = oneshot::channel::<()>();
    let app =
        router(state.clone()).into_make_service_with_connect_info::<connection::ConnectionHandle>();
    let listener = connection::KillableListener::new(listener);
    let webhooks = tokio::spawn(webhooks::run(state.clone()));
    let server = tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                // A send or a dropped sender both mean "stop".
                let _ = stopped.await;
            })
            .await
    });
    tracing::info!(addr = %local_addr, "payments-mock listening");
    Ok(RunningMock {
        addr: local_addr,
        state,
        stop: Some(stop),
        server: Some(server),
        webhooks: Some(webhooks),
    })
}

impl RunningMock {
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT` (loopback when bound to an unspecified address).
    pub fn base_url(&self) -> String {
        let ip = if self.addr.ip().is_unspecified() {
            std::net::IpAddr::from([127, 0, 0, 1])
        } else {
            self.addr.ip()
        };
        format!("http://{}", SocketAddr::new(ip, self.addr.port()))
    }

    /// The server's state (database, clock), e.g. for in-process assertions.
    pub fn state(&self) -> &MockState {
        &self.state
    }

    /// Runs webhook delivery until nothing is due now (retries scheduled later are
    /// left to the background sender); returns the attempts made. For tests that
    /// want delivery to have happened without waiting.
    pub async fn deliver_webhooks_now(&self) -> Result<usize, MockError> {
        Ok(webhooks::deliver_due(&self.state).await?)
    }

    /// Stops accepting connections, waits (up to 5 s) for requests in progress, and
    /// closes the database.
    pub async fn shutdown(mut self) {
        if let Some(webhooks) = self.webhooks.take() {
            webhooks.abort();
            let _ = webhooks.await;
        }
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(mut server) = self.server.take() {
            // Idle keep-alive connections close at once; a hung one must not block.
            if tokio::time::timeout(Duration::from_secs(5), &mut server)
                .await
                .is_err()
            {
                server.abort();
                let _ = server.await;
            }
        }
        self.state.close().await;
    }
}

impl Drop for RunningMock {
    /// The webhook sender would otherwise outlive the mock.
    fn drop(&mut self) {
        if let Some(webhooks) = self.webhooks.take() {
            webhooks.abort();
        }
    }
}
