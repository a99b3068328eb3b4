//! A shop's past as a support team leaves it: a payments account (provider
//! customers `cus_…`, charges naming their order under `order_ref`, the refunds the team
//! made), the shop's customers and orders as CSV, a Zendesk-shaped export of tickets
//! with comments and users, the team's tag map — and, apart, the truth of what the team
//! decided on each ticket, to measure `import history`'s inference against.
//!
//! Written by its own rules, which know nothing of the importer: a team reads each
//! ticket and decides (refund in full or in part, escalate, ask, refuse), and when it
//! refunds, the refund reaches the provider hours to days later (a day, a week; now and
//! then weeks, and now and then a goodwill refund lands after a refused ticket). Tickets
//! come in six languages, some as long mails with quoted history and signatures, some
//! naming no order; some come in the API's shape, some from requesters the shop does not
//! have. Deterministic: a SplitMix64 stream, no clock.
//!
//! What it deliberately does not do: call the importer, the policy engine or anything
//! else in `app` — the truth is the simulated team's, not a computed label.

use serde_json::{json, Value};

use super::rng::SplitMix64;

/// What the team truly did on a ticket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Truth {
    pub ticket_id: String,
    /// `refund`, `no_refund`, `escalate` or `request_info`.
    pub outcome: &'static str,
    /// Charge → minor units refunded for this ticket.
    pub refunds: Vec<(String, i64)>,
    /// The requester is one of the shop's customers.
    pub matched: bool,
}

/// Everything a generated shop's past consists of.
pub struct ZendeskSet {
    /// `POST /__mock/world` body: the payments account.
    pub account: Value,
    pub customers_csv: String,
    pub orders_csv: String,
    /// The Zendesk export: one JSON value a line.
    pub export: String,
    /// The team's tag map (TOML).
    pub tag_map: String,
    pub truth: Vec<Truth>,
}

/// The metadata key this shop's charges name their order under.
pub const ORDER_KEY: &str = "order_ref";

const LANGS: [&str; 6] = ["en", "de", "fr", "es", "zh", "ja"];

/// The team: each ticket is assigned to one of them by its id (no draw from the
/// stream, so adding them changed no other generated value).
const AGENTS: [(i64, &str); 3] = [
    (41, "ana@support.example"),
    (42, "ben@support.example"),
    (43, "chen@support.example"),
];

/// What a customer writes about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    ChargedTwice,
    Cancel,
    AmountWrong,
}

/// A complaint about an order, per language; `{o}` is the order when named.
fn complaint(lang: &str, kind: Kind, with_order: bool) -> String {
    let named = [
        (
            "en",
            [
                "I was charged twice for order {o}, please refund one.",
                "Please cancel {o} and give my money back.",
                "Order {o}: the amount on my card looks wrong.",
            ],
        ),
        (
            "de",
            [
                "Ich wurde für Bestellung {o} doppelt belastet.",
                "Bitte stornieren Sie {o} und erstatten Sie mir den Betrag.",
                "Bei Bestellung {o} stimmt der Betrag nicht.",
            ],
        ),
        (
            "fr",
            [
                "J'ai été débité deux fois pour la commande {o}.",
                "Merci d'annuler {o} et de me rembourser.",
                "Le montant de la commande {o} est faux.",
            ],
        ),
        (
            "es",
            [
                "Me cobraron dos veces el pedido {o}.",
                "Por favor cancelen {o} y devuélvanme el dinero.",
                "El importe del pedido {o} no es correcto.",
            ],
        ),
        (
            "zh",
            [
                "订单{o}被扣了两次款，请退一笔。",
                "请取消订单{o}并退款。",
                "订单{o}的金额不对。",
            ],
        ),
        (
            "ja",
            [
                "注文{o}で二重に請求されました。",
                "注文{o}をキャンセルして返金してください。",
                "注文{o}の金額が違います。",
            ],
        ),
    ];
    let unnamed = [
        (
            "en",
            [
                "Something is wrong with my bill, can you check?",
                "I want a refund.",
            ],
        ),
        (
            "de",
            [
                "Mit meiner Rechnung stimmt etwas nicht.",
                "Ich möchte mein Geld zurück.",
            ],
        ),
        (
            "fr",
            [
                "Il y a un problème avec ma facture.",
                "Je voudrais être remboursé.",
            ],
        ),
        (
            "es",
            ["Hay un problema con mi factura.", "Quiero un reembolso."],
        ),
        ("zh", ["我的账单有问题，请帮我看看。", "我要退款。"]),
        (
            "ja",
            [
                "請求がおかしいです。確認してください。",
                "返金してほしいです。",
            ],
        ),
    ];
    let which = match kind {
        Kind::ChargedTwice => 0,
        Kind::Cancel => 1,
        Kind::AmountWrong => 2,
    };
    if with_order {
        let bank = named
            .iter()
            .find(|(l, _)| *l == lang)
            .map(|(_, b)| b)
            .unwrap_or(&named[0].1);
        bank[which].to_string()
    } else {
        let bank = unnamed
            .iter()
            .find(|(l, _)| *l == lang)
            .map(|(_, b)| b)
            .unwrap_or(&unnamed[0].1);
        bank[usize::from(kind != Kind::ChargedTwice)].to_string()
    }
}

