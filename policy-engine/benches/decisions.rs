//! Policy decisions per second on a realistic mix of facts (BENCHMARKS.md: "policy decisions
//! in microseconds"). The policies are the real fixture files, embedded at compile time.
//!
//! Two mixes: the hand-built scenarios below, and `testdata/product_mix.json`, 200 of
//! the facts the product benchmark (`app/benches/product/`) decides, so the product's
//! "policy decisions/s" figure can be approximated here in seconds.
//!
//! `cargo bench -p policy-engine --bench decisions` prints criterion's figures and a
//! plain `decisions/second` line for each mix.

use std::hint::black_box;
use std::time::{Duration as StdDuration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use policy_engine::{
    decide, decide_with, ChargeFacts, ChargeStatus, Currency, CustomerFacts, Facts, Money,
    OrderFacts, Ownership, PolicySet, PolicySource, Product, Region, RequestKind,
};
use time::format_description::well_known::Rfc3339;
use time::{Duration, OffsetDateTime};

macro_rules! policy {
    ($name:literal) => {
        PolicySource {
            name: concat!($name, ".md").to_string(),
            markdown: include_str!(concat!("../../fixtures/policies/", $name, ".md")).to_string(),
            rules: Some(
                include_str!(concat!("../../fixtures/policies/", $name, ".rules.toml")).to_string(),
            ),
        }
    };
}

fn policies() -> PolicySet {
    let mut sources = vec![
        policy!("RP-001-v1"),
        policy!("RP-001-v2"),
        policy!("RP-001-v3-draft"),
        policy!("RP-002-v1"),
        policy!("RP-003-v1"),
        policy!("RP-004-v1"),
        policy!("RP-004-v2"),
        policy!("RP-006-v1"),
        policy!("RP-007-v1"),
    ];
    sources.push(PolicySource {
        name: "RP-005-v1.md".into(),
        markdown: include_str!("../../fixtures/policies/RP-005-v1.md").into(),
        rules: None,
    });
    PolicySet::from_sources(sources).expect("fixture policies are valid")
}

fn at(s: &str) -> OffsetDateTime {
    OffsetDateTime::parse(s, &Rfc3339).expect("valid timestamp")
}

fn money(amount: &str, currency: Currency) -> Money {
    Money::parse(amount, currency).expect("valid amount")
}

fn charge(id: &str, amount: Money, created_at: OffsetDateTime) -> ChargeFacts {
    ChargeFacts {
        id: id.into(),
        amount,
        captured: true,
        status: ChargeStatus::Succeeded,
        disputed: false,
        created_at,
        payment_method: "pm_card_visa_4242".into(),
        amount_refunded: Money::zero(amount.currency()),
        refunds: vec![],
    }
}

/// A customer with `extra` ordinary orders besides the one the request is about.
fn scenario(
    request: RequestKind,
    region: Region,
    amount: Money,
    mutate: impl Fn(&mut OrderFacts),
    extra: usize,
) -> Facts {
    let created = at("2026-11-20T09:00:00Z");
    let mut target = OrderFacts {
        id: "O-1".into(),
        product: Product::AnnualPlan,
        amount,
        created_at: created,
        charges: vec![
            charge("ch_1a", amount, created + Duration::seconds(5)),
            charge("ch_1b", amount, created + Duration::seconds(70)),
        ],
    };
    mutate(&mut target);
    let mut orders = vec![target];
    for i in 0..extra {
        let when = created - Duration::days(30 * (i as i64 + 1));
        let amount = money("12.00", Currency::USD);
        orders.push(OrderFacts {
            id: format!("O-old-{i}"),
            product: Product::MonthlyPlan,
            amount,
            created_at: when,
            charges: vec![charge(&format!("ch_old_{i}"), amount, when)],
        });
    }
    Facts {
        reported_at: at("2026-11-29T10:00:00Z"),
        customer: CustomerFacts {
            id: "C-1".into(),
            region,
        },
        request,
        order_id: Some("O-1".into()),
        order_ownership: Ownership::Owned,
        repeat_of: None,
        orders,
    }
}

/// Duplicates (the common case), overcharges, holds, disputes, refunded, cooling-off,
/// late reports, ambiguity and ownership, in rough production proportions.
fn mix() -> Vec<Facts> {
    use RequestKind::*;
    let cny = money("198.00", Currency::CNY);
    let jpy = money("19800", Currency::JPY);
    let mut mix = vec![
        scenario(DuplicateCharge, Region::CN, cny, |_| {}, 3),
        scenario(DuplicateCharge, Region::JP, jpy, |_| {}, 1),
        scenario(DuplicateCharge, Region::CN, cny, |_| {}, 8),
        scenario(
            Overcharge,
            Region::EU,
            money("9.99", Currency::EUR),
            |o| {
                o.charges.truncate(1);
                o.charges[0].amount = money("19.99", Currency::EUR);
            },
            2,
        ),
        scenario(
            AuthorizationHold,
            Region::US,
            money("12.00", Currency::USD),
            |o| o.charges[0].captured = false,
            2,
        ),
        scenario(
            DuplicateCharge,
            Region::US,
            money("99.00", Currency::USD),
            |o| o.charges[1].disputed = true,
            1,
        ),
        scenario(
            DuplicateCharge,
            Region::EU,
            money("120.00", Currency::EUR),
            |o| o.charges[1].amount_refunded = o.charges[1].amount,
            1,
        ),
        scenario(Cancellation, Region::US, cny, |o| o.charges.truncate(1), 2),
        scenario(
            DuplicateCharge,
            Region::CN,
            cny,
            |o| {
                o.created_at -= Duration::days(200);
                for c in &mut o.charges {
                    c.created_at -= Duration::days(200);
                }
            },
            4,
        ),
    ];
    let mut ambiguous = scenario(Cancellation, Region::CN, cny, |_| {}, 3);
    ambiguous.order_id = None;
    mix.push(ambiguous);
    let mut foreign = scenario(DuplicateCharge, Region::CN, cny, |_| {}, 0);
    foreign.order_ownership = Ownership::OtherCustomer;
    mix.push(foreign);
    mix
}

/// Facts the product benchmark decides (see the module comment).
fn product_mix() -> Vec<Facts> {
    serde_json::from_str(include_str!("../testdata/product_mix.json"))
        .expect("testdata/product_mix.json holds facts")
}

/// A plain figure, independent of criterion's statistics: about `decisions` decisions.
fn plain_figure(name: &str, set: &PolicySet, mix: &[Facts], decisions: usize) {
    let rounds = decisions.div_ceil(mix.len());
    let start = Instant::now();
    for _ in 0..rounds {
        for facts in mix {
            black_box(decide(black_box(facts), set));
        }
    }
    let elapsed = start.elapsed().as_secs_f64();
    let n = (rounds * mix.len()) as f64;
    println!(
        "policy decisions, {name}: {:.0} decisions/second ({:.2} µs/decision, {} facts)",
        n / elapsed,
        elapsed / n * 1e6,
        mix.len()
    );
}

fn bench_decisions(c: &mut Criterion) {
    let set = policies();
    let mix = mix();
    let product_mix = product_mix();

    plain_figure("scenario mix", &set, &mix, 22_000);
    plain_figure("product mix", &set, &product_mix, 200_000);

    let mut group = c.benchmark_group("decisions");
    group.throughput(Throughput::Elements(mix.len() as u64));
    group.measurement_time(StdDuration::from_secs(3));
    group.bench_function("live_mix", |b| {
        b.iter(|| {
            for facts in &mix {
                black_box(decide(black_box(facts), &set));
            }
        })
    });
    let pins = vec!["RP-001@3".to_string()];
    group.bench_function("what_if_draft_mix", |b| {
        b.iter(|| {
            for facts in &mix {
                black_box(decide_with(black_box(facts), &set, &pins).expect("known pin"));
            }
        })
    });
    group.finish();

    let mut group = c.benchmark_group("product_mix");
    group.throughput(Throughput::Elements(product_mix.len() as u64));
    group.measurement_time(StdDuration::from_secs(3));
    group.bench_function("live", |b| {
        b.iter(|| {
            for facts in &product_mix {
                black_box(decide(black_box(facts), &set));
            }
        })
    });
    group.finish();

    c.bench_function("demo_duplicate", |b| {
        b.iter(|| decide(black_box(&mix[0]), &set))
    });
}

criterion_group!(benches, bench_decisions);
criterion_main!(benches);
