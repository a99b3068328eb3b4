//! Large, deterministic sets of historical tickets (SPEC §7 "Files") for load: the
//! shadow-replay benchmark (`app/benches/product.rs`) and anyone who needs thousands of
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
//! so that they vary independently of the investigator: id schemes, many orders,
//! EN/ZH/JA phrase banks kept as data, follow-ups, typos (see `varied`).
//!
//! Deterministic: the same `(seed, n)` gives the same tickets, byte for byte, on every
//! machine (a SplitMix64 stream, no clock, no `HashMap` iteration). What this module
//! does not do: touch a database, a provider or the network.

use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use policy_engine::{Currency, Money, PolicySet, Product, Region, RequestKind};
use time::{Duration, OffsetDateTime};

use app::billing::WorldBilling;
use app::replay::{CaseVerdict, HistoricalMessage, HistoricalTicket, HumanDecision};
use app::world::{World, WorldCharge, WorldCustomer, WorldOrder, WorldRefund};

mod varied;
pub use varied::{varied_history, varied_history_from, varied_history_with, ComplaintBank};

/// Who "decided" a generated ticket: the policy engine, not a person.
pub const DECIDED_BY: &str = "generated:policy-engine";

/// `n` tickets from `seed`, labelled under the policies shipped in `fixtures/policies/`.
///
/// Panics if the fixture policies cannot be read: this is a load generator for benches
/// and tests run from a checkout, not a request path. Use [`history_with`] to pass a
/// policy set explicitly.
pub fn history(seed: u64, n: usize) -> Vec<HistoricalTicket> {
    let dir = app::config::default_fixtures_dir().join("policies");
    let policies = app::policies::load_policy_set(&dir)
        .expect("the fixture policies ship with the repository");
    history_with(&policies, seed, n)
}

/// `n` tickets from `seed`, labelled under `policies`.
pub fn history_with(policies: &PolicySet, seed: u64, n: usize) -> Vec<HistoricalTicket> {
    let mut rng = SplitMix64::new(seed);
    (0..n)
        .map(|i| {
            let draft = Draft::new(&mut rng, seed, i);
            draft.finish(policies)
        })
        .collect()
}

/// One ticket per line, in the order given; `replay::parse_history` reads it back.
pub fn to_jsonl(tickets: &[HistoricalTicket]) -> String {
    let mut out = String::new();
    for ticket in tickets {
        out += &serde_json::to_string(ticket)
            .expect("a historical ticket is plain data and always serialises");
        out.push('\n');
    }
    out
}

// ---------------------------------------------------------------------------------------
// Randomness: SplitMix64, so the stream never changes with a dependency's version.
// ---------------------------------------------------------------------------------------

struct SplitMix64(u64);

