//! The `refund-evals` command line: the scenario eval suite (`eval`, also reached as
//! `refund-agent eval`, which hands its command line over unchanged) and the
//! historical-ticket generator (`generate-history`). Both take the same settings as
//! `refund-agent` (`settings::Settings`: flags with environment fallbacks); the
//! report's path and nothing else goes to stdout.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};
use desk::config::Config;
use refund_evals::generate::{self, ComplaintBank};
use refund_evals::suite::{self, ModelChoice};
use terminal::Progress;

#[derive(Parser)]
#[command(
    name = "refund-evals",
    version,
    about = "Refund desk's scenario eval suite and historical-ticket generator"
)]
struct Cli {
    /// Every setting of `refund-agent` (the suite reads FIXTURES_DIR and LLM_*).
    #[command(flatten)]
    settings: settings::Settings,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the scenario eval suite (`evals/scenarios/`), each scenario in its own
    /// isolated environment; k runs per scenario for a nondeterministic model (pass^k).
    Eval {
        /// The scenario directory [default: FIXTURES_DIR/../evals/scenarios].
        #[arg(long)]
        scenarios: Option<PathBuf>,
        /// Runs per scenario; a scenario passes only if all k pass.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..))]
        k: u16,
        /// Where `report.json` and `report.html` are written.
        #[arg(long, default_value = "./eval-report")]
        out: PathBuf,
        /// Log what the app does in each scenario (info level). Without it the suite is
        /// quiet: only errors, the progress bar, the summary and the report's paths —
        /// the WARN lines of the faults scenarios inject on purpose are not failures.
        #[arg(long, short)]
        verbose: bool,
    },
    /// Write a large, deterministic historical-ticket set (docs/spec/interfaces.md format) for load use.
    GenerateHistory {
        /// How many tickets to write.
        #[arg(long, default_value_t = 10_000)]
        count: usize,
        /// The random seed: the same seed writes the same file.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// The JSON-lines file to write.
        #[arg(long)]
        out: PathBuf,
        /// `plain` (load: fixture-like text) or `varied` (id schemes, many orders,
        /// EN/ZH/JA paraphrases from `evals/history/phrases/`, follow-ups, typos).
        #[arg(long, value_enum, default_value_t = HistoryStyle::Plain)]
        style: HistoryStyle,
        /// With `--style varied`: the complaint sentences (`own` phrase banks, or the
        /// externally written `external-dev` / `external-heldout` of
        /// `evals/history/external/`).
        #[arg(long, value_enum, default_value_t = HistoryBank::Own)]
        bank: HistoryBank,
    },
    /// Write a shop's past for `import history`: `account.json` (load it into
    /// the payments mock with `POST /__mock/world`), `customers.csv`, `orders.csv`,
    /// `export.json` (Zendesk-shaped), `tag-map.toml`, and `truth.jsonl` — what the
    /// simulated team decided on each ticket, to measure the inference against.
    GenerateZendesk {
        /// How many tickets.
        #[arg(long, default_value_t = 240)]
        tickets: usize,
        /// The random seed: the same seed writes the same files.
        #[arg(long, default_value_t = 36)]
        seed: u64,
        /// The directory to write into (created).
        #[arg(long)]
        out: PathBuf,
    },
}

/// Complaint sentences of `generate-history --style varied`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum HistoryBank {
    Own,
    ExternalDev,
    ExternalHeldout,
}

/// Styles of `generate-history`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum HistoryStyle {
    Plain,
    Varied,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // `RUST_LOG` always wins; else `eval` is quiet unless `--verbose`.
    let default = match cli.command {
        Command::Eval { verbose: false, .. } => "error",
        _ => "info,sqlx=warn,tantivy=warn,rmcp=warn",
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| default.into()),
        )
        .with_writer(std::io::stderr)
        .init();
    match terminal::block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    let config = settings::config_of(&cli.settings);
    match cli.command {
        Command::Eval {
            scenarios, k, out, ..
        } => eval(&config, scenarios, k, out).await,
        Command::GenerateHistory {
            count,
            seed,
            out,
            style,
            bank,
        } => generate_history(&config, count, seed, out, style, bank),
        Command::GenerateZendesk { tickets, seed, out } => generate_zendesk(tickets, seed, &out),
    }
}

