//! `demo`: the product as `serve` runs it (SQLite, the embedded payments mock, the
//! built-in investigator, the demo world and staff) with a stream of made-up customers
//! beside it (a newcomer's desk is never empty). Each step is one customer
//! doing one thing through the product's own customer functions: opening a ticket about
//! an order of theirs (charged twice, changed their mind, an old order, no order named),
//! answering, withdrawing, asking for a person — in English, Chinese, Japanese, German,
//! French and Spanish.
//!
//! What it deliberately does not do: act as staff (approving is the newcomer's to try),
//! touch a real payment provider (each customer's charges go to the embedded mock), or
//! run in tests on a timer ([`DemoTraffic::step`] is one step; `demo` paces them).

use std::time::Duration;

use desk::customer::{self, NewTicket};
use desk::state::Services;
use desk::world::{World, WorldCharge, WorldCustomer, WorldOrder};
use policy_engine::{Currency, Product, Region};
use time::OffsetDateTime;

/// What one step did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrafficStep {
    /// A new customer opened a ticket.
    Opened { ticket_id: String },
    /// A customer wrote again on one of their tickets.
    Replied { ticket_id: String },
    /// A customer asked for a person in their own words.
    AskedForPerson { ticket_id: String },
    /// A customer withdrew a ticket.
    Withdrew { ticket_id: String },
    /// The product refused the step (a rate limit, a case at its end): nothing changed.
    Refused { why: String },
}

/// A customer made up for the demo: who, in which language, their ticket if any.
struct Visitor {
    lang: usize,
    ticket_id: Option<String>,
}

/// The demo's customers and what they do next: a seeded, repeatable stream.
pub struct DemoTraffic {
    rng: u64,
    run: String,
    serial: u64,
    visitors: Vec<Visitor>,
}

/// (region, currency, amount of an order) for each language of [`WORDS`].
const REGIONS: [(Region, Currency, &str); 6] = [
    (Region::US, Currency::USD, "49.00"),
    (Region::CN, Currency::CNY, "198.00"),
    (Region::JP, Currency::JPY, "19800"),
    (Region::EU, Currency::EUR, "120.00"),
    (Region::EU, Currency::EUR, "89.00"),
    (Region::EU, Currency::EUR, "59.00"),
];

/// Per language: charged twice, changed my mind, an old order, no order, "any news?",
/// a person please. `{order}` is the customer's order id.
const WORDS: [[&str; 6]; 6] = [
    [
        "I was charged twice for order {order}, please refund the duplicate.",
        "I changed my mind about order {order}, can I get my money back?",
        "Please refund order {order}, I bought it a long time ago and never used it.",
        "Hi, I think something is wrong with my bill.",
        "Any news on my refund?",
        "I'd like to talk to a real person please.",
    ],
    [
        "订单{order}扣了两次款，请退还重复的那一笔。",
        "我不想要订单{order}了，可以退款吗？",
        "请给订单{order}退款，很久以前买的，一直没用。",
        "你好，我的账单好像有问题。",
        "我的退款有进展吗？",
        "请转人工客服。",
    ],
    [
        "注文{order}が二重に請求されました。重複分を返金してください。",
        "注文{order}をキャンセルして返金してほしいです。",
        "注文{order}を返金してください。ずいぶん前に買って使っていません。",
        "請求がおかしい気がします。",
        "返金はどうなりましたか？",
        "担当者と話したいです。",
    ],
    [
        "Bestellung {order} wurde doppelt abgebucht, bitte erstatten Sie die zweite Zahlung.",
        "Ich habe es mir anders überlegt, bitte erstatten Sie Bestellung {order}.",
        "Bitte erstatten Sie Bestellung {order}, ich habe sie vor langer Zeit gekauft.",
        "Hallo, mit meiner Rechnung stimmt etwas nicht.",
        "Gibt es etwas Neues zu meiner Erstattung?",
        "Ich möchte bitte mit einem Menschen sprechen.",
    ],
    [
        "La commande {order} a été débitée deux fois, merci de rembourser le doublon.",
        "J'ai changé d'avis pour la commande {order}, puis-je être remboursé ?",
        "Merci de rembourser la commande {order}, achetée il y a longtemps.",
        "Bonjour, je crois qu'il y a un problème sur ma facture.",
        "Des nouvelles de mon remboursement ?",
        "Je voudrais parler à une vraie personne, s'il vous plaît.",
    ],
    [
        "Me cobraron dos veces el pedido {order}, por favor devuelvan el duplicado.",
        "Cambié de opinión sobre el pedido {order}, ¿me pueden devolver el dinero?",
        "Por favor reembolsen el pedido {order}, lo compré hace mucho tiempo.",
        "Hola, creo que hay un problema con mi factura.",
        "¿Hay novedades sobre mi reembolso?",
        "Quiero hablar con una persona real, por favor.",
    ],
];

