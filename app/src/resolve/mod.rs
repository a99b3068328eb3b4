//! Which order a ticket is about, resolved against the customer's own records rather
//! than against a pattern of what order ids look like (issue 15; docs/spec/domain.md: ids are
//! opaque strings chosen by the shop).
//!
//! Order of evidence, strongest first:
//! 1. the order the customer picked in the ticket form (`form`), when it is theirs;
//! 2. one of their real order ids written anywhere in the conversation (`message`):
//!    Unicode NFKC (full-width to ASCII), case-insensitive, `#` optional, bounded (an id
//!    never matches inside a longer token) and the longest id wins where ids are
//!    prefixes of one another;
//! 3. reference-like tokens that match none of their orders are handed back
//!    ([`Resolution::unmatched`]) for the workflow to look up among all orders (RP-007:
//!    someone else's order goes to security; the model is never trusted with that);
//! 4. secondary evidence the customer wrote (`message`): product names, amounts,
//!    currencies, explicit dates;
//! 5. the billing records (`records`): their only order, or the one order whose charges
//!    show the problem described;
//! 6. otherwise no order, and [`Resolution::missing`] says what to ask (RP-002 §4).
//!
//! Pure functions over plain data: no I/O, no clock, deterministic. Nothing a customer
//! writes is obeyed here; text only selects among records that exist.

mod evidence;
mod matching;
mod normalise;
mod references;

use policy_engine::RequestKind;
use serde::{Deserialize, Serialize};

pub use evidence::{mentioned_amounts, mentioned_products};
pub use matching::{repeat_purchase, shows_problem, ChargeSummary, OrderCandidate};
pub use normalise::{contains_phrase, fold};
pub use references::{
    lookup_spellings, mentioned_ids, unmatched_references, Reference, MAX_REFERENCES,
};

use matching::by_secondary_evidence;

/// Where the order of a decision came from, recorded with the case so a reviewer sees
/// why this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OrderSource {
    /// Picked by the customer in the ticket form.
    Form,
    /// Written by the customer (an id, or a product, amount or date that singles it out).
    Message,
    /// The billing records single it out (the only order, the one showing the problem).
    Records,
    /// Named by the model and verified to be one of the customer's orders; used only
    /// when neither text nor records settle it.
    Agent,
}

impl OrderSource {
    pub fn as_str(self) -> &'static str {
        match self {
            OrderSource::Form => "form",
            OrderSource::Message => "message",
            OrderSource::Records => "records",
            OrderSource::Agent => "agent",
        }
    }
}

/// Where the request kind of a proposal came from, recorded next to [`OrderSource`] so a
/// reviewer sees why the case was read as this kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestSource {
    /// The customer's words name the kind.
    Text,
    /// The words left it unclear or the order's charges contradict them, and the
    /// charges fit exactly one kind (`agent::records_kind`).
    Records,
}

impl RequestSource {
    pub fn as_str(self) -> &'static str {
        match self {
            RequestSource::Text => "text",
            RequestSource::Records => "records",
        }
    }
}

/// What resolution needs to know about the ticket.
pub struct ResolveInput<'a> {
    /// Every customer message, oldest first.
    pub messages: &'a [String],
    /// The order picked in the ticket form.
    pub form_order: Option<&'a str>,
    pub request: RequestKind,
    pub orders: &'a [OrderCandidate],
}

/// The outcome of resolution.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Resolution {
    pub order_id: Option<String>,
    pub source: Option<OrderSource>,
    /// Reference-like tokens matching none of the customer's orders, in order of
    /// appearance (at most [`MAX_REFERENCES`]); set only when no own order was named.
    pub unmatched: Vec<Reference>,
    /// Orders whose charges must be read before the records can settle it.
    pub needs_charges: Vec<String>,
    /// What the customer must tell us when no order could be chosen.
    pub missing: Option<&'static str>,
}

