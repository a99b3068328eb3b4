//! Batch shadow mode over `fixtures/history/`: the report's SPEC fields, agreement with
//! the humans, and bad lines reported by number and skipped.

use std::sync::Arc;

use app::agent::investigator::Investigator;

async fn policies_and_index(
    dir: &std::path::Path,
) -> (policy_engine::PolicySet, Arc<rag_index::PolicyIndex>) {
    let fixtures = app::config::default_fixtures_dir();
    let policies = app::policies::load_policy_set(&fixtures.join("policies")).unwrap();
    let index = app::policies::open_index(&dir.join("index"), &policies).unwrap();
    (policies, Arc::new(index))
}

#[tokio::test]
async fn shadow_agrees_with_every_human_decision_and_writes_the_spec_report() {
    let dir = tempfile::tempdir().unwrap();
    let (policies, index) = policies_and_index(dir.path()).await;
    let text =
        std::fs::read_to_string(app::config::default_fixtures_dir().join("history/tickets.jsonl"))
            .unwrap();
    // One garbage line and one well-formed line with an unknown field, in the middle.
    let mut lines: Vec<&str> = text.lines().collect();
    lines.insert(3, "{not json");
    lines.insert(10, r#"{"id":"X","surprise":true}"#);
    let (tickets, bad) = app::replay::parse_history(&lines.join("\n"));
    assert_eq!(bad.iter().map(|l| l.line).collect::<Vec<_>>(), [4, 11]);
    assert!(tickets.len() >= 60);

    let mut seen = 0;
    let report = app::shadow::run(
        &Investigator,
        &policies,
        &index,
        &tickets,
        bad,
        |done, _| seen = done,
    )
    .await;
    assert_eq!(seen, tickets.len(), "progress reported for every ticket");
    assert_eq!(report.total, tickets.len());
    assert_eq!(
        report.outcome_agreement,
        1.0,
        "{:#?}",
        report
            .tickets
            .iter()
            .filter(|t| !t.agree)
            .collect::<Vec<_>>()
    );
    assert_eq!(report.exact_agreement, 1.0);
    assert!(report.agent_only_money.is_empty() && report.human_only_money.is_empty());
    assert!(
        report.by_policy_version.contains_key("RP-001@1")
            && report.by_policy_version.contains_key("RP-001@2")
    );

    app::shadow::write(&report, &dir.path().join("out")).unwrap();
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("out/report.json")).unwrap())
            .unwrap();
    for key in [
        "total",
        "outcome_agreement",
        "exact_agreement",
        "confusion",
        "tickets",
    ] {
        assert!(json.get(key).is_some(), "report.json lacks {key}");
    }
    let first = &json["tickets"][0];
    for key in ["id", "human", "agent", "agree"] {
        assert!(first.get(key).is_some(), "ticket lacks {key}");
    }
    for key in ["outcome", "reason", "refunds"] {
        assert!(first["agent"].get(key).is_some(), "agent lacks {key}");
    }
    let html = std::fs::read_to_string(dir.path().join("out/report.html")).unwrap();
    assert!(
        html.contains("Confusion matrix") && html.contains("line 4") && !html.contains("<script")
    );
}

#[tokio::test]
async fn a_disagreement_is_reported_with_its_trace_and_money() {
    let dir = tempfile::tempdir().unwrap();
    let (policies, index) = policies_and_index(dir.path()).await;
    let text =
        std::fs::read_to_string(app::config::default_fixtures_dir().join("history/tickets.jsonl"))
            .unwrap();
    let (mut tickets, _) = app::replay::parse_history(&text);
    // Pretend a human refused a refund the policy allows.
    let ticket = tickets
        .iter_mut()
        .find(|t| t.human.outcome == app::replay::CaseOutcome::Refund)
        .unwrap();
    ticket.human.outcome = app::replay::CaseOutcome::NoRefund;
    ticket.human.refunds.clear();
    let id = ticket.id.clone();
    let report = app::shadow::run(
        &Investigator,
        &policies,
        &index,
        &tickets,
        vec![],
        |_, _| {},
    )
    .await;
    let row = report.tickets.iter().find(|t| t.id == id).unwrap();
    assert!(!row.agree && row.trace.is_some() && !row.citations.is_empty());
    assert_eq!(report.confusion["no_refund"]["refund"], 1);
    assert!(
        !report.agent_only_money.is_empty(),
        "the agent would have refunded money the humans did not"
    );
    assert!(app::shadow::html(&report).contains(&format!("trace-{id}")));
}

/// Shadow mode measures a model on the loop production runs (issue 9): a model that
/// misbehaves is stopped by the live budgets and refusals, and the report's trace says
/// which, in the live handoff's words. (`tests/harness.rs` compares replay and live run
/// by run, event by event.)
#[tokio::test]
async fn shadow_mode_stops_misbehaving_models_with_the_live_budgets_and_refusals() {
    use app::agent::scripted::{self, call, calls, ScriptedModel};
    use app::agent::{Model, ModelReply, Usage};

    let dir = tempfile::tempdir().unwrap();
    let (policies, index) = policies_and_index(dir.path()).await;
    let text =
        std::fs::read_to_string(app::config::default_fixtures_dir().join("history/tickets.jsonl"))
            .unwrap();
    let (tickets, _) = app::replay::parse_history(&text);
    // Tickets a human did not escalate, so the agent's escalation is a disagreement and
    // the report keeps its trace.
    let tickets: Vec<_> = tickets
        .into_iter()
        .filter(|t| t.human.outcome != app::replay::CaseOutcome::Escalate)
        .take(3)
        .collect();
    let burns_tokens = ScriptedModel::new("scripted-expensive").forever_reply(|_| {
        Ok(ModelReply {
            turn: calls(vec![call("get_customer", serde_json::json!({}))]),
            usage: Usage {
                prompt_tokens: 100_000,
                completion_tokens: 20_000,
            },
        })
    });
    let models: Vec<(Box<dyn Model>, &str)> = vec![
        (
            Box::new(burns_tokens),
            "the run exhausted its tokens budget (240000 of 200000)",
        ),
        (
            Box::new(scripted::calls_unknown_tool()),
            "the run exhausted its invalid_tool_calls budget (3 of 3)",
        ),
        (
            Box::new(scripted::loops_forever()),
            "the run exhausted its steps budget (24 of 24)",
        ),
        (
            Box::new(
                ScriptedModel::new("scripted-down")
                    .forever(|_| Err(anyhow::anyhow!("connection reset by peer"))),
            ),
            "the run exhausted its model_errors budget (3 of 3)",
        ),
        (
            Box::new(scripted::tries_write_action()),
            "the model attempted something it may not do (write_attempt)",
        ),
    ];
    for (model, reason) in models {
        let report = app::shadow::run(
            model.as_ref(),
            &policies,
            &index,
            &tickets,
            vec![],
            |_, _| {},
        )
        .await;
        assert_eq!(report.total, tickets.len());
        for row in &report.tickets {
            assert_eq!(row.agent.outcome, app::replay::CaseOutcome::Escalate);
            assert!(row.agent.refunds.is_empty());
            let trace = row.trace.as_ref().expect("a disagreement keeps its trace");
            assert_eq!(trace["escalation"], reason, "{}", row.id);
            assert_eq!(trace["handoff"]["reason"], reason, "{}", row.id);
        }
    }
}
