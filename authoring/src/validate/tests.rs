//! Tests of `authoring/validate.rs`: kept apart so the file reads as the code it tests.

use super::*;

const V2: &str = include_str!("../../../fixtures/policies/RP-001-v2.md");
const V2_RULES: &str = include_str!("../../../fixtures/policies/RP-001-v2.rules.toml");

fn today() -> Date {
    policy_engine::parse_date("2026-12-02").expect("a date")
}

/// RP-001 v2 turned into a draft of v3 starting 2027-01-01: valid as it stands.
fn draft() -> (String, String) {
    let markdown = V2
        .replace("version = 2", "version = 3")
        .replace("status = \"published\"", "status = \"draft\"")
        .replace(
            "effective_from = \"2026-07-01\"",
            "effective_from = \"2027-01-01\"",
        );
    (markdown, V2_RULES.replace("RP-001@2", "RP-001@3"))
}

fn problems(markdown: &str, rules: Option<&str>) -> Vec<Problem> {
    validate(
        VersionText {
            markdown_name: "RP-001-v3.md",
            markdown,
            rules,
        },
        today(),
    )
}

#[test]
fn a_draft_made_from_a_valid_version_has_no_problems() {
    let (markdown, rules) = draft();
    assert_eq!(problems(&markdown, Some(&rules)), vec![]);
}

#[test]
fn a_published_fixture_dated_in_the_past_is_still_valid() {
    assert_eq!(
        validate(
            VersionText {
                markdown_name: "RP-001-v2.md",
                markdown: V2,
                rules: Some(V2_RULES)
            },
            today()
        ),
        vec![]
    );
}

#[test]
fn a_document_without_front_matter_is_named_at_line_one() {
    let found = problems("# Title\n\ntext\n", None);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].error, ValidationError::MissingFrontMatter);
    assert_eq!(
        (found[0].field.as_str(), found[0].line),
        ("front_matter", Some(1))
    );
}

#[test]
fn unterminated_front_matter_is_its_own_error() {
    let found = problems("+++\nid = \"RP-001\"\n", None);
    assert_eq!(found[0].error, ValidationError::UnterminatedFrontMatter);
}

#[test]
fn front_matter_syntax_errors_name_the_field_and_line() {
    let (markdown, _) = draft();
    let broken = markdown.replace(
        "title = \"Duplicate and erroneous charges\"",
        "title = \"unclosed",
    );
    let found = problems(&broken, None);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        matches!(found[0].error, ValidationError::FrontMatterSyntax(_)),
        "{found:?}"
    );
    assert_eq!((found[0].field.as_str(), found[0].line), ("title", Some(4)));
}

#[test]
fn each_missing_field_is_named() {
    let (markdown, _) = draft();
    let without: String = markdown
        .lines()
        .filter(|l| !l.starts_with("title") && !l.starts_with("regions"))
        .map(|l| format!("{l}\n"))
        .collect();
    let found = problems(&without, None);
    let fields: Vec<_> = found.iter().map(|p| (p.field.as_str(), &p.error)).collect();
    assert_eq!(
        fields,
        [
            ("title", &ValidationError::MissingField),
            ("regions", &ValidationError::MissingField)
        ]
    );
}

#[test]
fn a_value_of_the_wrong_type_names_its_field_and_line() {
    let (markdown, _) = draft();
    let found = problems(
        &markdown.replace("version = 3", "version = \"three\""),
        None,
    );
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        matches!(found[0].error, ValidationError::InvalidField(_)),
        "{found:?}"
    );
    assert_eq!(
        (found[0].field.as_str(), found[0].line),
        ("version", Some(3))
    );
}

#[test]
fn a_gap_in_the_section_numbers_names_the_heading_line() {
    let (markdown, rules) = draft();
    let broken = markdown.replace("## 2. Remedy", "## 5. Remedy");
    let found = problems(&broken, Some(&rules));
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(
        found[0].error,
        ValidationError::SectionNumbering {
            expected: 2,
            found: "5".into()
        }
    );
    let line = broken
        .lines()
        .position(|l| l == "## 5. Remedy")
        .map(|i| i + 1);
    assert_eq!((found[0].field.as_str(), found[0].line), ("sections", line));
}

#[test]
fn rules_that_are_not_toml_are_named_in_the_rules_file() {
    let (markdown, _) = draft();
    let found = problems(&markdown, Some("policy = \"RP-001@3\"\n[charges\n"));
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].file, "RP-001-v3.rules.toml");
    assert!(
        matches!(found[0].error, ValidationError::RulesSyntax(_)),
        "{found:?}"
    );
    assert_eq!(found[0].line, Some(2));
}

