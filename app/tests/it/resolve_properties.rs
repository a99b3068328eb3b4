//! Property tests of order resolution on ids as people write them, over the
//! public `domain::resolve` API only:
//!
//! - every id form (as stored, without `#`, in groups, broken over a line, with any dash
//!   or the katakana long vowel mark, with an extra dash, with thousands separators,
//!   inside a URL path or query) × every case and width × every neighbouring decoy
//!   (phone, post code, VAT, invoice, tracking, store and bank reference numbers, before
//!   or after it) resolves to that order or to "ask", never to another of the customer's
//!   orders; without a decoy, to that order;
//! - a mail of 200 KB with 500 numbers resolves exactly as the short mail inside it does:
//!   the scans are linear by construction (`resolve::ids` counts its work; nothing here
//!   times anything);
//! - the same mail gives the same answer on every run.
//!
//! The customer's orders mix every id scheme, with near neighbours: prefixes of one
//! another (`#6516` of `#65169`), siblings (`O-0412-1`, `O-0412-2`), one digit apart.
//! Decoys never equal nor contain an order id, read as letters and digits only: a decoy
//! that spells an order is not a decoy.

use domain::resolve::{resolve, OrderCandidate, Resolution, ResolveInput};
use policy_engine::RequestKind;
use proptest::prelude::*;

/// The customer's orders: every scheme, and ids that are prefixes, siblings or one digit
/// apart from each other.
const ORDERS: [&str; 12] = [
    "250715104088854279",
    "250715104088854270",
    "250612-8876084",
    "R670394232",
    "#65169",
    "#6516",
    "O-0412-1",
    "O-0412-2",
    "ORD-2025-000123",
    "MX5H38",
    "7000024",
    "7000025",
];

fn candidates() -> Vec<OrderCandidate> {
    ORDERS
        .iter()
        .enumerate()
        .map(|(k, id)| OrderCandidate {
            id: id.to_string(),
            product: "addon".into(),
            amount: rust_decimal::Decimal::new(500 + k as i64, 2),
            currency: "USD".into(),
            placed_at: time::macros::datetime!(2026-11-01 12:00 UTC)
                + time::Duration::days(k as i64),
            charges: None,
        })
        .collect()
}

/// Letters and digits only, lower case, after folding full width: how a person compares
/// two ids, and how decoys are kept from spelling an order.
fn skeleton(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '\u{ff01}'..='\u{ff5e}' => char::from_u32(c as u32 - 0xfee0).unwrap_or(c),
            _ => c,
        })
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// How a person writes an id.
#[derive(Debug, Clone, Copy)]
enum Form {
    AsStored,
    WithoutHash,
    Groups,
    LineBreak,
    AnyDash,
    ExtraDash,
    Thousands,
    UrlPath,
    UrlQuery,
}

const FORMS: [Form; 9] = [
    Form::AsStored,
    Form::WithoutHash,
    Form::Groups,
    Form::LineBreak,
    Form::AnyDash,
    Form::ExtraDash,
    Form::Thousands,
    Form::UrlPath,
    Form::UrlQuery,
];

/// Every dash a keyboard or a word processor produces, and the katakana long vowel mark
/// (full and half width) Japanese input puts between digits.
const DASHES: [char; 11] = [
    '-', '\u{2010}', '\u{2011}', '\u{2012}', '\u{2013}', '\u{2014}', '\u{2015}', '\u{2212}',
    '\u{30fc}', '\u{ff70}', '\u{ff0d}',
];

