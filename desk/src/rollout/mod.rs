//! Rolling the agent out: a mode per scope — `shadow`, `canary` at a
//! percentage, `assist` — stored (`modes`), and guards computed from the records that
//! demote a scope to `shadow` on their own (`guards`).
//!
//! The rollout decides only whose proposal a reviewer works from: the agent's (assist, a
//! canary's share) or none (shadow and the rest of a canary, where the reviewer decides
//! blind, as live shadow mode does). It never decides whether money needs an approval:
//! in every mode a human approves every refund (RP-004, docs/spec/invariants.md #1). This module
//! writes `rollout_modes`, `rollout_cases` and `rollout_evaluations` and no other table
//! (audit lines go through `audit`).

pub mod guards;
pub mod modes;

use std::fmt;

use policy_engine::{Product, Region, RequestKind};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::{DomainError, DomainResult, ErrorCode};

/// What a mode applies to. The most specific scope that has a row wins, in this order:
/// request kind, then product, then region, then all tickets (`Scope::specificity`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scope {
    All,
    Region(Region),
    Product(Product),
    Request(RequestKind),
}

impl Scope {
    /// Higher wins: a request kind is the narrowest thing a scope names.
    pub fn specificity(self) -> u8 {
        match self {
            Scope::All => 0,
            Scope::Region(_) => 1,
            Scope::Product(_) => 2,
            Scope::Request(_) => 3,
        }
    }

    /// Parses `all`, `region:EU`, `product:annual_plan`, `request:duplicate_charge`.
    pub fn parse(text: &str) -> DomainResult<Scope> {
        let bad = || {
            DomainError::bad_request(
                ErrorCode::InvalidScope,
                format!(
                    "unknown scope '{text}': use all, region:CN|US|EU|JP, \
                     product:annual_plan|monthly_plan|addon or request:<request kind>"
                ),
            )
        };
        let text = text.trim();
        if text == "all" {
            return Ok(Scope::All);
        }
        let (kind, name) = text.split_once(':').ok_or_else(bad)?;
        match kind {
            "region" => name.parse().map(Scope::Region).map_err(|_| bad()),
            "product" => name.parse().map(Scope::Product).map_err(|_| bad()),
            "request" => serde_json::from_value(serde_json::Value::String(name.into()))
                .map(Scope::Request)
                .map_err(|_| bad()),
            _ => Err(bad()),
        }
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scope::All => f.write_str("all"),
            Scope::Region(r) => write!(f, "region:{}", r.code()),
            Scope::Product(p) => write!(f, "product:{}", p.as_str()),
            Scope::Request(k) => write!(f, "request:{}", k.as_str()),
        }
    }
}

/// How the agent works in a scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The agent runs blind; reviewers decide by hand (live shadow mode).
    Shadow,
    /// A deterministic share of new cases (`percent` of 100) gets the agent's proposal.
    Canary { percent: u8 },
    /// Every case gets the agent's proposal.
    Assist,
}

/// A mode's name as the API, the pages and `rollout_cases.mode` carry it (`Mode` also
/// carries a canary's percent).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ModeName {
    Shadow,
    Canary,
    Assist,
}

impl ModeName {
    pub fn as_str(self) -> &'static str {
        match self {
            ModeName::Shadow => "shadow",
            ModeName::Canary => "canary",
            ModeName::Assist => "assist",
        }
    }

    /// A stored name; anything else is a typed error naming it.
    pub fn parse(name: &str) -> DomainResult<ModeName> {
        match name {
            "shadow" => Ok(ModeName::Shadow),
            "canary" => Ok(ModeName::Canary),
            "assist" => Ok(ModeName::Assist),
            other => Err(DomainError::bad_request(
                ErrorCode::InvalidMode,
                format!("unknown mode '{other}': use shadow, canary or assist"),
            )),
        }
    }
}

impl fmt::Display for ModeName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Mode {
    /// Builds a mode from its name and a percentage (canary only, 1..=99).
    pub fn parse(name: &str, percent: Option<i64>) -> DomainResult<Mode> {
        match (name.trim(), percent) {
            ("shadow", None) => Ok(Mode::Shadow),
            ("assist", None) => Ok(Mode::Assist),
            ("canary", Some(p)) if (1..=99).contains(&p) => Ok(Mode::Canary { percent: p as u8 }),
            ("canary", _) => Err(DomainError::bad_request(
                ErrorCode::InvalidPercent,
                "canary takes a percent from 1 to 99",
            )),
            ("shadow" | "assist", Some(_)) => Err(DomainError::bad_request(
                ErrorCode::InvalidPercent,
                "only canary takes a percent",
            )),
            (other, _) => Err(DomainError::bad_request(
                ErrorCode::InvalidMode,
                format!("unknown mode '{other}': use shadow, canary or assist"),
            )),
        }
    }

    pub fn name(self) -> &'static str {
        self.kind().as_str()
    }

    /// Its name without the percent.
    pub fn kind(self) -> ModeName {
        match self {
            Mode::Shadow => ModeName::Shadow,
            Mode::Canary { .. } => ModeName::Canary,
            Mode::Assist => ModeName::Assist,
        }
    }

    pub fn percent(self) -> Option<u8> {
        match self {
            Mode::Canary { percent } => Some(percent),
            _ => None,
        }
    }

    /// Whether a case with this id gets the agent's proposal in this mode.
    pub fn gives_proposal(self, case_id: &str) -> bool {
        match self {
            Mode::Shadow => false,
            Mode::Assist => true,
            Mode::Canary { percent } => in_canary(case_id, percent),
        }
    }

    /// The mode the start-up switch gives scopes without a row (`SHADOW_MODE`).
    pub fn default_for(shadow_mode: bool) -> Mode {
        if shadow_mode {
            Mode::Shadow
        } else {
            Mode::Assist
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Mode::Canary { percent } => write!(f, "canary {percent}%"),
            other => f.write_str(other.name()),
        }
    }
}

