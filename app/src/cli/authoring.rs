//! `policy draft|publish|export`: the policy author's work from the command
//! line, through the same `authoring` functions as the API and the console, on the
//! database the app runs on. `--as EMAIL` names the staff member; their role decides.

use std::path::Path;

use anyhow::Context;

use super::setup::{provider, state};
use ::authoring::drafts;
use desk::clock::SystemClock;
use desk::config::Config;
use desk::policies::{self, versions};
use store::Db;

async fn staff(db: &Db, email: &str) -> anyhow::Result<desk::auth::Staff> {
    desk::auth::staff_by_email(db, email)
        .await?
        .with_context(|| format!("no staff member {email}"))
}

/// `policy draft DOC --from FILE --as EMAIL`: saves FILE (and the `.rules.toml` beside
/// it) as the draft of DOC, over the version `--expected-version` names (default: the
/// one saved now), and prints its problems.
pub(super) async fn draft(
    config: &Config,
    doc: &str,
    from: &Path,
    email: &str,
    expected: Option<i64>,
) -> anyhow::Result<()> {
    let db = Db::connect(&config.database_url).await?;
    versions::seed_if_empty(&db, &config.policies_dir()).await?;
    let staff = staff(&db, email).await?;
    let markdown =
        std::fs::read_to_string(from).with_context(|| format!("reading {}", from.display()))?;
    let rules_path = from.with_extension("rules.toml");
    let rules = match rules_path.exists() {
        true => Some(std::fs::read_to_string(&rules_path)?),
        false => None,
    };
    let expected = match expected {
        Some(v) => v,
        None => drafts::load_draft(&db, &SystemClock, doc).await?.version,
    };
    let text = drafts::DraftText { markdown, rules };
    match drafts::save_draft(&db, &SystemClock, &staff, doc, expected, text).await? {
        drafts::Saved::Saved(draft) => {
            for p in &draft.problems {
                println!(
                    "{}:{}: {}: {}",
                    p.file,
                    p.line.unwrap_or(0),
                    p.field,
                    p.message
                );
            }
            eprintln!(
                "draft {doc}@{} saved as version {}",
                draft.policy_version, draft.version
            );
            Ok(())
        }
        drafts::Saved::Conflict(conflict) => {
            print!("{}", conflict.diff);
            anyhow::bail!(
                "the draft was saved meanwhile (now version {}): nothing written",
                conflict.current.version
            )
        }
    }
}

/// `policy whatif DOC (--history FILE | --live-days N) --as EMAIL`: the saved draft
/// checked as the console checks it, the result kept with the draft and printed.
pub(super) async fn whatif(
    config: &Config,
    doc: &str,
    history: Option<&Path>,
    live_days: Option<u32>,
    email: &str,
) -> anyhow::Result<()> {
    let db = Db::connect(&config.database_url).await?;
    versions::seed_if_empty(&db, &config.policies_dir()).await?;
    let staff = staff(&db, email).await?;
    let whatif = match (history, live_days) {
        (_, Some(days)) => {
            ::authoring::whatif::run_against_live(&db, &SystemClock, &staff, doc, days).await?
        }
        (Some(path), None) => {
            let (tickets, _) = super::offline::read_history(path)?;
            let sources = versions::sources(&db).await?;
            let policies = policies::Policies::from_sources(sources)
                .map_err(|e| anyhow::anyhow!("stored policies: {e}"))?;
            let index = super::offline::open_index_blocking(config, (*policies.set()).clone());
            let index = std::sync::Arc::new(index.await?);
            let name = path.display().to_string();
            let against = (name.as_str(), tickets.as_slice());
            ::authoring::whatif::run_against_history(
                &db,
                &SystemClock,
                &index,
                &staff,
                doc,
                against,
            )
            .await?
        }
        (None, None) => anyhow::bail!("give --history FILE or --live-days N"),
    };
    println!("{}", serde_json::to_string_pretty(&whatif)?);
    Ok(())
}

/// `policy publish DOC [--at DATE] --as EMAIL`: publishes the saved draft.
pub(super) async fn publish(
    config: &Config,
    doc: &str,
    at: Option<&str>,
    email: &str,
) -> anyhow::Result<()> {
    let (url, mock) = provider(config).await?;
    let state = state(config, &url).await?;
    let staff = staff(&state.db, email).await?;
    let at = ::authoring::publish::parse_effective(at)?;
    let seen = drafts::load_draft(&state.db, state.clock.as_ref(), doc)
        .await?
        .version;
    // The CLI publishes what `policy whatif` last checked and printed, on the version
    // saved now: a draft saved since its what-if is refused (`whatif_required`).
    let reviewed = ::authoring::publish::Reviewed {
        draft_version: seen,
        whatif_version: None,
    };
    let published =
        ::authoring::publish::publish(state.publisher(), &staff, doc, reviewed, at).await?;
    println!("{}", serde_json::to_string_pretty(&published)?);
    if let Some(m) = mock {
        m.shutdown().await;
    }
    Ok(())
}

/// `policy export DIR`: every stored version as files, as `fixtures/policies/` holds them.
pub(super) async fn export(config: &Config, dir: &Path) -> anyhow::Result<()> {
    let db = Db::connect(&config.database_url).await?;
    versions::seed_if_empty(&db, &config.policies_dir()).await?;
    let sources = policies::supersede(versions::sources(&db).await?);
    let written = versions::export(&sources, dir)?;
    eprintln!("{written} policy versions written to {}", dir.display());
    Ok(())
}