#[test]
fn rules_written_for_another_version_are_refused() {
    let (markdown, _) = draft();
    let found = problems(&markdown, Some(V2_RULES));
    assert_eq!(found[0].field, "policy");
    assert_eq!(
        found[0].error,
        ValidationError::RulesForOtherVersion {
            expected: "RP-001@3".into(),
            found: "RP-001@2".into()
        }
    );
    assert_eq!(found[0].line, Some(3));
}

#[test]
fn a_rule_citing_a_missing_section_names_the_rule() {
    let (markdown, rules) = draft();
    let found = problems(
        &markdown,
        Some(&rules.replace("window = \"3\"", "window = \"9\"")),
    );
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].field, "clauses.window");
    assert_eq!(
        found[0].error,
        ValidationError::UnknownSection {
            rule: "window".into(),
            anchor: "9".into()
        }
    );
    let line = rules
        .lines()
        .position(|l| l.starts_with("window ="))
        .map(|i| i + 1);
    assert_eq!(found[0].line, line);
}

#[test]
fn rules_the_engine_refuses_are_reported_with_its_reason() {
    let (markdown, rules) = draft();
    let found = problems(
        &markdown,
        Some(&rules.replace("reporting_window_days = 120", "reporting_window_days = 0")),
    );
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        matches!(&found[0].error, ValidationError::InvalidRules(m) if m.contains("reporting_window_days")),
        "{found:?}"
    );
}

#[test]
fn a_draft_starting_in_the_past_names_effective_from() {
    let (markdown, rules) = draft();
    let found = problems(
        &markdown.replace(
            "effective_from = \"2027-01-01\"",
            "effective_from = \"2026-12-01\"",
        ),
        Some(&rules),
    );
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(
        (found[0].field.as_str(), found[0].line),
        ("effective_from", Some(6))
    );
    assert_eq!(
        found[0].error,
        ValidationError::EffectiveDateInPast {
            date: policy_engine::parse_date("2026-12-01").unwrap(),
            today: today()
        }
    );
    assert!(
        found[0]
            .to_string()
            .starts_with("RP-001-v3.md:6: effective_from: "),
        "{}",
        found[0]
    );
}

#[test]
fn a_draft_naming_another_document_or_version_is_not_this_draft() {
    let (markdown, _) = draft();
    let text = |markdown| VersionText {
        markdown_name: "RP-001-v3.md",
        markdown,
        rules: None,
    };
    assert_eq!(check_identity(text(&markdown), "RP-001", 3), vec![]);
    let other = markdown.replace("id = \"RP-001\"", "id = \"RP-002\"");
    let found = check_identity(text(&other), "RP-001", 3);
    assert_eq!((found[0].field.as_str(), found[0].line), ("id", Some(2)));
    assert_eq!(
        found[0].error,
        ValidationError::NotThisVersion {
            expected: "RP-001@3".into(),
            found: "RP-002@3".into()
        }
    );
    let found = check_identity(
        text(&markdown.replace("version = 3", "version = 7")),
        "RP-001",
        3,
    );
    assert_eq!(found[0].field, "version");
}

#[test]
fn a_draft_starting_today_is_not_in_the_past() {
    let (markdown, rules) = draft();
    let today = markdown.replace(
        "effective_from = \"2027-01-01\"",
        "effective_from = \"2026-12-02\"",
    );
    assert_eq!(problems(&today, Some(&rules)), vec![]);
}

#[test]
fn a_table_cell_that_states_another_number_than_the_rules_is_a_problem_of_the_text() {
    const RP004: &str = include_str!("../../../fixtures/policies/RP-004-v2.md");
    const RP004_RULES: &str = include_str!("../../../fixtures/policies/RP-004-v2.rules.toml");
    let markdown = RP004
        .replace("version = 2", "version = 3")
        .replace("status = \"published\"", "status = \"draft\"")
        .replace(
            "effective_from = \"2026-07-01\"",
            "effective_from = \"2027-01-01\"",
        );
    let rules = RP004_RULES
        .replace("RP-004@2", "RP-004@3")
        .replace("JPY = \"15000\"", "JPY = \"20000\"");
    let text = |rules| VersionText {
        markdown_name: "RP-004-v3.md",
        markdown: &markdown,
        rules: Some(rules),
    };
    let found = validate(text(&rules), today());
    let line = markdown
        .lines()
        .position(|l| l == "| JPY | 15,000 |")
        .map(|l| l + 1);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(
        (
            found[0].file.as_str(),
            found[0].field.as_str(),
            found[0].line
        ),
        ("RP-004-v3.md", "threshold (JPY)", line)
    );
    assert!(
        matches!(&found[0].error, ValidationError::TextDisagrees(d) if d.text == "15,000" && d.rules == "20,000"),
        "{found:?}"
    );
    let agreeing = RP004_RULES.replace("RP-004@2", "RP-004@3");
    assert_eq!(validate(text(&agreeing), today()), vec![]);
}
