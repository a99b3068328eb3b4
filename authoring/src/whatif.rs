//! What-if: a saved draft against historical tickets, decided through
//! `replay::policy_diff` — the machinery of `refund-agent policy diff` — or against
//! the facts live cases of the last N days were decided on (`replay::facts_diff`), with
//! the draft pinned on the new side and the draft's base — the version it edits — pinned
//! on the old (docs/spec/policies.md, "What-if"): the same tickets under the base and
//! under the draft, so every difference listed is caused by the edit, not by a ticket
//! dated under an older version. The report is stored with the draft together with the
//! draft version it checked, so whoever publishes sees what was checked and whether the
//! text changed since.

use std::sync::Arc;

use policy_engine::{Facts, PolicyDocument, PolicySet, PolicyStatus};
use rag_index::PolicyIndex;
use serde::{Deserialize, Serialize};

use crate::drafts::{self, Draft};
use desk::auth::Staff;
use desk::clock::{rfc3339, Clock};
use desk::error::{DomainError, DomainResult, ErrorCode};
use desk::policies::{set_front_matter, versions};
use shadow::replay::{CaseVerdict, DiffReport, HistoricalTicket, RecordedCase, TicketError};
use store::Db;

/// A what-if as stored with the draft and shown on its page and in the publish audit.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WhatIf {
    /// What the draft was run against (`history: NAME`, N tickets).
    pub against: String,
    pub draft_version: i64,
    pub ran_by: String,
    pub ran_at: String,
    pub total: usize,
    pub changed: usize,
    /// Money refunded over the changed tickets under each side, per currency.
    pub money: serde_json::Value,
    /// Each changed ticket: id, what changed, the outcome on each side.
    pub tickets: Vec<ChangedTicket>,
    pub errors: usize,
    /// The version the draft was compared with (`RP-004@2`, the one it edits); absent
    /// for a document with no published version, and from what-ifs stored before it,
    /// which compared with the versions in force on each ticket's date.
    #[serde(default)]
    pub base: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ChangedTicket {
    pub id: String,
    pub changes: Vec<String>,
    pub from: String,
    pub to: String,
    pub money: serde_json::Value,
    /// Who must approve on each side (`agent`, `supervisor`, `admin`; none for a
    /// decision that refunds nothing), shown as "agent → supervisor". Absent from
    /// what-ifs stored before roles were recorded.
    #[serde(default)]
    pub from_role: Option<String>,
    #[serde(default)]
    pub to_role: Option<String>,
}

/// The stored versions plus `draft` as a draft version (replacing a stored draft file of
/// the same number): the set a what-if pins the draft in. The draft is forced to status
/// `draft`, so it is never in force on either side.
pub async fn set_with_draft(db: &Db, draft: &Draft) -> DomainResult<PolicySet> {
    let mut source = drafts::as_source(draft);
    source.markdown = set_front_matter(&source.markdown, "status", Some("\"draft\""));
    let sources = desk::policies::with_version(versions::sources(db).await?, source);
    PolicySet::from_sources(desk::policies::supersede(sources)).map_err(|e| {
        DomainError::bad_request(
            ErrorCode::InvalidDraft,
            format!("the draft does not load: {e}"),
        )
    })
}

/// The version a draft edits: the published version its `supersedes` names, else the
/// document's latest published version below the draft's number; `None` for a document
/// never published.
pub fn base_version(set: &PolicySet, draft: &Draft) -> Option<String> {
    let published = |d: &PolicyDocument| {
        d.meta.id == draft.doc_id
            && d.meta.status == PolicyStatus::Published
            && d.meta.version < draft.policy_version
    };
    let named = PolicyDocument::parse(&draft.text.markdown)
        .ok()
        .and_then(|d| d.meta.supersedes)
        .filter(|r| set.resolve_ref(r).is_ok_and(published));
    named.or_else(|| {
        set.documents()
            .iter()
            .filter(|d| published(d))
            .max_by_key(|d| d.meta.version)
            .map(|d| d.meta.version_ref())
    })
}

