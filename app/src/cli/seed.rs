//! `seed`: a billing world loaded into the app and the provider, and demo staff with new
//! passwords and tokens printed for scripts. A provider that is not the payments mock
//! is refused before anything is written; `--app-only` loads only the app.

use std::path::Path;

use anyhow::Context;

use super::accounts::sign_in_url;
use super::setup::provider;
use desk::auth::{self, StaffRole};
use desk::clock::{Clock, SystemClock};
use desk::config::Config;
use desk::world::World;

const DEMO_STAFF: &[(&str, StaffRole)] = &[
    ("agent@refund-desk.test", StaffRole::Agent),
    ("supervisor@refund-desk.test", StaffRole::Supervisor),
    // A newcomer sees rollout, staff and policy drafting too.
    ("admin@refund-desk.test", StaffRole::Admin),
];

pub(super) async fn seed(
    config: &Config,
    world_path: Option<&Path>,
    reset_passwords: bool,
    app_only: bool,
) -> anyhow::Result<()> {
    let path = world_path
        .map(Path::to_path_buf)
        .unwrap_or_else(|| config.fixtures_dir.join("billing").join("demo.json"));
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let world = World::parse(&text)
        .with_context(|| format!("{} is not a valid billing world", path.display()))?;
    // A real provider is refused before the data directory, the database or
    // the provider is touched; the embedded mock starts only when nothing is configured.
    let provider = if app_only {
        None
    } else {
        if let Some(url) = &config.payments_url {
            desk::world::ensure_mock(url).await?;
        }
        Some(provider(config).await?)
    };
    std::fs::create_dir_all(&config.data_dir)?;
    let db = store::Db::connect(&config.database_url).await?;
    // A second seed must not silently rotate the passwords (and with them
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
    let loaded = match &provider {
        Some((url, _)) => {
            desk::world::load_into_provider(url, &text).await?;
            format!(", and the charges and refunds into {url}")
        }
        None => " (--app-only: nothing sent to the payment provider)".to_string(),
    };
    world.load_into(&db).await?;
    eprintln!(
        "loaded {} customers and {} orders into the app{loaded}",
        world.customers.len(),
        world.orders.len()
    );
    eprintln!("demo staff (log in at /console/login):");
    print_demo_credentials(config, &db, &world).await?;
    if let Some((_, Some(m))) = provider {
        m.shutdown().await;
    }
    Ok(())
}

/// `demo`'s first run seeds the demo world and staff as `seed` does; a later run on the
/// same data directory keeps them (and their passwords) as they are.
pub(super) async fn seed_once(config: &Config) -> anyhow::Result<()> {
    std::fs::create_dir_all(&config.data_dir)?;
    let db = store::Db::connect(&config.database_url).await?;
    let seeded = auth::staff_by_email(&db, DEMO_STAFF[0].0).await?.is_some();
    db.close().await;
    match seeded {
        true => {
            eprintln!("demo staff exist already: their passwords are unchanged (`seed --reset-passwords` prints new ones)");
            Ok(())
        }
        false => seed(config, None, false, false).await,
    }
}

/// New demo staff passwords and tokens, and a customer sign-in link, on stdout (one
/// line each, for scripts).
async fn print_demo_credentials(
    config: &Config,
    db: &store::Db,
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
