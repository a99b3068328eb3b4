//! The `refund-agent` command line (SPEC §7). Tokens and links print alone on stdout so
//! scripts can capture them (`seed` prints its credentials there, one per line);
//! everything else goes to stderr.

use std::io::Read;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::{Parser, Subcommand};

use crate::agent::investigator::Investigator;
use crate::auth::{self, StaffRole};
use crate::clock::{Clock, SystemClock};
use crate::config::Config;
use crate::http::AppState;
use crate::world::World;

#[derive(Parser)]
#[command(
    name = "refund-agent",
    version,
    about = "Refund desk: an AI refund agent a support team can trust with money"
)]
struct Cli {
    /// Every setting, each a flag with an environment fallback (`config::Settings`).
    #[command(flatten)]
    settings: crate::config::Settings,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the web app (and the embedded payments mock unless PAYMENTS_URL is set).
    Serve {
        /// The address to listen on.
        #[arg(
            long,
            env = "BIND_ADDR",
            value_name = "BIND_ADDR",
            default_value = "127.0.0.1:8080"
        )]
        addr: SocketAddr,
    },
    /// Load a billing world into the app and the payment provider, and create demo staff.
    Seed {
        /// The billing world to load [default: FIXTURES_DIR/billing/demo.json].
        #[arg(long)]
        world: Option<PathBuf>,
        /// Give the demo staff new passwords even though they exist (which revokes
        /// their sessions and tokens). Without it, seeding an existing data dir refuses.
        #[arg(long)]
        reset_passwords: bool,
    },
    /// Rebuild the policy index.
    Index,
    /// Run the agent on a ticket and print its trace.
    Investigate {
        /// The ticket's id.
        ticket: String,
    },
    /// Policy tools.
    Policy {
        #[command(subcommand)]
        command: PolicyCommand,
    },
    /// Replay historical tickets with the agent and compare with the humans' decisions.
    Shadow {
        /// The historical tickets, as JSON lines (SPEC §7).
        history: PathBuf,
        /// Where `report.json` and `report.html` are written.
        #[arg(long, default_value = "./shadow-report")]
        out: PathBuf,
    },
    /// Compare internal refund intents with the provider's refunds; resolve unknowns.
    Reconcile,
    /// Run the scenario eval suite (`evals/scenarios/`): forwarded, arguments and all, to
    /// the `refund-evals` binary (`refund-evals eval --help` lists its flags), which lives
    /// outside the production library (issue 18).
    #[command(disable_help_flag = true)]
    Eval {
        /// Passed to `refund-evals eval` unchanged (`--scenarios DIR`, `--k N`, `--out DIR`).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<std::ffi::OsString>,
    },
    /// Staff accounts.
    Staff {
        #[command(subcommand)]
        command: StaffCommand,
    },
    /// Customer access.
    Customer {
        #[command(subcommand)]
        command: CustomerCommand,
    },
    /// The read-only investigation tools over MCP on stdio, for the staff member whose
    /// bearer token is in REFUND_DESK_TOKEN.
    Mcp,
}

#[derive(Subcommand)]
enum PolicyCommand {
    /// Decide a FACTS.json file and print the decision as JSON.
    Check {
        /// A JSON file of facts (policy_engine::Facts).
        facts: PathBuf,
    },
    /// Search the policy index: ranked passages cited as doc@version#section.
    Search {
        /// The words to search for.
        query: String,
        /// Only versions in force on this date (YYYY-MM-DD).
        #[arg(long)]
        as_of: Option<String>,
        /// Only passages that apply to this region (e.g. CN, US, EU, JP).
        #[arg(long)]
        region: Option<String>,
        /// Only passages that apply to this product (e.g. annual_plan).
        #[arg(long)]
        product: Option<String>,
        /// What-if: include draft versions.
        #[arg(long)]
        drafts: bool,
        /// How many passages to print, 1 to 50.
        #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u8).range(1..=50))]
        limit: u8,
    },
    /// Which historical tickets a policy change would decide differently, and the money.
    Diff {
        /// Versions to pin on the old side, comma separated (e.g. RP-001@2).
        #[arg(long, value_delimiter = ',')]
        from: Vec<String>,
        /// Versions to pin on the new side (e.g. RP-001@3, a draft).
        #[arg(long, value_delimiter = ',')]
        to: Vec<String>,
        /// The historical tickets, as JSON lines (SPEC §7).
        history: PathBuf,
    },
    /// Score policy search on labelled queries: recall@1, recall@3, MRR.
    Eval {
        /// JSON lines of {query, as_of, region?, product?, expected}.
        #[arg(long)]
        queries: Option<PathBuf>,
    },
}

