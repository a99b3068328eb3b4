//! One generated ticket while it is built: its billing world, drawn for the scenario
//! of the mix, the customer's messages, and the request and order its label is for;
//! `finish` labels it with the policy engine.

use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use desk::billing::WorldBilling;
use desk::world::{World, WorldCharge, WorldCustomer, WorldOrder, WorldRefund};
use policy_engine::{Currency, Money, PolicySet, Product, Region, RequestKind};
use shadow::replay::{CaseVerdict, HistoricalMessage, HistoricalTicket, HumanDecision};
use time::{Duration, OffsetDateTime};

use super::mix::{currency, first_day, payment_method, pick_scenario, prices, Scenario, NAMES};
use super::rng::SplitMix64;

/// Who "decided" a generated ticket: the policy engine, not a person.
pub const DECIDED_BY: &str = "generated:policy-engine";

/// A ticket being built: its world, its messages and the request the label is for.
pub(super) struct Draft {
    pub(super) ticket_id: String,
    pub(super) created_at: OffsetDateTime,
    pub(super) region: Region,
    pub(super) currency: Currency,
    pub(super) customer_id: String,
    pub(super) form_order_id: Option<String>,
    pub(super) world: World,
    pub(super) messages: Vec<String>,
    /// What the customer asks, and about which order, as the scenario means it.
    pub(super) request: RequestKind,
    pub(super) order_id: Option<String>,
    /// The earlier order `order_id` repeats, when the customer says they bought it
    /// twice: the engine weighs RP-001 §1, then §4.1 and RP-002 (`Facts::repeat_of`).
    pub(super) repeat_of: Option<String>,
    /// Unique number prefix for this ticket's record ids.
    pub(super) serial: u64,
    /// The scenario the world was built for (the varied style rewrites its text).
    pub(super) scenario: Scenario,
    pub(super) next_record: u64,
}

impl Draft {
    pub(super) fn new(rng: &mut SplitMix64, seed: u64, i: usize) -> Draft {
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
            repeat_of: None,
            serial,
            next_record: 0,
            scenario: Scenario::Duplicate,
        };
        let scenario = pick_scenario(rng);
        draft.scenario = scenario;
        draft.build(rng, scenario);
        draft
    }

    pub(super) fn chinese(&self, rng: &mut SplitMix64) -> bool {
        match self.region {
            Region::CN => rng.chance(70),
            _ => rng.chance(5),
        }
    }

    pub(super) fn money(&self, minor: i64) -> String {
        Money::from_minor(minor, self.currency)
            .expect("generated amounts are non-negative and in range")
            .amount_string()
    }

    pub(super) fn order(&mut self, product: Product, minor: i64, at: OffsetDateTime) -> String {
        self.order_for(self.customer_id.clone(), product, minor, at)
    }

    pub(super) fn order_for(
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

    pub(super) fn charge(&mut self, order_id: &str, minor: i64, at: OffsetDateTime) -> String {
        self.charge_with(order_id, minor, at, true, "succeeded", false)
    }

    pub(super) fn charge_with(
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

    pub(super) fn refund(&mut self, charge_id: &str, minor: i64, at: OffsetDateTime, status: &str) {
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
    pub(super) fn age(&self, rng: &mut SplitMix64) -> Duration {
        if rng.chance(12) {
            Duration::days(rng.range(121, 400))
        } else {
            Duration::days(rng.range(0, 60)) + Duration::minutes(rng.range(5, 1_400))
        }
    }

    /// Draws the world and the complaint for `scenario`.
    // Over 100 lines on purpose: one arm per scenario of the mix, read as a table, each
    // drawing from the random stream in a fixed order — the committed generated sets
    // (`evals/history/varied-dev.jsonl`) are its output byte for byte, so every draw
    // stays where it is.
    pub(super) fn build(&mut self, rng: &mut SplitMix64, scenario: Scenario) {
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
                self.repeat_of = Some(first.clone());
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

    pub(super) fn complain_duplicate(
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

    pub(super) fn say(&mut self, zh: bool, zh_text: String, en_text: String) {
        self.messages.push(if zh { zh_text } else { en_text });
    }

    /// The ticket, labelled by the policy engine on the facts its world implies.
    pub(super) fn finish(self, policies: &PolicySet) -> HistoricalTicket {
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
                outcome: shadow::replay::CaseOutcome::RequestInfo,
                reason: policy_engine::ReasonCode::InsufficientInfo,
                refunds: Vec::new(),
                decided_by: DECIDED_BY.to_string(),
                extra: Default::default(),
            },
            extra: Default::default(),
        };
        let billing = WorldBilling::new(Arc::new(ticket.world.clone()));
        let live = shadow::replay::live_ticket(&ticket).expect("generated ids are ids");
        let facts = ready(desk::workflow::gather_facts(
            &billing,
            &live,
            self.request,
            (self.order_id.as_deref(), self.repeat_of.as_deref()),
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