const NAMES: [&str; 6] = [
    "Jordan Lee",
    "陈静 (Chen Jing)",
    "鈴木 花子 (Suzuki Hanako)",
    "Jonas Weber",
    "Camille Dubois",
    "Lucía García",
];

impl DemoTraffic {
    /// A stream from `seed`; `run` keeps this run's customers apart from an earlier
    /// run's on the same data directory.
    pub fn new(seed: u64, run: &str) -> DemoTraffic {
        DemoTraffic {
            rng: seed ^ 0x9E37_79B9_7F4A_7C15,
            run: run.to_string(),
            serial: 0,
            visitors: Vec::new(),
        }
    }

    /// SplitMix64: the next number of the stream.
    fn next(&mut self, below: u64) -> u64 {
        self.rng = self.rng.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % below.max(1)
    }

    /// One customer does one thing: mostly a new ticket, else one of the visitors with a
    /// ticket answers, withdraws or asks for a person.
    pub async fn step(
        &mut self,
        state: &Services,
        provider_url: &str,
    ) -> anyhow::Result<TrafficStep> {
        let with_ticket: Vec<usize> = (0..self.visitors.len())
            .filter(|i| self.visitors[*i].ticket_id.is_some())
            .collect();
        let roll = self.next(10);
        if with_ticket.is_empty() || roll < 5 {
            return self.open(state, provider_url).await;
        }
        let who = with_ticket[self.next(with_ticket.len() as u64) as usize];
        match roll {
            5..=7 => self.write(state, who, 4).await,
            8 => self.write(state, who, 5).await,
            _ => self.withdraw(state, who).await,
        }
    }

    /// A new customer with an order (its charges at the provider) opens a ticket.
    async fn open(&mut self, state: &Services, provider_url: &str) -> anyhow::Result<TrafficStep> {
        self.serial += 1;
        let lang = self.next(WORDS.len() as u64) as usize;
        let kind = self.next(4) as usize;
        let now = OffsetDateTime::from_unix_timestamp(state.clock.now_ms() / 1000)?;
        let world = self.world(lang, kind, now);
        let order = world.orders[0].id.clone();
        let customer_id = world.customers[0].id.clone();
        desk::world::load_into_provider(provider_url, &serde_json::to_string(&world)?).await?;
        world.load_into(&state.db).await?;
        let message = WORDS[lang][kind].replace("{order}", &order);
        let input = NewTicket {
            message,
            order_id: None,
        };
        let opened = customer::create_ticket(
            &state.db,
            state.clock.as_ref(),
            state.queue(),
            &customer_id,
            input,
        )
        .await;
        let step = match opened {
            Ok(ticket) => TrafficStep::Opened {
                ticket_id: ticket.id.to_string(),
            },
            Err(e) => TrafficStep::Refused { why: e.to_string() },
        };
        let ticket_id = match &step {
            TrafficStep::Opened { ticket_id } => Some(ticket_id.clone()),
            _ => None,
        };
        self.visitors.push(Visitor { lang, ticket_id });
        Ok(step)
    }

