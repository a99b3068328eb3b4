//! Whether a policy's text and its rules say the same numbers (docs/spec/policies.md,
//! "One source of truth"): staff read and the agent cites the Markdown, the engine
//! enforces the `.rules.toml`; a table cell stating a number the rules also hold must
//! state the rules' number.
//!
//! The tables it knows are named by their header, first column the row key:
//! `| currency | threshold |` (RP-004, `[approval.thresholds]`), `| region |
//! cooling-off period |` (RP-002, `[cancellation.cooling_off_days]`) and `| region |
//! hold released within |` (RP-003, `[holds.release]`'s text). A table it does not know
//! is not a table of rule numbers (RP-004's roles) and is left alone.
//!
//! [`check`] lists every cell that disagrees (and every row the rules hold that the
//! table lacks); [`render`] rewrites those cells from the rules, every other byte of the
//! text kept. Pure: strings in, values out.

use std::fmt;
use std::str::FromStr;

use rust_decimal::Decimal;

use crate::catalog::Region;
use crate::money::{Currency, Money};
use crate::parameters::PolicyRules;

/// One cell whose text and rules differ, named as a reader finds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Disagreement {
    /// The table's header as written: `currency | threshold`.
    pub table: String,
    /// 1-based line of the cell in the Markdown (the table's last line for a missing row).
    pub line: usize,
    /// The row's key: `JPY`, `EU`.
    pub row: String,
    /// The column's header: `threshold`.
    pub column: String,
    /// What the text says (`(no row)` when the table lacks the row).
    pub text: String,
    /// What the rules say, as the text would write it (`(none)` when they hold nothing).
    pub rules: String,
}

impl fmt::Display for Disagreement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "table '{}', row {}, column '{}' (line {}): the text says {}, the rules say {}",
            self.table, self.row, self.column, self.line, self.text, self.rules
        )
    }
}

/// Every disagreement between the tables of `markdown` and `rules`, in text order.
pub fn check(markdown: &str, rules: &PolicyRules) -> Vec<Disagreement> {
    let lines: Vec<&str> = markdown.split('\n').collect();
    let mut found = Vec::new();
    for table in tables(&lines) {
        for column in &table.columns {
            found.extend(check_column(&table, column, rules));
        }
    }
    found
}

/// `markdown` with every disagreeing cell rewritten from `rules` and every row the rules
/// hold but a two-column table lacks added at its end; all other bytes kept.
pub fn render(markdown: &str, rules: &PolicyRules) -> String {
    let mut lines: Vec<String> = markdown.split('\n').map(str::to_string).collect();
    let borrowed: Vec<&str> = markdown.split('\n').collect();
    // Rows added after a table shift the lines below it: go from the last table up.
    let mut tables = tables(&borrowed);
    tables.reverse();
    for table in &tables {
        for row in &table.rows {
            let mut edits: Vec<(std::ops::Range<usize>, String)> = table
                .columns
                .iter()
                .filter_map(|column| {
                    let value = expected(column.kind, rules, &row.key)?;
                    let span = row.cells.get(column.index)?.clone();
                    (!value.agrees(&borrowed[row.line][span.clone()]))
                        .then(|| (span, value.shown()))
                })
                .collect();
            // Rightmost first, so the spans to their left still hold.
            edits.sort_by_key(|(span, _)| std::cmp::Reverse(span.start));
            for (span, text) in edits {
                lines[row.line].replace_range(span, &text);
            }
        }
        let added: Vec<String> = match table.header.len() {
            2 => table
                .columns
                .iter()
                .flat_map(|column| missing_rows(table, column, rules))
                .map(|(key, value)| format!("| {key} | {} |", value.shown()))
                .collect(),
            _ => Vec::new(),
        };
        let end = table.rows.last().map_or(table.header_line + 1, |r| r.line);
        for (i, row) in added.into_iter().enumerate() {
            lines.insert(end + 1 + i, row);
        }
    }
    lines.join("\n")
}

