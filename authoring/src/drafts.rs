//! Drafts (`policy_drafts`, `policy_draft_authors`): the next version of one document
//! as its authors edit it. Writes are expected-version writes: a save names the draft
//! version it started from, and a stale save changes nothing and gets the current
//! draft, a unified diff from the saver's text to it, and the saver's own text back —
//! two authors never overwrite each other and nothing typed is lost.

use policy_engine::{PolicyDocument, PolicyRules, PolicySource};
use serde::{Deserialize, Serialize};
use sqlx::Row;
use time::Date;

use crate::{validate, VersionText};
use desk::auth::Staff;
use desk::clock::{rfc3339, Clock};
use desk::error::{DomainError, DomainResult, ErrorCode};
use desk::policies::set_front_matter;
use store::Db;

/// The largest Markdown or rules text a draft takes (the longest fixture is ~6 KiB).
const MAX_TEXT_BYTES: usize = 256 * 1024;

/// What an author writes: the Markdown (with its front matter) and the rules TOML.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct DraftText {
    pub markdown: String,
    pub rules: Option<String>,
}

/// A validation problem as the API and the console show it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ProblemView {
    pub file: String,
    pub field: String,
    pub line: Option<usize>,
    pub message: String,
}

/// A draft as read: its text, who wrote it, its save count, and what is wrong with it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Draft {
    pub doc_id: String,
    /// The policy version this draft will publish as (`RP-001@3` → 3).
    pub policy_version: u32,
    #[serde(flatten)]
    pub text: DraftText,
    /// Saves so far; 0 for a draft nobody has saved yet. A save sends it back.
    pub version: i64,
    /// Emails of everyone who saved it since the last publish.
    pub authors: Vec<String>,
    /// The email of whoever saved the latest version (none before the first save).
    pub last_saved_by: Option<String>,
    pub updated_at: Option<String>,
    pub problems: Vec<ProblemView>,
    /// The last what-if run on this draft, and the draft version it checked.
    #[schema(value_type = Option<Object>)]
    pub whatif: Option<serde_json::Value>,
    pub whatif_version: Option<i64>,
}

impl Draft {
    /// A draft with problems is neither run nor published: its first problem, as the
    /// author sees it.
    pub fn check_problems(&self) -> DomainResult<()> {
        match self.problems.first() {
            None => Ok(()),
            Some(problem) => Err(DomainError::bad_request(
                ErrorCode::InvalidDraft,
                format!(
                    "the draft has problems ({}: {})",
                    problem.field, problem.message
                ),
            )),
        }
    }

    /// `RP-001-v3.md`: the file this draft becomes.
    pub fn file_name(&self) -> String {
        format!("{}-v{}.md", self.doc_id, self.policy_version)
    }
}

/// A save that lost the race: nothing was written.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct DraftConflict {
    /// The draft as saved meanwhile by someone else.
    pub current: Draft,
    /// The text the stale save carried, returned to its author.
    pub yours: DraftText,
    /// Unified diff from `yours` to `current` (Markdown, then rules).
    pub diff: String,
}

pub enum Saved {
    Saved(Box<Draft>),
    Conflict(Box<DraftConflict>),
}

/// Only admins and policy authors touch drafts.
pub fn check_author(staff: &Staff) -> DomainResult<()> {
    match staff.role.may_author_policies() {
        true => Ok(()),
        false => Err(DomainError::Forbidden(
            "only an admin or a policy_author edits policies".into(),
        )),
    }
}

/// The draft of `doc_id`: the saved one, or a fresh one started from the document's
/// latest version (a stored draft-status version as it is; a published one as the next
/// version number, status `draft`, superseding it).
pub async fn load_draft(db: &Db, clock: &dyn Clock, doc_id: &str) -> DomainResult<Draft> {
    let row = sqlx::query(
        "SELECT d.policy_version, d.markdown, d.rules, d.version, d.updated_at, d.whatif,
                d.whatif_version, s.email AS updated_by
         FROM policy_drafts d JOIN staff s ON s.id = d.updated_by WHERE d.doc_id = $1",
    )
    .bind(doc_id)
    .fetch_optional(db.pool())
    .await?;
    let mut draft = match row {
        Some(r) => Draft {
            doc_id: doc_id.to_string(),
            policy_version: u32::try_from(r.try_get::<i64, _>("policy_version")?)
                .map_err(|e| DomainError::Internal(e.into()))?,
            text: DraftText {
                markdown: r.try_get("markdown")?,
                rules: r.try_get("rules")?,
            },
            version: r.try_get("version")?,
            authors: authors(db, doc_id).await?,
            last_saved_by: Some(r.try_get("updated_by")?),
            updated_at: Some(rfc3339(r.try_get("updated_at")?)),
            problems: Vec::new(),
            whatif: r
                .try_get::<Option<String>, _>("whatif")?
                .and_then(|w| serde_json::from_str(&w).ok()),
            whatif_version: r.try_get("whatif_version")?,
        },
        None => fresh_draft(db, doc_id, clock.now().date()).await?,
    };
    draft.problems = problems(&draft, clock);
    Ok(draft)
}