/// A long mail: the complaint, a signature, a legal footer and the quoted thread.
fn long_mail(text: &str, rng: &mut SplitMix64) -> String {
    let mut mail = format!("{text}\n\n--\nSent from my phone\n");
    let footer =
        "This e-mail and any attachments are confidential and intended solely for the addressee. ";
    for _ in 0..rng.range(8, 30) {
        mail.push_str(footer);
    }
    mail.push_str("\n\n> On a previous day, support wrote:\n");
    for i in 0..rng.range(20, 60) {
        mail.push_str(&format!(
            "> line {i} of an earlier message in this thread, kept by the mail client\n"
        ));
    }
    mail
}

fn at(day: i64, minute: i64) -> String {
    // 2026-09-01T00:00:00Z + days and minutes.
    let base = 1_788_220_800i64;
    let t = time::OffsetDateTime::from_unix_timestamp(base + day * 86_400 + minute * 60)
        .expect("a time in range");
    t.format(&time::format_description::well_known::Rfc3339)
        .expect("formats")
}

/// One of the shop's orders: its id, day, and charges (id, minor units).
#[derive(Clone)]
struct ShopOrder {
    id: String,
    day: i64,
    charges: Vec<(String, i64)>,
}

struct Customer {
    email: String,
    currency: &'static str,
    decimals: u32,
    orders: Vec<ShopOrder>,
}

/// What is being written: the account, the files, the truth.
#[derive(Default)]
struct Shop {
    customers: Vec<Customer>,
    account_customers: Vec<Value>,
    charges: Vec<Value>,
    refunds: Vec<Value>,
    customers_csv: String,
    orders_csv: String,
    export: String,
    truth: Vec<Truth>,
    /// Minor units refunded so far, per charge (never more than its amount).
    refunded: std::collections::HashMap<String, i64>,
    /// Each customer's last ticket day.
    last_day: std::collections::HashMap<usize, i64>,
}

const REGIONS: [(&str, &str, u32); 4] = [
    ("US", "USD", 2),
    ("EU", "EUR", 2),
    ("CN", "CNY", 2),
    ("JP", "JPY", 0),
];

/// Customer `c`: half give their provider customer id, the others are found by email.
fn add_customer(shop: &mut Shop, rng: &mut SplitMix64, c: usize) {
    let (region, currency, decimals) = rng.pick(&REGIONS);
    let id = format!("CU{:05}", 1000 + c);
    let provider = format!("cus_{:014x}", rng.next() >> 8);
    let email = format!("customer{c}@mail{}.example", c % 7);
    let given = if rng.chance(50) {
        provider.as_str()
    } else {
        ""
    };
    shop.customers_csv += &format!("{id},Customer {c},{email},{region},{given}\n");
    shop.account_customers
        .push(json!({ "id": provider, "email": email,
        "name": format!("Customer {c}"), "created_at": at(0, 0) }));
    let mut orders = Vec::new();
    for o in 0..rng.range(1, 3) {
        let order = ShopOrder {
            id: format!("#{}{:03}", 40 + c, o),
            day: rng.range(0, 60),
            charges: Vec::new(),
        };
        let minor = rng.range(5, 300) * 100;
        let product = rng.pick(&["annual_plan", "monthly_plan", "addon"]);
        shop.orders_csv += &format!(
            "{},{id},{product},{},{currency},{}\n",
            order.id,
            money(minor, decimals),
            at(order.day, 0)
        );
        // Two in five orders were charged twice.
        let copies = if rng.chance(40) { 2 } else { 1 };
        let mut order = order;
        for k in 0..copies {
            let charge_id = format!("ch_{c}_{o}_{k}");
            shop.charges
                .push(json!({ "id": charge_id, "customer_id": provider,
                "amount": money(minor, decimals), "currency": currency,
                "created_at": at(order.day, 1 + k * 2), "payment_method": "pm_card",
                "metadata": { ORDER_KEY: order.id } }));
            order.charges.push((charge_id, minor));
        }
        orders.push(order);
    }
    shop.customers.push(Customer {
        email,
        currency,
        decimals,
        orders,
    });
}

