//! `payments-mock`: serves the mock until Ctrl-C.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use payments_mock::MockConfig;

/// A Stripe-compatible payment-provider emulator with durable state.
#[derive(Parser)]
#[command(name = "payments-mock", version)]
struct Args {
    /// Address to listen on (port 0 picks a free port).
    #[arg(long, default_value = "127.0.0.1:12111")]
    addr: SocketAddr,
    /// Directory for payments.db.
    #[arg(long, default_value = "./data/payments")]
    data_dir: PathBuf,
    /// Receiver of signed webhook events.
    #[arg(long, env = "PAYMENTS_MOCK_WEBHOOK_URL")]
    webhook_url: Option<String>,
    /// Webhook signing secret.
    #[arg(long, env = "PAYMENTS_MOCK_WEBHOOK_SECRET", default_value = MockConfig::DEFAULT_WEBHOOK_SECRET)]
    webhook_secret: String,
    /// Idempotency key retention, in seconds.
    #[arg(long, default_value_t = 24 * 60 * 60)]
    idempotency_ttl_secs: u64,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let args = Args::parse();
    let mut config = MockConfig::new(args.data_dir);
    config.webhook_url = args.webhook_url;
    config.webhook_secret = args.webhook_secret;
    config.idempotency_ttl = Duration::from_secs(args.idempotency_ttl_secs);
    let mock = payments_mock::start(config, args.addr).await?;
    println!("payments-mock listening on {}", mock.base_url());
    tokio::signal::ctrl_c().await?;
    mock.shutdown().await;
    Ok(())
}