fn problems(draft: &Draft, clock: &dyn Clock) -> Vec<ProblemView> {
    let name = draft.file_name();
    let text = VersionText {
        markdown_name: &name,
        markdown: &draft.text.markdown,
        rules: draft.text.rules.as_deref(),
    };
    let mut found = validate(text, clock.now().date());
    found.extend(crate::validate::check_identity(
        text,
        &draft.doc_id,
        draft.policy_version,
    ));
    found
        .into_iter()
        .map(|p| ProblemView {
            message: p.error.to_string(),
            file: p.file,
            field: p.field,
            line: p.line,
        })
        .collect()
}

/// A draft of the next version starts valid (docs/spec/policies.md, "Authoring"): in
/// force from tomorrow in the desk's clock, since a draft may not start in the past and
/// the version it copies started long ago; the author changes the date in the form.
async fn fresh_draft(db: &Db, doc_id: &str, today: Date) -> DomainResult<Draft> {
    let row = sqlx::query(
        "SELECT version, markdown, rules, status FROM policy_versions WHERE doc_id = $1
         ORDER BY version DESC LIMIT 1",
    )
    .bind(doc_id)
    .fetch_optional(db.pool())
    .await?
    .ok_or(DomainError::NotFound("policy"))?;
    let latest: i64 = row.try_get("version")?;
    let latest = u32::try_from(latest).map_err(|e| DomainError::Internal(e.into()))?;
    let markdown: String = row.try_get("markdown")?;
    let rules: Option<String> = row.try_get("rules")?;
    let status: String = row.try_get("status")?;
    let (policy_version, text) = if status == "draft" {
        (latest, DraftText { markdown, rules })
    } else {
        let next = latest + 1;
        let markdown = set_front_matter(&markdown, "version", Some(&next.to_string()));
        let markdown = set_front_matter(&markdown, "status", Some("\"draft\""));
        let markdown = set_front_matter(&markdown, "effective_to", None);
        let tomorrow = today.next_day().unwrap_or(today);
        let markdown = set_front_matter(
            &markdown,
            "effective_from",
            Some(&format!("\"{tomorrow}\"")),
        );
        let markdown = set_front_matter(
            &markdown,
            "supersedes",
            Some(&format!("\"{doc_id}@{latest}\"")),
        );
        let rules = rules.map(|r| {
            r.replace(
                &format!("policy = \"{doc_id}@{latest}\""),
                &format!("policy = \"{doc_id}@{next}\""),
            )
        });
        let markdown = tables_from_rules(markdown, rules.as_deref());
        (next, DraftText { markdown, rules })
    };
    Ok(Draft {
        doc_id: doc_id.to_string(),
        policy_version,
        text,
        version: 0,
        authors: Vec::new(),
        last_saved_by: None,
        updated_at: None,
        problems: Vec::new(),
        whatif: None,
        whatif_version: None,
    })
}

/// The copied text with its tables stated from the copied rules — what the engine
/// enforces — so a draft of a version stored before the two had to agree starts valid
/// too (docs/spec/policies.md, "One source of truth"); an agreeing text is unchanged.
fn tables_from_rules(markdown: String, rules: Option<&str>) -> String {
    let Ok(document) = PolicyDocument::parse(&markdown) else {
        return markdown;
    };
    match rules.map(|r| PolicyRules::parse(r, &document)) {
        Some(Ok(rules)) => policy_engine::agreement::render(&markdown, &rules),
        _ => markdown,
    }
}

async fn authors(db: &Db, doc_id: &str) -> DomainResult<Vec<String>> {
    let rows = sqlx::query(
        "SELECT s.email FROM policy_draft_authors a JOIN staff s ON s.id = a.staff_id
         WHERE a.doc_id = $1 ORDER BY s.email",
    )
    .bind(doc_id)
    .fetch_all(db.pool())
    .await?;
    rows.iter().map(|r| Ok(r.try_get("email")?)).collect()
}

