//! `policy_versions`: every policy version, the source of truth once seeded; this module
//! is its one writer (seeding here, a publish's row through `insert_published`).
//! The files of `fixtures/policies/` seed an empty table; `export` writes the rows back
//! as files, byte for byte. `sources` is what every instance builds its `PolicySet` and
//! index from, and `sources_hash` is how an instance notices a publish elsewhere.

use std::path::Path;

use anyhow::Context;
use policy_engine::{PolicyDocument, PolicySource, PolicyStatus};
use sha2::{Digest, Sha256};
use sqlx::Row;

use crate::error::DomainResult;
use store::{Db, Tx};

/// Seeds an empty `policy_versions` from the files in `dir` (the same files
/// `policies::load_policy_set` reads, so the seeded set equals the files' set). A table
/// already holding versions is left alone: after the first start the database, not the
/// files, says what is published. Several instances starting at once insert the same
/// rows; `ON CONFLICT DO NOTHING` keeps the first.
pub async fn seed_if_empty(db: &Db, dir: &Path) -> anyhow::Result<usize> {
    let count: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM policy_versions")
        .fetch_one(db.pool())
        .await?;
    if count > 0 {
        return Ok(0);
    }
    let sources = crate::policies::read_sources(dir)?;
    let mut tx = db.begin().await?;
    for source in &sources {
        let document = PolicyDocument::parse(&source.markdown)
            .map_err(|e| anyhow::anyhow!("{}: {e}", source.name))?;
        sqlx::query(
            "INSERT INTO policy_versions (doc_id, version, file_name, markdown, rules, status, effective_at)
             VALUES ($1, $2, $3, $4, $5, $6, 0) ON CONFLICT (doc_id, version) DO NOTHING",
        )
        .bind(&document.meta.id)
        .bind(i64::from(document.meta.version))
        .bind(&source.name)
        .bind(&source.markdown)
        .bind(&source.rules)
        .bind(status_name(document.meta.status))
        .execute(&mut *tx)
        .await
        .with_context(|| format!("seeding {}", source.name))?;
    }
    tx.commit().await?;
    tracing::info!(versions = sources.len(), dir = %dir.display(), "policies seeded from files");
    Ok(sources.len())
}

fn status_name(status: PolicyStatus) -> &'static str {
    match status {
        PolicyStatus::Published => "published",
        PolicyStatus::Draft => "draft",
    }
}

/// A published version as a publish stores it (`authoring::publish`).
pub struct PublishedRow<'a> {
    pub doc_id: &'a str,
    pub version: i64,
    pub file_name: &'a str,
    pub markdown: &'a str,
    pub rules: Option<&'a str>,
    /// Unix milliseconds of the effective date's midnight, UTC.
    pub effective_at: i64,
    /// The publisher's staff id.
    pub published_by: &'a str,
    pub published_at: i64,
    /// The what-if the publisher reviewed, as JSON.
    pub whatif: Option<String>,
}

/// Stores `row` in the publish's transaction. A published row is immutable: only a
/// draft-status row of the same number (a seeded draft file) gives way; a second publish
/// of one number changes nothing and returns `false`.
pub async fn insert_published(tx: &mut Tx<'_>, row: &PublishedRow<'_>) -> DomainResult<bool> {
    let written = sqlx::query(
        "INSERT INTO policy_versions (doc_id, version, file_name, markdown, rules, status, effective_at, published_by, published_at, whatif)
         VALUES ($1, $2, $3, $4, $5, 'published', $6, $7, $8, $9)
         ON CONFLICT (doc_id, version) DO UPDATE SET file_name = excluded.file_name,
             markdown = excluded.markdown, rules = excluded.rules, status = 'published',
             effective_at = excluded.effective_at, published_by = excluded.published_by,
             published_at = excluded.published_at, whatif = excluded.whatif
         WHERE policy_versions.status = 'draft'",
    )
    .bind(row.doc_id)
    .bind(row.version)
    .bind(row.file_name)
    .bind(row.markdown)
    .bind(row.rules)
    .bind(row.effective_at)
    .bind(row.published_by)
    .bind(row.published_at)
    .bind(&row.whatif)
    .execute(&mut **tx)
    .await?;
    Ok(written.rows_affected() != 0)
}

/// Every stored version as the engine reads it, sorted by file name (as the files are).
pub async fn sources(db: &Db) -> DomainResult<Vec<PolicySource>> {
    let rows =
        sqlx::query("SELECT file_name, markdown, rules FROM policy_versions ORDER BY file_name")
            .fetch_all(db.pool())
            .await?;
    rows.iter()
        .map(|r| {
            Ok(PolicySource {
                name: r.try_get("file_name")?,
                markdown: r.try_get("markdown")?,
                rules: r.try_get("rules")?,
            })
        })
        .collect()
}

/// What changes whenever a version is added or published: the row count and the last
/// publish time. One indexed aggregate, cheap enough for every worker pass; only when it
/// moves are the sources read and hashed.
pub async fn marker(db: &Db) -> DomainResult<(i64, i64)> {
    let row = sqlx::query(
        "SELECT COUNT(*) AS n, COALESCE(MAX(published_at), 0) AS last FROM policy_versions",
    )
    .fetch_one(db.pool())
    .await?;
    Ok((row.try_get("n")?, row.try_get("last")?))
}

/// SHA-256 over the sources' names and bytes: equal hashes, equal policy sets.
pub fn sources_hash(sources: &[PolicySource]) -> String {
    let mut hasher = Sha256::new();
    for source in sources {
        for part in [
            source.name.as_str(),
            source.markdown.as_str(),
            source.rules.as_deref().unwrap_or(""),
        ] {
            hasher.update((part.len() as u64).to_be_bytes());
            hasher.update(part.as_bytes());
        }
        hasher.update([u8::from(source.rules.is_some())]);
    }
    hex::encode(hasher.finalize())
}

/// `refund-agent policy export DIR`: every stored version written back as its files
/// (`RP-001-v2.md`, `RP-001-v2.rules.toml`). Returns how many versions were written.
pub fn export(sources: &[PolicySource], dir: &Path) -> anyhow::Result<usize> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    for source in sources {
        let path = dir.join(&source.name);
        std::fs::write(&path, &source.markdown)
            .with_context(|| format!("writing {}", path.display()))?;
        if let Some(rules) = &source.rules {
            let path = dir.join(PolicySource::rules_file_name(&source.name));
            std::fs::write(&path, rules).with_context(|| format!("writing {}", path.display()))?;
        }
    }
    Ok(sources.len())
}