#[derive(Subcommand)]
enum StaffCommand {
    /// Add (or update) a staff member; the password is read from stdin.
    Add {
        /// The staff member's email (their login).
        #[arg(long)]
        email: String,
        /// What they may do.
        #[arg(long, value_enum)]
        role: RoleArg,
        /// Read the password from standard input (never from a flag, where `ps` shows it).
        #[arg(long)]
        password_stdin: bool,
    },
    /// Print a new bearer token for a staff member.
    Token {
        /// The staff member's email.
        #[arg(long)]
        email: String,
    },
    /// Forget a staff member's failed logins, so the login throttle lets them in.
    Unlock {
        /// The staff member's email.
        #[arg(long)]
        email: String,
    },
}

#[derive(Subcommand)]
enum CustomerCommand {
    /// Print a new API bearer token for a customer (never accepted in a link).
    Token {
        /// The customer's id (e.g. C-100).
        customer_id: String,
    },
    /// Print a single-use sign-in link for a customer, valid 15 minutes.
    Link {
        /// The customer's id (e.g. C-100).
        customer_id: String,
    },
}

/// Staff roles as `staff add --role` accepts them (clap lists them in `--help`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum RoleArg {
    /// Approves refunds within the agent limit of RP-004.
    Agent,
    /// Approves within the supervisor limit of RP-004; takes cases over.
    Supervisor,
    /// Everything a supervisor does, and manages staff.
    Admin,
}

impl From<RoleArg> for StaffRole {
    fn from(role: RoleArg) -> StaffRole {
        match role {
            RoleArg::Agent => StaffRole::Agent,
            RoleArg::Supervisor => StaffRole::Supervisor,
            RoleArg::Admin => StaffRole::Admin,
        }
    }
}

pub fn main() -> ExitCode {
    // Parsed first: a bad setting (LOG_FORMAT included) stops start-up with clap's
    // message naming it, before anything is logged in a format nobody asked for.
    let cli = Cli::parse();
    let log_format = cli.settings.log_format;
    init_logging(log_format);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: starting the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // With JSON logs the last word is a JSON line too, for the collector.
            match log_format {
                crate::config::LogFormat::Json => {
                    tracing::error!(error = %format!("{e:#}"), "stopped by an error")
                }
                crate::config::LogFormat::Text => eprintln!("error: {e:#}"),
            }
            ExitCode::FAILURE
        }
    }
}

/// Logs to stderr, filtered by `RUST_LOG`, as text or as JSON lines (`LOG_FORMAT`). The
/// JSON form carries each event's span fields (the request id, the route), so a log
/// collector can follow one request.
fn init_logging(format: crate::config::LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| "info,sqlx=warn,tantivy=warn,rmcp=warn".into());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        crate::config::LogFormat::Text => builder.init(),
        crate::config::LogFormat::Json => builder.json().with_current_span(true).init(),
    }
}

/// The embedded payments mock, when this build has one (issue 18: the `embedded-payments`
/// feature; the app reaches `payments-mock` only to start it here).
#[cfg(feature = "embedded-payments")]
type EmbeddedMock = payments_mock::RunningMock;

/// A build without the mock has no embedded provider: a type with no values keeps every
/// caller of [`provider`] the same shape in both builds.
#[cfg(not(feature = "embedded-payments"))]
enum EmbeddedMock {}

#[cfg(not(feature = "embedded-payments"))]
impl EmbeddedMock {
    async fn shutdown(self) {
        match self {}
    }
}