/// A shop of about `tickets / 2` customers and `tickets` tickets from `seed`.
pub fn zendesk_set(seed: u64, tickets: usize) -> ZendeskSet {
    let mut rng = SplitMix64::new(seed ^ 0x3636);
    let mut shop = Shop {
        customers_csv: "id,name,email,region,provider_customer_id\n".into(),
        orders_csv: "id,customer_id,product,amount,currency,created_at\n".into(),
        ..Shop::default()
    };
    for c in 0..tickets.div_ceil(2) {
        add_customer(&mut shop, &mut rng, c);
    }
    for (n, cust) in shop.customers.iter().enumerate() {
        shop.export +=
            &json!({ "id": 500_000 + n, "email": cust.email, "role": "end-user" }).to_string();
        shop.export.push('\n');
    }
    for (id, email) in AGENTS {
        shop.export += &json!({ "id": id, "email": email, "role": "agent" }).to_string();
        shop.export.push('\n');
    }
    for t in 0..tickets {
        add_ticket(&mut shop, &mut rng, t);
    }
    ZendeskSet {
        account: json!({ "customers": shop.account_customers, "orders": [],
                         "charges": shop.charges, "refunds": shop.refunds }),
        customers_csv: shop.customers_csv,
        orders_csv: shop.orders_csv,
        export: shop.export,
        tag_map: "tier2 = \"escalate\"\nescalated_billing = \"escalate\"\n\
                  need_info = \"request_info\"\nawaiting_customer = \"request_info\"\n"
            .into(),
        truth: shop.truth,
    }
}

/// The day a customer's ticket comes: after the order; three weeks after their last
/// ticket at the earliest, except one in fifty that follows within days (a refund may
/// then land after the customer's next ticket).
fn ticket_day(shop: &mut Shop, rng: &mut SplitMix64, n: usize, order_day: i64) -> i64 {
    let mut day = order_day + rng.range(1, 20);
    if let Some(last) = shop.last_day.get(&n) {
        let gap = if rng.chance(2) {
            rng.range(1, 5)
        } else {
            21 + rng.range(0, 10)
        };
        day = day.max(last + gap);
    }
    shop.last_day.insert(n, day);
    day
}

/// What the team decides on what it reads — refund (in full or in part), escalate,
/// ask, or refuse — with the tags its agents put on such tickets. Its habits, not the
/// desk's policy engine: a second identical charge is refunded, a cancellation within
/// two weeks of the order refunded, anything unclear asked about; and people vary (one
/// decision in six goes another way).
fn decide(
    rng: &mut SplitMix64,
    kind: Kind,
    named: bool,
    duplicated: bool,
    days_since_order: i64,
) -> (&'static str, &'static str) {
    let usual = match (kind, named) {
        (_, false) => "request_info",
        (Kind::ChargedTwice, true) if duplicated => "refund",
        (Kind::ChargedTwice, true) => "no_refund",
        (Kind::Cancel, true) if days_since_order <= 14 => "refund",
        (Kind::Cancel, true) => "no_refund",
        (Kind::AmountWrong, true) => "escalate",
    };
    let decision = if rng.chance(83) {
        usual
    } else {
        rng.pick(&[
            "refund_part",
            "escalate",
            "request_info",
            "no_refund",
            "refund",
        ])
    };
    match decision {
        "refund" | "refund_part" => (decision, "billing"),
        "escalate" => (decision, rng.pick(&["tier2", "escalated_billing"])),
        "request_info" => (decision, rng.pick(&["need_info", "awaiting_customer"])),
        _ => (
            "no_refund",
            rng.pick(&["closed", "billing", "policy_explained"]),
        ),
    }
}