/// Saves `text` as the draft of `doc_id` if it is still at `expected_version` (0: not
/// saved yet). Invalid text is saved too — a draft is work in progress; its problems
/// are listed with it and publishing refuses it.
pub async fn save_draft(
    db: &Db,
    clock: &dyn Clock,
    staff: &Staff,
    doc_id: &str,
    expected_version: i64,
    text: DraftText,
) -> DomainResult<Saved> {
    check_author(staff)?;
    if text.markdown.len() > MAX_TEXT_BYTES
        || text
            .rules
            .as_ref()
            .is_some_and(|r| r.len() > MAX_TEXT_BYTES)
    {
        return Err(DomainError::PayloadTooLarge(format!(
            "a policy text holds at most {MAX_TEXT_BYTES} bytes"
        )));
    }
    let current = load_draft(db, clock, doc_id).await?;
    if current.version != expected_version {
        return Ok(conflict(current, text));
    }
    let now = clock.now_ms();
    let mut tx = db.begin().await?;
    // The version in the WHERE (or the primary key, for a first save) decides the race,
    // not the read above.
    let written = if expected_version == 0 {
        sqlx::query(
            "INSERT INTO policy_drafts (doc_id, policy_version, markdown, rules, version, updated_by, updated_at)
             VALUES ($1, $2, $3, $4, 1, $5, $6) ON CONFLICT (doc_id) DO NOTHING",
        )
        .bind(doc_id)
        .bind(i64::from(current.policy_version))
        .bind(&text.markdown)
        .bind(&text.rules)
        .bind(&staff.id)
        .bind(now)
        .execute(&mut *tx)
        .await?
    } else {
        sqlx::query(
            "UPDATE policy_drafts SET markdown = $1, rules = $2, version = version + 1,
                 updated_by = $3, updated_at = $4
             WHERE doc_id = $5 AND version = $6",
        )
        .bind(&text.markdown)
        .bind(&text.rules)
        .bind(&staff.id)
        .bind(now)
        .bind(doc_id)
        .bind(expected_version)
        .execute(&mut *tx)
        .await?
    };
    if written.rows_affected() == 0 {
        drop(tx);
        let current = load_draft(db, clock, doc_id).await?;
        return Ok(conflict(current, text));
    }
    sqlx::query(
        "INSERT INTO policy_draft_authors (doc_id, staff_id) VALUES ($1, $2)
         ON CONFLICT (doc_id, staff_id) DO NOTHING",
    )
    .bind(doc_id)
    .bind(&staff.id)
    .execute(&mut *tx)
    .await?;
    // docs/spec/roles.md: who saved each version, for the four eyes of `publish`.
    sqlx::query(
        "INSERT INTO policy_draft_saves (doc_id, policy_version, draft_version, staff_id, saved_at)
         VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(doc_id)
    .bind(i64::from(current.policy_version))
    .bind(expected_version + 1)
    .bind(&staff.id)
    .bind(now)
    .execute(&mut *tx)
    .await?;
    let detail = format!("draft v{} saved", expected_version + 1);
    desk::audit::record(
        &mut tx,
        &staff.email,
        "policy_draft_saved",
        doc_id,
        &detail,
        now,
    )
    .await?;
    tx.commit().await?;
    Ok(Saved::Saved(Box::new(load_draft(db, clock, doc_id).await?)))
}

fn conflict(current: Draft, yours: DraftText) -> Saved {
    let diff = unified(&yours, &current.text);
    Saved::Conflict(Box::new(DraftConflict {
        current,
        yours,
        diff,
    }))
}

/// Markdown then rules, each as a unified diff `yours` → `saved`.
fn unified(yours: &DraftText, saved: &DraftText) -> String {
    let rules = |t: &DraftText| t.rules.clone().unwrap_or_default();
    let mut out = String::new();
    for (name, old, new) in [
        ("markdown", yours.markdown.clone(), saved.markdown.clone()),
        ("rules", rules(yours), rules(saved)),
    ] {
        let diff = similar::TextDiff::from_lines(&old, &new);
        out.push_str(
            &diff
                .unified_diff()
                .context_radius(3)
                .header(&format!("yours/{name}"), &format!("saved/{name}"))
                .to_string(),
        );
    }
    out
}

/// The draft as the source it publishes as (for what-if runs and publishing).
pub fn as_source(draft: &Draft) -> PolicySource {
    PolicySource {
        name: draft.file_name(),
        markdown: draft.text.markdown.clone(),
        rules: draft.text.rules.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RP004: &str = include_str!("../../fixtures/policies/RP-004-v2.md");
    const RP004_RULES: &str = include_str!("../../fixtures/policies/RP-004-v2.rules.toml");

    #[test]
    fn a_fresh_draft_of_a_contradicting_version_states_the_rules_numbers() {
        let enforced = RP004_RULES.replace("JPY = \"15000\"", "JPY = \"20000\"");
        let text = tables_from_rules(RP004.to_string(), Some(&enforced));
        assert_eq!(text, RP004.replace("| JPY | 15,000 |", "| JPY | 20,000 |"));
        let agreeing = tables_from_rules(RP004.to_string(), Some(RP004_RULES));
        assert_eq!(agreeing, RP004);
        assert_eq!(tables_from_rules(RP004.to_string(), None), RP004);
    }
}
