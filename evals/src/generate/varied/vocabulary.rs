//! The varied style's vocabulary: the phrase banks (data, `evals/history/phrases/`), the
//! six order-id schemes, and the ways a customer identifies an order.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::super::rng::SplitMix64;

/// The phrase banks, shipped as data files: the first three first (the external
/// sentences are written in them), then the seven added after them.
const BANKS: [&str; 10] = [
    include_str!("../../../history/phrases/en.json"),
    include_str!("../../../history/phrases/zh.json"),
    include_str!("../../../history/phrases/ja.json"),
    include_str!("../../../history/phrases/de.json"),
    include_str!("../../../history/phrases/fr.json"),
    include_str!("../../../history/phrases/es.json"),
    include_str!("../../../history/phrases/it.json"),
    include_str!("../../../history/phrases/nl.json"),
    include_str!("../../../history/phrases/pt.json"),
    include_str!("../../../history/phrases/ko.json"),
];

#[derive(Debug, Deserialize)]
pub(super) struct Bank {
    pub(super) language: String,
    pub(super) complaint: BTreeMap<String, Vec<String>>,
    pub(super) vague: Vec<String>,
    pub(super) follow_up: Vec<String>,
    #[serde(rename = "ref")]
    pub(super) refs: Refs,
    pub(super) extra: Vec<String>,
    pub(super) greeting: Vec<String>,
    /// Month names a date is written with (the languages of the later banks).
    #[serde(default)]
    pub(super) months: Vec<String>,
    /// Whether amounts are written `12,99` rather than `12.99`.
    #[serde(default)]
    pub(super) decimal_comma: bool,
}

#[derive(Debug, Deserialize)]
pub(super) struct Refs {
    pub(super) id: Vec<String>,
    pub(super) generic: Vec<String>,
    pub(super) product: BTreeMap<String, Vec<String>>,
    pub(super) amount: Vec<String>,
    pub(super) date: Vec<String>,
}

pub(super) fn banks() -> Vec<Bank> {
    BANKS
        .iter()
        .map(|text| serde_json::from_str(text).expect("the phrase banks ship as valid JSON"))
        .collect()
}

/// How a world's order ids look.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Scheme {
    /// `O-0001-2`: a base and a sequence; siblings share the base.
    Dashed,
    /// `#10234`; some ids are prefixes of others (`#1023`).
    Hash,
    /// `ORD-2025-000123`.
    Dated,
    /// `7000024`.
    Numeric,
    /// `MX5H38`.
    Code,
    /// `O-1001`, the fixtures' style.
    Shop,
}

pub(super) const SCHEMES: [(Scheme, &str); 6] = [
    (Scheme::Dashed, "dashed"),
    (Scheme::Hash, "hash"),
    (Scheme::Dated, "dated"),
    (Scheme::Numeric, "numeric"),
    (Scheme::Code, "code"),
    (Scheme::Shop, "shop"),
];

/// How the customer identifies the order.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Ident {
    Id,
    Form,
    Product,
    Amount,
    Date,
    /// Nothing written: the records show which order has the problem.
    Records,
    /// Nothing written: it is their only order.
    Only,
    /// Nothing written and several orders: nobody can tell.
    Nothing,
}

impl Ident {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Ident::Id => "id",
            Ident::Form => "form",
            Ident::Product => "product",
            Ident::Amount => "amount",
            Ident::Date => "date",
            Ident::Records => "records",
            Ident::Only => "only_order",
            Ident::Nothing => "nothing",
        }
    }
}

impl SplitMix64 {
    pub(super) fn pick_str<'a>(&mut self, items: &'a [String]) -> &'a str {
        &items[self.below(items.len() as u64) as usize]
    }
}
