//! The command line's arguments: every command, subcommand and flag as clap parses them
//! (docs/spec/interfaces.md). Definitions only; what each command does is in its own module.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use desk::auth::StaffRole;

#[derive(Parser)]
#[command(
    name = "refund-agent",
    version,
    about = "Refund desk: an AI refund agent a support team can trust with money"
)]
pub(super) struct Cli {
    /// Every setting, each a flag with an environment fallback (`settings::Settings`).
    #[command(flatten)]
    pub(super) settings: settings::Settings,
    #[command(subcommand)]
    pub(super) command: Command,
}

/// Where `serve` and `demo` listen.
#[derive(Args)]
pub(super) struct Listen {
    /// The address to listen on.
    #[arg(
        long,
        env = "BIND_ADDR",
        value_name = "BIND_ADDR",
        default_value = "127.0.0.1:8080"
    )]
    pub(super) addr: SocketAddr,
}

#[derive(Subcommand)]
pub(super) enum Command {
    /// Run the web app (and the embedded payments mock unless PAYMENTS_URL is set).
    Serve {
        #[command(flatten)]
        listen: Listen,
    },
    /// `serve` with the demo world and staff (seeded on first run) and made-up customers
    /// writing, answering, withdrawing and asking for a person, so the desk is never empty.
    Demo {
        #[command(flatten)]
        listen: Listen,
        /// Customer actions a minute (0.1 to 600).
        #[arg(long, default_value_t = 4.0, value_parser = demo_rate)]
        rate: f64,
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
        /// Load only the app's side (customers, orders, demo staff): nothing is sent to
        /// the payment provider. Without it, a provider that is not the payments mock is
        /// refused before anything is written.
        #[arg(long)]
        app_only: bool,
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
        /// The historical tickets, as JSON lines (docs/spec/interfaces.md).
        history: PathBuf,
        /// Where `report.json` and `report.html` are written.
        #[arg(long, default_value = "./shadow-report")]
        out: PathBuf,
    },
    /// Compare internal refund intents with the provider's refunds; resolve unknowns.
    Reconcile,
    /// Run the scenario eval suite (`evals/scenarios/`): forwarded, arguments and all, to
    /// the `refund-evals` binary (`refund-evals eval --help` lists its flags), which lives
    /// outside the production library.
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
    /// Service tokens (a shop backend's integration token, the identity provider's SCIM token).
    Token {
        #[command(subcommand)]
        command: TokenCommand,
    },
    /// Customer access.
    Customer {
        #[command(subcommand)]
        command: CustomerCommand,
    },
    /// The read-only investigation tools over MCP on stdio, for the staff member whose
    /// bearer token is in REFUND_DESK_TOKEN.
    Mcp,
    /// Bring in the shop's own data: customers, orders (CSV or JSON lines; upsert by id;
    /// any bad row and nothing is imported).
    Import {
        #[command(subcommand)]
        command: ImportCommand,
    },
    /// Provider charges that name no order of ours: list them (after reading the
    /// provider's with --sync) and link one to an order.
    Charges {
        #[command(subcommand)]
        command: ChargesCommand,
    },
    /// The agent's rollout per scope (shadow, canary, assist) and its guards.
    Rollout {
        #[command(subcommand)]
        command: RolloutCommand,
    },
    /// A consistent copy of the database while `serve` runs (SQLite: VACUUM INTO;
    /// PostgreSQL: pg_dump --format=custom).
    Backup {
        /// The backup file to write (never overwritten).
        file: PathBuf,
    },
    /// Bring a backup back into an empty data directory (or empty PostgreSQL database);
    /// no refund is sent until every one not final in the backup is checked at the
    /// provider.
    Restore {
        /// The backup file `backup` wrote.
        file: PathBuf,
    },
}

