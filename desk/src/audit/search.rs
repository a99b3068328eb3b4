//! Reading the audit log for people: filtered by who, what, which subject and
//! when, newest first, and as CSV for a spreadsheet or an auditor.

use sqlx::Row;

use crate::error::{DomainError, DomainResult, ErrorCode};
use store::Db;

/// The most lines one search returns.
pub const MAX_LINES: i64 = 1000;

/// Which lines a search returns; empty fields match everything.
#[derive(Debug, Default, Clone)]
pub struct AuditFilter {
    /// Part of the actor: a staff email, "agent", "system" or a customer id.
    pub actor: Option<String>,
    /// One action, exactly (`approved`, `closed`, …).
    pub action: Option<String>,
    /// A case (or other subject) id, exactly.
    pub subject: Option<String>,
    /// From this day on (UTC, `YYYY-MM-DD`), and up to the end of that day.
    pub from: Option<String>,
    pub to: Option<String>,
}

/// One line of the log as a person reads it.
#[derive(Debug, Clone)]
pub struct AuditLine {
    pub at: i64,
    pub actor: String,
    pub action: String,
    pub subject: String,
    pub detail: String,
}

/// A day as `[start, end)` in unix milliseconds; a typed error names the field.
fn day_bounds(field: &str, day: &str) -> DomainResult<(i64, i64)> {
    let format = time::macros::format_description!("[year]-[month]-[day]");
    let date = time::Date::parse(day.trim(), &format).map_err(|_| {
        DomainError::bad_request(
            ErrorCode::InvalidDate,
            format!("{field}: expected a day as YYYY-MM-DD"),
        )
    })?;
    let start = date.midnight().assume_utc().unix_timestamp() * 1000;
    Ok((start, start + 86_400_000))
}

fn given(value: &Option<String>) -> Option<&str> {
    value.as_deref().map(str::trim).filter(|v| !v.is_empty())
}

/// A value a search binds, of the column's own type.
enum Bound {
    Text(String),
    Millis(i64),
}

/// The conditions `filter` makes, with their values, `$1…` in order.
fn conditions(filter: &AuditFilter) -> DomainResult<(Vec<String>, Vec<Bound>)> {
    let mut conditions = vec!["1 = 1".to_string()];
    let mut binds = Vec::new();
    let mut add = |condition: &str, value: Bound| {
        binds.push(value);
        conditions.push(condition.replace('?', &format!("${}", binds.len())));
    };
    if let Some(actor) = given(&filter.actor) {
        let pattern = format!("%{}%", actor.to_lowercase());
        add(
            "LOWER(COALESCE(s.email, a.actor)) LIKE ?",
            Bound::Text(pattern),
        );
    }
    if let Some(action) = given(&filter.action) {
        add("a.action = ?", Bound::Text(action.to_string()));
    }
    if let Some(subject) = given(&filter.subject) {
        add("a.subject = ?", Bound::Text(subject.to_string()));
    }
    if let Some(from) = given(&filter.from) {
        add(
            "a.created_at >= ?",
            Bound::Millis(day_bounds("from", from)?.0),
        );
    }
    if let Some(to) = given(&filter.to) {
        add("a.created_at < ?", Bound::Millis(day_bounds("to", to)?.1));
    }
    Ok((conditions, binds))
}

/// The lines `filter` selects, newest first, at most [`MAX_LINES`].
pub async fn search(db: &Db, filter: &AuditFilter) -> DomainResult<Vec<AuditLine>> {
    let (conditions, binds) = conditions(filter)?;
    let sql = format!(
        "SELECT a.created_at, COALESCE(s.email, a.actor) AS actor, a.action, a.subject, a.detail
         FROM audit_log a LEFT JOIN staff s ON s.id = a.actor
         WHERE {} ORDER BY a.created_at DESC, a.id DESC LIMIT {MAX_LINES}",
        conditions.join(" AND ")
    );
    let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
    for value in binds {
        query = match value {
            Bound::Text(text) => query.bind(text),
            Bound::Millis(ms) => query.bind(ms),
        };
    }
    let rows = query.fetch_all(db.reader()).await?;
    rows.iter()
        .map(|r| {
            Ok(AuditLine {
                at: r.try_get("created_at")?,
                actor: r.try_get("actor")?,
                action: r.try_get("action")?,
                subject: r.try_get("subject")?,
                detail: r.try_get("detail")?,
            })
        })
        .collect()
}

/// Every action the log holds, for the filter's choices.
pub async fn actions(db: &Db) -> DomainResult<Vec<String>> {
    let rows = sqlx::query("SELECT DISTINCT action FROM audit_log ORDER BY action")
        .fetch_all(db.reader())
        .await?;
    rows.iter()
        .map(|r| Ok(r.try_get::<String, _>("action")?))
        .collect()
}

/// One CSV field (RFC 4180), never read as a formula: a spreadsheet runs a cell that
/// starts with `=`, `+`, `-` or `@`, and a detail line is text a customer may have
/// influenced, so such a cell gets a leading apostrophe.
pub fn csv_field(value: &str) -> String {
    let value = match value.chars().next() {
        Some('=' | '+' | '-' | '@' | '\t' | '\r') => format!("'{value}"),
        _ => value.to_string(),
    };
    if value.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", value.replace('"', "\"\""))
    } else {
        value
    }
}

/// The lines as CSV with a header row; times in RFC 3339 (UTC).
pub fn csv(lines: &[AuditLine]) -> String {
    let mut out = String::from("at,actor,action,subject,detail\r\n");
    for l in lines {
        let at = crate::clock::rfc3339(l.at);
        let row = [at.as_str(), &l.actor, &l.action, &l.subject, &l.detail];
        let fields: Vec<String> = row.iter().map(|f| csv_field(f)).collect();
        out += &fields.join(",");
        out += "\r\n";
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_csv_field_is_quoted_when_it_must_be_and_never_starts_a_formula() {
        assert_eq!(csv_field("plain"), "plain");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_field("two\nlines"), "\"two\nlines\"");
        assert_eq!(csv_field("=HYPERLINK(\"x\")"), "\"'=HYPERLINK(\"\"x\"\")\"");
        assert_eq!(csv_field("-1"), "'-1");
    }

    #[test]
    fn a_day_that_is_not_yyyy_mm_dd_is_a_typed_error_naming_the_field() {
        let err = day_bounds("from", "12/01/2026").unwrap_err();
        assert_eq!(err.code(), "invalid_date");
        assert!(err.to_string().contains("from"), "{err}");
        let (start, end) = day_bounds("to", "2026-12-01").unwrap();
        assert_eq!(end - start, 86_400_000);
        assert_eq!(crate::clock::rfc3339(start), "2026-12-01T00:00:00Z");
    }
}