    /// A customer with one order: charged twice, bought recently, bought long ago, or
    /// (with no order named in the words) one ordinary order.
    fn world(&self, lang: usize, kind: usize, now: OffsetDateTime) -> World {
        let (region, currency, amount) = REGIONS[lang];
        let id = format!("C-DEMO-{}-{}", self.run, self.serial);
        let order = format!("D{}-{}", self.run, self.serial);
        let bought = match kind {
            2 => now - time::Duration::days(120),
            _ => now - time::Duration::days(2),
        };
        let charge = |n: u32, minutes: i64| WorldCharge {
            id: format!("ch_demo_{}_{}_{n}", self.run, self.serial),
            order_id: order.clone(),
            customer_id: id.clone(),
            amount: amount.to_string(),
            currency,
            captured: true,
            status: "succeeded".into(),
            disputed: false,
            created_at: bought + time::Duration::minutes(minutes),
            payment_method: "pm_card_visa_4242".into(),
            amount_refunded: None,
        };
        let charges = match kind {
            0 => vec![charge(1, 0), charge(2, 1)],
            _ => vec![charge(1, 0)],
        };
        World {
            customers: vec![WorldCustomer {
                id: id.clone(),
                name: NAMES[lang].into(),
                email: format!("demo.{}.{}@example.com", self.run, self.serial).to_lowercase(),
                region,
            }],
            orders: vec![WorldOrder {
                id: order.clone(),
                customer_id: id.clone(),
                product: if kind == 1 {
                    Product::MonthlyPlan
                } else {
                    Product::AnnualPlan
                },
                amount: amount.to_string(),
                currency,
                created_at: bought,
            }],
            charges,
            refunds: Vec::new(),
        }
    }

    /// Visitor `who` writes line `line` of their language on their ticket.
    async fn write(
        &mut self,
        state: &Services,
        who: usize,
        line: usize,
    ) -> anyhow::Result<TrafficStep> {
        let visitor = &self.visitors[who];
        let ticket_id = visitor.ticket_id.clone().unwrap_or_default();
        let Some(ticket) = desk::tickets::load_ticket(&state.db, &ticket_id).await? else {
            return Ok(TrafficStep::Refused {
                why: format!("no ticket {ticket_id}"),
            });
        };
        let text = WORDS[visitor.lang][line];
        let said = customer::add_customer_message(
            &state.db,
            state.clock.as_ref(),
            state.queue(),
            &ticket,
            text,
        )
        .await;
        Ok(match (said, line) {
            (Ok(()), 5) => TrafficStep::AskedForPerson { ticket_id },
            (Ok(()), _) => TrafficStep::Replied { ticket_id },
            (Err(e), _) => TrafficStep::Refused { why: e.to_string() },
        })
    }

    /// Visitor `who` withdraws their ticket; they write no more after.
    async fn withdraw(&mut self, state: &Services, who: usize) -> anyhow::Result<TrafficStep> {
        let ticket_id = self.visitors[who].ticket_id.take().unwrap_or_default();
        let Some(ticket) = desk::tickets::load_ticket(&state.db, &ticket_id).await? else {
            return Ok(TrafficStep::Refused {
                why: format!("no ticket {ticket_id}"),
            });
        };
        let done = customer::withdraw(&state.db, state.clock.as_ref(), &ticket).await?;
        Ok(match done.withdrawn {
            true => TrafficStep::Withdrew { ticket_id },
            false => TrafficStep::Refused { why: done.message },
        })
    }
}

/// The pause between two steps at `rate` steps a minute.
pub(super) fn pace(rate: f64) -> Duration {
    Duration::from_secs_f64(60.0 / rate.clamp(0.1, 600.0))
}

/// Steps the traffic at `rate` a minute until `stop`, logging each.
pub(super) async fn keep_coming(
    state: Services,
    provider_url: String,
    rate: f64,
    stop: desk::stop::StopSignal,
) {
    let run = store::new_id("r");
    let run: String = run.chars().rev().take(6).collect();
    let mut traffic = DemoTraffic::new(state.clock.now_ms() as u64, &run);
    let mut tick = tokio::time::interval(pace(rate));
    loop {
        tokio::select! {
            _ = stop.requested() => return,
            _ = tick.tick() => {}
        }
        match traffic.step(&state, &provider_url).await {
            Ok(step) => tracing::info!(?step, "demo traffic"),
            Err(e) => tracing::warn!(error = %format!("{e:#}"), "demo traffic step failed"),
        }
    }
}
