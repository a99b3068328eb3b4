//! The load test's world and people, made through the `refund-agent` CLI as an operator
//! would: a generated billing world (one customer charged twice for one plan per ticket)
//! written as a billing-world file (docs/spec/interfaces.md) and loaded with `seed
//! --world`, a supervisor from `staff add` / `staff token`, customer tokens from
//! `customer token`.
//!
//! What it does not do: start anything that stays running (`processes`).

use std::path::Path;
use std::process::Stdio;
use std::time::Instant;

use anyhow::{bail, Context};
use futures_util::future::join_all;
use serde_json::{json, Value};
use tokio::process::Command;

/// Who the load test acts as.
pub struct Seeded {
    pub staff_token: String,
    pub customer_tokens: Vec<String>,
}

/// Seeds `tickets` customers into the app's database and the mock (the `env` names
/// both), with a supervisor; `dir` holds the world file and the seeding data directory.
pub async fn seed(
    bin: &Path,
    env: &[(&str, &str)],
    dir: &Path,
    tickets: usize,
    started: Instant,
) -> anyhow::Result<Seeded> {
    let world_path = dir.join("world.json");
    std::fs::write(&world_path, world(tickets).to_string())?;
    let seed_dir = dir.join("seed");
    let seed_dir = seed_dir.to_str().context("a UTF-8 temp path")?;
    let world_arg = world_path.to_str().context("a UTF-8 temp path")?;
    let data_dir = ["--data-dir", seed_dir];
    cli(
        bin,
        env,
        &[&data_dir[..], &["seed", "--world", world_arg]].concat(),
        None,
    )
    .await?;
    let email = "loadtest-supervisor@refund-desk.test";
    let add = [
        "staff",
        "add",
        "--email",
        email,
        "--role",
        "supervisor",
        "--password-stdin",
    ];
    let password = "load test password, not secret\n";
    cli(bin, env, &[&data_dir[..], &add].concat(), Some(password)).await?;
    let token = ["staff", "token", "--email", email];
    let staff_token = cli(bin, env, &[&data_dir[..], &token].concat(), None).await?;
    eprintln!(
        "seeded {tickets} customers in {:.1}s; issuing customer tokens…",
        started.elapsed().as_secs_f64()
    );
    let customer_tokens = customer_tokens(bin, env, seed_dir, tickets).await?;
    Ok(Seeded {
        staff_token,
        customer_tokens,
    })
}

/// Customer tokens, from the CLI, 8 at a time.
async fn customer_tokens(
    bin: &Path,
    env: &[(&str, &str)],
    seed_dir: &str,
    tickets: usize,
) -> anyhow::Result<Vec<String>> {
    let customers: Vec<String> = (0..tickets).map(|i| format!("L-{i:05}")).collect();
    let mut tokens = Vec::with_capacity(customers.len());
    for chunk in customers.chunks(8) {
        let calls = chunk.iter().map(|c| {
            let args = ["--data-dir", seed_dir, "customer", "token", c];
            async move { cli(bin, env, &args, None).await }
        });
        for token in join_all(calls).await {
            tokens.push(token?);
        }
    }
    Ok(tokens)
}

/// The world: customer i has one annual plan charged twice (the duplicate-charge case),
/// three days ago, in one of the four regions.
fn world(n: usize) -> Value {
    let plans = [
        ("CN", "CNY", "198.00"),
        ("US", "USD", "120.00"),
        ("EU", "EUR", "99.00"),
        ("JP", "JPY", "12000"),
    ];
    let day = |offset_secs: i64| {
        (time::OffsetDateTime::now_utc() - time::Duration::days(3)
            + time::Duration::seconds(offset_secs))
        .replace_nanosecond(0)
        .expect("zero nanoseconds is valid")
        .format(&time::format_description::well_known::Rfc3339)
        .expect("a date formats as RFC 3339")
    };
    let (mut customers, mut orders, mut charges) = (vec![], vec![], vec![]);
    for i in 0..n {
        let (region, currency, amount) = plans[i % plans.len()];
        let customer = format!("L-{i:05}");
        let order = format!("O-L{i:05}");
        customers.push(json!({"id": customer, "name": format!("Load Customer {i}"),
            "email": format!("load{i}@example.test"), "region": region}));
        orders.push(
            json!({"id": order, "customer_id": customer, "product": "annual_plan",
            "amount": amount, "currency": currency, "created_at": day(0)}),
        );
        for (suffix, at) in [("a", 5), ("b", 70)] {
            charges.push(
                json!({"id": format!("ch_l{i:05}{suffix}"), "order_id": order,
                "customer_id": customer, "amount": amount, "currency": currency,
                "captured": true, "status": "succeeded", "disputed": false, "created_at": day(at),
                "payment_method": "pm_card_visa_4242", "amount_refunded": "0.00"}),
            );
        }
    }
    json!({"customers": customers, "orders": orders, "charges": charges, "refunds": []})
}

/// Runs a `refund-agent` command to completion; returns its stdout (tokens print alone).
async fn cli(
    bin: &Path,
    env: &[(&str, &str)],
    args: &[&str],
    stdin: Option<&str>,
) -> anyhow::Result<String> {
    let mut command = Command::new(bin);
    command
        .args(args)
        .envs(env.iter().copied())
        .env("RUST_LOG", "warn")
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = command
        .spawn()
        .with_context(|| format!("running {}", bin.display()))?;
    if let Some(text) = stdin {
        use tokio::io::AsyncWriteExt;
        let mut pipe = child.stdin.take().context("stdin is piped")?;
        pipe.write_all(text.as_bytes()).await?;
    }
    let out = child.wait_with_output().await?;
    if !out.status.success() {
        bail!(
            "refund-agent {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8(out.stdout)?.trim().to_string())
}
