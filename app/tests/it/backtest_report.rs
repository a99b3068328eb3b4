//! The backtest report a team can act on (docs/guides/backtesting.md): the sample that
//! ships in `fixtures/backtest-sample/` imported as the guide imports it (customers,
//! orders, the Zendesk export against the payments mock holding the team's refunds),
//! replayed, and every disagreement accounted for by class, with its clause, per
//! language and per person; the CSV beside it; a page of one screen then drill-down;
//! empty reports that say what is missing. `scripts/backtest-guide` runs the guide's
//! commands themselves (in CI: it builds with cargo, which a test cannot do inside
//! `cargo test`).

use std::path::Path;
use std::sync::Arc;

use backtest::history_import::{
    self as history, infer::TagMap, source::HistoryFormat, HistoryOptions,
};
use backtest::shadow::ShadowReport;

use crate::browser::screenshot_dir;
use crate::support::browser::{serve, Browser};
use crate::support::{start_mock, test_database_url};

/// `fixtures/backtest-sample/`.
fn sample_dir() -> std::path::PathBuf {
    desk::config::default_fixtures_dir().join("backtest-sample")
}

/// The sample imported as the guide does it and replayed: the report, and the history's
/// line count.
async fn sample_report(dir: &Path) -> ShadowReport {
    let sample = sample_dir();
    let mock = start_mock(dir).await;
    let account = std::fs::read_to_string(sample.join("account.json")).expect("the account");
    desk::world::load_into_provider(&mock.base_url(), &account)
        .await
        .expect("the account loads");
    let db = store::Db::connect(&test_database_url(dir).await)
        .await
        .expect("a database");
    let payments = payments_adapter::PaymentsClient::new(
        &mock.base_url(),
        "sk_test_refund_desk",
        std::time::Duration::from_secs(5),
        std::time::Duration::from_millis(5),
    )
    .expect("a client")
    .with_order_key("order_ref");
    let mut quiet = |_: &'static str, _: u64, _: u64| {};
    let customers = sample.join("customers.csv");
    shop_import::import::import_customers(&db, Some(&payments), &customers, None, 0, &mut quiet)
        .await
        .expect("customers import");
    shop_import::import::import_orders(&db, &sample.join("orders.csv"), None, 0, &mut quiet)
        .await
        .expect("orders import");
    let tag_map = std::fs::read_to_string(sample.join("tag-map.toml")).expect("the tag map");
    let options = HistoryOptions {
        format: HistoryFormat::Zendesk,
        file: sample.join("export.json"),
        users: None,
        out: dir.join("history.jsonl"),
        window_days: 14,
        tag_map: TagMap::parse(&tag_map).expect("a map"),
        skip_invalid: false,
    };
    let mut quiet = |_: u64, _: u64| {};
    history::import_history(&db, &payments, options, &mut quiet)
        .await
        .expect("the import");
    let text = std::fs::read_to_string(dir.join("history.jsonl")).expect("the history");
    let (tickets, bad) = shadow::replay::parse_history(&text);
    assert!(bad.is_empty(), "{bad:?}");
    let fixtures = desk::config::default_fixtures_dir();
    let policies = desk::policies::load_policy_set(&fixtures.join("policies")).expect("policies");
    let index = Arc::new(desk::policies::open_index(&dir.join("index"), &policies).expect("index"));
    app::shadow::run(
        &desk::agent::investigator::Investigator,
        &policies,
        &index,
        &tickets,
        bad,
        |_, _| {},
    )
    .await
}

#[tokio::test]
async fn the_sample_report_puts_every_disagreement_in_one_class_with_its_clause() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let report = sample_report(dir.path()).await;
    assert!(report.total >= 20, "the sample's tickets: {}", report.total);
    let disagreements: Vec<_> = report.tickets.iter().filter(|t| !t.exact).collect();
    assert!(!disagreements.is_empty(), "the sample has disagreements");
    assert_eq!(report.disagreements, disagreements.len());
    // 100% accounted for: each disagreement has exactly one class, agreements none,
    // and the class counts add up.
    assert!(disagreements.iter().all(|t| t.class.is_some()));
    assert!(report
        .tickets
        .iter()
        .filter(|t| t.exact)
        .all(|t| t.class.is_none()));
    let counted: usize = report.classes.iter().map(|c| c.count).sum();
    assert_eq!(counted, report.disagreements, "{:#?}", report.classes);
    for c in &report.classes {
        let rows = disagreements
            .iter()
            .filter(|t| t.class.as_ref().map(|k| k.class) == Some(c.class))
            .count();
        assert_eq!(rows, c.count, "{}", c.class.as_str());
        assert!(!c.examples.is_empty() && c.examples.len() <= 5);
    }
    // More than one kind of disagreement, and each decided one names its clause.
    assert!(report.classes.len() >= 3, "{:#?}", report.classes);
    let decided = disagreements.iter().filter(|t| !t.citations.is_empty());
    for t in decided {
        let class = t.class.as_ref().expect("a class");
        assert!(
            !class.clauses.is_empty() && class.clauses.iter().all(|c| c.starts_with("RP-")),
            "{} {:?}",
            t.id,
            class
        );
        assert!(!class.why.is_empty() && !class.reading.is_empty());
    }
    // Per language (six in the sample) and per person (the three assignees).
    assert!(
        report.by_language.len() >= 4,
        "{:?}",
        report.by_language.keys()
    );
    let people: Vec<&String> = report.by_person.keys().collect();
    assert_eq!(
        people,
        [
            "ana@support.example",
            "ben@support.example",
            "chen@support.example"
        ]
    );
    let per_person: usize = report.by_person.values().map(|g| g.total).sum();
    assert_eq!(per_person, report.total);
    // The importer's own fields are read, never reported as ignored.
    assert!(report.extra_fields.is_empty(), "{:?}", report.extra_fields);
}