fn check_column(table: &Table, column: &Column, rules: &PolicyRules) -> Vec<Disagreement> {
    if !column.kind.present(rules) {
        return Vec::new();
    }
    let disagreement = |line: usize, row: &str, text: String, rules: String| Disagreement {
        table: table.header.join(" | "),
        line: line + 1,
        row: row.to_string(),
        column: table.header[column.index].clone(),
        text,
        rules,
    };
    let mut found = Vec::new();
    for row in &table.rows {
        let text = row
            .cells
            .get(column.index)
            .map_or("", |span| &table.lines[row.line][span.clone()]);
        match expected(column.kind, rules, &row.key) {
            Some(value) if value.agrees(text) => {}
            Some(value) => found.push(disagreement(row.line, &row.key, text.into(), value.shown())),
            None => found.push(disagreement(
                row.line,
                &row.key,
                text.into(),
                "(none)".into(),
            )),
        }
    }
    let last = table.rows.last().map_or(table.header_line + 1, |r| r.line);
    for (key, value) in missing_rows(table, column, rules) {
        found.push(disagreement(last, &key, "(no row)".into(), value.shown()));
    }
    found
}

/// The keys the rules hold for `column` that no row of `table` names.
fn missing_rows(table: &Table, column: &Column, rules: &PolicyRules) -> Vec<(String, Expected)> {
    column
        .kind
        .keys(rules)
        .into_iter()
        .filter(|key| !table.rows.iter().any(|r| r.key.eq_ignore_ascii_case(key)))
        .filter_map(|key| expected(column.kind, rules, &key).map(|value| (key, value)))
        .collect()
}

/// The kinds of cells whose number the rules hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// RP-004: the approval threshold of a currency.
    Threshold,
    /// RP-002: the cooling-off days of a region.
    CoolingOff,
    /// RP-003: when the issuer releases a hold, per region, as customers are told.
    HoldRelease,
}

impl Kind {
    /// The kind of a table's column from its header: the key column's name, then this
    /// column's (lower case).
    fn of(key: &str, column: &str) -> Option<Kind> {
        match (key, column) {
            ("currency", "threshold") => Some(Kind::Threshold),
            ("region", "cooling-off period") => Some(Kind::CoolingOff),
            ("region", "hold released within") => Some(Kind::HoldRelease),
            _ => None,
        }
    }

    /// Whether the rules hold this family at all (a text may have a table whose rules
    /// live elsewhere; then there is nothing to compare).
    fn present(self, rules: &PolicyRules) -> bool {
        match self {
            Kind::Threshold => rules.approval.is_some(),
            Kind::CoolingOff => rules.cancellation.is_some(),
            Kind::HoldRelease => rules.holds.is_some(),
        }
    }

    /// Every row key the rules hold for this kind.
    fn keys(self, rules: &PolicyRules) -> Vec<String> {
        match self {
            Kind::Threshold => rules
                .approval
                .iter()
                .flat_map(|a| a.thresholds.keys())
                .map(|c| c.code().to_string())
                .collect(),
            Kind::CoolingOff => rules
                .cancellation
                .iter()
                .flat_map(|c| c.cooling_off_days.keys())
                .map(|r| r.code().to_string())
                .collect(),
            Kind::HoldRelease => rules
                .holds
                .iter()
                .flat_map(|h| h.release.keys())
                .map(|r| r.code().to_string())
                .collect(),
        }
    }
}

/// What the rules say a cell holds.
#[derive(Debug, Clone)]
enum Expected {
    Amount(Money),
    Days(u32),
    Text(String),
}

fn expected(kind: Kind, rules: &PolicyRules, key: &str) -> Option<Expected> {
    let key = key.trim();
    match kind {
        Kind::Threshold => {
            let currency = Currency::from_str(&key.to_ascii_uppercase()).ok()?;
            let money = rules.approval.as_ref()?.thresholds.get(&currency)?;
            Some(Expected::Amount(*money))
        }
        Kind::CoolingOff => {
            let region = Region::from_str(&key.to_ascii_uppercase()).ok()?;
            let days = rules.cancellation.as_ref()?.cooling_off_days.get(&region)?;
            Some(Expected::Days(*days))
        }
        Kind::HoldRelease => {
            let region = Region::from_str(&key.to_ascii_uppercase()).ok()?;
            let release = rules.holds.as_ref()?.release.get(&region)?;
            Some(Expected::Text(release.text.clone()))
        }
    }
}

impl Expected {
    /// As the policy texts write it: `1,000.00`, `15,000`, `14 days`, `5 business days`.
    fn shown(&self) -> String {
        match self {
            Expected::Amount(money) => grouped(&money.amount_string()),
            Expected::Days(1) => "1 day".into(),
            Expected::Days(days) => format!("{days} days"),
            Expected::Text(text) => text.clone(),
        }
    }

