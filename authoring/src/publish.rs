//! Publishing a draft: the draft becomes an immutable published version with
//! an effective date — today or a later day —, the draft is gone, the audit records who,
//! when and the what-if that was checked, this instance swaps its policies at once
//! (others on their next worker pass, `live`), and approvals that the new policies
//! would decide differently are voided (docs/spec/invariants.md #2).
//!
//! A scheduled version is in the set from the moment it is published: the engine picks
//! the version in force on each ticket's date, so it takes effect exactly at its date
//! on every instance that holds it. Because the version is chosen by the ticket's date,
//! its date arriving changes no decision made under a set that held it; what can
//! change is a decision an instance made under the set it held before it noticed the
//! publish. `desk::policies::follow`, run by every worker pass, sweeps those once per
//! generation.

use policy_engine::{PolicyDocument, PolicyRules, PolicySet};
use serde::Serialize;
use time::Date;

use crate::drafts::{self, Draft};
use desk::auth::Staff;
use desk::policies::follow::void_changed_approvals;
use desk::policies::versions::PublishedRow;
use desk::policies::{set_front_matter, versions, Publisher};

use desk::error::{DomainError, DomainResult, ErrorCode};
use store::Db;

/// The outcome of a publish.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Published {
    /// `RP-001@3`.
    pub version: String,
    pub effective_from: String,
    pub published_by: String,
    /// Cases sent back to investigation because their approval no longer holds.
    pub voided_cases: Vec<String>,
}

/// What a publisher says they reviewed: the draft version, and the what-if run on
/// exactly that version (`None` from the CLI: the one stored with the draft).
#[derive(Debug, Clone, Copy)]
pub struct Reviewed {
    pub draft_version: i64,
    pub whatif_version: Option<i64>,
}

/// Publishes the draft of `doc_id` as saved at the version the publisher reviewed, in
/// force from `at` (default: the draft's own `effective_from` when that is later than
/// today, else today — A draft dated next week is not put in force today).
pub async fn publish(
    p: Publisher<'_>,
    staff: &Staff,
    doc_id: &str,
    reviewed: Reviewed,
    at: Option<Date>,
) -> DomainResult<Published> {
    drafts::check_author(staff)?;
    let draft = drafts::load_draft(p.db, p.clock, doc_id).await?;
    check_publishable(&draft, reviewed)?;
    check_four_eyes(p, staff, &draft).await?;
    let draft_version = reviewed.draft_version;
    let today = p.clock.now().date();
    let own = policy_engine::PolicyDocument::parse(&draft.text.markdown)
        .ok()
        .map(|d| d.meta.effective_from)
        .filter(|from| *from > today);
    let effective = at.or(own).unwrap_or(today);
    if effective < today {
        return Err(DomainError::bad_request(
            ErrorCode::EffectiveDateInPast,
            format!("effective date {effective} is in the past (today is {today})"),
        ));
    }
    let markdown = set_front_matter(&draft.text.markdown, "status", Some("\"published\""));
    let markdown = set_front_matter(
        &markdown,
        "effective_from",
        Some(&format!("\"{effective}\"")),
    );
    let markdown = set_front_matter(&markdown, "effective_to", None);
    let version_ref = format!("{doc_id}@{}", draft.policy_version);
    check_set_loads(p.db, &draft, &markdown).await?;

    store_version(p, staff, &draft, &markdown, (draft_version, effective)).await?;
    tracing::info!(version = %version_ref, effective_from = %effective, by = %staff.email, "policy published");

    p.policies.refresh(p.db, p.index).await?;
    // Swept at once, so the publisher sees what was voided, yet not marked swept: a pass
    // of this instance in flight since before the publish may still decide under the
    // old set, and the next pass's `follow` sweeps after it.
    let (_one_sweep_at_a_time, current) = p.policies.sweep_lock().await;
    let why = format!("policy {version_ref} published: the decision would change");
    let voided_cases = void_changed_approvals(p, &current, &why).await?;
    Ok(Published {
        version: version_ref,
        effective_from: effective.to_string(),
        published_by: staff.email.clone(),
        voided_cases,
    })
}

