//! The `refund-agent` command line (docs/spec/interfaces.md). Tokens and links print alone on stdout so
//! scripts can capture them (`seed` prints its credentials there, one per line);
//! everything else goes to stderr.

mod accounts;
mod args;
mod authoring;
mod demo;
mod evals;
mod history;
mod import;
mod offline;
mod operate;
mod policy;
mod seed;
mod serve;
mod setup;

use std::process::ExitCode;

use clap::Parser;

pub use accounts::sign_in_url;
use args::{Cli, Command};
pub use demo::{DemoTraffic, TrafficStep};
pub use setup::with_chores;

pub fn main() -> ExitCode {
    // Parsed first: a bad setting (LOG_FORMAT included) stops start-up with clap's
    // message naming it, before anything is logged in a format nobody asked for.
    let cli = Cli::parse();
    let log_format = cli.settings.log_format;
    init_logging(log_format);
    match terminal::block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // With JSON logs the last word is a JSON line too, for the collector.
            match log_format {
                settings::LogFormat::Json => {
                    tracing::error!(error = %format!("{e:#}"), "stopped by an error")
                }
                settings::LogFormat::Text => eprintln!("error: {e:#}"),
            }
            ExitCode::FAILURE
        }
    }
}

/// Logs to stderr, filtered by `RUST_LOG`, as text or as JSON lines (`LOG_FORMAT`). The
/// JSON form carries each event's span fields (the request id, the route), so a log
/// collector can follow one request.
fn init_logging(format: settings::LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| "info,sqlx=warn,tantivy=warn,rmcp=warn".into());
    // Colour codes only for a person at a terminal: redirected to a file or a pipe,
    // they are noise in every line (`seed 2> seed.log`).
    let terminal = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(terminal)
        .with_writer(std::io::stderr);
    match format {
        settings::LogFormat::Text => builder.init(),
        settings::LogFormat::Json => builder.json().with_current_span(true).init(),
    }
}

/// Each command to its module.
async fn run(cli: Cli) -> anyhow::Result<()> {
    let config = settings::config_of(&cli.settings);
    match cli.command {
        Command::Serve { listen } => serve::serve(&config, listen.addr).await,
        Command::Demo { listen, rate } => {
            let addr = listen.addr;
            // The printed sign-in link points where this demo listens.
            let mut seeding = config.clone();
            seeding
                .public_url
                .get_or_insert_with(|| accounts::serve_url(Some(&addr.to_string())));
            seed::seed_once(&seeding).await?;
            serve::serve_with(&config, addr, Some(rate)).await
        }
        Command::Seed {
            world,
            reset_passwords,
            app_only,
        } => seed::seed(&config, world.as_deref(), reset_passwords, app_only).await,
        Command::Index => offline::rebuild_index(&config).await,
        Command::Investigate { ticket } => operate::investigate(&config, ticket).await,
        Command::Policy { command } => policy::policy(&config, command).await,
        Command::Mcp => operate::mcp(&config).await,
        Command::Rollout { command } => operate::rollout(&config, command).await,
        Command::Import { command } => import::import(&config, command).await,
        Command::Charges { command } => import::charges(&config, command).await,
        Command::Reconcile => operate::reconcile(&config).await,
        Command::Eval { .. } => evals::forward_to_refund_evals().await,
        Command::Shadow { history, out } => offline::shadow(&config, history, out).await,
        Command::Staff { command } => accounts::staff(&config, command).await,
        Command::Customer { command } => accounts::customer(&config, command).await,
        Command::Token { command } => accounts::token(&config, command).await,
        Command::Backup { file } => {
            customer_data::restore::backup(&config.database_url, &file).await?;
            eprintln!("backup written to {}", file.display());
            Ok(())
        }
        Command::Restore { file } => operate::restore(&config, &file).await,
    }
}