#[derive(Subcommand)]
pub(super) enum ImportCommand {
    /// Customers: id, name, email, region (CN|US|EU|JP), provider_customer_id
    /// (optional: without it a customer is linked by email through the provider's
    /// customer list).
    Customers {
        /// A CSV file with a header row, or JSON lines.
        file: PathBuf,
        /// The file's format [default: by extension, else by its first character].
        #[arg(long, value_parser = row_format())]
        format: Option<shop_import::rows::Format>,
        /// Ask the provider nothing: given provider customers are taken as written and
        /// the others stay unlinked.
        #[arg(long)]
        offline: bool,
    },
    /// Orders: id, customer_id, product (annual_plan|monthly_plan|addon), amount (a
    /// decimal string in the currency's scale), currency (CNY|USD|EUR|JPY), created_at
    /// (RFC 3339). Their customers must be imported first.
    Orders {
        /// A CSV file with a header row, or JSON lines.
        file: PathBuf,
        /// The file's format [default: by extension, else by its first character].
        #[arg(long, value_parser = row_format())]
        format: Option<shop_import::rows::Format>,
    },
    /// Past helpdesk tickets (Zendesk, or CSV) as a history file for `shadow`: each
    /// requester matched to a customer by email, the billing world rebuilt as of the
    /// ticket, the team's outcome inferred from refunds and tags, with its evidence.
    History(super::history::HistoryArgs),
}

#[derive(Subcommand)]
pub(super) enum ChargesCommand {
    /// The provider charges naming no order of ours (under PAYMENTS_ORDER_KEY) and not
    /// linked by staff, newest first, as JSON.
    Unlinked {
        /// First read every charge at the provider and refresh the list.
        #[arg(long)]
        sync: bool,
        /// How many to print, 1 to 500.
        #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(i64).range(1..=500))]
        limit: i64,
    },
    /// Link a provider charge to one of our orders (audited as the operator `cli`).
    Link {
        /// The provider's charge id (`ch_…`).
        charge: String,
        /// Our order id.
        order: String,
    },
}

#[derive(Subcommand)]
pub(super) enum RolloutCommand {
    /// Print each scope's mode and each guard's value against its threshold, as JSON.
    Status,
    /// Set a scope's mode (audited as the operator `cli`).
    Set {
        /// all, region:CN|US|EU|JP, product:annual_plan|monthly_plan|addon, or
        /// request:duplicate_charge|overcharge|cancellation|authorization_hold|unclear.
        scope: String,
        /// shadow, canary or assist.
        mode: String,
        /// Canary only: the share of new cases that get the agent's proposal (1-99).
        #[arg(long)]
        percent: Option<i64>,
        /// Why, for the audit log.
        #[arg(long, default_value = "")]
        reason: String,
    },
}

#[derive(Subcommand)]
pub(super) enum PolicyCommand {
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
        /// The historical tickets, as JSON lines (docs/spec/interfaces.md).
        history: PathBuf,
    },
    /// Check policy versions (RP-xxx-vN.md, the .rules.toml beside each is read too):
    /// prints "ok", or each problem with its file, field and line and exits 1.
    Validate {
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Save FILE (and the .rules.toml beside it) as the draft of DOC; prints its problems.
    Draft {
        /// The policy document, e.g. RP-001.
        doc: String,
        #[arg(long)]
        from: PathBuf,
        /// The staff member saving (admin or policy_author).
        #[arg(long = "as", value_name = "EMAIL")]
        author: String,
        /// The draft version this text was edited from [default: the one saved now].
        #[arg(long)]
        expected_version: Option<i64>,
    },
    /// What-if: the saved draft of DOC against a history file or the live cases decided
    /// in the last N days; the result is kept with the draft and printed as JSON.
    #[command(group(clap::ArgGroup::new("against").required(true).args(["history", "live_days"])))]
    Whatif {
        /// The policy document, e.g. RP-001.
        doc: String,
        /// Historical tickets, as JSON lines (docs/spec/interfaces.md).
        #[arg(long)]
        history: Option<PathBuf>,
        /// The cases decided in the last N days, on the facts each was decided on.
        #[arg(long, value_name = "N")]
        live_days: Option<u32>,
        /// The staff member running it (admin or policy_author).
        #[arg(long = "as", value_name = "EMAIL")]
        author: String,
    },
    /// Publish the saved draft of DOC, in force from --at (YYYY-MM-DD, default: the draft's own date when later than today, else today).
    Publish {
        doc: String,
        #[arg(long)]
        at: Option<String>,
        /// The staff member publishing (admin or policy_author).
        #[arg(long = "as", value_name = "EMAIL")]
        publisher: String,
    },
    /// Write every stored policy version to DIR as RP-xxx-vN.md and .rules.toml files.
    Export { dir: PathBuf },
    /// Score policy search on labelled queries: recall@1, recall@3, MRR.
    Eval {
        /// JSON lines of {query, as_of, region?, product?, expected}.
        #[arg(long)]
        queries: Option<PathBuf>,
    },
}