/// The provider to use: `PAYMENTS_URL`, or the embedded mock started on loopback.
async fn provider(config: &Config) -> anyhow::Result<(String, Option<EmbeddedMock>)> {
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
fn model(config: &Config) -> anyhow::Result<Arc<dyn crate::agent::Model>> {
    Ok(match &config.llm {
        Some(llm) => {
            let model = crate::agent::llm::LlmModel::new(
                &llm.base_url,
                llm.api_key.clone(),
                llm.model.clone(),
                llm.timeout,
            )?
            .with_budget(crate::agent::context::ContextBudget::for_context_window(
                llm.context_tokens,
            ));
            tracing::info!(base_url = %llm.base_url, model = %llm.model, "using an OpenAI-compatible model server");
            Arc::new(model)
        }
        None => Arc::new(Investigator),
    })
}

async fn state(config: &Config, payments_url: &str) -> anyhow::Result<AppState> {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    crate::build_state(config, payments_url, clock, model(config)?).await
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    let config = Config::from_settings(&cli.settings);
    match cli.command {
        Command::Serve { addr } => serve(&config, addr).await,
        Command::Seed {
            world,
            reset_passwords,
        } => seed(&config, world.as_deref(), reset_passwords).await,
        Command::Index => {
            let policies = crate::policies::load_policy_set(&config.policies_dir())?;
            let dir = config.index_dir();
            let index = tokio::task::spawn_blocking(move || -> anyhow::Result<_> {
                let index = crate::policies::open_index(&dir, &policies)?;
                index
                    .rebuild(policies.documents())
                    .map_err(|e| anyhow::anyhow!("{e}"))?;
                Ok(index)
            })
            .await??;
            eprintln!(
                "policy index rebuilt: {} sections, policy hash {}",
                index.section_count(),
                index.policy_hash()
            );
            Ok(())
        }
        Command::Investigate { ticket } => {
            let (url, mock) = provider(&config).await?;
            let state = state(&config, &url).await?;
            crate::worker::drain(&state).await?;
            let case = crate::cases::case_for_ticket(&state.db, &ticket)
                .await?
                .context("no such ticket")?;
            let run_id = case.run_id.clone().context("the case has no run")?;
            for e in crate::runs::events(&state.db, &run_id).await? {
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
        Command::Policy { command } => policy(&config, command).await,
        Command::Mcp => {
            let (url, mock) = provider(&config).await?;
            let state = state(&config, &url).await?;
            let token = std::env::var(crate::mcp::TOKEN_ENV).ok();
            let served = crate::mcp::serve_stdio(state, token.as_deref()).await;
            if let Some(m) = mock {
                m.shutdown().await;
            }
            served
        }
        Command::Reconcile => {
            let (url, mock) = provider(&config).await?;
            let state = state(&config, &url).await?;
            let report = crate::reconcile::run(&state).await?;
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
        Command::Eval { .. } => forward_to_refund_evals().await,
        Command::Shadow { history, out } => {
            let (policies, index) = offline_policies(&config).await?;
            let (tickets, bad_lines) = read_history(&history)?;
            let report = crate::shadow::run(
                &Investigator,
                &policies,
                &index,
                &tickets,
                bad_lines,
                |done, total| {
                    if done % 50 == 0 || done == total {
                        eprint!("\rshadow: {done}/{total} tickets");
                    }
                },
            )
            .await;
            eprintln!();
            crate::shadow::write(&report, &out)?;
            println!(
                "{}",
                serde_json::json!({ "total": report.total, "outcome_agreement": report.outcome_agreement,
                                    "exact_agreement": report.exact_agreement, "tickets_per_second": report.tickets_per_second,
                                    "report": out.join("report.json"), "html": out.join("report.html") })
            );
            Ok(())
        }
        Command::Staff { command } => {
            let db = crate::store::Db::connect(&config.database_url).await?;
            let now = SystemClock.now_ms();
            match command {
                StaffCommand::Add {
                    email,
                    role,
                    password_stdin,
                } => {
                    if !password_stdin {
                        anyhow::bail!(
                            "pass --password-stdin and write the password on standard input"
                        );
                    }
                    let mut password = String::new();
                    std::io::stdin().read_to_string(&mut password)?;
                    let staff = auth::upsert_staff(
                        &db,
                        &email,
                        role.into(),
                        password.trim_end_matches(['\n', '\r']),
                        now,
                    )
                    .await?;
                    eprintln!("staff {} ({}) saved", staff.email, staff.role.as_str());
                }
                StaffCommand::Token { email } => {
                    let staff = auth::staff_by_email(&db, &email)
                        .await?
                        .context("no staff member with that email")?;
                    let (token, _) = auth::issue_token(&db, "api", "staff", &staff.id, now).await?;
                    println!("{token}");
                }
                StaffCommand::Unlock { email } => {
                    auth::staff_by_email(&db, &email)
                        .await?
                        .context("no staff member with that email")?;
                    let n = auth::unlock_staff(&db, &email).await?;
                    eprintln!("{email}: {n} failed logins forgotten");
                }
            }
            Ok(())
        }
        Command::Customer { command } => customer(&config, command).await,
    }
}

/// `customer token` (an API token) and `customer link` (a single-use sign-in link):
/// either alone on stdout.
async fn customer(config: &Config, command: CustomerCommand) -> anyhow::Result<()> {
    let db = crate::store::Db::connect(&config.database_url).await?;
    let now = SystemClock.now_ms();
    let missing = || anyhow::anyhow!("no such customer (run `refund-agent seed` first)");
    match command {
        CustomerCommand::Token { customer_id } => {
            let known = sqlx::query("SELECT id FROM customers WHERE id = $1")
                .bind(&customer_id)
                .fetch_optional(db.pool())
                .await?;
            known.ok_or_else(missing)?;
            let (token, _) = auth::issue_token(&db, "api", "customer", &customer_id, now).await?;
            println!("{token}");
        }
        CustomerCommand::Link { customer_id } => {
            let token = match auth::issue_sign_in_link(&db, &customer_id, now).await {
                Err(crate::error::AppError::NotFound(_)) => return Err(missing()),
                other => other?,
            };
            println!("{}", sign_in_url(config, &token));
        }
    }
    Ok(())
}

/// The address a customer opens to sign in: `PUBLIC_URL` (else the default `serve`
/// address) + `/sign-in?link=…`.
pub fn sign_in_url(config: &Config, token: &str) -> String {
    let base = config
        .public_url
        .as_deref()
        .unwrap_or("http://127.0.0.1:8080")
        .trim_end_matches('/');
    format!("{base}/sign-in?link={token}")
}

/// How long a stop may take to drain before what is left is aborted: inside the 10 s a
/// service manager waits between SIGTERM and SIGKILL (issue 20). An aborted refund call
/// is safe anyway: its intent and key were stored first (SPEC invariant 4).
const DRAIN_BUDGET: std::time::Duration = std::time::Duration::from_secs(8);

async fn serve(config: &Config, addr: SocketAddr) -> anyhow::Result<()> {
    config.check_secrets()?;
    let (url, mock) = provider(config).await?;
    if mock.is_some() && !config.defaulted_secrets.is_empty() {
        tracing::warn!(
            defaults = ?config.defaulted_secrets,
            "embedded payments mock: using the public default test secrets (set PAYMENTS_URL, PAYMENTS_API_KEY and PAYMENTS_WEBHOOK_SECRET for a real provider)"
        );
    }
    let state = state(config, &url).await?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("binding {addr}"))?;
    if mock.is_some() {
        // The embedded provider sends its signed webhooks back to us.
        let bound = listener.local_addr().unwrap_or(addr);
        let app_url = config
            .public_url
            .clone()
            .unwrap_or_else(|| format!("http://{bound}"));
        crate::webhooks::point_provider_webhooks(&url, &app_url).await?;
    }
    // A log event, not a bare line: with LOG_FORMAT=json every line of `serve` is JSON.
    tracing::info!(url = %format!("http://{addr}"), console = %format!("http://{addr}/console"), provider = %url, "Refund desk serving");
    let stop = crate::worker::StopSignal::default();
    let worker = tokio::spawn(crate::worker::run_until_stopped(
        state.clone(),
        stop.clone(),
    ));
    let purge = tokio::spawn(purge_forever(state.clone()));
    // The peer address reaches handlers as `ConnectInfo`: logins are throttled per client.
    let app =
        crate::http::router(state.clone()).into_make_service_with_connect_info::<SocketAddr>();
    let server_stop = stop.clone();
    let mut server = tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async move { server_stop.requested().await })
            .await
    });
    tokio::select! {
        signal = stop_signal() => {
            tracing::info!(signal, "stopping: no new work is claimed; finishing the work in flight");
        }
        ended = &mut server => {
            // The server cannot end before a stop unless it failed.
            stop.request();
            let _ = tokio::time::timeout(DRAIN_BUDGET, worker).await;
            ended??;
            anyhow::bail!("the HTTP server stopped by itself");
        }
    }
    stop.request();
    purge.abort();
    drain(server, worker).await;
    // Closing the pools waits for their connections to finish and says goodbye to the
    // database, instead of leaving it to notice dropped sockets.
    state.db.close().await;
    if let Some(m) = mock {
        m.shutdown().await;
    }
    tracing::info!("stopped");
    Ok(())
}

