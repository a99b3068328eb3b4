//! The commands that work on the live desk once it is set up: `investigate` (one ticket's
//! trace), `mcp` (the MCP server on stdio), `reconcile` (against the provider), `restore`
//! (a backup brought back, and what the provider did since adopted) and `rollout
//! status|set` (the agent's rollout per scope; the database alone).

use anyhow::Context;

use super::setup::{provider, state};
use desk::config::Config;

/// `investigate`: drains the worker, then prints the ticket's run events and case status.
pub(super) async fn investigate(config: &Config, ticket: String) -> anyhow::Result<()> {
    let (url, mock) = provider(config).await?;
    let state = state(config, &url).await?;
    desk::worker::drain(&state).await?;
    let case = desk::cases::case_for_ticket(&state.db, &ticket)
        .await?
        .context("no such ticket")?;
    let run_id = case.run_id.clone().context("the case has no run")?;
    for e in desk::runs::events(&state.db, &run_id).await? {
        println!(
            "{:>3} {:<18} {} {}",
            e.seq,
            e.kind,
            e.call_id.unwrap_or_default(),
            e.payload
        );
    }
    println!("case {} is {}", case.id, case.status.as_str());
    if let Some(m) = mock {
        m.shutdown().await;
    }
    Ok(())
}

/// `mcp`: the MCP server on stdio, with the token from the environment.
pub(super) async fn mcp(config: &Config) -> anyhow::Result<()> {
    let (url, mock) = provider(config).await?;
    let state = state(config, &url).await?;
    let token = std::env::var(web::mcp::TOKEN_ENV).ok();
    let served = web::mcp::serve_stdio(state, token.as_deref()).await;
    if let Some(m) = mock {
        m.shutdown().await;
    }
    served
}

/// `reconcile`: the report on stdout, drift included; differences that need a human are
/// an error.
pub(super) async fn reconcile(config: &Config) -> anyhow::Result<()> {
    let (url, mock) = provider(config).await?;
    let state = state(config, &url).await?;
    if let Some(adoption) = customer_data::adoption::adopt_after_restore(state.sender()).await? {
        eprintln!("after the restore: {}", adoption.summary());
    }
    let restored = customer_data::restore::check_restored(state.sender()).await?;
    if restored > 0 {
        eprintln!("{restored} restored refund intents checked at the provider");
    }
    let report = desk::reconcile::run_with_drift(state.reconciler()).await?;
    eprintln!("{}", report.summary());
    println!("{}", serde_json::to_string_pretty(&report)?);
    if let Some(m) = mock {
        m.shutdown().await;
    }
    if !report.is_clean() {
        anyhow::bail!("reconciliation found differences that need a human");
    }
    Ok(())
}

/// `restore FILE`: the backup brought back into the empty data directory (or database),
/// then, before anything can be served or executed, the refunds the provider made on the
/// restored charges since the backup adopted (docs/spec/data.md, "Backups"). A provider
/// out of reach is an error that says what happens next: the data is in place, and
/// `serve` adopts first.
pub(super) async fn restore(config: &Config, file: &std::path::Path) -> anyhow::Result<()> {
    use desk::clock::{Clock, SystemClock};
    let now = SystemClock.now_ms();
    let waiting = customer_data::restore::restore(&config.database_url, file, now).await?;
    eprintln!(
        "restored {} ({waiting} refund intents the backup had not seen final); asking the provider what it refunded since",
        file.display()
    );
    let (url, mock) = provider(config).await?;
    let adopted = async {
        let state = state(config, &url).await?;
        let adopted = customer_data::adoption::adopt_after_restore(state.sender()).await;
        state.db.close().await;
        Ok::<_, anyhow::Error>(adopted?)
    }
    .await;
    if let Some(m) = mock {
        m.shutdown().await;
    }
    match adopted {
        Ok(Some(adoption)) => {
            eprintln!("adopted: {}", adoption.summary());
            Ok(())
        }
        Ok(None) => Ok(()),
        Err(e) => anyhow::bail!(
            "the data is restored, but the payment provider could not be asked what it refunded since the backup ({e:#}); \
             nothing is served or executed until it is: `serve` asks first and starts once the provider answers \
             (or run `refund-agent reconcile`)"
        ),
    }
}

/// `rollout status|set`: reads or sets the rollout in the database (no provider needed).
/// `status` prints JSON; `set` prints the change as audited, actor `cli`.
pub(super) async fn rollout(
    config: &Config,
    command: super::args::RolloutCommand,
) -> anyhow::Result<()> {
    use desk::clock::{Clock, SystemClock};
    use desk::rollout::{self, guards::Guards, modes, Mode, Scope};
    let db = store::Db::connect(&config.database_url).await?;
    let now = SystemClock.now_ms();
    let printed = match command {
        super::args::RolloutCommand::Status => {
            let default = Mode::default_for(config.shadow_mode);
            let status = rollout::status(&db, &Guards::default(), default, now).await?;
            serde_json::to_string_pretty(&status)?
        }
        super::args::RolloutCommand::Set {
            scope,
            mode,
            percent,
            reason,
        } => {
            let scope = Scope::parse(&scope)?;
            let mode = Mode::parse(&mode, percent)?;
            let change = modes::set_mode(&db, "cli", scope, mode, &reason, now).await?;
            serde_json::to_string_pretty(&change)?
        }
    };
    println!("{printed}");
    db.close().await;
    Ok(())
}