/// Ticket `t`, and the refund the team makes for it, hours to days later.
fn add_ticket(shop: &mut Shop, rng: &mut SplitMix64, t: usize) {
    let matched = !rng.chance(4);
    let n = rng.below(shop.customers.len() as u64) as usize;
    let cust = &shop.customers[n];
    let order = cust.orders[rng.below(cust.orders.len() as u64) as usize].clone();
    let (email, currency, decimals) = (cust.email.clone(), cust.currency, cust.decimals);
    let day = ticket_day(shop, rng, n, order.day);
    let minute = rng.range(0, 24 * 60 - 1);
    let lang = rng.pick(&LANGS);
    let kind = rng.pick(&[
        Kind::ChargedTwice,
        Kind::ChargedTwice,
        Kind::Cancel,
        Kind::AmountWrong,
    ]);
    let named = rng.chance(70);
    let mut text = complaint(lang, kind, named).replace("{o}", &order.id);
    if rng.chance(10) {
        text = long_mail(&text, rng);
    }
    let (decision, tag) = decide(rng, kind, named, order.charges.len() > 1, day - order.day);
    let ticket_id = 70_000 + t as i64;
    let mut outcome = if decision == "refund_part" {
        "refund"
    } else {
        decision
    };
    let mut tags = vec![tag];
    let mut refunds = Vec::new();
    if matched && outcome == "refund" {
        let (charge_id, charge_minor) = order.charges.last().cloned().unwrap_or_default();
        let already = shop.refunded.get(&charge_id).copied().unwrap_or(0);
        let want = if decision == "refund_part" {
            (charge_minor / 2 / 100).max(1) * 100
        } else {
            charge_minor
        };
        let amount = want.min(charge_minor - already);
        if amount > 0 {
            // A day, a week; one in fifty weeks later (past any window a team uses).
            let delay = if rng.chance(2) {
                rng.range(16, 25) * 1440
            } else {
                rng.pick(&[60, 1440, 1500, 2880, 7 * 1440, 8 * 1440, 10 * 1440]) + rng.range(0, 120)
            };
            shop.refunded.insert(charge_id.clone(), already + amount);
            shop.refunds.push(json!({ "id": format!("re_{ticket_id}"), "charge_id": charge_id,
                "amount": money(amount, decimals), "currency": currency, "status": "succeeded",
                "created_at": at(day, minute + delay),
                "reason": if order.charges.len() > 1 { "duplicate" } else { "requested_by_customer" } }));
            refunds.push((charge_id, amount));
        } else {
            (outcome, tags) = ("no_refund", vec!["already_refunded"]);
        }
    }
    let (email, requester) = if matched {
        (email, 500_000 + n as i64)
    } else {
        (format!("walk-in{t}@other.example"), 900_000 + t as i64)
    };
    shop.export += &ticket_line(
        rng, ticket_id, day, minute, requester, &email, &text, &tags, matched,
    );
    shop.export.push('\n');
    shop.truth.push(Truth {
        ticket_id: ticket_id.to_string(),
        outcome,
        refunds,
        matched,
    });
}

/// The ticket as Zendesk gives it: mostly the export's line (comments inside), one in
/// five in the API's shape (`{"ticket", "comments", "users"}`).
#[allow(clippy::too_many_arguments)]
fn ticket_line(
    rng: &mut SplitMix64,
    id: i64,
    day: i64,
    minute: i64,
    requester: i64,
    email: &str,
    text: &str,
    tags: &[&str],
    known_user: bool,
) -> String {
    let created = at(day, minute);
    let assignee = AGENTS[(id % 3) as usize].0;
    let comments = json!([
        { "author_id": requester, "plain_body": text, "created_at": created, "public": true },
        { "author_id": assignee, "plain_body": "Thank you, we are looking into it.",
          "created_at": at(day, minute + 30), "public": true }
    ]);
    let ticket = json!({ "id": id, "created_at": created, "subject": format!("Ticket {id}"),
        "requester_id": requester, "assignee_id": assignee, "tags": tags, "status": "solved" });
    let line = if rng.chance(20) {
        json!({ "ticket": ticket, "comments": comments, "users": [{ "id": requester, "email": email }] })
    } else {
        let mut t = ticket;
        t["comments"] = comments;
        if !known_user {
            t["requester"] = json!({ "id": requester, "email": email });
        }
        t
    };
    line.to_string()
}

fn money(minor: i64, decimals: u32) -> String {
    if decimals == 0 {
        minor.to_string()
    } else {
        format!("{}.{:02}", minor / 100, minor % 100)
    }
}
