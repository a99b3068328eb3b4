//! Deterministic synthetic policy documents, for benchmarks and load tests.
//!
//! [`documents`] builds policy versions whose sections read like refund policy (policy
//! words with a skewed frequency plus a Zipf-like long tail of pseudo-words, so BM25
//! sees realistic term statistics), with varied dates, statuses, regions and products. The same seed
//! always gives the same documents, so no corpus is committed. [`queries`] gives a
//! matching query mix. Nothing here is meant to be read by people or to make sense as
//! policy; it never touches the disk.

use policy_engine::{PolicyDocument, PolicyMeta, PolicySection, PolicyStatus, Product, Region};
use time::{Date, Duration};

use crate::request::SearchQuery;

const VOCABULARY: &[&str] = &[
    "refund",
    "charge",
    "customer",
    "order",
    "policy",
    "days",
    "amount",
    "currency",
    "captured",
    "succeeded",
    "duplicate",
    "overcharge",
    "authorization",
    "hold",
    "released",
    "window",
    "reporting",
    "supervisor",
    "agent",
    "approval",
    "threshold",
    "dispute",
    "chargeback",
    "bank",
    "card",
    "issuer",
    "cancellation",
    "cooling",
    "period",
    "annual",
    "monthly",
    "plan",
    "addon",
    "region",
    "provider",
    "pending",
    "failed",
    "escalate",
    "escalated",
    "team",
    "payments",
    "security",
    "account",
    "verification",
    "records",
    "evidence",
    "ticket",
    "request",
    "purchase",
    "repeat",
    "accidental",
    "minutes",
    "business",
    "completed",
    "submitted",
    "verified",
    "timeout",
    "unknown",
    "method",
    "original",
    "difference",
    "exceed",
    "never",
    "always",
    "within",
    "after",
    "before",
    "calendar",
    "term",
    "delivered",
    "eligible",
    "partial",
    "full",
    "balance",
    "invoice",
    "receipt",
    "statement",
    "merchant",
    "settlement",
    "reversal",
    "credit",
    "debit",
    "transfer",
    "wallet",
    "voucher",
    "coupon",
    "discount",
    "promotion",
    "subscription",
    "renewal",
    "trial",
    "upgrade",
    "downgrade",
    "proration",
    "tax",
    "fee",
    "shipping",
    "return",
    "exchange",
    "warranty",
    "defect",
    "damage",
    "fraud",
    "identity",
    "consent",
    "notice",
    "appeal",
    "review",
    "audit",
    "exception",
    "limit",
    "quota",
    "schedule",
    "deadline",
    "holiday",
    "weekend",
    "timezone",
    "language",
    "translation",
    "channel",
    "email",
    "phone",
    "chat",
    "document",
    "attachment",
    "screenshot",
    "signature",
];

const TITLE_WORDS: &[&str] = &[
    "Definitions",
    "Remedy",
    "Scope",
    "Exceptions",
    "Eligibility",
    "Procedure",
    "Approval",
    "Window",
    "Evidence",
    "Escalation",
    "Communication",
    "Records",
    "Limits",
    "Disputes",
    "Holds",
    "Cancellation",
    "Renewals",
    "Fees",
    "Verification",
    "Appeals",
];

/// Size of the long tail of pseudo-words mixed into section text.
const RARE_WORDS: usize = 20_000;
const SYLLABLES: &[&str] = &[
    "ka", "lo", "mi", "re", "tu", "sa", "ne", "vo", "pi", "da", "ge", "ru", "bel", "tor", "sin",
    "mar",
];

/// The pseudo-word of a given rank: base-16 digits spelled as syllables, at least three.
fn pseudo_word(rank: usize) -> String {
    let mut word = String::new();
    let mut n = rank;
    for _ in 0..3 {
        word.push_str(SYLLABLES[n % SYLLABLES.len()]);
        n /= SYLLABLES.len();
    }
    while n > 0 {
        word.push_str(SYLLABLES[n % SYLLABLES.len()]);
        n /= SYLLABLES.len();
    }
    word
}

const REGIONS: [Region; 4] = [Region::CN, Region::US, Region::EU, Region::JP];
const PRODUCTS: [Product; 3] = [Product::AnnualPlan, Product::MonthlyPlan, Product::Addon];