/// Waits for the HTTP server (answering the requests it has) and the worker (finishing
/// its step, releasing its lease) to stop, within `DRAIN_BUDGET`; aborts what remains.
async fn drain(
    mut server: tokio::task::JoinHandle<std::io::Result<()>>,
    mut worker: tokio::task::JoinHandle<()>,
) {
    let both = async {
        let (served, worked) = tokio::join!(&mut server, &mut worker);
        match served {
            Ok(Err(e)) => tracing::warn!(error = %e, "the HTTP server ended with an error"),
            Err(e) => tracing::warn!(error = %e, "the HTTP server task failed"),
            Ok(Ok(())) => {}
        }
        if let Err(e) = worked {
            tracing::warn!(error = %e, "the worker task failed");
        }
    };
    if tokio::time::timeout(DRAIN_BUDGET, both).await.is_err() {
        tracing::warn!(
            budget_secs = DRAIN_BUDGET.as_secs(),
            "drain took longer than its budget; aborting the rest (a refund in flight resumes after its lease expires)"
        );
        server.abort();
        worker.abort();
    }
}

/// Resolves on Ctrl-C (SIGINT) or, on Unix, SIGTERM (what service managers and
/// `docker stop` send), naming the signal.
async fn stop_signal() -> &'static str {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut terminate) => tokio::select! {
                _ = tokio::signal::ctrl_c() => "SIGINT",
                _ = terminate.recv() => "SIGTERM",
            },
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for SIGTERM; only Ctrl-C stops serve gracefully");
                let _ = tokio::signal::ctrl_c().await;
                "SIGINT"
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
        "SIGINT"
    }
}