/// What one what-if compares: the set, the draft's base pinned on the old side (none:
/// the versions in force), the draft pinned on the new.
struct Sides {
    set: PolicySet,
    base: Vec<String>,
    draft: Vec<String>,
}

/// The saved draft of `doc_id`, if a what-if may run on it, and the sides it compares. A
/// draft with validation problems is refused: there is nothing sound to check.
async fn checked_draft(
    db: &Db,
    clock: &dyn Clock,
    staff: &Staff,
    doc_id: &str,
) -> DomainResult<(Draft, Sides)> {
    drafts::check_author(staff)?;
    let draft = drafts::load_draft(db, clock, doc_id).await?;
    if draft.version == 0 {
        return Err(DomainError::conflict(
            ErrorCode::DraftNotSaved,
            "save the draft before a what-if",
        ));
    }
    draft.check_problems()?;
    let set = set_with_draft(db, &draft).await?;
    let base = base_version(&set, &draft).into_iter().collect();
    let pin = vec![format!("{doc_id}@{}", draft.policy_version)];
    let sides = Sides {
        set,
        base,
        draft: pin,
    };
    Ok((draft, sides))
}

/// Runs the saved draft of `doc_id` against `tickets` and stores the result with it.
pub async fn run_against_history(
    db: &Db,
    clock: &dyn Clock,
    index: &Arc<PolicyIndex>,
    staff: &Staff,
    doc_id: &str,
    (name, tickets): (&str, &[HistoricalTicket]),
) -> DomainResult<WhatIf> {
    let (draft, sides) = checked_draft(db, clock, staff, doc_id).await?;
    let (set, base, pin) = (&sides.set, &sides.base, &sides.draft);
    let report = shadow::replay::policy_diff(set, index, tickets, base, pin, |_, _| {})
        .await
        .map_err(|e| DomainError::bad_request(ErrorCode::WhatifFailed, e.to_string()))?;
    let against = format!("history {name} ({} tickets)", tickets.len());
    let whatif = summary(&report, (&draft, &sides), staff, clock, against);
    store(db, doc_id, &whatif).await?;
    Ok(whatif)
}

/// The most days back a what-if of live decisions reaches.
pub const MAX_LIVE_DAYS: u32 = 366;
/// The most cases one what-if of live decisions decides (oldest first).
const MAX_LIVE_CASES: i64 = 20_000;

/// Runs the saved draft of `doc_id` against the cases decided in the last `days` days
/// (`cases::with_facts_since`: every case holding a decision's facts that changed in
/// the window), on the facts each case recorded when the engine decided it
/// (`cases.facts`: the billing records as gathered then, not re-read), the versions in
/// force on one side and the draft pinned on the other; stores the result with the
/// draft like a history what-if. A case id stands where a history's ticket id does.
pub async fn run_against_live(
    db: &Db,
    clock: &dyn Clock,
    staff: &Staff,
    doc_id: &str,
    days: u32,
) -> DomainResult<WhatIf> {
    if !(1..=MAX_LIVE_DAYS).contains(&days) {
        return Err(DomainError::bad_request(
            ErrorCode::InvalidDays,
            format!("live days must be 1 to {MAX_LIVE_DAYS}, not {days}"),
        ));
    }
    let (draft, sides) = checked_draft(db, clock, staff, doc_id).await?;
    let since = clock.now_ms() - i64::from(days) * 86_400_000;
    let (recorded, unreadable) = recorded_cases(db, since).await?;
    let mut report =
        shadow::replay::facts_diff(&sides.set, &recorded, &sides.base, &sides.draft)
            .map_err(|e| DomainError::bad_request(ErrorCode::WhatifFailed, e.to_string()))?;
    report.total += unreadable.len();
    report.errors = unreadable;
    let against = format!(
        "live decisions of the last {days} day(s) ({} cases)",
        report.total
    );
    let whatif = summary(&report, (&draft, &sides), staff, clock, against);
    store(db, doc_id, &whatif).await?;
    Ok(whatif)
}

