//! Test fixtures: the real policy files, embedded at compile time, and a facts builder.

use time::OffsetDateTime;

use crate::catalog::{Product, Region};
use crate::facts::{
    ChargeFacts, ChargeStatus, CustomerFacts, Facts, OrderFacts, Ownership, RequestKind,
};
use crate::money::Money;
use crate::policy_set::{PolicySet, PolicySource};

macro_rules! policy {
    ($name:literal) => {
        (
            $name,
            include_str!(concat!("../../fixtures/policies/", $name, ".md")),
            None::<&str>,
        )
    };
    ($name:literal, rules) => {
        (
            $name,
            include_str!(concat!("../../fixtures/policies/", $name, ".md")),
            Some(include_str!(concat!(
                "../../fixtures/policies/",
                $name,
                ".rules.toml"
            ))),
        )
    };
}

const FIXTURES: [(&str, &str, Option<&str>); 10] = [
    policy!("RP-001-v1", rules),
    policy!("RP-001-v2", rules),
    policy!("RP-001-v3-draft", rules),
    policy!("RP-002-v1", rules),
    policy!("RP-003-v1", rules),
    policy!("RP-004-v1", rules),
    policy!("RP-004-v2", rules),
    policy!("RP-005-v1"),
    policy!("RP-006-v1", rules),
    policy!("RP-007-v1", rules),
];

pub fn fixture_sources() -> Vec<PolicySource> {
    FIXTURES
        .iter()
        .map(|(name, markdown, rules)| PolicySource {
            name: format!("{name}.md"),
            markdown: markdown.to_string(),
            rules: rules.map(str::to_string),
        })
        .collect()
}

/// One fixture source by file name (`RP-001-v2.md`).
pub fn source(name: &str) -> PolicySource {
    fixture_sources()
        .into_iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no fixture {name}"))
}

pub fn fixture_set() -> PolicySet {
    PolicySet::from_sources(fixture_sources()).expect("the fixture policies are valid")
}

pub fn at(rfc3339: &str) -> OffsetDateTime {
    OffsetDateTime::parse(rfc3339, &time::format_description::well_known::Rfc3339)
        .unwrap_or_else(|e| panic!("{rfc3339}: {e}"))
}

pub fn money(amount: &str, currency: crate::money::Currency) -> Money {
    Money::parse(amount, currency).unwrap()
}

/// A captured, succeeded, undisputed charge with nothing refunded.
pub fn charge(id: &str, amount: Money, created_at: &str) -> ChargeFacts {
    ChargeFacts {
        id: id.into(),
        amount,
        captured: true,
        status: ChargeStatus::Succeeded,
        disputed: false,
        created_at: at(created_at),
        payment_method: format!("pm_{id}"),
        amount_refunded: Money::zero(amount.currency()),
        refunds: vec![],
    }
}

pub fn hold(id: &str, amount: Money, created_at: &str) -> ChargeFacts {
    ChargeFacts {
        captured: false,
        ..charge(id, amount, created_at)
    }
}

pub fn order(
    id: &str,
    product: Product,
    amount: Money,
    created_at: &str,
    charges: Vec<ChargeFacts>,
) -> OrderFacts {
    OrderFacts {
        id: id.into(),
        product,
        amount,
        created_at: at(created_at),
        charges,
    }
}

pub fn facts(
    region: Region,
    request: RequestKind,
    order_id: Option<&str>,
    reported_at: &str,
    orders: Vec<OrderFacts>,
) -> Facts {
    Facts {
        reported_at: at(reported_at),
        customer: CustomerFacts {
            id: "C-1".into(),
            region,
        },
        request,
        order_id: order_id.map(str::to_string),
        order_ownership: Ownership::Owned,
        repeat_of: None,
        orders,
    }
}

/// The demo scenario of `fixtures/billing/demo.json` (customer C-100).
pub fn demo_facts() -> Facts {
    let cny = |s| money(s, crate::money::Currency::CNY);
    let mut f = facts(
        Region::CN,
        RequestKind::DuplicateCharge,
        Some("O-1001"),
        "2026-11-29T10:00:00Z",
        vec![order(
            "O-1001",
            Product::AnnualPlan,
            cny("198.00"),
            "2026-11-20T09:00:00Z",
            vec![
                charge("ch_1001a", cny("198.00"), "2026-11-20T09:00:05Z"),
                charge("ch_1001b", cny("198.00"), "2026-11-20T09:01:10Z"),
            ],
        )],
    );
    f.customer.id = "C-100".into();
    for c in &mut f.orders[0].charges {
        c.payment_method = "pm_card_unionpay_6212".into();
    }
    f
}
