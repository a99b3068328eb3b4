//! Large, deterministic sets of historical tickets (docs/spec/interfaces.md "Files") for load: the
//! shadow-replay benchmark (`app/benches/product/`) and anyone who needs thousands of
//! realistic tickets rather than the 70 hand-labelled ones in `fixtures/history/`.
//!
//! Each ticket has its own small billing world (a customer, one to three orders, their
//! charges and refunds, sometimes another customer's order) drawn from a scenario mix
//! that covers every region (CN, US, EU, JP — so CNY, USD, EUR and JPY), every product,
//! every reason code, and dates on both sides of 2026-07-01, so both RP-001 versions
//! (and RP-004 versions) are in force for some tickets. Messages are English or Chinese.
//!
//! **How the labels are made, and what that means.** The `human` decision of each ticket
//! is *computed*: the facts its world implies are gathered by `workflow::gather_facts`
//! (over a `WorldBilling` snapshot, exactly as a replay gathers them) for the request
//! kind and order the scenario intends, and `policy_engine::decide` labels them under
//! the versions in force on the ticket's date. The labels are therefore policy-correct
//! by construction — they are not an independent check of the policy engine (that is
//! what the hand-written `evals/history/generate.py` fixture is for). Agreement with
//! them measures only whether the investigator read the request and the order as the
//! scenario meant; use these sets for load and growth curves, not for accuracy claims.
//!
//! `varied` (the `--style varied` of `generate-history`) rewrites these worlds and texts
//! so that they vary independently of the investigator: id schemes and id forms, many
//! orders, phrase and mail-form banks in ten languages kept as data, follow-ups, typos
//! (see `varied`).
//!
//! Deterministic: the same `(seed, n)` gives the same tickets, byte for byte, on every
//! machine (a SplitMix64 stream, no clock, no `HashMap` iteration). What this module
//! does not do: touch a database, a provider or the network.

use policy_engine::PolicySet;
use shadow::replay::HistoricalTicket;

mod draft;
mod mix;
mod rng;
mod varied;
pub mod zendesk;

use draft::Draft;
pub use draft::DECIDED_BY;
use rng::SplitMix64;
pub use varied::{
    varied_history, varied_history_from, varied_history_iter, varied_history_with, ComplaintBank,
};

/// `n` tickets from `seed`, labelled under the policies shipped in `fixtures/policies/`.
///
/// Panics if the fixture policies cannot be read: this is a load generator for benches
/// and tests run from a checkout, not a request path. Use [`history_with`] to pass a
/// policy set explicitly.
pub fn history(seed: u64, n: usize) -> Vec<HistoricalTicket> {
    let dir = desk::config::default_fixtures_dir().join("policies");
    let policies = desk::policies::load_policy_set(&dir)
        .expect("the fixture policies ship with the repository");
    history_with(&policies, seed, n)
}

/// `n` tickets from `seed`, labelled under `policies`.
pub fn history_with(policies: &PolicySet, seed: u64, n: usize) -> Vec<HistoricalTicket> {
    history_iter(policies, seed, n).collect()
}

/// [`history_with`], one ticket at a time (`generate-history` writes and counts them
/// as they come, so 100,000 tickets never sit in memory at once).
pub fn history_iter(
    policies: &PolicySet,
    seed: u64,
    n: usize,
) -> impl Iterator<Item = HistoricalTicket> + '_ {
    let mut rng = SplitMix64::new(seed);
    (0..n).map(move |i| Draft::new(&mut rng, seed, i).finish(policies))
}

/// One ticket per line, in the order given; `replay::parse_history` reads it back.
pub fn to_jsonl(tickets: &[HistoricalTicket]) -> String {
    tickets.iter().map(jsonl_line).collect()
}

/// One ticket as one line of a history file, its newline included.
pub fn jsonl_line(ticket: &HistoricalTicket) -> String {
    let mut line = serde_json::to_string(ticket)
        .expect("a historical ticket is plain data and always serialises");
    line.push('\n');
    line
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::sync::Arc;

    use super::*;
    use policy_engine::Currency;
    use shadow::replay::parse_history;

    #[test]
    fn the_same_seed_gives_the_same_tickets_and_another_seed_does_not() {
        let a = to_jsonl(&history(7, 300));
        let b = to_jsonl(&history(7, 300));
        let c = to_jsonl(&history(8, 300));
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(a.lines().count(), 300);
    }

    #[test]
    fn a_generated_file_round_trips_through_parse_history() {
        let tickets = history(42, 500);
        let text = to_jsonl(&tickets);
        let (parsed, errors) = parse_history(&text);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(parsed.len(), tickets.len());
        assert_eq!(to_jsonl(&parsed), text);
    }

    #[test]
    fn a_large_set_covers_every_region_currency_product_reason_and_rp001_version() {
        let tickets = history(1, 2_000);
        let regions: BTreeSet<_> = tickets
            .iter()
            .flat_map(|t| t.world.customers.iter().map(|c| c.region))
            .collect();
        assert_eq!(regions.len(), 4);
        let currencies: BTreeSet<_> = tickets
            .iter()
            .flat_map(|t| t.world.orders.iter().map(|o| o.currency))
            .collect();
        assert!(currencies.contains(&Currency::JPY));
        assert_eq!(currencies.len(), 4);
        let products: BTreeSet<_> = tickets
            .iter()
            .flat_map(|t| t.world.orders.iter().map(|o| o.product))
            .collect();
        assert_eq!(products.len(), 3);
        let reasons: BTreeSet<String> = tickets
            .iter()
            .map(|t| desk::world::serde_plain(&t.human.reason))
            .collect();
        for reason in policy_engine::ReasonCode::ALL.map(|r| r.as_str()) {
            assert!(reasons.contains(reason), "no {reason} in {reasons:?}");
        }
        let v2_from = time::macros::datetime!(2026-07-01 00:00 UTC);
        assert!(tickets.iter().any(|t| t.created_at < v2_from));
        assert!(tickets.iter().any(|t| t.created_at >= v2_from));
        assert!(tickets.iter().all(|t| t.human.decided_by == DECIDED_BY));
        let ids: BTreeSet<_> = tickets
            .iter()
            .flat_map(|t| t.world.orders.iter().map(|o| o.id.clone()))
            .collect();
        let orders: usize = tickets.iter().map(|t| t.world.orders.len()).sum();
        assert_eq!(ids.len(), orders, "order ids are unique across the set");
    }

    /// The scenarios read as they are meant: the built-in investigator, replaying each
    /// ticket, reaches the label's outcome on nearly all of them. (Not an accuracy claim:
    /// the labels come from the same engine; see the module comment.)
    #[tokio::test]
    async fn the_built_in_investigator_reads_generated_tickets_as_meant() {
        let dir = tempfile::tempdir().unwrap();
        let policies =
            desk::policies::load_policy_set(&desk::config::default_fixtures_dir().join("policies"))
                .unwrap();
        let index = Arc::new(desk::policies::open_index(dir.path(), &policies).unwrap());
        let tickets = history_with(&policies, 3, 400);
        let report = backtest::shadow::run(
            &desk::agent::investigator::Investigator,
            &policies,
            &index,
            &tickets,
            vec![],
            |_, _| {},
        )
        .await;
        let misses: Vec<_> = report
            .tickets
            .iter()
            .filter(|t| !t.exact)
            .map(|t| (&t.id, &t.human, &t.agent))
            .take(5)
            .collect();
        assert!(
            report.exact_agreement >= 0.95,
            "exact agreement {}: {misses:#?}",
            report.exact_agreement
        );
    }
}