/// Whether a case falls in a canary's share: the first 8 bytes of SHA-256 of its id, mod
/// 10 000, below `percent` × 100. A stable hash (not `DefaultHasher`, whose output may
/// change between builds), so every instance sharing a database agrees.
pub fn in_canary(case_id: &str, percent: u8) -> bool {
    let digest = Sha256::digest(case_id.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_be_bytes(first) % 10_000 < u64::from(percent) * 100
}

/// What a case is about, as far as it is known: the region always, the product once the
/// order is known, the request kind once the agent has proposed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Subject {
    pub region: Option<Region>,
    pub product: Option<Product>,
    pub request: Option<RequestKind>,
}

impl Subject {
    /// The scopes that apply to this subject, most specific first.
    pub fn scopes(&self) -> Vec<Scope> {
        let mut scopes = Vec::with_capacity(4);
        scopes.extend(self.request.map(Scope::Request));
        scopes.extend(self.product.map(Scope::Product));
        scopes.extend(self.region.map(Scope::Region));
        scopes.push(Scope::All);
        scopes
    }

    /// The subject the decision's facts name.
    pub fn of_facts(facts: &policy_engine::Facts) -> Subject {
        let product = facts
            .order_id
            .as_deref()
            .and_then(|id| facts.orders.iter().find(|o| o.id == id).map(|o| o.product));
        Subject {
            region: Some(facts.customer.region),
            product,
            request: Some(facts.request),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_round_trip_through_their_names() {
        for text in [
            "all",
            "region:EU",
            "product:annual_plan",
            "request:duplicate_charge",
        ] {
            assert_eq!(Scope::parse(text).unwrap().to_string(), text);
        }
        for bad in [
            "",
            "region:XX",
            "product:",
            "request:refund_me",
            "colour:red",
        ] {
            assert!(Scope::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn canary_takes_a_percent_from_one_to_ninety_nine_and_nothing_else_does() {
        assert_eq!(
            Mode::parse("canary", Some(10)).unwrap(),
            Mode::Canary { percent: 10 }
        );
        for (name, percent) in [
            ("canary", None),
            ("canary", Some(0)),
            ("canary", Some(100)),
            ("assist", Some(5)),
            ("full", None),
        ] {
            assert!(Mode::parse(name, percent).is_err(), "{name} {percent:?}");
        }
    }

    #[test]
    fn the_canary_share_is_a_fixed_function_of_the_case_id() {
        // Pinned values (sha256 → first 8 bytes → mod 10 000: case_0 is 3957, case_1 is
        // 54): a change of hash would move live cases between the halves.
        assert!(!in_canary("case_0", 39) && in_canary("case_0", 40));
        assert!(in_canary("case_1", 1));
        let share = (0..10_000)
            .filter(|i| in_canary(&format!("case_{i}"), 20))
            .count();
        assert!((1_800..2_200).contains(&share), "{share}");
        // A case in a 10 % canary stays in when the canary grows.
        for i in 0..1_000 {
            let id = format!("case_{i}");
            assert!(!in_canary(&id, 10) || in_canary(&id, 30));
        }
    }

    #[test]
    fn the_most_specific_scope_comes_first() {
        let subject = Subject {
            region: Some(Region::EU),
            product: Some(Product::AnnualPlan),
            request: Some(RequestKind::DuplicateCharge),
        };
        let specificity: Vec<u8> = subject.scopes().iter().map(|s| s.specificity()).collect();
        assert_eq!(specificity, vec![3, 2, 1, 0]);
    }
}

/// One scope as `GET /api/v1/rollout` and the console show it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ScopeStatus {
    /// `all`, `region:EU`, `product:annual_plan`, `request:duplicate_charge`.
    pub scope: String,
    pub mode: ModeName,
    pub percent: Option<u8>,
    /// Who set it: a staff id, `cli`, or `guard:<name>` for a demotion.
    pub updated_by: String,
    pub reason: String,
    /// Unix milliseconds.
    pub updated_at: i64,
    pub guards: Vec<guards::Reading>,
}

/// The rollout as it stands: the start-up default and each scope with its guards.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct RolloutStatus {
    /// The mode of every case no scope row applies to (`SHADOW_MODE`: on → shadow, off →
    /// assist).
    pub default_mode: ModeName,
    /// How often the guards are evaluated, in milliseconds of the app clock.
    pub evaluation_period_ms: i64,
    /// Scopes with a mode of their own, most specific first.
    pub scopes: Vec<ScopeStatus>,
}

/// Reads each scope's mode and each guard's value now (nothing is written).
pub async fn status(
    db: &store::Db,
    thresholds: &guards::Guards,
    default: Mode,
    now: i64,
) -> DomainResult<RolloutStatus> {
    let mut scopes = Vec::new();
    for m in modes::list(db).await? {
        scopes.push(ScopeStatus {
            scope: m.scope.to_string(),
            mode: m.mode.kind(),
            percent: m.mode.percent(),
            updated_by: m.updated_by,
            reason: m.reason,
            updated_at: m.updated_at,
            guards: guards::read(db, m.scope, thresholds, m.updated_at, now).await?,
        });
    }
    Ok(RolloutStatus {
        default_mode: default.kind(),
        evaluation_period_ms: guards::EVALUATION_PERIOD_MS,
        scopes,
    })
}
