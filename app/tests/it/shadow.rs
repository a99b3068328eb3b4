//! Batch shadow mode over `fixtures/history/`: the report's SPEC fields, agreement with
//! the humans, and bad lines reported by number and skipped.

use std::sync::Arc;

use desk::agent::investigator::Investigator;

async fn policies_and_index(
    dir: &std::path::Path,
) -> (policy_engine::PolicySet, Arc<rag_index::PolicyIndex>) {
    let fixtures = desk::config::default_fixtures_dir();
    let policies = desk::policies::load_policy_set(&fixtures.join("policies")).unwrap();
    let index = desk::policies::open_index(&dir.join("index"), &policies).unwrap();
    (policies, Arc::new(index))
}

/// The tickets of `fixtures/history/tickets.jsonl`.
fn fixture_history() -> Vec<shadow::replay::HistoricalTicket> {
    let text =
        std::fs::read_to_string(desk::config::default_fixtures_dir().join("history/tickets.jsonl"))
            .unwrap();
    let (tickets, bad) = shadow::replay::parse_history(&text);
    assert!(bad.is_empty(), "{bad:?}");
    tickets
}

#[tokio::test]
async fn shadow_agrees_with_every_human_decision_and_writes_the_spec_report() {
    let dir = tempfile::tempdir().unwrap();
    let (policies, index) = policies_and_index(dir.path()).await;
    let text =
        std::fs::read_to_string(desk::config::default_fixtures_dir().join("history/tickets.jsonl"))
            .unwrap();
    // One garbage line and one well-formed line with an unknown field, in the middle.
    let mut lines: Vec<&str> = text.lines().collect();
    lines.insert(3, "{not json");
    lines.insert(10, r#"{"id":"X","surprise":true}"#);
    let (tickets, bad) = shadow::replay::parse_history(&lines.join("\n"));
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

/// Each turn of the built-in investigator taking a while (a model server's pace),
/// counting the turns asked.
struct Unhurried {
    turns: std::sync::atomic::AtomicUsize,
}

impl crate::support::BeforeTurn for Unhurried {
    fn before<'a>(
        &'a self,
        _: &'a desk::agent::ModelContext<'a>,
    ) -> desk::agent::BoxFuture<'a, ()> {
        Box::pin(async move {
            tokio::time::sleep(std::time::Duration::from_millis(60)).await;
            self.turns.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        })
    }
}

/// Replay workers send their results a batch at a time, but a slow model's
/// replay still reports as it goes: a worker sends what it has once a tenth of a second
/// has passed, not only when its batch is full. The first ticket reported comes while
/// most turns are still to be asked; sent by the batch alone, it would come at the end.
#[tokio::test]
async fn a_slow_replay_reports_its_tickets_as_they_finish() {
    let dir = tempfile::tempdir().unwrap();
    let (policies, index) = policies_and_index(dir.path()).await;
    let mut tickets = fixture_history();
    tickets.truncate(8);
    let model = crate::support::BeforeTurns(Unhurried {
        turns: Default::default(),
    });
    let mut turns_at_first = None;
    let report = app::shadow::run(&model, &policies, &index, &tickets, vec![], |_, _| {
        let asked = model.0.turns.load(std::sync::atomic::Ordering::SeqCst);
        turns_at_first.get_or_insert(asked);
    })
    .await;
    assert_eq!(report.total, 8);
    let all = model.0.turns.load(std::sync::atomic::Ordering::SeqCst);
    let first = turns_at_first.expect("progress was reported");
    assert!(
        first * 2 < all,
        "the first ticket was reported after {first} of {all} turns"
    );
}

#[tokio::test]
async fn a_disagreement_is_reported_with_its_trace_and_money() {
    let dir = tempfile::tempdir().unwrap();
    let (policies, index) = policies_and_index(dir.path()).await;
    let mut tickets = fixture_history();
    // Pretend a human refused a refund the policy allows.
    let ticket = tickets
        .iter_mut()
        .find(|t| t.human.outcome == shadow::replay::CaseOutcome::Refund)
        .unwrap();
    ticket.human.outcome = shadow::replay::CaseOutcome::NoRefund;
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
    let html = app::shadow::html(&report);
    assert!(html.contains(&format!("trace-{id}")));
    // Money per currency in a table, never a debug dump of the map.
    let (currency, amount) = report.agent_only_money.iter().next().unwrap();
    let money = &html[html.find("id=\"money\"").expect("a money table")..];
    let row = format!(
        "<tr><td>{}</td><td>{amount}</td><td>0</td></tr>",
        currency.code()
    );
    assert!(money.contains(&row), "{money}");
    assert!(
        !html.contains("{CNY") && !html.contains("{USD"),
        "no debug dump"
    );
}