/// SplitMix64: tiny, fast, and the same on every platform, which is all a fixture
/// generator needs (no `rand` dependency, no version-dependent streams).
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`); the modulo bias is irrelevant here.
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// Skewed towards low indexes: the minimum of two uniform draws.
    fn skewed(&mut self, n: usize) -> usize {
        self.below(n).min(self.below(n))
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    /// A policy word (skewed towards the front of [`VOCABULARY`]).
    fn word(&mut self) -> &'static str {
        VOCABULARY[self.skewed(VOCABULARY.len())]
    }

    /// A text token: two in three are policy words, the rest come from a long tail of
    /// [`RARE_WORDS`] pseudo-words with a log-uniform (Zipf-like) rank. Real policy text
    /// has thousands of distinct terms; 150 words alone would put every query term in
    /// most sections, which no real corpus does.
    fn token(&mut self) -> String {
        if self.chance(67) {
            return self.word().to_string();
        }
        let log_max = (RARE_WORDS as f64).ln();
        let unit = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        let rank = ((unit * log_max).exp() as usize).saturating_sub(1);
        pseudo_word(rank.min(RARE_WORDS - 1))
    }
}

fn base_day() -> Date {
    time::macros::date!(2024 - 01 - 01)
}

/// Policy documents holding exactly `section_count` sections in total (4–12 per
/// document), deterministically from `seed`. About 10% are drafts, 30% have an end date.
pub fn documents(seed: u64, section_count: usize) -> Vec<PolicyDocument> {
    let mut rng = SplitMix64(seed);
    let mut documents = Vec::new();
    let mut remaining = section_count;
    let mut number = 0usize;
    while remaining > 0 {
        number += 1;
        let sections_here = (4 + rng.below(9)).min(remaining);
        remaining -= sections_here;
        let effective_from = base_day() + Duration::days(rng.below(3 * 365) as i64);
        let effective_to = rng
            .chance(30)
            .then(|| effective_from + Duration::days(90 + rng.below(630) as i64));
        let mut regions: Vec<Region> = REGIONS.iter().copied().filter(|_| rng.chance(70)).collect();
        if regions.is_empty() {
            regions.push(REGIONS[rng.below(REGIONS.len())]);
        }
        let mut products: Vec<Product> = PRODUCTS
            .iter()
            .copied()
            .filter(|_| rng.chance(70))
            .collect();
        if products.is_empty() {
            products.push(PRODUCTS[rng.below(PRODUCTS.len())]);
        }
        let title = format!("{} and {}", capitalised(rng.word()), rng.word());
        let mut sections = Vec::with_capacity(sections_here);
        let mut body = String::new();
        for index in 1..=sections_here {
            let section_title = format!(
                "{} of {}",
                TITLE_WORDS[rng.below(TITLE_WORDS.len())],
                rng.word()
            );
            let words = 40 + rng.below(80);
            let mut text = String::with_capacity(words * 9);
            for w in 0..words {
                if w > 0 {
                    text.push(if rng.chance(8) { '\n' } else { ' ' });
                }
                text.push_str(&rng.token());
                if rng.chance(5) {
                    text.push_str(&format!(" {}", rng.below(365)));
                }
            }
            body.push_str(&format!("## {index}. {section_title}\n\n{text}\n\n"));
            sections.push(PolicySection {
                anchor: index.to_string(),
                title: section_title,
                text,
            });
        }
        documents.push(PolicyDocument {
            meta: PolicyMeta {
                id: format!("SYN-{number:05}"),
                version: 1 + rng.below(3) as u32,
                title,
                status: if rng.chance(10) {
                    PolicyStatus::Draft
                } else {
                    PolicyStatus::Published
                },
                effective_from,
                effective_to,
                regions,
                products,
                supersedes: None,
            },
            body,
            sections,
        });
    }
    documents
}

/// `count` queries in the style of [`documents`]: 1–4 words, sometimes a quoted phrase,
/// usually an `as_of` date, sometimes a region or product filter.
pub fn queries(seed: u64, count: usize) -> Vec<SearchQuery> {
    let mut rng = SplitMix64(seed ^ 0xA5A5_5A5A_0F0F_F0F0);
    (0..count)
        .map(|_| {
            let words: Vec<&str> = (0..1 + rng.below(4)).map(|_| rng.word()).collect();
            let text = if words.len() >= 2 && rng.chance(20) {
                format!("\"{} {}\" {}", words[0], words[1], words[2..].join(" "))
            } else {
                words.join(" ")
            };
            let mut query = SearchQuery::new(text);
            if rng.chance(80) {
                query.as_of = Some(base_day() + Duration::days(rng.below(4 * 365) as i64));
            }
            if rng.chance(40) {
                query.region = Some(REGIONS[rng.below(REGIONS.len())]);
            }
            if rng.chance(30) {
                query.product = Some(PRODUCTS[rng.below(PRODUCTS.len())]);
            }
            query
        })
        .collect()
}

fn capitalised(word: &str) -> String {
    let mut chars = word.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_documents() {
        assert_eq!(documents(7, 200), documents(7, 200));
        assert_ne!(documents(7, 200), documents(8, 200));
    }

    #[test]
    fn produces_exactly_the_requested_sections() {
        for n in [0, 1, 5, 13, 1000] {
            let total: usize = documents(1, n).iter().map(|d| d.sections.len()).sum();
            assert_eq!(total, n);
        }
    }

    #[test]
    fn documents_are_valid_policy_versions() {
        for doc in documents(3, 500) {
            assert!(!doc.meta.regions.is_empty() && !doc.meta.products.is_empty());
            if let Some(to) = doc.meta.effective_to {
                assert!(to >= doc.meta.effective_from);
            }
        }
    }

    #[test]
    fn pseudo_words_are_distinct() {
        let words: std::collections::HashSet<String> = (0..RARE_WORDS).map(pseudo_word).collect();
        assert_eq!(words.len(), RARE_WORDS);
    }

    #[test]
    fn same_seed_same_queries() {
        assert_eq!(queries(5, 50), queries(5, 50));
    }
}