/// The published row, the draft gone and the audit line with the what-if, in one
/// transaction: a second publish of one number, or a draft saved since `draft_version`,
/// writes nothing.
async fn store_version(
    p: Publisher<'_>,
    staff: &Staff,
    draft: &Draft,
    markdown: &str,
    (draft_version, effective): (i64, Date),
) -> DomainResult<()> {
    let now = p.clock.now_ms();
    let doc_id = draft.doc_id.as_str();
    let version_ref = format!("{doc_id}@{}", draft.policy_version);
    let effective_at = desk::clock::to_ms(effective.midnight().assume_utc());
    let mut tx = p.db.begin().await?;
    let row = PublishedRow {
        doc_id,
        version: i64::from(draft.policy_version),
        file_name: &draft.file_name(),
        markdown,
        rules: draft.text.rules.as_deref(),
        effective_at,
        published_by: &staff.id,
        published_at: now,
        whatif: draft.whatif.as_ref().map(|w| w.to_string()),
    };
    if !versions::insert_published(&mut tx, &row).await? {
        return Err(DomainError::conflict(
            ErrorCode::AlreadyPublished,
            format!("{version_ref} is already published"),
        ));
    }
    let gone = sqlx::query("DELETE FROM policy_drafts WHERE doc_id = $1 AND version = $2")
        .bind(doc_id)
        .bind(draft_version)
        .execute(&mut *tx)
        .await?;
    if gone.rows_affected() == 0 {
        return Err(draft_changed());
    }
    sqlx::query("DELETE FROM policy_draft_authors WHERE doc_id = $1")
        .bind(doc_id)
        .execute(&mut *tx)
        .await?;
    let detail = serde_json::json!({
        "effective_from": effective.to_string(),
        "draft_version": draft_version,
        "authors": draft.authors,
        "whatif": draft.whatif,
        "whatif_version": draft.whatif_version,
    });
    desk::audit::record(
        &mut tx,
        &staff.email,
        "policy_published",
        &version_ref,
        &detail.to_string(),
        now,
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

fn draft_changed() -> DomainError {
    DomainError::conflict(
        ErrorCode::DraftChanged,
        "the draft was saved since you looked at it: review it again before publishing",
    )
}

/// Saved at the version the publisher saw, without problems, with a what-if run on
/// exactly that version, which the publisher names when they say which.
fn check_publishable(draft: &Draft, reviewed: Reviewed) -> DomainResult<()> {
    let seen = reviewed.draft_version;
    if draft.version == 0 {
        return Err(DomainError::conflict(
            ErrorCode::DraftNotSaved,
            "there is no saved draft to publish",
        ));
    }
    if draft.version != seen {
        return Err(draft_changed());
    }
    check_agreement(draft)?;
    draft.check_problems()?;
    // Nobody publishes effects they have not seen (docs/spec/policies.md).
    if draft.whatif_version != Some(seen) || reviewed.whatif_version.is_some_and(|w| w != seen) {
        return Err(DomainError::conflict(
            ErrorCode::WhatifRequired,
            format!("run a what-if on draft version {seen} and review it before publishing"),
        ));
    }
    Ok(())
}

/// docs/spec/policies.md, "One source of truth": a version whose text states another
/// number than its rules is never published — the citation would show one number, the
/// engine enforce another. Refused with its own code, naming the first cell.
fn check_agreement(draft: &Draft) -> DomainResult<()> {
    let markdown = &draft.text.markdown;
    let (Ok(document), Some(rules)) = (PolicyDocument::parse(markdown), &draft.text.rules) else {
        return Ok(()); // Not a version yet: `check_problems` names what is wrong.
    };
    let Ok(rules) = PolicyRules::parse(rules, &document) else {
        return Ok(());
    };
    let found = policy_engine::agreement::check(markdown, &rules);
    match found.first() {
        None => Ok(()),
        Some(first) => Err(DomainError::bad_request(
            ErrorCode::PolicyTextDisagrees,
            format!(
                "the text and the rules disagree in {} cell(s); first: {first}. Edit the thresholds form (it writes both) or make the text state the rules' numbers",
                found.len()
            ),
        )),
    }
}

/// docs/spec/roles.md: with `POLICY_SECOND_APPROVER=on` nobody publishes a draft they
/// changed since the last publish. When the desk has a second person who may publish
/// (a desk with one has no second pair of eyes to ask), nobody publishes a draft they
/// last changed, and a change to approval authority (who may approve what, RP-004's
/// thresholds) needs someone who did not edit it.
async fn check_four_eyes(p: Publisher<'_>, staff: &Staff, draft: &Draft) -> DomainResult<()> {
    let edited = draft.authors.contains(&staff.email);
    if p.second_approver && edited {
        return Err(DomainError::Forbidden(
            "a second approver is required: nobody who edited this draft since the last publish may publish it".into(),
        ));
    }
    if publishers(p.db).await? < 2 {
        return Ok(());
    }
    if draft.last_saved_by.as_deref() == Some(staff.email.as_str()) {
        return Err(DomainError::Forbidden(
            "you saved the latest version of this draft: someone else publishes it".into(),
        ));
    }
    if edited && changes_approval_authority(p.db, draft).await? {
        return Err(DomainError::Forbidden(
            "this draft changes who may approve refunds: someone who did not edit it publishes it"
                .into(),
        ));
    }
    Ok(())
}

/// Staff who may publish a policy.
async fn publishers(db: &Db) -> DomainResult<i64> {
    Ok(
        sqlx::query_scalar("SELECT COUNT(*) FROM staff WHERE role IN ('admin', 'policy_author')")
            .fetch_one(db.reader())
            .await?,
    )
}

/// Whether the draft's `[approval]` rules (who may approve what, and up to which
/// amount) differ from those of the document's latest published version.
async fn changes_approval_authority(db: &Db, draft: &Draft) -> DomainResult<bool> {
    let published: Option<Option<String>> = sqlx::query_scalar(
        "SELECT rules FROM policy_versions WHERE doc_id = $1 AND status = 'published'
         ORDER BY version DESC LIMIT 1",
    )
    .bind(&draft.doc_id)
    .fetch_optional(db.reader())
    .await?;
    let approval = |rules: Option<&str>| {
        rules
            .and_then(|r| r.parse::<toml::Table>().ok())
            .and_then(|t| t.get("approval").cloned())
    };
    Ok(approval(draft.text.rules.as_deref()) != approval(published.flatten().as_deref()))
}

/// The stored versions with the published text must still form a valid set (no two
/// versions in force on one day once the predecessor is ended).
async fn check_set_loads(db: &Db, draft: &Draft, markdown: &str) -> DomainResult<()> {
    let mut published = draft.clone();
    published.text.markdown = markdown.to_string();
    let sources =
        desk::policies::with_version(versions::sources(db).await?, drafts::as_source(&published));
    PolicySet::from_sources(desk::policies::supersede(sources))
        .map(|_| ())
        .map_err(|e| {
            DomainError::bad_request(
                ErrorCode::InvalidDraft,
                format!("the version does not fit: {e}"),
            )
        })
}

/// An effective date as a form, the API or the CLI gives it: blank is "today".
pub fn parse_effective(text: Option<&str>) -> DomainResult<Option<Date>> {
    match text.map(str::trim).filter(|t| !t.is_empty()) {
        None => Ok(None),
        Some(t) => policy_engine::parse_date(t).map(Some).map_err(|_| {
            DomainError::bad_request(
                ErrorCode::InvalidDate,
                format!("'{t}' is not a date (YYYY-MM-DD)"),
            )
        }),
    }
}