/// Shadow mode measures a model on the loop production runs: a model that
/// misbehaves is stopped by the live budgets and refusals, and the report's trace says
/// which, in the live handoff's words. (`tests/harness.rs` compares replay and live run
/// by run, event by event.)
#[tokio::test]
async fn shadow_mode_stops_misbehaving_models_with_the_live_budgets_and_refusals() {
    use desk::agent::{Model, ModelReply, Usage};
    use refund_evals::scripted::{self, call, calls, ScriptedModel};

    let dir = tempfile::tempdir().unwrap();
    let (policies, index) = policies_and_index(dir.path()).await;
    let tickets = fixture_history();
    // Tickets a human did not escalate, so the agent's escalation is a disagreement and
    // the report keeps its trace.
    let tickets: Vec<_> = tickets
        .into_iter()
        .filter(|t| t.human.outcome != shadow::replay::CaseOutcome::Escalate)
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
            assert_eq!(row.agent.outcome, shadow::replay::CaseOutcome::Escalate);
            assert!(row.agent.refunds.is_empty());
            let trace = row.trace.as_ref().expect("a disagreement keeps its trace");
            assert_eq!(trace["escalation"], reason, "{}", row.id);
            assert_eq!(trace["handoff"]["reason"], reason, "{}", row.id);
        }
    }
}

/// The replay loop is the live loop: budgets and refusals end a replay with the live
/// loop's reason (`tests/harness.rs` compares the two runs event by event). These were
/// `replay`'s unit tests until the scripted models left the app's library.
mod replay_loop {
    use std::sync::Arc;

    use desk::agent::{Model, ModelReply, Usage, MAX_STEPS, MAX_TOOL_CALLS};
    use desk::clock::ManualClock;
    use desk::world::World;
    use policy_engine::ReasonCode;
    use rag_index::PolicyIndex;
    use refund_evals::scripted::{self, call, calls, ScriptedModel};
    use serde_json::json;
    use shadow::replay::{
        investigate, investigate_with_clock, verdict, CaseOutcome, HistoricalMessage,
        HistoricalTicket, HumanDecision, Investigation,
    };
    use time::OffsetDateTime;

    const NOW: &str = "2026-11-29T10:00:00Z";

    fn now() -> OffsetDateTime {
        OffsetDateTime::parse(NOW, &time::format_description::well_known::Rfc3339)
            .expect("NOW is RFC 3339")
    }

    /// The demo customer's ticket ("charged twice"), the demo world as its snapshot.
    fn demo_ticket() -> HistoricalTicket {
        let fixtures = desk::config::default_fixtures_dir();
        let text = std::fs::read_to_string(fixtures.join("billing/demo.json"))
            .expect("the demo world ships in fixtures/");
        HistoricalTicket {
            id: "H-DEMO".into(),
            created_at: now(),
            customer_id: "C-100".into(),
            order_id: None,
            messages: vec![HistoricalMessage {
                from: "customer".into(),
                text: "I was charged twice for my annual plan".into(),
                at: now(),
                extra: Default::default(),
            }],
            world: World::parse(&text).expect("the demo world parses"),
            human: HumanDecision {
                outcome: CaseOutcome::Refund,
                reason: ReasonCode::DuplicateCharge,
                refunds: vec![],
                decided_by: "agent:test".into(),
                extra: Default::default(),
            },
            extra: Default::default(),
        }
    }

    fn index() -> (tempfile::TempDir, Arc<PolicyIndex>) {
        let fixtures = desk::config::default_fixtures_dir();
        let policies = desk::policies::load_policy_set(&fixtures.join("policies"))
            .expect("fixtures/policies loads");
        let dir = tempfile::tempdir().expect("a temp dir");
        let index = desk::policies::open_index(&dir.path().join("index"), &policies)
            .expect("the index builds");
        (dir, Arc::new(index))
    }

    /// Asserts the replay went to a human for `reason`, with the live handoff summary.
    fn assert_handed_over(investigation: &Investigation, reason: &str) {
        assert_eq!(investigation.escalation.as_deref(), Some(reason));
        assert!(investigation.proposal.is_none() && investigation.facts.is_none());
        let handoff = investigation.handoff.as_ref().expect("a handoff summary");
        assert_eq!(handoff["reason"], reason);
        assert!(handoff["actions_taken"].is_array() && handoff["open_questions"].is_array());
        assert_eq!(investigation.events.last().map(|e| e.kind), Some("handoff"));
        assert_eq!(verdict(investigation, None).outcome, CaseOutcome::Escalate);
    }

