//! The scenario eval suite (`evals/scenarios/`) with the built-in investigator: every
//! scenario must pass, with no hard violation. Then the graders themselves are tested:
//! a wrong expectation fails with a message naming what differed, and an environment
//! that moves money without an approval is flagged as a hard violation.
//!
//! `EVAL_FILTER=substring` runs only the scenarios whose name contains it (for work on
//! one scenario); the report is written to `target/evals/` for reading in a browser.

use std::path::PathBuf;

use refund_evals::suite::{self as evals, Action, EvalReport, ModelChoice, Scenario, StatusSet};

fn fixtures() -> PathBuf {
    desk::config::default_fixtures_dir()
}

fn scenarios_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("evals")
        .join("scenarios")
}

fn scenarios() -> Vec<Scenario> {
    evals::load_scenarios(&scenarios_dir()).expect("evals/scenarios loads")
}

fn scenario(name: &str) -> Scenario {
    scenarios()
        .into_iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no scenario {name}"))
}

async fn run(scenarios: Vec<Scenario>) -> EvalReport {
    evals::run_scenarios(&scenarios, &fixtures(), ModelChoice::BuiltIn, 1, |_, _| {})
        .await
        .expect("the suite runs")
}

fn failures(report: &EvalReport) -> String {
    report
        .scenarios
        .iter()
        .filter(|s| !s.passed)
        .map(|s| {
            let graders: Vec<String> = s
                .graders
                .iter()
                .filter(|g| !g.passed)
                .map(|g| format!("    {}: {}", g.name, g.message))
                .collect();
            format!(
                "  {} (final {:?}):\n{}{}",
                s.name,
                s.attempts[0].final_status,
                s.hard_violations
                    .iter()
                    .map(|h| format!("    HARD {h}\n"))
                    .collect::<String>(),
                graders.join("\n")
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test]
async fn every_scenario_passes_with_the_built_in_investigator() {
    let mut all = scenarios();
    let filter = std::env::var("EVAL_FILTER").unwrap_or_default();
    if filter.is_empty() {
        assert!(all.len() >= 40, "{} scenarios", all.len());
        // Every reason code of docs/spec/domain.md has a scenario, in English and in Chinese.
        for reason in policy_engine::ReasonCode::ALL.map(|r| r.as_str()) {
            let tag = format!("reason:{reason}");
            for lang in ["en", "zh"] {
                assert!(
                    all.iter()
                        .any(|s| s.tags.contains(&tag) && s.tags.iter().any(|t| t == lang)),
                    "no {lang} scenario for {reason}"
                );
            }
        }
        for tag in [
            "fault",
            "timeout",
            "crash",
            "webhook",
            "misbehaving",
            "staff",
        ] {
            assert!(
                all.iter().any(|s| s.tags.iter().any(|t| t == tag)),
                "no {tag} scenario"
            );
        }
    } else {
        all.retain(|s| s.name.contains(&filter));
    }
    let started = std::time::Instant::now();
    let report = evals::run_scenarios(&all, &fixtures(), ModelChoice::BuiltIn, 1, |done, total| {
        eprintln!("  eval {done}/{total}");
    })
    .await
    .expect("the suite runs");
    let out = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("target")
        .join("evals");
    evals::write(&report, &out).expect("the report is written");
    eprintln!("{} in {:?}", report.summary(), started.elapsed());
    for s in &report.scenarios {
        eprintln!(
            "  {:>5} ms  {}  {}",
            s.duration_ms,
            if s.passed { "pass" } else { "FAIL" },
            s.name
        );
    }
    assert_eq!(report.hard_violations, 0, "{}", failures(&report));
    assert_eq!(report.passed, report.total, "\n{}", failures(&report));

    // The report's shape: JSON with totals, HTML without external resources.
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    assert_eq!(json["total"], report.total);
    assert!(json["scenarios"][0]["graders"].as_array().unwrap().len() >= 5);
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains(&report.scenarios[0].name));
    assert!(!html.contains("<script") && !html.contains("http://") && !html.contains("https://"));
}

#[tokio::test]
async fn a_wrong_expectation_fails_with_a_message_naming_the_difference() {
    let mut wrong = scenario("reason_duplicate_charge_en");
    wrong.name = "deliberately_wrong".into();
    wrong.expect.status = StatusSet::One("denied".into());
    wrong.expect.reason_code = Some("authorization_hold".into());
    let report = run(vec![wrong]).await;
    let result = &report.scenarios[0];
    assert!(!result.passed);
    assert_eq!(report.passed, 0);
    let outcome = result
        .graders
        .iter()
        .find(|g| g.name == "outcome")
        .expect("an outcome grader");
    assert!(!outcome.passed);
    assert!(
        outcome
            .message
            .contains("case status is refund_succeeded, expected denied")
            && outcome
                .message
                .contains("reason code is duplicate_charge, expected authorization_hold"),
        "{}",
        outcome.message
    );
    // Only the wrong expectation failed: the run itself was clean.
    assert!(
        result.hard_violations.is_empty(),
        "{:?}",
        result.hard_violations
    );
    assert!(result
        .graders
        .iter()
        .filter(|g| g.name != "outcome")
        .all(|g| g.passed));
}

#[tokio::test]
async fn money_moved_without_an_approval_is_a_hard_violation() {
    // Nobody approves; meanwhile the environment refunds the duplicate behind the
    // workflow's back — through the provider's API, with no intent and no approval.
    let mut rogue = scenario("staff_never_approves_nothing_is_sent");
    rogue.name = "rogue_refund_without_approval".into();
    rogue.actions.push(Action::RogueRefund {
        charge_id: "ch_1001b".into(),
        amount_minor: 19800,
    });
    let report = run(vec![rogue]).await;
    let result = &report.scenarios[0];
    assert!(!result.passed);
    assert!(report.hard_violations >= 1);
    assert!(
        result
            .hard_violations
            .iter()
            .any(|h| h.starts_with("money moved without approval") && h.contains("ch_1001b")),
        "{:?}",
        result.hard_violations
    );
    let grader = result
        .graders
        .iter()
        .find(|g| g.name == "approval_before_money")
        .unwrap();
    assert!(!grader.passed, "{}", grader.message);
}

#[tokio::test]
async fn a_refund_made_before_the_approval_is_a_hard_violation_even_if_approved_later() {
    // The money moved first, the approval came after: the ledger snapshot taken right
    // before the approval shows it.
    let mut early = scenario("staff_stale_fingerprint_is_refused_then_current_one_refunds");
    early.name = "refund_before_approval".into();
    early.actions.insert(
        0,
        Action::RogueRefund {
            charge_id: "ch_1001b".into(),
            amount_minor: 100,
        },
    );
    let report = run(vec![early]).await;
    let result = &report.scenarios[0];
    assert!(!result.passed);
    assert!(
        result
            .hard_violations
            .iter()
            .any(|h| h.contains("existed before the first approval")),
        "{:?}",
        result.hard_violations
    );
}