/// Resolves the order of a ticket against the customer's orders (see the module
/// comment for the order of evidence).
pub fn resolve(input: &ResolveInput<'_>) -> Resolution {
    let ids: Vec<&str> = input.orders.iter().map(|o| o.id.as_str()).collect();
    let found = |id: &str, source| Resolution {
        order_id: Some(id.to_string()),
        source: Some(source),
        ..Resolution::default()
    };
    if let Some(form) = input.form_order.filter(|f| ids.contains(f)) {
        return found(form, OrderSource::Form);
    }
    let text = fold(&input.messages.join("\n"));
    let mentioned = mentioned_ids(input.messages, &ids);
    let (mut candidates, source): (Vec<&OrderCandidate>, OrderSource) = if mentioned.is_empty() {
        let unmatched = unmatched_references(input.messages, &ids);
        if !unmatched.is_empty() {
            // The workflow looks these up among all orders; until then a strong one
            // stands as named (an order that does not exist is asked about, RP-002 §4).
            if let Some(named) = unmatched.iter().find(|r| r.strong) {
                return Resolution {
                    order_id: Some(named.text.clone()),
                    source: Some(OrderSource::Message),
                    unmatched,
                    ..Resolution::default()
                };
            }
        }
        let narrowed = by_secondary_evidence(&text, input.orders.iter().collect());
        let source = if narrowed.len() < input.orders.len() {
            OrderSource::Message
        } else {
            OrderSource::Records
        };
        let mut r = settle(input.request, narrowed, source);
        r.unmatched = unmatched;
        return r;
    } else {
        let named = input
            .orders
            .iter()
            .filter(|o| mentioned.contains(&o.id))
            .collect();
        (named, OrderSource::Message)
    };
    if candidates.len() > 1 {
        candidates = by_secondary_evidence(&text, candidates);
    }
    let mut r = settle(input.request, candidates.clone(), source);
    if r.order_id.is_none() && r.needs_charges.is_empty() {
        // Several of their orders named and nothing tells them apart: the first named.
        r = found(&mentioned[0], OrderSource::Message);
    }
    r
}