async fn eval(
    config: &Config,
    scenarios: Option<PathBuf>,
    k: u16,
    out: PathBuf,
) -> anyhow::Result<()> {
    let dir = scenarios.unwrap_or_else(|| {
        config
            .fixtures_dir
            .join("..")
            .join("evals")
            .join("scenarios")
    });
    let model = config
        .llm
        .clone()
        .map(ModelChoice::Llm)
        .unwrap_or(ModelChoice::BuiltIn);
    let bar = Progress::bar("eval", "scenarios");
    let report = suite::run_suite(
        &dir,
        &config.fixtures_dir,
        model,
        usize::from(k),
        |done, total| bar.set(done, total),
    )
    .await;
    bar.finish();
    let report = report?;
    suite::write(&report, &out)?;
    eprintln!("{}", report.summary());
    eprintln!("HTML report: {}", out.join("report.html").display());
    println!("{}", out.join("report.json").display());
    if report.passed < report.total || report.hard_violations > 0 {
        anyhow::bail!(
            "{} of {} scenarios failed",
            report.total - report.passed,
            report.total
        );
    }
    Ok(())
}

fn generate_history(
    config: &Config,
    count: usize,
    seed: u64,
    out: PathBuf,
    style: HistoryStyle,
    bank: HistoryBank,
) -> anyhow::Result<()> {
    let policies = desk::policies::load_policy_set(&config.policies_dir())?;
    let bank = match bank {
        HistoryBank::Own => ComplaintBank::Own,
        HistoryBank::ExternalDev => ComplaintBank::ExternalDev,
        HistoryBank::ExternalHeldout => ComplaintBank::ExternalHeldout,
    };
    let tickets: Box<dyn Iterator<Item = _>> = match style {
        HistoryStyle::Plain => Box::new(generate::history_iter(&policies, seed, count)),
        HistoryStyle::Varied => {
            Box::new(generate::varied_history_iter(&policies, seed, count, bank))
        }
    };
    let bar = Progress::bar("generate-history", "tickets");
    let written = write_history(tickets, &out, |done| bar.set(done, count));
    bar.finish();
    written.with_context(|| format!("writing {}", out.display()))?;
    eprintln!("wrote {count} tickets to {}", out.display());
    Ok(())
}

/// Streams `tickets` to `out` as JSON lines, calling `progress(written)` after each.
fn write_history(
    tickets: impl Iterator<Item = shadow::replay::HistoricalTicket>,
    out: &std::path::Path,
    mut progress: impl FnMut(usize),
) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut file = std::io::BufWriter::new(std::fs::File::create(out)?);
    for (done, ticket) in tickets.enumerate() {
        file.write_all(generate::jsonl_line(&ticket).as_bytes())?;
        progress(done + 1);
    }
    file.into_inner().map_err(|e| e.into_error())?.sync_all()
}

fn generate_zendesk(tickets: usize, seed: u64, out: &std::path::Path) -> anyhow::Result<()> {
    let set = generate::zendesk::zendesk_set(seed, tickets);
    std::fs::create_dir_all(out)?;
    let truth: String = set
        .truth
        .iter()
        .map(|t| {
            let refunds: Vec<_> = t
                .refunds
                .iter()
                .map(|(c, m)| serde_json::json!({"charge_id": c, "minor": m}))
                .collect();
            serde_json::json!({ "ticket_id": t.ticket_id, "outcome": t.outcome, "refunds": refunds,
                                "matched": t.matched })
            .to_string()
                + "\n"
        })
        .collect();
    for (name, text) in [
        ("account.json", serde_json::to_string_pretty(&set.account)?),
        ("customers.csv", set.customers_csv),
        ("orders.csv", set.orders_csv),
        ("export.json", set.export),
        ("tag-map.toml", set.tag_map),
        ("truth.jsonl", truth),
    ] {
        std::fs::write(out.join(name), text).with_context(|| format!("writing {name}"))?;
    }
    println!("{}", out.display());
    Ok(())
}
