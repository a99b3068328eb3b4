//! The commands that manage who may sign in: staff (`staff add|token|tokens|revoke|
//! invite|deactivate|unlock`), service tokens (`token create|list|revoke`) and customers
//! (`customer token|link`), and the address a link is printed as.

use std::io::Read;

use anyhow::Context;

use super::args::{CustomerCommand, StaffCommand, TokenCommand};
use desk::auth;
use desk::clock::{Clock, SystemClock};
use desk::config::Config;

/// `staff add|token|unlock`.
pub(super) async fn staff(config: &Config, command: StaffCommand) -> anyhow::Result<()> {
    let db = store::Db::connect(&config.database_url).await?;
    let now = SystemClock.now_ms();
    match command {
        StaffCommand::Add {
            email,
            role,
            password_stdin,
        } => {
            if !password_stdin {
                anyhow::bail!("pass --password-stdin and write the password on standard input");
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
        StaffCommand::Token {
            email,
            name,
            expires_days,
        } => {
            let staff = known(&db, &email).await?;
            let (token, _) =
                auth::accounts::issue_staff_token(&db, "cli", &staff, &name, expires_days, now)
                    .await?;
            println!("{token}");
        }
        StaffCommand::Tokens { email } => {
            let staff = known(&db, &email).await?;
            let held = auth::accounts::credentials_of(&db, &staff.id, now).await?;
            println!("{}", serde_json::to_string_pretty(&held)?);
        }
        StaffCommand::Revoke { token_id } => {
            auth::accounts::revoke(&db, "cli", &token_id, now).await?;
            eprintln!("{token_id} revoked");
        }
        StaffCommand::Invite { email, role } => {
            let role = role.into();
            let token = auth::accounts::invite(&db, "cli", &email, role, now).await?;
            let link = link_url(config, "/console/invite?token=", &token);
            auth::accounts::send_invitation(&db, &email, role, &link, now).await?;
            eprintln!(
                "invitation mailed to {} (sent once SMTP_URL is set)",
                email.trim()
            );
            println!("{link}");
        }
        StaffCommand::Deactivate { email } => {
            let staff = known(&db, &email).await?;
            auth::accounts::deactivate(&db, "cli", &staff.id, now).await?;
            eprintln!(
                "{} deactivated: every session and token of theirs is gone",
                staff.email
            );
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

async fn known(db: &store::Db, email: &str) -> anyhow::Result<auth::Staff> {
    auth::staff_by_email(db, email)
        .await?
        .context("no staff member with that email")
}

/// `token create|list|revoke`: service tokens (audited with the actor `cli`).
pub(super) async fn token(config: &Config, command: TokenCommand) -> anyhow::Result<()> {
    let db = store::Db::connect(&config.database_url).await?;
    let now = SystemClock.now_ms();
    match command {
        TokenCommand::Create {
            kind,
            name,
            expires_days,
        } => {
            let (token, _) = auth::accounts::issue_service_token(
                &db,
                "cli",
                kind.into(),
                &name,
                expires_days,
                now,
            )
            .await?;
            println!("{token}");
        }
        TokenCommand::List => {
            let tokens = auth::accounts::service_tokens(&db, now).await?;
            println!("{}", serde_json::to_string_pretty(&tokens)?);
        }
        TokenCommand::Revoke { token_id } => {
            auth::accounts::revoke(&db, "cli", &token_id, now).await?;
            eprintln!("{token_id} revoked");
        }
    }
    Ok(())
}

/// `customer token` (an API token) and `customer link` (a single-use sign-in link):
/// either alone on stdout.
pub(super) async fn customer(config: &Config, command: CustomerCommand) -> anyhow::Result<()> {
    let db = store::Db::connect(&config.database_url).await?;
    let now = SystemClock.now_ms();
    let missing = || anyhow::anyhow!("no such customer (run `refund-agent seed` first)");
    match command {
        CustomerCommand::Token { customer_id } => {
            if !desk::onboarding::records::customer_exists(&db, &customer_id).await? {
                return Err(missing());
            }
            let (token, _) = auth::issue_token(&db, "api", "customer", &customer_id, now).await?;
            println!("{token}");
        }
        CustomerCommand::Link { customer_id } => {
            let token = match auth::issue_sign_in_link(&db, &customer_id, now).await {
                Err(desk::error::DomainError::NotFound(_)) => return Err(missing()),
                other => other?,
            };
            println!("{}", sign_in_url(config, &token));
        }
        CustomerCommand::Export { customer_id, out } => {
            export_customer(&db, &customer_id, out, now).await?;
        }
        CustomerCommand::Erase { customer_id } => {
            let erased = customer_data::erase::erase(&db, "cli", &customer_id, now).await?;
            println!("{}", serde_json::to_string_pretty(&erased)?);
        }
    }
    db.close().await;
    Ok(())
}

/// `customer export ID [--out FILE]`: streamed to the file or stdout, counts on stderr.
async fn export_customer(
    db: &store::Db,
    customer_id: &str,
    out: Option<std::path::PathBuf>,
    now: i64,
) -> anyhow::Result<()> {
    use customer_data::export::export;
    let done = match out {
        Some(path) => {
            let file = tokio::fs::File::create(&path).await?;
            let mut file = tokio::io::BufWriter::new(file);
            export(db, customer_id, now, &mut file).await?
        }
        None => {
            let mut stdout = tokio::io::BufWriter::new(tokio::io::stdout());
            export(db, customer_id, now, &mut stdout).await?
        }
    };
    eprintln!("exported {} rows, {} bytes", done.rows, done.bytes);
    Ok(())
}

/// The address a customer opens to sign in: `PUBLIC_URL` (else the default `serve`
/// address) + `/sign-in?link=…`.
pub fn sign_in_url(config: &Config, token: &str) -> String {
    link_url(config, "/sign-in?link=", token)
}

/// The file in `DATA_DIR` where `serve` writes the address it listens on, so a link
/// printed by another command (`customer link`, `seed`) points where the desk is served
/// even when `serve --addr` differs from the default.
const SERVED_AT_FILE: &str = "served-at";

/// `PUBLIC_URL`, else the address `serve` listens on (`BIND_ADDR`, else the one the last
/// `serve` on this data directory recorded, else the default), + `path` + the token.
fn link_url(config: &Config, path: &str, token: &str) -> String {
    let base = match config.public_url.as_deref() {
        Some(url) => url.trim_end_matches('/').to_string(),
        None => {
            let recorded = std::fs::read_to_string(config.data_dir.join(SERVED_AT_FILE)).ok();
            let bind = std::env::var("BIND_ADDR").ok().or(recorded);
            serve_url(bind.as_deref())
        }
    };
    format!("{base}{path}{token}")
}

/// Records where `serve` listens (`bound`: the address it actually bound, port 0
/// resolved) for the links other commands print; a failure to write is only logged.
pub fn record_served_address(config: &Config, bound: std::net::SocketAddr) {
    let file = config.data_dir.join(SERVED_AT_FILE);
    if let Err(e) = std::fs::write(&file, bound.to_string()) {
        tracing::warn!(file = %file.display(), error = %e, "could not record the served address");
    }
}

/// Where a browser on this machine reaches `serve` at `bind` (an unspecified address
/// such as `0.0.0.0` is reached at the loopback address).
pub fn serve_url(bind: Option<&str>) -> String {
    let addr = bind
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .and_then(|a| a.parse::<std::net::SocketAddr>().ok());
    match addr {
        None => "http://127.0.0.1:8080".to_string(),
        Some(addr) if addr.ip().is_unspecified() => format!("http://127.0.0.1:{}", addr.port()),
        Some(addr) => format!("http://{addr}"),
    }
}

#[cfg(test)]
mod tests {
    use super::serve_url;

    #[test]
    fn links_name_the_address_serve_listens_on() {
        assert_eq!(serve_url(None), "http://127.0.0.1:8080");
        assert_eq!(serve_url(Some("127.0.0.1:9090")), "http://127.0.0.1:9090");
        assert_eq!(serve_url(Some("0.0.0.0:8443")), "http://127.0.0.1:8443");
        assert_eq!(serve_url(Some("[::1]:8081")), "http://[::1]:8081");
        assert_eq!(serve_url(Some("not an address")), "http://127.0.0.1:8080");
    }
}