#[tokio::test]
async fn the_report_files_hold_a_csv_row_per_disagreement_and_no_machine_path() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let report = sample_report(dir.path()).await;
    let out = dir.path().join("report");
    app::shadow::write(&report, &out).expect("written");
    let csv = std::fs::read_to_string(out.join("report.csv")).expect("report.csv");
    // Every cell of the sample's rows is one line (ids, classes, readings, clauses), and
    // rows end in CRLF as RFC 4180 says.
    let lines: Vec<&str> = csv.split("\r\n").filter(|l| !l.is_empty()).collect();
    assert!(lines[0].starts_with("ticket_id,class,class_title,team,agent,"));
    assert_eq!(lines.len() - 1, report.disagreements);
    let classes: Vec<&str> = backtest::shadow::Class::ALL
        .iter()
        .map(|c| c.as_str())
        .collect();
    for line in &lines[1..] {
        let class = line.split(',').nth(1).unwrap_or_default();
        assert!(classes.contains(&class), "{line}");
    }
    for name in ["report.json", "report.html", "report.csv"] {
        let text = std::fs::read_to_string(out.join(name)).expect("a file");
        let machine = dir.path().to_string_lossy().to_string();
        let repo = desk::config::default_fixtures_dir()
            .parent()
            .expect("the repository")
            .to_string_lossy()
            .to_string();
        assert!(
            !text.contains(&machine) && !text.contains(&repo),
            "{name} names a path of this machine"
        );
    }
    // The page: a summary table of classes whose rows link to their drill-down, the
    // CSV one click away, and every example capped.
    let html = std::fs::read_to_string(out.join("report.html")).expect("the page");
    assert!(html.contains("id=\"classes\"") && html.contains("href=\"report.csv\""));
    for c in &report.classes {
        let anchor = c.class.as_str();
        assert!(
            html.contains(&format!("href=\"#{anchor}\""))
                && html.contains(&format!("<details id=\"{anchor}\""))
        );
    }
    assert!(!html.contains("unclassified"));
}

#[tokio::test]
async fn an_empty_history_says_so_rather_than_zero_percent() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let fixtures = desk::config::default_fixtures_dir();
    let policies = desk::policies::load_policy_set(&fixtures.join("policies")).expect("policies");
    let index =
        Arc::new(desk::policies::open_index(&dir.path().join("index"), &policies).expect("index"));
    let bad = vec![shadow::replay::LineError {
        line: 1,
        message: "not JSON".into(),
    }];
    let report = app::shadow::run(
        &desk::agent::investigator::Investigator,
        &policies,
        &index,
        &[],
        bad,
        |_, _| {},
    )
    .await;
    let html = app::shadow::html(&report);
    assert!(!html.contains("0.0%"), "{html}");
    assert!(html.contains("No tickets were replayed"), "{html}");
    assert!(html.contains("line 1: not JSON"));
}

/// The page at 1280 and 390 px: the summary fits the first screen, nothing scrolls
/// sideways, the whole page stays a few screens tall (the classes are closed), and a
/// class opens on its examples.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_report_page_is_one_screen_of_summary_then_drill_down_at_desktop_and_phone() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let report = sample_report(dir.path()).await;
    let html = app::shadow::html(&report);
    let router = axum::Router::new().route(
        "/report.html",
        axum::routing::get(move || async move { axum::response::Html(html) }),
    );
    let base = serve(router).await;
    let browser = Browser::start().await;
    let shots = screenshot_dir();
    let first = report.classes[0].class.as_str();
    for (name, width, height) in [("desktop", 1280, 800), ("phone", 390, 844)] {
        browser.set_window_size(width, height).await;
        browser.goto(&format!("{base}/report.html")).await;
        browser
            .screenshot(&shots.join(format!("backtest-report-{name}.png")))
            .await;
        let (scroll, inner) = browser.widths().await;
        assert!(
            scroll <= inner,
            "{name}: the page scrolls sideways: {scroll} > {inner}"
        );
        let bottom = browser
            .execute("return document.querySelector('#classes').getBoundingClientRect().bottom;")
            .await
            .as_f64()
            .unwrap_or(f64::MAX);
        assert!(
            bottom <= f64::from(height),
            "{name}: the summary ends at {bottom} px"
        );
        let tall = browser
            .execute("return document.documentElement.scrollHeight;")
            .await
            .as_f64()
            .unwrap_or(f64::MAX);
        assert!(
            tall < f64::from(height) * 3.0,
            "{name}: the page is {tall} px tall"
        );
    }
    browser.set_window_size(1280, 800).await;
    browser.click(&format!("a[href='#{first}']")).await;
    browser.click(&format!("#{first} > summary")).await;
    assert!(
        browser
            .wait_until(&format!("return document.querySelector('#{first}').open;"))
            .await
    );
    browser.close().await;
}
