//! Validation of one policy version before anything else is done with it:
//! the front matter, the section numbering, the rules file, every rule's citation, and
//! the effective date against the clock, and that the text's tables state the rules'
//! numbers (`policy_engine::agreement`). Each problem names its file, its field and,
//! where the text shows it, its line; the kinds are a typed enum, never bare strings.
//!
//! It reads strings, never files (the CLI and the draft store do the I/O), and it
//! leans on the engine's own parsers (`PolicyDocument::parse`, `PolicyRules::parse`) for
//! the last word, so a version that validates here is one the engine accepts.
//!
//! Long because each check is one small function beside the others and the unit tests
//! name one problem kind each; split, the checks would lose the one order they run in.

use std::fmt;

use policy_engine::agreement::{self, Disagreement};
use policy_engine::{PolicyDocument, PolicyRules, PolicyStatus};
use time::Date;

/// The front matter keys every version must carry (`PolicyMeta`).
const REQUIRED_FIELDS: [&str; 7] = [
    "id",
    "version",
    "title",
    "status",
    "effective_from",
    "regions",
    "products",
];

/// One kind of problem with a policy version.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValidationError {
    #[error("the document does not open with '+++' front matter")]
    MissingFrontMatter,
    #[error("the '+++' front matter is never closed")]
    UnterminatedFrontMatter,
    #[error("front matter is not TOML: {0}")]
    FrontMatterSyntax(String),
    #[error("required field is missing")]
    MissingField,
    #[error("invalid value: {0}")]
    InvalidField(String),
    #[error("section {found} is out of order: expected section {expected}")]
    SectionNumbering { expected: u32, found: String },
    #[error("rules are not TOML: {0}")]
    RulesSyntax(String),
    #[error("rules are for {found}, the document is {expected}")]
    RulesForOtherVersion { expected: String, found: String },
    #[error("rule '{rule}' cites section {anchor}, which the document does not have")]
    UnknownSection { rule: String, anchor: String },
    #[error("rules rejected: {0}")]
    InvalidRules(String),
    #[error("effective date {date} is in the past (today is {today})")]
    EffectiveDateInPast { date: Date, today: Date },
    #[error("this draft is {expected}, the front matter says {found}")]
    NotThisVersion { expected: String, found: String },
    /// docs/spec/policies.md, "One source of truth": a table cell of the text states
    /// another number than the rules the engine enforces.
    #[error("the text and the rules disagree: {0}")]
    TextDisagrees(Box<Disagreement>),
}

/// A problem located: which file, which field, which line (1-based) where known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub file: String,
    pub field: String,
    pub line: Option<usize>,
    pub error: ValidationError,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}: {}: {}", self.file, self.field, self.error),
            None => write!(f, "{}: {}: {}", self.file, self.field, self.error),
        }
    }
}

/// One version as an author hands it in: the Markdown file and its rules file, if any.
#[derive(Debug, Clone, Copy)]
pub struct VersionText<'a> {
    /// `RP-001-v3.md`: how problems name the Markdown.
    pub markdown_name: &'a str,
    pub markdown: &'a str,
    pub rules: Option<&'a str>,
}

impl VersionText<'_> {
    fn rules_name(&self) -> String {
        policy_engine::PolicySource::rules_file_name(self.markdown_name)
    }
}