/// `id` written in `form`; `pick` chooses among the form's variants. `None` when the form
/// does not apply to this id (thousands separators in a code, an extra dash in a
/// two-character id).
fn write(id: &str, form: Form, pick: usize) -> Option<String> {
    let bare = id.trim_start_matches('#');
    let chars: Vec<char> = bare.chars().collect();
    Some(match form {
        Form::AsStored => id.to_string(),
        Form::WithoutHash => bare.to_string(),
        Form::Groups => {
            let plain: Vec<char> = skeleton(id).to_uppercase().chars().collect();
            let size = 3 + pick % 2;
            (plain.len() >= 7).then_some(())?;
            plain
                .chunks(size)
                .map(|c| c.iter().collect::<String>())
                .collect::<Vec<_>>()
                .join(" ")
        }
        Form::LineBreak => {
            let at = 2 + pick % chars.len().checked_sub(3)?.max(1);
            let (head, tail) = chars.split_at(at.min(chars.len() - 1));
            let (head, tail): (String, String) = (head.iter().collect(), tail.iter().collect());
            format!("{head}\n{tail}")
        }
        Form::AnyDash => {
            id.contains('-').then_some(())?;
            id.replace('-', &DASHES[pick % DASHES.len()].to_string())
        }
        Form::ExtraDash => {
            let at = chars
                .iter()
                .position(|c| c.is_ascii_digit())
                .filter(|p| *p > 0)
                .unwrap_or(chars.len() / 2);
            (chars.len() >= 5 && chars[at - 1] != '-').then_some(())?;
            let (head, tail) = chars.split_at(at);
            format!(
                "{}-{}",
                head.iter().collect::<String>(),
                tail.iter().collect::<String>()
            )
        }
        Form::Thousands => {
            let digits: String = bare.chars().filter(char::is_ascii_digit).collect();
            (digits == bare && (4..=12).contains(&digits.len())).then_some(())?;
            let sep = [".", ",", "'", "\u{a0}"][pick % 4];
            let mut groups: Vec<String> = Vec::new();
            let mut rest = digits.as_str();
            while rest.len() > 3 {
                groups.insert(0, rest[rest.len() - 3..].to_string());
                rest = &rest[..rest.len() - 3];
            }
            groups.insert(0, rest.to_string());
            groups.join(sep)
        }
        Form::UrlPath => {
            let encoded = id.replace('#', "%23");
            format!("https://shop.example/account/orders/{encoded}?ref=mail&utm_source=receipt")
        }
        Form::UrlQuery => format!("https://shop.example/track?lang=en&order={bare}&step=2"),
    })
}

/// Upper, lower or as it is; full width or not (URLs stay half width: nobody types a
/// full-width URL, and the issue names case and width for ids).
fn dress(written: &str, case: u8, wide: bool, form: Form) -> String {
    let cased = match case % 3 {
        0 => written.to_string(),
        1 => written.to_lowercase(),
        _ => written.to_uppercase(),
    };
    if !wide || matches!(form, Form::UrlPath | Form::UrlQuery) {
        return cased;
    }
    cased
        .chars()
        .map(|c| match c {
            '!'..='~' => char::from_u32(c as u32 + 0xfee0).unwrap_or(c),
            _ => c,
        })
        .collect()
}

/// Numbers that are not orders, in the words a customer puts around them.
fn decoy(kind: u8, digits: &str) -> String {
    let d = |n: usize| -> String { digits.chars().cycle().take(n).collect() };
    match kind % 8 {
        0 => format!("my phone is +49 30 {}", d(7)),
        1 => format!("post code {}", d(5)),
        2 => format!("VAT DE{}", d(9)),
        3 => format!("invoice RE-{}-{}", d(4), d(5)),
        4 => format!("tracking 1Z{}", d(16)),
        5 => format!("TRADER JOE'S #{}", d(3)),
        6 => format!("bank ref. {}", d(12)),
        _ => format!("call 0151 {}", d(8)),
    }
}

/// True when a decoy spells an order, or an order spells it: then it is no decoy.
fn spells_an_order(decoy: &str) -> bool {
    let key = skeleton(decoy);
    let numbers: Vec<String> = decoy
        .split(|c: char| !c.is_ascii_alphanumeric())
        .map(skeleton)
        .filter(|t| !t.is_empty())
        .collect();
    ORDERS.iter().any(|id| {
        let id = skeleton(id);
        key.contains(&id)
            || numbers
                .iter()
                .any(|n| id.contains(n.as_str()) && n.len() >= 3)
    })
}

fn resolve_text(text: &str) -> Resolution {
    let messages = vec![text.to_string()];
    let orders = candidates();
    resolve(&ResolveInput {
        messages: &messages,
        form_order: None,
        // A cancellation reads no charges: the text decides, or the customer is asked.
        request: RequestKind::Cancellation,
        orders: &orders,
        moment: None,
    })
}

