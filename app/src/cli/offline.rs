//! The offline commands: the policy index rebuilt, and the history replayed in shadow
//! mode; `policy_set`, where every offline command reads its policies. No provider, and
//! the database only read for its policies.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use policy_engine::{PolicySet, PolicySource};

use desk::agent::investigator::Investigator;
use desk::config::Config;
use terminal::Progress;

/// `index`: rebuilds the policy index from the policies (`policy_set`).
pub(super) async fn rebuild_index(config: &Config) -> anyhow::Result<()> {
    let policies = policy_set(config).await?;
    let dir = config.index_dir();
    let bar = Progress::bar("index", "sections");
    let index = tokio::task::spawn_blocking(move || -> anyhow::Result<_> {
        let rebuilt = open_and_rebuild(&dir, &policies, |done, total| bar.set(done, total));
        // Cleared on failure too, so the error starts on a clean line.
        bar.finish();
        rebuilt
    })
    .await??;
    eprintln!(
        "policy index rebuilt: {} sections, policy hash {}",
        index.section_count(),
        index.policy_hash()
    );
    Ok(())
}

/// Opens the index under `dir` and rebuilds it, `progress(done, total)` per section.
fn open_and_rebuild(
    dir: &Path,
    policies: &PolicySet,
    progress: impl FnMut(usize, usize),
) -> anyhow::Result<rag_index::PolicyIndex> {
    let index = desk::policies::open_index(dir, policies)?;
    index
        .rebuild_with_progress(policies.documents(), progress)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(index)
}

/// `shadow`: replays the history with the built-in investigator and writes the report.
pub(super) async fn shadow(config: &Config, history: PathBuf, out: PathBuf) -> anyhow::Result<()> {
    let (policies, index) = offline_policies(config).await?;
    let (tickets, bad_lines) = read_history(&history)?;
    let bar = Progress::bar("shadow", "tickets");
    let report = backtest::shadow::run(
        &Investigator,
        &policies,
        &index,
        &tickets,
        bad_lines,
        |done, total| bar.set(done, total),
    )
    .await;
    bar.finish();
    crate::shadow::write(&report, &out)?;
    println!(
        "{}",
        serde_json::json!({ "total": report.total, "outcome_agreement": report.outcome_agreement,
                            "exact_agreement": report.exact_agreement, "tickets_per_second": report.tickets_per_second,
                            "report": out.join("report.json"), "html": out.join("report.html") })
    );
    Ok(())
}

/// Policies and index for offline work (shadow): no provider.
async fn offline_policies(
    config: &Config,
) -> anyhow::Result<(policy_engine::PolicySet, Arc<rag_index::PolicyIndex>)> {
    let policies = policy_set(config).await?;
    let index = open_index_blocking(config, policies.clone()).await?;
    Ok((policies, Arc::new(index)))
}

pub(super) async fn open_index_blocking(
    config: &Config,
    policies: policy_engine::PolicySet,
) -> anyhow::Result<rag_index::PolicyIndex> {
    let dir = config.index_dir();
    tokio::task::spawn_blocking(move || desk::policies::open_index(&dir, &policies)).await?
}

/// Reads a history file; bad lines are reported with their number and skipped.
pub(super) fn read_history(
    path: &Path,
) -> anyhow::Result<(
    Vec<shadow::replay::HistoricalTicket>,
    Vec<shadow::replay::LineError>,
)> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let (tickets, bad) = shadow::replay::parse_history(&text);
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

/// The policies an offline command works with: the database's when it holds
/// versions — the source of truth once seeded, what `serve` decides with —, else the
/// files of `FIXTURES_DIR/policies`. Which one is said on stderr (stdout stays the
/// command's answer). A SQLite database that does not exist is not created.
pub(super) async fn policy_set(config: &Config) -> anyhow::Result<PolicySet> {
    let files = config.policies_dir();
    let why_files = match stored_sources(config).await {
        Ok(Some(sources)) => {
            eprintln!("policies: from the database ({} versions)", sources.len());
            return PolicySet::from_sources(desk::policies::supersede(sources))
                .map_err(|e| anyhow::anyhow!("policies in the database: {e}"));
        }
        Ok(None) => "the database holds none".to_string(),
        Err(e) => format!("the database is unavailable: {e:#}"),
    };
    eprintln!(
        "policies: from the files in {} ({why_files})",
        files.display()
    );
    desk::policies::load_policy_set(&files)
}

/// The database's policy versions; `None` when there is no database or it holds none.
async fn stored_sources(config: &Config) -> anyhow::Result<Option<Vec<PolicySource>>> {
    let url = &config.database_url;
    if let Some(rest) = url.strip_prefix("sqlite:") {
        let path = rest
            .trim_start_matches("//")
            .split('?')
            .next()
            .unwrap_or_default();
        if path.is_empty() || path.contains(":memory:") || !Path::new(path).exists() {
            return Ok(None);
        }
    }
    let db = store::Db::connect(url).await?;
    let sources = desk::policies::versions::sources(&db).await?;
    Ok(Some(sources).filter(|s| !s.is_empty()))
}
