use super::*;
use crate::document::PolicyDocument;
use crate::testkit::{fixture_sources, source};

/// The rules of fixture `name` with `edit` applied to the TOML.
fn rules(name: &str, edit: impl Fn(&str) -> String) -> PolicyRules {
    let s = source(name);
    let document = PolicyDocument::parse(&s.markdown).unwrap();
    PolicyRules::parse(&edit(s.rules.as_deref().unwrap()), &document).unwrap()
}

const NONE: [Disagreement; 0] = [];

fn markdown(name: &str) -> String {
    source(name).markdown
}

#[test]
fn every_shipped_policy_text_agrees_with_its_rules_and_renders_unchanged() {
    let mut compared = 0;
    for s in fixture_sources() {
        let Some(text) = &s.rules else { continue };
        let document = PolicyDocument::parse(&s.markdown).unwrap();
        let parsed = PolicyRules::parse(text, &document).unwrap();
        assert_eq!(check(&s.markdown, &parsed), NONE, "{}", s.name);
        assert_eq!(render(&s.markdown, &parsed), s.markdown, "{}", s.name);
        compared += tables(&s.markdown.split('\n').collect::<Vec<_>>())
            .iter()
            .map(|t| t.columns.len())
            .sum::<usize>();
    }
    // RP-002's cooling-off, RP-003's holds, RP-004 v1's and v2's thresholds.
    assert_eq!(compared, 4, "the tables of rule numbers are all recognised");
}

#[test]
fn a_threshold_the_rules_changed_is_named_by_table_row_column_and_both_values() {
    let raised = rules("RP-004-v2.md", |t| {
        t.replace("JPY = \"15000\"", "JPY = \"20000\"")
    });
    let text = markdown("RP-004-v2.md");
    let found = check(&text, &raised);
    let line = text.lines().position(|l| l == "| JPY | 15,000 |").unwrap() + 1;
    assert_eq!(
        found,
        [Disagreement {
            table: "currency | threshold".into(),
            line,
            row: "JPY".into(),
            column: "threshold".into(),
            text: "15,000".into(),
            rules: "20,000".into(),
        }]
    );
    assert_eq!(
        found[0].to_string(),
        format!("table 'currency | threshold', row JPY, column 'threshold' (line {line}): the text says 15,000, the rules say 20,000")
    );
}

#[test]
fn render_rewrites_only_the_cells_that_disagree() {
    let changed = rules("RP-004-v2.md", |t| {
        t.replace("JPY = \"15000\"", "JPY = \"20000\"")
            .replace("CNY = \"500.00\"", "CNY = \"1234.50\"")
    });
    let text = markdown("RP-004-v2.md");
    let rendered = render(&text, &changed);
    let expected = text
        .replace("| JPY | 15,000 |", "| JPY | 20,000 |")
        .replace("| CNY | 500.00 |", "| CNY | 1,234.50 |");
    assert_eq!(rendered, expected);
    assert_eq!(check(&rendered, &changed), NONE);
}

#[test]
fn days_and_hold_texts_are_compared_too() {
    let longer = rules("RP-002-v1.md", |t| t.replace("EU = 14", "EU = 21"));
    let found = check(&markdown("RP-002-v1.md"), &longer);
    let named: Vec<_> = found
        .iter()
        .map(|d| (d.row.as_str(), d.text.as_str(), d.rules.as_str()))
        .collect();
    assert_eq!(named, [("EU", "14 days", "21 days")]);
    assert!(render(&markdown("RP-002-v1.md"), &longer).contains("| EU | 21 days |"));

    let slower = rules("RP-003-v1.md", |t| {
        t.replacen(
            "text = \"5 business days\"",
            "text = \"10 business days\"",
            1,
        )
    });
    let found = check(&markdown("RP-003-v1.md"), &slower);
    let named: Vec<_> = found
        .iter()
        .map(|d| (d.row.as_str(), d.column.as_str(), d.rules.as_str()))
        .collect();
    assert_eq!(named, [("US", "hold released within", "10 business days")]);
}

#[test]
fn a_row_the_table_lacks_is_reported_and_rendered_back() {
    let text = markdown("RP-004-v2.md").replace("| JPY | 15,000 |\n", "");
    let v2 = rules("RP-004-v2.md", str::to_string);
    let found = check(&text, &v2);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(
        (found[0].row.as_str(), found[0].text.as_str()),
        ("JPY", "(no row)")
    );
    assert_eq!(render(&text, &v2), markdown("RP-004-v2.md"));
}

#[test]
fn an_unreadable_cell_disagrees_and_a_table_in_a_code_fence_or_of_roles_is_not_compared() {
    let v2 = rules("RP-004-v2.md", str::to_string);
    let text = markdown("RP-004-v2.md").replace("| USD | 100.00 |", "| USD | a hundred |");
    assert_eq!(check(&text, &v2)[0].text, "a hundred");
    let fenced = format!(
        "{}\n```\n| currency | threshold |\n|---|---|\n| JPY | 1 |\n```\n",
        markdown("RP-004-v2.md")
    );
    assert_eq!(check(&fenced, &v2), NONE);
    let roles = markdown("RP-004-v2.md").replace("a support agent or a supervisor", "anyone");
    assert_eq!(check(&roles, &v2), NONE);
}

#[test]
fn money_is_grouped_as_the_texts_write_it() {
    assert_eq!(grouped("1000.00"), "1,000.00");
    assert_eq!(grouped("15000"), "15,000");
    assert_eq!(grouped("100.00"), "100.00");
    assert_eq!(grouped("1234567"), "1,234,567");
}
