//! `import customers|orders|history` and `charges unlinked|link`: a team's own
//! data brought in. The summary is JSON on stdout; bad rows go to stderr as
//! `FILE:LINE: [id] message`, and any bad row means nothing was imported (exit 1).

use std::path::Path;

use super::args::{ChargesCommand, ImportCommand};
use super::setup::{payments_client, provider};
use desk::clock::{Clock, SystemClock};
use desk::config::Config;
use shop_import::import::{self, ImportError};
use terminal::{Progress, Stages};

pub(super) async fn import(config: &Config, command: ImportCommand) -> anyhow::Result<()> {
    match command {
        ImportCommand::Customers {
            file,
            format,
            offline,
        } => customers(config, &file, format, offline).await,
        ImportCommand::Orders { file, format } => orders(config, &file, format).await,
        ImportCommand::History(args) => super::history::history(config, args).await,
    }
}

async fn customers(
    config: &Config,
    file: &Path,
    format: Option<shop_import::rows::Format>,
    offline: bool,
) -> anyhow::Result<()> {
    std::fs::create_dir_all(&config.data_dir)?;
    let db = store::Db::connect(&config.database_url).await?;
    let (payments, mock) = if offline {
        (None, None)
    } else {
        let (url, mock) = provider(config).await?;
        (Some(payments_client(config, &url)?), mock)
    };
    let mut bars = Stages::new(|stage| bar_for(stage, "customers"));
    let mut progress = |stage: &'static str, done: u64, total: u64| bars.set(stage, done, total);
    let result = import::import_customers(
        &db,
        payments.as_ref(),
        file,
        format,
        SystemClock.now_ms(),
        &mut progress,
    )
    .await;
    bars.finish();
    if let Some(m) = mock {
        m.shutdown().await;
    }
    db.close().await;
    report(file, result)
}

async fn orders(
    config: &Config,
    file: &Path,
    format: Option<shop_import::rows::Format>,
) -> anyhow::Result<()> {
    std::fs::create_dir_all(&config.data_dir)?;
    let db = store::Db::connect(&config.database_url).await?;
    let mut bars = Stages::new(|stage| bar_for(stage, "orders"));
    let mut progress = |stage: &'static str, done: u64, total: u64| bars.set(stage, done, total);
    let result =
        import::import_orders(&db, file, format, SystemClock.now_ms(), &mut progress).await;
    bars.finish();
    db.close().await;
    report(file, result)
}

/// The bar of one stage of an import (`shop_import::import`): the file's bytes
/// while it is read, then the set-wide checks, the customers asked about at the
/// provider, and the rows written. Drawn only when stderr is a terminal.
fn bar_for(stage: &'static str, rows: &'static str) -> Progress {
    match stage {
        "reading" => Progress::bytes(stage),
        "checking" => Progress::bar(stage, "checks"),
        "linking" => Progress::bar(stage, "customers"),
        _ => Progress::bar(stage, rows),
    }
}

/// The summary on stdout, or each bad row on stderr and an error.
fn report(file: &Path, result: Result<import::ImportReport, ImportError>) -> anyhow::Result<()> {
    match result {
        Ok(report) => {
            let mut summary = serde_json::to_value(&report)?;
            if let (Some(fields), Some(kib)) = (summary.as_object_mut(), peak_memory_kib()) {
                fields.insert("peak_memory_kib".into(), kib.into());
            }
            println!("{}", serde_json::to_string_pretty(&summary)?);
            Ok(())
        }
        Err(ImportError::Rows { errors, count }) => {
            for e in &errors {
                let id =
                    e.id.as_deref()
                        .map(|i| format!("[{i}] "))
                        .unwrap_or_default();
                eprintln!("{}:{}: {id}{}", file.display(), e.line, e.message);
            }
            if count > errors.len() as u64 {
                eprintln!("… and {} more", count - errors.len() as u64);
            }
            anyhow::bail!("{}: {count} bad rows; nothing was imported", file.display())
        }
        Err(e) => Err(e.into()),
    }
}

/// `charges unlinked [--sync]` and `charges link CHARGE ORDER`.
pub(super) async fn charges(config: &Config, command: ChargesCommand) -> anyhow::Result<()> {
    std::fs::create_dir_all(&config.data_dir)?;
    let db = store::Db::connect(&config.database_url).await?;
    let (url, mock) = provider(config).await?;
    let payments = payments_client(config, &url)?;
    let done = charges_on(&db, &payments, command).await;
    if let Some(m) = mock {
        m.shutdown().await;
    }
    db.close().await;
    done
}

async fn charges_on(
    db: &store::Db,
    payments: &payments_adapter::PaymentsClient,
    command: ChargesCommand,
) -> anyhow::Result<()> {
    use desk::onboarding::charges;
    let now = SystemClock.now_ms();
    match command {
        ChargesCommand::Unlinked { sync, limit } => {
            if sync {
                let bar = Progress::bar("charges", "charges read");
                let mut progress = |n: u64| bar.set(n as usize, n as usize);
                let report = charges::sync_unlinked(db, payments, now, &mut progress).await;
                bar.finish();
                eprintln!("{}", serde_json::to_string(&report?)?);
            }
            let list = charges::list_unlinked(db, None, limit).await?;
            println!("{}", serde_json::to_string_pretty(&list)?);
        }
        ChargesCommand::Link { charge, order } => {
            charges::link_charge(db, payments, &charge, &order, "cli", now).await?;
            eprintln!("charge {charge} linked to order {order}");
        }
    }
    Ok(())
}

/// This process's peak resident memory (Linux `VmHWM`), so a deployer sees that an
/// import's memory does not grow with the file; `None` where there is no `/proc`.
pub(super) fn peak_memory_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}