/// Every ten minutes, deletes expired tokens, sessions, sign-in links and old failed
/// logins (`auth::purge_expired`); any instance may run it, deleting twice is harmless.
async fn purge_forever(state: AppState) {
    let mut tick = tokio::time::interval(std::time::Duration::from_secs(600));
    loop {
        tick.tick().await;
        match auth::purge_expired(&state.db, state.clock.now_ms()).await {
            Ok(n) if n > 0 => tracing::info!(rows = n, "expired credentials purged"),
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "purging expired credentials failed"),
        }
    }
}

const DEMO_STAFF: &[(&str, StaffRole)] = &[
    ("agent@refund-desk.test", StaffRole::Agent),
    ("supervisor@refund-desk.test", StaffRole::Supervisor),
];

async fn seed(
    config: &Config,
    world_path: Option<&Path>,
    reset_passwords: bool,
) -> anyhow::Result<()> {
    let path = world_path
        .map(Path::to_path_buf)
        .unwrap_or_else(|| config.fixtures_dir.join("billing").join("demo.json"));
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let world = World::parse(&text)
        .with_context(|| format!("{} is not a valid billing world", path.display()))?;
    std::fs::create_dir_all(&config.data_dir)?;
    let db = crate::store::Db::connect(&config.database_url).await?;
    // Issue 16: a second seed must not silently rotate the passwords (and with them
    // every session) of staff who may be using them; checked before anything is loaded.
    if !reset_passwords {
        for (email, _) in DEMO_STAFF {
            if auth::staff_by_email(&db, email).await?.is_some() {
                anyhow::bail!(
                    "{email} already exists in this data directory; pass --reset-passwords to give the demo staff new passwords"
                );
            }
        }
    }
    let (url, mock) = provider(config).await?;
    crate::world::load_into_provider(&url, &text).await?;
    world.load_into(&db).await?;
    eprintln!(
        "loaded {} customers and {} orders into the app, and the charges and refunds into {url}",
        world.customers.len(),
        world.orders.len()
    );
    eprintln!("demo staff (log in at /console/login):");
    print_demo_credentials(config, &db, &world).await?;
    if let Some(m) = mock {
        m.shutdown().await;
    }
    Ok(())
}