/// Every problem with `text`, in file order; empty means the version is valid. `today`
/// comes from the app's clock: a version not yet published may not start in the past
/// (a published one's date is history and is not checked again).
pub fn validate(text: VersionText<'_>, today: Date) -> Vec<Problem> {
    let mut problems = Vec::new();
    let problem = |file: &str, field: &str, line, error| Problem {
        file: file.to_string(),
        field: field.to_string(),
        line,
        error,
    };
    let md = text.markdown_name;
    let front = match front_matter(text.markdown) {
        Ok(front) => front,
        Err(error) => return vec![problem(md, "front_matter", Some(1), error)],
    };
    problems.extend(
        check_front_matter(&front, today)
            .into_iter()
            .map(|(f, l, e)| problem(md, &f, l, e)),
    );
    problems.extend(
        check_numbering(text.markdown, front.body_line)
            .into_iter()
            .map(|(l, e)| problem(md, "sections", Some(l), e)),
    );
    if !problems.is_empty() {
        // The engine's parse below would only repeat what is already named.
        return problems;
    }
    let document = match PolicyDocument::parse(text.markdown) {
        Ok(document) => document,
        Err(e) => {
            return vec![problem(
                md,
                "front_matter",
                None,
                ValidationError::InvalidField(e.to_string()),
            )]
        }
    };
    if let Some(rules) = text.rules {
        let name = text.rules_name();
        problems.extend(
            check_rules(rules, &document)
                .into_iter()
                .map(|(f, l, e)| problem(&name, &f, l, e)),
        );
        if let (true, Ok(parsed)) = (problems.is_empty(), PolicyRules::parse(rules, &document)) {
            problems.extend(
                disagreements(text.markdown, &parsed)
                    .into_iter()
                    .map(|(f, l, e)| problem(md, &f, l, e)),
            );
        }
    }
    problems
}

/// Every table cell of the text that states another number than the rules, located in
/// the Markdown: the field names the column and the row (`threshold (JPY)`).
fn disagreements(markdown: &str, rules: &PolicyRules) -> Vec<Located> {
    agreement::check(markdown, rules)
        .into_iter()
        .map(|d| {
            let field = format!("{} ({})", d.column, d.row);
            (
                field,
                Some(d.line),
                ValidationError::TextDisagrees(Box::new(d)),
            )
        })
        .collect()
}

/// A draft's front matter must name the document and version it is the draft of: a
/// draft of RP-001 v3 that says `id = "RP-002"` would publish over another document.
pub fn check_identity(text: VersionText<'_>, doc_id: &str, version: u32) -> Vec<Problem> {
    let Ok(document) = PolicyDocument::parse(text.markdown) else {
        return Vec::new(); // `validate` names what is wrong with the front matter.
    };
    let expected = format!("{doc_id}@{version}");
    let found = document.meta.version_ref();
    if found == expected {
        return Vec::new();
    }
    let front = front_matter(text.markdown)
        .map(|f| f.toml)
        .unwrap_or_default();
    let field = if document.meta.id != doc_id {
        "id"
    } else {
        "version"
    };
    vec![Problem {
        file: text.markdown_name.to_string(),
        field: field.to_string(),
        line: line_of_key(front, field).map(|l| l + 1),
        error: ValidationError::NotThisVersion { expected, found },
    }]
}

struct FrontMatter<'a> {
    toml: &'a str,
    /// The line the body starts on (1-based), after the closing `+++`.
    body_line: usize,
}

fn front_matter(markdown: &str) -> Result<FrontMatter<'_>, ValidationError> {
    let source = markdown.trim_start_matches('\u{feff}');
    let rest = source
        .strip_prefix("+++")
        .ok_or(ValidationError::MissingFrontMatter)?;
    let end = rest
        .find("\n+++")
        .ok_or(ValidationError::UnterminatedFrontMatter)?;
    let toml = &rest[..end];
    Ok(FrontMatter {
        toml,
        body_line: toml.lines().count() + 2,
    })
}

type Located = (String, Option<usize>, ValidationError);

/// Front matter lines are counted from the opening `+++` (line 1).
fn check_front_matter(front: &FrontMatter<'_>, today: Date) -> Vec<Located> {
    let table: toml::Table = match toml::from_str(front.toml) {
        Ok(table) => table,
        Err(e) => {
            return vec![toml_problem(
                front.toml,
                &e,
                "front_matter",
                ValidationError::FrontMatterSyntax,
            )]
        }
    };
    let missing: Vec<Located> = REQUIRED_FIELDS
        .iter()
        .filter(|field| !table.contains_key(**field))
        .map(|field| (field.to_string(), None, ValidationError::MissingField))
        .collect();
    if !missing.is_empty() {
        return missing;
    }
    let meta: policy_engine::PolicyMeta = match toml::from_str(front.toml) {
        Ok(meta) => meta,
        Err(e) => {
            return vec![toml_problem(
                front.toml,
                &e,
                "front_matter",
                ValidationError::InvalidField,
            )]
        }
    };
    let mut problems = Vec::new();
    if meta.status != PolicyStatus::Published && meta.effective_from < today {
        problems.push((
            "effective_from".into(),
            line_of_key(front.toml, "effective_from").map(|l| l + 1),
            ValidationError::EffectiveDateInPast {
                date: meta.effective_from,
                today,
            },
        ));
    }
    problems
}