#[derive(Subcommand)]
pub(super) enum StaffCommand {
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
        /// What the token is for (shown when tokens are listed).
        #[arg(long, default_value = "cli")]
        name: String,
        /// Days it works, 1 to 366.
        #[arg(long, default_value_t = 30)]
        expires_days: i64,
    },
    /// List a staff member's sessions and tokens (never the secrets), as JSON.
    Tokens {
        /// The staff member's email.
        #[arg(long)]
        email: String,
    },
    /// Revoke a session or token by its id (as `staff tokens` lists them).
    Revoke {
        /// The token's id (`tok_…`).
        token_id: String,
    },
    /// Invite someone: prints a single-use link, valid 7 days.
    Invite {
        /// Their email.
        #[arg(long)]
        email: String,
        /// What they may do.
        #[arg(long, value_enum)]
        role: RoleArg,
    },
    /// Deactivate a staff member: every session and token of theirs stops working at once.
    Deactivate {
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
pub(super) enum TokenCommand {
    /// Print a new service token: `integration` for a shop backend (customers and orders),
    /// `scim` for the identity provider (staff provisioning).
    Create {
        #[arg(long, value_enum)]
        kind: ServiceKindArg,
        /// What it is for (shown when tokens are listed).
        #[arg(long)]
        name: String,
        /// Days it works, 1 to 366.
        #[arg(long, default_value_t = 90)]
        expires_days: i64,
    },
    /// List the service tokens in force (never the secrets), as JSON.
    List,
    /// Revoke a service token by its id.
    Revoke { token_id: String },
}

/// Service token kinds as `token create --kind` accepts them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum ServiceKindArg {
    Integration,
    Scim,
}

impl From<ServiceKindArg> for desk::auth::ServiceKind {
    fn from(kind: ServiceKindArg) -> Self {
        match kind {
            ServiceKindArg::Integration => desk::auth::ServiceKind::Integration,
            ServiceKindArg::Scim => desk::auth::ServiceKind::Scim,
        }
    }
}

#[derive(Subcommand)]
pub(super) enum CustomerCommand {
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
    /// Write everything held about a customer as one JSON document (docs/spec/data.md).
    Export {
        /// The customer's id (e.g. C-100).
        customer_id: String,
        /// Where to write it [default: stdout].
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Erase a customer's personal data; money records stay under a pseudonym (audited,
    /// harmless twice; refused while a refund of theirs is being executed).
    Erase {
        /// The customer's id (e.g. C-100).
        customer_id: String,
    },
}

/// Staff roles as `staff add --role` accepts them (clap lists them in `--help`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum RoleArg {
    /// Approves refunds within the agent limit of RP-004.
    Agent,
    /// Approves within the supervisor limit of RP-004; takes cases over.
    Supervisor,
    /// Everything a supervisor does, and manages staff.
    Admin,
    /// Drafts and publishes policies; approves no refund.
    #[value(name = "policy_author")]
    PolicyAuthor,
}

impl From<RoleArg> for StaffRole {
    fn from(role: RoleArg) -> StaffRole {
        match role {
            RoleArg::Agent => StaffRole::Agent,
            RoleArg::Supervisor => StaffRole::Supervisor,
            RoleArg::Admin => StaffRole::Admin,
            RoleArg::PolicyAuthor => StaffRole::PolicyAuthor,
        }
    }
}

/// `--rate`: customer actions a minute, 0.1 to 600.
fn demo_rate(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(rate) if (0.1..=600.0).contains(&rate) => Ok(rate),
        _ => Err(format!(
            "'{text}' is not a rate from 0.1 to 600 actions a minute"
        )),
    }
}

/// `--format` of `import customers|orders`: one of the names the rows module reads, listed
/// in `--help` and in clap's message for any other.
fn row_format() -> impl clap::builder::TypedValueParser<Value = shop_import::rows::Format> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(shop_import::rows::Format::NAMES)
        .try_map(|name| name.parse::<shop_import::rows::Format>())
}