fn sentence(written: &str, lang: u8) -> String {
    match lang % 4 {
        0 => format!("Hello, please cancel {written} and refund me."),
        1 => format!("Bitte stornieren Sie die Bestellung {written}, danke."),
        2 => format!("注文番号 {written} を解約したいです。"),
        _ => format!("Merci d'annuler la commande {written} s'il vous plaît."),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Every form × case × width × decoy before or after: that order or ask, never another.
    #[test]
    fn every_id_form_case_width_and_neighbouring_decoy_resolves_to_that_order_or_to_ask(
        target in 0..ORDERS.len(),
        form in 0..FORMS.len(),
        pick in 0usize..64,
        case in 0u8..3,
        wide in any::<bool>(),
        kind in 0u8..8,
        digits in "[1-9][0-9]{15}",
        before in any::<bool>(),
        lang in 0u8..4,
    ) {
        let id = ORDERS[target];
        let written = write(id, FORMS[form], pick);
        prop_assume!(written.is_some());
        let written = dress(&written.unwrap_or_default(), case, wide, FORMS[form]);
        let decoy = decoy(kind, &digits);
        prop_assume!(!spells_an_order(&decoy));
        let said = sentence(&written, lang);
        let text = if before {
            format!("{decoy}.\n{said}")
        } else {
            format!("{said}\nBy the way, {decoy}.")
        };
        let r = resolve_text(&text);
        match r.order_id.as_deref() {
            Some(found) => prop_assert_eq!(found, id, "{:?} read as another order", text),
            None => prop_assert!(r.missing.is_some(), "{:?}: neither an order nor a question", text),
        }
    }

    /// Without a decoy, every form × case × width resolves to exactly that order.
    #[test]
    fn every_id_form_case_and_width_alone_resolves_to_exactly_that_order(
        target in 0..ORDERS.len(),
        form in 0..FORMS.len(),
        pick in 0usize..64,
        case in 0u8..3,
        wide in any::<bool>(),
        lang in 0u8..4,
    ) {
        let id = ORDERS[target];
        let written = write(id, FORMS[form], pick);
        prop_assume!(written.is_some());
        let written = dress(&written.unwrap_or_default(), case, wide, FORMS[form]);
        let text = sentence(&written, lang);
        let r = resolve_text(&text);
        prop_assert_eq!(r.order_id.as_deref(), Some(id), "{:?}", text);
    }

    /// Any mail, any orders: the same answer every run.
    #[test]
    fn the_same_mail_gives_the_same_answer_every_run(
        text in "(\\PC|\n|[0-9 #-]){0,400}",
        target in 0..ORDERS.len(),
    ) {
        let text = format!("{text}\n{}", ORDERS[target]);
        prop_assert_eq!(resolve_text(&text), resolve_text(&text));
    }
}

/// A 200 KB mail with 500 numbers — a long statement pasted, a quoted thread, a
/// signature — resolves exactly as the short complaint inside it, twice the same.
#[test]
fn a_200_kb_mail_with_500_numbers_resolves_as_the_short_complaint_inside_it() {
    let complaint = "Please cancel order 2507 1510 4088\n8542 79, I signed up by mistake.";
    let mut mail = format!("{complaint}\n\nHere is my statement:\n");
    let mut numbers = 0;
    let mut n: u64 = 7_919;
    while numbers < 500 {
        n = n
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let amount = n % 10_000;
        let store = (n >> 20) % 1_000;
        let line = format!(
            "03/{:02}/2026  SHOP {store} PURCHASE  -{}.{:02}\n",
            1 + n % 28,
            amount / 100,
            amount % 100
        );
        if !spells_an_order(&line) {
            mail.push_str(&line);
            numbers += 2;
        }
    }
    mail.push_str("\nBest regards,\nAnna\nTel. +49 30 1234567\n\n");
    mail.push_str("On Mon, 3 Mar 2026 at 10:00, Shop <help@shop.example> wrote:\n");
    let filler = "> Thank you for your message about order 7000024. ".repeat(8);
    while mail.len() < 200_000 {
        mail.push_str(&filler);
        mail.push('\n');
    }
    assert!(mail.len() >= 200_000 && numbers >= 500);
    let short = resolve_text(complaint);
    assert_eq!(short.order_id.as_deref(), Some("250715104088854279"));
    let long = resolve_text(&mail);
    assert_eq!(
        long.order_id, short.order_id,
        "the quoted order 7000024 never decides"
    );
    assert_eq!(long, resolve_text(&mail));
}