/// Numbered `## N. Title` headings run 1, 2, 3… without gaps or repeats; unnumbered
/// headings (annexes) may sit anywhere. Citations name sections by these numbers.
fn check_numbering(markdown: &str, body_line: usize) -> Vec<(usize, ValidationError)> {
    let mut expected = 1;
    let mut problems = Vec::new();
    for (i, line) in markdown
        .lines()
        .enumerate()
        .skip(body_line.saturating_sub(1))
    {
        let Some(heading) = line.strip_prefix("## ") else {
            continue;
        };
        let number: String = heading
            .trim()
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        let number = number.trim_end_matches('.');
        if number.is_empty() {
            continue;
        }
        if number.parse::<u32>() != Ok(expected) {
            problems.push((
                i + 1,
                ValidationError::SectionNumbering {
                    expected,
                    found: number.to_string(),
                },
            ));
        }
        expected += 1;
    }
    problems
}

/// The rules file: TOML, for this version, citing sections the document has; then the
/// engine's own parse for the numbers (windows, thresholds, periods).
fn check_rules(rules: &str, document: &PolicyDocument) -> Vec<Located> {
    let table: toml::Table = match toml::from_str(rules) {
        Ok(table) => table,
        Err(e) => {
            return vec![toml_problem(
                rules,
                &e,
                "rules",
                ValidationError::RulesSyntax,
            )]
        }
    };
    let expected = document.meta.version_ref();
    let mut problems = Vec::new();
    let found = table
        .get("policy")
        .and_then(|p| p.as_str())
        .unwrap_or_default();
    if found != expected {
        problems.push((
            "policy".into(),
            line_of_key(rules, "policy").map(|l| l + 1),
            ValidationError::RulesForOtherVersion {
                expected: expected.clone(),
                found: found.to_string(),
            },
        ));
    }
    if let Some(clauses) = table.get("clauses").and_then(|c| c.as_table()) {
        for (rule, anchor) in clauses {
            let anchor = anchor.as_str().unwrap_or_default();
            if document.section(anchor).is_none() {
                problems.push((
                    format!("clauses.{rule}"),
                    line_of_key(rules, rule).map(|l| l + 1),
                    ValidationError::UnknownSection {
                        rule: rule.clone(),
                        anchor: anchor.to_string(),
                    },
                ));
            }
        }
    }
    if problems.is_empty() {
        if let Err(e) = PolicyRules::parse(rules, document) {
            problems.push((
                "rules".into(),
                None,
                ValidationError::InvalidRules(e.to_string()),
            ));
        }
    }
    problems
}

/// A TOML error located: the key written on the line it points at (else `fallback`)
/// and that line, 1-based in the file (a front matter's text starts on line 1, right
/// after its opening `+++`, so the count holds for it as for a rules file).
fn toml_problem(
    text: &str,
    error: &toml::de::Error,
    fallback: &str,
    kind: fn(String) -> ValidationError,
) -> Located {
    let line = error.span().map(|s| line_of(text, s.start) + 1);
    let field = line
        .and_then(|l| key_on_line(text, l - 1))
        .unwrap_or_else(|| fallback.into());
    (field, line, kind(error.message().to_string()))
}

/// 0-based line of byte `offset`.
fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count()
}

/// 0-based line where `key = …` is written.
fn line_of_key(text: &str, key: &str) -> Option<usize> {
    text.lines().position(|line| {
        line.trim_start()
            .strip_prefix(key)
            .is_some_and(|rest| rest.trim_start().starts_with('='))
    })
}

/// The key written on 0-based line `line`, if it is a `key = value` line.
fn key_on_line(text: &str, line: usize) -> Option<String> {
    let (key, _) = text.lines().nth(line)?.split_once('=')?;
    let key = key.trim();
    (!key.is_empty() && !key.starts_with('[')).then(|| key.to_string())
}

#[cfg(test)]
mod tests;