/// New demo staff passwords and tokens, and a customer sign-in link, on stdout (one
/// line each, for scripts).
async fn print_demo_credentials(
    config: &Config,
    db: &crate::store::Db,
    world: &World,
) -> anyhow::Result<()> {
    let now = SystemClock.now_ms();
    for (email, role) in DEMO_STAFF {
        let password = auth::random_token()[..16].to_string();
        let staff = auth::upsert_staff(db, email, *role, &password, now).await?;
        let (token, _) = auth::issue_token(db, "api", "staff", &staff.id, now).await?;
        println!(
            "{:<11} {email}  password {password}  bearer {token}",
            role.as_str()
        );
    }
    if let Some(first) = world.customers.first() {
        let (token, _) = auth::issue_token(db, "api", "customer", &first.id, now).await?;
        println!("customer {} bearer {token}", first.id);
        let link = auth::issue_sign_in_link(db, &first.id, now).await?;
        println!(
            "customer {} sign-in link (once, 15 min) {}",
            first.id,
            sign_in_url(config, &link)
        );
    }
    Ok(())
}

/// Policies and index for offline work (shadow, diff): no database, no provider.
async fn offline_policies(
    config: &Config,
) -> anyhow::Result<(policy_engine::PolicySet, Arc<rag_index::PolicyIndex>)> {
    let policies = crate::policies::load_policy_set(&config.policies_dir())?;
    let index = open_index_blocking(config, policies.clone()).await?;
    Ok((policies, Arc::new(index)))
}

async fn open_index_blocking(
    config: &Config,
    policies: policy_engine::PolicySet,
) -> anyhow::Result<rag_index::PolicyIndex> {
    let dir = config.index_dir();
    tokio::task::spawn_blocking(move || crate::policies::open_index(&dir, &policies)).await?
}

/// Reads a history file; bad lines are reported with their number and skipped.
fn read_history(
    path: &Path,
) -> anyhow::Result<(
    Vec<crate::replay::HistoricalTicket>,
    Vec<crate::replay::LineError>,
)> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let (tickets, bad) = crate::replay::parse_history(&text);
    for line in &bad {
        eprintln!(
            "{}:{}: skipped: {}",
            path.display(),
            line.line,
            line.message
        );
    }
    Ok((tickets, bad))
}

/// `refund-agent eval` (SPEC §7) runs the scenario suite, which lives in the
/// `refund-evals` binary outside the production library (issue 18: cargo forbids the
/// app depending on a crate built on it). The command line is handed over unchanged —
/// both binaries parse the same `config::Settings` and `eval` flags — and the suite's
/// exit status becomes ours.
async fn forward_to_refund_evals() -> anyhow::Result<()> {
    let program = refund_evals_binary()?;
    let status = tokio::process::Command::new(&program)
        .args(std::env::args_os().skip(1))
        .status()
        .await
        .with_context(|| format!("running {}", program.display()))?;
    if !status.success() {
        anyhow::bail!("{} failed ({status})", program.display());
    }
    Ok(())
}

