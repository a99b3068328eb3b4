//! `import history --format zendesk|csv FILE --out HISTORY.jsonl`
//! (docs/spec/history.md): a helpdesk export turned into the history `shadow` replays.
//! The summary is JSON on stdout; tickets that cannot be read go to stderr as
//! `FILE:LINE: [id] message`.

use std::path::PathBuf;

use anyhow::Context;

use super::setup::{payments_client, provider};
use backtest::history_import::{
    self as history, infer::TagMap, source::HistoryFormat, HistoryError,
};
use desk::config::Config;
use terminal::Progress;

/// `--format`: one of the names the history reader takes, listed in `--help`.
fn history_format() -> impl clap::builder::TypedValueParser<Value = HistoryFormat> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(HistoryFormat::NAMES)
        .try_map(|name| name.parse::<HistoryFormat>())
}

/// The flags of `import history`.
#[derive(clap::Args)]
pub(super) struct HistoryArgs {
    /// `zendesk` (tickets with comments and users: the API's pages or the JSON export's
    /// lines) or `csv` (ticket_id, created_at, requester_email, subject, body, tags).
    #[arg(long, value_parser = history_format())]
    format: HistoryFormat,
    /// The export.
    file: PathBuf,
    /// The history file to write (JSON lines, ready for `shadow`).
    #[arg(long)]
    out: PathBuf,
    /// A refund on the customer's charges this many days after a ticket is the team's
    /// decision on it.
    #[arg(long, default_value_t = 14, value_parser = clap::value_parser!(u32).range(1..=365))]
    refund_window_days: u32,
    /// A TOML file of `tag = "escalate"` or `tag = "request_info"`: the team's tags
    /// that mean a ticket was escalated or answered with a question.
    #[arg(long)]
    tag_map: Option<PathBuf>,
    /// A Zendesk users export, when the users are not in FILE.
    #[arg(long)]
    users: Option<PathBuf>,
    /// Write the readable tickets even when some cannot be read (each is still named).
    #[arg(long)]
    skip_invalid: bool,
}

pub(super) async fn history(config: &Config, args: HistoryArgs) -> anyhow::Result<()> {
    let tag_map = match &args.tag_map {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            TagMap::parse(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?
        }
        None => TagMap::default(),
    };
    std::fs::create_dir_all(&config.data_dir)?;
    let db = store::Db::connect(&config.database_url).await?;
    let (url, mock) = provider(config).await?;
    let payments = payments_client(config, &url)?;
    let options = history::HistoryOptions {
        format: args.format,
        file: args.file.clone(),
        users: args.users,
        out: args.out,
        window_days: args.refund_window_days,
        tag_map,
        skip_invalid: args.skip_invalid,
    };
    let bar = Progress::bar("history", "tickets");
    let mut progress = |done: u64, total: u64| bar.set(done as usize, total as usize);
    let result = history::import_history(&db, &payments, options, &mut progress).await;
    bar.finish();
    if let Some(m) = mock {
        m.shutdown().await;
    }
    db.close().await;
    match result {
        Ok(report) => {
            for bad in &report.invalid_tickets {
                print_bad(&args.file, bad);
            }
            let mut summary = serde_json::to_value(&report)?;
            if let (Some(fields), Some(kib)) = (
                summary.as_object_mut(),
                shop_import::import::peak_memory_kib(),
            ) {
                fields.insert("peak_memory_kib".into(), kib.into());
            }
            println!("{}", serde_json::to_string_pretty(&summary)?);
            Ok(())
        }
        Err(HistoryError::Tickets { errors, count }) => {
            for bad in &errors {
                print_bad(&args.file, bad);
            }
            anyhow::bail!(
                "{}: {count} tickets cannot be read; nothing was written (--skip-invalid writes the rest)",
                args.file.display()
            )
        }
        Err(e) => Err(e.into()),
    }
}

fn print_bad(file: &std::path::Path, bad: &shop_import::rows::RowError) {
    let id = bad
        .id
        .as_deref()
        .map(|i| format!("[{i}] "))
        .unwrap_or_default();
    eprintln!("{}:{}: {id}{}", file.display(), bad.line, bad.message);
}
