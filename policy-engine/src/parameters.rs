//! Policy parameters as data: the `*.rules.toml` file beside each policy version.
//!
//! The Markdown is the ground truth for people; the rules file states the same numbers
//! for the engine (windows, periods, thresholds) and maps each rule to the clause it
//! cites. No policy number is a constant in code: a new version is a new pair of files.
//! Parsing checks the file against its document: same `doc@version`, every clause
//! anchor resolves via [`PolicyDocument::section`], every region and currency covered.
//!
//! Families (one TOML table each; a file has the ones its policy defines):
//! `[charges]` (RP-001), `[cancellation]` (RP-002), `[holds]` (RP-003),
//! `[approval]` (RP-004), `[disputes]` (RP-006), `[ownership]` (RP-007).
//!
//! It decides nothing: the rules that read these numbers are in `rules/`, one file per
//! policy. A new rule's clause key goes in [`clause`] and in its family's required keys.

use std::collections::BTreeMap;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use time::Duration;

use crate::catalog::{Product, Region};
use crate::decision::{Role, Team};
use crate::document::PolicyDocument;
use crate::error::PolicyError;
use crate::money::{Currency, Money};

/// Clause keys: the names rules use in `[clauses]` to say which section they cite.
pub mod clause {
    // [charges]
    pub const DEFINITIONS: &str = "definitions";
    pub const REPEAT_PURCHASE: &str = "repeat_purchase";
    pub const DUPLICATE: &str = "duplicate";
    pub const OVERCHARGE: &str = "overcharge";
    pub const CURRENCY: &str = "currency";
    pub const CAP: &str = "cap";
    pub const WINDOW: &str = "window";
    pub const DIFFERENT_ORDERS: &str = "different_orders";
    pub const HOLD: &str = "hold";
    pub const DISPUTE: &str = "dispute";
    pub const AUTO_APPROVE: &str = "auto_approve";
    // [cancellation]; products without cooling-off cite the clause named after them
    pub const COOLING_OFF: &str = "cooling_off";
    pub const AMBIGUOUS_ORDER: &str = "ambiguous_order";
    // [holds]
    pub const HOLD_RELEASE: &str = "hold_release";
    pub const HOLD_OVERDUE: &str = "hold_overdue";
    // [approval]
    pub const THRESHOLD: &str = "threshold";
    pub const OUTSIDE_WINDOW_APPROVAL: &str = "outside_window_approval";
    // [disputes]
    pub const DISPUTE_ESCALATION: &str = "dispute_escalation";
    // [ownership]
    pub const OTHER_CUSTOMER: &str = "other_customer";
}

/// The validated parameters of one policy version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PolicyRules {
    /// `RP-001@2`: the version these rules belong to.
    pub policy: String,
    /// Rule key → section anchor (`"2.1"`), each resolvable in the document.
    pub clauses: BTreeMap<String, String>,
    pub charges: Option<ChargeRules>,
    pub cancellation: Option<CancellationRules>,
    pub holds: Option<HoldRules>,
    pub approval: Option<ApprovalRules>,
    pub disputes: Option<EscalationRules>,
    pub ownership: Option<EscalationRules>,
}

/// RP-001: duplicates, overcharges, repeat purchases and the reporting window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChargeRules {
    /// A report is in time when made less than `days × 24h` after the charge.
    pub reporting_window_days: u32,
    /// Orders created less than this many minutes apart can be a repeat purchase;
    /// `None` when the version has no such rule.
    pub repeat_purchase_window_minutes: Option<u32>,
    pub outside_window_escalate_to: Team,
    /// Duplicate refunds below these amounts need no human approval (draft only).
    pub auto_approve_below: BTreeMap<Currency, Money>,
}

impl ChargeRules {
    pub fn reporting_window(&self) -> Duration {
        Duration::days(i64::from(self.reporting_window_days))
    }

    pub fn repeat_purchase_window(&self) -> Option<Duration> {
        self.repeat_purchase_window_minutes
            .map(|m| Duration::minutes(i64::from(m)))
    }
}

/// RP-002: cooling-off refunds of cancellations.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CancellationRules {
    pub cooling_off_products: Vec<Product>,
    pub cooling_off_days: BTreeMap<Region, u32>,
}

/// RP-003: when the issuer releases a hold, per region.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HoldRules {
    pub overdue_escalate_to: Team,
    pub release: BTreeMap<Region, HoldRelease>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HoldRelease {
    /// As the customer is told: `"5 business days"`.
    pub text: String,
    /// Calendar days after which a hold still visible is overdue.
    pub days: u32,
}

