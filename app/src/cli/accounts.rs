//! The commands that manage who may sign in: staff (`staff add|token|unlock`) and
//! customers (`customer token|link`), and the sign-in address a link is printed as.

use std::io::Read;

use anyhow::Context;

use super::args::{CustomerCommand, StaffCommand};
use crate::auth;
use crate::clock::{Clock, SystemClock};
use crate::config::Config;

/// `staff add|token|unlock`.
pub(super) async fn staff(config: &Config, command: StaffCommand) -> anyhow::Result<()> {
    let db = crate::store::Db::connect(&config.database_url).await?;
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

/// `customer token` (an API token) and `customer link` (a single-use sign-in link):
/// either alone on stdout.
pub(super) async fn customer(config: &Config, command: CustomerCommand) -> anyhow::Result<()> {
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
                Err(crate::error::DomainError::NotFound(_)) => return Err(missing()),
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
