//! The approval thresholds form on a draft's page (nobody types TOML): the
//! role up to the threshold, the role above it and the amount per currency, written
//! into the draft's rules file for its author — only those lines change, every comment
//! and other rule stays — then read back through the policy engine's own parser
//! (`PolicyRules::parse`), so what the form saves is what the engine will read. The
//! text's threshold table is rendered from those rules (`policy_engine::agreement`:
//! only the cells that changed are rewritten), so the number staff read and the agent
//! cites is the number enforced (docs/spec/policies.md, "One source of truth"); the
//! date the version goes in force is a field of the form too. A refused form is shown
//! again with the reason beside it and what was typed.
//!
//! It decides nothing and publishes nothing: the result is a saved draft, checked,
//! what-iffed and published as any other.

use desk::policies::set_front_matter;
use policy_engine::{agreement, Currency, Money, PolicyDocument, PolicyRules, Role};

/// The currencies the desk refunds in (docs/spec/domain.md), the form's rows.
pub(super) const CURRENCIES: [Currency; 4] =
    [Currency::CNY, Currency::USD, Currency::EUR, Currency::JPY];

/// The form's values: as read from the rules, or as typed.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize)]
pub(super) struct Thresholds {
    pub up_to_threshold: String,
    pub above_threshold: String,
    #[serde(default, rename = "CNY")]
    pub cny: String,
    #[serde(default, rename = "USD")]
    pub usd: String,
    #[serde(default, rename = "EUR")]
    pub eur: String,
    #[serde(default, rename = "JPY")]
    pub jpy: String,
    /// `YYYY-MM-DD`: the front matter's `effective_from`; blank keeps the draft's.
    #[serde(default)]
    pub effective_from: String,
}

/// What the form writes: the draft's text (tables and date) and its rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Written {
    pub markdown: String,
    pub rules: String,
}

impl Thresholds {
    /// The amount typed for `currency`.
    pub(super) fn amount(&self, currency: Currency) -> &str {
        match currency {
            Currency::CNY => &self.cny,
            Currency::USD => &self.usd,
            Currency::EUR => &self.eur,
            Currency::JPY => &self.jpy,
        }
    }

    /// (code, amount) per currency, for the template.
    pub(super) fn rows(&self) -> Vec<(&'static str, String)> {
        CURRENCIES
            .iter()
            .map(|c| (c.code(), self.amount(*c).to_string()))
            .collect()
    }
}

/// The thresholds of a draft whose rules hold an `[approval]` section; `None` for a
/// document without one (the form is not offered) or rules that do not parse yet.
pub(super) fn read(markdown: &str, rules: &str) -> Option<Thresholds> {
    let document = PolicyDocument::parse(markdown).ok()?;
    let approval = PolicyRules::parse(rules, &document).ok()?.approval?;
    let amount = |c: Currency| {
        approval
            .thresholds
            .get(&c)
            .map(Money::amount_string)
            .unwrap_or_default()
    };
    Some(Thresholds {
        up_to_threshold: approval.up_to_threshold.as_str().into(),
        above_threshold: approval.above_threshold.as_str().into(),
        cny: amount(Currency::CNY),
        usd: amount(Currency::USD),
        eur: amount(Currency::EUR),
        jpy: amount(Currency::JPY),
        effective_from: document.meta.effective_from.to_string(),
    })
}

/// The draft's rules with the form's values written in, checked field by field and then
/// through the engine's parser, and its text with the tables rendered from those rules
/// and the date set; the error names the field, in words.
pub(super) fn apply(markdown: &str, rules: &str, form: &Thresholds) -> Result<Written, String> {
    let role = |field: &str, value: &str| {
        value
            .trim()
            .parse::<Role>()
            .map(|r| r.as_str())
            .map_err(|_| format!("{field}: '{value}' is not agent, supervisor or admin"))
    };
    let up_to = role("up to the threshold", &form.up_to_threshold)?;
    let above = role("above the threshold", &form.above_threshold)?;
    let mut rules = set_key(rules, "approval", "up_to_threshold", up_to);
    rules = set_key(&rules, "approval", "above_threshold", above);
    for currency in CURRENCIES {
        let typed = form.amount(currency).trim();
        // Money::parse refuses what the engine would: a negative amount, more decimals
        // than the currency has (`150.5` JPY), or no number.
        let money = Money::parse(typed, currency).map_err(|e| {
            let code = currency.code();
            format!("{code}: '{typed}' is not a threshold in {code} ({e})")
        })?;
        rules = set_key(
            &rules,
            "approval.thresholds",
            currency.code(),
            &money.amount_string(),
        );
    }
    let markdown = match form.effective_from.trim() {
        "" => markdown.to_string(),
        typed => {
            let date = policy_engine::parse_date(typed)
                .map_err(|_| format!("in force from: '{typed}' is not a date (YYYY-MM-DD)"))?;
            set_front_matter(markdown, "effective_from", Some(&format!("\"{date}\"")))
        }
    };
    let document = PolicyDocument::parse(&markdown).map_err(|e| format!("the document: {e}"))?;
    let parsed = PolicyRules::parse(&rules, &document).map_err(|e| format!("the rules: {e}"))?;
    Ok(Written {
        markdown: agreement::render(&markdown, &parsed),
        rules,
    })
}

