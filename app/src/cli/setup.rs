//! What the online commands start from: the payments provider (`PAYMENTS_URL`, or the
//! embedded mock), the model, and the application state built on them.

use std::sync::Arc;

use desk::agent::investigator::Investigator;
use desk::clock::{Clock, SystemClock};
use desk::config::Config;
use desk::state::Services;

/// The embedded payments mock, when this build has one (the `embedded-payments`
/// feature; the app reaches `payments-mock` only to start it here).
#[cfg(feature = "embedded-payments")]
pub(super) type EmbeddedMock = payments_mock::RunningMock;

/// A build without the mock has no embedded provider: a type with no values keeps every
/// caller of [`provider`] the same shape in both builds.
#[cfg(not(feature = "embedded-payments"))]
pub(super) enum EmbeddedMock {}

#[cfg(not(feature = "embedded-payments"))]
impl EmbeddedMock {
    pub(super) async fn shutdown(self) {
        match self {}
    }
}

/// The provider to use: `PAYMENTS_URL`, or the embedded mock started on loopback.
pub(super) async fn provider(config: &Config) -> anyhow::Result<(String, Option<EmbeddedMock>)> {
    if let Some(url) = &config.payments_url {
        return Ok((url.clone(), None));
    }
    start_embedded_mock(config).await
}

#[cfg(feature = "embedded-payments")]
async fn start_embedded_mock(config: &Config) -> anyhow::Result<(String, Option<EmbeddedMock>)> {
    let mut mock_config = payments_mock::MockConfig::new(config.payments_data_dir());
    mock_config.webhook_secret = config.webhook_secret.clone();
    let mock = payments_mock::start(
        mock_config,
        "127.0.0.1:0".parse().expect("a literal socket address"),
    )
    .await
    .map_err(|e| anyhow::anyhow!("starting the embedded payments mock: {e}"))?;
    tracing::info!(url = %mock.base_url(), "embedded payments mock started");
    Ok((mock.base_url(), Some(mock)))
}

#[cfg(not(feature = "embedded-payments"))]
async fn start_embedded_mock(_config: &Config) -> anyhow::Result<(String, Option<EmbeddedMock>)> {
    anyhow::bail!(
        "PAYMENTS_URL must be set: this build has no embedded payments mock (it was built without the `embedded-payments` feature)"
    )
}

/// The model: an OpenAI-compatible server when `LLM_BASE_URL` is set, else the
/// built-in deterministic investigator.
fn model(config: &Config) -> anyhow::Result<Arc<dyn desk::agent::Model>> {
    Ok(match &config.llm {
        Some(llm) => {
            let model = desk::agent::llm::LlmModel::new(
                &llm.base_url,
                llm.api_key.clone(),
                llm.model.clone(),
                llm.timeout,
            )?
            .with_budget(desk::agent::context::ContextBudget::for_context_window(
                llm.context_tokens,
            ))
            .with_max_tokens(llm.max_tokens);
            tracing::info!(base_url = %llm.base_url, model = %llm.model, "using an OpenAI-compatible model server");
            Arc::new(model)
        }
        None => Arc::new(Investigator),
    })
}

/// A payments client for `PAYMENTS_URL` (or the embedded mock's `url`), as `serve`
/// builds it: key, timeouts, `Stripe-Version`, the order metadata key.
pub(super) fn payments_client(
    config: &Config,
    url: &str,
) -> anyhow::Result<payments_adapter::PaymentsClient> {
    Ok(payments_adapter::PaymentsClient::new(
        url,
        &config.payments_api_key,
        config.provider_timeout,
        config.provider_backoff,
    )?
    .with_order_key(&config.payments_order_key))
}

pub(super) async fn state(config: &Config, payments_url: &str) -> anyhow::Result<Services> {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let state = desk::build_state(config, payments_url, clock, model(config)?).await?;
    Ok(with_chores(state))
}

/// `state` with the chores every worker pass does for the crates above the desk: the
/// customer data's (adoption after a restore, restored intents looked up, retention).
/// Every state that runs the worker is given them here (`serve`, the commands, the
/// tests' app), so a chore cannot be registered in one and forgotten in another.
pub fn with_chores(state: Services) -> Services {
    customer_data::Lifecycle::register(state)
}