/// RP-004: who may approve a refund.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ApprovalRules {
    pub up_to_threshold: Role,
    pub above_threshold: Role,
    pub outside_window: Role,
    pub thresholds: BTreeMap<Currency, Money>,
}

impl ApprovalRules {
    /// The role one refund of `amount` needs: up to the threshold inclusive, or above.
    pub fn role_for(&self, amount: &Money) -> Role {
        match self.thresholds.get(&amount.currency()) {
            Some(threshold) if amount.amount() <= threshold.amount() => self.up_to_threshold,
            _ => self.above_threshold,
        }
    }
}

/// RP-006 / RP-007: a rule whose only remedy is to hand the ticket to a team.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EscalationRules {
    pub escalate_to: Team,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRules {
    policy: String,
    charges: Option<RawCharges>,
    cancellation: Option<RawCancellation>,
    holds: Option<RawHolds>,
    approval: Option<RawApproval>,
    disputes: Option<EscalationRules>,
    ownership: Option<EscalationRules>,
    #[serde(default)]
    clauses: BTreeMap<String, String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCharges {
    reporting_window_days: u32,
    repeat_purchase_window_minutes: Option<u32>,
    outside_window_escalate_to: Team,
    #[serde(default)]
    auto_approve_below: BTreeMap<String, String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCancellation {
    cooling_off_products: Vec<Product>,
    cooling_off_days: BTreeMap<String, u32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHolds {
    overdue_escalate_to: Team,
    release: BTreeMap<String, HoldRelease>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawApproval {
    up_to_threshold: Role,
    above_threshold: Role,
    outside_window: Role,
    thresholds: BTreeMap<String, String>,
}

impl PolicyRules {
    /// Parses a rules file and checks it against the document it sits beside. Each
    /// family present adds the clause keys its rules cite; all must be mapped.
    pub fn parse(source: &str, document: &PolicyDocument) -> Result<Self, PolicyError> {
        let raw: RawRules =
            toml::from_str(source).map_err(|e| PolicyError::Rules(e.to_string()))?;
        let version = document.meta.version_ref();
        let err = |msg: String| PolicyError::Rules(format!("{version}: {msg}"));
        if raw.policy != version {
            return Err(err(format!("file says policy = '{}'", raw.policy)));
        }
        for (key, anchor) in &raw.clauses {
            if document.section(anchor).is_none() {
                return Err(err(format!(
                    "clause '{key}' cites section '{anchor}', which the document does not have"
                )));
            }
        }
        let mut required: Vec<&str> = Vec::new();
        let charges = raw
            .charges
            .map(|c| ChargeRules::parse(c, &mut required))
            .transpose()
            .map_err(err)?;
        let cancellation = raw
            .cancellation
            .map(|c| CancellationRules::parse(c, &mut required))
            .transpose()
            .map_err(err)?;
        let holds = raw
            .holds
            .map(|h| HoldRules::parse(h, &mut required))
            .transpose()
            .map_err(err)?;
        let approval = raw
            .approval
            .map(|a| ApprovalRules::parse(a, &mut required))
            .transpose()
            .map_err(err)?;
        if raw.disputes.is_some() {
            required.push(clause::DISPUTE_ESCALATION);
        }
        if raw.ownership.is_some() {
            required.push(clause::OTHER_CUSTOMER);
        }
        if let Some(key) = required.iter().find(|key| !raw.clauses.contains_key(**key)) {
            return Err(err(format!("[clauses] is missing '{key}'")));
        }
        Ok(PolicyRules {
            policy: raw.policy,
            clauses: raw.clauses,
            charges,
            cancellation,
            holds,
            approval,
            disputes: raw.disputes,
            ownership: raw.ownership,
        })
    }

    /// The anchor a rule cites (`"2.1"`), if the file maps it.
    pub fn clause(&self, key: &str) -> Option<&str> {
        self.clauses.get(key).map(String::as_str)
    }
}

impl ChargeRules {
    /// RP-001's `[charges]`, and the clause keys its rules cite.
    fn parse(c: RawCharges, required: &mut Vec<&'static str>) -> Result<Self, String> {
        if c.reporting_window_days == 0 {
            return Err("reporting_window_days must be positive".into());
        }
        if c.repeat_purchase_window_minutes == Some(0) {
            return Err("repeat_purchase_window_minutes must be positive".into());
        }
        required.extend([
            clause::DEFINITIONS,
            clause::DUPLICATE,
            clause::OVERCHARGE,
            clause::CURRENCY,
            clause::CAP,
            clause::WINDOW,
            clause::DIFFERENT_ORDERS,
            clause::HOLD,
            clause::DISPUTE,
        ]);
        if c.repeat_purchase_window_minutes.is_some() {
            required.push(clause::REPEAT_PURCHASE);
        }
        if !c.auto_approve_below.is_empty() {
            required.push(clause::AUTO_APPROVE);
        }
        Ok(ChargeRules {
            reporting_window_days: c.reporting_window_days,
            repeat_purchase_window_minutes: c.repeat_purchase_window_minutes,
            outside_window_escalate_to: c.outside_window_escalate_to,
            auto_approve_below: money_table(&c.auto_approve_below, false)
                .map_err(|e| format!("auto_approve_below: {e}"))?,
        })
    }
}

impl CancellationRules {
    /// RP-002's `[cancellation]`; a product without cooling-off cites the clause named
    /// after it.
    fn parse(c: RawCancellation, required: &mut Vec<&'static str>) -> Result<Self, String> {
        let days =
            region_table(c.cooling_off_days).map_err(|e| format!("cooling_off_days: {e}"))?;
        if days.values().any(|d| *d == 0) {
            return Err("cooling_off_days must be positive".into());
        }
        required.extend([clause::COOLING_OFF, clause::AMBIGUOUS_ORDER]);
        for product in Product::ALL {
            if !c.cooling_off_products.contains(&product) {
                required.push(product.as_str());
            }
        }
        Ok(CancellationRules {
            cooling_off_products: c.cooling_off_products,
            cooling_off_days: days,
        })
    }
}

impl HoldRules {
    /// RP-003's `[holds]`: a text and positive days for every region.
    fn parse(h: RawHolds, required: &mut Vec<&'static str>) -> Result<Self, String> {
        let release = region_table(h.release).map_err(|e| format!("holds.release: {e}"))?;
        if release
            .values()
            .any(|r| r.days == 0 || r.text.trim().is_empty())
        {
            return Err("every hold release needs a text and positive days".into());
        }
        required.extend([clause::HOLD_RELEASE, clause::HOLD_OVERDUE]);
        Ok(HoldRules {
            overdue_escalate_to: h.overdue_escalate_to,
            release,
        })
    }
}

impl ApprovalRules {
    /// RP-004's `[approval]`: a threshold for every currency.
    fn parse(a: RawApproval, required: &mut Vec<&'static str>) -> Result<Self, String> {
        required.extend([clause::THRESHOLD, clause::OUTSIDE_WINDOW_APPROVAL]);
        Ok(ApprovalRules {
            up_to_threshold: a.up_to_threshold,
            above_threshold: a.above_threshold,
            outside_window: a.outside_window,
            thresholds: money_table(&a.thresholds, true)
                .map_err(|e| format!("approval.thresholds: {e}"))?,
        })
    }
}

/// `{ CNY = "1000.00", ... }` → money per currency; `complete` demands every currency.
fn money_table(
    raw: &BTreeMap<String, String>,
    complete: bool,
) -> Result<BTreeMap<Currency, Money>, PolicyError> {
    let mut table = BTreeMap::new();
    for (code, amount) in raw {
        let currency = Currency::from_str(code)?;
        table.insert(currency, Money::parse(amount, currency)?);
    }
    if complete {
        for currency in [Currency::CNY, Currency::USD, Currency::EUR, Currency::JPY] {
            if !table.contains_key(&currency) {
                return Err(PolicyError::Rules(format!("no entry for {currency}")));
            }
        }
    }
    Ok(table)
}

/// `{ CN = .., US = .. }` → a value per region; every region must be present.
fn region_table<T>(raw: BTreeMap<String, T>) -> Result<BTreeMap<Region, T>, PolicyError> {
    let mut table = BTreeMap::new();
    for (code, value) in raw {
        table.insert(Region::from_str(&code)?, value);
    }
    for region in Region::ALL {
        if !table.contains_key(&region) {
            return Err(PolicyError::Rules(format!("no entry for region {region}")));
        }
    }
    Ok(table)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{fixture_sources, source};

    fn doc(name: &str) -> PolicyDocument {
        PolicyDocument::parse(&source(name).markdown).unwrap()
    }

    #[test]
    fn every_fixture_rules_file_parses_against_its_document() {
        for s in fixture_sources() {
            if let Some(rules) = &s.rules {
                let document = PolicyDocument::parse(&s.markdown).unwrap();
                let parsed = PolicyRules::parse(rules, &document);
                assert!(parsed.is_ok(), "{}: {parsed:?}", s.name);
            }
        }
    }

    #[test]
    fn fixture_rules_state_the_numbers_of_the_policy_texts() {
        let v1 = PolicyRules::parse(
            source("RP-001-v1.md").rules.as_deref().unwrap(),
            &doc("RP-001-v1.md"),
        )
        .unwrap();
        let v2 = PolicyRules::parse(
            source("RP-001-v2.md").rules.as_deref().unwrap(),
            &doc("RP-001-v2.md"),
        )
        .unwrap();
        let v3 = PolicyRules::parse(
            source("RP-001-v3-draft.md").rules.as_deref().unwrap(),
            &doc("RP-001-v3-draft.md"),
        )
        .unwrap();
        let (c1, c2, c3) = (
            v1.charges.unwrap(),
            v2.charges.unwrap(),
            v3.charges.unwrap(),
        );
        assert_eq!(c1.reporting_window_days, 180);
        assert_eq!(c1.repeat_purchase_window_minutes, None);
        assert_eq!(c2.reporting_window_days, 120);
        assert_eq!(c2.repeat_purchase_window_minutes, Some(10));
        assert_eq!(c3.reporting_window_days, 365);
        assert_eq!(
            c3.auto_approve_below[&Currency::USD].amount_string(),
            "50.00"
        );

        let a1 = PolicyRules::parse(
            source("RP-004-v1.md").rules.as_deref().unwrap(),
            &doc("RP-004-v1.md"),
        )
        .unwrap()
        .approval
        .unwrap();
        let a2 = PolicyRules::parse(
            source("RP-004-v2.md").rules.as_deref().unwrap(),
            &doc("RP-004-v2.md"),
        )
        .unwrap()
        .approval
        .unwrap();
        let shown = |a: &ApprovalRules| {
            [Currency::CNY, Currency::USD, Currency::EUR, Currency::JPY]
                .map(|c| a.thresholds[&c].amount_string())
        };
        assert_eq!(shown(&a1), ["1000.00", "150.00", "150.00", "20000"]);
        assert_eq!(shown(&a2), ["500.00", "100.00", "100.00", "15000"]);

        let c = PolicyRules::parse(
            source("RP-002-v1.md").rules.as_deref().unwrap(),
            &doc("RP-002-v1.md"),
        )
        .unwrap()
        .cancellation
        .unwrap();
        let days: Vec<_> = Region::ALL.map(|r| c.cooling_off_days[&r]).to_vec();
        assert_eq!(days, [7, 30, 14, 8]); // CN, US, EU, JP

        let h = PolicyRules::parse(
            source("RP-003-v1.md").rules.as_deref().unwrap(),
            &doc("RP-003-v1.md"),
        )
        .unwrap()
        .holds
        .unwrap();
        assert_eq!(h.release[&Region::US].text, "5 business days");
        assert_eq!(h.release[&Region::CN].text, "7 days");
    }

    #[test]
    fn rejects_rules_that_do_not_match_their_document() {
        let d = doc("RP-001-v2.md");
        let good = source("RP-001-v2.md").rules.unwrap();
        let cases = [
            ("wrong version", good.replace("RP-001@2", "RP-001@1")),
            (
                "unknown section",
                good.replace("window = \"3\"", "window = \"9\""),
            ),
            ("missing clause", good.replace("cap = \"2.4\"", "")),
            ("unknown key", format!("{good}\n[extra]\nx = 1\n")),
            (
                "zero window",
                good.replace("reporting_window_days = 120", "reporting_window_days = 0"),
            ),
            ("not toml", "policy = ".to_string()),
        ];
        for (what, text) in cases {
            assert!(PolicyRules::parse(&text, &d).is_err(), "{what}");
        }
    }

    #[test]
    fn rejects_thresholds_that_miss_a_currency_or_are_overprecise() {
        let d = doc("RP-004-v2.md");
        let good = source("RP-004-v2.md").rules.unwrap();
        assert!(PolicyRules::parse(&good.replace("JPY = \"15000\"", ""), &d).is_err());
        assert!(
            PolicyRules::parse(&good.replace("JPY = \"15000\"", "JPY = \"15000.5\""), &d).is_err()
        );
        assert!(PolicyRules::parse(&good.replace("CNY", "XXX"), &d).is_err());
    }

    #[test]
    fn role_for_compares_inclusively_with_the_threshold() {
        let a = PolicyRules::parse(
            source("RP-004-v2.md").rules.as_deref().unwrap(),
            &doc("RP-004-v2.md"),
        )
        .unwrap()
        .approval
        .unwrap();
        let m = |s, c| Money::parse(s, c).unwrap();
        assert_eq!(a.role_for(&m("100.00", Currency::USD)), Role::Agent);
        assert_eq!(a.role_for(&m("100.01", Currency::USD)), Role::Supervisor);
        assert_eq!(a.role_for(&m("15000", Currency::JPY)), Role::Agent);
        assert_eq!(a.role_for(&m("15001", Currency::JPY)), Role::Supervisor);
    }
}