/// The last steps: one candidate left, else the records (the one order showing the
/// problem, the repeat purchase), else nothing and what is missing.
fn settle(
    request: RequestKind,
    candidates: Vec<&OrderCandidate>,
    source: OrderSource,
) -> Resolution {
    if let [only] = candidates.as_slice() {
        return Resolution {
            order_id: Some(only.id.clone()),
            source: Some(source),
            ..Resolution::default()
        };
    }
    let unresolved = Resolution {
        missing: Some(if candidates.is_empty() {
            "an order: the customer has none on record"
        } else {
            "which order the request is about: the customer has several and neither the messages nor the records single one out"
        }),
        ..Resolution::default()
    };
    if candidates.is_empty() || matches!(request, RequestKind::Cancellation | RequestKind::Unclear)
    {
        return unresolved;
    }
    let unread: Vec<String> = candidates
        .iter()
        .filter(|o| o.charges.is_none())
        .map(|o| o.id.clone())
        .collect();
    if !unread.is_empty() {
        return Resolution {
            needs_charges: unread,
            ..Resolution::default()
        };
    }
    let showing: Vec<&OrderCandidate> = candidates
        .iter()
        .copied()
        .filter(|o| shows_problem(request, o))
        .collect();
    let pick = match showing.as_slice() {
        [only] => Some(*only),
        [] if request == RequestKind::DuplicateCharge => repeat_purchase(&candidates),
        _ => None,
    };
    match pick {
        Some(o) => Resolution {
            order_id: Some(o.id.clone()),
            source: Some(OrderSource::Records),
            ..Resolution::default()
        },
        None => unresolved,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn order(id: &str, product: &str, amount: &str) -> OrderCandidate {
        OrderCandidate {
            id: id.to_string(),
            product: product.to_string(),
            amount: amount.parse().unwrap(),
            currency: "USD".to_string(),
            date: (2026, 12, 1),
            charges: None,
        }
    }

    fn resolve_text(orders: &[OrderCandidate], messages: &[&str]) -> Resolution {
        let messages: Vec<String> = messages.iter().map(|m| m.to_string()).collect();
        resolve(&ResolveInput {
            messages: &messages,
            form_order: None,
            request: RequestKind::Cancellation,
            orders,
        })
    }

    /// One id of each scheme the issue names, and the shop-style `O-1001`.
    const SCHEMES: [&str; 6] = [
        "O-0001-2",
        "#10234",
        "ORD-2025-000123",
        "7000024",
        "MX5H38",
        "O-1001",
    ];

    fn full_width(text: &str) -> String {
        text.chars()
            .map(|c| match c {
                '!'..='~' => char::from_u32(c as u32 + 0xFEE0).unwrap_or(c),
                ' ' => '\u{3000}',
                _ => c,
            })
            .collect()
    }

    #[test]
    fn every_customer_message_is_scanned_not_only_the_first() {
        let orders = [
            order("#10234", "addon", "5"),
            order("#10235", "annual_plan", "99"),
        ];
        let r = resolve_text(&orders, &["Hi, I need help.", "It's order 10235."]);
        assert_eq!(r.order_id.as_deref(), Some("#10235"));
        assert_eq!(r.source, Some(OrderSource::Message));
    }

    #[test]
    fn the_form_order_wins_over_what_the_text_says() {
        let orders = [order("O-1", "addon", "5"), order("O-2", "addon", "5")];
        let messages = vec!["about O-2".to_string()];
        let r = resolve(&ResolveInput {
            messages: &messages,
            form_order: Some("O-1"),
            request: RequestKind::DuplicateCharge,
            orders: &orders,
        });
        assert_eq!(
            (r.order_id.as_deref(), r.source),
            (Some("O-1"), Some(OrderSource::Form))
        );
    }

    #[test]
    fn an_empty_message_with_several_orders_resolves_nothing_and_says_what_is_missing() {
        let orders = [order("A1", "addon", "5"), order("A2", "annual_plan", "99")];
        let r = resolve_text(&orders, &[""]);
        assert_eq!(r.order_id, None);
        assert!(r.missing.is_some_and(|m| m.contains("which order")));
        let r = resolve_text(&[], &[]);
        assert_eq!(r.order_id, None);
        assert!(r.missing.is_some());
    }

    #[test]
    fn a_message_with_fifty_id_like_tokens_resolves_to_the_customers_order() {
        let mut text: Vec<String> = (0..50).map(|i| format!("ZX{:04}Q", i * 7)).collect();
        text.insert(31, "mx5h38".into());
        let orders = [order("MX5H38", "addon", "5"), order("MX5H39", "addon", "5")];
        let r = resolve_text(&orders, &[&text.join(" ")]);
        assert_eq!(r.order_id.as_deref(), Some("MX5H38"));
        let refs = unmatched_references(&[text.join(" ")], &["MX5H38"]);
        assert_eq!(refs.len(), MAX_REFERENCES, "look-ups stay bounded");
    }

    #[test]
    fn a_reference_to_no_order_of_the_customer_is_handed_back_for_lookup() {
        let orders = [order("#10234", "addon", "5")];
        let r = resolve_text(&orders, &["订单号：88812 重复扣款"]);
        assert_eq!(r.order_id.as_deref(), Some("88812"));
        assert_eq!(
            r.unmatched,
            [Reference {
                text: "88812".into(),
                strong: true
            }]
        );
        assert!(lookup_spellings(&r.unmatched[0]).contains(&"#88812".to_string()));
    }

    #[test]
    fn products_amounts_and_dates_choose_among_orders() {
        let mut a = order("A-100", "annual_plan", "99.00");
        let mut b = order("A-200", "monthly_plan", "12.00");
        b.date = (2026, 11, 5);
        a.date = (2026, 10, 1);
        let orders = [a, b];
        assert_eq!(
            resolve_text(&orders, &["my yearly plan"])
                .order_id
                .as_deref(),
            Some("A-100")
        );
        assert_eq!(
            resolve_text(&orders, &["the $12 one"]).order_id.as_deref(),
            Some("A-200")
        );
        assert_eq!(
            resolve_text(&orders, &["bought on Nov 5"])
                .order_id
                .as_deref(),
            Some("A-200")
        );
        assert_eq!(
            resolve_text(&orders, &["2026-10-01 の注文"])
                .order_id
                .as_deref(),
            Some("A-100")
        );
        assert_eq!(
            resolve_text(&orders, &["年額プランを解約"])
                .order_id
                .as_deref(),
            Some("A-100")
        );
    }

    #[test]
    fn the_records_settle_a_charge_complaint_or_ask_for_the_charges_first() {
        let mut a = order("K1", "addon", "5.00");
        let mut b = order("K2", "addon", "9.00");
        let messages = vec!["charged twice".to_string()];
        let input = |orders: &[OrderCandidate]| {
            resolve(&ResolveInput {
                messages: &messages,
                form_order: None,
                request: RequestKind::DuplicateCharge,
                orders,
            })
        };
        assert_eq!(input(&[a.clone(), b.clone()]).needs_charges, ["K1", "K2"]);
        let paid = |amount: &str| ChargeSummary {
            amount: amount.parse().unwrap(),
            took_money: true,
            hold: false,
        };
        a.charges = Some(vec![paid("5.00")]);
        b.charges = Some(vec![paid("9.00"), paid("9.00")]);
        let r = input(&[a, b]);
        assert_eq!(
            (r.order_id.as_deref(), r.source),
            (Some("K2"), Some(OrderSource::Records))
        );
    }

    fn prefix_words() -> impl Strategy<Value = &'static str> {
        prop::sample::select(vec![
            "",
            "order ",
            "order no. ",
            "Order number: ",
            "order #",
            "订单号：",
            "订单",
            "注文番号",
            "注文番号は",
            "ref ",
        ])
    }

    proptest! {
        /// Every id scheme × case × width × prefix word resolves to exactly that order,
        /// among orders of every scheme (some of them prefixes of one another).
        #[test]
        fn every_scheme_case_width_and_prefix_word_resolves_to_exactly_that_order(
            scheme in 0usize..SCHEMES.len(),
            lower in any::<bool>(),
            wide in any::<bool>(),
            hash in any::<bool>(),
            prefix in prefix_words(),
            follow_up in any::<bool>(),
        ) {
            let mut orders: Vec<OrderCandidate> =
                SCHEMES.iter().map(|id| order(id, "addon", "5")).collect();
            // Prefix collisions: `O-0001` of `O-0001-2`, `#1023` of `#10234`.
            orders.push(order("O-0001", "addon", "5"));
            orders.push(order("#1023", "addon", "5"));
            let id = SCHEMES[scheme];
            let mut written = id.trim_start_matches('#').to_string();
            if hash { written = format!("#{written}"); }
            if lower { written = written.to_lowercase(); }
            let mut sentence = format!("Hello, {prefix}{written} was charged twice.");
            if wide { sentence = full_width(&sentence); }
            let messages: Vec<&str> = if follow_up {
                vec!["I have a problem with a payment", &sentence]
            } else {
                vec![&sentence]
            };
            let r = resolve_text(&orders, &messages);
            prop_assert_eq!(r.order_id.as_deref(), Some(id));
            prop_assert_eq!(r.source, Some(OrderSource::Message));
        }

        /// Any text, any ids: no panic, and the same answer every run.
        #[test]
        fn resolution_never_panics_and_is_deterministic(
            text in ".{0,300}",
            ids in prop::collection::vec("[#]?[A-Za-z0-9-]{1,12}", 0..6),
        ) {
            let orders: Vec<OrderCandidate> =
                ids.iter().map(|id| order(id, "addon", "5")).collect();
            let a = resolve_text(&orders, &[&text]);
            let b = resolve_text(&orders, &[&text]);
            prop_assert_eq!(a, b);
        }
    }
}
