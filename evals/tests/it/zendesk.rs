//! `import history` measured: a generated shop's past (`generate::zendesk`:
//! 240 tickets of a simulated team, six languages, long mails, tickets naming no order,
//! refunds a day or a week later, partial refunds) imported through the payments mock;
//! the inferred human outcomes against the team's truth, then `shadow` on the result.

use std::collections::HashMap;

use backtest::history_import::{
    self as history, infer::TagMap, source::HistoryFormat, HistoryOptions,
};
use refund_evals::generate::zendesk::{zendesk_set, ORDER_KEY};

#[tokio::test]
async fn inferred_human_outcomes_are_at_least_98_percent_right_and_shadow_replays_them() {
    let set = zendesk_set(36, 240);
    let dir = tempfile::tempdir().expect("a temp dir");
    let mock = payments_mock::start(
        payments_mock::MockConfig::new(dir.path().join("payments")),
        "127.0.0.1:0".parse().expect("an address"),
    )
    .await
    .expect("the mock starts");
    desk::world::load_into_provider(&mock.base_url(), &set.account.to_string())
        .await
        .expect("the account loads");
    let db = store::Db::connect(&store::Db::sqlite_url(dir.path()))
        .await
        .expect("a database");
    let payments = payments_adapter::PaymentsClient::new(
        &mock.base_url(),
        "sk_test_refund_desk",
        std::time::Duration::from_secs(5),
        std::time::Duration::from_millis(5),
    )
    .expect("a client")
    .with_order_key(ORDER_KEY);
    for (name, text) in [
        ("customers.csv", &set.customers_csv),
        ("orders.csv", &set.orders_csv),
        ("export.json", &set.export),
    ] {
        std::fs::write(dir.path().join(name), text).expect("a file");
    }
    let mut quiet = |_: &'static str, _: u64, _: u64| {};
    let customers = shop_import::import::import_customers(
        &db,
        Some(&payments),
        &dir.path().join("customers.csv"),
        None,
        0,
        &mut quiet,
    )
    .await
    .expect("customers import");
    shop_import::import::import_orders(&db, &dir.path().join("orders.csv"), None, 0, &mut quiet)
        .await
        .expect("orders import");
    let options = HistoryOptions {
        format: HistoryFormat::Zendesk,
        file: dir.path().join("export.json"),
        users: None,
        out: dir.path().join("history.jsonl"),
        window_days: 14,
        tag_map: TagMap::parse(&set.tag_map).expect("the team's tag map"),
        skip_invalid: false,
    };
    let mut progress = |_: u64, _: u64| {};
    let report = history::import_history(&db, &payments, options, &mut progress)
        .await
        .expect("the history imports");
    let text = std::fs::read_to_string(dir.path().join("history.jsonl")).expect("the history");
    let (tickets, bad) = shadow::replay::parse_history(&text);
    assert!(bad.is_empty(), "{bad:?}");

    let inferred: HashMap<&str, &shadow::replay::HistoricalTicket> =
        tickets.iter().map(|t| (t.id.as_str(), t)).collect();
    let matched: Vec<_> = set.truth.iter().filter(|t| t.matched).collect();
    assert_eq!(
        report.unmatched as usize,
        set.truth.len() - matched.len(),
        "{report:?}"
    );
    let (mut right, mut exact, mut wrong) = (0usize, 0usize, Vec::new());
    for truth in &matched {
        let Some(t) = inferred.get(truth.ticket_id.as_str()) else {
            wrong.push(format!("{} not written", truth.ticket_id));
            continue;
        };
        if t.human.outcome.as_str() == truth.outcome {
            right += 1;
            let got: Vec<(String, i64)> = t
                .human
                .refunds
                .iter()
                .map(|r| {
                    (
                        r.charge_id.clone(),
                        r.money().map(|m| m.minor_units()).unwrap_or(-1),
                    )
                })
                .collect();
            exact += usize::from(got == truth.refunds);
        } else {
            wrong.push(format!(
                "{}: truth {}, inferred {} ({})",
                truth.ticket_id,
                truth.outcome,
                t.human.outcome.as_str(),
                t.human.extra["inference"]
            ));
        }
    }
    let accuracy = right as f64 / matched.len() as f64;

    let policies =
        desk::policies::load_policy_set(&desk::config::default_fixtures_dir().join("policies"))
            .expect("the fixture policies");
    let index = std::sync::Arc::new(
        desk::policies::open_index(&dir.path().join("index"), &policies).expect("an index"),
    );
    let shadow = backtest::shadow::run(
        &desk::agent::investigator::Investigator,
        &policies,
        &index,
        &tickets,
        Vec::new(),
        |_, _| {},
    )
    .await;
    eprintln!(
        "zendesk set: {} tickets, {} matched ({} customers linked by email), inferred outcome right {right}/{} = {:.1}% \
         (outcome and refunds exact {exact}), shadow outcome agreement {:.1}% exact {:.1}% over {}",
        set.truth.len(),
        matched.len(),
        customers.links.as_ref().map_or(0, |l| l.by_email),
        matched.len(),
        accuracy * 100.0,
        shadow.outcome_agreement * 100.0,
        shadow.exact_agreement * 100.0,
        shadow.total
    );
    eprintln!(
        "shadow confusion (human → agent): {:?}; disagreements by cause: {:?}",
        shadow.confusion, shadow.causes
    );
    for w in &wrong {
        eprintln!("  wrong: {w}");
    }
    assert!(
        accuracy >= 0.98,
        "inferred outcomes {:.1}% right",
        accuracy * 100.0
    );
    assert_eq!(shadow.total, tickets.len());
    assert!(shadow.tickets.iter().all(|t| t.human_inference.is_some()));
}