    #[tokio::test]
    async fn replay_ends_each_misbehaving_model_with_the_live_loops_reason() {
        let (_dir, index) = index();
        let ticket = demo_ticket();
        let burns_tokens = ScriptedModel::new("scripted-expensive").forever_reply(|_| {
            Ok(ModelReply {
                turn: calls(vec![call("get_customer", json!({}))]),
                usage: Usage {
                    prompt_tokens: 100_000,
                    completion_tokens: 20_000,
                },
            })
        });
        let escalates = ScriptedModel::new("scripted-escalates")
            .turn(calls(vec![call("get_customer", json!({}))]))
            .turn(desk::agent::ModelTurn::HandOff {
                reason: "the customer needs a phone call".into(),
            });
        let cases: Vec<(Box<dyn Model>, &str)> = vec![
            (
                Box::new(burns_tokens),
                "the run exhausted its tokens budget (240000 of 200000)",
            ),
            (
                Box::new(scripted::calls_unknown_tool()),
                "the run exhausted its invalid_tool_calls budget (3 of 3)",
            ),
            (
                Box::new(scripted::sends_string_arguments()),
                "the run exhausted its invalid_tool_calls budget (3 of 3)",
            ),
            (
                Box::new(scripted::loops_forever()),
                "the run exhausted its steps budget (24 of 24)",
            ),
            (
                Box::new(scripted::stops_mid_task()),
                "the run exhausted its model_errors budget (3 of 3)",
            ),
            (
                Box::new(scripted::answers_garbage()),
                "the run exhausted its model_errors budget (3 of 3)",
            ),
            (
                Box::new(scripted::tries_write_action()),
                "the model attempted something it may not do (write_attempt)",
            ),
            (
                Box::new(scripted::calls_approve_refund()),
                "the model attempted something it may not do (approval_attempt)",
            ),
            (
                Box::new(scripted::claims_approval()),
                "the model attempted something it may not do (approval_claim)",
            ),
            (
                Box::new(escalates),
                "the model escalated: the customer needs a phone call",
            ),
        ];
        for (model, reason) in cases {
            let investigation = investigate(model.as_ref(), &index, &ticket)
                .await
                .expect("the demo ticket replays");
            assert_handed_over(&investigation, reason);
            // A refused turn runs nothing, not even its read-only calls.
            if reason.contains("write_attempt") {
                assert!(investigation.exchanges.is_empty());
                assert_eq!(investigation.violations.len(), 1);
            }
        }
    }

    #[tokio::test]
    async fn replay_spends_wall_time_measured_on_the_injected_clock() {
        let (_dir, index) = index();
        let clock = Arc::new(ManualClock::new(now()));
        let slow = clock.clone();
        // Each model call takes eight minutes.
        let model = ScriptedModel::new("scripted-slow").forever(move |ctx| {
            slow.advance(time::Duration::minutes(8));
            Ok(calls(vec![call(
                "search_policy",
                json!({ "query": format!("duplicate charge {}", ctx.history.len()) }),
            )]))
        });
        let investigation = investigate_with_clock(&model, &index, &demo_ticket(), clock.as_ref())
            .await
            .expect("the demo ticket replays");
        assert_handed_over(
            &investigation,
            "the run exhausted its wall_time_ms budget (960000 of 900000)",
        );
        assert_eq!(model.calls(), 2);
        assert_eq!(investigation.active_ms, 16 * 60_000);
    }

    #[tokio::test]
    async fn replay_answers_intents_past_the_tool_call_budget_without_running_them() {
        let (_dir, index) = index();
        let wide = ScriptedModel::new("scripted-wide").forever(|_| {
            Ok(calls(
                (0..6).map(|_| call("list_orders", json!({}))).collect(),
            ))
        });
        let investigation = investigate(&wide, &index, &demo_ticket())
            .await
            .expect("the demo ticket replays");
        assert_handed_over(
            &investigation,
            "the run exhausted its tool_calls budget (40 of 40)",
        );
        assert_eq!(investigation.tool_calls, MAX_TOOL_CALLS);
        assert_eq!(investigation.exchanges.len(), 42, "7 turns of 6 calls");
        let skipped = investigation
            .exchanges
            .iter()
            .filter(|x| x.outcome.content["error"] == "budget_exhausted")
            .count();
        assert_eq!(skipped, 2);
        assert!(investigation.steps < MAX_STEPS);
    }
}