/// `refund-evals` beside this executable (where cargo builds both), else on `PATH`.
fn refund_evals_binary() -> anyhow::Result<PathBuf> {
    let name = format!("refund-evals{}", std::env::consts::EXE_SUFFIX);
    let exe = std::env::current_exe().context("locating refund-agent")?;
    let beside = exe.with_file_name(&name);
    if beside.is_file() {
        return Ok(beside);
    }
    std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .map(|dir| dir.join(&name))
        .find(|candidate| candidate.is_file())
        .with_context(|| {
            format!(
                "the scenario suite is the refund-evals binary, found neither beside {} nor on PATH (build it: cargo build -p refund-evals)",
                exe.display()
            )
        })
}

async fn policy(config: &Config, command: PolicyCommand) -> anyhow::Result<()> {
    let policies = crate::policies::load_policy_set(&config.policies_dir())?;
    match command {
        PolicyCommand::Check { facts } => {
            let text = std::fs::read_to_string(&facts)
                .with_context(|| format!("reading {}", facts.display()))?;
            let facts: policy_engine::Facts = serde_json::from_str(&text)
                .with_context(|| format!("{} is not valid facts JSON", facts.display()))?;
            let decision = policy_engine::decide(&facts, &policies);
            println!("{}", serde_json::to_string_pretty(&decision)?);
            Ok(())
        }
        PolicyCommand::Diff { from, to, history } => {
            let index = Arc::new(open_index_blocking(&config, policies.clone()).await?);
            let (tickets, _) = read_history(&history)?;
            let report =
                crate::replay::policy_diff(&policies, &index, &tickets, &from, &to).await?;
            println!("{}", serde_json::to_string_pretty(&report)?);
            Ok(())
        }
        PolicyCommand::Eval { queries } => {
            let path = queries.unwrap_or_else(|| {
                config
                    .fixtures_dir
                    .join("..")
                    .join("evals")
                    .join("policy_search")
                    .join("queries.jsonl")
            });
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("reading {}", path.display()))?;
            let labelled =
                rag_index::eval::load_queries(&text).map_err(|e| anyhow::anyhow!("{e}"))?;
            let dir = config.index_dir();
            let report = tokio::task::spawn_blocking(move || -> anyhow::Result<_> {
                let index = crate::policies::open_index(&dir, &policies)?;
                Ok(rag_index::eval::run(&index, &labelled))
            })
            .await??;
            for miss in &report.misses {
                eprintln!(
                    "  not first: {:?} expected {} at rank {:?}",
                    miss.query, miss.expected, miss.rank
                );
            }
            println!(
                "{}",
                serde_json::json!({ "total": report.total, "recall_at_1": report.recall_at_1,
                                    "recall_at_3": report.recall_at_3, "mrr": report.mrr })
            );
            Ok(())
        }
        PolicyCommand::Search {
            query,
            as_of,
            region,
            product,
            drafts,
            limit,
        } => {
            let mut q = rag_index::SearchQuery::new(query);
            q.as_of = as_of
                .as_deref()
                .map(policy_engine::document::parse_date)
                .transpose()?;
            q.region = region
                .as_deref()
                .map(|r| crate::world::parse_plain(&r.to_uppercase()))
                .transpose()?;
            q.product = product
                .as_deref()
                .map(crate::world::parse_plain)
                .transpose()?;
            q.include_drafts = drafts;
            q.limit = usize::from(limit);
            let dir = config.index_dir();
            let passages = tokio::task::spawn_blocking(move || -> anyhow::Result<_> {
                let index = crate::policies::open_index(&dir, &policies)?;
                index.search(&q).map_err(|e| anyhow::anyhow!("{e}"))
            })
            .await??;
            for (rank, p) in passages.iter().enumerate() {
                let snippet: String = p
                    .text
                    .chars()
                    .take(160)
                    .collect::<String>()
                    .replace('\n', " ");
                println!(
                    "{}. {}  {:.3}  {} — {}",
                    rank + 1,
                    p.citation(),
                    p.score,
                    p.title,
                    snippet
                );
            }
            if passages.is_empty() {
                eprintln!("no passages");
            }
            Ok(())
        }
    }
}