    /// Whether `cell` states this value: the same amount however grouped, the same
    /// number of days, the same words.
    fn agrees(&self, cell: &str) -> bool {
        let cell = cell.trim();
        match self {
            Expected::Amount(money) => Decimal::from_str(&cell.replace(',', ""))
                .is_ok_and(|amount| amount == money.amount()),
            Expected::Days(days) => {
                let mut words = cell.split_whitespace();
                let number = words.next().and_then(|n| n.parse::<u32>().ok());
                let unit = words.next();
                number == Some(*days)
                    && matches!(unit, Some("day" | "days"))
                    && words.next().is_none()
            }
            Expected::Text(text) => cell.split_whitespace().eq(text.split_whitespace()),
        }
    }
}

/// `1000.00` → `1,000.00`: thousands grouped with commas, as the policy texts write money.
fn grouped(amount: &str) -> String {
    let (whole, fraction) = amount
        .split_once('.')
        .map_or((amount, None), |(w, f)| (w, Some(f)));
    let digits: Vec<char> = whole.chars().collect();
    let mut out = String::new();
    for (i, digit) in digits.iter().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(*digit);
    }
    if let Some(fraction) = fraction {
        out.push('.');
        out.push_str(fraction);
    }
    out
}

/// A Markdown table as found in the text.
struct Table<'a> {
    lines: &'a [&'a str],
    header: Vec<String>,
    header_line: usize,
    /// The columns whose cells the rules hold.
    columns: Vec<Column>,
    rows: Vec<Row>,
}

struct Column {
    index: usize,
    kind: Kind,
}

struct Row {
    /// 0-based line index.
    line: usize,
    key: String,
    /// Byte range of each cell's trimmed text within its line.
    cells: Vec<std::ops::Range<usize>>,
}

/// The tables of `lines` (outside code fences): a header row, a `|---|` row, then rows,
/// each line starting with `|`. Only tables whose first column is a key are kept.
fn tables<'a>(lines: &'a [&'a str]) -> Vec<Table<'a>> {
    let mut found = Vec::new();
    let (mut i, mut fenced) = (0, false);
    while i < lines.len() {
        let trimmed = lines[i].trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fenced = !fenced;
        }
        let is_table = !fenced
            && trimmed.starts_with('|')
            && lines.get(i + 1).is_some_and(|next| separator(next));
        if !is_table {
            i += 1;
            continue;
        }
        let header: Vec<String> = cells(lines[i])
            .into_iter()
            .map(|span| lines[i][span].to_string())
            .collect();
        let mut rows = Vec::new();
        let mut at = i + 2;
        while at < lines.len() && lines[at].trim_start().starts_with('|') {
            let spans = cells(lines[at]);
            let key = spans
                .first()
                .map_or("", |s| &lines[at][s.clone()])
                .to_string();
            rows.push(Row {
                line: at,
                key,
                cells: spans,
            });
            at += 1;
        }
        let key = header.first().map(|h| h.to_lowercase()).unwrap_or_default();
        let columns = header
            .iter()
            .enumerate()
            .skip(1)
            .filter_map(|(index, h)| {
                Kind::of(&key, &h.to_lowercase()).map(|kind| Column { index, kind })
            })
            .collect();
        found.push(Table {
            lines,
            header,
            header_line: i,
            columns,
            rows,
        });
        i = at;
    }
    found
}

/// `|---|:--:|`: the line under a table's header.
fn separator(line: &str) -> bool {
    let spans = cells(line);
    line.trim_start().starts_with('|')
        && !spans.is_empty()
        && spans.iter().all(|s| {
            let cell = line[s.clone()].trim_matches(':');
            !cell.is_empty() && cell.chars().all(|c| c == '-')
        })
}

/// The byte ranges of the trimmed cells of a table line, between unescaped pipes.
fn cells(line: &str) -> Vec<std::ops::Range<usize>> {
    let mut pipes = Vec::new();
    let bytes = line.as_bytes();
    for (i, b) in bytes.iter().enumerate() {
        if *b == b'|' && (i == 0 || bytes[i - 1] != b'\\') {
            pipes.push(i);
        }
    }
    // Without a closing pipe, the last cell runs to the end of the line.
    if !line.trim_end().ends_with('|') {
        pipes.push(line.len());
    }
    pipes
        .windows(2)
        .map(|pair| {
            let (start, end) = (pair[0] + 1, pair[1]);
            let cell = &line[start..end];
            let lead = cell.len() - cell.trim_start().len();
            let trail = cell.len() - cell.trim_end().len();
            start + lead..(end - trail).max(start + lead)
        })
        .collect()
}

#[cfg(test)]
mod tests;