/// `list_customer_history` works on a replay, where a billing-world snapshot
/// is all there is: the customer's past refunds from the world (never another
/// customer's), and tickets `null` with a note saying they are unknown here, not absent.
/// A customer cannot be named in the arguments: a typed error, the loop goes on.
#[tokio::test]
async fn list_customer_history_in_a_replay_reads_the_worlds_refunds_and_says_tickets_are_unknown() {
    use desk::agent::ModelTurn;
    use refund_evals::scripted::{call, calls, ScriptedModel};
    use serde_json::json;

    let dir = tempfile::tempdir().unwrap();
    let (_, index) = policies_and_index(dir.path()).await;
    let world: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(desk::config::default_fixtures_dir().join("billing/demo.json"))
            .unwrap(),
    )
    .unwrap();
    // C-300 has a refund in the world (re_3001b); so does C-900 (re_9001b).
    let line = json!({
        "id": "H-HISTORY", "created_at": "2026-11-29T10:00:00Z", "customer_id": "C-300",
        "messages": [{ "from": "customer", "text": "Have you refunded me before?", "at": "2026-11-29T10:00:00Z" }],
        "world": world,
        "human": { "outcome": "escalate", "reason": "other", "refunds": [], "decided_by": "agent:test" },
    });
    let (tickets, bad) = shadow::replay::parse_history(&line.to_string());
    assert!(bad.is_empty(), "{bad:?}");
    let model = ScriptedModel::new("scripted-history")
        .turn(calls(vec![call("list_customer_history", json!({}))]))
        .turn(calls(vec![call(
            "list_customer_history",
            json!({ "customer_id": "C-900" }),
        )]))
        .turn(ModelTurn::HandOff {
            reason: "read the history".into(),
        });
    let investigation = shadow::replay::investigate(&model, &index, &tickets[0])
        .await
        .unwrap();

    let [first, second] = &investigation.exchanges[..] else {
        panic!("{:#?}", investigation.exchanges);
    };
    assert!(first.outcome.ok, "{:#}", first.outcome.content);
    let content = &first.outcome.content;
    assert_eq!(content["customer_id"], "C-300");
    assert!(content["tickets"].is_null() && content["tickets_total"].is_null());
    assert!(
        content["notes"][0]
            .as_str()
            .unwrap()
            .contains("unknown here, not absent"),
        "{content:#}"
    );
    assert_eq!(content["refunds_total"], 1);
    assert_eq!(
        content["refunds"],
        json!([{ "id": "re_3001b", "charge": "ch_3001b", "amount": "120.00", "currency": "EUR",
                 "status": "succeeded", "created_at": "2026-11-11T09:00:00Z" }])
    );
    assert!(!content.to_string().contains("9001"), "{content:#}");
    assert!(!second.outcome.ok);
    assert_eq!(second.outcome.content["error"], "invalid_arguments");
    assert_eq!(
        investigation.escalation.as_deref(),
        Some("the model escalated: read the history")
    );
}

/// The report's HTML is askama's (`templates/shadow_report.html`): text from a history
/// line — a ticket id, the evidence of an inferred human outcome, a skipped line's
/// message — is escaped wherever it lands (a class's examples, the trace anchor, the
/// inference rules), never written as markup.
#[tokio::test]
async fn hostile_text_in_a_ticket_id_or_its_evidence_is_escaped_in_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let (policies, index) = policies_and_index(dir.path()).await;
    let mut tickets = fixture_history();
    let ticket = tickets
        .iter_mut()
        .find(|t| t.human.outcome == shadow::replay::CaseOutcome::Refund)
        .unwrap();
    // A disagreement, so the id reaches the table, the anchor and the trace heading.
    ticket.human.outcome = shadow::replay::CaseOutcome::NoRefund;
    ticket.human.refunds.clear();
    ticket.id = r#"<script>alert("id")</script>"#.into();
    ticket.human.extra.insert(
        "inference".into(),
        serde_json::json!({
            "rule": "<img src=x onerror=alert(1)>",
            "evidence": ["<script>alert('evidence')</script>"],
            "excluded": ["</td><script>alert(2)</script>"],
        }),
    );
    let bad = vec![shadow::replay::LineError {
        line: 7,
        message: "<script>alert('line')</script>".into(),
    }];
    let report = app::shadow::run(&Investigator, &policies, &index, &tickets, bad, |_, _| {}).await;
    let html = app::shadow::html(&report);
    assert!(
        !html.contains("<script") && !html.contains("<img"),
        "hostile text written as markup"
    );
    // Each hostile text is there, escaped, in each place it belongs.
    let id = "&#60;script&#62;alert(&#34;id&#34;)&#60;/script&#62;";
    assert!(html.contains(&format!("<a href=\"#trace-{id}\">{id}</a>")));
    assert!(html.contains(&format!(
        "<details id=\"trace-{id}\"><summary>Trace of {id}</summary>"
    )));
    assert!(html.contains("<td>&#60;img src=x onerror=alert(1)&#62;</td>"));
    assert!(html.contains(
        "&#60;script&#62;alert(&#39;evidence&#39;)&#60;/script&#62;; not counted: &#60;/td&#62;"
    ));
    assert!(
        html.contains("<li>line 7: &#60;script&#62;alert(&#39;line&#39;)&#60;/script&#62;</li>")
    );
}