/// `rules` with `key = "value"` in `[section]`: the line replaced where it is, else
/// added at the section's end, else the section added at the end of the file.
fn set_key(rules: &str, section: &str, key: &str, value: &str) -> String {
    let line = format!("{key} = \"{value}\"");
    let header = format!("[{section}]");
    let mut out: Vec<String> = Vec::new();
    let (mut inside, mut done) = (false, false);
    for raw in rules.lines() {
        let trimmed = raw.trim();
        if trimmed.starts_with('[') {
            if inside && !done {
                insert_before_blank_tail(&mut out, &line);
                done = true;
            }
            inside = trimmed == header;
        } else if inside && !done && key_of(trimmed) == Some(key) {
            out.push(line.clone());
            done = true;
            continue;
        }
        out.push(raw.to_string());
    }
    if inside && !done {
        insert_before_blank_tail(&mut out, &line);
        done = true;
    }
    if !done {
        out.push(String::new());
        out.push(header);
        out.push(line);
    }
    let mut text = out.join("\n");
    if rules.ends_with('\n') {
        text.push('\n');
    }
    text
}

/// The key of a `key = value` line (`None` for comments and blank lines).
fn key_of(line: &str) -> Option<&str> {
    if line.starts_with('#') {
        return None;
    }
    let (key, _) = line.split_once('=')?;
    Some(key.trim().trim_matches('"'))
}

/// Adds `line` after the section's last non-blank line.
fn insert_before_blank_tail(out: &mut Vec<String>, line: &str) {
    let at = out
        .iter()
        .rposition(|l| !l.trim().is_empty())
        .map_or(out.len(), |i| i + 1);
    out.insert(at, line.to_string());
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULES: &str = include_str!("../../../fixtures/policies/RP-004-v2.rules.toml");
    const MARKDOWN: &str = include_str!("../../../fixtures/policies/RP-004-v2.md");

    fn form(up_to: &str, jpy: &str) -> Thresholds {
        Thresholds {
            up_to_threshold: up_to.into(),
            above_threshold: "supervisor".into(),
            cny: "800.00".into(),
            usd: "100.00".into(),
            eur: "100.00".into(),
            jpy: jpy.into(),
            effective_from: String::new(),
        }
    }

    #[test]
    fn the_form_reads_the_rules_and_writes_only_its_lines_back() {
        let read = read(MARKDOWN, RULES).expect("RP-004 has approval rules");
        assert_eq!(read.jpy, "15000");
        assert_eq!(read.up_to_threshold, "agent");
        let both = apply(MARKDOWN, RULES, &form("agent", "20000")).unwrap();
        let written = both.rules;
        assert!(written.contains("JPY = \"20000\"") && written.contains("CNY = \"800.00\""));
        assert!(!written.contains("JPY = \"15000\""));
        let kept: Vec<&str> = RULES.lines().filter(|l| l.starts_with('#')).collect();
        assert!(kept.iter().all(|c| written.contains(c)), "comments stay");
        assert_eq!(written.lines().count(), RULES.lines().count());
        assert_eq!(read_back(&written).jpy, "20000");
        // The text's table says what the rules say; nothing else in it moved.
        let expected = MARKDOWN
            .replace("| JPY | 15,000 |", "| JPY | 20,000 |")
            .replace("| CNY | 500.00 |", "| CNY | 800.00 |");
        assert_eq!(both.markdown, expected);
    }

    #[test]
    fn the_form_sets_the_date_the_version_goes_in_force() {
        let mut typed = form("agent", "15000");
        typed.effective_from = "2027-02-01".into();
        let both = apply(MARKDOWN, RULES, &typed).unwrap();
        assert_eq!(
            both.markdown,
            MARKDOWN
                .replace(
                    "effective_from = \"2026-07-01\"",
                    "effective_from = \"2027-02-01\""
                )
                .replace("| CNY | 500.00 |", "| CNY | 800.00 |")
        );
        typed.effective_from = "next week".into();
        let error = apply(MARKDOWN, RULES, &typed).unwrap_err();
        assert!(error.starts_with("in force from: 'next week'"), "{error}");
    }

    fn read_back(rules: &str) -> Thresholds {
        read(MARKDOWN, rules).unwrap()
    }

    #[test]
    fn bad_values_are_refused_naming_the_field() {
        let table = [
            (form("boss", "15000"), "up to the threshold: 'boss'"),
            (form("agent", "150.5"), "JPY: '150.5'"),
            (form("agent", "lots"), "JPY: 'lots'"),
            (form("agent", ""), "JPY: ''"),
        ];
        for (typed, starts) in table {
            let error = apply(MARKDOWN, RULES, &typed).unwrap_err();
            assert!(error.starts_with(starts), "{error}");
        }
    }

    #[test]
    fn a_missing_key_or_section_is_added() {
        let rules = set_key("policy = \"X@1\"\n", "approval.thresholds", "JPY", "1");
        assert_eq!(
            rules,
            "policy = \"X@1\"\n\n[approval.thresholds]\nJPY = \"1\"\n"
        );
        let rules = set_key("[a]\nx = \"1\"\n\n[b]\n", "a", "y", "2");
        assert_eq!(rules, "[a]\nx = \"1\"\ny = \"2\"\n\n[b]\n");
    }
}