impl SplitMix64 {
    fn new(seed: u64) -> Self {
        SplitMix64(seed ^ 0x5DEE_CE66_D1CE_4E5B)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`; the modulo bias is irrelevant at these sizes).
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn range(&mut self, lo: i64, hi_inclusive: i64) -> i64 {
        lo + self.below((hi_inclusive - lo + 1) as u64) as i64
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize]
    }
}

// ---------------------------------------------------------------------------------------
// Scenarios.
// ---------------------------------------------------------------------------------------

/// What the customer complains about, and how the world is built to match.
#[derive(Debug, Clone, Copy)]
enum Scenario {
    /// Two or three identical captured charges on one order (sometimes part refunded).
    Duplicate,
    /// One charge above the order amount (sometimes with a pending partial refund).
    Overcharge,
    /// Two identical orders minutes apart (RP-001 v2 §1 when < 10 minutes).
    RepeatPurchase,
    /// A cancellation of one order (annual: cooling-off by region; else not eligible).
    Cancellation,
    /// A captured charge and an uncaptured hold (overdue after 7 days).
    Hold,
    /// A duplicate whose second charge is disputed.
    Dispute,
    /// A duplicate already refunded in full (succeeded or pending).
    AlreadyRefunded,
    /// A duplicate complaint about an order with one successful charge.
    NotDuplicate,
    /// A duplicate complaint about another customer's order (RP-007).
    Ownership,
    /// A cancellation naming no order, with two orders of different products.
    Ambiguous,
    /// An extra charge of another amount on one order: no clause covers it.
    Other,
}

/// Relative weights, in rough production proportions.
const MIX: &[(Scenario, u64)] = &[
    (Scenario::Duplicate, 24),
    (Scenario::Overcharge, 10),
    (Scenario::RepeatPurchase, 10),
    (Scenario::Cancellation, 16),
    (Scenario::Hold, 8),
    (Scenario::Dispute, 5),
    (Scenario::AlreadyRefunded, 6),
    (Scenario::NotDuplicate, 7),
    (Scenario::Ownership, 5),
    (Scenario::Ambiguous, 5),
    (Scenario::Other, 4),
];

fn pick_scenario(rng: &mut SplitMix64) -> Scenario {
    let total: u64 = MIX.iter().map(|(_, w)| w).sum();
    let mut roll = rng.below(total);
    for (scenario, weight) in MIX {
        if roll < *weight {
            return *scenario;
        }
        roll -= weight;
    }
    MIX[0].0
}

fn currency(region: Region) -> Currency {
    match region {
        Region::CN => Currency::CNY,
        Region::US => Currency::USD,
        Region::EU => Currency::EUR,
        Region::JP => Currency::JPY,
    }
}

/// List prices in minor units (JPY has no minor unit: these are yen).
fn prices(region: Region, product: Product) -> &'static [i64] {
    match (region, product) {
        (Region::CN, Product::AnnualPlan) => &[19_800, 29_800],
        (Region::CN, Product::MonthlyPlan) => &[2_500, 3_000],
        (Region::CN, Product::Addon) => &[3_000, 1_500],
        (Region::US, Product::AnnualPlan) => &[9_900, 12_000],
        (Region::US, Product::MonthlyPlan) => &[1_200, 1_500],
        (Region::US, Product::Addon) => &[499, 999],
        (Region::EU, Product::AnnualPlan) => &[12_000, 9_900],
        (Region::EU, Product::MonthlyPlan) => &[999, 1_299],
        (Region::EU, Product::Addon) => &[500, 999],
        (Region::JP, Product::AnnualPlan) => &[9_800, 12_000],
        (Region::JP, Product::MonthlyPlan) => &[980, 1_200],
        (Region::JP, Product::Addon) => &[1_200, 500],
    }
}

fn payment_method(region: Region) -> &'static str {
    match region {
        Region::CN => "pm_alipay",
        Region::US => "pm_card_visa",
        Region::EU => "pm_card_mastercard",
        Region::JP => "pm_card_jcb",
    }
}

const NAMES: &[(&str, &str)] = &[
    ("Li Wei", "li.wei"),
    ("张敏", "zhang.min"),
    ("Emma Johnson", "emma.j"),
    ("Noah Davis", "noah.d"),
    ("Lukas Müller", "lukas.m"),
    ("Sophie Martin", "sophie.m"),
    ("Sato Yuki", "yuki.sato"),
    ("Tanaka Hiroshi", "hiroshi.t"),
];

/// The first ticket date; tickets spread over the next 350 days, so RP-001 v1 (until
/// 2026-06-30) and v2 (from 2026-07-01) are both in force for a share of them.
fn first_day() -> OffsetDateTime {
    time::macros::datetime!(2026-01-05 00:00 UTC)
}

/// A ticket being built: its world, its messages and the request the label is for.
struct Draft {
    ticket_id: String,
    created_at: OffsetDateTime,
    region: Region,
    currency: Currency,
    customer_id: String,
    form_order_id: Option<String>,
    world: World,
    messages: Vec<String>,
    /// What the customer asks, and about which order, as the scenario means it.
    request: RequestKind,
    order_id: Option<String>,
    /// Unique number prefix for this ticket's record ids.
    serial: u64,
    /// The scenario the world was built for (the varied style rewrites its text).
    scenario: Scenario,
    next_record: u64,
}

impl Draft {
    fn new(rng: &mut SplitMix64, seed: u64, i: usize) -> Draft {
        let region = rng.pick(&Region::ALL);
        let created_at = first_day()
            + Duration::days(rng.range(0, 349))
            + Duration::seconds(rng.range(0, 86_399));
        // Order ids must read as `O-<digits>` (what customers type and the investigator
        // finds); 12 digits at most. The seed's low bits keep sets of different seeds apart.
        let serial = (seed % 1_000) * 10_000_000 + i as u64;
        let customer_id = format!("C-G{serial}");
        let (name, email) = rng.pick(NAMES);
        let mut draft = Draft {
            ticket_id: format!("G-{seed}-{i:06}"),
            created_at,
            region,
            currency: currency(region),
            customer_id: customer_id.clone(),
            form_order_id: None,
            world: World {
                customers: vec![WorldCustomer {
                    id: customer_id,
                    name: name.to_string(),
                    email: format!("{email}.{serial}@example.{}", region.code().to_lowercase()),
                    region,
                }],
                orders: Vec::new(),
                charges: Vec::new(),
                refunds: Vec::new(),
            },
            messages: Vec::new(),
            request: RequestKind::Unclear,
            order_id: None,
            serial,
            next_record: 0,
            scenario: Scenario::Duplicate,
        };
        let scenario = pick_scenario(rng);
        draft.scenario = scenario;
        draft.build(rng, scenario);
        draft
    }

    fn chinese(&self, rng: &mut SplitMix64) -> bool {
        match self.region {
            Region::CN => rng.chance(70),
            _ => rng.chance(5),
        }
    }

    fn money(&self, minor: i64) -> String {
        Money::from_minor(minor, self.currency)
            .expect("generated amounts are non-negative and in range")
            .amount_string()
    }

    fn order(&mut self, product: Product, minor: i64, at: OffsetDateTime) -> String {
        self.order_for(self.customer_id.clone(), product, minor, at)
    }

    fn order_for(
        &mut self,
        customer_id: String,
        product: Product,
        minor: i64,
        at: OffsetDateTime,
    ) -> String {
        self.next_record += 1;
        let id = format!("O-{}", self.serial * 10 + self.next_record);
        self.world.orders.push(WorldOrder {
            id: id.clone(),
            customer_id,
            product,
            amount: self.money(minor),
            currency: self.currency,
            created_at: at,
        });
        id
    }

    fn charge(&mut self, order_id: &str, minor: i64, at: OffsetDateTime) -> String {
        self.charge_with(order_id, minor, at, true, "succeeded", false)
    }

    fn charge_with(
        &mut self,
        order_id: &str,
        minor: i64,
        at: OffsetDateTime,
        captured: bool,
        status: &str,
        disputed: bool,
    ) -> String {
        let owner = self
            .world
            .orders
            .iter()
            .find(|o| o.id == order_id)
            .map(|o| o.customer_id.clone())
            .expect("charges are made on orders of this world");
        let id = format!("ch_g{}_{}", self.serial, self.world.charges.len() + 1);
        self.world.charges.push(WorldCharge {
            id: id.clone(),
            order_id: order_id.to_string(),
            customer_id: owner,
            amount: self.money(minor),
            currency: self.currency,
            captured,
            status: status.to_string(),
            disputed,
            created_at: at,
            payment_method: payment_method(self.region).to_string(),
            amount_refunded: None,
        });
        id
    }

    fn refund(&mut self, charge_id: &str, minor: i64, at: OffsetDateTime, status: &str) {
        let id = format!("re_g{}_{}", self.serial, self.world.refunds.len() + 1);
        self.world.refunds.push(WorldRefund {
            id,
            charge_id: charge_id.to_string(),
            amount: self.money(minor),
            currency: self.currency,
            status: status.to_string(),
            created_at: at,
            metadata: Default::default(),
        });
    }

    /// How long before the ticket the order was placed: mostly recent, some beyond the
    /// reporting windows (v1 180 days, v2 120 days).
    fn age(&self, rng: &mut SplitMix64) -> Duration {
        if rng.chance(12) {
            Duration::days(rng.range(121, 400))
        } else {
            Duration::days(rng.range(0, 60)) + Duration::minutes(rng.range(5, 1_400))
        }
    }

    fn build(&mut self, rng: &mut SplitMix64, scenario: Scenario) {
        let product = rng.pick(&Product::ALL);
        let price = rng.pick(prices(self.region, product));
        let zh = self.chinese(rng);
        match scenario {
            Scenario::Duplicate | Scenario::Dispute | Scenario::AlreadyRefunded => {
                let at = self.created_at - self.age(rng);
                let order = self.order(product, price, at);
                self.charge(&order, price, at + Duration::seconds(2));
                let second = if matches!(scenario, Scenario::Dispute) {
                    self.charge_with(
                        &order,
                        price,
                        at + Duration::seconds(40),
                        true,
                        "succeeded",
                        true,
                    )
                } else {
                    self.charge(&order, price, at + Duration::seconds(40))
                };
                if matches!(scenario, Scenario::Duplicate) && rng.chance(15) {
                    self.charge(&order, price, at + Duration::seconds(75));
                }
                let refunded_at = at + Duration::hours(6);
                match scenario {
                    Scenario::AlreadyRefunded => {
                        let status = if rng.chance(30) {
                            "pending"
                        } else {
                            "succeeded"
                        };
                        self.refund(&second, price, refunded_at, status);
                    }
                    Scenario::Duplicate if rng.chance(10) && price >= 100 => {
                        self.refund(&second, price / 5, refunded_at, "succeeded");
                    }
                    _ => {}
                }
                self.complain_duplicate(rng, zh, &order, scenario);
            }
            Scenario::NotDuplicate => {
                let at = self.created_at - self.age(rng);
                let order = self.order(product, price, at);
                if rng.chance(40) {
                    self.charge_with(&order, price, at, false, "failed", false);
                }
                self.charge(&order, price, at + Duration::seconds(30));
                self.complain_duplicate(rng, zh, &order, scenario);
            }
            Scenario::Overcharge => {
                let at = self.created_at - self.age(rng);
                let order = self.order(product, price, at);
                let extra = (price / 10).max(1) * rng.range(1, 3);
                let charge = self.charge(&order, price + extra, at + Duration::seconds(1));
                if rng.chance(15) && extra >= 2 {
                    self.refund(&charge, extra / 2, at + Duration::days(1), "pending");
                }
                self.request = RequestKind::Overcharge;
                self.order_id = Some(order.clone());
                self.say(
                    zh,
                    format!("订单{order}多收了钱，扣款金额不对，请退还差额。"),
                    format!("I was overcharged for order {order}: the amount taken is higher than the price."),
                );
            }
            Scenario::RepeatPurchase => {
                let at = self.created_at - self.age(rng);
                let first = self.order(product, price, at);
                self.charge(&first, price, at + Duration::seconds(1));
                let gap = Duration::seconds(rng.range(60, 15 * 60));
                let second = self.order(product, price, at + gap);
                self.charge(&second, price, at + gap + Duration::seconds(1));
                self.request = RequestKind::DuplicateCharge;
                self.order_id = Some(second.clone());
                self.say(
                    zh,
                    format!("我不小心买了两次，订单{second}是重复的，请退款。"),
                    format!("I bought it again by accident: order {second} is a duplicate of my first order."),
                );
            }
            Scenario::Cancellation => {
                // Mostly annual plans, around each region's cooling-off period.
                let product = if rng.chance(70) {
                    Product::AnnualPlan
                } else {
                    product
                };
                let price = rng.pick(prices(self.region, product));
                let at = self.created_at
                    - Duration::days(rng.range(0, 35))
                    - Duration::minutes(rng.range(1, 1_400));
                let order = self.order(product, price, at);
                let charge = self.charge(&order, price, at + Duration::seconds(1));
                if rng.chance(10) && price >= 100 {
                    self.refund(&charge, price / 4, at + Duration::days(1), "succeeded");
                }
                if rng.chance(30) {
                    // An older order of another product: the text names the order.
                    let other = Product::ALL
                        .into_iter()
                        .find(|p| *p != product)
                        .unwrap_or(Product::Addon);
                    let other_price = rng.pick(prices(self.region, other));
                    let old = at - Duration::days(rng.range(20, 90));
                    let old_order = self.order(other, other_price, old);
                    self.charge(&old_order, other_price, old + Duration::seconds(1));
                }
                self.request = RequestKind::Cancellation;
                self.order_id = Some(order.clone());
                if rng.chance(20) {
                    // Picked in the ticket form, not written in the text.
                    self.form_order_id = Some(order.clone());
                    self.say(
                        zh,
                        "我想取消这个订单并退款。".to_string(),
                        "Please cancel this order and refund me, I changed my mind.".to_string(),
                    );
                } else {
                    self.say(
                        zh,
                        format!("我想取消订单{order}并退款，不想要了。"),
                        format!("Please cancel order {order} and refund me, I changed my mind."),
                    );
                }
            }
            Scenario::Hold => {
                let at = self.created_at
                    - Duration::days(rng.range(0, 12))
                    - Duration::minutes(rng.range(5, 600));
                let order = self.order(product, price, at);
                self.charge(&order, price, at + Duration::seconds(1));
                self.charge_with(
                    &order,
                    price,
                    at + Duration::seconds(30),
                    false,
                    "succeeded",
                    false,
                );
                self.request = RequestKind::AuthorizationHold;
                self.order_id = Some(order.clone());
                self.say(
                    zh,
                    format!("订单{order}在我的卡上还有一笔预授权冻结，请帮忙处理。"),
                    format!(
                        "There is a hold on my card for order {order} next to my payment. Why?"
                    ),
                );
            }
            Scenario::Ownership => {
                let at = self.created_at - Duration::days(rng.range(1, 30));
                let mine = self.order(product, price, at);
                self.charge(&mine, price, at + Duration::seconds(1));
                let other_id = format!("C-G{}-other", self.serial);
                self.world.customers.push(WorldCustomer {
                    id: other_id.clone(),
                    name: "Ava Wilson".to_string(),
                    email: format!("ava.{}@example.com", self.serial),
                    region: self.region,
                });
                let theirs = self.order_for(other_id, product, price, at + Duration::days(1));
                self.charge(&theirs, price, at + Duration::days(1));
                self.charge(
                    &theirs,
                    price,
                    at + Duration::days(1) + Duration::seconds(30),
                );
                self.complain_duplicate(rng, zh, &theirs, scenario);
            }
            Scenario::Ambiguous => {
                let at = self.created_at - Duration::days(rng.range(1, 20));
                let a_price = rng.pick(prices(self.region, Product::AnnualPlan));
                let a = self.order(Product::AnnualPlan, a_price, at);
                self.charge(&a, a_price, at + Duration::seconds(1));
                let b_price = rng.pick(prices(self.region, Product::Addon));
                let b = self.order(Product::Addon, b_price, at + Duration::hours(3));
                self.charge(&b, b_price, at + Duration::hours(3) + Duration::seconds(1));
                self.request = RequestKind::Cancellation;
                self.order_id = None;
                self.say(
                    zh,
                    "我要取消，请退款。".to_string(),
                    "I want to cancel, please refund me.".to_string(),
                );
            }
            Scenario::Other => {
                let at = self.created_at - Duration::days(rng.range(1, 30));
                let order = self.order(product, price, at);
                self.charge(&order, price, at + Duration::seconds(1));
                let extra = (price / 3).max(1);
                self.charge(&order, extra, at + Duration::minutes(10));
                self.request = RequestKind::Overcharge;
                self.order_id = Some(order.clone());
                self.say(
                    zh,
                    format!("订单{order}付款之后又被扣了一笔，多收了钱。"),
                    format!("I was overcharged on order {order}: after paying, another amount was taken."),
                );
            }
        }
    }

    fn complain_duplicate(
        &mut self,
        rng: &mut SplitMix64,
        zh: bool,
        order: &str,
        scenario: Scenario,
    ) {
        self.request = RequestKind::DuplicateCharge;
        self.order_id = Some(order.to_string());
        let bank = matches!(scenario, Scenario::Dispute) && rng.chance(50);
        let (zh_text, en_text) = match rng.below(3) {
            0 => (
                format!("订单{order}重复扣款了，请退还多扣的那一笔。"),
                format!("Order {order} was charged twice, please refund the duplicate."),
            ),
            1 => (
                format!("你好，订单{order}扣了两次款。"),
                format!("Hello, I was double charged for order {order}."),
            ),
            _ => (
                format!("订单{order}有两笔一样的扣款，请核实。"),
                format!("I see two identical charges for order {order} on my statement."),
            ),
        };
        if bank {
            self.say(
                zh,
                format!("{zh_text}我已经联系了银行。"),
                format!("{en_text} I've also called my bank about it."),
            );
        } else {
            self.say(zh, zh_text, en_text);
        }
    }

    fn say(&mut self, zh: bool, zh_text: String, en_text: String) {
        self.messages.push(if zh { zh_text } else { en_text });
    }

    /// The ticket, labelled by the policy engine on the facts its world implies.
    fn finish(self, policies: &PolicySet) -> HistoricalTicket {
        let mut ticket = HistoricalTicket {
            id: self.ticket_id,
            created_at: self.created_at,
            customer_id: self.customer_id,
            order_id: self.form_order_id,
            messages: self
                .messages
                .into_iter()
                .map(|text| HistoricalMessage {
                    from: "customer".to_string(),
                    text,
                    at: self.created_at,
                    extra: Default::default(),
                })
                .collect(),
            world: self.world,
            human: HumanDecision {
                outcome: app::replay::CaseOutcome::RequestInfo,
                reason: policy_engine::ReasonCode::InsufficientInfo,
                refunds: Vec::new(),
                decided_by: DECIDED_BY.to_string(),
                extra: Default::default(),
            },
            extra: Default::default(),
        };
        let billing = WorldBilling::new(Arc::new(ticket.world.clone()));
        let live = app::replay::live_ticket(&ticket);
        let facts = ready(app::workflow::gather_facts(
            &billing,
            &live,
            self.request,
            self.order_id.as_deref(),
        ))
        .expect("a generated world is consistent, so its facts can be gathered");
        let decision = policy_engine::decide(&facts, policies);
        let verdict = CaseVerdict::from_decision(&decision);
        ticket.human = HumanDecision {
            outcome: verdict.outcome,
            reason: verdict.reason,
            refunds: verdict.refunds,
            decided_by: DECIDED_BY.to_string(),
            extra: Default::default(),
        };
        ticket
    }
}

/// Runs a future that never waits: `WorldBilling` answers from memory, so every await
/// in `gather_facts` over it is ready at once. This keeps `history` a plain function
/// callable from inside or outside a tokio runtime.
fn ready<F: Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    let mut cx = Context::from_waker(Waker::noop());
    match future.as_mut().poll(&mut cx) {
        Poll::Ready(output) => output,
        Poll::Pending => unreachable!("gathering facts from an in-memory world never waits"),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use app::replay::parse_history;

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
            .map(|t| app::world::serde_plain(&t.human.reason))
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
            app::policies::load_policy_set(&app::config::default_fixtures_dir().join("policies"))
                .unwrap();
        let index = Arc::new(app::policies::open_index(dir.path(), &policies).unwrap());
        let tickets = history_with(&policies, 3, 400);
        let report = app::shadow::run(
            &app::agent::investigator::Investigator,
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