/// The facts of the cases updated since `since` (each case's last decision), and the
/// cases whose stored facts no longer parse, as errors.
async fn recorded_cases(
    db: &Db,
    since: i64,
) -> DomainResult<(Vec<RecordedCase>, Vec<TicketError>)> {
    let cases = desk::cases::with_facts_since(db, since, MAX_LIVE_CASES).await?;
    let (mut recorded, mut unreadable) = (Vec::new(), Vec::new());
    for case in cases {
        let facts = case.facts.as_deref().unwrap_or_default();
        match serde_json::from_str::<Facts>(facts) {
            Ok(facts) => recorded.push(RecordedCase {
                recorded: case
                    .decision()
                    .map_or_else(CaseVerdict::escalated, |d| CaseVerdict::from_decision(&d)),
                id: case.id.into_string(),
                facts,
            }),
            Err(e) => unreadable.push(TicketError {
                id: case.id.into_string(),
                message: format!("stored facts unreadable: {e}"),
            }),
        }
    }
    Ok((recorded, unreadable))
}

fn summary(
    report: &DiffReport,
    (draft, sides): (&Draft, &Sides),
    staff: &Staff,
    clock: &dyn Clock,
    against: String,
) -> WhatIf {
    WhatIf {
        against,
        draft_version: draft.version,
        ran_by: staff.email.clone(),
        ran_at: rfc3339(clock.now_ms()),
        total: report.total,
        changed: report.changed,
        money: json(&report.money),
        tickets: report
            .tickets
            .iter()
            .map(|t| ChangedTicket {
                id: t.id.clone(),
                changes: t.changes.clone(),
                from: desk::world::serde_plain(&t.from.verdict.outcome),
                to: desk::world::serde_plain(&t.to.verdict.outcome),
                money: json(&t.money),
                from_role: t.from.approver_role.map(|r| r.as_str().to_string()),
                to_role: t.to.approver_role.map(|r| r.as_str().to_string()),
            })
            .collect(),
        errors: report.errors.len(),
        base: sides.base.first().cloned(),
    }
}

/// What the report holds, as JSON (plain data: serialising it cannot fail).
fn json<T: Serialize>(value: &T) -> serde_json::Value {
    serde_json::to_value(value).unwrap_or_default()
}

/// Kept only if the draft is still the version that was checked: a what-if of older
/// text must not pass for a check of newer.
async fn store(db: &Db, doc_id: &str, whatif: &WhatIf) -> DomainResult<()> {
    let text = serde_json::to_string(whatif).map_err(|e| DomainError::Internal(e.into()))?;
    let done = sqlx::query(
        "UPDATE policy_drafts SET whatif = $1, whatif_version = $2 WHERE doc_id = $3 AND version = $2",
    )
    .bind(&text)
    .bind(whatif.draft_version)
    .bind(doc_id)
    .execute(db.pool())
    .await?;
    if done.rows_affected() == 0 {
        return Err(DomainError::conflict(
            ErrorCode::DraftChanged,
            "the draft was saved while the what-if ran; run it again",
        ));
    }
    Ok(())
}

/// The history files a what-if may run against: `*.jsonl` in `dir`, by name.
pub fn history_files(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .filter(|n| n.ends_with(".jsonl"))
        .collect();
    names.sort();
    names
}

/// Reads the history file `name` of `dir`. Only a plain file name is accepted: a
/// what-if never reads outside the history directory.
pub fn read_history(dir: &std::path::Path, name: &str) -> DomainResult<Vec<HistoricalTicket>> {
    if !history_files(dir).iter().any(|n| n == name) {
        return Err(DomainError::bad_request(
            ErrorCode::UnknownHistory,
            format!(
                "no history file '{name}' (known: {})",
                history_files(dir).join(", ")
            ),
        ));
    }
    let text =
        std::fs::read_to_string(dir.join(name)).map_err(|e| DomainError::Internal(e.into()))?;
    let (tickets, errors) = shadow::replay::parse_history(&text);
    if let Some(error) = errors.first() {
        return Err(DomainError::bad_request(
            ErrorCode::InvalidHistory,
            format!(
                "{name}: {} line(s) unreadable, first: {error:?}",
                errors.len()
            ),
        ));
    }
    Ok(tickets)
}
