//! Tests of `resolve/mod.rs`: kept apart so the file reads as the code it tests. Over
//! 600 lines on purpose: every test is one conversation against one customer's orders,
//! through the one entry point `resolve`, and they read best side by side.

use super::*;
use proptest::prelude::*;

fn order(id: &str, product: &str, amount: &str) -> OrderCandidate {
    OrderCandidate {
        id: id.to_string(),
        product: product.to_string(),
        amount: amount.parse().unwrap(),
        currency: "USD".to_string(),
        placed_at: time::macros::datetime!(2026-12-01 12:00 UTC),
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
        moment: None,
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
        moment: None,
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
fn an_order_named_that_is_none_of_theirs_is_the_order_in_question_even_beside_their_duplicate() {
    // Their one order shows a duplicate, but the order they name is not theirs: that is
    // the order in question (RP-007 for someone else's, RP-002 §4 for nobody's); their
    // own records do not decide, or what they are told would tell the two apart.
    let mut duplicated = order("#10234", "addon", "5");
    let paid = ChargeSummary {
        amount: "5".parse().unwrap(),
        took_money: true,
        hold: false,
    };
    duplicated.charges = Some(vec![paid.clone(), paid.clone()]);
    let messages = vec!["订单号：88812 重复扣款".to_string()];
    let r = resolve(&ResolveInput {
        messages: &messages,
        form_order: None,
        request: RequestKind::DuplicateCharge,
        orders: std::slice::from_ref(&duplicated),
        moment: None,
    });
    assert_eq!((r.order_id.as_deref(), r.source), (None, None));
    assert_eq!(r.named_not_theirs.as_deref(), Some("88812"));
    assert_eq!(
        r.unmatched,
        [Reference {
            text: "88812".into(),
            strong: true,
            named: true,
            labelled_other: false,
        }]
    );
    assert!(lookup_spellings(&r.unmatched[0]).contains(&"#88812".to_string()));
    // Records that show nothing: asked, even with one order (a typo and someone
    // else's order must look alike, RP-007), the number still noted.
    for orders in [
        vec![order("A1", "addon", "5")],
        vec![order("A1", "addon", "5"), order("A2", "annual_plan", "99")],
    ] {
        let r = resolve_text(&orders, &["please cancel order 88812"]);
        assert_eq!(r.order_id, None);
        assert!(r.missing.is_some() && r.unmatched.len() == 1);
    }
    // A bare number names nothing: the only order stands.
    let r = resolve_text(&[order("A1", "addon", "5")], &["call me on 0301234567"]);
    assert_eq!(r.order_id.as_deref(), Some("A1"));
}

#[test]
fn several_named_orders_that_nothing_tells_apart_are_asked_about_never_guessed() {
    let orders = [
        order("O-1", "annual_plan", "99"),
        order("O-2", "annual_plan", "99"),
        order("O-3", "addon", "5"),
    ];
    let r = resolve_text(&orders, &["cancel O-1 or O-2, whichever is newer"]);
    assert_eq!(r.order_id, None);
    // Two named orders are read first for one thing bought twice…
    assert_eq!(r.needs_charges, ["O-1", "O-2"]);
    // …and two purchases a month apart are asked about.
    let paid = Some(vec![ChargeSummary {
        amount: "99".parse().unwrap(),
        took_money: true,
        hold: false,
    }]);
    let mut apart = orders.clone();
    apart[0].placed_at -= time::Duration::days(30);
    apart[0].charges = paid.clone();
    apart[1].charges = paid;
    let r = resolve_text(&apart, &["cancel O-1 or O-2, whichever is newer"]);
    assert_eq!((r.order_id, r.repeat_of), (None, None));
    assert!(r.missing.is_some());
    let r = resolve_text(&orders, &["refund pls"]);
    assert_eq!(r.order_id, None, "{r:?}");
}

#[test]
fn one_thing_bought_twice_is_the_later_order_with_the_one_it_repeats() {
    let paid = |amount: &str| {
        Some(vec![ChargeSummary {
            amount: amount.parse().unwrap(),
            took_money: true,
            hold: false,
        }])
    };
    let mut first = order("R-1", "annual_plan", "109");
    let mut second = order("R-2", "annual_plan", "109");
    let mut monthly = order("R-3", "monthly_plan", "11");
    second.placed_at = first.placed_at + time::Duration::minutes(40);
    monthly.placed_at = first.placed_at - time::Duration::days(40);
    for o in [&mut first, &mut second] {
        o.charges = paid("109");
    }
    monthly.charges = paid("11");
    let orders = [monthly.clone(), first.clone(), second.clone()];
    // Named, whatever the words call it; and from the records alone for a duplicate.
    for (text, request) in [
        (
            "I bought it twice: R-1 and R-2, refund the second",
            RequestKind::DuplicateCharge,
        ),
        (
            "R-1 and R-2: please cancel the second one",
            RequestKind::Cancellation,
        ),
        (
            "I accidentally bought the same plan twice",
            RequestKind::DuplicateCharge,
        ),
    ] {
        let messages = vec![text.to_string()];
        let r = resolve(&ResolveInput {
            messages: &messages,
            form_order: None,
            request,
            orders: &orders,
            moment: None,
        });
        assert_eq!(r.order_id.as_deref(), Some("R-2"), "{text}");
        assert_eq!(r.repeat_of.as_deref(), Some("R-1"), "{text}");
    }
    // A plan renewed a month later is another purchase, never a repeat.
    let mut renewal = second.clone();
    renewal.placed_at = first.placed_at + time::Duration::days(30);
    let messages = vec!["I was charged twice".to_string()];
    let r = resolve(&ResolveInput {
        messages: &messages,
        form_order: None,
        request: RequestKind::DuplicateCharge,
        orders: &[first, renewal],
        moment: None,
    });
    assert_eq!((r.order_id, r.repeat_of), (None, None));
}

#[test]
fn the_new_words_decide_and_the_quoted_thread_is_only_noted() {
    let orders = [
        order("65169", "annual_plan", "99"),
        order("51110", "addon", "5"),
    ];
    let mail = "Please cancel https://shop.example/account/orders/65169?ref=mail\n\n\
                    On Mon, 3 Mar 2026 at 10:00, Shop <help@shop.example> wrote:\n\
                    > Your order 51110 has shipped.";
    assert_eq!(
        resolve_text(&orders, &[mail]).order_id.as_deref(),
        Some("65169")
    );
    // The new words name nothing: the older order quoted below is not taken.
    let mail = "Please cancel it.\n\n> Your order 51110 has shipped.";
    let r = resolve_text(&orders, &[mail]);
    assert_eq!(r.order_id, None, "{r:?}");
    // A forwarded receipt names the order when the new words do not.
    let mail = "Please cancel this one.\n\n---------- Forwarded message ---------\n\
                    From: Shop\nSubject: Your receipt\nOrder 65169, total $99.00";
    assert_eq!(
        resolve_text(&orders, &[mail]).order_id.as_deref(),
        Some("65169")
    );
}

#[test]
fn numbers_in_a_signature_or_a_pasted_statement_never_name_an_order() {
    let orders = [order("552", "addon", "5"), order("10115", "addon", "9")];
    let mail = "I was charged twice, statement below:\n\
                    03/12/2026  TRADER JOE'S #552  -45.12\n\n\
                    Best regards,\nAnna\nMusterstr. 1, 10115 Berlin";
    let r = resolve_text(&orders, &[mail]);
    assert_eq!(r.order_id, None, "{r:?}");
}

#[test]
fn the_forms_of_the_issue_resolve_to_the_order() {
    let cases: &[(&str, &str)] = &[
        ("…/account/orders/65169?ref=abc was charged twice", "65169"),
        (
            "order 2507 1510 4088 8542 79 charged twice",
            "250715104088854279",
        ),
        ("order 250612-887\n6084 charged twice", "250612-8876084"),
        ("R-670394232 charged twice", "R670394232"),
    ];
    for (text, id) in cases {
        let orders = [order(id, "addon", "5"), order("O-77", "addon", "9")];
        assert_eq!(
            resolve_text(&orders, &[text]).order_id.as_deref(),
            Some(*id),
            "{text}"
        );
    }
}

#[test]
fn products_amounts_and_dates_choose_among_orders() {
    let mut a = order("A-100", "annual_plan", "99.00");
    let mut b = order("A-200", "monthly_plan", "12.00");
    b.placed_at = time::macros::datetime!(2026-11-05 12:00 UTC);
    a.placed_at = time::macros::datetime!(2026-10-01 12:00 UTC);
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
            moment: None,
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

/// The words are read once per conversation and set of ids on a thread: asking again
/// with other ids, or the same ids after other conversations, answers as a fresh read.
#[test]
fn a_remembered_reading_answers_as_a_fresh_one() {
    let words = ["Please cancel order O-2002, not O-1001"];
    let ann = [
        order("O-1001", "Pro plan", "10.00"),
        order("O-2002", "Team plan", "20.00"),
    ];
    let bo = [order("O-1001", "Pro plan", "10.00")];
    let fresh = |orders: &[OrderCandidate]| {
        let ids: Vec<&str> = orders.iter().map(|o| o.id.as_str()).collect();
        let messages: Vec<String> = words.iter().map(|m| m.to_string()).collect();
        let reading = Reading::of(&messages, &ids);
        (reading.named_in.clone(), format!("{:?}", reading.unmatched))
    };
    let first = resolve_text(&ann, &words);
    let other = resolve_text(&bo, &words);
    for n in 0..TIERS_REMEMBERED + 2 {
        resolve_text(&bo, &[&format!("refund order O-{n}")]);
        assert_eq!(
            format!("{:?}", resolve_text(&ann, &words)),
            format!("{first:?}")
        );
        assert_eq!(
            format!("{:?}", resolve_text(&bo, &words)),
            format!("{other:?}")
        );
    }
    assert_ne!(format!("{first:?}"), format!("{other:?}"));
    let remembered = reading_of(&words.map(String::from), &["O-1001", "O-2002"]);
    assert_eq!(
        (
            remembered.named_in.clone(),
            format!("{:?}", remembered.unmatched)
        ),
        fresh(&ann)
    );
}

#[test]
fn a_renewal_is_the_newest_order_of_its_plan() {
    let mut last_year = order("Y-1", "annual_plan", "119");
    let mut renewal = order("Y-2", "annual_plan", "119");
    last_year.placed_at = time::macros::datetime!(2025-12-02 10:00 UTC);
    renewal.placed_at = time::macros::datetime!(2026-12-02 10:00 UTC);
    let orders = [last_year, renewal];
    for text in [
        "my annual plan auto-renewed, please cancel and refund it",
        "연간 플랜이 자동 갱신돼서 결제됐네요. 환불 부탁드립니다",
        "mein Jahresabo hat sich verlängert, bitte erstatten",
    ] {
        let r = resolve_text(&orders, &[text]);
        assert_eq!(r.order_id.as_deref(), Some("Y-2"), "{text}");
    }
}

#[test]
fn a_day_or_the_newest_order_named_in_words_singles_an_order_out() {
    let mut old = order("D-1", "monthly_plan", "11");
    let mut saturday = order("D-2", "annual_plan", "109");
    let mut newest = order("D-3", "addon", "6.5");
    old.placed_at = time::macros::datetime!(2026-10-01 10:00 UTC);
    saturday.placed_at = time::macros::datetime!(2026-11-07 08:40 UTC);
    newest.placed_at = time::macros::datetime!(2026-11-10 18:00 UTC);
    let orders = [old, saturday, newest];
    let moment = Moment {
        reported_at: time::macros::datetime!(2026-11-11 09:40 UTC),
        region: Some(policy_engine::Region::EU),
        script_offset: None,
    };
    for (text, expected) in [
        (
            "das Abo, das ich am Samstag abgeschlossen habe, möchte ich kündigen",
            "D-2",
        ),
        ("cancel what I bought 4 days ago", "D-2"),
        (
            "Cancel my most recent order please, I changed my mind",
            "D-3",
        ),
        ("annulez ma dernière commande", "D-3"),
        (
            "the plan renewed itself this morning, please refund it",
            "D-3",
        ),
        ("bought on the 7th, please cancel it", "D-2"),
    ] {
        let messages = vec![text.to_string()];
        let r = resolve(&ResolveInput {
            messages: &messages,
            form_order: None,
            request: RequestKind::Cancellation,
            orders: &orders,
            moment: Some(moment),
        });
        assert_eq!(r.order_id.as_deref(), Some(expected), "{text}");
        assert_eq!(r.source, Some(OrderSource::Message), "{text}");
    }
}

#[test]
fn a_cancelled_subscription_is_the_plan_still_running() {
    let at = |o: &mut OrderCandidate, t| o.placed_at = t;
    let mut old_monthly = order("S-1", "monthly_plan", "12");
    let mut monthly = order("S-2", "monthly_plan", "12");
    let mut annual = order("S-3", "annual_plan", "119");
    let mut addon = order("S-4", "addon", "7");
    at(
        &mut old_monthly,
        time::macros::datetime!(2026-06-09 15:00 UTC),
    );
    at(&mut monthly, time::macros::datetime!(2026-10-25 23:00 UTC));
    at(&mut annual, time::macros::datetime!(2026-12-04 21:00 UTC));
    at(&mut addon, time::macros::datetime!(2026-12-05 10:00 UTC));
    let moment = Moment {
        reported_at: time::macros::datetime!(2026-12-07 15:00 UTC),
        region: Some(policy_engine::Region::US),
        script_offset: None,
    };
    let cancel = |orders: &[OrderCandidate], text: &str, request| {
        let messages = vec![text.to_string()];
        resolve(&ResolveInput {
            messages: &messages,
            form_order: None,
            request,
            orders,
            moment: Some(moment),
        })
        .order_id
    };
    let orders = [old_monthly.clone(), monthly.clone(), annual.clone()];
    // The monthly plans' months are over: the annual plan is the one running.
    let text = "can u refund my subscription? i dont want it anymore";
    assert_eq!(
        cancel(&orders, text, RequestKind::Cancellation).as_deref(),
        Some("S-3")
    );
    // An add-on is no subscription: the annual plan still.
    let with_addon = [old_monthly.clone(), monthly.clone(), annual.clone(), addon];
    assert_eq!(
        cancel(&with_addon, text, RequestKind::Cancellation).as_deref(),
        Some("S-3")
    );
    // Not without a word for a subscription, nor for what is not a cancellation.
    assert_eq!(
        cancel(
            &orders,
            "refund please, i dont want it",
            RequestKind::Cancellation
        ),
        None
    );
    assert_eq!(cancel(&orders, text, RequestKind::Unclear), None);
    // "This month's" money of the monthly plan: the month still running, not a
    // calendar month no order was placed in.
    monthly.placed_at = time::macros::datetime!(2026-11-30 07:00 UTC);
    let orders = [old_monthly, monthly, annual];
    let text = "I'd like to cancel my monthly plan and get this month's money back";
    assert_eq!(
        cancel(&orders, text, RequestKind::Cancellation).as_deref(),
        Some("S-2")
    );
    // Two plans running: which one is asked.
    let text = "please cancel my subscription and refund me";
    assert_eq!(cancel(&orders, text, RequestKind::Cancellation), None);
}

#[test]
fn a_code_beside_words_about_another_persons_account_is_that_persons_order() {
    let own = [order("40236507", "addon", "6.5")];
    let charged_twice = |text: &str| {
        let messages = vec![text.to_string()];
        resolve(&ResolveInput {
            messages: &messages,
            form_order: None,
            request: RequestKind::DuplicateCharge,
            orders: &own,
            moment: None,
        })
    };
    let r = charged_twice(
        "Meine Frau hat mit ihrem Konto bestellt (bc79ed20) und wurde doppelt belastet.",
    );
    assert_eq!(r.order_id, None);
    assert_eq!(r.named_not_theirs.as_deref(), Some("bc79ed20"));
    // Without such words the code is only noted, and a code labelled as another kind of
    // number is no order beside them either.
    let r = charged_twice("Ich wurde doppelt belastet (bc79ed20).");
    assert_eq!(r.named_not_theirs, None);
    let r = charged_twice(
        "Meine Frau hat mit ihrem Konto bezahlt, Rechnung Nr. RX55T2, doppelt belastet.",
    );
    assert_eq!(r.named_not_theirs, None);
}
