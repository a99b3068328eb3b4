//! The peer's shape (`peer`): the Agents SDK's 6-tool script beside our harness on the same script.

use super::*;

pub(crate) async fn phase_peer(
    settings: &Settings,
    report: &mut Report,
) -> anyhow::Result<Option<(f64, f64)>> {
    if !Path::new(&settings.peer_python).exists() {
        report.note(format!(
            "peer not measured: no {} (python3 -m venv .cache/agents && .cache/agents/bin/pip install openai-agents)",
            settings.peer_python
        ));
        return Ok(None);
    }
    eprintln!("[peer] OpenAI Agents SDK, fake model, 6 tool calls per run");
    let output = tokio::process::Command::new(&settings.peer_python)
        .arg(&settings.peer_script)
        .args(["200", "6"])
        .output()
        .await
        .context("running the peer script")?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        bail!(
            "peer script failed: {stdout} {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let runs_per_second = |marker: &str| {
        stdout
            .lines()
            .find(|l| l.contains(marker))
            .and_then(|l| l.split("runs/s=").nth(1))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse::<f64>().ok())
    };
    let plain = runs_per_second("K=6:").context("the peer prints runs/s for K=6")?;
    let session = runs_per_second("SQLiteSession").context("the peer prints its session runs/s")?;
    report.note(format!(
        "peer: {}",
        stdout.lines().next().unwrap_or("").trim()
    ));
    Ok(Some((plain, session)))
}

/// The peer's shape on our harness: a fake model makes 6 tool calls, one a
/// turn, then answers; the tool is trivial; every step is committed durably to the real
/// `runs` and `run_events` tables through the worker's group writer (`runs::StepWriter`)
/// by the log a case's run uses (`investigation::sql_log::SqlLog`). `n` runs are claimed
/// as the worker claims them, `at_once` at a time; the clock starts at the first claim.
/// Returns runs/s.
pub(crate) async fn durable_runs_peer_shape(
    backend: &Backend,
    n: usize,
    at_once: usize,
) -> anyhow::Result<f64> {
    let rig = Rig::start(backend).await?;
    let (world, messages) = duplicate_world(n, bench_now());
    rig.load(&world).await?;
    for (customer, text) in &messages {
        let ticket = NewTicket {
            message: text.clone(),
            order_id: None,
        };
        let (db, clock) = (&rig.state.db, rig.state.clock.as_ref());
        desk::customer::create_ticket(db, clock, rig.state.queue(), customer, ticket).await?;
    }
    let started = Instant::now();
    let mut loops = tokio::task::JoinSet::new();
    for _ in 0..at_once {
        let state = rig.state.clone();
        loops.spawn(async move {
            let mut done = 0usize;
            let (tools, model) = (peer_shape_tools(), PeerShape);
            let clock = desk::clock::HarnessClock(state.clock.as_ref());
            let spec = harness::Run::new(&model, &tools, &clock);
            let now = state.clock.now_ms();
            while let Some(mut run) =
                desk::runs::claim_next(&state.db, &state.instance_id, now).await?
            {
                let log = desk::investigation::sql_log::SqlLog::new(
                    &state.db,
                    state.clock.as_ref(),
                    &mut run,
                );
                let mut log = log.batched(&state.steps);
                let ended = harness::run_loop(&spec, &mut log)
                    .await
                    .map_err(|e| anyhow::anyhow!("peer-shaped run failed: {e}"))?;
                anyhow::ensure!(
                    matches!(ended.outcome, harness::Outcome::Answered(_))
                        && ended.counters.tool_calls == 6,
                    "a peer-shaped run ends with an answer after 6 tool calls"
                );
                done += 1;
            }
            anyhow::Ok(done)
        });
    }
    let mut runs = 0;
    while let Some(joined) = loops.join_next().await {
        runs += joined??;
    }
    let elapsed = started.elapsed();
    anyhow::ensure!(runs == n, "{runs} of {n} peer-shaped runs ran");
    rig.stop().await;
    Ok(rate(n, elapsed))
}

/// The peer's model: `lookup_order` once a turn until 6 results, then an answer.
pub(crate) struct PeerShape;

impl desk::agent::Model for PeerShape {}

impl harness::Model<desk::agent::Proposal> for PeerShape {
    fn name(&self) -> String {
        "peer-shape".into()
    }

    fn next_turn<'a>(
        &'a self,
        ctx: &'a harness::ModelContext<'a>,
    ) -> harness::BoxFuture<'a, anyhow::Result<harness::Turn<desk::agent::Proposal>>> {
        let done = ctx.history.len();
        let turn = if done < 6 {
            harness::Turn::ToolCalls {
                calls: vec![harness::ToolCall {
                    id: format!("call_{done}"),
                    name: "lookup_order".into(),
                    arguments: json!({ "order_id": format!("A{done:04}") }),
                }],
            }
        } else {
            harness::Turn::Answer {
                answer: desk::agent::Proposal {
                    request: policy_engine::RequestKind::Unclear,
                    order_id: Some("A0001".into()),
                    reason_code: "other".into(),
                    refunds: vec![],
                    evidence: vec![],
                    citations: vec![],
                    summary: "Refund approved: policy R-12 applies.".into(),
                    order_source: None,
                    request_source: None,
                    repeat_of: None,
                    other_readings: Vec::new(),
                    reading: None,
                },
            }
        };
        Box::pin(async move { Ok(turn) })
    }
}

/// The peer's trivial tool.
pub(crate) struct LookupOrder;

impl harness::Tool for LookupOrder {
    fn declaration(&self) -> harness::ToolDeclaration {
        harness::ToolDeclaration {
            name: "lookup_order",
            description: "Look up an order by id.",
            parameters: json!({ "type": "object", "properties": { "order_id": { "type": "string" } },
                                "required": ["order_id"], "additionalProperties": false }),
            read_only: true,
        }
    }

    fn run<'a>(
        &'a self,
        arguments: &'a Value,
    ) -> harness::BoxFuture<'a, Result<Value, harness::ToolError>> {
        let order_id = arguments["order_id"].clone();
        Box::pin(async move {
            Ok(json!({ "order_id": order_id, "status": "delivered", "amount_cents": 1999 }))
        })
    }
}

pub(crate) fn peer_shape_tools() -> harness::Toolset<'static> {
    harness::Toolset::new().with(LookupOrder)
}
